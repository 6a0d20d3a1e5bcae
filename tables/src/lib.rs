//! DynamoDB's tables on Shoal's storage engine: tables with local and global secondary
//! indexes, item collections, capacity and the operations on them, stored in the LSM trees of
//! [`shoal_engine`].
//!
//! - [`database::Database`]: the public entry point, one method per DynamoDB operation, and
//!   [`Database::execute`] for an operation by name with DynamoDB's JSON request.
//! - [`api`]: the operations' request and response types (DynamoDB's JSON shapes).
//! - [`table`]: the catalog, physical key layout, stored item format, index entries, item
//!   collections, locks, and the operations' implementations.
//! - [`metering`]: capacity units consumed, as DynamoDB reports them.

pub mod api;
pub mod database;
mod dispatch;
pub mod metering;
pub mod table;
pub mod transfer;

pub use database::{Clock, Database, Options};
pub use dispatch::{never_waits, STREAMS_OPERATIONS, SUPPORTED_OPERATIONS};
pub use shoal_wal::Durability;
pub use table::export_items::ExportProgress;
pub use table::lag::Lag;
pub use table::stream::{EventName, StreamRecord};
pub use table::streams_api::{StreamReader, StreamStart};
