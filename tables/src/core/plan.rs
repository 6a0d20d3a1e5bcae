//! What a planned item write is made of: the item's key, the mutations of the LSM trees
//! (the base item, its index entries, what features add), the capacity it charges, and the
//! plan that holds them all (`core::write` makes and commits plans).

use std::collections::BTreeMap;

use shoal_engine::batch::entry_bytes;
use shoal_engine::TreeId;
use shoal_model::{ApiError, AttributeValue, Item};

use crate::api::common::{Capacity, ConsumedCapacity, ReturnConsumedCapacity};
use crate::core::catalog::TableDef;
use crate::core::collection::CollectionDelta;
use crate::core::error::internal;
use crate::core::keys;
use crate::core::stats::StatsDelta;

/// The primary key of one item, type-checked against its table.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemKey {
    pub pk: AttributeValue,
    pub sk: Option<AttributeValue>,
}

impl ItemKey {
    /// The storage key of the base item.
    pub fn base_key(&self) -> Result<Vec<u8>, ApiError> {
        keys::base_key(&self.pk, self.sk.as_ref()).map_err(internal)
    }

    /// `hash64(pk) | pk`: what the collection lock is taken on.
    pub fn partition_prefix(&self) -> Result<Vec<u8>, ApiError> {
        keys::partition_prefix(&self.pk).map_err(internal)
    }

    /// The key as an item (`{pk: …, sk: …}`): what an upsert starts from.
    pub fn to_item(&self, table: &TableDef) -> Item {
        let mut item = Item::new();
        item.insert(table.key.hash.name.clone(), self.pk.clone());
        if let (Some(range), Some(sk)) = (&table.key.range, &self.sk) {
            item.insert(range.name.clone(), sk.clone());
        }
        item
    }
}

/// One change to one LSM tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    Put {
        tree: TreeId,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        tree: TreeId,
        key: Vec<u8>,
    },
    /// A put whose key is `prefix` followed by the sequence number the engine gives the
    /// write (a log of changes, such as a stream's records or a replication queue, ordered
    /// as the writes committed).
    PutSequenced {
        tree: TreeId,
        prefix: Vec<u8>,
        value: Vec<u8>,
    },
}

impl Mutation {
    /// What the mutation adds to a write batch's payload.
    pub(crate) fn batch_bytes(&self) -> usize {
        match self {
            Mutation::Put { key, value, .. } => entry_bytes(key.len(), Some(value.len())),
            Mutation::Delete { key, .. } => entry_bytes(key.len(), None),
            Mutation::PutSequenced { prefix, value, .. } => {
                entry_bytes(prefix.len() + 8, Some(value.len()))
            }
        }
    }

    /// The tree the mutation changes.
    pub fn tree(&self) -> TreeId {
        match self {
            Mutation::Put { tree, .. }
            | Mutation::Delete { tree, .. }
            | Mutation::PutSequenced { tree, .. } => *tree,
        }
    }
}

/// Write capacity of one or more item writes to one table, per arm (SPEC §5).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WriteCapacity {
    pub table_units: f64,
    /// Units per LSI name, only for indexes actually written.
    pub local_units: BTreeMap<String, f64>,
    /// Units per GSI name, only for indexes actually written.
    pub global_units: BTreeMap<String, f64>,
}

impl WriteCapacity {
    /// Table plus every index arm.
    pub fn total(&self) -> f64 {
        self.table_units
            + self.local_units.values().sum::<f64>()
            + self.global_units.values().sum::<f64>()
    }

    /// Adds another write's charges (batches and transactions sum per table).
    pub fn add(&mut self, other: &WriteCapacity) {
        self.table_units += other.table_units;
        for (name, units) in &other.local_units {
            *self.local_units.entry(name.clone()).or_default() += units;
        }
        for (name, units) in &other.global_units {
            *self.global_units.entry(name.clone()).or_default() += units;
        }
    }

    /// `ConsumedCapacity` as the request asked for it (None for NONE).
    pub fn report(
        &self,
        table_name: &str,
        mode: ReturnConsumedCapacity,
    ) -> Option<ConsumedCapacity> {
        let total = self.total();
        let mut consumed = ConsumedCapacity {
            table_name: table_name.to_string(),
            capacity_units: total,
            ..ConsumedCapacity::default()
        };
        match mode {
            ReturnConsumedCapacity::None => return None,
            ReturnConsumedCapacity::Total => {}
            ReturnConsumedCapacity::Indexes => {
                let arm = |units: f64| Capacity {
                    capacity_units: units,
                    read_capacity_units: None,
                    write_capacity_units: None,
                };
                let arms = |units: &BTreeMap<String, f64>| {
                    (!units.is_empty()).then(|| {
                        units
                            .iter()
                            .map(|(name, u)| (name.clone(), arm(*u)))
                            .collect()
                    })
                };
                consumed.table = Some(arm(self.table_units));
                consumed.local_secondary_indexes = arms(&self.local_units);
                consumed.global_secondary_indexes = arms(&self.global_units);
            }
        }
        Some(consumed)
    }
}

/// Everything one item write does, decided before anything is written.
#[derive(Debug, Clone)]
pub struct WritePlan {
    pub key: ItemKey,
    /// Base item and index entry changes, then the features' own, in the order they go into
    /// the batch. The base item's change, if any, is first.
    pub mutations: Vec<Mutation>,
    pub capacity: WriteCapacity,
    /// The change to the item's collection record (tables with an LSI only).
    pub collection: Option<CollectionDelta>,
    /// The change to the table's statistics, for the table, its LSIs and its ACTIVE GSIs
    /// (a CREATING GSI's entries are counted at commit, `core::stats`).
    pub stats: StatsDelta,
}
