//! Recording the traffic a server answers (`shoal serve --record FILE`, or the admin API's
//! `/shoal/record`), for `shoal bench model-from` (a data model of the traffic) and `shoal
//! bench replay` (the same requests again).
//!
//! The request path only appends each finished call — its operation, the units it was
//! charged, its latency, and the request's bytes (and the answer's, only when a read's items
//! must be sized from it) — to a bounded queue ([`QUEUE_RECORDS_MAX`] calls and
//! [`QUEUE_BYTES_MAX`] bytes of bodies): a fixed-size entry and a copy of the bytes into two
//! buffers that one writer thread (`writer.rs`) swaps out for the two it emptied, so in a
//! steady stream no call allocates, and nothing allocated on a request's thread is freed on
//! the writer's (which the allocator does slowly). The writer works out what each line holds
//! (`extract.rs`) and appends it to the file (`format.rs` describes the file). When the queue is full the
//! call is not recorded: the client is never held up, and the dropped calls are counted, in
//! `/metrics` (`shoal_record_dropped_total`) and in the file's `end` line. Nothing the
//! client receives changes: the units come from the tables layer's own metering, which
//! runs for every call whether or not the client asked for ConsumedCapacity.
//!
//! The file is bounded: before a line would take it past half of `max_bytes` it is closed
//! (its `end` line written), renamed to `FILE.1` (replacing an older one) and a new `FILE`
//! is begun, so the recording never holds more than `max_bytes` on disk. A line that could
//! not fit in a file of its own (a body near half the cap) is dropped and counted.

mod extract;
pub mod format;
mod writer;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};
use shoal_tables::capacity::metering::Returned;

use crate::handler::DynamoHandler;

/// Calls the queue to the writer holds at most.
pub const QUEUE_RECORDS_MAX: usize = 65_536;
/// Bytes of request and answer bodies the queue holds at most.
pub const QUEUE_BYTES_MAX: usize = 64 << 20;
/// The smallest `max_bytes` a recording accepts.
pub const MAX_BYTES_MIN: u64 = 1 << 20;
/// `max_bytes` when none is given: 1 GiB.
pub const MAX_BYTES_DEFAULT: u64 = 1 << 30;

/// How to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOptions {
    pub path: PathBuf,
    /// The most bytes the recording holds on disk (`FILE` and `FILE.1` together).
    pub max_bytes: u64,
    /// Write keyed hashes of key and value texts, and no request bodies.
    pub hash_keys: bool,
}

/// One finished call, as the request path hands it over: its bodies are borrowed, and
/// copied into the queue only if there is room.
pub struct Captured<'a> {
    pub started: Instant,
    pub latency_us: u64,
    pub operation: &'static str,
    pub request: &'a [u8],
    /// The answer's body, when the call succeeded.
    pub answer: Option<&'a [u8]>,
    pub error: Option<&'static str>,
    pub units: Option<f64>,
    /// The items a read returned and their size, when the handler counted them.
    pub returned: Option<Returned>,
}

/// A queued call: what a line needs besides the bodies, which lie in [`Queued::bodies`]
/// (the request's bytes, then the answer's).
#[derive(Clone, Copy)]
struct Entry {
    /// Microseconds from the recording's start to the call's.
    at_us: u64,
    latency_us: u64,
    operation: &'static str,
    error: Option<&'static str>,
    units: Option<f64>,
    returned: Option<Returned>,
    succeeded: bool,
    request_bytes: usize,
    /// Bytes of the answer kept: none unless the line sizes a read's items from it.
    answer_bytes: usize,
}

/// Calls waiting for the writer: entries in arrival order, their bodies back to back.
#[derive(Default)]
struct Queued {
    entries: Vec<Entry>,
    bodies: Vec<u8>,
}

impl Queued {
    /// Each entry with its request's and kept answer's bytes.
    fn calls(&self) -> impl Iterator<Item = (&Entry, &[u8], &[u8])> {
        let mut offset = 0;
        self.entries.iter().map(move |entry| {
            let request = &self.bodies[offset..offset + entry.request_bytes];
            offset += entry.request_bytes;
            let answer = &self.bodies[offset..offset + entry.answer_bytes];
            offset += entry.answer_bytes;
            (entry, request, answer)
        })
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bodies.clear();
    }
}

/// The queue the request path appends to and the writer swaps out.
#[derive(Default)]
struct Queue {
    queued: Mutex<Queued>,
    /// Set when the last handle of the recording is gone: no call will be appended any
    /// more.
    closed: AtomicBool,
}

impl Queue {
    /// Swaps the queued calls for `emptied` (whose buffers keep their room).
    fn take(&self, emptied: &mut Queued) {
        emptied.clear();
        std::mem::swap(&mut *self.queued.lock(), emptied);
    }
}

/// Counters the request path and the writer share.
#[derive(Default)]
struct Counters {
    /// Dropped since the current file was begun (the writer takes it for the `end` line).
    dropped_in_file: AtomicU64,
    dropped_total: AtomicU64,
    recorded_total: AtomicU64,
}

/// A recording in progress: where the request path sends calls.
pub struct Recording {
    queue: Arc<Queue>,
    counters: Arc<Counters>,
    started: Instant,
}

impl Recording {
    /// Queues `call` for the writer, or counts it dropped when the queue is full: never
    /// waits but for the queue's lock, held while a call is copied in or the queue swapped.
    pub fn capture(&self, call: Captured<'_>) {
        let answer = match call.answer {
            Some(answer) if extract::sizes_from_answer(call.operation, call.returned) => answer,
            _ => &[],
        };
        let entry = Entry {
            at_us: u64::try_from(
                call.started
                    .saturating_duration_since(self.started)
                    .as_micros(),
            )
            .unwrap_or(u64::MAX),
            latency_us: call.latency_us,
            operation: call.operation,
            error: call.error,
            units: call.units,
            returned: call.returned,
            succeeded: call.answer.is_some(),
            request_bytes: call.request.len(),
            answer_bytes: answer.len(),
        };
        let mut queued = self.queue.queued.lock();
        let bytes = queued.bodies.len() + call.request.len() + answer.len();
        if queued.entries.len() >= QUEUE_RECORDS_MAX || bytes > QUEUE_BYTES_MAX {
            drop(queued);
            self.dropped();
            return;
        }
        queued.entries.push(entry);
        queued.bodies.extend_from_slice(call.request);
        queued.bodies.extend_from_slice(answer);
    }

    fn dropped(&self) {
        self.counters
            .dropped_in_file
            .fetch_add(1, Ordering::Relaxed);
        self.counters.dropped_total.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Recording {
    /// The last handle gone (the recorder's, and those of calls in flight), the writer
    /// drains what is queued and ends.
    fn drop(&mut self) {
        self.queue.closed.store(true, Ordering::Release);
    }
}

struct Running {
    recording: Arc<Recording>,
    thread: JoinHandle<writer::Summary>,
    options: RecordOptions,
}

/// The server's recorder: at most one recording at a time.
pub struct Recorder {
    active: AtomicBool,
    running: RwLock<Option<Running>>,
    /// Serialises start and stop.
    control: Mutex<()>,
    handler: Arc<dyn DynamoHandler>,
    counters: RwLock<Arc<Counters>>,
}

impl Recorder {
    pub fn new(handler: Arc<dyn DynamoHandler>) -> Recorder {
        Recorder {
            active: AtomicBool::new(false),
            running: RwLock::new(None),
            control: Mutex::new(()),
            handler,
            counters: RwLock::new(Arc::new(Counters::default())),
        }
    }

    /// Whether a recording is in progress (one relaxed load: the request path asks it on
    /// every call).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// The recording in progress, if any.
    pub fn current(&self) -> Option<Arc<Recording>> {
        if !self.is_active() {
            return None;
        }
        self.running
            .read()
            .as_ref()
            .map(|running| Arc::clone(&running.recording))
    }

    /// Starts recording as `options` say; refused while another recording runs, or when the
    /// file cannot be created.
    pub fn start(&self, options: RecordOptions) -> Result<Value, String> {
        let _control = self.control.lock();
        if self.running.read().is_some() {
            return Err("a recording is already running: stop it first".into());
        }
        if options.max_bytes < MAX_BYTES_MIN {
            return Err(format!(
                "max_bytes must be at least {MAX_BYTES_MIN}, not {}",
                options.max_bytes
            ));
        }
        let hash_key = options.hash_keys.then(rand::random::<[u8; 32]>);
        let counters = Arc::new(Counters::default());
        let started = Instant::now();
        let file = writer::Writer::create(&options, hash_key, started, Arc::clone(&self.handler))?;
        let queue = Arc::new(Queue::default());
        let thread = {
            let counters = Arc::clone(&counters);
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name("shoal-record".into())
                .spawn(move || file.run(&queue, &counters))
                .map_err(|e| format!("cannot start the recording's writer: {e}"))?
        };
        let recording = Arc::new(Recording {
            queue,
            counters: Arc::clone(&counters),
            started,
        });
        *self.counters.write() = counters;
        *self.running.write() = Some(Running {
            recording,
            thread,
            options: options.clone(),
        });
        self.active.store(true, Ordering::Relaxed);
        tracing::info!(path = %options.path.display(), hash_keys = options.hash_keys, "recording requests");
        Ok(self.status())
    }

    /// Stops the recording in progress: the calls already queued are written, then the
    /// file's `end` line. Blocks until then (call it off the async runtime's threads). None
    /// when no recording ran.
    pub fn stop(&self) -> Option<Value> {
        let _control = self.control.lock();
        self.active.store(false, Ordering::Relaxed);
        let running = self.running.write().take()?;
        let path = running.options.path.display().to_string();
        // The writer ends once every handle is gone: this one, and those of calls in flight.
        drop(running.recording);
        let summary = running.thread.join().unwrap_or_else(|_| writer::Summary {
            error: Some("the recording's writer panicked".into()),
            ..writer::Summary::default()
        });
        tracing::info!(
            path,
            records = summary.records,
            dropped = summary.dropped,
            "recording stopped"
        );
        Some(json!({
            "file": path,
            "records": summary.records,
            "dropped": summary.dropped,
            "bytes": summary.bytes,
            "files": summary.files,
            "error": summary.error,
        }))
    }

    /// What `GET /shoal/record` answers.
    pub fn status(&self) -> Value {
        let counters = Arc::clone(&self.counters.read());
        match self.running.read().as_ref() {
            Some(running) => json!({
                "recording": true,
                "file": running.options.path.display().to_string(),
                "max_bytes": running.options.max_bytes,
                "hash_keys": running.options.hash_keys,
                "seconds": running.recording.started.elapsed().as_secs_f64(),
                "records": counters.recorded_total.load(Ordering::Relaxed),
                "dropped": counters.dropped_total.load(Ordering::Relaxed),
            }),
            None => json!({"recording": false}),
        }
    }

    /// Appends the recorder's families to `/metrics`.
    pub fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write;
        let counters = Arc::clone(&self.counters.read());
        let _ = write!(
            out,
            "# HELP shoal_recording 1 while requests are being recorded.\n\
             # TYPE shoal_recording gauge\nshoal_recording {}\n\
             # HELP shoal_record_requests_total Requests written to the current or last recording.\n\
             # TYPE shoal_record_requests_total counter\nshoal_record_requests_total {}\n\
             # HELP shoal_record_dropped_total Requests not recorded because the queue to the writer was full.\n\
             # TYPE shoal_record_dropped_total counter\nshoal_record_dropped_total {}\n",
            u8::from(self.is_active()),
            counters.recorded_total.load(Ordering::Relaxed),
            counters.dropped_total.load(Ordering::Relaxed),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::format::{parse_line, Line};
    use super::*;
    use shoal_model::ApiError;

    /// Knows no tables and answers every call with `{}`.
    struct Empty;

    impl DynamoHandler for Empty {
        fn handle(&self, _: &str, _: &[u8], _: Option<&str>) -> Result<Vec<u8>, ApiError> {
            Ok(b"{}".to_vec())
        }
        fn operations(&self) -> &[&'static str] {
            &["GetItem"]
        }
    }

    fn call(request: &[u8]) -> Captured<'_> {
        Captured {
            started: Instant::now(),
            latency_us: 5,
            operation: "GetItem",
            request,
            answer: Some(b"{}"),
            error: None,
            units: Some(0.5),
            returned: None,
        }
    }

    /// A recorder of [`Empty`] recording into `calls.jsonl` of the returned folder.
    fn recording_started(hash_keys: bool) -> (tempfile::TempDir, Recorder) {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::new(Arc::new(Empty));
        recorder
            .start(RecordOptions {
                path: dir.path().join("calls.jsonl"),
                max_bytes: MAX_BYTES_DEFAULT,
                hash_keys,
            })
            .unwrap();
        (dir, recorder)
    }

    fn lines(path: &std::path::Path) -> Vec<Line> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter_map(parse_line)
            .collect()
    }

    #[test]
    fn the_file_rotates_at_half_its_cap_and_never_holds_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let recorder = Recorder::new(Arc::new(Empty));
        let options = RecordOptions {
            path: path.clone(),
            max_bytes: MAX_BYTES_MIN,
            hash_keys: false,
        };
        recorder.start(options.clone()).unwrap();
        assert!(recorder.start(options).is_err(), "two recordings at once");
        let body = format!(
            "{{\"TableName\":\"T\",\"Key\":{{\"k\":{{\"S\":\"{}\"}}}}}}",
            "v".repeat(1000)
        );
        let recording = recorder.current().unwrap();
        // About 1.1 KB a line: 1,500 lines are over three halves of the cap.
        for _ in 0..1500 {
            recording.capture(call(body.as_bytes()));
        }
        drop(recording);
        let summary = recorder.stop().unwrap();
        assert!(recorder.current().is_none());
        assert_eq!(summary["records"], 1500, "{summary}");
        assert_eq!(summary["dropped"], 0, "{summary}");
        assert!(summary["files"].as_u64().unwrap() >= 3, "{summary}");
        let rotated = dir.path().join("calls.jsonl.1");
        let on_disk =
            std::fs::metadata(&path).unwrap().len() + std::fs::metadata(&rotated).unwrap().len();
        assert!(on_disk <= MAX_BYTES_MIN, "{on_disk}");
        // Each file opens with its start line and closes with its end line.
        for file in [&rotated, &path] {
            let lines = lines(file);
            assert!(
                matches!(lines.first(), Some(Line::Start(_))),
                "{}",
                file.display()
            );
            match lines.last() {
                Some(Line::End(end)) => {
                    let requests = lines
                        .iter()
                        .filter(|l| matches!(l, Line::Request(_)))
                        .count();
                    assert_eq!(end.records, requests as u64);
                }
                other => panic!("{}: ends with {other:?}", file.display()),
            }
        }
        match &lines(&path)[0] {
            Line::Start(start) => assert!(start.part >= 2, "{start:?}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_call_the_queue_has_no_room_for_is_dropped_and_counted() {
        let (dir, recorder) = recording_started(true);
        let path = dir.path().join("calls.jsonl");
        let recording = recorder.current().unwrap();
        recording.capture(call(&vec![b' '; QUEUE_BYTES_MAX + 1]));
        recording.capture(call(b"{}"));
        drop(recording);
        let mut metrics = String::new();
        recorder.render_metrics(&mut metrics);
        assert!(
            metrics.contains("shoal_record_dropped_total 1\n"),
            "{metrics}"
        );
        let summary = recorder.stop().unwrap();
        assert_eq!(summary["dropped"], 1, "{summary}");
        assert_eq!(summary["records"], 1, "{summary}");
        match lines(&path).last() {
            Some(Line::End(end)) => assert_eq!((end.records, end.dropped), (1, 1)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_a_read_whose_items_were_not_counted_queues_its_answer() {
        let (dir, recorder) = recording_started(false);
        let path = dir.path().join("calls.jsonl");
        let recording = recorder.current().unwrap();
        let request = br#"{"TableName":"T"}"#;
        let answer = br#"{"Item":{"k":{"S":"abc"}}}"#;
        let queued_bytes = |captured: Captured<'_>| {
            let before = recording.queue.queued.lock().bodies.len();
            recording.capture(captured);
            recording.queue.queued.lock().bodies.len() - before
        };
        // Uncounted: the answer is queued, and the line sizes the item from it.
        let uncounted = queued_bytes(Captured {
            answer: Some(answer),
            ..call(request)
        });
        assert_eq!(uncounted, request.len() + answer.len());
        // Counted by the handler: the answer stays behind.
        let counted = Captured {
            answer: Some(answer),
            returned: Some(Returned {
                items: 1,
                bytes: 99,
            }),
            ..call(request)
        };
        assert_eq!(queued_bytes(counted), request.len());
        // A write's answer is never sized: never queued.
        let put = Captured {
            operation: "PutItem",
            answer: Some(answer),
            ..call(request)
        };
        assert_eq!(queued_bytes(put), request.len());
        drop(recording);
        recorder.stop().unwrap();
        let sizes: Vec<_> = lines(&path)
            .into_iter()
            .filter_map(|line| match line {
                Line::Request(request) => Some((request.op, request.items, request.item_bytes)),
                _ => None,
            })
            .collect();
        assert_eq!(
            sizes,
            [
                ("GetItem".to_string(), Some(1), Some(1 + 3)),
                ("GetItem".to_string(), Some(1), Some(99)),
                ("PutItem".to_string(), None, None),
            ]
        );
    }
}
