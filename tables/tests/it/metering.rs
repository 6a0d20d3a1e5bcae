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

/// The meter keeps each index's arm: by DynamoDB's rules (SPEC §5) a put of an item under
/// 1 KB that a GSI (ALL) and an LSI (ALL) both hold costs 1 WCU on the table and 1 on each
/// index (3 in all); a Query of the GSI reading 3 such items (under 4 KB together) costs
/// 0.5 RCU (eventually consistent), all on the GSI's arm. The answers keep the shape asked
/// for: nothing, TOTAL without arms, INDEXES with them.
#[test]
fn index_arms_are_metered_and_answers_keep_the_shape_asked_for() {
    let db = Database::open_in_memory(Options::default()).unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [
                {"AttributeName": "p", "AttributeType": "S"},
                {"AttributeName": "s", "AttributeType": "S"},
                {"AttributeName": "l", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}, {"AttributeName": "s", "KeyType": "RANGE"}],
            "LocalSecondaryIndexes": [{"IndexName": "Lsi", "KeySchema": [
                {"AttributeName": "p", "KeyType": "HASH"}, {"AttributeName": "l", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"}}],
            "GlobalSecondaryIndexes": [{"IndexName": "Gsi", "KeySchema": [
                {"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"}}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    let item = |s: &str| json!({"p": {"S": "p"}, "s": {"S": s}, "l": {"S": "l"}, "g": {"S": "g"}});
    let unasked = db
        .execute("PutItem", json!({"TableName": "Tbl", "Item": item("1")}))
        .unwrap();
    assert!(unasked.get("ConsumedCapacity").is_none(), "{unasked}");
    let total = db
        .execute(
            "PutItem",
            json!({"TableName": "Tbl", "Item": item("2"), "ReturnConsumedCapacity": "TOTAL"}),
        )
        .unwrap();
    assert_eq!(
        total["ConsumedCapacity"],
        json!({"TableName": "Tbl", "CapacityUnits": 3.0}),
        "TOTAL keeps its shape"
    );
    let indexes = db
        .execute(
            "PutItem",
            json!({"TableName": "Tbl", "Item": item("3"), "ReturnConsumedCapacity": "INDEXES"}),
        )
        .unwrap();
    assert_eq!(
        indexes["ConsumedCapacity"]["GlobalSecondaryIndexes"]["Gsi"]["CapacityUnits"],
        json!(1.0)
    );
    assert_eq!(
        indexes["ConsumedCapacity"]["LocalSecondaryIndexes"]["Lsi"]["CapacityUnits"],
        json!(1.0)
    );
    let query = db
        .execute(
            "Query",
            json!({"TableName": "Tbl", "IndexName": "Gsi", "KeyConditionExpression": "g = :g",
                   "ExpressionAttributeValues": {":g": {"S": "g"}}, "ReturnConsumedCapacity": "TOTAL"}),
        )
        .unwrap();
    assert_eq!(query["Count"], json!(3));
    assert_eq!(
        query["ConsumedCapacity"],
        json!({"TableName": "Tbl", "CapacityUnits": 0.5})
    );
    let per_index: Vec<(String, String, f64, f64)> = db
        .consumed_capacity_per_index()
        .into_iter()
        .map(|(table, index, totals)| (table, index, totals.read_units, totals.write_units))
        .collect();
    assert_eq!(
        per_index,
        [
            ("Tbl".to_string(), "Gsi".to_string(), 0.5, 3.0),
            ("Tbl".to_string(), "Lsi".to_string(), 0.0, 3.0)
        ]
    );
    let (table, totals) = &db.consumed_capacity()[0];
    assert_eq!(
        (table.as_str(), totals.read_units, totals.write_units),
        ("Tbl", 0.5, 9.0),
        "the table's total counts every arm"
    );
}

/// What a recorder is told a call cost and returned (`execute_json_text_charged`), against
/// DynamoDB's rules worked by hand: an item's size is the UTF-8 bytes of its attribute names
/// plus its values' (SPEC §5), after the projection the client asked for; an eventually
/// consistent read of up to 4 KB is 0.5 units, a write of up to 1 KB 1 unit. A write
/// returns nothing to size, and the answer is the one the client gets.
#[test]
fn a_recorded_call_is_told_its_units_and_the_sizes_it_returned() {
    use shoal_tables::capacity::metering::Returned;
    let db = Database::open_in_memory(Options::default()).unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Sized",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    let charged = |operation: &str, body: serde_json::Value| {
        let (answer, charge) =
            db.execute_json_text_charged(None, operation, body.to_string().as_bytes());
        (answer.unwrap(), charge)
    };
    // pk "p" (2+1), sk "a" (2+1), note "hello" (4+5): 15 bytes.
    for sk in ["a", "b"] {
        let (answer, charge) = charged(
            "PutItem",
            json!({"TableName": "Sized", "Item": {
                "pk": {"S": "p"}, "sk": {"S": sk}, "note": {"S": "hello"}}}),
        );
        assert_eq!(answer, b"{}");
        assert_eq!((charge.units, charge.returned), (Some(1.0), None));
    }
    let (_, charge) = charged(
        "GetItem",
        json!({"TableName": "Sized", "Key": {"pk": {"S": "p"}, "sk": {"S": "a"}}}),
    );
    assert_eq!(charge.units, Some(0.5));
    assert_eq!(
        charge.returned,
        Some(Returned {
            items: 1,
            bytes: 15
        })
    );
    // Projected to `note`: 9 bytes an item, as the client receives them.
    let (_, charge) = charged(
        "Query",
        json!({"TableName": "Sized", "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": "p"}}, "ProjectionExpression": "note"}),
    );
    assert_eq!(charge.units, Some(0.5));
    assert_eq!(
        charge.returned,
        Some(Returned {
            items: 2,
            bytes: 18
        })
    );
    // A GetItem of a missing item returned nothing, and was still charged.
    let (_, charge) = charged(
        "GetItem",
        json!({"TableName": "Sized", "Key": {"pk": {"S": "p"}, "sk": {"S": "zz"}}}),
    );
    assert_eq!(charge.units, Some(0.5));
    assert_eq!(charge.returned, Some(Returned { items: 0, bytes: 0 }));
}
