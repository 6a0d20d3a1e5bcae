//! End-to-end: an export through the official AWS SDK for Rust against `shoal serve
//! --export-dir DIR`: ExportTableToPointInTime answers IN_PROGRESS, DescribeExport is polled
//! until COMPLETED, ListExports lists it, and the files under DIR are DynamoDB's export
//! layout holding the table's items. The SDK also parses Shoal's export errors as its own
//! typed exceptions, PointInTimeRecoveryUnavailableException for a table without it among
//! them.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, ExportStatus};
use serde_json::Value;

use crate::sdk_server;
use sdk_server::{create_pk_table, Server};

const ITEMS: usize = 120;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_poll_list_and_read_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let exports = dir.path().join("exports");
    std::fs::create_dir_all(exports.join("my-bucket")).unwrap();
    let server = Server::start(&data, &["--export-dir", exports.to_str().unwrap()]);
    let client = server.client();

    let created = create_pk_table(&client, "Music").await;
    let table_arn = created
        .table_description()
        .unwrap()
        .table_arn()
        .unwrap()
        .to_string();
    for i in 0..ITEMS {
        client
            .put_item()
            .table_name("Music")
            .item("pk", AttributeValue::S(format!("song{i}")))
            .item("plays", AttributeValue::N(i.to_string()))
            .send()
            .await
            .unwrap();
    }

    // As on AWS, only a table with point-in-time recovery is exported.
    let refused = client
        .export_table_to_point_in_time()
        .table_arn(&table_arn)
        .s3_bucket("my-bucket")
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(
        refused.is_point_in_time_recovery_unavailable_exception(),
        "{refused:?}"
    );
    client
        .update_continuous_backups()
        .table_name("Music")
        .point_in_time_recovery_specification(
            aws_sdk_dynamodb::types::PointInTimeRecoverySpecification::builder()
                .point_in_time_recovery_enabled(true)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();

    let started = client
        .export_table_to_point_in_time()
        .table_arn(&table_arn)
        .s3_bucket("my-bucket")
        .s3_prefix("backups/music")
        .send()
        .await
        .unwrap();
    let description = started.export_description().unwrap();
    assert_eq!(description.export_status(), Some(&ExportStatus::InProgress));
    let export_arn = description.export_arn().unwrap().to_string();
    assert!(
        export_arn.starts_with(&format!("{table_arn}/export/")),
        "{export_arn}"
    );

    let deadline = Instant::now() + Duration::from_secs(60);
    let completed = loop {
        let described = client
            .describe_export()
            .export_arn(&export_arn)
            .send()
            .await
            .unwrap();
        let description = described.export_description().unwrap().clone();
        if description.export_status() != Some(&ExportStatus::InProgress) {
            break description;
        }
        assert!(Instant::now() < deadline, "the export never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(completed.export_status(), Some(&ExportStatus::Completed));
    assert_eq!(completed.item_count(), Some(ITEMS as i64));
    assert!(completed.end_time().is_some());

    let listed = client
        .list_exports()
        .table_arn(&table_arn)
        .send()
        .await
        .unwrap();
    let summaries = listed.export_summaries();
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].export_arn(), Some(export_arn.as_str()));
    assert_eq!(summaries[0].export_status(), Some(&ExportStatus::Completed));

    // The files: the summary, the manifest of data files, the items.
    let bucket = exports.join("my-bucket");
    let manifest = completed.export_manifest().unwrap();
    assert!(
        manifest.starts_with("backups/music/AWSDynamoDB/"),
        "{manifest}"
    );
    let summary: Value =
        serde_json::from_slice(&std::fs::read(bucket.join(manifest)).unwrap()).unwrap();
    assert_eq!(summary["exportArn"], export_arn);
    assert_eq!(summary["itemCount"], ITEMS as u64);
    let files =
        std::fs::read_to_string(bucket.join(summary["manifestFilesS3Key"].as_str().unwrap()))
            .unwrap();
    let mut songs = Vec::new();
    for line in files.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        let gz =
            std::fs::File::open(bucket.join(entry["dataFileS3Key"].as_str().unwrap())).unwrap();
        for line in BufReader::new(flate2::read::GzDecoder::new(gz)).lines() {
            let line: Value = serde_json::from_str(&line.unwrap()).unwrap();
            let pk = line["Item"]["pk"]["S"].as_str().unwrap().to_string();
            let plays = line["Item"]["plays"]["N"].as_str().unwrap().to_string();
            assert_eq!(pk, format!("song{plays}"));
            songs.push(pk);
        }
    }
    songs.sort();
    let mut expected: Vec<String> = (0..ITEMS).map(|i| format!("song{i}")).collect();
    expected.sort();
    assert_eq!(songs, expected);

    // Shoal's export errors are the SDK's typed exceptions.
    let missing = client
        .describe_export()
        .export_arn(format!("{table_arn}/export/01700000000000-0000abcd"))
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(missing.is_export_not_found_exception(), "{missing:?}");
    let conflict = {
        let request = || {
            client
                .export_table_to_point_in_time()
                .table_arn(&table_arn)
                .s3_bucket("my-bucket")
                .client_token("same-token")
        };
        request().send().await.unwrap();
        request()
            .s3_prefix("elsewhere")
            .send()
            .await
            .unwrap_err()
            .into_service_error()
    };
    assert!(conflict.is_export_conflict_exception(), "{conflict:?}");
}
