//! Query and Scan: request and response shapes, and the request-only checks both share
//! (member constraints, legacy parameters, mixing of legacy and expression parameters).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use shoal_expr::legacy::{self, ComparisonOperator, ConditionalOperator};
use shoal_model::{ApiError, AttributeValue, ErrorCode, Item};

pub(crate) use crate::api::common::table_name_of;
use crate::api::common::{parse_enum, ConsumedCapacity};
use crate::api::constraint;

/// A legacy `KeyConditions` / `QueryFilter` / `ScanFilter` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LegacyCondition {
    pub comparison_operator: Option<String>,
    pub attribute_value_list: Option<Vec<AttributeValue>>,
}

/// `Query`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueryRequest {
    pub table_name: Option<String>,
    pub index_name: Option<String>,
    pub select: Option<String>,
    pub limit: Option<i64>,
    pub consistent_read: Option<bool>,
    pub scan_index_forward: Option<bool>,
    #[serde(default, deserialize_with = "start_key")]
    pub exclusive_start_key: Option<Item>,
    pub return_consumed_capacity: Option<String>,
    pub key_condition_expression: Option<String>,
    pub filter_expression: Option<String>,
    pub projection_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub expression_attribute_values: Option<BTreeMap<String, AttributeValue>>,
    // Legacy parameters.
    pub key_conditions: Option<BTreeMap<String, LegacyCondition>>,
    pub query_filter: Option<BTreeMap<String, LegacyCondition>>,
    pub conditional_operator: Option<String>,
    pub attributes_to_get: Option<Vec<String>>,
}

/// `Scan`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ScanRequest {
    pub table_name: Option<String>,
    pub index_name: Option<String>,
    pub select: Option<String>,
    pub limit: Option<i64>,
    pub consistent_read: Option<bool>,
    #[serde(default, deserialize_with = "start_key")]
    pub exclusive_start_key: Option<Item>,
    pub return_consumed_capacity: Option<String>,
    pub segment: Option<i64>,
    pub total_segments: Option<i64>,
    pub filter_expression: Option<String>,
    pub projection_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub expression_attribute_values: Option<BTreeMap<String, AttributeValue>>,
    // Legacy parameters.
    pub scan_filter: Option<BTreeMap<String, LegacyCondition>>,
    pub conditional_operator: Option<String>,
    pub attributes_to_get: Option<Vec<String>>,
}

/// The start of every refusal of an ExclusiveStartKey (SPEC §4.2).
pub(crate) const INVALID_START_KEY: &str = "The provided starting key is invalid";

/// Decodes an `ExclusiveStartKey`. DynamoDB words a refusal of one of its attribute values
/// (empty, two types, a bad number, …) as a refusal of the starting key, the value's own
/// text after a colon, as it does for the key's shape on a Scan (SPEC §4.2); a value of the
/// wrong JSON type stays the protocol's SerializationException.
fn start_key<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Item>, D::Error> {
    let Some(json) = Option::<serde_json::Value>::deserialize(deserializer)? else {
        return Ok(None);
    };
    match shoal_model::item_from_json(&json) {
        Err(error) if shoal_model::json::value_refusals_deferred(&error) => {
            return Ok(Some(shoal_model::Item::new()))
        }
        decoded => decoded,
    }
    .map(Some)
    .map_err(|error| {
        let error = match error.code {
            ErrorCode::ValidationException => {
                ApiError::validation(format!("{INVALID_START_KEY}: {}", error.message))
            }
            _ => error,
        };
        serde::de::Error::custom(error.to_serde_message())
    })
}

/// The answer to a Query or a Scan: one page. `I`: how the items are held, as in
/// [`GetItemOutput`](crate::api::items::GetItemOutput).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueryResponse<I = Item> {
    /// Absent with `Select: COUNT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<I>>,
    /// Items the filter kept.
    pub count: u64,
    /// Items evaluated (read) before the filter.
    pub scanned_count: u64,
    /// Present when the page stopped early (Limit or 1 MB): pass it back as
    /// `ExclusiveStartKey` to continue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_evaluated_key: Option<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<ConsumedCapacity>,
}

/// A Scan answers with the same shape as a Query.
pub type ScanResponse<I = Item> = QueryResponse<I>;

/// Largest `TotalSegments` DynamoDB accepts.
pub const TOTAL_SEGMENTS_MAX: i64 = 1_000_000;

/// The values of `Select`, in the order DynamoDB lists them.
pub(crate) const SELECT_VALUES: [&str; 4] = [
    "SPECIFIC_ATTRIBUTES",
    "COUNT",
    "ALL_ATTRIBUTES",
    "ALL_PROJECTED_ATTRIBUTES",
];

/// The constraints of the members Query and Scan share, in the API model's member order
/// up to `Limit` (`TableName`, `IndexName`, then `Select` for Query, which the model lists
/// before `Limit`).
fn shared_constraints(
    problems: &mut constraint::Violations,
    table_name: Option<&str>,
    index_name: Option<&str>,
) {
    problems.table_name(crate::api::common::name_in_table_member(table_name));
    problems.index_name(index_name);
}

fn limit_constraint(problems: &mut constraint::Violations, limit: Option<i64>) {
    if limit.is_some_and(|limit| limit < 1) {
        // SPEC §4.2's verified text prints neither the value nor a lowerCamelCase path.
        problems.push(constraint::violation_without_value(
            "Limit",
            &constraint::value_at_least(1),
        ));
    }
}

/// Query's member constraints, answered together (`N validation errors detected: …`, SPEC
/// §7) in the API model's member order, before any other check.
pub(crate) fn query_constraints(request: &QueryRequest) -> Result<(), ApiError> {
    let mut problems = constraint::Violations::default();
    shared_constraints(
        &mut problems,
        request.table_name.as_deref(),
        request.index_name.as_deref(),
    );
    problems.one_of(request.select.as_deref(), "select", &SELECT_VALUES);
    limit_constraint(&mut problems, request.limit);
    problems.one_of(
        request.conditional_operator.as_deref(),
        "conditionalOperator",
        &["AND", "OR"],
    );
    problems.one_of(
        request.return_consumed_capacity.as_deref(),
        "returnConsumedCapacity",
        &crate::api::common::RETURN_CONSUMED_CAPACITY,
    );
    problems.finish()
}

/// Scan's member constraints, as [`query_constraints`] (Scan's model lists `Limit` before
/// `Select`, and ends with `TotalSegments` and `Segment`).
pub(crate) fn scan_constraints(request: &ScanRequest) -> Result<(), ApiError> {
    let mut problems = constraint::Violations::default();
    shared_constraints(
        &mut problems,
        request.table_name.as_deref(),
        request.index_name.as_deref(),
    );
    limit_constraint(&mut problems, request.limit);
    problems.one_of(request.select.as_deref(), "select", &SELECT_VALUES);
    problems.one_of(
        request.conditional_operator.as_deref(),
        "conditionalOperator",
        &["AND", "OR"],
    );
    problems.one_of(
        request.return_consumed_capacity.as_deref(),
        "returnConsumedCapacity",
        &crate::api::common::RETURN_CONSUMED_CAPACITY,
    );
    problems.within(
        request.total_segments,
        "totalSegments",
        1,
        TOTAL_SEGMENTS_MAX,
    );
    problems.within(request.segment, "segment", 0, TOTAL_SEGMENTS_MAX - 1);
    problems.finish()
}

/// Checks `Limit` (≥ 1) and returns it as a count.
pub(crate) fn check_limit(limit: Option<i64>) -> Result<Option<usize>, ApiError> {
    match limit {
        None => Ok(None),
        Some(limit) if limit >= 1 => Ok(Some(usize::try_from(limit).unwrap_or(usize::MAX))),
        // SPEC §4.2's verified text prints neither the value nor a lowerCamelCase path.
        Some(_) => Err(constraint::validation_errors(&[
            constraint::violation_without_value("Limit", &constraint::value_at_least(1)),
        ])),
    }
}

/// Checks an `IndexName` member: 3..255 characters of `[a-zA-Z0-9_.-]`.
pub(crate) fn check_index_name(name: Option<&str>) -> Result<(), ApiError> {
    let Some(name) = name else {
        return Ok(());
    };
    let mut problems = Vec::new();
    constraint::name_violations(
        Some(name),
        "indexName",
        constraint::NAME_LENGTH_MIN,
        &mut problems,
    );
    constraint::check(&problems)
}

/// Checks `AttributesToGet` (1.. names) and turns it into a projection.
pub(crate) fn attributes_to_get(
    names: Option<&Vec<String>>,
) -> Result<Option<shoal_expr::Projection>, ApiError> {
    match names {
        None => Ok(None),
        Some(names) if names.is_empty() => {
            Err(constraint::validation_errors(&[constraint::violation(
                Some("[]"),
                "attributesToGet",
                &constraint::length_at_least(1),
            )]))
        }
        Some(names) => legacy::attributes_to_get(names).map(Some),
    }
}

/// Parses `ConditionalOperator` (AND | OR).
pub(crate) fn conditional_operator(
    value: Option<&str>,
) -> Result<Option<ConditionalOperator>, ApiError> {
    Ok(
        match parse_enum(value, "conditionalOperator", &["AND", "OR"])? {
            None => None,
            Some("OR") => Some(ConditionalOperator::Or),
            Some(_) => Some(ConditionalOperator::And),
        },
    )
}

/// Comparison operators in the order DynamoDB lists them in its enum message.
const COMPARISON_OPERATORS: [&str; 13] = [
    "IN",
    "NULL",
    "BETWEEN",
    "LT",
    "NOT_CONTAINS",
    "EQ",
    "GT",
    "NOT_NULL",
    "NE",
    "LE",
    "BEGINS_WITH",
    "GE",
    "CONTAINS",
];

/// Converts a legacy condition map (`member` is its camelCase name for messages, e.g.
/// `keyConditions`), checking each ComparisonOperator.
pub(crate) fn legacy_conditions(
    conditions: Option<&BTreeMap<String, LegacyCondition>>,
    member: &str,
) -> Result<Option<BTreeMap<String, legacy::LegacyCondition>>, ApiError> {
    let Some(conditions) = conditions else {
        return Ok(None);
    };
    let mut converted = BTreeMap::new();
    for (name, condition) in conditions {
        let path = format!("{member}.{name}.member.comparisonOperator");
        let Some(operator) = condition.comparison_operator.as_deref() else {
            return Err(constraint::validation_errors(&[constraint::violation(
                None,
                &path,
                constraint::NOT_NULL,
            )]));
        };
        let operator = parse_enum(Some(operator), &path, &COMPARISON_OPERATORS)?
            .and_then(ComparisonOperator::from_name)
            .ok_or_else(|| {
                ApiError::validation(format!("Unknown ComparisonOperator {operator}"))
            })?;
        converted.insert(
            name.clone(),
            legacy::LegacyCondition {
                comparison_operator: operator,
                attribute_value_list: condition.attribute_value_list.clone().unwrap_or_default(),
            },
        );
    }
    Ok(Some(converted))
}

/// The checks DynamoDB makes on which expression and legacy parameters a request combines
/// (as dynalite words them): no mixing of the two families, and placeholder maps only with
/// expressions that can use them. `expressions` and `legacy_parameters` list every member
/// of each family with whether the request has it, in DynamoDB's order.
pub(crate) fn check_expression_parameters(
    expressions: &[(&str, bool)],
    legacy_parameters: &[(&str, bool)],
    has_names: bool,
    has_values: bool,
) -> Result<(), ApiError> {
    let present = |members: &[(&str, bool)]| -> Vec<String> {
        members
            .iter()
            .filter(|(_, present)| *present)
            .map(|(name, _)| name.to_string())
            .collect()
    };
    let used_expressions = present(expressions);
    let used_legacy = present(legacy_parameters);
    let legacy_names: Vec<&str> = used_legacy.iter().map(String::as_str).collect();
    let expression_names: Vec<&str> = used_expressions.iter().map(String::as_str).collect();
    shoal_expr::check_no_mixing(&legacy_names, &expression_names)?;
    if has_names && used_expressions.is_empty() {
        return Err(ApiError::validation(
            "ExpressionAttributeNames can only be specified when using expressions",
        ));
    }
    // A ProjectionExpression cannot use values.
    let value_expressions: Vec<&(&str, bool)> = expressions
        .iter()
        .filter(|(name, _)| *name != "ProjectionExpression")
        .collect();
    if has_values && value_expressions.iter().all(|(_, present)| !present) {
        let names: Vec<&str> = value_expressions.iter().map(|(name, _)| *name).collect();
        return Err(ApiError::validation(format!(
            "ExpressionAttributeValues can only be specified when using expressions: {} is null",
            names.join(" and ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_constraints_use_dynamodb_texts() {
        assert_eq!(
            table_name_of(Some("arn:aws:dynamodb:r:1:table/Thread")).unwrap(),
            "Thread"
        );
        assert_eq!(table_name_of(Some("Thread")).unwrap(), "Thread");
        assert!(table_name_of(None)
            .unwrap_err()
            .message
            .contains("Member must not be null"));
        assert_eq!(check_limit(Some(3)).unwrap(), Some(3));
        assert!(check_limit(Some(0))
            .unwrap_err()
            .message
            .contains("greater than or equal to 1"));
        assert!(check_index_name(Some("ab"))
            .unwrap_err()
            .message
            .starts_with("1 validation error detected: Value 'ab' at 'indexName'"));
        assert!(check_index_name(Some("a b"))
            .unwrap_err()
            .message
            .contains("regular expression"));
        assert!(check_index_name(Some("abc")).is_ok());
        assert!(attributes_to_get(Some(&vec![])).is_err());
        assert_eq!(
            conditional_operator(Some("OR")).unwrap(),
            Some(ConditionalOperator::Or)
        );
        assert!(conditional_operator(Some("XOR"))
            .unwrap_err()
            .message
            .contains("[AND, OR]"));
    }

    #[test]
    fn legacy_conditions_check_their_operator() {
        let mut map = BTreeMap::new();
        map.insert(
            "pk".to_string(),
            LegacyCondition {
                comparison_operator: Some("EQUALS".into()),
                attribute_value_list: None,
            },
        );
        let error = legacy_conditions(Some(&map), "keyConditions").unwrap_err();
        assert!(error
            .message
            .starts_with("1 validation error detected: Value 'EQUALS' at 'keyConditions.pk.member.comparisonOperator'"));
        map.get_mut("pk").unwrap().comparison_operator = Some("EQ".into());
        let converted = legacy_conditions(Some(&map), "keyConditions")
            .unwrap()
            .unwrap();
        assert_eq!(converted["pk"].comparison_operator, ComparisonOperator::Eq);
    }

    #[test]
    fn mixing_and_placeholder_rules() {
        let expressions = [
            ("ProjectionExpression", false),
            ("FilterExpression", true),
            ("KeyConditionExpression", false),
        ];
        let legacy = [("AttributesToGet", false), ("QueryFilter", true)];
        assert_eq!(
            check_expression_parameters(&expressions, &legacy, false, false).unwrap_err().message,
            "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {QueryFilter} Expression parameters: {FilterExpression}"
        );
        let none = [
            ("ProjectionExpression", true),
            ("FilterExpression", false),
            ("KeyConditionExpression", false),
        ];
        assert_eq!(
            check_expression_parameters(&none, &[], false, true).unwrap_err().message,
            "ExpressionAttributeValues can only be specified when using expressions: FilterExpression and KeyConditionExpression is null"
        );
        let nothing = [("ProjectionExpression", false)];
        assert_eq!(
            check_expression_parameters(&nothing, &[], true, false)
                .unwrap_err()
                .message,
            "ExpressionAttributeNames can only be specified when using expressions"
        );
        assert!(check_expression_parameters(&expressions, &[], true, true).is_ok());
    }
}
