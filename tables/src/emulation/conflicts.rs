//! Transaction conflicts (SPEC-2 §7.3), with `EmulationOptions::transaction_conflicts`.
//!
//! By default writes of one item simply queue on its collection lock (`core::locks`), so a
//! client never sees DynamoDB's conflicts. With the option on, every write marks its items
//! "in flight" from before it waits for its locks until it has committed, and a request
//! that meets a mark fails at once instead of waiting:
//!
//! | in flight | newcomer on the same item | outcome |
//! |---|---|---|
//! | TransactWriteItems | PutItem, UpdateItem, DeleteItem | TransactionConflictException |
//! | TransactWriteItems | TransactWriteItems | TransactionCanceledException, `TransactionConflict` for that action |
//! | any write | TransactGetItems | TransactionCanceledException, `TransactionConflict` for that item |
//! | anything | GetItem, Query, Scan, BatchGetItem | no conflict |
//!
//! A single write (or a batch item) meeting another single write waits its turn, as a
//! transaction meeting an in-flight single write does. `EmulationOptions::write_hold` keeps every
//! write in flight, after its locks, for a while, so tests can meet one deterministically.

use std::collections::HashMap;

use parking_lot::Mutex;
use shoal_engine::TreeId;
use shoal_model::{ApiError, ErrorCode};

use crate::core::catalog::TableDef;
use crate::core::plan::ItemKey;
use crate::Database;

/// An item: its table's tree and its base key.
pub(crate) type ItemId = (TreeId, Vec<u8>);

/// The text of a conflict, as a single write's exception and as a cancellation reason.
pub const TRANSACTION_CONFLICT_MESSAGE: &str = "Transaction is ongoing for the item";

/// Who holds an item in flight.
#[derive(Default)]
struct Holders {
    transactions: usize,
    writes: usize,
}

/// The items of every write in flight.
#[derive(Default)]
pub(crate) struct InFlight {
    items: Mutex<HashMap<ItemId, Holders>>,
}

/// Marks held by one request; dropping it clears them.
pub(crate) struct Claim<'a> {
    in_flight: &'a InFlight,
    items: Vec<ItemId>,
    transaction: bool,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut held = self.in_flight.items.lock();
        for item in &self.items {
            if let Some(holders) = held.get_mut(item) {
                if self.transaction {
                    holders.transactions -= 1;
                } else {
                    holders.writes -= 1;
                }
                if holders.transactions == 0 && holders.writes == 0 {
                    held.remove(item);
                }
            }
        }
    }
}

impl InFlight {
    fn mark(&self, items: Vec<ItemId>, transaction: bool) -> Claim<'_> {
        let mut held = self.items.lock();
        for item in &items {
            let holders = held.entry(item.clone()).or_default();
            if transaction {
                holders.transactions += 1;
            } else {
                holders.writes += 1;
            }
        }
        drop(held);
        Claim {
            in_flight: self,
            items,
            transaction,
        }
    }

    /// Marks a write transaction's items, unless another transaction holds some: then the
    /// positions of those, in `items` order, and nothing is marked.
    pub(crate) fn claim_transaction(&self, items: Vec<ItemId>) -> Result<Claim<'_>, Vec<bool>> {
        {
            let held = self.items.lock();
            let taken: Vec<bool> = items
                .iter()
                .map(|item| held.get(item).is_some_and(|h| h.transactions > 0))
                .collect();
            if taken.iter().any(|&t| t) {
                return Err(taken);
            }
            // Marked under the same lock: two transactions cannot both pass the check.
            let mut held = held;
            for item in &items {
                held.entry(item.clone()).or_default().transactions += 1;
            }
        }
        Ok(Claim {
            in_flight: self,
            items,
            transaction: true,
        })
    }

    /// Marks a single write's item, or TransactionConflictException if a transaction holds
    /// it.
    pub(crate) fn claim_write(&self, item: ItemId) -> Result<Claim<'_>, ApiError> {
        let mut held = self.items.lock();
        let holders = held.entry(item.clone()).or_default();
        if holders.transactions > 0 {
            return Err(ApiError::new(
                ErrorCode::TransactionConflictException,
                TRANSACTION_CONFLICT_MESSAGE,
            ));
        }
        holders.writes += 1;
        drop(held);
        Ok(Claim {
            in_flight: self,
            items: vec![item],
            transaction: false,
        })
    }

    /// Marks a batch's items as plain writes: they never conflict, they queue.
    pub(crate) fn claim_batch(&self, items: Vec<ItemId>) -> Claim<'_> {
        self.mark(items, false)
    }

    /// Which of `items` some write holds in flight (what a TransactGetItems may not read).
    pub(crate) fn busy(&self, items: &[ItemId]) -> Vec<bool> {
        let held = self.items.lock();
        items.iter().map(|item| held.contains_key(item)).collect()
    }

    /// Items held now, by any write.
    pub(crate) fn len(&self) -> usize {
        self.items.lock().len()
    }
}

impl Database {
    /// Marks a single write's item in flight (None without `EmulationOptions::transaction_conflicts`),
    /// or TransactionConflictException if a transaction holds it.
    pub(crate) fn claim_write(
        &self,
        table: &TableDef,
        key: &ItemKey,
    ) -> Result<Option<Claim<'_>>, ApiError> {
        match &self.emulation.in_flight {
            Some(in_flight) => Ok(Some(in_flight.claim_write((table.tree, key.base_key()?))?)),
            None => Ok(None),
        }
    }

    /// Keeps a write that holds its locks in flight for `EmulationOptions::write_hold`.
    pub(crate) fn hold_in_flight(&self) {
        if !self.options.emulation.write_hold.is_zero() {
            std::thread::sleep(self.options.emulation.write_hold);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(n: u8) -> ItemId {
        (1, vec![n])
    }

    #[test]
    fn marks_follow_the_conflict_table_and_clear_on_drop() {
        let in_flight = InFlight::default();
        let first = in_flight.claim_transaction(vec![item(1), item(2)]).unwrap();
        // Another transaction on item 2: refused, and item 3 is not left marked.
        let Err(taken) = in_flight.claim_transaction(vec![item(3), item(2)]) else {
            panic!("a second transaction on an item in flight was let through");
        };
        assert_eq!(taken, vec![false, true]);
        assert_eq!(in_flight.busy(&[item(3)]), vec![false]);
        let conflict = in_flight.claim_write(item(1)).err().unwrap();
        assert_eq!(conflict.code, ErrorCode::TransactionConflictException);
        assert_eq!(conflict.message, TRANSACTION_CONFLICT_MESSAGE);
        // A single write beside a single write, a batch beside a transaction: they queue.
        let write = in_flight.claim_write(item(3)).unwrap();
        let again = in_flight.claim_write(item(3)).unwrap();
        let batch = in_flight.claim_batch(vec![item(1), item(4)]);
        assert_eq!(
            in_flight.busy(&[item(1), item(3), item(4), item(5)]),
            vec![true, true, true, false]
        );
        drop((first, write, again, batch));
        assert_eq!(in_flight.len(), 0);
        assert!(in_flight.claim_transaction(vec![item(2)]).is_ok());
    }
}
