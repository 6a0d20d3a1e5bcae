//! Writes a table: data blocks as entries arrive, then filter, properties, index, footer.

use std::cmp::Ordering;

use shoal_compaction::key::{EntryKind, InternalKey};
use shoal_vfs::WritableFile;

use super::block_builder::BlockBuilder;
use super::bloom;
use super::format::{
    append_block_trailer, put_varint, BlockHandle, BlockKind, Footer, FORMAT_VERSION,
};
use super::properties::TableProperties;
use super::{
    SstError, TableOptions, BLOCK_SIZE_MAX_BYTES, BLOOM_BITS_PER_KEY_MAX, KEY_LEN_MAX_BYTES,
    VALUE_LEN_MAX_BYTES,
};
use crate::buffer_pool::BufferPool;

/// Index blocks are decoded whole at open, so their restart interval only trades size
/// against the cost of that one decode.
const INDEX_RESTART_INTERVAL: usize = 16;

/// Finished blocks reach the file in writes of about this size rather than one write per
/// block: flushing a 64 MiB memtable was 16,000 writes of 4 KiB, and the per-call cost of
/// the kernel's write path showed in profiles of the flush thread. Nothing reads a table
/// before `finish` has written and synced all of it, so when the bytes reach the file does
/// not matter.
const WRITE_CHUNK_BYTES: usize = 256 << 10;

/// The buffers a table build grows to the table's size (filter hashes, the index block, the
/// pending writes that the filter and index go through), kept for the next build instead of
/// freed: see [`BufferPool`] for why. A 64 MiB flush of small entries grows them to a few
/// MiB, doubling as it goes; a profile of the flush thread had 19% of its time in that
/// growth and the fresh-page faults under it.
struct BuildBuffers {
    unwritten: Vec<u8>,
    prefix_hashes: Vec<u64>,
    key_hashes: Vec<u64>,
    index_block: BlockBuilder,
}

impl BuildBuffers {
    fn new() -> BuildBuffers {
        BuildBuffers {
            unwritten: Vec::with_capacity(WRITE_CHUNK_BYTES + BLOCK_SIZE_MAX_BYTES),
            prefix_hashes: Vec::new(),
            key_hashes: Vec::new(),
            index_block: BlockBuilder::new(INDEX_RESTART_INTERVAL, usize::MAX),
        }
    }

    fn capacity_bytes(&self) -> usize {
        self.unwritten.capacity()
            + 8 * (self.prefix_hashes.capacity() + self.key_hashes.capacity())
            + self.index_block.capacity_bytes()
    }
}

/// Idle sets kept: one per table built at once is enough (the flusher, compaction threads).
const BUILD_BUFFERS_IDLE_MAX: usize = 4;
/// A set holding more than this (a build of a very large table) is freed, not kept.
const BUILD_BUFFERS_RETAINED_BYTES_MAX: usize = 32 << 20;

static BUILD_BUFFERS: BufferPool<BuildBuffers> = BufferPool::new(BUILD_BUFFERS_IDLE_MAX);

/// Writes one table from entries in increasing internal-key order.
///
/// After any error the file is incomplete: drop the builder and delete the file.
pub struct TableBuilder {
    output: TableOutput,
    options: TableOptions,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    /// Hashes of the distinct consecutive prefixes seen, for the filter.
    prefix_hashes: Vec<u64>,
    /// Hashes of the distinct consecutive user keys that are not their own prefix, for the
    /// filter too (format version 2).
    key_hashes: Vec<u64>,
    properties: TableProperties,
}

/// Where finished blocks go: apart from the builder's other state, so a block can be filled
/// straight from a builder field (`output.write_block(kind, |out| self.index_block...)`).
struct TableOutput {
    file: Box<dyn WritableFile>,
    /// Finished blocks (with trailers) not yet written to the file.
    unwritten: Vec<u8>,
    /// Bytes of the table produced so far, written or not (the next block's offset).
    offset: u64,
    /// A write failed: the file is incomplete.
    failed: bool,
}

impl TableBuilder {
    pub fn new(file: Box<dyn WritableFile>, options: TableOptions) -> TableBuilder {
        let options = TableOptions {
            block_size_bytes: options.block_size_bytes.clamp(1, BLOCK_SIZE_MAX_BYTES),
            restart_interval: options.restart_interval.max(1),
            restart_span_bytes: options.restart_span_bytes,
            bloom_bits_per_key: options.bloom_bits_per_key.min(BLOOM_BITS_PER_KEY_MAX),
            prefix: options.prefix,
        };
        // Block offsets are absolute, and a reader expects the first block at offset 0.
        debug_assert_eq!(
            file.position(),
            0,
            "a table must start at the start of its file"
        );
        let offset = file.position();
        let buffers = BUILD_BUFFERS.take().unwrap_or_else(BuildBuffers::new);
        debug_assert!(buffers.unwritten.is_empty() && buffers.index_block.is_empty());
        TableBuilder {
            output: TableOutput {
                file,
                unwritten: buffers.unwritten,
                offset,
                failed: false,
            },
            data_block: BlockBuilder::new(options.restart_interval, options.restart_span_bytes),
            index_block: buffers.index_block,
            options,
            prefix_hashes: buffers.prefix_hashes,
            key_hashes: buffers.key_hashes,
            properties: TableProperties::default(),
        }
    }

    /// Adds an entry. Keys must arrive in strictly increasing internal order: a key out of
    /// order panics, because it would make the file unreadable.
    pub fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<(), SstError> {
        if self.output.failed {
            return Err(SstError::BuilderFailed);
        }
        if internal_key.len() > KEY_LEN_MAX_BYTES || value.len() > VALUE_LEN_MAX_BYTES {
            return Err(SstError::EntryTooLarge {
                key_len: internal_key.len(),
                value_len: value.len(),
            });
        }
        let parsed = InternalKey::parse(internal_key).ok_or(SstError::InvalidKey {
            len: internal_key.len(),
        })?;
        if self.properties.entries > 0 {
            assert!(
                shoal_compaction::compare_internal(&self.properties.largest_key, internal_key)
                    == Ordering::Less,
                "sstable keys added out of order"
            );
        }
        self.record_properties(internal_key, &parsed, value);
        let prefix = (self.options.prefix)(parsed.user_key);
        let hash = bloom::hash64(prefix);
        if self.prefix_hashes.last() != Some(&hash) {
            self.prefix_hashes.push(hash);
        }
        // A key that is its own prefix is already in the filter under the prefix's hash.
        if prefix.len() != parsed.user_key.len() {
            let hash = bloom::hash64(parsed.user_key);
            if self.key_hashes.last() != Some(&hash) {
                self.key_hashes.push(hash);
            }
        }
        self.data_block.add(internal_key, value);
        if self.data_block.size_estimate_bytes() >= self.options.block_size_bytes {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// The file size if finished now (approximate: filter and index are estimated).
    pub fn estimated_size_bytes(&self) -> u64 {
        let filter_bytes = (self.prefix_hashes.len() + self.key_hashes.len())
            * self.options.bloom_bits_per_key
            / 8;
        let pending = self.data_block.size_estimate_bytes()
            + self.index_block.size_estimate_bytes()
            + filter_bytes
            + self.properties.smallest_key.len()
            + self.properties.largest_key.len();
        self.output.offset + pending as u64
    }

    pub fn entry_count(&self) -> u64 {
        self.properties.entries
    }

    /// Writes the last data block, filter, properties, index and footer, then syncs the
    /// file's data. The caller syncs the directory.
    pub fn finish(mut self) -> Result<TableProperties, SstError> {
        if self.output.failed {
            return Err(SstError::BuilderFailed);
        }
        if !self.data_block.is_empty() {
            self.flush_data_block()?;
        }
        let filter_handle = self.output.write_block(BlockKind::Filter, |out| {
            let hash_lists: [&[u64]; 2] = [&self.prefix_hashes, &self.key_hashes];
            bloom::append_filter(&hash_lists, self.options.bloom_bits_per_key, out)
        })?;
        let properties_handle = self.output.write_block(BlockKind::Properties, |out| {
            self.properties.encode_into(out)
        })?;
        let index_handle = self
            .output
            .write_block(BlockKind::Index, |out| self.index_block.finish_into(out))?;

        let footer = Footer {
            filter: filter_handle,
            properties: properties_handle,
            index: index_handle,
            version: FORMAT_VERSION,
        };
        let footer = footer.encode();
        self.output.unwritten.extend_from_slice(&footer);
        self.output.offset += footer.len() as u64;
        self.output.write_unwritten()?;
        self.output.file.sync_data()?;
        Ok(TableProperties {
            size_bytes: self.output.offset,
            ..self.properties.clone()
        })
    }

    fn record_properties(&mut self, internal_key: &[u8], parsed: &InternalKey, value: &[u8]) {
        let properties = &mut self.properties;
        if properties.entries == 0 {
            properties.smallest_key = internal_key.to_vec();
            properties.seq_min = parsed.seq;
            properties.seq_max = parsed.seq;
        }
        properties.entries += 1;
        if parsed.kind == EntryKind::Delete {
            properties.tombstones += 1;
        }
        properties.seq_min = properties.seq_min.min(parsed.seq);
        properties.seq_max = properties.seq_max.max(parsed.seq);
        properties.raw_key_bytes += internal_key.len() as u64;
        properties.raw_value_bytes += value.len() as u64;
        properties.largest_key.clear();
        properties.largest_key.extend_from_slice(internal_key);
    }

    fn flush_data_block(&mut self) -> Result<(), SstError> {
        debug_assert!(!self.data_block.is_empty(), "flushing an empty data block");
        // The index key is the block's last key: the largest key the block can answer for.
        let last_key = &self.properties.largest_key;
        debug_assert_eq!(self.data_block.last_key(), &last_key[..]);
        debug_assert!(self.data_block.entry_count() > 0);
        let handle = self
            .output
            .write_block(BlockKind::Data, |out| self.data_block.finish_into(out))?;
        let mut encoded_handle = Vec::with_capacity(20);
        put_varint(&mut encoded_handle, handle.offset);
        put_varint(&mut encoded_handle, handle.size);
        self.index_block.add(last_key, &encoded_handle);
        self.properties.data_blocks += 1;
        Ok(())
    }
}

impl TableOutput {
    /// Adds one block (contents produced by `fill`, then its trailer) to the table; it is
    /// written with the next chunk.
    fn write_block(
        &mut self,
        kind: BlockKind,
        fill: impl FnOnce(&mut Vec<u8>),
    ) -> Result<BlockHandle, SstError> {
        let start = self.unwritten.len();
        fill(&mut self.unwritten);
        let handle = BlockHandle {
            offset: self.offset,
            size: (self.unwritten.len() - start) as u64,
        };
        append_block_trailer(&mut self.unwritten, start, kind);
        self.offset += (self.unwritten.len() - start) as u64;
        if self.unwritten.len() >= WRITE_CHUNK_BYTES {
            self.write_unwritten()?;
        }
        Ok(handle)
    }

    fn write_unwritten(&mut self) -> Result<(), SstError> {
        if let Err(error) = self.file.write_all(&self.unwritten) {
            self.failed = true;
            return Err(error.into());
        }
        self.unwritten.clear();
        debug_assert_eq!(self.file.position(), self.offset);
        Ok(())
    }
}

impl Drop for TableBuilder {
    /// Hands the build's buffers, emptied, to the next build.
    fn drop(&mut self) {
        let mut buffers = BuildBuffers {
            unwritten: std::mem::take(&mut self.output.unwritten),
            prefix_hashes: std::mem::take(&mut self.prefix_hashes),
            key_hashes: std::mem::take(&mut self.key_hashes),
            index_block: std::mem::replace(&mut self.index_block, BlockBuilder::new(1, usize::MAX)),
        };
        if buffers.capacity_bytes() > BUILD_BUFFERS_RETAINED_BYTES_MAX {
            return;
        }
        buffers.unwritten.clear();
        buffers.prefix_hashes.clear();
        buffers.key_hashes.clear();
        buffers.index_block.clear();
        BUILD_BUFFERS.give(buffers);
    }
}
