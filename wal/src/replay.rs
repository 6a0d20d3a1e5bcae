//! Opening a WAL directory: replaying every segment in order and starting a fresh segment.
//! The rules for where the log ends and what is corruption are in [`crate::format`].

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shoal_vfs::{Fs, ReadableFile};

use crate::format::{
    decode_record, decode_segment_header_payload, find_record_proving_corruption, RecordKind,
    HEADER_BYTES,
};
use crate::segments::{
    parse_file_name, recycled_path, segment_path, start_segment, LiveSegment, Predecessor,
    SegmentCatalog, SegmentSource, WalFile,
};
use crate::writer::SegmentWriter;
use crate::{ReplayRecord, WalError, WalOptions};

/// What a valid segment header says.
#[derive(Debug, Clone, Copy)]
struct SegmentHeader {
    first_seq: u64,
    predecessor: u64,
    predecessor_end_offset: u64,
    len_bytes: usize,
}

struct SegmentFile {
    number: u64,
    path: PathBuf,
    contents: Arc<dyn ReadableFile>,
    /// None when the header record is missing or invalid.
    header: Option<SegmentHeader>,
}

/// Where corruption was found, before deciding between failing and truncating.
struct Corruption {
    offset: u64,
    detail: String,
}

/// The outcome of reading one segment's records.
struct SegmentScan {
    /// Where its log ends (the corruption offset if there is corruption).
    end_offset: u64,
    end_seq: u64,
    corruption: Option<Corruption>,
}

fn corruption_error(path: &Path, corruption: Corruption) -> WalError {
    WalError::Corruption {
        file: path.to_path_buf(),
        offset: corruption.offset,
        detail: corruption.detail,
    }
}

fn read_header(number: u64, bytes: &[u8]) -> Option<SegmentHeader> {
    let record = decode_record(bytes, 0, number)?;
    if record.header.kind != RecordKind::SegmentHeader {
        return None;
    }
    let (predecessor, predecessor_end_offset) = decode_segment_header_payload(record.payload)?;
    Some(SegmentHeader {
        first_seq: record.header.first_seq,
        predecessor,
        predecessor_end_offset,
        len_bytes: record.len_bytes,
    })
}

/// Replays `dir` through `visit` and returns the writer and catalog of the reopened log, whose
/// new segment is already durable.
pub fn recover<E: From<WalError>>(
    fs: &Fs,
    dir: &Path,
    options: &WalOptions,
    seq_floor: u64,
    visit: &mut impl FnMut(ReplayRecord<'_>) -> Result<(), E>,
) -> Result<(SegmentWriter, SegmentCatalog), E> {
    fs.create_dir_all(dir)
        .map_err(|source| WalError::io("create directory", dir, source))?;
    let names = fs
        .list(dir)
        .map_err(|source| WalError::io("list", dir, source))?;
    let mut segment_numbers = Vec::new();
    let mut recycled_numbers = Vec::new();
    for name in &names {
        match parse_file_name(name) {
            Some(WalFile::Segment(number)) => segment_numbers.push(number),
            Some(WalFile::Recycled(number)) => recycled_numbers.push(number),
            None => {}
        }
    }
    segment_numbers.sort_unstable();
    recycled_numbers.sort_unstable();
    let number_max = segment_numbers
        .iter()
        .chain(&recycled_numbers)
        .copied()
        .max()
        .unwrap_or(0);

    let mut files = Vec::with_capacity(segment_numbers.len());
    for number in segment_numbers {
        let path = segment_path(dir, number);
        let contents = fs
            .open_read(&path)
            .map_err(|source| WalError::io("open for replay", &path, source))?;
        let header = read_header(number, contents.bytes());
        files.push(SegmentFile {
            number,
            path,
            contents,
            header,
        });
    }

    let kept_count = chain_length(&files, options)?;
    let mut live: VecDeque<LiveSegment> = VecDeque::new();
    let mut kept_count_after_replay = kept_count;
    let mut previous_end_seq: Option<u64> = None;
    for index in 0..kept_count {
        let file = &files[index];
        let declared_end = files
            .get(index + 1)
            .filter(|_| index + 1 < kept_count)
            .and_then(|next| next.header)
            .map(|next| next.predecessor_end_offset);
        // chain_length keeps only segments with a valid header.
        let Some(header) = file.header else {
            break;
        };
        let scan = scan_segment(file, header, declared_end, previous_end_seq, visit)?;
        // Each segment is read once: its pages leave the resident memory as soon as it is
        // replayed, or every segment of the log would stay resident beside the memtables
        // they fill until the replay ends.
        file.contents.release(0..file.contents.bytes().len());
        match scan.corruption {
            None => {}
            Some(corruption) if !options.truncate_at_corruption => {
                return Err(corruption_error(&file.path, corruption).into());
            }
            Some(corruption) => {
                tracing::warn!(
                    file = %file.path.display(),
                    offset = corruption.offset,
                    detail = %corruption.detail,
                    "write-ahead log corruption: truncating the log there as configured"
                );
                // Corruption inside the header record leaves nothing of this segment.
                let keeps_this_segment = corruption.offset >= header.len_bytes as u64;
                kept_count_after_replay = index + usize::from(keeps_this_segment);
                if keeps_this_segment {
                    live.push_back(LiveSegment {
                        number: file.number,
                        first_seq: header.first_seq,
                        end_seq: scan.end_seq,
                        size_bytes: scan.end_offset,
                    });
                }
                break;
            }
        }
        live.push_back(LiveSegment {
            number: file.number,
            first_seq: header.first_seq,
            end_seq: scan.end_seq,
            size_bytes: scan.end_offset,
        });
        previous_end_seq = Some(scan.end_seq);
    }

    // Segments after the end of the log go before the new segment is created, durably, so
    // that no later open sees them between the log's end and the new segment.
    let discarded = &files[kept_count_after_replay..];
    for file in discarded {
        tracing::warn!(file = %file.path.display(), "discarding write-ahead log segment past the end of the log");
        fs.remove(&file.path)
            .map_err(|source| WalError::io("remove", &file.path, source))?;
    }
    let mut recycled: VecDeque<u64> = VecDeque::new();
    let mut removed_recycled = false;
    for number in recycled_numbers {
        if recycled.len() < options.recycled_segments_max {
            recycled.push_back(number);
        } else {
            let path = recycled_path(dir, number);
            fs.remove(&path)
                .map_err(|source| WalError::io("remove", &path, source))?;
            removed_recycled = true;
        }
    }
    if !discarded.is_empty() || removed_recycled {
        fs.sync_dir(dir)
            .map_err(|source| WalError::sync("fsync directory", dir, source))?;
    }

    // The last segment may end in bytes its writer never synced: a process that died in
    // `none` or `interval` mode leaves them in the page cache, and they were replayed. Two
    // promises about them follow, so they are made durable first: the new segment's header
    // declares where that segment ends (a power cut losing the tail would leave the end
    // declared past the file's, which the next open reads as corruption), and the caller may
    // flush what it replayed to SSTables, whose version then says that part of the log is no
    // longer needed (losing the tail would keep one tree's half of a batch and lose the
    // other's). Earlier segments were synced when their successor was started.
    if let Some(last) = live.back() {
        let path = segment_path(dir, last.number);
        let file = fs
            .open_overwrite(&path)
            .map_err(|source| WalError::io("open for sync", &path, source))?;
        file.sync_data()
            .map_err(|source| WalError::sync("fdatasync", &path, source))?;
    }

    let next_seq = live
        .back()
        .map_or(1, |segment| segment.end_seq)
        .max(seq_floor)
        .max(1);
    let predecessor = live
        .back()
        .map_or(Predecessor::default(), |segment| Predecessor {
            number: segment.number,
            end_offset: segment.size_bytes,
        });
    let number = number_max + 1;
    let source = SegmentSource::next(&mut recycled);
    let (file, allocated_bytes) =
        start_segment(fs, dir, number, source, options, next_seq, predecessor)?;
    let position = file.position();
    live.push_back(LiveSegment {
        number,
        first_seq: next_seq,
        end_seq: next_seq,
        size_bytes: position,
    });
    let writer = SegmentWriter {
        file,
        number,
        position,
        synced_offset: position,
        writeback_offset: position,
        allocated_bytes,
        has_batches: false,
        next_seq,
        rotate_next: false,
        buffer: Vec::new(),
    };
    Ok((writer, SegmentCatalog { live, recycled }))
}

/// How many segments, from the first, form the log: each has a valid header naming the
/// previous file as its predecessor. A last segment with no valid header and no records was
/// being started when the process died and is not part of the log.
fn chain_length(files: &[SegmentFile], options: &WalOptions) -> Result<usize, WalError> {
    for (index, file) in files.iter().enumerate() {
        let problem = match file.header {
            None => {
                let is_last = index + 1 == files.len();
                let has_records =
                    search_tail_for_proof(file.contents.bytes(), 0, file.number).is_some();
                if is_last && !has_records {
                    return Ok(index);
                }
                "the segment header is missing or damaged".to_string()
            }
            Some(header) if index > 0 && header.predecessor != files[index - 1].number => {
                format!(
                    "the segment header names segment {} as its predecessor but the previous \
                     file is segment {}: a segment is missing",
                    header.predecessor,
                    files[index - 1].number
                )
            }
            Some(_) => continue,
        };
        let corruption = Corruption {
            offset: 0,
            detail: problem,
        };
        if !options.truncate_at_corruption {
            return Err(corruption_error(&file.path, corruption));
        }
        tracing::warn!(
            file = %file.path.display(),
            detail = %corruption.detail,
            "write-ahead log corruption: truncating the log before this segment as configured"
        );
        return Ok(index);
    }
    Ok(files.len())
}

/// Visits the batches of one segment. `declared_end` is where the next segment's header says
/// this one ends (None for the last segment, whose end is found by the tail rules).
fn scan_segment<E: From<WalError>>(
    file: &SegmentFile,
    header: SegmentHeader,
    declared_end: Option<u64>,
    previous_end_seq: Option<u64>,
    visit: &mut impl FnMut(ReplayRecord<'_>) -> Result<(), E>,
) -> Result<SegmentScan, E> {
    let bytes = file.contents.bytes();
    let mut offset = header.len_bytes;
    let mut next_seq = header.first_seq;
    let corrupt_at = |offset: usize, next_seq: u64, detail: String| SegmentScan {
        end_offset: offset as u64,
        end_seq: next_seq,
        corruption: Some(Corruption {
            offset: offset as u64,
            detail,
        }),
    };
    if let Some(previous_end_seq) = previous_end_seq {
        if header.first_seq < previous_end_seq {
            return Ok(corrupt_at(
                0,
                next_seq,
                format!(
                    "the segment starts at sequence number {} but the previous segment ended at {}",
                    header.first_seq, previous_end_seq
                ),
            ));
        }
    }
    let limit = match declared_end {
        Some(end) if end > bytes.len() as u64 => {
            return Ok(corrupt_at(
                bytes.len(),
                next_seq,
                format!(
                    "the next segment says this one ends at offset {end} but the file has only {} bytes",
                    bytes.len()
                ),
            ));
        }
        Some(end) => end as usize,
        None => bytes.len(),
    };
    while offset < limit || declared_end.is_none() {
        let record = decode_record(&bytes[..limit], offset, file.number)
            .filter(|record| record.header.kind == RecordKind::Batch);
        let Some(record) = record else {
            break;
        };
        if record.header.first_seq != next_seq {
            return Ok(corrupt_at(
                offset,
                next_seq,
                format!(
                    "a record with sequence number {} where {} was expected",
                    record.header.first_seq, next_seq
                ),
            ));
        }
        let Some(end_seq) = next_seq.checked_add(record.header.seq_count) else {
            return Ok(corrupt_at(
                offset,
                next_seq,
                "the record's sequence numbers overflow".to_string(),
            ));
        };
        visit(ReplayRecord {
            first_seq: record.header.first_seq,
            seq_count: record.header.seq_count,
            payload: record.payload,
            segment: file.number,
            offset: offset as u64,
        })?;
        next_seq = end_seq;
        offset += record.len_bytes;
    }
    if declared_end.is_some() {
        if offset != limit {
            return Ok(corrupt_at(
                offset,
                next_seq,
                "no valid record here, though the log continues to the next segment".to_string(),
            ));
        }
    } else if let Some(proof) = search_tail_for_proof(bytes, offset, file.number) {
        return Ok(corrupt_at(
            offset,
            next_seq,
            format!(
                "no valid record here, but the valid record at offset {proof} was written after \
                 these bytes were made durable"
            ),
        ));
    }
    Ok(SegmentScan {
        end_offset: offset as u64,
        end_seq: next_seq,
        corruption: None,
    })
}

/// Where the segment-number field sits in a record header (see [`crate::format`]).
const SEGMENT_FIELD_OFFSET: usize = 16;
const SEGMENT_FIELD_BYTES: usize = 8;

/// The same answer as [`find_record_proving_corruption`], found faster: the last segment's
/// tail is usually preallocated zeros, often tens of MiB, and trying a record at each of
/// their offsets took a large share of a whole replay. A record of segment `segment` (never
/// 0) has that non-zero number in its header, so no record starts where the number's eight
/// bytes would all be zero; such runs are skipped up to the next non-zero byte.
fn search_tail_for_proof(bytes: &[u8], stop: usize, segment: u64) -> Option<usize> {
    if segment == 0 {
        // Zeros could be this number: only the exhaustive search is right.
        return find_record_proving_corruption(bytes, stop, segment);
    }
    let segment_bytes = segment.to_le_bytes();
    let last_start = bytes.len().checked_sub(HEADER_BYTES)?;
    let mut offset = stop.saturating_add(1);
    while offset <= last_start {
        let field_start = offset + SEGMENT_FIELD_OFFSET;
        let field = &bytes[field_start..field_start + SEGMENT_FIELD_BYTES];
        if field == segment_bytes {
            let proves = decode_record(bytes, offset, segment)
                .is_some_and(|record| record.header.synced_through > stop as u64);
            if proves {
                return Some(offset);
            }
        } else if field.iter().all(|&byte| byte == 0) {
            // The next candidate's field must cover the first non-zero byte after this one.
            let after_field = field_start + SEGMENT_FIELD_BYTES;
            let nonzero = after_field + first_nonzero_byte(&bytes[after_field..])?;
            offset = nonzero + 1 - SEGMENT_FIELD_OFFSET - SEGMENT_FIELD_BYTES;
            continue;
        }
        offset += 1;
    }
    None
}

/// Index of the first non-zero byte of `bytes`. Tests whole chunks at a time (the
/// compiler vectorizes the OR of a chunk), then finds the byte inside the chunk.
fn first_nonzero_byte(bytes: &[u8]) -> Option<usize> {
    const CHUNK_BYTES: usize = 64;
    let chunks = bytes.chunks(CHUNK_BYTES);
    for (index, chunk) in chunks.enumerate() {
        if chunk.iter().fold(0u8, |any, &byte| any | byte) != 0 {
            let inside = chunk.iter().position(|&byte| byte != 0)?;
            return Some(index * CHUNK_BYTES + inside);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::format::{encode_record, payload_hasher, RecordHeader};

    fn record(segment: u64, synced_through: u64, payload: &[u8]) -> Vec<u8> {
        let header = RecordHeader {
            kind: RecordKind::Batch,
            segment,
            synced_through,
            first_seq: 5,
            seq_count: 1,
        };
        let mut out = Vec::new();
        encode_record(&mut out, &header, payload, &payload_hasher(payload));
        out
    }

    #[test]
    fn finds_first_nonzero_byte_in_and_across_chunks() {
        assert_eq!(first_nonzero_byte(&[]), None);
        assert_eq!(first_nonzero_byte(&[0; 200]), None);
        for index in [0, 1, 63, 64, 65, 130, 199] {
            let mut bytes = vec![0u8; 200];
            bytes[index] = 3;
            assert_eq!(first_nonzero_byte(&bytes), Some(index));
        }
    }

    #[test]
    fn finds_a_proving_record_after_a_long_zero_run() {
        let mut bytes = vec![0u8; 100_000];
        let proof = record(7, 20, b"payload");
        bytes[77_777..77_777 + proof.len()].copy_from_slice(&proof);
        assert_eq!(search_tail_for_proof(&bytes, 10, 7), Some(77_777));
        // Written before offset 10 was durable: proves nothing.
        assert_eq!(search_tail_for_proof(&bytes, 10_000, 7), None);
        assert_eq!(search_tail_for_proof(&bytes, 10, 8), None);
    }

    /// Bytes with zero runs, random noise and valid records of this and other segments.
    fn tail_bytes() -> impl Strategy<Value = (Vec<u8>, usize, u64)> {
        let piece = prop_oneof![
            (0usize..300).prop_map(|len| vec![0u8; len]),
            prop::collection::vec(any::<u8>(), 0..40),
            (
                1u64..4,
                0u64..200,
                prop::collection::vec(any::<u8>(), 0..20)
            )
                .prop_map(|(segment, synced, payload)| record(segment, synced, &payload)),
            // Just the segment field of segment 1..4, as in a torn header.
            (1u64..4).prop_map(|segment| segment.to_le_bytes().to_vec()),
        ];
        (prop::collection::vec(piece, 0..12), 0usize..200, 0u64..4)
            .prop_map(|(pieces, stop, segment)| (pieces.concat(), stop, segment))
    }

    proptest! {
        #[test]
        fn agrees_with_the_exhaustive_search((bytes, stop, segment) in tail_bytes()) {
            prop_assert_eq!(
                search_tail_for_proof(&bytes, stop, segment),
                find_record_proving_corruption(&bytes, stop, segment)
            );
        }
    }
}
