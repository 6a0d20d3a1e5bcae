//! Time to Live's part of `Database::check`: the expiry index against the items.

use shoal_model::{ApiError, AttributeValue};

use crate::core::catalog::TableDef;
use crate::core::checker::{describe_partition, Checker, Digest};
use crate::core::error::internal;
use crate::core::item_codec::decode_item;
use crate::core::keys::{self, SECTION_BASE};
use crate::ttl::expiry_entry;

/// The Time to Live expiry index (`ttl`) against the items, as a GSI is checked:
/// a digest of the entries the base items derive (one more walk of the items) against a
/// digest of the index; only when they differ, a second pass traces each entry to its
/// item and each item to its entry. An index still being backfilled is not checked.
pub(crate) fn check_expiry_index(
    checker: &mut Checker<'_>,
    table: &TableDef,
) -> Result<(), ApiError> {
    let Some(ttl) = table.time_to_live.as_ref().filter(|ttl| ttl.backfilled) else {
        return Ok(());
    };
    let no_attributes = || std::iter::empty::<(&str, &AttributeValue)>();
    let pk_type = table.key.hash.scalar_type();
    let mut expected = Digest::default();
    let mut cursor = checker
        .db
        .iter_tree(table.tree, checker.snapshot)
        .map_err(internal)?;
    while cursor.advance().map_err(internal)? {
        let (_, section) = keys::split_table_key(cursor.key(), pk_type).map_err(internal)?;
        if section != SECTION_BASE {
            continue;
        }
        let item = decode_item(cursor.value()).map_err(internal)?;
        if let Some((_, key)) = expiry_entry(table, &item, cursor.key()) {
            expected.add(checker.hasher.entry(&key, no_attributes()));
        }
    }
    drop(cursor);
    let mut stored = Digest::default();
    let mut cursor = checker
        .db
        .iter_tree(ttl.tree, checker.snapshot)
        .map_err(internal)?;
    while cursor.advance().map_err(internal)? {
        checker.report.index_entries += 1;
        stored.add(checker.hasher.entry(cursor.key(), no_attributes()));
    }
    drop(cursor);
    if stored == expected || checker.report.is_full() {
        return Ok(());
    }
    // Each stored entry must be the one its item derives.
    let mut cursor = checker
        .db
        .iter_tree(ttl.tree, checker.snapshot)
        .map_err(internal)?;
    while !checker.report.is_full() && cursor.advance().map_err(internal)? {
        let key = cursor.key();
        let base_key = key.get(8..).unwrap_or_default();
        let item = checker
            .db
            .get_with(table.tree, base_key, Some(checker.snapshot), decode_item)
            .map_err(internal)?
            .transpose()
            .map_err(internal)?;
        let derived = item.and_then(|item| expiry_entry(table, &item, base_key));
        if derived.as_ref().map(|(_, k)| k.as_slice()) != Some(key) {
            checker.report.problem(format!(
                "table {}, expiry index: entry {key:02x?} is not what its item derives",
                table.name
            ));
        }
    }
    drop(cursor);
    // Each item with an expiry must have its entry.
    let mut cursor = checker
        .db
        .iter_tree(table.tree, checker.snapshot)
        .map_err(internal)?;
    while !checker.report.is_full() && cursor.advance().map_err(internal)? {
        let (prefix_len, section) =
            keys::split_table_key(cursor.key(), pk_type).map_err(internal)?;
        if section != SECTION_BASE {
            continue;
        }
        let item = decode_item(cursor.value()).map_err(internal)?;
        let Some((_, key)) = expiry_entry(table, &item, cursor.key()) else {
            continue;
        };
        let present = checker
            .db
            .get_with(ttl.tree, &key, Some(checker.snapshot), |_| ())
            .map_err(internal)?
            .is_some();
        if !present {
            checker.report.problem(format!(
                "table {}, expiry index: an item of the partition {} has no entry",
                table.name,
                describe_partition(table, &cursor.key()[..prefix_len])
            ));
        }
    }
    Ok(())
}
