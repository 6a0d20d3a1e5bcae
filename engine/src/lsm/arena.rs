//! Where memtable entries keep their bytes: bump-allocated in chunks, and the chunks of
//! flushed memtables recycled for new ones.
//!
//! Why not one heap allocation per entry: a memtable lives for a few seconds under load and
//! is then freed all at once on the flush thread. A general-purpose allocator returns that
//! memory to the OS soon after (mimalloc purges freed pages), so the next memtable's inserts
//! page-fault fresh zeroed pages on the write path: profiles of one unpaced writer showed
//! `clear_page` under `MemtableEntry::new` at ~8% of the writer's time, and `free` of each
//! entry at ~4% of the flusher's. Here an entry's bytes are a slice of a chunk; a memtable
//! owns its chunks only through its entries (each holds an `Arc` of its chunk), and when the
//! last entry of a full-size chunk goes, the chunk's buffer returns to a bounded pool that the
//! next memtable draws from, its pages still mapped. RocksDB's memtable arena exists for the
//! same reasons.
//!
//! Sizes: a memtable's first chunk is small ([`FIRST_CHUNK_BYTES`]) so the many near-empty
//! memtables of idle trees cost little; later chunks are [`CHUNK_BYTES`]; an entry larger
//! than [`DEDICATED_ENTRY_BYTES_MIN`] gets a chunk of its own so it wastes no chunk tail.

use std::ptr::NonNull;
use std::sync::Arc;

use parking_lot::Mutex;

/// A memtable's first chunk.
pub const FIRST_CHUNK_BYTES: usize = 64 << 10;
/// Every later chunk, and the only size the pool keeps.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Entries at least this large get a dedicated chunk.
pub const DEDICATED_ENTRY_BYTES_MIN: usize = CHUNK_BYTES / 4;
/// Most chunk buffers the pool keeps (128 MiB): two default-sized memtables' worth, enough
/// for the next memtables of a busy tree while the last ones flush. Beyond it, freed chunks
/// go back to the allocator.
const POOL_CHUNKS_MAX: usize = 128;

/// Idle chunk buffers of exactly `CHUNK_BYTES`, shared by every database in the process (like
/// an allocator's cache, which it is).
static POOL: Mutex<Vec<Box<[u8]>>> = Mutex::new(Vec::new());

fn pooled_buffer() -> Box<[u8]> {
    match POOL.lock().pop() {
        Some(buffer) => buffer,
        None => vec![0u8; CHUNK_BYTES].into_boxed_slice(),
    }
}

/// A buffer that entries' bytes are carved from. Each byte range is handed out once, written
/// once by [`Arena::alloc`] before anyone can see it, and only read afterwards.
struct Chunk {
    /// A leaked `Box<[u8]>`, turned back into it on drop. Only ever accessed through raw
    /// pointers to disjoint ranges, never as one slice.
    buffer: NonNull<[u8]>,
}

// SAFETY: a chunk is a plain heap buffer. Concurrent access is to disjoint ranges while they
// are written (each range by the one `alloc` call that reserved it, under the arena's lock)
// and shared reads of ranges after their `EntryBytes` exists; nothing writes a range that
// has been handed out.
unsafe impl Send for Chunk {}
// SAFETY: as for Send.
unsafe impl Sync for Chunk {}

impl Chunk {
    fn new(buffer: Box<[u8]>) -> Arc<Chunk> {
        Arc::new(Chunk {
            buffer: NonNull::from(Box::leak(buffer)),
        })
    }

    fn len_bytes(&self) -> usize {
        self.buffer.len()
    }

    fn start(&self) -> *mut u8 {
        self.buffer.as_ptr().cast::<u8>()
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: `buffer` came from `Box::leak` in `Chunk::new` and this is the only place
        // that rebuilds the box; every `EntryBytes` borrowing the chunk held an Arc of it,
        // so none is left.
        let buffer = unsafe { Box::from_raw(self.buffer.as_ptr()) };
        if buffer.len() == CHUNK_BYTES {
            let mut pool = POOL.lock();
            if pool.len() < POOL_CHUNKS_MAX {
                pool.push(buffer);
            }
        }
    }
}

/// One entry's bytes: a range of a chunk, kept alive by the entry.
pub struct EntryBytes {
    chunk: Arc<Chunk>,
    /// u32 to keep memtable entries small: chunks are 1 MiB, and a dedicated chunk holds one
    /// entry, whose key and value are capped far below 4 GiB (`batch::KEY_BYTES_MAX`,
    /// `batch::VALUE_BYTES_MAX`).
    offset: u32,
    len_bytes: u32,
}

impl EntryBytes {
    pub fn as_slice(&self) -> &[u8] {
        debug_assert!(self.offset as usize + self.len_bytes as usize <= self.chunk.len_bytes());
        // SAFETY: the range lies inside the chunk (checked when reserved), was fully written
        // before this value was created, and is never written again; the Arc keeps the
        // buffer alive for the borrow.
        unsafe {
            std::slice::from_raw_parts(
                self.chunk.start().add(self.offset as usize),
                self.len_bytes as usize,
            )
        }
    }

    pub fn len(&self) -> usize {
        self.len_bytes as usize
    }
}

/// The bump allocator of one memtable.
pub struct Arena {
    state: Mutex<ArenaState>,
}

struct ArenaState {
    current: Option<Arc<Chunk>>,
    /// Bytes of `current` already handed out.
    used_bytes: usize,
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

impl Arena {
    pub fn new() -> Arena {
        Arena {
            state: Mutex::new(ArenaState {
                current: None,
                used_bytes: 0,
            }),
        }
    }

    /// Reserves `len_bytes`, lets `fill` write all of them, and returns them.
    pub fn alloc(&self, len_bytes: usize, fill: impl FnOnce(&mut [u8])) -> EntryBytes {
        let mut state = self.state.lock();
        let (chunk, offset) = if len_bytes >= DEDICATED_ENTRY_BYTES_MIN {
            (Chunk::new(vec![0u8; len_bytes].into_boxed_slice()), 0)
        } else {
            let ArenaState {
                current,
                used_bytes,
            } = &mut *state;
            let is_first = current.is_none();
            let chunk = match current
                .take()
                .filter(|chunk| chunk.len_bytes() - *used_bytes >= len_bytes)
            {
                Some(chunk) => current.insert(chunk),
                None => {
                    *used_bytes = 0;
                    let buffer = if is_first && len_bytes <= FIRST_CHUNK_BYTES {
                        vec![0u8; FIRST_CHUNK_BYTES].into_boxed_slice()
                    } else {
                        pooled_buffer()
                    };
                    current.insert(Chunk::new(buffer))
                }
            };
            let offset = *used_bytes;
            *used_bytes += len_bytes;
            (Arc::clone(chunk), offset)
        };
        assert!(
            offset + len_bytes <= chunk.len_bytes() && chunk.len_bytes() <= u32::MAX as usize,
            "arena range past its chunk"
        );
        // SAFETY: [offset, offset + len_bytes) is inside the chunk (asserted) and was never
        // handed out before (`used_bytes` only grows, under the lock we hold; a dedicated
        // chunk is new), so no other reference to these bytes exists.
        let region =
            unsafe { std::slice::from_raw_parts_mut(chunk.start().add(offset), len_bytes) };
        fill(region);
        EntryBytes {
            chunk,
            // Both below the chunk's length, which fits u32 (asserted).
            offset: offset as u32,
            len_bytes: len_bytes as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(arena: &Arena, len: usize, byte: u8) -> EntryBytes {
        arena.alloc(len, |region| region.fill(byte))
    }

    #[test]
    fn entries_keep_their_bytes_across_chunks_and_sizes() {
        let arena = Arena::new();
        let mut entries = Vec::new();
        // Crosses the first chunk, several full chunks, and dedicated ones.
        for i in 0..5_000usize {
            let len = match i % 7 {
                0 => DEDICATED_ENTRY_BYTES_MIN + i,
                1 => 0,
                _ => 1 + (i * 37) % 3_000,
            };
            entries.push((len, i as u8, bytes(&arena, len, i as u8)));
        }
        for (len, byte, entry) in &entries {
            assert_eq!(entry.len(), *len);
            assert!(entry.as_slice().iter().all(|b| b == byte));
        }
    }

    #[test]
    fn a_first_entry_larger_than_the_first_chunk_fits() {
        for len in [
            FIRST_CHUNK_BYTES,
            FIRST_CHUNK_BYTES + 1,
            DEDICATED_ENTRY_BYTES_MIN - 1,
        ] {
            let arena = Arena::new();
            assert_eq!(bytes(&arena, len, 3).as_slice(), vec![3u8; len]);
            assert_eq!(bytes(&arena, 10, 4).as_slice(), &[4u8; 10][..]);
        }
    }

    #[test]
    fn entries_outlive_their_arena() {
        let entry = {
            let arena = Arena::new();
            bytes(&arena, 100, 7)
        };
        assert_eq!(entry.as_slice(), &[7u8; 100][..]);
    }

    #[test]
    fn concurrent_allocations_do_not_overlap() {
        let arena = Arena::new();
        let results: Vec<Vec<EntryBytes>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4u8)
                .map(|t| {
                    let arena = &arena;
                    scope.spawn(move || (0..2_000).map(|_| bytes(arena, 333, t)).collect())
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        assert_eq!(results.len(), 4);
        for (t, entries) in results.iter().enumerate() {
            assert!(entries
                .iter()
                .all(|e| e.as_slice().iter().all(|&b| b == t as u8)));
        }
    }
}
