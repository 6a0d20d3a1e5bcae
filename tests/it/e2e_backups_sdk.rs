//! End-to-end: on-demand backups through the official AWS SDK for Rust against `shoal
//! serve`: CreateBackup → ListBackups → RestoreTableFromBackup → DescribeBackup →
//! DeleteBackup, and the exceptions the SDK maps (SPEC-2 §6.1).

use aws_sdk_dynamodb::types::{AttributeValue, BackupStatus};

use crate::sdk_server;
use sdk_server::{create_pk_table, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_list_restore_describe_delete() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();

    create_pk_table(&client, "Music").await;
    for i in 0..20 {
        client
            .put_item()
            .table_name("Music")
            .item("pk", AttributeValue::S(format!("song-{i}")))
            .item("n", AttributeValue::N(i.to_string()))
            .send()
            .await
            .unwrap();
    }

    let created = client
        .create_backup()
        .table_name("Music")
        .backup_name("nightly")
        .send()
        .await
        .unwrap();
    let details = created.backup_details().unwrap();
    let arn = details.backup_arn().to_string();
    assert!(arn.contains(":table/Music/backup/"), "{arn}");
    assert_eq!(details.backup_name(), "nightly");
    assert_eq!(details.backup_status(), &BackupStatus::Available);

    // A write after the backup is not restored.
    client
        .put_item()
        .table_name("Music")
        .item("pk", AttributeValue::S("later".into()))
        .send()
        .await
        .unwrap();

    let listed = client
        .list_backups()
        .table_name("Music")
        .send()
        .await
        .unwrap();
    let summaries = listed.backup_summaries();
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].backup_arn(), Some(arn.as_str()));
    assert_eq!(summaries[0].table_name(), Some("Music"));

    let restored = client
        .restore_table_from_backup()
        .target_table_name("MusicCopy")
        .backup_arn(&arn)
        .send()
        .await
        .unwrap();
    let table = restored.table_description().unwrap();
    let summary = table.restore_summary().unwrap();
    assert_eq!(summary.source_backup_arn(), Some(arn.as_str()));
    assert!(!summary.restore_in_progress());
    let copy = client.scan().table_name("MusicCopy").send().await.unwrap();
    assert_eq!(copy.count(), 20);

    let described = client
        .describe_backup()
        .backup_arn(&arn)
        .send()
        .await
        .unwrap();
    let description = described.backup_description().unwrap();
    let source = description.source_table_details().unwrap();
    assert_eq!(source.table_name(), "Music");
    assert_eq!(source.item_count(), Some(20));

    let deleted = client
        .delete_backup()
        .backup_arn(&arn)
        .send()
        .await
        .unwrap();
    assert_eq!(
        deleted
            .backup_description()
            .unwrap()
            .backup_details()
            .unwrap()
            .backup_status(),
        &BackupStatus::Deleted
    );

    // The exceptions, as the SDK names them.
    let gone = client
        .describe_backup()
        .backup_arn(&arn)
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(gone.is_backup_not_found_exception(), "{gone:?}");
    let invalid = client
        .describe_backup()
        .backup_arn("arn:aws:dynamodb:us-east-1:000000000000:table/Music/not-a-backup")
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert_eq!(invalid.meta().code(), Some("ValidationException"));
    assert_eq!(invalid.meta().message(), Some("Invalid Backup ARN"));
    let second = client
        .create_backup()
        .table_name("Music")
        .backup_name("again")
        .send()
        .await
        .unwrap();
    let exists = client
        .restore_table_from_backup()
        .target_table_name("Music")
        .backup_arn(second.backup_details().unwrap().backup_arn())
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(exists.is_table_already_exists_exception(), "{exists:?}");
    let missing = client
        .create_backup()
        .table_name("Nowhere")
        .backup_name("none")
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(missing.is_table_not_found_exception(), "{missing:?}");
}
