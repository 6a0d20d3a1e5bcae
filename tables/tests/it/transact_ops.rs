//! TransactWriteItems and TransactGetItems through `Database::execute`: all-or-nothing
//! across tables, cancellation reasons in request order, the top-level ValidationException
//! vs cancellation ValidationError split of SPEC §3.9, ClientRequestToken idempotency and
//! transactional capacity.

use crate::items_support;
use items_support::*;
use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::LimitOptions;
use shoal_tables::Options;

fn key(pk: &str, sk: &str) -> Value {
    json!({"pk": {"S": pk}, "sk": {"S": sk}})
}

fn setup() -> shoal_tables::Database {
    let db = open(Options::default());
    create_indexed_table(&db);
    create_plain_table(&db);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "1"}, "n": {"N": "5"}, "g": {"S": "old"}, "gs": {"N": "1"}}}),
    );
    db
}

fn reasons(error: &shoal_model::ApiError) -> Vec<Value> {
    error.extra.as_ref().unwrap()["CancellationReasons"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn commits_every_action_across_tables() {
    let db = setup();
    let response = ok(
        &db,
        "TransactWriteItems",
        json!({
            "TransactItems": [
                {"Update": {"TableName": "Tbl", "Key": key("a", "1"),
                            "UpdateExpression": "SET n = n + :one, g = :g",
                            "ConditionExpression": "n = :five",
                            "ExpressionAttributeValues": {":one": {"N": "1"}, ":five": {"N": "5"}, ":g": {"S": "new"}}}},
                {"Put": {"TableName": "Plain", "Item": {"id": {"N": "1"}}, "ConditionExpression": "attribute_not_exists(id)"}},
                {"Put": {"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "2"}, "l": {"S": "x"}}}},
                {"ConditionCheck": {"TableName": "Plain", "Key": {"id": {"N": "7"}}, "ConditionExpression": "attribute_not_exists(id)"}}
            ],
            "ReturnConsumedCapacity": "INDEXES",
            "ReturnItemCollectionMetrics": "SIZE"
        }),
    );
    let stored = get(&db, "Tbl", key("a", "1")).unwrap();
    assert_eq!(stored["n"], json!({"N": "6"}));
    assert_eq!(stored["g"], json!({"S": "new"}));
    assert!(get(&db, "Plain", json!({"id": {"N": "1"}})).is_some());
    assert!(get(&db, "Tbl", key("a", "2")).is_some());

    let consumed = response["ConsumedCapacity"].as_array().unwrap();
    let tbl = consumed.iter().find(|c| c["TableName"] == "Tbl").unwrap();
    // Table arm doubled (2 writes × 2); GSI key moved: 2 writes, not doubled; LSI: 1.
    assert_eq!(tbl["Table"]["CapacityUnits"], json!(4.0));
    assert_eq!(
        tbl["GlobalSecondaryIndexes"]["ByG"]["CapacityUnits"],
        json!(2.0)
    );
    assert_eq!(
        tbl["LocalSecondaryIndexes"]["ByL"]["CapacityUnits"],
        json!(1.0)
    );
    assert_eq!(tbl["CapacityUnits"], json!(7.0));
    let plain = consumed.iter().find(|c| c["TableName"] == "Plain").unwrap();
    assert_eq!(plain["CapacityUnits"], json!(4.0), "put + condition check");
    assert_eq!(
        response["ItemCollectionMetrics"]["Tbl"],
        json!([{"ItemCollectionKey": {"pk": {"S": "a"}}, "SizeEstimateRangeGB": [0.0, 1.0]}])
    );
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}

#[test]
fn a_failed_condition_cancels_everything_with_reasons_in_order() {
    let db = setup();
    let error = err(
        &db,
        "TransactWriteItems",
        json!({
            "TransactItems": [
                {"Put": {"TableName": "Plain", "Item": {"id": {"N": "1"}}}},
                {"Delete": {"TableName": "Tbl", "Key": key("a", "1"), "ConditionExpression": "n > :big",
                            "ExpressionAttributeValues": {":big": {"N": "100"}},
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
                {"ConditionCheck": {"TableName": "Tbl", "Key": key("zz", "1"), "ConditionExpression": "attribute_exists(pk)"}},
                {"Update": {"TableName": "Tbl", "Key": key("b", "1"), "UpdateExpression": "SET gs = :s",
                            "ExpressionAttributeValues": {":s": {"S": "not a number"}}}}
            ]
        }),
    );
    assert_eq!(error.code, ErrorCode::TransactionCanceledException);
    assert_eq!(
        error.message,
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed, ConditionalCheckFailed, ValidationError]"
    );
    let reasons = reasons(&error);
    assert_eq!(reasons[0], json!({"Code": "None"}));
    assert_eq!(reasons[1]["Code"], "ConditionalCheckFailed");
    assert_eq!(reasons[1]["Message"], "The conditional request failed");
    assert_eq!(reasons[1]["Item"]["n"], json!({"N": "5"}));
    assert!(reasons[2].get("Item").is_none(), "no item, none asked");
    assert_eq!(
        reasons[3],
        json!({"Code": "ValidationError", "Message": "One or more parameter values were invalid: Type mismatch for Index Key gs Expected: N Actual: S IndexName: ByG"})
    );
    assert!(get(&db, "Plain", json!({"id": {"N": "1"}})).is_none());
    assert!(get(&db, "Tbl", key("a", "1")).is_some());
    assert!(get(&db, "Tbl", key("b", "1")).is_none());
}

#[test]
fn request_knowable_faults_are_plain_validation_errors() {
    let db = setup();
    let tx = |actions: Value| invalid(&db, "TransactWriteItems", json!({"TransactItems": actions}));
    assert_eq!(
        tx(json!([
            {"Put": {"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "1"}}}},
            {"Delete": {"TableName": "Tbl", "Key": key("a", "1")}}
        ])),
        "Transaction request cannot include multiple operations on one item"
    );
    assert_eq!(
        tx(
            json!([{"Put": {"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "9"}, "x": {"S": "x".repeat(400 * 1024)}}}}])
        ),
        "Item size has exceeded the maximum allowed size"
    );
    assert_eq!(
        tx(json!([{"Put": {"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "9"}, "g": {"S": ""}}}}])),
        "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty string value. IndexName: ByG, IndexKey: g"
    );
    assert_eq!(
        tx(json!([{"Update": {"TableName": "Tbl", "Key": key("a", "1"), "UpdateExpression": "SET sk = :v",
                              "ExpressionAttributeValues": {":v": {"S": "2"}}}}])),
        "One or more parameter values were invalid: Cannot update attribute sk. This attribute is part of the key"
    );
    assert_eq!(
        tx(json!([{"Delete": {"TableName": "Tbl", "Key": {"pk": {"S": "a"}}}}])),
        "The provided key element does not match the schema"
    );
    assert_eq!(
        tx(
            json!([{"ConditionCheck": {"TableName": "Tbl", "Key": key("a", "1"), "ConditionExpression": "attribute_exists(pk)",
                                      "ExpressionAttributeValues": {":unused": {"N": "1"}}}}])
        ),
        "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}"
    );
    assert_eq!(
        tx(
            json!([{"Put": {"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "9"}}}, "Delete": {}}])
        ),
        "TransactItems can only contain one of Check, Put, Update or Delete"
    );
    assert_eq!(
        tx(json!([])),
        "1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1"
    );
    let missing = err(
        &db,
        "TransactWriteItems",
        json!({"TransactItems": [{"Delete": {"TableName": "Nope", "Key": key("a", "1")}}]}),
    );
    assert_eq!(missing.code, ErrorCode::ResourceNotFoundException);
    // A wrong-typed index key in a Put depends on nothing stored, yet DynamoDB reports it
    // as a cancellation (SPEC §3.9).
    let typed = err(
        &db,
        "TransactWriteItems",
        json!({"TransactItems": [{"Put": {"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "9"}, "g": {"N": "1"}}}}]}),
    );
    assert_eq!(typed.code, ErrorCode::TransactionCanceledException);
    assert_eq!(reasons(&typed)[0]["Code"], "ValidationError");
    // Updating an item past 400 KB is a cancellation too.
    let big = "x".repeat(300 * 1024);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Plain", "Item": {"id": {"N": "2"}, "a": {"S": big}}}),
    );
    let grown = err(
        &db,
        "TransactWriteItems",
        json!({"TransactItems": [{"Update": {"TableName": "Plain", "Key": {"id": {"N": "2"}},
               "UpdateExpression": "SET b = :b", "ExpressionAttributeValues": {":b": {"S": big}}}}]}),
    );
    assert_eq!(
        reasons(&grown)[0],
        json!({"Code": "ValidationError", "Message": "Item size to update has exceeded the maximum allowed size"})
    );
}

#[test]
fn a_wrong_typed_key_attribute_is_the_cancellation_reason_of_its_action() {
    let db = setup();
    let ok_put = json!({"Put": {"TableName": "Plain", "Item": {"id": {"N": "8"}}}});
    let mismatch = "The provided key element does not match the schema";
    for (action, message) in [
        (
            json!({"Put": {"TableName": "Tbl", "Item": {"pk": {"N": "1"}, "sk": {"S": "1"}}}}),
            "One or more parameter values were invalid: Type mismatch for key pk expected: S actual: N",
        ),
        (
            json!({"Put": {"TableName": "Plain", "Item": {"id": {"S": "1"}}}}),
            "One or more parameter values were invalid: Type mismatch for key id expected: N actual: S",
        ),
        (
            json!({"Update": {"TableName": "Tbl", "Key": {"pk": {"S": "a"}, "sk": {"N": "1"}},
                "UpdateExpression": "SET x = :v", "ExpressionAttributeValues": {":v": {"N": "1"}}}}),
            mismatch,
        ),
        (
            json!({"Delete": {"TableName": "Plain", "Key": {"id": {"S": "1"}}}}),
            mismatch,
        ),
        (
            json!({"ConditionCheck": {"TableName": "Plain", "Key": {"id": {"B": "AQ=="}},
                "ConditionExpression": "attribute_exists(id)"}}),
            mismatch,
        ),
    ] {
        let error = err(
            &db,
            "TransactWriteItems",
            json!({"TransactItems": [ok_put, action]}),
        );
        assert_eq!(error.code, ErrorCode::TransactionCanceledException, "{action}");
        assert_eq!(
            reasons(&error),
            vec![
                json!({"Code": "None"}),
                json!({"Code": "ValidationError", "Message": message})
            ],
            "{action}"
        );
    }
    assert!(
        get(&db, "Plain", json!({"id": {"N": "8"}})).is_none(),
        "nothing was written"
    );
    // The other actions are still decided: a failed condition is reported beside it.
    let error = err(
        &db,
        "TransactWriteItems",
        json!({"TransactItems": [
            {"Delete": {"TableName": "Plain", "Key": {"id": {"S": "1"}}}},
            {"ConditionCheck": {"TableName": "Tbl", "Key": key("a", "1"),
                "ConditionExpression": "attribute_not_exists(pk)"}}
        ]}),
    );
    assert_eq!(
        reasons(&error),
        vec![
            json!({"Code": "ValidationError", "Message": mismatch}),
            json!({"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"})
        ]
    );
    // Missing or extra key attributes, and a request-level fault elsewhere, stay top-level.
    let tx = |actions: Value| invalid(&db, "TransactWriteItems", json!({"TransactItems": actions}));
    assert_eq!(
        tx(json!([{"Delete": {"TableName": "Plain", "Key": {"id": {"N": "1"}, "x": {"N": "1"}}}}])),
        mismatch
    );
    assert_eq!(
        tx(json!([{"Put": {"TableName": "Plain", "Item": {"x": {"N": "1"}}}}])),
        "One or more parameter values were invalid: Missing the key id in the item"
    );
    assert_eq!(
        tx(json!([
            {"Delete": {"TableName": "Plain", "Key": {"id": {"S": "1"}}}},
            {"Delete": {"TableName": "Tbl", "Key": {"pk": {"S": "a"}}}}
        ])),
        mismatch
    );
}

#[test]
fn write_transactions_are_capped_at_4_mb_in_all() {
    let db = setup();
    let big = "x".repeat(400_000);
    let puts = |count: u64| -> Vec<Value> {
        (0..count)
            .map(|id| json!({"Put": {"TableName": "Plain", "Item": {"id": {"N": id.to_string()}, "a": {"S": big}}}}))
            .collect()
    };
    // Eleven items of 400 KB: each within its own limit, 4.4 MB together.
    assert_eq!(
        invalid(
            &db,
            "TransactWriteItems",
            json!({"TransactItems": puts(11)})
        ),
        "Transaction request cannot be larger than 4 MB"
    );
    assert!(get(&db, "Plain", json!({"id": {"N": "0"}})).is_none());
    // Updates count the data they carry in their ExpressionAttributeValues.
    let updates: Vec<Value> = (0..11)
        .map(|id| {
            json!({"Update": {"TableName": "Plain", "Key": {"id": {"N": id.to_string()}},
                              "UpdateExpression": "SET a = :a", "ExpressionAttributeValues": {":a": {"S": big}}}})
        })
        .collect();
    assert_eq!(
        invalid(&db, "TransactWriteItems", json!({"TransactItems": updates})),
        "Transaction request cannot be larger than 4 MB"
    );
    assert!(get(&db, "Plain", json!({"id": {"N": "0"}})).is_none());
    // Ten (4.0 MB) fit.
    ok(
        &db,
        "TransactWriteItems",
        json!({"TransactItems": puts(10)}),
    );
    assert!(get(&db, "Plain", json!({"id": {"N": "9"}})).is_some());
}

#[test]
fn collection_cap_is_a_cancellation_reason() {
    let db = open(Options {
        limits: LimitOptions {
            item_collection_size_limit_bytes: 1000,
        },
        ..Options::default()
    });
    create_indexed_table(&db);
    create_plain_table(&db);
    let big = |sk: &str| json!({"Put": {"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": sk}, "l": {"S": "x"}, "inc": {"S": "y".repeat(300)}}}});
    let error = err(
        &db,
        "TransactWriteItems",
        json!({"TransactItems": [{"Put": {"TableName": "Plain", "Item": {"id": {"N": "1"}}}}, big("1"), big("2")]}),
    );
    assert_eq!(
        error.message,
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ItemCollectionSizeLimitExceeded, ItemCollectionSizeLimitExceeded]"
    );
    assert_eq!(reasons(&error)[1]["Message"], "Collection size exceeded.");
    assert!(get(&db, "Plain", json!({"id": {"N": "1"}})).is_none());
}

#[test]
fn client_request_tokens_are_idempotent() {
    let db = setup();
    let request = json!({
        "TransactItems": [{"Update": {"TableName": "Tbl", "Key": key("a", "1"),
                                      "UpdateExpression": "SET n = n + :one",
                                      "ExpressionAttributeValues": {":one": {"N": "1"}}}}],
        "ClientRequestToken": "token-1"
    });
    ok(&db, "TransactWriteItems", request.clone());
    ok(&db, "TransactWriteItems", request.clone());
    assert_eq!(
        get(&db, "Tbl", key("a", "1")).unwrap()["n"],
        json!({"N": "6"}),
        "applied once"
    );
    let mut different = request.clone();
    different["TransactItems"][0]["Update"]["ExpressionAttributeValues"][":one"] =
        json!({"N": "2"});
    let mismatch = err(&db, "TransactWriteItems", different);
    assert_eq!(
        mismatch.code,
        ErrorCode::IdempotentParameterMismatchException
    );
    // A cancelled transaction does not claim its token.
    let failing = json!({
        "TransactItems": [{"ConditionCheck": {"TableName": "Tbl", "Key": key("a", "1"), "ConditionExpression": "attribute_not_exists(pk)"}}],
        "ClientRequestToken": "token-2"
    });
    err(&db, "TransactWriteItems", failing.clone());
    assert_eq!(
        err(&db, "TransactWriteItems", failing).code,
        ErrorCode::TransactionCanceledException
    );
}

#[test]
fn transact_get_reads_aligned_responses() {
    let db = setup();
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Plain", "Item": {"id": {"N": "1"}, "big": {"S": "x".repeat(5000)}}}),
    );
    let response = ok(
        &db,
        "TransactGetItems",
        json!({
            "TransactItems": [
                {"Get": {"TableName": "Tbl", "Key": key("a", "1"), "ProjectionExpression": "n"}},
                {"Get": {"TableName": "Tbl", "Key": key("missing", "1")}},
                {"Get": {"TableName": "Plain", "Key": {"id": {"N": "1"}}}}
            ],
            "ReturnConsumedCapacity": "TOTAL"
        }),
    );
    let responses = response["Responses"].as_array().unwrap();
    assert_eq!(responses[0], json!({"Item": {"n": {"N": "5"}}}));
    assert_eq!(responses[1], json!({}));
    assert_eq!(responses[2]["Item"]["id"], json!({"N": "1"}));
    let consumed = response["ConsumedCapacity"].as_array().unwrap();
    let plain = consumed.iter().find(|c| c["TableName"] == "Plain").unwrap();
    assert_eq!(plain["CapacityUnits"], json!(4.0), "5 KB: 2 blocks × 2");
    let tbl = consumed.iter().find(|c| c["TableName"] == "Tbl").unwrap();
    assert_eq!(tbl["CapacityUnits"], json!(4.0), "two items, 2 each");

    let error = err(
        &db,
        "TransactGetItems",
        json!({"TransactItems": [{"Get": {"TableName": "Tbl", "Key": key("a", "1")}}, {"Get": {"TableName": "Tbl", "Key": {}}}]}),
    );
    assert_eq!(error.code, ErrorCode::TransactionCanceledException);
    assert_eq!(
        reasons(&error),
        vec![
            json!({"Code": "None"}),
            json!({"Code": "ValidationError", "Message": "The provided key element does not match the schema"})
        ]
    );
    assert_eq!(
        invalid(
            &db,
            "TransactGetItems",
            json!({"TransactItems": [{"Get": {"TableName": "Tbl", "Key": key("a", "1")}}, {"Get": {"TableName": "Tbl", "Key": key("a", "1")}}]})
        ),
        "Transaction request cannot include multiple operations on one item"
    );
}
