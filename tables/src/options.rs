//! [`Options`]: how a [`Database`](crate::Database) is opened, grouped by concern. Every group
//! has DynamoDB's (or DynamoDB Local's) behaviour as its default, so an embedded user sets
//! only what differs, for instance:
//!
//! ```
//! use shoal_tables::{Durability, Options, StorageOptions};
//! let options = Options {
//!     storage: StorageOptions {
//!         durability: Durability::None,
//!         ..StorageOptions::default()
//!     },
//!     ..Options::default()
//! };
//! # assert!(options.upkeep);
//! ```

use crate::replication::ReplicationOptions;
use std::sync::Arc;

use shoal_engine::{CompactionFilter, DbOptions, PointReads, VersionRetention};

use crate::backups::pitr_clock::PitrRetention;
use crate::backups::BackupOptions;
use crate::core::clock::Clock;
use crate::core::keys;
use crate::emulation::EmulationOptions;
use crate::streams::record::StreamRetention;
use crate::streams::StreamOptions;
use crate::transfer::TransferOptions;
use crate::ttl::TimeToLiveOptions;
use crate::Durability;

/// DynamoDB's item-collection cap: 10 GiB.
pub const ITEM_COLLECTION_SIZE_LIMIT_BYTES_DEFAULT: u64 = 10 << 30;

/// How a [`Database`](crate::Database) is opened.
#[derive(Debug, Clone)]
pub struct Options {
    /// How the data is kept: durability, memtables, log segments.
    pub storage: StorageOptions,
    /// DynamoDB's limits that can be changed.
    pub limits: LimitOptions,
    /// DynamoDB Streams: retention and shards.
    pub streams: StreamOptions,
    /// Time to Live: how often expired items are deleted.
    pub time_to_live: TimeToLiveOptions,
    /// Point-in-time recovery's window and granularity.
    pub backups: BackupOptions,
    /// Where exports go and imports come from.
    pub transfer: TransferOptions,
    /// Global tables: how long replication takes.
    pub replication: ReplicationOptions,
    /// DynamoDB behaviours a test can ask for: throttling, lags, transaction conflicts,
    /// transient statuses. All off by default, as in DynamoDB Local.
    pub emulation: EmulationOptions,
    /// What "now" is for time-dependent features (tests move it; the system clock by
    /// default).
    pub clock: Clock,
    /// Whether the upkeep thread runs (stream shard rollover and retention, Time to Live
    /// sweeps, the point-in-time clock). `shoal check` turns it off so a check changes
    /// nothing; [`Database::stream_upkeep`](crate::Database::stream_upkeep) and
    /// [`Database::expire_now`](crate::Database::expire_now) still work on demand.
    pub upkeep: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            storage: StorageOptions::default(),
            limits: LimitOptions::default(),
            streams: StreamOptions::default(),
            time_to_live: TimeToLiveOptions::default(),
            backups: BackupOptions::default(),
            transfer: TransferOptions::default(),
            replication: ReplicationOptions::default(),
            emulation: EmulationOptions::default(),
            clock: Clock::system(),
            upkeep: true,
        }
    }
}

/// How the data is kept.
#[derive(Debug, Clone)]
pub struct StorageOptions {
    /// When a write is acknowledged: after fsync (the default), at most every interval, or
    /// once in the OS page cache.
    pub durability: Durability,
    /// The largest a tree's memtable grows to before it is flushed
    /// (`DbOptions::memtable_size_bytes`).
    pub memtable_size_bytes: usize,
    /// The size memtables start at and shrink back to (`DbOptions::memtable_size_bytes_min`;
    /// at most `memtable_size_bytes`, so setting only that one gives fixed-size memtables).
    pub memtable_size_bytes_min: usize,
    /// All memtables together (`DbOptions::write_buffer_bytes_max`).
    pub write_buffer_bytes_max: usize,
    /// Table pages reads keep mapped (`DbOptions::mapped_read_bytes_max`).
    pub mapped_read_bytes_max: usize,
    /// How reads of one item (GetItem, and the old item a write reads) read table blocks:
    /// copied out of the file or in place in its mapping (`DbOptions::point_reads`).
    pub point_reads: PointReads,
    /// WAL segment size (smaller segments preallocate faster; tests use small ones).
    pub wal_segment_size_bytes: u64,
}

impl Default for StorageOptions {
    fn default() -> Self {
        let engine = DbOptions::default();
        StorageOptions {
            durability: Durability::Sync,
            memtable_size_bytes: engine.memtable_size_bytes,
            memtable_size_bytes_min: engine.memtable_size_bytes_min,
            write_buffer_bytes_max: engine.write_buffer_bytes_max,
            mapped_read_bytes_max: engine.mapped_read_bytes_max,
            point_reads: engine.point_reads,
            wal_segment_size_bytes: 64 << 20,
        }
    }
}

/// DynamoDB's limits that can be changed.
#[derive(Debug, Clone)]
pub struct LimitOptions {
    /// Cap on one item collection (base items + LSI entries) of a table with an LSI.
    pub item_collection_size_limit_bytes: u64,
}

impl Default for LimitOptions {
    fn default() -> Self {
        LimitOptions {
            item_collection_size_limit_bytes: ITEM_COLLECTION_SIZE_LIMIT_BYTES_DEFAULT,
        }
    }
}

impl Options {
    /// The storage engine's options, with the features' hooks into compaction.
    pub(crate) fn db_options(
        &self,
        retention: &Arc<StreamRetention>,
        pitr: &Arc<PitrRetention>,
    ) -> DbOptions {
        DbOptions {
            compaction_filter: Some(Arc::clone(retention) as Arc<dyn CompactionFilter>),
            version_retention: Some(Arc::clone(pitr) as Arc<dyn VersionRetention>),
            durability: self.storage.durability,
            memtable_size_bytes: self.storage.memtable_size_bytes,
            memtable_size_bytes_min: self.storage.memtable_size_bytes_min,
            write_buffer_bytes_max: self.storage.write_buffer_bytes_max,
            mapped_read_bytes_max: self.storage.mapped_read_bytes_max,
            point_reads: self.storage.point_reads,
            wal_segment_size_bytes: self.storage.wal_segment_size_bytes,
            bloom_prefix: keys::bloom_prefix,
            ..DbOptions::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_sizes_reach_the_engine() {
        let options = Options {
            storage: StorageOptions {
                mapped_read_bytes_max: 1 << 30,
                point_reads: PointReads::Copied,
                ..StorageOptions::default()
            },
            ..Options::default()
        };
        let retention = Arc::new(StreamRetention::new(0));
        let pitr = Arc::new(PitrRetention::default());
        let db = options.db_options(&retention, &pitr);
        assert_eq!(db.mapped_read_bytes_max, 1 << 30);
        assert_eq!(db.point_reads, PointReads::Copied);
        // The sizes not set stay the engine's.
        let engine = DbOptions::default();
        assert_eq!(db.write_buffer_bytes_max, engine.write_buffer_bytes_max);
        assert_eq!(
            StorageOptions::default().mapped_read_bytes_max,
            engine.mapped_read_bytes_max
        );
        assert_eq!(StorageOptions::default().point_reads, engine.point_reads);
        let default = Options::default().db_options(&retention, &pitr);
        assert_eq!(default.point_reads, engine.point_reads);
    }
}
