//! `shoal serve`: serves DynamoDB's HTTP protocol on a database directory (or in memory)
//! until SIGTERM or Ctrl-C. Its flags, and DynamoDB Local's command line translated onto
//! them ([`dynamodb_local`]).

pub mod dynamodb_local;
mod memory;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, CommandFactory};
use shoal::parse_durability;
use shoal_server::config::{
    BUSY_CONNECTIONS_PER_CLIENT_MAX_DEFAULT, CONNECTIONS_MAX_DEFAULT, HANDLER_THREADS_DEFAULT,
};
use shoal_server::faults::{parse_rule_set, RuleSet};
use shoal_server::{AuthMode, CorsOrigins, EngineHandler, ServerConfig};
use shoal_tables::capacity::throttle::CapacityMode;
use shoal_tables::{
    BackupOptions, Database, EmulationOptions, Lag, Options, PointReads, ReplicationOptions,
    StorageOptions, StreamOptions, TimeToLiveOptions, TransferOptions,
};

#[derive(Args)]
pub struct ServeArgs {
    /// TCP port (DynamoDB Local alias: -port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Address to bind; loopback by default so nothing is exposed by accident.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Data directory (DynamoDB Local alias: -dbPath).
    #[arg(long, default_value = "./shoal-data")]
    pub data_dir: PathBuf,
    /// Keep everything in memory; nothing survives the process (alias: -inMemory). Not with
    /// --data-dir, as DynamoDB Local refuses -inMemory with -dbPath.
    #[arg(long, conflicts_with = "data_dir")]
    pub in_memory: bool,
    /// sync (default: acknowledged after fsync), interval:MS, or none.
    #[arg(long, default_value = "sync")]
    pub durability: String,
    /// Cap on one item collection of a table with an LSI, in bytes (default 10 GiB).
    #[arg(long)]
    pub item_collection_limit: Option<u64>,
    /// Verify SigV4 signatures against the access keys in this file (`ACCESS_KEY SECRET`
    /// per line); by default any well-formed Authorization header is accepted.
    #[arg(long)]
    pub auth: Option<PathBuf>,
    /// DynamoDB Local's CORS allow-list (alias: -cors): `*` or comma-separated origins.
    /// Without it, pages from any origin may call the server, as with DynamoDB Local.
    #[arg(long, value_name = "ORIGINS", value_parser = CorsOrigins::parse)]
    pub cors: Option<CorsOrigins>,
    /// How long stream records are kept, in seconds (DynamoDB: 24 hours).
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400, value_parser = parse_seconds)]
    pub stream_retention_seconds: u64,
    /// How long a stream's shard stays open before a child shard replaces it, in seconds
    /// (AWS rolls shards roughly every 4 hours).
    #[arg(long, value_name = "SECONDS", default_value_t = 14_400, value_parser = parse_seconds)]
    pub stream_shard_seconds: u64,
    /// Also roll a stream's shard over once it holds this many records (checked about once
    /// a second, so a busy shard may hold more; default: by time only).
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub stream_shard_records: Option<u64>,
    /// How often expired items (Time to Live) are looked for and deleted, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 1, value_parser = parse_seconds)]
    pub ttl_sweep_seconds: u64,
    /// How long UpdateTimeToLive must wait after the previous change of a table, in seconds
    /// (AWS: about an hour; 0 lets tests turn Time to Live on and off freely).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub ttl_cooldown_seconds: u64,
    /// A client that has not sent its whole request body this many seconds after its
    /// headers is answered with an error and disconnected.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = parse_seconds)]
    pub body_read_timeout_seconds: u64,
    /// Connections open at once, idle keep-alive ones included. At the limit a new
    /// connection closes the one idle the longest; it waits for a place only if every open
    /// connection has a request in flight (then up to 5 s, 1,024 waiting at most; past
    /// either it is answered ThrottlingException).
    #[arg(long, value_name = "N", default_value_t = CONNECTIONS_MAX_DEFAULT as u64, value_parser = parse_count)]
    pub connections_max: u64,
    /// Requests one client address may have in flight at once (idle connections do not
    /// count); one more waits for a place, as at --connections-max. Clients on this machine
    /// all share 127.0.0.1.
    #[arg(long, alias = "connections-per-client", value_name = "N", default_value_t = BUSY_CONNECTIONS_PER_CLIENT_MAX_DEFAULT as u64, value_parser = parse_count)]
    pub busy_connections_per_client: u64,
    /// Operations that may block (writes waiting on the log's fsync) running at once; the
    /// rest wait their turn without a thread each.
    #[arg(long, value_name = "N", default_value_t = HANDLER_THREADS_DEFAULT as u64, value_parser = parse_count)]
    pub handler_threads: u64,
    /// Serve the admin API under /shoal/ on the same port: fault rules (/shoal/faults) and
    /// a deliberate crash (/shoal/crash). Loopback clients only, unless
    /// --admin-allow-remote.
    #[arg(long)]
    pub admin: bool,
    /// Let clients whose address is not loopback use the admin API (and the console).
    #[arg(long)]
    pub admin_allow_remote: bool,
    /// Serve the web console at http://HOST:PORT/shoal/console (docs/CONSOLE.md): tables,
    /// items, streams, capacity, fault rules, bench reports. It calls the admin API, so
    /// this turns that on too; loopback clients only, unless --admin-allow-remote.
    #[arg(long)]
    pub console: bool,
    /// Fault rules in force from the start (JSON, docs/TESTING-TOOLS.md); no need for
    /// --admin.
    #[arg(long, value_name = "FILE")]
    pub faults: Option<PathBuf>,
    /// Accepted for DynamoDB Local compatibility (-sharedDb): Shoal always serves one
    /// database to every access key and region.
    #[arg(long, hide = true)]
    pub shared_db: bool,
    /// Keep tables CREATING, UPDATING and DELETING for a few seconds (5, unless
    /// --transient-status-seconds says otherwise), like DynamoDB Local's
    /// -delayTransientStatuses, so that waiters are exercised.
    #[arg(long)]
    pub delay_transient_statuses: bool,
    /// How long tables stay CREATING, UPDATING and DELETING, in seconds (default 0: ACTIVE
    /// at once; 5 with --delay-transient-statuses).
    #[arg(long, value_name = "SECONDS")]
    pub transient_status_seconds: Option<u64>,
    /// Capacity emulation: `enforce` throttles reads and writes as DynamoDB does
    /// (provisioned and on-demand limits, hot partitions, GSI write shortfalls); `off` (the
    /// default, as in DynamoDB Local) never throttles.
    #[arg(long, value_name = "MODE", default_value = "off", value_parser = parse_capacity)]
    pub capacity: CapacityMode,
    /// Global secondary indexes show a write only this long after it, in milliseconds: `MS`
    /// (fixed) or `MIN-MAX` (drawn per read), as DynamoDB's asynchronous index updates do.
    /// Off by default: indexes are current at once.
    #[arg(long, value_name = "MS|MIN-MAX", value_parser = Lag::parse)]
    pub gsi_lag: Option<Lag>,
    /// Reads without ConsistentRead (GetItem, Query, Scan, BatchGetItem) see the table as
    /// it was this long ago, in milliseconds: `MS` or `MIN-MAX`. Strongly consistent reads
    /// always see the latest. Off by default.
    #[arg(long, value_name = "MS|MIN-MAX", value_parser = Lag::parse)]
    pub eventual_reads: Option<Lag>,
    /// Global tables: a write reaches the other Regions' replicas this long after it, in
    /// milliseconds: `MS` or `MIN-MAX` (drawn per write). Default 100-400. The admin API's
    /// `/shoal/replication` changes it at run time.
    #[arg(long, value_name = "MS|MIN-MAX", value_parser = Lag::parse)]
    pub replication_lag_ms: Option<Lag>,
    /// Seed of the lags drawn from a `MIN-MAX` range: the same seed draws the same lags.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub lag_seed: u64,
    /// Record every call into FILE (JSON lines: operation, table, index, expression shapes,
    /// keys, sizes, capacity, latency; the request bodies too unless --record-hash-keys), for
    /// `shoal bench model-from` and `shoal bench replay` (docs/DATA-MODEL-BENCH.md). Off the
    /// request's path: when the writer falls behind, calls go unrecorded and are counted.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// The most bytes the recording holds on disk: FILE is moved to FILE.1 (replacing it)
    /// when it reaches half of this (default 1 GiB, at least 1 MiB).
    #[arg(long, value_name = "BYTES", requires = "record", default_value_t = shoal_server::record::MAX_BYTES_DEFAULT, value_parser = parse_record_bytes)]
    pub record_max_bytes: u64,
    /// Record keyed hashes (HMAC-SHA256 under a key drawn at start and never written) of
    /// key and value texts instead of the texts, and no request bodies: the recording makes
    /// a model but cannot be replayed, and no data leaves in it.
    #[arg(long, requires = "record")]
    pub record_hash_keys: bool,
    /// Writes on an item of an in-flight transaction fail as DynamoDB's do
    /// (TransactionConflictException, or a TransactionConflict cancellation reason) instead
    /// of waiting for it.
    #[arg(long)]
    pub transaction_conflicts: bool,
    /// Testing knob: every write stays in flight this many milliseconds after taking its
    /// locks, so that a test can meet a transaction conflict on purpose.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub write_hold_ms: u64,
    /// Let the allocator back its memory with transparent huge pages, as it asks to by
    /// default (off: under a write load they doubled the server's memory, at the same
    /// throughput).
    #[arg(long)]
    pub transparent_huge_pages: bool,
    /// The write-buffer budget: the most memory all memtables hold together, in bytes
    /// (default 8 MiB, at least 1 MiB). Memtables start at 2 MiB and grow with the write
    /// rate up to half of it; at the budget, writes wait for flushes (docs/RUNNING.md).
    #[arg(long, value_name = "BYTES", default_value_t = shoal_tables::StorageOptions::default().write_buffer_bytes_max as u64, value_parser = |text: &str| parse_bytes_at_least(text, 1 << 20))]
    pub write_buffer_bytes: u64,
    /// The most bytes of table pages that reads keep mapped in the server's memory (at least
    /// 64 KiB; default: no bound): past it they are let go, and stay in the OS page cache, so
    /// a later read of them costs a page fault but no I/O. For memory over read speed: a
    /// read working set larger than it pays that fault again after every release
    /// (docs/RUNNING.md).
    #[arg(long, value_name = "BYTES", value_parser = |text: &str| parse_bytes_at_least(text, 64 << 10))]
    pub mapped_read_bytes: Option<u64>,
    /// How reads of one item read table blocks: `copied` out of the file with a system call,
    /// so no table page stays in the server's memory; `mapped`, in place where the file is
    /// mapped, each page touched staying resident; or `copied-for-writes`, a write's read
    /// of the item it replaces copied and GetItem's mapped (docs/RUNNING.md).
    #[arg(long, value_name = "HOW", default_value = point_reads_name(StorageOptions::default().point_reads), value_parser = parse_point_reads)]
    pub point_reads: PointReads,
    /// The local directory standing for S3: bucket B, key K is the file DIR/B/K
    /// (docs/EXPORT.md, docs/IMPORT.md). ExportTableToPointInTime writes there and
    /// ImportTable reads there; without it, both are refused.
    #[arg(long, value_name = "DIR")]
    pub export_dir: Option<PathBuf>,
    /// Point-in-time recovery keeps this many seconds of history instead of each table's
    /// RecoveryPeriodInDays (docs/BACKUPS.md): for tests of the window's edge.
    #[arg(long, value_name = "N")]
    pub pitr_window_seconds: Option<u64>,
    /// How often the point-in-time clock is written, in milliseconds: a restore's
    /// granularity (docs/BACKUPS.md).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    pub pitr_clock_ms: u64,
    /// Accepted for DynamoDB Local compatibility (-optimizeDbBeforeStartup), no effect:
    /// there is nothing to optimise before startup.
    #[arg(long, hide = true)]
    pub optimize_db_before_startup: bool,
    /// Accepted for DynamoDB Local compatibility (-disableTelemetry), no effect: Shoal sends
    /// no telemetry.
    #[arg(long, hide = true)]
    pub disable_telemetry: bool,
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
pub fn parse_count(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(count) if count >= 1 => Ok(count),
        _ => Err("must be a whole number of at least 1".to_string()),
    }
}

/// `--record-max-bytes`: a byte count of at least [`shoal_server::record::MAX_BYTES_MIN`].
fn parse_record_bytes(text: &str) -> Result<u64, String> {
    let minimum = shoal_server::record::MAX_BYTES_MIN;
    match text.parse::<u64>() {
        Ok(bytes) if bytes >= minimum => Ok(bytes),
        _ => Err(format!(
            "must be a whole number of bytes, at least {minimum}"
        )),
    }
}

/// A size flag of at least `minimum` bytes that fits a usize: `--write-buffer-bytes` (1 MiB,
/// so that a memtable holds more than a few items), `--mapped-read-bytes` (64 KiB, one
/// window of what a read maps).
fn parse_bytes_at_least(text: &str, minimum: u64) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(bytes) if bytes >= minimum && usize::try_from(bytes).is_ok() => Ok(bytes),
        _ => Err(format!(
            "must be a whole number of bytes, at least {minimum}"
        )),
    }
}

/// `--point-reads`' values.
const POINT_READS_NAMES: [(&str, PointReads); 3] = [
    ("copied", PointReads::Copied),
    ("copied-for-writes", PointReads::CopiedForWrites),
    ("mapped", PointReads::Mapped),
];

fn point_reads_name(point_reads: PointReads) -> &'static str {
    POINT_READS_NAMES
        .iter()
        .find(|(_, value)| *value == point_reads)
        .map_or("", |(name, _)| name)
}

fn parse_point_reads(text: &str) -> Result<PointReads, String> {
    POINT_READS_NAMES
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, value)| *value)
        .ok_or_else(|| "must be copied, copied-for-writes or mapped".to_string())
}

/// The `--long` flags of `serve` that take a value, for [`dynamodb_local::translate`].
pub fn serve_value_flags() -> Vec<String> {
    let command = crate::Cli::command();
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
pub fn transient_status_delay(args: &ServeArgs) -> Duration {
    let seconds = match (args.transient_status_seconds, args.delay_transient_statuses) {
        (Some(seconds), _) => seconds,
        (None, true) => TRANSIENT_STATUS_SECONDS_DEFAULT,
        (None, false) => 0,
    };
    Duration::from_secs(seconds)
}

/// `shoal serve`.
pub fn run(args: ServeArgs) -> Result<(), String> {
    memory::purge_freed_memory_at_once();
    // Off since before `main` (`memory.rs`); said again here to report a failure.
    if args.transparent_huge_pages {
        memory::allow_transparent_huge_pages();
    } else {
        disable_transparent_huge_pages();
    }
    let durability = parse_durability(&args.durability)?;
    let mut options = Options {
        storage: StorageOptions {
            durability,
            // parse_bytes_at_least admits only sizes that fit a usize.
            write_buffer_bytes_max: usize::try_from(args.write_buffer_bytes).unwrap_or(usize::MAX),
            mapped_read_bytes_max: args.mapped_read_bytes.map_or(usize::MAX, |bytes| {
                usize::try_from(bytes).unwrap_or(usize::MAX)
            }),
            point_reads: args.point_reads,
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
            sweep_at_start: true,
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
        replication: ReplicationOptions {
            lag: args
                .replication_lag_ms
                .unwrap_or(shoal_tables::replication::REPLICATION_LAG_DEFAULT),
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
    if args.admin_allow_remote && !args.admin && !args.console {
        return Err("--admin-allow-remote needs --admin or --console".to_string());
    }
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
        record: args.record.map(|path| shoal_server::record::RecordOptions {
            path,
            max_bytes: args.record_max_bytes,
            hash_keys: args.record_hash_keys,
        }),
        console: args.console,
        bench_report: Some(shoal::bench::data_model::html::render_json),
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
        if config.console {
            // On the log, not stdout: scripts may stop reading stdout after the line above.
            tracing::info!("console at http://{address}/shoal/console");
        }
        tracing::info!(%address, "serving DynamoDB's protocol");
        database.set_endpoint_address(endpoint_address(address));
        let handler = Arc::new(EngineHandler::new(Arc::clone(&database)));
        // Start-up is over: the code that parsed the command line and opened the
        // database need not stay resident.
        memory::release_start_up_pages();
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

/// Turns transparent huge pages off for this process. mimalloc asks the kernel for them
/// (`madvise`), and a 2 MiB page stays whole while any byte of it is in use: under a PutItem
/// load about half of the server's resident memory was such pages. Off, the same load runs
/// at the same rate in about half the memory (docs/PERFORMANCE.md). Failing is harmless (an
/// old kernel): the server then runs as before, and says so.
fn disable_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes only integer arguments and changes a flag of this
    // process's memory map; no memory is read or written through a pointer.
    let answer = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if answer != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "could not turn transparent huge pages off; memory use may be higher"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{parse, serve_args};

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
    fn memory_defaults_and_flags_that_set_others() {
        let defaults = serve_args("shoal serve");
        assert_eq!(
            (defaults.handler_threads, defaults.write_buffer_bytes),
            (64, 8 << 20)
        );
        let set = serve_args("shoal serve --handler-threads 32 --write-buffer-bytes 33554432");
        assert_eq!(
            (set.handler_threads, set.write_buffer_bytes),
            (32, 32 << 20)
        );
    }

    #[test]
    fn mapped_read_bytes_is_unbounded_by_default_and_takes_a_window_or_more() {
        assert_eq!(serve_args("shoal serve").mapped_read_bytes, None);
        assert_eq!(
            StorageOptions::default().mapped_read_bytes_max,
            usize::MAX,
            "the engine's default is no bound too"
        );
        let set = serve_args("shoal serve --mapped-read-bytes 65536");
        assert_eq!(set.mapped_read_bytes, Some(64 << 10));
        let error = parse("shoal serve --mapped-read-bytes 65535")
            .err()
            .unwrap();
        assert!(error.contains("at least 65536"), "{error}");
        // The write buffer's own minimum is unchanged.
        let error = parse("shoal serve --write-buffer-bytes 1048575")
            .err()
            .unwrap();
        assert!(error.contains("at least 1048576"), "{error}");
    }

    #[test]
    fn point_reads_default_to_the_engines_and_take_each_way() {
        assert_eq!(
            serve_args("shoal serve").point_reads,
            StorageOptions::default().point_reads
        );
        for (text, expected) in [
            ("copied", PointReads::Copied),
            ("copied-for-writes", PointReads::CopiedForWrites),
            ("mapped", PointReads::Mapped),
        ] {
            let args = serve_args(&format!("shoal serve --point-reads {text}"));
            assert_eq!(args.point_reads, expected);
        }
        let error = parse("shoal serve --point-reads Mapped").err().unwrap();
        assert!(
            error.contains("must be copied, copied-for-writes or"),
            "{error}"
        );
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
        assert_eq!(defaults.replication_lag_ms, None);
        let serve = serve_args("shoal serve --replication-lag-ms 5-50");
        assert_eq!(
            serve.replication_lag_ms,
            Some(Lag {
                min: Duration::from_millis(5),
                max: Duration::from_millis(50)
            })
        );
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
    fn the_console_is_off_unless_asked_for() {
        assert!(!serve_args("shoal serve").console);
        let serve = serve_args("shoal serve --console --admin-allow-remote");
        assert!(serve.console && serve.admin_allow_remote && !serve.admin);
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
}
