//! Per-collection write locks (docs/DESIGN.md §3, step 2).
//!
//! A write reads the current item, decides, and writes; two writers of one item must not
//! interleave those steps or an update is lost. Locks are striped by a hash of (tree,
//! partition-key prefix): writers to one collection always meet on one stripe, writers to
//! different collections rarely do. A transaction takes all its stripes in ascending order,
//! so two transactions can never wait for each other in a cycle. Reads never take these locks.

use parking_lot::{Mutex, MutexGuard};

use crate::core::keys::hash64;
use shoal_engine::TreeId;

/// Number of stripes: enough that unrelated collections rarely share one, small enough to
/// cost nothing.
pub const STRIPES: usize = 1024;

/// The striped lock table.
pub struct CollectionLocks {
    stripes: Vec<Mutex<()>>,
}

impl Default for CollectionLocks {
    fn default() -> Self {
        CollectionLocks {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }
}

impl CollectionLocks {
    /// The stripe of a collection, given its tree and its partition prefix
    /// (`keys::partition_prefix`).
    pub fn stripe_of(tree: TreeId, partition_prefix: &[u8]) -> usize {
        let mut bytes = tree.to_be_bytes().to_vec();
        bytes.extend_from_slice(partition_prefix);
        (hash64(&bytes) % STRIPES as u64) as usize
    }

    /// Locks one collection.
    pub fn lock(&self, tree: TreeId, partition_prefix: &[u8]) -> MutexGuard<'_, ()> {
        self.stripes[Self::stripe_of(tree, partition_prefix)].lock()
    }

    /// Locks several stripes in ascending order (duplicates taken once): deadlock-free for
    /// transactions and batches.
    pub fn lock_many(&self, mut stripes: Vec<usize>) -> Vec<MutexGuard<'_, ()>> {
        stripes.sort_unstable();
        stripes.dedup();
        stripes
            .into_iter()
            .map(|s| self.stripes[s].lock())
            .collect()
    }
}
