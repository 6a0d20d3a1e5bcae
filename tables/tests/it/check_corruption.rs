//! `Database::check` finds damage written straight into the LSM trees, behind the write
//! path's back: a GSI entry changed, missing or extra, the same for LSI entries, and a
//! wrong collection record, each reported by name; and it does not mistake for damage an
//! entry stored differently but equal as DynamoDB compares items (a set in another order).

use std::ops::Bound;

use serde_json::{json, Value};
use shoal_engine::{Direction, WriteBatch};
use shoal_model::{AttributeValue, Item};
use shoal_tables::core::catalog::TableDef;
use shoal_tables::core::collection::CollectionRecord;
use shoal_tables::core::health::Health;
use shoal_tables::core::item_codec::{decode_item, encode_item};
use shoal_tables::core::keys::{self, SECTION_BASE, SECTION_COLLECTION};
use shoal_tables::{Database, Options, StorageOptions};

const TABLE: &str = "Checked";
const PARTITIONS: usize = 6;
const ITEMS_PER_PARTITION: usize = 10;

fn open() -> Database {
    // A small memtable: some of what the check reads comes from SSTables.
    Database::open_in_memory(Options {
        storage: StorageOptions {
            memtable_size_bytes: 64 << 10,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .unwrap()
}

/// Table `Checked`: pk (S) + sk (S); LSI `ByL` on l (INCLUDE x); GSIs `ByG` on g + sk (ALL)
/// and `ByN` on n (KEYS_ONLY, sparse: every third item has n).
fn create(db: &Database) {
    let key = |hash: &str, range: Option<&str>| {
        let mut schema = vec![json!({"AttributeName": hash, "KeyType": "HASH"})];
        if let Some(range) = range {
            schema.push(json!({"AttributeName": range, "KeyType": "RANGE"}));
        }
        Value::Array(schema)
    };
    db.execute(
        "CreateTable",
        json!({
            "TableName": TABLE,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "l", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"},
                {"AttributeName": "n", "AttributeType": "N"}
            ],
            "KeySchema": key("pk", Some("sk")),
            "LocalSecondaryIndexes": [{"IndexName": "ByL", "KeySchema": key("pk", Some("l")),
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["x"]}}],
            "GlobalSecondaryIndexes": [
                {"IndexName": "ByG", "KeySchema": key("g", Some("sk")),
                 "Projection": {"ProjectionType": "ALL"}},
                {"IndexName": "ByN", "KeySchema": key("n", None),
                 "Projection": {"ProjectionType": "KEYS_ONLY"}}
            ],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
}

fn loaded() -> Database {
    let db = open();
    create(&db);
    for p in 0..PARTITIONS {
        for i in 0..ITEMS_PER_PARTITION {
            let mut item = json!({
                "pk": {"S": format!("p{p}")},
                "sk": {"S": format!("s{i:02}")},
                "l": {"S": format!("l{}", (i * 7) % 10)},
                "g": {"S": format!("g{}", i % 3)},
                "x": {"SS": ["one", "two", "three"]},
                "payload": {"S": "v".repeat(20 + i)}
            });
            if i % 3 == 0 {
                item["n"] = json!({"N": (p * 100 + i).to_string()});
            }
            db.execute("PutItem", json!({"TableName": TABLE, "Item": item}))
                .unwrap();
        }
    }
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert_eq!(report.items, (PARTITIONS * ITEMS_PER_PARTITION) as u64);
    db
}

fn table(db: &Database) -> TableDef {
    (*db.table(TABLE).unwrap()).clone()
}

fn tree_of_gsi(db: &Database, name: &str) -> u32 {
    let table = table(db);
    table
        .global_indexes
        .iter()
        .find(|g| g.name == name)
        .unwrap()
        .tree
}

fn entries(db: &Database, tree: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.lsm()
        .scan(
            tree,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
            usize::MAX,
        )
        .unwrap()
}

/// The table tree's keys and values of `section` (an LSI's, or items', or records').
fn table_entries(db: &Database, wanted: impl Fn(u8) -> bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let table = table(db);
    entries(db, table.tree)
        .into_iter()
        .filter(|(key, _)| {
            let (_, section) = keys::split_table_key(key, table.key.hash.scalar_type()).unwrap();
            wanted(section)
        })
        .collect()
}

fn lsi_entries(db: &Database) -> Vec<(Vec<u8>, Vec<u8>)> {
    table_entries(db, |section| {
        section != SECTION_BASE && section != SECTION_COLLECTION
    })
}

fn write(db: &Database, change: impl FnOnce(&mut WriteBatch)) {
    let mut batch = WriteBatch::new();
    change(&mut batch);
    db.lsm().write(batch).unwrap();
}

/// Rewrites the entry under `key` in `tree` after `change`.
fn rewrite(db: &Database, tree: u32, key: &[u8], value: &[u8], change: impl FnOnce(&mut Item)) {
    let mut item = decode_item(value).unwrap();
    change(&mut item);
    write(db, |batch| {
        batch.put(tree, key, &encode_item(&item)).unwrap()
    });
}

/// The problems the check reports, which must include one containing every needle.
fn assert_reported(db: &Database, needles: &[&str]) -> Vec<String> {
    let report = db.check().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| needles.iter().all(|n| p.contains(n))),
        "no problem contains {needles:?}: {:#?}",
        report.problems
    );
    report.problems
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_string())
}

#[test]
fn a_changed_gsi_entry_is_named_with_both_values() {
    let db = loaded();
    let tree = tree_of_gsi(&db, "ByG");
    let (key, value) = entries(&db, tree).swap_remove(5);
    rewrite(&db, tree, &key, &value, |item| {
        // Same size: the statistics still agree, only the entry is wrong.
        item.insert("payload".into(), s(&"w".repeat(item_payload_len(item))));
    });
    let problems = assert_reported(&db, &["global index ByG", "entry holds", "\"www"]);
    assert_eq!(problems.len(), 1, "{problems:#?}");
}

fn item_payload_len(item: &Item) -> usize {
    match item.get("payload") {
        Some(AttributeValue::S(text)) => text.len(),
        other => panic!("payload is {other:?}"),
    }
}

#[test]
fn a_missing_gsi_entry_is_named() {
    let db = loaded();
    let tree = tree_of_gsi(&db, "ByN");
    let (key, value) = entries(&db, tree).swap_remove(1);
    let gone = decode_item(&value).unwrap();
    write(&db, |batch| batch.delete(tree, &key).unwrap());
    let pk = gone["pk"].to_json().to_string();
    let sk = gone["sk"].to_json().to_string();
    assert_reported(&db, &["global index ByN", "entry missing for", &pk, &sk]);
}

#[test]
fn an_extra_gsi_entry_is_named() {
    let db = loaded();
    let table = table(&db);
    let tree = tree_of_gsi(&db, "ByG");
    // An entry for an item that does not exist.
    let ghost: Item = [("pk", s("ghost")), ("sk", s("s00")), ("g", s("g0"))]
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    let key = keys::gsi_key(
        &ghost["g"],
        Some(&ghost["sk"]),
        &ghost["pk"],
        Some(&ghost["sk"]),
    )
    .unwrap();
    write(&db, |batch| {
        batch.put(tree, &key, &encode_item(&ghost)).unwrap()
    });
    assert_reported(
        &db,
        &["global index ByG", "has no base item deriving it", "ghost"],
    );
    // An entry under a key whose item exists but does not derive it (wrong index key).
    let real = decode_item(&entries(&db, table.tree)[0].1).unwrap();
    let key = keys::gsi_key(&s("g9"), Some(&real["sk"]), &real["pk"], Some(&real["sk"])).unwrap();
    write(&db, |batch| {
        batch.put(tree, &key, &encode_item(&real)).unwrap()
    });
    let problems = assert_reported(
        &db,
        &[
            "global index ByG",
            "has no base item deriving it",
            "under another key",
        ],
    );
    assert!(
        !problems.iter().any(|p| p.contains("no differing entry")),
        "{problems:#?}"
    );
}

#[test]
fn changed_missing_and_extra_lsi_entries_are_named() {
    // Changed: the INCLUDEd set loses a member.
    let db = loaded();
    let tree = table(&db).tree;
    let (key, value) = lsi_entries(&db).swap_remove(3);
    rewrite(&db, tree, &key, &value, |item| {
        item.insert("x".into(), AttributeValue::Ss(vec!["one".into()]));
    });
    assert_reported(
        &db,
        &["local index ByL", "entry holds", r#""x":{"SS":["one"]}"#],
    );

    // Missing.
    let db = loaded();
    let tree = table(&db).tree;
    let (key, value) = lsi_entries(&db).swap_remove(17);
    let gone = decode_item(&value).unwrap();
    write(&db, |batch| batch.delete(tree, &key).unwrap());
    let sk = gone["sk"].to_json().to_string();
    assert_reported(&db, &["local index ByL", "entry missing for", &sk]);

    // Extra: under a section no index has, and under ByL for an item that does not exist.
    let db = loaded();
    let tree = table(&db).tree;
    let (key, value) = lsi_entries(&db).swap_remove(0);
    let mut stray = key.clone();
    let table = table(&db);
    let (prefix_len, _) = keys::split_table_key(&key, table.key.hash.scalar_type()).unwrap();
    stray[prefix_len] = 4;
    write(&db, |batch| batch.put(tree, &stray, &value).unwrap());
    assert_reported(
        &db,
        &["section 4, which no local index has", "no base item"],
    );
    let item = decode_item(&value).unwrap();
    let orphan = keys::lsi_key(&item["pk"], 1, &s("l0"), Some(&s("s99"))).unwrap();
    write(&db, |batch| batch.put(tree, &orphan, &value).unwrap());
    assert_reported(&db, &["local index ByL", "has no base item deriving it"]);
}

#[test]
fn a_wrong_or_missing_collection_record_is_named() {
    let db = loaded();
    let tree = table(&db).tree;
    let (key, value) = table_entries(&db, |section| section == SECTION_COLLECTION).swap_remove(2);
    let record = CollectionRecord::decode(&value).unwrap();
    let wrong = CollectionRecord {
        size_bytes: record.size_bytes + 1,
        ..record
    };
    write(&db, |batch| batch.put(tree, &key, &wrong.encode()).unwrap());
    let problems = assert_reported(&db, &["collection pk = {\"S\":\"p", "record Some"]);
    assert_eq!(problems.len(), 1, "{problems:#?}");

    write(&db, |batch| batch.delete(tree, &key).unwrap());
    assert_reported(
        &db,
        &[
            "collection pk = {\"S\":\"p",
            "record None, its items and entries give Some",
        ],
    );
}

#[test]
fn entries_equal_as_dynamodb_compares_them_are_sound() {
    let db = loaded();
    let table = table(&db);
    // A set stored in another member order, in an LSI entry and a GSI entry: another byte
    // string, the same item.
    let reorder = |item: &mut Item| match item.get_mut("x") {
        Some(AttributeValue::Ss(members)) => members.reverse(),
        other => panic!("x is {other:?}"),
    };
    let (key, value) = lsi_entries(&db).swap_remove(4);
    rewrite(&db, table.tree, &key, &value, reorder);
    let tree = tree_of_gsi(&db, "ByG");
    let (key, value) = entries(&db, tree).swap_remove(9);
    rewrite(&db, tree, &key, &value, reorder);
    assert_ne!(entries(&db, tree)[9].1, value, "stored differently");
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}

#[test]
fn the_report_stops_at_a_hundred_problems() {
    let db = loaded();
    let tree = tree_of_gsi(&db, "ByG");
    write(&db, |batch| {
        for (key, _) in entries(&db, tree) {
            batch.delete(tree, &key).unwrap();
        }
    });
    let extra = 120;
    write(&db, |batch| {
        for n in 0..extra {
            let pk = s(&format!("nobody{n}"));
            let key = keys::gsi_key(&s("g0"), Some(&s("s00")), &pk, Some(&s("s00"))).unwrap();
            let item: Item = [("pk".to_string(), pk), ("sk".to_string(), s("s00"))].into();
            batch.put(tree, &key, &encode_item(&item)).unwrap();
        }
    });
    let report = db.check().unwrap();
    assert_eq!(report.problems.len(), 100);
    assert!(report.problems[0].contains("has no base item deriving it"));
}

/// A flipped byte in an SSTable of table `Flipped`: reads of that block fail, and the
/// database counts every failure and names the damaged place (file, offset, what it holds),
/// once per place.
#[test]
fn a_flipped_byte_in_an_sstable_is_counted_and_located() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        db.execute(
            "CreateTable",
            json!({"TableName": "Flipped", "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}),
        )
        .unwrap();
        for i in 0..400 {
            db.execute(
                "PutItem",
                json!({"TableName": "Flipped", "Item": {"pk": {"S": format!("k{i:04}")},
                    "payload": {"S": "x".repeat(200)}}}),
            )
            .unwrap();
        }
        db.lsm().flush_all().unwrap();
        // Nothing is damaged yet: nothing is reported.
        assert_eq!(db.corruption_report(), (0, Vec::new()));
    }
    // Flip one byte in the middle of the largest SSTable (a data block of the table's tree).
    let sst = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sst"))
        .max_by_key(|path| std::fs::metadata(path).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&sst).unwrap();
    let middle = bytes.len() / 3;
    bytes[middle] ^= 0x40;
    std::fs::write(&sst, bytes).unwrap();

    let db = Database::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.health(), Health::Healthy, "nothing read the damage yet");
    let scan = db.execute("Scan", json!({"TableName": "Flipped"}));
    let error = scan.expect_err("a scan through the damaged block fails");
    assert!(error.message.contains("corrupt"), "{}", error.message);
    let _ = db.execute("Scan", json!({"TableName": "Flipped"}));
    let (failures, places) = db.corruption_report();
    assert!(failures >= 2, "{failures}");
    assert_eq!(places.len(), 1, "{places:?}");
    let place = &places[0];
    let file_name = sst.file_name().unwrap().to_str().unwrap();
    assert_eq!(place.file, file_name);
    assert!(place.detail.contains("checksum"), "{place:?}");
    assert!(place.failures >= 2, "{place:?}");
    assert!(place.holds.starts_with("table Flipped"), "{place:?}");
    assert!(
        !place.smallest_key.is_empty() && !place.largest_key.is_empty(),
        "{place:?}"
    );
    // Writes go on: the database is degraded, not refusing.
    assert_eq!(
        db.health(),
        Health::Degraded {
            places: 1,
            reads: failures
        }
    );
    db.execute(
        "PutItem",
        json!({"TableName": "Flipped", "Item": {"pk": {"S": "new"}}}),
    )
    .unwrap();
}

/// A failed sync makes the engine refuse every write after it: health says so, with why.
#[test]
fn a_failed_sync_turns_health_to_writes_refused() {
    let sim = shoal_vfs::sim::SimFs::new();
    let db = Database::open_with_fs(
        sim.fs(),
        std::path::Path::new("/health"),
        Options::default(),
    )
    .unwrap();
    db.execute(
        "CreateTable",
        json!({"TableName": "Tbl", "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}),
    )
    .unwrap();
    assert_eq!(db.health(), Health::Healthy);
    sim.fail_syncs(true);
    let put = json!({"TableName": "Tbl", "Item": {"pk": {"S": "a"}}});
    assert!(db.execute("PutItem", put.clone()).is_err());
    sim.fail_syncs(false);
    match db.health() {
        Health::WritesRefused { reason } => assert!(!reason.is_empty()),
        other => panic!("{other:?}"),
    }
    assert!(db.execute("PutItem", put).is_err(), "still refused");
}
