//! ExecuteStatement, BatchExecuteStatement and ExecuteTransaction (SPEC-2 §3): each statement
//! is parsed (`shoal_expr::partiql`), compiled onto an item operation
//! (`partiql/compile.rs`) and run by that operation, under the same capacity emulation
//! (`capacity/throttled.rs`), so every rule, index, capacity figure, throttle and stream record
//! is the operation's own.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use shoal_expr::partiql::{parse_with_parameter_count, Statement};
use shoal_expr::{ConditionKind, Context};
use shoal_model::{item_from_json, item_to_json, ApiError, AttributeValue, ErrorCode, Item};

use crate::api::common::{ConsumedCapacity, ReturnConsumedCapacity};
use crate::api::constraint::{length_at_least, value_at_least, violation, Violations};
use crate::api::items::{GetItemInput, PutItemInput};
use crate::api::partiql::{
    check_parameters, check_return_on_failure, check_statement, BatchExecuteStatementInput,
    BatchExecuteStatementOutput, BatchStatementError, BatchStatementResponse,
    ExecuteStatementInput, ExecuteStatementOutput, ExecuteTransactionInput,
    ExecuteTransactionOutput, ItemResponse, BATCH_STATEMENTS_MAX, NEXT_TOKEN_LENGTH_MAX,
    TRANSACT_STATEMENTS_MAX,
};
use crate::api::transact::{
    ConditionCheck, Get, TransactDelete, TransactGetItem, TransactGetItemsInput, TransactPut,
    TransactUpdate, TransactWriteItem, TransactWriteItemsInput,
};
use crate::capacity::metering::Metered;
use crate::core::catalog::TableDef;
use crate::database::Database;
use crate::partiql::compile::{
    compile_delete, compile_exists, compile_insert, compile_select, compile_update,
    key_and_condition, project, refuse_unreadable_select, CompiledSelect, SelectPlan,
    PARAMETER_COUNT_MESSAGE,
};

/// `Duplicate primary key exists in table`: an INSERT of a key that exists.
pub const DUPLICATE_ITEM_MESSAGE: &str = "Duplicate primary key exists in table";
const BATCH_SELECT_KEY_MESSAGE: &str =
    "Select statements within BatchExecuteStatement must specify the primary key in the where clause.";
const TRANSACTION_SELECT_KEY_MESSAGE: &str =
    "Select statements within ExecuteTransaction must specify the primary key in the where clause.";
const MIXED_BATCH_MESSAGE: &str =
    "Unsupported operation: a batch must be all reads (SELECT) or all writes (INSERT, UPDATE, DELETE)";
const MIXED_TRANSACTION_MESSAGE: &str =
    "Unsupported operation: a transaction must be all reads (SELECT) or all writes (INSERT, UPDATE, DELETE, EXISTS)";

/// Most statements [`StatementCache`] keeps.
pub const STATEMENT_CACHE_ENTRIES_MAX: usize = 1024;
/// Longest statement [`StatementCache`] keeps, in bytes (longer ones are parsed each time).
const STATEMENT_CACHE_TEXT_BYTES_MAX: usize = 1024;

/// Statements parsed lately, by text, with their parameter counts. Applications send the
/// same few statements again and again, with `?` parameters, and parsing is most of what
/// PartiQL adds to the operation a statement compiles to; what is parsed does not depend on
/// any table, so an entry never goes stale. When full it is emptied (no bookkeeping on the
/// read path): the statements in use come back at once.
#[derive(Default)]
pub(crate) struct StatementCache {
    entries: RwLock<HashMap<String, Arc<(Statement, usize)>>>,
}

impl StatementCache {
    fn parse(&self, text: &str) -> Result<Arc<(Statement, usize)>, ApiError> {
        if let Some(parsed) = self.entries.read().get(text) {
            return Ok(Arc::clone(parsed));
        }
        let parsed = Arc::new(parse_with_parameter_count(text)?);
        if text.len() <= STATEMENT_CACHE_TEXT_BYTES_MAX {
            let mut entries = self.entries.write();
            if entries.len() >= STATEMENT_CACHE_ENTRIES_MAX {
                entries.clear();
            }
            entries.insert(text.to_string(), Arc::clone(&parsed));
        }
        Ok(parsed)
    }
}

/// A statement parsed with its parameters bound-checked.
struct Parsed {
    parsed: Arc<(Statement, usize)>,
    parameters: Vec<AttributeValue>,
}

impl Parsed {
    fn statement(&self) -> &Statement {
        &self.parsed.0
    }
}

impl Database {
    fn parse_statement(
        &self,
        text: &str,
        parameters: Option<Vec<AttributeValue>>,
    ) -> Result<Parsed, ApiError> {
        let parsed = self.statements.parse(text)?;
        let parameters = parameters.unwrap_or_default();
        if parsed.1 != parameters.len() {
            return Err(ApiError::validation(PARAMETER_COUNT_MESSAGE));
        }
        Ok(Parsed { parsed, parameters })
    }
}

fn is_read(statement: &Statement) -> bool {
    matches!(statement, Statement::Select(_))
}

fn table_of(statement: &Statement) -> &str {
    match statement {
        Statement::Select(s) | Statement::Exists(s) => &s.target.table,
        Statement::Insert(i) => &i.table,
        Statement::Update(u) => &u.table,
        Statement::Delete(d) => &d.table,
    }
}

/// Adds one operation's capacity to a per-table list.
fn absorb(list: &mut Vec<ConsumedCapacity>, entry: ConsumedCapacity) {
    match list.iter_mut().find(|c| c.table_name == entry.table_name) {
        Some(total) => {
            total.capacity_units += entry.capacity_units;
            let add = |a: &mut Option<f64>, b: Option<f64>| {
                if let Some(b) = b {
                    *a = Some(a.unwrap_or(0.0) + b);
                }
            };
            add(&mut total.read_capacity_units, entry.read_capacity_units);
            add(&mut total.write_capacity_units, entry.write_capacity_units);
            if let Some(table) = entry.table {
                let slot = total.table.get_or_insert_with(Default::default);
                slot.capacity_units += table.capacity_units;
                add(&mut slot.read_capacity_units, table.read_capacity_units);
                add(&mut slot.write_capacity_units, table.write_capacity_units);
            }
            for (mine, theirs) in [
                (
                    &mut total.local_secondary_indexes,
                    entry.local_secondary_indexes,
                ),
                (
                    &mut total.global_secondary_indexes,
                    entry.global_secondary_indexes,
                ),
            ] {
                for (name, capacity) in theirs.into_iter().flatten() {
                    let slot = mine
                        .get_or_insert_with(Default::default)
                        .entry(name)
                        .or_default();
                    slot.capacity_units += capacity.capacity_units;
                    add(&mut slot.read_capacity_units, capacity.read_capacity_units);
                    add(
                        &mut slot.write_capacity_units,
                        capacity.write_capacity_units,
                    );
                }
            }
        }
        None => list.push(entry),
    }
}

/// Where a paged SELECT goes on: the index of its next Query (0 for a Scan) and the key to
/// start after. Carried as `NextToken`: hex of `{"s": <statement hash>, "u": n, "k": key}`.
struct Resume {
    unit: usize,
    start_key: Option<Item>,
}

fn statement_hash(text: &str) -> u64 {
    // FNV-1a: a token names the statement it belongs to, so it cannot resume another one.
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn encode_token(text: &str, resume: &Resume) -> String {
    let body = json!({
        "s": statement_hash(text).to_string(),
        "u": resume.unit,
        "k": resume.start_key.as_ref().map(item_to_json),
    });
    body.to_string()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode_token(text: &str, token: &str) -> Result<Resume, ApiError> {
    let invalid =
        || ApiError::validation("Invalid NextToken: it was not returned for this statement");
    if !token.len().is_multiple_of(2) || !token.is_ascii() {
        return Err(invalid());
    }
    let bytes: Vec<u8> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&token[i..i + 2], 16))
        .collect::<Result<_, _>>()
        .map_err(|_| invalid())?;
    let body: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if body["s"].as_str() != Some(statement_hash(text).to_string().as_str()) {
        return Err(invalid());
    }
    let unit = body["u"]
        .as_u64()
        .and_then(|u| usize::try_from(u).ok())
        .ok_or_else(invalid)?;
    let start_key = match &body["k"] {
        Value::Null => None,
        key => Some(item_from_json(key).map_err(|_| invalid())?),
    };
    Ok(Resume { unit, start_key })
}

/// `ConditionalCheckFailed` of an INSERT's put: the key exists.
fn duplicate_item() -> ApiError {
    ApiError::new(ErrorCode::DuplicateItemException, DUPLICATE_ITEM_MESSAGE)
}

/// `BatchStatementError.Code` for an error (SPEC-2 §3.1's enum).
fn batch_error_code(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::ConditionalCheckFailedException => "ConditionalCheckFailed",
        ErrorCode::ItemCollectionSizeLimitExceededException => "ItemCollectionSizeLimitExceeded",
        ErrorCode::RequestLimitExceeded => "RequestLimitExceeded",
        ErrorCode::ProvisionedThroughputExceededException => "ProvisionedThroughputExceeded",
        ErrorCode::TransactionConflictException => "TransactionConflict",
        ErrorCode::ThrottlingException => "ThrottlingError",
        ErrorCode::InternalServerError => "InternalServerError",
        ErrorCode::ResourceNotFoundException => "ResourceNotFound",
        ErrorCode::AccessDeniedException => "AccessDenied",
        ErrorCode::DuplicateItemException => "DuplicateItem",
        _ => "ValidationError",
    }
}

impl Database {
    /// The table a statement names; a missing one is the data plane's
    /// `Requested resource not found`.
    fn statement_table(&self, name: &str) -> Result<std::sync::Arc<TableDef>, ApiError> {
        self.table(name).map_err(|_| {
            ApiError::new(
                ErrorCode::ResourceNotFoundException,
                "Requested resource not found",
            )
        })
    }

    /// ExecuteStatement: one PartiQL statement (SPEC-2 §3).
    ///
    /// ```
    /// use serde_json::json;
    /// use shoal_tables::api::partiql::ExecuteStatementInput;
    /// use shoal_tables::{Database, Options};
    /// use shoal_model::AttributeValue;
    ///
    /// let db = Database::open_in_memory(Options::default())?;
    /// db.execute("CreateTable", json!({
    ///     "TableName": "Music",
    ///     "AttributeDefinitions": [{"AttributeName": "Artist", "AttributeType": "S"}],
    ///     "KeySchema": [{"AttributeName": "Artist", "KeyType": "HASH"}],
    ///     "BillingMode": "PAY_PER_REQUEST"
    /// }))?;
    /// let run = |statement: &str, parameters: Option<Vec<AttributeValue>>| {
    ///     db.execute_statement(ExecuteStatementInput {
    ///         statement: Some(statement.to_string()),
    ///         parameters,
    ///         ..ExecuteStatementInput::default()
    ///     })
    /// };
    /// run("INSERT INTO Music VALUE {'Artist': 'Ada', 'Plays': 1}", None)?;
    /// let found = run("SELECT Plays FROM Music WHERE Artist = ?", Some(vec![AttributeValue::S("Ada".into())]))?;
    /// assert_eq!(found.items.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute_statement(
        &self,
        input: ExecuteStatementInput,
    ) -> Result<ExecuteStatementOutput, ApiError> {
        let mut violations = Violations::default();
        let text = check_statement(input.statement.as_deref(), "statement", &mut violations);
        check_parameters(input.parameters.as_deref(), "parameters", &mut violations);
        if let Some(limit) = input.limit.filter(|l| *l < 1) {
            violations.push(violation(
                Some(&limit.to_string()),
                "limit",
                &value_at_least(1),
            ));
        }
        if let Some(token) = &input.next_token {
            if token.is_empty() {
                violations.push(violation(Some(token), "nextToken", &length_at_least(1)));
            } else if token.len() > NEXT_TOKEN_LENGTH_MAX {
                violations.push(violation(
                    Some(token),
                    "nextToken",
                    &crate::api::constraint::length_at_most(NEXT_TOKEN_LENGTH_MAX),
                ));
            }
        }
        let on_failure = input.return_values_on_condition_check_failure.clone();
        check_return_on_failure(
            on_failure.as_deref(),
            "returnValuesOnConditionCheckFailure",
            &mut violations,
        );
        violations.finish()?;
        let capacity = ReturnConsumedCapacity::parse(input.return_consumed_capacity.as_deref())?;
        let text = text.unwrap_or_default();
        let parsed = self.parse_statement(text, input.parameters)?;
        let table = self.statement_table(table_of(parsed.statement()))?;
        let parameters = &parsed.parameters;
        let capacity_name = input.return_consumed_capacity.clone();
        let mut output = ExecuteStatementOutput::default();
        match parsed.statement() {
            Statement::Select(select) => {
                output.metered = Some(Metered::Read);
                let compiled = compile_select(select, &table, parameters, input.consistent_read)?;
                let resume = input
                    .next_token
                    .as_deref()
                    .map(|token| decode_token(text, token))
                    .transpose()?;
                let limit = input
                    .limit
                    .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
                self.run_select(text, compiled, capacity_name, limit, resume, &mut output)?;
            }
            Statement::Insert(insert) => {
                output.metered = Some(Metered::Write);
                let mut put = compile_insert(insert, &table, parameters)?;
                put.return_consumed_capacity = capacity_name;
                let result = self.insert_item(put)?;
                output.consumed_capacity = result;
            }
            Statement::Update(update) => {
                output.metered = Some(Metered::Write);
                let mut request = compile_update(update, &table, parameters)?;
                request.return_consumed_capacity = capacity_name;
                request.return_values_on_condition_check_failure = on_failure;
                let result = self.throttled(request, |input| self.update_item(input))?;
                output.items.extend(result.attributes);
                output.consumed_capacity = result.consumed_capacity;
            }
            Statement::Delete(delete) => {
                output.metered = Some(Metered::Write);
                let mut request = compile_delete(delete, &table, parameters)?;
                request.return_consumed_capacity = capacity_name;
                request.return_values_on_condition_check_failure = on_failure;
                let result = self.throttled(request, |input| self.delete_item(input))?;
                output.items.extend(result.attributes);
                output.consumed_capacity = result.consumed_capacity;
            }
            Statement::Exists(_) => {
                return Err(ApiError::validation(
                    "Unsupported operation: EXISTS is only supported in ExecuteTransaction",
                ))
            }
        }
        if capacity == ReturnConsumedCapacity::None {
            output.consumed_capacity = None;
        }
        Ok(output)
    }

    /// An INSERT's PutItem; its failed condition is a duplicate key.
    fn insert_item(&self, put: PutItemInput) -> Result<Option<ConsumedCapacity>, ApiError> {
        match self.throttled(put, |input| self.put_item(input)) {
            Ok(result) => Ok(result.consumed_capacity),
            Err(error) if error.code == ErrorCode::ConditionalCheckFailedException => {
                Err(duplicate_item())
            }
            Err(error) => Err(error),
        }
    }

    /// Runs a compiled SELECT from `resume`, one page: at most `limit` items evaluated.
    fn run_select(
        &self,
        text: &str,
        compiled: CompiledSelect,
        capacity: Option<String>,
        limit: Option<usize>,
        resume: Option<Resume>,
        output: &mut ExecuteStatementOutput,
    ) -> Result<(), ApiError> {
        let projection = compiled.projection.as_deref();
        let mut consumed = Vec::new();
        match compiled.plan {
            SelectPlan::Get(mut get) => {
                get.return_consumed_capacity = capacity;
                let result = self.throttled(get, |input| self.get_item(input))?;
                output
                    .items
                    .extend(result.item.map(|item| project(item, projection)));
                consumed.extend(result.consumed_capacity);
            }
            SelectPlan::Scan(mut scan) => {
                scan.return_consumed_capacity = capacity;
                scan.limit = limit.map(|l| l as i64);
                scan.exclusive_start_key = resume.and_then(|r| r.start_key);
                let page = self.throttled(*scan, |input| self.scan(input))?;
                output.items.extend(
                    page.items
                        .into_iter()
                        .flatten()
                        .map(|item| project(item, projection)),
                );
                consumed.extend(page.consumed_capacity);
                if let Some(key) = page.last_evaluated_key {
                    output.next_token = Some(encode_token(
                        text,
                        &Resume {
                            unit: 0,
                            start_key: Some(key.clone()),
                        },
                    ));
                    output.last_evaluated_key = Some(key);
                }
            }
            SelectPlan::Queries(queries) => {
                let (first, mut start_key) = match resume {
                    Some(resume) => (resume.unit, resume.start_key),
                    None => (0, None),
                };
                let mut remaining = limit;
                let count = queries.len();
                for (unit, query_unit) in queries.into_iter().enumerate().skip(first) {
                    let mut query = query_unit.request;
                    if remaining == Some(0) {
                        output.next_token = Some(encode_token(
                            text,
                            &Resume {
                                unit,
                                start_key: None,
                            },
                        ));
                        break;
                    }
                    query.return_consumed_capacity = capacity.clone();
                    query.limit = remaining.map(|l| l as i64);
                    query.exclusive_start_key = start_key.take();
                    let page = self.throttled(query, |input| self.query(input))?;
                    if let Some(remaining) = remaining.as_mut() {
                        *remaining = remaining.saturating_sub(page.scanned_count as usize);
                    }
                    let filter = query_unit
                        .post_filter
                        .map(|filter| {
                            let mut context =
                                Context::new(filter.names.as_ref(), filter.values.as_ref())?;
                            context.parse_condition(&filter.text, ConditionKind::Filter)
                        })
                        .transpose()?;
                    output.items.extend(
                        page.items
                            .into_iter()
                            .flatten()
                            .filter(|item| filter.as_ref().is_none_or(|f| f.evaluate(item)))
                            .map(|item| project(item, projection)),
                    );
                    consumed.extend(page.consumed_capacity);
                    if let Some(key) = page.last_evaluated_key {
                        output.next_token = Some(encode_token(
                            text,
                            &Resume {
                                unit,
                                start_key: Some(key.clone()),
                            },
                        ));
                        output.last_evaluated_key = Some(key);
                        break;
                    }
                    debug_assert!(unit < count);
                }
            }
        }
        let mut merged = Vec::new();
        for entry in consumed {
            absorb(&mut merged, entry);
        }
        output.consumed_capacity = merged.into_iter().next();
        Ok(())
    }

    /// BatchExecuteStatement: up to 25 statements, all reads or all writes, each answered in
    /// its own slot (SPEC-2 §3.1).
    pub fn batch_execute_statement(
        &self,
        input: BatchExecuteStatementInput,
    ) -> Result<BatchExecuteStatementOutput, ApiError> {
        let statements = input.statements.unwrap_or_default();
        check_statement_list(
            "statements",
            BATCH_STATEMENTS_MAX,
            statements.iter().map(|s| {
                (
                    s.statement.as_deref(),
                    s.parameters.as_deref(),
                    s.return_values_on_condition_check_failure.as_deref(),
                )
            }),
        )?;
        let capacity = ReturnConsumedCapacity::parse(input.return_consumed_capacity.as_deref())?;
        let parsed: Vec<Result<Parsed, ApiError>> = statements
            .iter()
            .map(|s| {
                self.parse_statement(
                    s.statement.as_deref().unwrap_or_default(),
                    s.parameters.clone(),
                )
            })
            .collect();
        let reads = parsed
            .iter()
            .flatten()
            .filter(|p| is_read(p.statement()))
            .count();
        let writes = parsed.iter().flatten().count() - reads;
        if reads > 0 && writes > 0 {
            return Err(ApiError::validation(MIXED_BATCH_MESSAGE));
        }
        let capacity_name = input.return_consumed_capacity.clone();
        let mut output = BatchExecuteStatementOutput {
            metered: Some(if writes > 0 {
                Metered::Write
            } else {
                Metered::Read
            }),
            ..BatchExecuteStatementOutput::default()
        };
        let mut consumed = Vec::new();
        for (parsed, request) in parsed.into_iter().zip(&statements) {
            let slot = parsed.and_then(|parsed| {
                self.batch_slot(
                    parsed,
                    request.consistent_read,
                    request.return_values_on_condition_check_failure.clone(),
                    capacity_name.clone(),
                    &mut consumed,
                )
            });
            output.responses.push(match slot {
                Ok(response) => response,
                Err(error) => BatchStatementResponse {
                    error: Some(BatchStatementError {
                        code: batch_error_code(error.code).to_string(),
                        item: error
                            .extra
                            .as_ref()
                            .and_then(|extra| extra.get("Item"))
                            .and_then(|item| item_from_json(item).ok()),
                        message: error.message,
                    }),
                    ..BatchStatementResponse::default()
                },
            });
        }
        if capacity != ReturnConsumedCapacity::None {
            let mut merged = Vec::new();
            for entry in consumed {
                absorb(&mut merged, entry);
            }
            output.consumed_capacity = Some(merged);
        }
        Ok(output)
    }

    /// One slot of a batch: a whole-key SELECT (a GetItem) or one write.
    fn batch_slot(
        &self,
        parsed: Parsed,
        consistent_read: Option<bool>,
        on_failure: Option<String>,
        capacity: Option<String>,
        consumed: &mut Vec<ConsumedCapacity>,
    ) -> Result<BatchStatementResponse, ApiError> {
        let table = self.statement_table(table_of(parsed.statement()))?;
        let parameters = &parsed.parameters;
        let mut response = BatchStatementResponse {
            table_name: Some(table.name.clone()),
            ..BatchStatementResponse::default()
        };
        match parsed.statement() {
            Statement::Select(select) => {
                let mut get = whole_key_get(select, &table, parameters, BATCH_SELECT_KEY_MESSAGE)?;
                get.consistent_read = consistent_read;
                get.return_consumed_capacity = capacity;
                let projection = select.projection.as_deref();
                let result = self.throttled(get, |input| self.get_item(input))?;
                response.item = result.item.map(|item| project(item, projection));
                consumed.extend(result.consumed_capacity);
            }
            Statement::Insert(insert) => {
                let mut put = compile_insert(insert, &table, parameters)?;
                put.return_consumed_capacity = capacity;
                consumed.extend(self.insert_item(put)?);
            }
            Statement::Update(update) => {
                let mut request = compile_update(update, &table, parameters)?;
                request.return_consumed_capacity = capacity;
                request.return_values_on_condition_check_failure = on_failure;
                let result = self.throttled(request, |input| self.update_item(input))?;
                response.item = result.attributes;
                consumed.extend(result.consumed_capacity);
            }
            Statement::Delete(delete) => {
                let mut request = compile_delete(delete, &table, parameters)?;
                request.return_consumed_capacity = capacity;
                request.return_values_on_condition_check_failure = on_failure;
                let result = self.throttled(request, |input| self.delete_item(input))?;
                response.item = result.attributes;
                consumed.extend(result.consumed_capacity);
            }
            Statement::Exists(_) => {
                return Err(ApiError::validation(
                    "Unsupported operation: EXISTS is only supported in ExecuteTransaction",
                ))
            }
        }
        Ok(response)
    }

    /// ExecuteTransaction: up to 100 statements, all reads (a TransactGetItems) or all
    /// writes (a TransactWriteItems), SPEC-2 §3.2.
    pub fn execute_transaction(
        &self,
        input: ExecuteTransactionInput,
    ) -> Result<ExecuteTransactionOutput, ApiError> {
        let statements = input.transact_statements.unwrap_or_default();
        check_statement_list(
            "transactStatements",
            TRANSACT_STATEMENTS_MAX,
            statements.iter().map(|s| {
                (
                    s.statement.as_deref(),
                    s.parameters.as_deref(),
                    s.return_values_on_condition_check_failure.as_deref(),
                )
            }),
        )?;
        let in_statement = |i: usize, error: ApiError| {
            if error.code == ErrorCode::ValidationException {
                ApiError::validation(format!(
                    "Validation failed in TransactStatements[{i}]: {}",
                    error.message
                ))
            } else {
                error
            }
        };
        let mut parsed = Vec::with_capacity(statements.len());
        for (i, statement) in statements.iter().enumerate() {
            let text = statement.statement.as_deref().unwrap_or_default();
            parsed.push(
                self.parse_statement(text, statement.parameters.clone())
                    .map_err(|e| in_statement(i, e))?,
            );
        }
        let reads = parsed.iter().filter(|p| is_read(p.statement())).count();
        if reads > 0 && reads < parsed.len() {
            return Err(ApiError::validation(MIXED_TRANSACTION_MESSAGE));
        }
        let mut tables = Vec::with_capacity(parsed.len());
        for p in &parsed {
            tables.push(self.statement_table(table_of(p.statement()))?);
        }
        if reads > 0 {
            let mut gets = Vec::with_capacity(parsed.len());
            for (i, (p, table)) in parsed.iter().zip(&tables).enumerate() {
                let Statement::Select(select) = p.statement() else {
                    continue;
                };
                let get =
                    whole_key_get(select, table, &p.parameters, TRANSACTION_SELECT_KEY_MESSAGE)
                        .map_err(|e| in_statement(i, e))?;
                gets.push(TransactGetItem {
                    get: Some(Get {
                        table_name: get.table_name,
                        key: get.key,
                        projection_expression: get.projection_expression,
                        expression_attribute_names: get.expression_attribute_names,
                    }),
                });
            }
            let result = self.throttled_transact_get_items(TransactGetItemsInput {
                transact_items: Some(gets),
                return_consumed_capacity: input.return_consumed_capacity,
            })?;
            let responses = result
                .responses
                .into_iter()
                .zip(&parsed)
                .map(|(response, p)| {
                    let projection = match p.statement() {
                        Statement::Select(select) => select.projection.as_deref(),
                        _ => None,
                    };
                    ItemResponse {
                        item: response.item.map(|item| project(item, projection)),
                    }
                })
                .collect();
            return Ok(ExecuteTransactionOutput {
                responses,
                consumed_capacity: result.consumed_capacity,
                metered: Some(Metered::Read),
            });
        }
        let mut actions = Vec::with_capacity(parsed.len());
        for (i, ((p, table), request)) in parsed.iter().zip(&tables).zip(&statements).enumerate() {
            let on_failure = request.return_values_on_condition_check_failure.clone();
            let action = transact_action(p, table, on_failure).map_err(|e| in_statement(i, e))?;
            actions.push(action);
        }
        let inserts: Vec<bool> = parsed
            .iter()
            .map(|p| matches!(p.statement(), Statement::Insert(_)))
            .collect();
        let result = self
            .throttled_transact_write_items(TransactWriteItemsInput {
                transact_items: Some(actions),
                return_consumed_capacity: input.return_consumed_capacity,
                return_item_collection_metrics: None,
                client_request_token: input.client_request_token,
            })
            .map_err(|error| duplicates_in_reasons(error, &inserts))?;
        Ok(ExecuteTransactionOutput {
            responses: Vec::new(),
            consumed_capacity: result.consumed_capacity,
            metered: Some(Metered::Write),
        })
    }
}

/// The member constraints of a statement list (`statements` of a batch, `transactStatements`
/// of a transaction): 1..=`max` entries, each with a valid statement, parameters and
/// ReturnValuesOnConditionCheckFailure.
fn check_statement_list<'a>(
    list: &str,
    max: usize,
    statements: impl ExactSizeIterator<
        Item = (
            Option<&'a str>,
            Option<&'a [AttributeValue]>,
            Option<&'a str>,
        ),
    >,
) -> Result<(), ApiError> {
    let mut violations = Violations::default();
    if statements.len() == 0 {
        violations.push(violation(Some("[]"), list, &length_at_least(1)));
    }
    if statements.len() > max {
        violations.push(crate::api::constraint::violation_without_value(
            list,
            &crate::api::constraint::length_at_most(max),
        ));
    }
    for (i, (statement, parameters, on_failure)) in statements.enumerate() {
        let member = format!("{list}.{}.member", i + 1);
        check_statement(statement, &format!("{member}.statement"), &mut violations);
        check_parameters(parameters, &format!("{member}.parameters"), &mut violations);
        check_return_on_failure(
            on_failure,
            &format!("{member}.returnValuesOnConditionCheckFailure"),
            &mut violations,
        );
    }
    violations.finish()
}

/// A SELECT that must read one whole key of the table (batches and transactions): its
/// GetItem, or `refusal`.
fn whole_key_get(
    select: &shoal_expr::partiql::Select,
    table: &TableDef,
    parameters: &[AttributeValue],
    refusal: &str,
) -> Result<GetItemInput, ApiError> {
    let refused = || ApiError::validation(refusal);
    refuse_unreadable_select(select, table)?;
    if select.target.index.is_some() {
        return Err(refused());
    }
    let (_, rest) =
        key_and_condition(select.condition.as_ref(), table, parameters).map_err(|_| refused())?;
    if !rest.is_empty() {
        return Err(refused());
    }
    match compile_select(select, table, parameters, None)?.plan {
        SelectPlan::Get(get) => Ok(get),
        _ => Err(refused()),
    }
}

/// One write statement as a TransactWriteItems action.
fn transact_action(
    parsed: &Parsed,
    table: &TableDef,
    on_failure: Option<String>,
) -> Result<TransactWriteItem, ApiError> {
    let parameters = &parsed.parameters;
    let returning = match parsed.statement() {
        Statement::Update(update) => update.returning.is_some(),
        Statement::Delete(delete) => delete.returning.is_some(),
        _ => false,
    };
    if returning {
        return Err(ApiError::validation(
            "Unsupported operation: RETURNING is not supported in a transaction",
        ));
    }
    let mut action = TransactWriteItem::default();
    match parsed.statement() {
        Statement::Insert(insert) => {
            let put = compile_insert(insert, table, parameters)?;
            action.put = Some(TransactPut {
                table_name: put.table_name,
                item: put.item,
                condition_expression: put.condition_expression,
                expression_attribute_names: put.expression_attribute_names,
                expression_attribute_values: put.expression_attribute_values,
                return_values_on_condition_check_failure: on_failure,
            });
        }
        Statement::Update(update) => {
            let request = compile_update(update, table, parameters)?;
            action.update = Some(TransactUpdate {
                table_name: request.table_name,
                key: request.key,
                update_expression: request.update_expression,
                condition_expression: request.condition_expression,
                expression_attribute_names: request.expression_attribute_names,
                expression_attribute_values: request.expression_attribute_values,
                return_values_on_condition_check_failure: on_failure,
            });
        }
        Statement::Delete(delete) => {
            let request = compile_delete(delete, table, parameters)?;
            action.delete = Some(TransactDelete {
                table_name: request.table_name,
                key: request.key,
                condition_expression: request.condition_expression,
                expression_attribute_names: request.expression_attribute_names,
                expression_attribute_values: request.expression_attribute_values,
                return_values_on_condition_check_failure: on_failure,
            });
        }
        Statement::Exists(select) => {
            let (key, condition, names, values) = compile_exists(select, table, parameters)?;
            action.condition_check = Some(ConditionCheck {
                table_name: Some(table.name.clone()),
                key: Some(key),
                condition_expression: Some(condition),
                expression_attribute_names: names,
                expression_attribute_values: values,
                return_values_on_condition_check_failure: on_failure,
            });
        }
        Statement::Select(_) => return Err(ApiError::validation(MIXED_TRANSACTION_MESSAGE)),
    }
    Ok(action)
}

/// A cancelled transaction whose INSERTs failed their key condition: those reasons are
/// `DuplicateItem` (SPEC-2 §3.2).
fn duplicates_in_reasons(error: ApiError, inserts: &[bool]) -> ApiError {
    if error.code != ErrorCode::TransactionCanceledException {
        return error;
    }
    let Some(Value::Array(reasons)) = error
        .extra
        .as_ref()
        .and_then(|extra| extra.get("CancellationReasons"))
        .cloned()
    else {
        return error;
    };
    let reasons: Vec<Value> = reasons
        .into_iter()
        .zip(inserts)
        .map(|(reason, insert)| {
            if *insert && reason["Code"] == "ConditionalCheckFailed" {
                json!({"Code": "DuplicateItem", "Message": DUPLICATE_ITEM_MESSAGE})
            } else {
                reason
            }
        })
        .collect();
    ApiError::transaction_canceled(reasons)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statement_cache_reuses_parses_and_stays_bounded() {
        let cache = StatementCache::default();
        let text = "SELECT * FROM Music WHERE Artist = ?";
        let first = cache.parse(text).unwrap();
        let again = cache.parse(text).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(first.1, 1);
        for n in 0..STATEMENT_CACHE_ENTRIES_MAX + 10 {
            cache
                .parse(&format!("SELECT * FROM Music WHERE Artist = '{n}'"))
                .unwrap();
            assert!(cache.entries.read().len() <= STATEMENT_CACHE_ENTRIES_MAX);
        }
        // What does not parse is never kept; a long statement is parsed each time.
        assert!(cache.parse("SELECT * FROM").is_err());
        assert!(!cache.entries.read().contains_key("SELECT * FROM"));
        let long = format!("SELECT * FROM Music WHERE Artist = '{}'", "x".repeat(2000));
        cache.parse(&long).unwrap();
        assert!(!cache.entries.read().contains_key(&long));
    }
}
