//! Storage-core benchmarks (issue "Storage core"): 5-record atomic batches across two trees
//! with durability none and sync at 1–16 writer threads, point gets of existing keys (each
//! block read in place and copied out, `DbOptions::point_reads`) and missing keys, forward
//! and reverse scans of a 100-record collection, 50-entry pages of a range over ~100 files,
//! WAL replay, and the raw 4 KB
//! append+fdatasync floor; and, below all of them, the workload's memtable inserts alone and
//! the flush of a full memtable.
//! Run: `cargo bench -p shoal-engine --bench storage`.
//!
//! Besides criterion's timings, each write benchmark prints the process CPU time per batch
//! (user + system, from getrusage), the figure the targets are stated in.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use shoal_engine::db::{LOCK_FILE_NAME, WAL_DIR_NAME};
use shoal_engine::memtable::{Memtable, MemtableInserter};
use shoal_engine::Durability;
use shoal_engine::{Db, DbOptions, Direction, EntryKind, PointReads, TreeId, WriteBatch};

const THREAD_COUNTS: [usize; 5] = [1, 2, 4, 8, 16];

fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass; a zeroed rusage is valid.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

/// One batch of the workload: one ~1 KB record in `items` and four ~150 B records in
/// `index`, under random 16-byte keys.
fn workload_batch(
    rng: &mut impl Rng,
    items: TreeId,
    index: TreeId,
    value_1k: &[u8],
    value_150: &[u8],
) -> WriteBatch {
    let mut batch = WriteBatch::new();
    let base: u64 = rng.random();
    batch.put(items, &key16(base, 0), value_1k).unwrap();
    for i in 1..5u64 {
        batch.put(index, &key16(base, i), value_150).unwrap();
    }
    batch
}

fn key16(a: u64, b: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&a.to_be_bytes());
    k[8..].copy_from_slice(&b.to_be_bytes());
    k
}

fn prefix8(key: &[u8]) -> &[u8] {
    &key[..key.len().min(8)]
}

fn open(dir: &Path, durability: Durability) -> (Db, TreeId, TreeId) {
    open_reading(dir, durability, PointReads::default())
}

/// The options the benchmarks open with: the workload's bloom prefix, and the fixed 64 MiB
/// memtables and unbounded write buffer these figures were measured with, not the
/// write-rate-following defaults.
fn bench_options(durability: Durability) -> DbOptions {
    DbOptions {
        durability,
        bloom_prefix: prefix8,
        memtable_size_bytes: 64 << 20,
        memtable_size_bytes_min: 64 << 20,
        write_buffer_bytes_max: usize::MAX,
        ..DbOptions::default()
    }
}

/// [`open`] with point reads read as `point_reads` says.
fn open_reading(
    dir: &Path,
    durability: Durability,
    point_reads: PointReads,
) -> (Db, TreeId, TreeId) {
    let db = Db::open(
        dir,
        DbOptions {
            point_reads,
            ..bench_options(durability)
        },
    )
    .unwrap();
    let items = db
        .tree_id("items")
        .unwrap_or_else(|| db.create_tree("items").unwrap());
    let index = db
        .tree_id("index")
        .unwrap_or_else(|| db.create_tree("index").unwrap());
    (db, items, index)
}

fn bench_batches(c: &mut Criterion) {
    let value_1k = vec![7u8; 1000];
    let value_150 = vec![9u8; 150];
    for (mode_name, durability) in [("none", Durability::None), ("sync", Durability::Sync)] {
        let mut group = c.benchmark_group(format!("batch_write_{mode_name}"));
        group.throughput(Throughput::Elements(1));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(5));
        for threads in THREAD_COUNTS {
            let dir = tempfile::tempdir().unwrap();
            let (db, items, index) = open(dir.path(), durability);
            let db = Arc::new(db);
            let mut cpu_total = Duration::ZERO;
            let mut batches_total = 0u64;
            group.bench_with_input(
                BenchmarkId::from_parameter(threads),
                &threads,
                |b, &threads| {
                    b.iter_custom(|iters| {
                        let per_thread = iters.div_ceil(threads as u64);
                        let cpu_before = cpu_time();
                        let start = Instant::now();
                        std::thread::scope(|scope| {
                            for t in 0..threads {
                                let db = Arc::clone(&db);
                                let (value_1k, value_150) = (&value_1k, &value_150);
                                scope.spawn(move || {
                                    let mut rng =
                                        rand::rngs::StdRng::seed_from_u64(t as u64 ^ iters);
                                    for _ in 0..per_thread {
                                        let batch = workload_batch(
                                            &mut rng, items, index, value_1k, value_150,
                                        );
                                        db.write(batch).unwrap();
                                    }
                                });
                            }
                        });
                        let elapsed = start.elapsed();
                        cpu_total += cpu_time() - cpu_before;
                        batches_total += per_thread * threads as u64;
                        // Report time per batch as criterion expects for `iters` iterations.
                        elapsed.mul_f64(iters as f64 / (per_thread * threads as u64) as f64)
                    });
                },
            );
            if batches_total > 0 {
                eprintln!(
                    "batch_write_{mode_name}/{threads}: CPU per batch {:.1} µs over {batches_total} batches (process user+sys); wal {:?}",
                    cpu_total.as_secs_f64() * 1e6 / batches_total as f64,
                    db.wal_stats()
                );
            }
        }
        group.finish();
    }
}

fn bench_reads(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (db, items, _) = open(dir.path(), Durability::None);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let value = vec![5u8; 1000];
    let keys: Vec<u64> = (0..100_000).map(|_| rng.random()).collect();
    for chunk in keys.chunks(100) {
        let mut batch = WriteBatch::new();
        for k in chunk {
            batch.put(items, &key16(*k, 0), &value).unwrap();
        }
        db.write(batch).unwrap();
    }
    db.flush_all().unwrap();
    drop(db);
    let mut group = c.benchmark_group("point_get");
    group.throughput(Throughput::Elements(1));
    // Each data block read where the table is mapped, or copied out of the file
    // (`DbOptions::point_reads`): the copy's cost, with every page in the page cache.
    let mut db = None;
    for point_reads in [PointReads::Mapped, PointReads::Copied] {
        drop(db.take());
        let (reading, items, _) = open_reading(dir.path(), Durability::None, point_reads);
        let reading = db.insert(reading);
        let mut i = 0usize;
        group.bench_function(format!("existing/{point_reads:?}"), |b| {
            b.iter(|| {
                i = (i + 7919) % keys.len();
                assert!(reading
                    .get(items, &key16(keys[i], 0), None)
                    .unwrap()
                    .is_some());
            })
        });
    }
    let Some(db) = db else { return };
    group.bench_function("missing", |b| {
        b.iter(|| {
            let k: u64 = rng.random();
            assert!(db.get(items, &key16(k, 1), None).unwrap().is_none());
        })
    });
    group.finish();
}

fn bench_collection_scans(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (db, items, _) = open(dir.path(), Durability::None);
    let value = vec![3u8; 1000];
    const COLLECTIONS: u64 = 200;
    for collection in 0..COLLECTIONS {
        let mut batch = WriteBatch::new();
        for record in 0..100u64 {
            batch
                .put(
                    items,
                    &key16(collection * 0x9E37_79B9_7F4A_7C15, record),
                    &value,
                )
                .unwrap();
        }
        db.write(batch).unwrap();
    }
    db.flush_all().unwrap();
    let mut group = c.benchmark_group("collection_scan_100x1KB");
    group.throughput(Throughput::Elements(1));
    for (name, direction) in [
        ("forward", Direction::Forward),
        ("reverse", Direction::Reverse),
    ] {
        let mut collection = 0u64;
        group.bench_function(name, |b| {
            b.iter(|| {
                collection = (collection + 1) % COLLECTIONS;
                let prefix = (collection * 0x9E37_79B9_7F4A_7C15).to_be_bytes();
                let lower = key16(u64::from_be_bytes(prefix), 0);
                let upper = key16(u64::from_be_bytes(prefix), u64::MAX);
                let mut iter = db
                    .iter(
                        items,
                        Bound::Included(&lower),
                        Bound::Included(&upper),
                        direction,
                        None,
                    )
                    .unwrap();
                let mut n = 0;
                while iter.advance().unwrap() {
                    n += iter.value().len();
                }
                assert_eq!(n, 100 * 1000);
            })
        });
    }
    group.finish();
}

fn bench_replay(c: &mut Criterion) {
    let bytes_target: u64 = std::env::var("SHOAL_BENCH_REPLAY_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 30);
    let dir = tempfile::tempdir().unwrap();
    let options = || DbOptions {
        durability: Durability::None,
        // One memtable that never fills: replay measures the WAL alone.
        memtable_size_bytes: usize::MAX / 2,
        memtable_size_bytes_min: usize::MAX / 2,
        write_buffer_bytes_max: usize::MAX,
        wal_live_bytes_max: u64::MAX,
        background_flush: false,
        bloom_prefix: prefix8,
        ..DbOptions::default()
    };
    {
        let db = Db::open(dir.path(), options()).unwrap();
        let items = db.create_tree("items").unwrap();
        let index = db.create_tree("index").unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let (value_1k, value_150) = (vec![1u8; 1000], vec![2u8; 150]);
        while db.wal_live_bytes() < bytes_target {
            db.write(workload_batch(
                &mut rng, items, index, &value_1k, &value_150,
            ))
            .unwrap();
        }
    }
    let mut group = c.benchmark_group("wal_replay");
    group.sample_size(10);
    // One open per sample: each takes seconds, and its directory is made fresh beforehand.
    group.sampling_mode(criterion::SamplingMode::Flat);
    group.throughput(Throughput::Bytes(bytes_target));
    group.bench_function(format!("{}MiB", bytes_target >> 20), |b| {
        // An open flushes what it replayed, so each open gets its own copy of the crashed
        // directory, made outside the timing.
        b.iter_batched(
            || linked_copy(dir.path()),
            |copy| drop(Db::open(copy.path(), options()).unwrap()),
            criterion::BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// A new directory holding hard links to the files of database directory `dir` (and its
/// `wal/`), but not its lock: opening it replays the same log without copying a GiB. Safe
/// because `dir`'s log was never released, so it has no recycled segments an open could
/// write over: the open writes only new files, and renames or removes names in the copy,
/// which leaves `dir` as it was.
fn linked_copy(dir: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    let wal = Path::new(WAL_DIR_NAME);
    std::fs::create_dir(copy.path().join(wal)).unwrap();
    for sub in [Path::new(""), wal] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() && entry.file_name() != LOCK_FILE_NAME {
                let to = copy.path().join(sub).join(entry.file_name());
                std::fs::hard_link(entry.path(), to).unwrap();
            }
        }
    }
    copy
}

fn bench_raw_fdatasync(c: &mut Criterion) {
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().unwrap();
    let block = vec![0xABu8; 4096];
    let mut group = c.benchmark_group("raw_fdatasync_4KB");
    group.sample_size(20);
    let mut append = std::fs::File::create(dir.path().join("append")).unwrap();
    group.bench_function("append", |b| {
        b.iter(|| {
            append.write_all(&block).unwrap();
            append.sync_data().unwrap();
        })
    });
    let mut overwrite = std::fs::File::create(dir.path().join("overwrite")).unwrap();
    for _ in 0..16_384 {
        overwrite.write_all(&block).unwrap();
    }
    overwrite.sync_all().unwrap();
    let mut offset = 0u64;
    group.bench_function("overwrite_preallocated", |b| {
        b.iter(|| {
            overwrite.seek(SeekFrom::Start(offset)).unwrap();
            overwrite.write_all(&block).unwrap();
            overwrite.sync_data().unwrap();
            offset = (offset + 4096) % (16_384 * 4096);
        })
    });
    group.finish();
}

/// The memtable inserts of one workload batch (one ~1 KB entry into one memtable, four
/// ~150 B entries into another), with no WAL, locks or background threads: what the write
/// path's apply step costs. Memtables are replaced when they reach the largest default
/// memtable size (under the default budget), so inserts meet every fill level from empty to
/// full, as in the database under load.
fn bench_memtable_inserts(c: &mut Criterion) {
    let defaults = DbOptions::default();
    let memtable_size_bytes = defaults
        .memtable_size_bytes
        .min(defaults.write_buffer_bytes_max / 2);
    let value_1k = vec![7u8; 1000];
    let value_150 = vec![9u8; 150];
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut items = Memtable::new();
    let mut index = Memtable::new();
    let mut seq = 1u64;
    let mut group = c.benchmark_group("memtable_insert_batch");
    group.throughput(Throughput::Elements(1));
    group.bench_function("5_entries", |b| {
        b.iter(|| {
            if items.size_bytes() >= memtable_size_bytes
                || index.size_bytes() >= memtable_size_bytes
            {
                items = Memtable::new();
                index = Memtable::new();
            }
            let base: u64 = rng.random();
            // As the engine applies a batch: each tree's entries through one splice, so the
            // index entries after the first follow it without a search, and the two trees'
            // searches run together.
            let mut inserter = MemtableInserter::default();
            inserter.push(&items, &key16(base, 0), seq, EntryKind::Put, &value_1k);
            for i in 1..5u64 {
                inserter.push(&index, &key16(base, i), seq + i, EntryKind::Put, &value_150);
            }
            drop(inserter);
            seq += 5;
        })
    });
    group.finish();
}

/// A flush of a full memtable: 240,000 of the workload's ~150 B index records under random
/// keys (~60 MiB in the memtable) written to one table, on the in-memory file system so
/// that the figure is the flush's own work (walking the memtable in key order, building the
/// blocks, filter and index) and not the disk's syncs. Key order is random order in the
/// memtable's arenas, so each step reads a node and a value written far from the last ones.
fn bench_flush(c: &mut Criterion) {
    const ENTRIES: u64 = 240_000;
    const ENTRIES_PER_BATCH: u64 = 50;
    let value_150 = vec![9u8; 150];
    let mut group = c.benchmark_group("flush");
    group.throughput(Throughput::Elements(ENTRIES));
    group.sample_size(10);
    group.bench_function("60MiB_150B_values", |b| {
        b.iter_custom(|iterations| {
            let mut flushing = Duration::ZERO;
            for iteration in 0..iterations {
                let fs = shoal_vfs::mem::MemFs::new().fs();
                let db = Db::open_with_fs(
                    fs,
                    Path::new("/db"),
                    DbOptions {
                        background_flush: false,
                        compaction_threads: 0,
                        ..bench_options(Durability::None)
                    },
                )
                .unwrap();
                let index = db.create_tree("index").unwrap();
                let mut rng = rand::rngs::StdRng::seed_from_u64(11 + iteration);
                for _ in 0..ENTRIES / ENTRIES_PER_BATCH {
                    let mut batch = WriteBatch::new();
                    for _ in 0..ENTRIES_PER_BATCH {
                        batch
                            .put(index, &key16(rng.random(), 1), &value_150)
                            .unwrap();
                    }
                    db.write(batch).unwrap();
                }
                let start = Instant::now();
                db.flush_all().unwrap();
                flushing += start.elapsed();
                assert_eq!(db.stats().level_files[0], 1, "the entries fit one memtable");
            }
            flushing
        })
    });
    group.finish();
}

/// A page of a Scan, or of a Query whose range spans many files: 50 entries from a random
/// key onwards, in a tree of about 100 MiB cut into 1 MiB files (so its levels hold ~100
/// files, as a 6 GiB tree's levels do at the 64 MiB default). Each level's files in the
/// range are one source of the read's merge, or one source each.
fn bench_range_pages(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        DbOptions {
            durability: Durability::None,
            bloom_prefix: prefix8,
            memtable_size_bytes: 1 << 20,
            memtable_size_bytes_min: 1 << 20,
            compaction: shoal_engine::PolicyOptions {
                target_file_bytes: 1 << 20,
                base_level_bytes: 4 << 20,
                ..shoal_engine::PolicyOptions::default()
            },
            ..DbOptions::default()
        },
    )
    .unwrap();
    let items = db.create_tree("items").unwrap();
    let value = vec![5u8; 100];
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    const RECORDS: u64 = 1_000_000;
    for _ in 0..RECORDS / 100 {
        let mut batch = WriteBatch::new();
        for _ in 0..100 {
            batch.put(items, &key16(rng.random(), 0), &value).unwrap();
        }
        db.write(batch).unwrap();
    }
    db.flush_all().unwrap();
    db.compact_until_idle().unwrap();
    let mut group = c.benchmark_group("range_page_50_of_1M");
    group.throughput(Throughput::Elements(1));
    group.bench_function("forward", |b| {
        b.iter(|| {
            let lower = key16(rng.random(), 0);
            let mut iter = db
                .iter(
                    items,
                    Bound::Included(&lower),
                    Bound::Unbounded,
                    Direction::Forward,
                    None,
                )
                .unwrap();
            let mut n = 0;
            while n < 50 && iter.advance().unwrap() {
                n += 1;
            }
            n
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    bench_memtable_inserts,
    bench_flush,
    bench_raw_fdatasync,
    bench_batches,
    bench_reads,
    bench_collection_scans,
    bench_range_pages,
    bench_replay
);
criterion_main!(benches);
