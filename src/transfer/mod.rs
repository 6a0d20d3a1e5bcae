//! `shoal copy`, `shoal export` and `shoal import`: moving a table between any two
//! DynamoDB-compatible endpoints (Shoal, Amazon DynamoDB, ScyllaDB's Alternator, DynamoDB
//! Local) and directories in DynamoDB's S3 export layout, resumably.
//!
//! A copy is a set of units of work — the segments of a parallel Scan of an endpoint's
//! table, or the data files of an export directory — each read page by page and written to
//! the destination (BatchWriteItem with back-off to an endpoint, gzip members appended to
//! one data file per unit for a directory). After each page the resume file (`state.rs`)
//! records how far the unit got, so an interrupted copy run again with the same arguments
//! goes on from there.

pub mod batch_write;
pub mod cli;
pub mod dir;
pub mod embedded;
pub mod file_read;
pub mod scan;
pub mod schema;
pub mod state;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use crate::client::target::{Client, Target};
use crate::client::ConnectOptions;
use batch_write::{BatchWriter, RateLimiter};
use dir::{DirDestination, DirSource};
use file_read::FileReader;
use scan::{ScanPage, SegmentReader, SEGMENTS_MAX};
use state::{CopyState, UnitOutput, UnitState};

/// Threads moving units at once, however many units there are.
const WORKERS_MAX: usize = 64;

/// One end of a copy.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    /// A DynamoDB-compatible endpoint (`http://…` or `https://…`).
    Endpoint(String),
    /// A directory in DynamoDB's S3 export layout.
    Dir(PathBuf),
}

impl Location {
    /// An `http://` or `https://` URL is an endpoint; anything else a directory.
    pub fn parse(text: &str) -> Location {
        if text.starts_with("http://") || text.starts_with("https://") {
            Location::Endpoint(text.to_string())
        } else {
            Location::Dir(PathBuf::from(text))
        }
    }
}

/// What a copy is asked to do.
#[derive(Debug, Clone)]
pub struct CopyOptions {
    pub from: String,
    pub to: String,
    /// The source table.
    pub table: String,
    /// The destination table (default: the source's name).
    pub to_table: Option<String>,
    /// Create the destination table from the source's schema.
    pub create: bool,
    /// Scan segments of an endpoint source.
    pub segments: u32,
    /// At most this many items a second to the destination.
    pub items_per_second: Option<f64>,
    /// The resume file (default: `.shoal-copy-<table>.json` in the working directory).
    pub state_file: Option<PathBuf>,
    /// Ignore a resume file and start from the beginning.
    pub restart: bool,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

/// What a finished copy did.
#[derive(Debug, Clone)]
pub struct CopyReport {
    /// Items written by this run.
    pub items: u64,
    /// Items an interrupted earlier run had written (and this one did not read again).
    pub items_resumed: u64,
    pub seconds: f64,
    /// Requests sent again after throttling, unprocessed items or a lost connection.
    pub retries: u64,
}

/// Where the items come from.
enum Source {
    Endpoint {
        target: Arc<Target>,
        /// The table's DescribeTable `Table`.
        description: Value,
    },
    Dir(DirSource),
}

impl Source {
    fn open(location: &Location, table: &str, connect: &ConnectOptions) -> Result<Source, String> {
        match location {
            Location::Endpoint(url) => {
                let target = Arc::new(Target::endpoint(url, connect)?);
                let description = describe(&mut target.client()?, table)?
                    .ok_or_else(|| format!("the source has no table {table}"))?;
                Ok(Source::Endpoint {
                    target,
                    description,
                })
            }
            Location::Dir(path) => Ok(Source::Dir(DirSource::open(path)?)),
        }
    }

    /// The source table's description, if the source has one.
    fn description(&self) -> Option<&Value> {
        match self {
            Source::Endpoint { description, .. } => Some(description),
            Source::Dir(dir) => dir.description.as_ref(),
        }
    }

    /// Items in the source (an estimate for an endpoint).
    fn item_count(&self) -> Option<u64> {
        match self {
            Source::Endpoint { description, .. } => description["ItemCount"].as_u64(),
            Source::Dir(dir) => Some(dir.item_count),
        }
    }

    /// The names of the units of a copy that starts.
    fn unit_names(&self, segments: u32) -> Vec<String> {
        match self {
            Source::Endpoint { .. } => {
                let segments = segments.clamp(1, SEGMENTS_MAX);
                (0..segments)
                    .map(|segment| format!("segment {segment} of {segments}"))
                    .collect()
            }
            Source::Dir(dir) => dir
                .files
                .iter()
                .map(|(path, _)| path.display().to_string())
                .collect(),
        }
    }

    /// Unit `unit` of `units`, from `cursor` on.
    fn reader(
        &self,
        table: &str,
        unit: usize,
        units: usize,
        cursor: Option<Value>,
    ) -> Result<UnitReader, String> {
        match self {
            Source::Endpoint { target, .. } => Ok(UnitReader::Scan(SegmentReader::new(
                Arc::clone(target),
                table,
                unit as u32,
                units as u32,
                cursor,
            )?)),
            Source::Dir(dir) => Ok(UnitReader::File(FileReader::open(
                &dir.files[unit].0,
                cursor,
            )?)),
        }
    }
}

/// One unit being read.
enum UnitReader {
    Scan(SegmentReader),
    File(FileReader),
}

impl UnitReader {
    fn next_page(&mut self) -> Result<Option<ScanPage>, String> {
        match self {
            UnitReader::Scan(reader) => reader.next_page(),
            UnitReader::File(reader) => reader.next_page(),
        }
    }
}

/// Where the items go.
enum Destination {
    Endpoint {
        target: Arc<Target>,
        table: String,
        key_names: Vec<String>,
    },
    Dir(DirDestination),
}

/// Runs a copy to its end (or to its first error, leaving the resume file).
pub fn copy(options: &CopyOptions) -> Result<CopyReport, String> {
    let from = Location::parse(&options.from);
    let to = Location::parse(&options.to);
    if matches!(to, Location::Dir(_)) && (options.create || options.to_table.is_some()) {
        return Err(
            "--create and --to-table name a destination table: a directory destination has none"
                .into(),
        );
    }
    let to_table = options
        .to_table
        .clone()
        .unwrap_or_else(|| options.table.clone());
    let connect = ConnectOptions::from_env()?;
    let source = Source::open(&from, &options.table, &connect)?;

    let state_path = options
        .state_file
        .clone()
        .unwrap_or_else(|| default_state_file(&options.table));
    let fresh = CopyState::new(&options.from, &options.to, &options.table, &to_table);
    let resumed = match CopyState::load(&state_path)? {
        Some(_) if options.restart => None,
        Some(state) if state.is_for(&fresh) => Some(state),
        Some(_) => {
            return Err(format!(
                "{} records another copy: name another --state file, or --restart to discard it",
                state_path.display()
            ))
        }
        None => None,
    };

    let destination = match &to {
        Location::Endpoint(url) => {
            let target = Arc::new(Target::endpoint(url, &connect)?);
            let description = endpoint_table(
                &mut target.client()?,
                &to_table,
                options.create,
                resumed.is_some(),
                source.description(),
            )?;
            Destination::Endpoint {
                target,
                table: to_table.clone(),
                key_names: schema::key_names(&description),
            }
        }
        Location::Dir(dir) => {
            let export_id = resumed
                .as_ref()
                .and_then(|state| state.export_id.clone())
                .unwrap_or_else(DirDestination::new_export_id);
            Destination::Dir(DirDestination::open(dir, &export_id)?)
        }
    };

    let state = match resumed {
        Some(state) => state,
        None => {
            let mut state = fresh;
            state.units = source
                .unit_names(options.segments)
                .into_iter()
                .map(UnitState::new)
                .collect();
            if let Destination::Dir(dir) = &destination {
                state.export_id = Some(dir.export_id().to_string());
            }
            state.save(&state_path)?;
            state
        }
    };
    let items_resumed = state.items();
    let bar = progress_bar(options.progress, source.item_count(), items_resumed);

    let units = state.units.len();
    let shared = Shared {
        state: Mutex::new(state),
        state_path: state_path.clone(),
        stop: AtomicBool::new(false),
        error: Mutex::new(None),
        written: AtomicU64::new(0),
        retries: AtomicU64::new(0),
        next_unit: AtomicU64::new(0),
        bar,
    };
    let limiter = Arc::new(RateLimiter::new(options.items_per_second));
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..units.clamp(1, WORKERS_MAX) {
            scope.spawn(|| {
                if let Err(error) = work(&shared, &source, &destination, &limiter, options, units) {
                    shared.fail(error);
                }
            });
        }
    });
    shared.bar.finish_and_clear();
    let failed = shared
        .error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if let Some(error) = failed {
        return Err(format!(
            "{error}\nthe copy stopped; {} records how far it got: run the same command again to go on",
            state_path.display()
        ));
    }
    if let Destination::Dir(dir) = destination {
        let description = source.description().cloned().unwrap_or(Value::Null);
        dir.finish(&description)?;
    }
    CopyState::remove(&state_path)?;
    Ok(CopyReport {
        items: shared.written.load(Ordering::Relaxed),
        items_resumed,
        seconds: started.elapsed().as_secs_f64(),
        retries: shared.retries.load(Ordering::Relaxed),
    })
}

/// One worker: takes units until none is left, reads each page by page and writes each
/// page before recording it.
fn work(
    shared: &Shared,
    source: &Source,
    destination: &Destination,
    limiter: &Arc<RateLimiter>,
    options: &CopyOptions,
    units: usize,
) -> Result<(), String> {
    let mut batch_writer = match destination {
        Destination::Endpoint {
            target,
            table,
            key_names,
        } => Some(BatchWriter::new(
            Arc::clone(target),
            table,
            key_names.clone(),
            Arc::clone(limiter),
        )?),
        Destination::Dir(_) => None,
    };
    let result = (|| {
        while let Some(unit) = shared.take_unit(units) {
            let recorded = shared.unit(unit);
            let mut file = match destination {
                Destination::Dir(dir) => {
                    Some(dir.unit_file(recorded.output.as_ref(), recorded.items)?)
                }
                Destination::Endpoint { .. } => None,
            };
            if !recorded.done {
                let mut reader = source.reader(&options.table, unit, units, recorded.cursor)?;
                while let Some(page) = reader.next_page()? {
                    if shared.stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    let output = match (&mut batch_writer, &mut file) {
                        (Some(writer), _) => {
                            writer.write(&page.items)?;
                            None
                        }
                        (None, Some(file)) => {
                            limiter.take(page.items.len());
                            Some(file.write_page(&page.items)?)
                        }
                        (None, None) => unreachable!("every destination has a writer"),
                    };
                    shared.page_written(unit, page.items.len() as u64, page.next, output)?;
                }
            }
            // A unit done in an earlier run is entered in this run's manifest too.
            if let Some(file) = file {
                file.finish()?;
            }
        }
        Ok(())
    })();
    if let Some(writer) = batch_writer {
        shared.retries.fetch_add(writer.retries, Ordering::Relaxed);
    }
    result
}

/// The description of the destination's table `table`, created from `source` first with
/// `create` (a resumed copy finds the table its first run created).
fn endpoint_table(
    client: &mut Client,
    table: &str,
    create: bool,
    resuming: bool,
    source: Option<&Value>,
) -> Result<Value, String> {
    match describe(client, table)? {
        Some(_) if create && !resuming => Err(format!(
            "the destination already has a table {table}: leave out --create to copy into it"
        )),
        Some(description) => Ok(description),
        None if create => {
            let source = source.ok_or(
                "the source has no table description (shoal-table.json) to create the table from: create it first",
            )?;
            let request = schema::create_table_request(source, table)?;
            client
                .call("CreateTable", request.to_string().as_bytes())
                .map_err(|e| format!("CreateTable {table}: {}: {}", e.code, e.message))?;
            client.wait_until_active(table)?;
            Ok(source.clone())
        }
        None => Err(format!(
            "the destination has no table {table}: create it, or pass --create to make it from the source's schema"
        )),
    }
}

/// What the workers of one copy share.
struct Shared {
    state: Mutex<CopyState>,
    state_path: PathBuf,
    stop: AtomicBool,
    error: Mutex<Option<String>>,
    written: AtomicU64,
    retries: AtomicU64,
    next_unit: AtomicU64,
    bar: indicatif::ProgressBar,
}

impl Shared {
    /// The next unit no worker has taken, unless the copy is stopping.
    fn take_unit(&self, units: usize) -> Option<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let unit = self.next_unit.fetch_add(1, Ordering::Relaxed) as usize;
        (unit < units).then_some(unit)
    }

    /// What the resume file says of unit `unit`.
    fn unit(&self, unit: usize) -> UnitState {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.units[unit].clone()
    }

    /// Records that unit `unit` wrote `items` more (into `output`, for a directory) and
    /// goes on at `next` (None: it is done).
    fn page_written(
        &self,
        unit: usize,
        items: u64,
        next: Option<Value>,
        output: Option<UnitOutput>,
    ) -> Result<(), String> {
        self.written.fetch_add(items, Ordering::Relaxed);
        self.bar.inc(items);
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let recorded = &mut state.units[unit];
        recorded.items += items;
        recorded.done = next.is_none();
        recorded.cursor = next;
        if output.is_some() {
            recorded.output = output;
        }
        state.save(&self.state_path)
    }

    /// Keeps the first error and stops every worker at its next page.
    fn fail(&self, error: String) {
        self.stop.store(true, Ordering::Relaxed);
        let mut first = self.error.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(error);
    }
}

/// DescribeTable's `Table`, or None if there is no such table.
fn describe(client: &mut Client, table: &str) -> Result<Option<Value>, String> {
    let body = serde_json::json!({ "TableName": table }).to_string();
    match client.call("DescribeTable", body.as_bytes()) {
        Ok(answer) => {
            let mut answer: Value = serde_json::from_slice(&answer).map_err(|e| e.to_string())?;
            Ok(Some(answer["Table"].take()))
        }
        Err(error) if error.code == "ResourceNotFoundException" => Ok(None),
        Err(error) => Err(format!(
            "DescribeTable {table}: {}: {}",
            error.code, error.message
        )),
    }
}

/// A bar counting items against the source's item count when it has one (DynamoDB's is
/// refreshed every six hours: an estimate), a counter otherwise.
fn progress_bar(shown: bool, total: Option<u64>, done: u64) -> indicatif::ProgressBar {
    let bar = crate::progress::bar(shown, total.map(|total| total.max(done)));
    bar.set_style(crate::progress::style(
        "copying [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} items ({per_sec}, {eta} left)",
    ));
    bar.set_position(done);
    bar
}

/// The default resume file of a copy of `table` (in the working directory).
pub fn default_state_file(table: &str) -> PathBuf {
    Path::new(".").join(format!(".shoal-copy-{table}.json"))
}
