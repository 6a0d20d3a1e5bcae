//! DynamoDB JSON: `{"S": "text"}`, `{"N": "12.5"}`, `{"M": {"a": {"BOOL": true}}}`, …
//!
//! Decoding follows the AWS JSON protocol as DynamoDB applies it:
//! - a member whose value is JSON `null` is treated as absent, and unknown members are
//!   ignored (so `{"X": 1}` is an empty AttributeValue);
//! - a payload of the wrong JSON type (`{"N": 3}`, `{"S": true}`) and bad base64 are
//!   `SerializationException`s;
//! - everything DynamoDB validates after parsing (empty value, two types, `NULL: false`,
//!   numbers, empty or duplicate sets, nesting) is a `ValidationException` with SPEC §1
//!   texts.
//!
//! Decoding is recursive but depth-limited: a value nested deeper than
//! [`NESTING_LEVELS_MAX`] is rejected before descending further, so hostile input cannot
//! overflow the stack. The top-level attribute value is level 1.

use std::borrow::Cow;
use std::collections::BTreeMap;

use base64::Engine;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::{wrong_type_wording, ApiError, Expected};
use crate::number::Number;
use crate::size::{NESTING_LEVELS_MAX, NESTING_MESSAGE};
use crate::value::{AttributeValue, Item};

pub const EMPTY_VALUE_MESSAGE: &str =
    "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes";
pub const SEVERAL_TYPES_MESSAGE: &str = "Supplied AttributeValue has more than one datatypes set, \
     must contain exactly one of the supported datatypes";
pub const NULL_FALSE_MESSAGE: &str =
    "One or more parameter values were invalid: Null attribute value types must have the value of true";
pub const EMPTY_STRING_SET_MESSAGE: &str =
    "One or more parameter values were invalid: An string set  may not be empty";
pub const EMPTY_NUMBER_SET_MESSAGE: &str =
    "One or more parameter values were invalid: An number set  may not be empty";
pub const EMPTY_BINARY_SET_MESSAGE: &str =
    "One or more parameter values were invalid: Binary sets should not be empty";
pub const BAD_BASE64_MESSAGE: &str = "Base64 encoded binary value could not be decoded";

/// The type tags DynamoDB knows, in wire spelling.
const TYPE_TAGS: [&str; 10] = ["S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"];

impl AttributeValue {
    /// Decodes one DynamoDB-JSON AttributeValue (see the module docs for the errors).
    pub fn from_json(json: &Value) -> Result<AttributeValue, ApiError> {
        decode_value(json, 1)
    }

    /// Encodes as DynamoDB JSON; numbers in canonical text, binary as base64.
    pub fn to_json(&self) -> Value {
        let (tag, payload) = match self {
            AttributeValue::S(text) => ("S", Value::String(text.clone())),
            AttributeValue::N(number) => ("N", Value::String(number.to_string())),
            AttributeValue::B(bytes) => ("B", Value::String(encode_base64(bytes))),
            AttributeValue::Bool(flag) => ("BOOL", Value::Bool(*flag)),
            AttributeValue::Null => ("NULL", Value::Bool(true)),
            AttributeValue::M(members) => (
                "M",
                Value::Object(
                    members
                        .iter()
                        .map(|(name, value)| (name.clone(), value.to_json()))
                        .collect(),
                ),
            ),
            AttributeValue::L(elements) => (
                "L",
                Value::Array(elements.iter().map(AttributeValue::to_json).collect()),
            ),
            AttributeValue::Ss(members) => (
                "SS",
                Value::Array(members.iter().cloned().map(Value::String).collect()),
            ),
            AttributeValue::Ns(members) => (
                "NS",
                Value::Array(
                    members
                        .iter()
                        .map(|number| Value::String(number.to_string()))
                        .collect(),
                ),
            ),
            AttributeValue::Bs(members) => (
                "BS",
                Value::Array(
                    members
                        .iter()
                        .map(|bytes| Value::String(encode_base64(bytes)))
                        .collect(),
                ),
            ),
        };
        let mut object = Map::new();
        object.insert(tag.to_string(), payload);
        Value::Object(object)
    }
}

/// Decodes an item: a JSON object of attribute name to AttributeValue.
pub fn item_from_json(json: &Value) -> Result<Item, ApiError> {
    let object = expect_object(json)?;
    decode_members(object, 1)
}

/// Encodes an item as a JSON object of attribute name to AttributeValue.
pub fn item_to_json(item: &Item) -> Value {
    Value::Object(
        item.iter()
            .map(|(name, value)| (name.clone(), value.to_json()))
            .collect(),
    )
}

/// Writes the same JSON as [`AttributeValue::to_json`] straight to the serializer, without
/// building a `Value` tree: responses of thousands of attributes are serialised this way.
impl Serialize for AttributeValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = serializer.serialize_map(Some(1))?;
        match self {
            AttributeValue::S(text) => object.serialize_entry("S", text)?,
            AttributeValue::N(number) => object.serialize_entry("N", &Displayed(number))?,
            AttributeValue::B(bytes) => object.serialize_entry("B", &Base64(bytes))?,
            AttributeValue::Bool(flag) => object.serialize_entry("BOOL", flag)?,
            AttributeValue::Null => object.serialize_entry("NULL", &true)?,
            AttributeValue::M(members) => object.serialize_entry("M", members)?,
            AttributeValue::L(elements) => object.serialize_entry("L", elements)?,
            AttributeValue::Ss(members) => object.serialize_entry("SS", members)?,
            AttributeValue::Ns(members) => {
                let numbers: Vec<Displayed<'_, Number>> = members.iter().map(Displayed).collect();
                object.serialize_entry("NS", &numbers)?
            }
            AttributeValue::Bs(members) => {
                let encoded: Vec<Base64<'_>> = members.iter().map(|bytes| Base64(bytes)).collect();
                object.serialize_entry("BS", &encoded)?
            }
        }
        object.end()
    }
}

/// Serialises as the JSON string of its `Display` text (numbers in canonical form).
struct Displayed<'a, T>(&'a T);

impl<T: std::fmt::Display> Serialize for Displayed<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self.0)
    }
}

/// Serialises bytes as the JSON string of their standard base64.
struct Base64<'a>(&'a [u8]);

impl Serialize for Base64<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&encode_base64(self.0))
    }
}

/// Decodes without building a `serde_json::Value` tree for the common shape, a map of one
/// scalar `S` or `N` member (profiles of GetItem over HTTP showed the tree, a map, its key
/// and a copy of the text per attribute); any other shape is rebuilt as the `Value` the
/// slow path always parsed (same members, same order) and goes through `from_json`, so every
/// answer and every refusal is unchanged. Nested levels still parse as `Value`, under
/// serde_json's recursion limit.
impl<'de> Deserialize<'de> for AttributeValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<AttributeValue, D::Error> {
        deserializer.deserialize_any(AttributeValueVisitor)
    }
}

/// The `Value` a non-map input stands for: only its JSON kind matters to `from_json`.
struct AttributeValueVisitor;

impl AttributeValueVisitor {
    fn decoded<E: serde::de::Error>(json: &Value) -> Result<AttributeValue, E> {
        match AttributeValue::from_json(json) {
            Ok(value) => Ok(value),
            Err(error) if value_refusals_deferred(&error) => Ok(AttributeValue::Null),
            Err(error) => Err(E::custom(error.to_serde_message())),
        }
    }
}

impl<'de> serde::de::Visitor<'de> for AttributeValueVisitor {
    type Value = AttributeValue;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a DynamoDB AttributeValue")
    }

    fn visit_bool<E: serde::de::Error>(self, flag: bool) -> Result<AttributeValue, E> {
        Self::decoded(&Value::Bool(flag))
    }

    fn visit_i64<E: serde::de::Error>(self, number: i64) -> Result<AttributeValue, E> {
        Self::decoded(&Value::from(number))
    }

    fn visit_u64<E: serde::de::Error>(self, number: u64) -> Result<AttributeValue, E> {
        Self::decoded(&Value::from(number))
    }

    fn visit_f64<E: serde::de::Error>(self, number: f64) -> Result<AttributeValue, E> {
        Self::decoded(&Value::from(number))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<AttributeValue, E> {
        Self::decoded(&Value::String(text.to_owned()))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<AttributeValue, E> {
        Self::decoded(&Value::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<AttributeValue, E> {
        Self::decoded(&Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, inner: D) -> Result<AttributeValue, D::Error> {
        let json = Value::deserialize(inner)?;
        Self::decoded(&json)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> Result<AttributeValue, A::Error> {
        let mut elements = Vec::new();
        while let Some(element) = seq.next_element::<Value>()? {
            elements.push(element);
        }
        Self::decoded(&Value::Array(elements))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<AttributeValue, A::Error> {
        let Some(Tag(tag)) = map.next_key::<Tag<'de>>()? else {
            return Self::decoded(&Value::Object(Map::new()));
        };
        let payload: Value = map.next_value()?;
        let Some(Tag(next_tag)) = map.next_key::<Tag<'de>>()? else {
            // The common shape: one member.
            match (tag.as_ref(), payload) {
                ("S", Value::String(text)) => return Ok(AttributeValue::S(text)),
                (_, payload) => {
                    let mut object = Map::new();
                    object.insert(tag.into_owned(), payload);
                    return Self::decoded(&Value::Object(object));
                }
            }
        };
        let mut object = Map::new();
        object.insert(tag.into_owned(), payload);
        let next_payload: Value = map.next_value()?;
        object.insert(next_tag.into_owned(), next_payload);
        while let Some((tag, payload)) = map.next_entry::<String, Value>()? {
            object.insert(tag, payload);
        }
        Self::decoded(&Value::Object(object))
    }
}

/// A member name of an attribute value (its type tag, `S`, `N`, …), borrowed from the
/// request's text when the parser can lend it (a name with no escapes, as every SDK sends):
/// an owned `String` cost an allocation per attribute of every request.
struct Tag<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Tag<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tag<'de>, D::Error> {
        deserializer.deserialize_str(TagVisitor)
    }
}

struct TagVisitor;

impl<'de> serde::de::Visitor<'de> for TagVisitor {
    type Value = Tag<'de>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("an AttributeValue's type")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<Tag<'de>, E> {
        Ok(Tag(Cow::Borrowed(text)))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Tag<'de>, E> {
        Ok(Tag(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Tag<'de>, E> {
        Ok(Tag(Cow::Owned(text)))
    }
}

thread_local! {
    /// Set only inside [`with_value_refusals_deferred`].
    static VALUE_REFUSALS_DEFERRED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `decode` with the refusals of attribute values that DynamoDB makes after parsing
/// (an empty value, two types, a bad number: the ValidationExceptions of this module)
/// decoded as `NULL` instead. DynamoDB checks a request's member constraints ("N
/// validation errors detected") before it looks at its attribute values (SPEC §7), but a
/// request whose value fails to decode has no typed form to check them on: this gives it
/// one, on the error path only. A payload of the wrong JSON type (a
/// SerializationException) still fails: DynamoDB's front end refuses it before either.
pub fn with_value_refusals_deferred<T>(decode: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            VALUE_REFUSALS_DEFERRED.with(|deferred| deferred.set(self.0));
        }
    }
    let _reset = Reset(VALUE_REFUSALS_DEFERRED.with(|deferred| deferred.replace(true)));
    decode()
}

/// Whether `error`, an attribute value's refusal, is to be deferred (see
/// [`with_value_refusals_deferred`]).
pub fn value_refusals_deferred(error: &ApiError) -> bool {
    error.code == crate::ErrorCode::ValidationException
        && VALUE_REFUSALS_DEFERRED.with(std::cell::Cell::get)
}

fn decode_value(json: &Value, depth: usize) -> Result<AttributeValue, ApiError> {
    if depth > NESTING_LEVELS_MAX {
        return Err(ApiError::validation(NESTING_MESSAGE));
    }
    let object = expect_object(json)?;
    let mut present = object
        .iter()
        .filter(|(tag, payload)| !payload.is_null() && TYPE_TAGS.contains(&tag.as_str()));
    let (tag, payload) = match (present.next(), present.next()) {
        (None, _) => return Err(ApiError::validation(EMPTY_VALUE_MESSAGE)),
        (Some(_), Some(_)) => return Err(ApiError::validation(SEVERAL_TYPES_MESSAGE)),
        (Some(only), None) => only,
    };
    match tag.as_str() {
        "S" => Ok(AttributeValue::S(
            expect_string(payload, "String")?.to_string(),
        )),
        "N" => Ok(AttributeValue::N(Number::parse(expect_string(
            payload, "String",
        )?)?)),
        "B" => Ok(AttributeValue::B(decode_base64(payload)?)),
        "BOOL" => Ok(AttributeValue::Bool(expect_bool(payload)?)),
        "NULL" => match expect_bool(payload)? {
            true => Ok(AttributeValue::Null),
            false => Err(ApiError::validation(NULL_FALSE_MESSAGE)),
        },
        "M" => Ok(AttributeValue::M(decode_members(
            expect_object(payload)?,
            depth + 1,
        )?)),
        "L" => expect_array(payload)?
            .iter()
            .map(|element| decode_value(element, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(AttributeValue::L),
        "SS" => decode_string_set(payload),
        "NS" => decode_number_set(payload),
        "BS" => decode_binary_set(payload),
        _ => Err(ApiError::validation(EMPTY_VALUE_MESSAGE)),
    }
}

fn decode_members(
    object: &Map<String, Value>,
    depth: usize,
) -> Result<BTreeMap<String, AttributeValue>, ApiError> {
    object
        .iter()
        .map(|(name, json)| Ok((name.clone(), decode_value(json, depth)?)))
        .collect()
}

fn decode_string_set(payload: &Value) -> Result<AttributeValue, ApiError> {
    let members = expect_array(payload)?
        .iter()
        .map(|member| expect_string(member, "String").map(str::to_string))
        .collect::<Result<Vec<_>, _>>()?;
    if members.is_empty() {
        return Err(ApiError::validation(EMPTY_STRING_SET_MESSAGE));
    }
    reject_duplicates(AttributeValue::Ss(members))
}

fn decode_number_set(payload: &Value) -> Result<AttributeValue, ApiError> {
    let texts = expect_array(payload)?
        .iter()
        .map(|member| expect_string(member, "String"))
        .collect::<Result<Vec<_>, _>>()?;
    if texts.is_empty() {
        return Err(ApiError::validation(EMPTY_NUMBER_SET_MESSAGE));
    }
    let members = texts
        .into_iter()
        .map(Number::parse)
        .collect::<Result<Vec<_>, _>>()?;
    reject_duplicates(AttributeValue::Ns(members))
}

fn decode_binary_set(payload: &Value) -> Result<AttributeValue, ApiError> {
    let members = expect_array(payload)?
        .iter()
        .map(decode_base64)
        .collect::<Result<Vec<_>, _>>()?;
    if members.is_empty() {
        return Err(ApiError::validation(EMPTY_BINARY_SET_MESSAGE));
    }
    reject_duplicates(AttributeValue::Bs(members))
}

/// Rejects a set holding the same member twice (numbers compare by value), with the whole
/// collection in the message: `Input collection [a, b, a] contains duplicates.`
fn reject_duplicates(set: AttributeValue) -> Result<AttributeValue, ApiError> {
    let has_duplicates = match &set {
        AttributeValue::Ss(members) => has_duplicate_members(members),
        AttributeValue::Ns(members) => has_duplicate_members(members),
        AttributeValue::Bs(members) => has_duplicate_members(members),
        _ => false,
    };
    if !has_duplicates {
        return Ok(set);
    }
    let rendered = set.set_display().unwrap_or_default();
    Err(ApiError::validation(format!(
        "One or more parameter values were invalid: Input collection {rendered} contains duplicates."
    )))
}

fn has_duplicate_members<T: Ord>(members: &[T]) -> bool {
    let mut sorted: Vec<&T> = members.iter().collect();
    sorted.sort_unstable();
    sorted.windows(2).any(|pair| pair[0] == pair[1])
}

fn decode_base64(payload: &Value) -> Result<Vec<u8>, ApiError> {
    let text = expect_string(payload, "Blob")?;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| ApiError::serialization(BAD_BASE64_MESSAGE))
}

/// Base64 (standard alphabet, padded), as DynamoDB JSON writes binary values.
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The AWS JSON protocol's name for a JSON token, used in its SerializationException texts.
fn json_kind(json: &Value) -> &'static str {
    match json {
        Value::Null => "NULL_VALUE",
        Value::Bool(true) => "TRUE_VALUE",
        Value::Bool(false) => "FALSE_VALUE",
        Value::Number(_) => "NUMBER_VALUE",
        Value::String(_) => "STRING_VALUE",
        Value::Array(_) => "START_ARRAY",
        Value::Object(_) => "START_OBJECT",
    }
}

fn wrong_json_type(json: &Value, expected: &str) -> ApiError {
    ApiError::serialization(wrong_type_wording(
        json_kind(json),
        Expected::Scalar(expected),
    ))
}

fn expect_object(json: &Value) -> Result<&Map<String, Value>, ApiError> {
    match json {
        Value::Object(object) => Ok(object),
        _ => Err(ApiError::serialization(wrong_type_wording(
            json_kind(json),
            Expected::Map,
        ))),
    }
}

fn expect_array(json: &Value) -> Result<&Vec<Value>, ApiError> {
    match json {
        Value::Array(elements) => Ok(elements),
        _ => Err(ApiError::serialization(wrong_type_wording(
            json_kind(json),
            Expected::List,
        ))),
    }
}

fn expect_string<'a>(json: &'a Value, expected: &str) -> Result<&'a str, ApiError> {
    json.as_str().ok_or_else(|| wrong_json_type(json, expected))
}

fn expect_bool(json: &Value) -> Result<bool, ApiError> {
    json.as_bool()
        .ok_or_else(|| wrong_json_type(json, "Boolean"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::ErrorCode;

    /// Decoding from JSON text (the fast path for one `S` member, the rebuilt `Value` for
    /// the rest) answers exactly what `from_json` answers for the parsed text, value or
    /// refusal, with and without refusals deferred.
    #[test]
    fn decoding_text_answers_what_from_json_answers() {
        let texts = [
            r#"{"S": "x"}"#,
            r#"{"S": ""}"#,
            r#"{"N": "12.50"}"#,
            r#"{"N": "x"}"#,
            r#"{"S": "a", "S": "b"}"#,
            r#"{"S": "a", "N": "1"}"#,
            r#"{"S": "a", "N": null}"#,
            r#"{"X": 1}"#,
            r#"{}"#,
            r#"{"S": 3}"#,
            r#"{"S": null}"#,
            r#"{"NULL": false}"#,
            r#"{"M": {"a": {"S": "b"}}}"#,
            r#"{"L": [{"N": "1"}, {"S": "x"}]}"#,
            r#"{"SS": ["a", "a"]}"#,
            r#""text""#,
            "3",
            "-3",
            "2.5",
            "true",
            "null",
            r#"[{"S": "x"}]"#,
            // Escaped type names: the parser cannot lend them, so they are owned copies.
            r#"{"\u0053": "x"}"#,
            r#"{"\u0053": "a", "\u004e": "1"}"#,
            r#"{"\u004e": "7"}"#,
        ];
        // serde_json adds the position to an error raised while it parses text; the server
        // answers from the parsed body's error (`dispatch`), which has none.
        let message = |error: serde_json::Error| {
            let message = ApiError::from_serde_message(&error.to_string()).message;
            message
                .split(" at line ")
                .next()
                .unwrap_or_default()
                .to_owned()
        };
        let decode = |text: &str| {
            let parsed: Value = serde_json::from_str(text).unwrap();
            let from_text = serde_json::from_str::<AttributeValue>(text).map_err(message);
            let from_value = AttributeValue::deserialize(&parsed).map_err(message);
            // An owned `Value` hands its member names over as owned strings.
            let from_owned = AttributeValue::deserialize(parsed).map_err(message);
            assert_eq!(from_owned, from_value, "{text} (owned)");
            (from_text, from_value)
        };
        for text in texts {
            let parsed: Value = serde_json::from_str(text).unwrap();
            let expected = AttributeValue::from_json(&parsed).map_err(|error| error.message);
            let (from_text, from_value) = decode(text);
            assert_eq!(from_text, expected, "{text}");
            assert_eq!(from_value, expected, "{text}");
            let deferred_expected = match AttributeValue::from_json(&parsed) {
                Err(error) if error.code == ErrorCode::ValidationException => {
                    Ok(AttributeValue::Null)
                }
                other => other.map_err(|error| error.message),
            };
            let (from_text, from_value) = with_value_refusals_deferred(|| decode(text));
            assert_eq!(from_text, deferred_expected, "{text} (deferred)");
            assert_eq!(from_value, deferred_expected, "{text} (deferred)");
        }
    }

    /// Deferral turns only the post-parse refusals into NULL, and only inside the call.
    #[test]
    fn deferred_refusals_decode_as_null_inside_the_call_only() {
        let empty = json!({});
        let deferred = with_value_refusals_deferred(|| AttributeValue::deserialize(&empty));
        assert_eq!(deferred.unwrap(), AttributeValue::Null);
        let wrong_type = json!({"N": 5});
        let deferred = with_value_refusals_deferred(|| AttributeValue::deserialize(&wrong_type));
        assert!(
            deferred.is_err(),
            "a SerializationException is never deferred"
        );
        assert!(
            AttributeValue::deserialize(&empty).is_err(),
            "the flag was reset"
        );
    }

    fn decode(json: Value) -> AttributeValue {
        AttributeValue::from_json(&json).unwrap()
    }

    fn decode_error(json: Value) -> ApiError {
        AttributeValue::from_json(&json).unwrap_err()
    }

    fn assert_validation(json: Value, message: &str) {
        let error = decode_error(json.clone());
        assert_eq!(error.code, ErrorCode::ValidationException, "{json}");
        assert_eq!(error.message, message, "{json}");
    }

    fn assert_serialization(json: Value) {
        let error = decode_error(json.clone());
        assert_eq!(
            error.code,
            ErrorCode::SerializationException,
            "{json}: {error}"
        );
    }

    #[test]
    fn every_type_round_trips() {
        let document = json!({"M": {
            "s": {"S": "text"},
            "empty_s": {"S": ""},
            "n": {"N": "-12.5"},
            "b": {"B": "AQID"},
            "empty_b": {"B": ""},
            "t": {"BOOL": true},
            "f": {"BOOL": false},
            "null": {"NULL": true},
            "l": {"L": [{"S": "x"}, {"M": {}}, {"L": []}]},
            "ss": {"SS": ["a", "b"]},
            "ns": {"NS": ["1", "2.5"]},
            "bs": {"BS": ["AQ==", "Ag=="]}
        }});
        let value = decode(document.clone());
        assert_eq!(value.to_json(), document);
        let AttributeValue::M(members) = &value else {
            panic!("not a map")
        };
        assert_eq!(members["b"], AttributeValue::B(vec![1, 2, 3]));
        assert_eq!(members["n"].to_json(), json!({"N": "-12.5"}));
    }

    #[test]
    fn numbers_are_normalised_on_output() {
        assert_eq!(
            decode(json!({"N": "0042.1200"})).to_json(),
            json!({"N": "42.12"})
        );
        assert_eq!(
            decode(json!({"NS": ["1e3", "-0"]})).to_json(),
            json!({"NS": ["1000", "0"]})
        );
        assert_validation(
            json!({"N": "abc"}),
            &format!("{}: abc", crate::number::UNPARSABLE_MESSAGE),
        );
        assert_validation(json!({"N": "1e126"}), crate::number::OVERFLOW_MESSAGE);
    }

    #[test]
    fn shape_errors() {
        assert_validation(json!({}), EMPTY_VALUE_MESSAGE);
        assert_validation(json!({"S": null}), EMPTY_VALUE_MESSAGE);
        assert_validation(json!({"X": "a"}), EMPTY_VALUE_MESSAGE);
        assert_validation(json!({"S": "a", "N": "1"}), SEVERAL_TYPES_MESSAGE);
        assert_validation(json!({"NULL": false}), NULL_FALSE_MESSAGE);
        assert_eq!(
            decode(json!({"S": "a", "X": 1})),
            AttributeValue::S("a".into())
        );
    }

    #[test]
    fn wrong_json_types_are_serialization_errors() {
        assert_serialization(json!({"N": 3}));
        assert_eq!(
            decode_error(json!({"N": 3})).message,
            "NUMBER_VALUE cannot be converted to String"
        );
        assert_serialization(json!({"S": true}));
        assert_serialization(json!({"BOOL": "true"}));
        assert_serialization(json!({"NULL": 1}));
        assert_serialization(json!({"M": []}));
        assert_serialization(json!({"L": {}}));
        assert_serialization(json!({"SS": "a"}));
        assert_serialization(json!({"SS": [1]}));
        assert_serialization(json!({"NS": [1]}));
        assert_serialization(json!({"B": "not base64!"}));
        assert_serialization(json!({"BS": ["AQ=", "AQ=="]}));
        assert_serialization(json!("S"));
        assert_serialization(json!([{"S": "a"}]));
    }

    #[test]
    fn null_takes_only_true() {
        // SPEC §1.1: false is a ValidationException with its own text; a payload that is
        // no boolean is a wrong JSON type, the protocol's SerializationException (SPEC §7).
        assert_validation(json!({"NULL": false}), NULL_FALSE_MESSAGE);
        for (payload, message) in [
            (
                json!({"NULL": "no"}),
                "STRING_VALUE cannot be converted to Boolean",
            ),
            (
                json!({"NULL": "true"}),
                "STRING_VALUE cannot be converted to Boolean",
            ),
            (
                json!({"NULL": 0}),
                "NUMBER_VALUE cannot be converted to Boolean",
            ),
        ] {
            assert_serialization(payload.clone());
            assert_eq!(decode_error(payload).message, message);
        }
        // The neighbours: NULL true, and BOOL, which takes false as well as true.
        assert_eq!(decode(json!({"NULL": true})), AttributeValue::Null);
        assert_eq!(decode(json!({"BOOL": false})), AttributeValue::Bool(false));
        assert_eq!(
            decode_error(json!({"BOOL": "no"})).message,
            "STRING_VALUE cannot be converted to Boolean"
        );
    }

    #[test]
    fn set_errors() {
        assert_validation(json!({"SS": []}), EMPTY_STRING_SET_MESSAGE);
        assert_validation(json!({"NS": []}), EMPTY_NUMBER_SET_MESSAGE);
        assert_validation(json!({"BS": []}), EMPTY_BINARY_SET_MESSAGE);
        assert_validation(
            json!({"SS": ["a", "a"]}),
            "One or more parameter values were invalid: Input collection [a, a] contains duplicates.",
        );
        assert_validation(
            json!({"SS": ["a", "b", "a"]}),
            "One or more parameter values were invalid: Input collection [a, b, a] contains duplicates.",
        );
        assert_validation(
            json!({"NS": ["1", "1.0"]}),
            "One or more parameter values were invalid: Input collection [1, 1] contains duplicates.",
        );
        assert_validation(
            json!({"BS": ["AQ==", "AQ=="]}),
            "One or more parameter values were invalid: Input collection [AQ==, AQ==] contains duplicates.",
        );
        // Empty sets nested in maps and lists are rejected too.
        assert_validation(json!({"M": {"a": {"SS": []}}}), EMPTY_STRING_SET_MESSAGE);
        assert_validation(json!({"L": [{"NS": []}]}), EMPTY_NUMBER_SET_MESSAGE);
        // Empty strings inside sets are fine.
        assert_eq!(
            decode(json!({"SS": [""]})),
            AttributeValue::Ss(vec![String::new()])
        );
    }

    fn wrapped_in_maps(wraps: usize) -> Value {
        let mut value = json!({"S": "leaf"});
        for _ in 0..wraps {
            value = json!({"M": {"n": value}});
        }
        value
    }

    #[test]
    fn nesting_limit() {
        // 31 wraps put the leaf at level 32: accepted; 32 wraps: rejected.
        assert!(AttributeValue::from_json(&wrapped_in_maps(31)).is_ok());
        assert_validation(wrapped_in_maps(32), NESTING_MESSAGE);
        let mut list = json!({"L": []});
        for _ in 0..32 {
            list = json!({"L": [list]});
        }
        assert_validation(list, NESTING_MESSAGE);
    }

    #[test]
    fn hostile_depth_does_not_overflow_the_stack() {
        // Built by hand: serde_json's own parser would stop at 128 levels.
        let mut value = json!({"S": "leaf"});
        for _ in 0..100_000 {
            let mut object = Map::new();
            object.insert("L".into(), Value::Array(vec![value]));
            value = Value::Object(object);
        }
        let error = AttributeValue::from_json(&value).unwrap_err();
        assert_eq!(error.message, NESTING_MESSAGE);
        // serde_json's Value drop is recursive: leak the hostile value instead of dropping it.
        std::mem::forget(value);
    }

    #[test]
    fn items() {
        let json = json!({"pk": {"S": "a"}, "n": {"N": "1"}});
        let item = item_from_json(&json).unwrap();
        assert_eq!(item.len(), 2);
        assert_eq!(item_to_json(&item), json);
        assert_eq!(
            item_from_json(&json!([])).unwrap_err().code,
            ErrorCode::SerializationException
        );
        assert_eq!(
            item_from_json(&json!({"a": {}})).unwrap_err().message,
            EMPTY_VALUE_MESSAGE
        );
    }

    #[test]
    fn serde_impls() {
        let value: AttributeValue = serde_json::from_str(r#"{"SS":["b","a"]}"#).unwrap();
        assert_eq!(value, AttributeValue::Ss(vec!["a".into(), "b".into()]));
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            r#"{"SS":["b","a"]}"#
        );
        let error = serde_json::from_str::<AttributeValue>(r#"{"NULL":false}"#).unwrap_err();
        assert!(error.to_string().contains("Null attribute value types"));
        let item: Item = serde_json::from_str(r#"{"a":{"N":"1e2"}}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&item).unwrap(),
            r#"{"a":{"N":"100"}}"#
        );
    }
}
