//! BatchWriteItem and BatchGetItem (SPEC §3.7, §5).
//!
//! BatchWriteItem validates the whole batch first (any error rejects all of it, nothing
//! written), then takes the collection locks of every item in ascending stripe order, reads
//! the stored items, plans each put or delete with the shared pipeline of `core/write.rs`
//! and commits ALL of them in one write batch: every put and delete is atomic with its index
//! entries and collection record, and here the batch as a whole is too (DynamoDB promises
//! less). The batch itself never throttles: with capacity emulation on, the items it
//! refuses come back as `UnprocessedItems` (`capacity::throttled`), otherwise it is `{}`.
//!
//! BatchGetItem reads every key at one snapshot (the keys of tables read without
//! ConsistentRead at one lagged snapshot, with `EmulationOptions::eventual_read_lag`). When the items read reach 16 MB the rest
//! of the keys are returned as `UnprocessedKeys`, with their table's read parameters.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use shoal_expr::{check_no_mixing, Context, Projection};
use shoal_model::{ApiError, Item};

use crate::api::batch::{
    BatchGetItemInput, BatchGetItemOutput, BatchWriteItemInput, BatchWriteItemOutput,
    KeysAndAttributes, BATCH_BYTES_MAX, DUPLICATE_KEYS_MESSAGE,
};
use crate::api::common::{
    table_name_of, Capacity, ConsumedCapacity, ItemCollectionMetrics, ReturnConsumedCapacity,
};
use crate::core::catalog::TableDef;
use crate::core::collection::{self, CollectionRecord};
use crate::core::error::internal;
use crate::core::item_codec::ItemForm;
use crate::core::locks::CollectionLocks;
use crate::core::plan::{ItemKey, WriteCapacity, WritePlan};
use crate::core::units::{read_units, ReadConsistency};
use crate::core::write::{
    key_from_request, key_of_item, plan_write, replanning, KEY_SCHEMA_MISMATCH_MESSAGE,
};
use crate::database::Database;
use shoal_engine::TreeId;

/// One checked put (`new` is the item) or delete (`new` is None) of a batch.
struct BatchWrite<'a> {
    key: ItemKey,
    new: Option<&'a Item>,
}

/// The checked writes of one table.
struct TableWrites<'a> {
    table: Arc<TableDef>,
    writes: Vec<BatchWrite<'a>>,
}

impl Database {
    /// BatchWriteItem: up to 25 puts and deletes across tables.
    pub fn batch_write_item(
        &self,
        input: BatchWriteItemInput,
    ) -> Result<BatchWriteItemOutput, ApiError> {
        replanning(|| self.batch_write_item_attempt(&input))
    }

    fn batch_write_item_attempt(
        &self,
        input: &BatchWriteItemInput,
    ) -> Result<BatchWriteItemOutput, ApiError> {
        let (options, request_items) = input.check_constraints()?;
        for request in request_items.values().flatten() {
            if let Some(item) = request.put_request.as_ref().and_then(|p| p.item.as_ref()) {
                shoal_model::check_item_limits(item, false)?;
            }
        }
        // Two deletes of the same key are duplicates whatever the table's key schema: refused
        // before the tables are looked up, as DynamoDB checks the request first. (A put's key
        // is known only from the schema, so put duplicates wait for the table.)
        for requests in request_items.values() {
            check_no_identical_keys(
                requests
                    .iter()
                    .filter_map(|request| request.delete_request.as_ref()?.key.as_ref()),
            )?;
        }

        // Tables, keys and index checks; a name and an ARN of one table share one group.
        let mut groups: BTreeMap<String, TableWrites<'_>> = BTreeMap::new();
        let mut seen: BTreeSet<(TreeId, Vec<u8>)> = BTreeSet::new();
        for (name, requests) in request_items {
            let table = self.data_table(table_name_of(Some(name))?)?;
            let group = groups
                .entry(table.name.clone())
                .or_insert_with(|| TableWrites {
                    table: Arc::clone(&table),
                    writes: Vec::new(),
                });
            for request in requests {
                let write = match (&request.put_request, &request.delete_request) {
                    (Some(put), _) => {
                        let item = put.item.as_ref().ok_or_else(|| {
                            internal("a put request without an item passed its checks")
                        })?;
                        let key = batch_key_of_item(&table, item)?;
                        crate::core::write::check_new_item(&table, item, false)?;
                        BatchWrite {
                            key,
                            new: Some(item),
                        }
                    }
                    (None, Some(delete)) => {
                        let key_item = delete.key.as_ref().ok_or_else(|| {
                            internal("a delete request without a key passed its checks")
                        })?;
                        BatchWrite {
                            key: key_from_request(&table, key_item)?,
                            new: None,
                        }
                    }
                    (None, None) => return Err(internal("an empty write request passed")),
                };
                if !seen.insert((table.tree, write.key.base_key()?)) {
                    return Err(ApiError::validation(DUPLICATE_KEYS_MESSAGE));
                }
                group.writes.push(write);
            }
        }

        let mut stripes = Vec::new();
        for group in groups.values() {
            for write in &group.writes {
                stripes.push(CollectionLocks::stripe_of(
                    group.table.tree,
                    &write.key.partition_prefix()?,
                ));
            }
        }
        let mut items = Vec::new();
        if self.emulation.in_flight.is_some() {
            for group in groups.values() {
                for write in &group.writes {
                    items.push((group.table.tree, write.key.base_key()?));
                }
            }
        }
        // Held until every member has the writes (`replication::strong`).
        let _strong = groups
            .values()
            .map(|group| self.claim_strong(&group.table, group.writes.iter().map(|w| &w.key)))
            .collect::<Result<Vec<_>, ApiError>>()?;
        let (plans, records) = {
            let _in_flight = self
                .emulation
                .in_flight
                .as_ref()
                .map(|f| f.claim_batch(items));
            let _collections = self.locks.lock_many(stripes);
            self.hold_in_flight();
            let mut plans: Vec<(&TableDef, Vec<WritePlan>)> = Vec::with_capacity(groups.len());
            for group in groups.values() {
                let mut table_plans = Vec::with_capacity(group.writes.len());
                for write in &group.writes {
                    let old = self.read_replaced_item(&group.table, &write.key)?;
                    table_plans.push(plan_write(
                        &self.features,
                        &group.table,
                        &write.key,
                        old.as_ref(),
                        write.new,
                        false,
                    )?);
                }
                plans.push((&group.table, table_plans));
            }
            let borrowed: Vec<(&TableDef, Vec<&WritePlan>)> = plans
                .iter()
                .map(|(table, table_plans)| (*table, table_plans.iter().collect()))
                .collect();
            let records =
                self.commit_plans_across(&borrowed, options.return_item_collection_metrics)?;
            (plans, records)
        };
        for group in groups.values() {
            self.replicate_strongly(&group.table)?;
        }

        let mut consumed = Vec::new();
        let mut metrics = BTreeMap::new();
        let mut index_partition_units = Vec::new();
        for ((table, table_plans), table_records) in plans.iter().zip(records) {
            index_partition_units.extend(self.index_partition_units(table, table_plans));
            let mut capacity = WriteCapacity::default();
            for plan in table_plans {
                capacity.add(&plan.capacity);
            }
            consumed.extend(capacity.report(&table.name, options.return_consumed_capacity));
            if options.return_item_collection_metrics && table.has_local_indexes() {
                let collections = collection_metrics(table, table_plans, &table_records);
                metrics.insert(table.name.clone(), collections);
            }
        }
        Ok(BatchWriteItemOutput {
            unprocessed_items: BTreeMap::new(),
            consumed_capacity: (options.return_consumed_capacity != ReturnConsumedCapacity::None)
                .then_some(consumed),
            item_collection_metrics: (!metrics.is_empty()).then_some(metrics),
            index_partition_units,
        })
    }

    /// BatchGetItem: up to 100 keys across tables, read at one snapshot.
    pub fn batch_get_item(&self, input: BatchGetItemInput) -> Result<BatchGetItemOutput, ApiError> {
        self.batch_get_item_as(input)
    }

    /// [`Database::batch_get_item`] answering its items in the form `F` (decoded, or as
    /// JSON).
    pub(crate) fn batch_get_item_as<F: ItemForm>(
        &self,
        input: BatchGetItemInput,
    ) -> Result<BatchGetItemOutput<F>, ApiError> {
        let (mode, request_items) = input.check_constraints()?;
        let mut projections = Vec::with_capacity(request_items.len());
        for request in request_items.values() {
            projections.push(parse_projection(request)?);
        }

        // Identical keys are duplicates whatever the table: refused before any table is
        // looked up, as DynamoDB checks the request first.
        for request in request_items.values() {
            check_no_identical_keys(request.keys.iter())?;
        }

        let mut reads: Vec<(Arc<TableDef>, &KeysAndAttributes, Vec<ItemKey>)> = Vec::new();
        for (name, request) in request_items {
            let table = self.data_table(table_name_of(Some(name))?)?;
            let mut seen = BTreeSet::new();
            let mut keys = Vec::with_capacity(request.keys.len());
            for key in &request.keys {
                let key = key_from_request(&table, key)?;
                if !seen.insert(key.base_key()?) {
                    return Err(ApiError::validation(DUPLICATE_KEYS_MESSAGE));
                }
                keys.push(key);
            }
            reads.push((table, request, keys));
        }

        let snapshot = self.db.snapshot();
        // Tables read without ConsistentRead share one lagged snapshot, if reads lag.
        let lagged = self.lagged_snapshot(false, None);
        let mut output = BatchGetItemOutput::default();
        let mut units: BTreeMap<String, f64> = BTreeMap::new();
        let mut response_bytes: u64 = 0;
        for ((table, request, keys), projection) in reads.iter().zip(&projections) {
            let consistency = ReadConsistency::from_consistent_read(request.consistent_read);
            let read_at = match &lagged {
                Some(lagged) if request.consistent_read != Some(true) => lagged.as_ref(),
                _ => &snapshot,
            };
            let found = output.responses.entry(table.name.clone()).or_default();
            for (key, key_item) in keys.iter().zip(&request.keys) {
                let full = response_bytes >= BATCH_BYTES_MAX;
                if !full {
                    let (item, size_bytes) =
                        self.read_answered_item(table, key, Some(read_at), projection.as_ref())?;
                    if response_bytes + size_bytes <= BATCH_BYTES_MAX {
                        response_bytes += size_bytes;
                        *units.entry(table.name.clone()).or_default() +=
                            read_units(size_bytes, consistency);
                        found.extend(item);
                        continue;
                    }
                    // This item would pass 16 MB: it and everything after it wait.
                    response_bytes = BATCH_BYTES_MAX;
                }
                output
                    .unprocessed_keys
                    .entry(table.name.clone())
                    .or_insert_with(|| KeysAndAttributes {
                        keys: Vec::new(),
                        ..(*request).clone()
                    })
                    .keys
                    .push(key_item.clone());
            }
        }
        if mode != ReturnConsumedCapacity::None {
            let consumed = units
                .into_iter()
                .map(|(table_name, units)| read_capacity(table_name, units, mode))
                .collect();
            output.consumed_capacity = Some(consumed);
        }
        Ok(output)
    }
}

/// The key of a put in a batch: a missing or wrongly typed key attribute is DynamoDB's
/// generic key-schema text here (SPEC §3.1), the other key rules keep their own texts.
fn batch_key_of_item(table: &TableDef, item: &Item) -> Result<ItemKey, ApiError> {
    let shaped = table.key.attributes().all(|attribute| {
        item.get(&attribute.name)
            .is_some_and(|value| attribute.accepts(value))
    });
    if !shaped {
        return Err(ApiError::validation(KEY_SCHEMA_MISMATCH_MESSAGE));
    }
    key_of_item(table, item)
}

/// A table's `ProjectionExpression` / `AttributesToGet`, checked as GetItem checks them.
fn parse_projection(request: &KeysAndAttributes) -> Result<Option<Projection>, ApiError> {
    let mut legacy = Vec::new();
    if request.attributes_to_get.is_some() {
        legacy.push("AttributesToGet");
    }
    let mut expressions = Vec::new();
    if request.projection_expression.is_some() {
        expressions.push("ProjectionExpression");
    }
    check_no_mixing(&legacy, &expressions)?;
    if request.expression_attribute_names.is_some() && request.projection_expression.is_none() {
        return Err(ApiError::validation(
            "ExpressionAttributeNames can only be specified when using expressions",
        ));
    }
    let mut context = Context::new(request.expression_attribute_names.as_ref(), None)?;
    let projection = match (&request.projection_expression, &request.attributes_to_get) {
        (Some(text), _) => Some(context.parse_projection(text)?),
        (None, Some(names)) => Some(shoal_expr::legacy::attributes_to_get(names)?),
        (None, None) => None,
    };
    context.finish()?;
    Ok(projection)
}

/// One `ItemCollectionMetrics` per collection the plans wrote, in first-write order.
pub(crate) fn collection_metrics<'p>(
    table: &TableDef,
    plans: impl IntoIterator<Item = &'p WritePlan>,
    records: &[Option<CollectionRecord>],
) -> Vec<ItemCollectionMetrics> {
    let mut reported = BTreeSet::new();
    let mut metrics = Vec::new();
    for (plan, record) in plans.into_iter().zip(records) {
        if let Some(record) = record {
            let Ok(prefix) = plan.key.partition_prefix() else {
                continue;
            };
            if reported.insert(prefix) {
                metrics.push(collection::metrics(table, &plan.key.pk, record.size_bytes));
            }
        }
    }
    metrics
}

/// A table's read `ConsumedCapacity` in a batch or transaction (never index arms): only
/// `CapacityUnits`, as DynamoDB reports it (SPEC §3.6).
pub(crate) fn read_capacity(
    table_name: String,
    units: f64,
    mode: ReturnConsumedCapacity,
) -> ConsumedCapacity {
    let table = (mode == ReturnConsumedCapacity::Indexes).then_some(Capacity {
        capacity_units: units,
        ..Capacity::default()
    });
    ConsumedCapacity {
        table_name,
        capacity_units: units,
        table,
        ..ConsumedCapacity::default()
    }
}

/// `Provided list of item keys contains duplicates` when two of `keys` are the same map
/// (numbers compare by value), which makes them one item in any table.
pub(crate) fn check_no_identical_keys<'a>(
    keys: impl Iterator<Item = &'a Item>,
) -> Result<(), ApiError> {
    let mut seen: Vec<&Item> = Vec::new();
    for key in keys {
        if seen.contains(&key) {
            return Err(ApiError::validation(DUPLICATE_KEYS_MESSAGE));
        }
        seen.push(key);
    }
    Ok(())
}
