//! `shoal bench compare`: two reports side by side — per access pattern (renamed patterns
//! paired with `--pair`) and in total — with each figure's absolute and percent change, as
//! text, GitHub-flavoured Markdown or JSON; and the `--fail-if` conditions that turn a
//! comparison into a CI gate.

use std::fmt::Write;

use serde::Serialize;

use super::report::{modelled_units_per_second, thousands, truncate, PatternReport, Report};

/// One figure of both reports and how it changed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    /// None when the first report has no such figure (a pattern only the second has).
    pub first: Option<f64>,
    /// None when the second report has no such figure.
    pub second: Option<f64>,
    /// `second - first`, when both reports have the figure.
    pub change: Option<f64>,
    /// The change in percent of `first`: 0 from 0 to 0, infinite from 0 to anything else
    /// (`null` in JSON, "new" in text).
    pub percent: Option<f64>,
}

impl Figure {
    pub fn new(first: Option<f64>, second: Option<f64>) -> Figure {
        let both = first.zip(second);
        Figure {
            first,
            second,
            change: both.map(|(first, second)| second - first),
            percent: both.map(|(first, second)| percent_change(first, second)),
        }
    }
}

/// `second` against `first` in percent. From 0 the change has no finite percentage: any
/// figure that appears where there was none is infinitely more, which trips every relative
/// limit, while 0 to 0 is no change at all.
pub fn percent_change(first: f64, second: f64) -> f64 {
    if first == second {
        0.0
    } else if first == 0.0 {
        f64::INFINITY.copysign(second)
    } else {
        (second - first) / first.abs() * 100.0
    }
}

/// One access pattern of either report or both.
#[derive(Debug, Clone, Serialize)]
pub struct PatternComparison {
    /// Its name in the first report; None when only the second has it.
    pub first: Option<String>,
    /// Its name in the second report; None when only the first has it.
    pub second: Option<String>,
    pub ops_per_second: Figure,
    pub p99_ms: Figure,
    /// Table and index read units per call.
    pub read_units_per_call: Figure,
    /// Table and index write units per call.
    pub write_units_per_call: Figure,
    pub monthly_cost_on_demand: Figure,
    /// Calls that failed other than by their condition.
    pub errors: Figure,
}

/// A labelled figure and the decimals it is shown with.
type Row<'a> = (&'static str, &'a Figure, usize);

impl PatternComparison {
    fn new(first: Option<&PatternReport>, second: Option<&PatternReport>) -> PatternComparison {
        let figure =
            |value: fn(&PatternReport) -> f64| Figure::new(first.map(value), second.map(value));
        PatternComparison {
            first: first.map(|p| p.name.clone()),
            second: second.map(|p| p.name.clone()),
            ops_per_second: figure(|p| p.ops_per_second),
            p99_ms: figure(|p| p.latency.p99_ms),
            read_units_per_call: figure(PatternReport::read_units_per_call_with_indexes),
            write_units_per_call: figure(PatternReport::write_units_per_call_with_indexes),
            monthly_cost_on_demand: figure(|p| p.monthly_cost_on_demand),
            errors: figure(|p| p.failed_calls() as f64),
        }
    }

    /// Both reports have it.
    pub fn is_paired(&self) -> bool {
        self.first.is_some() && self.second.is_some()
    }

    /// Its name, both names when it was renamed, or the one report that has it.
    pub fn title(&self) -> String {
        match (&self.first, &self.second) {
            (Some(first), Some(second)) if first == second => first.clone(),
            (Some(first), Some(second)) => format!("{first} → {second}"),
            (Some(first), None) => format!("{first} (first only)"),
            (None, Some(second)) => format!("{second} (second only)"),
            (None, None) => String::new(),
        }
    }

    fn rows(&self) -> [Row<'_>; 6] {
        [
            ("ops/s", &self.ops_per_second, 0),
            ("p99 ms", &self.p99_ms, 3),
            ("RCU per call (with indexes)", &self.read_units_per_call, 2),
            ("WCU per call (with indexes)", &self.write_units_per_call, 2),
            ("$/month on-demand", &self.monthly_cost_on_demand, 2),
            ("errors", &self.errors, 0),
        ]
    }
}

/// The two reports' totals.
#[derive(Debug, Clone, Serialize)]
pub struct TotalsComparison {
    pub monthly_cost_on_demand: Figure,
    pub monthly_cost_provisioned: Figure,
    pub monthly_cost_storage: Figure,
    /// Table and index read units per second at the modelled rate.
    pub read_units_per_second: Figure,
    /// Table and index write units per second at the modelled rate.
    pub write_units_per_second: Figure,
    /// Calls of all patterns that failed other than by their condition.
    pub errors: Figure,
    /// The hottest partition's load, in percent of the per-partition limit; None for a
    /// report without partitions.
    pub hottest_partition_percent_of_limit: Figure,
    /// Verdicts other than the one of a design nothing is wrong with.
    pub verdicts: Figure,
}

impl TotalsComparison {
    fn rows(&self) -> [Row<'_>; 8] {
        [
            ("$/month on-demand", &self.monthly_cost_on_demand, 2),
            ("$/month provisioned", &self.monthly_cost_provisioned, 2),
            ("$/month storage", &self.monthly_cost_storage, 2),
            ("RCU/s (with indexes)", &self.read_units_per_second, 1),
            ("WCU/s (with indexes)", &self.write_units_per_second, 1),
            ("errors", &self.errors, 0),
            (
                "hottest partition (% limit)",
                &self.hottest_partition_percent_of_limit,
                0,
            ),
            ("verdicts", &self.verdicts, 0),
        ]
    }
}

/// Two reports compared.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub first_model: String,
    pub second_model: String,
    /// The first report's patterns in its order, each with its partner; then the second's
    /// patterns nothing paired with.
    pub patterns: Vec<PatternComparison>,
    pub totals: TotalsComparison,
}

/// `--pair OLD=NEW`: pattern OLD of the first report is pattern NEW of the second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub first: String,
    pub second: String,
}

impl Pair {
    /// `OLD=NEW`, split at the first `=`; names keep their spaces.
    pub fn parse(text: &str) -> Result<Pair, String> {
        match text.split_once('=') {
            Some((first, second)) if !first.is_empty() && !second.is_empty() => Ok(Pair {
                first: first.to_string(),
                second: second.to_string(),
            }),
            _ => Err(format!(
                "`{text}`: expected OLD=NEW, a pattern's name in the first report and its name in the second"
            )),
        }
    }
}

/// Refuses a pairing that names a pattern a report does not have, or pairs a pattern
/// twice: a typo would otherwise silently leave both sides unpaired.
pub fn check_pairs(first: &[&str], second: &[&str], pairs: &[Pair]) -> Result<(), String> {
    for (at, pair) in pairs.iter().enumerate() {
        let text = format!("--pair {}={}", pair.first, pair.second);
        for (names, name, which) in [
            (first, &pair.first, "first"),
            (second, &pair.second, "second"),
        ] {
            if !names.contains(&name.as_str()) {
                return Err(format!(
                    "{text}: the {which} report has no pattern `{name}` (it has {})",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        if pairs[..at].iter().any(|p| p.first == pair.first) {
            return Err(format!(
                "{text}: pattern `{}` of the first report is already paired",
                pair.first
            ));
        }
        if pairs[..at].iter().any(|p| p.second == pair.second) {
            return Err(format!(
                "{text}: pattern `{}` of the second report is already paired",
                pair.second
            ));
        }
    }
    Ok(())
}

/// Compares `second` with `first`: patterns pair by name, or as `pairs` say.
pub fn compare(first: &Report, second: &Report, pairs: &[Pair]) -> Result<Comparison, String> {
    let names = |report: &Report| -> Vec<String> {
        report.patterns.iter().map(|p| p.name.clone()).collect()
    };
    let (first_names, second_names) = (names(first), names(second));
    check_pairs(
        &first_names.iter().map(String::as_str).collect::<Vec<_>>(),
        &second_names.iter().map(String::as_str).collect::<Vec<_>>(),
        pairs,
    )?;
    // The name a pattern of the first report has in the second: the one `--pair` gives,
    // else its own unless `--pair` gave that pattern of the second to another.
    let partner = |name: &str| -> Option<String> {
        if let Some(pair) = pairs.iter().find(|p| p.first == name) {
            return Some(pair.second.clone());
        }
        (!pairs.iter().any(|p| p.second == name)).then(|| name.to_string())
    };
    let mut taken = vec![false; second.patterns.len()];
    let mut patterns = Vec::new();
    for pattern in &first.patterns {
        let found = partner(&pattern.name).and_then(|name| {
            (0..second.patterns.len()).find(|&at| !taken[at] && second.patterns[at].name == name)
        });
        if let Some(at) = found {
            taken[at] = true;
        }
        patterns.push(PatternComparison::new(
            Some(pattern),
            found.map(|at| &second.patterns[at]),
        ));
    }
    for (pattern, taken) in second.patterns.iter().zip(&taken) {
        if !taken {
            patterns.push(PatternComparison::new(None, Some(pattern)));
        }
    }
    let total =
        |value: &dyn Fn(&Report) -> f64| Figure::new(Some(value(first)), Some(value(second)));
    let hottest = |report: &Report| report.hot_partitions.first().map(|p| p.limit_share * 100.0);
    Ok(Comparison {
        first_model: first.model.clone(),
        second_model: second.model.clone(),
        patterns,
        totals: TotalsComparison {
            monthly_cost_on_demand: total(&|r| r.cost.on_demand_monthly),
            monthly_cost_provisioned: total(&|r| r.cost.provisioned_monthly),
            monthly_cost_storage: total(&|r| r.cost.storage_monthly),
            read_units_per_second: total(&|r| modelled_units_per_second(&r.patterns).0),
            write_units_per_second: total(&|r| modelled_units_per_second(&r.patterns).1),
            errors: total(&|r| r.patterns.iter().map(|p| p.failed_calls() as f64).sum()),
            hottest_partition_percent_of_limit: Figure::new(hottest(first), hottest(second)),
            verdicts: total(&|r| r.verdict_count() as f64),
        },
    })
}

/// What a `--fail-if` condition measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Total $/month on-demand.
    Cost,
    /// Total $/month provisioned.
    CostProvisioned,
    /// Total $/month of storage.
    Storage,
    /// Each pattern's p99 latency.
    P99,
    /// Total table and index write units per second at the modelled rate.
    Wcu,
    /// Total table and index read units per second at the modelled rate.
    Rcu,
    /// Calls of all patterns that failed other than by their condition.
    Errors,
    /// The second report's verdicts (other than "nothing over the limits").
    Verdicts,
}

/// The metrics by the name a condition gives them.
const METRICS: [(&str, Metric); 8] = [
    ("cost", Metric::Cost),
    ("cost-provisioned", Metric::CostProvisioned),
    ("storage", Metric::Storage),
    ("p99", Metric::P99),
    ("wcu", Metric::Wcu),
    ("rcu", Metric::Rcu),
    ("errors", Metric::Errors),
    ("verdicts", Metric::Verdicts),
];

/// How far a figure may go before a condition trips.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// `+N%`: it rose by more than N percent of the first report's figure.
    Percent(f64),
    /// `+N`: it rose by more than N.
    Increase(f64),
    /// `N`: the second report's figure is over N, whatever the first's.
    Above(f64),
}

/// What a condition looks like, for the message that refuses a malformed one.
pub const CONDITION_GRAMMAR: &str = "expected METRIC>CHANGE, METRIC one of cost, \
    cost-provisioned, storage, p99, wcu, rcu, errors, verdicts, and CHANGE +N% (rose by more \
    than N percent), +N (rose by more than N) or N (the second's figure is over N), e.g. \
    cost>+5%, p99>+20%, wcu>+0, verdicts>0";

/// `--fail-if METRIC>CHANGE`: a condition that fails the comparison when it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// As written, for the messages.
    pub text: String,
    pub metric: Metric,
    pub limit: Limit,
}

/// A condition checked against a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub condition: String,
    pub tripped: bool,
    /// The figures it was checked against.
    pub figures: String,
}

impl Condition {
    /// Parses `METRIC>CHANGE` (spaces around the parts allowed).
    pub fn parse(text: &str) -> Result<Condition, String> {
        let malformed = |why: String| format!("`{text}`: {why}; {CONDITION_GRAMMAR}");
        let Some((metric, change)) = text.split_once('>') else {
            return Err(malformed("no `>`".into()));
        };
        let (metric, change) = (metric.trim(), change.trim());
        let Some(&(_, metric)) = METRICS.iter().find(|(name, _)| *name == metric) else {
            return Err(malformed(format!("unknown metric `{metric}`")));
        };
        let (number, limit): (&str, fn(f64) -> Limit) = match change.strip_prefix('+') {
            Some(relative) => match relative.strip_suffix('%') {
                Some(percent) => (percent, Limit::Percent),
                None => (relative, Limit::Increase),
            },
            None => (change, Limit::Above),
        };
        let number = number.trim();
        // Rust reads "+5", "inf" and "NaN" as numbers too: none is a change here.
        let value = number
            .parse::<f64>()
            .ok()
            .filter(|value| value.is_finite() && *value >= 0.0 && !number.starts_with(['+', '-']));
        let Some(value) = value else {
            return Err(malformed(format!("`{change}` is not a change")));
        };
        Ok(Condition {
            text: text.trim().to_string(),
            metric,
            limit: limit(value),
        })
    }

    /// Whether the condition holds of `figure`. Figures a saved report read back may
    /// differ from the ones computed in the last bit, so a change must exceed its limit by
    /// more than that for `wcu>+0` to keep passing on an unchanged design.
    fn trips(&self, figure: &Figure) -> bool {
        let scale = [figure.first, figure.second]
            .into_iter()
            .flatten()
            .fold(1.0_f64, |scale, value| scale.max(value.abs()));
        let tolerance = 1e-9 * scale;
        match self.limit {
            Limit::Percent(limit) => {
                figure.change.is_some_and(|change| change > tolerance)
                    && figure.percent.is_some_and(|percent| percent - limit > 1e-9)
            }
            Limit::Increase(limit) => figure
                .change
                .is_some_and(|change| change - limit > tolerance),
            Limit::Above(limit) => figure
                .second
                .is_some_and(|second| second - limit > tolerance),
        }
    }

    /// Checks the condition against `comparison`.
    pub fn check(&self, comparison: &Comparison) -> Outcome {
        let totals = &comparison.totals;
        let total: Option<Row> = match self.metric {
            Metric::Cost => Some(("$/month on-demand", &totals.monthly_cost_on_demand, 2)),
            Metric::CostProvisioned => {
                Some(("$/month provisioned", &totals.monthly_cost_provisioned, 2))
            }
            Metric::Storage => Some(("$/month storage", &totals.monthly_cost_storage, 2)),
            Metric::Wcu => Some(("WCU/s", &totals.write_units_per_second, 1)),
            Metric::Rcu => Some(("RCU/s", &totals.read_units_per_second, 1)),
            Metric::Errors => Some(("errors", &totals.errors, 0)),
            Metric::Verdicts => Some(("verdicts", &totals.verdicts, 0)),
            Metric::P99 => None,
        };
        let (tripped, figures) = match total {
            Some((label, figure, decimals)) => (
                self.trips(figure),
                format!("{label} {}", describe(figure, decimals)),
            ),
            None => {
                // A limit on the second's figure holds for every pattern it has; a change
                // only means something where both reports have the pattern.
                let checked: Vec<&PatternComparison> = comparison
                    .patterns
                    .iter()
                    .filter(|p| match self.limit {
                        Limit::Above(_) => p.second.is_some(),
                        _ => p.is_paired(),
                    })
                    .collect();
                let over: Vec<String> = checked
                    .iter()
                    .filter(|p| self.trips(&p.p99_ms))
                    .map(|p| format!("p99 ms of `{}` {}", p.title(), describe(&p.p99_ms, 3)))
                    .collect();
                if over.is_empty() {
                    (
                        false,
                        format!("p99 ms of {} patterns within the limit", checked.len()),
                    )
                } else {
                    (true, over.join("; "))
                }
            }
        };
        Outcome {
            condition: self.text.clone(),
            tripped,
            figures,
        }
    }
}

/// Checks every condition.
pub fn check_all(conditions: &[Condition], comparison: &Comparison) -> Vec<Outcome> {
    conditions.iter().map(|c| c.check(comparison)).collect()
}

/// The message of a comparison that tripped conditions; None when none did.
pub fn tripped_message(outcomes: &[Outcome]) -> Option<String> {
    let tripped: Vec<String> = outcomes
        .iter()
        .filter(|o| o.tripped)
        .map(|o| format!("\n  {}: {}", o.condition, o.figures))
        .collect();
    (!tripped.is_empty()).then(|| format!("--fail-if tripped:{}", tripped.concat()))
}

/// `value` rounded to `decimals`, where a value that rounds to zero is plain 0 (no "-0.00").
fn rounded(value: f64, decimals: usize) -> f64 {
    let scale = 10f64.powi(decimals as i32);
    if (value * scale).round() == 0.0 {
        0.0
    } else {
        value
    }
}

/// A figure's value: thousands grouped when whole.
fn number(value: f64, decimals: usize) -> String {
    let value = rounded(value, decimals);
    if decimals == 0 {
        thousands(value)
    } else {
        format!("{value:.decimals$}")
    }
}

/// A change, with its sign.
fn signed(value: f64, decimals: usize) -> String {
    let value = rounded(value, decimals);
    if value < 0.0 {
        number(value, decimals)
    } else {
        format!("+{}", number(value, decimals))
    }
}

fn percent_text(percent: f64) -> String {
    if percent.is_infinite() {
        "new".to_string()
    } else {
        format!("{}%", signed(percent, 1))
    }
}

fn value_text(value: Option<f64>, decimals: usize) -> String {
    value.map_or("-".to_string(), |value| number(value, decimals))
}

/// `+0.60 (+6.0%)`; empty when a side lacks the figure.
fn change_text(figure: &Figure, decimals: usize) -> String {
    match (figure.change, figure.percent) {
        (Some(change), Some(percent)) => {
            format!("{} ({})", signed(change, decimals), percent_text(percent))
        }
        _ => String::new(),
    }
}

/// `10.00 → 10.60 (+0.60, +6.0%)`.
fn describe(figure: &Figure, decimals: usize) -> String {
    let mut text = format!(
        "{} → {}",
        value_text(figure.first, decimals),
        value_text(figure.second, decimals)
    );
    if let (Some(change), Some(percent)) = (figure.change, figure.percent) {
        let _ = write!(
            text,
            " ({}, {})",
            signed(change, decimals),
            percent_text(percent)
        );
    }
    text
}

/// The comparison as a terminal table: per pattern, the totals, both reports' verdicts and
/// the outcome of each condition.
pub fn render_text(
    first: &Report,
    second: &Report,
    comparison: &Comparison,
    outcomes: &[Outcome],
) -> String {
    let mut out = String::new();
    let line = |out: &mut String, label: &str, figure: &Figure, decimals: usize| {
        let _ = writeln!(
            out,
            "  {label:<28} {:>18} {:>18} {:>20}",
            value_text(figure.first, decimals),
            value_text(figure.second, decimals),
            change_text(figure, decimals)
        );
    };
    let _ = writeln!(
        out,
        "{:<30} {:>18} {:>18} {:>20}",
        "",
        truncate(&comparison.first_model, 18),
        truncate(&comparison.second_model, 18),
        "change"
    );
    for pattern in &comparison.patterns {
        let _ = writeln!(out, "{}", truncate(&pattern.title(), 90));
        for (label, figure, decimals) in pattern.rows() {
            line(&mut out, label, figure, decimals);
        }
    }
    let _ = writeln!(out, "total");
    for (label, figure, decimals) in comparison.totals.rows() {
        line(&mut out, label, figure, decimals);
    }
    for (report, which) in [(first, "first"), (second, "second")] {
        for verdict in &report.verdicts {
            let _ = writeln!(out, "{which}: {verdict}");
        }
    }
    for outcome in outcomes {
        let _ = writeln!(
            out,
            "--fail-if {}: {}: {}",
            outcome.condition,
            if outcome.tripped { "TRIPPED" } else { "passed" },
            outcome.figures
        );
    }
    out
}

/// Text for a Markdown table cell: a `|` would end the cell, a line break the row.
fn markdown_cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// `text` as inline code, whatever backticks it holds.
fn markdown_code(text: &str) -> String {
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// The comparison as GitHub-flavoured Markdown, for a pull-request comment: one table of
/// the patterns and totals, the verdicts of both reports and the conditions' outcomes.
pub fn render_markdown(
    first: &Report,
    second: &Report,
    comparison: &Comparison,
    outcomes: &[Outcome],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| | {} | {} | change |\n|:---|---:|---:|---:|",
        markdown_cell(&markdown_code(&comparison.first_model)),
        markdown_cell(&markdown_code(&comparison.second_model))
    );
    let section = |out: &mut String, title: &str, rows: &[Row]| {
        let _ = writeln!(out, "| **{}** | | | |", markdown_cell(title));
        for (label, figure, decimals) in rows {
            let _ = writeln!(
                out,
                "| {label} | {} | {} | {} |",
                value_text(figure.first, *decimals),
                value_text(figure.second, *decimals),
                change_text(figure, *decimals)
            );
        }
    };
    for pattern in &comparison.patterns {
        let title = match (&pattern.first, &pattern.second) {
            (Some(first), Some(second)) if first != second => {
                format!("{} → {}", markdown_code(first), markdown_code(second))
            }
            (Some(name), Some(_)) => markdown_code(name),
            (Some(name), None) => format!("{} (first only)", markdown_code(name)),
            (None, Some(name)) => format!("{} (second only)", markdown_code(name)),
            (None, None) => String::new(),
        };
        section(&mut out, &title, &pattern.rows());
    }
    section(&mut out, "total", &comparison.totals.rows());
    for (report, which) in [(first, "first"), (second, "second")] {
        let _ = writeln!(
            out,
            "\nVerdicts of the {which}, {}:\n",
            markdown_code(&report.model)
        );
        for verdict in &report.verdicts {
            let _ = writeln!(out, "- {verdict}");
        }
    }
    if !outcomes.is_empty() {
        let _ = writeln!(out, "\nConditions:\n");
        for outcome in outcomes {
            let _ = writeln!(
                out,
                "- {} {}: {}",
                markdown_code(&outcome.condition),
                if outcome.tripped {
                    "**tripped**"
                } else {
                    "passed"
                },
                outcome.figures
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::data_model::report::{CostReport, Latency, PartitionReport};

    fn pattern(name: &str, p99_ms: f64, write_units: f64, rate: f64) -> PatternReport {
        PatternReport {
            name: name.into(),
            ops_per_second: rate,
            modelled_ops_per_second: rate,
            latency: Latency {
                p99_ms,
                ..Latency::default()
            },
            write_units_per_call: write_units,
            ..PatternReport::default()
        }
    }

    fn report(model: &str, on_demand: f64, patterns: Vec<PatternReport>) -> Report {
        Report {
            model: model.into(),
            patterns,
            cost: CostReport {
                on_demand_monthly: on_demand,
                ..CostReport::default()
            },
            ..Report::default()
        }
    }

    fn condition(text: &str) -> Condition {
        Condition::parse(text).unwrap()
    }

    #[test]
    fn conditions_parse_as_the_documentation_writes_them() {
        let expected = [
            ("cost>+5%", Metric::Cost, Limit::Percent(5.0)),
            ("p99>+20%", Metric::P99, Limit::Percent(20.0)),
            ("wcu>+0", Metric::Wcu, Limit::Increase(0.0)),
            ("verdicts>0", Metric::Verdicts, Limit::Above(0.0)),
            (
                "cost-provisioned>+10",
                Metric::CostProvisioned,
                Limit::Increase(10.0),
            ),
            ("storage>+2.5%", Metric::Storage, Limit::Percent(2.5)),
            ("rcu > +100", Metric::Rcu, Limit::Increase(100.0)),
            ("errors>+0", Metric::Errors, Limit::Increase(0.0)),
            ("cost>500", Metric::Cost, Limit::Above(500.0)),
        ];
        for (text, metric, limit) in expected {
            let parsed = condition(text);
            assert_eq!((parsed.metric, parsed.limit), (metric, limit), "{text}");
            assert_eq!(parsed.text, text);
        }
    }

    #[test]
    fn malformed_conditions_are_refused_with_what_is_expected() {
        for (text, why) in [
            ("cost", "no `>`"),
            ("cost>=5%", "`=5%` is not a change"),
            ("cost<+5%", "no `>`"),
            ("price>+5%", "unknown metric `price`"),
            ("cost>", "`` is not a change"),
            ("cost>+", "`+` is not a change"),
            ("cost>+x%", "`+x%` is not a change"),
            ("cost>-5%", "`-5%` is not a change"),
            ("cost>+-5", "`+-5` is not a change"),
            ("cost>++5", "`++5` is not a change"),
            ("cost>5%", "`5%` is not a change"),
            ("cost>+inf", "`+inf` is not a change"),
            ("verdicts>NaN", "`NaN` is not a change"),
            ("", "no `>`"),
        ] {
            let error = Condition::parse(text).unwrap_err();
            assert!(
                error.starts_with(&format!("`{text}`: {why}; expected METRIC>CHANGE")),
                "{text}: {error}"
            );
            assert!(
                error.contains("cost>+5%, p99>+20%, wcu>+0, verdicts>0"),
                "{error}"
            );
        }
    }

    #[test]
    fn percent_changes_from_zero() {
        assert_eq!(percent_change(0.0, 0.0), 0.0);
        assert_eq!(percent_change(0.0, 3.0), f64::INFINITY);
        assert_eq!(percent_change(4.0, 3.0), -25.0);
        let figure = Figure::new(Some(0.0), Some(3.0));
        assert_eq!(change_text(&figure, 2), "+3.00 (new)");
        assert_eq!(
            change_text(&Figure::new(Some(0.0), Some(0.0)), 2),
            "+0.00 (+0.0%)"
        );
        assert_eq!(change_text(&Figure::new(None, Some(1.0)), 2), "");
        assert_eq!(
            change_text(&Figure::new(Some(2.0), Some(1.0)), 0),
            "-1 (-50.0%)"
        );
        // A change that rounds to zero is shown as none, not as "-0.00".
        assert_eq!(
            change_text(&Figure::new(Some(2.0), Some(1.999_999)), 2),
            "+0.00 (+0.0%)"
        );
        // In JSON an infinite percentage is null.
        assert_eq!(
            serde_json::to_value(figure).unwrap(),
            serde_json::json!({"first": 0.0, "second": 3.0, "change": 3.0, "percent": null})
        );
    }

    #[test]
    fn cost_deltas_by_hand_and_the_limits_they_trip() {
        // 10.00 → 10.60 $/month: +0.60, +6.0%.
        let first = report("a", 10.0, vec![]);
        let second = report("b", 10.6, vec![]);
        let comparison = compare(&first, &second, &[]).unwrap();
        let cost = comparison.totals.monthly_cost_on_demand;
        assert!((cost.change.unwrap() - 0.6).abs() < 1e-9);
        assert!((cost.percent.unwrap() - 6.0).abs() < 1e-9);
        assert_eq!(describe(&cost, 2), "10.00 → 10.60 (+0.60, +6.0%)");
        let outcome = condition("cost>+5%").check(&comparison);
        assert!(outcome.tripped);
        assert_eq!(
            outcome.figures,
            "$/month on-demand 10.00 → 10.60 (+0.60, +6.0%)"
        );
        assert!(!condition("cost>+10%").check(&comparison).tripped);
        assert!(condition("cost>+0.5").check(&comparison).tripped);
        assert!(!condition("cost>+0.6").check(&comparison).tripped);
        assert!(condition("cost>10.5").check(&comparison).tripped);
        // The neighbour that must not trip: 10.00 → 10.50 is exactly 5%, not more.
        let comparison = compare(&first, &report("b", 10.5, vec![]), &[]).unwrap();
        assert!(!condition("cost>+5%").check(&comparison).tripped);
        // Nor does a cost that fell.
        let comparison = compare(&first, &report("b", 9.0, vec![]), &[]).unwrap();
        assert!(!condition("cost>+0").check(&comparison).tripped);
        assert!(!condition("cost>+0%").check(&comparison).tripped);
    }

    #[test]
    fn wcu_totals_include_index_units_at_the_modelled_rate() {
        // 100 puts a second of 1 WCU, then the same with a GSI of 1 WCU more per put.
        let first = report("a", 1.0, vec![pattern("put", 1.0, 1.0, 100.0)]);
        let mut with_gsi = pattern("put", 1.0, 1.0, 100.0);
        with_gsi
            .index_units_per_call
            .insert("T/ByStatus".into(), [0.0, 1.0]);
        let second = report("b", 1.0, vec![with_gsi]);
        let comparison = compare(&first, &second, &[]).unwrap();
        let wcu = comparison.totals.write_units_per_second;
        assert_eq!((wcu.first, wcu.second), (Some(100.0), Some(200.0)));
        let outcome = condition("wcu>+0").check(&comparison);
        assert!(outcome.tripped);
        assert_eq!(outcome.figures, "WCU/s 100.0 → 200.0 (+100.0, +100.0%)");
        assert_eq!(
            tripped_message(&[outcome]).unwrap(),
            "--fail-if tripped:\n  wcu>+0: WCU/s 100.0 → 200.0 (+100.0, +100.0%)"
        );
        // The same design against itself trips nothing.
        let comparison = compare(&first, &first, &[]).unwrap();
        let outcomes = check_all(&[condition("wcu>+0"), condition("rcu>+0")], &comparison);
        assert!(outcomes.iter().all(|o| !o.tripped));
        assert_eq!(tripped_message(&outcomes), None);
    }

    #[test]
    fn figures_a_saved_report_rounds_in_the_last_bit_trip_nothing() {
        // 0.1 + 0.2 is 0.30000000000000004: a rise in the last bit only.
        let first = report("a", 0.3, vec![]);
        let second = report("a", 0.1 + 0.2, vec![]);
        assert!(second.cost.on_demand_monthly > first.cost.on_demand_monthly);
        let comparison = compare(&first, &second, &[]).unwrap();
        assert!(!condition("cost>+0").check(&comparison).tripped);
        assert!(!condition("cost>+0%").check(&comparison).tripped);
    }

    #[test]
    fn renamed_patterns_pair_and_the_rest_stand_alone() {
        let first = report(
            "a",
            1.0,
            vec![
                pattern("get order", 1.0, 0.0, 10.0),
                pattern("list", 2.0, 0.0, 10.0),
                pattern("gone", 1.0, 0.0, 10.0),
            ],
        );
        let second = report(
            "b",
            1.0,
            vec![
                pattern("list", 3.0, 0.0, 10.0),
                pattern("order by id", 1.5, 0.0, 10.0),
                pattern("added", 9.0, 0.0, 10.0),
            ],
        );
        let pairs = [Pair::parse("get order=order by id").unwrap()];
        let comparison = compare(&first, &second, &pairs).unwrap();
        let titles: Vec<String> = comparison.patterns.iter().map(|p| p.title()).collect();
        assert_eq!(
            titles,
            [
                "get order → order by id",
                "list",
                "gone (first only)",
                "added (second only)"
            ]
        );
        assert_eq!(comparison.patterns[0].p99_ms.change, Some(0.5));
        let gone = &comparison.patterns[2].p99_ms;
        assert_eq!((gone.second, gone.change), (None, None));
        // p99>+20%: `get order` rose 50%, `list` 50%; the unpaired ones do not count.
        let outcome = condition("p99>+20%").check(&comparison);
        assert!(outcome.tripped);
        assert_eq!(
            outcome.figures,
            "p99 ms of `get order → order by id` 1.000 → 1.500 (+0.500, +50.0%); \
             p99 ms of `list` 2.000 → 3.000 (+1.000, +50.0%)"
        );
        assert!(!condition("p99>+60%").check(&comparison).tripped);
        // A limit on the second's p99 counts its unpaired patterns too.
        let outcome = condition("p99>5").check(&comparison);
        assert_eq!(outcome.figures, "p99 ms of `added (second only)` - → 9.000");
        // A pair that names what a report lacks, or pairs a pattern twice, is refused.
        let error =
            compare(&first, &second, &[Pair::parse("get=order by id").unwrap()]).unwrap_err();
        assert_eq!(
            error,
            "--pair get=order by id: the first report has no pattern `get` (it has `get order`, `list`, `gone`)"
        );
        let twice = [
            Pair::parse("list=added").unwrap(),
            Pair::parse("gone=added").unwrap(),
        ];
        let error = compare(&first, &second, &twice).unwrap_err();
        assert!(
            error.ends_with("pattern `added` of the second report is already paired"),
            "{error}"
        );
        assert!(Pair::parse("list").is_err() && Pair::parse("=x").is_err());
    }

    #[test]
    fn a_pair_takes_a_same_named_pattern_from_its_namesake() {
        // `--pair a=b` where both reports have `a` and `b`: the first's `b` has no partner
        // (its namesake went to `a`) and the second's `a` stands alone.
        let first = report(
            "x",
            1.0,
            vec![pattern("a", 1.0, 0.0, 1.0), pattern("b", 1.0, 0.0, 1.0)],
        );
        let second = report(
            "y",
            1.0,
            vec![pattern("a", 1.0, 0.0, 1.0), pattern("b", 1.0, 0.0, 1.0)],
        );
        let comparison = compare(&first, &second, &[Pair::parse("a=b").unwrap()]).unwrap();
        let titles: Vec<String> = comparison.patterns.iter().map(|p| p.title()).collect();
        assert_eq!(titles, ["a → b", "b (first only)", "a (second only)"]);
    }

    #[test]
    fn verdicts_count_all_but_the_all_clear_and_the_hottest_partition_is_a_percentage() {
        let mut first = report("a", 1.0, vec![]);
        first.verdicts = vec![crate::bench::data_model::report::NO_VERDICT.to_string()];
        let mut second = report("b", 1.0, vec![]);
        second.verdicts = vec!["hot key `k` (T): …".into()];
        second.hot_partitions = vec![PartitionReport {
            limit_share: 1.2,
            ..PartitionReport::default()
        }];
        let comparison = compare(&first, &second, &[]).unwrap();
        let verdicts = comparison.totals.verdicts;
        assert_eq!((verdicts.first, verdicts.second), (Some(0.0), Some(1.0)));
        assert!(condition("verdicts>0").check(&comparison).tripped);
        assert!(condition("verdicts>+0").check(&comparison).tripped);
        assert!(!condition("verdicts>1").check(&comparison).tripped);
        // The neighbour: the all-clear sentence on the second side is no verdict.
        let comparison = compare(&second, &first, &[]).unwrap();
        assert!(!condition("verdicts>0").check(&comparison).tripped);
        let hottest = comparison.totals.hottest_partition_percent_of_limit;
        assert_eq!((hottest.first, hottest.second), (Some(120.0), None));
    }

    #[test]
    fn markdown_is_one_table_with_the_verdicts_and_conditions_below() {
        let first = report("a|b", 10.0, vec![pattern("put", 1.0, 1.0, 100.0)]);
        let second = report("c", 10.6, vec![pattern("put", 1.0, 2.0, 100.0)]);
        let comparison = compare(&first, &second, &[]).unwrap();
        let outcomes = check_all(&[condition("cost>+5%")], &comparison);
        let markdown = render_markdown(&first, &second, &comparison, &outcomes);
        let mut lines = markdown.lines();
        assert_eq!(lines.next(), Some("| | `a\\|b` | `c` | change |"));
        assert_eq!(lines.next(), Some("|:---|---:|---:|---:|"));
        assert_eq!(lines.next(), Some("| **`put`** | | | |"));
        assert!(
            markdown.contains("| WCU per call (with indexes) | 1.00 | 2.00 | +1.00 (+100.0%) |")
        );
        assert!(markdown.contains("| $/month on-demand | 10.00 | 10.60 | +0.60 (+6.0%) |"));
        assert!(markdown
            .contains("- `cost>+5%` **tripped**: $/month on-demand 10.00 → 10.60 (+0.60, +6.0%)"));
        let text = render_text(&first, &second, &comparison, &outcomes);
        assert!(
            text.contains("--fail-if cost>+5%: TRIPPED: $/month on-demand"),
            "{text}"
        );
    }
}
