//! The manifest: the durable record of the current [`Version`].
//!
//! # Design: whole-version files
//!
//! Every change writes a complete new `MANIFEST-<number>` file holding the whole version, then
//! switches `CURRENT` to name it. There is no log of edits to replay, so recovery is "read the
//! one file CURRENT names", and a version is never half-applied. Versions are small (a few
//! hundred bytes per SSTable) and change only on flush, compaction and DDL, so rewriting the
//! whole thing is cheap.
//!
//! # Data directory layout
//!
//! ```text
//! <dir>/CURRENT            text: "MANIFEST-000007\n" — names the live manifest
//! <dir>/MANIFEST-000007    the live version (format below)
//! <dir>/000042.sst         SSTables, named by file number (sst_file_name)
//! <dir>/000017.sst-recycle an obsolete SSTable kept for reuse (recycled_sst_file_name);
//!                          named by no version, removed at open
//! <dir>/CURRENT.tmp        only while CURRENT is being switched
//! <dir>/wal/               owned by the wal crate; never touched here
//! <dir>/LOCK               owned by the engine; never touched here
//! ```
//!
//! Manifest numbers are the manifest's own counter, separate from SSTable numbers: the next
//! install writes number `current + 1`. Sharing SSTable numbers would mean changing the
//! version's `next_file_number` while installing it, so the version written would differ
//! from the one the caller holds. The two name spaces cannot collide (different file names).
//! Numbers are printed with at least six digits and may grow longer.
//!
//! # Installing a version (crash safety)
//!
//! [`Manifest::install`] does, in order:
//! 1. write `MANIFEST-n` (n = current + 1), `sync_data` it, `sync_dir`: the new manifest is
//!    durable, contents and name, before anything can point at it;
//! 2. write `CURRENT.tmp` with `MANIFEST-n\n`, `sync_data` it;
//! 3. rename `CURRENT.tmp` to `CURRENT` (atomic: a crash leaves the old or the new CURRENT);
//! 4. `sync_dir`: the switch is durable; only now does install return Ok;
//! 5. remove the previous manifest (best effort: if the removal is lost in a crash, the file is
//!    garbage that the next open removes).
//!
//! A crash before step 4 completes leaves CURRENT naming the old manifest (still intact) or,
//! if the rename reached the disk, the new one (already durable by step 1). Either way CURRENT
//! names a complete, checksummed file: recovery yields exactly the old or the new version.
//! Any error during steps 1–4 *poisons* the [`Manifest`]: the on-disk state is then unknown
//! (an fsync that failed may have dropped pages; retrying it can report success falsely), so
//! every later install fails with [`ManifestError::Poisoned`] and the database must be reopened.
//!
//! # Opening (recovery)
//!
//! [`Manifest::open`] reads CURRENT and the manifest it names and nothing else. A
//! `MANIFEST-*` that CURRENT does not name is garbage: either an older manifest whose removal
//! was lost, or a newer one whose install crashed before the CURRENT switch (so the caller
//! never saw it succeed and nothing relies on it). A missing or corrupt file named by CURRENT
//! is a [`ManifestError::Corruption`] naming the file: nothing is guessed. A directory without
//! CURRENT is a new database (an empty version is installed durably) unless it already holds
//! SSTables or WAL segments — then CURRENT was lost and starting empty would silently drop
//! data, so the open fails with [`ManifestError::MissingCurrent`].
//!
//! # CURRENT format
//!
//! Exactly `MANIFEST-` followed by the decimal manifest number (at least six digits, at most
//! twenty) and one `\n`; anything else is corruption. CURRENT carries no checksum of its own;
//! the manifest it names is checked (magic, CRC, and the number recorded inside the manifest
//! must equal the number in its name).
//!
//! # MANIFEST file format (format version 1)
//!
//! A 20-byte header followed by the body:
//!
//! | offset | size | field                                                              |
//! |-------:|-----:|--------------------------------------------------------------------|
//! | 0      | 8    | magic: the ASCII bytes `SHOALMNF`                                   |
//! | 8      | 4    | format version, u32 little-endian; currently 1                      |
//! | 12     | 4    | body length in bytes, u32 little-endian (see below)                 |
//! | 16     | 4    | CRC32 (crc32fast, the IEEE polynomial) of the body, u32 little-endian |
//! | 20     | len  | body                                                               |
//!
//! The body length is at most [`MANIFEST_BODY_BYTES_MAX`] and the file is exactly 20 + body
//! length bytes long. Every header field is checked for an exact value, and the CRC covers the body, so any
//! change to any byte of the file is detected.
//!
//! The body is a sequence of fields. `varint` is an unsigned LEB128 integer (7 bits per byte,
//! least significant group first, high bit set on every byte but the last, at most 10 bytes,
//! value within u64). `bytes` is a varint length followed by that many raw bytes. `string` is
//! `bytes` holding valid UTF-8. In order:
//!
//! 1. manifest number (varint) — must equal the number in the file's name;
//! 2. next file number (varint);
//! 3. next tree id (varint, at most u32::MAX);
//! 4. last seq (varint);
//! 5. metadata entry count (varint), then per entry in strictly ascending key order:
//!    key (string), value (bytes);
//! 6. tree count (varint), then per tree in strictly ascending id order:
//!    id (varint, at most u32::MAX), name (string), flushed seq (varint),
//!    level count (varint, must be 7), then per level: file count (varint), then per file
//!    in the level's order (L0 newest first, L1+ by smallest key):
//!    number, size bytes (varints), smallest key, largest key (bytes: internal keys),
//!    entries, tombstones, seq min, seq max (varints).
//!
//! The body must end exactly after the last field. The decoded version must then pass
//! [`Version::check`] (level order, no L1+ overlap, unique file numbers, counters ahead of
//! what they cover); a version that fails is corruption too. Decoding bounds-checks every
//! length and count against the bytes left, so corrupt input yields an error, never a panic
//! or a huge allocation.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::version::{FileMeta, TreeVersion, Version, LEVELS};

/// Name of the file that names the live manifest.
pub const CURRENT_FILE_NAME: &str = "CURRENT";
/// Temporary name CURRENT is written under before the atomic rename.
const CURRENT_TMP_FILE_NAME: &str = "CURRENT.tmp";
/// Directory owned by the WAL.
const WAL_DIR_NAME: &str = "wal";
const MANIFEST_PREFIX: &str = "MANIFEST-";
const SST_SUFFIX: &str = ".sst";
/// An obsolete SSTable kept for reuse (engine `table_files`).
const RECYCLED_SST_SUFFIX: &str = ".sst-recycle";

/// First bytes of every manifest file.
pub const MANIFEST_MAGIC: [u8; 8] = *b"SHOALMNF";
/// The manifest format version this code writes and reads.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;
/// Largest manifest body accepted (written or read). Far above any real version (about a
/// hundred bytes per SSTable), low enough that a corrupt length cannot exhaust memory.
pub const MANIFEST_BODY_BYTES_MAX: usize = 64 << 20;
const HEADER_LEN: usize = 20;
/// A LEB128 u64 never needs more than 10 bytes.
const VARINT_LEN_MAX: usize = 10;
/// Longest decimal number accepted in a file name (u64::MAX has 20 digits).
const NUMBER_DIGITS_MAX: usize = 20;

/// Errors of the manifest and of data-directory housekeeping.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("i/o error on {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// A file recovery depends on is missing or does not decode; names the file.
    #[error("corrupt manifest state in {file}: {detail}")]
    Corruption { file: PathBuf, detail: String },
    #[error("{dir} has no CURRENT but holds data ({detail}); refusing to start empty over it")]
    MissingCurrent { dir: PathBuf, detail: String },
    /// An install could not write its new files for want of disk space. CURRENT still names
    /// the manifest it named, so the version is unchanged and the manifest is not poisoned:
    /// the install can be made again once space is freed.
    #[error("no disk space to write {path}: {source}")]
    NoSpace { path: PathBuf, source: io::Error },
    /// An earlier install failed part-way; the on-disk state is unknown until reopened.
    #[error("manifest is unusable after an earlier failed install: {0}")]
    Poisoned(String),
    #[error("version is not valid and was not installed: {0}")]
    InvalidVersion(#[from] crate::version::VersionError),
    #[error(
        "encoded version is {size_bytes} bytes, above the {MANIFEST_BODY_BYTES_MAX}-byte limit"
    )]
    TooLarge { size_bytes: usize },
}

/// Why manifest bytes did not decode: the offset in the file and what was wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {detail}")]
pub struct DecodeError {
    pub offset: usize,
    pub detail: String,
}

/// The file name of SSTable `number`, e.g. `000042.sst`.
pub fn sst_file_name(number: u64) -> String {
    format!("{number:06}{SST_SUFFIX}")
}

/// The name obsolete SSTable `number` is kept under for reuse, e.g. `000042.sst-recycle`.
pub fn recycled_sst_file_name(number: u64) -> String {
    format!("{number:06}{RECYCLED_SST_SUFFIX}")
}

/// The file name of manifest `number`, e.g. `MANIFEST-000007`.
pub fn manifest_file_name(number: u64) -> String {
    format!("{MANIFEST_PREFIX}{number:06}")
}

/// Parses a decimal file-name number: only ASCII digits, 1 to 20 of them, within u64.
fn parse_number(digits: &str) -> Option<u64> {
    if digits.is_empty()
        || digits.len() > NUMBER_DIGITS_MAX
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    digits.parse().ok()
}

/// The number of an SSTable file name (`000042.sst` → 42); None for any other name.
pub fn parse_sst_file_name(name: &str) -> Option<u64> {
    parse_number(name.strip_suffix(SST_SUFFIX)?)
}

/// The number of a recycled SSTable's file name (`000042.sst-recycle` → 42).
pub fn parse_recycled_sst_file_name(name: &str) -> Option<u64> {
    parse_number(name.strip_suffix(RECYCLED_SST_SUFFIX)?)
}

/// The number of a manifest file name (`MANIFEST-000007` → 7); None for any other name.
pub fn parse_manifest_file_name(name: &str) -> Option<u64> {
    parse_number(name.strip_prefix(MANIFEST_PREFIX)?)
}

/// Parses CURRENT's contents strictly (see the module docs).
fn parse_current(bytes: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let name = text.strip_suffix('\n')?;
    let number = parse_manifest_file_name(name)?;
    // Only the exact spelling we write: at least six digits, no other leading zeros.
    (name == manifest_file_name(number)).then_some(number)
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> ManifestError + '_ {
    move |source| ManifestError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// [`io_error`] for a create or a write, which may find the disk full.
fn write_error(path: &Path) -> impl FnOnce(io::Error) -> ManifestError + '_ {
    move |source| {
        if shoal_vfs::is_no_space(&source) {
            ManifestError::NoSpace {
                path: path.to_path_buf(),
                source,
            }
        } else {
            io_error(path)(source)
        }
    }
}

/// The durable home of the current [`Version`] in one data directory.
#[derive(Debug)]
pub struct Manifest {
    fs: shoal_vfs::Fs,
    dir: PathBuf,
    /// Number of the manifest CURRENT names (0 before the first install of a new database).
    current_number: u64,
    /// Set when an install failed part-way; every later install fails with it.
    poisoned: Option<String>,
}

impl Manifest {
    /// Reads CURRENT → the manifest it names → Version (all checked; a bad checksum or a
    /// missing file named by CURRENT is a typed corruption error naming the file). A directory
    /// without CURRENT (created if missing) gets an empty version, installed durably, unless
    /// it holds SSTables or WAL segments ([`ManifestError::MissingCurrent`]).
    pub fn open(fs: shoal_vfs::Fs, dir: &Path) -> Result<(Manifest, Version), ManifestError> {
        fs.create_dir_all(dir).map_err(io_error(dir))?;
        let mut manifest = Manifest {
            fs,
            dir: dir.to_path_buf(),
            current_number: 0,
            poisoned: None,
        };
        let current_path = shoal_vfs::child(dir, CURRENT_FILE_NAME);
        if !manifest.fs.exists(&current_path) {
            manifest.refuse_if_holding_data()?;
            // A new database. Leftover MANIFEST-* or CURRENT.tmp files can only come from a
            // first install that crashed before CURRENT existed: nothing was ever acknowledged
            // on top of them, so they are overwritten or removed as garbage.
            let version = Version::empty();
            manifest.install(&version)?;
            return Ok((manifest, version));
        }

        let current = manifest
            .fs
            .open_read(&current_path)
            .map_err(io_error(&current_path))?;
        let number = parse_current(current.bytes()).ok_or_else(|| ManifestError::Corruption {
            file: current_path.clone(),
            detail: format!(
                "expected \"MANIFEST-<number>\\n\", found {:?}",
                String::from_utf8_lossy(&current.bytes()[..current.bytes().len().min(64)])
            ),
        })?;

        let manifest_path = shoal_vfs::child(dir, &manifest_file_name(number));
        let file = manifest.fs.open_read(&manifest_path).map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                ManifestError::Corruption {
                    file: manifest_path.clone(),
                    detail: "named by CURRENT but missing".to_string(),
                }
            } else {
                io_error(&manifest_path)(source)
            }
        })?;
        let corruption = |detail: String| ManifestError::Corruption {
            file: manifest_path.clone(),
            detail,
        };
        let (recorded_number, version) =
            decode_version(file.bytes()).map_err(|e| corruption(e.to_string()))?;
        if recorded_number != number {
            return Err(corruption(format!(
                "file records manifest number {recorded_number}, not {number}"
            )));
        }
        manifest.current_number = number;
        Ok((manifest, version))
    }

    /// A missing CURRENT is a new database only if nothing else is there (see module docs).
    fn refuse_if_holding_data(&self) -> Result<(), ManifestError> {
        let names = self.fs.list(&self.dir).map_err(io_error(&self.dir))?;
        let sst_count = names
            .iter()
            .filter(|name| parse_sst_file_name(name).is_some())
            .count();
        let wal_dir = shoal_vfs::child(&self.dir, WAL_DIR_NAME);
        let wal_count = if self.fs.exists(&wal_dir) {
            self.fs.list(&wal_dir).map_err(io_error(&wal_dir))?.len()
        } else {
            0
        };
        if sst_count > 0 || wal_count > 0 {
            return Err(ManifestError::MissingCurrent {
                dir: self.dir.clone(),
                detail: format!("{sst_count} SSTables, {wal_count} files in wal/"),
            });
        }
        Ok(())
    }

    /// Durably installs `version` (which must pass [`Version::check`]): writes
    /// `MANIFEST-<current+1>`, syncs it and the directory, writes CURRENT.tmp, syncs it,
    /// renames it to CURRENT, syncs the directory, then removes the old manifest. Returns Ok
    /// only once the switch is durable. Any I/O error poisons the manifest (module docs),
    /// except [`ManifestError::NoSpace`]: a create or write of the new manifest or of
    /// CURRENT.tmp that found the disk full happened before the rename, so CURRENT still
    /// names the old manifest, and the same install can be made again over those two files
    /// (`create` truncates them). A failed fsync poisons whatever its code: after one, what
    /// the file holds is unknown.
    pub fn install(&mut self, version: &Version) -> Result<(), ManifestError> {
        if let Some(reason) = &self.poisoned {
            return Err(ManifestError::Poisoned(reason.clone()));
        }
        version.check()?;
        let number = self.current_number + 1;
        let encoded = encode_version(number, version)?;
        if let Err(error) = self.switch_to(number, &encoded) {
            if let ManifestError::NoSpace { .. } = error {
                // Give back the room the half-written files took; garbage either way, which
                // the next open removes if this does not.
                for name in [
                    manifest_file_name(number),
                    CURRENT_TMP_FILE_NAME.to_string(),
                ] {
                    let path = shoal_vfs::child(&self.dir, &name);
                    if self.fs.exists(&path) {
                        let _ = self.fs.remove(&path);
                    }
                }
            } else {
                self.poisoned = Some(error.to_string());
            }
            return Err(error);
        }
        let previous = std::mem::replace(&mut self.current_number, number);
        if previous != 0 {
            let old_path = shoal_vfs::child(&self.dir, &manifest_file_name(previous));
            if let Err(error) = self.fs.remove(&old_path) {
                // Harmless: an unreferenced manifest is removed by the next open.
                tracing::warn!(path = %old_path.display(), %error, "could not remove old manifest");
            }
        }
        Ok(())
    }

    /// Steps 1–4 of an install (module docs).
    fn switch_to(&self, number: u64, encoded: &[u8]) -> Result<(), ManifestError> {
        let manifest_path = shoal_vfs::child(&self.dir, &manifest_file_name(number));
        self.write_synced(&manifest_path, encoded)?;
        self.fs.sync_dir(&self.dir).map_err(io_error(&self.dir))?;

        let tmp_path = shoal_vfs::child(&self.dir, CURRENT_TMP_FILE_NAME);
        let current_text = format!("{}\n", manifest_file_name(number));
        self.write_synced(&tmp_path, current_text.as_bytes())?;
        let current_path = shoal_vfs::child(&self.dir, CURRENT_FILE_NAME);
        self.fs
            .rename(&tmp_path, &current_path)
            .map_err(io_error(&current_path))?;
        self.fs.sync_dir(&self.dir).map_err(io_error(&self.dir))
    }

    fn write_synced(&self, path: &Path, bytes: &[u8]) -> Result<(), ManifestError> {
        let file = self.fs.create(path).map_err(write_error(path))?;
        file.write_all(bytes).map_err(write_error(path))?;
        file.sync_data().map_err(io_error(path))
    }

    /// File name of the manifest CURRENT names, e.g. `MANIFEST-000007`.
    pub fn current_file_name(&self) -> String {
        manifest_file_name(self.current_number)
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Why installs are refused, if an earlier install failed.
    pub fn poisoned(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }
}

/// Removes files in `dir` that `version` does not reference: `<number>.sst` not in
/// `live_file_numbers`, `MANIFEST-*` other than `current_manifest`, leftover `*.tmp`. Never
/// touches `wal/`, `LOCK` or names it does not recognise. Returns the removed names, sorted.
///
/// Call it at open, after recovery decided the version and before any flush or compaction
/// runs: an SSTable being written is not in the version yet and would be removed.
pub fn remove_obsolete_files(
    fs: &shoal_vfs::Fs,
    dir: &Path,
    version: &Version,
    current_manifest: &str,
) -> Result<Vec<String>, ManifestError> {
    // Guard against a wrong argument wiping every manifest, the live one included.
    let current_path = shoal_vfs::child(dir, current_manifest);
    if parse_manifest_file_name(current_manifest).is_none() || !fs.exists(&current_path) {
        return Err(ManifestError::Corruption {
            file: current_path,
            detail: "current manifest does not exist; refusing to remove files".to_string(),
        });
    }
    let live = version.live_file_numbers();
    let mut names = fs.list(dir).map_err(io_error(dir))?;
    names.sort();
    let mut removed = Vec::new();
    for name in names {
        let obsolete = match (parse_sst_file_name(&name), parse_manifest_file_name(&name)) {
            (Some(number), _) => !live.contains(&number),
            (None, Some(_)) => name != current_manifest,
            // Recycled SSTable files are not carried across an open: the pool refills as
            // soon as compaction retires files.
            (None, None) => name.ends_with(".tmp") || parse_recycled_sst_file_name(&name).is_some(),
        };
        if obsolete {
            let path = shoal_vfs::child(dir, &name);
            fs.remove(&path).map_err(io_error(&path))?;
            removed.push(name);
        }
    }
    if !removed.is_empty() {
        // Not needed for correctness (a file that reappears is garbage again next time), but
        // it keeps the next open from redoing the work.
        fs.sync_dir(dir).map_err(io_error(dir))?;
    }
    Ok(removed)
}

/// Encodes `version` as the complete bytes of manifest file `manifest_number` (module docs).
pub fn encode_version(manifest_number: u64, version: &Version) -> Result<Vec<u8>, ManifestError> {
    let mut body = Vec::new();
    put_varint(&mut body, manifest_number);
    put_varint(&mut body, version.next_file_number);
    put_varint(&mut body, version.next_tree_id.into());
    put_varint(&mut body, version.last_seq);
    put_varint(&mut body, version.metadata.len() as u64);
    for (key, value) in &version.metadata {
        put_bytes(&mut body, key.as_bytes());
        put_bytes(&mut body, value);
    }
    put_varint(&mut body, version.trees.len() as u64);
    for (&id, tree) in &version.trees {
        put_varint(&mut body, id.into());
        put_bytes(&mut body, tree.name.as_bytes());
        put_varint(&mut body, tree.flushed_seq);
        put_varint(&mut body, tree.levels.len() as u64);
        for files in &tree.levels {
            put_varint(&mut body, files.len() as u64);
            for file in files {
                put_varint(&mut body, file.number);
                put_varint(&mut body, file.size_bytes);
                put_bytes(&mut body, &file.smallest_key);
                put_bytes(&mut body, &file.largest_key);
                put_varint(&mut body, file.entries);
                put_varint(&mut body, file.tombstones);
                put_varint(&mut body, file.seq_min);
                put_varint(&mut body, file.seq_max);
            }
        }
    }
    let body_len = match u32::try_from(body.len()) {
        Ok(len) if body.len() <= MANIFEST_BODY_BYTES_MAX => len,
        _ => {
            return Err(ManifestError::TooLarge {
                size_bytes: body.len(),
            })
        }
    };
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&MANIFEST_MAGIC);
    out.extend_from_slice(&MANIFEST_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&body_len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Decodes the complete bytes of a manifest file into (manifest number, version). Never
/// panics; any deviation from the format or an invalid version is an error.
pub fn decode_version(bytes: &[u8]) -> Result<(u64, Version), DecodeError> {
    let error = |offset: usize, detail: String| DecodeError { offset, detail };
    let header = bytes.get(..HEADER_LEN).ok_or_else(|| {
        error(
            0,
            format!("file is {} bytes, shorter than the header", bytes.len()),
        )
    })?;
    let field = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    if header[..8] != MANIFEST_MAGIC {
        return Err(error(0, "bad magic".to_string()));
    }
    let format_version = field(8);
    if format_version != MANIFEST_FORMAT_VERSION {
        return Err(error(
            8,
            format!("unsupported format version {format_version}"),
        ));
    }
    let body_len = field(12) as usize;
    if body_len > MANIFEST_BODY_BYTES_MAX || HEADER_LEN + body_len != bytes.len() {
        return Err(error(
            12,
            format!(
                "body length {body_len} does not match file size {}",
                bytes.len()
            ),
        ));
    }
    let body = &bytes[HEADER_LEN..];
    let expected_crc = field(16);
    let actual_crc = crc32fast::hash(body);
    if actual_crc != expected_crc {
        return Err(error(
            16,
            format!(
                "body checksum mismatch: stored {expected_crc:#010x}, computed {actual_crc:#010x}"
            ),
        ));
    }

    let mut reader = Reader {
        bytes: body,
        offset: 0,
    };
    let decoded = reader.version()?;
    if reader.offset != body.len() {
        return Err(reader.error("trailing bytes after the version"));
    }
    decoded
        .1
        .check()
        .map_err(|e| error(HEADER_LEN, format!("decoded version is invalid: {e}")))?;
    Ok(decoded)
}

/// Bounds-checked cursor over a manifest body. Offsets in errors are file offsets.
struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, detail: &str) -> DecodeError {
        DecodeError {
            offset: HEADER_LEN + self.offset,
            detail: detail.to_string(),
        }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.offset
    }

    fn varint(&mut self, what: &str) -> Result<u64, DecodeError> {
        let mut value: u64 = 0;
        for index in 0..VARINT_LEN_MAX {
            let Some(&byte) = self.bytes.get(self.offset + index) else {
                return Err(self.error(&format!("{what}: truncated varint")));
            };
            let group = u64::from(byte & 0x7f);
            // The tenth byte may only carry the single top bit of a u64.
            if index == VARINT_LEN_MAX - 1 && group > 1 {
                return Err(self.error(&format!("{what}: varint overflows u64")));
            }
            value |= group << (7 * index);
            if byte & 0x80 == 0 {
                self.offset += index + 1;
                return Ok(value);
            }
        }
        Err(self.error(&format!(
            "{what}: varint longer than {VARINT_LEN_MAX} bytes"
        )))
    }

    fn u32_varint(&mut self, what: &str) -> Result<u32, DecodeError> {
        let value = self.varint(what)?;
        u32::try_from(value).map_err(|_| self.error(&format!("{what}: {value} exceeds u32")))
    }

    /// A count of items that each take at least one byte, so it cannot exceed the bytes left
    /// (this bounds every allocation by the file size).
    fn count(&mut self, what: &str) -> Result<usize, DecodeError> {
        let count = self.varint(what)?;
        match usize::try_from(count) {
            Ok(count) if count <= self.remaining() => Ok(count),
            _ => Err(self.error(&format!("{what}: count {count} exceeds the bytes left"))),
        }
    }

    fn bytes(&mut self, what: &str) -> Result<&'a [u8], DecodeError> {
        let len = self.varint(what)?;
        let len = match usize::try_from(len) {
            Ok(len) if len <= self.remaining() => len,
            _ => return Err(self.error(&format!("{what}: length {len} exceeds the bytes left"))),
        };
        let slice = &self.bytes[self.offset..self.offset + len];
        self.offset += len;
        Ok(slice)
    }

    fn string(&mut self, what: &str) -> Result<String, DecodeError> {
        let start = self.offset;
        let bytes = self.bytes(what)?;
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text.to_string()),
            Err(_) => {
                self.offset = start;
                Err(self.error(&format!("{what}: not UTF-8")))
            }
        }
    }

    fn version(&mut self) -> Result<(u64, Version), DecodeError> {
        let manifest_number = self.varint("manifest number")?;
        let next_file_number = self.varint("next file number")?;
        let next_tree_id = self.u32_varint("next tree id")?;
        let last_seq = self.varint("last seq")?;

        let mut metadata = BTreeMap::new();
        for _ in 0..self.count("metadata count")? {
            let key = self.string("metadata key")?;
            let value = self.bytes("metadata value")?.to_vec();
            if metadata
                .last_key_value()
                .is_some_and(|(last, _)| *last >= key)
            {
                return Err(self.error("metadata keys not strictly ascending"));
            }
            metadata.insert(key, value);
        }

        let mut trees = BTreeMap::new();
        for _ in 0..self.count("tree count")? {
            let id = self.u32_varint("tree id")?;
            if trees.last_key_value().is_some_and(|(&last, _)| last >= id) {
                return Err(self.error("tree ids not strictly ascending"));
            }
            let tree = self.tree()?;
            trees.insert(id, tree);
        }

        let version = Version {
            trees,
            next_file_number,
            next_tree_id,
            last_seq,
            metadata,
        };
        Ok((manifest_number, version))
    }

    fn tree(&mut self) -> Result<TreeVersion, DecodeError> {
        let name = self.string("tree name")?;
        let flushed_seq = self.varint("flushed seq")?;
        let level_count = self.varint("level count")?;
        if level_count != LEVELS as u64 {
            return Err(self.error(&format!("level count {level_count}, expected {LEVELS}")));
        }
        let mut levels = Vec::with_capacity(LEVELS);
        for _ in 0..LEVELS {
            let file_count = self.count("file count")?;
            let mut files = Vec::with_capacity(file_count);
            for _ in 0..file_count {
                files.push(Arc::new(self.file()?));
            }
            levels.push(files);
        }
        Ok(TreeVersion {
            name,
            levels,
            flushed_seq,
        })
    }

    fn file(&mut self) -> Result<FileMeta, DecodeError> {
        Ok(FileMeta {
            number: self.varint("file number")?,
            size_bytes: self.varint("file size")?,
            smallest_key: self.bytes("smallest key")?.to_vec(),
            largest_key: self.bytes("largest key")?.to_vec(),
            entries: self.varint("entry count")?,
            tombstones: self.varint("tombstone count")?,
            seq_min: self.varint("seq min")?,
            seq_max: self.varint("seq max")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_the_edges() {
        for value in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX - 1, u64::MAX] {
            let mut buf = Vec::new();
            put_varint(&mut buf, value);
            let mut reader = Reader {
                bytes: &buf,
                offset: 0,
            };
            assert_eq!(reader.varint("v"), Ok(value));
            assert_eq!(reader.offset, buf.len());
        }
    }

    #[test]
    fn varints_reject_overflow_and_truncation() {
        let eleven = [0xffu8; 11];
        let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        for bad in [&eleven[..], &overflow[..], &[0x80][..], &[][..]] {
            let mut reader = Reader {
                bytes: bad,
                offset: 0,
            };
            assert!(reader.varint("v").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn file_names_round_trip() {
        assert_eq!(sst_file_name(42), "000042.sst");
        assert_eq!(manifest_file_name(7), "MANIFEST-000007");
        assert_eq!(manifest_file_name(1_234_567), "MANIFEST-1234567");
        assert_eq!(parse_sst_file_name("000042.sst"), Some(42));
        assert_eq!(
            parse_manifest_file_name("MANIFEST-1234567"),
            Some(1_234_567)
        );
        for bad in [
            "42.sst.tmp",
            ".sst",
            "x1.sst",
            "+1.sst",
            "000042.SST",
            "LOCK",
        ] {
            assert_eq!(parse_sst_file_name(bad), None, "{bad}");
        }
        assert_eq!(parse_manifest_file_name("MANIFEST-"), None);
        assert_eq!(
            parse_manifest_file_name("MANIFEST-99999999999999999999"),
            None
        );
    }

    #[test]
    fn current_is_parsed_strictly() {
        assert_eq!(parse_current(b"MANIFEST-000007\n"), Some(7));
        assert_eq!(parse_current(b"MANIFEST-1234567\n"), Some(1_234_567));
        for bad in [
            &b"MANIFEST-000007"[..],
            b"MANIFEST-000007\n\n",
            b"MANIFEST-7\n",
            b"MANIFEST-0000007\n",
            b"MANIFEST-00000a\n",
            b"manifest-000007\n",
            b"",
            b"\xff\xfe",
        ] {
            assert_eq!(parse_current(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn counts_cannot_exceed_the_bytes_left() {
        // A metadata count of 2^40 in a tiny body: rejected before any allocation.
        let mut body = Vec::new();
        for field in [1u64, 1, 0, 0, 1 << 40] {
            put_varint(&mut body, field);
        }
        let mut reader = Reader {
            bytes: &body,
            offset: 0,
        };
        let err = reader.version().unwrap_err();
        assert!(err.detail.contains("metadata count"), "{err}");
    }
}
