//! Where a compaction cuts its output into files.
//!
//! Files are cut only between user keys, never between two versions of one key: levels below
//! L0 promise that no user key spans two files. Past the target size the splitter waits for
//! an item-collection boundary (the caller's prefix function changes value), so a collection
//! usually lives in one file and its reads touch one file; at twice the target it cuts at the
//! next user key regardless, so one huge collection cannot make one huge file.

use crate::key::TRAILER_LEN;

/// Decides, entry by entry, when the current output file is full.
#[derive(Debug, Clone)]
pub struct OutputSplitter {
    target_bytes: u64,
    collection_prefix: fn(&[u8]) -> &[u8],
    current_file_bytes: u64,
    last_user_key: Vec<u8>,
}

impl OutputSplitter {
    /// A splitter aiming at files of `target_bytes` (at least 1), cutting preferably where
    /// `collection_prefix(user_key)` changes.
    pub fn new(target_bytes: u64, collection_prefix: fn(&[u8]) -> &[u8]) -> OutputSplitter {
        OutputSplitter {
            target_bytes: target_bytes.max(1),
            collection_prefix,
            current_file_bytes: 0,
            last_user_key: Vec::new(),
        }
    }

    /// Called for every entry, in order, before it is written: returns true when the current
    /// file must be finished and the entry must start a new one. The entry's `entry_bytes`
    /// (its encoded size) is then counted towards whichever file it goes to.
    pub fn starts_new_file(&mut self, internal_key: &[u8], entry_bytes: u64) -> bool {
        let user_key = &internal_key[..internal_key.len().saturating_sub(TRAILER_LEN)];
        let new_user_key = user_key != self.last_user_key.as_slice();
        let cut = self.current_file_bytes > 0
            && new_user_key
            && (self.current_file_bytes >= self.target_bytes.saturating_mul(2)
                || (self.current_file_bytes >= self.target_bytes
                    && (self.collection_prefix)(user_key)
                        != (self.collection_prefix)(&self.last_user_key)));
        if cut {
            self.current_file_bytes = 0;
        }
        self.current_file_bytes = self.current_file_bytes.saturating_add(entry_bytes);
        if new_user_key {
            self.last_user_key.clear();
            self.last_user_key.extend_from_slice(user_key);
        }
        cut
    }

    /// Bytes counted into the current file so far.
    pub fn current_file_bytes(&self) -> u64 {
        self.current_file_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{encode, EntryKind};

    /// Test layout: the collection is the first byte of the user key.
    fn first_byte(user_key: &[u8]) -> &[u8] {
        &user_key[..user_key.len().min(1)]
    }

    /// Feeds (user key, seq) entries of 10 bytes each; returns the indexes that start files.
    fn cuts(target_bytes: u64, keys: &[(&[u8], u64)]) -> Vec<usize> {
        let mut splitter = OutputSplitter::new(target_bytes, first_byte);
        keys.iter()
            .enumerate()
            .filter(|(_, (k, seq))| splitter.starts_new_file(&encode(k, *seq, EntryKind::Put), 10))
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn waits_for_a_collection_boundary_past_the_target() {
        let keys: [(&[u8], u64); 5] = [(b"a1", 1), (b"a2", 1), (b"a3", 1), (b"b1", 1), (b"b2", 1)];
        // Target 15 bytes: full after a2, but a3 is the same collection; cut before b1.
        assert_eq!(cuts(15, &keys), vec![3]);
    }

    #[test]
    fn hard_cut_at_twice_the_target_but_never_inside_a_user_key() {
        let keys: [(&[u8], u64); 6] = [
            (b"a1", 1),
            (b"a2", 1),
            (b"a3", 3),
            (b"a3", 2),
            (b"a3", 1),
            (b"a4", 1),
        ];
        // Target 10: 20 bytes reached after a2, so cut before a3; the a3 versions then fill
        // the file past 20 but stay together; the next cut is before a4.
        assert_eq!(cuts(10, &keys), vec![2, 5]);
    }

    #[test]
    fn never_cuts_before_the_first_entry_or_below_target() {
        let keys: [(&[u8], u64); 3] = [(b"a", 1), (b"b", 1), (b"c", 1)];
        assert!(cuts(1000, &keys).is_empty());
        assert_eq!(cuts(0, &keys), vec![1, 2]);
    }
}
