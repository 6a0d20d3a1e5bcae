//! The global tables operations of version 2017.11.29 (SPEC-3 §2.6): CreateGlobalTable,
//! UpdateGlobalTable, DescribeGlobalTable, ListGlobalTables, DescribeGlobalTableSettings and
//! UpdateGlobalTableSettings. Only the members their checks read are typed; AWS answers
//! every one of them without reading the rest (see `control::legacy_global_tables`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// CreateGlobalTable request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct CreateGlobalTableRequest {
    pub global_table_name: Option<String>,
    pub replication_group: Option<Vec<Value>>,
}

/// UpdateGlobalTable request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateGlobalTableRequest {
    pub global_table_name: Option<String>,
    pub replica_updates: Option<Vec<Value>>,
}

/// DescribeGlobalTable, DescribeGlobalTableSettings and UpdateGlobalTableSettings requests:
/// the global table's name is all their answer depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GlobalTableNameRequest {
    pub global_table_name: Option<String>,
}

/// ListGlobalTables request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListGlobalTablesRequest {
    pub exclusive_start_global_table_name: Option<String>,
    pub limit: Option<i64>,
    pub region_name: Option<String>,
}

/// One global table of ListGlobalTables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct GlobalTable {
    pub global_table_name: String,
    pub replication_group: Vec<Value>,
}

/// ListGlobalTables response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub struct ListGlobalTablesResponse {
    pub global_tables: Vec<GlobalTable>,
}
