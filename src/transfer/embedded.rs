//! `shoal export --data-dir` and `shoal import --data-dir`: the same moves straight on a
//! database directory (no server running on it), through the tables layer's own export and
//! import — one consistent snapshot written by parallel workers, and a new table built in
//! large batches that appears only once complete.

use std::path::{Path, PathBuf};

use shoal_tables::api::import::{ImportTableInput, S3BucketSource, TableCreationParameters};
use shoal_tables::transfer::import::{ImportLineError, ImportProgress};
use shoal_tables::{Database, ExportProgress, Options, StorageOptions, TransferOptions};

use super::dir::DirSource;
use super::schema;

/// What an embedded import did.
pub struct ImportReport {
    pub items_imported: u64,
    pub items_processed: u64,
    /// The lines that were not items (at most the first 1,000), and how many there were.
    pub bad_lines: Vec<ImportLineError>,
    pub bad_line_count: u64,
    pub failure: Option<String>,
}

/// Exports table `table` of the database in `data_dir` into `to` (created if missing, as
/// an S3 bucket directory: the export lands in `to/AWSDynamoDB/<id>/`); returns the
/// export's directory and its item count.
pub fn export(
    data_dir: &Path,
    table: &str,
    to: &Path,
    progress: impl Fn(ExportProgress) + Sync,
) -> Result<(PathBuf, u64), String> {
    let database = Database::open(
        data_dir,
        Options {
            // An export changes nothing: no Time to Live sweeps or shard rollovers.
            upkeep: false,
            ..Options::default()
        },
    )
    .map_err(|e| format!("cannot open {}: {e}", data_dir.display()))?;
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let finished = database
        .export_table(table, to, progress)
        .map_err(|e| e.to_string())?;
    Ok((finished.dir, finished.summary.item_count))
}

/// Imports the export at `from` into a new table `table` of the database in `data_dir`
/// (created if missing), shaped as the export's `shoal-table.json` says.
pub fn import(
    data_dir: &Path,
    from: &Path,
    table: &str,
    progress: &mut dyn FnMut(&ImportProgress),
) -> Result<ImportReport, String> {
    let source = DirSource::open(from)?;
    let description = source.description.as_ref().ok_or_else(|| {
        format!(
            "{} has no shoal-table.json (DynamoDB's own exports do not): import it with ImportTable and a TableCreationParameters, or into an endpoint's existing table with --endpoint",
            source.dir.display()
        )
    })?;
    let parameters: TableCreationParameters =
        serde_json::from_value(schema::create_table_request(description, table)?)
            .map_err(|e| format!("shoal-table.json: {e}"))?;
    // The export's directory stands for S3, its `data` directory for the bucket: every
    // object in it is a data file of this export.
    let database = Database::open(
        data_dir,
        Options {
            transfer: TransferOptions {
                export_dir: Some(source.dir.clone()),
            },
            // The new table is invisible until the import publishes it, after one sync of
            // everything it wrote (`Database::publish`): a sync per batch would buy nothing,
            // since a crash before the publish drops the staged table whatever was synced.
            // This process writes nothing else.
            storage: StorageOptions {
                durability: shoal_tables::Durability::None,
                ..StorageOptions::default()
            },
            ..Options::default()
        },
    )
    .map_err(|e| format!("cannot open {}: {e}", data_dir.display()))?;
    let description = database
        .import_table_and_wait(
            ImportTableInput {
                s3_bucket_source: Some(S3BucketSource {
                    s3_bucket: Some(shoal_tables::transfer::write::DATA_DIR.to_string()),
                    s3_key_prefix: None,
                    s3_bucket_owner: None,
                }),
                input_format: Some("DYNAMODB_JSON".into()),
                input_compression_type: Some("GZIP".into()),
                table_creation_parameters: Some(parameters),
                ..ImportTableInput::default()
            },
            progress,
        )
        .map_err(|e| e.to_string())?;
    let bad_lines = if description.error_count > 0 {
        database
            .import_errors(&description.import_arn)
            .map_err(|e| e.to_string())?
    } else {
        Vec::new()
    };
    Ok(ImportReport {
        items_imported: description.imported_item_count,
        items_processed: description.processed_item_count,
        bad_line_count: description.error_count,
        bad_lines,
        failure: description.failure_message,
    })
}
