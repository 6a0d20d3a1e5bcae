//! Simulated power loss (SimFs): acknowledged records survive, recovery is a prefix.

use crate::common;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shoal_vfs::sim::SimFs;
use shoal_wal::{Durability, WalOptions};

fn options(durability: Durability) -> WalOptions {
    WalOptions {
        durability,
        segment_size_bytes: 2048,
        preallocate_segments: true,
        recycled_segments_max: 2,
        ..WalOptions::default()
    }
}

fn random_payload(rng: &mut StdRng, id: u64) -> Vec<u8> {
    let mut payload = id.to_le_bytes().to_vec();
    let len = rng.random_range(0..400);
    payload.extend((0..len).map(|_| rng.random::<u8>()));
    payload
}

/// Checks a replay against every record ever committed (`log`, where record i has sequence
/// number i + 1): it must be `log` from some point on, and that point may only be past records
/// the test released. Returns the replayed payloads that go beyond `log`.
fn check_replay(
    replayed: &[Replayed],
    log: &[Vec<u8>],
    released_through: u64,
    context: &str,
) -> Vec<Vec<u8>> {
    let first_seq = replayed
        .first()
        .map_or(log.len() as u64 + 1, |r| r.first_seq);
    assert!(
        first_seq <= released_through + 1,
        "{context}: records {released_through}..{first_seq} lost"
    );
    for (offset, record) in replayed.iter().enumerate() {
        assert_eq!(
            record.first_seq,
            first_seq + offset as u64,
            "{context}: hole"
        );
    }
    let skipped = (first_seq - 1) as usize;
    let expected = &log[skipped.min(log.len())..];
    assert!(
        replayed.len() >= expected.len(),
        "{context}: acknowledged records lost: {} replayed, {} expected",
        replayed.len(),
        expected.len()
    );
    for (record, payload) in replayed.iter().zip(expected) {
        assert_eq!(record.payload, *payload, "{context}: wrong payload");
    }
    replayed[expected.len()..]
        .iter()
        .map(|r| r.payload.clone())
        .collect()
}

/// Several lives per seed: commit, leave a write in flight, lose power, reopen and check.
#[test]
fn sync_mode_keeps_every_acknowledged_record_and_recovers_a_prefix() {
    let (mut in_flight_kept, mut in_flight_lost) = (0, 0);
    for seed in 0..150u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let sim = SimFs::new();
        let dir = wal_dir();
        // Every record committed, in commit order (record i has sequence number i + 1).
        let mut log: Vec<Vec<u8>> = Vec::new();
        let mut released_through = 0;
        let mut id = 0;
        for life in 0..4 {
            let context = format!("seed {seed} life {life}");
            let (wal, replayed) = open(sim.fs(), &dir, options(Durability::Sync))
                .unwrap_or_else(|error| panic!("{context}: {error}"));
            let extra = check_replay(&replayed, &log, released_through, &context);
            assert!(extra.is_empty(), "{context}: records appeared");
            // Release sometimes, so recycled files get reused.
            if rng.random_bool(0.5) {
                released_through = wal.last_seq() / 2;
                wal.release_through(released_through).unwrap();
            }
            for _ in 0..rng.random_range(0..30) {
                id += 1;
                let payload = random_payload(&mut rng, id);
                let seq = wal.commit(TestBatch::new(payload.clone(), 1)).unwrap();
                log.push(payload);
                assert_eq!(seq, log.len() as u64);
            }
            // A write that reaches the file but whose fdatasync fails: not acknowledged.
            sim.fail_syncs(true);
            id += 1;
            let in_flight = random_payload(&mut rng, id);
            assert!(wal.commit(TestBatch::new(in_flight.clone(), 1)).is_err());
            sim.fail_syncs(false);
            sim.power_loss(seed * 100 + life);
            drop(wal);
            let context = format!("{context} after power loss");
            let (_wal, replayed) = open(sim.fs(), &dir, options(Durability::Sync))
                .unwrap_or_else(|error| panic!("{context}: {error}"));
            // The in-flight record may or may not have survived, but nothing else may appear.
            match check_replay(&replayed, &log, released_through, &context).as_slice() {
                [] => in_flight_lost += 1,
                [survivor] => {
                    assert_eq!(*survivor, in_flight, "{context}");
                    log.push(in_flight);
                    in_flight_kept += 1;
                }
                extra => panic!("{context}: {} unexpected records", extra.len()),
            }
        }
    }
    // Both outcomes of a torn write must have been exercised.
    assert!(
        in_flight_kept > 10 && in_flight_lost > 10,
        "kept {in_flight_kept}, lost {in_flight_lost}"
    );
}

/// Without syncs, a power loss keeps some prefix of the writes, at least what was synced.
#[test]
fn unsynced_modes_recover_a_prefix_of_commit_order() {
    let (mut partial_recoveries, mut unsynced_kept) = (0, 0);
    for seed in 0..120u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let sim = SimFs::new();
        let dir = wal_dir();
        let mut log: Vec<Vec<u8>> = Vec::new();
        let mut id = 0;
        for life in 0..3 {
            let (wal, replayed) = open(sim.fs(), &dir, options(Durability::None))
                .unwrap_or_else(|error| panic!("seed {seed} life {life}: {error}"));
            let replayed: Vec<Vec<u8>> = replayed.into_iter().map(|r| r.payload).collect();
            assert!(replayed.len() <= log.len());
            assert_eq!(
                replayed[..],
                log[..replayed.len()],
                "seed {seed} life {life}"
            );
            // What this life's open saw is the log from now on.
            log.truncate(replayed.len());
            let mut synced = log.len();
            for _ in 0..rng.random_range(0..40) {
                id += 1;
                let payload = random_payload(&mut rng, id);
                wal.commit(TestBatch::new(payload.clone(), 1)).unwrap();
                log.push(payload);
                if rng.random_bool(0.1) {
                    wal.sync().unwrap();
                    synced = log.len();
                }
            }
            sim.power_loss(seed * 100 + life);
            drop(wal);
            let (_wal, replayed) = open(sim.fs(), &dir, options(Durability::None))
                .unwrap_or_else(|error| panic!("seed {seed} life {life} reopen: {error}"));
            assert!(
                replayed.len() >= synced,
                "seed {seed} life {life}: synced records lost"
            );
            let replayed: Vec<Vec<u8>> = replayed.into_iter().map(|r| r.payload).collect();
            assert_eq!(
                replayed[..],
                log[..replayed.len()],
                "seed {seed} life {life}"
            );
            partial_recoveries += usize::from(replayed.len() < log.len());
            unsynced_kept += usize::from(replayed.len() > synced);
            log.truncate(replayed.len());
        }
    }
    assert!(
        partial_recoveries > 10 && unsynced_kept > 10,
        "{partial_recoveries} lossy recoveries, {unsynced_kept} with unsynced records kept"
    );
}

/// Power fails while eight threads commit; every acknowledged commit survives.
#[test]
fn power_loss_during_concurrent_commits_keeps_acknowledged_ones() {
    let mut acknowledged_total = 0;
    for seed in 0..12u64 {
        let sim = SimFs::new();
        let dir = wal_dir();
        // One large segment: after the crash the old instance must hit a stale handle, not
        // start a new segment on the "rebooted" disk.
        let options = WalOptions {
            segment_size_bytes: 1 << 20,
            ..options(Durability::Sync)
        };
        let (wal, _) = open(sim.fs(), &dir, options.clone()).unwrap();
        let wal = Arc::new(wal);
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..8u64)
            .map(|thread| {
                let wal = Arc::clone(&wal);
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut acknowledged = Vec::new();
                    for index in 0..5000u64 {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let payload = format!("{thread}:{index}").into_bytes();
                        match wal.commit(TestBatch::new(payload.clone(), 1)) {
                            Ok(seq) => acknowledged.push((seq, payload)),
                            Err(_) => break,
                        }
                    }
                    acknowledged
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(2 + seed % 5));
        sim.power_loss(seed);
        stop.store(true, Ordering::Relaxed);
        let mut acknowledged: Vec<(u64, Vec<u8>)> = threads
            .into_iter()
            .flat_map(|thread| thread.join().unwrap())
            .collect();
        acknowledged.sort();
        acknowledged_total += acknowledged.len();
        drop(wal);

        let (_wal, replayed) = open(sim.fs(), &dir, options).unwrap();
        // No holes: sequence numbers run 1, 2, 3, ...
        for (expected_seq, record) in (1..).zip(&replayed) {
            assert_eq!(record.first_seq, expected_seq, "seed {seed}");
        }
        // Every acknowledged record is there with its own payload.
        for (seq, payload) in &acknowledged {
            let record = replayed
                .get(*seq as usize - 1)
                .unwrap_or_else(|| panic!("seed {seed}: acknowledged seq {seq} lost"));
            assert_eq!(record.payload, *payload, "seed {seed}");
        }
        // Each thread's surviving records are a prefix of what it committed.
        for thread in 0..8u64 {
            let prefix = format!("{thread}:");
            let indices: Vec<u64> = replayed
                .iter()
                .filter_map(|r| {
                    let text = std::str::from_utf8(&r.payload).ok()?;
                    text.strip_prefix(&prefix)?.parse().ok()
                })
                .collect();
            assert_eq!(indices, (0..indices.len() as u64).collect::<Vec<_>>());
        }
    }
    assert!(acknowledged_total > 0);
}

/// A process that dies in `none` mode leaves its last segment's tail unsynced, in the page
/// cache; the next open replays it and starts a segment whose header says where that tail
/// ends. A power cut after that open must keep the replayed records, not find the declared
/// end past a lost tail (corruption) or lose what the open handed out as replayed.
#[test]
fn records_replayed_from_an_unsynced_tail_are_durable_once_the_open_returns() {
    for seed in 0..20u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let sim = SimFs::new();
        let dir = wal_dir();
        let (wal, _) = open(sim.fs(), &dir, options(Durability::None)).unwrap();
        let log: Vec<Vec<u8>> = (0..rng.random_range(1..40))
            .map(|id| random_payload(&mut rng, id))
            .collect();
        for payload in &log {
            wal.commit(TestBatch::new(payload.clone(), 1)).unwrap();
        }
        // The process dies: nothing more is synced.
        sim.fail_syncs(true);
        drop(wal);
        sim.fail_syncs(false);
        let (wal, replayed) = open(sim.fs(), &dir, options(Durability::None)).unwrap();
        assert_eq!(
            replayed.len(),
            log.len(),
            "seed {seed}: the page cache held them all"
        );
        sim.power_loss(seed);
        drop(wal);
        let (_wal, replayed) = open(sim.fs(), &dir, options(Durability::None))
            .unwrap_or_else(|error| panic!("seed {seed}: reopen after the power cut: {error}"));
        let replayed: Vec<Vec<u8>> = replayed.into_iter().map(|r| r.payload).collect();
        assert_eq!(replayed, log, "seed {seed}: replayed records lost");
    }
}
