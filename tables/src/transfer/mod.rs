//! Tables moving in and out of Shoal in DynamoDB's own file formats (SPEC-2 §6.3, §6.4).
//!
//! - [`write`]: an export in DynamoDB's S3 export layout, written to a local directory.
//! - [`source`]: the local directory standing for S3 (`TransferOptions::export_dir`): bucket `B`,
//!   key `K` is the file `<export_dir>/B/K`; the objects under a key prefix.
//! - [`read`]: one object streamed through its decompression (GZIP, ZSTD, NONE), cut into
//!   lines of bounded length, with the raw bytes read counted as they go.
//! - [`parse`]: a line or CSV record turned into an item (DYNAMODB_JSON, CSV).
//!
//! The operations that drive them: [`export`] (ExportTableToPointInTime, DescribeExport,
//! ListExports) with [`export_items`] (the items of one snapshot, by parallel workers) and
//! [`export_records`] (the records of exports, the threads that run them); [`import`]
//! (ImportTable, DescribeImport, ListImports) with [`import_job`] (one import's run into a
//! staged table).

pub mod export;
pub mod export_items;
pub mod export_records;
pub mod import;
pub mod import_job;
pub mod parse;
pub mod read;
pub mod source;
pub mod write;

use std::path::PathBuf;
use std::sync::Arc;

use shoal_engine::{Db, DbError};

/// Where exports go and imports come from (`Options::transfer`).
#[derive(Debug, Clone, Default)]
pub struct TransferOptions {
    /// The local directory standing for S3: bucket B, key K is the file <export_dir>/B/K.
    /// Without it, exports and imports are refused.
    pub export_dir: Option<PathBuf>,
}

/// Import and export's state in a [`Database`](crate::Database).
pub(crate) struct TransferState {
    /// Exports' records and running exports ([`export_records`]); running exports stop
    /// when the database is dropped.
    pub(crate) exports: export_records::Exports,
    /// Running imports and their error logs ([`import`]).
    pub(crate) imports: Arc<import::Imports>,
    /// Stops the running imports when the database that started them is dropped.
    _imports_owner: import::ImportsOwner,
}

impl TransferState {
    /// The records of `db`'s exports (interrupted ones marked FAILED, durably if `persist`).
    pub(crate) fn open(db: &Db, persist: bool) -> Result<TransferState, DbError> {
        let imports = Arc::new(import::Imports::default());
        Ok(TransferState {
            exports: export_records::Exports::open(db, crate::core::clock::now_millis(), persist)?,
            imports: Arc::clone(&imports),
            _imports_owner: import::ImportsOwner(Some(imports)),
        })
    }

    /// The same imports for another handle of the database (the upkeep's), which runs no
    /// exports and stops no imports.
    pub(crate) fn share(&self) -> TransferState {
        TransferState {
            exports: export_records::Exports::none(),
            imports: Arc::clone(&self.imports),
            _imports_owner: Default::default(),
        }
    }
}
