//! Range reads: a cursor over one tree's live keys in a user-key range, forward or reverse,
//! at a snapshot.
//!
//! The cursor merges the tree's memtables and the SSTables whose key range overlaps the
//! requested range (`shoal_compaction::merge`), then hides versions newer than the snapshot,
//! older versions and deleted keys (`shoal_compaction::merge::UserIterator`). It holds the
//! superversion it started from, so flushes and compactions that finish meanwhile change
//! nothing it sees.

use std::ops::Bound;
use std::sync::Arc;

use shoal_compaction::InternalIterator;
use shoal_compaction::{ConcatenatingIterator, MergingIterator, UserIterator};

use crate::db::{Db, Snapshot};
use crate::error::DbError;
use crate::superversion::SuperVersion;
use crate::version::{FileMeta, TreeId};

/// Which way a range is walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// One source of a merge: a memtable's, a table's, or a level's tables' iterator.
pub(crate) type Source = Box<dyn InternalIterator + Send>;

/// Adds to `sources` those of one `level` of a tree: its `files` (the version's, in its
/// order) read through `iterators` (one per file, in the same order). L0 files overlap, so
/// each is a source of its own. A deeper level's files are disjoint (a version refuses an
/// overlap when it is built), so they are one [`ConcatenatingIterator`]: the merge then
/// compares one key per level for every entry, not one per file, and a seek reads only the
/// file whose range holds its target (`shoal_compaction::concat`).
pub(crate) fn push_level_sources(
    sources: &mut Vec<Source>,
    level: usize,
    iterators: Vec<Source>,
    files: Vec<Arc<FileMeta>>,
) {
    debug_assert_eq!(iterators.len(), files.len(), "one iterator per file");
    if level == 0 || files.len() < 2 {
        sources.extend(iterators);
    } else {
        sources.push(Box::new(ConcatenatingIterator::new(iterators, files)));
    }
}

/// An owned (user key, value) pair.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// A cursor over live (user key, value) pairs of one tree in a range.
pub struct DbIterator {
    inner: UserIterator<MergingIterator<Source>>,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    direction: Direction,
    started: bool,
    finished: bool,
    // Keeps every memtable and table of the read alive for the cursor's lifetime.
    _superversion: Arc<SuperVersion>,
}

impl DbIterator {
    /// Moves to the next key in range (the first one on the first call). Returns false when
    /// the range is exhausted.
    pub fn advance(&mut self) -> Result<bool, DbError> {
        if self.finished {
            return Ok(false);
        }
        if self.started {
            match self.direction {
                Direction::Forward => self.inner.next()?,
                Direction::Reverse => self.inner.prev()?,
            }
        } else {
            self.started = true;
            self.position()?;
        }
        if !self.inner.valid() || !self.in_range(self.inner.user_key()) {
            self.finished = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn position(&mut self) -> Result<(), DbError> {
        match self.direction {
            Direction::Forward => match &self.lower {
                Bound::Unbounded => self.inner.seek_to_first()?,
                Bound::Included(key) => self.inner.seek(key)?,
                Bound::Excluded(key) => {
                    self.inner.seek(key)?;
                    if self.inner.valid() && self.inner.user_key() == key.as_slice() {
                        self.inner.next()?;
                    }
                }
            },
            Direction::Reverse => match &self.upper {
                Bound::Unbounded => self.inner.seek_to_last()?,
                Bound::Included(key) => self.inner.seek_for_prev(key)?,
                Bound::Excluded(key) => {
                    self.inner.seek_for_prev(key)?;
                    if self.inner.valid() && self.inner.user_key() == key.as_slice() {
                        self.inner.prev()?;
                    }
                }
            },
        }
        Ok(())
    }

    /// Whether `key` is inside the bound the cursor walks towards.
    fn in_range(&self, key: &[u8]) -> bool {
        match self.direction {
            Direction::Forward => match &self.upper {
                Bound::Unbounded => true,
                Bound::Included(upper) => key <= upper.as_slice(),
                Bound::Excluded(upper) => key < upper.as_slice(),
            },
            Direction::Reverse => match &self.lower {
                Bound::Unbounded => true,
                Bound::Included(lower) => key >= lower.as_slice(),
                Bound::Excluded(lower) => key > lower.as_slice(),
            },
        }
    }

    /// The current user key (valid after `advance` returned true).
    pub fn key(&self) -> &[u8] {
        self.inner.user_key()
    }

    /// The current value (valid after `advance` returned true).
    pub fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

fn bound_key(bound: &Bound<&[u8]>) -> Option<Vec<u8>> {
    match bound {
        Bound::Included(k) | Bound::Excluded(k) => Some(k.to_vec()),
        Bound::Unbounded => None,
    }
}

fn owned(bound: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Db {
    /// A cursor over every live key of `tree`, in key order, as of `snapshot`: the walk of
    /// whole-tree passes (statistics, checks). It reads each table once, front to back, and
    /// releases the pages it has passed from the process's resident memory
    /// ([`crate::sstable::TableIterator::releasing_behind`]): otherwise every page of every
    /// table would stay resident once read (a check of 1,000,000 items, 2.5 GB of tables,
    /// peaked at 1.6 GB of RSS), though the kernel could drop them. Other reads keep their pages mapped.
    pub fn iter_tree(&self, tree: TreeId, snapshot: &Snapshot) -> Result<DbIterator, DbError> {
        self.iter_with(
            tree,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            Some(snapshot),
            true,
        )
    }

    /// [`Db::iter_tree`] within (`lower`, `upper`): one part of a whole-tree pass split
    /// over threads (an export's workers), releasing the pages it has passed likewise.
    pub fn iter_tree_range(
        &self,
        tree: TreeId,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        snapshot: &Snapshot,
    ) -> Result<DbIterator, DbError> {
        self.iter_with(tree, lower, upper, Direction::Forward, Some(snapshot), true)
    }

    /// A cursor over the live keys of `tree` within (`lower`, `upper`), walked in
    /// `direction`, as of `snapshot` (or now).
    pub fn iter(
        &self,
        tree: TreeId,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
        snapshot: Option<&Snapshot>,
    ) -> Result<DbIterator, DbError> {
        self.iter_with(tree, lower, upper, direction, snapshot, false)
    }

    /// [`Db::iter`], its tables' iterators releasing behind them if `release_behind`.
    fn iter_with(
        &self,
        tree: TreeId,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
        snapshot: Option<&Snapshot>,
        release_behind: bool,
    ) -> Result<DbIterator, DbError> {
        // One consistent (sequence number, superversion) pair: see `Db::read_view` for why
        // loading them separately could miss a version a compaction just dropped.
        let (seq, sv) = self.read_view(snapshot);
        let mems = sv.memtables.get(&tree).ok_or(DbError::UnknownTree(tree))?;
        let mut sources: Vec<Source> = mems
            .newest_first()
            .map(|m| Box::new(m.iter()) as Source)
            .collect();
        let (lo, hi) = (bound_key(&lower), bound_key(&upper));
        for (level, files) in
            sv.version
                .files_for_range_by_level(tree, lo.as_deref(), hi.as_deref())
        {
            let mut iterators = Vec::with_capacity(files.len());
            let mut bounds = Vec::with_capacity(files.len());
            for file in files {
                match sv.tables.get(&file.number) {
                    Some(table) if release_behind => {
                        iterators.push(Box::new(table.iter().releasing_behind()) as Source)
                    }
                    Some(table) => iterators.push(Box::new(table.iter())),
                    None => {
                        debug_assert!(
                            false,
                            "version names file {} with no open table",
                            file.number
                        );
                        continue;
                    }
                }
                bounds.push(file);
            }
            push_level_sources(&mut sources, level, iterators, bounds);
        }
        Ok(DbIterator {
            inner: UserIterator::new(MergingIterator::new(sources), seq),
            lower: owned(lower),
            upper: owned(upper),
            direction,
            started: false,
            finished: false,
            _superversion: sv,
        })
    }

    /// Collects up to `limit` live (key, value) pairs of a range; a convenience for tests
    /// and small reads.
    pub fn scan(
        &self,
        tree: TreeId,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
        snapshot: Option<&Snapshot>,
        limit: usize,
    ) -> Result<Vec<KeyValue>, DbError> {
        let mut iter = self.iter(tree, lower, upper, direction, snapshot)?;
        let mut out = Vec::new();
        while out.len() < limit && iter.advance()? {
            out.push((iter.key().to_vec(), iter.value().to_vec()));
        }
        Ok(out)
    }
}
