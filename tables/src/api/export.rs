//! Export requests and responses (SPEC-2 §6.3): ExportTableToPointInTime, DescribeExport,
//! ListExports.

use serde::{Deserialize, Serialize};

/// `IncrementalExportSpecification` (incremental exports are refused; the member is read so
/// that a request naming it parses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct IncrementalExportSpecification {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export_from_time: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export_to_time: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export_view_type: Option<String>,
}

/// ExportTableToPointInTime request. Enum members are strings, checked with DynamoDB's texts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ExportTableToPointInTimeRequest {
    pub table_arn: Option<String>,
    pub export_time: Option<f64>,
    pub client_token: Option<String>,
    pub s3_bucket: Option<String>,
    pub s3_bucket_owner: Option<String>,
    pub s3_prefix: Option<String>,
    pub s3_sse_algorithm: Option<String>,
    pub s3_sse_kms_key_id: Option<String>,
    pub export_format: Option<String>,
    pub export_type: Option<String>,
    pub incremental_export_specification: Option<IncrementalExportSpecification>,
}

/// `ExportDescription`: times are seconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ExportDescription {
    pub export_arn: String,
    pub export_status: String,
    pub start_time: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export_manifest: Option<String>,
    pub table_arn: String,
    pub table_id: String,
    pub export_time: f64,
    pub client_token: String,
    pub s3_bucket: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3_bucket_owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3_prefix: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3_sse_algorithm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3_sse_kms_key_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    pub export_format: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billed_size_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_count: Option<u64>,
    /// Present only when the request named it, as AWS answers (SPEC-2 §6.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incremental_export_specification: Option<IncrementalExportSpecification>,
}

/// ExportTableToPointInTime response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ExportTableToPointInTimeResponse {
    pub export_description: ExportDescription,
}

/// DescribeExport request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeExportRequest {
    pub export_arn: Option<String>,
}

/// DescribeExport response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeExportResponse {
    pub export_description: ExportDescription,
}

/// ListExports request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListExportsRequest {
    pub table_arn: Option<String>,
    pub max_results: Option<i64>,
    pub next_token: Option<String>,
}

/// `ExportSummary`: one export in a ListExports page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ExportSummary {
    pub export_arn: String,
    pub export_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export_type: Option<String>,
}

/// ListExports response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListExportsResponse {
    pub export_summaries: Vec<ExportSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}
