//! The upkeep thread: the work a database does on its own, on a timer — rolling stream
//! shards over and forgetting what is past retention (`streams::lifecycle`), deleting
//! expired items (`ttl`), and the point-in-time clock and retention floors
//! (`backups::pitr_clock`).
//!
//! It starts with the first table that needs it (a stream, Time to Live or point-in-time
//! recovery), so a database without any never runs it (an in-memory database per test stays
//! cheap). It works on a [`Database`] that shares the storage, catalog and locks of the one
//! that started it ([`Database::share`]), and stops (joined) when that one is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use shoal_engine::DbError;

use crate::database::Database;

/// The shortest and longest pause between two looks at what is due.
const TICK_MIN: Duration = Duration::from_millis(10);
const TICK_MAX: Duration = Duration::from_secs(1);

/// The running upkeep thread; dropping it (with the database) stops and joins it.
pub(crate) struct Upkeep {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Upkeep {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            // A panicked upkeep left nothing half-done: each of its changes is one batch or
            // one catalog change.
            let _ = thread.join();
        }
    }
}

impl Database {
    /// Starts the upkeep thread if a table has a stream, Time to Live or point-in-time
    /// recovery and it is not running yet; cheap when it runs already.
    pub(crate) fn start_upkeep(&self) -> Result<(), DbError> {
        let needed = self.catalog.read().values().any(|table| {
            !table.streams.is_empty()
                || table.time_to_live.is_some()
                || table.settings.point_in_time_recovery.is_some()
        });
        let mut upkeep = self.upkeep.lock();
        if !needed || !self.options.upkeep || upkeep.is_some() {
            return Ok(());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let database = self.share();
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("shoal-upkeep".to_string())
            .spawn(move || run(&database, &stopping))
            .map_err(|e| DbError::io("starting the upkeep thread", e))?;
        *upkeep = Some(Upkeep {
            stop,
            thread: Some(thread),
        });
        Ok(())
    }
}

fn run(database: &Database, stop: &AtomicBool) {
    let options = database.options();
    // Streams: often enough to roll a shard or trim within a quarter of its period.
    let streams_every = (options.streams.shard_duration / 4)
        .min(options.streams.retention / 4)
        .clamp(TICK_MIN, TICK_MAX);
    let sweep_every = options.time_to_live.sweep_interval.max(TICK_MIN);
    let clock_every = options.backups.pitr_clock_interval.max(TICK_MIN);
    let tick = streams_every
        .min(sweep_every)
        .min(clock_every)
        .clamp(TICK_MIN, TICK_MAX);
    let first_sweep = if options.time_to_live.sweep_at_start {
        Duration::ZERO
    } else {
        sweep_every
    };
    let (mut streams_due, mut sweep_due) = (Instant::now(), Instant::now() + first_sweep);
    let mut clock_due = Instant::now();
    while !stop.load(Ordering::Acquire) {
        std::thread::park_timeout(tick);
        if stop.load(Ordering::Acquire) {
            break;
        }
        let now = Instant::now();
        if now >= streams_due {
            streams_due = now + streams_every;
            if let Err(error) = database.stream_upkeep() {
                tracing::warn!(%error.message, "stream upkeep failed; retrying");
            }
        }
        if now >= clock_due {
            clock_due = now + clock_every;
            if let Err(error) = database.pitr_upkeep() {
                tracing::warn!(%error.message, "point-in-time recovery upkeep failed; retrying");
            }
        }
        if now >= sweep_due {
            sweep_due = now + sweep_every;
            if let Err(error) = database.expire_now() {
                tracing::warn!(%error.message, "Time to Live sweep failed; retrying");
            }
        }
    }
}
