//! Streams' part of `Database::check`: each item's last stream record against the item.

use shoal_engine::Direction;
use shoal_model::ApiError;

use crate::core::catalog::TableDef;
use crate::core::checker::Checker;
use crate::core::error::internal;
use crate::core::item_codec::decode_item;
use crate::core::write::key_of_item;
use crate::streams::record::{decode_record, EventName};

/// Distinct items whose last stream record the check compares at most (16 bytes of memory
/// each); past it the rest of the stream is not checked and the report says so.
const STREAM_KEYS_CHECKED_MAX: usize = 8 << 20;

/// The table's enabled stream against its items (invariant 8, where the items can show
/// it): for each item that has a record, its LAST record must describe what the item is
/// now — REMOVE if it is gone, else INSERT or MODIFY, with a NewImage equal to the item
/// when the view type carries one. Every change after the first record of a key has a
/// record of its own, so a last record that disagrees means a change without a record,
/// or a record without its change. Items without records (unchanged since the stream
/// was enabled) have nothing to compare. The walk goes from the newest record back,
/// remembering a 128-bit hash of each key seen.
pub(crate) fn check_stream(checker: &mut Checker<'_>, table: &TableDef) -> Result<(), ApiError> {
    let Some(stream_def) = table.enabled_stream() else {
        return Ok(());
    };
    let mut seen: std::collections::HashSet<u128> = std::collections::HashSet::new();
    let mut cursor = checker
        .db
        .iter(
            stream_def.tree,
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            Direction::Reverse,
            Some(checker.snapshot),
        )
        .map_err(internal)?;
    while !checker.report.is_full() && cursor.advance().map_err(internal)? {
        let Some(seq) = cursor.key().try_into().ok().map(u64::from_be_bytes) else {
            checker.report.problem(format!(
                "table {}, stream: a malformed record key",
                table.name
            ));
            continue;
        };
        let record = match decode_record(seq, stream_def.view_type, cursor.value()) {
            Ok(record) => record,
            Err(error) => {
                checker.report.problem(format!(
                    "table {}, stream: record {seq}: {error}",
                    table.name
                ));
                continue;
            }
        };
        let key = match key_of_item(table, &record.keys).and_then(|key| key.base_key()) {
            Ok(key) => key,
            Err(error) => {
                checker.report.problem(format!(
                    "table {}, stream: record {seq} has bad keys: {}",
                    table.name, error.message
                ));
                continue;
            }
        };
        if !seen.insert(checker.hasher.entry(&key, std::iter::empty())) {
            continue; // an older record of a key already compared
        }
        if seen.len() > STREAM_KEYS_CHECKED_MAX {
            checker.report.problem(format!(
                "table {}, stream: only the last records of {STREAM_KEYS_CHECKED_MAX} items were compared",
                table.name
            ));
            break;
        }
        let item = checker
            .db
            .get_with(table.tree, &key, Some(checker.snapshot), decode_item)
            .map_err(internal)?
            .transpose()
            .map_err(internal)?;
        let agrees = match (record.event_name, &item) {
            (EventName::Remove, None) => true,
            (EventName::Remove, Some(_)) | (_, None) => false,
            (_, Some(item)) => record.new_image.as_ref().is_none_or(|image| image == item),
        };
        if !agrees {
            checker.report.problem(format!(
                "table {}, stream: the last record of {} ({} at sequence number {seq}) disagrees with the item ({})",
                table.name,
                record.keys.iter().map(|(n, v)| format!("{n} = {}", v.to_json())).collect::<Vec<_>>().join(", "),
                record.event_name.as_str(),
                if item.is_some() { "present" } else { "absent" }
            ));
        }
    }
    Ok(())
}
