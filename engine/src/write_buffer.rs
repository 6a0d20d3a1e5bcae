//! The write buffer: how large each tree's memtables grow, and the budget that bounds all
//! memtables of the database together (RocksDB's write buffer manager does the same).
//!
//! Why: a fixed 64 MiB memtable holds 64 MiB (and, while it flushes, 128 MiB) however few
//! writes a tree takes, so an idle or lightly written server cost a large write buffer it did
//! not need. Here memory follows the write rate:
//!
//! - **Sizes.** A tree's first memtable is frozen at `DbOptions::memtable_size_bytes_min`.
//!   When a memtable is frozen because it is full, its fill time sets the next one's size:
//!   filled in under [`GROW_IF_FILLED_WITHIN`] (the tree takes more than min/1 s), the next
//!   is twice as large; filled over more than [`SHRINK_IF_FILLED_AFTER`], half as large;
//!   otherwise the same. Never below the minimum nor above the maximum, which is
//!   `DbOptions::memtable_size_bytes` but at most half the budget, so a full memtable being
//!   flushed and the next one being filled fit the budget together. A memtable frozen for
//!   another reason (the WAL's cap, an explicit flush, the budget) leaves the size alone.
//! - **Budget.** Every memtable charges its arena bytes, in whole pages
//!   (`memtable::CHARGE_GRANULE_BYTES`), to one total as entries go in and
//!   gives them back when it is dropped, which is when its memory is freed (after its flush,
//!   once no reader holds it). At `DbOptions::write_buffer_bytes_max`, a write freezes the
//!   largest active memtable if no frozen one is pending yet, then waits for the flusher, the
//!   same bounded wait as for a tree with too many frozen memtables, for as long as the total
//!   is over the budget and frozen memtables are pending. Memory that only readers hold
//!   (flushed memtables an open cursor still reads) is not something a flush can free, so
//!   it never makes a writer wait.
//! - **After a burst.** The flusher, when nothing was written for [`IDLE_AFTER`], freezes
//!   and flushes active memtables larger than the minimum and sets their trees back to the
//!   minimum size, so a burst's write buffer does not stay resident while the server idles.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::memtable::Memtable;
use crate::options::DbOptions;

/// A memtable filled faster than this is too small for its tree's write rate.
pub(crate) const GROW_IF_FILLED_WITHIN: Duration = Duration::from_secs(1);
/// A memtable that took longer than this to fill is larger than its tree's write rate needs.
pub(crate) const SHRINK_IF_FILLED_AFTER: Duration = Duration::from_secs(10);
/// How long the flusher waits with no writes before it gives a burst's memory back.
pub(crate) const IDLE_AFTER: Duration = Duration::from_secs(1);

/// The database's memtable sizing and budget.
pub(crate) struct WriteBuffer {
    /// Arena bytes of every live memtable of the database.
    total: Arc<AtomicUsize>,
    budget_bytes: usize,
    min_bytes: usize,
    max_bytes: usize,
}

impl WriteBuffer {
    pub(crate) fn new(options: &DbOptions) -> WriteBuffer {
        let budget_bytes = options.write_buffer_bytes_max.max(1);
        let max_bytes = options.memtable_size_bytes.min(budget_bytes / 2).max(1);
        WriteBuffer {
            total: Arc::new(AtomicUsize::new(0)),
            budget_bytes,
            min_bytes: options.memtable_size_bytes_min.clamp(1, max_bytes),
            max_bytes,
        }
    }

    /// A new, empty memtable charged to this buffer.
    pub(crate) fn memtable(&self) -> Memtable {
        Memtable::charged_to(Arc::clone(&self.total))
    }

    /// Bytes of all live memtables.
    pub(crate) fn total_bytes(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    pub(crate) fn is_over_budget(&self) -> bool {
        self.total_bytes() >= self.budget_bytes
    }

    /// The size a tree's memtables start at.
    pub(crate) fn min_bytes(&self) -> usize {
        self.min_bytes
    }

    /// The largest a memtable grows to.
    pub(crate) fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The size of a tree's next memtable, after one of `target_bytes` filled in `filled_in`
    /// (module docs).
    pub(crate) fn next_size(&self, target_bytes: usize, filled_in: Duration) -> usize {
        let next = if filled_in < GROW_IF_FILLED_WITHIN {
            target_bytes.saturating_mul(2)
        } else if filled_in > SHRINK_IF_FILLED_AFTER {
            target_bytes / 2
        } else {
            target_bytes
        };
        next.clamp(self.min_bytes, self.max_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_compaction::EntryKind;

    fn buffer(min: usize, max: usize, budget: usize) -> WriteBuffer {
        WriteBuffer::new(&DbOptions {
            memtable_size_bytes: max,
            memtable_size_bytes_min: min,
            write_buffer_bytes_max: budget,
            ..DbOptions::default()
        })
    }

    #[test]
    fn sizes_double_when_filled_fast_halve_when_slow_within_bounds() {
        let wb = buffer(2 << 20, 64 << 20, 32 << 20);
        // The maximum is half the budget, below memtable_size_bytes.
        assert_eq!(wb.max_bytes(), 16 << 20);
        let fast = Duration::from_millis(200);
        let slow = Duration::from_secs(30);
        let steady = Duration::from_secs(5);
        let mut size = wb.min_bytes();
        let mut grown = vec![size];
        for _ in 0..4 {
            size = wb.next_size(size, fast);
            grown.push(size);
        }
        assert_eq!(grown, [2 << 20, 4 << 20, 8 << 20, 16 << 20, 16 << 20]);
        assert_eq!(wb.next_size(size, steady), 16 << 20);
        assert_eq!(wb.next_size(size, slow), 8 << 20);
        assert_eq!(wb.next_size(2 << 20, slow), 2 << 20);
    }

    #[test]
    fn the_default_budget_lets_memtables_double_once() {
        // 8 MiB: a memtable flushing and the next one, each at most 4 MiB. An explicit
        // budget still sets the bound (the test above: 32 MiB, memtables up to 16).
        let wb = WriteBuffer::new(&DbOptions::default());
        assert_eq!((wb.min_bytes(), wb.max_bytes()), (2 << 20, 4 << 20));
        assert_eq!(wb.next_size(2 << 20, Duration::from_millis(200)), 4 << 20);
    }

    #[test]
    fn a_minimum_above_the_maximum_gives_fixed_sizes() {
        // Tests and benches that set only memtable_size_bytes keep that size.
        let wb = buffer(2 << 20, 4 << 10, 32 << 20);
        assert_eq!((wb.min_bytes(), wb.max_bytes()), (4 << 10, 4 << 10));
        assert_eq!(wb.next_size(4 << 10, Duration::ZERO), 4 << 10);
        assert_eq!(wb.next_size(4 << 10, Duration::from_secs(60)), 4 << 10);
    }

    #[test]
    fn memtables_charge_the_total_while_they_live() {
        let wb = buffer(1 << 10, 1 << 20, 4 << 20);
        let first = wb.memtable();
        let second = wb.memtable();
        first.insert(b"a", 1, EntryKind::Put, &[7u8; 10_000]);
        second.insert(b"b", 2, EntryKind::Put, &[7u8; 3000]);
        second.insert(b"c", 3, EntryKind::Put, &[7u8; 3000]);
        // Charged in whole pages: each memtable's bytes rounded down.
        let charged = |m: &Memtable| crate::memtable::charged_bytes(m.size_bytes());
        assert_eq!(wb.total_bytes(), charged(&first) + charged(&second));
        assert!(wb.total_bytes() >= 12_288);
        drop(first);
        assert_eq!(wb.total_bytes(), charged(&second));
        drop(second);
        assert_eq!(wb.total_bytes(), 0);
    }
}
