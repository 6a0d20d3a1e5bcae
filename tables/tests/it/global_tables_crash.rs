//! Global tables through power cuts (DESIGN.md §7, invariant 11): writes in two Regions,
//! a replica being filled, and the replication thread applying queued changes, with the
//! disk frozen at a random I/O call (inside WAL groups, flushes, compactions, the
//! replication thread's batches), power lost, the database reopened. After every crash and
//! once the queues drain:
//! - both Regions hold the same items, each key the value of its last acknowledged put (or
//!   of the write in flight, if it survived): writes are stamped in the order the test
//!   makes them, so last writer wins picks the last one (a delete of an item its Region
//!   does not hold yet changes nothing there and is not replicated);
//! - every surviving written value appears exactly once in each Region's stream (once from
//!   its own write, once as a replicated or backfilled one): nothing applied twice, nothing
//!   lost;
//! - `Database::check` finds every index and statistic exact.
//!
//! A second test does the same with a strong group of three Regions (SPEC-3 §2.5), where
//! the Regions must agree right after each open, without waiting for replication.
//!
//! A third cuts the power during group-wide settings changes (Time to Live, a GSI created
//! or deleted, an on-demand cap, sent to either member): after each open both members show
//! the same settings, the last acknowledged ones or the change in flight, and each member's
//! indexes, built from its own items, are exact.
//!
//! A fourth cuts the power during a strong group's teardown: after the open the three
//! Regions agree, all still in the group or the caller's table regional and the others gone.
//!
//! `SHOAL_GLOBAL_CRASH_ITERATIONS` sets the number of simulated disks (default 12);
//! `SHOAL_GLOBAL_CRASH_SEED` replays one.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_tables::{Database, Lag, ReplicationOptions};
use shoal_vfs::sim::SimFs;

use crate::crash_support;
use crate::global_tables::call;

const A: &str = "us-east-1";
const B: &str = "eu-west-1";
const KEYS: u32 = 6;
/// The Regions of the strong group of the strong tests, A's first.
const STRONG_REGIONS: [&str; 3] = [A, "us-east-2", "us-west-2"];

fn options() -> shoal_tables::Options {
    let mut options = crash_support::table_options();
    options.replication = ReplicationOptions {
        lag: Lag::fixed(Duration::ZERO),
    };
    options
}

pub(crate) fn try_call(
    db: &Database,
    region: &str,
    operation: &str,
    request: Value,
) -> Result<Value, String> {
    call(db, region, operation, &request).map_err(|(code, message)| format!("{code}: {message}"))
}

/// Table `Crash` in Region A, as `global_tables` creates its tables (pk, GSI ByG on g).
pub(crate) fn create(db: &Database) -> Result<(), String> {
    crate::global_tables::create_table(db, A, "Crash");
    Ok(())
}

/// The value of every key in `region`.
fn items(db: &Database, region: &str) -> Result<BTreeMap<String, String>, String> {
    let scan = try_call(
        db,
        region,
        "Scan",
        json!({"TableName": "Crash", "ConsistentRead": true}),
    )?;
    Ok(scan["Items"]
        .as_array()
        .ok_or("no Items")?
        .iter()
        .map(|item| {
            (
                item["pk"]["S"].as_str().unwrap_or_default().to_string(),
                item["v"]["S"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

/// How many records of `region`'s stream carry each new value.
fn stream_values(db: &Database, region: &str) -> Result<BTreeMap<String, usize>, String> {
    let table = try_call(db, region, "DescribeTable", json!({"TableName": "Crash"}))?;
    let arn = table["Table"]["LatestStreamArn"]
        .as_str()
        .ok_or("no stream")?
        .to_string();
    let stream = try_call(db, region, "DescribeStream", json!({"StreamArn": arn}))?;
    let mut counts = BTreeMap::new();
    for shard in stream["StreamDescription"]["Shards"]
        .as_array()
        .ok_or("no shards")?
    {
        let mut iterator = try_call(
            db,
            region,
            "GetShardIterator",
            json!({
                "StreamArn": arn, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"
            }),
        )?["ShardIterator"]
            .clone();
        while let Some(current) = iterator.as_str().map(str::to_string) {
            let page = try_call(db, region, "GetRecords", json!({"ShardIterator": current}))?;
            let records = page["Records"].as_array().ok_or("no Records")?;
            for record in records {
                if let Some(v) = record["dynamodb"]["NewImage"]["v"]["S"].as_str() {
                    *counts.entry(v.to_string()).or_default() += 1;
                }
            }
            if records.is_empty() {
                break;
            }
            iterator = page["NextShardIterator"].clone();
        }
    }
    Ok(counts)
}

/// What the test wrote: per key, every write in the order made, and whether it was
/// acknowledged (None for a delete).
pub(crate) type Writes = BTreeMap<String, Vec<(Option<String>, bool)>>;

pub(crate) fn verify(
    db: &Database,
    writes: &Writes,
    unstreamed_in_a: &[String],
) -> Result<(), String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !db.replication_settled().map_err(|e| e.message)? {
        if std::time::Instant::now() > deadline {
            let describe = try_call(db, B, "DescribeTable", json!({"TableName": "Crash"}));
            return Err(format!(
                "replication did not settle: {:?}; B: {describe:?}",
                db.replication_links()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    sound(db)?;
    let in_a = items(db, A)?;
    let in_b = items(db, B)?;
    if in_a != in_b {
        return Err(format!("Regions differ: {in_a:?} against {in_b:?}"));
    }
    let streams = [(A, stream_values(db, A)?), (B, stream_values(db, B)?)];
    for (key, history) in writes {
        let actual = in_a.get(key).cloned();
        let last_acknowledged = history.iter().rposition(|(_, ack)| *ack);
        let allowed: Vec<Option<String>> = match last_acknowledged {
            // The last acknowledged put, or a later write that was in flight.
            Some(at) if history[at].0.is_some() => {
                history[at..].iter().map(|(v, _)| v.clone()).collect()
            }
            // A delete changes nothing in a Region that does not hold the item yet, and so
            // is not replicated (as DynamoDB's stream-driven replication does): an earlier
            // put may still arrive after it.
            _ => std::iter::once(None)
                .chain(history.iter().map(|(v, _)| v.clone()))
                .collect(),
        };
        if !allowed.contains(&actual) {
            return Err(format!("{key} holds {actual:?}; allowed {allowed:?}"));
        }
        for (_, value) in history
            .iter()
            .filter_map(|(v, _)| v.as_ref().map(|v| (key, v)))
        {
            for (region, counts) in &streams {
                let count = counts.get(value).copied().unwrap_or_default();
                if count > 1 {
                    return Err(format!("{value} is {count} times in {region}'s stream"));
                }
                let expected = actual.as_ref() == Some(value)
                    && !(*region == A && unstreamed_in_a.contains(value));
                if expected && count != 1 {
                    return Err(format!("{value}, held, is not in {region}'s stream"));
                }
            }
        }
    }
    Ok(())
}

/// Up to `most` random puts and deletes of table `Crash` in random `regions`, recorded in
/// `writes`, until one fails (the disk froze); with `pause`, now and then a few
/// milliseconds for the replication thread to work.
fn random_writes(
    db: &Database,
    rng: &mut StdRng,
    regions: &[&str],
    round: u32,
    writes: &mut Writes,
    most: u32,
    pause: bool,
) {
    for _ in 0..rng.random_range(1..most) {
        let region = regions[rng.random_range(0..regions.len())];
        let key = format!("k{}", rng.random_range(0..KEYS));
        // Every value written is unique: the count of writes so far names it.
        let counter = writes.values().map(Vec::len).sum::<usize>() + 1;
        let (value, outcome) = if rng.random_bool(0.15) {
            (
                None,
                try_call(
                    db,
                    region,
                    "DeleteItem",
                    json!({"TableName": "Crash", "Key": {"pk": {"S": key}}}),
                ),
            )
        } else {
            let value = format!("{region}-{round}-{counter}");
            (
                Some(value.clone()),
                try_call(
                    db,
                    region,
                    "PutItem",
                    json!({"TableName": "Crash", "Item": {
                        "pk": {"S": key}, "g": {"S": "g"}, "v": {"S": value}
                    }}),
                ),
            )
        };
        let acknowledged = outcome.is_ok();
        writes.entry(key).or_default().push((value, acknowledged));
        if !acknowledged {
            break;
        }
        if pause && rng.random_bool(0.2) {
            // Give the replication thread time to work before the freeze.
            std::thread::sleep(Duration::from_millis(rng.random_range(0..3)));
        }
    }
}

fn run_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    let mut writes: Writes = BTreeMap::new();
    let mut unstreamed_in_a = Vec::new();
    for round in 0..rng.random_range(2..4) {
        let db = Database::open_with_fs(sim.fs(), dir, options())
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        if round == 0 {
            create(&db)?;
            // Items the new replica is filled with (written before A had a stream).
            for key in 0..KEYS / 2 {
                let value = format!("pre-{key}");
                try_call(
                    &db,
                    A,
                    "PutItem",
                    json!({"TableName": "Crash", "Item": {
                        "pk": {"S": format!("k{key}")}, "g": {"S": "g"}, "v": {"S": value}
                    }}),
                )?;
                writes
                    .entry(format!("k{key}"))
                    .or_default()
                    .push((Some(value.clone()), true));
                unstreamed_in_a.push(value);
            }
            try_call(
                &db,
                A,
                "UpdateTable",
                json!({
                    "TableName": "Crash", "ReplicaUpdates": [{"Create": {"RegionName": B}}]
                }),
            )?;
        } else {
            verify(&db, &writes, &unstreamed_in_a).map_err(|e| format!("round {round}: {e}"))?;
        }
        sim.freeze_after(Some(rng.random_range(0..600)));
        random_writes(&db, &mut rng, &[A, B], round, &mut writes, 60, true);
        sim.power_loss(rng.random());
        drop(db);
        sim.freeze_after(None);
    }
    let db = Database::open_with_fs(sim.fs(), dir, options())
        .map_err(|e| format!("last reopen failed: {e}"))?;
    verify(&db, &writes, &unstreamed_in_a).map_err(|e| format!("last round: {e}"))
}

#[test]
fn every_acknowledged_write_reaches_both_regions_once_through_power_cuts() {
    every_seed(run_iteration);
}

/// Multi-Region strong consistency through power cuts (`replication::strong`): table
/// `Crash` in a strong group of three Regions, writes in all three, the disk frozen at a
/// random I/O call (inside a writer's local commit or any of its applies elsewhere), power
/// lost. Right after each open, before any replication could be waited for, the three
/// Regions hold the same items, each key the value of its last acknowledged write (or of
/// the write in flight, if it survived), every held value exactly once in each Region's
/// stream and no value twice: an acknowledged write is neither lost nor doubled anywhere.
fn run_strong_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    let mut writes: Writes = BTreeMap::new();
    for round in 0..rng.random_range(2..4) {
        let db = Database::open_with_fs(sim.fs(), dir, options())
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        if round == 0 {
            create_strong(&db)?;
        } else {
            verify_strong(&db, &STRONG_REGIONS, &writes)
                .map_err(|e| format!("round {round}: {e}"))?;
        }
        sim.freeze_after(Some(rng.random_range(0..600)));
        random_writes(
            &db,
            &mut rng,
            &STRONG_REGIONS,
            round,
            &mut writes,
            40,
            false,
        );
        sim.power_loss(rng.random());
        drop(db);
        sim.freeze_after(None);
    }
    let db = Database::open_with_fs(sim.fs(), dir, options())
        .map_err(|e| format!("last reopen failed: {e}"))?;
    verify_strong(&db, &STRONG_REGIONS, &writes).map_err(|e| format!("last round: {e}"))
}

/// What `run_strong_iteration` checks right after an open (its docs).
fn verify_strong(db: &Database, regions: &[&str], writes: &Writes) -> Result<(), String> {
    let held = items(db, regions[0])?;
    for region in &regions[1..] {
        let there = items(db, region)?;
        if there != held {
            return Err(format!(
                "at open {region} holds {there:?}, {} holds {held:?}",
                regions[0]
            ));
        }
    }
    let mut streams = Vec::with_capacity(regions.len());
    for region in regions {
        streams.push((*region, stream_values(db, region)?));
    }
    for (key, history) in writes {
        let actual = held.get(key).cloned();
        let allowed: Vec<Option<String>> = match history.iter().rposition(|(_, ack)| *ack) {
            // The last acknowledged write (a delete too: it was applied everywhere), or a
            // later one that was in flight.
            Some(at) => history[at..].iter().map(|(v, _)| v.clone()).collect(),
            None => std::iter::once(None)
                .chain(history.iter().map(|(v, _)| v.clone()))
                .collect(),
        };
        if !allowed.contains(&actual) {
            return Err(format!("{key} holds {actual:?}; allowed {allowed:?}"));
        }
        for value in history.iter().filter_map(|(v, _)| v.as_ref()) {
            for (region, counts) in &streams {
                let count = counts.get(value).copied().unwrap_or_default();
                if count > 1 || (actual.as_ref() == Some(value) && count != 1) {
                    return Err(format!("{value} is {count} times in {region}'s stream"));
                }
            }
        }
    }
    sound(db)
}

#[test]
fn strong_writes_are_in_every_region_at_open_through_power_cuts() {
    every_seed(run_strong_iteration);
}

/// The settings a group shares, as one member shows them: Time to Live's attribute, the
/// GSIs' names, the table's on-demand read cap.
type SharedSettings = (Option<String>, Vec<String>, Option<u64>);

fn shared_settings(db: &Database, region: &str) -> Result<SharedSettings, String> {
    let ttl = try_call(
        db,
        region,
        "DescribeTimeToLive",
        json!({"TableName": "Crash"}),
    )?;
    let table = try_call(db, region, "DescribeTable", json!({"TableName": "Crash"}))?;
    let indexes = table["Table"]["GlobalSecondaryIndexes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|gsi| gsi["IndexName"].as_str().map(str::to_string))
        .collect();
    Ok((
        ttl["TimeToLiveDescription"]["AttributeName"]
            .as_str()
            .map(str::to_string),
        indexes,
        table["Table"]["OnDemandThroughput"]["MaxReadRequestUnits"].as_u64(),
    ))
}

/// One random group-wide change of `current`, sent to a random member: Time to Live on or
/// off, GSI ByV created or deleted, a new on-demand read cap. Returns the request and the
/// settings it leads to.
fn random_settings_change(
    rng: &mut StdRng,
    current: &SharedSettings,
) -> (&'static str, Value, SharedSettings) {
    let (ttl, indexes, cap) = current.clone();
    match rng.random_range(0..3) {
        0 => {
            let enabled = ttl.is_none();
            (
                "UpdateTimeToLive",
                json!({"TableName": "Crash", "TimeToLiveSpecification": {"Enabled": enabled, "AttributeName": "expires"}}),
                (enabled.then(|| "expires".to_string()), indexes, cap),
            )
        }
        1 if indexes.iter().any(|name| name == "ByV") => (
            "UpdateTable",
            json!({"TableName": "Crash", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "ByV"}}]}),
            (ttl, vec!["ByG".to_string()], cap),
        ),
        1 => (
            "UpdateTable",
            json!({"TableName": "Crash",
                "AttributeDefinitions": [{"AttributeName": "v", "AttributeType": "S"}],
                "GlobalSecondaryIndexUpdates": [{"Create": {"IndexName": "ByV",
                    "KeySchema": [{"AttributeName": "v", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"}}}]}),
            (ttl, vec!["ByG".to_string(), "ByV".to_string()], cap),
        ),
        _ => {
            let units = rng.random_range(10..10_000u64);
            (
                "UpdateTable",
                json!({"TableName": "Crash", "OnDemandThroughput": {"MaxReadRequestUnits": units}}),
                (ttl, indexes, Some(units)),
            )
        }
    }
}

/// Power cut during a group-wide settings change (`replication::settings`): group `Crash`
/// of A and B, a few random settings changes sent to either member, the disk frozen at a
/// random I/O call (inside a change's version change, a backfill's batches, its status
/// change), power lost, the database reopened. After every open both members show the same
/// settings, those of the last acknowledged change or of the one in flight; once every
/// index is built, `Database::check` finds each member's indexes and expiry index exact.
fn run_settings_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    // The settings after the last acknowledged change, then the one in flight if any.
    let mut allowed: Vec<SharedSettings> = vec![(None, vec!["ByG".to_string()], None)];
    let rounds = rng.random_range(2..4);
    for round in 0..=rounds {
        let db = Database::open_with_fs(sim.fs(), dir, options())
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        if round == 0 {
            create(&db)?;
            for key in 0..KEYS {
                try_call(
                    &db,
                    A,
                    "PutItem",
                    json!({"TableName": "Crash", "Item": {
                        "pk": {"S": format!("k{key}")}, "g": {"S": "g"}, "v": {"S": format!("v{key}")},
                        "expires": {"N": "4000000000"}
                    }}),
                )?;
            }
            try_call(
                &db,
                A,
                "UpdateTable",
                json!({"TableName": "Crash", "ReplicaUpdates": [{"Create": {"RegionName": B}}]}),
            )?;
        }
        settle_settings(&db).map_err(|e| format!("round {round}: {e}"))?;
        let in_a = shared_settings(&db, A)?;
        let in_b = shared_settings(&db, B)?;
        if in_a != in_b {
            return Err(format!("round {round}: A shows {in_a:?}, B {in_b:?}"));
        }
        if !allowed.contains(&in_a) {
            return Err(format!(
                "round {round}: the members show {in_a:?}; allowed {allowed:?}"
            ));
        }
        if round == rounds {
            return Ok(());
        }
        allowed = vec![in_a];
        sim.freeze_after(Some(rng.random_range(0..150)));
        for _ in 0..rng.random_range(1..5) {
            let region = [A, B][rng.random_range(0..2)];
            let (operation, request, after) = random_settings_change(&mut rng, &allowed[0]);
            if try_call(&db, region, operation, request).is_err() {
                allowed.push(after);
                break;
            }
            allowed = vec![after];
        }
        sim.power_loss(rng.random());
        drop(db);
        sim.freeze_after(None);
    }
    Ok(())
}

/// Waits until the replica is filled and every member's indexes are built, then checks
/// every index and expiry index against the items.
fn settle_settings(db: &Database) -> Result<(), String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mut building = !db.replication_settled().map_err(|e| e.message)?;
        for region in [A, B] {
            let table = try_call(db, region, "DescribeTable", json!({"TableName": "Crash"}))?;
            building |= table["Table"]["GlobalSecondaryIndexes"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|gsi| gsi["IndexStatus"] != "ACTIVE");
        }
        if !building {
            break;
        }
        if std::time::Instant::now() > deadline {
            return Err("the members' indexes were not built".to_string());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    sound(db)
}

#[test]
fn a_settings_change_reaches_every_member_or_none_through_power_cuts() {
    every_seed(run_settings_iteration);
}

/// I/O calls a strong teardown makes, about (a version change each member, before it was
/// one): the freeze lands inside it or just after.
const TEARDOWN_IO_CALLS: u64 = 12;

/// Whether `region`'s table `Crash` is in the strong group: Some(true) a member, Some(false)
/// a regional table, None no table.
fn strong_member(db: &Database, region: &str) -> Result<Option<bool>, String> {
    match call(db, region, "DescribeTable", &json!({"TableName": "Crash"})) {
        Ok(table) => Ok(Some(table["Table"]["MultiRegionConsistency"] == "STRONG")),
        Err((code, _)) if code == "ResourceNotFoundException" => Ok(None),
        Err((code, message)) => Err(format!("{code}: {message}")),
    }
}

/// Power cut during a strong group's teardown (`replication::members`, one version change):
/// table `Crash` of A in a strong group with two replicas, a few items, then the UpdateTable
/// deleting both replicas with the disk frozen at a random I/O call, power lost, the
/// database reopened. After the open every Region agrees: all three still members of the
/// strong group, or A's table regional and the replicas gone; and `Database::check` is sound.
fn run_teardown_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    let acknowledged = {
        let db = Database::open_with_fs(sim.fs(), dir, options())
            .map_err(|e| format!("open failed: {e}"))?;
        create_strong(&db)?;
        for key in 0..KEYS {
            try_call(
                &db,
                STRONG_REGIONS[key as usize % 3],
                "PutItem",
                json!({"TableName": "Crash", "Item": {
                    "pk": {"S": format!("k{key}")}, "g": {"S": "g"}, "v": {"S": "v"}
                }}),
            )?;
        }
        // The replicas are filled (a replica being added refuses the teardown).
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !db.replication_settled().map_err(|e| e.message)? {
            if std::time::Instant::now() > deadline {
                return Err("the replicas were not filled".to_string());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        sim.freeze_after(Some(rng.random_range(0..TEARDOWN_IO_CALLS)));
        let answer = try_call(
            &db,
            A,
            "UpdateTable",
            json!({"TableName": "Crash", "ReplicaUpdates": [
                {"Delete": {"RegionName": STRONG_REGIONS[1]}}, {"Delete": {"RegionName": STRONG_REGIONS[2]}}
            ]}),
        );
        sim.power_loss(rng.random());
        drop(db);
        sim.freeze_after(None);
        answer.is_ok()
    };
    let db = Database::open_with_fs(sim.fs(), dir, options())
        .map_err(|e| format!("reopen failed: {e}"))?;
    let states: Vec<Option<bool>> = STRONG_REGIONS
        .iter()
        .map(|region| strong_member(&db, region))
        .collect::<Result<_, _>>()?;
    let whole = [Some(true); 3];
    let gone = [Some(false), None, None];
    if states != whole && states != gone {
        return Err(format!("the Regions disagree after the open: {states:?}"));
    }
    if acknowledged && states != gone {
        return Err(format!("an acknowledged teardown was lost: {states:?}"));
    }
    if items(&db, A)?.len() != KEYS as usize {
        return Err("A lost items".to_string());
    }
    sound(&db)
}

#[test]
fn a_strong_teardown_leaves_the_group_whole_or_gone_through_power_cuts() {
    every_seed(run_teardown_iteration);
}

/// `Database::check` finds every index, statistic and expiry index exact.
fn sound(db: &Database) -> Result<(), String> {
    let report = db.check().map_err(|e| e.to_string())?;
    if !report.is_sound() {
        return Err(report.problems.join("; "));
    }
    Ok(())
}

/// Runs `iteration` for each simulated disk's seed (module docs), naming the seed that fails.
fn every_seed(iteration: fn(u64) -> Result<(), String>) {
    let seeds = shoal_vfs::sim::crash_seeds(
        "SHOAL_GLOBAL_CRASH_ITERATIONS",
        "SHOAL_GLOBAL_CRASH_SEED",
        12,
    );
    for seed in seeds {
        if let Err(message) = iteration(seed) {
            panic!("seed {seed}: {message} (replay with SHOAL_GLOBAL_CRASH_SEED={seed})");
        }
    }
}

/// Table `Crash` of A in a strong group with replicas in the other [`STRONG_REGIONS`].
fn create_strong(db: &Database) -> Result<(), String> {
    create(db)?;
    try_call(
        db,
        A,
        "UpdateTable",
        json!({"TableName": "Crash", "MultiRegionConsistency": "STRONG", "ReplicaUpdates": [
            {"Create": {"RegionName": STRONG_REGIONS[1]}}, {"Create": {"RegionName": STRONG_REGIONS[2]}}
        ]}),
    )?;
    Ok(())
}
