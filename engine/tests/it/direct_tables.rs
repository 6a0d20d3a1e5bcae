//! SSTables written around the page cache (`DbOptions::direct_table_writes`, Linux
//! `O_DIRECT`) on a real file system: every version reads back through flushes, compactions
//! that write over recycled files, and a reopen. The simulated disk of the other engine tests
//! has no direct path, so this one runs on real files.

use std::collections::BTreeMap;

use shoal_compaction::PolicyOptions;
use shoal_engine::Durability;
use shoal_engine::{Db, DbOptions, TreeId, WriteBatch};

/// Small memtables and files, so a few thousand batches flush and compact many times; a
/// flush or compaction runs only when the test asks.
fn options() -> DbOptions {
    DbOptions {
        durability: Durability::None,
        memtable_size_bytes: 64 << 10,
        background_flush: false,
        compaction_threads: 0,
        direct_table_writes: true,
        compaction: PolicyOptions {
            l0_trigger_files: 2,
            base_level_bytes: 256 << 10,
            target_file_bytes: 64 << 10,
            level_ratio: 4,
            ..PolicyOptions::default()
        },
        ..DbOptions::default()
    }
}

/// A value whose length and bytes depend on the key and round, so tables end at every
/// offset within a block and a stale or misplaced version shows.
fn value(key: u32, round: u32) -> Vec<u8> {
    let len = 1 + ((key * 31 + round * 17) % 700) as usize;
    (0..len)
        .map(|i| (key as usize + i + round as usize) as u8)
        .collect()
}

fn check(db: &Db, tree: TreeId, model: &BTreeMap<u32, Vec<u8>>) {
    for (key, expected) in model {
        let found = db.get(tree, &key.to_be_bytes(), None).unwrap();
        assert_eq!(found.as_ref(), Some(expected), "key {key}");
    }
}

#[test]
fn tables_written_around_the_page_cache_read_back_through_compactions_and_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    let tree = {
        let db = Db::open(dir.path(), options()).unwrap();
        let tree = db.create_tree("items").unwrap();
        for round in 0..6u32 {
            for key in 0..1_500u32 {
                // Overwrite a different half each round, so compactions drop old versions.
                if (key + round) % 2 == 0 {
                    let value = value(key, round);
                    let mut batch = WriteBatch::new();
                    batch.put(tree, &key.to_be_bytes(), &value).unwrap();
                    db.write(batch).unwrap();
                    model.insert(key, value);
                }
            }
            db.flush_all().unwrap();
            db.compact_until_idle().unwrap();
            check(&db, tree, &model);
        }
        let stats = db.stats();
        assert!(stats.compactions > 0, "{stats:?}");
        // Later outputs were written over recycled files, through the direct overwrite.
        assert!(stats.table_files_reused > 0, "{stats:?}");
        tree
    };
    let db = Db::open(dir.path(), options()).unwrap();
    check(&db, tree, &model);
}
