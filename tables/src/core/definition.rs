//! Changing a table's stored definition (its catalog entry, `core::catalog`): one durable
//! version change each, made under `Core::catalog_change`, then the catalog cache
//! reloaded. Every change of a definition goes through here — alone (stream settings, tags,
//! table settings), with the one new tree it needs (a GSI, a stream, an expiry index) or
//! with the trees it no longer has, so
//! a definition never names a tree that does not exist, nor a tree outlives its definition.
//! A setting a global table shares changes every member's definition (each with its own
//! new tree, if it needs one) in the same one version change.

use shoal_engine::version::VersionEdit;
use shoal_engine::TreeId;
use shoal_model::ApiError;

use crate::core::catalog::{metadata_key, TableDef};
use crate::core::error::internal;
use crate::core::store::Core;

/// The edit storing `table` as a new table's definition, for the version change that
/// creates its trees; `stored` keeps what was stored. No edit if the definition cannot be
/// serialised (callers serialised it once before the change, so this does not happen):
/// [`Core::table_created`] then takes the trees away again.
pub(crate) fn new_definition_edits(
    table: TableDef,
    stored: &mut Option<TableDef>,
) -> Vec<VersionEdit> {
    match table.to_metadata() {
        Ok(bytes) => {
            let edit = VersionEdit::SetMetadata {
                key: metadata_key(&table.catalog_key()),
                value: Some(bytes),
            };
            *stored = Some(table);
            vec![edit]
        }
        Err(_) => Vec::new(),
    }
}

impl Core {
    /// After the version change that created a table's trees `ids` with
    /// [`new_definition_edits`]: the definition it stored, the statistics tree noted when the
    /// change created it (the last of `ids`), or, with none stored, the trees dropped again.
    pub(crate) fn table_created(
        &self,
        stored: Option<TableDef>,
        ids: &[TreeId],
        creates_stats_tree: bool,
    ) -> Result<TableDef, ApiError> {
        let Some(table) = stored else {
            self.db.drop_trees_with(ids, Vec::new()).map_err(internal)?;
            return Err(internal("the table definition could not be stored"));
        };
        if creates_stats_tree {
            if let Some(&tree) = ids.last() {
                self.stats.set_tree(tree);
            }
        }
        Ok(table)
    }

    /// Stores `changed` as its table's definition. The caller holds `catalog_change`.
    pub(crate) fn store_definition(&self, changed: &TableDef) -> Result<(), ApiError> {
        self.store_definition_dropping(changed, &[])
    }

    /// Stores `changed` and drops `trees` (an index, an expiry index it no longer has), in
    /// one version change. The caller holds `catalog_change`.
    pub(crate) fn store_definition_dropping(
        &self,
        changed: &TableDef,
        trees: &[TreeId],
    ) -> Result<(), ApiError> {
        self.store_definitions_dropping(std::slice::from_ref(changed), trees)
    }

    /// Stores every definition of `changed` (the members of a global table a group-wide
    /// setting changes, `replication::settings`) and drops `trees`, in ONE version change:
    /// a crash leaves all of them as they were or all changed. The caller holds
    /// `catalog_change`.
    pub(crate) fn store_definitions_dropping(
        &self,
        changed: &[TableDef],
        trees: &[TreeId],
    ) -> Result<(), ApiError> {
        let edits = definition_edits(changed).map_err(internal)?;
        self.db.drop_trees_with(trees, edits).map_err(internal)?;
        self.reload_catalog().map_err(internal)
    }

    /// Creates tree `tree_name` and stores `changed` with it, in one version change:
    /// `place` puts the new tree's id into the definition. Returns the tree. The caller holds
    /// `catalog_change`.
    pub(crate) fn store_definition_with_tree(
        &self,
        changed: &mut TableDef,
        tree_name: String,
        place: impl FnMut(&mut TableDef, TreeId),
    ) -> Result<TreeId, ApiError> {
        let created = self.store_definitions_with_trees(
            std::slice::from_mut(changed),
            vec![tree_name],
            place,
        )?;
        created
            .first()
            .map(|(_, tree)| *tree)
            .ok_or_else(|| internal("no tree was created"))
    }

    /// Creates one tree per definition of `changed` (`tree_names[i]` for `changed[i]`) and
    /// stores them all with their trees, in ONE version change: `place` puts each new
    /// tree's id into its definition. Returns each table's id with its new tree, in
    /// `changed`'s order. The caller holds `catalog_change`.
    pub(crate) fn store_definitions_with_trees(
        &self,
        changed: &mut [TableDef],
        tree_names: Vec<String>,
        mut place: impl FnMut(&mut TableDef, TreeId),
    ) -> Result<Vec<(String, TreeId)>, ApiError> {
        if tree_names.len() != changed.len() {
            return Err(internal("one new tree per changed definition is expected"));
        }
        // Fail before touching storage if a definition cannot be stored.
        definition_edits(changed).map_err(internal)?;
        let mut stored = false;
        let ids = self
            .db
            .create_trees_with(&tree_names, |ids| {
                for (table, id) in changed.iter_mut().zip(ids) {
                    place(table, *id);
                }
                match definition_edits(changed) {
                    Ok(edits) => {
                        stored = true;
                        edits
                    }
                    Err(_) => Vec::new(),
                }
            })
            .map_err(internal)?;
        if !stored {
            // Serialisation succeeded a moment ago with the same types; if it ever does
            // not, take the orphaned trees away again.
            self.db
                .drop_trees_with(&ids, Vec::new())
                .map_err(internal)?;
            return Err(internal("the table definition could not be stored"));
        }
        self.reload_catalog().map_err(internal)?;
        Ok(changed
            .iter()
            .map(|table| table.id.clone())
            .zip(ids)
            .collect())
    }
}

/// The edits storing each definition of `tables` under its catalog key.
fn definition_edits(tables: &[TableDef]) -> Result<Vec<VersionEdit>, serde_json::Error> {
    tables
        .iter()
        .map(|table| {
            Ok(VersionEdit::SetMetadata {
                key: metadata_key(&table.catalog_key()),
                value: Some(table.to_metadata()?),
            })
        })
        .collect()
}
