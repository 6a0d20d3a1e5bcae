//! How a WAL is configured.

use std::time::Duration;

use crate::format::{HEADER_BYTES, PAYLOAD_BYTES_MAX, SEGMENT_HEADER_RECORD_BYTES};
use crate::WalError;

/// When a commit is acknowledged relative to fdatasync. Every mode survives `kill -9` of the
/// process; only `Sync` survives a power loss with no acknowledged write lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Acknowledged only after the group's bytes are fdatasynced.
    #[default]
    Sync,
    /// Acknowledged once written; a background thread fdatasyncs at least this often.
    Interval(Duration),
    /// Acknowledged once written; syncing is left to the OS.
    None,
}

/// WAL configuration.
#[derive(Debug, Clone)]
pub struct WalOptions {
    pub durability: Durability,
    /// A new segment is started when the next group would take the current one past this.
    pub segment_size_bytes: u64,
    /// Obsolete segments kept (renamed) for reuse instead of deleted.
    pub recycled_segments_max: usize,
    /// false: corruption before the tail fails the open. true: the log is cut there instead
    /// (later records and segments are discarded).
    pub truncate_at_corruption: bool,
    /// Largest batch payload accepted; larger ones get `WalError::RecordTooLarge`.
    pub record_bytes_max: usize,
    /// A leader stops adding members to its group past this many bytes.
    pub group_bytes_max: usize,
    /// Fill new segments with zeros up to `segment_size_bytes` (ahead of the writer, a step at
    /// a time: [`WalOptions::preallocate_first_bytes`]), so that commits overwrite allocated
    /// blocks and fdatasync needs no metadata update. Costs one write of
    /// `segment_size_bytes` per new segment (not for recycled ones). Ignored with
    /// [`Durability::None`], which never fdatasyncs a commit (see
    /// [`WalOptions::preallocate_bytes`]).
    pub preallocate_segments: bool,
    /// Write segments through a shared memory mapping (`shoal_vfs::FileSystem::open_mapped`) when
    /// commits are not fdatasynced one by one: a commit's bytes then reach the page cache
    /// with a copy instead of a `write(2)`. Ignored with [`Durability::Sync`], where the
    /// fdatasync dominates and preallocated segments make it cheaper (see
    /// [`WalOptions::mapped_bytes`]).
    pub map_segments: bool,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            durability: Durability::Sync,
            segment_size_bytes: 64 << 20,
            recycled_segments_max: 2,
            truncate_at_corruption: false,
            record_bytes_max: 64 << 20,
            group_bytes_max: 16 << 20,
            preallocate_segments: true,
            map_segments: true,
        }
    }
}

/// The first zero-fill of a fresh segment, and the smallest later one.
pub const PREALLOCATE_STEP_MIN_BYTES: u64 = 1 << 20;
/// The largest zero-fill of a segment at once.
pub const PREALLOCATE_STEP_MAX_BYTES: u64 = 8 << 20;

/// The smallest interval mode accepts: below it the sync thread would just spin.
const INTERVAL_MIN: Duration = Duration::from_millis(1);

impl WalOptions {
    /// Bytes of zeros a fresh segment is filled with. Preallocation only pays where commits
    /// are fdatasynced; with `Durability::None` it would double the bytes written and put a
    /// segment-sized write and fdatasync on the write path at every rotation.
    pub fn preallocate_bytes(&self) -> u64 {
        if self.preallocate_segments && self.durability != Durability::None {
            self.segment_size_bytes
        } else {
            0
        }
    }

    /// Bytes of zeros a fresh segment starts with. A segment written with plain writes
    /// (`Sync`) starts with one [`PREALLOCATE_STEP_MIN_BYTES`] step and is zero-filled
    /// further, a step at a time, as its writer nears the end of what is filled
    /// (`Log::write_group`): a new data directory holds a megabyte of WAL, not a whole
    /// segment, and the bytes written in all are the same. A mapped segment is filled whole
    /// before it is mapped (a mapping cannot be written past that way).
    pub fn preallocate_first_bytes(&self) -> u64 {
        if self.mapped_bytes() > 0 {
            self.preallocate_bytes()
        } else {
            self.preallocate_bytes().min(PREALLOCATE_STEP_MIN_BYTES)
        }
    }

    /// How far past `allocated_bytes` the next zero-fill of a segment reaches: double what is
    /// filled, by at least [`PREALLOCATE_STEP_MIN_BYTES`] and at most
    /// [`PREALLOCATE_STEP_MAX_BYTES`] (one fill of a few MiB keeps the pause it puts on a
    /// commit short), never past [`WalOptions::preallocate_bytes`], and at least to
    /// `needed_bytes` unless that is past the segment's size.
    pub fn preallocate_next_bytes(&self, allocated_bytes: u64, needed_bytes: u64) -> u64 {
        let step = allocated_bytes.clamp(PREALLOCATE_STEP_MIN_BYTES, PREALLOCATE_STEP_MAX_BYTES);
        let needed = needed_bytes.next_multiple_of(PREALLOCATE_STEP_MIN_BYTES);
        (allocated_bytes + step)
            .max(needed)
            .min(self.preallocate_bytes())
    }

    /// Bytes of each segment written through a memory mapping (0: none, plain writes). A
    /// mapped fresh segment is allocated, not zero-filled: its blocks are unwritten extents,
    /// whose first fdatasync must also record them as written, which is why `Sync` does not
    /// map.
    pub fn mapped_bytes(&self) -> u64 {
        if self.map_segments && self.durability != Durability::Sync {
            self.segment_size_bytes
        } else {
            0
        }
    }

    pub(crate) fn validate(&self) -> Result<(), WalError> {
        let invalid = |reason: String| Err(WalError::InvalidOptions(reason));
        let segment_size_min = SEGMENT_HEADER_RECORD_BYTES + HEADER_BYTES as u64;
        if self.segment_size_bytes < segment_size_min {
            return invalid(format!(
                "segment_size_bytes is {} but must be at least {segment_size_min}",
                self.segment_size_bytes
            ));
        }
        if self.record_bytes_max > PAYLOAD_BYTES_MAX - HEADER_BYTES {
            return invalid(format!(
                "record_bytes_max is {} but the record format allows at most {}",
                self.record_bytes_max,
                PAYLOAD_BYTES_MAX - HEADER_BYTES
            ));
        }
        if self.group_bytes_max == 0 {
            return invalid("group_bytes_max must be positive".to_string());
        }
        if let Durability::Interval(interval) = self.durability {
            if interval < INTERVAL_MIN {
                return invalid(format!(
                    "the sync interval is {interval:?} but must be at least {INTERVAL_MIN:?}"
                ));
            }
        }
        Ok(())
    }
}
