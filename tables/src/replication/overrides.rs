//! Per-replica settings overrides (SPEC-3 §2.1): ReplicaUpdates `Create` and `Update` may give
//! one member its own read capacity (`ProvisionedThroughputOverride.ReadCapacityUnits` on a
//! PROVISIONED table, `OnDemandThroughputOverride.MaxReadRequestUnits` on a PAY_PER_REQUEST
//! one), the same per GSI (`GlobalSecondaryIndexes`), and its own table class
//! (`TableClassOverride`). Write capacity is group-wide, so nothing here touches it.
//!
//! Each rule reuses UpdateTable's own check and text (`control::schema`, `capacity::billing`):
//! a provisioned override on an on-demand table gets the text of ProvisionedThroughput on a
//! PAY_PER_REQUEST table, an on-demand override on a provisioned table the text of
//! OnDemandThroughput on a PROVISIONED one, an unknown index UpdateTable's
//! ResourceNotFoundException, a bad class UpdateTable's TableClass text.
//!
//! The overrides live in the member's own definition (`ReplicationDef::overrides`, whose
//! stored form is described there), written in the one version change of the action that
//! sets them; the capacity code reads them for that Region's reads (`capacity::throttle`),
//! and DescribeTable shows them in the member's `Replicas[]` entry as seen from the other
//! Regions ([`describe`]; inherited values are left out, SPEC-3 §2.2).

use std::collections::BTreeMap;

use serde::Deserialize;
use shoal_model::{ApiError, ErrorCode};

use crate::api::constraint::{
    length_at_least, length_at_most, name_violations, value_at_least, violation,
    violation_without_value, NAME_LENGTH_MIN, NOT_NULL,
};
use crate::api::control::{
    OnDemandThroughput, ProvisionedThroughput, ReadOnDemandOverride, ReadThroughputOverride,
    ReplicaDescription, ReplicaIndexDescription, TableClassSummary,
};
use crate::capacity::billing::index_not_found;
use crate::control::schema::{self, GLOBAL_INDEXES_MAX};
use crate::core::catalog::{
    BillingMode, IndexOverrides, OnDemandLimits, ReplicaOverrides, TableDef,
};
use crate::core::clock::{epoch_seconds, now_millis};

/// The overrides members of a `Create` or `Update` action as sent.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct OverridesMembers {
    #[serde(rename = "KMSMasterKeyId")]
    kms_master_key_id: Option<serde_json::Value>,
    provisioned_throughput_override: Option<ReadThroughputMember>,
    on_demand_throughput_override: Option<ReadOnDemandMember>,
    global_secondary_indexes: Option<Vec<IndexMembers>>,
    table_class_override: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ReadThroughputMember {
    read_capacity_units: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ReadOnDemandMember {
    max_read_request_units: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct IndexMembers {
    index_name: Option<String>,
    provisioned_throughput_override: Option<ReadThroughputMember>,
    on_demand_throughput_override: Option<ReadOnDemandMember>,
}

/// What one action asks to override, after the member constraints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RequestedOverrides {
    /// `ProvisionedThroughputOverride.ReadCapacityUnits` (an empty structure asks nothing).
    provisioned: Option<i64>,
    /// `OnDemandThroughputOverride.MaxReadRequestUnits` (likewise).
    on_demand: Option<i64>,
    indexes: Vec<RequestedIndex>,
    table_class: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct RequestedIndex {
    name: String,
    provisioned: Option<i64>,
    on_demand: Option<i64>,
}

impl RequestedOverrides {
    /// Whether the action asks to change anything (an `Update` that does not is refused).
    pub(crate) fn asks(&self) -> bool {
        *self != RequestedOverrides::default()
    }
}

/// Reads the overrides of an action at `path` (`replicaUpdates.N.member.create`) from its
/// members other than RegionName, adding constraint violations to `problems`. The shape
/// errors are SerializationException, as for the rest of ReplicaUpdates; KMSMasterKeyId is
/// refused (server-side encryption is not modelled: SSESpecification is refused too).
pub(crate) fn parse(
    settings: &BTreeMap<String, serde_json::Value>,
    path: &str,
    problems: &mut Vec<String>,
) -> Result<RequestedOverrides, ApiError> {
    let object: serde_json::Map<String, serde_json::Value> = settings
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let members: OverridesMembers =
        serde_json::from_value(serde_json::Value::Object(object)).map_err(|_| {
            ApiError::new(
                ErrorCode::SerializationException,
                "Unexpected value in a ReplicaUpdates action: ProvisionedThroughputOverride, OnDemandThroughputOverride and GlobalSecondaryIndexes members are structures, TableClassOverride a string",
            )
        })?;
    if members.kms_master_key_id.is_some() {
        return Err(ApiError::validation(
            "Shoal does not support KMSMasterKeyId in ReplicaUpdates: server-side encryption with a customer managed key is not modelled (SSESpecification is refused too)",
        ));
    }
    let read_units =
        |member: &Option<ReadThroughputMember>, at: &str, problems: &mut Vec<String>| {
            let units = member
                .as_ref()
                .and_then(|member| member.read_capacity_units);
            if let Some(units) = units.filter(|units| *units < 1) {
                problems.push(violation(
                    Some(&units.to_string()),
                    &format!("{at}.provisionedThroughputOverride.readCapacityUnits"),
                    &value_at_least(1),
                ));
            }
            units
        };
    let mut requested = RequestedOverrides {
        provisioned: read_units(&members.provisioned_throughput_override, path, problems),
        on_demand: members
            .on_demand_throughput_override
            .as_ref()
            .and_then(|member| member.max_read_request_units),
        indexes: Vec::new(),
        table_class: members.table_class_override,
    };
    if let Some(indexes) = &members.global_secondary_indexes {
        let list = format!("{path}.globalSecondaryIndexes");
        if indexes.is_empty() {
            problems.push(violation_without_value(&list, &length_at_least(1)));
        }
        if indexes.len() > GLOBAL_INDEXES_MAX {
            problems.push(violation_without_value(
                &list,
                &length_at_most(GLOBAL_INDEXES_MAX),
            ));
        }
        for (position, index) in indexes.iter().take(GLOBAL_INDEXES_MAX).enumerate() {
            let at = format!("{list}.{}.member", position + 1);
            match index.index_name.as_deref() {
                None => problems.push(violation(None, &format!("{at}.indexName"), NOT_NULL)),
                Some(name) => name_violations(
                    Some(name),
                    &format!("{at}.indexName"),
                    NAME_LENGTH_MIN,
                    problems,
                ),
            }
            requested.indexes.push(RequestedIndex {
                name: index.index_name.clone().unwrap_or_default(),
                provisioned: read_units(&index.provisioned_throughput_override, &at, problems),
                on_demand: index
                    .on_demand_throughput_override
                    .as_ref()
                    .and_then(|member| member.max_read_request_units),
            });
        }
    }
    Ok(requested)
}

/// `current` (a member's overrides; the default for a new replica) with `requested`
/// applied, checked against `table`'s billing mode and GSIs with UpdateTable's rules and
/// texts (module docs). A member given replaces its override; MaxReadRequestUnits `-1`
/// removes one, as it removes an OnDemandThroughput cap.
pub(crate) fn apply(
    table: &TableDef,
    current: &ReplicaOverrides,
    requested: &RequestedOverrides,
) -> Result<ReplicaOverrides, ApiError> {
    let mut changed = current.clone();
    if let Some(units) = requested.provisioned {
        changed.read_capacity_units = Some(read_capacity(
            &table.billing,
            units,
            schema::throughput_with_pay_per_request,
        )?);
    }
    if let Some(units) = requested.on_demand {
        changed.max_read_request_units = max_read(
            &table.billing,
            units,
            changed.max_read_request_units,
            "table",
        )?;
    }
    let mut seen: Vec<&str> = Vec::new();
    for index in &requested.indexes {
        let name = index.name.as_str();
        if seen.contains(&name) {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Duplicate index name: {name}"
            )));
        }
        seen.push(name);
        if table.global_index(name).is_none() {
            return Err(index_not_found(name));
        }
        let position = match changed.indexes.iter().position(|i| i.name == name) {
            Some(position) => position,
            None => {
                changed.indexes.push(IndexOverrides {
                    name: name.to_string(),
                    ..IndexOverrides::default()
                });
                changed.indexes.len() - 1
            }
        };
        let Some(entry) = changed.indexes.get_mut(position) else {
            continue;
        };
        if let Some(units) = index.provisioned {
            entry.read_capacity_units = Some(read_capacity(&table.billing, units, || {
                schema::index_throughput_with_pay_per_request(name)
            })?);
        }
        if let Some(units) = index.on_demand {
            entry.max_read_request_units =
                max_read(&table.billing, units, entry.max_read_request_units, "index")?;
        }
    }
    changed.forget_empty_indexes();
    if let Some(class) = &requested.table_class {
        let class = schema::table_class_of(class)?;
        // The time is of the last change, as the table's own TableClassSummary's.
        if changed.table_class != Some(class) {
            changed.table_class_updated_at_millis = Some(now_millis());
        }
        changed.table_class = Some(class);
    }
    Ok(changed)
}

/// A ProvisionedThroughputOverride's ReadCapacityUnits, refused with `on_demand_error` on a
/// PAY_PER_REQUEST table and bounded as ProvisionedThroughput is.
fn read_capacity(
    billing: &BillingMode,
    units: i64,
    on_demand_error: impl FnOnce() -> ApiError,
) -> Result<u64, ApiError> {
    if matches!(billing, BillingMode::PayPerRequest) {
        return Err(on_demand_error());
    }
    let throughput = schema::throughput_of(&ProvisionedThroughput {
        read_capacity_units: Some(units),
        write_capacity_units: Some(1),
    })?;
    Ok(throughput.read_capacity_units)
}

/// An OnDemandThroughputOverride's MaxReadRequestUnits over `current`, by OnDemandThroughput's
/// own rule (`schema::on_demand_limits`: only on PAY_PER_REQUEST tables, `-1` removes).
fn max_read(
    billing: &BillingMode,
    units: i64,
    current: Option<u64>,
    owner: &str,
) -> Result<Option<u64>, ApiError> {
    let requested = OnDemandThroughput {
        max_read_request_units: Some(units),
        max_write_request_units: None,
    };
    let current = OnDemandLimits {
        max_read_request_units: current,
        max_write_request_units: None,
    };
    Ok(schema::on_demand_limits(Some(&requested), billing, current, owner)?.max_read_request_units)
}

/// Adds `overrides` to a member's `Replicas[]` entry (SPEC-3 §2.2): only what the member
/// overrides; `ReplicaTableClassSummary` only with a class override, with the time it was
/// set.
pub(crate) fn describe(overrides: &ReplicaOverrides, entry: &mut ReplicaDescription) {
    entry.provisioned_throughput_override =
        overrides
            .read_capacity_units
            .map(|units| ReadThroughputOverride {
                read_capacity_units: units,
            });
    entry.on_demand_throughput_override =
        overrides
            .max_read_request_units
            .map(|units| ReadOnDemandOverride {
                max_read_request_units: units,
            });
    let indexes: Vec<ReplicaIndexDescription> = overrides
        .indexes
        .iter()
        .map(|index| ReplicaIndexDescription {
            index_name: index.name.clone(),
            provisioned_throughput_override: index.read_capacity_units.map(|units| {
                ReadThroughputOverride {
                    read_capacity_units: units,
                }
            }),
            on_demand_throughput_override: index.max_read_request_units.map(|units| {
                ReadOnDemandOverride {
                    max_read_request_units: units,
                }
            }),
        })
        .collect();
    entry.global_secondary_indexes = (!indexes.is_empty()).then_some(indexes);
    entry.replica_table_class_summary = overrides.table_class.map(|class| TableClassSummary {
        table_class: class.as_str().to_string(),
        last_update_date_time: overrides.table_class_updated_at_millis.map(epoch_seconds),
    });
}

/// `table`'s read units with its member's overrides (`capacity::throttle`): the table's
/// provisioned read units and on-demand read cap, or GSI `index`'s.
pub fn read_overrides(table: &TableDef, index: Option<&str>) -> (Option<u64>, Option<u64>) {
    let Some(overrides) = table.replication.as_ref().map(|r| &r.overrides) else {
        return (None, None);
    };
    match index {
        None => (
            overrides.read_capacity_units,
            overrides.max_read_request_units,
        ),
        Some(name) => overrides.index(name).map_or((None, None), |index| {
            (index.read_capacity_units, index.max_read_request_units)
        }),
    }
}
