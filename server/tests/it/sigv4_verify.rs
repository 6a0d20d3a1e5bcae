//! Verify mode over real sockets: requests signed by the crate's signer are accepted; a wrong
//! secret, a tampered body, an expired date and an unknown key get AWS's errors.

use crate::support;
use http::{HeaderMap, HeaderValue};
use shoal_server::dates::format_amz_date;
use shoal_server::sigv4::{sign, RequestToSign, SigningCredentials};
use shoal_server::{parse_key_file, AuthMode, ServerConfig};
use std::time::{SystemTime, UNIX_EPOCH};
use support::{post, send_raw, TestServer};

const ACCESS_KEY: &str = "AKIDSHOALTEST";
const SECRET_KEY: &str = "shoal/secret+KEY";

fn verify_config() -> ServerConfig {
    let keys = parse_key_file(
        &format!("# test keys\n{ACCESS_KEY} {SECRET_KEY}\n"),
        "inline",
    )
    .unwrap();
    ServerConfig {
        auth: AuthMode::Verify { keys },
        region: Some("us-west-2".to_owned()),
        ..ServerConfig::default()
    }
}

fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A signed PutItem request. `signed_body` is what the signature covers, `sent_body` what is
/// sent, so a test can tamper with the body after signing.
fn signed_request(
    access_key: &str,
    secret_key: &str,
    unix_seconds: i64,
    signed_body: &str,
    sent_body: &str,
) -> Vec<u8> {
    let amz_date = format_amz_date(unix_seconds);
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("localhost"));
    headers.insert(
        "content-type",
        HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    headers.insert("x-amz-date", HeaderValue::from_str(&amz_date).unwrap());
    headers.insert(
        "x-amz-target",
        HeaderValue::from_static("DynamoDB_20120810.PutItem"),
    );
    let credentials = SigningCredentials {
        access_key,
        secret_key,
        region: "us-west-2",
        service: "dynamodb",
    };
    let to_sign = RequestToSign {
        method: "POST",
        path: "/",
        query: "",
        headers: &headers,
        body: signed_body.as_bytes(),
    };
    let authorization = sign(&credentials, &amz_date, &to_sign);
    // `post` adds `Host: localhost`, matching the signed host header.
    post(
        &[
            ("Content-Type", "application/x-amz-json-1.0"),
            ("X-Amz-Date", &amz_date),
            ("X-Amz-Target", "DynamoDB_20120810.PutItem"),
            ("Authorization", &authorization),
        ],
        sent_body.as_bytes(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correctly_signed_requests_are_accepted() {
    let server = TestServer::start(verify_config()).await;
    let body = r#"{"TableName":"t"}"#;
    let response = send_raw(
        server.address,
        &signed_request(ACCESS_KEY, SECRET_KEY, now_seconds(), body, body),
    )
    .await;
    assert_eq!(
        response.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&response.body)
    );
    assert_eq!(response.json()["TableName"], "t");
    // Within the allowed skew in either direction.
    for offset in [-14 * 60, 14 * 60] {
        let request = signed_request(ACCESS_KEY, SECRET_KEY, now_seconds() + offset, body, body);
        assert_eq!(
            send_raw(server.address, &request).await.status,
            200,
            "offset {offset}"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_signatures_get_aws_errors() {
    let server = TestServer::start(verify_config()).await;
    let body = r#"{"TableName":"t"}"#;
    let mismatch = "The request signature we calculated does not match the signature you provided.";

    let wrong_secret = signed_request(ACCESS_KEY, "not-the-secret", now_seconds(), body, body);
    let response = send_raw(server.address, &wrong_secret).await;
    assert_eq!(response.status, 400);
    response.assert_standard_headers();
    assert_eq!(
        response.json()["__type"],
        "com.amazon.coral.service#InvalidSignatureException"
    );
    assert!(response.json()["message"]
        .as_str()
        .unwrap()
        .starts_with(mismatch));

    let tampered = signed_request(
        ACCESS_KEY,
        SECRET_KEY,
        now_seconds(),
        body,
        r#"{"TableName":"u"}"#,
    );
    let response = send_raw(server.address, &tampered).await;
    assert_eq!(response.error_code(), "InvalidSignatureException");
    assert!(response.json()["message"]
        .as_str()
        .unwrap()
        .starts_with(mismatch));

    let expired = signed_request(ACCESS_KEY, SECRET_KEY, now_seconds() - 20 * 60, body, body);
    let response = send_raw(server.address, &expired).await;
    assert_eq!(response.error_code(), "InvalidSignatureException");
    let message = response.json()["message"].as_str().unwrap().to_owned();
    assert!(message.starts_with("Signature expired: "), "{message}");
    assert!(message.ends_with(" - 15 min.)"), "{message}");

    let unknown_key = signed_request("AKIDUNKNOWN", SECRET_KEY, now_seconds(), body, body);
    let response = send_raw(server.address, &unknown_key).await;
    assert_eq!(response.status, 400);
    assert_eq!(
        response.json(),
        serde_json::json!({
            "__type": "com.amazon.coral.service#UnrecognizedClientException",
            "message": "The security token included in the request is invalid."
        })
    );

    // The dummy header DynamoDB Local accepts is refused in verify mode: its 2024 date is
    // refused as expired before its unknown key is looked up.
    let dummy = support::api_call("PutItem", body);
    let response = send_raw(server.address, &dummy).await;
    assert_eq!(response.status, 400);
    assert_eq!(response.error_code(), "InvalidSignatureException");
    let message = response.json()["message"].as_str().unwrap().to_owned();
    assert!(message.starts_with("Signature expired: "), "{message}");
    // So is an expired request from an unknown key.
    let expired_unknown = signed_request(
        "AKIDUNKNOWN",
        SECRET_KEY,
        now_seconds() - 20 * 60,
        body,
        body,
    );
    let response = send_raw(server.address, &expired_unknown).await;
    assert_eq!(response.error_code(), "InvalidSignatureException");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_mode_takes_any_well_formed_signature() {
    let server = TestServer::start(ServerConfig::default()).await;
    let body = "{}";
    let request = signed_request(
        "ANYKEY",
        "any-secret",
        now_seconds() - 3600 * 24,
        body,
        "{\"x\":1}",
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["x"], 1);
    server.stop().await;
}
