//! Online GSI backfill rate (issue 6): loads N items (`SHOAL_BACKFILL_ITEMS`, default
//! 100,000; the real run uses 1,000,000) into a table, reopens it with the default
//! (synchronous) durability, creates a GSI with UpdateTable and measures the time until it
//! is ACTIVE, while one foreground writer keeps writing: prints the backfill rate in items/s
//! and the writer's latencies (a backfill must not stall foreground writes beyond
//! compaction back-pressure).
//! Run: `cargo bench -p shoal-tables --bench backfill` (`SHOAL_BACKFILL_ITEMS=1000000` for 1M).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use shoal_tables::core::catalog::IndexStatus;
use shoal_tables::{Database, Durability, Options, StorageOptions};

const ITEMS_DEFAULT: u64 = 100_000;

fn main() {
    // `cargo bench` passes `--bench`; this harness takes no arguments.
    let items: u64 = std::env::var("SHOAL_BACKFILL_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ITEMS_DEFAULT);
    let dir = tempfile::tempdir().expect("temporary directory");

    let load_started = Instant::now();
    {
        let options = Options {
            storage: StorageOptions {
                durability: Durability::None,
                ..StorageOptions::default()
            },
            ..Options::default()
        };
        let db = Database::open(dir.path(), options).expect("open");
        db.execute(
            "CreateTable",
            json!({
                "TableName": "Users",
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "BillingMode": "PAY_PER_REQUEST"
            }),
        )
        .expect("create table");
        for n in 0..items {
            db.execute(
                "PutItem",
                json!({"TableName": "Users", "Item": {
                    "id": {"S": format!("user{n:08}")},
                    "city": {"S": format!("city{}", n % 1000)},
                    "age": {"N": (n % 90).to_string()},
                    "payload": {"S": "x".repeat(200)}}}),
            )
            .expect("load");
        }
    }
    println!(
        "loaded {items} items in {:.1} s",
        load_started.elapsed().as_secs_f64()
    );

    let db = Database::open(dir.path(), Options::default()).expect("reopen");
    let stop = AtomicBool::new(false);
    let (elapsed, latencies) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut latencies = Vec::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Acquire) {
                let started = Instant::now();
                db.execute(
                    "PutItem",
                    json!({"TableName": "Users", "Item": {
                        "id": {"S": format!("live{n:08}")},
                        "city": {"S": "live"},
                        "age": {"N": "1"}}}),
                )
                .expect("foreground write");
                latencies.push(started.elapsed());
                n += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            latencies
        });
        let started = Instant::now();
        db.execute(
            "UpdateTable",
            json!({
                "TableName": "Users",
                "AttributeDefinitions": [{"AttributeName": "city", "AttributeType": "S"},
                                         {"AttributeName": "age", "AttributeType": "N"}],
                "GlobalSecondaryIndexUpdates": [{"Create": {
                    "IndexName": "ByCity",
                    "KeySchema": [{"AttributeName": "city", "KeyType": "HASH"},
                                  {"AttributeName": "age", "KeyType": "RANGE"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"}
                }}]
            }),
        )
        .expect("create index");
        loop {
            let table = db.table("Users").expect("table");
            let active = table
                .global_index("ByCity")
                .is_some_and(|gsi| gsi.status == IndexStatus::Active);
            if active {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let elapsed = started.elapsed();
        stop.store(true, Ordering::Release);
        (elapsed, writer.join().expect("writer"))
    });

    let seconds = elapsed.as_secs_f64();
    println!(
        "backfill of {items} items: {seconds:.2} s, {:.0} items/s",
        items as f64 / seconds
    );
    let mut sorted = latencies;
    sorted.sort();
    if let (Some(max), false) = (sorted.last(), sorted.is_empty()) {
        let percentile = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
        println!(
            "foreground PutItem during the backfill: {} writes, p50 {:?}, p99 {:?}, max {:?}",
            sorted.len(),
            percentile(0.5),
            percentile(0.99),
            max
        );
    }
}
