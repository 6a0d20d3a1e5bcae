//! Running one compaction job: merge the inputs, write the outputs, swap the version.
//!
//! # Steps and crash safety
//!
//! 1. The input tables (held by the claim, so they stay readable whatever happens to the
//!    version meanwhile) are merged ([`MergingIterator`]) and filtered for the live snapshots
//!    ([`CompactionIterator`]: versions no reader can see are dropped, tombstones only at the
//!    bottom).
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
//! live. A trivial move is step 3 alone: the file is relinked one level down, not rewritten.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use shoal_compaction::{
    CompactionIterator, InternalIterator, Job, MergingIterator, OutputSplitter,
};

use crate::error::DbError;
use crate::manifest;
use crate::shared::Shared;
use crate::sstable::{Table, TableBuilder, TableOptions};
use crate::stats::Counters;
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

type Source = Box<dyn InternalIterator + Send>;

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
    if claimed.job.trivial_move {
        return install(shared, claimed, OutputFiles::new(shared), Vec::new());
    }
    let mut outputs = OutputFiles::new(shared);
    if !write_outputs(shared, claimed, &mut outputs)? {
        return Ok(JobOutcome::Abandoned);
    }
    let opened = outputs.open_all()?;
    install(shared, claimed, outputs, opened)
}

/// Writes the merged, filtered inputs into new files. Returns false if the database started
/// closing meanwhile (the outputs are then discarded).
fn write_outputs(
    shared: &Shared,
    claimed: &ClaimedJob,
    outputs: &mut OutputFiles<'_>,
) -> Result<bool, DbError> {
    let sources: Vec<Source> = claimed
        .tables
        .iter()
        .map(|table| Box::new(table.iter()) as Source)
        .collect();
    // Snapshots taken after this point see only data newer than every input (the inputs were
    // flushed, so visible, before), so this list is all the merge must respect.
    let snapshots: Vec<u64> = shared.snapshots.lock().keys().copied().collect();
    let mut merged = CompactionIterator::new(
        MergingIterator::new(sources),
        &snapshots,
        claimed.job.bottommost,
    );
    let mut splitter =
        OutputSplitter::new(shared.policy.target_file_bytes, shared.options.bloom_prefix);

    let mut current: Option<TableBuilder> = None;
    let mut merged_entries = 0u64;
    merged.seek_to_first()?;
    while merged.valid() {
        merged_entries += 1;
        if merged_entries.is_multiple_of(SHUTDOWN_CHECK_ENTRIES)
            && shared.shutting_down.load(Ordering::Acquire)
        {
            return Ok(false);
        }
        let (key, value) = (merged.key(), merged.value());
        let entry_bytes = (key.len() + value.len()) as u64;
        if splitter.starts_new_file(key, entry_bytes) {
            if let Some(builder) = current.take() {
                outputs.finish(builder)?;
            }
        }
        let builder = match &mut current {
            Some(builder) => builder,
            None => current.insert(outputs.start()?),
        };
        builder.add(key, value)?;
        merged.next()?;
    }
    if let Some(builder) = current.take() {
        outputs.finish(builder)?;
    }
    if !outputs.is_empty() {
        shared
            .fs
            .sync_dir(&shared.dir)
            .map_err(|e| DbError::io(format!("syncing {}", shared.dir.display()), e))?;
    }
    Ok(true)
}

/// Installs the job's version change durably and publishes it (module docs, steps 3–4).
fn install(
    shared: &Shared,
    claimed: &ClaimedJob,
    mut outputs: OutputFiles<'_>,
    opened: Vec<(FileMeta, Arc<Table>)>,
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
    // From here the outputs may be named by the durable version even if install fails.
    outputs.keep();
    manifest.install(&next)?;

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

    let counters = &shared.counters;
    if claimed.job.trivial_move {
        Counters::add(&counters.trivial_moves, 1);
    } else {
        Counters::add(&counters.compactions, 1);
        Counters::add(&counters.compaction_bytes_read, input_bytes);
        Counters::add(&counters.compaction_bytes_written, output_bytes);
    }
    Ok(JobOutcome::Installed)
}

/// The files a job writes. Unless [`OutputFiles::keep`] was called, dropping this removes
/// them: they were never named by a version.
struct OutputFiles<'a> {
    shared: &'a Shared,
    /// Numbers of every file created, finished or not.
    created: Vec<u64>,
    /// The finished files, in key order.
    finished: Vec<FileMeta>,
    /// Number of the file being written, if any.
    writing: Option<u64>,
    kept: bool,
}

impl<'a> OutputFiles<'a> {
    fn new(shared: &'a Shared) -> OutputFiles<'a> {
        OutputFiles {
            shared,
            created: Vec::new(),
            finished: Vec::new(),
            writing: None,
            kept: false,
        }
    }

    fn is_empty(&self) -> bool {
        self.finished.is_empty()
    }

    /// Creates the next output file.
    fn start(&mut self) -> Result<TableBuilder, DbError> {
        let shared = self.shared;
        let number = shared.next_file_number.fetch_add(1, Ordering::AcqRel);
        self.created.push(number);
        self.writing = Some(number);
        let path = shared.dir.join(manifest::sst_file_name(number));
        let file = shared
            .files
            .create_table(&shared.fs, &path)
            .map_err(|e| DbError::io(format!("creating {}", path.display()), e))?;
        Ok(TableBuilder::new(
            file,
            TableOptions {
                block_size_bytes: shared.options.block_size_bytes,
                prefix: shared.options.bloom_prefix,
                ..TableOptions::default()
            },
        ))
    }

    /// Finishes (and syncs) the file being written.
    fn finish(&mut self, builder: TableBuilder) -> Result<(), DbError> {
        let Some(number) = self.writing.take() else {
            debug_assert!(false, "finish without start");
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
    fn open_all(&self) -> Result<Vec<(FileMeta, Arc<Table>)>, DbError> {
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

    fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for OutputFiles<'_> {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        self.shared.files.forget(self.created.iter().copied());
        for number in &self.created {
            let path = self.shared.dir.join(manifest::sst_file_name(*number));
            if !self.shared.fs.exists(&path) {
                continue;
            }
            if let Err(error) = self.shared.fs.remove(&path) {
                // Harmless: an unreferenced file is removed by the next open.
                tracing::warn!(%error, file = %path.display(), "could not remove a discarded compaction output");
            }
        }
    }
}
