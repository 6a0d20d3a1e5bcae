//! AttributeValue: one DynamoDB value.
//!
//! JSON (de)serialization lives in `json.rs`, sizes and item limits in `size.rs`.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;

use crate::error::ApiError;
use crate::number::Number;

/// An item: attribute name to value. Ordered so output is deterministic.
pub type Item = BTreeMap<String, AttributeValue>;

/// One DynamoDB attribute value. Sets keep their members in insertion order but compare as
/// sets (see `PartialEq`).
#[derive(Debug, Clone)]
pub enum AttributeValue {
    S(String),
    N(Number),
    B(Vec<u8>),
    Bool(bool),
    Null,
    M(BTreeMap<String, AttributeValue>),
    L(Vec<AttributeValue>),
    Ss(Vec<String>),
    Ns(Vec<Number>),
    Bs(Vec<Vec<u8>>),
}

/// The types a key attribute may have (`AttributeType` in `AttributeDefinitions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    S,
    N,
    B,
}

impl ScalarType {
    /// Parses the wire tag `"S"`, `"N"` or `"B"`; anything else is `None`.
    pub fn parse(tag: &str) -> Option<ScalarType> {
        match tag {
            "S" => Some(ScalarType::S),
            "N" => Some(ScalarType::N),
            "B" => Some(ScalarType::B),
            _ => None,
        }
    }

    /// The wire tag: `"S"`, `"N"` or `"B"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScalarType::S => "S",
            ScalarType::N => "N",
            ScalarType::B => "B",
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ScalarType {
    type Err = ();

    fn from_str(tag: &str) -> Result<ScalarType, ()> {
        ScalarType::parse(tag).ok_or(())
    }
}

impl AttributeValue {
    /// The DynamoDB type tag: "S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS" or "BS".
    pub fn type_name(&self) -> &'static str {
        match self {
            AttributeValue::S(_) => "S",
            AttributeValue::N(_) => "N",
            AttributeValue::B(_) => "B",
            AttributeValue::Bool(_) => "BOOL",
            AttributeValue::Null => "NULL",
            AttributeValue::M(_) => "M",
            AttributeValue::L(_) => "L",
            AttributeValue::Ss(_) => "SS",
            AttributeValue::Ns(_) => "NS",
            AttributeValue::Bs(_) => "BS",
        }
    }

    /// `Some(S|N|B)` for the key-eligible types, `None` for every other type.
    pub fn as_scalar_type(&self) -> Option<ScalarType> {
        match self {
            AttributeValue::S(_) => Some(ScalarType::S),
            AttributeValue::N(_) => Some(ScalarType::N),
            AttributeValue::B(_) => Some(ScalarType::B),
            _ => None,
        }
    }

    /// Whether this is one of the set types (SS, NS, BS).
    pub fn is_set(&self) -> bool {
        matches!(
            self,
            AttributeValue::Ss(_) | AttributeValue::Ns(_) | AttributeValue::Bs(_)
        )
    }

    /// Whether this is an S or B value of length zero (not allowed as a key value).
    pub fn is_empty_scalar(&self) -> bool {
        match self {
            AttributeValue::S(text) => text.is_empty(),
            AttributeValue::B(bytes) => bytes.is_empty(),
            _ => false,
        }
    }

    /// For SS/NS/BS: the members rendered as DynamoDB prints them in messages, e.g.
    /// `[a, a]` (numbers in canonical text, binary as base64). `None` for other types.
    pub fn set_display(&self) -> Option<String> {
        let members: Vec<String> = match self {
            AttributeValue::Ss(members) => members.clone(),
            AttributeValue::Ns(members) => members.iter().map(Number::to_string).collect(),
            AttributeValue::Bs(members) => members
                .iter()
                .map(|member| base64::engine::general_purpose::STANDARD.encode(member))
                .collect(),
            _ => return None,
        };
        Some(format!("[{}]", members.join(", ")))
    }
}

/// Checks that a table or index key value is not an empty S or B (SPEC §3.1): `key_name`
/// is the attribute name DynamoDB puts in the message.
pub fn check_key_value_not_empty(key_name: &str, value: &AttributeValue) -> Result<(), ApiError> {
    let kind = match value {
        AttributeValue::S(text) if text.is_empty() => "string",
        AttributeValue::B(bytes) if bytes.is_empty() => "binary",
        _ => return Ok(()),
    };
    Err(ApiError::validation(format!(
        "One or more parameter values are not valid. The AttributeValue for a key attribute \
         cannot contain an empty {kind} value. Key: {key_name}"
    )))
}

/// Whether two slices hold the same members, ignoring order (sets never hold duplicates;
/// with duplicates this is multiset equality). O(n log n): sets can have many members.
pub fn same_members<T: Ord>(left: &[T], right: &[T]) -> bool {
    if left.len() != right.len() {
        return false;
    }
    let mut left_sorted: Vec<&T> = left.iter().collect();
    let mut right_sorted: Vec<&T> = right.iter().collect();
    left_sorted.sort_unstable();
    right_sorted.sort_unstable();
    left_sorted == right_sorted
}

/// Equality as DynamoDB compares values: numbers by value, sets as sets (order ignored).
impl PartialEq for AttributeValue {
    fn eq(&self, other: &AttributeValue) -> bool {
        use AttributeValue as V;
        match (self, other) {
            (V::S(a), V::S(b)) => a == b,
            (V::N(a), V::N(b)) => a == b,
            (V::B(a), V::B(b)) => a == b,
            (V::Bool(a), V::Bool(b)) => a == b,
            (V::Null, V::Null) => true,
            (V::M(a), V::M(b)) => a == b,
            (V::L(a), V::L(b)) => a == b,
            (V::Ss(a), V::Ss(b)) => same_members(a, b),
            (V::Ns(a), V::Ns(b)) => same_members(a, b),
            (V::Bs(a), V::Bs(b)) => same_members(a, b),
            _ => false,
        }
    }
}

impl Eq for AttributeValue {}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(text: &str) -> Number {
        Number::parse(text).unwrap()
    }

    /// Items are maps of these, built and moved by every read (see `number::Mantissa`).
    #[test]
    fn values_stay_small() {
        assert!(std::mem::size_of::<Number>() <= 24);
        assert!(std::mem::size_of::<AttributeValue>() <= 32);
    }

    #[test]
    fn numbers_compare_by_value() {
        assert_eq!(
            AttributeValue::N(num("1000")),
            AttributeValue::N(num("1e3"))
        );
        assert_ne!(AttributeValue::N(num("1")), AttributeValue::N(num("2")));
    }

    #[test]
    fn sets_compare_ignoring_order() {
        let ab = AttributeValue::Ss(vec!["a".into(), "b".into()]);
        let ba = AttributeValue::Ss(vec!["b".into(), "a".into()]);
        let abc = AttributeValue::Ss(vec!["a".into(), "b".into(), "c".into()]);
        assert_eq!(ab, ba);
        assert_ne!(ab, abc);
        assert_eq!(
            AttributeValue::Ns(vec![num("1"), num("20")]),
            AttributeValue::Ns(vec![num("2e1"), num("1.0")])
        );
        assert_ne!(
            AttributeValue::Bs(vec![vec![1], vec![1]]),
            AttributeValue::Bs(vec![vec![1], vec![2]])
        );
    }

    #[test]
    fn lists_keep_order_and_types_differ() {
        let one = AttributeValue::S("1".into());
        let two = AttributeValue::S("2".into());
        assert_ne!(
            AttributeValue::L(vec![one.clone(), two.clone()]),
            AttributeValue::L(vec![two, one])
        );
        assert_ne!(AttributeValue::S("1".into()), AttributeValue::N(num("1")));
        assert_ne!(
            AttributeValue::Ss(vec!["a".into()]),
            AttributeValue::L(vec![AttributeValue::S("a".into())])
        );
    }

    #[test]
    fn scalar_types() {
        assert_eq!(ScalarType::parse("S"), Some(ScalarType::S));
        assert_eq!("N".parse::<ScalarType>(), Ok(ScalarType::N));
        assert_eq!(ScalarType::parse("B"), Some(ScalarType::B));
        assert_eq!(ScalarType::parse("SS"), None);
        assert_eq!(
            AttributeValue::B(vec![]).as_scalar_type(),
            Some(ScalarType::B)
        );
        assert_eq!(AttributeValue::Null.as_scalar_type(), None);
    }

    #[test]
    fn set_display_for_messages() {
        let set = AttributeValue::Ss(vec!["a".into(), "a".into()]);
        assert_eq!(set.set_display().as_deref(), Some("[a, a]"));
        let numbers = AttributeValue::Ns(vec![num("1.0"), num("1e0")]);
        assert_eq!(numbers.set_display().as_deref(), Some("[1, 1]"));
        let binaries = AttributeValue::Bs(vec![vec![1], vec![2]]);
        assert_eq!(binaries.set_display().as_deref(), Some("[AQ==, Ag==]"));
        assert_eq!(AttributeValue::Null.set_display(), None);
    }

    #[test]
    fn empty_key_values() {
        let error = check_key_value_not_empty("pk", &AttributeValue::S(String::new())).unwrap_err();
        assert_eq!(
            error.message,
            "One or more parameter values are not valid. The AttributeValue for a key attribute \
             cannot contain an empty string value. Key: pk"
        );
        let error = check_key_value_not_empty("sk", &AttributeValue::B(vec![])).unwrap_err();
        assert!(error.message.contains("empty binary value. Key: sk"));
        assert!(check_key_value_not_empty("pk", &AttributeValue::S("x".into())).is_ok());
        assert!(check_key_value_not_empty("pk", &AttributeValue::N(Number::zero())).is_ok());
    }
}
