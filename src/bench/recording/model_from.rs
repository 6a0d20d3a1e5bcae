//! `shoal bench model-from FILE`: a data model from a recording. Calls are grouped into
//! access patterns by operation, table, index and expression shapes; each pattern gets its
//! rate, its key distributions (`fit.rs`), its item sizes, and a request template built
//! from its expressions as sent; the tables are the recording's CreateTable requests made
//! from their descriptions, loaded with as many items as they held when the recording began.
//! The result is an ordinary model file (`data_model::model`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde_json::{json, Map, Value};
use shoal_server::record::format::{Line, RequestLine};

use super::fit::{self, Counts, SortBehaviour, SortOrder};
use super::read::each_line;
use crate::bench::data_model::model::{
    Distribution, Generator, GeneratorKind, Load, Model, Pattern, Prices, Run, OPERATIONS,
};

/// Item sizes kept per pattern (the first ones).
const SIZE_SAMPLES_MAX: usize = 100_000;
/// Most items a generated load writes per table.
const LOAD_ITEMS_MAX: u64 = 1_000_000;
/// The attribute that carries an item's bytes beyond its keys.
pub const FILLER_ATTRIBUTE: &str = "payload";
/// Operations whose calls name several items (or statements), each a part of the line.
const MULTI_PART: [&str; 6] = [
    "BatchWriteItem",
    "BatchGetItem",
    "TransactWriteItems",
    "TransactGetItems",
    "BatchExecuteStatement",
    "ExecuteTransaction",
];

/// What one access pattern of the recording did: the figures its model must reproduce.
#[derive(Debug, Clone, Default)]
pub struct RecordedPattern {
    pub name: String,
    pub operation: String,
    pub table: String,
    /// `table` or `table/gsi` (an LSI's partitions are its table's).
    pub partition_target: String,
    pub calls: u64,
    pub rate: f64,
    /// Capacity units charged per call (mean), tables and indexes together.
    pub units_per_call: f64,
    /// Partition key texts with their share of the pattern's calls.
    pub key_shares: Vec<(String, f64)>,
    pub distinct_keys: u64,
    pub errors: u64,
}

/// A model and what the recording did.
pub struct ModelFromRecording {
    pub model: Model,
    pub patterns: Vec<RecordedPattern>,
    /// Groups of calls not made into patterns, with why.
    pub skipped: Vec<String>,
    pub hashed_keys: bool,
    pub dropped: u64,
    pub seconds: f64,
    /// Units charged per partition (`table` or `table/gsi`, key text) over the recording,
    /// hottest first: a call's units all counted on the partition its key names (a write's
    /// GSI units too), so two recordings compare like with like.
    pub partitions: Vec<(String, String, f64)>,
    /// Each pattern's [`group_key`] with its index in the model's patterns.
    pub group_keys: Vec<(String, usize)>,
}

/// Partitions counted at most.
const PARTITIONS_TRACKED_MAX: usize = 1_000_000;

#[derive(Default)]
struct Group {
    first: RequestLine,
    calls: u64,
    pk: Counts,
    sk: Counts,
    sk_order: SortOrder,
    values: BTreeMap<String, Counts>,
    index_keys: BTreeMap<String, Counts>,
    sizes: Vec<u64>,
    units: f64,
    errors: u64,
    /// Calls whose value placeholder held the partition key's value.
    pk_placeholder: HashMap<String, u64>,
    /// Calls whose value placeholder held the sort key's value.
    sk_placeholder: HashMap<String, u64>,
    /// A batch's or transaction's parts by [`part_key`], each a group of the parts alike
    /// (`calls` counting parts); `pk` above then counts every part's key.
    parts: Vec<(String, Group)>,
    /// The parts by table, for the key generators every part on one table shares.
    by_table: BTreeMap<String, Group>,
}

impl Group {
    /// The groups whose items and keys a pattern writes: its parts', or its own.
    fn item_groups(&self) -> Box<dyn Iterator<Item = &Group> + '_> {
        if self.parts.is_empty() {
            Box::new(std::iter::once(self))
        } else {
            Box::new(self.parts.iter().map(|(_, part)| part))
        }
    }
}

/// The access pattern a call belongs to: its operation, table, index, expression shapes and
/// read consistency; for a batch or transaction, its operation and how many parts of each
/// kind it holds ([`part_key`]): a batch of 25 puts and one of 7 are two patterns, each
/// with its own rate, so that every call of a pattern names as many items as recorded
/// (a mean count would misstate the units of all of them).
pub fn group_key(line: &RequestLine) -> String {
    if !line.parts.is_empty() {
        let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
        for part in &line.parts {
            *kinds.entry(part_key(part)).or_default() += 1;
        }
        return serde_json::to_string(&(&line.op, kinds)).unwrap_or_default();
    }
    part_key(line)
}

/// What makes parts (or single-item calls) alike: operation or part kind, table, index,
/// expression shapes and read consistency.
fn part_key(line: &RequestLine) -> String {
    serde_json::to_string(&(
        &line.op,
        &line.table,
        &line.index,
        &line.shape,
        line.params.get("ConsistentRead"),
    ))
    .unwrap_or_default()
}

/// How many parts of a kind a call of `group` holds: every call of a group holds the same
/// number ([`group_key`]); rounded, at least 1, against a count the recording cut short.
fn part_count(group: &Group, part: &Group) -> u64 {
    ((part.calls as f64 / group.calls.max(1) as f64).round() as u64).max(1)
}

/// A batch's or transaction's readable name: "BatchWriteItem: 25 x Put Orders",
/// "TransactWriteItems: Put Orders + Update Customers ADD orders ?".
fn multi_part_name(group: &Group) -> String {
    let parts: Vec<String> = group
        .parts
        .iter()
        .map(|(_, part)| match part_count(group, part) {
            1 => pattern_name(&part.first),
            count => format!("{count} x {}", pattern_name(&part.first)),
        })
        .collect();
    format!("{}: {}", group.first.op, parts.join(" + "))
}

/// `value` with each `${name}` made the draw `${name#number}`: one part's own draws.
fn numbered(value: &Value, number: u64) -> Value {
    match value {
        Value::String(text) => {
            let mut out = String::with_capacity(text.len() + 4);
            let mut rest = text.as_str();
            while let Some(start) = rest.find("${") {
                let Some(length) = rest[start + 2..].find('}') else {
                    break;
                };
                out.push_str(&rest[..start + 2 + length]);
                out.push_str(&format!("#{number}}}"));
                rest = &rest[start + 3 + length..];
            }
            out.push_str(rest);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| numbered(v, number)).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), numbered(v, number)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A batch's or transaction's request from its parts' requests (each kind with its count),
/// every part with its own draw number.
fn multi_part_request(
    operation: &str,
    parts: &[(&Group, u64, Map<String, Value>)],
) -> Map<String, Value> {
    let mut request = Map::new();
    let mut number = 0;
    let mut actions = Vec::new();
    let mut statements = Vec::new();
    let mut tables: Map<String, Value> = Map::new();
    for (part, count, body) in parts {
        let kind = part.first.op.as_str();
        let table = part.first.table.clone().unwrap_or_default();
        for _ in 0..*count {
            let body = numbered(&Value::Object(body.clone()), number);
            number += 1;
            match operation {
                "BatchWriteItem" => {
                    let (wrapper, member) = match kind {
                        "Put" => ("PutRequest", "Item"),
                        _ => ("DeleteRequest", "Key"),
                    };
                    let writes = tables.entry(table.clone()).or_insert_with(|| json!([]));
                    if let Some(writes) = writes.as_array_mut() {
                        writes.push(json!({ wrapper: { member: body[member] } }));
                    }
                }
                "BatchGetItem" => {
                    let entry = tables.entry(table.clone()).or_insert_with(|| {
                        // The table's projection, names and consistency, as recorded.
                        let mut entry = body.as_object().cloned().unwrap_or_default();
                        entry.retain(|k, _| {
                            matches!(
                                k.as_str(),
                                "ProjectionExpression"
                                    | "ExpressionAttributeNames"
                                    | "ConsistentRead"
                            )
                        });
                        entry.insert("Keys".into(), json!([]));
                        Value::Object(entry)
                    });
                    if let Some(keys) = entry["Keys"].as_array_mut() {
                        keys.push(body["Key"].clone());
                    }
                }
                // A PartiQL batch's or transaction's statement is its part's body.
                "BatchExecuteStatement" | "ExecuteTransaction" => statements.push(body),
                _ => actions.push(json!({ kind: body })),
            }
        }
    }
    if !statements.is_empty() {
        let member = match operation {
            "BatchExecuteStatement" => "Statements",
            _ => "TransactStatements",
        };
        request.insert(member.into(), Value::Array(statements));
    } else if actions.is_empty() {
        request.insert("RequestItems".into(), Value::Object(tables));
    } else {
        request.insert("TransactItems".into(), Value::Array(actions));
    }
    request
}

/// A pattern's readable name: "Query Orders by ByStatus where status = ?".
fn pattern_name(line: &RequestLine) -> String {
    let table = line.table.as_deref().unwrap_or("?");
    if let Some(statement) = &line.shape.statement {
        // A PartiQL batch's part is its statement alone.
        return match line.op.as_str() {
            "Statement" => statement.clone(),
            op => format!("{op} {statement}"),
        };
    }
    let mut name = format!("{} {table}", line.op);
    if let Some(index) = &line.index {
        name.push_str(&format!(" by {index}"));
    }
    let shape = &line.shape;
    if let Some(key) = &shape.key_condition {
        name.push_str(&format!(" where {key}"));
    }
    if let Some(update) = &shape.update {
        name.push_str(&format!(" {update}"));
    }
    if let Some(filter) = &shape.filter {
        name.push_str(&format!(" filter {filter}"));
    }
    if let Some(condition) = &shape.condition {
        name.push_str(&format!(" if {condition}"));
    }
    if let Some(projection) = &shape.projection {
        name.push_str(&format!(" get {projection}"));
    }
    if line.params.get("ConsistentRead") == Some(&Value::Bool(true)) {
        name.push_str(" (consistent)");
    }
    name
}

/// Reads `paths` and fits a model to them; `name` names the model.
pub fn model_from(paths: &[impl AsRef<Path>], name: &str) -> Result<ModelFromRecording, String> {
    let mut tables: Vec<(String, Value)> = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut other_operations: BTreeMap<String, u64> = BTreeMap::new();
    // Batches and transactions whose parts the recording does not hold.
    let mut without_parts: BTreeMap<String, u64> = BTreeMap::new();
    let (mut first_us, mut last_us) = (u64::MAX, 0u64);
    let mut hashed = false;
    let mut dropped = 0;
    let mut starts = 0;
    let mut partitions: HashMap<(String, Option<String>, String), f64> = HashMap::new();
    // Tables created during the recording before it ever described them.
    let mut created: BTreeSet<String> = BTreeSet::new();
    each_line(paths, |line| match line {
        Line::Start(start) => {
            starts += 1;
            hashed |= start.hashed_keys;
        }
        Line::End(end) => dropped += end.dropped,
        Line::Table(table) => {
            let name = table.table["TableName"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            // The first description of a table is the one as created (or as the recording
            // found it, with its item count then).
            if !name.is_empty() && !tables.iter().any(|(n, _)| *n == name) {
                let mut description = table.table;
                if created.contains(&name) {
                    // The recorder describes a new table when its writer reaches the
                    // CreateTable line, after writes that followed it may have landed: the
                    // table started empty.
                    description["ItemCount"] = json!(0);
                    description["TableSizeBytes"] = json!(0);
                }
                tables.push((name, description));
            }
        }
        Line::Request(line) => {
            first_us = first_us.min(line.at_us);
            last_us = last_us.max(line.at_us);
            if let (true, None, Some(table)) = (line.op == "CreateTable", &line.error, &line.table)
            {
                if !tables.iter().any(|(n, _)| n == table) {
                    created.insert(table.clone());
                }
            }
            // Every operation a model's pattern may name is fitted; the others are counted.
            if !OPERATIONS.contains(&line.op.as_str()) || line.table.is_none() {
                *other_operations.entry(line.op.clone()).or_default() += 1;
                return;
            }
            if MULTI_PART.contains(&line.op.as_str()) && line.parts.is_empty() {
                *without_parts.entry(line.op.clone()).or_default() += 1;
                return;
            }
            // A batch's or transaction's units are shared equally among its parts, each on
            // its own partition: the rule the bench counts them by.
            let items: Vec<&RequestLine> = if line.parts.is_empty() {
                vec![&*line]
            } else {
                line.parts.iter().collect()
            };
            let units = line.units.unwrap_or(0.0) / items.len() as f64;
            for item in items {
                if let (Some(table), Some(pk)) = (&item.table, &item.pk) {
                    let key = (table.clone(), item.index.clone(), pk.clone());
                    if partitions.len() < PARTITIONS_TRACKED_MAX || partitions.contains_key(&key) {
                        *partitions.entry(key).or_default() += units;
                    }
                }
            }
            let key = group_key(&line);
            let index = *by_key.entry(key).or_insert_with(|| {
                groups.push(Group {
                    first: RequestLine {
                        body: None,
                        ..(*line).clone()
                    },
                    ..Group::default()
                });
                groups.len() - 1
            });
            add(&mut groups[index], &line);
        }
    })?;
    if starts == 0 {
        return Err(
            "not a recording: no `start` line (record with `shoal serve --record FILE`)".into(),
        );
    }
    let seconds = if first_us == u64::MAX {
        1.0
    } else {
        ((last_us - first_us) as f64 / 1e6).max(1.0)
    };
    let mut skipped: Vec<String> = other_operations
        .iter()
        .filter_map(|(op, calls)| {
            let why = if OPERATIONS.contains(&op.as_str()) {
                "they name no table"
            } else {
                // The control plane (CreateTable, DescribeTable, …) is no access pattern.
                return None;
            };
            Some(format!("{op}: {calls} calls ({why})"))
        })
        .chain(without_parts.iter().map(|(op, calls)| {
            format!(
                "{op}: {calls} calls (their parts are not in the recording: recorded before \
                 parts were, or a request that did not parse)"
            )
        }))
        .collect();
    groups.retain(|group| {
        let known = tables
            .iter()
            .any(|(n, _)| Some(n) == group.first.table.as_ref());
        if !known {
            skipped.push(format!(
                "{}: {} calls on a table the recording never described",
                pattern_name(&group.first),
                group.calls
            ));
        }
        known
    });
    if groups.is_empty() {
        return Err("the recording holds no data-plane calls on a described table to model".into());
    }
    let mut fitted = build(name, &tables, &groups, seconds, hashed, dropped, skipped);
    fitted.group_keys = groups
        .iter()
        .enumerate()
        .map(|(index, group)| (group_key(&group.first), index))
        .collect();
    let mut listed: Vec<(String, String, f64)> = partitions
        .into_iter()
        .map(|((table, index, key), units)| {
            let local = tables
                .iter()
                .find(|(n, _)| *n == table)
                .is_some_and(|(_, t)| {
                    index
                        .as_ref()
                        .is_some_and(|i| keys_of(t).local_indexes.contains(i))
                });
            let target = match index {
                Some(index) if !local => format!("{table}/{index}"),
                _ => table,
            };
            (target, key, units)
        })
        .collect();
    listed.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.1.cmp(&b.1)));
    fitted.partitions = listed;
    Ok(fitted)
}

fn add(group: &mut Group, line: &RequestLine) {
    for part in &line.parts {
        let key = part_key(part);
        let at = match group.parts.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                let first = Group {
                    first: part.clone(),
                    ..Group::default()
                };
                group.parts.push((key, first));
                group.parts.len() - 1
            }
        };
        add(&mut group.parts[at].1, part);
        let table = part.table.clone().unwrap_or_default();
        let by_table = group.by_table.entry(table).or_insert_with(|| Group {
            first: part.clone(),
            ..Group::default()
        });
        add(by_table, part);
        if let (Some(pk), Some(kind)) = (&part.pk, &part.pk_type) {
            group.pk.add(pk, kind);
        }
    }
    group.calls += 1;
    if line.error.is_some() {
        group.errors += 1;
    }
    group.units += line.units.unwrap_or(0.0);
    if let (Some(pk), Some(kind)) = (&line.pk, &line.pk_type) {
        group.pk.add(pk, kind);
        for (placeholder, value) in &line.values {
            if value.value == *pk {
                *group.pk_placeholder.entry(placeholder.clone()).or_default() += 1;
            }
        }
    }
    if let (Some(sk), Some(kind)) = (&line.sk, &line.sk_type) {
        group.sk.add(sk, kind);
        for (placeholder, value) in &line.values {
            if value.value == *sk {
                *group.sk_placeholder.entry(placeholder.clone()).or_default() += 1;
            }
        }
        group.sk_order.writes += 1;
        match line.sk_order.as_deref() {
            Some("up") => group.sk_order.up += 1,
            Some("down") => group.sk_order.down += 1,
            Some("same") => group.sk_order.same += 1,
            _ => {}
        }
        if line.sk_time {
            group.sk_order.time_like += 1;
        }
    }
    for (placeholder, value) in &line.values {
        group
            .values
            .entry(placeholder.clone())
            .or_default()
            .add(&value.value, &value.kind);
    }
    for (attribute, value) in &line.index_keys {
        group
            .index_keys
            .entry(attribute.clone())
            .or_default()
            .add(&value.value, &value.kind);
    }
    let size_of_write = matches!(line.op.as_str(), "PutItem" | "Put");
    if let (true, Some(bytes)) = (size_of_write, line.item_bytes) {
        if group.sizes.len() < SIZE_SAMPLES_MAX {
            group.sizes.push(bytes);
        }
    }
}

/// A table's key attributes (hash, range) with their types, and each index's.
struct Keys {
    hash: Option<(String, String)>,
    range: Option<(String, String)>,
    index_hash: BTreeMap<String, String>,
    local_indexes: Vec<String>,
}

fn keys_of(table: &Value) -> Keys {
    let type_of = |name: &str| {
        table["AttributeDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["AttributeName"] == name)
            .and_then(|d| d["AttributeType"].as_str())
            .unwrap_or("S")
            .to_string()
    };
    let key = |schema: &Value, kind: &str| {
        schema
            .as_array()
            .into_iter()
            .flatten()
            .find(|k| k["KeyType"] == kind)
            .and_then(|k| k["AttributeName"].as_str())
            .map(|n| (n.to_string(), type_of(n)))
    };
    let mut index_hash = BTreeMap::new();
    for index in table["GlobalSecondaryIndexes"]
        .as_array()
        .into_iter()
        .chain(table["LocalSecondaryIndexes"].as_array())
        .flatten()
    {
        if let (Some(name), Some((hash, _))) = (
            index["IndexName"].as_str(),
            key(&index["KeySchema"], "HASH"),
        ) {
            index_hash.insert(name.to_string(), hash);
        }
    }
    Keys {
        hash: key(&table["KeySchema"], "HASH"),
        range: key(&table["KeySchema"], "RANGE"),
        index_hash,
        local_indexes: table["LocalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["IndexName"].as_str().map(str::to_string))
            .collect(),
    }
}

/// The counts of a key space (every space a pattern draws from was counted; `empty`
/// otherwise).
fn space_of<'a>(
    spaces: &'a BTreeMap<(String, String), Counts>,
    table: &str,
    attribute: &str,
    empty: &'a Counts,
) -> &'a Counts {
    spaces
        .get(&(table.to_string(), attribute.to_string()))
        .unwrap_or(empty)
}

/// A generator name safe in `${…}`.
fn slug(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// `{"S": "${name}"}` and the like.
fn typed(kind: &str, generator: &str) -> Value {
    json!({ kind: format!("${{{generator}}}") })
}

#[allow(clippy::too_many_arguments)]
fn build(
    name: &str,
    tables: &[(String, Value)],
    groups: &[Group],
    seconds: f64,
    hashed: bool,
    dropped: u64,
    skipped: Vec<String>,
) -> ModelFromRecording {
    let described: BTreeMap<&str, &Value> = tables.iter().map(|(n, t)| (n.as_str(), t)).collect();
    // Each key space (a table's or index's key attribute) over every pattern that draws from
    // it: one prefix, length and count of values, so that patterns meet the same items.
    let mut spaces: BTreeMap<(String, String), Counts> = BTreeMap::new();
    let mut merge = |space: (String, String), counts: &Counts| {
        let merged = spaces.entry(space).or_default();
        if merged.kind.is_empty() {
            merged.kind = counts.kind.clone();
        }
        for (value, count) in &counts.by_value {
            *merged.by_value.entry(value.clone()).or_default() += count;
        }
        merged.draws += counts.draws;
        merged.untracked += counts.untracked;
    };
    for group in groups.iter().flat_map(Group::item_groups) {
        let table = group.first.table.clone().unwrap_or_default();
        let Some(description) = described.get(table.as_str()) else {
            continue;
        };
        let keys = keys_of(description);
        let hash = match &group.first.index {
            Some(index) => keys.index_hash.get(index).cloned(),
            None => keys.hash.as_ref().map(|(n, _)| n.clone()),
        };
        if let Some(hash) = hash {
            merge((table.clone(), hash), &group.pk);
        }
        if let Some((range, _)) = &keys.range {
            merge((table.clone(), range.clone()), &group.sk);
        }
        for (attribute, counts) in &group.index_keys {
            merge((table.clone(), attribute.clone()), counts);
        }
    }
    let no_space = Counts::default();
    let mut fitting = Fitting {
        spaces: &spaces,
        generators: BTreeMap::new(),
        put_items: BTreeMap::new(),
    };
    let mut patterns = Vec::new();
    let mut recorded = Vec::new();
    let mut names_taken: BTreeMap<String, u32> = BTreeMap::new();
    let mut used_tables: BTreeSet<String> = BTreeSet::new();
    for (number, group) in groups.iter().enumerate() {
        let line = &group.first;
        let table = line.table.clone().unwrap_or_default();
        let Some(description) = described.get(table.as_str()) else {
            continue;
        };
        let keys = keys_of(description);
        let mut pattern_name = if group.parts.is_empty() {
            pattern_name(line)
        } else {
            multi_part_name(group)
        };
        let taken = names_taken.entry(pattern_name.clone()).or_default();
        *taken += 1;
        if *taken > 1 {
            pattern_name = format!("{pattern_name} ({taken})");
        }
        let tag = format!("p{number}");
        used_tables.insert(table.clone());
        let request = if group.parts.is_empty() {
            let item_keys = ItemKeys {
                group,
                tag: &tag,
                puts: line.op == "PutItem",
                distinct: false,
            };
            item_request(&mut fitting, group, &keys, &tag, &item_keys)
        } else {
            let mut parts = Vec::new();
            for (signature, (_, part_group)) in group.parts.iter().enumerate() {
                let part_table = part_group.first.table.clone().unwrap_or_default();
                let Some(part_description) = described.get(part_table.as_str()) else {
                    continue;
                };
                used_tables.insert(part_table.clone());
                // Every part on one table draws its key from one generator, each with its
                // own draw number: distinct, so no call names an item twice.
                let key_group = &group.by_table[&part_table];
                let key_tag = format!("{tag}_{}", slug(&part_table));
                let item_keys = ItemKeys {
                    group: key_group,
                    tag: &key_tag,
                    puts: group.parts.iter().any(|(_, g)| {
                        g.first.op == "Put" && g.first.table == part_group.first.table
                    }),
                    distinct: true,
                };
                let body = item_request(
                    &mut fitting,
                    part_group,
                    &keys_of(part_description),
                    &format!("{tag}s{signature}"),
                    &item_keys,
                );
                parts.push((part_group, part_count(group, part_group), body));
            }
            multi_part_request(&line.op, &parts)
        };

        let rate = group.calls as f64 / seconds;
        let partition_target = match &line.index {
            Some(index) if !keys.local_indexes.contains(index) => format!("{table}/{index}"),
            _ => table.clone(),
        };
        let draws = group.pk.draws.max(1) as f64;
        let mut key_shares: Vec<(String, f64)> = group
            .pk
            .by_value
            .iter()
            .map(|(k, c)| (k.clone(), *c as f64 / draws))
            .collect();
        key_shares.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        key_shares.truncate(20);
        recorded.push(RecordedPattern {
            name: pattern_name.clone(),
            operation: line.op.clone(),
            table: table.clone(),
            partition_target,
            calls: group.calls,
            rate,
            units_per_call: group.units / group.calls.max(1) as f64,
            key_shares,
            distinct_keys: group.pk.by_value.len() as u64,
            errors: group.errors,
        });
        patterns.push(Pattern {
            name: pattern_name,
            operation: line.op.clone(),
            request: Value::Object(request),
            weight: None,
            rate: Some((rate * 1000.0).round().max(1.0) / 1000.0),
        });
    }
    // Tables as created, loaded with the items they held when the recording began.
    let Fitting {
        mut generators,
        put_items,
        ..
    } = fitting;
    let mut creates = Vec::new();
    let mut loads = Vec::new();
    for (table, description) in tables.iter().filter(|(n, _)| used_tables.contains(n)) {
        if let Ok(create) = crate::transfer::schema::create_table_request(description, table) {
            creates.push(create);
        }
        let count = description["ItemCount"]
            .as_u64()
            .unwrap_or(0)
            .min(LOAD_ITEMS_MAX);
        if count == 0 {
            continue;
        }
        let keys = keys_of(description);
        let mut item = put_items
            .get(table)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // Loaded items spread uniformly over the partition keys, in sequence on the sort key.
        let key_generators = [(&keys.hash, true), (&keys.range, false)];
        for (key, is_hash) in key_generators {
            let Some((attribute, kind)) = key else {
                continue;
            };
            let generator_name = format!("{}_load_{}", slug(attribute), slug(table));
            let space = space_of(&spaces, table, attribute, &no_space);
            let generator = if is_hash {
                fit::generator_like(space, Distribution::Uniform)
            } else {
                sort_key_generator(space, kind, SortBehaviour::Sequential)
            };
            generators.insert(generator_name.clone(), generator);
            item.insert(attribute.clone(), typed(kind, &generator_name));
        }
        if !item.contains_key(FILLER_ATTRIBUTE) {
            let average = description["TableSizeBytes"].as_u64().unwrap_or(0) / count.max(1);
            let base = item_base_bytes(&item, &generators) + FILLER_ATTRIBUTE.len() as u64;
            let generator_name = format!("{FILLER_ATTRIBUTE}_load_{}", slug(table));
            let length = average.saturating_sub(base).max(1) as u32;
            generators.insert(generator_name.clone(), filler_generator(length, length));
            item.insert(FILLER_ATTRIBUTE.into(), typed("S", &generator_name));
        }
        loads.push(Load {
            table: table.clone(),
            count,
            item: Value::Object(item),
        });
    }
    let model = Model {
        name: Some(name.to_string()),
        tables: creates,
        generators,
        load: loads,
        patterns,
        run: Run {
            seconds: Some((seconds * 10.0).round() / 10.0),
            operations: None,
            concurrency: Some(4),
            rate: None,
            seed: Some(1),
            attempts: None,
        },
        prices: Prices::default(),
    };
    ModelFromRecording {
        model,
        patterns: recorded,
        skipped,
        hashed_keys: hashed,
        dropped,
        seconds,
        partitions: Vec::new(),
        group_keys: Vec::new(),
    }
}

/// Whose keys an item-level request draws, and how.
struct ItemKeys<'a> {
    /// The calls (or parts) whose keys the generators reproduce.
    group: &'a Group,
    /// Names the key generators (`{attribute}_{tag}`).
    tag: &'a str,
    /// Whether the keys are written by puts (the sort key then follows their order).
    puts: bool,
    /// Whether one call's draws of the key must differ (the parts of a batch or transaction).
    distinct: bool,
}

/// What the patterns share while they are fitted.
struct Fitting<'a> {
    spaces: &'a BTreeMap<(String, String), Counts>,
    generators: BTreeMap<String, Generator>,
    /// The PutItem (or Put part) item of each table, whose shape the load reuses.
    put_items: BTreeMap<String, Value>,
}

/// The operation whose request a part's body is like: a transaction's `Put` a PutItem's, a
/// `ConditionCheck` or `Get` a GetItem's (it names a key).
fn single_operation(operation: &str) -> &str {
    match operation {
        "Put" => "PutItem",
        "Update" => "UpdateItem",
        "Delete" => "DeleteItem",
        "ConditionCheck" | "Get" => "GetItem",
        "Statement" => "ExecuteStatement",
        other => other,
    }
}

/// The request of one single-item call (or one part of a batch or transaction) of `group`:
/// its expressions and parameters as recorded, its values, key and item from fitted
/// generators (the key's from `item_keys`).
fn item_request(
    fitting: &mut Fitting<'_>,
    group: &Group,
    keys: &Keys,
    tag: &str,
    item_keys: &ItemKeys<'_>,
) -> Map<String, Value> {
    let line = &group.first;
    let table = line.table.clone().unwrap_or_default();
    let single = single_operation(&line.op);
    let no_space = Counts::default();
    let spaces = fitting.spaces;
    let generators = &mut fitting.generators;
    let mut request = Map::new();
    if single == "ExecuteStatement" {
        // The statement names its table; its literals are parameters now.
        if let Some(statement) = &line.shape.statement {
            request.insert("Statement".into(), json!(statement));
        }
    } else {
        request.insert("TableName".into(), json!(table));
        if let Some(index) = &line.index {
            request.insert("IndexName".into(), json!(index));
        }
    }
    for (parameter, text) in &line.expressions {
        request.insert(parameter.clone(), json!(text));
    }
    if !line.names.is_empty() {
        request.insert("ExpressionAttributeNames".into(), json!(line.names));
    }
    for (parameter, value) in &line.params {
        request.insert(parameter.clone(), value.clone());
    }
    // The partition key's generator: the key space's shape, this pattern's skew.
    let hash = match &line.index {
        Some(index) => keys
            .index_hash
            .get(index)
            .map(|h| (h.clone(), group.pk.kind.clone())),
        None => keys.hash.clone(),
    };
    let pk_generator = hash.as_ref().map(|(attribute, _)| {
        let space = space_of(spaces, &table, attribute, &no_space);
        let generator_name = format!("{}_{}", slug(attribute), item_keys.tag);
        let pk = &item_keys.group.pk;
        let mut generator = if fit::is_small_set(pk) {
            fit::named_all(pk)
        } else {
            fit::generator_like(space, fit::distribution(pk))
        };
        // Without a sort key, the partition key alone tells a call's items apart.
        generator.distinct = item_keys.distinct && keys.range.is_none();
        generators.insert(generator_name.clone(), generator);
        generator_name
    });
    // The placeholder that held a key's value in at least half the calls.
    let key_placeholder = |held: &HashMap<String, u64>| {
        held.iter()
            .max_by_key(|(_, calls)| **calls)
            .filter(|(_, calls)| **calls * 2 >= group.calls)
            .map(|(p, _)| p.clone())
    };
    let pk_placeholder = key_placeholder(&group.pk_placeholder);
    // A statement of a batch or transaction gives its sort key as a parameter: drawn, as a
    // BatchWriteItem's sort keys are, from one generator of the table's sort keys, each part
    // its own distinct draw, so no call names an item twice.
    let sk_placeholder = key_placeholder(&group.sk_placeholder)
        .filter(|_| item_keys.distinct && single == "ExecuteStatement");
    let mut values = Map::new();
    for (placeholder, counts) in &group.values {
        let kind = counts.kind.as_str();
        let generator_name = match (&pk_placeholder, &pk_generator, &keys.range) {
            (Some(p), Some(g), _) if p == placeholder => g.clone(),
            (_, _, Some((attribute, _))) if sk_placeholder.as_ref() == Some(placeholder) => {
                let sk = &item_keys.group.sk;
                let mut generator = if fit::is_small_set(sk) {
                    fit::named_all(sk)
                } else {
                    fit::generator_like(sk, fit::distribution(sk))
                };
                generator.distinct = true;
                let generator_name = format!("{}_{}", slug(attribute), item_keys.tag);
                generators.insert(generator_name.clone(), generator);
                generator_name
            }
            _ => {
                // A statement's `?2` is its second parameter.
                let base = match placeholder.strip_prefix('?') {
                    Some(position) => format!("parameter{position}"),
                    None => slug(placeholder.trim_start_matches(':')),
                };
                let generator_name = format!("{base}_{tag}");
                let generator = if fit::is_small_set(counts) {
                    fit::named_all(counts)
                } else {
                    fit::generator_like(counts, fit::distribution(counts))
                };
                generators.insert(generator_name.clone(), generator);
                generator_name
            }
        };
        let value = match kind {
            "BOOL" => {
                let most = counts
                    .by_value
                    .iter()
                    .max_by_key(|(_, c)| **c)
                    .map(|(v, _)| v == "true");
                json!({"BOOL": most.unwrap_or(true)})
            }
            "B" => json!({"B": "AA=="}),
            _ => typed(kind, &generator_name),
        };
        values.insert(placeholder.clone(), value);
    }
    if single == "ExecuteStatement" {
        // `?1`, `?2`, … in the statement's order; a value the recording could not read
        // (not a scalar) is a NULL.
        let count = line
            .shape
            .statement
            .as_deref()
            .map_or(0, |s| s.matches('?').count());
        let parameters: Vec<Value> = (1..=count)
            .map(|at| {
                values
                    .remove(&format!("?{at}"))
                    .unwrap_or_else(|| json!({"NULL": true}))
            })
            .collect();
        if !parameters.is_empty() {
            request.insert("Parameters".into(), Value::Array(parameters));
        }
    } else if !values.is_empty() {
        request.insert("ExpressionAttributeValues".into(), Value::Object(values));
    }
    let names_an_item = matches!(single, "GetItem" | "PutItem" | "UpdateItem" | "DeleteItem");
    let sort_key = keys.range.as_ref().filter(|_| names_an_item);
    let sort_generator = sort_key.map(|(attribute, kind)| {
        let space = space_of(spaces, &table, attribute, &no_space);
        let (sk, sk_order) = (&item_keys.group.sk, item_keys.group.sk_order);
        let mut generator = if item_keys.puts {
            sort_key_generator(space, kind, sk_order.behaviour())
        } else if fit::is_small_set(sk) {
            fit::named_all(sk)
        } else {
            fit::generator_like(space, fit::distribution(sk))
        };
        // One sequence per table, which every pattern writing it in sequence draws from: two
        // sequences would write the same keys (and fail each other's conditions). A
        // sequence never repeats, so it needs no `distinct`.
        let generator_name = if generator.kind == GeneratorKind::Sequence {
            format!("{}_{}_sequence", slug(attribute), slug(&table))
        } else {
            generator.distinct = item_keys.distinct;
            format!("{}_{}", slug(attribute), item_keys.tag)
        };
        generators.insert(generator_name.clone(), generator);
        (attribute.clone(), kind.clone(), generator_name)
    });
    let key_item = |pk_generator: &Option<String>| {
        let mut key = Map::new();
        if let (Some((attribute, kind)), Some(generator)) = (&keys.hash, pk_generator) {
            key.insert(attribute.clone(), typed(kind, generator));
        }
        if let Some((attribute, kind, generator)) = &sort_generator {
            key.insert(attribute.clone(), typed(kind, generator));
        }
        key
    };
    match single {
        "GetItem" | "UpdateItem" | "DeleteItem" => {
            request.insert("Key".into(), Value::Object(key_item(&pk_generator)));
        }
        "PutItem" => {
            let mut item = key_item(&pk_generator);
            for (attribute, counts) in &group.index_keys {
                let generator_name = format!("{}_{tag}", slug(attribute));
                let generator = if fit::is_small_set(counts) {
                    fit::named_all(counts)
                } else {
                    let space = space_of(spaces, &table, attribute, &no_space);
                    fit::generator_like(space, fit::distribution(counts))
                };
                generators.insert(generator_name.clone(), generator);
                item.insert(attribute.clone(), typed(&counts.kind, &generator_name));
            }
            let mut sizes = group.sizes.clone();
            let base = item_base_bytes(&item, generators);
            let low = fit::percentile(&mut sizes, 10.0);
            let high = fit::percentile(&mut sizes, 90.0);
            let filler_name = format!("{FILLER_ATTRIBUTE}_{tag}");
            let filler = |bytes: u64| {
                bytes
                    .saturating_sub(base + FILLER_ATTRIBUTE.len() as u64)
                    .max(1) as u32
            };
            generators.insert(
                filler_name.clone(),
                filler_generator(filler(low), filler(high)),
            );
            item.insert(FILLER_ATTRIBUTE.into(), typed("S", &filler_name));
            fitting
                .put_items
                .entry(table.clone())
                .or_insert_with(|| Value::Object(item.clone()));
            request.insert("Item".into(), Value::Object(item));
        }
        _ => {}
    }
    request
}

/// The filler attribute's generator: text of `low` to `high` characters.
fn filler_generator(low: u32, high: u32) -> Generator {
    Generator {
        kind: GeneratorKind::String,
        prefix: String::new(),
        length: Some([low, high.max(low)]),
        range: None,
        cardinality: None,
        distribution: Distribution::Uniform,
        distinct: false,
    }
}

/// A write's sort key generator for how its values moved.
fn sort_key_generator(space: &Counts, kind: &str, behaviour: SortBehaviour) -> Generator {
    let prefix = if kind == "S" {
        fit::common_prefix(space.by_value.keys().map(String::as_str))
    } else {
        String::new()
    };
    let plain = |kind| Generator {
        kind,
        prefix: prefix.clone(),
        length: None,
        range: None,
        cardinality: None,
        distribution: Distribution::Uniform,
        distinct: false,
    };
    match behaviour {
        SortBehaviour::Sequential => plain(GeneratorKind::Sequence),
        SortBehaviour::TimeOrdered => plain(GeneratorKind::Timestamp),
        SortBehaviour::Random if kind == "S" => fit::generator_like(space, Distribution::Uniform),
        SortBehaviour::Random => Generator {
            kind: GeneratorKind::Number,
            ..fit::generator_like(space, Distribution::Uniform)
        },
    }
}

/// About how many bytes an item's attributes other than the filler take: each name, and
/// each generated value's typical length.
fn item_base_bytes(item: &Map<String, Value>, generators: &BTreeMap<String, Generator>) -> u64 {
    item.iter()
        .map(|(name, value)| {
            let text = value
                .as_object()
                .and_then(|v| v.values().next())
                .and_then(Value::as_str)
                .unwrap_or_default();
            let generated = text
                .strip_prefix("${")
                .and_then(|t| t.strip_suffix('}'))
                .and_then(|g| generators.get(g))
                .map_or(text.len() as u64, typical_length);
            name.len() as u64 + generated
        })
        .sum()
}

/// A generator's typical value length in bytes.
fn typical_length(generator: &Generator) -> u64 {
    let prefix = generator.prefix.len() as u64;
    match generator.kind {
        GeneratorKind::String => {
            let [low, high] = generator.length.unwrap_or([8, 8]);
            prefix + u64::from(low + high) / 2
        }
        GeneratorKind::Number => {
            let [low, high] = generator.range.unwrap_or([0, 1_000_000]);
            // DynamoDB sizes a number by its digits: about one byte per two, plus one.
            let digits = high.abs().max(low.abs()).max(1).to_string().len() as u64;
            digits.div_ceil(2) + 1
        }
        GeneratorKind::Sequence => prefix + 6,
        GeneratorKind::Timestamp => prefix + 13,
        GeneratorKind::Uuid => 36,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_server::record::format::{Shapes, Start, TableLine, VERSION};

    fn request(op: &str, table: Option<&str>) -> Line {
        Line::Request(Box::new(RequestLine {
            at_us: 10,
            op: op.to_string(),
            table: table.map(str::to_string),
            pk: Some("k".into()),
            pk_type: Some("S".into()),
            units: Some(0.5),
            latency_us: 20,
            ..RequestLine::default()
        }))
    }

    /// A recording in `dir` of table T (hash key `k`) and `calls`.
    fn recording_of(dir: &Path, calls: &[Line]) -> std::path::PathBuf {
        let table = json!({
            "TableName": "T",
            "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
            "ItemCount": 0
        });
        let head = [
            Line::Start(Start {
                version: VERSION,
                time_ms: 0,
                part: 0,
                hashed_keys: false,
                bodies: true,
            }),
            Line::Table(TableLine { at_us: 0, table }),
        ];
        let text: String = head
            .iter()
            .chain(calls)
            .map(|line| serde_json::to_string(line).unwrap() + "\n")
            .collect();
        let path = dir.join("calls.jsonl");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn every_data_plane_call_not_fitted_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let calls = [
            request("GetItem", Some("T")),
            request("GetItem", None),
            request("BatchWriteItem", Some("T")),
            request("TransactGetItems", Some("T")),
            request("ExecuteStatement", None),
            request("BatchExecuteStatement", None),
            request("ExecuteTransaction", None),
            request("ExecuteTransaction", None),
            request("DescribeTable", Some("T")),
        ];
        let path = recording_of(dir.path(), &calls);
        let fitted = model_from(&[&path], "t").unwrap();
        let notes = fitted.skipped.join("\n");
        for expected in [
            "GetItem: 1 calls (they name no table)",
            "BatchWriteItem: 1 calls (their parts are not in the recording",
            "TransactGetItems: 1 calls (their parts are not in the recording",
            "ExecuteStatement: 1 calls (they name no table)",
            "BatchExecuteStatement: 1 calls (they name no table)",
            "ExecuteTransaction: 2 calls (they name no table)",
        ] {
            assert!(notes.contains(expected), "{expected} not in {notes}");
        }
        assert!(!notes.contains("DescribeTable"), "{notes}");
    }

    /// A batch's or transaction's line on table T.
    fn multi_part_call(at_us: u64, op: &str, units: f64, parts: Vec<RequestLine>) -> Line {
        Line::Request(Box::new(RequestLine {
            at_us,
            op: op.into(),
            table: Some("T".into()),
            units: Some(units),
            parts,
            ..RequestLine::default()
        }))
    }

    /// The model fitted to a recording of `calls`, which must make exactly the patterns
    /// `names` and leave nothing unmodelled; read back as a model file.
    fn fitted_with_patterns(dir: &Path, calls: &[Line], names: &[&str]) -> Model {
        let path = recording_of(dir, calls);
        let fitted = model_from(&[&path], "t").unwrap();
        assert!(fitted.skipped.is_empty(), "{:?}", fitted.skipped);
        let found: Vec<&str> = fitted.patterns.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(found, names);
        Model::parse(&serde_json::to_string(&fitted.model).unwrap()).unwrap()
    }

    /// A description of table T holding `items` items.
    fn table_line(items: u64) -> Line {
        Line::Table(TableLine {
            at_us: 5,
            table: json!({
                "TableName": "T",
                "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
                "ItemCount": items, "TableSizeBytes": items * 100
            }),
        })
    }

    #[test]
    fn a_table_created_during_the_recording_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let head = Line::Start(Start {
            version: VERSION,
            time_ms: 0,
            part: 0,
            hashed_keys: false,
            bodies: true,
        });
        let put = request("PutItem", Some("T"));
        let write = |lines: &[Line]| {
            let text: String = lines
                .iter()
                .map(|line| serde_json::to_string(line).unwrap() + "\n")
                .collect();
            let path = dir.path().join("calls.jsonl");
            std::fs::write(&path, text).unwrap();
            model_from(&[&path], "t").unwrap().model.load
        };
        // Described after its CreateTable, once 7 puts had landed: loaded with nothing.
        let create = request("CreateTable", Some("T"));
        let load = write(&[head.clone(), create, table_line(7), put.clone()]);
        assert!(load.is_empty(), "{load:?}");
        // The neighbour: a table the recording found holding 7 items is loaded with 7.
        let load = write(&[head.clone(), table_line(7), put.clone()]);
        assert_eq!(load.iter().map(|l| l.count).collect::<Vec<_>>(), [7]);
        // A failed CreateTable of a table that existed does not empty it.
        let Line::Request(mut failed) = request("CreateTable", Some("T")) else {
            unreachable!()
        };
        failed.error = Some("ResourceInUseException".into());
        let load = write(&[head, Line::Request(failed), table_line(7), put]);
        assert_eq!(load.iter().map(|l| l.count).collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn a_transaction_s_statements_draw_distinct_sort_keys() {
        let dir = tempfile::tempdir().unwrap();
        let statement_text = "UPDATE \"R\" SET v = ? WHERE k = ? AND s = ?";
        let statement = |op: &str, key: u32| {
            let scalar = |kind: &str, value: String| shoal_server::record::format::Scalar {
                kind: kind.into(),
                value,
            };
            RequestLine {
                op: op.into(),
                table: Some("R".into()),
                pk: Some(format!("k#{}", key % 3)),
                pk_type: Some("S".into()),
                sk: Some(format!("s#{key}")),
                sk_type: Some("S".into()),
                shape: Shapes {
                    statement: Some(statement_text.into()),
                    ..Shapes::default()
                },
                values: BTreeMap::from([
                    ("?1".to_string(), scalar("S", format!("v{key}"))),
                    ("?2".to_string(), scalar("S", format!("k#{}", key % 3))),
                    ("?3".to_string(), scalar("S", format!("s#{key}"))),
                ]),
                ..RequestLine::default()
            }
        };
        // R, a table with a sort key.
        let mut calls = vec![Line::Table(TableLine {
            at_us: 1,
            table: json!({
                "TableName": "R",
                "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"},
                    {"AttributeName": "s", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"},
                    {"AttributeName": "s", "KeyType": "RANGE"}],
                "ItemCount": 0
            }),
        })];
        for call in 0..40u32 {
            let parts = (0..2)
                .map(|n| statement("Statement", call * 10 + n))
                .collect();
            calls.push(Line::Request(Box::new(RequestLine {
                at_us: u64::from(call) * 1000 + 10,
                op: "ExecuteTransaction".into(),
                table: Some("R".into()),
                units: Some(4.0),
                parts,
                ..RequestLine::default()
            })));
            let mut single = statement("ExecuteStatement", call * 10 + 5);
            single.at_us = u64::from(call) * 1000 + 20;
            single.units = Some(1.0);
            calls.push(Line::Request(Box::new(single)));
        }
        let model = fitted_with_patterns(
            dir.path(),
            &calls,
            &[
                &format!("ExecuteTransaction: 2 x {statement_text}"),
                &format!("ExecuteStatement {statement_text}"),
            ],
        );
        let statements = model.patterns[0].request["TransactStatements"]
            .as_array()
            .unwrap();
        let sort_keys: Vec<&str> = statements
            .iter()
            .map(|s| s["Parameters"][2]["S"].as_str().unwrap())
            .collect();
        assert_eq!(sort_keys, ["${s_p0_R#0}", "${s_p0_R#1}"]);
        assert!(model.generators["s_p0_R"].distinct);
        // The neighbour: a single statement names one item, its sort key drawn plainly.
        let single = &model.patterns[1].request["Parameters"][2]["S"];
        let name = single.as_str().unwrap().trim_start_matches("${");
        let name = name.trim_end_matches('}');
        assert!(!model.generators[name].distinct, "{single}");
        let generators = crate::bench::data_model::generate::Generators::new(&model.generators);
        crate::bench::data_model::run::compile(&model, &generators).unwrap();
    }

    #[test]
    fn partiql_batches_and_transactions_are_fitted_as_batches_are() {
        let dir = tempfile::tempdir().unwrap();
        let statement = |key: u32| RequestLine {
            op: "Statement".into(),
            table: Some("T".into()),
            pk: Some(format!("k#{key}")),
            pk_type: Some("S".into()),
            shape: Shapes {
                statement: Some("SELECT * FROM \"T\" WHERE k = ?".into()),
                ..Shapes::default()
            },
            values: BTreeMap::from([(
                "?1".to_string(),
                shoal_server::record::format::Scalar {
                    kind: "S".into(),
                    value: format!("k#{key}"),
                },
            )]),
            ..RequestLine::default()
        };
        let mut calls = Vec::new();
        for call in 0..40u32 {
            for (op, count) in [("BatchExecuteStatement", 3), ("ExecuteTransaction", 2)] {
                let parts = (0..count).map(|n| statement(call * 10 + n)).collect();
                calls.push(multi_part_call(u64::from(call) * 1000, op, 1.5, parts));
            }
        }
        let model = fitted_with_patterns(
            dir.path(),
            &calls,
            &[
                "BatchExecuteStatement: 3 x SELECT * FROM \"T\" WHERE k = ?",
                "ExecuteTransaction: 2 x SELECT * FROM \"T\" WHERE k = ?",
            ],
        );
        let statements = model.patterns[0].request["Statements"].as_array().unwrap();
        assert_eq!(statements.len(), 3);
        // Each statement draws its own distinct key from the table's one key generator.
        assert_eq!(statements[2]["Parameters"][0]["S"], "${k_p0_T#2}");
        assert!(model.generators["k_p0_T"].distinct);
        assert_eq!(
            model.patterns[1].request["TransactStatements"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        let generators = crate::bench::data_model::generate::Generators::new(&model.generators);
        crate::bench::data_model::run::compile(&model, &generators).unwrap();
    }

    #[test]
    fn batch_parts_group_by_kind_and_count_with_distinct_keys() {
        let dir = tempfile::tempdir().unwrap();
        let part = |op: &str, key: u32| RequestLine {
            op: op.into(),
            table: Some("T".into()),
            pk: Some(format!("k#{key}")),
            pk_type: Some("S".into()),
            ..RequestLine::default()
        };
        let mut calls = Vec::new();
        // Writes of 2 and 3 puts and one delete, alternating, and gets of 4 keys.
        for call in 0..40u32 {
            let puts = 2 + call % 2;
            let mut parts: Vec<RequestLine> =
                (0..puts).map(|n| part("Put", call * 10 + n)).collect();
            parts.push(part("Delete", call * 10 + 9));
            let at_us = u64::from(call) * 1000;
            calls.push(multi_part_call(at_us, "BatchWriteItem", 4.0, parts));
            let gets = (0..4).map(|n| part("Get", n)).collect();
            calls.push(multi_part_call(at_us + 1, "BatchGetItem", 2.0, gets));
        }
        let model = fitted_with_patterns(
            dir.path(),
            &calls,
            &[
                "BatchWriteItem: 2 x Put T + Delete T",
                "BatchGetItem: 4 x Get T",
                "BatchWriteItem: 3 x Put T + Delete T",
            ],
        );
        // A write of 2 puts and one of 3 are two patterns, each at half the calls' rate,
        // each call with the parts recorded: 2.5 puts a call on the whole, as recorded.
        for (at, puts) in [(0, 2), (2, 3)] {
            let writes = &model.patterns[at].request["RequestItems"]["T"];
            assert_eq!(writes.as_array().unwrap().len(), puts + 1, "{writes}");
            let tag = format!("k_p{at}_T");
            assert_eq!(
                writes[puts]["DeleteRequest"]["Key"]["k"]["S"],
                format!("${{{tag}#{puts}}}")
            );
            // No sort key: the partition key's draws are the distinct ones.
            assert!(model.generators[&tag].distinct);
        }
        assert_eq!(model.patterns[0].rate, model.patterns[2].rate);
        let keys = &model.patterns[1].request["RequestItems"]["T"]["Keys"];
        assert_eq!(keys.as_array().unwrap().len(), 4, "{keys}");
        // Every fitted request compiles, distinct draws included.
        let generators = crate::bench::data_model::generate::Generators::new(&model.generators);
        crate::bench::data_model::run::compile(&model, &generators).unwrap();
    }
}
