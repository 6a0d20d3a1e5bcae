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
use scan::{SegmentReader, SEGMENTS_MAX};
use state::{CopyState, UnitState};

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

/// Runs a copy to its end (or to its first error, leaving the resume file).
pub fn copy(options: &CopyOptions) -> Result<CopyReport, String> {
    let from = Location::parse(&options.from);
    let to = Location::parse(&options.to);
    let to_table = options
        .to_table
        .clone()
        .unwrap_or_else(|| options.table.clone());
    let connect = ConnectOptions::from_env()?;
    let (Location::Endpoint(from_url), Location::Endpoint(to_url)) = (&from, &to) else {
        return Err("copies to or from a directory are not built yet".into());
    };
    let source = Arc::new(Target::endpoint(from_url, &connect)?);
    let destination = Arc::new(Target::endpoint(to_url, &connect)?);
    let description = describe(&mut source.client()?, &options.table)?
        .ok_or_else(|| format!("the source has no table {}", options.table))?;

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

    let mut destination_client = destination.client()?;
    let existing = describe(&mut destination_client, &to_table)?;
    let target_description = match existing {
        Some(table) => {
            if options.create && resumed.is_none() {
                return Err(format!(
                    "the destination already has a table {to_table}: leave out --create to copy into it"
                ));
            }
            table
        }
        None if options.create => {
            let request = schema::create_table_request(&description, &to_table)?;
            destination_client
                .call("CreateTable", request.to_string().as_bytes())
                .map_err(|e| format!("CreateTable {to_table}: {}: {}", e.code, e.message))?;
            wait_until_active(&mut destination_client, &to_table)?;
            description.clone()
        }
        None => {
            return Err(format!(
                "the destination has no table {to_table}: create it, or pass --create to make it from the source's schema"
            ))
        }
    };
    let key_names = schema::key_names(&target_description);

    let state = match resumed {
        Some(state) => state,
        None => {
            let mut state = fresh;
            let segments = options.segments.clamp(1, SEGMENTS_MAX);
            state.units = (0..segments)
                .map(|segment| UnitState::new(format!("segment {segment} of {segments}")))
                .collect();
            state.save(&state_path)?;
            state
        }
    };
    let items_resumed = state.items();
    let total = description["ItemCount"].as_u64();
    let bar = progress_bar(options.progress, total, items_resumed);

    let segments = state.units.len() as u32;
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
        for _ in 0..(segments as usize).min(WORKERS_MAX) {
            scope.spawn(|| {
                let work = || -> Result<(), String> {
                    let mut writer = BatchWriter::new(
                        Arc::clone(&destination),
                        &to_table,
                        key_names.clone(),
                        Arc::clone(&limiter),
                    )?;
                    let result = (|| {
                        while let Some(unit) = shared.take_unit(segments as usize) {
                            let (cursor, done) = shared.unit_start(unit);
                            if done {
                                continue;
                            }
                            let mut reader = SegmentReader::new(
                                Arc::clone(&source),
                                &options.table,
                                unit as u32,
                                segments,
                                cursor,
                            )?;
                            while let Some(page) = reader.next_page()? {
                                if shared.stop.load(Ordering::Relaxed) {
                                    return Ok(());
                                }
                                writer.write(&page.items)?;
                                shared.page_written(unit, page.items.len() as u64, page.next)?;
                            }
                        }
                        Ok(())
                    })();
                    shared.retries.fetch_add(writer.retries, Ordering::Relaxed);
                    result
                };
                if let Err(error) = work() {
                    shared.fail(error);
                }
            });
        }
    });
    shared.bar.finish_and_clear();
    if let Some(error) = shared.error.lock().map_err(|e| e.to_string())?.take() {
        return Err(format!(
            "{error}\nthe copy stopped; {} records how far it got: run the same command again to go on",
            state_path.display()
        ));
    }
    CopyState::remove(&state_path)?;
    Ok(CopyReport {
        items: shared.written.load(Ordering::Relaxed),
        items_resumed,
        seconds: started.elapsed().as_secs_f64(),
        retries: shared.retries.load(Ordering::Relaxed),
    })
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

    /// Where unit `unit` starts, and whether an earlier run finished it.
    fn unit_start(&self, unit: usize) -> (Option<Value>, bool) {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let recorded = &state.units[unit];
        (recorded.cursor.clone(), recorded.done)
    }

    /// Records that unit `unit` wrote `items` more and goes on at `next` (None: it is done).
    fn page_written(&self, unit: usize, items: u64, next: Option<Value>) -> Result<(), String> {
        self.written.fetch_add(items, Ordering::Relaxed);
        self.bar.inc(items);
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let recorded = &mut state.units[unit];
        recorded.items += items;
        recorded.done = next.is_none();
        recorded.cursor = next;
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

/// Waits until table `name` and its GSIs are ACTIVE (DynamoDB takes a while to create one).
fn wait_until_active(client: &mut Client, name: &str) -> Result<(), String> {
    client.wait_for_table(name, |answer| {
        answer.is_some_and(|table| {
            table["TableStatus"] == "ACTIVE"
                && table["GlobalSecondaryIndexes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .all(|index| index["IndexStatus"] == "ACTIVE")
        })
    })
}

/// A bar counting items against the source's item count when it has one (DynamoDB's is
/// refreshed every six hours: an estimate), a counter otherwise.
fn progress_bar(shown: bool, total: Option<u64>, done: u64) -> indicatif::ProgressBar {
    if !shown {
        return indicatif::ProgressBar::hidden();
    }
    let bar = match total {
        Some(total) => indicatif::ProgressBar::new(total.max(done)),
        None => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "copying [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} items ({per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_position(done);
    bar
}

/// The default resume file of a copy of `table` (in the working directory).
pub fn default_state_file(table: &str) -> PathBuf {
    Path::new(".").join(format!(".shoal-copy-{table}.json"))
}
