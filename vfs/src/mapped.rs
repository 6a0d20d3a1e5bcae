//! Files written through a shared memory mapping (Linux), for WAL segments whose commits are
//! not fdatasynced one by one.
//!
//! Why: a WAL commit with durability `none` must reach the kernel before it is acknowledged
//! (so it survives `kill -9`), and nothing more. Through `write(2)` that costs a system call
//! plus the page cache's per-write work (`ext4_da_write_begin`/`_end`, finding or allocating
//! the folio, dirty accounting): profiles of the one-writer peer bench had the WAL's
//! `write(2)` at 28% of the writer thread. A store into a `MAP_SHARED` mapping of the file
//! lands in the same page cache, which outlives the process, with no system call; the kernel
//! does its page work once per page, at the first store. Measured on the project's VM with a
//! C loop appending 1,730-byte records (a peer-bench batch) to a new 64 MiB file:
//! 1.9–2.1 µs a record through `write(2)`, 0.52–0.58 µs through the mapping of a file
//! allocated with `fallocate`. LMDB writes through a mapping for the same reason.
//!
//! How: [`open`] allocates the file's first `size_bytes` (`fallocate`, so no store can meet
//! a full disk, which would raise SIGBUS). Writes copy into a mapped window of the file
//! ([`MappedWritable`] on why a window) and advance the position; the part of a write past
//! the allocation goes through `pwrite(2)`, so a write never fails for being large. `sync_data` is `fdatasync`, which writes back pages
//! dirtied through a mapping like any other dirty page; `start_writeback` is
//! `sync_file_range` on the same pages. The file's length is at least `size_bytes` from the
//! start: bytes not yet written read as zeros (or, in a reused file, as what it held before),
//! and readers must find the end of the data from the data itself, as the WAL's replay does.
//!
//! The one thing a mapping does differently from `write(2)`: an I/O error while the kernel
//! reads a page in, at a store into a reused file's page that is no longer cached, is a
//! SIGBUS that ends the process instead of an error the WAL could report. That process
//! death is a crash the WAL recovers from like any other.
//!
//! A file system that refuses `fallocate` or the mapping gets a buffered file instead: the
//! choice is about cost, never correctness.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::WritableFile;

/// Size (and alignment) of the part of the file mapped at a time.
const WINDOW_BYTES: u64 = 2 << 20;

/// Opens `path` for writing from offset 0 (creating it if absent; an existing file keeps its
/// bytes until they are overwritten) with its first `size_bytes` allocated, to be written
/// through a mapping; falls back to `buffered` where the file system cannot allocate ahead.
pub(crate) fn open(
    path: &Path,
    size_bytes: u64,
    buffered: impl FnOnce() -> io::Result<Box<dyn WritableFile>>,
) -> io::Result<Box<dyn WritableFile>> {
    let file = crate::file_calls::open_or_create_keeping_bytes(path)?;
    let Ok(len) = libc::off_t::try_from(size_bytes) else {
        return buffered();
    };
    if size_bytes == 0 {
        return buffered();
    }
    // SAFETY: a plain syscall on a descriptor we own; no memory is passed.
    if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } != 0 {
        let error = io::Error::last_os_error();
        return match error.raw_os_error() {
            // This file system cannot allocate ahead.
            Some(libc::EOPNOTSUPP) => buffered(),
            _ => Err(error),
        };
    }
    Ok(Box::new(MappedWritable {
        file,
        allocated_bytes: size_bytes,
        window: Mutex::new(None),
        position: AtomicU64::new(0),
    }))
}

/// A file written through a mapping of [`WINDOW_BYTES`] at a time.
///
/// Why a window and not the whole file: the kernel writes a page back only after making
/// every mapping of it read-only, and on a machine with several CPUs that is a TLB flush by
/// inter-processor interrupt, page by page. With the whole segment mapped, `start_writeback`
/// spent 26% of the one-writer peer bench's writer thread in those flushes. So a window is
/// unmapped (one flush for all its pages) before any of its pages is asked to be written
/// back: by `start_writeback` when the range reaches into it, and by `sync_data`. The next
/// write maps the window again; its pages are still cached.
struct MappedWritable {
    file: File,
    /// Bytes allocated at open, written through windows; writes past them use `pwrite(2)`.
    allocated_bytes: u64,
    /// The window writes go through, if one is mapped. Locked while a write copies into it,
    /// so a `sync_data` from another thread cannot unmap it under the copy.
    window: Mutex<Option<Window>>,
    /// Atomic only because writes take `&self`; they are serialised by the caller.
    position: AtomicU64,
}

struct Window {
    /// File offset of the mapping's first byte (a multiple of [`WINDOW_BYTES`]).
    start: u64,
    map: memmap2::MmapRaw,
}

impl Window {
    fn end(&self) -> u64 {
        self.start + self.map.len() as u64
    }
}

impl MappedWritable {
    /// Maps the window holding `offset` (< `allocated_bytes`).
    fn map_window(&self, offset: u64) -> io::Result<Window> {
        debug_assert!(offset < self.allocated_bytes);
        let start = offset - offset % WINDOW_BYTES;
        let len = usize::try_from(WINDOW_BYTES.min(self.allocated_bytes - start))
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // The mapping is of a file this process writes alone (the data-directory lock keeps
        // other Shoal processes out, and the WAL opens a segment for reading only at
        // recovery, before any writer maps it), and its bytes were allocated at open, so no
        // store into it can fault for lack of space.
        let map = memmap2::MmapOptions::new()
            .offset(start)
            .len(len)
            .map_raw(&self.file)?;
        Ok(Window { start, map })
    }

    /// Unmaps the window if it holds any byte of `offset..end`.
    fn unmap_window_within(&self, offset: u64, end: u64) {
        let mut window = self.window.lock();
        if window
            .as_ref()
            .is_some_and(|window| window.start < end && offset < window.end())
        {
            *window = None;
        }
    }
}

impl WritableFile for MappedWritable {
    fn write_all(&self, data: &[u8]) -> io::Result<()> {
        let mut position = self.position.load(Ordering::Relaxed);
        let mut rest = data;
        let mut window = self.window.lock();
        while !rest.is_empty() && position < self.allocated_bytes {
            let current = match window.take() {
                Some(current) if (current.start..current.end()).contains(&position) => current,
                // Dropping the old window (if any) before mapping the next unmaps it.
                _ => self.map_window(position)?,
            };
            let current = window.insert(current);
            let offset = (position - current.start) as usize;
            let len = rest.len().min(current.map.len() - offset);
            // SAFETY: `offset + len <= map.len()` (by the `min` above), so the copy stays
            // inside the mapping, which stays mapped while `window` is locked; `rest` is a
            // separate buffer, so the ranges do not overlap. Writes are serialised by the
            // caller (the trait's contract) and nothing in this process reads the mapping,
            // so no other access touches these bytes now.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    rest.as_ptr(),
                    current.map.as_mut_ptr().add(offset),
                    len,
                );
            }
            position += len as u64;
            rest = &rest[len..];
        }
        drop(window);
        if !rest.is_empty() {
            self.file.write_all_at(rest, position)?;
            position += rest.len() as u64;
        }
        self.position.store(position, Ordering::Relaxed);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.unmap_window_within(0, u64::MAX);
        self.file.sync_data()
    }

    fn position(&self) -> u64 {
        self.position.load(Ordering::Relaxed)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        // Through pwrite, not the window: the page cache is the same, and this is rare (a
        // simulated power loss zeroing the unsynced tail), so no mapping is worth making.
        self.unmap_window_within(offset, offset.saturating_add(data.len() as u64));
        self.file.write_all_at(data, offset)
    }

    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        self.unmap_window_within(offset, offset.saturating_add(len));
        crate::file_calls::sync_file_range_write(&self.file, offset, len)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::{FileSystem, RealFs, WritableFile};

    /// A file opened with `open_mapped` in a new temporary directory (which lives as long as
    /// the first element), with its path.
    fn mapped(size_bytes: u64) -> (tempfile::TempDir, PathBuf, Box<dyn WritableFile>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("segment");
        let file = RealFs.open_mapped(&path, size_bytes).unwrap();
        (dir, path, file)
    }

    fn read(path: &std::path::Path) -> Vec<u8> {
        RealFs.open_read(path).unwrap().bytes().to_vec()
    }

    #[test]
    fn writes_land_in_the_file_in_and_past_the_mapping() {
        let (_dir, path, file) = mapped(10_000);
        let chunk: Vec<u8> = (0..=255u8).cycle().take(3_000).collect();
        // 3 chunks inside the mapping, one across its end, one past it.
        for _ in 0..5 {
            file.write_all(&chunk).unwrap();
        }
        assert_eq!(file.position(), 15_000);
        file.start_writeback(0, 8192).unwrap();
        file.sync_data().unwrap();
        let bytes = read(&path);
        assert_eq!(bytes.len(), 15_000);
        assert!(bytes.chunks(3_000).all(|c| c == chunk.as_slice()));
    }

    #[test]
    fn writes_cross_windows_around_write_backs_and_syncs_from_another_thread() {
        // Not a multiple of the window, so the last window is short, and written past.
        let allocated_bytes = 2 * super::WINDOW_BYTES + 12_345;
        let (_dir, path, file) = mapped(allocated_bytes);
        let file: std::sync::Arc<dyn WritableFile> = std::sync::Arc::from(file);
        let chunk: Vec<u8> = (0..7_001u32).map(|i| (i % 251) as u8).collect();
        let chunks = (allocated_bytes as usize + 100_000) / chunk.len();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            // Syncs may come from another thread while the writer goes on (the WAL's flush).
            scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    file.sync_data().unwrap();
                }
            });
            for i in 0..chunks {
                file.write_all(&chunk).unwrap();
                if i % 50 == 0 {
                    let end = file.position() - file.position() % 4096;
                    file.start_writeback(0, end).unwrap();
                }
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        file.sync_data().unwrap();
        let bytes = read(&path);
        assert_eq!(bytes.len(), chunks * chunk.len());
        assert!(bytes.chunks(chunk.len()).all(|c| c == chunk.as_slice()));
    }

    #[test]
    fn the_unwritten_rest_of_the_allocation_reads_as_zeros() {
        let (_dir, path, file) = mapped(1 << 16);
        file.write_all(b"header").unwrap();
        file.sync_data().unwrap();
        drop(file);
        let bytes = read(&path);
        assert_eq!(bytes.len(), 1 << 16);
        assert_eq!(&bytes[..6], b"header");
        assert!(bytes[6..].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_reused_file_is_overwritten_from_the_start_and_keeps_its_tail() {
        let (_dir, path, old) = mapped(8192);
        old.write_all(&[7u8; 8192]).unwrap();
        old.sync_data().unwrap();
        drop(old);
        let reused = RealFs.open_mapped(&path, 8192).unwrap();
        reused.write_all(b"new").unwrap();
        reused.sync_data().unwrap();
        drop(reused);
        let bytes = read(&path);
        assert_eq!(&bytes[..3], b"new");
        assert!(bytes[3..].iter().all(|&b| b == 7));
        assert_eq!(bytes.len(), 8192);
    }

    #[test]
    fn a_zero_size_is_a_plain_file() {
        let (_dir, path, file) = mapped(0);
        file.write_all(b"abc").unwrap();
        file.sync_data().unwrap();
        assert_eq!(read(&path), b"abc");
    }
}
