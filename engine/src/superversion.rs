//! The superversion: one consistent picture of where every tree's data lives.
//!
//! A read must see a tree's memtables and its SSTables *together*: if it took the memtable
//! list before a flush finished and the SSTable list after, the flushed data would be in
//! neither. So memtables, the manifest version and the open tables are bundled in one
//! immutable [`SuperVersion`], replaced atomically (copy, modify, swap) whenever a memtable
//! is frozen or a flush or tree change is installed. Readers clone the `Arc` and read with
//! no further locking.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use shoal_compaction::{write_rate_limit, PolicyOptions};

use crate::memtable::Memtable;
use crate::sstable::Table;
use crate::version::{levels_view, TreeId, Version};

/// A frozen memtable waiting to be flushed.
#[derive(Clone)]
pub struct Immutable {
    pub memtable: Arc<Memtable>,
    /// Every entry of this tree with seq <= `frozen_at_seq` is in this memtable or older
    /// data; everything newer is in later memtables. Becomes the tree's `flushed_seq` once
    /// this memtable is in an SSTable.
    pub frozen_at_seq: u64,
}

/// The memtables of one tree.
#[derive(Clone)]
pub struct TreeMemtables {
    pub active: Arc<Memtable>,
    /// Oldest first; flushed in this order.
    pub immutables: Vec<Immutable>,
    /// The size at which `active` is frozen: follows the tree's write rate
    /// (`write_buffer`).
    pub target_bytes: usize,
}

impl TreeMemtables {
    /// A tree's memtables at open or creation: an empty `active` of `target_bytes`.
    pub fn new(active: Memtable, target_bytes: usize) -> TreeMemtables {
        TreeMemtables {
            active: Arc::new(active),
            immutables: Vec::new(),
            target_bytes,
        }
    }

    /// Smallest sequence number not yet in an SSTable, if any: what this tree pins in the WAL.
    pub fn unflushed_seq_min(&self) -> Option<u64> {
        self.immutables
            .iter()
            .filter_map(|imm| imm.memtable.seq_min())
            .chain(self.active.seq_min())
            .min()
    }

    /// Memtables newest first, as reads consult them.
    pub fn newest_first(&self) -> impl Iterator<Item = &Arc<Memtable>> {
        std::iter::once(&self.active).chain(self.immutables.iter().rev().map(|imm| &imm.memtable))
    }
}

/// Everything a read needs, consistent as of one moment.
#[derive(Clone)]
pub struct SuperVersion {
    /// Replaced only through [`SuperVersion::set_version`], which keeps `write_rates` in step.
    pub version: Arc<Version>,
    pub memtables: HashMap<TreeId, TreeMemtables>,
    /// Open SSTables by file number; exactly the files `version` references.
    pub tables: HashMap<u64, Arc<Table>>,
    /// The write rate each tree's compaction backlog holds it to (`write_rates`;
    /// trees running free are absent). A function of `version`, computed when the version
    /// is installed, so that a write looks its trees up instead of sizing their levels.
    pub write_rates: HashMap<TreeId, u64>,
}

impl SuperVersion {
    pub fn new(
        version: Arc<Version>,
        memtables: HashMap<TreeId, TreeMemtables>,
        tables: HashMap<u64, Arc<Table>>,
        policy: &PolicyOptions,
    ) -> SuperVersion {
        SuperVersion {
            write_rates: write_rates(&version, policy),
            version,
            memtables,
            tables,
        }
    }

    /// Installs `version` and the write rates derived from it.
    pub fn set_version(&mut self, version: Arc<Version>, policy: &PolicyOptions) {
        self.write_rates = write_rates(&version, policy);
        self.version = version;
    }

    /// Whether any tree has a frozen memtable waiting for flush.
    pub fn flush_pending(&self) -> bool {
        self.memtables.values().any(|m| !m.immutables.is_empty())
    }

    /// Smallest unflushed sequence number over all trees.
    pub fn unflushed_seq_min(&self) -> Option<u64> {
        self.memtables
            .values()
            .filter_map(TreeMemtables::unflushed_seq_min)
            .min()
    }
}

/// The write rate of every tree its compaction backlog slows (see `compact`'s module docs), for
/// [`SuperVersion::set_version`]: computed once per installed version, not per write.
pub(crate) fn write_rates(version: &Version, policy: &PolicyOptions) -> HashMap<TreeId, u64> {
    version
        .trees
        .iter()
        .filter_map(|(&id, tree)| {
            let rate = write_rate_limit(&levels_view(tree, &BTreeSet::new()), policy)?;
            Some((id, rate))
        })
        .collect()
}

/// The rate a write to `trees` is held to (the slowest of theirs), whether or not it is
/// applied. `None`: none of them is backed up.
pub(crate) fn write_rate(sv: &SuperVersion, trees: &[TreeId]) -> Option<u64> {
    trees
        .iter()
        .filter_map(|tree| sv.write_rates.get(tree).copied())
        .min()
}
