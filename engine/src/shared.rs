//! The state every thread of an open database shares: the handle's writers and readers, the
//! WAL's applier, the flusher and the compaction threads. [`Db`](crate::Db) owns it; the
//! background jobs are handed it, so they need nothing of the handle itself.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};
use shoal_compaction::PolicyOptions;
use shoal_vfs::Fs;

use crate::compact_schedule::Scheduler;
use crate::manifest::Manifest;
use crate::options::DbOptions;
use crate::out_of_space::OutOfSpace;
use crate::pacer::WritePacer;
use crate::stats::Counters;
use crate::superversion::SuperVersion;
use crate::table_files::FileRegistry;
use crate::write_buffer::WriteBuffer;

/// State shared by the database handle, the WAL applier, the flusher and compaction threads.
pub(crate) struct Shared {
    pub(crate) fs: Fs,
    pub(crate) dir: PathBuf,
    pub(crate) options: DbOptions,
    /// The current superversion; replaced whole under the write lock.
    pub(crate) superversion: RwLock<Arc<SuperVersion>>,
    /// Highest sequence number whose batch is fully applied: reads see everything <= this.
    pub(crate) visible_seq: AtomicU64,
    /// The manifest; its lock also serialises every version change.
    pub(crate) manifest: Mutex<Manifest>,
    pub(crate) next_file_number: AtomicU64,
    /// Live snapshots: sequence number → how many handles hold it.
    pub(crate) snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Set when background work failed; writes are refused from then on.
    pub(crate) background_error: Mutex<Option<String>>,
    /// Work that failed for want of disk space and is being retried (`out_of_space.rs`).
    pub(crate) out_of_space: OutOfSpace,
    /// Open SSTables' deletion marks (files go when their last reader does).
    pub(crate) files: FileRegistry,
    pub(crate) counters: Counters,
    pub(crate) compaction: Scheduler,
    /// `options.compaction` as the engine applies it (`compact::effective_policy`), derived
    /// once at open.
    pub(crate) policy: PolicyOptions,
    /// Memtable sizes and the budget of all memtables together.
    pub(crate) write_buffer: WriteBuffer,
    /// Paces writes while the compaction backlog is over a threshold.
    pub(crate) pacer: WritePacer,
    pub(crate) flush_wakeup: Condvar,
    pub(crate) flush_state: Mutex<FlushState>,
    /// Held for a whole flush: a tree's memtables must reach SSTables one at a time, in
    /// order, or two flushers could write the same memtable twice.
    pub(crate) flush_running: Mutex<()>,
    pub(crate) shutting_down: AtomicBool,
}

#[derive(Default)]
pub(crate) struct FlushState {
    /// Bumped whenever there may be flush work; the flusher sleeps until it changes.
    pub(crate) requests: u64,
    /// Bumped whenever a flush finished; writers waiting for room sleep on it.
    pub(crate) completed: u64,
}

impl Shared {
    pub(crate) fn request_flush(&self) {
        let mut state = self.flush_state.lock();
        state.requests += 1;
        self.flush_wakeup.notify_all();
    }

    /// Sleeps up to `wait` before a retry of work that ran out of space; false if the
    /// database is shutting down meanwhile (the flusher's wake-ups end the sleep early only
    /// then, so a stream of flush requests cannot turn the back-off into a busy loop).
    pub(crate) fn sleep_before_retry(&self, wait: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + wait;
        let mut state = self.flush_state.lock();
        while !self
            .shutting_down
            .load(std::sync::atomic::Ordering::Acquire)
        {
            if self
                .flush_wakeup
                .wait_until(&mut state, deadline)
                .timed_out()
            {
                return true;
            }
        }
        false
    }

    pub(crate) fn set_background_error(&self, reason: String) {
        tracing::error!(%reason, "background work failed; refusing further writes");
        let mut error = self.background_error.lock();
        if error.is_none() {
            *error = Some(reason);
        }
    }
}
