//! Control-plane requests and responses: CreateTable, DescribeTable, ListTables,
//! DeleteTable (SPEC §2).
//!
//! Request members are all `Option`s so that a missing member is reported with DynamoDB's
//! own text by the validation in `control::schema` rather than as a serde shape error.
//! Members of CreateTable that Shoal does not implement yet (SSESpecification,
//! WarmThroughput, …) are decoded so that a request using them is refused with a
//! ValidationException naming the member (docs/COMPATIBILITY.md).

use serde::{Deserialize, Serialize};

pub use crate::api::streams::StreamSpecification;
pub use crate::api::tags::Tag;

/// `AttributeDefinition`: a key attribute's name and scalar type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct AttributeDefinition {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_type: Option<String>,
}

/// `KeySchemaElement`: an attribute name and its role (`HASH` or `RANGE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct KeySchemaElement {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_type: Option<String>,
}

/// `Projection`: which attributes an index holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct Projection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub non_key_attributes: Option<Vec<String>>,
}

/// `ProvisionedThroughput` as requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ProvisionedThroughput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_capacity_units: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_capacity_units: Option<i64>,
}

/// A `LocalSecondaryIndexes` member of CreateTable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct LocalSecondaryIndex {
    pub index_name: Option<String>,
    pub key_schema: Option<Vec<KeySchemaElement>>,
    pub projection: Option<Projection>,
}

/// A `GlobalSecondaryIndexes` member of CreateTable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GlobalSecondaryIndex {
    pub index_name: Option<String>,
    pub key_schema: Option<Vec<KeySchemaElement>>,
    pub projection: Option<Projection>,
    pub provisioned_throughput: Option<ProvisionedThroughput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_demand_throughput: Option<OnDemandThroughput>,
}

/// `OnDemandThroughput`: caps on an on-demand table's or GSI's request units per second.
/// In UpdateTable, `-1` removes a cap; DescribeTable reports the caps that are set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct OnDemandThroughput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_read_request_units: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_write_request_units: Option<i64>,
}

impl OnDemandThroughput {
    /// Whether it names a cap at all (`{}` asks for nothing).
    pub fn asks(&self) -> bool {
        self.max_read_request_units.is_some() || self.max_write_request_units.is_some()
    }
}

/// CreateTable request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct CreateTableRequest {
    pub table_name: Option<String>,
    pub attribute_definitions: Option<Vec<AttributeDefinition>>,
    pub key_schema: Option<Vec<KeySchemaElement>>,
    pub local_secondary_indexes: Option<Vec<LocalSecondaryIndex>>,
    pub global_secondary_indexes: Option<Vec<GlobalSecondaryIndex>>,
    pub billing_mode: Option<String>,
    pub provisioned_throughput: Option<ProvisionedThroughput>,
    pub stream_specification: Option<StreamSpecification>,
    pub tags: Option<Vec<Tag>>,
    pub deletion_protection_enabled: Option<bool>,
    pub table_class: Option<String>,
    pub on_demand_throughput: Option<OnDemandThroughput>,
    // Members Shoal does not implement yet: decoded only so that a request asking for what
    // they do is refused, naming the member (`schema::unimplemented_members`), rather than
    // silently ignored. A value that asks for what Shoal does anyway is accepted.
    #[serde(rename = "SSESpecification")]
    pub sse_specification: Option<serde_json::Value>,
    pub warm_throughput: Option<serde_json::Value>,
    /// A resource-based policy to attach (a JSON document as a string; `policies`).
    pub resource_policy: Option<String>,
}

/// `ProvisionedThroughputDescription` (zeros for on-demand tables).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ProvisionedThroughputDescription {
    /// Epoch seconds of the last increase / decrease, once there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_increase_date_time: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_decrease_date_time: Option<f64>,
    pub number_of_decreases_today: u64,
    pub read_capacity_units: u64,
    pub write_capacity_units: u64,
}

/// `BillingModeSummary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct BillingModeSummary {
    pub billing_mode: String,
    /// Epoch seconds; present for on-demand tables (their creation time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_update_to_pay_per_request_date_time: Option<f64>,
}

/// `LocalSecondaryIndexDescription`: no IndexStatus, no ProvisionedThroughput (SPEC §2.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct LocalSecondaryIndexDescription {
    pub index_name: String,
    pub key_schema: Vec<KeySchemaElement>,
    pub projection: Projection,
    pub index_size_bytes: u64,
    pub item_count: u64,
    pub index_arn: String,
}

/// `GlobalSecondaryIndexDescription`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GlobalSecondaryIndexDescription {
    pub index_name: String,
    pub key_schema: Vec<KeySchemaElement>,
    pub projection: Projection,
    pub index_status: String,
    /// Present only while the index is CREATING (SPEC §2.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backfilling: Option<bool>,
    pub provisioned_throughput: ProvisionedThroughputDescription,
    /// The index's on-demand caps, while one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_demand_throughput: Option<OnDemandThroughput>,
    pub index_size_bytes: u64,
    pub item_count: u64,
    pub index_arn: String,
}

/// `TableDescription` (DescribeTable's `Table`, CreateTable's and DeleteTable's
/// `TableDescription`). DeleteTable leaves the schema members out (SPEC §2.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct TableDescription {
    pub table_name: String,
    pub table_arn: String,
    pub table_id: String,
    pub table_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_schema: Option<Vec<KeySchemaElement>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_definitions: Option<Vec<AttributeDefinition>>,
    /// Epoch seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_date_time: Option<f64>,
    pub item_count: u64,
    pub table_size_bytes: u64,
    pub provisioned_throughput: ProvisionedThroughputDescription,
    pub billing_mode_summary: BillingModeSummary,
    /// The table's on-demand caps, while one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_demand_throughput: Option<OnDemandThroughput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_secondary_indexes: Option<Vec<LocalSecondaryIndexDescription>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_secondary_indexes: Option<Vec<GlobalSecondaryIndexDescription>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_specification: Option<StreamSpecification>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_stream_arn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_stream_label: Option<String>,
    /// Always present, except in DeleteTable's answer (SPEC §2.4 lists its members).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_protection_enabled: Option<bool>,
    /// Present once CreateTable or UpdateTable named a class (docs/COMPATIBILITY.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_class_summary: Option<TableClassSummary>,
    /// In the answer of a restore (`backups::on_demand`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_summary: Option<RestoreSummary>,
    /// A member of a global table's (SPEC-3 §2.2, `replication`): absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_table_version: Option<String>,
    /// The other members, never this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<Vec<ReplicaDescription>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_table_settings_replication_mode: Option<String>,
    /// `STRONG` for a multi-Region strongly consistent group; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_region_consistency: Option<String>,
    /// The witness of a strong group of two members.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_table_witnesses: Option<Vec<WitnessDescription>>,
}

/// A strong group's witness, in DescribeTable's `GlobalTableWitnesses`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct WitnessDescription {
    pub region_name: String,
    pub witness_status: String,
}

/// One other member of a global table, in DescribeTable's `Replicas`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ReplicaDescription {
    pub region_name: String,
    pub replica_status: String,
    /// The member's overrides (`replication::overrides`); inherited values are left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioned_throughput_override: Option<ReadThroughputOverride>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_demand_throughput_override: Option<ReadOnDemandOverride>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_secondary_indexes: Option<Vec<ReplicaIndexDescription>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_table_class_summary: Option<TableClassSummary>,
}

/// `ProvisionedThroughputOverride` of a replica or one of its GSIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ReadThroughputOverride {
    pub read_capacity_units: u64,
}

/// `OnDemandThroughputOverride` of a replica or one of its GSIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ReadOnDemandOverride {
    pub max_read_request_units: u64,
}

/// A `Replicas[].GlobalSecondaryIndexes` entry: a GSI the replica overrides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ReplicaIndexDescription {
    pub index_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioned_throughput_override: Option<ReadThroughputOverride>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_demand_throughput_override: Option<ReadOnDemandOverride>,
}

/// `RestoreSummary` of a restored table's description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct RestoreSummary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_backup_arn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_table_arn: Option<String>,
    /// Epoch seconds.
    pub restore_date_time: f64,
    pub restore_in_progress: bool,
}

/// `TableClassSummary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct TableClassSummary {
    pub table_class: String,
    /// Epoch seconds of the last UpdateTable that changed the class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_update_date_time: Option<f64>,
}

/// CreateTable response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct CreateTableResponse {
    pub table_description: TableDescription,
}

/// DescribeTable request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeTableRequest {
    pub table_name: Option<String>,
}

/// DescribeTable response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeTableResponse {
    pub table: TableDescription,
}

/// DeleteTable request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteTableRequest {
    pub table_name: Option<String>,
}

/// DeleteTable response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteTableResponse {
    pub table_description: TableDescription,
}

/// ListTables request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListTablesRequest {
    pub exclusive_start_table_name: Option<String>,
    pub limit: Option<i64>,
}

/// ListTables response: `TableNames` is always present (possibly empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListTablesResponse {
    pub table_names: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_evaluated_table_name: Option<String>,
}
