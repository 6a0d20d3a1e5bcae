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

/// A database whose clock the test moves (`START_MILLIS` at first); also Contributor Insights' tests'.
pub(crate) fn open(capacity: CapacityMode) -> (Database, Arc<AtomicU64>) {
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
        json!({"TableName": "Slow", "CapacityUnits": 1.0}),
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

/// An on-demand (or, with `provisioned`, a provisioned 40,000/40,000) table keyed on `pk`
/// with a KEYS_ONLY GSI `ByStatus` on `status`: every write of an item below 1 KB is 1 WCU
/// on the table and 1 WCU per GSI entry it adds or removes.
fn status_table(db: &Database, name: &str, provisioned: bool) {
    let mut create = json!({
        "TableName": name,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "status", "AttributeType": "S"}
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "GlobalSecondaryIndexes": [{
            "IndexName": "ByStatus",
            "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"}
        }],
        "BillingMode": "PAY_PER_REQUEST"
    });
    if provisioned {
        let units = json!({"ReadCapacityUnits": 40_000, "WriteCapacityUnits": 40_000});
        create["BillingMode"] = json!("PROVISIONED");
        create["ProvisionedThroughput"] = units.clone();
        create["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] = units;
    }
    db.execute("CreateTable", create).unwrap();
}

/// An item of ~950 bytes (1 WCU) under key `pk`, with `status` if given.
fn status_item(pk: &str, status: Option<&str>) -> Value {
    let mut item = json!({"pk": {"S": pk}, "data": {"S": "x".repeat(900)}});
    if let Some(status) = status {
        item["status"] = json!({"S": status});
    }
    item
}

fn index_reason(error: &shoal_model::ApiError, member: &str) -> Value {
    throttling_reasons(error, member)[0].clone()
}

const STATUS_INDEX_ARN: &str = "arn:aws:dynamodb:ddblocal:000000000000:table/Orders/index/ByStatus";

#[test]
fn a_low_cardinality_gsi_key_throttles_writes_at_its_partition_s_limit() {
    let (db, now) = open(CapacityMode::Enforce);
    status_table(&db, "Orders", false);
    // 1,000 items a second, each on its own table partition, all on the GSI partition
    // PENDING: 1,000 GSI WCU, what one partition serves in a second.
    for n in 0..PARTITION_WRITE_UNITS_MAX as u64 {
        let written = db
            .execute(
                "PutItem",
                json!({"TableName": "Orders", "Item": status_item(&format!("o{n}"), Some("PENDING")),
                       "ReturnConsumedCapacity": "INDEXES"}),
            )
            .unwrap();
        if n == 0 {
            assert_eq!(
                written["ConsumedCapacity"]["GlobalSecondaryIndexes"]["ByStatus"]["CapacityUnits"],
                json!(1.0)
            );
        }
    }
    let error = put(&db, "Orders", status_item("next", Some("PENDING"))).unwrap_err();
    assert_eq!(error.code, ErrorCode::ThrottlingException);
    assert_eq!(error.message, ON_DEMAND_EXCEEDED_MESSAGE);
    assert_eq!(
        index_reason(&error, "throttlingReasons"),
        json!({"reason": "IndexWriteKeyRangeThroughputExceeded", "resource": STATUS_INDEX_ARN})
    );
    // Another status, and an item the GSI does not hold, write no hot GSI partition.
    put(&db, "Orders", status_item("done", Some("DONE"))).unwrap();
    put(&db, "Orders", status_item("none", None)).unwrap();
    // A batch sends back what would write PENDING; a transaction is cancelled with the
    // GSI's reason.
    let output = db
        .execute(
            "BatchWriteItem",
            json!({"RequestItems": {"Orders": [
                {"PutRequest": {"Item": status_item("b1", Some("PENDING"))}},
                {"PutRequest": {"Item": status_item("b2", Some("DONE"))}}
            ]}}),
        )
        .unwrap();
    assert_eq!(
        output["UnprocessedItems"],
        json!({"Orders": [{"PutRequest": {"Item": status_item("b1", Some("PENDING"))}}]})
    );
    let error = db
        .execute(
            "TransactWriteItems",
            json!({"TransactItems": [
                {"Put": {"TableName": "Orders", "Item": status_item("t1", Some("DONE"))}},
                {"Put": {"TableName": "Orders", "Item": status_item("t2", Some("PENDING"))}}
            ]}),
        )
        .unwrap_err();
    assert_eq!(
        throttling_reasons(&error, "CancellationReasons"),
        json!([
            {"Code": "None"},
            {"Code": "ThrottlingError",
             "Message": "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically scaling your index so please try again shortly."}
        ])
    );
    // PartiQL compiles to the same writes.
    let error = db
        .execute(
            "ExecuteStatement",
            json!({"Statement": "INSERT INTO Orders VALUE {'pk': 'q', 'status': 'PENDING'}"}),
        )
        .unwrap_err();
    assert_eq!(
        index_reason(&error, "throttlingReasons")["reason"],
        json!("IndexWriteKeyRangeThroughputExceeded")
    );
    let counts = db.throttled_requests();
    assert_eq!(
        counts,
        vec![(
            "Orders".to_string(),
            Some("ByStatus".to_string()),
            ThrottleCounts {
                reads: 0,
                writes: 4
            }
        )]
    );

    // A second later the partition has its 1,000 units again.
    now.fetch_add(1_000, Ordering::SeqCst);
    put(&db, "Orders", status_item("next", Some("PENDING"))).unwrap();
}

#[test]
fn the_same_writes_over_two_gsi_key_values_pass() {
    let (db, _now) = open(CapacityMode::Enforce);
    status_table(&db, "Orders", false);
    // 1,200 WCU in one second on the GSI, 600 on each of two partitions: under the limit.
    write_batches(&db, "Orders", 1200, |n| {
        let status = if n % 2 == 0 { "PENDING" } else { "DONE" };
        status_item(&format!("o{n}"), Some(status))
    });
    put(&db, "Orders", status_item("next", Some("PENDING"))).unwrap();
    put(&db, "Orders", status_item("next2", Some("DONE"))).unwrap();
    assert!(db.throttled_requests().is_empty());
}

#[test]
fn a_provisioned_gsi_s_hot_partition_throttles_with_the_provisioned_exception() {
    let (db, _now) = open(CapacityMode::Enforce);
    status_table(&db, "Orders", true);
    write_batches(&db, "Orders", PARTITION_WRITE_UNITS_MAX as u64, |n| {
        status_item(&format!("o{n}"), Some("PENDING"))
    });
    let error = put(&db, "Orders", status_item("next", Some("PENDING"))).unwrap_err();
    assert_eq!(
        error.code,
        ErrorCode::ProvisionedThroughputExceededException
    );
    assert_eq!(
        index_reason(&error, "ThrottlingReasons"),
        json!({"reason": "IndexWriteKeyRangeThroughputExceeded", "resource": STATUS_INDEX_ARN})
    );
    let error = db
        .execute(
            "TransactWriteItems",
            json!({"TransactItems": [
                {"Put": {"TableName": "Orders", "Item": status_item("t", Some("PENDING"))}}
            ]}),
        )
        .unwrap_err();
    assert_eq!(
        throttling_reasons(&error, "CancellationReasons")[0]["Code"],
        json!("ProvisionedThroughputExceeded")
    );
}

/// Puts `count` new items of `status` with keys `{prefix}{n}`, one by one (putting an item
/// again with the same status leaves its KEYS_ONLY entry as it was: no GSI units).
fn fill(db: &Database, status: &str, prefix: &str, count: u64) {
    for n in 0..count {
        put(
            db,
            "Orders",
            status_item(&format!("{prefix}{n}"), Some(status)),
        )
        .unwrap();
    }
}

#[test]
fn an_update_moving_an_entry_splits_its_units_between_the_two_partitions() {
    let (db, now) = open(CapacityMode::Enforce);
    status_table(&db, "Orders", false);
    // Both partitions one unit short of their second's 1,000.
    fill(&db, "PENDING", "PENDING", 999);
    fill(&db, "DONE", "DONE", 999);
    // PENDING → DONE: the old entry's delete (1 WCU) and the new entry's put (1 WCU), half
    // on each partition: one unit each.
    let updated = db
        .execute(
            "UpdateItem",
            json!({"TableName": "Orders", "Key": {"pk": {"S": "PENDING0"}},
                   "UpdateExpression": "SET #s = :done",
                   "ExpressionAttributeNames": {"#s": "status"},
                   "ExpressionAttributeValues": {":done": {"S": "DONE"}},
                   "ReturnConsumedCapacity": "INDEXES"}),
        )
        .unwrap();
    assert_eq!(
        updated["ConsumedCapacity"]["GlobalSecondaryIndexes"]["ByStatus"]["CapacityUnits"],
        json!(2.0)
    );
    // Each partition took at least one unit: both are spent ...
    for status in ["PENDING", "DONE"] {
        let error = put(&db, "Orders", status_item("x", Some(status))).unwrap_err();
        assert_eq!(
            index_reason(&error, "throttlingReasons")["reason"],
            json!("IndexWriteKeyRangeThroughputExceeded"),
            "{status}"
        );
    }
    // ... and no more than one: a millisecond (one unit at 1,000 a second) lets each write
    // again.
    now.fetch_add(1, Ordering::SeqCst);
    put(&db, "Orders", status_item("p", Some("PENDING"))).unwrap();
    put(&db, "Orders", status_item("d", Some("DONE"))).unwrap();
}

#[test]
fn deletes_and_removed_attributes_charge_the_value_before_the_write() {
    let (db, now) = open(CapacityMode::Enforce);
    status_table(&db, "Orders", false);
    put(&db, "Orders", status_item("plain", None)).unwrap();
    fill(&db, "DONE", "DONE", 5);
    fill(&db, "PENDING", "PENDING", 999);
    // Deleting an item the GSI does not hold charges no GSI partition.
    let delete = |pk: &str| {
        db.execute(
            "DeleteItem",
            json!({"TableName": "Orders", "Key": {"pk": {"S": pk}}}),
        )
    };
    delete("plain").unwrap();
    put(&db, "Orders", status_item("still", Some("PENDING"))).unwrap();
    // PENDING is spent now; a delete of a PENDING item is checked against the stored item's
    // partition and refused, one of a DONE item passes (and charges DONE).
    let error = delete("PENDING1").unwrap_err();
    assert_eq!(
        index_reason(&error, "throttlingReasons")["reason"],
        json!("IndexWriteKeyRangeThroughputExceeded")
    );
    delete("DONE0").unwrap();

    // A second later: a delete of a PENDING item puts its unit on PENDING.
    now.fetch_add(1_000, Ordering::SeqCst);
    fill(&db, "PENDING", "second", 999);
    delete("PENDING1").unwrap();
    assert!(put(&db, "Orders", status_item("x", Some("PENDING"))).is_err());

    // And so does an update removing the attribute (the entry leaves the GSI).
    now.fetch_add(1_000, Ordering::SeqCst);
    fill(&db, "PENDING", "third", 999);
    db.execute(
        "UpdateItem",
        json!({"TableName": "Orders", "Key": {"pk": {"S": "PENDING2"}},
               "UpdateExpression": "REMOVE #s", "ExpressionAttributeNames": {"#s": "status"}}),
    )
    .unwrap();
    assert!(put(&db, "Orders", status_item("x", Some("PENDING"))).is_err());
    // The batch delete of a stored PENDING item is sent back; of a DONE item, processed.
    let output = db
        .execute(
            "BatchWriteItem",
            json!({"RequestItems": {"Orders": [
                {"DeleteRequest": {"Key": {"pk": {"S": "PENDING3"}}}},
                {"DeleteRequest": {"Key": {"pk": {"S": "DONE1"}}}}
            ]}}),
        )
        .unwrap();
    assert_eq!(
        output["UnprocessedItems"],
        json!({"Orders": [{"DeleteRequest": {"Key": {"pk": {"S": "PENDING3"}}}}]})
    );
}

#[test]
fn gsi_reads_and_writes_have_separate_partition_buckets() {
    let (db, _now) = open(CapacityMode::Enforce);
    status_table(&db, "Orders", false);
    fill(&db, "PENDING", "PENDING", 1000);
    let query = || {
        db.execute(
            "Query",
            json!({"TableName": "Orders", "IndexName": "ByStatus",
                   "KeyConditionExpression": "#s = :s", "Limit": 1,
                   "ExpressionAttributeNames": {"#s": "status"},
                   "ExpressionAttributeValues": {":s": {"S": "PENDING"}}}),
        )
    };
    // The partition's writes are spent, not its reads: 3,000 RCU a second, half a unit per
    // eventually consistent page of one small entry.
    for _ in 0..6000 {
        query().unwrap();
    }
    let error = query().unwrap_err();
    assert_eq!(
        index_reason(&error, "throttlingReasons"),
        json!({"reason": "IndexReadKeyRangeThroughputExceeded", "resource": STATUS_INDEX_ARN})
    );
}

#[test]
fn writes_whose_condition_fails_draw_on_their_partition() {
    let (db, now) = open(CapacityMode::Enforce);
    provisioned_table(&db, "Guarded", 10, 40_000);
    put(&db, "Guarded", item("hot", 0)).unwrap();
    now.fetch_add(1_000, Ordering::SeqCst);
    // Each conditional put of the stored one-unit item fails and is charged 1 WCU (SPEC §5):
    // the partition's 1,000 WCU a second are spent by 1,000 of them, and the next is refused
    // though nothing was written.
    let failing = || {
        db.execute(
            "PutItem",
            json!({"TableName": "Guarded", "Item": item("hot", 0),
                   "ConditionExpression": "attribute_not_exists(pk)"}),
        )
        .unwrap_err()
    };
    for n in 0..PARTITION_WRITE_UNITS_MAX as u64 {
        let error = failing();
        assert_eq!(
            error.code,
            ErrorCode::ConditionalCheckFailedException,
            "at {n}"
        );
    }
    assert_eq!(
        failing().code,
        ErrorCode::ProvisionedThroughputExceededException
    );
    // The neighbouring partition, untouched, still takes writes.
    put(&db, "Guarded", item("cold", 0)).unwrap();
}
