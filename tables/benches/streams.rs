//! What a stream costs writers, and how fast it is read (docs/PERFORMANCE.md, "Streams").
//!
//! - `put_item/no_stream` vs `put_item/new_and_old_images`: the same PutItem (an overwrite of
//!   one of 10,000 items of about 200 bytes, so every record carries two images) on a table
//!   without a stream and on one with a NEW_AND_OLD_IMAGES stream, in the same run. No fsync
//!   (`Durability::None`), so the time is the CPU a write costs; the target is at most 1.3x.
//! - `get_records/1000`: one GetRecords of 1,000 small records, embedded (no HTTP); the
//!   target is under 2 ms. `put_item_on_disk/…` is the same pair with the write-ahead log
//!   in files (written, not synced). `stream_reader/1000` reads the same through `StreamReader`.
//!
//! Run: `cargo bench -p shoal-tables --bench streams`.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use shoal_model::{AttributeValue, Item};
use shoal_tables::api::items::PutItemInput;
use shoal_tables::api::streams::{GetRecordsInput, GetShardIteratorInput};
use shoal_tables::{Database, Durability, Options, StorageOptions, StreamStart};

const KEYS: u64 = 10_000;

fn create(db: &Database, name: &str, stream: Option<&str>) {
    let mut request = json!({
        "TableName": name,
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST"
    });
    if let Some(view) = stream {
        request["StreamSpecification"] = json!({"StreamEnabled": true, "StreamViewType": view});
    }
    db.execute("CreateTable", request).expect("create table");
}

fn item(n: u64, version: u64) -> Item {
    let mut item = Item::new();
    item.insert(
        "pk".into(),
        AttributeValue::S(format!("user{:06}", n % KEYS)),
    );
    item.insert(
        "version".into(),
        AttributeValue::N(version.to_string().parse().expect("number")),
    );
    item.insert(
        "city".into(),
        AttributeValue::S(format!("city{}", n % 1000)),
    );
    item.insert("payload".into(), AttributeValue::S("x".repeat(150)));
    item
}

fn put(db: &Database, table: &str, n: u64) {
    db.put_item(PutItemInput {
        table_name: Some(table.to_string()),
        item: Some(item(n, n)),
        ..PutItemInput::default()
    })
    .expect("put");
}

fn bench_put(c: &mut Criterion) {
    let options = Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        ..Options::default()
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    // In memory, and on disk (the WAL written to files, not synced).
    for (group_name, db) in [
        (
            "put_item",
            Database::open_in_memory(options.clone()).expect("open"),
        ),
        (
            "put_item_on_disk",
            Database::open(dir.path(), options.clone()).expect("open"),
        ),
    ] {
        create(&db, "Plain", None);
        create(&db, "Streamed", Some("NEW_AND_OLD_IMAGES"));
        for n in 0..KEYS {
            put(&db, "Plain", n);
            put(&db, "Streamed", n);
        }
        let mut group = c.benchmark_group(group_name);
        for (name, table) in [("no_stream", "Plain"), ("new_and_old_images", "Streamed")] {
            let mut n = 0u64;
            group.bench_function(name, |b| {
                b.iter(|| {
                    n += 1;
                    put(&db, table, n);
                })
            });
        }
        group.finish();
    }
}

fn bench_read(c: &mut Criterion) {
    let db = Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .expect("open");
    create(&db, "Feed", Some("NEW_AND_OLD_IMAGES"));
    let small = |n: u64| -> Value {
        json!({"PutRequest": {"Item": {"pk": {"S": format!("k{n:05}")}, "v": {"N": n.to_string()}}}})
    };
    for first in (0..1000).step_by(25) {
        let requests: Vec<Value> = (first..first + 25).map(small).collect();
        db.execute(
            "BatchWriteItem",
            json!({"RequestItems": {"Feed": requests}}),
        )
        .expect("load");
    }
    let arn = db
        .execute("DescribeTable", json!({"TableName": "Feed"}))
        .expect("describe")["Table"]["LatestStreamArn"]
        .as_str()
        .expect("stream arn")
        .to_string();
    let shard = db
        .execute("DescribeStream", json!({"StreamArn": arn}))
        .expect("describe stream")["StreamDescription"]["Shards"][0]["ShardId"]
        .as_str()
        .expect("shard")
        .to_string();
    let iterator = db
        .get_shard_iterator(GetShardIteratorInput {
            stream_arn: Some(arn),
            shard_id: Some(shard),
            shard_iterator_type: Some("TRIM_HORIZON".into()),
            sequence_number: None,
        })
        .expect("iterator")
        .shard_iterator;
    let read = db
        .get_records(GetRecordsInput {
            shard_iterator: Some(iterator.clone()),
            limit: Some(1000),
        })
        .expect("records");
    assert_eq!(read.records.len(), 1000, "the bench reads 1,000 records");

    c.bench_function("get_records/1000", |b| {
        b.iter(|| {
            db.get_records(GetRecordsInput {
                shard_iterator: Some(iterator.clone()),
                limit: Some(1000),
            })
            .expect("records")
        })
    });
    c.bench_function("stream_reader/1000", |b| {
        b.iter(|| {
            let mut reader = db
                .stream_reader("Feed", StreamStart::TrimHorizon)
                .expect("reader");
            let records = reader.read(1000).expect("read");
            assert_eq!(records.len(), 1000);
            records
        })
    });
}

criterion_group!(benches, bench_put, bench_read);
criterion_main!(benches);
