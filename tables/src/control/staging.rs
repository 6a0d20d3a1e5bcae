//! Staged tables: a table whose trees exist and are written through the ordinary write path
//! while no catalog entry names it, so no request can read or write it, made visible whole
//! by one catalog change (ImportTable's new table; reusable by anything that builds a table
//! before showing it, such as a restore).
//!
//! - [`Database::stage_table`] creates the trees (the table's and its GSIs') in one version
//!   change that stores no definition, and marks its statistics maintained.
//! - [`Database::write_staged`] writes items through `plan_write` and
//!   [`Database::write_plans`]: index entries, statistics and key and size checks are the
//!   ones every PutItem gets; a later item with the same key replaces an earlier one (the
//!   old item is read, so index entries and statistics stay exact).
//! - [`Database::publish`] syncs the WAL (writes to a staged table need no sync of their
//!   own: nothing can see them until this point) and stores the definition in one version
//!   change, which makes the table ACTIVE.
//! - [`Database::discard`] drops the trees and the statistics records.
//!
//! A crash (or a process that stops) before `publish` leaves trees that no catalog entry
//! names: [`Database::drop_orphan_trees`], at open, drops them.

use std::collections::{BTreeSet, HashMap};

use shoal_engine::version::VersionEdit;
use shoal_engine::{DbError, TreeId, WriteBatch};
use shoal_model::{ApiError, ErrorCode, Item};

use crate::control::schema::TableSchema;
use crate::control::tables::{gsi_tree_name, new_table_id, table_def};
use crate::core::catalog::Catalog;
use crate::core::catalog::{metadata_key, TableDef};
use crate::core::clock::now_millis;
use crate::core::error::internal;
use crate::core::plan::{ItemKey, WritePlan};
use crate::core::stats;
use crate::core::write::plan_write;
use crate::database::Database;

/// A table being built: its definition (with its trees' ids) and no catalog entry.
#[derive(Debug)]
pub struct StagedTable {
    table: Box<TableDef>,
}

impl StagedTable {
    /// The definition it will be published with.
    pub fn table(&self) -> &TableDef {
        &self.table
    }

    /// The trees the table owns: its own and its GSIs'.
    fn trees(&self) -> Vec<TreeId> {
        let mut trees = vec![self.table.tree];
        trees.extend(self.table.global_indexes.iter().map(|gsi| gsi.tree));
        trees
    }
}

/// Every tree some live structure owns: each catalog table's own tree, its GSIs' (whatever
/// their status: a CREATING index's tree is being backfilled), its streams' (enabled or
/// disabled: a disabled stream stays readable until retention drops it) and its expiry
/// index's, plus the trees of the database as a whole (`database_trees`: statistics and
/// the point-in-time clock). Anything else in the version was created by an operation that
/// never stored the definition naming it.
pub(crate) fn owned_trees(
    catalog: &Catalog,
    database_trees: impl IntoIterator<Item = TreeId>,
) -> BTreeSet<TreeId> {
    let mut owned: BTreeSet<TreeId> = database_trees.into_iter().collect();
    for table in catalog.values() {
        owned.insert(table.tree);
        owned.extend(table.global_indexes.iter().map(|gsi| gsi.tree));
        owned.extend(table.streams.iter().map(|stream| stream.tree));
        owned.extend(table.time_to_live.iter().map(|ttl| ttl.tree));
        owned.extend(table.replication.iter().map(|replication| replication.tree));
    }
    owned
}

impl Database {
    /// Creates the trees of a table with `schema` (its LSIs live in the table's tree; no
    /// stream: what an import builds) without a catalog entry.
    pub fn stage_table(&self, schema: &TableSchema) -> Result<StagedTable, ApiError> {
        let _change = self.catalog_change.lock();
        let table_id = new_table_id();
        let mut tree_names = vec![table_id.clone()];
        tree_names.extend(
            schema
                .global_indexes
                .iter()
                .map(|gsi| gsi_tree_name(&table_id, &gsi.name)),
        );
        let own_trees = tree_names.len();
        let creates_stats_tree = !self.stats.has_tree();
        if creates_stats_tree {
            tree_names.push(stats::STATS_TREE_NAME.to_string());
        }
        let ids = self
            .db
            .create_trees_with(&tree_names, |_| Vec::new())
            .map_err(internal)?;
        let table = table_def(
            schema,
            &table_id,
            now_millis(),
            ids.get(..own_trees).unwrap_or(&ids),
        );
        if creates_stats_tree {
            if let Some(&tree) = ids.last() {
                self.stats.set_tree(tree);
            }
        }
        let mut batch = WriteBatch::new();
        stats::mark_maintained(self.stats.tree()?, &table, &mut batch)?;
        self.db.write(batch).map_err(internal)?;
        Ok(StagedTable {
            table: Box::new(table),
        })
    }

    /// Writes `items` (each checked with `key_of_item` / `check_new_item` by the caller)
    /// into `staged` as one WAL record. Of items with the same key the last wins. Returns
    /// the items the write path refused, by position, with the reason; the others are
    /// written.
    pub fn write_staged(
        &self,
        staged: &StagedTable,
        items: &[(ItemKey, Item)],
    ) -> Result<Vec<(usize, ApiError)>, ApiError> {
        let table = &staged.table;
        // An earlier item of a key written again in the same batch would be read as absent
        // by the later one's plan: only the last of each key is planned.
        let mut last_of_key: HashMap<Vec<u8>, usize> = HashMap::with_capacity(items.len());
        for (position, (key, _)) in items.iter().enumerate() {
            last_of_key.insert(key.base_key()?, position);
        }
        let mut refused = Vec::new();
        let mut plans: Vec<WritePlan> = Vec::with_capacity(last_of_key.len());
        for (position, (key, item)) in items.iter().enumerate() {
            if last_of_key.get(&key.base_key()?) != Some(&position) {
                continue;
            }
            let old = self.read_replaced_item(table, key)?;
            match plan_write(&self.features, table, key, old.as_ref(), Some(item), false) {
                Ok(plan) => plans.push(plan),
                Err(error) => refused.push((position, error)),
            }
        }
        let plans: Vec<&WritePlan> = plans.iter().collect();
        self.write_plans(&[(table, plans)], false, true)?;
        Ok(refused)
    }

    /// Makes `staged` a table: syncs the WAL, then stores its definition with `extra` edits
    /// (an import's record) in one version change. A table of the same name created
    /// meanwhile wins: the staged one is left for [`Database::discard`] and
    /// ResourceInUseException is returned.
    pub fn publish(&self, staged: &StagedTable, extra: Vec<VersionEdit>) -> Result<(), ApiError> {
        let _change = self.catalog_change.lock();
        if self.catalog.read().contains_key(&staged.table.name) {
            return Err(ApiError::new(
                ErrorCode::ResourceInUseException,
                format!("Table already exists: {}", staged.table.name),
            ));
        }
        let bytes = staged.table.to_metadata().map_err(internal)?;
        // Once the definition is durable the items must be too: the table's writes went
        // unsynced (nothing could see them), and this sync covers them all.
        self.db.sync_wal().map_err(internal)?;
        let mut edits = vec![VersionEdit::SetMetadata {
            key: metadata_key(&staged.table.catalog_key()),
            value: Some(bytes),
        }];
        edits.extend(extra);
        self.db.apply_edits(edits).map_err(internal)?;
        self.reload_catalog().map_err(internal)
    }

    /// Drops `staged`'s trees (with `extra` edits, in the same version change) and its
    /// statistics records.
    pub fn discard(&self, staged: StagedTable, extra: Vec<VersionEdit>) -> Result<(), ApiError> {
        {
            let _change = self.catalog_change.lock();
            self.db
                .drop_trees_with(&staged.trees(), extra)
                .map_err(internal)?;
        }
        // A crash between the two leaves records of no table, which the next open removes.
        let mut batch = WriteBatch::new();
        stats::remove_all(self.stats.tree()?, staged.table.tree, &mut batch)?;
        self.db.write(batch).map_err(internal)?;
        self.stats.forget(staged.table.tree);
        Ok(())
    }

    /// At open, before statistics are loaded: drops every tree no live structure owns
    /// ([`owned_trees`]) — a staged table's trees left by a crash or a stop before it was
    /// published or discarded.
    ///
    /// Safe because every other tree is created in the same durable version change as the
    /// definition that names it (CreateTable, a GSI, a stream, an expiry index: `table::
    /// definition`) and dropped in the same change that forgets it, so outside staging no
    /// tree exists without its owner, even after a crash. A new kind of tree must be added
    /// to [`owned_trees`] before it is created anywhere.
    pub(crate) fn drop_orphan_trees(&self) -> Result<(), DbError> {
        // The trees of the database as a whole: statistics and the point-in-time clock.
        let database_trees = [
            self.db.tree_id(stats::STATS_TREE_NAME),
            self.db
                .tree_id(crate::backups::pitr_clock::PITR_CLOCK_TREE_NAME),
        ];
        let owned = owned_trees(&self.catalog.read(), database_trees.into_iter().flatten());
        let orphans: Vec<TreeId> = self
            .db
            .version()
            .trees
            .keys()
            .filter(|tree| !owned.contains(tree))
            .copied()
            .collect();
        if orphans.is_empty() {
            return Ok(());
        }
        tracing::info!(trees = ?orphans, "dropping the trees of tables never published");
        self.db.drop_trees_with(&orphans, Vec::new())
    }
}
