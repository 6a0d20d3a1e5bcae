//! Out and back in: a table with an LSI and a GSI, items of every attribute type and items
//! near 400 KB, exported (`Database::export_table`) and imported into a new table made from
//! the export's `shoal-table.json` (ImportTable with the LSI extension) is the same table:
//! the same items, the same index contents and counts, and `Database::check` passes.

use std::path::Path;

use serde_json::{json, Value};
use shoal_tables::api::control::DescribeTableResponse;
use shoal_tables::api::import::{ImportTableInput, S3BucketSource, TableCreationParameters};
use shoal_tables::{Database, Durability, Options, StorageOptions, TransferOptions};

fn call(db: &Database, operation: &str, request: Value) -> Value {
    db.execute(operation, request)
        .unwrap_or_else(|e| panic!("{operation}: {e}"))
}

fn item(i: usize) -> Value {
    let mut item = json!({
        "pk": {"S": format!("p{}", i % 37)},
        "sk": {"N": format!("{i}.25")},
        "l": {"S": format!("l{}", i % 11)},
        "g": {"B": base64_of(&[(i % 5) as u8, 0xff])},
        "n": {"N": "-12.5e3"},
        "t": {"BOOL": i.is_multiple_of(3)},
        "z": {"NULL": true},
        "ss": {"SS": ["a", format!("s{i}")]},
        "ns": {"NS": ["-1", "2.5", format!("{i}")]},
        "bs": {"BS": ["AQ==", "Ag=="]},
        "m": {"M": {"inner": {"L": [{"S": "x"}, {"N": "7"}, {"M": {}}]}, "e": {"S": ""}}},
        "unicode": {"S": "ünïcødé ✓ \"quoted\" \\ back\nslash"}
    });
    // A few items near the 400 KB limit (outside the LSI, whose entry would count too).
    if i % 150 == 7 {
        item.as_object_mut().unwrap().remove("l");
        item["big"] = json!({"S": "x".repeat(398_000)});
    }
    item
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Every item of a table, index or not, as JSON text, sorted (sets sorted within).
fn scan(db: &Database, table: &str, index: Option<&str>) -> Vec<String> {
    let mut items = Vec::new();
    let mut start: Option<Value> = None;
    loop {
        let mut request = json!({"TableName": table});
        if let Some(index) = index {
            request["IndexName"] = json!(index);
        }
        if let Some(key) = start.take() {
            request["ExclusiveStartKey"] = key;
        }
        let page = call(db, "Scan", request);
        for item in page["Items"].as_array().unwrap() {
            items.push(sorted_sets(item.clone()).to_string());
        }
        match &page["LastEvaluatedKey"] {
            Value::Null => break,
            key => start = Some(key.clone()),
        }
    }
    items.sort();
    items
}

fn sorted_sets(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(name, value)| match (name.as_str(), value) {
                    ("SS" | "NS" | "BS", Value::Array(mut members)) => {
                        members.sort_by_key(|m| m.to_string());
                        (name, Value::Array(members))
                    }
                    (_, value) => (name, sorted_sets(value)),
                })
                .collect(),
        ),
        Value::Array(values) => Value::Array(values.into_iter().map(sorted_sets).collect()),
        other => other,
    }
}

fn open(dir: &Path, export_dir: &Path) -> Database {
    Database::open(
        dir,
        Options {
            storage: StorageOptions {
                durability: Durability::None,
                ..StorageOptions::default()
            },
            transfer: TransferOptions {
                export_dir: Some(export_dir.to_path_buf()),
            },
            ..Options::default()
        },
    )
    .unwrap()
}

#[test]
fn a_table_exported_and_imported_is_the_same_table() {
    let data = tempfile::tempdir().unwrap();
    let s3 = tempfile::tempdir().unwrap();
    let bucket = s3.path().join("bucket");
    std::fs::create_dir(&bucket).unwrap();
    let db = open(data.path(), s3.path());
    call(
        &db,
        "CreateTable",
        json!({
            "TableName": "Source",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "l", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "B"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                          {"AttributeName": "sk", "KeyType": "RANGE"}],
            "LocalSecondaryIndexes": [{"IndexName": "ByL",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                              {"AttributeName": "l", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["n", "ss"]}}],
            "GlobalSecondaryIndexes": [{"IndexName": "ByG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                              {"AttributeName": "sk", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"}},
                // A multi-attribute key (SPEC-3 §1), sparse where `l` is absent.
                {"IndexName": "ByGL",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                              {"AttributeName": "l", "KeyType": "HASH"},
                              {"AttributeName": "sk", "KeyType": "RANGE"},
                              {"AttributeName": "pk", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
    for i in 0..1_500 {
        call(
            &db,
            "PutItem",
            json!({"TableName": "Source", "Item": item(i)}),
        );
    }
    let export = db.export_table("Source", &bucket, |_| {}).unwrap();
    assert_eq!(export.summary.item_count, 1_500);

    // The new table is made from the schema the export carries.
    let schema: DescribeTableResponse =
        serde_json::from_slice(&std::fs::read(export.dir.join("shoal-table.json")).unwrap())
            .unwrap();
    let table = schema.table;
    let gsis = table.global_secondary_indexes.clone().map(|indexes| {
        indexes
            .into_iter()
            .map(|index| {
                serde_json::from_value(json!({
                    "IndexName": index.index_name,
                    "KeySchema": index.key_schema,
                    "Projection": index.projection,
                }))
                .unwrap()
            })
            .collect()
    });
    let lsis = table.local_secondary_indexes.clone().map(|indexes| {
        indexes
            .into_iter()
            .map(|index| {
                serde_json::from_value(json!({
                    "IndexName": index.index_name,
                    "KeySchema": index.key_schema,
                    "Projection": index.projection,
                }))
                .unwrap()
            })
            .collect()
    });
    let key_prefix = format!(
        "{}data/",
        export
            .summary
            .manifest_files_s3_key
            .trim_end_matches("manifest-files.json")
    );
    let imported = db
        .import_table_and_wait(
            ImportTableInput {
                s3_bucket_source: Some(S3BucketSource {
                    s3_bucket: Some("bucket".into()),
                    s3_key_prefix: Some(key_prefix),
                    ..Default::default()
                }),
                input_format: Some("DYNAMODB_JSON".into()),
                input_compression_type: Some("GZIP".into()),
                table_creation_parameters: Some(TableCreationParameters {
                    table_name: Some("Copy".into()),
                    attribute_definitions: table.attribute_definitions.clone(),
                    key_schema: table.key_schema.clone(),
                    billing_mode: Some("PAY_PER_REQUEST".into()),
                    global_secondary_indexes: gsis,
                    local_secondary_indexes: lsis,
                    ..Default::default()
                }),
                ..Default::default()
            },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(imported.import_status, "COMPLETED");
    assert_eq!(imported.imported_item_count, 1_500);

    assert_eq!(scan(&db, "Source", None), scan(&db, "Copy", None));
    assert_eq!(
        scan(&db, "Source", Some("ByL")),
        scan(&db, "Copy", Some("ByL"))
    );
    assert_eq!(
        scan(&db, "Source", Some("ByG")),
        scan(&db, "Copy", Some("ByG"))
    );
    let by_gl = scan(&db, "Source", Some("ByGL"));
    assert_eq!(by_gl.len(), 1_500 - 10, "items without `l` are not indexed");
    assert_eq!(by_gl, scan(&db, "Copy", Some("ByGL")));
    let describe =
        |name: &str| call(&db, "DescribeTable", json!({"TableName": name}))["Table"].clone();
    let (source, copy) = (describe("Source"), describe("Copy"));
    assert_eq!(source["ItemCount"], copy["ItemCount"]);
    assert_eq!(source["TableSizeBytes"], copy["TableSizeBytes"]);
    assert_eq!(
        source["LocalSecondaryIndexes"][0]["ItemCount"],
        copy["LocalSecondaryIndexes"][0]["ItemCount"]
    );
    assert_eq!(
        source["GlobalSecondaryIndexes"][0]["IndexSizeBytes"],
        copy["GlobalSecondaryIndexes"][0]["IndexSizeBytes"]
    );
    drop(db);
    let db = open(data.path(), s3.path());
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert_eq!(report.tables, 2);
    assert_eq!(scan(&db, "Source", None), scan(&db, "Copy", None));
}
