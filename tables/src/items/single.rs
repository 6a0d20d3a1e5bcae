//! PutItem, GetItem, UpdateItem and DeleteItem (SPEC §3.1–§3.8, §4.1, §5).
//!
//! Each write validates in DynamoDB's order (member constraints, then expressions and the
//! other request-only rules, then the table and its schema), then takes its collection
//! lock, reads the stored item, evaluates the condition, decides the new item and commits
//! it through the shared pipeline of `core/write.rs`. Nothing is written when any check
//! fails.

use std::collections::BTreeMap;

use shoal_engine::Snapshot;
use shoal_expr::legacy::AttributeValueUpdate;
use shoal_expr::{
    check_no_mixing, extract_paths, Condition, ConditionKind, Context, Projection, Update,
};
use shoal_model::{item_to_json, ApiError, AttributeValue, ErrorCode, Item};

use crate::api::common::{Capacity, ConsumedCapacity, ReturnConsumedCapacity};
use crate::api::items::{
    legacy_conditional_operator, legacy_expected, DeleteItemInput, DeleteItemOutput,
    ExpectedAttributeValue, GetItemInput, GetItemOutput, PutItemInput, PutItemOutput, ReturnValues,
    UpdateItemInput, UpdateItemOutput, WriteOptions,
};
use crate::core::catalog::TableDef;
use crate::core::collection::{self, CollectionRecord};
use crate::core::item_codec::ItemForm;
use crate::core::plan::{ItemKey, WritePlan};
use crate::core::units::{read_units, ReadConsistency};
use crate::core::write::{
    check_new_item, check_update_key_paths, failed_condition_units, key_from_request, key_of_item,
    plan_write, replanning,
};
use crate::database::Database;

/// DynamoDB's text for a failed condition.
pub const CONDITION_FAILED_MESSAGE: &str = "The conditional request failed";

impl Database {
    /// PutItem: creates or replaces a whole item.
    pub fn put_item(&self, input: PutItemInput) -> Result<PutItemOutput, ApiError> {
        replanning(|| self.put_item_attempt(&input))
    }

    fn put_item_attempt(&self, input: &PutItemInput) -> Result<PutItemOutput, ApiError> {
        let options = input.check_constraints()?;
        only_all_old_or_none(options.return_values)?;
        let condition = {
            let values_error = "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null";
            let parsed = WriteExpressions::parse(
                &input.expression_attribute_names,
                &input.expression_attribute_values,
                None,
                input.condition_expression.as_deref(),
                input.expected.as_ref(),
                input.conditional_operator.as_deref(),
                None,
                values_error,
            )?;
            parsed.condition
        };
        let no_item = Item::new();
        // Present: the constraints above require it.
        let item = input.item.as_ref().unwrap_or(&no_item);
        shoal_model::check_item_limits(item, false)?;
        let table = self.data_table(input.table_name.as_deref().unwrap_or_default())?;
        let key = key_of_item(&table, item)?;
        check_new_item(&table, item, false)?;

        // Held until every member has the write (`replication::strong`).
        let _strong = self.claim_strong(&table, [&key])?;
        let (old, plan, record) = {
            let _in_flight = self.claim_write(&table, &key)?;
            let _collection = self.locks.lock(table.tree, &key.partition_prefix()?);
            self.hold_in_flight();
            let old = self.read_replaced_item(&table, &key)?;
            check_condition(
                condition.as_ref(),
                old.as_ref(),
                options.return_old_on_condition_failure,
            )
            .map_err(|error| {
                error.with_charge(
                    &table.name,
                    failed_condition_units(old.as_ref(), Some(item)),
                )
            })?;
            let plan = plan_write(
                &self.features,
                &table,
                &key,
                old.as_ref(),
                Some(item),
                false,
            )?;
            let record = self.commit_one(&table, &plan, &options)?;
            (old, plan, record)
        };
        self.replicate_strongly(&table)?;
        let attributes = match options.return_values {
            ReturnValues::AllOld => old,
            _ => None,
        };
        Ok(self.write_output(&table, &options, &plan, record, attributes))
    }

    /// DeleteItem: removes an item (a missing item is not an error).
    pub fn delete_item(&self, input: DeleteItemInput) -> Result<DeleteItemOutput, ApiError> {
        replanning(|| self.delete_item_attempt(&input))
    }

    fn delete_item_attempt(&self, input: &DeleteItemInput) -> Result<DeleteItemOutput, ApiError> {
        let options = input.check_constraints()?;
        only_all_old_or_none(options.return_values)?;
        let values_error = "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null";
        let condition = WriteExpressions::parse(
            &input.expression_attribute_names,
            &input.expression_attribute_values,
            None,
            input.condition_expression.as_deref(),
            input.expected.as_ref(),
            input.conditional_operator.as_deref(),
            None,
            values_error,
        )?
        .condition;
        let table = self.data_table(input.table_name.as_deref().unwrap_or_default())?;
        let key = key_from_request(&table, input.key.as_ref().unwrap_or(&Item::new()))?;

        // Held until every member has the write (`replication::strong`).
        let _strong = self.claim_strong(&table, [&key])?;
        let (old, plan, record) = {
            let _in_flight = self.claim_write(&table, &key)?;
            let _collection = self.locks.lock(table.tree, &key.partition_prefix()?);
            self.hold_in_flight();
            let old = self.read_replaced_item(&table, &key)?;
            check_condition(
                condition.as_ref(),
                old.as_ref(),
                options.return_old_on_condition_failure,
            )
            .map_err(|error| {
                error.with_charge(&table.name, failed_condition_units(old.as_ref(), None))
            })?;
            let plan = plan_write(&self.features, &table, &key, old.as_ref(), None, false)?;
            let record = self.commit_one(&table, &plan, &options)?;
            (old, plan, record)
        };
        self.replicate_strongly(&table)?;
        let attributes = match options.return_values {
            ReturnValues::AllOld => old,
            _ => None,
        };
        Ok(self.write_output(&table, &options, &plan, record, attributes))
    }

    /// UpdateItem: edits an item in place, creating it when it does not exist.
    pub fn update_item(&self, input: UpdateItemInput) -> Result<UpdateItemOutput, ApiError> {
        replanning(|| self.update_item_attempt(&input))
    }

    fn update_item_attempt(&self, input: &UpdateItemInput) -> Result<UpdateItemOutput, ApiError> {
        let options = input.check_constraints()?;
        let values_error =
            "ExpressionAttributeValues can only be specified when using expressions: UpdateExpression and ConditionExpression are null";
        let legacy_updates = input.legacy_updates();
        // Checked before the item is read: a name that no item can hold fails the request
        // whatever is stored.
        for name in legacy_updates.iter().flat_map(|updates| updates.keys()) {
            shoal_model::check_attribute_name(name)?;
        }
        let WriteExpressions { condition, update } = WriteExpressions::parse(
            &input.expression_attribute_names,
            &input.expression_attribute_values,
            input.update_expression.as_deref(),
            input.condition_expression.as_deref(),
            input.expected.as_ref(),
            input.conditional_operator.as_deref(),
            legacy_updates.as_ref(),
            values_error,
        )?;
        let table = self.data_table(input.table_name.as_deref().unwrap_or_default())?;
        let key = key_from_request(&table, input.key.as_ref().unwrap_or(&Item::new()))?;
        if let Some(update) = &update {
            check_update_key_paths(&table, update)?;
        }

        // Held until every member has the write (`replication::strong`).
        let _strong = self.claim_strong(&table, [&key])?;
        let (old, new, touched, plan, record) = {
            let _in_flight = self.claim_write(&table, &key)?;
            let _collection = self.locks.lock(table.tree, &key.partition_prefix()?);
            self.hold_in_flight();
            let old = self.read_replaced_item(&table, &key)?;
            check_condition(
                condition.as_ref(),
                old.as_ref(),
                options.return_old_on_condition_failure,
            )
            .map_err(|error| {
                // Charged by the item the update would have left (SPEC §5).
                let would_be = match (&old, &update) {
                    (Some(old), Some(update)) => update.apply(old).ok().map(|outcome| outcome.item),
                    _ => None,
                };
                let units =
                    failed_condition_units(old.as_ref(), would_be.as_ref().or(old.as_ref()));
                error.with_charge(&table.name, units)
            })?;
            // REMOVE and DELETE alone on a missing item create nothing: no write, no stream
            // record, and ALL_NEW returns nothing (SPEC-2 §1.6).
            if old.is_none() && update.as_ref().is_some_and(|u| u.only_removes()) {
                let plan = plan_write(&self.features, &table, &key, None, None, true)?;
                let record = self.commit_one(&table, &plan, &options)?;
                return Ok(self.write_output(&table, &options, &plan, record, None));
            }
            // `apply` copies the item it starts from, so the stored item is lent to it rather
            // than cloned once more (that clone was ~3% of an UpdateItem of a ~1 KB item).
            let key_only;
            let base = match &old {
                Some(old) => old,
                None => {
                    key_only = key.to_item(&table);
                    &key_only
                }
            };
            let (new, touched) = match &update {
                Some(update) => {
                    let outcome = update.apply(base).map_err(|error| {
                        if legacy_updates.is_some() {
                            legacy_update_error(error)
                        } else {
                            error
                        }
                    })?;
                    (outcome.item, outcome.touched_paths)
                }
                None => (base.clone(), Vec::new()),
            };
            shoal_model::check_item_limits(&new, true)?;
            check_new_item(&table, &new, true)?;
            let plan = plan_write(&self.features, &table, &key, old.as_ref(), Some(&new), true)?;
            let record = self.commit_one(&table, &plan, &options)?;
            (old, new, touched, plan, record)
        };
        self.replicate_strongly(&table)?;
        let attributes = match options.return_values {
            ReturnValues::None => None,
            ReturnValues::AllOld => old,
            ReturnValues::AllNew => Some(new),
            ReturnValues::UpdatedOld => old.map(|old| extract_paths(&old, &touched)),
            ReturnValues::UpdatedNew => Some(extract_paths(&new, &touched)),
        };
        Ok(self.write_output(&table, &options, &plan, record, attributes))
    }

    /// GetItem: reads one item: the latest version, unless `EmulationOptions::eventual_read_lag`
    /// lags a read without `ConsistentRead` (`emulation::lag`).
    pub fn get_item(&self, input: GetItemInput) -> Result<GetItemOutput, ApiError> {
        self.get_item_as(input)
    }

    /// [`Database::get_item`] answering its item in the form `F` (decoded, or as JSON).
    pub(crate) fn get_item_as<F: ItemForm>(
        &self,
        input: GetItemInput,
    ) -> Result<GetItemOutput<F>, ApiError> {
        let return_consumed_capacity = input.check_constraints()?;
        let mut legacy = Vec::new();
        if input.attributes_to_get.is_some() {
            legacy.push("AttributesToGet");
        }
        let mut expressions = Vec::new();
        if input.projection_expression.is_some() {
            expressions.push("ProjectionExpression");
        }
        check_no_mixing(&legacy, &expressions)?;
        if input.expression_attribute_names.is_some() && input.projection_expression.is_none() {
            return Err(ApiError::validation(
                "ExpressionAttributeNames can only be specified when using expressions",
            ));
        }
        let mut context = Context::new(input.expression_attribute_names.as_ref(), None)?;
        let projection = match (&input.projection_expression, &input.attributes_to_get) {
            (Some(text), _) => Some(context.parse_projection(text)?),
            (None, Some(names)) => Some(shoal_expr::legacy::attributes_to_get(names)?),
            (None, None) => None,
        };
        context.finish()?;
        let table = self.data_table(input.table_name.as_deref().unwrap_or_default())?;
        let key = key_from_request(&table, input.key.as_ref().unwrap_or(&Item::new()))?;

        let lagged = self.lagged_snapshot(false, input.consistent_read);
        let (item, size_bytes) =
            self.read_answered_item(&table, &key, lagged.as_deref(), projection.as_ref())?;
        let units = read_units(
            size_bytes,
            ReadConsistency::from_consistent_read(input.consistent_read),
        );
        Ok(GetItemOutput {
            item,
            consumed_capacity: read_capacity(&table.name, units, return_consumed_capacity),
        })
    }

    /// The item with `key` as a read answers it, in the form `F`, projected if asked, and the
    /// size its read units are counted on: the whole stored item's, whatever the projection
    /// keeps. (GetItem and BatchGetItem.) A projected item is built in memory and projected;
    /// a whole one is read straight into `F`.
    pub(crate) fn read_answered_item<F: ItemForm>(
        &self,
        table: &TableDef,
        key: &ItemKey,
        snapshot: Option<&Snapshot>,
        projection: Option<&Projection>,
    ) -> Result<(Option<F>, u64), ApiError> {
        let Some(projection) = projection else {
            let item: Option<F> = self.read_item_as(table, key, snapshot)?;
            let size_bytes = item.as_ref().map_or(0, F::size_bytes);
            return Ok((item, size_bytes));
        };
        let item = self.read_item(table, key, snapshot)?;
        let size_bytes = item.as_ref().map_or(0, ItemForm::size_bytes);
        Ok((item.map(|item| F::from(projection.apply(item))), size_bytes))
    }

    /// Commits one item's plan; returns its collection's new record (tables with an LSI).
    fn commit_one(
        &self,
        table: &TableDef,
        plan: &WritePlan,
        options: &WriteOptions,
    ) -> Result<Option<CollectionRecord>, ApiError> {
        Ok(self
            .commit_plans(table, &[plan], options.return_item_collection_metrics)?
            .into_iter()
            .next()
            .flatten())
    }

    /// The response of a write: returned attributes (omitted when empty), capacity and
    /// collection metrics as asked for, and where its GSI units went (capacity emulation).
    fn write_output(
        &self,
        table: &TableDef,
        options: &WriteOptions,
        plan: &WritePlan,
        record: Option<CollectionRecord>,
        attributes: Option<Item>,
    ) -> PutItemOutput {
        let item_collection_metrics = match record {
            Some(record) if options.return_item_collection_metrics && table.has_local_indexes() => {
                Some(collection::metrics(table, &plan.key.pk, record.size_bytes))
            }
            _ => None,
        };
        PutItemOutput {
            attributes: attributes.filter(|item| !item.is_empty()),
            consumed_capacity: plan
                .capacity
                .report(&table.name, options.return_consumed_capacity),
            item_collection_metrics,
            index_partition_units: self.index_partition_units(table, [plan]),
        }
    }
}

/// The parsed condition and update of one write request.
struct WriteExpressions {
    condition: Option<Condition>,
    update: Option<Update>,
}

impl WriteExpressions {
    /// Checks the expression members of a write (mixing with legacy members, placeholder maps
    /// without expressions, unused placeholders) and parses them. `update_expression` and
    /// `attribute_updates` are UpdateItem's only. `values_error` is the operation's text for
    /// ExpressionAttributeValues given without expressions.
    #[allow(clippy::too_many_arguments)]
    fn parse(
        names: &Option<BTreeMap<String, String>>,
        values: &Option<BTreeMap<String, AttributeValue>>,
        update_expression: Option<&str>,
        condition_expression: Option<&str>,
        expected: Option<&BTreeMap<String, ExpectedAttributeValue>>,
        conditional_operator: Option<&str>,
        attribute_updates: Option<&BTreeMap<String, AttributeValueUpdate>>,
        values_error: &str,
    ) -> Result<WriteExpressions, ApiError> {
        let mut legacy = Vec::new();
        if attribute_updates.is_some() {
            legacy.push("AttributeUpdates");
        }
        if expected.is_some() {
            legacy.push("Expected");
        }
        if conditional_operator.is_some() {
            legacy.push("ConditionalOperator");
        }
        let mut expressions = Vec::new();
        if update_expression.is_some() {
            expressions.push("UpdateExpression");
        }
        if condition_expression.is_some() {
            expressions.push("ConditionExpression");
        }
        check_no_mixing(&legacy, &expressions)?;
        shoal_expr::legacy::check_conditional_operator_use(
            conditional_operator.is_some(),
            "Expected",
            expected.map(BTreeMap::len),
        )?;
        if expressions.is_empty() {
            if names.is_some() {
                return Err(ApiError::validation(
                    "ExpressionAttributeNames can only be specified when using expressions",
                ));
            }
            if values.is_some() {
                return Err(ApiError::validation(values_error));
            }
        }
        let mut context = Context::new(names.as_ref(), values.as_ref())?;
        let update = match (update_expression, attribute_updates) {
            (Some(text), _) => Some(context.parse_update(text)?),
            (None, Some(updates)) => Some(shoal_expr::legacy::attribute_updates(updates)?),
            (None, None) => None,
        };
        let condition = match (condition_expression, expected) {
            (Some(text), _) => Some(context.parse_condition(text, ConditionKind::Condition)?),
            (None, Some(expected)) => shoal_expr::legacy::expected_condition(
                &legacy_expected(expected),
                legacy_conditional_operator(conditional_operator),
            )?,
            (None, None) => None,
        };
        context.finish()?;
        Ok(WriteExpressions { condition, update })
    }
}

/// An error of applying AttributeUpdates in their own words: an ADD or DELETE whose value's
/// type is not the attribute's is dynalite's `Type mismatch for attribute to update` [E], not
/// UpdateExpression's operand text.
fn legacy_update_error(error: ApiError) -> ApiError {
    if error.message == shoal_expr::INCORRECT_DATA_TYPE {
        ApiError::validation("Type mismatch for attribute to update")
    } else {
        error
    }
}

/// PutItem and DeleteItem return only the old item.
fn only_all_old_or_none(return_values: ReturnValues) -> Result<(), ApiError> {
    match return_values {
        ReturnValues::None | ReturnValues::AllOld => Ok(()),
        _ => Err(ApiError::validation(
            "ReturnValues can only be ALL_OLD or NONE",
        )),
    }
}

/// Evaluates a write's condition against the stored item (an empty item when none exists).
fn check_condition(
    condition: Option<&Condition>,
    old: Option<&Item>,
    return_old: bool,
) -> Result<(), ApiError> {
    let Some(condition) = condition else {
        return Ok(());
    };
    let empty = Item::new();
    if condition.evaluate(old.unwrap_or(&empty)) {
        return Ok(());
    }
    let error = ApiError::new(
        ErrorCode::ConditionalCheckFailedException,
        CONDITION_FAILED_MESSAGE,
    );
    Err(match old {
        Some(old) if return_old => error.with_extra("Item", item_to_json(old)),
        _ => error,
    })
}

/// GetItem's `ConsumedCapacity` (never index arms): only `CapacityUnits`, as DynamoDB
/// reports it (SPEC §3.6).
fn read_capacity(
    table_name: &str,
    units: f64,
    mode: ReturnConsumedCapacity,
) -> Option<ConsumedCapacity> {
    let mut consumed = ConsumedCapacity {
        table_name: table_name.to_string(),
        capacity_units: units,
        ..ConsumedCapacity::default()
    };
    match mode {
        ReturnConsumedCapacity::None => return None,
        ReturnConsumedCapacity::Total => {}
        ReturnConsumedCapacity::Indexes => {
            consumed.table = Some(Capacity {
                capacity_units: units,
                read_capacity_units: None,
                write_capacity_units: None,
            })
        }
    }
    Some(consumed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::catalog::{
        BillingMode, GlobalIndexDef, IndexStatus, KeyAttribute, KeySchema, Projection,
        CATALOG_FORMAT,
    };
    use shoal_model::ScalarType;

    fn table() -> TableDef {
        let schema = |hash: &str, range: Option<&str>| {
            KeySchema::new(
                KeyAttribute::new(hash, ScalarType::S),
                range.map(|r| KeyAttribute::new(r, ScalarType::S)),
            )
        };
        TableDef {
            format: CATALOG_FORMAT,
            name: "T".into(),
            id: "id".into(),
            created_at_millis: 0,
            key: schema("pk", Some("sk")),
            attribute_definitions: vec![],
            billing: BillingMode::PayPerRequest,
            tree: 1,
            local_indexes: vec![],
            global_indexes: vec![GlobalIndexDef {
                name: "ByG".into(),
                key: schema("g", None),
                projection: Projection::All,
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

    fn update_error(expression: &str) -> Option<String> {
        let values = BTreeMap::from([(":v".to_string(), AttributeValue::S("x".into()))]);
        let mut context = Context::new(None, Some(&values)).unwrap();
        let update = context.parse_update(expression).unwrap();
        check_update_key_paths(&table(), &update)
            .err()
            .map(|e| e.message)
    }

    #[test]
    fn update_paths_may_not_touch_keys() {
        assert_eq!(
            update_error("SET plain = :v, g = :v"),
            None,
            "whole index keys may change"
        );
        assert_eq!(
            update_error("REMOVE sk"),
            Some("One or more parameter values were invalid: Cannot update attribute sk. This attribute is part of the key".into())
        );
        assert_eq!(
            update_error("SET g[0] = :v"),
            Some("Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: IndexKey: g".into())
        );
        assert_eq!(
            update_error("SET pk.a = :v"),
            Some("Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: pk".into())
        );
    }

    #[test]
    fn failed_conditions_carry_the_old_item_only_when_asked() {
        let mut context = Context::new(None, None).unwrap();
        let condition = context
            .parse_condition("attribute_not_exists(pk)", ConditionKind::Condition)
            .unwrap();
        let old = Item::from([("pk".to_string(), AttributeValue::S("a".into()))]);
        assert!(check_condition(Some(&condition), None, true).is_ok());
        assert!(check_condition(None, Some(&old), true).is_ok());
        let plain = check_condition(Some(&condition), Some(&old), false).unwrap_err();
        assert_eq!(plain.code, ErrorCode::ConditionalCheckFailedException);
        assert!(plain.extra.is_none());
        let with_item = check_condition(Some(&condition), Some(&old), true).unwrap_err();
        assert_eq!(with_item.extra.unwrap()["Item"], item_to_json(&old));
    }
}
