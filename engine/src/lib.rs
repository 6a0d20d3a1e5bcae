//! Shoal's storage engine: an LSM tree of named *trees* (ordered byte-key maps) sharing one
//! write-ahead log, with atomic write batches across trees, snapshots, and forward and reverse
//! range reads. It knows nothing of items, tables or JSON: `shoal-tables` builds DynamoDB's
//! tables on it, and it is usable on its own.
//!
//! ```
//! use std::ops::Bound;
//! use shoal_engine::{Db, DbOptions, Direction, WriteBatch};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! // Open (or recover) a database in a directory; the default durability acknowledges a
//! // write once its WAL record is fdatasynced.
//! let db = Db::open(dir.path(), DbOptions::default())?;
//! let users = db.create_tree("users")?;
//! let by_email = db.create_tree("users_by_email")?;
//!
//! // One batch across two trees is one WAL record: after a crash both writes are there or
//! // neither is.
//! let mut batch = WriteBatch::new();
//! batch.put(users, b"u1", b"Ada")?;
//! batch.put(by_email, b"ada@example.com", b"u1")?;
//! db.write(batch)?;
//!
//! // A snapshot reads the database as it was when it was taken.
//! let snapshot = db.snapshot();
//! let mut batch = WriteBatch::new();
//! batch.put(users, b"u2", b"Grace")?;
//! db.write(batch)?;
//! assert_eq!(db.get(users, b"u2", Some(&snapshot))?, None);
//! assert_eq!(db.get(users, b"u2", None)?, Some(b"Grace".to_vec()));
//!
//! // A range read: every key of `users` from "u1" on, newest first.
//! let mut cursor = db.iter(users, Bound::Included(&b"u1"[..]), Bound::Unbounded,
//!                          Direction::Reverse, None)?;
//! let mut keys = Vec::new();
//! while cursor.advance()? {
//!     keys.push(cursor.key().to_vec());
//! }
//! assert_eq!(keys, [b"u2".to_vec(), b"u1".to_vec()]);
//! # Ok(())
//! # }
//! ```
//!
//! `examples/kv.rs` is the same as a program (`cargo run -p shoal-engine --example kv`).
//!
//! The modules:
//! - [`batch`]: write batches, the unit of atomicity and the WAL payload.
//! - [`memtable`]: a tree's newest writes in memory; `skiplist`: its ordered index, whose
//!   nodes hold the entries; `arena`: where the nodes live; `buffer_pool`: idle buffers
//!   (arena chunks, table-build buffers) kept mapped for reuse.
//! - [`sstable`]: immutable sorted files.
//! - [`version`], [`manifest`]: which files make up each tree, durably.
//! - [`superversion`]: one consistent view of memtables + files for readers.
//! - [`db`]: open/recovery, the write path, flushes; [`read`]: range cursors.
//! - `shared`: the state the handle, the flusher and the compaction threads share.
//! - `compact`: picking the next compaction job and the threads that run jobs;
//!   `compact_schedule`: the running jobs' claims; `compact_job`: running one job;
//!   `table_files`: opening SSTable files and removing replaced ones once unread; `pacer`:
//!   holding writers to the rate compaction's backlog allows; [`stats`]: what the database
//!   reports.

mod arena;
pub mod batch;
mod buffer_pool;
pub mod checkpoint;
mod compact;
mod compact_job;
mod compact_schedule;
pub mod corruption;
pub mod db;
pub mod error;
pub mod manifest;
mod mapped_reads;
pub mod memtable;
mod options;
mod out_of_space;
mod pacer;
pub mod read;
mod shared;
mod skiplist;
pub mod sstable;
pub mod stats;
pub mod superversion;
mod table_files;
pub mod version;
mod write_buffer;

pub use batch::WriteBatch;
pub use checkpoint::{LinkedFile, SourceFile};
// DbOptions::compaction is a PolicyOptions: embedders need not depend on the compaction crate.
pub use db::{CompactionFilter, Db, DbOptions, PointReads, Snapshot, VersionRetention};
pub use error::DbError;
pub use read::{DbIterator, Direction};
pub use shoal_compaction::key::EntryKind;
pub use shoal_compaction::{PolicyKind, PolicyOptions};
pub use stats::{DbStats, LevelCompactionStats, TreeStats};
pub use version::TreeId;
// DbOptions::durability is the WAL's: embedders need not depend on the WAL crate.
pub use shoal_wal::Durability;
