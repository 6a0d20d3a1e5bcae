//! What the table-level simulated-crash tests share: the indexed table they write.

#![allow(dead_code)] // Each test file uses a different subset.

use shoal_tables::StorageOptions;

/// Database options for table-level crash tests: tiny memtables and segments, so flushes,
/// compactions and WAL rotation happen within a few hundred writes.
pub fn table_options() -> shoal_tables::Options {
    shoal_tables::Options {
        storage: StorageOptions {
            durability: shoal_tables::Durability::Sync,
            memtable_size_bytes: 3 << 10,
            wal_segment_size_bytes: 16 << 10,
            ..StorageOptions::default()
        },
        ..shoal_tables::Options::default()
    }
}

/// Table `Crash`: pk + sk (S); LSIs ByA (a, S, KEYS_ONLY) and ByB (b, N, INCLUDE x); GSIs ByG
/// (g S + b N, ALL) and ByGOnly (g, KEYS_ONLY).
pub fn create_indexed_table(db: &shoal_tables::Database) {
    use serde_json::{json, Value};
    let index = |name: &str, hash: &str, range: Option<&str>, projection: Value| {
        let mut key = vec![json!({"AttributeName": hash, "KeyType": "HASH"})];
        if let Some(range) = range {
            key.push(json!({"AttributeName": range, "KeyType": "RANGE"}));
        }
        json!({"IndexName": name, "KeySchema": key, "Projection": projection})
    };
    let request = json!({
        "TableName": "Crash",
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "a", "AttributeType": "S"},
            {"AttributeName": "b", "AttributeType": "N"},
            {"AttributeName": "g", "AttributeType": "S"}
        ],
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"}
        ],
        "LocalSecondaryIndexes": [
            index("ByA", "pk", Some("a"), json!({"ProjectionType": "KEYS_ONLY"})),
            index("ByB", "pk", Some("b"), json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": ["x"]}))
        ],
        "GlobalSecondaryIndexes": [
            index("ByG", "g", Some("b"), json!({"ProjectionType": "ALL"})),
            index("ByGOnly", "g", None, json!({"ProjectionType": "KEYS_ONLY"}))
        ],
        "BillingMode": "PAY_PER_REQUEST"
    });
    db.execute("CreateTable", request).expect("create table");
}

/// The key of item (`pk`, `sk`) of table `Crash`.
pub fn crash_key(pk: u32, sk: u32) -> serde_json::Value {
    serde_json::json!({"pk": {"S": format!("p{pk}")}, "sk": {"S": format!("s{sk}")}})
}

/// A random item of table `Crash` with key (`pk`, `sk`): each index attribute present or
/// absent at random, so sparse index membership churns, and a payload of random length.
pub fn random_crash_item(rng: &mut rand::rngs::StdRng, pk: u32, sk: u32) -> serde_json::Value {
    use rand::Rng;
    use serde_json::json;
    let mut item = crash_key(pk, sk).as_object().cloned().unwrap_or_default();
    if rng.random_bool(0.7) {
        item.insert(
            "a".into(),
            json!({"S": format!("a{}", rng.random_range(0..5))}),
        );
    }
    if rng.random_bool(0.7) {
        item.insert(
            "b".into(),
            json!({"N": rng.random_range(0..50).to_string()}),
        );
    }
    if rng.random_bool(0.6) {
        item.insert(
            "g".into(),
            json!({"S": format!("g{}", rng.random_range(0..3))}),
        );
    }
    item.insert(
        "x".into(),
        json!({"S": "x".repeat(rng.random_range(0..200))}),
    );
    serde_json::Value::Object(item)
}
