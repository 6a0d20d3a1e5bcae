//! Shoal's embedded table API against Dynoxide's embedded `Database` (dynoxide-rs 3.2, SQLite)
//! on the same table, the same items and the same requests, in one run (issue 5's
//! performance section). Each operation is a pair `tables/<op>/shoal`, `tables/<op>/dynoxide`.
//!
//! Run: `cd benches/peers && cargo bench --bench tables_peers` (about 3.5 minutes).
//! `SHOAL_TABLES_NO_FSYNC=1` runs the same benches with neither engine syncing per write:
//! Shoal `Durability::None`; Dynoxide in its bulk-loading mode (`synchronous = OFF`, and
//! also a larger page cache and mmap, which can only favour Dynoxide).
//!
//! Durability: Dynoxide's file-backed database opens SQLite in WAL mode and never sets
//! `synchronous`, so the compiled-in default FULL applies (libsqlite3-sys 0.34's bundled build
//! does not override `SQLITE_DEFAULT_SYNCHRONOUS` / `SQLITE_DEFAULT_WAL_SYNCHRONOUS`): every
//! write is one SQLite transaction whose commit fsyncs the WAL (strace shows an fsync of the
//! `-wal` file per PutItem). Shoal's equivalent is `Durability::Sync`, its default: a write
//! is acknowledged after its WAL record is fdatasynced.
//!
//! Table: pk S (HASH), sk S (RANGE); LSI `ByL1` (pk, l1 S) INCLUDE [a, b]; LSI `ByL2`
//! (pk, l2 N) INCLUDE [a]; GSI `ByG1` (g1 S, sk) ALL; GSI `ByG2` (g2 S, l2 N) KEYS_ONLY.
//! Items are ~1 KB (nine small attributes and a 900-byte payload), all four indexes populated.
//! Data: 10,000 partition keys. 100 "hot" partitions hold 60 items each (the 50-item queries
//! read them; each hot partition also has its own g1 value, so a GSI query finds 60 items);
//! the other 9,900 partitions hold one item each. 15,900 items preloaded, then Shoal's
//! memtables are flushed so reads come from SSTables, not only from memory.
//!
//! Writes: `put_new` adds items in new partitions, `put_overwrite` rewrites one-item
//! partitions (same index keys, new `v`), `update_index_key` sets a new `l1` on one-item
//! partitions. Reads: GetItem of preloaded items; Query `Limit 50` on the table, on ByL1
//! within its projection, on ByL1 with `Select ALL_ATTRIBUTES` (fetches each base item), on
//! ByG1; Scan pages of 50 walking the table. Reads are measured first, on the preloaded data
//! only. Before timing, every read and one write of each kind run once on both engines and
//! the bench panics unless both return the same shape.
//!
//! Requests are built outside the timed routine (criterion `iter_batched`), except for Scan,
//! whose next request depends on the previous page; responses are dropped inside it.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion};
use dynoxide::actions as dx;
use serde_json::json;
use shoal_tables::api::items::{GetItemInput, PutItemInput, UpdateItemInput};
use shoal_tables::api::query::{QueryRequest, ScanRequest};
use shoal_tables::{Database, Durability, Options, StorageOptions};

/// The allocator the `shoal` binary uses; both engines in this process share it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TABLE: &str = "Bench";
const HOT_PARTITIONS: u64 = 100;
const HOT_ITEMS_PER_PARTITION: u64 = 60;
const COLD_PARTITIONS: u64 = 9_900;
const ITEMS_PRELOADED: u64 = HOT_PARTITIONS * HOT_ITEMS_PER_PARTITION + COLD_PARTITIONS;
/// Items per Query and per Scan page (`Limit`).
const PAGE_ITEMS: usize = 50;
const PAYLOAD_BYTES: usize = 900;

/// An attribute value in a form both engines' value types are built from.
#[derive(Debug)]
enum Value {
    S(String),
    N(i64),
}

type Attributes = Vec<(&'static str, Value)>;

/// An `S` value.
fn s(text: impl Into<String>) -> Value {
    Value::S(text.into())
}

/// The primary key of preloaded item `n` (0..ITEMS_PRELOADED): hot items first.
fn preloaded_key(n: u64) -> (String, String) {
    let hot_items = HOT_PARTITIONS * HOT_ITEMS_PER_PARTITION;
    if n < hot_items {
        let (partition, position) = (n / HOT_ITEMS_PER_PARTITION, n % HOT_ITEMS_PER_PARTITION);
        (format!("hot{partition:03}"), format!("s{position:03}"))
    } else {
        (format!("cold{:04}", n - hot_items), "s000".to_string())
    }
}

fn hot_partition_key(partition: u64) -> String {
    format!("hot{partition:03}")
}

fn hot_g1(partition: u64) -> String {
    format!("g{partition:03}")
}

/// A ~1 KB item. `version` only changes the non-key attribute `v`, so a rewrite of the same
/// key keeps its index keys but rewrites every ALL/INCLUDE projection that carries `v`.
fn item(pk: String, sk: String, position: u64, g1: String, version: i64) -> Attributes {
    let position = position as i64;
    vec![
        ("pk", s(pk.clone())),
        ("sk", s(sk)),
        ("l1", s(format!("l{position:03}"))),
        ("l2", Value::N(position)),
        ("g1", s(g1)),
        ("g2", s(format!("k{}", pk.len() % 16))),
        ("a", s(format!("a-{pk}-{position}"))),
        ("b", Value::N(position * 7)),
        ("v", Value::N(version)),
        ("payload", s("x".repeat(PAYLOAD_BYTES))),
    ]
}

fn preloaded_item(n: u64, version: i64) -> Attributes {
    let (pk, sk) = preloaded_key(n);
    let hot_items = HOT_PARTITIONS * HOT_ITEMS_PER_PARTITION;
    if n < hot_items {
        let partition = n / HOT_ITEMS_PER_PARTITION;
        item(
            pk,
            sk,
            n % HOT_ITEMS_PER_PARTITION,
            hot_g1(partition),
            version,
        )
    } else {
        let g1 = format!("c{:02}", (n - hot_items) % 100);
        item(pk, sk, 0, g1, version)
    }
}

/// One Query, engine-neutral.
struct QuerySpec {
    index_name: Option<&'static str>,
    key_condition: &'static str,
    values: Attributes,
    projection: Option<&'static str>,
    select: Option<&'static str>,
}

/// The queries measured, by bench name.
fn queries() -> Vec<(&'static str, QuerySpec)> {
    let partition = |p: u64| vec![(":p", s(hot_partition_key(p)))];
    vec![
        (
            "query_table_50",
            QuerySpec {
                index_name: None,
                key_condition: "pk = :p",
                values: partition(7),
                projection: None,
                select: None,
            },
        ),
        (
            // Every requested attribute is in ByL1's projection: answered from the index.
            "query_lsi_50_projected",
            QuerySpec {
                index_name: Some("ByL1"),
                key_condition: "pk = :p",
                values: partition(8),
                projection: Some("pk, sk, l1, a, b"),
                select: None,
            },
        ),
        (
            // Whole items, payload included, which ByL1 does not project: each item is fetched
            // from the table. Asked with Select rather than a ProjectionExpression naming the
            // payload because Dynoxide 3.2 fetches only for ALL_ATTRIBUTES (for a projection
            // expression it silently leaves out what the index lacks).
            "query_lsi_50_fetch",
            QuerySpec {
                index_name: Some("ByL1"),
                key_condition: "pk = :p",
                values: partition(9),
                projection: None,
                select: Some("ALL_ATTRIBUTES"),
            },
        ),
        (
            "query_gsi_50",
            QuerySpec {
                index_name: Some("ByG1"),
                key_condition: "g1 = :g",
                values: vec![(":g", s(hot_g1(10)))],
                projection: None,
                select: None,
            },
        ),
    ]
}

/// What a read returned: items and attributes over all items, so the one-off check before
/// timing catches two engines doing different work (a missing fetch, a wrong projection).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct ReadShape {
    items: usize,
    attributes: usize,
}

/// One engine under test. Requests are built by the `*_request` functions, outside the
/// timed part; the other methods execute them and panic on any error.
trait Engine {
    type Put;
    type Update;
    type Get;
    type Query;
    type Key: Clone;

    fn put_request(item: &Attributes) -> Self::Put;
    fn put(&self, request: Self::Put);
    fn update_l1_request(pk: String, sk: String, l1: String) -> Self::Update;
    fn update(&self, request: Self::Update);
    fn get_request(pk: String, sk: String) -> Self::Get;
    fn get(&self, request: Self::Get) -> ReadShape;
    fn query_request(spec: &QuerySpec) -> Self::Query;
    fn query(&self, request: Self::Query) -> ReadShape;
    /// One Scan page of `PAGE_ITEMS` items from `start`, and where the next page starts.
    fn scan_page(&self, start: Option<Self::Key>) -> (ReadShape, Option<Self::Key>);
}

// ---- Shoal ----

fn shoal_value(value: &Value) -> shoal_model::AttributeValue {
    match value {
        Value::S(text) => shoal_model::AttributeValue::S(text.clone()),
        Value::N(number) => shoal_model::AttributeValue::N(shoal_model::Number::from_i64(*number)),
    }
}

fn shoal_map(attributes: &Attributes) -> BTreeMap<String, shoal_model::AttributeValue> {
    attributes
        .iter()
        .map(|(name, value)| (name.to_string(), shoal_value(value)))
        .collect()
}

fn shoal_key(pk: String, sk: String) -> shoal_model::Item {
    shoal_map(&vec![("pk", Value::S(pk)), ("sk", Value::S(sk))])
}

fn shoal_shape(items: &[shoal_model::Item]) -> ReadShape {
    ReadShape {
        items: items.len(),
        attributes: items.iter().map(|item| item.len()).sum(),
    }
}

impl Engine for Database {
    type Put = PutItemInput;
    type Update = UpdateItemInput;
    type Get = GetItemInput;
    type Query = QueryRequest;
    type Key = shoal_model::Item;

    fn put_request(item: &Attributes) -> PutItemInput {
        PutItemInput {
            table_name: Some(TABLE.to_string()),
            item: Some(shoal_map(item)),
            ..Default::default()
        }
    }

    fn put(&self, request: PutItemInput) {
        self.put_item(request).expect("shoal put");
    }

    fn update_l1_request(pk: String, sk: String, l1: String) -> UpdateItemInput {
        UpdateItemInput {
            table_name: Some(TABLE.to_string()),
            key: Some(shoal_key(pk, sk)),
            update_expression: Some("SET l1 = :l1".to_string()),
            expression_attribute_values: Some(shoal_map(&vec![(":l1", Value::S(l1))])),
            ..Default::default()
        }
    }

    fn update(&self, request: UpdateItemInput) {
        self.update_item(request).expect("shoal update");
    }

    fn get_request(pk: String, sk: String) -> GetItemInput {
        GetItemInput {
            table_name: Some(TABLE.to_string()),
            key: Some(shoal_key(pk, sk)),
            ..Default::default()
        }
    }

    fn get(&self, request: GetItemInput) -> ReadShape {
        let output = self.get_item(request).expect("shoal get");
        shoal_shape(output.item.as_slice())
    }

    fn query_request(spec: &QuerySpec) -> QueryRequest {
        QueryRequest {
            table_name: Some(TABLE.to_string()),
            index_name: spec.index_name.map(str::to_string),
            key_condition_expression: Some(spec.key_condition.to_string()),
            expression_attribute_values: Some(shoal_map(&spec.values)),
            projection_expression: spec.projection.map(str::to_string),
            select: spec.select.map(str::to_string),
            limit: Some(PAGE_ITEMS as i64),
            ..Default::default()
        }
    }

    fn query(&self, request: QueryRequest) -> ReadShape {
        let response = Database::query(self, request).expect("shoal query");
        shoal_shape(response.items.as_deref().unwrap_or_default())
    }

    fn scan_page(
        &self,
        start: Option<shoal_model::Item>,
    ) -> (ReadShape, Option<shoal_model::Item>) {
        let response = self
            .scan(ScanRequest {
                table_name: Some(TABLE.to_string()),
                limit: Some(PAGE_ITEMS as i64),
                exclusive_start_key: start,
                ..Default::default()
            })
            .expect("shoal scan");
        let shape = shoal_shape(response.items.as_deref().unwrap_or_default());
        (shape, response.last_evaluated_key)
    }
}

// ---- Dynoxide ----

fn dynoxide_value(value: &Value) -> dynoxide::AttributeValue {
    match value {
        Value::S(text) => dynoxide::AttributeValue::S(text.clone()),
        Value::N(number) => dynoxide::AttributeValue::N(number.to_string()),
    }
}

fn dynoxide_map(attributes: &Attributes) -> HashMap<String, dynoxide::AttributeValue> {
    attributes
        .iter()
        .map(|(name, value)| (name.to_string(), dynoxide_value(value)))
        .collect()
}

fn dynoxide_key(pk: String, sk: String) -> dynoxide::Item {
    dynoxide_map(&vec![("pk", Value::S(pk)), ("sk", Value::S(sk))])
}

fn dynoxide_shape(items: &[dynoxide::Item]) -> ReadShape {
    ReadShape {
        items: items.len(),
        attributes: items.iter().map(|item| item.len()).sum(),
    }
}

impl Engine for dynoxide::Database {
    type Put = dx::put_item::PutItemRequest;
    type Update = dx::update_item::UpdateItemRequest;
    type Get = dx::get_item::GetItemRequest;
    type Query = dx::query::QueryRequest;
    type Key = dynoxide::Item;

    fn put_request(item: &Attributes) -> Self::Put {
        dx::put_item::PutItemRequest {
            table_name: TABLE.to_string(),
            item: dynoxide_map(item),
            ..Default::default()
        }
    }

    fn put(&self, request: Self::Put) {
        self.put_item(request).expect("dynoxide put");
    }

    fn update_l1_request(pk: String, sk: String, l1: String) -> Self::Update {
        dx::update_item::UpdateItemRequest {
            table_name: TABLE.to_string(),
            key: dynoxide_key(pk, sk),
            update_expression: Some("SET l1 = :l1".to_string()),
            expression_attribute_values: Some(dynoxide_map(&vec![(":l1", Value::S(l1))])),
            ..Default::default()
        }
    }

    fn update(&self, request: Self::Update) {
        self.update_item(request).expect("dynoxide update");
    }

    fn get_request(pk: String, sk: String) -> Self::Get {
        dx::get_item::GetItemRequest {
            table_name: TABLE.to_string(),
            key: dynoxide_key(pk, sk),
            ..Default::default()
        }
    }

    fn get(&self, request: Self::Get) -> ReadShape {
        let response = self.get_item(request).expect("dynoxide get");
        dynoxide_shape(response.item.as_slice())
    }

    fn query_request(spec: &QuerySpec) -> Self::Query {
        dx::query::QueryRequest {
            table_name: TABLE.to_string(),
            index_name: spec.index_name.map(str::to_string),
            key_condition_expression: Some(spec.key_condition.to_string()),
            expression_attribute_values: Some(dynoxide_map(&spec.values)),
            projection_expression: spec.projection.map(str::to_string),
            select: spec.select.map(str::to_string),
            limit: Some(PAGE_ITEMS),
            // The struct's Default says false; DynamoDB's default is forward.
            scan_index_forward: true,
            ..Default::default()
        }
    }

    fn query(&self, request: Self::Query) -> ReadShape {
        let response = dynoxide::Database::query(self, request).expect("dynoxide query");
        dynoxide_shape(response.items.as_deref().unwrap_or_default())
    }

    fn scan_page(&self, start: Option<dynoxide::Item>) -> (ReadShape, Option<dynoxide::Item>) {
        let response = self
            .scan(dx::scan::ScanRequest {
                table_name: TABLE.to_string(),
                limit: Some(PAGE_ITEMS),
                exclusive_start_key: start,
                ..Default::default()
            })
            .expect("dynoxide scan");
        let shape = dynoxide_shape(response.items.as_deref().unwrap_or_default());
        (shape, response.last_evaluated_key)
    }
}

// ---- Setup ----

fn create_table_json() -> serde_json::Value {
    let key_schema = |hash: &str, range: &str| json!([{"AttributeName": hash, "KeyType": "HASH"}, {"AttributeName": range, "KeyType": "RANGE"}]);
    let include = |names: &[&str]| json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": names});
    json!({
        "TableName": TABLE,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "l1", "AttributeType": "S"},
            {"AttributeName": "l2", "AttributeType": "N"},
            {"AttributeName": "g1", "AttributeType": "S"},
            {"AttributeName": "g2", "AttributeType": "S"}
        ],
        "KeySchema": key_schema("pk", "sk"),
        "LocalSecondaryIndexes": [
            {"IndexName": "ByL1", "KeySchema": key_schema("pk", "l1"), "Projection": include(&["a", "b"])},
            {"IndexName": "ByL2", "KeySchema": key_schema("pk", "l2"), "Projection": include(&["a"])}
        ],
        "GlobalSecondaryIndexes": [
            {"IndexName": "ByG1", "KeySchema": key_schema("g1", "sk"), "Projection": {"ProjectionType": "ALL"}},
            {"IndexName": "ByG2", "KeySchema": key_schema("g2", "l2"), "Projection": {"ProjectionType": "KEYS_ONLY"}}
        ],
        "BillingMode": "PAY_PER_REQUEST"
    })
}

fn syncs_per_write() -> bool {
    std::env::var("SHOAL_TABLES_NO_FSYNC").map_or(true, |v| v.is_empty() || v == "0")
}

fn open_shoal(dir: &Path, sync: bool) -> Database {
    // Preloading without a sync per item only saves time: the data is flushed to SSTables
    // and the database reopened with the durability under test.
    let options = |durability| Options {
        storage: StorageOptions {
            durability,
            ..StorageOptions::default()
        },
        ..Options::default()
    };
    {
        let db = Database::open(dir, options(Durability::None)).expect("open shoal");
        db.execute("CreateTable", create_table_json())
            .expect("shoal create table");
        for n in 0..ITEMS_PRELOADED {
            db.put(<Database as Engine>::put_request(&preloaded_item(n, 0)));
        }
        db.lsm().flush_all().expect("shoal flush");
    }
    let durability = if sync {
        Durability::Sync
    } else {
        Durability::None
    };
    Database::open(dir, options(durability)).expect("reopen shoal")
}

fn open_dynoxide(dir: &Path, sync: bool) -> dynoxide::Database {
    let path = dir.join("dynoxide.db");
    let path = path.to_str().expect("utf-8 path");
    {
        let db = dynoxide::Database::new(path).expect("open dynoxide");
        let request: dx::create_table::CreateTableRequest =
            serde_json::from_value(create_table_json()).expect("dynoxide create table request");
        db.create_table(request).expect("dynoxide create table");
        // Preloading without a sync per item only saves time. The database is reopened
        // afterwards because `disable_bulk_loading` does not restore the opening state: it
        // sets `synchronous = NORMAL`, which in WAL mode stops syncing at each commit.
        db.enable_bulk_loading().expect("dynoxide bulk loading");
        for n in 0..ITEMS_PRELOADED {
            db.put(<dynoxide::Database as Engine>::put_request(
                &preloaded_item(n, 0),
            ));
        }
    }
    let db = dynoxide::Database::new(path).expect("reopen dynoxide");
    if !sync {
        db.enable_bulk_loading().expect("dynoxide bulk loading");
    }
    db
}

/// Runs every read once on both engines and panics unless they returned the same shape, so
/// the timings below cannot compare different work.
fn check_same_reads(shoal: &Database, dynoxide: &dynoxide::Database) {
    fn reads<E: Engine>(db: &E) -> Vec<(&'static str, ReadShape)> {
        let (pk, sk) = preloaded_key(4321);
        let mut shapes = vec![("get_item", db.get(E::get_request(pk, sk)))];
        for (name, spec) in queries() {
            shapes.push((name, db.query(E::query_request(&spec))));
        }
        shapes.push(("scan_page_50", db.scan_page(None).0));
        shapes
    }
    let shoal_reads = reads(shoal);
    let dynoxide_reads = reads(dynoxide);
    assert_eq!(
        shoal_reads, dynoxide_reads,
        "the engines answered the same reads differently"
    );
    for (name, shape) in &shoal_reads {
        let items_expected = if *name == "get_item" { 1 } else { PAGE_ITEMS };
        assert_eq!(shape.items, items_expected, "{name}: {shape:?}");
    }
}

/// Makes one write of each kind on both engines (counter 0; the benches count from 1) and
/// panics unless they landed the same way: the new item is there whole, and the UpdateItem
/// moved its ByL1 entry (a query on the new `l1` finds it).
fn check_same_writes(shoal: &Database, dynoxide: &dynoxide::Database) {
    fn write_and_read<E: Engine>(db: &E) -> Vec<ReadShape> {
        let new = new_item(0);
        db.put(E::put_request(&new));
        let (updated_pk, updated_sk) = update_target(0);
        db.update(E::update_l1_request(
            updated_pk.clone(),
            updated_sk,
            updated_l1(0),
        ));
        let (new_pk, new_sk) = primary_key(&new);
        let moved_entry = QuerySpec {
            index_name: Some("ByL1"),
            key_condition: "pk = :p AND l1 = :l1",
            values: vec![(":p", s(updated_pk)), (":l1", s(updated_l1(0)))],
            projection: None,
            select: None,
        };
        vec![
            db.get(E::get_request(new_pk, new_sk)),
            db.query(E::query_request(&moved_entry)),
        ]
    }
    let shoal_reads = write_and_read(shoal);
    assert_eq!(
        shoal_reads,
        write_and_read(dynoxide),
        "the engines applied the same writes differently"
    );
    assert!(
        shoal_reads.iter().all(|shape| shape.items == 1),
        "{shoal_reads:?}"
    );
}

fn primary_key(attributes: &Attributes) -> (String, String) {
    let text = |name: &str| match attributes.iter().find(|(n, _)| *n == name) {
        Some((_, Value::S(text))) => text.clone(),
        other => panic!("{name}: {other:?}"),
    };
    (text("pk"), text("sk"))
}

/// Benches one kind of write on one engine: `attributes(i)` is the i-th item written.
fn bench_put<E: Engine>(
    group: &mut BenchmarkGroup<WallTime>,
    operation: &str,
    engine_name: &str,
    db: &E,
    attributes: fn(u64) -> Attributes,
) {
    let mut counter = 0u64;
    group.bench_function(format!("{operation}/{engine_name}"), |b| {
        b.iter_batched(
            || {
                counter += 1;
                E::put_request(&attributes(counter))
            },
            |request| db.put(request),
            BatchSize::SmallInput,
        )
    });
}

/// A brand-new item in a new partition: the table and all four indexes gain an entry.
fn new_item(counter: u64) -> Attributes {
    item(
        format!("new{counter:08}"),
        "s000".to_string(),
        counter % 60,
        format!("n{:02}", counter % 100),
        0,
    )
}

/// A preloaded one-item partition, rewritten with a new `v`.
fn overwrite_item(counter: u64) -> Attributes {
    let hot_items = HOT_PARTITIONS * HOT_ITEMS_PER_PARTITION;
    preloaded_item(hot_items + counter % COLD_PARTITIONS, counter as i64)
}

/// The key of the counter-th UpdateItem: a one-item partition.
fn update_target(counter: u64) -> (String, String) {
    let hot_items = HOT_PARTITIONS * HOT_ITEMS_PER_PARTITION;
    preloaded_key(hot_items + counter % COLD_PARTITIONS)
}

/// The counter-th UpdateItem's `l1`, one no item had before, so the ByL1 entry moves.
fn updated_l1(counter: u64) -> String {
    format!("u{counter:09}")
}

/// UpdateItem `SET l1 = :l1` on one-item partitions, each time to an `l1` the item never
/// had, so its ByL1 entry moves (a delete and a put in the index).
fn bench_update<E: Engine>(group: &mut BenchmarkGroup<WallTime>, engine_name: &str, db: &E) {
    let mut counter = 0u64;
    group.bench_function(format!("update_index_key/{engine_name}"), |b| {
        b.iter_batched(
            || {
                counter += 1;
                let (pk, sk) = update_target(counter);
                E::update_l1_request(pk, sk, updated_l1(counter))
            },
            |request| db.update(request),
            BatchSize::SmallInput,
        )
    });
}

/// GetItem of preloaded items in a scattered order (a stride coprime with the item count).
fn bench_get<E: Engine>(group: &mut BenchmarkGroup<WallTime>, engine_name: &str, db: &E) {
    let mut counter = 0u64;
    group.bench_function(format!("get_item/{engine_name}"), |b| {
        b.iter_batched(
            || {
                counter += 1;
                let (pk, sk) = preloaded_key(counter * 7_919 % ITEMS_PRELOADED);
                E::get_request(pk, sk)
            },
            |request| db.get(request),
            BatchSize::SmallInput,
        )
    });
}

fn bench_query<E: Engine>(
    group: &mut BenchmarkGroup<WallTime>,
    operation: &str,
    spec: &QuerySpec,
    engine_name: &str,
    db: &E,
) {
    group.bench_function(format!("{operation}/{engine_name}"), |b| {
        b.iter_batched(
            || E::query_request(spec),
            |request| db.query(request),
            BatchSize::SmallInput,
        )
    });
}

/// Scan pages of 50 items walking the whole table (wrapping at the end), so the figure is
/// the cost of a page anywhere in the table, not of the first page only. The request is
/// built inside the timed loop: it needs the previous page's LastEvaluatedKey.
fn bench_scan<E: Engine>(group: &mut BenchmarkGroup<WallTime>, engine_name: &str, db: &E) {
    let mut start = None;
    group.bench_function(format!("scan_page_50/{engine_name}"), |b| {
        b.iter(|| {
            let (shape, next) = db.scan_page(start.take());
            start = next;
            shape
        })
    });
}

fn bench(c: &mut Criterion) {
    let sync = syncs_per_write();
    let shoal_dir = tempfile::tempdir().expect("temporary directory");
    let dynoxide_dir = tempfile::tempdir().expect("temporary directory");
    let shoal = open_shoal(shoal_dir.path(), sync);
    let dynoxide = open_dynoxide(dynoxide_dir.path(), sync);
    check_same_reads(&shoal, &dynoxide);

    let mut group = c.benchmark_group("tables");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));

    // Each operation on Shoal, then on Dynoxide, so the report shows them side by side.
    // Reads come first, on the preloaded data: after the writes, how much Shoal still holds
    // in memtables and unmerged SSTables (and compacts in the background) would depend on
    // how many writes criterion happened to time, which depends on the disk's fsync latency.
    bench_get(&mut group, "shoal", &shoal);
    bench_get(&mut group, "dynoxide", &dynoxide);
    for (operation, spec) in queries() {
        bench_query(&mut group, operation, &spec, "shoal", &shoal);
        bench_query(&mut group, operation, &spec, "dynoxide", &dynoxide);
    }
    bench_scan(&mut group, "shoal", &shoal);
    bench_scan(&mut group, "dynoxide", &dynoxide);

    check_same_writes(&shoal, &dynoxide);
    bench_put(&mut group, "put_new", "shoal", &shoal, new_item);
    bench_put(&mut group, "put_new", "dynoxide", &dynoxide, new_item);
    bench_put(&mut group, "put_overwrite", "shoal", &shoal, overwrite_item);
    bench_put(
        &mut group,
        "put_overwrite",
        "dynoxide",
        &dynoxide,
        overwrite_item,
    );
    bench_update(&mut group, "shoal", &shoal);
    bench_update(&mut group, "dynoxide", &dynoxide);
    group.finish();
    // Write stalls and the LSM's shape explain outlying write samples.
    let stats = shoal.lsm().stats();
    eprintln!(
        "shoal after the writes: {} write stalls, {:?} stalled in all (longest {:?}), \
         files per level {:?}, write amplification {:.2}",
        stats.write_stalls,
        stats.stall_time_total,
        stats.stall_time_longest,
        stats.level_files,
        stats.write_amplification
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
