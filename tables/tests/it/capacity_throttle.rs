//! Capacity emulation (`EmulationOptions::capacity`): provisioned tables spend their burst and then
//! their rate, hot partitions and starved GSIs throttle, batches return what was refused as
//! unprocessed, transactions are cancelled with throttling reasons — all on a clock the
//! test moves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::capacity::throttle::{
    CapacityMode, ThrottleCounts, PROVISIONED_EXCEEDED_MESSAGE,
};
use shoal_tables::capacity::throttle::{ON_DEMAND_EXCEEDED_MESSAGE, PARTITION_WRITE_UNITS_MAX};
use shoal_tables::{Clock, Database, EmulationOptions, Options, StorageOptions};

/// Any moment: the clock only has to stand still unless the test moves it.
const START_MILLIS: u64 = 1_800_000_000_000;

fn open(capacity: CapacityMode) -> (Database, Arc<AtomicU64>) {
    let now = Arc::new(AtomicU64::new(START_MILLIS));
    let clock_now = Arc::clone(&now);
    let db = Database::open_in_memory(Options {
        storage: StorageOptions {
            memtable_size_bytes: 4 << 20,
            wal_segment_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        emulation: EmulationOptions {
            capacity,
            ..EmulationOptions::default()
        },
        clock: Clock::from_fn(move || clock_now.load(Ordering::SeqCst)),
        ..Options::default()
    })
    .unwrap();
    (db, now)
}

fn provisioned_table(db: &Database, name: &str, read: u64, write: u64) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": name,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "ProvisionedThroughput": {"ReadCapacityUnits": read, "WriteCapacityUnits": write}
        }),
    )
    .unwrap();
}

fn item(pk: &str, sk: u64) -> Value {
    json!({"pk": {"S": pk}, "sk": {"N": sk.to_string()}})
}

fn put(db: &Database, table: &str, item: Value) -> Result<Value, shoal_model::ApiError> {
    db.execute("PutItem", json!({"TableName": table, "Item": item}))
}

/// Writes the one-unit items `item_of(0..count)` in batches of 25, all of them processed.
fn write_batches(db: &Database, table: &str, count: u64, item_of: impl Fn(u64) -> Value) {
    let mut sk = 0;
    while sk < count {
        let requests: Vec<Value> = (sk..(sk + 25).min(count))
            .map(|n| json!({"PutRequest": {"Item": item_of(n)}}))
            .collect();
        sk += requests.len() as u64;
        let output = db
            .execute("BatchWriteItem", json!({"RequestItems": {table: requests}}))
            .unwrap();
        assert_eq!(output["UnprocessedItems"], json!({}), "at item {sk}");
    }
}

fn throttling_reasons(error: &shoal_model::ApiError, member: &str) -> Value {
    error.extra.as_ref().expect("throttling reasons")[member].clone()
}

#[test]
fn a_provisioned_table_throttles_after_its_burst_and_recovers_with_time() {
    let (db, now) = open(CapacityMode::Enforce);
    provisioned_table(&db, "Slow", 5, 5);
    // 300 s of 5 WCU: the table starts with 1,500 units of burst credit (spread over
    // partitions, each of which takes 1,000 a second).
    write_batches(&db, "Slow", 1500, |n| item(&format!("p{}", n % 10), n));

    let error = put(&db, "Slow", item("q", 0)).unwrap_err();
    assert_eq!(
        error.code,
        ErrorCode::ProvisionedThroughputExceededException
    );
    assert_eq!(error.message, PROVISIONED_EXCEEDED_MESSAGE);
    assert_eq!(
        throttling_reasons(&error, "ThrottlingReasons"),
        json!([{
            "reason": "TableWriteProvisionedThroughputExceeded",
            "resource": "arn:aws:dynamodb:ddblocal:000000000000:table/Slow"
        }])
    );
    // Reads have their own bucket.
    db.execute("GetItem", json!({"TableName": "Slow", "Key": item("p", 0)}))
        .unwrap();

    // A second brings 5 units back.
    now.fetch_add(1_000, Ordering::SeqCst);
    let written = db
        .execute(
            "PutItem",
            json!({"TableName": "Slow", "Item": item("q", 0), "ReturnConsumedCapacity": "TOTAL"}),
        )
        .unwrap();
    assert_eq!(
        written["ConsumedCapacity"],
        json!({"TableName": "Slow", "CapacityUnits": 1.0, "WriteCapacityUnits": 1.0}),
        "the client's TOTAL is answered as TOTAL"
    );
    for sk in 1..5 {
        put(&db, "Slow", item("q", sk)).unwrap();
    }
    assert!(put(&db, "Slow", item("q", 9)).is_err(), "5 units a second");

    assert_eq!(
        db.throttled_requests(),
        vec![(
            "Slow".to_string(),
            None,
            ThrottleCounts {
                reads: 0,
                writes: 2
            }
        )]
    );
}

#[test]
fn without_enforcement_nothing_is_throttled() {
    let (db, _now) = open(CapacityMode::Off);
    provisioned_table(&db, "Slow", 1, 1);
    write_batches(&db, "Slow", 400, |n| item("p", n));
    put(&db, "Slow", item("p", 1000)).unwrap();
    assert!(db.throttled_requests().is_empty());
}

#[test]
fn a_hot_partition_throttles_at_its_write_limit_while_other_keys_pass() {
    let (db, now) = open(CapacityMode::Enforce);
    provisioned_table(&db, "Big", 40_000, 40_000);
    write_batches(&db, "Big", PARTITION_WRITE_UNITS_MAX as u64, |n| {
        item("hot", n)
    });

    let error = put(&db, "Big", item("hot", 5000)).unwrap_err();
    assert_eq!(
        error.code,
        ErrorCode::ProvisionedThroughputExceededException
    );
    assert_eq!(
        throttling_reasons(&error, "ThrottlingReasons")[0]["reason"],
        json!("TableWriteKeyRangeThroughputExceeded")
    );
    put(&db, "Big", item("cold", 0)).unwrap();

    // A batch sends back the hot key's items and writes the others.
    let output = db
        .execute(
            "BatchWriteItem",
            json!({"RequestItems": {"Big": [
                {"PutRequest": {"Item": item("hot", 6000)}},
                {"PutRequest": {"Item": item("cold", 1)}}
            ]}}),
        )
        .unwrap();
    assert_eq!(
        output["UnprocessedItems"],
        json!({"Big": [{"PutRequest": {"Item": item("hot", 6000)}}]})
    );
    let cold = db
        .execute(
            "GetItem",
            json!({"TableName": "Big", "Key": item("cold", 1)}),
        )
        .unwrap();
    assert_eq!(cold["Item"], item("cold", 1));
    // Only when nothing can be processed does the batch fail.
    let error = db
        .execute(
            "BatchWriteItem",
            json!({"RequestItems": {"Big": [{"PutRequest": {"Item": item("hot", 6000)}}]}}),
        )
        .unwrap_err();
    assert_eq!(
        error.code,
        ErrorCode::ProvisionedThroughputExceededException
    );

    now.fetch_add(1_000, Ordering::SeqCst);
    put(&db, "Big", item("hot", 6000)).unwrap();
}

#[test]
fn a_gsi_short_of_write_capacity_throttles_writes_to_its_table() {
    let (db, _now) = open(CapacityMode::Enforce);
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Indexed",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "GlobalSecondaryIndexes": [{
                "IndexName": "Starved",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}
            }],
            "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 100}
        }),
    )
    .unwrap();
    // 300 s of 1 WCU: 300 index entries, each item on its own index partition.
    for sk in 0..300 {
        let mut entry = item("p", sk);
        entry["g"] = json!({"S": format!("g{sk}")});
        put(&db, "Indexed", entry).unwrap();
    }
    // An item the index does not hold is still refused: DynamoDB throttles the table's
    // writes as a whole.
    let error = put(&db, "Indexed", item("p", 1000)).unwrap_err();
    assert_eq!(
        error.code,
        ErrorCode::ProvisionedThroughputExceededException
    );
    assert_eq!(
        throttling_reasons(&error, "ThrottlingReasons"),
        json!([{
            "reason": "IndexWriteProvisionedThroughputExceeded",
            "resource": "arn:aws:dynamodb:ddblocal:000000000000:table/Indexed/index/Starved"
        }])
    );
    assert_eq!(
        db.throttled_requests(),
        vec![(
            "Indexed".to_string(),
            Some("Starved".to_string()),
            ThrottleCounts {
                reads: 0,
                writes: 1
            }
        )]
    );
}

#[test]
fn batch_gets_leave_throttled_keys_unprocessed() {
    let (db, _now) = open(CapacityMode::Enforce);
    provisioned_table(&db, "Reads", 1, 100);
    provisioned_table(&db, "Other", 100, 100);
    put(&db, "Other", item("o", 0)).unwrap();
    let keys: Vec<Value> = (0..100).map(|sk| item("p", sk)).collect();
    // 300 s of 1 RCU, a unit per strongly consistent read of a missing item.
    for _ in 0..3 {
        let output = db
            .execute(
                "BatchGetItem",
                json!({"RequestItems": {"Reads": {"Keys": keys, "ConsistentRead": true}}}),
            )
            .unwrap();
        assert_eq!(output["UnprocessedKeys"], json!({}));
    }
    let output = db
        .execute(
            "BatchGetItem",
            json!({"RequestItems": {
                "Reads": {"Keys": [item("p", 0)], "ConsistentRead": true},
                "Other": {"Keys": [item("o", 0)]}
            }}),
        )
        .unwrap();
    assert_eq!(
        output["UnprocessedKeys"],
        json!({"Reads": {"Keys": [item("p", 0)], "ConsistentRead": true}})
    );
    assert_eq!(output["Responses"]["Other"], json!([item("o", 0)]));
    let error = db
        .execute(
            "BatchGetItem",
            json!({"RequestItems": {"Reads": {"Keys": [item("p", 0)]}}}),
        )
        .unwrap_err();
    assert_eq!(
        error.code,
        ErrorCode::ProvisionedThroughputExceededException
    );
}

#[test]
fn transactions_are_cancelled_with_throttling_reasons() {
    let (db, _now) = open(CapacityMode::Enforce);
    provisioned_table(&db, "Slow", 1, 1);
    provisioned_table(&db, "Other", 100, 100);
    write_batches(&db, "Slow", 300, |n| item("p", n));
    let error = db
        .execute(
            "TransactWriteItems",
            json!({"TransactItems": [
                {"Put": {"TableName": "Other", "Item": item("o", 0)}},
                {"Put": {"TableName": "Slow", "Item": item("s", 0)}}
            ]}),
        )
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::TransactionCanceledException);
    assert_eq!(
        error.message,
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ProvisionedThroughputExceeded]"
    );
    assert_eq!(
        throttling_reasons(&error, "CancellationReasons"),
        json!([
            {"Code": "None"},
            {"Code": "ProvisionedThroughputExceeded",
             "Message": "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}
        ])
    );
    let nothing = db
        .execute(
            "GetItem",
            json!({"TableName": "Other", "Key": item("o", 0)}),
        )
        .unwrap();
    assert!(nothing.get("Item").is_none(), "nothing written: {nothing}");
}

#[test]
fn an_on_demand_cap_throttles_with_the_on_demand_exception() {
    let (db, _now) = open(CapacityMode::Enforce);
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Capped",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
            "OnDemandThroughput": {"MaxWriteRequestUnits": 10}
        }),
    )
    .unwrap();
    for n in 0..10 {
        put(&db, "Capped", json!({"pk": {"S": format!("k{n}")}})).unwrap();
    }
    let error = put(&db, "Capped", json!({"pk": {"S": "k10"}})).unwrap_err();
    assert_eq!(error.code, ErrorCode::ThrottlingException);
    assert_eq!(error.message, ON_DEMAND_EXCEEDED_MESSAGE);
    assert_eq!(
        throttling_reasons(&error, "throttlingReasons")[0]["reason"],
        json!("TableWriteMaxOnDemandThroughputExceeded")
    );
}

#[test]
fn queries_draw_on_the_index_and_the_partition_they_read() {
    let (db, _now) = open(CapacityMode::Enforce);
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Read",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "GlobalSecondaryIndexes": [{
                "IndexName": "Slow",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 100}
            }],
            "ProvisionedThroughput": {"ReadCapacityUnits": 40000, "WriteCapacityUnits": 100}
        }),
    )
    .unwrap();
    let query = |pk: &str| {
        db.execute(
            "Query",
            json!({"TableName": "Read", "KeyConditionExpression": "pk = :pk",
                   "ExpressionAttributeValues": {":pk": {"S": pk}}, "ConsistentRead": true}),
        )
    };
    // A partition serves 3,000 strongly consistent one-unit reads a second.
    for _ in 0..3000 {
        db.execute(
            "GetItem",
            json!({"TableName": "Read", "Key": item("hot", 0), "ConsistentRead": true}),
        )
        .unwrap();
    }
    let error = query("hot").unwrap_err();
    assert_eq!(
        throttling_reasons(&error, "ThrottlingReasons")[0]["reason"],
        json!("TableReadKeyRangeThroughputExceeded")
    );
    query("cold").unwrap();

    // 300 s of 1 RCU on the index, half a unit per eventually consistent page.
    let query_index = |g: &str| {
        db.execute(
            "Query",
            json!({"TableName": "Read", "IndexName": "Slow", "KeyConditionExpression": "g = :g",
                   "ExpressionAttributeValues": {":g": {"S": g}}}),
        )
    };
    for n in 0..600 {
        query_index(&format!("g{n}")).unwrap();
    }
    let error = query_index("g").unwrap_err();
    assert_eq!(
        throttling_reasons(&error, "ThrottlingReasons")[0]["reason"],
        json!("IndexReadProvisionedThroughputExceeded")
    );
    // The table's own reads are not the index's.
    query("cold").unwrap();
}

#[test]
fn partiql_statements_draw_on_the_same_buckets() {
    let (db, _now) = open(CapacityMode::Enforce);
    provisioned_table(&db, "Statements", 1, 1);
    // Burst credit: 300 s of 1 WCU. Each INSERT of a small item is 1 WCU.
    let mut refused = None;
    for n in 0..400u64 {
        let statement = format!("INSERT INTO Statements VALUE {{'pk': 'p', 'sk': {n}}}");
        if let Err(error) = db.execute("ExecuteStatement", json!({"Statement": statement})) {
            refused = Some((n, error));
            break;
        }
    }
    let (n, error) = refused.expect("the burst runs out");
    assert!((290..=310).contains(&n), "refused at {n}");
    assert_eq!(
        error.code,
        ErrorCode::ProvisionedThroughputExceededException
    );
    // A batch slot reports it with its own code.
    let batch = db
        .execute(
            "BatchExecuteStatement",
            json!({"Statements": [{"Statement": "INSERT INTO Statements VALUE {'pk': 'q', 'sk': 1}"}]}),
        )
        .unwrap();
    assert_eq!(
        batch["Responses"][0]["Error"]["Code"],
        "ProvisionedThroughputExceeded"
    );
}
