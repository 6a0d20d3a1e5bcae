//! UpdateTable `ReplicaUpdates` (SPEC-3 §2.1): replicas created in and deleted from other
//! Regions, with §2.1's rules and texts; what leaving a group does to the other members
//! (ReplicaUpdates Delete and DeleteTable of a member, §2.3); and DescribeTable's global
//! table members (§2.2).
//!
//! A Create is two durable steps: the source's stream enabled when it has none
//! (`NEW_AND_OLD_IMAGES`, §2.1; a crash after it leaves a table with a stream, which is
//! what a retried Create needs anyway), then ONE version change that creates the replicas'
//! trees (table, GSIs, stream, expiry index, replication tree, and the source's replication
//! tree when it joins its first group) and stores every member's new definition: each new
//! replica (two when a strong group forms, `strong`) CREATING with the TableId it is filled
//! from, the source kept in its Region from then on (its catalog entry moves from `T` to
//! `T@region` in the same change), and each member's list of members. A crash leaves the
//! group as it was or the replicas whole and CREATING; the replication thread fills a
//! CREATING replica (`worker`), again from the start after a crash, which the items' stamps
//! make harmless (`apply`).
//!
//! A Delete of several replicas (a strong group taken apart, with its witness) drops them
//! all, and makes the caller's table regional, in ONE version change (`drop_tables`): a
//! crash leaves the strong group whole or gone.

use std::collections::BTreeMap;

use serde::Deserialize;
use shoal_engine::version::VersionEdit;
use shoal_engine::TreeId;
use shoal_model::{ApiError, ErrorCode};

use crate::api::common::validation_errors;
use crate::api::constraint::{
    enum_value_set, length_at_most, violation, violation_without_value, NOT_NULL,
};
use crate::api::control::{ReplicaDescription, TableDescription, WitnessDescription};
use crate::control::tables::{gsi_tree_name, new_table_id};
use crate::core::catalog::{
    catalog_key, metadata_key, IndexStatus, MemberDef, ReplicaOverrides, ReplicaStatus,
    ReplicationDef, StreamViewType, TableDef, TimeToLiveDef,
};
use crate::core::clock::now_millis;
use crate::core::error::internal;
use crate::core::region;
use crate::core::stats;
use crate::core::store::Core;
use crate::database::Database;
use crate::emulation::transient::TransientStatus;
use crate::replication::disassociate::{self, DISASSOCIATE_ALONE, DISASSOCIATION_MODES};
use crate::replication::overrides::{self, RequestedOverrides};
use crate::replication::regions::{is_supported, unsupported_message};
use crate::replication::strong::{self, WITNESSES_MAX};
use crate::replication::tree::tree_name;
use crate::streams::lifecycle::StreamChange;
use shoal_engine::WriteBatch;

/// DescribeTable's `GlobalTableVersion` of a member.
pub const GLOBAL_TABLE_VERSION: &str = "2019.11.21";
/// DescribeTable's `GlobalTableSettingsReplicationMode` of a member.
pub const SETTINGS_REPLICATION_MODE: &str = "ENABLED_WITH_OVERRIDES";

const INVALID: &str = "One or more parameter values were invalid:";
/// Text of ReplicaUpdates beside another change (checked before the table is read).
pub const REPLICA_ALONE_MESSAGE: &str = "One or more parameter values were invalid: Replica modification must be the only operation in the request";
const TWO_CREATES_OR_DELETES: &str =
    "Update table operation with more than one create or delete replica actions not allowed";
const MIXED_ACTIONS: &str =
    "Update table operation with more than one type of replica actions not allowed.";
pub(crate) const SAME_REGION_TWICE: &str = "Cannot target multiple regions with the same action";
const NO_ACTIONS: &str =
    "There are no actions specified in the Replica Update Action of the request.";
const LOCAL_REGION: &str = "Cannot add or delete the local region through ReplicaUpdates. Use CreateTable, DeleteTable, or UpdateTable as required.";

/// One member of `ReplicaUpdates` as sent.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ReplicationGroupUpdate {
    create: Option<ReplicaAction>,
    update: Option<ReplicaAction>,
    delete: Option<ReplicaAction>,
    disassociate: Option<ReplicaAction>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ReplicaAction {
    region_name: Option<String>,
    /// What else the action holds (overrides; `DisassociationMode`).
    #[serde(flatten)]
    settings: BTreeMap<String, serde_json::Value>,
}

/// What a valid ReplicaUpdates asks for: replicas created, or deleted (several at once only
/// when a strong group forms or is taken apart, `strong`), or members' overrides updated
/// (`overrides`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReplicaChange {
    Create(Vec<String>),
    Delete(Vec<String>),
    Update(Vec<String>),
    /// The Region a Disassociate names (`disassociate`).
    Disassociate(String),
}

/// A `GlobalTableWitnessUpdates` action (SPEC-3 §2.1: at most one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WitnessChange {
    Create(String),
    Delete(String),
}

/// Everything a valid UpdateTable changing a global table's members asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupChange {
    pub replicas: ReplicaChange,
    /// `MultiRegionConsistency` as sent: `Some(true)` for STRONG, `Some(false)` for EVENTUAL.
    pub strong: Option<bool>,
    pub witness: Option<WitnessChange>,
    /// The overrides each Create or Update asks for, by Region (`overrides`).
    pub overrides: BTreeMap<String, RequestedOverrides>,
}

/// One member of `GlobalTableWitnessUpdates` as sent.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct WitnessUpdate {
    create: Option<ReplicaAction>,
    delete: Option<ReplicaAction>,
}

/// The values `MultiRegionConsistency` may take.
const CONSISTENCIES: &[&str] = &["EVENTUAL", "STRONG"];

/// An enum member read from the raw request: its value when it is one of `values`; absent
/// or null, nothing (the caller decides whether it was required); anything else, a
/// constraint violation at `path` naming what was sent.
fn enum_member<'a>(
    value: Option<&'a serde_json::Value>,
    path: &str,
    values: &[&str],
    problems: &mut Vec<String>,
) -> Option<&'a str> {
    match value {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(text)) if values.contains(&text.as_str()) => {
            Some(text.as_str())
        }
        Some(other) => {
            let shown = other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_string);
            problems.push(violation(Some(&shown), path, &enum_value_set(values)));
            None
        }
    }
}

/// Reads `ReplicaUpdates`, `MultiRegionConsistency` and `GlobalTableWitnessUpdates` and
/// checks what the request alone decides: shapes, member constraints, action counts, a
/// Region named twice, an Update without settings, and SPEC-3 §2.5's rules on which
/// actions go with MultiRegionConsistency and a witness.
pub(crate) fn parse_replica_updates(
    value: &serde_json::Value,
    consistency: Option<&serde_json::Value>,
    witnesses: Option<&serde_json::Value>,
) -> Result<GroupChange, ApiError> {
    let updates: Vec<ReplicationGroupUpdate> =
        serde_json::from_value(value.clone()).map_err(|_| {
            ApiError::new(
                ErrorCode::SerializationException,
                "Unexpected value for ReplicaUpdates: a list of ReplicationGroupUpdate structures is expected",
            )
        })?;
    let witness_updates: Vec<WitnessUpdate> = match witnesses {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(witnesses) => serde_json::from_value(witnesses.clone()).map_err(|_| {
            ApiError::new(
                ErrorCode::SerializationException,
                "Unexpected value for GlobalTableWitnessUpdates: a list of GlobalTableWitnessGroupUpdate structures is expected",
            )
        })?,
    };
    let mut problems = Vec::new();
    // The overrides of each member's Create or Update, by position.
    let mut requested = Vec::with_capacity(updates.len());
    for (position, update) in updates.iter().enumerate() {
        let mut overrides = RequestedOverrides::default();
        for (member, action) in [
            ("create", &update.create),
            ("update", &update.update),
            ("delete", &update.delete),
            ("disassociate", &update.disassociate),
        ] {
            if let Some(action) = action {
                let path = format!("replicaUpdates.{}.member.{member}", position + 1);
                if action.region_name.is_none() {
                    problems.push(violation(None, &format!("{path}.regionName"), NOT_NULL));
                }
                if matches!(member, "create" | "update") {
                    overrides = overrides::parse(&action.settings, &path, &mut problems)?;
                }
                if member == "disassociate" {
                    let mode_path = format!("{path}.disassociationMode");
                    let mode = action.settings.get("DisassociationMode");
                    if mode.is_none_or(serde_json::Value::is_null) {
                        problems.push(violation(None, &mode_path, NOT_NULL));
                    }
                    enum_member(mode, &mode_path, DISASSOCIATION_MODES, &mut problems);
                }
            }
        }
        requested.push(overrides);
    }
    let strong = enum_member(
        consistency,
        "multiRegionConsistency",
        CONSISTENCIES,
        &mut problems,
    )
    .map(|mode| mode == "STRONG");
    if witness_updates.len() > WITNESSES_MAX {
        problems.push(violation_without_value(
            "globalTableWitnessUpdates",
            &length_at_most(WITNESSES_MAX),
        ));
    }
    for (position, update) in witness_updates.iter().enumerate() {
        for (member, action) in [("create", &update.create), ("delete", &update.delete)] {
            if action.as_ref().is_some_and(|a| a.region_name.is_none()) {
                problems.push(violation(
                    None,
                    &format!(
                        "globalTableWitnessUpdates.{}.member.{member}.regionName",
                        position + 1
                    ),
                    NOT_NULL,
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Err(validation_errors(&problems));
    }
    let witness = match witness_updates.first() {
        None => None,
        Some(WitnessUpdate {
            create: Some(action),
            delete: None,
        }) => Some(WitnessChange::Create(
            action.region_name.clone().unwrap_or_default(),
        )),
        Some(WitnessUpdate {
            create: None,
            delete: Some(action),
        }) => Some(WitnessChange::Delete(
            action.region_name.clone().unwrap_or_default(),
        )),
        Some(_) => {
            return Err(ApiError::validation(format!(
                "{INVALID} One of GlobalTableWitnessGroupUpdate.Create or GlobalTableWitnessGroupUpdate.Delete must be specified"
            )))
        }
    };
    if matches!(witness, Some(WitnessChange::Create(_))) && strong != Some(true) {
        return Err(ApiError::validation(strong::WITNESS_NEEDS_STRONG));
    }
    // (kind, region), identical Creates merged.
    let mut actions: Vec<(&str, &str, &ReplicaAction)> = Vec::new();
    let mut overrides_by_region = BTreeMap::new();
    for (update, overrides) in updates.iter().zip(requested) {
        let present: Vec<(&str, &ReplicaAction)> = [
            ("Create", &update.create),
            ("Update", &update.update),
            ("Delete", &update.delete),
            ("Disassociate", &update.disassociate),
        ]
        .into_iter()
        .filter_map(|(kind, action)| Some((kind, action.as_ref()?)))
        .collect();
        let [(kind, action)] = present.as_slice() else {
            return Err(ApiError::validation(format!(
                "{INVALID} One of ReplicationGroupUpdate.Create, ReplicationGroupUpdate.Update or ReplicationGroupUpdate.Delete must be specified"
            )));
        };
        let region = action.region_name.as_deref().unwrap_or_default();
        if overrides.asks() {
            overrides_by_region.insert(region.to_string(), overrides);
        }
        let duplicate = actions.iter().any(|(k, r, a)| {
            *k == "Create" && *kind == "Create" && *r == region && a.settings == action.settings
        });
        if !duplicate {
            actions.push((kind, region, action));
        }
    }
    // A Disassociate is the request's only replica or witness update (SPEC-3 §2.1).
    if actions.iter().any(|(kind, _, _)| *kind == "Disassociate")
        && (updates.len() > 1 || witness.is_some())
    {
        return Err(ApiError::validation(DISASSOCIATE_ALONE));
    }
    let first_kind = actions.first().map(|(kind, _, _)| *kind);
    if strong.is_some() && first_kind.is_some_and(|kind| kind != "Create") {
        return Err(ApiError::validation(strong::ONLY_CREATES));
    }
    if actions.iter().any(|(kind, _, _)| Some(*kind) != first_kind) {
        return Err(ApiError::validation(MIXED_ACTIONS));
    }
    let mut regions: Vec<&str> = actions.iter().map(|(_, region, _)| *region).collect();
    regions.sort_unstable();
    if regions.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(ApiError::validation(SAME_REGION_TWICE));
    }
    // Two Creates form a strong group (its own rules, `strong`); several Deletes may take
    // one apart, which only the table's group can tell (`change_replicas`).
    let several_allowed = match first_kind {
        Some("Create") => strong == Some(true),
        Some("Delete") => true,
        _ => false,
    };
    if actions.len() > 1 && !several_allowed && matches!(first_kind, Some("Create" | "Delete")) {
        return Err(ApiError::validation(TWO_CREATES_OR_DELETES));
    }
    let Some((kind, _, _)) = actions.first() else {
        return Err(ApiError::validation(NO_ACTIONS));
    };
    let targets = || {
        actions
            .iter()
            .map(|(_, region, _)| region.to_string())
            .collect()
    };
    let replicas = match *kind {
        "Create" => ReplicaChange::Create(targets()),
        "Delete" => ReplicaChange::Delete(targets()),
        "Update" => {
            let asks = |region: &str| overrides_by_region.contains_key(region);
            if actions.iter().any(|(_, region, _)| !asks(region)) {
                return Err(ApiError::validation(NO_ACTIONS));
            }
            ReplicaChange::Update(targets())
        }
        _ => ReplicaChange::Disassociate(targets().into_iter().next().unwrap_or_default()),
    };
    Ok(GroupChange {
        replicas,
        strong,
        witness,
        overrides: overrides_by_region,
    })
}

/// SPEC-3 §2.1's text for Regions that are not members.
pub(crate) fn not_members_message(regions: &[&str]) -> String {
    format!(
        "Update global table operation failed because one or more replicas were not part of the global table. Please retry the request without these replicas: [{}].",
        regions.join(", ")
    )
}

impl Database {
    /// Carries out a ReplicaUpdates Create, Delete or Update on `table`, the caller's
    /// member (or regional table), with a strong group's rules when one forms or is taken
    /// apart (`strong`). Returns the Regions whose members an Update changed (UPDATING in
    /// the answer). The caller holds `catalog_change`.
    pub(crate) fn change_replicas(
        &self,
        table: &TableDef,
        change: &GroupChange,
    ) -> Result<Vec<String>, ApiError> {
        let local = table.region.clone().unwrap_or_else(region::current);
        let targets = match &change.replicas {
            ReplicaChange::Create(targets)
            | ReplicaChange::Delete(targets)
            | ReplicaChange::Update(targets) => targets,
            ReplicaChange::Disassociate(target) => {
                self.check_no_member_busy(table)?;
                self.disassociate(table, &local, target, || not_members_message(&[target]))?;
                return Ok(Vec::new());
            }
        };
        // An Update may name the caller's own Region: its overrides are what the other
        // Regions show for it.
        if targets.contains(&local) && !matches!(change.replicas, ReplicaChange::Update(_)) {
            return Err(ApiError::validation(LOCAL_REGION));
        }
        if change.strong.is_some() && table.replication.is_some() {
            return Err(ApiError::validation(strong::UNSUPPORTED_ON_EXISTING));
        }
        let strong_group = table.replication.as_ref().is_some_and(|r| r.strong);
        let members: Vec<MemberDef> = table
            .replication
            .as_ref()
            .map(|r| r.members.clone())
            .unwrap_or_default();
        let is_member = |target: &str| members.iter().any(|member| member.region == target);
        let catalog = self.catalog.read().clone();
        // An Update or Delete names members only.
        if matches!(
            change.replicas,
            ReplicaChange::Update(_) | ReplicaChange::Delete(_)
        ) {
            let strangers: Vec<&str> = targets
                .iter()
                .map(String::as_str)
                .filter(|target| !is_member(target))
                .collect();
            if !strangers.is_empty() {
                return Err(ApiError::validation(not_members_message(&strangers)));
            }
        }
        match &change.replicas {
            ReplicaChange::Create(_) => {
                if strong_group {
                    return Err(ApiError::validation(strong::CANNOT_ADD_REPLICAS));
                }
                if change.strong == Some(true) {
                    strong::check_group_shape(&local, targets, change.witness.as_ref())?;
                } else if let Some(WitnessChange::Delete(witness)) = &change.witness {
                    return Err(ApiError::validation(not_members_message(&[witness])));
                }
                for target in targets {
                    if !is_supported(target) {
                        return Err(ApiError::validation(unsupported_message(target)));
                    }
                }
                for target in targets {
                    let taken = crate::core::catalog::resolve(&catalog, &table.name, target)
                        .is_some_and(|there| there.id != table.id);
                    if is_member(target) || taken {
                        return Err(ApiError::validation(format!(
                            "Failed to create a the new replica of table with name: \u{2018}{}\u{2019} because one or more replicas already existed as tables.",
                            table.name
                        )));
                    }
                }
            }
            ReplicaChange::Update(_) => {
                if change.witness.is_some() {
                    return Err(ApiError::validation(MIXED_ACTIONS));
                }
            }
            // Carried out above.
            ReplicaChange::Disassociate(_) => {}
            ReplicaChange::Delete(_) => {
                let group_witness = table.replication.as_ref().and_then(|r| r.witness.clone());
                match &change.witness {
                    Some(WitnessChange::Delete(witness))
                        if group_witness.as_ref() != Some(witness) =>
                    {
                        return Err(ApiError::validation(not_members_message(&[witness])));
                    }
                    Some(WitnessChange::Create(_)) => {
                        return Err(ApiError::validation(strong::ONLY_CREATES));
                    }
                    _ => {}
                }
                if strong_group {
                    strong::check_teardown(
                        &local,
                        &members,
                        targets,
                        group_witness.as_deref(),
                        change.witness.as_ref(),
                    )?;
                } else if targets.len() > 1 {
                    return Err(ApiError::validation(TWO_CREATES_OR_DELETES));
                }
            }
        }
        self.check_no_member_busy(table)?;
        match &change.replicas {
            ReplicaChange::Create(targets) => {
                let witness = match &change.witness {
                    Some(WitnessChange::Create(witness)) => Some(witness.clone()),
                    _ => None,
                };
                if change.strong == Some(true) {
                    self.check_strong_source(table)?;
                }
                // Checked against the source, whose schema and billing every replica gets.
                let mut replica_overrides = BTreeMap::new();
                for target in targets {
                    if let Some(requested) = change.overrides.get(target) {
                        let set = overrides::apply(table, &ReplicaOverrides::default(), requested)?;
                        replica_overrides.insert(target.clone(), set);
                    }
                }
                self.create_replicas(
                    table,
                    &local,
                    targets,
                    &replica_overrides,
                    change.strong == Some(true),
                    witness,
                )?;
                Ok(Vec::new())
            }
            ReplicaChange::Update(targets) => {
                self.update_overrides(table, targets, &change.overrides)?;
                Ok(targets.clone())
            }
            // Carried out above.
            ReplicaChange::Disassociate(_) => Ok(Vec::new()),
            ReplicaChange::Delete(targets) => {
                let mut replicas = Vec::with_capacity(targets.len());
                for target in targets {
                    let Some(replica) = catalog.get(&catalog_key(&table.name, Some(target))) else {
                        return Err(internal("a member's table is missing from the catalog"));
                    };
                    if replica.settings.deletion_protection {
                        return Err(ApiError::validation(format!(
                            "Cannot delete table {} in region {target} because it has deletion protection enabled. Disable deletion protection first.",
                            table.name
                        )));
                    }
                    replicas.push(TableDef::clone(replica));
                }
                // Every member and what their leaving changes in the caller's table (the
                // last one leaves it regional, its witness with it, `leave_group`) in one
                // durable change: a crash leaves the group whole or taken apart.
                self.drop_tables(&replicas)?;
                tracing::info!(table = %table.name, regions = ?targets, "replicas deleted");
                let deleted_witness = match &change.witness {
                    Some(WitnessChange::Delete(witness)) => Some(witness.as_str()),
                    _ => None,
                };
                self.show_departed(table, &members, targets, deleted_witness);
                Ok(Vec::new())
            }
        }
    }

    /// The members of `table`'s group (`members`, as they were) that stay see the replicas
    /// in `departed` and the witness `witness` DELETING for the transient delay.
    pub(crate) fn show_departed(
        &self,
        table: &TableDef,
        members: &[MemberDef],
        departed: &[String],
        witness: Option<&str>,
    ) {
        let strong = table.replication.as_ref().is_some_and(|r| r.strong);
        let transitions = &self.emulation.transitions;
        for member in members.iter().filter(|m| !departed.contains(&m.region)) {
            let observer = catalog_key(&table.name, Some(&member.region));
            for region in departed {
                transitions.begin_replica(
                    &observer,
                    region,
                    false,
                    strong,
                    TransientStatus::Deleting,
                );
            }
            if let Some(witness) = witness {
                transitions.begin_replica(
                    &observer,
                    witness,
                    true,
                    strong,
                    TransientStatus::Deleting,
                );
            }
        }
    }

    /// Refuses a replica action while a member of `table`'s group is being added (SPEC-3
    /// §2.1's text) or is disassociating (its bare ResourceInUseException).
    fn check_no_member_busy(&self, table: &TableDef) -> Result<(), ApiError> {
        match self.busy_member(table) {
            Some((region, ReplicaStatus::Creating)) => Err(ApiError::validation(format!(
                "Create/Update/Delete of replica is not allowed while the replica is being added to table with name: \u{2018}{}\u{2019} in region: \u{2018}{region}\u{2019}.",
                table.name
            ))),
            Some(_) => Err(ApiError::new(
                ErrorCode::ResourceInUseException,
                disassociate::IN_USE_MESSAGE,
            )),
            _ => Ok(()),
        }
    }

    /// Refuses a replica action on `table` while the member sees another member DELETING
    /// or its witness CREATING or DELETING (`emulation::transient`): the bare
    /// ResourceInUseException AWS answers on global tables (SPEC-3 §2.1). Checked before
    /// the table's own transition, whose text names a table rather than a global table.
    pub(crate) fn refuse_replica_action_in_transition(
        &self,
        table: &TableDef,
    ) -> Result<(), ApiError> {
        let in_transition = self
            .emulation
            .transitions
            .replicas_of(&table.catalog_key())
            .iter()
            .any(|t| t.witness || t.status == TransientStatus::Deleting);
        if in_transition {
            return Err(ApiError::new(
                ErrorCode::ResourceInUseException,
                disassociate::IN_USE_MESSAGE,
            ));
        }
        Ok(())
    }

    /// Stores the overrides `requested` asks of each member in `targets` (checked against
    /// that member's own definition), all in one version change: a crash leaves every
    /// member as it was or every one changed. The caller holds `catalog_change`.
    fn update_overrides(
        &self,
        table: &TableDef,
        targets: &[String],
        requested: &BTreeMap<String, RequestedOverrides>,
    ) -> Result<(), ApiError> {
        let mut changed_members = Vec::with_capacity(targets.len());
        {
            let catalog = self.catalog.read();
            for target in targets {
                let Some(member) = catalog.get(&catalog_key(&table.name, Some(target))) else {
                    return Err(internal("a member's table is missing from the catalog"));
                };
                let mut changed = TableDef::clone(member);
                let Some(replication) = changed.replication.as_mut() else {
                    return Err(internal("a member's table is in no group"));
                };
                if let Some(requested) = requested.get(target) {
                    replication.overrides =
                        overrides::apply(member, &replication.overrides, requested)?;
                }
                changed_members.push(changed);
            }
        }
        self.store_definitions_dropping(&changed_members, &[])?;
        for target in targets {
            self.emulation
                .transitions
                .begin_member_update(&catalog_key(&table.name, Some(target)));
            tracing::info!(table = %table.name, region = %target, "replica overrides updated");
        }
        Ok(())
    }

    /// Creates the replicas of `source` (kept in `local`) in `targets`, each with its
    /// overrides from `overrides`, in one version change (module docs); `strong` and
    /// `witness` describe a strong group forming.
    fn create_replicas(
        &self,
        source: &TableDef,
        local: &str,
        targets: &[String],
        overrides: &BTreeMap<String, ReplicaOverrides>,
        strong: bool,
        witness: Option<String>,
    ) -> Result<(), ApiError> {
        let source = if source.enabled_stream().is_none() {
            self.change_stream(
                source,
                StreamChange::Enable(StreamViewType::NewAndOldImages),
            )?;
            self.catalog
                .read()
                .get(&source.catalog_key())
                .cloned()
                .ok_or_else(|| internal("the table went away while its stream was enabled"))?
        } else {
            std::sync::Arc::new(source.clone())
        };
        let view_type = source
            .enabled_stream()
            .map_or(StreamViewType::NewAndOldImages, |stream| stream.view_type);
        let now = now_millis();
        // A new group's strength and witness; an MREC group keeps its own.
        let (strong, witness) = match &source.replication {
            Some(replication) => (replication.strong, replication.witness.clone()),
            None => (strong, witness),
        };

        let mut members = source
            .replication
            .as_ref()
            .map(|r| r.members.clone())
            .unwrap_or_else(|| {
                vec![MemberDef {
                    region: local.to_string(),
                    table_id: source.id.clone(),
                }]
            });
        let replica_ids: Vec<String> = targets.iter().map(|_| new_table_id()).collect();
        for (target, id) in targets.iter().zip(&replica_ids) {
            members.push(MemberDef {
                region: target.clone(),
                table_id: id.clone(),
            });
        }

        // Each replica: the source's schema, indexes, stream view, Time to Live and
        // group-wide settings; its regional settings (tags, deletion protection, PITR)
        // start from the defaults. `positions` are where its trees are in `tree_names`.
        let mut tree_names = Vec::new();
        let mut replicas = Vec::with_capacity(targets.len());
        for (target, replica_id) in targets.iter().zip(&replica_ids) {
            let mut replica = source.as_ref().clone();
            replica.id = replica_id.clone();
            replica.created_at_millis = now;
            replica.region = Some(target.clone());
            replica.streams = Vec::new();
            replica.settings.tags = BTreeMap::new();
            replica.settings.deletion_protection = false;
            replica.settings.point_in_time_recovery = None;
            for gsi in &mut replica.global_indexes {
                // Filled by the write path as the replica is, so complete when it is ACTIVE.
                gsi.status = IndexStatus::Active;
            }
            let table_position = tree_names.len();
            tree_names.push(replica_id.clone());
            tree_names.extend(
                replica
                    .global_indexes
                    .iter()
                    .map(|gsi| gsi_tree_name(replica_id, &gsi.name)),
            );
            let stream_position = tree_names.len();
            tree_names.push(self.stream_for_new_table(&mut replica, view_type));
            let ttl_position = replica.time_to_live.as_ref().map(|_| {
                tree_names.push(format!("{replica_id}/ttl/{now}"));
                tree_names.len() - 1
            });
            let replication_position = tree_names.len();
            tree_names.push(tree_name(replica_id));
            replica.replication = Some(ReplicationDef {
                members: members.clone(),
                status: ReplicaStatus::Creating,
                tree: 0,
                source: Some(source.id.clone()),
                strong,
                witness: witness.clone(),
                overrides: overrides.get(target).cloned().unwrap_or_default(),
                // The group's write settings; its own read settings start unset.
                autoscaling: source
                    .replication
                    .as_ref()
                    .map(|r| r.autoscaling.group_wide())
                    .unwrap_or_default(),
            });
            // Fail before touching storage if a definition cannot be stored.
            replica.to_metadata().map_err(internal)?;
            replicas.push((
                replica,
                [table_position, stream_position, replication_position],
                ttl_position,
            ));
        }
        let source_tree_position = source.replication.is_none().then(|| {
            tree_names.push(tree_name(&source.id));
            tree_names.len() - 1
        });

        let mut changed_source = source.as_ref().clone();
        changed_source.region = Some(local.to_string());
        let source_tree = source.replication.as_ref().map_or(0, |r| r.tree);
        changed_source.replication = Some(ReplicationDef {
            members: members.clone(),
            status: ReplicaStatus::Active,
            tree: source_tree,
            source: None,
            strong,
            witness: witness.clone(),
            // The source keeps its own overrides when it is a member already.
            overrides: source
                .replication
                .as_ref()
                .map(|r| r.overrides.clone())
                .unwrap_or_default(),
            autoscaling: source
                .replication
                .as_ref()
                .map(|r| r.autoscaling.clone())
                .unwrap_or_default(),
        });
        let others: Vec<TableDef> = members
            .iter()
            .filter(|m| m.table_id != source.id && !replica_ids.contains(&m.table_id))
            .filter_map(|m| {
                let mut other = TableDef::clone(
                    self.catalog
                        .read()
                        .get(&catalog_key(&source.name, Some(&m.region)))?,
                );
                if let Some(replication) = other.replication.as_mut() {
                    replication.members = members.clone();
                }
                Some(other)
            })
            .collect();
        changed_source.to_metadata().map_err(internal)?;

        let old_source_key = source.catalog_key();
        let mut stored = false;
        let ids = self
            .db
            .create_trees_with(&tree_names, |ids| {
                let tree = |position: usize| ids.get(position).copied().unwrap_or_default();
                for (
                    replica,
                    [table_position, stream_position, replication_position],
                    ttl_position,
                ) in &mut replicas
                {
                    replica.tree = tree(*table_position);
                    for (offset, gsi) in replica.global_indexes.iter_mut().enumerate() {
                        gsi.tree = tree(*table_position + offset + 1);
                    }
                    Database::stream_tree_created(replica, tree(*stream_position));
                    if let (Some(position), Some(ttl)) =
                        (*ttl_position, replica.time_to_live.as_mut())
                    {
                        *ttl = TimeToLiveDef {
                            attribute_name: ttl.attribute_name.clone(),
                            tree: tree(position),
                            // Every item reaches the replica through the write path, which
                            // keeps the expiry index.
                            backfilled: true,
                        };
                    }
                    if let Some(replication) = replica.replication.as_mut() {
                        replication.tree = tree(*replication_position);
                    }
                }
                if let (Some(position), Some(replication)) =
                    (source_tree_position, changed_source.replication.as_mut())
                {
                    replication.tree = tree(position);
                }
                let mut edits = Vec::new();
                if old_source_key != changed_source.catalog_key() {
                    edits.push(VersionEdit::SetMetadata {
                        key: metadata_key(&old_source_key),
                        value: None,
                    });
                }
                let tables = replicas
                    .iter()
                    .map(|(replica, _, _)| replica)
                    .chain([&changed_source])
                    .chain(&others);
                for table in tables {
                    match table.to_metadata() {
                        Ok(bytes) => edits.push(VersionEdit::SetMetadata {
                            key: metadata_key(&table.catalog_key()),
                            value: Some(bytes),
                        }),
                        Err(_) => return Vec::new(),
                    }
                }
                stored = true;
                edits
            })
            .map_err(internal)?;
        if !stored {
            self.db
                .drop_trees_with(&ids, Vec::new())
                .map_err(internal)?;
            return Err(internal("the replica's definition could not be stored"));
        }
        self.reload_catalog().map_err(internal)?;
        // Their statistics are complete (empty) from the start, as CreateTable's.
        let mut batch = WriteBatch::new();
        for (replica, _, _) in &replicas {
            stats::mark_maintained(self.stats.tree()?, replica, &mut batch)?;
        }
        self.db.write(batch).map_err(internal)?;
        self.reload_catalog().map_err(internal)?;
        self.start_upkeep().map_err(internal)?;
        self.replication.start(self)?;
        // A witness that joins with the group is CREATING for the transient delay.
        if source.replication.is_none() {
            if let Some(witness) = &witness {
                for member in &members {
                    self.emulation.transitions.begin_replica(
                        &catalog_key(&source.name, Some(&member.region)),
                        witness,
                        true,
                        strong,
                        TransientStatus::Creating,
                    );
                }
            }
        }
        tracing::info!(table = %source.name, from = %local, to = ?targets, strong, "replicas created; backfill starts");
        Ok(())
    }
}

impl Core {
    /// What taking `leaving` (members of one global table) out of their group changes
    /// besides their own trees: the other members' definitions (edits), and the
    /// replication trees that go (the leaving members', and the last other member's when
    /// that one is left alone, which stays a table of its Region with its stream enabled,
    /// SPEC-3 §2.1).
    pub(crate) fn leave_group(
        &self,
        leaving: &[&TableDef],
    ) -> Result<(Vec<TreeId>, Vec<VersionEdit>), ApiError> {
        let Some((first, replication)) = leaving
            .iter()
            .find_map(|table| Some((*table, table.replication.as_ref()?)))
        else {
            return Ok((Vec::new(), Vec::new()));
        };
        let is_leaving = |id: &str| leaving.iter().any(|table| table.id == id);
        let mut trees: Vec<TreeId> = leaving
            .iter()
            .filter_map(|table| Some(table.replication.as_ref()?.tree))
            .collect();
        let mut edits = Vec::new();
        let members: Vec<MemberDef> = replication
            .members
            .iter()
            .filter(|m| !is_leaving(&m.table_id))
            .cloned()
            .collect();
        for member in &members {
            let Some(other) = self
                .catalog
                .read()
                .get(&catalog_key(&first.name, Some(&member.region)))
                .cloned()
            else {
                continue;
            };
            let mut other = TableDef::clone(&other);
            if members.len() == 1 {
                if let Some(replication) = other.replication.take() {
                    trees.push(replication.tree);
                }
            } else if let Some(replication) = other.replication.as_mut() {
                replication.members = members.clone();
            }
            edits.push(VersionEdit::SetMetadata {
                key: metadata_key(&other.catalog_key()),
                value: Some(other.to_metadata().map_err(internal)?),
            });
        }
        Ok((trees, edits))
    }
}

impl Database {
    /// The `ReplicaStatus` of the member whose catalog key is `key` and whose membership is
    /// `replication` (None: not in the catalog yet, so still being created). An Update's
    /// UPDATING lasts the transient-status delay (`emulation::transient`).
    pub(crate) fn replica_status(
        &self,
        key: &str,
        replication: Option<&ReplicationDef>,
    ) -> &'static str {
        let status = replication.map_or(ReplicaStatus::Creating, |r| r.status);
        let updating =
            status == ReplicaStatus::Active && self.emulation.transitions.member_updating(key);
        if updating {
            TransientStatus::Updating.as_str()
        } else {
            status.as_str()
        }
    }

    /// Adds DescribeTable's global table members to `description` of `table` (SPEC-3
    /// §2.2): nothing for a table in no group.
    pub(crate) fn describe_members(&self, table: &TableDef, description: &mut TableDescription) {
        // Members and witnesses in a transition as this member sees them: a departed
        // replica DELETING, a witness CREATING or DELETING (`emulation::transient`).
        let transitions = self.emulation.transitions.replicas_of(&table.catalog_key());
        let departed = transitions
            .iter()
            .filter(|t| !t.witness && t.status == TransientStatus::Deleting);
        // A member a teardown left regional still shows what is DELETING while it lasts.
        if table.replication.is_none() && departed.clone().next().is_none() {
            return;
        }
        let members = table
            .replication
            .as_ref()
            .map(|r| r.members.as_slice())
            .unwrap_or_default();
        let catalog = self.catalog.read();
        let mut replicas: Vec<ReplicaDescription> = members
            .iter()
            .filter(|member| member.table_id != table.id)
            .map(|member| {
                let key = catalog_key(&table.name, Some(&member.region));
                let replication = catalog.get(&key).and_then(|m| m.replication.as_ref());
                let mut entry = ReplicaDescription {
                    region_name: member.region.clone(),
                    replica_status: self.replica_status(&key, replication).to_string(),
                    ..ReplicaDescription::default()
                };
                if let Some(replication) = replication {
                    overrides::describe(&replication.overrides, &mut entry);
                }
                entry
            })
            .collect();
        replicas.extend(
            departed
                .filter(|t| !members.iter().any(|m| m.region == t.region))
                .map(|t| ReplicaDescription {
                    region_name: t.region.clone(),
                    replica_status: TransientStatus::Deleting.as_str().to_string(),
                    ..ReplicaDescription::default()
                }),
        );
        description.global_table_version = Some(GLOBAL_TABLE_VERSION.to_string());
        description.replicas = Some(replicas);
        description.global_table_settings_replication_mode =
            Some(SETTINGS_REPLICATION_MODE.to_string());
        let strong = match &table.replication {
            Some(replication) => replication.strong,
            None => transitions.iter().any(|t| t.strong),
        };
        if !strong {
            return;
        }
        description.multi_region_consistency = Some(strong::STRONG.to_string());
        let witness_transition = |region: &str| {
            transitions
                .iter()
                .find(|t| t.witness && t.region == region)
                .map(|t| t.status)
        };
        let group_witness = table.replication.as_ref().and_then(|r| r.witness.clone());
        let witness = match group_witness {
            // A witness holds no table: it is ready once its transition (if any) is over.
            Some(region) => {
                let status = witness_transition(&region)
                    .map_or(ReplicaStatus::Active.as_str(), TransientStatus::as_str);
                Some((region, status))
            }
            None => transitions
                .iter()
                .find(|t| t.witness && t.status == TransientStatus::Deleting)
                .map(|t| (t.region.clone(), TransientStatus::Deleting.as_str())),
        };
        description.global_table_witnesses = witness.map(|(region, status)| {
            vec![WitnessDescription {
                region_name: region,
                witness_status: status.to_string(),
            }]
        });
    }
}
