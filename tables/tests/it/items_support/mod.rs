//! Helpers shared by the items_* integration tests: a database, tables, and JSON calls.

#![allow(dead_code)] // Each test file uses a different subset.

use serde_json::{json, Value};
use shoal_model::{ApiError, ErrorCode};
use shoal_tables::{Database, Options};

pub fn open(options: Options) -> Database {
    Database::open_in_memory({
        let mut options = options;
        options.storage.memtable_size_bytes = 1 << 20;
        options.storage.wal_segment_size_bytes = 1 << 20;
        options
    })
    .unwrap()
}

/// Runs an operation that must succeed.
pub fn ok(db: &Database, op: &str, request: Value) -> Value {
    match db.execute(op, request.clone()) {
        Ok(response) => response,
        Err(error) => panic!("{op} {request} failed: {error}"),
    }
}

/// Runs an operation that must fail; returns the error.
pub fn err(db: &Database, op: &str, request: Value) -> ApiError {
    match db.execute(op, request.clone()) {
        Ok(response) => panic!("{op} {request} succeeded: {response}"),
        Err(error) => error,
    }
}

/// Runs an operation that must fail with a ValidationException; returns its message.
pub fn invalid(db: &Database, op: &str, request: Value) -> String {
    let error = err(db, op, request);
    assert_eq!(error.code, ErrorCode::ValidationException, "{error}");
    error.message
}

/// Table `T`: pk (S) + sk (S); LSI `ByL` on l (S, INCLUDE inc); GSIs `ByG` on g (S) + gs (N)
/// (KEYS_ONLY) and `ByH` on h (B) (ALL).
pub fn create_indexed_table(db: &Database) {
    ok(
        db,
        "CreateTable",
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "l", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"},
                {"AttributeName": "gs", "AttributeType": "N"},
                {"AttributeName": "h", "AttributeType": "B"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "LocalSecondaryIndexes": [{
                "IndexName": "ByL",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "l", "KeyType": "RANGE"}
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["inc"]}
            }],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "ByG",
                    "KeySchema": [
                        {"AttributeName": "g", "KeyType": "HASH"},
                        {"AttributeName": "gs", "KeyType": "RANGE"}
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"}
                },
                {
                    "IndexName": "ByH",
                    "KeySchema": [{"AttributeName": "h", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"}
                }
            ],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
}

/// Table `Plain`: hash key `id` (N) only, no indexes.
pub fn create_plain_table(db: &Database) {
    ok(
        db,
        "CreateTable",
        json!({
            "TableName": "Plain",
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "N"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
}

/// The item stored under `key` in `table` (strongly consistent), or None.
pub fn get(db: &Database, table: &str, key: Value) -> Option<Value> {
    let response = ok(
        db,
        "GetItem",
        json!({"TableName": table, "Key": key, "ConsistentRead": true}),
    );
    response.get("Item").cloned()
}
