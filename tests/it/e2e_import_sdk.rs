//! End-to-end: ImportTable through the official AWS SDK for Rust against `shoal serve
//! --export-dir DIR`: the import starts IN_PROGRESS, DescribeImport is polled until it is
//! COMPLETED, ListImports lists it, and a Scan reads the imported items.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{
    AttributeValue, BillingMode, ImportStatus, InputCompressionType, InputFormat, KeyType,
    S3BucketSource, TableCreationParameters,
};

use crate::sdk_server;
use sdk_server::{definition, key_element, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_table_then_describe_import_until_completed_then_scan() {
    let data = tempfile::tempdir().unwrap();
    let exports = tempfile::tempdir().unwrap();
    let objects = exports.path().join("my-bucket").join("export").join("data");
    std::fs::create_dir_all(&objects).unwrap();
    let lines: String = (0..250)
        .map(|n| {
            format!("{{\"Item\":{{\"pk\":{{\"S\":\"item-{n}\"}},\"n\":{{\"N\":\"{n}\"}}}}}}\n")
        })
        .collect();
    std::fs::write(objects.join("part-0.json"), lines).unwrap();

    let export_dir = exports.path().to_str().unwrap();
    let server = Server::start(data.path(), &["--export-dir", export_dir]);
    let client = server.client();
    let started = client
        .import_table()
        .s3_bucket_source(
            S3BucketSource::builder()
                .s3_bucket("my-bucket")
                .s3_key_prefix("export/")
                .build()
                .unwrap(),
        )
        .input_format(InputFormat::DynamodbJson)
        .input_compression_type(InputCompressionType::None)
        .table_creation_parameters(
            TableCreationParameters::builder()
                .table_name("Imported")
                .attribute_definitions(definition("pk"))
                .key_schema(key_element("pk", KeyType::Hash))
                .billing_mode(BillingMode::PayPerRequest)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let description = started.import_table_description().unwrap();
    assert_eq!(description.import_status(), Some(&ImportStatus::InProgress));
    let arn = description.import_arn().unwrap().to_string();

    let deadline = Instant::now() + Duration::from_secs(30);
    let finished = loop {
        let now = client
            .describe_import()
            .import_arn(&arn)
            .send()
            .await
            .unwrap();
        let description = now.import_table_description().unwrap().clone();
        if description.import_status() != Some(&ImportStatus::InProgress) {
            break description;
        }
        assert!(Instant::now() < deadline, "the import did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(finished.import_status(), Some(&ImportStatus::Completed));
    assert_eq!(finished.imported_item_count(), 250);
    assert_eq!(finished.processed_item_count(), 250);
    assert_eq!(finished.error_count(), 0);

    let listed = client.list_imports().send().await.unwrap();
    assert_eq!(listed.import_summary_list().len(), 1);
    assert_eq!(
        listed.import_summary_list()[0].import_arn(),
        Some(arn.as_str())
    );

    let scanned = client.scan().table_name("Imported").send().await.unwrap();
    assert_eq!(scanned.count(), 250);
    assert!(scanned.items().iter().any(|item| {
        item.get("pk") == Some(&AttributeValue::S("item-7".into()))
            && item.get("n") == Some(&AttributeValue::N("7".into()))
    }));
}
