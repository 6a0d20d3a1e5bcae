//! Segment files: their names, how a new one is started, and the catalog of live segments.
//! The format of what is inside them is in [`crate::format`].

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shoal_vfs::{Fs, WritableFile};

use crate::format::{encode_segment_header, SEGMENT_HEADER_RECORD_BYTES};
use crate::{WalError, WalOptions};

const SEGMENT_SUFFIX: &str = ".log";
const RECYCLED_SUFFIX: &str = ".recycle";
const NUMBER_DIGITS: usize = 20;

/// Zeros are written in chunks of this size when preallocating.
const PREALLOCATE_CHUNK_BYTES: usize = 1 << 20;

/// Path of live segment `number`.
pub fn segment_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:0NUMBER_DIGITS$}{SEGMENT_SUFFIX}"))
}

/// Path of the obsolete segment `number` kept for reuse.
pub fn recycled_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:0NUMBER_DIGITS$}{RECYCLED_SUFFIX}"))
}

/// A file of the WAL directory, recognised by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalFile {
    Segment(u64),
    Recycled(u64),
}

/// Recognises WAL file names; other names are not the WAL's and are left alone.
pub fn parse_file_name(name: &str) -> Option<WalFile> {
    let parse_number = |digits: &str| {
        if digits.len() == NUMBER_DIGITS && digits.bytes().all(|b| b.is_ascii_digit()) {
            digits.parse::<u64>().ok()
        } else {
            None
        }
    };
    if let Some(digits) = name.strip_suffix(SEGMENT_SUFFIX) {
        parse_number(digits).map(WalFile::Segment)
    } else if let Some(digits) = name.strip_suffix(RECYCLED_SUFFIX) {
        parse_number(digits).map(WalFile::Recycled)
    } else {
        None
    }
}

/// A segment whose records are not all released yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveSegment {
    pub number: u64,
    /// Sequence number of its first batch (or of the next batch, while it has none).
    pub first_seq: u64,
    /// One past the last sequence number of its batches (== first_seq while it has none).
    pub end_seq: u64,
    /// Where its log ends.
    pub size_bytes: u64,
}

/// Live segments (oldest first; the last one is being written) and recycled files.
#[derive(Debug, Default)]
pub struct SegmentCatalog {
    pub live: VecDeque<LiveSegment>,
    /// Numbers (old names) of the `.recycle` files, oldest first.
    pub recycled: VecDeque<u64>,
}

impl SegmentCatalog {
    pub fn live_bytes(&self) -> u64 {
        self.live.iter().map(|segment| segment.size_bytes).sum()
    }

    pub fn oldest_live_first_seq(&self) -> Option<u64> {
        self.live
            .iter()
            .find(|segment| segment.end_seq > segment.first_seq)
            .map(|segment| segment.first_seq)
    }

    /// Takes out the oldest segments whose every batch has sequence number <= `seq`, never
    /// the one being written.
    pub fn take_released_through(&mut self, seq: u64) -> Vec<LiveSegment> {
        let mut released = Vec::new();
        while self.live.len() > 1 {
            match self.live.front() {
                Some(oldest) if oldest.end_seq <= seq.saturating_add(1) => {
                    released.extend(self.live.pop_front());
                }
                _ => break,
            }
        }
        released
    }
}

/// Where a new segment's bytes come from.
pub enum SegmentSource {
    /// Rename this recycled file (its old number) and overwrite it in place.
    Recycled(u64),
    /// Create a new file: zero-filled to [`WalOptions::preallocate_first_bytes`], or
    /// allocated and mapped to [`WalOptions::mapped_bytes`].
    Fresh,
}

impl SegmentSource {
    /// The oldest recycled file if there is one, else a new file.
    pub fn next(recycled: &mut VecDeque<u64>) -> SegmentSource {
        recycled
            .pop_front()
            .map_or(SegmentSource::Fresh, SegmentSource::Recycled)
    }
}

/// Describes the segment a new one follows, for its header.
#[derive(Debug, Clone, Copy, Default)]
pub struct Predecessor {
    /// 0 when there is none.
    pub number: u64,
    pub end_offset: u64,
}

/// Starts segment `number`: its file exists, its header record is written and fdatasynced and
/// the directory is fsynced, so the segment is durable before any batch goes into it. Returns
/// the handle positioned after the header, and how many bytes of the file are durably
/// allocated (zero-filled, or a recycled file's old bytes) for writes to overwrite. Segments are written through a memory mapping
/// when [`WalOptions::mapped_bytes`] says so (recycled ones too: their pages are usually
/// still cached, so a store into one needs no new page).
pub fn start_segment(
    fs: &Fs,
    dir: &Path,
    number: u64,
    source: SegmentSource,
    options: &WalOptions,
    first_seq: u64,
    predecessor: Predecessor,
) -> Result<(Arc<dyn WritableFile>, u64), WalError> {
    let path = segment_path(dir, number);
    let mapped_bytes = options.mapped_bytes();
    match source {
        SegmentSource::Recycled(old_number) => {
            let old_path = recycled_path(dir, old_number);
            fs.rename(&old_path, &path)
                .map_err(|source| WalError::io("rename recycled segment", &old_path, source))?;
        }
        // `open_mapped` below creates it.
        SegmentSource::Fresh if mapped_bytes > 0 => {}
        SegmentSource::Fresh => {
            let file = fs
                .create(&path)
                .map_err(|source| WalError::io("create", &path, source))?;
            let zeros_bytes = options.preallocate_first_bytes();
            if zeros_bytes > 0 {
                preallocate(file.as_ref(), zeros_bytes)
                    .map_err(|source| WalError::io("preallocate", &path, source))?;
                file.sync_data()
                    .map_err(|source| WalError::sync("fdatasync", &path, source))?;
            }
        }
    }
    let file = if mapped_bytes > 0 {
        fs.open_mapped(&path, mapped_bytes)
            .map_err(|source| WalError::io("open mapped", &path, source))?
    } else {
        fs.open_overwrite(&path)
            .map_err(|source| WalError::io("open for overwrite", &path, source))?
    };
    let mut header = Vec::with_capacity(SEGMENT_HEADER_RECORD_BYTES as usize);
    encode_segment_header(
        &mut header,
        number,
        first_seq,
        predecessor.number,
        predecessor.end_offset,
    );
    file.write_all(&header)
        .map_err(|source| WalError::io("write", &path, source))?;
    file.sync_data()
        .map_err(|source| WalError::sync("fdatasync", &path, source))?;
    fs.sync_dir(dir)
        .map_err(|source| WalError::sync("fsync directory", dir, source))?;
    let allocated_bytes = fs
        .file_size(&path)
        .map_err(|source| WalError::io("size of", &path, source))?;
    Ok((Arc::from(file), allocated_bytes))
}

/// Zero-fills `file` (segment `path`) from `from_bytes` to `to_bytes` without moving its
/// write position, and fdatasyncs it: afterwards commits into that range overwrite allocated
/// blocks whose size is on disk, so their fdatasyncs write data alone. Only past the data:
/// the caller's write position is at or below `from_bytes`.
pub fn extend_preallocation(
    file: &dyn WritableFile,
    path: &Path,
    from_bytes: u64,
    to_bytes: u64,
) -> Result<(), WalError> {
    debug_assert!(
        file.position() <= from_bytes,
        "zeros never go over written records"
    );
    let zeros = vec![0u8; PREALLOCATE_CHUNK_BYTES];
    let mut offset = from_bytes;
    while offset < to_bytes {
        let chunk = (to_bytes - offset).min(PREALLOCATE_CHUNK_BYTES as u64);
        file.write_at(offset, &zeros[..chunk as usize])
            .map_err(|source| WalError::io("preallocate", path, source))?;
        offset += chunk;
    }
    file.sync_data()
        .map_err(|source| WalError::sync("fdatasync", path, source))
}

/// Writes `size_bytes` zeros (not synced: the caller syncs, so that a failed sync is told
/// from a full disk).
fn preallocate(file: &dyn WritableFile, size_bytes: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; PREALLOCATE_CHUNK_BYTES];
    let mut remaining = size_bytes;
    while remaining > 0 {
        let chunk = remaining.min(PREALLOCATE_CHUNK_BYTES as u64) as usize;
        file.write_all(&zeros[..chunk])?;
        remaining -= chunk as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip_and_sort_numerically() {
        let dir = Path::new("/w");
        let name = |path: PathBuf| path.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(
            parse_file_name(&name(segment_path(dir, 42))),
            Some(WalFile::Segment(42))
        );
        assert_eq!(
            parse_file_name(&name(recycled_path(dir, 7))),
            Some(WalFile::Recycled(7))
        );
        assert!(name(segment_path(dir, 9)) < name(segment_path(dir, 10)));
        assert_eq!(parse_file_name("LOCK"), None);
        assert_eq!(parse_file_name("12.log"), None);
        assert_eq!(parse_file_name("0000000000000000000x.log"), None);
    }

    #[test]
    fn release_takes_only_fully_released_segments_and_never_the_current_one() {
        let segment = |number, first_seq, end_seq| LiveSegment {
            number,
            first_seq,
            end_seq,
            size_bytes: 100,
        };
        let mut catalog = SegmentCatalog {
            live: VecDeque::from([segment(1, 1, 11), segment(2, 11, 21), segment(3, 21, 25)]),
            recycled: VecDeque::new(),
        };
        assert!(catalog.take_released_through(9).is_empty());
        assert_eq!(catalog.take_released_through(10), vec![segment(1, 1, 11)]);
        assert_eq!(
            catalog.take_released_through(1000),
            vec![segment(2, 11, 21)]
        );
        assert_eq!(catalog.live.len(), 1);
        assert_eq!(catalog.oldest_live_first_seq(), Some(21));
        assert_eq!(catalog.live_bytes(), 100);
    }
}
