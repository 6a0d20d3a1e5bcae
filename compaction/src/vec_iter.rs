//! An in-memory [`InternalIterator`] over a sorted vector of entries.
//!
//! Used by this crate's tests and handy for the engine's: it is the simplest possible
//! source that honours the iterator contract, so merges and filters can be checked against it.

use crate::iter::{InternalIterator, IterError};
use crate::key::compare_internal;

/// Entries (internal key, value) held in memory, iterated in [`compare_internal`] order.
#[derive(Debug, Clone, Default)]
pub struct VecIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Index of the current entry; `None` when not positioned on an entry.
    position: Option<usize>,
    /// `seek` and `seek_for_prev` calls so far, for tests of what a consumer asks.
    seeks: u64,
}

impl VecIterator {
    /// Builds an iterator over `entries`, sorting them into internal-key order first.
    pub fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecIterator {
        entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
        VecIterator {
            entries,
            position: None,
            seeks: 0,
        }
    }

    /// Builds an iterator over `entries` exactly as given, without sorting or checking them;
    /// tests use it to feed out-of-order or malformed keys to consumers.
    pub fn from_raw(entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecIterator {
        VecIterator {
            entries,
            position: None,
            seeks: 0,
        }
    }

    /// How many times `seek` or `seek_for_prev` was called.
    pub fn seeks(&self) -> u64 {
        self.seeks
    }

    /// The first and last internal keys held, as a file's metadata gives them (for a
    /// [`crate::ConcatenatingIterator`]); `None` when empty.
    pub fn bounds(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        Some((
            self.entries.first()?.0.clone(),
            self.entries.last()?.0.clone(),
        ))
    }

    fn current(&self) -> &(Vec<u8>, Vec<u8>) {
        debug_assert!(
            self.position.is_some(),
            "key/value called on an invalid iterator"
        );
        // Callers must check `valid()` first (the trait's contract); fall back to an empty
        // entry rather than panicking if they do not.
        static EMPTY: (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
        self.position
            .and_then(|i| self.entries.get(i))
            .unwrap_or(&EMPTY)
    }
}

impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.position.is_some()
    }

    fn key(&self) -> &[u8] {
        &self.current().0
    }

    fn value(&self) -> &[u8] {
        &self.current().1
    }

    fn seek_to_first(&mut self) -> Result<(), IterError> {
        self.position = if self.entries.is_empty() {
            None
        } else {
            Some(0)
        };
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<(), IterError> {
        self.position = self.entries.len().checked_sub(1);
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<(), IterError> {
        self.seeks += 1;
        let first_not_less = self
            .entries
            .partition_point(|(k, _)| compare_internal(k, target).is_lt());
        self.position = (first_not_less < self.entries.len()).then_some(first_not_less);
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<(), IterError> {
        self.seeks += 1;
        let first_greater = self
            .entries
            .partition_point(|(k, _)| compare_internal(k, target).is_le());
        self.position = first_greater.checked_sub(1);
        Ok(())
    }

    fn next(&mut self) -> Result<(), IterError> {
        self.position = self
            .position
            .map(|i| i + 1)
            .filter(|&i| i < self.entries.len());
        Ok(())
    }

    fn prev(&mut self) -> Result<(), IterError> {
        self.position = self.position.and_then(|i| i.checked_sub(1));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{encode, EntryKind};

    #[test]
    fn sorts_and_seeks_in_internal_order() {
        let mut it = VecIterator::new(vec![
            (encode(b"b", 1, EntryKind::Put), b"b1".to_vec()),
            (encode(b"a", 1, EntryKind::Put), b"a1".to_vec()),
            (encode(b"a", 2, EntryKind::Put), b"a2".to_vec()),
        ]);
        it.seek_to_first().unwrap();
        assert_eq!(it.value(), b"a2");
        it.next().unwrap();
        assert_eq!(it.value(), b"a1");
        it.seek(&encode(b"a", 1, EntryKind::Delete)).unwrap();
        assert_eq!(it.value(), b"b1");
        it.seek_for_prev(&encode(b"a", 3, EntryKind::Put)).unwrap();
        assert!(!it.valid());
        it.seek_to_last().unwrap();
        it.prev().unwrap();
        assert_eq!(it.value(), b"a1");
    }
}
