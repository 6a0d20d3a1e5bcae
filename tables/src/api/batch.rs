//! BatchWriteItem and BatchGetItem: request and response shapes, and the member-constraint
//! checks DynamoDB makes before anything else (SPEC §3.7). Execution is in `items/batch.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shoal_model::{ApiError, Item};

use crate::api::common::{
    table_name_of, ConsumedCapacity, ItemCollectionMetrics, ReturnConsumedCapacity,
    RETURN_CONSUMED_CAPACITY, RETURN_ITEM_COLLECTION_METRICS,
};
use crate::api::constraint::{
    length_at_least, length_at_most, validation_errors, violation, violation_without_value,
    Violations, NOT_NULL,
};

/// Write requests in one BatchWriteItem, per table and in total.
pub const BATCH_WRITE_REQUESTS_MAX: usize = 25;
/// Keys in one BatchGetItem, per table and in total.
pub const BATCH_GET_KEYS_MAX: usize = 100;
/// Largest BatchWriteItem request and BatchGetItem response (16 MiB of item data).
pub const BATCH_BYTES_MAX: u64 = 16 << 20;

/// DynamoDB's text for the same item named twice in one batch.
pub const DUPLICATE_KEYS_MESSAGE: &str = "Provided list of item keys contains duplicates";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PutRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<Item>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Item>,
}

/// One member of a BatchWriteItem table list: exactly one of a put or a delete.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WriteRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub put_request: Option<PutRequest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_request: Option<DeleteRequest>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchWriteItemInput {
    pub request_items: Option<BTreeMap<String, Vec<WriteRequest>>>,
    pub return_consumed_capacity: Option<String>,
    pub return_item_collection_metrics: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchWriteItemOutput {
    /// Always present (`{}` when every request was processed, which is always the case
    /// here: nothing is throttled).
    pub unprocessed_items: BTreeMap<String, Vec<WriteRequest>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_collection_metrics: Option<BTreeMap<String, Vec<ItemCollectionMetrics>>>,
    /// Where the write put its GSI units, for capacity emulation (`capacity::throttle`):
    /// filled only while capacity is enforced, and never part of the answer.
    #[serde(skip)]
    pub(crate) index_partition_units: Vec<crate::capacity::throttle::IndexPartitionUnits>,
}

/// The keys to read from one table, with how to read them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct KeysAndAttributes {
    #[serde(default)]
    pub keys: Vec<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistent_read: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection_expression: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expression_attribute_names: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes_to_get: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchGetItemInput {
    pub request_items: Option<BTreeMap<String, KeysAndAttributes>>,
    pub return_consumed_capacity: Option<String>,
}

/// `I`: how the items are held, as in [`GetItemOutput`](crate::api::items::GetItemOutput).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchGetItemOutput<I = Item> {
    /// Items found, per table (every requested table has an entry, maybe empty).
    pub responses: BTreeMap<String, Vec<I>>,
    /// Keys not read because the response reached 16 MB; always present.
    pub unprocessed_keys: BTreeMap<String, KeysAndAttributes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
}

impl<I> Default for BatchGetItemOutput<I> {
    fn default() -> Self {
        BatchGetItemOutput {
            responses: BTreeMap::new(),
            unprocessed_keys: BTreeMap::new(),
            consumed_capacity: None,
        }
    }
}

/// The table-level members shared by the requests of a batch, after their checks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchOptions {
    pub return_consumed_capacity: ReturnConsumedCapacity,
    pub return_item_collection_metrics: bool,
}

/// Checks every table name of a batch (plain names or table ARNs).
fn check_table_names<'a>(names: impl Iterator<Item = &'a String>) -> Result<(), ApiError> {
    for name in names {
        table_name_of(Some(name))?;
    }
    Ok(())
}

impl BatchWriteItemInput {
    /// Member constraints, request counts and shapes; returns the parsed options and the
    /// table lists (non-empty).
    pub(crate) fn check_constraints(
        &self,
    ) -> Result<(BatchOptions, &BTreeMap<String, Vec<WriteRequest>>), ApiError> {
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
        let request_items = match &self.request_items {
            Some(items) if !items.is_empty() => items,
            _ => {
                problems.finish()?;
                return Err(ApiError::validation(
                    "The requestItems parameter is required for BatchWriteItem",
                ));
            }
        };
        if request_items
            .values()
            .any(|requests| requests.is_empty() || requests.len() > BATCH_WRITE_REQUESTS_MAX)
        {
            // DynamoDB prints the whole map (Java's toString); its members are elided here.
            let tables: Vec<String> = request_items
                .keys()
                .map(|name| format!("{name}=[…]"))
                .collect();
            problems.push(violation(
                Some(&format!("{{{}}}", tables.join(", "))),
                "requestItems",
                &format!(
                    "Map value must satisfy constraint: [{}, {}]",
                    length_at_most(BATCH_WRITE_REQUESTS_MAX),
                    length_at_least(1)
                ),
            ));
        }
        problems.finish()?;
        check_table_names(request_items.keys())?;
        let total: usize = request_items.values().map(Vec::len).sum();
        if total > BATCH_WRITE_REQUESTS_MAX {
            return Err(ApiError::validation(
                "Too many items requested for the BatchWriteItem call",
            ));
        }
        for (table, requests) in request_items {
            for (position, request) in requests.iter().enumerate() {
                let member = format!("requestItems.{table}.member.{}.member", position + 1);
                let missing = match (&request.put_request, &request.delete_request) {
                    (Some(put), None) => put.item.is_none().then(|| format!("{member}.putRequest.item")),
                    (None, Some(delete)) => {
                        delete.key.is_none().then(|| format!("{member}.deleteRequest.key"))
                    }
                    _ => {
                        return Err(ApiError::validation(
                            "Supplied WriteRequest must contain exactly one of PutRequest or DeleteRequest",
                        ))
                    }
                };
                if let Some(path) = missing {
                    return Err(validation_errors(&[violation(None, &path, NOT_NULL)]));
                }
            }
        }
        let options = BatchOptions {
            return_consumed_capacity: ReturnConsumedCapacity::parse(
                self.return_consumed_capacity.as_deref(),
            )?,
            return_item_collection_metrics: self.return_item_collection_metrics.as_deref()
                == Some("SIZE"),
        };
        Ok((options, request_items))
    }
}

impl BatchGetItemInput {
    /// Member constraints and key counts; returns the capacity mode and the table requests.
    pub(crate) fn check_constraints(
        &self,
    ) -> Result<(ReturnConsumedCapacity, &BTreeMap<String, KeysAndAttributes>), ApiError> {
        let mut problems = Violations::default();
        problems.one_of(
            self.return_consumed_capacity.as_deref(),
            "returnConsumedCapacity",
            &RETURN_CONSUMED_CAPACITY,
        );
        let request_items = match &self.request_items {
            Some(items) if !items.is_empty() => items,
            _ => {
                problems.finish()?;
                return Err(ApiError::validation(
                    "The requestItems parameter is required for BatchGetItem",
                ));
            }
        };
        for (name, request) in request_items {
            // DynamoDB prints neither the keys nor their path in lowerCamelCase here (SPEC §3.7).
            let keys_path = format!("RequestItems.{name}.member.Keys");
            if request.keys.len() > BATCH_GET_KEYS_MAX {
                problems.push(violation_without_value(
                    &keys_path,
                    &length_at_most(BATCH_GET_KEYS_MAX),
                ));
            }
            if request.keys.is_empty() {
                problems.push(violation_without_value(&keys_path, &length_at_least(1)));
            }
            if request
                .attributes_to_get
                .as_ref()
                .is_some_and(Vec::is_empty)
            {
                problems.push(violation(
                    Some("[]"),
                    &format!("requestItems.{name}.member.attributesToGet"),
                    &length_at_least(1),
                ));
            }
        }
        problems.finish()?;
        check_table_names(request_items.keys())?;
        let total: usize = request_items.values().map(|r| r.keys.len()).sum();
        if total > BATCH_GET_KEYS_MAX {
            return Err(ApiError::validation(
                "Too many items requested for the BatchGetItem call",
            ));
        }
        let mode = ReturnConsumedCapacity::parse(self.return_consumed_capacity.as_deref())?;
        Ok((mode, request_items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::decode;
    use serde_json::json;

    fn write_error(body: serde_json::Value) -> String {
        let input: BatchWriteItemInput = decode(body).unwrap();
        input.check_constraints().unwrap_err().message
    }

    #[test]
    fn batch_write_counts_and_shapes() {
        assert_eq!(
            write_error(json!({})),
            "The requestItems parameter is required for BatchWriteItem"
        );
        assert_eq!(
            write_error(json!({"RequestItems": {}})),
            "The requestItems parameter is required for BatchWriteItem"
        );
        let put = json!({"PutRequest": {"Item": {"pk": {"S": "a"}}}});
        let many: Vec<_> = (0..26).map(|_| put.clone()).collect();
        assert_eq!(
            write_error(json!({"RequestItems": {"Tbl": many}})),
            "1 validation error detected: Value '{Tbl=[…]}' at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]"
        );
        let thirteen: Vec<_> = (0..13).map(|_| put.clone()).collect();
        assert_eq!(
            write_error(json!({"RequestItems": {"TblA": thirteen.clone(), "TblB": thirteen}})),
            "Too many items requested for the BatchWriteItem call"
        );
        assert_eq!(
            write_error(json!({"RequestItems": {"Tbl": [put.clone()]}, "ReturnConsumedCapacity": "ALL"})),
            "1 validation error detected: Value 'ALL' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]"
        );
        assert_eq!(
            write_error(json!({"RequestItems": {"Tbl": [{}]}})),
            "Supplied WriteRequest must contain exactly one of PutRequest or DeleteRequest"
        );
        let input: BatchWriteItemInput =
            decode(json!({"RequestItems": {"Tbl": [put]}, "ReturnItemCollectionMetrics": "SIZE"}))
                .unwrap();
        let (options, _) = input.check_constraints().unwrap();
        assert!(options.return_item_collection_metrics);
    }

    #[test]
    fn batch_get_counts() {
        let error = |body| {
            let input: BatchGetItemInput = decode(body).unwrap();
            input.check_constraints().unwrap_err().message
        };
        assert_eq!(
            error(json!({"RequestItems": {}})),
            "The requestItems parameter is required for BatchGetItem"
        );
        let keys: Vec<_> = (0..101)
            .map(|i| json!({"pk": {"S": i.to_string()}}))
            .collect();
        assert_eq!(
            error(json!({"RequestItems": {"Tbl": {"Keys": keys}}})),
            "1 validation error detected: Value at 'RequestItems.Tbl.member.Keys' failed to satisfy constraint: Member must have length less than or equal to 100"
        );
        let half: Vec<_> = (0..51)
            .map(|i| json!({"pk": {"S": i.to_string()}}))
            .collect();
        assert_eq!(
            error(
                json!({"RequestItems": {"TblA": {"Keys": half.clone()}, "TblB": {"Keys": half}}})
            ),
            "Too many items requested for the BatchGetItem call"
        );
    }
}
