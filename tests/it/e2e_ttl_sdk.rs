//! End-to-end: Time to Live through the official AWS SDK for Rust — UpdateTimeToLive and
//! DescribeTimeToLive with DynamoDB's answers, and an expired item deleted by the server's
//! own sweep (`--ttl-sweep-seconds 1`), with its REMOVE stream record marked as the
//! service's.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, StreamSpecification, StreamViewType, TimeToLiveSpecification,
    TimeToLiveStatus,
};

use crate::sdk_server;
use sdk_server::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_to_live_through_the_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--ttl-sweep-seconds", "1"]);
    let client = server.client();
    client
        .create_table()
        .table_name("Sessions")
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
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();

    let described = client
        .describe_time_to_live()
        .table_name("Sessions")
        .send()
        .await
        .unwrap();
    let description = described.time_to_live_description().unwrap();
    assert_eq!(
        description.time_to_live_status(),
        Some(&TimeToLiveStatus::Disabled)
    );
    assert_eq!(description.attribute_name(), None);

    let spec = TimeToLiveSpecification::builder()
        .enabled(true)
        .attribute_name("expires")
        .build()
        .unwrap();
    let updated = client
        .update_time_to_live()
        .table_name("Sessions")
        .time_to_live_specification(spec.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(updated.time_to_live_specification(), Some(&spec));
    let again = client
        .update_time_to_live()
        .table_name("Sessions")
        .time_to_live_specification(spec)
        .send()
        .await
        .unwrap_err();
    assert_eq!(again.code(), Some("ValidationException"));
    assert_eq!(again.message(), Some("TimeToLive is already enabled"));
    let described = client
        .describe_time_to_live()
        .table_name("Sessions")
        .send()
        .await
        .unwrap();
    let description = described.time_to_live_description().unwrap();
    assert_eq!(
        description.time_to_live_status(),
        Some(&TimeToLiveStatus::Enabled)
    );
    assert_eq!(description.attribute_name(), Some("expires"));

    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for (id, expires) in [("gone", now - 60), ("kept", now + 3600)] {
        client
            .put_item()
            .table_name("Sessions")
            .item("id", AttributeValue::S(id.into()))
            .item("expires", AttributeValue::N(expires.to_string()))
            .send()
            .await
            .unwrap();
    }
    let mut remaining = Vec::new();
    for _ in 0..100 {
        let scan = client.scan().table_name("Sessions").send().await.unwrap();
        remaining = scan
            .items()
            .iter()
            .map(|item| item["id"].as_s().unwrap().clone())
            .collect();
        if remaining == ["kept"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        remaining,
        ["kept"],
        "the server's sweep deletes the expired item"
    );

    // The delete is in the stream, as the service's.
    let streams = server.streams_client();
    let arn = client
        .describe_table()
        .table_name("Sessions")
        .send()
        .await
        .unwrap()
        .table()
        .unwrap()
        .latest_stream_arn()
        .unwrap()
        .to_string();
    let stream = streams
        .describe_stream()
        .stream_arn(&arn)
        .send()
        .await
        .unwrap();
    let shard = stream.stream_description().unwrap().shards()[0]
        .shard_id()
        .unwrap()
        .to_string();
    let iterator = streams
        .get_shard_iterator()
        .stream_arn(&arn)
        .shard_id(shard)
        .shard_iterator_type(aws_sdk_dynamodbstreams::types::ShardIteratorType::TrimHorizon)
        .send()
        .await
        .unwrap()
        .shard_iterator()
        .unwrap()
        .to_string();
    let records = streams
        .get_records()
        .shard_iterator(iterator)
        .send()
        .await
        .unwrap();
    let removes: Vec<_> = records
        .records()
        .iter()
        .filter(|r| r.event_name() == Some(&aws_sdk_dynamodbstreams::types::OperationType::Remove))
        .collect();
    assert_eq!(removes.len(), 1);
    let identity = removes[0].user_identity().expect("a service delete");
    assert_eq!(identity.principal_id(), Some("dynamodb.amazonaws.com"));
    assert_eq!(identity.r#type(), Some("Service"));
    server.stop();
}
