//! Compaction in the engine: bounded disk use under overwrites and deletes, file removal only
//! after the last reader, tree drops without rewriting, back-pressure, output cuts at
//! item-collection boundaries, snapshots, size estimates, both policies and the background
//! thread. Everything runs on the simulated disk; crashes inside compactions are covered by
//! `lsm_crash.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::Path;
use std::time::{Duration, Instant};

use shoal_compaction::{PolicyKind, PolicyOptions};
use shoal_engine::Durability;
use shoal_engine::{Db, DbOptions, Direction, TreeId, WriteBatch};
use shoal_vfs::Fs;

const DIR: &str = "/db";

/// Tiny memtables and compaction targets; compaction only on request unless a test says so.
fn options(kind: PolicyKind) -> DbOptions {
    DbOptions {
        durability: Durability::None,
        memtable_size_bytes: 4 << 10,
        background_flush: false,
        compaction_threads: 0,
        compaction: PolicyOptions {
            kind,
            l0_trigger_files: 2,
            base_level_bytes: 16 << 10,
            target_file_bytes: 4 << 10,
            level_ratio: 4,
            ..PolicyOptions::default()
        },
        ..DbOptions::default()
    }
}

fn open(fs: &Fs, options: DbOptions) -> Db {
    Db::open_with_fs(fs.clone(), Path::new(DIR), options).unwrap()
}

/// Sum of the sizes of every SSTable file in the directory (live or not yet removed).
fn sst_disk_bytes(fs: &Fs) -> u64 {
    let dir = Path::new(DIR);
    fs.list(dir)
        .unwrap()
        .iter()
        .filter(|name| name.ends_with(".sst"))
        .map(|name| fs.file_size(&dir.join(name)).unwrap())
        .sum()
}

fn sst_numbers_on_disk(fs: &Fs) -> BTreeSet<u64> {
    fs.list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter_map(|name| name.strip_suffix(".sst")?.parse().ok())
        .collect()
}

fn live_file_numbers(db: &Db) -> BTreeSet<u64> {
    db.version().live_file_numbers()
}

fn scan_all(db: &Db, tree: TreeId) -> BTreeMap<Vec<u8>, Vec<u8>> {
    crate::scan_all(db, tree).into_iter().collect()
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn put(db: &Db, tree: TreeId, key: &[u8], value: &[u8]) {
    let mut batch = WriteBatch::new();
    batch.put(tree, key, value).unwrap();
    db.write(batch).unwrap();
}

/// Writes `rounds` flushed L0 files, each overwriting keys `0..keys` with 80-byte values
/// marking its round.
fn flush_overwrite_rounds(db: &Db, tree: TreeId, rounds: u8, keys: u64) {
    for round in 0..rounds {
        for i in 0..keys {
            put(db, tree, &key(i), &[round; 80]);
        }
        db.flush_all().unwrap();
    }
}

fn delete(db: &Db, tree: TreeId, key: &[u8]) {
    let mut batch = WriteBatch::new();
    batch.delete(tree, key).unwrap();
    db.write(batch).unwrap();
}

#[test]
fn overwrites_and_deletes_keep_disk_bounded_and_deletes_stay_deleted() {
    for kind in [PolicyKind::Leveled, PolicyKind::SizeTiered] {
        let fs = shoal_vfs::sim::SimFs::new().fs();
        let db = open(&fs, options(kind));
        let tree = db.create_tree("t").unwrap();
        const KEYS: u64 = 200;
        const VALUE_BYTES: usize = 100;
        let mut model = BTreeMap::new();
        let mut disk_max = 0;
        for round in 0..40u64 {
            for i in 0..KEYS {
                // Every third key (shifting each round) is deleted, the rest overwritten.
                if (i + round) % 3 == 0 {
                    delete(&db, tree, &key(i));
                    model.remove(&key(i));
                } else {
                    let value = vec![round as u8; VALUE_BYTES];
                    put(&db, tree, &key(i), &value);
                    model.insert(key(i), value);
                }
            }
            db.flush_all().unwrap();
            disk_max = disk_max.max(sst_disk_bytes(&fs));
            db.compact_until_idle().unwrap();
            disk_max = disk_max.max(sst_disk_bytes(&fs));
            assert_eq!(scan_all(&db, tree), model, "{kind:?} round {round}");
            for i in 0..KEYS {
                assert_eq!(
                    db.get(tree, &key(i), None).unwrap().as_ref(),
                    model.get(&key(i)),
                    "{kind:?} round {round} key {i}"
                );
            }
        }
        // 40 rounds wrote about 40 * 200 * 110 bytes = 880 KB; the live data is about 15 KB.
        // The files on disk (live ones and any not yet removed), even just before a
        // compaction, must stay within a small multiple of that, not grow with the history.
        let logical_bytes: usize = model.iter().map(|(k, v)| k.len() + v.len()).sum();
        let logical_bytes = logical_bytes as u64;
        let stats = db.stats();
        assert!(stats.compactions > 0, "{kind:?}: {stats:?}");
        assert!(
            disk_max < 4 * logical_bytes,
            "{kind:?}: disk grew to {disk_max} bytes for {logical_bytes} live bytes"
        );
        // Nothing on disk but the live files: inputs were removed once unread.
        assert_eq!(sst_numbers_on_disk(&fs), live_file_numbers(&db), "{kind:?}");

        // And after a restart, deleted keys are still deleted.
        drop(db);
        let db = open(&fs, options(kind));
        assert_eq!(scan_all(&db, tree), model, "{kind:?} after reopen");
    }
}

#[test]
fn iterator_keeps_compacted_inputs_readable_until_dropped() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let db = open(&fs, options(PolicyKind::Leveled));
    let tree = db.create_tree("t").unwrap();
    let mut expected = BTreeMap::new();
    for file in 0..3u64 {
        for i in 0..50u64 {
            let value = format!("file{file}").into_bytes();
            put(&db, tree, &key(i * 3 + file), &value);
            expected.insert(key(i * 3 + file), value);
        }
        db.flush_all().unwrap();
    }
    let inputs = live_file_numbers(&db);
    assert!(inputs.len() >= 3, "{inputs:?}");

    let mut iter = db
        .iter(
            tree,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
        )
        .unwrap();
    assert!(iter.advance().unwrap());
    let mut seen = vec![(iter.key().to_vec(), iter.value().to_vec())];

    // Overwrite everything, then compact: the iterator must still see the old state.
    for i in 0..150u64 {
        put(&db, tree, &key(i), b"new");
    }
    db.flush_all().unwrap();
    db.compact_until_idle().unwrap();
    assert!(db.stats().compactions > 0);
    let after = live_file_numbers(&db);
    assert!(inputs.is_disjoint(&after), "every input was compacted away");
    for number in &inputs {
        assert!(
            sst_numbers_on_disk(&fs).contains(number),
            "input {number} removed while an iterator reads it"
        );
    }

    while iter.advance().unwrap() {
        seen.push((iter.key().to_vec(), iter.value().to_vec()));
    }
    assert_eq!(seen.into_iter().collect::<BTreeMap<_, _>>(), expected);
    let removed_before = db.stats().obsolete_files_removed;
    drop(iter);
    let on_disk = sst_numbers_on_disk(&fs);
    for number in &inputs {
        assert!(
            !on_disk.contains(number),
            "input {number} outlived its last reader"
        );
    }
    assert_eq!(on_disk, after);
    assert!(db.stats().obsolete_files_removed >= removed_before + inputs.len() as u64);
}

#[test]
fn dropping_a_tree_removes_its_files_without_rewriting() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let db = open(&fs, options(PolicyKind::Leveled));
    let doomed = db.create_tree("doomed").unwrap();
    let kept = db.create_tree("kept").unwrap();
    for round in 0..3u64 {
        for i in 0..100u64 {
            put(&db, doomed, &key(i), &[round as u8; 50]);
            put(&db, kept, &key(i), &[round as u8; 50]);
        }
        db.flush_all().unwrap();
    }
    let doomed_files: BTreeSet<u64> = db.version().trees[&doomed]
        .files()
        .map(|f| f.number)
        .collect();
    assert!(!doomed_files.is_empty());
    let before = db.stats();

    db.drop_tree(doomed, Vec::new()).unwrap();
    let after = db.stats();
    assert_eq!(
        after.compaction_bytes_written,
        before.compaction_bytes_written
    );
    assert_eq!(after.flush_bytes_written, before.flush_bytes_written);
    let on_disk = sst_numbers_on_disk(&fs);
    assert!(on_disk.is_disjoint(&doomed_files), "dropped files remain");
    assert_eq!(on_disk, live_file_numbers(&db));
    assert_eq!(scan_all(&db, kept).len(), 100);
}

#[test]
fn write_rate_falls_as_l0_grows_and_bottoms_out() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let mut opts = options(PolicyKind::Leveled);
    opts.compaction = PolicyOptions {
        l0_trigger_files: 100, // never compact: let L0 grow
        l0_slowdown_files: 2,
        l0_max_delay_files: 6,
        slowdown_rate_start_bytes_per_sec: 1 << 20,
        slowdown_rate_knee_bytes_per_sec: 128 << 10,
        slowdown_rate_min_bytes_per_sec: 16 << 10,
        ..PolicyOptions::default()
    };
    let db = open(&fs, opts);
    let tree = db.create_tree("t").unwrap();
    let mut rates = Vec::new();
    for file in 0..9u64 {
        rates.push(db.write_rate_limit(tree));
        put(&db, tree, &key(file), b"v");
        db.flush_all().unwrap();
    }
    // rates[n] is the rate with n L0 files.
    assert_eq!(rates[..2], [None, None]);
    assert_eq!(rates[2], Some(1 << 20));
    for n in 2..6 {
        assert!(
            rates[n] > rates[n + 1],
            "not falling at {n} files: {rates:?}"
        );
    }
    for rate in &rates[6..] {
        assert_eq!(*rate, Some(16 << 10), "{rates:?}");
    }
    // Without background compaction nothing drains L0, so writes are not slowed.
    put(&db, tree, b"x", b"v");
    put(&db, tree, b"y", b"v");
    assert_eq!(db.stats().write_stalls, 0);
}

#[test]
fn slowed_writes_are_paced_by_their_bytes_and_record_their_stall() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let mut opts = options(PolicyKind::Leveled);
    opts.compaction_threads = 1;
    const RATE: u64 = 1 << 10;
    opts.compaction = PolicyOptions {
        l0_trigger_files: 100, // the compaction thread finds nothing to do
        l0_slowdown_files: 1,
        l0_max_delay_files: 3,
        slowdown_rate_start_bytes_per_sec: RATE,
        slowdown_rate_min_bytes_per_sec: RATE,
        ..PolicyOptions::default()
    };
    let db = open(&fs, opts);
    let tree = db.create_tree("t").unwrap();
    put(&db, tree, b"a", b"v");
    assert_eq!(db.stats().write_stalls, 0);
    db.flush_all().unwrap();
    assert_eq!(db.write_rate_limit(tree), Some(RATE));
    // The first slowed write goes at once and puts its bytes on the pacing clock; the next
    // waits for them: a 100-byte value's batch at 1 KiB/s is about 100 ms.
    let value = [7u8; 100];
    let mut batch = WriteBatch::new();
    batch.put(tree, b"b", &value).unwrap();
    let bytes = batch.payload().len() as u64;
    db.write(batch).unwrap();
    assert_eq!(db.stats().write_stalls, 0);
    let started = std::time::Instant::now();
    put(&db, tree, b"c", &value);
    let elapsed = started.elapsed();
    let expected = Duration::from_secs_f64(bytes as f64 / RATE as f64);
    let stats = db.stats();
    assert_eq!(stats.write_stalls, 1);
    // The clock started when the first write was admitted, a moment before `started`.
    assert!(
        stats.stall_time_total <= expected && stats.stall_time_total > expected / 2,
        "{:?} for {expected:?}",
        stats.stall_time_total
    );
    assert_eq!(stats.stall_time_longest, stats.stall_time_total);
    assert!(elapsed >= stats.stall_time_total);
}

/// The collection of a user key in this test: its first two bytes.
fn two_byte_prefix(user_key: &[u8]) -> &[u8] {
    &user_key[..user_key.len().min(2)]
}

#[test]
fn outputs_are_cut_between_item_collections() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let mut opts = options(PolicyKind::Leveled);
    opts.bloom_prefix = two_byte_prefix;
    opts.compaction.target_file_bytes = 2 << 10;
    let db = open(&fs, opts);
    let tree = db.create_tree("t").unwrap();
    // 60 collections of 8 items of about 110 bytes: each collection (~900 bytes) is well
    // under the 2 KiB target, so every cut can fall between collections.
    for round in 0..2u8 {
        for collection in 0..60u16 {
            for item in 0..8u8 {
                let mut k = collection.to_be_bytes().to_vec();
                k.push(item);
                put(&db, tree, &k, &[round; 100]);
            }
        }
        db.flush_all().unwrap();
    }
    db.compact_until_idle().unwrap();
    let version = db.version();
    let levels = &version.trees[&tree].levels;
    let mut boundaries = 0;
    for files in &levels[1..] {
        for pair in files.windows(2) {
            let (left, right) = (pair[0].largest_user_key(), pair[1].smallest_user_key());
            assert!(left < right, "adjacent files share a user key");
            assert_ne!(
                two_byte_prefix(left),
                two_byte_prefix(right),
                "a collection was split between files {} and {}",
                pair[0].number,
                pair[1].number
            );
            boundaries += 1;
        }
    }
    assert!(boundaries >= 3, "expected several output files: {levels:?}");
    assert_eq!(scan_all(&db, tree).len(), 480);
}

#[test]
fn snapshots_keep_their_view_and_released_versions_are_dropped() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let db = open(&fs, options(PolicyKind::Leveled));
    let tree = db.create_tree("t").unwrap();
    for i in 0..100u64 {
        put(&db, tree, &key(i), b"old");
    }
    let snapshot = db.snapshot();
    let old = scan_all(&db, tree);
    for i in 0..100u64 {
        if i % 2 == 0 {
            delete(&db, tree, &key(i));
        } else {
            put(&db, tree, &key(i), b"new");
        }
    }
    db.flush_all().unwrap();
    db.compact_until_idle().unwrap();
    let seen: BTreeMap<_, _> = db
        .scan(
            tree,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            Some(&snapshot),
            usize::MAX,
        )
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(seen, old, "the snapshot lost versions to compaction");
    assert_eq!(
        db.get(tree, &key(0), Some(&snapshot)).unwrap(),
        Some(b"old".to_vec())
    );
    assert_eq!(db.get(tree, &key(0), None).unwrap(), None);

    // Released: a compaction over the whole key range (two L0 files at its two ends pull in
    // every file below) keeps only the newest versions and drops the tombstones.
    drop(snapshot);
    put(&db, tree, &key(0), b"again");
    db.flush_all().unwrap();
    put(&db, tree, &key(99), b"again");
    db.flush_all().unwrap();
    db.compact_until_idle().unwrap();
    let entries: u64 = db.version().trees[&tree].files().map(|f| f.entries).sum();
    let tombstones: u64 = db.version().trees[&tree]
        .files()
        .map(|f| f.tombstones)
        .sum();
    // key 0 again, and the 50 odd keys (key 99 among them).
    assert_eq!(
        (entries, tombstones),
        (51, 0),
        "old versions or tombstones kept"
    );
    let stats = db.tree_stats(tree).unwrap();
    assert_eq!(stats.entries_estimate, 51);
    assert!(stats.live_bytes_estimate > 0);
}

#[test]
fn tree_stats_estimate_entries_and_bytes() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let db = open(&fs, options(PolicyKind::Leveled));
    let tree = db.create_tree("t").unwrap();
    assert_eq!(db.tree_stats(tree).unwrap().entries_estimate, 0);
    for i in 0..300u64 {
        put(&db, tree, &key(i), &[7; 64]);
    }
    let in_memtables = db.tree_stats(tree).unwrap();
    assert_eq!(in_memtables.entries_estimate, 300);
    db.flush_all().unwrap();
    db.compact_until_idle().unwrap();
    let full = db.tree_stats(tree).unwrap();
    assert_eq!(full.entries_estimate, 300);
    assert_eq!(full.level_files.len(), 7);
    assert_eq!(
        full.level_bytes.iter().sum::<u64>(),
        db.stats().level_bytes.iter().sum::<u64>()
    );
    for i in 0..150u64 {
        delete(&db, tree, &key(i));
    }
    db.flush_all().unwrap();
    // Tombstones not yet compacted: each is assumed to hide one put.
    assert_eq!(db.tree_stats(tree).unwrap().entries_estimate, 150);
    assert!(db.tree_stats(tree).unwrap().live_bytes_estimate < full.live_bytes_estimate);
    assert!(matches!(
        db.tree_stats(999),
        Err(shoal_engine::DbError::UnknownTree(999))
    ));
}

#[test]
fn write_amplification_counts_flushes_and_compactions() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let db = open(&fs, options(PolicyKind::Leveled));
    let tree = db.create_tree("t").unwrap();
    flush_overwrite_rounds(&db, tree, 4, 100);
    db.compact_until_idle().unwrap();
    let stats = db.stats();
    assert!(stats.user_bytes_written > 400 * 80);
    assert!(stats.flush_bytes_written > 0 && stats.compaction_bytes_written > 0);
    let expected = (stats.flush_bytes_written + stats.compaction_bytes_written) as f64
        / stats.user_bytes_written as f64;
    assert_eq!(stats.write_amplification, expected);
    assert!(stats.write_amplification > 1.0);
    assert!(stats.compaction_bytes_read > 0);
}

#[test]
fn one_compaction_is_counted_at_the_level_it_wrote_into() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let db = open(&fs, options(PolicyKind::Leveled));
    let tree = db.create_tree("t").unwrap();
    // Two flushed files of the same 20 keys: L0 reaches its trigger (2), and one job merges
    // both into one file.
    flush_overwrite_rounds(&db, tree, 2, 20);
    let flushed = db.stats();
    assert_eq!(flushed.level_files[0], 2);
    db.compact_until_idle().unwrap();
    let stats = db.stats();
    assert_eq!(stats.compactions, 1);
    assert_eq!(stats.compaction_levels.len(), stats.level_bytes.len());
    let level = (1..stats.level_files.len())
        .find(|&level| stats.level_files[level] > 0)
        .unwrap();
    for (other, counted) in stats.compaction_levels.iter().enumerate() {
        if other != level {
            assert_eq!(
                *counted,
                shoal_engine::LevelCompactionStats::default(),
                "L{other}"
            );
        }
    }
    let counted = stats.compaction_levels[level];
    assert_eq!((counted.compactions, counted.trivial_moves), (1, 0));
    // By hand: the job read the two flushed files and wrote what the level now holds.
    assert_eq!(counted.bytes_read, flushed.level_bytes[0]);
    assert_eq!(counted.bytes_read, stats.flush_bytes_written);
    assert_eq!(counted.bytes_written, stats.level_bytes[level]);
    assert_eq!(counted.bytes_written, stats.compaction_bytes_written);
    assert!(!counted.busy.is_zero());
}

#[test]
fn every_level_holding_files_was_counted_as_a_jobs_output() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let db = open(&fs, options(PolicyKind::Leveled));
    let tree = db.create_tree("t").unwrap();
    for round in 0..24u64 {
        for i in 0..100u64 {
            put(&db, tree, &key(round * 60 + i), &[round as u8; 80]);
        }
        db.flush_all().unwrap();
        db.compact_until_idle().unwrap();
    }
    let stats = db.stats();
    let levels = &stats.compaction_levels;
    // A file reaches a level below L0 only as a job's output (merged or moved), so every
    // level holding files now was counted as one; nothing compacts into L0.
    assert_eq!(levels[0], shoal_engine::LevelCompactionStats::default());
    for level in 1..levels.len() {
        let counted = levels[level];
        if stats.level_files[level] > 0 {
            assert!(
                counted.compactions + counted.trivial_moves > 0,
                "L{level}: {levels:?}"
            );
            assert!(!counted.busy.is_zero(), "L{level}");
        }
        // Bytes are read and written only by jobs that merge.
        assert_eq!(
            counted.compactions == 0,
            counted.bytes_written == 0,
            "L{level}"
        );
    }
    let filled = (1..levels.len())
        .filter(|&level| stats.level_files[level] > 0)
        .count();
    assert!(filled >= 2, "{:?}", stats.level_files);
}

#[test]
fn background_thread_compacts_while_writers_write() {
    for kind in [PolicyKind::Leveled, PolicyKind::SizeTiered] {
        let fs = shoal_vfs::sim::SimFs::new().fs();
        let mut opts = options(kind);
        opts.background_flush = true;
        opts.compaction_threads = 1;
        let db = open(&fs, opts.clone());
        let tree = db.create_tree("t").unwrap();
        let mut model = BTreeMap::new();
        for i in 0..3000u64 {
            let k = key(i % 400);
            let value = format!("{i}").into_bytes();
            put(&db, tree, &k, &value);
            model.insert(k, value);
        }
        db.flush_all().unwrap();
        // Generous bound: the thread needs no more than a moment, but CI machines are busy.
        let deadline = Instant::now() + Duration::from_secs(20);
        while db.stats().compactions == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            db.stats().compactions > 0,
            "{kind:?}: the background thread never ran"
        );
        assert!(db.poisoned().is_none());
        assert_eq!(scan_all(&db, tree), model, "{kind:?}");
        drop(db);
        let db = open(&fs, opts);
        assert_eq!(scan_all(&db, tree), model, "{kind:?} after reopen");
    }
}

#[test]
fn several_compaction_threads_share_the_work_safely() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let mut opts = options(PolicyKind::Leveled);
    opts.background_flush = true;
    opts.compaction_threads = 4;
    opts.memtable_size_bytes = 2 << 10;
    opts.compaction.target_file_bytes = 1 << 10;
    opts.compaction.base_level_bytes = 4 << 10;
    let db = open(&fs, opts.clone());
    let trees: Vec<TreeId> = (0..3)
        .map(|i| db.create_tree(&format!("t{i}")).unwrap())
        .collect();
    // Two writers, each owning half of the keys of every tree.
    std::thread::scope(|scope| {
        for writer in 0..2u64 {
            let (db, trees) = (&db, &trees);
            scope.spawn(move || {
                for i in 0..1500u64 {
                    let mut batch = WriteBatch::new();
                    for tree in trees {
                        let k = key((i % 200) * 2 + writer);
                        batch.put(*tree, &k, &i.to_be_bytes()).unwrap();
                    }
                    db.write(batch).unwrap();
                }
            });
        }
    });
    db.flush_all().unwrap();
    db.compact_until_idle().unwrap();
    assert!(db.poisoned().is_none(), "{:?}", db.poisoned());
    assert!(db.stats().compactions > 0);
    for tree in &trees {
        let all = scan_all(&db, *tree);
        assert_eq!(all.len(), 400);
        // Each key's last write was in the writer's last pass over its keys.
        for (k, v) in &all {
            let index: u64 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
            let slot = index / 2; // i % 200 of the writes to this key
            let last_i = if slot < 100 { 1400 + slot } else { 1200 + slot };
            assert_eq!(v, &last_i.to_be_bytes().to_vec(), "key {index}");
        }
    }
    assert_eq!(sst_numbers_on_disk(&fs), live_file_numbers(&db));
    drop(db);
    let db = open(&fs, opts);
    assert_eq!(scan_all(&db, trees[0]).len(), 400);
}

/// Flushes and compactions write their tables over obsolete files kept for reuse; every
/// value stays readable, and the open after the database closes removes the kept files.
#[test]
fn new_tables_reuse_recycled_files_and_reads_stay_exact() {
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let db = open(&fs, options(PolicyKind::Leveled));
    let tree = db.create_tree("t").unwrap();
    let mut expected = BTreeMap::new();
    for round in 0..20u64 {
        for i in 0..200u64 {
            let value = vec![(round + i) as u8; 40 + (i % 7) as usize];
            put(&db, tree, &key(i), &value);
            expected.insert(key(i), value);
        }
        db.flush_all().unwrap();
        db.compact_until_idle().unwrap();
    }
    assert!(
        db.stats().table_files_reused > 0,
        "no table was written over a recycled file: {:?}",
        db.stats()
    );
    assert_eq!(scan_all(&db, tree), expected);
    drop(db);

    let db = open(&fs, options(PolicyKind::Leveled));
    assert_eq!(scan_all(&db, tree), expected);
    let names = fs.list(Path::new(DIR)).unwrap();
    assert!(
        names
            .iter()
            .all(|name| shoal_engine::manifest::parse_recycled_sst_file_name(name).is_none()),
        "{names:?}"
    );
}
