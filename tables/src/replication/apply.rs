//! Applying one replicated change to a member: last writer wins by the items' stamps
//! (`stamp`), and the change, the item's new stamp and the removal of the queue entry that
//! brought it are ONE batch (DESIGN.md §7, invariant 11): after any crash the entry is
//! either still queued and the item untouched, or gone and the change applied, so each
//! change reaches each member exactly once.
//!
//! A change older than (or as old as) the item's stamp at the destination is not applied;
//! its queue entry is still removed. Applying the same change twice (a backfill run again
//! after a crash) is thus harmless: the second finds its own stamp and changes nothing, and
//! adds no second stream record.

use shoal_engine::{TreeId, WriteBatch};
use shoal_model::{ApiError, Item};

use crate::core::catalog::TableDef;
use crate::core::error::internal;
use crate::core::feature::Initiator;
use crate::core::plan::Mutation;
use crate::core::store::Core;
use crate::core::write::{key_of_item, plan_write_by};
use crate::replication::stamp::Stamp;
use crate::replication::tree::{stamp_key, Change};

/// A queue entry to remove with the change it carried.
pub(crate) struct Dequeue {
    pub tree: TreeId,
    pub key: Vec<u8>,
}

/// What became of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// Written at the destination.
    Written,
    /// Older than what the destination holds: dropped (last writer wins).
    Superseded,
}

/// The stamp of the item at `base_key` in `table` (a member), if it has one.
pub(crate) fn stored_stamp(
    core: &Core,
    table: &TableDef,
    base_key: &[u8],
    snapshot: Option<&shoal_engine::Snapshot>,
) -> Result<Option<Stamp>, ApiError> {
    let Some(replication) = &table.replication else {
        return Ok(None);
    };
    let bytes = core
        .db
        .get(replication.tree, &stamp_key(base_key), snapshot)
        .map_err(internal)?;
    Ok(bytes.and_then(|bytes| Stamp::decode(&bytes).map(|(stamp, _)| stamp)))
}

/// Applies `change`, stamped `stamp`, to `destination` unless the item there is as new or
/// newer; removes `dequeue` in the same batch either way. The caller passes the
/// destination's current definition; a stale one is refused and nothing is written.
pub(crate) fn apply_change(
    core: &Core,
    destination: &TableDef,
    stamp: &Stamp,
    change: &Change,
    dequeue: Option<&Dequeue>,
) -> Result<Applied, ApiError> {
    let Some(replication) = &destination.replication else {
        return Err(internal("replicating into a table in no global table"));
    };
    let key = key_of_item(destination, change.item())?;
    let base_key = key.base_key()?;
    let prefix = key.partition_prefix()?;
    {
        let _lock = core.locks.lock(destination.tree, &prefix);
        let newer =
            stored_stamp(core, destination, &base_key, None)?.is_none_or(|stored| *stamp > stored);
        if !newer {
            if let Some(dequeue) = dequeue {
                let mut batch = WriteBatch::new();
                batch.delete(dequeue.tree, &dequeue.key).map_err(internal)?;
                core.db.write(batch).map_err(internal)?;
            }
            return Ok(Applied::Superseded);
        }
        let old = core.read_replaced_item(destination, &key)?;
        let new: Option<&Item> = match change {
            Change::Put(item) => Some(item),
            Change::Delete(_) => None,
        };
        let mut plan = plan_write_by(
            &core.features,
            destination,
            &key,
            old.as_ref(),
            new,
            false,
            Initiator::Replication,
        )?;
        plan.mutations.push(Mutation::Put {
            tree: replication.tree,
            key: stamp_key(&base_key),
            value: stamp.encode(),
        });
        if let Some(dequeue) = dequeue {
            plan.mutations.push(Mutation::Delete {
                tree: dequeue.tree,
                key: dequeue.key.clone(),
            });
        }
        // Refused, changing nothing, if the destination's definition changed meanwhile:
        // the replication thread reads the catalog again and retries.
        core.commit_plans(destination, &[&plan], false)?;
        Ok(Applied::Written)
    }
}
