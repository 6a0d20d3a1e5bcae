//! Real files: what production uses.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use memmap2::UncheckedAdvice;

use crate::{DirLock, FileSystem, ReadableFile, WritableFile};

/// The production file system: real files, fdatasync, directory fsync, mmap reads.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl RealFs {
    /// A shared handle to the real file system.
    pub fn shared() -> crate::Fs {
        Arc::new(RealFs)
    }
}

struct RealWritable {
    file: File,
    /// Atomic only because writes take `&self`; they are serialised by the caller.
    position: AtomicU64,
}

impl WritableFile for RealWritable {
    fn write_all(&self, data: &[u8]) -> io::Result<()> {
        if let Err(error) = (&self.file).write_all(data) {
            // Part of `data` may be written: the position follows the descriptor's offset.
            if let Ok(offset) = (&self.file).stream_position() {
                self.position.store(offset, Ordering::Relaxed);
            }
            return Err(error);
        }
        self.position
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.file, data, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn position(&self) -> u64 {
        self.position.load(Ordering::Relaxed)
    }

    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        self.file.set_len(len_bytes)
    }

    fn rewind(&self, len_bytes: u64) -> io::Result<()> {
        self.file.set_len(len_bytes)?;
        (&self.file).seek(SeekFrom::Start(len_bytes))?;
        self.position.store(len_bytes, Ordering::Relaxed);
        Ok(())
    }

    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        crate::file_calls::sync_file_range_write(&self.file, offset, len)
    }
}

enum RealReadable {
    /// The mapping, and the file kept open beside it for reads by copy (`read_at`).
    Mapped(memmap2::Mmap, File),
    // mmap of a zero-length file fails on Linux; an empty file is simply no bytes.
    Empty,
}

impl ReadableFile for RealReadable {
    fn bytes(&self) -> &[u8] {
        match self {
            RealReadable::Mapped(map, _) => map,
            RealReadable::Empty => &[],
        }
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        match self {
            // `read_exact_at` reports a read cut short by the end of the file as
            // `UnexpectedEof`, as the trait asks.
            RealReadable::Mapped(_, file) => {
                std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
            }
            RealReadable::Empty => crate::copy_at(&[], offset, buf),
        }
    }

    fn is_mapping(&self) -> bool {
        matches!(self, RealReadable::Mapped(..))
    }

    fn release(&self, range: Range<usize>) {
        let RealReadable::Mapped(map, _) = self else {
            return;
        };
        // The map starts on a page boundary: whole pages are offsets that are multiples of
        // the page size.
        let page = page_size();
        let start = range.start / page * page;
        let end = range.end.min(map.len()) / page * page;
        if start >= end {
            return;
        }
        // SAFETY: MADV_DONTNEED on this mapping (read-only, MAP_SHARED, of a file) only
        // drops the process's page-table entries for the range: the range stays mapped, and
        // the next read of any byte in it faults the page back in from the page cache or the
        // file. The file is never modified while mapped (see `open_read`), so that read sees
        // the bytes it saw before, and slices into the range that are still borrowed keep
        // their contents: nothing Rust can observe changes. (MADV_DONTNEED would discard
        // written pages of a private mapping; this mapping is never written.)
        // A hint: if the kernel refuses it, the pages merely stay resident.
        let _ =
            unsafe { map.unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start) };
    }
}

/// The size of a memory page, in bytes (4096 if the system will not say). Allocates
/// nothing, so it may run before `main`.
pub fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system; it has no memory effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|s| s.is_power_of_two())
        .unwrap_or(4096)
}

struct RealLock {
    // Held open: the flock is released when the descriptor closes.
    _file: File,
}

impl DirLock for RealLock {}

impl FileSystem for RealFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(RealWritable {
            file,
            position: AtomicU64::new(0),
        }))
    }

    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new().write(true).open(path)?;
        Ok(Box::new(RealWritable {
            file,
            position: AtomicU64::new(0),
        }))
    }

    #[cfg(target_os = "linux")]
    fn create_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        crate::direct::open(path, true, || self.create(path))
    }

    #[cfg(target_os = "linux")]
    fn open_overwrite_direct(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        crate::direct::open(path, false, || self.open_overwrite(path))
    }

    #[cfg(target_os = "linux")]
    fn open_mapped(&self, path: &Path, size_bytes: u64) -> io::Result<Box<dyn WritableFile>> {
        crate::mapped::open(path, size_bytes, || self.open_overwrite(path))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            return Ok(Arc::new(RealReadable::Empty));
        }
        // SAFETY: Shoal never modifies a file while it is mapped for reading: SSTables and
        // manifests are immutable once written (an obsolete SSTable is recycled, and written
        // again, only after its last mapping was dropped: engine `table_files`), and WAL
        // segments are only read during recovery, before any writer opens them. Another
        // process changing the file under us is excluded by the data-directory lock.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Arc::new(RealReadable::Mapped(map, file)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)?;
        if let Some(parent) = dir.parent() {
            if !parent.as_os_str().is_empty() {
                self.sync_dir(parent)?;
            }
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(fs::metadata(path)?.len())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn DirLock>> {
        let file = crate::file_calls::open_or_create_keeping_bytes(path)?;
        // SAFETY: flock on a descriptor we own; no memory is touched.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = io::Error::last_os_error();
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "{} is locked by another process ({err}); is another Shoal using this data directory?",
                    path.display()
                ),
            ));
        }
        Ok(Box::new(RealLock { _file: file }))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::hard_link(from, to)
    }

    fn link_count(&self, path: &Path) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(fs::metadata(path)?.nlink())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir(dir)?;
        if let Some(parent) = dir.parent() {
            if !parent.as_os_str().is_empty() {
                self.sync_dir(parent)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hard_link_counts_as_a_second_name() {
        let dir = tempfile::tempdir().unwrap();
        let fs = RealFs;
        let path = dir.path().join("file");
        fs.create(&path).unwrap().write_all(b"x").unwrap();
        assert_eq!(fs.link_count(&path).unwrap(), 1);
        let sub = dir.path().join("sub");
        fs.create_dir_all(&sub).unwrap();
        fs.hard_link(&path, &sub.join("file")).unwrap();
        assert_eq!(fs.link_count(&path).unwrap(), 2);
        fs.remove(&sub.join("file")).unwrap();
        fs.remove_dir(&sub).unwrap();
        assert!(!fs.exists(&sub));
    }

    #[test]
    fn rewind_takes_back_the_tail_and_the_next_write_goes_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        let fs = RealFs;
        let file = fs.create(&path).unwrap();
        file.write_all(b"abcdef").unwrap();
        file.rewind(3).unwrap();
        assert_eq!(file.position(), 3);
        file.write_all(b"XY").unwrap();
        file.sync_data().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcXY");
    }

    #[test]
    fn writes_survive_write_back_hints_and_syncs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        let fs = RealFs;
        let file = fs.create(&path).unwrap();
        let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        for _ in 0..3 {
            file.write_all(&chunk).unwrap();
        }
        assert_eq!(file.position(), 3 << 20);
        file.start_writeback(0, 2 << 20).unwrap();
        file.start_writeback(2 << 20, 1 << 20).unwrap();
        file.sync_data().unwrap();
        let read = fs.open_read(&path).unwrap();
        assert_eq!(read.bytes().len(), 3 << 20);
        assert!(read.bytes().chunks(1 << 20).all(|c| c == chunk.as_slice()));
        // An offset the kernel cannot take is an error, not a panic (elsewhere the hint is a
        // no-op).
        if cfg!(target_os = "linux") {
            assert!(file.start_writeback(u64::MAX, 1).is_err());
        }
    }

    /// The resident size of the mapping that starts at `address` (/proc/self/smaps).
    #[cfg(target_os = "linux")]
    fn resident_kib(address: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines();
        while let Some(line) = lines.next() {
            let start = line.split(['-', ' ']).next().unwrap_or("");
            if usize::from_str_radix(start, 16) != Ok(address) || !line.contains('-') {
                continue;
            }
            for line in lines.by_ref() {
                if let Some(rest) = line.strip_prefix("Rss:") {
                    return rest.trim().trim_end_matches("kB").trim().parse().unwrap();
                }
            }
        }
        panic!("no mapping at {address:#x}");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn released_pages_leave_the_resident_set_and_read_back_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        let fs = RealFs;
        let mib = 1 << 20;
        let contents: Vec<u8> = (0..4 * mib).map(|i| (i % 251) as u8).collect();
        let file = fs.create(&path).unwrap();
        file.write_all(&contents).unwrap();
        file.sync_data().unwrap();
        let read = fs.open_read(&path).unwrap();
        let bytes = read.bytes();
        let address = bytes.as_ptr() as usize;
        assert_eq!(bytes, contents.as_slice(), "every page read");
        assert_eq!(resident_kib(address), 4096);

        // Up to a byte past the first MiB. (Where the kernel maps the file with huge pages,
        // it drops the whole 2 MiB page holding the range's end rather than split it.)
        read.release(0..mib + 100);
        let resident = resident_kib(address);
        assert!((2048..=3072).contains(&resident), "{resident} KiB resident");
        // The next range starts in the page kept, so it goes too; an end past the file is
        // cut.
        read.release(mib + 100..usize::MAX);
        assert_eq!(resident_kib(address), 0);
        // Released pages read back as they were, and are resident again once read.
        assert_eq!(bytes, contents.as_slice());
        assert_eq!(resident_kib(address), 4096);
        // Less than a page releases nothing.
        read.release(5..100);
        assert_eq!(resident_kib(address), 4096);
    }

    #[test]
    fn a_copied_read_returns_the_mapped_bytes_and_refuses_past_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        let fs = RealFs;
        let contents: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let file = fs.create(&path).unwrap();
        file.write_all(&contents).unwrap();
        file.sync_data().unwrap();
        let read = fs.open_read(&path).unwrap();
        assert!(read.is_mapping());
        let mut buf = vec![0u8; 5_000];
        read.read_at(4_093, &mut buf).unwrap();
        assert_eq!(buf, &read.bytes()[4_093..9_093]);
        // Up to the last byte is a read; one byte further is an error, not a panic.
        read.read_at(15_000, &mut buf).unwrap();
        assert_eq!(buf, &contents[15_000..]);
        let past_end = read.read_at(15_001, &mut buf).unwrap_err();
        assert_eq!(past_end.kind(), io::ErrorKind::UnexpectedEof);
        assert!(read.read_at(u64::MAX, &mut buf).is_err());

        // An empty file maps nothing; it reads nothing but an empty range.
        let empty = dir.path().join("empty");
        fs.create(&empty).unwrap().sync_data().unwrap();
        let read = fs.open_read(&empty).unwrap();
        assert!(!read.is_mapping());
        read.read_at(0, &mut []).unwrap();
        let past_end = read.read_at(0, &mut buf[..1]).unwrap_err();
        assert_eq!(past_end.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn an_overwritten_file_cut_to_its_new_length_holds_only_the_new_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        let fs = RealFs;
        let file = fs.create(&path).unwrap();
        file.write_all(&[7u8; 10_000]).unwrap();
        file.sync_data().unwrap();
        let file = fs.open_overwrite(&path).unwrap();
        file.write_all(b"new").unwrap();
        file.set_len(file.position()).unwrap();
        file.sync_data().unwrap();
        assert_eq!(fs.open_read(&path).unwrap().bytes(), b"new");
    }
}
