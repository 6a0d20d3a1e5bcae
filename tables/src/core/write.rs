//! The write pipeline every item mutation shares (PutItem, UpdateItem, DeleteItem, and the
//! batch and transaction members built on them), docs/DESIGN.md §3:
//!
//! 1. Key and item checks against the table's schema ([`key_from_request`],
//!    [`key_of_item`], [`check_new_item`]), with DynamoDB's texts (SPEC §3.1).
//! 2. Under the collection lock, the caller reads the old item and decides the new one.
//! 3. [`plan_write`] turns (old, new) into every storage mutation (base item, each index
//!    entry that changed), the capacity charged (SPEC §5) and the collection-size change;
//!    each registered feature (`core::feature`) adds its own mutations.
//! 4. [`Core::commit_plans`] adds the collection records (checking the cap), builds ONE
//!    write batch and commits it: the base item, its index entries, its collection record
//!    and what the features added change together or not at all; the features then hear of
//!    the commit.

use std::collections::BTreeMap;

use shoal_model::{ApiError, AttributeValue, ErrorCode, Item};

use crate::core::catalog::{entry_of, IndexStatus, KeyAttribute, TableDef};
use crate::core::clock::now_millis;
use crate::core::collection::{self, CollectionDelta, CollectionRecord};
use crate::core::error::internal;
use crate::core::feature::{Features, Initiator, ItemChange};
use crate::core::index::{
    self, IndexEntry, IndexRef, HASH_KEY_BYTES_MAX, RANGE_KEY_BYTES_MAX, STORAGE_OVERHEAD_BYTES,
};
use crate::core::item_codec::{decode_item, encode_item_sized, ItemForm};
use crate::core::keys;
use crate::core::plan::ItemKey;
use crate::core::plan::Mutation;
use crate::core::plan::WriteCapacity;
use crate::core::plan::WritePlan;
use crate::core::stats::{self, Counted, StatsDelta};
use crate::core::store::Core;
use crate::core::units::write_units;
use shoal_engine::{DbError, Snapshot, TreeId, WriteBatch};

/// The text for a `Key` parameter that is not exactly the table's key.
pub const KEY_SCHEMA_MISMATCH_MESSAGE: &str = "The provided key element does not match the schema";

/// Checks a `Key` parameter (GetItem, UpdateItem, DeleteItem, batch deletes): exactly the
/// table's key attributes with their types, non-empty, within the key size limits.
pub fn key_from_request(table: &TableDef, key: &Item) -> Result<ItemKey, ApiError> {
    let schema_size = 1 + usize::from(table.key.range.is_some());
    let typed = |attribute: &KeyAttribute| match key.get(&attribute.name) {
        Some(value) if attribute.accepts(value) => Ok(value.clone()),
        _ => Err(ApiError::validation(KEY_SCHEMA_MISMATCH_MESSAGE)),
    };
    if key.len() != schema_size {
        return Err(ApiError::validation(KEY_SCHEMA_MISMATCH_MESSAGE));
    }
    let pk = typed(&table.key.hash)?;
    let sk = match &table.key.range {
        Some(range) => Some(typed(range)?),
        None => None,
    };
    let item_key = ItemKey { pk, sk };
    check_key_values(table, &item_key)?;
    Ok(item_key)
}

/// Checks the table key attributes of an item about to be put and returns its key.
pub fn key_of_item(table: &TableDef, item: &Item) -> Result<ItemKey, ApiError> {
    let mut values = Vec::with_capacity(2);
    for attribute in table.key.attributes() {
        let Some(value) = item.get(&attribute.name) else {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Missing the key {} in the item",
                attribute.name
            )));
        };
        if !attribute.accepts(value) {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Type mismatch for key {} expected: {} actual: {}",
                attribute.name,
                attribute.scalar_type(),
                value.type_name()
            )));
        }
        values.push(value.clone());
    }
    let mut values = values.into_iter();
    let pk = values
        .next()
        .ok_or_else(|| internal("a table key schema without a hash key"))?;
    let item_key = ItemKey {
        pk,
        sk: values.next(),
    };
    check_key_values(table, &item_key)?;
    Ok(item_key)
}

/// Empty S/B key values and the 2048 / 1024-byte key limits (SPEC §1.3, §3.1).
fn check_key_values(table: &TableDef, key: &ItemKey) -> Result<(), ApiError> {
    shoal_model::check_key_value_not_empty(&table.key.hash.name, &key.pk)?;
    if let (Some(range), Some(sk)) = (&table.key.range, &key.sk) {
        shoal_model::check_key_value_not_empty(&range.name, sk)?;
    }
    if index::key_value_bytes(&key.pk) > HASH_KEY_BYTES_MAX {
        return Err(ApiError::validation(format!(
            "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of{HASH_KEY_BYTES_MAX} bytes"
        )));
    }
    if key
        .sk
        .as_ref()
        .is_some_and(|sk| index::key_value_bytes(sk) > RANGE_KEY_BYTES_MAX)
    {
        return Err(ApiError::validation(format!(
            "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of {RANGE_KEY_BYTES_MAX} bytes"
        )));
    }
    Ok(())
}

/// Checks an item about to be stored against the table's indexes: index key types, empty
/// index key values and index key sizes (`via_update` selects UpdateItem's wording). Item
/// size and nesting are checked by the caller with `shoal_model::check_item_limits` (for a Put
/// before the table is even looked up); the LSI part of the size rule is in [`plan_write`].
pub fn check_new_item(table: &TableDef, item: &Item, via_update: bool) -> Result<(), ApiError> {
    index::check_index_keys(table, item, via_update)
}

/// Rejects updates of table key attributes and nested paths into any key attribute
/// (SPEC §3.1). The same rule as UpdateItem's, for the Update actions of transactions.
pub fn check_update_key_paths(
    table: &TableDef,
    update: &shoal_expr::Update,
) -> Result<(), ApiError> {
    let all_keys = table.all_key_attribute_names();
    for path in update.paths() {
        let name = path.top_level_name();
        if table.key.names().any(|key| key == name) {
            return Err(ApiError::validation(if path.is_nested() {
                format!("Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: {name}")
            } else {
                format!("One or more parameter values were invalid: Cannot update attribute {name}. This attribute is part of the key")
            }));
        }
        if path.is_nested() && all_keys.contains(name) {
            return Err(ApiError::validation(format!(
                "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: IndexKey: {name}"
            )));
        }
    }
    Ok(())
}

/// Units charged for a write whose condition failed (SPEC §5): by the size of the item
/// that would have been written when an item exists, 1 when none does.
pub fn failed_condition_units(old: Option<&Item>, would_be_new: Option<&Item>) -> f64 {
    match old {
        None => write_units(0),
        Some(old) => write_units(shoal_model::item_size_bytes(would_be_new.unwrap_or(old)) as u64),
    }
}

/// Plans the write of one item: `old` is the stored item (None if absent), `new` the item
/// to store (None to delete), `features` the registered features, which add their own
/// mutations. `new` must have passed [`key_of_item`] / [`check_new_item`]. Fails (nothing
/// planned) when the item and its LSI entries exceed 400 KB together (`via_update` selects
/// UpdateItem's wording).
pub fn plan_write(
    features: &Features,
    table: &TableDef,
    key: &ItemKey,
    old: Option<&Item>,
    new: Option<&Item>,
    via_update: bool,
) -> Result<WritePlan, ApiError> {
    plan_write_by(
        features,
        table,
        key,
        old,
        new,
        via_update,
        Initiator::Client,
    )
}

/// [`plan_write`] of a change made by `initiator`.
pub fn plan_write_by(
    features: &Features,
    table: &TableDef,
    key: &ItemKey,
    old: Option<&Item>,
    new: Option<&Item>,
    via_update: bool,
    initiator: Initiator,
) -> Result<WritePlan, ApiError> {
    debug_assert!(
        [old, new]
            .into_iter()
            .flatten()
            .all(|item| item.get(&table.key.hash.name) == Some(&key.pk)),
        "planned items must carry the planned key"
    );
    let base_key = key.base_key()?;
    let old_entries = live_entries(table, old)?;
    let new_entries = live_entries(table, new)?;
    let old_size = old.map_or(0, |item| shoal_model::item_size_bytes(item) as u64);
    let new_size = new.map_or(0, |item| shoal_model::item_size_bytes(item) as u64);

    if new.is_some() {
        let lsi_bytes: u64 = new_entries
            .values()
            .filter(|e| matches!(e.index, IndexRef::Local(_)))
            .map(IndexEntry::size_bytes)
            .sum();
        if table.has_local_indexes()
            && new_size + lsi_bytes > shoal_model::ITEM_SIZE_BYTES_MAX as u64
        {
            return Err(item_too_large(via_update));
        }
    }

    let mut mutations = Vec::new();
    match new {
        Some(item) => mutations.push(Mutation::Put {
            tree: table.tree,
            key: base_key,
            value: encode_item_sized(item, new_size),
        }),
        None if old.is_some() => mutations.push(Mutation::Delete {
            tree: table.tree,
            key: base_key,
        }),
        None => {}
    }

    let mut capacity = WriteCapacity {
        table_units: write_units(old_size.max(new_size)),
        ..WriteCapacity::default()
    };
    let mut stats = StatsDelta::default();
    match (old, new) {
        (Some(_), Some(_)) => stats.resize(Counted::Table, old_size, new_size),
        (Some(_), None) => stats.add(Counted::Table, -1, old_size),
        (None, Some(_)) => stats.add(Counted::Table, 1, new_size),
        (None, None) => {}
    }
    let mut indexes: Vec<IndexRef> = old_entries
        .keys()
        .chain(new_entries.keys())
        .copied()
        .collect();
    indexes.sort_unstable();
    indexes.dedup();
    for index in indexes {
        let (tree, name) = index_location(table, index)?;
        let counted = match index {
            IndexRef::Local(position) => table
                .local_indexes
                .get(position)
                .map(|lsi| Counted::Local(lsi.section)),
            // A CREATING index may lack the old entry: the commit counts it by reading.
            IndexRef::Global(_) if stats::counted_by_reading(table, tree) => None,
            IndexRef::Global(_) => Some(Counted::Global(tree)),
        };
        let mut count = |sign: i64, size_bytes: u64| {
            if let Some(counted) = counted {
                stats.add(counted, sign, size_bytes);
            }
        };
        let units = match (old_entries.get(&index), new_entries.get(&index)) {
            (None, None) => continue,
            (None, Some(added)) => {
                mutations.push(put(tree, added));
                count(1, added.size_bytes());
                write_units(added.size_bytes())
            }
            (Some(removed), None) => {
                mutations.push(Mutation::Delete {
                    tree,
                    key: removed.key.clone(),
                });
                count(-1, removed.size_bytes());
                write_units(removed.size_bytes())
            }
            (Some(before), Some(after)) if before.key == after.key => {
                if before.item == after.item {
                    continue;
                }
                mutations.push(put(tree, after));
                count(-1, before.size_bytes());
                count(1, after.size_bytes());
                write_units(before.size_bytes().max(after.size_bytes()))
            }
            (Some(before), Some(after)) => {
                mutations.push(Mutation::Delete {
                    tree,
                    key: before.key.clone(),
                });
                mutations.push(put(tree, after));
                count(-1, before.size_bytes());
                count(1, after.size_bytes());
                write_units(before.size_bytes()) + write_units(after.size_bytes())
            }
        };
        let arms = match index {
            IndexRef::Local(_) => &mut capacity.local_units,
            IndexRef::Global(_) => &mut capacity.global_units,
        };
        *arms.entry(name.to_string()).or_default() += units;
    }

    let collection = table.has_local_indexes().then(|| {
        let footprint =
            |item: Option<&Item>, size: u64, entries: &BTreeMap<IndexRef, IndexEntry<'_>>| -> i64 {
                let lsi: u64 = entries
                    .values()
                    .filter(|e| matches!(e.index, IndexRef::Local(_)))
                    .map(IndexEntry::storage_bytes)
                    .sum();
                let base = if item.is_some() {
                    size + STORAGE_OVERHEAD_BYTES
                } else {
                    0
                };
                // Items are at most 400 KB with at most 5 LSI entries: far inside i64.
                (base + lsi) as i64
            };
        CollectionDelta {
            size_bytes: footprint(new, new_size, &new_entries)
                - footprint(old, old_size, &old_entries),
            item_count: i64::from(new.is_some()) - i64::from(old.is_some()),
        }
    });

    // The features hear of every change of the base item (none when neither `old` nor `new`
    // exists). The base item's mutation comes first: its key, and the new image already
    // encoded.
    let mut added = Vec::new();
    let base = match mutations.first() {
        Some(Mutation::Put { key, value, .. }) => Some((key, Some(value.as_slice()))),
        Some(Mutation::Delete { key, .. }) => Some((key, None)),
        _ => None,
    };
    if let Some((base_key, new_encoded)) = base {
        let change = ItemChange {
            table,
            base_key,
            old,
            new,
            new_encoded,
            initiator,
            now_millis: now_millis(),
        };
        for feature in features.iter() {
            feature.plan(&change, &mut added);
        }
    }
    mutations.extend(added);

    Ok(WritePlan {
        key: key.clone(),
        mutations,
        capacity,
        collection,
        stats,
    })
}

fn item_too_large(via_update: bool) -> ApiError {
    ApiError::validation(if via_update {
        shoal_model::size::UPDATED_ITEM_TOO_LARGE_MESSAGE
    } else {
        shoal_model::size::ITEM_TOO_LARGE_MESSAGE
    })
}

fn put(tree: TreeId, entry: &IndexEntry<'_>) -> Mutation {
    Mutation::Put {
        tree,
        key: entry.key.clone(),
        value: entry.item.encode(),
    }
}

/// The index entries of `item` that writes maintain: every index except a GSI being
/// deleted (its tree is about to go).
fn live_entries<'a>(
    table: &TableDef,
    item: Option<&'a Item>,
) -> Result<BTreeMap<IndexRef, IndexEntry<'a>>, ApiError> {
    let Some(item) = item else {
        return Ok(BTreeMap::new());
    };
    Ok(index::entries_for(table, item)?
        .into_iter()
        .filter(|entry| match entry.index {
            IndexRef::Local(_) => true,
            IndexRef::Global(position) => table
                .global_indexes
                .get(position)
                .is_some_and(|gsi| gsi.status != IndexStatus::Deleting),
        })
        .map(|entry| (entry.index, entry))
        .collect())
}

/// The tree and name of an index.
fn index_location(table: &TableDef, index: IndexRef) -> Result<(TreeId, &str), ApiError> {
    match index {
        IndexRef::Local(position) => table
            .local_indexes
            .get(position)
            .map(|lsi| (table.tree, lsi.name.as_str())),
        IndexRef::Global(position) => table
            .global_indexes
            .get(position)
            .map(|gsi| (gsi.tree, gsi.name.as_str())),
    }
    .ok_or_else(|| internal(format!("index {index:?} is not in table {}", table.name)))
}

/// The refusal of [`Core::check_definition_current`]; a client only sees it when the
/// indexes kept changing through every re-run.
const DEFINITION_CHANGED_MESSAGE: &str =
    "The table's indexes changed while the write was being planned; retry the request";

/// Whether `error` is the refusal of a commit planned with a table definition that has
/// changed since (nothing was written; planning again with the new one is the remedy).
pub(crate) fn is_definition_changed(error: &ApiError) -> bool {
    error.code == ErrorCode::InternalServerError && error.message == DEFINITION_CHANGED_MESSAGE
}

/// Runs a whole write operation at most this many times while the table's indexes change
/// under it (each change is an UpdateTable, so more than a few in a row is pathological).
const WRITE_ATTEMPTS_MAX: usize = 8;

/// Room reserved in a write's batch for its collection record: a typical record's key and
/// value (a larger one only makes the batch grow once).
const COLLECTION_ENTRY_BYTES_ESTIMATE: usize = 128;

/// Runs `attempt` (a whole write operation: validation against the table's current
/// definition, planning and commit) again when it was refused because the table's indexes
/// changed while it planned. A refused attempt wrote nothing, so running it again is safe;
/// DynamoDB never shows a GSI being added or removed to writers as an error.
pub(crate) fn replanning<T>(
    mut attempt: impl FnMut() -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let mut attempts = 1;
    loop {
        match attempt() {
            Err(error)
                if attempts < WRITE_ATTEMPTS_MAX
                    && error.code == ErrorCode::InternalServerError
                    && error.message == DEFINITION_CHANGED_MESSAGE =>
            {
                attempts += 1;
            }
            outcome => return outcome,
        }
    }
}

impl Core {
    /// The stored item with `key`, as of `snapshot` (or now).
    pub(crate) fn read_item(
        &self,
        table: &TableDef,
        key: &ItemKey,
        snapshot: Option<&Snapshot>,
    ) -> Result<Option<Item>, ApiError> {
        self.read_item_as(table, key, snapshot)
    }

    /// [`Core::read_item`] in the form `F` a read answers with (decoded, or as JSON).
    pub(crate) fn read_item_as<F: ItemForm>(
        &self,
        table: &TableDef,
        key: &ItemKey,
        snapshot: Option<&Snapshot>,
    ) -> Result<Option<F>, ApiError> {
        let found = self
            .db
            .get_with(table.tree, &key.base_key()?, snapshot, F::from_stored);
        found.map_err(internal)?.transpose().map_err(internal)
    }

    /// The stored item with `key` that a write is about to replace, now: read as the engine
    /// reads such values (`Db::get_replaced_with`: its table block copied by default, since
    /// later reads find the new item in a memtable, so the write load leaves no table pages
    /// in memory).
    pub(crate) fn read_replaced_item(
        &self,
        table: &TableDef,
        key: &ItemKey,
    ) -> Result<Option<Item>, ApiError> {
        let found = self
            .db
            .get_replaced_with(table.tree, &key.base_key()?, decode_item);
        found.map_err(internal)?.transpose().map_err(internal)
    }

    /// Commits the plans of one or more item writes of `table` as ONE atomic batch, with
    /// their collection records updated (per collection, deltas summed) and the size cap
    /// checked. The caller holds the collection locks of every plan. Returns the new record
    /// of each plan's collection, in plan order: None for tables without an LSI, and, unless
    /// `collection_sizes_wanted` (for ItemCollectionMetrics), for a collection the plans
    /// leave unchanged, whose record is then not even read.
    pub(crate) fn commit_plans(
        &self,
        table: &TableDef,
        plans: &[&WritePlan],
        collection_sizes_wanted: bool,
    ) -> Result<Vec<Option<CollectionRecord>>, ApiError> {
        let mut records =
            self.commit_plans_across(&[(table, plans.to_vec())], collection_sizes_wanted)?;
        Ok(records.pop().unwrap_or_default())
    }

    /// Commits the plans of item writes spanning several tables as ONE atomic batch (batches
    /// and transactions): every table's plans as [`Core::commit_plans`] would, but one
    /// WAL record for all of them. Each table appears once in `groups`. The caller holds the
    /// collection locks of every plan. Returns the new collection records per group, in plan
    /// order (None as [`Core::commit_plans`] says).
    pub(crate) fn commit_plans_across(
        &self,
        groups: &[(&TableDef, Vec<&WritePlan>)],
        collection_sizes_wanted: bool,
    ) -> Result<Vec<Vec<Option<CollectionRecord>>>, ApiError> {
        debug_assert!(
            {
                let mut trees: Vec<TreeId> = groups.iter().map(|(table, _)| table.tree).collect();
                trees.sort_unstable();
                trees.windows(2).all(|pair| pair[0] != pair[1])
            },
            "each table is committed as one group"
        );
        for (table, _) in groups {
            self.check_definition_current(table)?;
        }
        self.write_plans(groups, collection_sizes_wanted, false)
    }

    /// Commits plans as [`Core::commit_plans_across`] does, without checking the
    /// definitions against the catalog: for a staged table (`control::staging`), which has no
    /// catalog entry and whose definition nothing else can change. With `sync_deferred` the
    /// write returns before its own sync (`WriteBatch::defer_sync`): for a staged table,
    /// which nothing sees until one sync before its publish.
    pub(crate) fn write_plans(
        &self,
        groups: &[(&TableDef, Vec<&WritePlan>)],
        collection_sizes_wanted: bool,
        sync_deferred: bool,
    ) -> Result<Vec<Vec<Option<CollectionRecord>>>, ApiError> {
        // Sized once: the mutations, plus a collection record per plan at most.
        let payload_bytes: usize = groups
            .iter()
            .flat_map(|(_, plans)| plans)
            .map(|plan| {
                plan.mutations
                    .iter()
                    .map(Mutation::batch_bytes)
                    .sum::<usize>()
                    + COLLECTION_ENTRY_BYTES_ESTIMATE
            })
            .sum();
        let mut batch = WriteBatch::with_capacity(payload_bytes);
        for plan in groups.iter().flat_map(|(_, plans)| plans) {
            for mutation in &plan.mutations {
                let added = match mutation {
                    Mutation::Put { tree, key, value } => batch.put(*tree, key, value),
                    Mutation::Delete { tree, key } => batch.delete(*tree, key),
                    Mutation::PutSequenced {
                        tree,
                        prefix,
                        value,
                    } => batch.put_sequenced(*tree, prefix, value),
                };
                added.map_err(internal)?;
            }
        }
        let mut records = Vec::with_capacity(groups.len());
        let mut stats_deltas = Vec::with_capacity(groups.len());
        for (table, plans) in groups {
            records.push(self.stage_collections(
                table,
                plans,
                &mut batch,
                collection_sizes_wanted,
            )?);
            stats_deltas.push(self.stage_stats(table, plans, &mut batch)?);
        }
        if sync_deferred {
            batch.defer_sync();
        }
        if !batch.is_empty() {
            self.db.write(batch).map_err(internal)?;
        }
        for ((table, _), delta) in groups.iter().zip(&stats_deltas) {
            self.stats.committed(table, delta);
        }
        for (table, plans) in groups {
            for feature in self.features.iter() {
                feature.committed(table, plans);
            }
        }
        Ok(records)
    }

    /// Refuses to commit plans made from a table definition whose indexes have changed since
    /// (a GSI created or deleted between the caller reading the definition and taking its
    /// collection locks): the plans would miss or invent index entries. Checked under the
    /// collection locks; a backfill sweeps every lock stripe after changing the catalog, so
    /// a write either commits before the backfill reads its item or sees the new
    /// definition here. Nothing has been written when this refuses, so the write operations
    /// run again from the start ([`replanning`]) with the new definition.
    fn check_definition_current(&self, table: &TableDef) -> Result<(), ApiError> {
        let catalog = self.catalog.read();
        let Some(current) = entry_of(&catalog, table) else {
            return Err(crate::api::common::data_table_not_found());
        };
        let same_indexes = self
            .features
            .iter()
            .all(|feature| feature.plans_still_hold(table, current))
            && current.tree == table.tree
            && current.local_indexes == table.local_indexes
            && current.global_indexes.len() == table.global_indexes.len()
            && current
                .global_indexes
                .iter()
                .zip(&table.global_indexes)
                // Status moves (CREATING → ACTIVE) do not change what a write maintains.
                .all(|(a, b)| {
                    a.name == b.name
                        && a.tree == b.tree
                        && a.key == b.key
                        && a.projection == b.projection
                });
        if same_indexes {
            Ok(())
        } else {
            Err(ApiError::new(
                ErrorCode::InternalServerError,
                DEFINITION_CHANGED_MESSAGE,
            ))
        }
    }

    /// Adds the new statistics records of the stripes `plans` write to `batch`
    /// (`core::stats`), and returns what they add up to. The entries of a CREATING GSI are
    /// counted by reading them: an item not yet backfilled has none to delete or overwrite.
    fn stage_stats(
        &self,
        table: &TableDef,
        plans: &[&WritePlan],
        batch: &mut WriteBatch,
    ) -> Result<StatsDelta, ApiError> {
        let mut by_stripe: BTreeMap<u16, StatsDelta> = BTreeMap::new();
        for plan in plans {
            let mut delta = plan.stats.clone();
            for mutation in &plan.mutations {
                let (tree, key) = match mutation {
                    Mutation::Put { tree, key, .. } | Mutation::Delete { tree, key } => {
                        (*tree, key)
                    }
                    // A log of changes, never an index.
                    Mutation::PutSequenced { .. } => continue,
                };
                if tree == table.tree || !stats::counted_by_reading(table, tree) {
                    continue;
                }
                // The entry this write replaces (`Db::get_replaced_with`).
                let stored = match self.db.get_replaced_with(tree, key, <[u8]>::to_vec) {
                    Ok(stored) => stored,
                    // The index was deleted since the write was planned (a GSI deleted while
                    // still being created): its entries, and its counts, went with its tree.
                    Err(DbError::UnknownTree(_)) => continue,
                    Err(error) => return Err(internal(error)),
                };
                let counted = Counted::Global(tree);
                match (mutation, stored) {
                    (Mutation::Delete { .. }, Some(stored)) => {
                        delta.add(counted, -1, stats::entry_size(&stored)?)
                    }
                    (Mutation::Delete { .. }, None) => {}
                    (Mutation::Put { value, .. }, Some(stored)) => delta.resize(
                        counted,
                        stats::entry_size(&stored)?,
                        stats::entry_size(value)?,
                    ),
                    (Mutation::Put { value, .. }, None) => {
                        delta.add(counted, 1, stats::entry_size(value)?)
                    }
                    (Mutation::PutSequenced { .. }, _) => {}
                }
            }
            if !delta.is_empty() {
                let stripe = stats::stripe_of(table, &plan.key.partition_prefix()?);
                by_stripe.entry(stripe).or_default().merge(&delta);
            }
        }
        stats::stage(&self.db, self.stats.tree()?, table, &by_stripe, batch)
    }

    /// Adds the new collection records of `plans` to `batch` after checking the cap.
    fn stage_collections(
        &self,
        table: &TableDef,
        plans: &[&WritePlan],
        batch: &mut WriteBatch,
        collection_sizes_wanted: bool,
    ) -> Result<Vec<Option<CollectionRecord>>, ApiError> {
        // Deltas per collection, keyed by the collection record's storage key.
        let mut deltas: BTreeMap<Vec<u8>, (&AttributeValue, CollectionDelta)> = BTreeMap::new();
        for plan in plans {
            if let Some(delta) = &plan.collection {
                let record_key = keys::collection_key(&plan.key.pk).map_err(internal)?;
                let slot = deltas
                    .entry(record_key)
                    .or_insert((&plan.key.pk, CollectionDelta::default()));
                slot.1 = slot.1.plus(delta);
            }
        }
        let mut after_by_key = BTreeMap::new();
        for (record_key, (pk, delta)) in &deltas {
            if *delta == CollectionDelta::default() && !collection_sizes_wanted {
                // An unchanged collection cannot pass the cap and needs no rewrite, so unless
                // its size is reported its record is not read. An overwrite that keeps the
                // item's size is common, and the record often sits in an old table.
                continue;
            }
            let before = collection::read_record(&self.db, table, pk)?;
            let after = before.apply(delta)?;
            collection::check_growth(&before, &after, self.item_collection_size_limit_bytes)?;
            if after == before {
                // Nothing to rewrite.
            } else if after.is_empty() {
                batch.delete(table.tree, record_key).map_err(internal)?;
            } else {
                batch
                    .put(table.tree, record_key, &after.encode())
                    .map_err(internal)?;
            }
            after_by_key.insert(record_key.clone(), after);
        }
        plans
            .iter()
            .map(|plan| match plan.collection {
                None => Ok(None),
                Some(_) => {
                    let record_key = keys::collection_key(&plan.key.pk).map_err(internal)?;
                    Ok(after_by_key.get(&record_key).copied())
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::common::ReturnConsumedCapacity;
    use crate::core::catalog::{
        BillingMode, GlobalIndexDef, KeyAttribute, KeySchema, LocalIndexDef, Projection,
        CATALOG_FORMAT,
    };
    use shoal_model::{Number, ScalarType};

    fn definition_changed() -> ApiError {
        ApiError::new(ErrorCode::InternalServerError, DEFINITION_CHANGED_MESSAGE)
    }

    #[test]
    fn replanning_reruns_only_refusals_for_changed_indexes_and_is_bounded() {
        let mut calls = 0;
        let outcome = replanning(|| {
            calls += 1;
            if calls < 3 {
                Err(definition_changed())
            } else {
                Ok(calls)
            }
        });
        assert_eq!(outcome.unwrap(), 3);

        calls = 0;
        let outcome: Result<(), ApiError> = replanning(|| {
            calls += 1;
            Err(definition_changed())
        });
        assert_eq!(outcome.unwrap_err().message, DEFINITION_CHANGED_MESSAGE);
        assert_eq!(calls, WRITE_ATTEMPTS_MAX);

        // Any other error, even another InternalServerError, is answered at once.
        for error in [
            ApiError::validation("bad"),
            ApiError::new(ErrorCode::InternalServerError, "disk on fire"),
        ] {
            calls = 0;
            let outcome: Result<(), ApiError> = replanning(|| {
                calls += 1;
                Err(error.clone())
            });
            assert_eq!(outcome.unwrap_err(), error);
            assert_eq!(calls, 1);
        }
    }

    fn schema(hash: &str, range: Option<&str>) -> KeySchema {
        KeySchema::new(
            KeyAttribute::new(hash, ScalarType::S),
            range.map(|r| KeyAttribute::new(r, ScalarType::S)),
        )
    }

    /// The scenario table of capacity-index-writes.json: pk/sk, LSI ByL on l (KEYS_ONLY),
    /// GSI ByG on g (KEYS_ONLY).
    fn table() -> TableDef {
        TableDef {
            format: CATALOG_FORMAT,
            name: "Capacity".into(),
            id: "id".into(),
            created_at_millis: 0,
            key: schema("pk", Some("sk")),
            attribute_definitions: vec![],
            billing: BillingMode::PayPerRequest,
            tree: 1,
            local_indexes: vec![LocalIndexDef {
                name: "ByL".into(),
                key: schema("pk", Some("l")),
                projection: Projection::KeysOnly,
                section: 1,
            }],
            global_indexes: vec![GlobalIndexDef {
                name: "ByG".into(),
                key: schema("g", None),
                projection: Projection::Include(vec!["inc".into()]),
                tree: 2,
                status: IndexStatus::Active,
                throughput: None,
                capacity: Default::default(),
            }],
            streams: Vec::new(),
            time_to_live: None,
            time_to_live_changed_at_millis: None,
            settings: Default::default(),
            region: None,
            replication: None,
        }
    }

    fn item(pairs: &[(&str, &str)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), AttributeValue::S(v.to_string())))
            .collect()
    }

    fn key() -> ItemKey {
        ItemKey {
            pk: AttributeValue::S("a".into()),
            sk: Some(AttributeValue::S("1".into())),
        }
    }

    fn plan(old: Option<&Item>, new: Option<&Item>) -> WritePlan {
        plan_write(&Features::none(), &table(), &key(), old, new, false).unwrap()
    }

    /// Adds a put of the base key to tree 99 for every change it hears, and remembers who
    /// made each change.
    #[derive(Default)]
    struct Recording {
        initiators: parking_lot::Mutex<Vec<Initiator>>,
    }

    impl crate::core::feature::Feature for Recording {
        fn plan(&self, change: &ItemChange<'_>, mutations: &mut Vec<Mutation>) {
            self.initiators.lock().push(change.initiator);
            assert_eq!(
                change.new_encoded.is_some(),
                change.new.is_some(),
                "the new image comes encoded"
            );
            mutations.push(Mutation::Put {
                tree: 99,
                key: change.base_key.to_vec(),
                value: Vec::new(),
            });
        }
    }

    #[test]
    fn features_add_their_mutations_after_the_core_s_and_hear_who_made_the_change() {
        let recording = std::sync::Arc::new(Recording::default());
        let features = Features::new(vec![recording.clone()]);
        let new = item(&[("pk", "a"), ("sk", "1"), ("l", "x"), ("g", "y")]);
        let plain = plan(None, Some(&new));
        let with = plan_write(&features, &table(), &key(), None, Some(&new), false).unwrap();
        // The core's mutations first, untouched; the feature's after them.
        assert_eq!(with.mutations[..plain.mutations.len()], plain.mutations[..]);
        assert_eq!(
            with.mutations[plain.mutations.len()..],
            [Mutation::Put {
                tree: 99,
                key: key().base_key().unwrap(),
                value: Vec::new(),
            }]
        );
        // What the feature adds is not charged.
        assert_eq!(with.capacity, plain.capacity);
        let by_service = plan_write_by(
            &features,
            &table(),
            &key(),
            Some(&new),
            None,
            false,
            Initiator::Service,
        )
        .unwrap();
        assert_eq!(by_service.mutations.last().map(Mutation::tree), Some(99));
        // Deleting an item that does not exist changes nothing: no feature hears of it.
        plan_write(&features, &table(), &key(), None, None, false).unwrap();
        assert_eq!(
            *recording.initiators.lock(),
            [Initiator::Client, Initiator::Service]
        );
    }

    #[test]
    fn index_charges_follow_each_before_after_case() {
        let t = table();
        let both = item(&[("pk", "a"), ("sk", "1"), ("l", "x"), ("g", "y")]);
        let created = plan(None, Some(&both));
        assert_eq!(created.capacity.total(), 3.0);
        assert_eq!(created.mutations.len(), 3, "base + two index puts");

        let moved = item(&[("pk", "a"), ("sk", "1"), ("l", "x"), ("g", "z")]);
        let changed = plan(Some(&both), Some(&moved));
        assert_eq!(
            changed.capacity.global_units.get("ByG"),
            Some(&2.0),
            "key change: 2 writes"
        );
        assert!(
            changed.capacity.local_units.is_empty(),
            "unchanged LSI entry: no arm"
        );
        assert_eq!(
            changed.mutations.len(),
            3,
            "base put + GSI delete + GSI put"
        );

        let unprojected = {
            let mut i = moved.clone();
            i.insert("extra".into(), AttributeValue::S("v".into()));
            i
        };
        let quiet = plan(Some(&moved), Some(&unprojected));
        assert_eq!(quiet.capacity.total(), 1.0);
        assert_eq!(quiet.mutations.len(), 1, "only the base item");

        let projected = {
            let mut i = moved.clone();
            i.insert("inc".into(), AttributeValue::S("x".repeat(1500)));
            i
        };
        let same_key = plan(Some(&moved), Some(&projected));
        assert_eq!(
            same_key.capacity.global_units.get("ByG"),
            Some(&2.0),
            "max(old, new) rounded once"
        );
        assert_eq!(same_key.capacity.table_units, 2.0);

        let removed = plan(Some(&both), None);
        assert_eq!(removed.capacity.total(), 3.0);
        assert!(removed
            .mutations
            .iter()
            .all(|m| matches!(m, Mutation::Delete { .. })));

        let missing = plan(None, None);
        assert_eq!(missing.capacity.total(), 1.0);
        assert!(missing.mutations.is_empty());

        let report = created
            .capacity
            .report(&t.name, ReturnConsumedCapacity::Indexes)
            .unwrap();
        assert_eq!(report.table.unwrap().capacity_units, 1.0);
        assert_eq!(
            report.local_secondary_indexes.unwrap()["ByL"].capacity_units,
            1.0
        );
        let total = created
            .capacity
            .report(&t.name, ReturnConsumedCapacity::Total)
            .unwrap();
        assert!(total.table.is_none() && total.global_secondary_indexes.is_none());
        assert!(created
            .capacity
            .report(&t.name, ReturnConsumedCapacity::None)
            .is_none());
    }

    #[test]
    fn collection_delta_counts_items_and_lsi_entries_with_overhead() {
        let with_lsi = item(&[("pk", "a"), ("sk", "1"), ("l", "x")]);
        let size = shoal_model::item_size_bytes(&with_lsi) as i64;
        // The KEYS_ONLY entry holds pk, sk and l: the same attributes.
        let created = plan(None, Some(&with_lsi));
        assert_eq!(
            created.collection,
            Some(CollectionDelta {
                size_bytes: 2 * (size + 100),
                item_count: 1
            })
        );
        let deleted = plan(Some(&with_lsi), None);
        assert_eq!(
            deleted.collection,
            Some(CollectionDelta {
                size_bytes: -2 * (size + 100),
                item_count: -1
            })
        );
    }

    #[test]
    fn key_checks_use_dynamodb_texts() {
        let t = table();
        let message = |r: Result<ItemKey, ApiError>| r.unwrap_err().message;
        assert_eq!(
            message(key_of_item(&t, &item(&[("sk", "1")]))),
            "One or more parameter values were invalid: Missing the key pk in the item"
        );
        let mut numeric = item(&[("pk", "a")]);
        numeric.insert("sk".into(), AttributeValue::N(Number::from_i64(1)));
        assert_eq!(
            message(key_of_item(&t, &numeric)),
            "One or more parameter values were invalid: Type mismatch for key sk expected: S actual: N"
        );
        assert_eq!(
            message(key_of_item(&t, &item(&[("pk", ""), ("sk", "1")]))),
            "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: pk"
        );
        assert_eq!(
            message(key_of_item(&t, &item(&[("pk", &"p".repeat(2049)), ("sk", "1")]))),
            "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"
        );
        assert!(key_of_item(
            &t,
            &item(&[("pk", &"p".repeat(2048)), ("sk", &"s".repeat(1024))])
        )
        .is_ok());
        for bad in [
            item(&[("pk", "a")]),
            item(&[("pk", "a"), ("sk", "1"), ("x", "2")]),
            item(&[("pk", "a"), ("other", "1")]),
            numeric,
        ] {
            assert_eq!(
                message(key_from_request(&t, &bad)),
                KEY_SCHEMA_MISMATCH_MESSAGE
            );
        }
        assert_eq!(
            key_from_request(&t, &item(&[("pk", "a"), ("sk", "1")])).unwrap(),
            key()
        );
    }

    #[test]
    fn failed_conditions_charge_the_would_be_item() {
        let big = item(&[("pk", "a"), ("payload", &"x".repeat(3000))]);
        let small = item(&[("pk", "a")]);
        assert_eq!(failed_condition_units(None, Some(&big)), 1.0);
        assert_eq!(failed_condition_units(Some(&small), Some(&big)), 3.0);
        assert_eq!(failed_condition_units(Some(&big), None), 3.0);
    }
}
