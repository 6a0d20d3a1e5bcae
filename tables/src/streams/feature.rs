//! Streams' part in every write (`core::feature`): a change to an item of a table with an
//! enabled stream adds its record to the change's batch (docs/DESIGN.md §3, invariant 8), so
//! the record exists exactly when the change does; readers waiting for records hear of each
//! commit; compaction's retention filter hears which trees are streams.

use shoal_model::ApiError;

use crate::core::catalog::{Catalog, TableDef};
use crate::core::checker::Checker;
use crate::core::feature::{Feature, Initiator, ItemChange};
use crate::core::plan::{Mutation, WritePlan};
use crate::streams::check::check_stream;
use crate::streams::lifecycle::{note_stream_trees, Streams};
use crate::streams::record::plan_record;

impl Feature for Streams {
    /// The record's key is the sequence number the engine gives the write, so records are
    /// ordered as their changes committed.
    fn plan(&self, change: &ItemChange<'_>, mutations: &mut Vec<Mutation>) {
        let Some(stream) = change.table.enabled_stream() else {
            return;
        };
        let record = plan_record(
            change.table,
            stream.view_type,
            change.old,
            change.new,
            change.new_encoded,
            change.now_millis,
            change.initiator == Initiator::Service,
        );
        if let Some(value) = record {
            mutations.push(Mutation::PutSequenced {
                prefix: Vec::new(),
                tree: stream.tree,
                value,
            });
        }
    }

    /// A stream enabled or disabled since the plan: its record would be missing, or go to a
    /// stream that no longer takes records.
    fn plans_still_hold(&self, planned: &TableDef, current: &TableDef) -> bool {
        planned.enabled_stream().map(|stream| stream.tree)
            == current.enabled_stream().map(|stream| stream.tree)
    }

    fn committed(&self, table: &TableDef, plans: &[&WritePlan]) {
        let Some(stream) = table.enabled_stream() else {
            return;
        };
        let records = plans
            .iter()
            .flat_map(|plan| &plan.mutations)
            .filter(|mutation| {
                matches!(mutation, Mutation::PutSequenced { tree, .. } if *tree == stream.tree)
            })
            .count();
        if records > 0 {
            self.records_committed(stream.tree, records as u64);
        }
    }

    fn catalog_changed(&self, catalog: &Catalog) {
        note_stream_trees(&self.retention, catalog);
    }

    fn check(&self, checker: &mut Checker<'_>, table: &TableDef) -> Result<(), ApiError> {
        check_stream(checker, table)
    }
}
