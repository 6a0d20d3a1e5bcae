//! `shoal bench --model` and `shoal serve --capacity enforce` agree on what DynamoDB would
//! throttle: a model's report is computed in this process (a fresh in-memory database, no
//! throttling), then the same model is replayed against an enforcing server at the modelled
//! rate, and every partition, table and GSI the report says is over a DynamoDB limit must
//! be throttled by the server, and none the report says is well under every limit may be.
//! The models are those of docs/models/ (their loads capped, their runs shortened) and
//! generated ones: random tables with 0–1 LSI and 0–2 GSIs, a hot key taking a random share
//! of the traffic, low-cardinality GSI keys, random item sizes and random rates.
//!
//! What is compared, per table and per GSI, for reads and writes apart:
//! - the report's hot partitions (`hot_partitions`: read units against 3,000, write units
//!   against 1,000 a second, at the modelled rate) and each table's and GSI's need against
//!   its limits (`throughput`: provisioned units with 300 s of burst credit, or what a new
//!   on-demand table serves at once);
//! - the server's refusals per table and index, `shoal_throttled_{read,write}_requests_total`
//!   on `/metrics` (a refusal is counted under the table or index whose bucket refused it, a
//!   GSI partition's under the GSI), and the endpoint run's `throttled_attempts`.
//!
//! Tolerance, and why it is not symmetric. A partition's bucket (and an on-demand table's)
//! holds one second of units and starts full, so a load of `s` times the limit is refused
//! only from `1 / (s - 1)` seconds on: within a run of [`RUN_SECONDS`] = 3 s, a partition
//! 25% over its limit would need 4 s and is not refused at all. So the report's "DynamoDB
//! would throttle" must be backed by the server only from **1.5x** the limit on (+50%: the
//! first refusal comes by 2 s, leaving a second of refusals), after scaling the modelled
//! load down by the rate the client actually reached (it runs at the modelled rate when the
//! machine keeps up). The other way, a load up to **0.75x** the limit (−25%) must never be
//! refused: the bench paces calls evenly, but a worker that fell behind catches up in a
//! burst, and a request is admitted whole before its units are taken (check-then-charge),
//! so a bucket dips below zero by up to one request's units; a quarter of a second's units
//! absorbs both. A provisioned table or GSI must be refused when its burst credit (300 s of
//! units) is spent by half the run, and never when the busiest second's need would leave it
//! for twice the run. Between the two bounds nothing is asserted.
//!
//! Where the two sides count differently by design, only the safe side is asserted:
//! - batches and transactions put their table units on the report's table partitions (an
//!   equal share per item, as the server does) but none on a GSI's partitions, and PartiQL
//!   statements none at all, while the server charges all of them: a table they write (or
//!   read) gets no "never refused" check for writes (or reads).
//!
//! A write whose condition fails is charged on both sides, as DynamoDB charges it: by the
//! bench from the stored item its answer carries, by the server from the item it read.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};
use shoal::bench::data_model::model::Model;
use shoal::bench::data_model::report::{Report, VERDICT_SAMPLES_MIN};
use shoal::bench::data_model::{run_model, BenchOptions};
use shoal_tables::capacity::throttle::{
    BURST_SECONDS, PARTITION_READ_UNITS_MAX, PARTITION_WRITE_UNITS_MAX,
};
use shoal_tables::{Database, Options};

use crate::sdk_server::{http_get, Server};

/// Length of each run, at the modelled rate.
const RUN_SECONDS: f64 = 3.0;
/// From this share of a limit on, the server must refuse (see the module doc).
const MUST_THROTTLE_SHARE: f64 = 1.5;
/// Up to this share of a limit, the server must never refuse.
const MUST_PASS_SHARE: f64 = 0.75;
/// Items loaded per load entry at most: loads that never reach a limit themselves, so the
/// server's refusals are the run's.
const LOAD_ITEMS_MAX: u64 = 300;
/// Operations that put no load on the report's partitions.
const UNTRACKED: [&str; 7] = [
    "BatchWriteItem",
    "BatchGetItem",
    "TransactWriteItems",
    "TransactGetItems",
    "ExecuteStatement",
    "BatchExecuteStatement",
    "ExecuteTransaction",
];
const READ: usize = 0;
const WRITE: usize = 1;
const KINDS: [&str; 2] = ["read", "write"];

/// What one model's check decided, for the summary.
#[derive(Debug, Default)]
struct Checked {
    must_throttle: Vec<String>,
    must_pass: Vec<String>,
    /// Neither asserted: between the bounds, or counted differently by the two sides.
    undecided: Vec<String>,
    failures: Vec<String>,
}

fn is_read(operation: &str) -> bool {
    matches!(
        operation,
        "GetItem" | "Query" | "Scan" | "BatchGetItem" | "TransactGetItems"
    )
}

/// Every `TableName` a request names.
fn table_names(request: &Value, out: &mut Vec<String>) {
    match request {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("TableName", Value::String(name)) => out.push(name.clone()),
                    // BatchWriteItem and BatchGetItem name their tables as keys.
                    ("RequestItems", Value::Object(tables)) => out.extend(tables.keys().cloned()),
                    _ => table_names(value, out),
                }
            }
        }
        Value::Array(values) => values.iter().for_each(|v| table_names(v, out)),
        _ => {}
    }
}

/// The model as both runs run it: `RUN_SECONDS` long, at least 4 workers, one attempt per
/// call (a refused call is counted, not sent again), loads capped.
fn for_agreement(mut model: Value) -> Value {
    let run = model["run"].as_object_mut().expect("a run");
    run.remove("operations");
    run.insert("seconds".into(), json!(RUN_SECONDS));
    let concurrency = run.get("concurrency").and_then(Value::as_u64).unwrap_or(4);
    run.insert("concurrency".into(), json!(concurrency.max(4)));
    run.insert("attempts".into(), json!(1));
    for load in model["load"].as_array_mut().into_iter().flatten() {
        let count = load["count"].as_u64().unwrap_or(0);
        load["count"] = json!(count.min(LOAD_ITEMS_MAX));
    }
    model
}

/// Refusals per (table, index) and kind, from the server's `/metrics`.
fn refusals(metrics: &str) -> BTreeMap<(String, String), [u64; 2]> {
    let mut counts: BTreeMap<(String, String), [u64; 2]> = BTreeMap::new();
    for line in metrics.lines() {
        let kind = if line.starts_with("shoal_throttled_read_requests_total{") {
            READ
        } else if line.starts_with("shoal_throttled_write_requests_total{") {
            WRITE
        } else {
            continue;
        };
        let label = |name: &str| {
            let start = line.find(&format!("{name}=\""))? + name.len() + 2;
            let end = start + line[start..].find('"')?;
            Some(line[start..end].to_string())
        };
        let (Some(table), Some(index)) = (label("table"), label("index")) else {
            continue;
        };
        let count = line
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse::<f64>().ok())
            .unwrap_or(0.0);
        counts.entry((table, index)).or_default()[kind] += count as u64;
    }
    counts
}

/// The report of `model` run in this process, and against an enforcing server with the
/// server's refusals.
fn both_runs(model: &Value) -> (Report, Report, BTreeMap<(String, String), [u64; 2]>) {
    let parsed = Model::parse(&model.to_string()).expect("a valid model");
    let database = Arc::new(Database::open_in_memory(Options::default()).unwrap());
    let embedded = run_model(
        &parsed,
        &BenchOptions {
            database: Some(database),
            ..BenchOptions::default()
        },
    )
    .expect("the embedded run");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--capacity", "enforce"]);
    let endpoint = run_model(
        &parsed,
        &BenchOptions {
            endpoint: Some(server.endpoint.clone()),
            ..BenchOptions::default()
        },
    )
    .expect("the run against the server");
    let counts = refusals(&http_get(&server.endpoint, "/metrics"));
    server.stop();
    (embedded, endpoint, counts)
}

/// Runs `model` both ways and checks the agreement; returns what was checked.
fn check_agreement(model: Value) -> Checked {
    let model = for_agreement(model);
    let (embedded, endpoint, counts) = both_runs(&model);
    let mut checked = Checked::default();

    // How much of the report's modelled rate the client reached against the server (the
    // scale of what the server saw, for the "must be refused" side). A pattern without a
    // rate is modelled at the speed it ran in this process, which a server over HTTP does
    // not reach.
    let reached = endpoint
        .patterns
        .iter()
        .zip(&embedded.patterns)
        .filter(|(_, modelled)| modelled.modelled_ops_per_second > 0.0)
        .map(|(ran, modelled)| (ran.ops_per_second / modelled.modelled_ops_per_second).min(1.0))
        .fold(1.0f64, f64::min);

    // Tables whose load one side counts and the other does not (module doc).
    let mut untracked: [Vec<String>; 2] = Default::default();
    for (spec, pattern) in model["patterns"]
        .as_array()
        .into_iter()
        .flatten()
        .zip(&embedded.patterns)
    {
        if pattern.operations == 0 {
            continue;
        }
        let mut tables = Vec::new();
        table_names(&spec["request"], &mut tables);
        let kind = if is_read(&pattern.operation) {
            READ
        } else {
            WRITE
        };
        if UNTRACKED.contains(&pattern.operation.as_str()) {
            untracked[kind].extend(tables);
        }
    }

    for table in model["tables"].as_array().into_iter().flatten() {
        let table_name = table["TableName"].as_str().unwrap_or_default().to_string();
        let indexes = std::iter::once(None).chain(
            table["GlobalSecondaryIndexes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|gsi| gsi["IndexName"].as_str().map(|name| Some(name.to_string()))),
        );
        for index in indexes {
            let target = match &index {
                Some(index) => format!("{table_name}/{index}"),
                None => table_name.clone(),
            };
            let resource = embedded
                .throughput
                .iter()
                .find(|resource| resource.resource == target);
            let refused = counts
                .get(&(table_name.clone(), index.clone().unwrap_or_default()))
                .copied()
                .unwrap_or_default();
            for kind in [READ, WRITE] {
                let limit = if kind == READ {
                    PARTITION_READ_UNITS_MAX
                } else {
                    PARTITION_WRITE_UNITS_MAX
                };
                // The target's busiest partition (the report lists each target's hottest).
                let busiest = embedded
                    .hot_partitions
                    .iter()
                    .filter(|p| p.target == target)
                    .map(|p| {
                        let units = if kind == READ {
                            p.read_units_per_second
                        } else {
                            p.write_units_per_second
                        };
                        (units / limit, p.operations, p.key.clone())
                    })
                    .max_by(|a, b| a.0.total_cmp(&b.0));
                let (share, operations, key) = busiest.unwrap_or((0.0, 0, String::new()));

                let mut must_throttle = Vec::new();
                if share * reached >= MUST_THROTTLE_SHARE && operations >= VERDICT_SAMPLES_MIN {
                    must_throttle.push(format!(
                        "partition `{key}` at {share:.2}x the per-partition limit"
                    ));
                }
                let mut resource_ok = true;
                if let Some(resource) = resource {
                    let need = resource.need[kind];
                    match (resource.provisioned, resource.on_demand_instant) {
                        (Some(provisioned), _) => {
                            let units = provisioned[kind];
                            let spent_by = |need: f64| {
                                (need > units).then(|| BURST_SECONDS * units / (need - units))
                            };
                            if spent_by(need * reached).is_some_and(|s| s <= RUN_SECONDS / 2.0) {
                                must_throttle
                                    .push(format!("{need:.0} units/s against {units} provisioned"));
                            }
                            resource_ok = spent_by(resource.peak[kind])
                                .is_none_or(|s| s >= 2.0 * RUN_SECONDS);
                        }
                        (None, Some(instant)) => {
                            if need * reached >= MUST_THROTTLE_SHARE * instant[kind] {
                                must_throttle.push(format!(
                                    "{need:.0} units/s against {} served at once",
                                    instant[kind]
                                ));
                            }
                            resource_ok = resource.peak[kind] <= MUST_PASS_SHARE * instant[kind];
                        }
                        (None, None) => {}
                    }
                }
                let what = format!("{target} {}s", KINDS[kind]);
                if !must_throttle.is_empty() {
                    let why = must_throttle.join(", ");
                    checked.must_throttle.push(format!("{what}: {why}"));
                    // A write draws on its table and every GSI of it at once, and is refused
                    // under whichever ran out first (a GSI that cannot absorb a write
                    // throttles it; a write the table refused never reaches its GSIs): the
                    // writes of a table and of its GSIs are throttled together.
                    let refused_with_gsis: u64 = if kind == WRITE {
                        counts
                            .iter()
                            .filter(|((table, _), _)| *table == table_name)
                            .map(|(_, refused)| refused[WRITE])
                            .sum()
                    } else {
                        refused[kind]
                    };
                    if refused_with_gsis == 0 {
                        checked.failures.push(format!(
                            "{what}: the report says DynamoDB would throttle ({why}), the server refused nothing"
                        ));
                    }
                }
                let tracked = !untracked[kind].contains(&table_name);
                let asserted_throttle = !must_throttle.is_empty();
                let asserted_pass = share <= MUST_PASS_SHARE
                    && resource_ok
                    && tracked
                    && endpoint.load_retries == 0;
                if !asserted_throttle && !asserted_pass {
                    checked.undecided.push(format!(
                        "{what}: busiest partition at {share:.2}x, refused {}",
                        refused[kind]
                    ));
                }
                if asserted_pass {
                    checked
                        .must_pass
                        .push(format!("{what}: busiest partition at {share:.2}x"));
                    if refused[kind] > 0 {
                        checked.failures.push(format!(
                            "{what}: the report has it at {share:.2}x the per-partition limit and \
                             within its table's or GSI's, the server refused {} requests",
                            refused[kind]
                        ));
                    }
                }
            }
        }
    }
    // A model the report finds nothing wrong with is never throttled at all.
    let throttled_attempts: u64 = endpoint.patterns.iter().map(|p| p.throttled_attempts).sum();
    let refused_total: u64 = counts.values().map(|c| c[READ] + c[WRITE]).sum();
    if !checked.must_throttle.is_empty() && throttled_attempts == 0 {
        checked
            .failures
            .push("the report says DynamoDB would throttle; no call was throttled".into());
    }
    assert!(
        throttled_attempts <= refused_total,
        "every throttled call is a refusal the server counted: {throttled_attempts} > {refused_total}"
    );
    eprintln!(
        "{}: reached {:.0}% of the modelled rate; must throttle: {:?}; must pass: {:?}; \
         undecided: {:?}; refused: {counts:?}",
        model["name"].as_str().unwrap_or("model"),
        reached * 100.0,
        checked.must_throttle,
        checked.must_pass,
        checked.undecided,
    );
    assert!(
        checked.failures.is_empty(),
        "bench and server disagree on {}:\n{}\nreport partitions: {:#?}\nreport throughput: {:#?}\nserver run: {:#?}",
        model["name"],
        checked.failures.join("\n"),
        embedded.hot_partitions,
        embedded.throughput,
        endpoint.patterns,
    );
    checked
}

#[test]
fn the_documented_models_throttle_where_their_reports_say() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/models");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for file in files {
        let model: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        check_agreement(model);
    }
}

/// A generated model: one table keyed (pk, sk) with what the case draws.
#[derive(Debug, Clone)]
struct Case {
    /// Provisioned read and write units of the table and each GSI (None: on demand).
    provisioned: Option<u64>,
    lsi: bool,
    /// Per GSI: its partition key's cardinality, whether it projects ALL (else KEYS_ONLY),
    /// whether it has a sort key.
    gsis: Vec<(u64, bool, bool)>,
    /// Share of the traffic on one hot partition key (below 0.05: uniform).
    hot_share: f64,
    item_bytes: u32,
    write_rate: f64,
    /// Queries a second of the table's (and, with a GSI, of the first GSI's) partitions.
    read_rate: f64,
    consistent: bool,
    seed: u64,
}

impl Case {
    fn model(&self) -> Value {
        let mut definitions = vec![
            json!({"AttributeName": "pk", "AttributeType": "S"}),
            json!({"AttributeName": "sk", "AttributeType": "N"}),
        ];
        let mut item = json!({
            "pk": {"S": "${key}"}, "sk": {"N": "${sk}"}, "body": {"S": "${body}"}
        });
        let key = if self.hot_share < 0.05 {
            json!({"type": "string", "prefix": "k#", "cardinality": 1000})
        } else {
            json!({"type": "string", "prefix": "k#", "cardinality": 1000,
                   "distribution": {"hot": {"share": self.hot_share, "keys": 1}}})
        };
        let mut generators = json!({
            "key": key,
            "sk": {"type": "number", "range": [0, 9]},
            "when": {"type": "timestamp"},
            "body": {"type": "string", "length": [self.item_bytes, self.item_bytes]}
        });
        let throughput = self
            .provisioned
            .map(|units| json!({"ReadCapacityUnits": units, "WriteCapacityUnits": units}));
        let mut table = json!({
            "TableName": "Gen",
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ]
        });
        match &throughput {
            Some(units) => table["ProvisionedThroughput"] = units.clone(),
            None => table["BillingMode"] = json!("PAY_PER_REQUEST"),
        }
        if self.lsi {
            definitions.push(json!({"AttributeName": "lk", "AttributeType": "S"}));
            item["lk"] = json!({"S": "${when}"});
            table["LocalSecondaryIndexes"] = json!([{
                "IndexName": "ByL",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "lk", "KeyType": "RANGE"}
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }]);
        }
        let mut gsis = Vec::new();
        for (n, (cardinality, all, range)) in self.gsis.iter().enumerate() {
            let attribute = format!("gk{n}");
            definitions.push(json!({"AttributeName": attribute, "AttributeType": "S"}));
            item[&attribute] = json!({"S": format!("${{g{n}}}")});
            generators[format!("g{n}")] =
                json!({"type": "string", "prefix": format!("s{n}#"), "cardinality": cardinality});
            let mut schema = vec![json!({"AttributeName": attribute, "KeyType": "HASH"})];
            if *range {
                if item.get("gr").is_none() {
                    definitions.push(json!({"AttributeName": "gr", "AttributeType": "N"}));
                    item["gr"] = json!({"N": "${sk}"});
                }
                schema.push(json!({"AttributeName": "gr", "KeyType": "RANGE"}));
            }
            let mut gsi = json!({
                "IndexName": format!("ByG{n}"),
                "KeySchema": schema,
                "Projection": {"ProjectionType": if *all { "ALL" } else { "KEYS_ONLY" }}
            });
            if let Some(units) = &throughput {
                gsi["ProvisionedThroughput"] = units.clone();
            }
            gsis.push(gsi);
        }
        if !gsis.is_empty() {
            table["GlobalSecondaryIndexes"] = json!(gsis);
        }
        table["AttributeDefinitions"] = json!(definitions);
        let mut patterns = vec![json!({
            "name": "put", "operation": "PutItem", "rate": self.write_rate,
            "request": {"TableName": "Gen", "Item": item}
        })];
        if self.read_rate >= 10.0 {
            patterns.push(json!({
                "name": "query", "operation": "Query", "rate": self.read_rate,
                "request": {"TableName": "Gen", "KeyConditionExpression": "pk = :pk",
                            "ExpressionAttributeValues": {":pk": {"S": "${key}"}},
                            "Limit": 10, "ConsistentRead": self.consistent}
            }));
            if !self.gsis.is_empty() {
                patterns.push(json!({
                    "name": "query the GSI", "operation": "Query", "rate": self.read_rate / 2.0,
                    "request": {"TableName": "Gen", "IndexName": "ByG0",
                                "KeyConditionExpression": "gk0 = :g",
                                "ExpressionAttributeValues": {":g": {"S": "${g0}"}},
                                "Limit": 10}
                }));
            }
        }
        json!({
            "name": format!("generated {self:?}"),
            "tables": [table],
            "generators": generators,
            // Few enough items that no partition, table or GSI is refused while loading.
            "load": [{"table": "Gen", "count": 20, "item": item}],
            "patterns": patterns,
            "run": {"seconds": RUN_SECONDS, "concurrency": 4, "seed": self.seed}
        })
    }
}

fn cases() -> impl Strategy<Value = Case> {
    (
        prop_oneof![
            Just(None),
            Just(Some(1u64)),
            Just(Some(10)),
            Just(Some(40_000))
        ],
        any::<bool>(),
        prop::collection::vec((1u64..=4, any::<bool>(), any::<bool>()), 0..=2),
        0.0f64..0.95,
        200u32..10_000,
        20.0f64..500.0,
        0.0f64..300.0,
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(
                provisioned,
                lsi,
                gsis,
                hot_share,
                item_bytes,
                write_rate,
                read_rate,
                consistent,
                seed,
            )| {
                Case {
                    provisioned,
                    lsi,
                    gsis,
                    hot_share,
                    item_bytes,
                    write_rate,
                    read_rate,
                    consistent,
                    seed,
                }
            },
        )
}

proptest! {
    // Each case is two 3-second runs and a server: a handful of them. No shrinking, which
    // would run dozens more. The cases come from a fixed seed, so CI runs the same ones every
    // time; `PROPTEST_RNG_SEED=N` explores others.
    #![proptest_config(ProptestConfig {
        cases: 3,
        max_shrink_iters: 0,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(
            std::env::var("PROPTEST_RNG_SEED")
                .ok()
                .and_then(|seed| seed.parse().ok())
                .unwrap_or(20_261_128),
        ),
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_models_throttle_where_their_reports_say(case in cases()) {
        check_agreement(case.model());
    }
}

/// Cases chosen by hand so that both sides of the agreement are always exercised: a GSI
/// (projecting ALL) on a status with one value takes every write, while the table's keys
/// stay cold, and the same writes spread over six values are never refused. By hand: an
/// item of ~2.5 KB is 3 WCU on the table and 3 on its GSI entry; 850 puts a second put 2,550
/// WCU/s on the one GSI partition (2.55x its limit), or ~425 on each of six (0.43x; random
/// draws make the busiest of them a little busier).
#[test]
fn a_low_cardinality_gsi_throttles_in_both_and_its_spread_neighbour_in_neither() {
    let hot = Case {
        provisioned: None,
        lsi: false,
        gsis: vec![(1, true, false)],
        hot_share: 0.0,
        item_bytes: 2_500,
        write_rate: 850.0,
        read_rate: 0.0,
        consistent: false,
        seed: 5,
    };
    let checked = check_agreement(hot.model());
    assert!(
        checked
            .must_throttle
            .iter()
            .any(|c| c.starts_with("Gen/ByG0 writes")),
        "{checked:?}"
    );
    let spread = Case {
        gsis: vec![(6, true, false)],
        ..hot
    };
    let checked = check_agreement(spread.model());
    assert!(
        checked
            .must_pass
            .iter()
            .any(|c| c.starts_with("Gen/ByG0 writes")),
        "{checked:?}"
    );
}

/// The same with a GSI whose key has two HASH attributes (SPEC-3 §1): its entries are
/// placed by both, so one value of each is one hot partition, while six values of the
/// second spread the same writes over six partitions in the report and on the server.
#[test]
fn a_multi_attribute_gsi_partition_is_placed_by_every_hash_attribute() {
    let with_second_hash = |second_cardinality: u64| {
        let mut model = Case {
            provisioned: None,
            lsi: false,
            gsis: vec![(1, true, true)],
            hot_share: 0.0,
            item_bytes: 2_500,
            write_rate: 850.0,
            read_rate: 0.0,
            consistent: false,
            seed: 5,
        }
        .model();
        model["generators"]["second"] =
            json!({"type": "string", "prefix": "x#", "cardinality": second_cardinality});
        let table = &mut model["tables"][0];
        table["AttributeDefinitions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"AttributeName": "gx", "AttributeType": "S"}));
        table["GlobalSecondaryIndexes"][0]["KeySchema"]
            .as_array_mut()
            .unwrap()
            .insert(1, json!({"AttributeName": "gx", "KeyType": "HASH"}));
        model["patterns"][0]["request"]["Item"]["gx"] = json!({"S": "${second}"});
        model["load"][0]["item"]["gx"] = json!({"S": "${second}"});
        model
    };
    let checked = check_agreement(with_second_hash(1));
    assert!(
        checked
            .must_throttle
            .iter()
            .any(|c| c.starts_with("Gen/ByG0 writes") && c.contains("|x#")),
        "{checked:?}"
    );
    let checked = check_agreement(with_second_hash(6));
    assert!(
        checked
            .must_pass
            .iter()
            .any(|c| c.starts_with("Gen/ByG0 writes")),
        "{checked:?}"
    );
}

/// Generated cases once failed here: every part provisioned with 1 unit, so the table and a
/// GSI (whose ALL projection takes as many units as the table) run out together and the
/// server counts each refusal under whichever it checked first. The writes of both are
/// throttled all the same.
#[test]
fn writes_refused_for_a_gsi_count_as_the_table_s_throttled_writes() {
    let case = Case {
        provisioned: Some(1),
        lsi: false,
        gsis: vec![(1, false, false), (3, true, false)],
        hot_share: 0.6882470540707579,
        item_bytes: 6731,
        write_rate: 396.5779387793455,
        read_rate: 206.8819463854105,
        consistent: true,
        seed: 15632392347785233185,
    };
    check_agreement(case.model());
    let case = Case {
        provisioned: Some(1),
        lsi: false,
        gsis: vec![(1, true, false)],
        hot_share: 0.28843009540693304,
        item_bytes: 3416,
        write_rate: 153.66307308805833,
        read_rate: 27.98770892923569,
        consistent: true,
        seed: 7750640675661453388,
    };
    check_agreement(case.model());
}
