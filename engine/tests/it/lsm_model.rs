//! Model test of the LSM database: random sequences of multi-tree batches, point gets,
//! forward and reverse range scans, snapshots, flushes, compactions and reopens, compared at
//! every read with a BTreeMap model. Memtables and compaction targets are tiny, so files are
//! flushed, compacted (leveled or size-tiered, in the background and on demand) and removed
//! while snapshots and reads are live.

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use shoal_compaction::{PolicyKind, PolicyOptions};
use shoal_engine::Durability;
use shoal_engine::{Db, DbOptions, Direction, Snapshot, TreeId, WriteBatch};

const TREES: usize = 3;

type Key = Vec<u8>;
type Model = Vec<BTreeMap<Key, Vec<u8>>>;

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<(usize, Key, Option<Vec<u8>>)>),
    Get(usize, Key),
    Scan {
        tree: usize,
        lower: Bound<Key>,
        upper: Bound<Key>,
        reverse: bool,
    },
    TakeSnapshot,
    ReadSnapshot(usize, usize, bool),
    DropSnapshot(usize),
    Flush,
    Compact,
    Reopen,
}

fn key() -> impl Strategy<Value = Key> {
    prop::collection::vec(
        prop::sample::select(vec![0u8, b'a', b'b', b'c', 0xff]),
        0..4,
    )
}

fn bound() -> impl Strategy<Value = Bound<Key>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let value = prop::collection::vec(any::<u8>(), 0..40);
    let entry = (0..TREES, key(), prop::option::weighted(0.75, value));
    prop_oneof![
        8 => prop::collection::vec(entry, 1..6).prop_map(Op::Write),
        4 => (0..TREES, key()).prop_map(|(t, k)| Op::Get(t, k)),
        4 => (0..TREES, bound(), bound(), any::<bool>())
            .prop_map(|(tree, lower, upper, reverse)| Op::Scan { tree, lower, upper, reverse }),
        1 => Just(Op::TakeSnapshot),
        2 => (0..8usize, 0..TREES, any::<bool>()).prop_map(|(s, t, r)| Op::ReadSnapshot(s, t, r)),
        1 => (0..8usize).prop_map(Op::DropSnapshot),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

fn options(kind: PolicyKind) -> DbOptions {
    DbOptions {
        durability: Durability::None,
        // Tiny memtables: most runs freeze and flush several times.
        memtable_size_bytes: 700,
        wal_segment_size_bytes: 16 << 10,
        // Tiny compaction targets: two L0 files trigger a compaction, output files are cut
        // every few entries, and levels fill after a few hundred bytes.
        compaction: PolicyOptions {
            kind,
            l0_trigger_files: 2,
            base_level_bytes: 1 << 10,
            target_file_bytes: 256,
            level_ratio: 2,
            ..PolicyOptions::default()
        },
        compaction_threads: 1,
        ..DbOptions::default()
    }
}

fn as_ref(bound: &Bound<Key>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn model_range(
    map: &BTreeMap<Key, Vec<u8>>,
    lower: &Bound<Key>,
    upper: &Bound<Key>,
    reverse: bool,
) -> Vec<(Key, Vec<u8>)> {
    let mut out: Vec<_> = map
        .iter()
        .filter(|(k, _)| {
            let above = match lower {
                Bound::Included(l) => *k >= l,
                Bound::Excluded(l) => *k > l,
                Bound::Unbounded => true,
            };
            let below = match upper {
                Bound::Included(u) => *k <= u,
                Bound::Excluded(u) => *k < u,
                Bound::Unbounded => true,
            };
            above && below
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if reverse {
        out.reverse();
    }
    out
}

fn open_trees(db: &Db) -> Vec<TreeId> {
    (0..TREES)
        .map(|i| {
            let name = format!("tree{i}");
            db.tree_id(&name)
                .unwrap_or_else(|| db.create_tree(&name).unwrap())
        })
        .collect()
}

/// Runs `ops` against the database and the model; returns how many compactions ran.
fn run(ops: Vec<Op>, kind: PolicyKind) -> Result<u64, TestCaseError> {
    // An in-memory disk: the model test is about logic, and real fsyncs would make it slow.
    let fs = shoal_vfs::sim::SimFs::new().fs();
    let dir = std::path::Path::new("/db");
    let options = || options(kind);
    let mut compactions = 0;
    let mut db = Db::open_with_fs(fs.clone(), dir, options()).unwrap();
    let mut trees = open_trees(&db);
    let mut model: Model = vec![BTreeMap::new(); TREES];
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();

    for op in ops {
        match op {
            Op::Write(entries) => {
                let mut batch = WriteBatch::new();
                for (tree, key, value) in &entries {
                    match value {
                        Some(v) => batch.put(trees[*tree], key, v).unwrap(),
                        None => batch.delete(trees[*tree], key).unwrap(),
                    }
                }
                db.write(batch).unwrap();
                for (tree, key, value) in entries {
                    match value {
                        Some(v) => model[tree].insert(key, v),
                        None => model[tree].remove(&key),
                    };
                }
            }
            Op::Get(tree, key) => {
                let got = db.get(trees[tree], &key, None).unwrap();
                prop_assert_eq!(got.as_ref(), model[tree].get(&key), "get {:?}", key);
            }
            Op::Scan {
                tree,
                lower,
                upper,
                reverse,
            } => {
                let direction = if reverse {
                    Direction::Reverse
                } else {
                    Direction::Forward
                };
                let got = db
                    .scan(
                        trees[tree],
                        as_ref(&lower),
                        as_ref(&upper),
                        direction,
                        None,
                        usize::MAX,
                    )
                    .unwrap();
                prop_assert_eq!(got, model_range(&model[tree], &lower, &upper, reverse));
            }
            Op::TakeSnapshot => {
                if snapshots.len() < 8 {
                    snapshots.push((db.snapshot(), model.clone()));
                }
            }
            Op::ReadSnapshot(index, tree, reverse) => {
                if let Some((snapshot, frozen)) = snapshots.get(index % snapshots.len().max(1)) {
                    let direction = if reverse {
                        Direction::Reverse
                    } else {
                        Direction::Forward
                    };
                    let got = db
                        .scan(
                            trees[tree],
                            Bound::Unbounded,
                            Bound::Unbounded,
                            direction,
                            Some(snapshot),
                            usize::MAX,
                        )
                        .unwrap();
                    let expected =
                        model_range(&frozen[tree], &Bound::Unbounded, &Bound::Unbounded, reverse);
                    prop_assert_eq!(got, expected, "snapshot read");
                    for (key, value) in &frozen[tree] {
                        let got = db.get(trees[tree], key, Some(snapshot)).unwrap();
                        prop_assert_eq!(got.as_ref(), Some(value));
                    }
                }
            }
            Op::DropSnapshot(index) => {
                if !snapshots.is_empty() {
                    let index = index % snapshots.len();
                    snapshots.remove(index);
                }
            }
            Op::Flush => db.flush_all().unwrap(),
            Op::Compact => {
                db.flush_all().unwrap();
                db.compact_until_idle().unwrap();
            }
            Op::Reopen => {
                // Snapshots do not survive a restart.
                snapshots.clear();
                compactions += db.stats().compactions;
                drop(db);
                db = Db::open_with_fs(fs.clone(), dir, options()).unwrap();
                trees = open_trees(&db);
            }
        }
    }
    // Finally every tree, both directions, and after one more reopen.
    for round in 0..2 {
        for tree in 0..TREES {
            for reverse in [false, true] {
                let direction = if reverse {
                    Direction::Reverse
                } else {
                    Direction::Forward
                };
                let got = db
                    .scan(
                        trees[tree],
                        Bound::Unbounded,
                        Bound::Unbounded,
                        direction,
                        None,
                        usize::MAX,
                    )
                    .unwrap();
                let expected =
                    model_range(&model[tree], &Bound::Unbounded, &Bound::Unbounded, reverse);
                prop_assert_eq!(got, expected, "final scan, round {}", round);
            }
        }
        snapshots.clear();
        compactions += db.stats().compactions;
        drop(db);
        db = Db::open_with_fs(fs.clone(), dir, options()).unwrap();
        trees = open_trees(&db);
    }
    Ok(compactions)
}

fn policy_kind(tiered: bool) -> PolicyKind {
    if tiered {
        PolicyKind::SizeTiered
    } else {
        PolicyKind::Leveled
    }
}

/// A fixed workload long enough that both policies must compact: proves the model test
/// really exercises compaction (the random cases mostly do too, but need not).
#[test]
fn model_workload_really_compacts() {
    for kind in [PolicyKind::Leveled, PolicyKind::SizeTiered] {
        let mut ops = Vec::new();
        for i in 0..300u32 {
            let key = vec![b'a' + (i % 3) as u8, (i % 7) as u8];
            let value = (i % 5 != 4).then(|| vec![i as u8; 30]);
            ops.push(Op::Write(vec![((i % 3) as usize, key.clone(), value)]));
            if i % 50 == 0 {
                ops.push(Op::TakeSnapshot);
            }
            if i % 40 == 39 {
                ops.push(Op::Compact);
                ops.push(Op::ReadSnapshot(i as usize, (i % 3) as usize, false));
            }
        }
        let compactions = run(ops, kind).unwrap();
        assert!(compactions > 0, "{kind:?}: no compaction ran");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn lsm_matches_a_btreemap_model(
        ops in prop::collection::vec(op(), 1..160),
        tiered in any::<bool>(),
    ) {
        run(ops, policy_kind(tiered))?;
    }
}
