//! Competing transactions, single writes and snapshot reads on overlapping items, on threads.
//!
//! Every write appends its id to a history list on each item it touches (and counts), so
//! at the end each item holds the order in which writes reached it. The run is serialisable
//! exactly when those per-item orders agree with one total order: the precedence graph they
//! induce has no cycle. Besides:
//! - every committed write appears once on each of its items, cancelled ones nowhere;
//! - every TransactGetItems snapshot is atomic: a write id seen on one item is present on
//!   every item that write touched (ids name their items);
//! - `Database::check` finds the LSI, the GSI and the collection records exact.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::thread;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::{Database, Durability, Options, StorageOptions};

const ITEMS: usize = 8;
const WRITERS: usize = 3;
const WRITES_PER_THREAD: usize = 150;

fn key(item: usize) -> Value {
    json!({"pk": {"S": format!("p{}", item % 3)}, "sk": {"S": format!("s{item}")}})
}

fn setup() -> Database {
    let db = Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            memtable_size_bytes: 64 << 10,
            wal_segment_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Counters",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "last", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "LocalSecondaryIndexes": [{
                "IndexName": "ByLast",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "last", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"}
            }],
            "GlobalSecondaryIndexes": [{
                "IndexName": "GlobalLast",
                "KeySchema": [{"AttributeName": "last", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    for item in 0..ITEMS {
        let mut stored = key(item);
        stored["n"] = json!({"N": "0"});
        stored["hist"] = json!({"L": []});
        db.execute("PutItem", json!({"TableName": "Counters", "Item": stored}))
            .unwrap();
    }
    db
}

/// The update every write applies to each of its items.
fn append(id: &str) -> (String, Value) {
    (
        "SET n = n + :one, hist = list_append(hist, :id), #last = :last".into(),
        json!({":one": {"N": "1"}, ":id": {"L": [{"S": id}]}, ":last": {"S": id}}),
    )
}

/// `w<thread>.<n>:<item>,<item>…`: an id that names the items its write touches.
fn write_id(thread: usize, n: usize, items: &[usize]) -> String {
    let list: Vec<String> = items.iter().map(usize::to_string).collect();
    format!("w{thread}.{n}:{}", list.join(","))
}

fn items_of(id: &str) -> Vec<usize> {
    id.split_once(':')
        .map(|(_, list)| list.split(',').filter_map(|i| i.parse().ok()).collect())
        .unwrap_or_default()
}

fn history(item: &Value) -> Vec<String> {
    item["hist"]["L"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| v["S"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs one writer; returns the ids it committed.
fn writer(db: &Database, thread: usize) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(thread as u64 * 7919 + 1);
    let mut committed = Vec::new();
    for n in 0..WRITES_PER_THREAD {
        let mut pool: Vec<usize> = (0..ITEMS).collect();
        let count = if rng.random_bool(0.25) {
            1
        } else {
            rng.random_range(2..=4)
        };
        let mut items: Vec<usize> = (0..count)
            .map(|_| pool.swap_remove(rng.random_range(0..pool.len())))
            .collect();
        items.sort_unstable();
        let id = write_id(thread, n, &items);
        let (update, values) = append(&id);
        let result = if count == 1 {
            db.execute(
                "UpdateItem",
                json!({"TableName": "Counters", "Key": key(items[0]), "UpdateExpression": update,
                       "ExpressionAttributeNames": {"#last": "last"}, "ExpressionAttributeValues": values}),
            )
        } else {
            let mut actions: Vec<Value> = items
                .iter()
                .map(|item| {
                    json!({"Update": {"TableName": "Counters", "Key": key(*item), "UpdateExpression": update,
                                      "ExpressionAttributeNames": {"#last": "last"}, "ExpressionAttributeValues": values}})
                })
                .collect();
            // Now and then a doomed condition check: the whole transaction must vanish.
            if rng.random_bool(0.15) {
                let spare = pool[rng.random_range(0..pool.len())];
                actions.push(json!({"ConditionCheck": {"TableName": "Counters", "Key": key(spare),
                                                       "ConditionExpression": "attribute_not_exists(pk)"}}));
            }
            db.execute("TransactWriteItems", json!({"TransactItems": actions}))
        };
        match result {
            Ok(_) => committed.push(id),
            Err(error) => assert_eq!(
                error.code,
                ErrorCode::TransactionCanceledException,
                "{error:?}"
            ),
        }
    }
    committed
}

/// Reads every item in one transaction until `done`; checks each snapshot is atomic.
fn reader(db: &Database, done: &Mutex<bool>) -> usize {
    let gets: Vec<Value> = (0..ITEMS)
        .map(|item| json!({"Get": {"TableName": "Counters", "Key": key(item)}}))
        .collect();
    let mut snapshots = 0;
    while !*done.lock().unwrap() {
        let response = db
            .execute("TransactGetItems", json!({"TransactItems": gets}))
            .unwrap();
        let histories: Vec<BTreeSet<String>> = response["Responses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| history(&r["Item"]).into_iter().collect())
            .collect();
        for ids in &histories {
            for id in ids {
                for item in items_of(id) {
                    assert!(
                        histories[item].contains(id),
                        "snapshot shows {id} on one item but not on item {item}"
                    );
                }
            }
        }
        snapshots += 1;
    }
    snapshots
}

/// Whether the per-item orders agree with one total order (Kahn's algorithm).
fn acyclic(histories: &[Vec<String>]) -> bool {
    let mut successors: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut indegree: BTreeMap<&str, usize> = BTreeMap::new();
    for history in histories {
        for id in history {
            indegree.entry(id).or_default();
        }
        for pair in history.windows(2) {
            if successors.entry(&pair[0]).or_default().insert(&pair[1]) {
                *indegree.entry(&pair[1]).or_default() += 1;
            }
        }
    }
    let mut ready: Vec<&str> = indegree
        .iter()
        .filter(|(_, d)| **d == 0)
        .map(|(id, _)| *id)
        .collect();
    let mut ordered = 0;
    while let Some(id) = ready.pop() {
        ordered += 1;
        for next in successors.get(id).into_iter().flatten() {
            let degree = indegree.get_mut(next).expect("known id");
            *degree -= 1;
            if *degree == 0 {
                ready.push(next);
            }
        }
    }
    ordered == indegree.len()
}

#[test]
fn concurrent_transactions_are_serialisable_and_reads_atomic() {
    let db = setup();
    let done = Mutex::new(false);
    let (committed, snapshots) = thread::scope(|scope| {
        let reader = scope.spawn(|| reader(&db, &done));
        let writers: Vec<_> = (0..WRITERS)
            .map(|thread| {
                let db = &db;
                scope.spawn(move || writer(db, thread))
            })
            .collect();
        let committed: Vec<String> = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        *done.lock().unwrap() = true;
        (committed, reader.join().unwrap())
    });
    assert!(snapshots > 0);
    assert!(
        committed.len() > WRITERS * WRITES_PER_THREAD / 2,
        "most writes commit"
    );

    let mut histories = Vec::new();
    for item in 0..ITEMS {
        let response = db
            .execute(
                "GetItem",
                json!({"TableName": "Counters", "Key": key(item), "ConsistentRead": true}),
            )
            .unwrap();
        let stored = &response["Item"];
        let history = history(stored);
        let expected: Vec<&String> = committed
            .iter()
            .filter(|id| items_of(id).contains(&item))
            .collect();
        let unique: BTreeSet<&String> = history.iter().collect();
        assert_eq!(unique.len(), history.len(), "an id applied twice");
        assert_eq!(
            unique,
            expected.iter().copied().collect(),
            "item {item}: committed writes and history differ"
        );
        assert_eq!(
            stored["n"],
            json!({"N": history.len().to_string()}),
            "counter"
        );
        let last = match history.last() {
            Some(id) => json!({"S": id}),
            None => Value::Null,
        };
        assert_eq!(stored["last"], last);
        histories.push(history);
    }
    assert!(
        acyclic(&histories),
        "no serial order explains the histories"
    );
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert_eq!(report.items, ITEMS as u64);
}
