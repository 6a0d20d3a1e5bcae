//! Running a model: create its tables, load its items, then run its patterns from
//! `concurrency` workers for the time or count it asks, recording what every answer says it
//! cost (`ReturnConsumedCapacity: INDEXES`, `ReturnItemCollectionMetrics: SIZE`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Deserialize;
use serde_json::{json, Value};
use shoal_expr::partiql;

use super::generate::{Draws, Generators, Template};
use super::model::{Model, Pattern, ATTEMPTS_DEFAULT};
use crate::client::retry;
use crate::client::target::{CallError, Client, Target};
use crate::transfer::batch_write::{BatchWriter, RateLimiter};
use shoal_tables::api::common::ConsumedCapacity;
use shoal_tables::api::items::UpdateItemInput;

/// Items per BatchWriteItem of the load phase: DynamoDB's maximum.
const LOAD_BATCH_ITEMS: u64 = 25;
/// Latency samples kept per pattern and worker (a run longer than this keeps the first ones).
const LATENCY_SAMPLES_MAX: usize = 4_000_000;
/// Distinct partitions tracked per worker (the busiest are found among them).
const PARTITIONS_TRACKED_MAX: usize = 1_000_000;
/// Operations on several items, whose answers give units per table, not per item.
const MULTI_ITEM_OPERATIONS: [&str; 6] = [
    "BatchWriteItem",
    "BatchGetItem",
    "TransactWriteItems",
    "TransactGetItems",
    "BatchExecuteStatement",
    "ExecuteTransaction",
];
/// Seconds of a run whose load is kept per second (longer runs keep the first ones).
const SECONDS_TRACKED_MAX: usize = 100_000;

/// Set by Ctrl-C: the run stops and still reports.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// One pattern, ready to run.
pub struct CompiledPattern {
    pub name: String,
    pub operation: String,
    template: Template,
    /// The table (or `table/gsi`) whose partitions the pattern loads, and a template of the
    /// partition key value; None when it cannot be known (Scan, batches, transactions). An
    /// LSI lives on its table's partitions, so a Query of an LSI names the table.
    partition: Option<(String, Template)>,
    pub reads: bool,
    /// A single-item write to a table with GSIs: each GSI (`table/index`) and its partition
    /// key attributes (several for a multi-attribute key), to find the GSI partitions the
    /// write's index units land on.
    gsi_keys: Vec<(String, Vec<String>)>,
    /// What the write's `Attributes` answer holds.
    returned: Returned,
    /// A batch or transaction: its items' partitions are read off each request it sends.
    multi_item: bool,
    /// Each table of the model with its partition key attribute (for batches and
    /// transactions, which name several).
    table_hash_keys: Arc<[(String, String)]>,
    /// A PutItem into a table with an LSI: its items grow a capped item collection.
    grows_collection: bool,
    weight: f64,
    rate: Option<f64>,
}

/// What a write's answer carries in `Attributes` (its `ReturnValues`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Returned {
    /// The item before the write (`ALL_OLD`; the bench asks for it when the pattern does not
    /// ask for other values: ReturnValues costs no capacity).
    Before,
    /// The item after the write (`ALL_NEW`).
    After,
    /// Nothing usable (no write, or only the updated attributes).
    Nothing,
}

/// What one pattern did, summed over its operations.
#[derive(Debug, Clone, Default)]
pub struct PatternStats {
    pub operations: u64,
    /// Attempts refused by throttling (sent again, or counted as the call's error).
    pub throttled_attempts: u64,
    /// Attempts sent again (throttled, a server error, unprocessed batch items).
    pub retries: u64,
    pub errors: BTreeMap<String, u64>,
    /// The first message seen for each error code.
    pub error_messages: BTreeMap<String, String>,
    pub latencies_us: Vec<u32>,
    pub table_read_units: f64,
    pub table_write_units: f64,
    /// Per table: (read units, write units, operations that charged it).
    pub per_table: BTreeMap<String, (f64, f64, u64)>,
    /// Capacity per `table/index`: (read units, write units, operations that wrote it).
    pub index_units: BTreeMap<String, (f64, f64, u64)>,
    pub items_returned: u64,
    pub item_bytes_returned: u64,
    /// Per second of the run: operations, summed latency (µs), worst latency (µs).
    pub per_second: Vec<(u64, u64, u32)>,
}

/// Load on one partition key: of a table (its units and its LSIs', which share the table's
/// partitions), or of a GSI (the GSI's units).
#[derive(Debug, Clone, Default)]
pub struct PartitionLoad {
    pub read_units: f64,
    pub write_units: f64,
    pub operations: u64,
    /// What each pattern (by index) put on the partition: the report scales each to its
    /// modelled rate.
    pub by_pattern: BTreeMap<usize, PatternLoad>,
    /// Read and write units per second of the run, in second order, seconds without load
    /// left out: the partition's heat over time.
    pub seconds: Vec<SecondLoad>,
    /// Bytes of the items PutItem wrote into the partition's item collection (a table with
    /// an LSI): at most what the collection grew.
    pub put_bytes: u64,
}

/// The units one partition (or one table or GSI) served in one second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SecondLoad {
    pub second: u32,
    pub read_units: f64,
    pub write_units: f64,
}

impl PartitionLoad {
    /// The busiest second's read and write units (each its own busiest second).
    pub fn peak_units(&self) -> (f64, f64) {
        self.seconds.iter().fold((0.0, 0.0), |(read, write), s| {
            (read.max(s.read_units), write.max(s.write_units))
        })
    }
}

/// One pattern's load on one partition.
#[derive(Debug, Clone, Copy, Default)]
pub struct PatternLoad {
    pub read_units: f64,
    pub write_units: f64,
    pub put_bytes: u64,
}

/// An item collection's size as the last answer reported it (`SizeEstimateRangeGB`).
#[derive(Debug, Clone)]
pub struct CollectionSeen {
    pub at: f64,
    pub range_gb: [f64; 2],
}

/// Everything a run recorded.
#[derive(Debug, Default)]
pub struct RunStats {
    pub patterns: Vec<PatternStats>,
    /// By `table/index` then partition key text.
    pub partitions: HashMap<(String, String), PartitionLoad>,
    /// By partition key text.
    pub collections: HashMap<String, CollectionSeen>,
    /// Units per second of the run drawn from each table's throughput (its LSIs' included)
    /// and each GSI's (`table/index`), whatever partition they landed on.
    pub resources: BTreeMap<String, Vec<[f64; 2]>>,
    pub elapsed: Duration,
    pub interrupted: bool,
    pub loaded_items: u64,
    /// Load batches sent again after throttling or with unprocessed items.
    pub load_retries: u64,
}

/// The answer members the report reads (everything else is skipped unparsed).
#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(rename = "ConsumedCapacity", default)]
    consumed: Option<Capacities>,
    #[serde(rename = "Items", borrow, default)]
    items: Option<Vec<&'a serde_json::value::RawValue>>,
    #[serde(rename = "Item", borrow, default)]
    item: Option<&'a serde_json::value::RawValue>,
    #[serde(rename = "Responses", default)]
    responses: Option<Value>,
    #[serde(rename = "ItemCollectionMetrics", default)]
    collections: Option<Value>,
    #[serde(rename = "Attributes", default)]
    attributes: Option<Value>,
    #[serde(rename = "UnprocessedItems", default)]
    unprocessed_items: Option<Value>,
    #[serde(rename = "UnprocessedKeys", default)]
    unprocessed_keys: Option<Value>,
}

/// `ConsumedCapacity`: one entry (single-item operations, Query, Scan) or one per table
/// (batches and transactions), in the tables layer's own type.
#[derive(Deserialize)]
#[serde(untagged)]
enum Capacities {
    One(ConsumedCapacity),
    Many(Vec<ConsumedCapacity>),
}

fn is_read(operation: &str) -> bool {
    matches!(
        operation,
        "GetItem" | "Query" | "Scan" | "BatchGetItem" | "TransactGetItems"
    )
}

/// Whether a pattern reads: its operation, or for PartiQL its statements. DynamoDB charges
/// a SELECT read units and every other statement write units, and a BatchExecuteStatement
/// or ExecuteTransaction holds only reads or only writes, so a PartiQL call reads when its
/// statements are SELECTs (the first is looked at; a mixed call is refused by DynamoDB).
fn pattern_reads(operation: &str, request: &Value) -> bool {
    let statement = match operation {
        "ExecuteStatement" => request.get("Statement"),
        "BatchExecuteStatement" => request.pointer("/Statements/0/Statement"),
        "ExecuteTransaction" => request.pointer("/TransactStatements/0/Statement"),
        _ => return is_read(operation),
    };
    statement
        .and_then(Value::as_str)
        .and_then(|text| text.split_whitespace().next())
        .is_some_and(|verb| verb.eq_ignore_ascii_case("SELECT"))
}

/// The hash key of a table (or of one of its indexes) in a model's CreateTable requests:
/// every HASH attribute in schema order (several for a GSI with a multi-attribute key).
fn hash_keys(tables: &[Value], table: &str, index: Option<&str>) -> Option<Vec<String>> {
    let create = tables.iter().find(|t| t["TableName"] == table)?;
    let schema = match index {
        None => &create["KeySchema"],
        Some(index) => {
            let all = create["GlobalSecondaryIndexes"]
                .as_array()
                .into_iter()
                .chain(create["LocalSecondaryIndexes"].as_array())
                .flatten();
            &all.into_iter().find(|i| i["IndexName"] == index)?["KeySchema"]
        }
    };
    hash_names(schema)
}

/// The HASH attribute names of a KeySchema, in order; None without any.
fn hash_names(schema: &Value) -> Option<Vec<String>> {
    let names: Vec<String> = schema
        .as_array()?
        .iter()
        .filter(|k| k["KeyType"] == "HASH")
        .filter_map(|k| k["AttributeName"].as_str().map(str::to_string))
        .collect();
    (!names.is_empty()).then_some(names)
}

/// How the report names a partition whose key has several HASH attributes: their texts
/// joined, in schema order. None when any is missing (the item is in no partition).
fn joined_partition_text(texts: impl IntoIterator<Item = Option<String>>) -> Option<String> {
    texts
        .into_iter()
        .collect::<Option<Vec<String>>>()
        .map(|texts| texts.join("|"))
}

/// Each GSI of `table` (`table/index`) with its partition key attributes.
fn global_index_keys(tables: &[Value], table: &str) -> Vec<(String, Vec<String>)> {
    tables
        .iter()
        .filter(|t| t["TableName"] == table)
        .filter_map(|t| t["GlobalSecondaryIndexes"].as_array())
        .flatten()
        .filter_map(|gsi| {
            let index = gsi["IndexName"].as_str()?;
            Some((format!("{table}/{index}"), hash_names(&gsi["KeySchema"])?))
        })
        .collect()
}

/// Whether `index` is a local secondary index of `table` in a model's CreateTable requests.
pub fn is_local_index(tables: &[Value], table: &str, index: &str) -> bool {
    tables
        .iter()
        .filter(|t| t["TableName"] == table)
        .filter_map(|t| t["LocalSecondaryIndexes"].as_array())
        .flatten()
        .any(|lsi| lsi["IndexName"] == index)
}

/// The key attribute names of a table in a model's CreateTable requests.
fn key_names(tables: &[Value], table: &str) -> Vec<String> {
    tables
        .iter()
        .find(|t| t["TableName"] == table)
        .and_then(|t| t["KeySchema"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|k| k["AttributeName"].as_str().map(str::to_string))
        .collect()
}

/// The text of the partition key value in a request: where Key/Item name the hash key, or
/// the value a Query's key condition sets it equal to.
fn partition_text(pattern: &Pattern, tables: &[Value]) -> Option<(String, String)> {
    let request = &pattern.request;
    if pattern.operation == "ExecuteStatement" {
        return statement_partition(request, &|table, index| hash_keys(tables, table, index)).map(
            |(table, index, text)| (partition_target(tables, &table, index.as_deref()), text),
        );
    }
    let table = request["TableName"].as_str()?;
    let index = request["IndexName"].as_str();
    let hashes = hash_keys(tables, table, index)?;
    let hash = hashes.first()?;
    let target = partition_target(tables, table, index);
    let scalar = scalar_text;
    match pattern.operation.as_str() {
        "GetItem" | "DeleteItem" | "UpdateItem" => Some((target, scalar(&request["Key"][hash])?)),
        "PutItem" => Some((target, scalar(&request["Item"][hash])?)),
        "Query" => {
            let condition = request["KeyConditionExpression"].as_str()?;
            let names = &request["ExpressionAttributeNames"];
            // The value each HASH attribute is set equal to.
            let equal_to = |hash: &str| {
                for clause in condition.split(" AND ").chain(condition.split(" and ")) {
                    let Some((left, right)) = clause.split_once('=') else {
                        continue;
                    };
                    let left = left.trim().trim_start_matches('(');
                    let right = right.trim().trim_end_matches(')');
                    let name = names[left].as_str().unwrap_or(left);
                    if name == hash && right.starts_with(':') {
                        return scalar(&request["ExpressionAttributeValues"][right]);
                    }
                }
                None
            };
            let text = joined_partition_text(hashes.iter().map(|hash| equal_to(hash)))?;
            Some((target, text))
        }
        _ => None,
    }
}

/// Where the partitions of `table` read through `index` are: the table's (`Table`), or a
/// GSI's own (`Table/Index`).
fn partition_target(tables: &[Value], table: &str, index: Option<&str>) -> String {
    match index {
        Some(index) if !is_local_index(tables, table, index) => format!("{table}/{index}"),
        // An LSI's partition key is its table's: its entries live on the table's partitions.
        _ => table.to_string(),
    }
}

/// The partition key attributes of a table, or of an index of it.
type HashKeysOf<'a> = dyn Fn(&str, Option<&str>) -> Option<Vec<String>> + 'a;

/// The table, index and partition key text a PartiQL statement (`{Statement, Parameters}`)
/// names, found by the statement's own parser: the value each partition key attribute is
/// compared with `=` (or given in an INSERT's item), a literal of the statement or the
/// parameter in its place. `hash_of` gives the partition key attributes of a table or index.
fn statement_partition(
    statement: &Value,
    hash_of: &HashKeysOf<'_>,
) -> Option<(String, Option<String>, String)> {
    let text = statement["Statement"].as_str()?;
    let parsed = partiql::parse_statement(text).ok()?;
    let (table, index) = parsed.target();
    let shape = partiql::statement_shape(text).ok()?;
    let hashes = hash_of(table, index)?;
    let value_of = |hash: &String| match shape.slots.get(shape.equality_slot(hash)?)? {
        partiql::Slot::Literal { text, .. } => Some(text.clone()),
        partiql::Slot::Parameter(number) => scalar_text(&statement["Parameters"][*number]),
    };
    let key = joined_partition_text(hashes.iter().map(value_of))?;
    Some((table.to_string(), index.map(str::to_string), key))
}

/// Whether the table a pattern names has a local secondary index (so a 10 GB collection cap).
fn has_local_index(model: &Model, pattern: &Pattern) -> bool {
    model.tables.iter().any(|t| {
        t["TableName"] == pattern.request["TableName"]
            && t["LocalSecondaryIndexes"]
                .as_array()
                .is_some_and(|indexes| !indexes.is_empty())
    })
}

/// Compiles the patterns of `model`.
pub fn compile(model: &Model, generators: &Generators) -> Result<Vec<CompiledPattern>, String> {
    let mut compiled = Vec::with_capacity(model.patterns.len());
    // One list for every pattern: the model's tables do not change between them.
    let table_hash_keys: Arc<[(String, String)]> = model
        .tables
        .iter()
        .filter_map(|create| {
            let table = create["TableName"].as_str()?;
            let hash = hash_keys(&model.tables, table, None)?.into_iter().next()?;
            Some((table.to_string(), hash))
        })
        .collect();
    for pattern in &model.patterns {
        let mut request = pattern.request.clone();
        let object = request
            .as_object_mut()
            .ok_or_else(|| format!("pattern `{}`: request must be a JSON object", pattern.name))?;
        object.insert("ReturnConsumedCapacity".into(), "INDEXES".into());
        // A write whose condition fails is charged by the size of the item it would have
        // written (SPEC §5), which the client sizes from the stored item the answer then
        // carries (free, like every ReturnValues).
        let conditional =
            object.contains_key("ConditionExpression") || object.contains_key("Expected");
        if conditional
            && matches!(
                pattern.operation.as_str(),
                "PutItem" | "UpdateItem" | "DeleteItem"
            )
        {
            object
                .entry("ReturnValuesOnConditionCheckFailure")
                .or_insert_with(|| "ALL_OLD".into());
        }
        // PartiQL's operations take no ReturnItemCollectionMetrics.
        let partiql = matches!(
            pattern.operation.as_str(),
            "ExecuteStatement" | "BatchExecuteStatement" | "ExecuteTransaction"
        );
        if !is_read(&pattern.operation) && !partiql {
            object.insert("ReturnItemCollectionMetrics".into(), "SIZE".into());
        }
        // A write's GSI units land on the GSI partitions of the entry it removes and the one
        // it adds: the stored item before the write tells the first (asked for when the
        // pattern asks for nothing else; ReturnValues costs no capacity).
        let single_write = matches!(
            pattern.operation.as_str(),
            "PutItem" | "UpdateItem" | "DeleteItem"
        );
        let gsi_keys = match object.get("TableName").and_then(Value::as_str) {
            Some(table) if single_write => global_index_keys(&model.tables, table),
            _ => Vec::new(),
        };
        let returned = if gsi_keys.is_empty() {
            Returned::Nothing
        } else {
            match object.get("ReturnValues").and_then(Value::as_str) {
                None | Some("NONE") => {
                    object.insert("ReturnValues".into(), "ALL_OLD".into());
                    Returned::Before
                }
                Some("ALL_OLD") => Returned::Before,
                Some("ALL_NEW") => Returned::After,
                Some(_) => Returned::Nothing,
            }
        };
        let template = Template::of_json(&request, generators)
            .map_err(|e| format!("pattern `{}`: {e}", pattern.name))?;
        let partition = match partition_text(pattern, &model.tables) {
            Some((target, text)) => Some((
                target,
                Template::of_text(&text, generators)
                    .map_err(|e| format!("pattern `{}`: {e}", pattern.name))?,
            )),
            None => None,
        };
        compiled.push(CompiledPattern {
            name: pattern.name.clone(),
            operation: pattern.operation.clone(),
            template,
            partition,
            reads: pattern_reads(&pattern.operation, &pattern.request),
            gsi_keys,
            returned,
            multi_item: MULTI_ITEM_OPERATIONS.contains(&pattern.operation.as_str()),
            table_hash_keys: Arc::clone(&table_hash_keys),
            grows_collection: pattern.operation == "PutItem" && has_local_index(model, pattern),
            weight: pattern.weight.unwrap_or(1.0),
            rate: pattern.rate,
        });
    }
    Ok(compiled)
}

/// What the load phase wrote.
#[derive(Debug, Clone, Copy, Default)]
pub struct Loaded {
    pub items: u64,
    /// Batches sent again after throttling or with unprocessed items.
    pub retries: u64,
}

/// Creates the model's tables (deleting any of the same name first) and loads its items.
pub fn prepare(
    model: &Model,
    target: &Arc<Target>,
    generators: &Generators,
) -> Result<Loaded, String> {
    let mut load_retries = 0;
    let mut client = target.client()?;
    for create in &model.tables {
        let name = create["TableName"].as_str().unwrap_or_default();
        let describe = serde_json::json!({"TableName": name}).to_string();
        if client.call("DeleteTable", describe.as_bytes()).is_ok() {
            // DynamoDB keeps a table DELETING for a while: wait until it is gone.
            client.wait_for_table(name, |answer| answer.is_none())?;
        }
        client
            .call("CreateTable", create.to_string().as_bytes())
            .map_err(|e| format!("CreateTable {name}: {}: {}", e.code, e.message))?;
        // ... and CREATING: writes wait until the table and its GSIs are ACTIVE.
        client.wait_until_active(name)?;
    }
    let seed = model.run.seed.unwrap_or(1);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x10ad);
    let mut draws = Draws::new(generators);
    let mut loaded = 0;
    // No rate of its own: as fast as the target takes, throttled batches and unprocessed
    // items sent again after a back-off, as any DynamoDB client must.
    let unlimited = Arc::new(RateLimiter::new(None));
    for load in &model.load {
        let item = Template::of_json(&load.item, generators)
            .map_err(|e| format!("load of {}: {e}", load.table))?;
        let mut writer = BatchWriter::new(
            Arc::clone(target),
            &load.table,
            key_names(&model.tables, &load.table),
            Arc::clone(&unlimited),
        )?;
        let mut items = Vec::with_capacity(LOAD_BATCH_ITEMS as usize);
        let mut written = 0;
        while written < load.count {
            let batch = LOAD_BATCH_ITEMS.min(load.count - written);
            items.clear();
            for _ in 0..batch {
                let mut text = Vec::new();
                draws.reset();
                item.render(generators, &mut draws, &mut rng, &mut text);
                items.push(serde_json::from_slice::<Value>(&text).unwrap_or_default());
            }
            writer
                .write(&items)
                .map_err(|e| format!("load of {}: {e}", load.table))?;
            written += batch;
            loaded += batch;
        }
        load_retries += writer.retries;
    }
    Ok(Loaded {
        items: loaded,
        retries: load_retries,
    })
}

/// Live counters the progress display reads.
#[derive(Default)]
pub struct Progress {
    pub operations: AtomicU64,
    pub errors: AtomicU64,
}

/// Runs the patterns. `progress` is updated as operations complete.
pub fn run(
    model: &Model,
    target: &Target,
    generators: &Arc<Generators>,
    patterns: &Arc<Vec<CompiledPattern>>,
    progress: &Arc<Progress>,
) -> Result<RunStats, String> {
    let concurrency = model.run.concurrency.unwrap_or(4);
    let deadline = model.run.seconds.map(Duration::from_secs_f64);
    let budget = model.run.operations.map(|n| Arc::new(AtomicU64::new(n)));
    let seed = model.run.seed.unwrap_or(1);
    let attempts = model.run.attempts.unwrap_or(ATTEMPTS_DEFAULT);
    let started = Instant::now();
    let mut workers = Vec::with_capacity(concurrency);
    for worker in 0..concurrency {
        let client = target.client()?;
        let generators = Arc::clone(generators);
        let patterns = Arc::clone(patterns);
        let progress = Arc::clone(progress);
        let budget = budget.clone();
        let rate = model.run.rate.map(|r| r / concurrency as f64);
        workers.push(std::thread::spawn(move || {
            let mut worker = Worker {
                client,
                generators,
                patterns,
                rng: StdRng::seed_from_u64(seed.wrapping_add(worker as u64 * 0x9E37)),
                body: Vec::with_capacity(4096),
                key: String::new(),
                started,
                concurrency,
                attempts,
                resend_refused: true,
                given_key: None,
            };
            worker.run(deadline, budget, rate, &progress)
        }));
    }
    joined(workers, patterns.len(), started)
}

/// One recorded request to send again.
pub struct Replayed {
    /// The pattern it belongs to.
    pub pattern: usize,
    /// When it was sent, from the recording's first request.
    pub at: Duration,
    pub body: Vec<u8>,
    /// Its partition key text, if it names one.
    pub key: Option<String>,
}

/// Sends `requests` (in order, from a bounded channel fed as the recording is read) from
/// `concurrency` workers: each at its recorded time when `paced`, else as fast as the target
/// answers. Records what every answer cost, as a run does.
pub fn replay(
    target: &Target,
    patterns: &Arc<Vec<CompiledPattern>>,
    requests: std::sync::mpsc::Receiver<Replayed>,
    concurrency: usize,
    paced: bool,
    progress: &Arc<Progress>,
) -> Result<RunStats, String> {
    let generators = Arc::new(Generators::new(&BTreeMap::new()));
    let requests = Arc::new(std::sync::Mutex::new(requests));
    let started = Instant::now();
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency.max(1) {
        let mut worker = Worker {
            client: target.client()?,
            generators: Arc::clone(&generators),
            patterns: Arc::clone(patterns),
            rng: StdRng::seed_from_u64(1),
            body: Vec::new(),
            key: String::new(),
            started,
            concurrency,
            // A batch's unprocessed items are sent again as a run sends them; a refused call
            // is not: the application's own retries are in the recording.
            attempts: ATTEMPTS_DEFAULT,
            resend_refused: false,
            given_key: None,
        };
        let requests = Arc::clone(&requests);
        let progress = Arc::clone(progress);
        workers.push(std::thread::spawn(move || {
            let mut stats = RunStats {
                patterns: vec![PatternStats::default(); worker.patterns.len()],
                ..RunStats::default()
            };
            let mut draws = Draws::new(&worker.generators);
            loop {
                if STOP.load(Ordering::Relaxed) {
                    break;
                }
                // The lock is held only to take the next request: they leave in order.
                let next = requests
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .recv();
                let Ok(next) = next else {
                    break;
                };
                if paced {
                    let due = started + next.at;
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                }
                worker.body = next.body;
                worker.given_key = next.key;
                worker.send(next.pattern, &mut draws, &mut stats, &progress);
            }
            stats
        }));
    }
    joined(workers, patterns.len(), started)
}

/// The workers' stats merged, once each has ended.
fn joined(
    workers: Vec<std::thread::JoinHandle<RunStats>>,
    patterns: usize,
    started: Instant,
) -> Result<RunStats, String> {
    let mut stats = RunStats {
        patterns: vec![PatternStats::default(); patterns],
        ..RunStats::default()
    };
    for worker in workers {
        let part = worker.join().map_err(|_| "a worker panicked".to_string())?;
        merge(&mut stats, part);
    }
    stats.elapsed = started.elapsed();
    stats.interrupted = STOP.load(Ordering::Relaxed);
    Ok(stats)
}

fn merge(into: &mut RunStats, part: RunStats) {
    for (mine, theirs) in into.patterns.iter_mut().zip(part.patterns) {
        mine.operations += theirs.operations;
        mine.throttled_attempts += theirs.throttled_attempts;
        mine.retries += theirs.retries;
        for (code, count) in theirs.errors {
            *mine.errors.entry(code).or_default() += count;
        }
        for (code, message) in theirs.error_messages {
            mine.error_messages.entry(code).or_insert(message);
        }
        mine.latencies_us.extend(theirs.latencies_us);
        mine.table_read_units += theirs.table_read_units;
        mine.table_write_units += theirs.table_write_units;
        for (table, (r, w, n)) in theirs.per_table {
            let slot = mine.per_table.entry(table).or_default();
            slot.0 += r;
            slot.1 += w;
            slot.2 += n;
        }
        for (index, (r, w, n)) in theirs.index_units {
            let slot = mine.index_units.entry(index).or_default();
            slot.0 += r;
            slot.1 += w;
            slot.2 += n;
        }
        mine.items_returned += theirs.items_returned;
        mine.item_bytes_returned += theirs.item_bytes_returned;
        if mine.per_second.len() < theirs.per_second.len() {
            mine.per_second.resize(theirs.per_second.len(), (0, 0, 0));
        }
        for (slot, (n, sum, max)) in mine.per_second.iter_mut().zip(theirs.per_second) {
            slot.0 += n;
            slot.1 += sum;
            slot.2 = slot.2.max(max);
        }
    }
    for (key, load) in part.partitions {
        let slot = into.partitions.entry(key).or_default();
        slot.read_units += load.read_units;
        slot.write_units += load.write_units;
        slot.operations += load.operations;
        slot.put_bytes += load.put_bytes;
        for (pattern, theirs) in load.by_pattern {
            let mine = slot.by_pattern.entry(pattern).or_default();
            mine.read_units += theirs.read_units;
            mine.write_units += theirs.write_units;
            mine.put_bytes += theirs.put_bytes;
        }
        // Workers' seconds add up: the merged series is the partition's true load per second.
        slot.seconds = merge_seconds(&slot.seconds, &load.seconds);
    }
    for (resource, theirs) in part.resources {
        let mine = into.resources.entry(resource).or_default();
        if mine.len() < theirs.len() {
            mine.resize(theirs.len(), [0.0, 0.0]);
        }
        for (slot, units) in mine.iter_mut().zip(theirs) {
            slot[0] += units[0];
            slot[1] += units[1];
        }
    }
    for (key, seen) in part.collections {
        match into.collections.get_mut(&key) {
            Some(mine) if mine.at >= seen.at => {}
            _ => {
                into.collections.insert(key, seen);
            }
        }
    }
}

/// Two series of seconds in second order, summed into one in second order.
fn merge_seconds(first: &[SecondLoad], second: &[SecondLoad]) -> Vec<SecondLoad> {
    let mut merged = Vec::with_capacity(first.len() + second.len());
    let (mut i, mut j) = (0, 0);
    while i < first.len() || j < second.len() {
        let next = match (first.get(i), second.get(j)) {
            (Some(x), Some(y)) if x.second == y.second => {
                i += 1;
                j += 1;
                SecondLoad {
                    second: x.second,
                    read_units: x.read_units + y.read_units,
                    write_units: x.write_units + y.write_units,
                }
            }
            (Some(x), Some(y)) if x.second < y.second => {
                i += 1;
                *x
            }
            (Some(x), None) => {
                i += 1;
                *x
            }
            (_, Some(y)) => {
                j += 1;
                *y
            }
            (None, None) => break,
        };
        merged.push(next);
    }
    debug_assert!(merged.windows(2).all(|w| w[0].second < w[1].second));
    merged
}

struct Worker {
    client: Client,
    generators: Arc<Generators>,
    patterns: Arc<Vec<CompiledPattern>>,
    rng: StdRng,
    body: Vec<u8>,
    key: String,
    started: Instant,
    concurrency: usize,
    /// Attempts of one call (`run.attempts`).
    attempts: u32,
    /// Whether a throttled (or 5xx) call is sent again, as the AWS SDKs do.
    resend_refused: bool,
    /// The partition key of the request being replayed (None: drawn from the template).
    given_key: Option<String>,
}

impl Worker {
    fn run(
        &mut self,
        deadline: Option<Duration>,
        budget: Option<Arc<AtomicU64>>,
        rate: Option<f64>,
        progress: &Progress,
    ) -> RunStats {
        let mut stats = RunStats {
            patterns: vec![PatternStats::default(); self.patterns.len()],
            ..RunStats::default()
        };
        let mut draws = Draws::new(&self.generators);
        let weights: Vec<f64> = self
            .patterns
            .iter()
            .map(|p| if p.rate.is_some() { 0.0 } else { p.weight })
            .collect();
        let weight_total: f64 = weights.iter().sum();
        // Each pattern with its own rate, and the weighted ones together, run on a schedule:
        // this worker's share of the rate, one operation per interval.
        let now = Instant::now();
        let mut due: Vec<Option<(Instant, Duration)>> = self
            .patterns
            .iter()
            .map(|p| {
                p.rate
                    .map(|r| (now, Duration::from_secs_f64(self.concurrency as f64 / r)))
            })
            .collect();
        let mut weighted_due = rate.map(|r| (now, Duration::from_secs_f64(1.0 / r)));
        loop {
            if STOP.load(Ordering::Relaxed) || deadline.is_some_and(|d| self.started.elapsed() >= d)
            {
                break;
            }
            // The pattern to run: a rate pattern that is due, else a weighted one.
            let now = Instant::now();
            let scheduled = due
                .iter()
                .enumerate()
                .filter_map(|(i, d)| d.map(|(at, _)| (i, at)))
                .min_by_key(|(_, at)| *at);
            let pattern = match scheduled {
                Some((i, at)) if at <= now || weight_total == 0.0 => {
                    if at > now {
                        std::thread::sleep(at - now);
                    }
                    if let Some((at, every)) = due[i].as_mut() {
                        *at += *every;
                    }
                    i
                }
                _ => {
                    if weight_total == 0.0 {
                        break;
                    }
                    if let Some((at, every)) = weighted_due.as_mut() {
                        let wait_until = scheduled.map_or(*at, |(_, next)| next.min(*at));
                        if wait_until > now {
                            std::thread::sleep(wait_until - now);
                            continue;
                        }
                        *at += *every;
                    }
                    let mut pick = self.rng.random::<f64>() * weight_total;
                    let mut chosen = weights.len() - 1;
                    for (i, w) in weights.iter().enumerate() {
                        if pick < *w {
                            chosen = i;
                            break;
                        }
                        pick -= w;
                    }
                    chosen
                }
            };
            if let Some(budget) = &budget {
                if budget
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_err()
                {
                    break;
                }
            }
            self.one(pattern, &mut draws, &mut stats, progress);
        }
        stats
    }

    fn one(&mut self, index: usize, draws: &mut Draws, stats: &mut RunStats, progress: &Progress) {
        let pattern = &self.patterns[index];
        draws.reset();
        self.body.clear();
        pattern
            .template
            .render(&self.generators, draws, &mut self.rng, &mut self.body);
        self.send(index, draws, stats, progress);
    }

    /// Sends `self.body` as a call of pattern `index` and records what it cost.
    fn send(&mut self, index: usize, draws: &mut Draws, stats: &mut RunStats, progress: &Progress) {
        let pattern = &self.patterns[index];
        // As the AWS SDKs do: a throttled (or 5xx) answer is sent again after a back-off, and
        // so are a batch's unprocessed items or keys, up to `run.attempts` attempts. The
        // latency is the whole call's, back-offs included, as the application would see it.
        let started = Instant::now();
        let mut answers = Vec::new();
        let mut failure = None;
        let mut unprocessed_left = false;
        let (mut throttled_attempts, mut retries) = (0u64, 0u64);
        let mut attempt = 0u32;
        loop {
            let last_attempt = attempt + 1 >= self.attempts || STOP.load(Ordering::Relaxed);
            match self.client.call(&pattern.operation, &self.body) {
                Ok(body) => {
                    let next = unprocessed_request(&body);
                    // A batch sent again is another request: its answer's units are shared
                    // among the items that request carried.
                    let request = pattern.multi_item.then(|| self.body.clone());
                    answers.push((body, true, request));
                    match next {
                        Some(next) if !last_attempt => self.body = next.into_bytes(),
                        Some(_) => {
                            unprocessed_left = true;
                            break;
                        }
                        None => break,
                    }
                }
                Err(error) if self.resend_refused && retried_in_runs(&error) && !last_attempt => {
                    if retry::throttled(&error) {
                        throttled_attempts += 1;
                    }
                }
                Err(error) => {
                    if retry::throttled(&error) {
                        throttled_attempts += 1;
                    }
                    failure = Some(error);
                    break;
                }
            }
            attempt += 1;
            retries += 1;
            std::thread::sleep(retry::backoff(attempt));
        }
        let latency = started.elapsed();
        let at = self.started.elapsed();
        let second = at.as_secs();
        let latency_us = u32::try_from(latency.as_micros()).unwrap_or(u32::MAX);
        let slot = &mut stats.patterns[index];
        slot.operations += 1;
        slot.throttled_attempts += throttled_attempts;
        slot.retries += retries;
        if slot.latencies_us.len() < LATENCY_SAMPLES_MAX {
            slot.latencies_us.push(latency_us);
        }
        let bucket = usize::try_from(second).unwrap_or(usize::MAX);
        if bucket < SECONDS_TRACKED_MAX {
            if slot.per_second.len() <= bucket {
                slot.per_second.resize(bucket + 1, (0, 0, 0));
            }
            let entry = &mut slot.per_second[bucket];
            entry.0 += 1;
            entry.1 += u64::from(latency_us);
            entry.2 = entry.2.max(latency_us);
        }
        progress.operations.fetch_add(1, Ordering::Relaxed);
        if unprocessed_left {
            progress.errors.fetch_add(1, Ordering::Relaxed);
            let code = "UnprocessedAfterRetries".to_string();
            *slot.errors.entry(code.clone()).or_default() += 1;
            slot.error_messages.entry(code).or_insert_with(|| {
                format!(
                    "items or keys still unprocessed after {} attempts",
                    self.attempts
                )
            });
        }
        if let Some(charged) = failure
            .as_ref()
            .and_then(|error| failed_condition_answer(&pattern.operation, &self.body, error))
        {
            // Charged, but it wrote nothing: no item collection grew.
            answers.push((charged, false, None));
        }
        if let Some(error) = failure {
            progress.errors.fetch_add(1, Ordering::Relaxed);
            *slot.errors.entry(error.code.clone()).or_default() += 1;
            slot.error_messages
                .entry(error.code)
                .or_insert(error.message);
        }
        for (body, wrote, request) in answers {
            let request = request.unwrap_or_else(|| std::mem::take(&mut self.body));
            self.record(index, &body, wrote, &request, draws, stats, at);
            if self.body.is_empty() {
                self.body = request;
            }
        }
    }

    /// Records what one answer of a pattern's call says it cost, returned and grew
    /// (`wrote`: the call wrote what it asked to, so a PutItem grew its collection;
    /// `request`: the request it answers).
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        index: usize,
        body: &[u8],
        wrote: bool,
        request: &[u8],
        draws: &mut Draws,
        stats: &mut RunStats,
        at: Duration,
    ) {
        let pattern = &self.patterns[index];
        let second = at.as_secs();
        let slot = &mut stats.patterns[index];
        let Ok(answer) = serde_json::from_slice::<Answer>(body) else {
            *slot.errors.entry("UnreadableAnswer".into()).or_default() += 1;
            return;
        };
        // Units on the table's partitions (the table's and its LSIs'), and each GSI's.
        let mut partition_units = 0.0;
        let mut gsi_units: BTreeMap<String, f64> = BTreeMap::new();
        // Per table (a batch's or transaction's answer has one entry each): its units and
        // its LSIs', which its items' partitions share.
        let mut table_units: Vec<(String, f64)> = Vec::new();
        // Units drawn from each table's and GSI's throughput, in this second of the run.
        let bucket = usize::try_from(second).unwrap_or(usize::MAX);
        let resources = &mut stats.resources;
        let mut add_to_resource = |resource: &str, units: f64| {
            if bucket >= SECONDS_TRACKED_MAX {
                return;
            }
            // Looked up before inserting: no allocation per answer once a resource is known.
            let series = match resources.get_mut(resource) {
                Some(series) => series,
                None => resources.entry(resource.to_string()).or_default(),
            };
            if series.len() <= bucket {
                series.resize(bucket + 1, [0.0, 0.0]);
            }
            series[bucket][usize::from(!pattern.reads)] += units;
        };
        for entry in answer.consumed.into_iter().flat_map(|c| match c {
            Capacities::One(entry) => vec![entry],
            Capacities::Many(entries) => entries,
        }) {
            let mut indexes = 0.0;
            let mut local = 0.0;
            for (map, is_local) in [
                (entry.global_secondary_indexes, false),
                (entry.local_secondary_indexes, true),
            ] {
                for (name, units) in map.into_iter().flatten() {
                    indexes += units.capacity_units;
                    let resource = format!("{}/{name}", entry.table_name);
                    if is_local {
                        local += units.capacity_units;
                    } else {
                        *gsi_units.entry(resource.clone()).or_default() += units.capacity_units;
                        add_to_resource(&resource, units.capacity_units);
                    }
                    let slot = slot.index_units.entry(resource).or_default();
                    if pattern.reads {
                        slot.0 += units.capacity_units;
                    } else {
                        slot.1 += units.capacity_units;
                    }
                    if units.capacity_units > 0.0 {
                        slot.2 += 1;
                    }
                }
            }
            let table = entry
                .table
                .map_or(entry.capacity_units - indexes, |t| t.capacity_units);
            partition_units += table + local;
            if pattern.multi_item {
                table_units.push((entry.table_name.clone(), table + local));
            }
            add_to_resource(&entry.table_name, table + local);
            let per_table = match slot.per_table.get_mut(&entry.table_name) {
                Some(per_table) => per_table,
                None => slot.per_table.entry(entry.table_name).or_default(),
            };
            per_table.2 += 1;
            if pattern.reads {
                slot.table_read_units += table;
                per_table.0 += table;
            } else {
                slot.table_write_units += table;
                per_table.1 += table;
            }
        }
        let items: Vec<&serde_json::value::RawValue> = answer
            .items
            .unwrap_or_default()
            .into_iter()
            .chain(answer.item)
            .collect();
        slot.items_returned += items.len() as u64;
        slot.item_bytes_returned += items.iter().map(|i| i.get().len() as u64).sum::<u64>();
        if let Some(responses) = &answer.responses {
            count_responses(responses, slot);
        }
        if let Some(collections) = answer.collections {
            record_collections(&collections, at.as_secs_f64(), &mut stats.collections);
        }
        // The partitions the answer's units landed on: the one the request names (the
        // table's, or a GSI's for a read through it) and, for a write, each GSI's.
        let mut loads: Vec<(String, String, f64)> = Vec::new();
        if let Some((target, key)) = &pattern.partition {
            match &self.given_key {
                // A replayed request names its own partition key.
                Some(given) => given.clone_into(&mut self.key),
                None => key.render_text(&self.generators, draws, &mut self.rng, &mut self.key),
            }
            // A GSI's partition carries the GSI's units; a table's, the table's and its LSIs'.
            let units = match gsi_units.get(target) {
                Some(units) => *units,
                None if target.contains('/') => 0.0,
                None => partition_units,
            };
            loads.push((target.clone(), self.key.clone(), units));
        }
        if pattern.multi_item && !table_units.is_empty() {
            let unprocessed = answer.unprocessed_items.or(answer.unprocessed_keys);
            loads.extend(multi_item_loads(
                pattern,
                request,
                unprocessed.as_ref(),
                &table_units,
            ));
        }
        if !pattern.gsi_keys.is_empty() && gsi_units.values().any(|units| *units > 0.0) {
            loads.extend(gsi_loads(
                pattern,
                request,
                answer.attributes.as_ref(),
                &gsi_units,
            ));
        }
        for (target, key, units) in loads {
            let on_table = !target.contains('/');
            let map_key = (target, key);
            if stats.partitions.len() >= PARTITIONS_TRACKED_MAX
                && !stats.partitions.contains_key(&map_key)
            {
                continue;
            }
            let load = stats.partitions.entry(map_key).or_default();
            add_load(load, second, units, pattern.reads);
            let mine = load.by_pattern.entry(index).or_default();
            if pattern.reads {
                mine.read_units += units;
            } else {
                mine.write_units += units;
            }
            if pattern.grows_collection && on_table && wrote {
                let bytes = request.len() as u64;
                load.put_bytes += bytes;
                mine.put_bytes += bytes;
            }
        }
    }
}

/// Where a single-item write's GSI units landed. A GSI has partitions of its own, keyed by
/// its partition key value (SPEC-2 §7.1): the units land on the partition of the item's GSI
/// key value after the write, or before it when the write removed the entry (a delete, the
/// attribute removed); a write that moved the entry from one value to another puts half on
/// each. `shoal serve --capacity enforce` charges GSI partitions by the same rule.
fn gsi_loads(
    pattern: &CompiledPattern,
    body: &[u8],
    attributes: Option<&Value>,
    gsi_units: &BTreeMap<String, f64>,
) -> Vec<(String, String, f64)> {
    let returned = attributes.filter(|item| item.is_object());
    let before = match pattern.returned {
        Returned::Before => returned,
        _ => None,
    };
    let after: Option<Value> = match (pattern.operation.as_str(), pattern.returned) {
        ("PutItem", _) => serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|mut request| request.get_mut("Item").map(Value::take)),
        ("UpdateItem", Returned::After) => returned.cloned(),
        ("UpdateItem", _) => updated_item(body, before),
        _ => None,
    };
    let mut loads = Vec::new();
    for (target, hashes) in &pattern.gsi_keys {
        let units = gsi_units.get(target).copied().unwrap_or(0.0);
        if units <= 0.0 {
            continue;
        }
        let text = |item: &Value| {
            joined_partition_text(hashes.iter().map(|hash| scalar_text(&item[hash])))
        };
        let old = before.and_then(text);
        let new = after.as_ref().and_then(text);
        match (old, new) {
            (Some(old), Some(new)) if old != new => {
                loads.push((target.clone(), old, units / 2.0));
                loads.push((target.clone(), new, units / 2.0));
            }
            (_, Some(value)) | (Some(value), None) => loads.push((target.clone(), value, units)),
            (None, None) => {}
        }
    }
    loads
}

/// Where a batch's or transaction's units landed: each table's units (its LSIs' included)
/// shared equally among the items of the request on that table that were processed (those
/// not sent back unprocessed), on each one's partition — the rule `shoal serve --capacity
/// enforce` charges by, the answer giving units per table only. A GSI's units count toward
/// the GSI's throughput but no GSI partition: the bench does not know each item's entry.
fn multi_item_loads(
    pattern: &CompiledPattern,
    request: &[u8],
    unprocessed: Option<&Value>,
    table_units: &[(String, f64)],
) -> Vec<(String, String, f64)> {
    let Ok(request) = serde_json::from_slice::<Value>(request) else {
        return Vec::new();
    };
    let mut keys = request_item_keys(&pattern.operation, &request, &pattern.table_hash_keys);
    if let Some(unprocessed) = unprocessed {
        let left = json!({ "RequestItems": unprocessed });
        for key in request_item_keys(&pattern.operation, &left, &pattern.table_hash_keys) {
            if let Some(at) = keys.iter().position(|k| *k == key) {
                keys.swap_remove(at);
            }
        }
    }
    let mut loads = Vec::new();
    for (table, units) in table_units {
        let on_table: Vec<&(String, String)> = keys.iter().filter(|(t, _)| t == table).collect();
        if on_table.is_empty() {
            continue;
        }
        let share = units / on_table.len() as f64;
        loads.extend(
            on_table
                .into_iter()
                .map(|(table, key)| (table.clone(), key.clone(), share)),
        );
    }
    loads
}

/// The (table, partition key text) of every item a batch or transaction request names.
fn request_item_keys(
    operation: &str,
    request: &Value,
    table_hash_keys: &[(String, String)],
) -> Vec<(String, String)> {
    let hash_of = |table: &str| {
        table_hash_keys
            .iter()
            .find(|(name, _)| name == table)
            .map(|(_, hash)| hash.as_str())
    };
    let mut keys = Vec::new();
    let mut push = |table: &str, item: &Value| {
        if let Some(text) = hash_of(table).and_then(|hash| scalar_text(&item[hash])) {
            keys.push((table.to_string(), text));
        }
    };
    match operation {
        "BatchExecuteStatement" | "ExecuteTransaction" => {
            let member = match operation {
                "BatchExecuteStatement" => "Statements",
                _ => "TransactStatements",
            };
            // A batch's or transaction's statements name items by their full key.
            let hash_of = |table: &str, _: Option<&str>| Some(vec![hash_of(table)?.to_string()]);
            for statement in request[member].as_array().into_iter().flatten() {
                if let Some((table, _, key)) = statement_partition(statement, &hash_of) {
                    keys.push((table, key));
                }
            }
        }
        "BatchWriteItem" | "BatchGetItem" => {
            for (table, requests) in request["RequestItems"].as_object().into_iter().flatten() {
                if operation == "BatchGetItem" {
                    for key in requests["Keys"].as_array().into_iter().flatten() {
                        push(table, key);
                    }
                    continue;
                }
                for write in requests.as_array().into_iter().flatten() {
                    let item = &write["PutRequest"]["Item"];
                    let item = if item.is_null() {
                        &write["DeleteRequest"]["Key"]
                    } else {
                        item
                    };
                    push(table, item);
                }
            }
        }
        _ => {
            for action in request["TransactItems"].as_array().into_iter().flatten() {
                let Some(body) = ["Put", "Update", "Delete", "ConditionCheck", "Get"]
                    .iter()
                    .find_map(|kind| action.get(*kind))
                else {
                    continue;
                };
                let Some(table) = body["TableName"].as_str() else {
                    continue;
                };
                let item = if body["Item"].is_null() {
                    &body["Key"]
                } else {
                    &body["Item"]
                };
                push(table, item);
            }
        }
    }
    keys
}

/// The item an UpdateItem request leaves: its update expression applied to the stored item
/// `before` (or, when there was none, to the item its key creates), in DynamoDB JSON.
fn updated_item(body: &[u8], before: Option<&Value>) -> Option<Value> {
    let input: UpdateItemInput = serde_json::from_slice(body).ok()?;
    let base: shoal_model::Item = match before {
        Some(item) => serde_json::from_value(item.clone()).ok()?,
        None => input.key.clone()?,
    };
    serde_json::to_value(apply_update(&input, &base)?).ok()
}

/// `input`'s update expression applied to `base`, by the expression language's own code.
fn apply_update(input: &UpdateItemInput, base: &shoal_model::Item) -> Option<shoal_model::Item> {
    let text = input.update_expression.as_ref()?;
    shoal_expr::Context::new(
        input.expression_attribute_names.as_ref(),
        input.expression_attribute_values.as_ref(),
    )
    .and_then(|mut context| context.parse_update(text))
    .and_then(|update| update.apply(base))
    .ok()
    .map(|outcome| outcome.item)
}

/// The text of a scalar attribute value in DynamoDB JSON (`{"S": "a"}` → `a`): how the
/// report names partitions.
fn scalar_text(value: &Value) -> Option<String> {
    ["S", "N", "B"]
        .iter()
        .find_map(|kind| value[*kind].as_str().map(str::to_string))
}

/// What a single-item write whose condition failed is charged (SPEC §5: by the size of the
/// item it would have written when an item exists, 1 WCU when none does; the table only),
/// as an answer carrying that ConsumedCapacity, so that it is counted like any other. The
/// would-be item is the PutItem's item, the stored item with the UpdateItem's expression
/// applied, or the stored item for a DeleteItem, sized by the tables layer's own rule.
fn failed_condition_answer(operation: &str, body: &[u8], error: &CallError) -> Option<Vec<u8>> {
    use shoal_tables::api::items::{DeleteItemInput, PutItemInput};
    use shoal_tables::core::write::failed_condition_units;
    if error.code != "ConditionalCheckFailedException" {
        return None;
    }
    let old: Option<shoal_model::Item> = error
        .item
        .as_ref()
        .and_then(|item| serde_json::from_value(item.clone()).ok());
    let (table, units) = match operation {
        "PutItem" => {
            let input: PutItemInput = serde_json::from_slice(body).ok()?;
            (
                input.table_name?,
                failed_condition_units(old.as_ref(), input.item.as_ref()),
            )
        }
        "UpdateItem" => {
            let input: UpdateItemInput = serde_json::from_slice(body).ok()?;
            let updated = old.as_ref().and_then(|old| apply_update(&input, old));
            let would_be = updated.as_ref().or(old.as_ref());
            (
                input.table_name?,
                failed_condition_units(old.as_ref(), would_be),
            )
        }
        "DeleteItem" => {
            let input: DeleteItemInput = serde_json::from_slice(body).ok()?;
            (
                input.table_name?,
                failed_condition_units(old.as_ref(), None),
            )
        }
        _ => return None,
    };
    let answer = serde_json::json!({"ConsumedCapacity": {
        "TableName": table,
        "CapacityUnits": units,
        "WriteCapacityUnits": units,
        "Table": {"CapacityUnits": units, "WriteCapacityUnits": units}
    }});
    Some(answer.to_string().into_bytes())
}

/// Whether the run sends a call again after `error`: throttling and the server's own
/// failures, as the SDKs do; not a lost connection, which the next call reopens.
fn retried_in_runs(error: &CallError) -> bool {
    retry::retryable(error) && error.code != "ConnectionError"
}

/// The request a batch answer leaves to send again: its UnprocessedItems (BatchWriteItem)
/// or UnprocessedKeys (BatchGetItem), if any.
fn unprocessed_request(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Unprocessed<'a> {
        #[serde(rename = "UnprocessedItems", borrow, default)]
        items: Option<&'a serde_json::value::RawValue>,
        #[serde(rename = "UnprocessedKeys", borrow, default)]
        keys: Option<&'a serde_json::value::RawValue>,
    }
    let unprocessed: Unprocessed = serde_json::from_slice(body).ok()?;
    let left = unprocessed.items.or(unprocessed.keys)?.get();
    let empty = serde_json::from_str::<serde_json::Map<String, Value>>(left)
        .map_or(true, |tables| tables.is_empty());
    (!empty).then(|| format!("{{\"RequestItems\":{left}}}"))
}

/// Adds one operation's units to a partition and to its second of the run.
fn add_load(load: &mut PartitionLoad, second: u64, units: f64, reads: bool) {
    load.operations += 1;
    let second = u32::try_from(second).unwrap_or(u32::MAX);
    // A worker's operations come in time order, so its series only ever grows at the end.
    if load.seconds.last().is_none_or(|last| last.second != second) {
        debug_assert!(load.seconds.last().is_none_or(|last| last.second < second));
        load.seconds.push(SecondLoad {
            second,
            ..SecondLoad::default()
        });
    }
    let Some(now) = load.seconds.last_mut() else {
        return;
    };
    if reads {
        load.read_units += units;
        now.read_units += units;
    } else {
        load.write_units += units;
        now.write_units += units;
    }
}

/// Items in BatchGetItem (`{table: [items]}`) and TransactGetItems (`[{Item}]`) answers.
fn count_responses(responses: &Value, slot: &mut PatternStats) {
    let items: Vec<&Value> = match responses {
        Value::Object(tables) => tables
            .values()
            .filter_map(Value::as_array)
            .flatten()
            .collect(),
        Value::Array(entries) => entries.iter().filter_map(|e| e.get("Item")).collect(),
        _ => Vec::new(),
    };
    slot.items_returned += items.len() as u64;
    slot.item_bytes_returned += items
        .iter()
        .map(|i| i.to_string().len() as u64)
        .sum::<u64>();
}

/// `ItemCollectionMetrics` of one answer: one entry (single-item writes) or a list per table
/// (batches and transactions).
fn record_collections(metrics: &Value, at: f64, seen: &mut HashMap<String, CollectionSeen>) {
    let mut entries = Vec::new();
    match metrics {
        Value::Object(map) if map.contains_key("ItemCollectionKey") => entries.push(metrics),
        Value::Object(tables) => {
            entries.extend(tables.values().filter_map(Value::as_array).flatten())
        }
        _ => {}
    }
    for entry in entries {
        // The key holds one attribute, the partition key: its scalar's text names the
        // collection as the partition reports do.
        let Some(key) = entry["ItemCollectionKey"]
            .as_object()
            .and_then(|key| key.values().next())
            .and_then(|value| ["S", "N", "B"].iter().find_map(|t| value[*t].as_str()))
        else {
            continue;
        };
        let range = &entry["SizeEstimateRangeGB"];
        seen.insert(
            key.to_string(),
            CollectionSeen {
                at,
                range_gb: [
                    range[0].as_f64().unwrap_or(0.0),
                    range[1].as_f64().unwrap_or(0.0),
                ],
            },
        );
    }
}
