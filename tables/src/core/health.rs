//! Whether the database is well, in the words an operator or a supervisor acts on: writes
//! refused (a failed sync, a failed flush or compaction: the engine refuses every write after
//! one, until a restart), or the disk full (writes may be refused until space is freed, then
//! resume by themselves), or data found damaged (`core::corruption`) while writes go on, or
//! neither. The server answers it on `GET /`, `shoal health` and /metrics.

use crate::core::store::Core;

/// The database's health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Reads and writes are served; no damaged data was met.
    Healthy,
    /// Reads and writes are served, but reads met damaged SSTables: `places` damaged places,
    /// `reads` failed reads (docs/RECOVERY.md).
    Degraded { places: usize, reads: u64 },
    /// The disk is full: a commit, flush or compaction could not get space (the reason says
    /// which). Reads go on; writes are refused while it lasts, and resume without a restart
    /// once space is freed and the failed work succeeds (the engine's `out_of_space.rs`).
    OutOfSpace { reason: String },
    /// Writes are refused, for this reason, until a restart; reads go on.
    WritesRefused { reason: String },
}

impl Core {
    /// The database's health now.
    pub fn health(&self) -> Health {
        if let Some(reason) = self.lsm().poisoned() {
            return Health::WritesRefused { reason };
        }
        if let Some(reason) = self.lsm().out_of_space() {
            return Health::OutOfSpace { reason };
        }
        let (reads, places) = self.corruption_report();
        if reads > 0 {
            return Health::Degraded {
                places: places.len(),
                reads,
            };
        }
        Health::Healthy
    }
}
