//! Global tables version 2017.11.29 (SPEC-3 §2.6), answered as AWS answers them in 2026:
//! a new legacy global table cannot be created, and no name is ever one (every table of a
//! 2026 account is regional or a 2019.11.21 global table, which these operations do not
//! see). The member checks come first, as AWS's model checks do.

use shoal_model::{ApiError, ErrorCode};

use crate::api::constraint::{name_violations, value_at_least, violation, Violations};
use crate::api::legacy_global_tables::{
    CreateGlobalTableRequest, GlobalTableNameRequest, ListGlobalTablesRequest,
    ListGlobalTablesResponse, UpdateGlobalTableRequest,
};
use crate::Database;

/// AWS's answer to every well-formed CreateGlobalTable.
pub const LEGACY_NOT_SUPPORTED_MESSAGE: &str = "One or more parameter values were invalid: DynamoDB global tables version 2017.11.29 is not supported. We recommend using DynamoDB global tables version 2019.11.21, instead of version 2017.11.29 (Legacy).";

/// UpdateGlobalTable's answer to an empty `ReplicaUpdates`.
pub const BARE_INVALID_MESSAGE: &str = "One or more parameter values were invalid";

/// The violations of a `GlobalTableName` member (a table name's rules).
fn global_table_name(name: Option<&str>, violations: &mut Vec<String>) {
    name_violations(name, "globalTableName", 3, violations);
}

/// GlobalTableNotFoundException for `name`.
fn not_found(name: &str) -> ApiError {
    ApiError::new(
        ErrorCode::GlobalTableNotFoundException,
        format!("Global table with name: '{name}' does not exist."),
    )
}

/// These operations never succeed: each answers the error AWS answers, so each returns it
/// rather than a `Result` whose `Ok` could not happen.
impl Database {
    /// CreateGlobalTable: refused, after its member checks.
    pub fn create_global_table(&self, request: CreateGlobalTableRequest) -> ApiError {
        let mut problems = Vec::new();
        global_table_name(request.global_table_name.as_deref(), &mut problems);
        if request.replication_group.is_none() {
            problems.push(violation(
                None,
                "replicationGroup",
                crate::api::constraint::NOT_NULL,
            ));
        }
        match crate::api::constraint::check(&problems) {
            Err(error) => error,
            Ok(()) => ApiError::validation(LEGACY_NOT_SUPPORTED_MESSAGE),
        }
    }

    /// UpdateGlobalTable: no legacy global table exists to update.
    pub fn update_global_table(&self, request: UpdateGlobalTableRequest) -> ApiError {
        let mut problems = Vec::new();
        global_table_name(request.global_table_name.as_deref(), &mut problems);
        if request.replica_updates.is_none() {
            problems.push(violation(
                None,
                "replicaUpdates",
                crate::api::constraint::NOT_NULL,
            ));
        }
        if let Err(error) = crate::api::constraint::check(&problems) {
            return error;
        }
        if request.replica_updates.as_ref().is_some_and(Vec::is_empty) {
            return ApiError::validation(BARE_INVALID_MESSAGE);
        }
        not_found(request.global_table_name.as_deref().unwrap_or_default())
    }

    /// DescribeGlobalTable, DescribeGlobalTableSettings and UpdateGlobalTableSettings: the
    /// name checked, then GlobalTableNotFoundException, as no legacy global table exists.
    pub fn legacy_global_table_not_found(&self, request: GlobalTableNameRequest) -> ApiError {
        let mut problems = Vec::new();
        global_table_name(request.global_table_name.as_deref(), &mut problems);
        match crate::api::constraint::check(&problems) {
            Err(error) => error,
            Ok(()) => not_found(request.global_table_name.as_deref().unwrap_or_default()),
        }
    }

    /// ListGlobalTables: none. (AWS answers HTTP 500 to a region it does not know; Shoal
    /// answers the empty list to any, as SPEC-3 advises.)
    pub fn list_global_tables(
        &self,
        request: ListGlobalTablesRequest,
    ) -> Result<ListGlobalTablesResponse, ApiError> {
        let mut violations = Violations::default();
        if let Some(limit) = request.limit.filter(|&limit| limit < 1) {
            violations.push(violation(
                Some(&limit.to_string()),
                "limit",
                &value_at_least(1),
            ));
        }
        if let Some(start) = request.exclusive_start_global_table_name.as_deref() {
            let mut problems = Vec::new();
            name_violations(
                Some(start),
                "exclusiveStartGlobalTableName",
                3,
                &mut problems,
            );
            for problem in problems {
                violations.push(problem);
            }
        }
        violations.finish()?;
        Ok(ListGlobalTablesResponse::default())
    }
}
