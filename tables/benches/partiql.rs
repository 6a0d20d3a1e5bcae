//! PartiQL's cost over the operation it compiles to: a key-lookup `SELECT` against the
//! GetItem of the same key, and a partition `SELECT` against the same Query, in the same run,
//! both through `Database::execute_json_text` (a server's path: JSON text in, JSON text out)
//! on a table of 100,000 items. The target is a SELECT at most 1.3x its GetItem.
//! Run: `cargo bench -p shoal-tables --bench partiql`.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use shoal_tables::{Database, Options};

const ITEMS: u64 = 100_000;
const BATCH_ITEMS: u64 = 25;

fn open() -> Database {
    let db = Database::open_in_memory(Options::default()).expect("open");
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Music",
            "AttributeDefinitions": [
                {"AttributeName": "Artist", "AttributeType": "S"},
                {"AttributeName": "SongTitle", "AttributeType": "S"}
            ],
            "KeySchema": [{"AttributeName": "Artist", "KeyType": "HASH"},
                          {"AttributeName": "SongTitle", "KeyType": "RANGE"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .expect("create table");
    for start in (0..ITEMS).step_by(BATCH_ITEMS as usize) {
        let requests: Vec<_> = (start..start + BATCH_ITEMS)
            .map(|n| {
                json!({"PutRequest": {"Item": {
                    "Artist": {"S": format!("artist{:05}", n / 10)},
                    "SongTitle": {"S": format!("song{}", n % 10)},
                    "Plays": {"N": n.to_string()},
                    "Album": {"S": "x".repeat(100)}
                }}})
            })
            .collect();
        db.execute(
            "BatchWriteItem",
            json!({"RequestItems": {"Music": requests}}),
        )
        .expect("load");
    }
    db
}

fn lookups(c: &mut Criterion) {
    let db = open();
    let get =
        br#"{"TableName":"Music","Key":{"Artist":{"S":"artist04242"},"SongTitle":{"S":"song7"}}}"#;
    let select = br#"{"Statement":"SELECT * FROM Music WHERE Artist = 'artist04242' AND SongTitle = 'song7'"}"#;
    let select_parameters = br#"{"Statement":"SELECT * FROM Music WHERE Artist = ? AND SongTitle = ?","Parameters":[{"S":"artist04242"},{"S":"song7"}]}"#;
    let query = br#"{"TableName":"Music","KeyConditionExpression":"Artist = :a","ExpressionAttributeValues":{":a":{"S":"artist04242"}}}"#;
    let select_partition = br#"{"Statement":"SELECT * FROM Music WHERE Artist = 'artist04242'"}"#;
    for (operation, body) in [
        ("GetItem", &get[..]),
        ("ExecuteStatement", &select[..]),
        ("Query", &query[..]),
        ("ExecuteStatement", &select_partition[..]),
    ] {
        let answer = db.execute_json_text(operation, body).expect("answer");
        assert!(answer.len() > 100, "{}", String::from_utf8_lossy(&answer));
    }
    let mut group = c.benchmark_group("partiql");
    group.bench_function("GetItem", |b| {
        b.iter(|| db.execute_json_text("GetItem", get).expect("get"))
    });
    group.bench_function("SELECT by key", |b| {
        b.iter(|| {
            db.execute_json_text("ExecuteStatement", select)
                .expect("select")
        })
    });
    group.bench_function("SELECT by key with parameters", |b| {
        b.iter(|| {
            db.execute_json_text("ExecuteStatement", select_parameters)
                .expect("select")
        })
    });
    group.bench_function("Query of 10 items", |b| {
        b.iter(|| db.execute_json_text("Query", query).expect("query"))
    });
    group.bench_function("SELECT of a partition of 10 items", |b| {
        b.iter(|| {
            db.execute_json_text("ExecuteStatement", select_partition)
                .expect("select")
        })
    });
    group.finish();
}

criterion_group!(benches, lookups);
criterion_main!(benches);
