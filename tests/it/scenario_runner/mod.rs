//! Runs acceptance scenarios (format: `tests/scenarios/README.md`) against any executor of
//! DynamoDB operations: `Database::execute` in-process, or the HTTP server. Nothing here
//! knows about the engine.
//!
//! - [`scenarios_to_run`] gathers the repository's own `tests/scenarios` and, when it is
//!   beside the repository, `../shared/scenarios`;
//! - [`load_scenarios`] reads every `*.json` of a folder;
//! - [`run_scenario`] drives one scenario's steps through an [`Executor`];
//! - [`match_value`] is the README's matching rule (subset matching of objects, arrays
//!   element by element, numbers numerically, and item-exact matching inside the members
//!   that hold items).

#![allow(dead_code)] // Each test crate that includes this module uses a different part.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

/// Executes one operation: `Ok(response body)` or `Err((error code, error body))`.
pub trait Executor: FnMut(&str, Value) -> Result<Value, (String, Value)> {}
impl<F: FnMut(&str, Value) -> Result<Value, (String, Value)>> Executor for F {}

/// Members whose values are items (or lists of items) and so are matched exactly.
const ITEM_MEMBERS: &[&str] = &[
    "Item",
    "Items",
    "Attributes",
    "Key",
    "LastEvaluatedKey",
    "ItemCollectionKey",
];
/// Pages `paginate` follows before giving up (a scenario that loops is a failure).
const PAGES_MAX: usize = 1000;
/// How long `poll_until` waits when a step names no `timeout_ms`.
const POLL_TIMEOUT_DEFAULT_MS: u64 = 30_000;
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// The repository's own scenarios, relative to the manifest directory: always run.
pub const OWN_FOLDER: &str = "tests/scenarios";
/// The project's shared scenarios, relative to the manifest directory: run when present.
pub const SHARED_FOLDER: &str = "../shared/scenarios";
/// Set to `1` (CI does) to make a missing or empty shared folder a failure, not a skip.
pub const REQUIRE_SHARED_VARIABLE: &str = "SHOAL_REQUIRE_SHARED_SCENARIOS";

/// One scenario file.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    /// The folder it was read from, as named in output (`tests/scenarios`, ...).
    pub folder: String,
    pub path: PathBuf,
    pub options: Map<String, Value>,
    pub steps: Vec<Value>,
}

/// What running a scenario came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    Failed(String),
    /// The scenario uses operations the executor does not support (named).
    Skipped(Vec<String>),
}

impl Scenario {
    /// The name with the folder it came from, for output: `tests/scenarios/lsi-recipe-projections`.
    pub fn title(&self) -> String {
        format!("{}/{}", self.folder, self.name)
    }
}

/// Every scenario the tests run, for the crate at `env!("CARGO_MANIFEST_DIR")`, with
/// [`REQUIRE_SHARED_VARIABLE`] read from the environment. Also returns a line saying what was
/// found, to print.
pub fn scenarios_to_run() -> Result<(Vec<Scenario>, String), String> {
    let require_shared = std::env::var(REQUIRE_SHARED_VARIABLE).is_ok_and(|v| v == "1");
    collect_scenarios(Path::new(env!("CARGO_MANIFEST_DIR")), require_shared)
}

/// [`OWN_FOLDER`] under `root` always (missing or empty is an error), then [`SHARED_FOLDER`]
/// when it holds scenarios. A missing or empty shared folder is skipped, or an error when
/// `require_shared` is set.
pub fn collect_scenarios(
    root: &Path,
    require_shared: bool,
) -> Result<(Vec<Scenario>, String), String> {
    let mut scenarios = load_folder(root, OWN_FOLDER)?;
    let own = scenarios.len();
    let shared_dir = root.join(SHARED_FOLDER);
    let shared_present = std::fs::read_dir(&shared_dir).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.path().extension().is_some_and(|ext| ext == "json"))
    });
    let summary = if shared_present {
        let shared = load_folder(root, SHARED_FOLDER)?;
        let line = format!(
            "{own} scenario(s) from {OWN_FOLDER}, {} from {SHARED_FOLDER}",
            shared.len()
        );
        scenarios.extend(shared);
        line
    } else if require_shared {
        return Err(format!(
            "{REQUIRE_SHARED_VARIABLE}=1 but {} is missing or holds no *.json scenarios: \
             the project's shared scenarios must sit beside the repository (CI puts them there)",
            shared_dir.display()
        ));
    } else {
        format!(
            "{own} scenario(s) from {OWN_FOLDER}; {SHARED_FOLDER} is not beside the repository \
             (or holds no scenarios), so only those run (set {REQUIRE_SHARED_VARIABLE}=1 to \
             require it)"
        )
    };
    Ok((scenarios, summary))
}

fn load_folder(root: &Path, folder: &str) -> Result<Vec<Scenario>, String> {
    let mut scenarios = load_scenarios(&root.join(folder))?;
    for scenario in &mut scenarios {
        scenario.folder = folder.to_string();
    }
    Ok(scenarios)
}

/// Reads every `*.json` in `dir`, sorted by file name. A missing or empty folder, or a file
/// that is not a scenario, is an error.
pub fn load_scenarios(dir: &Path) -> Result<Vec<Scenario>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read scenario folder {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("no *.json scenarios in {}", dir.display()));
    }
    paths.iter().map(|path| load_scenario(path)).collect()
}

fn load_scenario(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = json
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{}: no \"name\"", path.display()))?
        .to_string();
    let options = match json.get("options") {
        None => Map::new(),
        Some(Value::Object(options)) => options.clone(),
        Some(_) => return Err(format!("{}: \"options\" is not an object", path.display())),
    };
    let steps = json
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{}: no \"steps\" array", path.display()))?
        .clone();
    let folder = path
        .parent()
        .map(|dir| dir.display().to_string())
        .unwrap_or_default();
    Ok(Scenario {
        name,
        folder,
        path: path.to_path_buf(),
        options,
        steps,
    })
}

/// The operations a scenario uses that `supported` does not know, in first-use order.
pub fn unsupported_operations(
    scenario: &Scenario,
    supported: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut missing = Vec::new();
    for step in &scenario.steps {
        let op = step.get("op").and_then(Value::as_str).unwrap_or_default();
        if !supported(op) && !missing.iter().any(|m| m == op) {
            missing.push(op.to_string());
        }
    }
    missing
}

/// Runs every step of `scenario` through `execute`, stopping at the first failure.
pub fn run_scenario(
    scenario: &Scenario,
    supported: impl Fn(&str) -> bool,
    mut execute: impl Executor,
) -> Outcome {
    let missing = unsupported_operations(scenario, supported);
    if !missing.is_empty() {
        return Outcome::Skipped(missing);
    }
    for (position, step) in scenario.steps.iter().enumerate() {
        if let Err(reason) = run_step(step, &mut execute) {
            let op = step.get("op").and_then(Value::as_str).unwrap_or("?");
            let note = step
                .get("note")
                .and_then(Value::as_str)
                .map(|n| format!(" (note: {n})"))
                .unwrap_or_default();
            return Outcome::Failed(format!("step {} {op}: {reason}{note}", position + 1));
        }
    }
    Outcome::Passed
}

/// Runs one step and checks everything it expects.
pub fn run_step(step: &Value, execute: &mut impl Executor) -> Result<(), String> {
    let op = step
        .get("op")
        .and_then(Value::as_str)
        .ok_or("the step has no \"op\"")?;
    let request = step
        .get("request")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    let unordered: Vec<String> = match step.get("unordered") {
        None => Vec::new(),
        Some(list) => list
            .as_array()
            .ok_or("\"unordered\" is not a list")?
            .iter()
            .map(|n| {
                n.as_str()
                    .map(str::to_string)
                    .ok_or("\"unordered\" holds a non-string")
            })
            .collect::<Result<_, _>>()?,
    };

    if let Some(code) = step.get("expect_error") {
        let code = code.as_str().ok_or("\"expect_error\" is not a string")?;
        return match execute(op, request) {
            Ok(response) => Err(format!(
                "expected {code}, but the call succeeded: {}",
                brief(&response)
            )),
            Err((actual, body)) if actual == code => {
                let _ = body;
                Ok(())
            }
            Err((actual, body)) => Err(format!("expected {code}, got {actual}: {}", brief(&body))),
        };
    }

    let response = if let Some(target) = step.get("poll_until") {
        let timeout = timeout_of(step)?;
        poll(op, &request, execute, timeout, |response| {
            match_response(target, response, &unordered)
        })?
    } else if let Some(paths) = step.get("poll_until_absent") {
        let paths = string_list(paths, "poll_until_absent")?;
        let timeout = timeout_of(step)?;
        poll(op, &request, execute, timeout, |response| {
            check_absent(response, &paths)
        })?
    } else if step
        .get("paginate")
        .is_some_and(|p| p != &Value::Bool(false))
    {
        paginate(op, request, execute)?
    } else {
        call(op, request, execute)?
    };

    if let Some(expect) = step.get("expect") {
        match_response(expect, &response, &unordered)?;
    }
    if let Some(paths) = step.get("absent") {
        check_absent(&response, &string_list(paths, "absent")?)?;
    }
    if let Some(keys) = step.get("expect_keys") {
        let keys = keys.as_object().ok_or("\"expect_keys\" is not an object")?;
        for (path, names) in keys {
            let expected: BTreeSet<String> =
                string_list(names, "expect_keys")?.into_iter().collect();
            let object = lookup(&response, path)
                .and_then(Value::as_object)
                .ok_or_else(|| {
                    format!("expect_keys: no object at {path} in {}", brief(&response))
                })?;
            let actual: BTreeSet<String> = object.keys().cloned().collect();
            if actual != expected {
                return Err(format!(
                    "expect_keys: {path} has {actual:?}, expected {expected:?}"
                ));
            }
        }
    }
    Ok(())
}

fn call(op: &str, request: Value, execute: &mut impl Executor) -> Result<Value, String> {
    execute(op, request).map_err(|(code, body)| format!("unexpected {code}: {}", brief(&body)))
}

fn timeout_of(step: &Value) -> Result<Duration, String> {
    match step.get("timeout_ms") {
        None => Ok(Duration::from_millis(POLL_TIMEOUT_DEFAULT_MS)),
        Some(ms) => ms
            .as_u64()
            .map(Duration::from_millis)
            .ok_or_else(|| "\"timeout_ms\" is not a whole number".to_string()),
    }
}

/// Repeats the call until `done` accepts the response or `timeout` passes.
fn poll(
    op: &str,
    request: &Value,
    execute: &mut impl Executor,
    timeout: Duration,
    done: impl Fn(&Value) -> Result<(), String>,
) -> Result<Value, String> {
    let start = Instant::now();
    loop {
        let response = call(op, request.clone(), execute)?;
        match done(&response) {
            Ok(()) => return Ok(response),
            Err(reason) if start.elapsed() >= timeout => {
                return Err(format!("still not as expected after {timeout:?}: {reason}"))
            }
            Err(_) => std::thread::sleep(POLL_INTERVAL),
        }
    }
}

/// Follows LastEvaluatedKey until it is absent. The result is the last page with `Items`
/// replaced by every page's items and `Count`/`ScannedCount` summed.
fn paginate(op: &str, mut request: Value, execute: &mut impl Executor) -> Result<Value, String> {
    let mut items = Vec::new();
    let (mut count, mut scanned_count) = (0u64, 0u64);
    for _ in 0..PAGES_MAX {
        let mut page = call(op, request.clone(), execute)?;
        let page_object = page
            .as_object_mut()
            .ok_or("the response is not an object")?;
        if let Some(Value::Array(page_items)) = page_object.remove("Items") {
            items.extend(page_items);
        }
        count += page_object
            .get("Count")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        scanned_count += page_object
            .get("ScannedCount")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match page_object.get("LastEvaluatedKey").cloned() {
            Some(key) => {
                request
                    .as_object_mut()
                    .ok_or("the request is not an object")?
                    .insert("ExclusiveStartKey".to_string(), key);
            }
            None => {
                page_object.insert("Items".to_string(), Value::Array(items));
                page_object.insert("Count".to_string(), count.into());
                page_object.insert("ScannedCount".to_string(), scanned_count.into());
                return Ok(page);
            }
        }
    }
    Err(format!("still paginating after {PAGES_MAX} pages"))
}

fn string_list(value: &Value, member: &str) -> Result<Vec<String>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("\"{member}\" is not a list"))?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("\"{member}\" holds a non-string"))
        })
        .collect()
}

/// The value at a dotted path (`Table.GlobalSecondaryIndexes`, `Items.0.id`).
pub fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(value, |current, segment| match current {
            Value::Object(map) => map.get(segment),
            Value::Array(list) => segment.parse::<usize>().ok().and_then(|i| list.get(i)),
            _ => None,
        })
}

fn check_absent(response: &Value, paths: &[String]) -> Result<(), String> {
    for path in paths {
        if let Some(value) = lookup(response, path) {
            return Err(format!("{path} should be absent but is {}", brief(value)));
        }
    }
    Ok(())
}

/// Matches a whole response: `unordered` names top-level item lists compared as multisets.
pub fn match_response(
    expected: &Value,
    actual: &Value,
    unordered: &[String],
) -> Result<(), String> {
    let (Value::Object(expected_map), Value::Object(actual_map)) = (expected, actual) else {
        return match_value(expected, actual, "");
    };
    for (key, expected_member) in expected_map {
        let actual_member = actual_map
            .get(key)
            .ok_or_else(|| format!("{key} is missing from {}", brief(actual)))?;
        if unordered.iter().any(|u| u == key) {
            match_items_unordered(expected_member, actual_member, key)?;
        } else {
            match_member(key, expected_member, actual_member, key)?;
        }
    }
    Ok(())
}

/// Matches `actual` against `expected` by the README's rules; the error names the path
/// of the first difference.
pub fn match_value(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(expected_map), Value::Object(actual_map)) => {
            for (key, expected_member) in expected_map {
                let member_path = join(path, key);
                let actual_member = actual_map
                    .get(key)
                    .ok_or_else(|| format!("{member_path} is missing"))?;
                match_member(key, expected_member, actual_member, &member_path)?;
            }
            Ok(())
        }
        (Value::Array(expected_list), Value::Array(actual_list)) => {
            if expected_list.len() != actual_list.len() {
                return Err(format!(
                    "{path}: expected {} elements, got {}: {}",
                    expected_list.len(),
                    actual_list.len(),
                    brief(actual)
                ));
            }
            for (i, (e, a)) in expected_list.iter().zip(actual_list).enumerate() {
                match_value(e, a, &join(path, &i.to_string()))?;
            }
            Ok(())
        }
        (Value::Number(e), Value::Number(a)) => {
            let (e, a) = (
                e.as_f64().unwrap_or(f64::NAN),
                a.as_f64().unwrap_or(f64::NAN),
            );
            if (e - a).abs() <= 1e-9 * e.abs().max(a.abs()).max(1.0) {
                Ok(())
            } else {
                Err(format!("{path}: expected {e}, got {a}"))
            }
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!(
            "{path}: expected {}, got {}",
            brief(expected),
            brief(actual)
        )),
    }
}

/// A member of an object: items are matched exactly, everything else by [`match_value`].
fn match_member(key: &str, expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    if !ITEM_MEMBERS.contains(&key) {
        return match_value(expected, actual, path);
    }
    match (expected, actual) {
        (Value::Array(expected_list), Value::Array(actual_list)) => {
            if expected_list.len() != actual_list.len() {
                return Err(format!(
                    "{path}: expected {} items, got {}: {}",
                    expected_list.len(),
                    actual_list.len(),
                    brief(actual)
                ));
            }
            for (i, (e, a)) in expected_list.iter().zip(actual_list).enumerate() {
                match_item(e, a, &join(path, &i.to_string()))?;
            }
            Ok(())
        }
        _ => match_item(expected, actual, path),
    }
}

/// An item list compared as a multiset of exactly matching items.
fn match_items_unordered(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    let (Value::Array(expected_list), Value::Array(actual_list)) = (expected, actual) else {
        return Err(format!("{path}: expected a list, got {}", brief(actual)));
    };
    if expected_list.len() != actual_list.len() {
        return Err(format!(
            "{path}: expected {} items, got {}: {}",
            expected_list.len(),
            actual_list.len(),
            brief(actual)
        ));
    }
    let mut unused: Vec<&Value> = actual_list.iter().collect();
    for expected_item in expected_list {
        let found = unused
            .iter()
            .position(|candidate| match_item(expected_item, candidate, path).is_ok())
            .ok_or_else(|| {
                format!(
                    "{path}: no item matches {} among {}",
                    brief(expected_item),
                    brief(actual)
                )
            })?;
        unused.swap_remove(found);
    }
    Ok(())
}

/// Item-exact: the same attribute names, each with an equal value.
pub fn match_item(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    let (Value::Object(expected_map), Value::Object(actual_map)) = (expected, actual) else {
        return Err(format!(
            "{path}: expected an item {}, got {}",
            brief(expected),
            brief(actual)
        ));
    };
    let expected_names: BTreeSet<&String> = expected_map.keys().collect();
    let actual_names: BTreeSet<&String> = actual_map.keys().collect();
    if expected_names != actual_names {
        return Err(format!(
            "{path}: expected attributes {expected_names:?}, got {actual_names:?} in {}",
            brief(actual)
        ));
    }
    for (name, expected_value) in expected_map {
        if !attribute_values_equal(expected_value, &actual_map[name]) {
            return Err(format!(
                "{}: expected {}, got {}",
                join(path, name),
                brief(expected_value),
                brief(&actual_map[name])
            ));
        }
    }
    Ok(())
}

/// DynamoDB JSON values compared as DynamoDB compares them: numbers by value, sets as sets.
pub fn attribute_values_equal(expected: &Value, actual: &Value) -> bool {
    let (Some((expected_tag, e)), Some((actual_tag, a))) =
        (single_member(expected), single_member(actual))
    else {
        return expected == actual;
    };
    if expected_tag != actual_tag {
        return false;
    }
    match expected_tag.as_str() {
        "N" => match (e.as_str(), a.as_str()) {
            (Some(e), Some(a)) => numbers_equal(e, a),
            _ => false,
        },
        "SS" | "BS" => string_sets(e) == string_sets(a) && string_sets(e).is_some(),
        "NS" => {
            let canonical = |v: &Value| -> Option<BTreeSet<(bool, String, i64)>> {
                v.as_array()?
                    .iter()
                    .map(|n| canonical_number(n.as_str()?))
                    .collect()
            };
            let (e, a) = (canonical(e), canonical(a));
            e.is_some() && e == a
        }
        "M" => match (e.as_object(), a.as_object()) {
            (Some(e), Some(a)) => {
                e.len() == a.len()
                    && e.iter()
                        .all(|(k, v)| a.get(k).is_some_and(|w| attribute_values_equal(v, w)))
            }
            _ => false,
        },
        "L" => match (e.as_array(), a.as_array()) {
            (Some(e), Some(a)) => {
                e.len() == a.len() && e.iter().zip(a).all(|(v, w)| attribute_values_equal(v, w))
            }
            _ => false,
        },
        _ => e == a,
    }
}

fn single_member(value: &Value) -> Option<(&String, &Value)> {
    match value.as_object() {
        Some(map) if map.len() == 1 => map.iter().next(),
        _ => None,
    }
}

fn string_sets(value: &Value) -> Option<BTreeSet<&str>> {
    value.as_array()?.iter().map(Value::as_str).collect()
}

/// Two DynamoDB number texts denote the same value.
pub fn numbers_equal(a: &str, b: &str) -> bool {
    match (canonical_number(a), canonical_number(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// A decimal text as (negative, significant digits, exponent): `-1.50e2` → (true, "15", 1).
/// Zero is (false, "0", 0).
fn canonical_number(text: &str) -> Option<(bool, String, i64)> {
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part
        .bytes()
        .chain(frac_part.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{int_part}{frac_part}");
    let mut exponent = exponent.checked_sub(frac_part.len() as i64)?;
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() {
        return Some((false, "0".to_string(), 0));
    }
    let significant = trimmed.trim_end_matches('0');
    exponent = exponent.checked_add((trimmed.len() - significant.len()) as i64)?;
    Some((negative, significant.to_string(), exponent))
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A JSON value shortened for a message.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 400 {
        return text;
    }
    let mut end = 400;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A repository root at `root/repo` with `own` scenarios, and `shared` of them in
    /// `root/shared/scenarios` (`None`: no shared folder at all).
    fn layout(own: usize, shared: Option<usize>) -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        let write = |dir: &Path, count: usize, prefix: &str| {
            std::fs::create_dir_all(dir).unwrap();
            for i in 0..count {
                let scenario = json!({"name": format!("{prefix}{i}"), "steps": []});
                std::fs::write(dir.join(format!("{prefix}{i}.json")), scenario.to_string())
                    .unwrap();
            }
        };
        write(&repo.join(OWN_FOLDER), own, "own");
        if let Some(count) = shared {
            write(&root.path().join("shared/scenarios"), count, "shared");
        }
        (root, repo)
    }

    #[test]
    fn own_scenarios_always_run_and_shared_ones_when_present() {
        let (_root, repo) = layout(2, None);
        let (scenarios, summary) = collect_scenarios(&repo, false).unwrap();
        assert_eq!(scenarios.len(), 2);
        assert!(summary.contains("not beside"), "{summary}");
        assert_eq!(scenarios[0].title(), "tests/scenarios/own0");

        let (_root, repo) = layout(2, Some(3));
        let (scenarios, summary) = collect_scenarios(&repo, true).unwrap();
        let titles: Vec<String> = scenarios.iter().map(Scenario::title).collect();
        assert_eq!(
            titles,
            [
                "tests/scenarios/own0",
                "tests/scenarios/own1",
                "../shared/scenarios/shared0",
                "../shared/scenarios/shared1",
                "../shared/scenarios/shared2"
            ]
        );
        assert!(summary.contains("3 from ../shared/scenarios"), "{summary}");
    }

    #[test]
    fn a_required_shared_folder_that_is_missing_or_empty_fails() {
        for shared in [None, Some(0)] {
            let (_root, repo) = layout(1, shared);
            let error = collect_scenarios(&repo, true).unwrap_err();
            assert!(error.contains(REQUIRE_SHARED_VARIABLE), "{error}");
            assert!(error.contains("missing or holds no"), "{error}");
            assert_eq!(collect_scenarios(&repo, false).unwrap().0.len(), 1);
        }
        let (_root, repo) = layout(0, Some(1));
        let error = collect_scenarios(&repo, false).unwrap_err();
        assert!(error.contains("no *.json scenarios"), "{error}");
    }

    #[test]
    fn objects_match_as_subsets_and_numbers_numerically() {
        let actual = json!({"A": 1, "B": {"C": 2.0, "D": "x"}, "E": [1, 2]});
        assert!(match_value(&json!({"B": {"C": 2}}), &actual, "").is_ok());
        assert!(match_value(&json!({"E": [1, 2]}), &actual, "").is_ok());
        let wrong_number = match_value(&json!({"B": {"C": 3}}), &actual, "").unwrap_err();
        assert!(wrong_number.contains("B.C"), "{wrong_number}");
        assert!(
            match_value(&json!({"E": [1]}), &actual, "").is_err(),
            "arrays need equal length"
        );
        assert!(
            match_value(&json!({"Z": 1}), &actual, "").is_err(),
            "a missing key is caught"
        );
        assert!(match_value(&json!({"B": {"D": "y"}}), &actual, "").is_err());
    }

    #[test]
    fn items_match_exactly_with_numbers_by_value_and_sets_as_sets() {
        let actual = json!({"Item": {"id": {"S": "a"}, "n": {"N": "1000"}, "s": {"SS": ["x", "y"]},
                                     "ns": {"NS": ["1", "2.50"]}, "m": {"M": {"k": {"N": "1.0"}}}}});
        let expected = json!({"Item": {"id": {"S": "a"}, "n": {"N": "1e3"}, "s": {"SS": ["y", "x"]},
                                       "ns": {"NS": ["2.5", "1"]}, "m": {"M": {"k": {"N": "1"}}}}});
        assert!(match_response(&expected, &actual, &[]).is_ok());
        // An item with an attribute too few or too many does not match.
        let fewer = json!({"Item": {"id": {"S": "a"}}});
        assert!(match_response(&fewer, &actual, &[]).is_err());
        let other_set = json!({"Item": {"id": {"S": "a"}, "n": {"N": "1000"}, "s": {"SS": ["x"]},
                                        "ns": {"NS": ["1", "2.5"]}, "m": {"M": {"k": {"N": "1"}}}}});
        assert!(match_response(&other_set, &actual, &[]).is_err());
        assert!(!attribute_values_equal(
            &json!({"N": "1"}),
            &json!({"S": "1"})
        ));
        assert!(!attribute_values_equal(
            &json!({"N": "-1"}),
            &json!({"N": "1"})
        ));
    }

    #[test]
    fn item_lists_in_order_or_as_multisets() {
        let actual = json!({"Items": [{"k": {"S": "a"}}, {"k": {"S": "b"}}], "Count": 2});
        let reversed = json!({"Items": [{"k": {"S": "b"}}, {"k": {"S": "a"}}]});
        assert!(
            match_response(&reversed, &actual, &[]).is_err(),
            "order matters by default"
        );
        assert!(match_response(&reversed, &actual, &["Items".to_string()]).is_ok());
        let twice = json!({"Items": [{"k": {"S": "a"}}, {"k": {"S": "a"}}]});
        assert!(
            match_response(&twice, &actual, &["Items".to_string()]).is_err(),
            "multiset, not set"
        );
    }

    #[test]
    fn numbers_canonicalise() {
        assert!(numbers_equal("007", "7"));
        assert!(numbers_equal("1.10", "1.1"));
        assert!(numbers_equal("-0.0", "0"));
        assert!(numbers_equal(".5", "0.5"));
        assert!(numbers_equal("1.5e2", "150"));
        assert!(numbers_equal("1E-3", "0.001"));
        assert!(!numbers_equal("1", "10"));
        assert!(!numbers_equal("abc", "abc"));
    }

    #[test]
    fn steps_check_errors_absence_and_keys() {
        let mut execute = |op: &str, _request: Value| -> Result<Value, (String, Value)> {
            match op {
                "Fail" => Err(("ValidationException".to_string(), json!({"message": "no"}))),
                _ => Ok(
                    json!({"Table": {"Name": "T"}, "LastEvaluatedKey": {"a": {"S": "1"}, "b": {"N": "2"}}}),
                ),
            }
        };
        assert!(run_step(
            &json!({"op": "Fail", "expect_error": "ValidationException"}),
            &mut execute
        )
        .is_ok());
        assert!(run_step(
            &json!({"op": "Fail", "expect_error": "ResourceNotFoundException"}),
            &mut execute
        )
        .is_err());
        assert!(run_step(
            &json!({"op": "Ok", "expect_error": "ValidationException"}),
            &mut execute
        )
        .is_err());
        assert!(
            run_step(&json!({"op": "Fail"}), &mut execute).is_err(),
            "a step without expect_error must succeed"
        );
        assert!(run_step(
            &json!({"op": "Ok", "absent": ["Table.Other"]}),
            &mut execute
        )
        .is_ok());
        assert!(run_step(&json!({"op": "Ok", "absent": ["Table.Name"]}), &mut execute).is_err());
        let keys = json!({"op": "Ok", "expect_keys": {"LastEvaluatedKey": ["b", "a"]}});
        assert!(run_step(&keys, &mut execute).is_ok());
        let wrong_keys = json!({"op": "Ok", "expect_keys": {"LastEvaluatedKey": ["a"]}});
        assert!(run_step(&wrong_keys, &mut execute).is_err());
    }

    #[test]
    fn paginate_and_poll() {
        let mut calls = 0;
        let mut pages = |_op: &str, request: Value| -> Result<Value, (String, Value)> {
            calls += 1;
            Ok(match request.get("ExclusiveStartKey") {
                None => {
                    json!({"Items": [{"k": {"S": "a"}}], "Count": 1, "LastEvaluatedKey": {"k": {"S": "a"}}})
                }
                Some(_) => json!({"Items": [{"k": {"S": "b"}}], "Count": 1}),
            })
        };
        let step = json!({"op": "Query", "paginate": true, "expect": {"Items": [{"k": {"S": "a"}}, {"k": {"S": "b"}}], "Count": 2}});
        assert!(run_step(&step, &mut pages).is_ok());
        assert_eq!(calls, 2);

        let mut polls = 0;
        let mut status = |_op: &str, _request: Value| -> Result<Value, (String, Value)> {
            polls += 1;
            Ok(json!({"Status": if polls < 3 { "CREATING" } else { "ACTIVE" }}))
        };
        let step =
            json!({"op": "DescribeTable", "poll_until": {"Status": "ACTIVE"}, "timeout_ms": 5000});
        assert!(run_step(&step, &mut status).is_ok());
        let never =
            json!({"op": "DescribeTable", "poll_until": {"Status": "GONE"}, "timeout_ms": 50});
        assert!(run_step(&never, &mut status).is_err());
    }
}
