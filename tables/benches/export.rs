//! Export rate (issue 25: at least 100,000 items/s of 1 KB items on the 2-core machine):
//! loads N items of about 1 KB (`SHOAL_EXPORT_BENCH_ITEMS`, default 100,000) into a table on
//! disk, then measures `Database::export_table` (the parallel snapshot walk, DynamoDB JSON,
//! gzip, manifests) into a fresh directory each time; prints items/s.
//! Run: `cargo bench -p shoal-tables --bench export` (`SHOAL_EXPORT_BENCH_ITEMS=1000000` for 1M).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};
use shoal_tables::{Database, Durability, Options, StorageOptions};

const ITEMS_DEFAULT: u64 = 100_000;
const TABLE: &str = "Exported";

fn items() -> u64 {
    std::env::var("SHOAL_EXPORT_BENCH_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ITEMS_DEFAULT)
}

/// About 1 KB: the key, a few scalars and a 900-byte payload.
fn item(n: u64) -> Value {
    json!({
        "id": {"S": format!("item{n:010}")},
        "city": {"S": format!("city{}", n % 1000)},
        "age": {"N": (n % 90).to_string()},
        "active": {"BOOL": n.is_multiple_of(3)},
        "tags": {"SS": ["a", "b", format!("t{}", n % 50)]},
        "payload": {"S": format!("{n:0>900}")}
    })
}

fn load(db: &Database, items: u64) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": TABLE,
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .expect("create table");
    let mut n = 0;
    while n < items {
        let requests: Vec<Value> = (n..items.min(n + 25))
            .map(|i| json!({"PutRequest": {"Item": item(i)}}))
            .collect();
        n += requests.len() as u64;
        db.execute("BatchWriteItem", json!({"RequestItems": {TABLE: requests}}))
            .expect("load");
    }
}

fn export(c: &mut Criterion) {
    let items = items();
    let dir = tempfile::tempdir().expect("temporary directory");
    let options = Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        ..Options::default()
    };
    let db = Database::open(&dir.path().join("data"), options).expect("open");
    let started = Instant::now();
    load(&db, items);
    println!(
        "loaded {items} items in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let exports = dir.path().join("exports");
    std::fs::create_dir(&exports).expect("exports directory");
    let run = || {
        let out = tempfile::tempdir_in(&exports).expect("export directory");
        let started = Instant::now();
        let finished = db.export_table(TABLE, out.path(), |_| {}).expect("export");
        assert_eq!(finished.summary.item_count, items);
        started.elapsed()
    };
    let once = run();
    println!(
        "export of {items} items: {:.2} s, {:.0} items/s",
        once.as_secs_f64(),
        items as f64 / once.as_secs_f64()
    );

    let mut group = c.benchmark_group("export");
    group.throughput(Throughput::Elements(items));
    group.sample_size(10);
    group.bench_function(format!("export_table_{items}_items_1kb"), |b| {
        b.iter_custom(|iterations| (0..iterations).map(|_| run()).sum::<Duration>())
    });
    group.finish();
}

criterion_group!(benches, export);
criterion_main!(benches);
