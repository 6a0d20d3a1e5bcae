//! The storage core's power-cut test at the table level (invariants 1, 3 and 5): random
//! PutItem/UpdateItem/DeleteItem on a table with 2 LSIs and 2 GSIs, the disk frozen at a
//! random point (inside WAL groups, flushes, compactions, manifest switches), power lost,
//! database reopened. After every crash:
//! - `Database::check` finds every index equal to the index derived from the base items and
//!   every collection record equal to the recomputed size (invariants 3 and 5);
//! - every acknowledged write is there, and nothing else but possibly the one write that
//!   was in flight when the disk froze (invariant 1).
//!
//! `SHOAL_TABLE_CRASH_ITERATIONS` sets the number of simulated disks (default 150, several
//! crashes each); `SHOAL_TABLE_CRASH_SEED` replays one.

use crate::crash_support;
use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_tables::Database;
use shoal_vfs::sim::SimFs;

const PARTITIONS: u32 = 3;
const SORT_KEYS: u32 = 4;

/// A random write: the operation, its request, and for puts the item it stores.
fn random_write(rng: &mut StdRng) -> (String, Value, Option<Value>) {
    let (pk, sk) = (
        rng.random_range(0..PARTITIONS),
        rng.random_range(0..SORT_KEYS),
    );
    let k = crash_support::crash_key(pk, sk);
    match rng.random_range(0..10) {
        0..=4 => {
            let item = crash_support::random_crash_item(rng, pk, sk);
            let request = json!({"TableName": "Crash", "Item": item});
            ("PutItem".into(), request, Some(item))
        }
        5..=7 => {
            let value = rng.random_range(0..50).to_string();
            let request = json!({
                "TableName": "Crash", "Key": k,
                "UpdateExpression": "SET b = :b REMOVE a",
                "ExpressionAttributeValues": {":b": {"N": value}}
            });
            ("UpdateItem".into(), request, None)
        }
        _ => (
            "DeleteItem".into(),
            json!({"TableName": "Crash", "Key": k}),
            None,
        ),
    }
}

fn key_of(request: &Value) -> String {
    let item = request
        .get("Key")
        .or_else(|| request.get("Item"))
        .cloned()
        .unwrap_or_default();
    format!("{}/{}", item["pk"]["S"], item["sk"]["S"])
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

/// Numbers compare by value: normalise the JSON of an item for comparison.
fn normal(item: &Option<Value>) -> Option<shoal_model::Item> {
    item.as_ref()
        .map(|v| shoal_model::item_from_json(v).expect("valid item"))
}

fn run_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    // Acknowledged state by "pk/sk", and the write that was in flight when the disk froze.
    let mut acknowledged: BTreeMap<String, Option<Value>> = BTreeMap::new();
    let mut in_flight: Option<(String, Option<Value>)> = None;
    let mut created = false;

    for round in 0..rng.random_range(2..5) {
        let db = Database::open_with_fs(sim.fs(), dir, crash_support::table_options())
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        if created {
            let report = db
                .check()
                .map_err(|e| format!("round {round}: check failed: {e}"))?;
            if !report.is_sound() {
                return Err(format!("round {round}: {}", report.problems.join("; ")));
            }
            for pk in 0..PARTITIONS {
                for sk in 0..SORT_KEYS {
                    let name = format!("\"p{pk}\"/\"s{sk}\"");
                    let actual = normal(&stored(&db, pk, sk)?);
                    let expected = normal(acknowledged.get(&name).unwrap_or(&None));
                    let flight_matches = in_flight
                        .as_ref()
                        .is_some_and(|(k, item)| *k == name && normal(item) == actual);
                    if actual != expected && !flight_matches {
                        return Err(format!(
                            "round {round}: {name} holds {actual:?}, acknowledged {expected:?}, in flight {in_flight:?}"
                        ));
                    }
                    if flight_matches {
                        acknowledged.insert(name, actual.map(|i| shoal_model::item_to_json(&i)));
                    }
                }
            }
        } else if db.table("Crash").is_err() {
            crash_support::create_indexed_table(&db);
        }
        created = true;
        in_flight = None;
        if rng.random_bool(0.8) {
            sim.freeze_after(Some(rng.random_range(0..400)));
        }
        for _ in 0..rng.random_range(0..120) {
            let (op, request, put_item) = random_write(&mut rng);
            let name_key = key_of(&request);
            let result = if op == "UpdateItem" {
                // An update (an upsert) applies to what was acknowledged for that key.
                let before = acknowledged.get(&name_key).cloned().flatten();
                let mut item = before
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_else(|| request["Key"].as_object().cloned().unwrap_or_default());
                item.insert(
                    "b".into(),
                    request["ExpressionAttributeValues"][":b"].clone(),
                );
                item.remove("a");
                Some(Value::Object(item))
            } else {
                put_item
            };
            match db.execute(&op, request) {
                Ok(_) => {
                    acknowledged.insert(name_key, result);
                }
                Err(_) => {
                    // The disk froze during this write: it may or may not have reached it.
                    in_flight = Some((name_key, result));
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
fn indexes_and_collections_stay_exact_through_power_cuts() {
    let seeds = shoal_vfs::sim::crash_seeds(
        "SHOAL_TABLE_CRASH_ITERATIONS",
        "SHOAL_TABLE_CRASH_SEED",
        150,
    );
    for seed in seeds {
        if let Err(message) = run_iteration(seed) {
            panic!("seed {seed}: {message} (replay with SHOAL_TABLE_CRASH_SEED={seed})");
        }
    }
}
