//! The `shoal` command-line tool.

mod dynamodb_local;
mod health;
mod streams_tail;
mod transfer_cli;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, CommandFactory, Parser, Subcommand};
use indicatif::{BinaryBytes, HumanCount, HumanDuration, ProgressBar, ProgressStyle};
use shoal::model_bench;
use shoal_engine::DbOptions;
use shoal_server::config::{
    BUSY_CONNECTIONS_PER_CLIENT_MAX_DEFAULT, CONNECTIONS_MAX_DEFAULT, HANDLER_THREADS_DEFAULT,
};
use shoal_server::faults::{parse_rule_set, RuleSet};
use shoal_server::{AuthMode, CorsOrigins, EngineHandler, ServerConfig};
use shoal_tables::capacity::throttle::CapacityMode;
use shoal_tables::core::checker::CheckProgress;
use shoal_tables::{
    BackupOptions, Database, Durability, EmulationOptions, Lag, Options, StorageOptions,
    StreamOptions, TimeToLiveOptions, TransferOptions,
};

/// mimalloc instead of the C library's allocator: a request allocates and frees many small
/// strings and maps (items decoded for a Query, JSON text), where glibc's malloc spent a
/// quarter of the server's time in its slow paths.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "shoal",
    version,
    about = "A durable, embeddable DynamoDB-compatible datastore",
    after_help = "DynamoDB Local's command line also works: `shoal -sharedDb -inMemory -port 8000` \
                  starts `shoal serve` (`shoal -help` lists those flags)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serves DynamoDB's HTTP protocol (point any DynamoDB client at it with an endpoint URL).
    Serve(ServeArgs),
    /// Load generator: PutItem, GetItem, Query on an LSI and on a GSI against any DynamoDB
    /// endpoint on this machine, from many keep-alive connections.
    Bench(BenchArgs),
    /// Exits 0 if the server at ENDPOINT answers `GET /` with 200, else 1 (a health check
    /// for containers, which have no curl).
    Health {
        /// The server's endpoint (plain http://).
        #[arg(long, default_value = "http://127.0.0.1:8000")]
        endpoint: String,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 5)]
        timeout_seconds: u64,
    },
    /// DynamoDB Streams from the command line, against a running server.
    Streams {
        #[command(subcommand)]
        command: StreamsCommand,
    },
    /// Verifies a database: every index equals the index derived from the base items, every
    /// item-collection record its recomputed size, every statistic its recount (exits 1 if
    /// anything disagrees). Streams the data, showing progress on stderr; refuses a
    /// directory that holds no database.
    Check {
        /// Data directory (the server must not be running on it).
        #[arg(long, default_value = "./shoal-data")]
        data_dir: PathBuf,
    },
    /// Crashes a database under a mixed workload (puts, updates, deletes, transactions on a
    /// table with an LSI, a GSI, a stream and Time to Live) again and again, and checks after
    /// each recovery every acknowledged write, every index, collection and statistics record,
    /// and the stream. Exits 1 on any violation.
    CrashTest {
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
    },
    /// Copies a table between any two DynamoDB-compatible endpoints (Shoal, DynamoDB,
    /// Alternator, DynamoDB Local) or export directories: parallel scan, batch writes with
    /// back-off, a progress bar; an interrupted copy run again goes on where it stopped.
    Copy(transfer_cli::CopyArgs),
    /// Writes a table in DynamoDB's S3 export layout (what DynamoDB's ImportTable and
    /// `shoal import` read): from a data directory at one snapshot, or from any endpoint.
    Export(transfer_cli::ExportArgs),
    /// Reads an export (DynamoDB's or Shoal's) into a table: a new table of a data
    /// directory, or a table of any endpoint.
    Import(transfer_cli::ImportArgs),
    /// The child `crash-test --mode kill` runs and kills.
    #[command(hide = true)]
    CrashTestChild {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long)]
        durability: String,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        from: u64,
    },
    /// Crash-test child: writes the crash workload into DIR forever, printing `ack N` after
    /// each committed batch. Run it, kill -9 it, and verify with the crash tests.
    CrashWriter {
        /// Data directory.
        #[arg(long)]
        dir: PathBuf,
        /// sync, none, or interval:MS.
        #[arg(long, default_value = "sync")]
        durability: String,
        /// Memtable size in bytes (small values force frequent flushes).
        #[arg(long, default_value_t = 64 * 1024)]
        memtable_size_bytes: usize,
    },
}

#[derive(Subcommand)]
enum StreamsCommand {
    /// Prints a table's stream records as JSON lines (one GetRecords record per line) while
    /// they arrive, following shard rollovers; runs until interrupted or a limit below.
    Tail(TailArgs),
}

#[derive(Args)]
struct TailArgs {
    /// The table whose latest stream is read.
    #[arg(long)]
    table: String,
    /// Start at the oldest record retained, or only print what is written from now on.
    #[arg(long, value_enum, default_value = "trim-horizon")]
    from: streams_tail::From,
    /// The server's endpoint (plain http://).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    endpoint: String,
    /// Exit after printing this many records.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    max_records: Option<u64>,
    /// Exit after this many seconds without a new record.
    #[arg(long, value_name = "SECONDS", value_parser = parse_count)]
    idle_exit_seconds: Option<u64>,
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
struct BenchArgs {
    #[command(subcommand)]
    compare: Option<BenchCommand>,
    /// A data-model file (docs/DATA-MODEL-BENCH.md): runs its tables, items and access
    /// patterns and reports capacity, cost, hot partitions and latency per pattern. Without
    /// --endpoint it runs against Shoal in this process.
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Print the model report as JSON.
    #[arg(long, requires = "model")]
    json: bool,
    /// Also write the model report as a self-contained HTML page.
    #[arg(long, value_name = "FILE", requires = "model")]
    html: Option<PathBuf>,
    /// Endpoint to load, e.g. http://127.0.0.1:8000 (default for the fixed workloads; a
    /// model runs in-process unless given one). A model also runs against https://
    /// endpoints, signed with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when they are set.
    #[arg(long)]
    endpoint: Option<String>,
    /// Concurrent keep-alive connections (fixed workloads).
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds per workload (fixed workloads).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Items loaded before the timed runs (~1 KB each; fixed workloads).
    #[arg(long, default_value_t = 20_000)]
    items: u64,
    /// Partition keys the items spread over (fixed workloads).
    #[arg(long, default_value_t = 1_000)]
    partitions: u64,
    /// The server's pid, to report its CPU time per operation (fixed workloads).
    #[arg(long)]
    server_pid: Option<u32>,
    /// Workloads to run, comma-separated (default: PutItem,GetItem,QueryLSI,QueryGSI).
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Runs two model files on this machine, one after the other, and prints them side by
    /// side: how people choose between two designs.
    Compare {
        first: PathBuf,
        second: PathBuf,
        /// Endpoint to run both against (default: Shoal in this process).
        #[arg(long)]
        endpoint: Option<String>,
        /// Print both reports as one JSON document.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct ServeArgs {
    /// TCP port (DynamoDB Local alias: -port).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Address to bind; loopback by default so nothing is exposed by accident.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Data directory (DynamoDB Local alias: -dbPath).
    #[arg(long, default_value = "./shoal-data")]
    data_dir: PathBuf,
    /// Keep everything in memory; nothing survives the process (alias: -inMemory). Not with
    /// --data-dir, as DynamoDB Local refuses -inMemory with -dbPath.
    #[arg(long, conflicts_with = "data_dir")]
    in_memory: bool,
    /// sync (default: acknowledged after fsync), interval:MS, or none.
    #[arg(long, default_value = "sync")]
    durability: String,
    /// Cap on one item collection of a table with an LSI, in bytes (default 10 GiB).
    #[arg(long)]
    item_collection_limit: Option<u64>,
    /// Verify SigV4 signatures against the access keys in this file (`ACCESS_KEY SECRET`
    /// per line); by default any well-formed Authorization header is accepted.
    #[arg(long)]
    auth: Option<PathBuf>,
    /// DynamoDB Local's CORS allow-list (alias: -cors): `*` or comma-separated origins.
    /// Without it, pages from any origin may call the server, as with DynamoDB Local.
    #[arg(long, value_name = "ORIGINS", value_parser = CorsOrigins::parse)]
    cors: Option<CorsOrigins>,
    /// How long stream records are kept, in seconds (DynamoDB: 24 hours).
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400, value_parser = parse_seconds)]
    stream_retention_seconds: u64,
    /// How long a stream's shard stays open before a child shard replaces it, in seconds
    /// (AWS rolls shards roughly every 4 hours).
    #[arg(long, value_name = "SECONDS", default_value_t = 14_400, value_parser = parse_seconds)]
    stream_shard_seconds: u64,
    /// Also roll a stream's shard over once it holds this many records (checked about once
    /// a second, so a busy shard may hold more; default: by time only).
    #[arg(long, value_name = "N", value_parser = parse_count)]
    stream_shard_records: Option<u64>,
    /// How often expired items (Time to Live) are looked for and deleted, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 1, value_parser = parse_seconds)]
    ttl_sweep_seconds: u64,
    /// How long UpdateTimeToLive must wait after the previous change of a table, in seconds
    /// (AWS: about an hour; 0 lets tests turn Time to Live on and off freely).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    ttl_cooldown_seconds: u64,
    /// A client that has not sent its whole request body this many seconds after its
    /// headers is answered with an error and disconnected.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = parse_seconds)]
    body_read_timeout_seconds: u64,
    /// Connections open at once, idle keep-alive ones included. At the limit a new
    /// connection closes the one idle the longest; it is refused (503) only if every open
    /// connection has a request in flight.
    #[arg(long, value_name = "N", default_value_t = CONNECTIONS_MAX_DEFAULT as u64, value_parser = parse_count)]
    connections_max: u64,
    /// Requests one client address may have in flight at once (idle connections do not
    /// count); one more is refused (503). Clients on this machine all share 127.0.0.1.
    #[arg(long, alias = "connections-per-client", value_name = "N", default_value_t = BUSY_CONNECTIONS_PER_CLIENT_MAX_DEFAULT as u64, value_parser = parse_count)]
    busy_connections_per_client: u64,
    /// Operations that may block (writes waiting on the log's fsync) running at once; the
    /// rest wait their turn without a thread each.
    #[arg(long, value_name = "N", default_value_t = HANDLER_THREADS_DEFAULT as u64, value_parser = parse_count)]
    handler_threads: u64,
    /// Serve the admin API under /shoal/ on the same port: fault rules (/shoal/faults) and
    /// a deliberate crash (/shoal/crash). Loopback clients only, unless
    /// --admin-allow-remote.
    #[arg(long)]
    admin: bool,
    /// Let clients whose address is not loopback use the admin API.
    #[arg(long, requires = "admin")]
    admin_allow_remote: bool,
    /// Fault rules in force from the start (JSON, docs/TESTING-TOOLS.md); no need for
    /// --admin.
    #[arg(long, value_name = "FILE")]
    faults: Option<PathBuf>,
    /// Accepted for DynamoDB Local compatibility (-sharedDb): Shoal always serves one
    /// database to every access key and region.
    #[arg(long, hide = true)]
    shared_db: bool,
    /// Keep tables CREATING, UPDATING and DELETING for a few seconds (5, unless
    /// --transient-status-seconds says otherwise), like DynamoDB Local's
    /// -delayTransientStatuses, so that waiters are exercised.
    #[arg(long)]
    delay_transient_statuses: bool,
    /// How long tables stay CREATING, UPDATING and DELETING, in seconds (default 0: ACTIVE
    /// at once; 5 with --delay-transient-statuses).
    #[arg(long, value_name = "SECONDS")]
    transient_status_seconds: Option<u64>,
    /// Capacity emulation: `enforce` throttles reads and writes as DynamoDB does
    /// (provisioned and on-demand limits, hot partitions, GSI write shortfalls); `off` (the
    /// default, as in DynamoDB Local) never throttles.
    #[arg(long, value_name = "MODE", default_value = "off", value_parser = parse_capacity)]
    capacity: CapacityMode,
    /// Global secondary indexes show a write only this long after it, in milliseconds: `MS`
    /// (fixed) or `MIN-MAX` (drawn per read), as DynamoDB's asynchronous index updates do.
    /// Off by default: indexes are current at once.
    #[arg(long, value_name = "MS|MIN-MAX", value_parser = Lag::parse)]
    gsi_lag: Option<Lag>,
    /// Reads without ConsistentRead (GetItem, Query, Scan, BatchGetItem) see the table as
    /// it was this long ago, in milliseconds: `MS` or `MIN-MAX`. Strongly consistent reads
    /// always see the latest. Off by default.
    #[arg(long, value_name = "MS|MIN-MAX", value_parser = Lag::parse)]
    eventual_reads: Option<Lag>,
    /// Seed of the lags drawn from a `MIN-MAX` range: the same seed draws the same lags.
    #[arg(long, value_name = "N", default_value_t = 0)]
    lag_seed: u64,
    /// Writes on an item of an in-flight transaction fail as DynamoDB's do
    /// (TransactionConflictException, or a TransactionConflict cancellation reason) instead
    /// of waiting for it.
    #[arg(long)]
    transaction_conflicts: bool,
    /// Testing knob: every write stays in flight this many milliseconds after taking its
    /// locks, so that a test can meet a transaction conflict on purpose.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    write_hold_ms: u64,
    /// The local directory standing for S3: bucket B, key K is the file DIR/B/K
    /// (docs/EXPORT.md, docs/IMPORT.md). ExportTableToPointInTime writes there and
    /// ImportTable reads there; without it, both are refused.
    #[arg(long, value_name = "DIR")]
    export_dir: Option<PathBuf>,
    /// Point-in-time recovery keeps this many seconds of history instead of each table's
    /// RecoveryPeriodInDays (docs/BACKUPS.md): for tests of the window's edge.
    #[arg(long, value_name = "N")]
    pitr_window_seconds: Option<u64>,
    /// How often the point-in-time clock is written, in milliseconds: a restore's
    /// granularity (docs/BACKUPS.md).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    pitr_clock_ms: u64,
    /// Accepted for DynamoDB Local compatibility (-optimizeDbBeforeStartup), no effect:
    /// there is nothing to optimise before startup.
    #[arg(long, hide = true)]
    optimize_db_before_startup: bool,
    /// Accepted for DynamoDB Local compatibility (-disableTelemetry), no effect: Shoal sends
    /// no telemetry.
    #[arg(long, hide = true)]
    disable_telemetry: bool,
}

/// Parses `sync`, `none` or `interval:MS`.
fn parse_durability(text: &str) -> Result<Durability, String> {
    match text {
        "sync" => Ok(Durability::Sync),
        "none" => Ok(Durability::None),
        other => match other.strip_prefix("interval:").map(str::parse::<u64>) {
            Some(Ok(ms)) if ms > 0 => Ok(Durability::Interval(Duration::from_millis(ms))),
            _ => Err(format!(
                "durability must be sync, none or interval:MS, not {other:?}"
            )),
        },
    }
}

/// Blocking threads the runtime may start beyond `--handler-threads`.
const BLOCKING_THREADS_SPARE: usize = 8;

/// The longest period a `--stream-*-seconds` flag takes: ten years, so that every time
/// computed from it stays far inside the millisecond clock's range.
const STREAM_SECONDS_MAX: u64 = 10 * 365 * 24 * 3600;

/// Parses a `--stream-*-seconds` value: whole seconds, 1 to [`STREAM_SECONDS_MAX`].
fn parse_seconds(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(seconds) if (1..=STREAM_SECONDS_MAX).contains(&seconds) => Ok(seconds),
        _ => Err(format!(
            "must be a whole number of seconds from 1 to {STREAM_SECONDS_MAX} (ten years)"
        )),
    }
}

/// Parses `--capacity`: `enforce` or `off`.
fn parse_capacity(text: &str) -> Result<CapacityMode, String> {
    match text {
        "enforce" => Ok(CapacityMode::Enforce),
        "off" => Ok(CapacityMode::Off),
        other => Err(format!("capacity must be enforce or off, not {other:?}")),
    }
}

/// Parses a count of at least 1.
fn parse_count(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(count) if count >= 1 => Ok(count),
        _ => Err("must be a whole number of at least 1".to_string()),
    }
}

/// The `--long` flags of `serve` that take a value, for [`dynamodb_local::translate`].
fn serve_value_flags() -> Vec<String> {
    let command = Cli::command();
    let Some(serve) = command.find_subcommand("serve") else {
        return Vec::new();
    };
    serve
        .get_arguments()
        .filter(|arg| arg.get_action().takes_values())
        .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
        .collect()
}

/// How long `--delay-transient-statuses` (DynamoDB Local's -delayTransientStatuses) keeps
/// tables in their transient statuses when --transient-status-seconds is not given.
const TRANSIENT_STATUS_SECONDS_DEFAULT: u64 = 5;

/// How long tables stay CREATING, UPDATING and DELETING.
fn transient_status_delay(args: &ServeArgs) -> Duration {
    let seconds = match (args.transient_status_seconds, args.delay_transient_statuses) {
        (Some(seconds), _) => seconds,
        (None, true) => TRANSIENT_STATUS_SECONDS_DEFAULT,
        (None, false) => 0,
    };
    Duration::from_secs(seconds)
}

fn serve(args: ServeArgs) -> Result<(), String> {
    let durability = parse_durability(&args.durability)?;
    let mut options = Options {
        storage: StorageOptions {
            durability,
            ..StorageOptions::default()
        },
        streams: StreamOptions {
            retention: Duration::from_secs(args.stream_retention_seconds),
            shard_duration: Duration::from_secs(args.stream_shard_seconds),
            shard_records_max: args.stream_shard_records,
        },
        time_to_live: TimeToLiveOptions {
            sweep_interval: Duration::from_secs(args.ttl_sweep_seconds),
            change_cooldown: Duration::from_secs(args.ttl_cooldown_seconds),
        },
        emulation: EmulationOptions {
            transient_status_delay: transient_status_delay(&args),
            capacity: args.capacity,
            gsi_lag: args.gsi_lag,
            eventual_read_lag: args.eventual_reads,
            lag_seed: args.lag_seed,
            transaction_conflicts: args.transaction_conflicts,
            write_hold: Duration::from_millis(args.write_hold_ms),
        },
        transfer: TransferOptions {
            export_dir: args.export_dir.clone(),
        },
        backups: BackupOptions {
            pitr_window: args.pitr_window_seconds.map(Duration::from_secs),
            pitr_clock_interval: Duration::from_millis(args.pitr_clock_ms),
        },
        ..Options::default()
    };
    if let Some(limit) = args.item_collection_limit {
        options.limits.item_collection_size_limit_bytes = limit;
    }
    let auth = match &args.auth {
        Some(path) => AuthMode::Verify {
            keys: shoal_server::load_key_file(path).map_err(|e| e.to_string())?,
        },
        None => AuthMode::AcceptAnyWellFormed,
    };
    let faults = match &args.faults {
        Some(path) => load_fault_rules(path)?,
        None => RuleSet::default(),
    };
    let database = if args.in_memory {
        Database::open_in_memory(options)
    } else {
        Database::open(&args.data_dir, options)
    }
    .map_err(|e| format!("cannot open {}: {e}", args.data_dir.display()))?;
    let database = Arc::new(database);
    let handler_threads = usize::try_from(args.handler_threads).unwrap_or(usize::MAX);
    let config = ServerConfig {
        host: args.host,
        port: args.port,
        auth,
        cors: args.cors,
        body_read_timeout: Duration::from_secs(args.body_read_timeout_seconds),
        connections_max: usize::try_from(args.connections_max).unwrap_or(usize::MAX),
        busy_connections_per_client_max: usize::try_from(args.busy_connections_per_client)
            .unwrap_or(usize::MAX),
        handler_threads,
        admin: args.admin,
        admin_allow_remote: args.admin_allow_remote,
        faults,
        ..ServerConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // The server gives operations at most `handler_threads` turns at once; the spare
        // threads are for the runtime's own blocking work.
        .max_blocking_threads(handler_threads.saturating_add(BLOCKING_THREADS_SPARE))
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        let listener = shoal_server::bind(&config)
            .await
            .map_err(|e| e.to_string())?;
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        // The line scripts and tests wait for before sending requests.
        println!("shoal listening on http://{address}");
        tracing::info!(%address, "serving DynamoDB's protocol");
        database.set_endpoint_address(endpoint_address(address));
        let handler = Arc::new(EngineHandler::new(Arc::clone(&database)));
        shoal_server::serve(listener, handler, config, shutdown_signal())
            .await
            .map_err(|e| e.to_string())
    })?;
    // Dropping the database syncs the WAL and releases the data-directory lock.
    drop(database);
    tracing::info!("stopped");
    Ok(())
}

/// Reads and checks a `--faults` file.
fn load_fault_rules(path: &Path) -> Result<RuleSet, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    parse_rule_set(&text, shoal_tables::SUPPORTED_OPERATIONS)
        .map_err(|error| format!("{}: {error}", path.display()))
}

/// The `host:port` DescribeEndpoints answers for a server listening on `address`: the
/// address itself, or `localhost` for a wildcard address, which no client can send to.
fn endpoint_address(address: std::net::SocketAddr) -> String {
    if address.ip().is_unspecified() {
        format!("localhost:{}", address.port())
    } else {
        address.to_string()
    }
}

fn bench(args: BenchArgs) -> Result<(), String> {
    if let Some(BenchCommand::Compare {
        first,
        second,
        endpoint,
        json,
    }) = args.compare
    {
        return bench_compare(&first, &second, endpoint, json);
    }
    if let Some(path) = &args.model {
        return bench_model(path, args.endpoint, args.json, args.html.as_deref());
    }
    let endpoint = args
        .endpoint
        .unwrap_or_else(|| "http://127.0.0.1:8000".to_string());
    let address = endpoint
        .strip_prefix("http://")
        .unwrap_or(&endpoint)
        .trim_end_matches('/')
        .to_string();
    let config = shoal::loadgen::LoadConfig {
        address,
        connections: args.connections,
        duration: Duration::from_secs(args.seconds),
        items: args.items,
        partitions: args.partitions.max(1),
        server_pid: args.server_pid,
        workloads: args.workloads,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let results = runtime.block_on(shoal::loadgen::run(&config))?;
    print!("{}", shoal::loadgen::report(&results));
    Ok(())
}

fn crash_test(
    mode: &str,
    durability: &str,
    cycles: u64,
    seconds: Option<f64>,
    seed: u64,
    data_dir: Option<PathBuf>,
    json: bool,
) -> Result<(), String> {
    use shoal::crash_test::{CrashMode, CrashTestConfig};
    let config = CrashTestConfig {
        mode: if mode == "kill" {
            CrashMode::Kill
        } else {
            CrashMode::PowerLoss
        },
        durability: parse_durability(durability)?,
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
    let report = shoal::crash_test::run(&config, |cycle, report| {
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

fn read_model(path: &Path) -> Result<model_bench::model::Model, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    model_bench::model::Model::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn bench_model(
    path: &Path,
    endpoint: Option<String>,
    json: bool,
    html: Option<&Path>,
) -> Result<(), String> {
    let model = read_model(path)?;
    model_bench::stop_on_interrupt();
    let options = model_bench::BenchOptions {
        endpoint,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        database: None,
    };
    let report = model_bench::run_model(&model, &options)?;
    if let Some(html) = html {
        std::fs::write(html, model_bench::html::render(&report))
            .map_err(|e| format!("cannot write {}: {e}", html.display()))?;
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", model_bench::report::render_text(&report));
    }
    Ok(())
}

fn bench_compare(
    first: &Path,
    second: &Path,
    endpoint: Option<String>,
    json: bool,
) -> Result<(), String> {
    let models = [read_model(first)?, read_model(second)?];
    model_bench::stop_on_interrupt();
    let options = model_bench::BenchOptions {
        endpoint,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        database: None,
    };
    let mut reports = Vec::with_capacity(2);
    for model in &models {
        reports.push(model_bench::run_model(model, &options)?);
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "first": reports[0],
                "second": reports[1],
            }))
            .map_err(|e| e.to_string())?
        );
    } else {
        print!(
            "{}",
            model_bench::report::render_comparison(&reports[0], &reports[1])
        );
    }
    Ok(())
}

fn streams_tail(args: TailArgs) -> Result<(), String> {
    let options = streams_tail::TailOptions {
        endpoint: args.endpoint,
        table: args.table,
        from: args.from,
        max_records: args.max_records,
        idle_exit: args.idle_exit_seconds.map(Duration::from_secs),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(streams_tail::tail(&options, std::io::stdout().lock()))
}

fn check(data_dir: &Path) -> Result<(), String> {
    require_database(data_dir)?;
    // A check changes nothing: no Time to Live sweeps or shard rollovers while it reads.
    let options = Options {
        upkeep: false,
        ..Options::default()
    };
    let database = Database::open(data_dir, options)
        .map_err(|e| format!("cannot open {}: {e}", data_dir.display()))?;
    let mut display = CheckDisplay::new();
    let report = database.check_with_progress(|progress| display.show(progress));
    display.finish();
    let report = report.map_err(|e| e.to_string())?;
    println!(
        "{} tables, {} items, {} index entries, {} collection records, {} problems",
        report.tables,
        report.items,
        report.index_entries,
        report.collections,
        report.problems.len()
    );
    if report.is_sound() {
        println!("sound: every index, collection record and statistic matches the base items");
        Ok(())
    } else {
        for problem in &report.problems {
            println!("problem: {problem}");
        }
        Err(format!("{} problem(s) found", report.problems.len()))
    }
}

/// Refuses a path that holds no database. Opening it would create an empty database there,
/// which the check would then find sound: a mistyped path would pass, and leave a
/// directory behind.
fn require_database(data_dir: &Path) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "{} does not hold a Shoal database ({why})",
            data_dir.display()
        ))
    };
    match std::fs::metadata(data_dir) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return refuse("no such directory")
        }
        Err(error) => return Err(format!("cannot read {}: {error}", data_dir.display())),
        Ok(metadata) if !metadata.is_dir() => return refuse("not a directory"),
        Ok(_) => {}
    }
    let current = data_dir.join(shoal_engine::manifest::CURRENT_FILE_NAME);
    match std::fs::metadata(&current) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => refuse("no CURRENT file"),
        Err(error) => Err(format!("cannot read {}: {error}", current.display())),
    }
}

/// How often a check's progress is printed when stderr is not a terminal.
const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// A running check's progress on stderr: a bar on a terminal; elsewhere (a log, CI) a
/// plain line every few seconds, since a redrawn bar would fill the log with escapes.
enum CheckDisplay {
    Bar {
        bar: ProgressBar,
        locating: bool,
    },
    Lines {
        started: Instant,
        printed: Instant,
        locating: Option<String>,
    },
}

impl CheckDisplay {
    fn new() -> CheckDisplay {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template(
                    "checking [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta} left) {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            CheckDisplay::Bar {
                bar,
                locating: false,
            }
        } else {
            let now = Instant::now();
            CheckDisplay::Lines {
                started: now,
                printed: now,
                locating: None,
            }
        }
    }

    fn show(&mut self, progress: &CheckProgress) {
        match self {
            CheckDisplay::Bar { bar, locating } => {
                // The totals come from the statistics; a damaged database may hold more.
                bar.set_length(progress.bytes_total.max(progress.bytes));
                bar.set_position(progress.bytes);
                // A second pass reports only its start and end: tick meanwhile, so the
                // elapsed time shows it is still running.
                if progress.locating.is_some() != *locating {
                    *locating = progress.locating.is_some();
                    if *locating {
                        bar.enable_steady_tick(Duration::from_millis(500));
                    } else {
                        bar.disable_steady_tick();
                    }
                }
                bar.set_message(match &progress.locating {
                    Some(scope) => format!("locating the differences in {scope}"),
                    None => format!(
                        "{}/{} items, {}/{} index entries",
                        HumanCount(progress.items),
                        HumanCount(progress.items_total),
                        HumanCount(progress.index_entries),
                        HumanCount(progress.index_entries_total)
                    ),
                });
            }
            CheckDisplay::Lines {
                started,
                printed,
                locating,
            } => {
                if progress.locating != *locating {
                    locating.clone_from(&progress.locating);
                    if let Some(scope) = locating {
                        eprintln!("check: locating the differences in {scope}");
                    }
                }
                if printed.elapsed() >= PLAIN_PROGRESS_EVERY {
                    *printed = Instant::now();
                    eprintln!("check: {}", plain_progress(progress, started.elapsed()));
                }
            }
        }
    }

    fn finish(self) {
        if let CheckDisplay::Bar { bar, .. } = self {
            bar.finish_and_clear();
        }
    }
}

/// One line of progress: what was read of what there is, the rate and the time left.
fn plain_progress(progress: &CheckProgress, elapsed: Duration) -> String {
    let rate = progress.bytes as f64 / elapsed.as_secs_f64().max(0.001);
    let left = progress.bytes_total.saturating_sub(progress.bytes) as f64 / rate.max(1.0);
    let percent = progress.bytes as f64 * 100.0 / progress.bytes_total.max(1) as f64;
    format!(
        "{}/{} items, {}/{} index entries, {}/{} ({percent:.0}%), {}/s, about {} left",
        HumanCount(progress.items),
        HumanCount(progress.items_total),
        HumanCount(progress.index_entries),
        HumanCount(progress.index_entries_total),
        BinaryBytes(progress.bytes),
        BinaryBytes(progress.bytes_total),
        BinaryBytes(rate as u64),
        HumanDuration(Duration::from_secs_f64(left.min(1e9))),
    )
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

fn main() -> ExitCode {
    // A crash test makes the engine log the failures it injects on purpose: quiet by default.
    let crash_testing = std::env::args().nth(1).as_deref() == Some("crash-test");
    let default_filter = if crash_testing { "off" } else { "info" };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let args = match dynamodb_local::translate(std::env::args().collect(), &serve_value_flags()) {
        Ok(dynamodb_local::Invocation::Args(args)) => args,
        Ok(dynamodb_local::Invocation::Help) => {
            print!("{}", dynamodb_local::usage());
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("shoal: {message}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        Command::Serve(args) => serve(args),
        Command::Health {
            endpoint,
            timeout_seconds,
        } => health::check(&endpoint, Duration::from_secs(timeout_seconds)).map(|body| {
            println!("{body}");
        }),
        Command::Streams {
            command: StreamsCommand::Tail(args),
        } => streams_tail(args),
        Command::Check { data_dir } => check(&data_dir),
        Command::Bench(args) => bench(args),
        Command::Copy(args) => transfer_cli::copy(args),
        Command::Export(args) => transfer_cli::export(args),
        Command::Import(args) => transfer_cli::import(args),
        Command::CrashTest {
            mode,
            durability,
            cycles,
            seconds,
            seed,
            data_dir,
            json,
        } => crash_test(&mode, &durability, cycles, seconds, seed, data_dir, json),
        Command::CrashTestChild {
            data_dir,
            durability,
            seed,
            from,
        } => parse_durability(&durability)
            .and_then(|durability| shoal::crash_test::run_child(&data_dir, durability, seed, from)),
        Command::CrashWriter {
            dir,
            durability,
            memtable_size_bytes,
        } => parse_durability(&durability).and_then(|durability| {
            let options = DbOptions {
                durability,
                memtable_size_bytes,
                // Small segments: rotation, release and recycling all happen during a test.
                wal_segment_size_bytes: 1 << 20,
                ..DbOptions::default()
            };
            shoal::crash::run_writer(&dir, options, std::io::stdout().lock())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("shoal: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses a command line the way `main` does.
    fn parse(text: &str) -> Result<Cli, String> {
        let args = text.split_whitespace().map(str::to_owned).collect();
        match dynamodb_local::translate(args, &serve_value_flags())? {
            dynamodb_local::Invocation::Args(args) => {
                Cli::try_parse_from(args).map_err(|e| e.to_string())
            }
            dynamodb_local::Invocation::Help => Err("help".to_owned()),
        }
    }

    fn serve_args(text: &str) -> ServeArgs {
        match parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .command
        {
            Command::Serve(serve) => serve,
            _ => panic!("{text}: not serve"),
        }
    }

    #[test]
    fn describe_endpoints_names_an_address_clients_can_use() {
        let address = |text: &str| endpoint_address(text.parse().unwrap());
        assert_eq!(address("127.0.0.1:8000"), "127.0.0.1:8000");
        assert_eq!(address("0.0.0.0:8001"), "localhost:8001");
        assert_eq!(address("[::]:8002"), "localhost:8002");
        assert_eq!(address("[::1]:8003"), "[::1]:8003");
    }

    #[test]
    fn serve_value_flags_come_from_clap() {
        let flags = serve_value_flags();
        for flag in [
            "--port",
            "--host",
            "--data-dir",
            "--durability",
            "--auth",
            "--cors",
        ] {
            assert!(flags.iter().any(|f| f == flag), "{flag} in {flags:?}");
        }
        assert!(!flags.iter().any(|f| f == "--in-memory"), "{flags:?}");
    }

    #[test]
    fn consistency_flags_reach_the_options() {
        let serve = serve_args(
            "shoal serve --gsi-lag 250 --eventual-reads 10-900 --lag-seed 7 \
             --transaction-conflicts --write-hold-ms 40",
        );
        assert_eq!(serve.gsi_lag, Some(Lag::fixed(Duration::from_millis(250))));
        assert_eq!(
            serve.eventual_reads,
            Some(Lag {
                min: Duration::from_millis(10),
                max: Duration::from_millis(900)
            })
        );
        assert_eq!(serve.lag_seed, 7);
        assert!(serve.transaction_conflicts);
        assert_eq!(serve.write_hold_ms, 40);
        let defaults = serve_args("shoal serve");
        assert_eq!((defaults.gsi_lag, defaults.eventual_reads), (None, None));
        assert!(!defaults.transaction_conflicts);
        assert!(parse("shoal serve --gsi-lag 900-10").is_err());
    }

    #[test]
    fn the_export_directory_reaches_the_options() {
        let serve = serve_args("shoal serve --export-dir /data/s3");
        assert_eq!(
            serve.export_dir.as_deref(),
            Some(std::path::Path::new("/data/s3"))
        );
        assert_eq!(serve_args("shoal serve").export_dir, None);
    }

    #[test]
    fn point_in_time_recovery_flags_are_read() {
        let serve = serve_args("shoal serve --pitr-window-seconds 30 --pitr-clock-ms 50");
        assert_eq!(
            (serve.pitr_window_seconds, serve.pitr_clock_ms),
            (Some(30), 50)
        );
        let defaults = serve_args("shoal serve");
        assert_eq!(
            (defaults.pitr_window_seconds, defaults.pitr_clock_ms),
            (None, 1000)
        );
        assert!(parse("shoal serve --pitr-clock-ms 5").is_err());
    }

    #[test]
    fn dynamodb_local_command_line_starts_serve() {
        let serve = serve_args("shoal -sharedDb -inMemory -port 8000");
        assert_eq!(serve.port, 8000);
        assert!(serve.in_memory && serve.shared_db);
        assert_eq!(serve.cors, None);

        let serve = serve_args(
            "shoal -port 9000 -dbPath /tmp/x -cors https://a.example,https://b.example \
             -delayTransientStatuses -optimizeDbBeforeStartup -disableTelemetry",
        );
        assert_eq!(serve.port, 9000);
        assert_eq!(serve.data_dir, PathBuf::from("/tmp/x"));
        assert!(!serve.in_memory);
        assert_eq!(
            serve.cors,
            Some(CorsOrigins::List(vec![
                "https://a.example".to_owned(),
                "https://b.example".to_owned()
            ]))
        );
        assert!(serve.delay_transient_statuses);
        assert_eq!(transient_status_delay(&serve), Duration::from_secs(5));
        assert!(serve.optimize_db_before_startup && serve.disable_telemetry);

        assert_eq!(
            serve_args("shoal -cors * -inMemory").cors,
            Some(CorsOrigins::Any)
        );
        assert_eq!(parse("shoal -help").err().as_deref(), Some("help"));
    }

    #[test]
    fn capacity_is_enforced_only_when_asked() {
        assert_eq!(serve_args("shoal serve").capacity, CapacityMode::Off);
        assert_eq!(
            serve_args("shoal serve --capacity enforce").capacity,
            CapacityMode::Enforce
        );
        assert_eq!(
            serve_args("shoal serve --capacity off").capacity,
            CapacityMode::Off
        );
        let error = parse("shoal serve --capacity on").err().unwrap();
        assert!(error.contains("enforce or off"), "{error}");
    }

    #[test]
    fn serve_keeps_both_spellings() {
        let serve = serve_args("shoal serve -port 8000 -inMemory");
        assert_eq!(serve.port, 8000);
        assert!(serve.in_memory);
        let serve = serve_args("shoal serve --port 7000 --data-dir d --durability none");
        assert_eq!(serve.port, 7000);
        assert_eq!(serve.data_dir, PathBuf::from("d"));
        let serve = serve_args("shoal serve --host 0.0.0.0 -port 1 --in-memory -sharedDb");
        assert_eq!((serve.host.as_str(), serve.port), ("0.0.0.0", 1));
        assert!(serve.in_memory && serve.shared_db);
        // Defaults are untouched by the translation.
        let serve = serve_args("shoal serve");
        assert_eq!(serve.port, 8000);
        assert_eq!(serve.data_dir, PathBuf::from("./shoal-data"));
    }

    #[test]
    fn unknown_flags_bad_values_and_conflicts_are_errors() {
        let error = parse("shoal -inMemory -fooBar").err().unwrap();
        assert!(error.contains("-fooBar"), "{error}");
        assert!(parse("shoal -cors , -inMemory").is_err());
        // DynamoDB Local refuses -inMemory with -dbPath; so does Shoal, in either spelling.
        let error = parse("shoal -inMemory -dbPath /tmp/x").err().unwrap();
        assert!(error.contains("cannot be used with"), "{error}");
        assert!(parse("shoal serve --in-memory --data-dir /tmp/x").is_err());
    }

    #[test]
    fn health_takes_an_endpoint() {
        let cli = parse("shoal health --endpoint http://127.0.0.1:9").unwrap();
        let Command::Health {
            endpoint,
            timeout_seconds,
        } = cli.command
        else {
            panic!("not health")
        };
        assert_eq!(
            (endpoint.as_str(), timeout_seconds),
            ("http://127.0.0.1:9", 5)
        );
    }

    #[test]
    fn ttl_flags_default_to_a_quick_sweep_and_no_cooldown() {
        let serve = serve_args("shoal serve");
        assert_eq!(
            (serve.ttl_sweep_seconds, serve.ttl_cooldown_seconds),
            (1, 0)
        );
        let serve = serve_args("shoal serve --ttl-sweep-seconds 30 --ttl-cooldown-seconds 3600");
        assert_eq!(
            (serve.ttl_sweep_seconds, serve.ttl_cooldown_seconds),
            (30, 3600)
        );
        let error = parse("shoal serve --ttl-sweep-seconds 0").err().unwrap();
        assert!(error.contains("--ttl-sweep-seconds"), "{error}");
    }

    #[test]
    fn stream_flags_have_dynamodbs_defaults_and_refuse_nonsense() {
        let serve = serve_args("shoal serve");
        assert_eq!(serve.stream_retention_seconds, 86_400);
        assert_eq!(serve.stream_shard_seconds, 14_400);
        assert_eq!(serve.stream_shard_records, None);
        // They mix with DynamoDB Local's flags too.
        let serve = serve_args(
            "shoal -inMemory -port 0 --stream-retention-seconds 60 --stream-shard-seconds 5 \
             --stream-shard-records 2",
        );
        assert_eq!(serve.stream_retention_seconds, 60);
        assert_eq!(serve.stream_shard_seconds, 5);
        assert_eq!(serve.stream_shard_records, Some(2));
        for (flag, value) in [
            ("--stream-retention-seconds", "0"),
            ("--stream-shard-seconds", "0"),
            ("--stream-shard-seconds", "1.5"),
            ("--stream-retention-seconds", "400000000"),
            ("--stream-shard-records", "0"),
            ("--stream-shard-records", "many"),
        ] {
            let error = parse(&format!("shoal serve {flag} {value}")).err().unwrap();
            assert!(
                error.contains(flag) && error.contains("must be a whole number"),
                "{flag} {value}: {error}"
            );
        }
    }

    #[test]
    fn streams_tail_takes_a_table_and_limits() {
        let cli = parse("shoal streams tail --table Music").unwrap();
        let Command::Streams {
            command: StreamsCommand::Tail(tail),
        } = cli.command
        else {
            panic!("not streams tail")
        };
        assert_eq!(tail.table, "Music");
        assert_eq!(tail.from, streams_tail::From::TrimHorizon);
        assert_eq!(tail.endpoint, "http://127.0.0.1:8000");
        assert_eq!((tail.max_records, tail.idle_exit_seconds), (None, None));
        let cli = parse(
            "shoal streams tail --table T --from latest --endpoint http://127.0.0.1:9 \
             --max-records 3 --idle-exit-seconds 2",
        )
        .unwrap();
        let Command::Streams {
            command: StreamsCommand::Tail(tail),
        } = cli.command
        else {
            panic!("not streams tail")
        };
        assert_eq!(tail.from, streams_tail::From::Latest);
        assert_eq!(
            (tail.max_records, tail.idle_exit_seconds),
            (Some(3), Some(2))
        );
        assert!(parse("shoal streams tail").is_err());
        assert!(parse("shoal streams tail --table T --from middle").is_err());
        assert!(parse("shoal streams tail --table T --max-records 0").is_err());
    }

    #[test]
    fn durability_flags_parse() {
        assert_eq!(parse_durability("sync"), Ok(Durability::Sync));
        assert_eq!(
            parse_durability("interval:5"),
            Ok(Durability::Interval(Duration::from_millis(5)))
        );
        assert!(parse_durability("interval:0").is_err());
        assert!(parse_durability("fast").is_err());
    }

    #[test]
    fn check_refuses_a_path_without_a_database_and_creates_nothing() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("missing");
        let error = check(&missing).unwrap_err();
        assert!(
            error.ends_with("does not hold a Shoal database (no such directory)"),
            "{error}"
        );
        assert!(!missing.exists());

        let listing = |dir: &Path| {
            let mut names: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .collect();
            names.sort();
            names
        };
        let empty = root.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let error = check(&empty).unwrap_err();
        assert!(
            error.ends_with("does not hold a Shoal database (no CURRENT file)"),
            "{error}"
        );
        assert!(listing(&empty).is_empty());

        let unrelated = root.path().join("photos");
        std::fs::create_dir(&unrelated).unwrap();
        std::fs::write(unrelated.join("beach.jpg"), b"not a database").unwrap();
        std::fs::create_dir(unrelated.join("wal")).unwrap();
        let before = listing(&unrelated);
        let error = check(&unrelated).unwrap_err();
        assert!(error.contains("(no CURRENT file)"), "{error}");
        assert_eq!(listing(&unrelated), before);
        assert!(listing(&unrelated.join("wal")).is_empty());

        let file = unrelated.join("beach.jpg");
        assert!(check(&file).unwrap_err().contains("(not a directory)"));
    }

    #[test]
    fn check_accepts_a_database() {
        let dir = tempfile::tempdir().unwrap();
        drop(Database::open(dir.path(), Options::default()).unwrap());
        assert_eq!(check(dir.path()), Ok(()));
    }

    #[test]
    fn plain_progress_says_how_much_is_left() {
        let progress = CheckProgress {
            items: 250,
            index_entries: 500,
            bytes: 1 << 20,
            items_total: 1000,
            index_entries_total: 2000,
            bytes_total: 4 << 20,
            locating: None,
        };
        assert_eq!(
            plain_progress(&progress, Duration::from_secs(2)),
            "250/1,000 items, 500/2,000 index entries, 1.00 MiB/4.00 MiB (25%), 512.00 KiB/s, about 6 seconds left"
        );
    }
}
