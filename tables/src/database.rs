//! `Database`: DynamoDB tables on one LSM database — the engine's public entry point.
//!
//! `Database::open(path, Options)`, then one method per DynamoDB operation, each taking the
//! operation's typed request (`crate::api`) and returning its typed response or the
//! `ApiError` a DynamoDB client expects. The operations live in their own folders as
//! further `impl Database` blocks (`items/`, `query_scan/`, `control/`, and each feature's).

use std::path::Path;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use shoal_vfs::Fs;

use crate::backups::pitr_clock::PitrRetention;
use crate::core::feature::{Feature, Features};
use crate::core::store::Core;
use crate::emulation::conflicts::InFlight;
use crate::emulation::lag::{self, LagTicker, LaggedSnapshots};
use crate::options::Options;
use crate::streams::lifecycle;
use crate::streams::record::StreamRetention;
use shoal_engine::{Db, DbError};

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
    /// `EmulationOptions::capacity` says so.
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
    /// Tables CREATING, UPDATING or DELETING for `EmulationOptions::transient_status_delay`.
    pub(crate) transitions: Arc<crate::emulation::transient::Transitions>,
    /// Recent snapshots for lagged reads (`emulation::lag`), with `EmulationOptions::gsi_lag` or
    /// `EmulationOptions::eventual_read_lag`.
    pub(crate) lagged: Option<Arc<LaggedSnapshots>>,
    /// Keeps `lagged` current; stopped on drop.
    _lag_ticker: Option<LagTicker>,
    /// Items of writes in flight, with `EmulationOptions::transaction_conflicts`.
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
            options.streams.retention,
        )));
        let pitr = Arc::new(PitrRetention::default());
        let db = Db::open_with_fs(fs, path, options.db_options(&retention, &pitr))?;
        let transitions = Arc::new(crate::emulation::transient::Transitions::new(
            options.emulation.transient_status_delay,
        ));
        let db = Arc::new(db);
        let horizon = [
            options.emulation.gsi_lag,
            options.emulation.eventual_read_lag,
        ]
        .into_iter()
        .flatten()
        .map(|lag| lag.max)
        .max()
        .filter(|horizon| !horizon.is_zero());
        let (lagged, lag_ticker) = match horizon {
            Some(horizon) => {
                let (lagged, ticker) = lag::start(&db, horizon, options.emulation.lag_seed)?;
                (Some(lagged), Some(ticker))
            }
            None => (None, None),
        };
        let in_flight = options
            .emulation
            .transaction_conflicts
            .then(|| Arc::new(InFlight::default()));
        let throttle = crate::capacity::throttle::Throttle::new(
            options.emulation.capacity,
            options.clock.clone(),
        );
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
        let core = Core::new(
            db,
            features,
            options.limits.item_collection_size_limit_bytes,
        );
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

    /// Items that writes hold in flight now (`EmulationOptions::transaction_conflicts`; always 0
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
