//! Time to Live's request and response shapes (SPEC-2 §2.1): UpdateTimeToLive and
//! DescribeTimeToLive.

use serde::{Deserialize, Serialize};

/// `TimeToLiveSpecification`, as requested and as echoed back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct TimeToLiveSpecification {
    pub enabled: Option<bool>,
    pub attribute_name: Option<String>,
}

/// UpdateTimeToLive request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateTimeToLiveInput {
    pub table_name: Option<String>,
    pub time_to_live_specification: Option<TimeToLiveSpecification>,
}

/// UpdateTimeToLive response: the specification as requested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateTimeToLiveOutput {
    pub time_to_live_specification: TimeToLiveSpecification,
}

/// DescribeTimeToLive request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeTimeToLiveInput {
    pub table_name: Option<String>,
}

/// `TimeToLiveDescription`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct TimeToLiveDescription {
    pub time_to_live_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_name: Option<String>,
}

/// DescribeTimeToLive response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeTimeToLiveOutput {
    pub time_to_live_description: TimeToLiveDescription,
}
