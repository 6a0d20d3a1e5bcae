//! Point-in-time recovery's clock and retention floors (SPEC-2 §6.2; the operations are in
//! `backups::pitr`).
//!
//! A restore to a wall-clock time reads the table tree at an older sequence number. Two
//! things make that possible:
//!
//! **The clock**, a tree named [`PITR_CLOCK_TREE_NAME`] that maps wall-clock time to the
//! sequence number visible then. Its entries, one per [`BackupOptions::pitr_clock_interval`]
//! (default one second) while some table has point-in-time recovery and something was
//! written since the last entry, are written by the upkeep thread (`upkeep`):
//!
//! ```text
//! key   = u64 big-endian: milliseconds since the Unix epoch (keys sort by time)
//! value = u64 big-endian: the sequence number visible at that time
//! ```
//!
//! A time `t` resolves to the newest entry at or before `t` (and never below the table's
//! `restorable_from_seq`): a restore to `t` holds every write acknowledged before that entry was
//! taken and none acknowledged after `t`, so its granularity is the clock interval. Entries
//! older than the longest window still needed are pruned, keeping the newest of them (the
//! one the window's start resolves to).
//!
//! **Retention floors** ([`PitrRetention`], the engine's `VersionRetention`): the table tree
//! of a table with point-in-time recovery gets a floor, the sequence number its oldest
//! restorable time resolves to; compaction keeps every version above it and the newest one
//! at or below it, and drops the rest as usual. Trees of other tables, GSIs (a restore
//! rebuilds them from the restored items), streams and expiry indexes keep today's
//! behaviour. Floors only rise: at the table's `restorable_from_seq` when it is enabled, then
//! raised by the upkeep as the window moves. Until the catalog is first loaded at open the
//! floors are unknown, so every tree answers "keep everything" (floor 0) rather than let a
//! compaction started by the open drop history a table still needs.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use shoal_engine::{Db, Direction, TreeId, VersionRetention, WriteBatch};
use shoal_model::ApiError;

use crate::core::catalog::{Catalog, PointInTimeRecoveryDef, TableDef};
use crate::core::error::internal;
use crate::core::feature::Feature;
use crate::database::Database;

/// The name of the clock tree.
pub const PITR_CLOCK_TREE_NAME: &str = "pitr-clock";
/// How often the clock is written while some table has point-in-time recovery.
pub const PITR_CLOCK_INTERVAL_DEFAULT: Duration = Duration::from_secs(1);
const DAY_MILLIS: u64 = 86_400_000;
/// Clock entries removed per upkeep tick, at most.
const PRUNE_ENTRIES_MAX: usize = 1024;

/// The retention floors of the trees of tables with point-in-time recovery (module docs).
#[derive(Debug, Default)]
pub struct PitrRetention {
    /// False until the catalog is first loaded: every tree keeps everything meanwhile.
    loaded: AtomicBool,
    floors: RwLock<HashMap<TreeId, u64>>,
    /// Held by whatever raises a floor, and by a restore or export from resolving its time
    /// to a sequence number until its snapshot is registered: a floor then never passes a
    /// sequence number between the check and the registration.
    pub(crate) advancing: Mutex<()>,
    /// Every write up to this sequence number is covered by a clock entry (see
    /// [`covered_through_seq`]): the clock is written again only once something else was
    /// written after it.
    clock_covers_through_seq: AtomicU64,
}

impl VersionRetention for PitrRetention {
    fn floor(&self, tree: TreeId) -> Option<u64> {
        if !self.loaded.load(Ordering::Acquire) {
            return Some(0);
        }
        self.floors.read().get(&tree).copied()
    }
}

impl PitrRetention {
    /// The floor of `tree`, once loaded.
    pub(crate) fn floor_of(&self, tree: TreeId) -> Option<u64> {
        self.floors.read().get(&tree).copied()
    }

    /// Gives `tree` the floor `seq` if it has none: called before a table's point-in-time
    /// recovery is stored as enabled, with a sequence number at most its `restorable_from_seq`,
    /// so no compaction between the two drops a version the table then needs.
    pub(crate) fn hold_from(&self, tree: TreeId, seq: u64) {
        self.floors.write().entry(tree).or_insert(seq);
    }
}

/// After every catalog reload: a table that gained point-in-time recovery gets its
/// `restorable_from_seq` as floor (or keeps the lower one [`PitrRetention::hold_from`] gave it),
/// one that lost it, or was deleted, loses its floor; the others keep theirs.
/// Point-in-time recovery hears the catalog (`core::feature`): which trees keep history.
impl Feature for PitrRetention {
    fn catalog_changed(&self, catalog: &Catalog) {
        note_pitr_trees(self, catalog);
    }
}

pub(crate) fn note_pitr_trees(retention: &PitrRetention, catalog: &Catalog) {
    let mut floors = retention.floors.write();
    let old = std::mem::take(&mut *floors);
    for table in catalog.values() {
        if let Some(pitr) = &table.settings.point_in_time_recovery {
            let floor = old
                .get(&table.tree)
                .copied()
                .unwrap_or(pitr.restorable_from_seq);
            floors.insert(table.tree, floor);
        }
    }
    drop(floors);
    retention.loaded.store(true, Ordering::Release);
}

/// What a clock entry that records `visible` and was itself written at sequence number
/// `written` covers. Its own write, when nothing else came between reading `visible` and
/// writing it (`written == visible + 1`); else only `visible`: writes that landed in between
/// are not in the entry, and the next tick must take one for them. Taking the entry's own
/// number in that case too once left a quiet table's last writes outside every entry, so a
/// restore or export to any later time missed them (seen as an export at a past time
/// missing items: entry at 1375, visible 1501 for as long as nothing more was written).
fn covered_through_seq(visible: u64, written: u64) -> u64 {
    debug_assert!(
        written > visible,
        "the entry's own write comes after what it records"
    );
    if written == visible + 1 {
        written
    } else {
        visible
    }
}

fn encode_millis(millis: u64) -> [u8; 8] {
    millis.to_be_bytes()
}

fn decode_u64(bytes: &[u8]) -> Result<u64, ApiError> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| internal(format!("a clock entry of {} bytes", bytes.len())))
}

/// The clock entry at or before `millis`: (its time, its sequence number).
fn entry_at(db: &Db, clock: TreeId, millis: u64) -> Result<Option<(u64, u64)>, ApiError> {
    let key = encode_millis(millis);
    let mut cursor = db
        .iter(
            clock,
            Bound::Unbounded,
            Bound::Included(&key[..]),
            Direction::Reverse,
            None,
        )
        .map_err(internal)?;
    if !cursor.advance().map_err(internal)? {
        return Ok(None);
    }
    Ok(Some((
        decode_u64(cursor.key())?,
        decode_u64(cursor.value())?,
    )))
}

impl Database {
    /// How long a table's history is kept: `BackupOptions::pitr_window`, else its period.
    pub(crate) fn pitr_window_millis(&self, pitr: &PointInTimeRecoveryDef) -> u64 {
        match self.options.backups.pitr_window {
            Some(window) => u64::try_from(window.as_millis()).unwrap_or(u64::MAX),
            None => u64::from(pitr.recovery_period_days) * DAY_MILLIS,
        }
    }

    /// The oldest time a restore of `table` may ask for (milliseconds since the epoch).
    pub(crate) fn earliest_restorable_millis(&self, pitr: &PointInTimeRecoveryDef) -> u64 {
        let now = self.options.clock.now_millis();
        pitr.restorable_from_millis
            .max(now.saturating_sub(self.pitr_window_millis(pitr)))
    }

    /// The sequence number time `millis` resolves to for `table` (module docs). The caller
    /// holds `PitrRetention::advancing` and has checked the time is restorable.
    pub(crate) fn pitr_seq_at(
        &self,
        pitr: &PointInTimeRecoveryDef,
        millis: u64,
    ) -> Result<u64, ApiError> {
        let from_clock = match self.db.tree_id(PITR_CLOCK_TREE_NAME) {
            Some(clock) => entry_at(&self.db, clock, millis)?.map_or(0, |(_, seq)| seq),
            None => 0,
        };
        Ok(from_clock.max(pitr.restorable_from_seq))
    }

    /// Creates the clock tree if there is none yet. The caller holds `catalog_change`.
    pub(crate) fn ensure_pitr_clock(&self) -> Result<TreeId, ApiError> {
        match self.db.tree_id(PITR_CLOCK_TREE_NAME) {
            Some(tree) => Ok(tree),
            None => self.db.create_tree(PITR_CLOCK_TREE_NAME).map_err(internal),
        }
    }

    /// One upkeep tick of point-in-time recovery: a clock entry if anything was written
    /// since the last, the floors raised to where the windows now start, and clock entries
    /// no window needs any more removed.
    pub(crate) fn pitr_upkeep(&self) -> Result<(), ApiError> {
        let tables: Vec<(TreeId, PointInTimeRecoveryDef)> = self
            .catalog
            .read()
            .values()
            .filter_map(|table: &std::sync::Arc<TableDef>| {
                let pitr = table.settings.point_in_time_recovery.clone()?;
                Some((table.tree, pitr))
            })
            .collect();
        let Some(clock) = self.db.tree_id(PITR_CLOCK_TREE_NAME) else {
            return Ok(());
        };
        if tables.is_empty() {
            return Ok(());
        }
        let retention = &self.backups.pitr;
        let now = self.options.clock.now_millis();
        let visible = self.db.visible_seq();
        if visible > retention.clock_covers_through_seq.load(Ordering::Acquire) {
            let mut batch = WriteBatch::new();
            batch
                .put(clock, &encode_millis(now), &visible.to_be_bytes())
                .map_err(internal)?;
            let written = self.db.write(batch).map_err(internal)?;
            retention
                .clock_covers_through_seq
                .store(covered_through_seq(visible, written), Ordering::Release);
        }

        let mut window_longest = 0;
        {
            let _advancing = retention.advancing.lock();
            for (tree, pitr) in &tables {
                let window = self.pitr_window_millis(pitr);
                window_longest = window_longest.max(window);
                let start = self.pitr_seq_at(pitr, now.saturating_sub(window))?;
                let mut floors = retention.floors.write();
                if let Some(floor) = floors.get_mut(tree) {
                    *floor = (*floor).max(start);
                }
            }
        }

        // Keep the newest entry at or before the oldest window's start: it is what that
        // start resolves to.
        let Some((kept_millis, _)) = entry_at(&self.db, clock, now.saturating_sub(window_longest))?
        else {
            return Ok(());
        };
        let kept_key = encode_millis(kept_millis);
        let stale = self
            .db
            .scan(
                clock,
                Bound::Unbounded,
                Bound::Excluded(&kept_key[..]),
                Direction::Forward,
                None,
                PRUNE_ENTRIES_MAX,
            )
            .map_err(internal)?;
        if stale.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::new();
        for (key, _) in &stale {
            batch.delete(clock, key).map_err(internal)?;
        }
        self.db.write(batch).map_err(internal)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::covered_through_seq;

    #[test]
    fn an_entry_raced_by_other_writes_covers_only_what_it_records() {
        // Writes 1376..=1500 landed between reading `visible` and the entry's own write:
        // they are in no entry, so the next tick must take one (1501 > 1375).
        assert_eq!(covered_through_seq(1375, 1501), 1375);
        // The neighbouring case that must not change: nothing came between, so the entry's
        // own write is covered and a quiet database takes no more entries (1376 is not
        // above 1376).
        assert_eq!(covered_through_seq(1375, 1376), 1376);
    }
}
