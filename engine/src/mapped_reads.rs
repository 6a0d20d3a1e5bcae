//! A bound on the pages of mapped SSTables that reads leave in the process's resident memory
//! (`DbOptions::mapped_read_bytes_max`).
//!
//! Why: tables are read through a memory mapping (`shoal_vfs::ReadableFile::bytes`), and
//! every page a read touches stays mapped, and counted in the process's resident set, until
//! the table is closed — although the OS page cache holds those pages anyway. A write load
//! that reads each item before it writes it (PutItem maintains indexes from the old item)
//! touches blocks all over the tables, so this grew with the data: 38–68 MiB of a 139–170 MiB
//! server under `shoal bench --workloads PutItem --connections 256` (smaps, 2026-11-29).
//! Iterators that read a table once already release what they pass
//! (`TableIterator::releasing_behind`); point reads and other iterators did not. Point reads
//! that copy their block (`DbOptions::point_reads`) map nothing and charge nothing.
//!
//! How: the bytes a read may have mapped are charged in windows of [`WINDOW_BYTES`], each
//! window of a table once until its next release — the kernel maps up to that much of
//! cached file around each page a read faults in (its fault-around), so a charged window
//! stands for what one read may leave resident. When the charges of all the database's
//! tables pass the budget, the reader that passed it releases every open table's data blocks
//! (`MADV_DONTNEED`: the mapping stays, the page cache keeps the pages, and the next read of
//! a page maps it back with a minor fault, no I/O) and the count starts again. Release takes
//! nothing a reader holds: a value borrowed from a released page reads the same bytes after.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::sstable::Table;

/// What one read's page fault may map: the kernel's default fault-around (`fault_around_bytes`,
/// 64 KiB on Linux), and the unit of the charges.
pub(crate) const WINDOW_BYTES: usize = 64 << 10;

/// The charges and the open tables of one database.
#[derive(Debug)]
pub(crate) struct MappedReads {
    budget_bytes: usize,
    charged_bytes: AtomicUsize,
    /// Every table opened with this budget; dead entries are dropped as tables open.
    tables: Mutex<Vec<Weak<Table>>>,
    /// How many times the tables were released (`DbStats::mapped_read_releases`).
    releases: AtomicU64,
}

/// No bound (a registry made for a test of something else).
impl Default for MappedReads {
    fn default() -> MappedReads {
        MappedReads::new(usize::MAX)
    }
}

impl MappedReads {
    pub(crate) fn new(budget_bytes: usize) -> MappedReads {
        MappedReads {
            budget_bytes,
            charged_bytes: AtomicUsize::new(0),
            tables: Mutex::new(Vec::new()),
            releases: AtomicU64::new(0),
        }
    }

    /// Whether there is a budget at all (`usize::MAX` is none).
    pub(crate) fn is_bounded(&self) -> bool {
        self.budget_bytes != usize::MAX
    }

    /// Counts `table`'s reads against the budget from now on.
    pub(crate) fn register(&self, table: &Arc<Table>) {
        let mut tables = self.tables.lock();
        tables.retain(|table| table.strong_count() > 0);
        tables.push(Arc::downgrade(table));
    }

    /// Charges one window newly read; past the budget, releases every table's data blocks.
    pub(crate) fn charge_window(&self) {
        let charged = self
            .charged_bytes
            .fetch_add(WINDOW_BYTES, Ordering::Relaxed)
            .saturating_add(WINDOW_BYTES);
        if charged > self.budget_bytes {
            self.release_all();
        }
    }

    /// Releases every open table's data blocks. One reader does it; readers that pass the budget
    /// meanwhile find the lock taken and go on (their windows are released with the rest or
    /// charged again next time).
    fn release_all(&self) {
        let Some(tables) = self.tables.try_lock() else {
            return;
        };
        // Zeroed first: a window charged from here on is counted again, even if this release
        // drops its pages (a window counted but not resident only brings the next release
        // closer).
        self.charged_bytes.store(0, Ordering::Relaxed);
        let open: Vec<Arc<Table>> = tables.iter().filter_map(Weak::upgrade).collect();
        drop(tables);
        for table in &open {
            table.release_mapped_reads();
        }
        self.releases.fetch_add(1, Ordering::Relaxed);
        // `open` may hold a table's last handle: dropping it here closes (and may remove) the
        // file, outside the lock.
    }

    /// How many times the tables were released so far.
    pub(crate) fn releases(&self) -> u64 {
        self.releases.load(Ordering::Relaxed)
    }
}

/// Which windows of one table were charged since its last release.
pub(crate) struct ChargedWindows {
    budget: Arc<MappedReads>,
    windows: Vec<AtomicBool>,
}

impl ChargedWindows {
    pub(crate) fn new(budget: Arc<MappedReads>, file_len_bytes: usize) -> ChargedWindows {
        ChargedWindows {
            budget,
            windows: (0..file_len_bytes.div_ceil(WINDOW_BYTES))
                .map(|_| AtomicBool::new(false))
                .collect(),
        }
    }

    /// Charges the windows that `start..end` of the file lies in and that were not charged
    /// since the last release.
    pub(crate) fn charge(&self, start: usize, end: usize) {
        let last = end.saturating_sub(1).max(start) / WINDOW_BYTES;
        for window in self
            .windows
            .iter()
            .take(last + 1)
            .skip(start / WINDOW_BYTES)
        {
            // A load first: a hot window is read, not written, by every reader.
            if !window.load(Ordering::Relaxed) && !window.swap(true, Ordering::Relaxed) {
                self.budget.charge_window();
            }
        }
    }

    /// Forgets every charge, before the table's pages are released.
    pub(crate) fn clear(&self) {
        for window in &self.windows {
            window.store(false, Ordering::Relaxed);
        }
    }
}
