//! DescribeTableReplicaAutoScaling and UpdateTableReplicaAutoScaling requests and responses
//! (SPEC-3 §2.7): a global table's auto scaling settings, which Shoal stores and echoes
//! (`replication::autoscaling`).
//!
//! Request members are `Option`s so that a missing one gets DynamoDB's member-constraint
//! text rather than a shape error. `TargetValue` is kept as the JSON number sent, so it reads
//! back exactly as given.

use serde::{Deserialize, Serialize};

/// DescribeTableReplicaAutoScaling request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeTableReplicaAutoScalingRequest {
    pub table_name: Option<String>,
}

/// UpdateTableReplicaAutoScaling request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateTableReplicaAutoScalingRequest {
    pub table_name: Option<String>,
    /// The group's write capacity (group-wide, SPEC-3 §2.1).
    pub provisioned_write_capacity_auto_scaling_update: Option<AutoScalingSettingsUpdate>,
    /// The group's GSI write capacity.
    pub global_secondary_index_updates: Option<Vec<IndexAutoScalingUpdate>>,
    /// Each member's own read capacity.
    pub replica_updates: Option<Vec<ReplicaAutoScalingUpdate>>,
}

/// A `GlobalSecondaryIndexUpdates` member: a GSI's write capacity settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct IndexAutoScalingUpdate {
    pub index_name: Option<String>,
    pub provisioned_write_capacity_auto_scaling_update: Option<AutoScalingSettingsUpdate>,
}

/// A `ReplicaUpdates` member: one member's read capacity settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ReplicaAutoScalingUpdate {
    pub region_name: Option<String>,
    pub replica_provisioned_read_capacity_auto_scaling_update: Option<AutoScalingSettingsUpdate>,
    pub replica_global_secondary_index_updates: Option<Vec<ReplicaIndexAutoScalingUpdate>>,
}

/// A `ReplicaGlobalSecondaryIndexUpdates` member: one member's GSI read capacity settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ReplicaIndexAutoScalingUpdate {
    pub index_name: Option<String>,
    pub provisioned_read_capacity_auto_scaling_update: Option<AutoScalingSettingsUpdate>,
}

/// `AutoScalingSettingsUpdate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct AutoScalingSettingsUpdate {
    pub minimum_units: Option<i64>,
    pub maximum_units: Option<i64>,
    pub auto_scaling_disabled: Option<bool>,
    pub auto_scaling_role_arn: Option<String>,
    pub scaling_policy_update: Option<ScalingPolicyUpdate>,
}

/// `AutoScalingPolicyUpdate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ScalingPolicyUpdate {
    pub policy_name: Option<String>,
    pub target_tracking_scaling_policy_configuration: Option<TargetTrackingConfiguration>,
}

/// `AutoScalingTargetTrackingScalingPolicyConfigurationUpdate`, and its description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct TargetTrackingConfiguration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_scale_in: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_in_cooldown: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_out_cooldown: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_value: Option<serde_json::Number>,
}

/// Both operations' response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct TableReplicaAutoScalingResponse {
    pub table_auto_scaling_description: TableAutoScalingDescription,
}

/// `TableAutoScalingDescription`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct TableAutoScalingDescription {
    pub table_name: String,
    pub table_status: String,
    pub replicas: Vec<ReplicaAutoScalingDescription>,
}

/// `ReplicaAutoScalingDescription`: one member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ReplicaAutoScalingDescription {
    pub region_name: String,
    pub global_secondary_indexes: Vec<ReplicaIndexAutoScalingDescription>,
    pub replica_provisioned_read_capacity_auto_scaling_settings: AutoScalingSettingsDescription,
    pub replica_provisioned_write_capacity_auto_scaling_settings: AutoScalingSettingsDescription,
    pub replica_status: String,
}

/// `ReplicaGlobalSecondaryIndexAutoScalingDescription`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ReplicaIndexAutoScalingDescription {
    pub index_name: String,
    pub index_status: String,
    pub provisioned_read_capacity_auto_scaling_settings: AutoScalingSettingsDescription,
    pub provisioned_write_capacity_auto_scaling_settings: AutoScalingSettingsDescription,
}

/// `AutoScalingSettingsDescription`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct AutoScalingSettingsDescription {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum_units: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum_units: Option<u64>,
    pub auto_scaling_disabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_scaling_role_arn: Option<String>,
    pub scaling_policies: Vec<ScalingPolicyDescription>,
}

/// `AutoScalingPolicyDescription`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ScalingPolicyDescription {
    pub policy_name: String,
    pub target_tracking_scaling_policy_configuration: TargetTrackingConfiguration,
}
