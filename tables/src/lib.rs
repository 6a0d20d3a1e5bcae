//! DynamoDB's tables on Shoal's storage engine: tables with local and global secondary
//! indexes, item collections, capacity and the operations on them, stored in the LSM trees of
//! [`shoal_engine`].
//!
//! - [`database::Database`]: the public entry point, one method per DynamoDB operation, and
//!   [`Database::execute`] for an operation by name with DynamoDB's JSON request.
//! - [`api`]: the operations' request and response types (DynamoDB's JSON shapes).
//! - [`core`]: what every table has and every feature builds on: the catalog, the physical
//!   key layout, the stored item format, index entries, item collections, locks, statistics,
//!   the write pipeline and the consistency check.
//! - The operations, a folder each: [`items`] (single items, batches, transactions),
//!   [`query_scan`], [`control`] (tables, UpdateTable, index backfills, settings).
//! - The features, a folder each: [`streams`], [`ttl`], [`backups`] (with point-in-time
//!   recovery), [`transfer`] (import and export), [`partiql`], [`capacity`] (metering,
//!   billing, throttling), [`emulation`] (GSI lag, stale reads, transaction conflicts,
//!   transient statuses), [`tags`] and [`replication`] (global tables); [`upkeep`] runs
//!   their work on a timer.

pub mod api;
pub mod backups;
pub mod capacity;
pub mod control;
pub mod core;
pub mod database;
mod dispatch;
pub mod emulation;
pub mod insights;
pub mod items;
pub mod options;
pub mod partiql;
pub mod policies;
pub mod query_scan;
pub mod replication;
pub mod streams;
pub mod tags;
pub mod transfer;
pub mod ttl;
pub mod upkeep;

pub use backups::BackupOptions;
pub use core::clock::Clock;
pub use database::Database;
pub use dispatch::{never_waits, STREAMS_OPERATIONS, SUPPORTED_OPERATIONS};
pub use emulation::lag::Lag;
pub use emulation::EmulationOptions;
pub use options::{LimitOptions, Options, StorageOptions};
pub use replication::status::ReplicationLink;
pub use replication::ReplicationOptions;
// StorageOptions::point_reads is the engine's: embedders need not depend on the engine.
pub use shoal_engine::PointReads;
// What `Database::lsm().stats()` reports per level, for a server rendering its metrics.
pub use shoal_engine::LevelCompactionStats;
pub use shoal_wal::Durability;
pub use streams::api::{StreamReader, StreamStart};
pub use streams::record::{EventName, StreamRecord};
pub use streams::StreamOptions;
pub use transfer::export_items::ExportProgress;
pub use transfer::TransferOptions;
pub use ttl::TimeToLiveOptions;
