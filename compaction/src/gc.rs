//! Garbage collection during compaction: which versions of each key survive a rewrite.
//!
//! A reader at snapshot `s` sees, for each user key, the newest version with `seq <= s`. The
//! live snapshots `s1 < s2 < … < sn`, plus the reader of the latest state, split the sequence
//! numbers into *stripes*: stripe 0 is `[0, s1]`, stripe i is `(s_i, s_{i+1}]`, and the last
//! stripe is everything newer than `sn`. Every reader sees the same version of a key as the
//! reader at the top of its stripe, so within a stripe only the newest version of each key is
//! ever seen; the older ones are obsolete and dropped.
//!
//! A tombstone still hides older versions that live in lower levels, so it is kept unless the
//! compaction is *bottommost* (no lower level can hold the key) and it sits in stripe 0 (no
//! snapshot older than it exists that could see an older version this compaction keeps). This
//! is LevelDB's rule; a tombstone in a later stripe is kept even at the bottom, which costs a
//! few bytes until the snapshots below it are released.
//!
//! **A retention floor** ([`CompactionIterator::with_retention_floor`]) keeps a tree's history
//! for point-in-time recovery: every version newer than the floor is kept, as if a snapshot
//! existed at every sequence number above it, and the floor itself counts as a snapshot, so
//! the newest version at or below it stays too. A reader at any sequence number from the
//! floor up then sees exactly what it saw when that number was the latest. Tombstones above
//! the floor stay even at the bottom: a reader just below one still sees the older version.

use crate::iter::{InternalIterator, IterError};
use crate::key::{EntryKind, InternalKey};

/// What a [`CompactionIterator`] did with its input so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Entries read from the input.
    pub entries_in: u64,
    /// Entries yielded to be written.
    pub entries_out: u64,
    /// Versions dropped because a newer version hides them from every reader.
    pub obsolete_versions_dropped: u64,
    /// Tombstones dropped because nothing is left for them to hide.
    pub tombstones_dropped: u64,
}

/// Filters a merged compaction input down to the entries that must be written, forward only.
///
/// Use: `seek_to_first`, then while `valid()` write `key()`/`value()` and call `next()`.
/// Input that is not in strictly increasing internal-key order, or whose keys do not parse, is
/// reported as [`IterError::Corruption`] rather than written out.
#[derive(Debug)]
pub struct CompactionIterator<I: InternalIterator> {
    input: I,
    /// Live snapshot sequence numbers, ascending, without duplicates.
    snapshots: Vec<u64>,
    bottommost: bool,
    valid: bool,
    /// User key and (seq, kind) of the last input entry read, for stripe tracking and the
    /// order check.
    last_user_key: Vec<u8>,
    last_seq_kind: Option<(u64, EntryKind)>,
    /// Stripe of the last version of `last_user_key` that was examined (kept or dropped as a
    /// tombstone); a later version of the same key in the same stripe is obsolete.
    last_stripe: Option<usize>,
    /// Versions newer than this are all kept (module docs); `None`: no floor.
    retention_floor: Option<u64>,
    stats: GcStats,
}

impl<I: InternalIterator> CompactionIterator<I> {
    /// Filters `input` for the given live snapshots (any order; duplicates ignored).
    /// `bottommost` says no level below the output can hold any key of the input, which
    /// allows tombstones to be dropped.
    pub fn new(input: I, live_snapshot_seqs: &[u64], bottommost: bool) -> CompactionIterator<I> {
        let mut snapshots = live_snapshot_seqs.to_vec();
        snapshots.sort_unstable();
        snapshots.dedup();
        CompactionIterator {
            input,
            snapshots,
            bottommost,
            valid: false,
            last_user_key: Vec::new(),
            last_seq_kind: None,
            last_stripe: None,
            retention_floor: None,
            stats: GcStats::default(),
        }
    }

    /// Keeps every version newer than `floor`, and the newest at or below it, of each key
    /// (module docs). `None` leaves the snapshots alone in charge.
    pub fn with_retention_floor(mut self, floor: Option<u64>) -> CompactionIterator<I> {
        if let Some(floor) = floor {
            if let Err(at) = self.snapshots.binary_search(&floor) {
                self.snapshots.insert(at, floor);
            }
        }
        self.retention_floor = floor;
        self
    }

    /// Whether the iterator is on an entry to write.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The internal key to write.
    pub fn key(&self) -> &[u8] {
        debug_assert!(self.valid, "key called on an invalid iterator");
        if self.valid {
            self.input.key()
        } else {
            &[]
        }
    }

    /// The value to write.
    pub fn value(&self) -> &[u8] {
        debug_assert!(self.valid, "value called on an invalid iterator");
        if self.valid {
            self.input.value()
        } else {
            &[]
        }
    }

    /// Counts so far.
    pub fn stats(&self) -> GcStats {
        self.stats
    }

    /// Gives the input back.
    pub fn into_input(self) -> I {
        self.input
    }

    /// Starts from the beginning of the input.
    pub fn seek_to_first(&mut self) -> Result<(), IterError> {
        self.last_user_key.clear();
        self.last_seq_kind = None;
        self.last_stripe = None;
        self.stats = GcStats::default();
        let result = match self.input.seek_to_first() {
            Ok(()) => self.find_next_kept(),
            Err(e) => Err(e),
        };
        self.invalidate_on_error(result)
    }

    /// Moves to the next entry to write.
    // A fallible positioned cursor, not a `std::iter::Iterator`; named like the other cursors.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<(), IterError> {
        if !self.valid {
            return Ok(());
        }
        let result = match self.input.next() {
            Ok(()) => self.find_next_kept(),
            Err(e) => Err(e),
        };
        self.invalidate_on_error(result)
    }

    fn invalidate_on_error(&mut self, result: Result<(), IterError>) -> Result<(), IterError> {
        if result.is_err() {
            self.valid = false;
        }
        result
    }

    /// The stripe `seq` falls in: the index of the oldest snapshot that can see it, or
    /// `snapshots.len()` for versions only the latest state sees.
    fn stripe_of(&self, seq: u64) -> usize {
        self.snapshots.partition_point(|&s| s < seq)
    }

    /// Advances the input to the next entry that must be written (possibly the current one).
    fn find_next_kept(&mut self) -> Result<(), IterError> {
        self.valid = false;
        while self.input.valid() {
            let key_bytes = self.input.key();
            let entry = InternalKey::parse(key_bytes).ok_or_else(|| {
                IterError::Corruption(format!(
                    "compaction input has a malformed {}-byte internal key",
                    key_bytes.len()
                ))
            })?;
            self.stats.entries_in += 1;
            let same_user_key =
                self.last_seq_kind.is_some() && entry.user_key == self.last_user_key;
            let in_order = match self.last_seq_kind {
                None => true,
                // Same user key: versions must come newest first (equal means a duplicate,
                // which the stripe rule drops).
                Some(last) if same_user_key => (entry.seq, entry.kind) <= last,
                Some(_) => entry.user_key > self.last_user_key.as_slice(),
            };
            if !in_order {
                return Err(IterError::Corruption(format!(
                    "compaction input out of order at user key {:?} seq {}",
                    entry.user_key, entry.seq
                )));
            }
            if !same_user_key {
                self.last_user_key.clear();
                self.last_user_key.extend_from_slice(entry.user_key);
                self.last_stripe = None;
            }
            self.last_seq_kind = Some((entry.seq, entry.kind));

            if self.retention_floor.is_some_and(|floor| entry.seq > floor) {
                // Each version above the floor is its own stripe: kept, tombstone or not,
                // and the next older version is judged afresh.
                self.last_stripe = None;
                self.stats.entries_out += 1;
                self.valid = true;
                return Ok(());
            }
            let stripe = self.stripe_of(entry.seq);
            if self.last_stripe == Some(stripe) {
                self.stats.obsolete_versions_dropped += 1;
            } else {
                self.last_stripe = Some(stripe);
                if entry.kind == EntryKind::Delete && self.bottommost && stripe == 0 {
                    // Older versions of this key are in stripe 0 too and get dropped as
                    // obsolete, so nothing is left for the tombstone to hide.
                    self.stats.tombstones_dropped += 1;
                } else {
                    self.stats.entries_out += 1;
                    self.valid = true;
                    return Ok(());
                }
            }
            self.input.next()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::encode;
    use crate::vec_iter::VecIterator;

    fn entry(user_key: &[u8], seq: u64, kind: EntryKind) -> (Vec<u8>, Vec<u8>) {
        (encode(user_key, seq, kind), format!("{seq}").into_bytes())
    }

    fn run(entries: Vec<(Vec<u8>, Vec<u8>)>, snapshots: &[u64], bottommost: bool) -> Vec<Vec<u8>> {
        drain(CompactionIterator::new(
            VecIterator::new(entries),
            snapshots,
            bottommost,
        ))
    }

    fn drain<I: InternalIterator>(mut gc: CompactionIterator<I>) -> Vec<Vec<u8>> {
        gc.seek_to_first().unwrap();
        let mut out = Vec::new();
        while gc.valid() {
            out.push(gc.key().to_vec());
            gc.next().unwrap();
        }
        out
    }

    #[test]
    fn keeps_newest_version_per_stripe() {
        let entries = vec![
            entry(b"k", 1, EntryKind::Put),
            entry(b"k", 2, EntryKind::Put),
            entry(b"k", 3, EntryKind::Put),
            entry(b"k", 5, EntryKind::Put),
            entry(b"k", 6, EntryKind::Put),
        ];
        // Stripes: [0,2] (k@2), (2,5] (k@5), newer (k@6).
        let out = run(entries, &[5, 2], false);
        let expected = vec![
            encode(b"k", 6, EntryKind::Put),
            encode(b"k", 5, EntryKind::Put),
            encode(b"k", 2, EntryKind::Put),
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn tombstones_drop_only_at_the_bottom_and_below_every_snapshot() {
        let entries = vec![
            entry(b"a", 1, EntryKind::Put),
            entry(b"a", 2, EntryKind::Delete),
            entry(b"b", 3, EntryKind::Put),
            entry(b"b", 7, EntryKind::Delete),
        ];
        // Not bottommost: both tombstones must keep hiding lower levels.
        let out = run(entries.clone(), &[], false);
        assert_eq!(
            out,
            vec![
                encode(b"a", 2, EntryKind::Delete),
                encode(b"b", 7, EntryKind::Delete)
            ]
        );
        // Bottommost, no snapshots: nothing survives.
        assert!(run(entries.clone(), &[], true).is_empty());
        // Bottommost, snapshot 4 still sees b@3, so b's tombstone (stripe 1) stays.
        let out = run(entries, &[4], true);
        assert_eq!(
            out,
            vec![
                encode(b"b", 7, EntryKind::Delete),
                encode(b"b", 3, EntryKind::Put)
            ]
        );
    }

    fn run_with_floor(
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        floor: u64,
        bottommost: bool,
    ) -> Vec<Vec<u8>> {
        drain(
            CompactionIterator::new(VecIterator::new(entries), &[], bottommost)
                .with_retention_floor(Some(floor)),
        )
    }

    #[test]
    fn a_retention_floor_keeps_every_version_above_it_and_the_newest_below() {
        let entries = vec![
            entry(b"k", 1, EntryKind::Put),
            entry(b"k", 2, EntryKind::Put),
            entry(b"k", 4, EntryKind::Put),
            entry(b"k", 5, EntryKind::Delete),
            entry(b"k", 6, EntryKind::Put),
            entry(b"z", 1, EntryKind::Put),
            entry(b"z", 2, EntryKind::Delete),
        ];
        // Floor 3: k@6, k@5 (a tombstone, kept even at the bottom), k@4 above it; k@2 is the
        // newest at or below it; k@1 is hidden from every reader. z's tombstone is at or
        // below the floor and at the bottom: nothing is left for it to hide.
        let out = run_with_floor(entries.clone(), 3, true);
        assert_eq!(
            out,
            vec![
                encode(b"k", 6, EntryKind::Put),
                encode(b"k", 5, EntryKind::Delete),
                encode(b"k", 4, EntryKind::Put),
                encode(b"k", 2, EntryKind::Put),
            ]
        );
        // Without the floor, only the newest version of k survives.
        assert_eq!(
            run(entries, &[], true),
            vec![encode(b"k", 6, EntryKind::Put)]
        );
    }

    #[test]
    fn out_of_order_input_is_corruption() {
        let input = VecIterator::from_raw(vec![
            entry(b"b", 1, EntryKind::Put),
            entry(b"a", 1, EntryKind::Put),
        ]);
        let mut gc = CompactionIterator::new(input, &[], false);
        gc.seek_to_first().unwrap();
        assert!(gc.valid());
        assert!(matches!(gc.next(), Err(IterError::Corruption(_))));
        assert!(!gc.valid());

        let input = VecIterator::from_raw(vec![
            entry(b"a", 1, EntryKind::Put),
            entry(b"a", 2, EntryKind::Put),
        ]);
        let mut gc = CompactionIterator::new(input, &[], false);
        gc.seek_to_first().unwrap();
        assert!(matches!(gc.next(), Err(IterError::Corruption(_))));
    }

    #[test]
    fn counts_what_it_drops() {
        let entries = vec![
            entry(b"a", 1, EntryKind::Put),
            entry(b"a", 2, EntryKind::Put),
            entry(b"b", 3, EntryKind::Delete),
        ];
        let mut gc = CompactionIterator::new(VecIterator::new(entries), &[], true);
        gc.seek_to_first().unwrap();
        while gc.valid() {
            gc.next().unwrap();
        }
        let stats = gc.stats();
        assert_eq!(
            stats,
            GcStats {
                entries_in: 3,
                entries_out: 1,
                obsolete_versions_dropped: 1,
                tombstones_dropped: 1
            }
        );
    }
}
