//! How a database is opened: [`DbOptions`], and the [`CompactionFilter`] hook.

use std::sync::Arc;

use shoal_compaction::PolicyOptions;
use shoal_wal::Durability;

use crate::sstable::PrefixFn;
use crate::version::TreeId;

/// How a point read reads the one data block it needs from a table file
/// ([`DbOptions::point_reads`]). Only files whose bytes are a memory mapping
/// (`shoal_vfs::ReadableFile::is_mapping`, real files) are read by copy: the in-memory and
/// simulated file systems hold their bytes on the heap, where a copy is pure cost.
///
/// Why the choice: a block read in place leaves its page, with the 64 KiB the kernel maps
/// around it, in the process's resident memory until its table closes (or
/// `mapped_read_bytes_max` releases it), and a write load that reads each old item (index
/// maintenance) touches blocks all over the tables; a copy (`pread(2)`) leaves nothing, but
/// costs a system call per block, about 1 µs (`cargo bench -p shoal-engine --bench storage
/// -- point_get`: 2.2 µs a read against 1.2), 7% more server CPU per GetItem
/// (docs/PERFORMANCE.md, Memory). Hence the default: copies for writes' reads only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PointReads {
    /// Every point read copies its block into a buffer of the read
    /// (`shoal_vfs::ReadableFile::read_at`): no table page stays resident for point reads.
    Copied,
    /// Reads of the value a write replaces ([`Db::get_replaced_with`](crate::Db::get_replaced_with))
    /// copy their block, other point reads read it in place: a write's read is not repeated
    /// (later reads find the new value in a memtable), so keeping its page resident only
    /// costs memory, while a read load keeps its working set mapped and pays no system call.
    #[default]
    CopiedForWrites,
    /// Every point read reads its block in place where the file is mapped.
    Mapped,
}

/// Lets compaction drop entries that are no longer wanted, such as stream records past their
/// retention period ([`DbOptions::compaction_filter`]).
///
/// **Meant for trees whose keys are written once and never overwritten or deleted**, like
/// stream records (`WriteBatch::put_sequenced` keys). Compaction sees only the versions in
/// its input files, so for other keys the version the filter is asked about may already be
/// hidden by a newer one elsewhere, and the filter's decision then changes nothing a reader
/// sees. Whatever the tree, dropping can never expose an older version, because of when the
/// filter is asked:
///
/// - only in *bottommost* compactions, where no level below the output holds any key of
///   the inputs (so no older version lies below), and never on a trivial move, which
///   rewrites nothing ([`Db::compact_tree`](crate::Db::compact_tree) rewrites a whole tree
///   into its last level, so the filter runs over all of it);
/// - only about the *newest* version of each user key among the inputs, and only if it is a
///   put: never about tombstones or older versions;
/// - when it answers true, every version of that key in the inputs is dropped (the older
///   ones would otherwise become the newest).
///
/// **Snapshots are not protected** from it, unlike from the rest of compaction's garbage
/// collection: a reader, at a snapshot or not, may find a filtered entry gone at any moment
/// once the filter has said so, as if it had been deleted then. Holding entries back for
/// snapshots would let any steady read load stop the filter for good, since every query
/// registers a snapshot that is newer than old records; and a snapshot registered while a
/// compaction runs could not be protected without abandoning the compaction. So a filter
/// must only drop what no reader needs any more: DynamoDB readers treat a stream record
/// past its retention as trimmed whenever they find it gone.
///
/// It is called from compactions (on the compaction threads, or the thread of
/// `compact_until_idle` or `compact_tree`), once per candidate entry: it should be quick, and
/// must not write to the database or wait for its compactions.
pub trait CompactionFilter: Send + Sync + std::fmt::Debug {
    /// Whether compaction should drop the put of `value` under `user_key` in `tree`.
    fn drop_entry(&self, tree: TreeId, user_key: &[u8], value: &[u8]) -> bool;
}

/// Keeps a tree's history for point-in-time reads ([`DbOptions::version_retention`]).
///
/// For a tree with a floor, compaction keeps every version newer than the floor and the
/// newest at or below it (`shoal_compaction::gc`), so a snapshot at any sequence number from
/// the floor up ([`Db::snapshot_at`](crate::Db::snapshot_at)) reads what that number saw.
///
/// A compaction asks once, before it reads the live snapshots: a caller that registers
/// `snapshot_at(s)` and then checks that `s` is still at or above the floor is protected
/// either way (a compaction that asked earlier got a floor at most as high; one that asks
/// later sees the snapshot). Floors should only rise. Called on compaction threads: quick,
/// no writes, no waiting on the database.
pub trait VersionRetention: Send + Sync + std::fmt::Debug {
    /// The floor of `tree`, or `None` to keep only what live snapshots need.
    fn floor(&self, tree: TreeId) -> Option<u64>;
}

/// How a database is opened.
#[derive(Clone)]
pub struct DbOptions {
    pub durability: Durability,
    /// The largest a tree's memtable grows to before it is frozen and flushed. Memtables
    /// start at `memtable_size_bytes_min` and grow toward this while they fill quickly
    /// (`write_buffer`); never past half of `write_buffer_bytes_max`, so a full memtable and
    /// the next one fit the budget together. Set both to the same size for fixed-size
    /// memtables (benches that measure one size).
    pub memtable_size_bytes: usize,
    /// The size a tree's memtables start at and shrink back to when writes are few (at most
    /// the effective `memtable_size_bytes`).
    pub memtable_size_bytes_min: usize,
    /// The write-buffer budget: all memtables of the database together (every tree's
    /// active one, the frozen ones waiting for flush, and flushed ones readers still hold),
    /// like RocksDB's write buffer manager. At the budget, a write freezes the largest
    /// memtable if nothing waits for flush yet, and waits for the flusher (the write stall
    /// of too many frozen memtables) while frozen ones are pending.
    pub write_buffer_bytes_max: usize,
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
    /// Compaction threads while writers are being slowed for the backlog (at least
    /// `compaction_threads`, at most 16; ignored when `compaction_threads` is 0). The threads
    /// beyond `compaction_threads` claim jobs only while some tree's write rate is limited
    /// (`compact`'s back-pressure): then the writers they would take a core from are held
    /// back anyway, and draining the backlog sooner is what lets them go. With one thread
    /// on two cores, a writer outgrowing compaction at 10 GB was slowed for 41 s of 88;
    /// with the second joining under back-pressure, for 20 s of 66 (docs/PERFORMANCE.md,
    /// sustained ingest at 10 GB).
    pub compaction_threads_backlog: usize,
    /// Write SSTables (flush and compaction output) around the OS page cache where the file
    /// system allows (`shoal_vfs::FileSystem::create_direct`, Linux `O_DIRECT`). Filling fresh
    /// page-cache pages was half the flush and compaction threads' CPU on the VM this is
    /// measured on, and bursts of writes take less CPU with it; but a new table's blocks
    /// are then read from the device the first time (reads stay memory-mapped), and
    /// compaction, which reads every table it merges, waits on that: the compaction bench's
    /// overwrite workload ran 27% slower. Off by default until compaction reads its inputs
    /// directly too (`cargo bench -p shoal-engine --bench compaction`, at f912d99).
    pub direct_table_writes: bool,
    /// About the most bytes of mapped SSTable pages that reads leave in the process's
    /// resident memory, all tables together: past it, every table's data blocks are released
    /// (they stay in the OS page cache; the next read maps them back without I/O). Counted
    /// in 64 KiB windows, what the kernel maps around each page a read faults in.
    /// `usize::MAX` keeps every page a read touched until its table is closed.
    pub mapped_read_bytes_max: usize,
    /// How point reads ([`Db::get`](crate::Db::get),
    /// [`Db::get_replaced_with`](crate::Db::get_replaced_with)) read a table's data block:
    /// copied out of the file or in place in its mapping ([`PointReads`]). Iterators
    /// (queries, scans, compaction) read through the mapping whatever this says.
    pub point_reads: PointReads,
    /// Drops entries during compaction ([`CompactionFilter`], whose docs say when it is
    /// asked and why only for write-once trees). `None` (the default) keeps everything.
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
    /// Per-tree history kept for point-in-time reads ([`VersionRetention`]). `None` (the
    /// default) keeps only what live snapshots need.
    pub version_retention: Option<Arc<dyn VersionRetention>>,
}

impl std::fmt::Debug for DbOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbOptions")
            .field("durability", &self.durability)
            .field("memtable_size_bytes", &self.memtable_size_bytes)
            .field("memtable_size_bytes_min", &self.memtable_size_bytes_min)
            .field("write_buffer_bytes_max", &self.write_buffer_bytes_max)
            .field("wal_live_bytes_max", &self.wal_live_bytes_max)
            .field("compaction", &self.compaction)
            .field("compaction_threads", &self.compaction_threads)
            .field(
                "compaction_threads_backlog",
                &self.compaction_threads_backlog,
            )
            .field("direct_table_writes", &self.direct_table_writes)
            .field("mapped_read_bytes_max", &self.mapped_read_bytes_max)
            .field("point_reads", &self.point_reads)
            .field("compaction_filter", &self.compaction_filter)
            .field("version_retention", &self.version_retention)
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
            // Small for idle and lightly written trees; a tree that fills one in under a
            // second doubles it, up to 4 MiB under the default budget.
            memtable_size_bytes_min: 2 << 20,
            // An embedded database's footprint (docs/DESIGN.md §3): a 256-connection PutItem
            // load ran as fast with 8 MiB as with 32 and held 24 MiB less
            // (docs/PERFORMANCE.md, Memory).
            write_buffer_bytes_max: 8 << 20,
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
            // The other core joins while writers are slowed (they have given it up then).
            compaction_threads_backlog: 2,
            direct_table_writes: false,
            // No bound: a bound below a read load's working set makes every read after a
            // release fault its pages back (GetItem over 20,000 items cost 23–25 µs of server
            // CPU against 19–20 with an 8 MiB bound, docs/PERFORMANCE.md, Memory). Set it
            // where memory matters more than read speed.
            mapped_read_bytes_max: usize::MAX,
            point_reads: PointReads::default(),
            compaction_filter: None,
            version_retention: None,
        }
    }
}
