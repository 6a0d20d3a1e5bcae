//! Item collections: the exact size record of every collection of a table with a local
//! secondary index, the size cap, and `ItemCollectionMetrics`.
//!
//! # Stored format
//!
//! One record per non-empty item collection, in the table's tree under
//! `keys::collection_key(pk)` (section 0xFF, after every base item and LSI entry of the
//! collection). Its value is 16 bytes:
//!
//! ```text
//! size_bytes: u64 little-endian | item_count: u64 little-endian
//! ```
//!
//! - `size_bytes`: Σ over the collection's base items of (item size + 100), plus Σ over
//!   its LSI entries of (entry size + 100), sizes as DynamoDB counts them
//!   (`shoal_model::item_size_bytes`; the 100 bytes are `index::STORAGE_OVERHEAD_BYTES`).
//! - `item_count`: the number of base items in the collection.
//!
//! The record is rewritten in the same write batch as every write that changes the
//! collection, so it can never disagree with the collection (docs/DESIGN.md §7, invariant 3).
//! When the last item of a collection goes, the record is deleted rather than stored as
//! zeros: a record exists exactly when the collection is non-empty. Tables without an LSI
//! keep no records (their collections are neither capped nor reported).

use shoal_model::{ApiError, AttributeValue, ErrorCode, Item};

use crate::api::common::ItemCollectionMetrics;
use crate::core::catalog::TableDef;
use crate::core::error::internal;
use crate::core::keys;
use crate::core::store::Core;
use shoal_engine::{Db, Direction};
use std::ops::Bound;

/// Length of a stored record.
pub const RECORD_BYTES: usize = 16;

/// Bytes per GB in `SizeEstimateRangeGB` (DynamoDB's GB is 2^30 bytes).
const GB_BYTES: u64 = 1 << 30;

/// DynamoDB's message when a write would grow a collection past the cap.
pub const COLLECTION_SIZE_EXCEEDED_MESSAGE: &str = "Collection size exceeded.";

/// The size record of one item collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CollectionRecord {
    pub size_bytes: u64,
    pub item_count: u64,
}

/// Why stored record bytes could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("collection record has {0} bytes, expected {RECORD_BYTES}")]
pub struct RecordLengthError(pub usize);

impl CollectionRecord {
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut out = [0u8; RECORD_BYTES];
        out[..8].copy_from_slice(&self.size_bytes.to_le_bytes());
        out[8..].copy_from_slice(&self.item_count.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<CollectionRecord, RecordLengthError> {
        let (Some(size), Some(count)) = (bytes.get(..8), bytes.get(8..RECORD_BYTES)) else {
            return Err(RecordLengthError(bytes.len()));
        };
        if bytes.len() != RECORD_BYTES {
            return Err(RecordLengthError(bytes.len()));
        }
        let mut size_bytes = [0u8; 8];
        size_bytes.copy_from_slice(size);
        let mut item_count = [0u8; 8];
        item_count.copy_from_slice(count);
        Ok(CollectionRecord {
            size_bytes: u64::from_le_bytes(size_bytes),
            item_count: u64::from_le_bytes(item_count),
        })
    }

    /// Whether the collection holds nothing (its record is then deleted).
    pub fn is_empty(&self) -> bool {
        self.item_count == 0 && self.size_bytes == 0
    }

    /// The record after a change of `delta`. A result below zero means the record and the
    /// collection disagree: a bug or a damaged store, reported instead of wrapping around.
    pub fn apply(&self, delta: &CollectionDelta) -> Result<CollectionRecord, ApiError> {
        let size_bytes = self.size_bytes.checked_add_signed(delta.size_bytes);
        let item_count = self.item_count.checked_add_signed(delta.item_count);
        match (size_bytes, item_count) {
            (Some(size_bytes), Some(item_count)) => Ok(CollectionRecord {
                size_bytes,
                item_count,
            }),
            _ => Err(internal(format!(
                "collection record {self:?} cannot take change {delta:?}"
            ))),
        }
    }
}

/// How one write changes its collection's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CollectionDelta {
    pub size_bytes: i64,
    pub item_count: i64,
}

impl CollectionDelta {
    /// Sums two changes to one collection (batches and transactions writing several items
    /// of one collection).
    pub fn plus(&self, other: &CollectionDelta) -> CollectionDelta {
        CollectionDelta {
            size_bytes: self.size_bytes + other.size_bytes,
            item_count: self.item_count + other.item_count,
        }
    }
}

/// Reads the record of the collection of `pk` (an absent record is an empty collection) that
/// a write is about to replace, now, read as such (`Db::get_replaced_with`).
pub fn read_record(
    db: &Db,
    table: &TableDef,
    pk: &AttributeValue,
) -> Result<CollectionRecord, ApiError> {
    let key = keys::collection_key(pk).map_err(internal)?;
    match db
        .get_replaced_with(table.tree, &key, CollectionRecord::decode)
        .map_err(internal)?
    {
        None => Ok(CollectionRecord::default()),
        Some(record) => record.map_err(internal),
    }
}

/// Rejects a change that grows a collection past `limit_bytes`; shrinking (or unchanged)
/// collections always pass, even when they are still over the cap.
pub fn check_growth(
    before: &CollectionRecord,
    after: &CollectionRecord,
    limit_bytes: u64,
) -> Result<(), ApiError> {
    if after.size_bytes > before.size_bytes && after.size_bytes > limit_bytes {
        return Err(ApiError::new(
            ErrorCode::ItemCollectionSizeLimitExceededException,
            COLLECTION_SIZE_EXCEEDED_MESSAGE,
        ));
    }
    Ok(())
}

/// `SizeEstimateRangeGB`: the whole-GB bucket holding the collection size (`[0, 1]` for
/// anything under a GB).
pub fn size_estimate_range_gb(size_bytes: u64) -> [f64; 2] {
    let lower = size_bytes / GB_BYTES;
    [lower as f64, (lower + 1) as f64]
}

/// `ItemCollectionMetrics` of the collection of `pk`, now `size_bytes` big.
pub fn metrics(table: &TableDef, pk: &AttributeValue, size_bytes: u64) -> ItemCollectionMetrics {
    let mut item_collection_key = Item::new();
    item_collection_key.insert(table.key.hash.name.clone(), pk.clone());
    ItemCollectionMetrics {
        item_collection_key,
        size_estimate_range_gb: size_estimate_range_gb(size_bytes),
    }
}

/// One item collection and its size record, as [`Core::largest_item_collections`] finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionSize {
    pub partition_key: AttributeValue,
    pub record: CollectionRecord,
}

/// What one walk of [`Core::largest_item_collections`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionWalk {
    /// The largest collections met, largest first.
    pub largest: Vec<CollectionSize>,
    /// Collections met.
    pub visited: usize,
    /// Where the next walk starts (an opaque position), when this one stopped at its bound.
    pub next: Option<Vec<u8>>,
}

impl Core {
    /// The `limit` largest item collections of table `name` among at most `visit_max` met
    /// after `after` (a walk's `next`; `None`: from the first), at one snapshot. The walk
    /// steps from collection to collection, one range read for the next partition's first
    /// key and one point read of its record, never through the items themselves. A table
    /// without a local secondary index keeps no records: every collection then shows as
    /// empty and none is listed.
    pub fn largest_item_collections(
        &self,
        name: &str,
        after: Option<&[u8]>,
        visit_max: usize,
        limit: usize,
    ) -> Result<CollectionWalk, ApiError> {
        let table = self.table(name)?;
        let db = &self.db;
        let snapshot = db.snapshot();
        let pk_type = table.key.hash.scalar_type();
        let mut position: Option<Vec<u8>> = after.map(<[u8]>::to_vec);
        let mut largest: Vec<CollectionSize> = Vec::new();
        let mut visited = 0;
        let next = loop {
            if visited >= visit_max {
                break position;
            }
            let lower = match &position {
                Some(key) => Bound::Excluded(key.as_slice()),
                None => Bound::Unbounded,
            };
            let mut cursor = db
                .iter(
                    table.tree,
                    lower,
                    Bound::Unbounded,
                    Direction::Forward,
                    Some(&snapshot),
                )
                .map_err(internal)?;
            if !cursor.advance().map_err(internal)? {
                break None;
            }
            let key = cursor.key();
            let (prefix_len, _) = keys::split_table_key(key, pk_type).map_err(internal)?;
            // The record sorts after every other key of its collection: the next read
            // starts past it, at the next partition.
            let mut record_key = key[..prefix_len].to_vec();
            record_key.push(keys::SECTION_COLLECTION);
            drop(cursor);
            visited += 1;
            let record = db
                .get_with(
                    table.tree,
                    &record_key,
                    Some(&snapshot),
                    CollectionRecord::decode,
                )
                .map_err(internal)?
                .transpose()
                .map_err(internal)?;
            if let Some(record) = record {
                let encoded = &record_key[keys::HASH_BYTES..prefix_len];
                let (partition_key, _) =
                    shoal_model::keycodec::decode_key_value(encoded, pk_type).map_err(internal)?;
                largest.push(CollectionSize {
                    partition_key,
                    record,
                });
                if largest.len() > limit.saturating_mul(2).max(64) {
                    keep_largest(&mut largest, limit);
                }
            }
            position = Some(record_key);
        };
        keep_largest(&mut largest, limit);
        Ok(CollectionWalk {
            largest,
            visited,
            next,
        })
    }
}

/// Keeps the `limit` largest, largest first.
fn keep_largest(collections: &mut Vec<CollectionSize>, limit: usize) {
    collections.sort_by_key(|c| std::cmp::Reverse(c.record.size_bytes));
    collections.truncate(limit);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_reject_bad_lengths() {
        let record = CollectionRecord {
            size_bytes: 0x0102_0304_0506_0708,
            item_count: 3,
        };
        let bytes = record.encode();
        assert_eq!(bytes[0], 0x08, "little-endian");
        assert_eq!(CollectionRecord::decode(&bytes).unwrap(), record);
        assert_eq!(
            CollectionRecord::decode(&bytes[..15]),
            Err(RecordLengthError(15))
        );
        let mut long = bytes.to_vec();
        long.push(0);
        assert_eq!(CollectionRecord::decode(&long), Err(RecordLengthError(17)));
    }

    #[test]
    fn deltas_apply_and_underflow_is_an_error() {
        let record = CollectionRecord {
            size_bytes: 300,
            item_count: 2,
        };
        let shrink = CollectionDelta {
            size_bytes: -300,
            item_count: -2,
        };
        assert!(record.apply(&shrink).unwrap().is_empty());
        let too_much = CollectionDelta {
            size_bytes: -301,
            item_count: -1,
        };
        assert!(record.apply(&too_much).is_err());
        assert_eq!(
            shrink.plus(&CollectionDelta {
                size_bytes: 10,
                item_count: 1
            }),
            CollectionDelta {
                size_bytes: -290,
                item_count: -1
            }
        );
    }

    #[test]
    fn only_growth_past_the_cap_is_refused() {
        let at = |size_bytes| CollectionRecord {
            size_bytes,
            item_count: 1,
        };
        assert!(
            check_growth(&at(90), &at(100), 100).is_ok(),
            "exactly at the cap"
        );
        let error = check_growth(&at(90), &at(101), 100).unwrap_err();
        assert_eq!(
            error.code,
            ErrorCode::ItemCollectionSizeLimitExceededException
        );
        assert_eq!(error.message, "Collection size exceeded.");
        assert!(
            check_growth(&at(150), &at(120), 100).is_ok(),
            "shrinking over the cap"
        );
    }

    #[test]
    fn size_buckets_are_whole_gigabytes() {
        assert_eq!(size_estimate_range_gb(0), [0.0, 1.0]);
        assert_eq!(size_estimate_range_gb(GB_BYTES - 1), [0.0, 1.0]);
        assert_eq!(size_estimate_range_gb(GB_BYTES), [1.0, 2.0]);
        assert_eq!(size_estimate_range_gb(10 * GB_BYTES + 5), [10.0, 11.0]);
    }
}
