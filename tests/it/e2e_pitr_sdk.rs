//! End-to-end: point-in-time recovery through the official AWS SDK for Rust against `shoal
//! serve`: UpdateContinuousBackups → writes → RestoreTableToPointInTime → Scan, across a
//! restart of the server, the exceptions the SDK maps (SPEC-2 §6.2), and the SYSTEM backup
//! DeleteTable leaves.

use std::time::{Duration, SystemTime};

use aws_sdk_dynamodb::primitives::DateTime;
use aws_sdk_dynamodb::types::{
    AttributeValue, BackupType, BackupTypeFilter, ContinuousBackupsStatus,
    PointInTimeRecoverySpecification, PointInTimeRecoveryStatus,
};

use crate::sdk_server;
use sdk_server::{create_pk_table, Server};

async fn keys(client: &aws_sdk_dynamodb::Client, table: &str) -> Vec<String> {
    let scanned = client.scan().table_name(table).send().await.unwrap();
    let mut keys: Vec<String> = scanned
        .items()
        .iter()
        .map(|item| item["pk"].as_s().unwrap().clone())
        .collect();
    keys.sort();
    keys
}

async fn put(client: &aws_sdk_dynamodb::Client, pk: &str) {
    client
        .put_item()
        .table_name("Orders")
        .item("pk", AttributeValue::S(pk.into()))
        .send()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enable_write_restore_to_a_past_second_and_scan() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--pitr-clock-ms", "20"];
    let server = Server::start(dir.path(), &flags);
    let client = server.client();
    create_pk_table(&client, "Orders").await;

    let unavailable = client
        .restore_table_to_point_in_time()
        .source_table_name("Orders")
        .target_table_name("Restored")
        .use_latest_restorable_time(true)
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert_eq!(
        unavailable.meta().code(),
        Some("PointInTimeRecoveryUnavailableException")
    );

    let enabled = client
        .update_continuous_backups()
        .table_name("Orders")
        .point_in_time_recovery_specification(
            PointInTimeRecoverySpecification::builder()
                .point_in_time_recovery_enabled(true)
                .recovery_period_in_days(7)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let description = enabled.continuous_backups_description().unwrap();
    assert_eq!(
        description.continuous_backups_status(),
        &ContinuousBackupsStatus::Enabled
    );
    let pitr = description.point_in_time_recovery_description().unwrap();
    assert_eq!(
        pitr.point_in_time_recovery_status(),
        Some(&PointInTimeRecoveryStatus::Enabled)
    );
    assert_eq!(pitr.recovery_period_in_days(), Some(7));
    assert!(pitr.earliest_restorable_date_time().is_some());

    for pk in ["a", "b", "c"] {
        put(&client, pk).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let then = SystemTime::now();
    tokio::time::sleep(Duration::from_millis(200)).await;
    client
        .delete_item()
        .table_name("Orders")
        .key("pk", AttributeValue::S("a".into()))
        .send()
        .await
        .unwrap();
    put(&client, "d").await;

    // The history and the clock survive a restart of the server.
    drop(server);
    let server = Server::start(dir.path(), &flags);
    let client = server.client();

    let restored = client
        .restore_table_to_point_in_time()
        .source_table_name("Orders")
        .target_table_name("OrdersThen")
        .restore_date_time(DateTime::from(then))
        .send()
        .await
        .unwrap();
    let summary = restored
        .table_description()
        .unwrap()
        .restore_summary()
        .unwrap();
    assert!(summary
        .source_table_arn()
        .unwrap()
        .ends_with(":table/Orders"));
    assert_eq!(keys(&client, "OrdersThen").await, ["a", "b", "c"]);
    assert_eq!(keys(&client, "Orders").await, ["b", "c", "d"]);

    let latest = client
        .restore_table_to_point_in_time()
        .source_table_name("Orders")
        .target_table_name("OrdersNow")
        .use_latest_restorable_time(true)
        .send()
        .await
        .unwrap();
    assert!(latest.table_description().is_some());
    assert_eq!(keys(&client, "OrdersNow").await, ["b", "c", "d"]);

    let too_early = client
        .restore_table_to_point_in_time()
        .source_table_name("Orders")
        .target_table_name("Never")
        .restore_date_time(DateTime::from_secs(1_000_000_000))
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert_eq!(too_early.meta().code(), Some("InvalidRestoreTimeException"));
    let taken = client
        .restore_table_to_point_in_time()
        .source_table_name("Orders")
        .target_table_name("OrdersNow")
        .use_latest_restorable_time(true)
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert_eq!(taken.meta().code(), Some("TableAlreadyExistsException"));

    // Deleting it leaves a SYSTEM backup of its last state, kept 35 days.
    client
        .delete_table()
        .table_name("Orders")
        .send()
        .await
        .unwrap();
    let system = client
        .list_backups()
        .backup_type(BackupTypeFilter::System)
        .send()
        .await
        .unwrap();
    let [backup] = system.backup_summaries() else {
        panic!("one system backup: {system:?}");
    };
    assert_eq!(backup.backup_type(), Some(&BackupType::System));
    assert_eq!(backup.backup_name(), Some("Orders$DeletedTableBackup"));
    let kept = backup.backup_expiry_date_time().unwrap().secs()
        - backup.backup_creation_date_time().unwrap().secs();
    assert_eq!(kept, 35 * 24 * 3600);
    client
        .restore_table_from_backup()
        .backup_arn(backup.backup_arn().unwrap())
        .target_table_name("OrdersAgain")
        .send()
        .await
        .unwrap();
    assert_eq!(keys(&client, "OrdersAgain").await, ["b", "c", "d"]);
}
