//! The file calls the real file kinds share (`real.rs`'s plain files, `mapped.rs`'s mapped
//! WAL segments): opening a file without losing its bytes, and starting write-back.

use std::fs::{File, OpenOptions};
use std::io;
#[cfg(target_os = "linux")]
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// Opens `path` for reading and writing, creating it if absent and keeping its bytes if not.
pub(crate) fn open_or_create_keeping_bytes(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// [`WritableFile::start_writeback`](crate::WritableFile::start_writeback) for a real file: Linux `sync_file_range` with
/// `SYNC_FILE_RANGE_WRITE`, a no-op elsewhere.
pub(crate) fn sync_file_range_write(file: &File, offset: u64, len: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let (Ok(offset), Ok(len)) = (
            libc::off64_t::try_from(offset),
            libc::off64_t::try_from(len),
        ) else {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        };
        // SAFETY: a plain syscall on a descriptor the caller owns; no memory is passed.
        let result = unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
        };
        if result == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, offset, len);
        Ok(())
    }
}
