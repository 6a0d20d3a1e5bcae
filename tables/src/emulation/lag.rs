//! Eventual consistency on purpose (SPEC-2 §8): global secondary indexes that show a write
//! only after a delay (`EmulationOptions::gsi_lag`), and eventually consistent reads that may see the
//! table as it was a moment ago (`EmulationOptions::eventual_read_lag`). Both are off by default.
//!
//! Writes are untouched: an item and its index entries still go into one WAL batch, so no
//! crash can leave an index behind its table. Only what a read sees lags. A background
//! thread keeps a ring of recent engine snapshots, each with the time it was taken (a new
//! one only when the visible sequence number moved, at most one per tick); a lagged read
//! draws a lag and reads at the newest snapshot taken at least that long ago. A snapshot
//! taken at time t holds only writes acknowledged before t, so the read never sees a write
//! younger than its lag, and, the ring being ticked often, not much older either.
//!
//! Held snapshots keep the versions they see from compaction; the ring drops every
//! snapshot older than the newest one a read of the longest lag could still want, so what
//! it pins is bounded by about the longest lag of writes.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use shoal_engine::{Db, DbError, Snapshot};

use crate::Database;

/// The longest lag accepted: a snapshot held this long keeps a minute of overwritten
/// versions from compaction, which is as far as a test knob should go.
pub const LAG_MAX: Duration = Duration::from_secs(60);

/// Ticks of the ring per longest lag: a lagged read is at most about 1/64 of its lag
/// staler than asked.
const TICKS_PER_LAG: u32 = 64;
const TICK_MIN: Duration = Duration::from_millis(1);
const TICK_MAX: Duration = Duration::from_millis(100);

/// How stale a lagged read is: each read draws a lag uniformly from `min..=max` (a fixed
/// lag when they are equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lag {
    pub min: Duration,
    pub max: Duration,
}

impl Lag {
    /// Every read exactly `lag` behind.
    pub fn fixed(lag: Duration) -> Lag {
        Lag { min: lag, max: lag }
    }

    /// Parses `MS` (a fixed lag) or `MIN-MAX` (uniform between them), in milliseconds, at
    /// most [`LAG_MAX`].
    pub fn parse(text: &str) -> Result<Lag, String> {
        let millis = |part: &str| {
            part.trim()
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| format!("a lag is MS or MIN-MAX in milliseconds, not {text:?}"))
        };
        let lag = match text.split_once('-') {
            Some((min, max)) => Lag {
                min: millis(min)?,
                max: millis(max)?,
            },
            None => Lag::fixed(millis(text)?),
        };
        if lag.min > lag.max {
            return Err(format!("a lag's MIN may not exceed its MAX: {text:?}"));
        }
        if lag.max > LAG_MAX {
            return Err(format!(
                "a lag may not exceed {} ms: {text:?}",
                LAG_MAX.as_millis()
            ));
        }
        Ok(lag)
    }
}

/// The ring of recent snapshots and the lag draws; shared by every read of a database.
pub(crate) struct LaggedSnapshots {
    /// (taken at, snapshot), oldest first.
    ring: Mutex<VecDeque<(Instant, Arc<Snapshot>)>>,
    /// How long the oldest kept snapshot must cover: the longest lag any read may draw.
    horizon: Duration,
    tick: Duration,
    /// splitmix64 state: draws repeat for a given seed.
    draws: Mutex<u64>,
}

impl LaggedSnapshots {
    fn new(db: &Db, horizon: Duration, seed: u64) -> LaggedSnapshots {
        let tick = (horizon / TICKS_PER_LAG).clamp(TICK_MIN, TICK_MAX);
        let mut ring = VecDeque::new();
        // Nothing older exists: a read lagging past the open reads the state at the open.
        ring.push_back((Instant::now(), Arc::new(db.snapshot())));
        LaggedSnapshots {
            ring: Mutex::new(ring),
            horizon,
            tick,
            draws: Mutex::new(seed),
        }
    }

    /// A lag drawn from `lag`.
    pub(crate) fn draw(&self, lag: &Lag) -> Duration {
        let span = lag.max.saturating_sub(lag.min).as_micros() as u64;
        if span == 0 {
            return lag.min;
        }
        let random = {
            let mut state = self.draws.lock();
            *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        lag.min + Duration::from_micros(random % (span + 1))
    }

    /// The newest snapshot taken at least `lag` ago (the oldest kept if none is that old;
    /// None only if the ring were empty, which it never is: seeded at open, trimmed to one).
    pub(crate) fn at_least(&self, lag: Duration) -> Option<Arc<Snapshot>> {
        let ring = self.ring.lock();
        let now = Instant::now();
        let newest_old_enough = ring
            .iter()
            .rev()
            .find(|(taken, _)| now.saturating_duration_since(*taken) >= lag);
        newest_old_enough
            .or(ring.front())
            .map(|(_, snapshot)| Arc::clone(snapshot))
    }

    /// Records the current state if it moved, and forgets what no read can want any more.
    fn tick(&self, db: &Db) {
        let now = Instant::now();
        let mut ring = self.ring.lock();
        // Spaced at least a tick apart whatever wakes the thread, so the ring's length stays
        // within the horizon over the tick, plus two.
        let due = ring.back().is_none_or(|(taken, newest)| {
            newest.seq() != db.visible_seq() && now.saturating_duration_since(*taken) >= self.tick
        });
        if due {
            ring.push_back((now, Arc::new(db.snapshot())));
        }
        // Keep the newest snapshot at least `horizon` old (what the longest lag reads) and
        // everything after it.
        while ring
            .get(1)
            .is_some_and(|(taken, _)| now.saturating_duration_since(*taken) >= self.horizon)
        {
            ring.pop_front();
        }
    }

    /// Snapshots held now (bounded by the horizon over the tick, plus two).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.ring.lock().len()
    }
}

/// The snapshot a read runs at: the latest, or a lagged one from the ring.
pub(crate) enum ReadAt {
    Latest(Snapshot),
    Lagged(Arc<Snapshot>),
}

impl std::ops::Deref for ReadAt {
    type Target = Snapshot;

    fn deref(&self) -> &Snapshot {
        match self {
            ReadAt::Latest(snapshot) => snapshot,
            ReadAt::Lagged(snapshot) => snapshot,
        }
    }
}

impl Database {
    /// The lagged snapshot a read should see, or None for the latest state. A read of a
    /// global secondary index lags by `EmulationOptions::gsi_lag`; an eventually consistent read
    /// (of a table, an LSI or a GSI: `consistent_read` not true) by
    /// `EmulationOptions::eventual_read_lag`; a GSI read with both by the longer of two draws.
    pub(crate) fn lagged_snapshot(
        &self,
        global_index: bool,
        consistent_read: Option<bool>,
    ) -> Option<Arc<Snapshot>> {
        let lagged = self.emulation.lagged.as_ref()?;
        let gsi = global_index
            .then_some(self.options.emulation.gsi_lag)
            .flatten();
        let eventual = (consistent_read != Some(true))
            .then_some(self.options.emulation.eventual_read_lag)
            .flatten();
        let lag = [gsi, eventual]
            .iter()
            .flatten()
            .map(|lag| lagged.draw(lag))
            .max()
            .filter(|lag| !lag.is_zero())?;
        lagged.at_least(lag)
    }

    /// The snapshot a Query, Scan or batch read runs at ([`Database::lagged_snapshot`]).
    pub(crate) fn read_snapshot(
        &self,
        global_index: bool,
        consistent_read: Option<bool>,
    ) -> ReadAt {
        match self.lagged_snapshot(global_index, consistent_read) {
            Some(snapshot) => ReadAt::Lagged(snapshot),
            None => ReadAt::Latest(self.db.snapshot()),
        }
    }
}

/// The thread that ticks the ring; dropping it (with the database) stops and joins it.
pub(crate) struct LagTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for LagTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Starts the ring for a database whose longest lag is `horizon`.
pub(crate) fn start(
    db: &Arc<Db>,
    horizon: Duration,
    seed: u64,
) -> Result<(Arc<LaggedSnapshots>, LagTicker), DbError> {
    let snapshots = Arc::new(LaggedSnapshots::new(db, horizon, seed));
    let stop = Arc::new(AtomicBool::new(false));
    let (ring, stopping, db) = (Arc::clone(&snapshots), Arc::clone(&stop), Arc::clone(db));
    let thread = std::thread::Builder::new()
        .name("shoal-lag".to_string())
        .spawn(move || {
            while !stopping.load(Ordering::Acquire) {
                ring.tick(&db);
                std::thread::park_timeout(ring.tick);
            }
        })
        .map_err(|e| DbError::io("starting the snapshot ring thread", e))?;
    Ok((
        snapshots,
        LagTicker {
            stop,
            thread: Some(thread),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lags_parse_fixed_and_ranges_and_refuse_the_rest() {
        assert_eq!(
            Lag::parse("250"),
            Ok(Lag::fixed(Duration::from_millis(250)))
        );
        assert_eq!(
            Lag::parse("10-900"),
            Ok(Lag {
                min: Duration::from_millis(10),
                max: Duration::from_millis(900)
            })
        );
        for bad in ["", "x", "9-1", "-5", "1-", "60001", "0-60001"] {
            assert!(Lag::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    fn open() -> Arc<Db> {
        let fs = shoal_vfs::mem::MemFs::new();
        Arc::new(
            Db::open_with_fs(fs.fs(), std::path::Path::new("/lag"), Default::default()).unwrap(),
        )
    }

    #[test]
    fn draws_repeat_for_a_seed_and_stay_in_range() {
        let db = open();
        let lag = Lag::parse("100-200").unwrap();
        let draws = |seed| {
            let ring = LaggedSnapshots::new(&db, lag.max, seed);
            (0..50).map(|_| ring.draw(&lag)).collect::<Vec<_>>()
        };
        let first = draws(7);
        assert_eq!(first, draws(7));
        assert_ne!(first, draws(8));
        assert!(first.iter().all(|d| (lag.min..=lag.max).contains(d)));
        assert!(first.iter().any(|d| *d != first[0]));
    }

    #[test]
    fn the_ring_holds_a_bounded_number_of_snapshots_of_bounded_age() {
        let db = open();
        let tree = db.create_tree("t").unwrap();
        let horizon = Duration::from_millis(64);
        let ring = LaggedSnapshots::new(&db, horizon, 1);
        let started = Instant::now();
        let mut n = 0u64;
        let (mut last_tick, mut after_last_tick) = (started, started);
        while started.elapsed() < horizon * 5 {
            let mut batch = shoal_engine::WriteBatch::default();
            batch.put(tree, &n.to_be_bytes(), b"v").unwrap();
            db.write(batch).unwrap();
            n += 1;
            last_tick = Instant::now();
            ring.tick(&db);
            after_last_tick = Instant::now();
            std::thread::sleep(ring.tick);
        }
        // One snapshot per tick over the horizon, plus the one at or past it and the newest.
        let bound = (horizon.as_millis() / ring.tick.as_millis()) as usize + 2;
        assert!(ring.held() <= bound, "{} held, bound {bound}", ring.held());
        assert_eq!(db.live_snapshots().len(), ring.held());
        // Age is judged at the last trim, not now: a loaded machine may oversleep any amount,
        // so only what the trim promises is checked. Everything after the front was younger
        // than the horizon, and the front alone may be older (the longest lag reads it).
        let ring_now = ring.ring.lock();
        assert!(
            ring_now.len() >= 2,
            "the loop wrote between ticks, so the ring moved"
        );
        let second_age = last_tick.saturating_duration_since(ring_now[1].0);
        assert!(second_age < horizon, "{second_age:?} kept past the horizon");
        assert!(after_last_tick.saturating_duration_since(ring_now[0].0) >= horizon);
    }

    #[test]
    fn a_lagged_read_sees_only_writes_older_than_its_lag() {
        let db = open();
        let tree = db.create_tree("t").unwrap();
        let ring = LaggedSnapshots::new(&db, Duration::from_millis(200), 1);
        let write = |value: &[u8]| {
            let mut batch = shoal_engine::WriteBatch::default();
            batch.put(tree, b"k", value).unwrap();
            db.write(batch).unwrap();
            std::thread::sleep(ring.tick);
            ring.tick(&db);
        };
        write(b"old");
        std::thread::sleep(Duration::from_millis(60));
        write(b"new");
        let read = |lag| {
            let snapshot = ring.at_least(Duration::from_millis(lag)).unwrap();
            db.get(tree, b"k", Some(&snapshot)).unwrap()
        };
        assert_eq!(read(50), Some(b"old".to_vec()));
        assert_eq!(read(0), Some(b"new".to_vec()));
        // Past everything kept: the oldest state, from before both writes.
        assert_eq!(read(150), None);
    }
}
