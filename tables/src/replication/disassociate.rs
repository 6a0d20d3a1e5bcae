//! ReplicaUpdates `Disassociate {RegionName, DisassociationMode: "WAIT_FOR_REPLICATION"}`
//! (SPEC-3 §2.1): the caller's member leaves its global table and stays a table of its
//! Region, with its items; the other members drop it. It must be the only replica update.
//!
//! WAIT_FOR_REPLICATION: what the member wrote before the request still reaches the others.
//! Two durable steps, each ONE version change:
//!
//! 1. UpdateTable stores the member `Leaving` (its `ReplicationDef::status`). From then on
//!    its writes are stamped but queued for nobody (`feature`; a write planned before is
//!    planned again, its definition having changed). The others still send it theirs.
//! 2. The replication thread drains what the member had queued, as for any member (cuts
//!    and lag apply: a cut Region delays the end); once every lock stripe has been free
//!    once after step 1 (no write planned under the old definition is still to commit) and
//!    its queues are empty, [`finish`] stores it without its group (`replication` None),
//!    each other member without it, and drops its replication tree (and the last other
//!    member's, left alone, as a Delete does: `Core::leave_group`).
//!
//! A crash between the two leaves the member `Leaving`; the replication thread, started at
//! open because a group exists, finishes it. Queue entries the others held for it are
//! removed as any departed member's (`worker::purge_orphans`).

use std::ops::Bound;

use shoal_engine::version::VersionEdit;
use shoal_engine::Direction;
use shoal_model::{ApiError, ErrorCode};

use crate::core::catalog::{metadata_key, ReplicaStatus, TableDef};
use crate::core::error::internal;
use crate::core::locks::STRIPES;
use crate::core::store::Core;
use crate::database::Database;
use crate::replication::tree::{queues_end, queues_start};

/// The one value `DisassociationMode` takes (API model, 2026).
pub const DISASSOCIATION_MODES: &[&str] = &["WAIT_FOR_REPLICATION"];

/// Shoal's words (SPEC-3 says only "must be the only replica update"): a Disassociate
/// beside another replica or witness update.
pub const DISASSOCIATE_ALONE: &str = "One or more parameter values were invalid: Disassociate must be the only replica update in the request";

/// Shoal's words: a Disassociate naming another Region than the one the request was sent
/// to (only the local member can be made standalone).
fn not_local_message(local: &str) -> String {
    format!(
        "One or more parameter values were invalid: Disassociate can only name the region the request was sent to: {local}"
    )
}

/// Shoal's words, after SPEC-3 §2.3's DeleteTable text for strong groups.
pub const STRONG_GROUP_MESSAGE: &str =
    "Disassociation of a replica is not supported for global tables with MultiRegionConsistency set to STRONG.";

/// The text of a replica action while a member is disassociating (SPEC-3 §2.1: AWS's bare
/// text on global tables).
pub const IN_USE_MESSAGE: &str = "The resource which you are attempting to change is in use.";

impl Database {
    /// Step 1 (module docs) for `table`, the caller's member in `local`; `region` is the
    /// Region the action names. The caller holds `catalog_change` and has checked that no
    /// member is CREATING.
    pub(crate) fn disassociate(
        &self,
        table: &TableDef,
        local: &str,
        region: &str,
        not_member: impl FnOnce() -> String,
    ) -> Result<(), ApiError> {
        let Some(replication) = &table.replication else {
            return Err(ApiError::validation(not_member()));
        };
        if region != local {
            return Err(ApiError::validation(not_local_message(local)));
        }
        if replication.strong {
            return Err(ApiError::validation(STRONG_GROUP_MESSAGE));
        }
        if replication.status == ReplicaStatus::Leaving {
            return Err(ApiError::new(
                ErrorCode::ResourceInUseException,
                IN_USE_MESSAGE,
            ));
        }
        let mut changed = table.clone();
        if let Some(replication) = changed.replication.as_mut() {
            replication.status = ReplicaStatus::Leaving;
        }
        self.store_definition(&changed)?;
        self.replication.wakeup.wake();
        tracing::info!(table = %table.name, region = local, "replica disassociating");
        Ok(())
    }
}

/// Step 2 (module docs) for `table`, a `Leaving` member, once its queues look empty; true
/// when it left the group. Called by the replication thread after its drains.
pub(crate) fn finish(core: &Core, table: &TableDef) -> Result<bool, ApiError> {
    let Some(replication) = &table.replication else {
        return Ok(false);
    };
    if replication.status != ReplicaStatus::Leaving || !queues_empty(core, replication.tree)? {
        return Ok(false);
    }
    // Every write planned under the definition before `Leaving` has committed (and queued)
    // once each stripe has been free once; later ones queue nothing.
    drop(core.locks.lock_many((0..STRIPES).collect()));
    let _change = core.catalog_change.lock();
    let Some(current) = core.catalog.read().get(&table.catalog_key()).cloned() else {
        return Ok(false);
    };
    let still_leaving = current.id == table.id
        && current
            .replication
            .as_ref()
            .is_some_and(|r| r.status == ReplicaStatus::Leaving && r.tree == replication.tree);
    if !still_leaving || !queues_empty(core, replication.tree)? {
        return Ok(false);
    }
    let (trees, mut edits) = core.leave_group(&[&current])?;
    let mut standalone = TableDef::clone(&current);
    standalone.replication = None;
    edits.push(VersionEdit::SetMetadata {
        key: metadata_key(&standalone.catalog_key()),
        value: Some(standalone.to_metadata().map_err(internal)?),
    });
    core.db.drop_trees_with(&trees, edits).map_err(internal)?;
    core.reload_catalog().map_err(internal)?;
    tracing::info!(
        table = %table.name,
        region = ?table.region,
        "replica disassociated; it is a table of its Region"
    );
    Ok(true)
}

/// Whether replication tree `tree` queues nothing for anyone.
fn queues_empty(core: &Core, tree: shoal_engine::TreeId) -> Result<bool, ApiError> {
    let (start, end) = (queues_start(), queues_end());
    let mut cursor = core
        .db
        .iter(
            tree,
            Bound::Included(start.as_slice()),
            Bound::Excluded(end.as_slice()),
            Direction::Forward,
            None,
        )
        .map_err(internal)?;
    Ok(!cursor.advance().map_err(internal)?)
}
