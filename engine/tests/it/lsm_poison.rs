//! An fsync or write error poisons the database (docs/DESIGN.md §5): the failed write is not
//! acknowledged, every later write is refused with the reason, and reads go on.

use std::path::Path;

use shoal_engine::Durability;
use shoal_engine::{Db, DbError, DbOptions, WriteBatch};
use shoal_vfs::sim::SimFs;

fn put(db: &Db, tree: u32, key: &[u8]) -> Result<u64, DbError> {
    let mut batch = WriteBatch::new();
    batch.put(tree, key, b"v").unwrap();
    db.write(batch)
}

#[test]
fn a_failed_fsync_refuses_every_later_write_and_reads_continue() {
    let sim = SimFs::new();
    let options = DbOptions {
        durability: Durability::Sync,
        wal_segment_size_bytes: 64 << 10,
        ..DbOptions::default()
    };
    let db = Db::open_with_fs(sim.fs(), Path::new("/db"), options.clone()).unwrap();
    let tree = db.create_tree("t").unwrap();
    put(&db, tree, b"before").unwrap();

    sim.fail_syncs(true);
    let failed = put(&db, tree, b"during").unwrap_err();
    sim.fail_syncs(false);
    // The disk works again, but an fsync error is never retried: the state of the failed
    // write is unknown, so the database keeps refusing writes and says why.
    for _ in 0..3 {
        let refused = put(&db, tree, b"after").unwrap_err();
        let reason = refused.to_string();
        assert!(
            reason.contains("fdatasync") || reason.contains("poison"),
            "{reason}"
        );
    }
    assert!(db.poisoned().is_some(), "poisoned() must say why: {failed}");
    assert_eq!(db.get(tree, b"before", None).unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get(tree, b"after", None).unwrap(), None);

    // A restart is the way out; acknowledged data is intact.
    drop(db);
    let db = Db::open_with_fs(sim.fs(), Path::new("/db"), options).unwrap();
    assert_eq!(db.get(tree, b"before", None).unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get(tree, b"after", None).unwrap(), None);
    put(&db, tree, b"after restart").unwrap();
}
