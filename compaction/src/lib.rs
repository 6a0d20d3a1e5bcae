//! Compaction for Shoal's LSM trees: which SSTables to merge and how to merge them.
//!
//! This crate is pure logic. It owns the *internal key* format shared by memtables and
//! SSTables ([`key`]), the positioned iterator contract every source implements
//! ([`iter::InternalIterator`]) and the k-way merge over such sources. It knows nothing
//! about items, tables or files beyond what the engine hands it.

pub mod iter;
pub mod key;

pub use iter::{InternalIterator, IterError};
pub use key::{compare_internal, EntryKind, InternalKey, SEQ_MAX};
