//! The records of exports (ExportTableToPointInTime) and the threads that run them.
//!
//! Each export's record is durable as engine manifest metadata under `export/<export id>`:
//! the JSON of an [`ExportRecord`] (its `ExportDescription`, the table's name and the
//! request's parameters, which a repeated ClientToken must match). A record is written when
//! the export is accepted (IN_PROGRESS) and again when it ends (COMPLETED or FAILED), so
//! DescribeExport and ListExports answer the same after a restart. Export ids start with the
//! 14-digit start time in milliseconds, so metadata keys sort oldest first; past
//! [`EXPORT_RECORDS_MAX`] records the oldest finished ones are dropped.
//!
//! An export runs on a thread of its own, at most [`EXPORTS_RUNNING_MAX`] at once. Closing
//! the database stops them (they check a flag as they go) and waits for them; an export a
//! close or a crash interrupted is still IN_PROGRESS in its record, and is marked FAILED at
//! the next open. Its directory keeps what it wrote, without a manifest-summary.json.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use shoal_engine::version::VersionEdit;
use shoal_engine::{Db, DbError};
use shoal_model::{ApiError, ErrorCode};

use crate::api::export::ExportDescription;
use crate::core::clock::epoch_seconds;
use crate::core::error::internal;

/// The metadata key prefix of export records.
pub const EXPORT_METADATA_PREFIX: &str = "export/";
/// Export records kept: the newest this many.
pub const EXPORT_RECORDS_MAX: usize = 1000;
/// Exports running at once; one more is refused with LimitExceededException.
pub const EXPORTS_RUNNING_MAX: usize = 4;

pub const STATUS_IN_PROGRESS: &str = "IN_PROGRESS";
pub const STATUS_COMPLETED: &str = "COMPLETED";
pub const STATUS_FAILED: &str = "FAILED";

/// The FailureCode of an export that could not write its files, or that a close or crash
/// interrupted (Shoal's choice: docs/COMPATIBILITY.md).
pub const FAILURE_INTERNAL: &str = "InternalError";
/// The FailureMessage of an export a close or a crash interrupted.
pub const INTERRUPTED_MESSAGE: &str =
    "The export was interrupted by a restart of the database before it completed";

/// One export as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportRecord {
    pub description: ExportDescription,
    pub table_name: String,
    /// The request's members but ClientToken (TableArn as the table's name): a request
    /// repeating the token must repeat these.
    pub parameters: serde_json::Value,
}

impl ExportRecord {
    fn id(&self) -> &str {
        export_id_of(&self.description.export_arn)
    }
}

/// The id of an export ARN: what follows `/export/`.
pub fn export_id_of(arn: &str) -> &str {
    arn.rsplit_once("/export/").map_or(arn, |(_, id)| id)
}

/// The records and threads of one database's exports.
pub struct Exports {
    shared: Arc<ExportsShared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// What the export threads share with the database.
pub struct ExportsShared {
    /// By export id (oldest first).
    records: Mutex<BTreeMap<String, ExportRecord>>,
    /// The time part of the newest export id: each new one is later, so ids sort in the
    /// order the exports started.
    last_id_millis: AtomicU64,
    running: AtomicUsize,
    /// Set when the database closes: running exports stop.
    pub stop: AtomicBool,
}

impl Exports {
    /// No exports: for a `Database` that never exports (the upkeep's).
    pub fn none() -> Exports {
        Exports {
            shared: Arc::new(ExportsShared {
                records: Mutex::new(BTreeMap::new()),
                last_id_millis: AtomicU64::new(0),
                running: AtomicUsize::new(0),
                stop: AtomicBool::new(false),
            }),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// The records of `db`, with the exports a close or crash interrupted marked FAILED at
    /// `now_millis`: durably if `persist`, else only in memory (a database opened to be
    /// checked changes nothing).
    pub fn open(db: &Db, now_millis: u64, persist: bool) -> Result<Exports, DbError> {
        let exports = Exports::none();
        let mut interrupted = Vec::new();
        {
            let mut records = exports.shared.records.lock();
            for (key, bytes) in &db.version().metadata {
                let Some(id) = key.strip_prefix(EXPORT_METADATA_PREFIX) else {
                    continue;
                };
                // A record that cannot be read describes an export, not data: it is left
                // out (and logged) rather than keeping the database from opening.
                let mut record: ExportRecord = match serde_json::from_slice(bytes) {
                    Ok(record) => record,
                    Err(error) => {
                        tracing::warn!(key = %key, %error, "export record cannot be read; ignored");
                        continue;
                    }
                };
                if record.description.export_status == STATUS_IN_PROGRESS {
                    // Nothing resumes an export: its thread died with the process, and its
                    // snapshot with it, so the state it was writing cannot be read again.
                    fail(
                        &mut record.description,
                        FAILURE_INTERNAL,
                        INTERRUPTED_MESSAGE,
                        now_millis,
                    );
                    interrupted.push(edit(&record)?);
                }
                records.insert(id.to_string(), record);
            }
        }
        if persist && !interrupted.is_empty() {
            db.apply_edits(interrupted)?;
        }
        let newest = exports.shared.records.lock().keys().next_back().cloned();
        if let Some(millis) = newest.and_then(|id| id.get(..14)?.parse().ok()) {
            exports
                .shared
                .last_id_millis
                .store(millis, Ordering::Release);
        }
        Ok(exports)
    }

    /// A new export id, `<14-digit milliseconds>-<8 hex>`: the time is `now_millis`, or
    /// one past the previous id's if that is not earlier, so ids sort in start order.
    pub fn new_id(&self, now_millis: u64) -> String {
        let previous = self
            .shared
            .last_id_millis
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
                Some(now_millis.max(last + 1))
            })
            .unwrap_or(now_millis);
        let millis = now_millis.max(previous + 1);
        crate::transfer::write::export_id(millis)
    }

    /// The record of export `id`.
    pub fn get(&self, id: &str) -> Option<ExportRecord> {
        self.shared.records.lock().get(id).cloned()
    }

    /// Every record, oldest first.
    pub fn all(&self) -> Vec<ExportRecord> {
        self.shared.records.lock().values().cloned().collect()
    }

    /// Starts `record`'s export and returns its description, unless an export with the same
    /// ClientToken exists: then that one's description if the parameters are the same, else
    /// ExportConflictException.
    /// Refused with LimitExceededException when [`EXPORTS_RUNNING_MAX`] exports run. The
    /// record is durable before `job` runs on its thread; `job` returns the export's final
    /// description, recorded durably in turn (None: the export was stopped, its record stays
    /// IN_PROGRESS until the next open marks it FAILED).
    pub fn start(
        &self,
        db: &Arc<Db>,
        record: ExportRecord,
        job: impl FnOnce(&ExportsShared) -> Option<ExportDescription> + Send + 'static,
    ) -> Result<ExportDescription, ApiError> {
        let mut records = self.shared.records.lock();
        let token = &record.description.client_token;
        if let Some(existing) = records
            .values()
            .find(|r| &r.description.client_token == token)
        {
            if existing.parameters == record.parameters && existing.table_name == record.table_name
            {
                return Ok(existing.description.clone());
            }
            return Err(ApiError::new(
                ErrorCode::ExportConflictException,
                format!(
                    "Failed to create export: Duplicate request detected for ClientToken {token} with different parameters"
                ),
            ));
        }
        if self.shared.running.load(Ordering::Acquire) >= EXPORTS_RUNNING_MAX {
            return Err(ApiError::new(
                ErrorCode::LimitExceededException,
                format!(
                    "There are already {EXPORTS_RUNNING_MAX} exports in progress: the most Shoal runs at once. Retry when one has ended"
                ),
            ));
        }
        let id = record.id().to_string();
        let mut edits = vec![edit(&record).map_err(internal)?];
        records.insert(id.clone(), record.clone());
        edits.extend(forget_oldest(&mut records));
        if let Err(error) = db.apply_edits(edits) {
            records.remove(&id);
            return Err(internal(error));
        }
        self.shared.running.fetch_add(1, Ordering::AcqRel);
        drop(records);
        let shared = Arc::clone(&self.shared);
        let db = Arc::clone(db);
        let thread = std::thread::Builder::new()
            .name("shoal-export".to_string())
            .spawn(move || {
                let ended = job(&shared);
                let mut records = shared.records.lock();
                // Under the records' lock: whoever sees the export ended may start another.
                shared.running.fetch_sub(1, Ordering::AcqRel);
                let (Some(description), Some(record)) = (ended, records.get_mut(&id)) else {
                    return;
                };
                record.description = description;
                let stored = edit(record).and_then(|edit| db.apply_edits(vec![edit]));
                if let Err(error) = stored {
                    // The next open reports the export FAILED: its record is still
                    // IN_PROGRESS on disk.
                    tracing::error!(export = %id, %error, "cannot record the end of an export");
                }
            });
        let thread = match thread {
            Ok(thread) => thread,
            Err(error) => {
                self.shared.running.fetch_sub(1, Ordering::AcqRel);
                return Err(internal(error));
            }
        };
        let mut threads = self.threads.lock();
        threads.retain(|t| !t.is_finished());
        threads.push(thread);
        Ok(record.description)
    }
}

impl Drop for Exports {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        for thread in self.threads.get_mut().drain(..) {
            // A panicked export thread has nothing left to clean up.
            let _ = thread.join();
        }
    }
}

/// Marks `description` FAILED with `code` and `message`, ended at `now_millis`.
pub fn fail(description: &mut ExportDescription, code: &str, message: &str, now_millis: u64) {
    description.export_status = STATUS_FAILED.to_string();
    description.failure_code = Some(code.to_string());
    description.failure_message = Some(message.to_string());
    description.end_time = Some(epoch_seconds(now_millis));
}

/// The metadata edit storing `record`.
fn edit(record: &ExportRecord) -> Result<VersionEdit, DbError> {
    let value = serde_json::to_vec(record)
        .map_err(|e| DbError::Poisoned(format!("export record cannot be written: {e}")))?;
    Ok(VersionEdit::SetMetadata {
        key: format!("{EXPORT_METADATA_PREFIX}{}", record.id()),
        value: Some(value),
    })
}

/// Drops the oldest finished records past [`EXPORT_RECORDS_MAX`]; returns their removals.
fn forget_oldest(records: &mut BTreeMap<String, ExportRecord>) -> Vec<VersionEdit> {
    let excess = records.len().saturating_sub(EXPORT_RECORDS_MAX);
    let oldest: Vec<String> = records
        .iter()
        .filter(|(_, r)| r.description.export_status != STATUS_IN_PROGRESS)
        .take(excess)
        .map(|(id, _)| id.clone())
        .collect();
    oldest
        .into_iter()
        .map(|id| {
            records.remove(&id);
            VersionEdit::SetMetadata {
                key: format!("{EXPORT_METADATA_PREFIX}{id}"),
                value: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, status: &str) -> ExportRecord {
        ExportRecord {
            description: ExportDescription {
                export_arn: format!("arn:aws:dynamodb:ddblocal:000000000000:table/T/export/{id}"),
                export_status: status.to_string(),
                ..ExportDescription::default()
            },
            table_name: "T".to_string(),
            parameters: serde_json::Value::Null,
        }
    }

    #[test]
    fn past_the_limit_the_oldest_finished_records_go() {
        let mut records = BTreeMap::new();
        // The oldest is still running: it stays.
        records.insert(
            "00000000000000-0".to_string(),
            record("00000000000000-0", STATUS_IN_PROGRESS),
        );
        for n in 1..=EXPORT_RECORDS_MAX + 1 {
            let id = format!("{n:014}-0");
            records.insert(id.clone(), record(&id, STATUS_COMPLETED));
        }
        let removed = forget_oldest(&mut records);
        assert_eq!(records.len(), EXPORT_RECORDS_MAX);
        let keys: Vec<String> = removed
            .iter()
            .map(|edit| match edit {
                VersionEdit::SetMetadata { key, value: None } => key.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(keys, ["export/00000000000001-0", "export/00000000000002-0"]);
        assert!(records.contains_key("00000000000000-0"));
        assert!(forget_oldest(&mut records).is_empty());
    }
}
