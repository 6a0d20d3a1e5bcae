//! What the database reports about its shape and its work: [`DbStats`] and [`TreeStats`].
//!
//! **Write amplification** is `(flush bytes + compaction bytes written) / user bytes`, where
//! flush and compaction bytes are the sizes of the SSTables written (trivial moves write
//! nothing) and user bytes are the encoded batch payloads committed through the WAL (keys,
//! values and a few bytes of framing per entry). It counts since the database was opened.
//!
//! **Compaction by level** ([`LevelCompactionStats`], one per level a job wrote into, as
//! RocksDB's per-level compaction stats): the jobs, the bytes they read from every input
//! level and wrote into this one, and the time they took, from the start of the merge to the
//! installed version, summed over the compaction threads. Where write amplification comes
//! from is then readable level by level: `bytes_written / user_bytes_written` of each level,
//! plus the flushes' share for L0; the levels' bytes add up to the totals.
//!
//! **Tree estimates** are computed from the current version's file metadata and the
//! memtables, so they are always as fresh as the last write: each tombstone is assumed to
//! delete one older put (`entries - 2 * tombstones`, as RocksDB estimates), and overwritten
//! versions not yet compacted away are still counted. After a full compaction with no
//! snapshots they are exact for entries.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::superversion::TreeMemtables;
use crate::version::{TreeVersion, LEVELS};

/// Database-wide counters and shape (see the module docs for definitions).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbStats {
    /// SSTables per level, summed over all trees (index = level, `LEVELS` entries).
    pub level_files: Vec<usize>,
    /// Bytes of SSTables per level, summed over all trees.
    pub level_bytes: Vec<u64>,
    /// Encoded batch payload bytes committed since open.
    pub user_bytes_written: u64,
    /// Bytes of SSTables written by flushes since open.
    pub flush_bytes_written: u64,
    /// Bytes of input SSTables read by (non-trivial) compactions since open.
    pub compaction_bytes_read: u64,
    /// Bytes of SSTables written by compactions since open.
    pub compaction_bytes_written: u64,
    /// SSTable bytes written per user byte (0 before the first write).
    pub write_amplification: f64,
    /// Compactions that rewrote files.
    pub compactions: u64,
    /// Compactions that only moved files to a deeper level.
    pub trivial_moves: u64,
    /// Compaction work per output level (`LEVELS` entries; module docs).
    pub compaction_levels: Vec<LevelCompactionStats>,
    /// Versions installed compactions dropped because the compaction filter said so
    /// (`DbOptions::compaction_filter`).
    pub compaction_entries_filtered: u64,
    /// Writes that were slowed down by compaction back-pressure.
    pub write_stalls: u64,
    /// Total time writers were slowed down.
    pub stall_time_total: Duration,
    /// The longest single slowdown (never above one second).
    pub stall_time_longest: Duration,
    /// Obsolete SSTables removed (or kept for reuse) after their last reader let go.
    pub obsolete_files_removed: u64,
    /// New SSTables written over a recycled obsolete file rather than a new one.
    pub table_files_reused: u64,
    /// Times the open tables' mapped pages were released because reads had mapped more than
    /// `DbOptions::mapped_read_bytes_max` of them.
    pub mapped_read_releases: u64,
    /// Bytes of all live memtables now: what the write-buffer budget
    /// (`DbOptions::write_buffer_bytes_max`) bounds.
    pub write_buffer_bytes: u64,
}

/// The compaction jobs that wrote into one level since open, over all trees (module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelCompactionStats {
    /// Jobs that rewrote files into this level.
    pub compactions: u64,
    /// Jobs that moved a file into this level without rewriting it.
    pub trivial_moves: u64,
    /// Bytes of the input SSTables the rewriting jobs read, from every level they took.
    pub bytes_read: u64,
    /// Bytes of the SSTables they wrote into this level.
    pub bytes_written: u64,
    /// Time those jobs took (trivial moves included), summed over compaction threads.
    pub busy: Duration,
}

/// One tree's size and shape, for DescribeTable-style reporting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Estimated live entries (module docs).
    pub entries_estimate: u64,
    /// Estimated bytes of live data: SSTable and memtable bytes scaled by the live share.
    pub live_bytes_estimate: u64,
    /// SSTables per level.
    pub level_files: Vec<usize>,
    /// Bytes of SSTables per level.
    pub level_bytes: Vec<u64>,
    /// The size at which the tree's active memtable is frozen now: it follows the tree's
    /// write rate (`DbOptions::memtable_size_bytes_min` up to `memtable_size_bytes`).
    pub memtable_target_bytes: u64,
}

/// The running counters behind [`DbStats`]; updated lock-free by writers and background work.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) user_bytes_written: AtomicU64,
    pub(crate) flush_bytes_written: AtomicU64,
    pub(crate) compaction_entries_filtered: AtomicU64,
    pub(crate) write_stalls: AtomicU64,
    pub(crate) stall_nanos_total: AtomicU64,
    pub(crate) stall_nanos_longest: AtomicU64,
    /// Per output level: [`LevelCompactionStats`]'s counters. The compaction totals of
    /// [`DbStats`] are their sums, so the two cannot disagree.
    pub(crate) levels: [LevelCounters; LEVELS],
}

/// The running counters of one level's [`LevelCompactionStats`].
#[derive(Debug, Default)]
pub(crate) struct LevelCounters {
    compactions: AtomicU64,
    trivial_moves: AtomicU64,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
    busy_nanos: AtomicU64,
}

/// One installed compaction job, as [`Counters::record_compaction`] counts it.
pub(crate) struct CompactionRecord {
    pub(crate) output_level: usize,
    pub(crate) trivial_move: bool,
    pub(crate) input_bytes: u64,
    pub(crate) output_bytes: u64,
    pub(crate) filtered_entries: u64,
    pub(crate) busy: Duration,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, amount: u64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }

    /// Records one write slowed down by `delay`.
    pub(crate) fn record_stall(&self, delay: Duration) {
        let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        self.write_stalls.fetch_add(1, Ordering::Relaxed);
        self.stall_nanos_total.fetch_add(nanos, Ordering::Relaxed);
        self.stall_nanos_longest.fetch_max(nanos, Ordering::Relaxed);
    }

    /// Counts one installed job in its output level's counters. A trivial move reads and
    /// writes nothing; its time still counts (a manifest install).
    pub(crate) fn record_compaction(&self, job: &CompactionRecord) {
        debug_assert!(job.output_level < LEVELS);
        let level = &self.levels[job.output_level.min(LEVELS - 1)];
        let nanos = u64::try_from(job.busy.as_nanos()).unwrap_or(u64::MAX);
        Self::add(&level.busy_nanos, nanos);
        if job.trivial_move {
            Self::add(&level.trivial_moves, 1);
            return;
        }
        Self::add(&level.compactions, 1);
        Self::add(&level.bytes_read, job.input_bytes);
        Self::add(&level.bytes_written, job.output_bytes);
        Self::add(&self.compaction_entries_filtered, job.filtered_entries);
    }

    /// The counters as [`DbStats`] (shape fields left empty for the caller).
    pub(crate) fn snapshot(&self) -> DbStats {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let user = load(&self.user_bytes_written);
        let flushed = load(&self.flush_bytes_written);
        let levels: Vec<LevelCompactionStats> = self
            .levels
            .iter()
            .map(|level| LevelCompactionStats {
                compactions: load(&level.compactions),
                trivial_moves: load(&level.trivial_moves),
                bytes_read: load(&level.bytes_read),
                bytes_written: load(&level.bytes_written),
                busy: Duration::from_nanos(load(&level.busy_nanos)),
            })
            .collect();
        let sum = |field: fn(&LevelCompactionStats) -> u64| {
            levels.iter().map(field).fold(0u64, u64::saturating_add)
        };
        let compacted = sum(|level| level.bytes_written);
        DbStats {
            user_bytes_written: user,
            flush_bytes_written: flushed,
            compaction_bytes_read: sum(|level| level.bytes_read),
            compaction_bytes_written: compacted,
            write_amplification: write_amplification(flushed.saturating_add(compacted), user),
            compactions: sum(|level| level.compactions),
            trivial_moves: sum(|level| level.trivial_moves),
            compaction_levels: levels,
            compaction_entries_filtered: load(&self.compaction_entries_filtered),
            write_stalls: load(&self.write_stalls),
            stall_time_total: Duration::from_nanos(load(&self.stall_nanos_total)),
            stall_time_longest: Duration::from_nanos(load(&self.stall_nanos_longest)),
            ..DbStats::default()
        }
    }
}

fn write_amplification(sst_bytes: u64, user_bytes: u64) -> f64 {
    if user_bytes == 0 {
        0.0
    } else {
        sst_bytes as f64 / user_bytes as f64
    }
}

/// Per-level file counts and bytes of one tree, `LEVELS` entries each.
pub(crate) fn level_shape(tree: &TreeVersion) -> (Vec<usize>, Vec<u64>) {
    let mut files = vec![0usize; LEVELS];
    let mut bytes = vec![0u64; LEVELS];
    for (level, level_files) in tree.levels.iter().enumerate().take(LEVELS) {
        files[level] = level_files.len();
        bytes[level] = tree.level_size_bytes(level);
    }
    (files, bytes)
}

/// The estimates for one tree (module docs).
pub(crate) fn tree_stats(tree: &TreeVersion, memtables: Option<&TreeMemtables>) -> TreeStats {
    let (level_files, level_bytes) = level_shape(tree);
    let mut entries = 0u64;
    let mut tombstones = 0u64;
    let memtable_target_bytes = memtables.map_or(0, |mems| mems.target_bytes as u64);
    let mut stored_bytes = level_bytes
        .iter()
        .fold(0u64, |sum, b| sum.saturating_add(*b));
    for file in tree.files() {
        entries = entries.saturating_add(file.entries);
        tombstones = tombstones.saturating_add(file.tombstones);
    }
    if let Some(mems) = memtables {
        for memtable in mems.newest_first() {
            entries = entries.saturating_add(memtable.entry_count());
            stored_bytes = stored_bytes.saturating_add(memtable.size_bytes() as u64);
        }
    }
    let entries_estimate = entries.saturating_sub(tombstones.saturating_mul(2));
    let live_bytes_estimate = if entries == 0 {
        0
    } else {
        ((stored_bytes as u128) * (entries_estimate as u128) / (entries as u128)) as u64
    };
    TreeStats {
        entries_estimate,
        live_bytes_estimate,
        level_files,
        level_bytes,
        memtable_target_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::FileMeta;
    use shoal_compaction::key::{encode, EntryKind};
    use std::sync::Arc;

    fn file(number: u64, size_bytes: u64, entries: u64, tombstones: u64) -> Arc<FileMeta> {
        Arc::new(FileMeta {
            number,
            size_bytes,
            smallest_key: encode(b"a", 2, EntryKind::Put),
            largest_key: encode(b"z", 1, EntryKind::Put),
            entries,
            tombstones,
            seq_min: 1,
            seq_max: 2,
        })
    }

    #[test]
    fn tree_estimates_discount_tombstones() {
        let mut tree = TreeVersion::new("t".into());
        tree.levels[0].push(file(1, 1000, 10, 2));
        tree.levels[6].push(file(2, 9000, 90, 0));
        let stats = tree_stats(&tree, None);
        assert_eq!(stats.level_files, vec![1, 0, 0, 0, 0, 0, 1]);
        assert_eq!(stats.level_bytes[6], 9000);
        // 100 entries, 2 tombstones each hiding one put: 96 live.
        assert_eq!(stats.entries_estimate, 96);
        assert_eq!(stats.live_bytes_estimate, 9600);
    }

    #[test]
    fn write_amplification_and_stalls() {
        let counters = Counters::default();
        assert_eq!(counters.snapshot().write_amplification, 0.0);
        Counters::add(&counters.user_bytes_written, 100);
        Counters::add(&counters.flush_bytes_written, 120);
        for (output_level, output_bytes) in [(4, 100), (6, 80)] {
            counters.record_compaction(&CompactionRecord {
                output_level,
                trivial_move: false,
                input_bytes: 2 * output_bytes,
                output_bytes,
                filtered_entries: 0,
                busy: Duration::from_millis(3),
            });
        }
        counters.record_stall(Duration::from_millis(5));
        counters.record_stall(Duration::from_millis(2));
        let stats = counters.snapshot();
        assert_eq!(stats.write_amplification, 3.0);
        assert_eq!(stats.compaction_bytes_written, 180);
        assert_eq!(stats.compaction_bytes_read, 360);
        assert_eq!(stats.compactions, 2);
        assert_eq!(stats.compaction_levels[4].busy, Duration::from_millis(3));
        assert_eq!(stats.write_stalls, 2);
        assert_eq!(stats.stall_time_total, Duration::from_millis(7));
        assert_eq!(stats.stall_time_longest, Duration::from_millis(5));
    }
}
