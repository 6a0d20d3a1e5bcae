//! KeyConditionExpression (and legacy KeyConditions): an equality on the partition key and at
//! most one condition on the sort key (SPEC §4.2).

use std::cmp::Ordering;

use shoal_model::{ApiError, AttributeValue, ScalarType};

use crate::ast::{Comparator, Condition, Operand, Path};
use crate::condition_eval::compare_scalars;
use crate::context::ExpressionKind;

/// Whether `value` has the key type `scalar_type`.
fn has_type(scalar_type: ScalarType, value: &AttributeValue) -> bool {
    value.as_scalar_type() == Some(scalar_type)
}

/// One key attribute of the schema being queried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAttribute {
    pub name: String,
    pub scalar_type: ScalarType,
}

/// The key schema of the table or index a Query runs on. A GSI with a multi-attribute key
/// (SPEC-3 §1) has up to 3 more HASH and 3 more RANGE attributes after the first of each,
/// in schema order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySchemaView {
    pub hash_key: KeyAttribute,
    pub range_key: Option<KeyAttribute>,
    pub more_hash_keys: Vec<KeyAttribute>,
    pub more_range_keys: Vec<KeyAttribute>,
}

impl KeySchemaView {
    /// A schema of one HASH and at most one RANGE attribute.
    pub fn new(hash_key: KeyAttribute, range_key: Option<KeyAttribute>) -> KeySchemaView {
        KeySchemaView {
            hash_key,
            range_key,
            more_hash_keys: Vec::new(),
            more_range_keys: Vec::new(),
        }
    }

    fn is_multi_attribute(&self) -> bool {
        !self.more_hash_keys.is_empty() || !self.more_range_keys.is_empty()
    }
}

/// The condition on the sort key.
#[derive(Debug, Clone, PartialEq)]
pub enum SortKeyCondition {
    Eq(AttributeValue),
    Lt(AttributeValue),
    Le(AttributeValue),
    Gt(AttributeValue),
    Ge(AttributeValue),
    /// Inclusive bounds, low ≤ high.
    Between(AttributeValue, AttributeValue),
    BeginsWith(AttributeValue),
}

impl SortKeyCondition {
    /// Whether a sort-key value satisfies the condition (values of another type never do).
    pub fn matches(&self, value: &AttributeValue) -> bool {
        let is = |bound: &AttributeValue, accepted: &[Ordering]| {
            compare_scalars(value, bound).is_some_and(|ordering| accepted.contains(&ordering))
        };
        match self {
            SortKeyCondition::Eq(bound) => is(bound, &[Ordering::Equal]),
            SortKeyCondition::Lt(bound) => is(bound, &[Ordering::Less]),
            SortKeyCondition::Le(bound) => is(bound, &[Ordering::Less, Ordering::Equal]),
            SortKeyCondition::Gt(bound) => is(bound, &[Ordering::Greater]),
            SortKeyCondition::Ge(bound) => is(bound, &[Ordering::Greater, Ordering::Equal]),
            SortKeyCondition::Between(low, high) => {
                is(low, &[Ordering::Greater, Ordering::Equal])
                    && is(high, &[Ordering::Less, Ordering::Equal])
            }
            SortKeyCondition::BeginsWith(prefix) => match (value, prefix) {
                (AttributeValue::S(text), AttributeValue::S(prefix)) => {
                    text.starts_with(prefix.as_str())
                }
                (AttributeValue::B(bytes), AttributeValue::B(prefix)) => bytes.starts_with(prefix),
                _ => false,
            },
        }
    }

    fn values(&self) -> Vec<&AttributeValue> {
        match self {
            SortKeyCondition::Eq(value)
            | SortKeyCondition::Lt(value)
            | SortKeyCondition::Le(value)
            | SortKeyCondition::Gt(value)
            | SortKeyCondition::Ge(value)
            | SortKeyCondition::BeginsWith(value) => vec![value],
            SortKeyCondition::Between(low, high) => vec![low, high],
        }
    }
}

/// A validated key condition.
///
/// On a multi-attribute key, `more_hash_values` are the values of HASH attributes 2..m,
/// `range_equalities` the values the RANGE attributes R1..Rk-1 equal, and `sort` the
/// condition on Rk (k = `range_equalities.len() + 1`); on other keys both lists are empty
/// and `sort` conditions the one sort key.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyCondition {
    /// The partition-key value (always an equality); the first HASH attribute's.
    pub hash_value: AttributeValue,
    pub more_hash_values: Vec<AttributeValue>,
    pub range_equalities: Vec<AttributeValue>,
    pub sort: Option<SortKeyCondition>,
}

impl KeyCondition {
    /// Every HASH value, in schema order.
    pub fn hash_values(&self) -> Vec<&AttributeValue> {
        std::iter::once(&self.hash_value)
            .chain(&self.more_hash_values)
            .collect()
    }
}

fn key_condition_error(message: &str) -> ApiError {
    ExpressionKind::KeyCondition.error(message)
}

fn invalid_operator(operator: &str) -> ApiError {
    key_condition_error(&format!(
        "Invalid operator used in KeyConditionExpression: {operator}"
    ))
}

fn not_supported() -> ApiError {
    ApiError::validation("Query key condition not supported")
}

/// The key attribute a conjunct constrains: a top-level path.
fn key_path(operand: &Operand) -> Result<Option<&Path>, ApiError> {
    match operand {
        Operand::Path(path) if path.is_nested() => Err(key_condition_error(
            "KeyConditionExpressions cannot have conditions on nested attributes",
        )),
        Operand::Path(path) => Ok(Some(path)),
        Operand::Size(_) => Err(invalid_operator("size")),
        Operand::Value(_) => Ok(None),
    }
}

fn literal(operand: &Operand) -> Option<&AttributeValue> {
    match operand {
        Operand::Value(value) => Some(&value.value),
        _ => None,
    }
}

/// One `AND`ed part of a key condition as (attribute name, condition on it).
fn conjunct(condition: &Condition) -> Result<(String, SortKeyCondition), ApiError> {
    match condition {
        Condition::Compare {
            left,
            comparator,
            right,
        } => {
            if *comparator == Comparator::Ne {
                return Err(invalid_operator("<>"));
            }
            let (path, value, comparator) = match (key_path(left)?, key_path(right)?) {
                (Some(path), None) => (path, literal(right), *comparator),
                (None, Some(path)) => (path, literal(left), comparator.mirrored()),
                _ => return Err(not_supported()),
            };
            let value = value.ok_or_else(not_supported)?.clone();
            let predicate = match comparator {
                Comparator::Eq => SortKeyCondition::Eq(value),
                Comparator::Lt => SortKeyCondition::Lt(value),
                Comparator::Le => SortKeyCondition::Le(value),
                Comparator::Gt => SortKeyCondition::Gt(value),
                Comparator::Ge => SortKeyCondition::Ge(value),
                Comparator::Ne => return Err(invalid_operator("<>")),
            };
            Ok((path.top_level_name().to_string(), predicate))
        }
        Condition::Between { value, low, high } => {
            let path = key_path(value)?.ok_or_else(not_supported)?;
            let (Some(low), Some(high)) = (literal(low), literal(high)) else {
                return Err(not_supported());
            };
            Ok((
                path.top_level_name().to_string(),
                SortKeyCondition::Between(low.clone(), high.clone()),
            ))
        }
        Condition::BeginsWith { value, prefix } => {
            let path = key_path(value)?.ok_or_else(not_supported)?;
            let prefix = literal(prefix).ok_or_else(not_supported)?;
            Ok((
                path.top_level_name().to_string(),
                SortKeyCondition::BeginsWith(prefix.clone()),
            ))
        }
        Condition::In { .. } => Err(invalid_operator("IN")),
        Condition::AttributeExists(_) => Err(invalid_operator("attribute_exists")),
        Condition::AttributeNotExists(_) => Err(invalid_operator("attribute_not_exists")),
        Condition::AttributeType { .. } => Err(invalid_operator("attribute_type")),
        Condition::Contains { .. } => Err(invalid_operator("contains")),
        Condition::Or(..) => Err(invalid_operator("OR")),
        Condition::Not(_) => Err(invalid_operator("NOT")),
        Condition::And(..) => Err(not_supported()),
    }
}

fn collect_conjuncts<'c>(condition: &'c Condition, conjuncts: &mut Vec<&'c Condition>) {
    match condition {
        Condition::And(left, right) => {
            collect_conjuncts(left, conjuncts);
            collect_conjuncts(right, conjuncts);
        }
        other => conjuncts.push(other),
    }
}

impl KeyCondition {
    pub(crate) fn from_condition(
        condition: &Condition,
        schema: &KeySchemaView,
    ) -> Result<KeyCondition, ApiError> {
        let mut conjuncts = Vec::new();
        collect_conjuncts(condition, &mut conjuncts);
        let predicates = conjuncts
            .into_iter()
            .map(conjunct)
            .collect::<Result<Vec<_>, ApiError>>()?;
        KeyCondition::from_predicates(predicates, schema)
    }

    /// Checks per-attribute predicates against the key schema (shared with legacy
    /// `KeyConditions`).
    pub(crate) fn from_predicates(
        predicates: Vec<(String, SortKeyCondition)>,
        schema: &KeySchemaView,
    ) -> Result<KeyCondition, ApiError> {
        for (position, (name, _)) in predicates.iter().enumerate() {
            if predicates[..position]
                .iter()
                .any(|(earlier, _)| earlier == name)
            {
                return Err(key_condition_error(
                    "KeyConditionExpressions must only contain one condition per key",
                ));
            }
        }
        if schema.is_multi_attribute() {
            return KeyCondition::multi_attribute(predicates, schema);
        }
        let hash_name = schema.hash_key.name.as_str();
        let Some(hash_predicate) = predicates
            .iter()
            .find_map(|(name, predicate)| (name == hash_name).then_some(predicate))
        else {
            return Err(ApiError::validation(format!(
                "Query condition missed key schema element: {hash_name}"
            )));
        };
        let SortKeyCondition::Eq(hash_value) = hash_predicate else {
            return Err(not_supported());
        };
        if !has_type(schema.hash_key.scalar_type, hash_value) {
            return Err(type_mismatch());
        }
        let mut sort = None;
        for (name, predicate) in &predicates {
            if name == hash_name {
                continue;
            }
            let range_key = schema
                .range_key
                .as_ref()
                .filter(|key| key.name == *name)
                .ok_or_else(not_supported)?;
            let values_match = predicate
                .values()
                .into_iter()
                .all(|value| has_type(range_key.scalar_type, value));
            if !values_match {
                return Err(type_mismatch());
            }
            sort = Some(predicate.clone());
        }
        Ok(KeyCondition {
            hash_value: hash_value.clone(),
            more_hash_values: Vec::new(),
            range_equalities: Vec::new(),
            sort,
        })
    }

    /// The rules of a multi-attribute key (SPEC-3 §1.4), in the order they are reported:
    /// an equality on every HASH attribute, their types, no other attribute, then a prefix
    /// R1..Rk of the RANGE attributes with equalities on all but Rk, and their types.
    /// Clause order does not matter: conditions are taken in schema order.
    fn multi_attribute(
        predicates: Vec<(String, SortKeyCondition)>,
        schema: &KeySchemaView,
    ) -> Result<KeyCondition, ApiError> {
        let predicate = |name: &str| {
            predicates
                .iter()
                .find_map(|(n, predicate)| (n == name).then_some(predicate))
        };
        let hash_keys: Vec<&KeyAttribute> = std::iter::once(&schema.hash_key)
            .chain(&schema.more_hash_keys)
            .collect();
        let range_keys: Vec<&KeyAttribute> = schema
            .range_key
            .iter()
            .chain(&schema.more_range_keys)
            .collect();
        let not_equality =
            |key: &&KeyAttribute| !matches!(predicate(&key.name), Some(SortKeyCondition::Eq(_)));
        let names = |keys: &[&KeyAttribute]| {
            keys.iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        let unequal_hash: Vec<&KeyAttribute> =
            hash_keys.iter().copied().filter(not_equality).collect();
        if !unequal_hash.is_empty() {
            return Err(ApiError::validation(format!(
                "HASH key attributes {} must have equality conditions specified in the query",
                names(&unequal_hash)
            )));
        }
        let mut hash_values = Vec::with_capacity(hash_keys.len());
        for key in &hash_keys {
            if let Some(SortKeyCondition::Eq(value)) = predicate(&key.name) {
                if !has_type(key.scalar_type, value) {
                    return Err(type_mismatch());
                }
                hash_values.push(value.clone());
            }
        }
        let is_key = |name: &str| hash_keys.iter().chain(&range_keys).any(|k| k.name == name);
        if predicates.iter().any(|(name, _)| !is_key(name)) {
            return Err(not_supported());
        }
        let last = range_keys
            .iter()
            .rposition(|key| predicate(&key.name).is_some());
        let mut range_equalities = Vec::new();
        let mut sort = None;
        if let Some(last) = last {
            let unequal_before: Vec<&KeyAttribute> = range_keys[..last]
                .iter()
                .copied()
                .filter(not_equality)
                .collect();
            if !unequal_before.is_empty() {
                return Err(ApiError::validation(format!(
                    "RANGE key attributes {} must have equality conditions specified in the query because a condition is present on key attribute {}",
                    names(&unequal_before),
                    range_keys[last].name
                )));
            }
            for key in &range_keys[..=last] {
                let Some(condition) = predicate(&key.name) else {
                    continue;
                };
                if !condition
                    .values()
                    .into_iter()
                    .all(|value| has_type(key.scalar_type, value))
                {
                    return Err(type_mismatch());
                }
            }
            for key in &range_keys[..last] {
                if let Some(SortKeyCondition::Eq(value)) = predicate(&key.name) {
                    range_equalities.push(value.clone());
                }
            }
            sort = predicate(&range_keys[last].name).cloned();
        }
        let mut hash_values = hash_values.into_iter();
        let Some(hash_value) = hash_values.next() else {
            return Err(not_supported());
        };
        Ok(KeyCondition {
            hash_value,
            more_hash_values: hash_values.collect(),
            range_equalities,
            sort,
        })
    }
}

fn type_mismatch() -> ApiError {
    ApiError::validation(
        "One or more parameter values were invalid: Condition parameter type does not match schema type",
    )
}

#[cfg(test)]
mod tests {
    use shoal_model::ScalarType;

    use super::*;
    use crate::test_support::{message, value, Maps};

    fn schema(range_type: Option<ScalarType>) -> KeySchemaView {
        KeySchemaView::new(
            KeyAttribute {
                name: "pk".to_string(),
                scalar_type: ScalarType::S,
            },
            range_type.map(|scalar_type| KeyAttribute {
                name: "sk".to_string(),
                scalar_type,
            }),
        )
    }

    fn maps() -> Maps {
        Maps::new(
            r##"{"#sk": "sk"}"##,
            r#"{":p": {"S": "p"}, ":a": {"N": "1"}, ":b": {"N": "5"}, ":s": {"S": "pre"}}"#,
        )
    }

    fn parse(text: &str, range_type: Option<ScalarType>) -> Result<KeyCondition, ApiError> {
        maps()
            .context()
            .parse_key_condition(text, &schema(range_type))
    }

    #[test]
    fn accepts_partition_equality_with_one_sort_condition() {
        let n = Some(ScalarType::N);
        let parsed = parse("pk = :p", n).unwrap();
        assert_eq!(parsed.hash_value, value(r#"{"S": "p"}"#));
        assert_eq!(parsed.sort, None);
        let parsed = parse("pk = :p AND #sk BETWEEN :a AND :b", n).unwrap();
        assert_eq!(
            parsed.sort,
            Some(SortKeyCondition::Between(
                value(r#"{"N": "1"}"#),
                value(r#"{"N": "5"}"#)
            ))
        );
        let parsed = parse("(:a < sk) AND (:p = pk)", n).unwrap();
        assert_eq!(
            parsed.sort,
            Some(SortKeyCondition::Gt(value(r#"{"N": "1"}"#)))
        );
        let parsed = parse("pk = :p AND begins_with(sk, :s)", Some(ScalarType::S)).unwrap();
        assert_eq!(
            parsed.sort,
            Some(SortKeyCondition::BeginsWith(value(r#"{"S": "pre"}"#)))
        );
    }

    #[test]
    fn rejects_what_dynamodb_rejects() {
        let n = Some(ScalarType::N);
        assert_eq!(
            message(parse("sk = :a", n)),
            "Query condition missed key schema element: pk"
        );
        assert_eq!(
            message(parse("other_attr = :p", n)),
            "Query condition missed key schema element: pk"
        );
        assert_eq!(
            message(parse("pk < :p", n)),
            "Query key condition not supported"
        );
        assert_eq!(
            message(parse("pk = :p AND other_attr = :a", n)),
            "Query key condition not supported"
        );
        assert_eq!(
            message(parse("pk = :p AND sk = :a", None)),
            "Query key condition not supported",
            "a hash-only schema has no sort key"
        );
        assert_eq!(
            message(parse("pk = :p OR sk = :a", n)),
            "Invalid KeyConditionExpression: Invalid operator used in KeyConditionExpression: OR"
        );
        assert!(message(parse("NOT pk = :p", n)).ends_with("KeyConditionExpression: NOT"));
        assert!(message(parse("pk IN (:p)", n)).ends_with("KeyConditionExpression: IN"));
        assert!(message(parse("pk = :p AND sk <> :a", n)).ends_with("KeyConditionExpression: <>"));
        assert!(message(parse("pk = :p AND attribute_exists(sk)", n))
            .ends_with("KeyConditionExpression: attribute_exists"));
        assert_eq!(
            message(parse("pk = :p AND sk > :a AND sk < :b", n)),
            "Invalid KeyConditionExpression: KeyConditionExpressions must only contain one condition per key"
        );
        assert_eq!(
            message(parse("pk.x = :p", n)),
            "Invalid KeyConditionExpression: KeyConditionExpressions cannot have conditions on nested attributes"
        );
        assert_eq!(
            message(parse("pk = :a", n)),
            "One or more parameter values were invalid: Condition parameter type does not match schema type"
        );
        assert_eq!(
            message(parse("pk = :p AND sk = :s", n)),
            "One or more parameter values were invalid: Condition parameter type does not match schema type"
        );
        assert!(message(parse("pk = :p AND begins_with(sk, :a)", n)).contains("begins_with"));
        assert_eq!(
            message(parse("pk = :p AND sk = pk", n)),
            "Query key condition not supported"
        );
    }

    #[test]
    fn key_condition_placeholders_count_as_used() {
        let maps = maps();
        let mut context = maps.context();
        context
            .parse_key_condition(
                "pk = :p AND #sk BETWEEN :a AND :b",
                &schema(Some(ScalarType::N)),
            )
            .unwrap();
        context
            .parse_condition("begins_with(x, :s)", crate::ConditionKind::Filter)
            .unwrap();
        assert!(context.finish().is_ok());
    }

    /// HASH h1 (S), h2 (N); RANGE a, b, c (S).
    fn multi() -> KeySchemaView {
        let key = |name: &str, scalar_type| KeyAttribute {
            name: name.to_string(),
            scalar_type,
        };
        KeySchemaView {
            hash_key: key("h1", ScalarType::S),
            range_key: Some(key("a", ScalarType::S)),
            more_hash_keys: vec![key("h2", ScalarType::N)],
            more_range_keys: vec![key("b", ScalarType::S), key("c", ScalarType::S)],
        }
    }

    fn parse_multi(text: &str) -> Result<KeyCondition, ApiError> {
        let maps = Maps::new(
            "",
            r#"{":s": {"S": "s"}, ":t": {"S": "t"}, ":n": {"N": "1"}}"#,
        );
        let mut context = maps.context();
        context.parse_key_condition(text, &multi())
    }

    #[test]
    fn multi_attribute_keys_take_a_range_prefix_in_schema_order() {
        let parsed = parse_multi("b < :t AND h2 = :n AND a = :s AND h1 = :s").unwrap();
        assert_eq!(
            parsed.hash_values(),
            [&value(r#"{"S": "s"}"#), &value(r#"{"N": "1"}"#)]
        );
        assert_eq!(parsed.range_equalities, [value(r#"{"S": "s"}"#)]);
        assert_eq!(
            parsed.sort,
            Some(SortKeyCondition::Lt(value(r#"{"S": "t"}"#)))
        );
        let hash_only = parse_multi("h1 = :s AND h2 = :n").unwrap();
        assert!(hash_only.range_equalities.is_empty() && hash_only.sort.is_none());
        let all_equal =
            parse_multi("h1 = :s AND h2 = :n AND a = :s AND b = :s AND c = :t").unwrap();
        assert_eq!(all_equal.range_equalities.len(), 2);
        assert_eq!(
            all_equal.sort,
            Some(SortKeyCondition::Eq(value(r#"{"S": "t"}"#)))
        );
    }

    #[test]
    fn multi_attribute_keys_name_what_lacks_an_equality() {
        let range = |names: &str, on: &str| {
            format!("RANGE key attributes {names} must have equality conditions specified in the query because a condition is present on key attribute {on}")
        };
        let cases = [
            ("a = :s", "HASH key attributes h1,h2 must have equality conditions specified in the query".to_string()),
            ("h1 > :s AND h2 = :n", "HASH key attributes h1 must have equality conditions specified in the query".to_string()),
            ("h1 = :s AND h2 = :n AND a = :s AND c = :s", range("b", "c")),
            ("h1 = :s AND h2 = :n AND a > :s AND c = :s", range("a,b", "c")),
            ("h1 = :n AND h2 = :n", "One or more parameter values were invalid: Condition parameter type does not match schema type".to_string()),
            ("h1 = :s AND h2 = :n AND z = :s", "Query key condition not supported".to_string()),
        ];
        for (condition, expected) in cases {
            assert_eq!(message(parse_multi(condition)), expected, "{condition}");
        }
    }

    #[test]
    fn sort_conditions_match_values_of_their_type() {
        let one = value(r#"{"N": "1"}"#);
        let five = value(r#"{"N": "5"}"#);
        let three = value(r#"{"N": "3"}"#);
        assert!(SortKeyCondition::Between(one.clone(), five.clone()).matches(&three));
        assert!(SortKeyCondition::Between(one.clone(), five.clone()).matches(&five));
        assert!(!SortKeyCondition::Lt(three.clone()).matches(&five));
        assert!(SortKeyCondition::Ge(three.clone()).matches(&three));
        assert!(!SortKeyCondition::Eq(one.clone()).matches(&value(r#"{"S": "1"}"#)));
        let prefix = SortKeyCondition::BeginsWith(value(r#"{"S": "ab"}"#));
        assert!(prefix.matches(&value(r#"{"S": "abc"}"#)));
        assert!(!prefix.matches(&value(r#"{"S": "b"}"#)));
    }
}
