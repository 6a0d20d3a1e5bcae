//! Versions: which SSTables make up each tree, level by level.
//!
//! A [`Version`] is an immutable snapshot of the whole database's file layout: every tree (one
//! per table, one per GSI) with its levels of SSTables, plus the counters that must survive a
//! restart (next file number, next tree id, the sequence floor for the WAL) and the table
//! layer's catalog blobs. Readers hold an `Arc<Version>`; a flush or compaction builds a new
//! one with [`Version::apply`] and the engine swaps it in after the manifest made it durable.
//!
//! # Level rules
//!
//! Every tree has exactly [`LEVELS`] levels.
//! - **L0** holds flushed memtables. Its files may overlap each other and are kept *newest
//!   first*: ordered by `seq_max` descending, ties by file number descending. Flushes of one
//!   tree cover disjoint sequence ranges, so this is the order in which their data was written,
//!   whatever order the edits arrived in.
//! - **L1 and deeper** are sorted by smallest key and must not overlap *in user keys*: the
//!   largest user key of a file is strictly below the smallest user key of the next file. So a
//!   point get reads at most one file per deeper level, and a compaction never has to pull in a
//!   neighbour to keep older versions of a key below newer ones. Compaction outputs must
//!   therefore never split the versions of one user key across two files.
//!
//! # What [`Version::apply`] guarantees
//!
//! Edits are applied in order to a copy (unchanged [`FileMeta`]s are shared through `Arc`),
//! then the whole result is checked ([`Version::check`]). Checking at the end, not per edit,
//! lets a compaction remove its inputs and add its outputs in any order. A failed apply leaves
//! the original untouched and returns a typed [`VersionError`]. Counters only move forward:
//! adding a file raises `next_file_number` past its number and `last_seq` to its `seq_max`;
//! creating a tree raises `next_tree_id`; setting a counter or a flushed seq lower than it is
//! is an error, because a reused file number or sequence number would corrupt data.
//! A trivial move (same file, deeper level) is `RemoveFile` followed by `AddFile`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use shoal_compaction::key::{compare_internal, user_key, InternalKey, SEQ_MAX};
use shoal_compaction::{FileView, LevelsView};

/// Identifies one LSM tree (a table's tree or a GSI's tree) inside the database.
pub type TreeId = u32;

/// Number of levels every tree has (L0 ..= L6).
pub const LEVELS: usize = 7;

/// Describes one SSTable file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// The file is `<dir>/<number:06>.sst`.
    pub number: u64,
    pub size_bytes: u64,
    /// Smallest internal key in the file (user key ‖ trailer).
    pub smallest_key: Vec<u8>,
    /// Largest internal key in the file (user key ‖ trailer).
    pub largest_key: Vec<u8>,
    pub entries: u64,
    pub tombstones: u64,
    pub seq_min: u64,
    pub seq_max: u64,
}

/// A level's files merge as one source (`shoal_compaction::concat`), sought by their ranges.
impl shoal_compaction::FileBounds for FileMeta {
    fn smallest_key(&self) -> &[u8] {
        &self.smallest_key
    }
    fn largest_key(&self) -> &[u8] {
        &self.largest_key
    }
}

impl FileMeta {
    /// User key of the smallest internal key.
    pub fn smallest_user_key(&self) -> &[u8] {
        user_key(&self.smallest_key)
    }

    /// User key of the largest internal key.
    pub fn largest_user_key(&self) -> &[u8] {
        user_key(&self.largest_key)
    }

    /// Whether the file's user-key range contains `key`.
    pub fn may_contain_user_key(&self, key: &[u8]) -> bool {
        self.smallest_user_key() <= key && key <= self.largest_user_key()
    }

    /// Whether the file's user-key range meets the inclusive range [`lo`, `hi`] (None = unbounded).
    pub fn overlaps_user_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let below = lo.is_some_and(|lo| self.largest_user_key() < lo);
        let above = hi.is_some_and(|hi| self.smallest_user_key() > hi);
        !below && !above
    }

    /// Checks what a file's metadata must satisfy on its own.
    fn check(&self) -> Result<(), VersionError> {
        let invalid = |detail: &str| VersionError::InvalidFile {
            number: self.number,
            detail: detail.to_string(),
        };
        if InternalKey::parse(&self.smallest_key).is_none() {
            return Err(invalid("smallest key is not an internal key"));
        }
        if InternalKey::parse(&self.largest_key).is_none() {
            return Err(invalid("largest key is not an internal key"));
        }
        if compare_internal(&self.smallest_key, &self.largest_key) == Ordering::Greater {
            return Err(invalid("smallest key is greater than largest key"));
        }
        if self.seq_min > self.seq_max || self.seq_max > SEQ_MAX {
            return Err(invalid("sequence range is empty or exceeds 56 bits"));
        }
        if self.tombstones > self.entries {
            return Err(invalid("more tombstones than entries"));
        }
        Ok(())
    }
}

/// One tree's files, level by level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeVersion {
    /// The name the table layer gave the tree (for diagnostics and the catalog).
    pub name: String,
    /// [`LEVELS`] levels. L0 newest first (may overlap); L1+ sorted by smallest key and
    /// non-overlapping in user keys.
    pub levels: Vec<Vec<Arc<FileMeta>>>,
    /// Every entry of this tree with seq <= `flushed_seq` is in an SSTable; WAL replay skips them.
    pub flushed_seq: u64,
}

impl TreeVersion {
    /// An empty tree.
    pub fn new(name: String) -> TreeVersion {
        TreeVersion {
            name,
            levels: vec![Vec::new(); LEVELS],
            flushed_seq: 0,
        }
    }

    /// Total bytes of the files in `level` (0 for a level out of range).
    pub fn level_size_bytes(&self, level: usize) -> u64 {
        self.levels
            .get(level)
            .map_or(0, |files| files.iter().map(|f| f.size_bytes).sum())
    }

    /// Every file of the tree, all levels.
    pub fn files(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.levels.iter().flatten()
    }
}

/// The whole database's file layout and durable counters at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub trees: BTreeMap<TreeId, TreeVersion>,
    /// The next SSTable number to hand out; greater than every file number in the version.
    pub next_file_number: u64,
    /// The next tree id to hand out; greater than every tree id in the version.
    pub next_tree_id: TreeId,
    /// Sequence floor for the WAL after a restart: at least every flushed seq and file seq.
    pub last_seq: u64,
    /// Opaque blobs for the table layer's catalog; changed atomically with tree creation/drop.
    pub metadata: BTreeMap<String, Vec<u8>>,
}

/// One change to a [`Version`]. A flush, compaction or DDL operation is a list of these,
/// applied and made durable all together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionEdit {
    CreateTree {
        id: TreeId,
        name: String,
    },
    /// Removes the tree and (from the version) all its files.
    DropTree {
        id: TreeId,
    },
    AddFile {
        tree: TreeId,
        level: usize,
        file: FileMeta,
    },
    RemoveFile {
        tree: TreeId,
        level: usize,
        number: u64,
    },
    SetFlushedSeq {
        tree: TreeId,
        seq: u64,
    },
    SetLastSeq(u64),
    SetNextFileNumber(u64),
    /// `None` removes the key.
    SetMetadata {
        key: String,
        value: Option<Vec<u8>>,
    },
}

/// Why a version edit (or a decoded version) is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("tree {0} does not exist")]
    UnknownTree(TreeId),
    #[error("tree {0} already exists")]
    DuplicateTree(TreeId),
    #[error("level {level} is out of range (a tree has levels 0..{LEVELS})")]
    LevelOutOfRange { level: usize },
    #[error("tree {tree} has {levels} levels instead of {LEVELS}")]
    WrongLevelCount { tree: TreeId, levels: usize },
    #[error("file {number} is not in level {level} of tree {tree}")]
    FileNotFound {
        tree: TreeId,
        level: usize,
        number: u64,
    },
    #[error("file {number} is already in the version")]
    DuplicateFile { number: u64 },
    #[error("file {number} has invalid metadata: {detail}")]
    InvalidFile { number: u64, detail: String },
    #[error("files {left} and {right} overlap in level {level} of tree {tree}")]
    Overlap {
        tree: TreeId,
        level: usize,
        left: u64,
        right: u64,
    },
    #[error("level {level} of tree {tree} is out of order at file {number}")]
    OutOfOrder {
        tree: TreeId,
        level: usize,
        number: u64,
    },
    #[error("{what} would go backwards from {current} to {requested}")]
    WentBackwards {
        what: &'static str,
        current: u64,
        requested: u64,
    },
    #[error("{what} is {counter} but the version needs at least {needed}")]
    CounterTooSmall {
        what: &'static str,
        counter: u64,
        needed: u64,
    },
}

impl Version {
    /// The version of a brand-new database: no trees, counters at their start.
    /// File numbers start at 1 so that 0 never names a file.
    pub fn empty() -> Version {
        Version {
            trees: BTreeMap::new(),
            next_file_number: 1,
            next_tree_id: 0,
            last_seq: 0,
            metadata: BTreeMap::new(),
        }
    }

    /// Applies edits to a copy (Arc-sharing unchanged FileMeta). Errors (typed) on: unknown
    /// tree, duplicate tree id, removing a file that is not there, level out of range, a file
    /// added twice, invalid file metadata, a counter moved backwards, L1+ overlap after the
    /// edits (that would corrupt reads).
    pub fn apply(&self, edits: &[VersionEdit]) -> Result<Version, VersionError> {
        let mut next = self.clone();
        let mut live = self.live_file_numbers();
        for edit in edits {
            next.apply_one(edit, &mut live)?;
        }
        next.check()?;
        Ok(next)
    }

    fn apply_one(
        &mut self,
        edit: &VersionEdit,
        live: &mut BTreeSet<u64>,
    ) -> Result<(), VersionError> {
        match edit {
            VersionEdit::CreateTree { id, name } => {
                if self.trees.contains_key(id) {
                    return Err(VersionError::DuplicateTree(*id));
                }
                self.trees.insert(*id, TreeVersion::new(name.clone()));
                self.next_tree_id = self.next_tree_id.max(id.saturating_add(1));
            }
            VersionEdit::DropTree { id } => {
                let tree = self
                    .trees
                    .remove(id)
                    .ok_or(VersionError::UnknownTree(*id))?;
                for file in tree.files() {
                    live.remove(&file.number);
                }
            }
            VersionEdit::AddFile { tree, level, file } => {
                file.check()?;
                let files = self.level_mut(*tree, *level)?;
                if live.contains(&file.number) {
                    return Err(VersionError::DuplicateFile {
                        number: file.number,
                    });
                }
                let position = if *level == 0 {
                    files.partition_point(|f| l0_order(f, file) == Ordering::Less)
                } else {
                    files.partition_point(|f| l1_order(f, file) == Ordering::Less)
                };
                files.insert(position, Arc::new(file.clone()));
                live.insert(file.number);
                self.next_file_number = self.next_file_number.max(file.number.saturating_add(1));
                self.last_seq = self.last_seq.max(file.seq_max);
            }
            VersionEdit::RemoveFile {
                tree,
                level,
                number,
            } => {
                let files = self.level_mut(*tree, *level)?;
                let index = files.iter().position(|f| f.number == *number).ok_or(
                    VersionError::FileNotFound {
                        tree: *tree,
                        level: *level,
                        number: *number,
                    },
                )?;
                files.remove(index);
                live.remove(number);
            }
            VersionEdit::SetFlushedSeq { tree, seq } => {
                let tree_version = self
                    .trees
                    .get_mut(tree)
                    .ok_or(VersionError::UnknownTree(*tree))?;
                forward("flushed seq", &mut tree_version.flushed_seq, *seq)?;
                self.last_seq = self.last_seq.max(*seq);
            }
            VersionEdit::SetLastSeq(seq) => forward("last seq", &mut self.last_seq, *seq)?,
            VersionEdit::SetNextFileNumber(number) => {
                forward("next file number", &mut self.next_file_number, *number)?
            }
            VersionEdit::SetMetadata { key, value } => match value {
                Some(value) => {
                    self.metadata.insert(key.clone(), value.clone());
                }
                None => {
                    self.metadata.remove(key);
                }
            },
        }
        Ok(())
    }

    fn level_mut(
        &mut self,
        tree: TreeId,
        level: usize,
    ) -> Result<&mut Vec<Arc<FileMeta>>, VersionError> {
        let tree_version = self
            .trees
            .get_mut(&tree)
            .ok_or(VersionError::UnknownTree(tree))?;
        tree_version
            .levels
            .get_mut(level)
            .ok_or(VersionError::LevelOutOfRange { level })
    }

    /// Checks every invariant a version must hold: level count, file metadata, unique file
    /// numbers, L0 order, L1+ order and non-overlap, counters ahead of what they cover.
    /// `apply` runs it on its result; the manifest runs it on every decoded version.
    pub fn check(&self) -> Result<(), VersionError> {
        let mut numbers = BTreeSet::new();
        for (&id, tree) in &self.trees {
            if id >= self.next_tree_id {
                return Err(VersionError::CounterTooSmall {
                    what: "next tree id",
                    counter: self.next_tree_id.into(),
                    needed: u64::from(id) + 1,
                });
            }
            if tree.levels.len() != LEVELS {
                return Err(VersionError::WrongLevelCount {
                    tree: id,
                    levels: tree.levels.len(),
                });
            }
            check_counter("last seq", self.last_seq, tree.flushed_seq)?;
            for (level, files) in tree.levels.iter().enumerate() {
                for file in files {
                    file.check()?;
                    if !numbers.insert(file.number) {
                        return Err(VersionError::DuplicateFile {
                            number: file.number,
                        });
                    }
                    check_counter(
                        "next file number",
                        self.next_file_number,
                        file.number.saturating_add(1),
                    )?;
                    check_counter("last seq", self.last_seq, file.seq_max)?;
                }
                check_level_order(id, level, files)?;
            }
        }
        Ok(())
    }

    /// Numbers of every SSTable any tree references.
    pub fn live_file_numbers(&self) -> BTreeSet<u64> {
        self.trees
            .values()
            .flat_map(|tree| tree.files().map(|f| f.number))
            .collect()
    }

    /// Files of one tree that may hold `user_key`, newest data first: all L0 files whose range
    /// holds it (newest first), then at most one file per deeper level. Unknown tree: none.
    /// Lazy and borrowing: a point read usually stops at the first file, and allocating a
    /// list of cloned `Arc`s per read showed in GetItem profiles.
    pub fn files_for_key<'v>(
        &'v self,
        tree: TreeId,
        user_key: &'v [u8],
    ) -> impl Iterator<Item = &'v Arc<FileMeta>> + 'v {
        let levels = self
            .trees
            .get(&tree)
            .map_or(&[][..], |tree| &tree.levels[..]);
        levels.iter().enumerate().flat_map(move |(level, files)| {
            let candidates: &'v [Arc<FileMeta>] = if level == 0 {
                files
            } else {
                // Sorted and non-overlapping: the only candidate is the first file whose
                // largest user key is not below the key.
                let index = files.partition_point(|f| f.largest_user_key() < user_key);
                files.get(index..index + 1).unwrap_or(&[])
            };
            candidates
                .iter()
                .filter(move |f| f.may_contain_user_key(user_key))
        })
    }

    /// Files of one tree overlapping the user-key range [`lo`, `hi`] (inclusive; None =
    /// unbounded), each level's apart: (level, files) for each level with a file in the
    /// range, L0 first with its files newest first, then each deeper level in key order.
    pub fn files_for_range_by_level(
        &self,
        tree: TreeId,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<(usize, Vec<Arc<FileMeta>>)> {
        let Some(tree) = self.trees.get(&tree) else {
            return Vec::new();
        };
        if let (Some(lo), Some(hi)) = (lo, hi) {
            if lo > hi {
                return Vec::new();
            }
        }
        let mut found = Vec::new();
        for (level, files) in tree.levels.iter().enumerate() {
            let in_range: Vec<Arc<FileMeta>> = if level == 0 {
                files
                    .iter()
                    .filter(|f| f.overlaps_user_range(lo, hi))
                    .cloned()
                    .collect()
            } else {
                let start = lo.map_or(0, |lo| files.partition_point(|f| f.largest_user_key() < lo));
                let end = hi.map_or(files.len(), |hi| {
                    files.partition_point(|f| f.smallest_user_key() <= hi)
                });
                files[start..end.max(start)].to_vec()
            };
            if !in_range.is_empty() {
                found.push((level, in_range));
            }
        }
        found
    }
}

/// Order of L0: newest data first (seq_max descending, then file number descending).
fn l0_order(a: &FileMeta, b: &FileMeta) -> Ordering {
    b.seq_max
        .cmp(&a.seq_max)
        .then_with(|| b.number.cmp(&a.number))
}

/// Order of L1+: smallest key ascending (file number breaks ties so the order is total).
fn l1_order(a: &FileMeta, b: &FileMeta) -> Ordering {
    compare_internal(&a.smallest_key, &b.smallest_key).then_with(|| a.number.cmp(&b.number))
}

fn check_level_order(
    tree: TreeId,
    level: usize,
    files: &[Arc<FileMeta>],
) -> Result<(), VersionError> {
    for pair in files.windows(2) {
        let (left, right) = (&pair[0], &pair[1]);
        if level == 0 {
            if l0_order(left, right) != Ordering::Less {
                return Err(VersionError::OutOfOrder {
                    tree,
                    level,
                    number: right.number,
                });
            }
        } else if left.largest_user_key() >= right.smallest_user_key() {
            // Files are inserted in smallest-key order, so an unsorted pair also overlaps.
            return Err(VersionError::Overlap {
                tree,
                level,
                left: left.number,
                right: right.number,
            });
        }
    }
    Ok(())
}

/// A counter must be at least what the version's contents need.
fn check_counter(what: &'static str, counter: u64, needed: u64) -> Result<(), VersionError> {
    if counter < needed {
        return Err(VersionError::CounterTooSmall {
            what,
            counter,
            needed,
        });
    }
    Ok(())
}

/// Moves a counter forward; moving it back is an error (reuse would corrupt data).
fn forward(what: &'static str, counter: &mut u64, requested: u64) -> Result<(), VersionError> {
    if requested < *counter {
        return Err(VersionError::WentBackwards {
            what,
            current: *counter,
            requested,
        });
    }
    *counter = requested;
    Ok(())
}

/// One tree as the compaction policy sees it, with the files of running jobs marked busy.
pub(crate) fn levels_view(tree: &TreeVersion, busy: &BTreeSet<u64>) -> LevelsView {
    LevelsView {
        levels: tree
            .levels
            .iter()
            .map(|files| {
                files
                    .iter()
                    .map(|f| FileView {
                        number: f.number,
                        size_bytes: f.size_bytes,
                        smallest_user_key: f.smallest_user_key().to_vec(),
                        largest_user_key: f.largest_user_key().to_vec(),
                        being_compacted: busy.contains(&f.number),
                    })
                    .collect()
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_compaction::key::{encode, EntryKind};

    /// A file holding user keys `lo..=hi` written at seqs `seq_min..=seq_max`.
    fn file(number: u64, lo: &str, hi: &str, seq_min: u64, seq_max: u64) -> FileMeta {
        FileMeta {
            number,
            size_bytes: 100 * number,
            smallest_key: encode(lo.as_bytes(), seq_max, EntryKind::Put),
            largest_key: encode(hi.as_bytes(), seq_min, EntryKind::Put),
            entries: 10,
            tombstones: 1,
            seq_min,
            seq_max,
        }
    }

    fn add(tree: TreeId, level: usize, file: FileMeta) -> VersionEdit {
        VersionEdit::AddFile { tree, level, file }
    }

    fn create(id: TreeId, name: &str) -> VersionEdit {
        VersionEdit::CreateTree {
            id,
            name: name.to_string(),
        }
    }

    fn numbers<'a>(files: impl IntoIterator<Item = &'a Arc<FileMeta>>) -> Vec<u64> {
        files.into_iter().map(|f| f.number).collect()
    }

    fn one_tree() -> Version {
        Version::empty().apply(&[create(0, "t")]).unwrap()
    }

    #[test]
    fn create_and_drop_tree() {
        let v = Version::empty()
            .apply(&[create(0, "users"), create(5, "users-gsi")])
            .unwrap();
        assert_eq!(v.trees.len(), 2);
        assert_eq!(v.trees[&5].name, "users-gsi");
        assert_eq!(v.trees[&5].levels.len(), LEVELS);
        assert_eq!(v.next_tree_id, 6);

        let v = v
            .apply(&[
                add(5, 1, file(3, "a", "b", 1, 2)),
                VersionEdit::DropTree { id: 5 },
            ])
            .unwrap();
        assert_eq!(v.trees.keys().copied().collect::<Vec<_>>(), vec![0]);
        assert!(v.live_file_numbers().is_empty());
        assert_eq!(v.next_tree_id, 6, "dropping never lowers the id counter");
        assert_eq!(
            v.next_file_number, 4,
            "dropping never lowers the file counter"
        );
    }

    #[test]
    fn tree_errors() {
        let v = one_tree();
        assert_eq!(
            v.apply(&[create(0, "again")]),
            Err(VersionError::DuplicateTree(0))
        );
        assert_eq!(
            v.apply(&[VersionEdit::DropTree { id: 9 }]),
            Err(VersionError::UnknownTree(9))
        );
        assert_eq!(
            v.apply(&[add(9, 0, file(1, "a", "b", 1, 1))]),
            Err(VersionError::UnknownTree(9))
        );
        assert_eq!(
            v.apply(&[VersionEdit::SetFlushedSeq { tree: 9, seq: 1 }]),
            Err(VersionError::UnknownTree(9))
        );
        assert_eq!(
            v.apply(&[VersionEdit::RemoveFile {
                tree: 9,
                level: 0,
                number: 1
            }]),
            Err(VersionError::UnknownTree(9))
        );
    }

    #[test]
    fn add_and_remove_files() {
        let v = one_tree()
            .apply(&[
                add(0, 0, file(7, "a", "z", 1, 10)),
                add(0, 2, file(8, "c", "d", 1, 3)),
            ])
            .unwrap();
        assert_eq!(v.live_file_numbers(), BTreeSet::from([7, 8]));
        assert_eq!(v.next_file_number, 9);
        assert_eq!(v.last_seq, 10, "a file's seqs raise the seq floor");

        let v2 = v
            .apply(&[VersionEdit::RemoveFile {
                tree: 0,
                level: 0,
                number: 7,
            }])
            .unwrap();
        assert_eq!(v2.live_file_numbers(), BTreeSet::from([8]));
        // The unchanged file is shared, not copied.
        assert!(Arc::ptr_eq(
            &v.trees[&0].levels[2][0],
            &v2.trees[&0].levels[2][0]
        ));
        // The original is untouched.
        assert_eq!(v.live_file_numbers(), BTreeSet::from([7, 8]));
    }

    #[test]
    fn file_errors() {
        let v = one_tree()
            .apply(&[add(0, 1, file(4, "a", "c", 1, 2))])
            .unwrap();
        assert_eq!(
            v.apply(&[VersionEdit::RemoveFile {
                tree: 0,
                level: 2,
                number: 4
            }]),
            Err(VersionError::FileNotFound {
                tree: 0,
                level: 2,
                number: 4
            })
        );
        assert_eq!(
            v.apply(&[add(0, LEVELS, file(5, "a", "b", 1, 1))]),
            Err(VersionError::LevelOutOfRange { level: LEVELS })
        );
        assert_eq!(
            v.apply(&[add(0, 0, file(4, "x", "y", 3, 3))]),
            Err(VersionError::DuplicateFile { number: 4 })
        );
        let mut reversed = file(6, "a", "b", 1, 1);
        std::mem::swap(&mut reversed.smallest_key, &mut reversed.largest_key);
        assert!(matches!(
            v.apply(&[add(0, 0, reversed)]),
            Err(VersionError::InvalidFile { number: 6, .. })
        ));
        let mut short = file(6, "a", "b", 1, 1);
        short.largest_key = b"abc".to_vec();
        assert!(matches!(
            v.apply(&[add(0, 0, short)]),
            Err(VersionError::InvalidFile { number: 6, .. })
        ));
        let mut seqs = file(6, "a", "b", 1, 1);
        seqs.seq_min = 5;
        assert!(matches!(
            v.apply(&[add(0, 0, seqs)]),
            Err(VersionError::InvalidFile { number: 6, .. })
        ));
    }

    #[test]
    fn trivial_move_is_remove_then_add() {
        let f = file(4, "a", "c", 1, 2);
        let v = one_tree().apply(&[add(0, 1, f.clone())]).unwrap();
        let moved = v
            .apply(&[
                VersionEdit::RemoveFile {
                    tree: 0,
                    level: 1,
                    number: 4,
                },
                add(0, 2, f),
            ])
            .unwrap();
        assert!(moved.trees[&0].levels[1].is_empty());
        assert_eq!(numbers(&moved.trees[&0].levels[2]), vec![4]);
    }

    #[test]
    fn deeper_levels_must_not_overlap() {
        let v = one_tree()
            .apply(&[add(0, 1, file(1, "c", "f", 1, 2))])
            .unwrap();
        assert_eq!(
            v.apply(&[add(0, 1, file(2, "e", "h", 3, 4))]),
            Err(VersionError::Overlap {
                tree: 0,
                level: 1,
                left: 1,
                right: 2
            })
        );
        assert_eq!(
            v.apply(&[add(0, 1, file(2, "a", "c", 3, 4))]),
            Err(VersionError::Overlap {
                tree: 0,
                level: 1,
                left: 2,
                right: 1
            }),
            "sharing one user key at the boundary is an overlap too"
        );
        // A compaction may add its outputs before removing its inputs: checked at the end.
        let replaced = v
            .apply(&[
                add(0, 1, file(2, "a", "d", 3, 4)),
                add(0, 1, file(3, "e", "g", 3, 4)),
                VersionEdit::RemoveFile {
                    tree: 0,
                    level: 1,
                    number: 1,
                },
            ])
            .unwrap();
        assert_eq!(numbers(&replaced.trees[&0].levels[1]), vec![2, 3]);
        // L0 files may overlap freely.
        assert!(v
            .apply(&[
                add(0, 0, file(2, "a", "z", 3, 4)),
                add(0, 0, file(3, "b", "c", 5, 6))
            ])
            .is_ok());
    }

    #[test]
    fn counters_never_go_backwards() {
        let v = one_tree()
            .apply(&[
                VersionEdit::SetLastSeq(50),
                VersionEdit::SetNextFileNumber(20),
                VersionEdit::SetFlushedSeq { tree: 0, seq: 40 },
            ])
            .unwrap();
        assert_eq!(
            (v.last_seq, v.next_file_number, v.trees[&0].flushed_seq),
            (50, 20, 40)
        );
        assert!(matches!(
            v.apply(&[VersionEdit::SetLastSeq(49)]),
            Err(VersionError::WentBackwards {
                what: "last seq",
                ..
            })
        ));
        assert!(matches!(
            v.apply(&[VersionEdit::SetNextFileNumber(19)]),
            Err(VersionError::WentBackwards { .. })
        ));
        assert!(matches!(
            v.apply(&[VersionEdit::SetFlushedSeq { tree: 0, seq: 39 }]),
            Err(VersionError::WentBackwards { .. })
        ));
        // A flushed seq beyond the floor raises the floor (the WAL must not reuse those seqs).
        let raised = v
            .apply(&[VersionEdit::SetFlushedSeq { tree: 0, seq: 70 }])
            .unwrap();
        assert_eq!(raised.last_seq, 70);
        // Adding a file below the counter keeps the counter.
        let added = v.apply(&[add(0, 0, file(3, "a", "b", 1, 1))]).unwrap();
        assert_eq!(added.next_file_number, 20);
    }

    #[test]
    fn metadata_set_and_remove() {
        let v = Version::empty()
            .apply(&[
                VersionEdit::SetMetadata {
                    key: "table/users".into(),
                    value: Some(b"def".to_vec()),
                },
                create(0, "users"),
            ])
            .unwrap();
        assert_eq!(v.metadata["table/users"], b"def".to_vec());
        let v = v
            .apply(&[
                VersionEdit::SetMetadata {
                    key: "table/users".into(),
                    value: None,
                },
                VersionEdit::DropTree { id: 0 },
            ])
            .unwrap();
        assert!(v.metadata.is_empty());
        assert!(v.trees.is_empty());
    }

    #[test]
    fn failed_apply_changes_nothing() {
        let v = one_tree();
        let before = v.clone();
        let result = v.apply(&[
            add(0, 0, file(1, "a", "b", 1, 1)),
            VersionEdit::SetMetadata {
                key: "k".into(),
                value: Some(vec![1]),
            },
            VersionEdit::DropTree { id: 3 },
        ]);
        assert_eq!(result, Err(VersionError::UnknownTree(3)));
        assert_eq!(v, before);
    }

    #[test]
    fn level0_is_kept_newest_first() {
        // Added oldest first and out of order: L0 ends up ordered by seq_max descending.
        let v = one_tree()
            .apply(&[
                add(0, 0, file(2, "a", "m", 11, 20)),
                add(0, 0, file(1, "c", "z", 1, 10)),
                add(0, 0, file(3, "k", "p", 21, 30)),
            ])
            .unwrap();
        assert_eq!(numbers(&v.trees[&0].levels[0]), vec![3, 2, 1]);
    }

    fn layered() -> Version {
        one_tree()
            .apply(&[
                add(0, 0, file(10, "d", "k", 31, 40)),
                add(0, 0, file(11, "a", "e", 41, 50)),
                add(0, 0, file(12, "m", "p", 51, 60)),
                add(0, 1, file(20, "g", "j", 11, 30)),
                add(0, 1, file(21, "a", "c", 11, 30)),
                add(0, 1, file(22, "n", "q", 11, 30)),
                add(0, 2, file(30, "a", "h", 1, 10)),
                add(0, 2, file(31, "i", "z", 1, 10)),
            ])
            .unwrap()
    }

    #[test]
    fn files_for_key_newest_first() {
        let v = layered();
        assert_eq!(numbers(v.files_for_key(0, b"e")), vec![11, 10, 30]);
        assert_eq!(numbers(v.files_for_key(0, b"h")), vec![10, 20, 30]);
        assert_eq!(numbers(v.files_for_key(0, b"a")), vec![11, 21, 30]);
        assert_eq!(
            numbers(v.files_for_key(0, b"l")),
            vec![31],
            "gap in L0 and L1"
        );
        assert_eq!(numbers(v.files_for_key(0, b"p")), vec![12, 22, 31]);
        assert_eq!(numbers(v.files_for_key(0, b"zz")), Vec::<u64>::new());
        assert_eq!(v.files_for_key(7, b"a").count(), 0, "unknown tree");
    }

    #[test]
    fn files_for_range_overlaps() {
        let v = layered();
        let flat = |lo: Option<&[u8]>, hi: Option<&[u8]>| -> Vec<Arc<FileMeta>> {
            v.files_for_range_by_level(0, lo, hi)
                .into_iter()
                .flat_map(|(_, files)| files)
                .collect()
        };
        assert_eq!(
            numbers(&flat(None, None)),
            vec![12, 11, 10, 21, 20, 22, 30, 31]
        );
        assert_eq!(numbers(&flat(Some(b"f"), Some(b"i"))), vec![10, 20, 30, 31]);
        assert_eq!(
            numbers(&flat(Some(b"k"), Some(b"m"))),
            vec![12, 10, 31],
            "bounds are inclusive"
        );
        assert_eq!(numbers(&flat(None, Some(b"b"))), vec![11, 21, 30]);
        assert_eq!(numbers(&flat(Some(b"q"), None)), vec![22, 31]);
        assert!(flat(Some(b"m"), Some(b"a")).is_empty());
        assert!(flat(Some(b"zz"), None).is_empty());
        // By level: each level's files apart (reads concatenate those below L0), and no
        // entry for a level with none in the range.
        let by_level = |lo: Option<&[u8]>, hi: Option<&[u8]>| -> Vec<(usize, Vec<u64>)> {
            v.files_for_range_by_level(0, lo, hi)
                .iter()
                .map(|(level, files)| (*level, numbers(files)))
                .collect()
        };
        assert_eq!(
            by_level(None, None),
            vec![
                (0, vec![12, 11, 10]),
                (1, vec![21, 20, 22]),
                (2, vec![30, 31])
            ]
        );
        assert_eq!(
            by_level(Some(b"q"), None),
            vec![(1, vec![22]), (2, vec![31])]
        );
        assert!(by_level(Some(b"m"), Some(b"a")).is_empty());
    }

    #[test]
    fn check_rejects_hand_built_corruption() {
        let v = layered();
        let mut bad = v.clone();
        bad.next_file_number = 5;
        assert!(matches!(
            bad.check(),
            Err(VersionError::CounterTooSmall { .. })
        ));

        let mut bad = v.clone();
        bad.trees.get_mut(&0).unwrap().levels[0].swap(0, 1);
        assert!(matches!(
            bad.check(),
            Err(VersionError::OutOfOrder { level: 0, .. })
        ));

        let mut bad = v.clone();
        bad.trees.get_mut(&0).unwrap().levels[1].swap(0, 1);
        assert!(matches!(
            bad.check(),
            Err(VersionError::Overlap { level: 1, .. })
        ));

        let mut bad = v.clone();
        bad.trees.get_mut(&0).unwrap().levels.pop();
        assert!(matches!(
            bad.check(),
            Err(VersionError::WrongLevelCount { .. })
        ));

        let mut bad = v;
        let dup = Arc::clone(&bad.trees[&0].levels[2][0]);
        bad.trees.get_mut(&0).unwrap().levels[5].push(dup);
        assert!(matches!(
            bad.check(),
            Err(VersionError::DuplicateFile { .. })
        ));
    }
}
