//! Runs the server's request pipeline (routing, JSON, target, SigV4 parsing and verification)
//! on arbitrary requests. Input layout: header lines `Name: value` separated by `\n`, a blank
//! line, then the body. Nothing may panic, and an accepted request must name a known
//! operation and carry a JSON object.

#![no_main]

use http::{HeaderMap, HeaderName, HeaderValue, Method};
use libfuzzer_sys::fuzz_target;
use shoal_server::auth::AuthPolicy;
use shoal_server::request::{decode_api_request, route};
use shoal_server::sigv4::{canonical_request, parse_authorization, CredentialScope, RequestToSign};
use shoal_server::AuthMode;
use std::collections::HashMap;

const OPERATIONS: &[&str] = &["PutItem", "GetItem", "Query"];

fuzz_target!(|data: &[u8]| {
    let split = data
        .windows(2)
        .position(|window| window == b"\n\n")
        .unwrap_or(data.len());
    let (head, body) = (&data[..split], data.get(split + 2..).unwrap_or_default());
    let mut headers = HeaderMap::new();
    for line in head.split(|byte| *byte == b'\n') {
        let Some(colon) = line.iter().position(|byte| *byte == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    let _ = route(&Method::POST, "/", headers.get("content-type"));
    if let Some(authorization) = headers.get("authorization") {
        if let Ok(parsed) = parse_authorization(&String::from_utf8_lossy(authorization.as_bytes()))
        {
            let _ = CredentialScope::parse(parsed.credential);
        }
    }
    let request = RequestToSign {
        method: "POST",
        path: "/",
        query: "",
        headers: &headers,
        body,
    };
    let _ = canonical_request(&request, "host;x-amz-date;content-type");
    let mut keys = HashMap::new();
    keys.insert("AKIDEXAMPLE".to_owned(), "secret".to_owned());
    for mode in [
        AuthMode::AcceptAnyWellFormed,
        AuthMode::Verify { keys: keys.clone() },
    ] {
        let policy = AuthPolicy {
            mode: &mode,
            region: Some("us-east-1"),
            clock_skew_max_seconds: 900,
            now_unix_seconds: 1_704_067_200,
        };
        if let Ok(decoded) = decode_api_request(&request, OPERATIONS, &policy) {
            assert!(OPERATIONS.contains(&decoded.operation));
            assert!(serde_json::from_slice::<serde_json::Value>(decoded.body)
                .is_ok_and(|body| body.is_object()));
        }
    }
});
