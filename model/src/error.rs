//! The error a DynamoDB client sees: an exception name and a message.

use std::fmt;

/// DynamoDB's exception names (the part after `#` in `__type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    ValidationException,
    SerializationException,
    UnknownOperationException,
    MissingAuthenticationTokenException,
    IncompleteSignatureException,
    InvalidSignatureException,
    UnrecognizedClientException,
    AccessDeniedException,
    ResourceNotFoundException,
    ResourceInUseException,
    ConditionalCheckFailedException,
    LimitExceededException,
    ItemCollectionSizeLimitExceededException,
    ProvisionedThroughputExceededException,
    ThrottlingException,
    RequestLimitExceeded,
    TransactionCanceledException,
    TransactionConflictException,
    TransactionInProgressException,
    IdempotentParameterMismatchException,
    InternalServerError,
}

impl ErrorCode {
    /// The exception name as clients see it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::ValidationException => "ValidationException",
            ErrorCode::SerializationException => "SerializationException",
            ErrorCode::UnknownOperationException => "UnknownOperationException",
            ErrorCode::MissingAuthenticationTokenException => "MissingAuthenticationTokenException",
            ErrorCode::IncompleteSignatureException => "IncompleteSignatureException",
            ErrorCode::InvalidSignatureException => "InvalidSignatureException",
            ErrorCode::UnrecognizedClientException => "UnrecognizedClientException",
            ErrorCode::AccessDeniedException => "AccessDeniedException",
            ErrorCode::ResourceNotFoundException => "ResourceNotFoundException",
            ErrorCode::ResourceInUseException => "ResourceInUseException",
            ErrorCode::ConditionalCheckFailedException => "ConditionalCheckFailedException",
            ErrorCode::LimitExceededException => "LimitExceededException",
            ErrorCode::ItemCollectionSizeLimitExceededException => {
                "ItemCollectionSizeLimitExceededException"
            }
            ErrorCode::ProvisionedThroughputExceededException => {
                "ProvisionedThroughputExceededException"
            }
            ErrorCode::ThrottlingException => "ThrottlingException",
            ErrorCode::RequestLimitExceeded => "RequestLimitExceeded",
            ErrorCode::TransactionCanceledException => "TransactionCanceledException",
            ErrorCode::TransactionConflictException => "TransactionConflictException",
            ErrorCode::TransactionInProgressException => "TransactionInProgressException",
            ErrorCode::IdempotentParameterMismatchException => {
                "IdempotentParameterMismatchException"
            }
            ErrorCode::InternalServerError => "InternalServerError",
        }
    }
}

/// An error answered to a DynamoDB client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
        }
    }

    /// A `ValidationException` with `message`.
    pub fn validation(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::ValidationException, message)
    }

    /// A `SerializationException` with `message`.
    pub fn serialization(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::SerializationException, message)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.message)
    }
}

impl std::error::Error for ApiError {}
