//! DynamoDB Streams through the operations (SPEC-2 §1): what writes add to a stream, how
//! it is read, shard rollover and the stream's life on UpdateTable.

use std::time::Duration;

use serde_json::{json, Value};
use shoal_tables::{Database, Options, StreamOptions, StreamStart};

fn database(options: Options) -> Database {
    Database::open_in_memory(options).unwrap()
}

fn call(db: &Database, operation: &str, body: Value) -> Value {
    db.execute(operation, body)
        .unwrap_or_else(|e| panic!("{operation}: {} {}", e.code.name(), e.message))
}

fn error(db: &Database, operation: &str, body: Value) -> (String, String) {
    let e = db.execute(operation, body).unwrap_err();
    (e.code.name().to_string(), e.message)
}

fn create(db: &Database, view: &str) -> Value {
    call(
        db,
        "CreateTable",
        json!({
            "TableName": "Tab",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamEnabled": true, "StreamViewType": view}
        }),
    )
}

/// Every record of the stream's shards, read with GetRecords from TRIM_HORIZON.
pub(crate) fn all_records(db: &Database, arn: &str) -> Vec<Value> {
    let description = call(db, "DescribeStream", json!({"StreamArn": arn}));
    let mut records = Vec::new();
    for shard in description["StreamDescription"]["Shards"]
        .as_array()
        .unwrap()
    {
        let mut iterator = call(
            db,
            "GetShardIterator",
            json!({"StreamArn": arn, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"}),
        )["ShardIterator"]
            .clone();
        loop {
            let page = call(db, "GetRecords", json!({"ShardIterator": iterator}));
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

#[test]
fn every_change_is_one_record_with_the_images_of_its_view_type() {
    let db = database(Options::default());
    let created = create(&db, "NEW_AND_OLD_IMAGES");
    let description = &created["TableDescription"];
    let arn = description["LatestStreamArn"].as_str().unwrap().to_string();
    assert_eq!(
        description["StreamSpecification"],
        json!({"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"})
    );
    assert!(arn.ends_with(&format!(
        "/stream/{}",
        description["LatestStreamLabel"].as_str().unwrap()
    )));

    call(
        &db,
        "PutItem",
        json!({"TableName": "Tab", "Item": {"pk": {"S": "a"}, "x": {"N": "1"}}}),
    );
    // The same item again: no record.
    call(
        &db,
        "PutItem",
        json!({"TableName": "Tab", "Item": {"pk": {"S": "a"}, "x": {"N": "1"}}}),
    );
    call(
        &db,
        "UpdateItem",
        json!({"TableName": "Tab", "Key": {"pk": {"S": "a"}}, "UpdateExpression": "SET x = :v",
               "ExpressionAttributeValues": {":v": {"N": "2"}}}),
    );
    // A failed condition: no record.
    error(
        &db,
        "PutItem",
        json!({"TableName": "Tab", "Item": {"pk": {"S": "a"}}, "ConditionExpression": "attribute_not_exists(pk)"}),
    );
    call(
        &db,
        "DeleteItem",
        json!({"TableName": "Tab", "Key": {"pk": {"S": "a"}}}),
    );
    // Deleting a missing item: no record.
    call(
        &db,
        "DeleteItem",
        json!({"TableName": "Tab", "Key": {"pk": {"S": "a"}}}),
    );

    let records = all_records(&db, &arn);
    let names: Vec<&str> = records
        .iter()
        .map(|r| r["eventName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["INSERT", "MODIFY", "REMOVE"]);
    assert_eq!(
        records[0]["dynamodb"]["NewImage"],
        json!({"pk": {"S": "a"}, "x": {"N": "1"}})
    );
    assert!(records[0]["dynamodb"].get("OldImage").is_none());
    assert_eq!(records[1]["dynamodb"]["OldImage"]["x"], json!({"N": "1"}));
    assert_eq!(records[1]["dynamodb"]["NewImage"]["x"], json!({"N": "2"}));
    assert_eq!(records[2]["dynamodb"]["OldImage"]["x"], json!({"N": "2"}));
    assert!(records[2]["dynamodb"].get("NewImage").is_none());
    for record in &records {
        assert_eq!(record["dynamodb"]["Keys"], json!({"pk": {"S": "a"}}));
        assert_eq!(record["eventSource"], "aws:dynamodb");
        assert_eq!(record["dynamodb"]["StreamViewType"], "NEW_AND_OLD_IMAGES");
        assert!(record.get("userIdentity").is_none());
        let number = record["dynamodb"]["SequenceNumber"].as_str().unwrap();
        assert!((21..=40).contains(&number.len()));
    }
    let numbers: Vec<u128> = records
        .iter()
        .map(|r| {
            r["dynamodb"]["SequenceNumber"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
}

#[test]
fn the_embedded_reader_follows_rollovers_and_waits_for_new_records() {
    let db = database(Options {
        streams: StreamOptions {
            shard_records_max: Some(2),
            ..StreamOptions::default()
        },
        ..Options::default()
    });
    create(&db, "KEYS_ONLY");
    let mut reader = db.stream_reader("Tab", StreamStart::TrimHorizon).unwrap();
    for i in 0..5 {
        call(
            &db,
            "PutItem",
            json!({"TableName": "Tab", "Item": {"pk": {"S": format!("k{i}")}}}),
        );
        db.stream_upkeep().unwrap();
    }
    let arn = call(&db, "DescribeTable", json!({"TableName": "Tab"}))["Table"]["LatestStreamArn"]
        .as_str()
        .unwrap()
        .to_string();
    let shards = call(&db, "DescribeStream", json!({"StreamArn": arn}))["StreamDescription"]
        ["Shards"]
        .as_array()
        .unwrap()
        .clone();
    assert!(shards.len() >= 3, "{shards:?}");
    for pair in shards.windows(2) {
        assert_eq!(pair[1]["ParentShardId"], pair[0]["ShardId"]);
        assert!(pair[0]["SequenceNumberRange"]
            .get("EndingSequenceNumber")
            .is_some());
    }
    assert!(shards.last().unwrap()["SequenceNumberRange"]
        .get("EndingSequenceNumber")
        .is_none());

    let records = reader.read(100).unwrap();
    let keys: Vec<String> = records
        .iter()
        .map(|r| match &r.keys["pk"] {
            shoal_model::AttributeValue::S(s) => s.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys, ["k0", "k1", "k2", "k3", "k4"]);
    assert_eq!(all_records(&db, &arn).len(), 5);

    // Nothing new: the wait times out empty; a write from another thread wakes it.
    assert!(reader
        .wait(10, Duration::from_millis(20))
        .unwrap()
        .is_empty());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            call(
                &db,
                "PutItem",
                json!({"TableName": "Tab", "Item": {"pk": {"S": "late"}}}),
            );
        });
        let woken = reader.wait(10, Duration::from_secs(10)).unwrap();
        assert_eq!(woken.len(), 1);
    });
}

#[test]
fn update_table_enables_and_disables_with_dynamodbs_texts() {
    let db = database(Options::default());
    call(
        &db,
        "CreateTable",
        json!({
            "TableName": "Tab",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
    call(
        &db,
        "PutItem",
        json!({"TableName": "Tab", "Item": {"pk": {"S": "before"}}}),
    );
    let (code, message) = error(
        &db,
        "UpdateTable",
        json!({"TableName": "Tab", "StreamSpecification": {"StreamEnabled": false}}),
    );
    assert_eq!(code, "ValidationException");
    assert_eq!(message, "Table has no stream to disable: TableName: Tab");
    let updated = call(
        &db,
        "UpdateTable",
        json!({"TableName": "Tab", "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_IMAGE"}}),
    );
    let first_arn = updated["TableDescription"]["LatestStreamArn"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, message) = error(
        &db,
        "UpdateTable",
        json!({"TableName": "Tab", "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"}}),
    );
    assert_eq!(
        message,
        "Table already has an enabled stream: TableName: Tab"
    );
    call(
        &db,
        "PutItem",
        json!({"TableName": "Tab", "Item": {"pk": {"S": "during"}}}),
    );
    call(
        &db,
        "UpdateTable",
        json!({"TableName": "Tab", "StreamSpecification": {"StreamEnabled": false}}),
    );
    call(
        &db,
        "PutItem",
        json!({"TableName": "Tab", "Item": {"pk": {"S": "after"}}}),
    );
    let description = call(&db, "DescribeTable", json!({"TableName": "Tab"}));
    assert!(description["Table"].get("StreamSpecification").is_none());
    assert_eq!(description["Table"]["LatestStreamArn"], first_arn.as_str());

    // The disabled stream stays readable, with only the change made while it was enabled.
    let records = all_records(&db, &first_arn);
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0]["dynamodb"]["Keys"],
        json!({"pk": {"S": "during"}})
    );
    let stream = call(&db, "DescribeStream", json!({"StreamArn": first_arn}));
    assert_eq!(stream["StreamDescription"]["StreamStatus"], "DISABLED");

    // Re-enabling makes a new stream; both are listed.
    let again = call(
        &db,
        "UpdateTable",
        json!({"TableName": "Tab", "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"}}),
    );
    let second_arn = again["TableDescription"]["LatestStreamArn"]
        .as_str()
        .unwrap();
    assert_ne!(second_arn, first_arn);
    let listed = call(&db, "ListStreams", json!({"TableName": "Tab"}));
    assert_eq!(listed["Streams"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_requests_get_dynamodbs_errors() {
    let db = database(Options::default());
    create(&db, "KEYS_ONLY");
    let arn = call(&db, "DescribeTable", json!({"TableName": "Tab"}))["Table"]["LatestStreamArn"]
        .as_str()
        .unwrap()
        .to_string();
    let shard = call(&db, "DescribeStream", json!({"StreamArn": arn}))["StreamDescription"]
        ["Shards"][0]["ShardId"]
        .clone();
    let cases = [
        (
            "GetRecords",
            json!({"ShardIterator": "garbage"}),
            "ValidationException",
        ),
        ("GetRecords", json!({}), "ValidationException"),
        (
            "DescribeStream",
            json!({"StreamArn": "dog"}),
            "ValidationException",
        ),
        (
            "DescribeStream",
            json!({"StreamArn": arn.replace("table/Tab/", "table/Missing/")}),
            "ResourceNotFoundException",
        ),
        (
            "GetShardIterator",
            json!({"StreamArn": arn, "ShardId": shard, "ShardIteratorType": "AT_SEQUENCE_NUMBER"}),
            "ValidationException",
        ),
        (
            "GetShardIterator",
            json!({"StreamArn": arn, "ShardId": shard, "ShardIteratorType": "LATEST", "SequenceNumber": "1"}),
            "ValidationException",
        ),
        (
            "GetShardIterator",
            json!({"StreamArn": arn, "ShardId": "shardId-00000000000000000000-00000000", "ShardIteratorType": "LATEST"}),
            "ResourceNotFoundException",
        ),
        ("ListStreams", json!({"Limit": 0}), "ValidationException"),
        ("ListStreams", json!({"Limit": 101}), "ValidationException"),
    ];
    for (operation, body, expected) in cases {
        let (code, message) = error(&db, operation, body.clone());
        assert_eq!(code, expected, "{operation} {body}: {message}");
    }
    let iterator = call(
        &db,
        "GetShardIterator",
        json!({"StreamArn": arn, "ShardId": shard, "ShardIteratorType": "LATEST"}),
    )["ShardIterator"]
        .clone();
    for limit in [0, 1001] {
        let (code, message) = error(
            &db,
            "GetRecords",
            json!({"ShardIterator": iterator, "Limit": limit}),
        );
        assert_eq!(code, "ValidationException");
        assert!(message.contains("limit"), "{message}");
    }
    let page = call(
        &db,
        "GetRecords",
        json!({"ShardIterator": iterator, "Limit": 1000}),
    );
    assert_eq!(page["Records"], json!([]));
    assert!(page.get("NextShardIterator").is_some());
}

#[test]
fn remove_alone_on_a_missing_item_creates_nothing_and_writes_no_record() {
    let db = database(Options::default());
    create(&db, "NEW_AND_OLD_IMAGES");
    let mut reader = db.stream_reader("Tab", StreamStart::TrimHorizon).unwrap();
    let updated = call(
        &db,
        "UpdateItem",
        json!({"TableName": "Tab", "Key": {"pk": {"S": "ghost"}},
               "UpdateExpression": "REMOVE x, y", "ReturnValues": "ALL_NEW"}),
    );
    assert!(updated.get("Attributes").is_none(), "{updated}");
    call(
        &db,
        "TransactWriteItems",
        json!({"TransactItems": [{"Update": {"TableName": "Tab", "Key": {"pk": {"S": "ghost2"}},
               "UpdateExpression": "DELETE tags :t",
               "ExpressionAttributeValues": {":t": {"SS": ["a"]}}}}]}),
    );
    let got = call(
        &db,
        "GetItem",
        json!({"TableName": "Tab", "Key": {"pk": {"S": "ghost"}}}),
    );
    assert!(got.get("Item").is_none(), "{got}");
    let got = call(
        &db,
        "GetItem",
        json!({"TableName": "Tab", "Key": {"pk": {"S": "ghost2"}}}),
    );
    assert!(got.get("Item").is_none(), "{got}");
    assert!(reader.read(10).unwrap().is_empty());
    // An update with no expression at all still creates the key-only item.
    call(
        &db,
        "UpdateItem",
        json!({"TableName": "Tab", "Key": {"pk": {"S": "bare"}}}),
    );
    let records = reader.read(10).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].event_name.as_str(), "INSERT");
}

#[test]
fn check_compares_each_items_last_record_with_the_item() {
    let db = database(Options::default());
    create(&db, "NEW_AND_OLD_IMAGES");
    for i in 0..10 {
        call(
            &db,
            "PutItem",
            json!({"TableName": "Tab", "Item": {"pk": {"S": format!("k{i}")}, "v": {"N": "1"}}}),
        );
    }
    call(
        &db,
        "PutItem",
        json!({"TableName": "Tab", "Item": {"pk": {"S": "k3"}, "v": {"N": "2"}}}),
    );
    call(
        &db,
        "DeleteItem",
        json!({"TableName": "Tab", "Key": {"pk": {"S": "k4"}}}),
    );
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);

    // A change behind the write path's back: the item changes, its stream does not.
    let table = db.table("Tab").unwrap();
    let key =
        shoal_tables::core::keys::base_key(&shoal_model::AttributeValue::S("k5".into()), None)
            .unwrap();
    let mut batch = shoal_engine::WriteBatch::new();
    batch.delete(table.tree, &key).unwrap();
    db.lsm().write(batch).unwrap();
    let report = db.check().unwrap();
    let stream_problems: Vec<&String> = report
        .problems
        .iter()
        .filter(|p| p.contains("stream"))
        .collect();
    assert_eq!(stream_problems.len(), 1, "{:?}", report.problems);
    assert!(stream_problems[0].contains("k5"), "{stream_problems:?}");
}
