//! `Wal::lose_unsynced` on real files: what a deliberate power-loss crash keeps.

use crate::common;
use common::*;
use shoal_wal::{Durability, WalOptions};

fn options(durability: Durability, map_segments: bool) -> WalOptions {
    WalOptions {
        durability,
        map_segments,
        ..WalOptions::default()
    }
}

fn payloads(replayed: Vec<Replayed>) -> Vec<Vec<u8>> {
    replayed.into_iter().map(|record| record.payload).collect()
}

#[test]
fn the_unsynced_tail_is_lost_and_the_synced_log_kept() {
    for map_segments in [true, false] {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("wal");
        let fs = shoal_vfs::RealFs::shared();
        let (wal, _) = open(fs.clone(), &dir, options(Durability::None, map_segments)).unwrap();
        for i in 0..10 {
            wal.commit(TestBatch::new(payload(i), 1)).unwrap();
        }
        wal.sync().unwrap();
        for i in 10..15 {
            wal.commit(TestBatch::new(payload(i), 1)).unwrap();
        }
        assert!(wal.lose_unsynced().unwrap() > 0, "mapped: {map_segments}");
        // The process would end here; the log is left as it is.
        std::mem::forget(wal);
        let (_wal, replayed) = open(fs, &dir, options(Durability::None, map_segments)).unwrap();
        let expected: Vec<Vec<u8>> = (0..10).map(payload).collect();
        assert_eq!(payloads(replayed), expected, "mapped: {map_segments}");
    }
}

#[test]
fn sync_mode_loses_nothing_acknowledged() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("wal");
    let fs = shoal_vfs::RealFs::shared();
    let (wal, _) = open(fs.clone(), &dir, options(Durability::Sync, false)).unwrap();
    for i in 0..5 {
        wal.commit(TestBatch::new(payload(i), 1)).unwrap();
    }
    assert_eq!(wal.lose_unsynced().unwrap(), 0);
    std::mem::forget(wal);
    let (_wal, replayed) = open(fs, &dir, options(Durability::Sync, false)).unwrap();
    assert_eq!(payloads(replayed).len(), 5);
}
