//! Building responses: every one carries `x-amzn-RequestId`, `x-amz-crc32` (CRC32 of the exact
//! body bytes, unsigned decimal, which botocore verifies) and a content type.

use crate::error_body::{error_status, render_error_body};
use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use shoal_model::ApiError;

/// The content type of DynamoDB's JSON bodies.
pub const AMZ_JSON_CONTENT_TYPE: &str = "application/x-amz-json-1.0";

/// The content type of the answers to requests sent as plain `application/json`.
pub const PLAIN_JSON_CONTENT_TYPE: &str = "application/json";

/// The header naming the request, for logs on both sides.
pub const REQUEST_ID_HEADER: &str = "x-amzn-requestid";

/// The header carrying the body's CRC32.
pub const CRC32_HEADER: &str = "x-amz-crc32";

/// How long DynamoDB's request ids are: 52 characters of `[0-9A-Z]`.
pub const REQUEST_ID_LENGTH: usize = 52;

/// A fresh request id in DynamoDB's form: 52 random characters of `[0-9A-Z]` (about 269 bits).
pub fn new_request_id() -> String {
    const ALPHABET: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    // Bytes below the largest multiple of 36 keep every character equally likely.
    const UNBIASED_BELOW: u8 = 252;
    let mut id = String::with_capacity(REQUEST_ID_LENGTH);
    while id.len() < REQUEST_ID_LENGTH {
        let random: [u8; 64] = rand::random();
        for byte in random {
            if byte < UNBIASED_BELOW && id.len() < REQUEST_ID_LENGTH {
                id.push(char::from(ALPHABET[usize::from(byte % 36)]));
            }
        }
    }
    id
}

/// A response with `body` and the standard headers.
pub fn response(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
    request_id: &str,
) -> Response<Full<Bytes>> {
    let body: Bytes = body.into();
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    set_crc32(&mut headers, &body);
    // Request ids are ASCII letters and digits, so this conversion only fails on a bug; a
    // response without the id is still a valid response.
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert(HeaderName::from_static(REQUEST_ID_HEADER), value);
    }
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// Sets `x-amz-crc32` to the CRC32 of `body`, the bytes as sent.
pub fn set_crc32(headers: &mut HeaderMap, body: &[u8]) {
    headers.insert(
        HeaderName::from_static(CRC32_HEADER),
        HeaderValue::from(crc32fast::hash(body)),
    );
}

/// A DynamoDB error response, with the status AWS uses for the error's code.
pub fn error_response(error: &ApiError, request_id: &str) -> Response<Full<Bytes>> {
    let no_extra = serde_json::Map::new();
    let extra = error.extra.as_deref().unwrap_or(&no_extra);
    let body = render_error_body(error.code, &error.message, extra);
    response(
        error_status(error.code),
        AMZ_JSON_CONTENT_TYPE,
        body,
        request_id,
    )
}

/// Marks `response` as the connection's last (used when the rest of the request body is left
/// unread).
pub fn close_connection(mut response: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_have_dynamodbs_form_and_are_distinct() {
        let first = new_request_id();
        let second = new_request_id();
        assert_ne!(first, second);
        for id in [&first, &second] {
            assert_eq!(id.len(), 52, "{id}");
            assert!(
                id.bytes()
                    .all(|byte| byte.is_ascii_digit() || byte.is_ascii_uppercase()),
                "{id}"
            );
        }
    }

    #[test]
    fn crc32_header_is_the_bodys_checksum() {
        let response = response(StatusCode::OK, AMZ_JSON_CONTENT_TYPE, "{}", "id");
        // crc32("{}") = 2745614147
        assert_eq!(response.headers()[CRC32_HEADER], "2745614147");
        assert_eq!(response.headers()[REQUEST_ID_HEADER], "id");
    }
}
