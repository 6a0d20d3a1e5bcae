//! RestoreTableToPointInTime of a table of `SHOAL_PITR_BENCH_ITEMS` 1 KB items (default
//! 100,000) to a second before a tenth of them were overwritten: the restore copies the
//! table tree as it was then into new SSTables, so its time follows the table's size.
//! Each iteration restores into a new table and deletes it again; only the restore is timed.
//! Prints the load time first.
//! Run: `cargo bench -p shoal-tables --bench pitr` (`SHOAL_PITR_BENCH_ITEMS=1000000`).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use shoal_tables::{Database, Durability, Options, StorageOptions};

const ITEMS_DEFAULT: u64 = 100_000;
const ITEM_BYTES: usize = 1000;
const BATCH: u64 = 25;

fn put_range(db: &Database, range: std::ops::Range<u64>, payload: &str) {
    let mut n = range.start;
    while n < range.end {
        let requests: Vec<_> = (n..(n + BATCH).min(range.end))
            .map(|i| {
                json!({"PutRequest": {"Item": {
                    "pk": {"S": format!("item{i:010}")},
                    "payload": {"S": payload},
                }}})
            })
            .collect();
        n += requests.len() as u64;
        db.execute(
            "BatchWriteItem",
            json!({"RequestItems": {"Bench": requests}}),
        )
        .expect("load");
    }
}

fn restore(c: &mut Criterion) {
    let items: u64 = std::env::var("SHOAL_PITR_BENCH_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ITEMS_DEFAULT);
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Database::open(
        dir.path(),
        Options {
            storage: StorageOptions {
                durability: Durability::None,
                ..StorageOptions::default()
            },
            ..Options::default()
        },
    )
    .expect("open");
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Bench",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        }),
    )
    .expect("create table");
    db.execute(
        "UpdateContinuousBackups",
        json!({"TableName": "Bench",
               "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true}}),
    )
    .expect("enable point-in-time recovery");
    let started = Instant::now();
    put_range(&db, 0..items, &"x".repeat(ITEM_BYTES - 40));
    // Past a clock entry (one a second) after the load.
    std::thread::sleep(Duration::from_millis(1500));
    let restore_time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    put_range(&db, 0..items / 10, &"y".repeat(ITEM_BYTES - 40));
    db.lsm().flush_all().expect("flush");
    db.lsm().compact_until_idle().expect("compact");
    println!(
        "table: {items} items, a tenth overwritten, loaded in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The restored table is the table at that second: the overwritten items hold "x".
    db.execute(
        "RestoreTableToPointInTime",
        json!({"SourceTableName": "Bench", "TargetTableName": "Restored",
               "RestoreDateTime": restore_time}),
    )
    .expect("restore");
    let item = db
        .execute(
            "GetItem",
            json!({"TableName": "Restored", "Key": {"pk": {"S": format!("item{:010}", 0)}}}),
        )
        .expect("read the restored table");
    assert!(item["Item"]["payload"]["S"]
        .as_str()
        .is_some_and(|p| p.starts_with('x')));
    db.execute("DeleteTable", json!({"TableName": "Restored"}))
        .expect("delete the restored table");

    let mut group = c.benchmark_group("pitr");
    group.sample_size(10);
    group.bench_function(format!("restore_{items}_items_to_a_past_second"), |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let started = Instant::now();
                db.execute(
                    "RestoreTableToPointInTime",
                    json!({"SourceTableName": "Bench", "TargetTableName": "Restored",
                           "RestoreDateTime": restore_time}),
                )
                .expect("restore");
                timed += started.elapsed();
                db.execute("DeleteTable", json!({"TableName": "Restored"}))
                    .expect("delete the restored table");
            }
            timed
        })
    });
    group.finish();
}

criterion_group!(benches, restore);
criterion_main!(benches);
