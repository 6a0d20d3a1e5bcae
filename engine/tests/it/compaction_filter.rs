//! The compaction filter (`DbOptions::compaction_filter`) and `Db::compact_tree`: what the
//! filter drops is gone from reads and from the SSTables, everything else is untouched, it is
//! never asked about tombstones, and a dropped key's older versions do not come back.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use shoal_engine::{CompactionFilter, Db, DbOptions, Durability, TreeId, WriteBatch};
use shoal_vfs::sim::SimFs;

const EXPIRED: &[u8] = b"expired/";

/// Drops the puts of keys starting with [`EXPIRED`] in one tree, and records what it is
/// asked about.
#[derive(Debug, Default)]
struct ExpiredFilter {
    tree: OnceLock<TreeId>,
    asked: Mutex<Vec<(TreeId, Vec<u8>)>>,
}

impl CompactionFilter for ExpiredFilter {
    fn drop_entry(&self, tree: TreeId, user_key: &[u8], _value: &[u8]) -> bool {
        self.asked.lock().unwrap().push((tree, user_key.to_vec()));
        self.tree.get() == Some(&tree) && user_key.starts_with(EXPIRED)
    }
}

impl ExpiredFilter {
    fn asked_keys(&self) -> Vec<Vec<u8>> {
        let asked = self.asked.lock().unwrap();
        asked.iter().map(|(_, key)| key.clone()).collect()
    }
}

fn open(filter: &Arc<ExpiredFilter>, tune: impl FnOnce(&mut DbOptions)) -> Db {
    let mut options = DbOptions {
        durability: Durability::None,
        background_flush: false,
        compaction_threads: 0,
        compaction_filter: Some(Arc::clone(filter) as Arc<dyn CompactionFilter>),
        ..DbOptions::default()
    };
    tune(&mut options);
    Db::open_with_fs(SimFs::new().fs(), Path::new("/db"), options).unwrap()
}

fn scan_all(db: &Db, tree: TreeId) -> BTreeMap<Vec<u8>, Vec<u8>> {
    crate::scan_all(db, tree).into_iter().collect()
}

fn key(prefix: &[u8], index: u32) -> Vec<u8> {
    [prefix, format!("{index:04}").as_bytes()].concat()
}

fn put_all(db: &Db, tree: TreeId, prefix: &[u8], indexes: std::ops::Range<u32>) {
    let mut batch = WriteBatch::new();
    for index in indexes {
        batch
            .put(tree, &key(prefix, index), format!("v{index}").as_bytes())
            .unwrap();
    }
    db.write(batch).unwrap();
}

/// Flushed in two L0 files and compacted by the policy (the L0 job of a small tree goes to
/// its last level, so it is bottommost): the filtered tree's expired keys are gone from
/// reads and from its tables' entry counts; its other keys, and the other tree's expired
/// keys, are untouched.
#[test]
fn policy_compactions_drop_what_the_filter_says_and_nothing_else() {
    let filter = Arc::new(ExpiredFilter::default());
    let db = open(&filter, |options| options.compaction.l0_trigger_files = 2);
    let stream = db.create_tree("stream").unwrap();
    let other = db.create_tree("other").unwrap();
    filter.tree.set(stream).unwrap();
    for half in [0..50, 50..100] {
        put_all(&db, stream, EXPIRED, half.clone());
        put_all(&db, stream, b"live/", half.clone());
        put_all(&db, other, EXPIRED, half);
        db.flush_all().unwrap();
    }
    assert_eq!(db.tree_stats(stream).unwrap().entries_estimate, 200);
    db.compact_until_idle().unwrap();

    let stats = db.stats();
    assert!(stats.compactions >= 2, "both trees were compacted");
    assert_eq!(stats.compaction_entries_filtered, 100);
    let live = scan_all(&db, stream);
    assert_eq!(live.len(), 100);
    assert!(live.keys().all(|k| k.starts_with(b"live/")));
    for index in 0..100 {
        assert_eq!(db.get(stream, &key(EXPIRED, index), None).unwrap(), None);
        assert_eq!(
            db.get(stream, &key(b"live/", index), None).unwrap(),
            Some(format!("v{index}").into_bytes())
        );
    }
    let stream_stats = db.tree_stats(stream).unwrap();
    assert_eq!(stream_stats.entries_estimate, 100, "gone from the SSTables");
    assert_eq!(stream_stats.level_files[0], 0);
    assert_eq!(scan_all(&db, other).len(), 100);
    assert_eq!(db.tree_stats(other).unwrap().entries_estimate, 100);
}

/// A tombstone is never offered; a key whose newest put is dropped loses the older version
/// a snapshot held as well, so the latest state does not fall back to it. Snapshots are not
/// protected from the filter (its docs say why): the one taken here loses the key too.
#[test]
fn tombstones_are_never_offered_and_older_versions_of_a_dropped_key_go_too() {
    let filter = Arc::new(ExpiredFilter::default());
    let db = open(&filter, |_| {});
    let stream = db.create_tree("stream").unwrap();
    filter.tree.set(stream).unwrap();
    let deleted = key(EXPIRED, 1);
    let overwritten = key(EXPIRED, 2);
    let mut batch = WriteBatch::new();
    batch.put(stream, &deleted, b"old").unwrap();
    batch.put(stream, &overwritten, b"first").unwrap();
    batch.put(stream, b"live/1", b"kept").unwrap();
    db.write(batch).unwrap();
    // The snapshot keeps both older versions through garbage collection (stripe 0), and
    // with it the tombstone stays too (stripe 1): the filter could be offered either.
    let snapshot = db.snapshot();
    let mut batch = WriteBatch::new();
    batch.delete(stream, &deleted).unwrap();
    batch.put(stream, &overwritten, b"second").unwrap();
    db.write(batch).unwrap();

    db.compact_tree(stream).unwrap();

    let asked = filter.asked_keys();
    assert!(
        !asked.contains(&deleted),
        "asked about a deleted key: {asked:?}"
    );
    assert_eq!(
        asked.iter().filter(|k| **k == overwritten).count(),
        1,
        "asked once, about the newest version"
    );
    assert_eq!(db.get(stream, &overwritten, None).unwrap(), None);
    assert_eq!(db.get(stream, &overwritten, Some(&snapshot)).unwrap(), None);
    assert_eq!(db.get(stream, &deleted, None).unwrap(), None);
    assert_eq!(
        db.get(stream, &deleted, Some(&snapshot)).unwrap(),
        Some(b"old".to_vec()),
        "what the filter did not drop still serves the snapshot"
    );
    assert_eq!(
        db.get(stream, b"live/1", None).unwrap(),
        Some(b"kept".to_vec())
    );
    assert_eq!(db.stats().compaction_entries_filtered, 2);
}

/// A tree the policy would leave alone (one L0 file, under the trigger, and the rest still
/// in the memtable): `compact_tree` flushes it and rewrites it whole into the last level,
/// through the filter. With nothing in it, it has nothing to do.
#[test]
fn compact_tree_flushes_and_rewrites_a_quiet_tree_through_the_filter() {
    let filter = Arc::new(ExpiredFilter::default());
    let db = open(&filter, |_| {});
    let stream = db.create_tree("stream").unwrap();
    let empty = db.create_tree("empty").unwrap();
    filter.tree.set(stream).unwrap();
    put_all(&db, stream, EXPIRED, 0..10);
    put_all(&db, stream, b"live/", 0..10);
    db.flush_all().unwrap();
    put_all(&db, stream, EXPIRED, 10..20);
    db.compact_until_idle().unwrap();
    assert_eq!(db.stats().compactions, 0, "the policy has nothing to do");

    db.compact_tree(stream).unwrap();
    let stats = db.tree_stats(stream).unwrap();
    assert_eq!(stats.entries_estimate, 10);
    let last_level = stats.level_files.len() - 1;
    assert_eq!(stats.level_files[last_level], 1);
    assert_eq!(stats.level_files.iter().sum::<usize>(), 1);
    assert_eq!(scan_all(&db, stream).len(), 10);
    assert_eq!(db.stats().compaction_entries_filtered, 20);

    // Nothing left to drop: a second call rewrites the same keys.
    db.compact_tree(stream).unwrap();
    assert_eq!(db.tree_stats(stream).unwrap().entries_estimate, 10);
    db.compact_tree(empty).unwrap();
    assert_eq!(
        db.tree_stats(empty)
            .unwrap()
            .level_files
            .iter()
            .sum::<usize>(),
        0
    );
    assert!(matches!(
        db.compact_tree(TreeId::MAX),
        Err(shoal_engine::DbError::UnknownTree(_))
    ));
}

/// `compact_tree` beside background flushes and compactions and a writer: it waits for the
/// tree's running jobs and claims the rest, and when the writer is done a last call leaves
/// exactly the live keys.
#[test]
fn compact_tree_runs_beside_background_jobs() {
    let filter = Arc::new(ExpiredFilter::default());
    let db = Arc::new(open(&filter, |options| {
        options.background_flush = true;
        options.compaction_threads = 2;
        options.memtable_size_bytes = 4 << 10;
        options.compaction.l0_trigger_files = 2;
        options.compaction.target_file_bytes = 2 << 10;
        options.compaction.base_level_bytes = 16 << 10;
    }));
    let stream = db.create_tree("stream").unwrap();
    filter.tree.set(stream).unwrap();
    const ROUNDS: u32 = 1000;
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            for round in 0..ROUNDS {
                put_all(&db, stream, EXPIRED, round * 5..round * 5 + 5);
                put_all(&db, stream, b"live/", round * 5..round * 5 + 5);
            }
        })
    };
    while !writer.is_finished() {
        db.compact_tree(stream).unwrap();
    }
    writer.join().unwrap();
    db.compact_tree(stream).unwrap();
    let live = scan_all(&db, stream);
    assert_eq!(live.len() as u32, ROUNDS * 5);
    assert!(live.keys().all(|k| k.starts_with(b"live/")));
    assert_eq!(db.poisoned(), None);
}
