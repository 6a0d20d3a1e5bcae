//! Query on a GSI with a multi-attribute key against the same data on a GSI keyed by
//! concatenated strings, the design multi-attribute keys replace. Each item carries
//! tenant (S), region (S), day (N) and seq (N); the composite GSI is keyed HASH (tenant,
//! region), RANGE (day, seq); the concatenated one HASH `tenant#region`, RANGE `day#seq`
//! with both numbers zero-padded so string order is number order. Both answer the same two
//! questions: one day of one tenant and region (`day = :d` / `begins_with(ds, "day#")`), and
//! a range of days (`day BETWEEN` / `ds BETWEEN`), 100 items a page.
//! Items: `SHOAL_GSI_BENCH_ITEMS` (default 200,000).
//! Run: `cargo bench -p shoal-tables --bench gsi_multi_attribute`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use shoal_tables::{Database, Durability, Options, StorageOptions};

const ITEMS_DEFAULT: u64 = 200_000;
/// Items per BatchWriteItem: DynamoDB's maximum.
const BATCH_ITEMS: u64 = 25;
/// Tenants × regions: the GSI partitions.
const TENANTS: u64 = 20;
const REGIONS: u64 = 5;
/// Items of one partition per day.
const PER_DAY: u64 = 20;

fn create(db: &Database) {
    let def = |name: &str, ty: &str| json!({"AttributeName": name, "AttributeType": ty});
    let key = |name: &str, kind: &str| json!({"AttributeName": name, "KeyType": kind});
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Events",
            "AttributeDefinitions": [def("id", "S"), def("tenant", "S"), def("region", "S"),
                def("day", "N"), def("seq", "N"), def("tr", "S"), def("ds", "S")],
            "KeySchema": [key("id", "HASH")],
            "GlobalSecondaryIndexes": [
                {"IndexName": "Composite",
                 "KeySchema": [key("tenant", "HASH"), key("region", "HASH"),
                               key("day", "RANGE"), key("seq", "RANGE")],
                 "Projection": {"ProjectionType": "KEYS_ONLY"}},
                {"IndexName": "Concatenated",
                 "KeySchema": [key("tr", "HASH"), key("ds", "RANGE")],
                 "Projection": {"ProjectionType": "KEYS_ONLY"}}
            ],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .expect("create table");
}

fn item(n: u64) -> Value {
    let partition = n % (TENANTS * REGIONS);
    let (tenant, region) = (partition / REGIONS, partition % REGIONS);
    let ordinal = n / (TENANTS * REGIONS);
    let (day, seq) = (ordinal / PER_DAY, ordinal % PER_DAY);
    json!({"PutRequest": {"Item": {
        "id": {"S": format!("e{n:08}")},
        "tenant": {"S": format!("t{tenant}")},
        "region": {"S": format!("r{region}")},
        "day": {"N": day.to_string()},
        "seq": {"N": seq.to_string()},
        "tr": {"S": format!("t{tenant}#r{region}")},
        "ds": {"S": format!("{day:06}#{seq:06}")},
        "payload": {"S": "x".repeat(60)}
    }}})
}

/// Runs one Query and returns its item count (so the work is not optimised away).
fn count(db: &Database, request: &Value) -> u64 {
    let response = db.execute("Query", request.clone()).expect("query");
    response["Count"].as_u64().unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let items: u64 = std::env::var("SHOAL_GSI_BENCH_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ITEMS_DEFAULT);
    let dir = tempfile::tempdir().expect("temporary directory");
    let options = Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        ..Options::default()
    };
    let db = Database::open(dir.path(), options).expect("open");
    create(&db);
    let mut n = 0;
    while n < items {
        let requests: Vec<Value> = (n..(n + BATCH_ITEMS).min(items)).map(item).collect();
        n += requests.len() as u64;
        db.execute(
            "BatchWriteItem",
            json!({"RequestItems": {"Events": requests}}),
        )
        .expect("load");
    }
    db.lsm().flush_all().expect("flush");
    let days = (items / (TENANTS * REGIONS)).div_ceil(PER_DAY).max(1);
    let (day, from, to) = (days / 2, days / 4, days / 4 + 5);

    // `day` and `region` are reserved words: the composite queries name them by alias.
    let query = |index: &str, condition: &str, values: Value| {
        let mut request = json!({"TableName": "Events", "IndexName": index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values, "Limit": 100});
        if index == "Composite" {
            request["ExpressionAttributeNames"] = json!({"#d": "day", "#r": "region"});
        }
        request
    };
    let composite_day = query(
        "Composite",
        "tenant = :t AND #r = :r AND #d = :d",
        json!({":t": {"S": "t3"}, ":r": {"S": "r2"}, ":d": {"N": day.to_string()}}),
    );
    let concatenated_day = query(
        "Concatenated",
        "tr = :tr AND begins_with(ds, :d)",
        json!({":tr": {"S": "t3#r2"}, ":d": {"S": format!("{day:06}#")}}),
    );
    let composite_range = query(
        "Composite",
        "tenant = :t AND #r = :r AND #d BETWEEN :from AND :to",
        json!({":t": {"S": "t3"}, ":r": {"S": "r2"},
               ":from": {"N": from.to_string()}, ":to": {"N": to.to_string()}}),
    );
    let concatenated_range = query(
        "Concatenated",
        "tr = :tr AND ds BETWEEN :from AND :to",
        json!({":tr": {"S": "t3#r2"},
               ":from": {"S": format!("{from:06}#")}, ":to": {"S": format!("{to:06}#~")}}),
    );
    // The two designs must answer alike, or the comparison means nothing.
    for (a, b) in [
        (&composite_day, &concatenated_day),
        (&composite_range, &concatenated_range),
    ] {
        let (a, b) = (count(&db, a), count(&db, b));
        assert_eq!(a, b, "both indexes find the same items");
        assert!(a > 0, "the query finds items");
    }
    let mut group = c.benchmark_group("gsi_query");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("composite_one_day", |b| {
        b.iter(|| count(&db, &composite_day))
    });
    group.bench_function("concatenated_one_day", |b| {
        b.iter(|| count(&db, &concatenated_day))
    });
    group.bench_function("composite_day_range", |b| {
        b.iter(|| count(&db, &composite_range))
    });
    group.bench_function("concatenated_day_range", |b| {
        b.iter(|| count(&db, &concatenated_range))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
