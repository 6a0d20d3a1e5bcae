//! Time to Live against a model: random writes with expiry times around now (numbers,
//! fractions, strings, none), a clock that moves, and sweeps at random points. After every
//! sweep the table equals the model with exactly the expired items gone, the expiry index
//! holds exactly one entry per item with a Number expiry, and `Database::check` finds the
//! indexes, collections and statistics sound.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{json, Value};
use shoal_engine::Direction;
use shoal_tables::{Clock, Database, Options, TimeToLiveOptions};

const NOW_SECONDS: u64 = 2_000_000_000;
const KEYS: u8 = 12;

#[derive(Debug, Clone)]
enum Expiry {
    /// Seconds from the start time (may be negative: already past).
    At(i64),
    /// The same, with a fraction.
    Fraction(i64),
    /// A string: never expires.
    Text,
    /// No attribute.
    Absent,
}

#[derive(Debug, Clone)]
enum Op {
    Put { key: u8, expiry: Expiry, group: u8 },
    SetExpiry { key: u8, expiry: Expiry },
    Delete { key: u8 },
    Advance { seconds: u64 },
    Sweep,
}

fn expiry() -> impl Strategy<Value = Expiry> {
    prop_oneof![
        4 => (-50i64..50).prop_map(Expiry::At),
        1 => (-50i64..50).prop_map(Expiry::Fraction),
        1 => Just(Expiry::Text),
        1 => Just(Expiry::Absent),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..KEYS, expiry(), 0u8..3).prop_map(|(key, expiry, group)| Op::Put { key, expiry, group }),
        2 => (0..KEYS, expiry()).prop_map(|(key, expiry)| Op::SetExpiry { key, expiry }),
        1 => (0..KEYS).prop_map(|key| Op::Delete { key }),
        2 => (0u64..40).prop_map(|seconds| Op::Advance { seconds }),
        2 => Just(Op::Sweep),
    ]
}

/// The attribute value of an expiry, and the second it expires at (None: never).
fn value_of(expiry: &Expiry) -> Option<(Value, Option<u64>)> {
    let at = |offset: i64| (NOW_SECONDS as i64 + offset) as u64;
    match expiry {
        Expiry::At(offset) => Some((json!({"N": at(*offset).to_string()}), Some(at(*offset)))),
        Expiry::Fraction(offset) => Some((
            json!({"N": format!("{}.75", at(*offset))}),
            Some(at(*offset)),
        )),
        Expiry::Text => Some((json!({"S": at(0).to_string()}), None)),
        Expiry::Absent => None,
    }
}

fn key_name(key: u8) -> String {
    format!("k{key:02}")
}

fn create(db: &Database) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Model",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "group", "AttributeType": "S"}
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                          {"AttributeName": "sk", "KeyType": "RANGE"}],
            "LocalSecondaryIndexes": [{"IndexName": "ByGroup",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                              {"AttributeName": "group", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"}}],
            "GlobalSecondaryIndexes": [{"IndexName": "Groups",
                "KeySchema": [{"AttributeName": "group", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    db.execute(
        "UpdateTimeToLive",
        json!({"TableName": "Model", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}}),
    )
    .unwrap();
}

/// Items as (pk → expiry second or None), read back with a Scan.
fn stored(db: &Database) -> BTreeMap<String, Option<u64>> {
    let scan = db
        .execute(
            "Scan",
            json!({"TableName": "Model", "ConsistentRead": true}),
        )
        .unwrap();
    scan["Items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let key = item["pk"]["S"].as_str().unwrap().to_string();
            let expiry = item
                .get("expires")
                .and_then(|v| v.get("N"))
                .and_then(Value::as_str)
                .map(|n| n.split('.').next().unwrap().parse::<u64>().unwrap());
            (key, expiry)
        })
        .collect()
}

/// Entries of the expiry index (its tree named `<TableId>/ttl/…`).
fn expiry_entries(db: &Database) -> usize {
    let version = db.lsm().version();
    let (tree, _) = version
        .trees
        .iter()
        .find(|(_, tree)| tree.name.contains("/ttl/"))
        .expect("the expiry index tree");
    db.lsm()
        .scan(
            *tree,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
            usize::MAX,
        )
        .unwrap()
        .len()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn sweeps_delete_exactly_the_expired_items(ops in proptest::collection::vec(op(), 1..60)) {
        let now_millis = Arc::new(AtomicU64::new(NOW_SECONDS * 1000));
        let clock = {
            let now = Arc::clone(&now_millis);
            Clock::from_fn(move || now.load(Ordering::SeqCst))
        };
        let db = Database::open_in_memory(Options { time_to_live: TimeToLiveOptions { sweep_interval: Duration::from_secs(3600), sweep_at_start: false, ..TimeToLiveOptions::default() }, clock, ..Options::default() })
        .unwrap();
        create(&db);
        let mut model: BTreeMap<String, Option<u64>> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put { key, expiry, group } => {
                    let mut item = json!({"pk": {"S": key_name(key)}, "sk": {"S": "s"},
                                          "group": {"S": format!("g{group}")}});
                    let expires = value_of(&expiry);
                    if let Some((value, _)) = &expires {
                        item["expires"] = value.clone();
                    }
                    db.execute("PutItem", json!({"TableName": "Model", "Item": item})).unwrap();
                    model.insert(key_name(key), expires.and_then(|(_, at)| at));
                }
                Op::SetExpiry { key, expiry } => {
                    let request = match value_of(&expiry) {
                        Some((value, _)) => json!({"TableName": "Model",
                            "Key": {"pk": {"S": key_name(key)}, "sk": {"S": "s"}},
                            "UpdateExpression": "SET expires = :e",
                            "ExpressionAttributeValues": {":e": value}}),
                        None => json!({"TableName": "Model",
                            "Key": {"pk": {"S": key_name(key)}, "sk": {"S": "s"}},
                            "UpdateExpression": "REMOVE expires"}),
                    };
                    db.execute("UpdateItem", request).unwrap();
                    let at = value_of(&expiry).and_then(|(_, at)| at);
                    match model.get_mut(&key_name(key)) {
                        Some(slot) => *slot = at,
                        // SET on a missing item creates it; REMOVE alone may as well, as
                        // the table reports: follow what is stored.
                        None => {
                            if let Some(found) = stored(&db).get(&key_name(key)) {
                                model.insert(key_name(key), *found);
                            }
                        }
                    }
                }
                Op::Delete { key } => {
                    db.execute("DeleteItem", json!({"TableName": "Model",
                        "Key": {"pk": {"S": key_name(key)}, "sk": {"S": "s"}}})).unwrap();
                    model.remove(&key_name(key));
                }
                Op::Advance { seconds } => {
                    now_millis.fetch_add(seconds * 1000, Ordering::SeqCst);
                }
                Op::Sweep => {
                    let now = now_millis.load(Ordering::SeqCst) / 1000;
                    let expired = model
                        .values()
                        .filter(|at| at.is_some_and(|at| at < now))
                        .count() as u64;
                    prop_assert_eq!(db.expire_now().unwrap(), expired);
                    model.retain(|_, at| !at.is_some_and(|at| at < now));
                    prop_assert_eq!(&stored(&db), &model);
                    let with_expiry = model.values().filter(|at| at.is_some()).count();
                    prop_assert_eq!(expiry_entries(&db), with_expiry);
                    let report = db.check().unwrap();
                    prop_assert!(report.is_sound(), "{:?}", report.problems);
                }
            }
        }
        prop_assert_eq!(&stored(&db), &model);
    }
}
