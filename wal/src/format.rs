//! The on-disk format of WAL segment files.
//!
//! # Files
//!
//! The WAL directory holds *segments* named `<number>.log`, the number in 20 zero-padded
//! decimal digits so that names sort like numbers. Numbers only grow: a new segment always gets
//! a number greater than that of every file the directory has ever shown, including recycled
//! files. Obsolete segments kept for reuse are renamed to `<old number>.recycle`; reusing one
//! renames it to the next `<number>.log` and overwrites it from offset 0, which is cheaper to
//! fdatasync than appending (no file-size update). Fresh segments are preallocated by writing
//! zeros, for the same reason: 1 MiB when created, then further ahead of the writer, 1 to 8
//! MiB at a time and fdatasynced, up to the segment size (`WalOptions::preallocate_first_bytes`);
//! the zeros never go over written records. Without per-commit syncs, segments are
//! instead allocated to the segment size (`fallocate`) and written through a memory mapping
//! (`WalOptions::map_segments`); the bytes and the rules below are the same.
//!
//! # Records
//!
//! A segment is a sequence of records, each a 48-byte header followed by its payload. All
//! integers are little-endian.
//!
//! ```text
//! offset  size  field
//!      0     4  crc32 (crc32fast / IEEE) of bytes 4..48 of the header followed by the payload
//!      4     4  payload length in bytes
//!      8     1  kind: 1 = batch, 2 = segment header
//!      9     7  zero
//!     16     8  segment number (the number in the file name)
//!     24     8  synced-through: the segment offset up to which the writer knew the file was
//!               durable (fdatasynced) when it wrote this record
//!     32     8  first sequence number of the batch
//!     40     8  count of sequence numbers the batch consumes
//!     48     n  payload
//! ```
//!
//! Records follow one another with no padding. A *group* (the records one leader writes with
//! one write call) is just consecutive records.
//!
//! The first record of every segment, at offset 0, is its *segment header* (kind 2). Its first
//! sequence number is the sequence number the segment's first batch will get, its count is 0,
//! and its 16-byte payload names the previous segment and where that segment's log ends:
//! `previous segment number (u64) | previous segment end offset (u64)` (number 0: none).
//! The header is written and fdatasynced, and the directory fsynced, before any batch goes into
//! the segment, and the previous segment is fdatasynced before that. So:
//!
//! - every segment but the last is complete, and its successor's header says exactly where it
//!   ends: the reader parses it strictly up to that offset, and anything wrong there (a bad
//!   checksum, a missing record, a gap in sequence numbers) is corruption;
//! - only the last segment can end in a torn write. A torn or truncated tail found at open is
//!   never rewritten: the next segment's header records where the valid log of the torn segment
//!   ends, and later opens stop there.
//!
//! # Where the log ends in the last segment
//!
//! The reader decodes records from offset 0. A record is *valid* if its header fits in the
//! file, its kind is known, its padding is zero, its segment number is the file's, its payload
//! fits in the file and its checksum matches. The first position where no valid record starts
//! is where decoding stops. Bytes there may be zeros (preallocation, or the allocation of a
//! segment written through a mapping), a previous life of a recycled file (its records carry
//! another segment number), or a torn write. To tell a torn
//! tail from corruption the reader searches the rest of the file, at every byte offset, for a
//! valid record of this segment whose synced-through field is past the stop point. Finding one
//! proves the bytes at the stop point had been made durable before that record was written, so
//! they are corrupt: the open fails with the file and offset (or, if the caller asked, the log
//! is truncated there). Finding none means the stop point is the end of the log: records after
//! it (written but never synced, persisted out of order by the disk) are ignored, so the
//! replayed log is always a prefix of what was written.

/// Size of a record header in bytes.
pub const HEADER_BYTES: usize = 48;
/// Payload size of a segment header record: previous segment number and its end offset.
pub const SEGMENT_HEADER_PAYLOAD_BYTES: usize = 16;
/// Size of a whole segment header record, which starts every segment.
pub const SEGMENT_HEADER_RECORD_BYTES: u64 = (HEADER_BYTES + SEGMENT_HEADER_PAYLOAD_BYTES) as u64;
/// Largest payload the format can describe.
pub const PAYLOAD_BYTES_MAX: usize = u32::MAX as usize;

const CRC_RANGE: std::ops::Range<usize> = 0..4;
const LENGTH_RANGE: std::ops::Range<usize> = 4..8;
const KIND_OFFSET: usize = 8;
const PADDING_RANGE: std::ops::Range<usize> = 9..16;
const SEGMENT_RANGE: std::ops::Range<usize> = 16..24;
const SYNCED_THROUGH_RANGE: std::ops::Range<usize> = 24..32;
const FIRST_SEQ_RANGE: std::ops::Range<usize> = 32..40;
const SEQ_COUNT_RANGE: std::ops::Range<usize> = 40..48;

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// A write batch handed to `Wal::commit`.
    Batch = 1,
    /// The first record of a segment; see the module docs.
    SegmentHeader = 2,
}

impl RecordKind {
    fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(RecordKind::Batch),
            2 => Some(RecordKind::SegmentHeader),
            _ => None,
        }
    }
}

/// The header fields of a record other than its checksum and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: RecordKind,
    pub segment: u64,
    pub synced_through: u64,
    pub first_seq: u64,
    pub seq_count: u64,
}

/// A valid record found in a segment's bytes.
#[derive(Debug, Clone, Copy)]
pub struct DecodedRecord<'a> {
    pub header: RecordHeader,
    pub payload: &'a [u8],
    /// Header plus payload.
    pub len_bytes: usize,
}

/// Appends one record to `out`. `payload_crc` is a hasher that has consumed exactly `payload`
/// (computed by the committing thread, so the leader only hashes the 44 header bytes).
pub fn encode_record(
    out: &mut Vec<u8>,
    header: &RecordHeader,
    payload: &[u8],
    payload_crc: &crc32fast::Hasher,
) {
    debug_assert!(payload.len() <= PAYLOAD_BYTES_MAX);
    let start = out.len();
    out.resize(start + HEADER_BYTES, 0);
    let bytes = &mut out[start..start + HEADER_BYTES];
    bytes[LENGTH_RANGE].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes[KIND_OFFSET] = header.kind as u8;
    bytes[SEGMENT_RANGE].copy_from_slice(&header.segment.to_le_bytes());
    bytes[SYNCED_THROUGH_RANGE].copy_from_slice(&header.synced_through.to_le_bytes());
    bytes[FIRST_SEQ_RANGE].copy_from_slice(&header.first_seq.to_le_bytes());
    bytes[SEQ_COUNT_RANGE].copy_from_slice(&header.seq_count.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&bytes[CRC_RANGE.end..]);
    crc.combine(payload_crc);
    bytes[CRC_RANGE].copy_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(payload);
}

/// Encodes the segment header record of segment `segment`.
pub fn encode_segment_header(
    out: &mut Vec<u8>,
    segment: u64,
    first_seq: u64,
    previous_segment: u64,
    previous_end_offset: u64,
) {
    let mut payload = [0u8; SEGMENT_HEADER_PAYLOAD_BYTES];
    payload[..8].copy_from_slice(&previous_segment.to_le_bytes());
    payload[8..].copy_from_slice(&previous_end_offset.to_le_bytes());
    let header = RecordHeader {
        kind: RecordKind::SegmentHeader,
        segment,
        synced_through: 0,
        first_seq,
        seq_count: 0,
    };
    encode_record(out, &header, &payload, &payload_hasher(&payload));
}

/// A hasher that has consumed `payload`, as [`encode_record`] wants it.
pub fn payload_hasher(payload: &[u8]) -> crc32fast::Hasher {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(payload);
    hasher
}

fn read_u64(bytes: &[u8], range: std::ops::Range<usize>) -> u64 {
    let mut buffer = [0u8; 8];
    buffer.copy_from_slice(&bytes[range]);
    u64::from_le_bytes(buffer)
}

/// Decodes the record at `offset` if it is valid for segment `segment` (see the module docs).
pub fn decode_record(bytes: &[u8], offset: usize, segment: u64) -> Option<DecodedRecord<'_>> {
    let header_end = offset.checked_add(HEADER_BYTES)?;
    let header = bytes.get(offset..header_end)?;
    // Cheapest test first: the tail search calls this at every byte offset.
    if read_u64(header, SEGMENT_RANGE) != segment {
        return None;
    }
    let kind = RecordKind::from_byte(header[KIND_OFFSET])?;
    if header[PADDING_RANGE].iter().any(|&byte| byte != 0) {
        return None;
    }
    let mut length = [0u8; 4];
    length.copy_from_slice(&header[LENGTH_RANGE]);
    let payload_len = u32::from_le_bytes(length) as usize;
    let payload = bytes.get(header_end..header_end.checked_add(payload_len)?)?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&header[CRC_RANGE.end..]);
    crc.update(payload);
    let mut stored = [0u8; 4];
    stored.copy_from_slice(&header[CRC_RANGE]);
    if crc.finalize() != u32::from_le_bytes(stored) {
        return None;
    }
    Some(DecodedRecord {
        header: RecordHeader {
            kind,
            segment,
            synced_through: read_u64(header, SYNCED_THROUGH_RANGE),
            first_seq: read_u64(header, FIRST_SEQ_RANGE),
            seq_count: read_u64(header, SEQ_COUNT_RANGE),
        },
        payload,
        len_bytes: HEADER_BYTES + payload_len,
    })
}

/// The previous segment number and end offset in a segment header's payload.
pub fn decode_segment_header_payload(payload: &[u8]) -> Option<(u64, u64)> {
    if payload.len() != SEGMENT_HEADER_PAYLOAD_BYTES {
        return None;
    }
    Some((read_u64(payload, 0..8), read_u64(payload, 8..16)))
}

/// Searches `bytes` after `stop` for a valid record of `segment` written when `stop` was
/// already durable; returns its offset. See "Where the log ends" in the module docs.
pub fn find_record_proving_corruption(bytes: &[u8], stop: usize, segment: u64) -> Option<usize> {
    let segment_bytes = segment.to_le_bytes();
    let last_start = bytes.len().checked_sub(HEADER_BYTES)?;
    (stop.saturating_add(1)..=last_start).find(|&offset| {
        bytes[offset + SEGMENT_RANGE.start..offset + SEGMENT_RANGE.end] == segment_bytes
            && decode_record(bytes, offset, segment)
                .is_some_and(|record| record.header.synced_through > stop as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(segment: u64, first_seq: u64) -> RecordHeader {
        RecordHeader {
            kind: RecordKind::Batch,
            segment,
            synced_through: 0,
            first_seq,
            seq_count: 3,
        }
    }

    fn encoded(header: &RecordHeader, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_record(&mut out, header, payload, &payload_hasher(payload));
        out
    }

    #[test]
    fn record_round_trips() {
        let header = batch(7, 100);
        let bytes = encoded(&header, b"payload");
        assert_eq!(bytes.len(), HEADER_BYTES + 7);
        let record = decode_record(&bytes, 0, 7).unwrap();
        assert_eq!(record.header, header);
        assert_eq!(record.payload, b"payload");
        assert_eq!(record.len_bytes, bytes.len());
    }

    #[test]
    fn empty_payload_round_trips() {
        let bytes = encoded(&batch(1, 1), b"");
        assert_eq!(decode_record(&bytes, 0, 1).unwrap().payload, b"");
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        let bytes = encoded(&batch(3, 9), b"some payload bytes");
        for index in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[index] ^= 1 << bit;
                assert!(
                    decode_record(&damaged, 0, 3).is_none(),
                    "flip of bit {bit} in byte {index} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn truncated_record_is_not_valid() {
        let bytes = encoded(&batch(3, 9), b"some payload bytes");
        for length in 0..bytes.len() {
            assert!(decode_record(&bytes[..length], 0, 3).is_none());
        }
    }

    #[test]
    fn record_of_another_segment_is_not_valid() {
        let bytes = encoded(&batch(3, 9), b"x");
        assert!(decode_record(&bytes, 0, 4).is_none());
    }

    #[test]
    fn zeros_are_not_a_record() {
        assert!(decode_record(&[0u8; 200], 0, 1).is_none());
        assert!(decode_record(&[0u8; 200], 0, 0).is_none());
    }

    #[test]
    fn segment_header_round_trips() {
        let mut bytes = Vec::new();
        encode_segment_header(&mut bytes, 5, 42, 4, 1234);
        assert_eq!(bytes.len() as u64, SEGMENT_HEADER_RECORD_BYTES);
        let record = decode_record(&bytes, 0, 5).unwrap();
        assert_eq!(record.header.kind, RecordKind::SegmentHeader);
        assert_eq!(record.header.first_seq, 42);
        assert_eq!(
            decode_segment_header_payload(record.payload),
            Some((4, 1234))
        );
    }

    #[test]
    fn corruption_proof_needs_a_later_record_written_after_the_stop_was_synced() {
        let mut bytes = encoded(&batch(2, 1), b"first");
        let second_offset = bytes.len();
        let mut second = batch(2, 4);
        second.synced_through = second_offset as u64;
        bytes.extend(encoded(&second, b"second"));
        // A stop inside the first record: the second was written after it was synced.
        assert_eq!(
            find_record_proving_corruption(&bytes, 0, 2),
            Some(second_offset)
        );
        // A stop at or after what the second record knew to be synced proves nothing.
        assert_eq!(
            find_record_proving_corruption(&bytes, second_offset, 2),
            None
        );
    }
}
