//! Consumed capacity per table and per index, for monitoring (the server's `/metrics` and
//! the console).
//!
//! `Database::execute` asks every data-plane operation for its consumed capacity per index
//! (INDEXES), adds it here, and gives the client what it asked for: nothing, TOTAL's shape
//! (the arms removed) or INDEXES. So the totals cover every request, not only those that
//! requested ConsumedCapacity.

use std::cell::Cell;
use std::collections::BTreeMap;

use parking_lot::Mutex;

use crate::api::common::ConsumedCapacity;

/// Tables, and indexes, tracked at most; the meter never grows past this (deleted tables'
/// totals stay).
const TABLES_MAX: usize = 10_000;
const INDEXES_MAX: usize = 10_000;

pub(crate) const INDEXES: &str = "INDEXES";
const TOTAL: &str = "TOTAL";

/// Units consumed by one table since the database was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CapacityTotals {
    pub read_units: f64,
    pub write_units: f64,
}

/// Whether an operation reads or writes, for metering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metered {
    Read,
    Write,
}

impl Metered {
    /// How `operation` is metered, if it consumes capacity.
    pub fn of(operation: &str) -> Option<Metered> {
        match operation {
            "GetItem" | "BatchGetItem" | "Query" | "Scan" | "TransactGetItems" => {
                Some(Metered::Read)
            }
            "PutItem" | "UpdateItem" | "DeleteItem" | "BatchWriteItem" | "TransactWriteItems" => {
                Some(Metered::Write)
            }
            _ => None,
        }
    }
}

impl CapacityTotals {
    fn add(&mut self, kind: Metered, units: f64) {
        match kind {
            Metered::Read => self.read_units += units,
            Metered::Write => self.write_units += units,
        }
    }
}

/// Running totals per table (every arm included: what TOTAL reports) and per index (its
/// arm of INDEXES).
#[derive(Debug, Default)]
pub struct CapacityMeter {
    totals: Mutex<Totals>,
}

#[derive(Debug, Default)]
struct Totals {
    tables: BTreeMap<String, CapacityTotals>,
    /// table → index → the index's arm (nested, so that a request's names are looked up
    /// without copying them; copied only the first time).
    indexes: BTreeMap<String, BTreeMap<String, CapacityTotals>>,
    /// Indexes tracked, over every table.
    index_count: usize,
}

/// The value under `key`, inserted (its key copied) the first time, unless the map already
/// holds `len_max` keys.
fn slot<'m, V: Default>(
    map: &'m mut BTreeMap<String, V>,
    key: &str,
    len_max: usize,
) -> Option<&'m mut V> {
    if !map.contains_key(key) {
        if map.len() >= len_max {
            return None;
        }
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key)
}

impl CapacityMeter {
    /// Adds the capacity entries of one response, the index arms when it carries them.
    pub(crate) fn record(&self, kind: Metered, consumed: &[ConsumedCapacity]) {
        if consumed.is_empty() {
            return;
        }
        let mut totals = self.totals.lock();
        let totals = &mut *totals;
        for entry in consumed {
            // Every request comes here: names are copied only the first time they are met.
            if let Some(slot) = slot(&mut totals.tables, &entry.table_name, TABLES_MAX) {
                slot.add(kind, entry.capacity_units);
            }
            let arms = [
                &entry.local_secondary_indexes,
                &entry.global_secondary_indexes,
            ];
            for (index, arm) in arms.into_iter().flatten().flatten() {
                let Some(of_table) = slot(&mut totals.indexes, &entry.table_name, usize::MAX)
                else {
                    continue;
                };
                let new = !of_table.contains_key(index);
                if new && totals.index_count >= INDEXES_MAX {
                    continue;
                }
                if let Some(slot) = slot(of_table, index, usize::MAX) {
                    totals.index_count += usize::from(new);
                    slot.add(kind, arm.capacity_units);
                }
            }
        }
    }

    /// The totals per table, in name order.
    pub fn totals(&self) -> Vec<(String, CapacityTotals)> {
        self.totals
            .lock()
            .tables
            .iter()
            .map(|(name, totals)| (name.clone(), *totals))
            .collect()
    }

    /// The totals per index as (table, index, totals), in name order.
    pub fn index_totals(&self) -> Vec<(String, String, CapacityTotals)> {
        self.totals
            .lock()
            .indexes
            .iter()
            .flat_map(|(table, indexes)| {
                indexes
                    .iter()
                    .map(|(index, totals)| (table.clone(), index.clone(), *totals))
            })
            .collect()
    }
}

/// Asks for capacity per index when the client asked for TOTAL; returns whether the answer
/// must be put back into TOTAL's shape ([`as_total`]). Any other value is left for the
/// operation to accept or refuse.
pub(crate) fn ask_per_index(requested: &mut Option<String>) -> bool {
    if requested.as_deref() == Some(TOTAL) {
        *requested = Some(INDEXES.to_string());
        return true;
    }
    false
}

/// TOTAL's shape of an INDEXES answer: the same totals without the arms.
pub(crate) fn as_total(consumed: &mut ConsumedCapacity) {
    consumed.table = None;
    consumed.local_secondary_indexes = None;
    consumed.global_secondary_indexes = None;
}

/// What one call cost and returned, for a recorder ([`crate::Database::execute_json_text_charged`]):
/// the units it was charged, summed over its tables and indexes (None when it was not
/// metered), and the items a read returned with their size (None for a write), which the
/// tables layer knows without the answer being parsed again.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallCharge {
    pub units: Option<f64>,
    pub returned: Option<Returned>,
}

/// Items a read returned and their size in DynamoDB's item size (after any projection: what
/// the client receives).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Returned {
    pub items: u64,
    pub bytes: u64,
}

thread_local! {
    /// The units the last metered call on this thread was charged, summed over its tables
    /// and indexes, until [`charged`] takes them.
    static CHARGED: Cell<Option<f64>> = const { Cell::new(None) };
    /// Whether the call running on this thread is recorded: only then are its returned
    /// items sized ([`note_returned`]), which costs a walk over them.
    static SIZING: Cell<bool> = const { Cell::new(false) };
    static RETURNED: Cell<Option<Returned>> = const { Cell::new(None) };
}

/// Notes `units` charged to the call running on this thread.
pub(crate) fn note_charged(units: f64) {
    CHARGED.with(|charged| charged.set(Some(charged.get().unwrap_or(0.0) + units)));
}

/// Notes what the call running on this thread returned, when it is recorded (`returned` is
/// only called then).
pub(crate) fn note_returned(returned: impl FnOnce() -> Option<Returned>) {
    if SIZING.with(Cell::get) {
        RETURNED.with(|slot| slot.set(returned()));
    }
}

/// Runs `call` with what it is charged and returns noted: the units and, for a read, the
/// items it returned.
pub(crate) fn charged<T>(call: impl FnOnce() -> T) -> (T, CallCharge) {
    CHARGED.with(Cell::take);
    RETURNED.with(Cell::take);
    SIZING.with(|sizing| sizing.set(true));
    let result = call();
    SIZING.with(|sizing| sizing.set(false));
    let charge = CallCharge {
        units: CHARGED.with(Cell::take),
        returned: RETURNED.with(Cell::take),
    };
    (result, charge)
}
