//! The LSM tree: memtables, SSTables, versions and the manifest, sharing one WAL.
//!
//! - [`batch`]: write batches, the unit of atomicity and the WAL payload.
//! - [`memtable`]: the in-memory skiplist of a tree's newest writes.
//! - [`sstable`]: immutable sorted files.
//! - [`version`], [`manifest`]: which files make up each tree, durably.
//! - [`superversion`]: one consistent view of memtables + files for readers.
//! - [`db`]: open/recovery, the write path, flushes; [`read`]: range cursors.

pub mod batch;
pub mod db;
pub mod error;
pub mod manifest;
pub mod memtable;
pub mod read;
pub mod sstable;
pub mod superversion;
pub mod version;

pub use batch::WriteBatch;
pub use db::{Db, DbOptions, Snapshot};
pub use error::DbError;
pub use read::{DbIterator, Direction};
pub use version::TreeId;
