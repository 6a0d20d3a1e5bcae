//! Compressed requests and answers over real sockets.

use crate::support;
use flate2::read::GzDecoder;
use flate2::write::{GzEncoder, ZlibEncoder};
use flate2::Compression;
use serde_json::Value;
use shoal_server::ServerConfig;
use std::io::{Read, Write};
use support::{post, send_raw, TestServer, DUMMY_AUTHORIZATION};

const JSON: (&str, &str) = ("Content-Type", "application/x-amz-json-1.0");
const DATE: (&str, &str) = ("X-Amz-Date", "20240101T000000Z");
const AUTH: (&str, &str) = ("Authorization", DUMMY_AUTHORIZATION);
const PUT_ITEM: (&str, &str) = ("X-Amz-Target", "DynamoDB_20120810.PutItem");

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut decoded = Vec::new();
    GzDecoder::new(data).read_to_end(&mut decoded).unwrap();
    decoded
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_and_deflate_request_bodies_are_decoded() {
    let server = TestServer::start(ServerConfig::default()).await;
    let body = r#"{"TableName":"t","Item":{"pk":{"S":"gzipped"}}}"#;
    let request = post(
        &[JSON, PUT_ITEM, DATE, AUTH, ("Content-Encoding", "gzip")],
        &gzip(body.as_bytes()),
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(
        response.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&response.body)
    );
    response.assert_standard_headers();
    assert_eq!(
        response.json(),
        serde_json::from_str::<Value>(body).unwrap()
    );

    let mut zlib = ZlibEncoder::new(Vec::new(), Compression::default());
    zlib.write_all(body.as_bytes()).unwrap();
    let request = post(
        &[JSON, PUT_ITEM, DATE, AUTH, ("Content-Encoding", "deflate")],
        &zlib.finish().unwrap(),
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.json(),
        serde_json::from_str::<Value>(body).unwrap()
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_or_broken_encodings_and_bombs_get_dynamodb_errors() {
    let server = TestServer::start(ServerConfig {
        body_bytes_max: 64 * 1024,
        ..ServerConfig::default()
    })
    .await;
    // Data that does not decode is a body that is not JSON: no message, as DynamoDB sends.
    for coding in ["gzip", "deflate"] {
        let request = post(
            &[JSON, PUT_ITEM, DATE, AUTH, ("Content-Encoding", coding)],
            &[0x1f, 0x8b, 0x08, 0x00, 0xff, 0xff],
        );
        let response = send_raw(server.address, &request).await;
        assert_eq!(response.status, 400, "{coding}");
        response.assert_standard_headers();
        assert_eq!(response.error_code(), "SerializationException");
        assert_eq!(response.json().get("message"), None, "{coding}");
    }
    // A coding Shoal does not know is not undone: the bytes are parsed as sent, so gzip
    // labelled `x-gzip` or `br` is a body that is not JSON, and plain JSON so labelled works.
    let body = r#"{"TableName":"t"}"#;
    for coding in ["x-gzip", "br"] {
        let request = post(
            &[JSON, PUT_ITEM, DATE, AUTH, ("Content-Encoding", coding)],
            &gzip(body.as_bytes()),
        );
        let response = send_raw(server.address, &request).await;
        assert_eq!(response.status, 400, "{coding}");
        assert_eq!(response.error_code(), "SerializationException");
        let request = post(
            &[JSON, PUT_ITEM, DATE, AUTH, ("Content-Encoding", coding)],
            body.as_bytes(),
        );
        let response = send_raw(server.address, &request).await;
        assert_eq!(response.status, 200, "{coding}");
        assert_eq!(response.json()["TableName"], "t");
    }
    // A few hundred bytes that expand past the body cap: refused like a body over it.
    let bomb = gzip(&vec![b' '; 1024 * 1024]);
    assert!(bomb.len() < 64 * 1024);
    let request = post(
        &[JSON, PUT_ITEM, DATE, AUTH, ("Content-Encoding", "gzip")],
        &bomb,
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 413);
    response.assert_standard_headers();
    assert_eq!(response.error_code(), "ValidationException");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_answers_are_gzipped_for_clients_that_accept_it() {
    let server = TestServer::start(ServerConfig::default()).await;
    let large = format!(
        r#"{{"TableName":"t","Item":{{"pk":{{"S":"{}"}}}}}}"#,
        "x".repeat(5000)
    );
    let accept = ("Accept-Encoding", "gzip, deflate");
    let request = post(&[JSON, PUT_ITEM, DATE, AUTH, accept], large.as_bytes());
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-encoding"), Some("gzip"));
    // The CRC32 is of the bytes as sent, the compressed ones.
    response.assert_standard_headers();
    assert!(response.body.len() < 1000, "{}", response.body.len());
    let decoded: Value = serde_json::from_slice(&gunzip(&response.body)).unwrap();
    assert_eq!(decoded, serde_json::from_str::<Value>(&large).unwrap());

    // A client that asks for deflate only gets zlib-wrapped deflate.
    let deflate_only = ("Accept-Encoding", "deflate");
    let request = post(
        &[JSON, PUT_ITEM, DATE, AUTH, deflate_only],
        large.as_bytes(),
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.header("content-encoding"), Some("deflate"));
    response.assert_standard_headers();
    let mut inflated = Vec::new();
    flate2::read::ZlibDecoder::new(&response.body[..])
        .read_to_end(&mut inflated)
        .unwrap();
    let inflated: Value = serde_json::from_slice(&inflated).unwrap();
    assert_eq!(inflated, serde_json::from_str::<Value>(&large).unwrap());

    // Answers under 4 KiB (here 4095 bytes), and clients that do not ask, get plain bodies.
    let under = format!(r#"{{"pad":"{}"}}"#, "y".repeat(4095 - 10));
    assert_eq!(under.len(), 4095);
    let request = post(&[JSON, PUT_ITEM, DATE, AUTH, accept], under.as_bytes());
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.header("content-encoding"), None);
    assert_eq!(response.body.len(), 4095);
    let request = post(&[JSON, PUT_ITEM, DATE, AUTH, accept], b"{\"short\":1}");
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.header("content-encoding"), None);
    assert_eq!(response.json()["short"], 1);
    let request = post(&[JSON, PUT_ITEM, DATE, AUTH], large.as_bytes());
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.header("content-encoding"), None);
    response.assert_standard_headers();
    assert_eq!(response.body.len(), large.len());
    server.stop().await;
}
