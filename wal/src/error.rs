//! The WAL's error type.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in the WAL.
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    /// An earlier write or sync failed; the WAL accepts no more writes. Reads elsewhere go on.
    #[error("the write-ahead log accepts no more writes since an earlier failure: {0}")]
    Poisoned(String),
    /// The disk is full: `action` could not get the room it needed. Nothing of the batches
    /// the call carried is kept (the log was cut back to its last whole record), none was
    /// applied or acknowledged, and the log is not poisoned: once space is freed the next
    /// commit succeeds (`writer.rs`, "Running out of space").
    #[error("write-ahead log is out of disk space: {action} {path}: {source}")]
    NoSpace {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// An I/O call failed.
    #[error("write-ahead log I/O error: {action} {path}: {source}")]
    Io {
        /// What the WAL was doing, e.g. "fdatasync".
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The log holds bytes that cannot be a torn tail; see the `format` module docs.
    #[error("write-ahead log corruption in {} at offset {offset}: {detail}", file.display())]
    Corruption {
        file: PathBuf,
        offset: u64,
        detail: String,
    },
    /// A batch payload larger than `WalOptions::record_bytes_max`.
    #[error("write batch of {size_bytes} bytes exceeds the write-ahead log record limit of {size_bytes_max} bytes")]
    RecordTooLarge {
        size_bytes: usize,
        size_bytes_max: usize,
    },
    /// The next batch would take sequence numbers past u64::MAX.
    #[error("write-ahead log sequence numbers are exhausted")]
    SequenceNumbersExhausted,
    /// `WalOptions` that cannot work.
    #[error("invalid write-ahead log options: {0}")]
    InvalidOptions(String),
}

impl WalError {
    /// The failure of a call that writes, creates, renames or allocates: `NoSpace` when the
    /// disk is full, which says no more than that the bytes asked for were not all written.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        let path = path.into();
        if shoal_vfs::is_no_space(&source) {
            return WalError::NoSpace {
                action,
                path,
                source,
            };
        }
        WalError::Io {
            action,
            path,
            source,
        }
    }

    /// The failure of an fdatasync or directory fsync: always `Io`, whatever its code. After
    /// a failed fsync the kernel may have dropped the dirty pages it could not write and a
    /// retry can succeed without them (DESIGN.md §5), so even `ENOSPC` there is no promise
    /// that nothing was lost, and the log is poisoned.
    pub(crate) fn sync(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        WalError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// Whether this is [`WalError::NoSpace`]: the log is intact and a later commit, once
    /// space is freed, succeeds.
    pub fn is_no_space(&self) -> bool {
        matches!(self, WalError::NoSpace { .. })
    }

    /// A copy for handing one failure to every member of a group (io::Error is not Clone).
    pub(crate) fn duplicate(&self) -> Self {
        match self {
            WalError::Poisoned(reason) => WalError::Poisoned(reason.clone()),
            WalError::Io {
                action,
                path,
                source,
            } => WalError::Io {
                action,
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            WalError::NoSpace {
                action,
                path,
                source,
            } => WalError::NoSpace {
                action,
                path: path.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            WalError::Corruption {
                file,
                offset,
                detail,
            } => WalError::Corruption {
                file: file.clone(),
                offset: *offset,
                detail: detail.clone(),
            },
            WalError::RecordTooLarge {
                size_bytes,
                size_bytes_max,
            } => WalError::RecordTooLarge {
                size_bytes: *size_bytes,
                size_bytes_max: *size_bytes_max,
            },
            WalError::SequenceNumbersExhausted => WalError::SequenceNumbersExhausted,
            WalError::InvalidOptions(reason) => WalError::InvalidOptions(reason.clone()),
        }
    }
}
