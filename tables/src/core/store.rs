//! [`Core`]: what every operation works on — the LSM database, the catalog, the collection
//! locks, the table statistics and the registered features. It is shared (every field is an
//! `Arc`, so a clone is cheap) with the threads that outlive a request: index backfills and
//! the upkeep.

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use shoal_engine::{Db, DbError, TreeId};
use shoal_model::ApiError;

use crate::api::common::{data_table_not_found, table_not_found};
use crate::core::catalog::{read_catalog, resolve, visible_names, Catalog, TableDef};
use crate::core::error::internal;
use crate::core::feature::Features;
use crate::core::locks::CollectionLocks;
use crate::core::region;
use crate::core::stats::{self, TableStatistics};

/// The state of the tables every operation and feature works on.
#[derive(Clone)]
pub struct Core {
    pub(crate) db: Arc<Db>,
    /// Table definitions by name: a cache of the durable catalog in the manifest, replaced
    /// whole under `catalog_change` after every durable change.
    pub(crate) catalog: Arc<RwLock<Catalog>>,
    /// Serialises control-plane changes (create, delete, update of tables).
    pub(crate) catalog_change: Arc<Mutex<()>>,
    pub(crate) locks: Arc<CollectionLocks>,
    /// Every table's item counts and sizes (`core::stats`).
    pub(crate) stats: Arc<TableStatistics>,
    /// What rides on writes and on the catalog (`core::feature`).
    pub(crate) features: Features,
    /// Cap on one item collection (base items + LSI entries) of a table with an LSI.
    pub(crate) item_collection_size_limit_bytes: u64,
}

impl Core {
    /// The core of `db`, its catalog not yet read ([`Core::reload_catalog`] reads it).
    pub(crate) fn new(
        db: Arc<Db>,
        features: Features,
        item_collection_size_limit_bytes: u64,
    ) -> Core {
        let stats_tree = db.tree_id(stats::STATS_TREE_NAME);
        Core {
            db,
            catalog: Arc::new(RwLock::new(Catalog::new())),
            catalog_change: Arc::new(Mutex::new(())),
            locks: Arc::new(CollectionLocks::default()),
            stats: Arc::new(TableStatistics::new(stats_tree)),
            features,
            item_collection_size_limit_bytes,
        }
    }

    /// Replaces the catalog cache with the durable version's catalog; the features hear it
    /// first, so that none works from a catalog older than the one requests see.
    pub(crate) fn reload_catalog(&self) -> Result<(), DbError> {
        let current = read_catalog(&self.db)?;
        for feature in self.features.iter() {
            feature.catalog_changed(&current);
        }
        *self.catalog.write() = current;
        Ok(())
    }

    /// The definition of the table a request in the current Region (`core::region`) means
    /// by `name` (`catalog::resolve`), if any.
    pub fn find_table(&self, name: &str) -> Option<Arc<TableDef>> {
        region::with_current(|region| resolve(&self.catalog.read(), name, region).cloned())
    }

    /// The definition of table `name` (in the current Region), or ResourceNotFoundException.
    pub fn table(&self, name: &str) -> Result<Arc<TableDef>, ApiError> {
        self.find_table(name).ok_or_else(|| table_not_found(name))
    }

    /// The definition of table `name` for a data-plane operation, whose missing table is
    /// [`data_table_not_found`].
    pub(crate) fn data_table(&self, name: &str) -> Result<Arc<TableDef>, ApiError> {
        self.find_table(name).ok_or_else(data_table_not_found)
    }

    /// Names of the tables the current Region sees, in byte order.
    pub fn table_names(&self) -> Vec<String> {
        visible_names(&self.catalog.read(), &region::current())
            .into_iter()
            .collect()
    }

    /// The underlying LSM database (statistics, snapshots, checks).
    pub fn lsm(&self) -> &Db {
        &self.db
    }

    /// Makes every table's statistics records complete (`core::stats`): at open, before any
    /// write.
    pub(crate) fn prepare_stats(&self) -> Result<(), ApiError> {
        let tables: Vec<Arc<TableDef>> = self.catalog.read().values().cloned().collect();
        let live: Vec<TreeId> = tables.iter().map(|table| table.tree).collect();
        if !self.stats.has_tree() {
            if tables.is_empty() {
                // Created with the first table.
                return Ok(());
            }
            // Tables written before statistics were kept.
            let tree = self
                .db
                .create_tree(stats::STATS_TREE_NAME)
                .map_err(internal)?;
            self.stats.set_tree(tree);
        }
        let stats_tree = self.stats.tree()?;
        stats::remove_orphans(&self.db, stats_tree, &live)?;
        for table in &tables {
            if !stats::is_maintained(&self.db, stats_tree, table)? {
                tracing::info!(table = %table.name, "rebuilding the table's statistics");
                stats::rebuild(&self.db, stats_tree, table)?;
            }
            self.stats.load(&self.db, table)?;
        }
        Ok(())
    }
}
