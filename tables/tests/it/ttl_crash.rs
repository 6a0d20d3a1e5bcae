//! Time to Live through power cuts: random writes with expiry times around now and sweeps
//! at random points, the disk frozen at a random point (inside WAL groups, flushes,
//! compactions, a sweep's batches), power lost, database reopened. After every crash:
//! - `Database::check` finds every index, collection record and statistic exact;
//! - the expiry index holds exactly one entry per item with a Number expiry, naming it;
//! - every key holds what was acknowledged, or the write in flight, or — if it had expired —
//!   nothing (a sweep may have deleted it).
//!
//! `SHOAL_TTL_CRASH_ITERATIONS` sets the number of simulated disks (default 20);
//! `SHOAL_TTL_CRASH_SEED` replays one.

use crate::crash_support;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_engine::Direction;
use shoal_tables::core::item_codec::decode_item;
use shoal_tables::{Clock, Database};
use shoal_vfs::sim::SimFs;

const NOW_SECONDS: u64 = 2_000_000_000;
const PARTITIONS: u32 = 3;
const SORT_KEYS: u32 = 4;

fn options(now: &Arc<AtomicU64>) -> shoal_tables::Options {
    let now = Arc::clone(now);
    {
        let mut options = crash_support::table_options();
        options.clock = Clock::from_fn(move || now.load(Ordering::SeqCst));
        options.time_to_live.sweep_interval = Duration::from_secs(3600);
        options.time_to_live.sweep_at_start = false;
        options
    }
}

fn name(pk: u32, sk: u32) -> String {
    format!("p{pk}/s{sk}")
}

/// The expiry second of a stored or acknowledged item, if it has a Number one.
fn expiry_of(item: &Value) -> Option<u64> {
    item.get("expires")?.get("N")?.as_str()?.parse().ok()
}

fn normal(item: &Option<Value>) -> Option<shoal_model::Item> {
    item.as_ref()
        .map(|v| shoal_model::item_from_json(v).expect("valid item"))
}

/// Every expiry index entry names a stored item expiring at that second, and every item
/// with a Number expiry has one.
fn check_expiry_index(db: &Database) -> Result<(), String> {
    let table = db.table("Crash").map_err(|e| e.message)?;
    let ttl = table
        .time_to_live
        .as_ref()
        .ok_or("Time to Live is not enabled")?;
    let entries = db
        .lsm()
        .scan(
            ttl.tree,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
            usize::MAX,
        )
        .map_err(|e| e.to_string())?;
    for (key, _) in &entries {
        let (seconds, base_key) = key.split_at(8);
        let seconds = u64::from_be_bytes(seconds.try_into().map_err(|_| "short key")?);
        let bytes = db
            .lsm()
            .get(table.tree, base_key, None)
            .map_err(|e| e.to_string())?
            .ok_or("an expiry entry names no item")?;
        let item = shoal_model::item_to_json(&decode_item(&bytes).map_err(|e| e.to_string())?);
        if expiry_of(&item) != Some(seconds) {
            return Err(format!("entry at {seconds} for {item}"));
        }
    }
    let scan = db
        .execute(
            "Scan",
            json!({"TableName": "Crash", "ConsistentRead": true}),
        )
        .map_err(|e| e.message)?;
    let with_expiry = scan["Items"]
        .as_array()
        .map(|items| items.iter().filter(|i| expiry_of(i).is_some()).count())
        .unwrap_or_default();
    if with_expiry != entries.len() {
        return Err(format!(
            "{with_expiry} items with an expiry, {} index entries",
            entries.len()
        ));
    }
    Ok(())
}

fn stored(db: &Database, pk: u32, sk: u32) -> Result<Option<Value>, String> {
    let response = db
        .execute(
            "GetItem",
            json!({"TableName": "Crash", "Key": crash_support::crash_key(pk, sk), "ConsistentRead": true}),
        )
        .map_err(|e| e.to_string())?;
    Ok(response.get("Item").cloned())
}

fn run_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    let now = Arc::new(AtomicU64::new(NOW_SECONDS * 1000));
    let mut acknowledged: BTreeMap<String, Option<Value>> = BTreeMap::new();
    let mut in_flight: Option<(String, Option<Value>)> = None;
    let mut created = false;

    for round in 0..rng.random_range(2..5) {
        let db = Database::open_with_fs(sim.fs(), dir, options(&now))
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        if created {
            let report = db
                .check()
                .map_err(|e| format!("round {round}: check: {e}"))?;
            if !report.is_sound() {
                return Err(format!("round {round}: {}", report.problems.join("; ")));
            }
            check_expiry_index(&db).map_err(|e| format!("round {round}: {e}"))?;
            for pk in 0..PARTITIONS {
                for sk in 0..SORT_KEYS {
                    let key = name(pk, sk);
                    let actual = normal(&stored(&db, pk, sk)?);
                    let expected = acknowledged.get(&key).cloned().flatten();
                    let swept = actual.is_none()
                        && expected
                            .as_ref()
                            .and_then(expiry_of)
                            .is_some_and(|at| at < NOW_SECONDS);
                    let flight = in_flight
                        .as_ref()
                        .is_some_and(|(k, item)| *k == key && normal(item) == actual);
                    if actual != normal(&expected) && !swept && !flight {
                        return Err(format!(
                            "round {round}: {key} holds {actual:?}, acknowledged {expected:?}"
                        ));
                    }
                    acknowledged.insert(key, actual.map(|i| shoal_model::item_to_json(&i)));
                }
            }
        } else if db.table("Crash").is_err() {
            crash_support::create_indexed_table(&db);
            db.execute(
                "UpdateTimeToLive",
                json!({"TableName": "Crash", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}}),
            )
            .map_err(|e| e.message)?;
        }
        created = true;
        in_flight = None;
        if rng.random_bool(0.8) {
            sim.freeze_after(Some(rng.random_range(0..400)));
        }
        for _ in 0..rng.random_range(0..80) {
            if rng.random_bool(0.15) {
                // A sweep: its batches may or may not reach the disk before it freezes.
                if db.expire_now().is_err() {
                    break;
                }
                acknowledged.retain(|_, item| {
                    item.as_ref()
                        .and_then(expiry_of)
                        .is_none_or(|at| at >= NOW_SECONDS)
                });
                continue;
            }
            let (pk, sk) = (
                rng.random_range(0..PARTITIONS),
                rng.random_range(0..SORT_KEYS),
            );
            let mut item = crash_support::random_crash_item(&mut rng, pk, sk);
            if rng.random_bool(0.7) {
                let at = NOW_SECONDS as i64 + rng.random_range(-50i64..50);
                item["expires"] = json!({"N": at.to_string()});
            }
            match db.execute("PutItem", json!({"TableName": "Crash", "Item": item})) {
                Ok(_) => {
                    acknowledged.insert(name(pk, sk), Some(item));
                }
                Err(_) => {
                    in_flight = Some((name(pk, sk), Some(item)));
                    break;
                }
            }
        }
        sim.power_loss(rng.random());
        drop(db);
    }
    Ok(())
}

#[test]
fn sweeps_and_the_expiry_index_stay_exact_through_power_cuts() {
    let seeds =
        shoal_vfs::sim::crash_seeds("SHOAL_TTL_CRASH_ITERATIONS", "SHOAL_TTL_CRASH_SEED", 20);
    for seed in seeds {
        if let Err(message) = run_iteration(seed) {
            panic!("seed {seed}: {message} (replay with SHOAL_TTL_CRASH_SEED={seed})");
        }
    }
}
