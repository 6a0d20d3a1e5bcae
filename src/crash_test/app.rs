//! `shoal crash-test --app 'COMMAND' [--check 'COMMAND']`: crashes a Shoal server again and
//! again under the user's own workload, and runs the user's own check after each recovery.
//!
//! The server is this program's `serve`, on a free port (or `--port`) and a data directory in
//! the run's directory, started as any `--server` command is ([`Server`]: a process group of
//! its own, its output in `server.log`). The app runs under `sh -c` in a process group of its
//! own too, its output in `app.log`, with the endpoint, dummy credentials and a region in its
//! environment ([`environment`]). It is told nothing else: its requests fail as in a real
//! outage (connections refused or cut) until the server is back.
//!
//! One cycle: the app runs for a moment drawn from the seed (`--kill-after-ms`), then the
//! server crashes:
//! - `kill`: SIGKILL to the server's process group; what reached the operating system
//!   survives;
//! - `power-loss`: `POST /shoal/crash {"mode": "power-loss"}` on the server's admin API: it
//!   zeroes the write-ahead log's bytes not yet fdatasynced (all a power cut can lose there:
//!   SSTables and manifests are synced before they count), then SIGKILLs itself.
//!
//! With `--restart-app` the app's group is SIGKILLed with the server and started again after
//! the recovery. The server restarts on the same port and data; once it answers, the check
//! runs (unless `--check-at end`), with the app paused (SIGSTOP to its group, SIGCONT after)
//! so that nothing writes while the check reads. A check that exits non-zero, or an app that
//! does, is a violation that ends the run; the run's directory is then kept for a look.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::checker::CrashTestReport;
use super::progress::Progress;
use super::server::{log_tail, Group, Launch, Restart, Server};
use super::signals;

/// How long the check may run.
const CHECK_TIMEOUT: Duration = Duration::from_secs(600);
/// After the app is paused: time for the requests it already sent to be answered, so that
/// the check does not read while one of them is being applied.
const PAUSE_SETTLE: Duration = Duration::from_millis(200);
/// How long the server may take to die after the crash call.
const CRASH_CALL_WAIT: Duration = Duration::from_secs(10);
/// How much of the app's or the check's output a failure quotes.
const OUTPUT_TAIL_BYTES: u64 = 3000;
/// How often the app and the check are looked at while waiting.
const POLL: Duration = Duration::from_millis(20);
/// The credentials the app gets: the server accepts any well-formed signature.
const DUMMY_KEY_ID: &str = "shoal-crash-test";
const DUMMY_SECRET: &str = "shoal-crash-test-secret";
const REGION: &str = "us-east-1";
/// Variables removed from the app's environment: a session token or a profile of the user's
/// would be sent with (or override) the dummy credentials.
const UNSET: &[&str] = &["AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE"];

/// How the server crashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    Kill,
    PowerLoss,
}

impl Crash {
    pub fn name(self) -> &'static str {
        match self {
            Crash::Kill => "kill",
            Crash::PowerLoss => "power-loss",
        }
    }
}

/// When the check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckAt {
    /// After each recovery.
    Recovery,
    /// Once, after the last cycle, with the app stopped.
    End,
}

#[derive(Debug, Clone)]
pub struct AppConfig {
    /// The app's shell command.
    pub app: String,
    /// The check's shell command.
    pub check: Option<String>,
    pub check_at: CheckAt,
    /// Kill the app with the server and start it again after each recovery.
    pub restart_app: bool,
    pub crash: Crash,
    /// The server's `--durability`.
    pub durability: String,
    /// The server's port (default: a free one).
    pub port: Option<u16>,
    /// Crash and restart this many times (at least one).
    pub cycles: u64,
    /// Or stop once this much time has passed.
    pub seconds: Option<f64>,
    pub seed: u64,
    /// The crash comes this many milliseconds into a cycle (drawn from the seed).
    pub crash_after_ms: (u64, u64),
    /// How long a (re)started server may take to answer.
    pub ready_timeout: Duration,
    /// The `shoal` binary to run as the server.
    pub program: PathBuf,
}

/// What app mode adds to the report.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AppSummary {
    /// The app's command.
    pub app: String,
    /// The check's command.
    pub check: Option<String>,
    /// `kill` or `power-loss`.
    pub crash: String,
    /// When each cycle's crash came, in milliseconds into the cycle (replayed by the seed).
    pub crash_after_ms: Vec<u64>,
    pub checks_passed: u64,
    /// How many times the app was started.
    pub app_starts: u64,
    /// The app's exits on its own, as `cycle N: STATUS`.
    pub app_exits: Vec<String>,
    /// After a violation: the run's directory (data, server.log, app.log, check.log), kept.
    pub run_dir: Option<String>,
    /// Each failure as fields a program can read (the same as the report's violations).
    pub failures: Vec<AppFailure>,
}

/// One failure of app mode, for `--json`: when it came, what failed, what the server said.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AppFailure {
    /// `check failed`, `app failed`, `crash failed` or `recovery failed`.
    pub kind: String,
    /// The cycle it came in (from 1); for a check at the end, the cycles run.
    pub cycle: u64,
    /// The cycle's crash, in milliseconds into the cycle; absent when the failure came
    /// before the crash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash_after_ms: Option<u64>,
    /// The check that ran once at the end (`--check-at end`).
    pub at_end: bool,
    /// `--seed` with it replays the crash moments.
    pub seed: u64,
    /// What failed: the command, its exit status and its last output.
    pub what: String,
    /// The server's last output.
    pub server_log: String,
}

/// When in a run a failure came.
struct Moment {
    cycle: u64,
    crash_after_ms: Option<u64>,
    at_end: bool,
    /// The same in words, for the readable report.
    text: String,
}

/// The app's and the check's environment: the endpoint, dummy credentials, a region, and the
/// run's directory and seed (`SHOAL_CRASH_TEST_DIR`, `SHOAL_CRASH_TEST_SEED`) for files and
/// draws of their own.
pub fn environment(endpoint: &str, dir: &Path, seed: u64) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL", endpoint.to_string()),
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint.to_string()),
        ("AWS_ACCESS_KEY_ID", DUMMY_KEY_ID.to_string()),
        ("AWS_SECRET_ACCESS_KEY", DUMMY_SECRET.to_string()),
        ("AWS_REGION", REGION.to_string()),
        ("AWS_DEFAULT_REGION", REGION.to_string()),
        ("SHOAL_CRASH_TEST_DIR", dir.display().to_string()),
        ("SHOAL_CRASH_TEST_SEED", seed.to_string()),
    ]
}

/// `text` quoted for `sh`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The user's app: its command and, while it runs, its process group.
struct App {
    command: String,
    log: PathBuf,
    env: Vec<(&'static str, String)>,
    group: Option<Group>,
}

impl App {
    /// Starts the app; `cycle` (0 at the start) is in its `SHOAL_CRASH_TEST_CYCLE`.
    fn start(&mut self, cycle: u64, report: &mut CrashTestReport) -> Result<(), String> {
        let mut env = self.env.clone();
        env.push(("SHOAL_CRASH_TEST_CYCLE", cycle.to_string()));
        self.group = Some(Group::spawn(&self.command, Some(&self.log), &env, UNSET)?);
        summary(report).app_starts += 1;
        Ok(())
    }

    fn running(&self) -> bool {
        self.group.is_some()
    }

    /// Whether the app exited on its own since the last look: (exited 0, its status).
    fn exited(&mut self) -> Option<(bool, String)> {
        let status = self.group.as_mut()?.exit_status()?;
        self.group = None;
        Some(match status {
            Ok(status) => (status.success(), status.to_string()),
            Err(e) => (false, format!("unknown status ({e})")),
        })
    }

    fn pause(&self) {
        if let Some(group) = &self.group {
            group.signal(libc::SIGSTOP);
        }
    }

    fn resume(&self) {
        if let Some(group) = &self.group {
            group.signal(libc::SIGCONT);
        }
    }

    fn kill(&mut self) {
        if let Some(mut group) = self.group.take() {
            group.kill();
        }
    }

    /// The last lines the app wrote.
    fn output(&self) -> String {
        quoted(
            "the app's last output",
            &log_tail(&self.log, 0, OUTPUT_TAIL_BYTES),
        )
    }
}

/// `text` under a heading, on lines of its own; nothing when it is empty.
fn quoted(heading: &str, text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("\n{heading}:\n{text}")
    }
}

/// The report's app section (always there in app mode).
fn summary(report: &mut CrashTestReport) -> &mut AppSummary {
    report.app.get_or_insert_with(AppSummary::default)
}

/// What the check did.
enum CheckOutcome {
    Passed,
    Failed(String),
    Interrupted,
}

/// Runs the check to its end, its output appended to `log`.
fn run_check(
    command: &str,
    log: &Path,
    env: &[(&'static str, String)],
    cycle: u64,
) -> Result<CheckOutcome, String> {
    let from = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
    let mut env = env.to_vec();
    env.push(("SHOAL_CRASH_TEST_CYCLE", cycle.to_string()));
    let mut group = Group::spawn(command, Some(log), &env, UNSET)?;
    let started = Instant::now();
    loop {
        if let Some(status) = group.exit_status() {
            let status = status.map_err(|e| format!("the check `{command}`: {e}"))?;
            if status.success() {
                return Ok(CheckOutcome::Passed);
            }
            let output = log_tail(log, from, OUTPUT_TAIL_BYTES);
            return Ok(CheckOutcome::Failed(format!(
                "the check `{command}` failed ({status}){}",
                quoted("its output", &output)
            )));
        }
        if signals::stopped() {
            group.kill();
            return Ok(CheckOutcome::Interrupted);
        }
        if started.elapsed() > CHECK_TIMEOUT {
            group.kill();
            return Ok(CheckOutcome::Failed(format!(
                "the check `{command}` did not finish within {} s{}",
                CHECK_TIMEOUT.as_secs(),
                quoted("its output", &log_tail(log, from, OUTPUT_TAIL_BYTES))
            )));
        }
        std::thread::sleep(POLL);
    }
}

/// Asks the server to crash as a power cut would (`POST /shoal/crash`). It dies without an
/// answer; an answer means it refused.
fn crash_call(address: SocketAddr) -> Result<(), String> {
    let body = r#"{"mode": "power-loss"}"#;
    let request = format!(
        "POST /shoal/crash HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))
        .map_err(|e| format!("the crash call could not connect to {address}: {e}"))?;
    stream
        .set_read_timeout(Some(CRASH_CALL_WAIT))
        .and_then(|()| stream.write_all(request.as_bytes()))
        .map_err(|e| format!("the crash call to {address}: {e}"))?;
    let mut answer = Vec::new();
    // The connection ends with the process (EOF or a reset): both are the expected outcome.
    let _ = stream.read_to_end(&mut answer);
    if answer.is_empty() {
        Ok(())
    } else {
        let text = String::from_utf8_lossy(&answer);
        Err(format!(
            "the server answered the crash call instead of crashing: {}",
            text.lines().next().unwrap_or_default()
        ))
    }
}

/// Crashes the server and waits until its port is closed.
fn crash(server: &mut Server, crash: Crash) -> Result<(), String> {
    if crash == Crash::PowerLoss {
        let address = server
            .address()
            .ok_or_else(|| format!("cannot resolve {}", server.endpoint()))?;
        crash_call(address)?;
        let started = Instant::now();
        while server.group_mut().is_some_and(|group| !group.exited()) {
            if started.elapsed() > CRASH_CALL_WAIT {
                return Err(format!(
                    "the server still ran {} s after the crash call",
                    CRASH_CALL_WAIT.as_secs()
                ));
            }
            std::thread::sleep(POLL);
        }
    }
    // Kill: SIGKILL to the group. Power loss: the server is dead; what it left in its group
    // goes too, and the leader is reaped.
    server.wait_gone()
}

/// Runs the app against a server crashed `config.cycles` times; `progress` hears of each cycle.
pub fn run(config: &AppConfig, progress: &mut Progress) -> Result<CrashTestReport, String> {
    let mut template = format!(
        "exec {} serve --port {{port}} --data-dir {{data}} --durability {}",
        shell_quote(&config.program.display().to_string()),
        shell_quote(&config.durability)
    );
    if config.crash == Crash::PowerLoss {
        // The crash call is on the admin API, which loopback clients only may use.
        template.push_str(" --admin");
    }
    let mut server = Server::new(&Launch::Command {
        template,
        port: config.port,
    })?;
    let dir = server
        .scratch()
        .ok_or("the server has no run directory")?
        .to_path_buf();
    let env = environment(server.endpoint(), &dir, config.seed);
    let mut app = App {
        command: config.app.clone(),
        log: dir.join("app.log"),
        env: env.clone(),
        group: None,
    };
    let mut report = CrashTestReport {
        target: format!(
            "shoal serve --durability {} at {}, crashed by {}",
            config.durability,
            server.endpoint(),
            config.crash.name()
        ),
        seed: config.seed,
        app: Some(AppSummary {
            app: config.app.clone(),
            check: config.check.clone(),
            crash: config.crash.name().to_string(),
            ..AppSummary::default()
        }),
        ..CrashTestReport::default()
    };
    let result = cycles(config, &mut server, &mut app, &env, &mut report, progress);
    app.kill();
    if result.is_ok() && report.violation_count() > 0 && !report.interrupted {
        summary(&mut report).run_dir = server.keep_scratch().map(|d| d.display().to_string());
    }
    server.stop();
    result.map(|()| report)
}

/// A violation of app mode: where it happened, the seed, what failed, and the server's log,
/// in words and as an [`AppFailure`].
fn violation(
    report: &mut CrashTestReport,
    kind: &str,
    when: &Moment,
    what: String,
    server: &Server,
) {
    let seed = report.seed;
    report.violate(
        kind,
        format!("{} (seed {seed}): {what}{}", when.text, server.log_tail()),
    );
    summary(report).failures.push(AppFailure {
        kind: kind.to_string(),
        cycle: when.cycle,
        crash_after_ms: when.crash_after_ms,
        at_end: when.at_end,
        seed,
        what,
        server_log: server.log_text(),
    });
}

/// What to do when the app exited on its own: a failure unless it exited 0; returns whether
/// the run goes on.
fn app_exited(
    (success, status): (bool, String),
    cycle: u64,
    when: &Moment,
    config: &AppConfig,
    app: &App,
    server: &Server,
    report: &mut CrashTestReport,
) -> bool {
    summary(report)
        .app_exits
        .push(format!("cycle {cycle}: {status}"));
    if !success {
        let what = format!("the app `{}` exited ({status}){}", config.app, app.output());
        violation(report, "app failed", when, what, server);
        return false;
    }
    // Finished: restarted after the next recovery, or else the run has no workload left.
    config.restart_app
}

fn cycles(
    config: &AppConfig,
    server: &mut Server,
    app: &mut App,
    env: &[(&'static str, String)],
    report: &mut CrashTestReport,
    progress: &mut Progress,
) -> Result<(), String> {
    if !server.start(config.ready_timeout)? {
        report.interrupted = true;
        return Ok(());
    }
    progress.note(&format!(
        "crash-test: started `{}` at {}",
        server.command(),
        server.endpoint()
    ));
    app.start(0, report)?;
    let check_log = server
        .scratch()
        .map(|dir| dir.join("check.log"))
        .ok_or("the server has no run directory")?;
    let mut rng = StdRng::seed_from_u64(config.seed);
    let started = Instant::now();
    let mut goes_on = true;
    for cycle in 1..=config.cycles.max(1) {
        if config
            .seconds
            .is_some_and(|s| started.elapsed().as_secs_f64() >= s)
        {
            break;
        }
        let (min, max) = config.crash_after_ms;
        let after = rng.random_range(min..max);
        let cycle_started = Instant::now();
        while cycle_started.elapsed() < Duration::from_millis(after) {
            if signals::stopped() {
                report.interrupted = true;
                return Ok(());
            }
            if let Some(status) = app.exited() {
                let when = Moment {
                    cycle,
                    crash_after_ms: None,
                    at_end: false,
                    text: format!(
                        "cycle {cycle}, {} ms in, before its crash",
                        cycle_started.elapsed().as_millis()
                    ),
                };
                goes_on = app_exited(status, cycle, &when, config, app, server, report);
                if !goes_on {
                    break;
                }
            }
            std::thread::sleep(POLL);
        }
        if !goes_on {
            break;
        }
        summary(report).crash_after_ms.push(after);
        let when = Moment {
            cycle,
            crash_after_ms: Some(after),
            at_end: false,
            text: format!(
                "cycle {cycle}, after a {} crash {after} ms in",
                config.crash.name()
            ),
        };
        if let Err(e) = crash(server, config.crash) {
            violation(report, "crash failed", &when, e, server);
            break;
        }
        if config.restart_app {
            app.kill();
        }
        match server.restart(config.ready_timeout, report) {
            Restart::Up => {}
            Restart::Interrupted => break,
            Restart::Failed(e) => {
                violation(report, "recovery failed", &when, e, server);
                report.cycles = cycle;
                break;
            }
        }
        report.cycles = cycle;
        if let Some(status) = app.exited() {
            goes_on = app_exited(status, cycle, &when, config, app, server, report);
            if !goes_on {
                break;
            }
        }
        if let (Some(check), CheckAt::Recovery) = (&config.check, config.check_at) {
            app.pause();
            std::thread::sleep(PAUSE_SETTLE);
            let outcome = run_check(check, &check_log, env, cycle);
            app.resume();
            match outcome? {
                CheckOutcome::Passed => summary(report).checks_passed += 1,
                CheckOutcome::Failed(what) => {
                    violation(report, "check failed", &when, what, server);
                    break;
                }
                CheckOutcome::Interrupted => {
                    report.interrupted = true;
                    break;
                }
            }
        }
        // After the last cycle no crash would come: the app is not started again for nothing.
        if !app.running() && config.restart_app && cycle < config.cycles {
            app.start(cycle, report)?;
        }
        progress.update(cycle, report);
    }
    if report.interrupted || report.violation_count() > 0 {
        return Ok(());
    }
    if let (Some(check), CheckAt::End) = (&config.check, config.check_at) {
        // The app stops first: the check sees what it left.
        app.kill();
        let when = Moment {
            cycle: report.cycles,
            crash_after_ms: None,
            at_end: true,
            text: format!("at the end, after {} cycles", report.cycles),
        };
        match run_check(check, &check_log, env, report.cycles)? {
            CheckOutcome::Passed => summary(report).checks_passed += 1,
            CheckOutcome::Failed(what) => violation(report, "check failed", &when, what, server),
            CheckOutcome::Interrupted => report.interrupted = true,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_survives_quotes_and_spaces() {
        assert_eq!(shell_quote("/a b/shoal"), "'/a b/shoal'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn the_environment_points_at_the_endpoint_with_dummy_credentials() {
        let env = environment("http://127.0.0.1:9", Path::new("/run"), 7);
        let get = |name: &str| {
            env.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("AWS_ENDPOINT_URL"), Some("http://127.0.0.1:9"));
        assert_eq!(get("AWS_ENDPOINT_URL_DYNAMODB"), Some("http://127.0.0.1:9"));
        assert!(get("AWS_ACCESS_KEY_ID").is_some());
        assert!(get("AWS_SECRET_ACCESS_KEY").is_some());
        assert_eq!(get("AWS_REGION"), get("AWS_DEFAULT_REGION"));
        assert_eq!(get("SHOAL_CRASH_TEST_SEED"), Some("7"));
    }
}
