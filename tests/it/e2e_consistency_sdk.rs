//! End-to-end: eventual consistency and transaction conflicts through the official AWS SDK
//! for Rust, against `shoal serve --gsi-lag`, `--eventual-reads` and
//! `--transaction-conflicts` (with `--write-hold-ms` keeping writes in flight). Clients
//! never retry here, so the first answer is the one checked.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeValue, BillingMode, GlobalSecondaryIndex, KeyType, KeysAndAttributes, Projection,
    ProjectionType, Put, TransactGetItem, TransactWriteItem,
};
use aws_sdk_dynamodb::Client;

use crate::sdk_server;
use sdk_server::{definition, key_element, Server};

const LAG_MS: &str = "500";
/// Past the lag, with room for a slow machine.
const PAST_LAG: Duration = Duration::from_millis(900);

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_string())
}

fn item(id: &str, g: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([("id".to_string(), s(id)), ("g".to_string(), s(g))])
}

fn key(id: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([("id".to_string(), s(id))])
}

/// Table `Things` (id S) with GSI `ByG` (g S, ALL).
async fn create_table(client: &Client) {
    let index = GlobalSecondaryIndex::builder()
        .index_name("ByG")
        .key_schema(key_element("g", KeyType::Hash))
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )
        .build()
        .unwrap();
    client
        .create_table()
        .table_name("Things")
        .attribute_definitions(definition("id"))
        .attribute_definitions(definition("g"))
        .key_schema(key_element("id", KeyType::Hash))
        .global_secondary_indexes(index)
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();
}

async fn put(client: &Client, id: &str, g: &str) {
    client
        .put_item()
        .table_name("Things")
        .set_item(Some(item(id, g)))
        .send()
        .await
        .unwrap();
}

async fn gsi_count(client: &Client, g: &str) -> i32 {
    client
        .query()
        .table_name("Things")
        .index_name("ByG")
        .key_condition_expression("g = :g")
        .expression_attribute_values(":g", s(g))
        .send()
        .await
        .unwrap()
        .count()
}

/// `g` of item `id` by GetItem.
async fn get_g(client: &Client, id: &str, consistent: bool) -> Option<String> {
    let response = client
        .get_item()
        .table_name("Things")
        .set_key(Some(key(id)))
        .consistent_read(consistent)
        .send()
        .await
        .unwrap();
    response
        .item()
        .and_then(|item| item.get("g"))
        .and_then(|g| g.as_s().ok())
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gsi_lags_behind_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--gsi-lag", LAG_MS]);
    let client = server.client_without_retries();
    create_table(&client).await;
    put(&client, "1", "a").await;
    assert_eq!(
        gsi_count(&client, "a").await,
        0,
        "the GSI showed a write at once"
    );
    // The table itself is current, even for an eventually consistent read.
    assert_eq!(get_g(&client, "1", false).await, Some("a".into()));
    tokio::time::sleep(PAST_LAG).await;
    assert_eq!(
        gsi_count(&client, "a").await,
        1,
        "the GSI never showed the write"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eventually_consistent_reads_see_the_table_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--eventual-reads", LAG_MS]);
    let client = server.client_without_retries();
    create_table(&client).await;
    put(&client, "1", "old").await;
    tokio::time::sleep(PAST_LAG).await;
    put(&client, "1", "new").await;

    assert_eq!(get_g(&client, "1", false).await, Some("old".into()));
    assert_eq!(get_g(&client, "1", true).await, Some("new".into()));
    let scan_g = |consistent: bool| {
        let client = client.clone();
        async move {
            let response = client
                .scan()
                .table_name("Things")
                .consistent_read(consistent)
                .send()
                .await
                .unwrap();
            response.items()[0]["g"].as_s().unwrap().clone()
        }
    };
    assert_eq!(scan_g(false).await, "old");
    assert_eq!(scan_g(true).await, "new");
    let batch = client
        .batch_get_item()
        .request_items(
            "Things",
            KeysAndAttributes::builder().keys(key("1")).build().unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(batch.responses().unwrap()["Things"][0]["g"], s("old"));

    tokio::time::sleep(PAST_LAG).await;
    assert_eq!(get_g(&client, "1", false).await, Some("new".into()));
}

fn transact_put(id: &str, g: &str) -> TransactWriteItem {
    TransactWriteItem::builder()
        .put(
            Put::builder()
                .table_name("Things")
                .set_item(Some(item(id, g)))
                .build()
                .unwrap(),
        )
        .build()
}

fn transact_get(id: &str) -> TransactGetItem {
    TransactGetItem::builder()
        .get(
            aws_sdk_dynamodb::types::Get::builder()
                .table_name("Things")
                .set_key(Some(key(id)))
                .build()
                .unwrap(),
        )
        .build()
}

/// The time a spawned write is given to reach the server and take its locks, within its
/// `--write-hold-ms 3000`.
const REACH_IN_FLIGHT: Duration = Duration::from_millis(600);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_meeting_a_transaction_in_flight_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &["--transaction-conflicts", "--write-hold-ms", "3000"],
    );
    let client = server.client_without_retries();
    create_table(&client).await;
    put(&client, "1", "before").await;

    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .transact_write_items()
                .transact_items(transact_put("1", "transaction"))
                .transact_items(transact_put("2", "transaction"))
                .send()
                .await
        })
    };
    tokio::time::sleep(REACH_IN_FLIGHT).await;

    // A single write of one of its items.
    let error = client
        .put_item()
        .table_name("Things")
        .set_item(Some(item("1", "single")))
        .send()
        .await
        .unwrap_err();
    let error = error.into_service_error();
    assert!(error.is_transaction_conflict_exception(), "{error:?}");
    assert_eq!(error.message(), Some("Transaction is ongoing for the item"));

    // Another transaction touching one of its items.
    let error = client
        .transact_write_items()
        .transact_items(transact_put("3", "other"))
        .transact_items(transact_put("2", "other"))
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    let codes: Vec<_> = match &error {
        aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(cancelled) => cancelled
            .cancellation_reasons()
            .iter()
            .map(|reason| reason.code().unwrap_or_default().to_string())
            .collect(),
        other => panic!("expected a cancellation, got {other:?}"),
    };
    assert_eq!(codes, ["None", "TransactionConflict"]);

    // A read transaction of an item being written.
    let error = client
        .transact_get_items()
        .transact_items(transact_get("1"))
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert_eq!(error.code(), Some("TransactionCanceledException"));
    assert!(
        error
            .message()
            .unwrap_or_default()
            .contains("[TransactionConflict]"),
        "{error:?}"
    );

    // GetItem never conflicts.
    assert_eq!(get_g(&client, "1", true).await, Some("before".into()));

    in_flight.await.unwrap().unwrap();
    assert_eq!(get_g(&client, "1", true).await, Some("transaction".into()));
    assert_eq!(get_g(&client, "3", true).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_transaction_meeting_a_single_write_in_flight_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &["--transaction-conflicts", "--write-hold-ms", "3000"],
    );
    let client = server.client_without_retries();
    create_table(&client).await;
    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move { put(&client, "1", "single").await })
    };
    tokio::time::sleep(REACH_IN_FLIGHT).await;
    let error = client
        .transact_get_items()
        .transact_items(transact_get("1"))
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert_eq!(error.code(), Some("TransactionCanceledException"));
    in_flight.await.unwrap();
    assert_eq!(get_g(&client, "1", true).await, Some("single".into()));
}
