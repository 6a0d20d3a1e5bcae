//! Table statistics kept with the writes: the item count and size of every table and index,
//! so that DescribeTable (and every SDK waiter and GUI that polls it) costs the same at a
//! million items as at ten.
//!
//! Where they live: one tree of the database, [`STATS_TREE_NAME`], holds one record per
//! (table, collection-lock stripe). A write of a table commits the new record of its
//! stripe in the same batch as its items and index entries: the record is read under the
//! stripe's collection lock, which every writer of that stripe holds (`core::locks`), and
//! the write's deltas are added. A table's figures are the sum of its records. Striping
//! keeps unrelated writers from meeting on one record, as they do not meet on one lock.
//!
//! DescribeTable reads none of them: [`TableStatistics`] keeps each table's sums in memory,
//! loaded from the records when the database opens and moved by every committed write, so
//! answering costs the same whatever the table's size and however many versions of the
//! records the LSM still holds. The records are what survives a crash.
//!
//! What is counted: for the table, its items; for each index, its entries. Sizes are
//! DynamoDB item sizes (`shoal_model::item_size_bytes`) of each item or entry, without the
//! 100-byte per-item storage overhead.
//!
//! Who keeps them exact:
//! - item writes, batches and transactions: `plan_write` gives each write's delta for the
//!   table, its LSIs and its ACTIVE GSIs (the old item is read under the lock, so the old
//!   entries are known); `Core::commit_plans_across` adds the deltas per stripe;
//! - a GSI still CREATING may lack the entries of items not yet backfilled, so for its tree
//!   the commit reads whether each entry it deletes or overwrites exists, and counts what
//!   it finds; the backfill counts an entry only when it adds it (a write may have added it
//!   first);
//! - a table created before statistics were kept has none: its records are rebuilt from a
//!   scan when the database opens, before any write, and marked complete in the same batch
//!   ([`MAINTAINED_MARKER_STRIPE`]); a new table's marker is written before it is visible.
//!
//! Invariant (checked by `Database::check`, so by every crash test, with a [`Recount`] made
//! in its one pass over the table): the sum of a table's records equals the counts and
//! sizes recomputed from its stored items and entries.
//!
//! On disk (all integers big-endian):
//!
//! ```text
//! key:   table tree id (u32) | stripe (u16)        stripe 0xFFFF: the "maintained" marker,
//!                                                  with an empty value
//! value: format (u8, = 1) | count (u16) | count × entry
//! entry: kind (u8: 0 the table, 1 an LSI, 2 a GSI) | id (u32: 0; the LSI's section; the
//!        GSI's tree id) | items (i64) | bytes (i64)
//! ```
//!
//! An index is named by its section or tree, never by its name: a GSI deleted and created
//! again under the same name gets a new tree, so stale counts cannot carry over. Entries of
//! indexes a table no longer has are dropped when their record is next written.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use std::sync::OnceLock;

use parking_lot::Mutex;

use shoal_engine::{Db, Direction, Snapshot, TreeId, WriteBatch};
use shoal_model::{ApiError, Item};

use crate::core::catalog::{GlobalIndexDef, IndexStatus, TableDef};
use crate::core::error::internal;
use crate::core::item_codec::decode_item;
use crate::core::keys;
use crate::core::locks::{CollectionLocks, STRIPES};

/// Name of the tree holding every table's statistics records.
pub const STATS_TREE_NAME: &str = "table-stats";

/// Format byte of a statistics record.
const RECORD_FORMAT: u8 = 1;

/// Bytes of one record entry: kind, id, items, bytes.
const ENTRY_BYTES: usize = 1 + 4 + 8 + 8;

/// The "stripe" of the key that marks a table's records as complete.
pub const MAINTAINED_MARKER_STRIPE: u16 = u16::MAX;

const _: () = assert!(STRIPES <= MAINTAINED_MARKER_STRIPE as usize);

/// Entry count and total size of one table or index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SizeStats {
    pub item_count: u64,
    /// Σ of DynamoDB item sizes (`shoal_model::item_size_bytes`), without the 100-byte
    /// per-item storage overhead.
    pub size_bytes: u64,
}

/// Sizes of a table and its indexes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableStats {
    pub table: SizeStats,
    /// Per LSI, in `TableDef::local_indexes` order.
    pub local_indexes: Vec<SizeStats>,
    /// Per GSI, in `TableDef::global_indexes` order.
    pub global_indexes: Vec<SizeStats>,
}

impl TableStats {
    /// Zeros for every index of `table`.
    pub fn empty_for(table: &TableDef) -> TableStats {
        TableStats {
            table: SizeStats::default(),
            local_indexes: vec![SizeStats::default(); table.local_indexes.len()],
            global_indexes: vec![SizeStats::default(); table.global_indexes.len()],
        }
    }
}

/// Entry count and size (bytes) per table or index: what a delta, a record and a table's
/// sums hold.
type Sums = BTreeMap<Counted, (i64, i64)>;

/// What a statistics entry counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Counted {
    Table,
    /// An LSI, by its section in the table tree.
    Local(u8),
    /// A GSI, by its tree.
    Global(TreeId),
}

impl Counted {
    fn encode(self) -> (u8, u32) {
        match self {
            Counted::Table => (0, 0),
            Counted::Local(section) => (1, u32::from(section)),
            Counted::Global(tree) => (2, tree),
        }
    }

    fn decode(kind: u8, id: u32) -> Option<Counted> {
        match kind {
            0 => Some(Counted::Table),
            1 => u8::try_from(id).ok().map(Counted::Local),
            2 => Some(Counted::Global(id)),
            _ => None,
        }
    }

    /// Whether `table` (as currently defined) still has what this counts.
    fn exists_in(self, table: &TableDef) -> bool {
        match self {
            Counted::Table => true,
            Counted::Local(section) => table.local_indexes.iter().any(|l| l.section == section),
            Counted::Global(tree) => table.global_indexes.iter().any(|g| g.tree == tree),
        }
    }
}

/// Changes in entry count and size, per table or index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsDelta {
    counts: Sums,
}

impl StatsDelta {
    /// Counts one entry of `size_bytes` more (`sign` 1) or less (`sign` -1).
    pub fn add(&mut self, counted: Counted, sign: i64, size_bytes: u64) {
        debug_assert!(sign == 1 || sign == -1);
        // Items are at most 400 KB: far inside i64.
        let slot = self.counts.entry(counted).or_default();
        slot.0 += sign;
        slot.1 += sign * size_bytes as i64;
    }

    /// Changes the size of one entry that stays.
    pub fn resize(&mut self, counted: Counted, before_bytes: u64, after_bytes: u64) {
        if before_bytes != after_bytes {
            let slot = self.counts.entry(counted).or_default();
            slot.1 += after_bytes as i64 - before_bytes as i64;
        }
    }

    pub fn merge(&mut self, other: &StatsDelta) {
        for (counted, (items, bytes)) in &other.counts {
            let slot = self.counts.entry(*counted).or_default();
            slot.0 += items;
            slot.1 += bytes;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.counts
            .values()
            .all(|&(items, bytes)| items == 0 && bytes == 0)
    }
}

/// The statistics tree and every open table's sums, kept in memory from the records.
#[derive(Debug)]
pub struct TableStatistics {
    /// The tree holding every table's records: created with the first table (in the same
    /// version change), so opening an empty data directory writes no version for it.
    tree: OnceLock<TreeId>,
    /// Per table (by its tree): the sum of its records as of the last committed write.
    sums: Mutex<HashMap<TreeId, Sums>>,
}

impl TableStatistics {
    /// Statistics kept in `tree`, or in a tree still to be created (`None`).
    pub fn new(tree: Option<TreeId>) -> TableStatistics {
        let statistics = TableStatistics {
            tree: OnceLock::new(),
            sums: Mutex::new(HashMap::new()),
        };
        if let Some(tree) = tree {
            statistics.set_tree(tree);
        }
        statistics
    }

    /// The statistics tree, once it exists (it does whenever a table does).
    pub fn tree(&self) -> Result<TreeId, ApiError> {
        self.tree
            .get()
            .copied()
            .ok_or_else(|| internal("the table statistics tree does not exist"))
    }

    /// Whether the statistics tree exists yet.
    pub fn has_tree(&self) -> bool {
        self.tree.get().is_some()
    }

    /// Records the statistics tree once it is created.
    pub fn set_tree(&self, tree: TreeId) {
        let stored = *self.tree.get_or_init(|| tree);
        debug_assert_eq!(stored, tree, "one statistics tree per database");
    }

    /// Loads `table`'s sums from its records (at open, and after a rebuild).
    pub fn load(&self, db: &Db, table: &TableDef) -> Result<(), ApiError> {
        let sums = sum_records(db, self.tree()?, table, None)?;
        self.sums.lock().insert(table.tree, sums);
        Ok(())
    }

    /// Moves `table`'s sums by a delta whose records were just committed.
    pub fn committed(&self, table: &TableDef, delta: &StatsDelta) {
        if delta.is_empty() {
            return;
        }
        let mut sums = self.sums.lock();
        let table_sums = sums.entry(table.tree).or_default();
        for (counted, (items, bytes)) in &delta.counts {
            let slot = table_sums.entry(*counted).or_default();
            slot.0 += items;
            slot.1 += bytes;
        }
    }

    /// Forgets a deleted table's sums.
    pub fn forget(&self, table_tree: TreeId) {
        self.sums.lock().remove(&table_tree);
    }

    /// `table`'s figures as of the last committed write.
    pub fn of(&self, table: &TableDef) -> TableStats {
        let sums = self.sums.lock();
        let empty = BTreeMap::new();
        figures(table, sums.get(&table.tree).unwrap_or(&empty))
    }
}

/// A table's figures from its sums (indexes it no longer has are left out).
fn figures(table: &TableDef, sums: &Sums) -> TableStats {
    let size = |counted: Counted| {
        let (items, bytes) = sums.get(&counted).copied().unwrap_or_default();
        // Negative sums would be a broken invariant; `check` reports it, readers see 0.
        SizeStats {
            item_count: u64::try_from(items).unwrap_or(0),
            size_bytes: u64::try_from(bytes).unwrap_or(0),
        }
    };
    TableStats {
        table: size(Counted::Table),
        local_indexes: table
            .local_indexes
            .iter()
            .map(|l| size(Counted::Local(l.section)))
            .collect(),
        global_indexes: table
            .global_indexes
            .iter()
            .map(|g| size(Counted::Global(g.tree)))
            .collect(),
    }
}

/// The record of one (table, stripe): counts per table or index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsRecord {
    counts: Sums,
}

impl StatsRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(3 + self.counts.len() * ENTRY_BYTES);
        out.push(RECORD_FORMAT);
        // At most 1 + 5 LSIs + 20 GSIs entries: far inside u16.
        out.extend_from_slice(&(self.counts.len() as u16).to_be_bytes());
        for (counted, (items, bytes)) in &self.counts {
            let (kind, id) = counted.encode();
            out.push(kind);
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&items.to_be_bytes());
            out.extend_from_slice(&bytes.to_be_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<StatsRecord, String> {
        let malformed = |what: &str| format!("malformed table statistics record: {what}");
        let (&format, rest) = bytes.split_first().ok_or_else(|| malformed("empty"))?;
        if format != RECORD_FORMAT {
            return Err(malformed(&format!("unknown format {format}")));
        }
        let (count, mut rest) = rest
            .split_first_chunk::<2>()
            .ok_or_else(|| malformed("no entry count"))?;
        let count = usize::from(u16::from_be_bytes(*count));
        if rest.len() != count * ENTRY_BYTES {
            return Err(malformed("length does not match its entry count"));
        }
        let mut counts = BTreeMap::new();
        while let Some((entry, next)) = rest.split_first_chunk::<ENTRY_BYTES>() {
            let id = u32::from_be_bytes([entry[1], entry[2], entry[3], entry[4]]);
            let counted = Counted::decode(entry[0], id).ok_or_else(|| malformed("unknown kind"))?;
            let mut number = [0u8; 8];
            number.copy_from_slice(&entry[5..13]);
            let items = i64::from_be_bytes(number);
            number.copy_from_slice(&entry[13..21]);
            let bytes = i64::from_be_bytes(number);
            counts.insert(counted, (items, bytes));
            rest = next;
        }
        Ok(StatsRecord { counts })
    }

    /// The record after `delta`, keeping only what `table` still has; zero counts are
    /// dropped, so a stripe emptied of items has an empty record.
    fn apply(&self, delta: &StatsDelta, table: &TableDef) -> StatsRecord {
        let mut counts = self.counts.clone();
        for (counted, (items, bytes)) in &delta.counts {
            let slot = counts.entry(*counted).or_default();
            slot.0 += items;
            slot.1 += bytes;
        }
        counts.retain(|counted, (items, bytes)| {
            counted.exists_in(table) && (*items != 0 || *bytes != 0)
        });
        StatsRecord { counts }
    }

    fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// The key of the record of (`table_tree`, `stripe`).
pub fn record_key(table_tree: TreeId, stripe: u16) -> [u8; 6] {
    let mut key = [0u8; 6];
    key[..4].copy_from_slice(&table_tree.to_be_bytes());
    key[4..].copy_from_slice(&stripe.to_be_bytes());
    key
}

/// The stripe of a write to the collection with `partition_prefix`, as its lock has it.
pub fn stripe_of(table: &TableDef, partition_prefix: &[u8]) -> u16 {
    // STRIPES fits in u16 (asserted above).
    CollectionLocks::stripe_of(table.tree, partition_prefix) as u16
}

/// Whether writes of `table` to GSI `tree` count its entries by reading them (the index is
/// still being created, so an item's entry may not exist yet).
pub fn counted_by_reading(table: &TableDef, tree: TreeId) -> bool {
    table
        .global_indexes
        .iter()
        .any(|g| g.tree == tree && !matches!(g.status, IndexStatus::Active))
}

/// Adds to `batch` the new records of `table`'s stripes after `deltas`. The caller holds
/// the collection lock of every stripe in `deltas`.
pub fn stage(
    db: &Db,
    stats_tree: TreeId,
    table: &TableDef,
    deltas: &BTreeMap<u16, StatsDelta>,
    batch: &mut WriteBatch,
) -> Result<StatsDelta, ApiError> {
    let mut total = StatsDelta::default();
    for (stripe, delta) in deltas {
        if delta.is_empty() {
            continue;
        }
        let key = record_key(table.tree, *stripe);
        // The record this batch replaces (`Db::get_replaced_with`).
        let before = db.get_replaced_with(stats_tree, &key, <[u8]>::to_vec);
        let before = match before.map_err(internal)? {
            Some(bytes) => StatsRecord::decode(&bytes).map_err(internal)?,
            None => StatsRecord::default(),
        };
        put_record(stats_tree, &key, &before.apply(delta, table), batch)?;
        total.merge(delta);
    }
    Ok(total)
}

/// Adds `record` at `key` to `batch`; an empty record is a deletion, so a stripe emptied of
/// items leaves no record behind.
fn put_record(
    stats_tree: TreeId,
    key: &[u8],
    record: &StatsRecord,
    batch: &mut WriteBatch,
) -> Result<(), ApiError> {
    if record.is_empty() {
        batch.delete(stats_tree, key)
    } else {
        batch.put(stats_tree, key, &record.encode())
    }
    .map_err(internal)
}

/// `table`'s figures from its records as of `snapshot`: what a backup taken at that
/// snapshot records.
pub fn figures_at(
    db: &Db,
    stats_tree: TreeId,
    table: &TableDef,
    snapshot: &Snapshot,
) -> Result<TableStats, ApiError> {
    Ok(figures(
        table,
        &sum_records(db, stats_tree, table, Some(snapshot))?,
    ))
}

/// The sum of `table`'s records, as of `snapshot` (or now).
fn sum_records(
    db: &Db,
    stats_tree: TreeId,
    table: &TableDef,
    snapshot: Option<&Snapshot>,
) -> Result<Sums, ApiError> {
    let lower = record_key(table.tree, 0);
    let upper = record_key(table.tree, MAINTAINED_MARKER_STRIPE);
    let mut cursor = db
        .iter(
            stats_tree,
            Bound::Included(&lower[..]),
            Bound::Excluded(&upper[..]),
            Direction::Forward,
            snapshot,
        )
        .map_err(internal)?;
    let mut sums: Sums = BTreeMap::new();
    while cursor.advance().map_err(internal)? {
        let record = StatsRecord::decode(cursor.value()).map_err(internal)?;
        for (counted, (items, bytes)) in record.counts {
            let slot = sums.entry(counted).or_default();
            slot.0 += items;
            slot.1 += bytes;
        }
    }
    // Counts of indexes the table no longer has are left out.
    sums.retain(|counted, _| counted.exists_in(table));
    Ok(sums)
}

/// Whether `table`'s records are complete (kept since its creation, or rebuilt).
pub fn is_maintained(db: &Db, stats_tree: TreeId, table: &TableDef) -> Result<bool, ApiError> {
    Ok(db
        .get(
            stats_tree,
            &record_key(table.tree, MAINTAINED_MARKER_STRIPE),
            None,
        )
        .map_err(internal)?
        .is_some())
}

/// Adds `table`'s "maintained" marker to `batch`.
pub fn mark_maintained(
    stats_tree: TreeId,
    table: &TableDef,
    batch: &mut WriteBatch,
) -> Result<(), ApiError> {
    batch
        .put(
            stats_tree,
            &record_key(table.tree, MAINTAINED_MARKER_STRIPE),
            &[],
        )
        .map_err(internal)
}

/// A table's records recounted from its stored items and entries as a scan reads them, by
/// stripe. It holds at most one delta per stripe (`STRIPES`), whatever the table's size, so
/// `Database::check` recounts in the same pass that verifies the indexes.
#[derive(Debug, Clone, Default)]
pub struct Recount {
    by_stripe: BTreeMap<u16, StatsDelta>,
}

impl Recount {
    /// Counts a stored base item (`section` 0) or LSI entry of the table tree, whose key
    /// starts with `partition_prefix`. Collection records are not counted: the caller skips
    /// them.
    pub fn table_entry(
        &mut self,
        table: &TableDef,
        partition_prefix: &[u8],
        section: u8,
        size_bytes: u64,
    ) {
        let counted = if section == keys::SECTION_BASE {
            Counted::Table
        } else {
            Counted::Local(section)
        };
        self.by_stripe
            .entry(stripe_of(table, partition_prefix))
            .or_default()
            .add(counted, 1, size_bytes);
    }

    /// Counts a stored entry of `gsi`. A GSI entry always projects the table's key, and its
    /// stripe is that of the base item's collection.
    pub fn global_entry(
        &mut self,
        table: &TableDef,
        gsi: &GlobalIndexDef,
        entry: &Item,
    ) -> Result<(), ApiError> {
        let pk = entry.get(&table.key.hash.name).ok_or_else(|| {
            internal(format!(
                "an entry of index {} lacks the table's partition key",
                gsi.name
            ))
        })?;
        let partition_prefix = keys::partition_prefix(pk).map_err(internal)?;
        self.by_stripe
            .entry(stripe_of(table, &partition_prefix))
            .or_default()
            .add(
                Counted::Global(gsi.tree),
                1,
                shoal_model::item_size_bytes(entry) as u64,
            );
        Ok(())
    }

    /// The records the counts give, by stripe, leaving out empty ones.
    fn records(&self, table: &TableDef) -> BTreeMap<u16, StatsRecord> {
        self.by_stripe
            .iter()
            .map(|(stripe, delta)| (*stripe, StatsRecord::default().apply(delta, table)))
            .filter(|(_, record)| !record.is_empty())
            .collect()
    }
}

/// Every record of `table` recounted from its stored items and entries at `snapshot`: what
/// a rebuild writes.
fn recompute(db: &Db, table: &TableDef, snapshot: &Snapshot) -> Result<Recount, ApiError> {
    let mut recount = Recount::default();
    let pk_type = table.key.hash.scalar_type();
    let mut cursor = db.iter_tree(table.tree, snapshot).map_err(internal)?;
    while cursor.advance().map_err(internal)? {
        let key = cursor.key();
        let (prefix_len, section) = keys::split_table_key(key, pk_type).map_err(internal)?;
        if section == keys::SECTION_COLLECTION {
            continue;
        }
        recount.table_entry(
            table,
            &key[..prefix_len],
            section,
            entry_size(cursor.value())?,
        );
    }
    for gsi in &table.global_indexes {
        let mut cursor = db.iter_tree(gsi.tree, snapshot).map_err(internal)?;
        while cursor.advance().map_err(internal)? {
            let entry = decode_item(cursor.value()).map_err(internal)?;
            recount.global_entry(table, gsi, &entry)?;
        }
    }
    Ok(recount)
}

/// Compares `table`'s stored records at `snapshot`, stripe by stripe, with `recount`, the
/// counts the caller made of every stored item and entry of `table` at `snapshot` (in the
/// walk that checks the indexes, so the table is not read a second time); returns each
/// disagreement.
pub fn verify(
    db: &Db,
    stats_tree: TreeId,
    table: &TableDef,
    snapshot: &Snapshot,
    recount: &Recount,
) -> Result<Vec<String>, ApiError> {
    let mut problems = Vec::new();
    let marker = record_key(table.tree, MAINTAINED_MARKER_STRIPE);
    if db
        .get(stats_tree, &marker, Some(snapshot))
        .map_err(internal)?
        .is_none()
    {
        problems.push(format!(
            "table {}: its statistics are not marked complete",
            table.name
        ));
    }
    let expected = recount.records(table);
    let mut stored: BTreeMap<u16, StatsRecord> = BTreeMap::new();
    let lower = record_key(table.tree, 0);
    let mut cursor = db
        .iter(
            stats_tree,
            Bound::Included(&lower[..]),
            Bound::Excluded(&marker[..]),
            Direction::Forward,
            Some(snapshot),
        )
        .map_err(internal)?;
    while cursor.advance().map_err(internal)? {
        let stripe = u16::from_be_bytes([cursor.key()[4], cursor.key()[5]]);
        // Counts of indexes the table no longer has are dropped at the record's next write.
        let record = StatsRecord::decode(cursor.value()).map_err(internal)?;
        let current = record.apply(&StatsDelta::default(), table);
        if !current.is_empty() {
            stored.insert(stripe, current);
        }
    }
    for stripe in expected
        .keys()
        .chain(stored.keys())
        .copied()
        .collect::<std::collections::BTreeSet<u16>>()
    {
        let (want, have) = (expected.get(&stripe), stored.get(&stripe));
        if want != have {
            problems.push(format!(
                "table {}: statistics of stripe {stripe} are {:?}, its items and entries give {:?}",
                table.name,
                have.map(|r| &r.counts),
                want.map(|r| &r.counts)
            ));
        }
    }
    Ok(problems)
}

/// The size an item or index entry counts for: its DynamoDB item size.
pub fn entry_size(stored: &[u8]) -> Result<u64, ApiError> {
    let item = decode_item(stored).map_err(internal)?;
    Ok(shoal_model::item_size_bytes(&item) as u64)
}

/// Rebuilds `table`'s records from a scan and marks them complete, in one batch. Only for a
/// table no one writes meanwhile (the database is opening). Records already there (from a
/// rebuild a crash interrupted) are replaced.
pub fn rebuild(db: &Db, stats_tree: TreeId, table: &TableDef) -> Result<(), ApiError> {
    let snapshot = db.snapshot();
    let records = recompute(db, table, &snapshot)?.records(table);
    let mut batch = WriteBatch::new();
    // Every stripe, so a record left by a rebuild a crash interrupted goes too.
    for stripe in 0..STRIPES as u16 {
        let key = record_key(table.tree, stripe);
        let record = records.get(&stripe).cloned().unwrap_or_default();
        put_record(stats_tree, &key, &record, &mut batch)?;
    }
    mark_maintained(stats_tree, table, &mut batch)?;
    db.write(batch).map_err(internal)?;
    Ok(())
}

/// Removes the records of every table tree not in `live_tables` (a table deleted by a
/// DeleteTable whose cleanup a crash interrupted).
pub fn remove_orphans(db: &Db, stats_tree: TreeId, live_tables: &[TreeId]) -> Result<(), ApiError> {
    let mut batch = WriteBatch::new();
    let mut cursor = db
        .iter(
            stats_tree,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
        )
        .map_err(internal)?;
    while cursor.advance().map_err(internal)? {
        let key = cursor.key();
        let Some(tree) = key.first_chunk::<4>().map(|b| TreeId::from_be_bytes(*b)) else {
            continue;
        };
        if !live_tables.contains(&tree) {
            batch.delete(stats_tree, key).map_err(internal)?;
        }
    }
    drop(cursor);
    if !batch.is_empty() {
        db.write(batch).map_err(internal)?;
    }
    Ok(())
}

/// Adds to `batch` the deletion of every record of the table with tree `table_tree`.
pub fn remove_all(
    stats_tree: TreeId,
    table_tree: TreeId,
    batch: &mut WriteBatch,
) -> Result<(), ApiError> {
    for stripe in (0..STRIPES as u16).chain([MAINTAINED_MARKER_STRIPE]) {
        batch
            .delete(stats_tree, &record_key(table_tree, stripe))
            .map_err(internal)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_rejects_damage() {
        let mut delta = StatsDelta::default();
        delta.add(Counted::Table, 1, 120);
        delta.add(Counted::Local(1), 1, 40);
        delta.add(Counted::Global(7), 1, 33);
        let record = StatsRecord {
            counts: delta.counts.clone(),
        };
        let bytes = record.encode();
        assert_eq!(bytes.len(), 3 + 3 * ENTRY_BYTES);
        assert_eq!(StatsRecord::decode(&bytes).unwrap(), record);
        assert!(StatsRecord::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(StatsRecord::decode(&[]).is_err());
        let mut wrong_format = bytes.clone();
        wrong_format[0] = 9;
        assert!(StatsRecord::decode(&wrong_format).is_err());
        let mut wrong_kind = bytes;
        wrong_kind[3] = 5;
        assert!(StatsRecord::decode(&wrong_kind).is_err());
    }

    #[test]
    fn deltas_add_and_cancel() {
        let mut delta = StatsDelta::default();
        delta.add(Counted::Table, 1, 100);
        delta.add(Counted::Table, -1, 100);
        assert!(delta.is_empty());
        delta.resize(Counted::Global(3), 10, 25);
        let mut other = StatsDelta::default();
        other.add(Counted::Global(3), 1, 5);
        delta.merge(&other);
        assert_eq!(delta.counts[&Counted::Global(3)], (1, 20));
    }
}
