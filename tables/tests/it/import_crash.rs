//! ImportTable through power cuts on the simulated disk: after every reopen the imported
//! table is either absent or complete, the trees the import staged are gone, the database
//! checks sound, and the import's record says FAILED unless its table was published.
//! Tables that live beside the import (with GSIs, LSIs, a stream and Time to Live) keep
//! every tree and item: dropping the staged trees never drops theirs.
//!
//! `SHOAL_IMPORT_CRASH_ITERATIONS` sets the number of simulated disks (default 40);
//! `SHOAL_IMPORT_CRASH_SEED` replays one.

use crate::crash_support;
use crate::import_support;
use std::collections::BTreeSet;
use std::path::Path;

use import_support::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_tables::api::import::ListImportsInput;
use shoal_tables::Database;
use shoal_vfs::sim::SimFs;

const IMPORTED_ITEMS: u64 = 3000;

/// Every tree the catalog's tables own, plus the statistics tree: what must survive.
fn owned_trees(db: &Database) -> BTreeSet<u32> {
    let mut owned = BTreeSet::new();
    for name in db.table_names() {
        let table = db.table(&name).unwrap();
        owned.insert(table.tree);
        owned.extend(table.global_indexes.iter().map(|gsi| gsi.tree));
        owned.extend(table.streams.iter().map(|stream| stream.tree));
        owned.extend(table.time_to_live.iter().map(|ttl| ttl.tree));
    }
    owned.extend(db.lsm().tree_id("table-stats"));
    owned
}

fn all_trees(db: &Database) -> BTreeSet<u32> {
    db.lsm().version().trees.keys().copied().collect()
}

/// The live table `Crash` (2 LSIs, 2 GSIs) with a stream and Time to Live, and `n` items.
fn create_live_table(db: &Database, n: u32) {
    crash_support::create_indexed_table(db);
    db.execute(
        "UpdateTable",
        json!({"TableName": "Crash", "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_IMAGE"}}),
    )
    .unwrap();
    db.execute(
        "UpdateTimeToLive",
        json!({"TableName": "Crash", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "ttl"}}),
    )
    .unwrap();
    for sk in 0..n {
        db.execute(
            "PutItem",
            json!({"TableName": "Crash", "Item": {"pk": {"S": "p"}, "sk": {"S": format!("s{sk}")},
                   "a": {"S": "x"}, "g": {"S": "y"}, "b": {"N": "1"}, "ttl": {"N": "99999999999"}}}),
        )
        .unwrap();
    }
}

fn count(db: &Database, table: &str) -> u64 {
    let counted = db
        .execute(
            "Scan",
            json!({"TableName": table, "Select": "COUNT", "ConsistentRead": true}),
        )
        .unwrap();
    // Small tables: one page.
    counted["Count"].as_u64().unwrap()
}

fn run_iteration(seed: u64, exports: &Path) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let sim = SimFs::new();
    let dir = Path::new("/shoal");
    let options = {
        let mut options = crash_support::table_options();
        options.transfer.export_dir = Some(exports.to_path_buf());
        options
    };
    {
        let db = Database::open_with_fs(sim.fs(), dir, options.clone())
            .map_err(|e| format!("first open: {e}"))?;
        create_live_table(&db, 20);
        db.lsm().sync_wal().map_err(|e| e.to_string())?;
        sim.freeze_after(Some(rng.random_range(0..600)));
        // The import fails (or never starts) once the disk freezes; what it reports then
        // does not matter, only what the reopened disk holds.
        let _ = db.import_table_and_wait(json_import("Imp", "crash", "", "GZIP"), &mut |_| {});
        sim.power_loss(rng.random());
    }
    let db = Database::open_with_fs(sim.fs(), dir, options).map_err(|e| format!("reopen: {e}"))?;
    let report = db.check().map_err(|e| e.to_string())?;
    if !report.is_sound() {
        return Err(report.problems.join("; "));
    }
    let trees = all_trees(&db);
    let owned = owned_trees(&db);
    if trees != owned {
        return Err(format!("trees {trees:?} but the tables own {owned:?}"));
    }
    if count(&db, "Crash") != 20 {
        return Err("the live table lost items".into());
    }
    let published = db.table("Imp").is_ok();
    if published && count(&db, "Imp") != IMPORTED_ITEMS {
        return Err(format!("a partial table: {} items", count(&db, "Imp")));
    }
    let imports = db
        .list_imports(ListImportsInput::default())
        .map_err(|e| e.to_string())?
        .import_summary_list;
    match imports.as_slice() {
        [] if !published => {}
        [one] => {
            let expected = if published { "COMPLETED" } else { "FAILED" };
            if one.import_status != expected {
                return Err(format!(
                    "import {} with the table published: {published}",
                    one.import_status
                ));
            }
        }
        other => return Err(format!("imports {other:?}, table published: {published}")),
    }
    Ok(())
}

#[test]
fn a_power_cut_during_an_import_leaves_no_partial_table_and_no_staged_trees() {
    let exports = tempfile::tempdir().unwrap();
    let items: Vec<Value> = (0..IMPORTED_ITEMS)
        .map(|n| json!({"pk": {"S": format!("p{}", n % 50)}, "sk": {"N": n.to_string()}, "g": {"S": "g"}}))
        .collect();
    put_object(
        exports.path(),
        "crash",
        "a.gz",
        &gzip(&export_lines(&items[..1500])),
    );
    put_object(
        exports.path(),
        "crash",
        "b.gz",
        &gzip(&export_lines(&items[1500..])),
    );
    let seeds = shoal_vfs::sim::crash_seeds(
        "SHOAL_IMPORT_CRASH_ITERATIONS",
        "SHOAL_IMPORT_CRASH_SEED",
        40,
    );
    for seed in seeds {
        if let Err(message) = run_iteration(seed, exports.path()) {
            panic!("seed {seed}: {message} (replay with SHOAL_IMPORT_CRASH_SEED={seed})");
        }
    }
}

#[test]
fn orphan_trees_are_dropped_at_open_and_live_tables_keep_every_tree() {
    let data = tempfile::tempdir().unwrap();
    let (live_trees, staged_trees) = {
        let db = Database::open(data.path(), crash_support::table_options()).unwrap();
        create_live_table(&db, 10);
        // A second table whose stream was disabled: its old stream's tree is still owned.
        db.execute(
            "CreateTable",
            json!({"TableName": "Streamed",
                   "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                   "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                   "BillingMode": "PAY_PER_REQUEST",
                   "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"}}),
        )
        .unwrap();
        db.execute(
            "UpdateTable",
            json!({"TableName": "Streamed", "StreamSpecification": {"StreamEnabled": false}}),
        )
        .unwrap();
        let live = owned_trees(&db);
        // A table staged and never published nor discarded, as a crash leaves one.
        let request: shoal_tables::api::control::CreateTableRequest =
            serde_json::from_value(table_parameters("Staged")).unwrap();
        let schema = shoal_tables::control::schema::validate_create_table(&request).unwrap();
        let staged = db.stage_table(&schema).unwrap();
        let staged_trees: BTreeSet<u32> = [staged.table().tree]
            .into_iter()
            .chain(staged.table().global_indexes.iter().map(|gsi| gsi.tree))
            .collect();
        assert!(staged_trees.is_subset(&all_trees(&db)));
        assert!(db.table("Staged").is_err(), "a staged table is invisible");
        (live, staged_trees)
    };
    let db = Database::open(data.path(), crash_support::table_options()).unwrap();
    let trees = all_trees(&db);
    assert!(
        live_trees.is_subset(&trees),
        "{live_trees:?} not all in {trees:?}"
    );
    assert!(
        trees.is_disjoint(&staged_trees),
        "{staged_trees:?} still in {trees:?}"
    );
    assert_eq!(trees, owned_trees(&db));
    assert_eq!(count(&db, "Crash"), 10);
    assert_sound(&db);
}
