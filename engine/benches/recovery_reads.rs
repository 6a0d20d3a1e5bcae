//! Point reads right after a crash recovery against the same reads after a clean start
//! (issue 41, goal 3: "reads do not get slower after a crash").
//! Run: `cargo bench -p shoal-engine --bench recovery_reads`.
//!
//! Both databases hold the same ~200 B records under random 16-byte keys, written until the
//! WAL spans three segments of the default size (64 MiB; `SHOAL_BENCH_SEGMENT_BYTES` sets
//! another), as a server's WAL may when it is killed. "after_crash" was closed without flushing (a closed handle's
//! flusher stops without flushing, so reopening replays all three segments, as after a
//! crash); "after_clean_start" was flushed and compacted before it was closed. Each is
//! reopened once, outside the timing, without background flushes or compactions, so the
//! reads see exactly the tree that opening left behind.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use shoal_engine::{Db, DbOptions, Durability, TreeId, WriteBatch};

const SEGMENTS: u64 = 3;
const VALUE_BYTES: usize = 200;
const GETS_PER_ITER: usize = 1000;

fn key16(a: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&a.to_be_bytes());
    k[8..].copy_from_slice(&(!a).to_be_bytes());
    k
}

fn segment_bytes() -> u64 {
    std::env::var("SHOAL_BENCH_SEGMENT_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DbOptions::default().wal_segment_size_bytes)
}

fn options(background: bool) -> DbOptions {
    DbOptions {
        durability: Durability::None,
        wal_segment_size_bytes: segment_bytes(),
        background_flush: background,
        compaction_threads: usize::from(background),
        ..DbOptions::default()
    }
}

/// Writes the records (same seed, so the same keys in both directories) and returns them.
fn fill(dir: &Path, clean: bool) -> Vec<u64> {
    let db = Db::open(dir, options(false)).unwrap();
    let items = db.create_tree("items").unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(41);
    let value = vec![7u8; VALUE_BYTES];
    let mut keys = Vec::new();
    while db.wal_live_bytes() < SEGMENTS * segment_bytes() {
        let mut batch = WriteBatch::new();
        for _ in 0..50 {
            let k: u64 = rng.random();
            batch.put(items, &key16(k), &value).unwrap();
            keys.push(k);
        }
        db.write(batch).unwrap();
    }
    if clean {
        db.flush_all().unwrap();
        db.compact_until_idle().unwrap();
    }
    keys
}

fn reopen(dir: &Path) -> (Db, TreeId) {
    let db = Db::open(dir, options(false)).unwrap();
    let items = db.tree_id("items").unwrap();
    (db, items)
}

fn bench_reads_after_recovery(c: &mut Criterion) {
    let crashed = tempfile::tempdir().unwrap();
    let clean = tempfile::tempdir().unwrap();
    let keys = fill(crashed.path(), false);
    assert_eq!(fill(clean.path(), true), keys);

    let mut group = c.benchmark_group("reads_after_recovery");
    group.throughput(Throughput::Elements(GETS_PER_ITER as u64));
    for (name, dir) in [
        ("after_crash", crashed.path()),
        ("after_clean_start", clean.path()),
    ] {
        let (db, items) = reopen(dir);
        // The shape the reads meet: files per level, and bytes still in memtables.
        eprintln!(
            "{name}: files per level {:?}, memtable bytes {}",
            db.tree_stats(items).unwrap().level_files,
            db.stats().write_buffer_bytes
        );
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        group.bench_function(name, |b| {
            b.iter(|| {
                for _ in 0..GETS_PER_ITER {
                    let k = keys[rng.random_range(0..keys.len())];
                    assert!(db.get(items, &key16(k), None).unwrap().is_some());
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_reads_after_recovery);
criterion_main!(benches);
