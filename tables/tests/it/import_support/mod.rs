//! What the import tests share: input files in DynamoDB's export format, requests, waiting.

#![allow(dead_code)] // Each test file uses a different subset.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};
use shoal_tables::api::import::{ImportTableDescription, ImportTableInput};
use shoal_tables::Database;
use shoal_tables::TransferOptions;

/// `{"Item": …}` lines of DynamoDB's export, one per item.
pub fn export_lines(items: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for item in items {
        serde_json::to_writer(&mut out, &json!({ "Item": item })).unwrap();
        out.push(b'\n');
    }
    out
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Writes object `key` of `bucket` under the export directory `root`.
pub fn put_object(root: &Path, bucket: &str, key: &str, bytes: &[u8]) {
    let path = root.join(bucket).join(key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Table creation parameters: `pk` S hash, `sk` N range, GSI `ByG` on `g` (S), on demand.
pub fn table_parameters(name: &str) -> Value {
    json!({
        "TableName": name,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
            {"AttributeName": "g", "AttributeType": "S"}
        ],
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"}
        ],
        "GlobalSecondaryIndexes": [{
            "IndexName": "ByG",
            "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"}
        }],
        "BillingMode": "PAY_PER_REQUEST"
    })
}

pub fn request(body: Value) -> ImportTableInput {
    serde_json::from_value(body).unwrap()
}

/// A DYNAMODB_JSON import of `bucket`/`prefix` into a new table `name`.
pub fn json_import(name: &str, bucket: &str, prefix: &str, compression: &str) -> ImportTableInput {
    request(json!({
        "S3BucketSource": {"S3Bucket": bucket, "S3KeyPrefix": prefix},
        "InputFormat": "DYNAMODB_JSON",
        "InputCompressionType": compression,
        "TableCreationParameters": table_parameters(name)
    }))
}

/// Runs an import to its end.
pub fn import(db: &Database, request: ImportTableInput) -> ImportTableDescription {
    db.import_table_and_wait(request, &mut |_| {})
        .expect("the import starts")
}

/// Every item of `table`, in scan order.
pub fn scan_all(db: &Database, table: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut start: Option<Value> = None;
    loop {
        let mut body = json!({"TableName": table});
        if let Some(start) = start.take() {
            body["ExclusiveStartKey"] = start;
        }
        let page = db.execute("Scan", body).unwrap();
        items.extend(page["Items"].as_array().unwrap().iter().cloned());
        match page.get("LastEvaluatedKey") {
            Some(key) => start = Some(key.clone()),
            None => return items,
        }
    }
}

/// Items as the model's values, by key (`pk`/`sk`), so numbers and sets compare by value.
pub fn by_key(items: &[Value]) -> std::collections::BTreeMap<String, shoal_model::Item> {
    items
        .iter()
        .map(|item| {
            let item = shoal_model::item_from_json(item).unwrap();
            let key = format!("{:?}/{:?}", item.get("pk"), item.get("sk"));
            (key, item)
        })
        .collect()
}

pub fn assert_sound(db: &Database) {
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}

/// An in-memory database reading imports from `export_dir`.
pub fn database(export_dir: &Path) -> Database {
    Database::open_in_memory(shoal_tables::Options {
        transfer: TransferOptions {
            export_dir: Some(export_dir.to_path_buf()),
        },
        ..shoal_tables::Options::default()
    })
    .unwrap()
}
