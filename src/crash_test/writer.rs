//! The crash-test workload shared by `shoal crash-writer` (the child that gets killed) and
//! the tests that verify what survived.
//!
//! Batch `i` writes a log entry `i` in the `log` tree and updates or deletes one of
//! [`SLOTS`] keys in the `slots` tree, atomically. After a crash the log must hold exactly
//! batches `0..=m` for some `m` (no holes: invariant 2), every acknowledged batch must be
//! among them (invariant 1), and the slots must equal what batches `0..=m` produce
//! (atomicity and no resurrected deletes: invariants 3 and 4).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use clap::Args;
use shoal_engine::{Db, DbError, DbOptions, Direction, TreeId, WriteBatch};

use crate::parse_durability;

/// Number of distinct slot keys the workload cycles through.
pub const SLOTS: u64 = 257;
/// Name of the tree holding one entry per batch.
pub const LOG_TREE: &str = "log";
/// Name of the tree holding the slot keys.
pub const SLOTS_TREE: &str = "slots";

/// What batch `i` does to the slots tree: `Some(value)` puts, `None` deletes.
pub fn slot_op(i: u64) -> (Vec<u8>, Option<Vec<u8>>) {
    let key = format!("slot{:05}", (i * 7919) % SLOTS).into_bytes();
    if i % 5 == 4 {
        (key, None)
    } else {
        (key, Some(format!("value-of-batch-{i}").into_bytes()))
    }
}

/// The log key of batch `i` (fixed width, so byte order is numeric order).
pub fn log_key(i: u64) -> Vec<u8> {
    format!("{i:012}").into_bytes()
}

/// The log value of batch `i`: ~100 bytes so memtables fill and flush during the test.
pub fn log_value(i: u64) -> Vec<u8> {
    let mut value = format!("batch {i} ").into_bytes();
    value.resize(100, b'.');
    value
}

/// Builds batch `i`.
pub fn batch(log: TreeId, slots: TreeId, i: u64) -> Result<WriteBatch, DbError> {
    let mut batch = WriteBatch::new();
    batch.put(log, &log_key(i), &log_value(i))?;
    let (key, value) = slot_op(i);
    match value {
        Some(value) => batch.put(slots, &key, &value)?,
        None => batch.delete(slots, &key)?,
    }
    Ok(batch)
}

/// The slots tree after batches `0..count`.
pub fn expected_slots(count: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut slots = BTreeMap::new();
    for i in 0..count {
        let (key, value) = slot_op(i);
        match value {
            Some(value) => slots.insert(key, value),
            None => slots.remove(&key),
        };
    }
    slots
}

/// Opens (creating) the two workload trees.
pub fn open_trees(db: &Db) -> Result<(TreeId, TreeId), DbError> {
    let log = match db.tree_id(LOG_TREE) {
        Some(id) => id,
        None => db.create_tree(LOG_TREE)?,
    };
    let slots = match db.tree_id(SLOTS_TREE) {
        Some(id) => id,
        None => db.create_tree(SLOTS_TREE)?,
    };
    Ok((log, slots))
}

/// What a recovered database holds, checked against the workload.
#[derive(Debug)]
pub struct Recovered {
    /// Number of batches present (they are exactly `0..batches`).
    pub batches: u64,
}

/// Checks a recovered database: the log is a gap-free prefix `0..m`, and the slots equal
/// the workload's result for exactly that prefix. Returns the prefix length or what is wrong.
pub fn verify(db: &Db) -> Result<Recovered, String> {
    let (log, slots) = open_trees(db).map_err(|e| e.to_string())?;
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
    for (expected, (key, value)) in entries.iter().enumerate() {
        let expected = expected as u64;
        if key != &log_key(expected) {
            return Err(format!(
                "log has a hole: entry {expected} is {:?}",
                String::from_utf8_lossy(key)
            ));
        }
        if value != &log_value(expected) {
            return Err(format!("log entry {expected} has a wrong value"));
        }
    }
    let batches = entries.len() as u64;
    let actual: BTreeMap<Vec<u8>, Vec<u8>> = db
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
    let expected = expected_slots(batches);
    if actual != expected {
        let missing = expected.keys().filter(|k| !actual.contains_key(*k)).count();
        let extra = actual.keys().filter(|k| !expected.contains_key(*k)).count();
        return Err(format!(
            "slots disagree with the log's {batches} batches ({missing} missing, {extra} unexpected, \
             others differ in value): a batch was applied partially or a delete came back"
        ));
    }
    Ok(Recovered { batches })
}

/// Runs the writer forever: batch after batch, printing `ack <i>` once each is committed.
pub fn run_writer(
    dir: &Path,
    options: DbOptions,
    mut out: impl std::io::Write,
) -> Result<(), String> {
    let db = Db::open(dir, options).map_err(|e| e.to_string())?;
    let start = verify(&db)?.batches;
    let (log, slots) = open_trees(&db).map_err(|e| e.to_string())?;
    for i in start.. {
        let batch = batch(log, slots, i).map_err(|e| e.to_string())?;
        db.write(batch).map_err(|e| e.to_string())?;
        writeln!(out, "ack {i}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[derive(Args)]
pub struct CrashWriterArgs {
    /// Data directory.
    #[arg(long)]
    dir: PathBuf,
    /// sync, none, or interval:MS.
    #[arg(long, default_value = "sync")]
    durability: String,
    /// Memtable size in bytes (small values force frequent flushes).
    #[arg(long, default_value_t = 64 * 1024)]
    memtable_size_bytes: usize,
}

/// `shoal crash-writer`: [`run_writer`] on stdout, with small WAL segments.
pub fn command(args: CrashWriterArgs) -> Result<(), String> {
    parse_durability(&args.durability).and_then(|durability| {
        let options = DbOptions {
            durability,
            memtable_size_bytes: args.memtable_size_bytes,
            // Small segments: rotation, release and recycling all happen during a test.
            wal_segment_size_bytes: 1 << 20,
            ..DbOptions::default()
        };
        run_writer(&args.dir, options, std::io::stdout().lock())
    })
}
