//! The replication thread: it fills new replicas from their source (`backfill`) and drains
//! every member's outgoing queues into the other members (`apply`), each queued change once
//! its lag has passed.
//!
//! Lag: a change is due `lag` after the write that made it (its stamp's time), `lag` drawn
//! for each change from `--replication-lag-ms`'s range by hashing the change's queue key, so
//! the same change is always due at the same time, across passes and restarts. A queue is
//! drained in order and stops at the first change not yet due, so changes to one item reach
//! a member in the order they were made.
//!
//! Cuts (the admin API's test knob): a queue whose source or destination Region is cut
//! waits; writes in every Region go on and their queues grow. Healing a Region lets them
//! drain; last writer wins settles what was written on both sides meanwhile.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};
use shoal_engine::{Direction, Snapshot};
use shoal_model::{ApiError, ErrorCode};

use crate::core::catalog::{catalog_key, Catalog, ReplicaStatus, TableDef};
use crate::core::clock::now_millis;
use crate::core::error::internal;
use crate::core::item_codec::decode_item;
use crate::core::keys::{self, SECTION_BASE};
use crate::core::locks::STRIPES;
use crate::core::store::Core;
use crate::emulation::lag::Lag;
use crate::replication::apply::{apply_change, stored_stamp, Dequeue};
use crate::replication::disassociate;
use crate::replication::feature::region_of;
use crate::replication::stamp::Stamp;
use crate::replication::tree::{
    decode_entry, queue_destination, queue_prefix, queues_end, queues_start, Change,
};

/// Changes applied from one queue per pass (the others wait their turn).
const QUEUE_BATCH_MAX: usize = 256;
/// Items a backfill copies per pass.
const BACKFILL_BATCH_MAX: usize = 256;
/// The longest the thread sleeps with nothing due (a cut healed, a lag changed).
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// Wakes the replication thread when changes are queued.
#[derive(Default)]
pub(crate) struct Wakeup {
    pending: Mutex<bool>,
    condvar: Condvar,
}

impl Wakeup {
    pub(crate) fn wake(&self) {
        *self.pending.lock() = true;
        self.condvar.notify_one();
    }

    fn wait(&self, timeout: Duration) {
        let mut pending = self.pending.lock();
        if !*pending {
            self.condvar.wait_for(&mut pending, timeout);
        }
        *pending = false;
    }
}

/// What the test knobs and the thread share.
pub(crate) struct Control {
    pub(crate) lag: RwLock<Lag>,
    pub(crate) cut: RwLock<BTreeSet<String>>,
    pub(crate) stop: AtomicBool,
    /// Keys the lag draws (per process: draws differ between runs, not between passes).
    draws: std::collections::hash_map::RandomState,
}

impl Control {
    pub(crate) fn new(lag: Lag) -> Control {
        Control {
            lag: RwLock::new(lag),
            cut: RwLock::new(BTreeSet::new()),
            stop: AtomicBool::new(false),
            draws: Default::default(),
        }
    }

    /// The lag of the change queued under `key` (module docs), in milliseconds.
    fn lag_of(&self, key: &[u8]) -> u64 {
        let lag = *self.lag.read();
        let min = lag.min.as_millis() as u64;
        let span = (lag.max.as_millis() as u64).saturating_sub(min);
        if span == 0 {
            return min;
        }
        let mut hasher = self.draws.build_hasher();
        hasher.write(key);
        min + hasher.finish() % (span + 1)
    }

    fn is_cut(&self, region: &str) -> bool {
        self.cut.read().contains(region)
    }
}

/// The thread's own state: the backfills under way.
#[derive(Default)]
struct Backfills {
    /// Replica TableId → the snapshot of its source it copies, and the last base key done.
    running: HashMap<String, (Arc<Snapshot>, Option<Vec<u8>>)>,
}

/// Where each queue's next pass starts: (source TableId, destination TableId) → the key of
/// the last change the thread applied from it. Without it every pass would seek the queue's
/// start and walk past the tombstones of what earlier passes applied, until compaction
/// dropped them (10,000 queued changes drained at 2,600–8,700 a second). Starting after it
/// misses nothing: a queue entry's key ends with its write's sequence number, and the
/// engine publishes sequence numbers in order, so an entry committed after a pass read the
/// queue sorts after everything that pass saw. Held in memory only: after a restart a
/// queue is read from its start once.
#[derive(Default)]
struct Resume {
    after: HashMap<(String, String), Vec<u8>>,
}

/// Starts the thread.
pub(crate) fn spawn(
    core: Core,
    control: Arc<Control>,
    wakeup: Arc<Wakeup>,
) -> Result<JoinHandle<()>, ApiError> {
    std::thread::Builder::new()
        .name("shoal-replication".into())
        .spawn(move || {
            let mut backfills = Backfills::default();
            let mut resume = Resume::default();
            while !control.stop.load(Ordering::Acquire) {
                let busy = match pass(&core, &control, &mut backfills, &mut resume) {
                    Ok(busy) => busy,
                    Err(error) => {
                        tracing::warn!(%error.message, "replication pass failed; retried");
                        false
                    }
                };
                if !busy {
                    wakeup.wait(IDLE_WAIT);
                }
            }
        })
        .map_err(internal)
}

/// One pass over every member: true when there is more to do at once.
fn pass(
    core: &Core,
    control: &Control,
    backfills: &mut Backfills,
    resume: &mut Resume,
) -> Result<bool, ApiError> {
    let catalog: Catalog = core.catalog.read().clone();
    let mut busy = false;
    backfills
        .running
        .retain(|id, _| catalog.values().any(|table| table.id == *id));
    resume.after.retain(|(source, destination), _| {
        catalog.values().any(|table| table.id == *source)
            && catalog.values().any(|table| table.id == *destination)
    });
    for table in catalog.values() {
        let Some(replication) = &table.replication else {
            continue;
        };
        if replication.status == ReplicaStatus::Creating {
            busy |= backfill_step(core, control, &catalog, table, backfills)?;
        }
        let source_region = region_of(table);
        let live: BTreeSet<&str> = replication
            .members
            .iter()
            .map(|member| member.table_id.as_str())
            .collect();
        purge_orphans(core, table, &live)?;
        // A strong group's writes are applied by their writers (`strong`); what is queued
        // here is a crash's leftover or a writer's race, due at once and never cut.
        let lag = (!replication.strong).then_some(control);
        for member in &replication.members {
            if member.table_id == table.id {
                continue;
            }
            if lag.is_some() && (control.is_cut(source_region) || control.is_cut(&member.region)) {
                continue;
            }
            let Some(destination) = catalog.get(&catalog_key(&table.name, Some(&member.region)))
            else {
                continue;
            };
            if destination.id != member.table_id {
                continue;
            }
            let after = resume
                .after
                .entry((table.id.clone(), destination.id.clone()))
                .or_default();
            match drain(core, lag, table, destination, after) {
                Ok(full) => busy |= full,
                // The destination's definition changed: the next pass reads it again.
                Err(error) if error.code == ErrorCode::InternalServerError => {
                    tracing::debug!(%error.message, "replication waits for the next pass");
                }
                Err(error) => {
                    tracing::error!(
                        table = %table.name,
                        from = source_region,
                        to = region_of(destination),
                        %error.message,
                        "a replicated change cannot be applied; its queue waits"
                    );
                }
            }
        }
        // A member disassociating leaves once what it queued has been applied; the pass
        // ends there, as its catalog names trees that left with it.
        if replication.status == ReplicaStatus::Leaving && disassociate::finish(core, table)? {
            return Ok(true);
        }
    }
    Ok(busy)
}

/// Applies the due changes at the head of `source`'s queue for `destination` (all of them
/// without `lag`: a strong group's); true when a full batch was applied (more may be due).
/// A change that cannot be applied stops the queue and is the error. The queue is read
/// from after the key in `after` (empty: from its start; see [`Resume`]), which is moved
/// past each change applied.
pub(crate) fn drain(
    core: &Core,
    lag: Option<&Control>,
    source: &TableDef,
    destination: &TableDef,
    after: &mut Vec<u8>,
) -> Result<bool, ApiError> {
    let Some(replication) = &source.replication else {
        return Ok(false);
    };
    let prefix = queue_prefix(&destination.id);
    let end = keys::prefix_successor(&prefix).unwrap_or_else(queues_end);
    let start = if after.starts_with(&prefix) {
        Bound::Excluded(after.as_slice())
    } else {
        Bound::Included(prefix.as_slice())
    };
    let entries = core
        .db
        .scan(
            replication.tree,
            start,
            Bound::Excluded(end.as_slice()),
            Direction::Forward,
            None,
            QUEUE_BATCH_MAX,
        )
        .map_err(internal)?;
    let now = now_millis();
    let full = entries.len() == QUEUE_BATCH_MAX;
    for (key, value) in entries {
        let Some((stamp, change)) = decode_entry(&value) else {
            return Err(internal("an undecodable replication queue entry"));
        };
        if lag
            .is_some_and(|control| (stamp.micros / 1000).saturating_add(control.lag_of(&key)) > now)
        {
            return Ok(false);
        }
        let dequeue = Dequeue {
            tree: replication.tree,
            key,
        };
        apply_change(core, destination, &stamp, &change, Some(&dequeue))?;
        *after = dequeue.key;
    }
    Ok(full)
}

/// Deletes the queue entries of `table` for TableIds no member has (a replica deleted),
/// a batch per pass.
fn purge_orphans(core: &Core, table: &TableDef, live: &BTreeSet<&str>) -> Result<(), ApiError> {
    let Some(replication) = &table.replication else {
        return Ok(());
    };
    let start = queues_start();
    let end = queues_end();
    let mut cursor = core
        .db
        .iter(
            replication.tree,
            Bound::Included(start.as_slice()),
            Bound::Excluded(end.as_slice()),
            Direction::Forward,
            None,
        )
        .map_err(internal)?;
    let mut batch = shoal_engine::WriteBatch::new();
    let mut skipped = 0;
    while batch.len() < QUEUE_BATCH_MAX as u64 && cursor.advance().map_err(internal)? {
        let key = cursor.key();
        match queue_destination(key) {
            Some(destination) if !live.contains(destination) => {
                batch.delete(replication.tree, key).map_err(internal)?;
            }
            Some(destination) => {
                // A live queue: jump past it.
                skipped += 1;
                if skipped > QUEUE_BATCH_MAX {
                    break;
                }
                let prefix = queue_prefix(destination);
                let Some(next) = keys::prefix_successor(&prefix) else {
                    break;
                };
                drop(cursor);
                cursor = core
                    .db
                    .iter(
                        replication.tree,
                        Bound::Included(next.as_slice()),
                        Bound::Excluded(end.as_slice()),
                        Direction::Forward,
                        None,
                    )
                    .map_err(internal)?;
            }
            None => break,
        }
    }
    drop(cursor);
    if !batch.is_empty() {
        core.db.write(batch).map_err(internal)?;
    }
    Ok(())
}

/// Copies the next batch of the source's items into a CREATING replica; marks it ACTIVE
/// after the last. True when there is more to copy.
fn backfill_step(
    core: &Core,
    control: &Control,
    catalog: &Catalog,
    replica: &TableDef,
    backfills: &mut Backfills,
) -> Result<bool, ApiError> {
    let Some(replication) = &replica.replication else {
        return Ok(false);
    };
    let Some(source) = replication
        .source
        .as_ref()
        .and_then(|id| catalog.values().find(|table| table.id == *id))
    else {
        // The source left the group before the copy ended: the replica keeps what it got.
        tracing::warn!(table = %replica.name, "replica's source is gone; it becomes ACTIVE as it is");
        mark_active(core, replica)?;
        return Ok(false);
    };
    // A strong group is never cut (`strong`): its replicas fill at once too.
    if !replication.strong
        && (control.is_cut(region_of(source)) || control.is_cut(region_of(replica)))
    {
        return Ok(false);
    }
    let (snapshot, after) = backfills
        .running
        .entry(replica.id.clone())
        .or_insert_with(|| {
            // Every write planned before the replica joined has committed once each
            // collection lock has been free once; what commits later is queued for it.
            drop(core.locks.lock_many((0..STRIPES).collect()));
            (Arc::new(core.db.snapshot()), None)
        });
    let lower = match after.as_deref() {
        Some(key) => Bound::Excluded(key),
        None => Bound::Unbounded,
    };
    let pk_type = source.key.hash.scalar_type();
    let mut items = Vec::with_capacity(BACKFILL_BATCH_MAX);
    {
        let mut cursor = core
            .db
            .iter(
                source.tree,
                lower,
                Bound::Unbounded,
                Direction::Forward,
                Some(snapshot),
            )
            .map_err(internal)?;
        while items.len() < BACKFILL_BATCH_MAX && cursor.advance().map_err(internal)? {
            let key = cursor.key();
            let (_, section) = keys::split_table_key(key, pk_type).map_err(internal)?;
            if section == SECTION_BASE {
                items.push((key.to_vec(), decode_item(cursor.value()).map_err(internal)?));
            }
        }
    }
    let source_region = region_of(source);
    for (base_key, item) in &items {
        let stamp = stored_stamp(core, source, base_key, Some(snapshot))?
            .unwrap_or_else(|| Stamp::origin(source_region));
        apply_change(core, replica, &stamp, &Change::Put(item.clone()), None)?;
        *after = Some(base_key.clone());
    }
    if items.len() == BACKFILL_BATCH_MAX {
        return Ok(true);
    }
    backfills.running.remove(&replica.id);
    mark_active(core, replica)?;
    tracing::info!(table = %replica.name, region = region_of(replica), "replica filled; ACTIVE");
    Ok(false)
}

/// Stores `replica` ACTIVE, if it is still the CREATING member it was.
fn mark_active(core: &Core, replica: &TableDef) -> Result<(), ApiError> {
    let _change = core.catalog_change.lock();
    let Some(current) = core.catalog.read().get(&replica.catalog_key()).cloned() else {
        return Ok(());
    };
    if current.id != replica.id {
        return Ok(());
    }
    let mut changed = TableDef::clone(&current);
    let Some(replication) = changed.replication.as_mut() else {
        return Ok(());
    };
    if replication.status != ReplicaStatus::Creating {
        return Ok(());
    }
    replication.status = ReplicaStatus::Active;
    replication.source = None;
    core.store_definition(&changed)
}
