//! Settings a global table shares (SPEC-3 §2.1): Time to Live, GSI creation and deletion
//! (and a GSI's throughput), billing mode, the table's provisioned write and read capacity,
//! OnDemandThroughput and the table class change in every member, whichever member's
//! endpoint the request was sent to. Tags, point-in-time recovery, resource policies,
//! Contributor Insights and deletion protection stay with the member they were set on.
//!
//! A group-wide change is checked against the caller's member, then each member's new
//! definition is made from its own current one (a GSI or an expiry index gets a tree of
//! the member's own, which the member fills from its own items) and all of them are
//! stored in ONE version change (`Core::store_definitions_dropping`,
//! `store_definitions_with_trees`), as a ReplicaUpdates Create stores every member's: a
//! crash leaves every member as it was or every member changed.
//!
//! While a member is being added (CREATING, filled from its source's snapshot) or is
//! disassociating, such a change is refused with ResourceInUseException and AWS's bare text
//! for global tables (SPEC-3 §2.1 gives it for deletion protection and table class changes
//! while a replica is CREATING; Shoal applies it to every group-wide change [U]).

use shoal_model::{ApiError, ErrorCode};

use crate::core::catalog::{catalog_key, BillingMode, ReplicaStatus, TableDef};
use crate::core::error::internal;
use crate::database::Database;
use crate::replication::disassociate::IN_USE_MESSAGE;

impl Database {
    /// The definitions a group-wide setting of `table` changes: `table` first, then every
    /// other member's current definition (`table` alone when it is in no group). Refuses
    /// while a member is being added or is leaving (module docs). The caller holds
    /// `catalog_change`.
    pub(crate) fn settings_members(&self, table: &TableDef) -> Result<Vec<TableDef>, ApiError> {
        self.refuse_while_members_change(table)?;
        let mut members = vec![table.clone()];
        let Some(replication) = &table.replication else {
            return Ok(members);
        };
        let catalog = self.catalog.read();
        for member in replication
            .members
            .iter()
            .filter(|m| m.table_id != table.id)
        {
            let Some(other) = catalog.get(&catalog_key(&table.name, Some(&member.region))) else {
                return Err(internal("a member's table is missing from the catalog"));
            };
            members.push(TableDef::clone(other));
        }
        Ok(members)
    }

    /// Refuses a change of `table` while a member of its group is being added or is
    /// leaving: ResourceInUseException with AWS's bare text (module docs).
    pub(crate) fn refuse_while_members_change(&self, table: &TableDef) -> Result<(), ApiError> {
        if self.busy_member(table).is_some() {
            return Err(ApiError::new(
                ErrorCode::ResourceInUseException,
                IN_USE_MESSAGE,
            ));
        }
        Ok(())
    }

    /// The first member of `table`'s group that is not ACTIVE (being added or leaving),
    /// with its Region and state.
    pub(crate) fn busy_member(&self, table: &TableDef) -> Option<(String, ReplicaStatus)> {
        let replication = table.replication.as_ref()?;
        let catalog = self.catalog.read();
        replication.members.iter().find_map(|member| {
            let status = catalog
                .get(&catalog_key(&table.name, Some(&member.region)))?
                .replication
                .as_ref()?
                .status;
            (status != ReplicaStatus::Active).then(|| (member.region.clone(), status))
        })
    }
}

/// Gives `member` the capacity settings of `changed` (the caller's member after the
/// request's capacity changes): billing mode, the table's throughput, on-demand caps and
/// their history, each GSI's throughput and caps; then drops the member's read overrides
/// the new mode no longer allows (module docs).
pub(crate) fn share_capacity(changed: &TableDef, member: &mut TableDef) {
    member.billing = changed.billing;
    member.settings.capacity = changed.settings.capacity.clone();
    member.settings.pay_per_request_since_millis = changed.settings.pay_per_request_since_millis;
    for gsi in &mut member.global_indexes {
        if let Some(shared) = changed.global_index(&gsi.name) {
            gsi.throughput = shared.throughput;
            gsi.capacity = shared.capacity.clone();
        }
    }
    fit_overrides_to_billing(member);
}

/// Drops `table`'s read overrides its billing mode does not allow: a provisioned read
/// override on an on-demand table, an on-demand read cap on a provisioned one (what
/// ReplicaUpdates refuses to set, `overrides`) [U: AWS's behaviour on a mode switch is not
/// documented].
fn fit_overrides_to_billing(table: &mut TableDef) {
    let on_demand = matches!(table.billing, BillingMode::PayPerRequest);
    let Some(overrides) = table.replication.as_mut().map(|r| &mut r.overrides) else {
        return;
    };
    if on_demand {
        overrides.read_capacity_units = None;
    } else {
        overrides.max_read_request_units = None;
    }
    for index in &mut overrides.indexes {
        if on_demand {
            index.read_capacity_units = None;
        } else {
            index.max_read_request_units = None;
        }
    }
    overrides.forget_empty_indexes();
}

/// Gives `member` the table class of `changed`; its TableClassOverride, if any, stays.
pub(crate) fn share_table_class(changed: &TableDef, member: &mut TableDef) {
    member.settings.table_class = changed.settings.table_class;
    member.settings.table_class_updated_at_millis = changed.settings.table_class_updated_at_millis;
}

/// Removes what `table`'s member keeps for GSI `index_name` beside the index itself: its
/// read overrides and its auto scaling settings (the index is being deleted: they go with
/// it, so an index created again under that name starts without them).
pub(crate) fn forget_index(table: &mut TableDef, index_name: &str) {
    if let Some(replication) = table.replication.as_mut() {
        replication
            .overrides
            .indexes
            .retain(|index| index.name != index_name);
        let autoscaling = &mut replication.autoscaling;
        autoscaling
            .index_write
            .retain(|index| index.name != index_name);
        autoscaling
            .index_read
            .retain(|index| index.name != index_name);
    }
}
