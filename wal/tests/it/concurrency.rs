//! Many committing threads: sequence numbers, apply order, group commit.

use crate::common;
use std::sync::{Arc, Barrier};

use common::*;
use shoal_vfs::sim::SimFs;
use shoal_wal::{Durability, WalOptions};

const THREADS: u64 = 8;
const COMMITS_PER_THREAD: u64 = 200;

/// Runs THREADS × COMMITS_PER_THREAD commits; returns (thread, index, first_seq, seq_count).
fn commit_concurrently(wal: &Arc<TestWal>) -> Vec<(u64, u64, u64, u64)> {
    let barrier = Arc::new(Barrier::new(THREADS as usize));
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let wal = Arc::clone(wal);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                (0..COMMITS_PER_THREAD)
                    .map(|index| {
                        let seq_count = 1 + (thread + index) % 3;
                        let payload = format!("t{thread}-i{index}").into_bytes();
                        let first_seq = wal.commit(TestBatch::new(payload, seq_count)).unwrap();
                        (thread, index, first_seq, seq_count)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|handle| handle.join().unwrap())
        .collect()
}

fn check_run(options: WalOptions) {
    let sim = SimFs::new();
    let dir = wal_dir();
    let (wal, _) = open(sim.fs(), &dir, options.clone()).unwrap();
    let wal = Arc::new(wal);
    let mut commits = commit_concurrently(&wal);

    // Sequence ranges are unique and together contiguous from 1.
    commits.sort_by_key(|commit| commit.2);
    let mut next = 1;
    for &(_, _, first_seq, seq_count) in &commits {
        assert_eq!(first_seq, next, "gap or overlap at {first_seq}");
        next += seq_count;
    }
    assert_eq!(wal.last_seq(), next - 1);
    // Each thread's own commits got increasing sequence numbers.
    for thread in 0..THREADS {
        let mine: Vec<u64> = commits
            .iter()
            .filter(|c| c.0 == thread)
            .map(|c| c.2)
            .collect();
        assert!(mine.windows(2).all(|w| w[0] < w[1]));
    }

    // The applier saw every batch exactly once, in sequence order, and each publish covers
    // what was applied before it.
    let applier = wal.applier();
    let applied = applier.applied.lock().clone();
    let expected: Vec<(u64, Vec<u8>)> = commits
        .iter()
        .map(|&(t, i, seq, _)| (seq, format!("t{t}-i{i}").into_bytes()))
        .collect();
    assert_eq!(applied, expected);
    let published = applier.published.lock().clone();
    assert!(published.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(*published.last().unwrap(), next - 1);
    assert_eq!(published.len() as u64, wal.stats().groups);
    drop(applied);

    let stats = wal.stats();
    assert_eq!(stats.commits, THREADS * COMMITS_PER_THREAD);
    drop(wal);

    // Replay returns exactly the committed records, in order.
    let (_wal, replayed) = open(sim.fs(), &dir, options).unwrap();
    let replayed: Vec<(u64, Vec<u8>)> = replayed
        .into_iter()
        .map(|r| (r.first_seq, r.payload))
        .collect();
    assert_eq!(replayed, expected);
}

#[test]
fn concurrent_synced_commits_get_contiguous_seqs_apply_in_order_and_replay() {
    check_run(small_options());
}

#[test]
fn concurrent_unsynced_commits_behave_the_same() {
    check_run(WalOptions {
        durability: Durability::None,
        ..small_options()
    });
}

#[test]
fn concurrent_commits_with_tiny_groups_behave_the_same() {
    check_run(WalOptions {
        group_bytes_max: 1,
        ..small_options()
    });
}

#[test]
fn group_commit_issues_fewer_syncs_than_commits() {
    let sim = SimFs::new();
    let options = WalOptions {
        segment_size_bytes: 1 << 20,
        ..small_options()
    };
    let (wal, _) = open(sim.fs(), &wal_dir(), options).unwrap();
    let wal = Arc::new(wal);
    // A disk flush takes time; writers arriving meanwhile must share the next one.
    sim.set_sync_latency(std::time::Duration::from_micros(500));
    let syncs_before = sim.counters().data_syncs;
    commit_concurrently(&wal);
    let syncs = sim.counters().data_syncs - syncs_before;
    let commits = THREADS * COMMITS_PER_THREAD;
    let stats = wal.stats();
    assert_eq!(stats.syncs, syncs, "the WAL's count matches the disk's");
    assert!(
        syncs * 2 <= commits,
        "{syncs} syncs for {commits} commits: too little grouping"
    );
    assert!(stats.groups < commits);
}

#[test]
fn the_wal_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TestWal>();
}

/// A WAL with durability `none` and 1 MiB segments on `sim`.
fn open_unsynced(sim: &SimFs) -> Arc<TestWal> {
    let options = WalOptions {
        durability: Durability::None,
        segment_size_bytes: 1 << 20,
        ..small_options()
    };
    let (wal, _) = open(sim.fs(), &wal_dir(), options).unwrap();
    Arc::new(wal)
}

/// An explicit sync (a flush's, the interval thread's) fdatasyncs without the writer lock:
/// with durability `none` a segment can hold tens of MiB to write out, and writers must not
/// wait for that.
#[test]
fn commits_go_on_while_an_explicit_sync_runs() {
    let sim = SimFs::new();
    let wal = open_unsynced(&sim);
    wal.commit(TestBatch::new(payload(0), 1)).unwrap();
    sim.set_sync_latency(std::time::Duration::from_secs(3));
    let syncing = {
        let wal = Arc::clone(&wal);
        std::thread::spawn(move || wal.sync())
    };
    // Let the sync reach its fdatasync. (Should it not within this time, the commits below
    // run first and the test cannot tell; it never fails wrongly.)
    std::thread::sleep(std::time::Duration::from_millis(300));
    for i in 1..=10 {
        wal.commit(TestBatch::new(payload(i), 1)).unwrap();
    }
    assert!(
        !syncing.is_finished(),
        "the commits waited for the explicit sync to finish"
    );
    syncing.join().unwrap().unwrap();
    assert_eq!(wal.last_seq(), 11);
}

/// Without per-commit syncs, a group's members learn their outcome from each other (each
/// woken member wakes the next: `Wal::lead`). When a write fails mid-run, every committer
/// must still return — Ok for a batch that was written and applied, an error for one that
/// was not — and none may be left asleep.
#[test]
fn a_failed_unsynced_write_answers_every_committer() {
    const FAIL_AFTER_COMMITS: u64 = 300;
    let sim = SimFs::new();
    let wal = open_unsynced(&sim);
    let barrier = Arc::new(Barrier::new(THREADS as usize));
    let (done, finished) = std::sync::mpsc::channel();
    for thread in 0..THREADS {
        let wal = Arc::clone(&wal);
        let barrier = Arc::clone(&barrier);
        let sim = sim.clone();
        let done = done.clone();
        std::thread::spawn(move || {
            barrier.wait();
            let outcomes: Vec<(Vec<u8>, bool)> = (0..COMMITS_PER_THREAD)
                .map(|index| {
                    if thread == 0 && index == FAIL_AFTER_COMMITS / THREADS {
                        sim.fail_writes(true);
                    }
                    let payload = format!("t{thread}-i{index}").into_bytes();
                    let ok = wal.commit(TestBatch::new(payload.clone(), 1)).is_ok();
                    (payload, ok)
                })
                .collect();
            let _ = done.send(outcomes);
        });
    }
    drop(done);
    let mut outcomes = Vec::new();
    for _ in 0..THREADS {
        // A committer left asleep would never report: fail instead of hanging.
        let thread_outcomes = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a committing thread never returned");
        outcomes.extend(thread_outcomes);
    }
    assert!(wal.poisoned().is_some());
    let applied: std::collections::HashSet<Vec<u8>> = wal
        .applier()
        .applied
        .lock()
        .iter()
        .map(|(_, payload)| payload.clone())
        .collect();
    let acknowledged = outcomes.iter().filter(|(_, ok)| *ok).count();
    assert!(acknowledged > 0 && acknowledged < outcomes.len());
    for (payload, ok) in &outcomes {
        assert_eq!(
            applied.contains(payload),
            *ok,
            "{}: acknowledged {ok}",
            String::from_utf8_lossy(payload)
        );
    }
    assert_eq!(applied.len(), acknowledged);
}
