//! One keep-alive HTTP/1.1 connection speaking DynamoDB's JSON protocol, the client of
//! `shoal bench` and `shoal streams tail`.
//!
//! Requests are written by hand (the protocol is a POST with a few headers) so the client
//! costs little CPU. Over `http://` or `https://` (`tls.rs`). Without credentials the
//! `Authorization` header is well formed but not signed — what Shoal and DynamoDB Local
//! accept, and what costs nothing per request; with credentials (`signing.rs`) every request
//! is signed with SigV4, as real DynamoDB and `shoal serve --auth` require.

pub mod endpoint;
pub mod retry;
pub mod signing;
pub mod streams;
pub mod target;
pub mod tls;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ClientConfig;
use tokio_rustls::TlsConnector;

use endpoint::Endpoint;
pub use signing::Credentials;
use signing::Signer;
use tls::Stream;

/// The `X-Amz-Target` prefix of DynamoDB's operations.
pub const DYNAMODB_TARGET_PREFIX: &str = "DynamoDB_20120810.";
/// The `X-Amz-Target` prefix of DynamoDB Streams' operations (served on the same endpoint).
pub const STREAMS_TARGET_PREFIX: &str = "DynamoDBStreams_20120810.";
/// Largest response body accepted, in bytes (DynamoDB pages are at most 1 MB of items).
const RESPONSE_BYTES_MAX: usize = 16 << 20;
/// The content type of DynamoDB's JSON protocol.
const CONTENT_TYPE: &str = "application/x-amz-json-1.0";

/// How to reach an endpoint besides its URL.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Sign every request with these; None sends the fixed unsigned header.
    pub credentials: Option<Credentials>,
    /// The region to sign for; None: the one of a `dynamodb.<region>.amazonaws.com` host,
    /// else us-east-1.
    pub region: Option<String>,
    /// A PEM file of certificates to trust besides the system's (for `https://`).
    pub extra_ca_cert: Option<PathBuf>,
}

impl ConnectOptions {
    /// What the environment gives: the AWS SDKs' credential and region variables, and
    /// `SHOAL_EXTRA_CA_CERT`.
    pub fn from_env() -> Result<ConnectOptions, String> {
        Ok(ConnectOptions {
            credentials: Credentials::from_env()?,
            region: signing::region_from_env(),
            ..ConnectOptions::unsigned_from_env()
        })
    }

    /// [`ConnectOptions::from_env`] without credentials: for clients that never sign.
    pub fn unsigned_from_env() -> ConnectOptions {
        ConnectOptions {
            extra_ca_cert: std::env::var_os(tls::EXTRA_CA_CERT_VAR).map(PathBuf::from),
            ..ConnectOptions::default()
        }
    }
}

/// Opens connections to one endpoint; the TLS configuration and the signer are built once
/// and shared by every connection.
#[derive(Clone)]
pub struct Connector {
    endpoint: Endpoint,
    host_header: String,
    tls: Option<Arc<ClientConfig>>,
    signer: Option<Arc<Signer>>,
}

impl Connector {
    /// A connector for `url` (`http://host[:port]`, `https://host[:port]` or `host:port`).
    pub fn new(url: &str, options: &ConnectOptions) -> Result<Connector, String> {
        let endpoint = Endpoint::parse(url)?;
        let tls = if endpoint.tls {
            Some(tls::client_config(options.extra_ca_cert.as_deref())?)
        } else {
            None
        };
        let signer = options.credentials.as_ref().map(|credentials| {
            let region = options
                .region
                .clone()
                .or_else(|| endpoint.aws_region().map(str::to_string))
                .unwrap_or_else(|| signing::DEFAULT_REGION.to_string());
            Arc::new(Signer {
                credentials: credentials.clone(),
                region,
            })
        });
        Ok(Connector {
            host_header: endpoint.host_header(),
            endpoint,
            tls,
            signer,
        })
    }

    /// The endpoint's URL, for reports.
    pub fn url(&self) -> String {
        self.endpoint.url()
    }

    /// Opens one connection (and completes the TLS handshake for `https://`).
    pub async fn connect(&self) -> Result<Connection, String> {
        let url = self.endpoint.url();
        let host = self.endpoint.bare_host();
        let tcp = TcpStream::connect((host, self.endpoint.port))
            .await
            .map_err(|e| format!("connect {url}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let stream = match &self.tls {
            None => Stream::Plain(tcp),
            Some(config) => {
                let name =
                    ServerName::try_from(host.to_string()).map_err(|e| format!("{url}: {e}"))?;
                let tls = TlsConnector::from(Arc::clone(config))
                    .connect(name, tcp)
                    .await
                    .map_err(|e| format!("TLS with {url}: {e}"))?;
                Stream::Tls(Box::new(tls))
            }
        };
        Ok(Connection {
            reader: BufReader::new(stream),
            host_header: self.host_header.clone(),
            signer: self.signer.clone(),
        })
    }
}

/// One keep-alive HTTP/1.1 connection speaking DynamoDB's protocol.
pub struct Connection {
    reader: BufReader<Stream>,
    host_header: String,
    signer: Option<Arc<Signer>>,
}

impl Connection {
    /// Connects to `address` (`host:port`, `http://…` or `https://…`) without signing.
    pub async fn open(address: &str) -> Result<Connection, String> {
        Connector::new(address, &ConnectOptions::unsigned_from_env())?
            .connect()
            .await
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
        let head = match &self.signer {
            None => format!(
                "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: {CONTENT_TYPE}\r\nX-Amz-Target: {prefix}{operation}\r\nX-Amz-Date: 20260101T000000Z\r\nAuthorization: AWS4-HMAC-SHA256 Credential=SHOAL/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=00\r\nContent-Length: {}\r\n\r\n",
                self.host_header,
                body.len()
            ),
            Some(signer) => {
                let target = format!("{prefix}{operation}");
                let signature =
                    signer.header_lines(&self.host_header, CONTENT_TYPE, &target, body)?;
                format!(
                    "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: {CONTENT_TYPE}\r\nX-Amz-Target: {target}\r\n{signature}Content-Length: {}\r\n\r\n",
                    self.host_header,
                    body.len()
                )
            }
        };
        self.exchange(head, body).await
    }

    /// Sends `method path` with a JSON `body` (no DynamoDB target, never signed): the admin
    /// API of `shoal serve --admin` (`/shoal/faults`). Returns the HTTP status and the body.
    pub async fn json_request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), String> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.host_header,
            body.len()
        );
        self.exchange(head, body).await
    }

    /// Writes one request (`head` ends with its blank line) and reads its answer.
    async fn exchange(&mut self, head: String, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        let stream = self.reader.get_mut();
        stream
            .write_all(&request)
            .await
            .map_err(|e| e.to_string())?;
        // TLS may hold the last record back until flushed (a no-op on plain TCP).
        stream.flush().await.map_err(|e| e.to_string())?;
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
