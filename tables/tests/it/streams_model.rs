//! Streams against a model (invariant 8): random writes — puts (new, different, identical),
//! updates (changing, setting the same value, adding zero, removing an absent attribute,
//! upserts, removals on missing items), deletes (existing and missing), failed conditions,
//! batches, transactions committed and cancelled — on a table with a stream of a random
//! view type, shards rolled over at random points. The stream read back (embedded reader,
//! following shard lineage) equals exactly the model's committed changes, in order, with the
//! images the view type asks for, and sequence numbers strictly increase.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{json, Value};
use shoal_model::{item_from_json, Item};
use shoal_tables::{Database, EventName, Options, StreamOptions, StreamStart};

const VIEWS: [&str; 4] = ["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"];

#[derive(Debug, Clone)]
enum Op {
    Put {
        key: u8,
        x: u8,
    },
    Set {
        key: u8,
        x: u8,
    },
    AddZero {
        key: u8,
    },
    RemoveAbsent {
        key: u8,
    },
    RemoveX {
        key: u8,
    },
    Delete {
        key: u8,
    },
    /// A put conditional on the item not existing (fails when it does).
    PutIfAbsent {
        key: u8,
        x: u8,
    },
    Batch {
        puts: Vec<(u8, u8)>,
        deletes: Vec<u8>,
    },
    /// Two puts; `cancel` adds a condition that fails, cancelling both.
    Transact {
        a: (u8, u8),
        b: (u8, u8),
        cancel: bool,
    },
    Rollover,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..6;
    let x = 0u8..4;
    prop_oneof![
        4 => (key.clone(), x.clone()).prop_map(|(key, x)| Op::Put { key, x }),
        3 => (key.clone(), x.clone()).prop_map(|(key, x)| Op::Set { key, x }),
        1 => key.clone().prop_map(|key| Op::AddZero { key }),
        1 => key.clone().prop_map(|key| Op::RemoveAbsent { key }),
        1 => key.clone().prop_map(|key| Op::RemoveX { key }),
        2 => key.clone().prop_map(|key| Op::Delete { key }),
        1 => (key.clone(), x.clone()).prop_map(|(key, x)| Op::PutIfAbsent { key, x }),
        1 => (proptest::collection::btree_map(key.clone(), x.clone(), 0..3), proptest::collection::btree_set(6u8..9, 0..2))
            .prop_map(|(puts, deletes)| Op::Batch { puts: puts.into_iter().collect(), deletes: deletes.into_iter().collect() }),
        1 => ((0u8..3, x.clone()), (3u8..6, x), any::<bool>()).prop_map(|(a, b, cancel)| Op::Transact { a, b, cancel }),
        1 => Just(Op::Rollover),
    ]
}

fn key_json(key: u8) -> Value {
    json!({"pk": {"S": format!("k{key}")}, "sk": {"N": "1"}})
}

fn item_json(key: u8, x: u8) -> Value {
    json!({"pk": {"S": format!("k{key}")}, "sk": {"N": "1"}, "x": {"N": x.to_string()}, "n": {"N": "5"}})
}

fn item(value: &Value) -> Item {
    item_from_json(value).unwrap()
}

/// One expected record: event, keys, old and new item.
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    event: EventName,
    keys: Item,
    old: Option<Item>,
    new: Option<Item>,
}

#[derive(Default)]
struct Model {
    items: BTreeMap<u8, Item>,
    records: Vec<Expected>,
}

impl Model {
    /// The change of `key` to `new` (None: deleted), recorded if it changes anything.
    fn change(&mut self, key: u8, new: Option<Item>) {
        let old = self.items.get(&key).cloned();
        let event = match (&old, &new) {
            (None, None) => return,
            (Some(a), Some(b)) if a == b => return,
            (None, Some(_)) => EventName::Insert,
            (Some(_), Some(_)) => EventName::Modify,
            (Some(_), None) => EventName::Remove,
        };
        self.records.push(Expected {
            event,
            keys: item(&key_json(key)),
            old: old.clone(),
            new: new.clone(),
        });
        match new {
            Some(new) => self.items.insert(key, new),
            None => self.items.remove(&key),
        };
    }

    fn get(&self, key: u8) -> Item {
        self.items
            .get(&key)
            .cloned()
            .unwrap_or_else(|| item(&key_json(key)))
    }
}

fn update(db: &Database, key: u8, expression: &str, values: Option<Value>) {
    let mut request =
        json!({"TableName": "Feed", "Key": key_json(key), "UpdateExpression": expression});
    if let Some(values) = values {
        request["ExpressionAttributeValues"] = values;
    }
    db.execute("UpdateItem", request).unwrap();
}

fn run(view: &str, ops: &[Op]) -> Result<(), TestCaseError> {
    let db = Database::open_in_memory(Options {
        streams: StreamOptions {
            shard_records_max: Some(3),
            ..StreamOptions::default()
        },
        ..Options::default()
    })
    .unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Feed",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                     {"AttributeName": "sk", "AttributeType": "N"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                          {"AttributeName": "sk", "KeyType": "RANGE"}],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamEnabled": true, "StreamViewType": view}
        }),
    )
    .unwrap();
    let mut model = Model::default();
    for op in ops {
        match op {
            Op::Put { key, x } => {
                db.execute(
                    "PutItem",
                    json!({"TableName": "Feed", "Item": item_json(*key, *x)}),
                )
                .unwrap();
                model.change(*key, Some(item(&item_json(*key, *x))));
            }
            Op::Set { key, x } => {
                update(
                    &db,
                    *key,
                    "SET x = :x",
                    Some(json!({":x": {"N": x.to_string()}})),
                );
                let mut new = model.get(*key);
                new.insert(
                    "x".into(),
                    item(&json!({"x": {"N": x.to_string()}}))["x"].clone(),
                );
                model.change(*key, Some(new));
            }
            Op::AddZero { key } => {
                // ADD 0 on a missing item creates it with n = 0; on an existing one with n,
                // it changes nothing.
                update(&db, *key, "ADD n :zero", Some(json!({":zero": {"N": "0"}})));
                let mut new = model.get(*key);
                new.entry("n".into())
                    .or_insert_with(|| item(&json!({"n": {"N": "0"}}))["n"].clone());
                model.change(*key, Some(new));
            }
            Op::RemoveAbsent { key } => {
                update(&db, *key, "REMOVE absent", None);
                if model.items.contains_key(key) {
                    let new = model.get(*key);
                    model.change(*key, Some(new));
                }
            }
            Op::RemoveX { key } => {
                update(&db, *key, "REMOVE x", None);
                if model.items.contains_key(key) {
                    let mut new = model.get(*key);
                    new.remove("x");
                    model.change(*key, Some(new));
                }
            }
            Op::Delete { key } => {
                db.execute(
                    "DeleteItem",
                    json!({"TableName": "Feed", "Key": key_json(*key)}),
                )
                .unwrap();
                model.change(*key, None);
            }
            Op::PutIfAbsent { key, x } => {
                let result = db.execute(
                    "PutItem",
                    json!({"TableName": "Feed", "Item": item_json(*key, *x),
                           "ConditionExpression": "attribute_not_exists(pk)"}),
                );
                prop_assert_eq!(result.is_ok(), !model.items.contains_key(key));
                if result.is_ok() {
                    model.change(*key, Some(item(&item_json(*key, *x))));
                }
            }
            Op::Batch { puts, deletes } => {
                let mut requests: Vec<Value> = puts
                    .iter()
                    .map(|(k, x)| json!({"PutRequest": {"Item": item_json(*k, *x)}}))
                    .collect();
                requests.extend(
                    deletes
                        .iter()
                        .map(|k| json!({"DeleteRequest": {"Key": key_json(*k)}})),
                );
                if requests.is_empty() {
                    continue;
                }
                db.execute(
                    "BatchWriteItem",
                    json!({"RequestItems": {"Feed": requests}}),
                )
                .unwrap();
                for (k, x) in puts {
                    model.change(*k, Some(item(&item_json(*k, *x))));
                }
                for k in deletes {
                    model.change(*k, None);
                }
            }
            Op::Transact { a, b, cancel } => {
                let mut second = json!({"Put": {"TableName": "Feed", "Item": item_json(b.0, b.1)}});
                if *cancel {
                    second["Put"]["ConditionExpression"] =
                        json!("attribute_exists(nothing_has_this)");
                }
                let result = db.execute(
                    "TransactWriteItems",
                    json!({"TransactItems": [
                        {"Put": {"TableName": "Feed", "Item": item_json(a.0, a.1)}},
                        second
                    ]}),
                );
                prop_assert_eq!(result.is_ok(), !*cancel);
                if !*cancel {
                    model.change(a.0, Some(item(&item_json(a.0, a.1))));
                    model.change(b.0, Some(item(&item_json(b.0, b.1))));
                }
            }
            Op::Rollover => {
                db.stream_upkeep().unwrap();
            }
        }
    }

    let mut reader = db.stream_reader("Feed", StreamStart::TrimHorizon).unwrap();
    let mut records = Vec::new();
    loop {
        let batch = reader.read(7).unwrap();
        if batch.is_empty() {
            break;
        }
        records.extend(batch);
    }
    prop_assert!(
        records.windows(2).all(|w| w[0].seq < w[1].seq),
        "sequence numbers increase"
    );
    let has_old = view == "OLD_IMAGE" || view == "NEW_AND_OLD_IMAGES";
    let has_new = view == "NEW_IMAGE" || view == "NEW_AND_OLD_IMAGES";
    let got: Vec<Expected> = records
        .iter()
        .map(|r| Expected {
            event: r.event_name,
            keys: r.keys.clone(),
            old: r.old_image.clone(),
            new: r.new_image.clone(),
        })
        .collect();
    let expected: Vec<Expected> = model
        .records
        .iter()
        .map(|e| Expected {
            event: e.event,
            keys: e.keys.clone(),
            old: e.old.clone().filter(|_| has_old),
            new: e.new.clone().filter(|_| has_new),
        })
        .collect();
    prop_assert_eq!(got, expected);
    let report = db.check().unwrap();
    prop_assert!(report.is_sound(), "{:?}", report.problems);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_stream_is_exactly_the_committed_changes(view in 0usize..4, ops in proptest::collection::vec(op(), 1..40)) {
        run(VIEWS[view], &ops)?;
    }
}
