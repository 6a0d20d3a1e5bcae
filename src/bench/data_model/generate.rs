//! Values for a model's placeholders, and request templates that take them.
//!
//! A template is a request body serialised once, split at its `${name}` placeholders; making
//! a request is concatenating its pieces with the draws of one request (JSON-escaped), so a
//! request costs a few copies, not a JSON tree. `${name#k}` is a request's draw number k of
//! `name` (`${name}` is draw 0): the parts of a batch or transaction each draw their own
//! keys from one generator.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rand::rngs::StdRng;
use rand::Rng;
use serde_json::Value;

use super::model::{Distribution, Generator, GeneratorKind};

/// Largest default cardinality (values are numbered in a u64, but 2^32 distinct values is
/// already more than any model loads).
const CARDINALITY_DEFAULT_MAX: u64 = 1 << 32;
/// Most draws of one generator in one request (`${name#k}`, k below it): a transaction or
/// BatchGetItem has at most 100 parts.
pub const DRAWS_PER_REQUEST_MAX: usize = 1000;
/// Draws of a `distinct` generator tried before a repeat is given up on (the model check
/// makes sure there are values enough, so only bad luck gets this far).
const DISTINCT_REDRAWS_MAX: u64 = 10_000;

/// A model's generators, compiled; shared by every worker.
pub struct Generators {
    names: Vec<String>,
    compiled: Vec<Compiled>,
}

struct Compiled {
    kind: GeneratorKind,
    prefix: String,
    length: [u32; 2],
    low: i64,
    step: i64,
    cardinality: u64,
    picker: Picker,
    /// The next value of a `sequence`.
    sequence: Arc<AtomicU64>,
    /// A request's draws of it never repeat.
    distinct: bool,
    /// How many different values it can give; None when unbounded (sequences, timestamps
    /// that a repeat moves on, UUIDs).
    values_max: Option<u64>,
}

enum Picker {
    Uniform,
    Zipf(Zipf),
    Hot {
        share: f64,
        keys: u64,
    },
    /// Named values with their cumulative shares; past the last, uniform.
    Named {
        values: Vec<String>,
        cumulative: Vec<f64>,
    },
}

impl Generators {
    pub fn new(generators: &BTreeMap<String, Generator>) -> Generators {
        let mut names = Vec::with_capacity(generators.len());
        let mut compiled = Vec::with_capacity(generators.len());
        for (name, generator) in generators {
            names.push(name.clone());
            compiled.push(Compiled::new(generator));
        }
        Generators { names, compiled }
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The generator and draw number a placeholder's name means: `name` (draw 0) or
    /// `name#k` (draw k), a generator named with the `#` taking precedence.
    fn draw_of(&self, placeholder: &str) -> Option<(usize, usize)> {
        if let Some(index) = self.index_of(placeholder) {
            return Some((index, 0));
        }
        let (name, draw) = placeholder.rsplit_once('#')?;
        let draw: usize = draw.parse().ok()?;
        (draw < DRAWS_PER_REQUEST_MAX).then_some((self.index_of(name)?, draw))
    }

    /// How many generators there are (the size of a [`Draws`]).
    pub fn count(&self) -> usize {
        self.names.len()
    }

    /// The value number generator `index` picks (for string and number generators).
    fn pick(&self, index: usize, rng: &mut StdRng) -> u64 {
        let generator = &self.compiled[index];
        match &generator.picker {
            Picker::Uniform | Picker::Named { .. } => rng.random_range(0..generator.cardinality),
            Picker::Zipf(zipf) => zipf.sample(rng) - 1,
            Picker::Hot { share, keys } => {
                if rng.random::<f64>() < *share {
                    rng.random_range(0..(*keys).min(generator.cardinality))
                } else {
                    rng.random_range(0..generator.cardinality)
                }
            }
        }
    }

    /// Draws a value of generator `index` into `out` (cleared first); a timestamp
    /// `nudge_ms` later (how a distinct timestamp moves past a repeat within its
    /// millisecond).
    fn draw(&self, index: usize, rng: &mut StdRng, nudge_ms: u64, out: &mut String) {
        use std::fmt::Write;
        out.clear();
        let generator = &self.compiled[index];
        if let Picker::Named { values, cumulative } = &generator.picker {
            let draw = rng.random::<f64>();
            if let Some(named) = cumulative.iter().position(|share| draw < *share) {
                out.push_str(&values[named]);
                return;
            }
        }
        out.push_str(&generator.prefix);
        match generator.kind {
            GeneratorKind::String => {
                let n = self.pick(index, rng);
                string_value(n, generator.length, out);
            }
            GeneratorKind::Number => {
                let n = self.pick(index, rng);
                let value = generator
                    .low
                    .saturating_add((n as i64).saturating_mul(generator.step));
                let _ = write!(out, "{value}");
            }
            GeneratorKind::Sequence => {
                let n = generator.sequence.fetch_add(1, Ordering::Relaxed);
                let _ = write!(out, "{n}");
            }
            GeneratorKind::Timestamp => {
                let millis = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
                let _ = write!(out, "{}", millis + u128::from(nudge_ms));
            }
            GeneratorKind::Uuid => {
                let bits: u128 = rng.random();
                let hex = format!("{bits:032x}");
                let _ = write!(
                    out,
                    "{}-{}-4{}-a{}-{}",
                    &hex[0..8],
                    &hex[8..12],
                    &hex[13..16],
                    &hex[17..20],
                    &hex[20..32]
                );
            }
        }
    }
}

impl Compiled {
    fn new(generator: &Generator) -> Compiled {
        let length = generator.length.unwrap_or([8, 8]);
        let [low, high] = generator.range.unwrap_or([0, 1_000_000]);
        let span = (high as i128 - low as i128 + 1).clamp(1, i128::from(u64::MAX)) as u64;
        let cardinality = match generator.kind {
            GeneratorKind::Number => generator.cardinality.unwrap_or(span).min(span),
            _ => generator.cardinality.unwrap_or(CARDINALITY_DEFAULT_MAX),
        }
        .max(1);
        // Number n of a number generator is `low + n * step`: the values spread over the range.
        let step = i64::try_from(span / cardinality).unwrap_or(1).max(1);
        let picker = match generator.distribution {
            Distribution::Uniform => Picker::Uniform,
            Distribution::Zipf(s) => Picker::Zipf(Zipf::new(cardinality, s)),
            Distribution::Hot { share, keys } => Picker::Hot { share, keys },
            Distribution::Named(ref named) => Picker::Named {
                values: named.iter().map(|n| n.value.clone()).collect(),
                cumulative: named
                    .iter()
                    .scan(0.0, |sum, n| {
                        *sum += n.share;
                        Some(*sum)
                    })
                    .collect(),
            },
        };
        let values_max = match (generator.kind, &generator.distribution) {
            (GeneratorKind::String | GeneratorKind::Number, Distribution::Named(named)) => {
                Some(cardinality.saturating_add(named.len() as u64))
            }
            (GeneratorKind::String | GeneratorKind::Number, _) => Some(cardinality),
            _ => None,
        };
        Compiled {
            kind: generator.kind,
            prefix: generator.prefix.clone(),
            length,
            low,
            step,
            cardinality,
            picker,
            sequence: Arc::new(AtomicU64::new(0)),
            distinct: generator.distinct,
            values_max,
        }
    }
}

/// The text of value number `n`: `n` in base 36 (so distinct numbers give distinct texts),
/// padded to a length in `length` chosen by `n` (so the same number always gives the same
/// text).
fn string_value(n: u64, [low, high]: [u32; 2], out: &mut String) {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut digits = [0u8; 13];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = DIGITS[(rest % 36) as usize];
        rest /= 36;
        if rest == 0 {
            break;
        }
    }
    let spread = u64::from(high - low) + 1;
    let length =
        low as usize + (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % spread as usize;
    let written = digits.len() - at;
    for _ in written..length {
        out.push('x');
    }
    // Only ASCII digits and letters were written into `digits`.
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or(""));
}

/// Zipf over 1..=n by rejection-inversion (the method of Hörmann and Derflinger, as in
/// rand_distr), constant time per draw for any n.
struct Zipf {
    s: f64,
    t: f64,
    q: f64,
    n: f64,
}

impl Zipf {
    fn new(n: u64, s: f64) -> Zipf {
        let n = n as f64;
        let (t, q) = if s == 1.0 {
            (1.0 + n.ln(), 0.0)
        } else {
            ((n.powf(1.0 - s) - s) / (1.0 - s), 1.0 / (1.0 - s))
        };
        Zipf { s, t, q, n }
    }

    fn inverse_cdf(&self, p: f64) -> f64 {
        let pt = p * self.t;
        if pt <= 1.0 {
            pt
        } else if self.s == 1.0 {
            (pt - 1.0).exp()
        } else {
            (pt * (1.0 - self.s) + self.s).powf(self.q)
        }
    }

    fn sample(&self, rng: &mut StdRng) -> u64 {
        loop {
            let inverse = self.inverse_cdf(rng.random::<f64>());
            let x = (inverse + 1.0).floor();
            let mut ratio = x.powf(-self.s);
            if x > 1.0 {
                ratio *= inverse.powf(self.s);
            }
            if rng.random::<f64>() < ratio {
                return (x.min(self.n) as u64).max(1);
            }
        }
    }
}

/// One request's values: every `${name#k}` of one request gets the same draw.
pub struct Draws {
    /// By generator, by draw number.
    values: Vec<Vec<String>>,
    drawn: Vec<Vec<bool>>,
}

impl Draws {
    pub fn new(generators: &Generators) -> Draws {
        Draws {
            values: vec![vec![String::new()]; generators.count()],
            drawn: vec![vec![false]; generators.count()],
        }
    }

    /// Starts a new request.
    pub fn reset(&mut self) {
        for drawn in &mut self.drawn {
            drawn.iter_mut().for_each(|d| *d = false);
        }
    }

    fn get(
        &mut self,
        generators: &Generators,
        (index, draw): (usize, usize),
        rng: &mut StdRng,
    ) -> &str {
        let (values, drawn) = (&mut self.values[index], &mut self.drawn[index]);
        if drawn.len() <= draw {
            drawn.resize(draw + 1, false);
            values.resize(draw + 1, String::new());
        }
        if !drawn[draw] {
            let mut value = std::mem::take(&mut values[draw]);
            let distinct = generators.compiled[index].distinct;
            for nudge_ms in 0..DISTINCT_REDRAWS_MAX {
                generators.draw(index, rng, nudge_ms, &mut value);
                let repeated = distinct
                    && values
                        .iter()
                        .zip(drawn.iter())
                        .any(|(other, taken)| *taken && *other == value);
                if !repeated {
                    break;
                }
            }
            values[draw] = value;
            drawn[draw] = true;
        }
        &values[draw]
    }
}

/// A text with `${name}` holes.
#[derive(Debug, Clone)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    /// A generator and the request's draw number of it.
    Hole((usize, usize)),
}

impl Template {
    /// A request body: `value` serialised, its placeholders resolved against `generators`.
    pub fn of_json(value: &Value, generators: &Generators) -> Result<Template, String> {
        Template::of_text(&value.to_string(), generators)
    }

    /// `text` split at its placeholders.
    pub fn of_text(text: &str, generators: &Generators) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            let Some(length) = rest[start + 2..].find('}') else {
                break;
            };
            let name = &rest[start + 2..start + 2 + length];
            let hole = generators
                .draw_of(name)
                .ok_or_else(|| format!("`${{{name}}}` names no generator"))?;
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_string()));
            }
            parts.push(Part::Hole(hole));
            rest = &rest[start + 3 + length..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        // A distinct generator needs a value for each of a request's draws of it.
        let mut draws: BTreeMap<usize, std::collections::BTreeSet<usize>> = BTreeMap::new();
        for part in &parts {
            if let Part::Hole((index, draw)) = part {
                draws.entry(*index).or_default().insert(*draw);
            }
        }
        for (index, numbers) in draws {
            let compiled = &generators.compiled[index];
            if let (true, Some(values)) = (compiled.distinct, compiled.values_max) {
                if numbers.len() as u64 > values {
                    return Err(format!(
                        "generator `{}` is distinct but has {values} values for the {} draws \
                         of one request",
                        generators.names[index],
                        numbers.len()
                    ));
                }
            }
        }
        Ok(Template { parts })
    }

    /// Writes the template with this request's draws, JSON-escaped, into `out`.
    pub fn render(
        &self,
        generators: &Generators,
        draws: &mut Draws,
        rng: &mut StdRng,
        out: &mut Vec<u8>,
    ) {
        for part in &self.parts {
            match part {
                Part::Text(text) => out.extend_from_slice(text.as_bytes()),
                Part::Hole(hole) => {
                    let value = draws.get(generators, *hole, rng);
                    push_escaped(value, out);
                }
            }
        }
    }

    /// The template rendered as plain text (for keys: no escaping).
    pub fn render_text(
        &self,
        generators: &Generators,
        draws: &mut Draws,
        rng: &mut StdRng,
        out: &mut String,
    ) {
        out.clear();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Hole(hole) => out.push_str(draws.get(generators, *hole, rng)),
            }
        }
    }
}

/// Appends `text` as the inside of a JSON string.
fn push_escaped(text: &str, out: &mut Vec<u8>) {
    if !text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.extend_from_slice(text.as_bytes());
        return;
    }
    let quoted = Value::String(text.to_string()).to_string();
    out.extend_from_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn generator(json: Value) -> Generator {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn string_values_are_distinct_stable_and_of_the_asked_length() {
        let mut seen = std::collections::HashSet::new();
        for n in 0..5000 {
            let mut text = String::new();
            string_value(n, [6, 10], &mut text);
            assert!((6..=10).contains(&text.len()), "{text}");
            let mut again = String::new();
            string_value(n, [6, 10], &mut again);
            assert_eq!(text, again);
            assert!(seen.insert(text));
        }
    }

    #[test]
    fn distributions_pick_as_told() {
        let generators = Generators::new(&BTreeMap::from([
            (
                "z".to_string(),
                generator(
                    serde_json::json!({"type": "number", "range": [0, 999], "distribution": {"zipf": 1.2}}),
                ),
            ),
            (
                "h".to_string(),
                generator(
                    serde_json::json!({"type": "number", "range": [0, 999], "distribution": {"hot": {"share": 0.5, "keys": 1}}}),
                ),
            ),
            (
                "u".to_string(),
                generator(serde_json::json!({"type": "number", "range": [0, 9]})),
            ),
        ]));
        let mut rng = StdRng::seed_from_u64(7);
        let mut counts = [[0u32; 1000]; 3];
        for _ in 0..100_000 {
            for (slot, name) in ["z", "h", "u"].iter().enumerate() {
                let index = generators.index_of(name).unwrap();
                let n = generators.pick(index, &mut rng) as usize;
                counts[slot][n] += 1;
            }
        }
        // Zipf: the first value is the most frequent, far above the median value's share.
        let zipf = &counts[0];
        assert!(zipf[0] > zipf[1] && zipf[1] > zipf[10] && zipf[0] > 10 * zipf[500].max(1));
        // Hot: half the draws (plus a uniform share) go to value 0.
        let hot = counts[1][0] as f64 / 100_000.0;
        assert!((0.49..0.52).contains(&hot), "{hot}");
        // Uniform over 10 values: each about a tenth.
        for (n, count) in counts[2].iter().take(10).enumerate() {
            let share = f64::from(*count) / 100_000.0;
            assert!((0.09..0.11).contains(&share), "{n}: {share}");
        }
    }

    #[test]
    fn named_values_come_out_verbatim_at_their_shares() {
        let generators = Generators::new(&BTreeMap::from([(
            "status".to_string(),
            generator(
                serde_json::json!({"type": "string", "prefix": "s#", "cardinality": 50,
                "distribution": {"named": [{"value": "PENDING", "share": 0.6}, {"value": "SHIPPED", "share": 0.3}]}}),
            ),
        )]));
        let mut rng = StdRng::seed_from_u64(3);
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        let mut out = String::new();
        for _ in 0..100_000 {
            generators.draw(0, &mut rng, 0, &mut out);
            *counts.entry(out.clone()).or_default() += 1;
        }
        let share = |v: &str| f64::from(counts[v]) / 100_000.0;
        assert!(
            (0.59..0.61).contains(&share("PENDING")),
            "{}",
            share("PENDING")
        );
        assert!(
            (0.29..0.31).contains(&share("SHIPPED")),
            "{}",
            share("SHIPPED")
        );
        // The other tenth spreads over the 50 generated values, all with the prefix.
        let rest: Vec<_> = counts
            .keys()
            .filter(|k| !k.ends_with("ED") && !k.ends_with("NG"))
            .collect();
        assert!(
            rest.len() > 40 && rest.iter().all(|k| k.starts_with("s#")),
            "{rest:?}"
        );
    }

    #[test]
    fn templates_fill_every_placeholder_once_per_request() {
        let generators = Generators::new(&BTreeMap::from([
            (
                "id".to_string(),
                generator(serde_json::json!({"type": "sequence", "prefix": "user#"})),
            ),
            (
                "q".to_string(),
                generator(serde_json::json!({"type": "string", "prefix": "a\"b"})),
            ),
        ]));
        let request = serde_json::json!({"Key": {"pk": {"S": "${id}"}, "sk": {"S": "x-${id}"}}, "Q": {"S": "${q}"}});
        let template = Template::of_json(&request, &generators).unwrap();
        let mut draws = Draws::new(&generators);
        let mut rng = StdRng::seed_from_u64(1);
        for expected in ["user#0", "user#1"] {
            draws.reset();
            let mut out = Vec::new();
            template.render(&generators, &mut draws, &mut rng, &mut out);
            let body: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(body["Key"]["pk"]["S"], expected);
            assert_eq!(body["Key"]["sk"]["S"], format!("x-{expected}"));
            assert!(body["Q"]["S"].as_str().unwrap().starts_with("a\"b"));
        }
        let unknown = Template::of_json(&serde_json::json!({"S": "${nope}"}), &generators);
        assert_eq!(unknown.unwrap_err(), "`${nope}` names no generator");
    }

    #[test]
    fn numbered_draws_are_independent_and_distinct_ones_never_repeat_in_a_request() {
        // Five values, five draws: only a distinct generator gives all five every time.
        let of = |distinct: bool| {
            Generators::new(&BTreeMap::from([(
                "k".to_string(),
                generator(serde_json::json!({"type": "number", "range": [0, 4],
                    "distribution": {"zipf": 2.0}, "distinct": distinct})),
            )]))
        };
        let request = serde_json::json!([
            {"S": "${k#0}"}, {"S": "${k#1}"}, {"S": "${k#2}"}, {"S": "${k#3}"}, {"S": "${k#4}"},
            {"S": "${k}"}
        ]);
        let distinct_values = |generators: &Generators| {
            let template = Template::of_json(&request, generators).unwrap();
            let mut draws = Draws::new(generators);
            let mut rng = StdRng::seed_from_u64(5);
            let mut fewest = usize::MAX;
            for _ in 0..200 {
                draws.reset();
                let mut out = Vec::new();
                template.render(generators, &mut draws, &mut rng, &mut out);
                let body: Vec<Value> = serde_json::from_slice(&out).unwrap();
                // `${k}` is draw 0.
                assert_eq!(body[5], body[0]);
                let seen: std::collections::HashSet<_> = body[..5].iter().collect();
                fewest = fewest.min(seen.len());
            }
            fewest
        };
        assert_eq!(distinct_values(&of(true)), 5);
        // The neighbour: without the option, a skewed generator repeats within a request.
        assert!(distinct_values(&of(false)) < 5);
        // Six distinct draws of five values cannot be made, and are refused up front.
        let six = serde_json::json!([request, {"S": "${k#5}"}]);
        let refused = Template::of_json(&six, &of(true)).unwrap_err();
        assert!(
            refused.contains("has 5 values for the 6 draws"),
            "{refused}"
        );
        assert!(Template::of_json(&six, &of(false)).is_ok());
    }
}
