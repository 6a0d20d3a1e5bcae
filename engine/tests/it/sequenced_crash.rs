//! Power loss with sequence-suffixed puts (`WriteBatch::put_sequenced`), in the style of
//! `lsm_crash.rs`: random workloads on the simulated disk, a power cut at a random point
//! (mid WAL group, flush, compaction or manifest switch), reopen, and check that every
//! recovered suffixed key ends with the sequence number its entry really had:
//!
//! - one key per prefix per recovered batch (a replay that made other bytes than the commit
//!   would leave a second key, or a key in the wrong place);
//! - keys in batch order, each batch's two suffixed entries at consecutive sequence numbers
//!   after its plain put, and never beyond the visible sequence number;
//! - for a batch whose commit returned, exactly `first_seq + index`.
//!
//! `SHOAL_CRASH_ITERATIONS` sets how many crashes to simulate (default 500);
//! `SHOAL_CRASH_SEED` replays one failing iteration, whose seed is printed on failure.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shoal_compaction::PolicyOptions;
use shoal_engine::batch::SEQ_SUFFIX_BYTES;
use shoal_engine::read::KeyValue;
use shoal_engine::{Db, DbOptions, Direction, Durability, TreeId, WriteBatch};
use shoal_vfs::sim::SimFs;

/// The two prefixes every batch writes a suffixed record under, as entries 1 and 2.
const PREFIXES: [&[u8]; 2] = [b"a/", b"b/"];

fn options(durability: Durability) -> DbOptions {
    DbOptions {
        durability,
        // Tiny memtables and segments so flushes, WAL rotation and release happen within a
        // few hundred batches; compaction only when the test asks, for reproducible crashes.
        memtable_size_bytes: 2 << 10,
        wal_segment_size_bytes: 8 << 10,
        background_flush: false,
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

fn log_key(i: u64) -> Vec<u8> {
    format!("{i:08}").into_bytes()
}

fn trees(db: &Db) -> (TreeId, TreeId) {
    let get = |name: &str| {
        db.tree_id(name)
            .unwrap_or_else(|| db.create_tree(name).unwrap())
    };
    (get("log"), get("stream"))
}

/// Writes batch `i`; returns its first seq if the commit returned.
fn write_batch(db: &Db, log: TreeId, stream: TreeId, i: u64) -> Option<u64> {
    let mut batch = WriteBatch::new();
    batch.put(log, &log_key(i), b"entry").unwrap();
    for prefix in PREFIXES {
        batch
            .put_sequenced(stream, prefix, &i.to_be_bytes())
            .unwrap();
    }
    db.write(batch).ok()
}

fn scan(
    db: &Db,
    tree: TreeId,
    lower: Bound<&[u8]>,
    upper: Bound<&[u8]>,
) -> Result<Vec<KeyValue>, String> {
    db.scan(tree, lower, upper, Direction::Forward, None, usize::MAX)
        .map_err(|e| e.to_string())
}

/// Checks the recovered state against the seqs of the commits that returned (`first_seqs`,
/// by batch); returns how many batches it holds.
fn verify(db: &Db, first_seqs: &BTreeMap<u64, u64>) -> Result<u64, String> {
    let (log, stream) = trees(db);
    let logged = scan(db, log, Bound::Unbounded, Bound::Unbounded)?;
    for (i, (key, _)) in logged.iter().enumerate() {
        if *key != log_key(i as u64) {
            return Err(format!(
                "log entry {i} missing: a hole in the recovered prefix"
            ));
        }
    }
    let count = logged.len() as u64;
    let visible = db.visible_seq();
    // Suffix seqs by batch, one column per prefix.
    let mut seqs = vec![[0u64; PREFIXES.len()]; logged.len()];
    for (column, prefix) in PREFIXES.iter().enumerate() {
        let upper = [&prefix[..prefix.len() - 1], &[prefix[prefix.len() - 1] + 1]].concat();
        let records = scan(db, stream, Bound::Included(prefix), Bound::Excluded(&upper))?;
        if records.len() as u64 != count {
            return Err(format!(
                "{} records under {prefix:?} for {count} recovered batches",
                records.len()
            ));
        }
        for (i, (key, value)) in records.iter().enumerate() {
            if *value != (i as u64).to_be_bytes() || key.len() != prefix.len() + SEQ_SUFFIX_BYTES {
                return Err(format!(
                    "record {i} under {prefix:?} is {key:?} = {value:?}: out of commit order"
                ));
            }
            let mut suffix = [0u8; SEQ_SUFFIX_BYTES];
            suffix.copy_from_slice(&key[prefix.len()..]);
            seqs[i][column] = u64::from_be_bytes(suffix);
            let got = db.get(stream, key, None).map_err(|e| e.to_string())?;
            if got.as_deref() != Some(&value[..]) {
                return Err(format!("get of {key:?} disagrees with the scan"));
            }
        }
    }
    for (i, [a, b]) in seqs.iter().copied().enumerate() {
        let i = i as u64;
        // Entry 0 (the plain put) has a - 1; entries 1 and 2 are consecutive.
        if b != a + 1 || a == 0 || b > visible {
            return Err(format!(
                "batch {i}: suffixes {a} and {b} are not entries 1 and 2 of one batch at or below {visible}"
            ));
        }
        if i > 0 && seqs[i as usize - 1][1] >= a - 1 {
            return Err(format!(
                "batch {i} starts at or before the previous batch's end"
            ));
        }
        if let Some(first_seq) = first_seqs.get(&i) {
            if a != first_seq + 1 {
                return Err(format!(
                    "batch {i} committed at {first_seq} but its record says {}",
                    a - 1
                ));
            }
        }
    }
    Ok(count)
}

/// One iteration: several open/write/crash rounds on one simulated disk (as in
/// `lsm_crash.rs`), tracking the seq of every commit that returned.
fn run_iteration(seed: u64) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/data");
    let mut first_seqs = BTreeMap::new();
    let mut possibly_written = 0u64;
    let mut acknowledged_durable = 0u64;

    for round in 0..rng.random_range(1..4) {
        let durability = if rng.random_bool(0.75) {
            Durability::Sync
        } else {
            Durability::None
        };
        let db = Db::open_with_fs(sim.fs(), dir, options(durability))
            .map_err(|e| format!("round {round}: reopen failed: {e}"))?;
        let recovered = verify(&db, &first_seqs).map_err(|e| format!("round {round}: {e}"))?;
        check_bounds(recovered, acknowledged_durable, possibly_written)
            .map_err(|e| format!("round {round}: {e}"))?;
        // Lost batches are written again, under new seqs.
        first_seqs.retain(|i, _| *i < recovered);
        let mut next_batch = recovered;
        possibly_written = recovered;
        acknowledged_durable = recovered;
        let (log, stream) = trees(&db);
        if rng.random_bool(0.7) {
            sim.freeze_after(Some(rng.random_range(0..800)));
        }
        for _ in 0..rng.random_range(0..250) {
            if rng.random_bool(0.02) && db.flush_all().is_err() {
                break;
            }
            if rng.random_bool(0.03) && db.compact_until_idle().is_err() {
                break;
            }
            possibly_written = next_batch + 1;
            let Some(first_seq) = write_batch(&db, log, stream, next_batch) else {
                break; // the disk froze mid-commit: this batch may or may not survive
            };
            first_seqs.insert(next_batch, first_seq);
            next_batch += 1;
            if durability == Durability::Sync {
                acknowledged_durable = next_batch;
            }
        }
        sim.power_loss(rng.random());
        drop(db);
    }
    let db = Db::open_with_fs(sim.fs(), dir, options(Durability::Sync))
        .map_err(|e| format!("final reopen failed: {e}"))?;
    let recovered = verify(&db, &first_seqs)?;
    check_bounds(recovered, acknowledged_durable, possibly_written)?;
    first_seqs.retain(|i, _| *i < recovered);
    // Flushed and compacted, the records keep their keys.
    db.flush_all()
        .map_err(|e| format!("flush after recovery failed: {e}"))?;
    db.compact_until_idle()
        .map_err(|e| format!("compaction after recovery failed: {e}"))?;
    if verify(&db, &first_seqs)? != recovered {
        return Err("flush and compaction after recovery changed the recovered state".into());
    }
    Ok(())
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
fn power_loss_keeps_every_sequenced_key_at_its_entry_seq() {
    for seed in shoal_vfs::sim::crash_seeds("SHOAL_CRASH_ITERATIONS", "SHOAL_CRASH_SEED", 500) {
        if let Err(message) = run_iteration(seed) {
            panic!("seed {seed}: {message} (replay with SHOAL_CRASH_SEED={seed})");
        }
    }
}
