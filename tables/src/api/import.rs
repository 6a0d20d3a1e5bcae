//! ImportTable's request and response shapes (SPEC-2 §6.4): ImportTable, DescribeImport,
//! ListImports.

use serde::{Deserialize, Serialize};

use crate::api::control::{
    AttributeDefinition, GlobalSecondaryIndex, KeySchemaElement, LocalSecondaryIndex,
    OnDemandThroughput, ProvisionedThroughput,
};

/// `S3BucketSource`: the bucket (a directory below `TransferOptions::export_dir`) and key prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct S3BucketSource {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3_bucket: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3_key_prefix: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3_bucket_owner: Option<String>,
}

/// `CsvOptions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct CsvOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_list: Option<Vec<String>>,
}

/// `InputFormatOptions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct InputFormatOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csv: Option<CsvOptions>,
}

/// `TableCreationParameters`: CreateTable's members an import may set (no LSIs, no
/// stream, no tags, as in DynamoDB).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct TableCreationParameters {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_definitions: Option<Vec<AttributeDefinition>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_schema: Option<Vec<KeySchemaElement>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billing_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioned_throughput: Option<ProvisionedThroughput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_demand_throughput: Option<OnDemandThroughput>,
    #[serde(rename = "SSESpecification", skip_serializing_if = "Option::is_none")]
    pub sse_specification: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_secondary_indexes: Option<Vec<GlobalSecondaryIndex>>,
    /// Shoal's extension (DynamoDB's ImportTable creates no LSIs): the new table's local
    /// secondary indexes, checked as CreateTable checks them, so that `shoal import` remakes
    /// an exported table with every index it had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_secondary_indexes: Option<Vec<LocalSecondaryIndex>>,
}

/// ImportTable request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ImportTableInput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_token: Option<String>,
    #[serde(rename = "S3BucketSource", skip_serializing_if = "Option::is_none")]
    pub s3_bucket_source: Option<S3BucketSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_format_options: Option<InputFormatOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_compression_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_creation_parameters: Option<TableCreationParameters>,
}

/// `ImportTableDescription`. Times are epoch seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ImportTableDescription {
    pub import_arn: String,
    pub import_status: String,
    pub table_arn: String,
    pub table_id: String,
    pub client_token: String,
    #[serde(rename = "S3BucketSource")]
    pub s3_bucket_source: S3BucketSource,
    pub error_count: u64,
    pub cloud_watch_log_group_arn: String,
    pub input_format: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_format_options: Option<InputFormatOptions>,
    pub input_compression_type: String,
    pub table_creation_parameters: TableCreationParameters,
    pub start_time: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<f64>,
    pub processed_size_bytes: u64,
    pub processed_item_count: u64,
    pub imported_item_count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
}

/// ImportTable response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ImportTableOutput {
    pub import_table_description: ImportTableDescription,
}

/// DescribeImport request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeImportInput {
    pub import_arn: Option<String>,
}

/// DescribeImport response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeImportOutput {
    pub import_table_description: ImportTableDescription,
}

/// ListImports request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListImportsInput {
    pub table_arn: Option<String>,
    pub page_size: Option<i64>,
    pub next_token: Option<String>,
}

/// `ImportSummary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ImportSummary {
    pub import_arn: String,
    pub import_status: String,
    pub table_arn: String,
    #[serde(rename = "S3BucketSource")]
    pub s3_bucket_source: S3BucketSource,
    pub cloud_watch_log_group_arn: String,
    pub input_format: String,
    pub start_time: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<f64>,
}

/// ListImports response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListImportsOutput {
    pub import_summary_list: Vec<ImportSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}
