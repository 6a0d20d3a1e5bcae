//! Every single-byte corruption of a small WAL is either reported or, in the last record of
//! the last segment only, read as the end of the log; never returned as data.

use crate::common;
use std::path::PathBuf;

use common::*;
use shoal_vfs::sim::SimFs;
use shoal_vfs::FileSystem;
use shoal_wal::{WalError, WalOptions};

fn options(truncate_at_corruption: bool) -> WalOptions {
    WalOptions {
        segment_size_bytes: 600,
        preallocate_segments: false,
        truncate_at_corruption,
        ..WalOptions::default()
    }
}

/// A WAL of two segments; returns its files (path, bytes) and what it replays.
fn small_wal() -> (Vec<(PathBuf, Vec<u8>)>, Vec<Replayed>) {
    let sim = SimFs::new();
    let dir = wal_dir();
    let (wal, _) = open(sim.fs(), &dir, options(false)).unwrap();
    for i in 0..12 {
        wal.commit(TestBatch::new(format!("payload number {i}"), 1 + i % 2))
            .unwrap();
    }
    drop(wal);
    let numbers = segment_numbers(&sim.fs(), &dir);
    assert_eq!(numbers.len(), 2, "the test wants exactly two segments");
    let files = numbers
        .iter()
        .map(|number| {
            let path = dir.join(format!("{number:020}.log"));
            let bytes = sim.open_read(&path).unwrap().bytes().to_vec();
            (path, bytes)
        })
        .collect();
    let (_wal, replayed) = open(sim.fs(), &dir, options(false)).unwrap();
    assert_eq!(replayed.len(), 12);
    (files, replayed)
}

/// A fresh simulated disk holding `files`, with one byte of file `damaged` changed.
fn disk_with_flip(files: &[(PathBuf, Vec<u8>)], damaged: usize, index: usize, mask: u8) -> SimFs {
    let sim = SimFs::new();
    sim.create_dir_all(&wal_dir()).unwrap();
    for (file_index, (path, bytes)) in files.iter().enumerate() {
        let mut bytes = bytes.clone();
        if file_index == damaged {
            bytes[index] ^= mask;
        }
        let file = sim.create(path).unwrap();
        file.write_all(&bytes).unwrap();
        file.sync_data().unwrap();
    }
    sim.sync_dir(&wal_dir()).unwrap();
    sim
}

fn check_every_flip(truncate_at_corruption: bool) -> (usize, usize, usize) {
    let (files, original) = small_wal();
    let last_segment = original.last().unwrap().segment;
    let last_record_offset = original.last().unwrap().offset as usize;
    let (mut reported, mut tail_dropped, mut truncated) = (0, 0, 0);
    for (damaged, (path, bytes)) in files.iter().enumerate() {
        let number: u64 = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .and_then(|stem| stem.parse().ok())
            .unwrap();
        for index in 0..bytes.len() {
            for mask in [0x01u8, 0x80, 0xFF] {
                let context = format!("flip {mask:#x} at {}:{index}", path.display());
                let sim = disk_with_flip(&files, damaged, index, mask);
                match open(sim.fs(), &wal_dir(), options(truncate_at_corruption)) {
                    Err(WalError::Corruption { file, offset, .. }) => {
                        assert!(
                            !truncate_at_corruption,
                            "{context}: truncation must not fail"
                        );
                        assert_eq!(file, *path, "{context}");
                        assert!(offset as usize <= index, "{context}: reported at {offset}");
                        reported += 1;
                    }
                    Err(other) => panic!("{context}: unexpected error {other}"),
                    Ok((_wal, replayed)) => {
                        // Whatever is returned is exactly what was written, in order.
                        assert!(replayed.len() <= original.len(), "{context}");
                        for (got, want) in replayed.iter().zip(&original) {
                            assert_eq!(got, want, "{context}");
                        }
                        let in_last_record = number == last_segment && index >= last_record_offset;
                        if replayed.len() < original.len() {
                            if in_last_record {
                                tail_dropped += 1;
                            } else {
                                assert!(truncate_at_corruption, "{context}: records dropped");
                                truncated += 1;
                            }
                        } else {
                            panic!("{context}: the flip went unnoticed");
                        }
                    }
                }
            }
        }
    }
    (reported, tail_dropped, truncated)
}

#[test]
fn every_byte_flip_is_corruption_or_a_torn_last_record() {
    let (reported, tail_dropped, truncated) = check_every_flip(false);
    assert!(reported > 0 && tail_dropped > 0);
    assert_eq!(truncated, 0);
}

#[test]
fn with_truncation_every_byte_flip_opens_to_a_correct_prefix() {
    let (reported, tail_dropped, truncated) = check_every_flip(true);
    assert_eq!(reported, 0);
    assert!(tail_dropped > 0 && truncated > 0);
}

#[test]
fn a_missing_middle_segment_is_corruption() {
    let sim = SimFs::new();
    let dir = wal_dir();
    let (wal, _) = open(sim.fs(), &dir, options(false)).unwrap();
    for i in 0..30 {
        wal.commit(TestBatch::new(format!("payload number {i}"), 1))
            .unwrap();
    }
    drop(wal);
    let numbers = segment_numbers(&sim.fs(), &dir);
    assert!(numbers.len() >= 3);
    sim.remove(&dir.join(format!("{:020}.log", numbers[1])))
        .unwrap();
    match open(sim.fs(), &dir, options(false)) {
        Err(WalError::Corruption {
            file,
            offset,
            detail,
        }) => {
            assert_eq!(file, dir.join(format!("{:020}.log", numbers[2])));
            assert_eq!(offset, 0);
            assert!(detail.contains("missing"), "{detail}");
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("a missing segment went unnoticed"),
    }
}

#[test]
fn a_truncated_middle_segment_is_corruption() {
    let sim = SimFs::new();
    let dir = wal_dir();
    let (wal, _) = open(sim.fs(), &dir, options(false)).unwrap();
    for i in 0..30 {
        wal.commit(TestBatch::new(format!("payload number {i}"), 1))
            .unwrap();
    }
    drop(wal);
    let numbers = segment_numbers(&sim.fs(), &dir);
    let path = dir.join(format!("{:020}.log", numbers[0]));
    let bytes = sim.open_read(&path).unwrap().bytes().to_vec();
    let file = sim.create(&path).unwrap();
    file.write_all(&bytes[..bytes.len() - 1]).unwrap();
    drop(file);
    assert!(matches!(
        open(sim.fs(), &dir, options(false)),
        Err(WalError::Corruption { .. })
    ));
}
