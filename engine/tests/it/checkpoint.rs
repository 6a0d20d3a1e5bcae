//! Checkpoints: a tree's files linked out at one point, a new tree made from them, and the
//! links kept intact while the source tree is compacted, dropped and the database reopened.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use shoal_compaction::{PolicyKind, PolicyOptions};
use shoal_engine::{Db, DbOptions, Durability, SourceFile, TreeId, WriteBatch};
use shoal_vfs::Fs;

const DIR: &str = "/db";

fn options() -> DbOptions {
    DbOptions {
        durability: Durability::None,
        memtable_size_bytes: 4 << 10,
        background_flush: false,
        compaction_threads: 0,
        compaction: PolicyOptions {
            kind: PolicyKind::Leveled,
            l0_trigger_files: 2,
            base_level_bytes: 16 << 10,
            target_file_bytes: 4 << 10,
            level_ratio: 4,
            ..PolicyOptions::default()
        },
        ..DbOptions::default()
    }
}

fn open(fs: &Fs) -> Db {
    Db::open_with_fs(fs.clone(), Path::new(DIR), options()).unwrap()
}

fn contents(db: &Db, tree: TreeId) -> BTreeMap<Vec<u8>, Vec<u8>> {
    crate::scan_all(db, tree).into_iter().collect()
}

fn write(db: &Db, tree: TreeId, range: std::ops::Range<u32>, tag: &str) {
    for i in range {
        let mut batch = WriteBatch::new();
        let value = format!("{tag}-{i}-{}", "x".repeat(100));
        batch
            .put(tree, format!("k{i:05}").as_bytes(), value.as_bytes())
            .unwrap();
        db.write(batch).unwrap();
    }
}

fn sources(dir: &Path, linked: &[shoal_engine::LinkedFile]) -> Vec<SourceFile> {
    linked
        .iter()
        .map(|file| SourceFile {
            path: dir.join(shoal_engine::manifest::sst_file_name(file.meta.number)),
            level: file.level,
            meta: file.meta.clone(),
        })
        .collect()
}

#[test]
fn a_tree_made_from_linked_files_holds_the_state_at_the_link() {
    let fs: Fs = shoal_vfs::mem::MemFs::new().fs();
    let backup = PathBuf::from("/db/backups/one");
    fs.create_dir_all(&backup).unwrap();
    let db = open(&fs);
    let tree = db.create_tree("source").unwrap();
    write(&db, tree, 0..200, "old");
    db.compact_until_idle().unwrap();
    // Some of the state is only in the memtable: the flush must carry it.
    write(&db, tree, 150..260, "mid");
    let mut batch = WriteBatch::new();
    batch.delete(tree, b"k00003").unwrap();
    db.write(batch).unwrap();
    let expected = contents(&db, tree);

    db.flush_trees(&[tree]).unwrap();
    let linked = db.link_tree_files(&[tree], &backup).unwrap();
    assert!(!linked.is_empty());
    assert!(linked.iter().all(|file| file.tree == tree));

    // Later writes and compactions of the source change neither the links nor the restore
    // (retired files are shared with the links, so they must not be recycled).
    write(&db, tree, 0..300, "new");
    db.compact_until_idle().unwrap();
    db.compact_tree(tree).unwrap();

    let restored = db
        .create_trees_with_files(
            &["restored".to_string()],
            &[sources(&backup, &linked)],
            |_| Vec::new(),
        )
        .unwrap()[0];
    assert_eq!(contents(&db, restored), expected);
    db.drop_tree(tree, Vec::new()).unwrap();
    db.compact_until_idle().unwrap();
    assert_eq!(contents(&db, restored), expected);

    // A second tree from the same links, after a reopen.
    drop(db);
    let db = open(&fs);
    assert_eq!(contents(&db, restored), expected);
    let again = db
        .create_trees_with_files(&["again".to_string()], &[sources(&backup, &linked)], |_| {
            Vec::new()
        })
        .unwrap()[0];
    assert_eq!(contents(&db, again), expected);
    // Writes to the restored tree go on top of the linked files.
    write(&db, restored, 0..10, "after");
    db.compact_tree(restored).unwrap();
    assert_eq!(contents(&db, again), expected);
}

#[test]
fn creating_trees_from_missing_files_fails_and_leaves_no_tree() {
    let fs: Fs = shoal_vfs::mem::MemFs::new().fs();
    let db = open(&fs);
    let meta = {
        let tree = db.create_tree("source").unwrap();
        write(&db, tree, 0..10, "v");
        db.flush_trees(&[tree]).unwrap();
        db.version().trees[&tree]
            .files()
            .next()
            .unwrap()
            .as_ref()
            .clone()
    };
    let missing = SourceFile {
        path: PathBuf::from("/nowhere/1.sst"),
        level: 0,
        meta,
    };
    assert!(db
        .create_trees_with_files(&["t".to_string()], &[vec![missing]], |_| Vec::new())
        .is_err());
    assert!(db.tree_id("t").is_none());
}
