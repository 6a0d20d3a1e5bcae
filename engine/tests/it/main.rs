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
mod no_space;
mod recovery_flush;
mod retention;
mod seq_floor_crash;
mod sequenced_crash;
mod sequenced_puts;
mod sstable_corruption;
mod sstable_table;
mod write_buffer;
