//! Power cuts during an online GSI backfill: the disk freezes at a random point after
//! UpdateTable (inside the catalog change, a backfill batch, a flush, the ACTIVE switch),
//! or the power goes at a random moment, and the database is reopened. After every crash:
//! - an index the catalog says is ACTIVE holds exactly the entries derived from the base
//!   items (`Database::check`, right after reopening, before any resumed work);
//! - a CREATING index is backfilled again and becomes ACTIVE, complete;
//! - Query on it returns exactly the items of the model.
//!
//! `SHOAL_GSI_CRASH_ITERATIONS` sets the number of simulated disks (default 12);
//! `SHOAL_GSI_CRASH_SEED` replays one.

use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_tables::{Database, Durability, Options, StorageOptions};
use shoal_vfs::sim::SimFs;

const ITEMS: u32 = 1000;
const CITIES: u32 = 3;

fn options() -> Options {
    Options {
        // Tiny memtables and segments: flushes and WAL rotation happen during the backfill.
        storage: StorageOptions {
            durability: Durability::Sync,
            memtable_size_bytes: 4 << 10,
            wal_segment_size_bytes: 16 << 10,
            ..StorageOptions::default()
        },
        ..Options::default()
    }
}

fn create_index(db: &Database) -> Result<Value, shoal_model::ApiError> {
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
                "Projection": {"ProjectionType": "ALL"}
            }}]
        }),
    )
}

fn index_status(db: &Database) -> Result<Option<String>, String> {
    let table = db
        .execute("DescribeTable", json!({"TableName": "Users"}))
        .map_err(|e| e.to_string())?;
    Ok(table["Table"]["GlobalSecondaryIndexes"][0]["IndexStatus"]
        .as_str()
        .map(str::to_string))
}

fn wait_active(db: &Database) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while index_status(db)?.as_deref() != Some("ACTIVE") {
        if Instant::now() > deadline {
            return Err("the index never became ACTIVE".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

fn check(db: &Database, when: &str) -> Result<(), String> {
    let report = db
        .check()
        .map_err(|e| format!("{when}: check failed: {e}"))?;
    if report.is_sound() {
        Ok(())
    } else {
        Err(format!(
            "{when}: {}",
            report.problems[..report.problems.len().min(3)].join("; ")
        ))
    }
}

/// Ids in city `c<city>`, ordered by age, as Query returns them (all pages).
fn query_city(db: &Database, city: u32) -> Result<Vec<String>, String> {
    let mut ids = Vec::new();
    let mut start: Option<Value> = None;
    loop {
        let mut request = json!({"TableName": "Users", "IndexName": "ByCity",
               "KeyConditionExpression": "city = :c",
               "ExpressionAttributeValues": {":c": {"S": format!("c{city}")}},
               "Limit": 40});
        if let Some(key) = start.take() {
            request["ExclusiveStartKey"] = key;
        }
        let page = db.execute("Query", request).map_err(|e| e.to_string())?;
        for item in page["Items"].as_array().into_iter().flatten() {
            ids.push(item["id"]["S"].as_str().unwrap_or_default().to_string());
        }
        match page.get("LastEvaluatedKey") {
            Some(key) => start = Some(key.clone()),
            None => return Ok(ids),
        }
    }
}

fn run_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    {
        let db = Database::open_with_fs(sim.fs(), dir, options()).map_err(|e| e.to_string())?;
        db.execute(
            "CreateTable",
            json!({
                "TableName": "Users",
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "BillingMode": "PAY_PER_REQUEST"
            }),
        )
        .map_err(|e| e.to_string())?;
        for n in 0..ITEMS {
            db.execute(
                "PutItem",
                json!({"TableName": "Users", "Item": {
                    "id": {"S": format!("u{n:04}")},
                    "city": {"S": format!("c{}", n % CITIES)},
                    "age": {"N": n.to_string()}}}),
            )
            .map_err(|e| format!("load: {e}"))?;
        }
        if rng.random_bool(0.8) {
            // Small budgets cut the catalog change itself; large ones the batches.
            let budget_max = if rng.random_bool(0.3) { 12 } else { 400 };
            sim.freeze_after(Some(rng.random_range(0..budget_max)));
        }
        // May fail if the disk froze inside its catalog change.
        let _ = create_index(&db);
        std::thread::sleep(Duration::from_millis(rng.random_range(0..400)));
        sim.power_loss(rng.random());
        // Dropping stops the backfill (its writes now fail on the dead disk).
    }

    let db = Database::open_with_fs(sim.fs(), dir, options())
        .map_err(|e| format!("reopen failed: {e}"))?;
    // Whatever survived, an index marked ACTIVE must already be complete.
    check(&db, "right after reopening")?;
    match index_status(&db)? {
        None => {
            create_index(&db).map_err(|e| format!("create after crash: {e}"))?;
        }
        Some(status) if status == "ACTIVE" || status == "CREATING" => {}
        Some(other) => return Err(format!("unexpected index status {other}")),
    }
    wait_active(&db)?;
    check(&db, "after the resumed backfill")?;
    for city in 0..CITIES {
        let expected: Vec<String> = (0..ITEMS)
            .filter(|n| n % CITIES == city)
            .map(|n| format!("u{n:04}"))
            .collect();
        let got = query_city(&db, city)?;
        if got != expected {
            return Err(format!(
                "city c{city}: {} items from Query, {} expected",
                got.len(),
                expected.len()
            ));
        }
    }
    Ok(())
}

#[test]
fn a_backfill_cut_by_power_loss_completes_after_reopening() {
    let seeds =
        shoal_vfs::sim::crash_seeds("SHOAL_GSI_CRASH_ITERATIONS", "SHOAL_GSI_CRASH_SEED", 12);
    for seed in seeds {
        if let Err(message) = run_iteration(seed) {
            panic!("seed {seed}: {message} (replay with SHOAL_GSI_CRASH_SEED={seed})");
        }
    }
}
