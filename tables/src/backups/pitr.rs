//! Point-in-time recovery (SPEC-2 §6.2): UpdateContinuousBackups, DescribeContinuousBackups
//! and RestoreTableToPointInTime. The clock that maps times to sequence numbers, and the
//! history compaction keeps, are in `backups::pitr_clock`.
//!
//! **Enabling** stores a [`PointInTimeRecoveryDef`] in the table's definition with the time
//! and the visible sequence number: no restore goes earlier. The table tree's retention
//! floor is set just before the definition is stored, at a sequence number no later than
//! the stored one, so no compaction in between drops a version the table then needs.
//! **Disabling** forgets it: the floor goes, compaction drops the history, and enabling
//! again starts afresh (as on AWS). **Changing the period** keeps what is restorable now:
//! a longer period cannot bring back history already dropped, so the restorable start moves
//! to the current earliest restorable time, and the window then grows from there.
//!
//! **A restore** resolves its time to a sequence number, registers a snapshot there and
//! writes what the source's table tree held then (items, LSI entries and item-collection
//! sizes, all in that tree) into a new tree, installed with the new table's definition in
//! one version change (`Db::create_trees_at_snapshot`): a crash leaves the whole table or
//! none of it. Its statistics are rebuilt as for a restore from a backup
//! (`backups::on_demand`). Its GSIs, those the source has now less any the overrides leave
//! out, are created empty and CREATING and filled from the restored items by the online
//! backfill (`control::backfill`), which is how every GSI is ever built from existing items:
//! the source's GSI trees keep no history. The restored table carries no stream, Time to
//! Live, tags, deletion protection or point-in-time recovery.

use shoal_model::{ApiError, ErrorCode};

use crate::api::backups::{
    RestoreSummary, RestoreTableToPointInTimeInput, RestoreTableToPointInTimeOutput,
};
use crate::api::common::{table_name_of, validation_errors};
use crate::api::constraint::{value_at_least, value_at_most, violation, NOT_NULL};
use crate::api::settings::{
    ContinuousBackupsDescription, ContinuousBackupsResponse, DescribeContinuousBackupsRequest,
    PointInTimeRecoveryDescription, UpdateContinuousBackupsRequest,
};
use crate::backups::on_demand::{restore_target, restored_definition_edits, Overrides};
use crate::core::catalog::{IndexStatus, PointInTimeRecoveryDef, TableDef};
use crate::core::clock::epoch_seconds;
use crate::core::error::internal;
use crate::core::region::table_arn;
use crate::database::Database;
use shoal_engine::Snapshot;

/// Longest point-in-time recovery period (API model), and the default.
pub const RECOVERY_PERIOD_DAYS_MAX: i64 = 35;
/// ContinuousBackupsStatus: on-demand backups work for every table.
pub const CONTINUOUS_BACKUPS_STATUS: &str = "ENABLED";
/// SPEC-2 §6.2.
pub const RESTORE_TIME_CHOICE_MESSAGE: &str =
    "Invalid Request: Either one of RestoreDateTime or UseLatestRestorableTime must be specified, but not both";
/// SPEC-2 §6.2.
pub const PERIOD_WHEN_DISABLING_MESSAGE: &str =
    "Invalid Request: Cannot specify RecoveryPeriodInDays when disabling point-in-time recovery.";

/// PointInTimeRecoveryUnavailableException for table `name`.
pub(crate) fn pitr_unavailable(name: &str) -> ApiError {
    ApiError::new(
        ErrorCode::PointInTimeRecoveryUnavailableException,
        format!("Point in time recovery is not enabled for table '{name}'"),
    )
}

impl Database {
    /// DescribeContinuousBackups.
    pub fn describe_continuous_backups(
        &self,
        request: DescribeContinuousBackupsRequest,
    ) -> Result<ContinuousBackupsResponse, ApiError> {
        let name = table_name_of(request.table_name.as_deref())?;
        let table = self.backed_up_table(name)?;
        Ok(self.continuous_backups(&table))
    }

    /// UpdateContinuousBackups: turns point-in-time recovery on or off, or changes its
    /// period (module docs).
    pub fn update_continuous_backups(
        &self,
        request: UpdateContinuousBackupsRequest,
    ) -> Result<ContinuousBackupsResponse, ApiError> {
        let name = table_name_of(request.table_name.as_deref())?;
        let member = "pointInTimeRecoverySpecification";
        let mut problems = Vec::new();
        match &request.point_in_time_recovery_specification {
            None => problems.push(violation(None, member, NOT_NULL)),
            Some(spec) => {
                if spec.point_in_time_recovery_enabled.is_none() {
                    problems.push(violation(
                        None,
                        &format!("{member}.pointInTimeRecoveryEnabled"),
                        NOT_NULL,
                    ));
                }
                match spec.recovery_period_in_days {
                    Some(days) if days < 1 => problems.push(violation(
                        Some(&days.to_string()),
                        &format!("{member}.recoveryPeriodInDays"),
                        &value_at_least(1),
                    )),
                    Some(days) if days > RECOVERY_PERIOD_DAYS_MAX => problems.push(violation(
                        Some(&days.to_string()),
                        &format!("{member}.recoveryPeriodInDays"),
                        &value_at_most(RECOVERY_PERIOD_DAYS_MAX),
                    )),
                    _ => {}
                }
            }
        }
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        self.backed_up_table(name)?;
        let spec = request
            .point_in_time_recovery_specification
            .unwrap_or_default();
        let enable = spec.point_in_time_recovery_enabled == Some(true);
        if !enable && spec.recovery_period_in_days.is_some() {
            return Err(ApiError::validation(PERIOD_WHEN_DISABLING_MESSAGE));
        }
        let days = spec
            .recovery_period_in_days
            .and_then(|days| u32::try_from(days).ok())
            .unwrap_or(RECOVERY_PERIOD_DAYS_MAX as u32);

        let _change = self.catalog_change.lock();
        let table = self.backed_up_table(name)?;
        let mut changed = TableDef::clone(&table);
        changed.settings.point_in_time_recovery = match &table.settings.point_in_time_recovery {
            _ if !enable => None,
            None => {
                self.ensure_pitr_clock()?;
                // Before the visible sequence number is read for the definition (module docs).
                self.backups
                    .pitr
                    .hold_from(table.tree, self.db.visible_seq());
                Some(PointInTimeRecoveryDef {
                    recovery_period_days: days,
                    restorable_from_millis: self.options.clock.now_millis(),
                    restorable_from_seq: self.db.visible_seq(),
                })
            }
            Some(current) if current.recovery_period_days == days => Some(current.clone()),
            Some(current) => {
                let _advancing = self.backups.pitr.advancing.lock();
                let from_millis = self.earliest_restorable_millis(current);
                Some(PointInTimeRecoveryDef {
                    recovery_period_days: days,
                    restorable_from_millis: from_millis,
                    restorable_from_seq: self.pitr_seq_at(current, from_millis)?,
                })
            }
        };
        if changed != *table {
            self.store_definition(&changed)?;
        }
        self.start_upkeep().map_err(internal)?;
        Ok(self.continuous_backups(&changed))
    }

    /// The answer of both continuous-backups operations for `table`.
    fn continuous_backups(&self, table: &TableDef) -> ContinuousBackupsResponse {
        let point_in_time_recovery_description = match &table.settings.point_in_time_recovery {
            None => PointInTimeRecoveryDescription {
                point_in_time_recovery_status: "DISABLED".to_string(),
                ..PointInTimeRecoveryDescription::default()
            },
            Some(pitr) => PointInTimeRecoveryDescription {
                point_in_time_recovery_status: "ENABLED".to_string(),
                recovery_period_in_days: Some(pitr.recovery_period_days),
                earliest_restorable_date_time: Some(epoch_seconds(
                    self.earliest_restorable_millis(pitr),
                )),
                latest_restorable_date_time: Some(epoch_seconds(self.options.clock.now_millis())),
            },
        };
        ContinuousBackupsResponse {
            continuous_backups_description: ContinuousBackupsDescription {
                continuous_backups_status: CONTINUOUS_BACKUPS_STATUS.to_string(),
                point_in_time_recovery_description,
            },
        }
    }

    /// A snapshot of what `tree` (a table tree with point-in-time recovery `pitr`) held at
    /// `millis`, which the caller checked is restorable.
    pub(crate) fn pitr_snapshot(
        &self,
        pitr: &PointInTimeRecoveryDef,
        tree: shoal_engine::TreeId,
        millis: u64,
    ) -> Result<Snapshot, ApiError> {
        // Held until the snapshot is registered (`PitrRetention::advancing`).
        let _advancing = self.backups.pitr.advancing.lock();
        let seq = self.pitr_seq_at(pitr, millis)?;
        if let Some(floor) = self.backups.pitr.floor_of(tree) {
            // Every restorable time resolves at or above the floor (`pitr_clock`); below
            // it the history may be gone, and a restore would be silently wrong.
            if seq < floor {
                return Err(internal(format!(
                    "the history at sequence number {seq} is below the retention floor {floor}"
                )));
            }
        }
        self.db.snapshot_at(seq).map_err(internal)
    }

    /// The restorable time `restore_date_time` (epoch seconds) names, in milliseconds, or
    /// InvalidRestoreTimeException.
    pub(crate) fn restorable_millis(
        &self,
        pitr: &PointInTimeRecoveryDef,
        restore_date_time: f64,
    ) -> Result<u64, ApiError> {
        let earliest = self.earliest_restorable_millis(pitr);
        let latest = self.options.clock.now_millis();
        let millis = restore_date_time * 1000.0;
        if !millis.is_finite() || millis < earliest as f64 || millis > latest as f64 {
            return Err(ApiError::new(
                ErrorCode::InvalidRestoreTimeException,
                format!(
                    "Invalid restore time {restore_date_time}: it must be between the earliest restorable time {} and the latest {}",
                    epoch_seconds(earliest),
                    epoch_seconds(latest)
                ),
            ));
        }
        Ok(millis as u64)
    }

    /// RestoreTableToPointInTime: a new table holding the source's items at the time asked
    /// (module docs).
    pub fn restore_table_to_point_in_time(
        &self,
        request: RestoreTableToPointInTimeInput,
    ) -> Result<RestoreTableToPointInTimeOutput, ApiError> {
        let target = restore_target(request.target_table_name.as_deref())?;
        let source_name = match (&request.source_table_name, &request.source_table_arn) {
            (Some(name), None) | (None, Some(name)) => table_name_of(Some(name))?,
            _ => {
                return Err(ApiError::validation(
                    "Invalid Request: Either one of SourceTableArn or SourceTableName must be specified, but not both",
                ))
            }
        };
        let restore_date_time = match (
            request.use_latest_restorable_time,
            request.restore_date_time,
        ) {
            (Some(true), None) => None,
            (None | Some(false), Some(time)) => Some(time),
            _ => return Err(ApiError::validation(RESTORE_TIME_CHOICE_MESSAGE)),
        };
        let overrides_request = request.overrides();
        let overrides = Overrides::of(&overrides_request)?;

        let _change = self.catalog_change.lock();
        let source = self.backed_up_table(source_name)?;
        let Some(pitr) = source.settings.point_in_time_recovery.clone() else {
            return Err(pitr_unavailable(source_name));
        };
        let restore_millis = match restore_date_time {
            Some(time) => Some(self.restorable_millis(&pitr, time)?),
            None => None,
        };
        self.refuse_taken_target(target)?;
        let mut definition = overrides.apply(&source, target)?;
        for gsi in &mut definition.global_indexes {
            gsi.status = IndexStatus::Creating { backfilling: false };
        }
        let restored_at_millis = restore_millis.unwrap_or_else(|| self.options.clock.now_millis());
        let snapshot = match restore_millis {
            Some(millis) => self.pitr_snapshot(&pitr, source.tree, millis)?,
            None => self.db.snapshot(),
        };
        let table = self.install_at_snapshot(&source, &snapshot, definition)?;
        drop(snapshot);
        for gsi in &table.global_indexes {
            self.start_backfill(&table.id, gsi.tree).map_err(internal)?;
        }
        let table_description = self.restored_description(
            &table,
            RestoreSummary {
                source_backup_arn: None,
                source_table_arn: Some(table_arn(&source.name)),
                restore_date_time: epoch_seconds(restored_at_millis),
                restore_in_progress: false,
            },
        );
        Ok(RestoreTableToPointInTimeOutput { table_description })
    }

    /// Creates the restored table `definition`: its table tree as the source's was at
    /// `snapshot`, its GSI trees empty, and its catalog entry, in one version change; then
    /// its statistics, and the table made visible.
    fn install_at_snapshot(
        &self,
        source: &TableDef,
        snapshot: &Snapshot,
        mut definition: TableDef,
    ) -> Result<std::sync::Arc<TableDef>, ApiError> {
        // Only the table tree is copied: the GSIs are rebuilt by the backfill.
        let (names, creates_stats_tree) = self.restored_tree_names(&definition);
        let mut sources = vec![None; names.len()];
        sources[0] = Some(source.tree);
        let mut stored = None;
        let ids = self
            .db
            .create_trees_at_snapshot(&names, &sources, snapshot, |ids| {
                restored_definition_edits(&mut definition, ids, &mut stored)
            })
            .map_err(internal)?;
        self.publish_restored(stored, &ids, creates_stats_tree)
    }
}
