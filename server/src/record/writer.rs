//! The recording's writer thread: takes calls off the queue, turns each into a line
//! (`extract.rs`) and appends it, rotating the file at half the recording's byte cap.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::extract::{Call, Extractor, TableKeys};
use super::format::{write_request_line, End, Line, Start, TableLine, VERSION};
use super::{Counters, Entry, Queue, Queued, RecordOptions};
use crate::handler::DynamoHandler;

/// Room kept for a file's `end` line (about 70 bytes).
const END_LINE_BYTES_MAX: u64 = 128;
/// Most tables described into a file's head.
const TABLES_DESCRIBED_MAX: usize = 1_000;

/// How often the writer takes the queue. It sleeps between takes rather than block on a
/// signal: a signal from the request path on every call (a futex wake on the request's
/// thread, a context switch on both) cost as much as writing the line; a sleeping writer is
/// woken by nobody, and each take drains every call queued meanwhile. The queue's bounds
/// hold [`super::QUEUE_RECORDS_MAX`] calls, far more than arrive in one interval.
const POLL_INTERVAL: Duration = Duration::from_millis(5);
/// Room the emptied queue buffers keep between takes: a burst's larger buffers are given
/// back, and a steady stream's fit without growing again.
const KEPT_BODY_BYTES_MAX: usize = 4 << 20;
const KEPT_ENTRIES_MAX: usize = 16_384;

/// How a recording ended.
#[derive(Debug, Default)]
pub struct Summary {
    pub records: u64,
    pub dropped: u64,
    /// Bytes written, over every file.
    pub bytes: u64,
    pub files: u32,
    /// Why the writer stopped early (a failed write): the calls after it were dropped.
    pub error: Option<String>,
}

pub struct Writer {
    path: PathBuf,
    rotated_path: PathBuf,
    part_bytes_max: u64,
    file: BufWriter<File>,
    /// Bytes in the current file.
    file_bytes: u64,
    /// Request lines in the current file.
    file_records: u64,
    /// Bytes of the current file's head (start and table lines).
    head_bytes: u64,
    part: u32,
    hashed: bool,
    started: Instant,
    handler: Arc<dyn DynamoHandler>,
    extractor: Extractor,
    /// The last description of each table, for the head of a rotated file.
    descriptions: Vec<(String, Value)>,
    summary: Summary,
    /// The line being written, its allocation kept from call to call.
    line_text: Vec<u8>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn open(path: &PathBuf) -> Result<BufWriter<File>, String> {
    File::create(path)
        .map(|file| BufWriter::with_capacity(1 << 20, file))
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}

impl Writer {
    /// Creates the file and writes its head: the `start` line and every table.
    pub fn create(
        options: &RecordOptions,
        hash_key: Option<[u8; 32]>,
        started: Instant,
        handler: Arc<dyn DynamoHandler>,
    ) -> Result<Writer, String> {
        let mut rotated = options.path.clone().into_os_string();
        rotated.push(".1");
        let mut writer = Writer {
            file: open(&options.path)?,
            path: options.path.clone(),
            rotated_path: PathBuf::from(rotated),
            part_bytes_max: options.max_bytes / 2,
            file_bytes: 0,
            file_records: 0,
            head_bytes: 0,
            part: 0,
            hashed: hash_key.is_some(),
            started,
            handler,
            extractor: Extractor::new(hash_key),
            descriptions: Vec::new(),
            summary: Summary::default(),
            line_text: Vec::new(),
        };
        for name in writer.table_names() {
            writer.describe(&name);
        }
        writer.head()?;
        writer.summary.files = 1;
        Ok(writer)
    }

    /// Every table's name (ListTables, page by page).
    fn table_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut start: Option<String> = None;
        while names.len() < TABLES_DESCRIBED_MAX {
            let mut request = json!({});
            if let Some(start) = &start {
                request["ExclusiveStartTableName"] = json!(start);
            }
            let Ok(answer) =
                self.handler
                    .handle("ListTables", request.to_string().as_bytes(), None)
            else {
                break;
            };
            let answer: Value = serde_json::from_slice(&answer).unwrap_or_default();
            names.extend(
                answer["TableNames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_str().map(str::to_string)),
            );
            match answer["LastEvaluatedTableName"].as_str() {
                Some(last) => start = Some(last.to_string()),
                None => break,
            }
        }
        names.truncate(TABLES_DESCRIBED_MAX);
        names
    }

    /// Describes table `name` into the cache; the description, if it has one.
    fn describe(&mut self, name: &str) -> Option<Value> {
        let request = json!({"TableName": name}).to_string();
        let answer = self
            .handler
            .handle("DescribeTable", request.as_bytes(), None)
            .ok()?;
        let table = serde_json::from_slice::<Value>(&answer).ok()?["Table"].take();
        self.extractor
            .tables
            .insert(name.to_string(), Arc::new(TableKeys::of(&table)));
        let room = self.descriptions.len() < TABLES_DESCRIBED_MAX;
        match self.descriptions.iter_mut().find(|(n, _)| n == name) {
            Some((_, slot)) => *slot = table.clone(),
            None if room => self.descriptions.push((name.to_string(), table.clone())),
            None => {}
        }
        Some(table)
    }

    fn at_us(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// A file's first lines: `start` and every known table.
    fn head(&mut self) -> Result<(), String> {
        let start = Line::Start(Start {
            version: VERSION,
            time_ms: now_ms(),
            part: self.part,
            hashed_keys: self.hashed,
            bodies: !self.hashed,
        });
        self.write(&start)?;
        let at_us = self.at_us();
        for (_, table) in self.descriptions.clone() {
            self.write(&Line::Table(TableLine { at_us, table }))?;
        }
        self.head_bytes = self.file_bytes;
        Ok(())
    }

    fn write(&mut self, line: &Line) -> Result<(), String> {
        let mut text = serde_json::to_vec(line).map_err(|e| e.to_string())?;
        text.push(b'\n');
        self.write_text(&text)
    }

    fn write_text(&mut self, text: &[u8]) -> Result<(), String> {
        self.file
            .write_all(text)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        self.file_bytes += text.len() as u64;
        self.summary.bytes += text.len() as u64;
        Ok(())
    }

    /// Closes the current file with its `end` line.
    fn end(&mut self, counters: &Counters) -> Result<(), String> {
        let dropped = counters.dropped_in_file.swap(0, Ordering::Relaxed);
        self.summary.dropped += dropped;
        let end = Line::End(End {
            records: self.file_records,
            dropped,
            time_ms: now_ms(),
        });
        self.write(&end)?;
        self.file
            .flush()
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }

    /// Appends a line, rotating first if it would take the file (with its end line) past
    /// half the cap.
    fn append(&mut self, text: &[u8], counters: &Counters) -> Result<(), String> {
        let room = self.part_bytes_max.saturating_sub(END_LINE_BYTES_MAX);
        if self.file_bytes + text.len() as u64 > room {
            self.rotate(counters)?;
        }
        self.write_text(text)
    }

    /// Closes the file, moves it to `FILE.1` and begins a new one.
    fn rotate(&mut self, counters: &Counters) -> Result<(), String> {
        self.end(counters)?;
        std::fs::rename(&self.path, &self.rotated_path)
            .map_err(|e| format!("cannot rotate {}: {e}", self.path.display()))?;
        self.file = open(&self.path)?;
        self.file_bytes = 0;
        self.file_records = 0;
        self.part += 1;
        self.summary.files += 1;
        self.head()
    }

    fn one(
        &mut self,
        entry: &Entry,
        request: &[u8],
        answer: &[u8],
        counters: &Counters,
    ) -> Result<(), String> {
        let call = Call {
            at_us: entry.at_us,
            operation: entry.operation,
            request,
            answer: entry.succeeded.then_some(answer),
            error: entry.error,
            units: entry.units,
            returned: entry.returned,
            latency_us: entry.latency_us,
        };
        let extracted = self.extractor.line(&call);
        let changed_table =
            matches!(entry.operation, "CreateTable" | "UpdateTable") && entry.succeeded;
        let table = extracted.line.table.clone();
        let mut text = std::mem::take(&mut self.line_text);
        text.clear();
        let written = write_request_line(Box::new(extracted.line), extracted.body, &mut text)
            .map_err(|e| e.to_string())
            .and_then(|()| self.append_request(&text, counters));
        self.line_text = text;
        written?;
        if changed_table {
            if let Some(description) = table.and_then(|name| self.describe(&name)) {
                let at_us = self.at_us();
                let line = Line::Table(TableLine {
                    at_us,
                    table: description,
                });
                let mut text = serde_json::to_vec(&line).map_err(|e| e.to_string())?;
                text.push(b'\n');
                self.append(&text, counters)?;
            }
        }
        Ok(())
    }

    /// Appends a request line, or counts it dropped when it could never fit in a file.
    fn append_request(&mut self, text: &[u8], counters: &Counters) -> Result<(), String> {
        // The file stays under half the cap, its end line included: it rotates first when
        // this line would take it over. A line that could never fit is not written.
        let room = self.part_bytes_max.saturating_sub(END_LINE_BYTES_MAX);
        if text.len() as u64 + self.head_bytes > room {
            counters.dropped_in_file.fetch_add(1, Ordering::Relaxed);
            counters.dropped_total.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        self.append(text, counters)?;
        self.file_records += 1;
        self.summary.records += 1;
        counters.recorded_total.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Writes calls until the recording is closed and its queue drained, then the `end`
    /// line.
    pub fn run(mut self, queue: &Queue, counters: &Counters) -> Summary {
        let mut failed = None;
        let mut taken = Queued::default();
        loop {
            let began = Instant::now();
            // Read before the take: once closed, this take holds every call there will be.
            let closed = queue.closed.load(Ordering::Acquire);
            queue.take(&mut taken);
            for (entry, request, answer) in taken.calls() {
                if failed.is_some() {
                    // Written no more: counted as dropped.
                    counters.dropped_total.fetch_add(1, Ordering::Relaxed);
                    self.summary.dropped += 1;
                    continue;
                }
                if let Err(error) = self.one(entry, request, answer, counters) {
                    tracing::error!(%error, "recording stopped writing");
                    failed = Some(error);
                }
            }
            if closed {
                break;
            }
            taken.clear();
            taken.bodies.shrink_to(KEPT_BODY_BYTES_MAX);
            taken.entries.shrink_to(KEPT_ENTRIES_MAX);
            std::thread::sleep(POLL_INTERVAL.saturating_sub(began.elapsed()));
        }
        if failed.is_none() {
            if let Err(error) = self.end(counters) {
                failed = Some(error);
            }
        }
        self.summary.error = failed;
        self.summary
    }
}
