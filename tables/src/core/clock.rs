//! Time: the wall clock in epoch milliseconds, and the [`Clock`] that time-dependent
//! features read (Time to Live, throttling, backup expiry), which tests can move.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, from the system clock.
pub(crate) fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

/// Epoch milliseconds as the API's epoch seconds (a number with a fraction).
pub(crate) fn epoch_seconds(millis: u64) -> f64 {
    millis as f64 / 1000.0
}

/// The time Time to Live decisions are made at: the system clock, or one a test controls.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> u64 + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(Arc::new(now_millis))
    }

    /// A clock that reads `millis` (milliseconds since the Unix epoch).
    pub fn from_fn(millis: impl Fn() -> u64 + Send + Sync + 'static) -> Clock {
        Clock(Arc::new(millis))
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_millis(&self) -> u64 {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock({} ms)", self.now_millis())
    }
}
