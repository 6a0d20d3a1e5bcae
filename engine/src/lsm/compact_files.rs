//! When an SSTable's file is deleted: only once nothing can read it any more.
//!
//! After a compaction (or a tree drop) installs a version without some files, readers may
//! still hold them: an iterator keeps the [`SuperVersion`](crate::lsm::superversion) it
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

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use vfs::{Fs, ReadableFile};

/// Whether one file may be removed once its last reader is gone.
#[derive(Debug, Default)]
pub(crate) struct FileMark {
    obsolete: AtomicBool,
}

/// The marks of every open SSTable, plus a count of files removed so far.
#[derive(Debug, Default)]
pub(crate) struct FileRegistry {
    /// File number → mark. Holds exactly the files opened and not yet marked obsolete, so it
    /// is bounded by the number of live files.
    marks: Mutex<HashMap<u64, Arc<FileMark>>>,
    /// Files actually removed by a [`TrackedFile`] drop.
    removed_files: Arc<AtomicU64>,
}

impl FileRegistry {
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
            mark,
            removed_files: Arc::clone(&self.removed_files),
        })
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

    /// How many obsolete files have been removed so far.
    pub(crate) fn removed_files(&self) -> u64 {
        self.removed_files.load(Ordering::Relaxed)
    }
}

/// A readable SSTable file that removes itself on drop once marked obsolete.
struct TrackedFile {
    inner: Arc<dyn ReadableFile>,
    fs: Fs,
    path: PathBuf,
    mark: Arc<FileMark>,
    removed_files: Arc<AtomicU64>,
}

impl ReadableFile for TrackedFile {
    fn bytes(&self) -> &[u8] {
        self.inner.bytes()
    }
}

impl Drop for TrackedFile {
    fn drop(&mut self) {
        if !self.mark.obsolete.load(Ordering::Acquire) {
            return;
        }
        match self.fs.remove(&self.path) {
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
        let fs = vfs::sim::SimFs::new().fs();
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
}
