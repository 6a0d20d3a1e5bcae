//! BatchWriteItem of 25 items and TransactWriteItems of 10 items on a table with 2 LSIs and
//! 2 GSIs, ~1 KB items, every item indexed by all four indexes (issue 6). Items spread over
//! 50 partitions; once all 5000 exist every write replaces one with new index attributes, so
//! index entries move.
//! Run: `cargo bench -p shoal-tables --bench batch_txn`.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};
use shoal_tables::{Database, Durability, Options, StorageOptions};

const PARTITIONS: u64 = 50;
/// Distinct items: after the first 5000 writes every write replaces an item.
const ITEMS: u64 = 5000;

fn open(durability: Durability) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let options = Options {
        storage: StorageOptions {
            durability,
            ..StorageOptions::default()
        },
        ..Options::default()
    };
    let db = Database::open(Path::new(dir.path()), options).expect("open");
    let index = |name: &str, hash: &str, range: &str| {
        json!({"IndexName": name, "KeySchema": [
            {"AttributeName": hash, "KeyType": "HASH"}, {"AttributeName": range, "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"}})
    };
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Bench",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "l1", "AttributeType": "S"},
                {"AttributeName": "l2", "AttributeType": "N"},
                {"AttributeName": "g1", "AttributeType": "S"},
                {"AttributeName": "g2", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "LocalSecondaryIndexes": [index("ByL1", "pk", "l1"), index("ByL2", "pk", "l2")],
            "GlobalSecondaryIndexes": [index("ByG1", "g1", "sk"), index("ByG2", "g2", "l2")],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .expect("create table");
    (dir, db)
}

/// A ~1 KB item, its index attributes derived from `version` so rewrites move entries.
fn item(n: u64, version: u64) -> Value {
    json!({
        "pk": {"S": format!("p{}", n % PARTITIONS)},
        "sk": {"S": format!("s{n}")},
        "l1": {"S": format!("l{}", version % 97)},
        "l2": {"N": (version % 89).to_string()},
        "g1": {"S": format!("g{}", version % 13)},
        "g2": {"S": format!("h{}", n % 7)},
        "payload": {"S": "x".repeat(900)}
    })
}

fn bench(c: &mut Criterion) {
    for (label, durability) in [("none", Durability::None), ("sync", Durability::Sync)] {
        let (_dir, db) = open(durability);
        let mut group = c.benchmark_group(format!("batch_txn/{label}"));

        let mut version = 0u64;
        group.throughput(Throughput::Elements(25));
        group.bench_function("batch_write_25", |b| {
            b.iter(|| {
                version += 1;
                let requests: Vec<Value> = (0..25)
                    .map(|i| json!({"PutRequest": {"Item": item((version * 25 + i) % ITEMS, version)}}))
                    .collect();
                db.execute(
                    "BatchWriteItem",
                    json!({"RequestItems": {"Bench": requests}}),
                )
                .expect("batch write")
            })
        });

        let mut version = 0u64;
        group.throughput(Throughput::Elements(10));
        group.bench_function("transact_write_10", |b| {
            b.iter(|| {
                version += 1;
                let actions: Vec<Value> = (0..10)
                    .map(|i| json!({"Put": {"TableName": "Bench", "Item": item((version * 10 + i) % ITEMS, version)}}))
                    .collect();
                db.execute("TransactWriteItems", json!({"TransactItems": actions}))
                    .expect("transaction")
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
