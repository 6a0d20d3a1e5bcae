//! On-demand backups (SPEC-2 §6.1): CreateBackup, DescribeBackup, ListBackups,
//! DeleteBackup and RestoreTableFromBackup, as LSM checkpoints; and the SYSTEM backup
//! DeleteTable takes of a table with point-in-time recovery, kept 35 days.
//!
//! A backup is hard links to the table's SSTables (`shoal_engine::checkpoint`) plus a
//! description (`backup_store`, which also gives the layout on disk). No item is copied,
//! so a backup costs the same few milliseconds per SSTable whatever the table's size.
//!
//! **One point in time.** CreateBackup holds every collection lock (`core::locks`: every
//! item write, batch, transaction, Time to Live delete and backfill batch holds the stripe
//! of what it writes) while it flushes the table's trees, reads the statistics records and
//! links the files of one superversion. No write of the table is half-applied then, and
//! every acknowledged one is in the flushed files, so the table tree, the GSI trees and the
//! statistics all hold the state after the same last write. The locks are held for a
//! memtable flush: writes of every table wait that long. `catalog_change` is taken first
//! (the order every control-plane change uses), so the definition cannot change meanwhile.
//!
//! **Restore** creates a new table whose trees are made from the backup's files, linked
//! into the data directory, with its catalog entry, in one version change: a crash leaves
//! the whole table or none of it. Its statistics records are then rebuilt from a scan of
//! the new trees before the table is visible: records are striped by a hash of the table's
//! tree id (`core::stats`), so the source's per-stripe records do not fit the new tree.
//! A crash between the version change and the rebuild leaves a table without the
//! "maintained" marker, which the next open rebuilds (`Database::prepare_stats`).
//! A restore carries no stream, Time to Live, tags or deletion protection (SPEC-2 §6.1).

use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;

use shoal_engine::{SourceFile, TreeId};
use shoal_model::{ApiError, ErrorCode};

use crate::api::backups::{
    BackupDescription, BackupDetails, BackupProvisionedThroughput, BackupSummary,
    CreateBackupInput, CreateBackupOutput, DeleteBackupInput, DeleteBackupOutput,
    DescribeBackupInput, DescribeBackupOutput, GlobalSecondaryIndexInfo, ListBackupsInput,
    ListBackupsOutput, LocalSecondaryIndexInfo, RestoreSummary, RestoreTableFromBackupInput,
    RestoreTableFromBackupOutput, SourceTableDetails, SourceTableFeatureDetails,
};
use crate::api::common::{parse_enum, table_name_of};
use crate::api::constraint::{
    length_at_least, length_at_most, name_violations, value_at_least, value_at_most, violation,
    Violations, NOT_NULL,
};
use crate::api::control::{
    GlobalSecondaryIndex, LocalSecondaryIndex, OnDemandThroughput, ProvisionedThroughput,
    TableDescription,
};
use crate::backups::store::{self, BackupFile, BackupKind, BackupSsTable, BackupStats};
use crate::control::tables::{
    describe, gsi_tree_name, key_schema_elements, new_table_id, projection_description,
};
use crate::core::catalog::{
    BillingMode, IndexStatus, OnDemandLimits, TableDef, TableSettings, Throughput,
};
use crate::core::clock::{epoch_seconds, now_millis};
use crate::core::definition::new_definition_edits;
use crate::core::error::internal;
use crate::core::locks::STRIPES;
use crate::core::region::table_arn;
use crate::core::stats::{self, STATS_TREE_NAME};
use crate::database::Database;
use crate::emulation::transient::TransientStatus;

/// BackupArn's length bounds in the API model.
const BACKUP_ARN_LENGTH_MIN: usize = 37;
const BACKUP_ARN_LENGTH_MAX: usize = 1024;
/// ListBackups' largest (and default) page.
pub const LIST_BACKUPS_LIMIT_MAX: i64 = 100;
const BACKUP_TYPES: [&str; 4] = ["USER", "SYSTEM", "AWS_BACKUP", "ALL"];
const BILLING_MODES: [&str; 2] = ["PROVISIONED", "PAY_PER_REQUEST"];
/// How long the SYSTEM backup of a deleted table with point-in-time recovery is kept: 35
/// days, as on AWS.
pub const SYSTEM_BACKUP_RETENTION_MILLIS: u64 = 35 * 24 * 60 * 60 * 1000;
/// A SYSTEM backup's name: the table's name and this (AWS's name for it).
pub const DELETED_TABLE_BACKUP_SUFFIX: &str = "$DeletedTableBackup";
/// SPEC-2 §6.1.
pub const INVALID_BACKUP_ARN_MESSAGE: &str = "Invalid Backup ARN";
/// SPEC-2 §6.1.
pub const THROUGHPUT_WITH_PAY_PER_REQUEST_MESSAGE: &str =
    "Invalid Request: Cannot override ProvisionedThroughput if BillingMode is overridden to PAY_PER_REQUEST";

/// Backups a restore is reading: DeleteBackup refuses them (BackupInUseException).
#[derive(Debug, Default)]
pub struct BackupsInUse(Mutex<BTreeSet<String>>);

/// Marks a backup in use until dropped.
struct InUse<'a> {
    set: &'a BackupsInUse,
    id: String,
}

impl BackupsInUse {
    fn take(&self, id: &str, arn: &str) -> Result<InUse<'_>, ApiError> {
        if !self.0.lock().insert(id.to_string()) {
            return Err(backup_in_use(arn));
        }
        Ok(InUse {
            set: self,
            id: id.to_string(),
        })
    }
}

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        self.set.0.lock().remove(&self.id);
    }
}

fn backup_in_use(arn: &str) -> ApiError {
    ApiError::new(
        ErrorCode::BackupInUseException,
        format!("Backup is in use: {arn}"),
    )
}

fn backup_not_found(arn: &str) -> ApiError {
    ApiError::new(
        ErrorCode::BackupNotFoundException,
        format!("Backup not found: {arn}"),
    )
}

/// The ARN of backup `backup_id` of table `table_name`.
pub fn backup_arn(table_name: &str, backup_id: &str) -> String {
    format!("{}/backup/{backup_id}", table_arn(table_name))
}

/// Whether `id` is `<epoch ms, 14 digits>-<8 hex digits>` (13 digits accepted too).
fn is_backup_id(id: &str) -> bool {
    let Some((millis, random)) = id.split_once('-') else {
        return false;
    };
    (13..=14).contains(&millis.len())
        && millis.bytes().all(|b| b.is_ascii_digit())
        && random.len() == 8
        && random.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Checks a BackupArn member and returns (table name, backup id).
fn parse_backup_arn<'a>(
    arn: Option<&'a str>,
    member: &str,
) -> Result<(&'a str, &'a str), ApiError> {
    let Some(arn) = arn else {
        return Err(crate::api::constraint::validation_errors(&[violation(
            None, member, NOT_NULL,
        )]));
    };
    let mut problems = Vec::new();
    if arn.len() < BACKUP_ARN_LENGTH_MIN {
        problems.push(violation(
            Some(arn),
            member,
            &length_at_least(BACKUP_ARN_LENGTH_MIN),
        ));
    }
    if arn.len() > BACKUP_ARN_LENGTH_MAX {
        problems.push(violation(
            Some(arn),
            member,
            &length_at_most(BACKUP_ARN_LENGTH_MAX),
        ));
    }
    crate::api::constraint::check(&problems)?;
    let parsed = arn
        .strip_prefix("arn:")
        .and_then(|rest| rest.split_once(":table/"))
        .and_then(|(_, rest)| rest.rsplit_once("/backup/"))
        .filter(|(table, id)| !table.is_empty() && is_backup_id(id));
    parsed.ok_or_else(|| ApiError::validation(INVALID_BACKUP_ARN_MESSAGE))
}

/// A new backup id: the creation time in epoch milliseconds, zero-padded to 14 digits as
/// in AWS's own example (`01489173575360-b308cd7d`), and 8 random hex digits.
fn new_backup_id(created_at_millis: u64) -> String {
    let random = &new_table_id()[..8];
    format!("{created_at_millis:014}-{random}")
}

fn backup_throughput(throughput: Option<Throughput>) -> BackupProvisionedThroughput {
    let throughput = throughput.unwrap_or(Throughput {
        read_capacity_units: 0,
        write_capacity_units: 0,
    });
    BackupProvisionedThroughput {
        read_capacity_units: throughput.read_capacity_units,
        write_capacity_units: throughput.write_capacity_units,
    }
}

fn details(backup: &BackupFile, status: &str) -> BackupDetails {
    BackupDetails {
        backup_arn: backup_arn(&backup.table.name, &backup.backup_id),
        backup_name: backup.backup_name.clone(),
        backup_size_bytes: Some(backup.size_bytes),
        backup_status: status.to_string(),
        backup_type: backup.backup_type.name().to_string(),
        backup_creation_date_time: epoch_seconds(backup.created_at_millis),
        backup_expiry_date_time: backup.expires_at_millis.map(epoch_seconds),
    }
}

fn description(backup: &BackupFile, status: &str) -> BackupDescription {
    let table = &backup.table;
    let (throughput, billing_mode) = match table.billing {
        BillingMode::PayPerRequest => (None, "PAY_PER_REQUEST"),
        BillingMode::Provisioned(throughput) => (Some(throughput), "PROVISIONED"),
    };
    let on_demand = &table.settings.capacity.on_demand;
    let units = |cap: Option<u64>| cap.map(|units| i64::try_from(units).unwrap_or(i64::MAX));
    BackupDescription {
        backup_details: details(backup, status),
        source_table_details: SourceTableDetails {
            table_name: table.name.clone(),
            table_id: table.id.clone(),
            table_arn: table_arn(&table.name),
            table_size_bytes: backup.stats.bytes,
            key_schema: key_schema_elements(&table.key),
            table_creation_date_time: epoch_seconds(table.created_at_millis),
            provisioned_throughput: backup_throughput(throughput),
            on_demand_throughput: on_demand.is_set().then(|| OnDemandThroughput {
                max_read_request_units: units(on_demand.max_read_request_units),
                max_write_request_units: units(on_demand.max_write_request_units),
            }),
            item_count: backup.stats.items,
            billing_mode: billing_mode.to_string(),
        },
        source_table_feature_details: SourceTableFeatureDetails {
            local_secondary_indexes: (!table.local_indexes.is_empty()).then(|| {
                table
                    .local_indexes
                    .iter()
                    .map(|lsi| LocalSecondaryIndexInfo {
                        index_name: lsi.name.clone(),
                        key_schema: key_schema_elements(&lsi.key),
                        projection: projection_description(&lsi.projection),
                    })
                    .collect()
            }),
            global_secondary_indexes: (!table.global_indexes.is_empty()).then(|| {
                table
                    .global_indexes
                    .iter()
                    .map(|gsi| GlobalSecondaryIndexInfo {
                        index_name: gsi.name.clone(),
                        key_schema: key_schema_elements(&gsi.key),
                        projection: projection_description(&gsi.projection),
                        provisioned_throughput: backup_throughput(gsi.throughput),
                    })
                    .collect()
            }),
        },
    }
}

impl Database {
    /// The backup `arn` names, or BackupNotFoundException.
    fn backup_named(&self, arn: Option<&str>) -> Result<(String, BackupFile), ApiError> {
        let (table_name, id) = parse_backup_arn(arn, "backupArn")?;
        let arn = arn.unwrap_or_default();
        let dir = store::backup_dir(self.db.dir(), id);
        let now = self.options.clock.now_millis();
        match store::read_description(self.db.fs(), &dir)? {
            Some(backup) if backup.table.name == table_name && !backup.expired(now) => {
                Ok((arn.to_string(), backup))
            }
            _ => Err(backup_not_found(arn)),
        }
    }

    /// CreateBackup: links the table's files at one point (module docs) and describes them.
    pub fn create_backup(
        &self,
        request: CreateBackupInput,
    ) -> Result<CreateBackupOutput, ApiError> {
        let mut problems = Violations::default();
        problems.table_name(request.table_name.as_deref());
        let mut name_problems = Vec::new();
        name_violations(
            request.backup_name.as_deref(),
            "backupName",
            3,
            &mut name_problems,
        );
        for problem in name_problems {
            problems.push(problem);
        }
        problems.finish()?;
        let table_name = table_name_of(request.table_name.as_deref())?;
        let backup_name = request.backup_name.unwrap_or_default();

        let _change = self.catalog_change.lock();
        let source = self.backed_up_table(table_name)?;
        let backup = self.write_backup(&source, backup_name, BackupKind::User, None)?;
        Ok(CreateBackupOutput {
            backup_details: details(&backup, "AVAILABLE"),
        })
    }

    /// The SYSTEM backup DeleteTable takes of a table with point-in-time recovery, before
    /// dropping it (AWS keeps one for 35 days). At most one per table incarnation: a
    /// DeleteTable retried after a crash between the backup and the drop finds the first
    /// (same table id) and takes no second. The caller holds `catalog_change`.
    pub(crate) fn take_deleted_table_backup(&self, table: &TableDef) -> Result<(), ApiError> {
        let now = self.options.clock.now_millis();
        let taken = store::list(self.db.fs(), self.db.dir())?
            .iter()
            .any(|backup| {
                backup.backup_type == BackupKind::System
                    && backup.table.id == table.id
                    && !backup.expired(now)
            });
        if taken {
            return Ok(());
        }
        let expires_at_millis = now.saturating_add(SYSTEM_BACKUP_RETENTION_MILLIS);
        self.write_backup(
            table,
            format!("{}{DELETED_TABLE_BACKUP_SUFFIX}", table.name),
            BackupKind::System,
            Some(expires_at_millis),
        )?;
        Ok(())
    }

    /// Links `source`'s files at one point (module docs) and writes the description that
    /// makes the backup exist. The caller holds `catalog_change`.
    fn write_backup(
        &self,
        source: &TableDef,
        backup_name: String,
        backup_type: BackupKind,
        expires_at_millis: Option<u64>,
    ) -> Result<BackupFile, ApiError> {
        let mut table = TableDef::clone(source);
        // An index still being built (or dropped) holds only part of its entries: the
        // backup leaves it out (docs/COMPATIBILITY.md).
        table
            .global_indexes
            .retain(|gsi| gsi.status == IndexStatus::Active);
        let created_at_millis = self.options.clock.now_millis();
        let fs = self.db.fs();
        let (backup_id, dir) = loop {
            let id = new_backup_id(created_at_millis);
            let dir = store::backup_dir(self.db.dir(), &id);
            if !fs.exists(&dir) {
                break (id, dir);
            }
        };
        fs.create_dir_all(&dir)
            .map_err(|e| internal(format!("creating {}: {e}", dir.display())))?;
        let made = self.link_backup(&table, &dir).and_then(|(linked, stats)| {
            let backup = BackupFile {
                format: store::BACKUP_FORMAT,
                backup_id: backup_id.clone(),
                backup_name,
                created_at_millis,
                backup_type,
                expires_at_millis,
                size_bytes: linked.iter().map(|file| file.size_bytes).sum(),
                stats,
                table,
                files: linked,
            };
            store::write_description(fs, &dir, &backup)?;
            Ok(backup)
        });
        if made.is_err() {
            // Best effort: what is left without a description goes at the next open.
            let _ = store::remove(fs, &dir);
        }
        made
    }

    /// Flushes and links `table`'s trees into `dir` and reads its statistics, all at one
    /// point: under every collection lock (module docs).
    fn link_backup(
        &self,
        table: &TableDef,
        dir: &std::path::Path,
    ) -> Result<(Vec<BackupSsTable>, BackupStats), ApiError> {
        let mut trees = vec![table.tree];
        trees.extend(table.global_indexes.iter().map(|gsi| gsi.tree));
        let stats_tree = self.stats.tree()?;
        let _writes = self.locks.lock_many((0..STRIPES).collect());
        self.db.flush_trees(&trees).map_err(internal)?;
        let snapshot = self.db.snapshot();
        let figures = stats::figures_at(&self.db, stats_tree, table, &snapshot)?;
        let linked = self.db.link_tree_files(&trees, dir).map_err(internal)?;
        let files = linked
            .iter()
            .map(|file| {
                let index = table
                    .global_indexes
                    .iter()
                    .find(|gsi| gsi.tree == file.tree)
                    .map(|gsi| gsi.name.clone());
                BackupSsTable::of(file, index)
            })
            .collect();
        Ok((files, BackupStats::of(table, &figures)))
    }

    /// DescribeBackup.
    pub fn describe_backup(
        &self,
        request: DescribeBackupInput,
    ) -> Result<DescribeBackupOutput, ApiError> {
        let (_, backup) = self.backup_named(request.backup_arn.as_deref())?;
        Ok(DescribeBackupOutput {
            backup_description: description(&backup, "AVAILABLE"),
        })
    }

    /// DeleteBackup: the backup's description, then its links, go. Refused while a restore
    /// reads it.
    pub fn delete_backup(
        &self,
        request: DeleteBackupInput,
    ) -> Result<DeleteBackupOutput, ApiError> {
        let (arn, backup) = self.backup_named(request.backup_arn.as_deref())?;
        let _in_use = self.backups.in_use.take(&backup.backup_id, &arn)?;
        let dir = store::backup_dir(self.db.dir(), &backup.backup_id);
        store::remove(self.db.fs(), &dir)?;
        Ok(DeleteBackupOutput {
            backup_description: description(&backup, "DELETED"),
        })
    }

    /// ListBackups: the backups of one table or all, oldest first, `Limit` at a time.
    pub fn list_backups(&self, request: ListBackupsInput) -> Result<ListBackupsOutput, ApiError> {
        let mut problems = Vec::new();
        if let Some(limit) = request.limit {
            let value = limit.to_string();
            if limit < 1 {
                problems.push(violation(Some(&value), "limit", &value_at_least(1)));
            }
            if limit > LIST_BACKUPS_LIMIT_MAX {
                problems.push(violation(
                    Some(&value),
                    "limit",
                    &value_at_most(LIST_BACKUPS_LIMIT_MAX),
                ));
            }
        }
        if request.table_name.is_some() {
            name_violations(request.table_name.as_deref(), "tableName", 1, &mut problems);
        }
        crate::api::constraint::check(&problems)?;
        let backup_type = parse_enum(request.backup_type.as_deref(), "backupType", &BACKUP_TYPES)?
            .unwrap_or("USER");
        let table_name = match request.table_name.as_deref() {
            Some(_) => Some(table_name_of(request.table_name.as_deref())?),
            None => None,
        };
        let start_after = match request.exclusive_start_backup_arn.as_deref() {
            Some(arn) => Some(parse_backup_arn(Some(arn), "exclusiveStartBackupArn")?.1),
            None => None,
        };
        // Within 1..=100 after the checks above.
        let limit = request.limit.unwrap_or(LIST_BACKUPS_LIMIT_MAX) as usize;
        let lower = request.time_range_lower_bound;
        let upper = request.time_range_upper_bound;
        let all = store::list(self.db.fs(), self.db.dir())?;
        let now = self.options.clock.now_millis();
        let mut matching = all.iter().filter(|backup| {
            let created = epoch_seconds(backup.created_at_millis);
            // AWS_BACKUP (AWS Backup's own) matches none.
            (backup_type == "ALL" || backup_type == backup.backup_type.name())
                && !backup.expired(now)
                && table_name.is_none_or(|name| backup.table.name == name)
                && lower.is_none_or(|lower| created >= lower)
                && upper.is_none_or(|upper| created < upper)
                && start_after.is_none_or(|start| backup.backup_id.as_str() > start)
        });
        let backup_summaries: Vec<BackupSummary> = matching
            .by_ref()
            .take(limit)
            .map(|backup| BackupSummary {
                table_name: backup.table.name.clone(),
                table_id: backup.table.id.clone(),
                table_arn: table_arn(&backup.table.name),
                backup_arn: backup_arn(&backup.table.name, &backup.backup_id),
                backup_name: backup.backup_name.clone(),
                backup_creation_date_time: epoch_seconds(backup.created_at_millis),
                backup_expiry_date_time: backup.expires_at_millis.map(epoch_seconds),
                backup_status: "AVAILABLE".to_string(),
                backup_type: backup.backup_type.name().to_string(),
                backup_size_bytes: backup.size_bytes,
            })
            .collect();
        let more_follow = matching.next().is_some();
        Ok(ListBackupsOutput {
            last_evaluated_backup_arn: if more_follow {
                backup_summaries.last().map(|s| s.backup_arn.clone())
            } else {
                None
            },
            backup_summaries,
        })
    }

    /// RestoreTableFromBackup: a new table from the backup's files (module docs).
    pub fn restore_table_from_backup(
        &self,
        request: RestoreTableFromBackupInput,
    ) -> Result<RestoreTableFromBackupOutput, ApiError> {
        let target = restore_target(request.target_table_name.as_deref())?;
        let (arn, backup) = self.backup_named(request.backup_arn.as_deref())?;
        let overrides = Overrides::of(&request)?;

        let _change = self.catalog_change.lock();
        self.refuse_taken_target(target)?;
        let _in_use = self.backups.in_use.take(&backup.backup_id, &arn)?;
        // A DeleteBackup may have finished between the lookup and the mark.
        let (arn, backup) = self.backup_named(Some(&arn))?;
        let definition = overrides.apply(&backup.table, target)?;
        let table = self.install_restored(&backup, definition)?;
        let table_description = self.restored_description(
            &table,
            RestoreSummary {
                source_backup_arn: Some(arn),
                source_table_arn: Some(table_arn(&backup.table.name)),
                restore_date_time: epoch_seconds(now_millis()),
                restore_in_progress: false,
            },
        );
        Ok(RestoreTableFromBackupOutput { table_description })
    }

    /// Refuses a restore onto a table that exists (TableAlreadyExistsException) or is being
    /// created or deleted. The caller holds `catalog_change`.
    pub(crate) fn refuse_taken_target(&self, target: &str) -> Result<(), ApiError> {
        if self.find_table(target).is_some() {
            return Err(ApiError::new(
                ErrorCode::TableAlreadyExistsException,
                format!("Table already exists: {target}"),
            ));
        }
        self.emulation
            .transitions
            .refuse_named(target, &crate::core::region::current())
    }

    /// A restored table's description, CREATING for `EmulationOptions::transient_status_delay`.
    pub(crate) fn restored_description(
        &self,
        table: &TableDef,
        summary: RestoreSummary,
    ) -> TableDescription {
        self.emulation.transitions.begin(
            &table.catalog_key(),
            TransientStatus::Creating,
            None,
            None,
        );
        let status = if self.emulation.transitions.enabled() {
            "CREATING"
        } else {
            "ACTIVE"
        };
        let mut table_description = describe(table, &self.stats.of(table), status);
        table_description.restore_summary = Some(summary);
        table_description
    }

    /// Creates the restored table `definition` from the backup's files with its catalog
    /// entry in one version change, then rebuilds its statistics and makes it visible.
    fn install_restored(
        &self,
        backup: &BackupFile,
        mut definition: TableDef,
    ) -> Result<Arc<TableDef>, ApiError> {
        let dir = store::backup_dir(self.db.dir(), &backup.backup_id);
        let files_of = |index: Option<&str>| -> Result<Vec<SourceFile>, ApiError> {
            backup
                .files
                .iter()
                .filter(|file| file.index.as_deref() == index)
                .map(|file| file.source(&dir))
                .collect()
        };
        let (names, creates_stats_tree) = self.restored_tree_names(&definition);
        let mut files = vec![files_of(None)?];
        for gsi in &definition.global_indexes {
            files.push(files_of(Some(&gsi.name))?);
        }
        files.resize_with(names.len(), Vec::new);
        let mut stored = None;
        let ids = self
            .db
            .create_trees_with_files(&names, &files, |ids| {
                restored_definition_edits(&mut definition, ids, &mut stored)
            })
            .map_err(internal)?;
        self.publish_restored(stored, &ids, creates_stats_tree)
    }

    /// The trees a restored table is made of, in order: its own, one per GSI of
    /// `definition`, then the statistics tree if the database has none yet (the flag).
    pub(crate) fn restored_tree_names(&self, definition: &TableDef) -> (Vec<String>, bool) {
        let mut names = vec![definition.id.clone()];
        names.extend(
            definition
                .global_indexes
                .iter()
                .map(|gsi| gsi_tree_name(&definition.id, &gsi.name)),
        );
        let creates_stats_tree = !self.stats.has_tree();
        if creates_stats_tree {
            names.push(STATS_TREE_NAME.to_string());
        }
        (names, creates_stats_tree)
    }

    /// After the version change that created a restored table's trees `ids` and stored its
    /// definition: its statistics rebuilt from its trees, then the table made visible.
    pub(crate) fn publish_restored(
        &self,
        stored: Option<TableDef>,
        ids: &[TreeId],
        creates_stats_tree: bool,
    ) -> Result<Arc<TableDef>, ApiError> {
        let table = self.table_created(stored, ids, creates_stats_tree)?;
        // Nobody writes the table yet: the catalog cache does not hold it until the reload
        // below, and `catalog_change` keeps any other reload away.
        stats::rebuild(&self.db, self.stats.tree()?, &table)?;
        self.stats.load(&self.db, &table)?;
        self.reload_catalog().map_err(internal)?;
        Ok(Arc::new(table))
    }
}

/// What a restore changes of the source's definition (from a backup or to a point in time).
pub(crate) struct Overrides<'a> {
    billing: Option<&'a str>,
    throughput: Option<Throughput>,
    on_demand: Option<OnDemandLimits>,
    global_indexes: Option<&'a [GlobalSecondaryIndex]>,
    local_indexes: Option<&'a [LocalSecondaryIndex]>,
}

/// Gives `definition` the trees `ids` (in [`Database::restored_tree_names`]' order) and
/// returns the edits storing it, which `stored` then holds.
pub(crate) fn restored_definition_edits(
    definition: &mut TableDef,
    ids: &[TreeId],
    stored: &mut Option<TableDef>,
) -> Vec<shoal_engine::version::VersionEdit> {
    definition.tree = ids[0];
    for (gsi, tree) in definition.global_indexes.iter_mut().zip(&ids[1..]) {
        gsi.tree = *tree;
    }
    new_definition_edits(definition.clone(), stored)
}

/// A restore's TargetTableName, checked as a new table's name is.
pub(crate) fn restore_target(target: Option<&str>) -> Result<&str, ApiError> {
    let mut problems = Vec::new();
    name_violations(target, "targetTableName", 3, &mut problems);
    crate::api::constraint::check(&problems)?;
    Ok(target.unwrap_or_default())
}

fn throughput_of(
    requested: &ProvisionedThroughput,
    member: &str,
    problems: &mut Vec<String>,
) -> Option<Throughput> {
    let mut unit = |value: Option<i64>, name: &str| -> Option<u64> {
        let path = format!("{member}.{name}");
        match value {
            None => {
                problems.push(violation(None, &path, NOT_NULL));
                None
            }
            Some(units) if units < 1 => {
                problems.push(violation(
                    Some(&units.to_string()),
                    &path,
                    &value_at_least(1),
                ));
                None
            }
            Some(units) => u64::try_from(units).ok(),
        }
    };
    let read = unit(requested.read_capacity_units, "readCapacityUnits");
    let write = unit(requested.write_capacity_units, "writeCapacityUnits");
    Some(Throughput {
        read_capacity_units: read?,
        write_capacity_units: write?,
    })
}

/// SPEC-2 §6.1's text for an index override naming what the source did not have.
fn unknown_index(name: &str) -> ApiError {
    ApiError::validation(format!(
        "Invalid Request: Index {name} does not match a secondary index that existed in the source table and cannot be created during the restore operation"
    ))
}

impl<'a> Overrides<'a> {
    /// Checks the override members of a restore request.
    pub(crate) fn of(request: &'a RestoreTableFromBackupInput) -> Result<Overrides<'a>, ApiError> {
        let billing = parse_enum(
            request.billing_mode_override.as_deref(),
            "billingModeOverride",
            &BILLING_MODES,
        )?;
        let mut problems = Vec::new();
        let throughput = request
            .provisioned_throughput_override
            .as_ref()
            .and_then(|t| throughput_of(t, "provisionedThroughputOverride", &mut problems));
        let on_demand = request
            .on_demand_throughput_override
            .as_ref()
            .map(|limits| {
                let mut cap = |value: Option<i64>, name: &str| {
                    value.and_then(|units| {
                        if units < 1 {
                            problems.push(violation(
                                Some(&units.to_string()),
                                &format!("onDemandThroughputOverride.{name}"),
                                &value_at_least(1),
                            ));
                        }
                        u64::try_from(units).ok()
                    })
                };
                OnDemandLimits {
                    max_read_request_units: cap(
                        limits.max_read_request_units,
                        "maxReadRequestUnits",
                    ),
                    max_write_request_units: cap(
                        limits.max_write_request_units,
                        "maxWriteRequestUnits",
                    ),
                }
            });
        crate::api::constraint::check(&problems)?;
        let sse_enabled = request
            .sse_specification_override
            .as_ref()
            .and_then(|value| value.get("Enabled"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        if sse_enabled {
            return Err(ApiError::validation(
                "Shoal does not implement SSESpecificationOverride on RestoreTableFromBackup yet",
            ));
        }
        if billing == Some("PAY_PER_REQUEST") && request.provisioned_throughput_override.is_some() {
            return Err(ApiError::validation(
                THROUGHPUT_WITH_PAY_PER_REQUEST_MESSAGE,
            ));
        }
        Ok(Overrides {
            billing,
            throughput,
            on_demand,
            global_indexes: request.global_secondary_index_override.as_deref(),
            local_indexes: request.local_secondary_index_override.as_deref(),
        })
    }

    /// The restored table's definition: the source's, renamed, with the overrides, and
    /// without what a restore does not carry.
    pub(crate) fn apply(&self, source: &TableDef, target: &str) -> Result<TableDef, ApiError> {
        self.check_local_indexes(source)?;
        let mut table = source.clone();
        table.name = target.to_string();
        table.id = new_table_id();
        table.created_at_millis = now_millis();
        table.streams = Vec::new();
        table.time_to_live = None;
        table.time_to_live_changed_at_millis = None;
        // A restore is a table of its own, shared by every Region as a new table is, even
        // when its source was a member of a global table.
        table.region = None;
        table.replication = None;
        table.settings = TableSettings {
            table_class: source.settings.table_class,
            ..TableSettings::default()
        };
        table.settings.capacity.on_demand = source.settings.capacity.on_demand;
        let provisioned = match (self.billing, source.billing) {
            (Some("PAY_PER_REQUEST"), _) => false,
            (Some(_), _) => true,
            (None, BillingMode::Provisioned(_)) => true,
            (None, BillingMode::PayPerRequest) => false,
        };
        table.billing = if provisioned {
            let throughput = match (self.throughput, source.billing) {
                (Some(throughput), _) => throughput,
                (None, BillingMode::Provisioned(throughput)) => throughput,
                (None, BillingMode::PayPerRequest) => {
                    return Err(ApiError::validation(
                        "Invalid Request: ProvisionedThroughputOverride must be given when BillingModeOverride is PROVISIONED for a source table billed PAY_PER_REQUEST",
                    ))
                }
            };
            table.settings.capacity.on_demand = OnDemandLimits::default();
            if self.on_demand.is_some() {
                return Err(ApiError::validation(
                    "Invalid Request: Cannot override OnDemandThroughput if BillingMode is PROVISIONED",
                ));
            }
            BillingMode::Provisioned(throughput)
        } else {
            if self.throughput.is_some() {
                return Err(ApiError::validation(
                    THROUGHPUT_WITH_PAY_PER_REQUEST_MESSAGE,
                ));
            }
            if let Some(on_demand) = self.on_demand {
                table.settings.capacity.on_demand = on_demand;
            }
            BillingMode::PayPerRequest
        };
        let table_throughput = match table.billing {
            BillingMode::Provisioned(throughput) => Some(throughput),
            BillingMode::PayPerRequest => None,
        };
        if let Some(kept) = self.global_indexes {
            let mut chosen = Vec::with_capacity(kept.len());
            for requested in kept {
                let name = requested.index_name.as_deref().unwrap_or_default();
                let Some(gsi) = source.global_index(name) else {
                    return Err(unknown_index(name));
                };
                let same_key = requested
                    .key_schema
                    .as_ref()
                    .is_none_or(|key| *key == key_schema_elements(&gsi.key));
                let same_projection = requested
                    .projection
                    .as_ref()
                    .is_none_or(|p| *p == projection_description(&gsi.projection));
                if !same_key || !same_projection {
                    return Err(unknown_index(name));
                }
                let mut gsi = gsi.clone();
                if let Some(requested) = &requested.provisioned_throughput {
                    let mut problems = Vec::new();
                    gsi.throughput = throughput_of(
                        requested,
                        "globalSecondaryIndexOverride.provisionedThroughput",
                        &mut problems,
                    );
                    crate::api::constraint::check(&problems)?;
                }
                chosen.push(gsi);
            }
            table.global_indexes = chosen;
        }
        for gsi in &mut table.global_indexes {
            gsi.capacity = Default::default();
            gsi.throughput = match table_throughput {
                Some(table_throughput) => Some(gsi.throughput.unwrap_or(table_throughput)),
                None => None,
            };
        }
        Ok(table)
    }

    /// A restore keeps every LSI of the source (their entries live in the table's tree):
    /// an override must name exactly those.
    fn check_local_indexes(&self, source: &TableDef) -> Result<(), ApiError> {
        let Some(requested) = self.local_indexes else {
            return Ok(());
        };
        for lsi in requested {
            let name = lsi.index_name.as_deref().unwrap_or_default();
            let Some(existing) = source.local_index(name) else {
                return Err(unknown_index(name));
            };
            let same_key = lsi
                .key_schema
                .as_ref()
                .is_none_or(|key| *key == key_schema_elements(&existing.key));
            let same_projection = lsi
                .projection
                .as_ref()
                .is_none_or(|p| *p == projection_description(&existing.projection));
            if !same_key || !same_projection {
                return Err(unknown_index(name));
            }
        }
        if let Some(left_out) = source.local_indexes.iter().find(|existing| {
            !requested
                .iter()
                .any(|lsi| lsi.index_name.as_deref() == Some(existing.name.as_str()))
        }) {
            return Err(ApiError::validation(format!(
                "Shoal does not implement leaving out a local secondary index in LocalSecondaryIndexOverride: {} must be named",
                left_out.name
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_arns_are_checked() {
        let arn =
            "arn:aws:dynamodb:us-east-1:000000000000:table/Music/backup/01489173575360-b308cd7d";
        assert_eq!(
            parse_backup_arn(Some(arn), "backupArn").unwrap(),
            ("Music", "01489173575360-b308cd7d")
        );
        for bad in [
            "arn:aws:dynamodb:us-east-1:000000000000:table/Music/backup/489173575360-b308cd7d",
            "arn:aws:dynamodb:us-east-1:000000000000:table/Music/backup/01489173575360-b308cd7z",
            "arn:aws:dynamodb:us-east-1:000000000000:table/Music/export/01489173575360-b308cd7d",
            "this is not an ARN of anything at all, just text",
        ] {
            assert_eq!(
                parse_backup_arn(Some(bad), "backupArn")
                    .unwrap_err()
                    .message,
                INVALID_BACKUP_ARN_MESSAGE,
                "{bad}"
            );
        }
        assert!(parse_backup_arn(Some("arn:short"), "backupArn")
            .unwrap_err()
            .message
            .contains("Member must have length greater than or equal to 37"));
        assert!(is_backup_id(&new_backup_id(1_489_173_575_360)));
    }
}
