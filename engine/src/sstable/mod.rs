//! SSTables: the immutable sorted files an LSM tree is made of.
//!
//! A table holds internal entries (internal key → value, see [`shoal_compaction::key`]) in
//! [`shoal_compaction::compare_internal`] order. It is written once by [`TableBuilder`], then read
//! many times, concurrently, through [`Table`] (point lookups) and [`TableIterator`] (scans in
//! both directions). Reads go through [`shoal_vfs::ReadableFile::bytes`], which is an mmap for
//! real files, so a read copies nothing until it returns a value; a point read may instead
//! copy its one data block out of the file ([`crate::PointReads`]), so that it leaves no
//! page of it in the process's resident memory.
//!
//! # File format (version 2)
//!
//! All fixed-width integers are little-endian. `varint` is unsigned LEB128 (7 bits per byte,
//! low groups first, high bit set on every byte but the last; at most 10 bytes).
//!
//! ```text
//! file        = data block*  filter block  properties block  index block  footer
//! block       = contents  kind (1 byte)  crc32 (4 bytes)
//! footer      = filter handle  properties handle  index handle   (each: offset u64, size u64)
//!               format version u32   footer crc32 u32   magic u64      (64 bytes in all)
//! ```
//!
//! **Blocks.** Every block is its contents followed by a 5-byte trailer: a kind byte
//! (1 data, 2 filter, 3 properties, 4 index) and a CRC-32 (IEEE, as computed by `crc32fast`)
//! of the contents *and* the kind byte. Covering the kind byte means a handle that points at
//! the wrong kind of block is caught as well as flipped bits. A handle's `size` counts the
//! contents only; the block occupies `size + 5` bytes on disk.
//!
//! **Nothing is left unchecked.** The blocks tile the file with no gaps: the data blocks
//! (as listed by the index) are contiguous from offset 0, the filter block starts where the
//! last data block ends, the properties block follows the filter, the index follows the
//! properties and the footer follows the index and ends the file. [`Table::open`] verifies
//! this tiling, so every byte of the file is under some CRC: the footer's bytes under the
//! footer CRC (magic and CRC are compared as stored), every other byte under the CRC of the
//! block holding it. A single flipped bit or byte anywhere is therefore reported as
//! corruption, never returned as data (CRC-32 detects every error burst of up to 32 bits).
//!
//! **Data and index blocks** share one layout, LevelDB's prefix-compressed block:
//!
//! ```text
//! block contents = entry*  restart offset (u32)*  restart count (u32)
//! entry          = shared varint  unshared varint  value length varint
//!                  key bytes [shared..]  value bytes
//! ```
//!
//! Each key is stored as the length of the prefix it shares with the previous key plus the
//! bytes that differ. Every `restart_interval` entries, and in data blocks also once the
//! entries since the last restart hold `restart_span_bytes`, the sharing restarts
//! (`shared = 0`) and the entry's offset is recorded in the restart array. Where restarts
//! fall is the writer's choice, not part of the format: a reader takes them from the array
//! (tables written before restarts by size read as they did). A seek binary-searches the
//! restart keys and then scans at most one run, and a step backwards decodes forward
//! from the restart point before the current entry. A restart count of zero means an empty
//! block. Every key is a full internal key (at least 8 bytes, kind byte 0 or 1).
//!
//! In a data block the entries are the table's internal keys and their values (empty for
//! tombstones). A data block is cut once its contents reach `block_size_bytes`, so a block
//! holds at least one entry and may exceed the target by one entry.
//!
//! The index block has one entry per data block, in order: the key is the *last* internal
//! key of that data block, the value is the block's handle as `varint offset, varint size`.
//! The first block whose last key is >= a target is the only block that can hold the first
//! entry >= the target. The index is decoded into memory when the table is opened.
//!
//! **Filter block**: one Bloom filter over the *prefixes* of the user keys, as returned by
//! the caller's [`PrefixFn`] (for the table tree, the item-collection prefix `hash64 | pk`; by
//! default the whole user key), and over the whole user keys: a scan of a collection the
//! table does not hold skips it by the prefix, and a point lookup skips it by the key, even
//! when the table holds other keys of that collection. (A collection is rewritten piecemeal,
//! so new tables hold a few of its keys; before whole keys were filtered, a lookup of the
//! collection's size record, which an overwrite of equal size does not rewrite, searched every
//! such table.) One filter rather than two: the hashes share one bit array sized for both.
//! Version 1 tables, whose filter holds the prefixes only, are still read; for them a point
//! lookup probes the key's prefix.
//!
//! ```text
//! filter contents = bit array (n bytes, n >= 8)  probe count (u8, 1..=30)
//!                 | (empty: no filter, everything may be present)
//! ```
//!
//! A prefix or key is hashed with 64-bit MurmurHash64A (seed `0x5348_4f41_4c5f_424c`) to `h`;
//! probe `i` (0-based) sets bit `(h + i * delta) mod (8 n)` with `delta = h` rotated right
//! by 21 bits, all arithmetic wrapping at 64 bits; bit `b` is bit `b mod 8` of byte `b / 8`.
//! The builder hashes each distinct run of equal consecutive prefixes once and each distinct
//! user key once (a key that is its own prefix, as with the default whole-key prefix, is
//! hashed once in all); the probe count is `round(0.69 * bits_per_key)` and the array holds
//! `bits_per_key` bits per hash (at least 64), rounded up to whole bytes.
//!
//! **Properties block**: fixed-width fields, then the smallest and largest internal keys:
//!
//! ```text
//! entries u64  tombstones u64  seq_min u64  seq_max u64  raw_key_bytes u64
//! raw_value_bytes u64  data_blocks u64  smallest key length u32  smallest key
//! largest key length u32  largest key
//! ```
//!
//! **Footer**: the three handles, the format version (2; 1 is read too), a CRC-32 of the 52 bytes before
//! it, and the magic number `0x5348_4F41_4C53_5354` ("SHOALSST" read as a big-endian
//! integer, stored little-endian) as the last 8 bytes of the file.

mod block;
mod block_builder;
pub(crate) mod bloom;
mod builder;
mod format;
mod iter;
mod properties;
mod table;

pub use builder::TableBuilder;
pub use iter::TableIterator;
pub use properties::TableProperties;
pub use table::{PointLookup, Table};

/// Returns the bloom-filter prefix of a USER key (e.g. `hash64 | pk` for the table tree).
pub type PrefixFn = fn(&[u8]) -> &[u8];

/// The default [`PrefixFn`]: the whole user key.
pub fn whole_key(user_key: &[u8]) -> &[u8] {
    user_key
}

/// The longest internal key a table accepts.
pub const KEY_LEN_MAX_BYTES: usize = 64 * 1024;
/// The longest value a table accepts.
pub const VALUE_LEN_MAX_BYTES: usize = 16 * 1024 * 1024;
/// The largest data block target; larger option values are clamped to it.
pub const BLOCK_SIZE_MAX_BYTES: usize = 4 * 1024 * 1024;
/// The most bloom bits per key a table uses; larger option values are clamped to it.
pub const BLOOM_BITS_PER_KEY_MAX: usize = 64;

/// How a table is laid out. Only the writer needs these: a reader learns everything from the
/// file, except the prefix function, which must be the one the table was written with.
#[derive(Debug, Clone, Copy)]
pub struct TableOptions {
    /// A data block is cut once its contents reach this size (clamped to 1..=4 MiB).
    pub block_size_bytes: usize,
    /// Keys between restart points in a data block (0 is taken as 1).
    pub restart_interval: usize,
    /// A data block's restart point also starts once the entries since the last one hold
    /// this many bytes (`usize::MAX`: by count alone). Large entries then each start one:
    /// a point seek's binary search over the restarts lands on its entry, where a walk
    /// from one restart decoded every entry before it, a cache miss each that could only
    /// start once the one before was decoded (4 KiB blocks of 1 KB items held 4 entries
    /// behind one restart). Small entries keep their prefix compression.
    pub restart_span_bytes: usize,
    /// Bloom filter bits per distinct prefix; 0 writes no filter (clamped to <= 64).
    pub bloom_bits_per_key: usize,
    /// Maps a user key to the prefix the bloom filter is built on.
    pub prefix: PrefixFn,
}

impl Default for TableOptions {
    fn default() -> TableOptions {
        TableOptions {
            block_size_bytes: 4096,
            restart_interval: 16,
            restart_span_bytes: 512,
            bloom_bits_per_key: 10,
            prefix: whole_key,
        }
    }
}

/// What can go wrong writing or reading a table.
#[derive(Debug, thiserror::Error)]
pub enum SstError {
    /// The file's bytes failed a checksum or a structural check.
    #[error("sstable {file_number:06} is corrupt at offset {offset}: {detail}")]
    Corruption {
        file_number: u64,
        offset: u64,
        detail: String,
    },
    /// The underlying storage failed.
    #[error("sstable i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// `add` was given a key that is not an internal key (shorter than its trailer, or with
    /// an unknown kind byte).
    #[error("not an internal key ({len} bytes)")]
    InvalidKey { len: usize },
    /// `add` was given an entry over [`KEY_LEN_MAX_BYTES`] or [`VALUE_LEN_MAX_BYTES`].
    #[error("entry too large: key {key_len} bytes, value {value_len} bytes")]
    EntryTooLarge { key_len: usize, value_len: usize },
    /// An earlier write failed; the file is incomplete and must be discarded.
    #[error("the table builder failed earlier; the file is incomplete")]
    BuilderFailed,
}

impl From<SstError> for shoal_compaction::IterError {
    fn from(error: SstError) -> shoal_compaction::IterError {
        match error {
            SstError::Io(e) => shoal_compaction::IterError::Io(e.to_string()),
            other => shoal_compaction::IterError::Corruption(other.to_string()),
        }
    }
}
