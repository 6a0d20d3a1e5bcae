//! End-to-end: capacity emulation through the official AWS SDK for Rust — `shoal serve
//! --capacity enforce` answers a provisioned table's over-budget writes with
//! ProvisionedThroughputExceededException and its throttling reason, which the SDK parses,
//! and the default server never throttles.

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, KeyType, ProvisionedThroughput, PutRequest, WriteRequest,
};
use aws_sdk_dynamodb::Client;

use crate::sdk_server;
use sdk_server::{definition, http_get, key_element, Server};

/// Burst credit of a 1 WCU table: 300 s of its units.
const BURST_WRITES: usize = 300;

/// A client that does not retry, so every throttled answer reaches the test.
fn without_retries(server: &Server) -> Client {
    let config = server
        .client()
        .config()
        .to_builder()
        .retry_config(RetryConfig::disabled())
        .build();
    Client::from_conf(config)
}

async fn create_slow_table(client: &Client) {
    client
        .create_table()
        .table_name("Slow")
        .attribute_definitions(definition("id"))
        .key_schema(key_element("id", KeyType::Hash))
        .provisioned_throughput(
            ProvisionedThroughput::builder()
                .read_capacity_units(1)
                .write_capacity_units(1)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
}

/// Spends the table's burst credit with batches of 25 one-unit puts.
async fn spend_burst(client: &Client) {
    for batch in 0..BURST_WRITES / 25 {
        let requests = (0..25)
            .map(|n| {
                let item = PutRequest::builder()
                    .item("id", AttributeValue::S(format!("item{batch}-{n}")))
                    .build()
                    .unwrap();
                WriteRequest::builder().put_request(item).build()
            })
            .collect();
        let output = client
            .batch_write_item()
            .request_items("Slow", requests)
            .send()
            .await
            .unwrap();
        assert!(output.unprocessed_items().is_none_or(|u| u.is_empty()));
    }
}

/// Puts one-unit items until one is refused; returns how many passed and the refusal.
async fn put_until_refused(client: &Client) -> (usize, Option<SdkError<PutItemError>>) {
    // 1 WCU refills one unit a second: a few puts past the burst must be refused.
    for n in 0..50 {
        let put = client
            .put_item()
            .table_name("Slow")
            .item("id", AttributeValue::S(format!("extra{n}")))
            .send()
            .await;
        if let Err(error) = put {
            return (n, Some(error));
        }
    }
    (50, None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enforcing_server_throttles_a_provisioned_table_past_its_burst() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--capacity", "enforce"]);
    let client = without_retries(&server);
    create_slow_table(&client).await;
    spend_burst(&client).await;

    let (passed, error) = put_until_refused(&client).await;
    let error = error.unwrap_or_else(|| panic!("{passed} puts past the burst all passed"));
    let PutItemError::ProvisionedThroughputExceededException(exceeded) = error.into_service_error()
    else {
        panic!("not a ProvisionedThroughputExceededException");
    };
    assert_eq!(
        exceeded.message(),
        Some(
            "You exceeded your maximum allowed provisioned throughput for a table or for one or \
             more global secondary indexes. To view performance metrics for provisioned \
             throughput vs. consumed throughput, open the Amazon CloudWatch console."
        )
    );
    let reasons = exceeded.throttling_reasons();
    assert_eq!(reasons.len(), 1);
    assert_eq!(
        reasons[0].reason(),
        Some("TableWriteProvisionedThroughputExceeded")
    );
    assert_eq!(
        reasons[0].resource(),
        Some("arn:aws:dynamodb:us-east-1:000000000000:table/Slow")
    );

    let metrics = http_get(&server.endpoint, "/metrics");
    assert!(
        metrics.contains("shoal_throttled_write_requests_total{table=\"Slow\",index=\"\"} 1"),
        "{metrics}"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_server_never_throttles() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = without_retries(&server);
    create_slow_table(&client).await;
    spend_burst(&client).await;
    let (passed, error) = put_until_refused(&client).await;
    assert!(error.is_none(), "refused after {passed}: {error:?}");
    server.stop();
}
