//! One import's run: the objects listed, read, parsed, checked and written into a staged
//! table (`control::staging`), which is then published — or discarded when the run fails.
//!
//! The work is a pipeline with bounded memory:
//! - a reader thread streams each object in key order through its decompression
//!   (`transfer::read`) and cuts it into chunks of at most [`CHUNK_LINES`] lines or
//!   [`CHUNK_BYTES`] bytes (CSV: records, cut by the `csv` crate, RFC 4180 quoting);
//! - worker threads parse each chunk's lines into items (`transfer::parse`) and check them
//!   as PutItem does (`check_item_limits`, `key_of_item`, `check_new_item`);
//! - the calling thread writes each chunk's items as one WAL record, in the order the
//!   chunks were read (so the last line of a key wins), and counts.
//!
//! At most [`CHUNKS_IN_FLIGHT`] chunks exist at once: the reader takes a slot before it
//! sends one and the writer frees it after writing, so a slow writer holds the reader back.
//!
//! A bad line (invalid JSON, no `Item`, a value the model refuses, a missing or mistyped
//! key, an empty key string, an item over 400 KB, a CSV record with too many fields, a
//! line over 4 MiB, an object that cannot be read past some point) is counted, skipped,
//! and written to the error log: `<data-dir>/import-errors/<ImportId>.jsonl`, one JSON
//! object `{"file": <key>, "line": <n>, "reason": <text>}` per line, or, for a database
//! without a directory, kept in memory (the first [`MEMORY_LOG_LINES_MAX`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use parking_lot::Mutex;
use shoal_model::{ApiError, Item};

use crate::control::staging::StagedTable;
use crate::core::catalog::TableDef;
use crate::core::clock::now_millis;
use crate::core::error::internal;
use crate::core::plan::ItemKey;
use crate::core::write::{check_new_item, key_of_item};
use crate::database::Database;
use crate::transfer::import::{
    typed_columns, ImportCounters, ImportJob, ImportLineError, ImportProgress, ImportRecord,
    InputFormat, INTERRUPTED_MESSAGE, ITEM_VALIDATION_FAILURE_PREFIX, MEMORY_LOG_LINES_MAX,
};
use crate::transfer::parse::{self, CsvColumns};
use crate::transfer::read::{self, Line, Lines, LINE_BYTES_MAX};
use crate::transfer::source::{self, SourceObject};

/// Lines per chunk, and so items per WAL record at most.
pub const CHUNK_LINES: usize = 1024;
/// Bytes of lines per chunk: a chunk of large items is cut early.
pub const CHUNK_BYTES: usize = 8 << 20;
/// Chunks read but not yet written.
const CHUNKS_IN_FLIGHT: usize = 8;
/// Parsing threads at most (the machine's cores, less the reader's and writer's share).
const WORKERS_MAX: usize = 4;

/// A line or record as read, before parsing.
enum Raw {
    Line(Vec<u8>),
    Record(csv::ByteRecord),
    Bad(String),
}

/// Consecutive lines of one object.
struct Chunk {
    seq: u64,
    object: usize,
    columns: Option<Arc<CsvColumns>>,
    entries: Vec<(u64, Raw)>,
}

/// A chunk parsed: each line's item and key, or why it is bad.
struct Parsed {
    seq: u64,
    object: usize,
    entries: Vec<(u64, CheckedLine)>,
}

/// A line's item and key, or why the line is bad.
type CheckedLine = Result<(ItemKey, Item), String>;

/// How a run ended, short of publishing.
enum Stopped {
    /// The database is closing.
    Interrupted,
    Failed {
        code: String,
        message: String,
    },
}

impl From<ApiError> for Stopped {
    fn from(error: ApiError) -> Stopped {
        Stopped::Failed {
            code: "InternalError".to_string(),
            message: error.message,
        }
    }
}

impl Database {
    /// Runs `job` to its end and returns its final record (stored).
    pub(crate) fn run_import(
        &self,
        job: ImportJob,
        progress: &mut dyn FnMut(&ImportProgress),
    ) -> ImportRecord {
        let mut record = job.record.clone();
        let mut log = ErrorLog::new(self.import_error_log_path(&record.id));
        let outcome = self.import_objects(&job, &mut record, &mut log, progress);
        let counts = job.progress.snapshot();
        record.processed_item_count = counts.items_processed;
        record.imported_item_count = counts.items_imported;
        record.error_count = counts.errors;
        record.processed_size_bytes = counts.bytes_processed;
        record.end_millis = Some(now_millis());
        let stopped = match outcome {
            Ok(staged) => match self.publish_import(&staged, &mut record, &log) {
                Ok(()) => None,
                Err(error) => {
                    let _ = self.discard(staged, Vec::new());
                    Some(Stopped::from(error))
                }
            },
            Err((staged, stopped)) => {
                if let Some(staged) = staged {
                    // A table that cannot be dropped now is dropped at the next open.
                    if let Err(error) = self.discard(staged, Vec::new()) {
                        tracing::warn!(%error, "a failed import's table could not be dropped");
                    }
                }
                Some(stopped)
            }
        };
        if let Some(stopped) = stopped {
            let (code, message) = match stopped {
                Stopped::Interrupted => ("InternalError".to_string(), INTERRUPTED_MESSAGE.into()),
                Stopped::Failed { code, message } => (code, message),
            };
            record.status = "FAILED".to_string();
            record.failure_code = Some(code);
            record.failure_message = Some(message);
            if let Err(error) = self.store_import_record(&record, Vec::new()) {
                // The record stays IN_PROGRESS and is marked FAILED at the next open.
                tracing::warn!(%error, "a failed import's record could not be stored");
            }
        }
        log.finish(self, &record.id);
        self.transfer.imports.finished(&record.id);
        record
    }

    /// Stores `record`'s outcome and makes the table visible, in one version change. With
    /// bad lines the import is FAILED (ItemValidationError) but the table stays with the
    /// valid items, as DynamoDB's does.
    fn publish_import(
        &self,
        staged: &StagedTable,
        record: &mut ImportRecord,
        log: &ErrorLog,
    ) -> Result<(), ApiError> {
        record.table_id = staged.table().id.clone();
        match log.failure_message() {
            Some(message) => {
                record.status = "FAILED".to_string();
                record.failure_code = Some("ItemValidationError".to_string());
                record.failure_message = Some(message);
            }
            None => record.status = "COMPLETED".to_string(),
        }
        let _records = self.transfer.imports.lock_records();
        let edits = self.import_record_edits(record)?;
        self.publish(staged, edits.clone())?;
        self.remove_trimmed_logs(&edits);
        Ok(())
    }

    /// Lists the objects, stages the table and fills it. On failure, the staged table (if
    /// any) is handed back for discarding.
    fn import_objects(
        &self,
        job: &ImportJob,
        record: &mut ImportRecord,
        log: &mut ErrorLog,
        progress: &mut dyn FnMut(&ImportProgress),
    ) -> Result<StagedTable, (Option<StagedTable>, Stopped)> {
        let objects =
            source::list_objects(&job.export_dir, &job.bucket, &job.prefix).map_err(|error| {
                (
                    None,
                    Stopped::Failed {
                        code: error.failure_code().to_string(),
                        message: error.failure_message(),
                    },
                )
            })?;
        job.progress.total_bytes.store(
            objects.iter().map(|object| object.size_bytes).sum(),
            Ordering::Relaxed,
        );
        let staged = self
            .stage_table(&job.schema)
            .map_err(|error| (None, Stopped::from(error)))?;
        record.table_id = staged.table().id.clone();
        match self.fill(job, &objects, &staged, log, progress) {
            Ok(()) => Ok(staged),
            Err(stopped) => Err((Some(staged), stopped)),
        }
    }

    /// The pipeline of the module docs.
    fn fill(
        &self,
        job: &ImportJob,
        objects: &[SourceObject],
        staged: &StagedTable,
        log: &mut ErrorLog,
        progress: &mut dyn FnMut(&ImportProgress),
    ) -> Result<(), Stopped> {
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, WORKERS_MAX);
        let (work_tx, work_rx) = sync_channel::<Chunk>(CHUNKS_IN_FLIGHT);
        let work_rx = Mutex::new(work_rx);
        let (done_tx, done_rx) = sync_channel::<Parsed>(CHUNKS_IN_FLIGHT);
        let (slot_tx, slot_rx) = sync_channel::<()>(CHUNKS_IN_FLIGHT);
        let table = staged.table();
        let stop = &self.transfer.imports.stop;
        std::thread::scope(|scope| {
            scope.spawn(move || {
                read_objects(job, objects, &work_tx, &slot_tx, stop);
            });
            for _ in 0..workers {
                let done_tx = done_tx.clone();
                let work_rx = &work_rx;
                scope.spawn(move || parse_chunks(table, work_rx, &done_tx));
            }
            drop(done_tx);
            // Returning drops the receivers, which ends the reader and the workers.
            self.write_chunks(
                staged,
                objects,
                done_rx,
                slot_rx,
                &job.progress,
                log,
                progress,
            )
        })
    }

    /// Writes parsed chunks in the order they were read.
    #[allow(clippy::too_many_arguments)]
    fn write_chunks(
        &self,
        staged: &StagedTable,
        objects: &[SourceObject],
        done_rx: Receiver<Parsed>,
        slot_rx: Receiver<()>,
        counters: &ImportCounters,
        log: &mut ErrorLog,
        progress: &mut dyn FnMut(&ImportProgress),
    ) -> Result<(), Stopped> {
        let mut waiting: BTreeMap<u64, Parsed> = BTreeMap::new();
        let mut next = 0;
        for parsed in done_rx.iter() {
            waiting.insert(parsed.seq, parsed);
            while let Some(parsed) = waiting.remove(&next) {
                next += 1;
                if self.transfer.imports.stop.load(Ordering::Acquire) {
                    return Err(Stopped::Interrupted);
                }
                let file = objects
                    .get(parsed.object)
                    .map_or("", |object| object.key.as_str());
                let mut good = Vec::with_capacity(parsed.entries.len());
                let mut good_lines = Vec::with_capacity(parsed.entries.len());
                let mut bad = 0;
                let processed = parsed.entries.len() as u64;
                for (line, outcome) in parsed.entries {
                    match outcome {
                        Ok(item) => {
                            good.push(item);
                            good_lines.push(line);
                        }
                        Err(reason) => {
                            bad += 1;
                            log.push(file, line, reason);
                        }
                    }
                }
                let refused = self.write_staged(staged, &good)?;
                for (position, error) in &refused {
                    bad += 1;
                    let line = good_lines.get(*position).copied().unwrap_or_default();
                    log.push(file, line, error.message.clone());
                }
                let imported = (good.len() - refused.len()) as u64;
                counters
                    .processed_items
                    .fetch_add(processed, Ordering::Relaxed);
                counters
                    .imported_items
                    .fetch_add(imported, Ordering::Relaxed);
                counters.errors.fetch_add(bad, Ordering::Relaxed);
                // The chunk is written: the reader may read another.
                let _ = slot_rx.recv();
                progress(&counters.snapshot());
            }
        }
        if self.transfer.imports.stop.load(Ordering::Acquire) {
            return Err(Stopped::Interrupted);
        }
        log.flush().map_err(internal)?;
        Ok(())
    }
}

/// The reader thread: every object in order, cut into chunks.
fn read_objects(
    job: &ImportJob,
    objects: &[SourceObject],
    work_tx: &SyncSender<Chunk>,
    slot_tx: &SyncSender<()>,
    stop: &std::sync::atomic::AtomicBool,
) {
    let mut seq = 0;
    let mut send =
        |object: usize, columns: Option<Arc<CsvColumns>>, entries: Vec<(u64, Raw)>| -> bool {
            if entries.is_empty() {
                return true;
            }
            if stop.load(Ordering::Acquire) || slot_tx.send(()).is_err() {
                return false;
            }
            let chunk = Chunk {
                seq,
                object,
                columns,
                entries,
            };
            seq += 1;
            work_tx.send(chunk).is_ok()
        };
    for (index, object) in objects.iter().enumerate() {
        let input = match read::open(
            &object.path,
            job.compression,
            Arc::clone(&job.progress.processed_bytes),
        ) {
            Ok(input) => input,
            Err(error) => {
                let bad = vec![(
                    1,
                    Raw::Bad(format!("The object could not be read: {error}")),
                )];
                if !send(index, None, bad) {
                    return;
                }
                continue;
            }
        };
        let going_on = match &job.format {
            InputFormat::DynamoDbJson => read_json_lines(input, index, &mut send),
            InputFormat::Csv { header, delimiter } => {
                read_csv(input, job, header, *delimiter, index, &mut send)
            }
        };
        if !going_on {
            return;
        }
    }
}

type SendChunk<'a> = dyn FnMut(usize, Option<Arc<CsvColumns>>, Vec<(u64, Raw)>) -> bool + 'a;

/// Sends the lines of one DYNAMODB_JSON object; false once the run is over.
fn read_json_lines(
    input: Box<dyn BufRead + Send>,
    object: usize,
    send: &mut SendChunk<'_>,
) -> bool {
    let mut lines = Lines::new(input);
    let mut buf = Vec::new();
    let mut entries = Vec::new();
    let mut bytes = 0;
    loop {
        let entry = match lines.next_line(&mut buf) {
            Ok(None) => break,
            Ok(Some(Line::TooLong)) => {
                Raw::Bad(format!("The line is longer than {LINE_BYTES_MAX} bytes"))
            }
            // Blank lines (a file's last newline, padding) are not items.
            Ok(Some(Line::Read)) if buf.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(Some(Line::Read)) => {
                bytes += buf.len();
                Raw::Line(buf.clone())
            }
            Err(error) => {
                let bad = Raw::Bad(format!("The object could not be read past here: {error}"));
                entries.push((lines.number() + 1, bad));
                break;
            }
        };
        entries.push((lines.number(), entry));
        if entries.len() >= CHUNK_LINES || bytes >= CHUNK_BYTES {
            if !send(object, None, std::mem::take(&mut entries)) {
                return false;
            }
            bytes = 0;
        }
    }
    send(object, None, entries)
}

/// Sends the records of one CSV object; false once the run is over.
fn read_csv(
    input: Box<dyn BufRead + Send>,
    job: &ImportJob,
    header: &Option<Vec<String>>,
    delimiter: u8,
    object: usize,
    send: &mut SendChunk<'_>,
) -> bool {
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .from_reader(input);
    let mut record = csv::ByteRecord::new();
    let mut columns = header
        .as_ref()
        .map(|names| Arc::new(CsvColumns::new(names.clone(), typed_columns(&job.schema))));
    let mut entries = Vec::new();
    let mut bytes = 0;
    loop {
        let line = reader.position().line();
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(error) => {
                entries.push((
                    line,
                    Raw::Bad(format!("The record cannot be read: {error}")),
                ));
                break;
            }
        }
        let line = record.position().map_or(line, |p| p.line());
        if columns.is_none() {
            // Each object's first line names its columns.
            let names = record
                .iter()
                .map(|name| String::from_utf8_lossy(name).into_owned())
                .collect();
            columns = Some(Arc::new(CsvColumns::new(names, typed_columns(&job.schema))));
            continue;
        }
        bytes += record.as_slice().len();
        entries.push((line, Raw::Record(record.clone())));
        if entries.len() >= CHUNK_LINES || bytes >= CHUNK_BYTES {
            if !send(object, columns.clone(), std::mem::take(&mut entries)) {
                return false;
            }
            bytes = 0;
        }
    }
    send(object, columns, entries)
}

/// A worker thread: parses and checks chunks until there are none.
fn parse_chunks(table: &TableDef, work_rx: &Mutex<Receiver<Chunk>>, done_tx: &SyncSender<Parsed>) {
    loop {
        let received = work_rx.lock().recv();
        let Ok(chunk) = received else {
            return;
        };
        let entries = chunk
            .entries
            .into_iter()
            .map(|(line, raw)| {
                let item = match raw {
                    Raw::Line(bytes) => parse::dynamodb_json_line(&bytes),
                    Raw::Record(record) => match &chunk.columns {
                        Some(columns) => columns.item(&record),
                        None => Err("The record has no header".to_string()),
                    },
                    Raw::Bad(reason) => Err(reason),
                };
                (line, item.and_then(|item| checked(table, item)))
            })
            .collect();
        let parsed = Parsed {
            seq: chunk.seq,
            object: chunk.object,
            entries,
        };
        if done_tx.send(parsed).is_err() {
            return;
        }
    }
}

/// An item checked as PutItem checks one: its key, with the reason it is bad otherwise.
fn checked(table: &TableDef, item: Item) -> Result<(ItemKey, Item), String> {
    shoal_model::check_item_limits(&item, false).map_err(|e| e.message)?;
    let key = key_of_item(table, &item).map_err(|e| e.message)?;
    check_new_item(table, &item, false).map_err(|e| e.message)?;
    Ok((key, item))
}

/// Where bad lines go: a JSON-lines file, or memory.
struct ErrorLog {
    path: Option<PathBuf>,
    file: Option<BufWriter<File>>,
    memory: Vec<ImportLineError>,
    first: Option<ImportLineError>,
    count: u64,
}

impl ErrorLog {
    fn new(path: Option<PathBuf>) -> ErrorLog {
        ErrorLog {
            path,
            file: None,
            memory: Vec::new(),
            first: None,
            count: 0,
        }
    }

    fn push(&mut self, file: &str, line: u64, reason: String) {
        let error = ImportLineError {
            file: file.to_string(),
            line,
            reason,
        };
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(error.clone());
        }
        if let Some(path) = &self.path {
            if self.file.is_none() {
                let created = path
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| File::create(path));
                match created {
                    Ok(file) => self.file = Some(BufWriter::new(file)),
                    Err(error) => {
                        tracing::warn!(%error, path = %path.display(), "the import's error log cannot be written; keeping it in memory");
                        self.path = None;
                    }
                }
            }
        }
        match &mut self.file {
            Some(file) => {
                let written = serde_json::to_writer(&mut *file, &error)
                    .map_err(std::io::Error::other)
                    .and_then(|()| file.write_all(b"\n"));
                if let Err(error) = written {
                    tracing::warn!(%error, "a line of an import's error log was lost");
                }
            }
            None if self.memory.len() < MEMORY_LOG_LINES_MAX => self.memory.push(error),
            None => {}
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }

    /// The FailureMessage of an import with bad lines; None without any.
    fn failure_message(&self) -> Option<String> {
        let first = self.first.as_ref()?;
        let location = match (&self.path, &self.file) {
            (Some(path), Some(_)) => path.display().to_string(),
            _ => "Database::import_errors".to_string(),
        };
        Some(format!(
            "{ITEM_VALIDATION_FAILURE_PREFIX} {} line(s) were not imported; the first: {} line {}: {}. Every one is listed in {location}",
            self.count, first.file, first.line, first.reason
        ))
    }

    /// Hands an in-memory log to the database's recent logs.
    fn finish(mut self, database: &Database, id: &str) {
        let _ = self.flush();
        if self.file.is_none() && self.count > 0 {
            database
                .transfer
                .imports
                .keep_memory_log(id, std::mem::take(&mut self.memory));
        }
    }
}

/// The first [`MEMORY_LOG_LINES_MAX`] bad lines of a log file.
pub(crate) fn read_error_log(path: &Path) -> Result<Vec<ImportLineError>, ApiError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(internal(error)),
    };
    BufReader::new(file)
        .lines()
        .take(MEMORY_LOG_LINES_MAX)
        .map(|line| {
            let line = line.map_err(internal)?;
            serde_json::from_str(&line).map_err(internal)
        })
        .collect()
}
