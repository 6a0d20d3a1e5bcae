//! An open table: footer, index, filter and properties checked and held in memory; data
//! blocks read from the file's bytes (an mmap for real files) on demand, or, for point
//! reads of a mapped file when the caller asks, copied out of the file
//! ([`PointReads`](crate::PointReads)).

use std::cell::OnceCell;
use std::cmp::Ordering;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Arc;

use shoal_compaction::key::{EntryKind, InlinePrefix, InternalKey, SEQ_MAX};
use shoal_vfs::ReadableFile;

use super::block::{BlockCursor, BlockLayout};
use super::bloom::{self, FilterShape};
use super::format::{
    block_range_with_trailer, checked_block, get_varint, verified_block, BlockHandle, BlockKind,
    DecodeError, Footer, FOOTER_LEN, FORMAT_VERSION_WHOLE_KEY_FILTER,
};
use super::properties::TableProperties;
use super::{PrefixFn, SstError};
use crate::mapped_reads::{ChargedWindows, MappedReads};

/// One point read of `user_key` as of a sequence number, as the memtables and tables it
/// probes need it: the key's filter hash computed once, and the internal key to seek built
/// when a memtable or table first gets past its filter. A read probes every memtable of the
/// tree, then every L0 table and one table per level; each used to hash the key and build
/// the target again.
pub struct PointLookup<'a> {
    user_key: &'a [u8],
    snapshot_seq: u64,
    key_hash: u64,
    target: OnceCell<Vec<u8>>,
}

impl<'a> PointLookup<'a> {
    pub fn new(user_key: &'a [u8], snapshot_seq: u64) -> PointLookup<'a> {
        PointLookup {
            user_key,
            snapshot_seq,
            key_hash: bloom::hash64(user_key),
            target: OnceCell::new(),
        }
    }

    pub fn user_key(&self) -> &'a [u8] {
        self.user_key
    }

    pub fn snapshot_seq(&self) -> u64 {
        self.snapshot_seq
    }

    /// The user key's filter hash (`bloom::hash64`).
    pub fn key_hash(&self) -> u64 {
        self.key_hash
    }

    /// The internal key to seek: the newest version at or below the snapshot.
    pub fn target(&self) -> &[u8] {
        self.target.get_or_init(|| {
            shoal_compaction::key::seek_key(self.user_key, self.snapshot_seq.min(SEQ_MAX))
        })
    }
}

/// An immutable table, shared between readers as `Arc<Table>`.
pub struct Table {
    file: Arc<dyn ReadableFile>,
    file_number: u64,
    prefix: PrefixFn,
    properties: TableProperties,
    index: BlockIndex,
    /// The filter's bit array and probe count within the file, if the table has a filter.
    filter: Option<(Range<usize>, FilterShape)>,
    /// Whether the filter holds every user key as well as every prefix (format version 2
    /// on), so a point lookup can rule out a key whose collection the table does hold.
    filter_holds_keys: bool,
    /// Where a corruption met in this file is reported (the database's; none for a table
    /// opened on its own).
    corruption_log: Option<Arc<crate::corruption::CorruptionLog>>,
    /// The windows of the file reads have charged to the database's budget of resident
    /// mapped bytes (none for a table opened on its own).
    mapped_reads: Option<ChargedWindows>,
}

/// A data block's checked contents.
pub(crate) struct DataBlock<'a> {
    pub contents: &'a [u8],
    pub layout: BlockLayout,
    /// Absolute offset of the contents in the file.
    pub offset: usize,
}

impl Table {
    /// Verifies footer magic, version and CRC, the tiling of the blocks, and reads the index,
    /// filter and properties (all CRC-checked). Data blocks are checked when first read.
    pub fn open(
        file: Arc<dyn ReadableFile>,
        file_number: u64,
        prefix: PrefixFn,
    ) -> Result<Table, SstError> {
        let corrupt = |offset: usize, detail: &str| SstError::Corruption {
            file_number,
            offset: offset as u64,
            detail: detail.to_string(),
        };
        let absolute = |base: usize| move |e: DecodeError| corrupt(base + e.offset, e.detail);
        let bytes = file.bytes();
        let footer_start = bytes
            .len()
            .checked_sub(FOOTER_LEN)
            .ok_or_else(|| corrupt(0, "file too short to be an SSTable"))?;
        let footer = Footer::decode(&bytes[footer_start..]).map_err(absolute(footer_start))?;

        // The blocks after the data must follow each other and end at the footer, so no
        // byte of the file escapes a checksum.
        let follows = |before: BlockHandle, after_offset: u64| {
            before.end_with_trailer() == Some(after_offset)
        };
        if !follows(footer.filter, footer.properties.offset)
            || !follows(footer.properties, footer.index.offset)
            || !follows(footer.index, footer_start as u64)
        {
            return Err(corrupt(footer_start, "footer handles do not tile the file"));
        }

        let index_contents =
            verified_block(bytes, footer.index, BlockKind::Index).map_err(absolute(0))?;
        let index =
            BlockIndex::decode(index_contents).map_err(absolute(footer.index.offset as usize))?;
        // The index is read from memory from now on: its pages, about 1% of the file, need
        // not stay resident.
        let index_start = footer.index.offset as usize;
        file.release(index_start..index_start + index_contents.len());
        if index.data_end() != footer.filter.offset {
            return Err(corrupt(
                footer.index.offset as usize,
                "data blocks do not tile the start of the file",
            ));
        }

        let filter_contents =
            verified_block(bytes, footer.filter, BlockKind::Filter).map_err(absolute(0))?;
        let filter = FilterShape::parse(filter_contents)
            .map_err(absolute(footer.filter.offset as usize))?
            .map(|shape| {
                let start = footer.filter.offset as usize;
                (start..start + filter_contents.len(), shape)
            });

        let properties_contents =
            verified_block(bytes, footer.properties, BlockKind::Properties).map_err(absolute(0))?;
        let mut properties = TableProperties::decode(properties_contents)
            .map_err(absolute(footer.properties.offset as usize))?;
        properties.size_bytes = bytes.len() as u64;
        let block_count = index.len();
        let consistent = properties.data_blocks == block_count as u64
            && (properties.entries == 0) == (block_count == 0)
            && (block_count == 0 || index.key(block_count - 1) == properties.largest_key);
        if !consistent {
            return Err(corrupt(
                footer.properties.offset as usize,
                "properties disagree with the index",
            ));
        }

        Ok(Table {
            file,
            file_number,
            prefix,
            properties,
            index,
            filter,
            filter_holds_keys: footer.version >= FORMAT_VERSION_WHOLE_KEY_FILTER,
            corruption_log: None,
            mapped_reads: None,
        })
    }

    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// The prefix function the table was opened with.
    pub fn prefix_fn(&self) -> PrefixFn {
        self.prefix
    }

    /// Bloom check on a prefix (as produced by the [`PrefixFn`]). `false` = definitely
    /// absent; a table without a filter always answers `true`.
    pub fn may_contain_prefix(&self, prefix: &[u8]) -> bool {
        self.filter_may_contain(prefix)
    }

    /// Bloom check on a whole user key: `false` = the table holds no version of it. Tables
    /// of format version 1 filter prefixes only, so for them this checks the key's prefix.
    pub fn may_contain_key(&self, user_key: &[u8]) -> bool {
        self.may_contain_lookup(&PointLookup::new(user_key, SEQ_MAX))
    }

    fn may_contain_lookup(&self, lookup: &PointLookup) -> bool {
        if self.filter_holds_keys {
            self.filter_may_contain_hash(lookup.key_hash)
        } else {
            self.filter_may_contain((self.prefix)(lookup.user_key))
        }
    }

    fn filter_may_contain(&self, bytes: &[u8]) -> bool {
        self.filter_may_contain_hash(bloom::hash64(bytes))
    }

    fn filter_may_contain_hash(&self, hash: u64) -> bool {
        match &self.filter {
            None => true,
            Some((range, shape)) => {
                let bits = &self.file.bytes()[range.clone()];
                shape.may_contain(bits, hash)
            }
        }
    }

    /// The newest entry for `user_key` with seq <= `snapshot_seq`: `Some((kind, value))`, or
    /// `None` if the table holds no such version. Consults the bloom filter first. The value
    /// is copied out, and so is its block if the file is a mapping; [`Table::get_for`] can
    /// read it in place.
    pub fn get(
        &self,
        user_key: &[u8],
        snapshot_seq: u64,
    ) -> Result<Option<(EntryKind, Vec<u8>)>, SstError> {
        let mut block_copy = Vec::new();
        let lookup = PointLookup::new(user_key, snapshot_seq);
        let found = self.get_for(&lookup, Some(&mut block_copy))?;
        Ok(found.map(|(kind, value)| (kind, value.to_vec())))
    }

    /// [`Table::get`] for a lookup that may probe several tables: the key's hash and seek
    /// target are computed once for all of them. The value borrows from the data block:
    /// copied into `block_copy` if one is given and the file is a mapping
    /// (`DbOptions::point_reads` says why), else where the file's bytes lie. `block_copy` is
    /// grown to the largest block read and never shrunk, so one buffer serves every table
    /// a lookup probes.
    pub fn get_for<'a>(
        &'a self,
        lookup: &PointLookup,
        block_copy: Option<&'a mut Vec<u8>>,
    ) -> Result<Option<(EntryKind, &'a [u8])>, SstError> {
        if !self.may_contain_lookup(lookup) {
            return Ok(None);
        }
        let user_key = lookup.user_key;
        let target = lookup.target();
        let block_index = self.find_block(target);
        if block_index == self.block_count() {
            return Ok(None);
        }
        let block = if let Some(block_copy) = block_copy.filter(|_| self.file.is_mapping()) {
            self.read_data_block(block_index, Some(block_copy))?
        } else {
            let block = self.data_block(block_index)?;
            self.charge_mapped(&block);
            block
        };
        let mut cursor = BlockCursor::default();
        cursor.reset(block.layout);
        cursor
            .seek(block.contents, target)
            .map_err(|e| self.block_corruption(&block, e))?;
        if !cursor.valid() {
            return Err(self.corruption(block.offset, "data block ends before its index key"));
        }
        let found = InternalKey::parse(cursor.key())
            .ok_or_else(|| self.corruption(block.offset, "entry key is not an internal key"))?;
        if found.user_key != user_key {
            return Ok(None);
        }
        let (start, end) = cursor.value_range();
        // In place: the value is read where the block lies (mapped or copied), not copied
        // again.
        Ok(Some((found.kind, &block.contents[start..end])))
    }

    pub(crate) fn block_count(&self) -> usize {
        self.index.len()
    }

    /// The first data block whose last key is >= `target` (`block_count()` if none).
    pub(crate) fn find_block(&self, target: &[u8]) -> usize {
        self.index.find(target)
    }

    /// The contents of data block `index`, read where the file is mapped, CRC-checked the
    /// first time it is read.
    pub(crate) fn data_block(&self, index: usize) -> Result<DataBlock<'_>, SstError> {
        self.read_data_block(index, None)
    }

    /// Data block `index`, in place in the mapped file, or copied into `block_copy` with
    /// `read_at` when one is given. Either way the same checks, with the same errors at the
    /// same offsets: the CRC and kind the first time the block is read (its trailer is
    /// read only then), the layout every time.
    fn read_data_block<'a>(
        &'a self,
        index: usize,
        block_copy: Option<&'a mut Vec<u8>>,
    ) -> Result<DataBlock<'a>, SstError> {
        let entry = self.index.entry(index);
        let handle = entry.handle;
        let offset = handle.offset as usize;
        let verified = &entry.block_verified;
        let unchecked = !verified.load(AtomicOrdering::Acquire);
        // A checked block is read without its trailer, and its handle was bounds-checked at
        // open (the blocks tile the file): only the first read resolves the trailer's end.
        let read_len = if unchecked {
            block_range_with_trailer(handle, self.file.bytes().len())
                .map_err(|e| self.corruption(e.offset, e.detail))?
                .len()
        } else {
            handle.size as usize
        };
        let bytes: &'a [u8] = match block_copy {
            None => &self.file.bytes()[offset..offset + read_len],
            Some(block_copy) => {
                if block_copy.len() < read_len {
                    block_copy.resize(read_len, 0);
                }
                self.file
                    .read_at(handle.offset, &mut block_copy[..read_len])?;
                &block_copy[..read_len]
            }
        };
        let contents = if unchecked {
            let contents = checked_block(bytes, BlockKind::Data)
                .map_err(|e| self.corruption(offset + e.offset, e.detail))?;
            verified.store(true, AtomicOrdering::Release);
            contents
        } else {
            bytes
        };
        let layout = BlockLayout::parse(contents)
            .map_err(|e| self.corruption(offset + e.offset, e.detail))?;
        Ok(DataBlock {
            contents,
            layout,
            offset,
        })
    }

    /// Where the data blocks end in the file.
    pub(crate) fn data_end(&self) -> usize {
        self.index.data_end() as usize
    }

    /// Releases `range` of the file from the process's resident memory
    /// ([`ReadableFile::release`]).
    pub(crate) fn release(&self, range: Range<usize>) {
        self.file.release(range);
    }

    /// Charges `block`, which a read leaves mapped, to the database's budget of resident
    /// mapped bytes (`mapped_reads`). Walks that release what they pass
    /// (`TableIterator::releasing_behind`: compaction, whole-tree checks) leave nothing
    /// mapped and do not call this; their blocks would only bring releases of the pages
    /// point reads hold.
    pub(crate) fn charge_mapped(&self, block: &DataBlock) {
        if let Some(windows) = &self.mapped_reads {
            windows.charge(block.offset, block.offset + block.contents.len());
        }
    }

    /// Releases the data blocks' pages from the process's resident memory and forgets the
    /// windows charged for them (`mapped_reads`). The filter's pages stay: every point read
    /// probes the filter of each table it passes, so releasing them made each read after a
    /// release fault them back in, for a tenth of the bytes (about 10 bits a key).
    pub(crate) fn release_mapped_reads(&self) {
        if let Some(windows) = &self.mapped_reads {
            windows.clear();
        }
        self.file.release(0..self.data_end());
    }

    /// The bytes of a data block already returned by [`Table::data_block`].
    pub(crate) fn block_contents(&self, range: Range<usize>) -> &[u8] {
        &self.file.bytes()[range]
    }

    pub(crate) fn block_corruption(&self, block: &DataBlock, error: DecodeError) -> SstError {
        self.corruption(block.offset + error.offset, error.detail)
    }

    /// Reports this file's corruptions to `log` from now on.
    pub(crate) fn with_corruption_log(
        mut self,
        log: Arc<crate::corruption::CorruptionLog>,
    ) -> Table {
        self.corruption_log = Some(log);
        self
    }

    /// Charges the data blocks this table reads to `budget` from now on.
    pub(crate) fn with_mapped_reads(mut self, budget: Arc<MappedReads>) -> Table {
        self.mapped_reads = Some(ChargedWindows::new(budget, self.file.bytes().len()));
        self
    }

    /// The error of a failed check at `offset`, reported to the database's corruption log:
    /// every corruption error of a table is made here.
    pub(crate) fn corruption(&self, offset: usize, detail: &str) -> SstError {
        if let Some(log) = &self.corruption_log {
            log.report(
                self.file_number,
                offset as u64,
                detail,
                (&self.properties.smallest_key, &self.properties.largest_key),
            );
        }
        SstError::Corruption {
            file_number: self.file_number,
            offset: offset as u64,
            detail: detail.to_string(),
        }
    }
}

/// How many of the first `words` (sorted) equal `word`. The run is usually a block or a
/// few (a partition's items), so this probes 1, 2, 4, … words ahead, in the cache lines the
/// search for the run's start ended on, and binary-searches only the last stretch; a binary
/// search of the whole rest of the array missed the cache at most of its steps (a third of
/// `find_block` in a profile of point reads).
fn run_len(words: &[u64], word: u64) -> usize {
    // words[..known] all equal `word`; the run ends within the next `step` words.
    let (mut known, mut step) = (0, 1);
    while known + step <= words.len() && words[known + step - 1] == word {
        known += step;
        step *= 2;
    }
    let end = (known + step).min(words.len());
    known + words[known..end].partition_point(|w| *w == word)
}

/// The decoded index block: each data block's last key and handle, in order.
struct BlockIndex {
    /// Every index key, concatenated (one allocation for the whole index).
    keys: Vec<u8>,
    /// Each entry's [`InlinePrefix::leading_word`], in entry order: a search narrows to the
    /// entries sharing the target's leading word on this dense array (8 bytes an entry, a
    /// 20 MB table's in 40 KB of cache) before it reads an entry (64 bytes). Searching the
    /// entries themselves missed the cache at nearly every step: `find_block` was 9% of the
    /// server's CPU under `shoal bench --workloads BatchGetItem` (perf, 2026-11-29).
    leading_words: Vec<u64>,
    entries: Vec<IndexEntry>,
}

/// One data block as a point read needs it, in one cache line: the search's last step
/// compares `prefix`, and the read then takes `handle` and `block_verified` from the same
/// line. Unaligned (64 bytes at any 8-byte boundary), 7 entries in 8 straddled two lines,
/// and the verified flags were a third line elsewhere.
#[repr(align(64))]
struct IndexEntry {
    /// The key's first bytes: the binary search compares these and reads `keys` only on a
    /// tie, so each step touches one entry instead of an entry and a key elsewhere
    /// (see [`InlinePrefix`]).
    prefix: InlinePrefix,
    /// Where the key lies in `BlockIndex::keys` (u32s, so the entry fits its line).
    key_start: u32,
    key_len: u32,
    handle: BlockHandle,
    /// Whether the data block's CRC has been checked, so hot blocks are hashed once.
    block_verified: AtomicBool,
}

// An entry that outgrew or left its line would straddle two again.
const _: () =
    assert!(std::mem::size_of::<IndexEntry>() == 64 && std::mem::align_of::<IndexEntry>() == 64);

impl IndexEntry {
    fn key_range(&self) -> Range<usize> {
        let start = self.key_start as usize;
        start..start + self.key_len as usize
    }
}

impl BlockIndex {
    /// Decodes the index block, checking that keys strictly increase and that the data
    /// blocks are contiguous from offset 0. Error offsets are relative to the index block.
    fn decode(contents: &[u8]) -> Result<BlockIndex, DecodeError> {
        let mut cursor = BlockCursor::default();
        cursor.reset(BlockLayout::parse(contents)?);
        let mut index = BlockIndex {
            keys: Vec::new(),
            leading_words: Vec::new(),
            entries: Vec::new(),
        };
        let mut expected_offset = 0u64;
        cursor.seek_to_first(contents)?;
        while cursor.valid() {
            let (value_start, value_end) = cursor.value_range();
            let value = &contents[..value_end];
            let mut pos = value_start;
            let bad_handle = DecodeError::at(value_start, "bad block handle in the index");
            let handle = BlockHandle {
                offset: get_varint(value, &mut pos).ok_or(bad_handle)?,
                size: get_varint(value, &mut pos).ok_or(bad_handle)?,
            };
            if pos != value_end || handle.offset != expected_offset {
                return Err(bad_handle);
            }
            expected_offset = handle.end_with_trailer().ok_or(bad_handle)?;
            if let Some(last) = index.entries.last() {
                let previous = &index.keys[last.key_range()];
                if shoal_compaction::compare_internal(previous, cursor.key()) != Ordering::Less {
                    return Err(DecodeError::at(value_start, "index keys out of order"));
                }
            }
            let key_start = index.keys.len();
            index.keys.extend_from_slice(cursor.key());
            // Only a corrupt index holds 4 GiB of keys (each is at most 64 KiB).
            let too_large = DecodeError::at(value_start, "index keys exceed 4 GiB");
            let key_start = u32::try_from(key_start).map_err(|_| too_large)?;
            let key_len = u32::try_from(cursor.key().len()).map_err(|_| too_large)?;
            key_start.checked_add(key_len).ok_or(too_large)?;
            let prefix = InlinePrefix::of_internal_key(cursor.key());
            index.leading_words.push(prefix.leading_word());
            index.entries.push(IndexEntry {
                prefix,
                key_start,
                key_len,
                handle,
                block_verified: AtomicBool::new(false),
            });
            cursor.next(contents)?;
        }
        Ok(index)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn key(&self, index: usize) -> &[u8] {
        &self.keys[self.entries[index].key_range()]
    }

    fn entry(&self, index: usize) -> &IndexEntry {
        &self.entries[index]
    }

    /// Where the data blocks end (0 if there are none).
    fn data_end(&self) -> u64 {
        self.entries
            .last()
            .and_then(|entry| entry.handle.end_with_trailer())
            .unwrap_or(0)
    }

    fn find(&self, target: &[u8]) -> usize {
        let target_prefix = InlinePrefix::of_internal_key(target);
        let word = target_prefix.leading_word();
        // Keys order as their leading words where those differ: every entry with a smaller
        // word is below the target, every one with a larger word above it, so only the run
        // sharing the target's word needs the entries' prefixes and keys.
        let start = self.leading_words.partition_point(|w| *w < word);
        let run_len_entries = run_len(&self.leading_words[start..], word);
        debug_assert_eq!(self.leading_words.len(), self.entries.len());
        start
            + self.entries[start..start + run_len_entries].partition_point(|entry| {
                entry.prefix.cmp(&target_prefix).then_with(|| {
                    shoal_compaction::compare_internal(&self.keys[entry.key_range()], target)
                }) == Ordering::Less
            })
    }
}

#[cfg(test)]
mod tests {
    use super::run_len;

    #[test]
    fn run_len_counts_the_leading_run_of_every_length() {
        for len in 0..70 {
            for run in 0..=len {
                let words: Vec<u64> = (0..len).map(|i| if i < run { 5 } else { 9 }).collect();
                assert_eq!(run_len(&words, 5), run, "run {run} of {len}");
                // A word below or above the array's starts no run.
                assert_eq!(run_len(&words, 4), 0);
            }
        }
    }
}
