//! TransactWriteItems and TransactGetItems (SPEC §3.9, §5).
//!
//! A write transaction is validated whole first: faults a client could know from the request
//! alone (constraints, expressions, item size, missing or extra key attributes, empty index
//! keys, two actions on one item, unknown tables) fail the request with a plain
//! ValidationException. A key attribute of the wrong type is the one key fault DynamoDB
//! reports as that action's cancellation reason instead (`ValidationError`). Then it takes
//! the collection locks of all its items in ascending stripe order (`CollectionLocks::
//! lock_many`: two transactions can never wait for each other in a cycle), reads every
//! item, evaluates every action — conditions, updates, the checks that depend on the stored
//! item — and the collection-size caps. Any failed action cancels the whole transaction with
//! `TransactionCanceledException` and one reason per action, in request order. Otherwise
//! every write goes into ONE write batch across all its tables (one WAL record): after a
//! crash either all of the transaction is there or none of it.
//!
//! A read transaction reads all its items at one snapshot. Writes commit atomically, so the
//! snapshot never shows part of a write transaction.
//!
//! With `EmulationOptions::transaction_conflicts`, a write transaction marks its items in flight
//! before it waits for its locks, and meets other requests as DynamoDB's do
//! (`emulation::conflicts`): a transaction on an item another holds is cancelled with
//! `TransactionConflict` reasons, and so is a read transaction of an item being written.
//!
//! `ClientRequestToken`s are remembered in memory ([`TokenTable`]) for 10 minutes after the
//! transaction completed; they do not survive a restart.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};
use shoal_expr::{ConditionKind, Context, Projection};
use shoal_model::{item_to_json, ApiError, ErrorCode, Item};

use crate::api::common::{table_name_of, ReturnConsumedCapacity};
use crate::api::transact::{
    ActionKind, ActionView, ItemResponse, TransactGetItemsInput, TransactGetItemsOutput,
    TransactOptions, TransactWriteItemsInput, TransactWriteItemsOutput, SAME_ITEM_MESSAGE,
    TRANSACTION_TOO_LARGE_MESSAGE, TRANSACT_WRITE_BYTES_MAX,
};
use crate::capacity::throttle::Refusal;
use crate::core::catalog::TableDef;
use crate::core::collection::{self, CollectionDelta, COLLECTION_SIZE_EXCEEDED_MESSAGE};
use crate::core::error::internal;
use crate::core::feature::Features;
use crate::core::keys;
use crate::core::locks::CollectionLocks;
use crate::core::plan::{ItemKey, WriteCapacity, WritePlan};
use crate::core::units::{read_units, write_units, ReadConsistency};
use crate::core::write::{
    check_new_item, check_update_key_paths, key_from_request, key_of_item, plan_write, replanning,
};
use crate::database::Database;
use crate::emulation::conflicts::TRANSACTION_CONFLICT_MESSAGE;
use crate::items::batch::{collection_metrics, read_capacity};
use shoal_engine::TreeId;

/// How long a completed transaction's `ClientRequestToken` is remembered.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// Most tokens remembered at once; the oldest completed ones are forgotten first.
pub const TOKENS_MAX: usize = 10_000;

/// What a strong global table refuses (`replication::strong`): DynamoDB's transaction APIs
/// fail on its members (SPEC-3 §2.5).
const TRANSACTIONS: &str = "Transactions are";
/// The condition failure text, as for single-item writes.
const CONDITION_FAILED_MESSAGE: &str = "The conditional request failed";

/// One parsed and checked write action, before anything is read.
struct Action<'a> {
    kind: ActionKind,
    table: Arc<TableDef>,
    key: ItemKey,
    /// The item a Put stores.
    item: Option<&'a Item>,
    condition: Option<shoal_expr::Condition>,
    update: Option<shoal_expr::Update>,
    return_old_on_condition_failure: bool,
    /// A fault of a Put that DynamoDB reports as a cancellation reason, not a top-level
    /// error (a wrong-typed index key, SPEC §3.9).
    deferred_fault: Option<String>,
}

/// One action as resolved against its table: ready to run, or cancelling the transaction
/// because a key attribute has the wrong type (DynamoDB reports that as the action's
/// `ValidationError` reason, with the text the single-item operation gives).
enum Resolved<'a> {
    Action(Box<Action<'a>>),
    KeyTypeFault(String),
}

impl<'a> Resolved<'a> {
    fn action(&self) -> Option<&Action<'a>> {
        match self {
            Resolved::Action(action) => Some(action),
            Resolved::KeyTypeFault(_) => None,
        }
    }
}

/// Whether `key_or_item` names every key attribute of `table` (and, for a `Key` parameter,
/// nothing else) but one of them with the wrong type.
fn has_wrong_typed_key(table: &TableDef, key_or_item: &Item, kind: ActionKind) -> bool {
    let attributes: Vec<_> = table.key.attributes().collect();
    let shaped = match kind {
        ActionKind::Put => true,
        ActionKind::ConditionCheck | ActionKind::Delete | ActionKind::Update => {
            key_or_item.len() == attributes.len()
        }
    };
    shaped
        && attributes
            .iter()
            .all(|attribute| key_or_item.contains_key(&attribute.name))
        && attributes.iter().any(|attribute| {
            key_or_item
                .get(&attribute.name)
                .is_some_and(|value| !attribute.accepts(value))
        })
}

/// Why one action of a transaction failed (`CancellationReasons` member).
#[derive(Debug, Clone, PartialEq)]
enum Reason {
    None,
    ConditionalCheckFailed {
        item: Option<Item>,
    },
    ItemCollectionSizeLimitExceeded,
    /// Another write holds the item in flight (`emulation::conflicts`).
    TransactionConflict,
    ValidationError(String),
    /// Capacity emulation refused the action's table or index (`capacity::throttle`): its
    /// code and message.
    Throttled(&'static str, &'static str),
}

/// The reasons of a transaction cancelled by conflicts: `TransactionConflict` where
/// `conflicts` says so, `None` elsewhere.
fn conflict_reasons(conflicts: &[bool]) -> Vec<Reason> {
    conflicts
        .iter()
        .map(|&conflict| {
            if conflict {
                Reason::TransactionConflict
            } else {
                Reason::None
            }
        })
        .collect()
}

impl Reason {
    fn code(&self) -> &'static str {
        match self {
            Reason::None => "None",
            Reason::ConditionalCheckFailed { .. } => "ConditionalCheckFailed",
            Reason::ItemCollectionSizeLimitExceeded => "ItemCollectionSizeLimitExceeded",
            Reason::TransactionConflict => "TransactionConflict",
            Reason::ValidationError(_) => "ValidationError",
            Reason::Throttled(code, _) => code,
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Reason::None => json!({"Code": "None"}),
            Reason::ConditionalCheckFailed { item } => {
                let mut reason = json!({"Code": self.code(), "Message": CONDITION_FAILED_MESSAGE});
                if let (Some(item), Some(object)) = (item, reason.as_object_mut()) {
                    object.insert("Item".into(), item_to_json(item));
                }
                reason
            }
            Reason::ItemCollectionSizeLimitExceeded => {
                json!({"Code": self.code(), "Message": COLLECTION_SIZE_EXCEEDED_MESSAGE})
            }
            Reason::TransactionConflict => {
                json!({"Code": self.code(), "Message": TRANSACTION_CONFLICT_MESSAGE})
            }
            Reason::ValidationError(message) => json!({"Code": self.code(), "Message": message}),
            Reason::Throttled(code, message) => json!({"Code": code, "Message": message}),
        }
    }
}

/// `TransactionCanceledException` with its reasons, in request order.
fn cancelled(reasons: &[Reason]) -> ApiError {
    ApiError::transaction_canceled(reasons.iter().map(Reason::to_json).collect())
}

/// The TransactionCanceledException of a transaction whose actions capacity emulation
/// refused (`None`: that action was not refused), in request order.
pub(crate) fn throttled_cancellation(refusals: &[Option<Refusal>]) -> ApiError {
    let reasons: Vec<Reason> = refusals
        .iter()
        .map(|refusal| match refusal {
            Some(refusal) => {
                let (code, message) = refusal.cancellation();
                Reason::Throttled(code, message)
            }
            None => Reason::None,
        })
        .collect();
    cancelled(&reasons)
}

/// What one action decided under the locks.
struct Decided {
    plan: Option<WritePlan>,
    /// Size of the stored item (ConditionCheck charges by it).
    old_size_bytes: u64,
}

impl Database {
    /// TransactWriteItems: up to 100 actions on distinct items, all or nothing.
    pub fn transact_write_items(
        &self,
        input: TransactWriteItemsInput,
    ) -> Result<TransactWriteItemsOutput, ApiError> {
        replanning(|| self.transact_write_items_attempt(&input))
    }

    fn transact_write_items_attempt(
        &self,
        input: &TransactWriteItemsInput,
    ) -> Result<TransactWriteItemsOutput, ApiError> {
        let (options, views) = input.check_constraints()?;
        let mut parsed = Vec::with_capacity(views.len());
        for view in &views {
            parsed.push(parse_action_request(view)?);
        }
        // Each action alone is within its limits by now (items at most 400 KB); together
        // they may not pass 4 MB. Known from the request: a plain ValidationException.
        let carried_bytes: usize = views.iter().map(ActionView::carried_bytes).sum();
        if carried_bytes > TRANSACT_WRITE_BYTES_MAX {
            return Err(ApiError::validation(TRANSACTION_TOO_LARGE_MESSAGE));
        }
        // Two actions naming the same table and the same key map are on one item whatever
        // the table: refused before the tables are looked up, as DynamoDB checks the request
        // first. (A Put's key is known only from the schema, so it waits for the table.)
        let mut keyed: Vec<(&str, &Item)> = Vec::new();
        for view in views.iter().filter(|view| view.kind != ActionKind::Put) {
            let named = (view.table_name, view.key_or_item);
            if keyed.contains(&named) {
                return Err(ApiError::validation(SAME_ITEM_MESSAGE));
            }
            keyed.push(named);
        }
        let mut actions = Vec::with_capacity(views.len());
        let mut items = BTreeSet::new();
        for (view, (condition, update)) in views.iter().zip(parsed) {
            let resolved = self.resolve_action(view, condition, update)?;
            if let Some(action) = resolved.action() {
                if !items.insert((action.table.tree, action.key.base_key()?)) {
                    return Err(ApiError::validation(SAME_ITEM_MESSAGE));
                }
            }
            actions.push(resolved);
        }

        let Some(token) = input.client_request_token.as_deref() else {
            return self.run_write_transaction(options, &actions);
        };
        let fingerprint = fingerprint(input)?;
        if let Some(output) = self
            .transaction_tokens
            .begin(token, &fingerprint, Instant::now())?
        {
            return Ok(output);
        }
        let result = self.run_write_transaction(options, &actions);
        match &result {
            Ok(output) => self
                .transaction_tokens
                .complete(token, output.clone(), Instant::now()),
            Err(_) => self.transaction_tokens.abandon(token),
        }
        result
    }

    /// Looks up an action's table and checks its key and (Put) item against it.
    fn resolve_action<'a>(
        &self,
        view: &ActionView<'a>,
        condition: Option<shoal_expr::Condition>,
        update: Option<shoal_expr::Update>,
    ) -> Result<Resolved<'a>, ApiError> {
        let table = self.data_table(table_name_of(Some(view.table_name))?)?;
        crate::replication::strong::refuse(&table, TRANSACTIONS)?;
        let key = match view.kind {
            ActionKind::Put => key_of_item(&table, view.key_or_item),
            ActionKind::ConditionCheck | ActionKind::Delete | ActionKind::Update => {
                key_from_request(&table, view.key_or_item)
            }
        };
        // A wrong-typed key attribute waits until the other request-level checks have run.
        let key = match key {
            Ok(key) => Ok(key),
            Err(error) if has_wrong_typed_key(&table, view.key_or_item, view.kind) => {
                Err(error.message)
            }
            Err(error) => return Err(error),
        };
        if let Some(update) = &update {
            check_update_key_paths(&table, update)?;
        }
        let key = match key {
            Ok(key) => key,
            Err(message) => return Ok(Resolved::KeyTypeFault(message)),
        };
        let mut deferred_fault = None;
        let item = match view.kind {
            ActionKind::Put => {
                let item = view.key_or_item;
                if let Err(error) = check_new_item(&table, item, false) {
                    if error.message.contains("Type mismatch for Index Key") {
                        deferred_fault = Some(error.message);
                    } else {
                        return Err(error);
                    }
                }
                Some(item)
            }
            ActionKind::ConditionCheck | ActionKind::Delete | ActionKind::Update => None,
        };
        Ok(Resolved::Action(Box::new(Action {
            kind: view.kind,
            table,
            key,
            item,
            condition,
            update,
            return_old_on_condition_failure: view.return_old_on_condition_failure,
            deferred_fault,
        })))
    }

    /// Locks, reads, decides and commits a checked transaction.
    fn run_write_transaction(
        &self,
        options: TransactOptions,
        resolved: &[Resolved<'_>],
    ) -> Result<TransactWriteItemsOutput, ApiError> {
        let actions: Vec<&Action<'_>> = resolved.iter().filter_map(Resolved::action).collect();
        let mut stripes = Vec::with_capacity(actions.len());
        for action in &actions {
            stripes.push(CollectionLocks::stripe_of(
                action.table.tree,
                &action.key.partition_prefix()?,
            ));
        }
        let _in_flight = match &self.emulation.in_flight {
            Some(in_flight) => {
                let mut items = Vec::with_capacity(actions.len());
                for action in &actions {
                    items.push((action.table.tree, action.key.base_key()?));
                }
                let claim = in_flight
                    .claim_transaction(items)
                    .map_err(|conflicts| cancelled(&conflict_reasons(&conflicts)))?;
                Some(claim)
            }
            None => None,
        };
        let _collections = self.locks.lock_many(stripes);
        self.hold_in_flight();

        let mut reasons = Vec::with_capacity(resolved.len());
        let mut decided = Vec::with_capacity(resolved.len());
        for slot in resolved {
            let action = match slot {
                Resolved::Action(action) => action,
                Resolved::KeyTypeFault(message) => {
                    reasons.push(Reason::ValidationError(message.clone()));
                    decided.push(None);
                    continue;
                }
            };
            let old = self.read_replaced_item(&action.table, &action.key)?;
            match decide(&self.features, action, old)? {
                Ok(outcome) => {
                    reasons.push(Reason::None);
                    decided.push(Some(outcome));
                }
                Err(reason) => {
                    reasons.push(reason);
                    decided.push(None);
                }
            }
        }
        self.check_collection_caps(resolved, &decided, &mut reasons)?;
        if reasons.iter().any(|reason| *reason != Reason::None) {
            return Err(cancelled(&reasons));
        }

        // Group by table (one group per table for the commit), keeping request order.
        let mut by_table: BTreeMap<&str, (&TableDef, Vec<&WritePlan>, WriteCapacity)> =
            BTreeMap::new();
        for (slot, outcome) in resolved.iter().zip(&decided) {
            let (Some(action), Some(outcome)) = (slot.action(), outcome) else {
                return Err(internal("an undecided action in a committed transaction"));
            };
            let group = by_table
                .entry(action.table.name.as_str())
                .or_insert_with(|| (&action.table, Vec::new(), WriteCapacity::default()));
            match &outcome.plan {
                Some(plan) => {
                    group.1.push(plan);
                    // Transactions charge the table arm twice (prepare and commit); index
                    // arms are not doubled (SPEC §5).
                    let mut capacity = plan.capacity.clone();
                    capacity.table_units *= 2.0;
                    group.2.add(&capacity);
                }
                None => group.2.table_units += 2.0 * write_units(outcome.old_size_bytes),
            }
        }
        let groups: Vec<(&TableDef, Vec<&WritePlan>)> = by_table
            .values()
            .map(|(table, plans, _)| (*table, plans.clone()))
            .collect();
        let records = self.commit_plans_across(&groups, options.return_item_collection_metrics)?;

        let mut consumed = Vec::new();
        let mut metrics = BTreeMap::new();
        let mut index_partition_units = Vec::new();
        for ((table, plans, capacity), table_records) in by_table.values().zip(records) {
            index_partition_units.extend(self.index_partition_units(table, plans.iter().copied()));
            consumed.extend(capacity.report(&table.name, options.return_consumed_capacity));
            if options.return_item_collection_metrics && table.has_local_indexes() {
                let collections = collection_metrics(table, plans.iter().copied(), &table_records);
                metrics.insert(table.name.clone(), collections);
            }
        }
        Ok(TransactWriteItemsOutput {
            consumed_capacity: (options.return_consumed_capacity != ReturnConsumedCapacity::None)
                .then_some(consumed),
            item_collection_metrics: (!metrics.is_empty()).then_some(metrics),
            index_partition_units,
        })
    }

    /// Marks the actions of every collection the transaction would grow past the cap.
    fn check_collection_caps(
        &self,
        resolved: &[Resolved<'_>],
        decided: &[Option<Decided>],
        reasons: &mut [Reason],
    ) -> Result<(), ApiError> {
        // Summed deltas and the actions involved, per (tree, collection record key).
        let mut collections: BTreeMap<(TreeId, Vec<u8>), (CollectionDelta, Vec<usize>)> =
            BTreeMap::new();
        for (position, (slot, outcome)) in resolved.iter().zip(decided).enumerate() {
            let Some(action) = slot.action() else {
                continue;
            };
            let Some(delta) = outcome
                .as_ref()
                .and_then(|o| o.plan.as_ref())
                .and_then(|plan| plan.collection)
            else {
                continue;
            };
            let record_key = keys::collection_key(&action.key.pk).map_err(internal)?;
            let slot = collections
                .entry((action.table.tree, record_key))
                .or_default();
            slot.0 = slot.0.plus(&delta);
            slot.1.push(position);
        }
        for (delta, positions) in collections.values() {
            let Some(&first) = positions.first() else {
                continue;
            };
            let Some(action) = resolved.get(first).and_then(Resolved::action) else {
                continue;
            };
            let before = collection::read_record(&self.db, &action.table, &action.key.pk)?;
            let after = before.apply(delta)?;
            let limit = self.options.limits.item_collection_size_limit_bytes;
            if collection::check_growth(&before, &after, limit).is_err() {
                for &position in positions {
                    if reasons[position] == Reason::None {
                        reasons[position] = Reason::ItemCollectionSizeLimitExceeded;
                    }
                }
            }
        }
        Ok(())
    }

    /// TransactGetItems: up to 100 items read at one snapshot.
    pub fn transact_get_items(
        &self,
        input: TransactGetItemsInput,
    ) -> Result<TransactGetItemsOutput, ApiError> {
        let (mode, gets) = input.check_constraints()?;
        let mut projections: Vec<Option<Projection>> = Vec::with_capacity(gets.len());
        for get in &gets {
            if get.expression_attribute_names.is_some() && get.projection_expression.is_none() {
                return Err(ApiError::validation(
                    "ExpressionAttributeNames can only be specified when using expressions",
                ));
            }
            let mut context = Context::new(get.expression_attribute_names.as_ref(), None)?;
            let projection = match &get.projection_expression {
                Some(text) => Some(context.parse_projection(text)?),
                None => None,
            };
            context.finish()?;
            projections.push(projection);
        }
        let mut tables = Vec::with_capacity(gets.len());
        for get in &gets {
            let table = self.data_table(table_name_of(get.table_name.as_deref())?)?;
            crate::replication::strong::refuse(&table, TRANSACTIONS)?;
            tables.push(table);
        }
        // A key that does not fit its table cancels the transaction (SPEC §3.9).
        let mut reasons = Vec::with_capacity(gets.len());
        let mut keys = Vec::with_capacity(gets.len());
        let mut items = BTreeSet::new();
        let empty = Item::new();
        for (get, table) in gets.iter().zip(&tables) {
            match key_from_request(table, get.key.as_ref().unwrap_or(&empty)) {
                Ok(key) => {
                    if !items.insert((table.tree, key.base_key()?)) {
                        return Err(ApiError::validation(SAME_ITEM_MESSAGE));
                    }
                    reasons.push(Reason::None);
                    keys.push(Some(key));
                }
                Err(error) if error.code == ErrorCode::ValidationException => {
                    reasons.push(Reason::ValidationError(error.message));
                    keys.push(None);
                }
                Err(error) => return Err(error),
            }
        }
        if reasons.iter().any(|reason| *reason != Reason::None) {
            return Err(cancelled(&reasons));
        }

        if let Some(in_flight) = &self.emulation.in_flight {
            let mut items = Vec::with_capacity(gets.len());
            for (table, key) in tables.iter().zip(&keys) {
                if let Some(key) = key {
                    items.push((table.tree, key.base_key()?));
                }
            }
            let busy = in_flight.busy(&items);
            if busy.contains(&true) {
                return Err(cancelled(&conflict_reasons(&busy)));
            }
        }

        let snapshot = self.db.snapshot();
        let mut responses = Vec::with_capacity(gets.len());
        let mut units: BTreeMap<String, f64> = BTreeMap::new();
        for ((table, key), projection) in tables.iter().zip(&keys).zip(&projections) {
            let Some(key) = key else {
                return Err(internal("an unchecked key in a read transaction"));
            };
            let item = self.read_item(table, key, Some(&snapshot))?;
            let size_bytes = item
                .as_ref()
                .map_or(0, |item| shoal_model::item_size_bytes(item) as u64);
            *units.entry(table.name.clone()).or_default() +=
                read_units(size_bytes, ReadConsistency::Transactional);
            let item = match (item, projection) {
                (Some(item), Some(projection)) => Some(projection.apply(item)),
                (item, _) => item,
            };
            responses.push(ItemResponse { item });
        }
        let consumed_capacity = (mode != ReturnConsumedCapacity::None).then(|| {
            units
                .into_iter()
                .map(|(table_name, units)| read_capacity(table_name, units, mode))
                .collect()
        });
        Ok(TransactGetItemsOutput {
            responses,
            consumed_capacity,
        })
    }
}

/// The request-only checks of one action: a Put's item size and nesting, then its condition
/// and update expressions, parsed with the action's own placeholder maps.
fn parse_action_request(
    view: &ActionView<'_>,
) -> Result<(Option<shoal_expr::Condition>, Option<shoal_expr::Update>), ApiError> {
    if view.kind == ActionKind::Put {
        shoal_model::check_item_limits(view.key_or_item, false)?;
    }
    if view.condition_expression.is_none() && view.update_expression.is_none() {
        if view.names.is_some() {
            return Err(ApiError::validation(
                "ExpressionAttributeNames can only be specified when using expressions",
            ));
        }
        if view.values.is_some() {
            return Err(ApiError::validation(
                "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null",
            ));
        }
    }
    let mut context = Context::new(view.names, view.values)?;
    let update = match view.update_expression {
        Some(text) => Some(context.parse_update(text)?),
        None => None,
    };
    let condition = match view.condition_expression {
        Some(text) => Some(context.parse_condition(text, ConditionKind::Condition)?),
        None => None,
    };
    context.finish()?;
    Ok((condition, update))
}

/// Decides one action against its stored item: a plan to commit (None for ConditionCheck),
/// or why the action fails. The outer error is a storage failure, not a cancellation.
fn decide(
    features: &Features,
    action: &Action<'_>,
    old: Option<Item>,
) -> Result<Result<Decided, Reason>, ApiError> {
    if let Some(fault) = &action.deferred_fault {
        return Ok(Err(Reason::ValidationError(fault.clone())));
    }
    let empty = Item::new();
    if let Some(condition) = &action.condition {
        if !condition.evaluate(old.as_ref().unwrap_or(&empty)) {
            let item = old.filter(|_| action.return_old_on_condition_failure);
            return Ok(Err(Reason::ConditionalCheckFailed { item }));
        }
    }
    let old_size_bytes = old
        .as_ref()
        .map_or(0, |item| shoal_model::item_size_bytes(item) as u64);
    let table = &action.table;
    let planned = match action.kind {
        ActionKind::ConditionCheck => {
            return Ok(Ok(Decided {
                plan: None,
                old_size_bytes,
            }))
        }
        ActionKind::Put => plan_write(
            features,
            table,
            &action.key,
            old.as_ref(),
            action.item,
            false,
        ),
        ActionKind::Delete => plan_write(features, table, &action.key, old.as_ref(), None, false),
        // REMOVE and DELETE alone on a missing item create nothing, as UpdateItem's.
        ActionKind::Update
            if old.is_none() && action.update.as_ref().is_some_and(|u| u.only_removes()) =>
        {
            plan_write(features, table, &action.key, None, None, true)
        }
        ActionKind::Update => {
            let base = old.clone().unwrap_or_else(|| action.key.to_item(table));
            let new = match &action.update {
                Some(update) => update.apply(&base).map(|outcome| outcome.item),
                None => Ok(base),
            };
            new.and_then(|new| {
                shoal_model::check_item_limits(&new, true)?;
                check_new_item(table, &new, true)?;
                plan_write(features, table, &action.key, old.as_ref(), Some(&new), true)
            })
        }
    };
    match planned {
        Ok(plan) => Ok(Ok(Decided {
            plan: Some(plan),
            old_size_bytes,
        })),
        // State-dependent faults are the action's cancellation reason (SPEC §3.9).
        Err(error) if error.code == ErrorCode::ValidationException => {
            Ok(Err(Reason::ValidationError(error.message)))
        }
        Err(error) => Err(error),
    }
}

/// What identifies a request for idempotency: everything but the token itself.
fn fingerprint(input: &TransactWriteItemsInput) -> Result<String, ApiError> {
    let mut request = input.clone();
    request.client_request_token = None;
    serde_json::to_string(&request).map_err(internal)
}

/// A remembered `ClientRequestToken`.
#[derive(Debug, Clone)]
struct TokenEntry {
    fingerprint: String,
    /// None while the transaction runs.
    completed: Option<(Instant, TransactWriteItemsOutput)>,
}

/// Recent `ClientRequestToken`s: a repeat within [`TOKEN_LIFETIME`] of completion returns
/// the first response without applying the transaction again. At most [`TOKENS_MAX`].
#[derive(Debug, Default)]
pub struct TokenTable {
    entries: Mutex<HashMap<String, TokenEntry>>,
}

impl TokenTable {
    /// Claims `token` for a transaction about to run: Ok(None) to run it, Ok(Some(output))
    /// for a completed repeat, an error for a mismatched or concurrent repeat.
    fn begin(
        &self,
        token: &str,
        fingerprint: &str,
        now: Instant,
    ) -> Result<Option<TransactWriteItemsOutput>, ApiError> {
        let mut entries = self.entries.lock();
        let expired = |entry: &TokenEntry| {
            entry
                .completed
                .as_ref()
                .is_some_and(|(at, _)| now.saturating_duration_since(*at) >= TOKEN_LIFETIME)
        };
        if entries.get(token).is_some_and(expired) {
            entries.remove(token);
        }
        if let Some(entry) = entries.get(token) {
            if entry.fingerprint != fingerprint {
                return Err(ApiError::new(
                    ErrorCode::IdempotentParameterMismatchException,
                    "The request uses the same client token as a previous, but non-identical request.",
                ));
            }
            return match &entry.completed {
                Some((_, output)) => Ok(Some(output.clone())),
                None => Err(ApiError::new(
                    ErrorCode::TransactionInProgressException,
                    "The transaction with the given request token is already in progress.",
                )),
            };
        }
        if entries.len() >= TOKENS_MAX {
            entries.retain(|_, entry| !expired(entry));
        }
        if entries.len() >= TOKENS_MAX {
            let oldest = entries
                .iter()
                .filter_map(|(token, entry)| entry.completed.as_ref().map(|(at, _)| (*at, token)))
                .min()
                .map(|(_, token)| token.clone());
            match oldest {
                Some(oldest) => {
                    entries.remove(&oldest);
                }
                None => {
                    return Err(ApiError::new(
                        ErrorCode::ThrottlingException,
                        "Too many transactions with a ClientRequestToken are in progress",
                    ))
                }
            }
        }
        entries.insert(
            token.to_string(),
            TokenEntry {
                fingerprint: fingerprint.to_string(),
                completed: None,
            },
        );
        Ok(None)
    }

    /// Records the response of a committed transaction.
    fn complete(&self, token: &str, output: TransactWriteItemsOutput, now: Instant) {
        if let Some(entry) = self.entries.lock().get_mut(token) {
            entry.completed = Some((now, output));
        }
    }

    /// Forgets a token whose transaction failed: a retry runs it again.
    fn abandon(&self, token: &str) {
        self.entries.lock().remove(token);
    }

    /// Tokens remembered (tests).
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_replay_mismatch_and_expire() {
        let tokens = TokenTable::default();
        let start = Instant::now();
        assert_eq!(tokens.begin("t", "a", start).unwrap(), None);
        let busy = tokens.begin("t", "a", start).unwrap_err();
        assert_eq!(busy.code, ErrorCode::TransactionInProgressException);
        tokens.complete("t", TransactWriteItemsOutput::default(), start);
        assert_eq!(
            tokens.begin("t", "a", start).unwrap(),
            Some(TransactWriteItemsOutput::default())
        );
        let mismatch = tokens.begin("t", "b", start).unwrap_err();
        assert_eq!(
            mismatch.code,
            ErrorCode::IdempotentParameterMismatchException
        );
        let later = start + TOKEN_LIFETIME;
        assert_eq!(tokens.begin("t", "b", later).unwrap(), None, "expired");
        tokens.abandon("t");
        assert!(tokens.is_empty());
    }

    #[test]
    fn the_table_is_bounded() {
        let tokens = TokenTable::default();
        let now = Instant::now();
        for i in 0..TOKENS_MAX {
            tokens.begin(&i.to_string(), "f", now).unwrap();
            tokens.complete(&i.to_string(), TransactWriteItemsOutput::default(), now);
        }
        tokens.begin("new", "f", now).unwrap();
        assert_eq!(tokens.len(), TOKENS_MAX);
    }

    #[test]
    fn cancellation_lists_reasons_in_order() {
        let item = Item::from([("pk".to_string(), shoal_model::AttributeValue::S("a".into()))]);
        let error = cancelled(&[
            Reason::None,
            Reason::ConditionalCheckFailed { item: Some(item) },
            Reason::ValidationError("bad".into()),
        ]);
        assert_eq!(
            error.message,
            "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed, ValidationError]"
        );
        let reasons = &error.extra.unwrap()["CancellationReasons"];
        assert_eq!(reasons[0], json!({"Code": "None"}));
        assert_eq!(reasons[1]["Item"], json!({"pk": {"S": "a"}}));
        assert_eq!(
            reasons[2],
            json!({"Code": "ValidationError", "Message": "bad"})
        );
    }
}
