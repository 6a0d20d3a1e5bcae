//! The rules in force, the seeded random draws that decide each request's faults, and the
//! counts of what was injected.
//!
//! Every rule that matches a request is applied, in rule order: their latencies add up, the
//! first error that fires is the one answered, and a dropped connection wins over both.
//! A matched rule makes the same draws whatever they decide (one per knob it has: latency,
//! error, drop), so with a seed the same sequence of requests meets the same sequence of
//! faults.

use super::errors::injected_error;
use super::rules::{FaultCode, FaultRule, Latency, RuleSet, CONFLICT_OPERATIONS};
use super::target::RequestTarget;
use parking_lot::Mutex;
use serde_json::{json, Value};
use shoal_model::ApiError;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the rules decided for one request.
#[derive(Debug, Default)]
pub struct Decision {
    /// Wait this long before going on.
    pub latency: Duration,
    /// Close the connection without an answer (the operation does not run).
    pub drop_connection: bool,
    /// Answer this error; after running the operation when `after_apply`.
    pub error: Option<InjectedError>,
}

#[derive(Debug)]
pub struct InjectedError {
    pub error: ApiError,
    pub after_apply: bool,
}

/// The fault rules of a server and their counters.
pub struct FaultInjector {
    operations: Vec<&'static str>,
    /// False while there are no rules, so requests skip the lock.
    active: AtomicBool,
    state: Mutex<State>,
}

struct State {
    seed: u64,
    random: SplitMix64,
    rules: Vec<ActiveRule>,
    /// Numbers the ids of rules added without one.
    next_id: u64,
    /// Injected faults by (kind, error code or "").
    injected: BTreeMap<(&'static str, &'static str), u64>,
}

struct ActiveRule {
    rule: FaultRule,
    id: String,
    matched: u64,
    injected: u64,
}

impl FaultInjector {
    /// No rules; `operations` are the names rules may name.
    pub fn new(operations: &[&'static str]) -> FaultInjector {
        // 53 bits, so that the seed `GET /shoal/faults` shows survives any JSON parser
        // (JavaScript's numbers are doubles) and can be posted back to replay a run.
        let seed = rand::random::<u64>() >> 11;
        FaultInjector {
            operations: operations.to_vec(),
            active: AtomicBool::new(false),
            state: Mutex::new(State {
                seed,
                random: SplitMix64(seed),
                rules: Vec::new(),
                next_id: 1,
                injected: BTreeMap::new(),
            }),
        }
    }

    /// The operation names rules may name.
    pub fn operations(&self) -> &[&'static str] {
        &self.operations
    }

    /// Adds `set`'s rules after the present ones (all or none) and, if it has a seed,
    /// restarts the draws from it. Returns the rules as listed.
    pub fn add(&self, set: RuleSet) -> Result<Vec<Value>, String> {
        let mut state = self.state.lock();
        let mut added = Vec::with_capacity(set.rules.len());
        let mut next_id = state.next_id;
        for rule in set.rules {
            rule.validate(&self.operations)?;
            let id = match &rule.id {
                Some(id) => id.clone(),
                None => loop {
                    let id = format!("rule-{next_id}");
                    next_id += 1;
                    if !state.has_id(&id) && !added.iter().any(|r: &ActiveRule| r.id == id) {
                        break id;
                    }
                },
            };
            if state.has_id(&id) || added.iter().any(|r: &ActiveRule| r.id == id) {
                return Err(format!("a rule with id {id:?} exists already"));
            }
            added.push(ActiveRule {
                rule,
                id,
                matched: 0,
                injected: 0,
            });
        }
        state.next_id = next_id;
        if let Some(seed) = set.seed {
            state.seed = seed;
            state.random = SplitMix64(seed);
        }
        let listed = added.iter().map(ActiveRule::to_json).collect();
        state.rules.extend(added);
        self.active
            .store(!state.rules.is_empty(), Ordering::Release);
        Ok(listed)
    }

    /// Removes the rule with `id`; false if there is none.
    pub fn remove(&self, id: &str) -> bool {
        let mut state = self.state.lock();
        let before = state.rules.len();
        state.rules.retain(|rule| rule.id != id);
        self.active
            .store(!state.rules.is_empty(), Ordering::Release);
        state.rules.len() != before
    }

    /// Removes every rule.
    pub fn clear(&self) {
        let mut state = self.state.lock();
        state.rules.clear();
        self.active.store(false, Ordering::Release);
    }

    /// `{"seed": N, "rules": [RULE with "id", "matched" and "injected" counts, ...]}`.
    pub fn list(&self) -> Value {
        let state = self.state.lock();
        let rules: Vec<Value> = state.rules.iter().map(ActiveRule::to_json).collect();
        json!({"seed": state.seed, "rules": rules})
    }

    /// Decides the faults of a request of `operation` with `body`; `None` when no rule
    /// matches.
    pub fn decide(&self, operation: &str, body: &[u8]) -> Option<Decision> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let mut state = self.state.lock();
        // A conflict's cancellation reasons name each action, so they need the tables too.
        let needs_target = state.rules.iter().any(|active| {
            let rule = &active.rule;
            operation_matches(rule, operation)
                && (rule.table != "*"
                    || rule.index.is_some()
                    || rule
                        .error
                        .as_ref()
                        .is_some_and(|error| error.code == FaultCode::TransactionConflict))
        });
        let target = if needs_target {
            RequestTarget::of(operation, body)
        } else {
            RequestTarget::default()
        };
        let mut decision = Decision::default();
        let mut matched_any = false;
        let State {
            random,
            rules,
            injected,
            ..
        } = &mut *state;
        for active in rules.iter_mut() {
            let rule = &active.rule;
            let matches = operation_matches(rule, operation)
                && target.names_table(&rule.table)
                && rule
                    .index
                    .as_ref()
                    .is_none_or(|index| target.index.as_ref() == Some(index));
            if !matches {
                continue;
            }
            matched_any = true;
            active.matched += 1;
            let mut fired = false;
            if let Some(latency) = &rule.latency {
                decision.latency += sample(latency, random);
                *injected.entry(("latency", "")).or_default() += 1;
                fired = true;
            }
            if let Some(error) = &rule.error {
                let draw = random.unit();
                if draw < error.probability && decision.error.is_none() {
                    let code = error.code;
                    let kind = if error.after_apply {
                        "error_after_apply"
                    } else {
                        "error"
                    };
                    *injected.entry((kind, code.name())).or_default() += 1;
                    decision.error = Some(InjectedError {
                        error: injected_error(
                            code,
                            error.message.as_deref(),
                            operation,
                            &target,
                            &rule.table,
                        ),
                        after_apply: error.after_apply,
                    });
                    fired = true;
                }
            }
            if let Some(drop) = &rule.drop_connection {
                if random.unit() < drop.probability && !decision.drop_connection {
                    decision.drop_connection = true;
                    *injected.entry(("drop_connection", "")).or_default() += 1;
                    fired = true;
                }
            }
            if fired {
                active.injected += 1;
            }
        }
        matched_any.then_some(decision)
    }

    /// Appends `shoal_injected_faults_total{kind, code}` in Prometheus text format.
    pub fn render_metrics(&self, out: &mut String) {
        let state = self.state.lock();
        out.push_str("# HELP shoal_injected_faults_total Faults injected by fault rules.\n");
        out.push_str("# TYPE shoal_injected_faults_total counter\n");
        for ((kind, code), count) in &state.injected {
            // Writing to a String cannot fail.
            let _ = if code.is_empty() {
                writeln!(
                    out,
                    "shoal_injected_faults_total{{kind=\"{kind}\"}} {count}"
                )
            } else {
                writeln!(
                    out,
                    "shoal_injected_faults_total{{kind=\"{kind}\",code=\"{code}\"}} {count}"
                )
            };
        }
    }
}

impl State {
    fn has_id(&self, id: &str) -> bool {
        self.rules.iter().any(|rule| rule.id == id)
    }
}

impl ActiveRule {
    fn to_json(&self) -> Value {
        let mut rule = self.rule.clone();
        rule.id = Some(self.id.clone());
        let mut listed = serde_json::to_value(&rule).unwrap_or_else(|_| json!({}));
        if let Some(object) = listed.as_object_mut() {
            object.insert("matched".into(), self.matched.into());
            object.insert("injected".into(), self.injected.into());
        }
        listed
    }
}

/// A `TransactionConflict` rule for `*` matches only the operations that can see one.
fn operation_matches(rule: &FaultRule, operation: &str) -> bool {
    let named = rule.operation == "*" || rule.operation == operation;
    let conflict_only = rule
        .error
        .as_ref()
        .is_some_and(|error| error.code == FaultCode::TransactionConflict)
        && rule.latency.is_none()
        && rule.drop_connection.is_none();
    named && (!conflict_only || CONFLICT_OPERATIONS.contains(&operation))
}

fn sample(latency: &Latency, random: &mut SplitMix64) -> Duration {
    let ms = match latency {
        Latency::FixedMs(ms) => *ms,
        Latency::UniformMs([low, high]) => low + (high - low) * random.unit(),
        Latency::NormalMs(normal) => {
            // Box-Muller: two uniform draws make one standard normal one.
            let u1 = random.unit().max(f64::MIN_POSITIVE);
            let u2 = random.unit();
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            normal.mean + normal.stddev * z
        }
    };
    Duration::from_secs_f64(ms.clamp(0.0, super::rules::LATENCY_MS_MAX) / 1000.0)
}

/// SplitMix64: tiny, and its sequence for a seed is fixed forever (rand's generators make
/// no such promise across versions), which is what replaying a run needs.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw from [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::rules::parse_rule_set;

    const OPERATIONS: &[&str] = &["PutItem", "GetItem", "Query", "TransactWriteItems"];

    fn injector(text: &str) -> FaultInjector {
        let injector = FaultInjector::new(OPERATIONS);
        injector
            .add(parse_rule_set(text, OPERATIONS).unwrap())
            .unwrap();
        injector
    }

    fn outcomes(injector: &FaultInjector, count: usize) -> Vec<bool> {
        (0..count)
            .map(|_| {
                injector
                    .decide("PutItem", br#"{"TableName": "T"}"#)
                    .is_some_and(|decision| decision.error.is_some())
            })
            .collect()
    }

    #[test]
    fn a_seed_replays_the_same_outcomes() {
        let rules = r#"{"seed": 42, "rules": [{"operation": "PutItem", "table": "T",
            "error": {"code": "ThrottlingException", "probability": 0.5}}]}"#;
        let first = outcomes(&injector(rules), 64);
        let second = outcomes(&injector(rules), 64);
        assert_eq!(first, second);
        // A coin with p = 0.5: both faces show in 64 throws.
        assert!(first.contains(&true) && first.contains(&false), "{first:?}");
        let other_seed = rules.replace("42", "43");
        assert_ne!(outcomes(&injector(&other_seed), 64), first);
    }

    #[test]
    fn rules_match_operation_table_and_index() {
        let faults = injector(
            r#"{"rules": [{"operation": "Query", "table": "T", "index": "I",
                "latency": {"fixed_ms": 5}}]}"#,
        );
        assert!(faults
            .decide("Query", br#"{"TableName": "T", "IndexName": "I"}"#)
            .is_some());
        assert!(faults.decide("Query", br#"{"TableName": "T"}"#).is_none());
        assert!(faults
            .decide("Query", br#"{"TableName": "U", "IndexName": "I"}"#)
            .is_none());
        assert!(faults.decide("GetItem", br#"{"TableName": "T"}"#).is_none());
        let listed = faults.list();
        assert_eq!(listed["rules"][0]["matched"], 1);
        assert_eq!(listed["rules"][0]["id"], "rule-1");
    }

    #[test]
    fn latencies_add_up_and_the_first_error_wins() {
        let faults = injector(
            r#"{"rules": [
                {"operation": "*", "table": "*", "latency": {"fixed_ms": 5},
                 "error": {"code": "InternalServerError", "probability": 1}},
                {"operation": "*", "table": "*", "latency": {"uniform_ms": [5, 5]},
                 "error": {"code": "ThrottlingException", "probability": 1}}]}"#,
        );
        let decision = faults.decide("GetItem", b"{}").unwrap();
        assert_eq!(decision.latency, Duration::from_millis(10));
        let error = decision.error.unwrap().error;
        assert_eq!(error.code, shoal_model::ErrorCode::InternalServerError);
        let mut page = String::new();
        faults.render_metrics(&mut page);
        assert!(
            page.contains("shoal_injected_faults_total{kind=\"latency\"} 2"),
            "{page}"
        );
        assert!(page.contains(
            "shoal_injected_faults_total{kind=\"error\",code=\"InternalServerError\"} 1"
        ));
    }

    #[test]
    fn ids_are_unique_and_rules_can_be_removed() {
        let faults = injector(
            r#"{"rules": [{"id": "a", "operation": "*", "table": "*", "latency": {"fixed_ms": 1}}]}"#,
        );
        let again = parse_rule_set(
            r#"{"rules": [{"id": "a", "operation": "*", "table": "*", "latency": {"fixed_ms": 1}}]}"#,
            OPERATIONS,
        )
        .unwrap();
        assert!(faults.add(again).unwrap_err().contains("exists already"));
        assert!(!faults.remove("b"));
        assert!(faults.remove("a"));
        assert!(faults.decide("GetItem", b"{}").is_none());
    }

    #[test]
    fn a_conflict_rule_for_every_operation_skips_reads() {
        let faults = injector(
            r#"{"rules": [{"operation": "*", "table": "*",
                "error": {"code": "TransactionConflict", "probability": 1}}]}"#,
        );
        assert!(faults.decide("GetItem", b"{}").is_none());
        assert!(faults.decide("PutItem", b"{}").unwrap().error.is_some());
    }

    #[test]
    fn normal_latency_stays_near_its_mean_and_never_negative() {
        let mut random = SplitMix64(1);
        let latency = Latency::NormalMs(super::super::rules::Normal {
            mean: 50.0,
            stddev: 10.0,
        });
        let samples: Vec<f64> = (0..1000)
            .map(|_| sample(&latency, &mut random).as_secs_f64() * 1000.0)
            .collect();
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        assert!((45.0..55.0).contains(&mean), "{mean}");
        let wide = Latency::NormalMs(super::super::rules::Normal {
            mean: 1.0,
            stddev: 100.0,
        });
        assert!((0..100).all(|_| sample(&wide, &mut random) >= Duration::ZERO));
    }
}
