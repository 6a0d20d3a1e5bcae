//! Backups: on-demand backups and restores ([`on_demand`]) kept on disk ([`store`]), and
//! point-in-time recovery ([`pitr`]) with its clock and retention floors ([`pitr_clock`]).

pub mod on_demand;
pub mod pitr;
pub mod pitr_clock;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

/// Point-in-time recovery's settings (`Options::backups`).
#[derive(Debug, Clone)]
pub struct BackupOptions {
    /// How far back point-in-time recovery keeps history; None: each table's
    /// RecoveryPeriodInDays (tests and `shoal serve --pitr-window-seconds` shorten it).
    pub pitr_window: Option<Duration>,
    /// How often the point-in-time clock is written (`backups::pitr_clock`): a restore's
    /// granularity.
    pub pitr_clock_interval: Duration,
}

impl Default for BackupOptions {
    fn default() -> Self {
        BackupOptions {
            pitr_window: None,
            pitr_clock_interval: pitr_clock::PITR_CLOCK_INTERVAL_DEFAULT,
        }
    }
}

/// Backups' state in a [`Database`](crate::Database).
#[derive(Clone, Default)]
pub(crate) struct BackupsState {
    /// Backups a restore is reading ([`on_demand`]).
    pub(crate) in_use: Arc<on_demand::BackupsInUse>,
    /// The history compaction keeps for point-in-time recovery ([`pitr_clock`]).
    pub(crate) pitr: Arc<pitr_clock::PitrRetention>,
}
