//! AWS Signature Version 4, as DynamoDB clients sign requests.
//!
//! A client sends
//! `Authorization: AWS4-HMAC-SHA256 Credential=<akid>/<yyyymmdd>/<region>/<service>/aws4_request,
//! SignedHeaders=<h1;h2;...>, Signature=<hex>` and the signature is
//! `hex(HMAC(signing_key, string_to_sign))` where
//!
//! - the canonical request is `METHOD \n canonical path \n canonical query \n canonical headers
//!   (one "name:value\n" per signed header) \n signed headers \n hex(SHA-256(body))`;
//! - the string to sign is `AWS4-HMAC-SHA256 \n <X-Amz-Date> \n <scope> \n
//!   hex(SHA-256(canonical request))`, scope being `<yyyymmdd>/<region>/<service>/aws4_request`;
//! - the signing key is `HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service),
//!   "aws4_request")`.
//!
//! This module both verifies (the server) and signs (tests, and any client the project writes).

use http::HeaderMap;
use sha2::{Digest, Sha256};

/// The only algorithm DynamoDB accepts.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// The last element of every credential scope.
pub const SCOPE_TERMINATOR: &str = "aws4_request";

/// The parameters of an `Authorization` header, as sent (not yet checked for meaning). They
/// borrow the header's text: every request is parsed, and copying them cost four allocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthorizationHeader<'a> {
    pub algorithm: &'a str,
    pub credential: &'a str,
    pub signed_headers: &'a str,
    pub signature: &'a str,
}

/// Splits an `Authorization` header into its parameters the way dynalite does (parameters are
/// separated by commas and/or spaces, each `Name=value`). On failure returns the names of the
/// required parameters that are missing or empty, in the order AWS reports them.
pub fn parse_authorization(header: &str) -> Result<AuthorizationHeader<'_>, Vec<&'static str>> {
    let mut words = authorization_words(header);
    let algorithm = words.next().unwrap_or_default();
    let (mut credential, mut signed_headers, mut signature) = (None, None, None);
    for word in words {
        let (name, value) = word.split_once('=').unwrap_or((word, ""));
        let slot = match name {
            "Credential" => &mut credential,
            "SignedHeaders" => &mut signed_headers,
            "Signature" => &mut signature,
            _ => continue,
        };
        if !value.is_empty() {
            *slot = Some(value);
        }
    }
    match (credential, signed_headers, signature) {
        (Some(credential), Some(signed_headers), Some(signature)) => Ok(AuthorizationHeader {
            algorithm,
            credential,
            signed_headers,
            signature,
        }),
        (credential, signed_headers, signature) => {
            let mut missing = Vec::new();
            if credential.is_none() {
                missing.push("Credential");
            }
            if signature.is_none() {
                missing.push("Signature");
            }
            if signed_headers.is_none() {
                missing.push("SignedHeaders");
            }
            Err(missing)
        }
    }
}

/// The non-empty words of an `Authorization` header between commas and spaces. Every request
/// is parsed, so the separators are found in the bytes, many at a time (`memchr2`), rather
/// than by `str::split` with a set of chars, which decodes each char; both are ASCII, so
/// every cut is a char boundary.
fn authorization_words(header: &str) -> impl Iterator<Item = &str> {
    let mut rest = header;
    std::iter::from_fn(move || {
        while !rest.is_empty() {
            let end = memchr::memchr2(b',', b' ', rest.as_bytes()).unwrap_or(rest.len());
            let (word, after) = rest.split_at(end);
            rest = after.get(1..).unwrap_or_default();
            if !word.is_empty() {
                return Some(word);
            }
        }
        None
    })
}

/// `Credential=<access_key>/<date>/<region>/<service>/<terminator>`, split (borrowing the
/// credential's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialScope<'a> {
    pub access_key: &'a str,
    /// `YYYYMMDD`.
    pub date: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    pub terminator: &'a str,
}

impl<'a> CredentialScope<'a> {
    /// Splits a credential into its five parts; `None` unless there are exactly five.
    pub fn parse(credential: &'a str) -> Option<CredentialScope<'a>> {
        let mut parts = credential.split('/');
        let mut next = || parts.next();
        let (Some(access_key), Some(date), Some(region), Some(service), Some(terminator)) =
            (next(), next(), next(), next(), next())
        else {
            return None;
        };
        if parts.next().is_some() {
            return None;
        }
        Some(CredentialScope {
            access_key,
            date,
            region,
            service,
            terminator,
        })
    }

    /// `<date>/<region>/<service>/<terminator>`: the scope line of the string to sign.
    pub fn scope(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.date, self.region, self.service, self.terminator
        )
    }
}

/// The parts of a request the canonical request is built from.
#[derive(Debug, Clone, Copy)]
pub struct RequestToSign<'a> {
    pub method: &'a str,
    /// The path as sent on the request line (still percent-encoded).
    pub path: &'a str,
    /// The query as sent, without `?`; empty when there is none.
    pub query: &'a str,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

/// The canonical request for `request`, covering the headers named in `signed_headers`
/// (`;`-separated lowercase names, in the order given). A signed header that the request lacks
/// is canonicalised with an empty value, so its signature simply does not match.
pub fn canonical_request(request: &RequestToSign<'_>, signed_headers: &str) -> String {
    let mut canonical = String::new();
    canonical.push_str(request.method);
    canonical.push('\n');
    canonical.push_str(&canonical_path(request.path));
    canonical.push('\n');
    canonical.push_str(&canonical_query(request.query));
    canonical.push('\n');
    for name in signed_headers.split(';') {
        canonical.push_str(name);
        canonical.push(':');
        canonical.push_str(&canonical_header_value(request.headers, name));
        canonical.push('\n');
    }
    canonical.push('\n');
    canonical.push_str(signed_headers);
    canonical.push('\n');
    canonical.push_str(&hex::encode(Sha256::digest(request.body)));
    canonical
}

/// The string to sign for a canonical request.
pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &str) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical_request.as_bytes()))
    )
}

/// The signing key derived from a secret key and a credential scope.
pub fn signing_key(secret_key: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let date_key = hmac_sha256(format!("AWS4{secret_key}").as_bytes(), date.as_bytes());
    let region_key = hmac_sha256(&date_key, region.as_bytes());
    let service_key = hmac_sha256(&region_key, service.as_bytes());
    hmac_sha256(&service_key, SCOPE_TERMINATOR.as_bytes())
}

/// The hex signature of `string_to_sign` under `signing_key`.
pub fn signature_hex(signing_key: &[u8; 32], string_to_sign: &str) -> String {
    hex::encode(hmac_sha256(signing_key, string_to_sign.as_bytes()))
}

/// Compares two signatures without leaking, through timing, how long a prefix matched.
pub fn signatures_equal(expected: &str, provided: &str) -> bool {
    expected.len() == provided.len()
        && expected
            .bytes()
            .zip(provided.bytes())
            .fold(0u8, |difference, (a, b)| difference | (a ^ b))
            == 0
}

/// What a client needs to sign a request.
#[derive(Debug, Clone, Copy)]
pub struct SigningCredentials<'a> {
    pub access_key: &'a str,
    pub secret_key: &'a str,
    pub region: &'a str,
    pub service: &'a str,
}

/// Signs `request` with every header it carries (the caller puts `host` and `x-amz-date` in
/// it first) and returns the `Authorization` header value. `amz_date` is `YYYYMMDDTHHMMSSZ`.
pub fn sign(
    credentials: &SigningCredentials<'_>,
    amz_date: &str,
    request: &RequestToSign<'_>,
) -> String {
    let mut names: Vec<&str> = request.headers.keys().map(|name| name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let signed_headers = names.join(";");
    let date = amz_date.get(..8).unwrap_or(amz_date);
    let scope = format!(
        "{date}/{}/{}/{SCOPE_TERMINATOR}",
        credentials.region, credentials.service
    );
    let canonical = canonical_request(request, &signed_headers);
    let key = signing_key(
        credentials.secret_key,
        date,
        credentials.region,
        credentials.service,
    );
    let signature = signature_hex(&key, &string_to_sign(amz_date, &scope, &canonical));
    format!(
        "{ALGORITHM} Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
        credentials.access_key
    )
}

/// HMAC-SHA256 (RFC 2104). Written out because the `hmac` crate's constructor returns a
/// `Result` that cannot fail for HMAC, and unwrapping it would be a panic path on our input.
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    const BLOCK_BYTES: usize = 64;
    let mut block_key = [0u8; BLOCK_BYTES];
    if key.len() > BLOCK_BYTES {
        block_key[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block_key[..key.len()].copy_from_slice(key);
    }
    let inner_pad: Vec<u8> = block_key.iter().map(|byte| byte ^ 0x36).collect();
    let outer_pad: Vec<u8> = block_key.iter().map(|byte| byte ^ 0x5c).collect();
    let inner = Sha256::new()
        .chain_update(&inner_pad)
        .chain_update(data)
        .finalize();
    Sha256::new()
        .chain_update(&outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// All values of header `name` joined by `,`, each trimmed with inner runs of spaces collapsed.
fn canonical_header_value(headers: &HeaderMap, name: &str) -> String {
    let values: Vec<String> = headers
        .get_all(name)
        .iter()
        .map(|value| {
            String::from_utf8_lossy(value.as_bytes())
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    values.join(",")
}

/// The path with `.`/`..`/empty segments resolved, each segment percent-encoded once more
/// (AWS "double-encodes" paths for every service but S3).
fn canonical_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            _ => segments.push(segment),
        }
    }
    let mut canonical = String::from("/");
    canonical.push_str(
        &segments
            .iter()
            .map(|segment| uri_encode(segment.as_bytes()))
            .collect::<Vec<_>>()
            .join("/"),
    );
    if path.ends_with('/') && !segments.is_empty() {
        canonical.push('/');
    }
    canonical
}

/// Query parameters decoded, re-encoded strictly, and sorted by name then value.
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                uri_encode(&percent_decode(name)),
                uri_encode(&percent_decode(value)),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes every byte but RFC 3986's unreserved characters, with uppercase hex.
fn uri_encode(bytes: &[u8]) -> String {
    let mut encoded = String::with_capacity(bytes.len());
    for &byte in bytes {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Decodes `%XX` escapes; a malformed escape is kept as literal text.
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = bytes
            .get(index + 1..index + 3)
            .filter(|_| bytes[index] == b'%')
            .and_then(|hex_digits| std::str::from_utf8(hex_digits).ok())
            .and_then(|hex_digits| u8::from_str_radix(hex_digits, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                index += 3;
            }
            None => {
                decoded.push(bytes[index]);
                index += 1;
            }
        }
    }
    decoded
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn hmac_matches_rfc_4231_test_cases_1_and_2() {
        assert_eq!(
            hex::encode(hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn hmac_hashes_keys_longer_than_a_block() {
        // RFC 4231 test case 6.
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn signing_key_matches_the_aws_documentation_example() {
        // AWS General Reference, "Examples of how to derive a signing key for Signature Version 4".
        let key = signing_key(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "20120215",
            "us-east-1",
            "iam",
        );
        assert_eq!(
            hex::encode(key),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
        );
    }

    #[test]
    fn get_vanilla_from_the_aws_sigv4_test_suite() {
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("example.amazonaws.com"));
        headers.insert("x-amz-date", HeaderValue::from_static("20150830T123600Z"));
        let request = RequestToSign {
            method: "GET",
            path: "/",
            query: "",
            headers: &headers,
            body: b"",
        };
        let canonical = canonical_request(&request, "host;x-amz-date");
        assert_eq!(
            canonical,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n\
             host;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let credentials = SigningCredentials {
            access_key: "AKIDEXAMPLE",
            secret_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            region: "us-east-1",
            service: "service",
        };
        assert_eq!(
            sign(&credentials, "20150830T123600Z", &request),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    #[test]
    fn parses_authorization_parameters_and_reports_missing_ones() {
        let parsed = parse_authorization(
            "AWS4-HMAC-SHA256 Credential=AK/20240101/us-east-1/dynamodb/aws4_request, \
             SignedHeaders=host;x-amz-date, Signature=abc",
        )
        .unwrap();
        assert_eq!(parsed.algorithm, ALGORITHM);
        assert_eq!(parsed.signed_headers, "host;x-amz-date");
        assert_eq!(parsed.signature, "abc");
        let scope = CredentialScope::parse(parsed.credential).unwrap();
        assert_eq!(scope.access_key, "AK");
        assert_eq!(scope.scope(), "20240101/us-east-1/dynamodb/aws4_request");

        assert_eq!(
            parse_authorization("AWS4-HMAC-SHA256 Credential=x, Signature="),
            Err(vec!["Signature", "SignedHeaders"])
        );
        assert_eq!(
            parse_authorization(""),
            Err(vec!["Credential", "Signature", "SignedHeaders"])
        );
        assert_eq!(CredentialScope::parse("a/b/c/d"), None);
    }

    #[test]
    fn authorization_words_are_cut_at_commas_and_spaces_only() {
        let words: Vec<&str> = authorization_words(" ,A  B,,C=é/x, D;E\tF ,").collect();
        // A tab and other bytes are part of a word; runs of separators leave no empty words,
        // and a multi-byte char is never cut.
        assert_eq!(words, ["A", "B", "C=é/x", "D;E\tF"]);
        assert_eq!(authorization_words("").count(), 0);
        assert_eq!(authorization_words(", ,").count(), 0);
    }

    #[test]
    fn canonical_query_and_path_are_normalised() {
        assert_eq!(canonical_query("b=2&a=%7e1&a=0&c"), "a=0&a=~1&b=2&c=");
        assert_eq!(canonical_path(""), "/");
        assert_eq!(canonical_path("/a/./b/../c//d/"), "/a/c/d/");
        assert_eq!(canonical_path("/a%20b"), "/a%2520b");
    }

    #[test]
    fn header_values_are_trimmed_collapsed_and_joined() {
        let mut headers = HeaderMap::new();
        headers.append("x-test", HeaderValue::from_static("  a   b "));
        headers.append("x-test", HeaderValue::from_static("c"));
        assert_eq!(canonical_header_value(&headers, "x-test"), "a b,c");
        assert_eq!(canonical_header_value(&headers, "absent"), "");
    }

    #[test]
    fn signature_comparison() {
        assert!(signatures_equal("abcd", "abcd"));
        assert!(!signatures_equal("abcd", "abce"));
        assert!(!signatures_equal("abcd", "abc"));
    }
}
