//! The manifest byte format: round trips, and every corruption is detected.

use proptest::prelude::*;
use shoal_compaction::key::{encode, EntryKind};
use shoal_engine::manifest::{decode_version, encode_version};
use shoal_engine::version::{FileMeta, Version, VersionEdit, LEVELS};

/// A tree to build: name, flushed seq, per level the user-key ranges of its files.
#[derive(Debug, Clone)]
struct TreeSpec {
    id: u32,
    name: String,
    flushed_seq: u64,
    l0: Vec<(Vec<u8>, Vec<u8>)>,
    /// For each deeper level, sorted distinct user keys paired into non-overlapping ranges.
    deeper: Vec<Vec<Vec<u8>>>,
}

#[derive(Debug, Clone)]
struct VersionSpec {
    trees: Vec<TreeSpec>,
    metadata: Vec<(String, Vec<u8>)>,
    extra_last_seq: u64,
    extra_file_numbers: u64,
}

fn user_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..12)
}

fn tree_spec() -> impl Strategy<Value = TreeSpec> {
    (
        any::<u32>(),
        "[a-zA-Z0-9_ é]{0,12}",
        0u64..1_000,
        prop::collection::vec((user_key(), user_key()), 0..4),
        prop::collection::vec(prop::collection::btree_set(user_key(), 0..8), LEVELS - 1),
    )
        .prop_map(|(id, name, flushed_seq, l0, deeper)| TreeSpec {
            id,
            name,
            flushed_seq,
            l0,
            deeper: deeper
                .into_iter()
                .map(|keys| keys.into_iter().collect())
                .collect(),
        })
}

fn version_spec() -> impl Strategy<Value = VersionSpec> {
    (
        prop::collection::vec(tree_spec(), 0..4),
        prop::collection::vec((".{0,10}", prop::collection::vec(any::<u8>(), 0..20)), 0..5),
        0u64..u64::from(u32::MAX),
        0u64..1_000,
    )
        .prop_map(
            |(trees, metadata, extra_last_seq, extra_file_numbers)| VersionSpec {
                trees,
                metadata,
                extra_last_seq,
                extra_file_numbers,
            },
        )
}

fn file(number: u64, lo: &[u8], hi: &[u8], seq: u64) -> FileMeta {
    FileMeta {
        number,
        size_bytes: number * 977,
        smallest_key: encode(lo, seq + 1, EntryKind::Put),
        largest_key: encode(hi, seq, EntryKind::Delete),
        entries: number + 3,
        tombstones: 1,
        seq_min: seq,
        seq_max: seq + 1,
    }
}

/// Builds a valid version from a spec through `Version::apply`, so it obeys every rule.
fn build(spec: &VersionSpec) -> Version {
    let mut edits = Vec::new();
    let mut number = 1;
    let mut seq = 1;
    let mut ids = std::collections::BTreeSet::new();
    for tree in &spec.trees {
        if !ids.insert(tree.id) {
            continue;
        }
        edits.push(VersionEdit::CreateTree {
            id: tree.id,
            name: tree.name.clone(),
        });
        edits.push(VersionEdit::SetFlushedSeq {
            tree: tree.id,
            seq: tree.flushed_seq,
        });
        for (a, b) in &tree.l0 {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            edits.push(VersionEdit::AddFile {
                tree: tree.id,
                level: 0,
                file: file(number, lo, hi, seq),
            });
            number += 1;
            seq += 2;
        }
        for (level, keys) in tree.deeper.iter().enumerate() {
            for pair in keys.chunks_exact(2) {
                edits.push(VersionEdit::AddFile {
                    tree: tree.id,
                    level: level + 1,
                    file: file(number, &pair[0], &pair[1], seq),
                });
                number += 1;
                seq += 2;
            }
        }
    }
    for (key, value) in &spec.metadata {
        edits.push(VersionEdit::SetMetadata {
            key: key.clone(),
            value: Some(value.clone()),
        });
    }
    let v = Version::empty().apply(&edits).unwrap();
    let extra = [
        VersionEdit::SetLastSeq(v.last_seq + spec.extra_last_seq),
        VersionEdit::SetNextFileNumber(v.next_file_number + spec.extra_file_numbers),
    ];
    v.apply(&extra).unwrap()
}

/// A fixed version with a bit of everything, for the exhaustive corruption tests.
fn sample() -> Version {
    let spec = VersionSpec {
        trees: vec![
            TreeSpec {
                id: 3,
                name: "users".into(),
                flushed_seq: 40,
                l0: vec![
                    (b"b".to_vec(), b"q".to_vec()),
                    (b"a".to_vec(), b"c".to_vec()),
                ],
                deeper: vec![
                    vec![b"a".to_vec(), b"f".to_vec(), b"g".to_vec(), b"k".to_vec()],
                    vec![],
                    vec![b"".to_vec(), b"zzz".to_vec()],
                    vec![],
                    vec![],
                    vec![],
                ],
            },
            TreeSpec {
                id: 9,
                name: "users/gsi/by-email".into(),
                flushed_seq: 0,
                l0: vec![],
                deeper: vec![vec![]; LEVELS - 1],
            },
        ],
        metadata: vec![("catalog/users".into(), b"{\"k\":1}".to_vec())],
        extra_last_seq: 300,
        extra_file_numbers: 5,
    };
    build(&spec)
}

#[test]
fn sample_round_trips() {
    let v = sample();
    assert_eq!(v.live_file_numbers().len(), 5);
    let bytes = encode_version(12, &v).unwrap();
    assert_eq!(decode_version(&bytes).unwrap(), (12, v));
}

#[test]
fn empty_version_round_trips() {
    let bytes = encode_version(1, &Version::empty()).unwrap();
    assert_eq!(decode_version(&bytes).unwrap(), (1, Version::empty()));
}

#[test]
fn every_single_bit_flip_is_detected() {
    let bytes = encode_version(7, &sample()).unwrap();
    for offset in 0..bytes.len() {
        for bit in 0..8 {
            let mut corrupt = bytes.clone();
            corrupt[offset] ^= 1 << bit;
            assert!(
                decode_version(&corrupt).is_err(),
                "flipping bit {bit} of byte {offset} went undetected"
            );
        }
    }
}

#[test]
fn every_truncation_and_extension_is_detected() {
    let bytes = encode_version(7, &sample()).unwrap();
    for len in 0..bytes.len() {
        assert!(
            decode_version(&bytes[..len]).is_err(),
            "truncated to {len} bytes"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(decode_version(&longer).is_err());
}

#[test]
fn a_valid_checksum_over_an_invalid_version_is_still_rejected() {
    // Overlapping L1 files, written by hand with a correct CRC: check() must refuse it.
    let mut v = sample();
    let tree = v.trees.get_mut(&3).unwrap();
    let first = tree.levels[1][0].clone();
    tree.levels[1].swap(0, 1);
    assert_ne!(tree.levels[1][0], first);
    let bytes = encode_version(7, &v).unwrap();
    let err = decode_version(&bytes).unwrap_err();
    assert!(err.detail.contains("invalid"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_versions_round_trip(spec in version_spec(), number in 1u64..u64::MAX) {
        let v = build(&spec);
        let bytes = encode_version(number, &v).unwrap();
        prop_assert_eq!(decode_version(&bytes).unwrap(), (number, v));
    }

    #[test]
    fn random_byte_changes_are_detected(
        spec in version_spec(),
        offset_fraction in 0.0f64..1.0,
        mask in 1u8..=255,
    ) {
        let bytes = encode_version(3, &build(&spec)).unwrap();
        let offset = ((bytes.len() as f64) * offset_fraction) as usize % bytes.len();
        let mut corrupt = bytes;
        corrupt[offset] ^= mask;
        prop_assert!(decode_version(&corrupt).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode_version(&bytes);
    }

    /// Past the checksum: a body changed and re-checksummed (as a bug in a writer could do)
    /// must decode to an error or to a version that passes every check — never panic.
    #[test]
    fn rechecksummed_garbage_bodies_never_panic(
        spec in version_spec(),
        edits in prop::collection::vec((0.0f64..1.0, any::<u8>()), 1..6),
        random_body in prop::collection::vec(any::<u8>(), 0..100),
    ) {
        let bytes = encode_version(3, &build(&spec)).unwrap();
        let mut body = bytes[20..].to_vec();
        for (fraction, value) in edits {
            let offset = ((body.len() as f64) * fraction) as usize % body.len();
            body[offset] = value;
        }
        for body in [body, random_body] {
            if let Ok((_, version)) = decode_version(&with_header(&body)) {
                prop_assert!(version.check().is_ok());
            }
        }
    }
}

/// Wraps a body in a correct header (magic, version 1, length, CRC).
fn with_header(body: &[u8]) -> Vec<u8> {
    let mut out = b"SHOALMNF".to_vec();
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

#[test]
fn header_helper_matches_the_encoder() {
    let bytes = encode_version(5, &sample()).unwrap();
    assert_eq!(with_header(&bytes[20..]), bytes);
}
