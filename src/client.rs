//! One keep-alive HTTP/1.1 connection speaking DynamoDB's JSON protocol, the client of
//! `shoal bench` and `shoal streams tail`.
//!
//! Requests are written by hand (the protocol is a POST with two headers) so the client costs
//! little CPU and adds no dependency. The `Authorization` header is well formed but not
//! signed: a server that verifies signatures (`shoal serve --auth`) refuses it.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The `X-Amz-Target` prefix of DynamoDB's operations.
pub const DYNAMODB_TARGET_PREFIX: &str = "DynamoDB_20120810.";
/// The `X-Amz-Target` prefix of DynamoDB Streams' operations (served on the same endpoint).
pub const STREAMS_TARGET_PREFIX: &str = "DynamoDBStreams_20120810.";
/// Largest response body accepted, in bytes (DynamoDB pages are at most 1 MB of items).
const RESPONSE_BYTES_MAX: usize = 16 << 20;

/// One keep-alive HTTP/1.1 connection speaking DynamoDB's protocol.
pub struct Connection {
    reader: BufReader<TcpStream>,
    address: String,
}

impl Connection {
    /// Connects to `address` (`host:port`).
    pub async fn open(address: &str) -> Result<Connection, String> {
        let stream = TcpStream::connect(address)
            .await
            .map_err(|e| format!("connect {address}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Connection {
            reader: BufReader::new(stream),
            address: address.to_string(),
        })
    }

    /// Sends one DynamoDB operation; returns the HTTP status and the body.
    pub async fn call(&mut self, operation: &str, body: &Value) -> Result<(u16, Vec<u8>), String> {
        self.call_target(DYNAMODB_TARGET_PREFIX, operation, body)
            .await
    }

    /// Sends `operation` under the target prefix `prefix` (one of the `*_TARGET_PREFIX`
    /// constants); returns the HTTP status and the body.
    pub async fn call_target(
        &mut self,
        prefix: &str,
        operation: &str,
        body: &Value,
    ) -> Result<(u16, Vec<u8>), String> {
        self.call_text(prefix, operation, body.to_string().as_bytes())
            .await
    }

    /// [`Connection::call_target`] with a body already in JSON text.
    pub async fn call_text(
        &mut self,
        prefix: &str,
        operation: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), String> {
        let head = format!(
            "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: {prefix}{operation}\r\nX-Amz-Date: 20260101T000000Z\r\nAuthorization: AWS4-HMAC-SHA256 Credential=SHOAL/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=00\r\nContent-Length: {}\r\n\r\n",
            self.address,
            body.len()
        );
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        let stream = self.reader.get_mut();
        stream
            .write_all(&request)
            .await
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        self.reader
            .read_line(&mut line)
            .await
            .map_err(|e| e.to_string())?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {line:?}"))?;
        let mut length = 0usize;
        loop {
            line.clear();
            self.reader
                .read_line(&mut line)
                .await
                .map_err(|e| e.to_string())?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value
                        .trim()
                        .parse()
                        .map_err(|_| "bad content-length".to_string())?;
                }
            }
        }
        if length > RESPONSE_BYTES_MAX {
            return Err(format!("response of {length} bytes"));
        }
        let mut body = vec![0u8; length];
        self.reader
            .read_exact(&mut body)
            .await
            .map_err(|e| e.to_string())?;
        Ok((status, body))
    }

    /// Sends one DynamoDB operation and returns its JSON answer, or an error if the status
    /// is not 200.
    pub async fn expect_ok(&mut self, operation: &str, body: &Value) -> Result<Value, String> {
        let (status, response) = self.call(operation, body).await?;
        let json: Value = serde_json::from_slice(&response).map_err(|e| e.to_string())?;
        if status != 200 {
            return Err(format!("{operation} answered {status}: {json}"));
        }
        Ok(json)
    }
}
