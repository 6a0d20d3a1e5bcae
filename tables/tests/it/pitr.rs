//! Point-in-time recovery (SPEC-2 §6.2): restores to several instants equal a model of the
//! table's history, across flushes, whole-tree compactions and a reopen; the history is
//! kept for the window and dropped after it; every refusal has DynamoDB's exception.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::{BackupOptions, Database, Durability, Options, StorageOptions};

use crate::restore_support;
use restore_support::{create_indexed_source, enable_pitr};

fn options() -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::None,
            memtable_size_bytes: 64 << 10,
            wal_segment_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        backups: BackupOptions {
            pitr_clock_interval: Duration::from_millis(10),
            ..BackupOptions::default()
        },
        ..Options::default()
    }
}

fn call(db: &Database, operation: &str, request: Value) -> Value {
    db.execute(operation, request)
        .unwrap_or_else(|e| panic!("{operation}: {e}"))
}

fn error(db: &Database, operation: &str, request: Value) -> (ErrorCode, String) {
    let e = db
        .execute(operation, request)
        .expect_err("the request must fail");
    (e.code, e.message)
}

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn key_of(item: &Value) -> String {
    json!({"pk": item["pk"], "sk": item["sk"]}).to_string()
}

/// Every item a Scan (or Query) of `request` returns, by primary key, page by page.
fn read_all(db: &Database, operation: &str, request: Value) -> BTreeMap<String, Value> {
    let mut items = BTreeMap::new();
    let mut start: Option<Value> = None;
    loop {
        let mut request = request.clone();
        if let Some(start) = start.take() {
            request["ExclusiveStartKey"] = start;
        }
        let page = call(db, operation, request);
        for item in page["Items"].as_array().unwrap() {
            items.insert(key_of(item), item.clone());
        }
        match page.get("LastEvaluatedKey") {
            Some(key) => start = Some(key.clone()),
            None => return items,
        }
    }
}

fn scan(db: &Database, table: &str) -> BTreeMap<String, Value> {
    read_all(db, "Scan", json!({"TableName": table}))
}

/// Waits until every GSI of `table` is ACTIVE (a restore's are rebuilt by the backfill).
fn wait_for_indexes(db: &Database, table: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let description = call(db, "DescribeTable", json!({"TableName": table}));
        let active = description["Table"]["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|gsi| gsi["IndexStatus"] == "ACTIVE");
        if active {
            return;
        }
        assert!(Instant::now() < deadline, "{description}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A small deterministic generator, so a failure replays.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// One round of puts, updates and deletes over 60 keys, applied to the table and the model.
fn write_round(db: &Database, round: u64, rng: &mut Lcg, model: &mut BTreeMap<String, Value>) {
    for _ in 0..80 {
        let pk = format!("p{}", rng.below(12));
        let sk = rng.below(5);
        let key = json!({"pk": {"S": pk}, "sk": {"N": sk.to_string()}});
        match rng.below(10) {
            0..=5 => {
                let item = json!({
                    "pk": {"S": pk},
                    "sk": {"N": sk.to_string()},
                    "l": {"S": format!("l{}", rng.below(4))},
                    "g": {"S": format!("g{}", rng.below(3))},
                    "round": {"N": round.to_string()},
                    "pad": {"S": "x".repeat(200 + rng.below(300) as usize)},
                });
                call(db, "PutItem", json!({"TableName": "Src", "Item": item}));
                model.insert(key_of(&item), item);
            }
            6..=7 => {
                let answer = call(
                    db,
                    "UpdateItem",
                    json!({"TableName": "Src", "Key": key,
                           "UpdateExpression": "SET #r = :r",
                           "ExpressionAttributeNames": {"#r": "round"},
                           "ExpressionAttributeValues": {":r": {"N": round.to_string()}},
                           "ReturnValues": "ALL_NEW"}),
                );
                let item = answer["Attributes"].clone();
                model.insert(key_of(&item), item);
            }
            _ => {
                call(db, "DeleteItem", json!({"TableName": "Src", "Key": key}));
                model.remove(&key.to_string());
            }
        }
    }
}

fn restore_at(db: &Database, target: &str, time: f64) -> Result<Value, shoal_model::ApiError> {
    db.execute(
        "RestoreTableToPointInTime",
        json!({"SourceTableName": "Src", "TargetTableName": target, "RestoreDateTime": time}),
    )
}

/// The model at instant `i` against restored table `target`: a scan, the GSI scanned, and
/// a GSI query.
fn assert_restored(db: &Database, target: &str, expected: &BTreeMap<String, Value>) {
    wait_for_indexes(db, target);
    assert_eq!(&scan(db, target), expected, "{target}");
    let indexed: BTreeMap<String, Value> = expected
        .iter()
        .filter(|(_, item)| item.get("g").is_some())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(
        read_all(db, "Scan", json!({"TableName": target, "IndexName": "byG"})),
        indexed,
        "{target} byG"
    );
    let g1: BTreeMap<String, Value> = indexed
        .into_iter()
        .filter(|(_, item)| item["g"]["S"] == "g1")
        .collect();
    assert_eq!(
        read_all(
            db,
            "Query",
            json!({"TableName": target, "IndexName": "byG",
                   "KeyConditionExpression": "g = :g",
                   "ExpressionAttributeValues": {":g": {"S": "g1"}}})
        ),
        g1,
        "{target} byG g1"
    );
}

#[test]
fn restores_to_several_instants_equal_the_model_then() {
    let dir = tempfile::tempdir().unwrap();
    let open = |dir: &Path| Database::open(dir, options()).unwrap();
    let mut db = open(dir.path());
    create_indexed_source(&db, "Src");
    enable_pitr(&db, "Src");
    let mut rng = Lcg(7);
    let mut model = BTreeMap::new();
    let mut instants: Vec<(f64, BTreeMap<String, Value>)> = Vec::new();
    for round in 0..6u64 {
        write_round(&db, round, &mut rng, &mut model);
        // A clock entry after this round's writes, then the instant, then the next round.
        std::thread::sleep(Duration::from_millis(40));
        instants.push((now_seconds(), model.clone()));
        std::thread::sleep(Duration::from_millis(40));
        let tree = db.table("Src").unwrap().tree;
        match round % 3 {
            0 => db.lsm().flush_all().unwrap(),
            1 => {
                db.lsm().flush_all().unwrap();
                db.lsm().compact_tree(tree).unwrap();
            }
            _ => db.lsm().compact_until_idle().unwrap(),
        }
        if round == 3 {
            // The history and the clock survive a reopen.
            drop(db);
            db = open(dir.path());
        }
    }
    for (i, (time, expected)) in instants.iter().enumerate() {
        let target = format!("At{i}");
        let restored = restore_at(&db, &target, *time).unwrap();
        let summary = &restored["TableDescription"]["RestoreSummary"];
        assert_eq!(
            summary["SourceTableArn"],
            "arn:aws:dynamodb:ddblocal:000000000000:table/Src"
        );
        assert!((summary["RestoreDateTime"].as_f64().unwrap() - time).abs() < 0.002);
        assert_restored(&db, &target, expected);
    }
    // The latest restorable time is the table now.
    call(
        &db,
        "RestoreTableToPointInTime",
        json!({"SourceTableName": "Src", "TargetTableName": "Latest",
               "UseLatestRestorableTime": true}),
    );
    assert_restored(&db, "Latest", &model);
    // The restored tables carry no point-in-time recovery of their own, and are whole
    // tables: sound, and still there after a reopen.
    let described = call(
        &db,
        "DescribeContinuousBackups",
        json!({"TableName": "At0"}),
    );
    assert_eq!(
        described["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
            ["PointInTimeRecoveryStatus"],
        "DISABLED"
    );
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    drop(db);
    let db = open(dir.path());
    assert_eq!(&scan(&db, "At2"), &instants[2].1);
    let at2 = call(&db, "DescribeTable", json!({"TableName": "At2"}));
    assert_eq!(
        at2["Table"]["ItemCount"].as_u64().unwrap(),
        instants[2].1.len() as u64
    );
}

/// Bytes of SSTables of table `name`'s tree.
fn tree_bytes(db: &Database, name: &str) -> u64 {
    let tree = db.table(name).unwrap().tree;
    db.lsm().flush_all().unwrap();
    db.lsm().compact_tree(tree).unwrap();
    db.lsm().tree_stats(tree).unwrap().level_bytes.iter().sum()
}

/// Overwrites the same 50 items `rounds` times, 2 KB each.
fn overwrite(db: &Database, table: &str, rounds: u64) {
    for round in 0..rounds {
        for i in 0..50 {
            call(
                db,
                "PutItem",
                json!({"TableName": table, "Item": {
                    "pk": {"S": format!("k{i}")}, "sk": {"N": "0"},
                    "round": {"N": round.to_string()}, "pad": {"S": "y".repeat(2000)}
                }}),
            );
        }
    }
}

#[test]
fn history_is_kept_for_the_window_and_dropped_after_it() {
    const WINDOW: Duration = Duration::from_millis(400);
    let db = Database::open_in_memory({
        let mut options = options();
        options.backups.pitr_window = Some(WINDOW);
        options
    })
    .unwrap();
    create_indexed_source(&db, "Kept");
    create_indexed_source(&db, "Plain");
    enable_pitr(&db, "Kept");
    overwrite(&db, "Kept", 10);
    overwrite(&db, "Plain", 10);
    let (kept, plain) = (tree_bytes(&db, "Kept"), tree_bytes(&db, "Plain"));
    // Ten versions of each item against one.
    assert!(kept > plain * 5, "kept {kept} bytes, plain {plain}");

    // Once the window has passed the writes, the floor rises past them and the old versions
    // go; the earliest restorable time follows the window.
    std::thread::sleep(WINDOW + Duration::from_millis(300));
    let after = tree_bytes(&db, "Kept");
    assert!(
        after * 2 < plain * 3,
        "after the window {after} bytes, plain {plain}"
    );
    let described = call(
        &db,
        "DescribeContinuousBackups",
        json!({"TableName": "Kept"}),
    );
    let pitr = &described["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"];
    let earliest = pitr["EarliestRestorableDateTime"].as_f64().unwrap();
    assert!(
        earliest >= now_seconds() - WINDOW.as_secs_f64() - 0.1,
        "{described}"
    );
    let (code, _) = error(
        &db,
        "RestoreTableToPointInTime",
        json!({"SourceTableName": "Kept", "TargetTableName": "Old",
               "RestoreDateTime": earliest - 1.0}),
    );
    assert_eq!(code, ErrorCode::InvalidRestoreTimeException);
}

#[test]
fn refusals_have_dynamodb_s_exceptions() {
    let db = Database::open_in_memory(options()).unwrap();
    create_indexed_source(&db, "Src");
    call(
        &db,
        "PutItem",
        json!({"TableName": "Src", "Item": {"pk": {"S": "a"}, "sk": {"N": "1"}}}),
    );
    let now = now_seconds();
    // Point-in-time recovery off.
    assert_eq!(
        error(
            &db,
            "RestoreTableToPointInTime",
            json!({"SourceTableName": "Src", "TargetTableName": "Tgt", "RestoreDateTime": now})
        ),
        (
            ErrorCode::PointInTimeRecoveryUnavailableException,
            "Point in time recovery is not enabled for table 'Src'".to_string()
        )
    );
    let enabled = now_seconds();
    enable_pitr(&db, "Src");
    std::thread::sleep(Duration::from_millis(30));
    // Both times, or neither.
    let choice = (
        ErrorCode::ValidationException,
        "Invalid Request: Either one of RestoreDateTime or UseLatestRestorableTime must be specified, but not both".to_string(),
    );
    assert_eq!(
        error(
            &db,
            "RestoreTableToPointInTime",
            json!({"SourceTableName": "Src", "TargetTableName": "Tgt",
                   "RestoreDateTime": now_seconds(), "UseLatestRestorableTime": true})
        ),
        choice
    );
    assert_eq!(
        error(
            &db,
            "RestoreTableToPointInTime",
            json!({"SourceTableName": "Src", "TargetTableName": "Tgt"})
        ),
        choice
    );
    // Outside the window: before enabling, and in the future.
    for time in [enabled - 5.0, now_seconds() + 60.0] {
        let (code, message) = error(
            &db,
            "RestoreTableToPointInTime",
            json!({"SourceTableName": "Src", "TargetTableName": "Tgt", "RestoreDateTime": time}),
        );
        assert_eq!(code, ErrorCode::InvalidRestoreTimeException, "{message}");
    }
    // An existing target; a missing source; neither source member.
    create_indexed_source(&db, "Taken");
    assert_eq!(
        error(
            &db,
            "RestoreTableToPointInTime",
            json!({"SourceTableName": "Src", "TargetTableName": "Taken",
                   "UseLatestRestorableTime": true})
        ),
        (
            ErrorCode::TableAlreadyExistsException,
            "Table already exists: Taken".to_string()
        )
    );
    assert_eq!(
        error(
            &db,
            "RestoreTableToPointInTime",
            json!({"SourceTableName": "Missing", "TargetTableName": "Tgt",
                   "UseLatestRestorableTime": true})
        ),
        (
            ErrorCode::TableNotFoundException,
            "Table not found: Missing".to_string()
        )
    );
    let (code, _) = error(
        &db,
        "RestoreTableToPointInTime",
        json!({"TargetTableName": "Tgt", "UseLatestRestorableTime": true}),
    );
    assert_eq!(code, ErrorCode::ValidationException);
    // Nothing was created by any of them.
    assert_eq!(
        call(&db, "ListTables", json!({}))["TableNames"],
        json!(["Src", "Taken"])
    );
    // The source named by ARN, with an override.
    let restored = call(
        &db,
        "RestoreTableToPointInTime",
        json!({"SourceTableArn": "arn:aws:dynamodb:ddblocal:000000000000:table/Src",
               "TargetTableName": "Tgt", "UseLatestRestorableTime": true,
               "BillingModeOverride": "PROVISIONED",
               "ProvisionedThroughputOverride": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 4}}),
    );
    assert_eq!(
        restored["TableDescription"]["ProvisionedThroughput"]["ReadCapacityUnits"],
        3
    );
    wait_for_indexes(&db, "Tgt");
    assert_eq!(scan(&db, "Tgt"), scan(&db, "Src"));
}
