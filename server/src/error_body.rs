//! DynamoDB's error bodies: `{"__type":"<namespace>#<Code>","message":"<text>", ...}`.
//!
//! The namespace is the one AWS itself sends for each code (SPEC §7); SDKs read only the part
//! after `#`, but tools that compare bodies with AWS's see the same string.

use http::StatusCode;
use serde_json::{Map, Value};
use shoal_model::ErrorCode;

/// The namespace AWS puts before `#` in `__type` for `code`.
pub fn error_namespace(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::ValidationException => "com.amazon.coral.validate",
        ErrorCode::SerializationException
        | ErrorCode::UnknownOperationException
        | ErrorCode::IncompleteSignatureException
        | ErrorCode::InvalidSignatureException
        | ErrorCode::MissingAuthenticationTokenException
        | ErrorCode::UnrecognizedClientException
        | ErrorCode::AccessDeniedException => "com.amazon.coral.service",
        ErrorCode::ResourceNotFoundException
        | ErrorCode::ResourceInUseException
        | ErrorCode::TableNotFoundException
        | ErrorCode::TableAlreadyExistsException
        | ErrorCode::BackupNotFoundException
        | ErrorCode::BackupInUseException
        | ErrorCode::PointInTimeRecoveryUnavailableException
        | ErrorCode::InvalidRestoreTimeException
        | ErrorCode::ConditionalCheckFailedException
        | ErrorCode::LimitExceededException
        | ErrorCode::ItemCollectionSizeLimitExceededException
        | ErrorCode::ProvisionedThroughputExceededException
        | ErrorCode::ThrottlingException
        | ErrorCode::RequestLimitExceeded
        | ErrorCode::TransactionCanceledException
        | ErrorCode::TransactionConflictException
        | ErrorCode::TransactionInProgressException
        | ErrorCode::ReplicatedWriteConflictException
        | ErrorCode::IdempotentParameterMismatchException
        | ErrorCode::DuplicateItemException
        // SPEC-2 §1.2: the streams errors share DynamoDB's namespace.
        | ErrorCode::ExpiredIteratorException
        | ErrorCode::TrimmedDataAccessException
        | ErrorCode::ExportNotFoundException
        | ErrorCode::ExportConflictException
        | ErrorCode::InvalidExportTimeException
        | ErrorCode::ImportConflictException
        | ErrorCode::ImportNotFoundException
        | ErrorCode::GlobalTableNotFoundException
        | ErrorCode::PolicyNotFoundException
        | ErrorCode::InternalServerError
        | ErrorCode::ServiceUnavailable => "com.amazonaws.dynamodb.v20120810",
    }
}

/// The `__type` value for `code`, e.g. `com.amazon.coral.validate#ValidationException`.
pub fn error_type(code: ErrorCode) -> String {
    format!("{}#{}", error_namespace(code), code.name())
}

/// The HTTP status AWS answers `code` with: 500 for `InternalServerError`, 503 for
/// `ServiceUnavailable`, 400 for every client error (throttling included).
pub fn error_status(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::InternalServerError => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    }
}

/// The name of the message member in `code`'s body: `Message` for a
/// `SerializationException`, which DynamoDB's front end writes itself, before the service
/// sees the request (`{"__type":"com.amazon.coral.service#SerializationException","Message":
/// "…"}`); `message` for every other error.
pub fn message_member(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::SerializationException => "Message",
        _ => "message",
    }
}

/// The JSON error body: `__type` first, then the message ([`message_member`]; left out when
/// empty, as AWS does for `UnknownOperationException`), then `extra_fields` (minus any named
/// `__type` or like the message member).
pub fn render_error_body(
    code: ErrorCode,
    message: &str,
    extra_fields: &Map<String, Value>,
) -> String {
    let message_member = message_member(code);
    // Written by hand so `__type` comes first (a serde_json Map would sort `Item` before it);
    // Value's Display is infallible JSON, unlike serde_json::to_string's Result.
    let mut body = format!("{{\"__type\":{}", Value::String(error_type(code)));
    if !message.is_empty() {
        body.push_str(&format!(",\"{message_member}\":"));
        body.push_str(&Value::String(message.to_owned()).to_string());
    }
    for (name, value) in extra_fields {
        if name == "__type" || name == "message" || name == message_member {
            continue;
        }
        body.push(',');
        body.push_str(&Value::String(name.clone()).to_string());
        body.push(':');
        body.push_str(&value.to_string());
    }
    body.push('}');
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn namespaces_follow_the_spec_table() {
        assert_eq!(
            error_type(ErrorCode::ValidationException),
            "com.amazon.coral.validate#ValidationException"
        );
        assert_eq!(
            error_type(ErrorCode::SerializationException),
            "com.amazon.coral.service#SerializationException"
        );
        assert_eq!(
            error_type(ErrorCode::ConditionalCheckFailedException),
            "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"
        );
    }

    #[test]
    fn only_internal_server_error_is_a_500() {
        assert_eq!(
            error_status(ErrorCode::InternalServerError),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            error_status(ErrorCode::ServiceUnavailable),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            error_status(ErrorCode::ThrottlingException),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn body_escapes_message_and_keeps_extra_fields_but_not_overrides() {
        let mut extra = Map::new();
        extra.insert("CancellationReasons".into(), json!([{"Code": "None"}]));
        extra.insert("message".into(), json!("hijacked"));
        let body = render_error_body(
            ErrorCode::TransactionCanceledException,
            "quote \" and\nnewline",
            &extra,
        );
        assert!(body.starts_with("{\"__type\":\"com.amazonaws.dynamodb.v20120810#"));
        let parsed: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["message"], "quote \" and\nnewline");
        assert_eq!(parsed["CancellationReasons"], json!([{"Code": "None"}]));
        assert_eq!(parsed.as_object().unwrap().len(), 3);
    }

    #[test]
    fn serialization_errors_carry_a_capital_message_and_no_other_does() {
        assert_eq!(
            render_error_body(
                ErrorCode::SerializationException,
                "NUMBER_VALUE cannot be converted to String",
                &Map::new()
            ),
            r#"{"__type":"com.amazon.coral.service#SerializationException","Message":"NUMBER_VALUE cannot be converted to String"}"#
        );
        assert_eq!(
            render_error_body(ErrorCode::ValidationException, "bad", &Map::new()),
            r#"{"__type":"com.amazon.coral.validate#ValidationException","message":"bad"}"#
        );
        // A body that is not JSON: no message at all.
        assert_eq!(
            render_error_body(ErrorCode::SerializationException, "", &Map::new()),
            r#"{"__type":"com.amazon.coral.service#SerializationException"}"#
        );
    }

    #[test]
    fn empty_message_is_left_out() {
        assert_eq!(
            render_error_body(ErrorCode::UnknownOperationException, "", &Map::new()),
            r#"{"__type":"com.amazon.coral.service#UnknownOperationException"}"#
        );
    }
}
