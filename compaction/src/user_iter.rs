//! The reader's view of a tree at a snapshot: one value per user key, deleted keys hidden.
//!
//! [`UserIterator`] sits on a merged [`InternalIterator`] (every version of every key, newest
//! version of a key first) and shows, for a snapshot sequence number, only the newest version
//! of each user key whose sequence number is <= the snapshot, skipping keys whose newest
//! visible version is a tombstone.
//!
//! Forward this is easy: the first visible version met for a user key is its newest. Backward
//! the versions of a user key arrive oldest first, so the iterator walks past all of them,
//! remembering the newest visible one (copying its key and value), and only emits once it meets
//! a smaller user key; the inner cursor then rests on that smaller key's last entry. This is
//! LevelDB's `DBIter` scheme.

use crate::iter::{InternalIterator, IterError};
use crate::key::{encode, seek_key, EntryKind, InternalKey, SEQ_MAX};

/// Which way the iterator last moved; decides where the inner cursor rests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// The inner cursor is on the entry being shown.
    Forward,
    /// The inner cursor is before every entry of the user key being shown (key and value are
    /// copies).
    Reverse,
}

/// Newest-visible-version view of an internal iterator at one snapshot.
///
/// All moves return the inner iterator's errors; an error leaves the iterator invalid until it
/// is positioned again. `next` and `prev` may be mixed freely; on an invalid iterator they do
/// nothing.
#[derive(Debug)]
pub struct UserIterator<I: InternalIterator> {
    inner: I,
    snapshot_seq: u64,
    direction: Direction,
    valid: bool,
    /// The current user key (forward: also the key whose older versions are being skipped).
    user_key: Vec<u8>,
    /// The current value, only kept in reverse (forward reads it from the inner cursor).
    reverse_value: Vec<u8>,
}

fn parse(internal_key: &[u8]) -> Result<InternalKey<'_>, IterError> {
    InternalKey::parse(internal_key).ok_or_else(|| {
        IterError::Corruption(format!(
            "malformed internal key of {} bytes (short trailer or unknown kind)",
            internal_key.len()
        ))
    })
}

impl<I: InternalIterator> UserIterator<I> {
    /// Views `inner` at `snapshot_seq` (values with a larger sequence number are invisible).
    /// The result is unpositioned until a seek.
    pub fn new(inner: I, snapshot_seq: u64) -> UserIterator<I> {
        UserIterator {
            inner,
            snapshot_seq: snapshot_seq.min(SEQ_MAX),
            direction: Direction::Forward,
            valid: false,
            user_key: Vec::new(),
            reverse_value: Vec::new(),
        }
    }

    /// The snapshot this view reads at.
    pub fn snapshot_seq(&self) -> u64 {
        self.snapshot_seq
    }

    /// Gives the inner iterator back.
    pub fn into_inner(self) -> I {
        self.inner
    }

    /// Whether the iterator is on a visible user key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key (empty when invalid).
    pub fn user_key(&self) -> &[u8] {
        debug_assert!(self.valid, "user_key called on an invalid iterator");
        &self.user_key
    }

    /// The current value (empty when invalid).
    pub fn value(&self) -> &[u8] {
        debug_assert!(self.valid, "value called on an invalid iterator");
        match (self.valid, self.direction) {
            (false, _) => &[],
            (true, Direction::Forward) => self.inner.value(),
            (true, Direction::Reverse) => &self.reverse_value,
        }
    }

    /// Positions on the first visible user key.
    pub fn seek_to_first(&mut self) -> Result<(), IterError> {
        let result = self.seek_to_first_inner();
        self.invalidate_on_error(result)
    }

    /// Positions on the last visible user key.
    pub fn seek_to_last(&mut self) -> Result<(), IterError> {
        let result = self.seek_to_last_inner();
        self.invalidate_on_error(result)
    }

    /// Positions on the first visible user key >= `user_key_lower`.
    pub fn seek(&mut self, user_key_lower: &[u8]) -> Result<(), IterError> {
        let result = self.seek_inner(user_key_lower);
        self.invalidate_on_error(result)
    }

    /// Positions on the last visible user key <= `user_key_upper`.
    pub fn seek_for_prev(&mut self, user_key_upper: &[u8]) -> Result<(), IterError> {
        let result = self.seek_for_prev_inner(user_key_upper);
        self.invalidate_on_error(result)
    }

    /// Moves to the next visible user key.
    // A positioned cursor that can fail is not a `std::iter::Iterator`; the name mirrors
    // `InternalIterator::next`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<(), IterError> {
        let result = self.next_inner();
        self.invalidate_on_error(result)
    }

    /// Moves to the previous visible user key.
    pub fn prev(&mut self) -> Result<(), IterError> {
        let result = self.prev_inner();
        self.invalidate_on_error(result)
    }

    fn invalidate_on_error(&mut self, result: Result<(), IterError>) -> Result<(), IterError> {
        if result.is_err() {
            self.valid = false;
        }
        result
    }

    fn seek_to_first_inner(&mut self) -> Result<(), IterError> {
        self.direction = Direction::Forward;
        self.inner.seek_to_first()?;
        self.find_next_visible(false)
    }

    fn seek_to_last_inner(&mut self) -> Result<(), IterError> {
        self.direction = Direction::Reverse;
        self.inner.seek_to_last()?;
        self.find_prev_visible()
    }

    fn seek_inner(&mut self, user_key_lower: &[u8]) -> Result<(), IterError> {
        self.direction = Direction::Forward;
        // Versions newer than the snapshot sort before this key, so the seek skips them.
        self.inner
            .seek(&seek_key(user_key_lower, self.snapshot_seq))?;
        self.find_next_visible(false)
    }

    fn seek_for_prev_inner(&mut self, user_key_upper: &[u8]) -> Result<(), IterError> {
        self.direction = Direction::Reverse;
        // (key, seq 0, Delete) is the last internal key any version of `user_key_upper` can have.
        self.inner
            .seek_for_prev(&encode(user_key_upper, 0, EntryKind::Delete))?;
        self.find_prev_visible()
    }

    fn next_inner(&mut self) -> Result<(), IterError> {
        if !self.valid {
            return Ok(());
        }
        match self.direction {
            Direction::Forward => self.inner.next()?,
            Direction::Reverse => {
                // The inner cursor is before the current key: jump past all of its versions.
                self.direction = Direction::Forward;
                self.inner
                    .seek(&encode(&self.user_key, 0, EntryKind::Delete))?;
            }
        }
        self.find_next_visible(true)
    }

    fn prev_inner(&mut self) -> Result<(), IterError> {
        if !self.valid {
            return Ok(());
        }
        if self.direction == Direction::Forward {
            // The inner cursor is on the current key: jump before all of its versions.
            self.direction = Direction::Reverse;
            self.inner
                .seek_for_prev(&encode(&self.user_key, SEQ_MAX, EntryKind::Put))?;
            while self.inner.valid() && parse(self.inner.key())?.user_key == self.user_key {
                self.inner.prev()?;
            }
        }
        self.find_prev_visible()
    }

    /// Moves the inner cursor forward to the newest visible `Put` of the next user key whose
    /// newest visible version is a `Put`. With `skip_current`, versions of `self.user_key` are
    /// skipped first (they are older versions of a key already shown).
    fn find_next_visible(&mut self, skip_current: bool) -> Result<(), IterError> {
        self.valid = false;
        let mut skipping = skip_current;
        while self.inner.valid() {
            let entry = parse(self.inner.key())?;
            let already_decided = skipping && entry.user_key == self.user_key.as_slice();
            if entry.seq <= self.snapshot_seq && !already_decided {
                self.user_key.clear();
                self.user_key.extend_from_slice(entry.user_key);
                match entry.kind {
                    EntryKind::Put => {
                        self.valid = true;
                        return Ok(());
                    }
                    // The key is deleted at this snapshot: skip its older versions too.
                    EntryKind::Delete => skipping = true,
                }
            }
            self.inner.next()?;
        }
        Ok(())
    }

    /// Moves the inner cursor backward past the previous user key whose newest visible version
    /// is a `Put`, copying that key and value.
    fn find_prev_visible(&mut self) -> Result<(), IterError> {
        self.valid = false;
        // Kind of the newest visible version seen so far of the candidate `self.user_key`.
        let mut newest_kind = EntryKind::Delete;
        while self.inner.valid() {
            let entry = parse(self.inner.key())?;
            if entry.seq <= self.snapshot_seq {
                if newest_kind == EntryKind::Put && entry.user_key < self.user_key.as_slice() {
                    // Every version of the candidate has been seen; it is the answer.
                    break;
                }
                newest_kind = entry.kind;
                self.user_key.clear();
                self.reverse_value.clear();
                if entry.kind == EntryKind::Put {
                    self.user_key.extend_from_slice(entry.user_key);
                    self.reverse_value.extend_from_slice(self.inner.value());
                }
            }
            self.inner.prev()?;
        }
        self.valid = newest_kind == EntryKind::Put;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::encode;
    use crate::vec_iter::VecIterator;

    fn entry(user_key: &[u8], seq: u64, kind: EntryKind) -> (Vec<u8>, Vec<u8>) {
        let value = match kind {
            EntryKind::Put => format!("{}@{seq}", String::from_utf8_lossy(user_key)).into_bytes(),
            EntryKind::Delete => Vec::new(),
        };
        (encode(user_key, seq, kind), value)
    }

    /// a: put@1, put@4 · b: put@2, delete@5 · c: delete@3, put@6
    fn sample(snapshot_seq: u64) -> UserIterator<VecIterator> {
        let inner = VecIterator::new(vec![
            entry(b"a", 1, EntryKind::Put),
            entry(b"a", 4, EntryKind::Put),
            entry(b"b", 2, EntryKind::Put),
            entry(b"b", 5, EntryKind::Delete),
            entry(b"c", 3, EntryKind::Delete),
            entry(b"c", 6, EntryKind::Put),
        ]);
        UserIterator::new(inner, snapshot_seq)
    }

    fn forward(it: &mut UserIterator<VecIterator>) -> Vec<String> {
        it.seek_to_first().unwrap();
        let mut out = Vec::new();
        while it.valid() {
            out.push(String::from_utf8(it.value().to_vec()).unwrap());
            it.next().unwrap();
        }
        out
    }

    fn backward(it: &mut UserIterator<VecIterator>) -> Vec<String> {
        it.seek_to_last().unwrap();
        let mut out = Vec::new();
        while it.valid() {
            out.push(String::from_utf8(it.value().to_vec()).unwrap());
            it.prev().unwrap();
        }
        out
    }

    #[test]
    fn shows_newest_visible_version_per_snapshot() {
        assert_eq!(forward(&mut sample(6)), ["a@4", "c@6"]);
        assert_eq!(backward(&mut sample(6)), ["c@6", "a@4"]);
        assert_eq!(forward(&mut sample(4)), ["a@4", "b@2"]);
        assert_eq!(backward(&mut sample(4)), ["b@2", "a@4"]);
        assert_eq!(forward(&mut sample(2)), ["a@1", "b@2"]);
        assert_eq!(backward(&mut sample(2)), ["b@2", "a@1"]);
        assert!(forward(&mut sample(0)).is_empty());
        assert!(backward(&mut sample(0)).is_empty());
    }

    #[test]
    fn seeks_by_user_key_and_switch_direction() {
        let mut it = sample(6);
        it.seek(b"b").unwrap();
        assert_eq!(it.user_key(), b"c");
        it.prev().unwrap();
        assert_eq!((it.user_key(), it.value()), (&b"a"[..], &b"a@4"[..]));
        it.next().unwrap();
        assert_eq!(it.user_key(), b"c");
        it.seek_for_prev(b"bz").unwrap();
        assert_eq!(it.user_key(), b"a");
        it.next().unwrap();
        assert_eq!(it.value(), b"c@6");
        it.next().unwrap();
        assert!(!it.valid());
        it.seek_for_prev(b"").unwrap();
        assert!(!it.valid());
    }

    #[test]
    fn malformed_keys_are_corruption() {
        let inner = VecIterator::from_raw(vec![(vec![1, 2, 3], Vec::new())]);
        let mut it = UserIterator::new(inner, 10);
        assert!(matches!(it.seek_to_first(), Err(IterError::Corruption(_))));
        assert!(!it.valid());
        assert!(matches!(it.seek_to_last(), Err(IterError::Corruption(_))));
    }
}
