//! The positioned-iterator contract shared by memtables, SSTables and merges.

/// What can go wrong while iterating: a source found bytes it cannot trust.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IterError {
    /// A checksum or structural check failed; the message names the file and offset.
    #[error("corruption: {0}")]
    Corruption(String),
    /// The underlying storage failed.
    #[error("i/o error: {0}")]
    Io(String),
}

/// A cursor over internal entries (internal key, value) in [`crate::compare_internal`] order.
///
/// Direction is fixed by the positioning call: after `seek_to_first` or `seek` only `next`
/// is used; after `seek_to_last` or `seek_for_prev` only `prev`. Implementations need not
/// support switching direction without re-positioning. `key` and `value` may only be called
/// while `valid()` is true.
pub trait InternalIterator {
    /// Whether the cursor is on an entry.
    fn valid(&self) -> bool;
    /// The current internal key.
    fn key(&self) -> &[u8];
    /// The current value (empty for tombstones).
    fn value(&self) -> &[u8];
    /// Positions on the first entry.
    fn seek_to_first(&mut self) -> Result<(), IterError>;
    /// Positions on the last entry.
    fn seek_to_last(&mut self) -> Result<(), IterError>;
    /// Positions on the first entry whose key is >= `target` (internal order).
    fn seek(&mut self, target: &[u8]) -> Result<(), IterError>;
    /// Positions on the last entry whose key is <= `target` (internal order).
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<(), IterError>;
    /// Moves forward one entry.
    fn next(&mut self) -> Result<(), IterError>;
    /// Moves backward one entry.
    fn prev(&mut self) -> Result<(), IterError>;
}

impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn seek_to_first(&mut self) -> Result<(), IterError> {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) -> Result<(), IterError> {
        (**self).seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) -> Result<(), IterError> {
        (**self).seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<(), IterError> {
        (**self).seek_for_prev(target)
    }
    fn next(&mut self) -> Result<(), IterError> {
        (**self).next()
    }
    fn prev(&mut self) -> Result<(), IterError> {
        (**self).prev()
    }
}
