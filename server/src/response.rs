//! Building responses: every one carries `x-amzn-RequestId`, `x-amz-crc32` (CRC32 of the exact
//! body bytes, unsigned decimal, which botocore verifies) and a content type.

use crate::error_body::{error_status, render_error_body};
use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE};
use http::{HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use shoal_model::ApiError;

/// The content type of DynamoDB's JSON bodies.
pub const AMZ_JSON_CONTENT_TYPE: &str = "application/x-amz-json-1.0";

/// The header naming the request, for logs on both sides.
pub const REQUEST_ID_HEADER: &str = "x-amzn-requestid";

/// The header carrying the body's CRC32.
pub const CRC32_HEADER: &str = "x-amz-crc32";

/// A fresh request id, formatted like a random (version 4) UUID.
pub fn new_request_id() -> String {
    const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";
    let bits: u128 = rand::random();
    // Set the version (4) and variant (10xx) bits so the id is a well-formed UUID.
    let bits = (bits & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
    // Every request gets one, so it is written digit by digit rather than through format!.
    let mut id = String::with_capacity(36);
    for nibble_index in 0..32 {
        if matches!(nibble_index, 8 | 12 | 16 | 20) {
            id.push('-');
        }
        let nibble = (bits >> (124 - 4 * nibble_index)) & 0xf;
        id.push(char::from(HEX_DIGITS[nibble as usize]));
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
    let crc32 = crc32fast::hash(&body);
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        HeaderName::from_static(CRC32_HEADER),
        HeaderValue::from(crc32),
    );
    // Request ids are ASCII hex and dashes, so this conversion only fails on a bug; a response
    // without the id is still a valid response.
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert(HeaderName::from_static(REQUEST_ID_HEADER), value);
    }
    response
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
    fn request_ids_are_uuid_v4_shaped_and_distinct() {
        let first = new_request_id();
        let second = new_request_id();
        assert_ne!(first, second);
        let groups: Vec<&str> = first.split('-').collect();
        assert_eq!(
            groups.iter().map(|group| group.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(groups[2].starts_with('4'));
        assert!(matches!(
            groups[3].chars().next(),
            Some('8' | '9' | 'a' | 'b')
        ));
    }

    #[test]
    fn crc32_header_is_the_bodys_checksum() {
        let response = response(StatusCode::OK, AMZ_JSON_CONTENT_TYPE, "{}", "id");
        // crc32("{}") = 2745614147
        assert_eq!(response.headers()[CRC32_HEADER], "2745614147");
        assert_eq!(response.headers()[REQUEST_ID_HEADER], "id");
    }
}
