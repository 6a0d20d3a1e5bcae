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
//! - A Time to Live expiry index is checked the same way, by digests of what the items
//!   derive and what the index holds, in one more walk of the items.
//! - A table's enabled stream is checked against the items where they can show it: the
//!   last record of each item must describe the item as it is (`Checker::stream`).
//! - The table statistics are recounted in the same walks (`stats::Recount`), one delta per
//!   collection-lock stripe: at most 1024, whatever the table's size.
//!
//! What the check holds, then: the digests and record sums of the collection at hand, one
//! digest per GSI, the stripes' recounts, one item and its derived entries at a time, and
//! at most `PROBLEMS_MAX` problem texts. Progress is reported through
//! [`Database::check_with_progress`].

use std::hash::{BuildHasher, Hash, Hasher, RandomState};

use shoal_engine::{Db, Direction, Snapshot, TreeId};
use shoal_model::{ApiError, AttributeValue, Item};

use crate::core::catalog::{IndexStatus, TableDef};
use crate::core::collection::CollectionRecord;
use crate::core::error::internal;
use crate::core::index::backfill_indexes;
use crate::core::index::{entries_for, IndexEntry, IndexRef, STORAGE_OVERHEAD_BYTES};
use crate::core::item_codec::decode_item;
use crate::core::keys::{self, KeyRange, HASH_BYTES, SECTION_BASE, SECTION_COLLECTION};
use crate::core::stats::{self, Recount};
use crate::core::write::key_of_item;
use crate::database::Database;
use crate::streams::record::{decode_record, EventName};
use crate::ttl::expiry_entry;

/// Problems reported before the check stops listing them.
const PROBLEMS_MAX: usize = 100;

/// Items and entries read between two progress reports: often enough for a progress bar
/// (a few milliseconds of work), rarely enough that reporting costs nothing.
const PROGRESS_EVERY: u64 = 4096;

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

    /// Whether no more problems will be listed.
    fn is_full(&self) -> bool {
        self.problems.len() >= PROBLEMS_MAX
    }

    fn problem(&mut self, text: String) {
        if !self.is_full() {
            self.problems.push(text);
        }
    }
}

/// How far a running check has got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckProgress {
    /// Base items read so far.
    pub items: u64,
    /// Index entries (LSI and GSI) read so far.
    pub index_entries: u64,
    /// DynamoDB sizes (`shoal_model::item_size_bytes`) of those items and entries.
    pub bytes: u64,
    /// Items, entries and bytes there are to read, from the table statistics as of the last
    /// write: on a sound database the check is done when the counts reach them.
    pub items_total: u64,
    pub index_entries_total: u64,
    pub bytes_total: u64,
    /// While the check looks for the entries behind two differing digests (a second pass,
    /// not counted above): where it looks.
    pub locating: Option<String>,
}

impl Database {
    /// Verifies every table's indexes, collection records and statistics against its base
    /// items.
    pub fn check(&self) -> Result<CheckReport, ApiError> {
        self.check_with_progress(|_| {})
    }

    /// [`Database::check`], calling `progress` every few thousand items and entries read and
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
        }
        checker.progress.now();
        Ok(checker.report)
    }
}

/// One run of the check.
struct Checker<'a> {
    db: &'a Db,
    snapshot: &'a Snapshot,
    hasher: EntryHasher,
    report: CheckReport,
    progress: Progress<'a>,
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
        self.expiry_index(table)?;
        self.stream(table)?;
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
            let base_key = keys::base_key_of_gsi_entry(
                key,
                gsi.key.hash.scalar_type(),
                gsi.key.range.as_ref().map(|r| r.scalar_type()),
                table.key.hash.scalar_type(),
            )
            .ok();
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

/// The partition key of a collection, for a problem's text.
fn describe_partition(table: &TableDef, prefix: &[u8]) -> String {
    let encoded = prefix.get(HASH_BYTES..).unwrap_or_default();
    match keys::decode_values(encoded, &[table.key.hash.scalar_type()]) {
        Ok(values) => format!("{} = {}", table.key.hash.name, values[0].to_json()),
        Err(_) => format!("with key prefix {prefix:02x?}"),
    }
}

impl Checker<'_> {
    /// The Time to Live expiry index (`ttl`) against the items, as a GSI is checked:
    /// a digest of the entries the base items derive (one more walk of the items) against a
    /// digest of the index; only when they differ, a second pass traces each entry to its
    /// item and each item to its entry. An index still being backfilled is not checked.
    fn expiry_index(&mut self, table: &TableDef) -> Result<(), ApiError> {
        let Some(ttl) = table.time_to_live.as_ref().filter(|ttl| ttl.backfilled) else {
            return Ok(());
        };
        let no_attributes = || std::iter::empty::<(&str, &AttributeValue)>();
        let pk_type = table.key.hash.scalar_type();
        let mut expected = Digest::default();
        let mut cursor = self
            .db
            .iter_tree(table.tree, self.snapshot)
            .map_err(internal)?;
        while cursor.advance().map_err(internal)? {
            let (_, section) = keys::split_table_key(cursor.key(), pk_type).map_err(internal)?;
            if section != SECTION_BASE {
                continue;
            }
            let item = decode_item(cursor.value()).map_err(internal)?;
            if let Some((_, key)) = expiry_entry(table, &item, cursor.key()) {
                expected.add(self.hasher.entry(&key, no_attributes()));
            }
        }
        drop(cursor);
        let mut stored = Digest::default();
        let mut cursor = self
            .db
            .iter_tree(ttl.tree, self.snapshot)
            .map_err(internal)?;
        while cursor.advance().map_err(internal)? {
            self.report.index_entries += 1;
            stored.add(self.hasher.entry(cursor.key(), no_attributes()));
        }
        drop(cursor);
        if stored == expected || self.report.is_full() {
            return Ok(());
        }
        // Each stored entry must be the one its item derives.
        let mut cursor = self
            .db
            .iter_tree(ttl.tree, self.snapshot)
            .map_err(internal)?;
        while !self.report.is_full() && cursor.advance().map_err(internal)? {
            let key = cursor.key();
            let base_key = key.get(8..).unwrap_or_default();
            let item = self
                .db
                .get_with(table.tree, base_key, Some(self.snapshot), decode_item)
                .map_err(internal)?
                .transpose()
                .map_err(internal)?;
            let derived = item.and_then(|item| expiry_entry(table, &item, base_key));
            if derived.as_ref().map(|(_, k)| k.as_slice()) != Some(key) {
                self.report.problem(format!(
                    "table {}, expiry index: entry {key:02x?} is not what its item derives",
                    table.name
                ));
            }
        }
        drop(cursor);
        // Each item with an expiry must have its entry.
        let mut cursor = self
            .db
            .iter_tree(table.tree, self.snapshot)
            .map_err(internal)?;
        while !self.report.is_full() && cursor.advance().map_err(internal)? {
            let (prefix_len, section) =
                keys::split_table_key(cursor.key(), pk_type).map_err(internal)?;
            if section != SECTION_BASE {
                continue;
            }
            let item = decode_item(cursor.value()).map_err(internal)?;
            let Some((_, key)) = expiry_entry(table, &item, cursor.key()) else {
                continue;
            };
            let present = self
                .db
                .get_with(ttl.tree, &key, Some(self.snapshot), |_| ())
                .map_err(internal)?
                .is_some();
            if !present {
                self.report.problem(format!(
                    "table {}, expiry index: an item of the partition {} has no entry",
                    table.name,
                    describe_partition(table, &cursor.key()[..prefix_len])
                ));
            }
        }
        Ok(())
    }
}

/// Distinct items whose last stream record the check compares at most (16 bytes of memory
/// each); past it the rest of the stream is not checked and the report says so.
const STREAM_KEYS_CHECKED_MAX: usize = 8 << 20;

impl Checker<'_> {
    /// The table's enabled stream against its items (invariant 8, where the items can show
    /// it): for each item that has a record, its LAST record must describe what the item is
    /// now — REMOVE if it is gone, else INSERT or MODIFY, with a NewImage equal to the item
    /// when the view type carries one. Every change after the first record of a key has a
    /// record of its own, so a last record that disagrees means a change without a record,
    /// or a record without its change. Items without records (unchanged since the stream
    /// was enabled) have nothing to compare. The walk goes from the newest record back,
    /// remembering a 128-bit hash of each key seen.
    fn stream(&mut self, table: &TableDef) -> Result<(), ApiError> {
        let Some(stream_def) = table.enabled_stream() else {
            return Ok(());
        };
        let mut seen: std::collections::HashSet<u128> = std::collections::HashSet::new();
        let mut cursor = self
            .db
            .iter(
                stream_def.tree,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                Direction::Reverse,
                Some(self.snapshot),
            )
            .map_err(internal)?;
        while !self.report.is_full() && cursor.advance().map_err(internal)? {
            let Some(seq) = cursor.key().try_into().ok().map(u64::from_be_bytes) else {
                self.report.problem(format!(
                    "table {}, stream: a malformed record key",
                    table.name
                ));
                continue;
            };
            let record = match decode_record(seq, stream_def.view_type, cursor.value()) {
                Ok(record) => record,
                Err(error) => {
                    self.report.problem(format!(
                        "table {}, stream: record {seq}: {error}",
                        table.name
                    ));
                    continue;
                }
            };
            let key = match key_of_item(table, &record.keys).and_then(|key| key.base_key()) {
                Ok(key) => key,
                Err(error) => {
                    self.report.problem(format!(
                        "table {}, stream: record {seq} has bad keys: {}",
                        table.name, error.message
                    ));
                    continue;
                }
            };
            if !seen.insert(self.hasher.entry(&key, std::iter::empty())) {
                continue; // an older record of a key already compared
            }
            if seen.len() > STREAM_KEYS_CHECKED_MAX {
                self.report.problem(format!(
                    "table {}, stream: only the last records of {STREAM_KEYS_CHECKED_MAX} items were compared",
                    table.name
                ));
                break;
            }
            let item = self
                .db
                .get_with(table.tree, &key, Some(self.snapshot), decode_item)
                .map_err(internal)?
                .transpose()
                .map_err(internal)?;
            let agrees = match (record.event_name, &item) {
                (EventName::Remove, None) => true,
                (EventName::Remove, Some(_)) | (_, None) => false,
                (_, Some(item)) => record.new_image.as_ref().is_none_or(|image| image == item),
            };
            if !agrees {
                self.report.problem(format!(
                    "table {}, stream: the last record of {} ({} at sequence number {seq}) disagrees with the item ({})",
                    table.name,
                    record.keys.iter().map(|(n, v)| format!("{n} = {}", v.to_json())).collect::<Vec<_>>().join(", "),
                    record.event_name.as_str(),
                    if item.is_some() { "present" } else { "absent" }
                ));
            }
        }
        Ok(())
    }
}

/// An order-independent digest of a multiset of index entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Digest {
    count: u64,
    /// Wrapping sum of the entries' hashes.
    sum: u128,
}

impl Digest {
    fn add(&mut self, hash: u128) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(hash);
    }
}

/// The 128-bit hash of an index entry, from two SipHash-1-3 keyed at random.
struct EntryHasher {
    high: RandomState,
    low: RandomState,
}

impl EntryHasher {
    fn new() -> EntryHasher {
        EntryHasher {
            high: RandomState::new(),
            low: RandomState::new(),
        }
    }

    /// The hash of the entry stored under `key` with `attributes` (in name order). Equal
    /// for two entries with equal keys whose attributes are equal as DynamoDB compares them.
    fn entry<'v>(
        &self,
        key: &[u8],
        attributes: impl Iterator<Item = (&'v str, &'v AttributeValue)>,
    ) -> u128 {
        let mut both = Both(self.high.build_hasher(), self.low.build_hasher());
        write_bytes(&mut both, key);
        for (name, value) in attributes {
            write_bytes(&mut both, name.as_bytes());
            hash_value(value, &mut both);
        }
        (u128::from(both.0.finish()) << 64) | u128::from(both.1.finish())
    }
}

/// Feeds two hashers at once.
struct Both<H>(H, H);

impl<H: Hasher> Hasher for Both<H> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
        self.1.write(bytes);
    }

    fn finish(&self) -> u64 {
        self.0.finish()
    }
}

/// Length-prefixed, so that consecutive strings cannot run into each other.
fn write_bytes(hasher: &mut impl Hasher, bytes: &[u8]) {
    hasher.write_usize(bytes.len());
    hasher.write(bytes);
}

/// Hashes a value so that values equal as DynamoDB compares them (`AttributeValue`'s
/// `PartialEq`: numbers by value, sets in any order) hash alike: a tag per type, lengths
/// before contents, and set members in sorted order.
fn hash_value(value: &AttributeValue, hasher: &mut impl Hasher) {
    use AttributeValue as V;
    match value {
        V::S(text) => {
            hasher.write_u8(1);
            write_bytes(hasher, text.as_bytes());
        }
        V::N(number) => {
            hasher.write_u8(2);
            // Numbers are normalised: the derived hash is numeric equality's.
            number.hash(hasher);
        }
        V::B(bytes) => {
            hasher.write_u8(3);
            write_bytes(hasher, bytes);
        }
        V::Bool(flag) => {
            hasher.write_u8(4);
            hasher.write_u8(u8::from(*flag));
        }
        V::Null => hasher.write_u8(5),
        V::M(map) => {
            hasher.write_u8(6);
            hasher.write_usize(map.len());
            for (name, member) in map {
                write_bytes(hasher, name.as_bytes());
                hash_value(member, hasher);
            }
        }
        V::L(list) => {
            hasher.write_u8(7);
            hasher.write_usize(list.len());
            for member in list {
                hash_value(member, hasher);
            }
        }
        V::Ss(members) => {
            hasher.write_u8(8);
            for member in sorted(members) {
                write_bytes(hasher, member.as_bytes());
            }
        }
        V::Ns(members) => {
            hasher.write_u8(9);
            for member in sorted(members) {
                member.hash(hasher);
            }
        }
        V::Bs(members) => {
            hasher.write_u8(10);
            for member in sorted(members) {
                write_bytes(hasher, member);
            }
        }
    }
    fn sorted<T: Ord>(members: &[T]) -> Vec<&T> {
        let mut sorted: Vec<&T> = members.iter().collect();
        sorted.sort_unstable();
        sorted
    }
}

/// Counts what the check has read and reports it every `PROGRESS_EVERY` items and entries.
struct Progress<'a> {
    state: CheckProgress,
    unreported: u64,
    report: &'a mut dyn FnMut(&CheckProgress),
}

impl Progress<'_> {
    fn item(&mut self, size_bytes: u64) {
        self.state.items += 1;
        self.read(size_bytes);
    }

    fn index_entry(&mut self, size_bytes: u64) {
        self.state.index_entries += 1;
        self.read(size_bytes);
    }

    fn read(&mut self, size_bytes: u64) {
        self.state.bytes += size_bytes;
        self.unreported += 1;
        if self.unreported >= PROGRESS_EVERY {
            self.now();
        }
    }

    fn locating(&mut self, scope: Option<String>) {
        self.state.locating = scope;
        self.now();
    }

    fn now(&mut self) {
        self.unreported = 0;
        (self.report)(&self.state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_model::Number;

    fn hash(hasher: &EntryHasher, attributes: &[(&str, AttributeValue)]) -> u128 {
        hasher.entry(b"key", attributes.iter().map(|(n, v)| (*n, v)))
    }

    #[test]
    fn entry_hashes_follow_dynamodb_equality() {
        let hasher = EntryHasher::new();
        let number = |text: &str| AttributeValue::N(Number::parse(text).unwrap());
        let set =
            |members: &[&str]| AttributeValue::Ss(members.iter().map(|m| m.to_string()).collect());
        // Sets in another order, numbers written otherwise: equal, so hashed alike.
        assert_eq!(
            hash(&hasher, &[("a", set(&["x", "y"])), ("n", number("1000"))]),
            hash(&hasher, &[("a", set(&["y", "x"])), ("n", number("1e3"))])
        );
        // Any change of key, name, type or value shows.
        let base = hash(&hasher, &[("a", AttributeValue::S("ab".into()))]);
        for other in [
            hash(&hasher, &[("a", AttributeValue::S("ba".into()))]),
            hash(&hasher, &[("b", AttributeValue::S("ab".into()))]),
            hash(&hasher, &[("a", AttributeValue::B(b"ab".to_vec()))]),
            hash(&hasher, &[("a", set(&["ab"]))]),
            hash(
                &hasher,
                &[
                    ("a", AttributeValue::S("a".into())),
                    ("b", AttributeValue::Null),
                ],
            ),
            hasher.entry(
                b"other",
                [("a", &AttributeValue::S("ab".into()))].into_iter(),
            ),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn digests_ignore_order_and_count_entries() {
        let (mut one, mut other) = (Digest::default(), Digest::default());
        for hash in [u128::MAX, 7, 1 << 100] {
            one.add(hash);
        }
        for hash in [1 << 100, u128::MAX, 7] {
            other.add(hash);
        }
        assert_eq!(one, other);
        other.add(0);
        assert_ne!(one, other, "an entry hashing to zero still counts");
    }
}
