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
    /// A background flush or compaction failed (an fsync, an I/O error, damaged input):
    /// like a WAL fsync failure, this is never retried, so writes are refused from then on.
    #[error("database refuses writes after a background failure: {0}")]
    Poisoned(String),
    /// A write would wait for a flush that cannot get disk space; the flush is retried, and
    /// writes resume once space is freed (`out_of_space.rs`).
    #[error("write refused: {0}")]
    NoSpace(String),
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
    /// Whether this failure is a full disk that left every durable structure as it was, so
    /// that the work can be done again once space is freed (`out_of_space.rs`): the WAL's
    /// refusal of a commit, a manifest switch that could not write its new files, and any
    /// failure of a new SSTable's file (which is thrown away). Not a poisoned WAL or manifest,
    /// whatever first poisoned them.
    pub fn is_no_space(&self) -> bool {
        match self {
            DbError::Wal(error) => error.is_no_space(),
            DbError::Manifest(error) => matches!(error, ManifestError::NoSpace { .. }),
            DbError::Sst(SstError::Io(error)) | DbError::Io { source: error, .. } => {
                shoal_vfs::is_no_space(error)
            }
            DbError::NoSpace(_) => true,
            _ => false,
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> DbError {
        DbError::Io {
            context: context.into(),
            source,
        }
    }
}
