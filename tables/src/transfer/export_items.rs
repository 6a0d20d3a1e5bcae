//! The items of an export: every base item of a table as of one engine snapshot, written to
//! an [`ExportWriter`] by parallel workers.
//!
//! The table tree's keys start with `hash64(pk)` (`core::keys`), so the 64-bit hash space
//! split into equal ranges (the ranges of a parallel Scan's segments) splits the table into
//! about equal parts. Each worker walks one range at the snapshot, keeps the base items
//! (section 0x00: not LSI entries nor collection records), decodes each with the item codec
//! and hands it to its own data file. Memory is bounded by the workers' cursors and their
//! writers' buffers, whatever the table's size.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use shoal_engine::{Db, Snapshot};
use shoal_model::ApiError;

use crate::core::catalog::TableDef;
use crate::core::error::internal;
use crate::core::item_codec::decode_item;
use crate::core::keys;
use crate::transfer::write::{ExportWriteError, ExportWriter};

/// The most workers (and data files) of one export.
pub const EXPORT_WORKERS_MAX: usize = 8;
/// A table with fewer items than this per worker gets fewer workers: a data file per few
/// items would only add files.
const ITEMS_PER_WORKER_MIN: u64 = 10_000;
/// Workers publish their progress every this many items.
const PROGRESS_EVERY_ITEMS: u64 = 1024;

/// How far an export has come: items and bytes (the sum of their DynamoDB sizes) written,
/// and the table's item count from its statistics (as DescribeTable reports it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportProgress {
    pub items: u64,
    pub bytes: u64,
    pub total_items: u64,
}

/// Why the items were not all written.
#[derive(Debug)]
pub enum ExportItemsError {
    /// The database is closing: the export was abandoned.
    Stopped,
    Write(ExportWriteError),
    Read(ApiError),
}

impl From<ExportWriteError> for ExportItemsError {
    fn from(error: ExportWriteError) -> Self {
        ExportItemsError::Write(error)
    }
}

/// How many workers export a table of `total_items` items: one per core, at most
/// [`EXPORT_WORKERS_MAX`], fewer for a small table.
pub fn worker_count(total_items: u64) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let by_size = usize::try_from(total_items / ITEMS_PER_WORKER_MIN).unwrap_or(usize::MAX);
    cores.min(EXPORT_WORKERS_MAX).min(by_size).max(1)
}

/// Writes every base item of `table` as of `snapshot` through `writer`, one data file per
/// worker; `stop` abandons the walk, `progress` hears how far it has come.
pub(crate) fn write_items(
    db: &Db,
    table: &TableDef,
    snapshot: &Snapshot,
    writer: &ExportWriter,
    total_items: u64,
    stop: &AtomicBool,
    progress: &(dyn Fn(ExportProgress) + Sync),
) -> Result<(), ExportItemsError> {
    let workers = worker_count(total_items);
    let walk = Walk {
        db,
        table,
        snapshot,
        writer,
        stop,
        failed: AtomicBool::new(false),
        items: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        total_items,
        progress,
    };
    let results: Vec<Result<(), ExportItemsError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let walk = &walk;
                scope.spawn(move || {
                    let result = walk.range(worker, workers);
                    if result.is_err() {
                        walk.failed.store(true, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(ExportItemsError::Read(internal(
                        "an export worker panicked",
                    )))
                })
            })
            .collect()
    });
    // The first real failure explains the export's; the others stopped because of it.
    let mut stopped = false;
    for result in results {
        match result {
            Ok(()) => {}
            Err(ExportItemsError::Stopped) => stopped = true,
            Err(error) => return Err(error),
        }
    }
    if stopped {
        return Err(ExportItemsError::Stopped);
    }
    progress(walk.progress_now());
    Ok(())
}

fn read_error(error: impl std::fmt::Display) -> ExportItemsError {
    ExportItemsError::Read(internal(error))
}

/// What the workers of one export share.
struct Walk<'a> {
    db: &'a Db,
    table: &'a TableDef,
    snapshot: &'a Snapshot,
    writer: &'a ExportWriter,
    stop: &'a AtomicBool,
    /// Set by a worker that failed, so the others stop.
    failed: AtomicBool,
    items: AtomicU64,
    bytes: AtomicU64,
    total_items: u64,
    progress: &'a (dyn Fn(ExportProgress) + Sync),
}

impl Walk<'_> {
    /// Worker `worker` of `workers`: the base items of its hash range, into its data file.
    fn range(&self, worker: usize, workers: usize) -> Result<(), ExportItemsError> {
        // `workers` is at most EXPORT_WORKERS_MAX, so both fit in u32.
        let (start, end) = keys::segment_bounds(worker as u32, workers as u32);
        let upper = match &end {
            Some(end) => Bound::Excluded(end.as_slice()),
            None => Bound::Unbounded,
        };
        let mut cursor = self
            .db
            .iter_tree_range(
                self.table.tree,
                Bound::Included(start.as_slice()),
                upper,
                self.snapshot,
            )
            .map_err(read_error)?;
        let pk_type = self.table.key.hash.scalar_type();
        let mut file = self.writer.data_file()?;
        let (mut items, mut bytes) = (0u64, 0u64);
        while cursor.advance().map_err(read_error)? {
            let (_, section) = keys::split_table_key(cursor.key(), pk_type).map_err(read_error)?;
            if section != keys::SECTION_BASE {
                continue;
            }
            let item = decode_item(cursor.value()).map_err(read_error)?;
            let before = file.billed_size_bytes();
            file.write_item(&item)?;
            items += 1;
            bytes += file.billed_size_bytes() - before;
            if items == PROGRESS_EVERY_ITEMS {
                if self.stop.load(Ordering::Relaxed) || self.failed.load(Ordering::Relaxed) {
                    return Err(ExportItemsError::Stopped);
                }
                self.publish(&mut items, &mut bytes);
            }
        }
        drop(cursor);
        file.finish()?;
        self.publish(&mut items, &mut bytes);
        Ok(())
    }

    /// Adds a worker's unpublished counts to the totals and reports them.
    fn publish(&self, items: &mut u64, bytes: &mut u64) {
        self.items
            .fetch_add(std::mem::take(items), Ordering::Relaxed);
        self.bytes
            .fetch_add(std::mem::take(bytes), Ordering::Relaxed);
        (self.progress)(self.progress_now());
    }

    fn progress_now(&self) -> ExportProgress {
        ExportProgress {
            items: self.items.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            total_items: self.total_items,
        }
    }
}
