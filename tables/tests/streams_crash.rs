//! Streams through power cuts (invariant 8): random puts, deletes and batches on a table
//! with a NEW_AND_OLD_IMAGES stream, the disk frozen at a random point (inside WAL groups,
//! flushes, compactions, manifest switches), power lost, database reopened. After every
//! crash:
//! - replaying the whole stream from an empty table gives exactly the recovered table: a
//!   record for every recovered change, none for a change that was not recovered, once each,
//!   in order;
//! - every acknowledged write is there (so is its record);
//! - `Database::check` finds the stream agreeing with the items, and everything else exact;
//! - the records read after the previous crash are still the stream's first records, and
//!   sequence numbers keep increasing across restarts.
//!
//! `SHOAL_STREAMS_CRASH_ITERATIONS` sets the number of simulated disks (default 40);
//! `SHOAL_STREAMS_CRASH_SEED` replays one.

mod crash_support;

use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_model::{item_from_json, Item};
use shoal_tables::{Database, EventName, StreamStart};
use shoal_vfs::sim::SimFs;

const KEYS: u32 = 6;

fn key_json(key: u32) -> Value {
    json!({"pk": {"S": format!("k{key}")}})
}

fn create(db: &Database) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Feed",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"}
        }),
    )
    .expect("create table");
}

/// The table's items by key, read with a consistent Scan.
fn table_items(db: &Database) -> Result<BTreeMap<String, Item>, String> {
    let scan = db
        .execute("Scan", json!({"TableName": "Feed", "ConsistentRead": true}))
        .map_err(|e| e.message)?;
    Ok(scan["Items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|i| {
            let item = item_from_json(i).expect("item");
            (i["pk"]["S"].as_str().unwrap_or_default().to_string(), item)
        })
        .collect())
}

/// Every record of the stream, as (sequence number, event, key, new image).
type Record = (u64, EventName, String, Option<Item>);

fn stream(db: &Database) -> Result<Vec<Record>, String> {
    let mut reader = db
        .stream_reader("Feed", StreamStart::TrimHorizon)
        .map_err(|e| e.message)?;
    let mut records = Vec::new();
    loop {
        let batch = reader.read(100).map_err(|e| e.message)?;
        if batch.is_empty() {
            return Ok(records);
        }
        for r in batch {
            let key = match r.keys.get("pk") {
                Some(shoal_model::AttributeValue::S(s)) => s.clone(),
                other => return Err(format!("record keys {other:?}")),
            };
            records.push((r.seq, r.event_name, key, r.new_image));
        }
    }
}

fn run_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    let mut acknowledged: BTreeMap<String, Option<Item>> = BTreeMap::new();
    let mut in_flight: Vec<(String, Option<Item>)> = Vec::new();
    let mut previous: Vec<Record> = Vec::new();
    let mut created = false;

    for round in 0..rng.random_range(2..5) {
        let db = Database::open_with_fs(sim.fs(), dir, crash_support::table_options())
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        if created {
            let report = db
                .check()
                .map_err(|e| format!("round {round}: check: {e}"))?;
            if !report.is_sound() {
                return Err(format!("round {round}: {}", report.problems.join("; ")));
            }
            let items = table_items(&db)?;
            let records = stream(&db)?;
            // Replaying the stream gives the table.
            let mut replayed: BTreeMap<String, Item> = BTreeMap::new();
            for (_, event, key, new) in &records {
                match (event, new) {
                    (EventName::Remove, _) => {
                        replayed.remove(key);
                    }
                    (_, Some(new)) => {
                        replayed.insert(key.clone(), new.clone());
                    }
                    (_, None) => return Err(format!("round {round}: a record without NewImage")),
                }
            }
            if replayed != items {
                return Err(format!(
                    "round {round}: the stream replays to {replayed:?}, the table holds {items:?}"
                ));
            }
            if !records.windows(2).all(|w| w[0].0 < w[1].0) {
                return Err(format!("round {round}: sequence numbers do not increase"));
            }
            if records.len() < previous.len() || records[..previous.len()] != previous[..] {
                return Err(format!(
                    "round {round}: records read before the crash changed"
                ));
            }
            // Every acknowledged write is there (the writes in flight may or may not be).
            for (key, expected) in &acknowledged {
                let actual = items.get(key);
                let from_flight = in_flight
                    .iter()
                    .any(|(k, item)| k == key && item.as_ref() == actual);
                if actual != expected.as_ref() && !from_flight {
                    return Err(format!(
                        "round {round}: {key} holds {actual:?}, acknowledged {expected:?}"
                    ));
                }
            }
            acknowledged = items.into_iter().map(|(k, v)| (k, Some(v))).collect();
            previous = records;
        } else if db.table("Feed").is_err() {
            create(&db);
        }
        created = true;
        in_flight.clear();
        if rng.random_bool(0.8) {
            sim.freeze_after(Some(rng.random_range(0..400)));
        }
        for _ in 0..rng.random_range(0..80) {
            let mut changes: Vec<(String, Option<Item>)> = Vec::new();
            let (operation, request) = match rng.random_range(0..10) {
                0..=5 => {
                    let key = rng.random_range(0..KEYS);
                    let item = json!({"pk": {"S": format!("k{key}")},
                                      "v": {"N": rng.random_range(0..5).to_string()},
                                      "pad": {"S": "p".repeat(rng.random_range(0..200))}});
                    changes.push((
                        format!("k{key}"),
                        Some(item_from_json(&item).expect("item")),
                    ));
                    ("PutItem", json!({"TableName": "Feed", "Item": item}))
                }
                6..=7 => {
                    let key = rng.random_range(0..KEYS);
                    changes.push((format!("k{key}"), None));
                    (
                        "DeleteItem",
                        json!({"TableName": "Feed", "Key": key_json(key)}),
                    )
                }
                _ => {
                    let mut requests = Vec::new();
                    for key in 0..KEYS {
                        if rng.random_bool(0.4) {
                            let item = json!({"pk": {"S": format!("k{key}")}, "v": {"N": "9"}});
                            changes.push((
                                format!("k{key}"),
                                Some(item_from_json(&item).expect("item")),
                            ));
                            requests.push(json!({"PutRequest": {"Item": item}}));
                        }
                    }
                    if requests.is_empty() {
                        continue;
                    }
                    (
                        "BatchWriteItem",
                        json!({"RequestItems": {"Feed": requests}}),
                    )
                }
            };
            match db.execute(operation, request) {
                Ok(_) => acknowledged.extend(changes),
                Err(_) => {
                    in_flight = changes;
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
fn the_stream_holds_exactly_the_recovered_changes_through_power_cuts() {
    let seeds = shoal_vfs::sim::crash_seeds(
        "SHOAL_STREAMS_CRASH_ITERATIONS",
        "SHOAL_STREAMS_CRASH_SEED",
        40,
    );
    for seed in seeds {
        if let Err(message) = run_iteration(seed) {
            panic!("seed {seed}: {message} (replay with SHOAL_STREAMS_CRASH_SEED={seed})");
        }
    }
}
