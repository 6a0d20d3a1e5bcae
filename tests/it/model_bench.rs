//! `shoal bench --model`: a small model run embedded and against `shoal serve`, checking the
//! report's structure and that its capacity figures are the sums of what the requests were
//! charged; a hot-key model gets the throttling verdict; the command line prints text, JSON,
//! HTML and comparisons, and a comparison against a saved baseline fails on the condition
//! that trips.

use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Value};
use shoal::bench::data_model::model::Model;
use shoal::bench::data_model::report::Report;
use shoal::bench::data_model::{run_model, BenchOptions};
use shoal_tables::{Database, Options};

use crate::sdk_server;
use sdk_server::Server;

/// A table with a GSI; items of fixed size (1 WCU to write, 0.5 RCU to read eventually
/// consistently, 1 WCU more for the GSI entry, whose key never changes), a fixed number of
/// operations.
fn small_model(operations: u64) -> Value {
    json!({
        "name": "small",
        "tables": [{
            "TableName": "Orders",
            "AttributeDefinitions": [
                {"AttributeName": "customer", "AttributeType": "S"},
                {"AttributeName": "order", "AttributeType": "N"},
                {"AttributeName": "status", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "customer", "KeyType": "HASH"},
                {"AttributeName": "order", "KeyType": "RANGE"}
            ],
            "GlobalSecondaryIndexes": [{
                "IndexName": "ByStatus",
                "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }],
            "BillingMode": "PAY_PER_REQUEST"
        }],
        "generators": {
            "customer": {"type": "string", "prefix": "c#", "cardinality": 50},
            "order": {"type": "number", "range": [1, 1000]},
            "status": {"type": "string", "prefix": "s#", "cardinality": 1}
        },
        "load": [{"table": "Orders", "count": 100, "item": {
            "customer": {"S": "${customer}"}, "order": {"N": "${order}"}, "status": {"S": "${status}"}
        }}],
        "patterns": [
            {"name": "place", "operation": "PutItem", "weight": 1, "request": {
                "TableName": "Orders",
                "Item": {"customer": {"S": "${customer}"}, "order": {"N": "${order}"}, "status": {"S": "${status}"}}
            }},
            {"name": "look", "operation": "GetItem", "weight": 1, "request": {
                "TableName": "Orders", "Key": {"customer": {"S": "${customer}"}, "order": {"N": "${order}"}}
            }}
        ],
        "run": {"operations": operations, "concurrency": 2, "seed": 7, "rate": 1000}
    })
}

fn parse(model: &Value) -> Model {
    Model::parse(&model.to_string()).unwrap()
}

/// The report of `model`, run in this process.
fn report_of(model: &Value) -> Report {
    run_model(&parse(model), &BenchOptions::default()).unwrap()
}

/// The listed partitions of `target` (a table, or `table/index`): key and write units per
/// second at the modelled rate, in key order.
fn partition_writes(report: &Report, target: &str) -> Vec<(String, f64)> {
    let mut partitions: Vec<(String, f64)> = report
        .hot_partitions
        .iter()
        .filter(|p| p.target == target)
        .map(|p| (p.key.clone(), p.write_units_per_second))
        .collect();
    partitions.sort_by(|a, b| a.0.cmp(&b.0));
    partitions
}

#[test]
fn embedded_report_sums_what_the_requests_were_charged() {
    let database = Arc::new(Database::open_in_memory(Options::default()).unwrap());
    let options = BenchOptions {
        database: Some(Arc::clone(&database)),
        ..BenchOptions::default()
    };
    let report = run_model(&parse(&small_model(400)), &options).unwrap();
    assert_eq!(report.loaded_items, 100);
    assert_eq!(report.patterns.len(), 2);
    let total: u64 = report.patterns.iter().map(|p| p.operations).sum();
    assert_eq!(total, 400);
    let place = &report.patterns[0];
    let look = &report.patterns[1];
    assert!(place.errors.is_empty() && look.errors.is_empty());
    // Every item is under 1 KB: a put is 1 WCU on the table and 1 on the GSI, a get 0.5 RCU.
    assert_eq!(place.write_units_per_call, 1.0);
    assert_eq!(place.index_units_per_call["Orders/ByStatus"], [0.0, 1.0]);
    assert_eq!(look.read_units_per_call, 0.5);
    assert!(
        look.latency.p50_ms <= look.latency.p99_ms && look.latency.p99_ms <= look.latency.max_ms
    );
    // The database's own meter saw the same units (load included: 100 puts of 2 WCU).
    let meter = database.consumed_capacity();
    let orders = &meter.iter().find(|(name, _)| name == "Orders").unwrap().1;
    let reported_writes = place.operations as f64 * 2.0 + 100.0 * 2.0;
    assert_eq!(orders.write_units, reported_writes);
    assert_eq!(orders.read_units, look.operations as f64 * 0.5);
    // Tables and indexes: the GSI took one write per base write.
    let table = &report.tables[0];
    assert_eq!(table.name, "Orders");
    assert!(table.item_count >= 100 && table.size_bytes > 0);
    assert_eq!(table.indexes[0].name, "ByStatus");
    assert_eq!(table.indexes[0].writes_per_base_write, 1.0);
    assert_eq!(table.indexes[0].write_units_per_base_write_unit, 1.0);
    // Partitions: 50 customers at most, all far under the limits, and the GSI's one
    // partition (every item has the same status), which every put writes: 1,000 ops/s
    // modelled, half of them puts, 1 GSI WCU each: 500 WCU/s, half the partition limit.
    assert!(report
        .hot_partitions
        .iter()
        .filter(|p| p.target == "Orders")
        .all(|p| p.key.starts_with("c#") && p.limit_share < 0.5));
    let gsi: Vec<_> = report
        .hot_partitions
        .iter()
        .filter(|p| p.target == "Orders/ByStatus")
        .collect();
    assert_eq!(gsi.len(), 1, "{gsi:?}");
    assert_eq!(gsi[0].key, "s#xxxxxxx0");
    assert!(
        (gsi[0].write_units_per_second - 500.0).abs() < 1e-6,
        "{gsi:?}"
    );
    assert!((gsi[0].limit_share - 0.5).abs() < 1e-9);
    assert_eq!(
        report.verdicts,
        ["no partition, table or index over DynamoDB's limits at the modelled rate"]
    );
    // Cost: the run's measured rate, at the default prices.
    assert!(report.cost.on_demand_monthly > 0.0 && report.cost.provisioned_monthly > 0.0);
    let json = serde_json::to_value(&report).unwrap();
    for member in [
        "patterns",
        "tables",
        "hot_partitions",
        "item_collections",
        "cost",
        "verdicts",
    ] {
        assert!(json.get(member).is_some(), "{member}");
    }
}

#[test]
fn the_same_model_against_shoal_serve_reports_the_same_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let options = BenchOptions {
        endpoint: Some(server.endpoint.clone()),
        ..BenchOptions::default()
    };
    let report = run_model(&parse(&small_model(200)), &options).unwrap();
    assert!(report.target.starts_with("http://127.0.0.1:"));
    assert_eq!(report.loaded_items, 100);
    assert_eq!(
        report.patterns.iter().map(|p| p.operations).sum::<u64>(),
        200
    );
    assert_eq!(report.patterns[0].write_units_per_call, 1.0);
    assert_eq!(
        report.patterns[0].index_units_per_call["Orders/ByStatus"],
        [0.0, 1.0]
    );
    assert_eq!(report.patterns[1].read_units_per_call, 0.5);
    assert!(report.patterns.iter().all(|p| p.errors.is_empty()));
    server.stop();
}

#[test]
fn a_hot_key_gets_the_throttling_verdict() {
    let mut model = small_model(2000);
    // Every write goes to one customer, modelled at 2,000 writes a second: 2,000 WCU/s on
    // one partition, twice DynamoDB's per-partition limit.
    model["generators"]["customer"] = json!({"type": "string", "prefix": "c#", "cardinality": 1000, "distribution": {"hot": {"share": 1.0, "keys": 1}}});
    model["patterns"] = json!([model["patterns"][0].clone()]);
    model["patterns"][0]["rate"] = json!(2000);
    model["run"] = json!({"operations": 2000, "concurrency": 2});
    let report = report_of(&model);
    let hot = &report.hot_partitions[0];
    assert_eq!(hot.key, "c#xxxxxxx0");
    assert!((hot.write_units_per_second - 2000.0).abs() < 1.0, "{hot:?}");
    assert!(
        report.verdicts.iter().any(|v| v.starts_with(
            "hot key `c#xxxxxxx0` (Orders): 2,000 WCU/s, 2.00x the per-partition limit: DynamoDB would throttle it"
        )),
        "{:?}",
        report.verdicts
    );
}

/// A table keyed (customer, order) with a KEYS_ONLY LSI on `placed`, and one pattern: PutItem
/// of a new ~1.4 KB item, every one to customer `c#0`, modelled at `rate` a second.
fn lsi_model(rate: u64, provisioned_wcu: Option<u64>) -> Value {
    let mut table = json!({
        "TableName": "Orders",
        "AttributeDefinitions": [
            {"AttributeName": "customer", "AttributeType": "S"},
            {"AttributeName": "order", "AttributeType": "N"},
            {"AttributeName": "placed", "AttributeType": "S"}
        ],
        "KeySchema": [
            {"AttributeName": "customer", "KeyType": "HASH"},
            {"AttributeName": "order", "KeyType": "RANGE"}
        ],
        "LocalSecondaryIndexes": [{
            "IndexName": "ByPlaced",
            "KeySchema": [
                {"AttributeName": "customer", "KeyType": "HASH"},
                {"AttributeName": "placed", "KeyType": "RANGE"}
            ],
            "Projection": {"ProjectionType": "KEYS_ONLY"}
        }],
        "BillingMode": "PAY_PER_REQUEST"
    });
    if let Some(wcu) = provisioned_wcu {
        table["BillingMode"] = json!("PROVISIONED");
        table["ProvisionedThroughput"] =
            json!({"ReadCapacityUnits": 100, "WriteCapacityUnits": wcu});
    }
    json!({
        "name": "lsi",
        "tables": [table],
        "generators": {
            "order": {"type": "sequence"},
            "body": {"type": "string", "length": [1400, 1400]}
        },
        "patterns": [{"name": "place", "operation": "PutItem", "rate": rate, "request": {
            "TableName": "Orders",
            "Item": {
                "customer": {"S": "c#0"}, "order": {"N": "${order}"},
                "placed": {"S": "2026-11-28"}, "body": {"S": "${body}"}
            }
        }}],
        "run": {"operations": 400, "concurrency": 2, "seed": 3}
    })
}

#[test]
fn lsi_units_load_the_table_s_partition_and_its_throughput() {
    let report = report_of(&lsi_model(400, None));
    // By hand (SPEC §5): the item is 1,400 bytes of `body` plus its other attributes
    // (customer 8+3, order 5+~2, placed 6+10, body 4): about 1.44 KB, so 2 WCU; the KEYS_ONLY
    // LSI entry (table key, LSI key) is under 1 KB: 1 WCU. 3 WCU a put, 400 puts a second,
    // all on customer c#0: 1,200 WCU/s on one partition, where DynamoDB allows 1,000.
    let place = &report.patterns[0];
    assert_eq!(place.write_units_per_call, 2.0, "{place:?}");
    assert_eq!(place.index_units_per_call["Orders/ByPlaced"], [0.0, 1.0]);
    let hot = &report.hot_partitions[0];
    assert_eq!((hot.target.as_str(), hot.key.as_str()), ("Orders", "c#0"));
    assert!(
        (hot.write_units_per_second - 1200.0).abs() < 1e-6,
        "{hot:?}"
    );
    assert!(
        report.verdicts.iter().any(|v| v
            == "hot key `c#0` (Orders): 1,200 WCU/s, 1.20x the per-partition limit: DynamoDB would throttle it"),
        "{:?}",
        report.verdicts
    );
    // The neighbouring case that must not change: without the LSI, 2 WCU a put is 800
    // WCU/s, under the limit, and no verdict.
    let mut plain = lsi_model(400, None);
    let table = plain["tables"][0].as_object_mut().unwrap();
    table.remove("LocalSecondaryIndexes");
    table["AttributeDefinitions"].as_array_mut().unwrap().pop();
    let report = report_of(&plain);
    assert!((report.hot_partitions[0].write_units_per_second - 800.0).abs() < 1e-6);
    assert_eq!(
        report.verdicts,
        ["no partition, table or index over DynamoDB's limits at the modelled rate"]
    );
}

#[test]
fn an_lsi_draws_on_its_table_s_provisioned_throughput() {
    // 300 puts a second at 3 WCU (2 for the item, 1 for the LSI entry): 900 WCU/s against a
    // table provisioned with 800. Without counting the LSI it would be 600: under. Burst
    // capacity, 300 s of 800 WCU = 240,000 units, drawn at 100 a second lasts 2,400 s.
    let report = report_of(&lsi_model(300, Some(800)));
    assert!(
        report.verdicts.iter().any(|v| v
            == "Orders needs 900 WCU/s at the modelled rate and has 800: writes would throttle once burst capacity (300 s of unused units) is spent, after 40 minutes"),
        "{:?}",
        report.verdicts
    );
    // With 1,000 provisioned, 900 fits: no verdict on the table.
    let report = report_of(&lsi_model(300, Some(1000)));
    assert!(
        !report
            .verdicts
            .iter()
            .any(|v| v.starts_with("Orders needs")),
        "{:?}",
        report.verdicts
    );
}

#[test]
fn a_query_of_a_gsi_loads_the_gsi_s_partition() {
    let mut model = small_model(300);
    // One status for every order: every query of the GSI reads one partition, of 20
    // KEYS_ONLY entries (orders 1 to 20 of one customer). Each is the table's key and the
    // GSI's: customer (8 + 10 bytes), order (5 + at most 3), status (6 + 10), at most 42
    // bytes; 20 of them are under 4 KB: one read, eventually consistent, 0.5 RCU. At
    // 7,000 queries a second, 3,500 RCU/s on the GSI's partition `s#xxxxxxx0`, where
    // DynamoDB allows 3,000.
    model["generators"]["customer"]["cardinality"] = json!(1);
    model["generators"]["order"] = json!({"type": "sequence"});
    model["load"][0]["count"] = json!(20);
    model["patterns"] = json!([{"name": "by status", "operation": "Query", "rate": 7000, "request": {
        "TableName": "Orders", "IndexName": "ByStatus",
        "KeyConditionExpression": "#s = :s",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {":s": {"S": "${status}"}}
    }}]);
    model["run"] = json!({"operations": 300, "concurrency": 2});
    let report = report_of(&model);
    let query = &report.patterns[0];
    assert_eq!(query.index_units_per_call["Orders/ByStatus"], [0.5, 0.0]);
    let hot = &report.hot_partitions[0];
    assert_eq!(
        (hot.target.as_str(), hot.key.as_str()),
        ("Orders/ByStatus", "s#xxxxxxx0")
    );
    assert!((hot.read_units_per_second - 3500.0).abs() < 1e-6, "{hot:?}");
    assert!(
        report.verdicts.iter().any(|v| v
            == "hot key `s#xxxxxxx0` (Orders/ByStatus): 3,500 RCU/s, 1.17x the per-partition limit: DynamoDB would throttle it"),
        "{:?}",
        report.verdicts
    );
}

#[test]
fn provisioned_gsis_short_of_write_capacity_are_named() {
    let mut model = small_model(300);
    model["tables"][0]["BillingMode"] = json!("PROVISIONED");
    model["tables"][0]["ProvisionedThroughput"] =
        json!({"ReadCapacityUnits": 1000, "WriteCapacityUnits": 1000});
    model["tables"][0]["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] =
        json!({"ReadCapacityUnits": 5, "WriteCapacityUnits": 5});
    model["run"]["rate"] = json!(100);
    model["run"]["operations"] = json!(300);
    let report = report_of(&model);
    // Half of 100 ops/s are puts: 50 WCU/s on the GSI against 5; its burst, 300 s of 5 WCU
    // = 1,500 units, drawn at 45 a second lasts 33 s.
    assert!(
        report
            .verdicts
            .iter()
            .any(|v| v == "Orders/ByStatus needs 50 WCU/s at the modelled rate and has 5: writes to the base table would throttle once burst capacity (300 s of unused units) is spent, after 33 s"),
        "{:?}",
        report.verdicts
    );
}

#[test]
fn bad_model_files_are_refused_with_what_is_wrong() {
    let mut unknown = small_model(10);
    unknown["run"]["speed"] = json!(1);
    let error = Model::parse(&unknown.to_string()).unwrap_err();
    assert!(error.contains("unknown field `speed`"), "{error}");
    let mut operation = small_model(10);
    operation["patterns"][0]["operation"] = json!("PutItems");
    let error = Model::parse(&operation.to_string()).unwrap_err();
    assert!(error.contains("unknown operation `PutItems`"), "{error}");
    let mut placeholder = small_model(10);
    placeholder["patterns"][1]["request"]["Key"]["customer"]["S"] = json!("${nobody}");
    let error = run_model(&parse(&placeholder), &BenchOptions::default()).unwrap_err();
    assert_eq!(error, "pattern `look`: `${nobody}` names no generator");
}

#[test]
fn the_command_line_prints_text_json_html_and_comparisons() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.json");
    let second = dir.path().join("second.json");
    std::fs::write(&first, small_model(100).to_string()).unwrap();
    let mut other = small_model(100);
    other["name"] = json!("without the index");
    other["tables"][0]
        .as_object_mut()
        .unwrap()
        .remove("GlobalSecondaryIndexes");
    other["tables"][0]["AttributeDefinitions"]
        .as_array_mut()
        .unwrap()
        .truncate(2);
    std::fs::write(&second, other.to_string()).unwrap();
    let html = dir.path().join("report.html");
    let shoal = env!("CARGO_BIN_EXE_shoal");
    let text = Command::new(shoal)
        .args(["bench", "--model"])
        .arg(&first)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        text.status.success(),
        "{}",
        String::from_utf8_lossy(&text.stderr)
    );
    let text = String::from_utf8(text.stdout).unwrap();
    for section in [
        "access patterns",
        "tables and indexes",
        "hottest partitions",
        "cost per month",
        "verdicts",
    ] {
        assert!(text.contains(section), "{section}: {text}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!doctype html>") && page.contains("<svg") && page.contains("place"));
    let json = Command::new(shoal)
        .args(["bench", "--json", "--model"])
        .arg(&first)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["patterns"][0]["name"], "place");
    let compared = Command::new(shoal)
        .args(["bench", "compare"])
        .arg(&first)
        .arg(&second)
        .output()
        .unwrap();
    assert!(
        compared.status.success(),
        "{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    let compared = String::from_utf8(compared.stdout).unwrap();
    assert!(
        compared.contains("small") && compared.contains("without the index"),
        "{compared}"
    );
    assert!(compared.contains("$/month on-demand"));
}

#[test]
fn against_an_enforcing_server_the_report_counts_the_throttled_requests() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--capacity", "enforce"]);
    let mut model = small_model(700);
    // 1 WCU provisioned: 300 s of burst credit, then ProvisionedThroughputExceededException.
    model["tables"][0]["BillingMode"] = json!("PROVISIONED");
    model["tables"][0]["ProvisionedThroughput"] =
        json!({"ReadCapacityUnits": 1000, "WriteCapacityUnits": 1});
    model["tables"][0]["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] =
        json!({"ReadCapacityUnits": 1000, "WriteCapacityUnits": 1000});
    model["load"] = json!([]);
    model["patterns"] = json!([model["patterns"][0].clone()]);
    // One attempt per call: what an application that does not retry would meet.
    model["run"] = json!({"operations": 700, "concurrency": 1, "attempts": 1});
    let options = BenchOptions {
        endpoint: Some(server.endpoint.clone()),
        ..BenchOptions::default()
    };
    let report = run_model(&parse(&model), &options).unwrap();
    let place = &report.patterns[0];
    let throttled = place.errors["ProvisionedThroughputExceededException"];
    assert!((350..=420).contains(&throttled), "{:?}", place.errors);
    assert_eq!(place.throttled_attempts, throttled);
    assert_eq!(place.retries, 0);
    assert_eq!(place.operations, 700);
    server.stop();
}

#[test]
fn tables_that_take_time_to_create_and_delete_are_waited_for() {
    // As on DynamoDB, tables stay CREATING and DELETING for a while: a second run must wait
    // for the first run's table to go, and for its own to become ACTIVE.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--transient-status-seconds", "1"]);
    let options = BenchOptions {
        endpoint: Some(server.endpoint.clone()),
        ..BenchOptions::default()
    };
    for _ in 0..2 {
        let report = run_model(&parse(&small_model(50)), &options).unwrap();
        assert!(
            report.patterns.iter().all(|p| p.errors.is_empty()),
            "{:?}",
            report.patterns
        );
    }
    server.stop();
}

#[test]
fn throttled_calls_and_loads_are_sent_again_as_the_sdks_do() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--capacity", "enforce"]);
    let mut model = small_model(1500);
    // Every item and every put on one customer: far over the partition's 1,000 WCU a
    // second as fast as the bench goes, so both the load and the puts are throttled.
    model["generators"]["customer"]["cardinality"] = json!(1);
    model["generators"]["order"] = json!({"type": "sequence"});
    model["load"][0]["count"] = json!(1500);
    model["patterns"] = json!([model["patterns"][0].clone()]);
    model["run"] = json!({"operations": 1500, "concurrency": 2});
    let options = BenchOptions {
        endpoint: Some(server.endpoint.clone()),
        ..BenchOptions::default()
    };
    let report = run_model(&parse(&model), &options).unwrap();
    // The load backed off instead of failing, and loaded every item.
    assert_eq!(report.loaded_items, 1500);
    assert!(report.load_retries > 0, "{report:?}");
    // Every put went through in the end; the throttled attempts were sent again.
    let place = &report.patterns[0];
    assert!(place.errors.is_empty(), "{:?}", place.errors);
    assert!(place.throttled_attempts > 0 && place.retries >= place.throttled_attempts);
    assert!(report.failing_patterns.is_empty());
    server.stop();
}

/// Orders of ~2.5 KB (a `notes` attribute of 2,400 bytes), each with `v` = 5, and one
/// pattern against them.
fn conditional_model(pattern: Value) -> Value {
    json!({
        "tables": [{
            "TableName": "Orders",
            "AttributeDefinitions": [{"AttributeName": "order", "AttributeType": "N"}],
            "KeySchema": [{"AttributeName": "order", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }],
        "generators": {
            "loaded": {"type": "sequence"},
            "existing": {"type": "number", "range": [0, 49]},
            "missing": {"type": "number", "range": [1000, 1999]},
            "notes": {"type": "string", "length": [2400, 2400]}
        },
        "load": [{"table": "Orders", "count": 50, "item": {
            "order": {"N": "${loaded}"}, "v": {"N": "5"}, "notes": {"S": "${notes}"}
        }}],
        "patterns": [pattern],
        "run": {"operations": 100, "concurrency": 1}
    })
}

#[test]
fn writes_whose_condition_fails_are_charged_as_dynamodb_charges_them() {
    // By hand (SPEC §5): an UpdateItem whose condition fails on a stored item is charged by
    // the size of the item it would have written: the 2,400-byte notes plus `order`, `v`
    // and `notes`' names and small numbers, about 2.42 KB: 3 WCU.
    let failing_update = json!({"name": "bump", "operation": "UpdateItem", "request": {
        "TableName": "Orders", "Key": {"order": {"N": "${existing}"}},
        "UpdateExpression": "SET v = v + :one", "ConditionExpression": "v > :ten",
        "ExpressionAttributeValues": {":one": {"N": "1"}, ":ten": {"N": "10"}}
    }});
    let report = report_of(&conditional_model(failing_update));
    let bump = &report.patterns[0];
    assert_eq!(bump.errors["ConditionalCheckFailedException"], 100);
    assert_eq!(bump.write_units_per_call, 3.0, "{bump:?}");
    // A failed condition is the call's outcome, not a failure of the run.
    assert!(report.failing_patterns.is_empty(), "{:?}", report.verdicts);
    // The neighbour that must not change: when the condition holds, the same update is
    // charged max(before, after) = 3 WCU too, through the table's own answer.
    let holding_update = json!({"name": "bump", "operation": "UpdateItem", "request": {
        "TableName": "Orders", "Key": {"order": {"N": "${existing}"}},
        "UpdateExpression": "SET v = v + :one", "ConditionExpression": "v < :max",
        "ExpressionAttributeValues": {":one": {"N": "1"}, ":max": {"N": "1000"}}
    }});
    let report = report_of(&conditional_model(holding_update));
    assert!(report.patterns[0].errors.is_empty());
    assert_eq!(report.patterns[0].write_units_per_call, 3.0);
    // A condition failing where no item is stored is charged 1 WCU.
    let failing_delete = json!({"name": "drop", "operation": "DeleteItem", "request": {
        "TableName": "Orders", "Key": {"order": {"N": "${missing}"}},
        "ConditionExpression": "attribute_exists(v)"
    }});
    let report = report_of(&conditional_model(failing_delete));
    assert_eq!(
        report.patterns[0].errors["ConditionalCheckFailedException"],
        100
    );
    assert_eq!(report.patterns[0].write_units_per_call, 1.0);
}

#[test]
fn a_pattern_that_keeps_failing_gets_a_verdict_and_fails_the_run() {
    let misspelt = json!({"name": "typo", "operation": "GetItem", "request": {
        "TableName": "Ordres", "Key": {"order": {"N": "${existing}"}}
    }});
    let model = conditional_model(misspelt);
    let report = report_of(&model);
    assert_eq!(report.failing_patterns, ["typo"]);
    assert_eq!(
        report.verdicts[0],
        "pattern `typo` failed on 100 of its 100 calls (100%), 100 of them ResourceNotFoundException: Requested resource not found"
    );
    // The command line prints the report, then exits 1 unless errors are allowed.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.json");
    std::fs::write(&path, model.to_string()).unwrap();
    let shoal = env!("CARGO_BIN_EXE_shoal");
    let failed = Command::new(shoal)
        .args(["bench", "--model"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(1));
    let text = String::from_utf8_lossy(&failed.stdout);
    assert!(text.contains("pattern `typo` failed on 100"), "{text}");
    let allowed = Command::new(shoal)
        .args(["bench", "--allow-errors", "--model"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(allowed.status.success());
}

#[test]
fn verdicts_need_enough_operations_behind_them() {
    // The hot key of `a_hot_key_gets_the_throttling_verdict` from 10 operations: listed,
    // but too few to extrapolate a verdict from.
    let mut model = small_model(10);
    model["generators"]["customer"] = json!({"type": "string", "prefix": "c#", "cardinality": 1});
    model["patterns"] = json!([model["patterns"][0].clone()]);
    model["patterns"][0]["rate"] = json!(2000);
    model["run"] = json!({"operations": 10, "concurrency": 1});
    let report = report_of(&model);
    assert!(report.hot_partitions[0].write_units_per_second > 1000.0);
    assert!(
        !report.verdicts.iter().any(|v| v.starts_with("hot key")),
        "{:?}",
        report.verdicts
    );
    // From 20 it gets one.
    model["run"]["operations"] = json!(20);
    let report = report_of(&model);
    assert!(report.verdicts.iter().any(|v| v.starts_with("hot key")));
}

/// One pattern writing `Orders` (a GSI `ByStatus` on `status`) at `rate` a second, from one
/// worker, `operations` times.
fn gsi_write_model(pattern: Value, rate: u64, operations: u64) -> Value {
    let mut model = small_model(operations);
    let mut pattern = pattern;
    pattern["rate"] = json!(rate);
    model["patterns"] = json!([pattern]);
    // New orders only: an overwrite that leaves the GSI entry as it was writes no GSI unit.
    model["generators"]["order"] = json!({"type": "sequence"});
    model["run"] = json!({"operations": operations, "concurrency": 1, "seed": 5});
    model
}

#[test]
fn gsi_writes_load_the_gsi_partition_of_the_item_s_key_value() {
    // 1,200 puts a second, every item with the one status `s#xxxxxxx0`: each put writes a
    // KEYS_ONLY entry under 1 KB to the GSI, 1 WCU, all on the GSI's partition of that
    // value: 1,200 WCU/s where DynamoDB allows 1,000. The table's partitions (50 customers)
    // take 24 WCU/s each.
    let put = json!({"name": "place", "operation": "PutItem", "request": {
        "TableName": "Orders",
        "Item": {"customer": {"S": "${customer}"}, "order": {"N": "${order}"}, "status": {"S": "${status}"}}
    }});
    let report = report_of(&gsi_write_model(put.clone(), 1200, 400));
    let hot = &report.hot_partitions[0];
    assert_eq!(
        (hot.target.as_str(), hot.key.as_str()),
        ("Orders/ByStatus", "s#xxxxxxx0")
    );
    assert!(
        (hot.write_units_per_second - 1200.0).abs() < 1e-6,
        "{hot:?}"
    );
    // Its heat over time: the run lasts a third of a second, one second of 1,200 WCU at the
    // modelled rate, 1.2 times the limit.
    assert_eq!(hot.per_second.len(), 1, "{hot:?}");
    assert!((hot.per_second[0][1] - 1200.0).abs() < 1e-6, "{hot:?}");
    assert!((hot.limit_share_per_second[0] - 1.2).abs() < 1e-9);
    assert_eq!(hot.seconds_over_limit, 1);
    assert!(
        report.verdicts.iter().any(|v| v
            == "hot key `s#xxxxxxx0` (Orders/ByStatus): 1,200 WCU/s, 1.20x the per-partition limit: DynamoDB would throttle it"),
        "{:?}",
        report.verdicts
    );
    assert_eq!(
        report.plan.first,
        "already past a limit at the modelled rate (0.83x): GSI ByStatus of Orders, partition `s#xxxxxxx0` (WCU limit)"
    );
    // The neighbouring case that must not change: the same puts over two statuses split the
    // 1,200 WCU/s between two GSI partitions, each under the limit: no verdict.
    let mut model = gsi_write_model(put, 1200, 400);
    model["generators"]["status"]["cardinality"] = json!(2);
    let report = report_of(&model);
    let gsi = partition_writes(&report, "Orders/ByStatus");
    assert_eq!(gsi.len(), 2, "{gsi:?}");
    let total: f64 = gsi.iter().map(|(_, units)| units).sum();
    assert!((total - 1200.0).abs() < 1e-6, "{gsi:?}");
    assert!(gsi.iter().all(|(_, units)| *units < 1000.0));
    assert_eq!(
        report.verdicts,
        ["no partition, table or index over DynamoDB's limits at the modelled rate"]
    );
}

#[test]
fn a_gsi_key_change_splits_its_units_between_the_old_and_new_partitions() {
    // 20 orders of customer c#0 loaded with status `s#xxxxxxx0`, then each updated once to
    // `done`: the GSI entry moves, a delete of the old entry (1 WCU) and a put of the new
    // (1 WCU), half on each partition: at 300 updates a second, 300 WCU/s on each.
    let update = json!({"name": "finish", "operation": "UpdateItem", "request": {
        "TableName": "Orders",
        "Key": {"customer": {"S": "c#xxxxxxx0"}, "order": {"N": "${again}"}},
        "UpdateExpression": "SET #s = :done",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {":done": {"S": "done"}}
    }});
    let mut model = gsi_write_model(update, 300, 20);
    model["generators"] = model_generators_for_twenty_orders();
    model["load"][0]["count"] = json!(20);
    let report = report_of(&model);
    let finish = &report.patterns[0];
    assert!(finish.errors.is_empty(), "{finish:?}");
    assert_eq!(finish.index_units_per_call["Orders/ByStatus"], [0.0, 2.0]);
    assert_eq!(
        partition_writes(&report, "Orders/ByStatus"),
        [
            ("done".to_string(), 300.0),
            ("s#xxxxxxx0".to_string(), 300.0)
        ]
    );
    // The neighbouring case: a delete removes the entry from the old value's partition
    // only (1 WCU each, 300 WCU/s).
    let delete = json!({"name": "drop", "operation": "DeleteItem", "request": {
        "TableName": "Orders",
        "Key": {"customer": {"S": "c#xxxxxxx0"}, "order": {"N": "${again}"}}
    }});
    let mut model = gsi_write_model(delete, 300, 20);
    model["generators"] = model_generators_for_twenty_orders();
    model["load"][0]["count"] = json!(20);
    let report = report_of(&model);
    assert_eq!(
        partition_writes(&report, "Orders/ByStatus"),
        [("s#xxxxxxx0".to_string(), 300.0)]
    );
}

/// Generators for 20 orders of one customer loaded in sequence, and a second sequence for
/// the run to walk them.
fn model_generators_for_twenty_orders() -> Value {
    json!({
        "customer": {"type": "string", "prefix": "c#", "cardinality": 1},
        "order": {"type": "sequence"},
        "again": {"type": "sequence"},
        "status": {"type": "string", "prefix": "s#", "cardinality": 1}
    })
}

#[test]
fn the_planner_sorts_limits_by_the_multiple_that_reaches_them() {
    // The LSI model at 300 puts a second, provisioned with 800 WCU: 900 WCU/s needed (2 for
    // the item, 1 for the LSI entry). By hand: the provisioned writes are reached at
    // 800 / 900 = 0.89x, partition c#0's 1,000 WCU/s at 1,000 / 900 = 1.11x; the item
    // collection c#0 fills 10 GB in hours, far within a year, so it comes first.
    let report = report_of(&lsi_model(300, Some(800)));
    let limits: Vec<(&str, &str, f64)> = report
        .plan
        .limits
        .iter()
        .map(|l| (l.kind.as_str(), l.unit.as_str(), l.multiple))
        .collect();
    assert_eq!(limits[0].0, "item collection", "{limits:?}");
    assert!(limits[0].2 < 0.01);
    assert_eq!(
        &limits[1..3].iter().map(|l| (l.0, l.1)).collect::<Vec<_>>(),
        &[("provisioned", "WCU"), ("partition", "WCU")]
    );
    assert!((limits[1].2 - 800.0 / 900.0).abs() < 1e-9, "{limits:?}");
    assert!((limits[2].2 - 1000.0 / 900.0).abs() < 1e-9, "{limits:?}");
    assert!(
        report
            .plan
            .first
            .starts_with("fills a 10 GB item collection within a year at the modelled rate, in "),
        "{}",
        report.plan.first
    );
    // Declared against needed (default prices, 70% target utilisation): declared 100 RCU and
    // 800 WCU for 730 hours = (100 x 0.00013 + 800 x 0.00065) x 730 = $389.09; needed
    // 900 / 0.7 = 1,285.7 WCU = 1,285.7 x 0.00065 x 730 = $610.07; auto-scaling writes from
    // ceil(900 / 0.7) = 1,286, reads from the 1-unit floor.
    let provisioned = &report.plan.provisioned[0];
    assert_eq!(provisioned.resource, "Orders");
    assert!(
        (provisioned.declared_monthly - 389.09).abs() < 0.005,
        "{provisioned:?}"
    );
    assert!(
        (provisioned.needed_monthly - 610.07).abs() < 0.005,
        "{provisioned:?}"
    );
    assert_eq!(provisioned.autoscaling_min, [1.0, 1286.0]);
    assert!(provisioned.autoscaling_max[1] >= 1286.0);
    // The neighbouring case: without the LSI (and so without a capped collection) a put is
    // 2 WCU, 600 WCU/s: the provisioned writes come first at 800 / 600 = 1.33x, then the
    // partition at 1,000 / 600 = 1.67x.
    let mut plain = lsi_model(300, Some(800));
    let table = plain["tables"][0].as_object_mut().unwrap();
    table.remove("LocalSecondaryIndexes");
    table["AttributeDefinitions"].as_array_mut().unwrap().pop();
    let report = report_of(&plain);
    assert_eq!(
        report.plan.first,
        "first throttles at 1.3x the modelled rate, on table Orders, its provisioned WCU"
    );
    assert!((report.plan.limits[1].multiple - 1000.0 / 600.0).abs() < 1e-9);
}

#[test]
fn worked_example_matches_the_hand_calculation() {
    // docs/DATA-MODEL-BENCH.md computes every figure of this model by hand; the figures
    // asserted here are the ones that text gives, and the text is checked to still give them.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/models/worked-example.json"
    );
    let model = Model::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let report = run_model(&model, &BenchOptions::default()).unwrap();
    let pattern = |name: &str| report.patterns.iter().find(|p| p.name == name).unwrap();
    let (touch, reserve, ship) = (pattern("touch"), pattern("reserve"), pattern("ship"));
    assert_eq!(touch.write_units_per_call, 2.0);
    assert_eq!(touch.index_units_per_call["Orders/ByPlaced"], [0.0, 2.0]);
    assert_eq!(reserve.write_units_per_call, 2.0);
    assert_eq!(
        reserve.errors["ConditionalCheckFailedException"],
        reserve.operations
    );
    assert!(reserve
        .index_units_per_call
        .values()
        .all(|u| *u == [0.0, 0.0]));
    assert_eq!(ship.write_units_per_call, 1.0);
    assert_eq!(ship.index_units_per_call["Orders/ByStatus"], [0.0, 2.0]);
    assert!(report.failing_patterns.is_empty());

    let partition = |target: &str, key: &str| {
        report
            .hot_partitions
            .iter()
            .find(|p| p.target == target && p.key == key)
            .unwrap()
            .write_units_per_second
    };
    assert!((partition("Orders", "c#0") - 1200.0).abs() < 1e-6);
    assert!((partition("Orders/ByStatus", "PENDING") - 1100.0).abs() < 1e-6);
    assert!((partition("Orders/ByStatus", "SHIPPED") - 1100.0).abs() < 1e-6);
    assert_eq!(
        report.verdicts,
        [
            "hot key `c#0` (Orders): 1,200 WCU/s, 1.20x the per-partition limit: DynamoDB would throttle it",
            "hot key `PENDING` (Orders/ByStatus): 1,100 WCU/s, 1.10x the per-partition limit: DynamoDB would throttle it",
            "hot key `SHIPPED` (Orders/ByStatus): 1,100 WCU/s, 1.10x the per-partition limit: DynamoDB would throttle it",
        ]
    );

    let table = &report.tables[0];
    let index = |name: &str| table.indexes.iter().find(|i| i.name == name).unwrap();
    assert_eq!((table.item_count, table.size_bytes), (3000, 1_422_670));
    assert_eq!(
        (index("ByPlaced").item_count, index("ByPlaced").size_bytes),
        (1000, 35_890)
    );
    assert_eq!(
        (index("ByStatus").item_count, index("ByStatus").size_bytes),
        (3000, 102_670)
    );
    assert_eq!(table.billed_bytes(), 2_261_230);
    assert!((report.cost.on_demand_monthly - 7391.25).abs() < 0.005);
    assert!((report.cost.provisioned_monthly - 3050.36).abs() < 0.005);
    assert!((report.cost.storage_monthly - 2_261_230.0 / 1_073_741_824.0 * 0.25).abs() < 1e-12);
    assert_eq!(
        report.plan.first,
        "already past a limit at the modelled rate (0.83x): table Orders, partition `c#0` (WCU limit)"
    );
    let multiples: Vec<f64> = report
        .plan
        .limits
        .iter()
        .take(5)
        .map(|l| l.multiple)
        .collect();
    let by_hand = [
        1000.0 / 1200.0,
        1000.0 / 1100.0,
        1000.0 / 1100.0,
        8000.0 / 2300.0,
        8000.0 / 2200.0,
    ];
    for (multiple, hand) in multiples.iter().zip(by_hand) {
        assert!((multiple - hand).abs() < 1e-9, "{multiples:?}");
    }

    // The text computes the same figures.
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/DATA-MODEL-BENCH.md"
    ))
    .unwrap();
    for figure in [
        "1,000 + 200 = 1,200 WCU/s, 1.20x",
        "1,100 WCU/s on `PENDING` and on `SHIPPED`, 1.10x",
        "2,261,230 bytes",
        "$7,391.25 a month",
        "$3,050.36",
        "1,000 ÷ 1,200 = 0.83x",
        "8,000 WCU/s, against the table's 2,300 (3.48x) and the GSI's 2,200 (3.64x)",
    ] {
        assert!(
            docs.contains(figure),
            "the worked example no longer says {figure}"
        );
    }
}

#[test]
fn a_new_on_demand_table_ramps_up_to_what_the_model_needs() {
    // 20,000 puts a second of new orders to 50 customers: 1 WCU each on the table, 20,000
    // WCU/s (400 per customer partition, under the limit), and 1 WCU each on the GSI. A new
    // on-demand table serves twice its initial peak of 4,000 WRU at once, 8,000: reaching
    // 20,000 takes ceil(log2(20,000 / 8,000)) = 2 doublings, 60 minutes at the least.
    let put = json!({"name": "place", "operation": "PutItem", "request": {
        "TableName": "Orders",
        "Item": {"customer": {"S": "${customer}"}, "order": {"N": "${order}"}, "status": {"S": "s${order}"}}
    }});
    let report = report_of(&gsi_write_model(put.clone(), 20_000, 400));
    assert!(
        report.verdicts.iter().any(|v| v
            == "Orders needs 20,000 WCU/s at the modelled rate; a new on-demand table serves 8,000 at once and doubles that at most every 30 minutes: traffic ramped up over at least 60 minutes gets there, the modelled rate at once would throttle (or pre-warm the table)"),
        "{:?}",
        report.verdicts
    );
    // The neighbouring case: 8,000 a second is what it serves at once: no verdict.
    let report = report_of(&gsi_write_model(put, 8_000, 400));
    assert!(
        !report
            .verdicts
            .iter()
            .any(|v| v.starts_with("Orders needs")),
        "{:?}",
        report.verdicts
    );
}

#[test]
fn compare_gates_a_design_against_a_saved_baseline() {
    let dir = tempfile::tempdir().unwrap();
    // The baseline: the design without its GSI, saved as `shoal bench --model X --json`
    // saves it, so CI runs only the changed design.
    // Orders drawn from a sequence are all new: every put writes a GSI entry (an overwrite
    // that leaves the GSI's key and projection as they were writes none).
    let mut with_index = small_model(200);
    with_index["generators"]["order"] = json!({"type": "sequence"});
    let mut plain = with_index.clone();
    plain["name"] = json!("without the index");
    plain["tables"][0]
        .as_object_mut()
        .unwrap()
        .remove("GlobalSecondaryIndexes");
    plain["tables"][0]["AttributeDefinitions"]
        .as_array_mut()
        .unwrap()
        .truncate(2);
    let report = report_of(&plain);
    let baseline = dir.path().join("baseline.json");
    std::fs::write(&baseline, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    let with_index_path = dir.path().join("with-index.json");
    std::fs::write(&with_index_path, with_index.to_string()).unwrap();
    let unchanged = dir.path().join("unchanged.json");
    std::fs::write(&unchanged, plain.to_string()).unwrap();
    let shoal = env!("CARGO_BIN_EXE_shoal");
    let compare = |second: &std::path::Path, flags: &[&str]| {
        Command::new(shoal)
            .args(["bench", "compare"])
            .arg(&baseline)
            .arg(second)
            .args(flags)
            .output()
            .unwrap()
    };

    // By hand: run.rate 1,000 split evenly between `place` and `look` is 500 puts a second
    // of 1 WCU; the GSI adds 1 WCU to each: 500 → 1,000 WCU/s.
    let tripped = compare(&with_index_path, &["--fail-if", "wcu>+0,verdicts>0"]);
    assert_eq!(tripped.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&tripped.stderr);
    assert!(
        stderr.contains("--fail-if tripped:\n  wcu>+0: WCU/s 500.0 → 1000.0 (+500.0, +100.0%)"),
        "{stderr}"
    );
    assert!(!stderr.contains("verdicts>0"), "{stderr}");
    let stdout = String::from_utf8_lossy(&tripped.stdout);
    assert!(
        stdout.contains("without the index") && stdout.contains("small"),
        "{stdout}"
    );
    assert!(stdout.contains("--fail-if wcu>+0: TRIPPED"), "{stdout}");
    assert!(stdout.contains("--fail-if verdicts>0: passed"), "{stdout}");

    // The unchanged design passes, and its JSON carries the deltas and the outcome.
    let passed = compare(&unchanged, &["--fail-if", "wcu>+0", "--json"]);
    assert!(
        passed.status.success(),
        "{}",
        String::from_utf8_lossy(&passed.stderr)
    );
    let document: Value = serde_json::from_slice(&passed.stdout).unwrap();
    let wcu = &document["comparison"]["totals"]["write_units_per_second"];
    assert_eq!(
        (
            wcu["first"].as_f64(),
            wcu["second"].as_f64(),
            wcu["change"].as_f64()
        ),
        (Some(500.0), Some(500.0), Some(0.0))
    );
    assert_eq!(
        document["fail_if"],
        json!([{"condition": "wcu>+0", "tripped": false, "figures": "WCU/s 500.0 → 500.0 (+0.0, +0.0%)"}])
    );
    assert_eq!(document["first"]["model"], "without the index");

    // Markdown, for a pull-request comment.
    let markdown = compare(&with_index_path, &["--markdown"]);
    assert!(markdown.status.success());
    let markdown = String::from_utf8(markdown.stdout).unwrap();
    assert!(
        markdown
            .starts_with("| | `without the index` | `small` | change |\n|:---|---:|---:|---:|\n"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| WCU/s (with indexes) | 500.0 | 1000.0 | +500.0 (+100.0%) |"),
        "{markdown}"
    );

    // A malformed condition is a usage error, refused before anything runs; so is a pair
    // that names no pattern.
    let malformed = compare(&unchanged, &["--fail-if", "cost>5%"]);
    assert_eq!(malformed.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&malformed.stderr);
    assert!(
        stderr.contains("`cost>5%`: `5%` is not a change; expected METRIC>CHANGE"),
        "{stderr}"
    );
    let unpaired = compare(&unchanged, &["--pair", "put=place"]);
    assert_eq!(unpaired.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&unpaired.stderr);
    assert!(
        stderr.contains("--pair put=place: the first report has no pattern `put`"),
        "{stderr}"
    );
}

#[test]
fn batch_and_transaction_units_are_shared_among_their_items_partitions() {
    // A BatchWriteItem of 25 small items (1 WCU each), all of customer c#0, 50 batches a
    // second: the answer gives 25 WCU for the table, shared among its 25 items, all on
    // partition c#0: 1,250 WCU/s, over the 1,000 WCU/s limit.
    let batch = |customer: &dyn Fn(u64) -> String| {
        let requests: Vec<Value> = (1..=25)
            .map(|order| {
                json!({"PutRequest": {"Item": {
                    "customer": {"S": customer(order)}, "order": {"N": order.to_string()}
                }}})
            })
            .collect();
        json!({"name": "bulk", "operation": "BatchWriteItem",
               "request": {"RequestItems": {"Orders": requests}}})
    };
    let report = report_of(&gsi_write_model(batch(&|_| "c#0".to_string()), 50, 100));
    let hot = &report.hot_partitions[0];
    assert_eq!((hot.target.as_str(), hot.key.as_str()), ("Orders", "c#0"));
    assert!(
        (hot.write_units_per_second - 1250.0).abs() < 1e-6,
        "{hot:?}"
    );
    assert!(report
        .verdicts
        .iter()
        .any(|v| v.starts_with("hot key `c#0` (Orders): 1,250 WCU/s")));
    // The neighbouring case: the same batches over 25 customers put 50 WCU/s on each.
    let report = report_of(&gsi_write_model(
        batch(&|order| format!("c#{order}")),
        50,
        100,
    ));
    let orders: Vec<f64> = report
        .hot_partitions
        .iter()
        .filter(|p| p.target == "Orders")
        .map(|p| p.write_units_per_second)
        .collect();
    assert_eq!(orders.len(), 10, "the ten hottest of 25 are listed");
    assert!(
        orders.iter().all(|units| (units - 50.0).abs() < 1e-6),
        "{orders:?}"
    );
    // A transaction of two puts to c#0 (2 WCU each: transactional writes cost double), 300 a
    // second: 4 WCU a call on c#0, 1,200 WCU/s.
    let transaction = json!({"name": "pair", "operation": "TransactWriteItems", "request": {
        "TransactItems": [
            {"Put": {"TableName": "Orders", "Item": {"customer": {"S": "c#0"}, "order": {"N": "1"}}}},
            {"Put": {"TableName": "Orders", "Item": {"customer": {"S": "c#0"}, "order": {"N": "2"}}}}
        ]
    }});
    let report = report_of(&gsi_write_model(transaction, 300, 100));
    let hot = &report.hot_partitions[0];
    assert_eq!(hot.key, "c#0");
    assert!(
        (hot.write_units_per_second - 1200.0).abs() < 1e-6,
        "{hot:?}"
    );
}

/// The report's one pattern ran without errors and put 1,200 WCU/s on partition c#0 of
/// Orders, and on no other.
fn assert_all_on_c0(report: &Report) {
    let errors = &report.patterns[0].errors;
    assert!(errors.is_empty(), "{errors:?}");
    let orders = partition_writes(report, "Orders");
    assert!(
        orders.len() == 1 && orders[0].0 == "c#0" && (orders[0].1 - 1200.0).abs() < 1e-6,
        "{orders:?}"
    );
}

#[test]
fn partiql_units_land_on_the_partitions_their_statements_name() {
    // Every INSERT puts one new item under 1 KB for customer c#0: 1 WCU on the table's
    // partition c#0 (and 1 on the GSI, which counts toward the GSI but no GSI partition).
    // 1,200 a second: 1,200 WCU/s on c#0, over the 1,000 WCU/s limit. The key is a literal
    // of the statement in one pattern and a parameter in the other.
    let literal = json!({"name": "insert", "operation": "ExecuteStatement", "request": {
        "Statement": "INSERT INTO Orders VALUE {'customer': 'c#0', 'order': ?, 'status': ?}",
        "Parameters": [{"N": "${order}"}, {"S": "${status}"}]
    }});
    let parameter = json!({"name": "insert", "operation": "ExecuteStatement", "request": {
        "Statement": "INSERT INTO Orders VALUE {'customer': ?, 'order': ?, 'status': ?}",
        "Parameters": [{"S": "c#0"}, {"N": "${order}"}, {"S": "${status}"}]
    }});
    for pattern in [literal, parameter] {
        let report = report_of(&gsi_write_model(pattern, 1200, 100));
        assert_all_on_c0(&report);
        assert!(report
            .verdicts
            .iter()
            .any(|v| v.starts_with("hot key `c#0` (Orders): 1,200 WCU/s")));
    }
    // The neighbouring case: the customer drawn from 50 spreads the same units, 24 WCU/s on
    // each customer's partition.
    let spread = json!({"name": "insert", "operation": "ExecuteStatement", "request": {
        "Statement": "INSERT INTO Orders VALUE {'customer': ?, 'order': ?, 'status': ?}",
        "Parameters": [{"S": "${customer}"}, {"N": "${order}"}, {"S": "${status}"}]
    }});
    let report = report_of(&gsi_write_model(spread, 1200, 400));
    let orders = partition_writes(&report, "Orders");
    assert_eq!(orders.len(), 10, "the ten hottest of 50 are listed");
    let total: f64 = orders.iter().map(|(_, units)| units).sum();
    assert!(
        orders.iter().all(|(_, units)| *units < 1000.0),
        "{orders:?}"
    );
    assert!(total < 1200.0, "{orders:?}");
    // A BatchExecuteStatement of two INSERTs to c#0, 600 a second: 2 WCU a call, shared
    // between its two statements' items, both on c#0: 1,200 WCU/s. An ExecuteTransaction of
    // the same two, 300 a second: 4 WCU a call (transactional writes cost double): 1,200.
    let insert = |order: &str| {
        json!({"Statement": "INSERT INTO Orders VALUE {'customer': ?, 'order': ?}",
               "Parameters": [{"S": "c#0"}, {"N": order}]})
    };
    let batch = json!({"name": "pair", "operation": "BatchExecuteStatement", "request": {
        "Statements": [insert("${order#1}"), insert("${order#2}")]
    }});
    let transaction = json!({"name": "pair", "operation": "ExecuteTransaction", "request": {
        "TransactStatements": [insert("${order#1}"), insert("${order#2}")]
    }});
    for (pattern, rate) in [(batch, 600), (transaction, 300)] {
        let report = report_of(&gsi_write_model(pattern, rate, 100));
        assert_all_on_c0(&report);
    }
}

/// PartiQL patterns are priced as DynamoDB charges their statements: a SELECT of one item
/// under 4 KB is 0.5 read units eventually consistent (1 with ConsistentRead), an INSERT
/// of one 1 write unit. Hand calculation of the SELECT pattern's on-demand month at its
/// 40 ops/s: 40 x 0.5 RCU = 20 RRU/s; 20 x 730 h x 3,600 s = 52,560,000 RRU; x $0.125 per million =
/// $6.57. Priced as writes, as the bench did before, it would have been 5x that ($32.85).
#[test]
fn partiql_selects_are_read_units_and_other_statements_write_units() {
    let mut model = small_model(300);
    // Keys no other call writes, so that no INSERT meets an item.
    model["generators"]["fresh"] = json!({"type": "number", "range": [1000000, 900000000]});
    model["patterns"] = json!([
        {"name": "select", "operation": "ExecuteStatement", "rate": 40, "request": {
            "Statement": "SELECT * FROM Orders WHERE customer = ? AND \"order\" = ?",
            "Parameters": [{"S": "${customer}"}, {"N": "${order}"}]
        }},
        {"name": "select consistently", "operation": "ExecuteStatement", "rate": 40, "request": {
            "Statement": "select * from Orders where customer = ? and \"order\" = ?",
            "Parameters": [{"S": "${customer}"}, {"N": "${order}"}],
            "ConsistentRead": true
        }},
        {"name": "insert", "operation": "ExecuteStatement", "rate": 40, "request": {
            "Statement": "INSERT INTO Orders VALUE {'customer': ?, 'order': ?, 'status': ?}",
            "Parameters": [{"S": "${customer}"}, {"N": "${fresh}"}, {"S": "${status}"}]
        }},
        {"name": "batch select", "operation": "BatchExecuteStatement", "rate": 40, "request": {
            "Statements": [
                {"Statement": "SELECT * FROM Orders WHERE customer = ? AND \"order\" = ?",
                 "Parameters": [{"S": "c#1"}, {"N": "1"}]},
                {"Statement": "SELECT * FROM Orders WHERE customer = ? AND \"order\" = ?",
                 "Parameters": [{"S": "c#2"}, {"N": "2"}]}
            ]
        }}
    ]);
    model["run"] = json!({"operations": 300, "concurrency": 1, "seed": 7});
    let report = report_of(&model);
    let pattern = |name: &str| report.patterns.iter().find(|p| p.name == name).unwrap();
    for name in ["select", "select consistently", "insert", "batch select"] {
        assert!(
            pattern(name).errors.is_empty(),
            "{name}: {:?}",
            pattern(name).errors
        );
    }
    let select = pattern("select");
    // A SELECT that finds its item costs what a GetItem does; one that finds none costs the
    // same 0.5 (DynamoDB charges the minimum). Either way: reads only.
    assert_eq!(select.read_units_per_call, 0.5);
    assert_eq!(select.write_units_per_call, 0.0);
    assert_eq!(pattern("select consistently").read_units_per_call, 1.0);
    assert_eq!(pattern("select consistently").write_units_per_call, 0.0);
    // The neighbour that must not change: a PartiQL write is still write units.
    let insert = pattern("insert");
    assert_eq!(insert.read_units_per_call, 0.0);
    assert_eq!(insert.write_units_per_call, 1.0);
    // A batch of SELECTs is reads too.
    assert!(pattern("batch select").read_units_per_call > 0.0);
    assert_eq!(pattern("batch select").write_units_per_call, 0.0);
    // The month, by hand: 40 ops/s x 0.5 RRU x 730 h x 3,600 s / 1e6 x $0.125.
    let expected: f64 = 40.0 * 0.5 * 730.0 * 3600.0 / 1e6 * 0.125;
    assert!((expected - 6.57).abs() < 1e-9);
    assert!(
        (select.monthly_cost_on_demand - expected).abs() < 1e-6,
        "{} against {expected}",
        select.monthly_cost_on_demand
    );
}
