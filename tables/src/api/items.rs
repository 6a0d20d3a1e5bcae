//! PutItem, GetItem, UpdateItem and DeleteItem: request and response shapes, and the
//! member-constraint checks DynamoDB makes before anything else (`N validation errors
//! detected: …`, SPEC §7). Semantic checks and execution are in `items/single.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shoal_expr::legacy::{
    AttributeAction, AttributeValueUpdate, ComparisonOperator, ConditionalOperator,
    ExpectedAttribute,
};
use shoal_model::{ApiError, AttributeValue, Item};

use crate::api::common::{
    ConsumedCapacity, ItemCollectionMetrics, RETURN_CONSUMED_CAPACITY,
    RETURN_ITEM_COLLECTION_METRICS, RETURN_VALUES_ON_CONDITION_CHECK_FAILURE,
};
use crate::api::constraint::{length_at_least, violation, Violations};

/// One entry of the legacy `Expected` map.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExpectedAttributeValue {
    pub value: Option<AttributeValue>,
    pub exists: Option<bool>,
    pub comparison_operator: Option<String>,
    pub attribute_value_list: Option<Vec<AttributeValue>>,
}

/// One entry of the legacy `AttributeUpdates` map.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AttributeValueUpdateInput {
    pub value: Option<AttributeValue>,
    pub action: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PutItemInput {
    pub table_name: Option<String>,
    pub item: Option<Item>,
    pub condition_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub expression_attribute_values: Option<BTreeMap<String, AttributeValue>>,
    pub expected: Option<BTreeMap<String, ExpectedAttributeValue>>,
    pub conditional_operator: Option<String>,
    pub return_values: Option<String>,
    pub return_consumed_capacity: Option<String>,
    pub return_item_collection_metrics: Option<String>,
    pub return_values_on_condition_check_failure: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct PutItemOutput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<ConsumedCapacity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_collection_metrics: Option<ItemCollectionMetrics>,
    /// Where the write put its GSI units, for capacity emulation (`capacity::throttle`):
    /// filled only while capacity is enforced, and never part of the answer.
    #[serde(skip)]
    pub(crate) index_partition_units: Vec<crate::capacity::throttle::IndexPartitionUnits>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct GetItemInput {
    pub table_name: Option<String>,
    pub key: Option<Item>,
    pub consistent_read: Option<bool>,
    pub projection_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub attributes_to_get: Option<Vec<String>>,
    pub return_consumed_capacity: Option<String>,
}

/// `I`: how the item is held — an [`Item`] for the Rust API, a [`JsonItem`] when the answer
/// is written as JSON text.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct GetItemOutput<I = Item> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<I>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<ConsumedCapacity>,
}

/// An item of a read answered as JSON text (`Database::execute_json_text`): when answered
/// whole, its DynamoDB JSON written straight from its stored bytes
/// (`core::item_codec::item_json`), with no [`Item`] built; when projected, the item built
/// in memory. Either way it serializes as the [`Item`] would, byte for byte.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsonItem {
    /// The stored item's DynamoDB JSON and its DynamoDB size (`item_size_bytes`).
    Written {
        json: String,
        size_bytes: u64,
    },
    Built(Item),
}

impl Serialize for JsonItem {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            JsonItem::Written { json, .. } => {
                shoal_model::json_text::RawJson(json).serialize(serializer)
            }
            JsonItem::Built(item) => item.serialize(serializer),
        }
    }
}

impl Drop for JsonItem {
    fn drop(&mut self) {
        if let JsonItem::Written { json, .. } = self {
            crate::core::item_codec::recycle_json_buffer(std::mem::take(json).into_bytes());
        }
    }
}

impl From<Item> for JsonItem {
    fn from(item: Item) -> JsonItem {
        JsonItem::Built(item)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateItemInput {
    pub table_name: Option<String>,
    pub key: Option<Item>,
    pub update_expression: Option<String>,
    pub condition_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub expression_attribute_values: Option<BTreeMap<String, AttributeValue>>,
    pub attribute_updates: Option<BTreeMap<String, AttributeValueUpdateInput>>,
    pub expected: Option<BTreeMap<String, ExpectedAttributeValue>>,
    pub conditional_operator: Option<String>,
    pub return_values: Option<String>,
    pub return_consumed_capacity: Option<String>,
    pub return_item_collection_metrics: Option<String>,
    pub return_values_on_condition_check_failure: Option<String>,
}

/// UpdateItem's response (same members as PutItem's).
pub type UpdateItemOutput = PutItemOutput;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteItemInput {
    pub table_name: Option<String>,
    pub key: Option<Item>,
    pub condition_expression: Option<String>,
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    pub expression_attribute_values: Option<BTreeMap<String, AttributeValue>>,
    pub expected: Option<BTreeMap<String, ExpectedAttributeValue>>,
    pub conditional_operator: Option<String>,
    pub return_values: Option<String>,
    pub return_consumed_capacity: Option<String>,
    pub return_item_collection_metrics: Option<String>,
    pub return_values_on_condition_check_failure: Option<String>,
}

/// DeleteItem's response (same members as PutItem's).
pub type DeleteItemOutput = PutItemOutput;

/// `ReturnValues`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReturnValues {
    #[default]
    None,
    AllOld,
    UpdatedOld,
    AllNew,
    UpdatedNew,
}

const RETURN_VALUES: [&str; 5] = ["NONE", "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW"];

impl ReturnValues {
    fn from_name(name: Option<&str>) -> ReturnValues {
        match name {
            Some("ALL_OLD") => ReturnValues::AllOld,
            Some("UPDATED_OLD") => ReturnValues::UpdatedOld,
            Some("ALL_NEW") => ReturnValues::AllNew,
            Some("UPDATED_NEW") => ReturnValues::UpdatedNew,
            _ => ReturnValues::None,
        }
    }
}

const CONDITIONAL_OPERATOR: [&str; 2] = ["AND", "OR"];
const COMPARISON_OPERATORS: [&str; 13] = [
    "EQ",
    "NE",
    "IN",
    "LE",
    "LT",
    "GE",
    "GT",
    "BETWEEN",
    "NOT_NULL",
    "NULL",
    "CONTAINS",
    "NOT_CONTAINS",
    "BEGINS_WITH",
];
const ATTRIBUTE_ACTIONS: [&str; 3] = ["ADD", "PUT", "DELETE"];

/// The write-request members every mutation shares, after their constraints passed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteOptions {
    pub return_values: ReturnValues,
    pub return_consumed_capacity: crate::api::common::ReturnConsumedCapacity,
    pub return_item_collection_metrics: bool,
    pub return_old_on_condition_failure: bool,
}

/// Constraint checks of the members every write shares.
#[allow(clippy::too_many_arguments)]
fn write_constraints(
    constraints: &mut Violations,
    return_values: Option<&str>,
    return_consumed_capacity: Option<&str>,
    return_item_collection_metrics: Option<&str>,
    return_values_on_condition_check_failure: Option<&str>,
    conditional_operator: Option<&str>,
    expected: Option<&BTreeMap<String, ExpectedAttributeValue>>,
) {
    constraints.one_of(return_values, "returnValues", &RETURN_VALUES);
    constraints.one_of(
        return_consumed_capacity,
        "returnConsumedCapacity",
        &RETURN_CONSUMED_CAPACITY,
    );
    constraints.one_of(
        return_item_collection_metrics,
        "returnItemCollectionMetrics",
        &RETURN_ITEM_COLLECTION_METRICS,
    );
    constraints.one_of(
        return_values_on_condition_check_failure,
        "returnValuesOnConditionCheckFailure",
        &RETURN_VALUES_ON_CONDITION_CHECK_FAILURE,
    );
    constraints.one_of(
        conditional_operator,
        "conditionalOperator",
        &CONDITIONAL_OPERATOR,
    );
    for (name, entry) in expected.into_iter().flatten() {
        constraints.one_of(
            entry.comparison_operator.as_deref(),
            &format!("expected.{name}.member.comparisonOperator"),
            &COMPARISON_OPERATORS,
        );
    }
}

fn write_options(
    return_values: Option<&str>,
    return_consumed_capacity: Option<&str>,
    return_item_collection_metrics: Option<&str>,
    return_values_on_condition_check_failure: Option<&str>,
) -> Result<WriteOptions, ApiError> {
    Ok(WriteOptions {
        return_values: ReturnValues::from_name(return_values),
        return_consumed_capacity: crate::api::common::ReturnConsumedCapacity::parse(
            return_consumed_capacity,
        )?,
        return_item_collection_metrics: return_item_collection_metrics == Some("SIZE"),
        return_old_on_condition_failure: return_values_on_condition_check_failure
            == Some("ALL_OLD"),
    })
}

impl PutItemInput {
    /// Member constraints; returns the parsed shared options.
    pub(crate) fn check_constraints(&self) -> Result<WriteOptions, ApiError> {
        let mut constraints = Violations::default();
        constraints.table_name(self.table_name.as_deref());
        constraints.not_null("item", self.item.is_some());
        write_constraints(
            &mut constraints,
            self.return_values.as_deref(),
            self.return_consumed_capacity.as_deref(),
            self.return_item_collection_metrics.as_deref(),
            self.return_values_on_condition_check_failure.as_deref(),
            self.conditional_operator.as_deref(),
            self.expected.as_ref(),
        );
        constraints.finish()?;
        write_options(
            self.return_values.as_deref(),
            self.return_consumed_capacity.as_deref(),
            self.return_item_collection_metrics.as_deref(),
            self.return_values_on_condition_check_failure.as_deref(),
        )
    }
}

impl DeleteItemInput {
    pub(crate) fn check_constraints(&self) -> Result<WriteOptions, ApiError> {
        let mut constraints = Violations::default();
        constraints.table_name(self.table_name.as_deref());
        constraints.not_null("key", self.key.is_some());
        write_constraints(
            &mut constraints,
            self.return_values.as_deref(),
            self.return_consumed_capacity.as_deref(),
            self.return_item_collection_metrics.as_deref(),
            self.return_values_on_condition_check_failure.as_deref(),
            self.conditional_operator.as_deref(),
            self.expected.as_ref(),
        );
        constraints.finish()?;
        write_options(
            self.return_values.as_deref(),
            self.return_consumed_capacity.as_deref(),
            self.return_item_collection_metrics.as_deref(),
            self.return_values_on_condition_check_failure.as_deref(),
        )
    }
}

impl UpdateItemInput {
    pub(crate) fn check_constraints(&self) -> Result<WriteOptions, ApiError> {
        let mut constraints = Violations::default();
        constraints.table_name(self.table_name.as_deref());
        constraints.not_null("key", self.key.is_some());
        write_constraints(
            &mut constraints,
            self.return_values.as_deref(),
            self.return_consumed_capacity.as_deref(),
            self.return_item_collection_metrics.as_deref(),
            self.return_values_on_condition_check_failure.as_deref(),
            self.conditional_operator.as_deref(),
            self.expected.as_ref(),
        );
        for (name, update) in self.attribute_updates.iter().flatten() {
            constraints.one_of(
                update.action.as_deref(),
                &format!("attributeUpdates.{name}.member.action"),
                &ATTRIBUTE_ACTIONS,
            );
        }
        constraints.finish()?;
        write_options(
            self.return_values.as_deref(),
            self.return_consumed_capacity.as_deref(),
            self.return_item_collection_metrics.as_deref(),
            self.return_values_on_condition_check_failure.as_deref(),
        )
    }

    /// `AttributeUpdates` as the expression layer's legacy form (constraints checked).
    pub(crate) fn legacy_updates(&self) -> Option<BTreeMap<String, AttributeValueUpdate>> {
        self.attribute_updates.as_ref().map(|updates| {
            updates
                .iter()
                .map(|(name, update)| {
                    let action = match update.action.as_deref() {
                        Some("ADD") => AttributeAction::Add,
                        Some("DELETE") => AttributeAction::Delete,
                        _ => AttributeAction::Put,
                    };
                    let update = AttributeValueUpdate {
                        action,
                        value: update.value.clone(),
                    };
                    (name.clone(), update)
                })
                .collect()
        })
    }
}

impl GetItemInput {
    pub(crate) fn check_constraints(
        &self,
    ) -> Result<crate::api::common::ReturnConsumedCapacity, ApiError> {
        let mut constraints = Violations::default();
        constraints.table_name(self.table_name.as_deref());
        constraints.not_null("key", self.key.is_some());
        constraints.one_of(
            self.return_consumed_capacity.as_deref(),
            "returnConsumedCapacity",
            &RETURN_CONSUMED_CAPACITY,
        );
        if self.attributes_to_get.as_ref().is_some_and(Vec::is_empty) {
            constraints.push(violation(
                Some("[]"),
                "attributesToGet",
                &length_at_least(1),
            ));
        }
        constraints.finish()?;
        crate::api::common::ReturnConsumedCapacity::parse(self.return_consumed_capacity.as_deref())
    }
}

/// The legacy `Expected` map in the expression layer's form (constraints checked).
pub(crate) fn legacy_expected(
    expected: &BTreeMap<String, ExpectedAttributeValue>,
) -> BTreeMap<String, ExpectedAttribute> {
    expected
        .iter()
        .map(|(name, entry)| {
            let attribute = ExpectedAttribute {
                value: entry.value.clone(),
                exists: entry.exists,
                comparison_operator: entry
                    .comparison_operator
                    .as_deref()
                    .and_then(ComparisonOperator::from_name),
                attribute_value_list: entry.attribute_value_list.clone(),
            };
            (name.clone(), attribute)
        })
        .collect()
}

/// `ConditionalOperator` (constraints checked).
pub(crate) fn legacy_conditional_operator(operator: Option<&str>) -> Option<ConditionalOperator> {
    match operator {
        Some("OR") => Some(ConditionalOperator::Or),
        Some("AND") => Some(ConditionalOperator::And),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::decode;
    use serde_json::json;

    #[test]
    fn constraint_violations_are_reported_together() {
        let input: PutItemInput =
            decode(json!({"TableName": "a b", "ReturnValues": "SOME"})).unwrap();
        let message = input.check_constraints().unwrap_err().message;
        assert_eq!(
            message,
            "3 validation errors detected: Value 'a b' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; \
             Value null at 'item' failed to satisfy constraint: Member must not be null; \
             Value 'SOME' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [NONE, ALL_OLD, UPDATED_OLD, ALL_NEW, UPDATED_NEW]"
        );
        let input: GetItemInput =
            decode(json!({"TableName": "Tbl", "Key": {}, "ReturnConsumedCapacity": "ALL"}))
                .unwrap();
        assert_eq!(
            input.check_constraints().unwrap_err().message,
            "1 validation error detected: Value 'ALL' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]"
        );
    }

    #[test]
    fn shape_errors_are_serialization_errors() {
        let error = decode::<PutItemInput>(json!({"TableName": "Tbl", "Item": {"n": {"N": 3}}}))
            .unwrap_err();
        assert_eq!(error.code, shoal_model::ErrorCode::SerializationException);
        let error = decode::<UpdateItemInput>(json!({"TableName": 5})).unwrap_err();
        assert_eq!(error.code, shoal_model::ErrorCode::SerializationException);
    }

    #[test]
    fn legacy_members_translate() {
        let input: UpdateItemInput = decode(json!({
            "TableName": "Tbl", "Key": {"pk": {"S": "a"}},
            "AttributeUpdates": {"n": {"Action": "ADD", "Value": {"N": "1"}}, "x": {"Action": "DELETE"}},
            "Expected": {"x": {"ComparisonOperator": "NOT_NULL"}},
            "ConditionalOperator": "OR"
        }))
        .unwrap();
        input.check_constraints().unwrap();
        let updates = input.legacy_updates().unwrap();
        assert_eq!(updates["n"].action, AttributeAction::Add);
        assert_eq!(updates["x"].action, AttributeAction::Delete);
        let expected = legacy_expected(input.expected.as_ref().unwrap());
        assert_eq!(
            expected["x"].comparison_operator,
            Some(ComparisonOperator::NotNull)
        );
        assert_eq!(
            legacy_conditional_operator(Some("OR")),
            Some(ConditionalOperator::Or)
        );
        let bad: UpdateItemInput = decode(json!({
            "TableName": "Tbl", "Key": {}, "AttributeUpdates": {"n": {"Action": "SET"}}
        }))
        .unwrap();
        assert!(bad
            .check_constraints()
            .unwrap_err()
            .message
            .contains("Value 'SET' at 'attributeUpdates.n.member.action'"));
    }
}
