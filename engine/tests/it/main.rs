//! The storage engine's integration tests, as one test binary: the crate and its
//! dependencies are linked once, not once per file. Each module is one concern (its docs say
//! which); `sstable_support` is shared.

mod sstable_support;

mod checkpoint;
mod compaction_engine;
mod compaction_filter;
mod deferred_sync;
mod direct_tables;
mod lsm_crash;
mod lsm_model;
mod lsm_poison;
mod lsm_wal_cap;
mod manifest_codec;
mod manifest_crash;
mod manifest_realfs;
mod mapped_reads;
mod no_space;
mod recovery_flush;
mod retention;
mod seq_floor_crash;
mod sequenced_crash;
mod sequenced_puts;
mod sstable_corruption;
mod sstable_table;
mod write_buffer;

use std::ops::Bound;

use shoal_engine::{Db, Direction, TreeId};

/// Every entry of `tree` now, in key order.
pub fn scan_all(db: &Db, tree: TreeId) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.scan(
        tree,
        Bound::Unbounded,
        Bound::Unbounded,
        Direction::Forward,
        None,
        usize::MAX,
    )
    .unwrap()
}
