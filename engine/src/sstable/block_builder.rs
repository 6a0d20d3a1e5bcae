//! Builds one prefix-compressed block (the layout shared by data and index blocks).

use super::format::put_varint;

/// Accumulates sorted entries into a block's contents.
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// A restart point also starts once the entries since the last one hold this many
    /// bytes (see `TableOptions::restart_span_bytes`).
    restart_span_bytes: usize,
    entry_count: usize,
    /// Entries since the last restart point; starts "full" so the first entry restarts.
    entries_since_restart: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    pub fn new(restart_interval: usize, restart_span_bytes: usize) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            restart_interval: restart_interval.max(1),
            restart_span_bytes,
            entry_count: 0,
            entries_since_restart: restart_interval.max(1),
            last_key: Vec::new(),
        }
    }

    /// Appends an entry. The caller guarantees keys arrive in increasing order and that the
    /// block stays under 4 GiB (offsets are u32).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let span_bytes = self.buf.len() - self.restarts.last().map_or(0, |r| *r as usize);
        let shared = if self.entries_since_restart == self.restart_interval
            || span_bytes >= self.restart_span_bytes
        {
            self.restarts.push(self.buf.len() as u32);
            self.entries_since_restart = 0;
            0
        } else {
            common_prefix_len(&self.last_key, key)
        };
        self.entries_since_restart += 1;
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (key.len() - shared) as u64);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.entry_count += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.entry_count == 0
    }

    pub fn entry_count(&self) -> usize {
        self.entry_count
    }

    /// The last key added (empty if none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// The size the contents would have if finished now.
    pub fn size_estimate_bytes(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Appends the finished contents to `out` and resets the builder for the next block.
    pub fn finish_into(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.buf);
        for restart in &self.restarts {
            out.extend_from_slice(&restart.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.clear();
    }

    /// Drops every entry, keeping the buffers' capacity.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.entry_count = 0;
        self.entries_since_restart = self.restart_interval;
        self.last_key.clear();
    }

    /// Bytes the builder's buffers hold allocated.
    pub fn capacity_bytes(&self) -> usize {
        self.buf.capacity() + 4 * self.restarts.capacity() + self.last_key.capacity()
    }
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
