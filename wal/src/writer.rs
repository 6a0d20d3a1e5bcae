//! The part of the WAL that writes: the current segment, rotation, syncing, releasing old
//! segments and poisoning. It knows nothing of batches' types or of the commit queue; the
//! group leader (in `lib.rs`) calls it while holding the writer lock.
//!
//! # Poisoning, and running out of space
//!
//! A failed fsync poisons the log for good: the kernel may have dropped the pages it could
//! not write, and a later fsync would succeed without them (DESIGN.md §5). So does any
//! failure whose effect on the file is unknown (an I/O error of a write).
//!
//! A full disk (`ENOSPC`, `EDQUOT`) is different: a write, create, allocation or rename that
//! meets it did not get the room it asked for, and nothing else went wrong. Such a failure
//! is answered with [`WalError::NoSpace`] and the log stays open, provided it is left exactly
//! as it was before the group:
//!
//! - In the zero-fill ahead of the writer (`extend_preallocation`) and in starting the next
//!   segment (`rotate`), no record is written: the current segment is untouched. A next
//!   segment that was started part-way is never written to: the next group rotates again
//!   (`rotate_next`), and the new attempt creates the file afresh or renames a recycled one
//!   over it. After a crash in between, the half-started segment is what a crash inside a
//!   rotation leaves, which replay handles.
//! - In the group's own write, the part that fitted may be in the file: complete records of
//!   the group among it. Those batches were not applied and their callers get the error, so
//!   they must never be replayed either, nor stay ahead of the next group's records, whose
//!   sequence numbers they would share. The segment is therefore cut back to the end of the
//!   last whole record before the group (`WritableFile::rewind`) and that cut is fdatasynced
//!   *before* the error is returned: once a caller has been told its write failed, no crash
//!   can bring it back. If the cut or its fdatasync fails, nobody knows what the segment
//!   holds, and the log is poisoned instead.
//!
//! In every case the group's sequence numbers are not used: the next group gets them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use shoal_vfs::{Fs, WritableFile};

use crate::format::{encode_record, RecordHeader, RecordKind, HEADER_BYTES};
use crate::segments::{
    extend_preallocation, recycled_path, segment_path, start_segment, LiveSegment, Predecessor,
    SegmentCatalog, SegmentSource,
};
use crate::{Durability, WalError, WalOptions, WalStats};

/// The group buffer is shrunk back after a group larger than this.
const BUFFER_RETAINED_BYTES_MAX: usize = 4 << 20;
/// Without per-commit syncs, write-back of the segment is started every this many bytes.
const WRITEBACK_STEP_BYTES: u64 = 1 << 20;
/// Write-back is started for whole pages only: the last, partial one is still being appended.
const PAGE_BYTES: u64 = 4096;

/// The segment being written. Guarded by `Log::writer`, the leader token.
pub struct SegmentWriter {
    /// Shared so that [`Log::sync`] can fdatasync it without holding the writer lock.
    pub file: Arc<dyn WritableFile>,
    pub number: u64,
    /// Where the next record goes.
    pub position: u64,
    /// Offset up to which the segment is known durable.
    pub synced_offset: u64,
    /// Offset up to which write-back to the device has been started (see
    /// [`Log::start_writeback`]).
    pub writeback_offset: u64,
    /// Bytes of the file durably allocated for writes to overwrite (zero-filled, or a
    /// recycled segment's old bytes): a write past it extends the file, whose fdatasync must
    /// then record the new size too.
    pub allocated_bytes: u64,
    pub has_batches: bool,
    /// Sequence number the next batch gets.
    pub next_seq: u64,
    /// A rotation failed for want of space: the next group starts a new segment, whatever
    /// its size (module docs).
    pub rotate_next: bool,
    /// Reused for encoding each group.
    pub buffer: Vec<u8>,
}

/// One batch of a group, as the leader hands it to [`Log::write_group`].
pub struct GroupEntry<'a> {
    pub seq_count: u64,
    pub payload: &'a [u8],
    /// A hasher that has consumed `payload`, computed by the committing thread.
    pub payload_crc: &'a crc32fast::Hasher,
    /// `WalBatch::needs_sync` of the batch.
    pub needs_sync: bool,
}

#[derive(Debug, Default)]
pub struct Counters {
    pub commits: AtomicU64,
    pub groups: AtomicU64,
    pub syncs: AtomicU64,
    pub bytes_written: AtomicU64,
}

/// Shared state of an open WAL that does not depend on the batch or applier types.
pub struct Log {
    pub fs: Fs,
    pub dir: PathBuf,
    pub options: WalOptions,
    /// The leader token: held while a group is written, synced and applied.
    pub writer: Mutex<SegmentWriter>,
    pub catalog: Mutex<SegmentCatalog>,
    poison: Mutex<Option<String>>,
    /// Last sequence number assigned to a written batch.
    pub last_seq: AtomicU64,
    pub counters: Counters,
}

impl Log {
    pub fn new(
        fs: Fs,
        dir: PathBuf,
        options: WalOptions,
        writer: SegmentWriter,
        catalog: SegmentCatalog,
    ) -> Self {
        let last_seq = writer.next_seq.saturating_sub(1);
        Log {
            fs,
            dir,
            options,
            writer: Mutex::new(writer),
            catalog: Mutex::new(catalog),
            poison: Mutex::new(None),
            last_seq: AtomicU64::new(last_seq),
            counters: Counters::default(),
        }
    }

    pub fn poisoned(&self) -> Option<String> {
        self.poison.lock().clone()
    }

    pub fn check_poison(&self) -> Result<(), WalError> {
        match self.poisoned() {
            Some(reason) => Err(WalError::Poisoned(reason)),
            None => Ok(()),
        }
    }

    /// Stops all further writes. The first reason sticks: later failures are consequences.
    fn poison(&self, error: &WalError) {
        let mut poison = self.poison.lock();
        if poison.is_none() {
            tracing::error!(%error, "write-ahead log poisoned; no more writes are accepted");
            *poison = Some(error.to_string());
        }
    }

    /// Runs an I/O step; a failure poisons the log, because after a failed write or fsync
    /// nobody knows what reached the disk (and retrying an fsync can falsely succeed). Except
    /// [`WalError::NoSpace`], from a step that leaves the log as it was (module docs): the
    /// caller passes only such steps' results here, or takes the group back first.
    fn poison_on_error<T>(&self, result: Result<T, WalError>) -> Result<T, WalError> {
        if let Err(error) = &result {
            if !error.is_no_space() {
                self.poison(error);
            }
        }
        result
    }

    /// After the group's write failed at `writer.position`: a full disk takes the part that
    /// fitted back out of the segment, durably, and leaves the log open; anything else, or a
    /// failure to take it back, poisons the log (module docs). Returns the error to answer.
    fn take_back_group(&self, writer: &mut SegmentWriter, error: WalError) -> WalError {
        if !error.is_no_space() {
            self.poison(&error);
            return error;
        }
        let path = segment_path(&self.dir, writer.number);
        let taken_back = writer
            .file
            .rewind(writer.position)
            .map_err(|source| WalError::sync("cut back a group that did not fit in", &path, source))
            .and_then(|()| self.fdatasync(writer.file.as_ref(), writer.number));
        if let Err(cut_error) = taken_back {
            self.poison(&cut_error);
            return cut_error;
        }
        // The cut also dropped any zeros allocated past the position.
        writer.allocated_bytes = writer.allocated_bytes.min(writer.position);
        writer.writeback_offset = writer.writeback_offset.min(writer.position);
        writer.synced_offset = writer.position;
        tracing::warn!(%error, "write-ahead log out of space; the failed group was taken back");
        error
    }

    /// Writes `entries` as one group with one write call, syncs in Sync mode, and returns the
    /// first sequence number of the first entry. The caller holds the writer lock.
    pub fn write_group(
        &self,
        writer: &mut SegmentWriter,
        entries: &[GroupEntry<'_>],
    ) -> Result<u64, WalError> {
        self.check_poison()?;
        let group_bytes: u64 = entries
            .iter()
            .map(|entry| (HEADER_BYTES + entry.payload.len()) as u64)
            .sum();
        if writer.rotate_next
            || writer.has_batches
                && writer.position.saturating_add(group_bytes) > self.options.segment_size_bytes
        {
            let rotated = self.rotate(writer);
            self.poison_on_error(rotated)?;
        }
        let end = writer.position.saturating_add(group_bytes);
        if end > writer.allocated_bytes && writer.allocated_bytes < self.options.preallocate_bytes()
        {
            let extended = self.extend_preallocation(writer, end);
            self.poison_on_error(extended)?;
        }
        let first_seq = writer.next_seq;
        let mut next_seq = first_seq;
        writer.buffer.clear();
        for entry in entries {
            let header = RecordHeader {
                kind: RecordKind::Batch,
                segment: writer.number,
                synced_through: writer.synced_offset,
                first_seq: next_seq,
                seq_count: entry.seq_count,
            };
            encode_record(
                &mut writer.buffer,
                &header,
                entry.payload,
                entry.payload_crc,
            );
            next_seq = next_seq
                .checked_add(entry.seq_count)
                .ok_or(WalError::SequenceNumbersExhausted)?;
        }
        debug_assert_eq!(writer.buffer.len() as u64, group_bytes);
        let written = writer.file.write_all(&writer.buffer).map_err(|source| {
            WalError::io("write", segment_path(&self.dir, writer.number), source)
        });
        if let Err(error) = written {
            return Err(self.take_back_group(writer, error));
        }
        if writer.buffer.capacity() > BUFFER_RETAINED_BYTES_MAX {
            writer.buffer = Vec::new();
        }
        writer.position += group_bytes;
        writer.has_batches = true;
        writer.next_seq = next_seq;
        self.counters
            .bytes_written
            .fetch_add(group_bytes, Ordering::Relaxed);
        self.counters.groups.fetch_add(1, Ordering::Relaxed);
        self.counters
            .commits
            .fetch_add(entries.len() as u64, Ordering::Relaxed);
        if self.options.durability == Durability::Sync && entries.iter().any(|e| e.needs_sync) {
            let synced = self.sync_writer(writer);
            self.poison_on_error(synced)?;
        } else {
            self.start_writeback(writer);
        }
        if let Some(current) = self.catalog.lock().live.back_mut() {
            debug_assert_eq!(current.number, writer.number);
            current.end_seq = next_seq;
            current.size_bytes = writer.position;
        }
        self.last_seq
            .store(next_seq.saturating_sub(1), Ordering::Release);
        Ok(first_seq)
    }

    /// With durability `none` or `interval`, asks the OS to start writing the segment out
    /// every [`WRITEBACK_STEP_BYTES`]. Otherwise dirty pages pile up until an fdatasync
    /// (segment rotation, a flush's WAL sync, the interval thread) must write tens of MiB at
    /// once: rotation holds the writer lock for that, and an unpaced `none` writer spent 5-8%
    /// of its time waiting on rotations. RocksDB's `wal_bytes_per_sync` does the same.
    fn start_writeback(&self, writer: &mut SegmentWriter) {
        let end = writer.position - writer.position % PAGE_BYTES;
        let len = end.saturating_sub(writer.writeback_offset);
        if len < WRITEBACK_STEP_BYTES {
            return;
        }
        // Only a hint: a failing device fails the next fdatasync too, and that poisons.
        if let Err(error) = writer.file.start_writeback(writer.writeback_offset, len) {
            tracing::debug!(%error, "starting WAL write-back failed");
        }
        writer.writeback_offset = end;
    }

    /// Zero-fills the segment ahead of its writer so that the group ending at `end_bytes`,
    /// and the groups after it, overwrite allocated blocks (see
    /// [`WalOptions::preallocate_first_bytes`]). Only for plain, unmapped segments: a mapped
    /// one was filled whole before it was mapped.
    fn extend_preallocation(
        &self,
        writer: &mut SegmentWriter,
        end_bytes: u64,
    ) -> Result<(), WalError> {
        if self.options.mapped_bytes() > 0 {
            return Ok(());
        }
        let to_bytes = self
            .options
            .preallocate_next_bytes(writer.allocated_bytes, end_bytes);
        if to_bytes <= writer.allocated_bytes {
            return Ok(());
        }
        // Zeros go only past what has been written: the position is at or below the end of
        // what was allocated, or the segment grew by plain appends past it.
        let from_bytes = writer.allocated_bytes.max(writer.position);
        if to_bytes > from_bytes {
            extend_preallocation(
                writer.file.as_ref(),
                &segment_path(&self.dir, writer.number),
                from_bytes,
                to_bytes,
            )?;
            self.counters.syncs.fetch_add(1, Ordering::Relaxed);
        }
        writer.allocated_bytes = to_bytes;
        Ok(())
    }

    /// fdatasyncs segment `number` through `file`, counting it.
    fn fdatasync(&self, file: &dyn WritableFile, number: u64) -> Result<(), WalError> {
        file.sync_data().map_err(|source| {
            WalError::sync("fdatasync", segment_path(&self.dir, number), source)
        })?;
        self.counters.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn sync_writer(&self, writer: &mut SegmentWriter) -> Result<(), WalError> {
        self.fdatasync(writer.file.as_ref(), writer.number)?;
        writer.synced_offset = writer.position;
        Ok(())
    }

    /// Makes every batch written before the call durable: fdatasyncs the current segment if
    /// it has unsynced bytes (earlier segments were synced when they were rotated out).
    ///
    /// The fdatasync runs *without* the writer lock, so group leaders go on writing meanwhile:
    /// with durability `none` or `interval` a segment can hold tens of MiB of unsynced data
    /// when a flush or the interval thread asks for a sync, and holding the lock for that
    /// long stalled every writer behind it. Bytes written during the sync may or may not be
    /// covered; only `position` at the start is claimed as synced.
    pub fn sync(&self) -> Result<(), WalError> {
        self.check_poison()?;
        let (file, number, position) = {
            let writer = self.writer.lock();
            if writer.synced_offset == writer.position {
                return Ok(());
            }
            (Arc::clone(&writer.file), writer.number, writer.position)
        };
        let synced = self.fdatasync(file.as_ref(), number);
        self.poison_on_error(synced)?;
        let mut writer = self.writer.lock();
        // If the segment was rotated meanwhile, rotation synced it whole; the new segment's
        // offsets are another file's.
        if writer.number == number && writer.synced_offset < position {
            writer.synced_offset = position;
        }
        Ok(())
    }

    /// Loses what a power cut would: zeroes the current segment past its synced offset
    /// (earlier segments were synced whole when rotated out) and fdatasyncs the zeros. The
    /// writer lock is then kept for good, so nothing is written after: this is for a process
    /// about to end itself (`shoal`'s crash call), which reopens to the synced log. Returns the
    /// bytes lost.
    pub fn lose_unsynced(&self) -> Result<u64, WalError> {
        let writer = self.writer.lock();
        let lost = writer.position - writer.synced_offset;
        let path = segment_path(&self.dir, writer.number);
        let zeros = vec![0u8; usize::try_from(lost.min(WRITEBACK_STEP_BYTES)).unwrap_or(0)];
        let mut offset = writer.synced_offset;
        while offset < writer.position {
            let len = (writer.position - offset).min(zeros.len() as u64);
            writer
                .file
                .write_at(offset, &zeros[..len as usize])
                .map_err(|source| WalError::io("zero the unsynced tail", &path, source))?;
            offset += len;
        }
        if lost > 0 {
            self.fdatasync(writer.file.as_ref(), writer.number)?;
        }
        std::mem::forget(writer);
        Ok(lost)
    }

    /// Makes the current segment durable and starts the next one (see the format docs for
    /// why the order matters).
    fn rotate(&self, writer: &mut SegmentWriter) -> Result<(), WalError> {
        if writer.synced_offset != writer.position {
            self.sync_writer(writer)?;
        }
        let started = self.start_next_segment(writer);
        // A next segment may have been started part-way: it must not be left behind the
        // one still written to (module docs), so the next group rotates again.
        writer.rotate_next = started.is_err();
        started
    }

    fn start_next_segment(&self, writer: &mut SegmentWriter) -> Result<(), WalError> {
        // Numbers only grow: the current one is the largest any WAL file has had.
        let number = writer.number + 1;
        let source = SegmentSource::next(&mut self.catalog.lock().recycled);
        let predecessor = Predecessor {
            number: writer.number,
            end_offset: writer.position,
        };
        let (file, allocated_bytes) = start_segment(
            &self.fs,
            &self.dir,
            number,
            source,
            &self.options,
            writer.next_seq,
            predecessor,
        )?;
        writer.position = file.position();
        writer.synced_offset = writer.position;
        writer.writeback_offset = writer.position;
        writer.allocated_bytes = allocated_bytes;
        writer.file = file;
        writer.number = number;
        writer.has_batches = false;
        self.catalog.lock().live.push_back(LiveSegment {
            number,
            first_seq: writer.next_seq,
            end_seq: writer.next_seq,
            size_bytes: writer.position,
        });
        Ok(())
    }

    /// Deletes or recycles the segments whose every batch has sequence number <= `seq`.
    /// Each change is made durable before the next, so after a crash the remaining segments
    /// are still a contiguous run. Never touches the segment being written.
    pub fn release_through(&self, seq: u64) -> Result<(), WalError> {
        let released = self.catalog.lock().take_released_through(seq);
        for (index, segment) in released.iter().enumerate() {
            let result = self.retire(segment);
            if result.is_err() {
                // Keep the catalog truthful: what was not retired is still live.
                let mut catalog = self.catalog.lock();
                for segment in released[index..].iter().rev() {
                    catalog.live.push_front(*segment);
                }
                return result;
            }
        }
        Ok(())
    }

    fn retire(&self, segment: &LiveSegment) -> Result<(), WalError> {
        let path = segment_path(&self.dir, segment.number);
        let recycle = self.catalog.lock().recycled.len() < self.options.recycled_segments_max;
        if recycle {
            let target = recycled_path(&self.dir, segment.number);
            self.fs
                .rename(&path, &target)
                .map_err(|source| WalError::io("rename for recycling", &path, source))?;
        } else {
            self.fs
                .remove(&path)
                .map_err(|source| WalError::io("remove", &path, source))?;
        }
        self.fs
            .sync_dir(&self.dir)
            .map_err(|source| WalError::sync("fsync directory", &self.dir, source))?;
        if recycle {
            self.catalog.lock().recycled.push_back(segment.number);
        }
        Ok(())
    }

    pub fn stats(&self) -> WalStats {
        WalStats {
            commits: self.counters.commits.load(Ordering::Relaxed),
            groups: self.counters.groups.load(Ordering::Relaxed),
            syncs: self.counters.syncs.load(Ordering::Relaxed),
            bytes_written: self.counters.bytes_written.load(Ordering::Relaxed),
        }
    }
}
