//! Work that failed because the disk is full, and its retries.
//!
//! # What is retried, and why that is safe
//!
//! A failed fsync of the WAL is never retried (DESIGN.md §5): the kernel may have dropped the
//! pages it could not write, so a retry can succeed without them. A full disk is another
//! matter, and RocksDB's error handler resumes from it too:
//!
//! - **A commit** that meets `ENOSPC` in the WAL is refused and leaves the log as it was
//!   (`shoal_wal`'s `writer.rs`: the part of its group that fitted is cut off durably before
//!   anyone hears of the failure). The next commit is the retry; nothing is poisoned.
//! - **A flush or a compaction** writes only new files, which no version names until the
//!   manifest switch. If one of them, or the new manifest, cannot get its room (its write,
//!   its allocation, even its fsync: whatever the kernel did with that file's pages, the
//!   file is thrown away), the files are removed, the version is unchanged and the
//!   memtable or input tables it worked from are still intact in memory or on disk. Doing
//!   the whole job again into new files, once there is room, is then the same as doing it
//!   the first time. The flusher and the compaction threads retry it after a back-off
//!   ([`Backoff`]: 50 ms doubling to 5 s), so a disk that gets room back resumes within
//!   5 seconds with no restart.
//! - Anything else stays fatal for writes (`Shared::background_error`): a failed fsync of the
//!   WAL or of the manifest's switch, an I/O error, a damaged input.
//!
//! While some work is out of space, writers are not made to wait for it: a write that would
//! wait for a flush gets [`DbError::NoSpace`](crate::error::DbError::NoSpace) at once, and
//! [`Db::out_of_space`](crate::Db::out_of_space) says why (the health the server reports).

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// The first wait before a retry.
const RETRY_FIRST: Duration = Duration::from_millis(50);
/// The longest wait between two retries: how long after space is freed writes may still be
/// refused, at most.
pub(crate) const RETRY_MAX: Duration = Duration::from_secs(5);

/// The kinds of work that can be out of space at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Work {
    Commit = 0,
    Flush = 1,
    Compaction = 2,
}

const WORK_NAMES: [&str; 3] = ["commit", "flush", "compaction"];

/// Which work is out of space now, and why.
#[derive(Debug, Default)]
pub(crate) struct OutOfSpace {
    /// One bit per [`Work`]: read without the lock on every commit.
    flags: AtomicU8,
    reasons: Mutex<[Option<String>; 3]>,
}

impl OutOfSpace {
    /// `work` failed for want of space: `error` says where.
    pub(crate) fn failed(&self, work: Work, error: &dyn std::fmt::Display) {
        let mut reasons = self.reasons.lock();
        let reason = &mut reasons[work as usize];
        if reason.is_none() {
            tracing::warn!(work = WORK_NAMES[work as usize], %error, "the disk is full; retrying once space is freed");
        }
        *reason = Some(error.to_string());
        self.flags.fetch_or(1 << work as u8, Ordering::Release);
    }

    /// `work` succeeded: it is no longer out of space.
    pub(crate) fn succeeded(&self, work: Work) {
        if self.flags.load(Ordering::Acquire) & (1 << work as u8) == 0 {
            return;
        }
        let mut reasons = self.reasons.lock();
        if reasons[work as usize].take().is_some() {
            tracing::info!(
                work = WORK_NAMES[work as usize],
                "disk space is back; the work that failed succeeded"
            );
        }
        self.flags.fetch_and(!(1 << work as u8), Ordering::Release);
    }

    /// Why some work is out of space, if any is: the first kind's reason.
    pub(crate) fn reason(&self) -> Option<String> {
        if self.flags.load(Ordering::Acquire) == 0 {
            return None;
        }
        let reasons = self.reasons.lock();
        reasons.iter().zip(WORK_NAMES).find_map(|(reason, name)| {
            reason.as_ref().map(|reason| {
                format!("disk full: a {name} failed ({reason}); writes resume once space is freed")
            })
        })
    }

    /// Whether `work` is out of space now.
    pub(crate) fn is_failing(&self, work: Work) -> bool {
        self.flags.load(Ordering::Acquire) & (1 << work as u8) != 0
    }
}

/// The waits between retries of one piece of work.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Backoff {
        Backoff { next: RETRY_FIRST }
    }

    /// How long to wait before the next retry; each wait doubles, up to [`RETRY_MAX`].
    pub(crate) fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(RETRY_MAX);
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_come_and_go_per_kind_of_work() {
        let state = OutOfSpace::default();
        assert_eq!(state.reason(), None);
        state.failed(Work::Flush, &"no room for 000007.sst");
        state.failed(Work::Commit, &"no room for the log");
        let reason = state.reason().unwrap();
        assert!(reason.starts_with("disk full: a commit failed"), "{reason}");
        state.succeeded(Work::Commit);
        let reason = state.reason().unwrap();
        assert!(
            reason.contains("flush failed (no room for 000007.sst)"),
            "{reason}"
        );
        assert!(state.is_failing(Work::Flush));
        assert!(!state.is_failing(Work::Compaction));
        state.succeeded(Work::Flush);
        assert_eq!(state.reason(), None);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let mut backoff = Backoff::new();
        let waits: Vec<Duration> = (0..10).map(|_| backoff.next_wait()).collect();
        assert_eq!(waits[0], RETRY_FIRST);
        assert_eq!(waits[1], RETRY_FIRST * 2);
        assert!(waits.windows(2).all(|pair| pair[1] >= pair[0]));
        assert_eq!(*waits.last().unwrap(), RETRY_MAX);
    }
}
