//! A tree that pins old WAL segments is flushed once the live WAL passes its cap (DESIGN.md
//! §5): without that, one rarely written tree would keep every segment alive forever.

use std::path::Path;
use std::time::{Duration, Instant};

use engine::lsm::{Db, DbOptions, WriteBatch};
use engine::Durability;
use vfs::sim::SimFs;

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
