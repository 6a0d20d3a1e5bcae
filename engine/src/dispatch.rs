//! Operation dispatch by name: the one place that maps DynamoDB operation names (the
//! `X-Amz-Target` suffix) onto `Database` methods, for the HTTP server and the scenario
//! runner. Embedded users call the typed methods directly.

use model::{ApiError, ErrorCode};
use serde_json::Value;

use crate::api::batch::{BatchGetItemOutput, BatchWriteItemOutput};
use crate::api::common::ConsumedCapacity;
use crate::api::items::{GetItemOutput, PutItemOutput};
use crate::api::query::QueryResponse;
use crate::api::transact::{TransactGetItemsOutput, TransactWriteItemsOutput};
use crate::api::{decode, encode};
use crate::database::Database;
use crate::metering::{CapacityTotals, Metered};
use serde::Serialize;

impl Database {
    /// Runs operation `operation` with a JSON request body and returns the JSON response.
    ///
    /// Data-plane operations are metered: they are asked for their TOTAL consumed capacity,
    /// which is added to [`Database::consumed_capacity`] and removed from the response again
    /// unless the client asked for it.
    pub fn execute(&self, operation: &str, body: Value) -> Result<Value, ApiError> {
        self.dispatch(operation, body, ToValue)
    }

    /// [`Database::execute`] answering with the response's JSON text, serialised straight
    /// from the typed response (no intermediate `Value`): what a server sends.
    pub fn execute_to_json(&self, operation: &str, body: Value) -> Result<Vec<u8>, ApiError> {
        self.dispatch(operation, body, ToJsonText)
    }

    /// Capacity units consumed per table through [`Database::execute`] and
    /// [`Database::execute_to_json`] since open.
    pub fn consumed_capacity(&self) -> Vec<(String, CapacityTotals)> {
        self.capacity_meter.totals()
    }

    fn dispatch<E: Encoding>(
        &self,
        operation: &str,
        mut body: Value,
        encoding: E,
    ) -> Result<E::Output, ApiError> {
        let metered = Metered::of(operation);
        let requested = body.get("ReturnConsumedCapacity").and_then(Value::as_str);
        let meter = metered.map(|kind| MeterRequest {
            kind,
            client_asked: requested.is_some_and(|r| r != "NONE"),
        });
        if metered.is_some() && requested.is_none_or(|r| r == "NONE") {
            if let Some(object) = body.as_object_mut() {
                object.insert("ReturnConsumedCapacity".into(), Value::from("TOTAL"));
            }
        }
        match operation {
            "CreateTable" => Ok(encoding.encode(&self.create_table(decode(body)?)?)),
            "DescribeTable" => Ok(encoding.encode(&self.describe_table(decode(body)?)?)),
            "ListTables" => Ok(encoding.encode(&self.list_tables(decode(body)?)?)),
            "DeleteTable" => Ok(encoding.encode(&self.delete_table(decode(body)?)?)),
            "UpdateTable" => Ok(encoding.encode(&self.update_table(decode(body)?)?)),
            // control: add arms above this line
            "PutItem" => Ok(self.metered(meter, self.put_item(decode(body)?)?, &encoding)),
            "GetItem" => Ok(self.metered(meter, self.get_item(decode(body)?)?, &encoding)),
            "UpdateItem" => Ok(self.metered(meter, self.update_item(decode(body)?)?, &encoding)),
            "DeleteItem" => Ok(self.metered(meter, self.delete_item(decode(body)?)?, &encoding)),
            "BatchWriteItem" => {
                Ok(self.metered(meter, self.batch_write_item(decode(body)?)?, &encoding))
            }
            "BatchGetItem" => {
                Ok(self.metered(meter, self.batch_get_item(decode(body)?)?, &encoding))
            }
            "TransactWriteItems" => {
                Ok(self.metered(meter, self.transact_write_items(decode(body)?)?, &encoding))
            }
            "TransactGetItems" => {
                Ok(self.metered(meter, self.transact_get_items(decode(body)?)?, &encoding))
            }
            // items: add arms above this line
            "Query" => Ok(self.metered(meter, self.query(decode(body)?)?, &encoding)),
            "Scan" => Ok(self.metered(meter, self.scan(decode(body)?)?, &encoding)),
            // query: add arms above this line
            _ => Err(ApiError::new(
                ErrorCode::UnknownOperationException,
                format!("Unknown operation: {operation}"),
            )),
        }
    }

    /// Records a data-plane response's capacity and, unless the client asked for it, removes
    /// it before encoding.
    fn metered<R: CarriesCapacity + Serialize, E: Encoding>(
        &self,
        meter: Option<MeterRequest>,
        mut response: R,
        encoding: &E,
    ) -> E::Output {
        if let Some(meter) = meter {
            self.capacity_meter
                .record(meter.kind, response.consumed_capacity());
            if !meter.client_asked {
                response.clear_consumed_capacity();
            }
        }
        encoding.encode(&response)
    }

    /// Whether [`Database::execute`] knows `operation`.
    pub fn supports(&self, operation: &str) -> bool {
        SUPPORTED_OPERATIONS.contains(&operation)
    }
}

/// Whether `operation` never waits: the data-plane reads (those metered as reads) read a
/// snapshot, with no collection lock, WAL write or fsync, and take microseconds, so a server
/// may run them on its event-loop threads. Every other operation may block on a lock or an
/// fsync. (Control-plane reads are not among them: DescribeTable may compute statistics over
/// a whole tree.)
pub fn never_waits(operation: &str) -> bool {
    Metered::of(operation) == Some(Metered::Read)
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

/// How a data-plane request is metered.
#[derive(Debug, Clone, Copy)]
struct MeterRequest {
    kind: Metered,
    /// The client asked for ConsumedCapacity itself, so it stays in the response.
    client_asked: bool,
}

/// How a typed response becomes the caller's answer.
trait Encoding {
    type Output;
    fn encode<T: Serialize>(&self, response: &T) -> Self::Output;
}

/// As a `serde_json::Value` (embedded callers, the scenario runner).
struct ToValue;

impl Encoding for ToValue {
    type Output = Value;
    fn encode<T: Serialize>(&self, response: &T) -> Value {
        encode(response)
    }
}

/// As JSON text (the server).
struct ToJsonText;

impl Encoding for ToJsonText {
    type Output = Vec<u8>;
    fn encode<T: Serialize>(&self, response: &T) -> Vec<u8> {
        // Responses are plain data with string keys, so serialisation cannot fail; if it ever
        // did, an empty object is still a well-formed answer (as `api::encode` does).
        serde_json::to_vec(response).unwrap_or_else(|_| b"{}".to_vec())
    }
}

/// A data-plane response: the capacity it reports, for metering.
trait CarriesCapacity {
    fn consumed_capacity(&self) -> &[ConsumedCapacity];
    fn clear_consumed_capacity(&mut self);
}

/// Responses with one ConsumedCapacity.
macro_rules! carries_one_capacity {
    ($($response:ty),*) => {$(
        impl CarriesCapacity for $response {
            fn consumed_capacity(&self) -> &[ConsumedCapacity] {
                self.consumed_capacity.as_slice()
            }
            fn clear_consumed_capacity(&mut self) {
                self.consumed_capacity = None;
            }
        }
    )*};
}

/// Responses with one ConsumedCapacity per table.
macro_rules! carries_capacity_per_table {
    ($($response:ty),*) => {$(
        impl CarriesCapacity for $response {
            fn consumed_capacity(&self) -> &[ConsumedCapacity] {
                self.consumed_capacity.as_deref().unwrap_or(&[])
            }
            fn clear_consumed_capacity(&mut self) {
                self.consumed_capacity = None;
            }
        }
    )*};
}

carries_one_capacity!(PutItemOutput, GetItemOutput, QueryResponse);
carries_capacity_per_table!(
    BatchWriteItemOutput,
    BatchGetItemOutput,
    TransactWriteItemsOutput,
    TransactGetItemsOutput
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_data_plane_reads_never_wait() {
        let never_waiting: Vec<&str> = SUPPORTED_OPERATIONS
            .iter()
            .copied()
            .filter(|operation| never_waits(operation))
            .collect();
        assert_eq!(
            never_waiting,
            [
                "GetItem",
                "BatchGetItem",
                "TransactGetItems",
                "Query",
                "Scan"
            ]
        );
    }
}
