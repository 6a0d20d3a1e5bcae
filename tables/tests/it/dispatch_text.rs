//! `Database::execute_json_text` (a server's path: the typed input straight from JSON text)
//! answers exactly as `Database::execute` (a parsed body) does: the same responses, the same
//! errors, the same metering, for well-formed bodies and for every kind of bad one.

use serde_json::{json, Value};
use shoal_tables::{Database, Options};

fn open() -> Database {
    let db = Database::open_in_memory(Options::default()).unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    db
}

/// (operation, body text) pairs: good requests, every ReturnConsumedCapacity form, and bodies
/// that are wrong in shape, type, value or JSON.
const CASES: &[(&str, &str)] = &[
    (
        "PutItem",
        r#"{"TableName":"Tbl","Item":{"k":{"S":"a"},"n":{"N":"1"}}}"#,
    ),
    (
        "PutItem",
        r#"{"TableName":"Tbl","Item":{"k":{"S":"b"}},"ReturnConsumedCapacity":"TOTAL"}"#,
    ),
    (
        "PutItem",
        r#"{"TableName":"Tbl","Item":{"k":{"S":"c"}},"ReturnConsumedCapacity":"NONE"}"#,
    ),
    (
        "PutItem",
        r#"{"TableName":"Tbl","Item":{"k":{"S":"d"}},"ReturnConsumedCapacity":null}"#,
    ),
    (
        "PutItem",
        r#"{"TableName":"Tbl","Item":{"k":{"S":"e"}},"ReturnConsumedCapacity":"BOGUS"}"#,
    ),
    (
        "PutItem",
        r#"{"TableName":"Tbl","Item":{"k":{"S":"f"}},"ReturnConsumedCapacity":5}"#,
    ),
    (
        "GetItem",
        r#"{"TableName":"Tbl","Key":{"k":{"S":"a"}},"ReturnConsumedCapacity":"INDEXES"}"#,
    ),
    (
        "GetItem",
        r#"  {"TableName":"Tbl","Key":{"k":{"S":"a"}}}  "#,
    ),
    ("GetItem", r#"{"TableName":"Tbl","Key":{"k":{"S":"zz"}}}"#),
    // Duplicate members: the parsed path keeps the last; the typed path refuses, then agrees.
    (
        "GetItem",
        r#"{"TableName":"X","TableName":"Tbl","Key":{"k":{"S":"a"}}}"#,
    ),
    (
        "GetItem",
        r#"{"TableName":"Tbl","Key":{"k":{"S":"a"}},"Unknown":[1,{"x":null}]}"#,
    ),
    ("GetItem", r#"{"TableName":"Tbl"}"#),
    ("GetItem", r#"{"TableName":7,"Key":{"k":{"S":"a"}}}"#),
    ("GetItem", r#"{"TableName":"Tbl","Key":{"k":{"S":1}}}"#),
    (
        "GetItem",
        r#"{"TableName":"Tbl","Key":{"k":{"S":"a","N":"1"}}}"#,
    ),
    (
        "GetItem",
        r#"{"TableName":"Missing","Key":{"k":{"S":"a"}}}"#,
    ),
    ("GetItem", r#"["Tbl",{"k":{"S":"a"}}]"#),
    ("GetItem", r#""Tbl""#),
    ("GetItem", r#"{"TableName":"Tbl","Key":"#),
    (
        "UpdateItem",
        r#"{"TableName":"Tbl","Key":{"k":{"S":"a"}},"UpdateExpression":"SET n = n + :one","ExpressionAttributeValues":{":one":{"N":"1"}},"ReturnValues":"ALL_NEW"}"#,
    ),
    (
        "DeleteItem",
        r#"{"TableName":"Tbl","Key":{"k":{"S":"b"}},"ReturnValues":"ALL_OLD"}"#,
    ),
    (
        "Query",
        r#"{"TableName":"Tbl","KeyConditionExpression":"k = :k","ExpressionAttributeValues":{":k":{"S":"a"}}}"#,
    ),
    (
        "Query",
        r#"{"TableName":"Tbl","KeyConditionExpression":"k = :k","Limit":1.5}"#,
    ),
    ("Scan", r#"{"TableName":"Tbl","Limit":0}"#),
    (
        "Scan",
        r#"{"TableName":"Tbl","ReturnConsumedCapacity":"TOTAL"}"#,
    ),
    (
        "BatchGetItem",
        r#"{"RequestItems":{"Tbl":{"Keys":[{"k":{"S":"a"}},{"k":{"S":"c"}}]}}}"#,
    ),
    (
        "BatchWriteItem",
        r#"{"RequestItems":{"Tbl":[{"PutRequest":{"Item":{"k":{"S":"g"}}}}]}}"#,
    ),
    (
        "TransactGetItems",
        r#"{"TransactItems":[{"Get":{"TableName":"Tbl","Key":{"k":{"S":"a"}}}}]}"#,
    ),
    (
        "TransactWriteItems",
        r#"{"TransactItems":[{"Put":{"TableName":"Tbl","Item":{"k":{"S":"h"}}}}]}"#,
    ),
    ("DescribeTable", r#"{"TableName":"Missing"}"#),
    ("ListTables", r#"{"Limit":"x"}"#),
    ("NoSuchOperation", r#"{}"#),
];

#[test]
fn text_and_parsed_bodies_get_the_same_answers_and_the_same_metering() {
    let (parsed_db, text_db) = (open(), open());
    for (operation, text) in CASES {
        let by_text = text_db
            .execute_json_text(operation, text.as_bytes())
            .map(|body| serde_json::from_slice::<Value>(&body).unwrap());
        let by_value = match serde_json::from_str::<Value>(text) {
            Ok(body) => parsed_db.execute(operation, body),
            // What a parsed path reports for text that is not JSON.
            Err(_) => Err(shoal_model::ApiError::malformed_json()),
        };
        assert_eq!(by_text, by_value, "{operation} {text}");
    }
    assert!(!text_db.consumed_capacity().is_empty());
    assert_eq!(text_db.consumed_capacity(), parsed_db.consumed_capacity());
}
