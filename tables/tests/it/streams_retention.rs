//! Stream retention (SPEC-2 §1.5, §1.6): records past retention are never returned, a
//! position before the trim horizon is TrimmedDataAccessException, and the upkeep's
//! compaction drops them from storage; closed shards past retention are forgotten.

use std::ops::Bound;
use std::time::Duration;

use serde_json::{json, Value};
use shoal_engine::Direction;
use shoal_tables::{Database, Options, StreamOptions, StreamStart};

const RETENTION: Duration = Duration::from_millis(400);

fn call(db: &Database, operation: &str, body: Value) -> Value {
    db.execute(operation, body)
        .unwrap_or_else(|e| panic!("{operation}: {} {}", e.code.name(), e.message))
}

fn put(db: &Database, key: &str) {
    call(
        db,
        "PutItem",
        json!({"TableName": "Feed", "Item": {"pk": {"S": key}}}),
    );
}

/// The records stored in the stream's tree, expired or not.
fn stored_records(db: &Database) -> usize {
    let table = call(db, "DescribeTable", json!({"TableName": "Feed"}));
    let name = format!(
        "{}/stream/{}",
        table["Table"]["TableId"].as_str().unwrap(),
        table["Table"]["LatestStreamLabel"].as_str().unwrap()
    );
    let tree = db.lsm().tree_id(&name).expect("the stream's tree");
    db.lsm()
        .scan(
            tree,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
            usize::MAX,
        )
        .unwrap()
        .len()
}

#[test]
fn records_past_retention_are_not_returned_then_dropped_and_trimmed_positions_refused() {
    let db = Database::open_in_memory(Options {
        streams: StreamOptions {
            retention: RETENTION,
            ..StreamOptions::default()
        },
        ..Options::default()
    })
    .unwrap();
    call(
        &db,
        "CreateTable",
        json!({
            "TableName": "Feed",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"}
        }),
    );
    let arn = call(&db, "DescribeTable", json!({"TableName": "Feed"}))["Table"]["LatestStreamArn"]
        .as_str()
        .unwrap()
        .to_string();
    put(&db, "old1");
    put(&db, "old2");
    let mut reader = db.stream_reader("Feed", StreamStart::TrimHorizon).unwrap();
    let first = reader.read(10).unwrap();
    assert_eq!(first.len(), 2);
    let old_sequence_number = first[0].sequence_number();

    std::thread::sleep(RETENTION + Duration::from_millis(100));
    put(&db, "new");
    let shard = call(&db, "DescribeStream", json!({"StreamArn": arn}))["StreamDescription"]
        ["Shards"][0]["ShardId"]
        .clone();

    // TRIM_HORIZON starts at the oldest retained record.
    let iterator = call(
        &db,
        "GetShardIterator",
        json!({"StreamArn": arn, "ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}),
    )["ShardIterator"]
        .clone();
    let page = call(&db, "GetRecords", json!({"ShardIterator": iterator}));
    let keys: Vec<&Value> = page["Records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["dynamodb"]["Keys"]["pk"]["S"])
        .collect();
    assert_eq!(keys, [&json!("new")]);

    // A position before the trim horizon is refused.
    let error = db
        .execute(
            "GetShardIterator",
            json!({"StreamArn": arn, "ShardId": shard, "ShardIteratorType": "AT_SEQUENCE_NUMBER",
                   "SequenceNumber": old_sequence_number}),
        )
        .unwrap_err();
    assert_eq!(error.code.name(), "TrimmedDataAccessException");
    assert_eq!(
        error.message,
        "The data you are trying to access has been trimmed."
    );

    // The expired records are stored until the upkeep (the background thread, at most
    // every RETENTION / 4, or this call) compacts them away.
    assert!(stored_records(&db) >= 1);
    db.stream_upkeep().unwrap();
    assert_eq!(
        stored_records(&db),
        1,
        "expired records are dropped by compaction"
    );
    // A reader from the trim horizon still sees the retained record.
    let mut fresh = db.stream_reader("Feed", StreamStart::TrimHorizon).unwrap();
    assert_eq!(fresh.read(10).unwrap().len(), 1);
}

#[test]
fn a_disabled_stream_is_forgotten_once_its_records_age_out() {
    let db = Database::open_in_memory(Options {
        streams: StreamOptions {
            retention: RETENTION,
            ..StreamOptions::default()
        },
        ..Options::default()
    })
    .unwrap();
    call(
        &db,
        "CreateTable",
        json!({
            "TableName": "Feed",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"}
        }),
    );
    put(&db, "a");
    call(
        &db,
        "UpdateTable",
        json!({"TableName": "Feed", "StreamSpecification": {"StreamEnabled": false}}),
    );
    db.stream_upkeep().unwrap();
    assert_eq!(
        call(&db, "ListStreams", json!({}))["Streams"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "a disabled stream stays listed within retention"
    );
    std::thread::sleep(RETENTION + Duration::from_millis(100));
    db.stream_upkeep().unwrap();
    assert_eq!(call(&db, "ListStreams", json!({})), json!({"Streams": []}));
    let tables = db.lsm().version();
    assert!(
        !tables
            .trees
            .values()
            .any(|tree| tree.name.contains("/stream/")),
        "the stream's tree is dropped with it"
    );
}

#[test]
fn an_iterator_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let iterator = {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        call(
            &db,
            "CreateTable",
            json!({
                "TableName": "Feed",
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "BillingMode": "PAY_PER_REQUEST",
                "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"}
            }),
        );
        put(&db, "a");
        let arn = call(&db, "DescribeTable", json!({"TableName": "Feed"}))["Table"]
            ["LatestStreamArn"]
            .clone();
        let shard = call(&db, "DescribeStream", json!({"StreamArn": arn}))["StreamDescription"]
            ["Shards"][0]["ShardId"]
            .clone();
        call(
            &db,
            "GetShardIterator",
            json!({"StreamArn": arn, "ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}),
        )["ShardIterator"]
            .clone()
    };
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let page = call(&db, "GetRecords", json!({"ShardIterator": iterator}));
    assert_eq!(page["Records"].as_array().unwrap().len(), 1);
    // Still refused when damaged.
    let mut damaged = iterator.as_str().unwrap().to_string();
    damaged.replace_range(0..1, if damaged.starts_with('0') { "1" } else { "0" });
    let error = db
        .execute("GetRecords", json!({"ShardIterator": damaged}))
        .unwrap_err();
    assert_eq!(error.code.name(), "ValidationException");
}
