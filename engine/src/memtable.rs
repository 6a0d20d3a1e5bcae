//! The memtable: a tree's newest writes, in memory, in internal-key order.
//!
//! An insert-only concurrent skiplist ([`super::skiplist`]) keyed by internal key (user key ‖
//! seq ‖ kind, see `shoal_compaction::key`), its nodes and values bump-allocated in the memtable's
//! arenas ([`super::arena`]): no heap allocation per entry, and memory that flushed memtables
//! hand on to new ones instead of back to the OS. While the database runs only the
//! WAL's group leader inserts (in sequence order); WAL replay inserts from several threads at
//! once, in any order, which is equally correct because every entry has its own sequence
//! number and so its own key. Readers iterate concurrently without locks. When a memtable
//! passes its size limit it is frozen (made immutable) and flushed to an SSTable in the
//! background.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use shoal_compaction::key::{self, EntryKind, InlinePrefix, InternalKey};
use shoal_compaction::{InternalIterator, IterError};

use crate::skiplist::{Entry, PreparedNode, Search, SkipList, Splice, SEARCH_TOGETHER_MAX};
use crate::sstable::{bloom, PointLookup};

/// One version built in a memtable's arenas and ready to be linked into it ([`Memtable::entry`],
/// [`Memtable::insert_entry`]). Building apart from inserting lets WAL replay build entries
/// on one thread while others insert them.
pub struct MemtableEntry {
    node: PreparedNode,
    seq: u64,
    /// For the memtable's key filter, hashed while building.
    user_key_hash: u64,
}

/// Most versions a [`MemtableInserter`] holds prepared before it links them.
const INSERTER_PENDING_MAX: usize = 16;

/// Memtables a [`MemtableInserter`] keeps a splice for: a table write touches its table's
/// tree and one tree per index. Further memtables share the last splice, which then only
/// costs its two comparisons (a splice filled by another memtable is ignored).
pub(crate) const INSERTER_SPLICES_MAX: usize = 4;
const _: () = assert!(INSERTER_SPLICES_MAX <= SEARCH_TOGETHER_MAX);

/// A memtable's splice within a [`MemtableInserter`].
#[derive(Default)]
struct SpliceSlot<'a> {
    owner: Option<&'a Memtable>,
    splice: Splice<'a>,
    /// The batch of the last version pushed through this slot.
    last_batch: Option<u64>,
}

/// A version copied into its memtable's arenas, waiting to be linked.
struct PendingVersion<'a> {
    memtable: &'a Memtable,
    entry: MemtableEntry,
    slot: usize,
    /// Where its place is searched for ahead of the run's inserts, if it is: an index into
    /// [`MemtableInserter::searched`].
    searched: Option<usize>,
}

/// Inserts runs of versions, in order, into one or more memtables: applying a group of
/// committed batches. Versions are copied into the arenas as they are pushed and linked in
/// runs of up to [`INSERTER_PENDING_MAX`] (and whatever is left when the inserter is
/// dropped).
///
/// - Each memtable's versions go through one splice, so versions of a memtable that follow
///   each other in key order within a batch (an item's index entries, a batch written in
///   key order) are linked without a search.
/// - The first version of each memtable in each batch has its place searched for before
///   the run is linked, together with the others' ([`SkipList::search_together`]), so the
///   searches' cache misses overlap: an item and its index entries cost about one search's
///   wait instead of two, and a group of batches about one per run. A search is skipped
///   when the memtable's splice already brackets the version.
#[derive(Default)]
pub struct MemtableInserter<'a> {
    slots: [SpliceSlot<'a>; INSERTER_SPLICES_MAX],
    pending: [Option<PendingVersion<'a>>; INSERTER_PENDING_MAX],
    pending_len: usize,
    /// Splices of the pending versions searched for ahead, in push order.
    searched: [Splice<'a>; SEARCH_TOGETHER_MAX],
    searched_len: usize,
    /// Numbers the batches pushed ([`MemtableInserter::next_batch`]).
    batch: u64,
}

impl<'a> MemtableInserter<'a> {
    /// Copies one version into `memtable`'s arenas; it is linked with the rest of its run.
    pub fn push(
        &mut self,
        memtable: &'a Memtable,
        user_key: &[u8],
        seq: u64,
        kind: EntryKind,
        value: &[u8],
    ) {
        if self.pending_len == INSERTER_PENDING_MAX {
            self.link_pending();
        }
        // The memtable's own splice, else an unused one, else the last.
        let slot = self
            .slots
            .iter()
            .position(|slot| slot.owner.is_none_or(|owner| std::ptr::eq(owner, memtable)))
            .unwrap_or(INSERTER_SPLICES_MAX - 1);
        let first_in_batch = self.slots[slot].last_batch != Some(self.batch)
            || self.slots[slot]
                .owner
                .is_some_and(|owner| !std::ptr::eq(owner, memtable));
        if first_in_batch && self.searched_len == SEARCH_TOGETHER_MAX {
            self.link_pending();
        }
        self.slots[slot].owner = Some(memtable);
        self.slots[slot].last_batch = Some(self.batch);
        let searched = first_in_batch.then(|| {
            self.searched_len += 1;
            self.searched_len - 1
        });
        self.pending[self.pending_len] = Some(PendingVersion {
            memtable,
            entry: memtable.entry(user_key, seq, kind, value),
            slot,
            searched,
        });
        self.pending_len += 1;
    }

    /// Marks the end of a batch: the next version of each memtable starts a new search.
    pub fn next_batch(&mut self) {
        self.batch += 1;
    }

    /// Runs the run's searches together, then links the run in order.
    fn link_pending(&mut self) {
        let pending = &mut self.pending[..self.pending_len];
        // A memtable's first version in the run needs no search if the memtable's splice
        // already brackets it (a batch in key order continuing from the last run). Later
        // ones cannot be checked before the versions ahead of them are linked.
        let mut slot_seen = [false; INSERTER_SPLICES_MAX];
        for version in pending.iter_mut().flatten() {
            let first_in_run = !std::mem::replace(&mut slot_seen[version.slot], true);
            if first_in_run
                && version.searched.is_some()
                && !version
                    .memtable
                    .list
                    .needs_search(&version.entry.node, &self.slots[version.slot].splice)
            {
                version.searched = None;
            }
        }
        let mut splices = self.searched.iter_mut().enumerate();
        SkipList::search_together(pending.iter().flatten().filter_map(|version| {
            let index = version.searched?;
            let (_, splice) = splices.find(|(at, _)| *at == index)?;
            Some(Search {
                list: &version.memtable.list,
                node: &version.entry.node,
                splice,
            })
        }));
        for version in pending.iter_mut().filter_map(Option::take) {
            let slot = &mut self.slots[version.slot];
            if let Some(index) = version.searched {
                slot.splice = std::mem::take(&mut self.searched[index]);
            }
            version
                .memtable
                .insert_entry_with_splice(version.entry, &mut slot.splice);
        }
        self.pending_len = 0;
        self.searched_len = 0;
    }
}

impl Drop for MemtableInserter<'_> {
    /// Links whatever is still pending: a pushed version is always inserted.
    fn drop(&mut self) {
        self.link_pending();
    }
}

/// Bits in a memtable's key filter (64 KiB): about 1% false positives up to ~50,000 keys;
/// a fuller memtable still filters, less sharply.
const KEY_FILTER_BITS: u64 = 1 << 19;
/// Probes per key: fewer than the optimum for 10 bits a key (7), to keep inserts cheap.
const KEY_FILTER_PROBES: u8 = 4;

/// A Bloom filter over the user keys a memtable holds (RocksDB's whole-key memtable filter).
/// A point lookup of a key the memtable does not hold then skips the skiplist search: most
/// GetItems once the data read is older than the newest memtable, and the read before every
/// write of a new item. Profiles of GetItem under load showed that search at ~14% of the
/// server's time. Bits are atomic so replay threads set them concurrently. Relaxed ordering
/// suffices: an entry is looked for only at sequence numbers readers learned from the
/// Release store that publishes it, which comes after its bits were set.
struct KeyFilter {
    words: Box<[AtomicU64]>,
}

impl KeyFilter {
    fn new() -> KeyFilter {
        KeyFilter {
            words: (0..KEY_FILTER_BITS / 64)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    fn insert(&self, key_hash: u64) {
        for bit in bloom::probes(key_hash, KEY_FILTER_PROBES, KEY_FILTER_BITS) {
            // `probes` yields bits below KEY_FILTER_BITS, so the word exists.
            if let Some(word) = self.words.get((bit / 64) as usize) {
                word.fetch_or(1 << (bit % 64), AtomicOrdering::Relaxed);
            }
        }
    }

    /// `false`: the key is certainly not in the memtable.
    fn may_contain(&self, key_hash: u64) -> bool {
        bloom::probes(key_hash, KEY_FILTER_PROBES, KEY_FILTER_BITS).all(|bit| {
            self.words
                .get((bit / 64) as usize)
                .is_some_and(|word| word.load(AtomicOrdering::Relaxed) & (1 << (bit % 64)) != 0)
        })
    }
}

/// One memtable.
pub struct Memtable {
    list: SkipList,
    /// Allocated at the first insert, so the empty memtables of idle trees cost nothing.
    key_filter: OnceLock<KeyFilter>,
    /// Arena bytes of the entries inserted (node headers and links included).
    size_bytes: AtomicUsize,
    /// Smallest sequence number inserted (u64::MAX while empty): what this memtable pins in
    /// the WAL.
    seq_min: AtomicU64,
    /// Largest sequence number inserted (0 while empty).
    seq_max: AtomicU64,
    /// When the first entry went in: how long the memtable took to fill decides the size of
    /// the tree's next one (`write_buffer`).
    first_insert_at: OnceLock<Instant>,
    /// The database's total of live memtable bytes (`write_buffer::WriteBuffer`), charged in
    /// whole [`CHARGE_GRANULE_BYTES`] as entries go in and refunded when the memtable, and so
    /// its arena, is dropped. `None` for a memtable outside a database (tests).
    charged_to: Option<Arc<AtomicUsize>>,
}

/// The unit the database's write-buffer total is charged in. Every writer thread updates
/// that one counter, so charging it per entry would add a contended atomic to every insert
/// (beside the memtable's own `size_bytes`); charged a page at a time, it moves once per
/// page of entries and undercounts each live memtable by less than a page.
pub(crate) const CHARGE_GRANULE_BYTES: usize = 4096;

/// The bytes of `size_bytes` charged to the write-buffer total: whole granules.
pub(crate) fn charged_bytes(size_bytes: usize) -> usize {
    size_bytes - size_bytes % CHARGE_GRANULE_BYTES
}

impl Drop for Memtable {
    fn drop(&mut self) {
        if let Some(total) = &self.charged_to {
            total.fetch_sub(charged_bytes(self.size_bytes()), AtomicOrdering::Relaxed);
        }
    }
}

impl Default for Memtable {
    fn default() -> Self {
        Memtable::new()
    }
}

impl Memtable {
    pub fn new() -> Memtable {
        Memtable::with_charge(None)
    }

    /// A memtable whose bytes count in `total` for as long as it lives.
    pub(crate) fn charged_to(total: Arc<AtomicUsize>) -> Memtable {
        Memtable::with_charge(Some(total))
    }

    fn with_charge(charged_to: Option<Arc<AtomicUsize>>) -> Memtable {
        Memtable {
            list: SkipList::new(),
            key_filter: OnceLock::new(),
            size_bytes: AtomicUsize::new(0),
            seq_min: AtomicU64::new(u64::MAX),
            seq_max: AtomicU64::new(0),
            first_insert_at: OnceLock::new(),
            charged_to,
        }
    }

    /// How long ago the first entry went in (`None` while empty).
    pub fn filling_for(&self, now: Instant) -> Option<Duration> {
        self.first_insert_at
            .get()
            .map(|at| now.saturating_duration_since(*at))
    }

    /// Inserts one version. Sequence numbers are unique, so no existing entry is replaced.
    pub fn insert(&self, user_key: &[u8], seq: u64, kind: EntryKind, value: &[u8]) {
        self.insert_entry(self.entry(user_key, seq, kind, value));
    }

    /// Builds an entry in this memtable's arenas, to be inserted here with
    /// [`Memtable::insert_entry`] (inserting it into another memtable panics).
    pub fn entry(&self, user_key: &[u8], seq: u64, kind: EntryKind, value: &[u8]) -> MemtableEntry {
        let key_len_bytes = user_key.len() + key::TRAILER_LEN;
        let node = self.list.prepare(
            InlinePrefix::of_user_key(user_key),
            key_len_bytes,
            value,
            |key_region| key::encode_to_slice(key_region, user_key, seq, kind),
        );
        MemtableEntry {
            node,
            seq,
            user_key_hash: bloom::hash64(user_key),
        }
    }

    /// Inserts one prepared version; safe to call from several threads at once, in any
    /// sequence order.
    pub fn insert_entry(&self, entry: MemtableEntry) {
        self.insert_entry_with_splice(entry, &mut Splice::default());
    }

    fn insert_entry_with_splice<'a>(&'a self, entry: MemtableEntry, splice: &mut Splice<'a>) {
        let charged = entry.node.arena_bytes();
        // Bits before the entry: see KeyFilter on why readers then never miss it.
        self.key_filter
            .get_or_init(KeyFilter::new)
            .insert(entry.user_key_hash);
        self.first_insert_at.get_or_init(Instant::now);
        self.list.insert(entry.node, splice);
        let before = self.size_bytes.fetch_add(charged, AtomicOrdering::Relaxed);
        if let Some(total) = &self.charged_to {
            let granules = charged_bytes(before + charged) - charged_bytes(before);
            if granules > 0 {
                total.fetch_add(granules, AtomicOrdering::Relaxed);
            }
        }
        self.seq_min.fetch_min(entry.seq, AtomicOrdering::Relaxed);
        self.seq_max.fetch_max(entry.seq, AtomicOrdering::Relaxed);
    }

    /// Approximate memory used, in bytes.
    pub fn size_bytes(&self) -> usize {
        self.size_bytes.load(AtomicOrdering::Relaxed)
    }

    pub fn entry_count(&self) -> u64 {
        self.list.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Smallest sequence number held, if any.
    pub fn seq_min(&self) -> Option<u64> {
        match self.seq_min.load(AtomicOrdering::Relaxed) {
            u64::MAX => None,
            seq => Some(seq),
        }
    }

    /// Largest sequence number held (0 when empty).
    pub fn seq_max(&self) -> u64 {
        self.seq_max.load(AtomicOrdering::Relaxed)
    }

    /// The newest version of `user_key` visible at `snapshot_seq`: a Put (its value) or a
    /// Delete (a tombstone hides older data); `None` if this memtable knows nothing. The
    /// value is read in place, not copied.
    pub fn get(&self, user_key: &[u8], snapshot_seq: u64) -> Option<FoundVersion<'_>> {
        self.get_for(&PointLookup::new(user_key, snapshot_seq))
    }

    /// [`Memtable::get`] for a lookup that may probe several memtables and tables: the key's
    /// hash and seek target are computed once for all of them.
    pub fn get_for(&self, lookup: &PointLookup) -> Option<FoundVersion<'_>> {
        // No filter yet means nothing was ever inserted.
        if !self
            .key_filter
            .get()
            .is_some_and(|filter| filter.may_contain(lookup.key_hash()))
        {
            return None;
        }
        let entry = self.list.seek(lookup.target())?;
        let found = InternalKey::parse(entry.key())?;
        if found.user_key != lookup.user_key() {
            return None;
        }
        debug_assert!(found.seq <= lookup.snapshot_seq());
        Some(FoundVersion {
            kind: found.kind,
            value: entry.value(),
        })
    }

    /// A cursor over every entry; keeps the memtable alive.
    pub fn iter(self: &Arc<Self>) -> MemtableIterator {
        MemtableIterator {
            current: None,
            memtable: Arc::clone(self),
        }
    }
}

/// A version [`Memtable::get`] found.
pub struct FoundVersion<'m> {
    pub kind: EntryKind,
    value: &'m [u8],
}

impl FoundVersion<'_> {
    /// The value (empty for a Delete).
    pub fn value(&self) -> &[u8] {
        self.value
    }
}

/// A positioned cursor over a memtable (see [`InternalIterator`]).
pub struct MemtableIterator {
    // Borrows `memtable`'s skiplist: see `extend`.
    current: Option<Entry<'static>>,
    memtable: Arc<Memtable>,
}

/// Extends an entry's lifetime to 'static so the iterator can store it next to the Arc that
/// keeps its skiplist alive.
///
/// SAFETY (of the callers): `entry` must borrow the skiplist of the `Memtable` held by the
/// iterator that stores the result. The iterator keeps that Arc for as long as it holds the
/// entry, and an entry owns nothing (dropping it does nothing), so the entry is never used
/// after its skiplist is gone even though its type no longer says so.
unsafe fn extend(entry: Option<Entry<'_>>) -> Option<Entry<'static>> {
    // SAFETY: see the function's contract; only the lifetime parameter changes.
    entry.map(|e| unsafe { std::mem::transmute::<Entry<'_>, Entry<'static>>(e) })
}

impl MemtableIterator {
    /// Positions on the entry `find` picks from this iterator's skiplist.
    fn position(&mut self, find: impl for<'m> FnOnce(&'m SkipList) -> Option<Entry<'m>>) {
        let memtable = Arc::clone(&self.memtable);
        // SAFETY: the entry comes from `self.memtable`'s skiplist (the same allocation as the
        // clone), which `self` keeps alive while it holds the entry.
        self.current = unsafe { extend(find(&memtable.list)) };
    }
}

impl InternalIterator for MemtableIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn key(&self) -> &[u8] {
        self.current.map(|e| e.key()).unwrap_or(&[])
    }

    fn value(&self) -> &[u8] {
        self.current.map(|e| e.value()).unwrap_or(&[])
    }

    fn seek_to_first(&mut self) -> Result<(), IterError> {
        self.position(|list| list.first());
        // A flush walks on from here: start the loads of the steps ahead.
        if let Some(first) = self.current {
            first.prefetch_following();
        }
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<(), IterError> {
        self.position(|list| list.last());
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<(), IterError> {
        self.position(|list| list.seek(target));
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<(), IterError> {
        self.position(|list| list.seek_for_prev(target));
        Ok(())
    }

    fn next(&mut self) -> Result<(), IterError> {
        // The successor is reached through the entry's own link, in the same skiplist.
        self.current = self.current.and_then(|e| e.next());
        if let Some(current) = self.current {
            current.prefetch_following();
        }
        Ok(())
    }

    fn prev(&mut self) -> Result<(), IterError> {
        let Some(current) = self.current else {
            return Ok(());
        };
        // `current` borrows `self.memtable`'s skiplist, which `position` searches.
        self.position(|list| list.prev(current));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_compaction::compare_internal;
    use shoal_compaction::key::INLINE_PREFIX_BYTES;
    use std::cmp::Ordering;

    /// `Memtable::get`, owned.
    fn get(m: &Memtable, user_key: &[u8], seq: u64) -> Option<(EntryKind, Vec<u8>)> {
        m.get(user_key, seq)
            .map(|found| (found.kind, found.value().to_vec()))
    }

    #[test]
    fn get_sees_newest_visible_version() {
        let m = Memtable::new();
        m.insert(b"a", 1, EntryKind::Put, b"v1");
        m.insert(b"a", 3, EntryKind::Put, b"v3");
        m.insert(b"a", 5, EntryKind::Delete, b"");
        m.insert(b"b", 2, EntryKind::Put, b"w");
        assert_eq!(get(&m, b"a", 2), Some((EntryKind::Put, b"v1".to_vec())));
        assert_eq!(get(&m, b"a", 4), Some((EntryKind::Put, b"v3".to_vec())));
        assert_eq!(get(&m, b"a", 9), Some((EntryKind::Delete, vec![])));
        assert_eq!(get(&m, b"a", 0), None);
        assert_eq!(get(&m, b"c", 9), None);
        assert_eq!((m.seq_min(), m.seq_max()), (Some(1), 5));
    }

    #[test]
    fn entries_hold_the_encoded_key_and_value() {
        let m = Arc::new(Memtable::new());
        let versions = [
            (&b"k"[..], 7, EntryKind::Put, &b"value"[..]),
            (b"", 1, EntryKind::Delete, b""),
            (
                &[0xff; 40][..],
                u64::MAX >> 8,
                EntryKind::Put,
                &[1u8; 300_000][..],
            ),
        ];
        for (user_key, seq, kind, value) in versions {
            m.insert_entry(m.entry(user_key, seq, kind, value));
        }
        let mut it = m.iter();
        it.seek_to_first().unwrap();
        // In key order: "", "k", then the 0xff key.
        for (user_key, seq, kind, value) in [1, 0, 2].map(|index| versions[index]) {
            assert_eq!(it.key(), key::encode(user_key, seq, kind));
            assert_eq!(it.value(), value);
            it.next().unwrap();
        }
        assert!(!it.valid());
        assert_eq!(m.entry_count(), 3);
        let data_bytes: usize = versions
            .iter()
            .map(|(user_key, _, _, value)| user_key.len() + key::TRAILER_LEN + value.len())
            .sum();
        assert!(m.size_bytes() > data_bytes, "node headers are charged too");
    }

    /// Every key of a memtable, in iteration order.
    fn all_keys(m: &Arc<Memtable>) -> Vec<Vec<u8>> {
        let mut it = m.iter();
        it.seek_to_first().unwrap();
        let mut found = Vec::new();
        while it.valid() {
            found.push(it.key().to_vec());
            it.next().unwrap();
        }
        found
    }

    /// Two versions of each of `user_keys` (both kinds), inserted in scrambled order, iterate
    /// in `compare_internal` order, and a seek to each key's version at seq 3 lands where
    /// that order says.
    fn assert_entry_order_agrees(user_keys: &[Vec<u8>]) {
        let m = Arc::new(Memtable::new());
        let mut expected = Vec::new();
        for (index, user_key) in user_keys.iter().enumerate() {
            for seq in [1, 5] {
                let kind = if index % 2 == 0 {
                    EntryKind::Put
                } else {
                    EntryKind::Delete
                };
                // Distinct sequence numbers even for repeated user keys.
                let seq = seq + 10 * index as u64;
                expected.push(key::encode(user_key, seq, kind));
            }
        }
        let mut scrambled = expected.clone();
        scrambled.reverse();
        scrambled.rotate_left(expected.len() / 3);
        for internal in &scrambled {
            let parsed = InternalKey::parse(internal).unwrap();
            m.insert(parsed.user_key, parsed.seq, parsed.kind, b"v");
        }
        expected.sort_by(|a, b| compare_internal(a, b));
        assert_eq!(all_keys(&m), expected);
        let mut it = m.iter();
        for user_key in user_keys {
            let target = key::seek_key(user_key, 3);
            let at_or_after = expected
                .iter()
                .find(|k| compare_internal(k, &target) != Ordering::Less);
            it.seek(&target).unwrap();
            assert_eq!(it.valid().then(|| it.key()), at_or_after.map(|k| &k[..]));
        }
    }

    #[test]
    fn entry_order_agrees_with_internal_key_order() {
        // Short keys, keys that are prefixes of others, zero bytes, equal prefixes, and keys
        // either side of the inline prefix's length.
        let mut user_keys: Vec<Vec<u8>> = [
            &b""[..],
            b"\0",
            b"a",
            b"a\0",
            b"a\0\0\0\0\0\0\0\0",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghi",
            b"abcdefgi",
        ]
        .iter()
        .map(|k| k.to_vec())
        .collect();
        for len in [
            INLINE_PREFIX_BYTES - 1,
            INLINE_PREFIX_BYTES,
            INLINE_PREFIX_BYTES + 1,
        ] {
            user_keys.push(vec![b'x'; len]);
            user_keys.push([vec![b'x'; len], vec![0]].concat());
            user_keys.push([vec![b'x'; len - 1], vec![b'y']].concat());
        }
        assert_entry_order_agrees(&user_keys);
    }

    proptest::proptest! {
        /// Groups of batches pushed through one inserter per group, over more memtables than
        /// it keeps splices for, each batch's entries a mix of random keys (searched for) and
        /// runs of keys right after them (linked through the splice), past the pending and
        /// search limits: every version lands in its own memtable, in order, readable.
        #[test]
        fn an_inserter_puts_every_version_in_its_memtable_in_order(
            groups in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::collection::vec(
                        (0..INSERTER_SPLICES_MAX + 2,
                         proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xff]),
                            INLINE_PREFIX_BYTES - 2..INLINE_PREFIX_BYTES + 3),
                         1..4usize),
                        1..8,
                    ),
                    1..6,
                ),
                1..12,
            ),
        ) {
            let memtables: Vec<Arc<Memtable>> =
                (0..INSERTER_SPLICES_MAX + 2).map(|_| Arc::new(Memtable::new())).collect();
            let mut models: Vec<Vec<Vec<u8>>> = vec![Vec::new(); memtables.len()];
            let mut seq = 1u64;
            for group in &groups {
                let mut inserter = MemtableInserter::default();
                for batch in group {
                    for (which, user_key, run_len) in batch {
                        for step in 0..*run_len {
                            let mut run_key = user_key.clone();
                            run_key.extend(std::iter::repeat_n(0, step));
                            let value = seq.to_le_bytes();
                            inserter.push(&memtables[*which], &run_key, seq, EntryKind::Put, &value);
                            models[*which].push(key::encode(&run_key, seq, EntryKind::Put));
                            seq += 1;
                        }
                    }
                    inserter.next_batch();
                }
            }
            for (memtable, model) in memtables.iter().zip(&mut models) {
                model.sort_by(|a, b| compare_internal(a, b));
                proptest::prop_assert_eq!(&all_keys(memtable), &*model);
                for internal in model.iter() {
                    let parsed = InternalKey::parse(internal).unwrap();
                    proptest::prop_assert_eq!(
                        get(memtable, parsed.user_key, parsed.seq),
                        Some((EntryKind::Put, parsed.seq.to_le_bytes().to_vec()))
                    );
                }
            }
        }

        /// Random keys over a tiny alphabet (so shared prefixes and zero padding are common),
        /// around the inline prefix's length.
        #[test]
        fn entry_order_agrees_on_random_keys(
            user_keys in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xff]), 0..40),
                1..12,
            )
        ) {
            assert_entry_order_agrees(&user_keys);
        }
    }

    #[test]
    fn key_filter_never_hides_a_key_and_turns_most_absent_ones_away() {
        let m = Memtable::new();
        assert_eq!(
            get(&m, b"anything", 1),
            None,
            "an empty memtable has no filter yet"
        );
        let key = |i: u32| format!("present-{i}").into_bytes();
        for i in 0..20_000u32 {
            m.insert(&key(i), u64::from(i) + 1, EntryKind::Put, b"v");
        }
        for i in 0..20_000u32 {
            assert_eq!(
                get(&m, &key(i), u64::from(i) + 1),
                Some((EntryKind::Put, b"v".to_vec()))
            );
        }
        let filter = m.key_filter.get().unwrap();
        let passed = (0..20_000u32)
            .filter(|i| filter.may_contain(bloom::hash64(format!("absent-{i}").as_bytes())))
            .count();
        // ~26 bits a key with 4 probes: well under 1% expected.
        assert!(
            passed < 200,
            "{passed} of 20000 absent keys passed the filter"
        );
        assert_eq!(get(&m, b"absent-1", u64::MAX >> 8), None);
    }

    #[test]
    fn iterates_both_ways_in_internal_order() {
        let m = Arc::new(Memtable::new());
        for (i, k) in [b"c", b"a", b"b"].iter().enumerate() {
            m.insert(*k, i as u64 + 1, EntryKind::Put, b"x");
        }
        m.insert(b"a", 7, EntryKind::Put, b"new");
        let mut it = m.iter();
        it.seek_to_first().unwrap();
        let mut forward = Vec::new();
        while it.valid() {
            let k = InternalKey::parse(it.key()).unwrap();
            forward.push((k.user_key.to_vec(), k.seq));
            it.next().unwrap();
        }
        let expected = vec![
            (b"a".to_vec(), 7),
            (b"a".to_vec(), 2),
            (b"b".to_vec(), 3),
            (b"c".to_vec(), 1),
        ];
        assert_eq!(forward, expected);
        it.seek_to_last().unwrap();
        let mut backward = Vec::new();
        while it.valid() {
            let k = InternalKey::parse(it.key()).unwrap();
            backward.push((k.user_key.to_vec(), k.seq));
            it.prev().unwrap();
        }
        backward.reverse();
        assert_eq!(backward, expected);
        // (b, seq 0) sorts after every version of b: the last entry <= it is b's.
        it.seek_for_prev(&key::seek_key(b"b", 0)).unwrap();
        assert_eq!(InternalKey::parse(it.key()).unwrap().user_key, b"b");
        // (b, newest possible) sorts before every version of b.
        it.seek_for_prev(&key::seek_key(b"b", key::SEQ_MAX))
            .unwrap();
        let k = InternalKey::parse(it.key()).unwrap();
        assert_eq!((k.user_key, k.seq), (&b"a"[..], 2));
    }
}
