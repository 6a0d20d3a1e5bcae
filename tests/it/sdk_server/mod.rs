//! A `shoal` server child process on a free loopback port, and AWS SDK clients for it:
//! the end-to-end tests drive Shoal as a DynamoDB user would.

#![allow(dead_code)] // each test file uses a different part of this module

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndexUpdate,
    KeySchemaElement, KeyType, Projection, ProjectionType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;

/// A key schema element of the SDK's types.
#[allow(dead_code)] // Not every test file builds tables with these.
pub fn key_element(name: &str, key_type: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .expect("a key schema element")
}

/// Creates table `name`, keyed by the string `pk`, on demand: the table most tests need.
pub async fn create_pk_table(
    client: &Client,
    name: &str,
) -> aws_sdk_dynamodb::operation::create_table::CreateTableOutput {
    client
        .create_table()
        .table_name(name)
        .attribute_definitions(definition("pk"))
        .key_schema(key_element("pk", KeyType::Hash))
        .billing_mode(aws_sdk_dynamodb::types::BillingMode::PayPerRequest)
        .send()
        .await
        .expect("CreateTable")
}

/// A string attribute definition of the SDK's types.
#[allow(dead_code)]
pub fn definition(name: &str) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .expect("an attribute definition")
}

/// An UpdateTable `GlobalSecondaryIndexUpdates` member creating GSI `index_name`, keyed by
/// attribute `hash`, projecting ALL.
pub fn create_index_update(index_name: &str, hash: &str) -> GlobalSecondaryIndexUpdate {
    GlobalSecondaryIndexUpdate::builder()
        .create(
            CreateGlobalSecondaryIndexAction::builder()
                .index_name(index_name)
                .key_schema(key_element(hash, KeyType::Hash))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .expect("a GSI create action"),
        )
        .build()
}

/// A `shoal` child process serving on a free loopback port; SIGTERMed on drop.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`, from the line the server prints once it listens.
    pub endpoint: String,
}

impl Server {
    /// `shoal serve --port 0 --durability none --data-dir DATA_DIR EXTRA...`.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Server {
        Server::start_binary(Path::new(env!("CARGO_BIN_EXE_shoal")), data_dir, extra)
    }

    /// [`Server::start`] with another `shoal` binary (a measurement's release build).
    pub fn start_binary(binary: &Path, data_dir: &Path, extra: &[&str]) -> Server {
        let mut args: Vec<&OsStr> = ["serve", "--port", "0", "--durability", "none"]
            .iter()
            .map(OsStr::new)
            .collect();
        args.push(OsStr::new("--data-dir"));
        args.push(data_dir.as_os_str());
        args.extend(extra.iter().map(OsStr::new));
        Server::spawn_binary(binary, &args)
    }

    /// `shoal ARGS...`, which must make it serve on port 0; waits until it listens.
    pub fn spawn<S: AsRef<OsStr>>(args: &[S]) -> Server {
        Server::spawn_binary(Path::new(env!("CARGO_BIN_EXE_shoal")), args)
    }

    fn spawn_binary<S: AsRef<OsStr>>(binary: &Path, args: &[S]) -> Server {
        let mut child = Command::new(binary)
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start shoal");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the address line");
        let endpoint = line
            .trim()
            .strip_prefix("shoal listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Server { child, endpoint }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn client(&self) -> Client {
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new(
                "AKIDSHOALTEST",
                "secret",
                None,
                None,
                "static",
            ))
            .endpoint_url(&self.endpoint)
            .http_client(plain_http_client())
            .build();
        Client::from_conf(config)
    }

    /// A client that never retries, for tests that expect the first answer to be an error
    /// the SDK would otherwise retry.
    pub fn client_without_retries(&self) -> Client {
        let config = self
            .client()
            .config()
            .to_builder()
            .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
            .build();
        Client::from_conf(config)
    }

    /// One HTTP/1.1 request on a fresh connection: the status (0 when the connection closed
    /// without an answer, as after a crash) and the body.
    pub fn http(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        http_request(&self.endpoint, method, path, body)
    }

    /// Waits for the server to end by itself and returns how it ended.
    pub fn wait_for_exit(&mut self) -> std::process::ExitStatus {
        self.child.wait().expect("wait for shoal")
    }

    /// A DynamoDB Streams client for the same endpoint (Shoal serves both APIs on one).
    pub fn streams_client(&self) -> aws_sdk_dynamodbstreams::Client {
        let config = aws_sdk_dynamodbstreams::Config::builder()
            .behavior_version(aws_sdk_dynamodbstreams::config::BehaviorVersion::latest())
            .region(aws_sdk_dynamodbstreams::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_dynamodbstreams::config::Credentials::new(
                "AKIDSHOALTEST",
                "secret",
                None,
                None,
                "static",
            ))
            .endpoint_url(&self.endpoint)
            .http_client(plain_http_client())
            .build();
        aws_sdk_dynamodbstreams::Client::from_conf(config)
    }

    /// Stops the server the way an operator does (SIGTERM) and waits for it.
    pub fn stop(mut self) {
        terminate(&mut self.child);
    }

    /// Kills the server with SIGKILL (no clean shutdown) and waits for it.
    #[allow(dead_code)] // Only the crash tests kill.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The SDK's own hyper client without TLS: the server is on plain `http://127.0.0.1`, and the
/// SDK's default HTTPS clients cost the test build a C build of aws-lc (Cargo.toml).
fn plain_http_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    aws_smithy_http_client::Builder::new().build_http()
}

/// One HTTP/1.1 request to `endpoint` (`http://HOST:PORT`) on a fresh connection: the
/// status (0 when the connection closed without an answer) and the body.
pub fn http_request(endpoint: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let address = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut response = String::new();
    // A connection the server dropped may end in a reset: what was read is the answer.
    let _ = stream.read_to_string(&mut response);
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}

fn terminate(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        // Already ended (and reaped): its pid may belong to another process by now.
        return;
    }
    // SAFETY: kill(2) on our own child's pid; no memory is involved.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let _ = child.wait();
}

impl Drop for Server {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}

/// A plain GET over a fresh connection; returns the body.
pub fn http_get(endpoint: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let address = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}
