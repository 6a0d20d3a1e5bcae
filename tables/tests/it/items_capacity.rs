//! Capacity (SPEC §5) and item collections (SPEC §3.6) of single-item operations.

use crate::items_support;
use items_support::*;
use serde_json::{json, Value};
use shoal_model::{AttributeValue, ErrorCode};
use shoal_tables::core::collection::{read_record, CollectionRecord};
use shoal_tables::LimitOptions;
use shoal_tables::Options;

fn capacity_table(db: &shoal_tables::Database) {
    ok(
        db,
        "CreateTable",
        json!({
            "TableName": "Capacity",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "l", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "LocalSecondaryIndexes": [{
                "IndexName": "ByL",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "l", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }],
            "GlobalSecondaryIndexes": [{
                "IndexName": "ByG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["inc"]}
            }],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
}

fn key(sk: &str) -> Value {
    json!({"pk": {"S": "a"}, "sk": {"S": sk}})
}

fn update(db: &shoal_tables::Database, sk: &str, expression: &str, values: Option<Value>) -> Value {
    let mut request = json!({"TableName": "Capacity", "Key": key(sk), "UpdateExpression": expression,
        "ReturnConsumedCapacity": "INDEXES"});
    if let Some(values) = values {
        request["ExpressionAttributeValues"] = values;
    }
    ok(db, "UpdateItem", request)["ConsumedCapacity"].clone()
}

#[test]
fn index_write_charges_per_before_after_case() {
    let db = open(Options::default());
    capacity_table(&db);
    // New item defining both index keys: one write each.
    let created = ok(
        &db,
        "PutItem",
        json!({"TableName": "Capacity", "Item": {"pk": {"S": "a"}, "sk": {"S": "1"}, "l": {"S": "x"}, "g": {"S": "y"}},
            "ReturnConsumedCapacity": "INDEXES"}),
    );
    assert_eq!(
        created["ConsumedCapacity"],
        json!({"TableName": "Capacity", "CapacityUnits": 3.0,
            "Table": {"CapacityUnits": 1.0},
            "LocalSecondaryIndexes": {"ByL": {"CapacityUnits": 1.0}},
            "GlobalSecondaryIndexes": {"ByG": {"CapacityUnits": 1.0}}})
    );
    // GSI key A -> B: delete + put.
    let moved = update(&db, "1", "SET g = :g", Some(json!({":g": {"S": "z"}})));
    assert_eq!(moved["CapacityUnits"], json!(3.0));
    assert_eq!(
        moved["GlobalSecondaryIndexes"]["ByG"]["CapacityUnits"],
        json!(2.0)
    );
    assert!(
        moved.get("LocalSecondaryIndexes").is_none(),
        "unchanged LSI entry: no arm"
    );
    // LSI key removed: one write.
    let removed = update(&db, "1", "REMOVE l", None);
    assert_eq!(removed["CapacityUnits"], json!(2.0));
    assert_eq!(
        removed["LocalSecondaryIndexes"]["ByL"]["CapacityUnits"],
        json!(1.0)
    );
    // An unprojected attribute: no index write, whatever its size.
    let quiet = update(
        &db,
        "1",
        "SET extra = :o",
        Some(json!({":o": {"S": "v".repeat(3000)}})),
    );
    assert_eq!(
        quiet,
        json!({"TableName": "Capacity", "CapacityUnits": 3.0,
        "Table": {"CapacityUnits": 3.0}})
    );
    // Same GSI key, projected attribute changed: one write of max(old, new).
    let projected = update(
        &db,
        "1",
        "SET inc = :i",
        Some(json!({":i": {"S": "i".repeat(1500)}})),
    );
    assert_eq!(
        projected["GlobalSecondaryIndexes"]["ByG"]["CapacityUnits"],
        json!(2.0)
    );
    // Identical projected entry (a set in another order): no arm.
    update(
        &db,
        "1",
        "SET inc = :i",
        Some(json!({":i": {"SS": ["p", "q"]}})),
    );
    let same = update(
        &db,
        "1",
        "SET inc = :i",
        Some(json!({":i": {"SS": ["q", "p"]}})),
    );
    assert!(same.get("GlobalSecondaryIndexes").is_none(), "{same}");
    // Item in neither index, TOTAL only.
    let plain = ok(
        &db,
        "PutItem",
        json!({"TableName": "Capacity", "Item": {"pk": {"S": "a"}, "sk": {"S": "2"}}, "ReturnConsumedCapacity": "TOTAL"}),
    );
    assert_eq!(
        plain["ConsumedCapacity"],
        json!({"TableName": "Capacity", "CapacityUnits": 1.0})
    );
    // Delete of an item present in the GSI only (it is 3 KB: 3 table units, the 1-KB-ish entry 1).
    let deleted = ok(
        &db,
        "DeleteItem",
        json!({"TableName": "Capacity", "Key": key("1"), "ReturnConsumedCapacity": "INDEXES"}),
    );
    assert_eq!(
        deleted["ConsumedCapacity"]["Table"]["CapacityUnits"],
        json!(3.0)
    );
    assert_eq!(
        deleted["ConsumedCapacity"]["GlobalSecondaryIndexes"]["ByG"]["CapacityUnits"],
        json!(1.0)
    );
    assert!(deleted["ConsumedCapacity"]
        .get("LocalSecondaryIndexes")
        .is_none());
    // Missing item: 1.
    let missing = ok(
        &db,
        "DeleteItem",
        json!({"TableName": "Capacity", "Key": key("missing"), "ReturnConsumedCapacity": "TOTAL"}),
    );
    assert_eq!(missing["ConsumedCapacity"]["CapacityUnits"], json!(1.0));
    // No ConsumedCapacity unless asked.
    assert_eq!(
        ok(
            &db,
            "DeleteItem",
            json!({"TableName": "Capacity", "Key": key("missing")})
        ),
        json!({})
    );
}

#[test]
fn item_and_read_rounding() {
    let db = open(Options::default());
    capacity_table(&db);
    // pk (2 + 1) + sk (2 + 1) + data (4 + 2,500): the scenario's 2,510-byte item.
    let data = "d".repeat(2510 - 3 - 3 - 4);
    let put = ok(
        &db,
        "PutItem",
        json!({"TableName": "Capacity", "Item": {"pk": {"S": "a"}, "sk": {"S": "3"}, "data": {"S": data}},
            "ReturnConsumedCapacity": "TOTAL"}),
    );
    assert_eq!(put["ConsumedCapacity"]["CapacityUnits"], json!(3.0));
    let read = |consistent: bool, sk: &str, mode: &str| {
        ok(
            &db,
            "GetItem",
            json!({"TableName": "Capacity", "Key": key(sk), "ConsistentRead": consistent, "ReturnConsumedCapacity": mode}),
        )["ConsumedCapacity"]
            .clone()
    };
    assert_eq!(read(true, "3", "TOTAL")["CapacityUnits"], json!(1.0));
    assert_eq!(read(false, "3", "TOTAL")["CapacityUnits"], json!(0.5));
    assert_eq!(
        read(true, "missing", "TOTAL")["CapacityUnits"],
        json!(1.0),
        "missing item: the minimum"
    );
    let indexes = read(false, "missing", "INDEXES");
    assert_eq!(indexes["Table"]["CapacityUnits"], json!(0.5));
    assert!(
        indexes.get("GlobalSecondaryIndexes").is_none()
            && indexes.get("LocalSecondaryIndexes").is_none()
    );
    // 4,097 bytes: two read units.
    let big = "b".repeat(4097 - 3 - 3 - 4);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Capacity", "Item": {"pk": {"S": "a"}, "sk": {"S": "4"}, "data": {"S": big}}}),
    );
    assert_eq!(read(true, "4", "TOTAL")["CapacityUnits"], json!(2.0));
    assert_eq!(read(false, "4", "TOTAL")["CapacityUnits"], json!(1.0));
}

fn capped_table(db: &shoal_tables::Database) {
    ok(
        db,
        "CreateTable",
        json!({
            "TableName": "Capped",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "v", "AttributeType": "S"}
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "LocalSecondaryIndexes": [{
                "IndexName": "ByV",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "v", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"}
            }],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
}

fn record(db: &shoal_tables::Database, pk: &str) -> CollectionRecord {
    let table = db.table("Capped").unwrap();
    read_record(db.lsm(), &table, &AttributeValue::S(pk.into())).unwrap()
}

fn item(sk: &str, v: Option<&str>, payload_bytes: usize) -> Value {
    let mut item =
        json!({"pk": {"S": "A"}, "sk": {"S": sk}, "payload": {"S": "p".repeat(payload_bytes)}});
    if let Some(v) = v {
        item["v"] = json!({"S": v});
    }
    item
}

#[test]
fn collections_are_sized_exactly_and_capped() {
    let db = open(Options {
        limits: LimitOptions {
            item_collection_size_limit_bytes: 65_536,
        },
        ..Options::default()
    });
    capped_table(&db);
    create_plain_table(&db);

    let first = item("1", Some("a"), 20_000);
    let response = ok(
        &db,
        "PutItem",
        json!({"TableName": "Capped", "Item": first, "ReturnItemCollectionMetrics": "SIZE"}),
    );
    assert_eq!(
        response["ItemCollectionMetrics"],
        json!({"ItemCollectionKey": {"pk": {"S": "A"}}, "SizeEstimateRangeGB": [0.0, 1.0]})
    );
    // Item: pk 3 + sk 3 + v 2 + payload 7 + 20,000 = 20,015 bytes; its ALL entry the same.
    let one = 20_015 + 100;
    assert_eq!(
        record(&db, "A"),
        CollectionRecord {
            size_bytes: 2 * one,
            item_count: 1
        }
    );

    // An overwrite that keeps the size leaves the record alone (it is not even read unless
    // the metrics are asked for) and still reports the metrics when they are.
    for metrics in ["SIZE", "NONE"] {
        let response = ok(
            &db,
            "PutItem",
            json!({"TableName": "Capped", "Item": item("1", Some("z"), 20_000),
                "ReturnItemCollectionMetrics": metrics}),
        );
        let expected = (metrics == "SIZE").then(
            || json!({"ItemCollectionKey": {"pk": {"S": "A"}}, "SizeEstimateRangeGB": [0.0, 1.0]}),
        );
        assert_eq!(response.get("ItemCollectionMetrics"), expected.as_ref());
        assert_eq!(
            record(&db, "A"),
            CollectionRecord {
                size_bytes: 2 * one,
                item_count: 1
            }
        );
    }

    // Growing past 64 KiB is refused and writes nothing.
    let error = err(
        &db,
        "PutItem",
        json!({"TableName": "Capped", "Item": item("2", Some("b"), 20_000)}),
    );
    assert_eq!(
        error.code,
        ErrorCode::ItemCollectionSizeLimitExceededException
    );
    assert_eq!(error.message, "Collection size exceeded.");
    assert!(get(&db, "Capped", json!({"pk": {"S": "A"}, "sk": {"S": "2"}})).is_none());
    assert_eq!(record(&db, "A").item_count, 1);

    // Shrinking is always allowed; then there is room again.
    ok(
        &db,
        "UpdateItem",
        json!({"TableName": "Capped", "Key": {"pk": {"S": "A"}, "sk": {"S": "1"}}, "UpdateExpression": "REMOVE payload"}),
    );
    assert_eq!(record(&db, "A").size_bytes, 2 * (3 + 3 + 2 + 100));
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Capped", "Item": item("2", Some("b"), 20_000)}),
    );
    // An unindexed item counts its base size only.
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Capped", "Item": item("3", None, 20_000)}),
    );
    let expected = 2 * 108 + 2 * one + (20_015 - 2 + 100);
    assert_eq!(
        record(&db, "A"),
        CollectionRecord {
            size_bytes: expected,
            item_count: 3
        }
    );

    // Deleting everything removes the record.
    for sk in ["1", "2", "3"] {
        let response = ok(
            &db,
            "DeleteItem",
            json!({"TableName": "Capped", "Key": {"pk": {"S": "A"}, "sk": {"S": sk}}, "ReturnItemCollectionMetrics": "SIZE"}),
        );
        assert_eq!(
            response["ItemCollectionMetrics"]["SizeEstimateRangeGB"],
            json!([0.0, 1.0])
        );
    }
    assert_eq!(record(&db, "A"), CollectionRecord::default());
    let table = db.table("Capped").unwrap();
    let raw = db
        .lsm()
        .get(
            table.tree,
            &shoal_tables::core::keys::collection_key(&AttributeValue::S("A".into())).unwrap(),
            None,
        )
        .unwrap();
    assert!(raw.is_none(), "an empty collection has no record");

    // No metrics and no cap without an LSI.
    for id in 0..3 {
        let response = ok(
            &db,
            "PutItem",
            json!({"TableName": "Plain", "Item": {"id": {"N": "1"}, "n": {"N": id.to_string()}, "p": {"S": "p".repeat(30_000)}},
                "ReturnItemCollectionMetrics": "SIZE"}),
        );
        assert!(response.get("ItemCollectionMetrics").is_none());
    }
}

#[test]
fn concurrent_updates_of_one_item_lose_nothing() {
    let db = std::sync::Arc::new(open(Options::default()));
    capped_table(&db);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let db = std::sync::Arc::clone(&db);
            std::thread::spawn(move || {
                for _ in 0..25 {
                    ok(
                        &db,
                        "UpdateItem",
                        json!({"TableName": "Capped", "Key": {"pk": {"S": "A"}, "sk": {"S": "1"}},
                            "UpdateExpression": "ADD n :one SET v = :v", "ExpressionAttributeValues": {":one": {"N": "1"}, ":v": {"S": "x"}}}),
                    );
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let stored = get(&db, "Capped", json!({"pk": {"S": "A"}, "sk": {"S": "1"}})).unwrap();
    assert_eq!(stored["n"], json!({"N": "100"}));
    let size = 3 + 3 + 2 + 1 + 2 + 100; // pk, sk, v "x", n 100 (2 bytes), overhead
    assert_eq!(
        record(&db, "A"),
        CollectionRecord {
            size_bytes: 2 * size,
            item_count: 1
        }
    );
}

/// SPEC §3.6: TOTAL is `TableName` and `CapacityUnits` only, reads and writes alike, and
/// INDEXES adds `Table` (even without indexes) and the arms touched, each `CapacityUnits`
/// only: no `ReadCapacityUnits` / `WriteCapacityUnits` members.
#[test]
fn consumed_capacity_has_only_the_members_dynamodb_returns() {
    let db = open(Options::default());
    capacity_table(&db);
    let item = json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "l": {"S": "x"}});
    let put = ok(
        &db,
        "PutItem",
        json!({"TableName": "Capacity", "Item": item, "ReturnConsumedCapacity": "TOTAL"}),
    );
    assert_eq!(
        put["ConsumedCapacity"],
        json!({"TableName": "Capacity", "CapacityUnits": 2.0})
    );
    for (operation, request) in [
        ("GetItem", json!({"TableName": "Capacity", "Key": key("1")})),
        (
            "Query",
            json!({"TableName": "Capacity", "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": "a"}}}),
        ),
        ("Scan", json!({"TableName": "Capacity"})),
    ] {
        let mut total = request.clone();
        total["ReturnConsumedCapacity"] = json!("TOTAL");
        assert_eq!(
            ok(&db, operation, total)["ConsumedCapacity"],
            json!({"TableName": "Capacity", "CapacityUnits": 0.5}),
            "{operation}"
        );
        let mut indexes = request;
        indexes["ReturnConsumedCapacity"] = json!("INDEXES");
        assert_eq!(
            ok(&db, operation, indexes)["ConsumedCapacity"],
            json!({"TableName": "Capacity", "CapacityUnits": 0.5, "Table": {"CapacityUnits": 0.5}}),
            "{operation}"
        );
    }
    let batch = ok(
        &db,
        "BatchGetItem",
        json!({"RequestItems": {"Capacity": {"Keys": [key("1")]}}, "ReturnConsumedCapacity": "TOTAL"}),
    );
    assert_eq!(
        batch["ConsumedCapacity"],
        json!([{"TableName": "Capacity", "CapacityUnits": 0.5}])
    );
}
