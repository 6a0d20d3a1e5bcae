//! A full disk refuses commits without poisoning the log, and once space is freed commits are
//! accepted again: nothing acknowledged is lost, nothing refused is ever applied or replayed.
//! The disk fills at every mutating call of a run of commits that rotates segments several
//! times (`SimFs::full_after`, no byte more fits), and after every few bytes of it (room for
//! a part of the next write, which then writes what fits), in each durability and
//! preallocation setting.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::common;
use common::*;
use shoal_vfs::sim::SimFs;
use shoal_wal::{Durability, WalError, WalOptions};

/// Commits made before the disk starts to fill, and while it may be full.
const COMMITS_BEFORE: u64 = 5;
const COMMITS_WHILE_FULL: u64 = 30;
/// Mutating calls after which the disk fills: past every call of the commits above (about
/// two calls a commit, more for each of their three or four rotations).
const FILL_CALLS: u64 = 120;
/// Room left, in bytes, when the disk fills after some bytes instead: past the bytes the
/// commits above write (about 100 a commit), in steps that land inside records and headers.
const FILL_BYTES: std::ops::Range<u64> = 0..3_500;
const FILL_BYTES_STEP: usize = 13;

/// When the disk fills.
#[derive(Debug, Clone, Copy)]
enum Fill {
    /// After this many more mutating calls, with no room at all.
    AfterCalls(u64),
    /// Once this many more bytes are written.
    AfterBytes(u64),
}

fn fill_points() -> impl Iterator<Item = Fill> {
    (0..FILL_CALLS)
        .map(Fill::AfterCalls)
        .chain(FILL_BYTES.step_by(FILL_BYTES_STEP).map(Fill::AfterBytes))
}

fn settings() -> Vec<(&'static str, WalOptions)> {
    vec![
        ("sync, appended", small_options()),
        (
            "sync, preallocated",
            WalOptions {
                preallocate_segments: true,
                ..small_options()
            },
        ),
        (
            "none",
            WalOptions {
                durability: Durability::None,
                ..small_options()
            },
        ),
    ]
}

/// What one run saw.
struct Run {
    /// (first sequence number, payload) of every acknowledged commit, in order.
    acknowledged: Vec<(u64, Vec<u8>)>,
    refused: Vec<Vec<u8>>,
    /// The `action` of each refusal.
    actions: BTreeSet<&'static str>,
}

/// Commits `COMMITS_WHILE_FULL` batches with the disk filling at `fill`. Every failure must
/// be `NoSpace` and leave the log unpoisoned.
fn commit_while_filling(sim: &SimFs, wal: &TestWal, fill: Fill, run: &mut Run) {
    match fill {
        Fill::AfterCalls(calls) => sim.full_after(Some(calls)),
        Fill::AfterBytes(bytes) => sim.set_space_bytes(Some(sim.used_bytes() + bytes)),
    }
    for i in COMMITS_BEFORE..COMMITS_BEFORE + COMMITS_WHILE_FULL {
        match wal.commit(TestBatch::new(payload(i), 1)) {
            Ok(seq) => run.acknowledged.push((seq, payload(i))),
            Err(WalError::NoSpace { action, .. }) => {
                run.actions.insert(action);
                run.refused.push(payload(i));
                assert_eq!(wal.poisoned(), None, "a full disk poisoned the log");
            }
            Err(other) => panic!("{fill:?}: expected NoSpace, got {other}"),
        }
    }
}

fn start(sim: &SimFs, options: &WalOptions) -> (TestWal, Run) {
    let (wal, _) = open(sim.fs(), &wal_dir(), options.clone()).unwrap();
    let mut run = Run {
        acknowledged: Vec::new(),
        refused: Vec::new(),
        actions: BTreeSet::new(),
    };
    for i in 0..COMMITS_BEFORE {
        let seq = wal.commit(TestBatch::new(payload(i), 1)).unwrap();
        run.acknowledged.push((seq, payload(i)));
    }
    (wal, run)
}

/// Sequence numbers follow each other from 1: a refused commit used none.
fn assert_contiguous(acknowledged: &[(u64, Vec<u8>)], context: &str) {
    for (index, (seq, _)) in acknowledged.iter().enumerate() {
        assert_eq!(
            *seq,
            index as u64 + 1,
            "{context}: sequence numbers have a hole"
        );
    }
}

fn replayed_pairs(replayed: &[Replayed]) -> Vec<(u64, Vec<u8>)> {
    replayed
        .iter()
        .map(|record| (record.first_seq, record.payload.clone()))
        .collect()
}

#[test]
fn writes_resume_once_space_is_freed_and_the_log_holds_exactly_what_was_acknowledged() {
    for (name, options) in settings() {
        let mut actions = BTreeSet::new();
        let mut refusals = 0;
        for fill in fill_points() {
            let context = format!("{name}, disk full {fill:?}");
            let sim = SimFs::new();
            let (wal, mut run) = start(&sim, &options);
            commit_while_filling(&sim, &wal, fill, &mut run);
            refusals += run.refused.len();
            actions.extend(run.actions.iter().copied());
            // Space is freed: every commit goes through again, without a reopen.
            sim.set_space_bytes(None);
            for i in 100..110 {
                let seq = wal
                    .commit(TestBatch::new(payload(i), 1))
                    .unwrap_or_else(|error| panic!("{context}: after freeing space: {error}"));
                run.acknowledged.push((seq, payload(i)));
            }
            assert_contiguous(&run.acknowledged, &context);
            assert_eq!(
                *wal.applier().applied.lock(),
                run.acknowledged,
                "{context}: applied"
            );
            drop(wal);
            let (_, replayed) = open(sim.fs(), &wal_dir(), options.clone())
                .unwrap_or_else(|error| panic!("{context}: reopen: {error}"));
            assert_eq!(
                replayed_pairs(&replayed),
                run.acknowledged,
                "{context}: replayed"
            );
        }
        assert!(refusals > 0, "{name}: the disk never filled");
        // Without preallocation refusals came from the writes of groups and of segment
        // headers (taken back); with it, from the zero-fill of the next segment, since the
        // groups overwrite what was filled: such a segment runs out of room only at rotation.
        let expected = if options.preallocate_segments {
            "preallocate"
        } else {
            "write"
        };
        assert!(actions.contains(expected), "{name}: {actions:?}");
    }
}

#[test]
fn a_power_loss_while_the_disk_is_full_never_brings_back_a_refused_batch() {
    for (name, options) in settings() {
        for (seed, fill) in fill_points().enumerate() {
            let context = format!("{name}, disk full {fill:?}");
            let sim = SimFs::new();
            let (wal, mut run) = start(&sim, &options);
            commit_while_filling(&sim, &wal, fill, &mut run);
            sim.power_loss(seed as u64);
            drop(wal);
            sim.set_space_bytes(None);
            let (_, replayed) = open(sim.fs(), &wal_dir(), options.clone())
                .unwrap_or_else(|error| panic!("{context}: reopen: {error}"));
            let replayed = replayed_pairs(&replayed);
            // A prefix of what was acknowledged (all of it when every commit was synced)...
            assert!(
                run.acknowledged.starts_with(&replayed),
                "{context}: replayed {} records that are not a prefix of the acknowledged",
                replayed.len()
            );
            if options.durability == Durability::Sync {
                assert_eq!(replayed.len(), run.acknowledged.len(), "{context}: lost");
            }
            // ...so never a refused batch.
            for (_, payload) in &replayed {
                assert!(
                    !run.refused.contains(payload),
                    "{context}: refused replayed"
                );
            }
        }
    }
}

/// Groups of several batches: the part of a group that fitted can hold whole records of
/// its first members, which must not survive either.
#[test]
fn concurrent_groups_cut_off_by_a_full_disk_are_taken_back_whole() {
    let options = WalOptions {
        segment_size_bytes: 64 << 10,
        ..small_options()
    };
    for room in (0..4_000).step_by(37) {
        let fill_at = format!("room for {room} bytes");
        let sim = SimFs::new();
        let (wal, _) = open(sim.fs(), &wal_dir(), options.clone()).unwrap();
        let wal = Arc::new(wal);
        sim.set_space_bytes(Some(sim.used_bytes() + room));
        let threads: Vec<_> = (0..4u64)
            .map(|thread| {
                let wal = Arc::clone(&wal);
                std::thread::spawn(move || {
                    let mut outcomes = Vec::new();
                    for i in 0..25 {
                        let payload = payload(thread * 1000 + i);
                        let result = wal.commit(TestBatch::new(payload.clone(), 1));
                        if let Err(error) = &result {
                            assert!(error.is_no_space(), "{error}");
                        }
                        outcomes.push((payload, result.ok()));
                    }
                    outcomes
                })
            })
            .collect();
        let mut acknowledged: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut refused = Vec::new();
        for thread in threads {
            for (payload, seq) in thread.join().unwrap() {
                match seq {
                    Some(seq) => acknowledged.push((seq, payload)),
                    None => refused.push(payload),
                }
            }
        }
        // Every other run loses power while the disk is still full: the cut of a group must
        // have been made durable before its members heard of the failure.
        let power_loss = room % 2 == 1;
        if power_loss {
            sim.power_loss(room);
        } else {
            sim.set_space_bytes(None);
            let seq = wal.commit(TestBatch::new("after", 1)).unwrap();
            acknowledged.push((seq, b"after".to_vec()));
        }
        acknowledged.sort();
        assert_contiguous(&acknowledged, &fill_at);
        let wal = Arc::into_inner(wal).expect("threads joined");
        drop(wal);
        sim.set_space_bytes(None);
        let (_, replayed) = open(sim.fs(), &wal_dir(), options.clone()).unwrap();
        assert_eq!(replayed_pairs(&replayed), acknowledged, "{fill_at}");
        for payload in &refused {
            assert!(replayed.iter().all(|record| &record.payload != payload));
        }
    }
}
