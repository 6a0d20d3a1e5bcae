//! `shoal bench --model --endpoint` against endpoints that need what real DynamoDB needs:
//! requests signed with the environment's credentials pass `shoal serve --auth` (a wrong
//! secret gets the server's signature error), and an `https://` endpoint — here a local TLS
//! proxy in front of `shoal serve`, with a self-signed certificate trusted through
//! `SHOAL_EXTRA_CA_CERT` — is reached through TLS.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};
use shoal::client::{ConnectOptions, Connector, Credentials};

use crate::sdk_server;
use sdk_server::Server;

const ACCESS_KEY: &str = "AKIDBENCHTEST";
const SECRET_KEY: &str = "bench/secret+key";
const SIGNATURE_MISMATCH: &str =
    "The request signature we calculated does not match the signature you provided.";

/// One table, a few items, a few puts and gets.
fn tiny_model() -> Value {
    json!({
        "name": "tiny",
        "tables": [{
            "TableName": "Notes",
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }],
        "generators": {"id": {"type": "string", "prefix": "n#", "cardinality": 20}},
        "load": [{"table": "Notes", "count": 20, "item": {"id": {"S": "${id}"}}}],
        "patterns": [
            {"name": "write", "operation": "PutItem", "weight": 1, "request": {
                "TableName": "Notes", "Item": {"id": {"S": "${id}"}}
            }},
            {"name": "read", "operation": "GetItem", "weight": 1, "request": {
                "TableName": "Notes", "Key": {"id": {"S": "${id}"}}
            }}
        ],
        "run": {"operations": 40, "concurrency": 2, "seed": 3}
    })
}

/// A `shoal serve --auth` knowing one key.
fn auth_server(dir: &Path) -> Server {
    let keys = dir.join("keys");
    std::fs::write(&keys, format!("{ACCESS_KEY} {SECRET_KEY}\n")).unwrap();
    let data = dir.join("data");
    Server::start(&data, &["--auth", keys.to_str().unwrap()])
}

/// `shoal bench --json --model` of the tiny model against `endpoint`, in an environment
/// holding only `env` of the variables the client reads.
fn bench(dir: &Path, endpoint: &str, env: &[(&str, &str)]) -> Output {
    let model = dir.join("model.json");
    std::fs::write(&model, tiny_model().to_string()).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_shoal"));
    command
        .args(["bench", "--json", "--model"])
        .arg(&model)
        .args(["--endpoint", endpoint]);
    for name in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "SHOAL_EXTRA_CA_CERT",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied()).output().unwrap()
}

/// The report of a run that must have succeeded, every operation answered without error.
fn report_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["loaded_items"], 20);
    let patterns = report["patterns"].as_array().unwrap();
    let operations: u64 = patterns
        .iter()
        .map(|p| p["operations"].as_u64().unwrap())
        .sum();
    assert_eq!(operations, 40);
    for pattern in patterns {
        assert_eq!(pattern["errors"], json!({}), "{pattern}");
    }
    report
}

#[test]
fn requests_signed_with_the_environments_credentials_pass_a_verifying_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = auth_server(dir.path());
    let output = bench(
        dir.path(),
        &server.endpoint,
        &[
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
            // Sent and signed along with the other headers: the server recomputes the
            // signature over the token it received.
            ("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEBENCH//token=="),
            ("AWS_REGION", "eu-west-1"),
        ],
    );
    let report = report_of(&output);
    assert_eq!(report["target"], server.endpoint);
}

#[test]
fn a_wrong_secret_gets_the_servers_signature_error_and_no_credentials_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = auth_server(dir.path());
    let wrong = bench(
        dir.path(),
        &server.endpoint,
        &[
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", "not-the-secret"),
        ],
    );
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        stderr.contains("InvalidSignatureException") && stderr.contains(SIGNATURE_MISMATCH),
        "{stderr}"
    );
    // Without credentials the bench sends a fixed, long-past date with its dummy key: the
    // server refuses the date before it looks the key up.
    let unsigned = bench(dir.path(), &server.endpoint, &[]);
    let stderr = String::from_utf8_lossy(&unsigned.stderr);
    assert!(!unsigned.status.success());
    assert!(
        stderr.contains("InvalidSignatureException") && stderr.contains("Signature expired"),
        "{stderr}"
    );
    let half = bench(
        dir.path(),
        &server.endpoint,
        &[("AWS_ACCESS_KEY_ID", ACCESS_KEY)],
    );
    let stderr = String::from_utf8_lossy(&half.stderr);
    assert!(
        stderr.contains("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"),
        "{stderr}"
    );
}

#[test]
fn credentials_given_to_the_connector_sign_without_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let server = auth_server(dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let list = |secret: &str| {
        let options = ConnectOptions {
            credentials: Some(Credentials {
                access_key: ACCESS_KEY.to_string(),
                secret_key: secret.to_string(),
                session_token: None,
            }),
            ..ConnectOptions::default()
        };
        let connector = Connector::new(&server.endpoint, &options).unwrap();
        runtime.block_on(async {
            let mut connection = connector.connect().await.unwrap();
            // Two calls: each request carries its own signature on the kept-alive connection.
            connection.call("ListTables", &json!({})).await.unwrap();
            connection.call("ListTables", &json!({})).await.unwrap()
        })
    };
    let (status, body) = list(SECRET_KEY);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let (status, body) = list("wrong");
    assert_eq!(status, 400);
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.contains("InvalidSignatureException") && body.contains(SIGNATURE_MISMATCH),
        "{body}"
    );
}

mod tls_proxy {
    //! A TLS terminator on a free loopback port forwarding each connection to a plain-HTTP
    //! server: an `https://` endpoint for the client, with a certificate made for the test.

    use std::path::Path;
    use std::sync::Arc;

    use tokio::net::{TcpListener, TcpStream};
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio_rustls::rustls::{self, ServerConfig};
    use tokio_rustls::TlsAcceptor;

    /// Starts the proxy for `backend` (`http://host:port`) with a self-signed certificate for
    /// `localhost`, written as PEM to `certificate_pem`; returns the proxy's port. The proxy
    /// lives as long as the test process.
    pub fn start(backend: &str, certificate_pem: &Path) -> u16 {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(certificate_pem, certified.cert.pem()).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let certificate: CertificateDer<'static> = certified.cert.der().clone();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certificate], key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let backend = backend.trim_start_matches("http://").to_string();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                while let Ok((client, _)) = listener.accept().await {
                    let acceptor = acceptor.clone();
                    let backend = backend.clone();
                    tokio::spawn(async move {
                        // A client that refuses the certificate ends its handshake here.
                        let Ok(mut client) = acceptor.accept(client).await else {
                            return;
                        };
                        let mut server = TcpStream::connect(&backend).await.unwrap();
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    });
                }
            });
        });
        port
    }
}

#[test]
fn an_https_endpoint_is_reached_through_tls_and_signed() {
    let dir = tempfile::tempdir().unwrap();
    let server = auth_server(dir.path());
    let certificate = dir.path().join("localhost.pem");
    let port = tls_proxy::start(&server.endpoint, &certificate);
    let endpoint = format!("https://localhost:{port}");
    let output = bench(
        dir.path(),
        &endpoint,
        &[
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
            ("SHOAL_EXTRA_CA_CERT", certificate.to_str().unwrap()),
        ],
    );
    let report = report_of(&output);
    assert_eq!(report["target"], endpoint);

    // The certificate is checked: without the extra root it is not trusted.
    let untrusted = bench(
        dir.path(),
        &endpoint,
        &[
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ],
    );
    assert!(!untrusted.status.success());
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert!(
        stderr.contains(&format!("TLS with {endpoint}")) || stderr.contains("no trusted root"),
        "{stderr}"
    );
}
