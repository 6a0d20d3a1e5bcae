//! Shoal's datastore engine: DynamoDB tables with local and global secondary indexes, on
//! the LSM tree they are stored in.
//!
//! - [`database::Database`]: the public entry point, one method per DynamoDB operation.
//! - [`api`]: the operations' request and response types (DynamoDB's JSON shapes).
//! - [`table`]: the catalog, physical key layout, stored item format, index entries, locks.
//! - [`lsm`]: the storage engine underneath (WAL, memtables, SSTables, manifest).

pub mod api;
pub mod database;
mod dispatch;
pub mod lsm;
pub mod metering;
pub mod table;

pub use database::{Database, Options};
pub use dispatch::{never_waits, SUPPORTED_OPERATIONS};
pub use wal::Durability;
