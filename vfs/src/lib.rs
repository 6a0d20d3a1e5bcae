//! The storage trait that every file Shoal writes goes through.
//!
//! Durability in Shoal is only as good as the order in which bytes reach the disk, so all
//! file I/O of the WAL, the SSTables and the manifest goes through [`FileSystem`]. Two
//! implementations exist:
//!
//! - [`RealFs`]: real files, `fdatasync` through [`WritableFile::sync_data`], directory
//!   fsync through [`FileSystem::sync_dir`], reads through memmap2; on Linux,
//!   [`FileSystem::create_direct`] writes around the page cache (`direct.rs`) and
//!   [`FileSystem::open_mapped`] writes through a shared memory mapping (`mapped.rs`).
//! - [`sim::SimFs`]: an in-memory file system for fault-injection tests. It records which
//!   bytes and which directory entries were made durable and, on a simulated power loss,
//!   drops or tears everything that was not.
//!
//! The contract both implement (and that callers must follow to be crash safe):
//! - Bytes appended to a file are durable only after `sync_data` on that file returns Ok.
//! - A newly created file, a rename or a removal is durable only after `sync_dir` on the
//!   directory holding it returns Ok.
//! - `rename` replaces the target atomically: after a crash either the old or the new
//!   target is visible, never a mix.
//! - `list` names files and subdirectories alike.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(target_os = "linux")]
mod direct;
mod file_calls;
#[cfg(target_os = "linux")]
mod mapped;
pub mod mem;
mod real;
pub mod sim;

pub use real::{page_size, RealFs};

/// An append-only (or overwrite-from-start) file being written.
///
/// Methods take `&self` so that one thread can fdatasync a file while another goes on writing
/// it (the WAL syncs before a flush without stopping its writers). Writes themselves must not
/// run concurrently with each other: the caller serialises them.
pub trait WritableFile: Send + Sync {
    /// Writes `data` at the current position and advances it. Not durable until `sync_data`.
    /// A write that fails may have written a prefix of `data` (a full disk takes what fits):
    /// the position then stands after that prefix, as a descriptor's offset does.
    fn write_all(&self, data: &[u8]) -> io::Result<()>;
    /// Makes durable (fdatasync) at least every byte whose write returned before this call
    /// began; bytes written while it runs may or may not be. The file's directory entry is
    /// not covered: a new file also needs [`FileSystem::sync_dir`].
    fn sync_data(&self) -> io::Result<()>;
    /// The current write position in bytes.
    fn position(&self) -> u64;
    /// Cuts (or extends with zeros) the file to `len_bytes`; not durable until `sync_data`.
    /// The write position is left where it is. Files reused from an earlier life (recycled
    /// SSTables) need it to drop the old tail; implementations that never serve such files
    /// may keep the default, which refuses.
    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        let _ = len_bytes;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "set_len is not supported by this file",
        ))
    }
    /// Takes back everything written at or past `len_bytes`, a write that failed part-way
    /// included: cuts the file to `len_bytes` and moves the write position there. Not durable
    /// until `sync_data`. How the WAL undoes a group write that ran out of space (its
    /// `writer.rs` says why). The default refuses, and a caller that meets the refusal must
    /// treat the file as unusable.
    fn rewind(&self, len_bytes: u64) -> io::Result<()> {
        let _ = len_bytes;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "rewind is not supported by this file",
        ))
    }
    /// Writes `data` at `offset` without moving the write position: how a WAL segment is
    /// zero-filled ahead of its writer, a step at a time. Not durable until `sync_data`;
    /// like every write, serialised with the others by the caller. The default refuses:
    /// files written only front to back need not support it.
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let _ = (offset, data);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "write_at is not supported by this file",
        ))
    }
    /// Asks the OS to start writing `len` bytes from `offset` to the device now, without
    /// waiting (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`; a no-op elsewhere): a hint
    /// that makes a later `sync_data` find less to write. Durability is unchanged, so the
    /// default does nothing.
    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }
}

/// A file opened for reading, whole: real files are memory-mapped.
pub trait ReadableFile: Send + Sync {
    /// Every byte of the file as it was when opened.
    fn bytes(&self) -> &[u8];
    /// Copies the bytes at `offset..offset + buf.len()` into `buf`: the same bytes
    /// [`ReadableFile::bytes`] holds there, exactly `buf.len()` of them. A range reaching
    /// past the end of the file is an error (`UnexpectedEof`), and so is a failed read;
    /// neither panics. A mapped file reads them with `pread(2)`, so nothing of the file
    /// enters the process's resident memory; the default copies from `bytes()`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        copy_at(self.bytes(), offset, buf)
    }
    /// Whether [`ReadableFile::bytes`] is a memory mapping of a file, whose pages a read
    /// leaves in the process's resident memory: only then is a copy by
    /// [`ReadableFile::read_at`] worth making to keep them out. Files held on the heap
    /// (the in-memory and simulated file systems) say no: for them a copy is pure cost.
    fn is_mapping(&self) -> bool {
        false
    }
    /// A hint that the bytes of `range` will not be read again soon: a mapped file takes the
    /// pages holding them out of the process's resident memory (they stay in the OS page
    /// cache, and a later read maps them back in). What [`ReadableFile::bytes`] returns is
    /// unchanged, before and after. Whole pages, from the one holding `range.start` to the
    /// one before the page holding `range.end`: consecutive ranges `a..b`, `b..c` release
    /// every page of `a..c` but the last, which may still be in use. (The kernel may drop
    /// more, such as a whole huge page holding the end: a later read maps it back.) A walk that
    /// reads a file once, front to back, calls it behind itself, so the file's pages do not
    /// all stay resident. The default does nothing (files held in memory).
    fn release(&self, range: std::ops::Range<usize>) {
        let _ = range;
    }
}

/// [`ReadableFile::read_at`] from a file's bytes held in memory.
fn copy_at(bytes: &[u8], offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let source = usize::try_from(offset)
        .ok()
        .and_then(|start| Some(start..start.checked_add(buf.len())?))
        .and_then(|range| bytes.get(range))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "read of {} bytes at {offset} past the end of a {}-byte file",
                    buf.len(),
                    bytes.len()
                ),
            )
        })?;
    buf.copy_from_slice(source);
    Ok(())
}

/// Holds an exclusive lock on a data directory until dropped.
pub trait DirLock: Send + Sync {}

/// Everything Shoal needs from a file system.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Creates `path` (truncating any existing file) for writing from offset 0.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Opens an existing file for writing from offset 0 *without* truncating it, so that
    /// preallocated or recycled blocks are overwritten in place (cheaper to fdatasync than
    /// appends, which must also update the file size).
    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// [`FileSystem::create`] for a file that is written once, front to back, and read only
    /// after its `sync_data` (an SSTable): its bytes may go to the device around the OS page
    /// cache, and readers then see them only once `sync_data` has returned. The default is
    /// `create`; `RealFs` on Linux uses `O_DIRECT` (see `direct.rs` on why).
    fn create_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// [`FileSystem::open_overwrite`] on the terms of [`FileSystem::create_direct`].
    fn open_overwrite_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.open_overwrite(path)
    }
    /// Opens `path` for writing from offset 0, creating it if absent (an existing file keeps
    /// its bytes until overwritten, as with [`FileSystem::open_overwrite`]), for a file
    /// written front to back whose writes need only reach the OS, not the device, to be
    /// acknowledged (a WAL segment without per-commit syncs). The file may be made at least
    /// `size_bytes` long up front, reading as zeros (or its old bytes) past what was written:
    /// its readers must find the end of the data from the data. The contract is otherwise
    /// that of any [`WritableFile`]. The default opens a plain file; `RealFs` on Linux
    /// allocates `size_bytes` and writes through a shared memory mapping (see `mapped.rs` on
    /// why).
    fn open_mapped(&self, path: &Path, size_bytes: u64) -> io::Result<Box<dyn WritableFile>> {
        let _ = size_bytes;
        if self.exists(path) {
            self.open_overwrite(path)
        } else {
            self.create(path)
        }
    }
    /// Opens `path` for reading.
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>>;
    /// Atomically renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// File names (not paths) directly inside `dir`, in no particular order.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Makes creations, renames and removals inside `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates `dir` and its parents (durably).
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Size of a file in bytes.
    fn file_size(&self, path: &Path) -> io::Result<u64>;
    /// Takes an exclusive lock on `path` (creating it); fails if another process holds it.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn DirLock>>;
    /// Makes `to` a second name of the file `from` (a hard link): both names share the same
    /// bytes, and the bytes live until the last name is removed and the last reader lets go.
    /// Like a create or a rename, the new name is durable only after [`FileSystem::sync_dir`]
    /// on the directory holding `to`. Fails if `to` exists.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// How many names the file at `path` has. A file with more than one must never be written
    /// in place: its other names (a backup's links) would see the new bytes.
    fn link_count(&self, path: &Path) -> io::Result<u64>;
    /// Removes the empty directory `dir`, durably.
    fn remove_dir(&self, dir: &Path) -> io::Result<()>;
}

/// Whether `error` says the disk (or the user's quota) is full: `ENOSPC` or `EDQUOT`. Such a
/// failure of a write, a create or an allocation means the bytes asked for were not all
/// written, and nothing else went wrong: once space is freed, the same work can be done again
/// into a new file (or after [`WritableFile::rewind`]). The same code from an fsync is no such
/// promise (the kernel may have dropped the dirty pages), so callers look at what failed too.
pub fn is_no_space(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    ) || matches!(error.raw_os_error(), Some(code) if code == libc::ENOSPC || code == libc::EDQUOT)
}

/// Shared handle to a file system.
pub type Fs = Arc<dyn FileSystem>;

/// Joins a directory and a file name; a tiny helper so call sites read as intent.
pub fn child(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}
