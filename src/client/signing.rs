//! SigV4 signing of the client's requests with the user's credentials, through the server's
//! own signer (`shoal_server::sigv4::sign`), so both sides share one implementation.

use std::time::{SystemTime, UNIX_EPOCH};

use http::header::{HeaderMap, HeaderName, HeaderValue};
use shoal_server::sigv4::{self, RequestToSign, SigningCredentials};

/// The service name DynamoDB requests are scoped to.
const SERVICE: &str = "dynamodb";
/// The region signed for when neither the environment nor the host name gives one.
pub const DEFAULT_REGION: &str = "us-east-1";

/// An AWS access key, as the SDKs read it from the environment.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
    /// Temporary credentials' token, sent as `X-Amz-Security-Token` (and signed).
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    // The secret and the token stay out of logs and error messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optional `AWS_SESSION_TOKEN`; None
    /// when neither key variable is set, an error when only one is.
    pub fn from_env() -> Result<Option<Credentials>, String> {
        let access_key = non_empty_var("AWS_ACCESS_KEY_ID");
        let secret_key = non_empty_var("AWS_SECRET_ACCESS_KEY");
        match (access_key, secret_key) {
            (None, None) => Ok(None),
            (Some(access_key), Some(secret_key)) => Ok(Some(Credentials {
                access_key,
                secret_key,
                session_token: non_empty_var("AWS_SESSION_TOKEN"),
            })),
            (Some(_), None) => {
                Err("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".to_string())
            }
            (None, Some(_)) => {
                Err("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not".to_string())
            }
        }
    }
}

/// `AWS_REGION`, else `AWS_DEFAULT_REGION`, as the SDKs and the CLI read them.
pub fn region_from_env() -> Option<String> {
    non_empty_var("AWS_REGION").or_else(|| non_empty_var("AWS_DEFAULT_REGION"))
}

fn non_empty_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// Signs the requests of one endpoint.
#[derive(Debug, Clone)]
pub struct Signer {
    pub credentials: Credentials,
    pub region: String,
}

impl Signer {
    /// The header lines (each ending in CRLF) that sign a DynamoDB POST to `/` of `body`
    /// with `X-Amz-Target: target`, sent now: `X-Amz-Date`, the security token if any, and
    /// `Authorization`. `host` and `content_type` must be the values the request carries.
    pub fn header_lines(
        &self,
        host: &str,
        content_type: &str,
        target: &str,
        body: &[u8],
    ) -> Result<String, String> {
        let unix_seconds = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs() as i64);
        self.header_lines_at(unix_seconds, host, content_type, target, body)
    }

    fn header_lines_at(
        &self,
        unix_seconds: i64,
        host: &str,
        content_type: &str,
        target: &str,
        body: &[u8],
    ) -> Result<String, String> {
        let amz_date = shoal_server::dates::format_amz_date(unix_seconds);
        let mut headers = HeaderMap::new();
        let mut add = |name: &'static str, value: &str| -> Result<(), String> {
            let value = HeaderValue::from_str(value)
                .map_err(|_| format!("{name}: not a valid header value"))?;
            headers.insert(HeaderName::from_static(name), value);
            Ok(())
        };
        add("host", host)?;
        add("x-amz-date", &amz_date)?;
        add("x-amz-target", target)?;
        add("content-type", content_type)?;
        if let Some(token) = &self.credentials.session_token {
            add("x-amz-security-token", token)?;
        }
        let credentials = SigningCredentials {
            access_key: &self.credentials.access_key,
            secret_key: &self.credentials.secret_key,
            region: &self.region,
            service: SERVICE,
        };
        let request = RequestToSign {
            method: "POST",
            path: "/",
            query: "",
            headers: &headers,
            body,
        };
        let authorization = sigv4::sign(&credentials, &amz_date, &request);
        let mut lines = format!("X-Amz-Date: {amz_date}\r\n");
        if let Some(token) = &self.credentials.session_token {
            lines.push_str(&format!("X-Amz-Security-Token: {token}\r\n"));
        }
        lines.push_str(&format!("Authorization: {authorization}\r\n"));
        Ok(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(session_token: Option<&str>) -> Signer {
        Signer {
            credentials: Credentials {
                access_key: "AKIDEXAMPLE".to_string(),
                secret_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".to_string(),
                session_token: session_token.map(str::to_string),
            },
            region: "eu-west-1".to_string(),
        }
    }

    #[test]
    fn signs_host_date_target_and_content_type_with_the_current_scope() {
        // 2026-01-02T03:04:05Z
        let lines = signer(None)
            .header_lines_at(
                1_767_323_045,
                "dynamodb.eu-west-1.amazonaws.com",
                "application/x-amz-json-1.0",
                "DynamoDB_20120810.ListTables",
                b"{}",
            )
            .unwrap();
        assert!(lines.starts_with("X-Amz-Date: 20260102T030405Z\r\nAuthorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/eu-west-1/dynamodb/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature="), "{lines}");
        assert!(!lines.contains("Security-Token"));
    }

    #[test]
    fn a_session_token_is_sent_and_signed() {
        let lines = signer(Some("FwoGZXIvYXdzEXAMPLE"))
            .header_lines_at(0, "localhost:8000", "application/x-amz-json-1.0", "T", b"")
            .unwrap();
        assert!(lines.contains("X-Amz-Security-Token: FwoGZXIvYXdzEXAMPLE\r\n"));
        assert!(lines.contains(
            "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target,"
        ));
    }

    #[test]
    fn a_token_that_cannot_be_a_header_is_an_error_not_a_panic() {
        let error = signer(Some("line\nbreak"))
            .header_lines_at(0, "localhost", "application/x-amz-json-1.0", "T", b"")
            .unwrap_err();
        assert_eq!(error, "x-amz-security-token: not a valid header value");
    }
}
