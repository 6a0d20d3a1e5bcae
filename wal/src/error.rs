//! The WAL's error type.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in the WAL.
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    /// An earlier write or sync failed; the WAL accepts no more writes. Reads elsewhere go on.
    #[error("the write-ahead log accepts no more writes since an earlier failure: {0}")]
    Poisoned(String),
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
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        WalError::Io {
            action,
            path: path.into(),
            source,
        }
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
