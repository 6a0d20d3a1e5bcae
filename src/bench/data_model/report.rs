//! The report of a model run: per access pattern (rate, latency, capacity per call, items
//! returned, errors, cost), per table and index (write amplification, storage), the hottest
//! partitions against DynamoDB's per-partition limits, the largest item collections against
//! the 10 GB cap, and the monthly cost in on-demand and provisioned mode. Every capacity
//! figure is a sum of what the target's answers reported.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{Model, Prices};
use super::plan::{self, Plan};
use super::run::{CompiledPattern, PartitionLoad, RunStats};
use super::throughput::{self, ResourceReport};

/// The per-partition limits are the ones capacity emulation enforces, so the report and the
/// server agree on what a hot partition is.
use shoal_tables::capacity::throttle::{PARTITION_READ_UNITS_MAX, PARTITION_WRITE_UNITS_MAX};
/// The overhead DynamoDB bills with every item and index entry, as the tables layer counts it.
use shoal_tables::core::index::STORAGE_OVERHEAD_BYTES;
/// The item collection cap of a table with an LSI, in GB.
pub const COLLECTION_GB_MAX: f64 = 10.0;
/// Hours in a billing month (AWS's convention).
pub const HOURS_PER_MONTH: f64 = 730.0;
/// Partitions listed in the report per table and per GSI.
pub const HOT_PARTITIONS_LISTED: usize = 10;
/// Item collections listed.
const COLLECTIONS_LISTED: usize = 5;
/// Fewest operations a figure extrapolated to the modelled rate (a hot partition, a
/// provisioned table's need, an item collection's growth) is drawn from before it gets a
/// verdict: fewer say too little about the rate.
pub const VERDICT_SAMPLES_MIN: u64 = 20;
/// Share of a pattern's calls that may fail (other than by their condition) before the
/// pattern gets a verdict and the run fails (`shoal bench --allow-errors` keeps it at 0).
pub const ERROR_SHARE_MAX: f64 = 0.01;
/// Exceptions that are a call's expected outcome, not a failure: a condition that did not
/// hold, a transaction cancelled by one (or by a conflict).
const OUTCOME_CODES: [&str; 2] = [
    "ConditionalCheckFailedException",
    "TransactionCanceledException",
];

/// The report. It also reads back (`shoal bench compare` takes a saved one as its baseline):
/// every part of it defaults its missing members, so a report saved before a member was
/// added still reads.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Report {
    pub model: String,
    pub target: String,
    pub seconds: f64,
    pub interrupted: bool,
    pub loaded_items: u64,
    /// Load batches sent again after throttling or with unprocessed items.
    pub load_retries: u64,
    pub patterns: Vec<PatternReport>,
    pub tables: Vec<TableReport>,
    /// The hottest partitions of each table and GSI (up to [`HOT_PARTITIONS_LISTED`] each),
    /// hottest first.
    pub hot_partitions: Vec<PartitionReport>,
    pub item_collections: Vec<CollectionReport>,
    /// Each table's and GSI's throughput at the modelled rate, against its provisioned
    /// capacity or its on-demand limits.
    pub throughput: Vec<ResourceReport>,
    /// At what multiple of the modelled rate each limit is reached, first one first.
    pub plan: Plan,
    pub cost: CostReport,
    /// Plain sentences: what DynamoDB would do with this design at the modelled rate.
    pub verdicts: Vec<String>,
    /// Patterns whose calls failed (other than by their condition) more often than
    /// [`ERROR_SHARE_MAX`]: the run fails unless errors are allowed.
    pub failing_patterns: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Latency {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PatternReport {
    pub name: String,
    pub operation: String,
    pub operations: u64,
    /// Attempts refused by throttling; the SDK-like client sends them again.
    pub throttled_attempts: u64,
    /// Attempts sent again (throttled, a server error, unprocessed batch items).
    pub retries: u64,
    pub ops_per_second: f64,
    /// The rate the cost and verdicts assume: the pattern's `rate`, its share of the run's
    /// `rate`, or what the run achieved.
    pub modelled_ops_per_second: f64,
    pub latency: Latency,
    pub errors: BTreeMap<String, u64>,
    /// The first message of each error code.
    pub error_messages: BTreeMap<String, String>,
    /// Table capacity per call (units).
    pub read_units_per_call: f64,
    pub write_units_per_call: f64,
    /// Capacity per call of each index (`table/index`): read and write units.
    pub index_units_per_call: BTreeMap<String, [f64; 2]>,
    pub items_per_call: f64,
    /// DynamoDB JSON bytes of the items returned, per call.
    pub item_bytes_per_call: f64,
    pub monthly_cost_on_demand: f64,
    pub monthly_cost_provisioned: f64,
    /// Per second of the run: [operations, mean latency ms, max latency ms].
    pub per_second: Vec<[f64; 3]>,
}

impl PatternReport {
    /// Read units per call on the table and all its indexes.
    pub fn read_units_per_call_with_indexes(&self) -> f64 {
        self.read_units_per_call
            + self
                .index_units_per_call
                .values()
                .map(|u| u[0])
                .sum::<f64>()
    }

    /// Write units per call on the table and all its indexes.
    pub fn write_units_per_call_with_indexes(&self) -> f64 {
        self.write_units_per_call
            + self
                .index_units_per_call
                .values()
                .map(|u| u[1])
                .sum::<f64>()
    }

    /// Table and index units per second at the modelled rate: (read, write).
    pub fn modelled_units_per_second(&self) -> (f64, f64) {
        (
            self.read_units_per_call_with_indexes() * self.modelled_ops_per_second,
            self.write_units_per_call_with_indexes() * self.modelled_ops_per_second,
        )
    }

    /// Calls that failed other than by their condition: a failed condition or a cancelled
    /// transaction is the call's outcome, not a failure.
    pub fn failed_calls(&self) -> u64 {
        self.errors
            .iter()
            .filter(|(code, _)| !OUTCOME_CODES.contains(&code.as_str()))
            .map(|(_, count)| count)
            .sum()
    }
}

/// Table and index units per second at the modelled rate, of all `patterns`: (read, write).
pub fn modelled_units_per_second(patterns: &[PatternReport]) -> (f64, f64) {
    patterns.iter().fold((0.0, 0.0), |(read, write), pattern| {
        let (r, w) = pattern.modelled_units_per_second();
        (read + r, write + w)
    })
}

impl Report {
    /// Verdicts other than the one of a design nothing is wrong with.
    pub fn verdict_count(&self) -> usize {
        self.verdicts.iter().filter(|v| *v != NO_VERDICT).count()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TableReport {
    pub name: String,
    pub item_count: u64,
    pub size_bytes: u64,
    pub indexes: Vec<IndexReport>,
}

impl TableReport {
    /// The bytes DynamoDB bills for the table and its indexes: the items' and entries'
    /// sizes (DescribeTable's, which leave the overhead out), each with the 100 bytes of
    /// overhead DynamoDB bills with every item and index entry (SPEC §5).
    pub fn billed_bytes(&self) -> u64 {
        let billed = |size: u64, count: u64| size + count * STORAGE_OVERHEAD_BYTES;
        billed(self.size_bytes, self.item_count)
            + self
                .indexes
                .iter()
                .map(|index| billed(index.size_bytes, index.item_count))
                .sum::<u64>()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct IndexReport {
    pub name: String,
    pub size_bytes: u64,
    pub item_count: u64,
    /// Writes that touched the index per write to the table.
    pub writes_per_base_write: f64,
    /// Index write units per table write unit.
    pub write_units_per_base_write_unit: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PartitionReport {
    /// The table, or `table/index`.
    pub target: String,
    pub key: String,
    /// Average units per second at the modelled rate.
    pub read_units_per_second: f64,
    pub write_units_per_second: f64,
    /// Busiest second of the run, as measured.
    pub peak_read_units: f64,
    pub peak_write_units: f64,
    /// The larger of its read and write load against the per-partition limits.
    pub limit_share: f64,
    /// Operations of the run on it: fewer than [`VERDICT_SAMPLES_MIN`] get no verdict.
    pub operations: u64,
    /// Its heat over time: read and write units in each second of the run (from second 0),
    /// scaled to the modelled rate.
    pub per_second: Vec<[f64; 2]>,
    /// The larger of read and write against the per-partition limits in each second.
    pub limit_share_per_second: Vec<f64>,
    /// Seconds in which it was over a per-partition limit at the modelled rate: DynamoDB's
    /// burst capacity never carries a partition past 3,000 RCU or 1,000 WCU a second.
    pub seconds_over_limit: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CollectionReport {
    /// The table (it has an LSI).
    pub table: String,
    pub key: String,
    /// `SizeEstimateRangeGB` of the last answer that reported the collection.
    pub size_estimate_gb: [f64; 2],
    /// Bytes PutItem wrote into it per hour at the modelled rate, in GB: an upper bound on
    /// its growth (an overwrite grows it by less).
    pub growth_gb_per_hour: f64,
    /// Days until 10 GB at that growth, from the estimate's upper end; None when nothing is
    /// written to it.
    pub days_to_limit: Option<f64>,
    /// Operations of the run on its partition: fewer than [`VERDICT_SAMPLES_MIN`] get no
    /// verdict.
    pub operations: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CostReport {
    pub region: String,
    pub on_demand_monthly: f64,
    pub provisioned_monthly: f64,
    pub storage_monthly: f64,
    pub prices: PricesReport,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PricesReport {
    pub write_request_units_per_million: f64,
    pub read_request_units_per_million: f64,
    pub write_capacity_unit_hour: f64,
    pub read_capacity_unit_hour: f64,
    pub storage_gb_month: f64,
    pub provisioned_utilization: f64,
}

/// Monthly cost of `read` and `write` units per second: (on demand, provisioned).
pub fn monthly_cost(prices: &Prices, read_per_second: f64, write_per_second: f64) -> (f64, f64) {
    let seconds = HOURS_PER_MONTH * 3600.0;
    let on_demand = read_per_second * seconds / 1e6 * prices.read_request_units_per_million
        + write_per_second * seconds / 1e6 * prices.write_request_units_per_million;
    let provisioned = (read_per_second * prices.read_capacity_unit_hour
        + write_per_second * prices.write_capacity_unit_hour)
        / prices.provisioned_utilization
        * HOURS_PER_MONTH;
    (on_demand, provisioned)
}

/// The `quantile` (0..=1) of sorted samples, in milliseconds.
fn quantile_ms(sorted_us: &[u32], quantile: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let at = ((sorted_us.len() - 1) as f64 * quantile).round() as usize;
    f64::from(sorted_us[at]) / 1000.0
}

/// What DescribeTable said of each table after the run.
pub type Descriptions = Vec<Value>;

/// Builds the report.
pub fn build(
    model: &Model,
    target: &str,
    patterns: &[CompiledPattern],
    mut stats: RunStats,
    descriptions: &Descriptions,
) -> Report {
    let seconds = stats.elapsed.as_secs_f64().max(1e-9);
    let weight_total: f64 = model
        .patterns
        .iter()
        .filter(|p| p.rate.is_none())
        .map(|p| p.weight.unwrap_or(1.0))
        .sum();
    let mut reports = Vec::with_capacity(patterns.len());
    // Each pattern's modelled calls per call it made in the run: what its share of any
    // partition's load is scaled by.
    let mut modelled_per_call = Vec::with_capacity(patterns.len());
    for ((pattern, spec), stat) in patterns
        .iter()
        .zip(&model.patterns)
        .zip(stats.patterns.iter_mut())
    {
        stat.latencies_us.sort_unstable();
        let calls = stat.operations.max(1) as f64;
        let measured = stat.operations as f64 / seconds;
        let modelled = match (spec.rate, model.run.rate) {
            (Some(rate), _) => rate,
            (None, Some(rate)) if weight_total > 0.0 => {
                rate * spec.weight.unwrap_or(1.0) / weight_total
            }
            _ => measured,
        };
        modelled_per_call.push(if stat.operations > 0 {
            modelled / stat.operations as f64
        } else {
            0.0
        });
        let mut report = PatternReport {
            name: pattern.name.clone(),
            operation: pattern.operation.clone(),
            operations: stat.operations,
            throttled_attempts: stat.throttled_attempts,
            retries: stat.retries,
            ops_per_second: measured,
            modelled_ops_per_second: modelled,
            latency: Latency {
                p50_ms: quantile_ms(&stat.latencies_us, 0.50),
                p95_ms: quantile_ms(&stat.latencies_us, 0.95),
                p99_ms: quantile_ms(&stat.latencies_us, 0.99),
                max_ms: quantile_ms(&stat.latencies_us, 1.0),
            },
            errors: stat.errors.clone(),
            error_messages: stat.error_messages.clone(),
            read_units_per_call: stat.table_read_units / calls,
            write_units_per_call: stat.table_write_units / calls,
            index_units_per_call: stat
                .index_units
                .iter()
                .map(|(name, units)| (name.clone(), [units.0 / calls, units.1 / calls]))
                .collect(),
            items_per_call: stat.items_returned as f64 / calls,
            item_bytes_per_call: stat.item_bytes_returned as f64 / calls,
            monthly_cost_on_demand: 0.0,
            monthly_cost_provisioned: 0.0,
            per_second: stat
                .per_second
                .iter()
                .map(|(n, sum, max)| {
                    let mean = if *n == 0 {
                        0.0
                    } else {
                        *sum as f64 / *n as f64 / 1000.0
                    };
                    [*n as f64, mean, f64::from(*max) / 1000.0]
                })
                .collect(),
        };
        let (read, write) = report.modelled_units_per_second();
        (
            report.monthly_cost_on_demand,
            report.monthly_cost_provisioned,
        ) = monthly_cost(&model.prices, read, write);
        reports.push(report);
    }

    let tables = table_reports(patterns, &stats, descriptions);
    let storage_bytes: u64 = tables.iter().map(TableReport::billed_bytes).sum();

    // Partitions at the modelled rate: what each pattern put on a partition per call it
    // made, times its modelled calls per second.
    let modelled = |load: &PartitionLoad| {
        let mut rates = (0.0, 0.0, 0.0);
        for (pattern, part) in &load.by_pattern {
            let scale = modelled_per_call.get(*pattern).copied().unwrap_or(0.0);
            rates.0 += part.read_units * scale;
            rates.1 += part.write_units * scale;
            rates.2 += part.put_bytes as f64 * scale;
        }
        rates
    };
    let share = |units: [f64; 2]| {
        (units[0] / PARTITION_READ_UNITS_MAX).max(units[1] / PARTITION_WRITE_UNITS_MAX)
    };
    let mut partitions: Vec<PartitionReport> = stats
        .partitions
        .iter()
        .map(|((target, key), load)| {
            let (read, write, _) = modelled(load);
            let (peak_read, peak_write) = load.peak_units();
            PartitionReport {
                target: target.clone(),
                key: key.clone(),
                read_units_per_second: read,
                write_units_per_second: write,
                peak_read_units: peak_read,
                peak_write_units: peak_write,
                limit_share: share([read, write]),
                operations: load.operations,
                per_second: Vec::new(),
                limit_share_per_second: Vec::new(),
                seconds_over_limit: 0,
            }
        })
        .collect();
    partitions.sort_by(|a, b| {
        b.limit_share
            .total_cmp(&a.limit_share)
            .then(a.target.cmp(&b.target))
            .then(a.key.cmp(&b.key))
    });
    // The hottest of each table and GSI: a GSI's partitions are not crowded out by its
    // table's.
    let mut listed: BTreeMap<String, usize> = BTreeMap::new();
    partitions.retain(|partition| {
        let count = listed.entry(partition.target.clone()).or_default();
        *count += 1;
        *count <= HOT_PARTITIONS_LISTED
    });
    // The heat over time of the listed ones only: a run may touch a million partitions.
    let run_seconds = seconds.ceil() as usize;
    for partition in &mut partitions {
        let Some(load) = stats
            .partitions
            .get(&(partition.target.clone(), partition.key.clone()))
        else {
            continue;
        };
        let mut measured = vec![[0.0, 0.0]; run_seconds];
        for second in &load.seconds {
            if let Some(slot) = measured.get_mut(second.second as usize) {
                *slot = [second.read_units, second.write_units];
            }
        }
        let need = [
            partition.read_units_per_second,
            partition.write_units_per_second,
        ];
        partition.per_second = throughput::scaled(&measured, need, seconds);
        partition.limit_share_per_second =
            partition.per_second.iter().copied().map(share).collect();
        partition.seconds_over_limit = partition
            .limit_share_per_second
            .iter()
            .filter(|share| **share > 1.0)
            .count() as u64;
    }

    let gb = f64::from(1u32 << 30);
    let mut collections: Vec<CollectionReport> = stats
        .partitions
        .iter()
        .filter(|(_, load)| load.put_bytes > 0)
        .map(|((table, key), load)| {
            let size = stats
                .collections
                .get(key)
                .map_or([0.0, 0.0], |seen| seen.range_gb);
            // Bytes per second at the modelled rate, as the partition's units are scaled.
            let growth = modelled(load).2 * 3600.0 / gb;
            CollectionReport {
                table: table.clone(),
                key: key.clone(),
                size_estimate_gb: size,
                growth_gb_per_hour: growth,
                days_to_limit: (growth > 0.0)
                    .then(|| (COLLECTION_GB_MAX - size[1]).max(0.0) / growth / 24.0),
                operations: load.operations,
            }
        })
        .collect();
    collections.sort_by(|a, b| {
        b.growth_gb_per_hour
            .total_cmp(&a.growth_gb_per_hour)
            .then(a.key.cmp(&b.key))
    });
    collections.truncate(COLLECTIONS_LISTED);

    let (total_read, total_write) = modelled_units_per_second(&reports);
    let (on_demand, provisioned) = monthly_cost(&model.prices, total_read, total_write);
    let storage_monthly =
        storage_bytes as f64 / f64::from(1u32 << 30) * model.prices.storage_gb_month;
    let mut report = Report {
        model: model.name.clone().unwrap_or_else(|| "model".to_string()),
        target: target.to_string(),
        seconds,
        interrupted: stats.interrupted,
        loaded_items: stats.loaded_items,
        load_retries: stats.load_retries,
        patterns: reports,
        tables,
        hot_partitions: partitions,
        item_collections: collections,
        throughput: Vec::new(),
        plan: Plan::default(),
        cost: CostReport {
            region: model.prices.region.clone(),
            on_demand_monthly: on_demand,
            provisioned_monthly: provisioned,
            storage_monthly,
            prices: PricesReport {
                write_request_units_per_million: model.prices.write_request_units_per_million,
                read_request_units_per_million: model.prices.read_request_units_per_million,
                write_capacity_unit_hour: model.prices.write_capacity_unit_hour,
                read_capacity_unit_hour: model.prices.read_capacity_unit_hour,
                storage_gb_month: model.prices.storage_gb_month,
                provisioned_utilization: model.prices.provisioned_utilization,
            },
        },
        verdicts: Vec::new(),
        failing_patterns: Vec::new(),
    };
    report.throughput = throughput::resources(model, &report, &stats);
    report.verdicts = verdicts(&report);
    report.plan = plan::plan(&model.prices, &report);
    for pattern in &report.patterns {
        let failed = pattern.failed_calls();
        if failed == 0 || failed as f64 <= ERROR_SHARE_MAX * pattern.operations as f64 {
            continue;
        }
        let (code, count) = pattern
            .errors
            .iter()
            .filter(|(code, _)| !OUTCOME_CODES.contains(&code.as_str()))
            .max_by_key(|(_, count)| **count)
            .map_or(("", 0), |(code, count)| (code.as_str(), *count));
        let message = pattern.error_messages.get(code).map_or("", String::as_str);
        report.verdicts.insert(
            0,
            format!(
                "pattern `{}` failed on {} of its {} calls ({:.0}%), {count} of them {code}: {message}",
                pattern.name,
                thousands(failed as f64),
                thousands(pattern.operations as f64),
                100.0 * failed as f64 / pattern.operations.max(1) as f64
            ),
        );
        report.failing_patterns.push(pattern.name.clone());
    }
    if report.verdicts.len() > 1 {
        report.verdicts.retain(|v| v != NO_VERDICT);
    }
    report
}

fn table_reports(
    patterns: &[CompiledPattern],
    stats: &RunStats,
    descriptions: &Descriptions,
) -> Vec<TableReport> {
    let mut reports = Vec::new();
    for description in descriptions {
        let table = &description["Table"];
        let name = table["TableName"].as_str().unwrap_or_default().to_string();
        // Writes to this table, and what each index took from them.
        let (mut base_writes, mut base_units) = (0u64, 0.0);
        let mut index_writes: BTreeMap<String, (u64, f64)> = BTreeMap::new();
        for (pattern, stat) in patterns.iter().zip(&stats.patterns) {
            if pattern.reads {
                continue;
            }
            let Some((_, units, operations)) = stat.per_table.get(&name) else {
                continue;
            };
            base_writes += operations;
            base_units += units;
            for (index, (_, units, count)) in &stat.index_units {
                if let Some(index) = index.strip_prefix(&format!("{name}/")) {
                    let slot = index_writes.entry(index.to_string()).or_default();
                    slot.0 += count;
                    slot.1 += units;
                }
            }
        }
        let mut indexes = Vec::new();
        for index in table["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .chain(table["LocalSecondaryIndexes"].as_array())
            .flatten()
        {
            let index_name = index["IndexName"].as_str().unwrap_or_default().to_string();
            let (writes, units) = index_writes.get(&index_name).copied().unwrap_or_default();
            indexes.push(IndexReport {
                size_bytes: index["IndexSizeBytes"].as_u64().unwrap_or(0),
                item_count: index["ItemCount"].as_u64().unwrap_or(0),
                writes_per_base_write: if base_writes > 0 {
                    writes as f64 / base_writes as f64
                } else {
                    0.0
                },
                write_units_per_base_write_unit: if base_units > 0.0 {
                    units / base_units
                } else {
                    0.0
                },
                name: index_name,
            });
        }
        reports.push(TableReport {
            name,
            item_count: table["ItemCount"].as_u64().unwrap_or(0),
            size_bytes: table["TableSizeBytes"].as_u64().unwrap_or(0),
            indexes,
        });
    }
    reports
}

/// The verdict of a design nothing is wrong with.
pub(crate) const NO_VERDICT: &str =
    "no partition, table or index over DynamoDB's limits at the modelled rate";

/// `seconds` as people say it: seconds below two minutes, minutes below two hours, then
/// hours.
pub fn seconds_text(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.0} minutes", seconds / 60.0)
    } else {
        format!("{:.1} hours", seconds / 3600.0)
    }
}

/// `days` as people say it: hours below two days.
pub fn duration_text(days: f64) -> String {
    if days < 2.0 {
        format!("{:.1} hours", days * 24.0)
    } else {
        format!("{} days", thousands(days))
    }
}

/// What DynamoDB would do: hot partitions, under-provisioned tables and GSIs, collections
/// near the cap, each drawn from at least [`VERDICT_SAMPLES_MIN`] operations.
fn verdicts(report: &Report) -> Vec<String> {
    let mut verdicts = Vec::new();
    for partition in &report.hot_partitions {
        if partition.operations < VERDICT_SAMPLES_MIN {
            continue;
        }
        for (units, limit, kind) in [
            (
                partition.write_units_per_second,
                PARTITION_WRITE_UNITS_MAX,
                "WCU",
            ),
            (
                partition.read_units_per_second,
                PARTITION_READ_UNITS_MAX,
                "RCU",
            ),
        ] {
            if units > limit {
                verdicts.push(format!(
                    "hot key `{}` ({}): {} {kind}/s, {:.2}x the per-partition limit: DynamoDB would throttle it",
                    partition.key,
                    partition.target,
                    thousands(units),
                    units / limit
                ));
            }
        }
    }
    // Tables and GSIs against their provisioned units or on-demand limits.
    for resource in &report.throughput {
        let name = &resource.resource;
        for (kind, unit) in [(1, "WCU"), (0, "RCU")] {
            let need = resource.need[kind];
            if let Some(provisioned) = resource.provisioned {
                if need <= provisioned[kind] {
                    continue;
                }
                let effect = match (kind, resource.is_index) {
                    (1, true) => "writes to the base table would throttle".to_string(),
                    (1, false) => "writes would throttle".to_string(),
                    _ => "reads would throttle".to_string(),
                };
                let burst = resource.burst_seconds[kind].map_or(String::new(), |seconds| {
                    format!(
                        " once burst capacity (300 s of unused units) is spent, after {}",
                        seconds_text(seconds)
                    )
                });
                verdicts.push(format!(
                    "{name} needs {} {unit}/s at the modelled rate and has {}: {effect}{burst}",
                    thousands(need),
                    thousands(provisioned[kind]),
                ));
            } else if let (Some(instant), Some(max)) =
                (resource.on_demand_instant, resource.on_demand_max)
            {
                if need > max[kind] {
                    verdicts.push(format!(
                        "{name} needs {} {unit}/s at the modelled rate, over the {} an on-demand table or index serves: it would throttle",
                        thousands(need),
                        thousands(max[kind])
                    ));
                } else if need > instant[kind] {
                    // What it serves doubles with each new peak held for 30 minutes.
                    let doublings = (need / instant[kind]).log2().ceil().max(1.0);
                    verdicts.push(format!(
                        "{name} needs {} {unit}/s at the modelled rate; a new on-demand table serves {} at once and doubles that at most every 30 minutes: traffic ramped up over at least {} minutes gets there, the modelled rate at once would throttle (or pre-warm the table)",
                        thousands(need),
                        thousands(instant[kind]),
                        doublings * 30.0
                    ));
                }
            }
        }
    }
    for collection in &report.item_collections {
        if collection.operations < VERDICT_SAMPLES_MIN {
            continue;
        }
        if let Some(days) = collection.days_to_limit {
            if days < 365.0 {
                verdicts.push(format!(
                    "item collection `{}` ({}) grows up to {:.4} GB/h: it could reach the 10 GB cap in {}, then writes to it fail",
                    collection.key,
                    collection.table,
                    collection.growth_gb_per_hour,
                    duration_text(days)
                ));
            }
        }
    }
    if verdicts.is_empty() {
        verdicts.push(NO_VERDICT.into());
    }
    verdicts
}

/// Columns of a terminal heat strip: a longer run shows each column as its busiest second.
const HEAT_STRIP_COLUMNS_MAX: usize = 60;

/// A partition's heat over time as one line of text: a column per second (or per group of
/// seconds), its share of the per-partition limit as a block from ` ` (idle) to `█` (at
/// the limit), `!` where it was over it.
pub fn heat_strip(shares: &[f64]) -> String {
    const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let group = shares.len().div_ceil(HEAT_STRIP_COLUMNS_MAX).max(1);
    shares
        .chunks(group)
        .map(|seconds| {
            let share = seconds.iter().copied().fold(0.0, f64::max);
            if share > 1.0 {
                '!'
            } else {
                LEVELS[(share * 8.0).ceil().clamp(0.0, 8.0) as usize]
            }
        })
        .collect()
}

/// A monthly sum: cents, or four significant places below a dollar (a model's storage is
/// often a fraction of a cent).
fn dollars(value: f64) -> String {
    if value >= 1.0 || value <= 0.0 {
        format!("{value:.2}")
    } else {
        let decimals = (3.0 - value.log10().floor()).clamp(2.0, 12.0) as usize;
        format!("{value:.decimals$}")
    }
}

/// `1850.4` → `1,850`.
pub(crate) fn thousands(value: f64) -> String {
    let whole = value.round() as i64;
    let digits = whole.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if whole < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// The report as a terminal table.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "model `{}` on {}: {:.1} s{}, {} items loaded",
        report.model,
        report.target,
        report.seconds,
        if report.interrupted {
            " (interrupted)"
        } else {
            ""
        },
        report.loaded_items
    );
    if report.load_retries > 0 {
        let _ = writeln!(
            out,
            "  the load sent {} batches again (throttled, or items left unprocessed)",
            report.load_retries
        );
    }
    let _ = writeln!(out, "\naccess patterns");
    let _ = writeln!(
        out,
        "  {:<24} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9} {:>10} {:>10}",
        "pattern",
        "ops",
        "ops/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "RCU/op",
        "WCU/op",
        "items",
        "bytes",
        "$/mo od",
        "$/mo prov"
    );
    for p in &report.patterns {
        let _ = writeln!(
            out,
            "  {:<24} {:>10} {:>9.0} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.2} {:>8.2} {:>7.1} {:>9.0} {:>10.2} {:>10.2}",
            truncate(&p.name, 24),
            p.operations,
            p.ops_per_second,
            p.latency.p50_ms,
            p.latency.p95_ms,
            p.latency.p99_ms,
            p.latency.max_ms,
            p.read_units_per_call,
            p.write_units_per_call,
            p.items_per_call,
            p.item_bytes_per_call,
            p.monthly_cost_on_demand,
            p.monthly_cost_provisioned
        );
        for (index, [read, write]) in &p.index_units_per_call {
            let _ = writeln!(
                out,
                "    index {index}: {read:.2} RCU/op, {write:.2} WCU/op"
            );
        }
        if p.retries > 0 {
            let _ = writeln!(
                out,
                "    sent again {} times ({} attempts throttled)",
                p.retries, p.throttled_attempts
            );
        }
        for (code, count) in &p.errors {
            let message = p.error_messages.get(code).map_or("", String::as_str);
            let _ = writeln!(out, "    error {code}: {count} ({message})");
        }
    }
    let _ = writeln!(out, "\ntables and indexes");
    for table in &report.tables {
        let _ = writeln!(
            out,
            "  {}: {} items, {} bytes ({} bytes billed with its indexes and DynamoDB's 100 bytes per item and entry)",
            table.name,
            table.item_count,
            table.size_bytes,
            table.billed_bytes()
        );
        for index in &table.indexes {
            let _ = writeln!(
                out,
                "    {}: {} items, {} bytes, {:.2} index writes per base write, {:.2} index WCU per base WCU",
                index.name,
                index.item_count,
                index.size_bytes,
                index.writes_per_base_write,
                index.write_units_per_base_write_unit
            );
        }
    }
    let _ = writeln!(
        out,
        "\nhottest partitions (units per second at the modelled rate)"
    );
    for p in &report.hot_partitions {
        let peak = p.limit_share_per_second.iter().copied().fold(0.0, f64::max);
        let over = if p.seconds_over_limit > 0 {
            format!(", over it in {} s of the run", p.seconds_over_limit)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {} `{}`: {:.1} RCU/s, {:.1} WCU/s ({:.0}% of the per-partition limit, busiest second {:.0}%{over})",
            p.target,
            p.key,
            p.read_units_per_second,
            p.write_units_per_second,
            p.limit_share * 100.0,
            peak * 100.0
        );
        if p.limit_share_per_second.len() > 1 {
            let _ = writeln!(out, "    heat |{}|", heat_strip(&p.limit_share_per_second));
        }
    }
    let _ = writeln!(
        out,
        "\nthroughput per table and GSI (units per second at the modelled rate)"
    );
    for r in &report.throughput {
        let limits = r.limits_text();
        let _ = writeln!(
            out,
            "  {}: needs {:.1} RCU/s, {:.1} WCU/s (busiest second {:.1} / {:.1}); {limits}",
            r.resource, r.need[0], r.need[1], r.peak[0], r.peak[1]
        );
    }
    if !report.item_collections.is_empty() {
        let _ = writeln!(out, "\nlargest item collections");
        for c in &report.item_collections {
            let days = c.days_to_limit.map_or("not growing".to_string(), |d| {
                format!("10 GB in {} at most", duration_text(d))
            });
            let _ = writeln!(
                out,
                "  {} `{}`: estimated {}–{} GB, grows up to {:.6} GB/h, {days}",
                c.table, c.key, c.size_estimate_gb[0], c.size_estimate_gb[1], c.growth_gb_per_hour
            );
        }
    }
    let _ = writeln!(
        out,
        "\ncost per month at the modelled rate ({} prices): on-demand ${:.2}, provisioned ${:.2} (at {:.0}% utilisation), storage ${}",
        report.cost.region,
        report.cost.on_demand_monthly,
        report.cost.provisioned_monthly,
        report.cost.prices.provisioned_utilization * 100.0,
        dollars(report.cost.storage_monthly)
    );
    let _ = writeln!(out, "\ncapacity plan: {}", report.plan.first);
    let _ = writeln!(out, "\nverdicts");
    for verdict in &report.verdicts {
        let _ = writeln!(out, "  - {verdict}");
    }
    out
}

/// `text` cut to `width` characters, the last one an ellipsis when it was longer.
pub(crate) fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monthly_cost_by_hand() {
        let prices = Prices::default();
        // 100 WCU/s and 1,000 RCU/s for 730 hours: 262.8 M write units, 2,628 M read units.
        let (on_demand, provisioned) = monthly_cost(&prices, 1000.0, 100.0);
        let expected_on_demand = 2628.0 * 0.125 + 262.8 * 0.625;
        assert!((on_demand - expected_on_demand).abs() < 1e-6, "{on_demand}");
        let expected_provisioned = (1000.0 * 0.00013 + 100.0 * 0.00065) / 0.7 * 730.0;
        assert!(
            (provisioned - expected_provisioned).abs() < 1e-6,
            "{provisioned}"
        );
    }

    #[test]
    fn storage_bills_100_bytes_with_every_item_and_index_entry() {
        let index = |size_bytes, item_count| IndexReport {
            name: "ByL".into(),
            size_bytes,
            item_count,
            writes_per_base_write: 0.0,
            write_units_per_base_write_unit: 0.0,
        };
        // 1,000 items of 1,000 bytes (DescribeTable's TableSizeBytes 1,000,000), an LSI of
        // 1,000 entries of 50 bytes and a sparse GSI of 10 entries of 200 bytes: by hand,
        // (1,000,000 + 1,000 × 100) + (50,000 + 1,000 × 100) + (2,000 + 10 × 100).
        let table = TableReport {
            name: "T".into(),
            item_count: 1000,
            size_bytes: 1_000_000,
            indexes: vec![index(50_000, 1000), index(2_000, 10)],
        };
        assert_eq!(table.billed_bytes(), 1_100_000 + 150_000 + 3_000);
        // An empty table bills nothing.
        let empty = TableReport {
            name: "E".into(),
            item_count: 0,
            size_bytes: 0,
            indexes: vec![index(0, 0)],
        };
        assert_eq!(empty.billed_bytes(), 0);
    }

    #[test]
    fn a_heat_strip_draws_each_second_s_share_of_the_limit() {
        // Idle, an eighth, half, exactly the limit, over it.
        assert_eq!(heat_strip(&[0.0, 0.125, 0.5, 1.0, 1.01]), " ▁▄█!");
        // 120 seconds fold into 60 columns, each its busiest second: the one over the limit
        // shows.
        let mut shares = vec![0.5; 120];
        shares[7] = 1.5;
        let strip = heat_strip(&shares);
        assert_eq!(strip.chars().count(), 60);
        assert_eq!(strip.chars().nth(3), Some('!'));
        assert_eq!(strip.chars().filter(|c| *c == '▄').count(), 59);
    }

    #[test]
    fn durations_below_two_days_are_given_in_hours() {
        assert_eq!(duration_text(0.25), "6.0 hours");
        assert_eq!(duration_text(1.99), "47.8 hours");
        assert_eq!(duration_text(2.0), "2 days");
        assert_eq!(duration_text(400.0), "400 days");
    }

    #[test]
    fn quantiles_and_thousands() {
        let samples: Vec<u32> = (1..=1000).collect();
        assert_eq!(quantile_ms(&samples, 0.5), 0.501);
        assert_eq!(quantile_ms(&samples, 0.99), 0.990);
        assert_eq!(quantile_ms(&samples, 1.0), 1.0);
        assert_eq!(quantile_ms(&[], 0.5), 0.0);
        assert_eq!(thousands(1850.4), "1,850");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(dollars(0.000526), "0.0005260");
        assert_eq!(dollars(0.25), "0.2500");
        assert_eq!(dollars(7391.25), "7391.25");
        assert_eq!(dollars(0.0), "0.00");
    }

    #[test]
    fn a_saved_report_reads_back_even_without_members_added_since() {
        let report = Report {
            model: "m".into(),
            patterns: vec![PatternReport {
                name: "p".into(),
                write_units_per_call: 1.0,
                index_units_per_call: [("T/G".to_string(), [0.0, 1.0])].into(),
                ..PatternReport::default()
            }],
            verdicts: vec![NO_VERDICT.into()],
            ..Report::default()
        };
        let saved = serde_json::to_value(&report).unwrap();
        let read: Report = serde_json::from_value(saved.clone()).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), saved);
        assert_eq!(read.patterns[0].write_units_per_call_with_indexes(), 2.0);
        assert_eq!(read.verdict_count(), 0);
        // A report saved before `load_retries` and a pattern's `retries` were added: 0.
        let older = serde_json::json!({
            "model": "m",
            "patterns": [{"name": "p", "write_units_per_call": 1.0}],
            "verdicts": ["hot key `k` (T): …"],
            "cost": {"on_demand_monthly": 2.5}
        });
        let read: Report = serde_json::from_value(older).unwrap();
        assert_eq!((read.load_retries, read.patterns[0].retries), (0, 0));
        assert_eq!(read.cost.on_demand_monthly, 2.5);
        assert_eq!(read.verdict_count(), 1);
    }
}
