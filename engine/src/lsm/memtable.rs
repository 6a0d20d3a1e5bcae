//! The memtable: a tree's newest writes, in memory, in internal-key order.
//!
//! A concurrent skiplist (crossbeam-skiplist) keyed by internal key (user key ‖ seq ‖ kind,
//! see `compaction::key`). While the database runs only the WAL's group leader inserts (in
//! sequence order); WAL replay inserts from several threads at once, in any order, which is
//! equally correct because every entry has its own sequence number and so its own key.
//! Readers iterate concurrently without locks. When a memtable passes its size limit it is
//! frozen (made immutable) and flushed to an SSTable in the background.
//!
//! Each entry's internal key and value sit together in the memtable's arena
//! ([`MemtableEntry`], [`super::arena`]): no allocation per entry beyond the skiplist node,
//! and memory that flushed memtables hand on to new ones instead of back to the OS.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};

use compaction::key::{self, EntryKind, InlinePrefix, InternalKey};
use compaction::{compare_internal, InternalIterator, IterError};
use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;

use crate::lsm::arena::{Arena, EntryBytes};
use crate::lsm::sstable::bloom;

/// One version ready to go into a memtable: its internal key and its value together
/// (`internal key ‖ value`). It is the skiplist's key, and the skiplist is searched with
/// entries too ([`MemtableEntry::search_probe`]); it orders, and compares equal, by the
/// internal key alone, exactly as [`compare_internal`] orders internal keys.
///
/// Building one (decoding and copying, [`Memtable::entry`]) is separate from inserting it, so
/// WAL replay can build entries on one thread while others insert them.
pub struct MemtableEntry {
    /// Decides nearly every comparison without reading `bytes`, which sit elsewhere (see
    /// [`InlinePrefix`]).
    user_key_prefix: InlinePrefix,
    bytes: StoredBytes,
    /// Length of the internal key at the start of `bytes` (keys are at most
    /// `batch::KEY_BYTES_MAX` long). The fields are kept narrow: a skiplist search reads
    /// one node per level, and a node whose key part fits one cache line reads one line.
    key_len_bytes: u32,
}

/// Where an entry's bytes are: in its memtable's arena, or (search probes, which live for one
/// lookup) in their own allocation.
enum StoredBytes {
    Arena(EntryBytes),
    Owned(Box<[u8]>),
}

impl MemtableEntry {
    /// An entry with its own allocation, for lookups and tests; entries that go into a
    /// memtable come from [`Memtable::entry`].
    pub fn new(user_key: &[u8], seq: u64, kind: EntryKind, value: &[u8]) -> MemtableEntry {
        let key_len_bytes = user_key.len() + key::TRAILER_LEN;
        let mut bytes = Vec::with_capacity(key_len_bytes + value.len());
        key::encode_into(&mut bytes, user_key, seq, kind);
        bytes.extend_from_slice(value);
        MemtableEntry {
            user_key_prefix: InlinePrefix::of_user_key(user_key),
            bytes: StoredBytes::Owned(bytes.into_boxed_slice()),
            key_len_bytes: key_len_bytes as u32,
        }
    }

    /// A search key: `internal_key` with no value. Searching with an entry rather than the
    /// key's bytes lets every comparison start with the inline prefixes.
    fn search_probe(internal_key: &[u8]) -> MemtableEntry {
        MemtableEntry {
            user_key_prefix: InlinePrefix::of_internal_key(internal_key),
            bytes: StoredBytes::Owned(internal_key.into()),
            key_len_bytes: internal_key.len() as u32,
        }
    }

    fn bytes(&self) -> &[u8] {
        match &self.bytes {
            StoredBytes::Arena(bytes) => bytes.as_slice(),
            StoredBytes::Owned(bytes) => bytes,
        }
    }

    fn len_bytes(&self) -> usize {
        match &self.bytes {
            StoredBytes::Arena(bytes) => bytes.len(),
            StoredBytes::Owned(bytes) => bytes.len(),
        }
    }

    fn internal_key(&self) -> &[u8] {
        &self.bytes()[..self.key_len_bytes as usize]
    }

    fn user_key(&self) -> &[u8] {
        key::user_key(self.internal_key())
    }

    fn value(&self) -> &[u8] {
        &self.bytes()[self.key_len_bytes as usize..]
    }

    fn seq(&self) -> u64 {
        InternalKey::parse(self.internal_key()).map_or(0, |key| key.seq)
    }
}

impl PartialEq for MemtableEntry {
    fn eq(&self, other: &MemtableEntry) -> bool {
        self.internal_key() == other.internal_key()
    }
}

impl Eq for MemtableEntry {}

impl Ord for MemtableEntry {
    /// Agrees with [`compare_internal`] (see [`InlinePrefix`] on why the prefixes may
    /// decide).
    fn cmp(&self, other: &MemtableEntry) -> Ordering {
        self.user_key_prefix
            .cmp(&other.user_key_prefix)
            .then_with(|| compare_internal(self.internal_key(), other.internal_key()))
    }
}

impl PartialOrd for MemtableEntry {
    fn partial_cmp(&self, other: &MemtableEntry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Per-entry bookkeeping the skiplist costs beyond key and value bytes (node, pointers);
/// an estimate, so the size limit tracks real memory roughly.
const ENTRY_OVERHEAD_BYTES: usize = 88;

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
    map: SkipMap<MemtableEntry, ()>,
    /// Holds the bytes of the entries built by [`Memtable::entry`].
    arena: Arena,
    /// Allocated at the first insert, so the empty memtables of idle trees cost nothing.
    key_filter: OnceLock<KeyFilter>,
    size_bytes: AtomicUsize,
    entries: AtomicU64,
    /// Smallest sequence number inserted (u64::MAX while empty): what this memtable pins in
    /// the WAL.
    seq_min: AtomicU64,
    /// Largest sequence number inserted (0 while empty).
    seq_max: AtomicU64,
}

impl Default for Memtable {
    fn default() -> Self {
        Memtable::new()
    }
}

impl Memtable {
    pub fn new() -> Memtable {
        Memtable {
            map: SkipMap::new(),
            arena: Arena::new(),
            key_filter: OnceLock::new(),
            size_bytes: AtomicUsize::new(0),
            entries: AtomicU64::new(0),
            seq_min: AtomicU64::new(u64::MAX),
            seq_max: AtomicU64::new(0),
        }
    }

    /// Inserts one version. Sequence numbers are unique, so no existing entry is replaced.
    pub fn insert(&self, user_key: &[u8], seq: u64, kind: EntryKind, value: &[u8]) {
        self.insert_entry(self.entry(user_key, seq, kind, value));
    }

    /// Builds an entry in this memtable's arena, to insert here (into another memtable works
    /// too, as the entry keeps its bytes alive, but wastes this one's memory).
    pub fn entry(&self, user_key: &[u8], seq: u64, kind: EntryKind, value: &[u8]) -> MemtableEntry {
        let key_len_bytes = user_key.len() + key::TRAILER_LEN;
        let bytes = self.arena.alloc(key_len_bytes + value.len(), |region| {
            let (key_region, value_region) = region.split_at_mut(key_len_bytes);
            key::encode_to_slice(key_region, user_key, seq, kind);
            value_region.copy_from_slice(value);
        });
        MemtableEntry {
            user_key_prefix: InlinePrefix::of_user_key(user_key),
            bytes: StoredBytes::Arena(bytes),
            key_len_bytes: key_len_bytes as u32,
        }
    }

    /// Inserts one prepared version; safe to call from several threads at once, in any
    /// sequence order.
    pub fn insert_entry(&self, entry: MemtableEntry) {
        let seq = entry.seq();
        let charged = entry.len_bytes() + ENTRY_OVERHEAD_BYTES;
        // Bits before the entry: see KeyFilter on why readers then never miss it.
        self.key_filter
            .get_or_init(KeyFilter::new)
            .insert(bloom::hash64(entry.user_key()));
        self.map.insert(entry, ());
        self.size_bytes.fetch_add(charged, AtomicOrdering::Relaxed);
        self.entries.fetch_add(1, AtomicOrdering::Relaxed);
        self.seq_min.fetch_min(seq, AtomicOrdering::Relaxed);
        self.seq_max.fetch_max(seq, AtomicOrdering::Relaxed);
    }

    /// Approximate memory used, in bytes.
    pub fn size_bytes(&self) -> usize {
        self.size_bytes.load(AtomicOrdering::Relaxed)
    }

    pub fn entry_count(&self) -> u64 {
        self.entries.load(AtomicOrdering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
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
    /// value is read in place (the found entry keeps its node alive), not copied.
    pub fn get(&self, user_key: &[u8], snapshot_seq: u64) -> Option<FoundVersion<'_>> {
        // No filter yet means nothing was ever inserted.
        if !self
            .key_filter
            .get()
            .is_some_and(|filter| filter.may_contain(bloom::hash64(user_key)))
        {
            return None;
        }
        // The seek key (newest version at the snapshot) as an entry with no value: one
        // allocation, where encoding the seek key and then copying it into a probe took two.
        let probe = MemtableEntry::new(user_key, snapshot_seq, EntryKind::Put, &[]);
        let entry = self.map.lower_bound(Bound::Included(&probe))?;
        let found = InternalKey::parse(entry.key().internal_key())?;
        if found.user_key != user_key {
            return None;
        }
        debug_assert!(found.seq <= snapshot_seq);
        Some(FoundVersion {
            kind: found.kind,
            entry,
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
    entry: Entry<'m, MemtableEntry, ()>,
}

impl FoundVersion<'_> {
    /// The value (empty for a Delete).
    pub fn value(&self) -> &[u8] {
        self.entry.key().value()
    }
}

/// A positioned cursor over a memtable (see [`InternalIterator`]).
pub struct MemtableIterator {
    // Declared before `memtable` so it is dropped first: the entry borrows the skiplist.
    current: Option<StaticEntry>,
    memtable: Arc<Memtable>,
}

type StaticEntry = Entry<'static, MemtableEntry, ()>;

/// Extends an entry's lifetime to 'static so the iterator can store it next to the Arc that
/// keeps its skiplist alive.
///
/// SAFETY (of the callers): `entry` must borrow the skiplist of the `Memtable` held by the
/// iterator that stores the result. The iterator keeps that Arc for as long as it holds the
/// entry (the entry field is declared, and so dropped, first), so the entry never outlives
/// its skiplist even though its type no longer says so.
unsafe fn extend(entry: Option<Entry<'_, MemtableEntry, ()>>) -> Option<StaticEntry> {
    // SAFETY: see the function's contract; only the lifetime parameter changes.
    entry.map(|e| unsafe { std::mem::transmute::<Entry<'_, MemtableEntry, ()>, StaticEntry>(e) })
}

impl MemtableIterator {
    /// Positions on the entry `find` picks from this iterator's skiplist.
    fn position(
        &mut self,
        find: impl for<'m> FnOnce(
            &'m SkipMap<MemtableEntry, ()>,
        ) -> Option<Entry<'m, MemtableEntry, ()>>,
    ) {
        let memtable = Arc::clone(&self.memtable);
        // SAFETY: the entry comes from `self.memtable`'s skiplist (the same allocation as the
        // clone), which `self` keeps alive while it holds the entry.
        self.current = unsafe { extend(find(&memtable.map)) };
    }
}

impl InternalIterator for MemtableIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn key(&self) -> &[u8] {
        self.current
            .as_ref()
            .map(|e| e.key().internal_key())
            .unwrap_or(&[])
    }

    fn value(&self) -> &[u8] {
        self.current
            .as_ref()
            .map(|e| e.key().value())
            .unwrap_or(&[])
    }

    fn seek_to_first(&mut self) -> Result<(), IterError> {
        self.position(|map| map.front());
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<(), IterError> {
        self.position(|map| map.back());
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<(), IterError> {
        let probe = MemtableEntry::search_probe(target);
        self.position(|map| map.lower_bound(Bound::Included(&probe)));
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<(), IterError> {
        let probe = MemtableEntry::search_probe(target);
        self.position(|map| map.upper_bound(Bound::Included(&probe)));
        Ok(())
    }

    fn next(&mut self) -> Result<(), IterError> {
        let entry = self.current.as_ref().and_then(|e| e.next());
        self.current = entry;
        Ok(())
    }

    fn prev(&mut self) -> Result<(), IterError> {
        let entry = self.current.as_ref().and_then(|e| e.prev());
        self.current = entry;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use compaction::key::INLINE_PREFIX_BYTES;

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
    fn arena_entries_hold_the_encoded_key_and_value() {
        let m = Memtable::new();
        for (user_key, seq, kind, value) in [
            (&b"k"[..], 7, EntryKind::Put, &b"value"[..]),
            (b"", 1, EntryKind::Delete, b""),
            (
                &[0xff; 40][..],
                u64::MAX >> 8,
                EntryKind::Put,
                &[1u8; 300_000][..],
            ),
        ] {
            let built = m.entry(user_key, seq, kind, value);
            let owned = MemtableEntry::new(user_key, seq, kind, value);
            assert_eq!(built.internal_key(), key::encode(user_key, seq, kind));
            assert_eq!(built.internal_key(), owned.internal_key());
            assert_eq!((built.user_key(), built.value()), (user_key, value));
            assert_eq!(built.seq(), seq);
            assert_eq!(built.cmp(&owned), Ordering::Equal);
        }
    }

    /// A search visits one node per level; a node's entry should not spill into a second
    /// cache line by itself.
    #[test]
    fn entries_stay_within_a_cache_line() {
        assert!(std::mem::size_of::<MemtableEntry>() <= 64);
    }

    /// Every ordered pair of `user_keys` (two versions each, both kinds) compares as
    /// `compare_internal` compares their internal keys.
    fn assert_entry_order_agrees(user_keys: &[Vec<u8>]) {
        let mut entries = Vec::new();
        for (index, user_key) in user_keys.iter().enumerate() {
            for seq in [1, 5] {
                let kind = if index % 2 == 0 {
                    EntryKind::Put
                } else {
                    EntryKind::Delete
                };
                entries.push(MemtableEntry::new(user_key, seq + index as u64, kind, b"v"));
            }
            // A search probe compares as the entry it was made from.
            entries.push(MemtableEntry::search_probe(&key::seek_key(user_key, 3)));
        }
        for a in &entries {
            for b in &entries {
                assert_eq!(
                    a.cmp(b),
                    compare_internal(a.internal_key(), b.internal_key()),
                    "{:?} vs {:?}",
                    a.internal_key(),
                    b.internal_key()
                );
            }
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
