//! The open flushes what WAL replay put into memtables to L0 before it returns (`Db::open_with_fs`):
//!
//! - a power cut at any point of that open, after a process crash left the log's tail
//!   unsynced, keeps every acknowledged batch, a prefix of the written ones, each batch whole
//!   across its two trees; and once such an open has returned, everything it replayed is
//!   durable;
//! - reads after it find the replayed data in L0, not in memtables;
//! - an open with nothing to replay writes no SSTable, and a disk too full for the flush
//!   still opens, with the replayed data readable and flushed once there is room.

use std::path::Path;

use shoal_engine::{Db, DbError, DbOptions, Durability, TreeId, WriteBatch};

use crate::scan_all;
use shoal_vfs::sim::SimFs;

/// Batches acknowledged in `sync` mode before the crash.
const SYNCED_BATCHES: u64 = 60;
/// Batches written in `none` mode after them: in the page cache only when the process dies.
const UNSYNCED_BATCHES: u64 = 60;

fn options(durability: Durability) -> DbOptions {
    DbOptions {
        durability,
        // Small segments: the replayed log spans several, the unsynced tail in the last.
        wal_segment_size_bytes: 8 << 10,
        // Nothing flushes or compacts but what the test and the open do.
        background_flush: false,
        compaction_threads: 0,
        ..DbOptions::default()
    }
}

fn trees(db: &Db) -> (TreeId, TreeId) {
    let get = |name: &str| {
        db.tree_id(name)
            .unwrap_or_else(|| db.create_tree(name).unwrap())
    };
    (get("log"), get("mirror"))
}

fn key(i: u64) -> Vec<u8> {
    format!("{i:08}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value {i} ").repeat(8).into_bytes()
}

/// Batch `i` writes the same entry into both trees.
fn write(db: &Db, i: u64) {
    let (log, mirror) = trees(db);
    let mut batch = WriteBatch::new();
    batch.put(log, &key(i), &value(i)).unwrap();
    batch.put(mirror, &key(i), &value(i)).unwrap();
    db.write(batch).unwrap();
}

/// Opens the database of `sim` as the restarted process does.
fn open(sim: &SimFs) -> Result<Db, DbError> {
    Db::open_with_fs(sim.fs(), Path::new("/data"), options(Durability::Sync))
}

/// Checks that both trees hold batches 0..n and nothing else; returns n.
fn recovered_batches(db: &Db) -> Result<u64, String> {
    let (log, mirror) = trees(db);
    let logged = scan_all(db, log);
    for (i, (k, v)) in logged.iter().enumerate() {
        if *k != key(i as u64) || *v != value(i as u64) {
            return Err(format!("batch {i} missing or wrong: a hole in the prefix"));
        }
    }
    if scan_all(db, mirror) != logged {
        return Err("the trees disagree: a batch was kept in one tree only".into());
    }
    Ok(logged.len() as u64)
}

/// L0 files of each tree of [`crashed_database`]: its explicit flush, and its second open's.
const L0_FILES_BEFORE_THE_OPEN: usize = 2;

/// A database whose process died after `SYNCED_BATCHES` synced and `UNSYNCED_BATCHES`
/// unsynced batches, with a flush and a reopen among the synced ones: the log's tail is
/// written but not durable.
fn crashed_database() -> SimFs {
    let sim = SimFs::new();
    let db = open(&sim).unwrap();
    for i in 0..SYNCED_BATCHES {
        if i == SYNCED_BATCHES / 2 {
            db.flush_all().unwrap();
        }
        write(&db, i);
    }
    drop(db);
    let db = Db::open_with_fs(sim.fs(), Path::new("/data"), options(Durability::None)).unwrap();
    for i in SYNCED_BATCHES..SYNCED_BATCHES + UNSYNCED_BATCHES {
        write(&db, i);
    }
    // A killed process syncs nothing on its way out (a dropped handle syncs the log).
    sim.fail_syncs(true);
    drop(db);
    sim.fail_syncs(false);
    sim
}

#[test]
fn a_power_cut_inside_the_recovery_flush_keeps_acknowledged_atomic_batches() {
    let mut completed_opens = 0;
    for mutations in 0..120 {
        let sim = crashed_database();
        sim.freeze_after(Some(mutations));
        let opened = open(&sim);
        let open_returned = opened.is_ok();
        sim.power_loss(mutations);
        drop(opened);
        let db = open(&sim)
            .unwrap_or_else(|e| panic!("cut after {mutations} mutations: reopen failed: {e}"));
        let recovered = recovered_batches(&db)
            .unwrap_or_else(|e| panic!("cut after {mutations} mutations: {e}"));
        assert!(
            (SYNCED_BATCHES..=SYNCED_BATCHES + UNSYNCED_BATCHES).contains(&recovered),
            "cut after {mutations} mutations: {recovered} batches recovered"
        );
        if open_returned {
            completed_opens += 1;
            // The open replayed and flushed every batch: none may be lost after it.
            assert_eq!(
                recovered,
                SYNCED_BATCHES + UNSYNCED_BATCHES,
                "cut after {mutations} mutations: the open returned, then lost replayed batches"
            );
        }
    }
    assert!(
        completed_opens > 0 && completed_opens < 120,
        "the cuts must land both inside the open and after it ({completed_opens} opens returned)"
    );
}

#[test]
fn reads_after_a_recovery_find_the_replayed_data_in_l0() {
    let sim = crashed_database();
    let db = open(&sim).unwrap();
    let (log, mirror) = trees(&db);
    for tree in [log, mirror] {
        assert_eq!(
            db.tree_stats(tree).unwrap().level_files[0],
            L0_FILES_BEFORE_THE_OPEN + 1
        );
    }
    assert_eq!(db.stats().write_buffer_bytes, 0, "no memtable holds data");
    assert_eq!(
        recovered_batches(&db).unwrap(),
        SYNCED_BATCHES + UNSYNCED_BATCHES
    );
}

#[test]
fn an_open_with_nothing_to_replay_writes_no_sstable() {
    let sim = crashed_database();
    drop(open(&sim).unwrap());
    let db = open(&sim).unwrap();
    let (log, mirror) = trees(&db);
    for tree in [log, mirror] {
        assert_eq!(
            db.tree_stats(tree).unwrap().level_files[0],
            L0_FILES_BEFORE_THE_OPEN + 1
        );
    }
    assert_eq!(db.stats().flush_bytes_written, 0);
}

/// L0 files of both trees together.
fn l0_files(db: &Db) -> usize {
    let (log, mirror) = trees(db);
    [log, mirror]
        .into_iter()
        .map(|tree| db.tree_stats(tree).unwrap().level_files[0])
        .sum()
}

#[test]
fn a_disk_too_full_for_the_recovery_flush_still_opens_and_flushes_once_there_is_room() {
    let mut opened_full = 0;
    for mutations in 0..120 {
        let sim = crashed_database();
        // The disk fills somewhere in the open: in the log's recovery (which fails the open,
        // as before), in the flush, or not at all.
        sim.full_after(Some(mutations));
        let Ok(db) = open(&sim) else {
            continue;
        };
        if db.out_of_space().is_none() {
            continue;
        }
        opened_full += 1;
        assert!(
            l0_files(&db) < 2 * (L0_FILES_BEFORE_THE_OPEN + 1),
            "a flush failed, yet both trees have their file"
        );
        assert_eq!(
            recovered_batches(&db).unwrap(),
            SYNCED_BATCHES + UNSYNCED_BATCHES
        );
        sim.set_space_bytes(None);
        db.flush_all().unwrap();
        assert_eq!(l0_files(&db), 2 * (L0_FILES_BEFORE_THE_OPEN + 1));
        assert_eq!(
            recovered_batches(&db).unwrap(),
            SYNCED_BATCHES + UNSYNCED_BATCHES
        );
    }
    assert!(opened_full > 0, "the disk never filled inside the flush");
}
