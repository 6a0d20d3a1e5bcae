//! A server on 127.0.0.1:0 with a fake handler, and a tiny raw HTTP/1.1 client, so tests see
//! exactly the bytes a DynamoDB client would.

#![allow(dead_code)] // each test file uses a different part of this module

use serde_json::{json, Value};
use shoal_model::{ApiError, ErrorCode};
use shoal_server::{DynamoHandler, ServerConfig};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long any single exchange may take before the test fails instead of hanging.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the fake handler's `DescribeLimits` takes.
pub const SLOW_OPERATION: Duration = Duration::from_secs(3);

/// Echoes `PutItem`, answers `GetItem` with `null` (→ `{}`), and fails the others in canned ways.
pub struct FakeHandler;

impl DynamoHandler for FakeHandler {
    fn operations(&self) -> &[&'static str] {
        &[
            "PutItem",
            "GetItem",
            "DeleteItem",
            "TransactWriteItems",
            "BatchWriteItem",
            "DescribeTable",
            "Scan",
            "Query",
            "UpdateItem",
            "DescribeLimits",
        ]
    }

    /// Query and GetItem run on the connection's task, the rest on the blocking pool, so the
    /// tests cover both paths (including a panic on each).
    fn runs_inline(&self, operation: &str) -> bool {
        matches!(operation, "Query" | "GetItem")
    }

    fn handle(
        &self,
        operation: &str,
        body: &[u8],
        region: Option<&str>,
    ) -> Result<Vec<u8>, ApiError> {
        match operation {
            "DescribeTable" => Ok(json!({ "Region": region }).to_string().into_bytes()),
            "PutItem" => Ok(serde_json::from_slice::<Value>(body)
                .map_err(|e| ApiError::serialization(e.to_string()))?
                .to_string()
                .into_bytes()),
            "GetItem" => Ok(b"{}".to_vec()),
            // Stands for a write waiting on the WAL's fsync.
            "BatchWriteItem" => {
                std::thread::sleep(Duration::from_millis(100));
                Ok(b"{}".to_vec())
            }
            // A request that stays in flight long enough for others to queue behind it.
            "DescribeLimits" => {
                std::thread::sleep(SLOW_OPERATION);
                Ok(b"{}".to_vec())
            }
            "DeleteItem" => Err(ApiError::validation("canned validation")),
            "TransactWriteItems" => Err(ApiError::new(
                ErrorCode::TransactionCanceledException,
                "Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed]",
            )
            .with_extra(
                "CancellationReasons",
                json!([{"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}]),
            )),
            "Scan" => Err(ApiError::new(ErrorCode::InternalServerError, "canned internal")),
            "Query" => panic!("canned handler panic, inline"),
            "UpdateItem" => panic!("canned handler panic, on the blocking pool"),
            _ => Err(ApiError::new(ErrorCode::UnknownOperationException, "")),
        }
    }

    fn render_metrics(&self, out: &mut String) {
        out.push_str("# TYPE shoal_fake_engine_gauge gauge\nshoal_fake_engine_gauge 7\n");
    }
}

pub struct TestServer {
    pub address: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), shoal_server::ServerError>>>,
}

impl TestServer {
    pub async fn start(config: ServerConfig) -> TestServer {
        let config = ServerConfig {
            host: "127.0.0.1".to_owned(),
            port: 0,
            ..config
        };
        let listener = shoal_server::bind(&config).await.unwrap();
        let address = listener.local_addr().unwrap();
        let (shutdown, shutdown_signal) = oneshot::channel::<()>();
        let task = tokio::spawn(shoal_server::serve(
            listener,
            Arc::new(FakeHandler),
            config,
            async move {
                let _ = shutdown_signal.await;
            },
        ));
        TestServer {
            address,
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }

    /// Signals shutdown and waits for `serve` to return.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(EXCHANGE_TIMEOUT, task)
                .await
                .expect("serve did not return after shutdown")
                .unwrap()
                .unwrap();
        }
    }
}

#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "body is not JSON ({error}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The error code after `#` in `__type`.
    pub fn error_code(&self) -> String {
        let json = self.json();
        let error_type = json["__type"].as_str().expect("no __type").to_owned();
        error_type.rsplit('#').next().unwrap().to_owned()
    }

    /// The checks every response must pass: a request id, and a CRC32 header matching the body.
    pub fn assert_standard_headers(&self) {
        let request_id = self.header("x-amzn-RequestId").expect("no request id");
        assert_eq!(request_id.len(), 52, "{request_id}");
        assert!(
            request_id
                .bytes()
                .all(|byte| byte.is_ascii_digit() || byte.is_ascii_uppercase()),
            "{request_id}"
        );
        let crc32: u32 = self
            .header("x-amz-crc32")
            .expect("no crc32")
            .parse()
            .unwrap();
        assert_eq!(
            crc32,
            crc32fast::hash(&self.body),
            "crc32 header does not match the body"
        );
        assert!(!self.body.is_empty(), "empty body");
    }
}

/// Sends `request` bytes on a new connection and reads the response until the server closes.
pub async fn send_raw(address: SocketAddr, request: &[u8]) -> RawResponse {
    tokio::time::timeout(EXCHANGE_TIMEOUT, async {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        parse_response(&received)
    })
    .await
    .expect("exchange timed out")
}

/// Reads one response from `stream`, which stays open: up to the end of its body, as its
/// `Content-Length` gives it.
pub async fn read_response(stream: &mut TcpStream) -> RawResponse {
    let mut received = Vec::new();
    tokio::time::timeout(EXCHANGE_TIMEOUT, async {
        loop {
            let mut buffer = [0u8; 4096];
            let read = stream.read(&mut buffer).await.unwrap();
            assert_ne!(read, 0, "connection closed before a whole response");
            received.extend_from_slice(&buffer[..read]);
            let Some(head_end) = received.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let response = parse_response(&received);
            let length: usize = response.header("content-length").unwrap().parse().unwrap();
            if received.len() >= head_end + 4 + length {
                break response;
            }
        }
    })
    .await
    .expect("no whole response in time")
}

/// Connects to `server` from `source`, another loopback address (127.0.0.0/8), so that tests
/// can stand for several clients.
pub async fn connect_from(source: &str, server: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    socket.connect(server).await.unwrap()
}

pub fn parse_response(received: &[u8]) -> RawResponse {
    let head_end = received
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(received)));
    let head = std::str::from_utf8(&received[..head_end]).unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap();
            (name.trim().to_owned(), value.trim().to_owned())
        })
        .collect();
    RawResponse {
        status,
        headers,
        body: received[head_end + 4..].to_vec(),
    }
}

/// A well-formed (but unverifiable) SigV4 header, as DynamoDB Local accepts.
pub const DUMMY_AUTHORIZATION: &str = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123456789abcdef";

/// A POST with the given headers (content-length and `Connection: close` added) and body.
pub fn post(headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut request = String::from("POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// A POST of `body` to `operation` with every header a real client sends, on a connection
/// the client keeps open (as the SDKs' pools do).
pub fn api_call_keep_alive(operation: &str, body: &str) -> Vec<u8> {
    let request = String::from_utf8(api_call(operation, body)).unwrap();
    request
        .replacen("Connection: close\r\n", "", 1)
        .into_bytes()
}

/// The value of metric `line_prefix` (a name with its labels, as rendered) from `/metrics`.
pub async fn metric(address: SocketAddr, line_prefix: &str) -> f64 {
    let page = send_raw(
        address,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    let text = String::from_utf8(page.body).unwrap();
    text.lines()
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == line_prefix).then(|| value.parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no {line_prefix} in\n{text}"))
}

/// A POST of `body` to `operation` with every header a real client sends.
pub fn api_call(operation: &str, body: &str) -> Vec<u8> {
    let target = format!("DynamoDB_20120810.{operation}");
    post(
        &[
            ("Content-Type", "application/x-amz-json-1.0"),
            ("X-Amz-Target", &target),
            ("X-Amz-Date", "20240101T000000Z"),
            ("Authorization", DUMMY_AUTHORIZATION),
        ],
        body.as_bytes(),
    )
}
