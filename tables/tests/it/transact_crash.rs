//! Power cuts during transactions and batches: random TransactWriteItems (puts, updates,
//! deletes and condition checks on distinct items) and BatchWriteItems on a table with 2 LSIs
//! and 2 GSIs, the disk frozen at a random point, power lost, database reopened. After every
//! crash:
//! - `Database::check` finds every index and collection record exact;
//! - every acknowledged transaction or batch is there whole, and of the one in flight when
//!   the disk froze either every write is there or none is — never part of it.
//!
//! `SHOAL_TRANSACT_CRASH_ITERATIONS` sets the number of simulated disks (default 60);
//! `SHOAL_TRANSACT_CRASH_SEED` replays one.

use crate::crash_support;
use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_model::{ErrorCode, Item};
use shoal_tables::Database;
use shoal_vfs::sim::SimFs;

const PARTITIONS: u32 = 3;
const SORT_KEYS: u32 = 4;

/// Item names are "p<pk>/s<sk>"; the model maps them to the stored item (None: absent).
type State = BTreeMap<String, Option<Item>>;

/// A random transaction or batch: the operation, its request, the state it leaves for each
/// item it writes if it commits, and whether the model expects it to be cancelled.
fn random_request(rng: &mut StdRng, state: &State) -> (String, Value, State, bool) {
    let mut names: Vec<(u32, u32)> = (0..PARTITIONS)
        .flat_map(|pk| (0..SORT_KEYS).map(move |sk| (pk, sk)))
        .collect();
    let count = rng.random_range(1..=5);
    let mut chosen = Vec::new();
    for _ in 0..count {
        chosen.push(names.swap_remove(rng.random_range(0..names.len())));
    }
    let batch = rng.random_bool(0.3);
    let mut actions = Vec::new();
    let mut after = State::new();
    let mut cancelled = false;
    for (pk, sk) in chosen {
        let name = format!("p{pk}/s{sk}");
        let before = state.get(&name).cloned().flatten();
        let key = crash_support::crash_key(pk, sk);
        match rng.random_range(0..10) {
            0..=4 => {
                let item = crash_support::random_crash_item(rng, pk, sk);
                after.insert(
                    name,
                    Some(shoal_model::item_from_json(&item).expect("item")),
                );
                actions.push(if batch {
                    json!({"PutRequest": {"Item": item}})
                } else {
                    json!({"Put": {"TableName": "Crash", "Item": item}})
                });
            }
            5..=6 if !batch => {
                let value = rng.random_range(0..50).to_string();
                let mut item =
                    before.unwrap_or_else(|| shoal_model::item_from_json(&key).expect("key item"));
                let number = shoal_model::Number::parse(&value).expect("number");
                item.insert("b".into(), shoal_model::AttributeValue::N(number));
                item.remove("a");
                after.insert(name, Some(item));
                actions.push(json!({"Update": {
                    "TableName": "Crash", "Key": key,
                    "UpdateExpression": "SET b = :b REMOVE a",
                    "ExpressionAttributeValues": {":b": {"N": value}}
                }}));
            }
            7 if !batch => {
                // Expected to hold or not from the model: a wrong guess cancels.
                cancelled |= before.is_none();
                actions.push(json!({"ConditionCheck": {
                    "TableName": "Crash", "Key": key,
                    "ConditionExpression": "attribute_exists(pk)"
                }}));
            }
            _ => {
                after.insert(name, None);
                actions.push(if batch {
                    json!({"DeleteRequest": {"Key": key}})
                } else {
                    json!({"Delete": {"TableName": "Crash", "Key": key}})
                });
            }
        }
    }
    if batch {
        let request = json!({"RequestItems": {"Crash": actions}});
        ("BatchWriteItem".into(), request, after, false)
    } else {
        let request = json!({"TransactItems": actions});
        ("TransactWriteItems".into(), request, after, cancelled)
    }
}

fn stored(db: &Database, pk: u32, sk: u32) -> Result<Option<Item>, String> {
    let response = db
        .execute(
            "GetItem",
            json!({"TableName": "Crash", "Key": crash_support::crash_key(pk, sk), "ConsistentRead": true}),
        )
        .map_err(|e| e.to_string())?;
    Ok(response
        .get("Item")
        .map(|item| shoal_model::item_from_json(item).expect("stored item")))
}

fn run_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    let mut acknowledged = State::new();
    // The writes of the request in flight when the disk froze.
    let mut in_flight: Option<State> = None;
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
            let mut actual = State::new();
            for pk in 0..PARTITIONS {
                for sk in 0..SORT_KEYS {
                    actual.insert(format!("p{pk}/s{sk}"), stored(&db, pk, sk)?);
                }
            }
            let expected_of = |state: &State, name: &String| state.get(name).cloned().flatten();
            let matches_old = actual
                .iter()
                .all(|(name, item)| *item == expected_of(&acknowledged, name));
            let mut with_flight = acknowledged.clone();
            if let Some(writes) = &in_flight {
                with_flight.extend(writes.clone());
            }
            let matches_new = actual
                .iter()
                .all(|(name, item)| *item == expected_of(&with_flight, name));
            if !matches_old && !matches_new {
                return Err(format!(
                    "round {round}: state {actual:?} is neither acknowledged {acknowledged:?} nor that plus the whole in-flight request {in_flight:?}"
                ));
            }
            if matches_new {
                acknowledged = with_flight;
            }
        } else if db.table("Crash").is_err() {
            crash_support::create_indexed_table(&db);
        }
        created = true;
        in_flight = None;
        if rng.random_bool(0.8) {
            sim.freeze_after(Some(rng.random_range(0..400)));
        }
        for _ in 0..rng.random_range(0..60) {
            let (op, request, after, expect_cancel) = random_request(&mut rng, &acknowledged);
            match db.execute(&op, request.clone()) {
                Ok(_) if expect_cancel => {
                    return Err(format!(
                        "{op} {request} committed; the model says it cancels"
                    ))
                }
                Ok(_) => acknowledged.extend(after),
                Err(error) if error.code == ErrorCode::TransactionCanceledException => {
                    if !expect_cancel {
                        return Err(format!("{op} {request} cancelled unexpectedly: {error:?}"));
                    }
                }
                Err(_) => {
                    // The disk froze during this request: all of it or none may be there.
                    in_flight = Some(after);
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
fn transactions_and_batches_survive_power_cuts_whole_or_not_at_all() {
    let seeds = shoal_vfs::sim::crash_seeds(
        "SHOAL_TRANSACT_CRASH_ITERATIONS",
        "SHOAL_TRANSACT_CRASH_SEED",
        60,
    );
    for seed in seeds {
        if let Err(message) = run_iteration(seed) {
            panic!("seed {seed}: {message} (replay with SHOAL_TRANSACT_CRASH_SEED={seed})");
        }
    }
}
