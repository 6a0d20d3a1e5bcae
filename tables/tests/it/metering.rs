//! Consumed capacity is metered per table for every data-plane request, and stays out of
//! responses that did not ask for it.

use serde_json::json;
use shoal_tables::{Database, Options, StorageOptions};

#[test]
fn every_request_is_metered_and_responses_only_carry_what_was_asked() {
    let db = Database::open_in_memory(Options {
        storage: StorageOptions {
            memtable_size_bytes: 1 << 20,
            wal_segment_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Meter",
            "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    assert!(
        db.consumed_capacity().is_empty(),
        "control plane is not metered"
    );

    let put = db
        .execute(
            "PutItem",
            json!({"TableName": "Meter", "Item": {"k": {"S": "a"}}}),
        )
        .unwrap();
    assert!(
        put.get("ConsumedCapacity").is_none(),
        "not asked for: {put}"
    );
    let asked = db
        .execute(
            "PutItem",
            json!({"TableName": "Meter", "Item": {"k": {"S": "b"}}, "ReturnConsumedCapacity": "TOTAL"}),
        )
        .unwrap();
    assert_eq!(asked["ConsumedCapacity"]["CapacityUnits"], json!(1.0));
    let query = db
        .execute(
            "Query",
            json!({"TableName": "Meter", "KeyConditionExpression": "k = :k",
                   "ExpressionAttributeValues": {":k": {"S": "a"}}, "ReturnConsumedCapacity": "NONE"}),
        )
        .unwrap();
    assert!(
        query.get("ConsumedCapacity").is_none(),
        "NONE asked: {query}"
    );

    let totals = db.consumed_capacity();
    assert_eq!(totals.len(), 1);
    let (table, units) = &totals[0];
    assert_eq!(table, "Meter");
    assert_eq!(units.write_units, 2.0);
    assert_eq!(
        units.read_units, 0.5,
        "an eventually consistent query page costs 0.5"
    );
}

#[test]
fn writes_whose_condition_fails_are_metered_as_dynamodb_charges_them() {
    let db = Database::open_in_memory(Options::default()).unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Charged",
            "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    // A stored item of `k` (1 + 1 bytes) and `body` (4 + 2,000): 2,006 bytes, 2 WCU to write.
    let body = "x".repeat(2000);
    let item = json!({"k": {"S": "a"}, "body": {"S": body}});
    db.execute("PutItem", json!({"TableName": "Charged", "Item": item}))
        .unwrap();
    let written = |db: &Database| db.consumed_capacity()[0].1.write_units;
    assert_eq!(written(&db), 2.0);
    // SPEC §5, by hand: a put whose condition fails on a stored item is charged by the item
    // it would have written (the same 2,006 bytes: 2 WCU); one on a missing item, 1 WCU.
    let exists = json!({"TableName": "Charged", "Item": item,
                        "ConditionExpression": "attribute_not_exists(k)"});
    let error = db.execute("PutItem", exists).unwrap_err();
    assert_eq!(
        error.code,
        shoal_model::ErrorCode::ConditionalCheckFailedException
    );
    assert_eq!(written(&db), 4.0);
    let missing = json!({"TableName": "Charged", "Item": {"k": {"S": "b"}},
                         "ConditionExpression": "attribute_exists(k)"});
    db.execute("PutItem", missing).unwrap_err();
    assert_eq!(written(&db), 5.0);
    // An update is charged by the item it would have left: the stored 2,006 bytes with a
    // 3,000-byte `more` added (4 + 3,000) is 5,010 bytes, 5 WCU.
    let update = json!({"TableName": "Charged", "Key": {"k": {"S": "a"}},
        "UpdateExpression": "SET more = :more", "ConditionExpression": "attribute_not_exists(k)",
        "ExpressionAttributeValues": {":more": {"S": "y".repeat(3000)}}});
    db.execute("UpdateItem", update).unwrap_err();
    assert_eq!(written(&db), 10.0);
    // A delete, by the stored item: 2 WCU.
    let delete = json!({"TableName": "Charged", "Key": {"k": {"S": "a"}},
                        "ConditionExpression": "attribute_not_exists(k)"});
    db.execute("DeleteItem", delete).unwrap_err();
    assert_eq!(written(&db), 12.0);
    // The neighbouring case that must not change: a request refused before it reads an
    // item (a validation error) is charged nothing.
    let invalid = json!({"TableName": "Charged", "Item": {"k": {"S": "a"}},
                         "ConditionExpression": "attribute_not_exists("});
    assert_eq!(
        db.execute("PutItem", invalid).unwrap_err().code,
        shoal_model::ErrorCode::ValidationException
    );
    assert_eq!(written(&db), 12.0);
}
