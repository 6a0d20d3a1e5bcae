//! `MemFs`: a plain in-memory [`FileSystem`] for databases that live only as long as their
//! process (`shoal serve --in-memory`, `Database::in_memory()`).
//!
//! Unlike [`SimFs`](crate::sim::SimFs), which models what a disk keeps after a power loss
//! (so it holds every file twice, written and synced, and zero-fills preallocations), this
//! keeps each file once and syncs are no-ops: nothing outlives the process, so there is
//! nothing to make durable.
//!
//! Files under a directory named in [`MemFs::discarding`] keep their length but not their
//! bytes: an in-memory database never replays its write-ahead log (no process reopens it),
//! so holding the log's bytes would only double the memory the memtables already use.
//! Reading such a file gives zeros, which a log reader takes as its end.
//!
//! A file read while it is still being written sees its bytes as of the open, like any
//! `ReadableFile`; the bytes are shared with the writer until it writes again (copy on
//! write), so reading an SSTable costs no copy.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::{DirLock, FileSystem, ReadableFile, WritableFile};

/// One file: its bytes, or only its length where its directory discards bytes.
#[derive(Debug, Default)]
struct MemFile {
    bytes: Mutex<Arc<Vec<u8>>>,
    discarded_len: AtomicU64,
    discards: bool,
}

impl MemFile {
    fn len(&self) -> u64 {
        if self.discards {
            self.discarded_len.load(Ordering::Acquire)
        } else {
            self.bytes.lock().len() as u64
        }
    }
}

#[derive(Debug, Default)]
struct MemState {
    files: HashMap<PathBuf, Arc<MemFile>>,
    dirs: BTreeSet<PathBuf>,
    locks: BTreeSet<PathBuf>,
}

/// The in-memory file system. Cloning shares the same files.
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<MemState>>,
    /// Directories whose files keep no bytes.
    discarding: Arc<Vec<PathBuf>>,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

impl MemFs {
    /// An empty file system that keeps every byte.
    pub fn new() -> MemFs {
        MemFs::default()
    }

    /// An empty file system whose files directly inside any of `dirs` keep their length but
    /// not their bytes (see the module docs on why).
    pub fn discarding(dirs: Vec<PathBuf>) -> MemFs {
        MemFs {
            state: Arc::default(),
            discarding: Arc::new(dirs),
        }
    }

    /// As a shared [`Fs`](crate::Fs) handle.
    pub fn fs(&self) -> crate::Fs {
        Arc::new(self.clone())
    }

    /// Bytes held by all files (discarded bytes not counted).
    pub fn held_bytes(&self) -> u64 {
        self.state
            .lock()
            .files
            .values()
            .filter(|file| !file.discards)
            .map(|file| file.len())
            .sum()
    }

    fn discards(&self, path: &Path) -> bool {
        path.parent()
            .is_some_and(|dir| self.discarding.iter().any(|d| d == dir))
    }

    fn writer(file: Arc<MemFile>) -> Box<dyn WritableFile> {
        Box::new(MemWritable {
            file,
            position: AtomicU64::new(0),
        })
    }

    fn file(&self, path: &Path) -> io::Result<Arc<MemFile>> {
        self.state
            .lock()
            .files
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(path))
    }

    fn check_dir(state: &MemState, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() && !state.dirs.contains(dir) => {
                Err(not_found(dir))
            }
            _ => Ok(()),
        }
    }
}

struct MemWritable {
    file: Arc<MemFile>,
    /// Atomic only because writes take `&self`; they are serialised by the caller.
    position: AtomicU64,
}

impl WritableFile for MemWritable {
    fn write_all(&self, data: &[u8]) -> io::Result<()> {
        let position = self.position.load(Ordering::Acquire);
        self.write_at(position, data)?;
        self.position
            .store(position + data.len() as u64, Ordering::Release);
        Ok(())
    }

    fn write_at(&self, position: u64, data: &[u8]) -> io::Result<()> {
        let end = position + data.len() as u64;
        if self.file.discards {
            self.file.discarded_len.fetch_max(end, Ordering::AcqRel);
        } else {
            let start = usize::try_from(position)
                .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
            let mut bytes = self.file.bytes.lock();
            // Copies only if a reader still holds the bytes as they were.
            let bytes = Arc::make_mut(&mut bytes);
            if bytes.len() < start {
                bytes.resize(start, 0);
            }
            let overlap = (bytes.len() - start).min(data.len());
            bytes[start..start + overlap].copy_from_slice(&data[..overlap]);
            bytes.extend_from_slice(&data[overlap..]);
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn position(&self) -> u64 {
        self.position.load(Ordering::Acquire)
    }

    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        if self.file.discards {
            self.file.discarded_len.store(len_bytes, Ordering::Release);
            return Ok(());
        }
        let len =
            usize::try_from(len_bytes).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let mut bytes = self.file.bytes.lock();
        Arc::make_mut(&mut bytes).resize(len, 0);
        Ok(())
    }
}

struct MemReadable(Arc<Vec<u8>>);

impl ReadableFile for MemReadable {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

struct MemLock {
    state: Arc<Mutex<MemState>>,
    path: PathBuf,
}

impl DirLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let mut state = self.state.lock();
        Self::check_dir(&state, path)?;
        let file = Arc::new(MemFile {
            discards: self.discards(path),
            ..MemFile::default()
        });
        state.files.insert(path.to_path_buf(), Arc::clone(&file));
        Ok(Self::writer(file))
    }

    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Self::writer(self.file(path)?))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        let file = self.file(path)?;
        let bytes = if file.discards {
            // Zeros: a log reader takes them as the end of the log.
            let len = usize::try_from(file.len())
                .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
            Arc::new(vec![0; len])
        } else {
            Arc::clone(&file.bytes.lock())
        };
        Ok(Arc::new(MemReadable(bytes)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        Self::check_dir(&state, to)?;
        let file = state.files.remove(from).ok_or_else(|| not_found(from))?;
        state.files.insert(to.to_path_buf(), file);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.state
            .lock()
            .files
            .remove(path)
            .map(drop)
            .ok_or_else(|| not_found(path))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.state.lock();
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(state
            .files
            .keys()
            .chain(state.dirs.iter())
            .filter(|path| path.parent() == Some(dir))
            .filter_map(|path| path.file_name()?.to_str().map(str::to_string))
            .collect())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.state.lock().dirs.contains(dir) {
            Ok(())
        } else {
            Err(not_found(dir))
        }
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        for ancestor in dir.ancestors() {
            if !ancestor.as_os_str().is_empty() {
                state.dirs.insert(ancestor.to_path_buf());
            }
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let state = self.state.lock();
        state.files.contains_key(path) || state.dirs.contains(path)
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(self.file(path)?.len())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn DirLock>> {
        let mut state = self.state.lock();
        if !state.locks.insert(path.to_path_buf()) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another user", path.display()),
            ));
        }
        Ok(Box::new(MemLock {
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
        }))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        Self::check_dir(&state, to)?;
        if state.files.contains_key(to) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: file exists", to.display()),
            ));
        }
        let file = state
            .files
            .get(from)
            .cloned()
            .ok_or_else(|| not_found(from))?;
        state.files.insert(to.to_path_buf(), file);
        Ok(())
    }

    fn link_count(&self, path: &Path) -> io::Result<u64> {
        let state = self.state.lock();
        let file = state.files.get(path).ok_or_else(|| not_found(path))?;
        Ok(state
            .files
            .values()
            .filter(|f| Arc::ptr_eq(f, file))
            .count() as u64)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let inside = |path: &PathBuf| path.parent() == Some(dir);
        if state.files.keys().any(inside) || state.dirs.iter().any(inside) {
            return Err(io::Error::other(format!(
                "{}: directory not empty",
                dir.display()
            )));
        }
        state.dirs.remove(dir);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_in_memory_are_no_mapping_and_copy_from_their_bytes() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        fs.create(&dir.join("a"))
            .unwrap()
            .write_all(b"hello world")
            .unwrap();
        let read = fs.open_read(&dir.join("a")).unwrap();
        assert!(!read.is_mapping(), "a copy of heap bytes is pure cost");
        let mut buf = [0u8; 5];
        read.read_at(6, &mut buf).unwrap();
        assert_eq!(&buf, b"world");
        let past_end = read.read_at(7, &mut buf).unwrap_err();
        assert_eq!(past_end.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn files_are_written_read_renamed_and_removed() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        assert!(fs.create(&dir.join("a")).is_err(), "no directory yet");
        fs.create_dir_all(dir).unwrap();
        let file = fs.create(&dir.join("a")).unwrap();
        file.write_all(b"hello ").unwrap();
        file.write_all(b"world").unwrap();
        let read = fs.open_read(&dir.join("a")).unwrap();
        assert_eq!(read.bytes(), b"hello world");
        // A write after the open does not change what the reader sees.
        file.write_all(b"!").unwrap();
        assert_eq!(read.bytes(), b"hello world");
        assert_eq!(fs.file_size(&dir.join("a")).unwrap(), 12);
        let over = fs.open_overwrite(&dir.join("a")).unwrap();
        over.write_all(b"J").unwrap();
        over.set_len(5).unwrap();
        assert_eq!(fs.open_read(&dir.join("a")).unwrap().bytes(), b"Jello");
        fs.rename(&dir.join("a"), &dir.join("b")).unwrap();
        assert!(!fs.exists(&dir.join("a")));
        assert_eq!(fs.list(dir).unwrap(), vec!["b".to_string()]);
        assert_eq!(fs.held_bytes(), 5);
        fs.remove(&dir.join("b")).unwrap();
        assert!(fs.remove(&dir.join("b")).is_err());
        let lock = fs.lock(&dir.join("LOCK")).unwrap();
        assert!(fs.lock(&dir.join("LOCK")).is_err());
        drop(lock);
        assert!(fs.lock(&dir.join("LOCK")).is_ok());
    }

    #[test]
    fn hard_links_share_a_file_and_directories_are_listed_and_removed() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let sub = dir.join("backups");
        fs.create_dir_all(&sub).unwrap();
        fs.create(&dir.join("a"))
            .unwrap()
            .write_all(b"bytes")
            .unwrap();
        fs.hard_link(&dir.join("a"), &sub.join("a")).unwrap();
        assert_eq!(fs.link_count(&dir.join("a")).unwrap(), 2);
        let mut names = fs.list(dir).unwrap();
        names.sort();
        assert_eq!(names, vec!["a".to_string(), "backups".to_string()]);
        fs.remove(&dir.join("a")).unwrap();
        assert_eq!(fs.open_read(&sub.join("a")).unwrap().bytes(), b"bytes");
        assert_eq!(fs.link_count(&sub.join("a")).unwrap(), 1);
        assert!(fs.remove_dir(&sub).is_err(), "not empty");
        fs.remove(&sub.join("a")).unwrap();
        fs.remove_dir(&sub).unwrap();
        assert!(!fs.exists(&sub));
    }

    #[test]
    fn a_discarding_directory_keeps_lengths_not_bytes() {
        let fs = MemFs::discarding(vec![PathBuf::from("/db/wal")]);
        fs.create_dir_all(Path::new("/db/wal")).unwrap();
        let log = fs.create(Path::new("/db/wal/1.log")).unwrap();
        log.write_all(&[7; 4096]).unwrap();
        assert_eq!(log.position(), 4096);
        assert_eq!(fs.file_size(Path::new("/db/wal/1.log")).unwrap(), 4096);
        assert_eq!(fs.held_bytes(), 0);
        let read = fs.open_read(Path::new("/db/wal/1.log")).unwrap();
        assert!(read.bytes().iter().all(|&b| b == 0));
        let kept = fs.create(Path::new("/db/MANIFEST-1")).unwrap();
        kept.write_all(b"kept").unwrap();
        assert_eq!(fs.held_bytes(), 4, "only the log's directory discards");
    }
}
