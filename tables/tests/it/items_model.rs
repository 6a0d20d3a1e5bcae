//! Random PutItem / UpdateItem / DeleteItem sequences on a table with two LSIs and two GSIs,
//! compared after every step with a naive model that recomputes every index entry and
//! collection size from the base items. The comparison reads the raw LSM trees (base items,
//! LSI sections, collection records, GSI trees), decoding every key, so an index entry that
//! drifts from its item, a stale entry, or a wrong collection record is caught. The database
//! is reopened (same simulated file system) at random points.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{json, Value};
use shoal_engine::Direction;
use shoal_model::{decode_key_value, AttributeValue, ErrorCode, Item, Number, ScalarType};
use shoal_tables::core::collection::CollectionRecord;
use shoal_tables::core::item_codec::decode_item;
use shoal_tables::core::keys;
use shoal_tables::{Database, LimitOptions, Options, StorageOptions};

const TABLE: &str = "Model";
/// Small enough that random writes hit it.
const COLLECTION_LIMIT_BYTES: u64 = 1_500;

/// Non-key attributes the ops may write; each has its allowed value types.
const ATTRIBUTES: [&str; 7] = ["la", "lb", "ga", "gb", "x", "y", "z"];

fn create_table(db: &Database) {
    let request = json!({
        "TableName": TABLE,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
            {"AttributeName": "la", "AttributeType": "S"},
            {"AttributeName": "lb", "AttributeType": "N"},
            {"AttributeName": "ga", "AttributeType": "S"},
            {"AttributeName": "gb", "AttributeType": "B"}
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "LocalSecondaryIndexes": [
            {"IndexName": "ByLa", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "la", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "KEYS_ONLY"}},
            {"IndexName": "ByLb", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "lb", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["x"]}}
        ],
        "GlobalSecondaryIndexes": [
            {"IndexName": "ByGa", "KeySchema": [{"AttributeName": "ga", "KeyType": "HASH"}, {"AttributeName": "lb", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "ALL"}},
            {"IndexName": "ByGb", "KeySchema": [{"AttributeName": "gb", "KeyType": "HASH"}],
             "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["y"]}}
        ],
        "BillingMode": "PAY_PER_REQUEST"
    });
    db.execute("CreateTable", request).unwrap();
}

// ---- Operations -------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Change {
    Set(AttributeValue),
    Remove,
}

#[derive(Debug, Clone)]
enum Op {
    Put {
        pk: u8,
        sk: u8,
        attributes: Vec<(usize, AttributeValue)>,
    },
    /// PutItem with `attribute_not_exists(pk)`.
    PutIfAbsent {
        pk: u8,
        sk: u8,
        attributes: Vec<(usize, AttributeValue)>,
    },
    Update {
        pk: u8,
        sk: u8,
        changes: Vec<(usize, Change)>,
    },
    Delete {
        pk: u8,
        sk: u8,
    },
    /// A write the engine must reject (wrong index key type or empty index key).
    Invalid {
        pk: u8,
        sk: u8,
        via_update: bool,
        attribute: usize,
    },
    Reopen,
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_string())
}

fn n(value: i64) -> AttributeValue {
    AttributeValue::N(Number::from_i64(value))
}

/// A valid value for attribute `ATTRIBUTES[index]`.
fn value_for(index: usize) -> BoxedStrategy<AttributeValue> {
    match ATTRIBUTES[index] {
        "la" => prop_oneof![Just(s("a")), Just(s("b")), Just(s("c"))].boxed(),
        "lb" => (1i64..4).prop_map(n).boxed(),
        "ga" => prop_oneof![Just(s("g")), Just(s("h"))].boxed(),
        "gb" => prop_oneof![
            Just(AttributeValue::B(vec![1])),
            Just(AttributeValue::B(vec![2, 0]))
        ]
        .boxed(),
        // Projected into Lb: changes type between S and N.
        "x" => prop_oneof![
            (0i64..3).prop_map(n),
            "[a-c]{0,3}".prop_map(AttributeValue::S)
        ]
        .boxed(),
        // Projected into Gb: any of several types.
        "y" => prop_oneof![
            (0i64..3).prop_map(n),
            Just(AttributeValue::Bool(true)),
            Just(AttributeValue::Ss(vec!["p".into(), "q".into()])),
            Just(AttributeValue::Ss(vec!["q".into(), "p".into()])),
            prop::collection::vec("[a-b]{1,2}".prop_map(AttributeValue::S), 0..3)
                .prop_map(AttributeValue::L),
        ]
        .boxed(),
        // Unprojected payload: what pushes collections towards the cap.
        _ => (0usize..700)
            .prop_map(|len| AttributeValue::S("z".repeat(len)))
            .boxed(),
    }
}

fn attributes() -> impl Strategy<Value = Vec<(usize, AttributeValue)>> {
    let per_attribute: Vec<_> = (0..ATTRIBUTES.len())
        .map(|index| {
            prop::option::weighted(0.6, value_for(index)).prop_map(move |v| v.map(|v| (index, v)))
        })
        .collect();
    per_attribute.prop_map(|values| values.into_iter().flatten().collect())
}

fn changes() -> impl Strategy<Value = Vec<(usize, Change)>> {
    let per_attribute: Vec<_> = (0..ATTRIBUTES.len())
        .map(|index| {
            prop_oneof![
                2 => Just(None),
                2 => value_for(index).prop_map(move |v| Some((index, Change::Set(v)))),
                1 => Just(Some((index, Change::Remove))),
            ]
        })
        .collect();
    per_attribute.prop_map(|changes| changes.into_iter().flatten().collect())
}

fn op() -> impl Strategy<Value = Op> {
    let pk = 0u8..3;
    let sk = 0u8..3;
    prop_oneof![
        4 => (pk.clone(), sk.clone(), attributes()).prop_map(|(pk, sk, attributes)| Op::Put { pk, sk, attributes }),
        1 => (pk.clone(), sk.clone(), attributes()).prop_map(|(pk, sk, attributes)| Op::PutIfAbsent { pk, sk, attributes }),
        4 => (pk.clone(), sk.clone(), changes()).prop_map(|(pk, sk, changes)| Op::Update { pk, sk, changes }),
        2 => (pk.clone(), sk.clone()).prop_map(|(pk, sk)| Op::Delete { pk, sk }),
        1 => (pk, sk, any::<bool>(), 0usize..4).prop_map(|(pk, sk, via_update, attribute)| Op::Invalid { pk, sk, via_update, attribute }),
        1 => Just(Op::Reopen),
    ]
}

// ---- The naive model ----------------------------------------------------------------------

type TableKey = (String, i64);

#[derive(Default, Clone)]
struct Model {
    items: BTreeMap<TableKey, Item>,
}

fn pk_name(pk: u8) -> String {
    format!("p{pk}")
}

fn key_item(pk: u8, sk: u8) -> Item {
    Item::from([
        ("pk".to_string(), s(&pk_name(pk))),
        ("sk".to_string(), n(i64::from(sk))),
    ])
}

fn size(item: &Item) -> u64 {
    shoal_model::item_size_bytes(item) as u64
}

fn pick(item: &Item, names: &[&str]) -> Item {
    names
        .iter()
        .filter_map(|name| item.get(*name).map(|v| (name.to_string(), v.clone())))
        .collect()
}

/// What a raw index entry is identified by: index name + its key values (as JSON text).
type EntryId = (String, Vec<String>);

fn text(value: &AttributeValue) -> String {
    value.to_json().to_string()
}

impl Model {
    /// Every index entry the items imply, recomputed from scratch.
    fn index_entries(&self) -> BTreeMap<EntryId, Item> {
        let mut entries = BTreeMap::new();
        for item in self.items.values() {
            let (pk, sk) = (&item["pk"], &item["sk"]);
            if let Some(la) = item.get("la") {
                entries.insert(
                    ("ByLa".into(), vec![text(pk), text(la), text(sk)]),
                    pick(item, &["pk", "sk", "la"]),
                );
            }
            if let Some(lb) = item.get("lb") {
                entries.insert(
                    ("ByLb".into(), vec![text(pk), text(lb), text(sk)]),
                    pick(item, &["pk", "sk", "lb", "x"]),
                );
            }
            if let (Some(ga), Some(lb)) = (item.get("ga"), item.get("lb")) {
                entries.insert(
                    ("ByGa".into(), vec![text(ga), text(lb), text(pk), text(sk)]),
                    item.clone(),
                );
            }
            if let Some(gb) = item.get("gb") {
                entries.insert(
                    ("ByGb".into(), vec![text(gb), text(pk), text(sk)]),
                    pick(item, &["pk", "sk", "gb", "y"]),
                );
            }
        }
        entries
    }

    /// Exact collection records: Σ (item + 100) + Σ LSI entries (entry + 100), per pk.
    fn collections(&self) -> BTreeMap<String, CollectionRecord> {
        let mut records: BTreeMap<String, CollectionRecord> = BTreeMap::new();
        for ((pk, _), item) in &self.items {
            let record = records.entry(pk.clone()).or_default();
            record.item_count += 1;
            record.size_bytes += size(item) + 100;
            if item.contains_key("la") {
                record.size_bytes += size(&pick(item, &["pk", "sk", "la"])) + 100;
            }
            if item.contains_key("lb") {
                record.size_bytes += size(&pick(item, &["pk", "sk", "lb", "x"])) + 100;
            }
        }
        records
    }

    fn collection_size(&self, pk: &str) -> u64 {
        self.collections().get(pk).map_or(0, |r| r.size_bytes)
    }

    /// Replaces or removes one item unless that grows its collection past the cap; returns
    /// whether it was applied.
    fn write(&mut self, key: TableKey, new: Option<Item>) -> bool {
        let before = self.collection_size(&key.0);
        let mut next = self.clone();
        match new {
            Some(item) => next.items.insert(key.clone(), item),
            None => next.items.remove(&key),
        };
        let after = next.collection_size(&key.0);
        if after > before && after > COLLECTION_LIMIT_BYTES {
            return false;
        }
        *self = next;
        true
    }
}

// ---- Reading the raw trees ------------------------------------------------------------------

fn scan(db: &Database, tree: shoal_engine::TreeId) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.lsm()
        .scan(
            tree,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
            usize::MAX,
        )
        .unwrap()
}

/// Splits `hash | pk | rest` after checking the hash.
fn split_partition(key: &[u8], ty: ScalarType) -> (AttributeValue, &[u8]) {
    let (pk, used) = decode_key_value(&key[keys::HASH_BYTES..], ty).unwrap();
    let prefix = keys::partition_prefix(&pk).unwrap();
    assert!(
        key.starts_with(&prefix),
        "hash prefix does not match the partition key"
    );
    (pk, &key[keys::HASH_BYTES + used..])
}

struct Stored {
    items: BTreeMap<TableKey, Item>,
    entries: BTreeMap<EntryId, Item>,
    collections: BTreeMap<String, CollectionRecord>,
}

fn read_stored(db: &Database) -> Stored {
    let table = db.table(TABLE).unwrap();
    let mut stored = Stored {
        items: BTreeMap::new(),
        entries: BTreeMap::new(),
        collections: BTreeMap::new(),
    };
    for (key, value) in scan(db, table.tree) {
        let (pk, rest) = split_partition(&key, ScalarType::S);
        let AttributeValue::S(pk_text) = &pk else {
            unreachable!()
        };
        let (section, rest) = rest.split_first().unwrap();
        match *section {
            keys::SECTION_BASE => {
                let sk = keys::decode_values(rest, &[ScalarType::N])
                    .unwrap()
                    .remove(0);
                let item = decode_item(&value).unwrap();
                assert_eq!(item.get("pk"), Some(&pk));
                assert_eq!(item.get("sk"), Some(&sk));
                let AttributeValue::N(number) = &sk else {
                    unreachable!()
                };
                let sk: i64 = number.to_string().parse().unwrap();
                stored.items.insert((pk_text.clone(), sk), item);
            }
            keys::SECTION_COLLECTION => {
                assert!(rest.is_empty());
                stored
                    .collections
                    .insert(pk_text.clone(), CollectionRecord::decode(&value).unwrap());
            }
            section => {
                let lsi = table
                    .local_indexes
                    .iter()
                    .find(|l| l.section == section)
                    .expect("unknown section");
                let range_type = lsi.key.range.as_ref().unwrap().scalar_type();
                let values = keys::decode_values(rest, &[range_type, ScalarType::N]).unwrap();
                let id = (
                    lsi.name.clone(),
                    vec![text(&pk), text(&values[0]), text(&values[1])],
                );
                stored.entries.insert(id, decode_item(&value).unwrap());
            }
        }
    }
    for gsi in &table.global_indexes {
        let hash_type = gsi.key.hash.scalar_type();
        let mut types: Vec<ScalarType> = gsi.key.range.iter().map(|r| r.scalar_type()).collect();
        types.extend([ScalarType::S, ScalarType::N]);
        for (key, value) in scan(db, gsi.tree) {
            let (hash, rest) = split_partition(&key, hash_type);
            let values = keys::decode_values(rest, &types).unwrap();
            let mut id = vec![text(&hash)];
            id.extend(values.iter().map(text));
            stored
                .entries
                .insert((gsi.name.clone(), id), decode_item(&value).unwrap());
        }
    }
    stored
}

fn check(db: &Database, model: &Model) -> Result<(), TestCaseError> {
    let stored = read_stored(db);
    prop_assert_eq!(&stored.items, &model.items, "base items");
    prop_assert_eq!(&stored.entries, &model.index_entries(), "index entries");
    prop_assert_eq!(
        &stored.collections,
        &model.collections(),
        "collection records"
    );
    // DescribeTable's figures come from the statistics kept with the writes: they must equal
    // the model's items and entries, counted and sized.
    let described = db
        .execute("DescribeTable", json!({"TableName": TABLE}))
        .unwrap();
    let table = &described["Table"];
    prop_assert_eq!(&table["ItemCount"], &json!(model.items.len()), "ItemCount");
    let items_bytes: u64 = model.items.values().map(size).sum();
    prop_assert_eq!(
        &table["TableSizeBytes"],
        &json!(items_bytes),
        "TableSizeBytes"
    );
    let entries = model.index_entries();
    let indexes = table["LocalSecondaryIndexes"]
        .as_array()
        .into_iter()
        .chain(table["GlobalSecondaryIndexes"].as_array())
        .flatten();
    for index in indexes {
        let name = index["IndexName"].as_str().unwrap_or_default();
        let (count, bytes) = entries
            .iter()
            .filter(|((index_name, _), _)| index_name == name)
            .fold((0u64, 0u64), |(count, bytes), (_, entry)| {
                (count + 1, bytes + size(entry))
            });
        prop_assert_eq!(&index["ItemCount"], &json!(count), "ItemCount of {}", name);
        prop_assert_eq!(
            &index["IndexSizeBytes"],
            &json!(bytes),
            "IndexSizeBytes of {}",
            name
        );
    }
    let report = db.check().unwrap();
    prop_assert!(report.is_sound(), "{:?}", report.problems);
    Ok(())
}

// ---- Driving the engine ---------------------------------------------------------------------

fn item_json(item: &Item) -> Value {
    shoal_model::item_to_json(item)
}

fn put_request(pk: u8, sk: u8, attributes: &[(usize, AttributeValue)]) -> (Item, Value) {
    let mut item = key_item(pk, sk);
    for (index, value) in attributes {
        item.insert(ATTRIBUTES[*index].to_string(), value.clone());
    }
    let request = json!({"TableName": TABLE, "Item": item_json(&item)});
    (item, request)
}

fn update_request(pk: u8, sk: u8, changes: &[(usize, Change)]) -> Value {
    let mut request = json!({"TableName": TABLE, "Key": item_json(&key_item(pk, sk))});
    let mut sets = Vec::new();
    let mut removes = Vec::new();
    let mut names = serde_json::Map::new();
    let mut values = serde_json::Map::new();
    for (position, (index, change)) in changes.iter().enumerate() {
        names.insert(format!("#n{position}"), json!(ATTRIBUTES[*index]));
        match change {
            Change::Set(value) => {
                values.insert(format!(":v{position}"), value.to_json());
                sets.push(format!("#n{position} = :v{position}"));
            }
            Change::Remove => removes.push(format!("#n{position}")),
        }
    }
    let mut expression = Vec::new();
    if !sets.is_empty() {
        expression.push(format!("SET {}", sets.join(", ")));
    }
    if !removes.is_empty() {
        expression.push(format!("REMOVE {}", removes.join(", ")));
    }
    if !expression.is_empty() {
        request["UpdateExpression"] = json!(expression.join(" "));
        request["ExpressionAttributeNames"] = Value::Object(names);
        if !values.is_empty() {
            request["ExpressionAttributeValues"] = Value::Object(values);
        }
    }
    request
}

/// Which error a step expects (None: success).
fn expect(
    db: &Database,
    op: &str,
    request: Value,
    error: Option<ErrorCode>,
) -> Result<(), TestCaseError> {
    let outcome = db.execute(op, request.clone());
    match (outcome, error) {
        (Ok(_), None) => Ok(()),
        (Err(e), Some(code)) if e.code == code => Ok(()),
        (outcome, expected) => Err(TestCaseError::fail(format!(
            "{op} {request}: got {outcome:?}, expected error {expected:?}"
        ))),
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let sim = shoal_vfs::sim::SimFs::new();
    let options = Options {
        limits: LimitOptions {
            item_collection_size_limit_bytes: COLLECTION_LIMIT_BYTES,
        },
        // Small memtables: some steps read from flushed SSTables.
        storage: StorageOptions {
            memtable_size_bytes: 16 << 10,
            wal_segment_size_bytes: 256 << 10,
            ..StorageOptions::default()
        },
        ..Options::default()
    };
    let open = || Database::open_with_fs(sim.fs(), Path::new("/db"), options.clone()).unwrap();
    let mut db = open();
    create_table(&db);
    let mut model = Model::default();
    for op in ops {
        match &op {
            Op::Put { pk, sk, attributes } => {
                let (item, request) = put_request(*pk, *sk, attributes);
                let applied = model.write((pk_name(*pk), i64::from(*sk)), Some(item));
                let error =
                    (!applied).then_some(ErrorCode::ItemCollectionSizeLimitExceededException);
                expect(&db, "PutItem", request, error)?;
            }
            Op::PutIfAbsent { pk, sk, attributes } => {
                let (item, mut request) = put_request(*pk, *sk, attributes);
                request["ConditionExpression"] = json!("attribute_not_exists(pk)");
                let key = (pk_name(*pk), i64::from(*sk));
                let error = if model.items.contains_key(&key) {
                    Some(ErrorCode::ConditionalCheckFailedException)
                } else if !model.write(key, Some(item)) {
                    Some(ErrorCode::ItemCollectionSizeLimitExceededException)
                } else {
                    None
                };
                expect(&db, "PutItem", request, error)?;
            }
            Op::Update { pk, sk, changes } => {
                let key = (pk_name(*pk), i64::from(*sk));
                let mut item = model
                    .items
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| key_item(*pk, *sk));
                for (index, change) in changes {
                    match change {
                        Change::Set(value) => {
                            item.insert(ATTRIBUTES[*index].to_string(), value.clone())
                        }
                        Change::Remove => item.remove(ATTRIBUTES[*index]),
                    };
                }
                // REMOVE alone on a missing item creates nothing (DynamoDB's rule).
                let removes_only =
                    !changes.is_empty() && changes.iter().all(|(_, c)| matches!(c, Change::Remove));
                let error = if !model.items.contains_key(&key) && removes_only {
                    None
                } else {
                    let applied = model.write(key, Some(item));
                    (!applied).then_some(ErrorCode::ItemCollectionSizeLimitExceededException)
                };
                expect(&db, "UpdateItem", update_request(*pk, *sk, changes), error)?;
            }
            Op::Delete { pk, sk } => {
                model.write((pk_name(*pk), i64::from(*sk)), None);
                let request = json!({"TableName": TABLE, "Key": item_json(&key_item(*pk, *sk))});
                expect(&db, "DeleteItem", request, None)?;
            }
            Op::Invalid {
                pk,
                sk,
                via_update,
                attribute,
            } => {
                // la/lb/ga/gb with a value of the wrong type, or an empty S/B.
                let bad = match ATTRIBUTES[*attribute] {
                    "la" => n(1),
                    "lb" => s("one"),
                    "ga" => s(""),
                    _ => AttributeValue::B(Vec::new()),
                };
                let request = if *via_update {
                    update_request(*pk, *sk, &[(*attribute, Change::Set(bad))])
                } else {
                    put_request(*pk, *sk, &[(*attribute, bad)]).1
                };
                let op_name = if *via_update { "UpdateItem" } else { "PutItem" };
                expect(&db, op_name, request, Some(ErrorCode::ValidationException))?;
            }
            Op::Reopen => {
                drop(db);
                db = open();
            }
        }
        check(&db, &model).map_err(|e| TestCaseError::fail(format!("after {op:?}: {e}")))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn indexes_and_collections_match_a_recomputing_model(ops in prop::collection::vec(op(), 1..40)) {
        run(ops)?;
    }
}
