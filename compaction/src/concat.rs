//! Concatenation: the files of one level below L0, which hold disjoint key ranges, seen as one
//! sorted source.
//!
//! [`crate::MergingIterator`] finds each next entry by comparing every child's current key,
//! so its cost per entry grows with the number of children. A compaction into a level holding
//! 25 files that the job's inputs all overlap (random keys make every L0 file span the key
//! range) would compare 25 keys per entry for files of which only one can hold the next key.
//! Given each level as one [`ConcatenatingIterator`], the merge compares one key per level,
//! plus one per L0 file (L0 files overlap, so each stays a child of its own).
//!
//! Reads use it too: a page of a Scan, or a Query whose range spans many files, merged one
//! source per file, and its first seek asked every file of every level for its first key at
//! or after the start; with each child's key range known ([`FileBounds`]), a seek asks only
//! the one file of each level whose range holds the target.
//!
//! The children must be in ascending key order with disjoint ranges: every internal key of a
//! child sorts before every internal key of the next, as the bounds given say. The caller
//! guarantees it (the engine's version refuses overlapping files in a level when it is
//! built), and [`ConcatenatingIterator::new`] debug-asserts it; a violation would make the
//! source yield keys out of order, which a merge would write into a file as if sorted.

use std::cmp::Ordering;

use crate::iter::{InternalIterator, IterError};
use crate::key::compare_internal;

/// The smallest and largest internal keys of a child (a file's, from its metadata).
pub trait FileBounds {
    fn smallest_key(&self) -> &[u8];
    fn largest_key(&self) -> &[u8];
}

impl<B: FileBounds + ?Sized> FileBounds for std::sync::Arc<B> {
    fn smallest_key(&self) -> &[u8] {
        (**self).smallest_key()
    }
    fn largest_key(&self) -> &[u8] {
        (**self).largest_key()
    }
}

/// (smallest, largest) internal keys.
impl FileBounds for (Vec<u8>, Vec<u8>) {
    fn smallest_key(&self) -> &[u8] {
        &self.0
    }
    fn largest_key(&self) -> &[u8] {
        &self.1
    }
}

/// Children in ascending, disjoint key order, walked one after the other.
#[derive(Debug)]
pub struct ConcatenatingIterator<I: InternalIterator, B: FileBounds> {
    children: Vec<I>,
    /// Each child's key range, in the same order.
    bounds: Vec<B>,
    /// The child holding the current entry; `children.len()` when exhausted or unpositioned.
    current: usize,
}

/// Whether files with these bounds, in this order, are sorted and disjoint: each file's
/// smallest key is not above its largest, and each file's largest key sorts strictly before
/// the next file's smallest.
fn in_order_and_disjoint<B: FileBounds>(bounds: &[B]) -> bool {
    let mut previous_largest: Option<&[u8]> = None;
    for bound in bounds {
        let (smallest, largest) = (bound.smallest_key(), bound.largest_key());
        if compare_internal(smallest, largest) == Ordering::Greater {
            return false;
        }
        if previous_largest.is_some_and(|previous| compare_internal(previous, smallest).is_ge()) {
            return false;
        }
        previous_largest = Some(largest);
    }
    true
}

impl<I: InternalIterator, B: FileBounds> ConcatenatingIterator<I, B> {
    /// Walks `children` in order, whose key ranges are `bounds`; they must be sorted and
    /// disjoint (module docs). The result is unpositioned until a seek.
    pub fn new(children: Vec<I>, bounds: Vec<B>) -> ConcatenatingIterator<I, B> {
        assert_eq!(children.len(), bounds.len(), "one range per child");
        debug_assert!(
            in_order_and_disjoint(&bounds),
            "children out of order or overlapping"
        );
        let current = children.len();
        ConcatenatingIterator {
            children,
            bounds,
            current,
        }
    }

    /// Runs a positioning step; on an error the cursor is left invalid, so no stale entry is
    /// exposed.
    fn positioned(
        &mut self,
        step: impl FnOnce(&mut Self) -> Result<(), IterError>,
    ) -> Result<(), IterError> {
        let result = step(self);
        if result.is_err() {
            self.current = self.children.len();
        }
        result
    }

    /// From child `from` on, the first child with an entry after `seek_to_first`.
    fn first_from(&mut self, from: usize) -> Result<(), IterError> {
        self.current = from;
        while self.current < self.children.len() {
            let child = &mut self.children[self.current];
            child.seek_to_first()?;
            if child.valid() {
                return Ok(());
            }
            self.current += 1;
        }
        Ok(())
    }

    /// From child `from` down to the first, the first child with an entry after
    /// `seek_to_last`; `None` for `from` means there is none.
    fn last_from(&mut self, from: Option<usize>) -> Result<(), IterError> {
        let mut index = from;
        while let Some(at) = index {
            let child = &mut self.children[at];
            child.seek_to_last()?;
            if child.valid() {
                self.current = at;
                return Ok(());
            }
            index = at.checked_sub(1);
        }
        self.current = self.children.len();
        Ok(())
    }
}

impl<I: InternalIterator, B: FileBounds> InternalIterator for ConcatenatingIterator<I, B> {
    fn valid(&self) -> bool {
        self.children
            .get(self.current)
            .is_some_and(|child| child.valid())
    }

    fn key(&self) -> &[u8] {
        self.children[self.current].key()
    }

    fn value(&self) -> &[u8] {
        self.children[self.current].value()
    }

    fn seek_to_first(&mut self) -> Result<(), IterError> {
        self.positioned(|this| this.first_from(0))
    }

    fn seek_to_last(&mut self) -> Result<(), IterError> {
        self.positioned(|this| this.last_from(this.children.len().checked_sub(1)))
    }

    /// Only the first child whose largest key is at or after `target` is sought; every
    /// child before it ends before `target`.
    fn seek(&mut self, target: &[u8]) -> Result<(), IterError> {
        self.positioned(|this| {
            let at = this
                .bounds
                .partition_point(|bound| compare_internal(bound.largest_key(), target).is_lt());
            let Some(child) = this.children.get_mut(at) else {
                this.current = this.children.len();
                return Ok(());
            };
            child.seek(target)?;
            if child.valid() {
                this.current = at;
                return Ok(());
            }
            this.first_from(at + 1)
        })
    }

    /// Only the last child whose smallest key is at or before `target` is sought; every
    /// child after it starts after `target`.
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<(), IterError> {
        self.positioned(|this| {
            let after = this
                .bounds
                .partition_point(|bound| compare_internal(bound.smallest_key(), target).is_le());
            let Some(at) = after.checked_sub(1) else {
                this.current = this.children.len();
                return Ok(());
            };
            let child = &mut this.children[at];
            child.seek_for_prev(target)?;
            if child.valid() {
                this.current = at;
                return Ok(());
            }
            this.last_from(at.checked_sub(1))
        })
    }

    fn next(&mut self) -> Result<(), IterError> {
        debug_assert!(self.valid(), "next on an invalid concatenation");
        if !self.valid() {
            return Ok(());
        }
        self.positioned(|this| {
            let child = &mut this.children[this.current];
            child.next()?;
            if child.valid() {
                return Ok(());
            }
            this.first_from(this.current + 1)
        })
    }

    fn prev(&mut self) -> Result<(), IterError> {
        debug_assert!(self.valid(), "prev on an invalid concatenation");
        if !self.valid() {
            return Ok(());
        }
        self.positioned(|this| {
            let child = &mut this.children[this.current];
            child.prev()?;
            if child.valid() {
                return Ok(());
            }
            this.last_from(this.current.checked_sub(1))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{encode, EntryKind};
    use crate::merge::MergingIterator;
    use crate::vec_iter::VecIterator;

    fn put(key: &[u8], seq: u64) -> (Vec<u8>, Vec<u8>) {
        let mut value = key.to_vec();
        value.extend_from_slice(format!("@{seq}").as_bytes());
        (encode(key, seq, EntryKind::Put), value)
    }

    type Level = ConcatenatingIterator<VecIterator, (Vec<u8>, Vec<u8>)>;

    /// A level of `files`, each given as its entries.
    fn level(files: Vec<Vec<(Vec<u8>, Vec<u8>)>>) -> Level {
        let files: Vec<VecIterator> = files.into_iter().map(VecIterator::new).collect();
        let bounds = files.iter().filter_map(VecIterator::bounds).collect();
        ConcatenatingIterator::new(files, bounds)
    }

    fn files() -> Level {
        level(vec![
            vec![put(b"a", 3), put(b"a", 1), put(b"c", 2)],
            vec![put(b"e", 9), put(b"g", 4)],
            vec![put(b"k", 5)],
        ])
    }

    fn forward(it: &mut impl InternalIterator) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        while it.valid() {
            seen.push(it.value().to_vec());
            it.next().unwrap();
        }
        seen
    }

    fn backward(it: &mut impl InternalIterator) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        while it.valid() {
            seen.push(it.value().to_vec());
            it.prev().unwrap();
        }
        seen
    }

    fn values(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|v| v.as_bytes().to_vec()).collect()
    }

    #[test]
    fn walks_the_children_one_after_the_other_both_ways() {
        let mut it = files();
        assert!(!it.valid(), "unpositioned until a seek");
        it.seek_to_first().unwrap();
        assert_eq!(
            forward(&mut it),
            values(&["a@3", "a@1", "c@2", "e@9", "g@4", "k@5"])
        );
        it.seek_to_last().unwrap();
        assert_eq!(
            backward(&mut it),
            values(&["k@5", "g@4", "e@9", "c@2", "a@1", "a@3"])
        );
    }

    #[test]
    fn seeks_land_in_the_child_that_holds_the_target() {
        let mut it = files();
        // Past the end of the first child: the next child's first entry.
        it.seek(&encode(b"d", 100, EntryKind::Put)).unwrap();
        assert_eq!(it.value(), b"e@9");
        // Between two versions of one key: the older version, in the same child.
        it.seek(&encode(b"a", 2, EntryKind::Put)).unwrap();
        assert_eq!(it.value(), b"a@1");
        it.seek(&encode(b"z", 1, EntryKind::Put)).unwrap();
        assert!(!it.valid());
        it.seek_for_prev(&encode(b"f", 1, EntryKind::Put)).unwrap();
        assert_eq!(it.value(), b"e@9");
        it.seek_for_prev(&encode(b"j", 1, EntryKind::Put)).unwrap();
        assert_eq!(it.value(), b"g@4");
        it.seek_for_prev(&encode(b"a", 5, EntryKind::Put)).unwrap();
        assert!(!it.valid(), "nothing at or before a@5");
    }

    #[test]
    fn a_merge_over_levels_equals_a_merge_over_their_files() {
        // L0 (one file overlapping everything) over a level of three files: the same entries
        // in the same order whether the level is one concatenated child or three.
        let l0 = || VecIterator::new(vec![put(b"a", 20), put(b"f", 21), put(b"k", 22)]);
        let mut by_file: Vec<VecIterator> = vec![l0()];
        by_file.extend(files().children);
        let mut by_file = MergingIterator::new(by_file);
        by_file.seek_to_first().unwrap();
        let mut by_level = MergingIterator::new(vec![
            Box::new(l0()) as Box<dyn InternalIterator>,
            Box::new(files()),
        ]);
        by_level.seek_to_first().unwrap();
        let expected = forward(&mut by_file);
        assert_eq!(expected.len(), 9);
        assert_eq!(forward(&mut by_level), expected);
    }

    #[test]
    fn no_children_is_always_invalid() {
        let mut it = level(Vec::new());
        it.seek_to_first().unwrap();
        assert!(!it.valid());
        it.seek_to_last().unwrap();
        assert!(!it.valid());
        it.seek(&encode(b"a", 1, EntryKind::Put)).unwrap();
        assert!(!it.valid());
    }

    #[test]
    fn order_check_accepts_sorted_disjoint_ranges_only() {
        let key = |k: &[u8], seq| encode(k, seq, EntryKind::Put);
        let check = |ranges: &[(&[u8], u64, &[u8], u64)]| {
            let bounds: Vec<(Vec<u8>, Vec<u8>)> = ranges
                .iter()
                .map(|&(smallest, s, largest, l)| (key(smallest, s), key(largest, l)))
                .collect();
            in_order_and_disjoint(&bounds)
        };
        assert!(check(&[(b"a", 3, b"c", 2), (b"e", 9, b"g", 4)]));
        assert!(check(&[]));
        // Out of order, overlapping, or one file's smallest above its largest: refused.
        assert!(!check(&[(b"e", 9, b"g", 4), (b"a", 3, b"c", 2)]));
        assert!(!check(&[(b"a", 3, b"e", 9), (b"c", 2, b"g", 4)]));
        assert!(!check(&[(b"c", 2, b"a", 3)]));
        // Two files sharing a boundary key (a user key split between files) overlap in
        // user keys but not in internal keys: in order, as a level may never hold them, but
        // the concatenation itself stays sorted.
        assert!(check(&[(b"a", 3, b"c", 5), (b"c", 1, b"g", 4)]));
        assert!(!check(&[(b"a", 3, b"c", 1), (b"c", 5, b"g", 4)]));
    }

    #[test]
    fn a_seek_asks_only_the_child_whose_range_holds_the_target() {
        let mut it = level(
            (0..100u32)
                .map(|i| vec![put(format!("k{i:03}").as_bytes(), 1)])
                .collect(),
        );
        let seeks = |it: &Level| it.children.iter().map(VecIterator::seeks).sum::<u64>();
        it.seek(&encode(b"k042", 5, EntryKind::Put)).unwrap();
        assert_eq!(it.value(), b"k042@1");
        assert_eq!(seeks(&it), 1);
        it.seek_for_prev(&encode(b"k0425", 5, EntryKind::Put))
            .unwrap();
        assert_eq!(it.value(), b"k042@1");
        assert_eq!(seeks(&it), 2);
        // Between two files: only the next file is sought.
        it.seek(&encode(b"k0425", 5, EntryKind::Put)).unwrap();
        assert_eq!(it.value(), b"k043@1");
        assert_eq!(seeks(&it), 3);
    }
}
