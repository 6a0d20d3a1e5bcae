//! What opening a database costs: `Database::in_memory()` (what a Rust test suite opens once
//! per test) and, for comparison, opening a fresh data directory on disk. Each iteration
//! opens, creates one table, writes and reads one item, and drops the database.
//! Run: `cargo bench -p shoal-tables --bench open`.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use shoal_tables::{Database, Options};

fn use_once(db: &Database) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .expect("create table");
    db.execute(
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"id": {"S": "a"}, "v": {"N": "1"}}}),
    )
    .expect("put");
    let got = db
        .execute(
            "GetItem",
            json!({"TableName": "Tbl", "Key": {"id": {"S": "a"}}}),
        )
        .expect("get");
    assert_eq!(got["Item"]["v"], json!({"N": "1"}));
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("open");
    group.bench_function("in_memory", |b| {
        b.iter(|| Database::in_memory().expect("open"))
    });
    group.bench_function("in_memory_and_use", |b| {
        b.iter(|| {
            let db = Database::in_memory().expect("open");
            use_once(&db);
        })
    });
    group.sample_size(20);
    group.bench_function("fresh_directory_on_disk", |b| {
        b.iter_with_large_drop(|| {
            let dir = tempfile::tempdir().expect("temporary directory");
            let db = Database::open(dir.path(), Options::default()).expect("open");
            (db, dir)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
