//! DescribeTableReplicaAutoScaling and UpdateTableReplicaAutoScaling (SPEC-3 §2.7): a global
//! table's auto scaling settings, stored and echoed. Shoal has no auto scaling, so the
//! settings never change any capacity (SPEC-3 §2.7 [U]).
//!
//! Only members of a 2019.11.21 group have them: a regional table is
//! ResourceNotFoundException `Global table with name: <T> does not exist.` (§2.1). Write
//! settings (the table's and each GSI's) are the group's and are stored in every member's
//! definition; read settings are per member (`ReplicaUpdates`). Every member changed by one
//! request is stored in one version change (`core::catalog`, `ReplicationDef::autoscaling`,
//! where the stored form is described), so a crash leaves all of them as they were or all
//! changed.
//!
//! Rules, in order: member constraints (one `N validation errors detected` list); the table
//! (ResourceNotFoundException); a table in no group; Regions that are not members
//! (ReplicaUpdates' text), a Region named twice; unknown GSIs (UpdateTable's
//! ResourceNotFoundException); on a PAY_PER_REQUEST group, anything but AutoScalingDisabled
//! (§2.7's text); then each dimension: disabling clears it (it reads back as
//! `{AutoScalingDisabled: true, ScalingPolicies: []}`, as a dimension never set does),
//! enabling needs MinimumUnits and MaximumUnits, from the request or already stored (§2.7's
//! text), and a policy without a name is named `DynamoDB{Write,Read}CapacityUtilization:
//! table/<T>` (`/index/<I>` added for a GSI, [U]); a policy of a stored name replaces it.

use std::sync::Arc;

use shoal_model::{ApiError, ErrorCode};

use crate::api::autoscaling::{
    AutoScalingSettingsDescription, AutoScalingSettingsUpdate,
    DescribeTableReplicaAutoScalingRequest, ReplicaAutoScalingDescription,
    ReplicaIndexAutoScalingDescription, ScalingPolicyDescription, TableAutoScalingDescription,
    TableReplicaAutoScalingResponse, TargetTrackingConfiguration,
    UpdateTableReplicaAutoScalingRequest,
};
use crate::api::common::{name_in_table_member, validation_errors};
use crate::api::constraint::{
    length_at_least, length_at_most, name_violations, value_at_least, violation,
    violation_without_value, NAME_LENGTH_MIN, NOT_NULL,
};
use crate::capacity::billing::index_not_found;
use crate::control::tables::index_status;
use crate::core::catalog::{
    catalog_key, AutoScalingDef, AutoScalingSettingsDef, BillingMode, IndexAutoScalingDef,
    ScalingPolicyDef, TableDef,
};
use crate::core::error::internal;
use crate::database::Database;
use crate::replication::feature::region_of;
use crate::replication::members::{not_members_message, SAME_REGION_TWICE};

/// AutoScalingRoleArn's longest length (the API model).
const ROLE_ARN_LENGTH_MAX: usize = 1600;
/// PolicyName's longest length (the API model).
const POLICY_NAME_LENGTH_MAX: usize = 256;

/// Which capacity a dimension scales: the policy name's stem.
#[derive(Debug, Clone, Copy)]
enum Capacity {
    Read,
    Write,
}

/// The refusal of a table in no global table (SPEC-3 §2.1).
fn not_global(name: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ResourceNotFoundException,
        format!("Global table with name: {name} does not exist."),
    )
}

impl Database {
    /// DescribeTableReplicaAutoScaling.
    pub fn describe_table_replica_auto_scaling(
        &self,
        request: DescribeTableReplicaAutoScalingRequest,
    ) -> Result<TableReplicaAutoScalingResponse, ApiError> {
        let mut problems = Vec::new();
        let name = name_in_table_member(request.table_name.as_deref());
        name_violations(name, "tableName", 1, &mut problems);
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let name = name.unwrap_or_default();
        let table = self.table(name)?;
        if table.replication.is_none() {
            return Err(not_global(name));
        }
        self.auto_scaling_description(&table)
    }

    /// UpdateTableReplicaAutoScaling: stores the settings and answers the description.
    pub fn update_table_replica_auto_scaling(
        &self,
        request: UpdateTableReplicaAutoScalingRequest,
    ) -> Result<TableReplicaAutoScalingResponse, ApiError> {
        let problems = constraint_problems(&request);
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let name = name_in_table_member(request.table_name.as_deref()).unwrap_or_default();
        let table = {
            let _change = self.catalog_change.lock();
            let table = self.table(name)?;
            let Some(replication) = &table.replication else {
                return Err(not_global(name));
            };
            let members: Vec<String> = replication
                .members
                .iter()
                .map(|member| member.region.clone())
                .collect();
            let replica_updates = request.replica_updates.as_deref().unwrap_or_default();
            let mut named: Vec<&str> = Vec::new();
            for update in replica_updates {
                let region = update.region_name.as_deref().unwrap_or_default();
                if named.contains(&region) {
                    return Err(ApiError::validation(SAME_REGION_TWICE));
                }
                named.push(region);
            }
            let strangers: Vec<&str> = named
                .iter()
                .copied()
                .filter(|region| !members.iter().any(|member| member == region))
                .collect();
            if !strangers.is_empty() {
                return Err(ApiError::validation(not_members_message(&strangers)));
            }
            // Every GSI named must exist (each member has the group's GSIs).
            let index_names = request
                .global_secondary_index_updates
                .iter()
                .flatten()
                .map(|update| update.index_name.as_deref())
                .chain(replica_updates.iter().flat_map(|update| {
                    update
                        .replica_global_secondary_index_updates
                        .iter()
                        .flatten()
                        .map(|index| index.index_name.as_deref())
                }));
            for index in index_names.flatten() {
                if table.global_index(index).is_none() {
                    return Err(index_not_found(index));
                }
            }
            if matches!(table.billing, BillingMode::PayPerRequest) {
                check_pay_per_request(name, &members, &request)?;
            }

            let write_update = request
                .provisioned_write_capacity_auto_scaling_update
                .as_ref();
            let index_write_updates: Vec<(&str, &AutoScalingSettingsUpdate)> = request
                .global_secondary_index_updates
                .iter()
                .flatten()
                .filter_map(|update| {
                    Some((
                        update.index_name.as_deref()?,
                        update
                            .provisioned_write_capacity_auto_scaling_update
                            .as_ref()?,
                    ))
                })
                .collect();
            // The group's write settings, from the caller's member (every member holds them).
            let current = &replication.autoscaling;
            let mut group = current.group_wide();
            if let Some(update) = write_update {
                group.write = apply(
                    name,
                    group.write.as_ref(),
                    update,
                    &policy_name(Capacity::Write, name, None),
                )?;
            }
            for (index, update) in &index_write_updates {
                let stored = find_index(&group.index_write, index);
                let changed = apply(
                    name,
                    stored,
                    update,
                    &policy_name(Capacity::Write, name, Some(index)),
                )?;
                set_index(&mut group.index_write, index, changed);
            }

            // Every member's definition, refused while a member is being added or is
            // leaving, as every group-wide change is (`replication::settings`).
            let mut changed_members = Vec::with_capacity(members.len());
            for mut changed in self.settings_members(&table)? {
                let region = region_of(&changed).to_string();
                let Some(membership) = changed.replication.as_mut() else {
                    return Err(internal("a member's table is in no group"));
                };
                let mut settings = AutoScalingDef {
                    read: membership.autoscaling.read.clone(),
                    index_read: membership.autoscaling.index_read.clone(),
                    ..group.clone()
                };
                for update in replica_updates
                    .iter()
                    .filter(|update| update.region_name.as_deref() == Some(region.as_str()))
                {
                    if let Some(read) =
                        &update.replica_provisioned_read_capacity_auto_scaling_update
                    {
                        settings.read = apply(
                            name,
                            settings.read.as_ref(),
                            read,
                            &policy_name(Capacity::Read, name, None),
                        )?;
                    }
                    for index in update
                        .replica_global_secondary_index_updates
                        .iter()
                        .flatten()
                    {
                        let (Some(index_name), Some(read)) = (
                            index.index_name.as_deref(),
                            index.provisioned_read_capacity_auto_scaling_update.as_ref(),
                        ) else {
                            continue;
                        };
                        let changed = apply(
                            name,
                            find_index(&settings.index_read, index_name),
                            read,
                            &policy_name(Capacity::Read, name, Some(index_name)),
                        )?;
                        set_index(&mut settings.index_read, index_name, changed);
                    }
                }
                if membership.autoscaling != settings {
                    membership.autoscaling = settings;
                    changed_members.push(changed);
                }
            }
            if !changed_members.is_empty() {
                self.store_definitions_dropping(&changed_members, &[])?;
                tracing::info!(table = %name, "replica auto scaling settings stored");
            }
            self.table(name)?
        };
        self.auto_scaling_description(&table)
    }

    /// The TableAutoScalingDescription of `table`'s group, as its member sees it: every
    /// member in the order they joined, each with the group's write settings and its own
    /// read settings, for the table and each GSI.
    fn auto_scaling_description(
        &self,
        table: &Arc<TableDef>,
    ) -> Result<TableReplicaAutoScalingResponse, ApiError> {
        let table_status = self.table_status(table).to_string();
        let catalog = self.catalog.read().clone();
        let members = table
            .replication
            .as_ref()
            .map(|r| r.members.clone())
            .unwrap_or_default();
        let mut replicas = Vec::with_capacity(members.len());
        for member in &members {
            let key = catalog_key(&table.name, Some(&member.region));
            let definition = catalog.get(&key);
            let replication = definition.and_then(|m| m.replication.as_ref());
            let settings = replication
                .map(|r| r.autoscaling.clone())
                .unwrap_or_default();
            let global_secondary_indexes = definition
                .map(|m| m.global_indexes.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|gsi| ReplicaIndexAutoScalingDescription {
                    index_name: gsi.name.clone(),
                    index_status: index_status(gsi.status).0.to_string(),
                    provisioned_read_capacity_auto_scaling_settings: describe(find_index(
                        &settings.index_read,
                        &gsi.name,
                    )),
                    provisioned_write_capacity_auto_scaling_settings: describe(find_index(
                        &settings.index_write,
                        &gsi.name,
                    )),
                })
                .collect();
            replicas.push(ReplicaAutoScalingDescription {
                region_name: member.region.clone(),
                global_secondary_indexes,
                replica_provisioned_read_capacity_auto_scaling_settings: describe(
                    settings.read.as_ref(),
                ),
                replica_provisioned_write_capacity_auto_scaling_settings: describe(
                    settings.write.as_ref(),
                ),
                replica_status: self.replica_status(&key, replication).to_string(),
            });
        }
        Ok(TableReplicaAutoScalingResponse {
            table_auto_scaling_description: TableAutoScalingDescription {
                table_name: table.name.clone(),
                table_status,
                replicas,
            },
        })
    }
}

/// The member-constraint violations of an UpdateTableReplicaAutoScaling, in request order.
fn constraint_problems(request: &UpdateTableReplicaAutoScalingRequest) -> Vec<String> {
    let mut problems = Vec::new();
    name_violations(
        name_in_table_member(request.table_name.as_deref()),
        "tableName",
        1,
        &mut problems,
    );
    if let Some(update) = &request.provisioned_write_capacity_auto_scaling_update {
        settings_problems(
            update,
            "provisionedWriteCapacityAutoScalingUpdate",
            &mut problems,
        );
    }
    if let Some(updates) = &request.global_secondary_index_updates {
        if updates.is_empty() {
            problems.push(violation_without_value(
                "globalSecondaryIndexUpdates",
                &length_at_least(1),
            ));
        }
        for (position, update) in updates.iter().enumerate() {
            let at = format!("globalSecondaryIndexUpdates.{}.member", position + 1);
            name_violations(
                update.index_name.as_deref(),
                &format!("{at}.indexName"),
                NAME_LENGTH_MIN,
                &mut problems,
            );
            if let Some(settings) = &update.provisioned_write_capacity_auto_scaling_update {
                settings_problems(
                    settings,
                    &format!("{at}.provisionedWriteCapacityAutoScalingUpdate"),
                    &mut problems,
                );
            }
        }
    }
    if let Some(updates) = &request.replica_updates {
        if updates.is_empty() {
            problems.push(violation_without_value(
                "replicaUpdates",
                &length_at_least(1),
            ));
        }
        for (position, update) in updates.iter().enumerate() {
            let at = format!("replicaUpdates.{}.member", position + 1);
            if update.region_name.is_none() {
                problems.push(violation(None, &format!("{at}.regionName"), NOT_NULL));
            }
            if let Some(settings) = &update.replica_provisioned_read_capacity_auto_scaling_update {
                settings_problems(
                    settings,
                    &format!("{at}.replicaProvisionedReadCapacityAutoScalingUpdate"),
                    &mut problems,
                );
            }
            for (index_position, index) in update
                .replica_global_secondary_index_updates
                .iter()
                .flatten()
                .enumerate()
            {
                let index_at = format!(
                    "{at}.replicaGlobalSecondaryIndexUpdates.{}.member",
                    index_position + 1
                );
                name_violations(
                    index.index_name.as_deref(),
                    &format!("{index_at}.indexName"),
                    NAME_LENGTH_MIN,
                    &mut problems,
                );
                if let Some(settings) = &index.provisioned_read_capacity_auto_scaling_update {
                    settings_problems(
                        settings,
                        &format!("{index_at}.provisionedReadCapacityAutoScalingUpdate"),
                        &mut problems,
                    );
                }
            }
        }
    }
    problems
}

/// The violations of one `AutoScalingSettingsUpdate` at `path`.
fn settings_problems(update: &AutoScalingSettingsUpdate, path: &str, problems: &mut Vec<String>) {
    for (units, member) in [
        (update.minimum_units, "minimumUnits"),
        (update.maximum_units, "maximumUnits"),
    ] {
        if let Some(units) = units.filter(|units| *units < 1) {
            problems.push(violation(
                Some(&units.to_string()),
                &format!("{path}.{member}"),
                &value_at_least(1),
            ));
        }
    }
    if let Some(arn) = &update.auto_scaling_role_arn {
        length_problems(
            arn,
            &format!("{path}.autoScalingRoleArn"),
            ROLE_ARN_LENGTH_MAX,
            problems,
        );
    }
    if let Some(policy) = &update.scaling_policy_update {
        let at = format!("{path}.scalingPolicyUpdate");
        if let Some(name) = &policy.policy_name {
            length_problems(
                name,
                &format!("{at}.policyName"),
                POLICY_NAME_LENGTH_MAX,
                problems,
            );
            if name.chars().any(char::is_control) {
                problems.push(violation(
                    Some(name),
                    &format!("{at}.policyName"),
                    "Member must satisfy regular expression pattern: \\p{Print}+",
                ));
            }
        }
        let configuration_at = format!("{at}.targetTrackingScalingPolicyConfiguration");
        match &policy.target_tracking_scaling_policy_configuration {
            None => problems.push(violation(None, &configuration_at, NOT_NULL)),
            Some(configuration) if configuration.target_value.is_none() => problems.push(
                violation(None, &format!("{configuration_at}.targetValue"), NOT_NULL),
            ),
            Some(_) => {}
        }
    }
}

/// A string member's length rules: at least 1 character, at most `max`.
fn length_problems(value: &str, path: &str, max: usize, problems: &mut Vec<String>) {
    let length = value.chars().count();
    if length < 1 {
        problems.push(violation(Some(value), path, &length_at_least(1)));
    }
    if length > max {
        problems.push(violation(Some(value), path, &length_at_most(max)));
    }
}

/// The members of `update` that set something other than AutoScalingDisabled, by name.
fn parameters_set(update: &AutoScalingSettingsUpdate) -> Vec<&'static str> {
    [
        ("MinimumUnits", update.minimum_units.is_some()),
        ("MaximumUnits", update.maximum_units.is_some()),
        ("AutoScalingRoleArn", update.auto_scaling_role_arn.is_some()),
        (
            "ScalingPolicyUpdate",
            update.scaling_policy_update.is_some(),
        ),
    ]
    .into_iter()
    .filter_map(|(member, set)| set.then_some(member))
    .collect()
}

/// SPEC-3 §2.7: a PAY_PER_REQUEST group takes AutoScalingDisabled only. The text names every
/// member's Region and the first update's parameters ([U]: how AWS lists several).
fn check_pay_per_request(
    name: &str,
    members: &[String],
    request: &UpdateTableReplicaAutoScalingRequest,
) -> Result<(), ApiError> {
    let replica_updates = request.replica_updates.iter().flatten();
    let updates = request
        .provisioned_write_capacity_auto_scaling_update
        .iter()
        .chain(
            request
                .global_secondary_index_updates
                .iter()
                .flatten()
                .filter_map(|u| u.provisioned_write_capacity_auto_scaling_update.as_ref()),
        )
        .chain(replica_updates.clone().filter_map(|u| {
            u.replica_provisioned_read_capacity_auto_scaling_update
                .as_ref()
        }))
        .chain(replica_updates.flat_map(|u| {
            u.replica_global_secondary_index_updates
                .iter()
                .flatten()
                .filter_map(|i| i.provisioned_read_capacity_auto_scaling_update.as_ref())
        }));
    for update in updates {
        let set = parameters_set(update);
        if !set.is_empty() {
            return Err(ApiError::validation(format!(
                "Failed to update global table with name \u{2018}{name}\u{2018}. Replicas {} BillingMode is PayPerRequest. You must convert table's BillingMode to PROVISIONED to set parameters: {}.",
                quoted_list(members.iter().map(String::as_str)),
                quoted_list(set.into_iter()),
            )));
        }
    }
    Ok(())
}

/// `'a', 'b'`.
fn quoted_list<'a>(values: impl Iterator<Item = &'a str>) -> String {
    values
        .map(|value| format!("'{value}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A dimension's settings after `update` (None: auto scaling disabled). `default_policy`
/// names a policy sent without a name.
fn apply(
    table: &str,
    current: Option<&AutoScalingSettingsDef>,
    update: &AutoScalingSettingsUpdate,
    default_policy: &str,
) -> Result<Option<AutoScalingSettingsDef>, ApiError> {
    let failed = |reason: String| {
        ApiError::validation(format!(
            "Failed to update settings for global table with name: \u{2018}{table}\u{2019}: {reason}"
        ))
    };
    if update.auto_scaling_disabled == Some(true) {
        let set = parameters_set(update);
        if !set.is_empty() {
            // Shoal's text [U]: disabling and setting at once contradict each other.
            return Err(failed(format!(
                "Parameters {} cannot be set when auto scaling is being disabled.",
                quoted_list(set.into_iter())
            )));
        }
        return Ok(None);
    }
    let minimum = update
        .minimum_units
        .map(|units| units.unsigned_abs())
        .or(current.map(|c| c.minimum_units));
    let maximum = update
        .maximum_units
        .map(|units| units.unsigned_abs())
        .or(current.map(|c| c.maximum_units));
    let (Some(minimum_units), Some(maximum_units)) = (minimum, maximum) else {
        let missing = [("MinimumUnits", minimum), ("MaximumUnits", maximum)]
            .into_iter()
            .filter_map(|(member, units)| units.is_none().then_some(member));
        return Err(failed(format!(
            "Parameters {} are required unless auto scaling is being disabled.",
            quoted_list(missing)
        )));
    };
    if minimum_units > maximum_units {
        // Shoal's text [U].
        return Err(failed(format!(
            "MinimumUnits ({minimum_units}) must not be greater than MaximumUnits ({maximum_units})."
        )));
    }
    let mut policies = current.map(|c| c.policies.clone()).unwrap_or_default();
    if let Some(policy) = &update.scaling_policy_update {
        let configuration = policy
            .target_tracking_scaling_policy_configuration
            .clone()
            .unwrap_or_default();
        let stored = ScalingPolicyDef {
            name: policy
                .policy_name
                .clone()
                .unwrap_or_else(|| default_policy.to_string()),
            // A member constraint refuses a policy without one.
            target_value: configuration
                .target_value
                .unwrap_or_else(|| serde_json::Number::from(0)),
            disable_scale_in: configuration.disable_scale_in,
            scale_in_cooldown: configuration.scale_in_cooldown,
            scale_out_cooldown: configuration.scale_out_cooldown,
        };
        match policies.iter_mut().find(|p| p.name == stored.name) {
            Some(existing) => *existing = stored,
            None => policies.push(stored),
        }
    }
    Ok(Some(AutoScalingSettingsDef {
        minimum_units,
        maximum_units,
        role_arn: update
            .auto_scaling_role_arn
            .clone()
            .or_else(|| current.and_then(|c| c.role_arn.clone())),
        policies,
    }))
}

/// The name a policy sent without one reads back as (SPEC-3 §2.7).
fn policy_name(capacity: Capacity, table: &str, index: Option<&str>) -> String {
    let stem = match capacity {
        Capacity::Read => "DynamoDBReadCapacityUtilization",
        Capacity::Write => "DynamoDBWriteCapacityUtilization",
    };
    match index {
        None => format!("{stem}:table/{table}"),
        Some(index) => format!("{stem}:table/{table}/index/{index}"),
    }
}

fn find_index<'a>(
    indexes: &'a [IndexAutoScalingDef],
    name: &str,
) -> Option<&'a AutoScalingSettingsDef> {
    indexes
        .iter()
        .find(|index| index.name == name)
        .map(|index| &index.settings)
}

/// Stores GSI `name`'s settings (None removes them).
fn set_index(
    indexes: &mut Vec<IndexAutoScalingDef>,
    name: &str,
    settings: Option<AutoScalingSettingsDef>,
) {
    let position = indexes.iter().position(|index| index.name == name);
    match (position, settings) {
        (Some(position), Some(settings)) => {
            if let Some(index) = indexes.get_mut(position) {
                index.settings = settings;
            }
        }
        (Some(position), None) => {
            indexes.remove(position);
        }
        (None, Some(settings)) => indexes.push(IndexAutoScalingDef {
            name: name.to_string(),
            settings,
        }),
        (None, None) => {}
    }
}

/// A dimension's description: unset reads `{AutoScalingDisabled: true, ScalingPolicies: []}`.
fn describe(settings: Option<&AutoScalingSettingsDef>) -> AutoScalingSettingsDescription {
    let Some(settings) = settings else {
        return AutoScalingSettingsDescription {
            auto_scaling_disabled: true,
            ..AutoScalingSettingsDescription::default()
        };
    };
    AutoScalingSettingsDescription {
        minimum_units: Some(settings.minimum_units),
        maximum_units: Some(settings.maximum_units),
        auto_scaling_disabled: false,
        auto_scaling_role_arn: settings.role_arn.clone(),
        scaling_policies: settings
            .policies
            .iter()
            .map(|policy| ScalingPolicyDescription {
                policy_name: policy.name.clone(),
                target_tracking_scaling_policy_configuration: TargetTrackingConfiguration {
                    disable_scale_in: policy.disable_scale_in,
                    scale_in_cooldown: policy.scale_in_cooldown,
                    scale_out_cooldown: policy.scale_out_cooldown,
                    target_value: Some(policy.target_value.clone()),
                },
            })
            .collect(),
    }
}
