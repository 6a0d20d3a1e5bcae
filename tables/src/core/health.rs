//! Whether the database is well, in the words an operator or a supervisor acts on: writes
//! refused (a failed sync, a full disk, a failed flush or compaction: the engine refuses
//! every write after one, until a restart), or data found damaged (`core::corruption`) while
//! writes go on, or neither. The server answers it on `GET /`, `shoal health` and /metrics.

use crate::core::store::Core;

/// The database's health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Reads and writes are served; no damaged data was met.
    Healthy,
    /// Reads and writes are served, but reads met damaged SSTables: `places` damaged places,
    /// `reads` failed reads (docs/RECOVERY.md).
    Degraded { places: usize, reads: u64 },
    /// Writes are refused, for this reason; reads go on.
    WritesRefused { reason: String },
}

impl Core {
    /// The database's health now.
    pub fn health(&self) -> Health {
        if let Some(reason) = self.lsm().poisoned() {
            return Health::WritesRefused { reason };
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
