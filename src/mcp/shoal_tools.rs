//! The tools only Shoal has, each a front on the command that does the work: the data-model
//! bench (`bench::data_model`) and its capacity plan and cost, a live table's partitions and
//! item collections (sized by the tables layer's own index-entry rule), a stream tail
//! (`client::streams::tail` against an endpoint, `Database::stream_reader` embedded), the
//! fault rules of a server's admin API, and the crash test (`crash_test::run`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use shoal::bench::data_model::{self, model::Model, plan, report};
use shoal::client::streams::{tail, From, TailOptions};
use shoal::client::target::Target;
use shoal::crash_test::{self, CrashMode, CrashTestConfig};
use shoal::tables::core::index::{entries_for, IndexRef, STORAGE_OVERHEAD_BYTES};
use shoal::tables::{Database, Options, StreamStart};
use shoal_model::{item_from_json, item_size_bytes, item_to_json};

use super::server::{blocking, Shoal};

/// Longest bench run a tool call may ask for, in seconds (`run.seconds`).
const BENCH_SECONDS_MAX: f64 = 120.0;
/// Most operations a bench run may ask for (`run.operations`), and most items it may load.
const BENCH_OPERATIONS_MAX: u64 = 1_000_000;
/// Most crash-and-recover cycles of one crash_test call, and its longest run.
const CRASH_CYCLES_MAX: u64 = 20;
const CRASH_SECONDS_MAX: f64 = 300.0;
/// Most stream records one tail_stream call returns, and its longest wait for new ones.
const TAIL_RECORDS_MAX: u64 = 1000;
const TAIL_WAIT_SECONDS_MAX: u64 = 60;
/// Most items describe_partitions reads, and most partitions it lists per table or index.
const PARTITION_ITEMS_MAX: u64 = 1_000_000;
const PARTITIONS_LISTED_MAX: usize = 100;

const MODEL_SCHEMA_TEXT: &str = "A data model, the JSON document of `shoal bench --model` \
(docs/DATA-MODEL-BENCH.md): {\"name\": \"…\", \"tables\": [CreateTable requests], \
\"generators\": {\"user\": {\"type\": \"string\"|\"number\"|\"sequence\"|\"timestamp\"|\"uuid\", \
\"prefix\": \"u#\", \"cardinality\": 1000, \"distribution\": \"uniform\" | {\"zipf\": 1.1} | \
{\"hot\": {\"share\": 0.3, \"keys\": 1}}}}, \"load\": [{\"table\": \"T\", \"count\": 1000, \
\"item\": {DynamoDB JSON with ${generator} placeholders}}], \"patterns\": [{\"name\": \"…\", \
\"operation\": \"GetItem\"|\"Query\"|\"PutItem\"|…, \"request\": {request with placeholders}, \
\"weight\": 1 | \"rate\": ops/s}], \"run\": {\"seconds\": 10, \"rate\": 500, \"concurrency\": 4}, \
\"prices\"?: {…}}. Unknown members are refused. It runs in a fresh in-memory database in \
this process, never on your data; run.seconds at most 120.";

/// The tools of this module: (name, description, input schema).
pub fn tools() -> Vec<(&'static str, String, Value)> {
    let model = json!({"type": "object", "description": MODEL_SCHEMA_TEXT});
    vec![
        (
            "bench_model",
            "Runs a DynamoDB data model (tables, items, access patterns) and returns its \
             report: per pattern the operations, latency, read and write units per call and \
             monthly cost; each table's and GSI's throughput against its limits; the hottest \
             partitions of each table and GSI against DynamoDB's per-partition limits (3,000 \
             RCU, 1,000 WCU); the largest item collections against the 10 GB cap; the cost per \
             month; and verdicts in plain sentences (what DynamoDB would throttle)."
                .to_string(),
            json!({"type": "object", "properties": {
                "model": model,
                "format": {"type": "string", "enum": ["text", "json"],
                           "description": "text (default): the report as `shoal bench` prints it; json: the whole report"}},
                "required": ["model"], "additionalProperties": false}),
        ),
        (
            "plan_capacity_and_cost",
            "Estimates a design's monthly DynamoDB cost and capacity: runs the data model and \
             answers the cost per month on-demand and provisioned (and storage) at the \
             modelled rate, and the capacity plan: at what multiple of the modelled rate each \
             limit is reached (each hot partition, each provisioned table and GSI, on-demand \
             limits, item collections), the first one in words, with provisioned capacity \
             and an auto-scaling setting for provisioned tables."
                .to_string(),
            json!({"type": "object", "properties": {"model": model},
                   "required": ["model"], "additionalProperties": false}),
        ),
        (
            "describe_partitions",
            "Describes how a live table's data spreads over partition keys: reads the table \
             (Scan, up to max_items) and lists its largest partitions by bytes (items and \
             bytes per partition key value), the same for each GSI (by the GSI's partition \
             key), and for a table with an LSI its largest item collections (base items plus \
             LSI entries, sized as DynamoDB counts them, 100 bytes each included) against the \
             10 GB cap. This is where the data sits; for where the traffic lands (hot \
             partitions by units per second) run the access patterns with bench_model."
                .to_string(),
            json!({"type": "object", "properties": {
                "table": {"type": "string", "description": "The table name."},
                "max_items": {"type": "integer", "minimum": 1, "maximum": PARTITION_ITEMS_MAX,
                              "description": "Most items read (default 100000); the answer says when the table held more."},
                "top": {"type": "integer", "minimum": 1, "maximum": PARTITIONS_LISTED_MAX,
                        "description": "Partitions listed per table and index (default 10)."}},
                "required": ["table"], "additionalProperties": false}),
        ),
        (
            "tail_stream",
            "Reads a table's DynamoDB stream (its latest one): the records in commit order \
             (eventName INSERT, MODIFY or REMOVE, Keys, NewImage, OldImage as the stream's \
             view type holds them), following shard rollovers. Returns once max_records \
             have been read, or after wait_seconds without a new record."
                .to_string(),
            json!({"type": "object", "properties": {
                "table": {"type": "string", "description": "The table whose stream is read (it must have one: StreamSpecification)."},
                "from": {"type": "string", "enum": ["trim_horizon", "latest"],
                         "description": "trim_horizon (default): every record retained; latest: only records written during the call."},
                "max_records": {"type": "integer", "minimum": 1, "maximum": TAIL_RECORDS_MAX, "description": "Default 100."},
                "wait_seconds": {"type": "integer", "minimum": 0, "maximum": TAIL_WAIT_SECONDS_MAX,
                                 "description": "How long to wait for a new record before returning (default 2)."}},
                "required": ["table"], "additionalProperties": false}),
        ),
        (
            "list_fault_rules",
            "Lists the fault rules in force on the server (with how often each matched and \
             fired) and the seed of their draws. Needs `shoal mcp --endpoint` pointing at a \
             `shoal serve --admin`."
                .to_string(),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        (
            "add_fault_rules",
            "Adds fault rules to the server: requests they match are answered with an \
             injected error, delayed, or have their connection dropped, so you can see how an \
             application copes. A rule: {\"id\"?: \"name\", \"operation\": \"PutItem\" | \"*\", \
             \"table\": \"Orders\" | \"*\", \"index\"?: \"ByDate\", \"error\"?: {\"code\": \
             \"ProvisionedThroughputExceededException\" | \"ThrottlingException\" | \
             \"RequestLimitExceeded\" | \"InternalServerError\" | \"ServiceUnavailable\" | \
             \"TransactionConflict\", \"probability\": 0.5, \"message\"?: \"…\", \
             \"after_apply\"?: true (the write is made, then the error answered)}, \
             \"latency\"?: {\"fixed_ms\": 50} | {\"uniform_ms\": [10, 90]} | {\"normal_ms\": \
             {\"mean\": 50, \"stddev\": 10}}, \"drop_connection\"?: {\"probability\": 0.1}}; at \
             least one of error, latency, drop_connection. Needs `shoal mcp --endpoint` \
             pointing at a `shoal serve --admin`."
                .to_string(),
            json!({"type": "object", "properties": {
                "rules": {"type": "array", "items": {"type": "object"}, "minItems": 1,
                          "description": "The rules to add (format in the tool description)."},
                "seed": {"type": "integer", "minimum": 0, "description": "Restarts the rules' random draws from this seed, so a run can be replayed."}},
                "required": ["rules"], "additionalProperties": false}),
        ),
        (
            "clear_fault_rules",
            "Removes one fault rule (by id) or every rule from the server. Needs `shoal mcp \
             --endpoint` pointing at a `shoal serve --admin`."
                .to_string(),
            json!({"type": "object", "properties": {
                "id": {"type": "string", "description": "The rule to remove; without it every rule is removed."}},
                "additionalProperties": false}),
        ),
        (
            "crash_test",
            "Crashes a Shoal database under a mixed workload (puts, updates, deletes and \
             transactions on a table with an LSI, a GSI, a stream and Time to Live), again and \
             again, and checks after each recovery that every acknowledged write survived, \
             that what survived is a prefix of the writes, that every index, item collection \
             and statistic matches the items, and that the stream holds exactly one record \
             per change. Runs on its own scratch database, never on yours. Returns the report \
             (cycles, writes checked, recovery times, violations)."
                .to_string(),
            json!({"type": "object", "properties": {
                "mode": {"type": "string", "enum": ["power-loss", "kill"],
                         "description": "power-loss (default): the simulated disk loses its unsynced data, the last write torn; kill: SIGKILL of a child process writing real files."},
                "durability": {"type": "string", "description": "sync (default), none, or interval:MS; with none or interval a power loss may lose acknowledged writes (reported as allowed)."},
                "cycles": {"type": "integer", "minimum": 1, "maximum": CRASH_CYCLES_MAX, "description": "Crash and recover this many times (default 3)."},
                "seed": {"type": "integer", "minimum": 0, "description": "The workload's seed: the same seed makes the same writes (default 1)."}},
                "additionalProperties": false}),
        ),
    ]
}

/// Runs tool `name`; an error that says where the tools are listed when there is none.
pub async fn call(shoal: &Arc<Shoal>, name: &str, arguments: Value) -> Result<String, String> {
    match name {
        "bench_model" => bench_model(shoal, parse(arguments)?).await,
        "plan_capacity_and_cost" => plan_capacity_and_cost(shoal, parse(arguments)?).await,
        "describe_partitions" => describe_partitions(shoal, parse(arguments)?).await,
        "tail_stream" => tail_stream(shoal, parse(arguments)?).await,
        "list_fault_rules" => {
            parse::<NoArguments>(arguments)?;
            admin(shoal, "GET", "/shoal/faults", b"").await
        }
        "add_fault_rules" => {
            let AddRules { rules, seed } = parse(arguments)?;
            let mut set = json!({"rules": rules});
            if let Some(seed) = seed {
                set["seed"] = json!(seed);
            }
            admin(shoal, "POST", "/shoal/faults", set.to_string().as_bytes()).await
        }
        "clear_fault_rules" => {
            let ClearRules { id } = parse(arguments)?;
            match id {
                Some(id) if id.is_empty() || !id.chars().all(|c| c.is_ascii_graphic()) => {
                    Err(format!("{id:?} is not a rule id"))
                }
                Some(id) => admin(shoal, "DELETE", &format!("/shoal/faults/{id}"), b"").await,
                None => admin(shoal, "DELETE", "/shoal/faults", b"").await,
            }
        }
        "crash_test" => crash_test(shoal, parse(arguments)?).await,
        _ => Err(format!(
            "no tool is named {name:?}: tools/list names them (DynamoDB operations by their API name, e.g. PutItem)"
        )),
    }
}

fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, String> {
    serde_json::from_value(arguments).map_err(|e| format!("the arguments do not fit: {e}"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArguments {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddRules {
    rules: Vec<Value>,
    seed: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClearRules {
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchArguments {
    model: Value,
    #[serde(default)]
    format: Option<String>,
}

/// Reads a model given as a JSON object and holds it to a tool call's limits.
fn model(value: &Value) -> Result<Model, String> {
    let model = Model::parse(&value.to_string())?;
    if model.run.seconds.is_some_and(|s| s > BENCH_SECONDS_MAX) {
        return Err(format!(
            "run.seconds is at most {BENCH_SECONDS_MAX} in a tool call (run longer ones with `shoal bench --model`)"
        ));
    }
    if model.run.seconds.is_none()
        && model
            .run
            .operations
            .is_some_and(|n| n > BENCH_OPERATIONS_MAX)
    {
        return Err(format!(
            "run.operations is at most {BENCH_OPERATIONS_MAX} without run.seconds"
        ));
    }
    let loaded: u64 = model.load.iter().map(|load| load.count).sum();
    if loaded > BENCH_OPERATIONS_MAX {
        return Err(format!(
            "the model loads {loaded} items; a tool call loads at most {BENCH_OPERATIONS_MAX}"
        ));
    }
    Ok(model)
}

/// Runs `model` in a fresh in-memory database, one long call at a time.
async fn run_model(shoal: &Arc<Shoal>, model: Model) -> Result<report::Report, String> {
    let _permit = Arc::clone(&shoal.long_calls)
        .try_acquire_owned()
        .map_err(|_| "a bench run or crash test is already running: wait for it".to_string())?;
    blocking(move || {
        let options = data_model::BenchOptions::default();
        data_model::run_model(&model, &options)
    })
    .await?
}

async fn bench_model(shoal: &Arc<Shoal>, arguments: BenchArguments) -> Result<String, String> {
    let json_format = match arguments.format.as_deref() {
        None | Some("text") => false,
        Some("json") => true,
        Some(other) => return Err(format!("format is text or json, not {other:?}")),
    };
    let report = run_model(shoal, model(&arguments.model)?).await?;
    if json_format {
        serde_json::to_string(&report).map_err(|e| e.to_string())
    } else {
        Ok(report::render_text(&report))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanArguments {
    model: Value,
}

async fn plan_capacity_and_cost(
    shoal: &Arc<Shoal>,
    arguments: PlanArguments,
) -> Result<String, String> {
    let report = run_model(shoal, model(&arguments.model)?).await?;
    let cost = &report.cost;
    Ok(format!(
        "monthly cost at the modelled rate ({}): on-demand ${:.2}, provisioned ${:.2}, storage ${:.2}\n\n{}",
        cost.region,
        cost.on_demand_monthly,
        cost.provisioned_monthly,
        cost.storage_monthly,
        plan::render_text(&report)
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TailArguments {
    table: String,
    from: Option<String>,
    max_records: Option<u64>,
    wait_seconds: Option<u64>,
}

async fn tail_stream(shoal: &Arc<Shoal>, arguments: TailArguments) -> Result<String, String> {
    let max_records = arguments.max_records.unwrap_or(100);
    if !(1..=TAIL_RECORDS_MAX).contains(&max_records) {
        return Err(format!("max_records is 1 to {TAIL_RECORDS_MAX}"));
    }
    let wait = arguments.wait_seconds.unwrap_or(2);
    if wait > TAIL_WAIT_SECONDS_MAX {
        return Err(format!("wait_seconds is at most {TAIL_WAIT_SECONDS_MAX}"));
    }
    let latest = match arguments.from.as_deref() {
        None | Some("trim_horizon") => false,
        Some("latest") => true,
        Some(other) => return Err(format!("from is trim_horizon or latest, not {other:?}")),
    };
    match (&shoal.target, &shoal.endpoint) {
        (Target::Embedded(database), _) => {
            let database = Arc::clone(database);
            let table = arguments.table;
            blocking(move || embedded_tail(&database, &table, latest, max_records, wait)).await?
        }
        (Target::Endpoint(_), Some(endpoint)) => {
            let options = TailOptions {
                endpoint: endpoint.clone(),
                table: arguments.table,
                from: if latest {
                    From::Latest
                } else {
                    From::TrimHorizon
                },
                max_records: Some(max_records),
                idle_exit: Some(Duration::from_secs(wait)),
            };
            let mut lines = Vec::new();
            tail(&options, &mut lines).await?;
            let records: Vec<Value> = String::from_utf8_lossy(&lines)
                .lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect();
            Ok(json!({"Records": records}).to_string())
        }
        (Target::Endpoint(_), None) => Err("no endpoint to read the stream from".to_string()),
    }
}

/// The stream of `table` read in this process, through the tables layer's reader.
fn embedded_tail(
    database: &Database,
    table: &str,
    latest: bool,
    max_records: u64,
    wait: u64,
) -> Result<String, String> {
    let start = if latest {
        StreamStart::Latest
    } else {
        StreamStart::TrimHorizon
    };
    let error = |e: shoal_model::ApiError| format!("{}: {}", e.code.name(), e.message);
    let mut reader = database.stream_reader(table, start).map_err(error)?;
    let limit = max_records as usize;
    let mut records = reader.read(limit).map_err(error)?;
    while records.len() < limit {
        let more = reader
            .wait(limit - records.len(), Duration::from_secs(wait))
            .map_err(error)?;
        if more.is_empty() {
            break;
        }
        records.extend(more);
    }
    let records: Vec<Value> = records
        .iter()
        .map(|record| {
            // The members of a GetRecords record that the reader knows, in its shape.
            let mut change = json!({
                "SequenceNumber": record.sequence_number(),
                "ApproximateCreationDateTime": record.created_at_millis / 1000,
                "SizeBytes": record.size_bytes(),
                "Keys": item_to_json(&record.keys),
            });
            if let Some(image) = &record.new_image {
                change["NewImage"] = item_to_json(image);
            }
            if let Some(image) = &record.old_image {
                change["OldImage"] = item_to_json(image);
            }
            let mut value = json!({
                "eventName": record.event_name.as_str(),
                "eventSource": "aws:dynamodb",
                "dynamodb": change,
            });
            if record.by_service {
                value["userIdentity"] =
                    json!({"Type": "Service", "PrincipalId": "dynamodb.amazonaws.com"});
            }
            value
        })
        .collect();
    Ok(json!({"Records": records}).to_string())
}

/// One call of the admin API of the server at the endpoint.
async fn admin(
    shoal: &Arc<Shoal>,
    method: &str,
    path: &str,
    body: &[u8],
) -> Result<String, String> {
    let (Target::Endpoint(connector), Some(endpoint)) = (&shoal.target, &shoal.endpoint) else {
        return Err(
            "fault rules live in a server: start `shoal serve --admin`, and this MCP \
                    server with `shoal mcp --endpoint http://127.0.0.1:8000` pointing at it"
                .to_string(),
        );
    };
    let mut connection = connector.connect().await?;
    let (status, answer) = connection.json_request(method, path, body).await?;
    let text = String::from_utf8_lossy(&answer).into_owned();
    match status {
        200 => Ok(text),
        // Without --admin every /shoal/ path is an unknown route, as in DynamoDB.
        404 if !text.contains("\"error\"") => Err(format!(
            "the server at {endpoint} has no admin API: start it with `shoal serve --admin`"
        )),
        _ => {
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["error"].as_str().map(str::to_string))
                .unwrap_or(text);
            Err(format!("the server refused ({status}): {message}"))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CrashArguments {
    mode: Option<String>,
    durability: Option<String>,
    cycles: Option<u64>,
    seed: Option<u64>,
}

async fn crash_test(shoal: &Arc<Shoal>, arguments: CrashArguments) -> Result<String, String> {
    let mode = match arguments.mode.as_deref() {
        None | Some("power-loss") => CrashMode::PowerLoss,
        Some("kill") => CrashMode::Kill,
        Some(other) => return Err(format!("mode is power-loss or kill, not {other:?}")),
    };
    let cycles = arguments.cycles.unwrap_or(3);
    if !(1..=CRASH_CYCLES_MAX).contains(&cycles) {
        return Err(format!("cycles is 1 to {CRASH_CYCLES_MAX}"));
    }
    let config = CrashTestConfig {
        mode,
        durability: shoal::parse_durability(arguments.durability.as_deref().unwrap_or("sync"))?,
        cycles,
        seconds: Some(CRASH_SECONDS_MAX),
        seed: arguments.seed.unwrap_or(1),
        data_dir: None,
        program: std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?,
        expiry_bound: Duration::from_secs(10),
    };
    let _permit = Arc::clone(&shoal.long_calls)
        .try_acquire_owned()
        .map_err(|_| "a bench run or crash test is already running: wait for it".to_string())?;
    let report = blocking(move || crash_test::run(&config, |_, _| {})).await??;
    let violations = report.violation_count();
    Ok(format!(
        "{}\n{}",
        report.render(),
        if violations == 0 {
            "no violations".to_string()
        } else {
            format!("{violations} violation(s)")
        }
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionArguments {
    table: String,
    max_items: Option<u64>,
    top: Option<usize>,
}

/// Items and bytes of one partition key value of a table or index.
#[derive(Default, Clone)]
struct Partition {
    items: u64,
    bytes: u64,
    /// Tables with an LSI: the item collection (items and LSI entries, 100 bytes each).
    collection_bytes: u64,
}

async fn describe_partitions(
    shoal: &Arc<Shoal>,
    arguments: PartitionArguments,
) -> Result<String, String> {
    let max_items = arguments.max_items.unwrap_or(100_000);
    if !(1..=PARTITION_ITEMS_MAX).contains(&max_items) {
        return Err(format!("max_items is 1 to {PARTITION_ITEMS_MAX}"));
    }
    let top = arguments.top.unwrap_or(10);
    if !(1..=PARTITIONS_LISTED_MAX).contains(&top) {
        return Err(format!("top is 1 to {PARTITIONS_LISTED_MAX}"));
    }
    let table = arguments.table;
    // The table's definition, as the tables layer holds it: the database's own, or, for an
    // endpoint, the one a scratch database makes of its DescribeTable.
    let definition = match &shoal.target {
        Target::Embedded(database) => database
            .table(&table)
            .map_err(|e| format!("{}: {}", e.code.name(), e.message))?,
        Target::Endpoint(_) => {
            let request = json!({"TableName": table}).to_string().into_bytes();
            let described: Value =
                serde_json::from_str(&shoal.call("DescribeTable", request).await?)
                    .map_err(|e| e.to_string())?;
            let create =
                shoal::transfer::schema::create_table_request(&described["Table"], &table)?;
            let scratch = Database::open_in_memory(Options::default())
                .map_err(|e| format!("cannot open a scratch database: {e}"))?;
            scratch
                .execute("CreateTable", create)
                .map_err(|e| format!("the table's schema: {}", e.message))?;
            scratch
                .table(&table)
                .map_err(|e| format!("the table's schema: {}", e.message))?
        }
    };
    let mut table_partitions: HashMap<String, Partition> = HashMap::new();
    let mut index_partitions: HashMap<(String, String), Partition> = HashMap::new();
    let mut read = 0u64;
    let mut start: Option<Value> = None;
    let complete = loop {
        let mut request = json!({"TableName": table, "Limit": (max_items - read).min(1000)});
        if let Some(key) = start.take() {
            request["ExclusiveStartKey"] = key;
        }
        let page: Value =
            serde_json::from_str(&shoal.call("Scan", request.to_string().into_bytes()).await?)
                .map_err(|e| e.to_string())?;
        for json_item in page["Items"].as_array().into_iter().flatten() {
            read += 1;
            let item = item_from_json(json_item).map_err(|e| e.message)?;
            let Some(pk) = item.get(&definition.key.hash.name) else {
                continue;
            };
            let bytes = item_size_bytes(&item) as u64;
            let partition = table_partitions
                .entry(pk.to_json().to_string())
                .or_default();
            partition.items += 1;
            partition.bytes += bytes;
            partition.collection_bytes += bytes + STORAGE_OVERHEAD_BYTES;
            for entry in entries_for(&definition, &item).map_err(|e| e.message)? {
                match entry.index {
                    IndexRef::Local(_) => {
                        let partition = table_partitions
                            .entry(pk.to_json().to_string())
                            .or_default();
                        partition.collection_bytes += entry.storage_bytes();
                    }
                    IndexRef::Global(position) => {
                        let Some(index) = definition.global_indexes.get(position) else {
                            continue;
                        };
                        let Some(value) = item.get(&index.key.hash.name) else {
                            continue;
                        };
                        let partition = index_partitions
                            .entry((index.name.clone(), value.to_json().to_string()))
                            .or_default();
                        partition.items += 1;
                        partition.bytes += entry.size_bytes();
                    }
                }
            }
        }
        match page.get("LastEvaluatedKey") {
            Some(key) if read < max_items => start = Some(key.clone()),
            Some(_) => break false,
            None => break true,
        }
    };
    let largest = |partitions: Vec<(String, Partition)>, collection: bool| -> Vec<Value> {
        let mut partitions = partitions;
        partitions.sort_by(|a, b| {
            let size = |p: &Partition| {
                if collection {
                    p.collection_bytes
                } else {
                    p.bytes
                }
            };
            size(&b.1).cmp(&size(&a.1)).then_with(|| a.0.cmp(&b.0))
        });
        partitions
            .into_iter()
            .take(top)
            .map(|(key, p)| {
                let key: Value = serde_json::from_str(&key).unwrap_or(Value::String(key));
                if collection {
                    json!({"partition_key": key, "items": p.items, "collection_bytes": p.collection_bytes,
                           "share_of_10_gb_cap": p.collection_bytes as f64 / 10e9})
                } else {
                    json!({"partition_key": key, "items": p.items, "bytes": p.bytes})
                }
            })
            .collect()
    };
    let total_items: u64 = table_partitions.values().map(|p| p.items).sum();
    let total_bytes: u64 = table_partitions.values().map(|p| p.bytes).sum();
    let mut indexes = serde_json::Map::new();
    for index in &definition.global_indexes {
        let partitions: Vec<(String, Partition)> = index_partitions
            .iter()
            .filter(|((name, _), _)| *name == index.name)
            .map(|((_, key), p)| (key.clone(), p.clone()))
            .collect();
        indexes.insert(
            index.name.clone(),
            json!({"partition_key_attribute": index.key.hash.name, "partitions": partitions.len(),
                   "largest": largest(partitions, false)}),
        );
    }
    let mut answer = json!({
        "table": table,
        "partition_key_attribute": definition.key.hash.name,
        "items_read": read,
        "complete": complete,
        "partitions": table_partitions.len(),
        "items": total_items,
        "bytes": total_bytes,
        "largest_partitions": largest(table_partitions.clone().into_iter().collect(), false),
        "global_secondary_indexes": indexes,
    });
    if !complete {
        answer["note"] = json!(format!(
            "only the first {read} items were read (max_items): the figures are of those"
        ));
    }
    if !definition.local_indexes.is_empty() {
        answer["largest_item_collections"] =
            json!(largest(table_partitions.into_iter().collect(), true));
    }
    Ok(answer.to_string())
}
