//! The test knobs of replication (the admin API's, docs/TESTING-TOOLS.md) and what /metrics
//! reports of it: Regions cut off and healed, the lag set at run time, and each link's
//! backlog (changes queued) and lag (age of its oldest queued change).

use std::ops::Bound;
use std::time::Duration;

use shoal_engine::Direction;
use shoal_model::ApiError;

use crate::core::catalog::ReplicaStatus;
use crate::core::clock::now_millis;
use crate::core::error::internal;
use crate::core::keys;
use crate::database::Database;
use crate::emulation::lag::Lag;
use crate::replication::feature::region_of;
use crate::replication::tree::{decode_entry, queue_prefix, queues_end};

/// Queued changes counted per link at most (a figure, not a scan of a huge backlog).
pub const BACKLOG_COUNT_MAX: usize = 1_000_000;

/// One direction of replication of one global table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationLink {
    pub table: String,
    pub from: String,
    pub to: String,
    /// Changes queued (at most [`BACKLOG_COUNT_MAX`]).
    pub backlog: u64,
    /// Age of the oldest queued change (zero when none is).
    pub lag: Duration,
}

impl Database {
    /// Cuts `region` off: replication to and from it waits (writes go on everywhere).
    pub fn cut_region(&self, region: &str) {
        self.replication
            .control
            .cut
            .write()
            .insert(region.to_string());
        tracing::info!(region, "region cut off from replication");
    }

    /// Heals `region`: its queues drain.
    pub fn heal_region(&self, region: &str) {
        self.replication.control.cut.write().remove(region);
        self.replication.wakeup.wake();
        tracing::info!(region, "region healed");
    }

    /// The Regions cut off now.
    pub fn cut_regions(&self) -> Vec<String> {
        self.replication
            .control
            .cut
            .read()
            .iter()
            .cloned()
            .collect()
    }

    /// Sets the lag of changes applied from now on.
    pub fn set_replication_lag(&self, lag: Lag) {
        *self.replication.control.lag.write() = lag;
        self.replication.wakeup.wake();
    }

    pub fn replication_lag(&self) -> Lag {
        *self.replication.control.lag.read()
    }

    /// Every link of every global table, by table then source then destination Region.
    pub fn replication_links(&self) -> Result<Vec<ReplicationLink>, ApiError> {
        let tables: Vec<_> = self.catalog.read().values().cloned().collect();
        let now = now_millis();
        let mut links = Vec::new();
        for table in tables {
            let Some(replication) = &table.replication else {
                continue;
            };
            for member in &replication.members {
                if member.table_id == table.id {
                    continue;
                }
                let prefix = queue_prefix(&member.table_id);
                let end = keys::prefix_successor(&prefix).unwrap_or_else(queues_end);
                let mut cursor = self
                    .db
                    .iter(
                        replication.tree,
                        Bound::Included(prefix.as_slice()),
                        Bound::Excluded(end.as_slice()),
                        Direction::Forward,
                        None,
                    )
                    .map_err(internal)?;
                let mut backlog = 0u64;
                let mut lag = Duration::ZERO;
                while (backlog as usize) < BACKLOG_COUNT_MAX
                    && cursor.advance().map_err(internal)?
                {
                    if backlog == 0 {
                        if let Some((stamp, _)) = decode_entry(cursor.value()) {
                            lag = Duration::from_millis(now.saturating_sub(stamp.micros / 1000));
                        }
                    }
                    backlog += 1;
                }
                links.push(ReplicationLink {
                    table: table.name.clone(),
                    from: region_of(&table).to_string(),
                    to: member.region.clone(),
                    backlog,
                    lag,
                });
            }
        }
        Ok(links)
    }

    /// Whether every queue is empty and no member is being filled or disassociating: what
    /// tests wait for.
    pub fn replication_settled(&self) -> Result<bool, ApiError> {
        let creating = self.catalog.read().values().any(|table| {
            table
                .replication
                .as_ref()
                .is_some_and(|r| r.status != ReplicaStatus::Active)
        });
        Ok(!creating
            && self
                .replication_links()?
                .iter()
                .all(|link| link.backlog == 0))
    }
}
