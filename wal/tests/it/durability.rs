//! What each durability mode syncs.

use crate::common;
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

#[test]
fn a_synced_segment_is_zero_filled_ahead_of_its_writer_a_step_at_a_time() {
    let sim = SimFs::new();
    let options = WalOptions {
        durability: Durability::Sync,
        segment_size_bytes: 16 << 20,
        preallocate_segments: true,
        ..small_options()
    };
    let dir = wal_dir();
    let (wal, _) = open(sim.fs(), &dir, options.clone()).unwrap();
    let fs = sim.fs();
    let segment = |fs: &shoal_vfs::Fs| {
        let number = *segment_numbers(fs, &dir).last().unwrap();
        fs.file_size(&dir.join(format!("{number:020}.log")))
            .unwrap()
    };
    // A fresh log holds one step, not a whole segment.
    assert_eq!(segment(&fs), 1 << 20);
    let record = vec![7u8; 64 << 10];
    let mut sizes = vec![segment(&fs)];
    let mut written = 0u64;
    for _ in 0..150 {
        wal.commit(TestBatch::new(record.clone(), 1)).unwrap();
        written += record.len() as u64;
        let size = segment(&fs);
        // Always ahead of the data, so commits overwrite zeros.
        assert!(
            size >= written,
            "{size} bytes allocated for {written} written"
        );
        if sizes.last() != Some(&size) {
            sizes.push(size);
        }
    }
    assert_eq!(
        sizes,
        vec![1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20],
        "each fill doubles what is filled, up to the segment's size"
    );

    // A power loss keeps every acknowledged commit: the fills never touch written records.
    sim.power_loss(11);
    drop(wal);
    let (_wal, replayed) = open(sim.fs(), &dir, options).unwrap();
    assert_eq!(replayed.len(), 150);
    assert!(replayed.iter().all(|r| r.payload == record));
}
