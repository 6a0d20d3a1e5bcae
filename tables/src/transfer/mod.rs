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

/// Where exports go and imports come from (`Options::transfer`).
#[derive(Debug, Clone, Default)]
pub struct TransferOptions {
    /// The local directory standing for S3: bucket B, key K is the file <export_dir>/B/K.
    /// Without it, exports and imports are refused.
    pub export_dir: Option<PathBuf>,
}
