//! The memtable's ordered index: a concurrent, insert-only skiplist whose nodes live in an
//! arena, each node holding its entry's internal key (the design of RocksDB's
//! InlineSkipList), and whose values live in a second arena.
//!
//! Why not crossbeam-skiplist, which the memtable used until this file: with one unpaced
//! writer, memtable inserts were 55% of the writer thread, and of that the zeroed, aligned
//! heap allocation of each node was 7.6% of the thread, and epoch pinning, reference counts
//! and checks for removed nodes sat inside every search step. A memtable never removes an
//! entry (a delete is an entry too) and is freed whole once flushed, so none of that
//! machinery is needed: nodes are bump-allocated from an arena and live exactly as long as
//! the list, and a search step is one pointer load and one comparison.
//!
//! Values are kept apart from the nodes because a search touches nodes only: with each
//! ~1 KB value inside its node, the nodes of a 64 MiB memtable were spread over all 64 MiB,
//! and nearly every search step was a cache and TLB miss. Apart, a tree's nodes (header,
//! links, key) pack into a few MiB. Profiles with eight writers had the skiplist search at
//! 52% of the writer threads before this split.
//!
//! # Concurrency
//!
//! Any number of threads may insert at once (WAL replay does; while the database runs only
//! the WAL's group leader does), and readers never lock or wait:
//! - A node is written in full (header, key, value, null links) by the thread that prepares
//!   it, before anyone else can see it.
//! - Insert links the node bottom-up. At each level it points the node at its successor,
//!   then swings the predecessor's link from that successor to the node with a
//!   compare-and-swap (Release). If another insert got there first, the CAS fails and the
//!   level is searched again from the same predecessor, which still precedes the key.
//! - Readers load links with Acquire, so a node reached through any link is seen whole.
//!   The level-0 CAS is the moment the entry is in the list; a reader may meet a new node at
//!   level 0 before its upper levels are linked, which only makes its search longer.
//! - Keys are unique (every entry has its own sequence number), so no insert ever meets an
//!   equal key.
//!
//! The unsafe code here and in the arena is checked under Miri (tests shrink themselves
//! there): `PROPTEST_CASES=3 MIRIFLAGS=-Zmiri-disable-isolation cargo +nightly miri test -p
//! shoal-engine --lib -- skiplist arena` (about 5 minutes).
//!
//! # Node layout
//!
//! Each node is one allocation in the node arena, 8-byte aligned, and its value one in the
//! value arena:
//!
//! ```text
//! node                                            value
//! +--------------------------------------+ 0      +---------------------+
//! | user-key prefix (InlinePrefix, 32 B) |        | length u32          |
//! | key length u32 | height u32          |        | value bytes         |
//! | address of the value                 | -----> +---------------------+
//! +--------------------------------------+ 48 (HEADER_BYTES)
//! | link to next node, level 0           |   8 bytes each, `height` of them
//! | ...                                  |
//! +--------------------------------------+ 48 + 8 * height
//! | internal key (user key ‖ trailer)    |
//! +--------------------------------------+
//! ```
//!
//! The prefix is compared first at every search step.
//!
//! Levels: a node has height h with probability (1/4)^(h-1) (branching 4, as RocksDB and
//! LevelDB), at most [`HEIGHT_MAX`]; levels 0 and 1 then share the header's cache line.

use std::cell::Cell;
use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use shoal_compaction::compare_internal;
use shoal_compaction::key::InlinePrefix;

use crate::arena::Arena;

/// Most levels a node may have: with branching 4, enough for 4^12 = 16 million entries
/// before searches start to lengthen, far beyond a memtable's.
pub const HEIGHT_MAX: usize = 12;

#[repr(C)]
struct Header {
    prefix: InlinePrefix,
    key_len_bytes: u32,
    height: u32,
    /// The value's allocation in the value arena: its length (u32), then its bytes.
    value: NonNull<u8>,
}

const VALUE_LEN_BYTES: usize = std::mem::size_of::<u32>();

const HEADER_BYTES: usize = std::mem::size_of::<Header>();
const LINK_BYTES: usize = std::mem::size_of::<AtomicPtr<Header>>();
// Links follow the header aligned, and a search step at levels 0 and 1 reads one cache line
// (when the node starts one).
const _: () =
    assert!(HEADER_BYTES.is_multiple_of(LINK_BYTES) && HEADER_BYTES + 2 * LINK_BYTES <= 64);

/// A node of a list that lives for `'a`.
///
/// Module invariant: a `Node` is only ever made from a node allocated and fully written by
/// [`SkipList::prepare`] in the arena of a list that outlives `'a`; after it is written, only
/// its links change, and only through atomics. Every method below relies on it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Node<'a> {
    ptr: NonNull<Header>,
    list: PhantomData<&'a SkipList>,
}

// SAFETY: a `Node` acts as a shared reference into its list (module invariant): the bytes
// it reads without atomics are never written once it is shared, and its links are atomics,
// so sending or sharing it is as safe as sharing the `SkipList` itself, which is Sync.
unsafe impl Send for Node<'_> {}
// SAFETY: as for Send.
unsafe impl Sync for Node<'_> {}

impl<'a> Node<'a> {
    fn new(ptr: NonNull<Header>) -> Node<'a> {
        Node {
            ptr,
            list: PhantomData,
        }
    }

    fn header(self) -> &'a Header {
        // SAFETY: the module invariant: the header was written before the node was shared,
        // is never written again, and lives as long as the list.
        unsafe { self.ptr.as_ref() }
    }

    fn height(self) -> usize {
        self.header().height as usize
    }

    fn link(self, level: usize) -> &'a AtomicPtr<Header> {
        assert!(level < self.height(), "link above a node's height");
        // SAFETY: the node was allocated with `height` links after the header (module
        // invariant), `level` is below it (asserted), and links are only accessed atomically.
        unsafe {
            &*self
                .ptr
                .as_ptr()
                .cast::<u8>()
                .add(HEADER_BYTES + level * LINK_BYTES)
                .cast::<AtomicPtr<Header>>()
        }
    }

    fn next(self, level: usize) -> Option<Node<'a>> {
        NonNull::new(self.link(level).load(AtomicOrdering::Acquire)).map(Node::new)
    }

    fn key(self) -> &'a [u8] {
        // SAFETY: the node was allocated with its key right after its links, and the key was
        // written before the node was shared (module invariant) and is never written again.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr
                    .as_ptr()
                    .cast::<u8>()
                    .add(HEADER_BYTES + self.height() * LINK_BYTES),
                self.header().key_len_bytes as usize,
            )
        }
    }

    fn value(self) -> &'a [u8] {
        let value = self.header().value;
        // SAFETY: `value` is the node's allocation in the list's value arena, 8-byte aligned,
        // holding the length and then that many bytes, all written before the node was shared
        // (module invariant), never written again, and alive as long as the list.
        unsafe {
            let len_bytes = value.cast::<u32>().read() as usize;
            std::slice::from_raw_parts(value.as_ptr().add(VALUE_LEN_BYTES), len_bytes)
        }
    }
}

/// A key to search for, with its inline prefix computed once.
struct Probe<'k> {
    prefix: InlinePrefix,
    key: &'k [u8],
}

impl Probe<'_> {
    fn of_key(internal_key: &[u8]) -> Probe<'_> {
        Probe {
            prefix: InlinePrefix::of_internal_key(internal_key),
            key: internal_key,
        }
    }

    /// A probe for a node's own key, its prefix read from the node rather than recomputed.
    fn of_node(node: Node<'_>) -> Probe<'_> {
        Probe {
            prefix: node.header().prefix,
            key: node.key(),
        }
    }

    /// Whether `node` sorts before the probe: what a search steps past.
    fn is_after(&self, node: Node<'_>) -> bool {
        self.cmp_node(node) == Ordering::Greater
    }

    /// Orders the probe against a node's key exactly as [`compare_internal`] orders internal
    /// keys (see [`InlinePrefix`] on why differing prefixes decide).
    fn cmp_node(&self, node: Node<'_>) -> Ordering {
        self.prefix
            .cmp(&node.header().prefix)
            .then_with(|| compare_internal(self.key, node.key()))
    }
}

/// A node written into a list's arena but not linked into it yet (see
/// [`SkipList::prepare`]).
pub struct PreparedNode {
    ptr: NonNull<Header>,
    list_id: u64,
    /// Arena bytes of the node and of its value.
    arena_bytes: usize,
}

// SAFETY: the node's memory is plain initialized bytes that nothing else references until
// `SkipList::insert` links it; moving the handle to another thread moves that exclusive use.
unsafe impl Send for PreparedNode {}

impl PreparedNode {
    /// Arena bytes the entry takes: the node (header, links, key) and its value.
    pub fn arena_bytes(&self) -> usize {
        self.arena_bytes
    }
}

/// Where the last insert through it linked its node, level by level: the node's
/// predecessor and successor at each level (RocksDB's splice). Start each run of inserts
/// with [`Splice::default`]; see [`SkipList::insert`].
///
/// Why a hit needs no search: after an insert of key K, the splice holds at every level a
/// node before K (K's own node at the levels it has) and the node that followed it when it
/// was linked. A next key K2 after K (checked against level 0's predecessor, which is K's
/// node) is after every predecessor, which all sort at or before K. If K2 also sorts before
/// the successor at each level it will be linked at (checked), every link it needs is
/// bracketed. A successor may since have gained a new predecessor from a concurrent insert
/// (replay); the CAS then fails and the level is searched on from the predecessor, as
/// after any search.
pub struct Splice<'a> {
    links: [(Option<Node<'a>>, Option<Node<'a>>); HEIGHT_MAX],
    /// Levels of `links` that hold a splice of `list_id`; 0 until the first insert.
    levels: usize,
    list_id: u64,
}

impl Default for Splice<'_> {
    fn default() -> Self {
        Splice {
            links: [(None, None); HEIGHT_MAX],
            levels: 0,
            list_id: 0,
        }
    }
}

impl Splice<'_> {
    /// Whether the splice, filled by list `list_id`, brackets the probe at every level of a
    /// node `height` tall (see the type's docs).
    fn brackets(&self, list_id: u64, probe: &Probe<'_>, height: usize) -> bool {
        self.list_id == list_id
            && self.links[0].0.is_some_and(|prev| probe.is_after(prev))
            && self.links[..height.min(self.levels)]
                .iter()
                .all(|(_, next)| next.is_none_or(|next| probe.cmp_node(next) == Ordering::Less))
    }
}

/// Most searches [`SkipList::search_together`] steps at once: a core tracks about ten
/// outstanding cache misses, and each search has one at a time.
pub const SEARCH_TOGETHER_MAX: usize = 8;

/// One search of [`SkipList::search_together`]: where `node`, prepared by `list`, goes in
/// it, written into `splice`.
pub struct Search<'a, 's> {
    pub list: &'a SkipList,
    pub node: &'s PreparedNode,
    pub splice: &'s mut Splice<'a>,
}

/// Asks the CPU to start loading a node's first cache line (its key prefix), which the
/// search will compare next.
#[inline(always)]
fn prefetch(node: Node<'_>) {
    prefetch_line(node.ptr.as_ptr().cast::<u8>());
}

/// Asks the CPU to start loading the cache line holding `address`.
#[inline(always)]
fn prefetch_line(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, reads nothing into the program and
    // writes nothing, whatever the address. Callers pass addresses inside live nodes and
    // values anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// One entry of a list: its internal key and value, borrowed from the list.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    node: Node<'a>,
}

impl<'a> Entry<'a> {
    pub fn key(self) -> &'a [u8] {
        self.node.key()
    }

    pub fn value(self) -> &'a [u8] {
        self.node.value()
    }

    /// The entry after this one.
    pub fn next(self) -> Option<Entry<'a>> {
        self.node.next(0).map(|node| Entry { node })
    }

    /// Starts loading what a walk in key order reads after this entry: the next entry's
    /// value, and the node after that. Called at each step, it keeps nodes two steps ahead
    /// and values one step ahead, so a step's loads were started a step earlier.
    ///
    /// Why: key order is random order in the arenas, so each step of a walk misses the
    /// cache on its node and on its value. A bare walk loses nothing to that (the CPU runs
    /// ahead and overlaps them), but a flush does a block build's work between steps, too
    /// much to run ahead past: a profile of the flush thread had 28% of its time on those
    /// two loads, and with this the bench's flush of 240,000 entries takes 0.6 of the time.
    pub fn prefetch_following(self) {
        let Some(next) = self.node.next(0) else {
            return;
        };
        // The next node's header was prefetched a step ago, as the node after that one.
        prefetch_line(next.header().value.as_ptr().cast_const());
        if let Some(after) = next.next(0) {
            prefetch(after);
        }
    }
}

/// Numbers lists, so an insert can check that a prepared node came from its own arena.
static NEXT_LIST_ID: AtomicU64 = AtomicU64::new(1);

/// The skiplist. Send + Sync: insert and read from any threads.
pub struct SkipList {
    /// Holds every node; dropped (its chunks pooled) with the list.
    nodes: Arena,
    /// Holds every value, likewise.
    values: Arena,
    /// The head's links, one per level; the head has no key and precedes every node.
    head: [AtomicPtr<Header>; HEIGHT_MAX],
    /// Levels in use (at least 1); only grows. Searches start at its top.
    height: AtomicUsize,
    len: AtomicUsize,
    id: u64,
}

impl Default for SkipList {
    fn default() -> Self {
        SkipList::new()
    }
}

impl SkipList {
    pub fn new() -> SkipList {
        SkipList {
            nodes: Arena::new(),
            values: Arena::new(),
            head: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            id: NEXT_LIST_ID.fetch_add(1, AtomicOrdering::Relaxed),
        }
    }

    /// Writes a node with a key of `key_len_bytes`, which `fill_key` writes into the slice it
    /// is given, and a copy of `value` into this list's arenas, ready for
    /// [`SkipList::insert`] here. Preparing apart from inserting lets WAL replay build nodes
    /// on one thread while others link them.
    ///
    /// Panics if either length exceeds u32 (the engine caps keys and values far below).
    pub fn prepare(
        &self,
        prefix: InlinePrefix,
        key_len_bytes: usize,
        value: &[u8],
        fill_key: impl FnOnce(&mut [u8]),
    ) -> PreparedNode {
        let (Ok(key_len), Ok(value_len)) =
            (u32::try_from(key_len_bytes), u32::try_from(value.len()))
        else {
            panic!(
                "memtable entry of {key_len_bytes} + {} bytes past u32",
                value.len()
            );
        };
        let value_bytes = VALUE_LEN_BYTES + value.len();
        let value_start = self.values.alloc(value_bytes);
        // SAFETY: `alloc` returned `value_bytes` bytes, 8-byte aligned (so aligned for the
        // u32 length), that no one else can reach; both writes stay inside them.
        unsafe {
            value_start.cast::<u32>().write(value_len);
            std::ptr::copy_nonoverlapping(
                value.as_ptr(),
                value_start.as_ptr().add(VALUE_LEN_BYTES),
                value.len(),
            );
        }
        let height = random_height();
        let key_offset = HEADER_BYTES + height * LINK_BYTES;
        let node_bytes = key_offset + key_len_bytes;
        let start = self.nodes.alloc(node_bytes);
        let ptr = start.cast::<Header>();
        // SAFETY: `alloc` returned `node_bytes` bytes, aligned for `Header` (8) and for the
        // links that follow it at a multiple of 8, that no one else can reach: every write
        // below stays inside them, and nothing reads them until `insert` publishes the node.
        unsafe {
            ptr.as_ptr().write(Header {
                prefix,
                key_len_bytes: key_len,
                height: height as u32,
                value: value_start,
            });
            let links = start.as_ptr().add(HEADER_BYTES).cast::<AtomicPtr<Header>>();
            for level in 0..height {
                links.add(level).write(AtomicPtr::new(std::ptr::null_mut()));
            }
            fill_key(std::slice::from_raw_parts_mut(
                start.as_ptr().add(key_offset),
                key_len_bytes,
            ));
        }
        PreparedNode {
            ptr,
            list_id: self.id,
            arena_bytes: node_bytes + value_bytes,
        }
    }

    /// Links a node prepared by this list, remembering in `splice` where. Safe to call from
    /// several threads at once, each with its own splice ([`Splice::default`] for a lone
    /// insert).
    ///
    /// When the node sorts right after the last one inserted through `splice`, before the
    /// node that followed it (the next key of a batch written in key order), it is linked
    /// without a search; otherwise the splice costs two comparisons and the search runs as
    /// usual. A splice filled by another list is ignored (and refilled).
    ///
    /// Panics if `prepared` came from another list: its memory would not live as long as
    /// this one.
    pub fn insert<'a>(&'a self, prepared: PreparedNode, splice: &mut Splice<'a>) {
        assert_eq!(
            prepared.list_id, self.id,
            "a node prepared by one skiplist inserted into another"
        );
        let node = Node::new(prepared.ptr);
        let height = node.height();
        let mut list_height = self.height.load(AtomicOrdering::Relaxed);
        while height > list_height {
            match self.height.compare_exchange_weak(
                list_height,
                height,
                AtomicOrdering::Relaxed,
                AtomicOrdering::Relaxed,
            ) {
                Ok(_) => list_height = height,
                Err(current) => list_height = current,
            }
        }
        let probe = Probe::of_node(node);
        let is_before_key = |other: Node<'_>| probe.is_after(other);
        if !splice.brackets(self.id, &probe, height) {
            // The node's predecessor and successor at each level, found top-down (a search
            // of one; the list's height, raised above, bounds it).
            SkipList::search_together([Search {
                list: self,
                node: &prepared,
                splice: &mut *splice,
            }]);
        }
        // Levels the list grew by since the splice was filled start at the head; a link
        // there that is not the one expected only makes the CAS below search on.
        for slot in &mut splice.links[splice.levels.min(height)..height] {
            *slot = (None, None);
        }
        splice.levels = splice.levels.max(height);
        for (level, slot) in splice.links.iter_mut().enumerate().take(height) {
            loop {
                let (prev, next) = *slot;
                let next_ptr = next.map_or(std::ptr::null_mut(), |next| next.ptr.as_ptr());
                // Not yet reachable at this level, so a plain store; the CAS publishes it.
                node.link(level).store(next_ptr, AtomicOrdering::Relaxed);
                let linked = self.link_after(prev, level).compare_exchange(
                    next_ptr,
                    node.ptr.as_ptr(),
                    AtomicOrdering::Release,
                    AtomicOrdering::Relaxed,
                );
                if linked.is_ok() {
                    break;
                }
                // Another insert linked a node after `prev` first; `prev` still precedes
                // our key, so search on from it.
                *slot = self.advance(prev, level, &is_before_key);
            }
            // The next key after this one fits between the node and its successor.
            slot.0 = Some(node);
        }
        self.len.fetch_add(1, AtomicOrdering::Relaxed);
    }

    /// Fills each search's splice with its node's predecessor and successor at every level of
    /// its list, as the search inside [`SkipList::insert`] would, so that the insert through
    /// that splice then links without a search. The searches run in lockstep, one step of
    /// each per round, with the node each will compare next prefetched.
    ///
    /// Why: a search is a chain of dependent loads, nearly each a cache miss in a large
    /// memtable (a profile of the one-writer peer bench had 72% of the insert's time on the
    /// load of the next node's key prefix), so one search leaves the memory system idle while
    /// it waits. Independent searches stepped together wait for their misses at the same time.
    /// A batch that writes an item and its index entries searches two lists at once.
    ///
    /// Panics past [`SEARCH_TOGETHER_MAX`] searches or if a node was prepared by another list
    /// than the one it is searched in.
    pub fn search_together<'a: 's, 's>(searches: impl IntoIterator<Item = Search<'a, 's>>) {
        struct Cursor<'a, 's> {
            search: Search<'a, 's>,
            probe: Probe<'a>,
            /// Levels not yet searched, the current one included.
            levels_left: usize,
            prev: Option<Node<'a>>,
            next: Option<Node<'a>>,
        }
        let mut cursors: [Option<Cursor<'a, 's>>; SEARCH_TOGETHER_MAX] = Default::default();
        // Searches started (the cursors in use) and those not yet done.
        let mut started = 0;
        let mut active = 0;
        for search in searches {
            assert!(
                started < SEARCH_TOGETHER_MAX,
                "more than {SEARCH_TOGETHER_MAX} searches at once"
            );
            let list = search.list;
            assert_eq!(
                search.node.list_id, list.id,
                "a node prepared by one skiplist searched for in another"
            );
            let levels = list.height.load(AtomicOrdering::Relaxed);
            search.splice.list_id = list.id;
            search.splice.levels = levels;
            let next = list.next_after(None, levels - 1);
            next.inspect(|next| prefetch(*next));
            cursors[started] = Some(Cursor {
                probe: Probe::of_node(Node::new(search.node.ptr)),
                search,
                levels_left: levels,
                prev: None,
                next,
            });
            started += 1;
            active += 1;
        }
        while active > 0 {
            for slot in &mut cursors[..started] {
                let Some(cursor) = slot else { continue };
                let level = cursor.levels_left - 1;
                match cursor.next {
                    Some(next) if cursor.probe.is_after(next) => cursor.prev = Some(next),
                    next => {
                        debug_assert!(
                            next.is_none_or(|next| cursor.probe.cmp_node(next) == Ordering::Less),
                            "two memtable entries with one internal key"
                        );
                        cursor.search.splice.links[level] = (cursor.prev, next);
                        if level == 0 {
                            *slot = None;
                            active -= 1;
                            continue;
                        }
                        cursor.levels_left = level;
                    }
                }
                let next = cursor
                    .search
                    .list
                    .next_after(cursor.prev, cursor.levels_left - 1);
                next.inspect(|next| prefetch(*next));
                cursor.next = next;
            }
        }
    }

    /// Whether an insert of `node` through `splice` would have to search (see [`Splice`]).
    ///
    /// Panics if `node` was prepared by another list.
    pub fn needs_search(&self, node: &PreparedNode, splice: &Splice<'_>) -> bool {
        assert_eq!(
            node.list_id, self.id,
            "a node prepared by one skiplist checked against another"
        );
        let node = Node::new(node.ptr);
        !splice.brackets(self.id, &Probe::of_node(node), node.height())
    }

    /// Entries linked so far.
    pub fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first entry.
    pub fn first(&self) -> Option<Entry<'_>> {
        self.next_after(None, 0).map(|node| Entry { node })
    }

    /// The last entry.
    pub fn last(&self) -> Option<Entry<'_>> {
        self.descend(|_| true).0.map(|node| Entry { node })
    }

    /// The first entry whose key is at or after `internal_key`.
    pub fn seek(&self, internal_key: &[u8]) -> Option<Entry<'_>> {
        let probe = Probe::of_key(internal_key);
        self.descend(|node| probe.is_after(node))
            .1
            .map(|node| Entry { node })
    }

    /// The last entry whose key is at or before `internal_key`.
    pub fn seek_for_prev(&self, internal_key: &[u8]) -> Option<Entry<'_>> {
        let probe = Probe::of_key(internal_key);
        self.descend(|node| probe.cmp_node(node) != Ordering::Less)
            .0
            .map(|node| Entry { node })
    }

    /// The entry before `entry` (a search: links only point forward).
    pub fn prev<'a>(&'a self, entry: Entry<'a>) -> Option<Entry<'a>> {
        let probe = Probe::of_node(entry.node);
        self.descend(|node| probe.is_after(node))
            .0
            .map(|node| Entry { node })
    }

    /// The link that follows `prev` at `level` (`None`: the head).
    fn link_after<'a>(&'a self, prev: Option<Node<'a>>, level: usize) -> &'a AtomicPtr<Header> {
        match prev {
            Some(node) => node.link(level),
            None => &self.head[level],
        }
    }

    fn next_after<'a>(&'a self, prev: Option<Node<'a>>, level: usize) -> Option<Node<'a>> {
        NonNull::new(self.link_after(prev, level).load(AtomicOrdering::Acquire)).map(Node::new)
    }

    /// From `prev` (`None`: the head), follows `level`'s links while the next node satisfies
    /// `advance`; returns the last node passed (or `prev`) and the node after it.
    fn advance<'a>(
        &'a self,
        mut prev: Option<Node<'a>>,
        level: usize,
        advance: &impl Fn(Node<'a>) -> bool,
    ) -> (Option<Node<'a>>, Option<Node<'a>>) {
        loop {
            match self.next_after(prev, level) {
                Some(next) if advance(next) => prev = Some(next),
                next => return (prev, next),
            }
        }
    }

    /// The last node satisfying `advance` (which must hold for a prefix of the list) and the
    /// node after it, searching from the top level down.
    fn descend<'a>(
        &'a self,
        advance: impl Fn(Node<'a>) -> bool,
    ) -> (Option<Node<'a>>, Option<Node<'a>>) {
        let mut found = (None, None);
        for level in (0..self.height.load(AtomicOrdering::Relaxed)).rev() {
            found = self.advance(found.0, level, &advance);
        }
        found
    }
}

/// A node height in [1, HEIGHT_MAX], each level above the first with probability 1/4.
fn random_height() -> usize {
    static SEEDS: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    thread_local! {
        // xorshift64 needs a non-zero state; the seeds step through splitmix64's sequence.
        static STATE: Cell<u64> =
            Cell::new(splitmix64(SEEDS.fetch_add(0x9e37_79b9_7f4a_7c15, AtomicOrdering::Relaxed)) | 1);
    }
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        let mut height = 1;
        let mut bits = x;
        while height < HEIGHT_MAX && bits & 3 == 0 {
            height += 1;
            bits >>= 2;
        }
        height
    })
}

fn splitmix64(seed: u64) -> u64 {
    let mut z = seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_compaction::key::{self, EntryKind, INLINE_PREFIX_BYTES};
    use std::collections::BTreeSet;

    /// An internal key wrapped to sort as `compare_internal` does, for the model.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct ModelKey(Vec<u8>);

    impl Ord for ModelKey {
        fn cmp(&self, other: &Self) -> Ordering {
            compare_internal(&self.0, &other.0)
        }
    }

    impl PartialOrd for ModelKey {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }

    fn insert(list: &SkipList, user_key: &[u8], seq: u64, value: &[u8]) {
        insert_spliced(list, user_key, seq, value, &mut Splice::default());
    }

    fn insert_spliced<'a>(
        list: &'a SkipList,
        user_key: &[u8],
        seq: u64,
        value: &[u8],
        splice: &mut Splice<'a>,
    ) {
        list.insert(prepare(list, user_key, seq, value), splice);
    }

    fn prepare(list: &SkipList, user_key: &[u8], seq: u64, value: &[u8]) -> PreparedNode {
        let internal = key::encode(user_key, seq, EntryKind::Put);
        list.prepare(
            InlinePrefix::of_user_key(user_key),
            internal.len(),
            value,
            |key_region| key_region.copy_from_slice(&internal),
        )
    }

    /// Searches for each node's place in its list together, checks every splice against a
    /// lone search's, then links the nodes through their splices in `order` (indices into
    /// `nodes`): splices searched before earlier nodes of the same list were linked are
    /// stale, which the insert's CAS must absorb.
    fn search_together_then_insert<'a>(
        nodes: Vec<(&'a SkipList, PreparedNode)>,
        order: impl IntoIterator<Item = usize>,
    ) {
        let mut splices: Vec<Splice<'a>> = nodes.iter().map(|_| Splice::default()).collect();
        SkipList::search_together(
            nodes
                .iter()
                .zip(&mut splices)
                .map(|((list, node), splice)| Search { list, node, splice }),
        );
        for ((list, node), splice) in nodes.iter().zip(&splices) {
            let probe = Probe::of_node(Node::new(node.ptr));
            let mut prev = None;
            for level in (0..list.height.load(AtomicOrdering::Relaxed)).rev() {
                let expected = list.advance(prev, level, &|other| probe.is_after(other));
                assert!(splice.links[level] == expected, "level {level} of a splice");
                prev = expected.0;
            }
            // Only a node that goes first in its list (no predecessor to check it against)
            // is searched for again by its insert.
            assert_eq!(list.needs_search(node, splice), splice.links[0].0.is_none());
        }
        let mut nodes: Vec<Option<(&SkipList, PreparedNode, Splice<'a>)>> = nodes
            .into_iter()
            .zip(splices)
            .map(|((list, node), splice)| Some((list, node, splice)))
            .collect();
        for index in order {
            let (list, node, mut splice) = nodes[index].take().unwrap();
            list.insert(node, &mut splice);
        }
        assert!(nodes.iter().all(Option::is_none), "every node inserted");
    }

    /// Every level's links, followed from the head: keys strictly increasing, and exactly
    /// the nodes at least that tall (so no level skips or repeats a node).
    fn check_levels(list: &SkipList) {
        let nodes: Vec<Node<'_>> =
            std::iter::successors(list.next_after(None, 0), |node| node.next(0)).collect();
        for level in 0..HEIGHT_MAX {
            let linked: Vec<Node<'_>> =
                std::iter::successors(list.next_after(None, level), |node| node.next(level))
                    .collect();
            let tall: Vec<Node<'_>> = nodes
                .iter()
                .copied()
                .filter(|node| node.height() > level)
                .collect();
            assert!(linked == tall, "level {level} links the wrong nodes");
            assert!(linked
                .windows(2)
                .all(|pair| compare_internal(pair[0].key(), pair[1].key()) == Ordering::Less));
        }
    }

    fn forward(list: &SkipList) -> Vec<Vec<u8>> {
        std::iter::successors(list.first(), |entry| entry.next())
            .map(|entry| entry.key().to_vec())
            .collect()
    }

    /// A list of 5,000 keys (tall enough to search several levels), then groups of eight
    /// keys over it and an empty list, searched for together: every splice matches a lone
    /// search, and through it the insert needs none.
    #[test]
    fn searches_together_match_lone_searches_and_need_no_other() {
        let list = SkipList::new();
        let empty = SkipList::new();
        let mut state = 7u64;
        let mut next_key = || {
            state = splitmix64(state);
            state.to_be_bytes()
        };
        // Smaller under Miri, but still several levels tall.
        let (keys, groups, levels_min) = if cfg!(miri) {
            (400, 3, 2)
        } else {
            (5_000, 20, 3)
        };
        for seq in 0..keys {
            insert(&list, &next_key(), seq, b"v");
        }
        assert!(
            list.height.load(AtomicOrdering::Relaxed) > levels_min,
            "a long list is tall"
        );
        for group in 0..groups {
            let nodes: Vec<(&SkipList, PreparedNode)> = (0..SEARCH_TOGETHER_MAX as u64)
                .map(|n| {
                    let target = if n == 3 { &empty } else { &list };
                    (
                        target,
                        prepare(target, &next_key(), 10_000 + group * 8 + n, b"v"),
                    )
                })
                .collect();
            for (target, node) in &nodes {
                // A fresh splice brackets nothing.
                assert!(target.needs_search(node, &Splice::default()));
            }
            search_together_then_insert(nodes, 0..SEARCH_TOGETHER_MAX);
        }
        check_levels(&list);
        check_levels(&empty);
        assert_eq!(list.len() as u64, keys + groups * 7);
        assert_eq!(empty.len() as u64, groups);
    }

    #[test]
    #[should_panic(expected = "searched for in another")]
    fn a_node_searched_for_in_another_list_is_refused() {
        let (one, other) = (SkipList::new(), SkipList::new());
        let node = prepare(&one, b"k", 1, b"v");
        let mut splice = Splice::default();
        SkipList::search_together([Search {
            list: &other,
            node: &node,
            splice: &mut splice,
        }]);
    }

    #[test]
    fn heights_are_in_range_and_mostly_one() {
        let heights: Vec<usize> = (0..100_000).map(|_| random_height()).collect();
        assert!(heights.iter().all(|&h| (1..=HEIGHT_MAX).contains(&h)));
        let ones = heights.iter().filter(|&&h| h == 1).count();
        // Expected 75,000 (each level above the first with probability 1/4).
        assert!(
            (73_000..77_000).contains(&ones),
            "{ones} of 100000 at height 1"
        );
        assert!(heights.iter().any(|&h| h >= 5));
    }

    #[test]
    fn an_empty_list_finds_nothing() {
        let list = SkipList::new();
        let probe = key::encode(b"k", 1, EntryKind::Put);
        assert!(list.first().is_none() && list.last().is_none());
        assert!(list.seek(&probe).is_none() && list.seek_for_prev(&probe).is_none());
        assert!(list.is_empty());
    }

    #[test]
    fn keys_values_and_large_values_read_back() {
        let list = SkipList::new();
        insert(&list, b"small", 1, b"v");
        insert(&list, b"empty", 2, b"");
        let large = vec![7u8; crate::arena::DEDICATED_ALLOC_BYTES_MIN * 2];
        insert(&list, b"large", 3, &large);
        let entries: Vec<(Vec<u8>, Vec<u8>)> =
            std::iter::successors(list.first(), |entry| entry.next())
                .map(|entry| (entry.key().to_vec(), entry.value().to_vec()))
                .collect();
        assert_eq!(
            entries,
            vec![
                (key::encode(b"empty", 2, EntryKind::Put), vec![]),
                (key::encode(b"large", 3, EntryKind::Put), large),
                (key::encode(b"small", 1, EntryKind::Put), b"v".to_vec()),
            ]
        );
        assert_eq!(list.len(), 3);
    }

    #[test]
    #[should_panic(expected = "inserted into another")]
    fn a_node_from_another_list_is_refused() {
        let first = SkipList::new();
        let second = SkipList::new();
        let prepared = first.prepare(InlinePrefix::of_user_key(b""), 8, b"", |key_region| {
            key_region.copy_from_slice(&key::encode(b"", 1, EntryKind::Put))
        });
        second.insert(prepared, &mut Splice::default());
    }

    #[test]
    fn a_splice_brackets_only_the_keys_right_after_its_last_insert() {
        let list = SkipList::new();
        for user_key in [b"a", b"c", b"e"] {
            insert(&list, user_key, 1, b"");
        }
        let mut splice = Splice::default();
        insert_spliced(&list, b"c1", 2, b"", &mut splice);
        let brackets = |user_key: &[u8], height| {
            let internal = key::encode(user_key, 3, EntryKind::Put);
            splice.brackets(list.id, &Probe::of_key(&internal), height)
        };
        // Between the last insert and the node after it, at any height...
        assert!(brackets(b"c2", 1) && brackets(b"c2", HEIGHT_MAX));
        // ...but not before the last insert, nor after its successor ("e" at sequence 1;
        // "e" at 3 sorts before it, newest first)...
        assert!(brackets(b"e", 1));
        assert!(!brackets(b"c0", 1) && !brackets(b"e0", 1) && !brackets(b"f", 1));
        // ...and never for another list, whose nodes the splice does not hold.
        let other = SkipList::new();
        let internal = key::encode(b"c2", 3, EntryKind::Put);
        assert!(!splice.brackets(other.id, &Probe::of_key(&internal), 1));
        // A fresh splice brackets nothing.
        assert!(!Splice::default().brackets(list.id, &Probe::of_key(&internal), 1));
    }

    #[test]
    fn keys_in_order_through_one_splice_link_every_level() {
        let list = SkipList::new();
        let mut splice = Splice::default();
        // Enough nodes that some are several levels tall, inserted in order (every insert
        // after the first is bracketed), then a second pass filling the gaps.
        const KEYS: u32 = if cfg!(miri) { 200 } else { 5_000 };
        for n in (0..KEYS).step_by(2).chain((1..KEYS).step_by(2)) {
            insert_spliced(&list, &n.to_be_bytes(), 1, b"", &mut splice);
        }
        check_levels(&list);
        let expected: Vec<Vec<u8>> = (0..KEYS)
            .map(|n| key::encode(&n.to_be_bytes(), 1, EntryKind::Put))
            .collect();
        assert_eq!(forward(&list), expected);
        for internal in expected.iter().step_by(7) {
            assert_eq!(list.seek(internal).map(|e| e.key()), Some(&internal[..]));
        }
    }

    proptest::proptest! {
        /// Groups of up to `SEARCH_TOGETHER_MAX` keys spread over two lists (tiny alphabet,
        /// so prefixes tie), each group searched for together, checked against lone searches
        /// and inserted in a shuffled order: both lists link every level right and hold
        /// exactly the model's keys in order.
        #[test]
        fn searched_together_then_inserted_in_any_order_agree_with_an_ordered_set(
            groups in proptest::collection::vec(
                proptest::collection::vec(
                    (proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xff]),
                        INLINE_PREFIX_BYTES - 2..INLINE_PREFIX_BYTES + 3), proptest::bool::ANY),
                    1..=SEARCH_TOGETHER_MAX,
                ),
                1..30,
            ),
            shuffle_seed in proptest::num::u64::ANY,
        ) {
            let lists = [SkipList::new(), SkipList::new()];
            let mut models = [BTreeSet::new(), BTreeSet::new()];
            let mut seq = 1;
            let mut shuffle_state = shuffle_seed;
            for group in &groups {
                let mut nodes = Vec::new();
                for (user_key, second) in group {
                    let which = usize::from(*second);
                    nodes.push((&lists[which], prepare(&lists[which], user_key, seq, b"v")));
                    models[which].insert(ModelKey(key::encode(user_key, seq, EntryKind::Put)));
                    seq += 1;
                }
                let mut order: Vec<usize> = (0..nodes.len()).collect();
                for at in (1..order.len()).rev() {
                    shuffle_state = splitmix64(shuffle_state);
                    order.swap(at, (shuffle_state % (at as u64 + 1)) as usize);
                }
                search_together_then_insert(nodes, order);
            }
            for (list, model) in lists.iter().zip(&models) {
                check_levels(list);
                let expected: Vec<Vec<u8>> = model.iter().map(|k| k.0.clone()).collect();
                proptest::prop_assert_eq!(forward(list), expected);
            }
        }

        /// Random keys over a tiny alphabet, around the inline prefix's length (so prefixes
        /// tie and keys are prefixes of others), inserted in random order, each followed by
        /// a run of keys just after it (the key with zero bytes appended) through the same
        /// splice: every level is linked right, and iteration both ways and every seek
        /// agree with a BTreeSet ordered by `compare_internal`.
        #[test]
        fn agrees_with_an_ordered_set(
            user_keys in proptest::collection::vec(
                (proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xff]),
                    INLINE_PREFIX_BYTES - 2..INLINE_PREFIX_BYTES + 3), 1..5usize),
                1..100,
            ),
            probes in proptest::collection::vec(
                (proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xff]),
                    INLINE_PREFIX_BYTES - 2..INLINE_PREFIX_BYTES + 3), 0..400u64),
                1..50,
            ),
        ) {
            let list = SkipList::new();
            let mut model = BTreeSet::new();
            // One splice throughout: each key is followed by a run of keys right after it
            // (linked through the splice) before the next random key (a miss).
            let mut splice = Splice::default();
            let mut seq = 1;
            for (user_key, run_len) in &user_keys {
                for step in 0..*run_len {
                    let mut run_key = user_key.clone();
                    run_key.extend(std::iter::repeat_n(0, step));
                    insert_spliced(&list, &run_key, seq, &seq.to_le_bytes(), &mut splice);
                    model.insert(ModelKey(key::encode(&run_key, seq, EntryKind::Put)));
                    seq += 2;
                }
            }
            check_levels(&list);
            let expected: Vec<Vec<u8>> = model.iter().map(|k| k.0.clone()).collect();
            proptest::prop_assert_eq!(forward(&list), expected.clone());
            let mut backward = Vec::new();
            let mut at = list.last();
            while let Some(entry) = at {
                backward.push(entry.key().to_vec());
                at = list.prev(entry);
            }
            backward.reverse();
            proptest::prop_assert_eq!(backward, expected);
            for (user_key, seq) in probes {
                let probe = ModelKey(key::encode(&user_key, seq, EntryKind::Put));
                let at_or_after = model.range(probe.clone()..).next().map(|k| k.0.clone());
                let at_or_before = model.range(..=probe.clone()).next_back().map(|k| k.0.clone());
                proptest::prop_assert_eq!(list.seek(&probe.0).map(|e| e.key().to_vec()), at_or_after);
                proptest::prop_assert_eq!(
                    list.seek_for_prev(&probe.0).map(|e| e.key().to_vec()),
                    at_or_before
                );
            }
        }
    }

    #[test]
    fn concurrent_inserts_and_reads_keep_the_order() {
        const THREADS: u64 = 4;
        // Miri checks the unsafe code's accesses and atomics, slowly.
        const PER_THREAD: u64 = if cfg!(miri) { 300 } else { 20_000 };
        let list = SkipList::new();
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let list = &list;
                scope.spawn(move || {
                    // Each thread's own splice, kept from insert to insert: runs of keys
                    // that follow each other are linked through it while other threads
                    // link nodes around the same places.
                    let mut splice = Splice::default();
                    for i in 0..PER_THREAD {
                        // Interleaved key ranges so threads contend for the same links.
                        let n = i * THREADS + thread;
                        let user_key = (n.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_be_bytes();
                        insert_spliced(list, &user_key, n + 1, &n.to_le_bytes(), &mut splice);
                    }
                });
            }
            // A reader meanwhile: every pass sees keys in strictly increasing order.
            let list = &list;
            scope.spawn(move || {
                for _ in 0..if cfg!(miri) { 3 } else { 20 } {
                    let keys = forward(list);
                    assert!(keys
                        .windows(2)
                        .all(|pair| compare_internal(&pair[0], &pair[1]) == Ordering::Less));
                }
            });
        });
        check_levels(&list);
        let keys = forward(&list);
        assert_eq!(keys.len() as u64, THREADS * PER_THREAD);
        assert_eq!(list.len() as u64, THREADS * PER_THREAD);
        assert!(keys
            .windows(2)
            .all(|pair| compare_internal(&pair[0], &pair[1]) == Ordering::Less));
        // Every key is found by a seek from the top (upper levels linked correctly).
        for n in (0..THREADS * PER_THREAD).step_by(97) {
            let user_key = (n.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_be_bytes();
            let internal = key::encode(&user_key, n + 1, EntryKind::Put);
            let found = list
                .seek(&internal)
                .map(|entry| (entry.key(), entry.value()));
            assert_eq!(found, Some((&internal[..], &n.to_le_bytes()[..])));
        }
    }
}
