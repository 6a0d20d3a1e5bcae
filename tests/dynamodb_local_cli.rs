//! DynamoDB Local's command line, run as a user would: `shoal -inMemory -port 0` (no
//! subcommand) serves DynamoDB's protocol, and `-help` and unknown flags behave as
//! documented.

use std::process::Command;

mod sdk_server;
use sdk_server::Server;

fn shoal(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run shoal")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_local_command_line_serves_list_tables() {
    let server = Server::spawn(&["-sharedDb", "-inMemory", "-port", "0"]);
    let tables = server.client().list_tables().send().await.unwrap();
    assert!(tables.table_names().is_empty());

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
