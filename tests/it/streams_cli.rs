//! The streams side of the command line, run as a user would: `shoal serve`'s stream flags
//! and `shoal streams tail` against a running server.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_dynamodb::Client;
use serde_json::{json, Value};
use shoal::client::{Connection, STREAMS_TARGET_PREFIX};

use crate::sdk_server;
use sdk_server::Server;

fn shoal() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_shoal"));
    command.env("RUST_LOG", "warn");
    command
}

/// `shoal streams tail --endpoint ENDPOINT ARGS...`, with an idle limit so a failing test
/// ends instead of hanging.
fn tail(endpoint: &str, args: &[&str]) -> Command {
    let mut command = shoal();
    command
        .args([
            "streams",
            "tail",
            "--endpoint",
            endpoint,
            "--idle-exit-seconds",
            "20",
        ])
        .args(args);
    command
}

/// The JSON lines a finished tail printed.
fn lines(output: &Output) -> Vec<Value> {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
}

async fn create_table(client: &Client, name: &str, stream: Option<StreamViewType>) {
    let mut request = client
        .create_table()
        .table_name(name)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest);
    if let Some(view) = stream {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(view)
                .build()
                .unwrap(),
        );
    }
    request.send().await.expect("create table");
}

async fn put(client: &Client, table: &str, key: &str, value: &str) {
    client
        .put_item()
        .table_name(table)
        .item("pk", AttributeValue::S(key.to_string()))
        .item("v", AttributeValue::N(value.to_string()))
        .send()
        .await
        .expect("put item");
}

/// One Streams call over plain HTTP, answered 200.
async fn streams_call(connection: &mut Connection, operation: &str, body: Value) -> Value {
    let (status, bytes) = connection
        .call_target(STREAMS_TARGET_PREFIX, operation, &body)
        .await
        .unwrap();
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(status, 200, "{operation}: {answer}");
    answer
}

/// Every record of the table's stream as GetRecords returns it, shard by shard in order.
async fn get_records_json(server: &Server, client: &Client, table: &str) -> Vec<Value> {
    let arn = client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .unwrap()
        .table()
        .unwrap()
        .latest_stream_arn()
        .unwrap()
        .to_string();
    let mut connection = Connection::open(server.endpoint.trim_start_matches("http://"))
        .await
        .unwrap();
    let description =
        streams_call(&mut connection, "DescribeStream", json!({"StreamArn": arn})).await;
    let mut records = Vec::new();
    for shard in description["StreamDescription"]["Shards"]
        .as_array()
        .unwrap()
    {
        let mut iterator = streams_call(
            &mut connection,
            "GetShardIterator",
            json!({"StreamArn": arn, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"}),
        )
        .await["ShardIterator"]
            .clone();
        loop {
            let page = streams_call(
                &mut connection,
                "GetRecords",
                json!({"ShardIterator": iterator}),
            )
            .await;
            let batch = page["Records"].as_array().unwrap().clone();
            let empty = batch.is_empty();
            records.extend(batch);
            match page.get("NextShardIterator") {
                Some(next) if !empty => iterator = next.clone(),
                _ => break,
            }
        }
    }
    records
}

/// Waits until the table's stream has at least `count` shards (the upkeep rolls them over).
async fn wait_for_shards(server: &Server, client: &Client, table: &str, count: usize) {
    let streams = server.streams_client();
    let arn = client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .unwrap()
        .table()
        .unwrap()
        .latest_stream_arn()
        .unwrap()
        .to_string();
    for _ in 0..100 {
        let described = streams
            .describe_stream()
            .stream_arn(&arn)
            .send()
            .await
            .unwrap();
        if described.stream_description().unwrap().shards().len() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the stream of {table} never had {count} shards");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_prints_each_record_as_getrecords_returns_it_across_a_rollover() {
    let server = Server::spawn(&[
        "serve",
        "--in-memory",
        "--port",
        "0",
        "--stream-shard-records",
        "2",
    ]);
    let client = server.client();
    create_table(&client, "Music", Some(StreamViewType::NewAndOldImages)).await;
    put(&client, "Music", "a", "1").await;
    put(&client, "Music", "a", "2").await;
    // Two records: the shard rolls over, and the next record lands in its child.
    wait_for_shards(&server, &client, "Music", 2).await;
    client
        .delete_item()
        .table_name("Music")
        .key("pk", AttributeValue::S("a".into()))
        .send()
        .await
        .unwrap();

    let output = tail(
        &server.endpoint,
        &["--table", "Music", "--max-records", "3"],
    )
    .output()
    .unwrap();
    let printed = lines(&output);
    let names: Vec<&str> = printed
        .iter()
        .map(|record| record["eventName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["INSERT", "MODIFY", "REMOVE"]);
    assert_eq!(printed, get_records_json(&server, &client, "Music").await);
    assert_eq!(printed[2]["dynamodb"]["OldImage"]["v"], json!({"N": "2"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_follows_records_as_they_arrive() {
    let server = Server::spawn(&["serve", "--in-memory", "--port", "0"]);
    let client = server.client();
    create_table(&client, "Events", Some(StreamViewType::KeysOnly)).await;
    put(&client, "Events", "old", "1").await;

    // From the start: the old record, then one written while it waits.
    let from_start = tail(
        &server.endpoint,
        &["--table", "Events", "--max-records", "2"],
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    // From now on: never the old record. The tail may start reading after some of the new
    // ones: new ones are written until it has printed one.
    let from_now = tail(
        &server.endpoint,
        &[
            "--table",
            "Events",
            "--from",
            "latest",
            "--max-records",
            "1",
        ],
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let from_now = tokio::task::spawn_blocking(move || from_now.wait_with_output());
    let mut i = 0;
    while !from_now.is_finished() {
        tokio::time::sleep(Duration::from_millis(200)).await;
        put(&client, "Events", &format!("new{i}"), "1").await;
        i += 1;
        assert!(i < 100, "tail --from latest printed nothing");
    }
    let from_now = lines(&from_now.await.unwrap().unwrap());
    assert_eq!(from_now.len(), 1);
    let key = from_now[0]["dynamodb"]["Keys"]["pk"]["S"].as_str().unwrap();
    assert!(key.starts_with("new"), "{key}");

    let from_start = lines(
        &tokio::task::spawn_blocking(move || from_start.wait_with_output())
            .await
            .unwrap()
            .unwrap(),
    );
    let keys: Vec<&str> = from_start
        .iter()
        .map(|record| record["dynamodb"]["Keys"]["pk"]["S"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["old", "new0"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_outlives_a_restart_of_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();
    create_table(&client, "Durable", Some(StreamViewType::KeysOnly)).await;
    put(&client, "Durable", "before", "1").await;

    let mut tailing = tail(
        &server.endpoint,
        &["--table", "Durable", "--max-records", "2"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = tailing.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = lines_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(first.contains("\"before\""), "{first}");

    // The same data directory on the same port: the tail's connection and iterator are gone.
    let port = server.endpoint.rsplit(':').next().unwrap().to_string();
    server.stop();
    // Down for longer than the tail's poll interval, so that it finds no server for a while.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let server = Server::spawn(&[
        "serve".as_ref(),
        "--port".as_ref(),
        port.as_ref(),
        "--data-dir".as_ref(),
        dir.path().as_os_str(),
    ]);
    put(&server.client(), "Durable", "after", "1").await;
    let second = lines_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(second.contains("\"after\""), "{second}");
    let status = tokio::task::spawn_blocking(move || tailing.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(stderr.contains("lost the server"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_says_why_it_cannot_read() {
    let server = Server::spawn(&["serve", "--in-memory", "--port", "0"]);
    let client = server.client();
    create_table(&client, "Plain", None).await;
    let failure = |output: Output| {
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        String::from_utf8(output.stderr).unwrap()
    };
    let error = failure(
        tail(&server.endpoint, &["--table", "Plain"])
            .output()
            .unwrap(),
    );
    assert!(error.contains("table Plain has no stream"), "{error}");
    let error = failure(
        tail(&server.endpoint, &["--table", "Missing"])
            .output()
            .unwrap(),
    );
    assert!(error.contains("table Missing does not exist"), "{error}");

    // Idle: exits 0 after the idle time with nothing printed.
    create_table(&client, "Quiet", Some(StreamViewType::NewImage)).await;
    let output = shoal()
        .args(["streams", "tail", "--endpoint", &server.endpoint])
        .args(["--table", "Quiet", "--idle-exit-seconds", "1"])
        .output()
        .unwrap();
    assert!(lines(&output).is_empty());

    let endpoint = server.endpoint.clone();
    server.stop();
    let error = failure(tail(&endpoint, &["--table", "Plain"]).output().unwrap());
    assert!(error.contains("cannot reach a server at"), "{error}");
}

#[test]
fn serve_refuses_stream_flags_out_of_range() {
    for (flag, value) in [
        ("--stream-retention-seconds", "0"),
        ("--stream-shard-seconds", "0"),
        ("--stream-shard-records", "0"),
    ] {
        let output = shoal()
            .args(["serve", "--in-memory", "--port", "0", flag, value])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{flag} {value}: {output:?}");
        let error = String::from_utf8_lossy(&output.stderr);
        assert!(
            error.contains(&format!("invalid value '{value}' for '{flag}"))
                && error.contains("must be a whole number"),
            "{error}"
        );
    }
}
