//! The authentication step of the request pipeline.
//!
//! Both modes first check the header's shape the way DynamoDB Local and dynalite do: an
//! `Authorization` header must exist (`MissingAuthenticationTokenException`), carry
//! `Credential`, `Signature` and `SignedHeaders`, and come with an `X-Amz-Date` or `Date` header
//! (`IncompleteSignatureException`, naming everything missing). In
//! [`AuthMode::AcceptAnyWellFormed`] that is all. In [`AuthMode::Verify`] the checks go on, in
//! this order: algorithm and credential shape, request date within the allowed clock skew
//! (`Signature expired` / `Signature not yet current`, before the key is looked up), known
//! access key (`UnrecognizedClientException`), credential scope (terminator, service
//! `dynamodb`, region if configured, date matching the request date), and finally the
//! signature itself (all `InvalidSignatureException`, with AWS's texts).
//!
//! Query-string authentication (presigned URLs) is not supported: a request authenticated only
//! that way is treated as missing its token; DynamoDB SDKs never presign.

use crate::amz_date::{format_amz_date, parse_amz_date, parse_http_date};
use crate::config::AuthMode;
use crate::sigv4::{self, CredentialScope, RequestToSign};
use shoal_model::{ApiError, ErrorCode};
use std::borrow::Cow;

/// The service name signed requests must be scoped to.
pub const SERVICE_NAME: &str = "dynamodb";

/// What the verifier needs besides the request.
#[derive(Debug, Clone, Copy)]
pub struct AuthPolicy<'a> {
    pub mode: &'a AuthMode,
    pub region: Option<&'a str>,
    pub clock_skew_max_seconds: i64,
    pub now_unix_seconds: i64,
}

/// What authentication learned of a request besides that it may proceed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// The region the request was sent to, as its SigV4 credential scope names it (what
    /// DynamoDB puts in the ARNs it answers with), when that is a plausible region name:
    /// letters, digits, `-` and `_`, at most 64 of them. An ARN holds it between colons, so
    /// nothing else may pass. `None` too when the header holds bytes other than visible ASCII.
    pub region: Option<String>,
}

/// Checks the request's credentials according to `policy`. The `Authorization` header is
/// parsed once, here, for both the check and the region it names.
pub fn authenticate(
    request: &RequestToSign<'_>,
    policy: &AuthPolicy<'_>,
) -> Result<Authenticated, ApiError> {
    let value = request.headers.get(http::header::AUTHORIZATION);
    // Visible ASCII (what every SDK sends) is read as it is, without the lossy decoding's
    // walk; other bytes are read lossily, to be named in an error message, and give no region.
    let header = value.map(|value| match value.to_str() {
        Ok(text) => (Cow::Borrowed(text), true),
        Err(_) => (String::from_utf8_lossy(value.as_bytes()), false),
    });
    let has_query_auth = request
        .query
        .split('&')
        .any(|pair| pair.split('=').next() == Some("X-Amz-Algorithm"));
    let Some((header, visible_ascii)) = header else {
        return Err(ApiError::new(
            ErrorCode::MissingAuthenticationTokenException,
            "Request is missing Authentication Token",
        ));
    };
    if has_query_auth {
        return Err(ApiError::new(
            ErrorCode::InvalidSignatureException,
            "Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP header.",
        ));
    }

    let parsed = sigv4::parse_authorization(&header);
    let has_date = request.headers.contains_key("x-amz-date")
        || request.headers.contains_key(http::header::DATE);
    let authorization = match parsed {
        Ok(authorization) if has_date => authorization,
        parsed => {
            let missing = parsed.err().unwrap_or_default();
            let mut message = String::new();
            for name in missing {
                message.push_str(&format!(
                    "Authorization header requires '{name}' parameter. "
                ));
            }
            if !has_date {
                message.push_str(
                    "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. ",
                );
            }
            message.push_str(&format!("Authorization={header}"));
            return Err(ApiError::new(
                ErrorCode::IncompleteSignatureException,
                message,
            ));
        }
    };
    let region_of = |scope: &CredentialScope<'_>| {
        if visible_ascii {
            plausible_region(scope.region)
        } else {
            None
        }
    };
    let AuthMode::Verify { keys } = policy.mode else {
        let region = CredentialScope::parse(authorization.credential)
            .as_ref()
            .and_then(region_of);
        return Ok(Authenticated { region });
    };

    if authorization.algorithm != sigv4::ALGORITHM {
        return Err(ApiError::new(
            ErrorCode::IncompleteSignatureException,
            format!("Unsupported AWS 'algorithm': '{}'", authorization.algorithm),
        ));
    }
    let Some(scope) = CredentialScope::parse(authorization.credential) else {
        return Err(ApiError::new(
            ErrorCode::IncompleteSignatureException,
            format!(
                "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '{}'",
                authorization.credential
            ),
        ));
    };
    // DynamoDB refuses a stale or future-dated request before it looks at whose key signed
    // it: an expired request from an unknown key is "Signature expired", not an unknown key.
    let (amz_date, request_unix_seconds) = request_date(request)?;
    check_clock_skew(request_unix_seconds, policy)?;
    let Some(secret_key) = keys.get(scope.access_key) else {
        return Err(ApiError::new(
            ErrorCode::UnrecognizedClientException,
            "The security token included in the request is invalid.",
        ));
    };
    check_scope(&scope, policy.region, &amz_date)?;

    let canonical = sigv4::canonical_request(request, authorization.signed_headers);
    let string_to_sign = sigv4::string_to_sign(&amz_date, &scope.scope(), &canonical);
    let key = sigv4::signing_key(secret_key, scope.date, scope.region, scope.service);
    let expected = sigv4::signature_hex(&key, &string_to_sign);
    if !sigv4::signatures_equal(&expected, authorization.signature) {
        tracing::debug!(canonical_request = %canonical, "signature mismatch");
        return Err(invalid_signature(
            "The request signature we calculated does not match the signature you provided. \
             Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
        ));
    }
    Ok(Authenticated {
        region: region_of(&scope),
    })
}

/// `region` as the region a request names, when it could stand between an ARN's colons.
fn plausible_region(region: &str) -> Option<String> {
    const REGION_CHARS_MAX: usize = 64;
    let plausible = (1..=REGION_CHARS_MAX).contains(&region.len())
        && region
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
    plausible.then(|| region.to_owned())
}

/// The request's signing date: `X-Amz-Date` as sent, or `Date` reformatted, with its Unix time.
fn request_date(request: &RequestToSign<'_>) -> Result<(String, i64), ApiError> {
    if let Some(value) = request.headers.get("x-amz-date") {
        let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
        return match parse_amz_date(&text) {
            Some(unix_seconds) => Ok((text, unix_seconds)),
            None => Err(ApiError::new(
                ErrorCode::IncompleteSignatureException,
                format!(
                    "Date must be in ISO-8601 'basic format'. Got '{text}'. See http://en.wikipedia.org/wiki/ISO_8601"
                ),
            )),
        };
    }
    let text = request
        .headers
        .get(http::header::DATE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .unwrap_or_default();
    match parse_http_date(&text) {
        Some(unix_seconds) => Ok((format_amz_date(unix_seconds), unix_seconds)),
        None => Err(ApiError::new(
            ErrorCode::IncompleteSignatureException,
            format!("Date header must be an RFC 7231 IMF-fixdate. Got '{text}'."),
        )),
    }
}

fn check_scope(
    scope: &CredentialScope<'_>,
    region: Option<&str>,
    amz_date: &str,
) -> Result<(), ApiError> {
    if scope.terminator != sigv4::SCOPE_TERMINATOR {
        return Err(invalid_signature(format!(
            "Credential should be scoped with a valid terminator: 'aws4_request', not '{}'.",
            scope.terminator
        )));
    }
    if scope.service != SERVICE_NAME {
        return Err(invalid_signature(format!(
            "Credential should be scoped to correct service: '{SERVICE_NAME}'. "
        )));
    }
    if region.is_some_and(|region| region != scope.region) {
        return Err(invalid_signature(format!(
            "Credential should be scoped to a valid region, not '{}'. ",
            scope.region
        )));
    }
    let request_day = amz_date.get(..8).unwrap_or(amz_date);
    if scope.date != request_day {
        return Err(invalid_signature(format!(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{}' != '{request_day}', from '{amz_date}'.",
            scope.date
        )));
    }
    Ok(())
}

fn check_clock_skew(request_unix_seconds: i64, policy: &AuthPolicy<'_>) -> Result<(), ApiError> {
    let skew = policy.clock_skew_max_seconds;
    let now = policy.now_unix_seconds;
    let skew_minutes = skew / 60;
    if request_unix_seconds < now - skew {
        return Err(invalid_signature(format!(
            "Signature expired: {} is now earlier than {} ({} - {skew_minutes} min.)",
            format_amz_date(request_unix_seconds),
            format_amz_date(now - skew),
            format_amz_date(now)
        )));
    }
    if request_unix_seconds > now + skew {
        return Err(invalid_signature(format!(
            "Signature not yet current: {} is still later than {} ({} + {skew_minutes} min.)",
            format_amz_date(request_unix_seconds),
            format_amz_date(now + skew),
            format_amz_date(now)
        )));
    }
    Ok(())
}

fn invalid_signature(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidSignatureException, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sigv4::SigningCredentials;
    use http::{HeaderMap, HeaderValue};
    use proptest::prelude::*;
    use std::collections::HashMap;

    const NOW: i64 = 1_704_067_200; // 2024-01-01T00:00:00Z
    const SECRET: &str = "secret-key";

    fn verify_mode() -> AuthMode {
        let mut keys = HashMap::new();
        keys.insert("AKID".to_owned(), SECRET.to_owned());
        AuthMode::Verify { keys }
    }

    fn policy(mode: &AuthMode) -> AuthPolicy<'_> {
        AuthPolicy {
            mode,
            region: Some("us-east-1"),
            clock_skew_max_seconds: 15 * 60,
            now_unix_seconds: NOW,
        }
    }

    fn signed_headers(amz_date: &str, secret: &str, region: &str, body: &[u8]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("localhost:8000"));
        headers.insert("x-amz-date", HeaderValue::from_str(amz_date).unwrap());
        headers.insert(
            "x-amz-target",
            HeaderValue::from_static("DynamoDB_20120810.ListTables"),
        );
        let credentials = SigningCredentials {
            access_key: "AKID",
            secret_key: secret,
            region,
            service: "dynamodb",
        };
        let authorization = sigv4::sign(&credentials, amz_date, &request(&headers, body));
        headers.insert(
            "authorization",
            HeaderValue::from_str(&authorization).unwrap(),
        );
        headers
    }

    fn request<'a>(headers: &'a HeaderMap, body: &'a [u8]) -> RequestToSign<'a> {
        RequestToSign {
            method: "POST",
            path: "/",
            query: "",
            headers,
            body,
        }
    }

    fn code_of(result: Result<Authenticated, ApiError>) -> ErrorCode {
        result.unwrap_err().code
    }

    #[test]
    fn accepts_a_correct_signature_and_rejects_tampering() {
        let mode = verify_mode();
        let headers = signed_headers("20240101T000500Z", SECRET, "us-east-1", b"{}");
        authenticate(&request(&headers, b"{}"), &policy(&mode)).unwrap();
        let error = authenticate(&request(&headers, b"{ }"), &policy(&mode)).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidSignatureException);
        assert!(error
            .message
            .starts_with("The request signature we calculated does not match"));
    }

    #[test]
    fn the_request_region_is_the_credential_scopes() {
        let mode = AuthMode::AcceptAnyWellFormed;
        let with = |authorization: HeaderValue| {
            let mut headers = HeaderMap::new();
            headers.insert("x-amz-date", HeaderValue::from_static("20261124T000000Z"));
            headers.insert("authorization", authorization);
            authenticate(&request(&headers, b"{}"), &policy(&mode)).map(|found| found.region)
        };
        let text = |authorization: &'static str| with(HeaderValue::from_static(authorization));
        assert_eq!(
            text("AWS4-HMAC-SHA256 Credential=AKID/20261124/eu-west-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"),
            Ok(Some("eu-west-1".to_owned()))
        );
        assert_eq!(
            text("AWS4-HMAC-SHA256 Credential=AKID/20261124/a:b/dynamodb/aws4_request, SignedHeaders=host, Signature=0"),
            Ok(None)
        );
        assert_eq!(
            text("AWS4-HMAC-SHA256 Credential=AKID, SignedHeaders=host, Signature=0"),
            Ok(None)
        );
        // A header with bytes other than visible ASCII is accepted as well formed, but names
        // no region, even where its credential scope is plain.
        let not_ascii = HeaderValue::from_bytes(
            b"AWS4-HMAC-SHA256 Credential=AKID/20261124/eu-west-1/dynamodb/aws4_request, SignedHeaders=host, Signature=\xc3\xa9",
        )
        .unwrap();
        assert_eq!(with(not_ascii), Ok(None));
    }

    #[test]
    fn a_verified_request_names_its_region() {
        let mode = verify_mode();
        let headers = signed_headers("20240101T000000Z", SECRET, "eu-west-1", b"{}");
        let any_region = AuthPolicy {
            region: None,
            ..policy(&mode)
        };
        let found = authenticate(&request(&headers, b"{}"), &any_region).unwrap();
        assert_eq!(found.region.as_deref(), Some("eu-west-1"));
    }

    #[test]
    fn wrong_secret_unknown_key_and_wrong_region() {
        let mode = verify_mode();
        let headers = signed_headers("20240101T000000Z", "other", "us-east-1", b"{}");
        assert_eq!(
            code_of(authenticate(&request(&headers, b"{}"), &policy(&mode))),
            ErrorCode::InvalidSignatureException
        );
        let other_keys = AuthMode::Verify {
            keys: HashMap::new(),
        };
        let headers = signed_headers("20240101T000000Z", SECRET, "us-east-1", b"{}");
        let error = authenticate(&request(&headers, b"{}"), &policy(&other_keys)).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnrecognizedClientException);
        assert_eq!(
            error.message,
            "The security token included in the request is invalid."
        );
        let headers = signed_headers("20240101T000000Z", SECRET, "eu-west-1", b"{}");
        let error = authenticate(&request(&headers, b"{}"), &policy(&mode)).unwrap_err();
        assert_eq!(
            error.message,
            "Credential should be scoped to a valid region, not 'eu-west-1'. "
        );
    }

    #[test]
    fn expired_and_future_dates() {
        let mode = verify_mode();
        let headers = signed_headers("20231231T234459Z", SECRET, "us-east-1", b"{}");
        let error = authenticate(&request(&headers, b"{}"), &policy(&mode)).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidSignatureException);
        assert_eq!(
            error.message,
            "Signature expired: 20231231T234459Z is now earlier than 20231231T234500Z \
             (20240101T000000Z - 15 min.)"
        );
        // Exactly at the edge is still accepted.
        let headers = signed_headers("20231231T234500Z", SECRET, "us-east-1", b"{}");
        authenticate(&request(&headers, b"{}"), &policy(&mode)).unwrap();
        let headers = signed_headers("20240101T001501Z", SECRET, "us-east-1", b"{}");
        let error = authenticate(&request(&headers, b"{}"), &policy(&mode)).unwrap_err();
        assert!(
            error
                .message
                .starts_with("Signature not yet current: 20240101T001501Z"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_stale_or_future_date_is_refused_before_the_key_is_looked_up() {
        let no_keys = AuthMode::Verify {
            keys: HashMap::new(),
        };
        let stale = signed_headers("20231231T234459Z", SECRET, "us-east-1", b"{}");
        let error = authenticate(&request(&stale, b"{}"), &policy(&no_keys)).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidSignatureException);
        assert!(
            error.message.starts_with("Signature expired: "),
            "{}",
            error.message
        );
        let future = signed_headers("20240101T001501Z", SECRET, "us-east-1", b"{}");
        let error = authenticate(&request(&future, b"{}"), &policy(&no_keys)).unwrap_err();
        assert!(
            error.message.starts_with("Signature not yet current: "),
            "{}",
            error.message
        );
        // In date, the unknown key is what is wrong.
        let current = signed_headers("20240101T000000Z", SECRET, "us-east-1", b"{}");
        assert_eq!(
            code_of(authenticate(&request(&current, b"{}"), &policy(&no_keys))),
            ErrorCode::UnrecognizedClientException
        );
    }

    #[test]
    fn shape_errors_name_everything_missing() {
        let mode = AuthMode::AcceptAnyWellFormed;
        let mut headers = HeaderMap::new();
        let error = authenticate(&request(&headers, b""), &policy(&mode)).unwrap_err();
        assert_eq!(error.code, ErrorCode::MissingAuthenticationTokenException);
        assert_eq!(error.message, "Request is missing Authentication Token");

        headers.insert(
            "authorization",
            HeaderValue::from_static("AWS4-HMAC-SHA256 Credential=a/b"),
        );
        let error = authenticate(&request(&headers, b""), &policy(&mode)).unwrap_err();
        assert_eq!(error.code, ErrorCode::IncompleteSignatureException);
        assert_eq!(
            error.message,
            "Authorization header requires 'Signature' parameter. \
             Authorization header requires 'SignedHeaders' parameter. \
             Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. \
             Authorization=AWS4-HMAC-SHA256 Credential=a/b"
        );

        // Accept mode takes any well-formed header, whatever its key and signature.
        headers.insert(
            "authorization",
            HeaderValue::from_static(
                "AWS4-HMAC-SHA256 Credential=a/b, SignedHeaders=host, Signature=00",
            ),
        );
        headers.insert("x-amz-date", HeaderValue::from_static("whenever"));
        authenticate(&request(&headers, b""), &policy(&mode)).unwrap();

        // Verify mode goes on to check the credential's shape.
        let mode = verify_mode();
        let error = authenticate(&request(&headers, b""), &policy(&mode)).unwrap_err();
        assert_eq!(error.code, ErrorCode::IncompleteSignatureException);
        assert!(error
            .message
            .starts_with("Credential must have exactly 5 slash-delimited elements"));
    }

    #[test]
    fn scope_date_must_match_request_date() {
        let mode = verify_mode();
        let mut headers = signed_headers("20240101T000000Z", SECRET, "us-east-1", b"{}");
        let authorization = headers["authorization"]
            .to_str()
            .unwrap()
            .replace("/20240101/", "/20240102/");
        headers.insert(
            "authorization",
            HeaderValue::from_str(&authorization).unwrap(),
        );
        let error = authenticate(&request(&headers, b"{}"), &policy(&mode)).unwrap_err();
        assert_eq!(
            error.message,
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: \
             '20240102' != '20240101', from '20240101T000000Z'."
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the body and secret, a request signed with the right secret verifies, and
        /// flipping any one body byte breaks it.
        #[test]
        fn signed_requests_verify_and_any_body_change_is_caught(
            body in proptest::collection::vec(any::<u8>(), 1..256),
            secret in "[!-~]{1,40}",
            flip_index in any::<prop::sample::Index>(),
            flip_bits in 1u8..=255,
        ) {
            let mut keys = HashMap::new();
            keys.insert("AKID".to_owned(), secret.clone());
            let mode = AuthMode::Verify { keys };
            let headers = signed_headers("20240101T000000Z", &secret, "us-east-1", &body);
            prop_assert!(authenticate(&request(&headers, &body), &policy(&mode)).is_ok());
            let mut tampered = body.clone();
            tampered[flip_index.index(body.len())] ^= flip_bits;
            let error = authenticate(&request(&headers, &tampered), &policy(&mode)).unwrap_err();
            prop_assert_eq!(error.code, ErrorCode::InvalidSignatureException);
        }
    }
}
