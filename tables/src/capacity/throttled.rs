//! What each data-plane operation draws from the capacity buckets of `capacity::throttle`, and
//! how a refusal reaches the client: the exception for a single request, UnprocessedItems
//! and UnprocessedKeys for batch items (the exception only when no item can be processed,
//! SPEC-2 §7.1), cancellation reasons for transactions.
//!
//! The units charged are those the operation reports in ConsumedCapacity: it is asked for
//! them per index (INDEXES), and its answer is put back into the shape the client asked for.
//! A batch or transaction reports units per table, so each item's partition is charged an
//! equal share of its table's units. A GSI's write units go to the GSI partitions the write
//! put them on: the operation reads them off its committed plans (`IndexPartitionUnits`,
//! made only while capacity is enforced) and hands them back with its answer.

use std::collections::BTreeMap;
use std::sync::Arc;

use shoal_model::{ApiError, AttributeValue, Item};

use crate::api::batch::{
    BatchGetItemInput, BatchGetItemOutput, BatchWriteItemInput, BatchWriteItemOutput,
    KeysAndAttributes, WriteRequest,
};
use crate::api::common::{table_name_of, ConsumedCapacity};
use crate::api::items::{
    DeleteItemInput, GetItemInput, GetItemOutput, PutItemInput, PutItemOutput, UpdateItemInput,
};
use crate::api::query::{QueryRequest, QueryResponse, ScanRequest};
use crate::api::transact::{
    TransactGetItemsInput, TransactGetItemsOutput, TransactWriteItemsInput,
    TransactWriteItemsOutput,
};
use crate::capacity::metering::{as_total, ask_per_index, Metered};
use crate::capacity::throttle::{
    index_partition_units, index_partitions_of, Consumed, Demand, IndexPartition,
    IndexPartitionUnits, Refusal,
};
use crate::core::catalog::TableDef;
use crate::core::item_codec::ItemForm;
use crate::core::plan::WritePlan;
use crate::core::write::key_from_request;
use crate::database::Database;
use crate::items::transact::throttled_cancellation;
use crate::query_scan::query::query_partition;

/// An item a batch or transaction processed: its table, partition key and sort key values.
type Processed = (
    Arc<TableDef>,
    Option<PartitionValue>,
    Option<AttributeValue>,
);

/// A transaction action as checked: its table name, its key or item, and what it writes.
type Action<'a> = (Option<&'a str>, Option<&'a Item>, Option<Written<'a>>);

/// A request on one table: where it reads or writes.
pub(crate) trait OneTableRequest {
    const KIND: Metered;
    fn table_name(&self) -> Option<&str>;
    /// The GSI or LSI named by the request.
    fn index_name(&self) -> Option<&str> {
        None
    }
    /// The partition key value it reads or writes (None: every partition, or unknown); a
    /// Query of a multi-attribute GSI names every HASH component.
    fn partition(&self, table: &TableDef) -> Option<PartitionValue>;
    /// The sort key value of the one item it reads or writes (None: not one item, or a
    /// table without a sort key): Contributor Insights' item rules count it.
    fn sort(&self, _table: &TableDef) -> Option<AttributeValue> {
        None
    }
    /// What a write writes, as known before it runs (None: a read).
    fn written(&self) -> Option<Written<'_>> {
        None
    }
    fn return_consumed_capacity(&mut self) -> &mut Option<String>;
}

/// A response with one ConsumedCapacity.
pub(crate) trait OneCapacity {
    fn consumed_capacity(&mut self) -> Option<&mut ConsumedCapacity>;
    /// Where a write put its GSI units (empty for reads).
    fn take_index_partition_units(&mut self) -> Vec<IndexPartitionUnits> {
        Vec::new()
    }
}

/// What one write (a request, a batch item, a transaction action) writes, as known before
/// it runs: which GSI partitions it will write is read off this.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Written<'a> {
    /// A put: the request's item.
    Item(Option<&'a Item>),
    /// An update or delete: the item stored under this key.
    StoredAt(Option<&'a Item>),
}

/// The partition key value of a table (one attribute) or of a GSI (its HASH components in
/// schema order).
pub(crate) type PartitionValue = Vec<AttributeValue>;

/// The partition key value of an item or key.
fn partition_of(table: &TableDef, item: Option<&Item>) -> Option<PartitionValue> {
    Some(vec![item?.get(&table.key.hash.name)?.clone()])
}

/// The sort key value of an item or key (None for a table without one).
fn sort_of(table: &TableDef, item: Option<&Item>) -> Option<AttributeValue> {
    item?.get(&table.key.range.as_ref()?.name).cloned()
}

macro_rules! one_table_request {
    ($input:ty, $kind:expr, |$request:ident, $table:ident| $partition:expr $(, sort: $sort:expr)? $(, index: $index:ident)? $(, written: $written:expr)?) => {
        impl OneTableRequest for $input {
            const KIND: Metered = $kind;
            fn table_name(&self) -> Option<&str> {
                self.table_name.as_deref()
            }
            $(fn index_name(&self) -> Option<&str> {
                self.$index.as_deref()
            })?
            fn partition(&self, $table: &TableDef) -> Option<PartitionValue> {
                let $request = self;
                $partition
            }
            $(fn sort(&self, $table: &TableDef) -> Option<AttributeValue> {
                let $request = self;
                $sort
            })?
            $(fn written(&self) -> Option<Written<'_>> {
                let $request = self;
                Some($written)
            })?
            fn return_consumed_capacity(&mut self) -> &mut Option<String> {
                &mut self.return_consumed_capacity
            }
        }
    };
}

one_table_request!(PutItemInput, Metered::Write, |r, t| partition_of(t, r.item.as_ref()),
    sort: sort_of(t, r.item.as_ref()),
    written: Written::Item(r.item.as_ref()));
one_table_request!(UpdateItemInput, Metered::Write, |r, t| partition_of(t, r.key.as_ref()),
    sort: sort_of(t, r.key.as_ref()),
    written: Written::StoredAt(r.key.as_ref()));
one_table_request!(DeleteItemInput, Metered::Write, |r, t| partition_of(t, r.key.as_ref()),
    sort: sort_of(t, r.key.as_ref()),
    written: Written::StoredAt(r.key.as_ref()));
one_table_request!(GetItemInput, Metered::Read, |r, t| partition_of(t, r.key.as_ref()),
    sort: sort_of(t, r.key.as_ref()));
one_table_request!(QueryRequest, Metered::Read, |r, t| query_partition(t, r), index: index_name);
one_table_request!(ScanRequest, Metered::Read, |_r, _t| None, index: index_name);

impl OneCapacity for PutItemOutput {
    fn consumed_capacity(&mut self) -> Option<&mut ConsumedCapacity> {
        self.consumed_capacity.as_mut()
    }
    fn take_index_partition_units(&mut self) -> Vec<IndexPartitionUnits> {
        std::mem::take(&mut self.index_partition_units)
    }
}

impl<F> OneCapacity for GetItemOutput<F> {
    fn consumed_capacity(&mut self) -> Option<&mut ConsumedCapacity> {
        self.consumed_capacity.as_mut()
    }
}

impl<F> OneCapacity for QueryResponse<F> {
    fn consumed_capacity(&mut self) -> Option<&mut ConsumedCapacity> {
        self.consumed_capacity.as_mut()
    }
}

/// The units of one ConsumedCapacity: the table's (its LSIs' included) and each GSI's.
fn units_of(consumed: &ConsumedCapacity) -> Consumed {
    let arms = consumed.table.is_some()
        || consumed.local_secondary_indexes.is_some()
        || consumed.global_secondary_indexes.is_some();
    if !arms {
        return Consumed {
            table_units: consumed.capacity_units,
            index_units: BTreeMap::new(),
        };
    }
    let table_units = consumed
        .table
        .as_ref()
        .map_or(0.0, |arm| arm.capacity_units)
        + consumed
            .local_secondary_indexes
            .iter()
            .flatten()
            .map(|(_, arm)| arm.capacity_units)
            .sum::<f64>();
    let index_units = consumed
        .global_secondary_indexes
        .iter()
        .flatten()
        .map(|(name, arm)| (name.clone(), arm.capacity_units))
        .collect();
    Consumed {
        table_units,
        index_units,
    }
}

/// The units a demand's partition was charged: the GSI's for a read through a GSI, the
/// table's otherwise.
fn partition_units(demand: &Demand<'_>, consumed: &Consumed) -> f64 {
    match (demand.kind, demand.index) {
        (Metered::Read, Some(index)) => consumed
            .index_units
            .get(index)
            .copied()
            .unwrap_or(consumed.table_units),
        _ => consumed.table_units,
    }
}

impl Database {
    /// Whether requests go through the capacity code at all: while capacity is enforced,
    /// or while some table or index has Contributor Insights enabled.
    fn capacity_observed(&self) -> bool {
        self.capacity.throttle.enforcing() || self.capacity.contributors.observing()
    }

    /// Refuses a demand whose buckets are in debt (only while capacity is enforced); a refusal is
    /// counted by Contributor Insights (`sort`: the one item's sort key, if any). GSI
    /// write throttling is not counted there (SPEC-3 §3): a write counts on its table.
    fn check_demand(
        &self,
        demand: &Demand<'_>,
        sort: Option<&AttributeValue>,
    ) -> Result<(), Refusal> {
        let checked = self.capacity.throttle.check(demand);
        if checked.is_err() {
            if let Some(partition) = demand.partition {
                let index = match demand.kind {
                    Metered::Read => demand.index,
                    Metered::Write => None,
                };
                self.capacity
                    .contributors
                    .throttled(demand.table, index, partition, sort);
            }
        }
        checked
    }

    /// Charges what a request consumed: its table's and GSIs' buckets (while enforced) and
    /// its partition's, and Contributor Insights' count of that partition (and item).
    fn charge_demand(
        &self,
        demand: &Demand<'_>,
        sort: Option<&AttributeValue>,
        consumed: &Consumed,
        partition_units: f64,
    ) {
        self.capacity.throttle.charge(demand, consumed);
        self.capacity
            .throttle
            .charge_partition(demand, partition_units);
        self.count_contributor(demand, sort, partition_units);
    }

    /// Contributor Insights' count of one request's units on its partition (3 × write
    /// units + read units).
    fn count_contributor(&self, demand: &Demand<'_>, sort: Option<&AttributeValue>, units: f64) {
        let Some(partition) = demand.partition else {
            return;
        };
        if !self.capacity.contributors.observing() {
            return;
        }
        let (index, weighted) = match demand.kind {
            Metered::Read => (demand.index, units),
            Metered::Write => (None, units * 3.0),
        };
        // A Query through an LSI counts on the table, as its units do.
        let index =
            index.filter(|name| demand.table.global_indexes.iter().any(|g| g.name == *name));
        let sort = if index.is_some() { None } else { sort };
        self.capacity
            .contributors
            .accessed(demand.table, index, partition, sort, weighted);
    }

    /// Charges the units writes put on GSI partitions: their buckets (when enforced) and
    /// Contributor Insights' count of those GSIs' partition keys.
    fn charge_index_partitions(&self, table: Option<&TableDef>, charges: &[IndexPartitionUnits]) {
        self.capacity.throttle.charge_index_partitions(charges);
        if !self.capacity.contributors.observing() {
            return;
        }
        for charge in charges {
            let looked_up;
            let owner = match table {
                Some(table) => table,
                None => match self.throttled_table(Some(&charge.table)) {
                    Some(found) => {
                        looked_up = found;
                        &looked_up
                    }
                    None => continue,
                },
            };
            self.capacity.contributors.accessed_encoded_partition(
                owner,
                &charge.partition.index,
                &charge.partition.value,
                charge.units,
            );
        }
    }

    /// The table a request names, if it exists (a request naming none is left to the
    /// operation, which refuses it).
    fn throttled_table(&self, name: Option<&str>) -> Option<Arc<TableDef>> {
        self.data_table(table_name_of(name).ok()?).ok()
    }

    /// Where committed plans of `table` put their GSI units; nothing (and no work) unless
    /// capacity is enforced or Contributor Insights follows some table.
    pub(crate) fn index_partition_units<'p>(
        &self,
        table: &TableDef,
        plans: impl IntoIterator<Item = &'p WritePlan>,
    ) -> Vec<IndexPartitionUnits> {
        let mut units = Vec::new();
        if self.capacity_observed() && !table.global_indexes.is_empty() {
            for plan in plans {
                index_partition_units(table, plan, &mut units);
            }
        }
        units
    }

    /// The GSI partitions a write will write, as known before it runs: those of a put's
    /// item, or of the item stored under an update's or delete's key, read here without
    /// being metered (a key that does not fit the table, or a failed read, is left to the
    /// operation, which refuses it the same way). Called only while capacity is enforced.
    fn index_partitions_before(
        &self,
        table: &TableDef,
        written: Option<Written<'_>>,
    ) -> Vec<IndexPartition> {
        // Only throttling checks GSI partitions before a write; Contributor Insights counts
        // what the write reports after it.
        if table.global_indexes.is_empty() || !self.capacity.throttle.enforcing() {
            return Vec::new();
        }
        match written {
            Some(Written::Item(Some(item))) => index_partitions_of(table, item),
            Some(Written::StoredAt(Some(key))) => {
                let stored = key_from_request(table, key)
                    .ok()
                    .and_then(|key| self.read_replaced_item(table, &key).ok().flatten());
                stored.map_or_else(Vec::new, |item| index_partitions_of(table, &item))
            }
            _ => Vec::new(),
        }
    }

    /// Runs a request on one table under capacity emulation.
    pub(crate) fn throttled<I, O>(
        &self,
        mut input: I,
        operation: impl FnOnce(I) -> Result<O, ApiError>,
    ) -> Result<O, ApiError>
    where
        I: OneTableRequest,
        O: OneCapacity,
    {
        if !self.capacity_observed() {
            return operation(input);
        }
        let Some(table) = self.throttled_table(input.table_name()) else {
            return operation(input);
        };
        let partition = input.partition(&table);
        let sort = input.sort(&table);
        let index = input.index_name().map(str::to_string);
        let index_partitions = self.index_partitions_before(&table, input.written());
        let demand = Demand {
            table: &table,
            kind: I::KIND,
            index: index.as_deref(),
            partition: partition.as_deref(),
            index_partitions: &index_partitions,
        };
        self.check_demand(&demand, sort.as_ref())
            .map_err(|refusal| refusal.error())?;
        let total = ask_per_index(input.return_consumed_capacity());
        let mut output = match operation(input) {
            Ok(output) => output,
            Err(error) => {
                // A write whose condition failed consumed units on its table and its
                // partition all the same (SPEC §5), the table's only.
                if let Some(charged) = &error.charged {
                    let units = Consumed {
                        table_units: charged.write_units,
                        index_units: BTreeMap::new(),
                    };
                    self.charge_demand(&demand, sort.as_ref(), &units, charged.write_units);
                }
                return Err(error);
            }
        };
        self.charge_index_partitions(Some(&table), &output.take_index_partition_units());
        if let Some(consumed) = output.consumed_capacity() {
            let units = units_of(consumed);
            let partition_units = partition_units(&demand, &units);
            self.charge_demand(&demand, sort.as_ref(), &units, partition_units);
            if total {
                as_total(consumed);
            }
        }
        Ok(output)
    }

    /// Charges a batch's or transaction's units: each table's to its buckets, and an equal
    /// share to the partition of each item it processed there.
    fn charge_per_table(
        &self,
        consumed: Option<&mut Vec<ConsumedCapacity>>,
        total: bool,
        kind: Metered,
        processed: &[Processed],
    ) {
        for entry in consumed.into_iter().flatten() {
            let units = units_of(entry);
            if total {
                as_total(entry);
            }
            let items: Vec<&Processed> = processed
                .iter()
                .filter(|(table, ..)| table.name == entry.table_name)
                .collect();
            let Some((table, ..)) = items.first() else {
                continue;
            };
            let demand = Demand {
                table,
                kind,
                index: None,
                partition: None,
                index_partitions: &[],
            };
            self.capacity.throttle.charge(&demand, &units);
            let share = units.table_units / items.len() as f64;
            for (table, partition, sort) in items {
                let demand = Demand {
                    table,
                    kind,
                    index: None,
                    partition: partition.as_deref(),
                    index_partitions: &[],
                };
                self.capacity.throttle.charge_partition(&demand, share);
                self.count_contributor(&demand, sort.as_ref(), share);
            }
        }
    }

    /// Checks one batch item or transaction action: `item` is its key or item, `written`
    /// what a write writes.
    fn check_item(
        &self,
        table: &Arc<TableDef>,
        kind: Metered,
        item: Option<&Item>,
        written: Option<Written<'_>>,
    ) -> (Processed, Result<(), Refusal>) {
        let partition = partition_of(table, item);
        let sort = sort_of(table, item);
        let index_partitions = self.index_partitions_before(table, written);
        let demand = Demand {
            table,
            kind,
            index: None,
            partition: partition.as_deref(),
            index_partitions: &index_partitions,
        };
        let checked = self.check_demand(&demand, sort.as_ref());
        ((Arc::clone(table), partition, sort), checked)
    }

    /// BatchWriteItem under capacity emulation: refused items come back unprocessed.
    pub(crate) fn throttled_batch_write_item(
        &self,
        mut input: BatchWriteItemInput,
    ) -> Result<BatchWriteItemOutput, ApiError> {
        if !self.capacity_observed() {
            return self.batch_write_item(input);
        }
        let Some(request_items) = input.request_items.take() else {
            return self.batch_write_item(input);
        };
        let mut admitted: BTreeMap<String, Vec<WriteRequest>> = BTreeMap::new();
        let mut unprocessed: BTreeMap<String, Vec<WriteRequest>> = BTreeMap::new();
        let mut processed = Vec::new();
        let mut first_refusal = None;
        for (name, requests) in request_items {
            let Some(table) = self.throttled_table(Some(&name)) else {
                admitted.insert(name, requests);
                continue;
            };
            for request in requests {
                let (item, written) = match (&request.put_request, &request.delete_request) {
                    (Some(put), _) => (put.item.as_ref(), Written::Item(put.item.as_ref())),
                    (None, Some(delete)) => {
                        (delete.key.as_ref(), Written::StoredAt(delete.key.as_ref()))
                    }
                    (None, None) => (None, Written::Item(None)),
                };
                let (item, checked) = self.check_item(&table, Metered::Write, item, Some(written));
                match checked {
                    Ok(()) => {
                        processed.push(item);
                        admitted.entry(name.clone()).or_default().push(request);
                    }
                    Err(refusal) => {
                        first_refusal.get_or_insert(refusal);
                        unprocessed.entry(name.clone()).or_default().push(request);
                    }
                }
            }
        }
        if admitted.is_empty() {
            if let Some(refusal) = first_refusal {
                return Err(refusal.error());
            }
        }
        input.request_items = Some(admitted);
        let total = ask_per_index(&mut input.return_consumed_capacity);
        let mut output = self.batch_write_item(input)?;
        self.charge_index_partitions(None, &output.index_partition_units);
        output.index_partition_units.clear();
        self.charge_per_table(
            output.consumed_capacity.as_mut(),
            total,
            Metered::Write,
            &processed,
        );
        for (name, requests) in unprocessed {
            output
                .unprocessed_items
                .entry(name)
                .or_default()
                .extend(requests);
        }
        Ok(output)
    }

    /// BatchGetItem under capacity emulation: refused keys come back unprocessed.
    pub(crate) fn throttled_batch_get_item<F: ItemForm>(
        &self,
        mut input: BatchGetItemInput,
    ) -> Result<BatchGetItemOutput<F>, ApiError> {
        if !self.capacity_observed() {
            return self.batch_get_item_as(input);
        }
        let Some(request_items) = input.request_items.take() else {
            return self.batch_get_item_as(input);
        };
        let mut admitted: BTreeMap<String, KeysAndAttributes> = BTreeMap::new();
        let mut unprocessed: BTreeMap<String, KeysAndAttributes> = BTreeMap::new();
        let mut processed = Vec::new();
        let mut first_refusal = None;
        for (name, mut request) in request_items {
            let Some(table) = self.throttled_table(Some(&name)) else {
                admitted.insert(name, request);
                continue;
            };
            let keys = std::mem::take(&mut request.keys);
            for key in keys {
                let (item, checked) = self.check_item(&table, Metered::Read, Some(&key), None);
                let target = match checked {
                    Ok(()) => {
                        processed.push(item);
                        &mut admitted
                    }
                    Err(refusal) => {
                        first_refusal.get_or_insert(refusal);
                        &mut unprocessed
                    }
                };
                target
                    .entry(name.clone())
                    .or_insert_with(|| request.clone())
                    .keys
                    .push(key);
            }
        }
        if admitted.is_empty() {
            if let Some(refusal) = first_refusal {
                return Err(refusal.error());
            }
        }
        input.request_items = Some(admitted);
        let total = ask_per_index(&mut input.return_consumed_capacity);
        let mut output = self.batch_get_item_as(input)?;
        self.charge_per_table(
            output.consumed_capacity.as_mut(),
            total,
            Metered::Read,
            &processed,
        );
        for (name, request) in unprocessed {
            match output.unprocessed_keys.get_mut(&name) {
                Some(waiting) => waiting.keys.extend(request.keys),
                None => {
                    output.unprocessed_keys.insert(name, request);
                }
            }
        }
        Ok(output)
    }

    /// TransactWriteItems under capacity emulation: any refused action cancels it.
    pub(crate) fn throttled_transact_write_items(
        &self,
        mut input: TransactWriteItemsInput,
    ) -> Result<TransactWriteItemsOutput, ApiError> {
        if !self.capacity_observed() {
            return self.transact_write_items(input);
        }
        let actions: Vec<Action<'_>> = input
            .transact_items
            .iter()
            .flatten()
            .map(|action| {
                match (
                    &action.put,
                    &action.update,
                    &action.delete,
                    &action.condition_check,
                ) {
                    (Some(put), ..) => (
                        put.table_name.as_deref(),
                        put.item.as_ref(),
                        Some(Written::Item(put.item.as_ref())),
                    ),
                    (_, Some(update), ..) => (
                        update.table_name.as_deref(),
                        update.key.as_ref(),
                        Some(Written::StoredAt(update.key.as_ref())),
                    ),
                    (_, _, Some(delete), _) => (
                        delete.table_name.as_deref(),
                        delete.key.as_ref(),
                        Some(Written::StoredAt(delete.key.as_ref())),
                    ),
                    // A condition check writes no GSI.
                    (_, _, _, Some(check)) => {
                        (check.table_name.as_deref(), check.key.as_ref(), None)
                    }
                    _ => (None, None, None),
                }
            })
            .collect();
        let (processed, refusals) = self.check_actions(&actions, Metered::Write);
        if refusals.iter().any(Option::is_some) {
            return Err(throttled_cancellation(&refusals));
        }
        let total = ask_per_index(&mut input.return_consumed_capacity);
        let mut output = self.transact_write_items(input)?;
        self.charge_index_partitions(None, &output.index_partition_units);
        output.index_partition_units.clear();
        self.charge_per_table(
            output.consumed_capacity.as_mut(),
            total,
            Metered::Write,
            &processed,
        );
        Ok(output)
    }

    /// TransactGetItems under capacity emulation: any refused read cancels it.
    pub(crate) fn throttled_transact_get_items(
        &self,
        mut input: TransactGetItemsInput,
    ) -> Result<TransactGetItemsOutput, ApiError> {
        if !self.capacity_observed() {
            return self.transact_get_items(input);
        }
        let actions: Vec<Action<'_>> = input
            .transact_items
            .iter()
            .flatten()
            .map(|action| match &action.get {
                Some(get) => (get.table_name.as_deref(), get.key.as_ref(), None),
                None => (None, None, None),
            })
            .collect();
        let (processed, refusals) = self.check_actions(&actions, Metered::Read);
        if refusals.iter().any(Option::is_some) {
            return Err(throttled_cancellation(&refusals));
        }
        let total = ask_per_index(&mut input.return_consumed_capacity);
        let mut output = self.transact_get_items(input)?;
        self.charge_per_table(
            output.consumed_capacity.as_mut(),
            total,
            Metered::Read,
            &processed,
        );
        Ok(output)
    }

    /// Checks each action of a transaction: the partitions of the actions on existing
    /// tables, and each action's refusal if any.
    fn check_actions(
        &self,
        actions: &[Action<'_>],
        kind: Metered,
    ) -> (Vec<Processed>, Vec<Option<Refusal>>) {
        let mut processed = Vec::new();
        let mut refusals = Vec::with_capacity(actions.len());
        for (name, item, written) in actions {
            let Some(table) = self.throttled_table(*name) else {
                refusals.push(None);
                continue;
            };
            let (item, checked) = self.check_item(&table, kind, *item, *written);
            refusals.push(checked.err());
            processed.push(item);
        }
        (processed, refusals)
    }
}
