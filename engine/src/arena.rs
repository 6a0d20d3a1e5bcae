//! Where a memtable keeps its skiplist nodes (each node holds its entry's key and value):
//! bump-allocated in chunks the memtable owns, and the chunks of dropped memtables recycled
//! for new ones.
//!
//! Why not one heap allocation per entry: a memtable lives for a few seconds under load and
//! is then freed all at once on the flush thread. A general-purpose allocator returns that
//! memory to the OS soon after (mimalloc purges freed pages), so the next memtable's inserts
//! page-fault fresh zeroed pages on the write path: profiles of one unpaced writer showed
//! `clear_page` under the entry allocation at ~8% of the writer's time, `free` of each entry
//! at ~4% of the flusher's, and later the zeroed, aligned allocation of each crossbeam
//! skiplist node at 7.6% of the writer. Here a node is a slice of a chunk, allocated by moving
//! an offset; when the memtable drops, its full-size chunks return to a bounded pool that the
//! next memtable draws from, their pages still mapped. RocksDB's memtable arena exists for the
//! same reasons.
//!
//! Sizes: a memtable's first chunk is small ([`FIRST_CHUNK_BYTES`]) so the many near-empty
//! memtables of idle trees cost little; later chunks are [`CHUNK_BYTES`]; an allocation of
//! at least [`DEDICATED_ALLOC_BYTES_MIN`] gets a chunk of its own so it wastes no chunk tail.

use std::ptr::NonNull;

use parking_lot::Mutex;

use super::buffer_pool::BufferPool;

/// A memtable's first chunk.
pub const FIRST_CHUNK_BYTES: usize = 64 << 10;
/// Every later chunk, and the only size the pool keeps.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Allocations at least this large get a dedicated chunk.
pub const DEDICATED_ALLOC_BYTES_MIN: usize = CHUNK_BYTES / 4;
/// Every allocation starts at a multiple of this: nodes begin with u64 words and atomic
/// pointers.
pub const ALIGN_BYTES: usize = 8;
/// Most chunk buffers the pool keeps (8 MiB): the default write-buffer budget's worth
/// (`DbOptions::write_buffer_bytes_max`), enough for the next memtables of a busy tree while
/// the last ones flush. Beyond it, freed chunks go back to the allocator, and all of them do
/// when writes stop ([`release_idle_chunks`]).
const POOL_CHUNKS_MAX: usize = 8;

/// Idle chunk buffers of exactly `CHUNK_BYTES`, shared by every database in the process (like
/// an allocator's cache, which it is).
static POOL: BufferPool<Box<[u8]>> = BufferPool::new(POOL_CHUNKS_MAX);

/// Frees the pool's idle chunks: called when writes have stopped, so the memory a burst's
/// memtables used goes back to the allocator (and from it to the OS) instead of staying
/// resident until the next burst.
pub(crate) fn release_idle_chunks() {
    POOL.release_idle();
}

fn pooled_buffer() -> Box<[u8]> {
    POOL.take()
        .unwrap_or_else(|| vec![0u8; CHUNK_BYTES].into_boxed_slice())
}

/// A buffer that allocations are carved from.
struct Chunk {
    /// A leaked `Box<[u8]>`, turned back into it on drop. Only ever accessed through raw
    /// pointers derived from this one (so they may cover the whole buffer), never as a slice
    /// reference while allocations are live.
    buffer: NonNull<[u8]>,
}

// SAFETY: a chunk is a plain heap buffer that the arena owns; the bytes it hands out are
// accessed by whoever received them (see `Arena::alloc`), and nothing else touches the
// buffer until the arena drops it.
unsafe impl Send for Chunk {}
// SAFETY: as for Send; a shared `Chunk` exposes nothing but its length and address.
unsafe impl Sync for Chunk {}

impl Chunk {
    fn new(buffer: Box<[u8]>) -> Chunk {
        Chunk {
            buffer: NonNull::from(Box::leak(buffer)),
        }
    }

    fn len_bytes(&self) -> usize {
        self.buffer.len()
    }

    fn start(&self) -> *mut u8 {
        self.buffer.as_ptr().cast::<u8>()
    }

    /// Bytes to skip from `offset` so that the address is aligned to [`ALIGN_BYTES`].
    fn padding_at(&self, offset: usize) -> usize {
        let address = self.start() as usize + offset;
        address.next_multiple_of(ALIGN_BYTES) - address
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: `buffer` came from `Box::leak` in `Chunk::new` and this is the only place
        // that rebuilds the box; the arena drops its chunks only when it is dropped itself,
        // after every user of its allocations (the memtable's skiplist) is gone.
        let buffer = unsafe { Box::from_raw(self.buffer.as_ptr()) };
        if buffer.len() == CHUNK_BYTES {
            POOL.give(buffer);
        }
    }
}

/// The bump allocator of one memtable. Allocations live as long as the arena.
pub struct Arena {
    state: Mutex<ArenaState>,
}

#[derive(Default)]
struct ArenaState {
    /// The chunk small allocations come from.
    current: Option<Chunk>,
    /// Bytes of `current` already handed out (alignment padding included).
    used_bytes: usize,
    /// Earlier chunks and dedicated ones, kept until the arena drops.
    retired: Vec<Chunk>,
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

impl Arena {
    pub fn new() -> Arena {
        Arena {
            state: Mutex::new(ArenaState::default()),
        }
    }

    /// Reserves `len_bytes` starting at an address aligned to [`ALIGN_BYTES`]. The bytes are
    /// initialized (to whatever an earlier user of a pooled chunk left) and are handed out by
    /// this call only, so the caller has exclusive access to them until it shares them; they
    /// stay valid until the arena is dropped.
    pub fn alloc(&self, len_bytes: usize) -> NonNull<u8> {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        if len_bytes >= DEDICATED_ALLOC_BYTES_MIN {
            let chunk = Chunk::new(vec![0u8; len_bytes + ALIGN_BYTES].into_boxed_slice());
            let offset = chunk.padding_at(0);
            let start = Self::reserve(&chunk, offset, len_bytes);
            state.retired.push(chunk);
            return start;
        }
        if let Some(chunk) = state.current.as_ref() {
            let offset = state.used_bytes + chunk.padding_at(state.used_bytes);
            if offset + len_bytes <= chunk.len_bytes() {
                state.used_bytes = offset + len_bytes;
                return Self::reserve(chunk, offset, len_bytes);
            }
        }
        let buffer = if state.current.is_none() && len_bytes + ALIGN_BYTES <= FIRST_CHUNK_BYTES {
            vec![0u8; FIRST_CHUNK_BYTES].into_boxed_slice()
        } else {
            pooled_buffer()
        };
        let chunk = Chunk::new(buffer);
        let offset = chunk.padding_at(0);
        let start = Self::reserve(&chunk, offset, len_bytes);
        state.used_bytes = offset + len_bytes;
        // Moving the chunk moves no bytes: `start` points into its heap buffer.
        state.retired.extend(state.current.replace(chunk));
        start
    }

    /// The address of `len_bytes` at `offset` of `chunk`, checked to lie inside it.
    fn reserve(chunk: &Chunk, offset: usize, len_bytes: usize) -> NonNull<u8> {
        // Every caller sized the chunk or checked the fit; a miss would hand out memory past
        // the buffer, so it is fatal rather than debug-only.
        assert!(
            offset + len_bytes <= chunk.len_bytes(),
            "arena allocation past its chunk"
        );
        // SAFETY: `offset` is within the chunk's buffer (asserted), so the result points into
        // (or one past the end of) the same allocation.
        let start = unsafe { chunk.buffer.cast::<u8>().add(offset) };
        debug_assert_eq!(start.as_ptr() as usize % ALIGN_BYTES, 0);
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocates `len` bytes and fills them with `byte`.
    fn filled(arena: &Arena, len: usize, byte: u8) -> (NonNull<u8>, usize) {
        let start = arena.alloc(len);
        // SAFETY: `alloc` handed these bytes to this call alone.
        unsafe { std::ptr::write_bytes(start.as_ptr(), byte, len) };
        (start, len)
    }

    fn read(allocation: (NonNull<u8>, usize)) -> &'static [u8] {
        // SAFETY (test only): the arena outlives every read in these tests.
        unsafe { std::slice::from_raw_parts(allocation.0.as_ptr(), allocation.1) }
    }

    #[test]
    fn allocations_keep_their_bytes_across_chunks_and_sizes() {
        let arena = Arena::new();
        let mut allocations = Vec::new();
        // Crosses the first chunk, several full chunks, and dedicated ones.
        // Miri checks the unsafe code's accesses, slowly: fewer and no dedicated chunks there.
        let count = if cfg!(miri) { 300 } else { 5_000usize };
        for i in 0..count {
            let len = match i % 7 {
                0 if cfg!(miri) => 1,
                0 => DEDICATED_ALLOC_BYTES_MIN + i,
                1 => 0,
                _ => 1 + (i * 37) % 3_000,
            };
            allocations.push((i as u8, filled(&arena, len, i as u8)));
        }
        for (byte, allocation) in &allocations {
            assert_eq!(allocation.0.as_ptr() as usize % ALIGN_BYTES, 0);
            assert!(read(*allocation).iter().all(|b| b == byte));
        }
    }

    #[test]
    fn a_first_allocation_larger_than_the_first_chunk_fits() {
        for len in [
            FIRST_CHUNK_BYTES - 1,
            FIRST_CHUNK_BYTES,
            FIRST_CHUNK_BYTES + 1,
            DEDICATED_ALLOC_BYTES_MIN - 1,
        ] {
            let arena = Arena::new();
            let first = filled(&arena, len, 3);
            let second = filled(&arena, 10, 4);
            assert_eq!(read(first), vec![3u8; len]);
            assert_eq!(read(second), &[4u8; 10][..]);
        }
    }

    /// An allocation handed between test threads.
    struct Sent((NonNull<u8>, usize));

    // SAFETY (test only): the bytes are written by the thread that allocated them and read
    // only after it has been joined.
    unsafe impl Send for Sent {}

    #[test]
    fn concurrent_allocations_do_not_overlap() {
        const PER_THREAD: usize = if cfg!(miri) { 100 } else { 2_000 };
        let arena = Arena::new();
        let results: Vec<Vec<Sent>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4u8)
                .map(|t| {
                    let arena = &arena;
                    scope.spawn(move || {
                        (0..PER_THREAD)
                            .map(|_| Sent(filled(arena, 333, t)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        assert_eq!(results.len(), 4);
        for (t, allocations) in results.iter().enumerate() {
            assert_eq!(allocations.len(), PER_THREAD);
            assert!(allocations
                .iter()
                .all(|a| read(a.0).iter().all(|&b| b == t as u8)));
        }
    }
}
