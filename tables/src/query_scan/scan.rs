//! Scan: every item of a table, or every entry of an index, in storage order (hash order
//! across partitions, sort order within one), optionally one parallel-scan segment of it.
//!
//! - A GSI lives alone in its tree: a scan walks the tree (or one segment's hash range).
//! - A table's tree also holds its LSI entries (sections 1..=5) and collection records
//!   (section 0xFF) next to each partition's base items (section 0x00). A table scan keeps
//!   section 0x00, an LSI scan keeps that LSI's section; [`SectionCursor`] jumps over the
//!   other sections of each partition with a seek instead of reading them.
//! - Segment `i` of `n` is the i-th of n contiguous ranges of the 8-byte partition hash
//!   (`keys::segment_bounds`), so one partition is always in one segment, segments are
//!   disjoint and together cover the table.
//!
//! Reads run at one snapshot and never take collection locks.

use std::ops::Bound;

use shoal_expr::{legacy, ConditionKind, Context};
use shoal_model::{ApiError, ScalarType};

use crate::api::common::{validation_errors, ReturnConsumedCapacity};
use crate::api::constraint::{value_at_least, value_at_most, violation};
use crate::api::query::{
    attributes_to_get, check_expression_parameters, check_index_name, check_limit,
    conditional_operator, legacy_conditions, scan_constraints, table_name_of, ScanRequest,
    ScanResponse, TOTAL_SEGMENTS_MAX,
};
use crate::core::error::internal;
use crate::core::item_codec::ItemForm;
use crate::core::keys::{self, KeyRange};
use crate::core::units::ReadConsistency;
use crate::query_scan::paging::{
    parse_select, plan_shape, EntryCursor, Output, PagePlan, ReadTarget,
};
use crate::Database;
use shoal_engine::{Db, DbIterator, Direction, Snapshot, TreeId};

/// The ExclusiveStartKey error of a Scan.
const INVALID_START_KEY: &str =
    "The provided starting key is invalid: The provided key element does not match the schema";

impl Database {
    /// DynamoDB `Scan`.
    pub fn scan(&self, request: ScanRequest) -> Result<ScanResponse, ApiError> {
        self.scan_as(request)
    }

    /// [`Database::scan`] answering its items in the form `F` (decoded, or as JSON).
    pub(crate) fn scan_as<F: ItemForm>(
        &self,
        request: ScanRequest,
    ) -> Result<ScanResponse<F>, ApiError> {
        // Member constraints, all reported together.
        scan_constraints(&request)?;
        let table_name = table_name_of(request.table_name.as_deref())?;
        check_index_name(request.index_name.as_deref())?;
        let limit = check_limit(request.limit)?;
        check_segment_constraints(request.segment, request.total_segments)?;
        let return_capacity =
            ReturnConsumedCapacity::parse(request.return_consumed_capacity.as_deref())?;
        let operator = conditional_operator(request.conditional_operator.as_deref())?;
        let scan_filter = legacy_conditions(request.scan_filter.as_ref(), "scanFilter")?;

        // Checks that need only the request.
        let segment = segment_of(request.segment, request.total_segments)?;
        check_expression_parameters(
            &[
                (
                    "ProjectionExpression",
                    request.projection_expression.is_some(),
                ),
                ("FilterExpression", request.filter_expression.is_some()),
            ],
            &[
                ("AttributesToGet", request.attributes_to_get.is_some()),
                ("ScanFilter", request.scan_filter.is_some()),
                (
                    "ConditionalOperator",
                    request.conditional_operator.is_some(),
                ),
            ],
            request.expression_attribute_names.is_some(),
            request.expression_attribute_values.is_some(),
        )?;
        legacy::check_conditional_operator_use(
            request.conditional_operator.is_some(),
            "ScanFilter",
            request.scan_filter.as_ref().map(|filter| filter.len()),
        )?;
        let select = parse_select(
            request.select.as_deref(),
            request.projection_expression.is_some(),
            request.attributes_to_get.is_some(),
            request.index_name.is_some(),
        )?;
        let mut context = Context::new(
            request.expression_attribute_names.as_ref(),
            request.expression_attribute_values.as_ref(),
        )?;
        let filter = match (&request.filter_expression, &scan_filter) {
            (Some(text), _) => Some(context.parse_condition(text, ConditionKind::Filter)?),
            (None, Some(conditions)) => legacy::filter_condition(conditions, operator)?,
            (None, None) => None,
        };
        let projection = match &request.projection_expression {
            Some(text) => Some(context.parse_projection(text)?),
            None => attributes_to_get(request.attributes_to_get.as_ref())?,
        };
        context.finish()?;

        // Checks against the table.
        let table = self.data_table(table_name)?;
        let target = ReadTarget::resolve(&table, request.index_name.as_deref())?;
        if matches!(target, ReadTarget::Global(_)) && request.consistent_read == Some(true) {
            return Err(ApiError::validation(
                "Consistent reads are not supported on global secondary indexes",
            ));
        }
        let shape = plan_shape(&table, target, select, projection, filter.as_ref())?;
        let mut range = segment_range(segment);
        if let Some(start_key) = &request.exclusive_start_key {
            target.check_start_key(&table, start_key, INVALID_START_KEY)?;
            let start = target.storage_key(&table, start_key)?;
            // A start key from another segment would make segments overlap.
            if !contains(&range, &start) {
                return Err(ApiError::validation(INVALID_START_KEY));
            }
            range.lower = Bound::Excluded(start);
        }

        // Read one page at one snapshot.
        let consistency = ReadConsistency::from_consistent_read(request.consistent_read);
        let snapshot = self.read_snapshot(
            matches!(target, ReadTarget::Global(_)),
            request.consistent_read,
        );
        let tree = target.tree(&table);
        let iter = self
            .db
            .iter(
                tree,
                range.lower_ref(),
                range.upper_ref(),
                Direction::Forward,
                Some(&*snapshot),
            )
            .map_err(internal)?;
        let plan = PagePlan {
            table: &table,
            target,
            shape: &shape,
            filter: filter.as_ref(),
            limit,
            consistency,
            snapshot: &snapshot,
        };
        let page = match target {
            ReadTarget::Global(_) => self.read_page(&plan, &mut { iter })?,
            ReadTarget::Table | ReadTarget::Local(_) => {
                let mut cursor = SectionCursor {
                    db: &self.db,
                    tree,
                    section: match target {
                        ReadTarget::Local(lsi) => lsi.section,
                        _ => keys::SECTION_BASE,
                    },
                    partition_key_type: table.key.hash.scalar_type(),
                    upper: range.upper,
                    snapshot: &snapshot,
                    iter,
                };
                self.read_page(&plan, &mut cursor)?
            }
        };
        Ok(ScanResponse {
            items: (!matches!(shape.output, Output::Count)).then_some(page.items),
            count: page.count,
            scanned_count: page.scanned_count,
            last_evaluated_key: page.last_evaluated_key,
            consumed_capacity: page
                .charge
                .consumed(&table, target, consistency, return_capacity),
        })
    }
}

/// Range constraints of `Segment` (0..=999999) and `TotalSegments` (1..=1000000).
fn check_segment_constraints(segment: Option<i64>, total: Option<i64>) -> Result<(), ApiError> {
    let mut problems = Vec::new();
    let mut check = |value: Option<i64>, member: &str, min: i64, max: i64| match value {
        Some(v) if v < min => problems.push(violation(
            Some(&v.to_string()),
            member,
            &value_at_least(min),
        )),
        Some(v) if v > max => {
            problems.push(violation(Some(&v.to_string()), member, &value_at_most(max)))
        }
        _ => {}
    };
    check(segment, "segment", 0, TOTAL_SEGMENTS_MAX - 1);
    check(total, "totalSegments", 1, TOTAL_SEGMENTS_MAX);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(validation_errors(&problems))
    }
}

/// The (segment, total) pair of a parallel scan, checked (SPEC §4.3), or None for a whole
/// scan. The values already passed `check_segment_constraints`.
fn segment_of(segment: Option<i64>, total: Option<i64>) -> Result<Option<(u32, u32)>, ApiError> {
    match (segment, total) {
        (None, None) => Ok(None),
        (Some(_), None) => Err(ApiError::validation(
            "The TotalSegments parameter is required but was not present in the request when Segment parameter is present",
        )),
        (None, Some(_)) => Err(ApiError::validation(
            "The Segment parameter is required but was not present in the request when parameter TotalSegments is present",
        )),
        (Some(segment), Some(total)) if segment >= total => Err(ApiError::validation(format!(
            "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: {segment} is not less than TotalSegments: {total}"
        ))),
        (Some(segment), Some(total)) => {
            let as_u32 = |v: i64| u32::try_from(v).map_err(|_| ApiError::validation("Segment parameters out of range"));
            Ok(Some((as_u32(segment)?, as_u32(total)?)))
        }
    }
}

/// The key range of a segment's hash range (everything for a whole scan).
fn segment_range(segment: Option<(u32, u32)>) -> KeyRange {
    match segment {
        None => KeyRange {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        },
        Some((segment, total)) => {
            let (start, end) = keys::segment_bounds(segment, total);
            KeyRange {
                lower: Bound::Included(start),
                upper: end.map_or(Bound::Unbounded, Bound::Excluded),
            }
        }
    }
}

fn contains(range: &KeyRange, key: &[u8]) -> bool {
    let above = match &range.lower {
        Bound::Included(lower) => key >= lower.as_slice(),
        Bound::Excluded(lower) => key > lower.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match &range.upper {
        Bound::Included(upper) => key <= upper.as_slice(),
        Bound::Excluded(upper) => key < upper.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

/// A forward cursor over one section of every partition in a table tree: base items
/// (section 0x00) or one LSI's entries. When it lands on another section it seeks: to this
/// section of the same partition if it is still ahead, else to the next partition.
struct SectionCursor<'a> {
    db: &'a Db,
    tree: TreeId,
    section: u8,
    partition_key_type: ScalarType,
    upper: Bound<Vec<u8>>,
    snapshot: &'a Snapshot,
    iter: DbIterator,
}

/// Entries of other sections a [`SectionCursor`] steps over before it seeks. A seek opens a
/// new iterator over every memtable and SSTable, which costs more than reading a few
/// entries; a partition of one item has only a few to pass (an entry per LSI and the
/// collection record), a large partition has many and gets its seek.
const SKIPPED_BEFORE_SEEK_MAX: usize = 4;

impl EntryCursor for SectionCursor<'_> {
    fn advance(&mut self) -> Result<bool, ApiError> {
        let mut skipped = 0;
        loop {
            if !self.iter.advance().map_err(internal)? {
                return Ok(false);
            }
            let key = self.iter.key();
            let (prefix_len, section) =
                keys::split_table_key(key, self.partition_key_type).map_err(internal)?;
            if section == self.section {
                return Ok(true);
            }
            skipped += 1;
            if skipped <= SKIPPED_BEFORE_SEEK_MAX {
                continue;
            }
            skipped = 0;
            // Each seek moves strictly forward, so the loop ends.
            let seek_to = if section < self.section {
                let mut next = key[..prefix_len].to_vec();
                next.push(self.section);
                next
            } else {
                match keys::prefix_successor(&key[..prefix_len]) {
                    Some(next_partition) => next_partition,
                    None => return Ok(false),
                }
            };
            let upper = match &self.upper {
                Bound::Included(k) => Bound::Included(k.as_slice()),
                Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
                Bound::Unbounded => Bound::Unbounded,
            };
            self.iter = self
                .db
                .iter(
                    self.tree,
                    Bound::Included(&seek_to),
                    upper,
                    Direction::Forward,
                    Some(self.snapshot),
                )
                .map_err(internal)?;
        }
    }

    fn value(&self) -> &[u8] {
        self.iter.value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;
    use serde_json::json;

    /// A table with two LSIs: one partition of `big_items` items (so far more entries of
    /// other sections than `SKIPPED_BEFORE_SEEK_MAX` lie between sections: the cursor must
    /// seek) and 20 partitions of one item (few enough to step over).
    fn table_with_mixed_partitions(big_items: usize) -> Database {
        let db = Database::open_in_memory(Options::default()).unwrap();
        let key = |name: &str, kind: &str| json!({"AttributeName": name, "KeyType": kind});
        let lsi = |name: &str, range: &str| {
            json!({"IndexName": name, "KeySchema": [key("pk", "HASH"), key(range, "RANGE")],
                   "Projection": {"ProjectionType": "KEYS_ONLY"}})
        };
        db.execute(
            "CreateTable",
            json!({
                "TableName": "Tbl",
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                    {"AttributeName": "l1", "AttributeType": "N"},
                    {"AttributeName": "l2", "AttributeType": "N"}
                ],
                "KeySchema": [key("pk", "HASH"), key("sk", "RANGE")],
                "LocalSecondaryIndexes": [lsi("ByL1", "l1"), lsi("ByL2", "l2")],
                "BillingMode": "PAY_PER_REQUEST"
            }),
        )
        .unwrap();
        let put = |pk: String, i: usize| {
            let item = json!({"pk": {"S": pk}, "sk": {"S": format!("s{i:03}")},
                              "l1": {"N": i.to_string()}, "l2": {"N": i.to_string()}});
            db.execute("PutItem", json!({"TableName": "Tbl", "Item": item}))
                .unwrap();
        };
        for i in 0..big_items {
            put("big".to_string(), i);
        }
        for partition in 0..20 {
            put(format!("small{partition}"), 0);
        }
        db
    }

    /// Every (pk, sk) a scan of `index` returns, over all pages of `limit` items.
    fn scanned_keys(db: &Database, index: Option<&str>, limit: i64) -> Vec<(String, String)> {
        let mut keys = Vec::new();
        let mut start = None;
        loop {
            let response = db
                .scan(ScanRequest {
                    table_name: Some("Tbl".to_string()),
                    index_name: index.map(str::to_string),
                    limit: Some(limit),
                    exclusive_start_key: start,
                    ..Default::default()
                })
                .unwrap();
            for item in response.items.unwrap() {
                let text = |name: &str| match item.get(name) {
                    Some(shoal_model::AttributeValue::S(text)) => text.clone(),
                    other => panic!("{name}: {other:?}"),
                };
                keys.push((text("pk"), text("sk")));
            }
            start = response.last_evaluated_key;
            if start.is_none() {
                return keys;
            }
        }
    }

    #[test]
    fn section_cursor_steps_over_and_seeks_past_other_sections() {
        let big_items = 3 * SKIPPED_BEFORE_SEEK_MAX;
        let db = table_with_mixed_partitions(big_items);
        let mut expected: Vec<(String, String)> = (0..big_items)
            .map(|i| ("big".to_string(), format!("s{i:03}")))
            .chain((0..20).map(|p| (format!("small{p}"), "s000".to_string())))
            .collect();
        expected.sort();
        for index in [None, Some("ByL1"), Some("ByL2")] {
            for limit in [1, 7, 1000] {
                let mut keys = scanned_keys(&db, index, limit);
                keys.sort();
                assert_eq!(keys, expected, "index {index:?}, limit {limit}");
            }
        }
    }

    #[test]
    fn segment_parameters_use_dynamodb_texts() {
        assert_eq!(
            segment_of(Some(5), Some(5)).unwrap_err().message,
            "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 5 is not less than TotalSegments: 5"
        );
        assert!(segment_of(Some(1), None)
            .unwrap_err()
            .message
            .starts_with("The TotalSegments parameter is required"));
        assert!(segment_of(None, Some(1))
            .unwrap_err()
            .message
            .starts_with("The Segment parameter is required"));
        assert_eq!(segment_of(Some(2), Some(3)).unwrap(), Some((2, 3)));
        assert_eq!(
            check_segment_constraints(Some(-1), Some(0)).unwrap_err().message,
            "2 validation errors detected: Value '-1' at 'segment' failed to satisfy constraint: Member must have value greater than or equal to 0; Value '0' at 'totalSegments' failed to satisfy constraint: Member must have value greater than or equal to 1"
        );
        assert!(check_segment_constraints(Some(0), Some(1_000_001)).is_err());
    }

    #[test]
    fn segment_ranges_are_contiguous() {
        let first = segment_range(Some((0, 2)));
        let second = segment_range(Some((1, 2)));
        let middle = (1u64 << 63).to_be_bytes();
        assert!(!contains(&first, &middle) && contains(&second, &middle));
        assert!(contains(&first, &[0; 8]) && contains(&second, &[0xFF; 9]));
        assert!(contains(&segment_range(None), b"anything"));
    }
}
