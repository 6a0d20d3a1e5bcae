//! CreateBackup of a table of `SHOAL_BACKUP_BENCH_MIB` MiB (default 256) of 1 KB items
//! (issue 25: a backup links SSTables, so its time follows the number of files, not the
//! bytes). Each iteration writes one item (so the memtable has something to flush, as a
//! live table's has), backs up and deletes the backup again; only the CreateBackup is
//! timed. Prints the table's size first.
//! Run: `cargo bench -p shoal-tables --bench backup` (`SHOAL_BACKUP_BENCH_MIB=10240` for
//! 10 GiB).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use shoal_tables::api::backups::{CreateBackupInput, DeleteBackupInput};
use shoal_tables::{Database, Durability, Options, StorageOptions};

const MIB_DEFAULT: u64 = 256;
const ITEM_BYTES: usize = 1000;
const BATCH: u64 = 25;

fn load(db: &Database, mib: u64) -> u64 {
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
    let items = (mib << 20) / 1024;
    let payload = "x".repeat(ITEM_BYTES - 40);
    let mut n = 0;
    while n < items {
        let requests: Vec<_> = (n..(n + BATCH).min(items))
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
    items
}

fn backup(c: &mut Criterion) {
    let mib: u64 = std::env::var("SHOAL_BACKUP_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MIB_DEFAULT);
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
    let started = Instant::now();
    let items = load(&db, mib);
    db.lsm().compact_until_idle().expect("compact");
    let description = db
        .execute("DescribeTable", json!({"TableName": "Bench"}))
        .expect("describe");
    let files = db.lsm().version().live_file_numbers().len();
    println!(
        "table: {items} items, {} MiB (TableSizeBytes), {files} SSTables, loaded in {:.1} s",
        description["Table"]["TableSizeBytes"].as_u64().unwrap_or(0) >> 20,
        started.elapsed().as_secs_f64()
    );

    let mut group = c.benchmark_group("backup");
    group.sample_size(10);
    group.bench_function(format!("create_backup_{mib}_mib"), |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for i in 0..iterations {
                db.execute(
                    "PutItem",
                    json!({"TableName": "Bench", "Item": {"pk": {"S": format!("extra{i}")}}}),
                )
                .expect("put");
                let started = Instant::now();
                let created = db
                    .create_backup(CreateBackupInput {
                        table_name: Some("Bench".into()),
                        backup_name: Some("bench".into()),
                    })
                    .expect("backup");
                timed += started.elapsed();
                db.delete_backup(DeleteBackupInput {
                    backup_arn: Some(created.backup_details.backup_arn),
                })
                .expect("delete backup");
            }
            timed
        })
    });
    group.finish();
}

criterion_group!(benches, backup);
criterion_main!(benches);
