//! `SimFs`: an in-memory [`FileSystem`] that simulates power loss and I/O errors.
//!
//! The model follows what POSIX (and ext4/xfs in practice) promises, and no more:
//!
//! - Every file is an *inode* with its current bytes and its durable bytes, the latter as of
//!   the last successful `sync_data` on any handle of that inode.
//! - Every directory has a live map (name -> inode) and a durable map, the latter as of the
//!   last successful `sync_dir`. `create`, `rename` and `remove` change only the live map.
//! - Directories themselves are created durably (`create_dir_all` promises that).
//!
//! [`SimFs::power_loss`] pulls the plug: every directory reverts to its durable map, inodes no
//! directory references any more disappear, and every surviving inode gets its durable bytes
//! plus a seeded random choice of its unsynced changes (none; a prefix of the appended bytes;
//! or a random subset of the dirty 512-byte sectors), sometimes with one dirty sector torn
//! (its unsynced bytes replaced by garbage). Bytes that were durable are never altered: a real
//! disk writes a sector atomically, so a torn write can only garble what had not been synced.
//! Handles opened before the crash are stale afterwards and fail every call, so a test can drop
//! the old instance and reopen cleanly.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::{DirLock, FileSystem, Fs, ReadableFile, WritableFile};

/// Size of the unit a simulated disk writes atomically.
const SECTOR_BYTES: usize = 512;

type InodeId = u64;

#[derive(Debug, Default)]
struct Inode {
    current: Vec<u8>,
    durable: Vec<u8>,
    /// Byte range of `current` written since the last sync, so a sync copies only that.
    dirty: Option<(usize, usize)>,
    /// Set when the file was truncated (create on an existing name) since the last sync.
    truncated: bool,
}

#[derive(Debug, Default)]
struct Directory {
    live: BTreeMap<String, InodeId>,
    durable: BTreeMap<String, InodeId>,
}

/// The seeds a simulated-crash test runs: `default_iterations` consecutive seeds from a random
/// base (or `$iterations_var` of them), or the single seed in `$seed_var` to replay a failure.
/// Every such test prints the seed of a failing iteration with the variable that replays it.
pub fn crash_seeds(iterations_var: &str, seed_var: &str, default_iterations: u64) -> Vec<u64> {
    let parse = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    if let Some(seed) = parse(seed_var) {
        return vec![seed];
    }
    let iterations = parse(iterations_var).unwrap_or(default_iterations);
    let base: u64 = rand::random::<u64>() >> 8;
    (0..iterations).map(|i| base + i).collect()
}

/// Counters a test can assert on.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SimCounters {
    /// Successful `sync_data` calls.
    pub data_syncs: u64,
    /// Successful `sync_dir` calls.
    pub dir_syncs: u64,
    /// Bytes accepted by `write_all`.
    pub bytes_written: u64,
}

#[derive(Debug, Default)]
struct SimState {
    directories: BTreeMap<PathBuf, Directory>,
    inodes: HashMap<InodeId, Inode>,
    inode_next: InodeId,
    /// Incremented by every power loss; handles from an older epoch are stale.
    epoch: u64,
    locks: HashMap<PathBuf, u64>,
    lock_next: u64,
    fail_syncs: bool,
    fail_writes: bool,
    /// Mutating calls still allowed before the disk freezes (None: no limit). A frozen disk
    /// fails every mutating call and changes nothing, as if the power went out at that
    /// instant; the test then calls `power_loss` to decide what survived.
    mutations_left: Option<u64>,
    /// Most bytes the files may hold together (None: no limit); see [`SimFs::set_space_bytes`].
    space_bytes: Option<u64>,
    /// Mutating calls still allowed before the disk fills up; see [`SimFs::full_after`].
    full_in: Option<u64>,
    sync_latency: std::time::Duration,
    counters: SimCounters,
}

/// The fault-injecting in-memory file system. Cloning shares the same simulated disk.
#[derive(Debug, Clone, Default)]
pub struct SimFs {
    state: Arc<Mutex<SimState>>,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected {what} failure (EIO)"))
}

fn stale() -> io::Error {
    io::Error::other("stale file handle: opened before a simulated power loss")
}

/// Splits a file path into its directory and file name.
fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| not_found(path))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((dir, name.to_string()))
}

fn no_space() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOSPC)
}

impl SimState {
    /// Bytes the files named in some directory hold (a file with two names counts once).
    fn used_bytes(&self) -> u64 {
        let mut ids: Vec<InodeId> = self
            .directories
            .values()
            .flat_map(|directory| directory.live.values().copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.iter()
            .filter_map(|id| self.inodes.get(id))
            .map(|inode| inode.current.len() as u64)
            .sum()
    }

    /// How many bytes a file may still grow by (u64::MAX without a limit).
    fn space_left(&self) -> u64 {
        match self.space_bytes {
            Some(space) => space.saturating_sub(self.used_bytes()),
            None => u64::MAX,
        }
    }

    /// Counts down [`SimFs::full_after`]: the call that reaches zero finds the disk full.
    fn count_towards_full(&mut self) {
        match self.full_in {
            Some(0) => {}
            Some(ref mut left) => *left -= 1,
            None => return,
        }
        if self.full_in == Some(0) {
            self.full_in = None;
            self.space_bytes = Some(self.used_bytes());
        }
    }

    /// Spends one mutating call of the freeze budget, or fails if the disk is frozen.
    fn spend_mutation(&mut self) -> io::Result<()> {
        self.count_towards_full();
        match self.mutations_left {
            Some(0) => Err(injected("frozen disk (simulated power cut)")),
            Some(ref mut left) => {
                *left -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn lookup(&self, path: &Path) -> io::Result<InodeId> {
        let (dir, name) = split(path)?;
        self.directories
            .get(&dir)
            .and_then(|directory| directory.live.get(&name))
            .copied()
            .ok_or_else(|| not_found(path))
    }

    fn directory_mut(&mut self, dir: &Path) -> io::Result<&mut Directory> {
        self.directories.get_mut(dir).ok_or_else(|| not_found(dir))
    }

    fn inode_mut(&mut self, id: InodeId) -> io::Result<&mut Inode> {
        // An inode only disappears at power loss, after which every handle is stale.
        self.inodes.get_mut(&id).ok_or_else(stale)
    }
}

impl SimFs {
    /// An empty simulated disk.
    pub fn new() -> Self {
        Self::default()
    }

    /// A shared [`Fs`] handle onto this simulated disk.
    ///
    /// The handle belongs to the current power epoch: after [`SimFs::power_loss`] every call
    /// through it fails, as if the process that held it had died with the machine. Without
    /// this, background threads of a database opened before the crash could go on renaming
    /// and removing files on the recovered disk, which no real crash allows.
    pub fn fs(&self) -> Fs {
        let epoch = self.state.lock().epoch;
        Arc::new(EpochFs {
            sim: self.clone(),
            epoch,
        })
    }

    /// While `fail` is true, `sync_data` and `sync_dir` return an I/O error and make nothing
    /// durable.
    pub fn fail_syncs(&self, fail: bool) {
        self.state.lock().fail_syncs = fail;
    }

    /// While `fail` is true, `write_all` returns an I/O error and writes nothing.
    pub fn fail_writes(&self, fail: bool) {
        self.state.lock().fail_writes = fail;
    }

    /// Lets `mutations` more mutating calls (writes, syncs, creates, renames, removes) through,
    /// then freezes the disk: every later mutating call fails and changes nothing. This puts
    /// a power cut at an exact point *inside* an operation (mid-flush, mid-manifest-switch);
    /// follow it with [`SimFs::power_loss`]. `None` lifts the limit.
    pub fn freeze_after(&self, mutations: Option<u64>) {
        self.state.lock().mutations_left = mutations;
    }

    /// Gives the disk room for `bytes` bytes of file contents in all (None: no limit), like a
    /// small disk: a write that would grow the files past it writes the part that fits and
    /// fails with `ENOSPC` (`io::ErrorKind::StorageFull`), as a real file system's `write(2)`
    /// does. Overwrites within a file's length, syncs, renames and removals need no room and
    /// go on. Raising it (or `None`) is an operator freeing space.
    pub fn set_space_bytes(&self, bytes: Option<u64>) {
        let mut state = self.state.lock();
        state.space_bytes = bytes;
        state.full_in = None;
    }

    /// Lets `mutations` more mutating calls through as usual, then fills the disk: from the
    /// next call on, the room is what the files hold at that instant, so any write that grows
    /// a file fails with `ENOSPC` until [`SimFs::set_space_bytes`] makes room. This puts
    /// "the disk filled up" at an exact point inside an operation, as
    /// [`SimFs::freeze_after`] does a power cut. `None` cancels a countdown still running.
    pub fn full_after(&self, mutations: Option<u64>) {
        let mut state = self.state.lock();
        state.full_in = mutations;
        if mutations == Some(0) {
            state.full_in = None;
            state.space_bytes = Some(state.used_bytes());
        }
    }

    /// Bytes the files hold now, as [`SimFs::set_space_bytes`] counts them.
    pub fn used_bytes(&self) -> u64 {
        self.state.lock().used_bytes()
    }

    /// Makes every `sync_data` take at least `latency` (slept without holding any lock), like
    /// a real disk's flush, so that concurrency tests see syncs overlap with other work.
    pub fn set_sync_latency(&self, latency: std::time::Duration) {
        self.state.lock().sync_latency = latency;
    }

    /// Syncs and bytes written so far.
    pub fn counters(&self) -> SimCounters {
        self.state.lock().counters
    }

    /// The bytes of `path` that would survive a power loss with no luck at all.
    pub fn durable_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        let state = self.state.lock();
        let id = state.lookup(path)?;
        Ok(state
            .inodes
            .get(&id)
            .map(|inode| inode.durable.clone())
            .unwrap_or_default())
    }

    /// Simulates pulling the plug; deterministic for a given `rng_seed` and history.
    pub fn power_loss(&self, rng_seed: u64) {
        let mut rng = StdRng::seed_from_u64(rng_seed);
        let mut state = self.state.lock();
        state.epoch += 1;
        state.locks.clear();
        state.mutations_left = None;
        let mut referenced: Vec<InodeId> = Vec::new();
        for directory in state.directories.values_mut() {
            directory.live = directory.durable.clone();
            referenced.extend(directory.live.values().copied());
        }
        referenced.sort_unstable();
        referenced.dedup();
        let inodes = std::mem::take(&mut state.inodes);
        for (id, inode) in inodes {
            if referenced.binary_search(&id).is_ok() {
                let bytes = crash_contents(&inode, &mut rng);
                state.inodes.insert(
                    id,
                    Inode {
                        current: bytes.clone(),
                        durable: bytes,
                        dirty: None,
                        truncated: false,
                    },
                );
            }
        }
    }

    fn new_inode(state: &mut SimState) -> InodeId {
        state.inode_next += 1;
        let id = state.inode_next;
        state.inodes.insert(id, Inode::default());
        id
    }

    fn writable(&self, id: InodeId, epoch: u64) -> Box<dyn WritableFile> {
        Box::new(SimWritable {
            state: Arc::clone(&self.state),
            inode: id,
            epoch,
            position: AtomicU64::new(0),
        })
    }
}

/// What one inode holds after a power loss: its durable bytes plus a random part of the rest.
fn crash_contents(inode: &Inode, rng: &mut StdRng) -> Vec<u8> {
    let durable = &inode.durable;
    let current = &inode.current;
    let mut result = durable.clone();
    let dirty_sectors: Vec<usize> = (0..current.len().max(durable.len()).div_ceil(SECTOR_BYTES))
        .filter(|&sector| {
            let range = sector * SECTOR_BYTES..(sector + 1) * SECTOR_BYTES;
            let old = &durable[range.start.min(durable.len())..range.end.min(durable.len())];
            let new = &current[range.start.min(current.len())..range.end.min(current.len())];
            old != new
        })
        .collect();
    if dirty_sectors.is_empty() {
        return result;
    }
    match rng.random_range(0..3u8) {
        // Nothing unsynced reached the disk.
        0 => {}
        // The appended bytes reached the disk in order, up to some point.
        1 if current.len() > durable.len() && current.starts_with(durable) => {
            let kept = rng.random_range(0..=current.len() - durable.len());
            result.extend_from_slice(&current[durable.len()..durable.len() + kept]);
        }
        // Any subset of the dirty sectors reached the disk, in no particular order.
        _ => {
            for &sector in &dirty_sectors {
                if rng.random_bool(0.5) {
                    copy_sector(&mut result, current, sector);
                }
            }
        }
    }
    if rng.random_bool(0.3) {
        let sector = dirty_sectors[rng.random_range(0..dirty_sectors.len())];
        tear_sector(&mut result, inode, sector, rng);
    }
    result
}

/// Copies one sector of `current` into `result`, growing it (with zeros) if needed.
fn copy_sector(result: &mut Vec<u8>, current: &[u8], sector: usize) {
    let start = sector * SECTOR_BYTES;
    let end = ((sector + 1) * SECTOR_BYTES).min(current.len());
    if start >= end {
        return;
    }
    if result.len() < end {
        result.resize(end, 0);
    }
    result[start..end].copy_from_slice(&current[start..end]);
}

/// Replaces the unsynced bytes of one sector with garbage: a write that was cut mid-sector.
fn tear_sector(result: &mut Vec<u8>, inode: &Inode, sector: usize, rng: &mut StdRng) {
    let start = sector * SECTOR_BYTES;
    let end = ((sector + 1) * SECTOR_BYTES).min(inode.current.len());
    if start >= end {
        return;
    }
    if result.len() < end {
        result.resize(end, 0);
    }
    for (offset, byte) in result.iter_mut().enumerate().take(end).skip(start) {
        let was_durable =
            offset < inode.durable.len() && inode.durable.get(offset) == inode.current.get(offset);
        if !was_durable {
            *byte = rng.random();
        }
    }
}

struct SimWritable {
    state: Arc<Mutex<SimState>>,
    inode: InodeId,
    epoch: u64,
    /// Atomic only because writes take `&self`; they are serialised by the caller.
    position: AtomicU64,
}

impl SimWritable {
    /// The state, locked for a change to this file's contents (`what`, for an injected
    /// failure): refused on a handle from before a power loss, when writes are set to fail,
    /// and when the disk has frozen.
    fn lock_for_change(&self, what: &str) -> io::Result<parking_lot::MutexGuard<'_, SimState>> {
        let mut state = self.state.lock();
        if state.epoch != self.epoch {
            return Err(stale());
        }
        if state.fail_writes {
            return Err(injected(what));
        }
        state.spend_mutation()?;
        Ok(state)
    }
}

/// What a write did: the bytes it wrote from the start of its data, and how it ended.
struct Written {
    bytes: usize,
    result: io::Result<()>,
}

impl SimWritable {
    /// Writes `data` at `offset`, or the part of it that fits on the disk.
    fn write_at_counting(&self, offset: u64, data: &[u8]) -> Written {
        let failed = |error| Written {
            bytes: 0,
            result: Err(error),
        };
        let mut state = match self.lock_for_change("write") {
            Ok(state) => state,
            Err(error) => return failed(error),
        };
        let Ok(start) = usize::try_from(offset) else {
            return failed(io::Error::from(io::ErrorKind::InvalidInput));
        };
        let space_left = state.space_left();
        let inode = match state.inode_mut(self.inode) {
            Ok(inode) => inode,
            Err(error) => return failed(error),
        };
        // Bytes up to the file's length overwrite; past it each byte needs room (a hole
        // too), and only what fits is written: a short write, then ENOSPC.
        let room_end = usize::try_from(space_left).map_or(usize::MAX, |space| {
            inode.current.len().saturating_add(space)
        });
        let wanted_end = start + data.len();
        let end = wanted_end.min(room_end.max(start));
        if end > start {
            if inode.current.len() < end {
                inode.current.resize(end, 0);
            }
            inode.current[start..end].copy_from_slice(&data[..end - start]);
            inode.dirty = Some(match inode.dirty {
                Some((low, high)) => (low.min(start), high.max(end)),
                None => (start, end),
            });
            state.counters.bytes_written += (end - start) as u64;
        }
        Written {
            bytes: end - start,
            result: if end < wanted_end {
                Err(no_space())
            } else {
                Ok(())
            },
        }
    }
}

impl WritableFile for SimWritable {
    /// A write that fails for want of room leaves the position after the part that fitted,
    /// as a real descriptor's offset does.
    fn write_all(&self, data: &[u8]) -> io::Result<()> {
        let start = self.position.load(AtomicOrdering::Relaxed);
        let written = self.write_at_counting(start, data);
        self.position
            .store(start + written.bytes as u64, AtomicOrdering::Relaxed);
        written.result
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.write_at_counting(offset, data).result
    }

    /// Makes durable what the file holds when the state lock is taken: every write that
    /// returned before the call, and any that slipped in before the lock, as a real fdatasync
    /// may also catch.
    fn sync_data(&self) -> io::Result<()> {
        let latency = self.state.lock().sync_latency;
        if !latency.is_zero() {
            std::thread::sleep(latency);
        }
        let mut state = self.state.lock();
        if state.epoch != self.epoch {
            return Err(stale());
        }
        if state.fail_syncs {
            return Err(injected("fdatasync"));
        }
        state.spend_mutation()?;
        let inode = state.inode_mut(self.inode)?;
        let length = inode.current.len();
        if inode.truncated {
            inode.durable.clear();
            inode.truncated = false;
        }
        inode.durable.resize(length, 0);
        if let Some((low, high)) = inode.dirty.take() {
            let high = high.min(length);
            if low < high {
                inode.durable[low..high].copy_from_slice(&inode.current[low..high]);
            }
        }
        state.counters.data_syncs += 1;
        Ok(())
    }

    fn position(&self) -> u64 {
        self.position.load(AtomicOrdering::Relaxed)
    }

    /// Changes the current contents only: until a sync, a power loss keeps the durable
    /// length and bytes, as an uncommitted truncate would.
    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        let mut state = self.lock_for_change("set_len")?;
        let len = usize::try_from(len_bytes).map_err(io::Error::other)?;
        let space_left = state.space_left();
        let inode = state.inode_mut(self.inode)?;
        let old_len = inode.current.len();
        if len.saturating_sub(old_len) as u64 > space_left {
            return Err(no_space());
        }
        inode.current.resize(len, 0);
        if len > old_len {
            // The zeros are new contents to sync like written bytes.
            inode.dirty = Some(match inode.dirty {
                Some((low, high)) => (low.min(old_len), high.max(len)),
                None => (old_len, len),
            });
        }
        Ok(())
    }

    /// Cuts the current contents (as `set_len`) and moves the position back.
    fn rewind(&self, len_bytes: u64) -> io::Result<()> {
        self.set_len(len_bytes)?;
        self.position.store(len_bytes, AtomicOrdering::Relaxed);
        Ok(())
    }
}

struct SimReadable {
    bytes: Vec<u8>,
}

impl ReadableFile for SimReadable {
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

struct SimLock {
    state: Arc<Mutex<SimState>>,
    path: PathBuf,
    id: u64,
}

impl DirLock for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        // After a power loss the lock table was cleared and may hold a newer owner's lock.
        if state.locks.get(&self.path) == Some(&self.id) {
            state.locks.remove(&self.path);
        }
    }
}

/// A [`SimFs`] handle that dies at the next power loss (see [`SimFs::fs`]).
#[derive(Debug)]
struct EpochFs {
    sim: SimFs,
    epoch: u64,
}

impl EpochFs {
    fn alive(&self) -> io::Result<&SimFs> {
        if self.sim.state.lock().epoch == self.epoch {
            Ok(&self.sim)
        } else {
            Err(stale())
        }
    }
}

impl FileSystem for EpochFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.alive()?.create(path)
    }
    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.alive()?.open_overwrite(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        self.alive()?.open_read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.alive()?.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.alive()?.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.alive()?.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.alive()?.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.alive()?.create_dir_all(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.alive().is_ok_and(|sim| sim.exists(path))
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.alive()?.file_size(path)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn DirLock>> {
        self.alive()?.lock(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.alive()?.hard_link(from, to)
    }
    fn link_count(&self, path: &Path) -> io::Result<u64> {
        self.alive()?.link_count(path)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.alive()?.remove_dir(dir)
    }
}

impl FileSystem for SimFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let (dir, name) = split(path)?;
        let mut state = self.state.lock();
        state.spend_mutation()?;
        let epoch = state.epoch;
        let existing = state
            .directories
            .get(&dir)
            .ok_or_else(|| not_found(&dir))?
            .live
            .get(&name)
            .copied();
        let id = match existing {
            Some(id) => {
                let inode = state.inode_mut(id)?;
                inode.current.clear();
                inode.dirty = None;
                inode.truncated = true;
                id
            }
            None => {
                let id = Self::new_inode(&mut state);
                state.directory_mut(&dir)?.live.insert(name, id);
                id
            }
        };
        Ok(self.writable(id, epoch))
    }

    fn open_overwrite(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let state = self.state.lock();
        let id = state.lookup(path)?;
        Ok(self.writable(id, state.epoch))
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        let state = self.state.lock();
        let id = state.lookup(path)?;
        let bytes = state
            .inodes
            .get(&id)
            .map(|inode| inode.current.clone())
            .unwrap_or_default();
        Ok(Arc::new(SimReadable { bytes }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        let mut state = self.state.lock();
        state.spend_mutation()?;
        if !state.directories.contains_key(&to_dir) {
            return Err(not_found(&to_dir));
        }
        let id = state
            .directory_mut(&from_dir)?
            .live
            .remove(&from_name)
            .ok_or_else(|| not_found(from))?;
        state.directory_mut(&to_dir)?.live.insert(to_name, id);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let (dir, name) = split(path)?;
        let mut state = self.state.lock();
        state.spend_mutation()?;
        state
            .directory_mut(&dir)?
            .live
            .remove(&name)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.state.lock();
        let directory = state.directories.get(dir).ok_or_else(|| not_found(dir))?;
        let mut names: Vec<String> = directory.live.keys().cloned().collect();
        // Subdirectories are entries too, as in a real listing.
        names.extend(
            state
                .directories
                .keys()
                .filter(|path| path.parent() == Some(dir))
                .filter_map(|path| path.file_name()?.to_str().map(str::to_string)),
        );
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        if state.fail_syncs {
            return Err(injected("directory fsync"));
        }
        state.spend_mutation()?;
        let directory = state.directory_mut(dir)?;
        directory.durable = directory.live.clone();
        state.counters.dir_syncs += 1;
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        for ancestor in dir.ancestors() {
            state.directories.entry(ancestor.to_path_buf()).or_default();
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let state = self.state.lock();
        state.directories.contains_key(path) || state.lookup(path).is_ok()
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let state = self.state.lock();
        let id = state.lookup(path)?;
        Ok(state
            .inodes
            .get(&id)
            .map_or(0, |inode| inode.current.len() as u64))
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn DirLock>> {
        let mut state = self.state.lock();
        if state.locks.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another holder", path.display()),
            ));
        }
        state.lock_next += 1;
        let id = state.lock_next;
        state.locks.insert(path.to_path_buf(), id);
        Ok(Box::new(SimLock {
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
            id,
        }))
    }
    /// A link changes only the live map of `to`'s directory, like a create: it survives a
    /// power loss only once that directory is synced.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (to_dir, to_name) = split(to)?;
        let mut state = self.state.lock();
        state.spend_mutation()?;
        let id = state.lookup(from)?;
        let directory = state.directory_mut(&to_dir)?;
        if directory.live.contains_key(&to_name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: file exists", to.display()),
            ));
        }
        directory.live.insert(to_name, id);
        Ok(())
    }

    fn link_count(&self, path: &Path) -> io::Result<u64> {
        let state = self.state.lock();
        let id = state.lookup(path)?;
        Ok(state
            .directories
            .values()
            .flat_map(|directory| directory.live.values())
            .filter(|&&other| other == id)
            .count() as u64)
    }

    /// Directories are created durably, and so are they removed.
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.spend_mutation()?;
        let directory = state.directories.get(dir).ok_or_else(|| not_found(dir))?;
        let has_subdirectory = state
            .directories
            .keys()
            .any(|path| path.parent() == Some(dir));
        if !directory.live.is_empty() || has_subdirectory {
            return Err(io::Error::other(format!(
                "{}: directory not empty",
                dir.display()
            )));
        }
        state.directories.remove(dir);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        PathBuf::from("/db")
    }

    fn file() -> PathBuf {
        dir().join("a.log")
    }

    fn read(sim: &SimFs, path: &Path) -> Vec<u8> {
        sim.open_read(path).unwrap().bytes().to_vec()
    }

    /// A file whose creation is durable, holding `synced` durably.
    fn durable_file(sim: &SimFs, synced: &[u8]) -> Box<dyn WritableFile> {
        sim.create_dir_all(&dir()).unwrap();
        let handle = sim.create(&file()).unwrap();
        handle.write_all(synced).unwrap();
        handle.sync_data().unwrap();
        sim.sync_dir(&dir()).unwrap();
        handle
    }

    #[test]
    fn set_len_cuts_the_file_and_is_durable_only_after_a_sync() {
        for seed in 0..16 {
            let sim = SimFs::new();
            let handle = durable_file(&sim, b"old contents, long");
            let overwrite = sim.open_overwrite(&file()).unwrap();
            overwrite.write_all(b"new").unwrap();
            overwrite.set_len(3).unwrap();
            assert_eq!(read(&sim, &file()), b"new");
            sim.power_loss(seed);
            // Neither the overwrite nor the cut was synced: the old length survives.
            assert_eq!(read(&sim, &file()).len(), b"old contents, long".len());
            drop(handle);
        }
        let sim = SimFs::new();
        let _handle = durable_file(&sim, b"old contents, long");
        let overwrite = sim.open_overwrite(&file()).unwrap();
        overwrite.write_all(b"new").unwrap();
        overwrite.set_len(3).unwrap();
        overwrite.sync_data().unwrap();
        sim.power_loss(7);
        assert_eq!(read(&sim, &file()), b"new");
    }

    #[test]
    fn a_hard_link_shares_the_bytes_and_is_durable_only_after_its_dir_sync() {
        let sim = SimFs::new();
        durable_file(&sim, b"shared");
        let backups = PathBuf::from("/db/backups");
        sim.create_dir_all(&backups).unwrap();
        let link = backups.join("1.sst");
        sim.hard_link(&file(), &link).unwrap();
        assert!(sim.hard_link(&file(), &link).is_err(), "the name exists");
        assert_eq!(read(&sim, &link), b"shared");
        assert_eq!(sim.link_count(&file()).unwrap(), 2);
        sim.power_loss(1);
        assert!(!sim.exists(&link), "a link not synced is lost");
        sim.hard_link(&file(), &link).unwrap();
        sim.sync_dir(&backups).unwrap();
        sim.remove(&file()).unwrap();
        sim.sync_dir(&dir()).unwrap();
        assert_eq!(sim.link_count(&link).unwrap(), 1);
        sim.power_loss(2);
        assert_eq!(
            read(&sim, &link),
            b"shared",
            "the other name keeps the bytes"
        );
        assert!(sim.remove_dir(&backups).is_err(), "not empty");
        sim.remove(&link).unwrap();
        sim.remove_dir(&backups).unwrap();
        assert!(!sim.exists(&backups));
    }

    #[test]
    fn synced_bytes_survive_and_unsynced_append_is_at_most_a_prefix() {
        for seed in 0..64 {
            let sim = SimFs::new();
            let handle = durable_file(&sim, b"durable");
            handle.write_all(b"-volatile").unwrap();
            sim.power_loss(seed);
            let bytes = read(&sim, &file());
            assert!(bytes.starts_with(b"durable"), "seed {seed}: {bytes:?}");
            assert!(bytes.len() <= b"durable-volatile".len());
        }
    }

    #[test]
    fn unsynced_append_is_lost_for_some_seed_and_kept_for_another() {
        let mut lost = false;
        let mut kept = false;
        for seed in 0..64 {
            let sim = SimFs::new();
            let handle = durable_file(&sim, b"durable");
            handle.write_all(b"-volatile").unwrap();
            sim.power_loss(seed);
            match read(&sim, &file()).as_slice() {
                b"durable" => lost = true,
                b"durable-volatile" => kept = true,
                _ => {}
            }
        }
        assert!(lost && kept);
    }

    #[test]
    fn synced_append_is_kept_for_every_seed() {
        for seed in 0..32 {
            let sim = SimFs::new();
            let handle = durable_file(&sim, b"one");
            handle.write_all(b"two").unwrap();
            handle.sync_data().unwrap();
            sim.power_loss(seed);
            assert_eq!(read(&sim, &file()), b"onetwo");
        }
    }

    #[test]
    fn new_file_without_dir_sync_vanishes() {
        let sim = SimFs::new();
        sim.create_dir_all(&dir()).unwrap();
        let handle = sim.create(&file()).unwrap();
        handle.write_all(b"x").unwrap();
        handle.sync_data().unwrap();
        assert!(sim.exists(&file()));
        sim.power_loss(1);
        assert!(!sim.exists(&file()));
        assert!(sim.list(&dir()).unwrap().is_empty());
    }

    #[test]
    fn rename_and_remove_without_dir_sync_revert() {
        let sim = SimFs::new();
        drop(durable_file(&sim, b"content"));
        let renamed = dir().join("b.log");
        sim.rename(&file(), &renamed).unwrap();
        assert!(!sim.exists(&file()));
        sim.power_loss(2);
        assert_eq!(read(&sim, &file()), b"content");
        assert!(!sim.exists(&renamed));

        sim.remove(&file()).unwrap();
        sim.power_loss(3);
        assert!(sim.exists(&file()));

        sim.rename(&file(), &renamed).unwrap();
        sim.sync_dir(&dir()).unwrap();
        sim.power_loss(4);
        assert_eq!(read(&sim, &renamed), b"content");
        assert!(!sim.exists(&file()));
    }

    #[test]
    fn overwrites_keep_durable_bytes_and_some_seeds_tear_or_mix_sectors() {
        let original = vec![b'a'; 4 * SECTOR_BYTES];
        let mut torn = false;
        let mut mixed = false;
        for seed in 0..128 {
            let sim = SimFs::new();
            drop(durable_file(&sim, &original));
            let handle = sim.open_overwrite(&file()).unwrap();
            handle.write_all(&vec![b'b'; 4 * SECTOR_BYTES]).unwrap();
            sim.power_loss(seed);
            let bytes = read(&sim, &file());
            assert_eq!(bytes.len(), original.len());
            let sectors: Vec<&[u8]> = bytes.chunks(SECTOR_BYTES).collect();
            let clean = |sector: &[u8]| {
                sector.iter().all(|&b| b == b'a') || sector.iter().all(|&b| b == b'b')
            };
            if sectors.iter().any(|sector| !clean(sector)) {
                torn = true;
            } else if sectors.iter().any(|s| s[0] == b'a') && sectors.iter().any(|s| s[0] == b'b') {
                mixed = true;
            }
        }
        assert!(torn, "no seed produced a torn sector");
        assert!(
            mixed,
            "no seed persisted a strict subset of the dirty sectors"
        );
    }

    #[test]
    fn torn_appends_never_touch_durable_bytes() {
        let mut garbage_seen = false;
        for seed in 0..128 {
            let sim = SimFs::new();
            let handle = durable_file(&sim, &[7u8; 100]);
            handle.write_all(&[9u8; 1000]).unwrap();
            sim.power_loss(seed);
            let bytes = read(&sim, &file());
            assert_eq!(&bytes[..100], &[7u8; 100][..]);
            garbage_seen |= bytes[100..].iter().any(|&b| b != 9 && b != 0);
        }
        assert!(garbage_seen);
    }

    #[test]
    fn power_loss_is_deterministic_for_a_seed() {
        let run = |seed| {
            let sim = SimFs::new();
            let handle = durable_file(&sim, b"base");
            handle.write_all(&[5u8; 3000]).unwrap();
            sim.power_loss(seed);
            read(&sim, &file())
        };
        for seed in 0..16 {
            assert_eq!(run(seed), run(seed));
        }
    }

    #[test]
    fn handles_from_before_a_power_loss_are_stale() {
        let sim = SimFs::new();
        let handle = durable_file(&sim, b"x");
        sim.power_loss(5);
        assert!(handle.write_all(b"y").is_err());
        assert!(handle.sync_data().is_err());
        let fresh = sim.open_overwrite(&file()).unwrap();
        fresh.write_all(b"z").unwrap();
        fresh.sync_data().unwrap();
        assert_eq!(read(&sim, &file()), b"z");
    }

    #[test]
    fn a_full_disk_writes_what_fits_then_refuses_growth_until_space_is_freed() {
        let sim = SimFs::new();
        let handle = durable_file(&sim, b"0123456789");
        sim.set_space_bytes(Some(14));
        // Four bytes fit: a short write, then ENOSPC, with the position left where it was.
        let error = handle.write_all(b"abcdefgh").unwrap_err();
        assert!(crate::is_no_space(&error), "{error}");
        assert_eq!(error.kind(), io::ErrorKind::StorageFull);
        assert_eq!(read(&sim, &file()), b"0123456789abcd");
        assert_eq!(handle.position(), 14);
        assert_eq!(sim.used_bytes(), 14);
        // Overwrites within the file, syncs and set_len cuts need no room.
        handle.write_at(0, b"ZZ").unwrap();
        handle.sync_data().unwrap();
        assert!(handle.set_len(20).is_err());
        // The part written by the failed call is taken back; its room comes back with it.
        handle.rewind(10).unwrap();
        assert_eq!(read(&sim, &file()), b"ZZ23456789");
        assert!(crate::is_no_space(
            &sim.create(&dir().join("b"))
                .unwrap()
                .write_all(b"12345")
                .unwrap_err()
        ));
        // Freeing space: the same write goes through.
        sim.set_space_bytes(None);
        handle.write_all(b"abcdefgh").unwrap();
        assert_eq!(read(&sim, &file()), b"ZZ23456789abcdefgh");
    }

    #[test]
    fn full_after_fills_the_disk_at_an_exact_call() {
        let sim = SimFs::new();
        let handle = durable_file(&sim, b"abc");
        sim.full_after(Some(2));
        handle.write_all(b"d").unwrap();
        handle.sync_data().unwrap();
        // The third mutating call finds the disk full: the room is what the files held.
        assert!(crate::is_no_space(&handle.write_all(b"e").unwrap_err()));
        assert_eq!(sim.used_bytes(), 4);
        // Removing a file frees its room.
        let other = sim.create(&dir().join("b")).unwrap();
        assert!(other.write_all(b"x").is_err());
        sim.remove(&file()).unwrap();
        other.write_all(b"wxyz").unwrap();
        assert!(other.write_all(b"!").is_err());
        sim.set_space_bytes(None);
        other.write_all(b"!").unwrap();
    }

    #[test]
    fn injected_failures_and_counters() {
        let sim = SimFs::new();
        let handle = durable_file(&sim, b"abc");
        assert_eq!(
            sim.counters(),
            SimCounters {
                data_syncs: 1,
                dir_syncs: 1,
                bytes_written: 3
            }
        );
        sim.fail_syncs(true);
        handle.write_all(b"d").unwrap();
        assert!(handle.sync_data().is_err());
        assert!(sim.sync_dir(&dir()).is_err());
        assert_eq!(sim.durable_bytes(&file()).unwrap(), b"abc");
        sim.fail_syncs(false);
        sim.fail_writes(true);
        assert!(handle.write_all(b"e").is_err());
        sim.fail_writes(false);
        handle.sync_data().unwrap();
        assert_eq!(sim.durable_bytes(&file()).unwrap(), b"abcd");
        assert_eq!(sim.counters().data_syncs, 2);
    }

    #[test]
    fn create_on_existing_name_truncates_but_durably_only_after_sync() {
        let sim = SimFs::new();
        drop(durable_file(&sim, b"old contents"));
        let handle = sim.create(&file()).unwrap();
        handle.write_all(b"new").unwrap();
        assert_eq!(read(&sim, &file()), b"new");
        handle.sync_data().unwrap();
        assert_eq!(sim.durable_bytes(&file()).unwrap(), b"new");
    }

    #[test]
    fn a_frozen_disk_changes_nothing_until_power_loss_lifts_it() {
        let sim = SimFs::new();
        let fs = sim.fs();
        fs.create_dir_all(&dir()).unwrap();
        let f = fs.create(&file()).unwrap();
        sim.freeze_after(Some(1));
        f.write_all(b"ok").unwrap();
        assert!(f.sync_data().is_err(), "the second mutation must fail");
        assert!(f.write_all(b"more").is_err());
        assert!(fs.rename(&file(), &dir().join("other")).is_err());
        assert!(fs.exists(&file()));
        sim.power_loss(7);
        // The unsynced write may or may not survive, the failed rename never happened.
        let fs = sim.fs();
        assert!(!fs.exists(&dir().join("other")));
        let g = fs.create(&dir().join("new")).unwrap();
        g.write_all(b"x").unwrap();
        g.sync_data().unwrap();
    }

    #[test]
    fn handles_from_fs_die_at_power_loss_even_for_path_calls() {
        let sim = SimFs::new();
        let old = sim.fs();
        old.create_dir_all(&dir()).unwrap();
        old.sync_dir(&dir()).unwrap();
        sim.power_loss(1);
        assert!(old.create(&file()).is_err());
        assert!(old.rename(&file(), &dir().join("x")).is_err());
        assert!(!old.exists(&dir()));
        let new = sim.fs();
        new.create(&file()).unwrap();
        assert!(new.exists(&file()));
    }

    #[test]
    fn lock_is_exclusive_until_dropped() {
        let sim = SimFs::new();
        let path = dir().join("LOCK");
        let first = sim.lock(&path).unwrap();
        assert!(sim.lock(&path).is_err());
        drop(first);
        let _second = sim.lock(&path).unwrap();
    }
}
