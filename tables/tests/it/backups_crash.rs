//! A power cut at any point inside CreateBackup, RestoreTableFromBackup or
//! RestoreTableToPointInTime leaves the backup (or the restored table) whole or absent, never
//! partial; one inside DeleteTable of a table with point-in-time recovery leaves its SYSTEM
//! backup whenever the table is gone, and never two; the database checks sound after
//! every reopen. A cut after the restored table became durable but before its statistics
//! were written is among the points: the open rebuilds them.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use shoal_tables::api::backups::{CreateBackupInput, ListBackupsInput};
use shoal_tables::{Database, Durability, Options, StorageOptions};
use shoal_vfs::sim::SimFs;

use crate::restore_support;
use restore_support::{create_indexed_source, enable_pitr};

const DIR: &str = "/crash";

/// A 16 KiB memtable, so that operations flush in the background while the power is cut.
const MEMTABLE_SMALL_BYTES: usize = 16 << 10;

fn options(memtable_size_bytes: usize) -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::Sync,
            wal_segment_size_bytes: 1 << 20,
            memtable_size_bytes,
            ..StorageOptions::default()
        },
        ..Options::default()
    }
}

fn open(sim: &SimFs) -> Database {
    open_with_memtable(sim, MEMTABLE_SMALL_BYTES)
}

fn open_with_memtable(sim: &SimFs, memtable_size_bytes: usize) -> Database {
    Database::open_with_fs(sim.fs(), Path::new(DIR), options(memtable_size_bytes)).unwrap()
}

/// A table with an LSI and a GSI holding 60 items, some flushed, some only in the WAL.
fn populate(db: &Database) {
    create_indexed_source(db, "Source");
    for i in 0..60u64 {
        db.execute(
            "PutItem",
            json!({"TableName": "Source", "Item": {
                "pk": {"S": format!("p{}", i % 7)},
                "sk": {"N": i.to_string()},
                "l": {"S": format!("l{}", i % 3)},
                "g": {"S": format!("g{}", i % 4)},
                "body": {"S": "y".repeat(400)},
            }}),
        )
        .unwrap();
        if i == 40 {
            db.lsm().flush_all().unwrap();
        }
    }
}

/// Populates a table with point-in-time recovery, then cuts the power `mutations` disk
/// changes into `operation` (`seed` picks what unsynced data survives). Returns the disk,
/// the table's items before the operation, and whether the operation was acknowledged.
fn populate_with_pitr_then_cut_power_during(
    operation: &str,
    request: Value,
    mutations: u64,
    seed: u64,
) -> (SimFs, BTreeMap<String, Value>, bool) {
    let sim = SimFs::new();
    let db = open(&sim);
    populate(&db);
    enable_pitr(&db, "Source");
    let expected = scan(&db, "Source");
    sim.freeze_after(Some(mutations));
    let acknowledged = db.execute(operation, request).is_ok();
    sim.power_loss(seed);
    sim.freeze_after(None);
    drop(db);
    (sim, expected, acknowledged)
}

fn scan(db: &Database, table: &str) -> BTreeMap<String, Value> {
    let page = db.execute("Scan", json!({"TableName": table})).unwrap();
    assert!(page.get("LastEvaluatedKey").is_none());
    page["Items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                json!({"pk": item["pk"], "sk": item["sk"]}).to_string(),
                item.clone(),
            )
        })
        .collect()
}

fn assert_sound(db: &Database, context: &str) {
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{context}: {:?}", report.problems);
}

fn backup(db: &Database) -> Result<String, shoal_model::ApiError> {
    db.create_backup(CreateBackupInput {
        table_name: Some("Source".into()),
        backup_name: Some("crashing".into()),
    })
    .map(|output| output.backup_details.backup_arn)
}

fn listed(db: &Database) -> Vec<String> {
    db.list_backups(ListBackupsInput::default())
        .unwrap()
        .backup_summaries
        .into_iter()
        .map(|summary| summary.backup_arn)
        .collect()
}

/// No directory under `backups/` lacks its description after an open.
fn assert_no_partial_backup(sim: &SimFs, context: &str) {
    let fs = sim.fs();
    let root = Path::new(DIR).join("backups");
    if !fs.exists(&root) {
        return;
    }
    for id in fs.list(&root).unwrap() {
        assert!(
            fs.exists(&root.join(&id).join("backup.json")),
            "{context}: a partial backup {id} is left"
        );
    }
}

#[test]
fn a_crash_during_create_backup_leaves_the_backup_whole_or_absent() {
    let mut outcomes = [0usize; 2];
    for mutations in 0..150u64 {
        let context = format!("freeze after {mutations}");
        let sim = SimFs::new();
        let expected = {
            let db = open(&sim);
            populate(&db);
            let expected = scan(&db, "Source");
            sim.freeze_after(Some(mutations));
            let acknowledged = backup(&db).is_ok();
            sim.power_loss(mutations * 7 + 3);
            sim.freeze_after(None);
            drop(db);
            (expected, acknowledged)
        };
        let (expected, acknowledged) = expected;
        let db = open(&sim);
        assert_no_partial_backup(&sim, &context);
        assert_sound(&db, &context);
        let arns = listed(&db);
        assert!(arns.len() <= 1, "{context}");
        assert!(
            !acknowledged || arns.len() == 1,
            "{context}: an acknowledged backup was lost"
        );
        if let Some(arn) = arns.first() {
            db.execute(
                "RestoreTableFromBackup",
                json!({"TargetTableName": "Copy", "BackupArn": arn}),
            )
            .unwrap_or_else(|e| panic!("{context}: {e:?}"));
            assert_eq!(scan(&db, "Copy"), expected, "{context}");
            assert_sound(&db, &context);
        }
        outcomes[arns.len()] += 1;
    }
    assert!(
        outcomes[0] > 0 && outcomes[1] > 0,
        "both outcomes were exercised: {outcomes:?}"
    );
}

#[test]
fn a_crash_during_a_restore_leaves_the_table_whole_or_absent() {
    // The memtable holds the whole restore, so no background flush shares the countdown to
    // the freeze: each count cuts the restore itself at the same point on every machine.
    // (With a small memtable, a loaded machine's flush timing moved the narrow window
    // between the restored table becoming durable and its acknowledgement past the counts
    // tried.) Populate still flushes part of the source, so the backup reads SSTables.
    let memtable_size_bytes = 64 << 20;
    // [absent, present and acknowledged, present but not acknowledged]
    let mut outcomes = [0usize; 3];
    for mutations in 0..60u64 {
        let context = format!("freeze after {mutations}");
        let sim = SimFs::new();
        let (expected, acknowledged) = {
            let db = open_with_memtable(&sim, memtable_size_bytes);
            populate(&db);
            let expected = scan(&db, "Source");
            let arn = backup(&db).unwrap();
            sim.freeze_after(Some(mutations));
            let acknowledged = db
                .execute(
                    "RestoreTableFromBackup",
                    json!({"TargetTableName": "Copy", "BackupArn": arn}),
                )
                .is_ok();
            sim.power_loss(mutations * 11 + 1);
            sim.freeze_after(None);
            drop(db);
            (expected, acknowledged)
        };
        let db = open_with_memtable(&sim, memtable_size_bytes);
        // A restored table whose statistics a crash cut short is rebuilt by the open, so
        // the check (which compares them with the items) passes in every case.
        assert_sound(&db, &context);
        let present = db.table("Copy").is_ok();
        assert!(
            present || !acknowledged,
            "{context}: an acknowledged restore was lost"
        );
        if present {
            assert_eq!(scan(&db, "Copy"), expected, "{context}");
            let description = db
                .execute("DescribeTable", json!({"TableName": "Copy"}))
                .unwrap();
            assert_eq!(
                description["Table"]["ItemCount"],
                json!(expected.len()),
                "{context}"
            );
        }
        assert_eq!(listed(&db).len(), 1, "{context}: the backup survives");
        outcomes[match (present, acknowledged) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 2,
        }] += 1;
    }
    assert!(
        outcomes.iter().all(|&n| n > 0),
        "absent, acknowledged and cut-short restores were all exercised: {outcomes:?}"
    );
}

/// Waits until the GSIs of `table` are ACTIVE: a point-in-time restore's are rebuilt by the
/// backfill, which an open resumes.
fn wait_for_indexes(db: &Database, table: &str, context: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let description = db
            .execute("DescribeTable", json!({"TableName": table}))
            .unwrap();
        let active = description["Table"]["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|gsi| gsi["IndexStatus"] == "ACTIVE");
        if active {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{context}: {description}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_crash_during_a_point_in_time_restore_leaves_the_table_whole_or_absent() {
    // [absent, present and acknowledged, present but not acknowledged]
    let mut outcomes = [0usize; 3];
    for mutations in 0..60u64 {
        let context = format!("freeze after {mutations}");
        let (sim, expected, acknowledged) = populate_with_pitr_then_cut_power_during(
            "RestoreTableToPointInTime",
            json!({"SourceTableName": "Source", "TargetTableName": "Copy",
                   "UseLatestRestorableTime": true}),
            mutations,
            mutations * 13 + 5,
        );
        let db = open(&sim);
        let present = db.table("Copy").is_ok();
        assert!(
            present || !acknowledged,
            "{context}: an acknowledged restore was lost"
        );
        if present {
            wait_for_indexes(&db, "Copy", &context);
            assert_eq!(scan(&db, "Copy"), expected, "{context}");
            let description = db
                .execute("DescribeTable", json!({"TableName": "Copy"}))
                .unwrap();
            assert_eq!(
                description["Table"]["ItemCount"],
                json!(expected.len()),
                "{context}"
            );
        }
        assert_sound(&db, &context);
        outcomes[match (present, acknowledged) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 2,
        }] += 1;
    }
    assert!(
        outcomes[0] > 0 && outcomes[1] > 0,
        "absent and acknowledged restores were both exercised: {outcomes:?}"
    );
}

fn system_backups(db: &Database) -> Vec<String> {
    db.list_backups(ListBackupsInput {
        backup_type: Some("SYSTEM".into()),
        ..ListBackupsInput::default()
    })
    .unwrap()
    .backup_summaries
    .into_iter()
    .map(|summary| summary.backup_arn)
    .collect()
}

#[test]
fn a_crash_during_delete_table_leaves_one_system_backup_whenever_the_table_is_gone() {
    // [table gone, table left without its backup, table left with its backup]
    let mut outcomes = [0usize; 3];
    for mutations in 0..90u64 {
        let context = format!("freeze after {mutations}");
        let (sim, expected, acknowledged) = populate_with_pitr_then_cut_power_during(
            "DeleteTable",
            json!({"TableName": "Source"}),
            mutations,
            mutations * 17 + 3,
        );
        let db = open(&sim);
        assert_no_partial_backup(&sim, &context);
        let present = db.table("Source").is_ok();
        assert!(
            !present || !acknowledged,
            "{context}: an acknowledged DeleteTable was undone"
        );
        let before_retry = system_backups(&db).len();
        outcomes[match (present, before_retry) {
            (false, _) => 0,
            (true, 0) => 1,
            (true, _) => 2,
        }] += 1;
        if present {
            db.execute("DeleteTable", json!({"TableName": "Source"}))
                .unwrap_or_else(|e| panic!("{context}: {e:?}"));
        }
        let arns = system_backups(&db);
        assert_eq!(arns.len(), 1, "{context}: exactly one system backup");
        db.execute(
            "RestoreTableFromBackup",
            json!({"TargetTableName": "Copy", "BackupArn": arns[0]}),
        )
        .unwrap_or_else(|e| panic!("{context}: {e:?}"));
        assert_eq!(scan(&db, "Copy"), expected, "{context}");
        assert_sound(&db, &context);
    }
    assert!(
        outcomes.iter().all(|&n| n > 0),
        "a deleted table, a table cut before its backup and one cut after it were all \
         exercised: {outcomes:?}"
    );
}
