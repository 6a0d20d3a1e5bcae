//! Account and table settings requests and responses (SPEC-2 §5.6, §6.2): DescribeLimits,
//! DescribeEndpoints, DescribeContinuousBackups and UpdateContinuousBackups.

use serde::{Deserialize, Serialize};

/// DescribeLimits request (no members).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DescribeLimitsRequest {}

/// DescribeLimits response: the account's and each table's capacity quotas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeLimitsResponse {
    pub account_max_read_capacity_units: u64,
    pub account_max_write_capacity_units: u64,
    pub table_max_read_capacity_units: u64,
    pub table_max_write_capacity_units: u64,
}

/// DescribeEndpoints request (no members).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DescribeEndpointsRequest {}

/// One endpoint: `host:port` without a scheme.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct Endpoint {
    pub address: String,
    pub cache_period_in_minutes: u64,
}

/// DescribeEndpoints response: exactly one endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeEndpointsResponse {
    pub endpoints: Vec<Endpoint>,
}

/// DescribeContinuousBackups request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeContinuousBackupsRequest {
    pub table_name: Option<String>,
}

/// `PointInTimeRecoverySpecification` of UpdateContinuousBackups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct PointInTimeRecoverySpecification {
    pub point_in_time_recovery_enabled: Option<bool>,
    pub recovery_period_in_days: Option<i64>,
}

/// UpdateContinuousBackups request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateContinuousBackupsRequest {
    pub table_name: Option<String>,
    pub point_in_time_recovery_specification: Option<PointInTimeRecoverySpecification>,
}

/// `PointInTimeRecoveryDescription`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct PointInTimeRecoveryDescription {
    pub point_in_time_recovery_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_period_in_days: Option<u32>,
    /// Epoch seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub earliest_restorable_date_time: Option<f64>,
    /// Epoch seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_restorable_date_time: Option<f64>,
}

/// `ContinuousBackupsDescription`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ContinuousBackupsDescription {
    pub continuous_backups_status: String,
    pub point_in_time_recovery_description: PointInTimeRecoveryDescription,
}

/// The answer of DescribeContinuousBackups and UpdateContinuousBackups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ContinuousBackupsResponse {
    pub continuous_backups_description: ContinuousBackupsDescription,
}
