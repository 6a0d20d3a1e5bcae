//! On-demand backups: a restore equals the source at the backup's point item for item,
//! including while other threads write; backups survive restarts and the source's
//! deletion; DeleteTable of a table with point-in-time recovery keeps a SYSTEM backup for
//! 35 days; DeleteBackup, ListBackups and the error texts of SPEC-2 §6.1.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::api::backups::{
    CreateBackupInput, DeleteBackupInput, DescribeBackupInput, ListBackupsInput,
    RestoreTableFromBackupInput,
};
use shoal_tables::{Clock, Database, Durability, Options, StorageOptions};

fn options() -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::None,
            memtable_size_bytes: 256 << 10,
            wal_segment_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    }
}

fn create_table(db: &Database, name: &str) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": name,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "lsk", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"},
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "LocalSecondaryIndexes": [{
                "IndexName": "byLsk",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "lsk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "byG",
                    "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["n"]},
                },
                {
                    "IndexName": "byG2",
                    "KeySchema": [
                        {"AttributeName": "g", "KeyType": "HASH"},
                        {"AttributeName": "sk", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                },
            ],
            "BillingMode": "PAY_PER_REQUEST",
        }),
    )
    .unwrap();
}

/// An item using every attribute type; `big` makes it nearly 400 KB (and leaves it out of
/// the LSI, whose entry would count against the same limit).
fn item(pk: &str, sk: u64, version: u64, big: bool) -> Value {
    let filler = if big { 400_000 } else { 10 };
    let mut item = json!({
        "pk": {"S": pk},
        "sk": {"N": sk.to_string()},
        "lsk": {"S": format!("l{}", version % 7)},
        "g": {"S": format!("g{}", sk % 5)},
        "n": {"N": format!("{version}.25")},
        "s": {"S": "x".repeat(filler)},
        "b": {"B": "AAEC"},
        "bool": {"BOOL": version.is_multiple_of(2)},
        "null": {"NULL": true},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2.5"]},
        "bs": {"BS": ["AQ==", "Ag=="]},
        "l": {"L": [{"S": "x"}, {"N": "1"}]},
        "m": {"M": {"inner": {"S": "v"}, "deep": {"M": {"n": {"N": "3"}}}}},
    });
    if big {
        item.as_object_mut().unwrap().remove("lsk");
    }
    item
}

fn put(db: &Database, table: &str, item: Value) {
    db.execute("PutItem", json!({"TableName": table, "Item": item}))
        .unwrap();
}

/// Every item of `table` (or of its index), by its primary key's JSON.
fn scan(db: &Database, table: &str, index: Option<&str>) -> BTreeMap<String, Value> {
    let mut items = BTreeMap::new();
    let mut start: Option<Value> = None;
    loop {
        let mut request = json!({"TableName": table});
        if let Some(index) = index {
            request["IndexName"] = json!(index);
        }
        if let Some(start) = start.take() {
            request["ExclusiveStartKey"] = start;
        }
        let page = db.execute("Scan", request).unwrap();
        for item in page["Items"].as_array().unwrap() {
            let key = json!({"pk": item["pk"], "sk": item["sk"]}).to_string();
            items.insert(key, item.clone());
        }
        match page.get("LastEvaluatedKey") {
            Some(key) => start = Some(key.clone()),
            None => return items,
        }
    }
}

fn create_backup(db: &Database, table: &str, name: &str) -> String {
    db.create_backup(CreateBackupInput {
        table_name: Some(table.into()),
        backup_name: Some(name.into()),
    })
    .unwrap()
    .backup_details
    .backup_arn
}

fn restore(db: &Database, arn: &str, target: &str) -> Result<Value, shoal_model::ApiError> {
    db.execute(
        "RestoreTableFromBackup",
        json!({"TargetTableName": target, "BackupArn": arn}),
    )
}

fn assert_sound(db: &Database) {
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}

fn describe(db: &Database, table: &str) -> Value {
    db.execute("DescribeTable", json!({"TableName": table}))
        .unwrap()["Table"]
        .clone()
}

/// The counts DescribeTable gives for the table and each index.
fn counts(description: &Value) -> Vec<(String, u64, u64)> {
    let mut counts = vec![(
        String::new(),
        description["ItemCount"].as_u64().unwrap(),
        description["TableSizeBytes"].as_u64().unwrap(),
    )];
    for key in ["LocalSecondaryIndexes", "GlobalSecondaryIndexes"] {
        for index in description[key].as_array().into_iter().flatten() {
            counts.push((
                index["IndexName"].as_str().unwrap().to_string(),
                index["ItemCount"].as_u64().unwrap(),
                index["IndexSizeBytes"].as_u64().unwrap(),
            ));
        }
    }
    counts
}

#[test]
fn a_restore_equals_the_source_at_the_backup_item_for_item() {
    let db = Database::open_in_memory(options()).unwrap();
    create_table(&db, "Source");
    for i in 0..300u64 {
        put(
            &db,
            "Source",
            item(&format!("p{}", i % 17), i, i, i % 100 == 7),
        );
    }
    // Some of the table in SSTables, some only in the memtable.
    db.lsm().flush_all().unwrap();
    for i in 250..400u64 {
        put(
            &db,
            "Source",
            item(&format!("p{}", i % 17), i, i + 1, false),
        );
    }
    db.execute(
        "DeleteItem",
        json!({"TableName": "Source", "Key": {"pk": {"S": "p1"}, "sk": {"N": "1"}}}),
    )
    .unwrap();
    let expected = scan(&db, "Source", None);
    let expected_gsi = scan(&db, "Source", Some("byG"));
    let expected_lsi = scan(&db, "Source", Some("byLsk"));
    let expected_counts = counts(&describe(&db, "Source"));
    let arn = create_backup(&db, "Source", "first");

    // Writes after the backup are not in the restore.
    for i in 0..50u64 {
        put(&db, "Source", item("later", i, i, false));
    }
    put(&db, "Source", item("p0", 0, 999, false));

    let restored = restore(&db, &arn, "Copy").unwrap();
    let summary = &restored["TableDescription"]["RestoreSummary"];
    assert_eq!(summary["SourceBackupArn"], json!(arn));
    assert_eq!(summary["RestoreInProgress"], json!(false));
    assert!(summary["SourceTableArn"]
        .as_str()
        .unwrap()
        .ends_with(":table/Source"));
    assert_eq!(scan(&db, "Copy", None), expected);
    assert_eq!(scan(&db, "Copy", Some("byG")), expected_gsi);
    assert_eq!(scan(&db, "Copy", Some("byLsk")), expected_lsi);
    let copy = describe(&db, "Copy");
    assert_eq!(counts(&copy), expected_counts);
    assert_eq!(copy["TableStatus"], json!("ACTIVE"));
    assert!(copy.get("StreamSpecification").is_none());
    assert_sound(&db);

    // The restored table is a table like any other.
    put(&db, "Copy", item("new", 1, 1, false));
    assert_eq!(scan(&db, "Copy", None).len(), expected.len() + 1);
    db.lsm().compact_until_idle().unwrap();
    assert_sound(&db);

    // DescribeBackup describes the source as backed up.
    let described = db
        .describe_backup(DescribeBackupInput {
            backup_arn: Some(arn.clone()),
        })
        .unwrap()
        .backup_description;
    assert_eq!(
        described.source_table_details.item_count,
        expected.len() as u64
    );
    assert_eq!(described.source_table_details.table_name, "Source");
    assert_eq!(described.backup_details.backup_status, "AVAILABLE");
    assert_eq!(
        described
            .source_table_feature_details
            .global_secondary_indexes
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn a_backup_taken_while_threads_write_holds_a_prefix_of_each_writer() {
    const WRITERS: usize = 4;
    let db = Arc::new(
        Database::open_in_memory({
            let mut options = options();
            options.storage.memtable_size_bytes = 64 << 10;
            options
        })
        .unwrap(),
    );
    create_table(&db, "Busy");
    let stop = Arc::new(AtomicBool::new(false));
    // Writer `t` puts items pk "t<t>-<i % 13>", sk i % 3, with version i, in order of i.
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let db = Arc::clone(&db);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut acknowledged = 0u64;
                while !stop.load(Ordering::Acquire) || acknowledged < 200 {
                    let i = acknowledged;
                    put(
                        &db,
                        "Busy",
                        item(&format!("t{t}-{}", i % 13), i % 3, i, false),
                    );
                    acknowledged += 1;
                }
                acknowledged
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(30));
    let arns: Vec<String> = (0..3)
        .map(|n| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            create_backup(&db, "Busy", &format!("busy-{n}"))
        })
        .collect();
    stop.store(true, Ordering::Release);
    let totals: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();

    for (n, arn) in arns.iter().enumerate() {
        let target = format!("Busy{n}");
        restore(&db, arn, &target).unwrap();
        let restored = scan(&db, &target, None);
        for (t, total) in totals.iter().enumerate() {
            let mine: BTreeMap<String, Value> = restored
                .iter()
                .filter(|(_, item)| {
                    item["pk"]["S"]
                        .as_str()
                        .unwrap()
                        .starts_with(&format!("t{t}-"))
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            // The state after the first `prefix` writes of writer t.
            let state_after = |prefix: u64| {
                let mut state = BTreeMap::new();
                for i in 0..prefix {
                    let item = item(&format!("t{t}-{}", i % 13), i % 3, i, false);
                    let key = json!({"pk": item["pk"], "sk": item["sk"]}).to_string();
                    state.insert(key, item);
                }
                state
            };
            let prefix = mine
                .values()
                .map(|item| {
                    item["n"]["N"]
                        .as_str()
                        .unwrap()
                        .trim_end_matches(".25")
                        .parse::<u64>()
                        .unwrap()
                        + 1
                })
                .max()
                .unwrap_or(0);
            assert!(prefix <= *total);
            let expected: BTreeMap<String, Value> = state_after(prefix)
                .into_iter()
                .map(|(k, v)| (k, normalise(v)))
                .collect();
            let actual: BTreeMap<String, Value> =
                mine.into_iter().map(|(k, v)| (k, normalise(v))).collect();
            assert_eq!(actual, expected, "backup {n}, writer {t}: not a prefix");
        }
    }
    // The GSIs of each restore agree with its items, and the statistics with both.
    assert_sound(&db);
}

/// An item with its sets sorted, so that two reads of one item compare equal.
fn normalise(mut item: Value) -> Value {
    for (_, value) in item.as_object_mut().unwrap().iter_mut() {
        for set in ["SS", "NS", "BS"] {
            if let Some(Value::Array(members)) = value.get_mut(set) {
                members.sort_by_key(|m| m.to_string());
            }
        }
    }
    item
}

#[test]
fn backups_survive_restarts_and_the_source_s_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    let reopen = || Database::open(&path, options()).unwrap();
    let (first, second, expected_first) = {
        let db = reopen();
        create_table(&db, "Source");
        for i in 0..100u64 {
            put(&db, "Source", item("p", i, i, false));
        }
        let expected = scan(&db, "Source", None);
        let first = create_backup(&db, "Source", "first");
        drop(db);
        let db = reopen();
        for i in 100..150u64 {
            put(&db, "Source", item("p", i, i, false));
        }
        let second = create_backup(&db, "Source", "second");
        (first, second, expected)
    };
    let db = reopen();
    restore(&db, &first, "FromFirst").unwrap();
    assert_eq!(scan(&db, "FromFirst", None).len(), expected_first.len());
    db.execute("DeleteTable", json!({"TableName": "Source"}))
        .unwrap();
    // Compactions and the source's deletion must leave the backups' files alone.
    db.lsm().compact_until_idle().unwrap();
    drop(db);

    let db = reopen();
    assert_eq!(scan(&db, "FromFirst", None), expected_first);
    let backup_dirs = |db: &Database| {
        let root = db.lsm().dir().join("backups");
        let mut names = db.lsm().fs().list(&root).unwrap();
        names.sort();
        names
    };
    assert_eq!(backup_dirs(&db).len(), 2);
    let deleted = db
        .delete_backup(DeleteBackupInput {
            backup_arn: Some(first.clone()),
        })
        .unwrap();
    assert_eq!(
        deleted.backup_description.backup_details.backup_status,
        "DELETED"
    );
    assert_eq!(
        backup_dirs(&db).len(),
        1,
        "the deleted backup's files are gone"
    );
    let again = db.describe_backup(DescribeBackupInput {
        backup_arn: Some(first.clone()),
    });
    assert_eq!(again.unwrap_err().code, ErrorCode::BackupNotFoundException);
    // The other backup's links are intact.
    restore(&db, &second, "FromSecond").unwrap();
    assert_eq!(scan(&db, "FromSecond", None).len(), 150);
    drop(db);
    let db = reopen();
    assert_eq!(scan(&db, "FromFirst", None), expected_first);
    assert_eq!(scan(&db, "FromSecond", None).len(), 150);
    assert_sound(&db);
}

#[test]
fn deleting_a_table_with_point_in_time_recovery_keeps_a_system_backup_for_35_days() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    let start_millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let now = Arc::new(AtomicU64::new(start_millis));
    let reopen = || {
        let now = Arc::clone(&now);
        let clock = Clock::from_fn(move || now.load(Ordering::SeqCst));
        Database::open(&path, Options { clock, ..options() }).unwrap()
    };
    let db = reopen();
    let system_backups = |db: &Database, backup_type: &str| {
        db.list_backups(ListBackupsInput {
            backup_type: Some(backup_type.into()),
            ..Default::default()
        })
        .unwrap()
        .backup_summaries
    };
    // Without point-in-time recovery DeleteTable keeps nothing.
    create_table(&db, "Plain");
    put(&db, "Plain", item("p", 1, 1, false));
    db.execute("DeleteTable", json!({"TableName": "Plain"}))
        .unwrap();
    assert!(system_backups(&db, "ALL").is_empty());

    create_table(&db, "Source");
    for i in 0..80u64 {
        put(&db, "Source", item(&format!("p{}", i % 5), i, i, i == 7));
    }
    db.execute(
        "UpdateContinuousBackups",
        json!({"TableName": "Source",
               "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true}}),
    )
    .unwrap();
    let expected = scan(&db, "Source", None);
    let expected_by_g = scan(&db, "Source", Some("byG"));
    db.execute("DeleteTable", json!({"TableName": "Source"}))
        .unwrap();

    assert!(
        system_backups(&db, "USER").is_empty(),
        "USER is the default"
    );
    assert!(system_backups(&db, "AWS_BACKUP").is_empty());
    let listed = system_backups(&db, "SYSTEM");
    assert_eq!(listed.len(), 1);
    assert_eq!(system_backups(&db, "ALL"), listed);
    let summary = &listed[0];
    assert_eq!(summary.backup_type, "SYSTEM");
    assert_eq!(summary.backup_name, "Source$DeletedTableBackup");
    assert_eq!(summary.table_name, "Source");
    let expiry = summary.backup_expiry_date_time.expect("an expiry");
    let thirty_five_days = 35.0 * 24.0 * 3600.0;
    assert!((expiry - summary.backup_creation_date_time - thirty_five_days).abs() < 1e-3);
    let arn = summary.backup_arn.clone();
    let described = db
        .describe_backup(DescribeBackupInput {
            backup_arn: Some(arn.clone()),
        })
        .unwrap()
        .backup_description;
    assert_eq!(described.backup_details.backup_type, "SYSTEM");
    assert_eq!(
        described.backup_details.backup_expiry_date_time,
        Some(expiry)
    );
    assert_eq!(described.source_table_details.item_count, 80);

    // It restores the table as it was when deleted, and survives a reopen.
    restore(&db, &arn, "Back").unwrap();
    assert_eq!(scan(&db, "Back", None), expected);
    assert_eq!(scan(&db, "Back", Some("byG")), expected_by_g);
    drop(db);
    let db = reopen();
    assert_eq!(system_backups(&db, "SYSTEM").len(), 1);

    // 35 days on it is gone: unlisted and not found at once, its files at the next open.
    now.fetch_add(35 * 24 * 3600 * 1000, Ordering::SeqCst);
    assert!(system_backups(&db, "ALL").is_empty());
    let gone = db.describe_backup(DescribeBackupInput {
        backup_arn: Some(arn.clone()),
    });
    assert_eq!(gone.unwrap_err().code, ErrorCode::BackupNotFoundException);
    assert_eq!(
        restore(&db, &arn, "Again").unwrap_err().code,
        ErrorCode::BackupNotFoundException
    );
    let backups_root = path.join("backups");
    assert_eq!(std::fs::read_dir(&backups_root).unwrap().count(), 1);
    drop(db);
    let db = reopen();
    assert_eq!(std::fs::read_dir(&backups_root).unwrap().count(), 0);
    assert_eq!(
        scan(&db, "Back", None),
        expected,
        "the restored table stays"
    );
    assert_sound(&db);
}

#[test]
fn list_backups_filters_and_pages() {
    let db = Database::open_in_memory(options()).unwrap();
    create_table(&db, "AAA");
    create_table(&db, "BBB");
    let mut arns_a = Vec::new();
    for n in 0..5 {
        arns_a.push(create_backup(&db, "AAA", &format!("a-{n}")));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let arn_b = create_backup(&db, "BBB", "b-0");
    let list = |input: ListBackupsInput| db.list_backups(input).unwrap();

    let all = list(ListBackupsInput::default());
    assert_eq!(all.backup_summaries.len(), 6);
    assert!(all.last_evaluated_backup_arn.is_none());
    let only_b = list(ListBackupsInput {
        table_name: Some("BBB".into()),
        ..Default::default()
    });
    assert_eq!(only_b.backup_summaries.len(), 1);
    assert_eq!(only_b.backup_summaries[0].backup_arn, arn_b);
    assert_eq!(only_b.backup_summaries[0].backup_type, "USER");

    // Pages of two, resumed from the last ARN of each.
    let mut seen = Vec::new();
    let mut start = None;
    loop {
        let page = list(ListBackupsInput {
            table_name: Some("AAA".into()),
            limit: Some(2),
            exclusive_start_backup_arn: start.take(),
            ..Default::default()
        });
        assert!(page.backup_summaries.len() <= 2);
        seen.extend(page.backup_summaries.iter().map(|s| s.backup_arn.clone()));
        match page.last_evaluated_backup_arn {
            Some(arn) => start = Some(arn),
            None => break,
        }
    }
    assert_eq!(seen, arns_a);

    // Time range: lower bound inclusive, upper exclusive.
    let created: Vec<f64> = list(ListBackupsInput {
        table_name: Some("AAA".into()),
        ..Default::default()
    })
    .backup_summaries
    .iter()
    .map(|s| s.backup_creation_date_time)
    .collect();
    let ranged = list(ListBackupsInput {
        table_name: Some("AAA".into()),
        time_range_lower_bound: Some(created[1]),
        time_range_upper_bound: Some(created[3]),
        ..Default::default()
    });
    assert_eq!(
        ranged
            .backup_summaries
            .iter()
            .map(|s| s.backup_arn.clone())
            .collect::<Vec<_>>(),
        arns_a[1..3].to_vec()
    );
    for other in ["SYSTEM", "AWS_BACKUP"] {
        let none = list(ListBackupsInput {
            backup_type: Some(other.into()),
            ..Default::default()
        });
        assert!(none.backup_summaries.is_empty());
    }
    assert_eq!(
        list(ListBackupsInput {
            backup_type: Some("ALL".into()),
            ..Default::default()
        })
        .backup_summaries
        .len(),
        6
    );
    let bad = db.list_backups(ListBackupsInput {
        backup_type: Some("NONE".into()),
        ..Default::default()
    });
    assert!(bad
        .unwrap_err()
        .message
        .contains("Member must satisfy enum value set"));
    let bad = db.list_backups(ListBackupsInput {
        limit: Some(101),
        ..Default::default()
    });
    assert!(bad
        .unwrap_err()
        .message
        .contains("Member must have value less than or equal to 100"));
}

#[test]
fn backup_errors_have_dynamodb_s_exceptions_and_texts() {
    let db = Database::open_in_memory(options()).unwrap();
    create_table(&db, "Tab");
    put(&db, "Tab", item("p", 1, 1, false));
    let missing = db
        .create_backup(CreateBackupInput {
            table_name: Some("Nope".into()),
            backup_name: Some("bkp".into()),
        })
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::TableNotFoundException);
    assert_eq!(missing.message, "Table not found: Nope");
    let bad_name = db
        .create_backup(CreateBackupInput {
            table_name: Some("Tab".into()),
            backup_name: Some("a b".into()),
        })
        .unwrap_err();
    assert_eq!(
        bad_name.message,
        "1 validation error detected: Value 'a b' at 'backupName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+"
    );
    let invalid = db
        .describe_backup(DescribeBackupInput {
            backup_arn: Some(
                "arn:aws:dynamodb:us-east-1:000000000000:table/Tab/nothing-here".into(),
            ),
        })
        .unwrap_err();
    assert_eq!(invalid.code, ErrorCode::ValidationException);
    assert_eq!(invalid.message, "Invalid Backup ARN");
    let unknown = "arn:aws:dynamodb:ddblocal:000000000000:table/Tab/backup/01700000000000-0000abcd"
        .to_string();
    let not_found = db
        .delete_backup(DeleteBackupInput {
            backup_arn: Some(unknown.clone()),
        })
        .unwrap_err();
    assert_eq!(not_found.code, ErrorCode::BackupNotFoundException);
    assert_eq!(not_found.message, format!("Backup not found: {unknown}"));

    let arn = create_backup(&db, "Tab", "bkp");
    let exists = restore(&db, &arn, "Tab").unwrap_err();
    assert_eq!(exists.code, ErrorCode::TableAlreadyExistsException);
    assert_eq!(exists.message, "Table already exists: Tab");

    let with = |overrides: Value| {
        let mut request = json!({"TargetTableName": "Res", "BackupArn": arn});
        for (key, value) in overrides.as_object().unwrap() {
            request[key] = value.clone();
        }
        db.execute("RestoreTableFromBackup", request)
    };
    let gsi = with(json!({"GlobalSecondaryIndexOverride": [{
        "IndexName": "nope",
        "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
    }]}))
    .unwrap_err();
    assert_eq!(
        gsi.message,
        "Invalid Request: Index nope does not match a secondary index that existed in the source table and cannot be created during the restore operation"
    );
    let throughput = with(json!({
        "BillingModeOverride": "PAY_PER_REQUEST",
        "ProvisionedThroughputOverride": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
    }))
    .unwrap_err();
    assert_eq!(
        throughput.message,
        "Invalid Request: Cannot override ProvisionedThroughput if BillingMode is overridden to PAY_PER_REQUEST"
    );
    let lsi = with(json!({"LocalSecondaryIndexOverride": []})).unwrap_err();
    assert!(
        lsi.message.contains("LocalSecondaryIndexOverride"),
        "{}",
        lsi.message
    );
    let sse = with(json!({"SSESpecificationOverride": {"Enabled": true}})).unwrap_err();
    assert!(sse.message.contains("SSESpecificationOverride"));
    assert!(db.table("Res").is_err(), "no refused restore made a table");

    // A GSI override keeps a subset; a billing override applies.
    let kept = with(json!({
        "GlobalSecondaryIndexOverride": [{
            "IndexName": "byG2",
            "KeySchema": [
                {"AttributeName": "g", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
            "ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 4},
        }],
        "BillingModeOverride": "PROVISIONED",
        "ProvisionedThroughputOverride": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 6},
    }))
    .unwrap();
    let description = &kept["TableDescription"];
    let gsis = description["GlobalSecondaryIndexes"].as_array().unwrap();
    assert_eq!(gsis.len(), 1);
    assert_eq!(gsis[0]["IndexName"], json!("byG2"));
    assert_eq!(
        gsis[0]["ProvisionedThroughput"]["ReadCapacityUnits"],
        json!(3)
    );
    assert_eq!(
        description["BillingModeSummary"]["BillingMode"],
        json!("PROVISIONED")
    );
    assert_eq!(
        description["ProvisionedThroughput"]["WriteCapacityUnits"],
        json!(6)
    );
    assert_eq!(scan(&db, "Res", Some("byG2")).len(), 1);
    assert_sound(&db);
}

#[test]
fn stale_backup_directories_go_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    {
        let db = Database::open(&path, options()).unwrap();
        create_table(&db, "Tab");
        create_backup(&db, "Tab", "kept");
    }
    // What a crash in the middle of CreateBackup leaves: links without a description.
    let partial = path.join("backups").join("01700000000000-0000abcd");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(partial.join("000001.sst"), b"half").unwrap();
    let db = Database::open(&path, options()).unwrap();
    assert!(!Path::new(&partial).exists());
    assert_eq!(
        db.list_backups(ListBackupsInput::default())
            .unwrap()
            .backup_summaries
            .len(),
        1
    );
    let _ = RestoreTableFromBackupInput::default();
}
