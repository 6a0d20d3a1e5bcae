//! Operation dispatch by name: the one place that maps DynamoDB operation names (the
//! `X-Amz-Target` suffix) onto `Database` methods, for the HTTP server and the scenario
//! runner. Embedded users call the typed methods directly.

use model::{ApiError, ErrorCode};
use serde_json::Value;

use crate::api::{decode, encode};
use crate::database::Database;
use crate::metering::{CapacityTotals, Metered};

impl Database {
    /// Runs operation `operation` with a JSON request body and returns the JSON response.
    ///
    /// Data-plane operations are metered: they are asked for their TOTAL consumed capacity,
    /// which is added to [`Database::consumed_capacity`] and removed from the response again
    /// unless the client asked for it.
    pub fn execute(&self, operation: &str, mut body: Value) -> Result<Value, ApiError> {
        let Some(kind) = Metered::of(operation) else {
            return self.dispatch(operation, body);
        };
        let requested = body.get("ReturnConsumedCapacity").and_then(Value::as_str);
        let client_asked = requested.is_some_and(|r| r != "NONE");
        if requested.is_none_or(|r| r == "NONE") {
            if let Some(object) = body.as_object_mut() {
                object.insert("ReturnConsumedCapacity".into(), Value::from("TOTAL"));
            }
        }
        let mut response = self.dispatch(operation, body)?;
        if let Some(object) = response.as_object_mut() {
            let consumed = if client_asked {
                object.get("ConsumedCapacity").cloned()
            } else {
                object.remove("ConsumedCapacity")
            };
            if let Some(consumed) = consumed {
                self.capacity_meter.record(kind, &consumed);
            }
        }
        Ok(response)
    }

    /// Capacity units consumed per table through [`Database::execute`] since open.
    pub fn consumed_capacity(&self) -> Vec<(String, CapacityTotals)> {
        self.capacity_meter.totals()
    }

    fn dispatch(&self, operation: &str, body: Value) -> Result<Value, ApiError> {
        match operation {
            "CreateTable" => Ok(encode(&self.create_table(decode(body)?)?)),
            "DescribeTable" => Ok(encode(&self.describe_table(decode(body)?)?)),
            "ListTables" => Ok(encode(&self.list_tables(decode(body)?)?)),
            "DeleteTable" => Ok(encode(&self.delete_table(decode(body)?)?)),
            "UpdateTable" => Ok(encode(&self.update_table(decode(body)?)?)),
            // control: add arms above this line
            "PutItem" => Ok(encode(&self.put_item(decode(body)?)?)),
            "GetItem" => Ok(encode(&self.get_item(decode(body)?)?)),
            "UpdateItem" => Ok(encode(&self.update_item(decode(body)?)?)),
            "DeleteItem" => Ok(encode(&self.delete_item(decode(body)?)?)),
            "BatchWriteItem" => Ok(encode(&self.batch_write_item(decode(body)?)?)),
            "BatchGetItem" => Ok(encode(&self.batch_get_item(decode(body)?)?)),
            "TransactWriteItems" => Ok(encode(&self.transact_write_items(decode(body)?)?)),
            "TransactGetItems" => Ok(encode(&self.transact_get_items(decode(body)?)?)),
            // items: add arms above this line
            "Query" => Ok(encode(&self.query(decode(body)?)?)),
            "Scan" => Ok(encode(&self.scan(decode(body)?)?)),
            // query: add arms above this line
            _ => Err(ApiError::new(
                ErrorCode::UnknownOperationException,
                format!("Unknown operation: {operation}"),
            )),
        }
    }

    /// Whether [`Database::execute`] knows `operation`.
    pub fn supports(&self, operation: &str) -> bool {
        SUPPORTED_OPERATIONS.contains(&operation)
    }
}

/// Every operation [`Database::execute`] dispatches.
pub const SUPPORTED_OPERATIONS: &[&str] = &[
    "CreateTable",
    "DescribeTable",
    "ListTables",
    "DeleteTable",
    "UpdateTable",
    // control: add names above this line
    "PutItem",
    "GetItem",
    "UpdateItem",
    "DeleteItem",
    "BatchWriteItem",
    "BatchGetItem",
    "TransactWriteItems",
    "TransactGetItems",
    // items: add names above this line
    "Query",
    "Scan",
    // query: add names above this line
];
