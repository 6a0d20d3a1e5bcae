//! Helpers shared by the Query/Scan integration tests: a database, JSON calls through
//! `Database::execute`, and the tables the tests read.

#![allow(dead_code)]

use serde_json::{json, Value};
use shoal_tables::{Database, Options, StorageOptions};

/// An in-memory database with a small memtable, so tests also read from SSTables.
pub fn database() -> Database {
    Database::open_in_memory(Options {
        storage: StorageOptions {
            memtable_size_bytes: 16 << 10,
            wal_segment_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .unwrap()
}

/// Runs `op` and returns its response, failing the test on an error.
pub fn call(db: &Database, op: &str, request: Value) -> Value {
    db.execute(op, request.clone())
        .unwrap_or_else(|e| panic!("{op} {request} failed: {e}"))
}

/// Runs `op`, which must fail, and returns (error code, message).
pub fn fail(db: &Database, op: &str, request: Value) -> (String, String) {
    match db.execute(op, request.clone()) {
        Ok(response) => panic!("{op} {request} succeeded: {response}"),
        Err(e) => (e.code.name().to_string(), e.message),
    }
}

/// The message of a ValidationException from `op`.
pub fn validation(db: &Database, op: &str, request: Value) -> String {
    let (code, message) = fail(db, op, request);
    assert_eq!(code, "ValidationException", "{message}");
    message
}

pub fn s(v: &str) -> Value {
    json!({ "S": v })
}

pub fn n(v: i64) -> Value {
    json!({ "N": v.to_string() })
}

/// Table `Tbl`: pk (S) + sk (S); LSI `ByL` on l (N) projecting `inc`; GSI `ByG` on g (S) + r
/// (N) KEYS_ONLY; GSI `ByGAll` on g (S) projecting ALL.
pub fn create_indexed_table(db: &Database) {
    call(
        db,
        "CreateTable",
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "l", "AttributeType": "N"},
                {"AttributeName": "g", "AttributeType": "S"},
                {"AttributeName": "r", "AttributeType": "N"}
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
                        {"AttributeName": "r", "KeyType": "RANGE"}
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"}
                },
                {
                    "IndexName": "ByGAll",
                    "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"}
                }
            ],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
}

/// Table `Hsh`: hash key `id` (S) only, no indexes.
pub fn create_hash_table(db: &Database) {
    call(
        db,
        "CreateTable",
        json!({
            "TableName": "Hsh",
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
}

pub fn put(db: &Database, table: &str, item: Value) {
    call(db, "PutItem", json!({"TableName": table, "Item": item}));
}

/// Every page of `op` from `request` on, following LastEvaluatedKey: (items, pages).
pub fn all_pages(db: &Database, op: &str, mut request: Value) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    for page in 1..=1000 {
        let response = call(db, op, request.clone());
        items.extend(response["Items"].as_array().cloned().unwrap_or_default());
        match response.get("LastEvaluatedKey") {
            Some(key) => request["ExclusiveStartKey"] = key.clone(),
            None => return (items, page),
        }
    }
    panic!("pagination did not end: {request}");
}

/// The string values of attribute `name` in `items`.
pub fn strings(items: &[Value], name: &str) -> Vec<String> {
    items
        .iter()
        .map(|item| item[name]["S"].as_str().unwrap_or("?").to_string())
        .collect()
}
