//! BatchWriteItem and BatchGetItem through `Database::execute`: semantics across tables,
//! the validation texts of SPEC §3.7, that a rejected batch writes nothing, capacity and
//! collection metrics, and the 16 MB UnprocessedKeys split.

use crate::items_support;
use items_support::*;
use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::LimitOptions;
use shoal_tables::Options;

fn key(pk: &str, sk: &str) -> Value {
    json!({"pk": {"S": pk}, "sk": {"S": sk}})
}

fn put(item: Value) -> Value {
    json!({"PutRequest": {"Item": item}})
}

fn delete(key: Value) -> Value {
    json!({"DeleteRequest": {"Key": key}})
}

fn setup() -> shoal_tables::Database {
    let db = open(Options::default());
    create_indexed_table(&db);
    create_plain_table(&db);
    db
}

#[test]
fn writes_across_tables_with_capacity_and_metrics() {
    let db = setup();
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Plain", "Item": {"id": {"N": "9"}}}),
    );
    let response = ok(
        &db,
        "BatchWriteItem",
        json!({
            "RequestItems": {
                "Tbl": [
                    put(json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "l": {"S": "x"}, "g": {"S": "g"}, "gs": {"N": "1"}})),
                    put(json!({"pk": {"S": "a"}, "sk": {"S": "2"}, "l": {"S": "y"}})),
                    put(json!({"pk": {"S": "b"}, "sk": {"S": "1"}}))
                ],
                "Plain": [put(json!({"id": {"N": "1"}})), delete(json!({"id": {"N": "9"}}))]
            },
            "ReturnConsumedCapacity": "INDEXES",
            "ReturnItemCollectionMetrics": "SIZE"
        }),
    );
    assert_eq!(response["UnprocessedItems"], json!({}));
    let consumed = response["ConsumedCapacity"].as_array().unwrap();
    assert_eq!(consumed.len(), 2, "one entry per table");
    let plain = consumed.iter().find(|c| c["TableName"] == "Plain").unwrap();
    assert_eq!(plain["CapacityUnits"], json!(2.0));
    let tbl = consumed.iter().find(|c| c["TableName"] == "Tbl").unwrap();
    // Three base writes, two LSI entries, one GSI entry, each under 1 KB.
    assert_eq!(tbl["CapacityUnits"], json!(6.0));
    assert_eq!(tbl["Table"]["CapacityUnits"], json!(3.0));
    assert_eq!(
        tbl["LocalSecondaryIndexes"]["ByL"]["CapacityUnits"],
        json!(2.0)
    );
    assert_eq!(
        tbl["GlobalSecondaryIndexes"]["ByG"]["CapacityUnits"],
        json!(1.0)
    );
    // Metrics only for the LSI table, one per collection written.
    let metrics = &response["ItemCollectionMetrics"];
    assert!(metrics.get("Plain").is_none());
    let collections = metrics["Tbl"].as_array().unwrap();
    assert_eq!(collections.len(), 2);
    assert_eq!(
        collections[0]["ItemCollectionKey"],
        json!({"pk": {"S": "a"}})
    );
    assert_eq!(collections[0]["SizeEstimateRangeGB"], json!([0.0, 1.0]));

    assert!(get(&db, "Plain", json!({"id": {"N": "9"}})).is_none());
    assert!(get(&db, "Plain", json!({"id": {"N": "1"}})).is_some());
    assert!(get(&db, "Tbl", key("a", "2")).is_some());
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert_eq!(report.items, 4);
}

#[test]
fn any_invalid_request_rejects_the_whole_batch() {
    let db = setup();
    let good = put(json!({"pk": {"S": "ok"}, "sk": {"S": "1"}}));
    let cases = [
        (
            json!({"Tbl": [good.clone(), put(json!({"pk": {"S": "a"}, "sk": {"S": "1"}})), delete(key("a", "1"))]}),
            "Provided list of item keys contains duplicates",
        ),
        (
            json!({"Tbl": [good.clone(), put(json!({"pk": {"S": "a"}}))]}),
            "The provided key element does not match the schema",
        ),
        (
            json!({"Tbl": [good.clone(), put(json!({"pk": {"S": "a"}, "sk": {"N": "1"}}))]}),
            "The provided key element does not match the schema",
        ),
        (
            json!({"Tbl": [good.clone(), delete(json!({"pk": {"S": "a"}}))]}),
            "The provided key element does not match the schema",
        ),
        (
            json!({"Tbl": [good.clone(), put(json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "g": {"N": "1"}}))]}),
            "One or more parameter values were invalid: Type mismatch for Index Key g Expected: S Actual: N IndexName: ByG",
        ),
        (
            json!({"Tbl": [good.clone(), put(json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "x": {"S": "x".repeat(400 * 1024)}}))]}),
            "Item size has exceeded the maximum allowed size",
        ),
        (
            json!({"Tbl": [good.clone(), {"PutRequest": {}}]}),
            "1 validation error detected: Value null at 'requestItems.Tbl.member.2.member.putRequest.item' failed to satisfy constraint: Member must not be null",
        ),
        (
            json!({"Tbl": [good.clone(), {"PutRequest": {"Item": {"pk": {"S": "z"}, "sk": {"S": "z"}}}, "DeleteRequest": {"Key": key("z", "z")}}]}),
            "Supplied WriteRequest must contain exactly one of PutRequest or DeleteRequest",
        ),
        (
            json!({"Tbl": []}),
            "1 validation error detected: Value '{Tbl=[…]}' at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]",
        ),
    ];
    for (request_items, message) in cases {
        assert_eq!(
            invalid(
                &db,
                "BatchWriteItem",
                json!({"RequestItems": request_items})
            ),
            message
        );
    }
    let missing = err(
        &db,
        "BatchWriteItem",
        json!({"RequestItems": {"Tbl": [good.clone()], "Nope": [good]}}),
    );
    assert_eq!(missing.code, ErrorCode::ResourceNotFoundException);
    assert!(
        get(&db, "Tbl", key("ok", "1")).is_none(),
        "nothing of a rejected batch is written"
    );
}

#[test]
fn collection_cap_rejects_the_batch() {
    let db = open(Options {
        limits: LimitOptions {
            item_collection_size_limit_bytes: 1000,
        },
        ..Options::default()
    });
    create_indexed_table(&db);
    let big = |sk: &str| {
        put(
            json!({"pk": {"S": "a"}, "sk": {"S": sk}, "l": {"S": "x"}, "inc": {"S": "y".repeat(300)}}),
        )
    };
    let error = err(
        &db,
        "BatchWriteItem",
        json!({"RequestItems": {"Tbl": [big("1"), big("2")]}}),
    );
    assert_eq!(
        error.code,
        ErrorCode::ItemCollectionSizeLimitExceededException
    );
    assert!(get(&db, "Tbl", key("a", "1")).is_none());
    ok(
        &db,
        "BatchWriteItem",
        json!({"RequestItems": {"Tbl": [big("1")]}}),
    );
    assert!(db.check().unwrap().is_sound());
}

#[test]
fn gets_across_tables_with_projection_and_capacity() {
    let db = setup();
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "1"}, "big": {"S": "x".repeat(5000)}, "n": {"N": "1"}}}),
    );
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Plain", "Item": {"id": {"N": "1"}, "v": {"S": "one"}}}),
    );
    let response = ok(
        &db,
        "BatchGetItem",
        json!({
            "RequestItems": {
                "Tbl": {"Keys": [key("a", "1"), key("missing", "1")], "ConsistentRead": true,
                        "ProjectionExpression": "#n, pk", "ExpressionAttributeNames": {"#n": "n"}},
                "Plain": {"Keys": [{"id": {"N": "1"}}]}
            },
            "ReturnConsumedCapacity": "TOTAL"
        }),
    );
    assert_eq!(
        response["Responses"]["Tbl"],
        json!([{"pk": {"S": "a"}, "n": {"N": "1"}}])
    );
    assert_eq!(
        response["Responses"]["Plain"],
        json!([{"id": {"N": "1"}, "v": {"S": "one"}}])
    );
    assert_eq!(response["UnprocessedKeys"], json!({}));
    let consumed = response["ConsumedCapacity"].as_array().unwrap();
    let tbl = consumed.iter().find(|c| c["TableName"] == "Tbl").unwrap();
    // 5 KB item: 2 units strong; the missing item: 1.
    assert_eq!(tbl["CapacityUnits"], json!(3.0));
    let plain = consumed.iter().find(|c| c["TableName"] == "Plain").unwrap();
    assert_eq!(plain["CapacityUnits"], json!(0.5));
    assert!(tbl.get("Table").is_none(), "TOTAL has no arms");
}

#[test]
fn get_validation_texts() {
    let db = setup();
    let cases = [
        (json!({}), "The requestItems parameter is required for BatchGetItem"),
        (
            json!({"RequestItems": {"Tbl": {"Keys": [key("a", "1"), key("a", "1")]}}}),
            "Provided list of item keys contains duplicates",
        ),
        (
            json!({"RequestItems": {"Tbl": {"Keys": [{"pk": {"S": "a"}}]}}}),
            "The provided key element does not match the schema",
        ),
        (
            json!({"RequestItems": {"Tbl": {"Keys": [key("a", "1")], "ExpressionAttributeNames": {"#n": "n"}}}}),
            "ExpressionAttributeNames can only be specified when using expressions",
        ),
        (
            json!({"RequestItems": {"Tbl": {"Keys": [key("a", "1")], "ProjectionExpression": "a", "AttributesToGet": ["a"]}}}),
            "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}",
        ),
    ];
    for (request, message) in cases {
        assert_eq!(invalid(&db, "BatchGetItem", request), message);
    }
    let keys: Vec<Value> = (0..101).map(|i| key("a", &i.to_string())).collect();
    assert_eq!(
        invalid(&db, "BatchGetItem", json!({"RequestItems": {"Tbl": {"Keys": keys}}})),
        "1 validation error detected: Value at 'RequestItems.Tbl.member.Keys' failed to satisfy constraint: Member must have length less than or equal to 100"
    );
    let missing = err(
        &db,
        "BatchGetItem",
        json!({"RequestItems": {"Nope": {"Keys": [key("a", "1")]}}}),
    );
    assert_eq!(missing.code, ErrorCode::ResourceNotFoundException);
}

#[test]
fn responses_past_16_mb_leave_unprocessed_keys() {
    let db = setup();
    // 45 items of ~390 KB: about 17 MB in all.
    let payload = "x".repeat(390 * 1024);
    let mut keys = Vec::new();
    for i in 0..45 {
        let sk = format!("{i:02}");
        ok(
            &db,
            "PutItem",
            json!({"TableName": "Tbl", "Item": {"pk": {"S": "big"}, "sk": {"S": sk}, "p": {"S": payload}}}),
        );
        keys.push(key("big", &sk));
    }
    let response = ok(
        &db,
        "BatchGetItem",
        json!({"RequestItems": {"Tbl": {"Keys": keys, "ConsistentRead": true}}}),
    );
    let returned = response["Responses"]["Tbl"].as_array().unwrap().len();
    let unprocessed = &response["UnprocessedKeys"]["Tbl"];
    let left = unprocessed["Keys"].as_array().unwrap().len();
    assert!(returned > 0 && left > 0, "{returned} returned, {left} left");
    assert_eq!(returned + left, 45, "every key is either returned or left");
    assert_eq!(
        unprocessed["ConsistentRead"],
        json!(true),
        "read parameters kept"
    );
    let returned_bytes: usize = response["Responses"]["Tbl"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["p"]["S"].as_str().unwrap().len())
        .sum();
    assert!(returned_bytes <= 16 << 20);
}
