//! `Database`: DynamoDB tables on one LSM database — the engine's public entry point.
//!
//! `Database::open(path, Options)`, then one method per DynamoDB operation, each taking the
//! operation's typed request (`crate::api`) and returning its typed response or the
//! `ApiError` a DynamoDB client expects. The operations live in their own folders as
//! further `impl Database` blocks (`items/`, `query_scan/`, `control/`, and each feature's).

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use shoal_vfs::Fs;

use crate::backups::BackupsState;
use crate::capacity::throttle::CapacityMode;
use crate::capacity::CapacityState;
use crate::control::settings::ENDPOINT_ADDRESS_DEFAULT;
use crate::control::ControlState;
use crate::core::feature::{Feature, Features};
use crate::core::store::Core;
use crate::emulation::EmulationState;
use crate::items::transact::TokenTable;
use crate::options::Options;
use crate::partiql::statements::StatementCache;
use crate::replication::feature::ReplicationLog;
use crate::replication::ReplicationState;
use crate::streams::lifecycle::{self, Streams};
use crate::streams::record::StreamRetention;
use crate::transfer::TransferState;
use shoal_engine::{Db, DbError};

/// An open datastore of DynamoDB tables: the [`Core`] every operation works on (it derefs to
/// it), and the state of each feature, one field each.
///
/// The core is shared with the threads that outlive a request (index backfills, the
/// upkeep); the backfills and exports stop when the database is dropped.
pub struct Database {
    pub(crate) core: Core,
    pub(crate) options: Options,
    /// Index backfills and DescribeEndpoints' address (`control`).
    pub(crate) control: ControlState,
    /// Recent TransactWriteItems `ClientRequestToken`s (`items::transact`).
    pub(crate) transaction_tokens: TokenTable,
    /// PartiQL statements parsed lately, by text (`partiql::statements`).
    pub(crate) statements: StatementCache,
    /// Streams' shared state, also a registered feature (`streams`).
    pub(crate) streams: Arc<Streams>,
    /// Backups in use and point-in-time recovery's retention, also a registered feature
    /// (`backups`).
    pub(crate) backups: BackupsState,
    /// Exports and imports (`transfer`).
    pub(crate) transfer: TransferState,
    /// Consumed capacity and throttling (`capacity`).
    pub(crate) capacity: CapacityState,
    /// Lags, transaction conflicts and transient statuses, as the options ask (`emulation`).
    pub(crate) emulation: EmulationState,
    /// The upkeep thread (stream shards and retention, Time to Live sweeps, the
    /// point-in-time clock), started with the first feature that needs it; stopped on drop.
    pub(crate) upkeep: Mutex<Option<crate::upkeep::Upkeep>>,
    /// Global tables' replication thread and knobs, also a registered feature
    /// (`replication`).
    pub(crate) replication: ReplicationState,
}

impl Database {
    /// Opens (creating if needed) the datastore in `path`.
    pub fn open(path: &Path, options: Options) -> Result<Database, DbError> {
        let database = Database::open_with_fs(shoal_vfs::RealFs::shared(), path, options)?;
        database
            .transfer
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
        let backups = BackupsState::default();
        let db = Db::open_with_fs(fs, path, options.db_options(&retention, &backups.pitr))?;
        let db = Arc::new(db);
        let emulation = EmulationState::open(&db, &options.emulation)?;
        let capacity = CapacityState::new(options.emulation.capacity, options.clock.clone());
        let transfer = TransferState::open(&db, options.upkeep)?;
        let streams = Arc::new(Streams::new(retention));
        let replication = ReplicationState::new(&options.replication);
        // The features that ride on writes and on the catalog (`core::feature`), in the
        // order their hooks run.
        let features = Features::new(vec![
            Arc::clone(&streams) as Arc<dyn Feature>,
            Arc::new(crate::ttl::TimeToLive),
            Arc::clone(&backups.pitr) as Arc<dyn Feature>,
            Arc::new(ReplicationLog {
                wakeup: Arc::clone(&replication.wakeup),
            }),
        ]);
        let core = Core::new(
            db,
            features,
            options.limits.item_collection_size_limit_bytes,
        );
        let database = Database {
            core,
            options,
            control: ControlState::new(ENDPOINT_ADDRESS_DEFAULT.to_string()),
            transaction_tokens: Default::default(),
            statements: Default::default(),
            streams,
            backups,
            transfer,
            capacity,
            emulation,
            upkeep: Mutex::new(None),
            replication,
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
        // Contributor Insights enabled before the restart counts again from now.
        database.recount_observing();
        database.start_upkeep()?;
        // Queues left by a close or a crash drain, replicas left CREATING are filled again.
        database
            .resume_replication()
            .map_err(|e| DbError::Poisoned(e.message))?;
        Ok(database)
    }

    /// A `Database` sharing this one's storage, catalog, locks and statistics, for the
    /// upkeep thread. It runs no backfills of its own, keeps its own transaction tokens and
    /// capacity meter and an idle throttle (nothing it does uses them), and starts no upkeep.
    pub(crate) fn share(&self) -> Database {
        Database {
            core: self.core.clone(),
            options: self.options.clone(),
            control: ControlState::new(self.control.endpoint_address.read().clone()),
            transaction_tokens: Default::default(),
            statements: Default::default(),
            streams: Arc::clone(&self.streams),
            backups: self.backups.clone(),
            transfer: self.transfer.share(),
            capacity: CapacityState::new(CapacityMode::Off, self.options.clock.clone()),
            emulation: self.emulation.share(),
            upkeep: Mutex::new(None),
            replication: self.replication.share(),
        }
    }

    /// Items that writes hold in flight now (`EmulationOptions::transaction_conflicts`; always 0
    /// without it): lets a test wait until a held write is in flight.
    pub fn items_in_flight(&self) -> usize {
        self.emulation
            .in_flight
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
