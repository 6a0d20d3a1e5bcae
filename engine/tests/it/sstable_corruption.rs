//! Every byte of a small SSTable is covered by a checksum: flipping any one of them is
//! reported as corruption, and no read ever returns data that differs from what was written.
//! A point read that copies its block out of a real file (`DbOptions::point_reads`) reports
//! each flip exactly as one that reads the mapping does.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::sstable_support;
use shoal_compaction::key::{encode, EntryKind, InternalKey};
use shoal_compaction::InternalIterator;
use shoal_engine::sstable::{PointLookup, SstError, Table, TableOptions};
use shoal_engine::{Db, DbOptions, Durability, PointReads, WriteBatch};
use shoal_vfs::{FileSystem, ReadableFile, RealFs};
use sstable_support::{build, open, two_byte_prefix};

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
        // Restarts by size too, so blocks mix both kinds of run.
        restart_span_bytes: 40,
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
        match table.get(&case.user_key, case.snapshot) {
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
                expected: table.get(parsed.user_key, snapshot).unwrap(),
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

/// A real file that counts its copied reads and can be made to fail them.
struct CopyWatched {
    inner: Arc<dyn ReadableFile>,
    copied_reads: AtomicUsize,
    fail_copies: AtomicBool,
}

impl ReadableFile for CopyWatched {
    fn bytes(&self) -> &[u8] {
        self.inner.bytes()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.copied_reads.fetch_add(1, Ordering::Relaxed);
        if self.fail_copies.load(Ordering::Relaxed) {
            return Err(io::Error::other("injected read failure"));
        }
        self.inner.read_at(offset, buf)
    }

    fn is_mapping(&self) -> bool {
        self.inner.is_mapping()
    }
}

/// `bytes` written to a real file at `path` and opened as a table.
fn open_real(path: &Path, bytes: &[u8]) -> Result<(Table, Arc<CopyWatched>), SstError> {
    std::fs::write(path, bytes).unwrap();
    let file = Arc::new(CopyWatched {
        inner: RealFs.open_read(path).unwrap(),
        copied_reads: AtomicUsize::new(0),
        fail_copies: AtomicBool::new(false),
    });
    let table = Table::open(
        Arc::clone(&file) as Arc<dyn ReadableFile>,
        7,
        two_byte_prefix,
    )?;
    Ok((table, file))
}

/// Every point read of `cases`, each block copied out of the file if `copied`, errors
/// written out whole (offset and detail included).
fn point_reads(table: &Table, cases: &[GetCase], copied: bool) -> Vec<String> {
    let mut results = Vec::new();
    let mut block_copy = Vec::new();
    for case in cases {
        // Twice: the second read of a block skips its CRC once the first has checked it.
        for _ in 0..2 {
            let lookup = PointLookup::new(&case.user_key, case.snapshot);
            let found = table.get_for(&lookup, copied.then_some(&mut block_copy));
            results.push(format!("{found:?}"));
        }
    }
    results
}

#[test]
fn a_copied_point_read_reports_every_flipped_byte_as_a_mapped_one() {
    let dir = tempfile::tempdir().unwrap();
    let (entries, bytes) = small_table();
    let cases = get_cases(&open(bytes.clone(), two_byte_prefix).unwrap(), &entries);
    let (copied, file) = open_real(&dir.path().join("copied"), &bytes).unwrap();
    let (mapped, mapped_file) = open_real(&dir.path().join("mapped"), &bytes).unwrap();
    assert_eq!(
        point_reads(&copied, &cases, true),
        point_reads(&mapped, &cases, false)
    );
    assert!(file.copied_reads.load(Ordering::Relaxed) > 0, "copied");
    assert_eq!(
        mapped_file.copied_reads.load(Ordering::Relaxed),
        0,
        "read in place"
    );

    let mut corrupt_reads = 0;
    for position in 0..bytes.len() {
        let mut flipped = bytes.clone();
        flipped[position] ^= 0x10;
        let copied = open_real(&dir.path().join("copied"), &flipped);
        let mapped = open_real(&dir.path().join("mapped"), &flipped);
        let (copied, mapped) = match (copied, mapped) {
            (Ok((copied, _)), Ok((mapped, _))) => (copied, mapped),
            // Damage found at open: no point read is made, whatever the mode.
            (Err(copied), Err(mapped)) => {
                assert_eq!(format!("{copied:?}"), format!("{mapped:?}"));
                continue;
            }
            (copied, mapped) => panic!(
                "byte {position}: copied {:?}, mapped {:?}",
                copied.err(),
                mapped.err()
            ),
        };
        let results = point_reads(&copied, &cases, true);
        let mapped_results = point_reads(&mapped, &cases, false);
        assert_eq!(results, mapped_results, "byte {position}");
        corrupt_reads += results.iter().filter(|r| r.contains("Corruption")).count();
    }
    assert!(corrupt_reads > 0, "some flips reach the data blocks");
}

#[test]
fn a_failed_copy_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let (entries, bytes) = small_table();
    let (table, file) = open_real(&dir.path().join("t"), &bytes).unwrap();
    file.fail_copies.store(true, Ordering::Relaxed);
    let key = InternalKey::parse(&entries[0].0).unwrap().user_key.to_vec();
    let error = table.get(&key, 1000).unwrap_err();
    assert!(matches!(error, SstError::Io(_)), "{error:?}");
    // The block was never checked, so once reads succeed it is read and checked whole.
    file.fail_copies.store(false, Ordering::Relaxed);
    assert!(table.get(&key, 1000).unwrap().is_some());
}

#[test]
fn a_database_reports_a_damaged_block_alike_whether_point_reads_copy_or_map() {
    let dir = tempfile::tempdir().unwrap();
    let options = |point_reads| DbOptions {
        durability: Durability::None,
        background_flush: false,
        compaction_threads: 0,
        point_reads,
        ..DbOptions::default()
    };
    let tree = {
        let db = Db::open(dir.path(), options(PointReads::Copied)).unwrap();
        let tree = db.create_tree("items").unwrap();
        for key in 0..2_000u32 {
            let mut batch = WriteBatch::new();
            batch.put(tree, &key.to_be_bytes(), &[7u8; 100]).unwrap();
            db.write(batch).unwrap();
        }
        db.flush_all().unwrap();
        tree
    };
    // Key 0 is in the first data block, at the start of the table.
    let sst = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|ext| ext == "sst"))
        .unwrap();
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[40] ^= 0x04;
    std::fs::write(&sst, bytes).unwrap();

    let mut reported = Vec::new();
    for point_reads in [PointReads::Copied, PointReads::Mapped] {
        let db = Db::open(dir.path(), options(point_reads)).unwrap();
        let error = db.get(tree, &0u32.to_be_bytes(), None).unwrap_err();
        // A write's read of the value it replaces meets the same damage the same way.
        let replaced = db.get_replaced_with(tree, &0u32.to_be_bytes(), |_| ());
        assert_eq!(replaced.unwrap_err().to_string(), error.to_string());
        // A block of the same table that the flip missed reads as before.
        let found = db.get(tree, &1_999u32.to_be_bytes(), None).unwrap();
        assert_eq!(found, Some(vec![7u8; 100]), "{point_reads:?}");
        let report = db.corruption_report();
        assert_eq!(report.failures, 2, "{point_reads:?}");
        reported.push((error.to_string(), report));
    }
    assert!(reported[0].0.contains("checksum mismatch"), "{reported:?}");
    assert_eq!(reported[0], reported[1]);
}
