//! `shoal crash-test`: crashes a database under a mixed workload, again and again, and checks
//! after each recovery that nothing acknowledged was lost, that what survived is exactly a
//! prefix of the writes (no holes, nothing half-applied), that every index, item collection
//! and statistics record matches the items (`Database::check`), and that the stream holds
//! exactly one record per change of that prefix, in order.
//!
//! The workload writes table `CrashTest` (an LSI, a GSI, a `NEW_AND_OLD_IMAGES` stream and
//! Time to Live): puts, updates, deletes and two-item transactions over 256 keys, and puts
//! of items that have already expired, which Time to Live must delete once (with a stream
//! record naming the service) and within `--expiry-bound-seconds` of the last recovery.
//! Operation `i` is a pure function of the seed and `i`, so the checker knows every write
//! without being told.
//!
//! Three ways to crash:
//! - `kill`: a child process (`shoal crash-test-child`) runs the workload on a real data
//!   directory and reports each acknowledged write on its stdout; it is killed with SIGKILL
//!   at a random moment. Every acknowledged write must survive, in every durability mode
//!   (the kernel keeps what was written).
//! - `power-loss`: the workload runs in this process on the simulated disk, which is frozen
//!   at a random write and loses everything not yet synced (a torn last write included).
//!   With `sync` durability every acknowledged write must survive; with `none` or
//!   `interval:MS` the survivors need only be a prefix.
//!
//! - a server ([`server`], `--server 'COMMAND'` or `--endpoint`): any DynamoDB-compatible
//!   server, started in its own process group, driven over HTTP, SIGKILLed at a random moment
//!   and restarted on the same data; what it does not offer is reported as not offered.
//!
//! - an app ([`app`], `--app 'COMMAND' --check 'COMMAND'`): the user's own workload runs
//!   against `shoal serve`, which is crashed (SIGKILL, or the admin API's power-loss crash)
//!   and restarted at random moments; the user's own check runs after each recovery.
//!
//! [`workload`] makes the writes and [`checker`] checks what survived, in every mode.
//! [`writer`] is the engine-level workload of `shoal crash-writer`, which the kill -9 tests
//! run and kill.

pub mod app;
pub mod checker;
mod progress;
pub mod server;
pub mod signals;
pub mod workload;
pub mod writer;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_tables::{Database, Durability, EventName, Options, StorageOptions, StreamStart};

pub use checker::CrashTestReport;
use checker::{item_of, History, Observed, Stream, StreamOrder};
use progress::Progress;
pub use workload::TABLE;
use workload::{create_table_request, key_name, operation, time_to_live_request, Items};

use crate::parse_durability;

/// Most operations one power-loss cycle runs before its crash.
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
    /// How long after the last recovery every expired item must be gone.
    pub expiry_bound: Duration,
}

/// The database options of the workload: small memtables and WAL segments, so flushes,
/// compactions and segment rotation happen within a cycle.
pub fn options(durability: Durability) -> Options {
    Options {
        storage: StorageOptions {
            durability,
            memtable_size_bytes: 64 << 10,
            wal_segment_size_bytes: 256 << 10,
            ..StorageOptions::default()
        },
        ..Options::default()
    }
}

/// Creates the workload's table, with its stream and Time to Live, if it does not exist.
pub fn create_table(db: &Database) -> Result<(), String> {
    if db.table(TABLE).is_ok() {
        return Ok(());
    }
    db.execute("CreateTable", create_table_request(true))
        .map_err(|e| format!("CreateTable: {}", e.message))?;
    db.execute("UpdateTimeToLive", time_to_live_request())
        .map_err(|e| format!("UpdateTimeToLive: {}", e.message))?;
    Ok(())
}

/// The table's items as the model holds them.
fn stored_items(db: &Database) -> Result<Items, String> {
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
            items.insert(key_name(item), item_of(item));
        }
        match page.get("LastEvaluatedKey") {
            Some(key) => start = Some(key.clone()),
            None => return Ok(items),
        }
    }
}

/// The whole stream, as (event, key), and the keys of its REMOVE records written by the
/// service (Time to Live).
fn stream_records(db: &Database) -> Result<Stream, String> {
    let mut reader = db
        .stream_reader(TABLE, StreamStart::TrimHorizon)
        .map_err(|e| format!("stream: {}", e.message))?;
    let mut records = Vec::new();
    let mut removed_by_service = BTreeSet::new();
    loop {
        let batch = reader
            .read(STREAM_READ_BATCH)
            .map_err(|e| format!("stream: {}", e.message))?;
        if batch.is_empty() {
            return Ok(Stream {
                records,
                removed_by_service,
            });
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
            let key = format!("{}/{}", pk.unwrap_or_default(), sk.unwrap_or_default());
            if record.by_service && record.event_name == EventName::Remove {
                removed_by_service.insert(key.clone());
            }
            records.push((record.event_name, key));
        }
    }
}

/// What the database holds after a recovery, for the checker.
fn observe(db: &Database) -> Result<Observed, String> {
    let items = stored_items(db)?;
    let index_problems = match db.check() {
        Ok(check) => check
            .problems
            .into_iter()
            .map(|problem| ("index, collection or statistics".to_string(), problem))
            .collect(),
        Err(e) => vec![("check failed".to_string(), e.to_string())],
    };
    let (stream, removed_by_service) = match stream_records(db) {
        Ok(stream) => (Ok(stream.records), stream.removed_by_service),
        Err(e) => (Err(e), BTreeSet::new()),
    };
    Ok(Observed {
        items,
        index_problems,
        stream: Some(stream),
        removed_by_service,
        stream_order: StreamOrder::Global,
    })
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
    let mut report = CrashTestReport {
        target: match config.mode {
            CrashMode::Kill => "embedded database in a child process, killed".to_string(),
            CrashMode::PowerLoss => {
                "embedded database on the simulated disk, power cut".to_string()
            }
        },
        seed: config.seed,
        ..CrashTestReport::default()
    };
    let mut history = History::new(config.seed, true, true);
    let mut last = None;
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
        if signals::stopped() {
            report.interrupted = true;
            break;
        }
        // The previous recovery's database holds the data directory's lock.
        drop(last.take());
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
            match observe(&db) {
                Ok(observed) => history.check(observed, acknowledged, lossy_power, &mut report),
                Err(e) => report.violate("unreadable", e),
            }
        }
        report.cycles = cycle + 1;
        progress(cycle + 1, &report);
        if report.violation_count() > 0 {
            return Ok(report);
        }
        last = Some(db);
    }
    if let Some(db) = last.filter(|_| !report.interrupted) {
        let read = || stored_items(&db);
        history.wait_for_expiry(config.expiry_bound, read, &mut report)?;
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
        .args(["--expired-at", &workload::expired_at().to_string()])
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
// `--port` needs a server this run starts: `--server`'s or `--app`'s.
#[command(group(clap::ArgGroup::new("served").args(["server", "app"])))]
pub struct CrashTestArgs {
    /// kill: SIGKILL a child process writing to real files; power-loss: cut the power of
    /// the simulated disk in this process (unsynced data lost, the last write torn).
    #[arg(long, default_value = "kill", value_parser = ["kill", "power-loss"])]
    mode: String,
    /// sync, none, or interval:MS (with --app: the server's).
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
    #[arg(long, conflicts_with_all = ["server", "endpoint", "app"])]
    data_dir: Option<PathBuf>,
    /// Crash-test this DynamoDB-compatible server instead: a shell command in which `{port}`
    /// is a free port and `{data}` a data directory this run creates and removes, e.g.
    /// 'java -jar DynamoDBLocal.jar -dbPath {data} -port {port}'.
    #[arg(long, value_name = "COMMAND", conflicts_with = "endpoint")]
    server: Option<String>,
    /// With --server: the port for `{port}`; with --app: the server's port (refused if
    /// something answers there).
    #[arg(long, requires = "served")]
    port: Option<u16>,
    /// Crash-test a server another tool supervises, at this URL; --kill and --start are the
    /// commands that kill and start it.
    #[arg(long, value_name = "URL", requires_all = ["kill", "start"], conflicts_with = "app")]
    endpoint: Option<String>,
    /// With --endpoint: the command that kills the server at once (as SIGKILL would).
    #[arg(long, value_name = "COMMAND", requires = "endpoint")]
    kill: Option<String>,
    /// With --endpoint: the command that starts the server on the same data.
    #[arg(long, value_name = "COMMAND", requires = "endpoint")]
    start: Option<String>,
    /// Server modes: kill between MIN and MAX milliseconds after a cycle's first write; app
    /// mode: crash that long into a cycle, which starts when the server answers (the moment
    /// is drawn from the seed).
    #[arg(long, value_name = "MIN-MAX", default_value = "100-1500")]
    kill_after_ms: String,
    /// Server modes: how long a (re)started server may take to answer, in seconds.
    #[arg(long, default_value_t = 120)]
    ready_timeout_seconds: u64,
    /// Run this shell command (your application) against a `shoal serve` that is crashed and
    /// restarted on the same port and data; it gets the endpoint in AWS_ENDPOINT_URL and
    /// AWS_ENDPOINT_URL_DYNAMODB, dummy credentials and a region.
    #[arg(long, value_name = "COMMAND", conflicts_with = "server")]
    app: Option<String>,
    /// With --app: the shell command that checks your application's invariants; a non-zero
    /// exit is a failure.
    #[arg(long, value_name = "COMMAND", requires = "app")]
    check: Option<String>,
    /// With --app: run the check after each recovery (with the app paused), or only at the
    /// end (with the app stopped).
    #[arg(long, default_value = "recovery", value_parser = ["recovery", "end"])]
    check_at: String,
    /// With --app: kill the app with the server, and start it again after each recovery.
    #[arg(long, requires = "app")]
    restart_app: bool,
    /// With --app: kill (SIGKILL the server) or power-loss (the admin API's crash call: the
    /// write-ahead log's unsynced bytes are lost, then SIGKILL).
    #[arg(long, default_value = "kill", value_parser = ["kill", "power-loss"])]
    crash: String,
    /// How long after the last recovery every item put already expired must be gone (Time
    /// to Live deleted it), in seconds; 0 checks no deletes. Shoal sweeps every second
    /// (`--ttl-sweep-seconds`); DynamoDB documents "within a few days".
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    expiry_bound_seconds: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `shoal crash-test`: runs the crash test with its progress on stderr, prints its report,
/// and fails on any violation. Ctrl-C and SIGTERM stop it cleanly, with a partial report.
pub fn command(args: CrashTestArgs) -> Result<(), String> {
    let CrashTestArgs {
        mode,
        durability,
        cycles,
        seconds,
        seed,
        data_dir,
        server,
        port,
        endpoint,
        kill,
        start,
        kill_after_ms,
        ready_timeout_seconds,
        app,
        check,
        check_at,
        restart_app,
        crash,
        expiry_bound_seconds,
        json,
    } = args;
    let expiry_bound = Duration::from_secs(expiry_bound_seconds);
    let launch = match (server, endpoint, kill, start) {
        (Some(template), _, _, _) => Some(server::Launch::Command { template, port }),
        (None, Some(endpoint), Some(kill), Some(start)) => Some(server::Launch::Supervised {
            endpoint,
            kill,
            start,
        }),
        _ => None,
    };
    signals::stop_on_signals();
    let mut progress = Progress::new(cycles);
    let report = match (app, launch) {
        (Some(app), _) => {
            // Refused before anything starts rather than by the server's first start.
            parse_durability(&durability)?;
            let config = app::AppConfig {
                app,
                check,
                check_at: if check_at == "end" {
                    app::CheckAt::End
                } else {
                    app::CheckAt::Recovery
                },
                restart_app,
                crash: if crash == "power-loss" {
                    app::Crash::PowerLoss
                } else {
                    app::Crash::Kill
                },
                durability,
                port,
                cycles,
                seconds,
                seed,
                crash_after_ms: server::parse_kill_after(&kill_after_ms)?,
                ready_timeout: Duration::from_secs(ready_timeout_seconds),
                program: std::env::current_exe()
                    .map_err(|e| format!("cannot find this program: {e}"))?,
            };
            app::run(&config, &mut progress)
        }
        (None, Some(launch)) => {
            let config = server::ServerConfig {
                launch,
                cycles,
                seconds,
                seed,
                kill_after_ms: server::parse_kill_after(&kill_after_ms)?,
                ready_timeout: Duration::from_secs(ready_timeout_seconds),
                expiry_bound,
            };
            server::run(&config, &mut progress)
        }
        (None, None) => {
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
                program: std::env::current_exe()
                    .map_err(|e| format!("cannot find this program: {e}"))?,
                expiry_bound,
            };
            run(&config, |cycle, report| progress.update(cycle, report))
        }
    };
    progress.finish();
    let report = report?;
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
    if report.interrupted {
        return Err(format!("interrupted after {} cycles", report.cycles));
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
    /// The run's expiry time of the items it puts already expired (seconds since the epoch).
    #[arg(long)]
    expired_at: u64,
}

/// `shoal crash-test-child`: [`run_child`] with the command line's arguments.
pub fn child_command(args: CrashTestChildArgs) -> Result<(), String> {
    workload::set_expired_at(args.expired_at);
    parse_durability(&args.durability)
        .and_then(|durability| run_child(&args.data_dir, durability, args.seed, args.from))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checker_finds_a_lost_write_and_a_stray_one() {
        let db = Database::open_in_memory(options(Durability::Sync)).unwrap();
        create_table(&db).unwrap();
        let done = run_operations(&db, 5, 0, 60, |_| {});
        assert_eq!(done, 60);
        let mut clean = CrashTestReport::default();
        History::new(5, true, true).check(observe(&db).unwrap(), 60, false, &mut clean);
        assert_eq!(clean.violation_count(), 0, "{}", clean.render());
        // A write the workload never made: no prefix matches any more.
        db.execute(
            "PutItem",
            json!({"TableName": TABLE, "Item": {"pk": {"S": "p0"}, "sk": {"S": "stray"}}}),
        )
        .unwrap();
        let mut report = CrashTestReport::default();
        History::new(5, true, true).check(observe(&db).unwrap(), 60, false, &mut report);
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
            expiry_bound: Duration::from_secs(20),
        };
        let report = run(&config, |_, _| {}).unwrap();
        assert_eq!(report.cycles, 4);
        assert_eq!(report.violation_count(), 0, "{}", report.render());
        assert!(report.acknowledged_checked > 0);
        // Every expired item of the surviving writes was deleted by the end.
        assert!(report.expired_deleted > 0, "{}", report.render());
    }

    /// The workload's first `n` operations on a database in memory, its sweep not yet run,
    /// and what the checker reads of it.
    fn written(n: u64) -> (Database, Observed) {
        // No sweep of its own while a test looks: the tests call `expire_now`.
        let mut options = options(Durability::Sync);
        options.time_to_live.sweep_interval = Duration::from_secs(3600);
        options.time_to_live.sweep_at_start = false;
        let db = Database::open_in_memory(options).unwrap();
        create_table(&db).unwrap();
        assert_eq!(run_operations(&db, 5, 0, n, |_| {}), n);
        let observed = observe(&db).unwrap();
        (db, observed)
    }

    /// Checks `observed` as a recovery in which no acknowledged write may be lost.
    fn check(observed: Observed, acknowledged: u64) -> (History, CrashTestReport) {
        check_as(observed, acknowledged, false)
    }

    /// Checks `observed`; `lossy`: as a power loss's recovery, where acknowledged writes may
    /// be lost.
    fn check_as(observed: Observed, acknowledged: u64, lossy: bool) -> (History, CrashTestReport) {
        let mut history = History::new(5, true, true);
        let mut report = CrashTestReport::default();
        history.check(observed, acknowledged, lossy, &mut report);
        (history, report)
    }

    #[test]
    fn expired_items_deleted_by_the_sweep_are_no_violation_and_are_counted() {
        let (db, _) = written(64);
        // Operations 15, 31, 47 and 63 put expired items; the sweep deletes all four.
        assert_eq!(db.expire_now().unwrap(), 4);
        let observed = observe(&db).unwrap();
        assert!(observed.removed_by_service.contains("x/i31"));
        let (history, report) = check(observed, 64);
        assert_eq!(report.violation_count(), 0, "{}", report.render());
        assert_eq!(report.expired_deleted, 4);
        assert!(history.expired_left(&stored_items(&db).unwrap()).is_empty());
    }

    #[test]
    fn expired_items_not_yet_deleted_are_no_violation_until_the_final_wait() {
        let (db, observed) = written(64);
        let (history, report) = check(observed, 64);
        assert_eq!(report.violation_count(), 0, "{}", report.render());
        assert_eq!(report.expired_deleted, 0);
        let left = history.expired_left(&stored_items(&db).unwrap());
        assert_eq!(left.len(), 4, "{left:?}");
        // A target without Time to Live is not waited for.
        let mut without = History::new(5, true, false);
        let mut report = CrashTestReport::default();
        without.check(observe(&db).unwrap(), 64, false, &mut report);
        assert!(without.expired_left(&stored_items(&db).unwrap()).is_empty());
    }

    #[test]
    fn an_expired_item_deleted_by_a_client_is_caught() {
        let (db, _) = written(32);
        db.execute(
            "DeleteItem",
            json!({"TableName": TABLE, "Key": {"pk": {"S": "x"}, "sk": {"S": "i15"}}}),
        )
        .unwrap();
        let (_, report) = check(observe(&db).unwrap(), 32);
        assert!(
            report
                .violations
                .contains_key("expired item deleted without the service's name"),
            "{}",
            report.render()
        );
    }

    #[test]
    fn an_expired_item_gone_without_a_record_twice_removed_or_never_put_is_caught() {
        let (db, observed) = written(32);
        db.expire_now().unwrap();
        let swept = observe(&db).unwrap();
        // Gone from the table, but the stream says nothing of it.
        let mut missing = observe(&db).unwrap();
        if let Some(Ok(stream)) = &mut missing.stream {
            stream.retain(|(_, key)| key != "x/i15");
        }
        let (_, report) = check(missing, 32);
        assert!(
            report.violations.contains_key("stream record missing"),
            "{}",
            report.render()
        );
        // Deleted twice.
        let mut twice = swept;
        if let Some(Ok(stream)) = &mut twice.stream {
            stream.push((EventName::Remove, "x/i15".to_string()));
        }
        let (_, report) = check(twice, 32);
        assert!(
            report.violations.contains_key("stream record duplicated"),
            "{}",
            report.render()
        );
        // An expired item no acknowledged or in-flight operation put (operation 47).
        let mut phantom = observed;
        phantom.items.insert(
            "x/i47".to_string(),
            item_of(&operation(5, 47).request["Item"]),
        );
        let (_, report) = check(phantom, 32);
        assert!(
            report.violations.contains_key("not a prefix of the writes"),
            "{}",
            report.render()
        );
        // The neighbouring case: the same item when 47 was the write in flight is fine.
        let (db, _) = written(47);
        db.execute("PutItem", operation(5, 47).request).unwrap();
        let (_, report) = check(observe(&db).unwrap(), 47);
        assert_eq!(report.violation_count(), 0, "{}", report.render());
    }

    /// The first operation of seed 5 that puts a key absent until then, which the next
    /// operation deletes: lost together or kept together, they leave the table the same.
    fn put_then_delete_of_an_absent_key() -> u64 {
        let mut model = workload::Model::default();
        for i in 0.. {
            let (put, delete) = (operation(5, i), operation(5, i + 1));
            let key = &put.effects[0].0;
            if put.name == "PutItem"
                && delete.name == "DeleteItem"
                && &delete.effects[0].0 == key
                && !model.items.contains_key(key)
            {
                return i;
            }
            model.apply(&put);
        }
        unreachable!("the workload never ends")
    }

    #[test]
    fn a_put_and_its_delete_lost_at_a_power_loss_are_told_apart_by_the_stream() {
        let i = put_then_delete_of_an_absent_key();
        // Both acknowledged, both lost with the log's unsynced tail: the table matches the
        // prefixes 0..i and 0..i + 2, and only the stream says which survived.
        let (_, lost) = written(i);
        let (history, report) = check_as(lost, i + 2, true);
        assert_eq!(report.violation_count(), 0, "{}", report.render());
        assert_eq!(history.applied, i);
        assert_eq!(report.acknowledged_lost_allowed, 2);
        // Both survived: the longer prefix, with their INSERT and REMOVE.
        let (_, kept) = written(i + 2);
        let (history, report) = check_as(kept, i + 2, true);
        assert_eq!(report.violation_count(), 0, "{}", report.render());
        assert_eq!(history.applied, i + 2);
        assert_eq!(report.acknowledged_lost_allowed, 0);
        // The neighbours that stay violations: the table of both surviving with the delete's
        // REMOVE record missing from the stream, which no prefix explains ...
        let (_, mut half) = written(i + 2);
        let key = operation(5, i).effects[0].0.clone();
        if let Some(Ok(stream)) = &mut half.stream {
            let remove = stream
                .iter()
                .rposition(|(event, k)| *event == EventName::Remove && *k == key)
                .unwrap();
            stream.remove(remove);
        }
        let (_, report) = check_as(half, i + 2, true);
        assert!(
            report.violations.contains_key("stream record missing"),
            "{}",
            report.render()
        );
        // ... and where no acknowledged write may be lost, the two records missing.
        let (_, lost) = written(i);
        let (_, report) = check(lost, i + 2);
        assert!(
            report.violations.contains_key("stream record missing"),
            "{}",
            report.render()
        );
    }
}
