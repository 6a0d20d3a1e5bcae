//! A full disk stops writes without poisoning the database, and once space is freed writes,
//! flushes and compactions go on without a restart: nothing acknowledged is lost, nothing
//! refused appears (`out_of_space.rs`). The simulated disk fills at every mutating call of a
//! round of writes (with WAL rotations), a flush and a compaction, in turn; the background
//! test then checks that the flusher's own retries bring writes back.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use shoal_compaction::PolicyOptions;
use shoal_engine::{Db, DbError, DbOptions, Durability, WriteBatch};
use shoal_vfs::sim::SimFs;

const DIR: &str = "/db";

fn options(background: bool) -> DbOptions {
    DbOptions {
        durability: Durability::Sync,
        memtable_size_bytes: 16 << 10,
        wal_segment_size_bytes: 4 << 10,
        background_flush: background,
        compaction_threads: usize::from(background),
        compaction: PolicyOptions {
            l0_trigger_files: 4,
            ..PolicyOptions::default()
        },
        ..DbOptions::default()
    }
}

fn value(key: &str) -> Vec<u8> {
    format!("{key}:{}", "v".repeat(150)).into_bytes()
}

/// What the database was told and answered.
#[derive(Default)]
struct Model {
    acknowledged: BTreeMap<String, Vec<u8>>,
    refused: Vec<String>,
}

impl Model {
    /// Writes `key`: acknowledged, or refused for want of space (anything else fails).
    fn put(&mut self, db: &Db, tree: u32, key: String) {
        let mut batch = WriteBatch::new();
        batch.put(tree, key.as_bytes(), &value(&key)).unwrap();
        match db.write(batch) {
            Ok(_) => {
                self.acknowledged.insert(key.clone(), value(&key));
            }
            Err(error) => {
                assert_no_space(&error, db, &key);
                self.refused.push(key);
            }
        }
    }

    /// Every acknowledged key reads back; no refused key does.
    fn check(&self, db: &Db, tree: u32, context: &str) {
        for (key, value) in &self.acknowledged {
            let read = db.get(tree, key.as_bytes(), None).unwrap();
            assert_eq!(read.as_ref(), Some(value), "{context}: {key} lost");
        }
        for key in &self.refused {
            let read = db.get(tree, key.as_bytes(), None).unwrap();
            assert_eq!(read, None, "{context}: refused {key} applied");
        }
    }
}

fn assert_no_space(error: &DbError, db: &Db, what: &str) {
    assert!(
        error.is_no_space(),
        "{what}: expected a full disk, got {error}"
    );
    assert_eq!(
        db.poisoned(),
        None,
        "{what}: a full disk poisoned the database"
    );
}

/// How far one run got while the disk was full.
#[derive(Default)]
struct Refusals {
    writes: usize,
    flush: bool,
    compaction: bool,
}

/// Three flushed rounds of writes, then the disk fills after `fill_at` mutating calls of a
/// fourth, larger round (with WAL rotations), its flush (the fourth L0 file) and the
/// compaction it makes due.
fn run_until_full(sim: &SimFs, fill_at: u64) -> (Db, u32, Model, Refusals) {
    let db = Db::open_with_fs(sim.fs(), Path::new(DIR), options(false)).unwrap();
    let tree = db.create_tree("t").unwrap();
    let mut model = Model::default();
    for round in 0..3 {
        for i in 0..20 {
            model.put(&db, tree, format!("r{round}-{i:02}"));
        }
        db.flush_all().unwrap();
    }
    let mut refusals = Refusals::default();
    sim.full_after(Some(fill_at));
    // About 13 KiB: past the segments the flushes above recycled, so the log must grow.
    for i in 0..80 {
        model.put(&db, tree, format!("r3-{i:02}"));
    }
    refusals.writes = model.refused.len();
    if let Err(error) = db.flush_all() {
        assert_no_space(&error, &db, "flush");
        refusals.flush = true;
    }
    if let Err(error) = db.compact_until_idle() {
        assert_no_space(&error, &db, "compaction");
        refusals.compaction = true;
    }
    (db, tree, model, refusals)
}

#[test]
fn every_io_call_of_writes_a_flush_and_a_compaction_can_meet_a_full_disk() {
    let mut seen = Refusals::default();
    let mut fill_at = 0;
    loop {
        let context = format!("disk full after {fill_at} calls");
        let sim = SimFs::new();
        let (db, tree, mut model, refusals) = run_until_full(&sim, fill_at);
        seen.writes += refusals.writes;
        seen.flush |= refusals.flush;
        seen.compaction |= refusals.compaction;
        let reached_the_end = refusals.writes == 0 && !refusals.flush && !refusals.compaction;
        model.check(&db, tree, &context);
        if fill_at % 2 == 0 {
            // Space is freed: the same flush and compaction succeed, writes are accepted,
            // without a reopen.
            sim.set_space_bytes(None);
            db.flush_all()
                .unwrap_or_else(|error| panic!("{context}: flush after freeing: {error}"));
            db.compact_until_idle()
                .unwrap_or_else(|error| panic!("{context}: compaction after freeing: {error}"));
            for i in 0..30 {
                model.put(&db, tree, format!("r4-{i:02}"));
            }
            assert!(
                model.refused.len() == refusals.writes,
                "{context}: refused after freeing"
            );
            assert_eq!(db.out_of_space(), None, "{context}");
            model.check(&db, tree, &context);
            drop(db);
        } else {
            // The power goes while the disk is still full.
            sim.power_loss(fill_at);
            drop(db);
            sim.set_space_bytes(None);
        }
        let db = Db::open_with_fs(sim.fs(), Path::new(DIR), options(false))
            .unwrap_or_else(|error| panic!("{context}: reopen: {error}"));
        model.check(&db, tree, &format!("{context}, reopened"));
        drop(db);
        if reached_the_end {
            break;
        }
        fill_at += 1;
        assert!(fill_at < 5_000, "the run never got past the full disk");
    }
    assert!(seen.writes > 0, "no write met the full disk");
    assert!(seen.flush, "no flush met the full disk");
    assert!(seen.compaction, "no compaction met the full disk");
}

/// Polls `done` every 10 ms for up to `bound`.
fn wait_for(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done()
}

#[test]
fn the_background_flusher_retries_and_writes_resume_once_space_is_freed() {
    for room in [0u64, 3_000, 20_000, 60_000] {
        let context = format!("room for {room} more bytes");
        let sim = SimFs::new();
        let db = Db::open_with_fs(sim.fs(), Path::new(DIR), options(true)).unwrap();
        let tree = db.create_tree("t").unwrap();
        let mut model = Model::default();
        sim.set_space_bytes(Some(sim.used_bytes() + room));
        // Writes go on until the log or a flush the writers wait for runs out of room:
        // memtables of 16 KiB and segments of 4 KiB fill within a few hundred writes.
        let mut i = 0;
        while model.refused.is_empty() {
            model.put(&db, tree, format!("k{i:05}"));
            i += 1;
            assert!(i < 20_000, "{context}: the disk never filled");
        }
        let reason = db.out_of_space().expect("out_of_space says why");
        assert!(reason.starts_with("disk full"), "{context}: {reason}");
        model.check(&db, tree, &context);

        sim.set_space_bytes(None);
        // The back-off is at most 5 s; 60 s allows for a loaded machine.
        let mut next = i;
        let resumed = wait_for(Duration::from_secs(60), || {
            let key = format!("k{next:05}");
            next += 1;
            let mut batch = WriteBatch::new();
            batch.put(tree, key.as_bytes(), &value(&key)).unwrap();
            match db.write(batch) {
                Ok(_) => {
                    model.acknowledged.insert(key.clone(), value(&key));
                    true
                }
                Err(error) => {
                    assert_no_space(&error, &db, &key);
                    model.refused.push(key);
                    false
                }
            }
        });
        assert!(resumed, "{context}: writes did not resume");
        // One write getting through is not yet the end of the episode: a memtable that fills
        // again waits on the flush, which is refused at once until the flusher's next retry
        // (at most 5 s after the last) has written it. Once that has happened, nothing is.
        assert!(
            wait_for(Duration::from_secs(60), || db.out_of_space().is_none()),
            "{context}: still out of space: {:?}",
            db.out_of_space()
        );
        for j in 0..500 {
            model.put(&db, tree, format!("after-{j:03}"));
        }
        assert!(
            model.refused.iter().all(|key| key.starts_with('k')),
            "{context}: refused after resuming"
        );
        model.check(&db, tree, &context);
        drop(db);
        let db = Db::open_with_fs(sim.fs(), Path::new(DIR), options(true)).unwrap();
        model.check(&db, tree, &format!("{context}, reopened"));
    }
}
