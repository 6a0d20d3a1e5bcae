//! The crash test's workload: operation `i` is a pure function of the seed and `i`, so the
//! checker knows every write without being told, whether the writes went to a database in
//! this process, a child process or a server over HTTP.
//!
//! Table `CrashTest` has an LSI (`ByA`, keys only), a GSI (`ByG`, all attributes), a
//! `NEW_AND_OLD_IMAGES` stream and Time to Live on `expires`. The operations are puts,
//! updates, deletes and two-item transactions over 256 keys, whose `expires` is far ahead
//! (the expiry index is written and checked, but they never expire), and one in every
//! [`EXPIRED_EVERY`] is a put of an item that has already expired, each under a key of its
//! own in partition `x` and without the indexes' attributes: the target's Time to Live must
//! delete it, once, within the run's bound, and nothing else.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shoal_tables::EventName;

/// The table the workload writes.
pub const TABLE: &str = "CrashTest";
/// The table's local secondary index (sort key `a`, keys only).
pub const LSI: &str = "ByA";
/// The table's global secondary index (keys `g` and `sk`, every attribute).
pub const GSI: &str = "ByG";
/// Keys the workload cycles through (16 partitions of 16 items).
pub const PARTITIONS: u64 = 16;
const SORT_KEYS: u64 = 16;
/// One operation in this many puts an item that has already expired.
pub const EXPIRED_EVERY: u64 = 16;
/// The partition of the expired items; no other operation writes it.
const EXPIRED_PARTITION: &str = "x";
/// How long before the run started its expired items expired. Not further: DynamoDB (and
/// Shoal) ignore expiry times more than five years past.
const EXPIRED_BEFORE_SECONDS: u64 = 3600;

/// The run's expiry time of its expired items, in seconds since the epoch: an hour before
/// the run started, the same for every operation of the run (the checker compares whole
/// items), and handed to a child process that writes the workload (`--expired-at`).
static EXPIRED_AT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// The run's expiry time of its expired items (fixed at the first call, or by
/// [`set_expired_at`]).
pub fn expired_at() -> u64 {
    *EXPIRED_AT.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        now.saturating_sub(EXPIRED_BEFORE_SECONDS)
    })
}

/// Fixes the run's expiry time, as the parent of a child process chose it; false if it was
/// already fixed to another value.
pub fn set_expired_at(seconds: u64) -> bool {
    *EXPIRED_AT.get_or_init(|| seconds) == seconds
}
/// The operation name of a transaction, which a target may not offer.
pub const TRANSACT_WRITE_ITEMS: &str = "TransactWriteItems";

/// One item as the model holds it.
pub type Item = serde_json::Map<String, Value>;
/// Items by key name (`p3/s12`).
pub type Items = BTreeMap<String, Item>;

/// The CreateTable request of the workload's table; `stream` asks for its stream.
pub fn create_table_request(stream: bool) -> Value {
    let key = |name: &str, kind: &str| json!({"AttributeName": name, "KeyType": kind});
    let mut request = json!({
        "TableName": TABLE,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "a", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"}
        ],
        "KeySchema": [key("pk", "HASH"), key("sk", "RANGE")],
        "LocalSecondaryIndexes": [{"IndexName": LSI, "KeySchema": [key("pk", "HASH"), key("a", "RANGE")],
            "Projection": {"ProjectionType": "KEYS_ONLY"}}],
        "GlobalSecondaryIndexes": [{"IndexName": GSI, "KeySchema": [key("g", "HASH"), key("sk", "RANGE")],
            "Projection": {"ProjectionType": "ALL"}}],
        "BillingMode": "PAY_PER_REQUEST"
    });
    if stream {
        request["StreamSpecification"] =
            json!({"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"});
    }
    request
}

/// The UpdateTimeToLive request that enables Time to Live on `expires`.
pub fn time_to_live_request() -> Value {
    json!({"TableName": TABLE, "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}})
}

/// A key of the workload, as text (`p3/s12`) and as DynamoDB JSON.
fn key(n: u64) -> (String, Value) {
    let (pk, sk) = (n % PARTITIONS, n / PARTITIONS % SORT_KEYS);
    (
        format!("p{pk}/s{sk}"),
        json!({"pk": {"S": format!("p{pk}")}, "sk": {"S": format!("s{sk}")}}),
    )
}

/// Whether a key (`x/i31`) is one of the expired items', which Time to Live deletes at a
/// moment of its own: the model leaves them out and the checker follows them apart.
pub fn is_expired_key(key: &str) -> bool {
    key.strip_prefix(EXPIRED_PARTITION)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// The key of the expired item operation `i` puts (`x/i31`), if it puts one.
fn expired_key(i: u64) -> String {
    format!("{EXPIRED_PARTITION}/i{i}")
}

/// The operations of `range` that put an expired item, with the item's key: every
/// [`EXPIRED_EVERY`]th, whatever the seed.
pub fn expired_puts(range: std::ops::Range<u64>) -> impl Iterator<Item = (u64, String)> {
    range
        .filter(|i| i % EXPIRED_EVERY == EXPIRED_EVERY - 1)
        .map(|i| (i, expired_key(i)))
}

/// The operation that wrote an expired item's key (`x/i31` is operation 31's).
pub fn expired_key_operation(key: &str) -> Option<u64> {
    key.strip_prefix(EXPIRED_PARTITION)?
        .strip_prefix("/i")?
        .parse()
        .ok()
}

/// The key name (`p3/s12`) of an item or a key in DynamoDB JSON.
pub fn key_name(item: &Value) -> String {
    format!(
        "{}/{}",
        item["pk"]["S"].as_str().unwrap_or_default(),
        item["sk"]["S"].as_str().unwrap_or_default()
    )
}

/// What operation `i` writes: its request and, for the model, how it changes each key.
#[derive(Debug, Clone)]
pub struct Operation {
    pub name: &'static str,
    pub request: Value,
    /// Each touched key and how it changes, in action order.
    pub effects: Vec<(String, Effect)>,
}

#[derive(Debug, Clone)]
pub enum Effect {
    Put(Value),
    /// SET these attributes (an upsert), REMOVE `g` if asked.
    Update {
        set: Vec<(String, Value)>,
        remove_g: bool,
    },
    Delete,
}

impl Operation {
    /// The request in a line, without the payload: what a report names.
    pub fn describe(&self, index: u64) -> String {
        let effects: Vec<String> = self
            .effects
            .iter()
            .map(|(key, effect)| match effect {
                Effect::Put(item) => format!("Put {key} {}", describe_attributes(item)),
                Effect::Update { set, remove_g } => {
                    let set: Vec<String> = set
                        .iter()
                        .filter(|(name, _)| name != "expires")
                        .map(|(name, value)| format!("{name}={}", scalar(value)))
                        .collect();
                    let remove = if *remove_g { " REMOVE g" } else { "" };
                    format!("Update {key} SET {}{remove}", set.join(", "))
                }
                Effect::Delete => format!("Delete {key}"),
            })
            .collect();
        format!("operation {index} {} [{}]", self.name, effects.join("; "))
    }
}

/// A DynamoDB JSON scalar as text (`12`, `a3`).
fn scalar(value: &Value) -> String {
    value
        .as_object()
        .and_then(|typed| typed.values().next())
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string()
}

/// An item's attributes in a line (`v=12 a=a3 g=g1 payload=40B`), without its key.
pub fn describe_attributes(item: &Value) -> String {
    let Some(attributes) = item.as_object() else {
        return "(not an item)".to_string();
    };
    let mut out = Vec::new();
    for (name, value) in attributes {
        match name.as_str() {
            "pk" | "sk" | "expires" => {}
            "payload" => out.push(format!("payload={}B", scalar(value).len())),
            _ => out.push(format!("{name}={}", scalar(value))),
        }
    }
    if out.is_empty() {
        "(keys only)".to_string()
    } else {
        out.join(" ")
    }
}

/// An item as read back, or `absent`.
pub fn describe_item(item: Option<&Item>) -> String {
    match item {
        Some(item) => describe_attributes(&Value::Object(item.clone())),
        None => "absent".to_string(),
    }
}

/// A year far ahead of the workload's fixed epoch: Time to Live never fires.
const EXPIRES: &str = "4102444800";

fn item(key: &Value, i: u64, rng: &mut StdRng) -> Value {
    let mut item = key.as_object().cloned().unwrap_or_default();
    item.insert("v".into(), json!({"N": i.to_string()}));
    item.insert("expires".into(), json!({"N": EXPIRES}));
    if rng.random_bool(0.7) {
        item.insert(
            "a".into(),
            json!({"S": format!("a{}", rng.random_range(0..6))}),
        );
    }
    if rng.random_bool(0.6) {
        item.insert(
            "g".into(),
            json!({"S": format!("g{}", rng.random_range(0..4))}),
        );
    }
    let payload = "x".repeat(rng.random_range(0..600));
    item.insert("payload".into(), json!({"S": payload}));
    Value::Object(item)
}

/// Operation `i` of the workload seeded `seed`.
pub fn operation(seed: u64, i: u64) -> Operation {
    if expired_puts(i..i + 1).next().is_some() {
        return expired_put(i);
    }
    let mut rng = StdRng::seed_from_u64(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let keys = PARTITIONS * SORT_KEYS;
    let (name_a, key_a) = key(rng.random_range(0..keys));
    match rng.random_range(0..10) {
        0..=3 => {
            let item = item(&key_a, i, &mut rng);
            Operation {
                name: "PutItem",
                request: json!({"TableName": TABLE, "Item": item}),
                effects: vec![(name_a, Effect::Put(item))],
            }
        }
        4..=6 => {
            let a = json!({"S": format!("a{}", rng.random_range(0..6))});
            let remove_g = rng.random_bool(0.3);
            let expression = if remove_g {
                "SET v = :v, a = :a, expires = :e REMOVE g"
            } else {
                "SET v = :v, a = :a, expires = :e"
            };
            Operation {
                name: "UpdateItem",
                request: json!({"TableName": TABLE, "Key": key_a, "UpdateExpression": expression,
                    "ExpressionAttributeValues": {":v": {"N": i.to_string()}, ":a": a, ":e": {"N": EXPIRES}}}),
                effects: vec![(
                    name_a,
                    Effect::Update {
                        set: vec![
                            ("v".into(), json!({"N": i.to_string()})),
                            ("a".into(), a),
                            ("expires".into(), json!({"N": EXPIRES})),
                        ],
                        remove_g,
                    },
                )],
            }
        }
        7 => Operation {
            name: "DeleteItem",
            request: json!({"TableName": TABLE, "Key": key_a}),
            effects: vec![(name_a, Effect::Delete)],
        },
        _ => {
            // A transaction: put one item and delete another, atomically.
            let mut other = rng.random_range(0..keys);
            while key(other).0 == name_a {
                other = (other + 1) % keys;
            }
            let (name_b, key_b) = key(other);
            let item = item(&key_a, i, &mut rng);
            Operation {
                name: TRANSACT_WRITE_ITEMS,
                request: json!({"TransactItems": [
                    {"Put": {"TableName": TABLE, "Item": item}},
                    {"Delete": {"TableName": TABLE, "Key": key_b}}
                ]}),
                effects: vec![(name_a, Effect::Put(item)), (name_b, Effect::Delete)],
            }
        }
    }
}

/// Operation `i` when it puts an expired item: keys, `v` and `expires`, nothing an index
/// holds (so the sweep never races the checker's reads of the indexes).
fn expired_put(i: u64) -> Operation {
    let name = expired_key(i);
    let item = json!({"pk": {"S": EXPIRED_PARTITION}, "sk": {"S": format!("i{i}")},
        "v": {"N": i.to_string()}, "expires": {"N": expired_at().to_string()}});
    Operation {
        name: "PutItem",
        request: json!({"TableName": TABLE, "Item": item}),
        effects: vec![(name, Effect::Put(item))],
    }
}

/// Operation `i` as run against a target: None for a transaction when the target offers
/// none (the run then skips it, and so does the model).
pub fn planned(seed: u64, i: u64, transactions: bool) -> Option<Operation> {
    let operation = operation(seed, i);
    (transactions || operation.name != TRANSACT_WRITE_ITEMS).then_some(operation)
}

/// The items the workload's writes make, key by key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Model {
    pub items: Items,
}

impl Model {
    /// Applies an operation; returns its stream records, (event, key), in action order.
    /// Expired items are left out: when Time to Live deletes them is the target's choice.
    pub fn apply(&mut self, operation: &Operation) -> Vec<(EventName, String)> {
        let mut records = Vec::new();
        for (name, effect) in &operation.effects {
            if is_expired_key(name) {
                continue;
            }
            let existed = self.items.contains_key(name);
            let changed = if existed {
                EventName::Modify
            } else {
                EventName::Insert
            };
            match effect {
                Effect::Put(item) => {
                    self.items
                        .insert(name.clone(), item.as_object().cloned().unwrap_or_default());
                    records.push((changed, name.clone()));
                }
                Effect::Update { set, remove_g } => {
                    let (pk, sk) = name.split_once('/').unwrap_or_default();
                    let entry = self.items.entry(name.clone()).or_insert_with(|| {
                        let mut item = Item::new();
                        item.insert("pk".into(), json!({"S": pk}));
                        item.insert("sk".into(), json!({"S": sk}));
                        item
                    });
                    for (attribute, value) in set {
                        entry.insert(attribute.clone(), value.clone());
                    }
                    if *remove_g {
                        entry.remove("g");
                    }
                    records.push((changed, name.clone()));
                }
                Effect::Delete => {
                    if self.items.remove(name).is_some() {
                        records.push((EventName::Remove, name.clone()));
                    }
                }
            }
        }
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_a_function_of_seed_and_index() {
        let a = operation(7, 42);
        let b = operation(7, 42);
        assert_eq!(a.request, b.request);
        assert_ne!(operation(7, 43).request, a.request);
    }

    #[test]
    fn one_operation_in_sixteen_puts_an_expired_item_the_model_leaves_out() {
        let expired = operation(5, 31);
        let (key, _) = &expired.effects[0];
        assert_eq!(key, "x/i31");
        assert!(is_expired_key(key));
        assert_eq!(expired_key_operation(key), Some(31));
        let expires: u64 = expired.request["Item"]["expires"]["N"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(expires, expired_at());
        assert!(set_expired_at(expires));
        assert!(!set_expired_at(expires + 1));
        assert!(expired.request["Item"].get("a").is_none());
        assert!(expired.request["Item"].get("g").is_none());
        let mut model = Model::default();
        assert!(model.apply(&expired).is_empty());
        assert!(model.items.is_empty());
        // Its neighbours are ordinary operations on ordinary keys, which the model keeps.
        for i in [30, 32] {
            let neighbour = operation(5, i);
            assert!(neighbour
                .effects
                .iter()
                .all(|(key, _)| !is_expired_key(key)));
        }
        assert!(!is_expired_key("xp/s1"));
        assert_eq!(expired_key_operation("p3/s12"), None);
        let puts: Vec<(u64, String)> = expired_puts(0..48).collect();
        assert_eq!(
            puts,
            [
                (15, "x/i15".into()),
                (31, "x/i31".into()),
                (47, "x/i47".into())
            ]
        );
    }

    #[test]
    fn a_target_without_transactions_skips_them() {
        let transaction = (0..100)
            .find(|&i| operation(3, i).name == TRANSACT_WRITE_ITEMS)
            .unwrap();
        assert!(planned(3, transaction, false).is_none());
        assert!(planned(3, transaction, true).is_some());
        let described = operation(3, transaction).describe(transaction);
        assert!(
            described.contains("TransactWriteItems [Put p"),
            "{described}"
        );
        assert!(described.contains("; Delete p"), "{described}");
    }
}
