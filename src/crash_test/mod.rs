//! `shoal crash-test`: crashes a database under a mixed workload, again and again, and checks
//! after each recovery that nothing acknowledged was lost, that what survived is exactly a
//! prefix of the writes (no holes, nothing half-applied), that every index, item collection
//! and statistics record matches the items (`Database::check`), and that the stream holds
//! exactly one record per change of that prefix, in order.
//!
//! The workload writes table `CrashTest` (an LSI, a GSI, a `NEW_AND_OLD_IMAGES` stream and
//! Time to Live on an attribute set a year ahead, so the expiry index is written and checked
//! but nothing expires): puts, updates, deletes and two-item transactions over 256 keys.
//! Operation `i` is a pure function of the seed and `i`, so the checker knows every write
//! without being told.
//!
//! Two ways to crash:
//! - `kill`: a child process (`shoal crash-test-child`) runs the workload on a real data
//!   directory and reports each acknowledged write on its stdout; it is killed with SIGKILL
//!   at a random moment. Every acknowledged write must survive, in every durability mode
//!   (the kernel keeps what was written).
//! - `power-loss`: the workload runs in this process on the simulated disk, which is frozen
//!   at a random write and loses everything not yet synced (a torn last write included).
//!   With `sync` durability every acknowledged write must survive; with `none` or
//!   `interval:MS` the survivors need only be a prefix.
//!
//! [`writer`] is the engine-level workload of `shoal crash-writer`, which the kill -9 tests
//! run and kill.

pub mod writer;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_tables::{Database, Durability, EventName, Options, StorageOptions, StreamStart};

use crate::parse_durability;

/// The table the workload writes.
pub const TABLE: &str = "CrashTest";
/// Keys the workload cycles through (16 partitions of 16 items).
const PARTITIONS: u64 = 16;
const SORT_KEYS: u64 = 16;
/// Most operations one cycle runs before its crash.
const CYCLE_OPERATIONS_MAX: u64 = 600;
/// Stream records read per call when checking.
const STREAM_READ_BATCH: usize = 1000;

/// How a cycle crashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    Kill,
    PowerLoss,
}

#[derive(Debug, Clone)]
pub struct CrashTestConfig {
    pub mode: CrashMode,
    pub durability: Durability,
    /// Crash and recover this many times (at least one).
    pub cycles: u64,
    /// Or stop once this much time has passed.
    pub seconds: Option<f64>,
    pub seed: u64,
    /// Kill mode: where the child keeps its database (default: a new temporary directory).
    pub data_dir: Option<PathBuf>,
    /// Kill mode: the `shoal` binary to run as the child.
    pub program: PathBuf,
}

/// What a crash test found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CrashTestReport {
    pub cycles: u64,
    /// Acknowledged writes whose survival was checked.
    pub acknowledged_checked: u64,
    /// Acknowledged writes lost where the durability mode allows it (unsynced at a power loss).
    pub acknowledged_lost_allowed: u64,
    /// Violations by kind, each with its first few descriptions.
    pub violations: BTreeMap<String, Vec<String>>,
    /// Milliseconds each reopen took.
    pub recovery_ms: Vec<f64>,
}

impl CrashTestReport {
    pub fn violation_count(&self) -> usize {
        self.violations.values().map(Vec::len).sum()
    }

    fn violate(&mut self, kind: &str, what: String) {
        let list = self.violations.entry(kind.to_string()).or_default();
        if list.len() < 10 {
            list.push(what);
        }
    }

    /// The report as text.
    pub fn render(&self) -> String {
        let mut sorted = self.recovery_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| {
            if sorted.is_empty() {
                0.0
            } else {
                sorted[((sorted.len() - 1) as f64 * q).round() as usize]
            }
        };
        let mut out = format!(
            "{} cycles, {} acknowledged writes checked, {} lost where the durability mode allows it\n\
             recovery: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms\n",
            self.cycles,
            self.acknowledged_checked,
            self.acknowledged_lost_allowed,
            at(0.5),
            at(0.99),
            at(1.0)
        );
        if self.violations.is_empty() {
            out.push_str("no violations\n");
        } else {
            for (kind, list) in &self.violations {
                out.push_str(&format!("violation: {kind} ({})\n", list.len()));
                for what in list {
                    out.push_str(&format!("  {what}\n"));
                }
            }
        }
        out
    }
}

/// The database options of the workload: small memtables and WAL segments, so flushes,
/// compactions and segment rotation happen within a cycle.
pub fn options(durability: Durability) -> Options {
    Options {
        storage: StorageOptions {
            durability,
            memtable_size_bytes: 64 << 10,
            wal_segment_size_bytes: 256 << 10,
        },
        ..Options::default()
    }
}

/// Creates the workload's table, with its stream and Time to Live, if it does not exist.
pub fn create_table(db: &Database) -> Result<(), String> {
    if db.table(TABLE).is_ok() {
        return Ok(());
    }
    let key = |name: &str, kind: &str| json!({"AttributeName": name, "KeyType": kind});
    db.execute(
        "CreateTable",
        json!({
            "TableName": TABLE,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "a", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "KeySchema": [key("pk", "HASH"), key("sk", "RANGE")],
            "LocalSecondaryIndexes": [{"IndexName": "ByA", "KeySchema": [key("pk", "HASH"), key("a", "RANGE")],
                "Projection": {"ProjectionType": "KEYS_ONLY"}}],
            "GlobalSecondaryIndexes": [{"IndexName": "ByG", "KeySchema": [key("g", "HASH"), key("sk", "RANGE")],
                "Projection": {"ProjectionType": "ALL"}}],
            "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"},
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .map_err(|e| format!("CreateTable: {}", e.message))?;
    db.execute(
        "UpdateTimeToLive",
        json!({"TableName": TABLE, "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}}),
    )
    .map_err(|e| format!("UpdateTimeToLive: {}", e.message))?;
    Ok(())
}

/// A key of the workload, as text (`p3/s12`) and as DynamoDB JSON.
fn key(n: u64) -> (String, Value) {
    let (pk, sk) = (n % PARTITIONS, n / PARTITIONS % SORT_KEYS);
    (
        format!("p{pk}/s{sk}"),
        json!({"pk": {"S": format!("p{pk}")}, "sk": {"S": format!("s{sk}")}}),
    )
}

/// What operation `i` writes: an item per key it puts (None for a delete), in action order.
#[derive(Debug, Clone)]
struct Operation {
    name: &'static str,
    request: Value,
    /// For the model: each touched key and how it changes.
    effects: Vec<(String, Effect)>,
}

#[derive(Debug, Clone)]
enum Effect {
    Put(Value),
    /// SET these attributes (an upsert), REMOVE `g` if asked.
    Update {
        set: Vec<(String, Value)>,
        remove_g: bool,
    },
    Delete,
}

/// A year from the workload's fixed epoch: Time to Live never fires.
const EXPIRES: &str = "4102444800";

fn item(key: &Value, i: u64, rng: &mut StdRng) -> Value {
    let mut item = key.as_object().cloned().unwrap_or_default();
    item.insert("v".into(), json!({"N": i.to_string()}));
    item.insert("expires".into(), json!({"N": EXPIRES}));
    if rng.random_bool(0.7) {
        item.insert(
            "a".into(),
            json!({"S": format!("a{}", rng.random_range(0..6))}),
        );
    }
    if rng.random_bool(0.6) {
        item.insert(
            "g".into(),
            json!({"S": format!("g{}", rng.random_range(0..4))}),
        );
    }
    let payload = "x".repeat(rng.random_range(0..600));
    item.insert("payload".into(), json!({"S": payload}));
    Value::Object(item)
}

/// Operation `i` of the workload seeded `seed`.
fn operation(seed: u64, i: u64) -> Operation {
    let mut rng = StdRng::seed_from_u64(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let keys = PARTITIONS * SORT_KEYS;
    let (name_a, key_a) = key(rng.random_range(0..keys));
    match rng.random_range(0..10) {
        0..=3 => {
            let item = item(&key_a, i, &mut rng);
            Operation {
                name: "PutItem",
                request: json!({"TableName": TABLE, "Item": item}),
                effects: vec![(name_a, Effect::Put(item))],
            }
        }
        4..=6 => {
            let a = json!({"S": format!("a{}", rng.random_range(0..6))});
            let remove_g = rng.random_bool(0.3);
            let expression = if remove_g {
                "SET v = :v, a = :a, expires = :e REMOVE g"
            } else {
                "SET v = :v, a = :a, expires = :e"
            };
            Operation {
                name: "UpdateItem",
                request: json!({"TableName": TABLE, "Key": key_a, "UpdateExpression": expression,
                    "ExpressionAttributeValues": {":v": {"N": i.to_string()}, ":a": a, ":e": {"N": EXPIRES}}}),
                effects: vec![(
                    name_a,
                    Effect::Update {
                        set: vec![
                            ("v".into(), json!({"N": i.to_string()})),
                            ("a".into(), a),
                            ("expires".into(), json!({"N": EXPIRES})),
                        ],
                        remove_g,
                    },
                )],
            }
        }
        7 => Operation {
            name: "DeleteItem",
            request: json!({"TableName": TABLE, "Key": key_a}),
            effects: vec![(name_a, Effect::Delete)],
        },
        _ => {
            // A transaction: put one item and delete another, atomically.
            let mut other = rng.random_range(0..keys);
            while key(other).0 == name_a {
                other = (other + 1) % keys;
            }
            let (name_b, key_b) = key(other);
            let item = item(&key_a, i, &mut rng);
            Operation {
                name: "TransactWriteItems",
                request: json!({"TransactItems": [
                    {"Put": {"TableName": TABLE, "Item": item}},
                    {"Delete": {"TableName": TABLE, "Key": key_b}}
                ]}),
                effects: vec![(name_a, Effect::Put(item)), (name_b, Effect::Delete)],
            }
        }
    }
}

/// The items the workload's writes make, key by key, and the stream records they make.
#[derive(Debug, Clone, Default)]
struct Model {
    items: BTreeMap<String, serde_json::Map<String, Value>>,
}

impl Model {
    /// Applies an operation; returns its stream records, (event, key), in action order.
    fn apply(&mut self, operation: &Operation) -> Vec<(EventName, String)> {
        let mut records = Vec::new();
        for (name, effect) in &operation.effects {
            let existed = self.items.contains_key(name);
            match effect {
                Effect::Put(item) => {
                    self.items
                        .insert(name.clone(), item.as_object().cloned().unwrap_or_default());
                    records.push((
                        if existed {
                            EventName::Modify
                        } else {
                            EventName::Insert
                        },
                        name.clone(),
                    ));
                }
                Effect::Update { set, remove_g } => {
                    let (pk, sk) = name.split_once('/').unwrap_or_default();
                    let entry = self.items.entry(name.clone()).or_insert_with(|| {
                        let mut item = serde_json::Map::new();
                        item.insert("pk".into(), json!({"S": pk}));
                        item.insert("sk".into(), json!({"S": sk}));
                        item
                    });
                    for (attribute, value) in set {
                        entry.insert(attribute.clone(), value.clone());
                    }
                    if *remove_g {
                        entry.remove("g");
                    }
                    records.push((
                        if existed {
                            EventName::Modify
                        } else {
                            EventName::Insert
                        },
                        name.clone(),
                    ));
                }
                Effect::Delete => {
                    if self.items.remove(name).is_some() {
                        records.push((EventName::Remove, name.clone()));
                    }
                }
            }
        }
        records
    }
}

/// The table's items as the model holds them.
fn stored_items(db: &Database) -> Result<BTreeMap<String, serde_json::Map<String, Value>>, String> {
    let mut items = BTreeMap::new();
    let mut start: Option<Value> = None;
    loop {
        let mut request = json!({"TableName": TABLE, "ConsistentRead": true});
        if let Some(start) = start.take() {
            request["ExclusiveStartKey"] = start;
        }
        let page = db
            .execute("Scan", request)
            .map_err(|e| format!("Scan: {}", e.message))?;
        for item in page["Items"].as_array().into_iter().flatten() {
            let name = format!(
                "{}/{}",
                item["pk"]["S"].as_str().unwrap_or_default(),
                item["sk"]["S"].as_str().unwrap_or_default()
            );
            items.insert(name, item.as_object().cloned().unwrap_or_default());
        }
        match page.get("LastEvaluatedKey") {
            Some(key) => start = Some(key.clone()),
            None => return Ok(items),
        }
    }
}

/// The whole stream, as (event, key).
fn stream_records(db: &Database) -> Result<Vec<(EventName, String)>, String> {
    let mut reader = db
        .stream_reader(TABLE, StreamStart::TrimHorizon)
        .map_err(|e| format!("stream: {}", e.message))?;
    let mut records = Vec::new();
    loop {
        let batch = reader
            .read(STREAM_READ_BATCH)
            .map_err(|e| format!("stream: {}", e.message))?;
        if batch.is_empty() {
            return Ok(records);
        }
        for record in batch {
            let pk = record
                .keys
                .get("pk")
                .map(|v| v.to_json()["S"].as_str().unwrap_or_default().to_string());
            let sk = record
                .keys
                .get("sk")
                .map(|v| v.to_json()["S"].as_str().unwrap_or_default().to_string());
            records.push((
                record.event_name,
                format!("{}/{}", pk.unwrap_or_default(), sk.unwrap_or_default()),
            ));
        }
    }
}

/// What the checker carries from cycle to cycle: the operations that survived so far.
struct History {
    seed: u64,
    /// Operations 0..applied are in the database.
    applied: u64,
    model: Model,
    /// The stream records of operations 0..applied, per operation.
    records: Vec<Vec<(EventName, String)>>,
}

impl History {
    fn new(seed: u64) -> History {
        History {
            seed,
            applied: 0,
            model: Model::default(),
            records: Vec::new(),
        }
    }

    /// Checks the database after a crash in which operations `applied..acknowledged` were
    /// acknowledged and one more may have been in flight. `lossy`: acknowledged writes may
    /// be lost (unsynced at a power loss). Moves `applied` to what survived.
    fn check(
        &mut self,
        db: &Database,
        acknowledged: u64,
        lossy: bool,
        report: &mut CrashTestReport,
    ) {
        let stored = match stored_items(db) {
            Ok(stored) => stored,
            Err(e) => return report.violate("unreadable", e),
        };
        // Find the prefix the database holds: operations 0..m for m in applied..=acknowledged + 1.
        let mut model = self.model.clone();
        let mut records = self.records.clone();
        let mut found = None;
        let mut m = self.applied;
        loop {
            if model.items == stored {
                found = Some((m, model.clone(), records.clone()));
                // A later prefix may match too (a write that changed nothing visible twice);
                // keep looking up to the in-flight operation and take the longest.
            }
            if m > acknowledged {
                break;
            }
            let operation = operation(self.seed, m);
            records.push(model.apply(&operation));
            m += 1;
        }
        let Some((m, model, records)) = found else {
            report.violate(
                "not a prefix of the writes",
                format!(
                    "the table matches no prefix of operations {}..={} (acknowledged up to {})",
                    self.applied,
                    acknowledged + 1,
                    acknowledged
                ),
            );
            return;
        };
        report.acknowledged_checked += acknowledged.saturating_sub(self.applied);
        if m < acknowledged {
            if lossy {
                report.acknowledged_lost_allowed += acknowledged - m;
            } else {
                report.violate(
                    "acknowledged write lost",
                    format!("{} acknowledged writes, {} survived", acknowledged, m),
                );
            }
        }
        match db.check() {
            Ok(check) => {
                for problem in check.problems {
                    report.violate("index, collection or statistics", problem);
                }
            }
            Err(e) => report.violate("check failed", e.to_string()),
        }
        match stream_records(db) {
            Ok(stream) => {
                let expected: Vec<(EventName, String)> =
                    records.iter().flatten().cloned().collect();
                if stream.len() != expected.len() {
                    report.violate(
                        "stream",
                        format!("{} records, {} changes", stream.len(), expected.len()),
                    );
                } else if let Some(at) = (0..stream.len()).find(|&i| stream[i] != expected[i]) {
                    report.violate(
                        "stream",
                        format!(
                            "record {at} is {:?}, the change was {:?}",
                            stream[at], expected[at]
                        ),
                    );
                }
            }
            Err(e) => report.violate("stream", e),
        }
        self.applied = m;
        self.model = model;
        self.records = records;
    }
}

/// Runs operations `from..` on `db`, calling `acknowledged(i + 1)` after each, until one fails
/// or `limit` is reached; returns how many were acknowledged in all.
fn run_operations(
    db: &Database,
    seed: u64,
    from: u64,
    limit: u64,
    mut acknowledged: impl FnMut(u64),
) -> u64 {
    let mut done = from;
    while done < from + limit {
        let operation = operation(seed, done);
        if db.execute(operation.name, operation.request).is_err() {
            break;
        }
        done += 1;
        acknowledged(done);
    }
    done
}

/// The child of kill mode: runs the workload from operation `from` on `data_dir`, printing
/// `ack N` after each acknowledged write, until it is killed.
pub fn run_child(
    data_dir: &Path,
    durability: Durability,
    seed: u64,
    from: u64,
) -> Result<(), String> {
    use std::io::Write;
    let db = Database::open(data_dir, options(durability))
        .map_err(|e| format!("cannot open {}: {e}", data_dir.display()))?;
    create_table(&db)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    run_operations(&db, seed, from, u64::MAX / 2, |n| {
        let _ = writeln!(out, "ack {n}");
        let _ = out.flush();
    });
    Err("a write failed".to_string())
}

/// Runs the crash test; `progress(cycle)` is called after each cycle.
pub fn run(
    config: &CrashTestConfig,
    mut progress: impl FnMut(u64, &CrashTestReport),
) -> Result<CrashTestReport, String> {
    let mut report = CrashTestReport::default();
    let mut history = History::new(config.seed);
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(config.seed);
    let lossy_power =
        config.mode == CrashMode::PowerLoss && !matches!(config.durability, Durability::Sync);
    let temporary;
    let data_dir = match &config.data_dir {
        Some(dir) => dir.clone(),
        None => {
            temporary = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
            temporary.path().join("data")
        }
    };
    let sim = shoal_vfs::sim::SimFs::new();
    let sim_dir = Path::new("/shoal-crash-test");
    for cycle in 0..config.cycles.max(1) {
        if config
            .seconds
            .is_some_and(|s| started.elapsed().as_secs_f64() >= s)
        {
            break;
        }
        let acknowledged = match config.mode {
            CrashMode::Kill => kill_cycle(config, &data_dir, history.applied, &mut rng)?,
            CrashMode::PowerLoss => {
                let db = Database::open_with_fs(sim.fs(), sim_dir, options(config.durability))
                    .map_err(|e| format!("open: {e}"))?;
                create_table(&db)?;
                // The disk freezes after a random number of mutations: the write then in
                // flight may be torn; everything after it fails.
                sim.freeze_after(Some(rng.random_range(0..2_000)));
                let limit = rng.random_range(1..CYCLE_OPERATIONS_MAX);
                let done = run_operations(&db, config.seed, history.applied, limit, |_| {});
                sim.power_loss(rng.random());
                drop(db);
                sim.freeze_after(None);
                done
            }
        };
        let reopened = Instant::now();
        let db = match config.mode {
            CrashMode::Kill => Database::open(&data_dir, options(config.durability)),
            CrashMode::PowerLoss => {
                Database::open_with_fs(sim.fs(), sim_dir, options(config.durability))
            }
        };
        let db = match db {
            Ok(db) => db,
            Err(e) => {
                report.violate("recovery failed", e.to_string());
                break;
            }
        };
        report
            .recovery_ms
            .push(reopened.elapsed().as_secs_f64() * 1000.0);
        if db.table(TABLE).is_ok() {
            history.check(&db, acknowledged, lossy_power, &mut report);
        }
        report.cycles = cycle + 1;
        progress(cycle + 1, &report);
        if report.violation_count() > 0 {
            break;
        }
    }
    Ok(report)
}

/// One kill cycle: the child runs from operation `from` and is killed at a random moment;
/// returns the writes it acknowledged (in all, from 0).
fn kill_cycle(
    config: &CrashTestConfig,
    data_dir: &Path,
    from: u64,
    rng: &mut StdRng,
) -> Result<u64, String> {
    let durability = match config.durability {
        Durability::Sync => "sync".to_string(),
        Durability::None => "none".to_string(),
        Durability::Interval(interval) => format!("interval:{}", interval.as_millis()),
    };
    let mut child = Command::new(&config.program)
        .arg("crash-test-child")
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--durability", &durability])
        .args(["--seed", &config.seed.to_string()])
        .args(["--from", &from.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", config.program.display()))?;
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let acknowledged = Arc::new(std::sync::atomic::AtomicU64::new(from));
    let ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let acknowledged = Arc::clone(&acknowledged);
        let ready = Arc::clone(&ready);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line == "ready" {
                    ready.store(true, std::sync::atomic::Ordering::SeqCst);
                } else if let Some(n) = line.strip_prefix("ack ").and_then(|n| n.parse().ok()) {
                    acknowledged.store(n, std::sync::atomic::Ordering::SeqCst);
                }
            }
        })
    };
    let waited = Instant::now();
    while !ready.load(std::sync::atomic::Ordering::SeqCst) {
        if waited.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            return Err("the child did not start within 30 s".into());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("the child exited: {status}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(rng.random_range(20..400)));
    // SIGKILL: no destructor, no flush, no sync runs in the child.
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    Ok(acknowledged.load(std::sync::atomic::Ordering::SeqCst))
}

#[derive(Args)]
pub struct CrashTestArgs {
    /// kill: SIGKILL a child process writing to real files; power-loss: cut the power of
    /// the simulated disk in this process (unsynced data lost, the last write torn).
    #[arg(long, default_value = "kill", value_parser = ["kill", "power-loss"])]
    mode: String,
    /// sync, none, or interval:MS.
    #[arg(long, default_value = "sync")]
    durability: String,
    /// Crash and recover this many times.
    #[arg(long, default_value_t = 20)]
    cycles: u64,
    /// Stop after this many seconds even if cycles remain.
    #[arg(long)]
    seconds: Option<f64>,
    /// The workload's seed (the same seed makes the same writes).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Kill mode: the data directory (default: a temporary one, removed afterwards).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `shoal crash-test`: runs the crash test with a progress bar on a terminal, prints its
/// report, and fails on any violation.
pub fn command(args: CrashTestArgs) -> Result<(), String> {
    let CrashTestArgs {
        mode,
        durability,
        cycles,
        seconds,
        seed,
        data_dir,
        json,
    } = args;
    let config = CrashTestConfig {
        mode: if mode == "kill" {
            CrashMode::Kill
        } else {
            CrashMode::PowerLoss
        },
        durability: parse_durability(&durability)?,
        cycles,
        seconds,
        seed,
        data_dir,
        program: std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?,
    };
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(cycles)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} cycles {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let report = run(&config, |cycle, report| {
        bar.set_position(cycle);
        bar.set_message(format!(
            "{} acknowledged writes checked, {} violations",
            report.acknowledged_checked,
            report.violation_count()
        ));
    })?;
    bar.finish_and_clear();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", report.render());
    }
    if report.violation_count() > 0 {
        return Err(format!("{} violation(s)", report.violation_count()));
    }
    Ok(())
}

#[derive(Args)]
pub struct CrashTestChildArgs {
    #[arg(long)]
    data_dir: PathBuf,
    #[arg(long)]
    durability: String,
    #[arg(long)]
    seed: u64,
    #[arg(long)]
    from: u64,
}

/// `shoal crash-test-child`: [`run_child`] with the command line's arguments.
pub fn child_command(args: CrashTestChildArgs) -> Result<(), String> {
    parse_durability(&args.durability)
        .and_then(|durability| run_child(&args.data_dir, durability, args.seed, args.from))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_a_function_of_seed_and_index() {
        let a = operation(7, 42);
        let b = operation(7, 42);
        assert_eq!(a.request, b.request);
        assert_ne!(operation(7, 43).request, a.request);
    }

    #[test]
    fn the_checker_finds_a_lost_write_and_a_stray_one() {
        let db = Database::open_in_memory(options(Durability::Sync)).unwrap();
        create_table(&db).unwrap();
        let done = run_operations(&db, 5, 0, 60, |_| {});
        assert_eq!(done, 60);
        let mut clean = CrashTestReport::default();
        History::new(5).check(&db, 60, false, &mut clean);
        assert_eq!(clean.violation_count(), 0, "{}", clean.render());
        // A write the workload never made: no prefix matches any more.
        db.execute(
            "PutItem",
            json!({"TableName": TABLE, "Item": {"pk": {"S": "p0"}, "sk": {"S": "stray"}}}),
        )
        .unwrap();
        let mut report = CrashTestReport::default();
        History::new(5).check(&db, 60, false, &mut report);
        assert!(
            report.violations.contains_key("not a prefix of the writes"),
            "{}",
            report.render()
        );
    }

    #[test]
    fn power_loss_cycles_in_sync_mode_keep_everything_acknowledged() {
        let config = CrashTestConfig {
            mode: CrashMode::PowerLoss,
            durability: Durability::Sync,
            cycles: 4,
            seconds: None,
            seed: 3,
            data_dir: None,
            program: PathBuf::new(),
        };
        let report = run(&config, |_, _| {}).unwrap();
        assert_eq!(report.cycles, 4);
        assert_eq!(report.violation_count(), 0, "{}", report.render());
        assert!(report.acknowledged_checked > 0);
    }
}
