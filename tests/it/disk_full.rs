//! A real full disk, end to end: `shoal serve` on a small tmpfs answers writes with a 500
//! once the disk is full while reads go on and `GET /` says `degraded: … disk full`; when the
//! operator frees space, writes are accepted again without a restart, and every acknowledged
//! item is there, then and after a restart. Mounting needs root: otherwise the test prints
//! why it did not run (the vfs simulation in `engine/tests/it/no_space.rs` and
//! `wal/tests/it/no_space.rs` covers the same paths call by call).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

use crate::sdk_server::{create_pk_table, http_get, Server};

/// Size of the tmpfs: the WAL fills it within a few hundred 32 KiB items.
const TMPFS_BYTES: &str = "24m";
/// A file the operator deletes to free space.
const BALLAST_BYTES: usize = 8 << 20;
const ITEM_PAYLOAD_BYTES: usize = 32 << 10;

/// A tmpfs mounted on a new temporary directory; unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// None (and a printed reason) when this process cannot mount one.
    fn mount() -> Option<Tmpfs> {
        // SAFETY: geteuid has no preconditions and touches no memory.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("disk_full: skipped: mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={TMPFS_BYTES}"), "tmpfs"])
            .arg(dir.path())
            .status();
        match mounted {
            Ok(status) if status.success() => Some(Tmpfs { dir }),
            other => {
                eprintln!("disk_full: skipped: mount -t tmpfs failed: {other:?}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn key(i: usize) -> AttributeValue {
    AttributeValue::S(format!("item-{i:05}"))
}

async fn put(client: &Client, i: usize) -> Result<(), (u16, String, String)> {
    client
        .put_item()
        .table_name("Full")
        .item("pk", key(i))
        .item("payload", AttributeValue::S("x".repeat(ITEM_PAYLOAD_BYTES)))
        .send()
        .await
        .map(|_| ())
        .map_err(|error| {
            let status = error
                .raw_response()
                .map_or(0, |response| response.status().as_u16());
            (
                status,
                error.code().unwrap_or_default().to_string(),
                error.message().unwrap_or_default().to_string(),
            )
        })
}

async fn assert_all_there(client: &Client, acknowledged: &[usize], context: &str) {
    for &i in acknowledged {
        let item = client
            .get_item()
            .table_name("Full")
            .key("pk", key(i))
            .send()
            .await
            .unwrap_or_else(|error| panic!("{context}: GetItem {i}: {error:?}"));
        assert!(
            item.item().is_some(),
            "{context}: acknowledged item {i} lost"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_resume_on_a_full_tmpfs_once_space_is_freed() {
    let Some(tmpfs) = Tmpfs::mount() else {
        return;
    };
    let ballast: PathBuf = tmpfs.path().join("ballast");
    std::fs::write(&ballast, vec![1u8; BALLAST_BYTES]).unwrap();
    let data_dir = tmpfs.path().join("data");
    let data_arg = data_dir.to_str().unwrap();
    let serve = ["serve", "--port", "0", "--durability", "sync", "--data-dir"];
    let server = Server::spawn(&[&serve[..], &[data_arg]].concat());
    let client = server.client_without_retries();
    create_pk_table(&client, "Full").await;

    // Fill the disk: writes are acknowledged until one is refused.
    let mut acknowledged = Vec::new();
    let refusal = loop {
        let i = acknowledged.len();
        assert!(i < 2_000, "the disk never filled");
        match put(&client, i).await {
            Ok(()) => acknowledged.push(i),
            Err(refusal) => break refusal,
        }
    };
    let (status, code, message) = &refusal;
    assert_eq!(
        (*status, code.as_str()),
        (500, "InternalServerError"),
        "{message}"
    );
    assert!(message.contains("disk space"), "{message}");
    let health = server.http("GET", "/", "");
    assert_eq!(health.0, 200, "{health:?}");
    assert!(
        health.1.starts_with("degraded: ") && health.1.contains("disk full"),
        "{health:?}"
    );
    assert!(http_get(&server.endpoint, "/metrics").contains("shoal_disk_full 1"));
    // Reads go on, and writes stay refused while the disk is full.
    assert_all_there(&client, &acknowledged, "disk full").await;
    assert!(put(&client, acknowledged.len()).await.is_err());

    // The operator frees space: the next writes are accepted, with no restart.
    std::fs::remove_file(&ballast).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let i = acknowledged.len();
        if put(&client, i).await.is_ok() {
            acknowledged.push(i);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "writes did not resume within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for _ in 0..20 {
        let i = acknowledged.len();
        put(&client, i)
            .await
            .expect("a write after space was freed");
        acknowledged.push(i);
    }
    let health = server.http("GET", "/", "");
    assert!(health.1.starts_with("healthy: "), "{health:?}");
    assert!(http_get(&server.endpoint, "/metrics").contains("shoal_disk_full 0"));
    assert_all_there(&client, &acknowledged, "after freeing space").await;

    server.stop();
    let server = Server::spawn(&[&serve[..], &[data_arg]].concat());
    let client = server.client_without_retries();
    assert_all_there(&client, &acknowledged, "after a restart").await;
    server.stop();
}
