//! Types and checks shared by several operations.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shoal_model::{ApiError, Item};

use crate::api::constraint;

/// Capacity consumed by one part of a request (table or one index).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct Capacity {
    pub capacity_units: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_capacity_units: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_capacity_units: Option<f64>,
}

/// `ConsumedCapacity` as DynamoDB reports it (SPEC §3.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ConsumedCapacity {
    pub table_name: String,
    pub capacity_units: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_capacity_units: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_capacity_units: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<Capacity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_secondary_indexes: Option<BTreeMap<String, Capacity>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_secondary_indexes: Option<BTreeMap<String, Capacity>>,
}

/// `ItemCollectionMetrics` (tables with an LSI only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ItemCollectionMetrics {
    pub item_collection_key: Item,
    #[serde(rename = "SizeEstimateRangeGB")]
    pub size_estimate_range_gb: [f64; 2],
}

/// `ReturnConsumedCapacity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReturnConsumedCapacity {
    #[default]
    None,
    Total,
    Indexes,
}

/// The values of `ReturnConsumedCapacity`, in the order DynamoDB lists them in messages.
pub const RETURN_CONSUMED_CAPACITY: [&str; 3] = ["INDEXES", "TOTAL", "NONE"];
/// The values of `ReturnItemCollectionMetrics`.
pub const RETURN_ITEM_COLLECTION_METRICS: [&str; 2] = ["SIZE", "NONE"];
/// The values of `ReturnValuesOnConditionCheckFailure`.
pub const RETURN_VALUES_ON_CONDITION_CHECK_FAILURE: [&str; 2] = ["ALL_OLD", "NONE"];

impl ReturnConsumedCapacity {
    /// Parses the request member (absent = NONE).
    pub fn parse(value: Option<&str>) -> Result<ReturnConsumedCapacity, ApiError> {
        Ok(
            match parse_enum(value, "returnConsumedCapacity", &RETURN_CONSUMED_CAPACITY)? {
                Some("TOTAL") => ReturnConsumedCapacity::Total,
                Some("INDEXES") => ReturnConsumedCapacity::Indexes,
                _ => ReturnConsumedCapacity::None,
            },
        )
    }
}

/// Checks an enum-valued request member against its allowed values, with DynamoDB's text:
/// `1 validation error detected: Value 'X' at 'member' failed to satisfy constraint: Member
/// must satisfy enum value set: [A, B]`. Returns the value (as one of `allowed`).
pub fn parse_enum<'a>(
    value: Option<&str>,
    member: &str,
    allowed: &[&'a str],
) -> Result<Option<&'a str>, ApiError> {
    match value {
        None => Ok(None),
        Some(v) => match allowed.iter().find(|a| **a == v) {
            Some(a) => Ok(Some(*a)),
            None => Err(validation_errors(&[constraint::violation(
                Some(v),
                member,
                &constraint::enum_value_set(allowed),
            )])),
        },
    }
}

/// A missing table named by a data-plane operation (items, Query, Scan, batches,
/// transactions): DynamoDB does not name the table there (SPEC §3.7, §4.3).
pub fn data_table_not_found() -> ApiError {
    ApiError::new(
        shoal_model::ErrorCode::ResourceNotFoundException,
        "Requested resource not found",
    )
}

/// A missing table named by a control-plane operation (DescribeTable, DeleteTable, …).
pub fn table_not_found(name: &str) -> ApiError {
    ApiError::new(
        shoal_model::ErrorCode::ResourceNotFoundException,
        format!("Requested resource not found: Table: {name} not found"),
    )
}

/// Checks a TableName member (SPEC §2.1); `model_length_min` as in
/// [`constraint::name_violations`].
pub fn check_table_name(name: Option<&str>, model_length_min: usize) -> Result<&str, ApiError> {
    let mut problems = Vec::new();
    constraint::name_violations(name, "tableName", model_length_min, &mut problems);
    constraint::check(&problems)?;
    // A null name is a violation, so here it is present.
    Ok(name.unwrap_or_default())
}

/// The table a data-plane request names: a plain name or a table ARN
/// (`arn:aws:dynamodb:<region>:<account>:table/<name>`), checked as [`check_table_name`] does.
pub fn table_name_of(name: Option<&str>) -> Result<&str, ApiError> {
    check_table_name(name_in_table_member(name), 1)
}

/// The table name a TableName member holds: itself, or the name in a table ARN.
pub fn name_in_table_member(name: Option<&str>) -> Option<&str> {
    match name {
        Some(value) if value.starts_with("arn:") => match value.split_once(":table/") {
            Some((_, rest)) => Some(rest),
            None => Some(value),
        },
        other => other,
    }
}

pub use crate::api::constraint::validation_errors;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_and_name_messages() {
        assert_eq!(
            parse_enum(Some("X"), "select", &["A", "B"]).unwrap_err().message,
            "1 validation error detected: Value 'X' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [A, B]"
        );
        assert_eq!(
            check_table_name(Some("ab"), 3).unwrap_err().message,
            "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3"
        );
        // Too short and a character outside the pattern: both are reported.
        assert!(check_table_name(Some("a!"), 3)
            .unwrap_err()
            .message
            .starts_with("2 validation errors detected"));
        assert_eq!(check_table_name(Some("Thread"), 1).unwrap(), "Thread");
    }
}
