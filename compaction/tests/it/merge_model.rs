//! Model tests for `MergingIterator` (over plain children and over `ConcatenatingIterator`
//! levels) and `UserIterator`: random versions spread over random children, random
//! sequences of seeks and moves in both directions, compared at every step against a plain
//! sorted list (merge) or a map of user key -> newest visible value (user view).

use std::collections::BTreeMap;

use proptest::prelude::*;
use shoal_compaction::key::encode;
use shoal_compaction::{
    compare_internal, ConcatenatingIterator, EntryKind, InternalIterator, MergingIterator,
    UserIterator, VecIterator,
};

/// One version of a user key.
#[derive(Debug, Clone)]
struct Version {
    user_key: Vec<u8>,
    seq: u64,
    kind: EntryKind,
    child: usize,
}

impl Version {
    fn internal_key(&self) -> Vec<u8> {
        encode(&self.user_key, self.seq, self.kind)
    }

    fn value(&self) -> Vec<u8> {
        match self.kind {
            EntryKind::Put => format!("{:?}@{}", self.user_key, self.seq).into_bytes(),
            EntryKind::Delete => Vec::new(),
        }
    }
}

const CHILDREN_MAX: usize = 5;

/// Small alphabets so keys collide, share prefixes, and include the empty key.
fn user_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..3, 0..3)
}

/// Versions with distinct (user key, seq) pairs, each assigned to a child.
fn versions() -> impl Strategy<Value = Vec<Version>> {
    prop::collection::btree_map(
        (user_key(), 1u64..12),
        (any::<bool>(), 0..CHILDREN_MAX),
        0..40,
    )
    .prop_map(|map| {
        map.into_iter()
            .map(|((user_key, seq), (is_put, child))| Version {
                user_key,
                seq,
                kind: if is_put {
                    EntryKind::Put
                } else {
                    EntryKind::Delete
                },
                child,
            })
            .collect()
    })
}

#[derive(Debug, Clone)]
enum Op {
    SeekToFirst,
    SeekToLast,
    Seek(Vec<u8>, u64),
    SeekForPrev(Vec<u8>, u64),
    Next,
    Prev,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::SeekToFirst),
        1 => Just(Op::SeekToLast),
        2 => (user_key(), 0u64..13).prop_map(|(k, s)| Op::Seek(k, s)),
        2 => (user_key(), 0u64..13).prop_map(|(k, s)| Op::SeekForPrev(k, s)),
        4 => Just(Op::Next),
        4 => Just(Op::Prev),
    ]
}

fn merged(versions: &[Version]) -> MergingIterator<VecIterator> {
    let mut children: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); CHILDREN_MAX];
    for v in versions {
        children[v.child].push((v.internal_key(), v.value()));
    }
    MergingIterator::new(children.into_iter().map(VecIterator::new).collect())
}

/// The newest version <= `snapshot_seq` of each user key, if it is a put.
fn visible(versions: &[Version], snapshot_seq: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut newest: BTreeMap<Vec<u8>, &Version> = BTreeMap::new();
    for v in versions.iter().filter(|v| v.seq <= snapshot_seq) {
        let entry = newest.entry(v.user_key.clone()).or_insert(v);
        if v.seq > entry.seq {
            *entry = v;
        }
    }
    newest
        .into_iter()
        .filter(|(_, v)| v.kind == EntryKind::Put)
        .map(|(k, v)| (k, v.value()))
        .collect()
}

/// Runs `ops` on `it`, a merge of `versions`, checking every step against a sorted list of
/// them.
fn follow_sorted_model(
    it: &mut impl InternalIterator,
    versions: &[Version],
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut model: Vec<(Vec<u8>, Vec<u8>)> = versions
        .iter()
        .map(|v| (v.internal_key(), v.value()))
        .collect();
    model.sort_by(|a, b| compare_internal(&a.0, &b.0));
    let mut position: Option<usize> = None;
    for op in ops {
        match op {
            Op::SeekToFirst => {
                it.seek_to_first().unwrap();
                position = (!model.is_empty()).then_some(0);
            }
            Op::SeekToLast => {
                it.seek_to_last().unwrap();
                position = model.len().checked_sub(1);
            }
            Op::Seek(k, s) => {
                let target = encode(k, *s, EntryKind::Put);
                it.seek(&target).unwrap();
                let i = model.partition_point(|e| compare_internal(&e.0, &target).is_lt());
                position = (i < model.len()).then_some(i);
            }
            Op::SeekForPrev(k, s) => {
                let target = encode(k, *s, EntryKind::Delete);
                it.seek_for_prev(&target).unwrap();
                let i = model.partition_point(|e| compare_internal(&e.0, &target).is_le());
                position = i.checked_sub(1);
            }
            Op::Next => {
                it.next().unwrap();
                position = position.map(|i| i + 1).filter(|&i| i < model.len());
            }
            Op::Prev => {
                it.prev().unwrap();
                position = position.and_then(|i| i.checked_sub(1));
            }
        }
        prop_assert_eq!(it.valid(), position.is_some(), "after {:?}", op);
        if let Some(i) = position {
            prop_assert_eq!(it.key(), &model[i].0[..], "after {:?}", op);
            prop_assert_eq!(it.value(), &model[i].1[..], "after {:?}", op);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn merge_matches_sorted_model(versions in versions(), ops in prop::collection::vec(op(), 1..40)) {
        follow_sorted_model(&mut merged(&versions), &versions, &ops)?;
    }

    /// The same, with each child a level: its entries cut into files at random places (a
    /// user key's versions may straddle a cut), walked by a
    /// `ConcatenatingIterator`, as compaction merges the levels below L0.
    #[test]
    fn merge_of_concatenated_levels_matches_sorted_model(
        versions in versions(),
        cuts in prop::collection::vec(prop::collection::vec(0usize..40, 0..6), CHILDREN_MAX),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let mut children: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); CHILDREN_MAX];
        for v in &versions {
            children[v.child].push((v.internal_key(), v.value()));
        }
        let levels = children
            .into_iter()
            .zip(&cuts)
            .map(|(mut entries, cuts)| {
                entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
                let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(entries.len())).collect();
                cuts.sort_unstable();
                let mut files = Vec::new();
                let mut from = 0;
                for cut in cuts.into_iter().chain([entries.len()]) {
                    // A file holds at least one entry (its bounds are its first and last).
                    if cut > from {
                        files.push(VecIterator::from_raw(entries[from..cut].to_vec()));
                    }
                    from = cut;
                }
                let bounds = files.iter().filter_map(VecIterator::bounds).collect();
                ConcatenatingIterator::new(files, bounds)
            })
            .collect();
        follow_sorted_model(&mut MergingIterator::new(levels), &versions, &ops)?;
    }

    #[test]
    fn user_view_matches_newest_visible_model(
        versions in versions(),
        snapshot_seq in 0u64..13,
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let model = visible(&versions, snapshot_seq);
        let mut it = UserIterator::new(merged(&versions), snapshot_seq);
        let mut position: Option<usize> = None;
        for op in &ops {
            match op {
                Op::SeekToFirst => {
                    it.seek_to_first().unwrap();
                    position = (!model.is_empty()).then_some(0);
                }
                Op::SeekToLast => {
                    it.seek_to_last().unwrap();
                    position = model.len().checked_sub(1);
                }
                Op::Seek(k, _) => {
                    it.seek(k).unwrap();
                    let i = model.partition_point(|e| e.0 < *k);
                    position = (i < model.len()).then_some(i);
                }
                Op::SeekForPrev(k, _) => {
                    it.seek_for_prev(k).unwrap();
                    let i = model.partition_point(|e| e.0 <= *k);
                    position = i.checked_sub(1);
                }
                Op::Next => {
                    it.next().unwrap();
                    position = position.map(|i| i + 1).filter(|&i| i < model.len());
                }
                Op::Prev => {
                    it.prev().unwrap();
                    position = position.and_then(|i| i.checked_sub(1));
                }
            }
            prop_assert_eq!(it.valid(), position.is_some(), "after {:?}", op);
            if let Some(i) = position {
                prop_assert_eq!(it.user_key(), &model[i].0[..], "after {:?}", op);
                prop_assert_eq!(it.value(), &model[i].1[..], "after {:?}", op);
            }
        }
    }

    #[test]
    fn user_view_full_scans_agree_both_ways(versions in versions(), snapshot_seq in 0u64..13) {
        let model = visible(&versions, snapshot_seq);
        let mut it = UserIterator::new(merged(&versions), snapshot_seq);
        let mut forward = Vec::new();
        it.seek_to_first().unwrap();
        while it.valid() {
            forward.push((it.user_key().to_vec(), it.value().to_vec()));
            it.next().unwrap();
        }
        prop_assert_eq!(&forward, &model);
        let mut backward = Vec::new();
        it.seek_to_last().unwrap();
        while it.valid() {
            backward.push((it.user_key().to_vec(), it.value().to_vec()));
            it.prev().unwrap();
        }
        backward.reverse();
        prop_assert_eq!(&backward, &model);
    }
}
