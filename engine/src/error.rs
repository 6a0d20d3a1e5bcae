//! Errors of the LSM layer.

use shoal_compaction::IterError;

use crate::batch::BatchError;
use crate::manifest::ManifestError;
use crate::sstable::SstError;
use crate::version::{TreeId, VersionError};

/// Everything the LSM database can fail with.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Wal(#[from] shoal_wal::WalError),
    #[error(transparent)]
    Sst(#[from] SstError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error(transparent)]
    Batch(#[from] BatchError),
    #[error(transparent)]
    Iter(#[from] IterError),
    /// A background flush failed to write or sync: like a WAL fsync failure, this is never
    /// retried (the state of the failed file is unknown), so writes are refused from then on.
    #[error("database refuses writes after a background failure: {0}")]
    Poisoned(String),
    #[error("no tree with id {0}")]
    UnknownTree(TreeId),
    #[error("a tree named {0:?} already exists")]
    TreeExists(String),
    #[error("the database is closed")]
    Closed,
    #[error("snapshot at sequence number {requested} asked for, but only {visible} is visible")]
    SnapshotInFuture { requested: u64, visible: u64 },
}

impl DbError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> DbError {
        DbError::Io {
            context: context.into(),
            source,
        }
    }
}
