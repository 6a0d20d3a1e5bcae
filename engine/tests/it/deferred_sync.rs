//! `WriteBatch::defer_sync`: in `Sync` mode a deferred batch is written and visible without
//! its own fdatasync, a later `sync_wal` (or synced batch) makes it durable, and an ordinary
//! batch still syncs.

use shoal_engine::{Db, DbOptions, Durability, TreeId, WriteBatch};
use shoal_vfs::sim::SimFs;

fn batch(tree: TreeId, key: &[u8], deferred: bool) -> WriteBatch {
    let mut batch = WriteBatch::new();
    batch.put(tree, key, b"v").unwrap();
    if deferred {
        batch.defer_sync();
    }
    batch
}

#[test]
fn a_deferred_batch_skips_its_sync_and_the_next_sync_covers_it() {
    let fs = SimFs::new();
    let dir = std::path::Path::new("/db");
    let options = DbOptions {
        durability: Durability::Sync,
        ..DbOptions::default()
    };
    let db = Db::open_with_fs(fs.fs(), dir, options.clone()).unwrap();
    let tree = db.create_tree("t").unwrap();
    let syncs = db.wal_stats().syncs;
    db.write(batch(tree, b"deferred", true)).unwrap();
    assert_eq!(db.wal_stats().syncs, syncs, "a deferred batch was synced");
    assert!(db.get(tree, b"deferred", None).unwrap().is_some());
    db.write(batch(tree, b"ordinary", false)).unwrap();
    assert_eq!(
        db.wal_stats().syncs,
        syncs + 1,
        "an ordinary batch was not synced"
    );

    // A power cut now keeps both: the ordinary batch's sync covered the deferred one's bytes.
    drop(db);
    fs.power_loss(0);
    let db = Db::open_with_fs(fs.fs(), dir, options.clone()).unwrap();
    assert!(db.get(tree, b"deferred", None).unwrap().is_some());
    assert!(db.get(tree, b"ordinary", None).unwrap().is_some());

    // A deferred batch is durable once sync_wal returns.
    db.write(batch(tree, b"kept", true)).unwrap();
    db.sync_wal().unwrap();
    drop(db);
    fs.power_loss(0);
    let db = Db::open_with_fs(fs.fs(), dir, options).unwrap();
    assert!(db.get(tree, b"kept", None).unwrap().is_some());
}
