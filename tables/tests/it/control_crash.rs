//! A power cut at any point inside CreateTable or DeleteTable leaves the table whole or
//! absent: never a catalog entry without its trees, never trees without a catalog entry
//! (the trees and the entry change in one manifest version). An acknowledged change
//! survives.

use std::path::Path;

use serde_json::{json, Value};
use shoal_tables::core::stats::STATS_TREE_NAME;
use shoal_tables::{Database, Durability, Options, StorageOptions};
use shoal_vfs::sim::SimFs;

fn options() -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::Sync,
            wal_segment_size_bytes: 1 << 20,
            memtable_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    }
}

fn create_request(name: &str) -> Value {
    json!({
        "TableName": name,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "g1", "AttributeType": "S"},
            {"AttributeName": "g2", "AttributeType": "N"},
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST",
        "GlobalSecondaryIndexes": [
            {"IndexName": "byG1", "KeySchema": [{"AttributeName": "g1", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}},
            {"IndexName": "byG2", "KeySchema": [{"AttributeName": "g2", "KeyType": "HASH"}], "Projection": {"ProjectionType": "KEYS_ONLY"}},
        ],
    })
}

/// Every table in the catalog has exactly its trees, and no other tree exists but the one
/// holding every table's statistics; the statistics agree with the tables.
fn check_consistent(db: &Database) -> Result<(), String> {
    let report = db.check().map_err(|e| e.to_string())?;
    if !report.is_sound() {
        return Err(format!("check: {:?}", report.problems));
    }
    let version = db.lsm().version();
    let mut expected_trees = Vec::new();
    if let Some(stats_tree) = db.lsm().tree_id(STATS_TREE_NAME) {
        expected_trees.push((stats_tree, STATS_TREE_NAME.to_string()));
    }
    for name in db.table_names() {
        let table = db.table(&name).map_err(|e| e.to_string())?;
        expected_trees.push((table.tree, table.id.clone()));
        for gsi in &table.global_indexes {
            expected_trees.push((gsi.tree, format!("{}/gsi/{}", table.id, gsi.name)));
        }
    }
    expected_trees.sort();
    let actual: Vec<_> = version
        .trees
        .iter()
        .map(|(id, t)| (*id, t.name.clone()))
        .collect();
    if actual != expected_trees {
        return Err(format!(
            "trees {actual:?} but the catalog describes {expected_trees:?}"
        ));
    }
    Ok(())
}

/// Runs `change` with the disk freezing after `mutations` mutating calls, cuts the power,
/// reopens and checks the catalog; returns (whether `change` succeeded, the reopened db).
fn crash_during(
    mutations: u64,
    seed: u64,
    change: impl FnOnce(&Database) -> bool,
) -> Result<(bool, Database), String> {
    let sim = SimFs::new();
    let dir = Path::new("/crash");
    {
        let db = Database::open_with_fs(sim.fs(), dir, options()).map_err(|e| e.to_string())?;
        db.execute("CreateTable", create_request("Keep"))
            .map_err(|e| e.to_string())?;
        sim.freeze_after(Some(mutations));
        let acknowledged = change(&db);
        sim.power_loss(seed);
        drop(db);
        sim.freeze_after(None);
        let db =
            Database::open_with_fs(sim.fs(), dir, options()).map_err(|e| format!("reopen: {e}"))?;
        check_consistent(&db)?;
        Ok((acknowledged, db))
    }
}

#[test]
fn create_table_is_all_or_nothing() {
    let mut outcomes = [0usize; 2];
    for mutations in 0..24 {
        let (acknowledged, db) = crash_during(mutations, mutations * 7 + 1, |db| {
            db.execute("CreateTable", create_request("New")).is_ok()
        })
        .unwrap_or_else(|e| panic!("freeze after {mutations}: {e}"));
        let present = db.table("New").is_ok();
        assert!(
            present || !acknowledged,
            "freeze after {mutations}: an acknowledged CreateTable was lost"
        );
        assert!(db.table("Keep").is_ok());
        outcomes[usize::from(present)] += 1;
    }
    assert!(
        outcomes[0] > 0 && outcomes[1] > 0,
        "both outcomes were exercised: {outcomes:?}"
    );
}

#[test]
fn delete_table_is_all_or_nothing() {
    let mut outcomes = [0usize; 2];
    for mutations in 0..24 {
        let (acknowledged, db) = crash_during(mutations, mutations * 13 + 5, |db| {
            db.execute("DeleteTable", json!({"TableName": "Keep"}))
                .is_ok()
        })
        .unwrap_or_else(|e| panic!("freeze after {mutations}: {e}"));
        let present = db.table("Keep").is_ok();
        assert!(
            !(present && acknowledged),
            "freeze after {mutations}: an acknowledged DeleteTable came back"
        );
        outcomes[usize::from(present)] += 1;
    }
    assert!(
        outcomes[0] > 0 && outcomes[1] > 0,
        "both outcomes were exercised: {outcomes:?}"
    );
}
