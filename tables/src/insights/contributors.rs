//! The data behind Contributor Insights: per table and per GSI with insights enabled, the
//! partition keys (and, where there is a sort key, the items) that consumed the most
//! capacity and that were throttled the most, minute by minute over the last
//! [`WINDOW_MINUTES`] minutes.
//!
//! It is fed by the capacity code (`capacity::throttled`) with the units each request
//! consumed, as its ConsumedCapacity reports them, and with each throttled request; it
//! ranks keys by DynamoDB's `ConsumedThroughputUnits`, 3 × write units + read units
//! (SPEC-3 §3). Scans (no partition key) and PartiQL requests are not counted, as on AWS.
//!
//! Memory is bounded: each rule keeps at most [`KEYS_PER_MINUTE_MAX`] keys a minute with the
//! Space-Saving algorithm (Metwally, Agrawal, El Abbadi, 2005: a new key arriving when the
//! table is full takes the place of the smallest, inheriting its count as its possible
//! overcount), so a key that is truly among the top few is never lost and the counts of
//! the top keys are exact while fewer distinct keys than the bound are seen (each
//! contributor's `overcount_max` says by how much it may be over otherwise), and at most
//! [`RESOURCES_MAX`] tables and indexes are followed. Nothing is stored on disk: the
//! figures start over at a restart, as the rules' settings do not (they live in the
//! catalog).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use serde::Serialize;
use shoal_model::{AttributeValue, ScalarType};

use crate::core::catalog::TableDef;
use crate::core::clock::Clock;
use crate::core::keys;

/// Minutes of history kept per table or index.
pub const WINDOW_MINUTES: u64 = 10;
/// Keys kept per rule and minute (Space-Saving's counters).
pub const KEYS_PER_MINUTE_MAX: usize = 256;
/// Tables and indexes followed at once.
pub const RESOURCES_MAX: usize = 1_000;
/// Contributors a report lists per rule, at most.
pub const REPORT_TOP_MAX: usize = 100;

/// The four rules of SPEC-3 §3, in DynamoDB's list order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Most accessed partition keys (`PKC`).
    PartitionKeysAccessed,
    /// Most throttled partition keys (`PKT`).
    PartitionKeysThrottled,
    /// Most accessed items, partition and sort key (`SKC`).
    ItemsAccessed,
    /// Most throttled items (`SKT`).
    ItemsThrottled,
}

impl Rule {
    pub const ALL: [Rule; 4] = [
        Rule::PartitionKeysAccessed,
        Rule::PartitionKeysThrottled,
        Rule::ItemsAccessed,
        Rule::ItemsThrottled,
    ];

    /// The code in DynamoDB's rule names.
    pub fn code(self) -> &'static str {
        match self {
            Rule::PartitionKeysAccessed => "PKC",
            Rule::PartitionKeysThrottled => "PKT",
            Rule::ItemsAccessed => "SKC",
            Rule::ItemsThrottled => "SKT",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }

    fn counts_throttles(self) -> bool {
        matches!(self, Rule::PartitionKeysThrottled | Rule::ItemsThrottled)
    }

    fn per_item(self) -> bool {
        matches!(self, Rule::ItemsAccessed | Rule::ItemsThrottled)
    }

    /// Whether the rule exists for a table or index (`sorted`: it has a sort key) in a mode
    /// (`throttled_only`: THROTTLED_KEYS).
    pub fn exists(self, sorted: bool, throttled_only: bool) -> bool {
        (sorted || !self.per_item()) && (!throttled_only || self.counts_throttles())
    }
}

/// A key's count and how much of it may come from the keys it displaced.
#[derive(Debug, Clone, Copy, Default)]
struct Count {
    value: f64,
    overcount: f64,
}

/// Space-Saving's counters for one rule and minute.
#[derive(Debug, Default)]
struct TopKeys {
    counts: HashMap<Vec<String>, Count>,
}

impl TopKeys {
    fn add(&mut self, key: Vec<String>, amount: f64) {
        if let Some(count) = self.counts.get_mut(&key) {
            count.value += amount;
            return;
        }
        if self.counts.len() < KEYS_PER_MINUTE_MAX {
            self.counts.insert(
                key,
                Count {
                    value: amount,
                    overcount: 0.0,
                },
            );
            return;
        }
        let smallest = self
            .counts
            .iter()
            .min_by(|a, b| a.1.value.total_cmp(&b.1.value))
            .map(|(key, count)| (key.clone(), *count));
        if let Some((smallest_key, smallest)) = smallest {
            self.counts.remove(&smallest_key);
            self.counts.insert(
                key,
                Count {
                    value: smallest.value + amount,
                    overcount: smallest.value,
                },
            );
        }
        debug_assert!(self.counts.len() <= KEYS_PER_MINUTE_MAX);
    }
}

/// One minute of one table's or index's counters.
#[derive(Debug)]
struct Minute {
    minute: u64,
    rules: [TopKeys; 4],
}

/// What is followed of one table or index.
#[derive(Debug, Default)]
struct Followed {
    minutes: VecDeque<Minute>,
}

impl Followed {
    fn add(&mut self, now_minute: u64, rule: Rule, key: Vec<String>, amount: f64) {
        if self.minutes.back().is_none_or(|m| m.minute != now_minute) {
            self.minutes.push_back(Minute {
                minute: now_minute,
                rules: Default::default(),
            });
        }
        while self
            .minutes
            .front()
            .is_some_and(|m| m.minute + WINDOW_MINUTES <= now_minute)
        {
            self.minutes.pop_front();
        }
        if let Some(minute) = self.minutes.back_mut() {
            minute.rules[rule.slot()].add(key, amount);
        }
    }
}

/// One key's share in a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contributor {
    /// The partition key value, then the sort key value for the item rules, as text (a
    /// number's digits, a binary value in base64).
    pub keys: Vec<String>,
    /// Consumed throughput units (accessed rules) or throttled requests (throttled rules).
    pub value: f64,
    /// How much of `value` may belong to other keys (0 while the bound was not reached).
    pub overcount_max: f64,
}

/// One rule's ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleReport {
    /// `PKC`, `PKT`, `SKC` or `SKT`.
    pub rule: &'static str,
    pub contributors: Vec<Contributor>,
}

/// Who the Contributors are, keyed by table id and index name (None: the table).
type FollowedKey = (String, Option<String>);

/// The counters of every table and index with Contributor Insights enabled.
pub struct Contributors {
    /// Whether any table may have insights enabled: while false, the capacity code skips
    /// everything here (set when one is enabled, recomputed when one is disabled).
    observing: AtomicBool,
    followed: Mutex<HashMap<FollowedKey, Followed>>,
    clock: Clock,
}

impl Contributors {
    pub(crate) fn new(clock: Clock) -> Contributors {
        Contributors {
            observing: AtomicBool::new(false),
            followed: Mutex::default(),
            clock,
        }
    }

    /// Whether requests must be reported here at all.
    pub(crate) fn observing(&self) -> bool {
        self.observing.load(Ordering::Relaxed)
    }

    pub(crate) fn set_observing(&self, observing: bool) {
        self.observing.store(observing, Ordering::Relaxed);
    }

    /// Forgets the counters of a table or index (its insights were disabled).
    pub(crate) fn forget(&self, table: &TableDef, index: Option<&str>) {
        self.followed
            .lock()
            .remove(&(table.id.clone(), index.map(str::to_string)));
    }

    /// Units a request consumed on `partition` (and `sort`, for a single item) of the table
    /// or of GSI `index`; `units` are read units, or write units × 3.
    pub(crate) fn accessed(
        &self,
        table: &TableDef,
        index: Option<&str>,
        partition: &[AttributeValue],
        sort: Option<&AttributeValue>,
        units: f64,
    ) {
        if units > 0.0 {
            self.add(table, index, partition, sort, false, units);
        }
    }

    /// A request on `partition` (and `sort`) of the table or of GSI `index` was throttled.
    pub(crate) fn throttled(
        &self,
        table: &TableDef,
        index: Option<&str>,
        partition: &[AttributeValue],
        sort: Option<&AttributeValue>,
    ) {
        self.add(table, index, partition, sort, true, 1.0);
    }

    /// Write units put on a GSI partition known only by its encoded key (`core::keys`).
    pub(crate) fn accessed_encoded_partition(
        &self,
        table: &TableDef,
        index: &str,
        encoded: &[u8],
        write_units: f64,
    ) {
        let Some(gsi) = table.global_indexes.iter().find(|gsi| gsi.name == index) else {
            return;
        };
        // The hash of the encoded values comes first, then each HASH component.
        let types: Vec<ScalarType> = gsi
            .key
            .hash_attributes()
            .map(|attribute| attribute.scalar_type())
            .collect();
        let Some(Ok(values)) = encoded
            .get(keys::HASH_BYTES..)
            .map(|rest| keys::decode_values(rest, &types))
        else {
            return;
        };
        self.accessed(table, Some(index), &values, None, write_units * 3.0);
    }

    fn add(
        &self,
        table: &TableDef,
        index: Option<&str>,
        partition: &[AttributeValue],
        sort: Option<&AttributeValue>,
        throttle: bool,
        amount: f64,
    ) {
        let Some(definition) = table
            .settings
            .contributor_insights
            .iter()
            .find(|insights| insights.enabled && insights.index.as_deref() == index)
        else {
            return;
        };
        let throttled_only = definition.mode == THROTTLED_KEYS;
        let now_minute = self.clock.now_millis() / 60_000;
        let mut followed = self.followed.lock();
        let key = (table.id.clone(), index.map(str::to_string));
        if !followed.contains_key(&key) && followed.len() >= RESOURCES_MAX {
            return;
        }
        let entry = followed.entry(key).or_default();
        // A multi-attribute GSI partition is named by its HASH components in schema order.
        let partition_text = partition.iter().map(key_text).collect::<Vec<_>>().join("|");
        for rule in Rule::ALL {
            if rule.counts_throttles() != throttle || !rule.exists(true, throttled_only) {
                continue;
            }
            let keys = match (rule.per_item(), sort) {
                (false, _) => vec![partition_text.clone()],
                (true, Some(sort)) => vec![partition_text.clone(), key_text(sort)],
                (true, None) => continue,
            };
            entry.add(now_minute, rule, keys, amount);
        }
    }

    /// The ranking of each of `rules` over the last `minutes` minutes (at most
    /// [`WINDOW_MINUTES`]), `top` contributors each (at most [`REPORT_TOP_MAX`]), largest
    /// first, ties in key order.
    pub fn report(
        &self,
        table: &TableDef,
        index: Option<&str>,
        rules: &[Rule],
        minutes: u64,
        top: usize,
    ) -> Vec<RuleReport> {
        let now_minute = self.clock.now_millis() / 60_000;
        let minutes = minutes.clamp(1, WINDOW_MINUTES);
        let top = top.min(REPORT_TOP_MAX);
        let followed = self.followed.lock();
        let entry = followed.get(&(table.id.clone(), index.map(str::to_string)));
        rules
            .iter()
            .map(|&rule| {
                let mut merged: HashMap<&Vec<String>, Count> = HashMap::new();
                for minute in entry.into_iter().flat_map(|e| e.minutes.iter()) {
                    if minute.minute + minutes <= now_minute {
                        continue;
                    }
                    for (key, count) in &minute.rules[rule.slot()].counts {
                        let slot = merged.entry(key).or_default();
                        slot.value += count.value;
                        slot.overcount += count.overcount;
                    }
                }
                let mut contributors: Vec<Contributor> = merged
                    .into_iter()
                    .map(|(keys, count)| Contributor {
                        keys: keys.clone(),
                        value: count.value,
                        overcount_max: count.overcount,
                    })
                    .collect();
                contributors.sort_by(|a, b| {
                    b.value
                        .total_cmp(&a.value)
                        .then_with(|| a.keys.cmp(&b.keys))
                });
                contributors.truncate(top);
                RuleReport {
                    rule: rule.code(),
                    contributors,
                }
            })
            .collect()
    }
}

/// `THROTTLED_KEYS`: only throttled keys are ranked.
pub const THROTTLED_KEYS: &str = "THROTTLED_KEYS";
/// `ACCESSED_AND_THROTTLED_KEYS`, the default mode.
pub const ACCESSED_AND_THROTTLED_KEYS: &str = "ACCESSED_AND_THROTTLED_KEYS";

/// A key value as a contributor's key text: a string as is, a number's digits, a binary
/// value in base64 (as CloudWatch shows them).
fn key_text(value: &AttributeValue) -> String {
    match value {
        AttributeValue::S(text) => text.clone(),
        AttributeValue::N(number) => number.to_string(),
        AttributeValue::B(bytes) => shoal_model::json::encode_base64(bytes),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_saving_keeps_heavy_keys_and_bounds_memory() {
        let mut top = TopKeys::default();
        // One key gets a unit in every other arrival; thousands of others one unit once.
        for i in 0..10_000u32 {
            if i % 2 == 0 {
                top.add(vec!["hot".to_string()], 1.0);
            } else {
                top.add(vec![format!("cold-{i}")], 1.0);
            }
        }
        assert_eq!(top.counts.len(), KEYS_PER_MINUTE_MAX);
        let hot = top.counts[&vec!["hot".to_string()]];
        // The hot key arrived first, so it never was displaced: its count is exact.
        assert_eq!(hot.value, 5_000.0);
        assert_eq!(hot.overcount, 0.0);
        let largest_cold = top
            .counts
            .iter()
            .filter(|(key, _)| key[0] != "hot")
            .map(|(_, count)| count.value)
            .fold(0.0, f64::max);
        // Space-Saving's bound: no count exceeds its true value by more than N / capacity.
        assert!(largest_cold <= 1.0 + 10_000.0 / KEYS_PER_MINUTE_MAX as f64);
    }

    #[test]
    fn rules_exist_by_sort_key_and_mode() {
        let existing = |sorted, throttled_only| {
            Rule::ALL
                .into_iter()
                .filter(|rule| rule.exists(sorted, throttled_only))
                .map(Rule::code)
                .collect::<Vec<_>>()
        };
        assert_eq!(existing(false, false), ["PKC", "PKT"]);
        assert_eq!(existing(true, false), ["PKC", "PKT", "SKC", "SKT"]);
        assert_eq!(existing(false, true), ["PKT"]);
        assert_eq!(existing(true, true), ["PKT", "SKT"]);
    }
}
