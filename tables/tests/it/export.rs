//! ExportTableToPointInTime, DescribeExport and ListExports (SPEC-2 §6.3): the files are
//! DynamoDB's S3 export layout with consistent checksums and counts, and hold exactly the
//! table's items; every refusal and error; records across a reopen; an export a close
//! interrupted is FAILED after the reopen; the embedded synchronous export.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use md5::{Digest, Md5};
use serde_json::{json, Value};
use shoal_model::{item_from_json, ErrorCode, Item};
use shoal_tables::{
    BackupOptions, Database, Durability, ExportProgress, Options, StorageOptions, TransferOptions,
};

use crate::restore_support;
// AWS exports only tables with point-in-time recovery.
use restore_support::enable_pitr;

fn options(export_dir: Option<&Path>) -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::None,
            wal_segment_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        transfer: TransferOptions {
            export_dir: export_dir.map(Path::to_path_buf),
        },
        // Exports at a past ExportTime resolve to within 10 ms.
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

const TABLE_ARN: &str = "arn:aws:dynamodb:ddblocal:000000000000:table/Tbl";

/// T: pk S, sk N, an LSI on `l` and a GSI on `g`; point-in-time recovery on.
fn create_indexed(db: &Database, name: &str) {
    call(
        db,
        "CreateTable",
        json!({
            "TableName": name,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "l", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "LocalSecondaryIndexes": [{
                "IndexName": "ByL",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "l", "KeyType": "RANGE"}
                ],
                "Projection": {"ProjectionType": "ALL"}
            }],
            "GlobalSecondaryIndexes": [{
                "IndexName": "ByG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
    enable_pitr(db, name);
}

/// pk S only; point-in-time recovery on.
fn create_plain(db: &Database, name: &str) {
    call(
        db,
        "CreateTable",
        json!({
            "TableName": name,
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
    enable_pitr(db, name);
}

/// An item of every attribute type.
fn rich_item(i: usize) -> Value {
    json!({
        "pk": {"S": format!("p{}", i % 97)},
        "sk": {"N": format!("{i}")},
        "l": {"S": format!("l{}", i % 13)},
        "g": {"S": format!("g{}", i % 7)},
        "n": {"N": "-12.5e3"},
        "b": {"B": "AAEC/w=="},
        "t": {"BOOL": i.is_multiple_of(2)},
        "z": {"NULL": true},
        "ss": {"SS": ["a", "b", format!("c{i}")]},
        "ns": {"NS": ["-1", "2.5", format!("{i}")]},
        "bs": {"BS": ["AQ==", "Ag=="]},
        "m": {"M": {"inner": {"L": [{"S": "x"}, {"N": "7"}, {"M": {}}]}, "e": {"S": ""}}},
        "list": {"L": [{"BOOL": false}, {"NULL": true}, {"SS": ["q"]}]},
        "unicode": {"S": "ünïcødé ✓ \"quoted\" \\ back\nslash"}
    })
}

/// Puts `items` with BatchWriteItem, 25 at a time; returns them by key.
fn put_all(db: &Database, table: &str, items: Vec<Value>) -> BTreeMap<String, Item> {
    let mut by_key = BTreeMap::new();
    for chunk in items.chunks(25) {
        let requests: Vec<Value> = chunk
            .iter()
            .map(|item| json!({"PutRequest": {"Item": item}}))
            .collect();
        let answer = call(
            db,
            "BatchWriteItem",
            json!({"RequestItems": {table: requests}}),
        );
        assert_eq!(answer["UnprocessedItems"], json!({}));
        for item in chunk {
            let item = item_from_json(item).unwrap();
            by_key.insert(key_of(&item), item);
        }
    }
    by_key
}

fn key_of(item: &Item) -> String {
    format!("{:?}|{:?}", item.get("pk"), item.get("sk"))
}

fn export(db: &Database, request: Value) -> Value {
    call(db, "ExportTableToPointInTime", request)["ExportDescription"].clone()
}

/// Polls DescribeExport until the export is no longer IN_PROGRESS.
fn wait_for_end(db: &Database, arn: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let description =
            call(db, "DescribeExport", json!({"ExportArn": arn}))["ExportDescription"].clone();
        if description["ExportStatus"] != "IN_PROGRESS" {
            return description;
        }
        assert!(Instant::now() < deadline, "export {arn} never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn md5_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(Md5::digest(bytes))
}

/// Reads an export in `bucket` whose summary has key `manifest_key`, checking every
/// checksum and count the layout promises; returns the summary and the items by key.
fn read_export(bucket: &Path, manifest_key: &str) -> (Value, BTreeMap<String, Item>) {
    let summary_path = bucket.join(manifest_key);
    let dir = summary_path.parent().unwrap().to_path_buf();
    assert!(dir.join("_started").exists());
    assert_eq!(std::fs::read(dir.join("_started")).unwrap(), b"");
    let summary_bytes = std::fs::read(&summary_path).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("manifest-summary.md5")).unwrap(),
        md5_base64(&summary_bytes)
    );
    let summary: Value = serde_json::from_slice(&summary_bytes).unwrap();
    let files_key = summary["manifestFilesS3Key"].as_str().unwrap();
    let files_bytes = std::fs::read(bucket.join(files_key)).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("manifest-files.md5")).unwrap(),
        md5_base64(&files_bytes)
    );
    let mut items = BTreeMap::new();
    let mut counted = 0;
    let lines = std::str::from_utf8(&files_bytes).unwrap().lines();
    let mut data_files = 0;
    for line in lines {
        data_files += 1;
        let entry: Value = serde_json::from_str(line).unwrap();
        let key = entry["dataFileS3Key"].as_str().unwrap();
        assert!(key.starts_with(&files_key.replace("manifest-files.json", "data/")));
        assert!(key.ends_with(".json.gz"));
        let gz = std::fs::read(bucket.join(key)).unwrap();
        assert_eq!(entry["md5Checksum"], md5_base64(&gz));
        let hex: String = Md5::digest(&gz)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(entry["etag"], hex);
        let reader = BufReader::new(flate2::read::GzDecoder::new(gz.as_slice()));
        let mut in_file = 0;
        for line in reader.lines() {
            let line: Value = serde_json::from_str(&line.unwrap()).unwrap();
            let object = line.as_object().unwrap();
            assert_eq!(object.len(), 1, "a line holds only Item: {line}");
            let item = item_from_json(&line["Item"]).unwrap();
            assert!(items.insert(key_of(&item), item).is_none(), "an item twice");
            in_file += 1;
        }
        assert_eq!(entry["itemCount"], in_file);
        counted += in_file;
    }
    assert!(data_files >= 1, "at least one data file");
    assert_eq!(summary["itemCount"], counted);
    // Every data file on disk is in the manifest.
    assert_eq!(
        std::fs::read_dir(dir.join("data")).unwrap().count(),
        data_files
    );
    (summary, items)
}

fn table_item_count(db: &Database, table: &str) -> u64 {
    call(db, "DescribeTable", json!({"TableName": table}))["Table"]["ItemCount"]
        .as_u64()
        .unwrap()
}

#[test]
fn an_export_is_dynamodbs_layout_and_holds_exactly_the_items() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("bucket")).unwrap();
    let db = Database::open_in_memory(options(Some(root.path()))).unwrap();
    create_indexed(&db, "Tbl");
    // Enough items for more than one worker, a few near 400 KB.
    let mut items: Vec<Value> = (0..21_000).map(rich_item).collect();
    for i in 0..3 {
        let mut big = rich_item(100_000 + i);
        // Out of the LSI, whose entry would count towards the item's size.
        big.as_object_mut().unwrap().remove("l");
        big["big"] = json!({"S": "x".repeat(398_000)});
        items.push(big);
    }
    let written = put_all(&db, "Tbl", items);

    let started = export(
        &db,
        json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket", "S3Prefix": "some/prefix"}),
    );
    assert_eq!(started["ExportStatus"], "IN_PROGRESS");
    assert!(started.get("ExportType").is_none(), "{started}");
    assert_eq!(started["ExportFormat"], "DYNAMODB_JSON");
    assert!(!started["ClientToken"].as_str().unwrap().is_empty());
    let arn = started["ExportArn"].as_str().unwrap();
    let id = arn.strip_prefix(&format!("{TABLE_ARN}/export/")).unwrap();
    let (digits, hex) = id.split_once('-').unwrap();
    assert!(
        digits.len() == 14 && digits.bytes().all(|b| b.is_ascii_digit()),
        "{id}"
    );
    assert!(
        hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );

    let ended = wait_for_end(&db, arn);
    assert_eq!(ended["ExportStatus"], "COMPLETED", "{ended}");
    let manifest = ended["ExportManifest"].as_str().unwrap();
    assert_eq!(
        manifest,
        format!("some/prefix/AWSDynamoDB/{id}/manifest-summary.json")
    );
    let bucket = root.path().join("bucket");
    let (summary, exported) = read_export(&bucket, manifest);
    assert_eq!(exported.len(), written.len());
    assert_eq!(exported, written);
    assert_eq!(summary["itemCount"], table_item_count(&db, "Tbl"));
    assert_eq!(ended["ItemCount"], summary["itemCount"]);
    let billed: u64 = written
        .values()
        .map(|item| shoal_model::item_size_bytes(item) as u64)
        .sum();
    assert_eq!(ended["BilledSizeBytes"], billed);
    assert_eq!(summary["billedSizeBytes"], billed);
    assert_eq!(summary["version"], "2020-06-30");
    assert_eq!(summary["exportArn"], arn);
    assert_eq!(summary["tableArn"], TABLE_ARN);
    assert_eq!(summary["s3Bucket"], "bucket");
    assert_eq!(summary["s3Prefix"], "some/prefix");
    assert_eq!(summary["s3SseAlgorithm"], "AES256");
    assert_eq!(summary["s3SseKmsKeyId"], Value::Null);
    assert_eq!(summary["outputFormat"], "DYNAMODB_JSON");
    assert_eq!(
        summary["manifestFilesS3Key"],
        format!("some/prefix/AWSDynamoDB/{id}/manifest-files.json")
    );
    let export_time = summary["exportTime"].as_str().unwrap();
    assert!(
        export_time.len() == 24 && export_time.ends_with('Z') && export_time.contains('.'),
        "{export_time}"
    );
    let data_files = std::fs::read_dir(bucket.join(format!("some/prefix/AWSDynamoDB/{id}/data")))
        .unwrap()
        .count();
    assert!(
        data_files >= 2,
        "a parallel export writes a file per worker"
    );
    // The schema rides along for an import that creates the table.
    let schema: Value = serde_json::from_slice(
        &std::fs::read(bucket.join(format!("some/prefix/AWSDynamoDB/{id}/shoal-table.json")))
            .unwrap(),
    )
    .unwrap();
    let table = &schema["Table"];
    assert_eq!(table["TableName"], "Tbl");
    assert_eq!(table["KeySchema"].as_array().unwrap().len(), 2);
    assert_eq!(table["LocalSecondaryIndexes"][0]["IndexName"], "ByL");
    assert_eq!(table["GlobalSecondaryIndexes"][0]["IndexName"], "ByG");
    assert_eq!(
        table["BillingModeSummary"]["BillingMode"],
        "PAY_PER_REQUEST"
    );
}

#[test]
fn an_empty_table_exports_consistent_empty_files() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("b1")).unwrap();
    let db = Database::open_in_memory(options(Some(root.path()))).unwrap();
    create_plain(&db, "Tbl");
    let started = export(&db, json!({"TableArn": TABLE_ARN, "S3Bucket": "b1"}));
    let ended = wait_for_end(&db, started["ExportArn"].as_str().unwrap());
    assert_eq!(ended["ExportStatus"], "COMPLETED", "{ended}");
    assert_eq!(ended["ItemCount"], 0);
    assert_eq!(ended["BilledSizeBytes"], 0);
    let manifest = ended["ExportManifest"].as_str().unwrap();
    assert!(manifest.starts_with("AWSDynamoDB/"), "{manifest}");
    let (summary, items) = read_export(&root.path().join("b1"), manifest);
    assert!(items.is_empty());
    assert_eq!(summary["itemCount"], 0);
    assert_eq!(summary["s3Prefix"], Value::Null);
}

#[test]
fn the_embedded_export_reports_progress_and_writes_the_same_layout() {
    let root = tempfile::tempdir().unwrap();
    let db = Database::open_in_memory(options(None)).unwrap();
    create_indexed(&db, "Tbl");
    let written = put_all(&db, "Tbl", (0..3000).map(rich_item).collect());
    let last = std::sync::Mutex::new(ExportProgress::default());
    let finished = db
        .export_table("Tbl", root.path(), |progress| {
            let mut last = last.lock().unwrap();
            assert!(progress.items >= last.items, "progress only grows");
            *last = progress;
        })
        .unwrap();
    let last = *last.lock().unwrap();
    assert_eq!(last.items, written.len() as u64);
    assert_eq!(last.total_items, written.len() as u64);
    assert_eq!(last.bytes, finished.summary.billed_size_bytes);
    assert!(finished.dir.starts_with(root.path()));
    let (summary, exported) = read_export(root.path(), &finished.manifest_summary_key);
    assert_eq!(exported, written);
    assert_eq!(summary["itemCount"], written.len() as u64);
    // A directory that does not exist is not made.
    let missing = root.path().join("missing");
    let refused = db.export_table("Tbl", &missing, |_| {}).unwrap_err();
    assert_eq!(refused.code, ErrorCode::ValidationException);
    assert!(!missing.exists());
    assert_eq!(
        db.export_table("Nope1", root.path(), |_| {})
            .unwrap_err()
            .code,
        ErrorCode::ResourceNotFoundException
    );
}

#[test]
fn a_missing_bucket_is_accepted_and_the_export_fails_as_s3_does() {
    let root = tempfile::tempdir().unwrap();
    let db = Database::open_in_memory(options(Some(root.path()))).unwrap();
    create_plain(&db, "Tbl");
    let started = export(
        &db,
        json!({"TableArn": TABLE_ARN, "S3Bucket": "no-such-bucket"}),
    );
    assert_eq!(started["ExportStatus"], "IN_PROGRESS");
    let ended = wait_for_end(&db, started["ExportArn"].as_str().unwrap());
    assert_eq!(ended["ExportStatus"], "FAILED");
    assert_eq!(ended["FailureCode"], "S3NoSuchBucket");
    assert!(
        ended["FailureMessage"]
            .as_str()
            .unwrap()
            .contains("bucket does not exist"),
        "{ended}"
    );
    assert!(ended.get("EndTime").is_some());
    assert!(
        !root.path().join("no-such-bucket").exists(),
        "no bucket is made"
    );
}

#[test]
fn refusals_and_member_constraints() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("bucket")).unwrap();
    let db = Database::open_in_memory(options(Some(root.path()))).unwrap();
    create_plain(&db, "Tbl");
    let request = |extra: Value| {
        let mut request = json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket"});
        for (k, v) in extra.as_object().unwrap() {
            request[k] = v.clone();
        }
        request
    };
    let refused = |extra: Value| error(&db, "ExportTableToPointInTime", request(extra));

    for (member, value) in [
        ("ExportFormat", "ION"),
        ("ExportType", "INCREMENTAL_EXPORT"),
        ("S3SseAlgorithm", "KMS"),
    ] {
        let (code, message) = refused(json!({ member: value }));
        assert_eq!(code, ErrorCode::ValidationException);
        assert!(
            message.contains(member) && message.contains(value),
            "{message}"
        );
    }
    assert_eq!(
        refused(json!({"ExportFormat": "XML"})),
        (
            ErrorCode::ValidationException,
            "1 validation error detected: Value 'XML' at 'exportFormat' failed to satisfy constraint: Member must satisfy enum value set: [DYNAMODB_JSON, ION]".to_string()
        )
    );
    assert_eq!(
        refused(json!({"ExportType": ""})).1,
        "1 validation error detected: Value '' at 'exportType' failed to satisfy constraint: Member must satisfy enum value set: [FULL_EXPORT, INCREMENTAL_EXPORT]"
    );
    assert_eq!(
        refused(json!({"S3BucketOwner": "123"})).1,
        "1 validation error detected: Value '123' at 's3BucketOwner' failed to satisfy constraint: Member must satisfy regular expression pattern: [0-9]{12}"
    );
    assert_eq!(
        refused(json!({"S3Prefix": "p".repeat(1025)})).1,
        format!(
            "1 validation error detected: Value '{}' at 's3Prefix' failed to satisfy constraint: Member must have length less than or equal to 1024",
            "p".repeat(1025)
        )
    );
    let (code, message) = refused(json!({"S3Prefix": "a/../../escape"}));
    assert_eq!(code, ErrorCode::ValidationException);
    assert!(message.contains("S3Prefix"), "{message}");
    assert_eq!(
        error(&db, "ExportTableToPointInTime", json!({"TableArn": TABLE_ARN})).1,
        "1 validation error detected: Value null at 's3Bucket' failed to satisfy constraint: Member must not be null"
    );
    assert_eq!(
        error(&db, "ExportTableToPointInTime", json!({"S3Bucket": "bucket"})).1,
        "1 validation error detected: Value null at 'tableArn' failed to satisfy constraint: Member must not be null"
    );
    let (code, message) = error(
        &db,
        "ExportTableToPointInTime",
        json!({"TableArn": "arn:aws:dynamodb:ddblocal:000000000000:table/Missing", "S3Bucket": "bucket"}),
    );
    assert_eq!(code, ErrorCode::TableNotFoundException);
    assert!(
        message.ends_with("not found") || message.contains("not found"),
        "{message}"
    );

    let (code, _) = refused(json!({"ExportTime": -1}));
    assert_eq!(code, ErrorCode::InvalidExportTimeException);
    // Before point-in-time recovery was enabled, or in the future: nothing to read.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for time in [now - 60.0, now + 60.0] {
        let (code, message) = refused(json!({"ExportTime": time}));
        assert_eq!(code, ErrorCode::InvalidExportTimeException, "{message}");
    }
    // A table without point-in-time recovery is not exported, as on AWS.
    call(
        &db,
        "CreateTable",
        json!({"TableName": "NoPitr",
               "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
               "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
               "BillingMode": "PAY_PER_REQUEST"}),
    );
    assert_eq!(
        error(
            &db,
            "ExportTableToPointInTime",
            json!({"TableArn": "arn:aws:dynamodb:ddblocal:000000000000:table/NoPitr", "S3Bucket": "bucket"})
        ),
        (
            ErrorCode::PointInTimeRecoveryUnavailableException,
            "Point in time recovery is not enabled for table 'NoPitr'".to_string()
        )
    );

    // Without a directory standing for S3 nothing is exported.
    let without = Database::open_in_memory(options(None)).unwrap();
    create_plain(&without, "Tbl");
    let (code, message) = error(
        &without,
        "ExportTableToPointInTime",
        json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket"}),
    );
    assert_eq!(code, ErrorCode::ValidationException);
    assert!(message.contains("--export-dir"), "{message}");

    let (code, _) = error(
        &db,
        "DescribeExport",
        json!({"ExportArn": format!("{TABLE_ARN}/export/01700000000000-0000abcd")}),
    );
    assert_eq!(code, ErrorCode::ExportNotFoundException);
}

#[test]
fn client_tokens_make_requests_idempotent_and_conflicts_are_refused() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("bucket")).unwrap();
    let db = Database::open_in_memory(options(Some(root.path()))).unwrap();
    create_plain(&db, "Tbl");
    create_plain(&db, "Other");
    let request = json!({
        "TableArn": TABLE_ARN, "S3Bucket": "bucket", "ClientToken": "tok", "ExportType": "FULL_EXPORT"
    });
    let first = export(&db, request.clone());
    assert_eq!(first["ExportType"], "FULL_EXPORT", "named, so echoed");
    assert_eq!(first["ClientToken"], "tok");
    let again = export(&db, request.clone());
    assert_eq!(again["ExportArn"], first["ExportArn"]);

    let mut changed = request.clone();
    changed["S3Prefix"] = json!("elsewhere");
    let (code, message) = error(&db, "ExportTableToPointInTime", changed);
    assert_eq!(code, ErrorCode::ExportConflictException);
    assert!(message.contains("Duplicate request detected"), "{message}");
    let mut other_table = request.clone();
    other_table["TableArn"] = json!("arn:aws:dynamodb:ddblocal:000000000000:table/Other");
    assert_eq!(
        error(&db, "ExportTableToPointInTime", other_table).0,
        ErrorCode::ExportConflictException
    );

    // Without a token, every request is a new export.
    let a = export(&db, json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket"}));
    let b = export(&db, json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket"}));
    assert_ne!(a["ExportArn"], b["ExportArn"]);
    assert_ne!(a["ClientToken"], b["ClientToken"]);
    for arn in [&first, &a, &b].map(|d| d["ExportArn"].as_str().unwrap().to_string()) {
        assert_eq!(wait_for_end(&db, &arn)["ExportStatus"], "COMPLETED");
    }
    let u = export(
        &db,
        json!({"TableArn": "arn:aws:dynamodb:ddblocal:000000000000:table/Other", "S3Bucket": "bucket"}),
    );
    wait_for_end(&db, u["ExportArn"].as_str().unwrap());

    // ListExports: all of them, by table, a page at a time.
    let all = call(&db, "ListExports", json!({}));
    assert_eq!(all["ExportSummaries"].as_array().unwrap().len(), 4);
    assert!(all.get("NextToken").is_none());
    let of_t = call(&db, "ListExports", json!({"TableArn": TABLE_ARN}));
    let arns: Vec<&Value> = of_t["ExportSummaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["ExportArn"])
        .collect();
    assert_eq!(
        arns,
        [&first["ExportArn"], &a["ExportArn"], &b["ExportArn"]]
    );
    assert_eq!(of_t["ExportSummaries"][0]["ExportType"], "FULL_EXPORT");
    assert_eq!(of_t["ExportSummaries"][0]["ExportStatus"], "COMPLETED");
    assert!(of_t["ExportSummaries"][1].get("ExportType").is_none());
    let mut paged = Vec::new();
    let mut token: Option<Value> = None;
    loop {
        let mut request = json!({"TableArn": TABLE_ARN, "MaxResults": 2});
        if let Some(token) = token.take() {
            request["NextToken"] = token;
        }
        let page = call(&db, "ListExports", request);
        paged.extend(page["ExportSummaries"].as_array().unwrap().iter().cloned());
        match page.get("NextToken") {
            Some(next) => token = Some(next.clone()),
            None => break,
        }
    }
    assert_eq!(paged, of_t["ExportSummaries"].as_array().unwrap().clone());
    for bad in [0, 26] {
        assert_eq!(
            error(&db, "ListExports", json!({"MaxResults": bad})).0,
            ErrorCode::ValidationException
        );
    }
}

fn data_dir() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let exports = root.path().join("exports");
    std::fs::create_dir_all(exports.join("bucket")).unwrap();
    (root, data, exports)
}

#[test]
fn records_survive_a_reopen() {
    let (_root, data, exports) = data_dir();
    let (arn, described, listed) = {
        let db = Database::open(&data, options(Some(&exports))).unwrap();
        create_plain(&db, "Tbl");
        put_all(
            &db,
            "Tbl",
            (0..10)
                .map(|i| json!({"pk": {"S": format!("k{i}")}}))
                .collect(),
        );
        let started = export(&db, json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket"}));
        let arn = started["ExportArn"].as_str().unwrap().to_string();
        let described = wait_for_end(&db, &arn);
        assert_eq!(described["ExportStatus"], "COMPLETED");
        (arn, described, call(&db, "ListExports", json!({})))
    };
    let db = Database::open(&data, options(Some(&exports))).unwrap();
    assert_eq!(
        call(&db, "DescribeExport", json!({"ExportArn": arn}))["ExportDescription"],
        described
    );
    assert_eq!(call(&db, "ListExports", json!({})), listed);
}

#[test]
fn an_export_a_close_interrupted_is_failed_after_the_reopen() {
    let (_root, data, exports) = data_dir();
    let arn = {
        let db = Database::open(&data, options(Some(&exports))).unwrap();
        create_plain(&db, "Tbl");
        let payload = "v".repeat(200);
        put_all(
            &db,
            "Tbl",
            (0..60_000)
                .map(|i| json!({"pk": {"S": format!("k{i}")}, "v": {"S": payload}}))
                .collect(),
        );
        let started = export(&db, json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket"}));
        started["ExportArn"].as_str().unwrap().to_string()
        // Dropped here, while the export runs: the drop stops it.
    };
    let id = arn.rsplit_once("/export/").unwrap().1.to_string();
    let stored_status = |db: &Database| {
        let record: Value =
            serde_json::from_slice(&db.lsm().version().metadata[&format!("export/{id}")]).unwrap();
        record["description"]["ExportStatus"].clone()
    };
    {
        // Opened to be checked (no upkeep), the database reports the export FAILED but
        // changes nothing on disk.
        let checked = Database::open(
            &data,
            Options {
                upkeep: false,
                ..options(Some(&exports))
            },
        )
        .unwrap();
        let described = call(&checked, "DescribeExport", json!({"ExportArn": arn}));
        assert_eq!(described["ExportDescription"]["ExportStatus"], "FAILED");
        assert_eq!(stored_status(&checked), "IN_PROGRESS");
    }
    let db = Database::open(&data, options(Some(&exports))).unwrap();
    assert_eq!(stored_status(&db), "FAILED");
    let described =
        call(&db, "DescribeExport", json!({"ExportArn": arn}))["ExportDescription"].clone();
    assert_eq!(described["ExportStatus"], "FAILED", "{described}");
    assert_eq!(described["FailureCode"], "InternalError");
    assert!(described["FailureMessage"]
        .as_str()
        .unwrap()
        .contains("interrupted"));
    let dir = exports.join("bucket/AWSDynamoDB").join(&id);
    assert!(!dir.join("manifest-summary.json").exists());
    // The failure is recorded: a second reopen says the same.
    drop(db);
    let db = Database::open(&data, options(Some(&exports))).unwrap();
    assert_eq!(
        call(&db, "DescribeExport", json!({"ExportArn": arn}))["ExportDescription"],
        described
    );
}

/// Keys each writer of the point-in-time test overwrites in turn.
const KEYS_PER_WRITER: u64 = 300;

/// What writer `w` has stored after its first `k` writes: write `j` puts `w{w}-{j % 300}`
/// with `n = j`, and moves the item `w{w}-d…` from `d{j-1}` to `d{j}` (delete and put, in one
/// transaction).
fn writer_state(w: u64, k: u64) -> BTreeMap<String, u64> {
    let mut state = BTreeMap::new();
    for j in k.saturating_sub(KEYS_PER_WRITER)..k {
        state.insert(format!("w{w}-{}", j % KEYS_PER_WRITER), j);
    }
    if k > 0 {
        state.insert(format!("w{w}-d{}", k - 1), k - 1);
    }
    state
}

#[test]
fn an_export_while_writes_go_on_is_the_table_at_one_instant() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("bucket")).unwrap();
    let db = Arc::new(Database::open_in_memory(options(Some(root.path()))).unwrap());
    create_plain(&db, "Tbl");
    // Items no writer touches, so that the export takes a while.
    let still = put_all(
        &db,
        "Tbl",
        (0..40_000)
            .map(|i| json!({"pk": {"S": format!("still{i}")}, "v": {"S": "x".repeat(100)}}))
            .collect(),
    );
    const WRITERS: u64 = 2;
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, acked, stop) = (Arc::clone(&db), Arc::clone(&acked), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut j = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let mut items = vec![json!({"Put": {"TableName": "Tbl", "Item": {
                        "pk": {"S": format!("w{w}-{}", j % KEYS_PER_WRITER)}, "n": {"N": j.to_string()}
                    }}}), json!({"Put": {"TableName": "Tbl", "Item": {
                        "pk": {"S": format!("w{w}-d{j}")}, "n": {"N": j.to_string()}
                    }}})];
                    if j > 0 {
                        items.push(json!({"Delete": {"TableName": "Tbl", "Key": {
                            "pk": {"S": format!("w{w}-d{}", j - 1)}
                        }}}));
                    }
                    call(&db, "TransactWriteItems", json!({"TransactItems": items}));
                    j += 1;
                    acked[w as usize].store(j, Ordering::Release);
                }
            })
        })
        .collect();
    while acked.iter().any(|a| a.load(Ordering::Acquire) < 100) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
    let started = export(&db, json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket"}));
    let ended = wait_for_end(&db, started["ExportArn"].as_str().unwrap());
    let after: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    assert_eq!(ended["ExportStatus"], "COMPLETED", "{ended}");
    let (_, exported) = read_export(
        &root.path().join("bucket"),
        ended["ExportManifest"].as_str().unwrap(),
    );

    // Each writer's items are its state after some k of its writes, k at least what was
    // acknowledged before the export began; the untouched items are all there.
    let mut by_writer: BTreeMap<u64, BTreeMap<String, u64>> = BTreeMap::new();
    let mut untouched = 0;
    for item in exported.values() {
        let Some(shoal_model::AttributeValue::S(pk)) = item.get("pk") else {
            panic!("pk is a string");
        };
        if pk.starts_with("still") {
            untouched += 1;
            continue;
        }
        let w: u64 = pk[1..pk.find('-').unwrap()].parse().unwrap();
        let Some(shoal_model::AttributeValue::N(n)) = item.get("n") else {
            panic!("n is a number");
        };
        by_writer
            .entry(w)
            .or_default()
            .insert(pk.clone(), n.to_string().parse().unwrap());
    }
    assert_eq!(untouched, still.len());
    let mut behind = false;
    for w in 0..WRITERS {
        let state = by_writer.remove(&w).unwrap_or_default();
        let k = state.values().max().map_or(0, |newest| newest + 1);
        assert!(
            k >= before[w as usize],
            "writer {w}: {k} < {}",
            before[w as usize]
        );
        assert_eq!(state, writer_state(w, k), "writer {w} is not a prefix");
        behind |= k < after[w as usize];
    }
    assert!(
        behind,
        "writes went on while the export ran, and it has none of the later ones"
    );
}

/// Waits (up to 10 s) until the newest entry of point-in-time recovery's clock holds every
/// write: the entry's own write, which takes the sequence number after the one it records,
/// is the last one made. An entry's value is the sequence number it records, u64
/// big-endian (`backups::pitr_clock`).
fn wait_for_clock_entry_after_every_write(db: &Database) {
    let clock = db
        .lsm()
        .tree_id(shoal_tables::backups::pitr_clock::PITR_CLOCK_TREE_NAME)
        .expect("the clock tree exists");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let newest = db
            .lsm()
            .scan(
                clock,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                shoal_engine::Direction::Reverse,
                None,
                1,
            )
            .unwrap();
        let recorded_seq = newest
            .first()
            .map(|(_, value)| u64::from_be_bytes(value[..8].try_into().unwrap()));
        let visible_seq = db.lsm().visible_seq();
        if recorded_seq.is_some_and(|recorded_seq| recorded_seq + 1 >= visible_seq) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no clock entry after the writes: {recorded_seq:?}, visible {visible_seq}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// An ExportTime in the past exports the table as it was then, from the history
/// point-in-time recovery keeps, though the items have been overwritten and deleted since
/// and the tree flushed and compacted.
#[test]
fn an_export_at_a_past_time_is_the_table_then() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("bucket")).unwrap();
    let db = Database::open_in_memory(options(Some(root.path()))).unwrap();
    create_indexed(&db, "Tbl");
    let then = put_all(&db, "Tbl", (0..300).map(rich_item).collect());
    // Past a clock entry taken after the writes, before the next ones. The upkeep thread
    // takes one every 10 ms, but on a loaded machine it may not run for longer than a fixed
    // sleep (which once let the export miss the last 25 items): wait for that entry.
    wait_for_clock_entry_after_every_write(&db);
    let export_time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    std::thread::sleep(Duration::from_millis(60));
    let mut overwritten: Vec<Value> = (0..300).map(rich_item).collect();
    for item in &mut overwritten {
        item["n"] = json!({"N": "1"});
    }
    put_all(&db, "Tbl", overwritten);
    for i in 0..100 {
        call(
            &db,
            "DeleteItem",
            json!({"TableName": "Tbl", "Key": {"pk": {"S": format!("p{}", i % 97)}, "sk": {"N": i.to_string()}}}),
        );
    }
    // The table tree rewritten whole: only the history point-in-time recovery keeps is left.
    db.lsm().flush_all().unwrap();
    db.lsm()
        .compact_tree(db.table("Tbl").unwrap().tree)
        .unwrap();

    let started = export(
        &db,
        json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket", "ExportTime": export_time}),
    );
    assert_eq!(
        started["ExportTime"].as_f64().unwrap(),
        (export_time * 1000.0).floor() / 1000.0
    );
    let ended = wait_for_end(&db, started["ExportArn"].as_str().unwrap());
    assert_eq!(ended["ExportStatus"], "COMPLETED", "{ended}");
    let (_, exported) = read_export(
        &root.path().join("bucket"),
        ended["ExportManifest"].as_str().unwrap(),
    );
    assert_eq!(exported, then);
    // The current state is different: an export without ExportTime reads it.
    let now = export(&db, json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket"}));
    let ended = wait_for_end(&db, now["ExportArn"].as_str().unwrap());
    let (_, current) = read_export(
        &root.path().join("bucket"),
        ended["ExportManifest"].as_str().unwrap(),
    );
    assert_eq!(current.len(), 200);
    assert_ne!(current, then);
}

#[test]
fn the_export_operations_are_served() {
    for operation in ["ExportTableToPointInTime", "DescribeExport", "ListExports"] {
        assert!(
            shoal_tables::SUPPORTED_OPERATIONS.contains(&operation),
            "{operation}"
        );
    }
}

#[test]
fn a_fifth_export_while_four_run_is_refused() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("bucket")).unwrap();
    let db = Database::open_in_memory(options(Some(root.path()))).unwrap();
    create_plain(&db, "Tbl");
    let payload = "v".repeat(200);
    put_all(
        &db,
        "Tbl",
        (0..40_000)
            .map(|i| json!({"pk": {"S": format!("k{i}")}, "v": {"S": payload}}))
            .collect(),
    );
    let request = json!({"TableArn": TABLE_ARN, "S3Bucket": "bucket"});
    let running: Vec<Value> = (0..4).map(|_| export(&db, request.clone())).collect();
    let (code, message) = error(&db, "ExportTableToPointInTime", request.clone());
    assert_eq!(code, ErrorCode::LimitExceededException, "{message}");
    for started in &running {
        let ended = wait_for_end(&db, started["ExportArn"].as_str().unwrap());
        assert_eq!(ended["ExportStatus"], "COMPLETED");
    }
    // Once they have ended, exports are accepted again.
    let again = export(&db, request);
    assert_eq!(
        wait_for_end(&db, again["ExportArn"].as_str().unwrap())["ExportStatus"],
        "COMPLETED"
    );
}
