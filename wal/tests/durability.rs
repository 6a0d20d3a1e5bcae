//! What each durability mode syncs.

mod common;

use std::time::{Duration, Instant};

use common::*;
use shoal_vfs::sim::SimFs;
use shoal_wal::{Durability, WalOptions};

fn options(durability: Durability) -> WalOptions {
    WalOptions {
        durability,
        segment_size_bytes: 1 << 20,
        ..small_options()
    }
}

#[test]
fn sync_mode_makes_each_acknowledged_commit_durable() {
    let sim = SimFs::new();
    let (wal, _) = open(sim.fs(), &wal_dir(), options(Durability::Sync)).unwrap();
    for i in 0..5 {
        wal.commit(TestBatch::new(payload(i), 1)).unwrap();
        // Acknowledged means durable: a power loss right now keeps it.
        assert_eq!(wal.stats().syncs, i + 1);
    }
    sim.power_loss(7);
    drop(wal);
    let (_wal, replayed) = open(sim.fs(), &wal_dir(), options(Durability::Sync)).unwrap();
    assert_eq!(replayed.len(), 5);
}

#[test]
fn none_mode_never_syncs_commits_but_survives_a_process_crash() {
    let sim = SimFs::new();
    let (wal, _) = open(sim.fs(), &wal_dir(), options(Durability::None)).unwrap();
    let syncs_before = sim.counters().data_syncs;
    for i in 0..50 {
        wal.commit(TestBatch::new(payload(i), 1)).unwrap();
    }
    assert_eq!(sim.counters().data_syncs, syncs_before);
    assert_eq!(wal.stats().syncs, 0);
    // A process crash (no power loss): the bytes are in the OS, the reopen sees them all.
    std::mem::forget(wal);
    let (_wal, replayed) = open(sim.fs(), &wal_dir(), options(Durability::None)).unwrap();
    assert_eq!(replayed.len(), 50);
}

#[test]
fn interval_mode_syncs_in_the_background_and_on_close() {
    let sim = SimFs::new();
    let interval = options(Durability::Interval(Duration::from_millis(5)));
    let (wal, _) = open(sim.fs(), &wal_dir(), interval.clone()).unwrap();
    wal.commit(TestBatch::new("a", 1)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while wal.stats().syncs == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(wal.stats().syncs > 0, "the background thread never synced");

    // With a long interval, close is what makes the last commit durable.
    drop(wal);
    let long = options(Durability::Interval(Duration::from_secs(3600)));
    let (wal, _) = open(sim.fs(), &wal_dir(), long.clone()).unwrap();
    wal.commit(TestBatch::new("b", 1)).unwrap();
    wal.close().unwrap();
    sim.power_loss(3);
    let (_wal, replayed) = open(sim.fs(), &wal_dir(), long).unwrap();
    let payloads: Vec<Vec<u8>> = replayed.into_iter().map(|r| r.payload).collect();
    assert_eq!(payloads, vec![b"a".to_vec(), b"b".to_vec()]);
}

#[test]
fn exclusive_runs_between_groups() {
    let sim = SimFs::new();
    let (wal, _) = open(sim.fs(), &wal_dir(), options(Durability::Sync)).unwrap();
    wal.commit(TestBatch::new("a", 1)).unwrap();
    let seen = wal.exclusive(|| wal.applier().applied.lock().len());
    assert_eq!(seen, 1);
    assert_eq!(wal.exclusive(|| wal.last_seq()), 1);
}
