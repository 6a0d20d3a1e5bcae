//! The load generator works end to end against `shoal serve` (a short, small run: this is a
//! correctness test of the tool, not a measurement).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use shoal::bench::loadgen::{self, LoadConfig, WORKLOADS};

#[test]
fn every_workload_runs_without_errors_and_measures_server_cpu() {
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
    let config = LoadConfig {
        address,
        connections: 4,
        duration: Duration::from_millis(300),
        items: 300,
        partitions: 20,
        server_pid: Some(server.id()),
        workloads: Vec::new(),
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let results = runtime.block_on(loadgen::run(&config));
    let _ = server.kill();
    let _ = server.wait();
    let results = results.unwrap();
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
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let error = runtime.block_on(loadgen::run(&config)).unwrap_err();
    assert!(error.contains("unknown workload Bogus"), "{error}");
}
