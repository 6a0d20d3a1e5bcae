//! Building responses: every one carries `x-amzn-RequestId`, `x-amz-crc32` (CRC32 of the exact
//! body bytes, unsigned decimal, which botocore verifies) and a content type.

use crate::error_body::{error_status, render_error_body};
use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use shoal_model::ApiError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

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

/// A fresh request id in DynamoDB's form: 52 characters of `[0-9A-Z]`, distinct for the
/// life of the process and across processes. Ids name requests in logs and need not be
/// secret, so rather than drawing 52 random characters per request, a process draws a random
/// prefix once (38 characters, about 196 bits) and ends each id with its request count in
/// base 36 (14 characters, more than a `u64` ever reaches).
pub fn new_request_id() -> RequestId {
    static PREFIX: OnceLock<[u8; REQUEST_ID_PREFIX_LENGTH]> = OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(random_request_id_prefix);
    let mut count = COUNT.fetch_add(1, Ordering::Relaxed);
    let mut id = [b'0'; REQUEST_ID_LENGTH];
    id[..REQUEST_ID_PREFIX_LENGTH].copy_from_slice(prefix);
    for digit in id[REQUEST_ID_PREFIX_LENGTH..].iter_mut().rev() {
        *digit = REQUEST_ID_ALPHABET[(count % 36) as usize];
        count /= 36;
    }
    RequestId(id)
}

/// A request id, kept on the stack: every request has one, so it costs no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestId([u8; REQUEST_ID_LENGTH]);

impl std::ops::Deref for RequestId {
    type Target = str;

    fn deref(&self) -> &str {
        // Only `new_request_id` makes one, of ASCII letters and digits, so this never
        // fails; an empty id would still leave a valid response.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

/// The characters of request ids.
const REQUEST_ID_ALPHABET: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// How much of a request id is the process's random prefix; the rest is its count.
const REQUEST_ID_PREFIX_LENGTH: usize = 38;

/// The random start of this process's request ids.
fn random_request_id_prefix() -> [u8; REQUEST_ID_PREFIX_LENGTH] {
    // Bytes below the largest multiple of 36 keep every character equally likely.
    const UNBIASED_BELOW: u8 = 252;
    let mut prefix = [0; REQUEST_ID_PREFIX_LENGTH];
    let mut filled = 0;
    while filled < REQUEST_ID_PREFIX_LENGTH {
        let random: [u8; 64] = rand::random();
        for byte in random {
            if byte < UNBIASED_BELOW && filled < REQUEST_ID_PREFIX_LENGTH {
                prefix[filled] = REQUEST_ID_ALPHABET[usize::from(byte % 36)];
                filled += 1;
            }
        }
    }
    prefix
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
    fn many_request_ids_are_distinct_and_share_only_the_process_prefix() {
        let ids: std::collections::HashSet<String> =
            (0..10_000).map(|_| new_request_id().to_string()).collect();
        assert_eq!(ids.len(), 10_000);
        let prefixes: std::collections::HashSet<&str> = ids
            .iter()
            .map(|id| &id[..REQUEST_ID_PREFIX_LENGTH])
            .collect();
        assert_eq!(prefixes.len(), 1);
        // The prefix is drawn, not fixed: 38 equal characters would be a broken draw.
        let prefix = prefixes.into_iter().next().unwrap_or_default();
        assert!(
            prefix.bytes().any(|byte| byte != prefix.as_bytes()[0]),
            "{prefix}"
        );
    }

    #[test]
    fn crc32_header_is_the_bodys_checksum() {
        let response = response(StatusCode::OK, AMZ_JSON_CONTENT_TYPE, "{}", "id");
        // crc32("{}") = 2745614147
        assert_eq!(response.headers()[CRC32_HEADER], "2745614147");
        assert_eq!(response.headers()[REQUEST_ID_HEADER], "id");
    }
}
