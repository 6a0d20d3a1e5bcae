//! Pacing slowed writers to a byte rate (the compaction back-pressure of `compact`).
//!
//! While the compaction backlog is over a threshold, `shoal_compaction::write_rate_limit` gives the
//! rate writers are held to. The pacer turns that into waits with one shared clock,
//! `next_free`: the moment the writes admitted so far have "used up" the rate. A write of `b`
//! bytes at rate `r` takes the slot `[max(now, next_free), +b/r)` and waits until the slot
//! starts, so concurrent writers share the rate instead of each getting all of it, and small
//! batches are slowed in proportion to their size.
//!
//! Two limits: a wait shorter than [`SLEEP_MIN`] is not slept (the thread would oversleep it
//! several times over); the debt stays on the clock and a later write sleeps it off. And the
//! clock never runs more than [`WAIT_MAX`] ahead of now, so no write waits longer than that,
//! whatever the rate, the batch size or the number of writers queued (issue 3: writers are
//! slowed, never stopped for more than a second). Idle time is not banked: a clock in the
//! past restarts from now, so a burst after a pause is paced from its first write.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Waits shorter than this are carried on the clock instead of slept.
pub(crate) const SLEEP_MIN: Duration = Duration::from_micros(500);

/// The longest any single write waits.
pub(crate) const WAIT_MAX: Duration = Duration::from_secs(1);

/// The shared clock of slowed writes (module docs).
#[derive(Debug, Default)]
pub(crate) struct WritePacer {
    next_free: Mutex<Option<Instant>>,
}

impl WritePacer {
    /// Admits a write of `bytes` at `rate_bytes_per_sec` (at least 1) as of `now`, and
    /// returns how long the caller must sleep before writing: zero when the wait is under
    /// [`SLEEP_MIN`], never over [`WAIT_MAX`].
    pub(crate) fn admit(&self, now: Instant, bytes: u64, rate_bytes_per_sec: u64) -> Duration {
        let cost = Duration::from_secs_f64(bytes as f64 / rate_bytes_per_sec.max(1) as f64);
        let mut next_free = self.next_free.lock();
        let start = next_free.filter(|at| *at > now).unwrap_or(now);
        // The clock may not run further ahead than a write may wait; a batch that alone
        // costs more than that is admitted after at most WAIT_MAX all the same.
        *next_free = Some((start + cost).min(now + WAIT_MAX));
        let wait = start - now;
        debug_assert!(wait <= WAIT_MAX);
        if wait < SLEEP_MIN {
            Duration::ZERO
        } else {
            wait
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn one_writer_is_held_to_the_rate() {
        let pacer = WritePacer::default();
        let start = Instant::now();
        // 1 MiB/s, 64 KiB batches: each takes 1/16 s of the clock. A writer that never has
        // to wait for anything else writes at `now + waits so far`.
        let mut now = start;
        for _ in 0..32 {
            let wait = pacer.admit(now, 64 << 10, MIB);
            now += wait;
        }
        // 32 batches = 2 MiB took 31/16 s of waiting (the first went at once).
        let elapsed = now - start;
        assert!(
            elapsed.abs_diff(Duration::from_millis(1937)) < Duration::from_millis(2),
            "{elapsed:?}"
        );
    }

    #[test]
    fn short_waits_are_carried_until_they_add_up() {
        let pacer = WritePacer::default();
        let now = Instant::now();
        // 100 µs of clock per write: the first five waits are under SLEEP_MIN...
        let waits: Vec<Duration> = (0..10).map(|_| pacer.admit(now, 100, MIB)).collect();
        assert!(waits[..6].iter().all(|wait| wait.is_zero()), "{waits:?}");
        // ...then the debt carried on the clock is slept by every later write.
        assert!(waits[6] >= SLEEP_MIN, "{waits:?}");
        assert!(waits[6..].windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn concurrent_writers_share_the_rate_and_no_wait_exceeds_the_cap() {
        let pacer = WritePacer::default();
        let now = Instant::now();
        // Eight writers arriving together with 100 KiB each at 1 MiB/s: they queue one
        // after the other, ~98 ms apart.
        let waits: Vec<Duration> = (0..8).map(|_| pacer.admit(now, 100 << 10, MIB)).collect();
        for (n, wait) in waits.iter().enumerate() {
            let expected = Duration::from_secs_f64(n as f64 * 100.0 / 1024.0);
            assert!(
                wait.abs_diff(expected) < Duration::from_micros(10),
                "{waits:?}"
            );
        }
        // Far more than a second's worth queued: every wait stops at the cap.
        let waits: Vec<Duration> = (0..50).map(|_| pacer.admit(now, 100 << 10, MIB)).collect();
        assert!(waits.iter().all(|wait| *wait <= WAIT_MAX));
        assert_eq!(*waits.last().unwrap(), WAIT_MAX);
        // One batch costing ten seconds alone still waits at most the cap.
        let pacer = WritePacer::default();
        assert_eq!(pacer.admit(now, 10 * MIB, MIB), Duration::ZERO);
        assert_eq!(pacer.admit(now, 1, MIB), WAIT_MAX);
    }

    #[test]
    fn idle_time_is_not_banked() {
        let pacer = WritePacer::default();
        let now = Instant::now();
        assert_eq!(pacer.admit(now, MIB, MIB), Duration::ZERO);
        // Ten seconds later the clock is in the past: the next write pays only for itself.
        let later = now + Duration::from_secs(10);
        assert_eq!(pacer.admit(later, MIB, MIB), Duration::ZERO);
        assert_eq!(pacer.admit(later, 1, MIB), WAIT_MAX);
    }
}
