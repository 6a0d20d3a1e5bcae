//! Power cuts under a streamed table (invariant 8, docs/DESIGN.md §7): random PutItem,
//! UpdateItem, DeleteItem, BatchWriteItem and TransactWriteItems on a table with 2 LSIs, 2
//! GSIs and a NEW_AND_OLD_IMAGES stream, mixed with flushes, compactions (of the whole
//! database and of the stream's tree), and shard rollovers; the disk frozen at a random
//! point, power lost, the database reopened, and more written. After every crash:
//!
//! - replaying the stream's records in order from an empty table gives exactly the
//!   recovered items (each record's OldImage is what the item was before it), so there is
//!   no record of a change that was not recovered and no recovered change without one;
//! - the records are, request by request, a prefix of the committed requests' changes:
//!   every acknowledged write's record is there exactly once (in `sync` mode; in `none` mode
//!   unsynced writes may be lost, but only as a suffix, whole requests at a time), and the
//!   one request in flight when the disk froze is there whole or not at all;
//! - sequence numbers strictly increase, also across restarts; the shards chain parent to
//!   child with contiguous ranges, every record inside its shard's range, and a closed shard
//!   never changes: records written after a restart land in the open shard.
//!
//! `SHOAL_STREAMS_CRASH_ITERATIONS` sets the number of simulated disks (default 100);
//! `SHOAL_STREAMS_CRASH_SEED` replays one.

use crate::crash_support;
use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_model::{item_from_json, ErrorCode, Item};
use shoal_tables::{Database, Durability};
use shoal_vfs::sim::SimFs;

const PARTITIONS: u32 = 3;
const SORT_KEYS: u32 = 4;

/// Items by "p<pk>/s<sk>".
type State = BTreeMap<String, Item>;

/// A change as its record tells it: the item's name, the image before and after.
#[derive(Debug, Clone, PartialEq)]
struct Change {
    name: String,
    old: Option<Item>,
    new: Option<Item>,
}

/// A committed (or in-flight) request: the changes it makes, one per item it changes.
type Request = Vec<Change>;

fn name_of(item: &Item) -> String {
    let text = |attribute: &str| match item.get(attribute) {
        Some(shoal_model::AttributeValue::S(s)) => s.clone(),
        other => panic!("key attribute {attribute}: {other:?}"),
    };
    format!("{}/{}", text("pk"), text("sk"))
}

/// The changes a request that leaves `after` (None: deleted) for each item it writes makes
/// to `state`; items left equal make none.
fn changes(state: &State, after: &BTreeMap<String, Option<Item>>) -> Request {
    after
        .iter()
        .filter_map(|(name, new)| {
            let old = state.get(name).cloned();
            (old != *new).then(|| Change {
                name: name.clone(),
                old,
                new: new.clone(),
            })
        })
        .collect()
}

fn apply_changes(state: &mut State, request: &Request) {
    for change in request {
        match &change.new {
            Some(item) => state.insert(change.name.clone(), item.clone()),
            None => state.remove(&change.name),
        };
    }
}

/// A random write: the operation, its request, the item state it leaves for each item it
/// writes if it commits, and whether it is expected to be cancelled.
fn random_request(
    rng: &mut StdRng,
    state: &State,
) -> (String, Value, BTreeMap<String, Option<Item>>, bool) {
    let mut names: Vec<(u32, u32)> = (0..PARTITIONS)
        .flat_map(|pk| (0..SORT_KEYS).map(move |sk| (pk, sk)))
        .collect();
    let kind = rng.random_range(0..10);
    // 0..=5: one item (Put, Update, Delete); 6..=7: a batch; 8..=9: a transaction.
    let count = if kind <= 5 {
        1
    } else {
        rng.random_range(1..=5)
    };
    let batch = (6..=7).contains(&kind);
    let transaction = kind >= 8;
    let mut actions = Vec::new();
    let mut after = BTreeMap::new();
    let mut cancelled = false;
    let mut single = None;
    for _ in 0..count {
        let (pk, sk) = names.swap_remove(rng.random_range(0..names.len()));
        let name = format!("p{pk}/s{sk}");
        let before = state.get(&name).cloned();
        let key = crash_support::crash_key(pk, sk);
        match rng.random_range(0..10) {
            0..=4 => {
                // Sometimes the very item stored: a put that changes nothing.
                let item = match &before {
                    Some(item) if rng.random_bool(0.2) => shoal_model::item_to_json(item),
                    _ => crash_support::random_crash_item(rng, pk, sk),
                };
                after.insert(name, Some(item_from_json(&item).unwrap()));
                if batch {
                    actions.push(json!({"PutRequest": {"Item": item}}));
                } else if transaction {
                    actions.push(json!({"Put": {"TableName": "Crash", "Item": item}}));
                } else {
                    single = Some(("PutItem", json!({"TableName": "Crash", "Item": item})));
                }
            }
            5..=6 if !batch => {
                let value = rng.random_range(0..50).to_string();
                let mut item = before.unwrap_or_else(|| item_from_json(&key).unwrap());
                item.insert(
                    "b".into(),
                    shoal_model::AttributeValue::N(shoal_model::Number::parse(&value).unwrap()),
                );
                item.remove("a");
                after.insert(name, Some(item));
                let update = json!({
                    "TableName": "Crash", "Key": key,
                    "UpdateExpression": "SET b = :b REMOVE a",
                    "ExpressionAttributeValues": {":b": {"N": value}}
                });
                if transaction {
                    actions.push(json!({ "Update": update }));
                } else {
                    single = Some(("UpdateItem", update));
                }
            }
            7 if transaction => {
                // Expected to hold or not from the model: a wrong guess cancels.
                cancelled |= before.is_none();
                actions.push(json!({"ConditionCheck": {
                    "TableName": "Crash", "Key": key,
                    "ConditionExpression": "attribute_exists(pk)"
                }}));
            }
            _ => {
                after.insert(name, None);
                if batch {
                    actions.push(json!({"DeleteRequest": {"Key": key}}));
                } else if transaction {
                    actions.push(json!({"Delete": {"TableName": "Crash", "Key": key}}));
                } else {
                    single = Some(("DeleteItem", json!({"TableName": "Crash", "Key": key})));
                }
            }
        }
    }
    match single {
        Some((op, request)) => (op.to_string(), request, after, false),
        None if batch => (
            "BatchWriteItem".into(),
            json!({"RequestItems": {"Crash": actions}}),
            after,
            false,
        ),
        None => (
            "TransactWriteItems".into(),
            json!({"TransactItems": actions}),
            after,
            cancelled,
        ),
    }
}

fn create_table(db: &Database) {
    crash_support::create_indexed_table(db);
    db.execute(
        "UpdateTable",
        json!({"TableName": "Crash",
               "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"}}),
    )
    .expect("enable the stream");
}

fn call(db: &Database, operation: &str, body: Value) -> Result<Value, String> {
    db.execute(operation, body.clone())
        .map_err(|e| format!("{operation} {body}: {e}"))
}

/// One shard as DescribeStream has it, with the records GetRecords reads from it.
#[derive(Debug, Clone, PartialEq)]
struct ShardRead {
    id: String,
    parent: Option<String>,
    start: u128,
    end: Option<u128>,
    records: Vec<(u128, Change)>,
}

fn number(value: &Value) -> u128 {
    value.as_str().unwrap().parse().unwrap()
}

/// Every shard of the table's stream, each read from TRIM_HORIZON to its end.
fn read_stream(db: &Database) -> Result<Vec<ShardRead>, String> {
    let described = call(db, "DescribeTable", json!({"TableName": "Crash"}))?;
    let arn = described["Table"]["LatestStreamArn"].clone();
    let description = call(db, "DescribeStream", json!({"StreamArn": arn}))?;
    let mut shards = Vec::new();
    for shard in description["StreamDescription"]["Shards"]
        .as_array()
        .unwrap()
    {
        let range = &shard["SequenceNumberRange"];
        let mut read = ShardRead {
            id: shard["ShardId"].as_str().unwrap().to_string(),
            parent: shard["ParentShardId"].as_str().map(str::to_string),
            start: number(&range["StartingSequenceNumber"]),
            end: range.get("EndingSequenceNumber").map(number),
            records: Vec::new(),
        };
        let mut iterator = call(
            db,
            "GetShardIterator",
            json!({"StreamArn": arn, "ShardId": read.id, "ShardIteratorType": "TRIM_HORIZON"}),
        )?["ShardIterator"]
            .clone();
        loop {
            let page = call(db, "GetRecords", json!({"ShardIterator": iterator}))?;
            let batch = page["Records"].as_array().unwrap();
            for record in batch {
                let body = &record["dynamodb"];
                let image = |name: &str| body.get(name).map(|i| item_from_json(i).unwrap());
                let keys = item_from_json(&body["Keys"]).unwrap();
                let change = Change {
                    name: name_of(&keys),
                    old: image("OldImage"),
                    new: image("NewImage"),
                };
                let expected_event = match (&change.old, &change.new) {
                    (None, Some(_)) => "INSERT",
                    (Some(_), Some(_)) => "MODIFY",
                    (Some(_), None) => "REMOVE",
                    (None, None) => return Err(format!("a record without images: {record}")),
                };
                if record["eventName"] != expected_event {
                    return Err(format!("eventName does not fit the images: {record}"));
                }
                read.records.push((number(&body["SequenceNumber"]), change));
            }
            match page.get("NextShardIterator") {
                Some(next) if !batch.is_empty() => iterator = next.clone(),
                _ => break,
            }
        }
        shards.push(read);
    }
    Ok(shards)
}

fn stored_items(db: &Database) -> Result<State, String> {
    let mut state = State::new();
    for pk in 0..PARTITIONS {
        for sk in 0..SORT_KEYS {
            let response = call(
                db,
                "GetItem",
                json!({"TableName": "Crash", "Key": crash_support::crash_key(pk, sk), "ConsistentRead": true}),
            )?;
            if let Some(item) = response.get("Item") {
                state.insert(format!("p{pk}/s{sk}"), item_from_json(item).unwrap());
            }
        }
    }
    Ok(state)
}

/// What the test remembers between rounds.
#[derive(Default)]
struct History {
    /// Committed requests, in commit order (those lost to a crash in `none` mode dropped).
    requests: Vec<Request>,
    /// How many of them were acknowledged in `sync` mode (none of these may be lost).
    durable: usize,
    /// The request in flight when the disk froze.
    in_flight: Option<Request>,
    /// Every closed shard seen, as it was read: it must never change.
    closed: BTreeMap<String, ShardRead>,
}

/// Checks the recovered database against the history; returns the recovered item state.
fn verify(db: &Database, history: &mut History, round: u32) -> Result<State, String> {
    let fail = |message: String| Err(format!("round {round}: {message}"));
    let report = db.check().map_err(|e| e.to_string())?;
    if !report.is_sound() {
        return fail(report.problems.join("; "));
    }
    let shards = read_stream(db)?;
    // Shards chain parent to child with contiguous ranges; only the last is open.
    for pair in shards.windows(2) {
        if pair[1].parent.as_ref() != Some(&pair[0].id)
            || pair[0].end.map(|end| end + 1) != Some(pair[1].start)
        {
            return fail(format!(
                "shards do not chain: {:?} then {:?}",
                pair[0], pair[1]
            ));
        }
    }
    if shards.last().is_none_or(|shard| shard.end.is_some()) {
        return fail("no open shard".into());
    }
    for shard in &shards {
        if let Some((seq, _)) = shard
            .records
            .iter()
            .find(|(seq, _)| *seq < shard.start || shard.end.is_some_and(|end| *seq > end))
        {
            return fail(format!("record {seq} outside its shard {}", shard.id));
        }
        if shard.end.is_some() {
            match history.closed.get(&shard.id) {
                Some(before) if before != shard => {
                    let seqs = |read: &ShardRead| -> Vec<u128> {
                        read.records.iter().map(|(seq, _)| *seq).collect()
                    };
                    return fail(format!(
                        "closed shard {} [{}, {:?}] changed: held {:?}, now {:?}",
                        shard.id,
                        shard.start,
                        shard.end,
                        seqs(before),
                        seqs(shard)
                    ));
                }
                Some(_) => {}
                None => {
                    history.closed.insert(shard.id.clone(), shard.clone());
                }
            }
        }
    }
    let records: Vec<(u128, Change)> = shards.into_iter().flat_map(|s| s.records).collect();
    if let Some(pair) = records.windows(2).find(|pair| pair[0].0 >= pair[1].0) {
        return fail(format!(
            "sequence numbers do not increase: {} then {}",
            pair[0].0, pair[1].0
        ));
    }

    // Replaying the records reproduces the recovered items exactly.
    let items = stored_items(db)?;
    let mut replayed = State::new();
    for (seq, change) in &records {
        if replayed.get(&change.name) != change.old.as_ref() {
            return fail(format!(
                "record {seq}: OldImage {:?}, but the item was {:?}",
                change.old,
                replayed.get(&change.name)
            ));
        }
        apply_changes(&mut replayed, &vec![change.clone()]);
    }
    if replayed != items {
        return fail(format!(
            "replaying the stream gives {replayed:?}, the table holds {items:?}"
        ));
    }

    // The records are the committed requests' changes, request by request: a prefix of them
    // (the in-flight one last), never part of a request.
    let mut candidates = history.requests.clone();
    candidates.extend(history.in_flight.take());
    let mut rest = records.as_slice();
    let mut kept = 0;
    for request in &candidates {
        if rest.is_empty() && !request.is_empty() {
            break;
        }
        if rest.len() < request.len() {
            return fail(format!(
                "part of a request survived: {rest:?} of {request:?}"
            ));
        }
        let (head, tail) = rest.split_at(request.len());
        // One request commits as one batch: its records' order among themselves is the
        // order its items were planned in, so they compare as a set.
        let mut got: Vec<&Change> = head.iter().map(|(_, c)| c).collect();
        let mut want: Vec<&Change> = request.iter().collect();
        got.sort_by(|a, b| a.name.cmp(&b.name));
        want.sort_by(|a, b| a.name.cmp(&b.name));
        if got != want {
            return fail(format!(
                "request {kept}: the stream holds {got:?}, the request changed {want:?}"
            ));
        }
        rest = tail;
        kept += 1;
    }
    if !rest.is_empty() {
        return fail(format!("records of no committed request: {rest:?}"));
    }
    if kept < history.durable {
        return fail(format!(
            "{} requests were acknowledged durably, the stream holds {kept}",
            history.durable
        ));
    }
    candidates.truncate(kept);
    history.requests = candidates;
    Ok(items)
}

fn run_iteration(seed: u64) -> Result<(), String> {
    let sync = StdRng::seed_from_u64(seed).random_bool(0.5);
    run_rounds(seed).map_err(|e| format!("durability {}: {e}", if sync { "sync" } else { "none" }))
}

fn run_rounds(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    let sync = rng.random_bool(0.5);
    let options = {
        let mut options = crash_support::table_options();
        options.storage.durability = if sync {
            Durability::Sync
        } else {
            Durability::None
        };
        options.streams.shard_records_max = Some(rng.random_range(2..8));
        options
    };
    let mut history = History::default();
    let mut created = false;

    for round in 0..rng.random_range(2..5) {
        let db = Database::open_with_fs(sim.fs(), dir, options.clone())
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        let mut state = if created {
            verify(&db, &mut history, round)?
        } else {
            create_table(&db);
            created = true;
            State::new()
        };
        let stream_tree = db.table("Crash").unwrap().streams.last().unwrap().tree;
        if rng.random_bool(0.8) {
            sim.freeze_after(Some(rng.random_range(0..400)));
        }
        for _ in 0..rng.random_range(0..80) {
            let maintenance = match rng.random_range(0..20) {
                0 => Some(db.lsm().flush_all().map_err(|e| e.to_string())),
                1 => Some(db.lsm().compact_until_idle().map_err(|e| e.to_string())),
                2 => Some(
                    db.lsm()
                        .compact_tree(stream_tree)
                        .map_err(|e| e.to_string()),
                ),
                3..=4 => Some(db.stream_upkeep().map_err(|e| e.to_string())),
                _ => None,
            };
            match maintenance {
                Some(Ok(())) => continue,
                // The disk froze: nothing more gets written this round.
                Some(Err(_)) => break,
                None => {}
            }
            let (op, request, after, expect_cancel) = random_request(&mut rng, &state);
            let changed = changes(&state, &after);
            match db.execute(&op, request.clone()) {
                Ok(_) if expect_cancel => {
                    return Err(format!(
                        "{op} {request} committed; the model says it cancels"
                    ))
                }
                Ok(_) => {
                    apply_changes(&mut state, &changed);
                    history.requests.push(changed);
                    if sync {
                        history.durable = history.requests.len();
                    }
                }
                Err(error) if error.code == ErrorCode::TransactionCanceledException => {
                    if !expect_cancel {
                        return Err(format!("{op} {request} cancelled unexpectedly: {error:?}"));
                    }
                }
                Err(_) => {
                    // The disk froze during this request: all of it or none may be there.
                    history.in_flight = Some(changed);
                    break;
                }
            }
        }
        sim.power_loss(rng.random());
        drop(db);
    }
    // A last look, and one more write after it: it lands in the open shard, after all.
    let db = Database::open_with_fs(sim.fs(), dir, options)
        .map_err(|e| format!("final reopen failed: {e}"))?;
    let state = verify(&db, &mut history, u32::MAX)?;
    let (op, request, after, cancel) = random_request(&mut rng, &state);
    let changed = changes(&state, &after);
    match db.execute(&op, request) {
        Ok(_) if !cancel => history.requests.push(changed),
        Err(e) if cancel && e.code == ErrorCode::TransactionCanceledException => {}
        outcome => return Err(format!("the last write: {outcome:?}")),
    }
    history.durable = history.requests.len();
    verify(&db, &mut history, u32::MAX)?;
    Ok(())
}

#[test]
fn streams_hold_each_recovered_change_once_through_power_cuts() {
    let seeds = shoal_vfs::sim::crash_seeds(
        "SHOAL_STREAMS_CRASH_ITERATIONS",
        "SHOAL_STREAMS_CRASH_SEED",
        100,
    );
    for seed in seeds {
        if let Err(message) = run_iteration(seed) {
            panic!("seed {seed}: {message} (replay with SHOAL_STREAMS_CRASH_SEED={seed})");
        }
    }
}
