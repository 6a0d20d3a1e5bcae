//! Every byte of a small SSTable is covered by a checksum: flipping any one of them is
//! reported as corruption, and no read ever returns data that differs from what was written.

use crate::sstable_support;
use shoal_compaction::key::{encode, EntryKind, InternalKey};
use shoal_compaction::InternalIterator;
use shoal_engine::sstable::{SstError, Table, TableOptions};
use sstable_support::{build, open, owned, two_byte_prefix};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn small_table() -> (Entries, Vec<u8>) {
    let mut entries = Entries::new();
    for i in 0..40u32 {
        let user_key = format!("k{:02}", i / 2);
        let seq = u64::from(100 - i);
        if i % 7 == 3 {
            entries.push((
                encode(user_key.as_bytes(), seq, EntryKind::Delete),
                Vec::new(),
            ));
        } else {
            entries.push((
                encode(user_key.as_bytes(), seq, EntryKind::Put),
                format!("v{i}").into_bytes(),
            ));
        }
    }
    let options = TableOptions {
        block_size_bytes: 128,
        restart_interval: 4,
        bloom_bits_per_key: 10,
        prefix: two_byte_prefix,
    };
    let (bytes, properties) = build(&entries, options);
    assert!(
        properties.data_blocks >= 4,
        "{} blocks",
        properties.data_blocks
    );
    (entries, bytes)
}

fn is_corruption(error: &SstError) -> bool {
    matches!(error, SstError::Corruption { .. })
}

/// Reads everything from a table that opened despite the flip. Every read must either
/// agree with `expected` or report corruption; returns whether any corruption was reported.
fn read_everything(
    table: &std::sync::Arc<Table>,
    entries: &Entries,
    expected_gets: &[GetCase],
) -> bool {
    let mut detected = false;

    let mut it = table.iter();
    let mut position = 0;
    let mut step = it.seek_to_first();
    while step.is_ok() && it.valid() {
        assert_eq!(
            (it.key(), it.value()),
            (&entries[position].0[..], &entries[position].1[..])
        );
        position += 1;
        step = it.next();
    }
    match step {
        Err(shoal_compaction::IterError::Corruption(_)) => detected = true,
        Err(other) => panic!("unexpected error {other}"),
        Ok(()) => assert_eq!(position, entries.len(), "scan ended early without an error"),
    }

    let mut it = table.iter();
    let mut remaining = entries.len();
    let mut step = it.seek_to_last();
    while step.is_ok() && it.valid() {
        remaining -= 1;
        assert_eq!(
            (it.key(), it.value()),
            (&entries[remaining].0[..], &entries[remaining].1[..])
        );
        step = it.prev();
    }
    match step {
        Err(shoal_compaction::IterError::Corruption(_)) => detected = true,
        Err(other) => panic!("unexpected error {other}"),
        Ok(()) => assert_eq!(remaining, 0, "reverse scan ended early without an error"),
    }

    for case in expected_gets {
        match table.get(&case.user_key, case.snapshot).map(owned) {
            Ok(found) => assert_eq!(
                found, case.expected,
                "get({:?}, {})",
                case.user_key, case.snapshot
            ),
            Err(error) => {
                assert!(is_corruption(&error), "unexpected error {error}");
                detected = true;
            }
        }
    }
    detected
}

struct GetCase {
    user_key: Vec<u8>,
    snapshot: u64,
    expected: Option<(EntryKind, Vec<u8>)>,
}

fn get_cases(table: &Table, entries: &Entries) -> Vec<GetCase> {
    let mut cases = Vec::new();
    for (key, _) in entries {
        let parsed = InternalKey::parse(key).unwrap();
        for snapshot in [parsed.seq, parsed.seq.saturating_sub(1), 1000] {
            cases.push(GetCase {
                user_key: parsed.user_key.to_vec(),
                snapshot,
                expected: table.get(parsed.user_key, snapshot).map(owned).unwrap(),
            });
        }
    }
    for absent in [&b"k05a"[..], b"a", b"zz", b"k"] {
        cases.push(GetCase {
            user_key: absent.to_vec(),
            snapshot: 1000,
            expected: None,
        });
    }
    cases
}

#[test]
fn every_flipped_byte_is_reported_and_never_returned() {
    let (entries, bytes) = small_table();
    let pristine = open(bytes.clone(), two_byte_prefix).unwrap();
    let cases = get_cases(&pristine, &entries);
    assert!(
        !read_everything(&pristine, &entries, &cases),
        "the pristine table reads clean"
    );

    for flip_mask in [0x01u8, 0x80, 0xff] {
        for position in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[position] ^= flip_mask;
            let detected = match open(flipped, two_byte_prefix) {
                Err(error) => {
                    assert!(
                        is_corruption(&error),
                        "byte {position}: unexpected error {error}"
                    );
                    true
                }
                Ok(table) => read_everything(&table, &entries, &cases),
            };
            assert!(
                detected,
                "flip {flip_mask:#04x} at byte {position} of {} went unnoticed",
                bytes.len()
            );
        }
    }
}

#[test]
fn every_truncation_is_reported() {
    let (_, bytes) = small_table();
    for len in 0..bytes.len() {
        match open(bytes[..len].to_vec(), two_byte_prefix) {
            Err(error) => assert!(
                is_corruption(&error),
                "length {len}: unexpected error {error}"
            ),
            Ok(_) => panic!("a table truncated to {len} of {} bytes opened", bytes.len()),
        }
    }
}

#[test]
fn extra_bytes_before_the_footer_are_reported() {
    let (_, bytes) = small_table();
    let footer_start = bytes.len() - 64;
    let mut padded = bytes[..footer_start].to_vec();
    padded.push(0);
    padded.extend_from_slice(&bytes[footer_start..]);
    assert!(matches!(
        open(padded, two_byte_prefix),
        Err(SstError::Corruption { .. })
    ));
}
