//! Checkpoints: a tree's SSTables handed out as hard links, and trees made from such files.
//!
//! SSTables are immutable, so a second name for one (a hard link, `FileSystem::hard_link`)
//! is a copy of its state that costs no I/O: this is how a caller keeps a tree's contents at
//! one point (a backup) and how it makes a new tree from them later (a restore).
//!
//! - [`Db::flush_trees`] puts what some trees' memtables hold into SSTables, so the files
//!   alone hold the trees' state. The caller stops writes to those trees around the call
//!   and the link, if it wants that state at one point.
//! - [`Db::link_tree_files`] links every file of some trees, taken from one superversion,
//!   into a directory of the caller's, and describes them ([`LinkedFile`]). The
//!   superversion is held while linking: a file is removed only when its last reader lets
//!   go, so none can vanish between the listing and its link.
//! - [`Db::create_trees_with_files`] links files from anywhere into the data directory under
//!   new file numbers and installs new trees holding them, with the caller's extra edits (a
//!   catalog entry), in one version change. A crash before that change leaves only files no
//!   version names, which the next open removes; after it, the trees are whole.
//!
//! - [`Db::create_trees_at_snapshot`] writes what some trees held at a snapshot (an older
//!   one kept by a retention floor, for a point-in-time restore) into new SSTables and
//!   installs new trees holding them, with the caller's extra edits, in one version change,
//!   with the same crash behaviour.
//!
//! A file with a second name is never recycled (`table_files`): writing a new table over it
//! in place would change what the other name holds.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use shoal_compaction::key::encode;
use shoal_compaction::EntryKind;

use crate::compact_job::OutputFiles;
use crate::db::{flush_one, AlsoFreeze, Db, Snapshot};
use crate::error::DbError;
use crate::manifest;
use crate::sstable::Table;
use crate::table_files::open_table;
use crate::version::{FileMeta, TreeId, VersionEdit, LEVELS};

/// One SSTable of a tree, linked out by [`Db::link_tree_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedFile {
    pub tree: TreeId,
    pub level: usize,
    /// The file's description; its `number` is the file's number in the data directory when
    /// it was linked, and its name in the destination directory is
    /// [`manifest::sst_file_name`] of that number.
    pub meta: FileMeta,
}

/// A file to put into a new tree with [`Db::create_trees_with_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Where the SSTable is; it is linked, not moved, so it stays there.
    pub path: PathBuf,
    pub level: usize,
    /// Its description; `number` is replaced by the new file number.
    pub meta: FileMeta,
}

impl Db {
    /// Freezes the memtables of `trees` and flushes them (and whatever else is frozen) now:
    /// on return, every write to these trees acknowledged before the call is in an SSTable.
    pub fn flush_trees(&self, trees: &[TreeId]) -> Result<(), DbError> {
        self.freeze_full_memtables(AlsoFreeze::Trees(trees));
        // `flush_one` serialises with the background flusher, so when it finds nothing left,
        // a flush the flusher had picked up is installed too.
        while flush_one(&self.shared, &self.wal)? {}
        Ok(())
    }

    /// Hard-links every SSTable of `trees`, as one superversion names them, into
    /// `dest_dir` (which must exist) as `<number>.sst`, and makes the links durable.
    pub fn link_tree_files(
        &self,
        trees: &[TreeId],
        dest_dir: &Path,
    ) -> Result<Vec<LinkedFile>, DbError> {
        let fs = &self.shared.fs;
        // Held to the end: its tables keep every listed file from being removed.
        let sv = self.current();
        let mut linked = Vec::new();
        for &tree in trees {
            let version = sv
                .version
                .trees
                .get(&tree)
                .ok_or(DbError::UnknownTree(tree))?;
            for (level, files) in version.levels.iter().enumerate() {
                for file in files {
                    let name = manifest::sst_file_name(file.number);
                    let from = self.shared.dir.join(&name);
                    let to = dest_dir.join(&name);
                    fs.hard_link(&from, &to).map_err(|e| {
                        DbError::io(format!("linking {} to {}", from.display(), to.display()), e)
                    })?;
                    linked.push(LinkedFile {
                        tree,
                        level,
                        meta: FileMeta::clone(file),
                    });
                }
            }
        }
        fs.sync_dir(dest_dir)
            .map_err(|e| DbError::io(format!("syncing {}", dest_dir.display()), e))?;
        Ok(linked)
    }

    /// Creates a tree per name holding the files given for it (`files[i]` for `names[i]`),
    /// plus the edits `extra(ids)` returns, in one durable version change. The files are
    /// linked into the data directory under new numbers first; they must be SSTables this
    /// database wrote (their sequence numbers are at most its own). Returns the new ids in
    /// the order of `names`.
    pub fn create_trees_with_files(
        &self,
        names: &[String],
        files: &[Vec<SourceFile>],
        extra: impl FnOnce(&[TreeId]) -> Vec<VersionEdit>,
    ) -> Result<Vec<TreeId>, DbError> {
        if files.len() != names.len() {
            return Err(DbError::io(
                "creating trees from files",
                std::io::Error::other("one list of files per tree is needed"),
            ));
        }
        let mut opened: Vec<(u64, Arc<Table>)> = Vec::new();
        let linked = self.link_in(files, &mut opened);
        let result = linked.and_then(|placed| {
            self.change_version_adding(opened.clone(), |version| {
                let (mut edits, ids) = crate::db::create_tree_edits(version, names)?;
                for (id, files) in ids.iter().zip(&placed) {
                    for (level, meta) in files {
                        edits.push(VersionEdit::AddFile {
                            tree: *id,
                            level: *level,
                            file: meta.clone(),
                        });
                    }
                }
                edits.extend(extra(&ids));
                Ok((edits, ids))
            })
        });
        if result.is_err() {
            // No version names the new links: they go when their tables drop (and, after a
            // crash, at the next open).
            self.shared
                .files
                .mark_obsolete(opened.iter().map(|(number, _)| *number));
        }
        result
    }

    /// Creates a tree per name holding what `sources[i]` held at `snapshot` (its live keys
    /// and values, each written once at the snapshot's sequence number, in the last level;
    /// `None`: an empty tree), plus the edits `extra(ids)` returns, in one durable version
    /// change. Returns the new ids in the order of `names`.
    pub fn create_trees_at_snapshot(
        &self,
        names: &[String],
        sources: &[Option<TreeId>],
        snapshot: &Snapshot,
        extra: impl FnOnce(&[TreeId]) -> Vec<VersionEdit>,
    ) -> Result<Vec<TreeId>, DbError> {
        if sources.len() != names.len() {
            return Err(DbError::io(
                "creating trees at a snapshot",
                std::io::Error::other("one source tree per new tree is needed"),
            ));
        }
        let shared = &self.shared;
        // Dropped without `keep` on any error: the files written so far are removed.
        let mut outputs = Vec::with_capacity(sources.len());
        for &source in sources {
            let mut files = OutputFiles::new(shared);
            if let Some(source) = source {
                let mut cursor = self.iter_tree(source, snapshot)?;
                while cursor.advance()? {
                    let key = encode(cursor.key(), snapshot.seq(), EntryKind::Put);
                    files.add(&key, cursor.value())?;
                }
                files.finish_current()?;
            }
            outputs.push(files);
        }
        let dir = &shared.dir;
        shared
            .fs
            .sync_dir(dir)
            .map_err(|e| DbError::io(format!("syncing {}", dir.display()), e))?;
        let mut opened = Vec::with_capacity(outputs.len());
        for files in &outputs {
            opened.push(files.open_all()?);
        }
        let tables = opened
            .iter()
            .flatten()
            .map(|(meta, table)| (meta.number, Arc::clone(table)))
            .collect();
        let ids = self.change_version_adding(tables, |version| {
            let (mut edits, ids) = crate::db::create_tree_edits(version, names)?;
            for (id, files) in ids.iter().zip(&opened) {
                for (meta, _) in files {
                    edits.push(VersionEdit::AddFile {
                        tree: *id,
                        level: LEVELS - 1,
                        file: meta.clone(),
                    });
                }
            }
            edits.extend(extra(&ids));
            Ok((edits, ids))
        })?;
        for files in &mut outputs {
            files.keep();
        }
        Ok(ids)
    }

    /// Links each source file into the data directory under a new number, syncs the
    /// directory and opens the tables (pushed to `opened` as they open, so the caller can
    /// retire them on failure). Returns per tree its (level, description) pairs.
    fn link_in(
        &self,
        files: &[Vec<SourceFile>],
        opened: &mut Vec<(u64, Arc<Table>)>,
    ) -> Result<Vec<Vec<(usize, FileMeta)>>, DbError> {
        let fs = &self.shared.fs;
        let dir = &self.shared.dir;
        let mut placed = Vec::with_capacity(files.len());
        let mut numbers = Vec::new();
        for tree_files in files {
            let mut tree_placed = Vec::with_capacity(tree_files.len());
            for source in tree_files {
                if source.level >= LEVELS {
                    return Err(crate::version::VersionError::LevelOutOfRange {
                        level: source.level,
                    }
                    .into());
                }
                let number = self.shared.next_file_number.fetch_add(1, Ordering::AcqRel);
                let to = dir.join(manifest::sst_file_name(number));
                fs.hard_link(&source.path, &to).map_err(|e| {
                    DbError::io(
                        format!("linking {} to {}", source.path.display(), to.display()),
                        e,
                    )
                })?;
                numbers.push(number);
                let meta = FileMeta {
                    number,
                    ..source.meta.clone()
                };
                tree_placed.push((source.level, meta));
            }
            placed.push(tree_placed);
        }
        fs.sync_dir(dir)
            .map_err(|e| DbError::io(format!("syncing {}", dir.display()), e))?;
        for number in numbers {
            let table = open_table(
                fs,
                dir,
                number,
                self.shared.options.bloom_prefix,
                &self.shared.files,
            )?;
            opened.push((number, table));
        }
        Ok(placed)
    }
}
