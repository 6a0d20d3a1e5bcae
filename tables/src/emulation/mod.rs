//! DynamoDB's behaviours a local store has no cause for, emulated on request so that
//! applications meet them in tests: GSIs and reads that lag ([`lag`]), transaction conflicts
//! ([`conflicts`]) and transient table statuses ([`transient`]).

pub mod conflicts;
pub mod lag;
pub mod transient;

use std::time::Duration;

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
