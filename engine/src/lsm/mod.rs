//! The LSM tree: memtables, SSTables, versions and the manifest, sharing one WAL.

pub mod sstable;
