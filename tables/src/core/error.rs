//! The errors the core answers with of its own.

use shoal_model::{ApiError, ErrorCode};

/// Any storage failure reaches clients as DynamoDB's `InternalServerError`.
pub(crate) fn internal(error: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        ErrorCode::InternalServerError,
        format!("Internal server error: {error}"),
    )
}
