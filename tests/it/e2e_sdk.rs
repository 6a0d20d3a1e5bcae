//! End-to-end: `shoal serve` driven by the official AWS SDK for Rust (static dummy
//! credentials, endpoint override), as a DynamoDB user would use it.

use std::process::Command;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeValue, BillingMode, GlobalSecondaryIndex, KeyType, LocalSecondaryIndex, Projection,
    ProjectionType, ReturnConsumedCapacity, Select,
};
use aws_sdk_dynamodb::Client;

use crate::sdk_server;
use sdk_server::{definition, http_get, key_element, Server};

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

fn n(v: &str) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// Thread(ForumName, Subject) with LSI LastPostIndex (INCLUDE Replies) and GSI BySubject
/// (KEYS_ONLY), as in the LSI seed scenario.
async fn create_thread_table(client: &Client) {
    client
        .create_table()
        .table_name("Thread")
        .attribute_definitions(definition("ForumName"))
        .attribute_definitions(definition("Subject"))
        .attribute_definitions(definition("LastPostDateTime"))
        .key_schema(key_element("ForumName", KeyType::Hash))
        .key_schema(key_element("Subject", KeyType::Range))
        .local_secondary_indexes(
            LocalSecondaryIndex::builder()
                .index_name("LastPostIndex")
                .key_schema(key_element("ForumName", KeyType::Hash))
                .key_schema(key_element("LastPostDateTime", KeyType::Range))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::Include)
                        .non_key_attributes("Replies")
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name("BySubject")
                .key_schema(key_element("Subject", KeyType::Hash))
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
        .expect("create table");
}

async fn put_post(client: &Client, subject: &str, last_post: &str, replies: &str) {
    client
        .put_item()
        .table_name("Thread")
        .item("ForumName", s("S3"))
        .item("Subject", s(subject))
        .item("LastPostDateTime", s(last_post))
        .item("Replies", n(replies))
        .item("Tags", AttributeValue::Ss(vec!["t1".into(), "t2".into()]))
        .send()
        .await
        .expect("put item");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdk_drives_every_core_operation() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();

    create_thread_table(&client).await;
    let tables = client.list_tables().send().await.unwrap();
    assert_eq!(tables.table_names(), ["Thread".to_string()]);
    let described = client
        .describe_table()
        .table_name("Thread")
        .send()
        .await
        .unwrap();
    let table = described.table().unwrap();
    assert_eq!(table.local_secondary_indexes().len(), 1);
    assert_eq!(
        table.global_secondary_indexes()[0]
            .index_status()
            .map(|s| s.as_str()),
        Some("ACTIVE")
    );

    put_post(&client, "aaa", "2015-09-22", "12").await;
    put_post(&client, "bbb", "2015-09-01", "3").await;
    put_post(&client, "ccc", "2015-11-15", "7").await;

    let got = client
        .get_item()
        .table_name("Thread")
        .key("ForumName", s("S3"))
        .key("Subject", s("bbb"))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    assert_eq!(got.item().unwrap().get("Replies"), Some(&n("3")));

    // LSI query that asks for a non-projected attribute: fetched from the table.
    let queried = client
        .query()
        .table_name("Thread")
        .index_name("LastPostIndex")
        .key_condition_expression("ForumName = :f AND LastPostDateTime > :d")
        .expression_attribute_values(":f", s("S3"))
        .expression_attribute_values(":d", s("2015-09-10"))
        .projection_expression("Subject, Tags")
        .scan_index_forward(false)
        .consistent_read(true)
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await
        .unwrap();
    let subjects: Vec<_> = queried
        .items()
        .iter()
        .map(|i| i["Subject"].clone())
        .collect();
    assert_eq!(subjects, vec![s("ccc"), s("aaa")]);
    assert!(
        queried.items()[0].contains_key("Tags"),
        "LSI fetch of a non-projected attribute"
    );
    assert!(
        queried
            .consumed_capacity()
            .unwrap()
            .capacity_units()
            .unwrap()
            >= 1.0
    );

    // GSI projection error surfaces as a ValidationException with SPEC's text.
    let error = client
        .query()
        .table_name("Thread")
        .index_name("BySubject")
        .key_condition_expression("Subject = :s")
        .expression_attribute_values(":s", s("aaa"))
        .select(Select::AllAttributes)
        .send()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some("ValidationException"));
    assert!(error
        .message()
        .unwrap_or_default()
        .contains("Select type ALL_ATTRIBUTES is not supported"));

    // Updates, conditions, deletes and scans.
    client
        .update_item()
        .table_name("Thread")
        .key("ForumName", s("S3"))
        .key("Subject", s("aaa"))
        .update_expression("SET Replies = Replies + :one")
        .expression_attribute_values(":one", n("1"))
        .send()
        .await
        .unwrap();
    let failed = client
        .delete_item()
        .table_name("Thread")
        .key("ForumName", s("S3"))
        .key("Subject", s("aaa"))
        .condition_expression("Replies = :r")
        .expression_attribute_values(":r", n("12"))
        .send()
        .await
        .unwrap_err();
    assert!(failed
        .into_service_error()
        .is_conditional_check_failed_exception());
    client
        .delete_item()
        .table_name("Thread")
        .key("ForumName", s("S3"))
        .key("Subject", s("aaa"))
        .condition_expression("Replies = :r")
        .expression_attribute_values(":r", n("13"))
        .send()
        .await
        .unwrap();
    let scanned = client.scan().table_name("Thread").send().await.unwrap();
    assert_eq!(scanned.count(), 2);

    // Typed errors: a missing table is ResourceNotFoundException; an existing one
    // ResourceInUseException.
    let missing = client
        .describe_table()
        .table_name("Nope")
        .send()
        .await
        .unwrap_err();
    assert!(missing
        .into_service_error()
        .is_resource_not_found_exception());
    let duplicate = client
        .create_table()
        .table_name("Thread")
        .attribute_definitions(definition("k"))
        .key_schema(key_element("k", KeyType::Hash))
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap_err();
    assert!(duplicate
        .into_service_error()
        .is_resource_in_use_exception());

    client
        .delete_table()
        .table_name("Thread")
        .send()
        .await
        .unwrap();
    assert!(client
        .list_tables()
        .send()
        .await
        .unwrap()
        .table_names()
        .is_empty());
    // Prometheus metrics: per-operation counts from the transport; WAL, compaction and
    // per-table consumed capacity from the engine (every request is metered, asked or not).
    let metrics = http_get(&server.endpoint, "/metrics");
    for needle in [
        "PutItem",
        "shoal_wal_commits_total",
        "shoal_compactions_total",
        "shoal_compaction_level_bytes_written_total{level=\"6\"}",
        "shoal_sstable_files",
        "shoal_consumed_write_capacity_units_total{table=\"Thread\"}",
        "shoal_consumed_read_capacity_units_total{table=\"Thread\"}",
    ] {
        assert!(
            metrics.contains(needle),
            "/metrics lacks {needle}:\n{metrics}"
        );
    }
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_a_server_restart_and_the_data_dir_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();
    create_thread_table(&client).await;
    put_post(&client, "kept", "2015-01-01", "1").await;

    // A second server on the same directory refuses to start, saying why.
    let second = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("locked"), "{stderr}");

    server.stop();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();
    let got = client
        .get_item()
        .table_name("Thread")
        .key("ForumName", s("S3"))
        .key("Subject", s("kept"))
        .send()
        .await
        .unwrap();
    assert_eq!(got.item().unwrap().get("Replies"), Some(&n("1")));
    server.stop();

    // `shoal check` verifies the stopped database: indexes and collections match the items.
    let check = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["check", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{stdout}");
    assert!(
        stdout.contains("1 tables, 1 items, 2 index entries"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_transactions_and_online_indexes_through_the_sdk() {
    use aws_sdk_dynamodb::types::{
        ConditionCheck, DeleteGlobalSecondaryIndexAction, Get, GlobalSecondaryIndexUpdate,
        KeysAndAttributes, Put, PutRequest, TransactGetItem, TransactWriteItem, WriteRequest,
    };

    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();
    create_thread_table(&client).await;

    // BatchWriteItem of 3 puts, then BatchGetItem of them.
    let puts: Vec<WriteRequest> = ["b1", "b2", "b3"]
        .iter()
        .map(|subject| {
            WriteRequest::builder()
                .put_request(
                    PutRequest::builder()
                        .item("ForumName", s("S3"))
                        .item("Subject", s(subject))
                        .item("Owner", s("ann"))
                        .build()
                        .unwrap(),
                )
                .build()
        })
        .collect();
    let written = client
        .batch_write_item()
        .request_items("Thread", puts)
        .send()
        .await
        .unwrap();
    assert!(written.unprocessed_items().unwrap().is_empty());
    let mut keys = KeysAndAttributes::builder();
    for subject in ["b1", "b2", "b3"] {
        keys = keys.keys(
            [
                ("ForumName".to_string(), s("S3")),
                ("Subject".to_string(), s(subject)),
            ]
            .into(),
        );
    }
    let got = client
        .batch_get_item()
        .request_items("Thread", keys.build().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(got.responses().unwrap()["Thread"].len(), 3);

    // A transaction whose condition fails is cancelled with reasons in request order.
    let key = |subject: &str| -> std::collections::HashMap<String, AttributeValue> {
        [
            ("ForumName".to_string(), s("S3")),
            ("Subject".to_string(), s(subject)),
        ]
        .into()
    };
    let cancelled = client
        .transact_write_items()
        .transact_items(
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name("Thread")
                        .item("ForumName", s("S3"))
                        .item("Subject", s("t1"))
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .transact_items(
            TransactWriteItem::builder()
                .condition_check(
                    ConditionCheck::builder()
                        .table_name("Thread")
                        .set_key(Some(key("b1")))
                        .condition_expression("#o = :o")
                        .expression_attribute_names("#o", "Owner")
                        .expression_attribute_values(":o", s("bob"))
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    let reasons: Vec<_> = match &cancelled {
        aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(e) => {
            e.cancellation_reasons().iter().map(|r| r.code().unwrap_or_default().to_string()).collect()
        }
        other => panic!("expected TransactionCanceledException, got {other:?}"),
    };
    assert_eq!(reasons, vec!["None", "ConditionalCheckFailed"]);
    let t1 = client
        .transact_get_items()
        .transact_items(
            TransactGetItem::builder()
                .get(
                    Get::builder()
                        .table_name("Thread")
                        .set_key(Some(key("t1")))
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert!(
        t1.responses()[0].item().is_none(),
        "the cancelled put must not be there"
    );

    // Online GSI: create, wait for ACTIVE, query it, delete it.
    client
        .update_table()
        .table_name("Thread")
        .attribute_definitions(definition("Owner"))
        .global_secondary_index_updates(sdk_server::create_index_update("ByOwner", "Owner"))
        .send()
        .await
        .unwrap();
    let mut active = false;
    for _ in 0..200 {
        let table = client
            .describe_table()
            .table_name("Thread")
            .send()
            .await
            .unwrap();
        let status = table
            .table()
            .unwrap()
            .global_secondary_indexes()
            .iter()
            .find(|g| g.index_name() == Some("ByOwner"))
            .and_then(|g| g.index_status().map(|s| s.as_str().to_string()));
        if status.as_deref() == Some("ACTIVE") {
            active = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(active, "the new index never became ACTIVE");
    let owned = client
        .query()
        .table_name("Thread")
        .index_name("ByOwner")
        .key_condition_expression("#o = :o")
        .expression_attribute_names("#o", "Owner")
        .expression_attribute_values(":o", s("ann"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        owned.count(),
        3,
        "the backfill indexed the batch-written items"
    );
    client
        .update_table()
        .table_name("Thread")
        .global_secondary_index_updates(
            GlobalSecondaryIndexUpdate::builder()
                .delete(
                    DeleteGlobalSecondaryIndexAction::builder()
                        .index_name("ByOwner")
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    server.stop();
}

/// What Terraform's and CDK's table resources call besides the core operations: tags,
/// deletion protection, table class, continuous backups, limits and endpoints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_settings_and_tags_through_the_sdk() {
    use aws_sdk_dynamodb::types::{PointInTimeRecoveryStatus, TableClass, Tag};

    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();
    let tag = |key: &str, value: &str| Tag::builder().key(key).value(value).build().unwrap();
    let created = client
        .create_table()
        .table_name("Settings")
        .attribute_definitions(definition("pk"))
        .key_schema(key_element("pk", KeyType::Hash))
        .billing_mode(BillingMode::PayPerRequest)
        .deletion_protection_enabled(true)
        .table_class(TableClass::StandardInfrequentAccess)
        .tags(tag("team", "data"))
        .send()
        .await
        .expect("create table");
    let table = created.table_description().unwrap();
    assert_eq!(table.deletion_protection_enabled(), Some(true));
    assert_eq!(
        table.table_class_summary().and_then(|s| s.table_class()),
        Some(&TableClass::StandardInfrequentAccess)
    );
    let arn = table.table_arn().unwrap().to_string();

    client
        .tag_resource()
        .resource_arn(&arn)
        .tags(tag("env", "test"))
        .send()
        .await
        .expect("tag resource");
    let listed = client
        .list_tags_of_resource()
        .resource_arn(&arn)
        .send()
        .await
        .expect("list tags");
    let pairs: Vec<(&str, &str)> = listed.tags().iter().map(|t| (t.key(), t.value())).collect();
    assert_eq!(pairs, vec![("env", "test"), ("team", "data")]);
    assert_eq!(listed.next_token(), None);
    client
        .untag_resource()
        .resource_arn(&arn)
        .tag_keys("team")
        .send()
        .await
        .expect("untag resource");
    let listed = client
        .list_tags_of_resource()
        .resource_arn(&arn)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.tags().len(), 1);
    let error = client
        .tag_resource()
        .resource_arn(&arn)
        .tags(tag("aws:reserved", "x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some("ValidationException"));

    // A protected table is not deleted until protection is turned off.
    let error = client
        .delete_table()
        .table_name("Settings")
        .send()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some("ValidationException"));
    assert_eq!(
        error.message(),
        Some("Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.")
    );

    let backups = client
        .describe_continuous_backups()
        .table_name("Settings")
        .send()
        .await
        .expect("describe continuous backups");
    let description = backups.continuous_backups_description().unwrap();
    assert_eq!(
        description
            .point_in_time_recovery_description()
            .and_then(|p| p.point_in_time_recovery_status()),
        Some(&PointInTimeRecoveryStatus::Disabled)
    );
    // On-demand backups work for every table.
    assert_eq!(
        description.continuous_backups_status(),
        &aws_sdk_dynamodb::types::ContinuousBackupsStatus::Enabled
    );
    let error = client
        .describe_continuous_backups()
        .table_name("Missing")
        .send()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some("TableNotFoundException"));

    let limits = client.describe_limits().send().await.expect("limits");
    assert_eq!(limits.table_max_read_capacity_units(), Some(40_000));
    assert_eq!(limits.account_max_write_capacity_units(), Some(80_000));
    let endpoints = client.describe_endpoints().send().await.expect("endpoints");
    let address = server.endpoint.trim_start_matches("http://");
    assert_eq!(endpoints.endpoints().len(), 1);
    assert_eq!(endpoints.endpoints()[0].address(), address);
    assert_eq!(endpoints.endpoints()[0].cache_period_in_minutes(), 1440);

    let updated = client
        .update_table()
        .table_name("Settings")
        .deletion_protection_enabled(false)
        .send()
        .await
        .expect("turn deletion protection off");
    assert_eq!(
        updated
            .table_description()
            .unwrap()
            .deletion_protection_enabled(),
        Some(false)
    );
    // Re-sending the table's billing mode is accepted.
    client
        .update_table()
        .table_name("Settings")
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .expect("re-send the billing mode");
    client
        .delete_table()
        .table_name("Settings")
        .send()
        .await
        .expect("delete the unprotected table");
    server.stop();
}

/// The value of `line_prefix` (a metric's name with its labels, as rendered) on `/metrics`.
fn metric(server: &Server, line_prefix: &str) -> f64 {
    let page = http_get(&server.endpoint, "/metrics");
    page.lines()
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == line_prefix).then(|| value.parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no {line_prefix} in\n{page}"))
}

/// A test suite as users write them: every test makes its own client (and connection pool),
/// sends a few requests at once, and leaves its client behind with its idle keep-alive
/// connections, all from 127.0.0.1. Run against the default limits (the idle connections
/// pile up past the 512 connections per address that used to refuse them) and against a
/// server allowed only 64 connections (idle ones are closed to make room, and the SDK
/// reconnects): no test ever meets a refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_per_test_in_a_long_suite_is_never_refused() {
    const TESTS: usize = 300;
    for limits in [&[][..], &["--connections-max", "64"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), limits);
        sdk_server::create_pk_table(&server.client(), "Suite").await;
        let mut clients_left_behind = Vec::new();
        for test in 0..TESTS {
            let client = server.client();
            let put = |index: usize| {
                client
                    .put_item()
                    .table_name("Suite")
                    .item("pk", s(&format!("{test}-{index}")))
                    .item("n", n(&index.to_string()))
                    .send()
            };
            let (first, second, third, fourth) = tokio::join!(put(0), put(1), put(2), put(3));
            for put in [first, second, third, fourth] {
                put.unwrap_or_else(|error| panic!("test {test} {limits:?}: {error:?}"));
            }
            let read = client
                .get_item()
                .table_name("Suite")
                .key("pk", s(&format!("{test}-3")))
                .send()
                .await
                .unwrap_or_else(|error| panic!("test {test} {limits:?}: {error:?}"));
            assert_eq!(read.item().unwrap()["n"], n("3"));
            clients_left_behind.push(client);
        }
        for limit in ["connections_max", "busy_connections_per_client"] {
            for reason in ["queue_full", "wait_over"] {
                let line = format!(
                    "shoal_throttled_connections_total{{limit=\"{limit}\",reason=\"{reason}\"}}"
                );
                assert_eq!(metric(&server, &line), 0.0, "{line} {limits:?}");
            }
        }
        // No request was cut off while its body was on its way to make room.
        let cut_off = metric(
            &server,
            "shoal_idle_connections_closed_total{reason=\"slow_body\"}",
        );
        assert_eq!(cut_off, 0.0, "{limits:?}");
        let open = metric(&server, "shoal_open_connections");
        let closed = metric(
            &server,
            "shoal_idle_connections_closed_total{reason=\"connection_limit\"}",
        );
        if limits.is_empty() {
            assert!(open > 512.0, "only {open} connections stayed open");
            assert_eq!(closed, 0.0);
        } else {
            assert!(open <= 64.0 + 1.0, "{open} connections open");
            assert!(closed > 0.0);
        }
        drop(clients_left_behind);
        server.stop();
    }
}
