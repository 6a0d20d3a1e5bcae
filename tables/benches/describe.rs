//! DescribeTable at scale: its cost must not grow with the table (every SDK waiter and GUI
//! polls it). Loads N items (`SHOAL_DESCRIBE_ITEMS`, default 1,000,000) into a table with an
//! LSI and a GSI, then times DescribeTable on it and on an empty table beside it, and after
//! a reopen (so the statistics come from SSTables, not memtables).
//! Run: `cargo bench -p shoal-tables --bench describe`.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use shoal_tables::{Database, Durability, Options, StorageOptions};

const ITEMS_DEFAULT: u64 = 1_000_000;
/// Items per BatchWriteItem: DynamoDB's maximum.
const BATCH_ITEMS: u64 = 25;

fn create(db: &Database, name: &str) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": name,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "at", "AttributeType": "N"},
                {"AttributeName": "city", "AttributeType": "S"}
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                          {"AttributeName": "sk", "KeyType": "RANGE"}],
            "LocalSecondaryIndexes": [{"IndexName": "ByAt",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                              {"AttributeName": "at", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}}],
            "GlobalSecondaryIndexes": [{"IndexName": "ByCity",
                "KeySchema": [{"AttributeName": "city", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .expect("create table");
}

fn item(n: u64) -> Value {
    json!({"PutRequest": {"Item": {
        "pk": {"S": format!("user{:06}", n / 10)},
        "sk": {"N": (n % 10).to_string()},
        "at": {"N": n.to_string()},
        "city": {"S": format!("city{}", n % 1000)},
        "payload": {"S": "x".repeat(60)}
    }}})
}

fn item_count(db: &Database, name: &str) -> u64 {
    let described = db
        .execute("DescribeTable", json!({"TableName": name}))
        .expect("describe");
    described["Table"]["ItemCount"].as_u64().unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let items: u64 = std::env::var("SHOAL_DESCRIBE_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ITEMS_DEFAULT);
    let dir = tempfile::tempdir().expect("temporary directory");
    let options = Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        ..Options::default()
    };
    {
        let db = Database::open(dir.path(), options.clone()).expect("open");
        create(&db, "Big");
        create(&db, "Empty");
        let started = Instant::now();
        let mut n = 0;
        while n < items {
            let requests: Vec<Value> = (n..(n + BATCH_ITEMS).min(items)).map(item).collect();
            n += requests.len() as u64;
            let response = db
                .execute("BatchWriteItem", json!({"RequestItems": {"Big": requests}}))
                .expect("load");
            assert!(
                response["UnprocessedItems"]
                    .as_object()
                    .is_none_or(|o| o.is_empty()),
                "Shoal never leaves items unprocessed"
            );
        }
        println!(
            "loaded {items} items in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        assert_eq!(item_count(&db, "Big"), items);
        let mut group = c.benchmark_group("describe_table");
        group.measurement_time(Duration::from_secs(5));
        group.bench_function(format!("{items}_items"), |b| {
            b.iter(|| item_count(&db, "Big"))
        });
        group.bench_function("empty", |b| b.iter(|| item_count(&db, "Empty")));
        group.finish();
    }
    let db = Database::open(dir.path(), options).expect("reopen");
    db.lsm().flush_all().expect("flush");
    assert_eq!(item_count(&db, "Big"), items);
    let mut group = c.benchmark_group("describe_table_after_reopen");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function(format!("{items}_items"), |b| {
        b.iter(|| item_count(&db, "Big"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
