//! Turning an HTTP request into an operation call, in SPEC §7's order.
//!
//! 1. [`route`]: `GET /` is the health check and `GET /metrics` the metrics page; anything
//!    else that is not a `POST /` with content type `application/x-amz-json-1.0` or
//!    `application/json` (or with neither a content type nor a body) is answered 404 with
//!    `<UnknownOperationException/>` (as DynamoDB and dynalite do).
//! 2. The body size cap (in `serve`, before the body is read).
//! 3. [`decode_api_request`]: the body must be JSON (`SerializationException`; an empty body
//!    counts as `{}`), and a JSON object. The transport checks only the JSON grammar (without
//!    building a value) and passes the text on: the handler deserialises its typed input
//!    straight from it; the `X-Amz-Target` must be
//!    `DynamoDB_20120810.<Operation>` with an operation the handler knows
//!    (`UnknownOperationException`, with no message, as AWS sends it); then authentication (see
//!    `auth`).
//!
//! The Streams API is served on the same endpoint, as DynamoDB Local serves it (SPEC-2
//! §1.2): its operations under `DynamoDBStreams_20120810.`, and only there.
//!
//! JSON nesting is capped by serde_json's recursion limit (128 levels): deeper input is a
//! `SerializationException`, never a stack overflow.

use crate::auth::{authenticate, AuthPolicy};
use crate::sigv4::RequestToSign;
use http::request::Parts;
use http::{HeaderValue, Method};
use serde::de::IgnoredAny;
use shoal_model::{ApiError, ErrorCode};

/// The prefix of every DynamoDB `X-Amz-Target`.
pub const TARGET_PREFIX: &str = "DynamoDB_20120810.";

/// The prefix of every DynamoDB Streams `X-Amz-Target`.
pub const STREAMS_TARGET_PREFIX: &str = "DynamoDBStreams_20120810.";

/// The body DynamoDB sends with a 404 for a non-API request.
pub const NOT_FOUND_BODY: &str = "<UnknownOperationException/>\n";

/// Where a request goes, decided from its method, path and content type alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Health,
    Metrics,
    Api,
    NotFound,
}

/// Picks the route (step 1 of the pipeline). `has_body` is false when the request
/// declares an empty body (no `Content-Length` or `Content-Length: 0`, and no chunked body):
/// such a `POST` without a content type is read as JSON 1.0, as DynamoDB does, so it gets
/// the pipeline's JSON error rather than a 404.
pub fn route(
    method: &Method,
    path: &str,
    content_type: Option<&HeaderValue>,
    has_body: bool,
) -> Route {
    if method == Method::GET {
        return match path {
            "/" => Route::Health,
            "/metrics" => Route::Metrics,
            _ => Route::NotFound,
        };
    }
    if method != Method::POST || path != "/" {
        return Route::NotFound;
    }
    let Some(content_type) = content_type else {
        return if has_body {
            Route::NotFound
        } else {
            Route::Api
        };
    };
    // Compared without case rather than lowercased: no copy per request.
    let media_type = content_type
        .to_str()
        .ok()
        .and_then(|value| value.split(';').next())
        .map(str::trim);
    let is_json = media_type.is_some_and(|media_type| {
        ["application/x-amz-json-1.0", "application/json"]
            .iter()
            .any(|json| media_type.eq_ignore_ascii_case(json))
    });
    if is_json {
        Route::Api
    } else {
        Route::NotFound
    }
}

/// Checks the request line and the headers against `bytes_max` each (DynamoDB's 16 KiB), as
/// they were sent: `METHOD SP target SP HTTP/1.1`, and `name: value` plus CRLF per header.
pub fn check_head_size(parts: &Parts, bytes_max: usize) -> Result<(), ApiError> {
    const SPACES_AND_VERSION: usize = " HTTP/1.1".len() + 1;
    let target_length = parts
        .uri
        .path_and_query()
        .map_or(1, |target| target.as_str().len());
    if parts.method.as_str().len() + target_length + SPACES_AND_VERSION > bytes_max {
        return Err(ApiError::validation(format!(
            "Request line exceeds {bytes_max} bytes"
        )));
    }
    let header_bytes: usize = parts
        .headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + ": \r\n".len())
        .sum();
    if header_bytes > bytes_max {
        return Err(ApiError::validation(format!(
            "Request headers exceed {bytes_max} bytes"
        )));
    }
    Ok(())
}

/// An API request that passed the transport's checks.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest<'a> {
    /// One of the handler's operation names.
    pub operation: &'static str,
    /// The body: the text of a JSON object (the request's own, or `{}` for a blank one).
    pub body: &'a [u8],
    /// The region the request was sent to (its credential scope's), when it names one.
    pub region: Option<String>,
}

/// Steps 3 and later of the pipeline for a request routed to [`Route::Api`]: `content` is
/// the body with its `Content-Encoding` undone (the signature covers `request.body`, the
/// bytes as sent); `operations` are the names the handler knows.
pub fn decode_api_request<'a>(
    request: &RequestToSign<'_>,
    content: &'a [u8],
    operations: &[&'static str],
    auth_policy: &AuthPolicy<'_>,
) -> Result<ApiRequest<'a>, ApiError> {
    let body = check_body(content)?;
    let target = request
        .headers
        .get("x-amz-target")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let is_streams_operation = |name: &str| shoal_tables::STREAMS_OPERATIONS.contains(&name);
    let name = match target.strip_prefix(TARGET_PREFIX) {
        Some(name) => (!is_streams_operation(name)).then_some(name),
        None => target
            .strip_prefix(STREAMS_TARGET_PREFIX)
            .filter(|name| is_streams_operation(name)),
    };
    let operation = name
        .and_then(|name| operations.iter().find(|known| **known == name))
        .copied()
        .ok_or_else(|| ApiError::new(ErrorCode::UnknownOperationException, ""))?;
    let region = authenticate(request, auth_policy)?.region;
    Ok(ApiRequest {
        operation,
        body,
        region,
    })
}

/// The body if it is the text of a JSON object (a blank body stands for `{}`).
fn check_body(body: &[u8]) -> Result<&[u8], ApiError> {
    let text = body.trim_ascii_start();
    if text.is_empty() {
        return Ok(b"{}");
    }
    // Checks the grammar (and the nesting limit) without building anything.
    serde_json::from_slice::<IgnoredAny>(text).map_err(|_| ApiError::malformed_json())?;
    // Valid JSON: the first byte names the top-level value's type.
    match text.first() {
        Some(b'{') => Ok(body),
        Some(b'[') => Err(ApiError::serialization(
            "Start of list found where not expected",
        )),
        _ => Err(ApiError::serialization("Unexpected value type in payload")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AuthMode;
    use http::HeaderMap;

    const OPERATIONS: &[&str] = &["PutItem", "GetItem"];

    fn decode<'a>(headers: &'a HeaderMap, body: &'a [u8]) -> Result<ApiRequest<'a>, ApiError> {
        let request = RequestToSign {
            method: "POST",
            path: "/",
            query: "",
            headers,
            body,
        };
        let policy = AuthPolicy {
            mode: &AuthMode::AcceptAnyWellFormed,
            region: None,
            clock_skew_max_seconds: 900,
            now_unix_seconds: 0,
        };
        decode_api_request(&request, body, OPERATIONS, &policy)
    }

    fn headers(target: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("x-amz-target", HeaderValue::from_str(target).unwrap());
        headers.insert("x-amz-date", HeaderValue::from_static("20240101T000000Z"));
        headers.insert(
            "authorization",
            HeaderValue::from_static(
                "AWS4-HMAC-SHA256 Credential=a/b/c/d/aws4_request, SignedHeaders=host, Signature=0",
            ),
        );
        headers
    }

    #[test]
    fn routes() {
        let json = HeaderValue::from_static("application/x-amz-json-1.0");
        let plain_json = HeaderValue::from_static("Application/JSON; charset=utf-8");
        let text = HeaderValue::from_static("text/plain");
        assert_eq!(route(&Method::GET, "/", None, false), Route::Health);
        assert_eq!(route(&Method::GET, "/metrics", None, false), Route::Metrics);
        assert_eq!(
            route(&Method::GET, "/other", Some(&json), false),
            Route::NotFound
        );
        assert_eq!(route(&Method::PUT, "/", Some(&json), true), Route::NotFound);
        assert_eq!(route(&Method::POST, "/", Some(&json), true), Route::Api);
        assert_eq!(
            route(&Method::POST, "/", Some(&plain_json), true),
            Route::Api
        );
        assert_eq!(
            route(&Method::POST, "/", Some(&text), true),
            Route::NotFound
        );
        assert_eq!(route(&Method::POST, "/", None, true), Route::NotFound);
        // No content type and no body: read as JSON 1.0.
        assert_eq!(route(&Method::POST, "/", None, false), Route::Api);
        assert_eq!(
            route(&Method::POST, "/", Some(&text), false),
            Route::NotFound
        );
        // The API lives at `/` only.
        for path in ["/tables", "/metrics", "//"] {
            assert_eq!(
                route(&Method::POST, path, Some(&json), true),
                Route::NotFound
            );
            assert_eq!(route(&Method::POST, path, None, false), Route::NotFound);
        }
    }

    #[test]
    fn decodes_a_good_request_and_treats_an_empty_body_as_an_object() {
        let put_headers = headers("DynamoDB_20120810.PutItem");
        let decoded = decode(&put_headers, br#"{"TableName":"t"}"#).unwrap();
        assert_eq!(decoded.operation, "PutItem");
        assert_eq!(decoded.body, br#"{"TableName":"t"}"#);
        let get_headers = headers("DynamoDB_20120810.GetItem");
        let decoded = decode(&get_headers, b" \n").unwrap();
        assert_eq!(decoded.body, b"{}");
    }

    #[test]
    fn pipeline_order_json_before_target_before_auth() {
        let mut no_auth = headers("DynamoDB_20120810.Nope");
        no_auth.remove("authorization");
        // Bad JSON wins over a bad target and missing auth.
        assert_eq!(
            decode(&no_auth, b"{").unwrap_err().code,
            ErrorCode::SerializationException
        );
        // A bad target wins over missing auth.
        assert_eq!(
            decode(&no_auth, b"{}").unwrap_err().code,
            ErrorCode::UnknownOperationException
        );
        no_auth.insert(
            "x-amz-target",
            HeaderValue::from_static("DynamoDB_20120810.PutItem"),
        );
        assert_eq!(
            decode(&no_auth, b"{}").unwrap_err().code,
            ErrorCode::MissingAuthenticationTokenException
        );
    }

    #[test]
    fn rejects_non_objects_unknown_targets_and_deep_nesting() {
        let good = headers("DynamoDB_20120810.PutItem");
        for body in [&b"[]"[..], b"1", b"\"s\"", b"null", b"{} {}"] {
            assert_eq!(
                decode(&good, body).unwrap_err().code,
                ErrorCode::SerializationException
            );
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            decode(&good, deep.as_bytes()).unwrap_err().code,
            ErrorCode::SerializationException
        );
        for target in [
            "PutItem",
            "DynamoDB_20120810.",
            "DynamoDB_20120810.putitem",
            "DynamoDBStreams_20120810.PutItem",
        ] {
            let error = decode(&headers(target), b"{}").unwrap_err();
            assert_eq!(error.code, ErrorCode::UnknownOperationException, "{target}");
        }
        let mut no_target = good.clone();
        no_target.remove("x-amz-target");
        assert_eq!(
            decode(&no_target, b"{}").unwrap_err().code,
            ErrorCode::UnknownOperationException
        );
    }
}
