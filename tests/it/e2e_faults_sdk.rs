//! End-to-end: fault rules and the crash call, seen through the official AWS SDK for Rust
//! as an application under test would see them.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, BillingMode, KeyType, Put, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use serde_json::Value;

use crate::sdk_server;
use sdk_server::{definition, key_element, Server};

async fn create_table(client: &Client, name: &str) {
    client
        .create_table()
        .table_name(name)
        .attribute_definitions(definition("id"))
        .key_schema(key_element("id", KeyType::Hash))
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .expect("create table");
}

fn id(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

async fn item_exists(client: &Client, table: &str, key: &str) -> bool {
    client
        .get_item()
        .table_name(table)
        .key("id", id(key))
        .consistent_read(true)
        .send()
        .await
        .expect("get item")
        .item()
        .is_some()
}

/// POSTs a rule (or rule set) to the admin API; panics unless it is accepted.
fn add_rules(server: &Server, rules: &str) -> Value {
    let (status, body) = server.http("POST", "/shoal/faults", rules);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn listed_rules(server: &Server) -> Value {
    let (status, body) = server.http("GET", "/shoal/faults", "");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// The HTTP status (0 without an answer) and error code of a failed call.
fn status_and_code<E: ProvideErrorMetadata>(error: &SdkError<E, HttpResponse>) -> (u16, String) {
    let status = error
        .raw_response()
        .map_or(0, |response| response.status().as_u16());
    (status, error.code().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_error_kind_reaches_the_sdk_and_no_write_happens() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin"]);
    let client = server.client_without_retries();
    create_table(&client, "Orders").await;
    create_table(&client, "Other").await;
    for (code, status) in [
        ("ProvisionedThroughputExceededException", 400),
        ("ThrottlingException", 400),
        ("RequestLimitExceeded", 400),
        ("InternalServerError", 500),
        ("ServiceUnavailable", 503),
        ("TransactionConflict", 400),
    ] {
        add_rules(
            &server,
            &format!(
                r#"{{"id": "{code}", "operation": "PutItem", "table": "Orders",
                    "error": {{"code": "{code}", "probability": 1}}}}"#
            ),
        );
        let error = client
            .put_item()
            .table_name("Orders")
            .item("id", id(code))
            .send()
            .await
            .expect_err("the rule fails the put");
        let expected_code = match code {
            "TransactionConflict" => "TransactionConflictException",
            other => other,
        };
        assert_eq!(status_and_code(&error), (status, expected_code.to_owned()));
        // Another table is not matched.
        client
            .put_item()
            .table_name("Other")
            .item("id", id(code))
            .send()
            .await
            .expect("a put on another table");
        assert_eq!(
            server
                .http("DELETE", &format!("/shoal/faults/{code}"), "")
                .0,
            200
        );
        assert!(
            !item_exists(&client, "Orders", code).await,
            "{code}: applied"
        );
    }

    // In a transaction, the matched table's action conflicts and the other's is None.
    add_rules(
        &server,
        r#"{"operation": "TransactWriteItems", "table": "Orders",
            "error": {"code": "TransactionConflict", "probability": 1}}"#,
    );
    let put = |table: &str| {
        TransactWriteItem::builder()
            .put(
                Put::builder()
                    .table_name(table)
                    .item("id", id("t"))
                    .build()
                    .unwrap(),
            )
            .build()
    };
    let error = client
        .transact_write_items()
        .transact_items(put("Other"))
        .transact_items(put("Orders"))
        .send()
        .await
        .expect_err("the transaction is cancelled");
    let TransactWriteItemsError::TransactionCanceledException(cancelled) =
        error.into_service_error()
    else {
        panic!("not a TransactionCanceledException");
    };
    let reasons: Vec<(Option<&str>, Option<&str>)> = cancelled
        .cancellation_reasons()
        .iter()
        .map(|reason| (reason.code(), reason.message()))
        .collect();
    assert_eq!(
        reasons,
        vec![
            (Some("None"), None),
            (
                Some("TransactionConflict"),
                Some("Transaction is ongoing for the item")
            )
        ]
    );
    assert!(!item_exists(&client, "Other", "t").await);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_retries_throttling_until_its_attempts_run_out() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin"]);
    // The SDK's defaults: standard retry mode, three attempts.
    let client = server.client();
    create_table(&client, "Orders").await;
    add_rules(
        &server,
        r#"{"id": "throttle", "operation": "GetItem", "table": "*",
            "error": {"code": "ThrottlingException", "probability": 1}}"#,
    );
    let error = client
        .get_item()
        .table_name("Orders")
        .key("id", id("a"))
        .send()
        .await
        .expect_err("every attempt is throttled");
    assert_eq!(error.code(), Some("ThrottlingException"));
    let listed = listed_rules(&server);
    assert_eq!(listed["rules"][0]["matched"], 3, "{listed}");
    assert_eq!(listed["rules"][0]["injected"], 3, "{listed}");
    let (_, metrics) = server.http("GET", "/metrics", "");
    assert!(
        metrics.lines().any(|line| line
            == "shoal_injected_faults_total{kind=\"error\",code=\"ThrottlingException\"} 3"),
        "{metrics}"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latency_rule_delays_the_matched_requests() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin"]);
    let client = server.client_without_retries();
    create_table(&client, "Orders").await;
    add_rules(
        &server,
        r#"{"operation": "GetItem", "table": "Orders", "latency": {"fixed_ms": 400}}"#,
    );
    let started = Instant::now();
    item_exists(&client, "Orders", "a").await;
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(400), "{elapsed:?}");
    client
        .put_item()
        .table_name("Orders")
        .item("id", id("a"))
        .send()
        .await
        .unwrap();
    assert_eq!(listed_rules(&server)["rules"][0]["matched"], 1);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_a_dispatch_failure_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin"]);
    let client = server.client_without_retries();
    create_table(&client, "Orders").await;
    add_rules(
        &server,
        r#"{"operation": "PutItem", "table": "*", "drop_connection": {"probability": 1}}"#,
    );
    let error = client
        .put_item()
        .table_name("Orders")
        .item("id", id("a"))
        .send()
        .await
        .expect_err("the connection is dropped");
    assert!(matches!(error, SdkError::DispatchFailure(_)), "{:?}", error);
    assert_eq!(server.http("DELETE", "/shoal/faults", "").0, 200);
    assert!(!item_exists(&client, "Orders", "a").await);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_apply_writes_the_item_and_still_answers_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin"]);
    let client = server.client_without_retries();
    create_table(&client, "Orders").await;
    add_rules(
        &server,
        r#"{"operation": "PutItem", "table": "Orders",
            "error": {"code": "InternalServerError", "probability": 1, "after_apply": true}}"#,
    );
    let error = client
        .put_item()
        .table_name("Orders")
        .item("id", id("a"))
        .send()
        .await
        .expect_err("the client sees an error");
    assert_eq!(status_and_code(&error), (500, "InternalServerError".into()));
    assert!(
        item_exists(&client, "Orders", "a").await,
        "the write happened"
    );
    let (_, metrics) = server.http("GET", "/metrics", "");
    assert!(metrics.contains(
        "shoal_injected_faults_total{kind=\"error_after_apply\",code=\"InternalServerError\"} 1"
    ));
    server.stop();
}

/// Whether each of 24 GetItems succeeded.
async fn get_outcomes(client: &Client) -> Vec<bool> {
    let mut outcomes = Vec::new();
    for _ in 0..24 {
        let result = client
            .get_item()
            .table_name("Orders")
            .key("id", id("a"))
            .send()
            .await;
        outcomes.push(result.is_ok());
    }
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_replays_the_same_faults_from_the_file_and_the_admin_api() {
    let dir = tempfile::tempdir().unwrap();
    let rules = r#"{"seed": 7, "rules": [{"operation": "GetItem", "table": "*",
        "error": {"code": "ThrottlingException", "probability": 0.5}}]}"#;
    let rules_file = dir.path().join("faults.json");
    std::fs::write(&rules_file, rules).unwrap();
    let rules_arg = rules_file.to_str().unwrap();
    let data = dir.path().join("data");
    // No --admin: the file alone sets the rules, and the admin API is not there.
    let server = Server::start(&data, &["--faults", rules_arg]);
    assert_eq!(server.http("GET", "/shoal/faults", "").0, 404);
    let client = server.client_without_retries();
    create_table(&client, "Orders").await;
    let first = get_outcomes(&client).await;
    server.stop();
    assert!(first.contains(&true) && first.contains(&false), "{first:?}");

    let server = Server::start(&data, &["--faults", rules_arg]);
    assert_eq!(get_outcomes(&server.client_without_retries()).await, first);
    server.stop();

    // The same rule set through the admin API, twice: its seed restarts the draws.
    let server = Server::start(&data, &["--admin"]);
    let client = server.client_without_retries();
    for _ in 0..2 {
        assert_eq!(server.http("DELETE", "/shoal/faults", "").0, 200);
        add_rules(&server, rules);
        assert_eq!(get_outcomes(&client).await, first);
    }
    server.stop();
}

#[test]
fn bad_rules_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin"]);
    let (status, body) = server.http(
        "POST",
        "/shoal/faults",
        r#"{"operation": "*", "table": "*", "latency": {"fixed_ms": 5}, "probability": 1}"#,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("unknown field `probability`"), "{body}");
    assert_eq!(server.http("DELETE", "/shoal/faults/none", "").0, 404);
    assert_eq!(server.http("PUT", "/shoal/faults", "").0, 405);
    assert_eq!(listed_rules(&server)["rules"], Value::Array(Vec::new()));
    server.stop();

    // Without --admin every /shoal/ path is an unknown route, as in DynamoDB.
    let server = Server::start(dir.path(), &[]);
    for (method, path) in [("GET", "/shoal/faults"), ("POST", "/shoal/crash")] {
        let (status, body) = server.http(method, path, r#"{"mode": "kill"}"#);
        assert_eq!(
            (status, body.as_str()),
            (404, "<UnknownOperationException/>\n")
        );
    }
    server.stop();
}

/// Asks the server to crash and checks it died as by SIGKILL, without an answer.
fn crash(mut server: Server, mode: &str) {
    use std::os::unix::process::ExitStatusExt;
    let (status, body) = server.http("POST", "/shoal/crash", &format!(r#"{{"mode": "{mode}"}}"#));
    assert_eq!(status, 0, "the crash call got an answer: {body}");
    assert_eq!(server.wait_for_exit().signal(), Some(libc::SIGKILL));
}

async fn put(client: &Client, key: &str) {
    client
        .put_item()
        .table_name("Orders")
        .item("id", id(key))
        .send()
        .await
        .expect("put");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_drops_the_writes_not_yet_synced() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // `--durability none`: a clean stop is what syncs the first write.
    let server = Server::start(&data, &["--admin"]);
    let client = server.client();
    create_table(&client, "Orders").await;
    put(&client, "synced").await;
    server.stop();
    let server = Server::start(&data, &["--admin"]);
    let client = server.client();
    // Background work (a flush after the open) may make a write durable at any moment: a
    // WAL sync, or a memtable flush writing it into an SSTable. A write is known to be
    // unsynced when neither counter moved from before it to after it was read back: write
    // until one is, then cut the power at once, leaving the background no time.
    let durable = |server: &Server| {
        let (_, metrics) = server.http("GET", "/metrics", "");
        let counter = |name: &str| {
            metrics
                .lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or_else(|| panic!("{name} in /metrics"))
        };
        (
            counter("shoal_wal_syncs_total"),
            counter("shoal_flush_bytes_written_total"),
        )
    };
    let mut unsynced = None;
    for attempt in 0..20 {
        let key = format!("unsynced-{attempt}");
        let before = durable(&server);
        put(&client, &key).await;
        assert!(item_exists(&client, "Orders", &key).await);
        if durable(&server) == before {
            unsynced = Some(key);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let unsynced = unsynced.expect("a write nothing made durable at once");
    crash(server, "power-loss");

    let server = Server::start(&data, &[]);
    let client = server.client();
    assert!(item_exists(&client, "Orders", "synced").await);
    assert!(!item_exists(&client, "Orders", &unsynced).await);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_keeps_what_reached_the_os_and_sync_durability_survives_power_loss() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--admin"]);
    let client = server.client();
    create_table(&client, "Orders").await;
    put(&client, "written").await;
    crash(server, "kill");
    let server = Server::start(&data, &[]);
    assert!(item_exists(&server.client(), "Orders", "written").await);
    server.stop();

    let data_arg = data.to_str().unwrap();
    let serve_synced = [
        "serve",
        "--port",
        "0",
        "--durability",
        "sync",
        "--data-dir",
        data_arg,
        "--admin",
    ];
    let server = Server::spawn(&serve_synced);
    let client = server.client();
    for key in ["a", "b", "c"] {
        put(&client, key).await;
    }
    crash(server, "power-loss");
    let server = Server::spawn(&serve_synced);
    let client = server.client();
    for key in ["written", "a", "b", "c"] {
        assert!(item_exists(&client, "Orders", key).await, "{key} lost");
    }
    server.stop();
}
