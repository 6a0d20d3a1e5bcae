//! What a replica costs writers, and how fast changes reach it (docs/PERFORMANCE.md,
//! "Global tables").
//!
//! - `put_item/no_replica` vs `put_item/one_replica`: the same PutItem (an overwrite of one
//!   of 10,000 items of about 200 bytes) on a table without a replica and on one with a
//!   replica in a second Region, in the same run. A replicated write also queues its change
//!   for the replica in the same WAL record; the replica applies it on the replication
//!   thread (lag 0), which runs beside the writer. No fsync (`Durability::None`), so the
//!   time is the CPU a write costs on its own thread.
//! - `drain/10000`: 10,000 changes queued while the replica's Region is cut off, then the
//!   time from healing it until every one is applied there: replication's throughput
//!   between two Regions.
//!
//! Run: `cargo bench -p shoal-tables --bench replication`.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use shoal_tables::{Database, Durability, Lag, Options, ReplicationOptions, StorageOptions};

const KEYS: u64 = 10_000;
const HOME: &str = "us-east-1";
const REPLICA: &str = "eu-west-1";

fn open() -> Database {
    Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        replication: ReplicationOptions {
            lag: Lag::fixed(Duration::ZERO),
        },
        ..Options::default()
    })
    .expect("open")
}

fn call(db: &Database, region: &str, operation: &str, request: serde_json::Value) {
    db.execute_json_text_in_region(Some(region), operation, request.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("{operation}: {e:?}"));
}

fn create(db: &Database, name: &str, replica: bool) {
    call(
        db,
        HOME,
        "CreateTable",
        json!({
            "TableName": name,
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
    if replica {
        call(
            db,
            HOME,
            "UpdateTable",
            json!({"TableName": name, "ReplicaUpdates": [{"Create": {"RegionName": REPLICA}}]}),
        );
        settle(db);
    }
}

/// Waits until every change is applied in every replica.
fn settle(db: &Database) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while !db.replication_settled().expect("settled") {
        assert!(Instant::now() < deadline, "replication did not settle");
        // Counting the backlog scans the queues: not so often that the count slows the drain.
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn put_body(table: &str, n: u64) -> Vec<u8> {
    json!({"TableName": table, "Item": {
        "pk": {"S": format!("user{:06}", n % KEYS)},
        "version": {"N": n.to_string()},
        "city": {"S": format!("city{}", n % 1000)},
        "payload": {"S": "x".repeat(150)}
    }})
    .to_string()
    .into_bytes()
}

fn put(db: &Database, body: &[u8]) {
    db.execute_json_text_in_region(Some(HOME), "PutItem", body)
        .expect("put");
}

fn bench(c: &mut Criterion) {
    let db = open();
    create(&db, "Solo", false);
    create(&db, "Global", true);
    let bodies: Vec<(Vec<u8>, Vec<u8>)> = (0..KEYS)
        .map(|n| (put_body("Solo", n), put_body("Global", n)))
        .collect();
    for (solo, global) in &bodies {
        put(&db, solo);
        put(&db, global);
    }
    settle(&db);
    let mut group = c.benchmark_group("put_item");
    let mut n = 0usize;
    group.bench_function("no_replica", |b| {
        b.iter(|| {
            put(&db, &bodies[n % bodies.len()].0);
            n += 1;
        })
    });
    group.bench_function("one_replica", |b| {
        b.iter(|| {
            put(&db, &bodies[n % bodies.len()].1);
            n += 1;
        })
    });
    group.finish();
    settle(&db);

    let mut group = c.benchmark_group("drain");
    group.sample_size(10);
    group.bench_function("10000", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                db.cut_region(REPLICA);
                for (_, global) in &bodies {
                    put(&db, global);
                }
                let healed = Instant::now();
                db.heal_region(REPLICA);
                settle(&db);
                total += healed.elapsed();
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
