//! Streams through `kill -9` of a real server (invariant 8): a writer puts items as fast as
//! the server acknowledges them (`--durability sync`) while the server is killed with
//! SIGKILL; after a restart on the same data, the stream holds exactly one record per
//! acknowledged write, in the order they were acknowledged, and at most the one write in
//! flight besides — nothing else — and new records sort after the old ones.

use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_dynamodbstreams::types::ShardIteratorType;

use crate::sdk_server;
use sdk_server::Server;

/// Every record's (sequence number, `n` of its NewImage), following the shard lineage.
async fn read_stream(server: &Server) -> Vec<(u128, u64)> {
    let client = server.client();
    let streams = server.streams_client();
    let arn = client
        .describe_table()
        .table_name("Log")
        .send()
        .await
        .unwrap()
        .table()
        .unwrap()
        .latest_stream_arn()
        .unwrap()
        .to_string();
    let description = streams
        .describe_stream()
        .stream_arn(&arn)
        .send()
        .await
        .unwrap();
    let mut records = Vec::new();
    for shard in description.stream_description().unwrap().shards() {
        let mut iterator = streams
            .get_shard_iterator()
            .stream_arn(&arn)
            .shard_id(shard.shard_id().unwrap())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .unwrap()
            .shard_iterator()
            .map(str::to_string);
        while let Some(current) = iterator {
            let page = streams
                .get_records()
                .shard_iterator(current)
                .send()
                .await
                .unwrap();
            for record in page.records() {
                let body = record.dynamodb().unwrap();
                let n = match body.new_image().unwrap().get("n") {
                    Some(aws_sdk_dynamodbstreams::types::AttributeValue::N(n)) => {
                        n.parse().unwrap()
                    }
                    other => panic!("unexpected n {other:?}"),
                };
                records.push((body.sequence_number().unwrap().parse().unwrap(), n));
            }
            iterator = if page.records().is_empty() {
                None
            } else {
                page.next_shard_iterator().map(str::to_string)
            };
        }
    }
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_has_exactly_one_record_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let start = || {
        Server::spawn(&[
            "serve",
            "--port",
            "0",
            "--durability",
            "sync",
            "--data-dir",
            dir.path().to_str().unwrap(),
        ])
    };
    let server = start();
    let client = server.client();
    client
        .create_table()
        .table_name("Log")
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewImage)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();

    // Puts of n = 0, 1, 2, …, each on its own key, until the server dies.
    let writer = tokio::spawn({
        let client = client.clone();
        async move {
            let mut acknowledged = 0u64;
            loop {
                let put = client
                    .put_item()
                    .table_name("Log")
                    .item("id", AttributeValue::S(format!("item{acknowledged}")))
                    .item("n", AttributeValue::N(acknowledged.to_string()))
                    .send()
                    .await;
                if put.is_err() {
                    return acknowledged;
                }
                acknowledged += 1;
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    server.kill9();
    let acknowledged = writer.await.unwrap();
    assert!(acknowledged > 0, "the writer got nothing acknowledged");

    let server = start();
    let records = read_stream(&server).await;
    let numbers: Vec<u64> = records.iter().map(|(_, n)| *n).collect();
    // 0..acknowledged, each once and in order, plus possibly the one in flight.
    let expected: Vec<u64> = (0..acknowledged).collect();
    let with_flight: Vec<u64> = (0..=acknowledged).collect();
    assert!(
        numbers == expected || numbers == with_flight,
        "{acknowledged} acknowledged, the stream holds {} records: {:?}…",
        numbers.len(),
        &numbers[..numbers.len().min(20)]
    );
    assert!(records.windows(2).all(|w| w[0].0 < w[1].0));

    // Records written after the restart sort after every recovered one.
    server
        .client()
        .put_item()
        .table_name("Log")
        .item("id", AttributeValue::S("after".into()))
        .item("n", AttributeValue::N("999999".into()))
        .send()
        .await
        .unwrap();
    let after = read_stream(&server).await;
    let last = after.last().unwrap();
    assert_eq!(last.1, 999_999);
    assert!(records.iter().all(|(seq, _)| *seq < last.0));
    server.stop();
}
