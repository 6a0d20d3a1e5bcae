//! The transport's limits over real sockets: request head and body sizes, slow clients,
//! idle connections, connections per client and in all, and the queue for a place.

use crate::support;
use shoal_server::config::{BUSY_CONNECTIONS_PER_CLIENT_MAX_DEFAULT, CONNECTIONS_MAX_DEFAULT};
use shoal_server::ServerConfig;
use std::time::{Duration, Instant};
use support::{
    api_call, api_call_keep_alive, connect_from, post, read_response, send_raw, TestServer,
    DUMMY_AUTHORIZATION, EXCHANGE_TIMEOUT,
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
        response.json()["Message"],
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

/// How soon a well-behaved client must be served while others flood the server (docs/RUNNING.md,
/// "Connection limits").
const SERVED_WITHIN: Duration = Duration::from_secs(2);

/// Tests that open thousands of sockets take turns, so that together they stay within the
/// process's open-files limit.
static SOCKET_HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Checks `response` is the throttle docs/RUNNING.md describes: DynamoDB's
/// `ThrottlingException` (400, its text), then the connection closed.
fn assert_throttled(response: &support::RawResponse) {
    assert_eq!(response.status, 400);
    response.assert_standard_headers();
    assert_eq!(
        response.json()["__type"],
        "com.amazonaws.dynamodb.v20120810#ThrottlingException"
    );
    assert_eq!(
        response.json()["message"],
        "Rate of requests exceeds the allowed throughput."
    );
    assert_eq!(response.header("connection"), Some("close"));
}

/// Whether `received` is the throttle of [`assert_throttled`].
fn is_throttle(received: &[u8]) -> bool {
    received.starts_with(b"HTTP/1.1 400")
        && String::from_utf8_lossy(received).contains("#ThrottlingException")
}

/// Sends `request` on a new connection from `source` without reading the answer yet.
async fn send_from(source: &str, server: std::net::SocketAddr, request: &[u8]) -> TcpStream {
    let mut stream = connect_from(source, server).await;
    stream.write_all(request).await.unwrap();
    stream
}

/// Reads what the server sends on `stream` until it closes it.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    tokio::time::timeout(EXCHANGE_TIMEOUT, stream.read_to_end(&mut received))
        .await
        .expect("the server did not close the connection in time")
        .unwrap();
    received
}

/// Sends `request` on `stream` and reads its answer's status.
async fn exchange(stream: &mut TcpStream, request: &[u8]) -> u16 {
    stream.write_all(request).await.unwrap();
    read_response(stream).await.status
}

/// A new connection's GetItem, answered within [`SERVED_WITHIN`]: its status.
async fn served_within_bound(source: &str, server: std::net::SocketAddr) -> u16 {
    tokio::time::timeout(SERVED_WITHIN, async {
        let mut stream = connect_from(source, server).await;
        stream.write_all(&api_call("GetItem", "{}")).await.unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        support::parse_response(&received).status
    })
    .await
    .expect("a well-behaved client was not served in time")
}

/// Starts PutItems whose bodies are 1000 bytes, of which only a few are sent: each leaves
/// its connection busy until the body deadline.
async fn half_sent_bodies(
    source: &str,
    server: std::net::SocketAddr,
    count: usize,
) -> Vec<TcpStream> {
    let mut streams = Vec::new();
    for _ in 0..count {
        let mut stream = connect_from(source, server).await;
        stream
            .write_all(head_of_put(1000).as_bytes())
            .await
            .unwrap();
        stream.write_all(b"{\"T").await.unwrap();
        streams.push(stream);
    }
    streams
}

/// Opens `count` connections from `source` of which every other one sends half a request
/// head, the rest nothing; each then waits.
async fn silent_and_half_heads(
    source: &str,
    server: std::net::SocketAddr,
    count: usize,
) -> Vec<TcpStream> {
    let mut streams = Vec::new();
    for index in 0..count {
        let mut stream = connect_from(source, server).await;
        if index % 2 == 0 {
            stream
                .write_all(b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Tar")
                .await
                .unwrap();
        }
        streams.push(stream);
    }
    streams
}

/// Waits until `/metrics` shows `busy` requests in flight besides its own.
async fn wait_for_busy(server: std::net::SocketAddr, busy: usize) {
    for _ in 0..500 {
        if support::metric(server, "shoal_busy_connections").await as usize == busy + 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the server never had {busy} requests in flight");
}

async fn slow_bodies_closed(server: std::net::SocketAddr) -> f64 {
    support::metric(
        server,
        "shoal_idle_connections_closed_total{reason=\"slow_body\"}",
    )
    .await
}

/// Opens `count` connections one after another, as a test suite's clients open them: each
/// sends `request`, is answered 200, and is kept open, idle.
async fn idle_keep_alive(
    server: std::net::SocketAddr,
    count: usize,
    request: &[u8],
) -> Vec<TcpStream> {
    let mut idle = Vec::new();
    for _ in 0..count {
        let mut stream = TcpStream::connect(server).await.unwrap();
        assert_eq!(exchange(&mut stream, request).await, 200);
        idle.push(stream);
    }
    idle
}

/// Checks `/metrics` counts no throttle of any kind.
async fn assert_nobody_throttled(server: std::net::SocketAddr) {
    for limit in ["connections_max", "busy_connections_per_client"] {
        for reason in ["queue_full", "wait_over"] {
            assert_eq!(
                throttled(server, limit, reason).await,
                0.0,
                "{limit} {reason}"
            );
        }
    }
}

async fn throttled(server: std::net::SocketAddr, limit: &str, reason: &str) -> f64 {
    support::metric(
        server,
        &format!("shoal_throttled_connections_total{{limit=\"{limit}\",reason=\"{reason}\"}}"),
    )
    .await
}

async fn queued_now(server: std::net::SocketAddr, limit: &str) -> f64 {
    support::metric(
        server,
        &format!("shoal_queued_connections{{limit=\"{limit}\"}}"),
    )
    .await
}

async fn idle_closed(server: std::net::SocketAddr) -> f64 {
    support::metric(
        server,
        "shoal_idle_connections_closed_total{reason=\"connection_limit\"}",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_idle_keep_alive_connections_are_never_refused() {
    let _turn = SOCKET_HEAVY.lock().await;
    let server = TestServer::start(ServerConfig::default()).await;
    let request = api_call_keep_alive("GetItem", "{}");
    let mut idle = idle_keep_alive(server.address, 2000, &request).await;
    assert_eq!(
        support::metric(server.address, "shoal_open_connections").await,
        2001.0
    );
    // New connections are served...
    for _ in 0..100 {
        let mut stream = TcpStream::connect(server.address).await.unwrap();
        assert_eq!(exchange(&mut stream, &request).await, 200);
    }
    // ... and so is every old one, still open.
    for stream in &mut idle {
        assert_eq!(exchange(stream, &request).await, 200);
    }
    assert_nobody_throttled(server.address).await;
    assert_eq!(idle_closed(server.address).await, 0.0);
    drop(idle);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_limit_idle_connections_make_room_oldest_first() {
    let _turn = SOCKET_HEAVY.lock().await;
    const LIMIT: usize = 100;
    let server = TestServer::start(ServerConfig {
        connections_max: LIMIT,
        ..ServerConfig::default()
    })
    .await;
    let request = api_call_keep_alive("GetItem", "{}");
    let mut idle = idle_keep_alive(server.address, 2000, &request).await;
    // The server closed the oldest: those read the end of the stream; the newest are still
    // open and served.
    let mut closed_by_server = Vec::new();
    for (index, stream) in idle.iter_mut().enumerate() {
        let _ = stream.write_all(&request).await;
        let mut buffer = [0u8; 1];
        match stream.peek(&mut buffer).await {
            Ok(read) if read > 0 => assert_eq!(read_response(stream).await.status, 200),
            _ => closed_by_server.push(index),
        }
    }
    assert_eq!(closed_by_server, (0..2000 - LIMIT).collect::<Vec<_>>());
    // Their clients reconnect, as an SDK does, and are served.
    for _ in &closed_by_server {
        let mut fresh = TcpStream::connect(server.address).await.unwrap();
        assert_eq!(exchange(&mut fresh, &request).await, 200);
    }
    // 1,900 to admit the first 2,000, and as many more as reconnections found no room.
    assert!(idle_closed(server.address).await >= (2000 - LIMIT) as f64);
    assert_nobody_throttled(server.address).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_busy_clients_are_all_served() {
    let server = TestServer::start(ServerConfig::default()).await;
    // Every connection has its request in flight at once: its head sent, its body not yet.
    let mut busy = half_sent_bodies("127.0.0.1", server.address, 1000).await;
    wait_for_busy(server.address, 1000).await;
    let mut answers = tokio::task::JoinSet::new();
    for mut stream in busy.drain(..) {
        answers.spawn(async move {
            // The whole body is `{"T":"x…x"}`, 1000 bytes; `{"T` was sent.
            let rest = format!("\":\"{}\"}}", "x".repeat(1000 - 8));
            stream.write_all(rest.as_bytes()).await.unwrap();
            read_response(&mut stream).await.status
        });
    }
    let mut served = 0;
    while let Some(status) = answers.join_next().await {
        // The fake handler echoes the PutItem body back.
        assert_eq!(status.unwrap(), 200);
        served += 1;
    }
    assert_eq!(served, 1000);
    assert_nobody_throttled(server.address).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_slow_client_cannot_take_every_connection() {
    const PER_CLIENT: usize = 4;
    let server = TestServer::start(ServerConfig {
        busy_connections_per_client_max: PER_CLIENT,
        ..ServerConfig::default()
    })
    .await;
    // A slow client: each connection declares a body and sends a few bytes of it, which
    // holds its address's whole allowance.
    let slow = half_sent_bodies("127.0.0.2", server.address, PER_CLIENT).await;
    wait_for_busy(server.address, PER_CLIENT).await;
    // A well-behaved client from another address is served all along, promptly.
    for _ in 0..3 {
        assert_eq!(served_within_bound("127.0.0.3", server.address).await, 200);
    }
    // A whole request from the slow address closes its oldest half body and takes its
    // place; the places of whole requests then serve the next ones.
    for _ in 0..3 {
        assert_eq!(served_within_bound("127.0.0.2", server.address).await, 200);
    }
    assert_eq!(slow_bodies_closed(server.address).await, 1.0);
    // Which half body the server saw stuck the longest follows the order its tasks started
    // reading them, not the order they connected in: one of them, and one only, is closed
    // with the error of a body cut short.
    let mut reads = tokio::task::JoinSet::new();
    for mut stream in slow {
        reads.spawn(async move {
            let mut received = Vec::new();
            let _ = stream.read_to_end(&mut received).await;
            received
        });
    }
    let closed = tokio::time::timeout(EXCHANGE_TIMEOUT, reads.join_next())
        .await
        .expect("no answer in time")
        .expect("a read")
        .expect("the read ran");
    let response = support::parse_response(&closed);
    assert_eq!(response.status, 400);
    assert_eq!(response.error_code(), "SerializationException");
    assert_nobody_throttled(server.address).await;
    reads.abort_all();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_address_limit_requests_wait_and_past_the_queue_are_throttled() {
    let server = TestServer::start(ServerConfig {
        busy_connections_per_client_max: 1,
        queued_connections_max: 1,
        ..ServerConfig::default()
    })
    .await;
    let slow = api_call("DescribeLimits", "{}");
    let quick = api_call("GetItem", "{}");
    // 127.0.0.2's one place is taken by a whole request the handler holds for seconds.
    let started = Instant::now();
    let mut in_flight = send_from("127.0.0.2", server.address, &slow).await;
    wait_for_busy(server.address, 1).await;
    // The next waits for it...
    let mut waiting = send_from("127.0.0.2", server.address, &quick).await;
    for _ in 0..500 {
        if queued_now(server.address, "busy_connections_per_client").await == 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        queued_now(server.address, "busy_connections_per_client").await,
        1.0
    );
    // ... and one more finds the queue full: throttled at once, while the first is in flight.
    let mut over = send_from("127.0.0.2", server.address, &quick).await;
    assert_throttled(&support::parse_response(
        &read_until_closed(&mut over).await,
    ));
    assert!(
        started.elapsed() < support::SLOW_OPERATION,
        "the test was too slow to tell"
    );
    // Both others are answered.
    for stream in [&mut in_flight, &mut waiting] {
        let response = support::parse_response(&read_until_closed(stream).await);
        assert_eq!(response.status, 200);
    }
    assert_eq!(
        throttled(server.address, "busy_connections_per_client", "queue_full").await,
        1.0
    );
    assert_eq!(
        support::metric(
            server.address,
            "shoal_queued_connections_total{limit=\"busy_connections_per_client\"}"
        )
        .await,
        1.0
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_waiting_for_their_bodies_do_not_fill_the_server() {
    let server = TestServer::start(ServerConfig {
        connections_max: 1,
        ..ServerConfig::default()
    })
    .await;
    // An idle connection holds the only place: a new one takes it, and the idle one is
    // closed (its client reads the end of the stream).
    let mut idle = TcpStream::connect(server.address).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(served_within_bound("127.0.0.1", server.address).await, 200);
    assert!(read_until_closed(&mut idle).await.is_empty());
    // A connection waiting for the rest of its body holds it: a new one takes it too, and the
    // slow client is answered and disconnected. (A whole request in flight is never cut off;
    // `admission.rs`'s unit tests refuse a connection then.)
    // (Whether the server had read its head yet, it is closed: answered if it had, as an
    // idle connection if not.)
    let mut slow = half_sent_bodies("127.0.0.2", server.address, 1).await;
    assert_eq!(served_within_bound("127.0.0.1", server.address).await, 200);
    let received = read_until_closed(&mut slow[0]).await;
    if !received.is_empty() {
        let response = support::parse_response(&received);
        assert_eq!(response.status, 400);
        assert_eq!(response.error_code(), "SerializationException");
    }
    assert_nobody_throttled(server.address).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_on_its_way_outlasts_a_connection_left_unused_before_it() {
    // An SDK's pool leaves connections open that never sent a request. At the limit, such
    // a connection, older than a request whose body is still arriving, makes room first:
    // the request is not cut off.
    let server = TestServer::start(ServerConfig {
        connections_max: 3,
        ..ServerConfig::default()
    })
    .await;
    let mut left_unused = connect_from("127.0.0.1", server.address).await;
    let mut on_its_way = half_sent_bodies("127.0.0.1", server.address, 1).await;
    // The server has read its head and waits for the rest.
    wait_for_busy(server.address, 1).await;
    // A newer connection that has sent nothing fills the server (closing, if it is still
    // counted, the connection the metrics were read on: idle between requests).
    let newer = connect_from("127.0.0.1", server.address).await;
    assert_eq!(served_within_bound("127.0.0.1", server.address).await, 200);
    assert!(read_until_closed(&mut left_unused).await.is_empty());
    // The body's rest arrives, and its request is answered.
    on_its_way[0]
        .write_all(format!("\":\"{}\"}}", "x".repeat(992)).as_bytes())
        .await
        .unwrap();
    let response = read_response(&mut on_its_way[0]).await;
    assert_eq!(response.status, 200);
    assert_eq!(slow_bodies_closed(server.address).await, 0.0);
    assert_nobody_throttled(server.address).await;
    drop(newer);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_idle_and_half_sent_heads_leaves_new_clients_served() {
    const LIMIT: usize = 200;
    let server = TestServer::start(ServerConfig {
        connections_max: LIMIT,
        ..ServerConfig::default()
    })
    .await;
    // Five times the limit of connections that send nothing, or half a head, and wait.
    let flood = silent_and_half_heads("127.0.0.2", server.address, 5 * LIMIT).await;
    for source in ["127.0.0.3", "127.0.0.2"] {
        for _ in 0..5 {
            assert_eq!(served_within_bound(source, server.address).await, 200);
        }
    }
    assert_nobody_throttled(server.address).await;
    assert!(idle_closed(server.address).await >= (4 * LIMIT) as f64);
    drop(flood);
    server.stop().await;
}

/// What the clients of a burst read.
#[derive(Debug, Default)]
struct Outcomes {
    ok: usize,
    throttled: usize,
    other: usize,
    /// Could not connect, were reset, or read no whole answer in time.
    no_answer: usize,
    latencies: Vec<Duration>,
}

impl Outcomes {
    /// The latency at percentile `p` (0 to 100).
    fn percentile(&self, p: usize) -> Duration {
        self.latencies[(self.latencies.len() - 1) * p / 100]
    }
}

/// `count` well-behaved clients at once from `source`, each a new connection with a PutItem
/// sent whole, read to the end: what they read.
async fn burst(source: &'static str, server: std::net::SocketAddr, count: usize) -> Outcomes {
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..count {
        clients.spawn(async move {
            let began = Instant::now();
            let exchange = async {
                let socket = tokio::net::TcpSocket::new_v4()?;
                socket.bind(format!("{source}:0").parse().unwrap())?;
                let mut stream = socket.connect(server).await?;
                let body = format!("{{\"T\":\"{}\"}}", "x".repeat(200));
                let request = post(
                    &[JSON, PUT_ITEM, DATE, AUTH, ("Connection", "close")],
                    body.as_bytes(),
                );
                stream.write_all(&request).await?;
                let mut received = Vec::new();
                stream.read_to_end(&mut received).await?;
                Ok::<_, std::io::Error>(received)
            };
            let received = tokio::time::timeout(EXCHANGE_TIMEOUT, exchange).await;
            (received, began.elapsed())
        });
    }
    let mut outcomes = Outcomes::default();
    while let Some(joined) = clients.join_next().await {
        let (received, latency) = joined.unwrap();
        match received {
            Ok(Ok(received)) if received.starts_with(b"HTTP/1.1 200") => outcomes.ok += 1,
            Ok(Ok(received)) if is_throttle(&received) => outcomes.throttled += 1,
            Ok(Ok(received)) if received.starts_with(b"HTTP/1.1 ") => outcomes.other += 1,
            _ => outcomes.no_answer += 1,
        }
        outcomes.latencies.push(latency);
    }
    outcomes.latencies.sort();
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_five_addresses_leaves_a_thousand_concurrent_clients_served() {
    const LIMIT: usize = 3000;
    const PER_ADDRESS: usize = 600;
    let _turn = SOCKET_HEAVY.lock().await;
    let server = TestServer::start(ServerConfig {
        connections_max: LIMIT,
        ..ServerConfig::default()
    })
    .await;
    // From five addresses, as many connections again as the server allows: a fifth send
    // nothing, a fifth half a request head, and the rest half a body, which alone would
    // fill the server (each address under its own busy limit).
    let mut flood = Vec::new();
    for source in [
        "127.0.0.2",
        "127.0.0.3",
        "127.0.0.4",
        "127.0.0.5",
        "127.0.0.6",
    ] {
        flood.extend(silent_and_half_heads(source, server.address, PER_ADDRESS / 2).await);
        flood.extend(half_sent_bodies(source, server.address, PER_ADDRESS).await);
    }
    // A thousand well-behaved clients at once, from one address, each a new connection.
    let started = Instant::now();
    let outcomes = burst("127.0.0.1", server.address, 1000).await;
    println!(
        "flood of {} connections (idle, half heads, half bodies) from 5 addresses, limit {LIMIT}: \
         1000 concurrent clients from 127.0.0.1: {} answered 200, {} throttled, {} other, \
         {} without an answer; latency p50 {:?}, p99 {:?}, max {:?}; burst {:?}; \
         slow bodies closed {}, idle closed {}",
        flood.len(),
        outcomes.ok,
        outcomes.throttled,
        outcomes.other,
        outcomes.no_answer,
        outcomes.percentile(50),
        outcomes.percentile(99),
        outcomes.percentile(100),
        started.elapsed(),
        slow_bodies_closed(server.address).await,
        idle_closed(server.address).await,
    );
    assert_eq!(outcomes.ok, 1000, "{outcomes:?}");
    // Half bodies were what made room once the idle connections were gone.
    assert!(slow_bodies_closed(server.address).await > 0.0);
    // And a new client after the burst is served within the bound.
    assert_eq!(served_within_bound("127.0.0.7", server.address).await, 200);
    assert_nobody_throttled(server.address).await;
    drop(flood);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_at_the_default_limit_leaves_every_client_of_a_burst_answered() {
    // Over the default limit: the burst's own address holds its whole busy allowance with half
    // bodies, the rest send nothing or half a head from four other addresses.
    const FLOOD: usize = CONNECTIONS_MAX_DEFAULT + 100;
    const HALF_BODIES: usize = BUSY_CONNECTIONS_PER_CLIENT_MAX_DEFAULT;
    const BURST: usize = 1000;
    const OTHER_SOURCES: [&str; 4] = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"];
    let _turn = SOCKET_HEAVY.lock().await;
    // Both ends of every connection are in this process: the flood's and the burst's client
    // ends, the server's (at most its limit, the queue and the throttles in flight), and a
    // reserve for the rest.
    let descriptors = (FLOOD + BURST + CONNECTIONS_MAX_DEFAULT + 2048) as u64;
    // `None`: no limit.
    let soft_limit = shoal_server::raise_open_files_limit(descriptors).map(|(soft, _)| soft);
    if soft_limit.is_some_and(|soft| soft < descriptors) {
        println!("skipped: the open-files limit cannot be raised to {descriptors}");
        return;
    }
    let server = TestServer::start(ServerConfig::default()).await;
    let flood_started = Instant::now();
    let mut flood = half_sent_bodies("127.0.0.1", server.address, HALF_BODIES).await;
    for source in OTHER_SOURCES {
        let count = (FLOOD - HALF_BODIES) / OTHER_SOURCES.len();
        flood.extend(silent_and_half_heads(source, server.address, count).await);
    }
    // The server has taken them all in (each one past the limit closed another).
    for _ in 0..500 {
        let open = support::metric(server.address, "shoal_open_connections").await as usize;
        if open >= CONNECTIONS_MAX_DEFAULT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let flood_opened = flood_started.elapsed();
    let burst_started = Instant::now();
    let outcomes = burst("127.0.0.1", server.address, BURST).await;
    let burst_took = burst_started.elapsed();
    let new_client_started = Instant::now();
    let new_client = served_within_bound("127.0.0.1", server.address).await;
    let new_client_took = new_client_started.elapsed();
    let metric = |name: &'static str| support::metric(server.address, name);
    println!(
        "flood of {} connections ({HALF_BODIES} half bodies from 127.0.0.1, the rest silent or \
         half heads from {} other addresses) at the default limit of {CONNECTIONS_MAX_DEFAULT}, \
         opened in {flood_opened:?}; {BURST} concurrent clients from 127.0.0.1: {} answered 200, \
         {} throttled, {} other, {} without an answer; latency min {:?}, p50 {:?}, p99 {:?}, \
         max {:?}; burst {burst_took:?}; then a new client from 127.0.0.1 answered {new_client} in \
         {new_client_took:?}; slow bodies closed {}, idle closed {}, queued at the address \
         limit {}, at the connection limit {}",
        flood.len(),
        OTHER_SOURCES.len(),
        outcomes.ok,
        outcomes.throttled,
        outcomes.other,
        outcomes.no_answer,
        outcomes.percentile(0),
        outcomes.percentile(50),
        outcomes.percentile(99),
        outcomes.percentile(100),
        slow_bodies_closed(server.address).await,
        idle_closed(server.address).await,
        metric("shoal_queued_connections_total{limit=\"busy_connections_per_client\"}").await,
        metric("shoal_queued_connections_total{limit=\"connections_max\"}").await,
    );
    // Every client is answered: served, or throttled as DynamoDB throttles; none is reset or
    // left waiting.
    assert_eq!(outcomes.ok + outcomes.throttled, BURST, "{outcomes:?}");
    assert_eq!(new_client, 200);
    drop(flood);
    server.stop().await;
}
