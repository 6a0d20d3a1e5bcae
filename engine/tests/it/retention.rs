//! Retention floors (`DbOptions::version_retention`): compaction keeps a tree's history
//! above its floor, `Db::snapshot_at` reads it, and `Db::create_trees_at_snapshot` makes a
//! new tree of it; a tree without a floor loses its old versions as before.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use shoal_compaction::{PolicyKind, PolicyOptions};
use shoal_engine::{
    Db, DbError, DbOptions, Direction, Durability, Snapshot, TreeId, VersionRetention, WriteBatch,
};
use shoal_vfs::Fs;

const DIR: &str = "/db";

#[derive(Debug, Default)]
struct Floors(Mutex<HashMap<TreeId, u64>>);

impl VersionRetention for Floors {
    fn floor(&self, tree: TreeId) -> Option<u64> {
        self.0.lock().get(&tree).copied()
    }
}

fn open(fs: &Fs, floors: &Arc<Floors>) -> Db {
    let options = DbOptions {
        durability: Durability::None,
        memtable_size_bytes: 4 << 10,
        background_flush: false,
        compaction_threads: 0,
        compaction: PolicyOptions {
            kind: PolicyKind::Leveled,
            l0_trigger_files: 2,
            base_level_bytes: 16 << 10,
            target_file_bytes: 4 << 10,
            level_ratio: 4,
            ..PolicyOptions::default()
        },
        version_retention: Some(Arc::clone(floors) as Arc<dyn VersionRetention>),
        ..DbOptions::default()
    };
    Db::open_with_fs(fs.clone(), Path::new(DIR), options).unwrap()
}

type Contents = BTreeMap<Vec<u8>, Vec<u8>>;

fn at(db: &Db, tree: TreeId, snapshot: &Snapshot) -> Contents {
    db.scan(
        tree,
        Bound::Unbounded,
        Bound::Unbounded,
        Direction::Forward,
        Some(snapshot),
        usize::MAX,
    )
    .unwrap()
    .into_iter()
    .collect()
}

/// Rounds of overwrites and deletes of 40 keys; returns each round's last sequence number
/// and the tree's contents then.
fn history(db: &Db, tree: TreeId) -> Vec<(u64, Contents)> {
    let mut model = BTreeMap::new();
    let mut rounds = Vec::new();
    for round in 0..6u32 {
        for i in 0..40u32 {
            let key = format!("k{i:03}").into_bytes();
            let mut batch = WriteBatch::new();
            if (i + round) % 5 == 0 {
                batch.delete(tree, &key).unwrap();
                model.remove(&key);
            } else {
                let value = format!("r{round}-{i}-{}", "v".repeat(120)).into_bytes();
                batch.put(tree, &key, &value).unwrap();
                model.insert(key, value);
            }
            db.write(batch).unwrap();
        }
        rounds.push((db.visible_seq(), model.clone()));
        db.flush_all().unwrap();
    }
    rounds
}

#[test]
fn a_floor_keeps_every_version_above_it_through_compaction() {
    let fs = shoal_vfs::mem::MemFs::new().fs();
    let floors = Arc::new(Floors::default());
    let db = open(&fs, &floors);
    let kept = db.create_tree("kept").unwrap();
    let plain = db.create_tree("plain").unwrap();
    floors.0.lock().insert(kept, 0);
    let kept_rounds = history(&db, kept);
    let plain_rounds = history(&db, plain);
    // Rewrite both trees whole, into their last level.
    db.compact_tree(kept).unwrap();
    db.compact_tree(plain).unwrap();

    for (seq, expected) in &kept_rounds {
        let snapshot = db.snapshot_at(*seq).unwrap();
        assert_eq!(&at(&db, kept, &snapshot), expected, "kept tree at {seq}");
    }
    // Without a floor the first round's versions are gone: a late snapshot at its number
    // finds newer ones or nothing.
    let (first_seq, first) = &plain_rounds[0];
    let snapshot = db.snapshot_at(*first_seq).unwrap();
    assert_ne!(&at(&db, plain, &snapshot), first);

    // A copy of the kept tree at round 2 holds round 2, through a reopen.
    let (seq, expected) = &kept_rounds[2];
    let snapshot = db.snapshot_at(*seq).unwrap();
    let ids = db
        .create_trees_at_snapshot(&["copy".to_string()], &[Some(kept)], &snapshot, |_| {
            Vec::new()
        })
        .unwrap();
    drop(snapshot);
    let now = db.snapshot();
    assert_eq!(&at(&db, ids[0], &now), expected);
    drop(now);
    drop(db);
    let db = open(&fs, &floors);
    let copy = db.tree_id("copy").unwrap();
    let now = db.snapshot();
    assert_eq!(&at(&db, copy, &now), expected);
}

#[test]
fn a_raised_floor_lets_older_versions_go() {
    let fs = shoal_vfs::mem::MemFs::new().fs();
    let floors = Arc::new(Floors::default());
    let db = open(&fs, &floors);
    let tree = db.create_tree("t").unwrap();
    floors.0.lock().insert(tree, 0);
    let rounds = history(&db, tree);
    db.compact_tree(tree).unwrap();
    let bytes = |db: &Db| db.tree_stats(tree).unwrap().level_bytes.iter().sum::<u64>();
    let bytes_before = bytes(&db);
    floors.0.lock().insert(tree, rounds[4].0);
    db.compact_tree(tree).unwrap();
    let bytes_after = bytes(&db);
    assert!(
        bytes_after * 2 < bytes_before,
        "raising the floor dropped too little: {bytes_before} bytes then {bytes_after}"
    );
    for (seq, expected) in &rounds[4..] {
        let snapshot = db.snapshot_at(*seq).unwrap();
        assert_eq!(&at(&db, tree, &snapshot), expected, "at {seq}");
    }
}

#[test]
fn a_snapshot_in_the_future_is_refused() {
    let fs = shoal_vfs::mem::MemFs::new().fs();
    let floors = Arc::new(Floors::default());
    let db = open(&fs, &floors);
    let visible = db.visible_seq();
    assert!(matches!(
        db.snapshot_at(visible + 1),
        Err(DbError::SnapshotInFuture { .. })
    ));
}
