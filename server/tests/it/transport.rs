//! The transport over real sockets with a fake handler: the pipeline's errors, the standard
//! response headers, health, metrics, limits and shutdown.

use crate::support;
use serde_json::json;
use shoal_server::ServerConfig;
use support::{api_call, post, send_raw, TestServer, DUMMY_AUTHORIZATION};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const JSON: (&str, &str) = ("Content-Type", "application/x-amz-json-1.0");
const DATE: (&str, &str) = ("X-Amz-Date", "20240101T000000Z");
const AUTH: (&str, &str) = ("Authorization", DUMMY_AUTHORIZATION);
const PUT_ITEM: (&str, &str) = ("X-Amz-Target", "DynamoDB_20120810.PutItem");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_echoes_with_standard_headers() {
    let server = TestServer::start(ServerConfig::default()).await;
    let body = r#"{"TableName":"t","Item":{"pk":{"S":"é\u0000"}}}"#;
    let response = send_raw(server.address, &api_call("PutItem", body)).await;
    assert_eq!(response.status, 200);
    response.assert_standard_headers();
    assert_eq!(
        response.header("content-type"),
        Some("application/x-amz-json-1.0")
    );
    assert_eq!(
        response.json(),
        serde_json::from_str::<serde_json::Value>(body).unwrap()
    );

    // `application/json` is accepted too, and answered in it; an empty body counts as `{}`.
    let request = post(
        &[("Content-Type", "application/json"), PUT_ITEM, DATE, AUTH],
        b"",
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"{}");
    assert_eq!(response.header("content-type"), Some("application/json"));
    // So does a blank one, whatever its length (two bytes, as long as `{}`, included).
    for blank in [&b"  "[..], b"\r\n", b" \n\t "] {
        let request = post(&[JSON, PUT_ITEM, DATE, AUTH], blank);
        let response = send_raw(server.address, &request).await;
        assert_eq!(response.status, 200, "{blank:?}");
        assert_eq!(response.body, b"{}", "{blank:?}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_in_the_json_dialect_of_the_request() {
    let server = TestServer::start(ServerConfig::default()).await;
    let plain = ("Content-Type", "application/json; charset=utf-8");
    // Successes and errors alike, the pipeline's own (an unknown operation) included.
    for (headers, status) in [
        (vec![plain, PUT_ITEM, DATE, AUTH], 200),
        (
            vec![
                plain,
                ("X-Amz-Target", "DynamoDB_20120810.Nope"),
                DATE,
                AUTH,
            ],
            400,
        ),
        (vec![plain, PUT_ITEM, DATE], 400),
    ] {
        let response = send_raw(server.address, &post(&headers, b"{}")).await;
        assert_eq!(response.status, status, "{headers:?}");
        assert_eq!(response.header("content-type"), Some("application/json"));
        response.assert_standard_headers();
    }
    // JSON 1.0, and a request with neither content type nor body, get JSON 1.0.
    for headers in [vec![JSON, PUT_ITEM, DATE, AUTH], vec![PUT_ITEM, DATE, AUTH]] {
        let response = send_raw(server.address, &post(&headers, b"")).await;
        assert_eq!(response.status, 200);
        assert_eq!(
            response.header("content-type"),
            Some("application/x-amz-json-1.0")
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_null_result_is_answered_with_an_empty_object() {
    let server = TestServer::start(ServerConfig::default()).await;
    let response = send_raw(server.address, &api_call("GetItem", "{}")).await;
    assert_eq!(response.status, 200);
    response.assert_standard_headers();
    assert_eq!(response.body, b"{}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_pipeline_error_gets_its_dynamodb_error() {
    let server = TestServer::start(ServerConfig::default()).await;
    let address = server.address;
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        ("bad json", api_call("PutItem", "{\"TableName\":"), "com.amazon.coral.service#SerializationException", ""),
        ("json array", api_call("PutItem", "[1]"), "com.amazon.coral.service#SerializationException", ""),
        ("unknown target", api_call("Frobnicate", "{}"), "com.amazon.coral.service#UnknownOperationException", ""),
        (
            "missing target",
            post(&[JSON, DATE, AUTH], b"{}"),
            "com.amazon.coral.service#UnknownOperationException",
            "",
        ),
        (
            "missing auth",
            post(&[JSON, PUT_ITEM, DATE], b"{}"),
            "com.amazon.coral.service#MissingAuthenticationTokenException",
            "Request is missing Authentication Token",
        ),
        (
            "malformed auth",
            post(&[JSON, PUT_ITEM, DATE, ("Authorization", "AWS4-HMAC-SHA256 Signature=abc")], b"{}"),
            "com.amazon.coral.service#IncompleteSignatureException",
            "Authorization header requires 'Credential' parameter. Authorization header requires 'SignedHeaders' parameter. Authorization=AWS4-HMAC-SHA256 Signature=abc",
        ),
        (
            "auth without a date",
            post(&[JSON, PUT_ITEM, AUTH], b"{}"),
            "com.amazon.coral.service#IncompleteSignatureException",
            "",
        ),
    ];
    for (name, request, expected_type, expected_message) in cases {
        let response = send_raw(address, &request).await;
        assert_eq!(response.status, 400, "{name}");
        response.assert_standard_headers();
        let body = response.json();
        assert_eq!(body["__type"], expected_type, "{name}: {body}");
        if !expected_message.is_empty() {
            assert_eq!(body["message"], expected_message, "{name}");
        }
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_api_requests_get_404_unknown_operation() {
    let server = TestServer::start(ServerConfig::default()).await;
    let wrong_type = post(
        &[("Content-Type", "text/plain"), PUT_ITEM, DATE, AUTH],
        b"{}",
    );
    let no_type = post(&[PUT_ITEM, DATE, AUTH], b"{}");
    let put =
        b"PUT / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".to_vec();
    let get_other = b"GET /tables HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec();
    // The API lives at `/` only.
    let mut post_other = post(&[JSON, PUT_ITEM, DATE, AUTH], b"{}");
    post_other.splice(0..6, b"POST /tables".iter().copied());
    for request in [wrong_type, no_type, put, get_other, post_other] {
        let response = send_raw(server.address, &request).await;
        assert_eq!(response.status, 404);
        response.assert_standard_headers();
        assert_eq!(response.body, b"<UnknownOperationException/>\n");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_with_neither_body_nor_content_type_is_read_as_json() {
    let server = TestServer::start(ServerConfig::default()).await;
    // `curl -X POST`: no body, no content type, no target.
    let bare = b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let response = send_raw(server.address, bare).await;
    assert_eq!(response.status, 400);
    response.assert_standard_headers();
    assert_eq!(
        response.json(),
        json!({"__type": "com.amazon.coral.service#UnknownOperationException"})
    );
    // With a target, the pipeline goes on to authentication.
    let targeted = post(&[PUT_ITEM], b"");
    let response = send_raw(server.address, &targeted).await;
    assert_eq!(response.status, 400);
    assert_eq!(response.error_code(), "MissingAuthenticationTokenException");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handler_is_told_the_region_of_the_credential_scope() {
    let server = TestServer::start(ServerConfig::default()).await;
    let in_region = "AWS4-HMAC-SHA256 Credential=AKID/20261124/eu-west-1/dynamodb/aws4_request, \
                     SignedHeaders=host;x-amz-date, Signature=0123456789abcdef";
    let describe = ("X-Amz-Target", "DynamoDB_20120810.DescribeTable");
    let request = post(&[JSON, describe, DATE, ("Authorization", in_region)], b"{}");
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.json(), json!({"Region": "eu-west-1"}));
    // A scope whose region could not stand in an ARN names none.
    let odd_region = in_region.replace("eu-west-1", "eu:west");
    let request = post(
        &[JSON, describe, DATE, ("Authorization", &odd_region)],
        b"{}",
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.json(), json!({"Region": null}));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_errors_keep_their_namespace_status_and_extra_fields() {
    let server = TestServer::start(ServerConfig::default()).await;
    let response = send_raw(server.address, &api_call("DeleteItem", "{}")).await;
    assert_eq!(response.status, 400);
    response.assert_standard_headers();
    assert_eq!(
        response.json(),
        json!({"__type": "com.amazon.coral.validate#ValidationException", "message": "canned validation"})
    );

    let response = send_raw(server.address, &api_call("TransactWriteItems", "{}")).await;
    assert_eq!(response.status, 400);
    let body = response.json();
    assert_eq!(
        body["__type"],
        "com.amazonaws.dynamodb.v20120810#TransactionCanceledException"
    );
    assert_eq!(
        body["CancellationReasons"][0]["Code"],
        "ConditionalCheckFailed"
    );

    let response = send_raw(server.address, &api_call("Scan", "{}")).await;
    assert_eq!(response.status, 500);
    assert_eq!(response.error_code(), "InternalServerError");

    // A panicking handler is a 500, and the server goes on serving, whether the operation ran
    // inline (Query) or on the blocking pool (UpdateItem).
    for operation in ["Query", "UpdateItem"] {
        let response = send_raw(server.address, &api_call(operation, "{}")).await;
        assert_eq!(response.status, 500, "{operation}");
        response.assert_standard_headers();
        assert_eq!(response.error_code(), "InternalServerError");
        let response = send_raw(server.address, &api_call("GetItem", "{}")).await;
        assert_eq!(response.status, 200);
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_nesting_is_a_serialization_error_not_a_crash() {
    let server = TestServer::start(ServerConfig::default()).await;
    let depth = 50_000;
    let deep_list = format!("{{\"a\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
    let deep_map = format!("{}1{}", "{\"M\":".repeat(depth), "}".repeat(depth));
    for body in [deep_list, deep_map] {
        let response = send_raw(server.address, &api_call("PutItem", &body)).await;
        assert_eq!(response.status, 400);
        response.assert_standard_headers();
        assert_eq!(response.error_code(), "SerializationException");
    }
    // Nesting within serde_json's limit passes through to the handler.
    let shallow = format!("{{\"a\":{}{}}}", "[".repeat(100), "]".repeat(100));
    let response = send_raw(server.address, &api_call("PutItem", &shallow)).await;
    assert_eq!(response.status, 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answer() {
    let server = TestServer::start(ServerConfig::default()).await;
    let response = send_raw(
        server.address,
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(response.status, 200);
    response.assert_standard_headers();
    // It names the host the client addressed, as DynamoDB's endpoints name themselves.
    assert_eq!(response.body, b"healthy: x ");
    let response = send_raw(
        server.address,
        b"GET / HTTP/1.1\r\nHost: localhost:8000\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(response.body, b"healthy: localhost:8000 ");
    // A request naming no host (HTTP/1.0) gets the region's endpoint.
    let response = send_raw(server.address, b"GET / HTTP/1.0\r\n\r\n").await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"healthy: dynamodb.us-east-1.amazonaws.com ");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_by_operation_and_rejection() {
    let server = TestServer::start(ServerConfig::default()).await;
    for _ in 0..3 {
        assert_eq!(
            send_raw(server.address, &api_call("PutItem", "{}"))
                .await
                .status,
            200
        );
    }
    assert_eq!(
        send_raw(server.address, &api_call("DeleteItem", "{}"))
            .await
            .status,
        400
    );
    assert_eq!(
        send_raw(server.address, &api_call("PutItem", "{"))
            .await
            .status,
        400
    );
    let response = send_raw(
        server.address,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(response.status, 200);
    response.assert_standard_headers();
    let page = String::from_utf8(response.body).unwrap();
    for line in [
        "shoal_requests_total{operation=\"PutItem\",outcome=\"success\"} 3",
        "shoal_requests_total{operation=\"DeleteItem\",outcome=\"client_error\"} 1",
        "shoal_request_duration_seconds_count{operation=\"PutItem\"} 3",
        "shoal_rejected_requests_total{reason=\"SerializationException\"} 1",
        "shoal_http_requests_total 6",
        "shoal_fake_engine_gauge 7",
    ] {
        assert!(
            page.lines().any(|candidate| candidate == line),
            "missing {line}:\n{page}"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_are_all_answered() {
    const CLIENTS: usize = 32;
    const REQUESTS_PER_CLIENT: usize = 4;
    let server = TestServer::start(ServerConfig::default()).await;
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let address = server.address;
        clients.push(tokio::spawn(async move {
            for request in 0..REQUESTS_PER_CLIENT {
                let body = format!("{{\"client\":{client},\"request\":{request}}}");
                let response = send_raw(address, &api_call("PutItem", &body)).await;
                assert_eq!(response.status, 200);
                response.assert_standard_headers();
                assert_eq!(response.json()["client"], client);
                assert_eq!(response.json()["request"], request);
            }
        }));
    }
    for client in clients {
        client.await.unwrap();
    }
    let metrics = send_raw(
        server.address,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    let expected = format!(
        "shoal_requests_total{{operation=\"PutItem\",outcome=\"success\"}} {}",
        CLIENTS * REQUESTS_PER_CLIENT
    );
    let page = String::from_utf8(metrics.body).unwrap();
    assert!(page.lines().any(|line| line == expected), "{page}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_serves_several_requests_on_one_connection() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut stream = TcpStream::connect(server.address).await.unwrap();
    for round in 0..3 {
        let body = format!("{{\"round\":{round}}}");
        let request = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n\
             X-Amz-Target: DynamoDB_20120810.PutItem\r\nX-Amz-Date: 20240101T000000Z\r\n\
             Authorization: {DUMMY_AUTHORIZATION}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let response = support::read_response(&mut stream).await;
        assert_eq!(response.status, 200);
        assert_eq!(response.json()["round"], round);
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_accepting() {
    let server = TestServer::start(ServerConfig::default()).await;
    let address = server.address;
    server.stop().await;
    assert!(
        TcpStream::connect(address).await.is_err(),
        "still accepting after shutdown"
    );
}

/// A browser's preflight from `origin`, asking to POST with the SDK's headers.
fn preflight(origin: &str) -> Vec<u8> {
    format!(
        "OPTIONS / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nOrigin: {origin}\r\n\
         Access-Control-Request-Method: POST\r\n\
         Access-Control-Request-Headers: content-type,x-amz-target,x-amz-date,authorization\r\n\r\n"
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_answers_browsers_from_any_origin_by_default() {
    let server = TestServer::start(ServerConfig::default()).await;
    let origin = "http://localhost:3000";
    let response = send_raw(server.address, &preflight(origin)).await;
    assert_eq!(response.status, 200);
    // Any origin is allowed as DynamoDB Local allows it: `*`, not the origin echoed.
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert_eq!(response.header("vary"), None);
    assert_eq!(
        response.header("access-control-allow-headers"),
        Some("content-type,x-amz-target,x-amz-date,authorization")
    );
    assert!(response
        .header("access-control-allow-methods")
        .is_some_and(|methods| methods.contains("POST")));

    // The call itself allows any origin and exposes the headers the SDKs read.
    let body = r#"{"TableName":"t"}"#;
    let request = post(
        &[JSON, PUT_ITEM, DATE, AUTH, ("Origin", origin)],
        body.as_bytes(),
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert!(response
        .header("access-control-expose-headers")
        .is_some_and(
            |exposed| exposed.contains("x-amzn-RequestId") && exposed.contains("x-amz-crc32")
        ));
    // Errors carry it too, or the page could not read why its call failed.
    let request = post(&[JSON, DATE, AUTH, ("Origin", origin)], b"{}");
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 400);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));

    // So do answers outside the API.
    let request = format!(
        "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\nOrigin: {origin}\r\n\r\n"
    );
    let response = send_raw(server.address, request.as_bytes()).await;
    assert_eq!(response.status, 404);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));

    // An OPTIONS naming only its origin is answered as a preflight too.
    let request =
        format!("OPTIONS / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nOrigin: {origin}\r\n\r\n");
    let response = send_raw(server.address, request.as_bytes()).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    assert!(response
        .header("access-control-allow-methods")
        .is_some_and(|methods| methods.contains("POST")));
    assert!(response
        .header("access-control-allow-headers")
        .is_some_and(|headers| headers.contains("x-amz-target")));

    // A request without an Origin (every SDK outside a browser) gets no CORS headers.
    let response = send_raw(server.address, &api_call("PutItem", body)).await;
    assert_eq!(response.header("access-control-allow-origin"), None);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_allow_list_admits_only_its_origins() {
    let config = ServerConfig {
        cors: Some(shoal_server::CorsOrigins::parse("https://app.example").unwrap()),
        ..ServerConfig::default()
    };
    let server = TestServer::start(config).await;
    let response = send_raw(server.address, &preflight("https://app.example")).await;
    assert_eq!(
        response.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(response.header("vary"), Some("Origin"));
    let request = post(
        &[
            JSON,
            PUT_ITEM,
            DATE,
            AUTH,
            ("Origin", "https://app.example"),
        ],
        b"{}",
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(
        response.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let response = send_raw(server.address, &preflight("https://evil.example")).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), None);
    assert_eq!(response.header("access-control-allow-methods"), None);
    server.stop().await;
}
