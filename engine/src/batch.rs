//! Write batches: the unit of atomicity, and the payload of one WAL record.
//!
//! A batch may touch several trees (a table and its GSIs); it is logged as one WAL record
//! and applied to the memtables as one unit, so after any crash either every entry of the
//! batch is there or none is. Entry `i` of a batch gets sequence number `first_seq + i`,
//! where `first_seq` is assigned by the WAL's group leader.
//!
//! Payload format (the bytes inside one WAL record; the record header carries the entry
//! count as `seq_count`, and its CRC covers these bytes):
//!
//! ```text
//! payload = entry*
//! entry   = kind: u8 (0 = delete, 1 = put)
//!           tree: u32 little-endian (TreeId)
//!           key length: u32 little-endian, key bytes
//!           for puts only: value length: u32 little-endian, value bytes
//! ```
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

/// Kind (u8), tree (u32) and key length (u32): the bytes of an entry before its key.
const ENTRY_HEADER_BYTES: usize = 1 + 4 + 4;
/// A put's value length (u32), before its value.
const VALUE_LENGTH_BYTES: usize = 4;

/// The payload bytes one entry takes: a put with a value of `value_len` bytes, or a delete
/// (`None`).
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
}

/// One decoded entry, borrowing the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    pub kind: EntryKind,
    pub tree: TreeId,
    pub key: &'a [u8],
    pub value: &'a [u8],
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
        self.payload
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.payload.extend_from_slice(value);
        Ok(())
    }

    /// Adds a delete of `key` in `tree`.
    pub fn delete(&mut self, tree: TreeId, key: &[u8]) -> Result<(), BatchError> {
        check_sizes(key, &[])?;
        self.push(EntryKind::Delete, tree, key);
        Ok(())
    }

    fn push(&mut self, kind: EntryKind, tree: TreeId, key: &[u8]) {
        self.payload.push(kind as u8);
        self.payload.extend_from_slice(&tree.to_le_bytes());
        self.payload
            .extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.payload.extend_from_slice(key);
        self.count += 1;
        if !self.trees.contains(&tree) {
            self.trees.push(tree);
        }
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
        let kind = EntryKind::from_byte(kind_byte).ok_or(BatchError::Malformed {
            offset: start,
            detail: "unknown entry kind",
        })?;
        let tree = self.take_u32("truncated tree id")?;
        let key_len = self.take_u32("truncated key length")? as usize;
        if key_len > KEY_BYTES_MAX {
            return Err(BatchError::Malformed {
                offset: start,
                detail: "key length over limit",
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
                    value: b"v1"
                },
                BatchEntry {
                    kind: EntryKind::Delete,
                    tree: 2,
                    key: b"k2",
                    value: b""
                },
                BatchEntry {
                    kind: EntryKind::Put,
                    tree: 3,
                    key: b"",
                    value: b""
                },
            ]
        );
    }

    #[test]
    fn every_truncation_is_malformed_not_a_panic() {
        let mut b = WriteBatch::new();
        b.put(7, b"key", b"value").unwrap();
        b.delete(7, b"gone").unwrap();
        let payload = b.payload();
        for cut in 1..payload.len() {
            let results: Vec<_> = BatchEntries::new(&payload[..cut]).collect();
            let entry_boundary = cut == 1 + 4 + 4 + 3 + 4 + 5;
            if entry_boundary {
                assert!(results.iter().all(|r| r.is_ok()));
            } else {
                assert!(results.last().unwrap().is_err(), "cut at {cut}");
            }
        }
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
