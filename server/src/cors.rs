//! CORS, as DynamoDB Local serves it: on by default for any origin, restricted by `-cors`.
//!
//! A browser calling the server from a page of another origin first sends a preflight
//! `OPTIONS` with `Origin` and `Access-Control-Request-Method`/`-Headers`; it then sends the
//! real request only if the answer allows that origin, method and those headers. Every
//! answer to a request from an allowed origin allows it (`*` when any origin is, as DynamoDB
//! Local answers; the origin itself when an allow-list admitted it) and exposes the headers the
//! AWS SDKs read (`x-amzn-RequestId`, and `x-amz-crc32`, which the JavaScript SDK checks the
//! body against). A request from an origin not on the list gets no CORS headers: the server
//! still answers (CORS binds browsers, not the server), and the browser withholds the answer
//! from the page.

use http::header::{
    HeaderValue, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY,
};
use http::{HeaderMap, Method, Response};

use crate::config::CorsOrigins;

/// Methods the server answers: the API (`POST`), health and metrics (`GET`), preflights.
const ALLOWED_METHODS: &str = "GET, POST, OPTIONS";
/// Headers a page may send when its preflight names none: what the AWS SDKs send.
const DEFAULT_ALLOWED_HEADERS: &str =
    "authorization, content-type, x-amz-date, x-amz-target, x-amz-security-token, \
     x-amz-user-agent, x-amz-content-sha256, amz-sdk-invocation-id, amz-sdk-request";
/// Response headers a page's script may read.
const EXPOSED_HEADERS: &str = "x-amzn-RequestId, x-amz-crc32, x-amz-id-2";
/// How long a browser may cache a preflight's answer, in seconds (a day).
const PREFLIGHT_MAX_AGE_SECONDS: &str = "86400";

/// What `Access-Control-Allow-Origin` says to a request whose origin is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedOrigin {
    /// Any origin may call (no allow-list, or `-cors *`): `*`, as DynamoDB Local answers.
    Any,
    /// An allow-list admitted this origin: it is named, so the answer varies by origin.
    Listed(HeaderValue),
}

/// The allowed origin of a request, if it has one and the allow-list admits it.
pub fn allowed_origin(
    allow_list: Option<&CorsOrigins>,
    headers: &HeaderMap,
) -> Option<AllowedOrigin> {
    let origin = headers.get(ORIGIN)?;
    match allow_list {
        None | Some(CorsOrigins::Any) => Some(AllowedOrigin::Any),
        Some(list) => origin
            .to_str()
            .is_ok_and(|text| list.allows(text))
            .then(|| AllowedOrigin::Listed(origin.clone())),
    }
}

/// Whether the request is answered as a CORS preflight: `OPTIONS` naming the method it will
/// use, or naming its origin (a browser's preflight always does; a script probing the server
/// with `OPTIONS` and an `Origin` gets the same answer).
pub fn is_preflight(method: &Method, headers: &HeaderMap) -> bool {
    method == Method::OPTIONS
        && (headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD) || headers.contains_key(ORIGIN))
}

/// Adds the preflight's answer to `response`: the methods, and the headers the page asked
/// for (or the SDKs' headers when it named none).
pub fn add_preflight_headers<B>(response: &mut Response<B>, request_headers: &HeaderMap) {
    let headers = response.headers_mut();
    headers.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(ALLOWED_METHODS),
    );
    let requested = request_headers
        .get(ACCESS_CONTROL_REQUEST_HEADERS)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static(DEFAULT_ALLOWED_HEADERS));
    headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, requested);
    headers.insert(
        ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(PREFLIGHT_MAX_AGE_SECONDS),
    );
}

/// Adds what every answer to an allowed origin carries.
pub fn add_origin_headers<B>(response: &mut Response<B>, origin: &AllowedOrigin) {
    let headers = response.headers_mut();
    headers.insert(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
    match origin {
        AllowedOrigin::Any => {
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        }
        AllowedOrigin::Listed(origin) => {
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            // The answer depends on the request's origin: caches must not share it across
            // origins.
            headers.append(VARY, HeaderValue::from_static("Origin"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn any_origin_by_default_only_listed_ones_with_a_list() {
        let from_a = headers(&[("origin", "https://a.example")]);
        assert_eq!(allowed_origin(None, &from_a), Some(AllowedOrigin::Any));
        assert_eq!(
            allowed_origin(Some(&CorsOrigins::Any), &from_a),
            Some(AllowedOrigin::Any)
        );
        let list = CorsOrigins::List(vec!["https://a.example".into()]);
        assert_eq!(
            allowed_origin(Some(&list), &from_a),
            Some(AllowedOrigin::Listed(HeaderValue::from_static(
                "https://a.example"
            )))
        );
        let from_b = headers(&[("origin", "https://b.example")]);
        assert!(allowed_origin(Some(&list), &from_b).is_none());
        assert!(
            allowed_origin(None, &headers(&[])).is_none(),
            "no Origin, no CORS"
        );
    }

    #[test]
    fn a_preflight_is_an_options_naming_its_method() {
        let preflight = headers(&[("access-control-request-method", "POST")]);
        assert!(is_preflight(&Method::OPTIONS, &preflight));
        assert!(!is_preflight(&Method::OPTIONS, &headers(&[])));
        let with_origin = headers(&[("origin", "https://a.example")]);
        assert!(is_preflight(&Method::OPTIONS, &with_origin));
        assert!(!is_preflight(&Method::POST, &preflight));
    }
}
