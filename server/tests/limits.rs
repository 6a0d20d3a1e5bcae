//! The transport's limits over real sockets: request head and body sizes, slow clients,
//! idle connections, and connections per client and in all.

mod support;

use shoal_server::ServerConfig;
use std::time::Duration;
use support::{
    api_call, connect_from, post, read_response, send_raw, TestServer, DUMMY_AUTHORIZATION,
    EXCHANGE_TIMEOUT,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const JSON: (&str, &str) = ("Content-Type", "application/x-amz-json-1.0");
const DATE: (&str, &str) = ("X-Amz-Date", "20240101T000000Z");
const AUTH: (&str, &str) = ("Authorization", DUMMY_AUTHORIZATION);
const PUT_ITEM: (&str, &str) = ("X-Amz-Target", "DynamoDB_20120810.PutItem");

/// The head of a PutItem whose body is `length` bytes long, none of them sent yet.
fn head_of_put(length: usize) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n\
         X-Amz-Target: DynamoDB_20120810.PutItem\r\nX-Amz-Date: 20240101T000000Z\r\n\
         Authorization: {DUMMY_AUTHORIZATION}\r\nContent-Length: {length}\r\n\r\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_get_413() {
    // Default cap: a declared Content-Length over 16 MiB is answered before the body is sent.
    let server = TestServer::start(ServerConfig::default()).await;
    let mut stream = TcpStream::connect(server.address).await.unwrap();
    let head = head_of_put(16 * 1024 * 1024 + 1);
    stream.write_all(head.as_bytes()).await.unwrap();
    let response = read_response(&mut stream).await;
    assert_eq!(response.status, 413);
    response.assert_standard_headers();
    assert_eq!(response.error_code(), "ValidationException");
    assert_eq!(
        response.json()["message"],
        "Request size exceeds 16777216 bytes"
    );
    server.stop().await;

    // A small cap and a chunked body with no declared length: the limit is enforced while reading.
    let server = TestServer::start(ServerConfig {
        body_bytes_max: 1024,
        ..ServerConfig::default()
    })
    .await;
    let at_limit = format!("{{\"k\":\"{}\"}}", "x".repeat(1024 - 8));
    assert_eq!(at_limit.len(), 1024);
    let response = send_raw(server.address, &api_call("PutItem", &at_limit)).await;
    assert_eq!(response.status, 200);

    let over_limit = format!("{{\"k\":\"{}\"}}", "x".repeat(1024));
    let chunked = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n\
         X-Amz-Target: DynamoDB_20120810.PutItem\r\nTransfer-Encoding: chunked\r\n\r\n\
         {:x}\r\n{over_limit}\r\n0\r\n\r\n",
        over_limit.len()
    );
    let response = send_raw(server.address, chunked.as_bytes()).await;
    assert_eq!(response.status, 413);
    response.assert_standard_headers();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sending_a_body_over_the_cap_reads_413_not_a_reset() {
    let server = TestServer::start(ServerConfig::default()).await;
    let body = vec![b' '; 16 * 1024 * 1024 + 1024];
    let request = post(&[JSON, PUT_ITEM, DATE, AUTH], &body);
    let stream = TcpStream::connect(server.address).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    // Sends the whole body, as an SDK does, while the answer comes back.
    let sender = tokio::spawn(async move { writer.write_all(&request).await });
    let mut received = Vec::new();
    tokio::time::timeout(EXCHANGE_TIMEOUT, reader.read_to_end(&mut received))
        .await
        .expect("no answer in time")
        .expect("the connection was reset instead of answered");
    sender
        .await
        .unwrap()
        .expect("the body could not be sent: the connection was reset");
    let response = support::parse_response(&received);
    assert_eq!(response.status, 413);
    response.assert_standard_headers();
    assert_eq!(response.error_code(), "ValidationException");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_over_16_kib_get_400_with_an_error_body() {
    let server = TestServer::start(ServerConfig::default()).await;
    let padding = "v".repeat(17 * 1024);
    let request = post(
        &[JSON, PUT_ITEM, DATE, AUTH, ("X-Padding", &padding)],
        b"{}",
    );
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 400);
    response.assert_standard_headers();
    assert_eq!(response.error_code(), "ValidationException");
    assert_eq!(
        response.json()["message"],
        "Request headers exceed 16384 bytes"
    );

    let long_line = format!(
        "POST /?{padding} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    );
    let response = send_raw(server.address, long_line.as_bytes()).await;
    assert_eq!(response.status, 400);
    response.assert_standard_headers();
    assert_eq!(
        response.json()["message"],
        "Request line exceeds 16384 bytes"
    );

    // Just under the cap is served.
    let padding = "v".repeat(15 * 1024);
    let request = post(
        &[JSON, PUT_ITEM, DATE, AUTH, ("X-Padding", &padding)],
        b"{}",
    );
    assert_eq!(send_raw(server.address, &request).await.status, 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_too_large_for_hyper_get_its_431() {
    let server = TestServer::start(ServerConfig::default()).await;
    let huge = "v".repeat(100 * 1024);
    let request = post(&[JSON, PUT_ITEM, DATE, AUTH, ("X-Padding", &huge)], b"{}");
    let response = send_raw(server.address, &request).await;
    assert_eq!(response.status, 431);
    // The server is still there.
    assert_eq!(
        send_raw(server.address, &api_call("GetItem", "{}"))
            .await
            .status,
        200
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_http_gets_what_hyper_allows() {
    let server = TestServer::start(ServerConfig::default()).await;
    // Broken chunked framing is found while the service reads the body: a DynamoDB error.
    let broken_chunks =
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n\
         X-Amz-Target: DynamoDB_20120810.PutItem\r\nTransfer-Encoding: chunked\r\n\r\n\
         zz\r\n{}\r\n0\r\n\r\n";
    let response = send_raw(server.address, broken_chunks.as_bytes()).await;
    assert_eq!(response.status, 400);
    response.assert_standard_headers();
    assert_eq!(response.error_code(), "SerializationException");
    // A Content-Length that is not a number never reaches the service: hyper answers 400
    // without a body.
    let bad_length = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n\
         Content-Length: twelve\r\n\r\n{}";
    let response = send_raw(server.address, bad_length.as_bytes()).await;
    assert_eq!(response.status, 400);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_sent_too_slowly_is_answered_and_the_connection_closed() {
    let server = TestServer::start(ServerConfig {
        body_read_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    })
    .await;
    let mut stream = TcpStream::connect(server.address).await.unwrap();
    stream.write_all(head_of_put(100).as_bytes()).await.unwrap();
    stream.write_all(b"{\"Tab").await.unwrap();
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut received))
        .await
        .expect("a slow body held the connection")
        .unwrap();
    let response = support::parse_response(&received);
    assert_eq!(response.status, 400);
    response.assert_standard_headers();
    assert_eq!(response.error_code(), "SerializationException");
    assert_eq!(
        response.json()["message"],
        "The request body was not received within 0.3 seconds"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connections_are_closed() {
    let server = TestServer::start(ServerConfig {
        header_read_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    })
    .await;
    let mut stream = TcpStream::connect(server.address).await.unwrap();
    let body = "{}";
    stream
        .write_all(format!("{}{body}", head_of_put(body.len())).as_bytes())
        .await
        .unwrap();
    assert_eq!(read_response(&mut stream).await.status, 200);
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest))
        .await
        .expect("an idle keep-alive connection stayed open");
    assert!(read.is_ok() && rest.is_empty(), "{read:?} {rest:?}");
    server.stop().await;
}

/// Sends a request over a connection that is over a limit and checks it is throttled.
async fn assert_throttled(mut stream: TcpStream) {
    // The server may already have answered and closed: the answer is what matters.
    let _ = stream.write_all(&api_call("GetItem", "{}")).await;
    let mut received = Vec::new();
    let _ = tokio::time::timeout(EXCHANGE_TIMEOUT, stream.read_to_end(&mut received))
        .await
        .expect("no answer in time");
    let response = support::parse_response(&received);
    assert_eq!(response.status, 400);
    response.assert_standard_headers();
    assert_eq!(
        response.json()["__type"],
        "com.amazonaws.dynamodb.v20120810#ThrottlingException"
    );
    assert_eq!(response.header("connection"), Some("close"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_slow_client_cannot_take_every_connection() {
    const PER_CLIENT: usize = 4;
    let server = TestServer::start(ServerConfig {
        connections_per_client_max: PER_CLIENT,
        ..ServerConfig::default()
    })
    .await;
    // A slow client: each connection declares a body and sends a few bytes of it.
    let mut slow = Vec::new();
    for _ in 0..PER_CLIENT {
        let mut stream = connect_from("127.0.0.2", server.address).await;
        stream
            .write_all(head_of_put(1000).as_bytes())
            .await
            .unwrap();
        stream.write_all(b"{\"T").await.unwrap();
        slow.push(stream);
    }
    // Its connections are being served (their bodies are awaited) before the next comes in.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..3 {
        assert_throttled(connect_from("127.0.0.2", server.address).await).await;
    }
    // A well-behaved client from another address is served all along.
    for _ in 0..3 {
        let mut stream = connect_from("127.0.0.3", server.address).await;
        stream.write_all(&api_call("GetItem", "{}")).await.unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        assert!(
            received.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&received)
        );
    }
    // Once the slow client lets go, it may connect again.
    drop(slow);
    let mut served = false;
    for _ in 0..50 {
        let mut stream = connect_from("127.0.0.2", server.address).await;
        stream.write_all(&api_call("GetItem", "{}")).await.unwrap();
        let mut received = Vec::new();
        let _ = stream.read_to_end(&mut received).await;
        if received.starts_with(b"HTTP/1.1 200") {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served, "the slow client's freed slots were never reused");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_total_are_throttled() {
    let server = TestServer::start(ServerConfig {
        connections_max: 1,
        ..ServerConfig::default()
    })
    .await;
    let idle = TcpStream::connect(server.address).await.unwrap();
    // Give the server time to accept `idle` first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_throttled(TcpStream::connect(server.address).await.unwrap()).await;
    drop(idle);
    // Once the idle connection is gone its slot frees up.
    let mut served = false;
    for _ in 0..50 {
        let mut stream = TcpStream::connect(server.address).await.unwrap();
        let _ = stream.write_all(&api_call("GetItem", "{}")).await;
        let mut received = Vec::new();
        let _ = tokio::time::timeout(EXCHANGE_TIMEOUT, stream.read_to_end(&mut received))
            .await
            .unwrap();
        if received.starts_with(b"HTTP/1.1 200") {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served, "the freed slot was never reused");
    server.stop().await;
}
