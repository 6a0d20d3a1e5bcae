//! `shoal crash-test --server`: it crashes a server process again and again and checks what
//! survived over HTTP. Against `shoal serve` it finds nothing; against a fake DynamoDB server
//! that loses acknowledged writes on purpose (this file's `fake_dynamodb_server`, run as a
//! process by the crash test) it names each kind of violation; what the fake does not offer
//! is reported as not offered; and SIGTERM leaves no process and no data behind.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The fake server's settings, from the environment of its process.
const PORT_VAR: &str = "SHOAL_FAKE_DYNAMODB_PORT";
const DATA_VAR: &str = "SHOAL_FAKE_DYNAMODB_DATA";
const FAULT_VAR: &str = "SHOAL_FAKE_DYNAMODB_FAULT";

pub(crate) fn shoal() -> &'static str {
    env!("CARGO_BIN_EXE_shoal")
}

/// Runs `shoal crash-test ARGS --json` in the repository's directory; its output.
pub(crate) fn crash_test(args: &[&str]) -> Output {
    Command::new(shoal())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("crash-test")
        .args(args)
        .arg("--json")
        .output()
        .expect("run shoal crash-test")
}

pub(crate) fn report(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}):\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The command that runs this test binary as the fake server with `fault`.
fn fake_server(fault: &str) -> String {
    let exe = std::env::current_exe().expect("the test binary");
    format!(
        "{PORT_VAR}={{port}} {DATA_VAR}={{data}} {FAULT_VAR}={fault} exec '{}' \
         crash_test_server::fake_dynamodb_server --exact --ignored --nocapture --test-threads 1",
        exe.display()
    )
}

/// Crash-tests the fake server with `fault`; the report, and whether it exited 1.
fn against_fake(fault: &str, cycles: &str) -> (Value, bool) {
    let output = crash_test(&[
        "--server",
        &fake_server(fault),
        "--cycles",
        cycles,
        "--kill-after-ms",
        "150-500",
        "--seed",
        "11",
    ]);
    let failed = output.status.code() == Some(1);
    (report(&output), failed)
}

/// The descriptions of violations of `kind`.
fn violations<'a>(report: &'a Value, kind: &str) -> Vec<&'a str> {
    report["violations"][kind]
        .as_array()
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn shoal_serve_keeps_every_acknowledged_write() {
    let command = format!("'{}' serve --port {{port}} --data-dir {{data}}", shoal());
    let output = crash_test(&["--server", &command, "--cycles", "3"]);
    let report = report(&output);
    assert!(output.status.success(), "{report:#}");
    assert_eq!(report["cycles"], 3);
    assert_eq!(report["violations"], json!({}));
    // Shoal offers everything the workload uses, so everything was checked.
    assert_eq!(report["not_offered"], json!({}));
    assert!(report["acknowledged_checked"].as_u64().unwrap() > 0);
    // Its Time to Live deleted every expired item, each once and named as the service's.
    assert!(
        report["expired_deleted"].as_u64().unwrap() > 0,
        "{report:#}"
    );
    assert_eq!(report["recovery_ms"].as_array().unwrap().len(), 3);
}

#[test]
fn a_lost_write_is_named_with_its_request_and_what_was_read_back() {
    let (report, failed) = against_fake("lost-write", "10");
    assert!(failed, "{report:#}");
    let lost = violations(&report, "acknowledged write lost");
    assert!(!lost.is_empty(), "{report:#}");
    assert!(lost[0].contains("acknowledged: p"), "{}", lost[0]);
    assert!(lost[0].contains("reads back"), "{}", lost[0]);
    assert!(lost[0].contains("expected"), "{}", lost[0]);
    assert_eq!(report["seed"], 11);
}

#[test]
fn a_half_applied_transaction_is_caught() {
    let (report, failed) = against_fake("half-transaction", "10");
    assert!(failed, "{report:#}");
    let half = violations(&report, "transaction half-applied");
    assert!(!half.is_empty(), "{report:#}");
    for violation in &half {
        assert!(
            violation.contains("TransactWriteItems [Put p"),
            "{violation}"
        );
        // An acknowledged transaction names the key kept as written and the one lost; one
        // the crash caught in flight (which one comes first depends on where the kill
        // lands) names each key applied or not.
        let acknowledged = violation.contains("as written, but");
        let in_flight = violation.contains("in flight at the crash: p")
            && violation.contains(" applied (reads back")
            && violation.contains(" not applied (reads back");
        assert!(acknowledged || in_flight, "{violation}");
    }
}

#[test]
fn index_drift_is_caught_once_the_gsi_had_time_to_settle() {
    let (report, failed) = against_fake("index-drift", "2");
    assert!(failed, "{report:#}");
    let drift = violations(&report, "index drift");
    assert!(!drift.is_empty(), "{report:#}");
    assert!(
        drift[0].starts_with("GSI ByG, 5 s after recovery: p"),
        "{}",
        drift[0]
    );
    assert!(drift[0].contains("the index holds absent"), "{}", drift[0]);
}

#[test]
fn a_duplicated_stream_record_is_caught() {
    let (report, failed) = against_fake("stream-duplicate", "2");
    assert!(failed, "{report:#}");
    let duplicated = violations(&report, "stream record duplicated");
    assert!(!duplicated.is_empty(), "{report:#}");
    assert!(duplicated[0].contains("records for"), "{}", duplicated[0]);
}

#[test]
fn a_missing_stream_record_is_caught() {
    let (report, failed) = against_fake("stream-missing", "2");
    assert!(failed, "{report:#}");
    let missing = violations(&report, "stream record missing");
    assert!(!missing.is_empty(), "{report:#}");
    assert!(missing[0].contains("expected"), "{}", missing[0]);
}

#[test]
fn a_server_that_keeps_expired_items_is_caught_after_the_bound() {
    let output = crash_test(&[
        "--server",
        &fake_server("keep-expired"),
        "--cycles",
        "2",
        "--kill-after-ms",
        "150-500",
        "--expiry-bound-seconds",
        "1",
    ]);
    let report = report(&output);
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    let kept = violations(&report, "expired item not deleted");
    assert_eq!(kept.len(), 1, "{report:#}");
    assert!(
        kept[0].contains("still there 1 s after the last recovery: x/i"),
        "{}",
        kept[0]
    );
    // Only that: the same writes were otherwise kept, and nothing was seen deleted.
    assert_eq!(
        report["violations"].as_object().unwrap().len(),
        1,
        "{report:#}"
    );
    assert_eq!(report["expired_deleted"], 0);
    // The neighbouring case: asked not to wait, the run checks no deletes and says so.
    let output = crash_test(&[
        "--server",
        &fake_server("keep-expired"),
        "--cycles",
        "1",
        "--kill-after-ms",
        "150-300",
        "--expiry-bound-seconds",
        "0",
    ]);
    let unchecked = self::report(&output);
    assert!(output.status.success(), "{unchecked:#}");
    assert_eq!(
        unchecked["not_checked"],
        json!({"expired items deleted": "--expiry-bound-seconds 0"})
    );
}

#[test]
fn an_expiry_whose_record_does_not_name_the_service_is_caught() {
    let (report, failed) = against_fake("unmarked-expiry", "2");
    assert!(failed, "{report:#}");
    let unmarked = violations(&report, "expired item deleted without the service's name");
    assert!(!unmarked.is_empty(), "{report:#}");
    assert!(unmarked[0].starts_with("x/i"), "{}", unmarked[0]);
    assert!(unmarked[0].contains("[INSERT, REMOVE]"), "{}", unmarked[0]);
}

#[test]
fn what_a_server_does_not_offer_is_reported_and_not_a_violation() {
    let (report, failed) = against_fake("bare", "3");
    assert!(!failed, "{report:#}");
    assert_eq!(report["cycles"], 3);
    assert_eq!(report["violations"], json!({}));
    let not_offered = report["not_offered"].as_object().unwrap();
    for what in ["transactions", "stream", "Time to Live"] {
        assert!(not_offered.contains_key(what), "{report:#}");
    }
    assert!(
        not_offered["transactions"]
            .as_str()
            .unwrap()
            .contains("UnknownOperationException"),
        "{report:#}"
    );
    // Without transactions the same workload still ran its other writes.
    assert!(report["acknowledged_checked"].as_u64().unwrap() > 0);
}

#[test]
fn a_port_already_served_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let output = Command::new(shoal())
        .args([
            "crash-test",
            "--server",
            "true {port} {data}",
            "--port",
            &port,
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("something already answers"), "{stderr}");
}

#[test]
fn sigterm_kills_the_server_removes_the_data_and_prints_a_partial_report() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    // Each start appends the group's id (the shell's pid) and the data directory.
    let command = format!(
        "echo $$ {{data}} >> '{}'; exec '{}' serve --port {{port}} --data-dir {{data}}",
        started.display(),
        shoal()
    );
    let run = Command::new(shoal())
        .args(["crash-test", "--server", &command, "--cycles", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for a restart: the run is then in the middle of its cycles.
    let waited = Instant::now();
    while std::fs::read_to_string(&started)
        .unwrap_or_default()
        .lines()
        .count()
        < 2
    {
        assert!(waited.elapsed() < Duration::from_secs(60), "no restart");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let (code, stdout) = terminate(run);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("interrupted: a partial report"), "{stdout}");
    assert!(stdout.contains("cycles,"), "{stdout}");
    for line in std::fs::read_to_string(&started).unwrap().lines() {
        let (pgid, data) = line.split_once(' ').unwrap();
        assert_group_gone(pgid);
        let data = Path::new(data);
        assert!(!data.exists(), "{} was not removed", data.display());
        assert!(!data.parent().unwrap().exists());
    }
}

/// Sends SIGTERM to a running crash test and waits for it: its exit code and what it printed.
pub(crate) fn terminate(mut run: Child) -> (Option<i32>, String) {
    // SAFETY: kill(2) to the crash test's own pid, which this test started and has not reaped.
    unsafe {
        libc::kill(run.id() as libc::pid_t, libc::SIGTERM);
    }
    let mut stdout = String::new();
    if let Some(mut out) = run.stdout.take() {
        out.read_to_string(&mut stdout).unwrap();
    }
    (run.wait().unwrap().code(), stdout)
}

/// Asserts that no process of group `pgid` is alive.
pub(crate) fn assert_group_gone(pgid: &str) {
    let pgid: libc::pid_t = pgid.parse().unwrap();
    // SAFETY: signal 0 only asks whether any process of the group exists.
    let alive = unsafe { libc::kill(-pgid, 0) } == 0;
    assert!(!alive, "process group {pgid} is still alive");
}

// ---------------------------------------------------------------------------------------
// The fake server.

/// How the fake server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Every tenth PutItem is acknowledged but never persisted.
    LostWrite,
    /// A transaction persists its Put and not its Delete.
    HalfTransaction,
    /// A Scan of the GSI leaves out its first item.
    IndexDrift,
    /// GetRecords gives the third record twice.
    StreamDuplicate,
    /// GetRecords leaves out the third record.
    StreamMissing,
    /// No transactions, no stream, no Time to Live, as dynalite; durable otherwise.
    Bare,
    /// Time to Live accepted, but expired items are never deleted.
    KeepExpired,
    /// Expired items deleted with a stream record that does not name the service.
    UnmarkedExpiry,
}

impl Fault {
    fn parse(text: &str) -> Fault {
        match text {
            "lost-write" => Fault::LostWrite,
            "half-transaction" => Fault::HalfTransaction,
            "index-drift" => Fault::IndexDrift,
            "stream-duplicate" => Fault::StreamDuplicate,
            "stream-missing" => Fault::StreamMissing,
            "bare" => Fault::Bare,
            "keep-expired" => Fault::KeepExpired,
            "unmarked-expiry" => Fault::UnmarkedExpiry,
            other => panic!("unknown fault {other}"),
        }
    }
}

/// A table's items and stream records.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {
    created: bool,
    stream: bool,
    #[serde(default)]
    time_to_live: bool,
    items: BTreeMap<String, Value>,
    records: Vec<Value>,
}

fn name_of(key: &Value) -> String {
    format!(
        "{}/{}",
        key["pk"]["S"].as_str().unwrap_or_default(),
        key["sk"]["S"].as_str().unwrap_or_default()
    )
}

fn keys_of(item: &Value) -> Value {
    json!({"pk": item["pk"], "sk": item["sk"]})
}

impl State {
    fn record(&mut self, event: &str, keys: Value) {
        if self.stream {
            let sequence = format!("{:021}", self.records.len() + 1);
            self.records.push(json!({"eventName": event,
                "dynamodb": {"Keys": keys, "SequenceNumber": sequence}}));
        }
    }

    fn put(&mut self, item: &Value) {
        let existed = self.items.insert(name_of(item), item.clone()).is_some();
        self.record(if existed { "MODIFY" } else { "INSERT" }, keys_of(item));
    }

    fn delete(&mut self, key: &Value) {
        if self.items.remove(&name_of(key)).is_some() {
            self.record("REMOVE", keys_of(key));
        }
    }

    /// Time to Live: deletes the items whose `expires` has passed, each with a REMOVE record
    /// naming the service as DynamoDB's does (unless `marked` is false).
    fn sweep(&mut self, marked: bool) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let expired: Vec<String> = self
            .items
            .iter()
            .filter(|(_, item)| {
                item["expires"]["N"]
                    .as_str()
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|expires| expires < now)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in expired {
            let item = self.items.remove(&name).unwrap();
            self.record("REMOVE", keys_of(&item));
            if marked && self.stream {
                let record = self.records.last_mut().unwrap();
                record["userIdentity"] =
                    json!({"Type": "Service", "PrincipalId": "dynamodb.amazonaws.com"});
            }
        }
    }

    /// The workload's updates: `SET a = :a, b = :b [REMOVE c]`.
    fn update(&mut self, request: &Value) {
        let key = &request["Key"];
        let expression = request["UpdateExpression"].as_str().unwrap_or_default();
        let (set, remove) = expression
            .split_once(" REMOVE ")
            .unwrap_or((expression, ""));
        let existed = self.items.contains_key(&name_of(key));
        let item = self
            .items
            .entry(name_of(key))
            .or_insert_with(|| keys_of(key));
        for assignment in set.trim_start_matches("SET ").split(',') {
            let (name, value) = assignment.split_once('=').unwrap();
            item[name.trim()] = request["ExpressionAttributeValues"][value.trim()].clone();
        }
        for name in remove.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            item.as_object_mut().unwrap().remove(name);
        }
        self.record(if existed { "MODIFY" } else { "INSERT" }, keys_of(key));
    }
}

struct Fake {
    fault: Fault,
    /// What clients see.
    memory: State,
    /// What survives a crash (saved to `path` after every write).
    persisted: State,
    path: PathBuf,
    puts: u64,
}

impl Fake {
    fn save(&self) {
        let temporary = self.path.with_extension("tmp");
        std::fs::write(&temporary, serde_json::to_vec(&self.persisted).unwrap()).unwrap();
        std::fs::rename(&temporary, &self.path).unwrap();
    }

    fn handle(&mut self, target: &str, body: &Value) -> Result<Value, (&'static str, String)> {
        let unknown = || {
            Err((
                "UnknownOperationException",
                format!("{target} is not offered"),
            ))
        };
        let bare = self.fault == Fault::Bare;
        let operation = target.rsplit('.').next().unwrap_or_default();
        if self.memory.time_to_live && self.fault != Fault::KeepExpired {
            let marked = self.fault != Fault::UnmarkedExpiry;
            self.memory.sweep(marked);
            self.persisted.sweep(marked);
            self.save();
        }
        if target.starts_with("DynamoDBStreams_20120810.") {
            if bare {
                return unknown();
            }
            return self.streams(operation, body);
        }
        match operation {
            "ListTables" => Ok(
                json!({"TableNames": if self.memory.created { vec!["CrashTest"] } else { vec![] }}),
            ),
            "CreateTable" => {
                if bare && body.get("StreamSpecification").is_some() {
                    return Err(("ValidationException", "streams are not offered".into()));
                }
                for state in [&mut self.memory, &mut self.persisted] {
                    state.created = true;
                    state.stream = body.get("StreamSpecification").is_some();
                }
                self.save();
                Ok(json!({"TableDescription": self.describe()}))
            }
            "DescribeTable" if self.memory.created => Ok(json!({"Table": self.describe()})),
            "DescribeTable" => Err(("ResourceNotFoundException", "no such table".into())),
            "UpdateTimeToLive" if bare => unknown(),
            "UpdateTimeToLive" => {
                for state in [&mut self.memory, &mut self.persisted] {
                    state.time_to_live = true;
                }
                self.save();
                Ok(json!({"TimeToLiveSpecification": body["TimeToLiveSpecification"]}))
            }
            "PutItem" => {
                // Every tenth put of an item that has not expired is lost. (A lost put of an
                // expired item shows as its missing INSERT record instead, which is another
                // test's; counting only the others keeps this one to the lost write whatever
                // the run's timing let through before the kill.)
                let expired = body["Item"]["pk"]["S"] == "x";
                if !expired {
                    self.puts += 1;
                }
                self.memory.put(&body["Item"]);
                if !(self.fault == Fault::LostWrite && !expired && self.puts.is_multiple_of(10)) {
                    self.persisted.put(&body["Item"]);
                }
                self.save();
                Ok(json!({}))
            }
            "UpdateItem" => {
                self.memory.update(body);
                self.persisted.update(body);
                self.save();
                Ok(json!({}))
            }
            "DeleteItem" => {
                self.memory.delete(&body["Key"]);
                self.persisted.delete(&body["Key"]);
                self.save();
                Ok(json!({}))
            }
            "TransactWriteItems" if bare => unknown(),
            "TransactWriteItems" => {
                for action in body["TransactItems"].as_array().unwrap() {
                    if let Some(put) = action.get("Put") {
                        self.memory.put(&put["Item"]);
                        self.persisted.put(&put["Item"]);
                    } else if let Some(delete) = action.get("Delete") {
                        self.memory.delete(&delete["Key"]);
                        if self.fault != Fault::HalfTransaction {
                            self.persisted.delete(&delete["Key"]);
                        }
                    }
                }
                self.save();
                Ok(json!({}))
            }
            "Scan" => {
                let index = body["IndexName"].as_str();
                let mut items: Vec<Value> = self
                    .memory
                    .items
                    .values()
                    .filter_map(|item| match index {
                        None => Some(item.clone()),
                        Some("ByA") => item
                            .get("a")
                            .map(|a| json!({"pk": item["pk"], "sk": item["sk"], "a": a})),
                        Some(_) => item.get("g").map(|_| item.clone()),
                    })
                    .collect();
                if index == Some("ByG") && self.fault == Fault::IndexDrift && !items.is_empty() {
                    items.remove(0);
                }
                Ok(json!({"Items": items, "Count": items.len()}))
            }
            _ => unknown(),
        }
    }

    fn describe(&self) -> Value {
        let mut table = json!({"TableName": "CrashTest", "TableStatus": "ACTIVE",
            "GlobalSecondaryIndexes": [{"IndexName": "ByG", "IndexStatus": "ACTIVE"}]});
        if self.memory.stream {
            table["LatestStreamArn"] = json!("arn:fake:stream/CrashTest");
        }
        table
    }

    /// The stream as GetRecords serves it (with the fault's duplicate or hole).
    fn served_records(&self) -> Vec<Value> {
        let mut records = self.memory.records.clone();
        if records.len() > 2 {
            match self.fault {
                Fault::StreamDuplicate => records.insert(2, records[2].clone()),
                Fault::StreamMissing => {
                    records.remove(2);
                }
                _ => {}
            }
        }
        records
    }

    fn streams(&self, operation: &str, body: &Value) -> Result<Value, (&'static str, String)> {
        match operation {
            "DescribeStream" => Ok(json!({"StreamDescription": {
                "StreamArn": body["StreamArn"], "StreamStatus": "ENABLED",
                "Shards": [{"ShardId": "shard-0",
                    "SequenceNumberRange": {"StartingSequenceNumber": "1"}}]}})),
            "GetShardIterator" => {
                let position = match body["ShardIteratorType"].as_str() {
                    Some("AFTER_SEQUENCE_NUMBER") => body["SequenceNumber"]
                        .as_str()
                        .and_then(|n| n.parse::<usize>().ok())
                        .unwrap_or(0),
                    Some("LATEST") => self.served_records().len(),
                    _ => 0,
                };
                Ok(json!({"ShardIterator": position.to_string()}))
            }
            "GetRecords" => {
                let records = self.served_records();
                let from: usize = body["ShardIterator"]
                    .as_str()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0)
                    .min(records.len());
                let limit = body["Limit"].as_u64().unwrap_or(1000) as usize;
                let page: Vec<Value> = records[from..].iter().take(limit).cloned().collect();
                let next = (from + page.len()).to_string();
                Ok(json!({"Records": page, "NextShardIterator": next}))
            }
            _ => Err((
                "UnknownOperationException",
                format!("{operation} is not offered"),
            )),
        }
    }
}

/// Serves one connection: DynamoDB's JSON protocol, kept alive.
fn serve_connection(stream: TcpStream, fake: Arc<Mutex<Fake>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut target = String::new();
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                match name.to_ascii_lowercase().as_str() {
                    "x-amz-target" => target = value.trim().to_string(),
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or_default();
        let answer = fake.lock().unwrap().handle(&target, &request);
        let (status, answer) = match answer {
            Ok(answer) => ("200 OK", answer),
            Err((code, message)) => (
                "400 Bad Request",
                json!({"__type": format!("com.amazonaws.dynamodb.v20120810#{code}"), "message": message}),
            ),
        };
        let answer = answer.to_string();
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// Not a test: the fake DynamoDB server the tests above crash, run as a process of this test
/// binary when its environment asks for it (it returns at once otherwise).
#[test]
#[ignore = "the fake server process of the crash tests"]
fn fake_dynamodb_server() {
    let (Ok(port), Ok(data), Ok(fault)) = (
        std::env::var(PORT_VAR),
        std::env::var(DATA_VAR),
        std::env::var(FAULT_VAR),
    ) else {
        return;
    };
    let path = Path::new(&data).join("state.json");
    let persisted: State = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let fake = Arc::new(Mutex::new(Fake {
        fault: Fault::parse(&fault),
        memory: persisted.clone(),
        persisted,
        path,
        puts: 0,
    }));
    let listener = TcpListener::bind(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let fake = Arc::clone(&fake);
        std::thread::spawn(move || serve_connection(stream, fake));
    }
}
