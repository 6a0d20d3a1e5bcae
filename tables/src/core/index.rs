//! Index entries: which indexes an item belongs to (sparse membership), under which key, and
//! what each entry holds (its projection), plus the index-key checks every write makes.
//!
//! An item is in an index iff all of the index's key attributes are present (writes with a
//! wrong type are rejected before this point, so presence is the test). An entry holds the
//! table key, the index key and the projected attributes; it is stored as an encoded item
//! (`item_codec`) under the key of `keys::lsi_key` or `keys::gsi_key`.

use shoal_model::{ApiError, AttributeValue, Item};

use crate::core::catalog::{GlobalIndexDef, KeyAttribute, KeySchema, Projection, TableDef};
use crate::core::item_codec::encode_attributes;
use crate::core::keys;

/// DynamoDB's per-entry storage overhead for index entries and table items, in bytes.
pub const STORAGE_OVERHEAD_BYTES: u64 = 100;
/// Largest partition-key value, in bytes.
pub const HASH_KEY_BYTES_MAX: usize = 2048;
/// Largest sort-key value, in bytes.
pub const RANGE_KEY_BYTES_MAX: usize = 1024;

/// Which index an entry belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IndexRef {
    /// Position in `TableDef::local_indexes`.
    Local(usize),
    /// Position in `TableDef::global_indexes`.
    Global(usize),
}

/// One index entry of one item, borrowing its attributes from the item.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry<'a> {
    pub index: IndexRef,
    /// Storage key in the index's tree (the table tree for LSIs).
    pub key: Vec<u8>,
    /// Table key + index key + projected attributes.
    pub item: Projected<'a>,
}

impl IndexEntry<'_> {
    /// DynamoDB size of the entry (what index write capacity is charged on).
    pub fn size_bytes(&self) -> u64 {
        self.item.size_bytes()
    }

    /// What the entry counts for in storage sizes (collection size, IndexSizeBytes).
    pub fn storage_bytes(&self) -> u64 {
        self.size_bytes() + STORAGE_OVERHEAD_BYTES
    }
}

/// The entries `item` has in every index of `table` (LSIs first, in definition order, then
/// GSIs), skipping indexes whose key attributes it lacks. The item must already have passed
/// [`check_index_keys`].
pub fn entries_for<'a>(table: &TableDef, item: &'a Item) -> Result<Vec<IndexEntry<'a>>, ApiError> {
    let mut entries = Vec::new();
    let table_pk = item.get(&table.key.hash.name);
    let table_sk = table.key.range.as_ref().and_then(|r| item.get(&r.name));
    let Some(table_pk) = table_pk else {
        return Err(ApiError::validation(format!(
            "One or more parameter values were invalid: Missing the key {} in the item",
            table.key.hash.name
        )));
    };
    for (position, lsi) in table.local_indexes.iter().enumerate() {
        let Some(lsi_sk) = lsi.key.range.as_ref().and_then(|r| item.get(&r.name)) else {
            continue;
        };
        let key = keys::lsi_key(table_pk, lsi.section, lsi_sk, table_sk).map_err(internal)?;
        entries.push(entry(
            IndexRef::Local(position),
            key,
            table,
            &lsi.key,
            &lsi.projection,
            item,
        ));
    }
    for (position, gsi) in table.global_indexes.iter().enumerate() {
        let Some(key) = gsi_entry_key(gsi, item, table_pk, table_sk)? else {
            continue;
        };
        entries.push(entry(
            IndexRef::Global(position),
            key,
            table,
            &gsi.key,
            &gsi.projection,
            item,
        ));
    }
    Ok(entries)
}

/// The storage key of `item`'s entry in `gsi`, or None when the item lacks any of the
/// index's key attributes (HASH or RANGE, every component of a multi-attribute key: such
/// an item is not in the index). The write path and the backfill both build keys here.
pub fn gsi_entry_key(
    gsi: &GlobalIndexDef,
    item: &Item,
    table_pk: &AttributeValue,
    table_sk: Option<&AttributeValue>,
) -> Result<Option<Vec<u8>>, ApiError> {
    let values = |attributes: &mut dyn Iterator<Item = &KeyAttribute>| {
        attributes
            .map(|a| item.get(&a.name))
            .collect::<Option<Vec<&AttributeValue>>>()
    };
    let (Some(hash), Some(range)) = (
        values(&mut gsi.key.hash_attributes()),
        values(&mut gsi.key.range_attributes()),
    ) else {
        return Ok(None);
    };
    keys::gsi_key_of(&hash, &range, table_pk, table_sk)
        .map(Some)
        .map_err(internal)
}

fn entry<'a>(
    index: IndexRef,
    key: Vec<u8>,
    table: &TableDef,
    index_key: &KeySchema,
    projection: &Projection,
    item: &'a Item,
) -> IndexEntry<'a> {
    IndexEntry {
        index,
        key,
        item: project(table, index_key, projection, item),
    }
}

/// The attributes of an index entry, borrowed from the item it is made from, in name order
/// (the order of an [`Item`]). Writes encode entries and compare old with new but never
/// keep them, so an entry copies no names or values: for an ALL projection of a 1 KB item
/// the copy cost more than the encoding.
#[derive(Debug, Clone, PartialEq)]
pub struct Projected<'a> {
    attributes: Vec<(&'a str, &'a AttributeValue)>,
    /// DynamoDB size of the attributes, summed once when projected.
    size_bytes: u64,
}

impl<'a> Projected<'a> {
    /// Name and value of each attribute, in name order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&'a str, &'a AttributeValue)> + '_ {
        self.attributes.iter().copied()
    }

    /// The entry's DynamoDB size (as [`shoal_model::item_size_bytes`] of the owned item).
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// The entry as stored: encoded exactly as [`crate::core::item_codec::encode_item`]
    /// encodes the owned item, allocated once from its size.
    pub fn encode(&self) -> Vec<u8> {
        encode_attributes(self.iter(), self.size_bytes)
    }

    /// The entry as an owned item.
    pub fn to_item(&self) -> Item {
        self.iter()
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect()
    }
}

/// The attributes of `item` an index with `projection` holds: table and index keys always,
/// plus the projected attributes that exist.
pub fn project<'a>(
    table: &TableDef,
    index_key: &KeySchema,
    projection: &Projection,
    item: &'a Item,
) -> Projected<'a> {
    let mut attributes: Vec<(&'a str, &'a AttributeValue)> = match projection {
        Projection::All => item
            .iter()
            .map(|(name, value)| (name.as_str(), value))
            .collect(),
        Projection::KeysOnly | Projection::Include(_) => {
            let key_names = table.key.names().chain(index_key.names());
            let included = match projection {
                Projection::Include(names) => names.as_slice(),
                _ => &[],
            };
            key_names
                .chain(included.iter().map(String::as_str))
                .filter_map(|name| item.get_key_value(name))
                .map(|(name, value)| (name.as_str(), value))
                .collect()
        }
    };
    // Key names repeat (a table key that is also an index key) and come in schema order.
    attributes.sort_unstable_by(|a, b| a.0.cmp(b.0));
    attributes.dedup_by(|a, b| a.0 == b.0);
    let size_bytes = shoal_model::attributes_size_bytes(attributes.iter().copied()) as u64;
    Projected {
        attributes,
        size_bytes,
    }
}

/// Whether an index with this projection holds attribute `name` (key attributes included).
pub fn projects(
    table: &TableDef,
    index_key: &KeySchema,
    projection: &Projection,
    name: &str,
) -> bool {
    match projection {
        Projection::All => true,
        Projection::KeysOnly | Projection::Include(_) => {
            table
                .key
                .names()
                .chain(index_key.names())
                .any(|n| n == name)
                || matches!(projection, Projection::Include(names) if names.iter().any(|n| n == name))
        }
    }
}

/// Checks the index key attributes of an item about to be written (SPEC §3.1): present index
/// keys must have the declared type and must not be empty S/B, and must fit the key size
/// limits. When several indexes are violated the alphabetically first index is named.
/// `via_update` selects the UpdateItem wording for empty values.
pub fn check_index_keys(table: &TableDef, item: &Item, via_update: bool) -> Result<(), ApiError> {
    let mut indexes: Vec<(&str, &KeySchema)> = table
        .local_indexes
        .iter()
        .map(|i| (i.name.as_str(), &i.key))
        .chain(
            table
                .global_indexes
                .iter()
                .map(|i| (i.name.as_str(), &i.key)),
        )
        .collect();
    indexes.sort_by(|a, b| a.0.cmp(b.0));
    for (index_name, key) in indexes {
        let hash_count = key.hash_attributes().count();
        for (position, attribute) in key.attributes().enumerate() {
            let is_hash = position < hash_count;
            // The table's own key attributes are checked (with their own texts) elsewhere.
            if table.key.names().any(|n| n == attribute.name) {
                continue;
            }
            let Some(value) = item.get(&attribute.name) else {
                continue;
            };
            if !attribute.accepts(value) {
                return Err(ApiError::validation(format!(
                    "One or more parameter values were invalid: Type mismatch for Index Key {} Expected: {} Actual: {} IndexName: {}",
                    attribute.name,
                    attribute.scalar_type(),
                    value.type_name(),
                    index_name
                )));
            }
            if value.is_empty_scalar() {
                let kind = if matches!(value, AttributeValue::B(_)) {
                    "binary"
                } else {
                    "string"
                };
                return Err(ApiError::validation(if via_update {
                    format!(
                        "One or more parameter values are not valid. The update expression attempted to update a secondary index key to a value that is not supported. The AttributeValue for a key attribute cannot contain an empty {kind} value."
                    )
                } else {
                    format!(
                        "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty {kind} value. IndexName: {index_name}, IndexKey: {}",
                        attribute.name
                    )
                }));
            }
            if !single_side(key, is_hash) {
                // Measured as a sum below.
                continue;
            }
            let limit = if is_hash {
                HASH_KEY_BYTES_MAX
            } else {
                RANGE_KEY_BYTES_MAX
            };
            if key_value_bytes(value) > limit {
                return Err(ApiError::validation(if is_hash {
                    format!(
                        "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of{HASH_KEY_BYTES_MAX} bytes"
                    )
                } else {
                    format!(
                        "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of {RANGE_KEY_BYTES_MAX} bytes"
                    )
                }));
            }
        }
        if let Some(message) = aggregate_size_problem(key, item, index_name) {
            return Err(ApiError::validation(message));
        }
    }
    Ok(())
}

/// Whether one side (HASH or RANGE) of `key` is a single attribute, measured on its own.
fn single_side(key: &KeySchema, hash: bool) -> bool {
    if hash {
        key.more_hash.is_empty()
    } else {
        key.more_range.is_empty()
    }
}

/// The size rule of a side with several attributes (SPEC-3 §1.3, DynamoDB Local's rule):
/// the sum of the present HASH components may not exceed 2048 bytes, of the RANGE
/// components 1024 bytes. A side of one attribute keeps its own per-value rule.
fn aggregate_size_problem(key: &KeySchema, item: &Item, index_name: &str) -> Option<String> {
    let sides = [
        (false, "HASH", HASH_KEY_BYTES_MAX),
        (true, "RANGE", RANGE_KEY_BYTES_MAX),
    ];
    for (range, kind, limit) in sides {
        if single_side(key, !range) {
            continue;
        }
        let attributes: Vec<&KeyAttribute> = if range {
            key.range_attributes().collect()
        } else {
            key.hash_attributes().collect()
        };
        let size: usize = attributes
            .iter()
            .filter_map(|a| item.get(&a.name))
            .map(key_value_bytes)
            .sum();
        if size > limit {
            let names: Vec<&str> = attributes.iter().map(|a| a.name.as_str()).collect();
            return Some(format!(
                "Aggregate size for {kind} key attributes {} of index {index_name} has exceeded limit {limit} bytes, with actual size {size} bytes",
                names.join(",")
            ));
        }
    }
    None
}

/// Size of a key value as the key limits measure it (S: UTF-8 bytes, B: bytes, N: its
/// byte cost).
pub fn key_value_bytes(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::B(b) => b.len(),
        other => other.size_bytes(),
    }
}

fn internal(error: shoal_model::keycodec::KeyCodecError) -> ApiError {
    // Key values are type-checked before keys are built, so this is a bug, not bad input.
    ApiError::new(
        shoal_model::ErrorCode::InternalServerError,
        format!("key encoding failed: {error}"),
    )
}

/// Whether `item` belongs in `gsi` as a backfill sees it: every key attribute present, of
/// the declared type, not an empty S/B, within the key size limits. Items failing this are
/// left out of the index (SPEC §2.3); writes never store such items once the index exists.
pub fn backfill_indexes(gsi: &GlobalIndexDef, item: &Item) -> bool {
    let hash_count = gsi.key.hash_attributes().count();
    gsi.key
        .attributes()
        .enumerate()
        .all(|(position, attribute)| {
            let is_hash = position < hash_count;
            let limit = match (is_hash, single_side(&gsi.key, is_hash)) {
                (true, true) => HASH_KEY_BYTES_MAX,
                (false, true) => RANGE_KEY_BYTES_MAX,
                (_, false) => usize::MAX,
            };
            item.get(&attribute.name).is_some_and(|value| {
                attribute.accepts(value)
                    && !value.is_empty_scalar()
                    && key_value_bytes(value) <= limit
            })
        })
        && aggregate_size_problem(&gsi.key, item, &gsi.name).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::catalog::{
        BillingMode, GlobalIndexDef, IndexStatus, KeyAttribute, LocalIndexDef, CATALOG_FORMAT,
    };
    use crate::core::item_codec::encode_item;
    use shoal_model::ScalarType;

    fn table() -> TableDef {
        let key = |h: &str, r: Option<&str>| {
            KeySchema::new(
                KeyAttribute::new(h, ScalarType::S),
                r.map(|r| KeyAttribute::new(r, ScalarType::S)),
            )
        };
        TableDef {
            format: CATALOG_FORMAT,
            name: "T".into(),
            id: "id".into(),
            created_at_millis: 0,
            key: key("pk", Some("sk")),
            attribute_definitions: vec![],
            billing: BillingMode::PayPerRequest,
            tree: 1,
            local_indexes: vec![LocalIndexDef {
                name: "byL".into(),
                key: key("pk", Some("l")),
                projection: Projection::Include(vec!["inc".into()]),
                section: 1,
            }],
            global_indexes: vec![GlobalIndexDef {
                name: "byG".into(),
                key: key("g", Some("gs")),
                projection: Projection::KeysOnly,
                tree: 2,
                status: IndexStatus::Active,
                throughput: None,
                capacity: Default::default(),
            }],
            streams: Vec::new(),
            time_to_live: None,
            time_to_live_changed_at_millis: None,
            settings: Default::default(),
            region: None,
            replication: None,
        }
    }

    fn item(pairs: &[(&str, &str)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), AttributeValue::S(v.to_string())))
            .collect()
    }

    #[test]
    fn membership_is_sparse_and_projection_applies() {
        let t = table();
        let only_lsi = item(&[
            ("pk", "p"),
            ("sk", "s"),
            ("l", "x"),
            ("inc", "i"),
            ("other", "o"),
            ("g", "g"),
        ]);
        let entries = entries_for(&t, &only_lsi).unwrap();
        assert_eq!(entries.len(), 1, "GSI needs both g and gs");
        assert_eq!(entries[0].index, IndexRef::Local(0));
        assert_eq!(
            entries[0].item.to_item(),
            item(&[("pk", "p"), ("sk", "s"), ("l", "x"), ("inc", "i")])
        );
        let both = item(&[
            ("pk", "p"),
            ("sk", "s"),
            ("l", "x"),
            ("g", "g"),
            ("gs", "h"),
            ("x", "y"),
        ]);
        let entries = entries_for(&t, &both).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[1].item.to_item(),
            item(&[("pk", "p"), ("sk", "s"), ("g", "g"), ("gs", "h")])
        );
        assert!(projects(
            &t,
            &t.local_indexes[0].key,
            &t.local_indexes[0].projection,
            "inc"
        ));
        assert!(!projects(
            &t,
            &t.local_indexes[0].key,
            &t.local_indexes[0].projection,
            "x"
        ));
    }

    #[test]
    fn borrowed_projections_encode_and_size_as_the_owned_item() {
        let t = table();
        let full = item(&[
            ("pk", "p"),
            ("sk", "s"),
            ("l", "x"),
            ("inc", "i"),
            ("g", "g"),
            ("gs", "h"),
            ("zz", "last"),
            ("a", "first"),
        ]);
        // The LSI's key repeats the table's pk; KEYS_ONLY names come in schema order.
        let lsi = &t.local_indexes[0].key;
        for projection in [
            Projection::All,
            Projection::KeysOnly,
            Projection::Include(vec!["zz".into(), "inc".into(), "missing".into()]),
        ] {
            let projected = project(&t, lsi, &projection, &full);
            let owned = projected.to_item();
            let names: Vec<&str> = projected.iter().map(|(name, _)| name).collect();
            let owned_names: Vec<&str> = owned.keys().map(String::as_str).collect();
            assert_eq!(names, owned_names, "{projection:?}: order or duplicates");
            assert_eq!(projected.encode(), encode_item(&owned), "{projection:?}");
            assert_eq!(
                projected.size_bytes(),
                shoal_model::item_size_bytes(&owned) as u64,
                "{projection:?}"
            );
        }
        assert_eq!(project(&t, lsi, &Projection::All, &full).to_item(), full);
        assert_eq!(
            project(&t, lsi, &Projection::KeysOnly, &full).to_item(),
            item(&[("pk", "p"), ("sk", "s"), ("l", "x")])
        );
    }

    #[test]
    fn index_key_checks_use_dynamodb_texts() {
        let t = table();
        let mut wrong = item(&[("pk", "p"), ("sk", "s")]);
        wrong.insert(
            "l".into(),
            AttributeValue::N(shoal_model::Number::from_i64(1)),
        );
        wrong.insert("g".into(), AttributeValue::Bool(true));
        // byG sorts before byL: its violation is reported.
        assert_eq!(
            check_index_keys(&t, &wrong, false).unwrap_err().message,
            "One or more parameter values were invalid: Type mismatch for Index Key g Expected: S Actual: BOOL IndexName: byG"
        );
        let empty = item(&[("pk", "p"), ("sk", "s"), ("l", "")]);
        assert_eq!(
            check_index_keys(&t, &empty, false).unwrap_err().message,
            "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty string value. IndexName: byL, IndexKey: l"
        );
        let long = item(&[("pk", "p"), ("sk", "s"), ("l", &"x".repeat(1025))]);
        assert!(check_index_keys(&t, &long, false)
            .unwrap_err()
            .message
            .contains("1024 bytes"));
        let fine = item(&[("pk", "p"), ("sk", "s"), ("l", &"x".repeat(1024))]);
        assert!(check_index_keys(&t, &fine, false).is_ok());
    }

    use shoal_model::{AttributeValue, Number};

    fn city_age_gsi() -> GlobalIndexDef {
        GlobalIndexDef {
            name: "ByCity".into(),
            key: KeySchema::new(
                KeyAttribute::new("city", ScalarType::S),
                Some(KeyAttribute::new("age", ScalarType::N)),
            ),
            projection: Projection::All,
            tree: 2,
            status: IndexStatus::Creating { backfilling: true },
            throughput: None,
            capacity: Default::default(),
        }
    }

    fn city_age_item(city: AttributeValue, age: Option<AttributeValue>) -> Item {
        let mut item = Item::new();
        item.insert("id".into(), AttributeValue::S("u".into()));
        item.insert("city".into(), city);
        if let Some(age) = age {
            item.insert("age".into(), age);
        }
        item
    }

    #[test]
    fn backfill_skips_items_the_index_key_rules_reject() {
        let age = || Some(AttributeValue::N(Number::from_i64(3)));
        let s = |v: &str| AttributeValue::S(v.to_string());
        assert!(backfill_indexes(
            &city_age_gsi(),
            &city_age_item(s("Paris"), age())
        ));
        assert!(
            !backfill_indexes(&city_age_gsi(), &city_age_item(s("Paris"), None)),
            "sparse"
        );
        assert!(!backfill_indexes(
            &city_age_gsi(),
            &city_age_item(AttributeValue::N(Number::from_i64(5)), age())
        ));
        assert!(
            !backfill_indexes(&city_age_gsi(), &city_age_item(s(""), age())),
            "empty S"
        );
        assert!(backfill_indexes(
            &city_age_gsi(),
            &city_age_item(s(&"c".repeat(HASH_KEY_BYTES_MAX)), age())
        ));
        assert!(!backfill_indexes(
            &city_age_gsi(),
            &city_age_item(s(&"c".repeat(HASH_KEY_BYTES_MAX + 1)), age())
        ));
        assert!(!backfill_indexes(
            &city_age_gsi(),
            &city_age_item(s("Paris"), Some(s("3")))
        ));
    }
}
