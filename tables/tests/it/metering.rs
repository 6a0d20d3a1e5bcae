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
