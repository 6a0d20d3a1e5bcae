//! DescribeTable (every field, live sizes and their cache), ListTables (paging, limits),
//! DeleteTable (response, storage dropped) and the durability of the catalog.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::core::stats::STATS_TREE_NAME;
use shoal_tables::{Database, Durability, Options, StorageOptions};

fn options() -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::None,
            wal_segment_size_bytes: 1 << 20,
            memtable_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    }
}

fn open() -> Database {
    Database::open_in_memory(options()).unwrap()
}

fn create_simple(db: &Database, name: &str) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": name,
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        }),
    )
    .unwrap();
}

/// Table `Stats`: key pk/sk, LSI `byA` (sort a, KEYS_ONLY), GSI `byB` (hash b: N, ALL).
fn create_indexed(db: &Database) -> Value {
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Stats",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "a", "AttributeType": "S"},
                {"AttributeName": "b", "AttributeType": "N"},
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "BillingMode": "PAY_PER_REQUEST",
            "LocalSecondaryIndexes": [{
                "IndexName": "byA",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "a", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }],
            "GlobalSecondaryIndexes": [{
                "IndexName": "byB",
                "KeySchema": [{"AttributeName": "b", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }],
        }),
    )
    .unwrap()
}

fn put(db: &Database, table: &str, item: Value) {
    db.execute("PutItem", json!({"TableName": table, "Item": item}))
        .unwrap();
}

fn describe(db: &Database, name: &str) -> Value {
    db.execute("DescribeTable", json!({"TableName": name}))
        .unwrap()["Table"]
        .clone()
}

fn list(db: &Database, request: Value) -> Value {
    db.execute("ListTables", request).unwrap()
}

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn describe_reports_every_field() {
    let db = open();
    let created = create_indexed(&db)["TableDescription"].clone();
    let table = describe(&db, "Stats");
    let id = db.table("Stats").unwrap().id.clone();
    let arn = "arn:aws:dynamodb:ddblocal:000000000000:table/Stats";

    assert_eq!(table["TableName"], json!("Stats"));
    assert_eq!(table["TableArn"], json!(arn));
    assert_eq!(table["TableId"], json!(id));
    assert_eq!(table["TableStatus"], json!("ACTIVE"));
    assert_eq!(
        table["KeySchema"],
        json!([{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}])
    );
    assert_eq!(table["AttributeDefinitions"].as_array().unwrap().len(), 4);
    assert_eq!(
        table["AttributeDefinitions"][3],
        json!({"AttributeName": "b", "AttributeType": "N"})
    );
    let created_at = table["CreationDateTime"].as_f64().unwrap();
    assert!((created_at - now_seconds()).abs() < 60.0, "{created_at}");
    assert_eq!(table["ItemCount"], json!(0));
    assert_eq!(table["TableSizeBytes"], json!(0));
    assert_eq!(
        table["ProvisionedThroughput"],
        json!({"ReadCapacityUnits": 0, "WriteCapacityUnits": 0, "NumberOfDecreasesToday": 0})
    );
    assert_eq!(
        table["BillingModeSummary"]["BillingMode"],
        json!("PAY_PER_REQUEST")
    );
    assert_eq!(
        table["BillingModeSummary"]["LastUpdateToPayPerRequestDateTime"].as_f64(),
        Some(created_at)
    );

    let lsi = &table["LocalSecondaryIndexes"][0];
    let lsi_members: Vec<&String> = lsi.as_object().unwrap().keys().collect();
    assert_eq!(
        lsi_members,
        vec![
            "IndexArn",
            "IndexName",
            "IndexSizeBytes",
            "ItemCount",
            "KeySchema",
            "Projection"
        ],
        "an LSI has no IndexStatus and no ProvisionedThroughput"
    );
    assert_eq!(lsi["IndexArn"], json!(format!("{arn}/index/byA")));
    assert_eq!(lsi["Projection"], json!({"ProjectionType": "KEYS_ONLY"}));

    let gsi = &table["GlobalSecondaryIndexes"][0];
    assert_eq!(gsi["IndexStatus"], json!("ACTIVE"));
    assert!(
        gsi.get("Backfilling").is_none(),
        "Backfilling only while CREATING"
    );
    assert_eq!(gsi["IndexArn"], json!(format!("{arn}/index/byB")));
    assert_eq!(
        gsi["KeySchema"],
        json!([{"AttributeName": "b", "KeyType": "HASH"}])
    );
    assert_eq!(
        gsi["ProvisionedThroughput"],
        json!({"ReadCapacityUnits": 0, "WriteCapacityUnits": 0, "NumberOfDecreasesToday": 0})
    );
    assert_eq!(
        created, table,
        "CreateTable answers what DescribeTable then reports"
    );

    // A table without indexes has no index members at all.
    create_simple(&db, "Plain");
    let plain = describe(&db, "Plain");
    assert!(plain.get("LocalSecondaryIndexes").is_none());
    assert!(plain.get("GlobalSecondaryIndexes").is_none());
    assert_eq!(
        plain["KeySchema"],
        json!([{"AttributeName": "id", "KeyType": "HASH"}])
    );

    let missing = db
        .execute("DescribeTable", json!({"TableName": "Nope"}))
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::ResourceNotFoundException);
    assert_eq!(
        missing.message,
        "Requested resource not found: Table: Nope not found"
    );
    let by_arn = db
        .execute(
            "DescribeTable",
            json!({"TableName": "arn:aws:dynamodb:ddblocal:000000000000:table/Plain"}),
        )
        .unwrap();
    assert_eq!(by_arn["Table"]["TableName"], json!("Plain"));
    let no_name = db.execute("DescribeTable", json!({})).unwrap_err();
    assert_eq!(no_name.code, ErrorCode::ValidationException);
}

#[test]
fn describe_counts_items_and_index_entries_as_they_are_written() {
    let db = open();
    create_indexed(&db);
    // Sizes (SPEC §1.3): names + values; N "5" costs 2 bytes.
    put(
        &db,
        "Stats",
        json!({"pk": {"S": "p1"}, "sk": {"S": "s1"}, "a": {"S": "x"}, "b": {"N": "5"}}),
    ); // 13
    put(
        &db,
        "Stats",
        json!({"pk": {"S": "p1"}, "sk": {"S": "s2"}, "a": {"S": "yy"}}),
    ); // 11, no GSI entry
    put(
        &db,
        "Stats",
        json!({"pk": {"S": "p2"}, "sk": {"S": "s1"}, "b": {"N": "7"}}),
    ); // 11, no LSI entry
    let table = describe(&db, "Stats");
    assert_eq!(table["ItemCount"], json!(3));
    assert_eq!(table["TableSizeBytes"], json!(35));
    let lsi = &table["LocalSecondaryIndexes"][0];
    assert_eq!(lsi["ItemCount"], json!(2), "sparse: p2/s1 has no a");
    assert_eq!(
        lsi["IndexSizeBytes"],
        json!(10 + 11),
        "KEYS_ONLY entries hold pk, sk, a"
    );
    let gsi = &table["GlobalSecondaryIndexes"][0];
    assert_eq!(gsi["ItemCount"], json!(2), "sparse: p1/s2 has no b");
    assert_eq!(gsi["IndexSizeBytes"], json!(13 + 11));

    // The figures are kept with the writes: a new item shows at once.
    put(&db, "Stats", json!({"pk": {"S": "p3"}, "sk": {"S": "s1"}}));
    assert_eq!(describe(&db, "Stats")["ItemCount"], json!(4));
    assert_eq!(describe(&db, "Stats")["TableSizeBytes"], json!(35 + 8));

    // Overwrites and deletes too, and the figures survive a reopen.
    let fs = shoal_vfs::sim::SimFs::new();
    let path = Path::new("/stats");
    let db = Database::open_with_fs(fs.fs(), path, options()).unwrap();
    create_indexed(&db);
    put(
        &db,
        "Stats",
        json!({"pk": {"S": "p1"}, "sk": {"S": "s1"}, "a": {"S": "x"}}),
    );
    put(
        &db,
        "Stats",
        json!({"pk": {"S": "p1"}, "sk": {"S": "s1"}, "a": {"S": "xyz"}}),
    );
    put(&db, "Stats", json!({"pk": {"S": "p9"}, "sk": {"S": "s9"}}));
    db.execute(
        "DeleteItem",
        json!({"TableName": "Stats", "Key": {"pk": {"S": "p9"}, "sk": {"S": "s9"}}}),
    )
    .unwrap();
    let table = describe(&db, "Stats");
    assert_eq!(table["ItemCount"], json!(1));
    assert_eq!(table["TableSizeBytes"], json!(4 + 4 + 4));
    assert_eq!(table["LocalSecondaryIndexes"][0]["ItemCount"], json!(1));
    drop(db);
    let db = Database::open_with_fs(fs.fs(), path, options()).unwrap();
    assert_eq!(describe(&db, "Stats"), table);
}

#[test]
fn list_tables_pages_in_byte_order() {
    let db = open();
    assert_eq!(list(&db, json!({})), json!({"TableNames": []}));
    for name in ["tab2", "Abc", "tab1", "tab3", "tab4"] {
        create_simple(&db, name);
    }
    assert_eq!(
        list(&db, json!({}))["TableNames"],
        json!(["Abc", "tab1", "tab2", "tab3", "tab4"])
    );
    let first = list(&db, json!({"Limit": 2}));
    assert_eq!(
        first,
        json!({"TableNames": ["Abc", "tab1"], "LastEvaluatedTableName": "tab1"})
    );
    let second = list(&db, json!({"Limit": 2, "ExclusiveStartTableName": "tab1"}));
    assert_eq!(
        second,
        json!({"TableNames": ["tab2", "tab3"], "LastEvaluatedTableName": "tab3"})
    );
    let last = list(&db, json!({"Limit": 2, "ExclusiveStartTableName": "tab3"}));
    assert_eq!(
        last,
        json!({"TableNames": ["tab4"]}),
        "no LastEvaluatedTableName when nothing follows"
    );
    assert_eq!(
        list(&db, json!({"Limit": 5})),
        json!({"TableNames": ["Abc", "tab1", "tab2", "tab3", "tab4"]})
    );
    // The start name need not exist.
    assert_eq!(
        list(&db, json!({"ExclusiveStartTableName": "tab25"}))["TableNames"],
        json!(["tab3", "tab4"])
    );

    let zero = db.execute("ListTables", json!({"Limit": 0})).unwrap_err();
    assert_eq!(
        zero.message,
        "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1"
    );
    let over = db.execute("ListTables", json!({"Limit": 101})).unwrap_err();
    assert_eq!(
        over.message,
        "1 validation error detected: Value '101' at 'limit' failed to satisfy constraint: Member must have value less than or equal to 100"
    );
    let shape = db
        .execute("ListTables", json!({"Limit": "two"}))
        .unwrap_err();
    assert_eq!(shape.code, ErrorCode::SerializationException);
}

#[test]
fn delete_table_answers_deleting_and_drops_storage() {
    let db = open();
    create_indexed(&db);
    put(
        &db,
        "Stats",
        json!({"pk": {"S": "p1"}, "sk": {"S": "s1"}, "a": {"S": "x"}, "b": {"N": "5"}}),
    );
    let id = db.table("Stats").unwrap().id.clone();
    let trees_before = db.lsm().version().trees.len();

    let deleted = db
        .execute("DeleteTable", json!({"TableName": "Stats"}))
        .unwrap()["TableDescription"]
        .clone();
    let members: Vec<&String> = deleted.as_object().unwrap().keys().collect();
    assert_eq!(
        members,
        vec![
            "BillingModeSummary",
            "ItemCount",
            "ProvisionedThroughput",
            "TableArn",
            "TableId",
            "TableName",
            "TableSizeBytes",
            "TableStatus"
        ]
    );
    assert_eq!(deleted["TableStatus"], json!("DELETING"));
    assert_eq!(deleted["TableId"], json!(id));
    assert_eq!(deleted["ItemCount"], json!(1));
    assert_eq!(deleted["TableSizeBytes"], json!(13));

    let version = db.lsm().version();
    assert_eq!(
        version.trees.len(),
        trees_before - 2,
        "the table tree and its GSI tree are dropped"
    );
    assert!(version.trees.values().all(|t| !t.name.starts_with(&id)));
    assert!(version.metadata.keys().all(|k| k != "table/Stats"));
    assert_eq!(list(&db, json!({})), json!({"TableNames": []}));
    let again = db
        .execute("DeleteTable", json!({"TableName": "Stats"}))
        .unwrap_err();
    assert_eq!(again.code, ErrorCode::ResourceNotFoundException);
    let describe_gone = db
        .execute("DescribeTable", json!({"TableName": "Stats"}))
        .unwrap_err();
    assert_eq!(describe_gone.code, ErrorCode::ResourceNotFoundException);

    // A table created again under the name starts empty, with a new id.
    create_indexed(&db);
    assert_ne!(db.table("Stats").unwrap().id, id);
    let item = db
        .execute(
            "GetItem",
            json!({"TableName": "Stats", "Key": {"pk": {"S": "p1"}, "sk": {"S": "s1"}}}),
        )
        .unwrap();
    assert!(item.get("Item").is_none(), "{item}");
    assert_eq!(describe(&db, "Stats")["ItemCount"], json!(0));
}

#[test]
fn the_catalog_survives_reopening() {
    let fs = shoal_vfs::sim::SimFs::new();
    let path = Path::new("/catalog");
    let (definitions, descriptions) = {
        let db = Database::open_with_fs(fs.fs(), path, options()).unwrap();
        create_indexed(&db);
        create_simple(&db, "Plain");
        create_simple(&db, "Gone");
        put(
            &db,
            "Stats",
            json!({"pk": {"S": "p1"}, "sk": {"S": "s1"}, "a": {"S": "x"}, "b": {"N": "5"}}),
        );
        db.execute("DeleteTable", json!({"TableName": "Gone"}))
            .unwrap();
        let definitions: Vec<_> = ["Stats", "Plain"]
            .iter()
            .map(|n| db.table(n).unwrap())
            .collect();
        let descriptions: Vec<Value> = ["Stats", "Plain"]
            .iter()
            .map(|n| describe(&db, n))
            .collect();
        (definitions, descriptions)
    };
    let db = Database::open_with_fs(fs.fs(), path, options()).unwrap();
    assert_eq!(
        list(&db, json!({})),
        json!({"TableNames": ["Plain", "Stats"]})
    );
    for (name, (definition, description)) in ["Stats", "Plain"]
        .iter()
        .zip(definitions.iter().zip(&descriptions))
    {
        assert_eq!(
            *db.table(name).unwrap(),
            **definition,
            "{name} is exactly as created"
        );
        assert_eq!(&describe(&db, name), description);
    }
    let trees = db.lsm().version().trees.len();
    assert_eq!(
        trees, 4,
        "Stats, its GSI, Plain, and the statistics of all three"
    );
}

#[test]
fn statistics_missing_from_an_older_build_are_rebuilt_at_open() {
    let fs = shoal_vfs::sim::SimFs::new();
    let path = Path::new("/rebuild");
    let db = Database::open_with_fs(fs.fs(), path, options()).unwrap();
    create_indexed(&db);
    for n in 0..40 {
        put(
            &db,
            "Stats",
            json!({"pk": {"S": format!("p{}", n % 7)}, "sk": {"S": format!("s{n}")},
                   "a": {"S": "x".repeat(n + 1)}, "b": {"N": n.to_string()}}),
        );
    }
    let before = describe(&db, "Stats");
    assert_eq!(before["ItemCount"], json!(40));
    // What a database written before statistics were kept looks like: no records at all.
    let stats_tree = db.lsm().tree_id(STATS_TREE_NAME).unwrap();
    let mut batch = shoal_engine::WriteBatch::new();
    for (key, _) in db
        .lsm()
        .scan(
            stats_tree,
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            shoal_engine::Direction::Forward,
            None,
            usize::MAX,
        )
        .unwrap()
    {
        batch.delete(stats_tree, &key).unwrap();
    }
    db.lsm().write(batch).unwrap();
    assert!(
        !db.check().unwrap().is_sound(),
        "the check sees them missing"
    );
    drop(db);

    let db = Database::open_with_fs(fs.fs(), path, options()).unwrap();
    assert_eq!(describe(&db, "Stats"), before);
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}
