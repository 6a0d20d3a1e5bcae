//! DynamoDB's behaviours a local store has no cause for, emulated on request so that
//! applications meet them in tests: GSIs and reads that lag ([`lag`]), transaction conflicts
//! ([`conflicts`]) and transient table statuses ([`transient`]).

pub mod conflicts;
pub mod lag;
pub mod transient;

use std::sync::Arc;
use std::time::Duration;

use shoal_engine::{Db, DbError};

use crate::capacity::throttle::CapacityMode;
use lag::Lag;

/// DynamoDB behaviours a test can ask for (`Options::emulation`); all off by default, as in
/// DynamoDB Local.
#[derive(Debug, Clone)]
pub struct EmulationOptions {
    /// How long tables stay CREATING, UPDATING and DELETING ([`transient`]); zero (the
    /// default) makes every change ACTIVE at once.
    pub transient_status_delay: Duration,
    /// Whether requests through `Database::execute` are throttled as DynamoDB throttles
    /// them (`capacity::throttle`); off by default. Time is `Options::clock`'s.
    pub capacity: CapacityMode,
    /// How long a global secondary index takes to show a write ([`lag`]); None (the default)
    /// shows it at once.
    pub gsi_lag: Option<Lag>,
    /// How stale an eventually consistent read (ConsistentRead false) may be ([`lag`]); None
    /// (the default) reads the latest state.
    pub eventual_read_lag: Option<Lag>,
    /// Seed of the lags drawn from a range: the same seed draws the same lags.
    pub lag_seed: u64,
    /// Whether writes meeting an in-flight transaction fail as DynamoDB's do
    /// ([`conflicts`]) instead of waiting for it.
    pub transaction_conflicts: bool,
    /// A testing knob: every write stays in flight this long after taking its locks, so
    /// that a conflict (or a wait) can be met on purpose. Zero by default.
    pub write_hold: Duration,
}

impl Default for EmulationOptions {
    fn default() -> Self {
        EmulationOptions {
            transient_status_delay: Duration::ZERO,
            capacity: CapacityMode::Off,
            gsi_lag: None,
            eventual_read_lag: None,
            lag_seed: 0,
            transaction_conflicts: false,
            write_hold: Duration::ZERO,
        }
    }
}

/// The emulations' state in a [`Database`](crate::Database): only what the options ask for.
pub(crate) struct EmulationState {
    /// Tables CREATING, UPDATING or DELETING for `EmulationOptions::transient_status_delay`.
    pub(crate) transitions: Arc<transient::Transitions>,
    /// Recent snapshots for lagged reads ([`lag`]), with `EmulationOptions::gsi_lag` or
    /// `EmulationOptions::eventual_read_lag`.
    pub(crate) lagged: Option<Arc<lag::LaggedSnapshots>>,
    /// Keeps `lagged` current; stopped on drop.
    _lag_ticker: Option<lag::LagTicker>,
    /// Items of writes in flight, with `EmulationOptions::transaction_conflicts`.
    pub(crate) in_flight: Option<Arc<conflicts::InFlight>>,
}

impl EmulationState {
    pub(crate) fn open(
        db: &Arc<Db>,
        options: &EmulationOptions,
    ) -> Result<EmulationState, DbError> {
        // Snapshots are kept as far back as the longest lag asks.
        let horizon = [options.gsi_lag, options.eventual_read_lag]
            .into_iter()
            .flatten()
            .map(|lag| lag.max)
            .max()
            .filter(|horizon| !horizon.is_zero());
        let (lagged, lag_ticker) = match horizon {
            Some(horizon) => {
                let (lagged, ticker) = lag::start(db, horizon, options.lag_seed)?;
                (Some(lagged), Some(ticker))
            }
            None => (None, None),
        };
        Ok(EmulationState {
            transitions: Arc::new(transient::Transitions::new(options.transient_status_delay)),
            lagged,
            _lag_ticker: lag_ticker,
            in_flight: options
                .transaction_conflicts
                .then(|| Arc::new(conflicts::InFlight::default())),
        })
    }

    /// The same state for another handle of the database (the upkeep's); the original
    /// keeps the lag ticker.
    pub(crate) fn share(&self) -> EmulationState {
        EmulationState {
            transitions: Arc::clone(&self.transitions),
            lagged: self.lagged.clone(),
            _lag_ticker: None,
            in_flight: self.in_flight.clone(),
        }
    }
}
