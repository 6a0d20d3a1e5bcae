//! Write batches: the unit of atomicity, and the payload of one WAL record.
//!
//! A batch may touch several trees (a table and its GSIs); it is logged as one WAL record
//! and applied to the memtables as one unit, so after any crash either every entry of the
//! batch is there or none is. Entry `i` of a batch gets sequence number `first_seq + i`,
//! where `first_seq` is assigned by the WAL's group leader.
//!
//! A *sequence-suffixed* put ([`WriteBatch::put_sequenced`]) stores its value under its key
//! prefix followed by the entry's own sequence number (8 bytes, big-endian). Its keys thus
//! follow commit order, which the writer cannot know before the leader assigns `first_seq`:
//! a reader that scans such a tree up to the visible sequence number never later finds a key
//! sorting before where it stopped. The real key is made wherever entries are applied (live
//! commits and WAL replay, both from `first_seq + i`, so both make the same bytes); in the
//! memtables and SSTables it is an ordinary put.
//!
//! Payload format (the bytes inside one WAL record; the record header carries the entry
//! count as `seq_count`, and its CRC covers these bytes):
//!
//! ```text
//! payload = entry*
//! entry   = kind: u8 (0 = delete, 1 = put, 2 = put whose key ends with its sequence number)
//!           tree: u32 little-endian (TreeId)
//!           key length: u32 little-endian, key bytes
//!           for puts (kinds 1 and 2) only: value length: u32 little-endian, value bytes
//! ```
//!
//! For kind 2 the key field is the stored key's full length: the key prefix followed by 8
//! placeholder bytes (zeros), which the applier replaces with the entry's sequence number
//! (big-endian). So a key length under 8 is malformed for kind 2, key sizes ([`entry_bytes`],
//! [`KEY_BYTES_MAX`]) count exactly the bytes stored, and kind 2 exists only in payloads: the
//! memtable and SSTable kinds stay delete and put.
//!
//! Decoding is bounds-checked and reports malformed payloads as corruption: a payload that
//! passed its CRC but does not parse means a bug or a format mismatch, never something to
//! apply partially.

use shoal_compaction::EntryKind;

use crate::version::TreeId;

/// Largest key accepted in a batch, in bytes (DynamoDB keys are far smaller; this bounds a
/// corrupt length field).
pub const KEY_BYTES_MAX: usize = 64 * 1024;
/// Largest value accepted in a batch, in bytes.
pub const VALUE_BYTES_MAX: usize = 16 * 1024 * 1024;

/// Bytes of the sequence number that ends the key of a sequence-suffixed put.
pub const SEQ_SUFFIX_BYTES: usize = 8;

/// Payload kind byte of a sequence-suffixed put (kinds 0 and 1 are `EntryKind`'s).
const KIND_PUT_SEQUENCED: u8 = 2;

/// Kind (u8), tree (u32) and key length (u32): the bytes of an entry before its key.
const ENTRY_HEADER_BYTES: usize = 1 + 4 + 4;
/// A put's value length (u32), before its value.
const VALUE_LENGTH_BYTES: usize = 4;

/// The payload bytes one entry takes: a put with a value of `value_len` bytes, or a delete
/// (`None`). For a sequence-suffixed put `key_len` is the stored key's: the prefix's plus
/// [`SEQ_SUFFIX_BYTES`].
pub fn entry_bytes(key_len: usize, value_len: Option<usize>) -> usize {
    ENTRY_HEADER_BYTES + key_len + value_len.map_or(0, |len| VALUE_LENGTH_BYTES + len)
}

/// An ordered set of puts and deletes across trees, applied atomically.
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {
    payload: Vec<u8>,
    count: u64,
    /// The distinct trees touched, in first-touch order (a handful: a table and its GSIs).
    trees: Vec<TreeId>,
    /// Set by [`WriteBatch::defer_sync`].
    sync_deferred: bool,
}

/// One decoded entry, borrowing the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    /// What the memtable stores: a sequence-suffixed put is a `Put`.
    pub kind: EntryKind,
    pub tree: TreeId,
    /// The key as encoded: for a sequence-suffixed put, the prefix and [`SEQ_SUFFIX_BYTES`]
    /// placeholder bytes; [`BatchEntry::key_at`] gives the key stored.
    pub key: &'a [u8],
    pub value: &'a [u8],
    /// A put from [`WriteBatch::put_sequenced`]: its key ends with its sequence number.
    pub seq_suffixed: bool,
}

impl<'a> BatchEntry<'a> {
    /// The key this entry stores when it has sequence number `seq`: `key` itself, or for a
    /// sequence-suffixed put `key` with the placeholder replaced by `seq`, made in `scratch`
    /// (reused across entries, so applying a payload does not allocate per entry).
    pub fn key_at<'b>(&self, seq: u64, scratch: &'b mut Vec<u8>) -> &'b [u8]
    where
        'a: 'b,
    {
        if !self.seq_suffixed {
            return self.key;
        }
        // Decoding refused shorter keys for this kind.
        debug_assert!(self.key.len() >= SEQ_SUFFIX_BYTES);
        let prefix_len = self.key.len().saturating_sub(SEQ_SUFFIX_BYTES);
        scratch.clear();
        scratch.extend_from_slice(&self.key[..prefix_len]);
        scratch.extend_from_slice(&seq.to_be_bytes());
        scratch
    }
}

/// Why a batch or a payload was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("key of {0} bytes exceeds the {KEY_BYTES_MAX}-byte limit")]
    KeyTooLarge(usize),
    #[error("value of {0} bytes exceeds the {VALUE_BYTES_MAX}-byte limit")]
    ValueTooLarge(usize),
    #[error("malformed batch payload at byte {offset}: {detail}")]
    Malformed { offset: usize, detail: &'static str },
}

impl WriteBatch {
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Lets [`crate::Db::write`] return before this batch is synced, even in `Sync` mode:
    /// for writes nothing can read or depend on until the caller has called
    /// [`crate::Db::sync_wal`] (an import's staged table, published after one sync). The
    /// batch still goes through the WAL in order; only its own fdatasync is skipped (a
    /// later synced group covers its bytes).
    pub fn defer_sync(&mut self) {
        self.sync_deferred = true;
    }

    /// An empty batch with room for `payload_bytes` of entries (see [`entry_bytes`]).
    pub fn with_capacity(payload_bytes: usize) -> WriteBatch {
        WriteBatch {
            payload: Vec::with_capacity(payload_bytes),
            ..WriteBatch::default()
        }
    }

    /// Adds a put of `key` = `value` in `tree`.
    pub fn put(&mut self, tree: TreeId, key: &[u8], value: &[u8]) -> Result<(), BatchError> {
        check_sizes(key, value)?;
        self.push(EntryKind::Put, tree, key);
        self.push_value(value);
        Ok(())
    }

    /// Adds a put of `value` in `tree` under `key_prefix` followed by the entry's own
    /// sequence number ([`SEQ_SUFFIX_BYTES`] bytes, big-endian), so keys written this way
    /// sort in commit order (module docs). The sequence number is known only once the batch
    /// commits: [`Db::write`](crate::Db::write) returns the batch's first, and entry `i` gets
    /// `first + i`.
    pub fn put_sequenced(
        &mut self,
        tree: TreeId,
        key_prefix: &[u8],
        value: &[u8],
    ) -> Result<(), BatchError> {
        // The limit is on the key stored, suffix included.
        let key_len = key_prefix.len() + SEQ_SUFFIX_BYTES;
        if key_len > KEY_BYTES_MAX {
            return Err(BatchError::KeyTooLarge(key_len));
        }
        check_sizes(key_prefix, value)?;
        self.push_header(KIND_PUT_SEQUENCED, tree, key_len);
        self.payload.extend_from_slice(key_prefix);
        self.payload.extend_from_slice(&[0; SEQ_SUFFIX_BYTES]);
        self.push_value(value);
        Ok(())
    }

    /// Adds a delete of `key` in `tree`.
    pub fn delete(&mut self, tree: TreeId, key: &[u8]) -> Result<(), BatchError> {
        check_sizes(key, &[])?;
        self.push(EntryKind::Delete, tree, key);
        Ok(())
    }

    fn push(&mut self, kind: EntryKind, tree: TreeId, key: &[u8]) {
        self.push_header(kind as u8, tree, key.len());
        self.payload.extend_from_slice(key);
    }

    /// Appends an entry's kind, tree and key length (the key follows), and counts the entry.
    fn push_header(&mut self, kind_byte: u8, tree: TreeId, key_len: usize) {
        self.payload.push(kind_byte);
        self.payload.extend_from_slice(&tree.to_le_bytes());
        self.payload
            .extend_from_slice(&(key_len as u32).to_le_bytes());
        self.count += 1;
        if !self.trees.contains(&tree) {
            self.trees.push(tree);
        }
    }

    fn push_value(&mut self, value: &[u8]) {
        self.payload
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.payload.extend_from_slice(value);
    }

    /// The distinct trees this batch touches.
    pub fn trees(&self) -> &[TreeId] {
        &self.trees
    }

    /// Number of entries (= sequence numbers the batch consumes).
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The encoded payload.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The entries, in order.
    pub fn entries(&self) -> BatchEntries<'_> {
        BatchEntries::new(&self.payload)
    }
}

fn check_sizes(key: &[u8], value: &[u8]) -> Result<(), BatchError> {
    if key.len() > KEY_BYTES_MAX {
        return Err(BatchError::KeyTooLarge(key.len()));
    }
    if value.len() > VALUE_BYTES_MAX {
        return Err(BatchError::ValueTooLarge(value.len()));
    }
    Ok(())
}

impl shoal_wal::WalBatch for WriteBatch {
    fn seq_count(&self) -> u64 {
        self.count
    }

    fn payload(&self) -> &[u8] {
        &self.payload
    }

    fn needs_sync(&self) -> bool {
        !self.sync_deferred
    }
}

/// Decodes a payload entry by entry; yields an error (and then stops) on malformed bytes.
pub struct BatchEntries<'a> {
    payload: &'a [u8],
    offset: usize,
    failed: bool,
}

impl<'a> BatchEntries<'a> {
    /// Iterates the entries of an encoded payload (e.g. one replayed from the WAL).
    pub fn new(payload: &'a [u8]) -> BatchEntries<'a> {
        BatchEntries {
            payload,
            offset: 0,
            failed: false,
        }
    }

    fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], BatchError> {
        let end = self
            .offset
            .checked_add(len)
            .filter(|end| *end <= self.payload.len())
            .ok_or(BatchError::Malformed {
                offset: self.offset,
                detail: what,
            })?;
        let bytes = &self.payload[self.offset..end];
        self.offset = end;
        Ok(bytes)
    }

    fn take_u32(&mut self, what: &'static str) -> Result<u32, BatchError> {
        let bytes = self.take(4, what)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn decode_one(&mut self) -> Result<BatchEntry<'a>, BatchError> {
        let start = self.offset;
        let kind_byte = self.take(1, "truncated kind")?[0];
        let seq_suffixed = kind_byte == KIND_PUT_SEQUENCED;
        let kind = if seq_suffixed {
            EntryKind::Put
        } else {
            EntryKind::from_byte(kind_byte).ok_or(BatchError::Malformed {
                offset: start,
                detail: "unknown entry kind",
            })?
        };
        let tree = self.take_u32("truncated tree id")?;
        let key_len = self.take_u32("truncated key length")? as usize;
        if key_len > KEY_BYTES_MAX {
            return Err(BatchError::Malformed {
                offset: start,
                detail: "key length over limit",
            });
        }
        if seq_suffixed && key_len < SEQ_SUFFIX_BYTES {
            return Err(BatchError::Malformed {
                offset: start,
                detail: "sequence-suffixed key shorter than its suffix",
            });
        }
        let key = self.take(key_len, "truncated key")?;
        let value = match kind {
            EntryKind::Put => {
                let value_len = self.take_u32("truncated value length")? as usize;
                if value_len > VALUE_BYTES_MAX {
                    return Err(BatchError::Malformed {
                        offset: start,
                        detail: "value length over limit",
                    });
                }
                self.take(value_len, "truncated value")?
            }
            EntryKind::Delete => &[],
        };
        Ok(BatchEntry {
            kind,
            tree,
            key,
            value,
            seq_suffixed,
        })
    }
}

impl<'a> Iterator for BatchEntries<'a> {
    type Item = Result<BatchEntry<'a>, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.offset >= self.payload.len() {
            return None;
        }
        let entry = self.decode_one();
        self.failed = entry.is_err();
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_bytes_is_what_an_entry_adds_to_the_payload() {
        let mut b = WriteBatch::with_capacity(entry_bytes(3, Some(5)) + entry_bytes(2, None));
        let capacity = b.payload.capacity();
        b.put(1, b"key", b"value").unwrap();
        assert_eq!(b.payload().len(), entry_bytes(3, Some(5)));
        b.delete(2, b"k2").unwrap();
        assert_eq!(
            b.payload().len(),
            entry_bytes(3, Some(5)) + entry_bytes(2, None)
        );
        assert_eq!(
            b.payload.capacity(),
            capacity,
            "sized exactly, never regrown"
        );
    }

    #[test]
    fn round_trips_entries_in_order() {
        let mut b = WriteBatch::new();
        b.put(1, b"k1", b"v1").unwrap();
        b.delete(2, b"k2").unwrap();
        b.put(3, b"", b"").unwrap();
        let got: Vec<_> = b.entries().collect::<Result<_, _>>().unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!(
            got,
            vec![
                BatchEntry {
                    kind: EntryKind::Put,
                    tree: 1,
                    key: b"k1",
                    value: b"v1",
                    seq_suffixed: false,
                },
                BatchEntry {
                    kind: EntryKind::Delete,
                    tree: 2,
                    key: b"k2",
                    value: b"",
                    seq_suffixed: false,
                },
                BatchEntry {
                    kind: EntryKind::Put,
                    tree: 3,
                    key: b"",
                    value: b"",
                    seq_suffixed: false,
                },
            ]
        );
    }

    #[test]
    fn every_truncation_is_malformed_not_a_panic() {
        let mut b = WriteBatch::new();
        b.put(7, b"key", b"value").unwrap();
        b.delete(7, b"gone").unwrap();
        b.put_sequenced(7, b"s", b"v").unwrap();
        let payload = b.payload();
        let boundaries = [
            entry_bytes(3, Some(5)),
            entry_bytes(3, Some(5)) + entry_bytes(4, None),
        ];
        for cut in 1..payload.len() {
            let results: Vec<_> = BatchEntries::new(&payload[..cut]).collect();
            let entry_boundary = boundaries.contains(&cut);
            if entry_boundary {
                assert!(results.iter().all(|r| r.is_ok()));
            } else {
                assert!(results.last().unwrap().is_err(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn sequenced_puts_carry_a_placeholder_and_take_their_seq_when_applied() {
        let mut b = WriteBatch::with_capacity(entry_bytes(3 + SEQ_SUFFIX_BYTES, Some(1)));
        b.put_sequenced(4, b"pre", b"v").unwrap();
        assert_eq!(
            b.payload().len(),
            entry_bytes(3 + SEQ_SUFFIX_BYTES, Some(1)),
            "sized like a put of the stored key"
        );
        assert_eq!(b.payload()[0], KIND_PUT_SEQUENCED);
        let entry = b.entries().next().unwrap().unwrap();
        assert_eq!(
            entry,
            BatchEntry {
                kind: EntryKind::Put,
                tree: 4,
                key: b"pre\0\0\0\0\0\0\0\0",
                value: b"v",
                seq_suffixed: true,
            }
        );
        let mut scratch = Vec::new();
        let seq = 0x0102_0304_0506_0708u64;
        assert_eq!(
            entry.key_at(seq, &mut scratch),
            b"pre\x01\x02\x03\x04\x05\x06\x07\x08"
        );
        // The scratch buffer is reused: a second key replaces the first.
        assert_eq!(entry.key_at(9, &mut scratch), b"pre\0\0\0\0\0\0\0\x09");
        let plain = BatchEntry {
            seq_suffixed: false,
            ..entry
        };
        assert_eq!(plain.key_at(9, &mut scratch), plain.key);
    }

    #[test]
    fn a_sequenced_key_shorter_than_its_suffix_is_malformed() {
        let mut b = WriteBatch::new();
        b.put(1, b"short", b"v").unwrap();
        let mut payload = b.payload().to_vec();
        payload[0] = KIND_PUT_SEQUENCED;
        let results: Vec<_> = BatchEntries::new(&payload).collect();
        assert!(matches!(
            results[..],
            [Err(BatchError::Malformed { offset: 0, .. })]
        ));
        assert!(matches!(
            BatchEntries::new(&[3]).next(),
            Some(Err(BatchError::Malformed { .. }))
        ));
    }

    #[test]
    fn sequenced_keys_count_their_suffix_against_the_limit() {
        let mut b = WriteBatch::new();
        let prefix = vec![0u8; KEY_BYTES_MAX - SEQ_SUFFIX_BYTES + 1];
        assert_eq!(
            b.put_sequenced(1, &prefix, b""),
            Err(BatchError::KeyTooLarge(KEY_BYTES_MAX + 1))
        );
        assert!(b.is_empty());
        b.put_sequenced(1, &prefix[1..], b"").unwrap();
        assert_eq!(
            b.entries().next().unwrap().unwrap().key.len(),
            KEY_BYTES_MAX
        );
    }

    #[test]
    fn oversized_keys_are_refused() {
        let mut b = WriteBatch::new();
        let big = vec![0u8; KEY_BYTES_MAX + 1];
        assert_eq!(
            b.put(1, &big, b""),
            Err(BatchError::KeyTooLarge(KEY_BYTES_MAX + 1))
        );
        assert!(b.is_empty());
    }
}
