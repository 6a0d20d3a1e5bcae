//! Online GSI backfill: fills a global secondary index created by UpdateTable from the
//! table's existing items while writes go on (SPEC §2.3). The same walk fills a Time to
//! Live expiry index (`ttl`) when Time to Live is enabled on a table that already has
//! items: steps 2 to 5 alike, with the expiry entry in place of the index entry, no
//! statistics, and `TimeToLiveDef::backfilled` in place of the index status.
//!
//! Lifecycle of one backfill (each status change is one durable catalog change):
//! 1. UpdateTable has added the index as `Creating { backfilling: false }` with an empty
//!    tree; from that version on every write maintains the index like any other GSI.
//! 2. The backfill thread sets `Creating { backfilling: true }`, then waits until no write
//!    planned with the definition *without* the index can still be running: it sleeps
//!    [`OLD_DEFINITION_GRACE`] and then takes every collection-lock stripe once (a write
//!    holds its stripe from reading the old item to committing).
//! 3. It takes a snapshot and walks the base items of that snapshot in key order,
//!    [`BATCH_ITEMS_MAX`] at a time. For each batch it takes the items' collection locks,
//!    re-reads each item's CURRENT version (not the snapshot's) and puts the index entry
//!    that version implies, all in one write batch. Re-reading under the lock is what makes
//!    every item indexed exactly once: a write that raced the scan has already put the
//!    entry the current item implies (putting it again changes nothing), an item deleted
//!    since the snapshot has no current version and is skipped, and an item created since
//!    the snapshot was indexed by its own write.
//! 4. Items whose index key attribute has the wrong type, an empty S/B value or a value
//!    over the key size limits are skipped (they stay in the table, outside the index).
//! 5. After a complete pass the index becomes `Active`.
//!
//! A backfill stops early (leaving the index CREATING) when the database closes, when its
//! table or index is deleted, or on a storage error; at the next open every index still
//! CREATING is backfilled again from the start, which is idempotent (step 3 writes only
//! what the current items imply). Progress is logged (`tracing`, items/s) and visible as
//! the index's ItemCount in DescribeTable.
//!
//! The backfill holds at most [`BATCH_ITEMS_MAX`] collection locks, only while one batch is
//! read and written, so foreground writes wait at most one small batch commit (plus the
//! compaction back-pressure every writer sees).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use shoal_model::{ApiError, Item};

use crate::core::catalog::{metadata_key, GlobalIndexDef, IndexStatus, TableDef};
use crate::core::catalog::{read_catalog, Catalog};
use crate::core::error::internal;
use crate::core::index::{self, backfill_indexes, Projected};
use crate::core::item_codec::decode_item;
use crate::core::keys::{self, SECTION_BASE};
use crate::core::locks::{CollectionLocks, STRIPES};
use crate::core::stats::{self, Counted, StatsDelta, TableStatistics};
use crate::database::Database;
use shoal_engine::version::VersionEdit;
use shoal_engine::{Db, DbError, Direction, TreeId, WriteBatch};

/// Base items read and indexed per write batch (and collection locks held at once).
pub const BATCH_ITEMS_MAX: usize = 256;
/// How long a write that read the table definition just before the index was added may
/// take to reach its collection lock; the backfill waits this long before its lock barrier.
pub const OLD_DEFINITION_GRACE: Duration = Duration::from_millis(200);
/// Interval between progress log lines.
pub const PROGRESS_LOG_INTERVAL: Duration = Duration::from_secs(5);
/// Backfill threads kept at once (finished ones are pruned first); one per index being
/// created, and UpdateTable creates at most one per call.
pub const BACKFILL_THREADS_MAX: usize = 64;

/// The running backfills of one database. Dropping it stops them and waits for each to
/// finish its current batch.
#[derive(Default)]
pub struct Backfills {
    control: Arc<Control>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Stop and pause requests shared with the backfill threads.
#[derive(Default)]
struct Control {
    stop: AtomicBool,
    paused: Mutex<bool>,
    resumed: Condvar,
}

impl Control {
    /// Waits while backfills are paused; returns false when they must stop.
    fn proceed(&self) -> bool {
        let mut paused = self.paused.lock();
        while *paused && !self.stop.load(Ordering::Acquire) {
            self.resumed.wait(&mut paused);
        }
        !self.stop.load(Ordering::Acquire)
    }
}

impl Drop for Backfills {
    fn drop(&mut self) {
        self.control.stop.store(true, Ordering::Release);
        {
            let _paused = self.control.paused.lock();
            self.control.resumed.notify_all();
        }
        for handle in self.threads.lock().drain(..) {
            // A backfill that panicked left the index CREATING; the next open redoes it.
            let _ = handle.join();
        }
    }
}

/// What one backfill thread needs of the database (shared, so it outlives a request).
struct Context {
    db: Arc<Db>,
    stats: Arc<TableStatistics>,
    catalog: Arc<RwLock<Catalog>>,
    catalog_change: Arc<Mutex<()>>,
    locks: Arc<CollectionLocks>,
    control: Arc<Control>,
}

/// The index a backfill builds: table by id (a table re-created under the same name is
/// another table), index by tree.
#[derive(Debug, Clone)]
struct Target {
    table_id: String,
    index_tree: TreeId,
    kind: Kind,
}

/// What kind of index a backfill builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    GlobalIndex,
    /// The Time to Live expiry index.
    Expiry,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::GlobalIndex => "GSI",
            Kind::Expiry => "expiry index",
        }
    }
}

/// How a backfill ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Completed {
        items: u64,
        indexed: u64,
    },
    /// The table or the index was deleted meanwhile.
    Abandoned,
    /// The database is closing.
    Stopped,
}

impl Database {
    /// Starts the backfill of the GSI in tree `index_tree` of table `table_id`.
    pub(crate) fn start_backfill(&self, table_id: &str, index_tree: TreeId) -> Result<(), DbError> {
        self.start_backfill_of(Target {
            table_id: table_id.to_string(),
            index_tree,
            kind: Kind::GlobalIndex,
        })
    }

    /// Starts the backfill of the Time to Live expiry index in tree `tree` of `table_id`.
    pub(crate) fn start_expiry_backfill(
        &self,
        table_id: &str,
        tree: TreeId,
    ) -> Result<(), DbError> {
        self.start_backfill_of(Target {
            table_id: table_id.to_string(),
            index_tree: tree,
            kind: Kind::Expiry,
        })
    }

    fn start_backfill_of(&self, target: Target) -> Result<(), DbError> {
        let index_tree = target.index_tree;
        let table_id = target.table_id.clone();
        let context = Context {
            db: Arc::clone(&self.db),
            stats: Arc::clone(&self.stats),
            catalog: Arc::clone(&self.catalog),
            catalog_change: Arc::clone(&self.catalog_change),
            locks: Arc::clone(&self.locks),
            control: Arc::clone(&self.control.backfills.control),
        };
        let mut threads = self.control.backfills.threads.lock();
        threads.retain(|handle| !handle.is_finished());
        if threads.len() >= BACKFILL_THREADS_MAX {
            // Cannot happen with one create per UpdateTable and at most 20 GSIs per table
            // unless there are many tables; the index stays CREATING and is built at the
            // next open.
            tracing::warn!(
                %table_id,
                "too many backfills running; this one starts at the next open"
            );
            return Ok(());
        }
        let handle = std::thread::Builder::new()
            .name(format!("shoal-backfill-{index_tree}"))
            .spawn(move || run(&context, &target))
            .map_err(|e| DbError::io("starting a backfill thread", e))?;
        threads.push(handle);
        Ok(())
    }

    /// Starts a backfill for every GSI still CREATING (after a crash or a close).
    pub(crate) fn resume_backfills(&self) -> Result<(), DbError> {
        let creating: Vec<(String, TreeId)> = self
            .catalog
            .read()
            .values()
            .flat_map(|table| {
                table
                    .global_indexes
                    .iter()
                    .filter(|gsi| matches!(gsi.status, IndexStatus::Creating { .. }))
                    .map(|gsi| (table.id.clone(), gsi.tree))
            })
            .collect();
        for (table_id, tree) in creating {
            self.start_backfill(&table_id, tree)?;
        }
        let expiry: Vec<(String, TreeId)> = self
            .catalog
            .read()
            .values()
            .filter_map(|table| {
                let ttl = table.time_to_live.as_ref().filter(|ttl| !ttl.backfilled)?;
                Some((table.id.clone(), ttl.tree))
            })
            .collect();
        for (table_id, tree) in expiry {
            self.start_expiry_backfill(&table_id, tree)?;
        }
        Ok(())
    }

    /// Test hook: while paused, every backfill waits before its next batch and before
    /// marking its index ACTIVE (so tests can observe `Backfilling: true`).
    #[doc(hidden)]
    pub fn pause_backfills(&self, paused: bool) {
        *self.control.backfills.control.paused.lock() = paused;
        self.control.backfills.control.resumed.notify_all();
    }
}

fn run(context: &Context, target: &Target) {
    let started = Instant::now();
    match backfill(context, target) {
        Ok(Outcome::Completed { items, indexed }) => tracing::info!(
            table_id = %target.table_id,
            index_tree = target.index_tree,
            items,
            indexed,
            items_per_second = rate(items, started.elapsed()),
            kind = target.kind.name(),
            "backfill complete; index ACTIVE"
        ),
        Ok(Outcome::Abandoned) => tracing::info!(
            table_id = %target.table_id,
            index_tree = target.index_tree,
            kind = target.kind.name(),
            "backfill abandoned: the table or index was deleted"
        ),
        Ok(Outcome::Stopped) => tracing::info!(
            table_id = %target.table_id,
            index_tree = target.index_tree,
            kind = target.kind.name(),
            "backfill stopped by close; it restarts at the next open"
        ),
        Err(error) => tracing::error!(
            table_id = %target.table_id,
            index_tree = target.index_tree,
            %error,
            kind = target.kind.name(),
            "backfill failed; the index is rebuilt at the next open"
        ),
    }
}

fn rate(items: u64, elapsed: Duration) -> u64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        (items as f64 / seconds) as u64
    } else {
        items
    }
}

fn backfill(context: &Context, target: &Target) -> Result<Outcome, ApiError> {
    if target.kind == Kind::GlobalIndex
        && !set_status(context, target, IndexStatus::Creating { backfilling: true })?
    {
        return Ok(Outcome::Abandoned);
    }
    // Writes that read the definition without the index must be done before the snapshot
    // (module docs, step 2).
    std::thread::sleep(OLD_DEFINITION_GRACE);
    drop(context.locks.lock_many((0..STRIPES).collect()));

    let snapshot = context.db.snapshot();
    let started = Instant::now();
    let mut last_log = started;
    let (mut items, mut indexed) = (0u64, 0u64);
    let mut after: Option<Vec<u8>> = None;
    loop {
        if !context.control.proceed() {
            return Ok(Outcome::Stopped);
        }
        let Some((table, position)) = current(context, target) else {
            return Ok(Outcome::Abandoned);
        };
        // None for the expiry index.
        let gsi = match target.kind {
            Kind::GlobalIndex => match table.global_indexes.get(position) {
                Some(gsi) => Some(gsi),
                None => return Ok(Outcome::Abandoned),
            },
            Kind::Expiry => None,
        };
        // The next batch of base keys at the snapshot, with their partition prefix length.
        let lower = match after.as_deref() {
            Some(key) => Bound::Excluded(key),
            None => Bound::Unbounded,
        };
        let pk_type = table.key.hash.scalar_type();
        let mut cursor = context
            .db
            .iter(
                table.tree,
                lower,
                Bound::Unbounded,
                Direction::Forward,
                Some(&snapshot),
            )
            .map_err(internal)?;
        let mut batch_keys: Vec<(Vec<u8>, usize)> = Vec::with_capacity(BATCH_ITEMS_MAX);
        while batch_keys.len() < BATCH_ITEMS_MAX && cursor.advance().map_err(internal)? {
            let key = cursor.key();
            let (prefix_len, section) = keys::split_table_key(key, pk_type).map_err(internal)?;
            if section == SECTION_BASE {
                batch_keys.push((key.to_vec(), prefix_len));
            }
        }
        drop(cursor);
        let Some((last, _)) = batch_keys.last() else {
            break;
        };
        let last = last.clone();

        let stripes = batch_keys
            .iter()
            .map(|(key, prefix_len)| CollectionLocks::stripe_of(table.tree, &key[..*prefix_len]))
            .collect();
        let guards = context.locks.lock_many(stripes);
        let mut batch = WriteBatch::new();
        let mut counted: BTreeMap<u16, StatsDelta> = BTreeMap::new();
        for (key, prefix_len) in &batch_keys {
            let Some(bytes) = context.db.get(table.tree, key, None).map_err(internal)? else {
                continue; // deleted since the snapshot
            };
            let item = decode_item(&bytes).map_err(internal)?;
            let Some(gsi) = gsi else {
                // The expiry index: an entry for an item with a Number in the attribute,
                // put whether or not a write already did (the same key, an empty value).
                if let Some((tree, entry_key)) = crate::ttl::expiry_entry(&table, &item, key) {
                    batch.put(tree, &entry_key, &[]).map_err(internal)?;
                    indexed += 1;
                }
                continue;
            };
            if let Some((entry_key, entry)) = entry_of(&table, gsi, &item)? {
                // A write since the index was created (or an earlier pass) may have added
                // the entry already, and counted it: count only what this adds.
                let present = match context.db.get_with(gsi.tree, &entry_key, None, |_| ()) {
                    Ok(found) => found.is_some(),
                    // The index was deleted meanwhile: nothing left to build.
                    Err(DbError::UnknownTree(_)) => return Ok(Outcome::Abandoned),
                    Err(error) => return Err(internal(error)),
                };
                if !present {
                    counted
                        .entry(stats::stripe_of(&table, &key[..*prefix_len]))
                        .or_default()
                        .add(Counted::Global(gsi.tree), 1, entry.size_bytes());
                }
                batch
                    .put(gsi.tree, &entry_key, &entry.encode())
                    .map_err(internal)?;
                indexed += 1;
            }
        }
        let added = stats::stage(
            &context.db,
            context.stats.tree()?,
            &table,
            &counted,
            &mut batch,
        )?;
        context.db.write(batch).map_err(internal)?;
        context.stats.committed(&table, &added);
        drop(guards);
        items += batch_keys.len() as u64;
        after = Some(last);

        if last_log.elapsed() >= PROGRESS_LOG_INTERVAL {
            last_log = Instant::now();
            tracing::info!(
                table = %table.name,
                kind = target.kind.name(),
                index_tree = target.index_tree,
                items,
                indexed,
                items_per_second = rate(items, started.elapsed()),
                "GSI backfill in progress"
            );
        }
    }
    if !context.control.proceed() {
        return Ok(Outcome::Stopped);
    }
    if !set_status(context, target, IndexStatus::Active)? {
        return Ok(Outcome::Abandoned);
    }
    Ok(Outcome::Completed { items, indexed })
}

/// The index entry (storage key, projected item) `item` has in `gsi`, if it belongs there.
/// Built with the same functions as the write path's `index::entries_for`.
fn entry_of<'a>(
    table: &TableDef,
    gsi: &GlobalIndexDef,
    item: &'a Item,
) -> Result<Option<(Vec<u8>, Projected<'a>)>, ApiError> {
    if !backfill_indexes(gsi, item) {
        return Ok(None);
    }
    let Some(table_pk) = item.get(&table.key.hash.name) else {
        return Ok(None);
    };
    let table_sk = table.key.range.as_ref().and_then(|r| item.get(&r.name));
    let Some(key) = index::gsi_entry_key(gsi, item, table_pk, table_sk)? else {
        return Ok(None);
    };
    let projected = index::project(table, &gsi.key, &gsi.projection, item);
    Ok(Some((key, projected)))
}

/// The current definition of the target's table and the index's position in it (0 for the
/// expiry index), or None when either is gone.
fn current(context: &Context, target: &Target) -> Option<(Arc<TableDef>, usize)> {
    let catalog = context.catalog.read();
    let table = catalog.values().find(|t| t.id == target.table_id)?;
    if target.kind == Kind::Expiry {
        let ttl = table.time_to_live.as_ref()?;
        return (ttl.tree == target.index_tree).then(|| (Arc::clone(table), 0));
    }
    let position = table
        .global_indexes
        .iter()
        .position(|gsi| gsi.tree == target.index_tree)?;
    Some((Arc::clone(table), position))
}

/// Moves the target index from CREATING to `status` in one durable catalog change; false
/// when the table or index is gone or the index is no longer CREATING.
fn set_status(context: &Context, target: &Target, status: IndexStatus) -> Result<bool, ApiError> {
    let _change = context.catalog_change.lock();
    let Some((table, position)) = current(context, target) else {
        return Ok(false);
    };
    let mut changed = (*table).clone();
    if target.kind == Kind::Expiry {
        // Only the end of the walk changes an expiry index's state.
        let Some(ttl) = changed.time_to_live.as_mut() else {
            return Ok(false);
        };
        if status != IndexStatus::Active || ttl.backfilled {
            return Ok(!ttl.backfilled);
        }
        ttl.backfilled = true;
    } else {
        let Some(gsi) = changed.global_indexes.get_mut(position) else {
            return Ok(false);
        };
        if !matches!(gsi.status, IndexStatus::Creating { .. }) {
            return Ok(false);
        }
        if gsi.status == status {
            return Ok(true);
        }
        gsi.status = status;
    }
    let bytes = changed.to_metadata().map_err(internal)?;
    context
        .db
        .apply_edits(vec![VersionEdit::SetMetadata {
            key: metadata_key(&changed.catalog_key()),
            value: Some(bytes),
        }])
        .map_err(internal)?;
    *context.catalog.write() = read_catalog(&context.db).map_err(internal)?;
    Ok(true)
}
