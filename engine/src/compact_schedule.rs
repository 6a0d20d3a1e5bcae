//! Which compaction jobs are running, what each has claimed, and the wakeups of idle
//! compaction threads. `compact` decides what to claim under this state's lock.

use std::collections::BTreeSet;

use parking_lot::{Condvar, Mutex};

use crate::version::TreeId;

/// Jobs that may run at once, whatever the thread count: bounds memory and open outputs.
pub(crate) const RUNNING_JOBS_MAX: usize = 64;

/// Shared state of the compaction threads.
#[derive(Default)]
pub(crate) struct Scheduler {
    pub(crate) state: Mutex<SchedulerState>,
    pub(crate) wakeup: Condvar,
}

#[derive(Default)]
pub(crate) struct SchedulerState {
    /// Bumped whenever there may be new work; idle threads sleep until it changes.
    pub(crate) requests: u64,
    pub(crate) running: Vec<RunningJob>,
    pub(crate) next_job_id: u64,
    /// The tree to look at first next time, so one busy tree cannot starve the others.
    pub(crate) next_tree: TreeId,
    /// Trees a whole-tree compaction (`Db::compact_tree`) waits to claim: no other job is
    /// started for them meanwhile, so a busy tree's jobs cannot keep it waiting. One entry
    /// per waiting call.
    pub(crate) reserved_trees: Vec<TreeId>,
}

/// What a running job has claimed.
pub(crate) struct RunningJob {
    pub(crate) id: u64,
    pub(crate) tree: TreeId,
    pub(crate) input_numbers: BTreeSet<u64>,
    pub(crate) output_level: usize,
    /// User-key range of all inputs, which bounds the outputs.
    pub(crate) smallest_user_key: Vec<u8>,
    pub(crate) largest_user_key: Vec<u8>,
}

impl RunningJob {
    pub(crate) fn output_overlaps(&self, other: &RunningJob) -> bool {
        self.tree == other.tree
            && self.output_level == other.output_level
            && self.smallest_user_key <= other.largest_user_key
            && other.smallest_user_key <= self.largest_user_key
    }
}

/// Releases a claimed job's files when dropped, whatever happened to the job.
pub(crate) struct JobClaim<'a> {
    pub(crate) scheduler: &'a Scheduler,
    pub(crate) id: u64,
}

impl Drop for JobClaim<'_> {
    fn drop(&mut self) {
        let mut state = self.scheduler.state.lock();
        state.running.retain(|job| job.id != self.id);
        // The finished job may have made more work due (e.g. the next level is now full).
        state.requests += 1;
        self.scheduler.wakeup.notify_all();
    }
}

/// Keeps new jobs off a tree while it is held ([`SchedulerState::reserved_trees`]).
pub(crate) struct TreeReservation<'a> {
    scheduler: &'a Scheduler,
    tree: TreeId,
}

impl<'a> TreeReservation<'a> {
    pub(crate) fn new(scheduler: &'a Scheduler, tree: TreeId) -> TreeReservation<'a> {
        scheduler.state.lock().reserved_trees.push(tree);
        TreeReservation { scheduler, tree }
    }
}

impl Drop for TreeReservation<'_> {
    fn drop(&mut self) {
        let mut state = self.scheduler.state.lock();
        if let Some(position) = state.reserved_trees.iter().position(|t| *t == self.tree) {
            state.reserved_trees.swap_remove(position);
        }
        // Jobs of the tree may have been due all along.
        state.requests += 1;
        self.scheduler.wakeup.notify_all();
    }
}

impl Scheduler {
    /// Wakes the compaction threads: there may be work.
    pub(crate) fn request(&self) {
        let mut state = self.state.lock();
        state.requests += 1;
        self.wakeup.notify_all();
    }

    pub(crate) fn running_count(&self) -> usize {
        self.state.lock().running.len()
    }
}
