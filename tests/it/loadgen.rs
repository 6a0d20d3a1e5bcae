//! The load generator works end to end against `shoal serve` (a short, small run: this is a
//! correctness test of the tool, not a measurement).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use shoal::bench::loadgen::{self, LoadConfig, WorkloadResult, WORKLOADS};

/// A `shoal serve --in-memory` on a free port, and its `host:port`.
fn start_server() -> (Child, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args([
            "serve",
            "--port",
            "0",
            "--in-memory",
            "--durability",
            "none",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("shoal listening on http://")
        .unwrap()
        .to_string();
    (server, address)
}

/// Runs the config `make_config` builds from a fresh server's address and pid against it.
fn run_against_server(make_config: impl FnOnce(String, u32) -> LoadConfig) -> Vec<WorkloadResult> {
    let (mut server, address) = start_server();
    let config = make_config(address, server.id());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let results = runtime.block_on(loadgen::run(&config));
    let _ = server.kill();
    let _ = server.wait();
    results.unwrap()
}

#[test]
fn every_workload_runs_without_errors_and_measures_server_cpu() {
    let results = run_against_server(|address, pid| LoadConfig {
        address,
        connections: 4,
        duration: Duration::from_millis(300),
        items: 300,
        partitions: 20,
        server_pid: Some(pid),
        workloads: Vec::new(),
        rate_per_second: None,
    });
    assert_eq!(results.len(), WORKLOADS.len());
    for result in &results {
        assert!(result.operations > 0, "{result:?}");
        assert_eq!(result.errors, 0, "{result:?}");
        assert!(result.p50 <= result.p99, "{result:?}");
        assert!(result.server_cpu_per_op.is_some(), "{result:?}");
        assert!(result.client_cpu_per_op.is_some(), "{result:?}");
    }
    let table = loadgen::report(&results);
    assert!(table.contains("| QueryGSI |"), "{table}");
    assert!(table.contains("| BatchWriteItem |"), "{table}");
    assert!(table.contains("| Scan |"), "{table}");
}

#[test]
fn an_unknown_workload_is_refused_before_any_request() {
    let config = LoadConfig {
        // Nothing listens here: the run must fail on the name, not on connecting.
        address: "127.0.0.1:1".to_string(),
        connections: 1,
        duration: Duration::from_millis(10),
        items: 1,
        partitions: 1,
        server_pid: None,
        workloads: vec!["GetItem".to_string(), "Bogus".to_string()],
        rate_per_second: None,
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let error = runtime.block_on(loadgen::run(&config)).unwrap_err();
    assert!(error.contains("unknown workload Bogus"), "{error}");
}

#[test]
fn a_fixed_rate_is_offered_across_the_connections_and_reported() {
    let results = run_against_server(|address, _| LoadConfig {
        address,
        connections: 4,
        duration: Duration::from_secs(1),
        items: 100,
        partitions: 10,
        server_pid: None,
        workloads: vec!["GetItem".to_string()],
        rate_per_second: Some(400),
    });
    let get = &results[0];
    assert_eq!(get.errors, 0, "{get:?}");
    // Any server answers 400 GetItems a second; unpaced, these connections would send
    // thousands. Each connection sends 100 in the second at most, however fast the answers.
    assert!(get.operations <= 400, "{get:?}");
    assert!(get.operations >= 300, "{get:?}");
    assert_eq!(get.offered_ops_per_second, Some(400));
    let table = loadgen::report(&results);
    assert!(table.contains("GetItem: 400 ops/s offered"), "{table}");
}

#[test]
fn a_rate_of_zero_is_refused_before_any_request() {
    let output = Command::new(env!("CARGO_BIN_EXE_shoal"))
        // Nothing listens here: the run must fail on the rate, not on connecting.
        .args(["bench", "--endpoint", "http://127.0.0.1:1", "--rate", "0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--rate must be at least 1 operation per second"),
        "{stderr}"
    );
}
