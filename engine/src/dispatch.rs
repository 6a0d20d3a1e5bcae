//! Operation dispatch by name: the one place that maps DynamoDB operation names (the
//! `X-Amz-Target` suffix) onto `Database` methods, for the HTTP server and the scenario
//! runner. Embedded users call the typed methods directly.

use model::{ApiError, ErrorCode};
use serde_json::Value;

use crate::database::Database;

impl Database {
    /// Runs operation `operation` with a JSON request body and returns the JSON response.
    pub fn execute(&self, operation: &str, body: Value) -> Result<Value, ApiError> {
        match operation {
            // control: add arms above this line
            // items: add arms above this line
            // query: add arms above this line
            _ => Err(ApiError::new(
                ErrorCode::UnknownOperationException,
                format!("Unknown operation: {operation}"),
            )),
        }
    }

    /// Whether [`Database::execute`] knows `operation`.
    pub fn supports(&self, operation: &str) -> bool {
        SUPPORTED_OPERATIONS.contains(&operation)
    }
}

/// Every operation [`Database::execute`] dispatches.
pub const SUPPORTED_OPERATIONS: &[&str] = &[
    // control: add names above this line
    // items: add names above this line
    // query: add names above this line
];
