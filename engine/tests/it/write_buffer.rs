//! The write buffer (docs/DESIGN.md, "Write buffer"): memtables grow with a tree's write rate,
//! all of them together stay within `write_buffer_bytes_max`, and a burst's memtables are
//! flushed and freed once writes stop. Judged by the engine's own figures (`DbStats::
//! write_buffer_bytes`, `TreeStats::memtable_target_bytes`) after each write, not by time.

use std::path::Path;
use std::time::{Duration, Instant};

use shoal_engine::Durability;
use shoal_engine::{Db, DbOptions, WriteBatch};
use shoal_vfs::sim::SimFs;

const MIN_BYTES: usize = 16 << 10;
const BUDGET_BYTES: usize = 1 << 20;

fn options() -> DbOptions {
    DbOptions {
        durability: Durability::None,
        memtable_size_bytes_min: MIN_BYTES,
        // More than half the budget: the budget caps it at BUDGET_BYTES / 2.
        memtable_size_bytes: 4 << 20,
        write_buffer_bytes_max: BUDGET_BYTES,
        wal_segment_size_bytes: 256 << 10,
        ..DbOptions::default()
    }
}

fn key(tree: usize, i: u32) -> Vec<u8> {
    format!("t{tree}-{i:08}").into_bytes()
}

#[test]
fn memtables_grow_for_fast_writers_and_stay_within_the_budget_together() {
    let sim = SimFs::new();
    let db = Db::open_with_fs(sim.fs(), Path::new("/db"), options()).unwrap();
    let trees: Vec<_> = (0..8)
        .map(|t| db.create_tree(&format!("tree{t}")).unwrap())
        .collect();
    assert!(trees
        .iter()
        .all(|t| db.tree_stats(*t).unwrap().memtable_target_bytes == MIN_BYTES as u64));

    let value = vec![7u8; 1000];
    let mut peak = 0;
    let mut target_max = 0;
    let writes = 6_000u32;
    for i in 0..writes {
        let tree = i as usize % trees.len();
        let mut batch = WriteBatch::new();
        batch.put(trees[tree], &key(tree, i), &value).unwrap();
        db.write(batch).unwrap();
        peak = peak.max(db.stats().write_buffer_bytes);
        target_max = target_max.max(db.tree_stats(trees[tree]).unwrap().memtable_target_bytes);
    }
    // Eight trees written in turn fill their memtables far faster than one a second: they
    // grew past the minimum, never past half the budget.
    assert!(
        target_max > MIN_BYTES as u64,
        "no memtable grew past {MIN_BYTES}"
    );
    assert!(target_max <= (BUDGET_BYTES / 2) as u64);
    // Eight trees' memtables at even their minimum size, and four frozen ones each, would be
    // far over the budget; the budget holds them to it, give or take one memtable flushed
    // but not yet dropped and one write.
    let bound = (BUDGET_BYTES + BUDGET_BYTES / 2 + 2 * value.len()) as u64;
    assert!(peak <= bound, "memtables held {peak} bytes, bound {bound}");
    assert!(
        peak >= (BUDGET_BYTES / 2) as u64,
        "the budget was never approached: {peak}"
    );

    // Every write is there, before and after a reopen (recovery is unchanged).
    let check = |db: &Db| {
        for i in (0..writes).step_by(97) {
            let tree = i as usize % trees.len();
            assert_eq!(
                db.get(trees[tree], &key(tree, i), None).unwrap(),
                Some(value.clone())
            );
        }
    };
    check(&db);
    drop(db);
    let db = Db::open_with_fs(sim.fs(), Path::new("/db"), options()).unwrap();
    check(&db);
}

#[test]
fn a_burst_memtable_is_flushed_and_freed_once_writes_stop() {
    let sim = SimFs::new();
    let db = Db::open_with_fs(sim.fs(), Path::new("/db"), options()).unwrap();
    let tree = db.create_tree("burst").unwrap();
    let value = vec![1u8; 1000];
    // Taken before the burst, not after it: a flush adds its bytes to the count before its
    // memtable is dropped, so the count read when the burst ends may already hold the flush
    // that frees the memory the loop below waits on.
    let flushed_before = db.stats().flush_bytes_written;
    let mut i = 0u32;
    // Write until the memtable has grown and holds more than the minimum.
    while db.tree_stats(tree).unwrap().memtable_target_bytes < 4 * MIN_BYTES as u64
        || db.stats().write_buffer_bytes <= 2 * MIN_BYTES as u64
    {
        let mut batch = WriteBatch::new();
        batch.put(tree, &key(0, i), &value).unwrap();
        db.write(batch).unwrap();
        i += 1;
        assert!(i < 100_000, "the memtable never grew");
    }

    // No more writes: the flusher notices (after a second without writes) and gives the
    // memory back. Waiting on that event, with a generous deadline for a loaded machine.
    // What stays is an active memtable of at most the minimum size.
    let deadline = Instant::now() + Duration::from_secs(60);
    while (db.stats().write_buffer_bytes > MIN_BYTES as u64
        || db.tree_stats(tree).unwrap().memtable_target_bytes != MIN_BYTES as u64)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = db.stats().write_buffer_bytes;
    assert!(
        left <= MIN_BYTES as u64,
        "the burst's memtables kept {left} bytes"
    );
    assert_eq!(
        db.tree_stats(tree).unwrap().memtable_target_bytes,
        MIN_BYTES as u64
    );
    // The burst went to tables, not away: more than the memtable now holds was flushed, and
    // every write is there.
    assert!(db.stats().flush_bytes_written > flushed_before);
    for n in (0..i).step_by(97).chain([i - 1]) {
        assert_eq!(db.get(tree, &key(0, n), None).unwrap(), Some(value.clone()));
    }
}
