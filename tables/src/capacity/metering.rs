//! Consumed capacity per table, for monitoring (the server's `/metrics`).
//!
//! `Database::execute` asks every data-plane operation for its TOTAL consumed capacity
//! (removing it from the response again unless the client asked for it) and adds it here,
//! so the totals cover every request, not only those that requested ConsumedCapacity.

use std::cell::Cell;
use std::collections::BTreeMap;

use parking_lot::Mutex;

use crate::api::common::ConsumedCapacity;

/// Tables tracked at most; the meter never grows past this (deleted tables' totals stay).
const TABLES_MAX: usize = 10_000;

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

/// Running totals per table.
#[derive(Debug, Default)]
pub struct CapacityMeter {
    totals: Mutex<BTreeMap<String, CapacityTotals>>,
}

impl CapacityMeter {
    /// Adds the capacity entries of one response.
    pub(crate) fn record(&self, kind: Metered, consumed: &[ConsumedCapacity]) {
        if consumed.is_empty() {
            return;
        }
        let mut totals = self.totals.lock();
        for entry in consumed {
            // Every request comes here: the table's name is copied only the first time.
            if !totals.contains_key(&entry.table_name) {
                if totals.len() >= TABLES_MAX {
                    continue;
                }
                totals.insert(entry.table_name.clone(), CapacityTotals::default());
            }
            let Some(slot) = totals.get_mut(&entry.table_name) else {
                continue;
            };
            match kind {
                Metered::Read => slot.read_units += entry.capacity_units,
                Metered::Write => slot.write_units += entry.capacity_units,
            }
        }
    }

    /// The totals per table, in name order.
    pub fn totals(&self) -> Vec<(String, CapacityTotals)> {
        self.totals
            .lock()
            .iter()
            .map(|(name, totals)| (name.clone(), *totals))
            .collect()
    }
}

thread_local! {
    /// The units the last metered call on this thread was charged, summed over its tables
    /// and indexes, until [`take_charged`] takes them.
    static CHARGED: Cell<Option<f64>> = const { Cell::new(None) };
}

/// Notes `units` charged to the call running on this thread.
pub(crate) fn note_charged(units: f64) {
    CHARGED.with(|charged| charged.set(Some(charged.get().unwrap_or(0.0) + units)));
}

/// The units charged on this thread since the last call, if a metered call ran.
pub(crate) fn take_charged() -> Option<f64> {
    CHARGED.with(Cell::take)
}
