//! End-to-end through the official AWS SDK for Rust: Contributor Insights (enabled and
//! described by the SDK, its data read from the admin API and /metrics) and resource-based
//! policies (put, read and deleted by the SDK).

use aws_sdk_dynamodb::types::{
    AttributeValue, ContributorInsightsAction, ContributorInsightsStatus,
};
use serde_json::Value;

use crate::sdk_server;
use sdk_server::{create_pk_table, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contributor_insights_rank_the_keys_the_sdk_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--admin"]);
    let client = server.client();
    create_pk_table(&client, "Events").await;
    let enabled = client
        .update_contributor_insights()
        .table_name("Events")
        .contributor_insights_action(ContributorInsightsAction::Enable)
        .send()
        .await
        .expect("enable");
    assert_eq!(
        enabled.contributor_insights_status(),
        Some(&ContributorInsightsStatus::Enabling)
    );
    let described = client
        .describe_contributor_insights()
        .table_name("Events")
        .send()
        .await
        .expect("describe");
    assert_eq!(
        described.contributor_insights_status(),
        Some(&ContributorInsightsStatus::Enabled)
    );
    // A table without a sort key: the partition-key rules only.
    assert_eq!(described.contributor_insights_rule_list().len(), 2);
    for (key, times) in [("hot", 5), ("warm", 2), ("cold", 1)] {
        for _ in 0..times {
            client
                .put_item()
                .table_name("Events")
                .item("pk", AttributeValue::S(key.to_owned()))
                .send()
                .await
                .expect("put");
        }
    }
    let (status, body) = server.http("GET", "/shoal/contributors?table=Events", "");
    assert_eq!(status, 200, "{body}");
    let report: Value = serde_json::from_str(&body).unwrap();
    let accessed = &report["rules"][0];
    assert_eq!(accessed["rule"], "PKC");
    // Each put of a small item is 1 write unit, ranked as 3.
    let ranked: Vec<(String, f64)> = accessed["contributors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["keys"][0].as_str().unwrap().to_owned(),
                c["value"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ranked,
        [
            ("hot".to_owned(), 15.0),
            ("warm".to_owned(), 6.0),
            ("cold".to_owned(), 3.0)
        ]
    );
    let (status, metrics) = server.http("GET", "/metrics", "");
    assert_eq!(status, 200);
    assert!(
        metrics.contains(
            "shoal_contributor_insights_value{table=\"Events\",index=\"\",rule=\"PKC\",key=\"hot\"} 15"
        ),
        "{metrics}"
    );
    let (status, _) = server.http("GET", "/shoal/contributors?table=Missing", "");
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_policy_is_put_read_and_deleted_through_the_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();
    let created = create_pk_table(&client, "Guarded").await;
    let arn = created
        .table_description()
        .and_then(|d| d.table_arn())
        .unwrap()
        .to_owned();
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"dynamodb:GetItem","Resource":"*"}]}"#;
    let put = client
        .put_resource_policy()
        .resource_arn(&arn)
        .policy(policy)
        .send()
        .await
        .expect("put policy");
    let got = client
        .get_resource_policy()
        .resource_arn(&arn)
        .send()
        .await
        .expect("get policy");
    assert_eq!(got.revision_id(), put.revision_id());
    assert!(got.policy().unwrap().contains("dynamodb:GetItem"));
    client
        .delete_resource_policy()
        .resource_arn(&arn)
        .expected_revision_id(put.revision_id().unwrap())
        .send()
        .await
        .expect("delete policy");
    let error = client
        .get_resource_policy()
        .resource_arn(&arn)
        .send()
        .await
        .expect_err("no policy is left");
    assert!(
        format!("{error:?}").contains("PolicyNotFoundException"),
        "{error:?}"
    );
}
