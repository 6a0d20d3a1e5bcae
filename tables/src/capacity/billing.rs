//! UpdateTable's capacity changes (SPEC-2 §5.4, §5.5): BillingMode switches in both
//! directions, the table's ProvisionedThroughput, OnDemandThroughput, and the GSI `Update`
//! action (new throughput or on-demand caps for one index).
//!
//! [`change_capacity`] checks them against the table and returns the changed definition;
//! `update_table` stores it in one catalog change, together with a GSI Create or Delete of
//! the same request when there is one. Each rule's text is CreateTable's where the two
//! operations share one (`control::schema`).
//!
//! - Switching to PAY_PER_REQUEST zeroes the reported units of the table and its GSIs and
//!   records the time (`BillingModeSummary.LastUpdateToPayPerRequestDateTime`).
//! - Switching to PROVISIONED needs ProvisionedThroughput for the table and, through `Update`
//!   actions of the same request, for every GSI; on-demand caps are dropped.
//! - A change of provisioned units records LastIncreaseDateTime / LastDecreaseDateTime and
//!   counts the decreases of the UTC day (`CapacitySettings::record_change`). A mode switch
//!   records neither. Decreases are not limited (SPEC-2: "Shoal: do not limit by default"),
//!   nor are mode switches, nor units above DescribeLimits' quotas.
//!
//! Nothing here is enforced on reads and writes: that is capacity emulation's business
//! (`capacity::throttle`, off by default), which reads the units and caps stored here.

use shoal_model::{ApiError, ErrorCode};

use crate::api::update_table::{UpdateGlobalSecondaryIndexAction, UpdateTableRequest};
use crate::control::schema;
use crate::core::catalog::{BillingMode, OnDemandLimits, TableDef, Throughput};

const INVALID: &str = "One or more parameter values were invalid:";

/// The text of a table's ProvisionedThroughput equal to its current one.
pub fn table_will_not_change_message(current: Throughput) -> String {
    will_not_change_message("the table", "table", current)
}

/// The text of a GSI `Update` whose ProvisionedThroughput equals the index's current one.
pub fn index_will_not_change_message(index_name: &str, current: Throughput) -> String {
    will_not_change_message(&format!("the index {index_name}"), "index", current)
}

fn will_not_change_message(what: &str, owner: &str, current: Throughput) -> String {
    let (r, w) = (current.read_capacity_units, current.write_capacity_units);
    format!(
        "The provisioned throughput for {what} will not change. The requested value equals the current value. \
         Current ReadCapacityUnits provisioned for the {owner}: {r}. Requested ReadCapacityUnits: {r}. \
         Current WriteCapacityUnits provisioned for the {owner}: {w}. Requested WriteCapacityUnits: {w}. \
         Refer to the Amazon DynamoDB Developer Guide for current limits and how to request higher limits."
    )
}

/// The text of a GSI `Update` (or a replica's GSI override) naming no index of the table.
pub(crate) fn index_not_found(index_name: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ResourceNotFoundException,
        format!("Requested resource not found: Index: {index_name} not found"),
    )
}

/// The GSI `Update` actions of the request, in order.
pub(crate) fn index_updates(
    request: &UpdateTableRequest,
) -> impl Iterator<Item = &UpdateGlobalSecondaryIndexAction> {
    request
        .global_secondary_index_updates
        .iter()
        .flatten()
        .filter_map(|update| update.update.as_ref())
}

/// `table` with the request's BillingMode, ProvisionedThroughput, OnDemandThroughput and GSI
/// `Update` actions applied at `now_millis`, or the error DynamoDB gives for them.
/// `deleted_index` is a GSI the same request deletes: it needs no throughput.
pub(crate) fn change_capacity(
    request: &UpdateTableRequest,
    table: &TableDef,
    deleted_index: Option<&str>,
    now_millis: u64,
) -> Result<TableDef, ApiError> {
    for action in index_updates(request) {
        let name = action.index_name.as_deref().unwrap_or_default();
        if table.global_index(name).is_none() {
            return Err(index_not_found(name));
        }
    }
    let current = match table.billing {
        BillingMode::PayPerRequest => None,
        BillingMode::Provisioned(throughput) => Some(throughput),
    };
    let pay_per_request = match request.billing_mode.as_deref() {
        Some(mode) => mode == "PAY_PER_REQUEST",
        None => current.is_none(),
    };
    let mut changed = table.clone();
    if pay_per_request {
        if request.provisioned_throughput.is_some() {
            return Err(schema::throughput_with_pay_per_request());
        }
        if current.is_some() {
            changed.billing = BillingMode::PayPerRequest;
            changed.settings.pay_per_request_since_millis = Some(now_millis);
            for gsi in &mut changed.global_indexes {
                gsi.throughput = None;
            }
        }
        changed.settings.capacity.on_demand = schema::on_demand_limits(
            request.on_demand_throughput.as_ref(),
            &changed.billing,
            changed.settings.capacity.on_demand,
            "table",
        )?;
        for action in index_updates(request) {
            let name = action.index_name.as_deref().unwrap_or_default();
            if action.provisioned_throughput.is_some() {
                return Err(schema::index_throughput_with_pay_per_request(name));
            }
            if !action.on_demand_throughput.is_some_and(|o| o.asks()) {
                return Err(ApiError::validation(format!(
                    "{INVALID} OnDemandThroughput must be specified for index: {name} when BillingMode is PAY_PER_REQUEST"
                )));
            }
            if let Some(gsi) = changed.global_indexes.iter_mut().find(|g| g.name == name) {
                gsi.capacity.on_demand = schema::on_demand_limits(
                    action.on_demand_throughput.as_ref(),
                    &BillingMode::PayPerRequest,
                    gsi.capacity.on_demand,
                    "index",
                )?;
            }
        }
        return Ok(changed);
    }

    // PROVISIONED (now, or from this request on).
    let provisioned = BillingMode::Provisioned(current.unwrap_or(Throughput {
        read_capacity_units: 1,
        write_capacity_units: 1,
    }));
    schema::on_demand_limits(
        request.on_demand_throughput.as_ref(),
        &provisioned,
        OnDemandLimits::default(),
        "table",
    )?;
    for action in index_updates(request) {
        schema::on_demand_limits(
            action.on_demand_throughput.as_ref(),
            &provisioned,
            OnDemandLimits::default(),
            "index",
        )?;
    }
    let requested = request
        .provisioned_throughput
        .as_ref()
        .map(schema::throughput_of)
        .transpose()?;
    match (current, requested) {
        (None, None) => {
            return Err(ApiError::validation(format!(
                "{INVALID} ProvisionedThroughput must be specified when BillingMode is PROVISIONED"
            )));
        }
        (None, Some(new)) => {
            changed.billing = BillingMode::Provisioned(new);
            changed.settings.capacity.on_demand = OnDemandLimits::default();
            for gsi in &mut changed.global_indexes {
                gsi.capacity.on_demand = OnDemandLimits::default();
            }
        }
        (Some(old), Some(new)) => {
            if old == new {
                return Err(ApiError::validation(table_will_not_change_message(old)));
            }
            changed.billing = BillingMode::Provisioned(new);
            changed
                .settings
                .capacity
                .record_change(old, new, now_millis);
        }
        (Some(_), None) => {}
    }
    for action in index_updates(request) {
        let name = action.index_name.as_deref().unwrap_or_default();
        let Some(requested) = action.provisioned_throughput.as_ref() else {
            return Err(schema::index_throughput_missing(name));
        };
        let new = schema::throughput_of(requested)?;
        if let Some(gsi) = changed.global_indexes.iter_mut().find(|g| g.name == name) {
            match gsi.throughput {
                Some(old) if old == new => {
                    return Err(ApiError::validation(index_will_not_change_message(
                        name, old,
                    )));
                }
                Some(old) => gsi.capacity.record_change(old, new, now_millis),
                None => {}
            }
            gsi.throughput = Some(new);
        }
    }
    if let Some(gsi) = changed
        .global_indexes
        .iter()
        .find(|gsi| gsi.throughput.is_none() && Some(gsi.name.as_str()) != deleted_index)
    {
        return Err(schema::index_throughput_missing(&gsi.name));
    }
    Ok(changed)
}
