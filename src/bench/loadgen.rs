//! `shoal bench`: a load generator for any DynamoDB endpoint (Shoal, DynamoDB Local,
//! Dynoxide, …) on loopback.
//!
//! It creates a table with 2 LSIs (INCLUDE) and 2 GSIs (ALL, KEYS_ONLY), loads ~1 KB items
//! over many partition keys, then runs each workload — PutItem, GetItem, Query on an LSI,
//! Query on a GSI — from `connections` keep-alive HTTP/1.1 connections for a fixed duration,
//! and reports operations per second, p50/p99 latency and, when given the server's pid,
//! the server's CPU time per operation (from /proc/<pid>/stat).
//!
//! Requests go through [`crate::client`], written by hand so the client costs little CPU and
//! adds no dependency; every response is checked for status 200.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};

use crate::client::{Connection, DYNAMODB_TARGET_PREFIX};

/// Table the benchmark creates (and deletes first if it exists).
pub const TABLE_NAME: &str = "ShoalLoadBench";
/// Connections accepted at most.
pub const CONNECTIONS_MAX: usize = 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// `host:port` of the endpoint (loopback).
    pub address: String,
    pub connections: usize,
    pub duration: Duration,
    /// Items loaded before the timed runs.
    pub items: u64,
    /// Partition keys the items spread over.
    pub partitions: u64,
    /// The server's pid, to report its CPU time per operation.
    pub server_pid: Option<u32>,
    /// The workloads to run, a subset of [`WORKLOADS`] in any order (all when empty).
    pub workloads: Vec<String>,
    /// A fixed offered rate in operations per second across all connections, instead of
    /// each connection sending its next request as soon as the last is answered: two
    /// servers loaded at one rate are compared at the same cost of the client's wake-ups.
    pub rate_per_second: Option<u64>,
}

/// The result of one workload.
#[derive(Debug, Clone)]
pub struct WorkloadResult {
    pub name: &'static str,
    pub operations: u64,
    pub errors: u64,
    pub ops_per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
    /// Server CPU (user + system) per operation, if the pid was given.
    pub server_cpu_per_op: Option<Duration>,
    /// This load generator's own CPU per operation: with client and server on one machine,
    /// throughput is bounded by the two together.
    pub client_cpu_per_op: Option<Duration>,
    /// The rate offered (`--rate`), to set beside what was achieved.
    pub offered_ops_per_second: Option<u64>,
}

/// Below this share of the offered rate, the report says the server did not keep up.
const KEPT_UP_SHARE: f64 = 0.95;

/// When one connection sends under a fixed offered rate: the rate is split evenly over the
/// connections and their schedules interleave, so together they send one request every
/// `1 / rate` seconds. The schedule is absolute: a late request (a slow answer, a coarse
/// timer) is sent at once and the next keeps its time, so the offered rate holds on
/// average and what the server cannot take shows as a lower achieved rate.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    first_send: Instant,
    interval: Duration,
}

impl Pacing {
    pub fn new(
        started: Instant,
        rate_per_second: u64,
        connections: usize,
        connection_index: usize,
    ) -> Pacing {
        let rate = rate_per_second.max(1) as f64;
        Pacing {
            first_send: started + Duration::from_secs_f64(connection_index as f64 / rate),
            interval: Duration::from_secs_f64(connections.max(1) as f64 / rate),
        }
    }

    /// When this connection's request number `sent` (from 0) is due.
    pub fn due(&self, sent: u64) -> Instant {
        self.first_send + self.interval.mul_f64(sent as f64)
    }
}

fn item(i: u64, partitions: u64) -> Value {
    json!({
        "pk": {"S": format!("p{:06}", i % partitions)},
        "sk": {"S": format!("s{i:09}")},
        "l1": {"S": format!("l{:04}", i % 97)},
        "l2": {"N": (i % 1000).to_string()},
        "g1": {"S": format!("g{:04}", i % 1009)},
        "g2": {"S": format!("h{:05}", i % 4999)},
        "inc": {"N": i.to_string()},
        "payload": {"S": "x".repeat(900)}
    })
}

fn create_table_request() -> Value {
    let index = |name: &str, hash: &str, range: &str, projection: Value| {
        json!({"IndexName": name, "KeySchema": [
            {"AttributeName": hash, "KeyType": "HASH"}, {"AttributeName": range, "KeyType": "RANGE"}
        ], "Projection": projection})
    };
    let include = json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": ["inc"]});
    json!({
        "TableName": TABLE_NAME,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "l1", "AttributeType": "S"}, {"AttributeName": "l2", "AttributeType": "N"},
            {"AttributeName": "g1", "AttributeType": "S"}, {"AttributeName": "g2", "AttributeType": "S"}
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "LocalSecondaryIndexes": [index("ByL1", "pk", "l1", include.clone()), index("ByL2", "pk", "l2", include)],
        "GlobalSecondaryIndexes": [
            index("ByG1", "g1", "sk", json!({"ProjectionType": "ALL"})),
            index("ByG2", "g2", "sk", json!({"ProjectionType": "KEYS_ONLY"}))
        ],
        "BillingMode": "PAY_PER_REQUEST"
    })
}

/// Which of a workload's distinct requests operation number `n` sends: an item number (from
/// 0 to `items`), or for Scan a segment.
fn request_index(workload: &str, n: u64, config: &LoadConfig) -> u64 {
    let distinct = distinct_requests(workload, config);
    if workload == "Scan" {
        n % distinct
    } else {
        // A cheap deterministic scramble so consecutive requests hit different keys.
        n.wrapping_mul(0x9E37_79B9_7F4A_7C15) % distinct
    }
}

/// How many distinct requests a workload sends ([`request_index`]'s range).
fn distinct_requests(workload: &str, config: &LoadConfig) -> u64 {
    if workload == "Scan" {
        SCAN_SEGMENTS
    } else {
        config.items.max(1)
    }
}

/// A workload's request number `i` of [`distinct_requests`].
fn request(workload: &str, i: u64, config: &LoadConfig) -> (&'static str, Value) {
    match workload {
        "PutItem" => (
            "PutItem",
            json!({"TableName": TABLE_NAME, "Item": item(i, config.partitions)}),
        ),
        "GetItem" => (
            "GetItem",
            json!({"TableName": TABLE_NAME, "Key": {
                "pk": {"S": format!("p{:06}", i % config.partitions)}, "sk": {"S": format!("s{i:09}")}
            }}),
        ),
        "QueryLSI" => (
            "Query",
            json!({"TableName": TABLE_NAME, "IndexName": "ByL1",
                "KeyConditionExpression": "pk = :p", "Limit": 50,
                "ExpressionAttributeValues": {":p": {"S": format!("p{:06}", i % config.partitions)}}}),
        ),
        "QueryGSI" => (
            "Query",
            json!({"TableName": TABLE_NAME, "IndexName": "ByG1",
                "KeyConditionExpression": "g1 = :g", "Limit": 50,
                "ExpressionAttributeValues": {":g": {"S": format!("g{:04}", i % 1009)}}}),
        ),
        "BatchGetItem" => {
            let keys: Vec<Value> = (0..batch_items(config))
                .map(|k| {
                    let i = (i + k) % config.items.max(1);
                    json!({"pk": {"S": format!("p{:06}", i % config.partitions)},
                        "sk": {"S": format!("s{i:09}")}})
                })
                .collect();
            (
                "BatchGetItem",
                json!({"RequestItems": {TABLE_NAME: {"Keys": keys}}}),
            )
        }
        "BatchWriteItem" => {
            let puts: Vec<Value> = (0..batch_items(config))
                .map(|k| {
                    let i = (i + k) % config.items.max(1);
                    json!({"PutRequest": {"Item": item(i, config.partitions)}})
                })
                .collect();
            (
                "BatchWriteItem",
                json!({"RequestItems": {TABLE_NAME: puts}}),
            )
        }
        // Scan: the first page (Limit 50) of segment `i`.
        _ => (
            "Scan",
            json!({"TableName": TABLE_NAME, "Limit": 50,
                "Segment": i, "TotalSegments": SCAN_SEGMENTS}),
        ),
    }
}

/// Keys of a BatchGetItem, and puts of a BatchWriteItem (DynamoDB's limit for the latter).
const BATCH_ITEMS: u64 = 25;
/// Items per batch: [`BATCH_ITEMS`], or fewer when fewer are loaded (a batch may not name a
/// key twice). A batch takes items `i..i + n` (wrapping), which spread over the partitions
/// since an item's partition is its number modulo their count.
fn batch_items(config: &LoadConfig) -> u64 {
    BATCH_ITEMS.min(config.items.max(1))
}

/// Segments the Scan workload's pages are drawn from.
const SCAN_SEGMENTS: u64 = 16;

/// The most bytes of request bodies rendered ahead of a timed run; past it (BatchWriteItem
/// over many items) the rest are rendered as each is sent.
const RENDERED_BYTES_MAX: usize = 64 << 20;

/// A workload's request bodies as JSON text, rendered before its timed run: building and
/// serialising a JSON tree for each call cost the client CPU that the server under test
/// shares the machine with (docs/PERFORMANCE.md, "Over HTTP").
struct RenderedRequests {
    operation: &'static str,
    /// The first of the distinct requests, by [`request_index`], as many as the budget holds.
    bodies: Vec<Bytes>,
}

impl RenderedRequests {
    /// Renders the distinct requests of `workload` in order while they fit in `bytes_max`.
    fn render(workload: &str, config: &LoadConfig, bytes_max: usize) -> RenderedRequests {
        let operation = request(workload, 0, config).0;
        let mut bodies = Vec::new();
        let mut bytes = 0usize;
        for i in 0..distinct_requests(workload, config) {
            let body = Bytes::from(request(workload, i, config).1.to_string());
            bytes += body.len();
            if bytes > bytes_max {
                break;
            }
            bodies.push(body);
        }
        RenderedRequests { operation, bodies }
    }

    /// The body of operation number `n`.
    fn body(&self, workload: &str, n: u64, config: &LoadConfig) -> Bytes {
        let i = request_index(workload, n, config);
        match self.bodies.get(i as usize) {
            Some(body) => body.clone(),
            None => Bytes::from(request(workload, i, config).1.to_string()),
        }
    }
}

/// User + system CPU time of a process, from /proc/<pid>/stat.
pub fn process_cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no memory effects.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = u64::try_from(ticks).ok().filter(|t| *t > 0)?;
    Some(Duration::from_micros((utime + stime) * 1_000_000 / ticks))
}

fn percentile(sorted: &[u32], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    Duration::from_micros(u64::from(sorted[index.min(sorted.len() - 1)]))
}

/// Creates the table and loads the items.
pub async fn prepare(config: &LoadConfig) -> Result<(), String> {
    let mut connection = Connection::open(&config.address).await?;
    // A leftover table from an earlier run is dropped first; "not found" is fine.
    let _ = connection
        .call("DeleteTable", &json!({"TableName": TABLE_NAME}))
        .await?;
    connection
        .expect_ok("CreateTable", &create_table_request())
        .await?;
    let config = Arc::new(config.clone());
    let loaders = config.connections.clamp(1, 16) as u64;
    let loaded = Arc::new(AtomicU64::new(0));
    let progress = LoadProgress::start(config.items);
    let mut tasks = Vec::new();
    for loader in 0..loaders {
        let config = Arc::clone(&config);
        let loaded = Arc::clone(&loaded);
        tasks.push(tokio::spawn(async move {
            let mut connection = Connection::open(&config.address).await?;
            let mut i = loader;
            while i < config.items {
                connection
                    .expect_ok(
                        "PutItem",
                        &json!({"TableName": TABLE_NAME, "Item": item(i, config.partitions)}),
                    )
                    .await?;
                loaded.fetch_add(1, Ordering::Relaxed);
                i += loaders;
            }
            Ok::<(), String>(())
        }));
    }
    let ticker = {
        let loaded = Arc::clone(&loaded);
        let progress = progress.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LOAD_PROGRESS_TICK).await;
                progress.show(loaded.load(Ordering::Relaxed));
            }
        })
    };
    let mut outcome = Ok(());
    for task in tasks {
        if let Err(error) = task.await.map_err(|e| e.to_string()).and_then(|r| r) {
            outcome = outcome.and(Err(error));
        }
    }
    ticker.abort();
    progress.finish(loaded.load(Ordering::Relaxed));
    outcome
}

/// How often the load phase's progress is redrawn.
const LOAD_PROGRESS_TICK: Duration = Duration::from_millis(200);
/// How often it is printed as a plain line when stderr is not a terminal.
const LOAD_PROGRESS_LINE_INTERVAL: Duration = Duration::from_secs(5);

/// The load phase's progress on stderr: a bar on a terminal, a plain line every few seconds
/// otherwise (a CI log).
#[derive(Clone)]
struct LoadProgress {
    bar: Option<indicatif::ProgressBar>,
    total: u64,
    started: Instant,
    /// When the last plain line was printed.
    last_line: Arc<Mutex<Instant>>,
}

impl LoadProgress {
    fn start(total: u64) -> LoadProgress {
        let bar = std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "loading {bar:30} {human_pos}/{human_len} items, {per_sec}, {eta} left",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        let now = Instant::now();
        LoadProgress {
            bar,
            total,
            started: now,
            last_line: Arc::new(Mutex::new(now)),
        }
    }

    fn show(&self, loaded: u64) {
        match &self.bar {
            Some(bar) => bar.set_position(loaded),
            None => {
                let Ok(mut last) = self.last_line.lock() else {
                    return;
                };
                if last.elapsed() >= LOAD_PROGRESS_LINE_INTERVAL {
                    *last = Instant::now();
                    eprintln!("{}", self.line(loaded));
                }
            }
        }
    }

    fn finish(&self, loaded: u64) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        eprintln!("{}", self.line(loaded));
    }

    fn line(&self, loaded: u64) -> String {
        let seconds = self.started.elapsed().as_secs_f64();
        format!(
            "loaded {loaded} of {} items in {seconds:.1} s ({:.0} items/s)",
            self.total,
            loaded as f64 / seconds.max(1e-9)
        )
    }
}

/// Runs one workload for `config.duration` from `config.connections` connections.
pub async fn run_workload(
    name: &'static str,
    config: &LoadConfig,
) -> Result<WorkloadResult, String> {
    let connections = config.connections.clamp(1, CONNECTIONS_MAX);
    let config = Arc::new(config.clone());
    let requests = Arc::new(RenderedRequests::render(name, &config, RENDERED_BYTES_MAX));
    let cpu_before = config.server_pid.and_then(process_cpu_time);
    let client_cpu_before = process_cpu_time(std::process::id());
    let started = Instant::now();
    let deadline = started + config.duration;
    let mut tasks = Vec::new();
    for connection_index in 0..connections {
        let config = Arc::clone(&config);
        let requests = Arc::clone(&requests);
        let pacing = config
            .rate_per_second
            .map(|rate| Pacing::new(started, rate, connections, connection_index));
        tasks.push(tokio::spawn(async move {
            let mut connection = Connection::open(&config.address).await?;
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            let mut n = connection_index as u64;
            let mut sent = 0u64;
            while Instant::now() < deadline {
                if let Some(pacing) = &pacing {
                    let due = pacing.due(sent);
                    if due >= deadline {
                        break;
                    }
                    tokio::time::sleep_until(due.into()).await;
                    sent += 1;
                }
                let body = requests.body(name, n, &config);
                let sent = Instant::now();
                let answer = connection
                    .call_text(DYNAMODB_TARGET_PREFIX, requests.operation, &body)
                    .await;
                match answer {
                    Ok((200, _)) => {
                        let micros = sent.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                        latencies.push(micros);
                    }
                    Ok(_) => errors += 1,
                    Err(error) => return Err(error),
                }
                n += connections as u64;
            }
            Ok::<(Vec<u32>, u64), String>((latencies, errors))
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (mut l, e) = task.await.map_err(|e| e.to_string())??;
        latencies.append(&mut l);
        errors += e;
    }
    let elapsed = started.elapsed();
    let cpu_after = config.server_pid.and_then(process_cpu_time);
    let client_cpu_after = process_cpu_time(std::process::id());
    latencies.sort_unstable();
    let operations = latencies.len() as u64;
    let per_op = |before: Option<Duration>, after: Option<Duration>| match (before, after) {
        (Some(before), Some(after)) if operations > 0 => {
            Some((after.saturating_sub(before)) / operations.min(u64::from(u32::MAX)) as u32)
        }
        _ => None,
    };
    let server_cpu_per_op = per_op(cpu_before, cpu_after);
    let client_cpu_per_op = per_op(client_cpu_before, client_cpu_after);
    Ok(WorkloadResult {
        name,
        operations,
        errors,
        ops_per_second: operations as f64 / elapsed.as_secs_f64(),
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        server_cpu_per_op,
        client_cpu_per_op,
        offered_ops_per_second: config.rate_per_second,
    })
}

/// The workloads `shoal bench` runs, in order.
pub const WORKLOADS: [&str; 7] = [
    "PutItem",
    "GetItem",
    "QueryLSI",
    "QueryGSI",
    "BatchGetItem",
    "BatchWriteItem",
    "Scan",
];

/// Prepares the table and runs every workload.
pub async fn run(config: &LoadConfig) -> Result<Vec<WorkloadResult>, String> {
    if let Some(unknown) = config
        .workloads
        .iter()
        .find(|name| !WORKLOADS.contains(&name.as_str()))
    {
        return Err(format!(
            "unknown workload {unknown}; the workloads are {}",
            WORKLOADS.join(", ")
        ));
    }
    if config.rate_per_second == Some(0) {
        return Err("--rate must be at least 1 operation per second".to_string());
    }
    prepare(config).await?;
    let mut results = Vec::new();
    let selected = WORKLOADS
        .into_iter()
        .filter(|name| config.workloads.is_empty() || config.workloads.iter().any(|w| w == name));
    for name in selected {
        results.push(run_workload(name, config).await?);
    }
    Ok(results)
}

/// Formats results as a Markdown table.
pub fn report(results: &[WorkloadResult]) -> String {
    let mut out = String::from("| workload | ops/s | p50 | p99 | server CPU per op | client CPU per op | errors |\n|---|---|---|---|---|---|---|\n");
    let micros = |cpu: Option<Duration>| {
        cpu.map_or_else(
            || "n/a".to_string(),
            |d| format!("{:.1} µs", d.as_secs_f64() * 1e6),
        )
    };
    for r in results {
        out.push_str(&format!(
            "| {} | {:.0} | {:.0} µs | {:.0} µs | {} | {} | {} |\n",
            r.name,
            r.ops_per_second,
            r.p50.as_secs_f64() * 1e6,
            r.p99.as_secs_f64() * 1e6,
            micros(r.server_cpu_per_op),
            micros(r.client_cpu_per_op),
            r.errors
        ));
    }
    for r in results {
        let Some(offered) = r.offered_ops_per_second else {
            continue;
        };
        if r.ops_per_second < offered as f64 * KEPT_UP_SHARE {
            out.push_str(&format!(
                "{}: the server kept up with {:.0} of the {offered} ops/s offered\n",
                r.name, r.ops_per_second
            ));
        } else {
            out.push_str(&format!("{}: {offered} ops/s offered\n", r.name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_progress_line_says_how_many_items_of_how_many_and_how_fast() {
        let progress = LoadProgress {
            bar: None,
            total: 20_000,
            started: Instant::now() - Duration::from_secs(2),
            last_line: Arc::new(Mutex::new(Instant::now())),
        };
        let line = progress.line(5_000);
        assert!(
            line.starts_with("loaded 5000 of 20000 items in 2.0 s ("),
            "{line}"
        );
        assert!(line.ends_with(" items/s)"), "{line}");
    }

    #[test]
    fn paced_connections_interleave_into_one_request_every_interval_of_the_rate() {
        let started = Instant::now();
        let connections = 4;
        let pacings: Vec<Pacing> = (0..connections)
            .map(|index| Pacing::new(started, 1_000, connections, index))
            .collect();
        let mut due: Vec<Duration> = (0..250)
            .flat_map(|sent| pacings.iter().map(move |p| p.due(sent) - started))
            .collect();
        due.sort();
        // 1,000 requests in the first second, one every millisecond, none sent twice.
        assert_eq!(due.len(), 1_000);
        for (k, at) in due.iter().enumerate() {
            let expected = Duration::from_millis(k as u64);
            let off = at.abs_diff(expected);
            assert!(off < Duration::from_micros(1), "request {k} due at {at:?}");
        }
    }

    fn config(items: u64, partitions: u64) -> LoadConfig {
        LoadConfig {
            address: "127.0.0.1:1".to_string(),
            connections: 4,
            duration: Duration::from_secs(1),
            items,
            partitions,
            server_pid: None,
            workloads: Vec::new(),
            rate_per_second: None,
        }
    }

    #[test]
    fn rendered_bodies_are_the_requests_each_operation_number_sends() {
        let config = config(300, 7);
        for workload in WORKLOADS {
            let rendered = RenderedRequests::render(workload, &config, RENDERED_BYTES_MAX);
            let rendered_count = rendered.bodies.len() as u64;
            assert_eq!(
                rendered_count,
                distinct_requests(workload, &config),
                "{workload}"
            );
            for n in 0..1_000 {
                let (operation, body) =
                    request(workload, request_index(workload, n, &config), &config);
                assert_eq!(rendered.operation, operation, "{workload}");
                assert_eq!(
                    rendered.body(workload, n, &config),
                    body.to_string().as_bytes(),
                    "{workload} operation {n}"
                );
            }
        }
        // Scan cycles through its 16 segments; the keyed workloads spread over the items.
        let scan = RenderedRequests::render("Scan", &config, RENDERED_BYTES_MAX);
        assert_eq!(
            scan.body("Scan", 0, &config),
            scan.body("Scan", 16, &config)
        );
        assert_ne!(scan.body("Scan", 0, &config), scan.body("Scan", 1, &config));
        let gets = RenderedRequests::render("GetItem", &config, RENDERED_BYTES_MAX);
        assert_ne!(
            gets.body("GetItem", 0, &config),
            gets.body("GetItem", 1, &config)
        );
    }

    #[test]
    fn bodies_over_the_budget_are_rendered_as_each_is_sent() {
        let config = config(300, 7);
        let whole = RenderedRequests::render("BatchWriteItem", &config, RENDERED_BYTES_MAX);
        assert_eq!(whole.bodies.len(), 300);
        let total: usize = whole.bodies.iter().map(Bytes::len).sum();
        let within = RenderedRequests::render("BatchWriteItem", &config, total);
        assert_eq!(within.bodies.len(), 300);
        // A budget a byte short holds every body but the last, which is rendered when sent.
        let over = RenderedRequests::render("BatchWriteItem", &config, total - 1);
        assert_eq!(over.bodies.len(), 299);
        let half = RenderedRequests::render("BatchWriteItem", &config, total / 2);
        assert!(half.bodies.iter().map(Bytes::len).sum::<usize>() <= total / 2);
        assert!(half.bodies.len() < 300);
        for n in 0..1_000 {
            let expected = whole.body("BatchWriteItem", n, &config);
            assert_eq!(over.body("BatchWriteItem", n, &config), expected, "{n}");
            assert_eq!(half.body("BatchWriteItem", n, &config), expected, "{n}");
        }
        assert_eq!(over.operation, "BatchWriteItem");
    }

    #[test]
    fn one_connection_alone_carries_the_whole_rate() {
        let started = Instant::now();
        let pacing = Pacing::new(started, 20_000, 1, 0);
        assert_eq!(pacing.due(0), started);
        let second = pacing.due(20_000) - started;
        assert!(second.abs_diff(Duration::from_secs(1)) < Duration::from_micros(1));
    }

    fn result(ops_per_second: f64, offered: Option<u64>) -> WorkloadResult {
        WorkloadResult {
            name: "GetItem",
            operations: 1,
            errors: 0,
            ops_per_second,
            p50: Duration::ZERO,
            p99: Duration::ZERO,
            server_cpu_per_op: None,
            client_cpu_per_op: None,
            offered_ops_per_second: offered,
        }
    }

    #[test]
    fn the_report_says_when_the_server_fell_behind_the_offered_rate() {
        let behind = report(&[result(12_000.0, Some(20_000))]);
        assert!(
            behind.contains("GetItem: the server kept up with 12000 of the 20000 ops/s offered"),
            "{behind}"
        );
        let kept_up = report(&[result(19_990.0, Some(20_000))]);
        assert!(
            kept_up.contains("GetItem: 20000 ops/s offered"),
            "{kept_up}"
        );
        assert!(!kept_up.contains("kept up with"), "{kept_up}");
        // Unpaced runs carry no such line.
        let unpaced = report(&[result(50_000.0, None)]);
        assert!(!unpaced.contains("offered"), "{unpaced}");
    }
}
