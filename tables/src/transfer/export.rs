//! ExportTableToPointInTime, DescribeExport and ListExports (SPEC-2 §6.3), and the
//! synchronous export of the embedded API ([`Database::export_table`]).
//!
//! An export reads one engine snapshot of the table, taken while the request is answered:
//! every write acknowledged before the request is in it, none that started after it. Its
//! files go to `<export_dir>/<S3Bucket>/[<S3Prefix>/]AWSDynamoDB/<ExportId>/`
//! (`transfer::write` describes them); `TransferOptions::export_dir` is the directory standing for
//! S3, and without it exports are refused. The export runs on a thread of its own
//! (`transfer::export_records`), so the request answers IN_PROGRESS at once.
//!
//! Checks, in order: member constraints (`N validation errors detected`), the export
//! directory, what Shoal does not implement (ION, incremental exports, KMS), the prefix as a
//! local path, the ARN, the table, the ExportTime, then (with the export's start) the
//! ClientToken and the number of exports running.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use shoal_engine::Snapshot;
use shoal_model::{ApiError, ErrorCode};

use crate::api::constraint::{length_at_least, length_at_most, violation, Violations};
use crate::api::control::{DescribeTableRequest, DescribeTableResponse};
use crate::api::export::{
    DescribeExportRequest, DescribeExportResponse, ExportDescription, ExportSummary,
    ExportTableToPointInTimeRequest, ExportTableToPointInTimeResponse, ListExportsRequest,
    ListExportsResponse,
};
use crate::control::tables::random_bits;
use crate::core::catalog::TableDef;
use crate::core::clock::{epoch_seconds, now_millis};
use crate::core::error::internal;
use crate::core::region::table_arn;
use crate::database::Database;
use crate::tags::{resource_of, Resource};
use crate::transfer::export_items::{write_items, ExportItemsError, ExportProgress};
use crate::transfer::export_records::{
    export_id_of, fail, ExportRecord, FAILURE_INTERNAL, STATUS_COMPLETED, STATUS_IN_PROGRESS,
};
use crate::transfer::write::{ExportIdentity, ExportWriteError, ExportWriter, FinishedExport};

/// ExportFormat values (API model); only DYNAMODB_JSON is written.
pub const EXPORT_FORMATS: [&str; 2] = ["DYNAMODB_JSON", "ION"];
/// ExportType values (API model); only FULL_EXPORT is run.
pub const EXPORT_TYPES: [&str; 2] = ["FULL_EXPORT", "INCREMENTAL_EXPORT"];
/// S3SseAlgorithm values (API model); AES256 is recorded, KMS refused.
pub const S3_SSE_ALGORITHMS: [&str; 2] = ["AES256", "KMS"];

/// Longest TableArn and ExportArn, shortest ExportArn (API model).
pub const ARN_LENGTH_MAX: usize = 1024;
pub const EXPORT_ARN_LENGTH_MIN: usize = 37;
/// Longest S3Bucket (API model).
pub const S3_BUCKET_LENGTH_MAX: usize = 255;
/// Longest S3Prefix (API model).
pub const S3_PREFIX_LENGTH_MAX: usize = 1024;
/// Longest S3SseKmsKeyId (API model).
pub const S3_SSE_KMS_KEY_ID_LENGTH_MAX: usize = 2048;
/// ListExports' MaxResults range (API model); also its default.
pub const LIST_EXPORTS_MAX_RESULTS: i64 = 25;

const S3_BUCKET_PATTERN: &str =
    "Member must satisfy regular expression pattern: ^[a-z0-9A-Z]+[\\.\\-\\w]*[a-z0-9A-Z]+$";
const S3_BUCKET_OWNER_PATTERN: &str = "Member must satisfy regular expression pattern: [0-9]{12}";
const CLIENT_TOKEN_PATTERN: &str = "Member must satisfy regular expression pattern: ^[^\\$]+$";

/// The FailureCode of an export to a bucket that does not exist (AWS's).
pub const FAILURE_NO_SUCH_BUCKET: &str = "S3NoSuchBucket";

impl Database {
    /// ExportTableToPointInTime: starts an export of the table's current state and answers
    /// IN_PROGRESS; DescribeExport tells when it ends.
    pub fn export_table_to_point_in_time(
        &self,
        request: ExportTableToPointInTimeRequest,
    ) -> Result<ExportTableToPointInTimeResponse, ApiError> {
        check_request(&request)?;
        let Some(export_dir) = self.options.transfer.export_dir.clone() else {
            return Err(ApiError::validation(
                "ExportTableToPointInTime needs a directory standing for S3: start Shoal with --export-dir DIR (TransferOptions::export_dir)",
            ));
        };
        refuse_unimplemented(&request)?;
        let prefix = local_prefix(request.s3_prefix.as_deref())?;
        let arn = request.table_arn.as_deref().unwrap_or_default();
        let table_name = match resource_of(arn, "ExportTableToPointInTime")? {
            Resource::Table(name) => name,
            Resource::Stream { .. } => {
                return Err(ApiError::validation(format!(
                    "One or more parameter values were invalid: TableArn must name a table, not a stream: {arn}"
                )))
            }
        };
        let table = self.backed_up_table(table_name)?;
        // AWS exports only tables with point-in-time recovery (the embedded
        // `Database::export_table` exports any table as it is now).
        if table.settings.point_in_time_recovery.is_none() {
            return Err(crate::backups::pitr::pitr_unavailable(&table.name));
        }
        let started = now_millis();
        let client_token = request
            .client_token
            .clone()
            .unwrap_or_else(|| format!("{:032x}", random_bits()));
        let parameters = ExportTableToPointInTimeRequest {
            table_arn: Some(table.name.clone()),
            client_token: None,
            ..request.clone()
        };
        let parameters = serde_json::to_value(parameters).map_err(internal)?;
        let (snapshot, export_time_millis) =
            self.export_snapshot(&table, request.export_time, started)?;
        let table_arn = table_arn(&table.name);
        let export_id = self.transfer.exports.new_id(started);
        let description = ExportDescription {
            export_arn: format!("{table_arn}/export/{export_id}"),
            export_status: STATUS_IN_PROGRESS.to_string(),
            start_time: epoch_seconds(started),
            table_arn: table_arn.clone(),
            table_id: table.id.clone(),
            export_time: epoch_seconds(export_time_millis),
            client_token,
            s3_bucket: request.s3_bucket.clone().unwrap_or_default(),
            s3_bucket_owner: request.s3_bucket_owner.clone(),
            s3_prefix: request.s3_prefix.clone(),
            s3_sse_algorithm: request.s3_sse_algorithm.clone(),
            s3_sse_kms_key_id: request.s3_sse_kms_key_id.clone(),
            export_format: request
                .export_format
                .clone()
                .unwrap_or_else(|| EXPORT_FORMATS[0].to_string()),
            export_type: request.export_type.clone(),
            ..ExportDescription::default()
        };
        let identity = ExportIdentity {
            export_arn: description.export_arn.clone(),
            table_arn,
            table_id: table.id.clone(),
            s3_bucket: description.s3_bucket.clone(),
            s3_prefix: prefix.clone(),
            s3_sse_algorithm: description.s3_sse_algorithm.clone(),
            start_time_millis: started,
            export_time_millis,
        };
        let schema = self.describe_table(DescribeTableRequest {
            table_name: Some(table.name.clone()),
        })?;
        let total_items = self.table_stats(&table).table.item_count;
        let record = ExportRecord {
            description: description.clone(),
            table_name: table.name.clone(),
            parameters,
        };
        let bucket_dir = export_dir.join(&description.s3_bucket);
        let db = Arc::clone(&self.db);
        let job = move |shared: &crate::transfer::export_records::ExportsShared| {
            let export = ExportJob {
                db: &db,
                table: &table,
                snapshot: &snapshot,
                identity: &identity,
                schema: &schema,
                total_items,
                stop: &shared.stop,
            };
            let outcome = ExportWriter::create(&bucket_dir, prefix.as_deref(), &export_id)
                .map_err(ExportItemsError::Write)
                .and_then(|writer| export.run(writer, &|_| {}));
            ended(description, outcome, now_millis())
        };
        Ok(ExportTableToPointInTimeResponse {
            export_description: self.transfer.exports.start(&self.db, record, job)?,
        })
    }

    /// DescribeExport.
    pub fn describe_export(
        &self,
        request: DescribeExportRequest,
    ) -> Result<DescribeExportResponse, ApiError> {
        let mut problems = Violations::default();
        arn_constraints(
            &mut problems,
            request.export_arn.as_deref(),
            "exportArn",
            EXPORT_ARN_LENGTH_MIN,
        );
        problems.finish()?;
        let arn = request.export_arn.as_deref().unwrap_or_default();
        let not_found = || {
            ApiError::new(
                ErrorCode::ExportNotFoundException,
                format!("Export not found: {arn}"),
            )
        };
        let record = self
            .transfer
            .exports
            .get(export_id_of(arn))
            .ok_or_else(not_found)?;
        // ARNs of any region name the same export; the table must be the export's.
        let table_part = format!(":table/{}/export/", record.table_name);
        if !arn.contains(&table_part) {
            return Err(not_found());
        }
        Ok(DescribeExportResponse {
            export_description: record.description,
        })
    }

    /// ListExports: oldest first, `MaxResults` (1..=25, 25 by default) a page; `NextToken`
    /// is the id of the last export of the previous page.
    pub fn list_exports(
        &self,
        request: ListExportsRequest,
    ) -> Result<ListExportsResponse, ApiError> {
        let mut problems = Violations::default();
        problems.within(
            request.max_results,
            "maxResults",
            1,
            LIST_EXPORTS_MAX_RESULTS,
        );
        if let Some(arn) = request.table_arn.as_deref() {
            arn_constraints(&mut problems, Some(arn), "tableArn", 1);
        }
        problems.finish()?;
        let table = match request.table_arn.as_deref() {
            Some(arn) => Some(resource_of(arn, "ListExports")?.table_name().to_string()),
            None => None,
        };
        let page =
            usize::try_from(request.max_results.unwrap_or(LIST_EXPORTS_MAX_RESULTS)).unwrap_or(1);
        let after = request.next_token.as_deref().unwrap_or_default();
        let mut listed = self
            .transfer
            .exports
            .all()
            .into_iter()
            .filter(|record| export_id_of(&record.description.export_arn) > after)
            .filter(|record| table.as_ref().is_none_or(|t| *t == record.table_name));
        let export_summaries: Vec<ExportSummary> = listed
            .by_ref()
            .take(page)
            .map(|record| ExportSummary {
                export_arn: record.description.export_arn,
                export_status: record.description.export_status,
                export_type: record.description.export_type,
            })
            .collect();
        let next_token = match (listed.next(), export_summaries.last()) {
            (Some(_), Some(last)) => Some(export_id_of(&last.export_arn).to_string()),
            _ => None,
        };
        Ok(ListExportsResponse {
            export_summaries,
            next_token,
        })
    }

    /// Exports table `table_name` as it is now into the bucket directory `bucket_dir`
    /// (the export's files go to `<bucket_dir>/AWSDynamoDB/<ExportId>/`), and returns when
    /// it is complete. `progress` is called from the exporting threads as items are written.
    /// The export is not recorded: DescribeExport and ListExports do not show it.
    pub fn export_table(
        &self,
        table_name: &str,
        bucket_dir: &Path,
        progress: impl Fn(ExportProgress) + Sync,
    ) -> Result<FinishedExport, ApiError> {
        let table = self.table(table_name)?;
        let started = now_millis();
        let (snapshot, export_time_millis) = self.export_snapshot(&table, None, started)?;
        let table_arn = table_arn(&table.name);
        let export_id = self.transfer.exports.new_id(started);
        let identity = ExportIdentity {
            export_arn: format!("{table_arn}/export/{export_id}"),
            table_arn,
            table_id: table.id.clone(),
            s3_bucket: bucket_name(bucket_dir),
            s3_prefix: None,
            s3_sse_algorithm: None,
            start_time_millis: started,
            export_time_millis,
        };
        let schema = self.describe_table(DescribeTableRequest {
            table_name: Some(table.name.clone()),
        })?;
        let stop = AtomicBool::new(false);
        let export = ExportJob {
            db: &self.db,
            table: &table,
            snapshot: &snapshot,
            identity: &identity,
            schema: &schema,
            total_items: self.table_stats(&table).table.item_count,
            stop: &stop,
        };
        let writer = ExportWriter::create(bucket_dir, None, &export_id).map_err(write_error)?;
        export.run(writer, &progress).map_err(|error| match error {
            ExportItemsError::Write(error) => write_error(error),
            ExportItemsError::Read(error) => error,
            ExportItemsError::Stopped => internal("the export was stopped"),
        })
    }

    /// The snapshot an export of `table` at `export_time` (seconds since the Unix epoch;
    /// None: now) reads, and the export time in milliseconds. A time in the past reads the
    /// history point-in-time recovery keeps (`backups::pitr`).
    fn export_snapshot(
        &self,
        table: &TableDef,
        export_time: Option<f64>,
        now_millis: u64,
    ) -> Result<(Snapshot, u64), ApiError> {
        let Some(export_time) = export_time else {
            return Ok((self.db.snapshot(), now_millis));
        };
        let invalid = || {
            ApiError::new(
                ErrorCode::InvalidExportTimeException,
                format!(
                    "Invalid ExportTime {export_time}: an export time must be within the table's point-in-time recovery window, and not in the future"
                ),
            )
        };
        let Some(pitr) = &table.settings.point_in_time_recovery else {
            return Err(crate::backups::pitr::pitr_unavailable(&table.name));
        };
        let millis = self
            .restorable_millis(pitr, export_time)
            .map_err(|_| invalid())?;
        let snapshot = self.pitr_snapshot(pitr, table.tree, millis)?;
        Ok((snapshot, millis))
    }
}

/// One export's work: the items, then the manifests.
struct ExportJob<'a> {
    db: &'a shoal_engine::Db,
    table: &'a TableDef,
    snapshot: &'a Snapshot,
    identity: &'a ExportIdentity,
    schema: &'a DescribeTableResponse,
    total_items: u64,
    stop: &'a AtomicBool,
}

impl ExportJob<'_> {
    fn run(
        &self,
        writer: ExportWriter,
        progress: &(dyn Fn(ExportProgress) + Sync),
    ) -> Result<FinishedExport, ExportItemsError> {
        write_items(
            self.db,
            self.table,
            self.snapshot,
            &writer,
            self.total_items,
            self.stop,
            progress,
        )?;
        Ok(writer.finish(self.identity, Some(self.schema), now_millis())?)
    }
}

/// The description of an export that ended with `outcome` at `now_millis`; None if it was
/// stopped (its record stays IN_PROGRESS, and the next open marks it FAILED).
fn ended(
    mut description: ExportDescription,
    outcome: Result<FinishedExport, ExportItemsError>,
    now_millis: u64,
) -> Option<ExportDescription> {
    match outcome {
        Ok(finished) => {
            description.export_status = STATUS_COMPLETED.to_string();
            description.end_time = Some(epoch_seconds(finished.end_time_millis));
            description.export_manifest = Some(finished.manifest_summary_key);
            description.item_count = Some(finished.summary.item_count);
            description.billed_size_bytes = Some(finished.summary.billed_size_bytes);
        }
        Err(ExportItemsError::Stopped) => return None,
        Err(ExportItemsError::Write(ExportWriteError::NoSuchBucket(_))) => {
            let message = format!(
                "Failed to write to the S3 bucket: the specified bucket does not exist: {}",
                description.s3_bucket
            );
            fail(
                &mut description,
                FAILURE_NO_SUCH_BUCKET,
                &message,
                now_millis,
            );
        }
        Err(ExportItemsError::Write(error)) => {
            fail(
                &mut description,
                FAILURE_INTERNAL,
                &error.to_string(),
                now_millis,
            );
        }
        Err(ExportItemsError::Read(error)) => {
            fail(
                &mut description,
                FAILURE_INTERNAL,
                &error.message,
                now_millis,
            );
        }
    }
    Some(description)
}

/// A writer's failure, to the embedded caller.
fn write_error(error: ExportWriteError) -> ApiError {
    match error {
        ExportWriteError::NoSuchBucket(dir) => ApiError::validation(format!(
            "The directory to export to does not exist: {}",
            dir.display()
        )),
        other => internal(other),
    }
}

/// The bucket a directory stands for: its last component.
fn bucket_name(dir: &Path) -> String {
    dir.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The member constraints of an ExportTableToPointInTime request.
fn check_request(request: &ExportTableToPointInTimeRequest) -> Result<(), ApiError> {
    let mut problems = Violations::default();
    arn_constraints(&mut problems, request.table_arn.as_deref(), "tableArn", 1);
    match request.s3_bucket.as_deref() {
        None => problems.not_null("s3Bucket", false),
        Some(bucket) => {
            if bucket.chars().count() > S3_BUCKET_LENGTH_MAX {
                problems.push(violation(
                    Some(bucket),
                    "s3Bucket",
                    &length_at_most(S3_BUCKET_LENGTH_MAX),
                ));
            }
            if !is_bucket_name(bucket) {
                problems.push(violation(Some(bucket), "s3Bucket", S3_BUCKET_PATTERN));
            }
        }
    }
    if let Some(owner) = request.s3_bucket_owner.as_deref() {
        if owner.len() != 12 || !owner.bytes().all(|b| b.is_ascii_digit()) {
            problems.push(violation(
                Some(owner),
                "s3BucketOwner",
                S3_BUCKET_OWNER_PATTERN,
            ));
        }
    }
    if let Some(prefix) = request.s3_prefix.as_deref() {
        if prefix.chars().count() > S3_PREFIX_LENGTH_MAX {
            problems.push(violation(
                Some(prefix),
                "s3Prefix",
                &length_at_most(S3_PREFIX_LENGTH_MAX),
            ));
        }
    }
    if let Some(key) = request.s3_sse_kms_key_id.as_deref() {
        let length = key.chars().count();
        if length < 1 {
            problems.push(violation(Some(key), "s3SseKmsKeyId", &length_at_least(1)));
        } else if length > S3_SSE_KMS_KEY_ID_LENGTH_MAX {
            problems.push(violation(
                Some(key),
                "s3SseKmsKeyId",
                &length_at_most(S3_SSE_KMS_KEY_ID_LENGTH_MAX),
            ));
        }
    }
    if let Some(token) = request.client_token.as_deref() {
        if token.is_empty() || token.contains('$') {
            problems.push(violation(Some(token), "clientToken", CLIENT_TOKEN_PATTERN));
        }
    }
    problems.one_of(
        request.s3_sse_algorithm.as_deref(),
        "s3SseAlgorithm",
        &S3_SSE_ALGORITHMS,
    );
    problems.one_of(
        request.export_format.as_deref(),
        "exportFormat",
        &EXPORT_FORMATS,
    );
    problems.one_of(request.export_type.as_deref(), "exportType", &EXPORT_TYPES);
    problems.finish()
}

/// A required ARN member: not null, `length_min..=1024` characters.
fn arn_constraints(problems: &mut Violations, arn: Option<&str>, path: &str, length_min: usize) {
    match arn {
        None => problems.not_null(path, false),
        Some(arn) => {
            let length = arn.chars().count();
            if length < length_min {
                problems.push(violation(Some(arn), path, &length_at_least(length_min)));
            } else if length > ARN_LENGTH_MAX {
                problems.push(violation(Some(arn), path, &length_at_most(ARN_LENGTH_MAX)));
            }
        }
    }
}

/// `^[a-z0-9A-Z]+[\.\-\w]*[a-z0-9A-Z]+$`: the API model's S3Bucket pattern.
fn is_bucket_name(bucket: &str) -> bool {
    let bytes = bucket.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() >= 2
        && first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(b))
}

/// What DynamoDB has that Shoal refuses rather than ignore: ION, incremental exports, KMS.
fn refuse_unimplemented(request: &ExportTableToPointInTimeRequest) -> Result<(), ApiError> {
    if request.export_format.as_deref() == Some("ION") {
        return Err(ApiError::validation(
            "ExportFormat ION is not implemented by Shoal: use DYNAMODB_JSON",
        ));
    }
    if request.export_type.as_deref() == Some("INCREMENTAL_EXPORT") {
        return Err(ApiError::validation(
            "ExportType INCREMENTAL_EXPORT is not implemented by Shoal: use FULL_EXPORT",
        ));
    }
    if request.s3_sse_algorithm.as_deref() == Some("KMS") {
        return Err(ApiError::validation(
            "S3SseAlgorithm KMS is not implemented by Shoal: use AES256 or leave it out",
        ));
    }
    Ok(())
}

/// The directories below the bucket's that `prefix` names (one trailing `/` ignored; None
/// for no prefix). A prefix that would leave the bucket's directory, or name a directory
/// twice, is refused: on S3 it is only part of a key.
fn local_prefix(prefix: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(prefix) = prefix.map(|p| p.strip_suffix('/').unwrap_or(p)) else {
        return Ok(None);
    };
    if prefix.is_empty() {
        return Ok(None);
    }
    if prefix.split('/').any(|segment| {
        segment.is_empty() || segment == "." || segment == ".." || segment.contains('\0')
    }) {
        return Err(ApiError::validation(format!(
            "Shoal writes an export below its --export-dir, so S3Prefix cannot have an empty, '.' or '..' segment: {prefix}"
        )));
    }
    Ok(Some(prefix.to_string()))
}
