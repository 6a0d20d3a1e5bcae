//! Recording traffic and turning it into a model, round trip: a known synthetic workload (a
//! model file) runs against `shoal serve --record`; `model-from` fits a model to the
//! recording; the fitted model runs against a second recording server; both recordings,
//! read by the same code, must agree on each pattern's capacity per call, key skew and
//! hottest partition within the tolerances docs/DATA-MODEL-BENCH.md states. The fit itself
//! must find what the synthetic model was built with: the named hot key and its share, a
//! Zipf exponent, sequential sort keys, a small set of statuses.

use std::path::Path;

use serde_json::Value;
use shoal::bench::data_model::model::{Distribution, GeneratorKind, Model};
use shoal::bench::data_model::{run_model, BenchOptions};
use shoal::bench::recording::model_from::{model_from, ModelFromRecording};
use shoal::bench::recording::replay::{replay, ReplayOptions};

use crate::sdk_server::{http_request, Server};

/// Per-call capacity of a pattern: the fitted model's within this share of the recording's.
const UNITS_TOLERANCE: f64 = 0.10;
/// A key's share of a pattern's calls, or a partition's of its table's units: within this
/// (absolute).
const SHARE_TOLERANCE: f64 = 0.06;

/// The synthetic workload of docs/DATA-MODEL-BENCH.md's recording example: orders by
/// customer, placed in sequence, with a KEYS_ONLY GSI on status. Puts go 40% to one
/// customer, gets follow a Zipf law, queries by status and by customer take a few items.
fn synthetic() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/models/recording/shop-traffic.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `model` against a fresh `shoal serve --record FILE` and fits a model to what it
/// recorded.
/// Also answers each table's items as the run left them.
fn record(
    dir: &Path,
    model: &Model,
    extra: &[&str],
) -> (ModelFromRecording, Vec<(String, Vec<String>)>) {
    let file = dir.join("traffic.jsonl");
    let file_text = file.to_str().unwrap().to_string();
    let mut args = vec![
        "serve",
        "--port",
        "0",
        "--in-memory",
        "--admin",
        "--record",
        &file_text,
    ];
    args.extend_from_slice(extra);
    let server = Server::spawn(&args);
    let options = BenchOptions {
        endpoint: Some(server.endpoint.clone()),
        progress: false,
        database: None,
    };
    let report = run_model(model, &options).expect("the model runs");
    assert!(
        report.failing_patterns.is_empty(),
        "{:?}",
        report.failing_patterns
    );
    // Stopping through the admin API writes the queued calls and the `end` line.
    let (status, answer) = http_request(&server.endpoint, "DELETE", "/shoal/record", "");
    assert_eq!(status, 200, "{answer}");
    let summary: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(summary["dropped"], 0, "{summary}");
    assert!(summary["records"].as_u64().unwrap() >= 3000, "{summary}");
    // Read once the recording stopped: the scans are no part of it.
    let items = tables_items(&server.endpoint, model);
    server.stop();
    (
        model_from(&[&file], "fitted").expect("a model from the recording"),
        items,
    )
}

/// Every item of each of `model`'s tables at `endpoint`, as JSON texts in order.
fn tables_items(endpoint: &str, model: &Model) -> Vec<(String, Vec<String>)> {
    use shoal::client::target::Target;
    use shoal::client::ConnectOptions;
    let target = Target::endpoint(endpoint, &ConnectOptions::default()).unwrap();
    let mut client = target.client().unwrap();
    let mut tables = Vec::new();
    for create in &model.tables {
        let table = create["TableName"].as_str().unwrap().to_string();
        let mut items = Vec::new();
        let mut start = Value::Null;
        loop {
            let mut scan = serde_json::json!({"TableName": table});
            if !start.is_null() {
                scan["ExclusiveStartKey"] = start;
            }
            let answer = client.call("Scan", scan.to_string().as_bytes()).unwrap();
            let mut page: Value = serde_json::from_slice(&answer).unwrap();
            items.extend(
                page["Items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(Value::to_string),
            );
            start = page["LastEvaluatedKey"].take();
            if start.is_null() {
                break;
            }
        }
        items.sort();
        tables.push((table, items));
    }
    tables
}

fn pattern<'a>(
    fitted: &'a ModelFromRecording,
    prefix: &str,
) -> &'a shoal::bench::recording::model_from::RecordedPattern {
    fitted
        .patterns
        .iter()
        .find(|p| p.name.starts_with(prefix))
        .unwrap_or_else(|| {
            let names: Vec<_> = fitted.patterns.iter().map(|p| &p.name).collect();
            panic!("no pattern {prefix}: {names:?}")
        })
}

/// Runs a fitted model against a second recording server (3,000 operations, one worker:
/// the same draws in the same order on every run) and fits that recording.
fn rerun(dir: &Path, fitted: &Model) -> ModelFromRecording {
    let second_dir = dir.join("second");
    std::fs::create_dir_all(&second_dir).unwrap();
    let mut rerun = fitted.clone();
    rerun.run.seconds = None;
    rerun.run.operations = Some(3000);
    rerun.run.concurrency = Some(1);
    record(&second_dir, &rerun, &[]).0
}

/// Replays the recording in `dir` into a fresh server made from its tables and checks that
/// every pattern was sent as often as recorded and charged exactly the units per call it
/// was charged then; answers the items the replay left in each of `model`'s tables.
fn replayed_as_recorded(
    dir: &Path,
    model: &Model,
    recorded: &ModelFromRecording,
) -> Vec<(String, Vec<String>)> {
    let target = Server::spawn(&["serve", "--port", "0", "--in-memory"]);
    let report = replay(&ReplayOptions {
        files: vec![dir.join("traffic.jsonl")],
        endpoint: target.endpoint.clone(),
        paced: false,
        concurrency: 1,
        create_tables: true,
        progress: false,
    })
    .expect("the replay runs");
    let items = tables_items(&target.endpoint, model);
    target.stop();
    assert_eq!(report.patterns.len(), recorded.patterns.len());
    for original in &recorded.patterns {
        let replayed = report
            .patterns
            .iter()
            .find(|p| p.name == original.name)
            .unwrap_or_else(|| panic!("{} not replayed", original.name));
        assert_eq!(replayed.operations, original.calls, "{}", original.name);
        let units = replayed.read_units_per_call_with_indexes()
            + replayed.write_units_per_call_with_indexes();
        assert!(
            (units - original.units_per_call).abs() < 1e-9,
            "{}: replayed {units} units per call, recorded {}",
            original.name,
            original.units_per_call
        );
    }
    items
}

/// Each pattern of `recorded` has its capacity per call and hottest key's share in `again`.
fn assert_patterns_reproduced(recorded: &ModelFromRecording, again: &ModelFromRecording) {
    for original in &recorded.patterns {
        let reproduced = pattern(again, &original.name);
        let units = (reproduced.units_per_call - original.units_per_call).abs();
        assert!(
            units <= UNITS_TOLERANCE * original.units_per_call,
            "{}: {} units per call, recorded {}",
            original.name,
            reproduced.units_per_call,
            original.units_per_call
        );
        let top = |p: &shoal::bench::recording::model_from::RecordedPattern| {
            p.key_shares.first().map_or(0.0, |(_, share)| *share)
        };
        assert!(
            (top(reproduced) - top(original)).abs() <= SHARE_TOLERANCE,
            "{}: top key share {} against {}",
            original.name,
            top(reproduced),
            top(original)
        );
    }
}

#[test]
fn a_recorded_workload_round_trips_through_its_fitted_model() {
    let dir = tempfile::tempdir().unwrap();
    let synthetic = Model::parse(&synthetic().to_string()).unwrap();
    let first_dir = dir.path().join("first");
    std::fs::create_dir_all(&first_dir).unwrap();
    let (recorded, _) = record(&first_dir, &synthetic, &[]);

    // The patterns, named by their shape.
    let names: Vec<&str> = recorded.patterns.iter().map(|p| p.name.as_str()).collect();
    for expected in [
        "PutItem Orders",
        "GetItem Orders",
        "Query Orders by ByStatus where status = ?",
        "Query Orders where customer = ?",
    ] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    // The load phase's BatchWriteItem is not a pattern, and is said so.
    let fitted = &recorded.model;
    let text = serde_json::to_string_pretty(fitted).unwrap();
    let reparsed = Model::parse(&text).expect("model-from writes an ordinary model file");
    assert_eq!(reparsed.patterns.len(), 4, "{text}");

    // The fit found what the synthetic model was made of.
    let generator_of = |pattern: &str, attribute: &str| {
        let pattern = fitted.patterns.iter().find(|p| p.name == pattern).unwrap();
        let holder = match pattern.operation.as_str() {
            "PutItem" => &pattern.request["Item"][attribute],
            "GetItem" => &pattern.request["Key"][attribute],
            _ => &pattern.request["ExpressionAttributeValues"][attribute],
        };
        let text = holder
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .as_str()
            .unwrap();
        let name = text.trim_start_matches("${").trim_end_matches('}');
        fitted.generators[name].clone()
    };
    let put_customer = generator_of("PutItem Orders", "customer");
    match &put_customer.distribution {
        Distribution::Named(named) => {
            assert_eq!(named.len(), 1, "{named:?}");
            assert_eq!(named[0].value, "c#xxxxxxx0");
            // 40% hot, plus the hot key's share of the uniform rest (0.6 / 200).
            assert!(
                (named[0].share - 0.403).abs() < SHARE_TOLERANCE,
                "{named:?}"
            );
        }
        other => panic!("the put's customer: {other:?}"),
    }
    let get_customer = generator_of("GetItem Orders", "customer");
    match get_customer.distribution {
        Distribution::Zipf(s) => assert!((0.8..=1.4).contains(&s), "zipf {s}"),
        other => panic!("the get's customer: {other:?}"),
    }
    assert_eq!(
        generator_of("PutItem Orders", "placed").kind,
        GeneratorKind::Sequence
    );
    match generator_of("PutItem Orders", "status").distribution {
        Distribution::Named(named) => assert_eq!(named.len(), 3, "{named:?}"),
        other => panic!("the status: {other:?}"),
    }

    // The fitted model, run against a second recording server, does what the first did.
    let again = rerun(dir.path(), &reparsed);
    assert_patterns_reproduced(&recorded, &again);
    // The hottest partition of the table is the same key, with the same share of its units.
    let hottest = |fitted: &ModelFromRecording| {
        let total: f64 = fitted
            .partitions
            .iter()
            .filter(|p| p.0 == "Orders")
            .map(|p| p.2)
            .sum();
        let (_, key, units) = fitted
            .partitions
            .iter()
            .find(|p| p.0 == "Orders")
            .unwrap()
            .clone();
        (key, units / total)
    };
    // The first recording, replayed exactly into a fresh server, costs what it cost.
    replayed_as_recorded(&first_dir, &synthetic, &recorded);
    let (first_key, first_share) = hottest(&recorded);
    let (second_key, second_share) = hottest(&again);
    assert_eq!(first_key, "c#xxxxxxx0");
    assert_eq!(second_key, first_key);
    assert!(
        (first_share - second_share).abs() <= SHARE_TOLERANCE,
        "{first_share} against {second_share}"
    );
}

#[test]
fn a_hashed_recording_keeps_no_value_and_still_makes_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let synthetic = Model::parse(&synthetic().to_string()).unwrap();
    let (recorded, _) = record(dir.path(), &synthetic, &["--record-hash-keys"]);
    assert!(recorded.hashed_keys);
    let text = std::fs::read_to_string(dir.path().join("traffic.jsonl")).unwrap();
    for value in ["c#xxxxxxx0", "Sxxxxxx0", "\"body\""] {
        assert!(!text.contains(value), "the recording holds {value}");
    }
    // The skew survives hashing: the put's hot customer is still one key at about 40%.
    let put = pattern(&recorded, "PutItem Orders");
    let (key, share) = &put.key_shares[0];
    assert!(key.starts_with('h') && key.len() == 17, "{key}");
    assert!((share - 0.403).abs() < SHARE_TOLERANCE, "{share}");
    Model::parse(&serde_json::to_string(&recorded.model).unwrap()).expect("a model file");
    // It cannot be replayed: it holds no bodies.
    let refused = replay(&ReplayOptions {
        files: vec![dir.path().join("traffic.jsonl")],
        endpoint: "http://127.0.0.1:9".into(),
        paced: false,
        concurrency: 1,
        create_tables: false,
        progress: false,
    })
    .err()
    .unwrap();
    assert!(refused.contains("--record-hash-keys"), "{refused}");
}

#[test]
fn the_admin_api_records_a_running_server_and_the_model_loads_what_was_there() {
    use shoal::client::target::Target;
    use shoal::client::ConnectOptions;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::spawn(&["serve", "--port", "0", "--in-memory", "--admin"]);
    let target = Target::endpoint(&server.endpoint, &ConnectOptions::default()).unwrap();
    let mut client = target.client().unwrap();
    let create = serde_json::json!({
        "TableName": "Notes", "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}]
    });
    client
        .call("CreateTable", create.to_string().as_bytes())
        .unwrap();
    let put = |n: u32| {
        serde_json::json!({"TableName": "Notes", "Item": {"id": {"S": format!("n#{n}")},
            "text": {"S": "x".repeat(500)}}})
        .to_string()
    };
    for n in 0..50 {
        client.call("PutItem", put(n).as_bytes()).unwrap();
    }
    let probe = serde_json::json!({"TableName": "Notes", "Key": {"id": {"S": "n#1"}}}).to_string();
    let unrecorded = client.call("GetItem", probe.as_bytes()).unwrap();
    let file = dir.path().join("live.jsonl");
    let start = serde_json::json!({"file": file}).to_string();
    let (status, answer) = http_request(&server.endpoint, "POST", "/shoal/record", &start);
    assert_eq!(status, 200, "{answer}");
    let (status, again) = http_request(&server.endpoint, "POST", "/shoal/record", &start);
    assert_eq!(status, 400, "a second recording: {again}");
    // The client sees the same answer while recorded: no ConsumedCapacity it did not ask for.
    let recorded = client.call("GetItem", probe.as_bytes()).unwrap();
    assert_eq!(recorded, unrecorded);
    assert!(!String::from_utf8_lossy(&recorded).contains("ConsumedCapacity"));
    for n in 0..39 {
        let get = serde_json::json!({"TableName": "Notes", "Key": {"id": {"S": format!("n#{}", n % 10)}}});
        client.call("GetItem", get.to_string().as_bytes()).unwrap();
    }
    let (_, status_text) = http_request(&server.endpoint, "GET", "/shoal/record", "");
    let status_json: Value = serde_json::from_str(&status_text).unwrap();
    assert_eq!(status_json["recording"], true, "{status_text}");
    let (status, summary) = http_request(&server.endpoint, "DELETE", "/shoal/record", "");
    assert_eq!(status, 200, "{summary}");
    let (status, _) = http_request(&server.endpoint, "DELETE", "/shoal/record", "");
    assert_eq!(status, 404, "nothing left to stop");
    let metrics = crate::sdk_server::http_get(&server.endpoint, "/metrics");
    assert!(
        metrics.contains("shoal_record_requests_total 40"),
        "{metrics}"
    );
    server.stop();
    let fitted = model_from(&[&file], "live").unwrap();
    assert_eq!(fitted.patterns.len(), 1);
    let get = &fitted.patterns[0];
    assert_eq!((get.name.as_str(), get.calls), ("GetItem Notes", 40));
    assert!(
        (get.units_per_call - 0.5).abs() < 1e-9,
        "{}",
        get.units_per_call
    );
    // Ten keys, each read four times: named outright with their shares.
    match &fitted.model.generators["id_p0"].distribution {
        Distribution::Named(named) => assert_eq!(named.len(), 10, "{named:?}"),
        other => panic!("{other:?}"),
    }
    // The table held 50 items when the recording began: the model loads 50.
    assert_eq!(fitted.model.load.len(), 1);
    assert_eq!(fitted.model.load[0].count, 50);
}

/// The batch, transaction and statement workload: orders written ten at a time (40% of the
/// items to one customer), placed by a transaction that also counts the customer's orders,
/// and read by a PartiQL SELECT of one order.
fn synthetic_batches() -> Model {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/models/recording/shop-batches.json"
    );
    Model::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn batches_transactions_and_statements_round_trip_through_their_fitted_model() {
    let dir = tempfile::tempdir().unwrap();
    let first_dir = dir.path().join("first");
    std::fs::create_dir_all(&first_dir).unwrap();
    let synthetic = synthetic_batches();
    let (recorded, items) = record(&first_dir, &synthetic, &[]);
    let names: Vec<&str> = recorded.patterns.iter().map(|p| p.name.as_str()).collect();
    for expected in [
        "PutItem Customers",
        "BatchExecuteStatement: 2 x SELECT * FROM \"Customers\" WHERE id = ?",
        "ExecuteTransaction: 2 x DELETE FROM \"Customers\" WHERE id = ?",
        "BatchWriteItem: 10 x Put Orders",
        "TransactWriteItems: Put Orders if attribute_not_exists(placed) + Update Customers ADD orders ?",
        "ExecuteStatement SELECT * FROM \"Orders\" WHERE customer = ? AND placed = ?",
    ] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    assert!(
        recorded.skipped.is_empty(),
        "nothing left unmodelled: {:?}",
        recorded.skipped
    );
    let fitted = &recorded.model;
    // Both tables were created during the recording: the model starts them empty.
    assert!(fitted.load.is_empty(), "{:?}", fitted.load);
    let text = serde_json::to_string_pretty(fitted).unwrap();
    let reparsed = Model::parse(&text).expect("model-from writes an ordinary model file");
    // The batch: ten puts, each with its own draws, on a sort key that never repeats in a
    // call; the hot customer named with its share of the items.
    let batch = fitted
        .patterns
        .iter()
        .find(|p| p.operation == "BatchWriteItem")
        .unwrap();
    let puts = batch.request["RequestItems"]["Orders"].as_array().unwrap();
    assert_eq!(puts.len(), 10, "{text}");
    let generator_of = |holder: &Value| {
        let text = holder.as_object().unwrap().values().next().unwrap();
        let name = text.as_str().unwrap().trim_start_matches("${");
        let (name, draw) = name.trim_end_matches('}').rsplit_once('#').unwrap();
        (fitted.generators[name].clone(), draw.to_string())
    };
    let (placed, first_draw) = generator_of(&puts[0]["PutRequest"]["Item"]["placed"]);
    let (_, last_draw) = generator_of(&puts[9]["PutRequest"]["Item"]["placed"]);
    assert_eq!((first_draw.as_str(), last_draw.as_str()), ("0", "9"));
    assert_eq!(placed.kind, GeneratorKind::Sequence, "{placed:?}");
    // One sequence for the table, which the transaction's put draws from too: the two
    // patterns never write the same order.
    let transaction = fitted
        .patterns
        .iter()
        .find(|p| p.operation == "TransactWriteItems")
        .unwrap();
    assert_eq!(
        transaction.request["TransactItems"][0]["Put"]["Item"]["placed"],
        puts[0]["PutRequest"]["Item"]["placed"]
    );
    let (customer, _) = generator_of(&puts[0]["PutRequest"]["Item"]["customer"]);
    match &customer.distribution {
        Distribution::Named(named) => {
            assert_eq!(named[0].value, "c#xxxxxxx0");
            assert!(
                (named[0].share - 0.403).abs() < SHARE_TOLERANCE,
                "{named:?}"
            );
        }
        other => panic!("the batch's customer: {other:?}"),
    }
    // The statement kept its text; its parameters come from fitted generators.
    let statement = fitted
        .patterns
        .iter()
        .find(|p| p.operation == "ExecuteStatement")
        .unwrap();
    assert_eq!(statement.request["Parameters"].as_array().unwrap().len(), 2);

    // Each PartiQL batch's statements draw distinct customers.
    let lookup = fitted
        .patterns
        .iter()
        .find(|p| p.operation == "BatchExecuteStatement")
        .unwrap();
    let statements = lookup.request["Statements"].as_array().unwrap();
    assert_eq!(statements.len(), 2, "{text}");
    let (picked, _) = generator_of(&statements[0]["Parameters"][0]);
    assert!(picked.distinct, "{picked:?}");

    let again = rerun(dir.path(), &reparsed);
    assert_patterns_reproduced(&recorded, &again);

    // The recording, replayed exactly into a fresh server made from its tables, leaves the
    // same items and costs what it cost, pattern by pattern, batches and statements too.
    let replayed_items = replayed_as_recorded(&first_dir, &synthetic, &recorded);
    assert!(items.iter().all(|(_, items)| !items.is_empty()));
    assert!(replayed_items == items, "the replay left other items");
}
