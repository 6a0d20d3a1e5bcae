//! DynamoDB Local's command line, run as a user would: `shoal -inMemory -port 0` (no
//! subcommand) serves DynamoDB's protocol, `shoal health` checks it, and `-help` and unknown
//! flags behave as documented.

use std::process::Command;

use crate::sdk_server;
use sdk_server::Server;

fn shoal(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run shoal")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_local_command_line_serves_and_answers_health_checks() {
    let server = Server::spawn(&["-sharedDb", "-inMemory", "-port", "0"]);
    let tables = server.client().list_tables().send().await.unwrap();
    assert!(tables.table_names().is_empty());

    let health = shoal(&["health", "--endpoint", &server.endpoint]);
    assert!(health.status.success(), "{health:?}");
    assert!(
        String::from_utf8_lossy(&health.stdout).starts_with("healthy"),
        "{health:?}"
    );

    let endpoint = server.endpoint.clone();
    server.stop();
    // Nothing listens any more: unhealthy, and said why.
    let health = shoal(&["health", "--endpoint", &endpoint, "--timeout-seconds", "2"]);
    assert_eq!(health.status.code(), Some(1), "{health:?}");
    assert!(
        String::from_utf8_lossy(&health.stderr).contains("cannot connect"),
        "{health:?}"
    );
}

/// `THP_enabled` of a process's status: 0 once it turned transparent huge pages off.
fn transparent_huge_pages_enabled(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("THP_enabled:"))
        .map(|value| value.trim().to_string())
        .unwrap_or_else(|| panic!("no THP_enabled in {status}"))
}

/// `AnonHugePages` of a process's `smaps_rollup`, in KiB.
fn anonymous_huge_pages_kib(pid: u32) -> u64 {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    rollup
        .lines()
        .find_map(|line| line.strip_prefix("AnonHugePages:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no AnonHugePages in {rollup}"))
}

#[test]
fn serve_turns_transparent_huge_pages_off_unless_asked_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(transparent_huge_pages_enabled(server.pid()), "0");
    // Off before the allocator's first arena too (serve/memory.rs): when serve turned them
    // off itself, the memory allocated before it still held three huge pages.
    assert_eq!(anonymous_huge_pages_kib(server.pid()), 0);
    server.stop();
    // The neighbouring case: asked for, the allocator may use them as before.
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--transparent-huge-pages"]);
    assert_eq!(transparent_huge_pages_enabled(server.pid()), "1");
    server.stop();
}

#[test]
fn help_prints_dynamodb_local_usage_and_unknown_flags_are_named() {
    let help = shoal(&["-help"]);
    assert!(help.status.success(), "{help:?}");
    let usage = String::from_utf8_lossy(&help.stdout);
    for flag in ["-port", "-dbPath", "-inMemory", "-sharedDb", "-cors"] {
        assert!(usage.contains(flag), "{flag} missing from {usage}");
    }

    let unknown = shoal(&["-inMemory", "-port", "0", "-fooBar"]);
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("unknown flag -fooBar"),
        "{unknown:?}"
    );
}
