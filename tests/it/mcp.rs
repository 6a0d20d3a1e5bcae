//! `shoal mcp` driven by the official MCP SDK's client (rmcp), as an agent's client would
//! drive it: over stdio (the client starts the binary) and over streamable HTTP (with and
//! without the bearer token), embedded and against a running `shoal serve --admin`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command as StdCommand, Stdio};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::process::Command;

use crate::sdk_server::Server;

type McpClient = RunningService<RoleClient, ()>;

const TOKEN: &str = "test-token-0123456789";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `shoal mcp ARGS...` started by the MCP client, over its stdin and stdout.
async fn stdio_client(args: &[&str]) -> McpClient {
    let mut command = Command::new(env!("CARGO_BIN_EXE_shoal"));
    command.arg("mcp").args(args).env("RUST_LOG", "warn");
    let transport = TokioChildProcess::new(command).expect("start shoal mcp");
    ().serve(transport).await.expect("MCP initialisation")
}

/// Calls tool `name` with `arguments`; the result and its text.
async fn call(client: &McpClient, name: &str, arguments: Value) -> (CallToolResult, String) {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let text = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (result, text)
}

/// Calls a tool that must succeed; its answer as JSON.
async fn ok_json(client: &McpClient, name: &str, arguments: Value) -> Value {
    let (result, text) = call(client, name, arguments).await;
    assert_eq!(result.is_error, Some(false), "{name}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}: {text}"))
}

fn orders_table() -> Value {
    json!({
        "TableName": "Orders",
        "AttributeDefinitions": [
            {"AttributeName": "customer", "AttributeType": "S"},
            {"AttributeName": "order", "AttributeType": "S"},
            {"AttributeName": "placed", "AttributeType": "N"},
            {"AttributeName": "status", "AttributeType": "S"}],
        "KeySchema": [
            {"AttributeName": "customer", "KeyType": "HASH"},
            {"AttributeName": "order", "KeyType": "RANGE"}],
        "LocalSecondaryIndexes": [{"IndexName": "ByPlaced",
            "KeySchema": [{"AttributeName": "customer", "KeyType": "HASH"},
                          {"AttributeName": "placed", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"}}],
        "GlobalSecondaryIndexes": [{"IndexName": "ByStatus",
            "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"}}],
        "BillingMode": "PAY_PER_REQUEST",
        "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    })
}

fn order(customer: &str, order: &str, status: &str) -> Value {
    json!({"TableName": "Orders", "Item": {
        "customer": {"S": customer}, "order": {"S": order},
        "placed": {"N": "1700000000"}, "status": {"S": status}}})
}

/// The DynamoDB tools: every operation served is listed with a schema naming its required
/// members, and calls reach the database; refusals come back as tool errors with the
/// exception's name.
async fn dynamodb_tools(client: &McpClient) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    let refused: Vec<&str> = shoal::tables::control::not_offered::NOT_OFFERED
        .iter()
        .map(|(name, _)| *name)
        .collect();
    for operation in shoal::tables::SUPPORTED_OPERATIONS {
        assert_eq!(
            names.contains(operation),
            !refused.contains(operation),
            "{operation}"
        );
    }
    for name in [
        "bench_model",
        "plan_capacity_and_cost",
        "describe_partitions",
        "tail_stream",
        "list_fault_rules",
        "add_fault_rules",
        "clear_fault_rules",
        "crash_test",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let put = tools.iter().find(|tool| tool.name == "PutItem").unwrap();
    assert_eq!(put.input_schema["required"], json!(["TableName", "Item"]));
    assert!(put
        .description
        .as_deref()
        .unwrap_or("")
        .contains("DynamoDB JSON"));

    ok_json(client, "CreateTable", orders_table()).await;
    ok_json(client, "PutItem", order("ada", "1", "PENDING")).await;
    ok_json(client, "PutItem", order("ada", "2", "SHIPPED")).await;
    ok_json(client, "PutItem", order("bob", "1", "PENDING")).await;
    let got = ok_json(
        client,
        "GetItem",
        json!({"TableName": "Orders", "Key": {"customer": {"S": "ada"}, "order": {"S": "2"}}}),
    )
    .await;
    assert_eq!(got["Item"]["status"], json!({"S": "SHIPPED"}));
    let queried = ok_json(
        client,
        "Query",
        json!({"TableName": "Orders", "IndexName": "ByStatus",
               "KeyConditionExpression": "#s = :s",
               "ExpressionAttributeNames": {"#s": "status"},
               "ExpressionAttributeValues": {":s": {"S": "PENDING"}}}),
    )
    .await;
    assert_eq!(queried["Count"], 2);

    let (missing, text) = call(
        client,
        "GetItem",
        json!({"TableName": "Nope", "Key": {"customer": {"S": "ada"}}}),
    )
    .await;
    assert_eq!(missing.is_error, Some(true));
    assert!(text.starts_with("ResourceNotFoundException"), "{text}");
    let (failed, text) = call(
        client,
        "PutItem",
        json!({"TableName": "Orders", "Item": order("ada", "1", "X")["Item"],
               "ConditionExpression": "attribute_not_exists(customer)"}),
    )
    .await;
    assert_eq!(failed.is_error, Some(true));
    assert!(
        text.starts_with("ConditionalCheckFailedException"),
        "{text}"
    );
    let (unknown, text) = call(client, "DropEverything", json!({})).await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(text.contains("no tool is named"), "{text}");
}

/// The stream of Orders holds the three inserts, in order.
async fn stream_tail(client: &McpClient) {
    let records = ok_json(
        client,
        "tail_stream",
        json!({"table": "Orders", "max_records": 3, "wait_seconds": 5}),
    )
    .await;
    let records = records["Records"].as_array().unwrap().clone();
    let keys: Vec<(String, String)> = records
        .iter()
        .map(|record| {
            let record = &record["dynamodb"];
            (
                record["Keys"]["customer"]["S"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                record["Keys"]["order"]["S"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [("ada", "1"), ("ada", "2"), ("bob", "1")].map(|(c, o)| (c.to_string(), o.to_string()))
    );
}

/// describe_partitions: ada holds two orders, bob one; the GSI splits them by status; the
/// LSI table's item collections are sized with their LSI entries.
async fn partitions(client: &McpClient) {
    let described = ok_json(client, "describe_partitions", json!({"table": "Orders"})).await;
    assert_eq!(described["complete"], true);
    assert_eq!(described["items"], 3);
    assert_eq!(described["partitions"], 2);
    let largest = &described["largest_partitions"];
    assert_eq!(largest[0]["partition_key"], json!({"S": "ada"}));
    assert_eq!(largest[0]["items"], 2);
    assert_eq!(largest[1]["items"], 1);
    let by_status = &described["global_secondary_indexes"]["ByStatus"];
    assert_eq!(by_status["partitions"], 2);
    assert_eq!(
        by_status["largest"][0]["partition_key"],
        json!({"S": "PENDING"})
    );
    assert_eq!(by_status["largest"][0]["items"], 2);
    // Each base item and each LSI entry (ALL: the same attributes) counts its size + 100.
    let collection = &described["largest_item_collections"][0];
    let bytes = largest[0]["bytes"].as_u64().unwrap();
    assert_eq!(
        collection["collection_bytes"].as_u64().unwrap(),
        2 * bytes + 4 * 100
    );
}

#[test]
fn stdio_serves_the_dynamodb_operations_and_shoal_tools_embedded() {
    runtime().block_on(async {
        let client = stdio_client(&["--in-memory"]).await;
        let info = client.peer_info().expect("server info");
        let name = info.server_info.as_ref().map(|server| server.name.as_str());
        assert_eq!(name, Some("shoal"));
        dynamodb_tools(&client).await;
        stream_tail(&client).await;
        partitions(&client).await;
        // Fault rules belong to a server: embedded, the tool says how to reach one.
        let (refused, text) = call(&client, "list_fault_rules", json!({})).await;
        assert_eq!(refused.is_error, Some(true));
        assert!(text.contains("shoal serve --admin"), "{text}");
        client.cancel().await.expect("close");
    });
}

#[test]
fn bench_plan_and_crash_test_tools_run_and_report() {
    runtime().block_on(async {
        let client = stdio_client(&["--in-memory"]).await;
        let model = json!({
            "name": "one key",
            "tables": [{"TableName": "Things", "BillingMode": "PAY_PER_REQUEST",
                        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}],
            "generators": {"k": {"type": "number", "range": [0, 9]}},
            "load": [{"table": "Things", "count": 10, "item": {"pk": {"S": "${k}"}}}],
            "patterns": [{"name": "read", "operation": "GetItem",
                          "request": {"TableName": "Things", "Key": {"pk": {"S": "${k}"}}}}],
            "run": {"operations": 200, "rate": 100}
        });
        let (bench, text) = call(&client, "bench_model", json!({"model": model})).await;
        assert_eq!(bench.is_error, Some(false), "{text}");
        assert!(text.contains("read"), "{text}");
        let report = ok_json(
            &client,
            "bench_model",
            json!({"model": model, "format": "json"}),
        )
        .await;
        assert_eq!(report["patterns"][0]["operations"], 200);
        // 100 eventually consistent GetItems of small items a second: 50 RCU/s on-demand.
        let (plan, text) = call(&client, "plan_capacity_and_cost", json!({"model": model})).await;
        assert_eq!(plan.is_error, Some(false), "{text}");
        assert!(
            text.starts_with("monthly cost at the modelled rate"),
            "{text}"
        );
        assert!(text.contains("capacity plan of `one key`"), "{text}");
        // A model over the tool's limits is refused before it runs.
        let mut long = model.clone();
        long["run"] = json!({"seconds": 3600});
        let (refused, text) = call(&client, "bench_model", json!({"model": long})).await;
        assert_eq!(refused.is_error, Some(true));
        assert!(text.contains("run.seconds is at most"), "{text}");

        let (crashed, text) = call(
            &client,
            "crash_test",
            json!({"mode": "power-loss", "cycles": 2, "seed": 7}),
        )
        .await;
        assert_eq!(crashed.is_error, Some(false), "{text}");
        assert!(text.ends_with("no violations"), "{text}");
        client.cancel().await.expect("close");
    });
}

#[test]
fn endpoint_mode_reaches_a_running_servers_fault_rules_and_stream() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &["--admin"]);
    runtime().block_on(async {
        let client = stdio_client(&["--endpoint", &server.endpoint]).await;
        ok_json(&client, "CreateTable", orders_table()).await;
        ok_json(&client, "PutItem", order("ada", "1", "PENDING")).await;
        let added = ok_json(
            &client,
            "add_fault_rules",
            json!({"rules": [{"id": "broken-reads", "operation": "GetItem", "table": "Orders",
                              "error": {"code": "InternalServerError", "probability": 1.0}}]}),
        )
        .await;
        assert_eq!(added["rules"][0]["id"], "broken-reads");
        let listed = ok_json(&client, "list_fault_rules", json!({})).await;
        assert_eq!(listed["rules"][0]["id"], "broken-reads");
        let key = json!({"TableName": "Orders",
                         "Key": {"customer": {"S": "ada"}, "order": {"S": "1"}}});
        let (failed, text) = call(&client, "GetItem", key.clone()).await;
        assert_eq!(failed.is_error, Some(true));
        assert!(text.starts_with("InternalServerError"), "{text}");
        let (bad, text) = call(
            &client,
            "add_fault_rules",
            json!({"rules": [{"operation": "GetItem"}]}),
        )
        .await;
        assert_eq!(bad.is_error, Some(true), "{text}");
        ok_json(&client, "clear_fault_rules", json!({"id": "broken-reads"})).await;
        let got = ok_json(&client, "GetItem", key).await;
        assert_eq!(got["Item"]["status"], json!({"S": "PENDING"}));
        // The stream read over HTTP, and the Streams operations under their own prefix.
        let records = ok_json(
            &client,
            "tail_stream",
            json!({"table": "Orders", "max_records": 1, "wait_seconds": 5}),
        )
        .await;
        assert_eq!(records["Records"][0]["eventName"], "INSERT");
        let streams = ok_json(&client, "ListStreams", json!({"TableName": "Orders"})).await;
        assert_eq!(streams["Streams"].as_array().map(Vec::len), Some(1));
        let described = ok_json(&client, "describe_partitions", json!({"table": "Orders"})).await;
        assert_eq!(described["items"], 1);
        client.cancel().await.expect("close");
    });
    server.stop();
}

/// `shoal mcp ARGS...` serving HTTP; its MCP URL from the line it prints.
fn start_http(args: &[&str], token: Option<&str>) -> (Child, String) {
    let mut command = StdCommand::new(env!("CARGO_BIN_EXE_shoal"));
    command
        .arg("mcp")
        .args(args)
        .env("RUST_LOG", "warn")
        .env_remove("SHOAL_MCP_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(token) = token {
        command.env("SHOAL_MCP_TOKEN", token);
    }
    let mut child = command.spawn().expect("start shoal mcp --http");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the address line");
    let url = line
        .trim()
        .strip_prefix("shoal mcp listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, url)
}

#[test]
fn streamable_http_answers_only_requests_with_the_bearer_token() {
    let (mut child, url) = start_http(&["--in-memory", "--http", "127.0.0.1:0"], Some(TOKEN));
    runtime().block_on(async {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}});
        let http = reqwest::Client::new();
        for authorization in [None, Some("Bearer wrong-token-0123456789"), Some(TOKEN)] {
            let mut request = http
                .post(&url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .body(initialize.to_string());
            if let Some(value) = authorization {
                request = request.header("Authorization", value);
            }
            let response = request.send().await.expect("an answer");
            assert_eq!(response.status().as_u16(), 401, "{authorization:?}");
            assert_eq!(response.headers()["www-authenticate"], "Bearer");
        }

        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(TOKEN),
        );
        let client: McpClient = ().serve(transport).await.expect("MCP over HTTP");
        dynamodb_tools(&client).await;
        partitions(&client).await;
        client.cancel().await.expect("close");
    });
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn http_without_a_token_is_refused_with_the_reason() {
    for (address, reason) in [
        ("0.0.0.0:0", "not a loopback address"),
        ("127.0.0.1:0", "needs a bearer token"),
    ] {
        let output = StdCommand::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["mcp", "--in-memory", "--http", address])
            .env_remove("SHOAL_MCP_TOKEN")
            .output()
            .expect("run shoal mcp");
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(reason), "{address}: {stderr}");
    }
}
