//! A flipped byte in an SSTable, as an operator meets it: `shoal check` names the damaged
//! file, what it holds and its key range; the server counts the failed reads in /metrics and
//! names the damaged place there, while reads of other tables go on.

use std::process::Command;

use serde_json::json;
use shoal::tables::{Database, Options};

use crate::sdk_server::Server;

/// A database in `dir` with table `Damaged` (400 items) and table `Intact` (1 item), every
/// item in SSTables; then one byte of `Damaged`'s largest SSTable flipped.
fn damaged_database(dir: &std::path::Path) -> String {
    {
        let db = Database::open(dir, Options::default()).unwrap();
        for table in ["Intact", "Damaged"] {
            db.execute(
                "CreateTable",
                json!({"TableName": table, "BillingMode": "PAY_PER_REQUEST",
                    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}),
            )
            .unwrap();
        }
        db.execute(
            "PutItem",
            json!({"TableName": "Intact", "Item": {"pk": {"S": "only"}}}),
        )
        .unwrap();
        db.lsm().flush_all().unwrap();
        for i in 0..400 {
            db.execute(
                "PutItem",
                json!({"TableName": "Damaged", "Item": {"pk": {"S": format!("k{i:04}")},
                    "payload": {"S": "x".repeat(200)}}}),
            )
            .unwrap();
        }
        db.lsm().flush_all().unwrap();
    }
    let sst = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sst"))
        .max_by_key(|path| std::fs::metadata(path).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&sst).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x40;
    std::fs::write(&sst, bytes).unwrap();
    sst.file_name().unwrap().to_str().unwrap().to_string()
}

#[test]
fn check_names_the_damaged_file_and_the_server_counts_and_locates_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = damaged_database(dir.path());

    let check = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["check", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(1), "{stdout}{stderr}");
    let line = stdout
        .lines()
        .find(|line| line.starts_with("damaged: "))
        .unwrap_or_else(|| panic!("no damaged line: {stdout}{stderr}"));
    assert!(
        line.starts_with(&format!("damaged: {file} at offset ")),
        "{line}"
    );
    assert!(line.contains("table Damaged"), "{line}");
    assert!(stderr.contains("docs/RECOVERY.md"), "{stderr}");

    let server = Server::spawn(&[
        "serve",
        "--port",
        "0",
        "--data-dir",
        dir.path().to_str().unwrap(),
    ]);
    let (_, metrics) = server.http("GET", "/metrics", "");
    assert!(
        metrics.contains("\nshoal_corrupt_reads_total 0\n"),
        "{metrics}"
    );
    let client = server.client();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let damaged = client.scan().table_name("Damaged").send().await;
        assert!(damaged.is_err(), "a scan through the damaged block fails");
        let intact = client.scan().table_name("Intact").send().await.unwrap();
        assert_eq!(intact.count(), 1);
    });
    let (_, metrics) = server.http("GET", "/metrics", "");
    let failures: u64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("shoal_corrupt_reads_total "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(failures >= 1, "{metrics}");
    assert!(
        metrics.contains(&format!("shoal_corrupt_blocks{{file=\"{file}\",offset=\"")),
        "{metrics}"
    );
    assert!(metrics.contains("holds=\"table Damaged"), "{metrics}");
    assert!(metrics.contains("\nshoal_writes_accepted 1\n"), "{metrics}");
    // Health: degraded, not down (writes go on); `shoal health` exits 2 for it.
    let (status, body) = server.http("GET", "/", "");
    assert_eq!(status, 200);
    assert!(body.starts_with("degraded: "), "{body}");
    let health = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["health", "--endpoint", &server.endpoint])
        .output()
        .unwrap();
    assert_eq!(health.status.code(), Some(2), "{health:?}");
    server.stop();
}
