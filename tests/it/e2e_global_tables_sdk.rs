//! End-to-end: global tables through the official AWS SDK for Rust, with two clients scoped
//! to two Regions of one `shoal serve` — a replica created with UpdateTable
//! `ReplicaUpdates`, writes replicated both ways, a Region cut off and healed through the
//! admin API (`/shoal/replication`) with its backlog on /metrics, last writer wins after
//! the heal, and kill -9 of the server under writes in both Regions: every acknowledged
//! write is in both Regions after the restart. And a strong group (MultiRegionConsistency
//! STRONG with a witness) formed through the SDK, whose writes are readable in the other
//! Region at once though the asynchronous lag is a minute. And a replica's overrides set
//! and read back through the SDK's types, its auto scaling settings through
//! DescribeTableReplicaAutoScaling and UpdateTableReplicaAutoScaling, then its Disassociate.
//! And Time to Live and a GSI set through one Region's endpoint, described and queried in
//! the other.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::Region;
use aws_sdk_dynamodb::types::{
    AttributeValue, AutoScalingSettingsUpdate, BillingMode,
    CreateGlobalTableWitnessGroupMemberAction, CreateReplicationGroupMemberAction,
    DisassociateReplicationGroupMemberAction, DisassociationMode, GlobalTableWitnessGroupUpdate,
    IndexStatus, KeyType, MultiRegionConsistency, OnDemandThroughputOverride,
    ReplicaAutoScalingUpdate, ReplicaStatus, ReplicationGroupUpdate, TableClass, TableDescription,
    TableStatus, TimeToLiveSpecification, TimeToLiveStatus, UpdateReplicationGroupMemberAction,
};
use aws_sdk_dynamodb::Client;

use crate::sdk_server::{self, http_get, Server};

const A: &str = "us-east-1";
const B: &str = "eu-west-1";

fn client_in(server: &Server, region: &str) -> Client {
    let config = server
        .client()
        .config()
        .to_builder()
        .region(Region::new(region.to_string()))
        .build();
    Client::from_conf(config)
}

async fn get(client: &Client, pk: &str) -> Option<String> {
    let answer = client
        .get_item()
        .table_name("Orders")
        .key("pk", AttributeValue::S(pk.to_string()))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    answer
        .item()
        .and_then(|item| item.get("v"))
        .and_then(|v| v.as_s().ok())
        .cloned()
}

async fn put(client: &Client, pk: &str, value: &str) -> Result<(), String> {
    client
        .put_item()
        .table_name("Orders")
        .item("pk", AttributeValue::S(pk.to_string()))
        .item("v", AttributeValue::S(value.to_string()))
        .send()
        .await
        .map(drop)
        .map_err(|e| format!("{e:?}"))
}

/// DescribeTable of `Orders` in `client`'s Region.
async fn describe_orders(client: &Client) -> TableDescription {
    let described = client
        .describe_table()
        .table_name("Orders")
        .send()
        .await
        .unwrap();
    described.table().unwrap().clone()
}

/// Polls the admin API until every link's backlog is empty and no replica is CREATING.
async fn settle(server: &Server, client_a: &Client) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (status, body) = server.http("GET", "/shoal/replication", "");
        assert_eq!(status, 200, "{body}");
        let state: serde_json::Value = serde_json::from_str(&body).unwrap();
        let drained = state["links"]
            .as_array()
            .unwrap()
            .iter()
            .all(|link| link["backlog"] == 0);
        let active = describe_orders(client_a)
            .await
            .replicas()
            .iter()
            .all(|replica| replica.replica_status() == Some(&ReplicaStatus::Active));
        if drained && active {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "replication did not settle: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Table `Orders` (key `pk`, on demand) in `client`'s Region.
async fn create_orders(client: &Client) {
    client
        .create_table()
        .table_name("Orders")
        .attribute_definitions(sdk_server::definition("pk"))
        .key_schema(sdk_server::key_element("pk", KeyType::Hash))
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();
}

/// A ReplicaUpdates member creating a replica in `region`.
fn create_replica(region: &str) -> ReplicationGroupUpdate {
    ReplicationGroupUpdate::builder()
        .create(
            CreateReplicationGroupMemberAction::builder()
                .region_name(region)
                .build()
                .unwrap(),
        )
        .build()
}

async fn create_global_table(client_a: &Client) {
    create_orders(client_a).await;
    let updated = client_a
        .update_table()
        .table_name("Orders")
        .replica_updates(create_replica(B))
        .send()
        .await
        .unwrap();
    let table = updated.table_description().unwrap();
    assert_eq!(table.global_table_version(), Some("2019.11.21"));
    assert_eq!(table.replicas()[0].region_name(), Some(B));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_regions_replicate_through_the_sdk_and_the_admin_api_cuts_and_heals() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin", "--replication-lag-ms", "0-20"]);
    let (client_a, client_b) = (client_in(&server, A), client_in(&server, B));
    create_global_table(&client_a).await;
    put(&client_a, "before-settle", "a").await.unwrap();
    settle(&server, &client_a).await;
    let in_b = client_b
        .describe_table()
        .table_name("Orders")
        .send()
        .await
        .unwrap();
    let in_b = in_b.table().unwrap();
    assert_eq!(in_b.replicas()[0].region_name(), Some(A));
    assert!(in_b.table_arn().unwrap().contains(":eu-west-1:"));
    assert_eq!(get(&client_b, "before-settle").await.as_deref(), Some("a"));

    put(&client_b, "from-b", "b").await.unwrap();
    settle(&server, &client_a).await;
    assert_eq!(get(&client_a, "from-b").await.as_deref(), Some("b"));

    // Cut B off: writes go on in both Regions, the backlog shows on /metrics.
    let (status, body) = server.http("POST", "/shoal/replication", r#"{"cut": "eu-west-1"}"#);
    assert_eq!(status, 200, "{body}");
    put(&client_a, "x", "a-first").await.unwrap();
    put(&client_b, "x", "b-later").await.unwrap();
    let metrics = http_get(&server.endpoint, "/metrics");
    assert!(
        metrics.contains(
            r#"shoal_replication_backlog{table="Orders",from="us-east-1",to="eu-west-1"} 1"#
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("shoal_replication_lag_seconds{"),
        "{metrics}"
    );
    assert_eq!(get(&client_a, "x").await.as_deref(), Some("a-first"));
    let (status, _) = server.http("POST", "/shoal/replication", r#"{"heal": "eu-west-1"}"#);
    assert_eq!(status, 200);
    settle(&server, &client_a).await;
    assert_eq!(get(&client_a, "x").await.as_deref(), Some("b-later"));
    assert_eq!(get(&client_b, "x").await.as_deref(), Some("b-later"));
    let (status, body) = server.http("POST", "/shoal/replication", r#"{"lagMs": "never"}"#);
    assert_eq!(status, 400, "{body}");
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicas_overrides_and_its_disassociation_through_the_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin", "--replication-lag-ms", "0-20"]);
    let (client_a, client_b) = (client_in(&server, A), client_in(&server, B));
    create_global_table(&client_a).await;
    settle(&server, &client_a).await;
    let updated = client_b
        .update_table()
        .table_name("Orders")
        .replica_updates(
            ReplicationGroupUpdate::builder()
                .update(
                    UpdateReplicationGroupMemberAction::builder()
                        .region_name(B)
                        .on_demand_throughput_override(
                            OnDemandThroughputOverride::builder()
                                .max_read_request_units(40)
                                .build(),
                        )
                        .table_class_override(TableClass::StandardInfrequentAccess)
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        updated.table_description().unwrap().table_status(),
        Some(&TableStatus::Updating)
    );
    let described = client_a
        .describe_table()
        .table_name("Orders")
        .send()
        .await
        .unwrap();
    let replica = &described.table().unwrap().replicas()[0];
    assert_eq!(replica.region_name(), Some(B));
    assert_eq!(
        replica
            .on_demand_throughput_override()
            .and_then(|o| o.max_read_request_units()),
        Some(40)
    );
    assert_eq!(
        replica
            .replica_table_class_summary()
            .and_then(|summary| summary.table_class()),
        Some(&TableClass::StandardInfrequentAccess)
    );
    assert!(replica.provisioned_throughput_override().is_none());

    // Replica auto scaling through the SDK's own calls: every member read back disabled,
    // a disable accepted, a setting on this on-demand group refused with SPEC-3 §2.7's text.
    let scaling = client_b
        .update_table_replica_auto_scaling()
        .table_name("Orders")
        .replica_updates(
            ReplicaAutoScalingUpdate::builder()
                .region_name(B)
                .replica_provisioned_read_capacity_auto_scaling_update(
                    AutoScalingSettingsUpdate::builder()
                        .auto_scaling_disabled(true)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let described = client_a
        .describe_table_replica_auto_scaling()
        .table_name("Orders")
        .send()
        .await
        .unwrap();
    assert_eq!(
        described.table_auto_scaling_description(),
        scaling.table_auto_scaling_description()
    );
    let replicas = described
        .table_auto_scaling_description()
        .unwrap()
        .replicas();
    assert_eq!(replicas.len(), 2);
    for replica in replicas {
        let read = replica
            .replica_provisioned_read_capacity_auto_scaling_settings()
            .unwrap();
        assert_eq!(read.auto_scaling_disabled(), Some(true));
        assert!(read.scaling_policies().is_empty());
    }
    let refused = client_a
        .update_table_replica_auto_scaling()
        .table_name("Orders")
        .provisioned_write_capacity_auto_scaling_update(
            AutoScalingSettingsUpdate::builder()
                .minimum_units(1)
                .maximum_units(5)
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    let message = format!("{refused:?}");
    assert!(
        message.contains("BillingMode is PayPerRequest"),
        "{message}"
    );

    put(&client_b, "before", "b").await.unwrap();
    client_b
        .update_table()
        .table_name("Orders")
        .replica_updates(
            ReplicationGroupUpdate::builder()
                .disassociate(
                    DisassociateReplicationGroupMemberAction::builder()
                        .region_name(B)
                        .disassociation_mode(DisassociationMode::WaitForReplication)
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    // Settled means B has left: no member is UPDATING any more.
    settle(&server, &client_a).await;
    for client in [&client_a, &client_b] {
        let table = client
            .describe_table()
            .table_name("Orders")
            .send()
            .await
            .unwrap();
        let table = table.table().unwrap();
        assert!(table.replicas().is_empty(), "{table:?}");
        assert_eq!(table.global_table_version(), None);
        assert_eq!(table.table_status(), Some(&TableStatus::Active));
    }
    assert_eq!(get(&client_a, "before").await.as_deref(), Some("b"));
    put(&client_b, "alone", "b").await.unwrap();
    assert_eq!(get(&client_a, "alone").await, None);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_to_live_and_an_index_set_in_one_region_reach_the_other_through_the_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin", "--replication-lag-ms", "0-20"]);
    let (client_a, client_b) = (client_in(&server, A), client_in(&server, B));
    create_global_table(&client_a).await;
    put(&client_a, "p1", "red").await.unwrap();
    put(&client_a, "p2", "blue").await.unwrap();
    settle(&server, &client_a).await;

    // Time to Live set through B's endpoint is the group's: A describes it.
    client_b
        .update_time_to_live()
        .table_name("Orders")
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name("expires")
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let in_a = client_a
        .describe_time_to_live()
        .table_name("Orders")
        .send()
        .await
        .unwrap();
    let in_a = in_a.time_to_live_description().unwrap();
    assert_eq!(in_a.time_to_live_status(), Some(&TimeToLiveStatus::Enabled));
    assert_eq!(in_a.attribute_name(), Some("expires"));

    // A GSI created through B's endpoint is built in A from A's items and queryable there.
    client_b
        .update_table()
        .table_name("Orders")
        .attribute_definitions(sdk_server::definition("v"))
        .global_secondary_index_updates(sdk_server::create_index_update("ByV", "v"))
        .send()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let status = describe_orders(&client_a)
            .await
            .global_secondary_indexes()
            .iter()
            .find(|gsi| gsi.index_name() == Some("ByV"))
            .and_then(|gsi| gsi.index_status().cloned());
        assert!(status.is_some(), "A has no index ByV");
        if status == Some(IndexStatus::Active) {
            break;
        }
        assert!(Instant::now() < deadline, "ByV was not built in A");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let queried = client_a
        .query()
        .table_name("Orders")
        .index_name("ByV")
        .key_condition_expression("v = :v")
        .expression_attribute_values(":v", AttributeValue::S("red".to_string()))
        .send()
        .await
        .unwrap();
    let keys: Vec<_> = queried
        .items()
        .iter()
        .filter_map(|item| item.get("pk").and_then(|pk| pk.as_s().ok()).cloned())
        .collect();
    assert_eq!(keys, ["p1"]);
    server.stop();
}

fn start_durable(dir: &Path) -> Server {
    Server::spawn(&[
        "serve",
        "--port",
        "0",
        "--durability",
        "sync",
        "--admin",
        "--replication-lag-ms",
        "0-50",
        "--data-dir",
        dir.to_str().unwrap(),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_under_writes_in_two_regions_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut acknowledged: BTreeMap<String, String> = BTreeMap::new();
    let mut server = start_durable(dir.path());
    create_global_table(&client_in(&server, A)).await;
    for cycle in 0..3 {
        let (client_a, client_b) = (client_in(&server, A), client_in(&server, B));
        // Writers in both Regions; the server is killed while they run.
        let writer = |client: Client, region: &'static str| {
            tokio::spawn(async move {
                let mut done = Vec::new();
                for n in 0.. {
                    // Each Region writes its own keys: the last acknowledged value of a key
                    // is then what both Regions must end with.
                    let key = format!("{region}-{}", n % 20);
                    let value = format!("{cycle}-{n}");
                    if put(&client, &key, &value).await.is_err() {
                        break;
                    }
                    done.push((key, value));
                }
                done
            })
        };
        let a = writer(client_a, A);
        let b = writer(client_b, B);
        tokio::time::sleep(Duration::from_millis(300 + 200 * cycle)).await;
        server.kill9();
        for (key, value) in a.await.unwrap().into_iter().chain(b.await.unwrap()) {
            acknowledged.insert(key, value);
        }
        server = start_durable(dir.path());
        let (client_a, client_b) = (client_in(&server, A), client_in(&server, B));
        settle(&server, &client_a).await;
        for (key, value) in &acknowledged {
            for (region, client) in [(A, &client_a), (B, &client_b)] {
                let held = get(client, key).await;
                // The write in flight at the kill may have committed after the last
                // acknowledged one: then it is newer.
                let (held_cycle, held_n) = held
                    .as_deref()
                    .and_then(|v| v.split_once('-'))
                    .map(|(c, n)| (c.parse::<u64>().unwrap(), n.parse::<u64>().unwrap()))
                    .unwrap_or_else(|| panic!("cycle {cycle}: {key} lost in {region}"));
                let (c, n) = value.split_once('-').unwrap();
                assert!(
                    (held_cycle, held_n) >= (c.parse().unwrap(), n.parse().unwrap()),
                    "cycle {cycle}: {key} holds {held:?} in {region}, acknowledged {value}"
                );
            }
        }
    }
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strong_group_formed_through_the_sdk_answers_writes_present_in_every_region() {
    const STRONG_B: &str = "us-east-2";
    const WITNESS: &str = "us-west-2";
    let dir = tempfile::tempdir().unwrap();
    // A minute of lag: what reaches the other Region at once came through the strong path.
    let server = Server::start(dir.path(), &["--replication-lag-ms", "60000"]);
    let (client_a, client_b) = (client_in(&server, A), client_in(&server, STRONG_B));
    create_orders(&client_a).await;
    let updated = client_a
        .update_table()
        .table_name("Orders")
        .multi_region_consistency(MultiRegionConsistency::Strong)
        .replica_updates(create_replica(STRONG_B))
        .global_table_witness_updates(
            GlobalTableWitnessGroupUpdate::builder()
                .create(
                    CreateGlobalTableWitnessGroupMemberAction::builder()
                        .region_name(WITNESS)
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    let table = updated.table_description().unwrap();
    assert_eq!(
        table.multi_region_consistency(),
        Some(&MultiRegionConsistency::Strong)
    );
    assert_eq!(
        table.global_table_witnesses()[0].region_name(),
        Some(WITNESS)
    );
    put(&client_a, "k", "from-a").await.unwrap();
    assert_eq!(get(&client_b, "k").await.as_deref(), Some("from-a"));
    put(&client_b, "k", "from-b").await.unwrap();
    assert_eq!(get(&client_a, "k").await.as_deref(), Some("from-b"));
    let refused = client_b
        .delete_table()
        .table_name("Orders")
        .send()
        .await
        .unwrap_err();
    let refused = refused.into_service_error();
    assert_eq!(
        aws_sdk_dynamodb::error::ProvideErrorMetadata::message(&refused),
        Some("Deletion of only one table replica is not supported for global tables with MultiRegionConsistency set to STRONG.")
    );
    server.stop();
}
