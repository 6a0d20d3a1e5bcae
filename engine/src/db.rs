//! The LSM database: several trees sharing one WAL and one manifest.
//!
//! Write path: a [`WriteBatch`] (entries for any number of trees) is committed through the
//! WAL's group commit. The group leader writes and syncs the group, then applies each batch
//! to the trees' active memtables in sequence order and publishes the group's last sequence
//! number as visible. Reads take the visible sequence number, then the current
//! [`SuperVersion`], and never lock against writers.
//!
//! Background work: when a tree's active memtable passes its size limit it is frozen (under
//! `Wal::exclusive`, so no batch is half-applied) and a flusher thread writes it to an L0
//! SSTable, installs a new manifest version recording the file and the tree's flushed
//! sequence number, then releases WAL segments no tree needs any more.
//!
//! Compaction (`compact`, `compact_job`) runs on `compaction_threads` background threads
//! (or on the caller's, through `compact_until_idle`) and changes versions through the same
//! manifest lock; replaced files are removed when their last reader drops them
//! (`table_files`).
//!
//! Directory layout: `CURRENT`, `MANIFEST-*` and `*.sst` (see `manifest`), `wal/` (see the
//! `wal` crate), and `LOCK`, held while the database is open.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SendError, SyncSender};
use std::sync::Arc;
use std::thread::{JoinHandle, Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use shoal_compaction::{level_targets, EntryKind, LevelTargets};
use shoal_vfs::{DirLock, Fs};
use shoal_wal::{Applier, Wal, WalOptions};

use crate::batch::{BatchEntries, WriteBatch};
use crate::compact;
use crate::compact_schedule::Scheduler;
use crate::error::DbError;
use crate::manifest::{self, Manifest, ManifestError};
use crate::memtable::{Memtable, MemtableEntry, MemtableInserter};
pub use crate::options::{CompactionFilter, DbOptions, PointReads, VersionRetention};
use crate::out_of_space::{Backoff, Work};
use crate::pacer::WritePacer;
use crate::shared::{FlushState, Shared};
use crate::sstable::{PointLookup, Table, TableBuilder, TableOptions};
use crate::stats::{self, Counters, DbStats, TreeStats};
use crate::superversion::{write_rate, Immutable, SuperVersion, TreeMemtables};
use crate::table_files::{file_meta, open_table, FileRegistry};
use crate::version::{levels_view, FileMeta, TreeId, Version, VersionEdit, LEVELS};
use crate::write_buffer::{self, WriteBuffer};

/// Name of the lock file inside the data directory.
pub const LOCK_FILE_NAME: &str = "LOCK";
/// Name of the WAL's directory inside the data directory.
pub const WAL_DIR_NAME: &str = "wal";

/// Frozen memtables a tree may have waiting for flush before writers wait for the flusher:
/// the bound on memory held by unflushed data.
const IMMUTABLES_PER_TREE_MAX: usize = 4;

/// Most background compaction threads a database starts, whatever the options say.
const COMPACTION_THREADS_MAX: usize = 16;

/// Attempts at a consistent (sequence number, superversion) pair before a read falls back to
/// registering a snapshot.
const READ_VIEW_ATTEMPTS_MAX: usize = 8;

/// Most obsolete WAL segments kept for reuse, whatever the live cap.
const WAL_RECYCLED_SEGMENTS_MAX: u64 = 8;

/// How many obsolete WAL segments are kept (renamed) for reuse: as many as the live WAL
/// holds at its cap, so that once the WAL has cycled through its cap every new segment is a
/// recycled one. Writing into a recycled segment overwrites blocks that are allocated and,
/// usually, pages still in the page cache: no block allocation, no file-size update and no
/// fresh page to zero under the writer's `write(2)`. A fresh page costs more than zeroing on
/// a VM whose freed memory goes back to the host (profiled: zeroing in the WAL's `write(2)`
/// was 11% of a new-item PutItem's thread). At least 2, at most
/// [`WAL_RECYCLED_SEGMENTS_MAX`].
pub fn wal_recycled_segments_max(options: &DbOptions) -> usize {
    let segments_at_cap = options
        .wal_live_bytes_max
        .div_ceil(options.wal_segment_size_bytes.max(1));
    segments_at_cap.clamp(2, WAL_RECYCLED_SEGMENTS_MAX) as usize
}

/// The WAL's view of the database: applies committed batches to memtables.
pub(crate) struct MemtableApplier {
    shared: Arc<Shared>,
}

impl Applier<WriteBatch> for MemtableApplier {
    fn apply(&self, group: &[(u64, &WriteBatch)]) {
        // One superversion serves the group: active memtables change only under
        // `Wal::exclusive`, which the group's leader excludes.
        let sv = self.shared.superversion.read().clone();
        let mut inserter = MemtableInserter::default();
        // Sequence-suffixed keys are made here; allocated once, only if the group has any.
        let mut key_scratch = Vec::new();
        for (first_seq, batch) in group {
            apply_payload(
                &sv,
                *first_seq,
                batch.payload(),
                &mut inserter,
                &mut key_scratch,
            );
        }
    }

    fn publish(&self, last_seq: u64) {
        debug_assert!(last_seq >= self.shared.visible_seq.load(Ordering::Relaxed));
        self.shared.visible_seq.store(last_seq, Ordering::Release);
    }
}

/// Pushes a committed payload's entries for the active memtables of `sv` into `inserter`,
/// which links them (see [`MemtableInserter`]). Entries for a tree that no longer exists are
/// dropped: the tree was deleted after the batch was logged. `key_scratch` holds the key of
/// a sequence-suffixed put while the inserter copies it (`replay_record` makes the same key).
fn apply_payload<'a>(
    sv: &'a SuperVersion,
    first_seq: u64,
    payload: &[u8],
    inserter: &mut MemtableInserter<'a>,
    key_scratch: &mut Vec<u8>,
) {
    for (index, entry) in BatchEntries::new(payload).enumerate() {
        // A payload we built ourselves and that the WAL checksummed cannot be malformed;
        // if it were, applying the well-formed prefix would break atomicity, so stop loudly
        // in debug builds and skip the rest otherwise.
        let Ok(entry) = entry else {
            debug_assert!(false, "malformed batch payload reached the applier");
            return;
        };
        let Some(tree) = sv.memtables.get(&entry.tree) else {
            continue;
        };
        let seq = first_seq + index as u64;
        let key = entry.key_at(seq, key_scratch);
        inserter.push(&tree.active, key, seq, entry.kind, entry.value);
    }
    inserter.next_batch();
}

/// The edits creating trees `names` in `version` (ids from its next tree id, in order), and
/// their ids; refused if a name is taken or repeated.
pub(crate) fn create_tree_edits(
    version: &Version,
    names: &[String],
) -> Result<(Vec<VersionEdit>, Vec<TreeId>), DbError> {
    let mut edits = Vec::new();
    let mut ids = Vec::new();
    for (offset, name) in names.iter().enumerate() {
        let duplicate =
            version.trees.values().any(|t| &t.name == name) || names[..offset].contains(name);
        if duplicate {
            return Err(DbError::TreeExists(name.clone()));
        }
        let id = version.next_tree_id + offset as TreeId;
        edits.push(VersionEdit::CreateTree {
            id,
            name: name.clone(),
        });
        ids.push(id);
    }
    Ok((edits, ids))
}

/// Which memtables [`Db::freeze_full_memtables`] freezes, if not empty, besides the full
/// ones.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AlsoFreeze<'a> {
    None,
    Every,
    Trees(&'a [TreeId]),
    /// The largest active memtable: the write buffer is over its budget.
    Largest,
    /// Every active memtable larger than the minimum size, whose tree goes back to the
    /// minimum: writes have stopped, and a burst's memory is given back (`write_buffer`).
    Idle,
}

/// A registered snapshot: reads through it see the database as of `seq`.
pub struct Snapshot {
    seq: u64,
    shared: Arc<Shared>,
}

impl Snapshot {
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snapshots = self.shared.snapshots.lock();
        if let Some(count) = snapshots.get_mut(&self.seq) {
            *count -= 1;
            if *count == 0 {
                snapshots.remove(&self.seq);
            }
        }
    }
}

/// An open LSM database.
pub struct Db {
    pub(crate) shared: Arc<Shared>,
    pub(crate) wal: Arc<Wal<WriteBatch, MemtableApplier>>,
    flusher: Option<JoinHandle<()>>,
    compactors: Vec<JoinHandle<()>>,
    // Held for the database's lifetime; released (file unlocked) on drop.
    _lock: Box<dyn DirLock>,
}

impl Db {
    /// Opens (creating if needed) the database in `dir` on the real file system.
    pub fn open(dir: &Path, options: DbOptions) -> Result<Db, DbError> {
        Db::open_with_fs(shoal_vfs::RealFs::shared(), dir, options)
    }

    /// Opens the database in `dir` through `fs`.
    ///
    /// Recovery: the manifest names the SSTables and each tree's flushed sequence number;
    /// files it does not name are leftovers of an interrupted flush and are removed; then
    /// every WAL record is replayed into memtables, skipping entries a tree already flushed,
    /// and those memtables are flushed to L0 before the open returns.
    pub fn open_with_fs(fs: Fs, dir: &Path, options: DbOptions) -> Result<Db, DbError> {
        fs.create_dir_all(dir)
            .map_err(|e| DbError::io(format!("creating {}", dir.display()), e))?;
        let lock = fs
            .lock(&dir.join(LOCK_FILE_NAME))
            .map_err(|e| DbError::io("locking the data directory", e))?;
        let (manifest, version) = Manifest::open(Arc::clone(&fs), dir)?;
        // Only files the durable version names are ours; anything else is the debris of a
        // flush or compaction that crashed before its version was installed.
        manifest::remove_obsolete_files(&fs, dir, &version, &manifest.current_file_name())?;

        let files = FileRegistry::new(&options);
        let mut tables = std::collections::HashMap::new();
        for number in version.live_file_numbers() {
            let table = open_table(&fs, dir, number, options.bloom_prefix, &files)?;
            tables.insert(number, table);
        }
        let write_buffer = WriteBuffer::new(&options);
        let memtables = version
            .trees
            .keys()
            .map(|id| {
                let tree = TreeMemtables::new(write_buffer.memtable(), write_buffer.min_bytes());
                (*id, tree)
            })
            .collect();
        // Sequence numbers must never go backwards, even if every WAL segment was released:
        // continue after the largest one the manifest or any SSTable knows.
        let seq_floor = version
            .trees
            .values()
            .flat_map(|t| t.levels.iter().flatten())
            .map(|f| f.seq_max)
            .chain([version.last_seq])
            .max()
            .unwrap_or(0);
        let next_file_number = version.next_file_number;
        let version = Arc::new(version);
        // Sized by the largest memtable, not the current ones: see `effective_policy`.
        let policy = compact::effective_policy(&options.compaction, write_buffer.max_bytes());
        let superversion = Arc::new(SuperVersion::new(
            Arc::clone(&version),
            memtables,
            tables,
            &policy,
        ));
        let shared = Arc::new(Shared {
            fs: Arc::clone(&fs),
            dir: dir.to_path_buf(),
            options: options.clone(),
            superversion: RwLock::new(Arc::clone(&superversion)),
            visible_seq: AtomicU64::new(0),
            manifest: Mutex::new(manifest),
            next_file_number: AtomicU64::new(next_file_number),
            snapshots: Mutex::new(BTreeMap::new()),
            background_error: Mutex::new(None),
            out_of_space: Default::default(),
            files,
            counters: Counters::default(),
            compaction: Scheduler::default(),
            policy,
            write_buffer,
            pacer: WritePacer::default(),
            flush_wakeup: Condvar::new(),
            flush_state: Mutex::new(FlushState::default()),
            flush_running: Mutex::new(()),
            shutting_down: AtomicBool::new(false),
        });

        let wal_options = WalOptions {
            durability: options.durability,
            segment_size_bytes: options.wal_segment_size_bytes,
            preallocate_segments: options.wal_preallocate,
            map_segments: options.wal_map_segments,
            truncate_at_corruption: options.truncate_wal_at_corruption,
            recycled_segments_max: wal_recycled_segments_max(&options),
            ..WalOptions::default()
        };
        let applier = MemtableApplier {
            shared: Arc::clone(&shared),
        };
        let wal = std::thread::scope(|scope| {
            let mut inserter = ReplayInserter::new(scope);
            let mut key_scratch = Vec::new();
            let opened = Wal::open(
                Arc::clone(&fs),
                &dir.join(WAL_DIR_NAME),
                wal_options,
                applier,
                // The WAL's floor is the first sequence number it may issue; `seq_floor` was
                // issued already (an SSTable may hold it, or metadata name it).
                seq_floor + 1,
                |record: shoal_wal::ReplayRecord<'_>| -> Result<(), DbError> {
                    replay_record(
                        &superversion,
                        &version,
                        record,
                        &mut inserter,
                        &mut key_scratch,
                    )
                },
            );
            // Every replayed entry is in its memtable before the database is used.
            let inserted = inserter.finish();
            let wal = opened?;
            inserted?;
            Ok::<_, DbError>(wal)
        })?;
        shared
            .visible_seq
            .store(wal.last_seq().max(seq_floor), Ordering::Release);
        let wal = Arc::new(wal);
        // Replay put everything logged since each tree's last flush into one memtable per
        // tree, however much that is (up to the WAL's cap, 256 MiB by default), while the
        // write path's memtables stay under half the write buffer's budget and their key
        // filters are sized for that. Left there, every read after a crash would search it
        // until the flusher caught up (slower than the same reads after a clean start: bench
        // `recovery_reads`), and the first writes would wait for the flusher to give back
        // the budget it overspends. So it goes to L0 before the open returns, and the compaction
        // threads, started below, find the new files in the version they start from.
        flush_replayed(&shared, &wal)?;

        let flusher = if options.background_flush {
            let shared = Arc::clone(&shared);
            let wal = Arc::clone(&wal);
            Some(
                std::thread::Builder::new()
                    .name("shoal-flush".into())
                    .spawn(move || flusher_loop(&shared, &wal))
                    .map_err(|e| DbError::io("starting the flush thread", e))?,
            )
        } else {
            None
        };
        let mut db = Db {
            shared,
            wal,
            flusher,
            compactors: Vec::new(),
            _lock: lock,
        };
        // On failure `db` is dropped, which stops the threads already started.
        let threads_always = options.compaction_threads.min(COMPACTION_THREADS_MAX);
        let threads = if threads_always == 0 {
            0
        } else {
            options
                .compaction_threads_backlog
                .clamp(threads_always, COMPACTION_THREADS_MAX)
        };
        for index in 0..threads {
            let shared = Arc::clone(&db.shared);
            let only_under_backlog = index >= threads_always;
            let handle = std::thread::Builder::new()
                .name(format!("shoal-compact-{index}"))
                .spawn(move || compact::compaction_loop(&shared, only_under_backlog))
                .map_err(|e| DbError::io("starting a compaction thread", e))?;
            db.compactors.push(handle);
        }
        // The recovered shape, replayed files included, may already call for compaction.
        db.shared.compaction.request();
        Ok(db)
    }

    /// Commits `batch` atomically; returns the sequence number of its first entry (entry `i`
    /// has `first + i`, which ends the key of a sequence-suffixed put). When this returns Ok
    /// the batch is durable per the durability mode and visible to reads.
    pub fn write(&self, batch: WriteBatch) -> Result<u64, DbError> {
        if let Some(reason) = self.shared.background_error.lock().clone() {
            return Err(DbError::Poisoned(reason));
        }
        if batch.is_empty() {
            return Ok(self.shared.visible_seq.load(Ordering::Acquire));
        }
        self.make_room(&batch)?;
        self.slow_down_for_compaction(&batch);
        let payload_bytes = batch.payload().len() as u64;
        // The batch moves into the WAL's queue: no copy of the payload on the write path.
        let first_seq = match self.wal.commit(batch) {
            Ok(first_seq) => first_seq,
            Err(error) => {
                // The log refused this commit and is as it was: the next commit is the retry.
                if error.is_no_space() {
                    self.shared.out_of_space.failed(Work::Commit, &error);
                }
                return Err(error.into());
            }
        };
        self.shared.out_of_space.succeeded(Work::Commit);
        Counters::add(&self.shared.counters.user_bytes_written, payload_bytes);
        Ok(first_seq)
    }

    /// Back-pressure from the compaction backlog (module docs of `compact`): paces the write
    /// to the rate the backlog allows (`pacer`), sleeping at most one second, and records
    /// the sleep. Only with background compaction, which is what drains the backlog.
    fn slow_down_for_compaction(&self, batch: &WriteBatch) {
        if self.compactors.is_empty() {
            return;
        }
        let Some(rate) = write_rate(&self.current(), batch.trees()) else {
            return;
        };
        let bytes = batch.payload().len() as u64;
        let delay = self.shared.pacer.admit(Instant::now(), bytes, rate);
        if delay.is_zero() {
            return;
        }
        // Make sure someone is working on the backlog we are waiting for (only when this
        // writer sleeps: the request takes the scheduler's lock).
        self.shared.compaction.request();
        self.shared.counters.record_stall(delay);
        std::thread::sleep(delay);
    }

    /// Before a write: freezes full memtables, and waits (bounded) while the flusher is too
    /// far behind, so unflushed memory stays bounded: per tree (too many frozen memtables)
    /// and in all (the write buffer's budget, `write_buffer`).
    fn make_room(&self, batch: &WriteBatch) -> Result<(), DbError> {
        let write_buffer = &self.shared.write_buffer;
        let needs_freeze = {
            let sv = self.shared.superversion.read();
            batch.trees().iter().any(|tree| {
                sv.memtables
                    .get(tree)
                    .is_some_and(|m| m.active.size_bytes() >= m.target_bytes)
            }) || self.wal.live_bytes() > self.shared.options.wal_live_bytes_max
        };
        if needs_freeze {
            self.freeze_full_memtables(AlsoFreeze::None);
        }
        // Over the budget with nothing being flushed: flush the largest memtable, whose
        // memory the flusher then frees. (Over it with nothing to freeze, the memory is
        // held by readers of flushed memtables, which no flush frees: go on.)
        if write_buffer.is_over_budget() && !self.current().flush_pending() {
            self.freeze_full_memtables(AlsoFreeze::Largest);
        }
        // Back-pressure: wait for the flusher while any touched tree has too many frozen
        // memtables, or the budget is spent and frozen memtables wait for flush. Bounded
        // waits, re-checking background errors each time.
        loop {
            let backlog = {
                let sv = self.shared.superversion.read();
                batch.trees().iter().any(|tree| {
                    sv.memtables
                        .get(tree)
                        .is_some_and(|m| m.immutables.len() >= IMMUTABLES_PER_TREE_MAX)
                }) || (write_buffer.is_over_budget() && sv.flush_pending())
            };
            if !backlog || self.flusher.is_none() {
                return Ok(());
            }
            if let Some(reason) = self.shared.background_error.lock().clone() {
                return Err(DbError::Poisoned(reason));
            }
            // The flush this write waits for cannot get disk space: answer now rather than
            // hold the writer until an operator frees some.
            if self.shared.out_of_space.is_failing(Work::Flush) {
                let reason = self.shared.out_of_space.reason().unwrap_or_default();
                return Err(DbError::NoSpace(reason));
            }
            let mut state = self.shared.flush_state.lock();
            let seen = state.completed;
            self.shared.flush_wakeup.wait_while_for(
                &mut state,
                |s| s.completed == seen,
                Duration::from_millis(100),
            );
        }
    }

    /// Freezes every active memtable that is over its limit, plus the non-empty ones `also`
    /// names, plus — when the WAL is over its cap — the trees pinning the oldest WAL data.
    /// Runs under `Wal::exclusive` so no batch is half-applied when frozen.
    pub(crate) fn freeze_full_memtables(&self, also: AlsoFreeze<'_>) {
        freeze_memtables(&self.shared, &self.wal, also);
    }

    /// Freezes every non-empty memtable and flushes all frozen memtables now, on this thread.
    pub fn flush_all(&self) -> Result<(), DbError> {
        self.freeze_full_memtables(AlsoFreeze::Every);
        while flush_one(&self.shared, &self.wal)? {}
        Ok(())
    }

    /// The sequence number reads currently see.
    pub fn visible_seq(&self) -> u64 {
        self.shared.visible_seq.load(Ordering::Acquire)
    }

    /// Registers a snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshots = self.shared.snapshots.lock();
        let seq = self.shared.visible_seq.load(Ordering::Acquire);
        *snapshots.entry(seq).or_insert(0) += 1;
        Snapshot {
            seq,
            shared: Arc::clone(&self.shared),
        }
    }

    /// Registers a snapshot at an older sequence number `seq`, for point-in-time reads.
    ///
    /// It reads what `seq` saw only if compaction kept that history: the caller must hold
    /// `seq` at or above the tree's retention floor ([`crate::VersionRetention`]) from before
    /// this call until after it, or have had a live snapshot at `seq` all along. Refused for
    /// a number not yet visible.
    pub fn snapshot_at(&self, seq: u64) -> Result<Snapshot, DbError> {
        let mut snapshots = self.shared.snapshots.lock();
        let visible = self.shared.visible_seq.load(Ordering::Acquire);
        if seq > visible {
            return Err(DbError::SnapshotInFuture {
                requested: seq,
                visible,
            });
        }
        *snapshots.entry(seq).or_insert(0) += 1;
        Ok(Snapshot {
            seq,
            shared: Arc::clone(&self.shared),
        })
    }

    /// Sequence numbers of live snapshots, ascending (compaction keeps what they can see).
    pub fn live_snapshots(&self) -> Vec<u64> {
        self.shared.snapshots.lock().keys().copied().collect()
    }

    /// The current superversion (what reads use).
    pub(crate) fn current(&self) -> Arc<SuperVersion> {
        self.shared.superversion.read().clone()
    }

    /// Creates a tree named `name` (durably) and returns its id.
    pub fn create_tree(&self, name: &str) -> Result<TreeId, DbError> {
        let ids = self.create_trees_with(&[name.to_string()], |_| Vec::new())?;
        Ok(ids[0])
    }

    /// Creates several trees and applies `extra(ids)` edits (e.g. catalog metadata naming
    /// them) in one durable version change, so the trees and what describes them appear
    /// together or not at all. Returns the new ids in the order of `names`.
    pub fn create_trees_with(
        &self,
        names: &[String],
        extra: impl FnOnce(&[TreeId]) -> Vec<VersionEdit>,
    ) -> Result<Vec<TreeId>, DbError> {
        self.change_version(|version| {
            let (mut edits, ids) = create_tree_edits(version, names)?;
            edits.extend(extra(&ids));
            Ok((edits, ids))
        })
    }

    /// Drops a tree: durably forgets it and removes its files (no rewriting).
    pub fn drop_tree(&self, id: TreeId, extra: Vec<VersionEdit>) -> Result<(), DbError> {
        self.drop_trees_with(&[id], extra)
    }

    /// Drops several trees and applies `extra` edits in one durable version change; the
    /// trees' files are then removed (no rewriting).
    ///
    /// `change_version` marks the files obsolete once the drop is durable, and each is
    /// removed when the last reader (or a running compaction) lets go of it. Only these
    /// files, never a sweep of the directory: a flush of another tree may be writing a file
    /// the version does not name yet.
    pub fn drop_trees_with(&self, ids: &[TreeId], extra: Vec<VersionEdit>) -> Result<(), DbError> {
        self.change_version(|version| {
            let mut edits = Vec::new();
            for id in ids {
                if !version.trees.contains_key(id) {
                    return Err(DbError::UnknownTree(*id));
                }
                edits.push(VersionEdit::DropTree { id: *id });
            }
            edits.extend(extra);
            Ok((edits, ()))
        })
    }

    /// Applies metadata-only edits durably (e.g. a catalog change).
    pub fn apply_edits(&self, edits: Vec<VersionEdit>) -> Result<(), DbError> {
        self.change_version(|_| Ok((edits, ())))
    }

    /// Looks a tree up by name.
    pub fn tree_id(&self, name: &str) -> Option<TreeId> {
        let sv = self.current();
        sv.version
            .trees
            .iter()
            .find(|(_, t)| t.name == name)
            .map(|(id, _)| *id)
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The file system the database lives on.
    pub fn fs(&self) -> &Fs {
        &self.shared.fs
    }

    /// The current durable version (trees, files, metadata).
    pub fn version(&self) -> Arc<Version> {
        Arc::clone(&self.current().version)
    }

    /// Computes edits from the current version, installs the result durably and publishes it
    /// in a new superversion (adding/removing tree memtables and tables as needed).
    fn change_version<R>(
        &self,
        make_edits: impl FnOnce(&Version) -> Result<(Vec<VersionEdit>, R), DbError>,
    ) -> Result<R, DbError> {
        self.change_version_adding(Vec::new(), make_edits)
    }

    /// [`Db::change_version`] that also publishes `tables`, opened tables of files the edits
    /// add, in the same superversion.
    pub(crate) fn change_version_adding<R>(
        &self,
        tables: Vec<(u64, Arc<Table>)>,
        make_edits: impl FnOnce(&Version) -> Result<(Vec<VersionEdit>, R), DbError>,
    ) -> Result<R, DbError> {
        // Tree creation and removal must not race a batch being applied (a batch for a tree
        // must land in the memtables of the superversion that knows the tree).
        self.wal.exclusive(|| {
            let mut manifest = self.shared.manifest.lock();
            let current = self.current();
            let (edits, result) = make_edits(&current.version)?;
            let mut edits = edits;
            edits.push(VersionEdit::SetNextFileNumber(
                self.shared.next_file_number.load(Ordering::Acquire),
            ));
            let mut next = current.version.apply(&edits)?;
            // Metadata stored with the change may name sequence numbers up to the visible
            // one (a stream shard ends there): the durable `last_seq` covers them, so a
            // restart that lost unsynced WAL records (durability none or interval) continues
            // past them rather than issuing them again.
            let visible = self.shared.visible_seq.load(Ordering::Acquire);
            if next.last_seq < visible {
                next = next.apply(&[VersionEdit::SetLastSeq(visible)])?;
            }
            manifest.install(&next)?;
            let mut guard = self.shared.superversion.write();
            let mut sv = (**guard).clone();
            sv.memtables.retain(|id, _| next.trees.contains_key(id));
            let write_buffer = &self.shared.write_buffer;
            for id in next.trees.keys() {
                sv.memtables.entry(*id).or_insert_with(|| {
                    TreeMemtables::new(write_buffer.memtable(), write_buffer.min_bytes())
                });
            }
            let live = next.live_file_numbers();
            let obsolete: Vec<u64> = sv
                .tables
                .keys()
                .filter(|number| !live.contains(number))
                .copied()
                .collect();
            // The new version is durable: nothing will need these files after their readers.
            self.shared.files.mark_obsolete(obsolete);
            sv.tables.retain(|number, _| live.contains(number));
            sv.tables.extend(tables);
            sv.set_version(Arc::new(next), &self.shared.policy);
            *guard = Arc::new(sv);
            Ok(result)
        })
    }

    /// Forces an fdatasync of the WAL now.
    pub fn sync_wal(&self) -> Result<(), DbError> {
        Ok(self.wal.sync()?)
    }

    /// Loses what a power cut would, for a process about to end itself on purpose: the WAL's
    /// bytes not yet fdatasynced are zeroed, and no write, flush or WAL sync can start after
    /// (they wait for the WAL forever). Nothing else needs dropping: SSTables and manifests
    /// are synced before a version names them, and files no version names are removed at
    /// the next open. Returns the WAL bytes lost.
    pub fn lose_unsynced_writes(&self) -> Result<u64, DbError> {
        Ok(self.wal.lose_unsynced()?)
    }

    /// WAL statistics (commits, groups, syncs, bytes).
    pub fn wal_stats(&self) -> shoal_wal::WalStats {
        self.wal.stats()
    }

    /// Bytes in WAL segments not yet released.
    pub fn wal_live_bytes(&self) -> u64 {
        self.wal.live_bytes()
    }

    /// Why the disk is full for the database, if it is: a commit was refused or a flush or
    /// compaction could not write its files, and they are being retried; writes resume by
    /// themselves once space is freed (`out_of_space.rs`). Cleared when the work succeeds.
    pub fn out_of_space(&self) -> Option<String> {
        self.shared.out_of_space.reason()
    }

    /// Why writes are refused for good (until a restart), if they are.
    pub fn poisoned(&self) -> Option<String> {
        self.shared
            .background_error
            .lock()
            .clone()
            .or_else(|| self.wal.poisoned())
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.shared.shutting_down.store(true, Ordering::Release);
        self.shared.request_flush();
        self.shared.compaction.request();
        if let Some(handle) = self.flusher.take() {
            // A panicked flusher has nothing left to clean up; the WAL still holds its data.
            let _ = handle.join();
        }
        for handle in self.compactors.drain(..) {
            // A compaction stopped part-way leaves only unreferenced files (removed at open).
            let _ = handle.join();
        }
        // Interval and none modes: push what was written to disk before the handle goes.
        // An error here cannot be reported; the WAL poisons itself and recovery replays.
        let _ = self.wal.sync();
    }
}

/// Replays one WAL record into the recovering superversion's memtables. Entry `i` gets
/// `first_seq + i`, as when the batch was committed, so a sequence-suffixed key comes out
/// byte for byte as `apply_payload` made it (`key_scratch` holds it while it is copied).
fn replay_record<'scope, 'm: 'scope>(
    sv: &'m SuperVersion,
    version: &Version,
    record: shoal_wal::ReplayRecord<'_>,
    inserter: &mut ReplayInserter<'scope, '_, 'm>,
    key_scratch: &mut Vec<u8>,
) -> Result<(), DbError> {
    let mut count = 0u64;
    for (index, entry) in BatchEntries::new(record.payload).enumerate() {
        let entry = entry?;
        count += 1;
        let seq = record.first_seq + index as u64;
        // Skip what the tree already has in SSTables, and entries of dropped trees.
        let Some(tree_version) = version.trees.get(&entry.tree) else {
            continue;
        };
        if seq <= tree_version.flushed_seq {
            continue;
        }
        if let Some(tree) = sv.memtables.get(&entry.tree) {
            let key = entry.key_at(seq, key_scratch);
            let prepared = tree.active.entry(key, seq, entry.kind, entry.value);
            inserter.push(&tree.active, prepared);
        }
    }
    if count != record.seq_count {
        return Err(DbError::Batch(crate::batch::BatchError::Malformed {
            offset: 0,
            detail: "entry count differs from the WAL record's sequence count",
        }));
    }
    Ok(())
}

/// Entries handed to an inserter thread at once: enough that channel traffic is small next
/// to the skiplist inserts, and the size below which a replay never starts threads.
const REPLAY_CHUNK_ENTRIES: usize = 1024;
/// Chunks waiting for each inserter thread; bounds what a slow inserter holds up.
const REPLAY_QUEUED_CHUNKS_MAX: usize = 4;
/// Most threads inserting replayed entries.
const REPLAY_INSERTERS_MAX: usize = 4;

/// Replayed entries, each with the memtable it goes into.
type ReplayChunk<'m> = Vec<(&'m Memtable, MemtableEntry)>;

struct InserterThread<'scope, 'm> {
    chunks: SyncSender<ReplayChunk<'m>>,
    handle: ScopedJoinHandle<'scope, ()>,
}

/// Puts replayed WAL entries into memtables. Replay is bound by skiplist inserts, so once a
/// replay proves long (a full chunk) the inserts move to threads while this thread goes on
/// reading, checking and decoding the log. Entries have distinct sequence numbers and so
/// distinct keys: their inserts commute, and any thread may insert any entry in any order.
/// A log that fails to replay fails the open, so entries inserted before the failure do not
/// matter, as before.
struct ReplayInserter<'scope, 'env, 'm> {
    scope: &'scope Scope<'scope, 'env>,
    chunk: ReplayChunk<'m>,
    threads: Vec<InserterThread<'scope, 'm>>,
    threads_started: bool,
    next_thread: usize,
}

impl<'scope, 'env, 'm: 'scope> ReplayInserter<'scope, 'env, 'm> {
    fn new(scope: &'scope Scope<'scope, 'env>) -> Self {
        ReplayInserter {
            scope,
            chunk: Vec::new(),
            threads: Vec::new(),
            threads_started: false,
            next_thread: 0,
        }
    }

    fn push(&mut self, memtable: &'m Memtable, entry: MemtableEntry) {
        self.chunk.push((memtable, entry));
        if self.chunk.len() >= REPLAY_CHUNK_ENTRIES {
            self.dispatch();
        }
    }

    fn dispatch(&mut self) {
        let chunk = std::mem::replace(&mut self.chunk, Vec::with_capacity(REPLAY_CHUNK_ENTRIES));
        if !self.threads_started {
            self.threads_started = true;
            self.start_threads();
        }
        let Some(thread) = self.threads.get(self.next_thread) else {
            insert_replay_chunk(chunk);
            return;
        };
        self.next_thread = (self.next_thread + 1) % self.threads.len();
        // A thread that is gone has panicked; `finish` reports it. Insert here meanwhile.
        if let Err(SendError(chunk)) = thread.chunks.send(chunk) {
            insert_replay_chunk(chunk);
        }
    }

    /// One inserter per core; none on a single core, where they would only take turns
    /// with this thread. If a thread cannot be started, this thread inserts instead.
    fn start_threads(&mut self) {
        let cores = std::thread::available_parallelism().map_or(1, |count| count.get());
        if cores < 2 {
            return;
        }
        for index in 0..cores.min(REPLAY_INSERTERS_MAX) {
            let (chunks, received) = sync_channel::<ReplayChunk<'m>>(REPLAY_QUEUED_CHUNKS_MAX);
            let spawned = std::thread::Builder::new()
                .name(format!("shoal-replay-{index}"))
                .spawn_scoped(self.scope, move || {
                    for chunk in received {
                        insert_replay_chunk(chunk);
                    }
                });
            match spawned {
                Ok(handle) => self.threads.push(InserterThread { chunks, handle }),
                Err(error) => {
                    tracing::warn!(%error, "could not start a WAL replay thread; inserting on fewer");
                    break;
                }
            }
        }
    }

    /// Inserts what is left and waits until every thread has inserted all it was given.
    fn finish(mut self) -> Result<(), DbError> {
        insert_replay_chunk(std::mem::take(&mut self.chunk));
        let mut panicked = false;
        for thread in self.threads {
            drop(thread.chunks);
            panicked |= thread.handle.join().is_err();
        }
        if panicked {
            return Err(DbError::io(
                "replaying the write-ahead log",
                std::io::Error::other("a memtable insert thread panicked"),
            ));
        }
        Ok(())
    }
}

fn insert_replay_chunk(chunk: ReplayChunk<'_>) {
    for (memtable, entry) in chunk {
        memtable.insert_entry(entry);
    }
}

/// [`Db::freeze_full_memtables`], for the handle and the flusher alike.
fn freeze_memtables(shared: &Shared, wal: &Wal<WriteBatch, MemtableApplier>, also: AlsoFreeze<'_>) {
    let wal_over_cap = wal.live_bytes() > shared.options.wal_live_bytes_max;
    let write_buffer = &shared.write_buffer;
    let frozen_any = wal.exclusive(|| {
        let mut guard = shared.superversion.write();
        let oldest_pinning = if wal_over_cap {
            guard.unflushed_seq_min()
        } else {
            None
        };
        let largest = match also {
            AlsoFreeze::Largest => guard
                .memtables
                .iter()
                .max_by_key(|(_, tree)| tree.active.size_bytes())
                .map(|(id, _)| *id),
            _ => None,
        };
        let frozen_at_seq = shared.visible_seq.load(Ordering::Acquire);
        let now = Instant::now();
        let mut next = (**guard).clone();
        let mut changed = false;
        for (id, tree) in next.memtables.iter_mut() {
            let full = tree.active.size_bytes() >= tree.target_bytes;
            let pins_oldest = oldest_pinning.is_some() && tree.active.seq_min() == oldest_pinning;
            let larger_than_min = tree.active.size_bytes() > write_buffer.min_bytes();
            let named = match also {
                AlsoFreeze::None => false,
                AlsoFreeze::Every => true,
                AlsoFreeze::Trees(named) => named.contains(id),
                AlsoFreeze::Largest => largest == Some(*id),
                AlsoFreeze::Idle => larger_than_min,
            };
            let wanted = full || pins_oldest || named;
            if matches!(also, AlsoFreeze::Idle) && tree.target_bytes != write_buffer.min_bytes() {
                // Writes stopped: the next burst starts small again.
                tree.target_bytes = write_buffer.min_bytes();
                changed = true;
            } else if full && !tree.active.is_empty() {
                // Only a memtable that filled up says how fast its tree is written.
                let filled_in = tree.active.filling_for(now).unwrap_or_default();
                tree.target_bytes = write_buffer.next_size(tree.target_bytes, filled_in);
            }
            if !wanted || tree.active.is_empty() {
                continue;
            }
            let frozen = std::mem::replace(&mut tree.active, Arc::new(write_buffer.memtable()));
            tree.immutables.push(Immutable {
                memtable: frozen,
                frozen_at_seq,
            });
            changed = true;
        }
        if changed {
            *guard = Arc::new(next);
        }
        changed
    });
    if frozen_any {
        shared.request_flush();
    }
}

fn flusher_loop(shared: &Arc<Shared>, wal: &Wal<WriteBatch, MemtableApplier>) {
    let mut seen_requests = 0;
    // The sequence number at the last look: unchanged after `IDLE_AFTER` means no writes.
    let mut seen_seq = shared.visible_seq.load(Ordering::Acquire);
    // The sequence number at the last trim: one trim per quiet spell.
    let mut trimmed_at_seq = None;
    loop {
        let mut idle = false;
        {
            let mut state = shared.flush_state.lock();
            while state.requests == seen_requests && !shared.shutting_down.load(Ordering::Acquire) {
                let timed_out = shared
                    .flush_wakeup
                    .wait_for(&mut state, write_buffer::IDLE_AFTER)
                    .timed_out();
                if timed_out {
                    let seq = shared.visible_seq.load(Ordering::Acquire);
                    if seq == seen_seq && trimmed_at_seq != Some(seq) {
                        idle = true;
                        break;
                    }
                    seen_seq = seq;
                }
            }
            seen_requests = state.requests;
        }
        if shared.shutting_down.load(Ordering::Acquire) {
            return;
        }
        if idle {
            // Writes have stopped: flush what a burst left in large memtables. Nothing to
            // do (the common idle case) freezes nothing and requests no flush.
            freeze_memtables(shared, wal, AlsoFreeze::Idle);
            crate::arena::release_idle_chunks();
            trimmed_at_seq = Some(seen_seq);
            continue;
        }
        let mut backoff = Backoff::new();
        loop {
            match flush_one(shared, wal) {
                Ok(true) => {
                    shared.out_of_space.succeeded(Work::Flush);
                    continue;
                }
                Ok(false) => break,
                // Nothing durable changed and the memtable is still there: the same flush,
                // into a new file, once there is room (`out_of_space.rs`).
                Err(error) if error.is_no_space() => {
                    shared.out_of_space.failed(Work::Flush, &error);
                    if !shared.sleep_before_retry(backoff.next_wait()) {
                        return;
                    }
                }
                Err(error) => {
                    shared.set_background_error(error.to_string());
                    return;
                }
            }
        }
    }
}

/// Writes what WAL replay left in memtables to L0 SSTables, on the opening thread (why: see
/// `Db::open_with_fs`). Each flush first syncs the log, as every flush does, and the WAL's
/// open has synced the replayed segments, so a power cut between two trees' flushes keeps
/// the other trees' halves of their batches in the log. A disk too full for it does not
/// fail the open, which an operator needs in order to free space: the memtables stay
/// frozen, reads search them meanwhile, and the flusher (or the next `flush_all`) retries.
fn flush_replayed(
    shared: &Arc<Shared>,
    wal: &Wal<WriteBatch, MemtableApplier>,
) -> Result<(), DbError> {
    freeze_memtables(shared, wal, AlsoFreeze::Every);
    loop {
        match flush_one(shared, wal) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(error) if error.is_no_space() => {
                shared.out_of_space.failed(Work::Flush, &error);
                return Ok(());
            }
            Err(error) => return Err(error),
        }
    }
}

/// Flushes the oldest frozen memtable of some tree to an L0 SSTable. Returns whether there
/// was one.
pub(crate) fn flush_one(
    shared: &Arc<Shared>,
    wal: &Wal<WriteBatch, MemtableApplier>,
) -> Result<bool, DbError> {
    let _flushing = shared.flush_running.lock();
    let picked = {
        let sv = shared.superversion.read();
        sv.memtables
            .iter()
            .filter_map(|(id, mems)| mems.immutables.first().map(|imm| (*id, imm.clone())))
            .min_by_key(|(_, imm)| imm.frozen_at_seq)
    };
    let Some((tree, immutable)) = picked else {
        return Ok(false);
    };

    // Whatever the durability mode, the WAL must be durable up to this memtable's last entry
    // before the SSTable becomes part of the version: otherwise a power loss could keep this
    // tree's half of a batch (in the SSTable) and lose the other trees' half (unsynced WAL),
    // leaving a partial batch and a hole in the recovered prefix.
    wal.sync()?;
    let file = if immutable.memtable.is_empty() {
        None
    } else {
        Some(write_sstable(shared, &immutable.memtable)?)
    };

    let installed_last_seq = {
        let mut manifest = shared.manifest.lock();
        let current = shared.superversion.read().clone();
        if !current.version.trees.contains_key(&tree) {
            // The tree was dropped while we wrote; the file is unreferenced: it goes when its
            // table is dropped at the end of this block (or, after a crash, at the next open).
            if let Some((meta, _)) = &file {
                shared.files.mark_obsolete([meta.number]);
            }
            drop(manifest);
            release_wal(shared, wal, u64::MAX)?;
            return Ok(true);
        }
        let last_seq = shared.visible_seq.load(Ordering::Acquire);
        let mut edits = Vec::new();
        let mut table = None;
        if let Some((meta, opened)) = file {
            Counters::add(&shared.counters.flush_bytes_written, meta.size_bytes);
            edits.push(VersionEdit::AddFile {
                tree,
                level: 0,
                file: meta,
            });
            table = Some(opened);
        }
        edits.push(VersionEdit::SetFlushedSeq {
            tree,
            seq: immutable.frozen_at_seq,
        });
        edits.push(VersionEdit::SetLastSeq(
            last_seq.max(current.version.last_seq),
        ));
        edits.push(VersionEdit::SetNextFileNumber(
            shared.next_file_number.load(Ordering::Acquire),
        ));
        let next = current.version.apply(&edits)?;
        if let Err(error) = manifest.install(&next) {
            if let (ManifestError::NoSpace { .. }, Some((number, _))) = (&error, &table) {
                // The version is unchanged (the install never switched CURRENT): the new
                // file is named by nothing, and goes with its table.
                shared.files.mark_obsolete([*number]);
            }
            return Err(error.into());
        }
        let installed_last_seq = next.last_seq;

        let mut guard = shared.superversion.write();
        let mut sv = (**guard).clone();
        if let Some(mems) = sv.memtables.get_mut(&tree) {
            // Remove exactly the memtable we flushed (it is the oldest, but match by identity
            // rather than assume it).
            mems.immutables
                .retain(|imm| !Arc::ptr_eq(&imm.memtable, &immutable.memtable));
        }
        if let Some(table) = table {
            sv.tables.insert(table.0, table.1);
        }
        sv.set_version(Arc::new(next), &shared.policy);
        *guard = Arc::new(sv);
        installed_last_seq
    };
    {
        let mut state = shared.flush_state.lock();
        state.completed += 1;
        shared.flush_wakeup.notify_all();
    }
    // A new L0 file may make a compaction due.
    shared.compaction.request();
    release_wal(shared, wal, installed_last_seq)?;
    Ok(true)
}

/// Releases WAL segments holding only data every tree has flushed. Never beyond the
/// manifest's durable `last_seq`: after a restart with every segment gone, sequence numbers
/// continue from there, so they must already cover whatever the released segments held.
fn release_wal(
    shared: &Shared,
    wal: &Wal<WriteBatch, MemtableApplier>,
    durable_last_seq: u64,
) -> Result<(), DbError> {
    let visible = shared.visible_seq.load(Ordering::Acquire);
    let sv = shared.superversion.read().clone();
    let through = match sv.unflushed_seq_min() {
        Some(seq) => seq.saturating_sub(1),
        None => visible,
    }
    .min(durable_last_seq)
    .min(sv.version.last_seq);
    wal.release_through(through)?;
    Ok(())
}

/// Writes a frozen memtable to a new SSTable, durably (file and directory synced).
fn write_sstable(
    shared: &Shared,
    memtable: &Arc<Memtable>,
) -> Result<(FileMeta, (u64, Arc<Table>)), DbError> {
    let number = shared.next_file_number.fetch_add(1, Ordering::AcqRel);
    let path = shared.dir.join(manifest::sst_file_name(number));
    let properties = match build_sstable(shared, memtable, &path) {
        Ok(properties) => properties,
        Err(error) => {
            // Named by no version: removed now, so that a full disk gets its room back.
            shared
                .files
                .remove_unnamed(&shared.fs, &shared.dir, &[number]);
            return Err(error);
        }
    };
    let meta = file_meta(number, &properties);
    let table = open_table(
        &shared.fs,
        &shared.dir,
        number,
        shared.options.bloom_prefix,
        &shared.files,
    )?;
    Ok((meta, (number, table)))
}

/// Writes `memtable` into a new SSTable at `path`, file and directory synced.
fn build_sstable(
    shared: &Shared,
    memtable: &Arc<Memtable>,
    path: &std::path::Path,
) -> Result<crate::sstable::TableProperties, DbError> {
    use shoal_compaction::InternalIterator;

    let file = shared
        .files
        .create_table(&shared.fs, path)
        .map_err(|e| DbError::io(format!("creating {}", path.display()), e))?;
    let mut builder = TableBuilder::new(
        file,
        TableOptions {
            block_size_bytes: shared.options.block_size_bytes,
            prefix: shared.options.bloom_prefix,
            ..TableOptions::default()
        },
    );
    let mut iter = memtable.iter();
    iter.seek_to_first()?;
    while iter.valid() {
        builder.add(iter.key(), iter.value())?;
        iter.next()?;
    }
    let properties = builder.finish()?;
    shared
        .fs
        .sync_dir(&shared.dir)
        .map_err(|e| DbError::io(format!("syncing {}", shared.dir.display()), e))?;
    Ok(properties)
}

/// A key's newest visible value, searching newest data first, read by `read_value` where it
/// lies (memtable node, mapped SSTable block, or, if `copy_blocks`, the one copy of the block
/// made for this read, `DbOptions::point_reads`): a caller that decodes it needs no copy.
pub(crate) fn lookup<R>(
    sv: &SuperVersion,
    tree: TreeId,
    user_key: &[u8],
    seq: u64,
    copy_blocks: bool,
    read_value: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>, DbError> {
    let mems = sv.memtables.get(&tree).ok_or(DbError::UnknownTree(tree))?;
    let point = PointLookup::new(user_key, seq);
    for memtable in mems.newest_first() {
        if let Some(found) = memtable.get_for(&point) {
            return Ok(match found.kind {
                EntryKind::Put => Some(read_value(found.value())),
                EntryKind::Delete => None,
            });
        }
    }
    // One buffer for the blocks of every table probed: allocated only if a table's filter
    // lets the read through, grown to the largest block.
    let mut block_copy = Vec::new();
    for file in sv.version.files_for_key(tree, user_key) {
        let Some(table) = sv.tables.get(&file.number) else {
            debug_assert!(
                false,
                "version names file {} with no open table",
                file.number
            );
            continue;
        };
        let found = table.get_for(&point, copy_blocks.then_some(&mut block_copy))?;
        if let Some((kind, value)) = found {
            return Ok(match kind {
                EntryKind::Put => Some(read_value(value)),
                EntryKind::Delete => None,
            });
        }
    }
    Ok(None)
}

impl Db {
    /// The value of `key` in `tree`, as of `snapshot` (or now).
    pub fn get(
        &self,
        tree: TreeId,
        key: &[u8],
        snapshot: Option<&Snapshot>,
    ) -> Result<Option<Vec<u8>>, DbError> {
        self.get_with(tree, key, snapshot, <[u8]>::to_vec)
    }

    /// [`Db::get`] reading the value in place with `read_value` rather than copying it out.
    pub fn get_with<R>(
        &self,
        tree: TreeId,
        key: &[u8],
        snapshot: Option<&Snapshot>,
        read_value: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>, DbError> {
        let (seq, sv) = self.read_view(snapshot);
        let copy_blocks = self.shared.options.point_reads == PointReads::Copied;
        lookup(&sv, tree, key, seq, copy_blocks, read_value)
    }

    /// [`Db::get_with`], now, for the value a write is about to replace (a write that
    /// maintains indexes reads the old item first). Its table block is read once: later
    /// reads of the key find the write's value in a memtable. So unless
    /// `DbOptions::point_reads` is `Mapped`, it is copied out of the table file, and leaves
    /// no page of it in the process's resident memory.
    pub fn get_replaced_with<R>(
        &self,
        tree: TreeId,
        key: &[u8],
        read_value: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>, DbError> {
        let (seq, sv) = self.read_view(None);
        let copy_blocks = self.shared.options.point_reads != PointReads::Mapped;
        lookup(&sv, tree, key, seq, copy_blocks, read_value)
    }

    /// The sequence number and superversion a read uses, consistent with each other.
    ///
    /// With a snapshot, its registered seq: compaction keeps what it sees. Without one, the
    /// pair must satisfy two rules. Memtables: every batch at or below the seq must be in
    /// the superversion's memtables or tables, which holds if the superversion was current
    /// when the seq was loaded. Compaction: a compaction drops versions hidden from every
    /// registered snapshot and from reads at the visible seq *when it started*; a read whose
    /// seq predates a compaction installed in its superversion could miss a version it
    /// should see. Both hold when the superversion is loaded, then the seq, then the
    /// superversion is found still current: every compaction in it finished before the seq
    /// was loaded. After a few races with version changes, fall back to the old order (seq,
    /// then superversion) with the seq registered as a snapshot while the superversion is
    /// loaded: a compaction that starts before the registration covers only data visible at
    /// that seq, and one that starts later either sees the snapshot or is not in the
    /// superversion.
    pub(crate) fn read_view(&self, snapshot: Option<&Snapshot>) -> (u64, Arc<SuperVersion>) {
        if let Some(snapshot) = snapshot {
            return (snapshot.seq, self.current());
        }
        for _ in 0..READ_VIEW_ATTEMPTS_MAX {
            let sv = self.current();
            let seq = self.shared.visible_seq.load(Ordering::Acquire);
            if Arc::ptr_eq(&sv, &*self.shared.superversion.read()) {
                return (seq, sv);
            }
        }
        let pinned = self.snapshot();
        let sv = self.current();
        (pinned.seq, sv)
    }

    /// Shape and work counters of the whole database (see `stats` for definitions).
    pub fn stats(&self) -> DbStats {
        let mut stats = self.shared.counters.snapshot();
        stats.obsolete_files_removed = self.shared.files.removed_files();
        stats.table_files_reused = self.shared.files.reused_files();
        stats.mapped_read_releases = self.shared.files.mapped_reads.releases();
        stats.write_buffer_bytes = self.shared.write_buffer.total_bytes() as u64;
        let sv = self.current();
        stats.level_files = vec![0; LEVELS];
        stats.level_bytes = vec![0; LEVELS];
        for tree in sv.version.trees.values() {
            let (files, bytes) = stats::level_shape(tree);
            for level in 0..LEVELS {
                stats.level_files[level] += files[level];
                stats.level_bytes[level] = stats.level_bytes[level].saturating_add(bytes[level]);
            }
        }
        stats
    }

    /// The corruption SSTable reads met since open: every failure counted, each damaged
    /// place with its file's key range and, while the file is live, its tree.
    pub fn corruption_report(&self) -> crate::corruption::CorruptionReport {
        let mut report = self.shared.files.corruption.report_now();
        let sv = self.current();
        for place in &mut report.places {
            place.tree = sv
                .version
                .trees
                .iter()
                .find(|(_, tree)| tree.files().any(|file| file.number == place.file_number))
                .map(|(id, _)| *id);
        }
        report
    }

    /// Size estimates and shape of one tree (see `stats` for how they are estimated).
    pub fn tree_stats(&self, tree: TreeId) -> Result<TreeStats, DbError> {
        let sv = self.current();
        let version = sv
            .version
            .trees
            .get(&tree)
            .ok_or(DbError::UnknownTree(tree))?;
        Ok(stats::tree_stats(version, sv.memtables.get(&tree)))
    }
}

impl Db {
    /// Runs compaction jobs on this thread until none is due (waiting for background jobs
    /// that are still running, so the tree's shape is settled when this returns).
    pub fn compact_until_idle(&self) -> Result<(), DbError> {
        compact::compact_until_idle(&self.shared)
    }

    /// Rewrites all of `tree` into its last level, on this thread: its memtable is flushed
    /// (with whatever other frozen memtables wait), then every SSTable of the tree is merged
    /// in one bottommost job, which the compaction filter (`DbOptions::compaction_filter`)
    /// sees all of. It is for a periodic trimmer: the policy may never rewrite the files of
    /// a tree with little traffic, or with sequential keys (whose files only move down),
    /// so expired entries would stay. The work is bounded by the tree's size when called:
    /// it waits for the tree's running jobs (starting no new one there meanwhile), and
    /// what is written to the tree during the job is left for the next call. A failed
    /// compaction stops writes, as a failed background one does.
    pub fn compact_tree(&self, tree: TreeId) -> Result<(), DbError> {
        if !self.current().version.trees.contains_key(&tree) {
            return Err(DbError::UnknownTree(tree));
        }
        self.freeze_full_memtables(AlsoFreeze::Trees(&[tree]));
        while flush_one(&self.shared, &self.wal)? {}
        compact::compact_tree(&self.shared, tree)
    }

    /// The leveled policy's current size target per level of `tree` (dynamic level sizing:
    /// they follow the tree's largest level), for reporting. `None` for an unknown tree.
    pub fn level_targets(&self, tree: TreeId) -> Option<LevelTargets> {
        let policy = &self.shared.policy;
        let sv = self.current();
        let tree = sv.version.trees.get(&tree)?;
        Some(level_targets(&levels_view(tree, &BTreeSet::new()), policy))
    }

    /// The rate (bytes per second) a write to `tree` would be held to now by the compaction
    /// backlog; `None` when it runs free (and for an unknown tree). It is applied only when
    /// background compaction runs.
    pub fn write_rate_limit(&self, tree: TreeId) -> Option<u64> {
        write_rate(&self.current(), &[tree])
    }
}

#[cfg(test)]
mod replay_tests {
    use super::*;
    use shoal_wal::Durability;

    fn options() -> DbOptions {
        DbOptions {
            durability: Durability::None,
            wal_preallocate: false,
            background_flush: false,
            compaction_threads: 0,
            ..DbOptions::default()
        }
    }

    fn key(index: usize) -> Vec<u8> {
        format!("key-{index:06}").into_bytes()
    }

    /// Several chunks' worth of entries, so the replay runs on inserter threads; half of
    /// them flushed, so the replay must skip those; overwrites and deletes on both sides of
    /// the flush, so a lost, misplaced or resurrected version shows. The open flushes what it
    /// replayed, so the trees must equal those of a twin database that flushed the second
    /// half itself.
    #[test]
    fn replay_on_threads_restores_every_version_and_skips_flushed_ones() {
        let key_count = REPLAY_CHUNK_ENTRIES * 3;
        let fill = |dir: &Path, flush_at_end: bool| {
            let db = Db::open(dir, options()).unwrap();
            let items = db.create_tree("items").unwrap();
            let index = db.create_tree("index").unwrap();
            for round in 0..2u8 {
                for position in 0..key_count {
                    let mut batch = WriteBatch::new();
                    batch.put(items, &key(position), &[round; 3]).unwrap();
                    if position % 7 == usize::from(round) {
                        batch.delete(index, &key(position)).unwrap();
                    } else {
                        batch.put(index, &key(position), &[round, 9]).unwrap();
                    }
                    db.write(batch).unwrap();
                }
                if round == 0 || flush_at_end {
                    db.flush_all().unwrap();
                }
            }
            let stats = [db.tree_stats(items).unwrap(), db.tree_stats(index).unwrap()];
            (items, index, stats.map(|s| s.entries_estimate))
        };
        let twin = tempfile::tempdir().unwrap();
        let (_, _, stats_before) = fill(twin.path(), true);
        let dir = tempfile::tempdir().unwrap();
        let (items, index, _) = fill(dir.path(), false);
        let db = Db::open(dir.path(), options()).unwrap();
        let stats_after = [db.tree_stats(items).unwrap(), db.tree_stats(index).unwrap()];
        assert_eq!(stats_after.map(|s| s.entries_estimate), stats_before);
        for position in 0..key_count {
            assert_eq!(
                db.get(items, &key(position), None).unwrap(),
                Some(vec![1; 3])
            );
            let expected = (position % 7 != 1).then(|| vec![1, 9]);
            assert_eq!(db.get(index, &key(position), None).unwrap(), expected);
        }
    }
}

#[cfg(test)]
mod apply_tests {
    use super::*;
    use shoal_wal::Durability;
    use std::collections::BTreeMap;
    use std::ops::Bound;

    use crate::Direction;

    /// Batches over more trees than the memtable inserter keeps splices for, in runs longer than it holds pending, each tree's keys in
    /// order, out of order and repeated: every tree holds exactly its own entries, in order
    /// (so no splice linked a node into the wrong memtable or place).
    #[test]
    fn batches_over_more_trees_than_splices_apply_every_entry_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let options = DbOptions {
            durability: Durability::None,
            background_flush: false,
            compaction_threads: 0,
            ..DbOptions::default()
        };
        let db = Db::open(dir.path(), options).unwrap();
        let trees: Vec<TreeId> = (0..crate::memtable::INSERTER_SPLICES_MAX + 3)
            .map(|n| db.create_tree(&format!("tree-{n}")).unwrap())
            .collect();
        let mut model: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); trees.len()];
        for round in 0..3u32 {
            let mut batch = WriteBatch::new();
            // Ascending keys in the first round, descending in the second, and the first
            // round's keys again (newer versions) in the third; trees interleaved.
            let keys: Vec<u32> = match round {
                1 => (0..40).rev().map(|k| k * 2 + 1).collect(),
                _ => (0..40).map(|k| k * 2).collect(),
            };
            for key in keys {
                for (position, tree) in trees.iter().enumerate() {
                    let key = key.to_be_bytes().to_vec();
                    let value = format!("{round}-{position}").into_bytes();
                    batch.put(*tree, &key, &value).unwrap();
                    model[position].insert(key, value);
                }
            }
            db.write(batch).unwrap();
        }
        for (position, tree) in trees.iter().enumerate() {
            let scanned: BTreeMap<Vec<u8>, Vec<u8>> = db
                .scan(
                    *tree,
                    Bound::Unbounded,
                    Bound::Unbounded,
                    Direction::Forward,
                    None,
                    usize::MAX,
                )
                .unwrap()
                .into_iter()
                .collect();
            assert_eq!(scanned, model[position], "tree {position}");
        }
    }
}
