//! Operation dispatch by name: the one place that maps DynamoDB operation names (the
//! `X-Amz-Target` suffix) onto `Database` methods, for the HTTP server and the scenario
//! runner. Embedded users call the typed methods directly.

use serde_json::Value;
use shoal_model::{ApiError, ErrorCode};

use crate::api::batch::{BatchGetItemInput, BatchWriteItemInput};
use crate::api::batch::{BatchGetItemOutput, BatchWriteItemOutput};
use crate::api::common::ConsumedCapacity;
use crate::api::items::{
    DeleteItemInput, GetItemInput, GetItemOutput, JsonItem, PutItemInput, PutItemOutput,
    UpdateItemInput,
};
use crate::api::partiql::{
    BatchExecuteStatementInput, BatchExecuteStatementOutput, ExecuteStatementInput,
    ExecuteStatementOutput, ExecuteTransactionInput, ExecuteTransactionOutput,
};
use crate::api::query::{QueryRequest, QueryResponse, ScanRequest};
use crate::api::transact::{
    TransactGetItemsInput, TransactGetItemsOutput, TransactWriteItemsInput,
    TransactWriteItemsOutput,
};
use crate::api::{decode, encode};
use crate::capacity::metering::{self, CallCharge, CapacityTotals, Metered, Returned};
use crate::core::item_codec::ItemForm;
use crate::database::Database;
use serde::de::DeserializeOwned;
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

    /// [`Database::execute`] for a request body still in JSON text, answering with the
    /// response's JSON text: what a server does. The input is deserialised straight from the
    /// text (no intermediate `Value`, which profiles of GetItem over HTTP showed at 6% of
    /// the server); a body that does not decode that way takes [`Database::execute`]'s path,
    /// so every error is exactly the one a parsed body gets.
    pub fn execute_json_text(&self, operation: &str, body: &[u8]) -> Result<Vec<u8>, ApiError> {
        self.dispatch(operation, JsonText(body), ToJsonText)
    }

    /// [`Database::execute_json_text`] for a request sent to `region` (a server passes the
    /// region of the request's credential scope): the ARNs the answer holds name it, as
    /// DynamoDB's do. `None` is `execute_json_text`'s `ddblocal`.
    pub fn execute_json_text_in_region(
        &self,
        region: Option<&str>,
        operation: &str,
        body: &[u8],
    ) -> Result<Vec<u8>, ApiError> {
        crate::core::region::with_region(region, || self.execute_json_text(operation, body))
    }

    /// [`Database::execute_json_text_in_region`], also giving what the call was charged and
    /// returned: the capacity units (tables and indexes, the TOTAL a client would be told, a
    /// failed condition's charge included; None for an operation that is not metered) and,
    /// for a read, the items it returned with their size. For a recorder: the answer is the
    /// one the client gets, whether it asked for ConsumedCapacity or not.
    pub fn execute_json_text_charged(
        &self,
        region: Option<&str>,
        operation: &str,
        body: &[u8],
    ) -> (Result<Vec<u8>, ApiError>, CallCharge) {
        metering::charged(|| self.execute_json_text_in_region(region, operation, body))
    }

    /// Capacity units consumed per table through [`Database::execute`] and
    /// [`Database::execute_json_text`] since open.
    pub fn consumed_capacity(&self) -> Vec<(String, CapacityTotals)> {
        self.capacity.meter.totals()
    }

    /// Capacity consumed through each index since the database was opened, as (table,
    /// index, totals), in name order: the index arms of every metered request.
    pub fn consumed_capacity_per_index(&self) -> Vec<(String, String, CapacityTotals)> {
        self.capacity.meter.index_totals()
    }

    fn dispatch<B: RequestBody, E: Encoding>(
        &self,
        operation: &str,
        body: B,
        encoding: E,
    ) -> Result<E::Output, ApiError> {
        let metered = Metered::of(operation);
        match operation {
            "CreateTable" => Ok(encoding.encode(&self.create_table(body.decode()?)?)),
            "DescribeTable" => Ok(encoding.encode(&self.describe_table(body.decode()?)?)),
            "ListTables" => Ok(encoding.encode(&self.list_tables(body.decode()?)?)),
            "DeleteTable" => Ok(encoding.encode(&self.delete_table(body.decode()?)?)),
            "UpdateTable" => Ok(encoding.encode(&self.update_table(body.decode()?)?)),
            "UpdateTimeToLive" => Ok(encoding.encode(&self.update_time_to_live(body.decode()?)?)),
            "DescribeTimeToLive" => {
                Ok(encoding.encode(&self.describe_time_to_live(body.decode()?)?))
            }
            "ImportTable" => Ok(encoding.encode(&self.import_table(body.decode()?)?)),
            "DescribeImport" => Ok(encoding.encode(&self.describe_import(body.decode()?)?)),
            "ListImports" => Ok(encoding.encode(&self.list_imports(body.decode()?)?)),
            "TagResource" => Ok(encoding.encode(&self.tag_resource(body.decode()?)?)),
            "UpdateContributorInsights" => {
                Ok(encoding.encode(&self.update_contributor_insights(body.decode()?)?))
            }
            "DescribeContributorInsights" => {
                Ok(encoding.encode(&self.describe_contributor_insights(body.decode()?)?))
            }
            "ListContributorInsights" => {
                Ok(encoding.encode(&self.list_contributor_insights(body.decode()?)?))
            }
            "PutResourcePolicy" => Ok(encoding.encode(&self.put_resource_policy(body.decode()?)?)),
            "GetResourcePolicy" => Ok(encoding.encode(&self.get_resource_policy(body.decode()?)?)),
            "DeleteResourcePolicy" => {
                Ok(encoding.encode(&self.delete_resource_policy(body.decode()?)?))
            }
            "UntagResource" => Ok(encoding.encode(&self.untag_resource(body.decode()?)?)),
            "ListTagsOfResource" => {
                Ok(encoding.encode(&self.list_tags_of_resource(body.decode()?)?))
            }
            "DescribeLimits" => Ok(encoding.encode(&self.describe_limits(body.decode()?)?)),
            "DescribeEndpoints" => Ok(encoding.encode(&self.describe_endpoints(body.decode()?)?)),
            "DescribeContinuousBackups" => {
                Ok(encoding.encode(&self.describe_continuous_backups(body.decode()?)?))
            }
            "UpdateContinuousBackups" => {
                Ok(encoding.encode(&self.update_continuous_backups(body.decode()?)?))
            }
            "ExportTableToPointInTime" => {
                Ok(encoding.encode(&self.export_table_to_point_in_time(body.decode()?)?))
            }
            "DescribeExport" => Ok(encoding.encode(&self.describe_export(body.decode()?)?)),
            "ListExports" => Ok(encoding.encode(&self.list_exports(body.decode()?)?)),
            "CreateBackup" => Ok(encoding.encode(&self.create_backup(body.decode()?)?)),
            "DescribeBackup" => Ok(encoding.encode(&self.describe_backup(body.decode()?)?)),
            "ListBackups" => Ok(encoding.encode(&self.list_backups(body.decode()?)?)),
            "DeleteBackup" => Ok(encoding.encode(&self.delete_backup(body.decode()?)?)),
            "RestoreTableFromBackup" => {
                Ok(encoding.encode(&self.restore_table_from_backup(body.decode()?)?))
            }
            "RestoreTableToPointInTime" => {
                Ok(encoding.encode(&self.restore_table_to_point_in_time(body.decode()?)?))
            }
            "DescribeTableReplicaAutoScaling" => {
                Ok(encoding.encode(&self.describe_table_replica_auto_scaling(body.decode()?)?))
            }
            "UpdateTableReplicaAutoScaling" => {
                Ok(encoding.encode(&self.update_table_replica_auto_scaling(body.decode()?)?))
            }
            // control: add arms above this line
            "PutItem" => self.metered(body, metered, &encoding, |input| {
                self.throttled(input, |input| self.put_item(input))
            }),
            "GetItem" => self.metered(body, metered, &encoding, |input| {
                self.throttled(input, |input| self.get_item_as::<E::Item>(input))
            }),
            "UpdateItem" => self.metered(body, metered, &encoding, |input| {
                self.throttled(input, |input| self.update_item(input))
            }),
            "DeleteItem" => self.metered(body, metered, &encoding, |input| {
                self.throttled(input, |input| self.delete_item(input))
            }),
            "BatchWriteItem" => self.metered(body, metered, &encoding, |input| {
                self.throttled_batch_write_item(input)
            }),
            "BatchGetItem" => self.metered(body, metered, &encoding, |input| {
                self.throttled_batch_get_item::<E::Item>(input)
            }),
            "TransactWriteItems" => self.metered(body, metered, &encoding, |input| {
                self.throttled_transact_write_items(input)
            }),
            "TransactGetItems" => self.metered(body, metered, &encoding, |input| {
                self.throttled_transact_get_items(input)
            }),
            // items: add arms above this line
            "Query" => self.metered(body, metered, &encoding, |input| {
                self.throttled(input, |input| self.query_as::<E::Item>(input))
            }),
            "Scan" => self.metered(body, metered, &encoding, |input| {
                self.throttled(input, |input| self.scan_as::<E::Item>(input))
            }),
            "ExecuteStatement" => {
                self.metered_statements(body, &encoding, |input| self.execute_statement(input))
            }
            "BatchExecuteStatement" => self
                .metered_statements(body, &encoding, |input| self.batch_execute_statement(input)),
            "ExecuteTransaction" => {
                self.metered_statements(body, &encoding, |input| self.execute_transaction(input))
            }
            // query: add arms above this line
            "ListStreams" => Ok(encoding.encode(&self.list_streams(body.decode()?)?)),
            "DescribeStream" => Ok(encoding.encode(&self.describe_stream(body.decode()?)?)),
            "GetShardIterator" => Ok(encoding.encode(&self.get_shard_iterator(body.decode()?)?)),
            "GetRecords" => Ok(encoding.encode(&self.get_records(body.decode()?)?)),
            // streams: add arms above this line
            // The legacy global tables operations always answer an error (AWS's in 2026).
            "CreateGlobalTable" => Err(self.create_global_table(body.decode()?)),
            "UpdateGlobalTable" => Err(self.update_global_table(body.decode()?)),
            "ListGlobalTables" => Ok(encoding.encode(&self.list_global_tables(body.decode()?)?)),
            "DescribeGlobalTable" | "DescribeGlobalTableSettings" | "UpdateGlobalTableSettings" => {
                Err(self.legacy_global_table_not_found(body.decode()?))
            }
            _ => match crate::control::not_offered::refusal(operation) {
                // The body is still read first: malformed JSON is a SerializationException
                // whatever the operation (SPEC-3 §7).
                Some(refusal) => {
                    body.decode::<Value>()?;
                    Err(refusal)
                }
                None => Err(ApiError::new(
                    ErrorCode::UnknownOperationException,
                    format!("Unknown operation: {operation}"),
                )),
            },
        }
    }

    /// Runs a data-plane operation, metered: it is always asked for its TOTAL consumed
    /// capacity, which is added to the meter; whether the client asked for it decides
    /// whether it stays in the response. `kind` is None for an operation that is not metered.
    fn metered<I, R, B, E>(
        &self,
        body: B,
        kind: Option<Metered>,
        encoding: &E,
        operation: impl FnOnce(I) -> Result<R, ApiError>,
    ) -> Result<E::Output, ApiError>
    where
        I: MeteredInput + DeserializeOwned,
        R: CarriesCapacity + Serialize,
        B: RequestBody,
        E: Encoding,
    {
        self.metered_as(body, kind.is_some(), encoding, operation, |_| kind)
    }

    /// Runs a PartiQL operation, metered as what its statements turned out to be (reads or
    /// writes), like [`Database::metered`].
    fn metered_statements<I, R, B, E>(
        &self,
        body: B,
        encoding: &E,
        operation: impl FnOnce(I) -> Result<R, ApiError>,
    ) -> Result<E::Output, ApiError>
    where
        I: MeteredInput + DeserializeOwned,
        R: CarriesCapacity + StatementKind + Serialize,
        B: RequestBody,
        E: Encoding,
    {
        self.metered_as(body, true, encoding, operation, StatementKind::metered)
    }

    /// The metering both share: when `metered`, the operation is asked for its TOTAL
    /// capacity, which `kind_of` the response says to record as reads or writes, and which
    /// stays in the response only if the client asked for it.
    fn metered_as<I, R, B, E>(
        &self,
        body: B,
        metered: bool,
        encoding: &E,
        operation: impl FnOnce(I) -> Result<R, ApiError>,
        kind_of: impl FnOnce(&R) -> Option<Metered>,
    ) -> Result<E::Output, ApiError>
    where
        I: MeteredInput + DeserializeOwned,
        R: CarriesCapacity + Serialize,
        B: RequestBody,
        E: Encoding,
    {
        let mut input: I = body.decode_in_order(I::EXPRESSION_MEMBERS, I::member_constraints)?;
        let requested = input.return_consumed_capacity();
        let client_asked = requested.as_deref().is_some_and(|r| r != "NONE");
        // The meter keeps totals per index too, so it asks for INDEXES and gives the client
        // the shape it asked for afterwards.
        let to_total = metered && metering::ask_per_index(requested);
        if metered && !client_asked {
            *requested = Some(metering::INDEXES.to_string());
        }
        let mut response = match operation(input) {
            Ok(response) => response,
            Err(error) => {
                // A write whose condition failed is charged all the same (SPEC §5).
                if let (true, Some(charged)) = (metered, &error.charged) {
                    let consumed = ConsumedCapacity {
                        table_name: charged.table.clone(),
                        capacity_units: charged.write_units,
                        ..ConsumedCapacity::default()
                    };
                    self.capacity.meter.record(Metered::Write, &[consumed]);
                    metering::note_charged(charged.write_units);
                }
                return Err(error);
            }
        };
        if metered {
            metering::note_returned(|| response.returned());
            let units = response
                .consumed_capacity()
                .iter()
                .map(|entry| entry.capacity_units)
                .sum();
            metering::note_charged(units);
            if let Some(kind) = kind_of(&response) {
                self.capacity
                    .meter
                    .record(kind, response.consumed_capacity());
            }
            if !client_asked {
                response.clear_consumed_capacity();
            } else if to_total {
                response
                    .consumed_capacity_mut()
                    .iter_mut()
                    .for_each(metering::as_total);
            }
        }
        Ok(encoding.encode(&response))
    }

    /// Requests (and batch items) refused by capacity emulation per table and index
    /// (index None: the table), in name order; empty unless `EmulationOptions::capacity` enforces.
    pub fn throttled_requests(
        &self,
    ) -> Vec<(
        String,
        Option<String>,
        crate::capacity::throttle::ThrottleCounts,
    )> {
        self.capacity.throttle.throttled()
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

/// The DynamoDB Streams operations among [`SUPPORTED_OPERATIONS`]: served under their own
/// target prefix (`DynamoDBStreams_20120810.`), SPEC-2 §1.2.
pub const STREAMS_OPERATIONS: &[&str] = &[
    "ListStreams",
    "DescribeStream",
    "GetShardIterator",
    "GetRecords",
];

/// Every operation [`Database::execute`] dispatches.
pub const SUPPORTED_OPERATIONS: &[&str] = &[
    "CreateTable",
    "DescribeTable",
    "ListTables",
    "DeleteTable",
    "UpdateTable",
    "UpdateTimeToLive",
    "DescribeTimeToLive",
    "TagResource",
    "UntagResource",
    "ListTagsOfResource",
    "UpdateContributorInsights",
    "DescribeContributorInsights",
    "ListContributorInsights",
    "PutResourcePolicy",
    "GetResourcePolicy",
    "DeleteResourcePolicy",
    "DescribeLimits",
    "DescribeEndpoints",
    "DescribeContinuousBackups",
    "UpdateContinuousBackups",
    "ExportTableToPointInTime",
    "DescribeExport",
    "ListExports",
    "CreateBackup",
    "DescribeBackup",
    "ListBackups",
    "DeleteBackup",
    "RestoreTableFromBackup",
    "RestoreTableToPointInTime",
    "ImportTable",
    "DescribeImport",
    "ListImports",
    "CreateGlobalTable",
    "UpdateGlobalTable",
    "DescribeGlobalTable",
    "ListGlobalTables",
    "DescribeGlobalTableSettings",
    "UpdateGlobalTableSettings",
    "DescribeTableReplicaAutoScaling",
    "UpdateTableReplicaAutoScaling",
    // Answered with a refusal that names what Shoal offers instead (control::not_offered).
    "SearchVectors",
    "StartBulkPutItems",
    "DescribeBulkOperation",
    "ListBulkOperations",
    "CancelBulkOperation",
    "EnableKinesisStreamingDestination",
    "DisableKinesisStreamingDestination",
    "DescribeKinesisStreamingDestination",
    "UpdateKinesisStreamingDestination",
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
    "ExecuteStatement",
    "BatchExecuteStatement",
    "ExecuteTransaction",
    // query: add names above this line
    "ListStreams",
    "DescribeStream",
    "GetShardIterator",
    "GetRecords",
    // streams: add names above this line
];

/// A data-plane input: its ReturnConsumedCapacity, as the client sent it.
trait MeteredInput: Sized {
    /// The expression members of the request that ExpressionAttributeNames may serve.
    const EXPRESSION_MEMBERS: &'static [&'static str] = &[];
    fn return_consumed_capacity(&mut self) -> &mut Option<String>;
    /// The member constraints the operation checks (again) itself, for a body whose
    /// attribute values fail to decode ([`RequestBody::decode_in_order`]).
    fn member_constraints(&self) -> Result<(), ApiError> {
        Ok(())
    }
}

macro_rules! metered_inputs {
    ($($input:ty $(: $members:expr)? $(=> $constraints:expr)?),*) => {$(
        impl MeteredInput for $input {
            $(const EXPRESSION_MEMBERS: &'static [&'static str] = $members;)?
            fn return_consumed_capacity(&mut self) -> &mut Option<String> {
                &mut self.return_consumed_capacity
            }
            $(fn member_constraints(&self) -> Result<(), ApiError> {
                $constraints(self).map(drop)
            })?
        }
    )*};
}

// The batches and transactions are left out of the constraints-first order: what DynamoDB
// checks of them before their values (counts, shapes, one operation an action) is not
// known well enough to move.
metered_inputs!(
    PutItemInput: &["ConditionExpression"] => PutItemInput::check_constraints,
    GetItemInput: &["ProjectionExpression"] => GetItemInput::check_constraints,
    UpdateItemInput: &["UpdateExpression", "ConditionExpression"] => UpdateItemInput::check_constraints,
    DeleteItemInput: &["ConditionExpression"] => DeleteItemInput::check_constraints,
    BatchWriteItemInput,
    BatchGetItemInput,
    TransactWriteItemsInput,
    TransactGetItemsInput,
    QueryRequest: &["KeyConditionExpression", "FilterExpression", "ProjectionExpression"]
        => crate::api::query::query_constraints,
    ScanRequest: &["FilterExpression", "ProjectionExpression"] => crate::api::query::scan_constraints,
    ExecuteStatementInput,
    BatchExecuteStatementInput,
    ExecuteTransactionInput
);

/// Where a request's input comes from.
trait RequestBody: Sized {
    fn decode<T: DeserializeOwned>(self) -> Result<T, ApiError> {
        self.decode_in_order(&[], |_| Ok(()))
    }

    /// Decodes a request, answering a body that fails to decode with the refusal DynamoDB
    /// gives first (SPEC §7: member constraints, then the rest): when an attribute value
    /// fails (empty, two types, …), the request's `constraints` ("N validation errors
    /// detected") come before it, and so does the refusal of ExpressionAttributeNames given
    /// without any of `expressions` ("… can only be specified when using expressions").
    /// Both are looked for only when decoding has failed: a good request pays nothing.
    fn decode_in_order<T: DeserializeOwned>(
        self,
        expressions: &[&str],
        constraints: fn(&T) -> Result<(), ApiError>,
    ) -> Result<T, ApiError>;
}

/// Whether `body` holds ExpressionAttributeNames but none of `expressions`.
fn names_alone(body: &Value, expressions: &[&str]) -> bool {
    !expressions.is_empty()
        && body
            .get("ExpressionAttributeNames")
            .is_some_and(|names| !names.is_null())
        && expressions
            .iter()
            .all(|member| body.get(*member).is_none_or(Value::is_null))
}

/// The refusal DynamoDB gives first for `body`, which failed to decode with `error`. An
/// attribute value's refusal (a ValidationException) comes after the member constraints,
/// checked on the body with its refused values decoded as NULL, and after the refusal of
/// names given alone; a protocol error (SerializationException) comes before both.
fn first_refusal<T: DeserializeOwned>(
    error: ApiError,
    body: &Value,
    expressions: &[&str],
    constraints: fn(&T) -> Result<(), ApiError>,
) -> ApiError {
    if error.code != ErrorCode::ValidationException {
        return error;
    }
    let deferred = shoal_model::json::with_value_refusals_deferred(|| T::deserialize(body));
    if let Ok(Err(constraint_refusal)) = deferred.map(|input| constraints(&input)) {
        return constraint_refusal;
    }
    if names_alone(body, expressions) {
        return ApiError::validation(
            "ExpressionAttributeNames can only be specified when using expressions",
        );
    }
    error
}

/// A parsed body (embedded callers, the scenario runner). Decoded from a reference so the
/// error path still has the body.
impl RequestBody for Value {
    fn decode_in_order<T: DeserializeOwned>(
        self,
        expressions: &[&str],
        constraints: fn(&T) -> Result<(), ApiError>,
    ) -> Result<T, ApiError> {
        if !self.is_object() {
            // `decode` refuses it with DynamoDB's text.
            return decode(self);
        }
        T::deserialize(&self).map_err(|error| {
            let error = ApiError::from_serde_message(&error.to_string());
            first_refusal(error, &self, expressions, constraints)
        })
    }
}

/// A body in JSON text (a server). A top-level array could deserialise into a struct, but
/// DynamoDB only takes objects, so anything else goes the parsed way, which rejects it.
struct JsonText<'a>(&'a [u8]);

impl RequestBody for JsonText<'_> {
    fn decode_in_order<T: DeserializeOwned>(
        self,
        expressions: &[&str],
        constraints: fn(&T) -> Result<(), ApiError>,
    ) -> Result<T, ApiError> {
        let is_object = self.0.trim_ascii_start().first() == Some(&b'{');
        if is_object {
            if let Ok(input) = serde_json::from_slice(self.0) {
                return Ok(input);
            }
        }
        // The error path only: parsed to find the refusal that comes first.
        let value: Value =
            serde_json::from_slice(self.0).map_err(|_| ApiError::malformed_json())?;
        value.decode_in_order(expressions, constraints)
    }
}

/// How a typed response becomes the caller's answer.
trait Encoding {
    type Output;
    /// The form a read's items are answered in: GetItem and BatchGetItem read them straight
    /// into it.
    type Item: ItemForm;
    fn encode<T: Serialize>(&self, response: &T) -> Self::Output;
}

/// As a `serde_json::Value` (embedded callers, the scenario runner).
struct ToValue;

impl Encoding for ToValue {
    type Output = Value;
    type Item = shoal_model::Item;
    fn encode<T: Serialize>(&self, response: &T) -> Value {
        encode(response)
    }
}

/// As JSON text (the server).
struct ToJsonText;

/// Items are written to JSON text straight from their stored bytes (`JsonItem`), never
/// built as an `Item` to be serialised again.
impl Encoding for ToJsonText {
    type Output = Vec<u8>;
    type Item = JsonItem;
    fn encode<T: Serialize>(&self, response: &T) -> Vec<u8> {
        // serde_json's text, written with strings escaped a word at a time
        // (`shoal_model::json_text`); serde_json itself for what that writer refuses.
        // Responses are plain data with string keys, so serialisation cannot fail; if it ever
        // did, an empty object is still a well-formed answer (as `api::encode` does).
        shoal_model::json_text::to_vec(response)
            .or_else(|_| serde_json::to_vec(response))
            .unwrap_or_else(|_| b"{}".to_vec())
    }
}

/// A data-plane response: the capacity it reports, for metering.
trait CarriesCapacity {
    fn consumed_capacity(&self) -> &[ConsumedCapacity];
    fn consumed_capacity_mut(&mut self) -> &mut [ConsumedCapacity];
    fn clear_consumed_capacity(&mut self);
    /// The items a read returned and their size; None for a write.
    fn returned(&self) -> Option<Returned> {
        None
    }
}

/// `items` counted and sized.
fn returned<'a, F: ItemForm + 'a>(items: impl IntoIterator<Item = &'a F>) -> Option<Returned> {
    let mut returned = Returned::default();
    for item in items {
        returned.items += 1;
        returned.bytes += item.size_bytes();
    }
    Some(returned)
}

/// Responses with one ConsumedCapacity; a read's with `=> |output| what it returned`, and
/// `<F>` first for a response generic in the form of its items.
macro_rules! carries_one_capacity {
    (@impl [$($generics:tt)*] $response:ty => |$output:ident| $returned:expr) => {
        impl$($generics)* CarriesCapacity for $response {
            fn consumed_capacity(&self) -> &[ConsumedCapacity] {
                self.consumed_capacity.as_slice()
            }
            fn consumed_capacity_mut(&mut self) -> &mut [ConsumedCapacity] {
                self.consumed_capacity.as_mut_slice()
            }
            fn clear_consumed_capacity(&mut self) {
                self.consumed_capacity = None;
            }
            fn returned(&self) -> Option<Returned> {
                let $output = self;
                $returned
            }
        }
    };
    (<$form:ident> $response:ty => |$output:ident| $returned:expr) => {
        carries_one_capacity!(@impl [<$form: ItemForm>] $response => |$output| $returned);
    };
    ($($response:ty),*) => {$(
        carries_one_capacity!(@impl [] $response => |_output| None);
    )*};
    ($response:ty => |$output:ident| $returned:expr) => {
        carries_one_capacity!(@impl [] $response => |$output| $returned);
    };
}

/// Responses with one ConsumedCapacity per table; a read's with `=> |output| what it
/// returned`, and `<F>` first for a response generic in the form of its items.
macro_rules! carries_capacity_per_table {
    (@impl [$($generics:tt)*] $response:ty => |$output:ident| $returned:expr) => {
        impl$($generics)* CarriesCapacity for $response {
            fn consumed_capacity(&self) -> &[ConsumedCapacity] {
                self.consumed_capacity.as_deref().unwrap_or(&[])
            }
            fn consumed_capacity_mut(&mut self) -> &mut [ConsumedCapacity] {
                self.consumed_capacity.as_deref_mut().unwrap_or(&mut [])
            }
            fn clear_consumed_capacity(&mut self) {
                self.consumed_capacity = None;
            }
            fn returned(&self) -> Option<Returned> {
                let $output = self;
                $returned
            }
        }
    };
    (<$form:ident> $response:ty => |$output:ident| $returned:expr) => {
        carries_capacity_per_table!(@impl [<$form: ItemForm>] $response => |$output| $returned);
    };
    ($($response:ty),*) => {$(
        carries_capacity_per_table!(@impl [] $response => |_output| None);
    )*};
    ($response:ty => |$output:ident| $returned:expr) => {
        carries_capacity_per_table!(@impl [] $response => |$output| $returned);
    };
}

carries_one_capacity!(PutItemOutput, ExecuteStatementOutput);
carries_capacity_per_table!(
    BatchWriteItemOutput,
    TransactWriteItemsOutput,
    BatchExecuteStatementOutput,
    ExecuteTransactionOutput
);
carries_one_capacity!(<F> GetItemOutput<F> => |output| returned(&output.item));
carries_one_capacity!(<F> QueryResponse<F> => |output| returned(output.items.iter().flatten()));
carries_capacity_per_table!(<F> BatchGetItemOutput<F> => |output| returned(output.responses.values().flatten()));
carries_capacity_per_table!(TransactGetItemsOutput => |output| returned(
    output.responses.iter().filter_map(|response| response.item.as_ref())
));

/// A PartiQL response: whether its statements read or wrote (None: nothing ran).
trait StatementKind {
    fn metered(&self) -> Option<Metered>;
}

macro_rules! statement_kind {
    ($($response:ty),*) => {$(
        impl StatementKind for $response {
            fn metered(&self) -> Option<Metered> {
                self.metered
            }
        }
    )*};
}

statement_kind!(
    ExecuteStatementOutput,
    BatchExecuteStatementOutput,
    ExecuteTransactionOutput
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
