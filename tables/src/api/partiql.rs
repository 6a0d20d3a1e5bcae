//! ExecuteStatement, BatchExecuteStatement and ExecuteTransaction: request and response
//! shapes (SPEC-2 §3.1) and the member constraints checked before a statement is parsed.
//! Compilation onto the item operations is in `partiql/statements.rs`.

use serde::{Deserialize, Serialize};
use shoal_model::{AttributeValue, Item};

use crate::api::common::{ConsumedCapacity, RETURN_VALUES_ON_CONDITION_CHECK_FAILURE};
use crate::api::constraint::{length_at_least, length_at_most, violation, Violations};
pub use crate::api::transact::ItemResponse;
use crate::capacity::metering::Metered;

/// Longest `Statement`, in characters.
pub const STATEMENT_LENGTH_MAX: usize = 8192;
/// Most statements in one BatchExecuteStatement.
pub const BATCH_STATEMENTS_MAX: usize = 25;
/// Most statements in one ExecuteTransaction.
pub const TRANSACT_STATEMENTS_MAX: usize = 100;
/// Longest `NextToken`.
pub const NEXT_TOKEN_LENGTH_MAX: usize = 32768;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExecuteStatementInput {
    pub statement: Option<String>,
    pub parameters: Option<Vec<AttributeValue>>,
    pub consistent_read: Option<bool>,
    pub next_token: Option<String>,
    pub limit: Option<i64>,
    pub return_consumed_capacity: Option<String>,
    pub return_values_on_condition_check_failure: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExecuteStatementOutput {
    pub items: Vec<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<ConsumedCapacity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_evaluated_key: Option<Item>,
    /// Whether the statement read or wrote, for the capacity meter.
    #[serde(skip)]
    pub metered: Option<Metered>,
}

/// One statement of a BatchExecuteStatement.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchStatementRequest {
    pub statement: Option<String>,
    pub parameters: Option<Vec<AttributeValue>>,
    pub consistent_read: Option<bool>,
    pub return_values_on_condition_check_failure: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchExecuteStatementInput {
    pub statements: Option<Vec<BatchStatementRequest>>,
    pub return_consumed_capacity: Option<String>,
}

/// A failed slot of a BatchExecuteStatement.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchStatementError {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<Item>,
}

/// One slot of a BatchExecuteStatement's answer, in request order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchStatementResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<BatchStatementError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<Item>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchExecuteStatementOutput {
    pub responses: Vec<BatchStatementResponse>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
    #[serde(skip)]
    pub metered: Option<Metered>,
}

/// One statement of an ExecuteTransaction.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ParameterizedStatement {
    pub statement: Option<String>,
    pub parameters: Option<Vec<AttributeValue>>,
    pub return_values_on_condition_check_failure: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExecuteTransactionInput {
    pub transact_statements: Option<Vec<ParameterizedStatement>>,
    pub client_request_token: Option<String>,
    pub return_consumed_capacity: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExecuteTransactionOutput {
    pub responses: Vec<ItemResponse>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
    #[serde(skip)]
    pub metered: Option<Metered>,
}

/// Checks a `Statement` member (1..8192 characters) at `path`.
pub(crate) fn check_statement<'a>(
    statement: Option<&'a str>,
    path: &str,
    violations: &mut Violations,
) -> Option<&'a str> {
    let Some(text) = statement else {
        violations.not_null(path, false);
        return None;
    };
    let length = text.chars().count();
    if length == 0 {
        violations.push(violation(Some(text), path, &length_at_least(1)));
    } else if length > STATEMENT_LENGTH_MAX {
        violations.push(violation(
            Some(text),
            path,
            &length_at_most(STATEMENT_LENGTH_MAX),
        ));
    }
    Some(text)
}

/// Checks `Parameters` (at least one when present) at `path`.
pub(crate) fn check_parameters(
    parameters: Option<&[AttributeValue]>,
    path: &str,
    violations: &mut Violations,
) {
    if parameters.is_some_and(<[AttributeValue]>::is_empty) {
        violations.push(violation(Some("[]"), path, &length_at_least(1)));
    }
}

/// Checks `ReturnValuesOnConditionCheckFailure` at `path`.
pub(crate) fn check_return_on_failure(
    value: Option<&str>,
    path: &str,
    violations: &mut Violations,
) {
    violations.one_of(value, path, &RETURN_VALUES_ON_CONDITION_CHECK_FAILURE);
}
