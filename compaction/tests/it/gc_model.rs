//! Model test for `CompactionIterator`: random versions spread over random children, random
//! live snapshots, bottommost or not. Checks that every reader (each live snapshot and the
//! latest state) sees exactly what it saw before, that only obsolete versions and (at the
//! bottom, below every snapshot) tombstones are dropped, and that the output stays sorted.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use shoal_compaction::key::encode;
use shoal_compaction::{
    compare_internal, CompactionIterator, EntryKind, InternalKey, MergingIterator, VecIterator,
    SEQ_MAX,
};

const CHILDREN_MAX: usize = 4;

/// (user key, seq) -> (kind, child)
type Versions = BTreeMap<(Vec<u8>, u64), (EntryKind, usize)>;

fn versions() -> impl Strategy<Value = Versions> {
    prop::collection::btree_map(
        (prop::collection::vec(0u8..3, 0..3), 1u64..20),
        (any::<bool>(), 0..CHILDREN_MAX),
        0..60,
    )
    .prop_map(|map| {
        map.into_iter()
            .map(|(k, (is_put, child))| {
                let kind = if is_put {
                    EntryKind::Put
                } else {
                    EntryKind::Delete
                };
                (k, (kind, child))
            })
            .collect()
    })
}

fn value_of(user_key: &[u8], seq: u64, kind: EntryKind) -> Vec<u8> {
    match kind {
        EntryKind::Put => format!("{user_key:?}@{seq}").into_bytes(),
        EntryKind::Delete => Vec::new(),
    }
}

/// What a reader at `snapshot_seq` finds for each key in these entries: the newest version
/// with seq <= snapshot, as Some(value) for a put and None for a tombstone.
fn view(
    entries: &[(Vec<u8>, u64, EntryKind, Vec<u8>)],
    snapshot_seq: u64,
) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
    let mut newest: BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)> = BTreeMap::new();
    for (user_key, seq, kind, value) in entries.iter().filter(|e| e.1 <= snapshot_seq) {
        let found = (*kind == EntryKind::Put).then(|| value.clone());
        match newest.get(user_key) {
            Some((newest_seq, _)) if newest_seq >= seq => {}
            _ => {
                newest.insert(user_key.clone(), (*seq, found));
            }
        }
    }
    newest.into_iter().map(|(k, (_, v))| (k, v)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn gc_preserves_every_snapshot_view(
        versions in versions(),
        snapshots in prop::collection::vec(0u64..21, 0..4),
        bottommost in any::<bool>(),
    ) {
        let input: Vec<(Vec<u8>, u64, EntryKind, Vec<u8>)> = versions
            .iter()
            .map(|((k, seq), (kind, _))| (k.clone(), *seq, *kind, value_of(k, *seq, *kind)))
            .collect();
        let mut children: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); CHILDREN_MAX];
        for ((k, seq), (kind, child)) in &versions {
            children[*child].push((encode(k, *seq, *kind), value_of(k, *seq, *kind)));
        }
        let merged = MergingIterator::new(children.into_iter().map(VecIterator::new).collect());
        let mut gc = CompactionIterator::new(merged, &snapshots, bottommost);

        let mut output_keys: Vec<Vec<u8>> = Vec::new();
        let mut output: Vec<(Vec<u8>, u64, EntryKind, Vec<u8>)> = Vec::new();
        gc.seek_to_first().unwrap();
        while gc.valid() {
            let parsed = InternalKey::parse(gc.key()).unwrap();
            output.push((parsed.user_key.to_vec(), parsed.seq, parsed.kind, gc.value().to_vec()));
            output_keys.push(gc.key().to_vec());
            gc.next().unwrap();
        }

        // Sorted, no duplicates.
        for pair in output_keys.windows(2) {
            prop_assert!(compare_internal(&pair[0], &pair[1]).is_lt());
        }

        // Every reader sees the same thing. Not at the bottom a tombstone must survive (it hides
        // lower levels); at the bottom "deleted" and "absent" are the same answer.
        let mut readers: BTreeSet<u64> = snapshots.iter().copied().collect();
        readers.insert(SEQ_MAX);
        for &reader in &readers {
            let mut before = view(&input, reader);
            let mut after = view(&output, reader);
            if bottommost {
                before.retain(|_, v| v.is_some());
                after.retain(|_, v| v.is_some());
            }
            prop_assert_eq!(before, after, "reader at {}", reader);
        }

        // Exactly the expected survivors: the newest version of each key in each stripe,
        // minus tombstones in the oldest stripe when bottommost.
        let stripe = |seq: u64| readers.iter().position(|&r| seq <= r).unwrap();
        let mut expected = Vec::new();
        for (i, (user_key, seq, kind, value)) in input.iter().enumerate() {
            // Input is sorted by (user key, seq ascending); a newer version in the same stripe
            // is the next entry of the same key.
            let hidden = input.get(i + 1).is_some_and(|(k2, s2, _, _)| k2 == user_key && stripe(*s2) == stripe(*seq));
            let dropped_tombstone = bottommost && *kind == EntryKind::Delete && stripe(*seq) == 0;
            if !hidden && !dropped_tombstone {
                expected.push((user_key.clone(), *seq, *kind, value.clone()));
            }
        }
        let mut actual = output.clone();
        actual.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        prop_assert_eq!(&actual, &expected);

        let stats = gc.stats();
        prop_assert_eq!(stats.entries_in, input.len() as u64);
        prop_assert_eq!(stats.entries_out, output.len() as u64);
        prop_assert_eq!(
            stats.entries_in,
            stats.entries_out + stats.obsolete_versions_dropped + stats.tombstones_dropped
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// With a retention floor, a reader at every sequence number from the floor up (and at
    /// each live snapshot) sees what it saw before: the history point-in-time recovery reads.
    #[test]
    fn a_retention_floor_preserves_every_view_above_it(
        versions in versions(),
        snapshots in prop::collection::vec(0u64..21, 0..3),
        floor in 0u64..21,
        bottommost in any::<bool>(),
    ) {
        let input: Vec<(Vec<u8>, u64, EntryKind, Vec<u8>)> = versions
            .iter()
            .map(|((k, seq), (kind, _))| (k.clone(), *seq, *kind, value_of(k, *seq, *kind)))
            .collect();
        let mut children: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); CHILDREN_MAX];
        for ((k, seq), (kind, child)) in &versions {
            children[*child].push((encode(k, *seq, *kind), value_of(k, *seq, *kind)));
        }
        let merged = MergingIterator::new(children.into_iter().map(VecIterator::new).collect());
        let mut gc = CompactionIterator::new(merged, &snapshots, bottommost)
            .with_retention_floor(Some(floor));
        let mut output: Vec<(Vec<u8>, u64, EntryKind, Vec<u8>)> = Vec::new();
        gc.seek_to_first().unwrap();
        while gc.valid() {
            let parsed = InternalKey::parse(gc.key()).unwrap();
            output.push((parsed.user_key.to_vec(), parsed.seq, parsed.kind, gc.value().to_vec()));
            gc.next().unwrap();
        }
        // Every version above the floor survives.
        for version in input.iter().filter(|v| v.1 > floor) {
            prop_assert!(output.contains(version), "version above the floor dropped: {:?}", version);
        }
        let mut readers: BTreeSet<u64> = (floor..=21).chain(snapshots.iter().copied()).collect();
        readers.insert(SEQ_MAX);
        for &reader in &readers {
            let mut before = view(&input, reader);
            let mut after = view(&output, reader);
            if bottommost {
                before.retain(|_, v| v.is_some());
                after.retain(|_, v| v.is_some());
            }
            prop_assert_eq!(before, after, "reader at {}", reader);
        }
    }
}
