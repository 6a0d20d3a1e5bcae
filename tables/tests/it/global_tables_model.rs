//! Replication against a model (proptest): random interleavings of writes and deletes in
//! two Regions, Regions cut off and healed, and pauses that let some changes cross, with a
//! random lag. After healing and draining: both Regions hold the same items, each key the
//! value of its last put when that was the key's last write (last writer wins: the test's
//! order is the stamps' order), and every held value is in each Region's stream exactly once
//! (`global_tables_crash::verify`, shared with the power-cut test).

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use shoal_tables::{Database, Lag};

use crate::global_tables::options;
use crate::global_tables_crash::{create, try_call, verify, Writes};

const REGIONS: [&str; 2] = ["us-east-1", "eu-west-1"];

#[derive(Debug, Clone)]
enum Op {
    Put { region: usize, key: u8 },
    Delete { region: usize, key: u8 },
    Cut(usize),
    Heal(usize),
    Pause(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..2usize, 0..4u8).prop_map(|(region, key)| Op::Put { region, key }),
        2 => (0..2usize, 0..4u8).prop_map(|(region, key)| Op::Delete { region, key }),
        1 => (0..2usize).prop_map(Op::Cut),
        1 => (0..2usize).prop_map(Op::Heal),
        1 => (0..5u8).prop_map(Op::Pause),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn replicas_converge_on_the_last_writer_and_apply_each_write_once(
        ops in proptest::collection::vec(op(), 1..40),
        lag_max in 0..4u64,
    ) {
        let db = Database::open_in_memory(options(Lag {
            min: Duration::ZERO,
            max: Duration::from_millis(lag_max),
        }))
        .unwrap();
        create(&db).unwrap();
        try_call(&db, REGIONS[0], "UpdateTable", json!({
            "TableName": "Crash", "ReplicaUpdates": [{"Create": {"RegionName": REGIONS[1]}}]
        }))
        .unwrap();
        let mut writes: Writes = BTreeMap::new();
        for (n, op) in ops.iter().enumerate() {
            match op {
                Op::Put { region, key } => {
                    let value = format!("{}-{n}", REGIONS[*region]);
                    try_call(&db, REGIONS[*region], "PutItem", json!({"TableName": "Crash", "Item": {
                        "pk": {"S": format!("k{key}")}, "g": {"S": "g"}, "v": {"S": value}
                    }}))
                    .unwrap();
                    writes.entry(format!("k{key}")).or_default().push((Some(value), true));
                }
                Op::Delete { region, key } => {
                    try_call(&db, REGIONS[*region], "DeleteItem", json!({
                        "TableName": "Crash", "Key": {"pk": {"S": format!("k{key}")}}
                    }))
                    .unwrap();
                    writes.entry(format!("k{key}")).or_default().push((None, true));
                }
                Op::Cut(region) => db.cut_region(REGIONS[*region]),
                Op::Heal(region) => db.heal_region(REGIONS[*region]),
                Op::Pause(millis) => std::thread::sleep(Duration::from_millis(u64::from(*millis))),
            }
        }
        for region in REGIONS {
            db.heal_region(region);
        }
        if let Err(problem) = verify(&db, &writes, &[]) {
            panic!("{problem}");
        }
    }
}
