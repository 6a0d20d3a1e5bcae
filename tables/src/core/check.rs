//! `Database::check`: verifies invariant 5 (docs/DESIGN.md §7), the collection records and the
//! table statistics on a whole database — every index holds exactly the entries derived
//! from the base items, every collection record equals the recomputed size and count of its
//! collection, and every statistics record (`core::stats`) equals what its stripe's items
//! and entries give.
//!
//! The check reads everything at one snapshot and derives the expected LSI entries, GSI
//! entries and collection records from the base items with the same code the write path uses
//! (`index::entries_for`). It keeps none of the entries it reads or derives, so its memory
//! does not grow with the data:
//!
//! - The table tree is ordered by (hash64(pk), pk, section, rest), so an item collection —
//!   its base items, then its LSI entries, then its collection record — is contiguous. One
//!   walk of the tree checks the collections one after the other: the collection record
//!   against the sums of its items and entries, and the LSI entries the items derive against
//!   those stored, as two multiset digests.
//! - A GSI is ordered by its own key, not by the base key, so the same walk folds every
//!   entry the items derive for it into one digest per GSI; a walk of the GSI's tree then
//!   folds every stored entry into another.
//! - A digest is the number of entries and the wrapping sum of a 128-bit hash of each
//!   entry's key and attributes, the attributes hashed as DynamoDB compares items (numbers
//!   by value, sets as sets), so it does not depend on order. The hash is two SipHash-1-3
//!   with keys drawn at random for each check: two different multisets give equal digests
//!   with probability about 2^-128, and no stored data can be made to collide on purpose.
//! - Only when two digests differ does the check look for the entries behind it, in a
//!   second pass over that collection, or that GSI and the table: each stored entry is
//!   traced (point read) to the base item its key names, which must derive exactly that
//!   entry, and every entry the base items derive must exist (point reads). So a report
//!   names each missing, extra or different entry, up to `PROBLEMS_MAX` problems.
//! - What features derive from the items is checked by the features themselves
//!   (`Feature::check`, with the tools of `core::checker`): a Time to Live expiry index the
//!   same way, by digests of what the items derive and what the index holds; a table's
//!   enabled stream where the items can show it, the last record of each item against the
//!   item as it is.
//! - The table statistics are recounted in the same walks (`stats::Recount`), one delta per
//!   collection-lock stripe: at most 1024, whatever the table's size.
//!
//! What the check holds, then: the digests and record sums of the collection at hand, one
//! digest per GSI, the stripes' recounts, one item and its derived entries at a time, and
//! at most `PROBLEMS_MAX` problem texts. Progress is reported through
//! [`Core::check_with_progress`].

use shoal_engine::{Direction, TreeId};
use shoal_model::{ApiError, AttributeValue, Item};

use crate::core::catalog::{IndexStatus, TableDef};
use crate::core::checker::{
    describe_partition, CheckProgress, CheckReport, Checker, Digest, EntryHasher, Progress,
};
use crate::core::collection::CollectionRecord;
use crate::core::error::internal;
use crate::core::index::{
    backfill_indexes, entries_for, IndexEntry, IndexRef, STORAGE_OVERHEAD_BYTES,
};
use crate::core::item_codec::decode_item;
use crate::core::keys::{self, KeyRange, SECTION_BASE, SECTION_COLLECTION};
use crate::core::stats::{self, Recount};
use crate::core::store::Core;

impl Core {
    /// Verifies every table's indexes, collection records and statistics against its base
    /// items.
    pub fn check(&self) -> Result<CheckReport, ApiError> {
        self.check_with_progress(|_| {})
    }

    /// [`Core::check`], calling `progress` every few thousand items and entries read and
    /// whenever a second pass starts or ends.
    pub fn check_with_progress(
        &self,
        mut progress: impl FnMut(&CheckProgress),
    ) -> Result<CheckReport, ApiError> {
        let snapshot = self.db.snapshot();
        let tables: Vec<_> = self.catalog.read().values().cloned().collect();
        let mut totals = CheckProgress::default();
        for table in &tables {
            let figures = self.stats.of(table);
            totals.items_total += figures.table.item_count;
            totals.bytes_total += figures.table.size_bytes;
            for index in figures.local_indexes.iter().chain(&figures.global_indexes) {
                totals.index_entries_total += index.item_count;
                totals.bytes_total += index.size_bytes;
            }
        }
        let mut checker = Checker {
            db: &self.db,
            snapshot: &snapshot,
            hasher: EntryHasher::new(),
            report: CheckReport {
                tables: tables.len(),
                ..CheckReport::default()
            },
            progress: Progress {
                state: totals,
                unreported: 0,
                report: &mut progress,
            },
        };
        checker.progress.now();
        for table in &tables {
            checker.table(table, self.stats.tree()?)?;
            for feature in self.features.iter() {
                feature.check(&mut checker, table)?;
            }
        }
        checker.progress.now();
        Ok(checker.report)
    }
}

/// What the walk of the table tree gathers about the collection at hand.
struct Collection {
    /// `hash64(pk) | pk`.
    prefix: Vec<u8>,
    /// The record its base items and their LSI entries give.
    expected_record: CollectionRecord,
    stored_record: Option<CollectionRecord>,
    expected_local: Digest,
    stored_local: Digest,
}

impl Collection {
    fn new(prefix: &[u8]) -> Collection {
        Collection {
            prefix: prefix.to_vec(),
            expected_record: CollectionRecord::default(),
            stored_record: None,
            expected_local: Digest::default(),
            stored_local: Digest::default(),
        }
    }
}

impl Checker<'_> {
    fn table(&mut self, table: &TableDef, stats_tree: TreeId) -> Result<(), ApiError> {
        let mut recount = Recount::default();
        let expected_global = self.walk_table(table, &mut recount)?;
        for (position, gsi) in table.global_indexes.iter().enumerate() {
            // A GSI still being built holds only part of its entries by design: only its
            // statistics are checked.
            let active = gsi.status == IndexStatus::Active;
            let mut stored = Digest::default();
            let mut cursor = self
                .db
                .iter_tree(gsi.tree, self.snapshot)
                .map_err(internal)?;
            while cursor.advance().map_err(internal)? {
                let entry = decode_item(cursor.value()).map_err(internal)?;
                self.progress
                    .index_entry(shoal_model::item_size_bytes(&entry) as u64);
                if let Err(error) = recount.global_entry(table, gsi, &entry) {
                    self.report.problem(format!(
                        "table {}, global index {}: {}",
                        table.name, gsi.name, error.message
                    ));
                }
                if active {
                    self.report.index_entries += 1;
                    stored.add(self.hasher.entry(cursor.key(), item_attributes(&entry)));
                }
            }
            if active && stored != expected_global[position] {
                self.locate_global(table, position, expected_global[position], stored)?;
            }
        }
        for problem in stats::verify(self.db, stats_tree, table, self.snapshot, &recount)? {
            self.report.problem(problem);
        }
        Ok(())
    }

    /// Walks the table tree once, collection by collection: checks each collection's record
    /// and LSI entries, recounts the statistics of the items and LSI entries, and returns
    /// the digest of the entries the items derive for each GSI (empty for GSIs not ACTIVE).
    fn walk_table(
        &mut self,
        table: &TableDef,
        recount: &mut Recount,
    ) -> Result<Vec<Digest>, ApiError> {
        let pk_type = table.key.hash.scalar_type();
        let mut expected_global = vec![Digest::default(); table.global_indexes.len()];
        let mut collection: Option<Collection> = None;
        let mut cursor = self
            .db
            .iter_tree(table.tree, self.snapshot)
            .map_err(internal)?;
        while cursor.advance().map_err(internal)? {
            let key = cursor.key();
            let (prefix_len, section) = keys::split_table_key(key, pk_type).map_err(internal)?;
            let prefix = &key[..prefix_len];
            if collection.as_ref().is_some_and(|c| c.prefix != prefix) {
                if let Some(done) = collection.take() {
                    self.finish_collection(table, done)?;
                }
            }
            let current = collection.get_or_insert_with(|| Collection::new(prefix));
            match section {
                SECTION_BASE => {
                    let item = decode_item(cursor.value()).map_err(internal)?;
                    let size_bytes = shoal_model::item_size_bytes(&item) as u64;
                    self.report.items += 1;
                    self.progress.item(size_bytes);
                    recount.table_entry(table, prefix, section, size_bytes);
                    let mut lsi_bytes = 0;
                    for entry in entries_for(table, &item)? {
                        if !is_expected(table, &entry, &item) {
                            continue;
                        }
                        let hash = self.hasher.entry(&entry.key, entry.item.iter());
                        match entry.index {
                            IndexRef::Local(_) => {
                                lsi_bytes += entry.storage_bytes();
                                current.expected_local.add(hash);
                            }
                            IndexRef::Global(position) => expected_global[position].add(hash),
                        }
                    }
                    current.expected_record.size_bytes +=
                        size_bytes + STORAGE_OVERHEAD_BYTES + lsi_bytes;
                    current.expected_record.item_count += 1;
                }
                SECTION_COLLECTION => {
                    self.report.collections += 1;
                    let record = CollectionRecord::decode(cursor.value()).map_err(internal)?;
                    current.stored_record = Some(record);
                }
                _ => {
                    let entry = decode_item(cursor.value()).map_err(internal)?;
                    let size_bytes = shoal_model::item_size_bytes(&entry) as u64;
                    self.report.index_entries += 1;
                    self.progress.index_entry(size_bytes);
                    recount.table_entry(table, prefix, section, size_bytes);
                    current
                        .stored_local
                        .add(self.hasher.entry(key, item_attributes(&entry)));
                }
            }
        }
        if let Some(done) = collection.take() {
            self.finish_collection(table, done)?;
        }
        Ok(expected_global)
    }

    fn finish_collection(
        &mut self,
        table: &TableDef,
        collection: Collection,
    ) -> Result<(), ApiError> {
        // Only tables with an LSI keep records, and only for collections holding an item.
        let expected_record = (table.has_local_indexes()
            && collection.expected_record.item_count > 0)
            .then_some(collection.expected_record);
        if collection.stored_record != expected_record {
            self.report.problem(format!(
                "table {}, collection {}: record {:?}, its items and entries give {:?}",
                table.name,
                describe_partition(table, &collection.prefix),
                collection.stored_record,
                expected_record
            ));
        }
        if collection.stored_local != collection.expected_local {
            self.locate_local(
                table,
                &collection.prefix,
                collection.expected_local,
                collection.stored_local,
            )?;
        }
        Ok(())
    }

    /// The second pass over one collection whose LSI digests differ: reports its LSI
    /// entries that no item derives or that differ from what their item derives, and the
    /// entries its items derive that are missing.
    fn locate_local(
        &mut self,
        table: &TableDef,
        prefix: &[u8],
        expected: Digest,
        stored: Digest,
    ) -> Result<(), ApiError> {
        if self.report.is_full() {
            return Ok(());
        }
        let scope = format!(
            "the local indexes of collection {}",
            describe_partition(table, prefix)
        );
        self.progress
            .locating(Some(format!("table {}, {scope}", table.name)));
        let mut found = 0;
        let range = KeyRange::with_prefix(prefix.to_vec());
        let mut cursor = self
            .db
            .iter(
                table.tree,
                range.lower_ref(),
                range.upper_ref(),
                Direction::Forward,
                Some(self.snapshot),
            )
            .map_err(internal)?;
        while !self.report.is_full() && cursor.advance().map_err(internal)? {
            let key = cursor.key();
            let section = key.get(prefix.len()).copied().unwrap_or(SECTION_BASE);
            match section {
                SECTION_BASE => {
                    let item = decode_item(cursor.value()).map_err(internal)?;
                    for entry in entries_for(table, &item)? {
                        if matches!(entry.index, IndexRef::Local(_)) {
                            found += self.require_stored(table, table.tree, &entry)?;
                        }
                    }
                }
                SECTION_COLLECTION => {}
                _ => {
                    let entry = decode_item(cursor.value()).map_err(internal)?;
                    let lsi = table
                        .local_indexes
                        .iter()
                        .position(|l| l.section == section);
                    // No index has the section, or the key does not parse: no item's key.
                    let base_key = lsi.and_then(|position| {
                        let sort = table.local_indexes[position].key.range.as_ref()?;
                        keys::base_key_of_lsi_entry(key, prefix.len(), sort.scalar_type()).ok()
                    });
                    let index = lsi.map(IndexRef::Local);
                    found += self.trace(table, index, key, &entry, base_key)?;
                }
            }
        }
        self.unlocated(table, &scope, found, expected, stored);
        self.progress.locating(None);
        Ok(())
    }

    /// The second pass over a GSI whose digests differ: reports its entries that no item
    /// derives or that differ from what their item derives, then the entries the table's
    /// items derive that are missing from it.
    fn locate_global(
        &mut self,
        table: &TableDef,
        position: usize,
        expected: Digest,
        stored: Digest,
    ) -> Result<(), ApiError> {
        if self.report.is_full() {
            return Ok(());
        }
        let gsi = &table.global_indexes[position];
        let gsi_types: Vec<_> = gsi.key.attributes().map(|a| a.scalar_type()).collect();
        let scope = format!("global index {}", gsi.name);
        self.progress
            .locating(Some(format!("table {}, {scope}", table.name)));
        let mut found = 0;
        let mut cursor = self
            .db
            .iter_tree(gsi.tree, self.snapshot)
            .map_err(internal)?;
        while !self.report.is_full() && cursor.advance().map_err(internal)? {
            let key = cursor.key();
            let entry = decode_item(cursor.value()).map_err(internal)?;
            let base_key =
                keys::base_key_of_gsi_entry(key, &gsi_types, table.key.hash.scalar_type()).ok();
            found += self.trace(
                table,
                Some(IndexRef::Global(position)),
                key,
                &entry,
                base_key,
            )?;
        }
        drop(cursor);
        let pk_type = table.key.hash.scalar_type();
        let mut cursor = self
            .db
            .iter_tree(table.tree, self.snapshot)
            .map_err(internal)?;
        while !self.report.is_full() && cursor.advance().map_err(internal)? {
            let (_, section) = keys::split_table_key(cursor.key(), pk_type).map_err(internal)?;
            if section != SECTION_BASE {
                continue;
            }
            let item = decode_item(cursor.value()).map_err(internal)?;
            for entry in entries_for(table, &item)? {
                if entry.index == IndexRef::Global(position) && is_expected(table, &entry, &item) {
                    found += self.require_stored(table, gsi.tree, &entry)?;
                }
            }
        }
        self.unlocated(table, &scope, found, expected, stored);
        self.progress.locating(None);
        Ok(())
    }

    /// Checks that the stored entry `stored`, under `key` in `index`, is what the base item
    /// at `base_key` derives; reports it (returning 1) if not. `index` and `base_key` are
    /// None when the entry's key names no index or no item.
    fn trace(
        &mut self,
        table: &TableDef,
        index: Option<IndexRef>,
        key: &[u8],
        stored: &Item,
        base_key: Option<Vec<u8>>,
    ) -> Result<u32, ApiError> {
        let base = match &base_key {
            Some(base_key) => self
                .db
                .get_with(table.tree, base_key, Some(self.snapshot), decode_item)
                .map_err(internal)?
                .transpose()
                .map_err(internal)?,
            None => None,
        };
        let derived: Vec<(Vec<u8>, Item)> = match (&base, index) {
            (Some(base), Some(index)) => entries_for(table, base)?
                .into_iter()
                .filter(|e| e.index == index && is_expected(table, e, base))
                .map(|e| (e.key, e.item.to_item()))
                .collect(),
            _ => Vec::new(),
        };
        let what = describe_index(table, index, key);
        match derived.iter().find(|(derived_key, _)| derived_key == key) {
            Some((_, item)) if item == stored => return Ok(0),
            Some((_, item)) => self.report.problem(format!(
                "table {}, {what}: entry holds {}, the base item projects {}",
                table.name,
                json(stored),
                json(item)
            )),
            // The item the key names is there, but its index attributes say otherwise.
            None if base.is_some() && index.is_some() => {
                let instead = match derived.first() {
                    Some((_, item)) => format!("{} under another key", json(item)),
                    None => "no entry in this index".to_string(),
                };
                self.report.problem(format!(
                    "table {}, {what}: entry {} has no base item deriving it: the item its key names derives {instead}",
                    table.name,
                    json(stored)
                ))
            }
            None => self.report.problem(format!(
                "table {}, {what}: entry {} has no base item deriving it",
                table.name,
                json(stored)
            )),
        }
        Ok(1)
    }

    /// Checks that `entry`, derived from a base item, is stored in `tree`; reports it
    /// (returning 1) if not. Entries stored with other attributes are `trace`'s to report.
    fn require_stored(
        &mut self,
        table: &TableDef,
        tree: TreeId,
        entry: &IndexEntry<'_>,
    ) -> Result<u32, ApiError> {
        let stored = self
            .db
            .get_with(tree, &entry.key, Some(self.snapshot), |_| ())
            .map_err(internal)?;
        if stored.is_some() {
            return Ok(0);
        }
        self.report.problem(format!(
            "table {}, {}: entry missing for {}",
            table.name,
            describe_index(table, Some(entry.index), &entry.key),
            json(&entry.item.to_item())
        ));
        Ok(1)
    }

    /// Keeps the check strict should a second pass find nothing behind differing digests
    /// (a bug in the check itself): the digests still say the index is wrong.
    fn unlocated(
        &mut self,
        table: &TableDef,
        scope: &str,
        found: u32,
        expected: Digest,
        stored: Digest,
    ) {
        if found == 0 {
            self.report.problem(format!(
                "table {}, {scope}: {} entries stored, {} expected, and their digests differ, but no differing entry was found",
                table.name, stored.count, expected.count
            ));
        }
    }
}

/// Whether the check expects `entry`, derived from `item`, to be stored. An item stored
/// before its GSI existed may have a key value the index cannot hold (wrong type, empty,
/// too long): the backfill leaves it out on purpose (SPEC §2.3). A GSI still being built
/// holds only some entries, so none is expected.
fn is_expected(table: &TableDef, entry: &IndexEntry<'_>, item: &Item) -> bool {
    match entry.index {
        IndexRef::Local(_) => true,
        IndexRef::Global(position) => {
            let gsi = &table.global_indexes[position];
            gsi.status == IndexStatus::Active && backfill_indexes(gsi, item)
        }
    }
}

fn item_attributes(item: &Item) -> impl Iterator<Item = (&str, &AttributeValue)> {
    item.iter().map(|(name, value)| (name.as_str(), value))
}

/// An item or entry as DynamoDB's JSON, for a problem's text.
fn json(item: &Item) -> serde_json::Value {
    shoal_model::item_to_json(item)
}

/// The index an entry belongs to, for a problem's text.
fn describe_index(table: &TableDef, index: Option<IndexRef>, key: &[u8]) -> String {
    match index {
        Some(IndexRef::Local(position)) => {
            format!("local index {}", table.local_indexes[position].name)
        }
        Some(IndexRef::Global(position)) => {
            format!("global index {}", table.global_indexes[position].name)
        }
        None => {
            let section = keys::split_table_key(key, table.key.hash.scalar_type())
                .map(|(_, section)| section)
                .unwrap_or_default();
            format!("table-tree section {section}, which no local index has")
        }
    }
}
