//! Global tables, version 2019.11.21 (SPEC-3 §2): a table in one Region with replicas in
//! others, which copy each other's writes asynchronously.
//!
//! Shoal serves every Region from one database. A Region is the credential scope of the
//! request (`core::region`); a table every Region shares until it joins a global table is
//! kept in its Region from then on (catalog key `name@region`, `core::catalog::resolve`),
//! and each replica is a table of the same name in another Region, with its own trees,
//! indexes, stream and statistics.
//!
//! How a write travels (DESIGN.md §7, invariant 11):
//!
//! 1. The replication log. A write to a member stamps the item (`stamp`: time, then Region)
//!    and puts one queue entry per other member into the member's replication tree, in the
//!    write's own batch (`feature`; the tree's format is in `tree`). The queue is the
//!    table's change log for replication: like its stream, it holds exactly the committed
//!    writes, in commit order.
//! 2. The applied position. A member's bookkeeping of what it has applied is the queue
//!    itself: the replication thread (`worker`) applies an entry to its destination in ONE
//!    batch with the item's new stamp and the entry's deletion (`apply`). No crash can
//!    apply a change without dequeuing it, or dequeue it without applying it: every
//!    acknowledged write reaches every member exactly once.
//! 3. Last writer wins. A change is applied only if its stamp is newer than the stamp the
//!    destination holds for the item (kept after deletes too); otherwise it is dropped, as
//!    DynamoDB drops the losing write (SPEC-3 §2.4). Stamps come from one hybrid clock for
//!    all Regions, so after the queues drain every member holds the same items.
//!
//! A replicated write is an ordinary change at its destination (`Initiator::Replication`):
//! it goes through the write path (indexes, statistics, its stream with that Region's
//! images, Time to Live's expiry index) but is not queued again. Time to Live expiry runs
//! in the group's first member only and reaches the others as plain deletes (SPEC-3 §2.4:
//! only the Region that expired an item shows the service as its deleter).
//!
//! Multi-Region strong consistency (SPEC-3 §2.5) is this same path waited for: a strong
//! group's writer applies its queued changes in every member before it answers (`strong`).
//!
//! Files: `members` (UpdateTable ReplicaUpdates, leaving a group, DescribeTable's fields),
//! `settings` (what a change of one member's settings does to the others), `regions`,
//! `stamp`, `tree`, `feature`, `apply`, `worker`, `strong`, and `status` (the test knobs
//! and the backlog figures of the admin API and /metrics).

pub mod apply;
pub mod autoscaling;
pub mod disassociate;
pub mod feature;
pub mod members;
pub mod overrides;
pub mod regions;
pub mod settings;
pub mod stamp;
pub mod status;
pub mod strong;
pub mod tree;
pub mod worker;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use shoal_model::ApiError;

use crate::database::Database;
use crate::emulation::lag::Lag;
use crate::replication::strong::StrongWrites;
use crate::replication::worker::{Control, Wakeup};

/// The default lag of a replicated write: a few hundred milliseconds, as DynamoDB's
/// replication usually takes (SPEC-3 §2.4: "normally within a second").
pub const REPLICATION_LAG_DEFAULT: Lag = Lag {
    min: Duration::from_millis(100),
    max: Duration::from_millis(400),
};

/// Global tables' options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationOptions {
    /// How long after a write its copies are applied in the other Regions.
    pub lag: Lag,
}

impl Default for ReplicationOptions {
    fn default() -> Self {
        ReplicationOptions {
            lag: REPLICATION_LAG_DEFAULT,
        }
    }
}

/// The replication thread and what it shares with the feature and the knobs.
pub(crate) struct ReplicationState {
    pub(crate) wakeup: Arc<Wakeup>,
    pub(crate) control: Arc<Control>,
    /// The items strong groups' writes hold (`strong`).
    pub(crate) strong: Arc<StrongWrites>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
    /// Whether dropping this state stops the thread: the database's own, not the copies
    /// `Database::share` hands the upkeep.
    owner: bool,
}

impl Drop for ReplicationState {
    fn drop(&mut self) {
        if self.owner {
            self.stop();
        }
    }
}

impl ReplicationState {
    pub(crate) fn new(options: &ReplicationOptions) -> ReplicationState {
        ReplicationState {
            wakeup: Arc::new(Wakeup::default()),
            control: Arc::new(Control::new(options.lag)),
            strong: Arc::default(),
            thread: Arc::new(Mutex::new(None)),
            owner: true,
        }
    }

    /// The same state, for a `Database::share` copy: it never stops the thread.
    pub(crate) fn share(&self) -> ReplicationState {
        ReplicationState {
            wakeup: Arc::clone(&self.wakeup),
            control: Arc::clone(&self.control),
            strong: Arc::clone(&self.strong),
            thread: Arc::clone(&self.thread),
            owner: false,
        }
    }

    /// Starts the replication thread unless it runs: when a group forms, and at open when
    /// one exists.
    pub(crate) fn start(&self, database: &Database) -> Result<(), ApiError> {
        let mut thread = self.thread.lock();
        if thread.is_none() {
            *thread = Some(worker::spawn(
                database.core.clone(),
                Arc::clone(&self.control),
                Arc::clone(&self.wakeup),
            )?);
        }
        Ok(())
    }

    /// Stops the thread (the database closing); what is queued stays queued.
    pub(crate) fn stop(&self) {
        self.control.stop.store(true, Ordering::Release);
        self.wakeup.wake();
        if let Some(handle) = self.thread.lock().take() {
            let _ = handle.join();
        }
    }
}

impl Database {
    /// Starts replication if a global table exists (at open), after applying what strong
    /// groups left queued (`strong`), so no request sees a member behind another.
    pub(crate) fn resume_replication(&self) -> Result<(), ApiError> {
        self.settle_strong_groups()?;
        let any = self
            .catalog
            .read()
            .values()
            .any(|table| table.replication.is_some());
        if any {
            self.replication.start(self)?;
        }
        Ok(())
    }
}
