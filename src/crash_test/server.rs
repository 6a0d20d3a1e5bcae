//! `shoal crash-test --server 'COMMAND'`: crash-tests any DynamoDB-compatible server.
//!
//! The command (with `{port}` and `{data}` filled in: a free port, a data directory this run
//! creates and removes) runs under `sh -c` in a process group of its own, so one SIGKILL
//! reaches the server and whatever it started (a JVM under a wrapper script), and nothing
//! else. `--endpoint URL --kill CMD --start CMD` is the same for a server another tool
//! supervises: its commands kill and start it.
//!
//! Each cycle drives the workload over HTTP from where the surviving writes end, SIGKILLs the
//! group at a moment drawn from the seed, restarts the command on the same port and data,
//! and reads back the table, both indexes and the stream for the [`checker`]. What the
//! target refuses at the start (transactions, a stream, Time to Live, a Scan of an index) is
//! reported as not offered and left out of the workload and the checks.
//!
//! [`checker`]: super::checker

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_tables::EventName;

use super::checker::{item_of, CrashTestReport, History, Observed, Stream, StreamOrder};
use super::progress::Progress;
use super::signals;
use super::workload::{
    create_table_request, describe_item, key_name, planned, time_to_live_request, Items, GSI, LSI,
    TABLE,
};
use crate::client::streams::{tail, From, TailOptions};
use crate::client::target::{CallError, Client, Target};

/// How long a GSI may take to catch up with its table before a difference is drift.
const GSI_SETTLE: Duration = Duration::from_secs(5);
/// A stream read ends after this long without a new record.
const STREAM_IDLE: Duration = Duration::from_millis(1000);
/// How long a killed server's port may keep answering.
const GONE_WAIT: Duration = Duration::from_secs(30);
/// The lines of the server's output quoted when it fails to start.
const LOG_TAIL_BYTES: u64 = 2000;

/// How a restart after a crash went.
pub(super) enum Restart {
    /// The server answers again.
    Up,
    /// Ctrl-C or SIGTERM came first (the report is marked interrupted).
    Interrupted,
    /// It did not come back: why.
    Failed(String),
}

/// How the server is started and killed.
#[derive(Debug, Clone)]
pub enum Launch {
    /// A command with `{port}` and `{data}`, run in its own process group.
    Command { template: String, port: Option<u16> },
    /// A server another tool supervises: its URL and the commands that kill and start it.
    Supervised {
        endpoint: String,
        kill: String,
        start: String,
    },
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub launch: Launch,
    /// Crash and restart this many times (at least one).
    pub cycles: u64,
    /// Or stop once this much time has passed.
    pub seconds: Option<f64>,
    pub seed: u64,
    /// The kill comes this many milliseconds after a cycle's first write (drawn from the seed).
    pub kill_after_ms: (u64, u64),
    /// How long a (re)started server may take to answer.
    pub ready_timeout: Duration,
    /// How long after the last recovery every expired item must be gone.
    pub expiry_bound: Duration,
}

/// Parses `MIN-MAX` milliseconds.
pub fn parse_kill_after(text: &str) -> Result<(u64, u64), String> {
    let parsed = text
        .split_once('-')
        .and_then(|(min, max)| Some((min.trim().parse().ok()?, max.trim().parse().ok()?)));
    match parsed {
        Some((min, max)) if min < max => Ok((min, max)),
        _ => Err(format!(
            "--kill-after-ms must be MIN-MAX milliseconds with MIN < MAX, such as 100-1500, not {text:?}"
        )),
    }
}

/// A process group this run started: `sh -c COMMAND` leads it.
pub(super) struct Group {
    child: Child,
    /// The leader's pid, which is the group's id.
    pgid: i32,
    reaped: bool,
}

impl Group {
    /// Runs `sh -c COMMAND` as the leader of a new group, its output appended to `log` (or
    /// dropped), with `env` added to this process's environment and `unset` removed from it.
    pub(super) fn spawn(
        command: &str,
        log: Option<&Path>,
        env: &[(&str, String)],
        unset: &[&str],
    ) -> Result<Group, String> {
        let (stdout, stderr) = match log {
            Some(path) => {
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let copy = file.try_clone().map_err(|e| e.to_string())?;
                (Stdio::from(file), Stdio::from(copy))
            }
            None => (Stdio::null(), Stdio::null()),
        };
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(command);
        for name in unset {
            sh.env_remove(name);
        }
        let child = sh
            .envs(env.iter().map(|(name, value)| (name, value)))
            // A group of its own: one kill reaches everything the command starts, and the
            // terminal's Ctrl-C reaches only this tool, which then cleans up.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot run `{command}`: {e}"))?;
        let pgid = i32::try_from(child.id()).map_err(|e| e.to_string())?;
        Ok(Group {
            child,
            pgid,
            reaped: false,
        })
    }

    /// Whether the leader has exited. It is not reaped (WNOWAIT): until it is, its pid, and
    /// so the group's id, cannot be given to another process.
    pub(super) fn exited(&self) -> bool {
        if self.reaped {
            return true;
        }
        // SAFETY: siginfo_t is plain data, valid zeroed; waitid only writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own child's pid with a valid siginfo_t pointer; WNOWAIT leaves
        // the child waitable.
        let status = unsafe {
            libc::waitid(
                libc::P_PID,
                self.pgid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid filled `info` (or left it zeroed: si_pid 0 means still running).
        status != 0 || unsafe { info.si_pid() } != 0
    }

    /// SIGKILLs the whole group and reaps the leader.
    pub(super) fn kill(&mut self) {
        if self.reaped {
            return;
        }
        signal_group(self.pgid, libc::SIGKILL);
        let _ = self.child.wait();
        self.reaped = true;
    }

    /// The leader's exit status once it has exited on its own (None while it runs): what it
    /// left running in its group is SIGKILLed and the leader reaped.
    pub(super) fn exit_status(&mut self) -> Option<Result<std::process::ExitStatus, String>> {
        if self.reaped || !self.exited() {
            return None;
        }
        signal_group(self.pgid, libc::SIGKILL);
        self.reaped = true;
        Some(self.child.wait().map_err(|e| e.to_string()))
    }

    /// Sends `signal` to the whole group (SIGSTOP, SIGCONT), while its leader is unreaped.
    pub(super) fn signal(&self, signal: libc::c_int) {
        if !self.reaped {
            signal_group(self.pgid, signal);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends `signal` to process group `pgid`. Only called for a group whose leader this run
/// started and has not reaped, so the id cannot belong to anyone else.
fn signal_group(pgid: i32, signal: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals that process group; it has no memory effects.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// Runs a short command (`--kill`, or `--start` when it returns) to its end.
fn run_to_end(
    command: &str,
    what: &str,
    log: Option<&Path>,
    timeout: Duration,
) -> Result<(), String> {
    let mut group = Group::spawn(command, log, &[], &[])?;
    let started = Instant::now();
    while !group.exited() {
        if started.elapsed() > timeout {
            group.kill();
            return Err(format!(
                "{what} `{command}` did not finish within {} s",
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    group.reaped = true;
    match group.child.wait() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("{what} `{command}` failed: {status}")),
        Err(e) => Err(format!("{what} `{command}`: {e}")),
    }
}

/// Whether something accepts connections on the endpoint's port.
fn port_answers(address: SocketAddr) -> bool {
    TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok()
}

/// Whether the endpoint answers ListTables.
fn endpoint_answers(target: &Target) -> bool {
    target
        .client()
        .ok()
        .is_some_and(|mut client| client.call("ListTables", b"{}").is_ok())
}

/// The server: how to start it, kill it and find it.
pub(super) struct Server {
    launch: Launch,
    endpoint: String,
    target: Target,
    /// The socket address behind the endpoint (None when it does not resolve).
    address: Option<SocketAddr>,
    /// The command with its placeholders filled in.
    command: String,
    log: Option<PathBuf>,
    /// The running group (`--server`), or the `--start` commands still running.
    group: Option<Group>,
    starters: Vec<Group>,
    /// `--server`: the run's directory, holding `{data}` and the server's output. Last, so
    /// that it is removed after the groups above are killed.
    scratch: Option<tempfile::TempDir>,
}

impl Server {
    /// The server `launch` describes, not started yet: for `--server`, a port (the given one,
    /// or a free one) and the run's directory, created here, are filled into the command.
    pub(super) fn new(launch: &Launch) -> Result<Server, String> {
        let (endpoint, command, scratch) = match launch {
            Launch::Command { template, port } => {
                let scratch = tempfile::Builder::new()
                    .prefix("shoal-crash-test-")
                    .tempdir()
                    .map_err(|e| format!("temporary directory: {e}"))?;
                let data = scratch.path().join("data");
                std::fs::create_dir(&data).map_err(|e| format!("{}: {e}", data.display()))?;
                let port = match port {
                    Some(port) => *port,
                    None => free_port()?,
                };
                let command = template
                    .replace("{port}", &port.to_string())
                    .replace("{data}", &data.display().to_string());
                (format!("http://127.0.0.1:{port}"), command, Some(scratch))
            }
            Launch::Supervised { endpoint, .. } => (endpoint.clone(), String::new(), None),
        };
        let target = Target::new(Some(&endpoint))?;
        let address = crate::client::endpoint::Endpoint::parse(&endpoint)
            .ok()
            .and_then(|parsed| {
                use std::net::ToSocketAddrs;
                (parsed.bare_host(), parsed.port)
                    .to_socket_addrs()
                    .ok()?
                    .next()
            });
        Ok(Server {
            launch: launch.clone(),
            endpoint,
            target,
            address,
            command,
            log: scratch.as_ref().map(|dir| dir.path().join("server.log")),
            group: None,
            starters: Vec::new(),
            scratch,
        })
    }

    pub(super) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The socket address behind the endpoint.
    pub(super) fn address(&self) -> Option<SocketAddr> {
        self.address
    }

    /// The command as run, placeholders filled in.
    pub(super) fn command(&self) -> &str {
        &self.command
    }

    /// `--server`: the run's directory.
    pub(super) fn scratch(&self) -> Option<&Path> {
        self.scratch.as_ref().map(|dir| dir.path())
    }

    /// The running group (`--server`).
    pub(super) fn group_mut(&mut self) -> Option<&mut Group> {
        self.group.as_mut()
    }

    /// Stops what runs and keeps the run's directory instead of removing it; its path.
    pub(super) fn keep_scratch(&mut self) -> Option<PathBuf> {
        self.stop();
        self.scratch.take().map(|dir| dir.keep())
    }

    /// The target's description in the report.
    fn describe(&self) -> String {
        match &self.launch {
            Launch::Command { template, .. } => format!("`{template}` at {}", self.endpoint),
            Launch::Supervised { kill, start, .. } => {
                format!(
                    "{} (killed with `{kill}`, started with `{start}`)",
                    self.endpoint
                )
            }
        }
    }

    /// The last lines the server wrote, for an error.
    /// The server's last output (its last [`LOG_TAIL_BYTES`]).
    pub(super) fn log_text(&self) -> String {
        self.log
            .as_deref()
            .map(|path| log_tail(path, 0, LOG_TAIL_BYTES))
            .unwrap_or_default()
    }

    /// The server's last output under a heading, or nothing.
    pub(super) fn log_tail(&self) -> String {
        let text = self.log_text();
        if text.is_empty() {
            String::new()
        } else {
            format!("\nthe server's last output:\n{text}")
        }
    }

    /// Restarts the server after a crash, unless a stop was asked for; on success the
    /// recovery time joins `report.recovery_ms`. Shared by the server and app modes.
    pub(super) fn restart(&mut self, timeout: Duration, report: &mut CrashTestReport) -> Restart {
        if signals::stopped() {
            report.interrupted = true;
            return Restart::Interrupted;
        }
        let restarted = Instant::now();
        match self.start(timeout) {
            Ok(true) => {
                report
                    .recovery_ms
                    .push(restarted.elapsed().as_secs_f64() * 1000.0);
                Restart::Up
            }
            Ok(false) => {
                report.interrupted = true;
                Restart::Interrupted
            }
            Err(e) => Restart::Failed(e),
        }
    }

    /// Starts the server and waits until it answers; false when interrupted meanwhile.
    pub(super) fn start(&mut self, timeout: Duration) -> Result<bool, String> {
        match &self.launch {
            Launch::Command { .. } => {
                if self.address.is_some_and(port_answers) {
                    return Err(format!(
                        "something already answers at {}: refusing to start a server there",
                        self.endpoint
                    ));
                }
                self.group = Some(Group::spawn(&self.command, self.log.as_deref(), &[], &[])?);
            }
            Launch::Supervised { start, .. } => {
                self.starters.retain_mut(|group| {
                    let done = group.exited();
                    if done {
                        group.kill();
                    }
                    !done
                });
                self.starters.push(Group::spawn(start, None, &[], &[])?);
            }
        }
        let started = Instant::now();
        loop {
            if signals::stopped() {
                return Ok(false);
            }
            if endpoint_answers(&self.target) {
                return Ok(true);
            }
            if let Some(group) = &self.group {
                if group.exited() {
                    return Err(format!(
                        "the server exited before answering at {}{}",
                        self.endpoint,
                        self.log_tail()
                    ));
                }
            }
            if started.elapsed() > timeout {
                return Err(format!(
                    "the server did not answer at {} within {} s{}",
                    self.endpoint,
                    timeout.as_secs(),
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the killer thread runs.
    fn killer(&self) -> Killer {
        match (&self.launch, &self.group) {
            (Launch::Supervised { kill, .. }, _) => Killer::Command(kill.clone()),
            (Launch::Command { .. }, Some(group)) if !group.reaped => Killer::Group(group.pgid),
            (Launch::Command { .. }, _) => Killer::Nothing,
        }
    }

    /// After the killer ran: reaps the group and waits until the endpoint is gone.
    pub(super) fn wait_gone(&mut self) -> Result<(), String> {
        if let Some(group) = &mut self.group {
            group.kill();
        }
        self.group = None;
        let started = Instant::now();
        loop {
            let answers = match &self.launch {
                Launch::Command { .. } => self.address.is_some_and(port_answers),
                Launch::Supervised { .. } => endpoint_answers(&self.target),
            };
            if !answers {
                return Ok(());
            }
            if started.elapsed() > GONE_WAIT {
                return Err(format!(
                    "{} still answers {} s after the kill",
                    self.endpoint,
                    GONE_WAIT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills what this run started (the end of the run, an error or an interrupt).
    pub(super) fn stop(&mut self) {
        if let Some(group) = &mut self.group {
            group.kill();
        }
        self.group = None;
        for group in &mut self.starters {
            group.kill();
        }
        self.starters.clear();
    }
}

/// The last `max` bytes (at most) of what `path` holds after byte `from`, trimmed: the tail
/// of a log. Empty when the file cannot be read.
pub(super) fn log_tail(path: &Path, from: u64, max: u64) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let length = file.metadata().map(|m| m.len()).unwrap_or(0);
        let start = length.saturating_sub(max).max(from);
        let _ = file.seek(SeekFrom::Start(start));
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        // A cut may fall inside a character: show what is there, not nothing.
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    text.trim().to_string()
}

/// How a cycle's kill is done.
enum Killer {
    Group(i32),
    Command(String),
    Nothing,
}

impl Killer {
    fn kill(&self) -> Result<(), String> {
        match self {
            Killer::Group(pgid) => {
                signal_group(*pgid, libc::SIGKILL);
                Ok(())
            }
            Killer::Command(command) => run_to_end(command, "--kill", None, GONE_WAIT),
            Killer::Nothing => Ok(()),
        }
    }
}

/// What the target offers besides plain writes and reads.
struct Offered {
    transactions: bool,
    stream: bool,
    time_to_live: bool,
    lsi_scan: bool,
    gsi_scan: bool,
}

/// A call that must succeed; its JSON answer.
fn call(client: &mut Client, operation: &str, body: &Value) -> Result<Value, CallError> {
    let answer = client.call(operation, body.to_string().as_bytes())?;
    serde_json::from_slice(&answer).map_err(|e| CallError {
        code: "BadAnswer".into(),
        message: format!("{operation} answered with invalid JSON: {e}"),
        item: None,
    })
}

fn refused(operation: &str, error: &CallError) -> String {
    format!("{operation}: {}: {}", error.code, error.message)
}

/// Creates the table with what the target accepts, and finds out what it offers.
fn prepare(server: &Server, report: &mut CrashTestReport) -> Result<Offered, String> {
    let mut client = server.target.client()?;
    match call(&mut client, "DescribeTable", &json!({"TableName": TABLE})) {
        Ok(_) => {
            return Err(format!(
                "table {TABLE} already exists at {}: the crash test needs a server without it",
                server.endpoint
            ))
        }
        Err(error) if error.code == "ResourceNotFoundException" => {}
        Err(error) => return Err(refused("DescribeTable", &error)),
    }
    let mut stream = true;
    if let Err(error) = call(&mut client, "CreateTable", &create_table_request(true)) {
        call(&mut client, "CreateTable", &create_table_request(false)).map_err(|plain| {
            format!(
                "{} (and with a stream: {})",
                refused("CreateTable", &plain),
                refused("CreateTable", &error)
            )
        })?;
        report.not_offered.insert(
            "stream".into(),
            format!(
                "CreateTable with a StreamSpecification: {}: {}",
                error.code, error.message
            ),
        );
        stream = false;
    }
    client.wait_until_active(TABLE)?;
    if stream {
        if let Err(why) = read_stream(&server.endpoint, Duration::from_millis(200)) {
            report.not_offered.insert("stream".into(), why);
            stream = false;
        }
    }
    let time_to_live = match call(&mut client, "UpdateTimeToLive", &time_to_live_request()) {
        Ok(_) => true,
        Err(error) => {
            report
                .not_offered
                .insert("Time to Live".into(), refused("UpdateTimeToLive", &error));
            false
        }
    };
    // A transaction that writes nothing: a condition on a key the workload never uses.
    let probe = json!({"TransactItems": [{"ConditionCheck": {"TableName": TABLE,
        "Key": {"pk": {"S": "probe"}, "sk": {"S": "probe"}},
        "ConditionExpression": "attribute_not_exists(pk)"}}]});
    let transactions = match call(&mut client, "TransactWriteItems", &probe) {
        Ok(_) => true,
        Err(error) => {
            report
                .not_offered
                .insert("transactions".into(), refused("TransactWriteItems", &error));
            false
        }
    };
    let mut scan_offered = |index: &str, consistent: bool| {
        let mut request = json!({"TableName": TABLE, "IndexName": index, "Limit": 1});
        if consistent {
            request["ConsistentRead"] = json!(true);
        }
        match call(&mut client, "Scan", &request) {
            Ok(_) => true,
            Err(error) => {
                report
                    .not_offered
                    .insert(format!("Scan of index {index}"), refused("Scan", &error));
                false
            }
        }
    };
    let lsi_scan = scan_offered(LSI, true);
    let gsi_scan = scan_offered(GSI, false);
    Ok(Offered {
        transactions,
        stream,
        time_to_live,
        lsi_scan,
        gsi_scan,
    })
}

/// The whole stream of the table, read with `shoal streams tail`'s reader until nothing new
/// comes for `idle`.
fn read_stream(endpoint: &str, idle: Duration) -> Result<Stream, String> {
    let options = TailOptions {
        endpoint: endpoint.to_string(),
        table: TABLE.to_string(),
        from: From::TrimHorizon,
        max_records: None,
        idle_exit: Some(idle),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let mut lines = Vec::new();
    runtime.block_on(tail(&options, &mut lines))?;
    let mut records = Vec::new();
    let mut removed_by_service = BTreeSet::new();
    for line in lines.split(|&byte| byte == b'\n').filter(|l| !l.is_empty()) {
        let record: Value =
            serde_json::from_slice(line).map_err(|e| format!("a stream record: {e}"))?;
        let event = match record["eventName"].as_str() {
            Some("INSERT") => EventName::Insert,
            Some("MODIFY") => EventName::Modify,
            Some("REMOVE") => EventName::Remove,
            other => return Err(format!("a stream record with eventName {other:?}")),
        };
        let key = key_name(&record["dynamodb"]["Keys"]);
        let identity = &record["userIdentity"];
        if event == EventName::Remove
            && identity["Type"] == "Service"
            && identity["PrincipalId"] == "dynamodb.amazonaws.com"
        {
            removed_by_service.insert(key.clone());
        }
        records.push((event, key));
    }
    Ok(Stream {
        records,
        removed_by_service,
    })
}

/// Every item a Scan returns, by key.
fn scan(client: &mut Client, request: Value) -> Result<Items, String> {
    let mut items = Items::new();
    let mut request = request;
    loop {
        let page = call(client, "Scan", &request).map_err(|e| refused("Scan", &e))?;
        for item in page["Items"].as_array().into_iter().flatten() {
            items.insert(key_name(item), item_of(item));
        }
        match page.get("LastEvaluatedKey") {
            Some(key) if !key.is_null() => request["ExclusiveStartKey"] = key.clone(),
            _ => return Ok(items),
        }
    }
}

/// Where an index differs from what its table implies: (key, index entry, table item).
fn index_differences(index: &Items, expected: &Items) -> Vec<String> {
    let keys: BTreeSet<&String> = index.keys().chain(expected.keys()).collect();
    keys.into_iter()
        .filter(|key| index.get(*key) != expected.get(*key))
        .map(|key| {
            format!(
                "{key}: the index holds {}, the table implies {}",
                describe_item(index.get(key)),
                describe_item(expected.get(key))
            )
        })
        .collect()
}

/// Reads back the table, its indexes and its stream.
fn observe(server: &Server, offered: &Offered) -> Result<Observed, String> {
    let mut client = server.target.client()?;
    let items = scan(
        &mut client,
        json!({"TableName": TABLE, "ConsistentRead": true}),
    )?;
    let mut index_problems = Vec::new();
    if offered.lsi_scan {
        // KEYS_ONLY: each item with an `a` has an entry of its keys and `a`.
        let expected: Items = items
            .iter()
            .filter(|(_, item)| item.contains_key("a"))
            .map(|(key, item)| {
                let entry = ["pk", "sk", "a"]
                    .iter()
                    .filter_map(|name| Some((name.to_string(), item.get(*name)?.clone())))
                    .collect();
                (key.clone(), entry)
            })
            .collect();
        let index = scan(
            &mut client,
            json!({"TableName": TABLE, "IndexName": LSI, "ConsistentRead": true}),
        )?;
        for difference in index_differences(&index, &expected) {
            index_problems.push((
                "index drift".to_string(),
                format!("LSI {LSI}: {difference}"),
            ));
        }
    }
    if offered.gsi_scan {
        // ALL: each item with a `g` is in the index whole. A GSI may lag its table: read it
        // again for a while before calling a difference drift.
        let expected: Items = items
            .iter()
            .filter(|(_, item)| item.contains_key("g"))
            .map(|(key, item)| (key.clone(), item.clone()))
            .collect();
        let started = Instant::now();
        loop {
            let index = scan(&mut client, json!({"TableName": TABLE, "IndexName": GSI}))?;
            let differences = index_differences(&index, &expected);
            if differences.is_empty() {
                break;
            }
            if started.elapsed() > GSI_SETTLE || signals::stopped() {
                for difference in differences {
                    index_problems.push((
                        "index drift".to_string(),
                        format!(
                            "GSI {GSI}, {} s after recovery: {difference}",
                            GSI_SETTLE.as_secs()
                        ),
                    ));
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let (stream, removed_by_service) = if offered.stream {
        match read_stream(&server.endpoint, STREAM_IDLE) {
            Ok(stream) => (Some(Ok(stream.records)), stream.removed_by_service),
            Err(e) => (Some(Err(e)), BTreeSet::new()),
        }
    } else {
        (None, BTreeSet::new())
    };
    Ok(Observed {
        items,
        index_problems,
        stream,
        removed_by_service,
        stream_order: StreamOrder::PerKey,
    })
}

/// Errors a server gives when it is busy or failing: the write may or may not have been
/// applied, so it is the cycle's in-flight write, as at a crash.
fn transient(error: &CallError) -> bool {
    error.code.starts_with("HTTP5")
        || matches!(
            error.code.as_str(),
            "ConnectionError"
                | "ThrottlingException"
                | "ProvisionedThroughputExceededException"
                | "RequestLimitExceeded"
                | "TransactionConflictException"
                | "TransactionInProgressException"
                | "InternalServerError"
                | "InternalFailure"
                | "ServiceUnavailable"
        )
        || (error.code == "TransactionCanceledException"
            && error.message.contains("TransactionConflict"))
}

/// One cycle's writes: from operation `from` until the kill (or a write fails). Returns the
/// writes acknowledged in all, from 0.
fn drive(
    server: &Server,
    seed: u64,
    from: u64,
    transactions: bool,
    kill_after: Duration,
) -> Result<u64, String> {
    let killer = server.killer();
    let killed = Arc::new(AtomicBool::new(false));
    let kill_now = Arc::new(AtomicBool::new(false));
    let thread = {
        let killed = Arc::clone(&killed);
        let kill_now = Arc::clone(&kill_now);
        std::thread::spawn(move || {
            let deadline = Instant::now() + kill_after;
            while Instant::now() < deadline
                && !kill_now.load(Ordering::SeqCst)
                && !signals::stopped()
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Raised first, so a write failing from here on is known to be the kill's.
            killed.store(true, Ordering::SeqCst);
            killer.kill()
        })
    };
    let result = drive_until_killed(server, seed, from, transactions, &killed);
    kill_now.store(true, Ordering::SeqCst);
    let killed = thread
        .join()
        .map_err(|_| "the killer thread panicked".to_string())?;
    let acknowledged = result?;
    killed?;
    Ok(acknowledged)
}

fn drive_until_killed(
    server: &Server,
    seed: u64,
    from: u64,
    transactions: bool,
    killed: &AtomicBool,
) -> Result<u64, String> {
    let mut client = server.target.client()?;
    let mut i = from;
    loop {
        if signals::stopped() {
            return Ok(i);
        }
        let Some(operation) = planned(seed, i, transactions) else {
            i += 1;
            continue;
        };
        let body = operation.request.to_string();
        let mut answer = client.call(operation.name, body.as_bytes());
        if let Err(error) = &answer {
            if error.code == "ConnectionError" && !killed.load(Ordering::SeqCst) {
                // The server may have closed a kept-alive connection before reading the
                // request: send it once more on a new one.
                match server.target.client() {
                    Ok(fresh) => {
                        client = fresh;
                        answer = client.call(operation.name, body.as_bytes());
                    }
                    Err(_) => return Ok(i),
                }
            }
        }
        match answer {
            Ok(_) => i += 1,
            Err(error) if killed.load(Ordering::SeqCst) || transient(&error) => return Ok(i),
            Err(error) => {
                return Err(format!(
                    "the target refused {}: {}: {}",
                    operation.describe(i),
                    error.code,
                    error.message
                ))
            }
        }
    }
}

/// Runs the crash test against a server; `progress` hears of each cycle.
pub fn run(config: &ServerConfig, progress: &mut Progress) -> Result<CrashTestReport, String> {
    let mut server = Server::new(&config.launch)?;
    let mut report = CrashTestReport {
        target: server.describe(),
        seed: config.seed,
        ..CrashTestReport::default()
    };
    let result = cycles(config, &mut server, &mut report, progress);
    server.stop();
    result.map(|()| report)
}

/// A port nothing listens on now.
pub(super) fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot find a free port: {e}"))?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|e| e.to_string())
}

fn cycles(
    config: &ServerConfig,
    server: &mut Server,
    report: &mut CrashTestReport,
    progress: &mut Progress,
) -> Result<(), String> {
    let already_up =
        matches!(server.launch, Launch::Supervised { .. }) && endpoint_answers(&server.target);
    if !already_up && !server.start(config.ready_timeout)? {
        report.interrupted = true;
        return Ok(());
    }
    if let Launch::Command { .. } = server.launch {
        progress.note(&format!(
            "crash-test: started `{}` at {}",
            server.command, server.endpoint
        ));
    }
    let offered = prepare(server, report)?;
    let mut history = History::new(config.seed, offered.transactions, offered.time_to_live);
    let mut rng = StdRng::seed_from_u64(config.seed);
    let started = Instant::now();
    for cycle in 0..config.cycles.max(1) {
        if config
            .seconds
            .is_some_and(|s| started.elapsed().as_secs_f64() >= s)
        {
            break;
        }
        let (min, max) = config.kill_after_ms;
        let kill_after = Duration::from_millis(rng.random_range(min..max));
        let acknowledged = drive(
            server,
            config.seed,
            history.applied,
            offered.transactions,
            kill_after,
        )?;
        server.wait_gone()?;
        match server.restart(config.ready_timeout, report) {
            Restart::Up => {}
            Restart::Interrupted => break,
            Restart::Failed(e) => {
                report.violate("recovery failed", e);
                report.cycles = cycle + 1;
                break;
            }
        }
        match observe(server, &offered) {
            Ok(observed) => history.check(observed, acknowledged, false, report),
            Err(e) => report.violate("unreadable", e),
        }
        report.cycles = cycle + 1;
        progress.update(cycle + 1, report);
        if report.violation_count() > 0 || signals::stopped() {
            report.interrupted |= signals::stopped();
            return Ok(());
        }
    }
    let mut client = server.target.client()?;
    let read = || {
        scan(
            &mut client,
            json!({"TableName": TABLE, "ConsistentRead": true}),
        )
    };
    history.wait_for_expiry(config.expiry_bound, read, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_after_takes_a_range() {
        assert_eq!(parse_kill_after("100-1500"), Ok((100, 1500)));
        assert!(parse_kill_after("5-5").is_err());
        assert!(parse_kill_after("500").is_err());
    }

    #[test]
    fn busy_answers_are_in_flight_and_refusals_are_not() {
        let error = |code: &str, message: &str| CallError {
            code: code.into(),
            message: message.into(),
            item: None,
        };
        assert!(transient(&error("HTTP502", "")));
        assert!(transient(&error("ThrottlingException", "")));
        assert!(transient(&error(
            "TransactionCanceledException",
            "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict, None]"
        )));
        assert!(!transient(&error("ValidationException", "bad")));
    }

    #[test]
    fn index_differences_name_the_key_and_both_sides() {
        let mut index = Items::new();
        let mut expected = Items::new();
        let item = |v: &str| item_of(&json!({"pk": {"S": "p1"}, "sk": {"S": "s2"}, "v": {"N": v}}));
        index.insert("p1/s2".into(), item("3"));
        expected.insert("p1/s2".into(), item("4"));
        assert_eq!(
            index_differences(&index, &expected),
            ["p1/s2: the index holds v=3, the table implies v=4"]
        );
    }
}
