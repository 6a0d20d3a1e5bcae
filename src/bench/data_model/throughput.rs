//! Each table's and GSI's throughput at the modelled rate: what the model needs from it per
//! second, its busiest second, and how that meets the limits DynamoDB sets it — provisioned
//! units with 300 s of burst capacity, or an on-demand table's instant capacity (twice its
//! previous peak) and per-table quota. The limits and the burst bucket are the tables
//! layer's own (`shoal_tables::capacity::throttle`), the ones `shoal serve --capacity
//! enforce` throttles by, so the bench and the emulator agree on what throttles.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::Model;
use super::report::{thousands, Report, VERDICT_SAMPLES_MIN};
use super::run::{is_local_index, RunStats};
use shoal_tables::capacity::throttle::{
    TokenBucket, BURST_SECONDS, ON_DEMAND_INITIAL_READ_PEAK, ON_DEMAND_INITIAL_WRITE_PEAK,
    TABLE_UNITS_MAX,
};

/// A table's (its LSIs' units included: they share its throughput) or a GSI's throughput.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceReport {
    /// The table, or `table/index` for a GSI.
    pub resource: String,
    pub is_index: bool,
    /// `PROVISIONED` or `PAY_PER_REQUEST`.
    pub billing_mode: String,
    /// Provisioned read and write units (provisioned mode).
    pub provisioned: Option<[f64; 2]>,
    /// On-demand: the read and write units per second a new table serves at once (twice
    /// its initial previous peak of 12,000 RRU and 4,000 WRU), and most it ever serves (the
    /// 40,000-unit per-table quota, or a lower OnDemandThroughput cap).
    pub on_demand_instant: Option<[f64; 2]>,
    pub on_demand_max: Option<[f64; 2]>,
    /// Read and write units per second the modelled rate needs, from the patterns with at
    /// least [`VERDICT_SAMPLES_MIN`] operations.
    pub need: [f64; 2],
    /// Its busiest second at the modelled rate.
    pub peak: [f64; 2],
    /// Read and write units in each second of the run, scaled to the modelled rate.
    pub per_second: Vec<[f64; 2]>,
    /// Provisioned, need above the provisioned units: how long a full burst bucket (300 s of
    /// unused units) carries the modelled need before requests throttle.
    pub burst_seconds: [Option<f64>; 2],
    /// Provisioned: seconds of the run at the modelled rate in which its bucket (full at the
    /// start, refilled at the provisioned rate) was empty, so requests throttled.
    pub seconds_throttled: [u64; 2],
}

impl ResourceReport {
    /// The read and write limits its need is held against: provisioned units, or an
    /// on-demand resource's most.
    pub fn limits(&self) -> Option<[f64; 2]> {
        self.provisioned.or(self.on_demand_max)
    }

    /// Its limits in words: `provisioned 100 RCU / 400 WCU`, or an on-demand resource's.
    pub fn limits_text(&self) -> String {
        match (self.provisioned, self.on_demand_instant, self.on_demand_max) {
            (Some(p), _, _) => format!(
                "provisioned {} RCU / {} WCU",
                thousands(p[0]),
                thousands(p[1])
            ),
            (None, Some(instant), Some(max)) => format!(
                "on-demand: {} RRU / {} WRU at once, {} / {} at most",
                thousands(instant[0]),
                thousands(instant[1]),
                thousands(max[0]),
                thousands(max[1])
            ),
            _ => String::new(),
        }
    }
}

/// Units per second a pattern needs from each table (`table`) and GSI (`table/index`) at the
/// modelled rate: what it drew per call times its modelled calls per second. A batch or
/// transaction is charged to each table it touched; an LSI's units to its table.
pub fn needs(model: &Model, report: &Report, stats: &RunStats) -> BTreeMap<String, [f64; 2]> {
    let mut need: BTreeMap<String, [f64; 2]> = BTreeMap::new();
    for (pattern, stat) in report.patterns.iter().zip(&stats.patterns) {
        if pattern.operations < VERDICT_SAMPLES_MIN {
            continue;
        }
        let calls_per_second = pattern.modelled_ops_per_second / pattern.operations as f64;
        for (table, (read, write, _)) in &stat.per_table {
            let slot = need.entry(table.clone()).or_default();
            slot[0] += read * calls_per_second;
            slot[1] += write * calls_per_second;
        }
        for (index, (read, write, _)) in &stat.index_units {
            let resource = match index.split_once('/') {
                Some((table, name)) if is_local_index(&model.tables, table, name) => {
                    table.to_string()
                }
                _ => index.clone(),
            };
            let slot = need.entry(resource).or_default();
            slot[0] += read * calls_per_second;
            slot[1] += write * calls_per_second;
        }
    }
    need
}

/// The throughput of every table and GSI of the model.
pub fn resources(model: &Model, report: &Report, stats: &RunStats) -> Vec<ResourceReport> {
    let need = needs(model, report, stats);
    let run_seconds = report.seconds.ceil() as usize;
    let mut resources = Vec::new();
    for create in &model.tables {
        let table = create["TableName"].as_str().unwrap_or_default();
        let provisioned_mode = create["BillingMode"] != "PAY_PER_REQUEST"
            && !create["ProvisionedThroughput"].is_null();
        let mut of = |resource: String, is_index: bool, settings: &Value| {
            let need = need.get(&resource).copied().unwrap_or_default();
            let mut measured = stats.resources.get(&resource).cloned().unwrap_or_default();
            measured.resize(run_seconds, [0.0, 0.0]);
            let per_second = scaled(&measured, need, report.seconds);
            let peak = per_second.iter().fold([0.0f64, 0.0f64], |peak, units| {
                [peak[0].max(units[0]), peak[1].max(units[1])]
            });
            let mut report = ResourceReport {
                resource,
                is_index,
                billing_mode: if provisioned_mode {
                    "PROVISIONED"
                } else {
                    "PAY_PER_REQUEST"
                }
                .to_string(),
                need,
                peak,
                ..ResourceReport::default()
            };
            if provisioned_mode {
                let units = &settings["ProvisionedThroughput"];
                let provisioned = [
                    units["ReadCapacityUnits"].as_f64().unwrap_or(0.0),
                    units["WriteCapacityUnits"].as_f64().unwrap_or(0.0),
                ];
                for kind in 0..2 {
                    report.burst_seconds[kind] = burst_seconds(provisioned[kind], need[kind]);
                    report.seconds_throttled[kind] =
                        seconds_throttled(provisioned[kind], per_second.iter().map(|u| u[kind]));
                }
                report.provisioned = Some(provisioned);
            } else {
                let cap = |member: &str| {
                    settings["OnDemandThroughput"][member]
                        .as_f64()
                        .filter(|units| *units > 0.0)
                        .map_or(TABLE_UNITS_MAX, |units| units.min(TABLE_UNITS_MAX))
                };
                let max = [cap("MaxReadRequestUnits"), cap("MaxWriteRequestUnits")];
                report.on_demand_instant = Some([
                    (2.0 * ON_DEMAND_INITIAL_READ_PEAK).min(max[0]),
                    (2.0 * ON_DEMAND_INITIAL_WRITE_PEAK).min(max[1]),
                ]);
                report.on_demand_max = Some(max);
            }
            report.per_second = per_second;
            resources.push(report);
        };
        of(table.to_string(), false, create);
        for gsi in create["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = gsi["IndexName"].as_str().unwrap_or_default();
            of(format!("{table}/{index}"), true, gsi);
        }
    }
    resources
}

/// Units measured in each second of a run of `seconds` (the last one partial), scaled so
/// that their mean is the modelled `need`, each second as a rate over the part of it the run
/// covered.
pub fn scaled(measured: &[[f64; 2]], need: [f64; 2], seconds: f64) -> Vec<[f64; 2]> {
    let mut scale = [0.0; 2];
    for kind in 0..2 {
        let total: f64 = measured.iter().map(|units| units[kind]).sum();
        if total > 0.0 {
            scale[kind] = need[kind] * seconds / total;
        }
    }
    measured
        .iter()
        .enumerate()
        .map(|(at, units)| {
            let covered = covered(seconds, at);
            [units[0] * scale[0] / covered, units[1] * scale[1] / covered]
        })
        .collect()
}

/// The part of second `at` a run of `seconds` covered: 1 but for its last, partial second,
/// whose units are a rate over less than a second.
pub fn covered(seconds: f64, at: usize) -> f64 {
    (seconds - at as f64).clamp(1e-3, 1.0)
}

/// How long a full burst bucket carries `need` units per second of a resource provisioned
/// with `provisioned`: its 300 s of units, drawn at the need's excess over the provisioned
/// rate. None when the need does not exceed the provisioned rate.
pub fn burst_seconds(provisioned: f64, need: f64) -> Option<f64> {
    (need > provisioned).then(|| BURST_SECONDS * provisioned / (need - provisioned))
}

/// Seconds in which a provisioned bucket, full at the start and refilled at `provisioned`
/// units a second, is empty after a second's units are taken: the tables layer's own
/// bucket, run over the series.
fn seconds_throttled(provisioned: f64, per_second: impl Iterator<Item = f64>) -> u64 {
    let capacity = BURST_SECONDS * provisioned;
    let mut bucket = TokenBucket::full(capacity, 0);
    let mut throttled = 0;
    for (second, units) in per_second.enumerate() {
        bucket.refill(provisioned, capacity, second as u64 * 1000);
        bucket.take(units);
        if units > 0.0 && bucket.in_debt() {
            throttled += 1;
        }
    }
    throttled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_carries_an_excess_for_300_seconds_of_provisioned_units() {
        // 100 WCU provisioned, 150 needed: 30,000 banked units drawn at 50 a second = 600 s.
        assert_eq!(burst_seconds(100.0, 150.0), Some(600.0));
        // Need equal to the provisioned rate: burst is never drawn on.
        assert_eq!(burst_seconds(100.0, 100.0), None);
        assert_eq!(burst_seconds(100.0, 20.0), None);
    }

    #[test]
    fn a_provisioned_bucket_empties_once_its_burst_is_spent() {
        // 10 units provisioned (3,000 banked), 40 a second: 30 more than refilled each second,
        // so the bank lasts 100 s and the 100th second is the first to end in debt.
        let throttled = seconds_throttled(10.0, std::iter::repeat_n(40.0, 150));
        assert_eq!(throttled, 51);
        // At the provisioned rate it never does.
        assert_eq!(seconds_throttled(10.0, std::iter::repeat_n(10.0, 1000)), 0);
    }

    #[test]
    fn measured_seconds_are_scaled_to_the_modelled_need() {
        // 2 s measured at 10 and 30 WCU (mean 20); modelled need 40 WCU/s: twice each.
        let measured = vec![[0.0, 10.0], [0.0, 30.0]];
        let per_second = scaled(&measured, [0.0, 40.0], 2.0);
        assert_eq!(per_second, vec![[0.0, 20.0], [0.0, 60.0]]);
        // A run of 1.5 s: 15 units in its first second and 15 in its last half second is
        // 15 and 30 a second; at a modelled need of twice the measured 20 a second, 30 and 60.
        let measured = vec![[0.0, 15.0], [0.0, 15.0]];
        let per_second = scaled(&measured, [0.0, 40.0], 1.5);
        assert_eq!(per_second, vec![[0.0, 30.0], [0.0, 60.0]]);
    }
}
