//! Transient statuses (`EmulationOptions::transient_status_delay`, DynamoDB Local's
//! `-delayTransientStatuses`): CREATING, UPDATING and DELETING for the delay, then ACTIVE or
//! gone; changes during a transition are refused; the default stays ACTIVE at once.

use std::time::Duration;

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::{Database, Durability, EmulationOptions, Options, StorageOptions};

const DELAY: Duration = Duration::from_millis(400);

fn open(delay: Duration) -> Database {
    Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            wal_segment_size_bytes: 1 << 20,
            memtable_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        emulation: EmulationOptions {
            transient_status_delay: delay,
            ..EmulationOptions::default()
        },
        ..Options::default()
    })
    .unwrap()
}

fn create_request() -> Value {
    json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST"
    })
}

fn call(db: &Database, operation: &str, request: Value) -> Value {
    db.execute(operation, request)
        .unwrap_or_else(|e| panic!("{operation}: {e}"))
}

fn status(db: &Database) -> Result<Value, ErrorCode> {
    db.execute("DescribeTable", json!({"TableName": "Tbl"}))
        .map(|r| r["Table"]["TableStatus"].clone())
        .map_err(|e| e.code)
}

fn in_use(db: &Database, operation: &str, request: Value, what: &str) {
    let e = db.execute(operation, request).expect_err("refused");
    assert_eq!(e.code, ErrorCode::ResourceInUseException);
    assert_eq!(
        e.message,
        format!("Attempt to change a resource which is still in use: Table is being {what}: Tbl")
    );
}

#[test]
fn without_a_delay_everything_is_active_at_once() {
    let db = open(Duration::ZERO);
    let created = call(&db, "CreateTable", create_request());
    assert_eq!(created["TableDescription"]["TableStatus"], "ACTIVE");
    assert_eq!(status(&db), Ok(json!("ACTIVE")));
    call(&db, "DeleteTable", json!({"TableName": "Tbl"}));
    assert_eq!(status(&db), Err(ErrorCode::ResourceNotFoundException));
}

#[test]
fn create_update_and_delete_each_last_the_delay() {
    let db = open(DELAY);
    let created = call(&db, "CreateTable", create_request());
    assert_eq!(created["TableDescription"]["TableStatus"], "CREATING");
    assert_eq!(status(&db), Ok(json!("CREATING")));
    let update = json!({"TableName": "Tbl", "DeletionProtectionEnabled": false});
    in_use(&db, "UpdateTable", update.clone(), "created");
    in_use(&db, "DeleteTable", json!({"TableName": "Tbl"}), "created");
    std::thread::sleep(DELAY);
    assert_eq!(status(&db), Ok(json!("ACTIVE")));

    // A GSI created by UpdateTable stays CREATING with its table UPDATING.
    let add_index = json!({"TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "g", "AttributeType": "S"}],
        "GlobalSecondaryIndexUpdates": [{"Create": {"IndexName": "ByG",
            "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"}}}]});
    call(&db, "UpdateTable", add_index);
    std::thread::sleep(Duration::from_millis(100));
    let table = call(&db, "DescribeTable", json!({"TableName": "Tbl"}))["Table"].clone();
    assert_eq!(table["TableStatus"], "UPDATING");
    assert_eq!(
        table["GlobalSecondaryIndexes"][0]["IndexStatus"],
        "CREATING"
    );
    in_use(&db, "UpdateTable", update.clone(), "updated");
    std::thread::sleep(DELAY);
    let table = call(&db, "DescribeTable", json!({"TableName": "Tbl"}))["Table"].clone();
    assert_eq!(table["TableStatus"], "ACTIVE");
    assert_eq!(table["GlobalSecondaryIndexes"][0]["IndexStatus"], "ACTIVE");

    // DELETING: described and listed, its name taken, then gone.
    let deleted = call(&db, "DeleteTable", json!({"TableName": "Tbl"}));
    assert_eq!(deleted["TableDescription"]["TableStatus"], "DELETING");
    assert_eq!(status(&db), Ok(json!("DELETING")));
    assert_eq!(
        call(&db, "ListTables", json!({}))["TableNames"],
        json!(["Tbl"])
    );
    in_use(&db, "CreateTable", create_request(), "deleted");
    let put = db.execute(
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "a"}}}),
    );
    assert_eq!(
        put.unwrap_err().code,
        ErrorCode::ResourceNotFoundException,
        "its storage is gone"
    );
    std::thread::sleep(DELAY);
    assert_eq!(status(&db), Err(ErrorCode::ResourceNotFoundException));
    assert_eq!(call(&db, "ListTables", json!({}))["TableNames"], json!([]));
    call(&db, "CreateTable", create_request());
}
