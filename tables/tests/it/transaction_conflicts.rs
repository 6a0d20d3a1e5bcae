//! Transaction conflicts (SPEC-2 §7.3, `table::conflicts`): with
//! `EmulationOptions::transaction_conflicts`, a request meeting a write in flight fails at once as
//! DynamoDB's does. `EmulationOptions::write_hold` keeps each write in flight long enough to meet it;
//! `Database::items_in_flight` tells the test when it is.

use crate::items_support;
use std::thread;
use std::time::{Duration, Instant};

use items_support::*;
use serde_json::{json, Value};
use shoal_model::{ApiError, ErrorCode};
use shoal_tables::{Database, EmulationOptions, Options};

const HOLD: Duration = Duration::from_millis(1500);

fn key(sk: &str) -> Value {
    json!({"id": {"N": sk}})
}

fn setup(conflicts: bool) -> Database {
    let db = open(Options {
        emulation: EmulationOptions {
            transaction_conflicts: conflicts,
            write_hold: HOLD,
            ..EmulationOptions::default()
        },
        ..Options::default()
    });
    create_plain_table(&db);
    db
}

fn put(sk: &str, n: u32) -> Value {
    json!({"TableName": "Plain", "Item": {"id": {"N": sk}, "n": {"N": n.to_string()}}})
}

fn transact_put(sks: &[&str], n: u32) -> Value {
    let actions: Vec<Value> = sks.iter().map(|sk| json!({"Put": put(sk, n)})).collect();
    json!({"TransactItems": actions})
}

fn reason_codes(error: &ApiError) -> Vec<String> {
    error.extra.as_ref().unwrap()["CancellationReasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|reason| reason["Code"].as_str().unwrap().to_string())
        .collect()
}

/// Runs `op` on a thread (it holds its items for `HOLD`) and returns once its items are in
/// flight, with how long is left of the hold.
fn in_flight<'a>(
    scope: &'a thread::Scope<'a, '_>,
    db: &'a Database,
    op: &'static str,
    request: Value,
) -> thread::ScopedJoinHandle<'a, Result<Value, ApiError>> {
    let handle = scope.spawn(move || db.execute(op, request));
    let started = Instant::now();
    while db.items_in_flight() == 0 {
        assert!(started.elapsed() < HOLD, "{op} never came in flight");
        thread::sleep(Duration::from_millis(2));
    }
    handle
}

fn stored_n(db: &Database, sk: &str) -> Option<String> {
    get(db, "Plain", key(sk)).map(|item| item["n"]["N"].as_str().unwrap().to_string())
}

#[test]
fn writes_meeting_a_transaction_in_flight_fail_and_plain_reads_do_not() {
    let db = setup(true);
    ok(&db, "PutItem", put("1", 0));
    thread::scope(|scope| {
        let held = in_flight(
            scope,
            &db,
            "TransactWriteItems",
            transact_put(&["1", "2"], 1),
        );

        // A single write of one of its items: TransactionConflictException.
        let error = err(&db, "PutItem", put("1", 2));
        assert_eq!(error.code, ErrorCode::TransactionConflictException);
        assert_eq!(error.message, "Transaction is ongoing for the item");
        let update = json!({"TableName": "Plain", "Key": key("2"), "UpdateExpression": "SET n = :n",
                            "ExpressionAttributeValues": {":n": {"N": "3"}}});
        assert_eq!(
            err(&db, "UpdateItem", update).code,
            ErrorCode::TransactionConflictException
        );
        let delete = json!({"TableName": "Plain", "Key": key("1")});
        assert_eq!(
            err(&db, "DeleteItem", delete).code,
            ErrorCode::TransactionConflictException
        );

        // Another transaction touching one of its items: cancelled, the reason on that
        // action only.
        let error = err(&db, "TransactWriteItems", transact_put(&["3", "2"], 4));
        assert_eq!(error.code, ErrorCode::TransactionCanceledException);
        assert_eq!(reason_codes(&error), ["None", "TransactionConflict"]);
        assert_eq!(
            error.extra.as_ref().unwrap()["CancellationReasons"][1]["Message"],
            "Transaction is ongoing for the item"
        );
        assert!(
            error.message.contains("[None, TransactionConflict]"),
            "{}",
            error.message
        );

        // A read transaction of an item being written: cancelled.
        let gets = json!({"TransactItems": [
            {"Get": {"TableName": "Plain", "Key": key("26")}},
            {"Get": {"TableName": "Plain", "Key": key("1")}}
        ]});
        let error = err(&db, "TransactGetItems", gets);
        assert_eq!(reason_codes(&error), ["None", "TransactionConflict"]);

        // PartiQL meets the same conflicts.
        let statement = json!({"Statement": "UPDATE \"Plain\" SET n = 9 WHERE id = 1"});
        assert_eq!(
            err(&db, "ExecuteStatement", statement).code,
            ErrorCode::TransactionConflictException
        );
        let statements = json!({"TransactStatements": [
            {"Statement": "UPDATE \"Plain\" SET n = 9 WHERE id = 2"}
        ]});
        let error = err(&db, "ExecuteTransaction", statements);
        assert_eq!(reason_codes(&error), ["TransactionConflict"]);

        // GetItem never conflicts: it reads what was committed.
        assert_eq!(stored_n(&db, "1"), Some("0".into()));

        held.join().unwrap().unwrap();
    });
    // The held transaction committed; nothing the refused requests asked for happened.
    assert_eq!(stored_n(&db, "1"), Some("1".into()));
    assert_eq!(stored_n(&db, "2"), Some("1".into()));
    assert_eq!(stored_n(&db, "3"), None);
    assert_eq!(db.items_in_flight(), 0);
    ok(&db, "PutItem", put("1", 5));
}

#[test]
fn a_read_transaction_meeting_a_single_or_batch_write_in_flight_is_cancelled() {
    let db = setup(true);
    let batch = json!({"RequestItems": {"Plain": [
        {"PutRequest": {"Item": {"id": {"N": "2"}}}}
    ]}});
    for (op, request, sk) in [
        ("PutItem", put("1", 1), "1"),
        ("BatchWriteItem", batch, "2"),
    ] {
        thread::scope(|scope| {
            let held = in_flight(scope, &db, op, request);
            let gets = json!({"TransactItems": [{"Get": {"TableName": "Plain", "Key": key(sk)}}]});
            let error = err(&db, "TransactGetItems", gets);
            assert_eq!(error.code, ErrorCode::TransactionCanceledException, "{op}");
            assert_eq!(reason_codes(&error), ["TransactionConflict"], "{op}");
            held.join().unwrap().unwrap();
        });
    }
}

#[test]
fn writes_meeting_a_single_write_in_flight_wait_their_turn() {
    let db = setup(true);
    thread::scope(|scope| {
        let held = in_flight(scope, &db, "PutItem", put("1", 1));
        // Neither a single write nor a transaction conflicts with a single write: they
        // queue behind it.
        ok(&db, "TransactWriteItems", transact_put(&["1"], 2));
        held.join().unwrap().unwrap();
    });
    assert_eq!(stored_n(&db, "1"), Some("2".into()));
}

#[test]
fn without_the_option_writes_wait_for_a_transaction_instead_of_failing() {
    let db = setup(false);
    let started = Instant::now();
    thread::scope(|scope| {
        let transaction = scope.spawn(|| db.execute("TransactWriteItems", transact_put(&["1"], 1)));
        thread::sleep(HOLD / 4);
        // Queued behind the transaction's locks, then done.
        ok(&db, "PutItem", put("1", 2));
        let gets = json!({"TransactItems": [{"Get": {"TableName": "Plain", "Key": key("1")}}]});
        ok(&db, "TransactGetItems", gets);
        transaction.join().unwrap().unwrap();
    });
    assert!(started.elapsed() >= HOLD);
    assert_eq!(stored_n(&db, "1"), Some("2".into()));
    assert_eq!(db.items_in_flight(), 0);
}
