//! The console (`ServerConfig::console`) and the admin calls it adds: its files, the
//! settings, item collections and bench report calls, who may use them, and the console's
//! own unsigned API requests accepted as DynamoDB Local-style clients are.

use crate::support::{send_raw, RawResponse, TestServer};
use serde_json::Value;
use shoal_server::ServerConfig;

/// What the console's script sends as its Authorization header (`authorization()` in
/// console.js), for a request on 2026-11-29.
const CONSOLE_AUTHORIZATION: &str = "AWS4-HMAC-SHA256 Credential=console/20261129/ddblocal/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0";

const CONSOLE_SCRIPT: &str = include_str!("../../src/console/console.js");

fn render_report(text: &[u8]) -> Result<String, String> {
    let report: Value = serde_json::from_slice(text).map_err(|error| error.to_string())?;
    Ok(format!("<html><body>{}</body></html>", report["name"]))
}

fn console_config() -> ServerConfig {
    ServerConfig {
        console: true,
        bench_report: Some(render_report),
        ..ServerConfig::default()
    }
}

async fn request(server: &TestServer, method: &str, path: &str, body: &str) -> RawResponse {
    let raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    send_raw(server.address, raw.as_bytes()).await
}

#[tokio::test]
async fn the_console_is_served_with_the_admin_api_it_calls() {
    let server = TestServer::start(console_config()).await;
    let page = request(&server, "GET", "/shoal/console", "").await;
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    let html = String::from_utf8(page.body).unwrap();
    assert!(html.contains("/shoal/console/console.js"), "{html}");
    let script = request(&server, "GET", "/shoal/console/console.js", "").await;
    assert_eq!(script.status, 200);
    assert_eq!(script.body, CONSOLE_SCRIPT.as_bytes());
    // The console comes with the admin API, --admin or not.
    let faults = request(&server, "GET", "/shoal/faults", "").await;
    assert_eq!(faults.status, 200);
    assert_eq!(faults.json()["rules"], serde_json::json!([]));
    let missing = request(&server, "GET", "/shoal/console/nothing.js", "").await;
    assert_eq!(missing.status, 404);
    server.stop().await;
}

#[tokio::test]
async fn without_the_console_its_paths_are_unknown() {
    let server = TestServer::start(ServerConfig::default()).await;
    let page = request(&server, "GET", "/shoal/console", "").await;
    assert_eq!(page.status, 404);
    assert_eq!(page.body, b"<UnknownOperationException/>\n");
    server.stop().await;
    // The admin API alone does not serve it either.
    let server = TestServer::start(ServerConfig {
        admin: true,
        ..ServerConfig::default()
    })
    .await;
    let page = request(&server, "GET", "/shoal/console", "").await;
    assert_eq!(page.status, 404);
    let error = page.json()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("/shoal/console"), "{error}");
    // The answer names the calls there are.
    assert!(
        error.contains("the admin API has /shoal/faults, "),
        "{error}"
    );
    server.stop().await;
}

#[tokio::test]
async fn settings_name_the_handler_s_knobs_and_the_remote_rule() {
    let server = TestServer::start(console_config()).await;
    let settings = request(&server, "GET", "/shoal/settings", "").await;
    assert_eq!(settings.status, 200);
    // The test handler knows no knobs; the server adds its own.
    assert_eq!(
        settings.json(),
        serde_json::json!({"admin_allow_remote": false})
    );
    let post = request(&server, "POST", "/shoal/settings", "{}").await;
    assert_eq!(post.status, 405);
    server.stop().await;
}

#[tokio::test]
async fn item_collections_need_a_table_and_a_handler_that_keeps_them() {
    let server = TestServer::start(console_config()).await;
    let unnamed = request(&server, "GET", "/shoal/collections", "").await;
    assert_eq!(unnamed.status, 400);
    assert_eq!(unnamed.json()["error"], "name a table");
    let bad_limit = request(&server, "GET", "/shoal/collections?table=T&limit=-1", "").await;
    assert_eq!(bad_limit.status, 400);
    assert!(bad_limit.json()["error"]
        .as_str()
        .unwrap()
        .contains("limit"));
    let none = request(&server, "GET", "/shoal/collections?table=T", "").await;
    assert_eq!(none.status, 400);
    assert_eq!(
        none.json()["error"],
        "this server keeps no item collections"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_saved_bench_report_comes_back_as_the_renderer_s_page() {
    let server = TestServer::start(console_config()).await;
    let page = request(
        &server,
        "POST",
        "/shoal/bench-report",
        r#"{"name": "orders"}"#,
    )
    .await;
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert_eq!(page.body, b"<html><body>\"orders\"</body></html>");
    let broken = request(&server, "POST", "/shoal/bench-report", "{not json").await;
    assert_eq!(broken.status, 400);
    let get = request(&server, "GET", "/shoal/bench-report", "").await;
    assert_eq!(get.status, 405);
    server.stop().await;
    // A server given no renderer says so.
    let server = TestServer::start(ServerConfig {
        console: true,
        ..ServerConfig::default()
    })
    .await;
    let page = request(&server, "POST", "/shoal/bench-report", "{}").await;
    assert_eq!(page.status, 404);
    server.stop().await;
}

#[tokio::test]
async fn the_console_s_unsigned_requests_are_accepted_like_dynamodb_local_s() {
    // The script builds the header this test sends.
    assert!(CONSOLE_SCRIPT.contains("'AWS4-HMAC-SHA256 Credential=console/'"));
    assert!(CONSOLE_SCRIPT
        .contains("'/ddblocal/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0'"));
    let server = TestServer::start(console_config()).await;
    let raw = crate::support::post(
        &[
            ("Content-Type", "application/x-amz-json-1.0"),
            ("X-Amz-Target", "DynamoDB_20120810.DescribeTable"),
            ("X-Amz-Date", "20261129T010203Z"),
            ("Authorization", CONSOLE_AUTHORIZATION),
        ],
        b"{}",
    );
    let answer = send_raw(server.address, &raw).await;
    assert_eq!(
        answer.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(answer.json()["Region"], "ddblocal");
    server.stop().await;
}
