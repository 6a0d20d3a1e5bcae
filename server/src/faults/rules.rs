//! The fault rule format: what `--faults FILE` holds and `/shoal/faults` takes and lists.
//!
//! A rule set is `{"seed"?: N, "rules": [RULE, ...]}`; a rule is
//!
//! ```json
//! {"id": "slow-puts", "operation": "PutItem", "table": "Orders", "index": "ByDate",
//!  "error": {"code": "ThrottlingException", "message": "...", "probability": 0.5,
//!            "after_apply": false},
//!  "latency": {"fixed_ms": 50},
//!  "drop_connection": {"probability": 0.1}}
//! ```
//!
//! `operation` and `table` are a name or `*`; `id` (default `rule-N`) and `index` are
//! optional; a rule has at least one of `error`, `latency` and `drop_connection`. Latency is
//! `{"fixed_ms": N}`, `{"uniform_ms": [LOW, HIGH]}` or `{"normal_ms": {"mean": M, "stddev":
//! S}}` (negative samples count as 0). Unknown members are refused, so a misspelt knob is an
//! error rather than a rule that silently does nothing. docs/TESTING-TOOLS.md is the user's
//! description of the same format.

use serde::{Deserialize, Serialize};

/// The longest latency a rule may add: longer is surely a mistake (and would outlast
/// every client's timeout).
pub const LATENCY_MS_MAX: f64 = 600_000.0;

/// Longest rule id.
const ID_BYTES_MAX: usize = 128;

/// The operations a `TransactionConflict` can be injected into: those DynamoDB reports a
/// conflict on (SPEC-2 §7.3).
pub const CONFLICT_OPERATIONS: &[&str] = &[
    "TransactWriteItems",
    "TransactGetItems",
    "ExecuteTransaction",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
];

/// A whole rule set, as `--faults FILE` holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSet {
    /// Seeds the random draws of every rule, so that a run can be replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub rules: Vec<FaultRule>,
}

/// One rule: which requests it matches and what it does to them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// An operation name, or `*` for all.
    pub operation: String,
    /// A table name, or `*` for all.
    pub table: String,
    /// Matches only requests naming this index (`IndexName`: Query and Scan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorFault>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_connection: Option<DropConnection>,
}

/// An error answered instead of the operation's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorFault {
    pub code: FaultCode,
    /// Replaces DynamoDB's text for the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub probability: f64,
    /// Run the operation (a write is applied), then answer the error instead of its result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_apply: bool,
}

/// The errors a rule can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FaultCode {
    ProvisionedThroughputExceededException,
    ThrottlingException,
    RequestLimitExceeded,
    InternalServerError,
    ServiceUnavailable,
    /// A cancellation reason in transactions, `TransactionConflictException` for single
    /// writes.
    TransactionConflict,
}

impl FaultCode {
    /// The name the rule spells it with, for metrics labels.
    pub fn name(self) -> &'static str {
        match self {
            FaultCode::ProvisionedThroughputExceededException => {
                "ProvisionedThroughputExceededException"
            }
            FaultCode::ThrottlingException => "ThrottlingException",
            FaultCode::RequestLimitExceeded => "RequestLimitExceeded",
            FaultCode::InternalServerError => "InternalServerError",
            FaultCode::ServiceUnavailable => "ServiceUnavailable",
            FaultCode::TransactionConflict => "TransactionConflict",
        }
    }
}

/// Time added before the request is answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Latency {
    FixedMs(f64),
    UniformMs([f64; 2]),
    NormalMs(Normal),
}

/// A normal distribution, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Normal {
    pub mean: f64,
    pub stddev: f64,
}

/// The connection closed without an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropConnection {
    pub probability: f64,
}

impl FaultRule {
    /// Checks what serde cannot: ranges, names, and that the rule does something.
    /// `operations` are the names the server serves.
    pub fn validate(&self, operations: &[&str]) -> Result<(), String> {
        if let Some(id) = &self.id {
            let valid = !id.is_empty()
                && id.len() <= ID_BYTES_MAX
                && id
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte));
            if !valid {
                return Err(format!(
                    "rule id {id:?} must be 1 to {ID_BYTES_MAX} letters, digits, '-', '_' or '.'"
                ));
            }
        }
        if self.operation != "*" && !operations.contains(&self.operation.as_str()) {
            return Err(format!("unknown operation {:?}", self.operation));
        }
        if self.table.is_empty() {
            return Err("table must be a table name or \"*\"".to_owned());
        }
        if self.error.is_none() && self.latency.is_none() && self.drop_connection.is_none() {
            return Err("a rule needs at least one of error, latency and drop_connection".into());
        }
        if let Some(error) = &self.error {
            check_probability("error.probability", error.probability)?;
            if error.code == FaultCode::TransactionConflict
                && self.operation != "*"
                && !CONFLICT_OPERATIONS.contains(&self.operation.as_str())
            {
                return Err(format!(
                    "TransactionConflict applies only to {}",
                    CONFLICT_OPERATIONS.join(", ")
                ));
            }
        }
        if let Some(drop) = &self.drop_connection {
            check_probability("drop_connection.probability", drop.probability)?;
        }
        if let Some(latency) = &self.latency {
            latency.validate()?;
        }
        Ok(())
    }
}

impl Latency {
    fn validate(&self) -> Result<(), String> {
        let in_range = |ms: f64| ms.is_finite() && (0.0..=LATENCY_MS_MAX).contains(&ms);
        let valid = match self {
            Latency::FixedMs(ms) => in_range(*ms),
            Latency::UniformMs([low, high]) => in_range(*low) && in_range(*high) && low <= high,
            Latency::NormalMs(Normal { mean, stddev }) => in_range(*mean) && in_range(*stddev),
        };
        if valid {
            Ok(())
        } else {
            Err(format!(
                "latency values must be 0 to {LATENCY_MS_MAX} ms (uniform_ms: [low, high], low <= high)"
            ))
        }
    }
}

fn check_probability(name: &str, probability: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&probability) {
        Ok(())
    } else {
        Err(format!("{name} must be from 0 to 1, not {probability}"))
    }
}

/// Parses a rule set (the `--faults FILE` format), checking every rule.
pub fn parse_rule_set(text: &str, operations: &[&str]) -> Result<RuleSet, String> {
    let set: RuleSet = serde_json::from_str(text).map_err(|error| error.to_string())?;
    for (index, rule) in set.rules.iter().enumerate() {
        rule.validate(operations)
            .map_err(|error| format!("rule {index}: {error}"))?;
        let earlier = &set.rules[..index];
        if let Some(id) = rule
            .id
            .as_ref()
            .filter(|id| earlier.iter().any(|r| r.id.as_ref() == Some(*id)))
        {
            return Err(format!(
                "rule {index}: the id {id:?} is taken by an earlier rule"
            ));
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPERATIONS: &[&str] = &["PutItem", "GetItem", "Query"];

    fn rule(text: &str) -> Result<FaultRule, String> {
        let rule: FaultRule = serde_json::from_str(text).map_err(|error| error.to_string())?;
        rule.validate(OPERATIONS)?;
        Ok(rule)
    }

    #[test]
    fn every_knob_parses() {
        let parsed = rule(
            r#"{"id": "a", "operation": "Query", "table": "T", "index": "I",
                "error": {"code": "ThrottlingException", "message": "m", "probability": 0.5,
                          "after_apply": true},
                "latency": {"normal_ms": {"mean": 50, "stddev": 10}},
                "drop_connection": {"probability": 0.1}}"#,
        )
        .unwrap();
        assert_eq!(parsed.index.as_deref(), Some("I"));
        assert!(parsed.error.as_ref().unwrap().after_apply);
        for latency in [r#"{"fixed_ms": 5}"#, r#"{"uniform_ms": [1, 2]}"#] {
            let text = format!(r#"{{"operation": "*", "table": "*", "latency": {latency}}}"#);
            rule(&text).unwrap();
        }
    }

    #[test]
    fn unknown_members_and_bad_values_are_refused() {
        for (text, expected) in [
            (
                r#"{"operation": "*", "table": "*", "latncy": {"fixed_ms": 5}}"#,
                "unknown field",
            ),
            (
                r#"{"operation": "*", "table": "*", "latency": {"fixed_ms": 5, "x": 1}}"#,
                "",
            ),
            (
                r#"{"operation": "*", "table": "*", "error": {"code": "Nope", "probability": 1}}"#,
                "unknown variant",
            ),
            (
                r#"{"operation": "*", "table": "*", "error": {"code": "ThrottlingException", "probability": 1.5}}"#,
                "from 0 to 1",
            ),
            (
                r#"{"operation": "Nope", "table": "*", "latency": {"fixed_ms": 5}}"#,
                "unknown operation",
            ),
            (r#"{"operation": "*", "table": "*"}"#, "at least one"),
            (
                r#"{"operation": "*", "table": "*", "latency": {"uniform_ms": [5, 1]}}"#,
                "low <= high",
            ),
            (
                r#"{"operation": "*", "table": "*", "latency": {"fixed_ms": -1}}"#,
                "0 to",
            ),
            (
                r#"{"operation": "GetItem", "table": "*", "error": {"code": "TransactionConflict", "probability": 1}}"#,
                "applies only to",
            ),
            (
                r#"{"id": "a b", "operation": "*", "table": "*", "latency": {"fixed_ms": 1}}"#,
                "rule id",
            ),
        ] {
            let error = rule(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn a_rule_set_names_the_bad_rule() {
        let error = parse_rule_set(
            r#"{"seed": 7, "rules": [{"operation": "*", "table": "*", "latency": {"fixed_ms": 1}},
                                     {"operation": "*", "table": "*"}]}"#,
            OPERATIONS,
        )
        .unwrap_err();
        assert!(error.starts_with("rule 1: "), "{error}");
        assert!(parse_rule_set(r#"{"rules": [], "sed": 1}"#, OPERATIONS).is_err());
        let twice = r#"{"id": "a", "operation": "*", "table": "*", "latency": {"fixed_ms": 1}}"#;
        let error =
            parse_rule_set(&format!(r#"{{"rules": [{twice}, {twice}]}}"#), OPERATIONS).unwrap_err();
        assert!(error.contains("taken"), "{error}");
    }
}
