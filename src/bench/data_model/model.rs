//! The model file of `shoal bench --model`: tables, value generators, items to load, access
//! patterns and the run, in JSON (docs/DATA-MODEL-BENCH.md describes it with two examples).
//!
//! Requests are DynamoDB's own request bodies; a string may hold `${name}` placeholders,
//! each filled from the generator `name` (one draw per request: every `${name}` of one
//! request gets the same value). Unknown members are refused, so nothing a user writes is
//! silently ignored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A whole model file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Model {
    /// Shown in the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// CreateTable requests, as sent to DynamoDB.
    pub tables: Vec<Value>,
    /// Value generators by name.
    #[serde(default)]
    pub generators: BTreeMap<String, Generator>,
    /// Items written before the run (by BatchWriteItem, 25 at a time).
    #[serde(default)]
    pub load: Vec<Load>,
    /// The access patterns the run draws from.
    pub patterns: Vec<Pattern>,
    /// How the run goes.
    pub run: Run,
    /// Prices for the cost estimate (defaults: [`Prices::default`]).
    #[serde(default)]
    pub prices: Prices,
}

/// How one placeholder's values are made.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Generator {
    /// What values look like.
    #[serde(rename = "type")]
    pub kind: GeneratorKind,
    /// Text before every value (`user#`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// For `string`: the length range in characters, inclusive (default [8, 8]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<[u32; 2]>,
    /// For `number`: the value range, inclusive (default [0, 1000000]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[i64; 2]>,
    /// How many distinct values there are (default: as many as the range or length allow,
    /// capped at 2^32). Values are numbered 0..cardinality; the distribution picks a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cardinality: Option<u64>,
    /// How a value is picked among the `cardinality` values (default uniform).
    #[serde(default, skip_serializing_if = "Distribution::is_uniform")]
    pub distribution: Distribution,
    /// The draws `${name#0}`, `${name#1}`, … of one request are all different values (a
    /// repeat is drawn again): the keys of a batch's or transaction's parts, which DynamoDB
    /// refuses to repeat in one call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub distinct: bool,
}

/// The kinds of value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GeneratorKind {
    /// Text of `length` characters; value number n always gives the same text.
    String,
    /// An integer in `range`.
    Number,
    /// 0, 1, 2, … in draw order across the whole run (sequential sort keys).
    Sequence,
    /// Milliseconds since the Unix epoch at the draw (time-ordered sort keys).
    Timestamp,
    /// A random UUID (v4 form).
    Uuid,
}

/// How a value number is picked.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Distribution {
    /// Every value equally likely.
    #[default]
    Uniform,
    /// Zipf with exponent `s` (> 0): value 0 the most likely.
    Zipf(f64),
    /// `share` (0..1) of draws go to the first `keys` values; the rest are uniform.
    Hot { share: f64, keys: u64 },
    /// These values, verbatim (no prefix), each with its share of the draws (shares summing
    /// to at most 1); the rest of the draws are uniform over the generator's values. How
    /// `shoal bench model-from` writes a recording's hot keys by name.
    Named(Vec<NamedValue>),
}

impl Distribution {
    /// The default (left out when a model is written).
    pub fn is_uniform(&self) -> bool {
        *self == Distribution::Uniform
    }
}

/// A value of a [`Distribution::Named`] and its share of the draws.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct NamedValue {
    pub value: String,
    pub share: f64,
}

/// Items loaded into a table before the run.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Load {
    pub table: String,
    pub count: u64,
    /// The item in DynamoDB JSON, with placeholders.
    pub item: Value,
}

/// One access pattern.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Pattern {
    pub name: String,
    /// The DynamoDB operation (PutItem, UpdateItem, DeleteItem, GetItem, Query, Scan,
    /// BatchWriteItem, BatchGetItem, TransactWriteItems, TransactGetItems, ExecuteStatement,
    /// BatchExecuteStatement, ExecuteTransaction).
    pub operation: String,
    /// Its request body, with placeholders.
    pub request: Value,
    /// Relative share of the run's operations (default 1); ignored if `rate` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Operations per second for this pattern alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

/// Attempts of one call by default: botocore's for DynamoDB, with the same back-off (50 ms,
/// doubling).
pub const ATTEMPTS_DEFAULT: u32 = 10;
/// Most attempts a model may ask for.
pub const ATTEMPTS_MAX: u32 = 20;

/// The run phase.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Run {
    /// How long it runs (seconds); at least one of `seconds` and `operations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// How many operations it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<u64>,
    /// Concurrent workers (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
    /// Total operations per second for the weighted patterns (default: as fast as it goes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// The seed of every random draw (default 1): the same model runs the same requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Attempts of one call when it is throttled or a batch leaves items unprocessed, as
    /// the SDKs' `max_attempts` (default 10, botocore's for DynamoDB; 1 never retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
}

/// Prices for the cost estimate, in US dollars.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Prices {
    /// Which price list (shown in the report).
    pub region: String,
    /// On-demand: per million write request units.
    pub write_request_units_per_million: f64,
    /// On-demand: per million read request units.
    pub read_request_units_per_million: f64,
    /// Provisioned: per write capacity unit and hour.
    pub write_capacity_unit_hour: f64,
    /// Provisioned: per read capacity unit and hour.
    pub read_capacity_unit_hour: f64,
    /// Storage: per GB and month.
    pub storage_gb_month: f64,
    /// Provisioned capacity is the modelled rate divided by this (auto scaling's default
    /// target utilisation, 0.7).
    pub provisioned_utilization: f64,
}

impl Default for Prices {
    /// DynamoDB Standard table class, us-east-1, as published in 2025 (on-demand after the
    /// November 2024 price cut).
    fn default() -> Prices {
        Prices {
            region: "us-east-1".to_string(),
            write_request_units_per_million: 0.625,
            read_request_units_per_million: 0.125,
            write_capacity_unit_hour: 0.00065,
            read_capacity_unit_hour: 0.00013,
            storage_gb_month: 0.25,
            provisioned_utilization: 0.7,
        }
    }
}

/// Operations a pattern may name.
pub const OPERATIONS: &[&str] = &[
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "GetItem",
    "Query",
    "Scan",
    "BatchWriteItem",
    "BatchGetItem",
    "TransactWriteItems",
    "TransactGetItems",
    "ExecuteStatement",
    "BatchExecuteStatement",
    "ExecuteTransaction",
];

/// Most workers a run may have.
pub const CONCURRENCY_MAX: usize = 1024;

impl Model {
    /// Reads and checks a model file's text.
    pub fn parse(text: &str) -> Result<Model, String> {
        let model: Model =
            serde_json::from_str(text).map_err(|e| format!("the model file is not valid: {e}"))?;
        model.check()?;
        Ok(model)
    }

    fn check(&self) -> Result<(), String> {
        if self.tables.is_empty() {
            return Err("the model has no tables".into());
        }
        if self.patterns.is_empty() {
            return Err("the model has no patterns".into());
        }
        if self.run.seconds.is_none() && self.run.operations.is_none() {
            return Err("run needs `seconds` or `operations`".into());
        }
        if let Some(seconds) = self.run.seconds {
            if !(seconds > 0.0 && seconds.is_finite()) {
                return Err(format!("run.seconds must be positive, not {seconds}"));
            }
        }
        if let Some(attempts) = self.run.attempts {
            if !(1..=ATTEMPTS_MAX).contains(&attempts) {
                return Err(format!(
                    "run.attempts must be 1..={ATTEMPTS_MAX}, not {attempts}"
                ));
            }
        }
        let concurrency = self.run.concurrency.unwrap_or(4);
        if concurrency == 0 || concurrency > CONCURRENCY_MAX {
            return Err(format!(
                "run.concurrency must be 1..={CONCURRENCY_MAX}, not {concurrency}"
            ));
        }
        for rate in self
            .run
            .rate
            .iter()
            .chain(self.patterns.iter().filter_map(|p| p.rate.as_ref()))
        {
            if !(*rate > 0.0 && rate.is_finite()) {
                return Err(format!("a rate must be positive, not {rate}"));
            }
        }
        for pattern in &self.patterns {
            if !OPERATIONS.contains(&pattern.operation.as_str()) {
                return Err(format!(
                    "pattern `{}`: unknown operation `{}` (one of {})",
                    pattern.name,
                    pattern.operation,
                    OPERATIONS.join(", ")
                ));
            }
            if let Some(weight) = pattern.weight {
                if !(weight >= 0.0 && weight.is_finite()) {
                    return Err(format!("pattern `{}`: weight must be ≥ 0", pattern.name));
                }
            }
        }
        for (name, generator) in &self.generators {
            generator
                .check()
                .map_err(|e| format!("generator `{name}`: {e}"))?;
        }
        Ok(())
    }
}

impl Generator {
    fn check(&self) -> Result<(), String> {
        if let Some([low, high]) = self.length {
            if low > high || high > 400_000 {
                return Err(format!(
                    "length [{low}, {high}] is not a range of 0..=400000"
                ));
            }
        }
        if let Some([low, high]) = self.range {
            if low > high {
                return Err(format!("range [{low}, {high}] is empty"));
            }
        }
        if self.cardinality == Some(0) {
            return Err("cardinality must be at least 1".into());
        }
        match self.distribution {
            Distribution::Uniform => {}
            Distribution::Zipf(s) => {
                if !(s > 0.0 && s.is_finite()) {
                    return Err(format!("zipf exponent must be positive, not {s}"));
                }
            }
            Distribution::Hot { share, keys } => {
                if !(0.0..=1.0).contains(&share) || keys == 0 {
                    return Err("hot needs a share in 0..=1 and at least one key".into());
                }
            }
            Distribution::Named(ref values) => {
                let total: f64 = values.iter().map(|v| v.share).sum();
                if values.is_empty()
                    || values
                        .iter()
                        .any(|v| !(v.share >= 0.0 && v.share.is_finite()))
                    || total > 1.0 + 1e-3
                {
                    return Err(
                        "named needs at least one value, shares ≥ 0 summing to at most 1".into(),
                    );
                }
                if self.kind == GeneratorKind::Number {
                    if let Some(v) = values.iter().find(|v| v.value.parse::<f64>().is_err()) {
                        return Err(format!("named value `{}` is not a number", v.value));
                    }
                }
            }
        }
        Ok(())
    }
}
