//! Files written around the OS page cache (Linux `O_DIRECT`), for SSTables.
//!
//! Why: on the VM Shoal is measured on, a buffered `write(2)` into a page the page cache has
//! to allocate costs several times the copy itself, because the guest hands freed memory
//! back to its host (free page reporting) and the first touch of such a page faults in the
//! host. Flushes and compactions write every SSTable byte that way: profiles of the
//! one-writer peer bench had `copy_folio_from_iter_atomic` at 44% of the flush thread and 48%
//! of the compaction thread, and `dd` wrote a new 512 MiB file at 1.63 s of system time
//! buffered against 0.06 s with `O_DIRECT`. Written directly, a table's bytes go from this
//! writer's buffer to the device; the page cache fills only with what is read later (reads
//! stay memory-mapped), and a cold read was measured far cheaper than a fresh-page write:
//! with SSTables written directly, the peer bench's CPU per batch fell from 14.9–17.4 µs to
//! 9.9–10.3 µs with one writer. RocksDB's `use_direct_io_for_flush_and_compaction` is the
//! same choice.
//!
//! How: `O_DIRECT` transfers must start at an aligned file offset and memory address and
//! span whole aligned blocks. Writes go into a buffer of [`DIRECT_BUFFER_BYTES`] aligned to
//! [`DIRECT_ALIGN_BYTES`]; each time it fills it is handed to the file's I/O thread, which
//! writes it at the next aligned file offset while the writer fills the file's second
//! buffer. (A direct write returns only once the device has the bytes; written inline,
//! compaction waited on every MiB, and one-writer sustained ingest of 3M batches fell to
//! 53.2–55.8k batches/s against 59.7–73.0k buffered; with the thread, 54.5–58.8k.) A write
//! error comes back with the buffer and is returned by the next `write_all` or `sync_data`.
//! `sync_data` waits for the buffer in flight, writes the partial tail padded with zeros to
//! a whole block, cuts the file back to the bytes actually written, then fdatasyncs (which
//! also makes the new length and the file's block allocation durable). The tail stays in
//! the buffer, so a later write continues it and the next transfer rewrites that block
//! whole. Until `sync_data`, buffered bytes are in no file: readers see a table's bytes once
//! it is synced, which is when the engine first opens it.
//!
//! A file system that refuses `O_DIRECT` at open (tmpfs, for one) gets a buffered file
//! instead: the choice is about cost, never correctness.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use parking_lot::Mutex;

use crate::WritableFile;

/// Alignment of every transfer's file offset, length and buffer address: 4 KiB covers the
/// logical block size of every device Linux drives.
pub const DIRECT_ALIGN_BYTES: usize = 4096;

/// Bytes gathered before each transfer (a multiple of [`DIRECT_ALIGN_BYTES`]).
pub const DIRECT_BUFFER_BYTES: usize = 1 << 20;

const _: () = assert!(DIRECT_BUFFER_BYTES.is_multiple_of(DIRECT_ALIGN_BYTES));

/// Opens `path` for direct writing from offset 0, creating and truncating it when `create`
/// (else it must exist and keeps its bytes until overwritten or cut); falls back to a
/// buffered file where the file system refuses `O_DIRECT`.
pub(crate) fn open(
    path: &Path,
    create: bool,
    buffered: impl FnOnce() -> io::Result<Box<dyn WritableFile>>,
) -> io::Result<Box<dyn WritableFile>> {
    let mut options = OpenOptions::new();
    options.write(true).custom_flags(libc::O_DIRECT);
    if create {
        options.create(true).truncate(true);
    }
    direct_or_buffered(options.open(path), buffered)
}

/// The direct writer over `opened`, or the buffered file when the open was refused for
/// `O_DIRECT`'s sake.
fn direct_or_buffered(
    opened: io::Result<File>,
    buffered: impl FnOnce() -> io::Result<Box<dyn WritableFile>>,
) -> io::Result<Box<dyn WritableFile>> {
    match opened {
        Ok(file) => Ok(Box::new(DirectWritable::new(file)?)),
        // EINVAL: this file system does not do O_DIRECT.
        Err(error) if error.raw_os_error() == Some(libc::EINVAL) => buffered(),
        Err(error) => Err(error),
    }
}

struct DirectWritable {
    /// Writes are serialised by the caller (`WritableFile`); the lock only lets `sync_data`
    /// and `position` take `&self` too.
    state: Mutex<DirectState>,
}

/// A [`DIRECT_BUFFER_BYTES`] buffer whose usable part starts at an aligned address. Moving
/// it between threads moves no bytes, so the alignment holds.
struct AlignedBuffer {
    /// `DIRECT_BUFFER_BYTES` plus room to align its start; only `bytes()` is ever used.
    memory: Vec<u8>,
    aligned_start: usize,
}

impl AlignedBuffer {
    fn new() -> AlignedBuffer {
        let memory = vec![0u8; DIRECT_BUFFER_BYTES + DIRECT_ALIGN_BYTES];
        let aligned_start = memory.as_ptr().align_offset(DIRECT_ALIGN_BYTES);
        AlignedBuffer {
            memory,
            aligned_start,
        }
    }

    fn bytes(&mut self) -> &mut [u8] {
        &mut self.memory[self.aligned_start..self.aligned_start + DIRECT_BUFFER_BYTES]
    }
}

/// A full buffer on its way to the device, and the same buffer on its way back.
struct Transfer {
    buffer: AlignedBuffer,
    file_offset: u64,
}

/// The thread that writes full buffers while the writer fills the next one: a direct write
/// blocks until the device has the bytes, and without it compaction waited on every MiB
/// (sustained ingest fell by a sixth). Two buffers per file: one filling, the other either
/// spare or in flight.
struct Transfers {
    to_device: Option<std::sync::mpsc::SyncSender<Transfer>>,
    returned: std::sync::mpsc::Receiver<(AlignedBuffer, io::Result<()>)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn thread_stopped() -> io::Error {
    io::Error::other("the direct-write thread has stopped")
}

impl Transfers {
    fn start(file: &File) -> io::Result<Transfers> {
        let file = file.try_clone()?;
        // Capacity 0: a send hands the buffer straight to the thread, which is idle
        // whenever no buffer is in flight.
        let (to_device, jobs) = std::sync::mpsc::sync_channel::<Transfer>(0);
        let (done, returned) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("shoal-direct-io".into())
            .spawn(move || {
                for mut transfer in jobs {
                    let result = file.write_all_at(transfer.buffer.bytes(), transfer.file_offset);
                    if done.send((transfer.buffer, result)).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Transfers {
            to_device: Some(to_device),
            returned,
            thread: Some(thread),
        })
    }

    /// Sends a full buffer to be written at `file_offset`.
    fn send(&self, buffer: AlignedBuffer, file_offset: u64) -> io::Result<()> {
        let to_device = self.to_device.as_ref().ok_or_else(thread_stopped)?;
        to_device
            .send(Transfer {
                buffer,
                file_offset,
            })
            .map_err(|_| thread_stopped())
    }
}

impl Drop for Transfers {
    fn drop(&mut self) {
        // Closing the channel ends the thread once its write (if any) returns.
        drop(self.to_device.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct DirectState {
    file: File,
    /// The buffer being filled.
    filling: AlignedBuffer,
    /// The other buffer; `None` exactly while it is in flight.
    spare: Option<AlignedBuffer>,
    transfers: Transfers,
    /// Bytes of `filling` holding data not yet sent.
    buffered_bytes: usize,
    /// File offset where `filling`'s first byte belongs (always aligned).
    buffer_file_offset: u64,
    /// Bytes written so far: the file's length once synced.
    position: u64,
}

impl DirectWritable {
    fn new(file: File) -> io::Result<DirectWritable> {
        let transfers = Transfers::start(&file)?;
        Ok(DirectWritable {
            state: Mutex::new(DirectState {
                file,
                filling: AlignedBuffer::new(),
                spare: Some(AlignedBuffer::new()),
                transfers,
                buffered_bytes: 0,
                buffer_file_offset: 0,
                position: 0,
            }),
        })
    }
}

impl DirectState {
    /// Takes the other buffer, waiting for it if it is in flight. A failed write of it is
    /// returned once, with the buffer kept as the spare, so the file stays consistent for
    /// the caller to give up on.
    fn take_spare(&mut self) -> io::Result<AlignedBuffer> {
        if let Some(spare) = self.spare.take() {
            return Ok(spare);
        }
        let (buffer, result) = self
            .transfers
            .returned
            .recv()
            .map_err(|_| thread_stopped())?;
        match result {
            Ok(()) => Ok(buffer),
            Err(error) => {
                self.spare = Some(buffer);
                Err(error)
            }
        }
    }

    /// Sends the full buffer to the device and takes the other one to fill.
    fn send_full_buffer(&mut self) -> io::Result<()> {
        debug_assert_eq!(self.buffered_bytes, DIRECT_BUFFER_BYTES);
        debug_assert!(self
            .buffer_file_offset
            .is_multiple_of(DIRECT_ALIGN_BYTES as u64));
        let next = self.take_spare()?;
        let full = std::mem::replace(&mut self.filling, next);
        self.transfers.send(full, self.buffer_file_offset)?;
        self.buffer_file_offset += DIRECT_BUFFER_BYTES as u64;
        self.buffered_bytes = 0;
        Ok(())
    }
}

impl WritableFile for DirectWritable {
    fn write_all(&self, mut data: &[u8]) -> io::Result<()> {
        let mut state = self.state.lock();
        while !data.is_empty() {
            let at = state.buffered_bytes;
            let taken = (DIRECT_BUFFER_BYTES - at).min(data.len());
            state.filling.bytes()[at..at + taken].copy_from_slice(&data[..taken]);
            state.buffered_bytes += taken;
            state.position += taken as u64;
            data = &data[taken..];
            if state.buffered_bytes == DIRECT_BUFFER_BYTES {
                state.send_full_buffer()?;
            }
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        // Every full buffer first: the tail's block comes after them.
        let spare = state.take_spare()?;
        state.spare = Some(spare);
        let tail = state.buffered_bytes;
        if tail > 0 {
            // The padding is cut off below; the tail itself stays buffered (module docs).
            let padded = tail.next_multiple_of(DIRECT_ALIGN_BYTES);
            let file_offset = state.buffer_file_offset;
            let state = &mut *state;
            state.filling.bytes()[tail..padded].fill(0);
            state
                .file
                .write_all_at(&state.filling.bytes()[..padded], file_offset)?;
        }
        state.file.set_len(state.position)?;
        state.file.sync_data()
    }

    fn position(&self) -> u64 {
        self.state.lock().position
    }

    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        self.state.lock().file.set_len(len_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FileSystem, RealFs};

    /// `len` bytes that differ at every offset of a block, so a misplaced transfer shows.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    /// Writes `data` in uneven pieces, as a table builder's blocks arrive.
    fn write_in_pieces(file: &dyn WritableFile, data: &[u8]) {
        let mut rest = data;
        for piece in [1000usize, 7000, 13, 4096].iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (now, later) = rest.split_at((*piece).min(rest.len()));
            file.write_all(now).unwrap();
            rest = later;
        }
    }

    #[test]
    fn files_of_every_size_read_back_whole_after_sync() {
        let dir = tempfile::tempdir().unwrap();
        let buffer = DIRECT_BUFFER_BYTES;
        for len in [
            0,
            1,
            4095,
            4096,
            4097,
            buffer - 1,
            buffer,
            buffer + 1,
            3 * buffer + 123,
        ] {
            let path = dir.path().join(format!("{len}.sst"));
            let file = RealFs.create_direct(&path).unwrap();
            let data = pattern(len);
            write_in_pieces(file.as_ref(), &data);
            assert_eq!(file.position(), len as u64);
            file.sync_data().unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), data, "{len} bytes");
            let mapped = RealFs.open_read(&path).unwrap();
            assert_eq!(mapped.bytes(), &data[..], "{len} bytes, mapped");
        }
    }

    #[test]
    fn writes_after_a_sync_continue_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("continued.sst");
        let file = RealFs.create_direct(&path).unwrap();
        let data = pattern(DIRECT_BUFFER_BYTES + 9000);
        file.write_all(&data[..5000]).unwrap();
        file.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), &data[..5000]);
        // The synced tail block is rewritten whole by the next transfers.
        write_in_pieces(file.as_ref(), &data[5000..]);
        file.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), data);
    }

    #[test]
    fn an_overwritten_file_cut_to_its_new_length_holds_only_the_new_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recycled.sst");
        std::fs::write(&path, vec![0xee; 3 * DIRECT_BUFFER_BYTES]).unwrap();
        let file = RealFs.open_overwrite_direct(&path).unwrap();
        let data = pattern(10_000);
        write_in_pieces(file.as_ref(), &data);
        // As the engine's recycled tables do: cut to the position, then sync.
        file.set_len(file.position()).unwrap();
        file.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), data);
    }

    #[test]
    fn a_failed_device_write_is_returned_by_a_later_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("read-only.sst");
        std::fs::write(&path, b"").unwrap();
        // A descriptor open for reading only: every transfer fails with EBADF on the I/O
        // thread, after the write that filled the buffer has returned.
        let read_only = File::open(&path);
        let file = direct_or_buffered(read_only, || RealFs.create(&path)).unwrap();
        file.write_all(&pattern(DIRECT_BUFFER_BYTES)).unwrap();
        assert!(file.sync_data().is_err());
    }

    #[test]
    fn a_file_system_refusing_direct_io_gets_the_buffered_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("buffered.sst");
        let refused = Err(io::Error::from_raw_os_error(libc::EINVAL));
        let mut fell_back = false;
        let file = direct_or_buffered(refused, || {
            fell_back = true;
            RealFs.create(&path)
        })
        .unwrap();
        assert!(fell_back);
        file.write_all(b"bytes").unwrap();
        file.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"bytes");
        // Any other failure is the caller's to see.
        let missing = Err(io::Error::from(io::ErrorKind::NotFound));
        let error = direct_or_buffered(missing, || RealFs.create(&path)).err();
        assert_eq!(error.map(|e| e.kind()), Some(io::ErrorKind::NotFound));
    }
}
