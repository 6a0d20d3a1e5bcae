//! The LSM tree: memtables, SSTables, versions and the manifest, sharing one WAL.
//!
//! - [`batch`]: write batches, the unit of atomicity and the WAL payload.
//! - [`memtable`]: a tree's newest writes in memory; `skiplist`: its ordered index, whose
//!   nodes hold the entries; `arena`: where the nodes live; `buffer_pool`: idle buffers
//!   (arena chunks, table-build buffers) kept mapped for reuse.
//! - [`sstable`]: immutable sorted files.
//! - [`version`], [`manifest`]: which files make up each tree, durably.
//! - [`superversion`]: one consistent view of memtables + files for readers.
//! - [`db`]: open/recovery, the write path, flushes; [`read`]: range cursors.
//! - `compact`, `compact_job`, `compact_files`: compaction scheduling, running one job, and
//!   removing replaced files once unread; `pacer`: holding writers to the rate compaction's
//!   backlog allows; [`stats`]: what the database reports.

mod arena;
pub mod batch;
mod buffer_pool;
mod compact;
mod compact_files;
mod compact_job;
pub mod db;
pub mod error;
pub mod manifest;
pub mod memtable;
mod pacer;
pub mod read;
mod skiplist;
pub mod sstable;
pub mod stats;
pub mod superversion;
pub mod version;

pub use batch::WriteBatch;
// DbOptions::compaction is a PolicyOptions: embedders need not depend on the compaction crate.
pub use compaction::key::EntryKind;
pub use compaction::{PolicyKind, PolicyOptions};
pub use db::{Db, DbOptions, Snapshot};
pub use error::DbError;
pub use read::{DbIterator, Direction};
pub use stats::{DbStats, TreeStats};
pub use version::TreeId;
