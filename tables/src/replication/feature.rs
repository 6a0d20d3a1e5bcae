//! Replication's part in every write (`core::feature`): a write to a member of a global
//! table stamps the item and queues the change for every other member, in the write's own
//! batch (`tree` has the format), so a write is queued exactly when it commits.

use std::sync::Arc;

use shoal_model::Item;

use shoal_engine::TreeId;

use crate::core::catalog::{MemberDef, ReplicaStatus, TableDef};
use crate::core::feature::{Feature, Initiator, ItemChange};
use crate::core::item_codec::encode_item;
use crate::core::plan::{Mutation, WritePlan};
use crate::core::region::ARN_REGION;
use crate::replication::stamp::Stamp;
use crate::replication::tree::{encode_entry, queue_prefix, stamp_key};
use crate::replication::worker::Wakeup;

/// The feature registered at open; it wakes the replication thread when entries commit.
pub struct ReplicationLog {
    pub(crate) wakeup: Arc<Wakeup>,
}

/// The Region a member is kept in (a member always has one; `ddblocal` otherwise).
pub(crate) fn region_of(table: &TableDef) -> &str {
    table.region.as_deref().unwrap_or(ARN_REGION)
}

impl Feature for ReplicationLog {
    fn plan(&self, change: &ItemChange<'_>, mutations: &mut Vec<Mutation>) {
        let Some(replication) = &change.table.replication else {
            return;
        };
        // A replicated write is stamped and dequeued by the applier (`apply`), and never
        // queued again: its origin queued it for every member.
        if change.initiator == Initiator::Replication {
            return;
        }
        let Some(image) = change.new.or(change.old) else {
            return;
        };
        let stamp = Stamp::now(region_of(change.table));
        mutations.push(Mutation::Put {
            tree: replication.tree,
            key: stamp_key(change.base_key),
            value: stamp.encode(),
        });
        let value = match change.new {
            Some(new) => {
                let encoded;
                let bytes = match change.new_encoded {
                    Some(bytes) => bytes,
                    None => {
                        encoded = encode_item(new);
                        &encoded
                    }
                };
                encode_entry(&stamp, Some(bytes), new)
            }
            None => encode_entry(&stamp, None, &key_attributes(change.table, image)),
        };
        // A member disassociating stamps its writes (last writer wins still judges what
        // reaches it meanwhile) but queues them for nobody (`disassociate`).
        if replication.status == ReplicaStatus::Leaving {
            return;
        }
        for member in &replication.members {
            if member.table_id != change.table.id {
                mutations.push(Mutation::PutSequenced {
                    tree: replication.tree,
                    prefix: queue_prefix(&member.table_id),
                    value: value.clone(),
                });
            }
        }
    }

    /// A member joined or left, the table joined or left its group, or it began to
    /// disassociate, since the plan: the plan would queue for the wrong members.
    fn plans_still_hold(&self, planned: &TableDef, current: &TableDef) -> bool {
        queues_of(planned) == queues_of(current)
    }

    fn committed(&self, table: &TableDef, plans: &[&WritePlan]) {
        if table.replication.is_some() && !plans.is_empty() {
            self.wakeup.wake();
        }
    }
}

/// What decides the queue entries a write plans: the replication tree, the members, and
/// whether the member is disassociating.
fn queues_of(table: &TableDef) -> Option<(TreeId, &[MemberDef], bool)> {
    table.replication.as_ref().map(|r| {
        (
            r.tree,
            r.members.as_slice(),
            r.status == ReplicaStatus::Leaving,
        )
    })
}

/// The key attributes of `item` (what a queued delete carries).
pub(crate) fn key_attributes(table: &TableDef, item: &Item) -> Item {
    table
        .key
        .names()
        .filter_map(|name| Some((name.to_string(), item.get(name)?.clone())))
        .collect()
}
