//! Compaction for Shoal's LSM trees: which SSTables to merge and how to merge them.
//!
//! This crate is pure logic. It owns the *internal key* format shared by memtables and
//! SSTables ([`key`]), the positioned iterator contract every source implements
//! ([`iter::InternalIterator`]) and the k-way merge over such sources. It knows nothing
//! about items, tables or files beyond what the engine hands it.
//!
//! - [`merge`]: [`MergingIterator`], every version from many sources in one order.
//! - [`concat`]: [`ConcatenatingIterator`], the disjoint files of one level as one source.
//! - [`user_iter`]: [`UserIterator`], the reader's view at a snapshot (newest visible value
//!   per user key, deletes hidden), both directions.
//! - [`gc`]: [`CompactionIterator`], what a compaction writes given the live snapshots.
//! - [`output`]: [`OutputSplitter`], where output files are cut (item-collection boundaries).
//! - [`policy`]: [`pick`], which files to compact next (leveled or size-tiered), and
//!   [`write_rate_limit`], the back-pressure on writers.
//! - [`vec_iter`]: [`VecIterator`], an in-memory source for tests.

pub mod concat;
pub mod gc;
pub mod iter;
pub mod key;
pub mod merge;
pub mod output;
pub mod policy;
pub mod user_iter;
pub mod vec_iter;

pub use concat::{ConcatenatingIterator, FileBounds};
pub use gc::{CompactionIterator, GcStats};
pub use iter::{InternalIterator, IterError};
pub use key::{compare_internal, EntryKind, InternalKey, SEQ_MAX};
pub use merge::MergingIterator;
pub use output::OutputSplitter;
pub use policy::{
    level_targets, pending_bytes, pick, write_rate_limit, FileView, Job, LevelTargets, LevelsView,
    PolicyKind, PolicyOptions, ViewError, SLOWDOWN_RATE_FLOOR_BYTES_PER_SEC,
};
pub use user_iter::UserIterator;
pub use vec_iter::VecIterator;
