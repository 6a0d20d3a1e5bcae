//! The acceptance scenarios again (`tests/scenarios`, and `../shared/scenarios` when it is
//! beside the repository), over real HTTP: each scenario gets its own `shoal serve
//! --in-memory` process, and every step is a signed-shape POST with DynamoDB's headers, so the
//! wire layer (routing, error bodies, CRC, status codes) is held to the same expectations as
//! the engine.

use crate::scenario_runner;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use scenario_runner::{run_scenario, scenarios_to_run, Outcome, Scenario};
use serde_json::Value;

/// A dummy SigV4 header: the server (like DynamoDB Local) checks its shape, not the signature.
const AUTHORIZATION: &str = "AWS4-HMAC-SHA256 Credential=AKIDSHOAL/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0000000000000000000000000000000000000000000000000000000000000000";

struct Server {
    child: Child,
    address: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(scenario: &Scenario) -> Result<Server, String> {
    let mut args = vec![
        "serve",
        "--port",
        "0",
        "--in-memory",
        "--durability",
        "none",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    for (key, value) in &scenario.options {
        match key.as_str() {
            "item_collection_size_limit_bytes" => {
                let limit = value
                    .as_u64()
                    .ok_or_else(|| format!("option {key} must be a whole number"))?;
                args.push("--item-collection-limit".into());
                args.push(limit.to_string());
            }
            _ => return Err(format!("unknown option {key:?}")),
        }
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(&args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start shoal serve: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let address = line
        .trim()
        .strip_prefix("shoal listening on http://")
        .ok_or_else(|| format!("unexpected first line {line:?}"))?
        .to_string();
    Ok(Server { child, address })
}

/// What an HTTP response came back as: status, lower-cased headers, body.
type RawResponse = (u16, Vec<(String, String)>, Vec<u8>);

/// One request, one connection: POST the body, read the whole response.
fn post(address: &str, operation: &str, body: &Value) -> Result<RawResponse, String> {
    let body = body.to_string();
    let mut stream = TcpStream::connect(address).map_err(|e| e.to_string())?;
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: DynamoDB_20120810.{operation}\r\nX-Amz-Date: 20260101T000000Z\r\nAuthorization: {AUTHORIZATION}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no header end")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("bad status line")?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok((status, headers, raw[split + 4..].to_vec()))
}

fn run(scenario: &Scenario) -> Outcome {
    let server = match start(scenario) {
        Ok(server) => server,
        Err(reason) => return Outcome::Failed(reason),
    };
    run_scenario(
        scenario,
        |op| shoal::tables::SUPPORTED_OPERATIONS.contains(&op),
        |op: &str, request: Value| {
            let failure = |reason: String| ("TransportFailure".to_string(), Value::String(reason));
            let (status, headers, body) = post(&server.address, op, &request).map_err(failure)?;
            // Every response must carry the CRC32 of its exact body and a request id.
            let crc = headers
                .iter()
                .find(|(k, _)| k == "x-amz-crc32")
                .map(|(_, v)| v.clone());
            if crc != Some(crc32fast::hash(&body).to_string()) {
                return Err(failure(format!(
                    "x-amz-crc32 {crc:?} does not match the body"
                )));
            }
            if !headers.iter().any(|(k, _)| k == "x-amzn-requestid") {
                return Err(failure("no x-amzn-RequestId header".into()));
            }
            let json: Value = serde_json::from_slice(&body)
                .map_err(|e| failure(format!("body is not JSON: {e}")))?;
            if status == 200 {
                return Ok(json);
            }
            let code = json
                .get("__type")
                .and_then(Value::as_str)
                .and_then(|t| t.rsplit('#').next())
                .unwrap_or_default()
                .to_string();
            Err((code, json))
        },
    )
}

#[test]
fn every_scenario_passes_over_http_or_is_skipped() {
    let (scenarios, summary) = scenarios_to_run().unwrap_or_else(|e| panic!("{e}"));
    println!("{summary}");
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for scenario in &scenarios {
        match run(scenario) {
            Outcome::Passed => {
                passed += 1;
                println!("PASS {} (http)", scenario.title());
            }
            Outcome::Failed(reason) => {
                failed += 1;
                println!(
                    "FAIL {} (http, {}): {reason}",
                    scenario.title(),
                    scenario.path.display()
                );
            }
            Outcome::Skipped(operations) => {
                skipped += 1;
                println!(
                    "SKIP {} (http): uses {}",
                    scenario.title(),
                    operations.join(", ")
                );
            }
        }
    }
    println!("http: {passed} passed, {failed} failed, {skipped} skipped");
    assert_eq!(
        failed, 0,
        "{failed} scenario(s) failed over HTTP (see the lines above)"
    );
}
