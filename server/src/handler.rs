//! The seam between the transport and whatever executes operations (the engine adapter).

use serde::Deserialize;
use shoal_model::ApiError;
use shoal_tables::capacity::metering::CallCharge;

/// How `/shoal/crash` ends the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashMode {
    /// The process dies as by SIGKILL: what reached the OS survives.
    Kill,
    /// What was not yet fsynced is lost too, then the process dies as by SIGKILL.
    PowerLoss,
}

/// Sends this process SIGKILL: nothing is flushed, no destructor or exit handler runs, and
/// a supervisor sees the same death as from `kill -9`.
pub fn kill_this_process() -> ! {
    // SAFETY: kill(2) and getpid(2) on our own process; no memory is involved.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    // SIGKILL cannot be caught, so this is not reached; abort is the nearest thing if it were.
    std::process::abort()
}

/// What the transport calls for each operation; the engine adapter implements it.
///
/// The transport has already checked the HTTP method, content type, JSON syntax, target and
/// authentication when it calls the handler. The handler does everything after that, in
/// DynamoDB's order: shape and type errors (`SerializationException`), member constraints
/// (`ValidationException`), semantic checks, then execution.
///
/// Calls run on tokio's blocking pool (`spawn_blocking`), at most `handler_threads` at once
/// (the others wait for a turn without a thread), so a handler may block on fsync or locks,
/// except the operations [`DynamoHandler::runs_inline`] names, which run on the
/// connection's own task because handing them to another thread would cost more than they do.
/// A panic in a handler is caught and answered as `InternalServerError`.
pub trait DynamoHandler: Send + Sync + 'static {
    /// Runs `operation` (the `X-Amz-Target` suffix, e.g. `"PutItem"`, always one of
    /// [`DynamoHandler::operations`]) on `body`, the text of the request's JSON object (its
    /// grammar checked, nothing more). `region` is the region the request was sent to (its
    /// SigV4 credential scope's), which the ARNs in the answer name.
    ///
    /// Returns the response body: the JSON text of an object. An error's `extra` members
    /// (`CancellationReasons`, `Item`, …) become further top-level members of the error body.
    fn handle(
        &self,
        operation: &str,
        body: &[u8],
        region: Option<&str>,
    ) -> Result<Vec<u8>, ApiError>;

    /// [`DynamoHandler::handle`], also giving the capacity units the call was charged
    /// (tables and indexes together), whether or not the request asked for them, and the
    /// items a read returned with their size: what a recording writes. The answer must be
    /// exactly `handle`'s. The default knows neither (the recorder then sizes the items from
    /// the answer).
    fn handle_charged(
        &self,
        operation: &str,
        body: &[u8],
        region: Option<&str>,
    ) -> (Result<Vec<u8>, ApiError>, CallCharge) {
        (self.handle(operation, body, region), CallCharge::default())
    }

    /// The operation names this handler knows; any other target is answered with
    /// `UnknownOperationException` without calling the handler.
    fn operations(&self) -> &[&'static str];

    /// Whether `operation` may run on the async runtime's own threads: true only for
    /// operations that never wait (no fsync, no lock a writer holds across I/O) and take
    /// microseconds. The default runs everything on the blocking pool.
    fn runs_inline(&self, _operation: &str) -> bool {
        false
    }

    /// Ends the process at once, as the admin API's `/shoal/crash` asks: like SIGKILL, after
    /// first losing what a power cut would for [`CrashMode::PowerLoss`] (the handler knows
    /// its storage). The default knows no storage and only kills.
    fn crash(&self, mode: CrashMode) -> ! {
        let _ = mode;
        kill_this_process()
    }

    /// The admin API's replication knobs (`/shoal/replication`): with no `change`, the
    /// state (lag, Regions cut off, each link's backlog and lag); with one
    /// (`{"cut": R}`, `{"heal": R}` or `{"lagMs": "MS|MIN-MAX"}`), applies it and answers the
    /// state. The default knows no global tables.
    fn replication(&self, change: Option<&serde_json::Value>) -> Result<serde_json::Value, String> {
        let _ = change;
        Err("this server has no global tables".to_owned())
    }

    /// Appends engine statistics to the `/metrics` page, in Prometheus text format (one
    /// `# TYPE` line per metric family, names prefixed `shoal_`). The default adds nothing.
    fn render_metrics(&self, _out: &mut String) {}

    /// The testing knobs in force, as a JSON object, for the admin API's
    /// `GET /shoal/settings` (the console shows them). The default knows none.
    fn settings(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    /// The largest item collections of `table` for the admin API's `GET
    /// /shoal/collections`: at most `limit`, from a walk bounded per call that starts
    /// `after` the position a previous answer's `next` named. The default keeps none.
    fn item_collections(
        &self,
        table: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<serde_json::Value, String> {
        let _ = (table, after, limit);
        Err("this server keeps no item collections".to_owned())
    }

    /// Contributor Insights' rankings of table `table` (or its GSI `index`) over the last
    /// `minutes` minutes, `top` keys per rule, as JSON (`GET /shoal/contributors`); None if
    /// there is no such table or index. `table` None: the tables and indexes followed.
    /// The default knows no tables.
    fn contributors(
        &self,
        _table: Option<&str>,
        _index: Option<&str>,
        _minutes: u64,
        _top: usize,
    ) -> Option<serde_json::Value> {
        None
    }

    /// The storage's health, which `GET /` answers. The default knows no storage.
    fn health(&self) -> StorageHealth {
        StorageHealth::Healthy
    }
}

/// What `GET /` reports of the storage behind the handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageHealth {
    /// `200 healthy: <host> `.
    Healthy,
    /// Serving reads and writes, but damaged data was met: `200 degraded: <host>: <why> `.
    Degraded(String),
    /// Writes are refused (a failed sync, a full disk, a failed flush): `503 unhealthy:
    /// <host>: writes refused: <why> `, so that a supervisor restarts the server.
    WritesRefused(String),
}
