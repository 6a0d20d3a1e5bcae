//! Capacity emulation: DynamoDB's throttling (SPEC-2 §7), off unless
//! `EmulationOptions::capacity` is [`CapacityMode::Enforce`] (`shoal serve --capacity enforce`).
//!
//! Every limit is a token bucket of capacity units:
//! - a provisioned table's or GSI's reads and writes, refilled at the provisioned rate and
//!   holding up to [`BURST_SECONDS`] of unused units (DynamoDB's burst capacity), full when
//!   first used;
//! - an on-demand table's or GSI's reads and writes, refilled at twice its previous peak
//!   (at most [`TABLE_UNITS_MAX`] and its OnDemandThroughput cap), holding one second;
//! - each partition key value's reads and writes ([`PARTITION_READ_UNITS_MAX`],
//!   [`PARTITION_WRITE_UNITS_MAX`] per second, no burst beyond one second): the table's
//!   partitions, keyed by the table's partition key value (its LSIs' units included: they
//!   live there), and each GSI's own, keyed by the GSI's partition key value.
//!
//! Which GSI partition a write loads (SPEC-2 §7.1: a GSI has its own partitions, and a GSI
//! that cannot absorb a write throttles the write to the base table). A write's units for a
//! GSI — exactly those its ConsumedCapacity reports for the GSI (INDEXES) — are charged to
//! the GSI partition of the item's GSI partition key value after the write; for a delete,
//! or when the write removes the item's entry from the GSI (the attribute removed), the
//! value before the write. When the write moves the entry from one value to another, the
//! units are split in half between the two partitions. A write whose item has no entry in
//! the GSI, before or after, charges no partition of it. Before the write is admitted, the
//! GSI partitions it will write must not be in debt, as far as they are known before it
//! runs: the request's item for a put, the stored item otherwise (read, unmetered, only
//! when capacity is enforced); a refusal is the GSI's (`IndexWriteKeyRangeThroughputExceeded`).
//! `shoal bench --model` puts a single-item write's GSI units on GSI partitions by the same
//! rule (tests/it/model_agreement.rs checks that the two agree on what throttles).
//!
//! Admission is check-then-charge, as most emulators do it: before a request runs, the
//! buckets it will draw from must not be in debt (balance above zero); after it ran, the units
//! it consumed — exactly those its ConsumedCapacity reports — are taken, and a bucket may go
//! negative, so later requests wait until it refills. A request never waits half-way.

use std::collections::{BTreeMap, HashMap};

use parking_lot::Mutex;
use serde_json::json;
use shoal_model::{ApiError, AttributeValue, ErrorCode};

use crate::capacity::metering::Metered;
use crate::core::catalog::{
    BillingMode, GlobalIndexDef, IndexStatus, OnDemandLimits, TableDef, Throughput,
};
use crate::core::clock::Clock;
use crate::core::keys;
use crate::core::plan::{Mutation, WritePlan};
use crate::core::region::table_arn;
use crate::replication::overrides::read_overrides;

/// Read units one partition serves per second (SPEC-2 §7.1).
pub const PARTITION_READ_UNITS_MAX: f64 = 3000.0;
/// Write units one partition serves per second (SPEC-2 §7.1).
pub const PARTITION_WRITE_UNITS_MAX: f64 = 1000.0;
/// Seconds of unused provisioned capacity banked as burst capacity.
pub const BURST_SECONDS: f64 = 300.0;
/// The previous peak of a new on-demand table: 12,000 read request units per second.
pub const ON_DEMAND_INITIAL_READ_PEAK: f64 = 12_000.0;
/// The previous peak of a new on-demand table: 4,000 write request units per second.
pub const ON_DEMAND_INITIAL_WRITE_PEAK: f64 = 4_000.0;
/// The default per-table quota of read or write units per second.
pub const TABLE_UNITS_MAX: f64 = 40_000.0;
/// How long a new on-demand peak takes to become the previous peak (DynamoDB: traffic
/// above double the previous peak within 30 minutes can throttle).
pub const PEAK_SETTLE_MILLIS: u64 = 30 * 60 * 1000;

/// Partition buckets tracked at most: past it, idle (full) ones are forgotten, and if none
/// is idle, all are.
const PARTITIONS_MAX: usize = 100_000;
/// Table and index buckets tracked at most, the same way.
const RESOURCES_MAX: usize = 10_000;

/// ProvisionedThroughputExceededException's text (SPEC-2 §7.2).
pub const PROVISIONED_EXCEEDED_MESSAGE: &str = "You exceeded your maximum allowed provisioned throughput for a table or for one or more global secondary indexes. To view performance metrics for provisioned throughput vs. consumed throughput, open the Amazon CloudWatch console.";
/// ThrottlingException's text for an on-demand table or index (SPEC-2 §7.2).
pub const ON_DEMAND_EXCEEDED_MESSAGE: &str = "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html";
/// A transaction's cancellation message for a provisioned table (SPEC-2 §7.2).
const TABLE_PROVISIONED_CANCELLATION: &str = "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.";
/// A transaction's cancellation message for a provisioned GSI (SPEC-2 §7.2).
const INDEX_PROVISIONED_CANCELLATION: &str = "The level of configured provisioned throughput for one or more global secondary indexes of the table was exceeded. Consider increasing your provisioning level for the under-provisioned global secondary indexes with the UpdateTable API.";
/// A transaction's cancellation message for an on-demand GSI (SPEC-2 §7.2).
const INDEX_ON_DEMAND_CANCELLATION: &str = "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically scaling your index so please try again shortly.";

/// Whether requests are throttled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CapacityMode {
    /// Never throttle (DynamoDB Local's behaviour).
    #[default]
    Off,
    /// Throttle as DynamoDB does.
    Enforce,
}

/// A balance of capacity units refilled at a rate up to a capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    balance: f64,
    updated_millis: u64,
}

impl TokenBucket {
    /// A bucket holding `capacity` units at `now_millis`.
    pub fn full(capacity: f64, now_millis: u64) -> TokenBucket {
        TokenBucket {
            balance: capacity,
            updated_millis: now_millis,
        }
    }

    /// Adds what `rate` units per second brought since the last refill, up to `capacity`
    /// (a lowered capacity cuts the balance too). A clock going back adds nothing.
    pub fn refill(&mut self, rate: f64, capacity: f64, now_millis: u64) {
        let elapsed = now_millis.saturating_sub(self.updated_millis);
        self.balance = (self.balance + rate * elapsed as f64 / 1000.0).min(capacity);
        self.updated_millis = self.updated_millis.max(now_millis);
    }

    /// Whether nothing is left to draw on: requests must wait.
    pub fn in_debt(&self) -> bool {
        self.balance <= 0.0
    }

    /// Takes `units`, going into debt if needed.
    pub fn take(&mut self, units: f64) {
        self.balance -= units;
    }

    pub fn balance(&self) -> f64 {
        self.balance
    }
}

/// An on-demand table's previous peak: the most units it consumed in one second, which
/// counts only once it has stood for [`PEAK_SETTLE_MILLIS`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakTracker {
    peak: f64,
    second: u64,
    units_this_second: f64,
    candidate: f64,
    candidate_millis: u64,
}

impl PeakTracker {
    pub fn new(initial_peak: f64) -> PeakTracker {
        PeakTracker {
            peak: initial_peak,
            second: 0,
            units_this_second: 0.0,
            candidate: 0.0,
            candidate_millis: 0,
        }
    }

    /// Adds `units` consumed at `now_millis`.
    pub fn record(&mut self, units: f64, now_millis: u64) {
        let second = now_millis / 1000;
        if second != self.second {
            self.second = second;
            self.units_this_second = 0.0;
        }
        self.units_this_second += units;
        if self.units_this_second > self.candidate.max(self.peak) {
            self.candidate = self.units_this_second;
            self.candidate_millis = now_millis;
        }
    }

    /// The previous peak at `now_millis`.
    pub fn peak(&mut self, now_millis: u64) -> f64 {
        if self.candidate > self.peak
            && now_millis >= self.candidate_millis.saturating_add(PEAK_SETTLE_MILLIS)
        {
            self.peak = self.candidate;
        }
        self.peak
    }
}

/// What bounds one table's or GSI's reads or writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// Provisioned units per second.
    Provisioned(f64),
    /// On demand, with its OnDemandThroughput cap if set.
    OnDemand { max: Option<f64> },
}

impl Limit {
    fn of(
        billing: &BillingMode,
        throughput: Option<Throughput>,
        on_demand: &OnDemandLimits,
        kind: Metered,
    ) -> Option<Limit> {
        let units = |t: Throughput| {
            let units = match kind {
                Metered::Read => t.read_capacity_units,
                Metered::Write => t.write_capacity_units,
            };
            units as f64
        };
        match billing {
            BillingMode::Provisioned(_) => throughput.map(|t| Limit::Provisioned(units(t))),
            BillingMode::PayPerRequest => {
                let max = match kind {
                    Metered::Read => on_demand.max_read_request_units,
                    Metered::Write => on_demand.max_write_request_units,
                };
                Some(Limit::OnDemand {
                    max: max.map(|m| m as f64),
                })
            }
        }
    }

    fn is_provisioned(&self) -> bool {
        matches!(self, Limit::Provisioned(_))
    }
}

/// One table's or GSI's reads or writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceKey {
    pub table: String,
    /// The Region of a global table's member (`TableDef::region`): each member has its own
    /// capacity, its reads its own overrides (`replication::overrides`). None: a table every
    /// Region shares.
    pub region: Option<String>,
    /// The GSI (None: the table, LSIs included).
    pub index: Option<String>,
    pub kind: Metered,
}

/// The reads or writes of one partition key value of a table or GSI.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionKey {
    pub resource: ResourceKey,
    /// The partition key value, encoded (`keys::partition_prefix`).
    pub value: Vec<u8>,
}

/// The state of one table's or GSI's reads or writes.
#[derive(Debug, Clone, Copy)]
struct ResourceState {
    bucket: TokenBucket,
    peak: PeakTracker,
}

impl ResourceState {
    /// The bucket's rate and capacity under `limit` at `now_millis`, and whether the
    /// OnDemandThroughput cap is what binds.
    fn shape(&mut self, limit: Limit, now_millis: u64) -> (f64, f64, bool) {
        match limit {
            Limit::Provisioned(units) => (units, units * BURST_SECONDS, false),
            Limit::OnDemand { max } => {
                let scaled = (2.0 * self.peak.peak(now_millis)).min(TABLE_UNITS_MAX);
                match max {
                    Some(max) if max <= scaled => (max, max, true),
                    _ => (scaled, scaled, false),
                }
            }
        }
    }
}

/// Why a bucket refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// A provisioned table's or GSI's units.
    Provisioned,
    /// An on-demand table's 2× previous peak or the per-table quota.
    AccountLimit,
    /// An on-demand OnDemandThroughput cap.
    MaxOnDemand,
    /// One partition key value's units.
    KeyRange,
}

/// A refused request: which limit of which table or index, and the answer DynamoDB gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub resource: ResourceKey,
    pub exceeded: Exceeded,
    /// Whether the table (or index) is provisioned, which decides the exception.
    pub provisioned: bool,
}

impl Refusal {
    /// `ThrottlingReason.reason`: resource type, operation, limit (SPEC-2 §7.2).
    pub fn reason(&self) -> String {
        let resource = if self.resource.index.is_some() {
            "Index"
        } else {
            "Table"
        };
        let operation = match self.resource.kind {
            Metered::Read => "Read",
            Metered::Write => "Write",
        };
        let limit = match self.exceeded {
            Exceeded::Provisioned => "ProvisionedThroughputExceeded",
            Exceeded::AccountLimit => "AccountLimitExceeded",
            Exceeded::MaxOnDemand => "MaxOnDemandThroughputExceeded",
            Exceeded::KeyRange => "KeyRangeThroughputExceeded",
        };
        format!("{resource}{operation}{limit}")
    }

    /// The ARN of the throttled table or index.
    pub fn resource_arn(&self) -> String {
        let table = table_arn(&self.resource.table);
        match &self.resource.index {
            Some(index) => format!("{table}/index/{index}"),
            None => table,
        }
    }

    /// The exception a single request gets.
    pub fn error(&self) -> ApiError {
        let reasons = json!([{"reason": self.reason(), "resource": self.resource_arn()}]);
        if self.provisioned {
            ApiError::new(
                ErrorCode::ProvisionedThroughputExceededException,
                PROVISIONED_EXCEEDED_MESSAGE,
            )
            .with_extra("ThrottlingReasons", reasons)
        } else {
            ApiError::new(ErrorCode::ThrottlingException, ON_DEMAND_EXCEEDED_MESSAGE)
                .with_extra("throttlingReasons", reasons)
        }
    }

    /// A transaction's cancellation reason: its code and message (SPEC-2 §7.2).
    pub fn cancellation(&self) -> (&'static str, &'static str) {
        let index = self.resource.index.is_some();
        match (self.provisioned, index) {
            (true, false) => (
                "ProvisionedThroughputExceeded",
                TABLE_PROVISIONED_CANCELLATION,
            ),
            (true, true) => (
                "ProvisionedThroughputExceeded",
                INDEX_PROVISIONED_CANCELLATION,
            ),
            (false, false) => ("ThrottlingError", ON_DEMAND_EXCEEDED_MESSAGE),
            (false, true) => ("ThrottlingError", INDEX_ON_DEMAND_CANCELLATION),
        }
    }
}

/// Throttled requests (and batch items) of one table or index since open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThrottleCounts {
    pub reads: u64,
    pub writes: u64,
}

/// The buckets, keyed by what they limit; limits are passed in with each call, so a
/// table's new throughput applies at once.
#[derive(Debug, Default)]
pub struct Buckets {
    resources: HashMap<ResourceKey, ResourceState>,
    partitions: HashMap<PartitionKey, TokenBucket>,
    throttled: BTreeMap<(String, Option<String>), ThrottleCounts>,
}

/// A partition bucket's rate, which is also its capacity (one second).
fn partition_rate(kind: Metered) -> f64 {
    match kind {
        Metered::Read => PARTITION_READ_UNITS_MAX,
        Metered::Write => PARTITION_WRITE_UNITS_MAX,
    }
}

fn initial_peak(kind: Metered) -> f64 {
    match kind {
        Metered::Read => ON_DEMAND_INITIAL_READ_PEAK,
        Metered::Write => ON_DEMAND_INITIAL_WRITE_PEAK,
    }
}

impl Buckets {
    fn resource(&mut self, key: &ResourceKey, limit: Limit, now_millis: u64) -> &mut ResourceState {
        if !self.resources.contains_key(key) && self.resources.len() >= RESOURCES_MAX {
            self.resources.clear();
        }
        let state = self.resources.entry(key.clone()).or_insert_with(|| {
            let mut state = ResourceState {
                bucket: TokenBucket::full(0.0, now_millis),
                peak: PeakTracker::new(initial_peak(key.kind)),
            };
            let (_, capacity, _) = state.shape(limit, now_millis);
            state.bucket = TokenBucket::full(capacity, now_millis);
            state
        });
        let (rate, capacity, _) = state.shape(limit, now_millis);
        state.bucket.refill(rate, capacity, now_millis);
        state
    }

    fn partition(&mut self, key: &PartitionKey, now_millis: u64) -> &mut TokenBucket {
        if !self.partitions.contains_key(key) && self.partitions.len() >= PARTITIONS_MAX {
            self.partitions.retain(|key, bucket| {
                let rate = partition_rate(key.resource.kind);
                bucket.refill(rate, rate, now_millis);
                bucket.balance() < rate
            });
            if self.partitions.len() >= PARTITIONS_MAX {
                self.partitions.clear();
            }
        }
        let rate = partition_rate(key.resource.kind);
        let bucket = self
            .partitions
            .entry(key.clone())
            .or_insert_with(|| TokenBucket::full(rate, now_millis));
        bucket.refill(rate, rate, now_millis);
        bucket
    }

    /// Refuses if any of `resources` or `partitions` (with the limit of its table or index)
    /// is in debt; the refusal is counted.
    pub fn check(
        &mut self,
        resources: &[(ResourceKey, Limit)],
        partitions: &[(PartitionKey, Limit)],
        now_millis: u64,
    ) -> Result<(), Refusal> {
        let refusal = self.first_in_debt(resources, partitions, now_millis);
        match refusal {
            None => Ok(()),
            Some(refusal) => {
                let counts = self
                    .throttled
                    .entry((
                        refusal.resource.table.clone(),
                        refusal.resource.index.clone(),
                    ))
                    .or_default();
                match refusal.resource.kind {
                    Metered::Read => counts.reads += 1,
                    Metered::Write => counts.writes += 1,
                }
                if self.throttled.len() > RESOURCES_MAX {
                    self.throttled.clear();
                }
                Err(refusal)
            }
        }
    }

    fn first_in_debt(
        &mut self,
        resources: &[(ResourceKey, Limit)],
        partitions: &[(PartitionKey, Limit)],
        now_millis: u64,
    ) -> Option<Refusal> {
        for (key, limit) in resources {
            let state = self.resource(key, *limit, now_millis);
            if state.bucket.in_debt() {
                let (_, _, capped) = state.shape(*limit, now_millis);
                let exceeded = match limit {
                    Limit::Provisioned(_) => Exceeded::Provisioned,
                    Limit::OnDemand { .. } if capped => Exceeded::MaxOnDemand,
                    Limit::OnDemand { .. } => Exceeded::AccountLimit,
                };
                return Some(Refusal {
                    resource: key.clone(),
                    exceeded,
                    provisioned: limit.is_provisioned(),
                });
            }
        }
        for (key, limit) in partitions {
            if self.partition(key, now_millis).in_debt() {
                return Some(Refusal {
                    resource: key.resource.clone(),
                    exceeded: Exceeded::KeyRange,
                    provisioned: limit.is_provisioned(),
                });
            }
        }
        None
    }

    /// Takes consumed units from a table's or GSI's bucket.
    pub fn charge(&mut self, key: &ResourceKey, limit: Limit, units: f64, now_millis: u64) {
        let state = self.resource(key, limit, now_millis);
        state.bucket.take(units);
        state.peak.record(units, now_millis);
    }

    /// Takes consumed units from a partition's bucket.
    pub fn charge_partition(&mut self, key: &PartitionKey, units: f64, now_millis: u64) {
        self.partition(key, now_millis).take(units);
    }

    /// A resource bucket's balance, if it is tracked (for tests and diagnostics).
    pub fn balance(&self, key: &ResourceKey) -> Option<f64> {
        self.resources.get(key).map(|state| state.bucket.balance())
    }

    pub fn partitions_tracked(&self) -> usize {
        self.partitions.len()
    }
}

/// What a request will draw from, before it runs.
#[derive(Debug, Clone, Copy)]
pub struct Demand<'a> {
    pub table: &'a TableDef,
    pub kind: Metered,
    /// The GSI a read goes through (None: the table or an LSI). Writes draw from the table
    /// and every GSI.
    pub index: Option<&'a str>,
    /// The partition key value read or written (None: a scan, over every partition).
    pub partition: Option<&'a [AttributeValue]>,
    /// The GSI partitions a write will write, as known before it runs
    /// ([`index_partitions_of`]); empty for reads.
    pub index_partitions: &'a [IndexPartition],
}

/// One partition of a GSI: the GSI's name and its partition key value, encoded
/// (`keys::partition_prefix`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexPartition {
    pub index: String,
    pub value: Vec<u8>,
}

/// Write units one write put on one partition of a GSI of `table`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexPartitionUnits {
    pub table: String,
    /// The member's Region, as [`ResourceKey::region`].
    pub region: Option<String>,
    pub partition: IndexPartition,
    pub units: f64,
}

/// The GSI partitions `item` has entries on: one per GSI whose partition key it holds (with
/// the key's type; another type is refused by the write itself). A GSI being deleted is no
/// longer written, so it is left out, as writes leave it out.
pub fn index_partitions_of(table: &TableDef, item: &shoal_model::Item) -> Vec<IndexPartition> {
    table
        .global_indexes
        .iter()
        .filter(|gsi| gsi.status != IndexStatus::Deleting)
        .filter_map(|gsi| {
            // Every HASH component of a multi-attribute key places the entry.
            let values = gsi
                .key
                .hash_attributes()
                .map(|a| item.get(&a.name).filter(|value| a.accepts(value)))
                .collect::<Option<Vec<_>>>()?;
            Some(IndexPartition {
                index: gsi.name.clone(),
                value: keys::partition_prefix_of(&values).ok()?,
            })
        })
        .collect()
}

/// Where one planned (and committed) write put each GSI's units, by the rule of the module
/// doc: the GSI's units of the plan (those its ConsumedCapacity reports) go to the partition
/// of the entry it wrote, or of the entry it deleted when it wrote none, or half to each when
/// the entry moved from one GSI partition key value to another. The entries are read off the
/// plan's own mutations of the GSI's tree, so nothing is computed twice.
pub fn index_partition_units(
    table: &TableDef,
    plan: &WritePlan,
    out: &mut Vec<IndexPartitionUnits>,
) {
    for gsi in &table.global_indexes {
        let Some(&units) = plan.capacity.global_units.get(&gsi.name) else {
            continue;
        };
        if units <= 0.0 {
            continue;
        }
        let (mut removed, mut added) = (None, None);
        for mutation in &plan.mutations {
            match mutation {
                Mutation::Delete { tree, key } if *tree == gsi.tree => removed = Some(key),
                Mutation::Put { tree, key, .. } if *tree == gsi.tree => added = Some(key),
                _ => {}
            }
        }
        let hash_types: Vec<_> = gsi.key.hash_attributes().map(|a| a.scalar_type()).collect();
        let prefix = |key: &Vec<u8>| -> Option<Vec<u8>> {
            let len = keys::gsi_partition_prefix_len(key, &hash_types).ok()?;
            key.get(..len).map(<[u8]>::to_vec)
        };
        let (before, after) = (removed.and_then(prefix), added.and_then(prefix));
        debug_assert!(
            before.is_some() || after.is_some(),
            "units charged to GSI {} without an entry written",
            gsi.name
        );
        let mut charge = |value: Vec<u8>, units: f64| {
            out.push(IndexPartitionUnits {
                table: table.name.clone(),
                region: table.region.clone(),
                partition: IndexPartition {
                    index: gsi.name.clone(),
                    value,
                },
                units,
            })
        };
        match (before, after) {
            (Some(before), Some(after)) if before != after => {
                charge(before, units / 2.0);
                charge(after, units / 2.0);
            }
            (_, Some(after)) => charge(after, units),
            (Some(before), None) => charge(before, units),
            (None, None) => {}
        }
    }
}

/// Units a request consumed, as its ConsumedCapacity reported them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Consumed {
    /// The table's units, its LSIs' included (they share its capacity).
    pub table_units: f64,
    /// Units per GSI.
    pub index_units: BTreeMap<String, f64>,
}

/// The capacity enforcer of one database.
pub struct Throttle {
    mode: CapacityMode,
    clock: Clock,
    buckets: Mutex<Buckets>,
}

impl Throttle {
    pub fn new(mode: CapacityMode, clock: Clock) -> Throttle {
        Throttle {
            mode,
            clock,
            buckets: Mutex::default(),
        }
    }

    pub fn enforcing(&self) -> bool {
        self.mode == CapacityMode::Enforce
    }

    /// Refuses a request whose buckets are in debt; never while capacity is not enforced.
    /// (Every method here does nothing then: the capacity code also runs for Contributor
    /// Insights alone, which needs no bucket.)
    pub fn check(&self, demand: &Demand<'_>) -> Result<(), Refusal> {
        if !self.enforcing() {
            return Ok(());
        }
        let resources = resources_of(demand);
        let mut partitions: Vec<(PartitionKey, Limit)> = partition_of(demand).into_iter().collect();
        partitions.extend(index_partitions_written(demand));
        let now = self.clock.now_millis();
        self.buckets.lock().check(&resources, &partitions, now)
    }

    /// Charges what a request consumed to its table's and GSIs' buckets.
    pub fn charge(&self, demand: &Demand<'_>, consumed: &Consumed) {
        if !self.enforcing() {
            return;
        }
        let now = self.clock.now_millis();
        let mut buckets = self.buckets.lock();
        for (key, limit) in resources_of(demand) {
            let units = match &key.index {
                None => consumed.table_units,
                Some(index) => consumed.index_units.get(index).copied().unwrap_or(0.0),
            };
            if units > 0.0 {
                buckets.charge(&key, limit, units, now);
            }
        }
    }

    /// Charges `units` to the bucket of the partition key value a request read or wrote.
    pub fn charge_partition(&self, demand: &Demand<'_>, units: f64) {
        if units <= 0.0 || !self.enforcing() {
            return;
        }
        if let Some((key, _)) = partition_of(demand) {
            let now = self.clock.now_millis();
            self.buckets.lock().charge_partition(&key, units, now);
        }
    }

    /// Charges the units writes put on GSI partitions ([`index_partition_units`]).
    pub fn charge_index_partitions(&self, charges: &[IndexPartitionUnits]) {
        if charges.is_empty() || !self.enforcing() {
            return;
        }
        let now = self.clock.now_millis();
        let mut buckets = self.buckets.lock();
        for charge in charges {
            let key = PartitionKey {
                resource: ResourceKey {
                    table: charge.table.clone(),
                    region: charge.region.clone(),
                    index: Some(charge.partition.index.clone()),
                    kind: Metered::Write,
                },
                value: charge.partition.value.clone(),
            };
            buckets.charge_partition(&key, charge.units, now);
        }
    }

    /// Throttled requests per table and index (index None: the table), in name order.
    pub fn throttled(&self) -> Vec<(String, Option<String>, ThrottleCounts)> {
        self.buckets
            .lock()
            .throttled
            .iter()
            .map(|((table, index), counts)| (table.clone(), index.clone(), *counts))
            .collect()
    }
}

fn table_limit(table: &TableDef, kind: Metered) -> Option<Limit> {
    let throughput = match table.billing {
        BillingMode::Provisioned(throughput) => Some(throughput),
        BillingMode::PayPerRequest => None,
    };
    let (throughput, on_demand) = with_read_overrides(
        table,
        None,
        kind,
        throughput,
        table.settings.capacity.on_demand,
    );
    Limit::of(&table.billing, throughput, &on_demand, kind)
}

fn index_limit(table: &TableDef, index: &GlobalIndexDef, kind: Metered) -> Option<Limit> {
    let (throughput, on_demand) = with_read_overrides(
        table,
        Some(&index.name),
        kind,
        index.throughput,
        index.capacity.on_demand,
    );
    Limit::of(&table.billing, throughput, &on_demand, kind)
}

/// A global table member's reads are limited by its own overrides where it has them
/// (ReplicaUpdates, `replication::overrides`); its writes by the group's capacity.
fn with_read_overrides(
    table: &TableDef,
    index: Option<&str>,
    kind: Metered,
    mut throughput: Option<Throughput>,
    mut on_demand: OnDemandLimits,
) -> (Option<Throughput>, OnDemandLimits) {
    if kind == Metered::Read {
        let (read_units, max_read) = read_overrides(table, index);
        if let (Some(throughput), Some(units)) = (throughput.as_mut(), read_units) {
            throughput.read_capacity_units = units;
        }
        if max_read.is_some() {
            on_demand.max_read_request_units = max_read;
        }
    }
    (throughput, on_demand)
}

fn resource_key(table: &TableDef, index: Option<&str>, kind: Metered) -> ResourceKey {
    ResourceKey {
        table: table.name.clone(),
        region: table.region.clone(),
        index: index.map(str::to_string),
        kind,
    }
}

/// The table and GSI buckets a request draws from, with their limits.
fn resources_of(demand: &Demand<'_>) -> Vec<(ResourceKey, Limit)> {
    let table = demand.table;
    let kind = demand.kind;
    let index = |name: &str| table.global_indexes.iter().find(|gsi| gsi.name == name);
    let mut resources = Vec::new();
    match (kind, demand.index.and_then(index)) {
        (Metered::Read, Some(gsi)) => {
            if let Some(limit) = index_limit(table, gsi, kind) {
                resources.push((resource_key(table, Some(&gsi.name), kind), limit));
            }
        }
        _ => {
            if let Some(limit) = table_limit(table, kind) {
                resources.push((resource_key(table, None, kind), limit));
            }
            if kind == Metered::Write {
                for gsi in &table.global_indexes {
                    if let Some(limit) = index_limit(table, gsi, kind) {
                        resources.push((resource_key(table, Some(&gsi.name), kind), limit));
                    }
                }
            }
        }
    }
    resources
}

/// The partition bucket a request draws from: the table's partition, or the GSI's for a
/// read through a GSI. The limit is that of the table or GSI (it decides the exception).
fn partition_of(demand: &Demand<'_>) -> Option<(PartitionKey, Limit)> {
    let components: Vec<&AttributeValue> = demand.partition?.iter().collect();
    let value = keys::partition_prefix_of(&components).ok()?;
    let gsi = match demand.kind {
        Metered::Read => demand.index.and_then(|name| {
            demand
                .table
                .global_indexes
                .iter()
                .find(|gsi| gsi.name == name)
        }),
        Metered::Write => None,
    };
    let (index, limit) = match gsi {
        Some(gsi) => (
            Some(gsi.name.as_str()),
            index_limit(demand.table, gsi, demand.kind),
        ),
        None => (None, table_limit(demand.table, demand.kind)),
    };
    Some((
        PartitionKey {
            resource: resource_key(demand.table, index, demand.kind),
            value,
        },
        limit?,
    ))
}

/// The GSI partition buckets a write draws from, with their GSI's limit (it decides the
/// exception); a GSI without a limit (provisioned, its throughput unknown) has none.
fn index_partitions_written(demand: &Demand<'_>) -> Vec<(PartitionKey, Limit)> {
    if demand.kind != Metered::Write {
        return Vec::new();
    }
    let table = demand.table;
    demand
        .index_partitions
        .iter()
        .filter_map(|partition| {
            let gsi = table
                .global_indexes
                .iter()
                .find(|gsi| gsi.name == partition.index)?;
            let limit = index_limit(table, gsi, Metered::Write)?;
            Some((
                PartitionKey {
                    resource: resource_key(table, Some(&gsi.name), Metered::Write),
                    value: partition.value.clone(),
                },
                limit,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(table: &str, index: Option<&str>, kind: Metered) -> ResourceKey {
        ResourceKey {
            table: table.into(),
            region: None,
            index: index.map(str::to_string),
            kind,
        }
    }

    #[test]
    fn a_bucket_refills_at_its_rate_up_to_its_capacity() {
        let mut bucket = TokenBucket::full(1500.0, 0);
        bucket.take(1500.0);
        assert!(bucket.in_debt(), "an empty bucket refuses");
        bucket.refill(5.0, 1500.0, 1_000);
        assert_eq!(bucket.balance(), 5.0);
        assert!(!bucket.in_debt());
        bucket.refill(5.0, 1500.0, 1_000_000);
        assert_eq!(bucket.balance(), 1500.0, "never more than 300 s of units");
        // A clock going back neither adds nor breaks anything.
        bucket.refill(5.0, 1500.0, 10);
        assert_eq!(bucket.balance(), 1500.0);
    }

    #[test]
    fn debt_is_paid_back_before_requests_pass_again() {
        let mut bucket = TokenBucket::full(10.0, 0);
        bucket.take(40.0);
        assert_eq!(bucket.balance(), -30.0);
        bucket.refill(10.0, 10.0, 3_000);
        assert!(
            bucket.in_debt(),
            "3 s at 10/s pays back only 30 of the 30 owed"
        );
        bucket.refill(10.0, 10.0, 3_100);
        assert!(!bucket.in_debt());
    }

    #[test]
    fn a_provisioned_table_spends_its_burst_then_its_rate() {
        let mut buckets = Buckets::default();
        let table = key("T", None, Metered::Write);
        let limit = Limit::Provisioned(5.0);
        let resources = [(table.clone(), limit)];
        assert!(buckets.check(&resources, &[], 0).is_ok());
        buckets.charge(&table, limit, 1500.0, 0);
        let refusal = buckets.check(&resources, &[], 0).unwrap_err();
        assert_eq!(refusal.reason(), "TableWriteProvisionedThroughputExceeded");
        assert!(refusal.provisioned);
        assert!(
            buckets.check(&resources, &[], 200).is_ok(),
            "1 unit back after 0.2 s"
        );
        assert_eq!(
            buckets.throttled,
            BTreeMap::from([(
                ("T".into(), None),
                ThrottleCounts {
                    reads: 0,
                    writes: 1
                }
            )])
        );
    }

    #[test]
    fn a_partition_serves_its_units_per_second_without_burst() {
        let mut buckets = Buckets::default();
        let hot = PartitionKey {
            resource: key("T", None, Metered::Write),
            value: b"hot".to_vec(),
        };
        let cold = PartitionKey {
            value: b"cold".to_vec(),
            ..hot.clone()
        };
        let limit = Limit::Provisioned(40_000.0);
        buckets.charge_partition(&hot, PARTITION_WRITE_UNITS_MAX, 0);
        let refusal = buckets.check(&[], &[(hot.clone(), limit)], 0).unwrap_err();
        assert_eq!(refusal.reason(), "TableWriteKeyRangeThroughputExceeded");
        assert!(buckets.check(&[], &[(cold, limit)], 0).is_ok());
        // A minute idle refills one second's worth, no more.
        buckets.charge_partition(&hot, 1.0, 60_000);
        buckets.charge_partition(&hot, PARTITION_WRITE_UNITS_MAX - 1.0, 60_000);
        assert!(buckets.check(&[], &[(hot, limit)], 60_000).is_err());
    }

    #[test]
    fn tracked_partitions_are_bounded() {
        let mut buckets = Buckets::default();
        let partition = |n: usize| PartitionKey {
            resource: key("T", None, Metered::Read),
            value: n.to_be_bytes().to_vec(),
        };
        for n in 0..PARTITIONS_MAX + 10 {
            buckets.charge_partition(&partition(n), 1.0, 0);
        }
        assert!(buckets.partitions_tracked() <= PARTITIONS_MAX);
        // Idle partitions are the ones forgotten.
        for n in 0..PARTITIONS_MAX {
            buckets.charge_partition(&partition(n), 1.0, 10_000);
        }
        buckets.charge_partition(&partition(usize::MAX), 1.0, 20_000);
        assert!(buckets.partitions_tracked() <= PARTITIONS_MAX);
    }

    #[test]
    fn on_demand_serves_double_the_previous_peak_which_grows_after_half_an_hour() {
        let mut buckets = Buckets::default();
        let table = key("T", None, Metered::Write);
        let limit = Limit::OnDemand { max: None };
        let resources = [(table.clone(), limit)];
        // A new table: twice 4,000 WRU.
        buckets.charge(&table, limit, 8_000.0, 0);
        let refusal = buckets.check(&resources, &[], 0).unwrap_err();
        assert_eq!(refusal.reason(), "TableWriteAccountLimitExceeded");
        assert!(!refusal.provisioned);
        assert_eq!(refusal.error().code, ErrorCode::ThrottlingException);
        // Within 30 minutes the 8,000 peak does not count yet: still 8,000 per second.
        buckets.charge(&table, limit, 8_000.0, 1_000);
        assert!(buckets.check(&resources, &[], 1_000).is_err());
        // After it, twice 8,000.
        let later = 1_000 + PEAK_SETTLE_MILLIS;
        buckets.charge(&table, limit, 0.0, later);
        assert_eq!(buckets.balance(&table), Some(16_000.0));
        // The per-table quota bounds any doubling.
        buckets.charge(&table, limit, 16_000.0, later);
        let much_later = later + PEAK_SETTLE_MILLIS;
        buckets.charge(&table, limit, 32_000.0, much_later);
        let latest = much_later + PEAK_SETTLE_MILLIS;
        buckets.charge(&table, limit, 0.0, latest);
        assert_eq!(buckets.balance(&table), Some(TABLE_UNITS_MAX));
    }

    #[test]
    fn an_on_demand_cap_binds_below_the_scaling_limit() {
        let mut buckets = Buckets::default();
        let index = key("T", Some("G"), Metered::Read);
        let limit = Limit::OnDemand { max: Some(10.0) };
        buckets.charge(&index, limit, 10.0, 0);
        let refusal = buckets.check(&[(index, limit)], &[], 0).unwrap_err();
        assert_eq!(refusal.reason(), "IndexReadMaxOnDemandThroughputExceeded");
        assert_eq!(
            refusal.resource_arn(),
            format!("{}/index/G", table_arn("T"))
        );
        assert_eq!(refusal.cancellation().0, "ThrottlingError");
    }

    /// A table keyed on pk with a GSI ByStatus on status (ALL projected) and a GSI ByOther
    /// on other.
    fn indexed_table() -> TableDef {
        use crate::core::catalog::{KeyAttribute, KeySchema, Projection, CATALOG_FORMAT};
        let gsi = |name: &str, hash: &str, tree| GlobalIndexDef {
            name: name.into(),
            key: KeySchema::new(KeyAttribute::new(hash, shoal_model::ScalarType::S), None),
            projection: Projection::All,
            tree,
            status: IndexStatus::Active,
            throughput: None,
            capacity: Default::default(),
        };
        TableDef {
            format: CATALOG_FORMAT,
            name: "T".into(),
            id: "id".into(),
            created_at_millis: 0,
            key: KeySchema::new(KeyAttribute::new("pk", shoal_model::ScalarType::S), None),
            attribute_definitions: vec![],
            billing: BillingMode::PayPerRequest,
            tree: 1,
            local_indexes: vec![],
            global_indexes: vec![gsi("ByStatus", "status", 2), gsi("ByOther", "other", 3)],
            streams: Vec::new(),
            time_to_live: None,
            time_to_live_changed_at_millis: None,
            settings: Default::default(),
            region: None,
            replication: None,
        }
    }

    /// The GSI partitions and units of writing `new` over `old` (items of `(name, value)`).
    fn charged(old: &[(&str, &str)], new: &[(&str, &str)]) -> Vec<(String, String, f64)> {
        use crate::core::feature::Features;
        use crate::core::plan::ItemKey;
        let item = |pairs: &[(&str, &str)]| -> Option<shoal_model::Item> {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), AttributeValue::S(v.to_string())))
                    .chain([("pk".to_string(), AttributeValue::S("a".into()))])
                    .collect()
            })
        };
        let (old, new) = (item(old), item(new));
        let table = indexed_table();
        let key = ItemKey {
            pk: AttributeValue::S("a".into()),
            sk: None,
        };
        let plan = crate::core::write::plan_write(
            &Features::none(),
            &table,
            &key,
            old.as_ref(),
            new.as_ref(),
            false,
        )
        .unwrap();
        let mut out = Vec::new();
        index_partition_units(&table, &plan, &mut out);
        out.into_iter()
            .map(|charge| {
                let value = keys::decode_values(
                    &charge.partition.value[keys::HASH_BYTES..],
                    &[shoal_model::ScalarType::S],
                )
                .unwrap();
                let AttributeValue::S(text) = &value[0] else {
                    unreachable!("S keys")
                };
                (charge.partition.index, text.clone(), charge.units)
            })
            .collect()
    }

    fn charge(index: &str, value: &str, units: f64) -> (String, String, f64) {
        (index.into(), value.into(), units)
    }

    #[test]
    fn a_write_charges_the_gsi_partition_of_its_entry() {
        // Added: the value after the write.
        assert_eq!(
            charged(&[], &[("status", "PENDING")]),
            vec![charge("ByStatus", "PENDING", 1.0)]
        );
        // Changed in place: the same partition.
        assert_eq!(
            charged(
                &[("status", "PENDING")],
                &[("status", "PENDING"), ("x", "1")]
            ),
            vec![charge("ByStatus", "PENDING", 1.0)]
        );
        // Moved: a delete (1 unit) and a put (1 unit), half on each partition.
        assert_eq!(
            charged(&[("status", "PENDING")], &[("status", "DONE")]),
            vec![
                charge("ByStatus", "PENDING", 1.0),
                charge("ByStatus", "DONE", 1.0)
            ]
        );
        // Removed from the GSI, or deleted: the value before.
        assert_eq!(
            charged(&[("status", "PENDING"), ("other", "o")], &[("other", "o")]),
            vec![
                charge("ByStatus", "PENDING", 1.0),
                charge("ByOther", "o", 1.0)
            ]
        );
        assert_eq!(
            charged(&[("status", "DONE")], &[]),
            vec![charge("ByStatus", "DONE", 1.0)]
        );
        // No entry before or after, or an entry left as it was: no GSI partition.
        assert_eq!(charged(&[], &[("x", "1")]), vec![]);
        assert_eq!(
            charged(&[("other", "o"), ("x", "1")], &[("other", "o"), ("x", "1")]),
            vec![]
        );
    }

    #[test]
    fn refusals_answer_in_dynamodbs_words() {
        let refusal = Refusal {
            resource: key("T", None, Metered::Write),
            exceeded: Exceeded::Provisioned,
            provisioned: true,
        };
        let error = refusal.error();
        assert_eq!(
            error.code,
            ErrorCode::ProvisionedThroughputExceededException
        );
        assert_eq!(error.message, PROVISIONED_EXCEEDED_MESSAGE);
        assert_eq!(
            error.extra.unwrap()["ThrottlingReasons"],
            json!([{"reason": "TableWriteProvisionedThroughputExceeded", "resource": table_arn("T")}])
        );
        assert_eq!(
            refusal.cancellation(),
            (
                "ProvisionedThroughputExceeded",
                TABLE_PROVISIONED_CANCELLATION
            )
        );
    }
}
