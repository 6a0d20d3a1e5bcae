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
    /// The backup operations' "no such table" (DescribeContinuousBackups, …).
    TableNotFoundException,
    /// A restore onto the name of a table that exists.
    TableAlreadyExistsException,
    /// No backup has the ARN given.
    BackupNotFoundException,
    /// The backup is being created, or restored from, by another request.
    BackupInUseException,
    /// A point-in-time restore or export of a table without point-in-time recovery.
    PointInTimeRecoveryUnavailableException,
    /// A point-in-time restore to a time outside the restorable window.
    InvalidRestoreTimeException,
    ConditionalCheckFailedException,
    LimitExceededException,
    ItemCollectionSizeLimitExceededException,
    ProvisionedThroughputExceededException,
    ThrottlingException,
    RequestLimitExceeded,
    TransactionCanceledException,
    TransactionConflictException,
    TransactionInProgressException,
    /// A write to an item of a multi-Region strongly consistent global table that a write
    /// from another Region is modifying (SPEC-3 §2.5); retryable.
    ReplicatedWriteConflictException,
    IdempotentParameterMismatchException,
    /// PartiQL: an INSERT of a key that exists.
    DuplicateItemException,
    /// Streams: a shard iterator older than 15 minutes.
    ExpiredIteratorException,
    /// Streams: a position before the oldest record still retained.
    TrimmedDataAccessException,
    /// Exports: no export has the ARN given.
    ExportNotFoundException,
    /// Exports: a ClientToken reused with other parameters.
    ExportConflictException,
    /// Exports: an ExportTime the table cannot be exported at.
    InvalidExportTimeException,
    /// ImportTable: the same ClientToken with a different request.
    ImportConflictException,
    /// DescribeImport: no import has that ARN.
    ImportNotFoundException,
    /// The legacy global tables operations: no global table (version 2017.11.29) has the name.
    GlobalTableNotFoundException,
    /// A resource-based policy that is not there (SPEC-3 §5).
    PolicyNotFoundException,
    InternalServerError,
    /// HTTP 503: the service cannot take the request now (only injected faults send it).
    ServiceUnavailable,
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
            ErrorCode::TableNotFoundException => "TableNotFoundException",
            ErrorCode::TableAlreadyExistsException => "TableAlreadyExistsException",
            ErrorCode::BackupNotFoundException => "BackupNotFoundException",
            ErrorCode::BackupInUseException => "BackupInUseException",
            ErrorCode::PointInTimeRecoveryUnavailableException => {
                "PointInTimeRecoveryUnavailableException"
            }
            ErrorCode::InvalidRestoreTimeException => "InvalidRestoreTimeException",
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
            ErrorCode::ReplicatedWriteConflictException => "ReplicatedWriteConflictException",
            ErrorCode::IdempotentParameterMismatchException => {
                "IdempotentParameterMismatchException"
            }
            ErrorCode::DuplicateItemException => "DuplicateItemException",
            ErrorCode::ExpiredIteratorException => "ExpiredIteratorException",
            ErrorCode::TrimmedDataAccessException => "TrimmedDataAccessException",
            ErrorCode::ExportNotFoundException => "ExportNotFoundException",
            ErrorCode::ExportConflictException => "ExportConflictException",
            ErrorCode::InvalidExportTimeException => "InvalidExportTimeException",
            ErrorCode::ImportConflictException => "ImportConflictException",
            ErrorCode::ImportNotFoundException => "ImportNotFoundException",
            ErrorCode::GlobalTableNotFoundException => "GlobalTableNotFoundException",
            ErrorCode::PolicyNotFoundException => "PolicyNotFoundException",
            ErrorCode::InternalServerError => "InternalServerError",
            ErrorCode::ServiceUnavailable => "ServiceUnavailable",
        }
    }
}

/// DynamoDB's `ThrottlingException` text (SPEC-2 §7.2).
pub const THROTTLING_MESSAGE: &str = "Rate of requests exceeds the allowed throughput.";

/// DynamoDB's text for a `TransactionConflict` cancellation reason, and Shoal's for
/// `TransactionConflictException` (SPEC-2 §7.3 suggests the same words).
pub const TRANSACTION_CONFLICT_MESSAGE: &str = "Transaction is ongoing for the item";

/// An error answered to a DynamoDB client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// Further top-level members of the error body, for the errors that carry data:
    /// `Item` on a ConditionalCheckFailedException with ReturnValuesOnConditionCheckFailure,
    /// `CancellationReasons` on a TransactionCanceledException.
    pub extra: Option<Box<serde_json::Map<String, serde_json::Value>>>,
    /// What the failed request was charged: DynamoDB charges a write whose condition failed
    /// (SPEC §5), though its error body carries no ConsumedCapacity. Not part of the body:
    /// the capacity meter and capacity emulation read it.
    pub charged: Option<Box<Charged>>,
}

/// Write units a failed request consumed on a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Charged {
    pub table: String,
    pub write_units: f64,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            extra: None,
            charged: None,
        }
    }

    /// Records what the failed request was charged (see [`ApiError::charged`]).
    pub fn with_charge(mut self, table: &str, write_units: f64) -> ApiError {
        self.charged = Some(Box::new(Charged {
            table: table.to_string(),
            write_units,
        }));
        self
    }

    /// Adds a member to the error body (see [`ApiError::extra`]).
    pub fn with_extra(mut self, member: &str, value: serde_json::Value) -> ApiError {
        self.extra
            .get_or_insert_with(Default::default)
            .insert(member.to_string(), value);
        self
    }

    /// A `ValidationException` with `message`.
    pub fn validation(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::ValidationException, message)
    }

    /// `ThrottlingException` with DynamoDB's text (SPEC-2 §7.2).
    pub fn throttling() -> ApiError {
        ApiError::new(ErrorCode::ThrottlingException, THROTTLING_MESSAGE)
    }

    /// `InternalServerError` with the text Shoal answers a failure of its own with.
    pub fn internal_server_error() -> ApiError {
        ApiError::new(ErrorCode::InternalServerError, "Internal server error")
    }

    /// `TransactionCanceledException` with its `CancellationReasons` (each an object with a
    /// `Code`), in request order; the message lists their codes as DynamoDB's does.
    pub fn transaction_canceled(reasons: Vec<serde_json::Value>) -> ApiError {
        let codes: Vec<&str> = reasons
            .iter()
            .map(|reason| reason["Code"].as_str().unwrap_or("None"))
            .collect();
        let message = format!(
            "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]",
            codes.join(", ")
        );
        ApiError::new(ErrorCode::TransactionCanceledException, message)
            .with_extra("CancellationReasons", serde_json::Value::Array(reasons))
    }

    /// A `SerializationException` with `message`.
    pub fn serialization(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::SerializationException, message)
    }

    /// The `SerializationException` for a request body that is not JSON: DynamoDB sends it
    /// with no message at all (an empty message is left out of the body).
    pub fn malformed_json() -> ApiError {
        ApiError::serialization("")
    }
}

/// Marks an [`ApiError`] carried through serde as text (serde errors can carry only a
/// message): `MARKER <Code> MARKER <message>`.
const SERDE_MARKER: char = '\u{1}';

impl ErrorCode {
    /// Parses an exception name produced by [`ErrorCode::name`].
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        use ErrorCode::*;
        [
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
            TableNotFoundException,
            TableAlreadyExistsException,
            BackupNotFoundException,
            BackupInUseException,
            PointInTimeRecoveryUnavailableException,
            InvalidRestoreTimeException,
            ConditionalCheckFailedException,
            LimitExceededException,
            ItemCollectionSizeLimitExceededException,
            ProvisionedThroughputExceededException,
            ThrottlingException,
            RequestLimitExceeded,
            TransactionCanceledException,
            TransactionConflictException,
            TransactionInProgressException,
            ReplicatedWriteConflictException,
            IdempotentParameterMismatchException,
            DuplicateItemException,
            ExpiredIteratorException,
            TrimmedDataAccessException,
            ExportNotFoundException,
            ExportConflictException,
            InvalidExportTimeException,
            ImportConflictException,
            ImportNotFoundException,
            GlobalTableNotFoundException,
            PolicyNotFoundException,
            InternalServerError,
            ServiceUnavailable,
        ]
        .into_iter()
        .find(|code| code.name() == name)
    }
}

impl ApiError {
    /// The text a `Deserialize` impl passes to `serde::de::Error::custom` so that
    /// [`ApiError::from_serde_message`] can recover this exact error on the other side.
    pub fn to_serde_message(&self) -> String {
        format!(
            "{SERDE_MARKER}{}{SERDE_MARKER}{}",
            self.code.name(),
            self.message
        )
    }

    /// Recovers an error raised inside a `Deserialize` impl (see
    /// [`ApiError::to_serde_message`]); any other serde message is a
    /// `SerializationException`, which is what a malformed request shape is, in DynamoDB's
    /// words where serde's names a JSON type (see [`type_error_wording`]).
    pub fn from_serde_message(text: &str) -> ApiError {
        if let Some(start) = text.find(SERDE_MARKER) {
            let rest = &text[start + SERDE_MARKER.len_utf8()..];
            if let Some((code, message)) = rest.split_once(SERDE_MARKER) {
                if let Some(code) = ErrorCode::from_name(code) {
                    return ApiError::new(code, message);
                }
            }
        }
        match type_error_wording(text) {
            Some(wording) => ApiError::serialization(wording),
            None => ApiError::serialization(text),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.message)
    }
}

impl std::error::Error for ApiError {}

/// What a request member's JSON must be, for the SerializationException texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected<'a> {
    /// A scalar, by its Java type name (`String`, `Boolean`, `Long`, …).
    Scalar(&'a str),
    Map,
    List,
}

/// DynamoDB's SerializationException text for a JSON token of kind `found` (the name
/// Jackson gives a JSON token: `NUMBER_VALUE`, `START_ARRAY`, …) where `expected`, of
/// another kind, was.
pub(crate) fn wrong_type_wording(found: &str, expected: Expected<'_>) -> String {
    match (found, expected) {
        ("START_ARRAY", _) => "Start of list found where not expected".to_string(),
        ("START_OBJECT", _) => "Start of structure or map found where not expected.".to_string(),
        (_, Expected::Scalar(java_type)) => format!("{found} cannot be converted to {java_type}"),
        (_, Expected::Map) => format!("Unexpected {found} where a structure or map was expected"),
        (_, Expected::List) => format!("Unexpected {found} where a list was expected"),
    }
}

/// DynamoDB's words for serde's account of a request member of the wrong JSON type
/// (`invalid type: integer `7`, expected a string` → `NUMBER_VALUE cannot be converted to
/// String`), or None for any other serde message.
pub fn type_error_wording(serde_text: &str) -> Option<String> {
    let rest = &serde_text[serde_text.find("invalid type: ")? + "invalid type: ".len()..];
    let (found, expected) = rest.rsplit_once(", expected ")?;
    let found = if found.starts_with("integer") || found.starts_with("floating point") {
        "NUMBER_VALUE"
    } else if found.starts_with("string") {
        "STRING_VALUE"
    } else if found == "boolean `true`" {
        "TRUE_VALUE"
    } else if found == "boolean `false`" {
        "FALSE_VALUE"
    } else if found == "sequence" {
        "START_ARRAY"
    } else if found == "map" {
        "START_OBJECT"
    } else if found == "null" || found == "unit value" {
        "NULL_VALUE"
    } else {
        return None;
    };
    // serde's expectation ends the message, possibly followed by a position.
    let expected = expected.split(" at line ").next().unwrap_or(expected);
    let expected = match expected {
        "a string" | "a borrowed string" => Expected::Scalar("String"),
        "a boolean" => Expected::Scalar("Boolean"),
        "i64" | "u64" => Expected::Scalar("Long"),
        "i32" | "u32" | "i16" | "u16" | "i8" | "u8" | "usize" => Expected::Scalar("Integer"),
        "f64" | "f32" => Expected::Scalar("Double"),
        "a sequence" => Expected::List,
        _ if expected == "a map" || expected.starts_with("struct ") => Expected::Map,
        _ => return None,
    };
    Some(wrong_type_wording(found, expected))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_survive_a_trip_through_serde_text() {
        let original = ApiError::validation("One or more parameter values were invalid: x");
        let text = format!("invalid value: {}", original.to_serde_message());
        assert_eq!(ApiError::from_serde_message(&text), original);
        let plain = ApiError::from_serde_message("invalid type: integer, expected a string");
        assert_eq!(plain.code, ErrorCode::SerializationException);
    }
}
