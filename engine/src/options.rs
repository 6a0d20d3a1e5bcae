//! How a database is opened: [`DbOptions`].

use shoal_compaction::PolicyOptions;
use shoal_wal::Durability;

use crate::sstable::PrefixFn;

/// How a database is opened.
#[derive(Clone)]
pub struct DbOptions {
    pub durability: Durability,
    /// A tree's active memtable is frozen and flushed past this size.
    pub memtable_size_bytes: usize,
    /// When the WAL's unreleased segments pass this, the trees pinning the oldest ones are
    /// flushed so the WAL can shrink. It also bounds replay at open, and sizes the pool of
    /// recycled segments ([`wal_recycled_segments_max`]).
    pub wal_live_bytes_max: u64,
    pub wal_segment_size_bytes: u64,
    /// Zero-fill new WAL segments up front so synced commits overwrite allocated blocks
    /// (cheaper fdatasync). Costs one segment-sized write per fresh segment.
    pub wal_preallocate: bool,
    /// Without per-commit syncs (durability `none`, `interval`), write WAL segments through a
    /// memory mapping instead of a `write(2)` per group (`shoal_wal::WalOptions::map_segments`).
    pub wal_map_segments: bool,
    /// Truncate the WAL at a corrupt record instead of refusing to open (loses what follows).
    pub truncate_wal_at_corruption: bool,
    /// The bloom-filter prefix of a user key (the item-collection prefix).
    pub bloom_prefix: PrefixFn,
    pub block_size_bytes: usize,
    /// Run flushes on a background thread (tests may turn this off and call `flush_all`).
    pub background_flush: bool,
    /// Compaction policy (leveled by default, or size-tiered) and its tuning.
    pub compaction: PolicyOptions,
    /// Background compaction threads (at most 16). 0 turns background compaction off: the
    /// caller runs `compact_until_idle`, and writers are never slowed for the backlog.
    pub compaction_threads: usize,
    /// Write SSTables (flush and compaction output) around the OS page cache where the file
    /// system allows (`shoal_vfs::FileSystem::create_direct`, Linux `O_DIRECT`). Filling fresh
    /// page-cache pages was half the flush and compaction threads' CPU on the VM this is
    /// measured on, and bursts of writes take less CPU with it; but a new table's blocks
    /// are then read from the device the first time (reads stay memory-mapped), and
    /// compaction, which reads every table it merges, waits on that: the compaction bench's
    /// overwrite workload ran 27% slower. Off by default until compaction reads its inputs
    /// directly too (docs/PERFORMANCE.md, ninth session).
    pub direct_table_writes: bool,
}

impl std::fmt::Debug for DbOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbOptions")
            .field("durability", &self.durability)
            .field("memtable_size_bytes", &self.memtable_size_bytes)
            .field("wal_live_bytes_max", &self.wal_live_bytes_max)
            .field("compaction", &self.compaction)
            .field("compaction_threads", &self.compaction_threads)
            .field("direct_table_writes", &self.direct_table_writes)
            .finish_non_exhaustive()
    }
}

fn whole_key(key: &[u8]) -> &[u8] {
    key
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            durability: Durability::Sync,
            memtable_size_bytes: 64 << 20,
            // Four segments: replay at open stays under a second, and the recycled pool
            // that covers it costs at most 256 MiB of disk.
            wal_live_bytes_max: 256 << 20,
            wal_segment_size_bytes: 64 << 20,
            wal_preallocate: true,
            wal_map_segments: true,
            truncate_wal_at_corruption: false,
            bloom_prefix: whole_key,
            block_size_bytes: 4096,
            background_flush: true,
            compaction: PolicyOptions::default(),
            // The target machine has two cores; one compacts while the other serves writes.
            compaction_threads: 1,
            direct_table_writes: false,
        }
    }
}
