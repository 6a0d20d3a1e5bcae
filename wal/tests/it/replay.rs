//! Replay round trips, rotation, recycling, release and reopening.

use crate::common;
use common::*;
use shoal_vfs::sim::SimFs;
use shoal_wal::{Durability, WalError, WalOptions};

#[test]
fn many_records_round_trip_across_rotations_and_reopens() {
    let sim = SimFs::new();
    let dir = wal_dir();
    let mut expected = Vec::new();
    let mut next_seq = 1;
    for life in 0..3u64 {
        let (wal, replayed) = open(sim.fs(), &dir, small_options()).unwrap();
        let got: Vec<(u64, u64, Vec<u8>)> = replayed
            .iter()
            .map(|r| (r.first_seq, r.seq_count, r.payload.clone()))
            .collect();
        assert_eq!(got, expected, "life {life}");
        assert_eq!(wal.last_seq(), next_seq - 1);
        for i in 0..100 {
            let seq_count = 1 + (i % 3);
            let payload = payload(life * 1000 + i);
            let first_seq = wal
                .commit(TestBatch::new(payload.clone(), seq_count))
                .unwrap();
            assert_eq!(first_seq, next_seq);
            expected.push((first_seq, seq_count, payload));
            next_seq += seq_count;
        }
        assert_eq!(wal.last_seq(), next_seq - 1);
    }
    let (_wal, replayed) = open(sim.fs(), &dir, small_options()).unwrap();
    assert_eq!(replayed.len(), 300);
    assert!(
        segment_numbers(&sim.fs(), &dir).len() > 10,
        "small segments must rotate"
    );
    // Replay hands segments over in order.
    assert!(replayed.windows(2).all(|w| w[0].segment <= w[1].segment));
}

#[test]
fn round_trip_on_real_files_with_preallocation() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("wal");
    let options = || WalOptions {
        segment_size_bytes: 8192,
        ..WalOptions::default()
    };
    let fs = shoal_vfs::RealFs::shared();
    let (wal, replayed) = open(fs.clone(), &dir, options()).unwrap();
    assert!(replayed.is_empty());
    for i in 0..200 {
        wal.commit(TestBatch::new(payload(i), 1)).unwrap();
    }
    drop(wal);
    let numbers = segment_numbers(&fs, &dir);
    assert!(numbers.len() > 2);
    // Preallocated: every full segment file is at least the segment size.
    let first = dir.join(format!("{:020}.log", numbers[0]));
    assert!(fs.file_size(&first).unwrap() >= 8192);
    let (_wal, replayed) = open(fs, &dir, options()).unwrap();
    let payloads: Vec<Vec<u8>> = replayed.into_iter().map(|r| r.payload).collect();
    assert_eq!(payloads, (0..200).map(payload).collect::<Vec<_>>());
}

#[test]
fn durability_none_never_preallocates() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("wal");
    let options = |durability| WalOptions {
        segment_size_bytes: 1 << 20,
        preallocate_segments: true,
        // Plain writes: a mapped segment is allocated whole (see the next test).
        map_segments: false,
        durability,
        ..WalOptions::default()
    };
    let fs = shoal_vfs::RealFs::shared();
    let (wal, _) = open(fs.clone(), &dir, options(Durability::None)).unwrap();
    for i in 0..10 {
        wal.commit(TestBatch::new(payload(i), 1)).unwrap();
    }
    drop(wal);
    let numbers = segment_numbers(&fs, &dir);
    let only = dir.join(format!("{:020}.log", numbers[0]));
    assert!(
        fs.file_size(&only).unwrap() < 64 << 10,
        "a None-mode segment holds only what was written"
    );
    // The same options with fdatasynced commits do preallocate the next fresh segment.
    let (wal, replayed) = open(fs.clone(), &dir, options(Durability::Sync)).unwrap();
    assert_eq!(replayed.len(), 10);
    drop(wal);
    let newest = *segment_numbers(&fs, &dir).last().unwrap();
    let newest = dir.join(format!("{newest:020}.log"));
    assert!(fs.file_size(&newest).unwrap() >= 1 << 20);
}

/// Without per-commit syncs, segments are written through a mapping of an allocated file
/// (`vfs` `open_mapped`): fresh ones read as zeros past their records, recycled ones as
/// their last life's records. Replay must stop at both, in every mode that reads them back,
/// including segments recycled from one mode into another.
#[test]
fn mapped_segments_round_trip_across_modes_and_recycling() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("wal");
    let segment_size_bytes = 16 << 10;
    let options = |durability| WalOptions {
        segment_size_bytes,
        recycled_segments_max: 4,
        durability,
        ..WalOptions::default()
    };
    let fs = shoal_vfs::RealFs::shared();
    let modes = [
        Durability::None,
        Durability::Sync,
        Durability::Interval(std::time::Duration::from_millis(5)),
        Durability::None,
    ];
    let mut expected: Vec<Vec<u8>> = Vec::new();
    for (life, durability) in modes.into_iter().enumerate() {
        let (wal, replayed) = open(fs.clone(), &dir, options(durability)).unwrap();
        let got: Vec<Vec<u8>> = replayed.into_iter().map(|r| r.payload).collect();
        assert_eq!(got, expected, "life {life} ({durability:?})");
        // Release all but the last life's records, so their segments are recycled.
        wal.release_through(wal.last_seq()).unwrap();
        if life > 0 {
            // This life's first segments will be these.
            assert!(
                !recycled_numbers(&fs, &dir).is_empty(),
                "released segments must be recycled"
            );
        }
        expected.clear();
        for i in 0..1000 {
            let payload = payload(life as u64 * 1000 + i);
            wal.commit(TestBatch::new(payload.clone(), 1)).unwrap();
            expected.push(payload);
        }
        if durability != Durability::Sync {
            let newest = *segment_numbers(&fs, &dir).last().unwrap();
            let newest = dir.join(format!("{newest:020}.log"));
            assert!(
                fs.file_size(&newest).unwrap() >= segment_size_bytes,
                "a mapped segment is allocated whole"
            );
        }
        drop(wal);
    }
    assert!(segment_numbers(&fs, &dir).len() > 2, "segments must rotate");
    let (_wal, replayed) = open(fs, &dir, options(Durability::Sync)).unwrap();
    let got: Vec<Vec<u8>> = replayed.into_iter().map(|r| r.payload).collect();
    assert_eq!(got, expected);
}

#[test]
fn applier_calls_carry_first_seqs_and_publish_the_last_seq() {
    let sim = SimFs::new();
    let (wal, _) = open(sim.fs(), &wal_dir(), small_options()).unwrap();
    assert_eq!(wal.commit(TestBatch::new("a", 2)).unwrap(), 1);
    assert_eq!(wal.commit(TestBatch::new("b", 3)).unwrap(), 3);
    drop(wal);
    // Reopen, then look at the applier of the new instance.
    let (wal, replayed) = open(sim.fs(), &wal_dir(), small_options()).unwrap();
    assert_eq!(replayed.len(), 2);
    assert_eq!(wal.commit(TestBatch::new("c", 1)).unwrap(), 6);
    let applier = applier_of(&wal);
    assert_eq!(*applier.applied.lock(), vec![(6, b"c".to_vec())]);
    assert_eq!(*applier.published.lock(), vec![6]);
    let stats = wal.stats();
    assert_eq!((stats.commits, stats.groups, stats.syncs), (1, 1, 1));
    assert!(stats.bytes_written > 1);
}

fn applier_of(wal: &TestWal) -> &RecordingApplier {
    wal.applier()
}

#[test]
fn seq_floor_raises_the_next_sequence_number() {
    let sim = SimFs::new();
    let dir = wal_dir();
    let (wal, _) = open(sim.fs(), &dir, small_options()).unwrap();
    wal.commit(TestBatch::new("a", 1)).unwrap();
    drop(wal);
    let wal: TestWal = shoal_wal::Wal::open(
        sim.fs(),
        &dir,
        small_options(),
        RecordingApplier::default(),
        100,
        |_record| -> Result<(), WalError> { Ok(()) },
    )
    .unwrap();
    assert_eq!(wal.last_seq(), 99);
    assert_eq!(wal.commit(TestBatch::new("b", 1)).unwrap(), 100);
    drop(wal);
    // The gap left by the floor is not mistaken for corruption.
    let (_wal, replayed) = open(sim.fs(), &dir, small_options()).unwrap();
    let seqs: Vec<u64> = replayed.iter().map(|r| r.first_seq).collect();
    assert_eq!(seqs, vec![1, 100]);
}

#[test]
fn a_visit_error_aborts_the_open() {
    #[derive(Debug)]
    enum EngineError {
        Wal(#[allow(dead_code)] WalError),
        Rejected(u64),
    }
    impl From<WalError> for EngineError {
        fn from(error: WalError) -> Self {
            EngineError::Wal(error)
        }
    }
    let sim = SimFs::new();
    let (wal, _) = open(sim.fs(), &wal_dir(), small_options()).unwrap();
    wal.commit(TestBatch::new("a", 1)).unwrap();
    wal.commit(TestBatch::new("b", 1)).unwrap();
    drop(wal);
    let result: Result<TestWal, EngineError> = shoal_wal::Wal::open(
        sim.fs(),
        &wal_dir(),
        small_options(),
        RecordingApplier::default(),
        0,
        |record| {
            if record.first_seq == 2 {
                Err(EngineError::Rejected(2))
            } else {
                Ok(())
            }
        },
    );
    assert!(matches!(result, Err(EngineError::Rejected(2))));
}

#[test]
fn oversized_records_are_rejected_and_change_nothing() {
    let sim = SimFs::new();
    let options = WalOptions {
        record_bytes_max: 10,
        ..small_options()
    };
    let (wal, _) = open(sim.fs(), &wal_dir(), options.clone()).unwrap();
    let error = wal.commit(TestBatch::new(vec![0u8; 11], 1)).unwrap_err();
    assert!(matches!(
        error,
        WalError::RecordTooLarge {
            size_bytes: 11,
            size_bytes_max: 10
        }
    ));
    assert_eq!(wal.commit(TestBatch::new(vec![0u8; 10], 1)).unwrap(), 1);
    assert!(wal.poisoned().is_none());
}

#[test]
fn a_group_larger_than_a_segment_still_fits_in_its_own_segment() {
    let sim = SimFs::new();
    let (wal, _) = open(sim.fs(), &wal_dir(), small_options()).unwrap();
    wal.commit(TestBatch::new(vec![1u8; 100], 1)).unwrap();
    wal.commit(TestBatch::new(vec![2u8; 5000], 1)).unwrap();
    wal.commit(TestBatch::new(vec![3u8; 100], 1)).unwrap();
    drop(wal);
    let (_wal, replayed) = open(sim.fs(), &wal_dir(), small_options()).unwrap();
    let sizes: Vec<usize> = replayed.iter().map(|r| r.payload.len()).collect();
    assert_eq!(sizes, vec![100, 5000, 100]);
}

#[test]
fn invalid_options_are_refused() {
    let sim = SimFs::new();
    let tiny_segments = WalOptions {
        segment_size_bytes: 10,
        ..WalOptions::default()
    };
    assert!(matches!(
        open(sim.fs(), &wal_dir(), tiny_segments),
        Err(WalError::InvalidOptions(_))
    ));
    let zero_interval = WalOptions {
        durability: Durability::Interval(std::time::Duration::ZERO),
        ..small_options()
    };
    assert!(matches!(
        open(sim.fs(), &wal_dir(), zero_interval),
        Err(WalError::InvalidOptions(_))
    ));
}

#[test]
fn release_through_retires_only_fully_released_segments() {
    let sim = SimFs::new();
    let dir = wal_dir();
    let options = WalOptions {
        recycled_segments_max: 1,
        ..small_options()
    };
    let (wal, _) = open(sim.fs(), &dir, options.clone()).unwrap();
    let mut seq_by_index = Vec::new();
    for i in 0..60 {
        seq_by_index.push(wal.commit(TestBatch::new(payload(i), 1)).unwrap());
    }
    let before = segment_numbers(&sim.fs(), &dir);
    assert!(before.len() >= 4, "{before:?}");
    let live_before = wal.live_bytes();
    assert_eq!(wal.oldest_live_first_seq(), Some(1));

    // Releasing through seq 1 frees nothing: the first segment holds more than seq 1.
    wal.release_through(1).unwrap();
    assert_eq!(segment_numbers(&sim.fs(), &dir), before);

    // Release everything up to the 30th record.
    wal.release_through(30).unwrap();
    let after = segment_numbers(&sim.fs(), &dir);
    assert!(after.len() < before.len());
    assert!(wal.live_bytes() < live_before);
    let oldest = wal.oldest_live_first_seq().unwrap();
    assert!(
        oldest <= 31,
        "record 31 must still be live, oldest is {oldest}"
    );
    // One retired segment was kept for reuse, the others deleted.
    assert_eq!(recycled_numbers(&sim.fs(), &dir).len(), 1);
    drop(wal);

    // Every record > 30 is still replayed; released ones may only be whole segments.
    let (wal, replayed) = open(sim.fs(), &dir, options.clone()).unwrap();
    let seqs: Vec<u64> = replayed.iter().map(|r| r.first_seq).collect();
    assert_eq!(*seqs.last().unwrap(), 60);
    assert!(seqs[0] <= 31);
    assert_eq!(seqs, (seqs[0]..=60).collect::<Vec<_>>());

    // Releasing everything keeps the segment being written.
    wal.release_through(u64::MAX).unwrap();
    assert_eq!(segment_numbers(&sim.fs(), &dir).len(), 1);
    assert_eq!(wal.oldest_live_first_seq(), None);
    wal.commit(TestBatch::new("after", 1)).unwrap();
    drop(wal);
    let (_wal, replayed) = open(sim.fs(), &dir, options).unwrap();
    assert_eq!(replayed.len(), 1);
    assert_eq!(replayed[0].payload, b"after");
    assert_eq!(replayed[0].first_seq, 61);
}

#[test]
fn recycled_segments_are_reused_and_their_old_records_never_replayed() {
    let sim = SimFs::new();
    let dir = wal_dir();
    let options = WalOptions {
        recycled_segments_max: 4,
        ..small_options()
    };
    let (wal, _) = open(sim.fs(), &dir, options.clone()).unwrap();
    for i in 0..40 {
        wal.commit(TestBatch::new(payload(i), 1)).unwrap();
    }
    wal.release_through(wal.last_seq()).unwrap();
    let recycled_before = recycled_numbers(&sim.fs(), &dir);
    assert!(!recycled_before.is_empty());
    // New writes, short ones, reuse the recycled files (overwritten in place: their old
    // longer records stay behind the new ones).
    for i in 0..8 {
        wal.commit(TestBatch::new(vec![i as u8; 300], 1)).unwrap();
    }
    let recycled_after = recycled_numbers(&sim.fs(), &dir);
    assert!(
        recycled_after.len() < recycled_before.len(),
        "no recycled file was reused"
    );
    drop(wal);
    let (_wal, replayed) = open(sim.fs(), &dir, options).unwrap();
    let payloads: Vec<Vec<u8>> = replayed.into_iter().map(|r| r.payload).collect();
    // The segment that was being written at release time is still live (its old records
    // come first); everything else is the new records, and nothing of the recycled files'
    // earlier lives.
    let (old, new) = payloads.split_at(payloads.len() - 8);
    assert!(new
        .iter()
        .enumerate()
        .all(|(i, p)| *p == vec![i as u8; 300]));
    assert!(old.len() < 20, "{} old records replayed", old.len());
    let first_old = 40 - old.len() as u64;
    assert!(old.iter().zip(first_old..).all(|(p, i)| *p == payload(i)));
}

#[test]
fn torn_tail_is_the_end_of_the_log_and_stays_repaired() {
    let sim = SimFs::new();
    let dir = wal_dir();
    let (wal, _) = open(sim.fs(), &dir, small_options()).unwrap();
    for i in 0..3 {
        wal.commit(TestBatch::new(payload(i), 1)).unwrap();
    }
    drop(wal);
    // Cut the last record in half, as a crash mid-append would.
    let last = *segment_numbers(&sim.fs(), &dir).last().unwrap();
    let path = dir.join(format!("{last:020}.log"));
    let bytes = sim.durable_bytes(&path).unwrap();
    let file = shoal_vfs::FileSystem::create(&sim, &path).unwrap();
    file.write_all(&bytes[..bytes.len() - 10]).unwrap();
    file.sync_data().unwrap();
    drop(file);

    let (wal, replayed) = open(sim.fs(), &dir, small_options()).unwrap();
    assert_eq!(replayed.len(), 2);
    assert_eq!(wal.commit(TestBatch::new("next", 1)).unwrap(), 3);
    drop(wal);
    // Garbage appended after the repaired end is never read: the next segment says where
    // the torn one ends.
    let file = shoal_vfs::FileSystem::open_overwrite(&sim, &path).unwrap();
    let mut garbage = bytes[..bytes.len() - 10].to_vec();
    garbage.extend_from_slice(&[0xAB; 64]);
    file.write_all(&garbage).unwrap();
    file.sync_data().unwrap();
    drop(file);
    let (_wal, replayed) = open(sim.fs(), &dir, small_options()).unwrap();
    let payloads: Vec<Vec<u8>> = replayed.into_iter().map(|r| r.payload).collect();
    assert_eq!(payloads, vec![payload(0), payload(1), b"next".to_vec()]);
}
