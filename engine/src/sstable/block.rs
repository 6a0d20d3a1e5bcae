//! Reads one prefix-compressed block: a cursor that seeks and steps both ways.
//!
//! The cursor does not borrow the block: every call is handed the block's contents again.
//! That lets an iterator own both the file (through an `Arc`) and a cursor without a
//! self-referential struct, and lets one key buffer be reused across blocks.
//!
//! Every offset and length read from the block is bounds-checked; a block that does not
//! decode yields a [`DecodeError`] (offset relative to the block) and never a panic.

use std::cmp::Ordering;

use shoal_compaction::key::TRAILER_LEN;

use super::format::{get_varint, read_u32, DecodeError};

/// Where a block's entries end and how many restart points it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlockLayout {
    entries_end: usize,
    restart_count: usize,
}

impl BlockLayout {
    pub fn parse(block: &[u8]) -> Result<BlockLayout, DecodeError> {
        let count_pos = block
            .len()
            .checked_sub(4)
            .ok_or(DecodeError::at(0, "block shorter than its restart count"))?;
        let restart_count = read_u32(block, count_pos).ok_or(DecodeError::at(
            count_pos,
            "block shorter than its restart count",
        ))? as usize;
        let entries_end = restart_count
            .checked_mul(4)
            .and_then(|restarts_len| count_pos.checked_sub(restarts_len))
            .ok_or(DecodeError::at(
                count_pos,
                "restart count exceeds the block",
            ))?;
        if restart_count == 0 && entries_end != 0 {
            return Err(DecodeError::at(count_pos, "entries without restart points"));
        }
        Ok(BlockLayout {
            entries_end,
            restart_count,
        })
    }

    /// Loads the first byte of each restart entry of a block with few of them, so that their
    /// cache misses overlap: a binary search learns each probe's address only from the
    /// compare before it, so the misses of the entries it visits would otherwise follow one
    /// another.
    #[inline]
    fn warm_restart_entries(&self, block: &[u8]) {
        if self.restart_count > WARMED_RESTARTS_MAX {
            return;
        }
        for index in 0..self.restart_count {
            if let Some(offset) = read_u32(block, self.entries_end + 4 * index) {
                std::hint::black_box(block.get(offset as usize).copied());
            }
        }
    }

    /// Decodes the header of the entry at `offset`, whose previous key is
    /// `previous_key_len` bytes long, checking that it fits the entries.
    #[inline]
    fn entry_header(
        &self,
        block: &[u8],
        offset: usize,
        previous_key_len: usize,
    ) -> Result<EntryHeader, DecodeError> {
        let entries = &block[..self.entries_end];
        let mut pos = offset;
        let truncated = DecodeError::at(offset, "entry header truncated");
        let shared = get_varint(entries, &mut pos).ok_or(truncated)?;
        let unshared = get_varint(entries, &mut pos).ok_or(truncated)?;
        let value_len = get_varint(entries, &mut pos).ok_or(truncated)?;
        if shared > previous_key_len as u64 {
            return Err(DecodeError::at(
                offset,
                "entry shares more than the previous key",
            ));
        }
        let remaining = (entries.len() - pos) as u64;
        if unshared > remaining || value_len > remaining - unshared {
            return Err(DecodeError::at(offset, "entry runs past the block"));
        }
        let key_end = pos + unshared as usize;
        Ok(EntryHeader {
            shared: shared as usize,
            unshared_start: pos,
            key_end,
            value_end: key_end + value_len as usize,
        })
    }

    /// The key of restart entry `index`, read in place: a restart shares nothing with the
    /// key before it, so its key lies whole in the block.
    fn restart_key<'b>(&self, block: &'b [u8], index: usize) -> Result<&'b [u8], DecodeError> {
        let offset = self.restart_offset(block, index)?;
        let header = self.entry_header(block, offset, 0)?;
        let key = &block[header.unshared_start..header.key_end];
        if !is_internal_key(key) {
            return Err(DecodeError::at(offset, "entry key is not an internal key"));
        }
        Ok(key)
    }

    fn restart_offset(&self, block: &[u8], index: usize) -> Result<usize, DecodeError> {
        let pos = self.entries_end + 4 * index;
        let offset = read_u32(block, pos)
            .ok_or(DecodeError::at(pos, "restart index out of range"))?
            as usize;
        if offset >= self.entries_end {
            return Err(DecodeError::at(pos, "restart point outside the entries"));
        }
        Ok(offset)
    }
}

/// Blocks with at most this many restart points have every restart entry loaded before a
/// seek's binary search (`BlockLayout::warm_restart_entries`); a 4 KiB data block of
/// entries of `TableOptions::restart_span_bytes` or more has about four.
const WARMED_RESTARTS_MAX: usize = 8;

/// Where an entry's parts lie in its block.
struct EntryHeader {
    /// Bytes of the key shared with the previous key.
    shared: usize,
    /// Where the rest of the key starts; it ends at `key_end`, where the value starts.
    unshared_start: usize,
    key_end: usize,
    value_end: usize,
}

/// Whether `key` can be an internal key: long enough for its trailer, with a known kind.
fn is_internal_key(key: &[u8]) -> bool {
    key.len() >= TRAILER_LEN && key[key.len() - 1] <= 1
}

/// A position inside one block. Invalid until positioned.
#[derive(Debug, Default)]
pub(crate) struct BlockCursor {
    layout: BlockLayout,
    /// Offset of the current entry.
    current: usize,
    /// Offset just past the current entry.
    next: usize,
    /// The restart point at or before `current`.
    restart_index: usize,
    key: Vec<u8>,
    value_start: usize,
    value_end: usize,
    valid: bool,
}

impl BlockCursor {
    /// Points the cursor at a (new) block, invalid until positioned. Keeps the key buffer.
    pub fn reset(&mut self, layout: BlockLayout) {
        self.layout = layout;
        self.valid = false;
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (meaningful only while valid).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value's byte range within the block (meaningful only while valid).
    pub fn value_range(&self) -> (usize, usize) {
        (self.value_start, self.value_end)
    }

    pub fn seek_to_first(&mut self, block: &[u8]) -> Result<(), DecodeError> {
        if self.layout.restart_count == 0 {
            self.valid = false;
            return Ok(());
        }
        self.seek_to_restart(block, 0)
    }

    pub fn seek_to_last(&mut self, block: &[u8]) -> Result<(), DecodeError> {
        if self.layout.restart_count == 0 {
            self.valid = false;
            return Ok(());
        }
        self.seek_to_restart(block, self.layout.restart_count - 1)?;
        while self.next < self.layout.entries_end {
            self.decode_at(block, self.next)?;
        }
        Ok(())
    }

    /// Positions on the first entry whose key is >= `target` (internal order), or invalid
    /// if there is none in this block.
    pub fn seek(&mut self, block: &[u8], target: &[u8]) -> Result<(), DecodeError> {
        if self.layout.restart_count == 0 {
            self.valid = false;
            return Ok(());
        }
        self.valid = false;
        self.layout.warm_restart_entries(block);
        // Find the last restart point whose key is < target; the answer is at or after it.
        // The keys it compares are read in place, not copied into `self.key`.
        let (mut low, mut high) = (0, self.layout.restart_count - 1);
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            if compare(self.layout.restart_key(block, mid)?, target) == Ordering::Less {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        self.seek_to_restart(block, low)?;
        while compare(&self.key, target) == Ordering::Less {
            if !self.next(block)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Positions on the last entry whose key is <= `target`, or invalid if there is none in
    /// this block.
    pub fn seek_for_prev(&mut self, block: &[u8], target: &[u8]) -> Result<(), DecodeError> {
        self.seek(block, target)?;
        if !self.valid {
            return self.seek_to_last(block);
        }
        if compare(&self.key, target) == Ordering::Greater {
            self.prev(block)?;
        }
        Ok(())
    }

    /// Steps forward; returns whether the cursor is still on an entry.
    pub fn next(&mut self, block: &[u8]) -> Result<bool, DecodeError> {
        debug_assert!(self.valid, "next on an invalid block cursor");
        if self.next >= self.layout.entries_end {
            self.valid = false;
            return Ok(false);
        }
        self.decode_at(block, self.next)?;
        Ok(true)
    }

    /// Steps backward by decoding forward from the restart point before the current entry;
    /// returns whether the cursor is still on an entry.
    pub fn prev(&mut self, block: &[u8]) -> Result<bool, DecodeError> {
        debug_assert!(self.valid, "prev on an invalid block cursor");
        let target = self.current;
        if target == 0 {
            self.valid = false;
            return Ok(false);
        }
        let mut restart = self.restart_index;
        while self.layout.restart_offset(block, restart)? >= target {
            restart = restart
                .checked_sub(1)
                .ok_or(DecodeError::at(target, "no restart point before an entry"))?;
        }
        self.seek_to_restart(block, restart)?;
        while self.next < target {
            self.decode_at(block, self.next)?;
        }
        if self.next != target {
            return Err(DecodeError::at(target, "entries overlap"));
        }
        Ok(true)
    }

    fn seek_to_restart(&mut self, block: &[u8], index: usize) -> Result<(), DecodeError> {
        let offset = self.layout.restart_offset(block, index)?;
        self.key.clear();
        self.restart_index = index;
        self.decode_at(block, offset)
    }

    /// Decodes the entry at `offset`, whose key shares a prefix with `self.key`.
    #[inline]
    fn decode_at(&mut self, block: &[u8], offset: usize) -> Result<(), DecodeError> {
        self.valid = false;
        let header = self.layout.entry_header(block, offset, self.key.len())?;
        self.key.truncate(header.shared);
        self.key
            .extend_from_slice(&block[header.unshared_start..header.key_end]);
        if !is_internal_key(&self.key) {
            return Err(DecodeError::at(offset, "entry key is not an internal key"));
        }
        self.current = offset;
        self.value_start = header.key_end;
        self.value_end = header.value_end;
        self.next = self.value_end;
        while self.restart_index + 1 < self.layout.restart_count
            && self.layout.restart_offset(block, self.restart_index + 1)? <= offset
        {
            self.restart_index += 1;
        }
        self.valid = true;
        Ok(())
    }
}

#[inline]
fn compare(a: &[u8], b: &[u8]) -> Ordering {
    shoal_compaction::compare_internal(a, b)
}

#[cfg(test)]
mod tests {
    use super::super::block_builder::BlockBuilder;
    use super::*;
    use rand::{Rng, SeedableRng};
    use shoal_compaction::key::{encode, EntryKind};

    fn build(entries: &[(Vec<u8>, Vec<u8>)], restart_interval: usize) -> Vec<u8> {
        build_spanned(entries, restart_interval, usize::MAX)
    }

    fn build_spanned(
        entries: &[(Vec<u8>, Vec<u8>)],
        restart_interval: usize,
        restart_span_bytes: usize,
    ) -> Vec<u8> {
        let mut builder = BlockBuilder::new(restart_interval, restart_span_bytes);
        for (k, v) in entries {
            builder.add(k, v);
        }
        let mut out = Vec::new();
        builder.finish_into(&mut out);
        out
    }

    fn random_entries(rng: &mut impl Rng, count: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut keys: Vec<Vec<u8>> = (0..count)
            .map(|_| {
                let user_len = rng.random_range(0..12);
                let user: Vec<u8> = (0..user_len)
                    .map(|_| rng.random_range(b'a'..=b'd'))
                    .collect();
                let kind = if rng.random_bool(0.2) {
                    EntryKind::Delete
                } else {
                    EntryKind::Put
                };
                encode(&user, rng.random_range(1..1000), kind)
            })
            .collect();
        keys.sort_by(|a, b| shoal_compaction::compare_internal(a, b));
        keys.dedup_by(|a, b| shoal_compaction::compare_internal(a, b) == Ordering::Equal);
        keys.into_iter()
            .map(|k| {
                let value = vec![k.len() as u8; rng.random_range(0..20)];
                (k, value)
            })
            .collect()
    }

    fn current(cursor: &BlockCursor, block: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let (start, end) = cursor.value_range();
        (cursor.key().to_vec(), block[start..end].to_vec())
    }

    #[test]
    fn reads_back_forward_backward_and_seeks() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        // Restarts by count alone, then also by size (every entry, runs of ~2 and ~4
        // entries); the few restarts of the small blocks are loaded before a seek.
        let shapes = [(0, 1), (1, 16), (2, 1), (50, 1), (200, 3), (300, 16)]
            .into_iter()
            .map(|(count, interval)| (count, interval, usize::MAX))
            .chain([(40, 16, 0), (60, 16, 40), (120, 16, 80), (7, 16, 30)]);
        for (count, interval, span) in shapes {
            let entries = random_entries(&mut rng, count);
            let block = build_spanned(&entries, interval, span);
            let mut cursor = BlockCursor::default();
            cursor.reset(BlockLayout::parse(&block).unwrap());

            let mut forward = Vec::new();
            cursor.seek_to_first(&block).unwrap();
            while cursor.valid() {
                forward.push(current(&cursor, &block));
                cursor.next(&block).unwrap();
            }
            assert_eq!(forward, entries);

            let mut backward = Vec::new();
            cursor.seek_to_last(&block).unwrap();
            while cursor.valid() {
                backward.push(current(&cursor, &block));
                cursor.prev(&block).unwrap();
            }
            backward.reverse();
            assert_eq!(backward, entries);

            // Seek to every existing key and to keys between them.
            for _ in 0..100 {
                let user: Vec<u8> = (0..rng.random_range(0..12))
                    .map(|_| rng.random_range(b'a'..=b'd'))
                    .collect();
                let target = encode(&user, rng.random_range(0..1001), EntryKind::Put);
                check_seeks(&mut cursor, &block, &entries, &target);
            }
            for (key, _) in &entries {
                check_seeks(&mut cursor, &block, &entries, key);
            }
        }
    }

    fn check_seeks(
        cursor: &mut BlockCursor,
        block: &[u8],
        entries: &[(Vec<u8>, Vec<u8>)],
        target: &[u8],
    ) {
        let at_or_after = entries
            .iter()
            .position(|(k, _)| compare(k, target) != Ordering::Less);
        cursor.seek(block, target).unwrap();
        match at_or_after {
            Some(i) => assert_eq!(current(cursor, block), entries[i]),
            None => assert!(!cursor.valid()),
        }
        let at_or_before = entries
            .iter()
            .rposition(|(k, _)| compare(k, target) != Ordering::Greater);
        cursor.seek_for_prev(block, target).unwrap();
        match at_or_before {
            Some(i) => {
                assert_eq!(current(cursor, block), entries[i]);
                // Stepping back from a seek lands on the entry before.
                cursor.prev(block).unwrap();
                match i.checked_sub(1) {
                    Some(j) => assert_eq!(current(cursor, block), entries[j]),
                    None => assert!(!cursor.valid()),
                }
            }
            None => assert!(!cursor.valid()),
        }
    }

    #[test]
    fn prefix_compression_shrinks_the_block() {
        let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..100u32)
            .map(|i| {
                let user = format!("collection-0001/item-{i:05}");
                (encode(user.as_bytes(), 5, EntryKind::Put), b"v".to_vec())
            })
            .collect();
        let raw_bytes: usize = entries.iter().map(|(k, v)| k.len() + v.len()).sum();
        let uncompressed = build(&entries, 1).len();
        let compressed = build(&entries, 16).len();
        // Keys are 35 bytes and share ~30 with their neighbour.
        assert!(
            compressed * 2 < uncompressed,
            "{compressed} vs {uncompressed}"
        );
        assert!(
            compressed * 2 < raw_bytes,
            "{compressed} vs raw {raw_bytes}"
        );
    }

    fn restart_count(block: &[u8]) -> usize {
        BlockLayout::parse(block).unwrap().restart_count
    }

    #[test]
    fn large_entries_each_restart_and_small_ones_share_prefixes() {
        let entries = |value_len: usize| -> Vec<(Vec<u8>, Vec<u8>)> {
            (0..32u32)
                .map(|i| {
                    let user = format!("collection-0001/item-{i:05}");
                    let key = encode(user.as_bytes(), 5, EntryKind::Put);
                    (key, vec![7; value_len])
                })
                .collect()
        };
        // Entries past the span each start a restart, whatever the count interval.
        assert_eq!(restart_count(&build_spanned(&entries(600), 16, 512)), 32);
        assert_eq!(restart_count(&build(&entries(600), 16)), 2);
        // Small ones keep sharing key prefixes until their run reaches the span: a run's
        // first entry is 79 bytes, the rest 49 (6 of their 36 key bytes unshared), so the
        // 11th entry of a run restarts.
        assert_eq!(restart_count(&build_spanned(&entries(40), 16, 512)), 4);
        assert_eq!(restart_count(&build(&entries(40), 16)), 2);
        // ... and under 16 entries of 20 bytes stay one run of the count interval.
        assert_eq!(
            restart_count(&build_spanned(&entries(20)[..16], 16, 512)),
            1
        );
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let entries = random_entries(&mut rng, 60);
        let good = build(&entries, 4);
        let target = encode(b"bb", 500, EntryKind::Put);
        for _ in 0..2000 {
            let mut block = good.clone();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..block.len());
                block[i] = rng.random();
            }
            block.truncate(rng.random_range(0..=block.len()));
            let Ok(layout) = BlockLayout::parse(&block) else {
                continue;
            };
            let mut cursor = BlockCursor::default();
            cursor.reset(layout);
            // Walk as far as the bytes allow, both ways; errors are fine, panics are not.
            let mut steps = 0;
            if cursor.seek_to_first(&block).is_ok() {
                while cursor.valid() && steps < 1000 && cursor.next(&block).is_ok() {
                    steps += 1;
                }
            }
            if cursor.seek_to_last(&block).is_ok() {
                while cursor.valid() && steps < 2000 && cursor.prev(&block).is_ok() {
                    steps += 1;
                }
            }
            let _ = cursor.seek(&block, &target);
            let _ = cursor.seek_for_prev(&block, &target);
        }
    }
}
