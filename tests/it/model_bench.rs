//! `shoal bench --model`: a small model run embedded and against `shoal serve`, checking the
//! report's structure and that its capacity figures are the sums of what the requests were
//! charged; a hot-key model gets the throttling verdict; the command line prints text, JSON,
//! HTML and comparisons, and a comparison against a saved baseline fails on the condition
//! that trips.

use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Value};
use shoal::bench::data_model::model::Model;
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
    // Partitions: 50 customers at most, all far under the limits.
    assert!(!report.hot_partitions.is_empty());
    assert!(report
        .hot_partitions
        .iter()
        .all(|p| p.target == "Orders" && p.key.starts_with("c#")));
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
    let report = run_model(&parse(&model), &BenchOptions::default()).unwrap();
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
    let report = run_model(&parse(&lsi_model(400, None)), &BenchOptions::default()).unwrap();
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
    let report = run_model(&parse(&plain), &BenchOptions::default()).unwrap();
    assert!((report.hot_partitions[0].write_units_per_second - 800.0).abs() < 1e-6);
    assert_eq!(
        report.verdicts,
        ["no partition, table or index over DynamoDB's limits at the modelled rate"]
    );
}

#[test]
fn an_lsi_draws_on_its_table_s_provisioned_throughput() {
    // 300 puts a second at 3 WCU (2 for the item, 1 for the LSI entry): 900 WCU/s against a
    // table provisioned with 800. Without counting the LSI it would be 600: under.
    let report = run_model(&parse(&lsi_model(300, Some(800))), &BenchOptions::default()).unwrap();
    assert!(
        report.verdicts.iter().any(|v| v
            == "Orders needs 900 WCU/s at the modelled rate and has 800: writes would throttle once burst capacity (300 s of unused units) is spent"),
        "{:?}",
        report.verdicts
    );
    // With 1,000 provisioned, 900 fits: no verdict on the table.
    let report = run_model(
        &parse(&lsi_model(300, Some(1000))),
        &BenchOptions::default(),
    )
    .unwrap();
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
    let report = run_model(&parse(&model), &BenchOptions::default()).unwrap();
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
    let report = run_model(&parse(&model), &BenchOptions::default()).unwrap();
    // Half of 100 ops/s are puts: 50 WCU/s on the GSI against 5.
    assert!(
        report
            .verdicts
            .iter()
            .any(|v| v == "Orders/ByStatus needs 50 WCU/s at the modelled rate and has 5: writes to the base table would throttle"),
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
    let report = run_model(
        &parse(&conditional_model(failing_update)),
        &BenchOptions::default(),
    )
    .unwrap();
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
    let report = run_model(
        &parse(&conditional_model(holding_update)),
        &BenchOptions::default(),
    )
    .unwrap();
    assert!(report.patterns[0].errors.is_empty());
    assert_eq!(report.patterns[0].write_units_per_call, 3.0);
    // A condition failing where no item is stored is charged 1 WCU.
    let failing_delete = json!({"name": "drop", "operation": "DeleteItem", "request": {
        "TableName": "Orders", "Key": {"order": {"N": "${missing}"}},
        "ConditionExpression": "attribute_exists(v)"
    }});
    let report = run_model(
        &parse(&conditional_model(failing_delete)),
        &BenchOptions::default(),
    )
    .unwrap();
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
    let report = run_model(&parse(&model), &BenchOptions::default()).unwrap();
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
    let report = run_model(&parse(&model), &BenchOptions::default()).unwrap();
    assert!(report.hot_partitions[0].write_units_per_second > 1000.0);
    assert!(
        !report.verdicts.iter().any(|v| v.starts_with("hot key")),
        "{:?}",
        report.verdicts
    );
    // From 20 it gets one.
    model["run"]["operations"] = json!(20);
    let report = run_model(&parse(&model), &BenchOptions::default()).unwrap();
    assert!(report.verdicts.iter().any(|v| v.starts_with("hot key")));
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
    let report = run_model(&parse(&plain), &BenchOptions::default()).unwrap();
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
