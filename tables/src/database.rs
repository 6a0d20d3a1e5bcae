//! `Database`: DynamoDB tables on one LSM database — the engine's public entry point.
//!
//! `Database::open(path, Options)`, then one method per DynamoDB operation, each taking the
//! operation's typed request (`crate::api`) and returning its typed response or the
//! `ApiError` a DynamoDB client expects. The operations live in their own files as further
//! `impl Database` blocks: control plane in `table/control.rs`, item writes and reads in
//! `table/items.rs`, Query and Scan in `table/query.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use shoal_vfs::Fs;

use crate::backups::pitr_clock::PitrRetention;
use crate::core::clock::Clock;
use crate::core::feature::{Feature, Features};
use crate::core::keys;
use crate::core::store::Core;
use crate::emulation::conflicts::InFlight;
use crate::emulation::lag::{self, Lag, LagTicker, LaggedSnapshots};
use crate::streams::lifecycle;
use crate::streams::record::StreamRetention;
use crate::Durability;
use shoal_engine::{CompactionFilter, Db, DbError, DbOptions, VersionRetention};

/// DynamoDB's item-collection cap: 10 GiB.
pub const ITEM_COLLECTION_SIZE_LIMIT_BYTES_DEFAULT: u64 = 10 << 30;

/// How often expired items are swept by default: often enough that a local test sees
/// expiry within about a second.
pub const TIME_TO_LIVE_SWEEP_INTERVAL_DEFAULT: Duration = Duration::from_secs(1);

/// How a [`Database`] is opened.
#[derive(Debug, Clone)]
pub struct Options {
    pub durability: Durability,
    /// Cap on one item collection (base items + LSI entries) of a table with an LSI.
    pub item_collection_size_limit_bytes: u64,
    /// Memtable size per tree before it is flushed.
    pub memtable_size_bytes: usize,
    /// WAL segment size (smaller segments preallocate faster; tests use small ones).
    pub wal_segment_size_bytes: u64,
    /// How long stream records are kept (DynamoDB: 24 hours); tests shorten it.
    pub stream_retention: Duration,
    /// How long a stream's shard stays open before a child shard replaces it.
    pub stream_shard_duration: Duration,
    /// Records after which a shard rolls over (checked by the upkeep, about once a second);
    /// None rolls over by time only.
    pub stream_shard_records_max: Option<u64>,
    /// How often expired items are looked for and deleted (`ttl`).
    pub time_to_live_sweep_interval: Duration,
    /// The time an UpdateTimeToLive must wait after the previous change of the same table
    /// (AWS: about an hour; 0 by default so tests can flip it).
    pub time_to_live_change_cooldown: Duration,
    /// What "now" is for Time to Live (tests move it; the system clock by default).
    pub clock: Clock,
    /// Whether the upkeep thread runs (stream shard rollover and retention, Time to Live
    /// sweeps). `shoal check` turns it off so a check changes nothing;
    /// [`Database::stream_upkeep`] and [`Database::expire_now`] still work on demand.
    pub upkeep: bool,
    /// How long tables stay CREATING, UPDATING and DELETING (`emulation::transient`); zero (the
    /// default) makes every change ACTIVE at once.
    pub transient_status_delay: Duration,
    /// Whether requests through [`Database::execute`] are throttled as DynamoDB throttles
    /// them (`capacity::throttle`); off by default, as in DynamoDB Local. Time is `clock`'s.
    pub capacity: crate::capacity::throttle::CapacityMode,
    /// How long a global secondary index takes to show a write (`emulation::lag`); None (the
    /// default) shows it at once.
    pub gsi_lag: Option<Lag>,
    /// How stale an eventually consistent read (ConsistentRead false) may be
    /// (`emulation::lag`); None (the default) reads the latest state.
    pub eventual_read_lag: Option<Lag>,
    /// Seed of the lags drawn from a range: the same seed draws the same lags.
    pub lag_seed: u64,
    /// Whether writes meeting an in-flight transaction fail as DynamoDB's do
    /// (`emulation::conflicts`) instead of waiting for it; off by default.
    pub transaction_conflicts: bool,
    /// A testing knob: every write stays in flight this long after taking its locks, so
    /// that a conflict (or a wait) can be met on purpose. Zero by default.
    pub write_hold: Duration,
    /// The local directory standing for S3: bucket B, key K is the file <export_dir>/B/K.
    pub export_dir: Option<PathBuf>,
    /// How far back point-in-time recovery keeps history; None: each table's
    /// RecoveryPeriodInDays (tests and `shoal serve --pitr-window-seconds` shorten it).
    pub pitr_window: Option<Duration>,
    /// How often the point-in-time clock is written (`backups::pitr_clock`): a restore's
    /// granularity.
    pub pitr_clock_interval: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::Sync,
            item_collection_size_limit_bytes: ITEM_COLLECTION_SIZE_LIMIT_BYTES_DEFAULT,
            memtable_size_bytes: 64 << 20,
            wal_segment_size_bytes: 64 << 20,
            stream_retention: lifecycle::STREAM_RETENTION_DEFAULT,
            stream_shard_duration: lifecycle::STREAM_SHARD_DURATION_DEFAULT,
            stream_shard_records_max: None,
            time_to_live_sweep_interval: TIME_TO_LIVE_SWEEP_INTERVAL_DEFAULT,
            time_to_live_change_cooldown: Duration::ZERO,
            clock: Clock::system(),
            upkeep: true,
            transient_status_delay: Duration::ZERO,
            capacity: crate::capacity::throttle::CapacityMode::Off,
            gsi_lag: None,
            eventual_read_lag: None,
            lag_seed: 0,
            transaction_conflicts: false,
            write_hold: Duration::ZERO,
            export_dir: None,
            pitr_window: None,
            pitr_clock_interval: crate::backups::pitr_clock::PITR_CLOCK_INTERVAL_DEFAULT,
        }
    }
}

impl Options {
    fn db_options(&self, retention: &Arc<StreamRetention>, pitr: &Arc<PitrRetention>) -> DbOptions {
        DbOptions {
            compaction_filter: Some(Arc::clone(retention) as Arc<dyn CompactionFilter>),
            version_retention: Some(Arc::clone(pitr) as Arc<dyn VersionRetention>),
            durability: self.durability,
            memtable_size_bytes: self.memtable_size_bytes,
            wal_segment_size_bytes: self.wal_segment_size_bytes,
            bloom_prefix: keys::bloom_prefix,
            ..DbOptions::default()
        }
    }
}

/// An open datastore of DynamoDB tables: the [`Core`] every operation works on (it derefs to
/// it), and the state of each feature.
///
/// The core is shared with the background index backfills (`control::backfill`), which
/// outlive any one request; `backfills` stops and joins those threads when the database is
/// dropped.
pub struct Database {
    pub(crate) core: Core,
    pub(crate) options: Options,
    /// Running GSI backfills (UpdateTable); resumed at open.
    pub(crate) backfills: crate::control::backfill::Backfills,
    /// Recent TransactWriteItems `ClientRequestToken`s (see `items::transact`).
    pub(crate) transaction_tokens: crate::items::transact::TokenTable,
    /// Consumed capacity per table, for monitoring (see `metering`).
    pub(crate) capacity_meter: crate::capacity::metering::CapacityMeter,
    /// Capacity emulation (`capacity::throttle`): the buckets, enforced only when
    /// `Options::capacity` says so.
    pub(crate) throttle: crate::capacity::throttle::Throttle,
    /// PartiQL statements parsed lately, by text (`partiql::statements`).
    pub(crate) statements: crate::partiql::statements::StatementCache,
    /// Stream state shared by writers, readers and the upkeep (`streams::lifecycle`).
    pub(crate) streams: Arc<lifecycle::Streams>,
    /// The upkeep thread (stream shards and retention, Time to Live sweeps), started with
    /// the first stream or Time to Live setting; stopped on drop.
    pub(crate) upkeep: Mutex<Option<crate::upkeep::Upkeep>>,
    /// What DescribeEndpoints answers (`control::settings`); a server sets its own address.
    pub(crate) endpoint_address: RwLock<String>,
    /// Tables CREATING, UPDATING or DELETING for `Options::transient_status_delay`.
    pub(crate) transitions: Arc<crate::emulation::transient::Transitions>,
    /// Recent snapshots for lagged reads (`emulation::lag`), with `Options::gsi_lag` or
    /// `Options::eventual_read_lag`.
    pub(crate) lagged: Option<Arc<LaggedSnapshots>>,
    /// Keeps `lagged` current; stopped on drop.
    _lag_ticker: Option<LagTicker>,
    /// Items of writes in flight, with `Options::transaction_conflicts`.
    pub(crate) in_flight: Option<Arc<InFlight>>,
    /// Exports' records and running exports (`transfer::export_records`); running exports
    /// stop when the database is dropped.
    pub(crate) exports: crate::transfer::export_records::Exports,
    /// Backups a restore is reading (`backups::on_demand`).
    pub(crate) backups_in_use: Arc<crate::backups::on_demand::BackupsInUse>,
    /// Running imports and their error logs (`transfer::import`).
    pub(crate) imports: Arc<crate::transfer::import::Imports>,
    /// The history compaction keeps for point-in-time recovery (`backups::pitr_clock`).
    pub(crate) pitr: Arc<PitrRetention>,
    /// Stops the running imports when this database is dropped.
    _imports_owner: crate::transfer::import::ImportsOwner,
}

impl Database {
    /// Opens (creating if needed) the datastore in `path`.
    pub fn open(path: &Path, options: Options) -> Result<Database, DbError> {
        let database = Database::open_with_fs(shoal_vfs::RealFs::shared(), path, options)?;
        database
            .imports
            .set_error_dir(path.join(crate::transfer::import::IMPORT_ERRORS_DIR_NAME));
        Ok(database)
    }

    /// Opens a datastore that lives only in memory (nothing survives the process), with
    /// default options: what a test suite opens once per test.
    pub fn in_memory() -> Result<Database, DbError> {
        Database::open_in_memory(Options::default())
    }

    /// Opens a datastore that lives only in memory (nothing survives the process). Its
    /// files are in a `MemFs`, which holds each SSTable once and keeps no bytes of the
    /// write-ahead log: nothing will ever replay it.
    pub fn open_in_memory(options: Options) -> Result<Database, DbError> {
        let dir = Path::new("/shoal");
        let fs = shoal_vfs::mem::MemFs::discarding(vec![dir.join(shoal_engine::db::WAL_DIR_NAME)]);
        Database::open_with_fs(fs.fs(), dir, options)
    }

    /// Opens the datastore in `path` through `fs` (fault-injection tests use `SimFs`).
    pub fn open_with_fs(fs: Fs, path: &Path, options: Options) -> Result<Database, DbError> {
        let retention = Arc::new(StreamRetention::new(lifecycle::millis(
            options.stream_retention,
        )));
        let pitr = Arc::new(PitrRetention::default());
        let db = Db::open_with_fs(fs, path, options.db_options(&retention, &pitr))?;
        let transitions = Arc::new(crate::emulation::transient::Transitions::new(
            options.transient_status_delay,
        ));
        let db = Arc::new(db);
        let horizon = [options.gsi_lag, options.eventual_read_lag]
            .into_iter()
            .flatten()
            .map(|lag| lag.max)
            .max()
            .filter(|horizon| !horizon.is_zero());
        let (lagged, lag_ticker) = match horizon {
            Some(horizon) => {
                let (lagged, ticker) = lag::start(&db, horizon, options.lag_seed)?;
                (Some(lagged), Some(ticker))
            }
            None => (None, None),
        };
        let in_flight = options
            .transaction_conflicts
            .then(|| Arc::new(InFlight::default()));
        let throttle =
            crate::capacity::throttle::Throttle::new(options.capacity, options.clock.clone());
        let exports = crate::transfer::export_records::Exports::open(
            &db,
            crate::core::clock::now_millis(),
            options.upkeep,
        )?;
        let imports = Arc::new(crate::transfer::import::Imports::default());
        let streams = Arc::new(lifecycle::Streams::new(retention));
        // The features that ride on writes and on the catalog (`core::feature`), in the
        // order their hooks run.
        let features = Features::new(vec![
            Arc::clone(&streams) as Arc<dyn Feature>,
            Arc::new(crate::ttl::TimeToLive),
            Arc::clone(&pitr) as Arc<dyn Feature>,
        ]);
        let core = Core::new(db, features, options.item_collection_size_limit_bytes);
        let database = Database {
            core,
            throttle,
            options,
            backfills: Default::default(),
            transaction_tokens: Default::default(),
            capacity_meter: Default::default(),
            statements: Default::default(),
            streams,
            upkeep: Mutex::new(None),
            endpoint_address: RwLock::new(
                crate::control::settings::ENDPOINT_ADDRESS_DEFAULT.to_string(),
            ),
            transitions,
            lagged,
            _lag_ticker: lag_ticker,
            in_flight,
            exports,
            backups_in_use: Default::default(),
            imports: Arc::clone(&imports),
            _imports_owner: crate::transfer::import::ImportsOwner(Some(imports)),
            pitr,
        };
        database.reload_catalog()?;
        // Before statistics are loaded (their records of dropped trees then go too): the
        // trees of tables an import staged and a crash left unpublished.
        database.drop_orphan_trees()?;
        database.recover_imports()?;
        database
            .load_iterator_key(false)
            .map_err(|e| DbError::Poisoned(e.message))?;
        // Before any write and before backfills resume: statistics of a table created
        // before they were kept are rebuilt once, and records of tables whose deletion a
        // crash interrupted are removed.
        database
            .prepare_stats()
            .map_err(|e| DbError::Poisoned(e.message))?;
        // An index left CREATING by a crash or a close is rebuilt (never marked ACTIVE
        // before a complete pass).
        database.resume_backfills()?;
        crate::backups::store::remove_partial_and_expired(
            database.db.fs(),
            database.db.dir(),
            database.options.clock.now_millis(),
        )
        .map_err(|e| DbError::Poisoned(e.message))?;
        database.start_upkeep()?;
        Ok(database)
    }

    /// A `Database` sharing this one's storage, catalog, locks and statistics, for the
    /// upkeep thread. It runs no backfills of its own, keeps its own transaction tokens and
    /// capacity meter and an idle throttle (nothing it does uses them), and starts no upkeep.
    pub(crate) fn share(&self) -> Database {
        Database {
            core: self.core.clone(),
            options: self.options.clone(),
            backfills: Default::default(),
            transaction_tokens: Default::default(),
            capacity_meter: Default::default(),
            throttle: crate::capacity::throttle::Throttle::new(
                crate::capacity::throttle::CapacityMode::Off,
                self.options.clock.clone(),
            ),
            statements: Default::default(),
            streams: Arc::clone(&self.streams),
            upkeep: Mutex::new(None),
            endpoint_address: RwLock::new(self.endpoint_address.read().clone()),
            transitions: Arc::clone(&self.transitions),
            lagged: self.lagged.clone(),
            _lag_ticker: None,
            in_flight: self.in_flight.clone(),
            exports: crate::transfer::export_records::Exports::none(),
            backups_in_use: Arc::clone(&self.backups_in_use),
            imports: Arc::clone(&self.imports),
            _imports_owner: Default::default(),
            pitr: Arc::clone(&self.pitr),
        }
    }

    /// Items that writes hold in flight now (`Options::transaction_conflicts`; always 0
    /// without it): lets a test wait until a held write is in flight.
    pub fn items_in_flight(&self) -> usize {
        self.in_flight
            .as_ref()
            .map_or(0, |in_flight| in_flight.len())
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.options
    }
}

impl std::ops::Deref for Database {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}
