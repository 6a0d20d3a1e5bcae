//! Multi-Region strong consistency (SPEC-3 §2.5): a global table of exactly three Regions
//! (three members, or two and a witness), declared when the group forms, whose writes are
//! applied in every member before they are acknowledged.
//!
//! A strong write rides on the asynchronous machinery (`feature`, `apply`) and only waits
//! for it:
//!
//! 1. Before the write, it claims its item across the group (`StrongWrites`): a write to an
//!    item another Region's write holds is refused with ReplicatedWriteConflictException,
//!    as DynamoDB refuses a write "being modified by a request in another Region". Writes
//!    from one Region queue behind each other on the item's collection lock as usual.
//! 2. The write commits in its own Region with one queue entry per other member in the
//!    same WAL record, exactly as an MREC write does.
//! 3. With its collection lock released (an apply takes the destination's lock, and the
//!    locks are not re-entrant), the writer drains its member's queues to every other
//!    member at once, lag and cuts ignored (`replicate_strongly`), each change applied
//!    with its dequeue in one batch, and only then answers.
//!
//! Why a crash can neither lose nor double an acknowledged write: the local write and its
//! queue entries are one WAL record, so after a crash either neither exists (the write was
//! never acknowledged) or both do; each apply and its dequeue are one WAL record, so an
//! entry is applied exactly while it is dequeued; an entry applied twice (the writer and
//! the replication thread racing) is dropped the second time by the item's stamp. A write
//! is acknowledged only after every member's apply returned, and each apply is synced as
//! every write is, so an acknowledged write is durable in every member. What a crash
//! leaves queued (a write committed but not yet acknowledged) is applied everywhere when
//! the database opens, before it serves a request (`settle`): a strongly consistent read
//! in any Region never sees a member behind another.
//!
//! Restrictions (§2.5): the table must be empty and have no LSIs or Time to Live when the
//! group forms; Time to Live cannot be enabled later and transactions are refused; the
//! mode never changes, no replica joins later, and the group is taken apart only by one
//! UpdateTable deleting every other member and the witness.

use std::collections::HashMap;
use std::ops::Bound;

use parking_lot::Mutex;
use shoal_engine::Direction;
use shoal_model::{ApiError, ErrorCode};

use crate::core::catalog::{catalog_key, MemberDef, TableDef};
use crate::core::error::internal;
use crate::core::plan::ItemKey;
use crate::database::Database;
use crate::replication::members::WitnessChange;
use crate::replication::regions::{is_supported, unsupported_message};
use crate::replication::worker::drain;

/// DescribeTable's `MultiRegionConsistency` of a strong group.
pub const STRONG: &str = "STRONG";
/// At most one witness per group (SPEC-3 §2.1).
pub const WITNESSES_MAX: usize = 1;
/// A strong group spans exactly this many Regions, its witness's included.
pub const GROUP_REGIONS: usize = 3;
/// Queue batches one strong write drains per member before it gives up (each batch
/// applies up to `worker::QUEUE_BATCH_MAX` changes; other writers drain too).
const DRAIN_PASSES_MAX: usize = 1024;
/// Times a strong write re-reads a member's definition changed under it.
const DEFINITION_RETRIES_MAX: usize = 16;

/// The Region sets a strong group's Regions all come from (SPEC-3 §2.5: US, EU, AP).
pub const REGION_SETS: &[(&str, &[&str])] = &[
    ("US", &["us-east-1", "us-east-2", "us-west-2"]),
    (
        "EU",
        &["eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1"],
    ),
    (
        "AP",
        &["ap-northeast-1", "ap-northeast-2", "ap-northeast-3"],
    ),
];

pub const WITNESS_NEEDS_STRONG: &str =
    "MultiRegionConsistency must be set as STRONG when GlobalTableWitnessUpdates parameter is present.";
pub const ONLY_CREATES: &str =
    "Only Replica Create actions are supported when MultiRegionConsistency parameter is provided.";
pub const CANNOT_ADD_REPLICAS: &str =
    "Cannot add replicas to a global table with strong MultiRegionConsistency";
pub const UNSUPPORTED_ON_EXISTING: &str =
    "MultiRegionConsistency parameter is unsupported on existing global table";
pub const NOT_ALL_WITNESSES: &str = "Update table delete operation does not include all witnesses.";
/// Shoal's words (SPEC-3 §2.3 gives only the witness text): a teardown leaving a replica.
pub const NOT_ALL_REPLICAS: &str = "Update table delete operation does not include all replicas.";
pub const DELETE_ONE_MEMBER_MESSAGE: &str = "Deletion of only one table replica is not supported for global tables with MultiRegionConsistency set to STRONG.";
/// The exception's text (SPEC-3 §2.5 quotes "being modified by a request in another
/// Region"; the rest is Shoal's).
pub const CONFLICT_MESSAGE: &str =
    "The item is being modified by a request in another Region. Retry the request.";
const INVALID: &str = "One or more parameter values were invalid:";

/// The text refusing `what` ("Time to Live is", "Transactions are") on a strong group.
pub(crate) fn not_supported_message(what: &str) -> String {
    format!("{INVALID} {what} not supported for global tables with MultiRegionConsistency set to STRONG")
}

/// Refuses `what` on a member of a strong group (Time to Live, transactions).
pub(crate) fn refuse(table: &TableDef, what: &str) -> Result<(), ApiError> {
    if table.replication.as_ref().is_some_and(|r| r.strong) {
        return Err(ApiError::validation(not_supported_message(what)));
    }
    Ok(())
}

/// Checks the Regions of a strong group being formed from `local`: the count, the
/// witness's Region, the Region set.
pub(crate) fn check_group_shape(
    local: &str,
    targets: &[String],
    witness: Option<&WitnessChange>,
) -> Result<(), ApiError> {
    let witness = match witness {
        None => None,
        Some(WitnessChange::Create(region)) => Some(region.as_str()),
        Some(WitnessChange::Delete(region)) => {
            return Err(ApiError::validation(
                crate::replication::members::not_members_message(&[region.as_str()]),
            ))
        }
    };
    let count = 1 + targets.len() + usize::from(witness.is_some());
    if count != GROUP_REGIONS {
        return Err(ApiError::validation(format!(
            "Unsupported replica count {count} for global tables with MultiRegionConsistency set to STRONG: exactly {GROUP_REGIONS} Regions are required (two replicas, or one replica and a witness), the table's own included."
        )));
    }
    let Some(witness) = witness else {
        return check_region_set(local, targets.iter().map(String::as_str));
    };
    if witness == local || targets.iter().any(|target| target == witness) {
        return Err(ApiError::validation(format!(
            "Cannot add a witness in the same region as an existing replica: {witness}."
        )));
    }
    if !is_supported(witness) {
        return Err(ApiError::validation(unsupported_message(witness)));
    }
    check_region_set(local, targets.iter().map(String::as_str).chain([witness]))
}

/// Every Region of a strong group in one of [`REGION_SETS`] with `local`.
fn check_region_set<'a>(
    local: &str,
    others: impl Iterator<Item = &'a str>,
) -> Result<(), ApiError> {
    let set = REGION_SETS
        .iter()
        .find(|(_, regions)| regions.contains(&local));
    let mut outside = Vec::new();
    for region in others {
        if !set.is_some_and(|(_, regions)| regions.contains(&region)) {
            outside.push(region);
        }
    }
    if set.is_some() && outside.is_empty() {
        return Ok(());
    }
    let sets: Vec<String> = REGION_SETS
        .iter()
        .map(|(name, regions)| format!("{name}: [{}]", regions.join(", ")))
        .collect();
    Err(ApiError::validation(format!(
        "{INVALID} The Regions of a global table with MultiRegionConsistency set to STRONG must all belong to one Region set ({}); {local} and [{}] do not",
        sets.join("; "),
        outside.join(", ")
    )))
}

/// A strong group is taken apart by one request deleting every other member and the
/// witness (SPEC-3 §2.3).
pub(crate) fn check_teardown(
    local: &str,
    members: &[MemberDef],
    targets: &[String],
    group_witness: Option<&str>,
    witness: Option<&WitnessChange>,
) -> Result<(), ApiError> {
    let all_replicas = members
        .iter()
        .filter(|member| member.region != local)
        .all(|member| targets.contains(&member.region));
    if !all_replicas {
        return Err(ApiError::validation(NOT_ALL_REPLICAS));
    }
    let witness_deleted = matches!(witness, Some(WitnessChange::Delete(region)) if Some(region.as_str()) == group_witness);
    if group_witness.is_some() && !witness_deleted {
        return Err(ApiError::validation(NOT_ALL_WITNESSES));
    }
    Ok(())
}

/// An item of a strong group: the group's name (`group_of`) and the item's base key.
type GroupItem = (String, Vec<u8>);

/// The items strong writes hold: the Region writing each and how many of its writes do
/// (module docs, step 1).
#[derive(Default)]
pub(crate) struct StrongWrites {
    items: Mutex<HashMap<GroupItem, (String, usize)>>,
}

/// A strong write's hold on its items; released when dropped.
pub(crate) struct StrongClaim<'a> {
    writes: &'a StrongWrites,
    items: Vec<GroupItem>,
}

impl Drop for StrongClaim<'_> {
    fn drop(&mut self) {
        let mut held = self.writes.items.lock();
        for item in &self.items {
            if let Some((_, count)) = held.get_mut(item) {
                *count -= 1;
                if *count == 0 {
                    held.remove(item);
                }
            }
        }
    }
}

impl StrongWrites {
    /// Holds `items` (group, base key) for a write from `region`, or
    /// ReplicatedWriteConflictException, holding nothing, if another Region's write holds
    /// one of them.
    fn claim(&self, region: &str, items: Vec<GroupItem>) -> Result<StrongClaim<'_>, ApiError> {
        let mut held = self.items.lock();
        let taken = items.iter().any(|item| {
            held.get(item)
                .is_some_and(|(holder, _)| holder.as_str() != region)
        });
        if taken {
            return Err(ApiError::new(
                ErrorCode::ReplicatedWriteConflictException,
                CONFLICT_MESSAGE,
            ));
        }
        for item in &items {
            held.entry(item.clone())
                .or_insert_with(|| (region.to_string(), 0))
                .1 += 1;
        }
        drop(held);
        Ok(StrongClaim {
            writes: self,
            items,
        })
    }
}

/// The name of `table`'s group in [`StrongWrites`]: its first member's TableId, the same
/// in every member.
fn group_of(table: &TableDef) -> Option<String> {
    let replication = table.replication.as_ref().filter(|r| r.strong)?;
    replication
        .members
        .iter()
        .map(|member| member.table_id.clone())
        .min()
}

impl Database {
    /// Claims `keys` of `table` for a write (module docs, step 1): None unless the table is
    /// a member of a strong group.
    pub(crate) fn claim_strong<'k>(
        &self,
        table: &TableDef,
        keys: impl IntoIterator<Item = &'k ItemKey>,
    ) -> Result<Option<StrongClaim<'_>>, ApiError> {
        let Some(group) = group_of(table) else {
            return Ok(None);
        };
        let mut items = Vec::new();
        for key in keys {
            items.push((group.clone(), key.base_key()?));
        }
        let region = crate::replication::feature::region_of(table);
        self.replication.strong.claim(region, items).map(Some)
    }

    /// Applies in every other member what `table`'s member has queued for it, now (module
    /// docs, step 3): nothing for a table in no strong group. The caller holds no
    /// collection lock.
    pub(crate) fn replicate_strongly(&self, table: &TableDef) -> Result<(), ApiError> {
        if !table.replication.as_ref().is_some_and(|r| r.strong) {
            return Ok(());
        }
        for _ in 0..DEFINITION_RETRIES_MAX {
            let catalog = self.catalog.read().clone();
            // The member as it is now: the write committed under it (its definition is
            // checked at commit).
            let Some(source) = catalog
                .get(&table.catalog_key())
                .filter(|t| t.id == table.id)
            else {
                return Ok(());
            };
            let Some(replication) = &source.replication else {
                return Ok(());
            };
            let mut stale = false;
            for member in &replication.members {
                if member.table_id == source.id {
                    continue;
                }
                let Some(destination) = catalog
                    .get(&catalog_key(&source.name, Some(&member.region)))
                    .filter(|d| d.id == member.table_id)
                else {
                    continue;
                };
                let mut drained = false;
                for _ in 0..DRAIN_PASSES_MAX {
                    match drain(&self.core, None, source, destination, &mut Vec::new()) {
                        Ok(true) => {}
                        Ok(false) => {
                            drained = true;
                            break;
                        }
                        // A definition changed under the apply: read the catalog again.
                        Err(error) if error.code == ErrorCode::InternalServerError => {
                            stale = true;
                            break;
                        }
                        Err(error) => return Err(error),
                    }
                }
                if !drained && !stale {
                    return Err(internal(
                        "a strong write's queue did not drain; the replication thread applies it",
                    ));
                }
            }
            if !stale {
                return Ok(());
            }
        }
        Err(internal(
            "a strong write could not be applied in every Region; the replication thread applies it",
        ))
    }

    /// Applies everything strong groups have queued (at open, before the first request:
    /// module docs).
    pub(crate) fn settle_strong_groups(&self) -> Result<(), ApiError> {
        let strong: Vec<_> = self
            .catalog
            .read()
            .values()
            .filter(|table| table.replication.as_ref().is_some_and(|r| r.strong))
            .cloned()
            .collect();
        for table in strong {
            self.replicate_strongly(&table)?;
        }
        Ok(())
    }

    /// The table a strong group forms from: empty, no LSIs, no Time to Live (module docs).
    pub(crate) fn check_strong_source(&self, table: &TableDef) -> Result<(), ApiError> {
        if !table.local_indexes.is_empty() {
            return Err(ApiError::validation(not_supported_message(
                "Local secondary indexes are",
            )));
        }
        if table.time_to_live.is_some() {
            return Err(ApiError::validation(not_supported_message(
                "Time to Live is",
            )));
        }
        let any = self
            .db
            .scan(
                table.tree,
                Bound::Unbounded,
                Bound::Unbounded,
                Direction::Forward,
                None,
                1,
            )
            .map_err(internal)?;
        if !any.is_empty() {
            return Err(ApiError::validation(format!(
                "{INVALID} A table must be empty to become a global table with MultiRegionConsistency set to STRONG; {} holds items",
                table.name
            )));
        }
        Ok(())
    }
}
