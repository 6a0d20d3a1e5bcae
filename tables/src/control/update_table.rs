//! UpdateTable: online creation and deletion of global secondary indexes (SPEC §2.3),
//! enabling or disabling the table's stream (SPEC-2 §1.1, `streams::lifecycle`), billing
//! mode, provisioned throughput and on-demand caps of the table and its GSIs (SPEC-2 §5.4,
//! §5.5, `capacity::billing`), and the table's deletion protection and table class (SPEC-2
//! §5.2, §5.3).
//!
//! Validation, in DynamoDB's order (SPEC §7, SPEC-2 §5.1): TableName; the table must exist
//! (ResourceNotFoundException before any other check); member constraints
//! (`1 validation error detected: …`); a request that asks for nothing (`At least one of …
//! is required`, naming the members the request does not hold); the members that must be
//! alone in a request (DeletionProtectionEnabled, TableClass, SSESpecification, and
//! OnDemandThroughput beside BillingMode only); a stream change beside an index or
//! throughput change; unsupported members; one action per update; at most one Create or
//! Delete per call (LimitExceededException); then the capacity rules (`capacity::billing`: an
//! updated index must exist, mode and throughput texts); the index to delete must exist
//! (ResourceNotFoundException); a created index must have a new name, its
//! AttributeDefinitions must not redefine an existing attribute's type, and its key schema,
//! projection and throughput follow CreateTable's rules (checked by running the new index
//! through `schema::validate_create_table`, so both operations give the same texts).
//!
//! The whole request is checked and carried out under `Database::catalog_change`, against
//! the table's current definition. `BillingMode` naming the table's current mode (without
//! `ProvisionedThroughput`) asks for nothing: alone it is accepted and answers the table's
//! description.
//!
//! Execution:
//! - Create: ONE durable version change creates the index's tree and stores the table
//!   definition with the index `Creating { backfilling: false }`; from then on every write
//!   maintains the index (and rejects items violating its key schema). A background
//!   backfill (`control::backfill`) then fills it and marks it ACTIVE.
//! - Delete: ONE durable version change removes the index from the definition and drops its
//!   tree. DynamoDB shows the index DELETING for a while; Shoal removes it at once.
//! - Capacity changes: ONE durable catalog change (`Database::store_definition`), or part of
//!   the Create's or Delete's version change when the request holds one.
//! - Deletion protection, table class: ONE durable catalog change
//!   (`Database::store_definition`).
//! - On a member of a global table, index Creates and Deletes, capacity changes and the
//!   table class are the group's (SPEC-3 §2.1, `replication::settings`): every member's
//!   definition changes in that same one version change, each member with an index tree of
//!   its own, which its own backfill fills from its own items. Deletion protection stays
//!   the member's own.
//!
//! The table definition keeps exactly the AttributeDefinitions its keys use: a create adds
//! the new key attributes' definitions (extra ones in the request are ignored, as DynamoDB
//! does), a delete removes those no remaining key uses.

use std::collections::BTreeSet;

use shoal_model::{ApiError, ErrorCode, ScalarType};

use crate::api::common::{table_name_of, validation_errors};
use crate::api::constraint::{enum_value_set, violation};
use crate::api::control::{
    AttributeDefinition, CreateTableRequest, DescribeTableRequest, ProvisionedThroughput,
};
use crate::api::update_table::{
    CreateGlobalSecondaryIndexAction, UpdateTableRequest, UpdateTableResponse,
};
use crate::capacity::billing;
use crate::control::schema::{self, GlobalIndexSchema, BILLING_MODES, GLOBAL_INDEXES_MAX};
use crate::control::tables::gsi_tree_name;
use crate::core::catalog::{
    BillingMode, CapacitySettings, GlobalIndexDef, IndexStatus, KeyAttribute, TableClass, TableDef,
};
use crate::core::clock::now_millis;
use crate::core::error::internal;
use crate::database::Database;
use crate::emulation::transient::TransientStatus;
use crate::replication::members::{
    parse_replica_updates, GroupChange, REPLICA_ALONE_MESSAGE, SETTINGS_REPLICATION_MODE,
};
use crate::replication::settings;
use crate::streams::lifecycle::{self, StreamChange};
use shoal_engine::TreeId;

/// The members an UpdateTable must hold at least one of, in the order DynamoDB's
/// `At least one of … is required` names them (`UpdateStreamEnabled` stands for
/// StreamSpecification).
pub const CHANGE_MEMBERS: [&str; 13] = [
    "ProvisionedThroughput",
    "BillingMode",
    "UpdateStreamEnabled",
    "GlobalSecondaryIndexUpdates",
    "SSESpecification",
    "ReplicaUpdates",
    "MultiAccountReplicaReady",
    "ReplicaTransitRoleArn",
    "MultiRegionConsistency",
    "DeletionProtectionEnabled",
    "OnDemandThroughput",
    "WarmThroughput",
    "TableClass",
];
/// Text of an UpdateTable that holds none of [`CHANGE_MEMBERS`].
/// The refusal of `DisassociationProtectionEnabled`, which Shoal does not model.
pub const DISASSOCIATION_PROTECTION_MESSAGE: &str = "Shoal does not support DisassociationProtectionEnabled: disassociation protection is not modelled, so a Disassociate is never refused for it; send UpdateTable without this member";

pub const NOTHING_TO_UPDATE_MESSAGE: &str = "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates, SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, MultiRegionConsistency, DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required";
/// Text of a second index creation or deletion in one call.
pub const ONE_INDEX_CHANGE_MESSAGE: &str =
    "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table";
/// Text of a create naming an index that exists.
pub const INDEX_EXISTS_MESSAGE: &str = "Attempting to create an index which already exists";
/// Text of a GlobalSecondaryIndexUpdates member without exactly one action.
pub const ONE_ACTION_MESSAGE: &str = "One or more parameter values were invalid: One of GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Update or GlobalSecondaryIndexUpdate.Delete must be specified";

const INVALID: &str = "One or more parameter values were invalid:";
/// GlobalTableSettingsReplicationMode's values in the API model.
const SETTINGS_REPLICATION_MODES: &[&str] = &["ENABLED", "DISABLED", "ENABLED_WITH_OVERRIDES"];
/// The ones UpdateTable sets on a regional table (SPEC-3 §2.1).
const SETTABLE_REPLICATION_MODES: &[&str] = &["ENABLED", "DISABLED"];
const ATTRIBUTE_TYPES: &[&str] = &["B", "N", "S"];

/// What a valid UpdateTable asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TableChange<'r> {
    /// Nothing: the request re-sends the table's current BillingMode.
    None,
    /// StreamSpecification: enable or disable the table's stream (`streams::lifecycle`).
    Stream(StreamChange),
    /// Capacity changes (`capacity`: BillingMode, ProvisionedThroughput, OnDemandThroughput,
    /// GSI `Update` actions; `capacity::billing`) and at most one GSI Create or Delete, stored
    /// in one catalog change.
    Indexes {
        capacity: bool,
        index: Option<IndexChange<'r>>,
    },
    DeletionProtection(bool),
    TableClass(TableClass),
    /// GlobalTableSettingsReplicationMode (SPEC-3 §2.1): `ENABLED` or `DISABLED`, stored on
    /// a regional table.
    SettingsReplicationMode(&'r str),
    /// ReplicaUpdates (with MultiRegionConsistency and GlobalTableWitnessUpdates): replicas
    /// created or deleted (`replication::members`).
    Replicas(GroupChange),
}

/// The one GSI Create or Delete of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
enum IndexChange<'r> {
    Create {
        /// 1-based position in GlobalSecondaryIndexUpdates (for constraint paths).
        position: usize,
        action: &'r CreateGlobalSecondaryIndexAction,
    },
    Delete {
        index_name: &'r str,
    },
}

impl Database {
    /// UpdateTable: capacity changes with at most one GSI Create or Delete, a
    /// StreamSpecification, DeletionProtectionEnabled or TableClass.
    pub fn update_table(
        &self,
        request: UpdateTableRequest,
    ) -> Result<UpdateTableResponse, ApiError> {
        let name = table_name_of(request.table_name.as_deref())?;
        // DynamoDB checks the request's parameters before it looks the table up: a bad
        // request names no table, missing or not.
        validate_request(&request, None)?;
        // Members whose overrides a ReplicaUpdates Update changed: UPDATING in the answer.
        let mut updated_replicas = Vec::new();
        let (created, table_status) = {
            let _change = self.catalog_change.lock();
            let table = self.table(name)?;
            if request.replica_updates.is_some() {
                self.refuse_replica_action_in_transition(&table)?;
            }
            // CREATING or UPDATING (`emulation::transient`): a second change waits.
            self.emulation
                .transitions
                .refuse_change(&table.catalog_key())?;
            match validate_request(&request, Some(&table))? {
                TableChange::None => (Vec::new(), "ACTIVE"),
                TableChange::Stream(stream_change) => {
                    if table.replication.is_some() {
                        return Err(ApiError::validation(format!(
                            "{INVALID} Disabling Stream is not allowed for a Global Table replica."
                        )));
                    }
                    self.change_stream(&table, stream_change)?;
                    (Vec::new(), "UPDATING")
                }
                TableChange::Indexes { capacity, index } => {
                    let deleted = match index {
                        Some(IndexChange::Delete { index_name }) => Some(index_name),
                        _ => None,
                    };
                    // Group-wide on a global table (`replication::settings`): checked against
                    // this member, made in every member, stored in one version change.
                    let mut members = self.settings_members(&table)?;
                    // The capacity changes first: a created index follows the new mode.
                    if capacity {
                        let changed =
                            billing::change_capacity(&request, &table, deleted, now_millis())?;
                        for member in &mut members {
                            settings::share_capacity(&changed, member);
                        }
                        tracing::info!(table = %table.name, billing = ?changed.billing, "capacity changed");
                    }
                    match index {
                        Some(IndexChange::Create { position, action }) => {
                            let base = members
                                .first()
                                .ok_or_else(|| internal("a table without its own definition"))?;
                            let new_index = validate_create(base, &request, position, action)?;
                            (self.add_index(members, &new_index)?, "UPDATING")
                        }
                        Some(IndexChange::Delete { index_name }) => {
                            self.remove_index(members, index_name)?;
                            (Vec::new(), "UPDATING")
                        }
                        None => {
                            self.store_definitions_dropping(&members, &[])?;
                            (Vec::new(), "UPDATING")
                        }
                    }
                }
                TableChange::DeletionProtection(enabled) => {
                    // Regional (SPEC-3 §2.1), but refused while a member is being added.
                    self.refuse_while_members_change(&table)?;
                    if table.settings.deletion_protection != enabled {
                        let mut changed = TableDef::clone(&table);
                        changed.settings.deletion_protection = enabled;
                        self.store_definition(&changed)?;
                        tracing::info!(table = %table.name, enabled, "deletion protection changed");
                    }
                    (Vec::new(), "ACTIVE")
                }
                TableChange::TableClass(class) => {
                    self.change_table_class(&table, class)?;
                    (Vec::new(), "UPDATING")
                }
                TableChange::SettingsReplicationMode(mode) => {
                    self.change_settings_replication_mode(&table, mode)?;
                    (Vec::new(), "ACTIVE")
                }
                TableChange::Replicas(change) => {
                    updated_replicas = self.change_replicas(&table, &change)?;
                    (Vec::new(), "UPDATING")
                }
            }
        };
        let mut description = self
            .describe_table(DescribeTableRequest {
                table_name: Some(name.to_string()),
            })?
            .table;
        description.table_status = table_status.to_string();
        for replica in description.replicas.iter_mut().flatten() {
            if updated_replicas.contains(&replica.region_name) {
                replica.replica_status = TransientStatus::Updating.as_str().to_string();
            }
        }
        if table_status == "UPDATING" {
            let creating_index = description
                .global_secondary_indexes
                .iter()
                .flatten()
                .find(|gsi| gsi.index_status == "CREATING")
                .map(|gsi| gsi.index_name.clone());
            // The change may have given the table a new catalog key (a regional table that
            // became a global table's member is kept in its Region from then on).
            let key = self.table(name)?.catalog_key();
            self.emulation
                .transitions
                .begin(&key, TransientStatus::Updating, creating_index, None);
        }
        // The response shows the new index before its backfill starts (Backfilling false).
        for (table_id, tree) in &created {
            self.start_backfill(table_id, *tree).map_err(internal)?;
        }
        Ok(UpdateTableResponse {
            table_description: description,
        })
    }

    /// Stores `class` as the class of the table and of every other member of its global
    /// table (members with a TableClassOverride keep it); the time of the change is
    /// recorded when the class differs from the one the table had (STANDARD when none was
    /// named). The caller holds `catalog_change`.
    fn change_table_class(&self, table: &TableDef, class: TableClass) -> Result<(), ApiError> {
        let current = table.settings.table_class;
        if current == Some(class) {
            return Ok(());
        }
        let mut changed = table.clone();
        changed.settings.table_class = Some(class);
        if current.unwrap_or(TableClass::Standard) != class {
            changed.settings.table_class_updated_at_millis = Some(now_millis());
        }
        let mut members = self.settings_members(table)?;
        for member in &mut members {
            settings::share_table_class(&changed, member);
        }
        self.store_definitions_dropping(&members, &[])?;
        tracing::info!(table = %table.name, class = class.as_str(), "table class changed");
        Ok(())
    }

    /// Stores GlobalTableSettingsReplicationMode `mode` of a regional table. A member of a
    /// global table is refused: its mode is the group's, `ENABLED_WITH_OVERRIDES` (the
    /// text is Shoal's [U]), and so is a value other than ENABLED or DISABLED, which the
    /// model's enum lets through. The caller holds `catalog_change`.
    fn change_settings_replication_mode(
        &self,
        table: &TableDef,
        mode: &str,
    ) -> Result<(), ApiError> {
        if table.replication.is_some() {
            return Err(ApiError::validation(format!(
                "{INVALID} GlobalTableSettingsReplicationMode can only be set on a regional table: a replica of a global table reports {SETTINGS_REPLICATION_MODE}"
            )));
        }
        if !SETTABLE_REPLICATION_MODES.contains(&mode) {
            return Err(ApiError::validation(format!(
                "{INVALID} GlobalTableSettingsReplicationMode can only be set to ENABLED or DISABLED on a regional table"
            )));
        }
        if table.settings.settings_replication_mode.as_deref() != Some(mode) {
            let mut changed = table.clone();
            changed.settings.settings_replication_mode = Some(mode.to_string());
            self.store_definition(&changed)?;
            tracing::info!(table = %table.name, mode, "settings replication mode changed");
        }
        Ok(())
    }

    /// Stores every definition of `members` (the table, then the other members of its
    /// global table) with `index` CREATING and a new tree of its own, in one version change.
    /// Returns each member's table id and index tree, for their backfills. The caller holds
    /// `catalog_change`.
    fn add_index(
        &self,
        members: Vec<TableDef>,
        index: &GlobalIndexSchema,
    ) -> Result<Vec<(String, TreeId)>, ApiError> {
        // A member that has an index of that name already (a group whose members differed
        // before settings were shared) keeps it.
        let mut changed: Vec<TableDef> = members
            .into_iter()
            .filter(|member| member.global_index(&index.name).is_none())
            .map(|mut member| {
                for attribute in index.key.attributes() {
                    if !member
                        .attribute_definitions
                        .iter()
                        .any(|d| d.name == attribute.name)
                    {
                        member.attribute_definitions.push(attribute.clone());
                    }
                }
                member.global_indexes.push(GlobalIndexDef {
                    name: index.name.clone(),
                    key: index.key.clone(),
                    projection: index.projection.clone(),
                    tree: 0,
                    status: IndexStatus::Creating { backfilling: false },
                    throughput: index.throughput,
                    capacity: CapacitySettings {
                        on_demand: index.on_demand,
                        ..CapacitySettings::default()
                    },
                });
                member
            })
            .collect();
        let tree_names = changed
            .iter()
            .map(|member| gsi_tree_name(&member.id, &index.name))
            .collect();
        let created =
            self.store_definitions_with_trees(&mut changed, tree_names, |member, tree| {
                if let Some(gsi) = member.global_indexes.last_mut() {
                    gsi.tree = tree;
                }
            })?;
        for (member, (_, tree)) in changed.iter().zip(&created) {
            tracing::info!(table = %member.name, region = ?member.region, index = %index.name, tree, "GSI created; backfill starts");
        }
        Ok(created)
    }

    /// Removes GSI `index_name` from every definition of `members` (the table, then the
    /// other members of its global table, whose overrides of the index go with it) and
    /// drops its trees, in one version change. The caller holds `catalog_change`.
    fn remove_index(&self, members: Vec<TableDef>, index_name: &str) -> Result<(), ApiError> {
        if members
            .first()
            .is_none_or(|table| table.global_index(index_name).is_none())
        {
            return Err(billing::index_not_found(index_name));
        }
        let mut changed = Vec::with_capacity(members.len());
        let mut dropped = Vec::with_capacity(members.len());
        for mut member in members {
            let Some(gsi) = member.global_index(index_name) else {
                continue;
            };
            dropped.push(gsi.tree);
            member.global_indexes.retain(|g| g.name != index_name);
            let used: BTreeSet<String> = member
                .all_key_attribute_names()
                .into_iter()
                .map(str::to_string)
                .collect();
            member
                .attribute_definitions
                .retain(|d| used.contains(&d.name));
            settings::forget_index(&mut member, index_name);
            changed.push(member);
        }
        self.store_definitions_dropping(&changed, &dropped)?;
        tracing::info!(table = ?changed.first().map(|t| &t.name), index = index_name, members = changed.len(), "GSI deleted");
        Ok(())
    }
}

/// The member constraint problems of an UpdateTable (the `N validation errors detected`
/// list).
fn constraint_problems(request: &UpdateTableRequest) -> Vec<String> {
    let mut problems = Vec::new();
    for (position, definition) in request.attribute_definitions.iter().flatten().enumerate() {
        let member = format!("attributeDefinitions.{}.member", position + 1);
        schema::attribute_name_problems(
            definition.attribute_name.as_deref(),
            &format!("{member}.attributeName"),
            &mut problems,
        );
        schema::enum_problems(
            definition.attribute_type.as_deref(),
            &format!("{member}.attributeType"),
            ATTRIBUTE_TYPES,
            &mut problems,
        );
    }
    for (position, update) in request
        .global_secondary_index_updates
        .iter()
        .flatten()
        .enumerate()
    {
        let member = format!("globalSecondaryIndexUpdates.{}.member", position + 1);
        if let Some(delete) = &update.delete {
            schema::name_problems(
                delete.index_name.as_deref(),
                &format!("{member}.delete.indexName"),
                &mut problems,
            );
        }
        if let Some(create) = &update.create {
            schema::name_problems(
                create.index_name.as_deref(),
                &format!("{member}.create.indexName"),
                &mut problems,
            );
        }
        if let Some(action) = &update.update {
            schema::name_problems(
                action.index_name.as_deref(),
                &format!("{member}.update.indexName"),
                &mut problems,
            );
            schema::throughput_problems(
                action.provisioned_throughput.as_ref(),
                &format!("{member}.update.provisionedThroughput"),
                &mut problems,
            );
        }
    }
    if let Some(spec) = &request.stream_specification {
        lifecycle::specification_problems(spec, &mut problems);
    }
    if let Some(mode) = request.billing_mode.as_deref() {
        if !BILLING_MODES.contains(&mode) {
            problems.push(violation(
                Some(mode),
                "billingMode",
                &enum_value_set(BILLING_MODES),
            ));
        }
    }
    schema::throughput_problems(
        request.provisioned_throughput.as_ref(),
        "provisionedThroughput",
        &mut problems,
    );
    if let Some(mode) = request.global_table_settings_replication_mode.as_deref() {
        if !SETTINGS_REPLICATION_MODES.contains(&mode) {
            problems.push(violation(
                Some(mode),
                "globalTableSettingsReplicationMode",
                &enum_value_set(SETTINGS_REPLICATION_MODES),
            ));
        }
    }
    problems
}

/// Whether a JSON member asks for something: present, and not an empty list or object.
fn asks(value: &Option<serde_json::Value>) -> bool {
    match value {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Array(members)) => !members.is_empty(),
        Some(serde_json::Value::Object(members)) => !members.is_empty(),
        Some(_) => true,
    }
}

/// The text of a request that asks for nothing: [`CHANGE_MEMBERS`] less those the request
/// holds (empty ones: they are there, they ask for nothing).
fn nothing_to_update_message(present: &[(&str, bool)]) -> String {
    let missing: Vec<&str> = present
        .iter()
        .filter(|(_, present)| !present)
        .map(|(member, _)| *member)
        .collect();
    let listed = match missing.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    };
    format!("At least one of {listed} is required")
}

/// Every check of the request against `table`, up to (not including) a created index's own
/// rules: constraints, emptiness, members that must be alone, unsupported members, one
/// action per update and one index change per call.
///
/// Without a table (before the lookup) only what the request alone decides is checked: a
/// BillingMode is taken to change nothing (whether it does depends on the table's mode, so
/// the checks it takes part in wait for the table), and the one-index-change limit, not a
/// parameter check, waits too.
fn validate_request<'r>(
    request: &'r UpdateTableRequest,
    table: Option<&TableDef>,
) -> Result<TableChange<'r>, ApiError> {
    let problems = constraint_problems(request);
    if !problems.is_empty() {
        return Err(validation_errors(&problems));
    }
    // SPEC-3 §2.1 names the member (default true, alone in its request) but not what it
    // protects against, so it is refused by name rather than stored and never acted on.
    if request
        .disassociation_protection_enabled
        .as_ref()
        .is_some_and(|value| !value.is_null())
    {
        return Err(ApiError::validation(DISASSOCIATION_PROTECTION_MESSAGE));
    }

    let updates = request
        .global_secondary_index_updates
        .as_deref()
        .unwrap_or_default();
    let current_mode = table.map(|table| match table.billing {
        BillingMode::PayPerRequest => "PAY_PER_REQUEST",
        BillingMode::Provisioned(_) => "PROVISIONED",
    });
    // The table's own mode again, without throughput, changes nothing.
    let billing_mode_changes = current_mode.is_some_and(|current_mode| {
        request
            .billing_mode
            .as_deref()
            .is_some_and(|mode| mode != current_mode || request.provisioned_throughput.is_some())
    });
    // Each of CHANGE_MEMBERS: whether the request holds it, and whether it asks for a change.
    let members: [(&str, bool, bool); 13] = [
        (
            "ProvisionedThroughput",
            request.provisioned_throughput.is_some(),
            request.provisioned_throughput.is_some(),
        ),
        (
            "BillingMode",
            request.billing_mode.is_some(),
            billing_mode_changes,
        ),
        (
            "UpdateStreamEnabled",
            request.stream_specification.is_some(),
            request.stream_specification.is_some(),
        ),
        (
            "GlobalSecondaryIndexUpdates",
            request.global_secondary_index_updates.is_some(),
            !updates.is_empty(),
        ),
        (
            "SSESpecification",
            request.sse_specification.is_some(),
            asks(&request.sse_specification),
        ),
        (
            "ReplicaUpdates",
            request.replica_updates.is_some(),
            asks(&request.replica_updates),
        ),
        (
            "MultiAccountReplicaReady",
            request.multi_account_replica_ready.is_some(),
            asks(&request.multi_account_replica_ready),
        ),
        (
            "ReplicaTransitRoleArn",
            request.replica_transit_role_arn.is_some(),
            asks(&request.replica_transit_role_arn),
        ),
        (
            "MultiRegionConsistency",
            request.multi_region_consistency.is_some(),
            asks(&request.multi_region_consistency),
        ),
        (
            "DeletionProtectionEnabled",
            request.deletion_protection_enabled.is_some(),
            request.deletion_protection_enabled.is_some(),
        ),
        (
            "OnDemandThroughput",
            request.on_demand_throughput.is_some(),
            request.on_demand_throughput.is_some_and(|o| o.asks()),
        ),
        (
            "WarmThroughput",
            request.warm_throughput.is_some(),
            asks(&request.warm_throughput),
        ),
        (
            "TableClass",
            request.table_class.is_some(),
            request.table_class.is_some(),
        ),
    ];
    let asking: Vec<&str> = members
        .iter()
        .filter(|(_, _, asks)| *asks)
        .map(|(member, _, _)| *member)
        .collect();
    // Not among AWS's `At least one of …` members, so checked apart; alone in its request,
    // as the other settings of a table are (Shoal's text [U]).
    if let Some(mode) = request.global_table_settings_replication_mode.as_deref() {
        if !asking.is_empty() {
            return Err(ApiError::validation(format!(
                "{INVALID} GlobalTableSettingsReplicationMode modification must be the only operation in the request"
            )));
        }
        return Ok(TableChange::SettingsReplicationMode(mode));
    }
    if asking.is_empty() {
        if request.billing_mode.is_some() {
            // The current BillingMode re-sent: accepted, nothing changes.
            return Ok(TableChange::None);
        }
        let present: Vec<(&str, bool)> = members
            .iter()
            .map(|(member, present, _)| (*member, *present))
            .collect();
        return Err(ApiError::validation(nothing_to_update_message(&present)));
    }
    if asking.contains(&"ReplicaUpdates") {
        if asking
            .iter()
            .any(|member| !["ReplicaUpdates", "MultiRegionConsistency"].contains(member))
        {
            return Err(ApiError::validation(REPLICA_ALONE_MESSAGE));
        }
        if let Some(updates) = request.replica_updates.as_ref() {
            return Ok(TableChange::Replicas(parse_replica_updates(
                updates,
                request.multi_region_consistency.as_ref(),
                request.global_table_witness_updates.as_ref(),
            )?));
        }
    }
    if asks(&request.global_table_witness_updates)
        && asking
            .iter()
            .any(|member| *member != "MultiRegionConsistency")
    {
        return Err(ApiError::validation(REPLICA_ALONE_MESSAGE));
    }
    // MultiRegionConsistency (or a witness) without replicas asks for nothing (SPEC-3 §2.5).
    if asking == ["MultiRegionConsistency"] {
        let present: Vec<(&str, bool)> = members
            .iter()
            .map(|(member, present, _)| (*member, *present))
            .collect();
        return Err(ApiError::validation(nothing_to_update_message(&present)));
    }
    let alone = asking.len() == 1;
    for (member, what) in [
        ("DeletionProtectionEnabled", "DeletionProtection"),
        ("TableClass", "TableClass"),
        ("SSESpecification", "Server-Side Encryption"),
    ] {
        if asking.contains(&member) && !alone {
            return Err(ApiError::validation(format!(
                "{INVALID} {what} modification must be the only operation in the request"
            )));
        }
    }
    if asking.contains(&"OnDemandThroughput")
        && asking
            .iter()
            .any(|member| !["OnDemandThroughput", "BillingMode"].contains(member))
    {
        return Err(ApiError::validation(format!(
            "{INVALID} OnDemandThroughput can only be combined with BillingMode in an UpdateTable request"
        )));
    }
    if let Some(enabled) = request.deletion_protection_enabled {
        return Ok(TableChange::DeletionProtection(enabled));
    }
    if let Some(class) = request.table_class.as_deref() {
        return Ok(TableChange::TableClass(schema::table_class_of(class)?));
    }

    let capacity_members = ["ProvisionedThroughput", "BillingMode", "OnDemandThroughput"];
    let unsupported: Vec<&str> = asking
        .iter()
        .copied()
        .filter(|member| {
            !["UpdateStreamEnabled", "GlobalSecondaryIndexUpdates"].contains(member)
                && !capacity_members.contains(member)
        })
        .collect();
    let updates_throughput = asking.iter().any(|m| capacity_members.contains(m))
        || updates.iter().any(|update| update.update.is_some());
    if let Some(spec) = request.stream_specification.as_ref() {
        if updates
            .iter()
            .any(|update| update.create.is_some() || update.delete.is_some())
        {
            return Err(ApiError::validation(format!(
                "{INVALID} You cannot create or delete index while changing stream status"
            )));
        }
        if updates_throughput {
            return Err(ApiError::validation(format!(
                "{INVALID} You cannot modify stream status while updating table IOPS"
            )));
        }
        if unsupported.is_empty() {
            return Ok(TableChange::Stream(lifecycle::stream_change(spec)?));
        }
    }
    if let Some(member) = unsupported.first() {
        return Err(ApiError::validation(format!(
            "Shoal does not support changing {member} with UpdateTable; only BillingMode, ProvisionedThroughput, OnDemandThroughput, GlobalSecondaryIndexUpdates, StreamSpecification, DeletionProtectionEnabled and TableClass are supported"
        )));
    }

    let mut index_changes = Vec::new();
    for (position, update) in updates.iter().enumerate() {
        let actions = usize::from(update.create.is_some())
            + usize::from(update.update.is_some())
            + usize::from(update.delete.is_some());
        if actions != 1 {
            return Err(ApiError::validation(ONE_ACTION_MESSAGE));
        }
        if update
            .update
            .as_ref()
            .is_some_and(|action| asks(&action.warm_throughput))
        {
            return Err(ApiError::validation(
                "Shoal does not support WarmThroughput (GlobalSecondaryIndexUpdate.Update)",
            ));
        }
        if let Some(action) = &update.create {
            index_changes.push(IndexChange::Create {
                position: position + 1,
                action,
            });
        }
        if let Some(delete) = &update.delete {
            index_changes.push(IndexChange::Delete {
                index_name: delete.index_name.as_deref().unwrap_or_default(),
            });
        }
    }
    if index_changes.len() > 1 && table.is_some() {
        return Err(ApiError::new(
            ErrorCode::LimitExceededException,
            ONE_INDEX_CHANGE_MESSAGE,
        ));
    }
    Ok(TableChange::Indexes {
        capacity: updates_throughput,
        index: index_changes.pop(),
    })
}

/// Checks a Create against the table and returns the new index.
fn validate_create(
    table: &TableDef,
    request: &UpdateTableRequest,
    position: usize,
    action: &CreateGlobalSecondaryIndexAction,
) -> Result<GlobalIndexSchema, ApiError> {
    let index_name = action.index_name.as_deref().unwrap_or_default();
    if table.local_index(index_name).is_some() || table.global_index(index_name).is_some() {
        return Err(ApiError::validation(INDEX_EXISTS_MESSAGE));
    }
    if table.global_indexes.len() >= GLOBAL_INDEXES_MAX {
        return Err(ApiError::validation(format!(
            "{INVALID} GlobalSecondaryIndex count exceeds the per-table limit of {GLOBAL_INDEXES_MAX}"
        )));
    }

    // The table's definitions merged with the request's: a known name must keep its type.
    let mut merged: Vec<KeyAttribute> = table.attribute_definitions.clone();
    let mut requested = BTreeSet::new();
    for definition in request.attribute_definitions.iter().flatten() {
        let name = definition.attribute_name.clone().unwrap_or_default();
        let Some(ty) = definition
            .attribute_type
            .as_deref()
            .and_then(ScalarType::parse)
        else {
            return Err(ApiError::validation(format!(
                "{INVALID} Unknown AttributeType for attribute {name}"
            )));
        };
        if !requested.insert(name.clone()) {
            return Err(ApiError::validation(format!(
                "{INVALID} Duplicate AttributeName in AttributeDefinitions: {name}"
            )));
        }
        match merged.iter().find(|d| d.name == name) {
            Some(existing) if existing.scalar_type() != ty => {
                return Err(ApiError::validation(format!(
                    "{INVALID} Attributes cannot be redefined. Please check that your attribute has the same type as previously defined. Existing schema: [{}] New schema: [{}]",
                    render_definition(&existing.name, existing.scalar_type()),
                    render_definition(&name, ty)
                )));
            }
            Some(_) => {}
            None => merged.push(KeyAttribute::new(name, ty)),
        }
    }

    // Run the index through CreateTable's rules: the table's own key, the definitions the
    // two key schemas use (so none is "unused"), and the new index alone.
    let index_key_names: Vec<&str> = action
        .key_schema
        .iter()
        .flatten()
        .filter_map(|e| e.attribute_name.as_deref())
        .collect();
    let used: BTreeSet<&str> = table
        .key
        .names()
        .chain(index_key_names.iter().copied())
        .collect();
    let as_request = CreateTableRequest {
        table_name: Some(table.name.clone()),
        attribute_definitions: Some(
            merged
                .iter()
                .filter(|d| used.contains(d.name.as_str()))
                .map(|d| AttributeDefinition {
                    attribute_name: Some(d.name.clone()),
                    attribute_type: Some(d.scalar_type().as_str().to_string()),
                })
                .collect(),
        ),
        key_schema: Some(crate::control::tables::key_schema_elements(&table.key)),
        local_secondary_indexes: None,
        global_secondary_indexes: Some(vec![action.clone()]),
        billing_mode: Some(
            match table.billing {
                BillingMode::PayPerRequest => "PAY_PER_REQUEST",
                BillingMode::Provisioned(_) => "PROVISIONED",
            }
            .to_string(),
        ),
        provisioned_throughput: match table.billing {
            BillingMode::PayPerRequest => None,
            BillingMode::Provisioned(throughput) => Some(ProvisionedThroughput {
                read_capacity_units: i64::try_from(throughput.read_capacity_units).ok(),
                write_capacity_units: i64::try_from(throughput.write_capacity_units).ok(),
            }),
        },
        ..CreateTableRequest::default()
    };
    let checked = schema::validate_create_table(&as_request).map_err(|mut error| {
        // Constraint paths name the member as CreateTable has it.
        error.message = error.message.replace(
            "globalSecondaryIndexes.1.member",
            &format!("globalSecondaryIndexUpdates.{position}.member.create"),
        );
        error
    })?;
    let Some(index) = checked.global_indexes.into_iter().next() else {
        return Err(internal("a validated GSI creation lost its index"));
    };

    schema::check_non_key_attribute_total(
        table
            .local_indexes
            .iter()
            .map(|i| &i.projection)
            .chain(table.global_indexes.iter().map(|i| &i.projection))
            .chain(std::iter::once(&index.projection)),
    )?;
    Ok(index)
}

fn render_definition(name: &str, ty: ScalarType) -> String {
    format!(
        "AttributeDefinition(attributeName={name}, attributeType={})",
        ty.as_str()
    )
}
