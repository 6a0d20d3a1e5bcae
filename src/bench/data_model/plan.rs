//! The capacity planner (`shoal bench plan MODEL`, and `plan` in every report): at what
//! multiple of the modelled rate each of DynamoDB's limits is reached — each hot partition
//! of a table or GSI, each provisioned table and GSI, an on-demand table's instant capacity
//! and quota, each growing item collection — sorted, the first one in words; and for
//! provisioned tables, what the declared capacity costs next to what the model needs, with
//! an auto-scaling setting.
//!
//! A load grows in proportion to the rate (the model's key distribution stays the same), so
//! a limit of L units met by a need of N units is reached at L / N times the modelled rate.
//! An item collection reaches its cap at any rate given time: its multiple is the one at
//! which it would fill within [`COLLECTION_HORIZON_DAYS`].

use serde::{Deserialize, Serialize};

use super::model::Prices;
use super::report::{
    duration_text, seconds_text, thousands, Report, COLLECTION_GB_MAX, HOURS_PER_MONTH,
    VERDICT_SAMPLES_MIN,
};
use shoal_tables::capacity::throttle::{PARTITION_READ_UNITS_MAX, PARTITION_WRITE_UNITS_MAX};

/// Limits the terminal text lists, lowest multiple first.
const LIMITS_SHOWN: usize = 20;

/// The time within which an item collection reaching 10 GB counts as a limit the design
/// hits: a year of growth.
pub const COLLECTION_HORIZON_DAYS: f64 = 365.0;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Plan {
    /// Every limit the model's load reaches at some multiple of its rate, lowest first.
    pub limits: Vec<PlanLimit>,
    /// The first limit, in words.
    pub first: String,
    /// Provisioned tables and GSIs: declared capacity against need, with auto-scaling.
    pub provisioned: Vec<ProvisionedPlan>,
}

/// One of DynamoDB's limits and the multiple of the modelled rate that reaches it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanLimit {
    /// What the limit is: `partition`, `provisioned`, `on-demand instant`, `on-demand
    /// maximum` or `item collection`.
    pub kind: String,
    /// The table, or `table/index`.
    pub resource: String,
    /// The partition key value (partitions and item collections).
    pub key: Option<String>,
    /// `RCU`, `WCU` (units per second) or `GB`.
    pub unit: String,
    /// What the modelled rate draws on it (for a collection: GB a year).
    pub need: f64,
    pub limit: f64,
    /// The multiple of the modelled rate that reaches the limit: below 1, the modelled rate
    /// is already past it.
    pub multiple: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ProvisionedPlan {
    pub resource: String,
    /// Declared read and write units, and their cost per month.
    pub declared: [f64; 2],
    pub declared_monthly: f64,
    /// The units the modelled need takes at the target utilisation, and their cost.
    pub needed: [f64; 2],
    pub needed_monthly: f64,
    /// Auto-scaling: read and write minimum (the mean need at the target utilisation),
    /// maximum (the busiest second at the target utilisation), and the target.
    pub autoscaling_min: [f64; 2],
    pub autoscaling_max: [f64; 2],
    pub target_utilization: f64,
}

/// Plans from a built report.
pub fn plan(prices: &Prices, report: &Report) -> Plan {
    let mut limits = Vec::new();
    for partition in &report.hot_partitions {
        if partition.operations < VERDICT_SAMPLES_MIN {
            continue;
        }
        for (need, limit, unit) in [
            (
                partition.read_units_per_second,
                PARTITION_READ_UNITS_MAX,
                "RCU",
            ),
            (
                partition.write_units_per_second,
                PARTITION_WRITE_UNITS_MAX,
                "WCU",
            ),
        ] {
            if need > 0.0 {
                limits.push(PlanLimit {
                    kind: "partition".into(),
                    resource: partition.target.clone(),
                    key: Some(partition.key.clone()),
                    unit: unit.into(),
                    need,
                    limit,
                    multiple: limit / need,
                });
            }
        }
    }
    for resource in &report.throughput {
        for (kind, unit) in [(0, "RCU"), (1, "WCU")] {
            let need = resource.need[kind];
            if need <= 0.0 {
                continue;
            }
            let mut push = |kind_name: &str, limit: f64| {
                limits.push(PlanLimit {
                    kind: kind_name.into(),
                    resource: resource.resource.clone(),
                    key: None,
                    unit: unit.into(),
                    need,
                    limit,
                    multiple: limit / need,
                })
            };
            if let Some(provisioned) = resource.provisioned {
                push("provisioned", provisioned[kind]);
            }
            if let Some(instant) = resource.on_demand_instant {
                push("on-demand instant", instant[kind]);
            }
            if let Some(max) = resource.on_demand_max {
                push("on-demand maximum", max[kind]);
            }
        }
    }
    for collection in &report.item_collections {
        if collection.operations < VERDICT_SAMPLES_MIN || collection.growth_gb_per_hour <= 0.0 {
            continue;
        }
        let room = (COLLECTION_GB_MAX - collection.size_estimate_gb[1]).max(0.0);
        let need = collection.growth_gb_per_hour * 24.0 * COLLECTION_HORIZON_DAYS;
        limits.push(PlanLimit {
            kind: "item collection".into(),
            resource: collection.table.clone(),
            key: Some(collection.key.clone()),
            unit: "GB".into(),
            need,
            limit: room,
            multiple: room / need,
        });
    }
    limits.sort_by(|a, b| {
        a.multiple
            .total_cmp(&b.multiple)
            .then(a.resource.cmp(&b.resource))
    });
    let first = limits
        .first()
        .map_or("no limit is reached at any multiple of the modelled rate: nothing in the model loads a table".to_string(), first_in_words);
    Plan {
        first,
        provisioned: provisioned_plans(prices, report),
        limits,
    }
}

/// What a limit is, in words: `GSI ByStatus of Orders, partition \`PENDING\``.
pub fn where_in_words(limit: &PlanLimit) -> String {
    let place = match limit.resource.split_once('/') {
        Some((table, index)) => format!("GSI {index} of {table}"),
        None => format!("table {}", limit.resource),
    };
    match (limit.kind.as_str(), &limit.key) {
        ("partition", Some(key)) => format!("{place}, partition `{key}` ({} limit)", limit.unit),
        ("item collection", Some(key)) => {
            format!("{place}, item collection `{key}` (10 GB cap within a year)")
        }
        ("provisioned", _) => format!("{place}, its provisioned {}", limit.unit),
        ("on-demand instant", _) => format!(
            "{place}, the {} {}/s it serves at once when new",
            thousands(limit.limit),
            limit.unit
        ),
        (_, _) => format!(
            "{place}, the {} {}/s it serves at most",
            thousands(limit.limit),
            limit.unit
        ),
    }
}

fn first_in_words(limit: &PlanLimit) -> String {
    let place = where_in_words(limit);
    match (limit.kind.as_str(), limit.multiple < 1.0) {
        ("item collection", true) => format!(
            "fills a 10 GB item collection within a year at the modelled rate, in {}: {place}",
            duration_text(limit.multiple * COLLECTION_HORIZON_DAYS)
        ),
        ("item collection", false) => format!(
            "first reaches a limit at {:.1}x the modelled rate: {place}",
            limit.multiple
        ),
        (_, true) => format!(
            "already past a limit at the modelled rate ({:.2}x): {place}",
            limit.multiple
        ),
        (_, false) => format!(
            "first throttles at {:.1}x the modelled rate, on {place}",
            limit.multiple
        ),
    }
}

fn provisioned_plans(prices: &Prices, report: &Report) -> Vec<ProvisionedPlan> {
    let target = prices.provisioned_utilization;
    let monthly = |units: [f64; 2]| {
        (units[0] * prices.read_capacity_unit_hour + units[1] * prices.write_capacity_unit_hour)
            * HOURS_PER_MONTH
    };
    report
        .throughput
        .iter()
        .filter_map(|resource| {
            let declared = resource.provisioned?;
            let needed = [resource.need[0] / target, resource.need[1] / target];
            // DynamoDB's auto-scaling keeps consumed / provisioned near the target, between
            // a minimum and a maximum of at least 1 unit each.
            let at_target = |units: f64| (units / target).ceil().max(1.0);
            let min = [at_target(resource.need[0]), at_target(resource.need[1])];
            let max = [
                at_target(resource.peak[0]).max(min[0]),
                at_target(resource.peak[1]).max(min[1]),
            ];
            Some(ProvisionedPlan {
                resource: resource.resource.clone(),
                declared,
                declared_monthly: monthly(declared),
                needed,
                needed_monthly: monthly(needed),
                autoscaling_min: min,
                autoscaling_max: max,
                target_utilization: target,
            })
        })
        .collect()
}

/// The plan as terminal text.
pub fn render_text(report: &Report) -> String {
    use std::fmt::Write;
    let plan = &report.plan;
    let mut out = String::new();
    let _ = writeln!(out, "capacity plan of `{}`: {}", report.model, plan.first);
    let _ = writeln!(
        out,
        "\n  {:>8}  {:<60} {:>12} {:>12}",
        "multiple", "limit", "need", "limit"
    );
    for limit in plan.limits.iter().take(LIMITS_SHOWN) {
        let _ = writeln!(
            out,
            "  {:>7.2}x  {:<60} {:>12} {:>12}",
            limit.multiple,
            where_in_words(limit),
            format!("{:.1} {}", limit.need, limit.unit),
            format!("{:.1} {}", limit.limit, limit.unit)
        );
    }
    if plan.limits.len() > LIMITS_SHOWN {
        let _ = writeln!(
            out,
            "  … and {} more (--json lists them all)",
            plan.limits.len() - LIMITS_SHOWN
        );
    }
    for resource in &report.throughput {
        for (kind, unit) in [(0, "RCU"), (1, "WCU")] {
            if let Some(seconds) = resource.burst_seconds[kind] {
                let _ = writeln!(
                    out,
                    "  burst capacity carries the {unit} need of {} for {}",
                    resource.resource,
                    seconds_text(seconds)
                );
            }
        }
    }
    for provisioned in &plan.provisioned {
        let _ = writeln!(
            out,
            "\n  {}: declared {} RCU / {} WCU (${:.2}/month); the model needs {} RCU / {} WCU at {:.0}% utilisation (${:.2}/month)",
            provisioned.resource,
            thousands(provisioned.declared[0]),
            thousands(provisioned.declared[1]),
            provisioned.declared_monthly,
            thousands(provisioned.needed[0].ceil()),
            thousands(provisioned.needed[1].ceil()),
            provisioned.target_utilization * 100.0,
            provisioned.needed_monthly
        );
        let _ = writeln!(
            out,
            "    auto-scaling: reads {}–{}, writes {}–{}, target utilisation {:.0}%",
            thousands(provisioned.autoscaling_min[0]),
            thousands(provisioned.autoscaling_max[0]),
            thousands(provisioned.autoscaling_min[1]),
            thousands(provisioned.autoscaling_max[1]),
            provisioned.target_utilization * 100.0
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::data_model::report::CollectionReport;
    use crate::bench::data_model::throughput::ResourceReport;

    #[test]
    fn auto_scaling_runs_from_the_mean_need_to_the_busiest_second_at_the_target() {
        // 900 WCU/s on average, 1,000 in the busiest second, 600 WCU declared; no reads.
        // At the default 70% target: minimum ceil(900 / 0.7) = 1,286, maximum
        // ceil(1,000 / 0.7) = 1,429; reads at the 1-unit floor. Needed writes cost
        // 900 / 0.7 x $0.00065 x 730 h = $610.07 a month; the declared 600 (and 5 RCU),
        // (5 x 0.00013 + 600 x 0.00065) x 730 = $285.17.
        let report = Report {
            throughput: vec![ResourceReport {
                resource: "T".into(),
                provisioned: Some([5.0, 600.0]),
                need: [0.0, 900.0],
                peak: [0.0, 1000.0],
                ..ResourceReport::default()
            }],
            ..Report::default()
        };
        let plan = super::plan(&Prices::default(), &report);
        let provisioned = &plan.provisioned[0];
        assert_eq!(provisioned.autoscaling_min, [1.0, 1286.0]);
        assert_eq!(provisioned.autoscaling_max, [1.0, 1429.0]);
        assert!(
            (provisioned.needed_monthly - 610.07).abs() < 0.005,
            "{provisioned:?}"
        );
        assert!(
            (provisioned.declared_monthly - 285.17).abs() < 0.005,
            "{provisioned:?}"
        );
        // The writes reach the 600 declared at 600 / 900 = 0.67x.
        assert_eq!(plan.limits.len(), 1);
        assert!((plan.limits[0].multiple - 600.0 / 900.0).abs() < 1e-12);
        assert_eq!(
            plan.first,
            "already past a limit at the modelled rate (0.67x): table T, its provisioned WCU"
        );
    }

    #[test]
    fn an_item_collection_is_reached_at_the_multiple_that_fills_it_within_a_year() {
        // 1 GB stored (upper estimate), growing 0.01 GB an hour: the 9 GB left fill in 900
        // hours, 37.5 days, at the modelled rate; within a year (8,760 hours) at
        // 900 / 8,760 = 0.103x of it.
        let collection = |growth_gb_per_hour: f64| CollectionReport {
            table: "T".into(),
            key: "k".into(),
            size_estimate_gb: [0.0, 1.0],
            growth_gb_per_hour,
            days_to_limit: None,
            operations: 100,
        };
        let report = Report {
            item_collections: vec![collection(0.01)],
            ..Report::default()
        };
        let plan = super::plan(&Prices::default(), &report);
        assert!((plan.limits[0].multiple - 900.0 / 8760.0).abs() < 1e-12);
        assert_eq!(
            plan.first,
            "fills a 10 GB item collection within a year at the modelled rate, in 38 days: table T, item collection `k` (10 GB cap within a year)"
        );
        // The neighbouring case: growing 0.0001 GB an hour it takes 90,000 hours, over ten
        // years: reached only at 90,000 / 8,760 = 10.3x the modelled rate.
        let report = Report {
            item_collections: vec![collection(0.0001)],
            ..Report::default()
        };
        let plan = super::plan(&Prices::default(), &report);
        assert!((plan.limits[0].multiple - 90_000.0 / 8760.0).abs() < 1e-9);
        assert!(plan
            .first
            .starts_with("first reaches a limit at 10.3x the modelled rate"));
    }
}
