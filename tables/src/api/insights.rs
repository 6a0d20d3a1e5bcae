//! Contributor Insights requests and responses (SPEC-3 §3): UpdateContributorInsights,
//! DescribeContributorInsights, ListContributorInsights.

use serde::{Deserialize, Serialize};

/// UpdateContributorInsights request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateContributorInsightsRequest {
    pub table_name: Option<String>,
    pub index_name: Option<String>,
    pub contributor_insights_action: Option<String>,
    pub contributor_insights_mode: Option<String>,
}

/// UpdateContributorInsights response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateContributorInsightsResponse {
    pub table_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_name: Option<String>,
    pub contributor_insights_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contributor_insights_mode: Option<String>,
}

/// DescribeContributorInsights request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeContributorInsightsRequest {
    pub table_name: Option<String>,
    pub index_name: Option<String>,
}

/// DescribeContributorInsights response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeContributorInsightsResponse {
    pub table_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contributor_insights_rule_list: Option<Vec<String>>,
    pub contributor_insights_status: String,
    /// Epoch seconds of the last ENABLE or DISABLE.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_update_date_time: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contributor_insights_mode: Option<String>,
}

/// ListContributorInsights request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListContributorInsightsRequest {
    pub table_name: Option<String>,
    pub next_token: Option<String>,
    pub max_results: Option<i64>,
}

/// One entry of ListContributorInsights.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ContributorInsightsSummary {
    pub table_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_name: Option<String>,
    pub contributor_insights_status: String,
    pub contributor_insights_mode: String,
}

/// ListContributorInsights response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListContributorInsightsResponse {
    pub contributor_insights_summaries: Vec<ContributorInsightsSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}
