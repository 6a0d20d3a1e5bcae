//! Eventual consistency on purpose (SPEC-2 §8, `table::lag`): with `EmulationOptions::gsi_lag` a
//! global secondary index shows a write only after the lag, while the table and its local
//! indexes show it at once; with `EmulationOptions::eventual_read_lag` reads without ConsistentRead
//! see the table as it was, strongly consistent reads, conditions and transactions the
//! latest. A power cut never leaves an index behind its table: the lag is in reads only.

use crate::items_support;
use std::path::Path;
use std::thread::sleep;
use std::time::Duration;

use items_support::*;
use serde_json::{json, Value};
use shoal_tables::{Database, EmulationOptions, Lag, Options, StorageOptions};

const LAG: Duration = Duration::from_millis(400);
/// Past the lag, with room for the ring's tick and a slow machine.
const PAST_LAG: Duration = Duration::from_millis(700);

fn item(sk: &str, g: &str, l: &str) -> Value {
    json!({"pk": {"S": "p"}, "sk": {"S": sk}, "g": {"S": g}, "gs": {"N": "1"}, "l": {"S": l}})
}

/// The items a Query or Scan counts over all its pages: a page stops at 1 MB, which a fast
/// build's writes pass within the lag tests' few hundred milliseconds.
fn count(db: &Database, op: &str, mut request: Value) -> u64 {
    request["TableName"] = json!("Tbl");
    let mut counted = 0;
    // Far more pages than these tests write; a paging bug fails here instead of hanging.
    for _ in 0..PAGES_MAX {
        let page = ok(db, op, request.clone());
        counted += page["Count"].as_u64().unwrap();
        match page.get("LastEvaluatedKey") {
            Some(last) => request["ExclusiveStartKey"] = last.clone(),
            None => return counted,
        }
    }
    panic!("{op} still had pages after {PAGES_MAX}");
}

const PAGES_MAX: usize = 1_000;

fn gsi_query(db: &Database, g: &str) -> u64 {
    count(
        db,
        "Query",
        json!({"IndexName": "ByG", "KeyConditionExpression": "g = :g",
               "ExpressionAttributeValues": {":g": {"S": g}}}),
    )
}

fn lsi_query(db: &Database, l: &str, consistent: bool) -> u64 {
    count(
        db,
        "Query",
        json!({"IndexName": "ByL", "KeyConditionExpression": "pk = :p AND l = :l",
               "ExpressionAttributeValues": {":p": {"S": "p"}, ":l": {"S": l}},
               "ConsistentRead": consistent}),
    )
}

fn gsi_scan(db: &Database) -> u64 {
    count(db, "Scan", json!({"IndexName": "ByG"}))
}

fn attribute_g(db: &Database, op_request: (&str, Value)) -> Option<String> {
    let (op, request) = op_request;
    let response = ok(db, op, request);
    let item = match op {
        "GetItem" => response.get("Item").cloned(),
        "BatchGetItem" => response["Responses"]["Tbl"].get(0).cloned(),
        "TransactGetItems" => response["Responses"][0].get("Item").cloned(),
        _ => response["Items"].get(0).cloned(),
    };
    item.map(|item| item["g"]["S"].as_str().unwrap().to_string())
}

fn key() -> Value {
    json!({"pk": {"S": "p"}, "sk": {"S": "1"}})
}

#[test]
fn a_gsi_shows_a_write_only_after_the_lag_while_the_table_and_lsis_show_it_at_once() {
    let db = open(Options {
        emulation: EmulationOptions {
            gsi_lag: Some(Lag::fixed(LAG)),
            ..EmulationOptions::default()
        },
        ..Options::default()
    });
    create_indexed_table(&db);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": item("1", "a", "x")}),
    );
    assert_eq!(gsi_query(&db, "a"), 0, "the GSI showed a write at once");
    assert_eq!(gsi_scan(&db), 0);
    // Base reads and LSI reads (strong or not) are not lagged by a GSI lag.
    assert_eq!(get(&db, "Tbl", key()).unwrap()["g"]["S"], "a");
    assert_eq!(lsi_query(&db, "x", false), 1);
    assert_eq!(lsi_query(&db, "x", true), 1);
    assert_eq!(count(&db, "Scan", json!({})), 1);
    sleep(PAST_LAG);
    assert_eq!(gsi_query(&db, "a"), 1, "the GSI never showed the write");
    assert_eq!(gsi_scan(&db), 1);

    // An update moves the entry: the GSI keeps the old one for the lag, then the new one.
    ok(
        &db,
        "UpdateItem",
        json!({"TableName": "Tbl", "Key": key(), "UpdateExpression": "SET g = :g",
               "ExpressionAttributeValues": {":g": {"S": "b"}}}),
    );
    assert_eq!((gsi_query(&db, "a"), gsi_query(&db, "b")), (1, 0));
    sleep(PAST_LAG);
    assert_eq!((gsi_query(&db, "a"), gsi_query(&db, "b")), (0, 1));
}

#[test]
fn eventually_consistent_reads_see_the_old_item_and_strong_reads_the_new() {
    let db = open(Options {
        emulation: EmulationOptions {
            eventual_read_lag: Some(Lag::fixed(LAG)),
            ..EmulationOptions::default()
        },
        ..Options::default()
    });
    create_indexed_table(&db);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": item("1", "old", "x")}),
    );
    sleep(PAST_LAG);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": item("1", "new", "x")}),
    );
    let reads = |consistent: bool| {
        let table_key = json!({"TableName": "Tbl", "Key": key(), "ConsistentRead": consistent});
        let query = json!({"TableName": "Tbl", "KeyConditionExpression": "pk = :p",
                           "ExpressionAttributeValues": {":p": {"S": "p"}},
                           "ConsistentRead": consistent});
        let lsi = json!({"TableName": "Tbl", "IndexName": "ByL",
                         "KeyConditionExpression": "pk = :p AND l = :l",
                         "ExpressionAttributeValues": {":p": {"S": "p"}, ":l": {"S": "x"}},
                         "Select": "ALL_ATTRIBUTES", "ConsistentRead": consistent});
        let batch =
            json!({"RequestItems": {"Tbl": {"Keys": [key()], "ConsistentRead": consistent}}});
        vec![
            attribute_g(&db, ("GetItem", table_key)),
            attribute_g(&db, ("Query", query)),
            attribute_g(&db, ("Query", lsi)),
            attribute_g(
                &db,
                (
                    "Scan",
                    json!({"TableName": "Tbl", "ConsistentRead": consistent}),
                ),
            ),
            attribute_g(&db, ("BatchGetItem", batch)),
        ]
    };
    assert_eq!(reads(false), vec![Some("old".to_string()); 5]);
    assert_eq!(reads(true), vec![Some("new".to_string()); 5]);
    // Transactions, conditions and ReturnValues always see the latest item.
    let transact_get = json!({"TransactItems": [{"Get": {"TableName": "Tbl", "Key": key()}}]});
    assert_eq!(
        attribute_g(&db, ("TransactGetItems", transact_get)),
        Some("new".to_string())
    );
    let updated = ok(
        &db,
        "UpdateItem",
        json!({"TableName": "Tbl", "Key": key(), "UpdateExpression": "SET n = :n",
               "ConditionExpression": "g = :new", "ReturnValues": "ALL_OLD",
               "ExpressionAttributeValues": {":n": {"N": "1"}, ":new": {"S": "new"}}}),
    );
    assert_eq!(updated["Attributes"]["g"]["S"], "new");
    // A fresh item is not there for an eventually consistent read until the lag passed.
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": item("2", "fresh", "y")}),
    );
    let fresh = json!({"TableName": "Tbl", "Key": {"pk": {"S": "p"}, "sk": {"S": "2"}}});
    assert_eq!(attribute_g(&db, ("GetItem", fresh.clone())), None);
    sleep(PAST_LAG);
    assert_eq!(reads(false), vec![Some("new".to_string()); 5]);
    assert_eq!(
        attribute_g(&db, ("GetItem", fresh)),
        Some("fresh".to_string())
    );
}

#[test]
fn without_lags_every_read_sees_the_latest_write() {
    let db = open(Options::default());
    create_indexed_table(&db);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": item("1", "a", "x")}),
    );
    assert_eq!(gsi_query(&db, "a"), 1);
    let eventual = json!({"TableName": "Tbl", "Key": key()});
    assert_eq!(attribute_g(&db, ("GetItem", eventual)), Some("a".into()));
    assert_eq!(db.lsm().live_snapshots(), Vec::<u64>::new());
}

#[test]
fn lagged_reads_hold_a_bounded_number_of_snapshots() {
    let lag = Duration::from_millis(100);
    let db = open(Options {
        emulation: EmulationOptions {
            gsi_lag: Some(Lag::fixed(lag)),
            eventual_read_lag: Some(Lag {
                min: Duration::ZERO,
                max: lag,
            }),
            ..EmulationOptions::default()
        },
        ..Options::default()
    });
    create_indexed_table(&db);
    let started = std::time::Instant::now();
    let mut n = 0;
    while started.elapsed() < lag * 6 {
        ok(
            &db,
            "PutItem",
            json!({"TableName": "Tbl", "Item": item(&n.to_string(), "a", "x")}),
        );
        n += 1;
    }
    // The ring ticks every lag/64 (at least 1 ms): at most about 64 snapshots, plus two.
    let held = db.lsm().live_snapshots().len();
    assert!(held <= 66, "{held} snapshots held after {n} writes");
    sleep(lag * 2);
    assert_eq!(gsi_query(&db, "a") as usize, n);
    // Idle past the lag, the ring keeps one snapshot: the latest state.
    assert_eq!(db.lsm().live_snapshots().len(), 1);
}

/// Power cuts with both lags on: the index entries are in each write's own batch, so after
/// every reopen `Database::check` finds every index exact, and a lagged GSI read past the
/// lag shows exactly what the table holds.
#[test]
fn power_cuts_never_leave_an_index_behind_its_table() {
    let sim = shoal_vfs::sim::SimFs::new();
    let dir = Path::new("/shoal");
    let options = || Options {
        emulation: EmulationOptions {
            gsi_lag: Some(Lag::fixed(Duration::from_millis(50))),
            eventual_read_lag: Some(Lag::fixed(Duration::from_millis(50))),
            ..EmulationOptions::default()
        },
        storage: StorageOptions {
            memtable_size_bytes: 4 << 10,
            wal_segment_size_bytes: 16 << 10,
            ..StorageOptions::default()
        },
        ..Options::default()
    };
    for round in 0..6u64 {
        let db = Database::open_with_fs(sim.fs(), dir, options()).unwrap();
        if round == 0 {
            create_indexed_table(&db);
        } else {
            let report = db.check().unwrap();
            assert!(report.is_sound(), "round {round}: {:?}", report.problems);
            sleep(Duration::from_millis(120));
            let items = count(&db, "Scan", json!({"ConsistentRead": true}));
            assert_eq!(gsi_scan(&db), items, "round {round}");
        }
        sim.freeze_after(Some(20 + round * 13));
        for n in 0..40 {
            let request =
                json!({"TableName": "Tbl", "Item": item(&format!("{round}-{n}"), "a", "x")});
            if db.execute("PutItem", request).is_err() {
                break;
            }
        }
        sim.power_loss(round);
        drop(db);
    }
}
