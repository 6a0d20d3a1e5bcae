//! Consumed capacity per table, for monitoring (the server's `/metrics`).
//!
//! `Database::execute` asks every data-plane operation for its TOTAL consumed capacity
//! (removing it from the response again unless the client asked for it) and adds it here,
//! so the totals cover every request, not only those that requested ConsumedCapacity.

use std::collections::BTreeMap;

use parking_lot::Mutex;
use serde_json::Value;

/// Tables tracked at most; the meter never grows past this (deleted tables' totals stay).
const TABLES_MAX: usize = 10_000;

/// Units consumed by one table since the database was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CapacityTotals {
    pub read_units: f64,
    pub write_units: f64,
}

/// Whether an operation reads or writes, for metering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Adds the `ConsumedCapacity` of a response (one object, or an array of them).
    pub(crate) fn record(&self, kind: Metered, consumed: &Value) {
        let entries: Vec<&Value> = match consumed {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        let mut totals = self.totals.lock();
        for entry in entries {
            let (Some(table), Some(units)) = (
                entry.get("TableName").and_then(Value::as_str),
                entry.get("CapacityUnits").and_then(Value::as_f64),
            ) else {
                continue;
            };
            if totals.len() >= TABLES_MAX && !totals.contains_key(table) {
                continue;
            }
            let slot = totals.entry(table.to_string()).or_default();
            match kind {
                Metered::Read => slot.read_units += units,
                Metered::Write => slot.write_units += units,
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
