//! A tree that pins old WAL segments is flushed once the live WAL passes its cap
//! (docs/DESIGN.md §5): without that, one rarely written tree would keep every segment alive
//! forever.

use std::path::Path;
use std::time::{Duration, Instant};

use shoal_engine::Durability;
use shoal_engine::{Db, DbOptions, WriteBatch};
use shoal_vfs::sim::SimFs;

#[test]
fn a_tree_pinning_old_segments_is_flushed_when_the_wal_passes_its_cap() {
    let sim = SimFs::new();
    let cap_bytes = 64 << 10;
    let options = DbOptions {
        durability: Durability::None,
        memtable_size_bytes: 16 << 10,
        wal_segment_size_bytes: 8 << 10,
        wal_live_bytes_max: cap_bytes,
        ..DbOptions::default()
    };
    let db = Db::open_with_fs(sim.fs(), Path::new("/db"), options.clone()).unwrap();
    let quiet = db.create_tree("quiet").unwrap();
    let busy = db.create_tree("busy").unwrap();

    // One entry in the quiet tree, then a lot of traffic elsewhere: the quiet tree's
    // memtable never fills, so only the WAL cap can get its entry flushed.
    let mut batch = WriteBatch::new();
    batch.put(quiet, b"only", b"entry").unwrap();
    db.write(batch).unwrap();
    let value = vec![0u8; 200];
    for i in 0..5_000u32 {
        let mut batch = WriteBatch::new();
        batch.put(busy, &i.to_be_bytes(), &value).unwrap();
        db.write(batch).unwrap();
    }

    // Flushes run in the background: wait (bounded) for the WAL to shrink.
    let deadline = Instant::now() + Duration::from_secs(20);
    while db.wal_live_bytes() > 2 * cap_bytes && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        db.wal_live_bytes() <= 2 * cap_bytes,
        "the WAL kept {} bytes live with a cap of {cap_bytes}",
        db.wal_live_bytes()
    );
    let version = db.version();
    assert!(
        version.trees[&quiet].files().next().is_some(),
        "the quiet tree pinning the oldest segment was never flushed"
    );
    assert_eq!(
        db.get(quiet, b"only", None).unwrap(),
        Some(b"entry".to_vec())
    );
    drop(db);
    let db = Db::open_with_fs(sim.fs(), Path::new("/db"), options).unwrap();
    assert_eq!(
        db.get(quiet, b"only", None).unwrap(),
        Some(b"entry".to_vec())
    );
    assert_eq!(
        db.get(busy, &4_999u32.to_be_bytes(), None).unwrap(),
        Some(value)
    );
}

/// Obsolete segments are kept for reuse up to what the live WAL holds at its cap, so a WAL
/// that has cycled through its cap writes only into recycled segments (allocated blocks,
/// cached pages) instead of creating and deleting files.
#[test]
fn the_recycled_pool_covers_the_live_wal_cap() {
    let sim = SimFs::new();
    let options = DbOptions {
        durability: Durability::None,
        memtable_size_bytes: 16 << 10,
        wal_segment_size_bytes: 8 << 10,
        wal_live_bytes_max: 48 << 10,
        ..DbOptions::default()
    };
    assert_eq!(shoal_engine::db::wal_recycled_segments_max(&options), 6);
    let db = Db::open_with_fs(sim.fs(), Path::new("/db"), options).unwrap();
    let tree = db.create_tree("busy").unwrap();
    let value = vec![0u8; 200];
    let recycled_files = || {
        sim.fs()
            .list(Path::new("/db/wal"))
            .unwrap()
            .into_iter()
            .filter(|name| name.ends_with(".recycle"))
            .count()
    };
    // Well over the cap, so the pool fills; flushes (and so releases) run in the background.
    for i in 0..5_000u32 {
        let mut batch = WriteBatch::new();
        batch.put(tree, &i.to_be_bytes(), &value).unwrap();
        db.write(batch).unwrap();
    }
    db.flush_all().unwrap();
    assert_eq!(recycled_files(), 6);
    assert_eq!(
        db.get(tree, &4_999u32.to_be_bytes(), None).unwrap(),
        Some(value)
    );
}
