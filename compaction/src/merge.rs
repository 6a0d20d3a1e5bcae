//! The k-way merge: many sorted sources seen as one sorted source.
//!
//! [`MergingIterator`] presents its children (memtables, SSTables, level iterators) as a single
//! [`InternalIterator`] in [`compare_internal`] order. It does not hide anything: every version
//! of every key in every child comes out, which is what compaction wants; reads layer
//! [`crate::UserIterator`] on top to see one value per user key at a snapshot.
//!
//! The current entry is found by a linear scan over the children's current keys. The number of
//! children is small (memtables + L0 files + one per level, typically under 20), where a scan
//! beats a heap's bookkeeping and keeps the direction switch simple.
//!
//! Unlike the bare contract, a `MergingIterator` may switch direction without re-positioning:
//! it re-seeks every child around the current key (children only ever see positioning calls
//! followed by moves in the matching direction).

use crate::iter::{InternalIterator, IterError};
use crate::key::{compare_internal, TRAILER_LEN};

/// Which way the children are currently positioned relative to the current entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Every child is on its first entry >= the current key.
    Forward,
    /// Every child is on its last entry <= the current key.
    Reverse,
}

/// A k-way merge of [`InternalIterator`]s, itself an [`InternalIterator`].
///
/// Children should not hold the same internal key twice; if they do, both copies are yielded
/// when moving one way (children earlier in the list first), and a direction switch may skip
/// the duplicate. Any error from a child is returned and leaves the merge invalid until it is
/// positioned again.
#[derive(Debug)]
pub struct MergingIterator<I: InternalIterator> {
    children: Vec<I>,
    /// Index of the child holding the current entry; `None` when exhausted or unpositioned.
    current: Option<usize>,
    direction: Direction,
    /// Copy of the current key, kept only while switching direction.
    switch_key: Vec<u8>,
}

impl<I: InternalIterator> MergingIterator<I> {
    /// Merges `children`; the result is unpositioned until a seek.
    pub fn new(children: Vec<I>) -> MergingIterator<I> {
        MergingIterator {
            children,
            current: None,
            direction: Direction::Forward,
            switch_key: Vec::new(),
        }
    }

    /// The merged sources, in the order given to [`MergingIterator::new`].
    pub fn children(&self) -> &[I] {
        &self.children
    }

    /// Gives the sources back.
    pub fn into_children(self) -> Vec<I> {
        self.children
    }

    /// Leaves the merge invalid if `result` is an error, so no stale entry is exposed.
    fn invalidate_on_error(&mut self, result: Result<(), IterError>) -> Result<(), IterError> {
        if result.is_err() {
            self.current = None;
        }
        result
    }

    /// Points `current` at the child whose key is smallest (forward) or largest (reverse).
    fn pick_current(&mut self) -> Result<(), IterError> {
        self.current = None;
        let mut best: Option<usize> = None;
        for (index, child) in self.children.iter().enumerate() {
            if !child.valid() {
                continue;
            }
            let key = child.key();
            // `compare_internal` needs a trailer; a shorter key is corrupt data from a child.
            if key.len() < TRAILER_LEN {
                return Err(IterError::Corruption(format!(
                    "merge child {index} yielded a {}-byte internal key (shorter than its trailer)",
                    key.len()
                )));
            }
            let better = match best {
                None => true,
                Some(b) => {
                    let order = compare_internal(key, self.children[b].key());
                    match self.direction {
                        Direction::Forward => order.is_lt(),
                        Direction::Reverse => order.is_gt(),
                    }
                }
            };
            if better {
                best = Some(index);
            }
        }
        self.current = best;
        Ok(())
    }

    fn seek_all(&mut self, direction: Direction, target: Option<&[u8]>) -> Result<(), IterError> {
        self.direction = direction;
        for child in &mut self.children {
            match (direction, target) {
                (Direction::Forward, None) => child.seek_to_first()?,
                (Direction::Forward, Some(t)) => child.seek(t)?,
                (Direction::Reverse, None) => child.seek_to_last()?,
                (Direction::Reverse, Some(t)) => child.seek_for_prev(t)?,
            }
        }
        self.pick_current()
    }

    /// Re-positions every child on its first entry strictly after the current key.
    fn switch_to_forward(&mut self) -> Result<(), IterError> {
        self.direction = Direction::Forward;
        for child in &mut self.children {
            child.seek(&self.switch_key)?;
            if child.valid() && compare_internal(child.key(), &self.switch_key).is_eq() {
                child.next()?;
            }
        }
        Ok(())
    }

    /// Re-positions every child on its last entry strictly before the current key.
    fn switch_to_reverse(&mut self) -> Result<(), IterError> {
        self.direction = Direction::Reverse;
        for child in &mut self.children {
            child.seek_for_prev(&self.switch_key)?;
            if child.valid() && compare_internal(child.key(), &self.switch_key).is_eq() {
                child.prev()?;
            }
        }
        Ok(())
    }

    fn step(&mut self, direction: Direction) -> Result<(), IterError> {
        let Some(current) = self.current else {
            return Ok(());
        };
        if self.direction == direction {
            if let Some(child) = self.children.get_mut(current) {
                match direction {
                    Direction::Forward => child.next()?,
                    Direction::Reverse => child.prev()?,
                }
            }
        } else {
            self.switch_key.clear();
            if let Some(child) = self.children.get(current) {
                self.switch_key.extend_from_slice(child.key());
            }
            match direction {
                Direction::Forward => self.switch_to_forward()?,
                Direction::Reverse => self.switch_to_reverse()?,
            }
        }
        self.pick_current()
    }

    fn current_child(&self) -> Option<&I> {
        debug_assert!(
            self.current.is_some(),
            "key/value called on an invalid iterator"
        );
        self.current.and_then(|i| self.children.get(i))
    }
}

impl<I: InternalIterator> InternalIterator for MergingIterator<I> {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn key(&self) -> &[u8] {
        self.current_child().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current_child().map_or(&[], |c| c.value())
    }

    fn seek_to_first(&mut self) -> Result<(), IterError> {
        let result = self.seek_all(Direction::Forward, None);
        self.invalidate_on_error(result)
    }

    fn seek_to_last(&mut self) -> Result<(), IterError> {
        let result = self.seek_all(Direction::Reverse, None);
        self.invalidate_on_error(result)
    }

    fn seek(&mut self, target: &[u8]) -> Result<(), IterError> {
        let result = self.seek_all(Direction::Forward, Some(target));
        self.invalidate_on_error(result)
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<(), IterError> {
        let result = self.seek_all(Direction::Reverse, Some(target));
        self.invalidate_on_error(result)
    }

    fn next(&mut self) -> Result<(), IterError> {
        let result = self.step(Direction::Forward);
        self.invalidate_on_error(result)
    }

    fn prev(&mut self) -> Result<(), IterError> {
        let result = self.step(Direction::Reverse);
        self.invalidate_on_error(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{encode, EntryKind};
    use crate::vec_iter::VecIterator;

    fn put(user_key: &[u8], seq: u64) -> (Vec<u8>, Vec<u8>) {
        let value = format!("{}@{seq}", String::from_utf8_lossy(user_key)).into_bytes();
        (encode(user_key, seq, EntryKind::Put), value)
    }

    fn collect_forward<I: InternalIterator>(it: &mut I) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while it.valid() {
            out.push(it.value().to_vec());
            it.next().unwrap();
        }
        out
    }

    fn sample() -> MergingIterator<VecIterator> {
        MergingIterator::new(vec![
            VecIterator::new(vec![put(b"a", 3), put(b"c", 5)]),
            VecIterator::new(vec![]),
            VecIterator::new(vec![put(b"a", 7), put(b"b", 1), put(b"c", 2)]),
        ])
    }

    #[test]
    fn forward_yields_every_version_in_internal_order() {
        let mut it = sample();
        it.seek_to_first().unwrap();
        let expected: Vec<Vec<u8>> = ["a@7", "a@3", "b@1", "c@5", "c@2"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        assert_eq!(collect_forward(&mut it), expected);
    }

    #[test]
    fn reverse_and_direction_switch() {
        let mut it = sample();
        it.seek_to_last().unwrap();
        assert_eq!(it.value(), b"c@2");
        it.prev().unwrap();
        assert_eq!(it.value(), b"c@5");
        it.prev().unwrap();
        assert_eq!(it.value(), b"b@1");
        it.next().unwrap();
        assert_eq!(it.value(), b"c@5");
        it.next().unwrap();
        assert_eq!(it.value(), b"c@2");
        it.prev().unwrap();
        assert_eq!(it.value(), b"c@5");
    }

    #[test]
    fn seeks_land_between_versions() {
        let mut it = sample();
        // Newest version of "a" visible at snapshot 5 is a@3.
        it.seek(&encode(b"a", 5, EntryKind::Put)).unwrap();
        assert_eq!(it.value(), b"a@3");
        it.seek_for_prev(&encode(b"c", 4, EntryKind::Put)).unwrap();
        assert_eq!(it.value(), b"c@5");
        it.seek_for_prev(&encode(b"a", 8, EntryKind::Put)).unwrap();
        assert!(!it.valid());
        it.seek(&encode(b"d", 8, EntryKind::Put)).unwrap();
        assert!(!it.valid());
    }

    #[test]
    fn no_children_is_always_invalid() {
        let mut it: MergingIterator<VecIterator> = MergingIterator::new(Vec::new());
        it.seek_to_first().unwrap();
        assert!(!it.valid());
        it.next().unwrap();
        it.seek_to_last().unwrap();
        assert!(!it.valid());
    }

    /// A source that fails on `next`, like an SSTable hitting a bad block.
    struct FailingOnNext(VecIterator);

    impl InternalIterator for FailingOnNext {
        fn valid(&self) -> bool {
            self.0.valid()
        }
        fn key(&self) -> &[u8] {
            self.0.key()
        }
        fn value(&self) -> &[u8] {
            self.0.value()
        }
        fn seek_to_first(&mut self) -> Result<(), IterError> {
            self.0.seek_to_first()
        }
        fn seek_to_last(&mut self) -> Result<(), IterError> {
            self.0.seek_to_last()
        }
        fn seek(&mut self, t: &[u8]) -> Result<(), IterError> {
            self.0.seek(t)
        }
        fn seek_for_prev(&mut self, t: &[u8]) -> Result<(), IterError> {
            self.0.seek_for_prev(t)
        }
        fn next(&mut self) -> Result<(), IterError> {
            Err(IterError::Corruption("bad block".into()))
        }
        fn prev(&mut self) -> Result<(), IterError> {
            self.0.prev()
        }
    }

    #[test]
    fn child_errors_are_returned_and_invalidate() {
        let mut it =
            MergingIterator::new(vec![FailingOnNext(VecIterator::new(vec![put(b"a", 1)]))]);
        it.seek_to_first().unwrap();
        assert!(it.valid());
        assert_eq!(it.next(), Err(IterError::Corruption("bad block".into())));
        assert!(!it.valid());
    }

    #[test]
    fn short_keys_are_corruption_not_panics() {
        let mut it = MergingIterator::new(vec![
            VecIterator::new(vec![put(b"a", 1)]),
            VecIterator::from_raw(vec![(b"xy".to_vec(), Vec::new())]),
        ]);
        assert!(matches!(it.seek_to_first(), Err(IterError::Corruption(_))));
        assert!(!it.valid());
    }
}
