//! SSTable round trips: a proptest against a sorted-vector model, plus edge cases.

use crate::sstable_support;
use std::cmp::Ordering;
use std::sync::Arc;

use proptest::prelude::*;
use shoal_compaction::key::{encode, EntryKind, InternalKey};
use shoal_compaction::{compare_internal, InternalIterator};
use shoal_engine::sstable::{
    whole_key, SstError, Table, TableBuilder, TableIterator, TableOptions, TableProperties,
};
use sstable_support::{build, open, two_byte_prefix, MemReadable, MemWritable};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A user key over `alphabet`, sometimes after a long run of 'a's: keys then share more
/// than the 32 bytes searches compare inline (`shoal_compaction::key::InlinePrefix`), or end
/// just around them.
fn user_key_strategy(
    alphabet: std::ops::RangeInclusive<u8>,
    len_max: usize,
) -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::sample::select(vec![0usize, 0, 29, 31, 32]),
        proptest::collection::vec(alphabet, 0..len_max),
    )
        .prop_map(|(stem_len, rest)| [vec![b'a'; stem_len], rest].concat())
}

/// Random versions of random user keys over a small alphabet (so keys share prefixes and
/// have several versions), sorted and unique per (user key, seq).
fn entries_strategy() -> impl Strategy<Value = Entries> {
    let version = (
        user_key_strategy(b'a'..=b'c', 6),
        1u64..200,
        proptest::bool::weighted(0.25),
        proptest::collection::vec(any::<u8>(), 0..24),
    );
    proptest::collection::vec(version, 0..250).prop_map(|versions| {
        let mut entries: Entries = versions
            .into_iter()
            .map(|(user_key, seq, is_delete, value)| {
                if is_delete {
                    (encode(&user_key, seq, EntryKind::Delete), Vec::new())
                } else {
                    (encode(&user_key, seq, EntryKind::Put), value)
                }
            })
            .collect();
        entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
        entries.dedup_by(|a, b| {
            let (a, b) = (
                InternalKey::parse(&a.0).unwrap(),
                InternalKey::parse(&b.0).unwrap(),
            );
            (a.user_key, a.seq) == (b.user_key, b.seq)
        });
        entries
    })
}

fn options_strategy() -> impl Strategy<Value = TableOptions> {
    (
        16usize..600,
        1usize..8,
        // By count alone, or also by size: every entry (0) to runs of several.
        prop_oneof![Just(usize::MAX), 0usize..120],
        prop_oneof![Just(0usize), Just(10usize)],
    )
        .prop_map(
            |(block_size_bytes, restart_interval, restart_span_bytes, bloom_bits_per_key)| {
                TableOptions {
                    block_size_bytes,
                    restart_interval,
                    restart_span_bytes,
                    bloom_bits_per_key,
                    prefix: two_byte_prefix,
                }
            },
        )
}

/// A seek target: any user key over the alphabet (present or not) at any seq and kind.
fn target_strategy() -> impl Strategy<Value = (Vec<u8>, u64, bool)> {
    (user_key_strategy(b'a'..=b'd', 7), 0u64..210, any::<bool>())
}

fn current(it: &impl InternalIterator) -> (Vec<u8>, Vec<u8>) {
    (it.key().to_vec(), it.value().to_vec())
}

/// The model's answer to `get`: the first version of `user_key` with seq <= snapshot.
fn model_get(entries: &Entries, user_key: &[u8], snapshot: u64) -> Option<(EntryKind, Vec<u8>)> {
    entries.iter().find_map(|(key, value)| {
        let parsed = InternalKey::parse(key).unwrap();
        (parsed.user_key == user_key && parsed.seq <= snapshot)
            .then(|| (parsed.kind, value.clone()))
    })
}

fn check_table(table: &Arc<Table>, entries: &Entries, targets: &[(Vec<u8>, u64, bool)]) {
    let mut it = table.iter();

    let mut forward = Vec::new();
    it.seek_to_first().unwrap();
    while it.valid() {
        forward.push(current(&it));
        it.next().unwrap();
    }
    assert_eq!(&forward, entries);

    let mut backward = Vec::new();
    it.seek_to_last().unwrap();
    while it.valid() {
        backward.push(current(&it));
        it.prev().unwrap();
    }
    backward.reverse();
    assert_eq!(&backward, entries);

    let existing = entries.iter().map(|(key, _)| {
        let parsed = InternalKey::parse(key).unwrap();
        (
            parsed.user_key.to_vec(),
            parsed.seq,
            parsed.kind == EntryKind::Delete,
        )
    });
    for (user_key, seq, is_delete) in targets.iter().cloned().chain(existing) {
        let kind = if is_delete {
            EntryKind::Delete
        } else {
            EntryKind::Put
        };
        let target = encode(&user_key, seq, kind);

        let first_at_or_after =
            entries.partition_point(|(key, _)| compare_internal(key, &target) == Ordering::Less);
        it.seek(&target).unwrap();
        for expected in entries[first_at_or_after..].iter().take(3) {
            assert_eq!(&current(&it), expected);
            it.next().unwrap();
        }
        if first_at_or_after + 3 > entries.len() {
            assert!(!it.valid());
        }

        let after_last_at_or_before =
            entries.partition_point(|(key, _)| compare_internal(key, &target) != Ordering::Greater);
        it.seek_for_prev(&target).unwrap();
        for expected in entries[..after_last_at_or_before].iter().rev().take(3) {
            assert_eq!(&current(&it), expected);
            it.prev().unwrap();
        }
        if after_last_at_or_before < 3 {
            assert!(!it.valid());
        }

        assert_eq!(
            table.get(&user_key, seq).unwrap(),
            model_get(entries, &user_key, seq),
            "get({user_key:?}, {seq})"
        );
    }

    for (key, _) in entries {
        let user_key = InternalKey::parse(key).unwrap().user_key;
        assert!(table.may_contain_prefix((table.prefix_fn())(user_key)));
        assert!(
            table.may_contain_key(user_key),
            "filter rejects {user_key:?}"
        );
    }
}

fn check_properties(properties: &TableProperties, entries: &Entries) {
    let parsed: Vec<InternalKey> = entries
        .iter()
        .map(|(key, _)| InternalKey::parse(key).unwrap())
        .collect();
    assert_eq!(properties.entries, entries.len() as u64);
    let tombstones = parsed
        .iter()
        .filter(|k| k.kind == EntryKind::Delete)
        .count();
    assert_eq!(properties.tombstones, tombstones as u64);
    assert_eq!(
        properties.seq_min,
        parsed.iter().map(|k| k.seq).min().unwrap_or(0)
    );
    assert_eq!(
        properties.seq_max,
        parsed.iter().map(|k| k.seq).max().unwrap_or(0)
    );
    let first_key = entries.first().map(|e| e.0.clone()).unwrap_or_default();
    let last_key = entries.last().map(|e| e.0.clone()).unwrap_or_default();
    assert_eq!(properties.smallest_key, first_key);
    assert_eq!(properties.largest_key, last_key);
    let raw_key_bytes: usize = entries.iter().map(|e| e.0.len()).sum();
    let raw_value_bytes: usize = entries.iter().map(|e| e.1.len()).sum();
    assert_eq!(properties.raw_key_bytes, raw_key_bytes as u64);
    assert_eq!(properties.raw_value_bytes, raw_value_bytes as u64);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn table_matches_model(
        entries in entries_strategy(),
        options in options_strategy(),
        targets in proptest::collection::vec(target_strategy(), 0..40),
    ) {
        let (bytes, built) = build(&entries, options);
        let table = open(bytes, options.prefix).unwrap();
        prop_assert_eq!(table.properties(), &built);
        check_properties(&built, &entries);
        check_table(&table, &entries, &targets);
    }
}

fn sample_entries(count: u32) -> Entries {
    (0..count)
        .map(|i| {
            let user_key = format!("user-{:04}", i / 2);
            let seq = u64::from(10_000 - i);
            (
                encode(user_key.as_bytes(), seq, EntryKind::Put),
                format!("value-{i}").into_bytes(),
            )
        })
        .collect()
}

#[test]
fn default_options_round_trip_through_real_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.sst");
    let fs = shoal_vfs::RealFs;
    let entries = sample_entries(3000);
    let mut builder = TableBuilder::new(
        shoal_vfs::FileSystem::create(&fs, &path).unwrap(),
        TableOptions::default(),
    );
    for (key, value) in &entries {
        builder.add(key, value).unwrap();
    }
    let estimate = builder.estimated_size_bytes();
    let properties = builder.finish().unwrap();
    assert!(
        properties.data_blocks > 5,
        "{} blocks",
        properties.data_blocks
    );
    let ratio = estimate as f64 / properties.size_bytes as f64;
    assert!(
        (0.8..1.2).contains(&ratio),
        "estimate {estimate} vs {}",
        properties.size_bytes
    );

    let file = shoal_vfs::FileSystem::open_read(&fs, &path).unwrap();
    let table = Arc::new(Table::open(file, 1, whole_key).unwrap());
    assert_eq!(table.properties(), &properties);
    check_table(&table, &entries, &[(b"user-0007".to_vec(), 50_000, false)]);
    // Versions of user-0003 are at seqs 9994 and 9993; below both there is nothing.
    assert_eq!(table.get(b"user-0003", 9992).unwrap(), None);
    assert_eq!(
        table.get(b"user-0003", 9993).unwrap(),
        Some((EntryKind::Put, b"value-7".to_vec()))
    );
}

#[test]
fn bloom_filter_rejects_most_absent_prefixes() {
    let entries = sample_entries(2000);
    let (bytes, _) = build(&entries, TableOptions::default());
    let table = open(bytes, whole_key).unwrap();
    let absent_hits = (0..1000)
        .filter(|i| table.may_contain_prefix(format!("absent-{i}").as_bytes()))
        .count();
    assert!(
        absent_hits < 50,
        "{absent_hits} of 1000 absent keys pass the filter"
    );
    assert!(table.may_contain_prefix(b"user-0500"));
}

/// Keys of one collection: every key shares the two-byte prefix "us".
fn one_prefix_entries() -> Entries {
    (0..2000u32)
        .map(|i| {
            (
                encode(format!("user-{i:04}").as_bytes(), 5, EntryKind::Put),
                b"v".to_vec(),
            )
        })
        .collect()
}

#[test]
fn whole_key_filter_rejects_absent_keys_of_a_present_prefix() {
    let options = TableOptions {
        prefix: two_byte_prefix,
        ..TableOptions::default()
    };
    let (bytes, _) = build(&one_prefix_entries(), options);
    let table = open(bytes, two_byte_prefix).unwrap();
    let absent_hits = (2000..3000)
        .filter(|i| {
            let key = format!("user-{i:04}");
            assert!(table.may_contain_prefix(two_byte_prefix(key.as_bytes())));
            table.may_contain_key(key.as_bytes())
        })
        .count();
    assert!(
        absent_hits < 50,
        "{absent_hits} of 1000 absent keys of a present prefix pass the filter"
    );
    assert_eq!(table.get(b"user-2500", 10).unwrap(), None);
}

/// Rewrites a table's footer to another format version, keeping its CRC valid.
fn with_version(mut bytes: Vec<u8>, version: u32) -> Vec<u8> {
    let footer = bytes.len() - 64;
    bytes[footer + 48..footer + 52].copy_from_slice(&version.to_le_bytes());
    let crc = crc32fast::hash(&bytes[footer..footer + 52]);
    bytes[footer + 52..footer + 56].copy_from_slice(&crc.to_le_bytes());
    bytes
}

#[test]
fn version_1_tables_are_read_filtering_prefixes_only() {
    // A version-1 filter holds no whole keys, so a reader may not rule a key out by its own
    // hash: an absent key of a present prefix must pass the filter and be looked up.
    let options = TableOptions {
        prefix: two_byte_prefix,
        ..TableOptions::default()
    };
    let entries = one_prefix_entries();
    let (bytes, _) = build(&entries, options);
    let table = open(with_version(bytes.clone(), 1), two_byte_prefix).unwrap();
    check_table(&table, &entries, &[(b"user-0007".to_vec(), 50, false)]);
    assert!((2000..3000).all(|i| table.may_contain_key(format!("user-{i:04}").as_bytes())));
    assert_eq!(table.get(b"user-2500", 10).unwrap(), None);

    for unknown in [0, 3] {
        let opened = open(with_version(bytes.clone(), unknown), two_byte_prefix);
        assert!(opened.is_err(), "version {unknown} accepted");
    }
}

#[test]
fn empty_table_is_valid_and_empty() {
    let (bytes, properties) = build(&Vec::new(), TableOptions::default());
    assert_eq!(properties.entries, 0);
    let table = open(bytes, whole_key).unwrap();
    let mut it = table.iter();
    it.seek_to_first().unwrap();
    assert!(!it.valid());
    it.seek_to_last().unwrap();
    assert!(!it.valid());
    it.seek_for_prev(&encode(b"k", 1, EntryKind::Put)).unwrap();
    assert!(!it.valid());
    assert_eq!(table.get(b"k", 10).unwrap(), None);
}

fn mem_builder() -> TableBuilder {
    let file = MemWritable {
        bytes: Default::default(),
        synced_len: Default::default(),
    };
    TableBuilder::new(Box::new(file), TableOptions::default())
}

/// Builds reuse the buffers earlier builds grew (kept in a pool when a builder drops): a
/// table built after a larger build, and after one dropped half-way, has the bytes it had
/// when built first.
#[test]
fn a_build_after_larger_and_abandoned_builds_writes_the_same_bytes() {
    // A prefix shorter than the keys, so the filter holds key hashes as well as prefixes.
    let options = || TableOptions {
        prefix: two_byte_prefix,
        ..TableOptions::default()
    };
    let small = sample_entries(50);
    let (first, _) = build(&small, options());
    build(&sample_entries(9_000), options());
    let file = MemWritable {
        bytes: Default::default(),
        synced_len: Default::default(),
    };
    let mut abandoned = TableBuilder::new(Box::new(file), options());
    // Keys of many prefixes, none of them the small table's.
    for i in 0..5_000 {
        let key = encode(format!("{i:05}").as_bytes(), 1, EntryKind::Put);
        abandoned.add(&key, b"abandoned").unwrap();
    }
    drop(abandoned);
    let (again, _) = build(&small, options());
    assert_eq!(first, again);
}

#[test]
#[should_panic(expected = "out of order")]
fn keys_out_of_order_panic() {
    let mut builder = mem_builder();
    builder.add(&encode(b"b", 1, EntryKind::Put), b"").unwrap();
    let _ = builder.add(&encode(b"a", 1, EntryKind::Put), b"");
}

#[test]
fn malformed_and_oversized_entries_are_rejected() {
    let mut builder = mem_builder();
    assert!(matches!(
        builder.add(b"short", b""),
        Err(SstError::InvalidKey { len: 5 })
    ));
    let mut bad_kind = encode(b"k", 1, EntryKind::Put);
    *bad_kind.last_mut().unwrap() = 7;
    assert!(matches!(
        builder.add(&bad_kind, b""),
        Err(SstError::InvalidKey { .. })
    ));
    let huge_key = encode(&vec![b'k'; 70_000], 1, EntryKind::Put);
    assert!(matches!(
        builder.add(&huge_key, b""),
        Err(SstError::EntryTooLarge { .. })
    ));
    assert_eq!(builder.entry_count(), 0);
}

#[test]
fn not_an_sstable_is_corruption() {
    for bytes in [Vec::new(), vec![0u8; 10], vec![0u8; 4096]] {
        let result = Table::open(Arc::new(MemReadable(bytes)), 3, whole_key);
        assert!(matches!(
            result,
            Err(SstError::Corruption { file_number: 3, .. })
        ));
    }
}

#[test]
fn tables_and_iterators_can_cross_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}
    assert_send_sync::<Table>();
    assert_send::<TableIterator>();
}
