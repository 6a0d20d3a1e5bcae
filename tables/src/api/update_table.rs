//! UpdateTable request and response (SPEC §2.3, SPEC-2 §5): online creation and deletion
//! of global secondary indexes, streams, billing mode and throughput, deletion protection
//! and table class.
//!
//! `ReplicaUpdates` is read by `replication::members`. Members Shoal does not act on
//! through UpdateTable (`SSESpecification`, `WarmThroughput`, …) are decoded so that a request using them
//! gets a clear ValidationException rather than being silently ignored
//! (docs/COMPATIBILITY.md).

use serde::{Deserialize, Serialize};

use crate::api::control::{
    AttributeDefinition, GlobalSecondaryIndex, OnDemandThroughput, ProvisionedThroughput,
    TableDescription,
};

/// UpdateTable request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateTableRequest {
    pub table_name: Option<String>,
    pub attribute_definitions: Option<Vec<AttributeDefinition>>,
    pub global_secondary_index_updates: Option<Vec<GlobalSecondaryIndexUpdate>>,
    pub billing_mode: Option<String>,
    pub provisioned_throughput: Option<ProvisionedThroughput>,
    pub stream_specification: Option<crate::api::streams::StreamSpecification>,
    #[serde(rename = "SSESpecification")]
    pub sse_specification: Option<serde_json::Value>,
    pub replica_updates: Option<serde_json::Value>,
    pub table_class: Option<String>,
    pub deletion_protection_enabled: Option<bool>,
    pub on_demand_throughput: Option<OnDemandThroughput>,
    pub warm_throughput: Option<serde_json::Value>,
    pub multi_region_consistency: Option<serde_json::Value>,
    pub replica_transit_role_arn: Option<serde_json::Value>,
    pub multi_account_replica_ready: Option<serde_json::Value>,
    pub global_table_witness_updates: Option<serde_json::Value>,
    /// `ENABLED` or `DISABLED`, on a regional table only (`control::update_table`).
    pub global_table_settings_replication_mode: Option<String>,
    /// Not modelled: decoded only to be refused by name (`control::update_table`).
    pub disassociation_protection_enabled: Option<serde_json::Value>,
}

/// One member of `GlobalSecondaryIndexUpdates`: exactly one action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GlobalSecondaryIndexUpdate {
    pub create: Option<CreateGlobalSecondaryIndexAction>,
    pub update: Option<UpdateGlobalSecondaryIndexAction>,
    pub delete: Option<DeleteGlobalSecondaryIndexAction>,
}

/// `Create`: a new GSI, backfilled from the table's items. Its members are exactly those of a
/// CreateTable `GlobalSecondaryIndexes` member, and it is validated by the same rules.
pub type CreateGlobalSecondaryIndexAction = GlobalSecondaryIndex;

/// `Update`: new provisioned throughput or on-demand caps for a GSI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateGlobalSecondaryIndexAction {
    pub index_name: Option<String>,
    pub provisioned_throughput: Option<ProvisionedThroughput>,
    pub on_demand_throughput: Option<OnDemandThroughput>,
    pub warm_throughput: Option<serde_json::Value>,
}

/// `Delete`: drops a GSI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteGlobalSecondaryIndexAction {
    pub index_name: Option<String>,
}

/// UpdateTable response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateTableResponse {
    pub table_description: TableDescription,
}
