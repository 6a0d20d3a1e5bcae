//! What a Time to Live sweep costs (docs/PERFORMANCE.md, "Time to Live").
//!
//! Loads N live items (`SHOAL_TTL_ITEMS`, default 1,000,000) with expiry times in the
//! future, then:
//! - `sweep_nothing/<N>` and `sweep_nothing/10000`: a sweep that finds nothing expired, on
//!   the big table and on a small one (each alone in its database) — it must cost the same (one seek of the
//!   expiry index), whatever the table's size;
//! - once, a sweep of 10% of N items that have expired among the N live ones, timed (wall
//!   and process CPU) and printed.
//!
//! Run: `cargo bench -p shoal-tables --bench ttl`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use shoal_tables::{Clock, Database, Durability, Options, StorageOptions, TimeToLiveOptions};

const ITEMS_DEFAULT: u64 = 1_000_000;
const SMALL_ITEMS: u64 = 10_000;
const NOW_SECONDS: u64 = 2_000_000_000;

fn create(db: &Database, name: &str) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": name,
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .expect("create");
    db.execute(
        "UpdateTimeToLive",
        json!({"TableName": name, "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}}),
    )
    .expect("enable");
}

/// Writes items `first..first + count` of `table` expiring at `expires`.
fn load(db: &Database, table: &str, first: u64, count: u64, expires: u64) {
    let mut n = first;
    while n < first + count {
        let requests: Vec<Value> = (n..(n + 25).min(first + count))
            .map(|i| {
                json!({"PutRequest": {"Item": {
                    "pk": {"S": format!("item{i:08}")},
                    "expires": {"N": expires.to_string()},
                    "payload": {"S": "x".repeat(60)}
                }}})
            })
            .collect();
        n += requests.len() as u64;
        db.execute("BatchWriteItem", json!({"RequestItems": {table: requests}}))
            .expect("load");
    }
}

/// This process's CPU time (user + system), from /proc.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    // Linux reports in clock ticks of 1/100 s.
    Duration::from_millis(ticks * 10)
}

fn bench(c: &mut Criterion) {
    let items: u64 = std::env::var("SHOAL_TTL_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ITEMS_DEFAULT);
    let now_millis = Arc::new(AtomicU64::new(NOW_SECONDS * 1000));
    let clock = {
        let now = Arc::clone(&now_millis);
        Clock::from_fn(move || now.load(Ordering::SeqCst))
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Database::open(
        dir.path(),
        Options {
            storage: StorageOptions {
                durability: Durability::None,
                ..StorageOptions::default()
            },
            time_to_live: TimeToLiveOptions {
                sweep_interval: Duration::from_secs(24 * 3600),
                ..TimeToLiveOptions::default()
            },
            clock,
            ..Options::default()
        },
    )
    .expect("open");
    create(&db, "Big");
    let started = Instant::now();
    load(&db, "Big", 0, items, NOW_SECONDS + 3600);
    eprintln!("loaded {items} items in {:.1?}", started.elapsed());

    let mut group = c.benchmark_group("sweep_nothing");
    group.bench_function(items.to_string(), |b| {
        b.iter(|| assert_eq!(db.expire_now().expect("sweep"), 0))
    });
    group.finish();
    // The same on a table of 10,000 items, alone in its database as the big one is.
    let small = Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        time_to_live: TimeToLiveOptions {
            sweep_interval: Duration::from_secs(24 * 3600),
            ..TimeToLiveOptions::default()
        },
        clock: Clock::from_fn(|| NOW_SECONDS * 1000),
        ..Options::default()
    })
    .expect("open");
    create(&small, "Small");
    load(&small, "Small", 0, SMALL_ITEMS, NOW_SECONDS + 3600);
    let mut group = c.benchmark_group("sweep_nothing");
    group.bench_function(SMALL_ITEMS.to_string(), |b| {
        b.iter(|| assert_eq!(small.expire_now().expect("sweep"), 0))
    });
    group.finish();

    // 10% of the items expire: written with an expiry a minute ago.
    let expiring = items / 10;
    load(&db, "Big", items, expiring, NOW_SECONDS - 60);
    let (wall, cpu) = (Instant::now(), cpu_time());
    let mut deleted = 0;
    loop {
        let swept = db.expire_now().expect("sweep");
        deleted += swept;
        if swept == 0 {
            break;
        }
    }
    let (wall, cpu) = (wall.elapsed(), cpu_time().saturating_sub(cpu));
    assert_eq!(deleted, expiring);
    println!(
        "sweep of {expiring} expired items among {items} live: {wall:.2?} wall, {cpu:.2?} CPU, {:.0} items/s",
        expiring as f64 / wall.as_secs_f64()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
