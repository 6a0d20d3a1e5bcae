//! End-to-end: DynamoDB Streams of `shoal serve` read with the official AWS SDK for Rust
//! (`aws-sdk-dynamodbstreams`, pointed at the same endpoint as `aws-sdk-dynamodb`), so every
//! response shape is checked by the SDK's own deserialiser.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodbstreams::error::ProvideErrorMetadata;
use aws_sdk_dynamodbstreams::types::{
    OperationType, Record, ShardFilter, ShardFilterType, ShardIteratorType, StreamStatus,
    StreamViewType as StreamsViewType,
};
use aws_sdk_dynamodbstreams::Client as StreamsClient;

use crate::sdk_server;
use sdk_server::Server;

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

fn spec(view: Option<StreamViewType>) -> StreamSpecification {
    StreamSpecification::builder()
        .stream_enabled(view.is_some())
        .set_stream_view_type(view)
        .build()
        .unwrap()
}

/// Creates `name` (hash key `pk`); returns its LatestStreamArn, if it has a stream.
async fn create_table(client: &Client, name: &str, view: Option<StreamViewType>) -> Option<String> {
    let mut request = client
        .create_table()
        .table_name(name)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest);
    if view.is_some() {
        request = request.stream_specification(spec(view.clone()));
    }
    let created = request.send().await.expect("create table");
    let table = created.table_description().unwrap();
    if let Some(view) = view {
        let described = table.stream_specification().unwrap();
        assert!(described.stream_enabled());
        assert_eq!(described.stream_view_type(), Some(&view));
        let label = table.latest_stream_label().unwrap();
        assert!(table
            .latest_stream_arn()
            .unwrap()
            .ends_with(&format!("/stream/{label}")));
    }
    table.latest_stream_arn().map(str::to_string)
}

async fn put(client: &Client, table: &str, key: &str, value: &str) {
    client
        .put_item()
        .table_name(table)
        .item("pk", s(key))
        .item("v", s(value))
        .send()
        .await
        .expect("put item");
}

/// Writes one INSERT, one MODIFY and one REMOVE of key `k` (and no-op writes between them,
/// which add no record).
async fn insert_modify_remove(client: &Client, table: &str) {
    put(client, table, "k", "1").await;
    put(client, table, "k", "1").await;
    client
        .update_item()
        .table_name(table)
        .key("pk", s("k"))
        .update_expression("SET v = :v")
        .expression_attribute_values(":v", s("2"))
        .send()
        .await
        .unwrap();
    for _ in 0..2 {
        client
            .delete_item()
            .table_name(table)
            .key("pk", s("k"))
            .send()
            .await
            .unwrap();
    }
}

/// The shard ids of a stream, in DescribeStream's order.
async fn shard_ids(streams: &StreamsClient, arn: &str) -> Vec<String> {
    streams
        .describe_stream()
        .stream_arn(arn)
        .send()
        .await
        .unwrap()
        .stream_description()
        .unwrap()
        .shards()
        .iter()
        .map(|shard| shard.shard_id().unwrap().to_string())
        .collect()
}

async fn iterator(
    streams: &StreamsClient,
    arn: &str,
    shard: &str,
    kind: ShardIteratorType,
    sequence_number: Option<&str>,
) -> String {
    streams
        .get_shard_iterator()
        .stream_arn(arn)
        .shard_id(shard)
        .shard_iterator_type(kind)
        .set_sequence_number(sequence_number.map(str::to_string))
        .send()
        .await
        .unwrap()
        .shard_iterator()
        .unwrap()
        .to_string()
}

/// Reads from `iterator` until a page comes back empty or the shard ends; returns the
/// records and whether the shard ended (a page without NextShardIterator).
async fn read_on(streams: &StreamsClient, mut iterator: String) -> (Vec<Record>, bool) {
    let mut records = Vec::new();
    loop {
        let page = streams
            .get_records()
            .shard_iterator(&iterator)
            .send()
            .await
            .unwrap();
        let empty = page.records().is_empty();
        records.extend(page.records().iter().cloned());
        match page.next_shard_iterator() {
            None => return (records, true),
            Some(_) if empty => return (records, false),
            Some(next) => iterator = next.to_string(),
        }
    }
}

fn sequence_number(record: &Record) -> &str {
    record.dynamodb().unwrap().sequence_number().unwrap()
}

fn number(text: &str) -> u128 {
    assert!(
        (21..=40).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit()),
        "{text}"
    );
    text.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_streams_sdk_reads_every_view_type_from_every_position() {
    let server = Server::spawn(&["serve", "--in-memory", "--port", "0"]);
    let client = server.client();
    let streams = server.streams_client();
    let views = [
        (StreamViewType::KeysOnly, StreamsViewType::KeysOnly),
        (StreamViewType::NewImage, StreamsViewType::NewImage),
        (StreamViewType::OldImage, StreamsViewType::OldImage),
        (
            StreamViewType::NewAndOldImages,
            StreamsViewType::NewAndOldImages,
        ),
    ];
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut arns = Vec::new();
    for (i, (view, streams_view)) in views.iter().enumerate() {
        let table = format!("Views{i}");
        let arn = create_table(&client, &table, Some(view.clone()))
            .await
            .unwrap();
        arns.push(arn.clone());
        insert_modify_remove(&client, &table).await;

        let described = streams
            .describe_stream()
            .stream_arn(&arn)
            .send()
            .await
            .unwrap();
        let description = described.stream_description().unwrap();
        assert_eq!(description.stream_arn(), Some(arn.as_str()));
        assert_eq!(description.stream_status(), Some(&StreamStatus::Enabled));
        assert_eq!(description.stream_view_type(), Some(streams_view));
        assert_eq!(description.table_name(), Some(table.as_str()));
        assert_eq!(description.key_schema()[0].attribute_name(), "pk");
        let created = description.creation_request_date_time().unwrap().secs();
        assert!((created - now).abs() < 60, "{created} vs {now}");
        assert!(arn.ends_with(description.stream_label().unwrap()));
        assert_eq!(description.shards().len(), 1);
        let shard = &description.shards()[0];
        assert!(shard.parent_shard_id().is_none());
        let range = shard.sequence_number_range().unwrap();
        number(range.starting_sequence_number().unwrap());
        assert_eq!(range.ending_sequence_number(), None, "an open shard");
        let shard = shard.shard_id().unwrap();
        assert!((28..=65).contains(&shard.len()), "{shard}");

        let (records, ended) = read_on(
            &streams,
            iterator(&streams, &arn, shard, ShardIteratorType::TrimHorizon, None).await,
        )
        .await;
        assert!(!ended, "an open shard always gives a next iterator");
        let events: Vec<_> = records
            .iter()
            .map(|r| r.event_name().unwrap().clone())
            .collect();
        assert_eq!(
            events,
            [
                OperationType::Insert,
                OperationType::Modify,
                OperationType::Remove
            ]
        );
        let numbers: Vec<u128> = records.iter().map(|r| number(sequence_number(r))).collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
        for (record, event) in records.iter().zip(["INSERT", "MODIFY", "REMOVE"]) {
            assert_eq!(record.event_source(), Some("aws:dynamodb"));
            assert_eq!(record.event_version(), Some("1.1"));
            assert_eq!(record.event_id().map(str::len), Some(32));
            assert!(record.aws_region().is_some());
            assert!(record.user_identity().is_none());
            let body = record.dynamodb().unwrap();
            let when = body.approximate_creation_date_time().unwrap();
            assert_eq!(when.subsec_nanos(), 0, "whole seconds");
            assert!((when.secs() - now).abs() < 60, "{when:?}");
            assert!(body.size_bytes().unwrap() > 0);
            assert_eq!(body.stream_view_type(), Some(streams_view));
            assert_eq!(
                body.keys().unwrap()["pk"],
                aws_sdk_dynamodbstreams::types::AttributeValue::S("k".into())
            );
            // The images the view type asks for, as far as the event has them.
            let (old, new) = match (streams_view, event) {
                (StreamsViewType::KeysOnly, _) => (false, false),
                (StreamsViewType::NewImage, "REMOVE") => (false, false),
                (StreamsViewType::NewImage, _) => (false, true),
                (StreamsViewType::OldImage, "INSERT") => (false, false),
                (StreamsViewType::OldImage, _) => (true, false),
                (_, "INSERT") => (false, true),
                (_, "MODIFY") => (true, true),
                _ => (true, false),
            };
            assert_eq!(body.old_image().is_some(), old, "{streams_view:?} {event}");
            assert_eq!(body.new_image().is_some(), new, "{streams_view:?} {event}");
            if let Some(image) = body.new_image() {
                let v = if event == "INSERT" { "1" } else { "2" };
                assert_eq!(
                    image["v"],
                    aws_sdk_dynamodbstreams::types::AttributeValue::S(v.into())
                );
            }
        }

        // AT re-reads the record, AFTER starts at the next one.
        let middle = sequence_number(&records[1]);
        let (at, _) = read_on(
            &streams,
            iterator(
                &streams,
                &arn,
                shard,
                ShardIteratorType::AtSequenceNumber,
                Some(middle),
            )
            .await,
        )
        .await;
        assert_eq!(
            at.iter().map(sequence_number).collect::<Vec<_>>(),
            [middle, sequence_number(&records[2])]
        );
        let (after, _) = read_on(
            &streams,
            iterator(
                &streams,
                &arn,
                shard,
                ShardIteratorType::AfterSequenceNumber,
                Some(middle),
            )
            .await,
        )
        .await;
        assert_eq!(
            after.iter().map(sequence_number).collect::<Vec<_>>(),
            [sequence_number(&records[2])]
        );

        // LATEST: nothing yet, then exactly what is written after it.
        let latest = iterator(&streams, &arn, shard, ShardIteratorType::Latest, None).await;
        let page = streams
            .get_records()
            .shard_iterator(&latest)
            .send()
            .await
            .unwrap();
        assert!(page.records().is_empty());
        let next = page.next_shard_iterator().unwrap().to_string();
        put(&client, &table, "later", "3").await;
        let (later, _) = read_on(&streams, next).await;
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].event_name(), Some(&OperationType::Insert));
        assert!(number(sequence_number(&later[0])) > numbers[2]);
    }

    // ListStreams: every stream, by table, and in pages.
    let listed = streams.list_streams().send().await.unwrap();
    let mut all: Vec<&str> = listed
        .streams()
        .iter()
        .map(|s| s.stream_arn().unwrap())
        .collect();
    all.sort_unstable();
    let mut expected: Vec<&str> = arns.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(all, expected);
    assert!(listed.last_evaluated_stream_arn().is_none());
    let one = streams
        .list_streams()
        .table_name("Views2")
        .send()
        .await
        .unwrap();
    assert_eq!(one.streams().len(), 1);
    assert_eq!(one.streams()[0].stream_arn(), Some(arns[2].as_str()));
    assert_eq!(one.streams()[0].table_name(), Some("Views2"));
    let first = streams.list_streams().limit(3).send().await.unwrap();
    assert_eq!(first.streams().len(), 3);
    let last = first.last_evaluated_stream_arn().unwrap();
    assert_eq!(Some(last), first.streams()[2].stream_arn());
    let rest = streams
        .list_streams()
        .limit(3)
        .exclusive_start_stream_arn(last)
        .send()
        .await
        .unwrap();
    assert_eq!(rest.streams().len(), 1);
    assert!(rest.last_evaluated_stream_arn().is_none());

    // Errors come back as the SDK's error types.
    let garbage = streams
        .get_records()
        .shard_iterator("not-an-iterator")
        .send()
        .await
        .unwrap_err();
    assert_eq!(garbage.code(), Some("ValidationException"), "{garbage:?}");
    let missing_shard = streams
        .get_shard_iterator()
        .stream_arn(&arns[0])
        .shard_id("shardId-00000000000000000000-00000000")
        .shard_iterator_type(ShardIteratorType::TrimHorizon)
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(
        missing_shard.is_resource_not_found_exception(),
        "{missing_shard:?}"
    );
    let missing_table = streams
        .describe_stream()
        .stream_arn(arns[0].replace("table/Views0/", "table/Gone/"))
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(
        missing_table.is_resource_not_found_exception(),
        "{missing_table:?}"
    );
    let limit = streams
        .get_records()
        .shard_iterator(
            iterator(
                &streams,
                &arns[0],
                &shard_ids(&streams, &arns[0]).await[0],
                ShardIteratorType::Latest,
                None,
            )
            .await,
        )
        .limit(1001)
        .send()
        .await
        .unwrap_err();
    assert_eq!(limit.code(), Some("ValidationException"), "{limit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_parent_is_read_to_its_end_then_its_child() {
    let server = Server::spawn(&[
        "serve",
        "--in-memory",
        "--port",
        "0",
        "--stream-shard-records",
        "2",
    ]);
    let client = server.client();
    let streams = server.streams_client();
    let arn = create_table(&client, "Rolled", Some(StreamViewType::KeysOnly))
        .await
        .unwrap();
    put(&client, "Rolled", "a", "1").await;
    put(&client, "Rolled", "b", "1").await;
    // The upkeep rolls the full shard over within about a second.
    let mut shards = shard_ids(&streams, &arn).await;
    for _ in 0..100 {
        if shards.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        shards = shard_ids(&streams, &arn).await;
    }
    assert_eq!(shards.len(), 2, "{shards:?}");
    put(&client, "Rolled", "c", "1").await;

    let described = streams
        .describe_stream()
        .stream_arn(&arn)
        .send()
        .await
        .unwrap();
    let description = described.stream_description().unwrap();
    let (parent, child) = (&description.shards()[0], &description.shards()[1]);
    assert!(parent.parent_shard_id().is_none());
    assert_eq!(child.parent_shard_id(), parent.shard_id());
    let parent_end = parent
        .sequence_number_range()
        .unwrap()
        .ending_sequence_number()
        .expect("a closed shard has an end");
    let child_range = child.sequence_number_range().unwrap();
    assert!(child_range.ending_sequence_number().is_none());
    assert!(number(child_range.starting_sequence_number().unwrap()) > number(parent_end));

    // The parent: both records, then no NextShardIterator.
    let parent_id = parent.shard_id().unwrap();
    let (records, ended) = read_on(
        &streams,
        iterator(
            &streams,
            &arn,
            parent_id,
            ShardIteratorType::TrimHorizon,
            None,
        )
        .await,
    )
    .await;
    assert!(
        ended,
        "a closed shard read to its end gives no next iterator"
    );
    assert_eq!(records.len(), 2);
    assert!(records
        .iter()
        .all(|r| number(sequence_number(r)) <= number(parent_end)));
    // LATEST on a closed shard: nothing, and the end.
    let (none, ended) = read_on(
        &streams,
        iterator(&streams, &arn, parent_id, ShardIteratorType::Latest, None).await,
    )
    .await;
    assert!(none.is_empty() && ended);

    // The child holds the record written after the rollover.
    let child_id = child.shard_id().unwrap();
    let (records, ended) = read_on(
        &streams,
        iterator(
            &streams,
            &arn,
            child_id,
            ShardIteratorType::TrimHorizon,
            None,
        )
        .await,
    )
    .await;
    assert!(!ended);
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].dynamodb().unwrap().keys().unwrap()["pk"],
        aws_sdk_dynamodbstreams::types::AttributeValue::S("c".into())
    );

    // ShardFilter CHILD_SHARDS names the child.
    let children = streams
        .describe_stream()
        .stream_arn(&arn)
        .shard_filter(
            ShardFilter::builder()
                .r#type(ShardFilterType::ChildShards)
                .shard_id(parent_id)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let children: Vec<_> = children
        .stream_description()
        .unwrap()
        .shards()
        .iter()
        .map(|shard| shard.shard_id().unwrap())
        .collect();
    assert_eq!(children, [child_id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_past_retention_are_trimmed() {
    let server = Server::spawn(&[
        "serve",
        "--in-memory",
        "--port",
        "0",
        "--stream-retention-seconds",
        "1",
    ]);
    let client = server.client();
    let streams = server.streams_client();
    let arn = create_table(&client, "Brief", Some(StreamViewType::NewImage))
        .await
        .unwrap();
    put(&client, "Brief", "old", "1").await;
    let shard = shard_ids(&streams, &arn).await.remove(0);
    let early = iterator(&streams, &arn, &shard, ShardIteratorType::TrimHorizon, None).await;
    let (records, _) = read_on(&streams, early.clone()).await;
    assert_eq!(records.len(), 1, "read within the retention");
    let old = sequence_number(&records[0]).to_string();

    tokio::time::sleep(Duration::from_millis(2100)).await;
    put(&client, "Brief", "new", "1").await;

    // TRIM_HORIZON now starts after the aged-out record.
    let (records, _) = read_on(
        &streams,
        iterator(&streams, &arn, &shard, ShardIteratorType::TrimHorizon, None).await,
    )
    .await;
    let keys: Vec<_> = records
        .iter()
        .map(|r| r.dynamodb().unwrap().keys().unwrap()["pk"].clone())
        .collect();
    assert_eq!(
        keys,
        [aws_sdk_dynamodbstreams::types::AttributeValue::S(
            "new".into()
        )]
    );
    // An iterator issued before the trim skips what aged out (AWS may answer
    // TrimmedDataAccessException here instead; Shoal returns what is retained).
    let (records, _) = read_on(&streams, early).await;
    assert_eq!(records.len(), 1);
    assert_ne!(sequence_number(&records[0]), old);

    // Asking for the aged-out record by number: TrimmedDataAccessException.
    for kind in [
        ShardIteratorType::AtSequenceNumber,
        ShardIteratorType::AfterSequenceNumber,
    ] {
        let error = streams
            .get_shard_iterator()
            .stream_arn(&arn)
            .shard_id(&shard)
            .shard_iterator_type(kind.clone())
            .sequence_number(&old)
            .send()
            .await
            .unwrap_err();
        assert_eq!(error.code(), Some("TrimmedDataAccessException"), "{kind:?}");
        assert!(
            error
                .into_service_error()
                .is_trimmed_data_access_exception(),
            "{kind:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_and_enabling_again_makes_a_new_stream_and_keeps_the_old_one() {
    let server = Server::spawn(&["serve", "--in-memory", "--port", "0"]);
    let client = server.client();
    let streams = server.streams_client();
    assert_eq!(create_table(&client, "Toggled", None).await, None);
    put(&client, "Toggled", "before", "1").await;
    assert!(streams
        .list_streams()
        .table_name("Toggled")
        .send()
        .await
        .unwrap()
        .streams()
        .is_empty());

    let enabled = client
        .update_table()
        .table_name("Toggled")
        .stream_specification(spec(Some(StreamViewType::NewImage)))
        .send()
        .await
        .unwrap();
    let first = enabled
        .table_description()
        .unwrap()
        .latest_stream_arn()
        .unwrap()
        .to_string();
    let again = client
        .update_table()
        .table_name("Toggled")
        .stream_specification(spec(Some(StreamViewType::KeysOnly)))
        .send()
        .await
        .unwrap_err();
    assert_eq!(again.code(), Some("ValidationException"));
    put(&client, "Toggled", "during", "1").await;
    client
        .update_table()
        .table_name("Toggled")
        .stream_specification(spec(None))
        .send()
        .await
        .unwrap();
    put(&client, "Toggled", "after", "1").await;

    let table = client
        .describe_table()
        .table_name("Toggled")
        .send()
        .await
        .unwrap();
    let table = table.table().unwrap();
    assert_eq!(table.latest_stream_arn(), Some(first.as_str()));
    assert!(table
        .stream_specification()
        .is_none_or(|spec| !spec.stream_enabled()));

    // The disabled stream: DISABLED, every shard closed, its one record still readable.
    let described = streams
        .describe_stream()
        .stream_arn(&first)
        .send()
        .await
        .unwrap();
    let description = described.stream_description().unwrap();
    assert_eq!(description.stream_status(), Some(&StreamStatus::Disabled));
    assert_eq!(
        description.stream_view_type(),
        Some(&StreamsViewType::NewImage)
    );
    assert!(description.shards().iter().all(|shard| shard
        .sequence_number_range()
        .unwrap()
        .ending_sequence_number()
        .is_some()));
    let shard = description.shards()[0].shard_id().unwrap();
    let (records, ended) = read_on(
        &streams,
        iterator(
            &streams,
            &first,
            shard,
            ShardIteratorType::TrimHorizon,
            None,
        )
        .await,
    )
    .await;
    assert!(ended);
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].dynamodb().unwrap().keys().unwrap()["pk"],
        aws_sdk_dynamodbstreams::types::AttributeValue::S("during".into())
    );

    // Enabling again: a new ARN; both streams listed; each holds its own records.
    let enabled = client
        .update_table()
        .table_name("Toggled")
        .stream_specification(spec(Some(StreamViewType::KeysOnly)))
        .send()
        .await
        .unwrap();
    let second = enabled
        .table_description()
        .unwrap()
        .latest_stream_arn()
        .unwrap()
        .to_string();
    assert_ne!(second, first);
    put(&client, "Toggled", "reenabled", "1").await;
    let listed = streams
        .list_streams()
        .table_name("Toggled")
        .send()
        .await
        .unwrap();
    let mut arns: Vec<&str> = listed
        .streams()
        .iter()
        .map(|s| s.stream_arn().unwrap())
        .collect();
    arns.sort_unstable();
    let mut expected = [first.as_str(), second.as_str()];
    expected.sort_unstable();
    assert_eq!(arns, expected);
    let second_shard = shard_ids(&streams, &second).await.remove(0);
    let (records, _) = read_on(
        &streams,
        iterator(
            &streams,
            &second,
            &second_shard,
            ShardIteratorType::TrimHorizon,
            None,
        )
        .await,
    )
    .await;
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].dynamodb().unwrap().keys().unwrap()["pk"],
        aws_sdk_dynamodbstreams::types::AttributeValue::S("reenabled".into())
    );
    let (records, _) = read_on(
        &streams,
        iterator(
            &streams,
            &first,
            shard,
            ShardIteratorType::TrimHorizon,
            None,
        )
        .await,
    )
    .await;
    assert_eq!(records.len(), 1, "the old stream is unchanged");
}
