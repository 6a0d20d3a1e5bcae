//! A failed write or fsync poisons the WAL.

use crate::common;
use common::*;
use shoal_vfs::sim::SimFs;
use shoal_wal::{Durability, WalError, WalOptions};

#[test]
fn a_failed_sync_poisons_every_later_commit_and_applies_nothing() {
    let sim = SimFs::new();
    let (wal, _) = open(sim.fs(), &wal_dir(), small_options()).unwrap();
    assert_eq!(wal.commit(TestBatch::new("ok", 1)).unwrap(), 1);
    sim.fail_syncs(true);
    let error = wal.commit(TestBatch::new("fails", 1)).unwrap_err();
    assert!(
        matches!(
            error,
            WalError::Io {
                action: "fdatasync",
                ..
            }
        ),
        "{error}"
    );
    // Even once the disk recovers, the WAL never retries.
    sim.fail_syncs(false);
    let reason = wal.poisoned().expect("poisoned");
    assert!(reason.contains("fdatasync"), "{reason}");
    match wal.commit(TestBatch::new("later", 1)).unwrap_err() {
        WalError::Poisoned(later_reason) => assert_eq!(later_reason, reason),
        other => panic!("expected Poisoned, got {other}"),
    }
    assert!(matches!(wal.sync(), Err(WalError::Poisoned(_))));
    let applied = wal.applier().applied.lock().clone();
    assert_eq!(applied, vec![(1, b"ok".to_vec())]);
}

#[test]
fn a_failed_write_poisons_too() {
    let sim = SimFs::new();
    let options = WalOptions {
        durability: Durability::None,
        ..small_options()
    };
    let (wal, _) = open(sim.fs(), &wal_dir(), options).unwrap();
    sim.fail_writes(true);
    let error = wal.commit(TestBatch::new("fails", 1)).unwrap_err();
    assert!(
        matches!(
            error,
            WalError::Io {
                action: "write",
                ..
            }
        ),
        "{error}"
    );
    sim.fail_writes(false);
    assert!(matches!(
        wal.commit(TestBatch::new("later", 1)),
        Err(WalError::Poisoned(_))
    ));
    assert!(wal.applier().applied.lock().is_empty());
    // Reads elsewhere are unaffected; the WAL itself still answers queries.
    assert_eq!(wal.last_seq(), 0);
}

#[test]
fn a_failure_during_rotation_poisons() {
    let sim = SimFs::new();
    let (wal, _) = open(sim.fs(), &wal_dir(), small_options()).unwrap();
    wal.commit(TestBatch::new(vec![0u8; 900], 1)).unwrap();
    sim.fail_syncs(true);
    // This one needs a new segment, whose header cannot be synced.
    assert!(wal.commit(TestBatch::new(vec![0u8; 900], 1)).is_err());
    sim.fail_syncs(false);
    assert!(wal.poisoned().is_some());
}

#[test]
fn a_failed_interval_sync_poisons() {
    let sim = SimFs::new();
    let options = WalOptions {
        durability: Durability::Interval(std::time::Duration::from_millis(1)),
        ..small_options()
    };
    let (wal, _) = open(sim.fs(), &wal_dir(), options).unwrap();
    sim.fail_syncs(true);
    wal.commit(TestBatch::new("unsynced", 1)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while wal.poisoned().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(wal.poisoned().is_some());
    assert!(matches!(
        wal.commit(TestBatch::new("later", 1)),
        Err(WalError::Poisoned(_))
    ));
}
