//! What Query and Scan share: resolving the table or index a request reads, its Select /
//! projection rules, the ExclusiveStartKey ↔ storage-key mapping, the loop that reads one
//! page, and what the page costs.
//!
//! A page (SPEC §4.2, §5):
//! 1. entries are read in storage order from a cursor the caller positioned (one key range
//!    of one tree, or a section-filtered walk for scans);
//! 2. reading stops after `Limit` entries have been *evaluated*, or once the page measures
//!    1 MiB — measured before filter and projection, on the stored entry (the base item for
//!    a table, the projected entry for an index). An entry that would take the page past
//!    1 MiB is not evaluated: it starts the next page; one that brings it to exactly 1 MiB
//!    ends it. An LSI read that fetches base items measures `round4K(Σ entries) +
//!    Σ round4K(fetched item)`, the formula it is charged by, so such pages are much smaller
//!    than 1 MiB;
//! 3. the filter keeps some evaluated entries (`ScannedCount` = evaluated, `Count` = kept);
//! 4. the projection shapes the kept ones;
//! 5. if reading stopped early, LastEvaluatedKey names the last *evaluated* entry, even when
//!    the filter dropped it.
//!
//! LastEvaluatedKey holds the key attributes of the entry: the table key for a table; table
//! key and LSI sort key for an LSI; table key ∪ GSI key for a GSI. Every one of them is in
//! every entry (keys are always projected), and together they name exactly one storage key
//! (`storage_key`), because the key layout orders index ties by table key. Resuming strictly
//! after that storage key returns every entry exactly once in either direction.

use std::collections::BTreeSet;

use shoal_expr::Condition;
use shoal_model::{ApiError, AttributeValue, Item};

use crate::api::common::{parse_enum, Capacity, ConsumedCapacity, ReturnConsumedCapacity};
use crate::core::catalog::{
    GlobalIndexDef, IndexStatus, KeyAttribute, KeySchema, LocalIndexDef, Projection, TableDef,
};
use crate::core::error::internal;
use crate::core::index::{self, projects};
use crate::core::item_codec::{decode_item, ItemForm};
use crate::core::keys;
use crate::core::units::{read_blocks, read_units, ReadConsistency, READ_UNIT_BYTES};
use crate::Database;
use shoal_engine::{DbIterator, Snapshot, TreeId};

/// DynamoDB's page size cap: 1 MB of data read per Query or Scan call.
pub const PAGE_SIZE_BYTES_MAX: u64 = 1 << 20;

/// The most one entry can add to a page's measure: an entry of up to an item's size, and
/// when fetching, its base item in whole blocks, each sum rounded up by at most one block.
const ENTRY_PAGE_BYTES_MAX: u64 = 2 * (shoal_model::ITEM_SIZE_BYTES_MAX as u64 + READ_UNIT_BYTES);

/// The table or index a Query or Scan reads.
#[derive(Debug, Clone, Copy)]
pub enum ReadTarget<'t> {
    Table,
    Local(&'t LocalIndexDef),
    Global(&'t GlobalIndexDef),
}

impl<'t> ReadTarget<'t> {
    /// The target named by `IndexName` (None = the table itself).
    pub fn resolve(
        table: &'t TableDef,
        index_name: Option<&str>,
    ) -> Result<ReadTarget<'t>, ApiError> {
        let Some(name) = index_name else {
            return Ok(ReadTarget::Table);
        };
        if let Some(lsi) = table.local_index(name) {
            return Ok(ReadTarget::Local(lsi));
        }
        match table.global_index(name) {
            Some(gsi) => match gsi.status {
                IndexStatus::Active => Ok(ReadTarget::Global(gsi)),
                IndexStatus::Creating { .. } => Err(ApiError::validation(format!(
                    "Cannot read from backfilling global secondary index: {name}"
                ))),
                // A deleting index is already gone as far as readers are concerned.
                IndexStatus::Deleting => Err(no_such_index(name)),
            },
            None => Err(no_such_index(name)),
        }
    }

    /// The key schema a Query on this target conditions on.
    pub fn key_schema(&self, table: &'t TableDef) -> &'t KeySchema {
        match self {
            ReadTarget::Table => &table.key,
            ReadTarget::Local(lsi) => &lsi.key,
            ReadTarget::Global(gsi) => &gsi.key,
        }
    }

    /// The tree holding the target's entries.
    pub fn tree(&self, table: &TableDef) -> TreeId {
        match self {
            ReadTarget::Table | ReadTarget::Local(_) => table.tree,
            ReadTarget::Global(gsi) => gsi.tree,
        }
    }

    pub fn index_name(&self) -> Option<&'t str> {
        match self {
            ReadTarget::Table => None,
            ReadTarget::Local(lsi) => Some(&lsi.name),
            ReadTarget::Global(gsi) => Some(&gsi.name),
        }
    }

    /// The index's projection (None for the table, which holds everything).
    fn projection(&self) -> Option<&'t Projection> {
        match self {
            ReadTarget::Table => None,
            ReadTarget::Local(lsi) => Some(&lsi.projection),
            ReadTarget::Global(gsi) => Some(&gsi.projection),
        }
    }

    /// Whether the target's entries hold attribute `name`.
    pub fn projects(&self, table: &TableDef, name: &str) -> bool {
        match self.projection() {
            None => true,
            Some(projection) => projects(table, self.key_schema(table), projection, name),
        }
    }

    /// The attributes of a LastEvaluatedKey / ExclusiveStartKey: table key first, then the
    /// index key attributes that are not also table key attributes.
    pub fn position_attributes(&self, table: &'t TableDef) -> Vec<&'t KeyAttribute> {
        let mut attributes: Vec<&KeyAttribute> = table.key.attributes().collect();
        if !matches!(self, ReadTarget::Table) {
            for attribute in self.key_schema(table).attributes() {
                if !attributes.iter().any(|a| a.name == attribute.name) {
                    attributes.push(attribute);
                }
            }
        }
        attributes
    }

    /// The LastEvaluatedKey of an entry: its position attributes.
    pub fn last_evaluated_key(&self, table: &TableDef, entry: &Item) -> Item {
        self.position_attributes(table)
            .into_iter()
            .filter_map(|a| entry.get(&a.name).map(|v| (a.name.clone(), v.clone())))
            .collect()
    }

    /// Checks an ExclusiveStartKey's shape: exactly the position attributes, each of its key
    /// type and not empty. `invalid` is the operation's wording of the error.
    pub fn check_start_key(
        &self,
        table: &TableDef,
        start_key: &Item,
        invalid: &str,
    ) -> Result<(), ApiError> {
        let attributes = self.position_attributes(table);
        let well_formed = start_key.len() == attributes.len()
            && attributes.iter().all(|a| {
                start_key
                    .get(&a.name)
                    .is_some_and(|value| a.accepts(value) && !value.is_empty_scalar())
            });
        if well_formed {
            Ok(())
        } else {
            Err(ApiError::validation(invalid))
        }
    }

    /// The storage key of the entry a checked ExclusiveStartKey (or LastEvaluatedKey) names.
    pub fn storage_key(&self, table: &TableDef, position: &Item) -> Result<Vec<u8>, ApiError> {
        let value = |attribute: &KeyAttribute| {
            position
                .get(&attribute.name)
                .ok_or_else(|| internal(format!("start key lacks {}", attribute.name)))
        };
        let optional = |attribute: Option<&KeyAttribute>| attribute.map(value).transpose();
        let table_pk = value(&table.key.hash)?;
        let table_sk = optional(table.key.range.as_ref())?;
        let key = match self {
            ReadTarget::Table => keys::base_key(table_pk, table_sk),
            ReadTarget::Local(lsi) => {
                let lsi_sk = optional(lsi.key.range.as_ref())?
                    .ok_or_else(|| internal(format!("index {} has no sort key", lsi.name)))?;
                keys::lsi_key(table_pk, lsi.section, lsi_sk, table_sk)
            }
            ReadTarget::Global(gsi) => {
                return index::gsi_entry_key(gsi, position, table_pk, table_sk)?
                    .ok_or_else(|| internal(format!("start key lacks a key of {}", gsi.name)));
            }
        };
        key.map_err(internal)
    }
}

/// `The table does not have the specified index: <idx>`.
pub fn no_such_index(name: &str) -> ApiError {
    ApiError::validation(format!(
        "The table does not have the specified index: {name}"
    ))
}

/// The `Select` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    AllAttributes,
    AllProjectedAttributes,
    SpecificAttributes,
    Count,
}

/// Parses `Select` and applies the checks that need only the request (SPEC §4.2): the enum,
/// ALL_PROJECTED_ATTRIBUTES only with an index, a projection only with SPECIFIC_ATTRIBUTES,
/// and SPECIFIC_ATTRIBUTES only with a projection.
pub fn parse_select(
    select: Option<&str>,
    has_projection_expression: bool,
    has_attributes_to_get: bool,
    has_index: bool,
) -> Result<Option<Select>, ApiError> {
    let parsed = match parse_enum(
        select,
        "select",
        &[
            "SPECIFIC_ATTRIBUTES",
            "COUNT",
            "ALL_ATTRIBUTES",
            "ALL_PROJECTED_ATTRIBUTES",
        ],
    )? {
        None => None,
        Some("SPECIFIC_ATTRIBUTES") => Some(Select::SpecificAttributes),
        Some("COUNT") => Some(Select::Count),
        Some("ALL_ATTRIBUTES") => Some(Select::AllAttributes),
        Some(_) => Some(Select::AllProjectedAttributes),
    };
    let Some(parsed) = parsed else {
        return Ok(None);
    };
    let name = select.unwrap_or_default();
    if parsed != Select::SpecificAttributes {
        if has_attributes_to_get {
            return Err(ApiError::validation(format!(
                "Cannot specify the AttributesToGet when choosing to get {name}"
            )));
        }
        if has_projection_expression {
            return Err(ApiError::validation(format!(
                "Cannot specify the ProjectionExpression when choosing to get {name}"
            )));
        }
    } else if !has_attributes_to_get && !has_projection_expression {
        return Err(ApiError::validation(
            "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES",
        ));
    }
    if parsed == Select::AllProjectedAttributes && !has_index {
        return Err(ApiError::validation(
            "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName",
        ));
    }
    Ok(Some(parsed))
}

/// What each kept entry turns into.
#[derive(Debug, Clone)]
pub enum Output {
    /// The entry as stored: the whole item for a table, the projected entry for an index.
    Entry,
    /// The base item fetched from the table (ALL_ATTRIBUTES on a non-ALL LSI).
    Fetched,
    /// The requested paths of the fullest view read (fetched item, else the entry).
    Specific(shoal_expr::Projection),
    /// Nothing (Select COUNT): only counted.
    Count,
}

/// How a page is shaped: its output and whether LSI entries are completed from the table.
#[derive(Debug, Clone)]
pub struct ReadShape {
    pub output: Output,
    /// Fetch each evaluated entry's base item (LSI only).
    pub fetch: bool,
}

/// Decides the output and fetching of a read of `target` (SPEC §4.2 Select table): a GSI
/// never fetches, so asking it for what it does not project is an error; an LSI fetches the
/// base item whenever the output or the filter needs an attribute it does not project.
pub fn plan_shape(
    table: &TableDef,
    target: ReadTarget<'_>,
    select: Option<Select>,
    projection: Option<shoal_expr::Projection>,
    filter: Option<&Condition>,
) -> Result<ReadShape, ApiError> {
    let all_projected = matches!(target.projection(), None | Some(Projection::All));
    let unprojected = |names: BTreeSet<&str>| -> Vec<String> {
        names
            .into_iter()
            .filter(|name| !target.projects(table, name))
            .map(str::to_string)
            .collect()
    };
    let (output, output_needs_fetch) = match (select, projection) {
        (Some(Select::Count), _) => (Output::Count, false),
        (_, Some(projection)) => {
            let missing = unprojected(projection.top_level_attributes());
            (Output::Specific(projection), !missing.is_empty())
        }
        (Some(Select::AllAttributes), None) => {
            if all_projected {
                (Output::Entry, false)
            } else {
                (Output::Fetched, true)
            }
        }
        // Default (table: everything; index: what it projects), ALL_PROJECTED_ATTRIBUTES, or
        // SPECIFIC_ATTRIBUTES (which parse_select only lets through with a projection).
        _ => (Output::Entry, false),
    };
    let filter_needs_fetch =
        filter.is_some_and(|f| !unprojected(f.referenced_top_level_attributes()).is_empty());
    if let ReadTarget::Global(gsi) = target {
        if output_needs_fetch {
            return Err(match &output {
                Output::Specific(projection) => ApiError::validation(format!(
                    "One or more parameter values were invalid: Global secondary index {} does not project [{}]",
                    gsi.name,
                    unprojected(projection.top_level_attributes()).join(", ")
                )),
                _ => ApiError::validation(format!(
                    "One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index {} because its projection type is not ALL",
                    gsi.name
                )),
            });
        }
        if let Some(filter) = filter.filter(|_| filter_needs_fetch) {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Secondary index {} does not project one or more filter attributes: [{}]",
                gsi.name,
                unprojected(filter.referenced_top_level_attributes()).join(", ")
            )));
        }
    }
    let fetch =
        matches!(target, ReadTarget::Local(_)) && (output_needs_fetch || filter_needs_fetch);
    Ok(ReadShape { output, fetch })
}

/// A positioned source of stored entries (values are encoded items).
pub trait EntryCursor {
    /// Moves to the next entry; false when there is none.
    fn advance(&mut self) -> Result<bool, ApiError>;
    /// The current entry's stored value.
    fn value(&self) -> &[u8];
}

impl EntryCursor for DbIterator {
    fn advance(&mut self) -> Result<bool, ApiError> {
        DbIterator::advance(self).map_err(internal)
    }

    fn value(&self) -> &[u8] {
        DbIterator::value(self)
    }
}

/// Everything the page loop needs besides the cursor.
pub struct PagePlan<'a> {
    pub table: &'a TableDef,
    pub target: ReadTarget<'a>,
    pub shape: &'a ReadShape,
    pub filter: Option<&'a Condition>,
    /// Evaluated entries per page (None: only the size cap applies).
    pub limit: Option<usize>,
    pub consistency: ReadConsistency,
    pub snapshot: &'a Snapshot,
}

/// One page read, its items in the form `F` the read answers with.
#[derive(Debug, Clone)]
pub struct Page<F = Item> {
    /// Kept entries, shaped (empty with Select COUNT).
    pub items: Vec<F>,
    /// Entries the filter kept.
    pub count: u64,
    /// Entries evaluated.
    pub scanned_count: u64,
    pub last_evaluated_key: Option<Item>,
    pub charge: ReadCharge,
}

/// What a page read, for capacity (SPEC §5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCharge {
    /// Σ sizes of the evaluated entries (base items on a table, index entries on an index).
    pub entry_bytes: u64,
    /// Σ over fetched base items of their size in whole 4 KiB blocks.
    pub fetched_blocks: u64,
}

impl ReadCharge {
    /// Bytes the page counts against the 1 MiB cap: plain entry bytes, or with fetches the
    /// charged formula (entries rounded once, each fetched item rounded on its own).
    fn page_bytes(&self, fetching: bool) -> u64 {
        if fetching {
            (read_blocks(self.entry_bytes) + self.fetched_blocks).saturating_mul(READ_UNIT_BYTES)
        } else {
            self.entry_bytes
        }
    }

    /// `ConsumedCapacity` for `mode`: entries rounded once to 4 KiB (at least one unit),
    /// plus each fetched item; GSIs are always read eventually consistently. With INDEXES
    /// the entry part goes to the index arm and the fetches to the `Table` arm.
    pub fn consumed(
        &self,
        table: &TableDef,
        target: ReadTarget<'_>,
        consistency: ReadConsistency,
        mode: ReturnConsumedCapacity,
    ) -> Option<ConsumedCapacity> {
        if mode == ReturnConsumedCapacity::None {
            return None;
        }
        let consistency = match target {
            ReadTarget::Global(_) => ReadConsistency::Eventual,
            _ => consistency,
        };
        // Units of one 4 KiB block at this consistency.
        let unit = read_units(READ_UNIT_BYTES, consistency);
        let entry_units = read_blocks(self.entry_bytes).max(1) as f64 * unit;
        let fetch_units = self.fetched_blocks as f64 * unit;
        let total = entry_units + fetch_units;
        let mut consumed = ConsumedCapacity {
            table_name: table.name.clone(),
            capacity_units: total,
            ..ConsumedCapacity::default()
        };
        if mode == ReturnConsumedCapacity::Indexes {
            let arm = |units: f64| Capacity {
                capacity_units: units,
                ..Capacity::default()
            };
            match target {
                ReadTarget::Table => consumed.table = Some(arm(total)),
                ReadTarget::Local(lsi) => {
                    consumed.table = Some(arm(fetch_units));
                    consumed.local_secondary_indexes =
                        Some([(lsi.name.clone(), arm(entry_units))].into());
                }
                ReadTarget::Global(gsi) => {
                    consumed.table = Some(arm(0.0));
                    consumed.global_secondary_indexes =
                        Some([(gsi.name.clone(), arm(entry_units))].into());
                }
            }
        }
        Some(consumed)
    }
}

impl Database {
    /// Reads one page from `cursor` (see the module docs for the rules), its items in the
    /// form `F` (decoded, or as JSON).
    pub(crate) fn read_page<F: ItemForm>(
        &self,
        plan: &PagePlan<'_>,
        cursor: &mut dyn EntryCursor,
    ) -> Result<Page<F>, ApiError> {
        let mut page = Page {
            items: Vec::new(),
            count: 0,
            scanned_count: 0,
            last_evaluated_key: None,
            charge: ReadCharge::default(),
        };
        // The LastEvaluatedKey of the entry before this one, for a page that the next entry
        // would take past its size; kept only once one entry could do that, so that pages
        // of small entries do not build a key per entry.
        let mut previous_key: Option<Item> = None;
        // Entries answered as stored, with no filter to evaluate and no base item to fetch,
        // are read straight into the answer's form: as JSON, written from their bytes with
        // no Item built (`item_codec::item_json`).
        let answered_whole = plan.filter.is_none()
            && !plan.shape.fetch
            && matches!(plan.shape.output, Output::Entry);
        while cursor.advance()? {
            let stored = cursor.value();
            let entry = if answered_whole {
                PageEntry::Whole(F::from_stored(stored).map_err(internal)?)
            } else {
                PageEntry::Decoded(decode_item(stored).map_err(internal)?)
            };
            // The key of this entry, for a page that stops at it or may stop after it.
            let key_of = |entry: &PageEntry<F>| -> Result<Item, ApiError> {
                let decoded;
                let item = match entry.decoded() {
                    Some(item) => item,
                    None => {
                        decoded = decode_item(stored).map_err(internal)?;
                        &decoded
                    }
                };
                Ok(plan.target.last_evaluated_key(plan.table, item))
            };
            let mut charge = page.charge;
            charge.entry_bytes += entry.size_bytes();
            let fetched = if plan.shape.fetch {
                let base = self.fetch_base_item(plan, entry.needed()?)?;
                charge.fetched_blocks += read_blocks(shoal_model::item_size_bytes(&base) as u64);
                Some(base)
            } else {
                None
            };
            let page_bytes = charge.page_bytes(plan.shape.fetch);
            if page_bytes > PAGE_SIZE_BYTES_MAX && page.scanned_count > 0 {
                // This entry starts the next page.
                page.last_evaluated_key = previous_key;
                break;
            }
            page.charge = charge;
            page.scanned_count += 1;
            let limit_reached = plan
                .limit
                .is_some_and(|limit| page.scanned_count >= limit as u64);
            let stop = limit_reached || page_bytes >= PAGE_SIZE_BYTES_MAX;
            if stop {
                page.last_evaluated_key = Some(key_of(&entry)?);
            } else if page_bytes + ENTRY_PAGE_BYTES_MAX > PAGE_SIZE_BYTES_MAX {
                previous_key = Some(key_of(&entry)?);
            }
            let kept = match plan.filter {
                None => true,
                Some(filter) => match &fetched {
                    Some(fetched) => filter.evaluate(fetched),
                    None => filter.evaluate(entry.needed()?),
                },
            };
            if kept {
                page.count += 1;
                match &plan.shape.output {
                    Output::Count => {}
                    Output::Specific(projection) => {
                        let fullest = match fetched {
                            Some(fetched) => fetched,
                            None => entry.into_decoded()?,
                        };
                        page.items.push(F::from(projection.apply(fullest)))
                    }
                    // Moved, not cloned: items may be 400 KB each.
                    Output::Fetched => page.items.extend(fetched.map(F::from)),
                    Output::Entry => page.items.push(entry.into_form()),
                }
            }
            if stop {
                break;
            }
        }
        Ok(page)
    }

    /// The base item of an LSI entry, read at the page's snapshot so it agrees with the
    /// entry (index and base are written in one batch).
    fn fetch_base_item(&self, plan: &PagePlan<'_>, entry: &Item) -> Result<Item, ApiError> {
        let table = plan.table;
        let pk = key_value(entry, &table.key.hash)?;
        let sk = table
            .key
            .range
            .as_ref()
            .map(|r| key_value(entry, r))
            .transpose()?;
        let key = keys::base_key(pk, sk).map_err(internal)?;
        match self
            .db
            .get_with(table.tree, &key, Some(plan.snapshot), decode_item)
            .map_err(internal)?
        {
            Some(item) => item.map_err(internal),
            // An index entry without its base item breaks invariant 3 (docs/DESIGN.md §7):
            // report it rather than return a partial item.
            None => Err(internal(format!(
                "index entry of table {} has no base item",
                table.name
            ))),
        }
    }
}

/// An entry of a page as read: decoded, or read whole into the answer's form `F`
/// (`read_page` says when).
enum PageEntry<F> {
    Decoded(Item),
    Whole(F),
}

impl<F: ItemForm> PageEntry<F> {
    /// Its DynamoDB size (`shoal_model::item_size_bytes`).
    fn size_bytes(&self) -> u64 {
        match self {
            PageEntry::Decoded(item) => shoal_model::item_size_bytes(item) as u64,
            PageEntry::Whole(form) => form.size_bytes(),
        }
    }

    fn decoded(&self) -> Option<&Item> {
        match self {
            PageEntry::Decoded(item) => Some(item),
            PageEntry::Whole(form) => form.decoded(),
        }
    }

    /// The decoded entry a filter, a projection or a fetch works on: always there, since
    /// `read_page` reads an entry whole only when none of them applies.
    fn needed(&self) -> Result<&Item, ApiError> {
        self.decoded().ok_or_else(read_whole)
    }

    fn into_decoded(self) -> Result<Item, ApiError> {
        match self {
            PageEntry::Decoded(item) => Ok(item),
            PageEntry::Whole(_) => Err(read_whole()),
        }
    }

    fn into_form(self) -> F {
        match self {
            PageEntry::Decoded(item) => F::from(item),
            PageEntry::Whole(form) => form,
        }
    }
}

/// The internal error of a page entry read whole and then asked for its attributes, which
/// `read_page` never does.
fn read_whole() -> ApiError {
    internal("a page entry read whole was asked for its attributes")
}

fn key_value<'i>(
    entry: &'i Item,
    attribute: &KeyAttribute,
) -> Result<&'i AttributeValue, ApiError> {
    entry.get(&attribute.name).ok_or_else(|| {
        internal(format!(
            "stored entry lacks key attribute {}",
            attribute.name
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;
    use serde_json::json;
    use shoal_engine::Direction;

    #[test]
    fn select_rules_that_need_only_the_request() {
        let message = |r: Result<Option<Select>, ApiError>| r.unwrap_err().message;
        assert_eq!(
            message(parse_select(Some("ALL"), false, false, false)),
            "1 validation error detected: Value 'ALL' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]"
        );
        assert_eq!(
            message(parse_select(
                Some("ALL_PROJECTED_ATTRIBUTES"),
                false,
                false,
                false
            )),
            "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"
        );
        assert!(message(parse_select(Some("COUNT"), true, false, true))
            .contains("ProjectionExpression"));
        assert!(
            message(parse_select(Some("ALL_ATTRIBUTES"), false, true, true))
                .contains("AttributesToGet")
        );
        assert!(message(parse_select(
            Some("SPECIFIC_ATTRIBUTES"),
            false,
            false,
            true
        ))
        .contains("Must specify"));
        assert_eq!(
            parse_select(Some("SPECIFIC_ATTRIBUTES"), true, false, false).unwrap(),
            Some(Select::SpecificAttributes)
        );
        assert_eq!(parse_select(None, true, false, false).unwrap(), None);
    }

    #[test]
    fn charges_round_entries_once_and_fetches_each() {
        let charge = ReadCharge {
            entry_bytes: 800,
            fetched_blocks: 4,
        };
        assert_eq!(charge.page_bytes(true), 5 * READ_UNIT_BYTES);
        assert_eq!(charge.page_bytes(false), 800);
        let empty = ReadCharge::default();
        assert_eq!(empty.page_bytes(true), 0);
    }

    #[test]
    fn lsi_fetches_read_the_base_item_at_the_page_snapshot() {
        let db = Database::open_in_memory(Options::default()).unwrap();
        let key = |name: &str, kind: &str| json!({"AttributeName": name, "KeyType": kind});
        db.execute(
            "CreateTable",
            json!({
                "TableName": "Tbl",
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                    {"AttributeName": "l", "AttributeType": "N"}
                ],
                "KeySchema": [key("pk", "HASH"), key("sk", "RANGE")],
                "LocalSecondaryIndexes": [{
                    "IndexName": "ByL",
                    "KeySchema": [key("pk", "HASH"), key("l", "RANGE")],
                    "Projection": {"ProjectionType": "KEYS_ONLY"}
                }],
                "BillingMode": "PAY_PER_REQUEST"
            }),
        )
        .unwrap();
        let put = |misc: &str| {
            let item =
                json!({"pk": {"S": "p"}, "sk": {"S": "a"}, "l": {"N": "1"}, "misc": {"S": misc}});
            db.execute("PutItem", json!({"TableName": "Tbl", "Item": item}))
                .unwrap();
        };
        put("old");
        let snapshot = db.db.snapshot();
        // Same index key, so the entry is unchanged while the base item moves on.
        put("new");

        let table = db.table("Tbl").unwrap();
        let target = ReadTarget::resolve(&table, Some("ByL")).unwrap();
        let projection = shoal_expr::Context::new(None, None)
            .unwrap()
            .parse_projection("misc")
            .unwrap();
        let shape = plan_shape(&table, target, None, Some(projection), None).unwrap();
        assert!(shape.fetch);
        let mut prefix = keys::partition_prefix(&AttributeValue::S("p".into())).unwrap();
        prefix.push(1);
        let range = keys::KeyRange::with_prefix(prefix);
        let read_at = |snapshot: &Snapshot| {
            let mut cursor = db
                .db
                .iter(
                    table.tree,
                    range.lower_ref(),
                    range.upper_ref(),
                    Direction::Forward,
                    Some(snapshot),
                )
                .unwrap();
            let plan = PagePlan {
                table: &table,
                target,
                shape: &shape,
                filter: None,
                limit: None,
                consistency: ReadConsistency::Strong,
                snapshot,
            };
            db.read_page::<Item>(&plan, &mut cursor).unwrap().items
        };
        let misc = |value: &str| {
            vec![Item::from([(
                "misc".to_string(),
                AttributeValue::S(value.into()),
            )])]
        };
        assert_eq!(read_at(&snapshot), misc("old"));
        assert_eq!(read_at(&db.db.snapshot()), misc("new"));
    }
}
