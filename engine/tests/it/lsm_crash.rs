//! Fault injection for invariants 1–4 (docs/DESIGN.md §7): random multi-tree workloads on the
//! simulated disk, a power loss at a random point, reopen, and check that
//!
//! 1. every batch acknowledged in `sync` mode is present;
//! 2. the state is exactly the result of a prefix of the committed batches (no holes, no
//!    reordering);
//! 3. each batch is all or nothing (a batch writes a log entry and a slot in two trees);
//! 4. deleted keys do not come back.
//!
//! Compaction runs on the test's thread (`compact_until_idle` at random points, with tiny
//! targets so every call has work), so power cuts also land inside compactions: mid output
//! file, between outputs and the manifest switch, and while inputs are being removed.
//!
//! `SHOAL_CRASH_ITERATIONS` sets how many crashes to simulate (default 1000);
//! `SHOAL_CRASH_SEED` replays one failing iteration, whose seed is printed on failure.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shoal_compaction::PolicyOptions;
use shoal_engine::Durability;
use shoal_engine::{Db, DbOptions, Direction, TreeId, WriteBatch};
use shoal_vfs::sim::SimFs;

const SLOTS: u64 = 23;

fn options(durability: Durability) -> DbOptions {
    DbOptions {
        durability,
        // Tiny memtables and segments: flushes, manifest switches, WAL rotation and release
        // all happen within a few hundred batches, so crashes land between and around them.
        memtable_size_bytes: 2 << 10,
        wal_segment_size_bytes: 8 << 10,
        background_flush: false,
        // Compaction only when the test asks, so the crash points are reproducible from the
        // seed; tiny targets so each request merges and splits files.
        compaction_threads: 0,
        compaction: PolicyOptions {
            l0_trigger_files: 2,
            base_level_bytes: 4 << 10,
            target_file_bytes: 1 << 10,
            level_ratio: 2,
            ..PolicyOptions::default()
        },
        ..DbOptions::default()
    }
}

fn slot_op(i: u64) -> (Vec<u8>, Option<Vec<u8>>) {
    let key = format!("slot{:03}", (i * 7) % SLOTS).into_bytes();
    if i % 4 == 3 {
        (key, None)
    } else {
        (key, Some(format!("v{i}").into_bytes()))
    }
}

fn log_key(i: u64) -> Vec<u8> {
    format!("{i:08}").into_bytes()
}

fn trees(db: &Db) -> (TreeId, TreeId) {
    let get = |name: &str| {
        db.tree_id(name)
            .unwrap_or_else(|| db.create_tree(name).unwrap())
    };
    (get("log"), get("slots"))
}

fn write_batch(db: &Db, log: TreeId, slots: TreeId, i: u64) -> bool {
    let mut batch = WriteBatch::new();
    batch
        .put(log, &log_key(i), format!("entry {i}").as_bytes())
        .unwrap();
    let (key, value) = slot_op(i);
    match value {
        Some(v) => batch.put(slots, &key, &v).unwrap(),
        None => batch.delete(slots, &key).unwrap(),
    }
    db.write(batch).is_ok()
}

/// Checks the recovered state; returns how many batches it holds.
fn verify(db: &Db) -> Result<u64, String> {
    let (log, slots) = trees(db);
    let entries = db
        .scan(
            log,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
            usize::MAX,
        )
        .map_err(|e| e.to_string())?;
    for (i, (key, value)) in entries.iter().enumerate() {
        if *key != log_key(i as u64) || *value != format!("entry {i}").into_bytes() {
            return Err(format!(
                "log entry {i} missing or wrong: a hole in the recovered prefix"
            ));
        }
    }
    let count = entries.len() as u64;
    let mut expected = BTreeMap::new();
    for i in 0..count {
        let (key, value) = slot_op(i);
        match value {
            Some(v) => expected.insert(key, v),
            None => expected.remove(&key),
        };
    }
    let actual: BTreeMap<_, _> = db
        .scan(
            slots,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
            usize::MAX,
        )
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    if actual != expected {
        return Err(format!(
            "slots differ from the result of the {count} recovered batches: partial batch or resurrected delete"
        ));
    }
    // Point reads agree with the scan (they take a different path through the files).
    for (key, value) in &expected {
        let got = db.get(slots, key, None).map_err(|e| e.to_string())?;
        if got.as_ref() != Some(value) {
            return Err(format!("get of {key:?} disagrees with the scan"));
        }
    }
    Ok(count)
}

/// One iteration: several open/write/crash rounds on one simulated disk. In most rounds the
/// disk freezes after a random number of mutating calls, so the power cut lands inside an
/// operation: mid WAL group, mid flush, mid compaction, mid manifest switch.
fn run_iteration(seed: u64) -> Result<CompactionCounts, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/data");
    // Batches are numbered from 0; batch i's content depends only on i.
    let mut possibly_written = 0u64; // batches that may be on disk (incl. one that failed mid-write)
    let mut acknowledged_durable = 0u64; // batches that must survive
    let mut counts = CompactionCounts::default();

    for round in 0..rng.random_range(1..4) {
        let durability = if rng.random_bool(0.75) {
            Durability::Sync
        } else {
            Durability::None
        };
        let db = Db::open_with_fs(sim.fs(), dir, options(durability))
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        let recovered = verify(&db).map_err(|e| format!("round {round}: {e}"))?;
        check_bounds(recovered, acknowledged_durable, possibly_written)
            .map_err(|e| format!("round {round}: {e}"))?;
        // The next batch to write continues the recovered prefix.
        let mut next_batch = recovered;
        possibly_written = recovered;
        acknowledged_durable = recovered;
        let (log, slots) = trees(&db);
        if rng.random_bool(0.7) {
            sim.freeze_after(Some(rng.random_range(0..800)));
        }
        for _ in 0..rng.random_range(0..250) {
            if rng.random_bool(0.02) && db.flush_all().is_err() {
                break; // the disk froze mid-flush
            }
            if rng.random_bool(0.03) && db.compact_until_idle().is_err() {
                counts.interrupted += 1;
                break; // the disk froze mid-compaction
            }
            possibly_written = next_batch + 1;
            if !write_batch(&db, log, slots, next_batch) {
                break; // the disk froze mid-commit: this batch may or may not survive
            }
            next_batch += 1;
            if durability == Durability::Sync {
                acknowledged_durable = next_batch;
            }
        }
        counts.completed += db.stats().compactions;
        // Pull the plug while the database is still open, then let the stale handle go.
        sim.power_loss(rng.random());
        drop(db);
    }
    let db = Db::open_with_fs(sim.fs(), dir, options(Durability::Sync))
        .map_err(|e| format!("final reopen failed: {e}"))?;
    let recovered = verify(&db)?;
    check_bounds(recovered, acknowledged_durable, possibly_written)?;
    // Compacting the recovered state must keep it (old inputs and new outputs mixed by a
    // crash would show up here or at the next open).
    db.compact_until_idle()
        .map_err(|e| format!("compaction after recovery failed: {e}"))?;
    if verify(&db)? != recovered {
        return Err("compaction after recovery changed the recovered state".into());
    }
    counts.completed += db.stats().compactions;
    Ok(counts)
}

/// Compactions of one iteration: finished, and cut short by the frozen disk.
#[derive(Debug, Default)]
struct CompactionCounts {
    completed: u64,
    interrupted: u64,
}

fn check_bounds(recovered: u64, acknowledged: u64, possibly_written: u64) -> Result<(), String> {
    if recovered < acknowledged {
        return Err(format!(
            "{acknowledged} batches were acknowledged durably, only {recovered} survived"
        ));
    }
    if recovered > possibly_written {
        return Err(format!(
            "{recovered} batches recovered but at most {possibly_written} were ever written"
        ));
    }
    Ok(())
}

#[test]
fn power_loss_keeps_acknowledged_atomic_prefix() {
    let seeds = shoal_vfs::sim::crash_seeds("SHOAL_CRASH_ITERATIONS", "SHOAL_CRASH_SEED", 1000);
    let seed_count = seeds.len();
    let mut compactions = CompactionCounts::default();
    for seed in seeds {
        match run_iteration(seed) {
            Ok(counts) => {
                compactions.completed += counts.completed;
                compactions.interrupted += counts.interrupted;
            }
            Err(message) => {
                panic!("seed {seed}: {message} (replay with SHOAL_CRASH_SEED={seed})")
            }
        }
    }
    // With the default iteration count both happen many times; a handful of iterations
    // (or one replayed seed) may see neither.
    if seed_count >= 100 {
        assert!(
            compactions.completed > 0 && compactions.interrupted > 0,
            "crashes did not exercise compaction: {compactions:?}"
        );
    }
}
