//! AttributeValue: one DynamoDB value.

use std::collections::BTreeMap;

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
}

/// Equality as DynamoDB compares values: numbers by value, sets as sets (order ignored).
impl PartialEq for AttributeValue {
    fn eq(&self, other: &AttributeValue) -> bool {
        todo!("model helper: {other:?}")
    }
}
