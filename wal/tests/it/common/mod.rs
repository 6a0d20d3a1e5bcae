//! Helpers shared by the WAL integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use shoal_wal::{Applier, ReplayRecord, Wal, WalBatch, WalError, WalOptions};

/// A batch holding its payload bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestBatch {
    pub payload: Vec<u8>,
    pub seq_count: u64,
}

impl TestBatch {
    pub fn new(payload: impl Into<Vec<u8>>, seq_count: u64) -> Self {
        TestBatch {
            payload: payload.into(),
            seq_count,
        }
    }
}

impl WalBatch for TestBatch {
    fn seq_count(&self) -> u64 {
        self.seq_count
    }
    fn payload(&self) -> &[u8] {
        &self.payload
    }
}

/// Records every apply and publish call, in call order.
#[derive(Default)]
pub struct RecordingApplier {
    pub applied: Mutex<Vec<(u64, Vec<u8>)>>,
    pub published: Mutex<Vec<u64>>,
}

impl Applier<TestBatch> for RecordingApplier {
    fn apply(&self, group: &[(u64, &TestBatch)]) {
        let mut applied = self.applied.lock();
        for (first_seq, batch) in group {
            applied.push((*first_seq, batch.payload.clone()));
        }
    }
    fn publish(&self, last_seq: u64) {
        self.published.lock().push(last_seq);
    }
}

pub type TestWal = Wal<TestBatch, RecordingApplier>;

/// A replayed record, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replayed {
    pub first_seq: u64,
    pub seq_count: u64,
    pub payload: Vec<u8>,
    pub segment: u64,
    pub offset: u64,
}

pub fn wal_dir() -> PathBuf {
    PathBuf::from("/db/wal")
}

/// Opens the WAL and returns it with everything it replayed.
pub fn open(
    fs: shoal_vfs::Fs,
    dir: &Path,
    options: WalOptions,
) -> Result<(TestWal, Vec<Replayed>), WalError> {
    let mut replayed = Vec::new();
    let wal = Wal::open(
        fs,
        dir,
        options,
        RecordingApplier::default(),
        0,
        |record: ReplayRecord<'_>| -> Result<(), WalError> {
            replayed.push(Replayed {
                first_seq: record.first_seq,
                seq_count: record.seq_count,
                payload: record.payload.to_vec(),
                segment: record.segment,
                offset: record.offset,
            });
            Ok(())
        },
    )?;
    Ok((wal, replayed))
}

/// Small segments so tests rotate often; no preallocation unless a test wants it.
pub fn small_options() -> WalOptions {
    WalOptions {
        segment_size_bytes: 1024,
        preallocate_segments: false,
        ..WalOptions::default()
    }
}

/// Payload of the i-th test record: distinct, and of varying length.
pub fn payload(i: u64) -> Vec<u8> {
    let len = (i * 37 % 90) as usize;
    let mut bytes = format!("record-{i}-").into_bytes();
    bytes.extend((0..len).map(|k| (i as usize + k) as u8));
    bytes
}

/// The segment files (numbers) in the directory.
pub fn segment_numbers(fs: &shoal_vfs::Fs, dir: &Path) -> Vec<u64> {
    let mut numbers: Vec<u64> = fs
        .list(dir)
        .unwrap()
        .iter()
        .filter_map(|name| name.strip_suffix(".log")?.parse().ok())
        .collect();
    numbers.sort_unstable();
    numbers
}

/// The recycled files (old numbers) in the directory.
pub fn recycled_numbers(fs: &shoal_vfs::Fs, dir: &Path) -> Vec<u64> {
    let mut numbers: Vec<u64> = fs
        .list(dir)
        .unwrap()
        .iter()
        .filter_map(|name| name.strip_suffix(".recycle")?.parse().ok())
        .collect();
    numbers.sort_unstable();
    numbers
}
