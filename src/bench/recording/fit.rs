//! Fitting a generator to the values a recording saw: a partition key's distribution
//! (uniform, Zipf with a fitted exponent, or named hot keys with their shares), a sort
//! key's behaviour (sequential, time-ordered, random), and sizes.
//!
//! The rules, with the tolerances docs/DATA-MODEL-BENCH.md states:
//!
//! - **Uniform** when the counts' index of dispersion (variance ÷ mean, over the estimated
//!   number of values, unseen ones counting 0) is below [`UNIFORM_DISPERSION_MAX`]: a
//!   uniform draw's is about 1, a skewed one's far above.
//! - **Hot keys.** Values whose share of the draws is at least [`HOT_SHARE_MIN`] and at
//!   least [`HOT_OVER_MEDIAN`] times the median value's share are hot, at most
//!   [`HOT_KEYS_MAX`] of them. If the other values look uniform (as above), the generator
//!   names the hot values with their shares and draws the rest uniformly.
//! - **Zipf** otherwise, with the exponent fitted by maximum likelihood over the observed
//!   ranks (golden-section search on 0..4), at least [`ZIPF_EXPONENT_MIN`], over the
//!   estimated number of values.
//! - **How many values.** The Chao1 estimate: the distinct values seen plus f1² / (2 f2)
//!   (f1 values seen once, f2 twice), which counts the values a short recording never met.

use std::collections::HashMap;

use crate::bench::data_model::model::{Distribution, Generator, GeneratorKind, NamedValue};

/// A value is hot from this share of the draws on…
pub const HOT_SHARE_MIN: f64 = 0.02;
/// …when its share is also this many times the median value's share.
pub const HOT_OVER_MEDIAN: f64 = 10.0;
/// Most values named hot.
pub const HOT_KEYS_MAX: usize = 16;
/// The smallest Zipf exponent written (skewed counts whose fit is flatter get this).
pub const ZIPF_EXPONENT_MIN: f64 = 0.1;
/// Counts whose index of dispersion is below this are uniform.
pub const UNIFORM_DISPERSION_MAX: f64 = 1.5;
/// Values named outright (every value with its share) when a generator saw at most this
/// many distinct ones in at least [`NAMED_ALL_DRAWS_MIN`] draws: a status, a type.
pub const NAMED_ALL_MAX: usize = 64;
/// See [`NAMED_ALL_MAX`].
pub const NAMED_ALL_DRAWS_MIN: u64 = 20;
/// Distinct values counted per generator; past it, new values are only counted as draws.
pub const DISTINCT_TRACKED_MAX: usize = 1_000_000;

/// Counts of the values one generator must reproduce.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    pub by_value: HashMap<String, u64>,
    pub draws: u64,
    /// Draws of values not tracked (past [`DISTINCT_TRACKED_MAX`]).
    pub untracked: u64,
    /// The value type (`S`, `N`, `B`, `BOOL`).
    pub kind: String,
}

impl Counts {
    pub fn add(&mut self, value: &str, kind: &str) {
        self.draws += 1;
        if self.kind.is_empty() {
            self.kind = kind.to_string();
        }
        let room = self.by_value.len() < DISTINCT_TRACKED_MAX;
        match self.by_value.get_mut(value) {
            Some(count) => *count += 1,
            None if room => {
                self.by_value.insert(value.to_string(), 1);
            }
            None => self.untracked += 1,
        }
    }

    /// Counts in descending order, with their values.
    fn ranked(&self) -> Vec<(&str, u64)> {
        let mut ranked: Vec<(&str, u64)> = self
            .by_value
            .iter()
            .map(|(v, c)| (v.as_str(), *c))
            .collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        ranked
    }

    /// Chao1's estimate of how many values there are.
    pub fn estimated_values(&self) -> u64 {
        let seen = self.by_value.len() as u64 + self.untracked;
        let f1 = self.by_value.values().filter(|c| **c == 1).count() as f64;
        let f2 = self.by_value.values().filter(|c| **c == 2).count() as f64;
        let unseen = if f2 > 0.0 {
            f1 * f1 / (2.0 * f2)
        } else {
            f1 * (f1 - 1.0).max(0.0) / 2.0
        };
        (seen as f64 + unseen)
            .round()
            .clamp(1.0, (1u64 << 32) as f64) as u64
    }
}

/// The fitted distribution of a set of counts (over the estimated number of values).
pub fn distribution(counts: &Counts) -> Distribution {
    let ranked = counts.ranked();
    if ranked.is_empty() || counts.draws == 0 {
        return Distribution::Uniform;
    }
    let all: Vec<u64> = ranked.iter().map(|(_, c)| *c).collect();
    if looks_uniform(&all) {
        return Distribution::Uniform;
    }
    let draws = counts.draws as f64;
    let median = ranked[ranked.len() / 2].1 as f64 / draws;
    let hot: Vec<&(&str, u64)> = ranked
        .iter()
        .take(HOT_KEYS_MAX)
        .take_while(|(_, c)| {
            let share = *c as f64 / draws;
            share >= HOT_SHARE_MIN && share >= HOT_OVER_MEDIAN * median
        })
        .collect();
    if !hot.is_empty() && looks_uniform(&all[hot.len()..]) {
        return Distribution::Named(
            hot.iter()
                .map(|(value, c)| NamedValue {
                    value: value.to_string(),
                    share: rounded_share(*c as f64 / draws),
                })
                .collect(),
        );
    }
    let exponent = zipf_exponent(&all).max(ZIPF_EXPONENT_MIN);
    Distribution::Zipf((exponent * 100.0).round() / 100.0)
}

/// A share to four decimals (a model file is read by people).
fn rounded_share(share: f64) -> f64 {
    (share * 10_000.0).round() / 10_000.0
}

/// Whether counts (of the values seen) look like a uniform draw: their index of dispersion
/// over the estimated number of values (Chao1; unseen values count 0) is below
/// [`UNIFORM_DISPERSION_MAX`].
pub fn looks_uniform(counts: &[u64]) -> bool {
    if counts.len() < 2 {
        return true;
    }
    let f1 = counts.iter().filter(|c| **c == 1).count() as f64;
    let f2 = counts.iter().filter(|c| **c == 2).count() as f64;
    let unseen = if f2 > 0.0 {
        f1 * f1 / (2.0 * f2)
    } else {
        f1 * (f1 - 1.0).max(0.0) / 2.0
    };
    let values = counts.len() as f64 + unseen;
    let total: f64 = counts.iter().map(|c| *c as f64).sum();
    let mean = total / values;
    let squares: f64 = counts
        .iter()
        .map(|c| (*c as f64 - mean).powi(2))
        .sum::<f64>()
        + unseen * mean * mean;
    let variance = squares / values;
    variance / mean < UNIFORM_DISPERSION_MAX
}

/// The maximum-likelihood Zipf exponent of counts in descending order (rank 1 first), over
/// as many ranks as there are counts.
pub fn zipf_exponent(counts: &[u64]) -> f64 {
    let n = counts.len();
    if n < 2 {
        return 0.0;
    }
    let total: f64 = counts.iter().map(|c| *c as f64).sum();
    let weighted_log_rank: f64 = counts
        .iter()
        .enumerate()
        .map(|(i, c)| *c as f64 * ((i + 1) as f64).ln())
        .sum();
    let log_likelihood = |s: f64| {
        let harmonic: f64 = (1..=n).map(|r| (r as f64).powf(-s)).sum();
        -s * weighted_log_rank - total * harmonic.ln()
    };
    // Golden-section search for the maximum on [0, 4].
    let (mut low, mut high) = (0.0f64, 4.0f64);
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let a = high - ratio * (high - low);
        let b = low + ratio * (high - low);
        if log_likelihood(a) < log_likelihood(b) {
            low = a;
        } else {
            high = b;
        }
    }
    (low + high) / 2.0
}

/// The longest text every value starts with, cut back so it does not end inside a run of
/// digits or letters that differ between values.
pub fn common_prefix<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut prefix: Option<&str> = None;
    for value in values {
        prefix = Some(match prefix {
            None => value,
            Some(p) => {
                let shared = p
                    .char_indices()
                    .zip(value.chars())
                    .take_while(|((_, a), b)| a == b)
                    .last()
                    .map_or(0, |((i, a), _)| i + a.len_utf8());
                &p[..shared]
            }
        });
    }
    let prefix = prefix.unwrap_or_default();
    // Keep the prefix up to its last separator-like character: `c#1` and `c#12` share `c#1`,
    // but their prefix is `c#`.
    match prefix.rfind(|c: char| !c.is_ascii_alphanumeric()) {
        Some(at) => {
            prefix[..at + prefix[at..].chars().next().map_or(1, char::len_utf8)].to_string()
        }
        None => String::new(),
    }
}

/// A generator of values like `counts`' with distribution `distribution`: numbers over the
/// range seen, texts with their common prefix and the lengths seen after it.
pub fn generator_like(counts: &Counts, distribution: Distribution) -> Generator {
    let cardinality = counts.estimated_values();
    let numeric = counts.kind == "N" && counts.by_value.keys().all(|v| v.parse::<i64>().is_ok());
    if numeric {
        let values: Vec<i64> = counts
            .by_value
            .keys()
            .filter_map(|v| v.parse().ok())
            .collect();
        let low = values.iter().copied().min().unwrap_or(0);
        let high = values.iter().copied().max().unwrap_or(0);
        // The range is widened to hold every estimated value.
        let high = high.max(low.saturating_add(i64::try_from(cardinality).unwrap_or(i64::MAX) - 1));
        return Generator {
            kind: GeneratorKind::Number,
            prefix: String::new(),
            length: None,
            range: Some([low, high]),
            cardinality: Some(cardinality),
            distribution,
            distinct: false,
        };
    }
    let prefix = if counts.kind == "N" {
        String::new()
    } else {
        common_prefix(counts.by_value.keys().map(String::as_str))
    };
    let lengths = counts
        .by_value
        .keys()
        .map(|v| v.chars().count().saturating_sub(prefix.chars().count()) as u32);
    let (low, high) = lengths.fold((u32::MAX, 0), |(l, h), n| (l.min(n), h.max(n)));
    // Enough characters to tell `cardinality` values apart in base 36.
    let needed = (cardinality.max(2) as f64).log(36.0).ceil() as u32;
    let low = if low == u32::MAX {
        needed
    } else {
        low.max(needed).max(1)
    };
    let (kind, distribution) = match (counts.kind.as_str(), distribution) {
        // Numbers whose texts are not integers (hashed ones): integers with the same skew.
        ("N", Distribution::Named(named)) => (
            GeneratorKind::Number,
            Distribution::Hot {
                share: named.iter().map(|n| n.share).sum(),
                keys: named.len() as u64,
            },
        ),
        ("N", distribution) => (GeneratorKind::Number, distribution),
        (_, distribution) => (GeneratorKind::String, distribution),
    };
    Generator {
        kind,
        prefix,
        length: (kind == GeneratorKind::String).then_some([low, high.max(low)]),
        range: None,
        cardinality: Some(cardinality),
        distribution,
        distinct: false,
    }
}

/// A generator that names every value with its share (a status, a type, a flag).
pub fn named_all(counts: &Counts) -> Generator {
    let draws = counts.draws.max(1) as f64;
    let mut ranked = counts.ranked();
    ranked.truncate(NAMED_ALL_MAX);
    Generator {
        kind: if counts.kind == "N" {
            GeneratorKind::Number
        } else {
            GeneratorKind::String
        },
        prefix: String::new(),
        length: None,
        range: None,
        cardinality: Some(ranked.len().max(1) as u64),
        distribution: Distribution::Named(
            ranked
                .iter()
                .map(|(value, c)| NamedValue {
                    value: value.to_string(),
                    share: rounded_share(*c as f64 / draws),
                })
                .collect(),
        ),
        distinct: false,
    }
}

/// Whether `counts` is best reproduced by naming every value.
pub fn is_small_set(counts: &Counts) -> bool {
    let numbers_ok = counts.kind != "N" || counts.by_value.keys().all(|v| v.parse::<f64>().is_ok());
    numbers_ok
        && counts.untracked == 0
        && counts.by_value.len() <= NAMED_ALL_MAX
        && counts.draws >= NAMED_ALL_DRAWS_MIN
        && (counts.by_value.len() as u64) * 4 <= counts.draws
}

/// How a sort key's writes moved.
#[derive(Debug, Default, Clone, Copy)]
pub struct SortOrder {
    pub up: u64,
    pub down: u64,
    pub same: u64,
    pub time_like: u64,
    pub writes: u64,
}

/// Writes that went up (or stayed) at least this share of the time make the sort key
/// sequential (or time-ordered when they look like times).
pub const ORDERED_SHARE_MIN: f64 = 0.95;

/// What a sort key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBehaviour {
    Sequential,
    TimeOrdered,
    Random,
}

impl SortOrder {
    pub fn behaviour(&self) -> SortBehaviour {
        let compared = (self.up + self.down + self.same).max(1) as f64;
        let ordered = (self.up + self.same) as f64 / compared >= ORDERED_SHARE_MIN;
        if !ordered || self.up + self.down + self.same == 0 {
            SortBehaviour::Random
        } else if self.time_like * 2 > self.writes {
            SortBehaviour::TimeOrdered
        } else {
            SortBehaviour::Sequential
        }
    }
}

/// The `p`th percentile (0..=100) of `samples` (sorted in place).
pub fn percentile(samples: &mut [u64], p: f64) -> u64 {
    if samples.is_empty() {
        return 0;
    }
    samples.sort_unstable();
    let at = ((p / 100.0) * (samples.len() - 1) as f64).round() as usize;
    samples[at.min(samples.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn counts_of(values: impl Iterator<Item = String>) -> Counts {
        let mut counts = Counts::default();
        for value in values {
            counts.add(&value, "S");
        }
        counts
    }

    #[test]
    fn uniform_keys_fit_uniform_with_about_their_number_of_values() {
        let mut rng = StdRng::seed_from_u64(1);
        let counts = counts_of((0..20_000).map(|_| format!("c#{}", rng.random_range(0..1000))));
        assert_eq!(distribution(&counts), Distribution::Uniform);
        let estimated = counts.estimated_values();
        assert!((950..=1050).contains(&estimated), "{estimated}");
        let generator = generator_like(&counts, Distribution::Uniform);
        assert_eq!(generator.prefix, "c#");
    }

    #[test]
    fn a_zipf_exponent_is_found_within_a_tenth() {
        // Exact Zipf counts over 1,000 ranks for s = 1.1 and 0.8.
        for s in [1.1f64, 0.8] {
            let counts: Vec<u64> = (1..=1000)
                .map(|r| (1e6 * (r as f64).powf(-s)).round() as u64)
                .collect();
            let fitted = zipf_exponent(&counts);
            assert!((fitted - s).abs() < 0.1, "{s}: {fitted}");
        }
    }

    #[test]
    fn hot_keys_over_a_uniform_rest_are_named_with_their_shares() {
        let mut rng = StdRng::seed_from_u64(2);
        let counts = counts_of((0..20_000).map(|_| {
            if rng.random::<f64>() < 0.3 {
                "c#hot".to_string()
            } else {
                format!("c#{}", rng.random_range(0..500))
            }
        }));
        match distribution(&counts) {
            Distribution::Named(named) => {
                assert_eq!(named.len(), 1, "{named:?}");
                assert_eq!(named[0].value, "c#hot");
                assert!((named[0].share - 0.3).abs() < 0.02, "{}", named[0].share);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sort_keys_that_climb_are_sequential_or_time_ordered() {
        let climbing = SortOrder {
            up: 99,
            same: 1,
            writes: 101,
            ..SortOrder::default()
        };
        assert_eq!(climbing.behaviour(), SortBehaviour::Sequential);
        let times = SortOrder {
            time_like: 101,
            ..climbing
        };
        assert_eq!(times.behaviour(), SortBehaviour::TimeOrdered);
        let random = SortOrder {
            up: 50,
            down: 50,
            writes: 101,
            ..SortOrder::default()
        };
        assert_eq!(random.behaviour(), SortBehaviour::Random);
    }

    #[test]
    fn prefixes_stop_at_a_separator() {
        let values = ["c#1", "c#12", "c#13"];
        assert_eq!(common_prefix(values.into_iter()), "c#");
        assert_eq!(common_prefix(["abc", "abd"].into_iter()), "");
        assert_eq!(common_prefix(["ORDER#x1"].into_iter()), "ORDER#");
    }
}
