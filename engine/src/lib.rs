//! Shoal's datastore engine: the LSM tree that tables and indexes are stored in.

pub mod lsm;

pub use wal::Durability;
