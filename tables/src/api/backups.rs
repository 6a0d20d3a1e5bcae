//! On-demand backups (SPEC-2 §6.1): CreateBackup, DescribeBackup, ListBackups, DeleteBackup
//! and RestoreTableFromBackup.

use serde::{Deserialize, Serialize};

/// Part of a table's description (`api::control`), named here too beside the restores.
pub use crate::api::control::RestoreSummary;
use crate::api::control::{
    GlobalSecondaryIndex, KeySchemaElement, LocalSecondaryIndex, OnDemandThroughput, Projection,
    ProvisionedThroughput, TableDescription,
};

/// CreateBackup request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct CreateBackupInput {
    /// A table name or ARN.
    pub table_name: Option<String>,
    pub backup_name: Option<String>,
}

/// `BackupDetails`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct BackupDetails {
    pub backup_arn: String,
    pub backup_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_size_bytes: Option<u64>,
    /// CREATING, AVAILABLE or DELETED.
    pub backup_status: String,
    /// USER: Shoal makes no other kind.
    pub backup_type: String,
    /// Epoch seconds.
    pub backup_creation_date_time: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_expiry_date_time: Option<f64>,
}

/// CreateBackup response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct CreateBackupOutput {
    pub backup_details: BackupDetails,
}

/// `ProvisionedThroughput` of `SourceTableDetails` (always both units).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct BackupProvisionedThroughput {
    pub read_capacity_units: u64,
    pub write_capacity_units: u64,
}

/// `SourceTableDetails`: the table as it was when backed up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct SourceTableDetails {
    pub table_name: String,
    pub table_id: String,
    pub table_arn: String,
    pub table_size_bytes: u64,
    pub key_schema: Vec<KeySchemaElement>,
    /// Epoch seconds.
    pub table_creation_date_time: f64,
    pub provisioned_throughput: BackupProvisionedThroughput,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_demand_throughput: Option<OnDemandThroughput>,
    pub item_count: u64,
    pub billing_mode: String,
}

/// `LocalSecondaryIndexInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct LocalSecondaryIndexInfo {
    pub index_name: String,
    pub key_schema: Vec<KeySchemaElement>,
    pub projection: Projection,
}

/// `GlobalSecondaryIndexInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GlobalSecondaryIndexInfo {
    pub index_name: String,
    pub key_schema: Vec<KeySchemaElement>,
    pub projection: Projection,
    pub provisioned_throughput: BackupProvisionedThroughput,
}

/// `SourceTableFeatureDetails`: the source's indexes (a restore carries no stream, Time to
/// Live or encryption settings, so none are reported).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct SourceTableFeatureDetails {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_secondary_indexes: Option<Vec<LocalSecondaryIndexInfo>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_secondary_indexes: Option<Vec<GlobalSecondaryIndexInfo>>,
}

/// `BackupDescription`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct BackupDescription {
    pub backup_details: BackupDetails,
    pub source_table_details: SourceTableDetails,
    pub source_table_feature_details: SourceTableFeatureDetails,
}

/// DescribeBackup request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeBackupInput {
    pub backup_arn: Option<String>,
}

/// DescribeBackup response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeBackupOutput {
    pub backup_description: BackupDescription,
}

/// DeleteBackup request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteBackupInput {
    pub backup_arn: Option<String>,
}

/// DeleteBackup response: the backup as it was, with status DELETED.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteBackupOutput {
    pub backup_description: BackupDescription,
}

/// ListBackups request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListBackupsInput {
    /// A table name or ARN.
    pub table_name: Option<String>,
    pub limit: Option<i64>,
    /// Epoch seconds, inclusive.
    pub time_range_lower_bound: Option<f64>,
    /// Epoch seconds, exclusive.
    pub time_range_upper_bound: Option<f64>,
    pub exclusive_start_backup_arn: Option<String>,
    /// USER (default), SYSTEM, AWS_BACKUP or ALL.
    pub backup_type: Option<String>,
}

/// `BackupSummary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct BackupSummary {
    pub table_name: String,
    pub table_id: String,
    pub table_arn: String,
    pub backup_arn: String,
    pub backup_name: String,
    /// Epoch seconds.
    pub backup_creation_date_time: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_expiry_date_time: Option<f64>,
    pub backup_status: String,
    pub backup_type: String,
    pub backup_size_bytes: u64,
}

/// ListBackups response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListBackupsOutput {
    pub backup_summaries: Vec<BackupSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_evaluated_backup_arn: Option<String>,
}

/// RestoreTableFromBackup request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct RestoreTableFromBackupInput {
    pub target_table_name: Option<String>,
    pub backup_arn: Option<String>,
    pub billing_mode_override: Option<String>,
    pub global_secondary_index_override: Option<Vec<GlobalSecondaryIndex>>,
    pub local_secondary_index_override: Option<Vec<LocalSecondaryIndex>>,
    pub provisioned_throughput_override: Option<ProvisionedThroughput>,
    pub on_demand_throughput_override: Option<OnDemandThroughput>,
    /// Decoded only so that asking for it is refused by name: Shoal does not encrypt.
    #[serde(rename = "SSESpecificationOverride")]
    pub sse_specification_override: Option<serde_json::Value>,
}

/// RestoreTableToPointInTime request (SPEC-2 §6.2): the source table, the time, and the
/// same overrides as RestoreTableFromBackup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct RestoreTableToPointInTimeInput {
    pub source_table_arn: Option<String>,
    pub source_table_name: Option<String>,
    pub target_table_name: Option<String>,
    pub use_latest_restorable_time: Option<bool>,
    /// Epoch seconds.
    pub restore_date_time: Option<f64>,
    pub billing_mode_override: Option<String>,
    pub global_secondary_index_override: Option<Vec<GlobalSecondaryIndex>>,
    pub local_secondary_index_override: Option<Vec<LocalSecondaryIndex>>,
    pub provisioned_throughput_override: Option<ProvisionedThroughput>,
    pub on_demand_throughput_override: Option<OnDemandThroughput>,
    /// Decoded only so that asking for it is refused by name: Shoal does not encrypt.
    #[serde(rename = "SSESpecificationOverride")]
    pub sse_specification_override: Option<serde_json::Value>,
}

impl RestoreTableToPointInTimeInput {
    /// The override members, as the RestoreTableFromBackup request that carries the same
    /// ones (they are checked and applied by one piece of code).
    pub fn overrides(&self) -> RestoreTableFromBackupInput {
        RestoreTableFromBackupInput {
            target_table_name: self.target_table_name.clone(),
            backup_arn: None,
            billing_mode_override: self.billing_mode_override.clone(),
            global_secondary_index_override: self.global_secondary_index_override.clone(),
            local_secondary_index_override: self.local_secondary_index_override.clone(),
            provisioned_throughput_override: self.provisioned_throughput_override,
            on_demand_throughput_override: self.on_demand_throughput_override,
            sse_specification_override: self.sse_specification_override.clone(),
        }
    }
}

/// RestoreTableToPointInTime response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct RestoreTableToPointInTimeOutput {
    pub table_description: TableDescription,
}

/// RestoreTableFromBackup response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct RestoreTableFromBackupOutput {
    pub table_description: TableDescription,
}
