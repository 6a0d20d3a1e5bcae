//! `Database::check`: verifies invariant 5 (docs/DESIGN.md §7), the collection records and the
//! table statistics on a whole database — every index holds exactly the entries derived
//! from the base items, every collection record equals the recomputed size and count of its
//! collection, and every statistics record (`table::stats`) equals what its stripe's items
//! and entries give.
//!
//! The check reads everything at one snapshot, derives the expected LSI entries, GSI entries
//! and collection records from the base items with the same code the write path uses
//! (`index::entries_for`), and compares them with what is stored, key by key and value by
//! value. It holds the expected index entries of one table in memory, so it is a tool for
//! tests, crash verification and `shoal check`, not for a live multi-terabyte database.

use std::collections::BTreeMap;

use shoal_model::{ApiError, Item};

use crate::database::{internal, Database};
use crate::table::backfill::backfill_indexes;
use crate::table::catalog::{IndexStatus, TableDef};
use crate::table::collection::CollectionRecord;
use crate::table::index::{entries_for, IndexRef, STORAGE_OVERHEAD_BYTES};
use crate::table::item_codec::decode_item;
use crate::table::keys::{self, SECTION_BASE, SECTION_COLLECTION};
use crate::table::stats;
use shoal_engine::{Snapshot, TreeId};

/// Problems reported before the check stops listing them.
const PROBLEMS_MAX: usize = 100;

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub tables: usize,
    pub items: u64,
    pub index_entries: u64,
    pub collections: u64,
    /// Every disagreement found (at most `PROBLEMS_MAX`); empty when the database is sound.
    pub problems: Vec<String>,
}

impl CheckReport {
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, text: String) {
        if self.problems.len() < PROBLEMS_MAX {
            self.problems.push(text);
        }
    }
}

/// Index entries by storage key.
type Entries = BTreeMap<Vec<u8>, Item>;

impl Database {
    /// Verifies every table's indexes and collection records against its base items.
    pub fn check(&self) -> Result<CheckReport, ApiError> {
        let snapshot = self.db.snapshot();
        let tables: Vec<_> = self.catalog.read().values().cloned().collect();
        let mut report = CheckReport {
            tables: tables.len(),
            ..CheckReport::default()
        };
        for table in &tables {
            self.check_table(table, &snapshot, &mut report)?;
        }
        Ok(report)
    }

    fn check_table(
        &self,
        table: &TableDef,
        snapshot: &Snapshot,
        report: &mut CheckReport,
    ) -> Result<(), ApiError> {
        let pk_type = table.key.hash.scalar_type();
        let mut expected_local = Entries::new();
        let mut expected_global = vec![Entries::new(); table.global_indexes.len()];
        let mut expected_collections: BTreeMap<Vec<u8>, CollectionRecord> = BTreeMap::new();
        let mut stored_local = Entries::new();
        let mut stored_collections: BTreeMap<Vec<u8>, CollectionRecord> = BTreeMap::new();

        let mut cursor = self.db.iter_tree(table.tree, snapshot).map_err(internal)?;
        while cursor.advance().map_err(internal)? {
            let key = cursor.key();
            let (prefix_len, section) = keys::split_table_key(key, pk_type).map_err(internal)?;
            match section {
                SECTION_BASE => {
                    report.items += 1;
                    let item = decode_item(cursor.value()).map_err(internal)?;
                    let entries = entries_for(table, &item)?;
                    if table.has_local_indexes() {
                        let lsi_bytes: u64 = entries
                            .iter()
                            .filter(|e| matches!(e.index, IndexRef::Local(_)))
                            .map(|e| e.storage_bytes())
                            .sum();
                        let record = expected_collections
                            .entry(collection_key(key, prefix_len))
                            .or_default();
                        record.size_bytes += shoal_model::item_size_bytes(&item) as u64
                            + STORAGE_OVERHEAD_BYTES
                            + lsi_bytes;
                        record.item_count += 1;
                    }
                    for entry in entries {
                        match entry.index {
                            IndexRef::Local(_) => {
                                expected_local.insert(entry.key, entry.item.to_item());
                            }
                            IndexRef::Global(position) => {
                                // An item stored before its GSI existed may have a key value
                                // the index cannot hold (wrong type, empty, too long): the
                                // backfill leaves it out on purpose (SPEC §2.3).
                                let gsi = &table.global_indexes[position];
                                if backfill_indexes(gsi, &item) {
                                    expected_global[position]
                                        .insert(entry.key, entry.item.to_item());
                                }
                            }
                        }
                    }
                }
                SECTION_COLLECTION => {
                    let record = CollectionRecord::decode(cursor.value()).map_err(internal)?;
                    stored_collections.insert(key.to_vec(), record);
                }
                _ => {
                    let item = decode_item(cursor.value()).map_err(internal)?;
                    stored_local.insert(key.to_vec(), item);
                }
            }
        }

        report.index_entries += stored_local.len() as u64;
        compare(
            &table.name,
            "local indexes",
            &expected_local,
            &stored_local,
            report,
        );
        report.collections += stored_collections.len() as u64;
        if stored_collections != expected_collections {
            report.problem(format!(
                "table {}: {} collection records stored, {} expected, or their sizes differ",
                table.name,
                stored_collections.len(),
                expected_collections.len()
            ));
        }
        for (position, gsi) in table.global_indexes.iter().enumerate() {
            // A GSI still being built holds only part of its entries by design.
            if gsi.status != IndexStatus::Active {
                continue;
            }
            let stored = self.read_entries(gsi.tree, snapshot)?;
            report.index_entries += stored.len() as u64;
            let what = format!("global index {}", gsi.name);
            compare(
                &table.name,
                &what,
                &expected_global[position],
                &stored,
                report,
            );
        }
        for problem in stats::verify(&self.db, self.stats.tree, table, snapshot)? {
            report.problem(problem);
        }
        Ok(())
    }

    fn read_entries(&self, tree: TreeId, snapshot: &Snapshot) -> Result<Entries, ApiError> {
        let mut entries = Entries::new();
        let mut cursor = self.db.iter_tree(tree, snapshot).map_err(internal)?;
        while cursor.advance().map_err(internal)? {
            let item = decode_item(cursor.value()).map_err(internal)?;
            entries.insert(cursor.key().to_vec(), item);
        }
        Ok(entries)
    }
}

fn collection_key(base_key: &[u8], prefix_len: usize) -> Vec<u8> {
    let mut key = base_key[..prefix_len].to_vec();
    key.push(SECTION_COLLECTION);
    key
}

fn compare(
    table: &str,
    what: &str,
    expected: &Entries,
    stored: &Entries,
    report: &mut CheckReport,
) {
    for (key, item) in expected {
        match stored.get(key) {
            None => report.problem(format!("table {table}, {what}: entry missing for {item:?}")),
            Some(found) if found != item => report.problem(format!(
                "table {table}, {what}: entry holds {found:?}, the base item projects {item:?}"
            )),
            Some(_) => {}
        }
    }
    for (key, item) in stored {
        if !expected.contains_key(key) {
            report.problem(format!(
                "table {table}, {what}: entry {item:?} has no base item deriving it"
            ));
        }
    }
}
