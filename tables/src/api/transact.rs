//! TransactWriteItems and TransactGetItems: request and response shapes, and the
//! member-constraint checks DynamoDB makes before anything else (SPEC §3.9). Execution is in
//! `items/transact.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shoal_model::{ApiError, AttributeValue, Item};

use crate::api::common::{
    table_name_of, ConsumedCapacity, ItemCollectionMetrics, ReturnConsumedCapacity,
    RETURN_CONSUMED_CAPACITY, RETURN_ITEM_COLLECTION_METRICS,
    RETURN_VALUES_ON_CONDITION_CHECK_FAILURE,
};
use crate::api::constraint::{length_at_least, length_at_most, violation, Violations};

/// Actions in one transaction.
pub const TRANSACT_ITEMS_MAX: usize = 100;
/// Longest `ClientRequestToken`.
pub const CLIENT_REQUEST_TOKEN_LENGTH_MAX: usize = 36;

/// Largest aggregate size of a write transaction (SPEC §3.9: 4 MB), measured as
/// [`ActionView::carried_bytes`] summed over its actions.
pub const TRANSACT_WRITE_BYTES_MAX: usize = 4 << 20;

/// DynamoDB's text for a write transaction over [`TRANSACT_WRITE_BYTES_MAX`].
pub const TRANSACTION_TOO_LARGE_MESSAGE: &str = "Transaction request cannot be larger than 4 MB";

/// DynamoDB's text for two actions on one item.
pub const SAME_ITEM_MESSAGE: &str =
    "Transaction request cannot include multiple operations on one item";

/// `ConditionCheck`: a condition on an item, nothing written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ConditionCheck {
    pub table_name: Option<String>,
    pub key: Option<Item>,
    pub condition_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub expression_attribute_values: Option<BTreeMap<String, AttributeValue>>,
    pub return_values_on_condition_check_failure: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactPut {
    pub table_name: Option<String>,
    pub item: Option<Item>,
    pub condition_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub expression_attribute_values: Option<BTreeMap<String, AttributeValue>>,
    pub return_values_on_condition_check_failure: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactDelete {
    pub table_name: Option<String>,
    pub key: Option<Item>,
    pub condition_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub expression_attribute_values: Option<BTreeMap<String, AttributeValue>>,
    pub return_values_on_condition_check_failure: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactUpdate {
    pub table_name: Option<String>,
    pub key: Option<Item>,
    pub update_expression: Option<String>,
    pub condition_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub expression_attribute_values: Option<BTreeMap<String, AttributeValue>>,
    pub return_values_on_condition_check_failure: Option<String>,
}

/// One action of a TransactWriteItems: exactly one member is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactWriteItem {
    pub condition_check: Option<ConditionCheck>,
    pub put: Option<TransactPut>,
    pub delete: Option<TransactDelete>,
    pub update: Option<TransactUpdate>,
}

/// Serialize is for the idempotency fingerprint (`ClientRequestToken`), not for responses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactWriteItemsInput {
    pub transact_items: Option<Vec<TransactWriteItem>>,
    pub return_consumed_capacity: Option<String>,
    pub return_item_collection_metrics: Option<String>,
    pub client_request_token: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactWriteItemsOutput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_collection_metrics: Option<BTreeMap<String, Vec<ItemCollectionMetrics>>>,
    /// Where the write put its GSI units, for capacity emulation (`capacity::throttle`):
    /// filled only while capacity is enforced, and never part of the answer.
    #[serde(skip)]
    pub(crate) index_partition_units: Vec<crate::capacity::throttle::IndexPartitionUnits>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Get {
    pub table_name: Option<String>,
    pub key: Option<Item>,
    pub projection_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactGetItem {
    pub get: Option<Get>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactGetItemsInput {
    pub transact_items: Option<Vec<TransactGetItem>>,
    pub return_consumed_capacity: Option<String>,
}

/// One slot of `Responses`: `{}` when the item does not exist.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ItemResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<Item>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactGetItemsOutput {
    pub responses: Vec<ItemResponse>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
}

/// One write action after its constraints passed, with its members in one shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ActionKind {
    ConditionCheck,
    Put,
    Delete,
    Update,
}

/// The members of one write action, whatever its kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ActionView<'a> {
    pub kind: ActionKind,
    pub table_name: &'a str,
    /// `Key` (ConditionCheck, Delete, Update) or `Item` (Put).
    pub key_or_item: &'a Item,
    pub condition_expression: Option<&'a str>,
    pub update_expression: Option<&'a str>,
    pub names: Option<&'a BTreeMap<String, String>>,
    pub values: Option<&'a BTreeMap<String, AttributeValue>>,
    pub return_old_on_condition_failure: bool,
}

impl ActionView<'_> {
    /// What the action carries towards the transaction's 4 MB: its item (Put) or key, by
    /// DynamoDB's item size rules, and the values of its `ExpressionAttributeValues` (an
    /// Update's new data arrives there).
    pub fn carried_bytes(&self) -> usize {
        let values = self.values.map_or(0, |values| {
            values.values().map(AttributeValue::size_bytes).sum()
        });
        shoal_model::item_size_bytes(self.key_or_item) + values
    }
}

/// 1..=100 actions; DynamoDB prints the list (Java's toString), elided here when long.
fn check_action_count(count: usize, problems: &mut Violations) {
    if count == 0 {
        problems.push(violation(Some("[]"), "transactItems", &length_at_least(1)));
    } else if count > TRANSACT_ITEMS_MAX {
        problems.push(violation(
            Some("[…]"),
            "transactItems",
            &length_at_most(TRANSACT_ITEMS_MAX),
        ));
    }
}

/// The transaction-level options, after their checks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TransactOptions {
    pub return_consumed_capacity: ReturnConsumedCapacity,
    pub return_item_collection_metrics: bool,
}

impl TransactWriteItemsInput {
    /// Member constraints and the one-operation-per-action rule; returns the options and
    /// a uniform view of each action, in request order.
    pub(crate) fn check_constraints(
        &self,
    ) -> Result<(TransactOptions, Vec<ActionView<'_>>), ApiError> {
        let mut problems = Violations::default();
        problems.one_of(
            self.return_consumed_capacity.as_deref(),
            "returnConsumedCapacity",
            &RETURN_CONSUMED_CAPACITY,
        );
        problems.one_of(
            self.return_item_collection_metrics.as_deref(),
            "returnItemCollectionMetrics",
            &RETURN_ITEM_COLLECTION_METRICS,
        );
        if let Some(token) = &self.client_request_token {
            check_token_length(token, &mut problems);
        }
        let actions: &[_] = match &self.transact_items {
            None => {
                problems.not_null("transactItems", false);
                &[]
            }
            Some(actions) => {
                check_action_count(actions.len(), &mut problems);
                actions
            }
        };
        let mut views = Vec::with_capacity(actions.len());
        for (position, action) in actions.iter().enumerate().take(TRANSACT_ITEMS_MAX) {
            let member = format!("transactItems.{}.member", position + 1);
            let view = match action.view(&member, &mut problems) {
                Some(view) => view,
                None => continue,
            };
            views.push(view);
        }
        problems.finish()?;
        for action in actions {
            let set = [
                action.condition_check.is_some(),
                action.put.is_some(),
                action.delete.is_some(),
                action.update.is_some(),
            ];
            if set.iter().filter(|s| **s).count() != 1 {
                return Err(ApiError::validation(
                    "TransactItems can only contain one of Check, Put, Update or Delete",
                ));
            }
        }
        for view in &views {
            table_name_of(Some(view.table_name))?;
        }
        let options = TransactOptions {
            return_consumed_capacity: ReturnConsumedCapacity::parse(
                self.return_consumed_capacity.as_deref(),
            )?,
            return_item_collection_metrics: self.return_item_collection_metrics.as_deref()
                == Some("SIZE"),
        };
        Ok((options, views))
    }
}

fn check_token_length(token: &str, problems: &mut Violations) {
    let length = token.chars().count();
    if length == 0 {
        problems.push(violation(
            Some(token),
            "clientRequestToken",
            &length_at_least(1),
        ));
    } else if length > CLIENT_REQUEST_TOKEN_LENGTH_MAX {
        problems.push(violation(
            Some(token),
            "clientRequestToken",
            &length_at_most(CLIENT_REQUEST_TOKEN_LENGTH_MAX),
        ));
    }
}

/// What one kind of write action contributes to its [`ActionView`]; checking the members and
/// building the view is the same for every kind.
struct ActionParts<'a> {
    kind: ActionKind,
    /// The action's member name in messages (`conditionCheck`, `put`, …).
    member: &'static str,
    /// The required members, in the order DynamoDB reports them missing, and whether each
    /// is present.
    required: Vec<(&'static str, bool)>,
    table_name: Option<&'a String>,
    key_or_item: Option<&'a Item>,
    condition_expression: Option<&'a String>,
    update_expression: Option<&'a String>,
    names: Option<&'a BTreeMap<String, String>>,
    values: Option<&'a BTreeMap<String, AttributeValue>>,
    return_values_on_condition_check_failure: Option<&'a String>,
}

impl TransactWriteItem {
    /// The action's members, recording null required members in `problems`. None when the
    /// action has no operation or a required member is missing (errors reported later).
    fn view(&self, member: &str, problems: &mut Violations) -> Option<ActionView<'_>> {
        let parts = if let Some(check) = &self.condition_check {
            ActionParts {
                kind: ActionKind::ConditionCheck,
                member: "conditionCheck",
                required: vec![
                    ("key", check.key.is_some()),
                    ("tableName", check.table_name.is_some()),
                    ("conditionExpression", check.condition_expression.is_some()),
                ],
                table_name: check.table_name.as_ref(),
                key_or_item: check.key.as_ref(),
                condition_expression: check.condition_expression.as_ref(),
                update_expression: None,
                names: check.expression_attribute_names.as_ref(),
                values: check.expression_attribute_values.as_ref(),
                return_values_on_condition_check_failure: check
                    .return_values_on_condition_check_failure
                    .as_ref(),
            }
        } else if let Some(put) = &self.put {
            ActionParts {
                kind: ActionKind::Put,
                member: "put",
                required: vec![
                    ("item", put.item.is_some()),
                    ("tableName", put.table_name.is_some()),
                ],
                table_name: put.table_name.as_ref(),
                key_or_item: put.item.as_ref(),
                condition_expression: put.condition_expression.as_ref(),
                update_expression: None,
                names: put.expression_attribute_names.as_ref(),
                values: put.expression_attribute_values.as_ref(),
                return_values_on_condition_check_failure: put
                    .return_values_on_condition_check_failure
                    .as_ref(),
            }
        } else if let Some(delete) = &self.delete {
            ActionParts {
                kind: ActionKind::Delete,
                member: "delete",
                required: vec![
                    ("key", delete.key.is_some()),
                    ("tableName", delete.table_name.is_some()),
                ],
                table_name: delete.table_name.as_ref(),
                key_or_item: delete.key.as_ref(),
                condition_expression: delete.condition_expression.as_ref(),
                update_expression: None,
                names: delete.expression_attribute_names.as_ref(),
                values: delete.expression_attribute_values.as_ref(),
                return_values_on_condition_check_failure: delete
                    .return_values_on_condition_check_failure
                    .as_ref(),
            }
        } else if let Some(update) = &self.update {
            ActionParts {
                kind: ActionKind::Update,
                member: "update",
                required: vec![
                    ("key", update.key.is_some()),
                    ("updateExpression", update.update_expression.is_some()),
                    ("tableName", update.table_name.is_some()),
                ],
                table_name: update.table_name.as_ref(),
                key_or_item: update.key.as_ref(),
                condition_expression: update.condition_expression.as_ref(),
                update_expression: update.update_expression.as_ref(),
                names: update.expression_attribute_names.as_ref(),
                values: update.expression_attribute_values.as_ref(),
                return_values_on_condition_check_failure: update
                    .return_values_on_condition_check_failure
                    .as_ref(),
            }
        } else {
            return None;
        };
        let path = format!("{member}.{}", parts.member);
        for (name, present) in &parts.required {
            problems.not_null(&format!("{path}.{name}"), *present);
        }
        let return_values = parts
            .return_values_on_condition_check_failure
            .map(String::as_str);
        problems.one_of(
            return_values,
            &format!("{path}.returnValuesOnConditionCheckFailure"),
            &RETURN_VALUES_ON_CONDITION_CHECK_FAILURE,
        );
        Some(ActionView {
            kind: parts.kind,
            table_name: parts.table_name?,
            key_or_item: parts.key_or_item?,
            condition_expression: parts.condition_expression.map(String::as_str),
            update_expression: parts.update_expression.map(String::as_str),
            names: parts.names,
            values: parts.values,
            return_old_on_condition_failure: return_values == Some("ALL_OLD"),
        })
    }
}

impl TransactGetItemsInput {
    /// Member constraints; returns the capacity mode and the `Get` of every action.
    pub(crate) fn check_constraints(
        &self,
    ) -> Result<(ReturnConsumedCapacity, Vec<&Get>), ApiError> {
        let mut problems = Violations::default();
        problems.one_of(
            self.return_consumed_capacity.as_deref(),
            "returnConsumedCapacity",
            &RETURN_CONSUMED_CAPACITY,
        );
        let actions: &[_] = match &self.transact_items {
            None => {
                problems.not_null("transactItems", false);
                &[]
            }
            Some(actions) => {
                check_action_count(actions.len(), &mut problems);
                actions
            }
        };
        let mut gets = Vec::with_capacity(actions.len());
        for (position, action) in actions.iter().enumerate().take(TRANSACT_ITEMS_MAX) {
            let member = format!("transactItems.{}.member", position + 1);
            match &action.get {
                None => problems.not_null(&format!("{member}.get"), false),
                Some(get) => {
                    problems.not_null(&format!("{member}.get.key"), get.key.is_some());
                    problems.not_null(&format!("{member}.get.tableName"), get.table_name.is_some());
                    gets.push(get);
                }
            }
        }
        problems.finish()?;
        for get in &gets {
            table_name_of(get.table_name.as_deref())?;
        }
        let mode = ReturnConsumedCapacity::parse(self.return_consumed_capacity.as_deref())?;
        Ok((mode, gets))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::decode;
    use serde_json::json;

    fn write_error(body: serde_json::Value) -> String {
        let input: TransactWriteItemsInput = decode(body).unwrap();
        input.check_constraints().unwrap_err().message
    }

    #[test]
    fn write_constraints_use_dynamodb_texts() {
        assert_eq!(
            write_error(json!({"TransactItems": []})),
            "1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1"
        );
        assert_eq!(
            write_error(json!({})),
            "1 validation error detected: Value null at 'transactItems' failed to satisfy constraint: Member must not be null"
        );
        let check = json!({"ConditionCheck": {"TableName": "T", "Key": {"pk": {"S": "a"}}, "ConditionExpression": "attribute_exists(pk)"}});
        let many: Vec<_> = (0..101).map(|_| check.clone()).collect();
        assert!(write_error(json!({"TransactItems": many})).ends_with(
            "at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100"
        ));
        let both = json!({
            "Put": {"TableName": "T", "Item": {"pk": {"S": "a"}}},
            "Delete": {"TableName": "T", "Key": {"pk": {"S": "a"}}}
        });
        assert_eq!(
            write_error(json!({"TransactItems": [both]})),
            "TransactItems can only contain one of Check, Put, Update or Delete"
        );
        assert_eq!(
            write_error(json!({"TransactItems": [{"Update": {"TableName": "T", "Key": {}}}]})),
            "1 validation error detected: Value null at 'transactItems.1.member.update.updateExpression' failed to satisfy constraint: Member must not be null"
        );
        assert_eq!(
            write_error(json!({"TransactItems": [check.clone()], "ClientRequestToken": "x".repeat(37)})),
            format!("1 validation error detected: Value '{}' at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36", "x".repeat(37))
        );
        assert_eq!(
            write_error(json!({"TransactItems": [{"Put": {"TableName": "T", "Item": {}, "ReturnValuesOnConditionCheckFailure": "ALL_NEW"}}]})),
            "1 validation error detected: Value 'ALL_NEW' at 'transactItems.1.member.put.returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]"
        );
        // Every kind names its own required members, in DynamoDB's order.
        let missing = |path: &str, members: &[&str]| {
            let texts: Vec<String> = members
                .iter()
                .map(|m| format!("Value null at 'transactItems.1.member.{path}.{m}' failed to satisfy constraint: Member must not be null"))
                .collect();
            format!(
                "{} validation errors detected: {}",
                members.len(),
                texts.join("; ")
            )
        };
        for (action, path, members) in [
            (
                "ConditionCheck",
                "conditionCheck",
                vec!["key", "tableName", "conditionExpression"],
            ),
            ("Put", "put", vec!["item", "tableName"]),
            ("Delete", "delete", vec!["key", "tableName"]),
            (
                "Update",
                "update",
                vec!["key", "updateExpression", "tableName"],
            ),
        ] {
            assert_eq!(
                write_error(json!({"TransactItems": [{action: {}}]})),
                missing(path, &members),
                "{action}"
            );
        }
    }

    #[test]
    fn get_constraints() {
        let input: TransactGetItemsInput =
            decode(json!({"TransactItems": [{}], "ReturnConsumedCapacity": "X"})).unwrap();
        assert_eq!(
            input.check_constraints().unwrap_err().message,
            "2 validation errors detected: Value 'X' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]; Value null at 'transactItems.1.member.get' failed to satisfy constraint: Member must not be null"
        );
    }
}
