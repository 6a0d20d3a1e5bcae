//! End-to-end: table settings through the official AWS SDK for Rust against `shoal serve
//! --transient-status-seconds 1`: the SDK's waiters (`wait_until_table_exists`,
//! `wait_until_table_not_exists`) see CREATING and DELETING turn into ACTIVE and gone, and a
//! billing mode switch with GSI throughput round-trips. (The waiters poll every 20 seconds:
//! this test takes about 40.)

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::types::{
    BillingMode, GlobalSecondaryIndex, GlobalSecondaryIndexUpdate, KeyType, Projection,
    ProjectionType, ProvisionedThroughput, TableStatus, UpdateGlobalSecondaryIndexAction,
};

use crate::sdk_server;
use sdk_server::{definition, key_element, Server};

fn throughput(read: i64, write: i64) -> ProvisionedThroughput {
    ProvisionedThroughput::builder()
        .read_capacity_units(read)
        .write_capacity_units(write)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_and_billing_mode_switches() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--transient-status-seconds", "1"]);
    let client = server.client();

    let created = client
        .create_table()
        .table_name("Settings")
        .attribute_definitions(definition("pk"))
        .attribute_definitions(definition("g"))
        .key_schema(key_element("pk", KeyType::Hash))
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name("ByG")
                .key_schema(key_element("g", KeyType::Hash))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::KeysOnly)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();
    assert_eq!(
        created.table_description().unwrap().table_status(),
        Some(&TableStatus::Creating)
    );
    let started = Instant::now();
    let waited = client
        .wait_until_table_exists()
        .table_name("Settings")
        .wait(Duration::from_secs(60))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(
        waited.as_result().unwrap().table().unwrap().table_status(),
        Some(&TableStatus::Active)
    );

    // On demand → provisioned, the GSI's throughput in the same request.
    let updated = client
        .update_table()
        .table_name("Settings")
        .billing_mode(BillingMode::Provisioned)
        .provisioned_throughput(throughput(4, 6))
        .global_secondary_index_updates(
            GlobalSecondaryIndexUpdate::builder()
                .update(
                    UpdateGlobalSecondaryIndexAction::builder()
                        .index_name("ByG")
                        .provisioned_throughput(throughput(2, 3))
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    let table = updated.table_description().unwrap();
    assert_eq!(table.table_status(), Some(&TableStatus::Updating));
    let units = table.provisioned_throughput().unwrap();
    assert_eq!(
        (units.read_capacity_units(), units.write_capacity_units()),
        (Some(4), Some(6))
    );
    // (The SDK's waiters poll every 20 seconds: only the first and last transitions use them.)
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // A decrease shows in the history.
    client
        .update_table()
        .table_name("Settings")
        .provisioned_throughput(throughput(1, 6))
        .send()
        .await
        .unwrap();
    let described = client
        .describe_table()
        .table_name("Settings")
        .send()
        .await
        .unwrap();
    let units = described.table().unwrap().provisioned_throughput().unwrap();
    assert_eq!(units.number_of_decreases_today(), Some(1));
    assert!(units.last_decrease_date_time().is_some());
    let gsi = &described.table().unwrap().global_secondary_indexes()[0];
    assert_eq!(
        gsi.provisioned_throughput().unwrap().write_capacity_units(),
        Some(3)
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // DELETING until the delay has passed.
    let deleted = client
        .delete_table()
        .table_name("Settings")
        .send()
        .await
        .unwrap();
    assert_eq!(
        deleted.table_description().unwrap().table_status(),
        Some(&TableStatus::Deleting)
    );
    let listed = client.list_tables().send().await.unwrap();
    assert_eq!(listed.table_names(), ["Settings".to_string()]);
    client
        .wait_until_table_not_exists()
        .table_name("Settings")
        .wait(Duration::from_secs(60))
        .await
        .unwrap();
    let listed = client.list_tables().send().await.unwrap();
    assert!(listed.table_names().is_empty());
    server.stop();
}
