//! Query: one partition of a table, an LSI or a GSI, as one key range of one tree.
//!
//! The key condition (an equality on the partition key, at most one condition on the sort
//! key) becomes one key range with `keys::sort_range`: base items under
//! `hash | pk | 0x00`, an LSI's entries under `hash | pk | section`, a GSI's under
//! `hash | gsi pk`. ScanIndexForward=false walks that range backwards. An ExclusiveStartKey
//! maps to the storage key of the entry it names (`paging`), and the walk resumes strictly
//! after it. Reads run at one snapshot and never take collection locks.

use std::ops::Bound;

use shoal_expr::{legacy, Condition, ConditionKind, Context, KeyCondition, KeySchemaView};
use shoal_model::{ApiError, AttributeValue};

use crate::api::common::ReturnConsumedCapacity;
use crate::api::query::{
    attributes_to_get, check_expression_parameters, check_index_name, check_limit,
    conditional_operator, legacy_conditions, query_constraints, table_name_of, QueryRequest,
    QueryResponse, INVALID_START_KEY,
};
use crate::core::catalog::{KeySchema, TableDef};
use crate::core::error::internal;
use crate::core::item_codec::ItemForm;
use crate::core::keys::{self, KeyRange};
use crate::core::units::ReadConsistency;
use crate::query_scan::paging::{parse_select, plan_shape, Output, PagePlan, ReadTarget};
use crate::Database;
use shoal_engine::Direction;

/// A Query without a key condition.
const NO_KEY_CONDITION: &str =
    "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.";

/// SPEC §4.2's refusal of a start key that no row of the query could follow.
const CANNOT_BE_RESTARTED: &str = "The query can return at most one row and cannot be restarted";

impl Database {
    /// DynamoDB `Query`.
    pub fn query(&self, request: QueryRequest) -> Result<QueryResponse, ApiError> {
        self.query_as(request)
    }

    /// [`Database::query`] answering its items in the form `F` (decoded, or as JSON).
    pub(crate) fn query_as<F: ItemForm>(
        &self,
        request: QueryRequest,
    ) -> Result<QueryResponse<F>, ApiError> {
        // Member constraints, all reported together.
        query_constraints(&request)?;
        let table_name = table_name_of(request.table_name.as_deref())?;
        check_index_name(request.index_name.as_deref())?;
        let limit = check_limit(request.limit)?;
        let return_capacity =
            ReturnConsumedCapacity::parse(request.return_consumed_capacity.as_deref())?;
        let operator = conditional_operator(request.conditional_operator.as_deref())?;
        let key_conditions = legacy_conditions(request.key_conditions.as_ref(), "keyConditions")?;
        let query_filter = legacy_conditions(request.query_filter.as_ref(), "queryFilter")?;

        // Checks that need only the request.
        check_expression_parameters(
            &[
                (
                    "ProjectionExpression",
                    request.projection_expression.is_some(),
                ),
                ("FilterExpression", request.filter_expression.is_some()),
                (
                    "KeyConditionExpression",
                    request.key_condition_expression.is_some(),
                ),
            ],
            &[
                ("AttributesToGet", request.attributes_to_get.is_some()),
                ("QueryFilter", request.query_filter.is_some()),
                (
                    "ConditionalOperator",
                    request.conditional_operator.is_some(),
                ),
                // KeyConditions may go with a FilterExpression; only KeyConditionExpression
                // makes it a mix.
                (
                    "KeyConditions",
                    request.key_conditions.is_some() && request.key_condition_expression.is_some(),
                ),
            ],
            request.expression_attribute_names.is_some(),
            request.expression_attribute_values.is_some(),
        )?;
        legacy::check_conditional_operator_use(
            request.conditional_operator.is_some(),
            "QueryFilter",
            request.query_filter.as_ref().map(|filter| filter.len()),
        )?;
        if request.key_conditions.is_none() && request.key_condition_expression.is_none() {
            return Err(ApiError::validation(NO_KEY_CONDITION));
        }
        let select = parse_select(
            request.select.as_deref(),
            request.projection_expression.is_some(),
            request.attributes_to_get.is_some(),
            request.index_name.is_some(),
        )?;
        let mut context = Context::new(
            request.expression_attribute_names.as_ref(),
            request.expression_attribute_values.as_ref(),
        )?;
        let (filter, filter_parameter) = match (&request.filter_expression, &query_filter) {
            (Some(text), _) => (
                Some(context.parse_condition(text, ConditionKind::Filter)?),
                "Filter Expression",
            ),
            (None, Some(conditions)) => (
                legacy::filter_condition(conditions, operator)?,
                "QueryFilter",
            ),
            (None, None) => (None, "Filter Expression"),
        };
        let projection = match &request.projection_expression {
            Some(text) => Some(context.parse_projection(text)?),
            None => attributes_to_get(request.attributes_to_get.as_ref())?,
        };
        // Checks against the table. DynamoDB checks what the request alone decides (the key
        // condition's own rules, the placeholders left unused) before it looks the table or
        // index up; when either is found, the parse against its key schema below reports
        // those same errors, so only a failed lookup pays for a parse without the schema.
        let mut schema_free_checks = |not_found: ApiError| -> ApiError {
            match check_key_condition_alone(&mut context, &request, key_conditions.as_ref())
                .and_then(|()| context.finish())
            {
                Err(invalid) => invalid,
                Ok(()) => not_found,
            }
        };
        let table = self
            .data_table(table_name)
            .map_err(&mut schema_free_checks)?;
        let target = ReadTarget::resolve(&table, request.index_name.as_deref())
            .map_err(&mut schema_free_checks)?;
        if matches!(target, ReadTarget::Global(_)) && request.consistent_read == Some(true) {
            return Err(ApiError::validation(
                "Consistent reads are not supported on global secondary indexes",
            ));
        }
        let schema = target.key_schema(&table);
        let view = schema_view(schema);
        let key_condition = match (&request.key_condition_expression, &key_conditions) {
            (Some(text), _) => context.parse_key_condition(text, &view)?,
            (None, Some(conditions)) => legacy::key_conditions(conditions, &view)?,
            (None, None) => return Err(ApiError::validation(NO_KEY_CONDITION)),
        };
        context.finish()?;
        if let Some(filter) = &filter {
            check_filter_avoids_keys(filter, schema, filter_parameter)?;
        }
        let shape = plan_shape(&table, target, select, projection, filter.as_ref())?;
        let range = query_range(&table, target, &key_condition)?;
        let forward = request.scan_index_forward != Some(false);
        let range = match &request.exclusive_start_key {
            Some(start_key) => {
                check_query_start_key(&table, target, &key_condition, start_key)?;
                resume_after(range, target.storage_key(&table, start_key)?, forward)
            }
            None => range,
        };

        // Read one page at one snapshot.
        let consistency = ReadConsistency::from_consistent_read(request.consistent_read);
        let snapshot = self.read_snapshot(
            matches!(target, ReadTarget::Global(_)),
            request.consistent_read,
        );
        let direction = if forward {
            Direction::Forward
        } else {
            Direction::Reverse
        };
        let mut cursor = self
            .db
            .iter(
                target.tree(&table),
                range.lower_ref(),
                range.upper_ref(),
                direction,
                Some(&*snapshot),
            )
            .map_err(internal)?;
        let plan = PagePlan {
            table: &table,
            target,
            shape: &shape,
            filter: filter.as_ref(),
            limit,
            consistency,
            snapshot: &snapshot,
        };
        let page = self.read_page(&plan, &mut cursor)?;
        Ok(QueryResponse {
            items: (!matches!(shape.output, Output::Count)).then_some(page.items),
            count: page.count,
            scanned_count: page.scanned_count,
            // Nothing could follow; a key to resume from would only be refused.
            last_evaluated_key: page
                .last_evaluated_key
                .filter(|_| !reads_one_item(&table, target)),
            consumed_capacity: page
                .charge
                .consumed(&table, target, consistency, return_capacity),
        })
    }
}

/// The partition key value a Query reads, for capacity emulation: None when its key
/// condition does not parse (the Query itself then answers why).
pub(crate) fn query_partition(
    table: &TableDef,
    request: &QueryRequest,
) -> Option<Vec<AttributeValue>> {
    let target = ReadTarget::resolve(table, request.index_name.as_deref()).ok()?;
    let view = schema_view(target.key_schema(table));
    let mut context = Context::new(
        request.expression_attribute_names.as_ref(),
        request.expression_attribute_values.as_ref(),
    )
    .ok()?;
    let key_conditions =
        legacy_conditions(request.key_conditions.as_ref(), "keyConditions").ok()?;
    let key_condition = match (&request.key_condition_expression, &key_conditions) {
        (Some(text), _) => context.parse_key_condition(text, &view).ok()?,
        (None, Some(conditions)) => legacy::key_conditions(conditions, &view).ok()?,
        (None, None) => return None,
    };
    Some(key_condition.hash_values().into_iter().cloned().collect())
}

/// The key condition's rules that need no key schema (syntax, placeholders, operators,
/// nested paths, one condition per key, a legacy condition's arguments): the condition is
/// checked against a schema whose partition key has an empty name, which no attribute can
/// have, so a condition that passes every such rule is refused for missing that key, and
/// that refusal is the one expected.
fn check_key_condition_alone(
    context: &mut Context<'_>,
    request: &QueryRequest,
    key_conditions: Option<&std::collections::BTreeMap<String, legacy::LegacyCondition>>,
) -> Result<(), ApiError> {
    let nameless = KeySchemaView::new(
        shoal_expr::KeyAttribute {
            name: String::new(),
            scalar_type: shoal_model::ScalarType::S,
        },
        None,
    );
    let checked = match (&request.key_condition_expression, key_conditions) {
        (Some(text), _) => context.parse_key_condition(text, &nameless),
        (None, Some(conditions)) => legacy::key_conditions(conditions, &nameless),
        (None, None) => return Err(ApiError::validation(NO_KEY_CONDITION)),
    };
    match checked {
        Err(error) if error.message == MISSED_NAMELESS_KEY => Ok(()),
        Err(error) => Err(error),
        // Unreachable (every condition misses the nameless key); nothing more to check.
        Ok(_) => Ok(()),
    }
}

/// The refusal of a key condition that passed every rule but the nameless partition key.
const MISSED_NAMELESS_KEY: &str = "Query condition missed key schema element: ";

/// The expression crate's view of a key schema.
fn schema_view(schema: &KeySchema) -> KeySchemaView {
    let view = |attribute: &crate::core::catalog::KeyAttribute| shoal_expr::KeyAttribute {
        name: attribute.name.clone(),
        scalar_type: attribute.scalar_type(),
    };
    KeySchemaView {
        hash_key: view(&schema.hash),
        range_key: schema.range.as_ref().map(view),
        more_hash_keys: schema.more_hash.iter().map(view).collect(),
        more_range_keys: schema.more_range.iter().map(view).collect(),
    }
}

/// A Query filter may not read the key attributes of the schema being queried.
fn check_filter_avoids_keys(
    filter: &Condition,
    schema: &KeySchema,
    parameter: &str,
) -> Result<(), ApiError> {
    let referenced = filter.referenced_top_level_attributes();
    match schema.names().find(|name| referenced.contains(name)) {
        Some(key) => Err(ApiError::validation(format!(
            "{parameter} can only contain non-primary key attributes: Primary key attribute: {key}"
        ))),
        None => Ok(()),
    }
}

/// The key range holding exactly the entries the key condition selects.
fn query_range(
    table: &TableDef,
    target: ReadTarget<'_>,
    condition: &KeyCondition,
) -> Result<KeyRange, ApiError> {
    let mut prefix = keys::partition_prefix_of(&condition.hash_values()).map_err(internal)?;
    match target {
        ReadTarget::Table => prefix.push(keys::SECTION_BASE),
        ReadTarget::Local(lsi) => prefix.push(lsi.section),
        ReadTarget::Global(_) => {
            // Equalities on R1..Rk-1 of a multi-attribute key narrow the prefix; the
            // condition on Rk ranges after it (`keys` module docs).
            for value in &condition.range_equalities {
                keys::encode_value(value, &mut prefix).map_err(internal)?;
            }
        }
    }
    debug_assert!(table.key.range.is_some() || !matches!(target, ReadTarget::Local(_)));
    keys::sort_range(&prefix, condition.sort.as_ref()).map_err(internal)
}

/// Whether a query of `target` reads at most one item: a hash-only table holds one item per
/// partition, so such a query has nothing to resume.
fn reads_one_item(table: &TableDef, target: ReadTarget<'_>) -> bool {
    matches!(target, ReadTarget::Table) && table.key.range.is_none()
}

/// Checks an ExclusiveStartKey against the query (SPEC §4.2): its shape, its partition and
/// its sort key against the key condition.
fn check_query_start_key(
    table: &TableDef,
    target: ReadTarget<'_>,
    condition: &KeyCondition,
    start_key: &shoal_model::Item,
) -> Result<(), ApiError> {
    target.check_start_key(table, start_key, INVALID_START_KEY)?;
    let schema = target.key_schema(table);
    if reads_one_item(table, target) {
        return Err(ApiError::validation(CANNOT_BE_RESTARTED));
    }
    // The RANGE attributes the condition names: equalities on the first ones (a
    // multi-attribute key's prefix), then the sort condition.
    let mut ranges = schema.range_attributes();
    let equalities_match = condition
        .range_equalities
        .iter()
        .zip(ranges.by_ref())
        .all(|(value, range)| start_key.get(&range.name) == Some(value));
    let sort_matches = equalities_match
        && match (&condition.sort, ranges.next()) {
            (Some(sort), Some(range)) => {
                start_key.get(&range.name).is_some_and(|v| sort.matches(v))
            }
            _ => true,
        };
    let hash_matches = schema
        .hash_attributes()
        .zip(condition.hash_values())
        .all(|(hash, value)| start_key.get(&hash.name) == Some(value));
    if !hash_matches {
        // A GSI entry whose sort part still fits names no row of this query at all.
        return Err(ApiError::validation(
            if matches!(target, ReadTarget::Global(_)) && sort_matches {
                CANNOT_BE_RESTARTED
            } else {
                "The provided starting key is outside query boundaries based on provided conditions"
            },
        ));
    }
    if !sort_matches {
        return Err(ApiError::validation(
            "The provided starting key does not match the range key predicate",
        ));
    }
    Ok(())
}

/// Narrows `range` to the entries after `start` in the walk's direction. `start` lies in the
/// range (its key was checked against the key condition), so it is the tighter bound.
fn resume_after(range: KeyRange, start: Vec<u8>, forward: bool) -> KeyRange {
    if forward {
        KeyRange {
            lower: Bound::Excluded(start),
            upper: range.upper,
        }
    } else {
        KeyRange {
            lower: range.lower,
            upper: Bound::Excluded(start),
        }
    }
}
