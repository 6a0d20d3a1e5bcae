//! Running one compaction job: merge the inputs, write the outputs, swap the version.
//!
//! # Steps and crash safety
//!
//! 1. The input tables (held by the claim, so they stay readable whatever happens to the
//!    version meanwhile) are merged ([`MergingIterator`]) and filtered for the live snapshots
//!    ([`CompactionIterator`]: versions no reader can see are dropped, tombstones only at the
//!    bottom), then, in a bottommost job, by `DbOptions::compaction_filter` ([`KeyFilter`];
//!    `CompactionFilter` says when it is asked).
//! 2. The output is cut into files by [`OutputSplitter`]: at the target size, preferably where
//!    the item-collection prefix (`DbOptions::bloom_prefix`) changes, and never between two
//!    versions of one user key, since files of L1 and below may not share a user key.
//!    Each output file is written and synced by the table builder; then the directory is
//!    synced once. Nothing names the outputs yet: a crash here leaves unreferenced files,
//!    which the next open removes (`manifest::remove_obsolete_files`).
//! 3. Under the manifest lock (which serialises every version change, as for flushes) a new
//!    version with the inputs removed and the outputs added is installed durably: one atomic
//!    CURRENT switch, so recovery sees the old version or the new one, never a mix.
//! 4. Only then are the inputs marked obsolete; each file is removed when its last reader
//!    drops it (`table_files`). The new superversion swaps tables and version in one step.
//!
//! A failure before step 3 removes the outputs (they were never named). A failure *in* step 3
//! leaves everything on disk: the install may have reached the disk, so the outputs may be
//! live; unless it is `ManifestError::NoSpace`, which says CURRENT was never switched, so
//! the outputs are removed and the job can run again (`out_of_space.rs`). A trivial move is step 3 alone: the file is relinked one level down, not rewritten.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use shoal_compaction::{
    CompactionIterator, EntryKind, InternalKey, IterError, Job, MergingIterator, OutputSplitter,
};

use crate::error::DbError;
use crate::manifest;
use crate::options::CompactionFilter;
use crate::read::{push_level_sources, Source};
use crate::shared::Shared;
use crate::sstable::{Table, TableBuilder, TableOptions};
use crate::stats::CompactionRecord;
use crate::table_files::{file_meta, open_table};
use crate::version::{FileMeta, TreeId, VersionEdit};

/// Entries merged between checks for shutdown, so closing the database does not wait for a
/// whole large compaction.
const SHUTDOWN_CHECK_ENTRIES: u64 = 4096;

/// How a job ended without an error.
pub(crate) enum JobOutcome {
    /// The new version is installed.
    Installed,
    /// Nothing changed: the database is closing, or the tree was dropped meanwhile.
    Abandoned,
}

/// A claimed job, with everything needed to run it. The input tables are held for the job's
/// duration, so their files outlive any version swap that happens meanwhile.
pub(crate) struct ClaimedJob {
    pub(crate) tree: TreeId,
    pub(crate) job: Job,
    /// Input files by level, in the job's order (upper level first, L0 newest first).
    pub(crate) inputs: Vec<(usize, Vec<Arc<FileMeta>>)>,
    /// The open tables of all inputs, in the same order.
    pub(crate) tables: Vec<Arc<Table>>,
}

/// Runs a claimed job to the end (module docs).
pub(crate) fn run(shared: &Shared, claimed: &ClaimedJob) -> Result<JobOutcome, DbError> {
    let started = Instant::now();
    if claimed.job.trivial_move {
        return install(
            shared,
            claimed,
            OutputFiles::new(shared),
            Vec::new(),
            0,
            started,
        );
    }
    let mut outputs = OutputFiles::new(shared);
    let Some(filtered_entries) = write_outputs(shared, claimed, &mut outputs)? else {
        return Ok(JobOutcome::Abandoned);
    };
    let opened = outputs.open_all()?;
    install(shared, claimed, outputs, opened, filtered_entries, started)
}

/// Writes the merged, filtered inputs into new files. Returns how many entries the
/// compaction filter dropped, or `None` if the database started closing meanwhile (the
/// outputs are then discarded).
fn write_outputs(
    shared: &Shared,
    claimed: &ClaimedJob,
    outputs: &mut OutputFiles<'_>,
) -> Result<Option<u64>, DbError> {
    let sources = merge_sources(claimed);
    // The retention floor is read before the snapshots (`VersionRetention` says why).
    let retention_floor = shared
        .options
        .version_retention
        .as_ref()
        .and_then(|retention| retention.floor(claimed.tree));
    // Snapshots taken after this point see only data newer than every input (the inputs were
    // flushed, so visible, before), so this list is all the merge must respect; except a
    // snapshot at an older sequence number (`Db::snapshot_at`), which the floor protects.
    let snapshots: Vec<u64> = shared.snapshots.lock().keys().copied().collect();
    let mut merged = CompactionIterator::new(
        MergingIterator::new(sources),
        &snapshots,
        claimed.job.bottommost,
    )
    .with_retention_floor(retention_floor);
    // Only where no older version of a key can lie below the output (`CompactionFilter`).
    let mut key_filter = shared
        .options
        .compaction_filter
        .as_deref()
        .filter(|_| claimed.job.bottommost)
        .map(|filter| KeyFilter::new(filter, claimed.tree));
    let mut merged_entries = 0u64;
    merged.seek_to_first()?;
    while merged.valid() {
        merged_entries += 1;
        if merged_entries.is_multiple_of(SHUTDOWN_CHECK_ENTRIES)
            && shared.shutting_down.load(Ordering::Acquire)
        {
            return Ok(None);
        }
        let (key, value) = (merged.key(), merged.value());
        if let Some(key_filter) = &mut key_filter {
            if key_filter.drops(key, value)? {
                merged.next()?;
                continue;
            }
        }
        outputs.add(key, value)?;
        merged.next()?;
    }
    outputs.finish_current()?;
    if !outputs.is_empty() {
        shared
            .fs
            .sync_dir(&shared.dir)
            .map_err(|e| DbError::io(format!("syncing {}", shared.dir.display()), e))?;
    }
    Ok(Some(key_filter.map_or(0, |filter| filter.dropped_entries)))
}

/// The merge's sources: one per L0 file, one per deeper level (`push_level_sources`).
///
/// Each input is read once, front to back: its pages leave the process's resident memory as
/// the merge passes them, or a compaction would keep all of its inputs resident until they
/// are dropped (in a `shoal check`, most of its peak RSS).
fn merge_sources(claimed: &ClaimedJob) -> Vec<Source> {
    let mut tables = claimed.tables.iter();
    let mut sources: Vec<Source> = Vec::with_capacity(claimed.tables.len());
    for (level, files) in &claimed.inputs {
        let iterators = tables
            .by_ref()
            .take(files.len())
            .map(|table| Box::new(table.iter().releasing_behind()) as Source)
            .collect();
        push_level_sources(&mut sources, *level, iterators, files.clone());
    }
    debug_assert!(
        tables.next().is_none(),
        "more input tables than input files"
    );
    sources
}

/// Applies `DbOptions::compaction_filter` to a bottommost job's garbage-collected output,
/// which holds each user key's versions together, newest first. The first version of a key
/// is the newest among the inputs (garbage collection drops older versions only, or all
/// of a key under a tombstone); if it is a put the filter is asked about it, and when the
/// filter says drop, that version and every older one of the key are dropped, so none of
/// them can become the newest (`CompactionFilter` has the whole rule).
struct KeyFilter<'a> {
    filter: &'a dyn CompactionFilter,
    tree: TreeId,
    /// The user key of the last entry seen (meaningless before the first).
    user_key: Vec<u8>,
    seen_any: bool,
    /// Whether the filter dropped `user_key`'s newest version.
    dropping: bool,
    dropped_entries: u64,
}

impl<'a> KeyFilter<'a> {
    fn new(filter: &'a dyn CompactionFilter, tree: TreeId) -> KeyFilter<'a> {
        KeyFilter {
            filter,
            tree,
            user_key: Vec::new(),
            seen_any: false,
            dropping: false,
            dropped_entries: 0,
        }
    }

    /// Whether the entry (the next of the output, in order) is to be dropped.
    fn drops(&mut self, internal_key: &[u8], value: &[u8]) -> Result<bool, DbError> {
        // Garbage collection has parsed every key it yields already; this cannot fail.
        let entry = InternalKey::parse(internal_key).ok_or_else(|| {
            DbError::Iter(IterError::Corruption(format!(
                "compaction output has a malformed {}-byte internal key",
                internal_key.len()
            )))
        })?;
        let newest_of_key = !self.seen_any || entry.user_key != self.user_key.as_slice();
        if newest_of_key {
            self.seen_any = true;
            self.user_key.clear();
            self.user_key.extend_from_slice(entry.user_key);
            self.dropping = entry.kind == EntryKind::Put
                && self.filter.drop_entry(self.tree, entry.user_key, value);
        }
        if self.dropping {
            self.dropped_entries += 1;
        }
        Ok(self.dropping)
    }
}

/// Installs the job's version change durably and publishes it (module docs, steps 3–4).
fn install(
    shared: &Shared,
    claimed: &ClaimedJob,
    mut outputs: OutputFiles<'_>,
    opened: Vec<(FileMeta, Arc<Table>)>,
    filtered_entries: u64,
    started: Instant,
) -> Result<JobOutcome, DbError> {
    let tree = claimed.tree;
    let output_level = claimed.job.output_level;
    let mut manifest = shared.manifest.lock();
    let current = shared.superversion.read().clone();
    if !current.version.trees.contains_key(&tree) {
        // Dropped while we worked: its files are gone from the version already, and the
        // outputs are removed by `outputs` going out of scope.
        return Ok(JobOutcome::Abandoned);
    }

    let mut edits = Vec::new();
    let mut input_numbers = Vec::new();
    let mut input_bytes = 0u64;
    for (level, files) in &claimed.inputs {
        for file in files {
            edits.push(VersionEdit::RemoveFile {
                tree,
                level: *level,
                number: file.number,
            });
            input_numbers.push(file.number);
            input_bytes = input_bytes.saturating_add(file.size_bytes);
            if claimed.job.trivial_move {
                edits.push(VersionEdit::AddFile {
                    tree,
                    level: output_level,
                    file: (**file).clone(),
                });
            }
        }
    }
    let mut output_bytes = 0u64;
    for (meta, _) in &opened {
        output_bytes = output_bytes.saturating_add(meta.size_bytes);
        edits.push(VersionEdit::AddFile {
            tree,
            level: output_level,
            file: meta.clone(),
        });
    }
    edits.push(VersionEdit::SetNextFileNumber(
        shared.next_file_number.load(Ordering::Acquire),
    ));
    // `apply` re-checks the level rules, so an output that overlapped its neighbours (or two
    // outputs sharing a user key) would be refused here rather than corrupt reads.
    let next = current.version.apply(&edits)?;
    // From here the outputs may be named by the durable version even if install fails...
    outputs.keep();
    if let Err(error) = manifest.install(&next) {
        if let manifest::ManifestError::NoSpace { .. } = error {
            // ...except when the disk was full: CURRENT was never switched, so nothing names
            // them, and they go when `outputs` does, giving back their room.
            outputs.kept = false;
        }
        return Err(error.into());
    }

    let mut guard = shared.superversion.write();
    let mut sv = (**guard).clone();
    if !claimed.job.trivial_move {
        // Marked before the old superversion can drop its tables, so the last holder removes
        // each file.
        shared.files.mark_obsolete(input_numbers.iter().copied());
        for number in &input_numbers {
            sv.tables.remove(number);
        }
    }
    for (meta, table) in opened {
        sv.tables.insert(meta.number, table);
    }
    sv.set_version(Arc::new(next), &shared.policy);
    *guard = Arc::new(sv);
    drop(guard);
    drop(manifest);

    shared.counters.record_compaction(&CompactionRecord {
        output_level,
        trivial_move: claimed.job.trivial_move,
        input_bytes,
        output_bytes,
        filtered_entries,
        busy: started.elapsed(),
    });
    Ok(JobOutcome::Installed)
}

/// The files a job writes, entries added in key order and split into files of the policy's
/// target size (`OutputSplitter`). Unless [`OutputFiles::keep`] was called, dropping this
/// removes them: they were never named by a version.
pub(crate) struct OutputFiles<'a> {
    shared: &'a Shared,
    splitter: OutputSplitter,
    /// Numbers of every file created, finished or not.
    created: Vec<u64>,
    /// The finished files, in key order.
    finished: Vec<FileMeta>,
    /// The file being written, if any, and its number.
    writing: Option<(u64, TableBuilder)>,
    kept: bool,
}

impl<'a> OutputFiles<'a> {
    pub(crate) fn new(shared: &'a Shared) -> OutputFiles<'a> {
        OutputFiles {
            shared,
            splitter: OutputSplitter::new(
                shared.policy.target_file_bytes,
                shared.options.bloom_prefix,
            ),
            created: Vec::new(),
            finished: Vec::new(),
            writing: None,
            kept: false,
        }
    }

    /// Adds the next entry (internal key order), in a new file where the splitter says.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<(), DbError> {
        let entry_bytes = (key.len() + value.len()) as u64;
        if self.splitter.starts_new_file(key, entry_bytes) {
            self.finish_current()?;
        }
        let builder = match &mut self.writing {
            Some((_, builder)) => builder,
            None => {
                let started = self.start()?;
                &mut self.writing.insert(started).1
            }
        };
        builder.add(key, value)?;
        Ok(())
    }

    fn is_empty(&self) -> bool {
        self.finished.is_empty()
    }

    /// Creates the next output file: its number and builder.
    fn start(&mut self) -> Result<(u64, TableBuilder), DbError> {
        let shared = self.shared;
        let number = shared.next_file_number.fetch_add(1, Ordering::AcqRel);
        self.created.push(number);
        let path = shared.dir.join(manifest::sst_file_name(number));
        let file = shared
            .files
            .create_table(&shared.fs, &path)
            .map_err(|e| DbError::io(format!("creating {}", path.display()), e))?;
        let builder = TableBuilder::new(
            file,
            TableOptions {
                block_size_bytes: shared.options.block_size_bytes,
                prefix: shared.options.bloom_prefix,
                ..TableOptions::default()
            },
        );
        Ok((number, builder))
    }

    /// Finishes (and syncs) the file being written, if any.
    pub(crate) fn finish_current(&mut self) -> Result<(), DbError> {
        let Some((number, builder)) = self.writing.take() else {
            return Ok(());
        };
        let properties = builder.finish()?;
        let meta = file_meta(number, &properties);
        debug_assert!(
            self.finished
                .last()
                .is_none_or(|prev| prev.largest_user_key() < meta.smallest_user_key()),
            "compaction outputs share a user key at a boundary"
        );
        self.finished.push(meta);
        Ok(())
    }

    /// Opens every finished file for reading.
    pub(crate) fn open_all(&self) -> Result<Vec<(FileMeta, Arc<Table>)>, DbError> {
        let shared = self.shared;
        self.finished
            .iter()
            .map(|meta| {
                let table = open_table(
                    &shared.fs,
                    &shared.dir,
                    meta.number,
                    shared.options.bloom_prefix,
                    &shared.files,
                )?;
                Ok((meta.clone(), table))
            })
            .collect()
    }

    pub(crate) fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for OutputFiles<'_> {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        // The unfinished file's handle goes first, then its name.
        self.writing = None;
        let shared = self.shared;
        shared
            .files
            .remove_unnamed(&shared.fs, &shared.dir, &self.created);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_compaction::key::encode;
    use std::sync::Mutex;

    /// Drops every put whose value is `drop`, and records what it was asked.
    #[derive(Debug, Default)]
    struct DropValue {
        asked: Mutex<Vec<(TreeId, Vec<u8>)>>,
    }

    impl CompactionFilter for DropValue {
        fn drop_entry(&self, tree: TreeId, user_key: &[u8], value: &[u8]) -> bool {
            self.asked.lock().unwrap().push((tree, user_key.to_vec()));
            value == b"drop"
        }
    }

    /// Asked only about each key's newest version, and only if it is a put; a key it drops
    /// loses every version, so no older one becomes the newest.
    #[test]
    fn asks_about_newest_puts_only_and_drops_every_version_of_a_dropped_key() {
        let filter = DropValue::default();
        let mut key_filter = KeyFilter::new(&filter, 7);
        let output = [
            // (user key, seq, kind, value): what garbage collection yields, in order.
            (&b"a"[..], 9, EntryKind::Put, &b"drop"[..]),
            (b"a", 5, EntryKind::Put, b"keep"),
            (b"b", 8, EntryKind::Delete, b""),
            (b"b", 4, EntryKind::Put, b"drop"),
            (b"c", 7, EntryKind::Put, b"keep"),
            (b"c", 3, EntryKind::Put, b"drop"),
            (b"d", 6, EntryKind::Put, b"drop"),
        ];
        let dropped: Vec<bool> = output
            .iter()
            .map(|(user_key, seq, kind, value)| {
                key_filter
                    .drops(&encode(user_key, *seq, *kind), value)
                    .unwrap()
            })
            .collect();
        assert_eq!(dropped, [true, true, false, false, false, false, true]);
        assert_eq!(key_filter.dropped_entries, 3);
        assert_eq!(
            *filter.asked.lock().unwrap(),
            [(7, b"a".to_vec()), (7, b"c".to_vec()), (7, b"d".to_vec())],
            "never a tombstone (b) nor an older version"
        );
    }
}
