//! The bound on mapped SSTable pages that reads leave resident
//! (`DbOptions::mapped_read_bytes_max`), on real files: the tables' resident pages, read
//! from `/proc/self/smaps` for this test's directory only, stay near the budget however many
//! blocks point reads touch, every value reads back unchanged after the releases and after a
//! reopen, and without a bound every page read stays resident. Point reads that copy their
//! blocks (`DbOptions::point_reads`) leave no data pages resident at all: all of them, or,
//! by default, a write's reads of the values it replaces.

use std::collections::BTreeMap;
use std::path::Path;

use shoal_engine::Durability;
use shoal_engine::{Db, DbOptions, PointReads, TreeId, WriteBatch};

/// Keys and value sizes that make about 6 MiB of tables: many 64 KiB windows.
const KEYS: u32 = 12_000;

/// Point reads through the mapping, whose pages the bound is about.
fn options(mapped_read_bytes_max: usize) -> DbOptions {
    DbOptions {
        durability: Durability::None,
        memtable_size_bytes: 1 << 20,
        background_flush: false,
        compaction_threads: 0,
        mapped_read_bytes_max,
        point_reads: PointReads::Mapped,
        ..DbOptions::default()
    }
}

fn value(key: u32) -> Vec<u8> {
    let len = 300 + (key % 400) as usize;
    (0..len).map(|i| (key as usize * 7 + i) as u8).collect()
}

/// Kibibytes of `dir`'s files mapped and resident in this process now.
fn resident_table_kib(dir: &Path) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let prefix = dir.to_str().unwrap();
    let mut in_dir = false;
    let mut total = 0;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            // A mapping's header: address range, permissions, offset, device, inode, path.
            in_dir = fields.nth(4).is_some_and(|path| path.starts_with(prefix));
        } else if in_dir && first == "Rss:" {
            total += fields.next().unwrap().parse::<u64>().unwrap();
        }
    }
    total
}

/// Writes every key and flushes it into tables.
fn write(db: &Db) -> (TreeId, BTreeMap<u32, Vec<u8>>) {
    let tree = db.create_tree("items").unwrap();
    let mut model = BTreeMap::new();
    for key in 0..KEYS {
        let mut batch = WriteBatch::new();
        batch.put(tree, &key.to_be_bytes(), &value(key)).unwrap();
        db.write(batch).unwrap();
        model.insert(key, value(key));
    }
    db.flush_all().unwrap();
    (tree, model)
}

/// Writes every key, flushes it into tables, and reads every key back.
fn write_and_read(db: &Db) -> (TreeId, BTreeMap<u32, Vec<u8>>) {
    let (tree, model) = write(db);
    check(db, tree, &model);
    (tree, model)
}

fn check(db: &Db, tree: TreeId, model: &BTreeMap<u32, Vec<u8>>) {
    // Strided, so consecutive reads land in different windows, as random keys do.
    for step in 0..7 {
        for (key, expected) in model.iter().skip(step).step_by(7) {
            let found = db.get(tree, &key.to_be_bytes(), None).unwrap();
            assert_eq!(found.as_ref(), Some(expected), "key {key}");
        }
    }
}

#[test]
fn point_reads_leave_about_the_budget_of_table_pages_resident_and_read_back_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let budget_bytes = 1 << 20;
    let (tree, model) = {
        let db = Db::open(dir.path(), options(budget_bytes)).unwrap();
        let (tree, model) = write_and_read(&db);
        let table_bytes: u64 = db.stats().level_bytes.iter().sum();
        assert!(table_bytes > 4 * budget_bytes as u64, "{table_bytes}");
        let stats = db.stats();
        assert!(stats.mapped_read_releases > 0, "{stats:?}");
        // The budget, plus what the reads since the last release mapped beyond their
        // windows' count (a window's neighbour pages, the filters): well under the tables.
        let resident_kib = resident_table_kib(dir.path());
        assert!(
            resident_kib * 1024 <= 2 * budget_bytes as u64,
            "{resident_kib} KiB resident of {table_bytes} bytes of tables"
        );
        // Released pages read back the same bytes, again and again.
        check(&db, tree, &model);
        (tree, model)
    };
    let db = Db::open(dir.path(), options(budget_bytes)).unwrap();
    check(&db, tree, &model);
}

#[test]
fn compaction_which_releases_what_it_reads_charges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A budget of one window: any block charged past the first releases every table.
    let db = Db::open(dir.path(), options(64 << 10)).unwrap();
    let tree = db.create_tree("items").unwrap();
    for key in 0..KEYS {
        let mut batch = WriteBatch::new();
        batch.put(tree, &key.to_be_bytes(), &value(key)).unwrap();
        db.write(batch).unwrap();
    }
    db.flush_all().unwrap();
    db.compact_tree(tree).unwrap();
    assert!(
        db.stats().compaction_bytes_read > 1 << 20,
        "{:?}",
        db.stats()
    );
    assert_eq!(db.stats().mapped_read_releases, 0);
    // Point reads of the same tables are charged as before.
    let found = db.get(tree, &0u32.to_be_bytes(), None).unwrap();
    assert_eq!(found, Some(value(0)));
    for key in 1..KEYS {
        db.get(tree, &key.to_be_bytes(), None).unwrap();
    }
    assert!(db.stats().mapped_read_releases > 0);
}

#[test]
fn without_a_bound_every_table_page_read_stays_resident() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(usize::MAX)).unwrap();
    write_and_read(&db);
    let table_bytes: u64 = db.stats().level_bytes.iter().sum();
    assert_eq!(db.stats().mapped_read_releases, 0);
    let resident_kib = resident_table_kib(dir.path());
    // Every data block was read: all of them are still mapped (the index pages were
    // released at open).
    assert!(
        resident_kib * 1024 >= table_bytes * 9 / 10,
        "{resident_kib} KiB resident of {table_bytes} bytes of tables"
    );
}

/// Reads every key of `model` as a write reads the value it replaces
/// (`Db::get_replaced_with`), strided as `check` reads them.
fn check_replaced(db: &Db, tree: TreeId, model: &BTreeMap<u32, Vec<u8>>) {
    for step in 0..7 {
        for (key, expected) in model.iter().skip(step).step_by(7) {
            let found = db.get_replaced_with(tree, &key.to_be_bytes(), <[u8]>::to_vec);
            assert_eq!(found.unwrap().as_ref(), Some(expected), "key {key}");
        }
    }
}

#[test]
fn copied_point_reads_leave_no_data_pages_resident_and_read_back_unchanged() {
    // Every point read copied; under the default, the reads of values writes replace, and
    // other point reads stay mapped.
    for (point_reads, replaced, copied) in [
        (PointReads::Copied, false, true),
        (PointReads::CopiedForWrites, true, true),
        (PointReads::CopiedForWrites, false, false),
    ] {
        let case = format!("{point_reads:?}, replaced reads {replaced}");
        let dir = tempfile::tempdir().unwrap();
        let options = DbOptions {
            point_reads,
            ..options(usize::MAX)
        };
        let read = |db: &Db, tree, model: &BTreeMap<u32, Vec<u8>>| {
            if replaced {
                check_replaced(db, tree, model);
            } else {
                check(db, tree, model);
            }
        };
        let (tree, model) = {
            let db = Db::open(dir.path(), options.clone()).unwrap();
            let (tree, model) = write(&db);
            read(&db, tree, &model);
            let table_bytes: u64 = db.stats().level_bytes.iter().sum();
            assert!(table_bytes > 4 << 20, "{table_bytes}");
            let resident_kib = resident_table_kib(dir.path());
            if copied {
                // Only what open checks and every read probes is mapped (each table's
                // filter, properties and footer, with the 64 KiB windows the kernel maps
                // around them: about 100 KiB a table here), not the data blocks, though
                // every one was read.
                assert!(
                    resident_kib * 1024 <= table_bytes / 5,
                    "{case}: {resident_kib} KiB resident of {table_bytes} bytes of tables"
                );
            } else {
                assert!(
                    resident_kib * 1024 >= table_bytes * 9 / 10,
                    "{case}: {resident_kib} KiB resident of {table_bytes} bytes of tables"
                );
            }
            // No bound: nothing was charged or released.
            assert_eq!(db.stats().mapped_read_releases, 0, "{case}");
            (tree, model)
        };
        let db = Db::open(dir.path(), options).unwrap();
        read(&db, tree, &model);
    }
}
