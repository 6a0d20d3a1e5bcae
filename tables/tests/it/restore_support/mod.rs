//! What the backup, restore and point-in-time tests share: the indexed table they restore,
//! and turning point-in-time recovery on.

#![allow(dead_code)] // Each test file uses a different subset.

use serde_json::{json, Value};
use shoal_tables::Database;

/// Table `name`: pk S, sk N, an LSI `byL` on `l` and a GSI `byG` on `g`, both projecting
/// everything, on demand.
pub fn create_indexed_source(db: &Database, name: &str) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": name,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "l", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"},
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "LocalSecondaryIndexes": [{
                "IndexName": "byL",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "l", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }],
            "GlobalSecondaryIndexes": [{
                "IndexName": "byG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }],
            "BillingMode": "PAY_PER_REQUEST",
        }),
    )
    .unwrap_or_else(|e| panic!("CreateTable {name}: {e}"));
}

/// Turns point-in-time recovery of table `name` on; the answer.
pub fn enable_pitr(db: &Database, name: &str) -> Value {
    db.execute(
        "UpdateContinuousBackups",
        json!({"TableName": name,
               "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true}}),
    )
    .unwrap_or_else(|e| panic!("UpdateContinuousBackups {name}: {e}"))
}
