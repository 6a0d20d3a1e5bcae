//! ImportTable, DescribeImport and ListImports (SPEC-2 §6.4): the requests' checks, the
//! import records, and the registry of running imports. The run itself (reading the
//! objects, writing the staged table, publishing it) is `transfer::import_job`.
//!
//! An import's record is manifest metadata `import/<ImportId>`, the JSON of
//! [`ImportRecord`], so DescribeImport and ListImports answer after a restart. It is
//! written when the import starts (IN_PROGRESS) and when it ends; the ending record of an
//! import whose table is published goes in the same version change as the table's
//! definition. The newest [`IMPORT_RECORDS_KEPT`] records are kept. A record still
//! IN_PROGRESS at open belongs to an import a crash or a stop interrupted: it is marked
//! FAILED (its staged trees are dropped by `Database::drop_orphan_trees`).
//!
//! ImportId is `<14-digit epoch milliseconds>-<8 hex digits>`, so ids sort by start time;
//! the ImportArn is `<TableArn>/import/<ImportId>`.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use shoal_engine::version::VersionEdit;
use shoal_engine::DbError;
use shoal_model::{ApiError, ErrorCode, ScalarType};

use crate::api::constraint::{
    length_at_most, value_at_least, value_at_most, violation, violation_without_value, Violations,
};
use crate::api::control::CreateTableRequest;
use crate::api::import::{
    CsvOptions, DescribeImportInput, DescribeImportOutput, ImportSummary, ImportTableDescription,
    ImportTableInput, ImportTableOutput, ListImportsInput, ListImportsOutput,
};
use crate::control::schema::{self, TableSchema};
use crate::control::tables::new_table_id;
use crate::core::clock::{epoch_seconds, now_millis};
use crate::core::error::internal;
use crate::core::region::table_arn;
use crate::database::Database;
use crate::transfer::read::Compression;

/// Imports running at once; one more is refused with LimitExceededException.
pub const IMPORTS_RUNNING_MAX: usize = 4;
/// Import records kept (the oldest go first).
pub const IMPORT_RECORDS_KEPT: usize = 1000;
/// ListImports' largest (and default) page.
pub const LIST_IMPORTS_PAGE_SIZE_MAX: i64 = 25;
/// How a FailureMessage of an import with bad lines starts (DynamoDB's words).
pub const ITEM_VALIDATION_FAILURE_PREFIX: &str =
    "Some of the items failed validation checks and were not imported.";
/// The FailureMessage of an import a crash or a stop interrupted.
pub const INTERRUPTED_MESSAGE: &str =
    "The import was interrupted before its table was complete (the process stopped); no table was created";
/// The text of ImportTable without a directory standing for S3.
pub const NO_EXPORT_DIR_MESSAGE: &str = "ImportTable reads its objects from a local directory standing for S3, and none is configured: start shoal serve with --export-dir DIR (TransferOptions::export_dir)";
/// The text of an ImportTable whose InputFormatOptions do not fit its InputFormat.
const UNSUPPORTED_OPTIONS_PREFIX: &str =
    "Invalid Request: Unsupported InputFormatOptions for the given input format:";
const IMPORT_CONFLICT_MESSAGE: &str = "There was a conflict when importing from the specified S3 source. This can occur when the current import conflicts with a previous import request that had the same client token.";
const IMPORT_NOT_FOUND_MESSAGE: &str = "The specified import was not found.";
const RECORD_PREFIX: &str = "import/";
/// The directory of import error logs, in the data directory.
pub const IMPORT_ERRORS_DIR_NAME: &str = "import-errors";
const INPUT_FORMATS: [&str; 3] = ["DYNAMODB_JSON", "ION", "CSV"];
const COMPRESSION_TYPES: [&str; 3] = ["GZIP", "ZSTD", "NONE"];
/// CSV delimiters DynamoDB accepts.
const CSV_DELIMITERS: [&str; 6] = [",", ";", ":", "|", "\t", " "];
const CSV_HEADERS_MAX: usize = 255;
const S3_BUCKET_LENGTH_MAX: usize = 255;
const S3_KEY_PREFIX_LENGTH_MAX: usize = 1024;
/// Bad lines kept in memory per import when the database has no directory for the log.
pub(crate) const MEMORY_LOG_LINES_MAX: usize = 1000;
/// Imports whose in-memory logs are kept.
const MEMORY_LOGS_KEPT: usize = 16;

/// One import, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ImportRecord {
    pub id: String,
    pub table_name: String,
    pub table_id: String,
    pub client_token: String,
    /// The request as made (its ClientToken filled in): what a retry is compared with.
    pub request: ImportTableInput,
    pub status: String,
    pub start_millis: u64,
    pub end_millis: Option<u64>,
    pub processed_size_bytes: u64,
    pub processed_item_count: u64,
    pub imported_item_count: u64,
    pub error_count: u64,
    pub failure_code: Option<String>,
    pub failure_message: Option<String>,
}

impl ImportRecord {
    fn metadata_key(&self) -> String {
        format!("{RECORD_PREFIX}{}", self.id)
    }

    /// The version edit storing this record.
    pub(crate) fn edit(&self) -> Result<VersionEdit, ApiError> {
        Ok(VersionEdit::SetMetadata {
            key: self.metadata_key(),
            value: Some(serde_json::to_vec(self).map_err(internal)?),
        })
    }

    fn arn(&self) -> String {
        format!("{}/import/{}", table_arn(&self.table_name), self.id)
    }

    fn description(&self) -> ImportTableDescription {
        let request = &self.request;
        ImportTableDescription {
            import_arn: self.arn(),
            import_status: self.status.clone(),
            table_arn: table_arn(&self.table_name),
            table_id: self.table_id.clone(),
            client_token: self.client_token.clone(),
            s3_bucket_source: request.s3_bucket_source.clone().unwrap_or_default(),
            error_count: self.error_count,
            cloud_watch_log_group_arn: String::new(),
            input_format: request.input_format.clone().unwrap_or_default(),
            input_format_options: request.input_format_options.clone(),
            input_compression_type: request
                .input_compression_type
                .clone()
                .unwrap_or_else(|| "NONE".to_string()),
            table_creation_parameters: request
                .table_creation_parameters
                .clone()
                .unwrap_or_default(),
            start_time: epoch_seconds(self.start_millis),
            end_time: self.end_millis.map(epoch_seconds),
            processed_size_bytes: self.processed_size_bytes,
            processed_item_count: self.processed_item_count,
            imported_item_count: self.imported_item_count,
            failure_code: self.failure_code.clone(),
            failure_message: self.failure_message.clone(),
        }
    }
}

/// `InputFormat`, as far as Shoal reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InputFormat {
    DynamoDbJson,
    /// The column names (None: each object's first line) and the delimiter.
    Csv {
        header: Option<Vec<String>>,
        delimiter: u8,
    },
}

/// What an import does, once its request is checked.
#[derive(Debug, Clone)]
pub(crate) struct ImportJob {
    pub record: ImportRecord,
    pub schema: TableSchema,
    pub format: InputFormat,
    pub compression: Compression,
    pub export_dir: PathBuf,
    pub bucket: String,
    pub prefix: String,
    pub progress: Arc<ImportCounters>,
}

/// The live counts of a running import.
#[derive(Debug, Default)]
pub struct ImportCounters {
    pub processed_items: AtomicU64,
    pub imported_items: AtomicU64,
    pub errors: AtomicU64,
    pub processed_bytes: Arc<AtomicU64>,
    pub total_bytes: AtomicU64,
}

/// Where an import stands, as the progress callback of
/// [`Database::import_table_and_wait`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImportProgress {
    /// Lines (CSV records) read, bad ones included.
    pub items_processed: u64,
    pub items_imported: u64,
    pub errors: u64,
    /// Bytes of the objects read so far, as stored (compressed).
    pub bytes_processed: u64,
    /// The objects' total size, known once they are listed.
    pub bytes_total: u64,
}

impl ImportCounters {
    pub fn snapshot(&self) -> ImportProgress {
        ImportProgress {
            items_processed: self.processed_items.load(Ordering::Relaxed),
            items_imported: self.imported_items.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            bytes_processed: self.processed_bytes.load(Ordering::Relaxed),
            bytes_total: self.total_bytes.load(Ordering::Relaxed),
        }
    }
}

/// One bad line of an import: which object, which line (from 1), why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportLineError {
    pub file: String,
    pub line: u64,
    pub reason: String,
}

/// The imports of one database: those running, and where bad lines are logged.
#[derive(Default)]
pub(crate) struct Imports {
    /// Running imports by id, with their table's name and live counts.
    running: Mutex<BTreeMap<String, (String, Arc<ImportCounters>)>>,
    /// Serialises the start of imports (token, table and limit checks) and record writes.
    change: Mutex<()>,
    /// `<data-dir>/import-errors`, for a database on disk.
    error_dir: RwLock<Option<PathBuf>>,
    /// Bad lines of recent imports, for a database without a directory.
    memory_logs: Mutex<VecDeque<(String, Vec<ImportLineError>)>>,
    /// Set when the database closes: running imports stop and discard their tables.
    pub(crate) stop: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Imports {
    pub(crate) fn set_error_dir(&self, dir: PathBuf) {
        *self.error_dir.write() = Some(dir);
    }

    /// Held while import records change (see [`Database::store_import_record`]).
    pub(crate) fn lock_records(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.change.lock()
    }

    pub(crate) fn error_dir(&self) -> Option<PathBuf> {
        self.error_dir.read().clone()
    }

    pub(crate) fn keep_memory_log(&self, id: &str, lines: Vec<ImportLineError>) {
        let mut logs = self.memory_logs.lock();
        if logs.len() == MEMORY_LOGS_KEPT {
            logs.pop_front();
        }
        logs.push_back((id.to_string(), lines));
    }

    pub(crate) fn finished(&self, id: &str) {
        self.running.lock().remove(id);
    }

    /// Stops running imports and waits for them: a database closing.
    pub(crate) fn stop_all(&self) {
        self.stop.store(true, Ordering::Release);
        let threads = std::mem::take(&mut *self.threads.lock());
        for thread in threads {
            // A panicked import thread has nothing more to clean up; its record is
            // marked FAILED at the next open.
            let _ = thread.join();
        }
    }
}

/// Stops the database's imports when the `Database` that started them is dropped (the
/// copies `Database::share` makes own none).
#[derive(Default)]
pub(crate) struct ImportsOwner(pub(crate) Option<Arc<Imports>>);

impl Drop for ImportsOwner {
    fn drop(&mut self) {
        if let Some(imports) = &self.0 {
            imports.stop_all();
        }
    }
}

/// The id part of an ImportArn (`…/import/<id>`), if it has one.
fn import_id_of(arn: &str) -> Option<&str> {
    arn.rsplit_once("/import/")
        .map(|(_, id)| id)
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// `<14-digit epoch milliseconds>-<8 hex digits>`.
fn new_import_id(now_millis: u64) -> String {
    let random = new_table_id();
    format!("{now_millis:014}-{}", &random[..8])
}

/// S3's bucket name pattern as ImportTable checks it: `^[a-z0-9A-Z]+[\.\-\w]*[a-z0-9A-Z]+$`.
/// It also keeps a bucket one directory below the export directory (no `/`, never `..`
/// alone).
fn is_bucket_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: &u8| b.is_ascii_alphanumeric();
    bytes.len() >= 2
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

impl Database {
    /// ImportTable: checks the request and starts the import in a background thread; the
    /// answer describes it IN_PROGRESS. DescribeImport follows it.
    pub fn import_table(&self, request: ImportTableInput) -> Result<ImportTableOutput, ApiError> {
        let (record, job) = self.begin_import(request)?;
        let Some(job) = job else {
            return Ok(ImportTableOutput {
                import_table_description: record.description(),
            });
        };
        let description = job.record.description();
        let mut failed = job.record.clone();
        let shared = self.share();
        let region = crate::core::region::current();
        let spawned = std::thread::Builder::new()
            .name(format!("import-{}", job.record.id))
            .spawn(move || {
                crate::core::region::with_region(Some(&region), || {
                    shared.run_import(job, &mut |_| {});
                })
            });
        let thread = match spawned {
            Ok(thread) => thread,
            Err(error) => {
                // Nothing ran: the import ends here rather than staying IN_PROGRESS.
                failed.status = "FAILED".to_string();
                failed.end_millis = Some(now_millis());
                failed.failure_code = Some("InternalError".to_string());
                failed.failure_message = Some(format!("The import could not start: {error}"));
                self.store_import_record(&failed, Vec::new())?;
                self.transfer.imports.finished(&failed.id);
                return Err(internal(error));
            }
        };
        let mut threads = self.transfer.imports.threads.lock();
        threads.retain(|thread| !thread.is_finished());
        threads.push(thread);
        Ok(ImportTableOutput {
            import_table_description: description,
        })
    }

    /// ImportTable run on the calling thread, for a command-line tool: `progress` is called
    /// after every batch of items written. Returns the import's final description
    /// (COMPLETED, or FAILED with its FailureCode and FailureMessage).
    pub fn import_table_and_wait(
        &self,
        request: ImportTableInput,
        progress: &mut dyn FnMut(&ImportProgress),
    ) -> Result<ImportTableDescription, ApiError> {
        let (record, job) = self.begin_import(request)?;
        match job {
            Some(job) => Ok(self.run_import(job, progress).description()),
            None => Ok(record.description()),
        }
    }

    /// DescribeImport.
    pub fn describe_import(
        &self,
        request: DescribeImportInput,
    ) -> Result<DescribeImportOutput, ApiError> {
        let mut violations = Violations::default();
        violations.not_null("importArn", request.import_arn.is_some());
        violations.finish()?;
        let arn = request.import_arn.as_deref().unwrap_or_default();
        let record = import_id_of(arn)
            .and_then(|id| self.import_record(id).transpose())
            .transpose()?
            .ok_or_else(|| {
                ApiError::new(ErrorCode::ImportNotFoundException, IMPORT_NOT_FOUND_MESSAGE)
            })?;
        Ok(DescribeImportOutput {
            import_table_description: self.with_live_counts(record).description(),
        })
    }

    /// ListImports: imports oldest first, `PageSize` (1..=25) at a time, optionally only
    /// those of the table `TableArn` names.
    pub fn list_imports(&self, request: ListImportsInput) -> Result<ListImportsOutput, ApiError> {
        let mut violations = Violations::default();
        if let Some(size) = request.page_size {
            let text = size.to_string();
            if size < 1 {
                violations.push(violation(Some(&text), "pageSize", &value_at_least(1)));
            }
            if size > LIST_IMPORTS_PAGE_SIZE_MAX {
                violations.push(violation(
                    Some(&text),
                    "pageSize",
                    &value_at_most(LIST_IMPORTS_PAGE_SIZE_MAX),
                ));
            }
        }
        violations.finish()?;
        let page = request.page_size.unwrap_or(LIST_IMPORTS_PAGE_SIZE_MAX) as usize;
        let table = request
            .table_arn
            .as_deref()
            .map(|arn| arn.split_once(":table/").map_or(arn, |(_, name)| name));
        let after = request.next_token.as_deref().unwrap_or_default();
        let mut records = self
            .import_records()?
            .into_iter()
            .filter(|record| record.id.as_str() > after)
            .filter(|record| table.is_none_or(|name| record.table_name == name));
        let import_summary_list: Vec<ImportSummary> = records
            .by_ref()
            .take(page)
            .map(|record| {
                let description = self.with_live_counts(record).description();
                ImportSummary {
                    import_arn: description.import_arn,
                    import_status: description.import_status,
                    table_arn: description.table_arn,
                    s3_bucket_source: description.s3_bucket_source,
                    cloud_watch_log_group_arn: description.cloud_watch_log_group_arn,
                    input_format: description.input_format,
                    start_time: description.start_time,
                    end_time: description.end_time,
                }
            })
            .collect();
        let next_token = match records.next() {
            Some(_) => import_summary_list
                .last()
                .and_then(|summary| import_id_of(&summary.import_arn))
                .map(str::to_string),
            None => None,
        };
        Ok(ListImportsOutput {
            import_summary_list,
            next_token,
        })
    }

    /// The bad lines of an import (at most the first [`MEMORY_LOG_LINES_MAX`] of an
    /// in-memory database; the log file of one on disk holds them all).
    pub fn import_errors(&self, import_arn: &str) -> Result<Vec<ImportLineError>, ApiError> {
        let not_found =
            || ApiError::new(ErrorCode::ImportNotFoundException, IMPORT_NOT_FOUND_MESSAGE);
        let id = import_id_of(import_arn).ok_or_else(not_found)?;
        self.import_record(id)?.ok_or_else(not_found)?;
        if let Some(lines) = self
            .transfer
            .imports
            .memory_logs
            .lock()
            .iter()
            .find(|(logged, _)| logged == id)
            .map(|(_, lines)| lines.clone())
        {
            return Ok(lines);
        }
        let Some(path) = self.import_error_log_path(id) else {
            return Ok(Vec::new());
        };
        crate::transfer::import_job::read_error_log(&path)
    }

    /// `<data-dir>/import-errors/<ImportId>.jsonl` for a database on disk.
    pub(crate) fn import_error_log_path(&self, id: &str) -> Option<PathBuf> {
        self.transfer
            .imports
            .error_dir()
            .map(|dir| dir.join(format!("{id}.jsonl")))
    }

    /// The stored record of import `id`.
    fn import_record(&self, id: &str) -> Result<Option<ImportRecord>, ApiError> {
        let version = self.db.version();
        version
            .metadata
            .get(&format!("{RECORD_PREFIX}{id}"))
            .map(|bytes| serde_json::from_slice(bytes).map_err(internal))
            .transpose()
    }

    /// Every stored import record, oldest first.
    fn import_records(&self) -> Result<Vec<ImportRecord>, ApiError> {
        let version = self.db.version();
        version
            .metadata
            .range(RECORD_PREFIX.to_string()..)
            .take_while(|(key, _)| key.starts_with(RECORD_PREFIX))
            .map(|(_, bytes)| serde_json::from_slice(bytes).map_err(internal))
            .collect()
    }

    /// `record` with the counts of its run, while it runs.
    fn with_live_counts(&self, mut record: ImportRecord) -> ImportRecord {
        if let Some((_, counters)) = self.transfer.imports.running.lock().get(&record.id) {
            let now = counters.snapshot();
            record.processed_item_count = now.items_processed;
            record.imported_item_count = now.items_imported;
            record.error_count = now.errors;
            record.processed_size_bytes = now.bytes_processed;
        }
        record
    }

    /// Stores `record` (and drops the oldest records past [`IMPORT_RECORDS_KEPT`]), with
    /// `extra` edits in the same version change.
    pub(crate) fn store_import_record(
        &self,
        record: &ImportRecord,
        extra: Vec<VersionEdit>,
    ) -> Result<(), ApiError> {
        let _change = self.transfer.imports.change.lock();
        let mut edits = self.import_record_edits(record)?;
        edits.extend(extra);
        self.db.apply_edits(edits.clone()).map_err(internal)?;
        self.remove_trimmed_logs(&edits);
        Ok(())
    }

    /// Removes the error logs of the records `edits` dropped: the logs are kept as long as
    /// the records. A log left by a crash between is removed with no record to name it
    /// only by hand; it is never read again.
    pub(crate) fn remove_trimmed_logs(&self, edits: &[VersionEdit]) {
        for edit in edits {
            if let VersionEdit::SetMetadata { key, value: None } = edit {
                let log = key
                    .strip_prefix(RECORD_PREFIX)
                    .and_then(|id| self.import_error_log_path(id));
                if let Some(log) = log {
                    // Most imports have no bad line, hence no log.
                    let _ = std::fs::remove_file(log);
                }
            }
        }
    }

    /// The edits that store `record` and trim the oldest records.
    pub(crate) fn import_record_edits(
        &self,
        record: &ImportRecord,
    ) -> Result<Vec<VersionEdit>, ApiError> {
        let version = self.db.version();
        let stored: Vec<&String> = version
            .metadata
            .range(RECORD_PREFIX.to_string()..)
            .take_while(|(key, _)| key.starts_with(RECORD_PREFIX))
            .map(|(key, _)| key)
            .collect();
        let key = record.metadata_key();
        let after = stored.len() + usize::from(!version.metadata.contains_key(&key));
        let mut edits = vec![record.edit()?];
        edits.extend(
            stored
                .into_iter()
                .filter(|stored| **stored != key)
                .take(after.saturating_sub(IMPORT_RECORDS_KEPT))
                .map(|stale| VersionEdit::SetMetadata {
                    key: stale.clone(),
                    value: None,
                }),
        );
        Ok(edits)
    }

    /// At open: records of imports a crash or a stop interrupted are marked FAILED.
    pub(crate) fn recover_imports(&self) -> Result<(), DbError> {
        let records = self
            .import_records()
            .map_err(|e| DbError::Poisoned(e.message))?;
        let now = now_millis();
        let mut edits = Vec::new();
        for mut record in records {
            if record.status == "IN_PROGRESS" {
                record.status = "FAILED".to_string();
                record.end_millis = Some(now);
                record.failure_code = Some("InternalError".to_string());
                record.failure_message = Some(INTERRUPTED_MESSAGE.to_string());
                edits.push(record.edit().map_err(|e| DbError::Poisoned(e.message))?);
            }
        }
        if edits.is_empty() {
            return Ok(());
        }
        self.db.apply_edits(edits)
    }

    /// Checks an ImportTable request and, unless it repeats an earlier one (same
    /// ClientToken, same request: that import is answered), records the new import
    /// IN_PROGRESS and returns what it is to do.
    fn begin_import(
        &self,
        mut request: ImportTableInput,
    ) -> Result<(ImportRecord, Option<ImportJob>), ApiError> {
        let checked = check_request(&request)?;
        let Some(export_dir) = self.options.transfer.export_dir.clone() else {
            return Err(ApiError::validation(NO_EXPORT_DIR_MESSAGE));
        };
        let _change = self.transfer.imports.change.lock();
        if let Some(token) = request.client_token.as_deref() {
            if let Some(earlier) = self
                .import_records()?
                .into_iter()
                .rev()
                .find(|record| record.client_token == token)
            {
                if earlier.request == request {
                    return Ok((self.with_live_counts(earlier), None));
                }
                return Err(ApiError::new(
                    ErrorCode::ImportConflictException,
                    IMPORT_CONFLICT_MESSAGE,
                ));
            }
        }
        let name = checked.schema.name.clone();
        let table_exists = self.find_table(&name).is_some()
            || self
                .transfer
                .imports
                .running
                .lock()
                .values()
                .any(|(table, _)| *table == name);
        if table_exists {
            return Err(ApiError::new(
                ErrorCode::ResourceInUseException,
                format!("Table already exists: {name}"),
            ));
        }
        if self.transfer.imports.running.lock().len() >= IMPORTS_RUNNING_MAX {
            return Err(ApiError::new(
                ErrorCode::LimitExceededException,
                format!(
                    "Subscriber limit exceeded: Only {IMPORTS_RUNNING_MAX} table imports can run at once"
                ),
            ));
        }
        let client_token = request
            .client_token
            .get_or_insert_with(new_table_id)
            .clone();
        let start_millis = now_millis();
        let record = ImportRecord {
            id: new_import_id(start_millis),
            table_name: name.clone(),
            // The table's id is chosen when its trees are created; the record names it
            // once known.
            table_id: String::new(),
            client_token,
            request,
            status: "IN_PROGRESS".to_string(),
            start_millis,
            end_millis: None,
            processed_size_bytes: 0,
            processed_item_count: 0,
            imported_item_count: 0,
            error_count: 0,
            failure_code: None,
            failure_message: None,
        };
        let edits = self.import_record_edits(&record)?;
        self.db.apply_edits(edits.clone()).map_err(internal)?;
        self.remove_trimmed_logs(&edits);
        let progress = Arc::new(ImportCounters::default());
        self.transfer
            .imports
            .running
            .lock()
            .insert(record.id.clone(), (name, Arc::clone(&progress)));
        let job = ImportJob {
            record: record.clone(),
            schema: checked.schema,
            format: checked.format,
            compression: checked.compression,
            export_dir,
            bucket: checked.bucket,
            prefix: checked.prefix,
            progress,
        };
        Ok((record, Some(job)))
    }
}

/// An ImportTable request's members, checked.
struct CheckedRequest {
    schema: TableSchema,
    format: InputFormat,
    compression: Compression,
    bucket: String,
    prefix: String,
}

/// The checks of an ImportTable request, before anything is looked up.
fn check_request(request: &ImportTableInput) -> Result<CheckedRequest, ApiError> {
    let mut violations = Violations::default();
    let source = request.s3_bucket_source.as_ref();
    violations.not_null("s3BucketSource", source.is_some());
    let bucket = source.and_then(|s| s.s3_bucket.as_deref());
    if source.is_some() {
        violations.not_null("s3BucketSource.s3Bucket", bucket.is_some());
    }
    if let Some(bucket) = bucket {
        if bucket.len() > S3_BUCKET_LENGTH_MAX {
            violations.push(violation(
                Some(bucket),
                "s3BucketSource.s3Bucket",
                &length_at_most(S3_BUCKET_LENGTH_MAX),
            ));
        }
        if !is_bucket_name(bucket) {
            violations.push(violation(
                Some(bucket),
                "s3BucketSource.s3Bucket",
                "Member must satisfy regular expression pattern: ^[a-z0-9A-Z]+[\\.\\-\\w]*[a-z0-9A-Z]+$",
            ));
        }
    }
    let prefix = source
        .and_then(|s| s.s3_key_prefix.as_deref())
        .unwrap_or_default();
    if prefix.len() > S3_KEY_PREFIX_LENGTH_MAX {
        violations.push(violation(
            Some(prefix),
            "s3BucketSource.s3KeyPrefix",
            &length_at_most(S3_KEY_PREFIX_LENGTH_MAX),
        ));
    }
    violations.not_null("inputFormat", request.input_format.is_some());
    violations.one_of(
        request.input_format.as_deref(),
        "inputFormat",
        &INPUT_FORMATS,
    );
    violations.one_of(
        request.input_compression_type.as_deref(),
        "inputCompressionType",
        &COMPRESSION_TYPES,
    );
    let csv = request
        .input_format_options
        .as_ref()
        .and_then(|options| options.csv.as_ref());
    if let Some(csv) = csv {
        if let Some(delimiter) = csv
            .delimiter
            .as_deref()
            .filter(|d| !CSV_DELIMITERS.contains(d))
        {
            violations.push(violation(
                Some(delimiter),
                "inputFormatOptions.csv.delimiter",
                "Member must satisfy regular expression pattern: [,;:|\\t ]",
            ));
        }
        if let Some(headers) = &csv.header_list {
            if headers.is_empty() || headers.len() > CSV_HEADERS_MAX {
                violations.push(violation_without_value(
                    "inputFormatOptions.csv.headerList",
                    &if headers.is_empty() {
                        "Member must have length greater than or equal to 1".to_string()
                    } else {
                        length_at_most(CSV_HEADERS_MAX)
                    },
                ));
            }
        }
    }
    violations.not_null(
        "tableCreationParameters",
        request.table_creation_parameters.is_some(),
    );
    violations.finish()?;

    let input_format = request.input_format.as_deref().unwrap_or_default();
    if input_format != "CSV" && csv.is_some() {
        return Err(ApiError::validation(format!(
            "{UNSUPPORTED_OPTIONS_PREFIX} {input_format}."
        )));
    }
    if input_format == "ION" {
        return Err(ApiError::validation(
            "Shoal does not implement InputFormat ION on ImportTable yet",
        ));
    }
    let parameters = request
        .table_creation_parameters
        .clone()
        .unwrap_or_default();
    // Checked exactly as CreateTable checks the same members.
    let schema = schema::validate_create_table(&CreateTableRequest {
        table_name: parameters.table_name,
        attribute_definitions: parameters.attribute_definitions,
        key_schema: parameters.key_schema,
        global_secondary_indexes: parameters.global_secondary_indexes,
        local_secondary_indexes: parameters.local_secondary_indexes,
        billing_mode: parameters.billing_mode,
        provisioned_throughput: parameters.provisioned_throughput,
        on_demand_throughput: parameters.on_demand_throughput,
        sse_specification: parameters.sse_specification,
        ..CreateTableRequest::default()
    })?;
    let format = match csv_format(input_format, csv) {
        Some(format) => format,
        None => InputFormat::DynamoDbJson,
    };
    let compression = request
        .input_compression_type
        .as_deref()
        .and_then(Compression::parse)
        .unwrap_or(Compression::None);
    Ok(CheckedRequest {
        schema,
        format,
        compression,
        bucket: bucket.unwrap_or_default().to_string(),
        prefix: prefix.to_string(),
    })
}

/// The CSV format of a request whose InputFormat is CSV.
fn csv_format(input_format: &str, csv: Option<&CsvOptions>) -> Option<InputFormat> {
    (input_format == "CSV").then(|| InputFormat::Csv {
        header: csv.and_then(|csv| csv.header_list.clone()),
        delimiter: csv
            .and_then(|csv| csv.delimiter.as_deref())
            .and_then(|d| d.bytes().next())
            .unwrap_or(b','),
    })
}

/// The key attributes of the table and its GSIs, with the types their
/// AttributeDefinitions give: the CSV columns that are not strings.
pub(crate) fn typed_columns(schema: &TableSchema) -> BTreeMap<String, ScalarType> {
    let mut names: Vec<&str> = schema.key.names().collect();
    for gsi in &schema.global_indexes {
        names.extend(gsi.key.names());
    }
    schema
        .attribute_definitions
        .iter()
        .filter(|definition| names.contains(&definition.name.as_str()))
        .map(|definition| (definition.name.clone(), definition.scalar_type()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_ids_sort_by_time_and_arns_give_them_back() {
        let a = new_import_id(1_700_000_000_000);
        assert_eq!(a.len(), 14 + 1 + 8);
        assert!(a.starts_with("01700000000000-"));
        assert!(new_import_id(999) < a);
        let arn = format!("{}/import/{a}", table_arn("T"));
        assert_eq!(import_id_of(&arn), Some(a.as_str()));
        assert_eq!(import_id_of("arn:aws:dynamodb:x:1:table/T"), None);
    }

    #[test]
    fn bucket_names_stay_one_directory_down() {
        for good in ["my-bucket", "b.1", "ab", "A_b"] {
            assert!(is_bucket_name(good), "{good}");
        }
        for bad in ["..", "a/b", "a", "-a", "a-", "../x", ""] {
            assert!(!is_bucket_name(bad), "{bad}");
        }
    }
}
