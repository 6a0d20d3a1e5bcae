//! Changing a table's stored definition (its catalog entry, `core::catalog`): one durable
//! version change each, made under `Core::catalog_change`, then the catalog cache
//! reloaded. Every change of a definition goes through here — alone (stream settings, tags,
//! table settings), with the one new tree it needs (a GSI, a stream, an expiry index) or
//! with the trees it no longer has, so
//! a definition never names a tree that does not exist, nor a tree outlives its definition.

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
        let bytes = changed.to_metadata().map_err(internal)?;
        self.db
            .drop_trees_with(
                trees,
                vec![VersionEdit::SetMetadata {
                    key: metadata_key(&changed.catalog_key()),
                    value: Some(bytes),
                }],
            )
            .map_err(internal)?;
        self.reload_catalog().map_err(internal)
    }

    /// Creates tree `tree_name` and stores `changed` with it, in one version change:
    /// `place` puts the new tree's id into the definition. Returns the tree. The caller holds
    /// `catalog_change`.
    pub(crate) fn store_definition_with_tree(
        &self,
        changed: &mut TableDef,
        tree_name: String,
        place: impl FnOnce(&mut TableDef, TreeId),
    ) -> Result<TreeId, ApiError> {
        // Fail before touching storage if the definition cannot be stored.
        changed.to_metadata().map_err(internal)?;
        let mut stored = false;
        let mut place = Some(place);
        let ids = self
            .db
            .create_trees_with(&[tree_name], |ids| {
                if let (Some(id), Some(place)) = (ids.first(), place.take()) {
                    place(changed, *id);
                }
                match changed.to_metadata() {
                    Ok(bytes) => {
                        stored = true;
                        vec![VersionEdit::SetMetadata {
                            key: metadata_key(&changed.catalog_key()),
                            value: Some(bytes),
                        }]
                    }
                    Err(_) => Vec::new(),
                }
            })
            .map_err(internal)?;
        if !stored {
            // Serialisation succeeded a moment ago with the same types; if it ever does
            // not, take the orphaned tree away again.
            self.db
                .drop_trees_with(&ids, Vec::new())
                .map_err(internal)?;
            return Err(internal("the table definition could not be stored"));
        }
        self.reload_catalog().map_err(internal)?;
        ids.first()
            .copied()
            .ok_or_else(|| internal("no tree was created"))
    }
}
