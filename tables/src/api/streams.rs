//! The DynamoDB Streams API's request and response shapes (SPEC-2 §1.3–1.6):
//! ListStreams, DescribeStream, GetShardIterator, GetRecords, served on the same endpoint
//! as DynamoDB under `X-Amz-Target: DynamoDBStreams_20120810.<Op>`, and the
//! `StreamSpecification` of CreateTable, UpdateTable and their table descriptions.

use serde::{Deserialize, Serialize};
use shoal_model::Item;

use crate::api::control::KeySchemaElement;

/// `StreamSpecification`, as requested and as described. `StreamViewType` is kept as text
/// so a bad value gets DynamoDB's enum message (see `api` conventions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct StreamSpecification {
    pub stream_enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_view_type: Option<String>,
}

/// ListStreams request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListStreamsInput {
    pub table_name: Option<String>,
    pub limit: Option<i64>,
    pub exclusive_start_stream_arn: Option<String>,
}

/// One stream in a ListStreams answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct StreamSummary {
    pub stream_arn: String,
    pub table_name: String,
    pub stream_label: String,
}

/// ListStreams response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListStreamsOutput {
    pub streams: Vec<StreamSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_evaluated_stream_arn: Option<String>,
}

/// `ShardFilter` of DescribeStream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ShardFilter {
    #[serde(rename = "Type")]
    pub filter_type: Option<String>,
    pub shard_id: Option<String>,
}

/// DescribeStream request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeStreamInput {
    pub stream_arn: Option<String>,
    pub limit: Option<i64>,
    pub exclusive_start_shard_id: Option<String>,
    pub shard_filter: Option<ShardFilter>,
}

/// A shard's range of sequence numbers (the end only once it is closed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct SequenceNumberRange {
    pub starting_sequence_number: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ending_sequence_number: Option<String>,
}

/// One shard of a described stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct Shard {
    pub shard_id: String,
    pub sequence_number_range: SequenceNumberRange,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_shard_id: Option<String>,
}

/// DescribeStream's `StreamDescription`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct StreamDescription {
    pub stream_arn: String,
    pub stream_label: String,
    pub stream_status: String,
    pub stream_view_type: String,
    /// Epoch seconds.
    pub creation_request_date_time: f64,
    pub table_name: String,
    pub key_schema: Vec<KeySchemaElement>,
    pub shards: Vec<Shard>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_evaluated_shard_id: Option<String>,
}

/// DescribeStream response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeStreamOutput {
    pub stream_description: StreamDescription,
}

/// GetShardIterator request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GetShardIteratorInput {
    pub stream_arn: Option<String>,
    pub shard_id: Option<String>,
    pub shard_iterator_type: Option<String>,
    pub sequence_number: Option<String>,
}

/// GetShardIterator response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GetShardIteratorOutput {
    pub shard_iterator: String,
}

/// GetRecords request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GetRecordsInput {
    pub shard_iterator: Option<String>,
    pub limit: Option<i64>,
}

/// `userIdentity` of a record written by the service (Time to Live deletes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct Identity {
    pub principal_id: String,
    #[serde(rename = "Type")]
    pub identity_type: String,
}

/// A record's `dynamodb` member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct StreamRecordBody {
    /// Epoch seconds, rounded down.
    pub approximate_creation_date_time: u64,
    pub keys: Item,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_image: Option<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_image: Option<Item>,
    pub sequence_number: String,
    pub size_bytes: u64,
    pub stream_view_type: String,
}

/// One record of GetRecords (field names as the API model spells them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Record {
    #[serde(rename = "eventID")]
    pub event_id: String,
    #[serde(rename = "eventName")]
    pub event_name: String,
    #[serde(rename = "eventVersion")]
    pub event_version: String,
    #[serde(rename = "eventSource")]
    pub event_source: String,
    #[serde(rename = "awsRegion")]
    pub aws_region: String,
    pub dynamodb: StreamRecordBody,
    #[serde(rename = "userIdentity", skip_serializing_if = "Option::is_none")]
    pub user_identity: Option<Identity>,
}

/// GetRecords response. `NextShardIterator` is absent (not null) once a closed shard has
/// been read to its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GetRecordsOutput {
    pub records: Vec<Record>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_shard_iterator: Option<String>,
}
