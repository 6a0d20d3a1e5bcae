//! The SSTable files of a database: opening them ([`open_table`]), describing a new one
//! for the version ([`file_meta`]), and when each is deleted: only once nothing can read it
//! any more.
//!
//! After a compaction (or a tree drop) installs a version without some files, readers may
//! still hold them: an iterator keeps the [`SuperVersion`](crate::superversion) it
//! started from, and with it the `Arc<Table>` of every file it merges. Deleting the file then
//! is safe on Linux for mmapped real files, but it would still make the engine's correctness
//! depend on the platform and on how the storage layer maps files. Instead, every table is
//! opened on a [`TrackedFile`], and deletion is tied to the table's lifetime:
//!
//! 1. every open SSTable has a [`FileMark`] in the [`FileRegistry`], keyed by file number;
//! 2. once a version that no longer names the file is durably installed, the engine calls
//!    [`FileRegistry::mark_obsolete`];
//! 3. when the last `Arc<Table>` is dropped (the last superversion or iterator that held it
//!    goes away), the table drops its [`TrackedFile`], whose `Drop` removes the file if it
//!    was marked.
//!
//! So no thread ever sweeps the directory at runtime (a flush may be writing a file that no
//! version names yet); debris of a crash is removed at open by
//! `manifest::remove_obsolete_files`. A removal that fails only leaves garbage for that
//! cleanup. A file is marked only after the version without it is durable: before that, a
//! crash could recover the old version, which still needs the file.
//!
//! **Recycling.** Instead of being removed, up to [`RECYCLED_TABLE_FILES_MAX`] obsolete files
//! are renamed to `<number>.sst-recycle` once their last mapping is gone, and the next flush
//! or compaction output is written over one of them ([`FileRegistry::create_table`]): its
//! blocks are allocated and its pages usually still cached, so writing it allocates and
//! zeroes no new page-cache pages. Profiles of compaction showed half its CPU in `write(2)`
//! copying into fresh pages; on a VM that hands freed memory back to its host a fresh page
//! costs about three times a cached one (`dd` into a new file 1.1 GB/s, over the same
//! file's cached pages 3.3 GB/s). A reused file is cut to the new table's length before the
//! table's sync ([`RecycledTableFile`]), so no byte of its old life stays past the footer.
//! A file with more than one name (a hard link made by `checkpoint`) is removed, never
//! recycled. Crash safety is unchanged: a recycled or half-rewritten file is named by no version, so
//! the open after a crash removes it like any other unreferenced file.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use shoal_vfs::{Fs, ReadableFile, WritableFile};

use crate::error::DbError;
use crate::manifest;
use crate::mapped_reads::MappedReads;
use crate::options::DbOptions;
use crate::sstable::{PrefixFn, Table, TableProperties};
use crate::version::FileMeta;

/// Most obsolete SSTable files kept for reuse (with 64 MiB tables, up to 256 MiB of disk).
pub(crate) const RECYCLED_TABLE_FILES_MAX: usize = 4;

/// Whether one file may be removed once its last reader is gone.
#[derive(Debug, Default)]
pub(crate) struct FileMark {
    obsolete: AtomicBool,
}

/// The marks of every open SSTable, the files kept for reuse, and counts of files removed
/// and reused so far.
#[derive(Debug, Default)]
pub(crate) struct FileRegistry {
    /// File number → mark. Holds exactly the files opened and not yet marked obsolete, so it
    /// is bounded by the number of live files.
    marks: Mutex<HashMap<u64, Arc<FileMark>>>,
    /// Paths of obsolete files kept for reuse, oldest first; at most
    /// [`RECYCLED_TABLE_FILES_MAX`].
    recycled: Arc<Mutex<VecDeque<PathBuf>>>,
    /// Files actually removed (or recycled) by a [`TrackedFile`] drop.
    removed_files: Arc<AtomicU64>,
    /// New tables written over a recycled file.
    reused_files: AtomicU64,
    /// New tables are written around the page cache (`DbOptions::direct_table_writes`).
    direct_writes: bool,
    /// Where the open tables report the corruption they meet.
    pub(crate) corruption: Arc<crate::corruption::CorruptionLog>,
    /// The budget the open tables charge the pages their reads map to.
    pub(crate) mapped_reads: Arc<MappedReads>,
}

impl FileRegistry {
    /// A registry whose new tables are written around the page cache when
    /// `options.direct_table_writes` (`shoal_vfs::FileSystem::create_direct`), and whose open
    /// tables' reads leave at most about `options.mapped_read_bytes_max` of their pages
    /// resident ([`MappedReads`]).
    pub(crate) fn new(options: &DbOptions) -> FileRegistry {
        FileRegistry {
            direct_writes: options.direct_table_writes,
            mapped_reads: Arc::new(MappedReads::new(options.mapped_read_bytes_max)),
            ..FileRegistry::default()
        }
    }

    /// Wraps `file` (SSTable `number` at `path`) so that it is removed when dropped after
    /// [`FileRegistry::mark_obsolete`] was called for `number`.
    pub(crate) fn track(
        &self,
        fs: &Fs,
        path: PathBuf,
        number: u64,
        file: Arc<dyn ReadableFile>,
    ) -> Arc<dyn ReadableFile> {
        let mark = Arc::new(FileMark::default());
        self.marks.lock().insert(number, Arc::clone(&mark));
        Arc::new(TrackedFile {
            inner: file,
            fs: Arc::clone(fs),
            path,
            number,
            mark,
            recycled: Arc::clone(&self.recycled),
            removed_files: Arc::clone(&self.removed_files),
        })
    }

    /// Creates the file of a new SSTable at `path`: written over a recycled file when one is
    /// kept, otherwise a new file, either way around the page cache if the registry says so.
    /// The caller gets a file positioned at 0 whose sync leaves exactly the bytes written.
    pub(crate) fn create_table(&self, fs: &Fs, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let recycled = self.recycled.lock().pop_front();
        if let Some(old_path) = recycled {
            // A recycled file is only an optimisation: on any failure, fall back to a new
            // file (and leave the old one, if still there, to the next open's cleanup).
            let reused = fs.rename(&old_path, path).and_then(|()| {
                if self.direct_writes {
                    fs.open_overwrite_direct(path)
                } else {
                    fs.open_overwrite(path)
                }
            });
            match reused {
                Ok(file) => {
                    self.reused_files.fetch_add(1, Ordering::Relaxed);
                    return Ok(Box::new(RecycledTableFile { inner: file }));
                }
                Err(error) => {
                    tracing::warn!(%error, file = %old_path.display(), "could not reuse a recycled SSTable file");
                }
            }
        }
        if self.direct_writes {
            fs.create_direct(path)
        } else {
            fs.create(path)
        }
    }

    /// Marks the files as obsolete: each is removed when its last reader drops it (at once if
    /// none holds it any more). Call only after a version without them is durable.
    pub(crate) fn mark_obsolete(&self, numbers: impl IntoIterator<Item = u64>) {
        let mut marks = self.marks.lock();
        for number in numbers {
            if let Some(mark) = marks.remove(&number) {
                mark.obsolete.store(true, Ordering::Release);
            }
        }
    }

    /// Stops tracking the files without marking them (files that never entered a version and
    /// are removed by their writer).
    pub(crate) fn forget(&self, numbers: impl IntoIterator<Item = u64>) {
        let mut marks = self.marks.lock();
        for number in numbers {
            marks.remove(&number);
        }
    }

    /// Removes the SSTables `numbers` of `dir`, which never entered a version (a failed or
    /// abandoned flush or compaction), and stops tracking them. The caller has dropped its
    /// handles. A removal that fails only leaves garbage for the next open's cleanup.
    pub(crate) fn remove_unnamed(&self, fs: &Fs, dir: &Path, numbers: &[u64]) {
        self.forget(numbers.iter().copied());
        for number in numbers {
            let path = dir.join(manifest::sst_file_name(*number));
            if !fs.exists(&path) {
                continue;
            }
            if let Err(error) = fs.remove(&path) {
                tracing::warn!(%error, file = %path.display(), "could not remove an SSTable no version names");
            }
        }
    }

    /// How many obsolete files have been removed (or kept for reuse) so far.
    pub(crate) fn removed_files(&self) -> u64 {
        self.removed_files.load(Ordering::Relaxed)
    }

    /// How many new tables were written over a recycled file so far.
    pub(crate) fn reused_files(&self) -> u64 {
        self.reused_files.load(Ordering::Relaxed)
    }
}

/// A recycled file being written as a new SSTable: its sync first cuts the file to what was
/// written, so the table ends at its footer whatever the file held before.
struct RecycledTableFile {
    inner: Box<dyn WritableFile>,
}

impl WritableFile for RecycledTableFile {
    fn write_all(&self, data: &[u8]) -> io::Result<()> {
        self.inner.write_all(data)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.inner.set_len(self.inner.position())?;
        self.inner.sync_data()
    }

    fn position(&self) -> u64 {
        self.inner.position()
    }

    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        self.inner.start_writeback(offset, len)
    }

    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        self.inner.set_len(len_bytes)
    }
}

/// A readable file with no bytes: what a [`TrackedFile`] holds once its real file is
/// released in `drop`.
struct Released;

impl ReadableFile for Released {
    fn bytes(&self) -> &[u8] {
        &[]
    }
}

/// A readable SSTable file that removes (or recycles) itself on drop once marked obsolete.
struct TrackedFile {
    inner: Arc<dyn ReadableFile>,
    fs: Fs,
    path: PathBuf,
    number: u64,
    mark: Arc<FileMark>,
    recycled: Arc<Mutex<VecDeque<PathBuf>>>,
    removed_files: Arc<AtomicU64>,
}

impl ReadableFile for TrackedFile {
    fn bytes(&self) -> &[u8] {
        self.inner.bytes()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_at(offset, buf)
    }

    fn is_mapping(&self) -> bool {
        self.inner.is_mapping()
    }

    fn release(&self, range: std::ops::Range<usize>) {
        self.inner.release(range);
    }
}

impl Drop for TrackedFile {
    fn drop(&mut self) {
        if !self.mark.obsolete.load(Ordering::Acquire) {
            return;
        }
        // Unmap the file before it can be recycled: it is written again only once nothing
        // maps it (this is the only holder of `inner`).
        debug_assert_eq!(Arc::strong_count(&self.inner), 1);
        drop(std::mem::replace(&mut self.inner, Arc::new(Released)));
        // The pool's lock is held across the rename only, so it never passes its bound.
        // No directory sync: after a crash either name is an unreferenced file that the next
        // open removes.
        // A file with another name (a backup's link, or the table of a restore made from
        // it) is shared: writing a new table over it would change the other name's bytes.
        // An unknown count is taken as shared.
        let shared = self
            .fs
            .link_count(&self.path)
            .map_or(true, |links| links > 1);
        let kept = {
            let mut recycled = self.recycled.lock();
            (!shared && recycled.len() < RECYCLED_TABLE_FILES_MAX).then(|| {
                let target = self
                    .path
                    .with_file_name(manifest::recycled_sst_file_name(self.number));
                self.fs
                    .rename(&self.path, &target)
                    .map(|()| recycled.push_back(target))
            })
        };
        match kept.unwrap_or_else(|| self.fs.remove(&self.path)) {
            Ok(()) => {
                self.removed_files.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => {
                // Harmless: an unreferenced file is removed by the next open.
                tracing::warn!(%error, file = %self.path.display(), "could not remove an obsolete SSTable");
            }
        }
    }
}

/// Opens SSTable `number`, tracked so that it is removed once obsolete and unread.
pub(crate) fn open_table(
    fs: &Fs,
    dir: &Path,
    number: u64,
    prefix: PrefixFn,
    files: &FileRegistry,
) -> Result<Arc<Table>, DbError> {
    let path = dir.join(manifest::sst_file_name(number));
    let file = fs
        .open_read(&path)
        .map_err(|e| DbError::io(format!("opening {}", path.display()), e))?;
    let file = files.track(fs, path, number, file);
    match Table::open(file, number, prefix) {
        Ok(table) => {
            let table = table.with_corruption_log(Arc::clone(&files.corruption));
            // Without a bound (the default) reads charge nothing: no count on the read path.
            if !files.mapped_reads.is_bounded() {
                return Ok(Arc::new(table));
            }
            let table = Arc::new(table.with_mapped_reads(Arc::clone(&files.mapped_reads)));
            files.mapped_reads.register(&table);
            Ok(table)
        }
        Err(error) => {
            if let crate::sstable::SstError::Corruption {
                file_number,
                offset,
                detail,
            } = &error
            {
                // The footer or index is damaged: no key range is known yet.
                files
                    .corruption
                    .report(*file_number, *offset, detail, (&[], &[]));
            }
            files.forget([number]);
            Err(error.into())
        }
    }
}

/// The version's description of a table just written.
pub(crate) fn file_meta(number: u64, properties: &TableProperties) -> FileMeta {
    FileMeta {
        number,
        size_bytes: properties.size_bytes,
        smallest_key: properties.smallest_key.clone(),
        largest_key: properties.largest_key.clone(),
        entries: properties.entries,
        tombstones: properties.tombstones,
        seq_min: properties.seq_min,
        seq_max: properties.seq_max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn write_file(fs: &Fs, path: &Path) {
        let file = fs.create(path).unwrap();
        file.write_all(b"table bytes").unwrap();
        file.sync_data().unwrap();
    }

    #[test]
    fn removed_only_when_marked_and_last_holder_drops() {
        let fs = shoal_vfs::sim::SimFs::new().fs();
        let dir = Path::new("/d");
        fs.create_dir_all(dir).unwrap();
        let (kept, dropped) = (dir.join("000001.sst"), dir.join("000002.sst"));
        write_file(&fs, &kept);
        write_file(&fs, &dropped);
        let registry = FileRegistry::default();
        let first = registry.track(&fs, kept.clone(), 1, fs.open_read(&kept).unwrap());
        let second = registry.track(&fs, dropped.clone(), 2, fs.open_read(&dropped).unwrap());
        let reader = Arc::clone(&second);

        registry.mark_obsolete([2]);
        drop(second);
        assert!(fs.exists(&dropped), "a reader still holds the file");
        assert_eq!(reader.bytes(), b"table bytes");
        drop(reader);
        assert!(!fs.exists(&dropped), "the last holder removed it");
        assert_eq!(registry.removed_files(), 1);

        drop(first);
        assert!(fs.exists(&kept), "unmarked files are never removed");
    }

    #[test]
    fn obsolete_files_are_recycled_up_to_the_limit_and_reused_cut_to_their_new_length() {
        let fs = shoal_vfs::sim::SimFs::new().fs();
        let dir = Path::new("/d");
        fs.create_dir_all(dir).unwrap();
        let registry = FileRegistry::default();
        let count = RECYCLED_TABLE_FILES_MAX as u64 + 1;
        let paths: Vec<PathBuf> = (1..=count)
            .map(|n| dir.join(format!("{n:06}.sst")))
            .collect();
        let tracked: Vec<_> = paths
            .iter()
            .zip(1..)
            .map(|(path, number)| {
                write_file(&fs, path);
                registry.track(&fs, path.clone(), number, fs.open_read(path).unwrap())
            })
            .collect();
        registry.mark_obsolete(1..=count);
        drop(tracked);
        let names = fs.list(dir).unwrap();
        let recycled = names
            .iter()
            .filter(|name| manifest::parse_recycled_sst_file_name(name).is_some())
            .count();
        assert_eq!(recycled, RECYCLED_TABLE_FILES_MAX, "{names:?}");
        assert!(
            names.iter().all(|name| !name.ends_with(".sst")),
            "{names:?}"
        );
        assert_eq!(registry.removed_files(), count);

        // The oldest recycled file becomes the new table, holding only what was written.
        let new_path = dir.join("000100.sst");
        let file = registry.create_table(&fs, &new_path).unwrap();
        file.write_all(b"new").unwrap();
        file.sync_data().unwrap();
        assert_eq!(fs.open_read(&new_path).unwrap().bytes(), b"new");
        assert!(!fs.exists(&dir.join(manifest::recycled_sst_file_name(1))));
        assert_eq!(registry.reused_files(), 1);

        // With the pool empty, tables get new files.
        for number in 101..101 + RECYCLED_TABLE_FILES_MAX as u64 {
            registry
                .create_table(&fs, &dir.join(format!("{number:06}.sst")))
                .unwrap();
        }
        let fresh_path = dir.join("000200.sst");
        let fresh = registry.create_table(&fs, &fresh_path).unwrap();
        fresh.write_all(b"fresh").unwrap();
        fresh.sync_data().unwrap();
        assert_eq!(fs.open_read(&fresh_path).unwrap().bytes(), b"fresh");
        assert_eq!(registry.reused_files(), RECYCLED_TABLE_FILES_MAX as u64);
    }
}
