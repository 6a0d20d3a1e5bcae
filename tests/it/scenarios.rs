//! Runs every acceptance scenario through `Database::execute`, each on a fresh in-memory
//! database: the repository's own `tests/scenarios` always, and `../shared/scenarios` too when
//! it is beside the repository (format: `tests/scenarios/README.md`). A scenario that uses an
//! operation the engine does not support yet is reported as skipped, naming the operation;
//! every other scenario must pass.

use crate::scenario_runner;
use scenario_runner::{run_scenario, scenarios_to_run, Outcome, Scenario};
use serde_json::{json, Value};
use shoal::tables::{Database, Durability, Options};
use shoal_tables::StorageOptions;

/// The engine options a scenario's `options` object asks for; an unknown key is an error.
fn options_for(scenario: &Scenario) -> Result<Options, String> {
    let mut options = Options {
        storage: StorageOptions {
            durability: Durability::None,
            memtable_size_bytes: 4 << 20,
            wal_segment_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    };
    for (key, value) in &scenario.options {
        match key.as_str() {
            "item_collection_size_limit_bytes" => {
                options.limits.item_collection_size_limit_bytes = value
                    .as_u64()
                    .ok_or_else(|| format!("option {key} must be a whole number, not {value}"))?;
            }
            _ => return Err(format!("unknown option {key:?}")),
        }
    }
    Ok(options)
}

fn run(scenario: &Scenario) -> Outcome {
    let options = match options_for(scenario) {
        Ok(options) => options,
        Err(reason) => return Outcome::Failed(reason),
    };
    let database = match Database::open_in_memory(options) {
        Ok(database) => database,
        Err(e) => return Outcome::Failed(format!("cannot open the database: {e}")),
    };
    run_scenario(
        scenario,
        |op| shoal_tables::SUPPORTED_OPERATIONS.contains(&op),
        |op: &str, request: Value| {
            database.execute(op, request).map_err(|error| {
                let mut body = json!({"__type": error.code.name(), "message": error.message});
                if let (Some(extra), Some(object)) = (&error.extra, body.as_object_mut()) {
                    object.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                (error.code.name().to_string(), body)
            })
        },
    )
}

#[test]
fn every_scenario_passes_or_is_skipped() {
    let (scenarios, summary) = scenarios_to_run().unwrap_or_else(|e| panic!("{e}"));
    println!("{summary}");
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for scenario in &scenarios {
        match run(scenario) {
            Outcome::Passed => {
                passed += 1;
                println!("PASS {}", scenario.title());
            }
            Outcome::Failed(reason) => {
                failed += 1;
                println!(
                    "FAIL {} ({}): {reason}",
                    scenario.title(),
                    scenario.path.display()
                );
            }
            Outcome::Skipped(operations) => {
                skipped += 1;
                println!("SKIP {}: uses {}", scenario.title(), operations.join(", "));
            }
        }
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    assert_eq!(
        failed, 0,
        "{failed} scenario(s) failed (see the lines above)"
    );
}

#[test]
fn scenario_options_map_onto_engine_options() {
    let scenario = |options: Value| Scenario {
        name: "t".to_string(),
        folder: "tests/scenarios".to_string(),
        path: "t.json".into(),
        options: options.as_object().unwrap().clone(),
        steps: Vec::new(),
    };
    let options = options_for(&scenario(
        json!({"item_collection_size_limit_bytes": 65536}),
    ))
    .unwrap();
    assert_eq!(options.limits.item_collection_size_limit_bytes, 65536);
    let unknown = options_for(&scenario(json!({"page_size": 1}))).unwrap_err();
    assert!(unknown.contains("page_size"), "{unknown}");
    assert!(options_for(&scenario(
        json!({"item_collection_size_limit_bytes": "big"})
    ))
    .is_err());
}
