//! Billing mode, provisioned throughput and on-demand caps (SPEC-2 §5.4, §5.5): UpdateTable's
//! mode switches, throughput changes of the table and its GSIs, OnDemandThroughput on
//! CreateTable and UpdateTable, every text, the throughput history DescribeTable reports,
//! and durability across a reopen.

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::{Database, Durability, Options, StorageOptions};

fn options() -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::None,
            wal_segment_size_bytes: 1 << 20,
            memtable_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    }
}

fn open() -> Database {
    Database::open_in_memory(options()).unwrap()
}

fn units(read: i64, write: i64) -> Value {
    json!({"ReadCapacityUnits": read, "WriteCapacityUnits": write})
}

/// Table `Tbl` (key pk), with GSI `ByG` (on g); on demand, or provisioned 5/5 (the GSI 3/3).
fn create(db: &Database, provisioned: bool) -> Value {
    let mut request = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "g", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "GlobalSecondaryIndexes": [{
            "IndexName": "ByG",
            "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"}
        }],
        "BillingMode": "PAY_PER_REQUEST"
    });
    if provisioned {
        request["BillingMode"] = json!("PROVISIONED");
        request["ProvisionedThroughput"] = units(5, 5);
        request["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] = units(3, 3);
    }
    call(db, "CreateTable", request)["TableDescription"].clone()
}

fn call(db: &Database, operation: &str, request: Value) -> Value {
    db.execute(operation, request)
        .unwrap_or_else(|e| panic!("{operation}: {e}"))
}

fn error(db: &Database, operation: &str, request: Value) -> (ErrorCode, String) {
    let e = db
        .execute(operation, request)
        .expect_err("the request must fail");
    (e.code, e.message)
}

fn validation(message: &str) -> (ErrorCode, String) {
    (ErrorCode::ValidationException, message.to_string())
}

fn invalid(message: &str) -> (ErrorCode, String) {
    validation(&format!(
        "One or more parameter values were invalid: {message}"
    ))
}

fn describe(db: &Database) -> Value {
    call(db, "DescribeTable", json!({"TableName": "Tbl"}))["Table"].clone()
}

fn update(db: &Database, members: Value) -> Value {
    let mut request = members;
    request["TableName"] = json!("Tbl");
    call(db, "UpdateTable", request)["TableDescription"].clone()
}

fn update_error(db: &Database, members: Value) -> (ErrorCode, String) {
    let mut request = members;
    request["TableName"] = json!("Tbl");
    error(db, "UpdateTable", request)
}

fn gsi_update(index: &str, action: Value) -> Value {
    let mut action = action;
    action["IndexName"] = json!(index);
    json!([{"Update": action}])
}

fn units_of(throughput: &Value) -> (u64, u64) {
    (
        throughput["ReadCapacityUnits"].as_u64().unwrap(),
        throughput["WriteCapacityUnits"].as_u64().unwrap(),
    )
}

fn now_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn switching_to_on_demand_zeroes_every_unit_and_records_the_time() {
    let db = open();
    let created = create(&db, true);
    assert_eq!(created["BillingModeSummary"]["BillingMode"], "PROVISIONED");
    assert!(created["BillingModeSummary"]
        .get("LastUpdateToPayPerRequestDateTime")
        .is_none());
    let before = now_seconds();
    let updated = update(&db, json!({"BillingMode": "PAY_PER_REQUEST"}));
    assert_eq!(updated["TableStatus"], "UPDATING");
    for table in [updated, describe(&db)] {
        let summary = &table["BillingModeSummary"];
        assert_eq!(summary["BillingMode"], "PAY_PER_REQUEST");
        let switched = summary["LastUpdateToPayPerRequestDateTime"]
            .as_f64()
            .unwrap();
        assert!(switched >= before - 1.0 && switched <= now_seconds() + 1.0);
        assert!(switched >= table["CreationDateTime"].as_f64().unwrap());
        assert_eq!(units_of(&table["ProvisionedThroughput"]), (0, 0));
        assert_eq!(table["ProvisionedThroughput"]["NumberOfDecreasesToday"], 0);
        let gsi = &table["GlobalSecondaryIndexes"][0];
        assert_eq!(units_of(&gsi["ProvisionedThroughput"]), (0, 0));
    }
    // Throughput is refused from now on, for the table and its indexes.
    assert_eq!(
        update_error(&db, json!({"ProvisionedThroughput": units(5, 5)})),
        invalid("Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"BillingMode": "PAY_PER_REQUEST", "ProvisionedThroughput": units(5, 5)})
        ),
        invalid("Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"ProvisionedThroughput": units(1, 1)}))})
        ),
        invalid("ProvisionedThroughput should not be specified for index: ByG when BillingMode is PAY_PER_REQUEST")
    );
}

#[test]
fn switching_to_provisioned_needs_throughput_for_the_table_and_every_index() {
    let db = open();
    create(&db, false);
    assert_eq!(
        update_error(&db, json!({"BillingMode": "PROVISIONED"})),
        invalid("ProvisionedThroughput must be specified when BillingMode is PROVISIONED")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"BillingMode": "PROVISIONED", "ProvisionedThroughput": units(4, 6)})
        ),
        invalid("ProvisionedThroughput must be specified for index: ByG")
    );
    // Nothing changed.
    assert_eq!(
        describe(&db)["BillingModeSummary"]["BillingMode"],
        "PAY_PER_REQUEST"
    );
    let updated = update(
        &db,
        json!({"BillingMode": "PROVISIONED", "ProvisionedThroughput": units(4, 6),
               "GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"ProvisionedThroughput": units(2, 3)}))}),
    );
    assert_eq!(updated["TableStatus"], "UPDATING");
    for table in [updated, describe(&db)] {
        assert_eq!(table["BillingModeSummary"]["BillingMode"], "PROVISIONED");
        assert!(table["BillingModeSummary"]
            .get("LastUpdateToPayPerRequestDateTime")
            .is_none());
        assert_eq!(units_of(&table["ProvisionedThroughput"]), (4, 6));
        // A mode switch is neither an increase nor a decrease.
        assert!(table["ProvisionedThroughput"]
            .get("LastIncreaseDateTime")
            .is_none());
        let gsi = &table["GlobalSecondaryIndexes"][0];
        assert_eq!(units_of(&gsi["ProvisionedThroughput"]), (2, 3));
    }
    // A GSI created now needs throughput of its own.
    let create_action = json!([{"Create": {
        "IndexName": "ByH",
        "KeySchema": [{"AttributeName": "h", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"}
    }}]);
    assert_eq!(
        update_error(
            &db,
            json!({"AttributeDefinitions": [{"AttributeName": "h", "AttributeType": "S"}],
                   "GlobalSecondaryIndexUpdates": create_action})
        ),
        invalid("ProvisionedThroughput must be specified for index: ByH")
    );
}

#[test]
fn a_switch_and_an_index_creation_go_together() {
    let db = open();
    create(&db, true);
    // Back to on demand while creating an index: the index follows the new mode.
    let updated = update(
        &db,
        json!({"BillingMode": "PAY_PER_REQUEST",
               "AttributeDefinitions": [{"AttributeName": "h", "AttributeType": "S"}],
               "GlobalSecondaryIndexUpdates": [{"Create": {
                   "IndexName": "ByH",
                   "KeySchema": [{"AttributeName": "h", "KeyType": "HASH"}],
                   "Projection": {"ProjectionType": "ALL"}}}]}),
    );
    assert_eq!(
        updated["BillingModeSummary"]["BillingMode"],
        "PAY_PER_REQUEST"
    );
    let indexes = updated["GlobalSecondaryIndexes"].as_array().unwrap();
    assert_eq!(indexes.len(), 2);
    for gsi in indexes {
        assert_eq!(units_of(&gsi["ProvisionedThroughput"]), (0, 0));
    }
}

#[test]
fn throughput_changes_record_increases_and_decreases() {
    let db = open();
    create(&db, true);
    let before = now_seconds();
    let increased = update(&db, json!({"ProvisionedThroughput": units(10, 5)}));
    assert_eq!(increased["TableStatus"], "UPDATING");
    let throughput = &increased["ProvisionedThroughput"];
    assert_eq!(units_of(throughput), (10, 5));
    let increased_at = throughput["LastIncreaseDateTime"].as_f64().unwrap();
    assert!(increased_at >= before - 1.0);
    assert!(throughput.get("LastDecreaseDateTime").is_none());
    assert_eq!(throughput["NumberOfDecreasesToday"], 0);

    update(&db, json!({"ProvisionedThroughput": units(2, 5)}));
    update(
        &db,
        json!({"BillingMode": "PROVISIONED", "ProvisionedThroughput": units(1, 1)}),
    );
    let throughput = &describe(&db)["ProvisionedThroughput"];
    assert_eq!(units_of(throughput), (1, 1));
    assert!(throughput["LastDecreaseDateTime"].as_f64().unwrap() >= increased_at);
    assert_eq!(throughput["NumberOfDecreasesToday"], 2);
    // The index keeps its own count.
    let gsi = &describe(&db)["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"];
    assert_eq!(gsi["NumberOfDecreasesToday"], 0);
    assert!(gsi.get("LastIncreaseDateTime").is_none());

    let updated = update(
        &db,
        json!({"GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"ProvisionedThroughput": units(1, 7)}))}),
    );
    assert_eq!(updated["TableStatus"], "UPDATING");
    let gsi = &updated["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"];
    assert_eq!(units_of(gsi), (1, 7));
    assert_eq!(gsi["NumberOfDecreasesToday"], 1);
    assert!(gsi["LastIncreaseDateTime"].is_f64());
    assert!(gsi["LastDecreaseDateTime"].is_f64());
    // The table's units did not move.
    assert_eq!(units_of(&updated["ProvisionedThroughput"]), (1, 1));
    assert_eq!(
        updated["ProvisionedThroughput"]["NumberOfDecreasesToday"],
        2
    );
}

#[test]
fn equal_throughput_will_not_change() {
    let db = open();
    create(&db, true);
    assert_eq!(
        update_error(&db, json!({"ProvisionedThroughput": units(5, 5)})),
        validation("The provisioned throughput for the table will not change. The requested value equals the current value. Current ReadCapacityUnits provisioned for the table: 5. Requested ReadCapacityUnits: 5. Current WriteCapacityUnits provisioned for the table: 5. Requested WriteCapacityUnits: 5. Refer to the Amazon DynamoDB Developer Guide for current limits and how to request higher limits.")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"BillingMode": "PROVISIONED", "ProvisionedThroughput": units(5, 5)})
        )
        .1,
        update_error(&db, json!({"ProvisionedThroughput": units(5, 5)})).1
    );
    let (code, message) = update_error(
        &db,
        json!({"GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"ProvisionedThroughput": units(3, 3)}))}),
    );
    assert_eq!(code, ErrorCode::ValidationException);
    assert!(
        message.starts_with("The provisioned throughput for the index ByG will not change. The requested value equals the current value."),
        "{message}"
    );
}

#[test]
fn units_are_checked() {
    let db = open();
    create(&db, true);
    assert_eq!(
        update_error(&db, json!({"ProvisionedThroughput": units(0, 5)})),
        validation("1 validation error detected: Value '0' at 'provisionedThroughput.readCapacityUnits' failed to satisfy constraint: Member must have value greater than or equal to 1")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"ProvisionedThroughput": {"ReadCapacityUnits": 5}})
        ),
        validation("1 validation error detected: Value null at 'provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: Member must not be null")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"ProvisionedThroughput": units(1, -2)}))})
        ),
        validation("1 validation error detected: Value '-2' at 'globalSecondaryIndexUpdates.1.member.update.provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: Member must have value greater than or equal to 1")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"ProvisionedThroughput": units(5, 10_000_000_000_000)})
        ),
        invalid("Given value 10000000000000 for WriteCapacityUnits is out of bounds")
    );
    assert_eq!(units_of(&describe(&db)["ProvisionedThroughput"]), (5, 5));
}

#[test]
fn the_update_action_needs_an_existing_index() {
    let db = open();
    create(&db, true);
    assert_eq!(
        update_error(
            &db,
            json!({"GlobalSecondaryIndexUpdates": gsi_update("Nope", json!({"ProvisionedThroughput": units(1, 1)}))})
        ),
        (
            ErrorCode::ResourceNotFoundException,
            "Requested resource not found: Index: Nope not found".to_string()
        )
    );
    assert_eq!(
        update_error(
            &db,
            json!({"GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({}))})
        ),
        invalid("ProvisionedThroughput must be specified for index: ByG")
    );
    // Update beside Create in one entry is still two actions.
    let (_, message) = update_error(
        &db,
        json!({"GlobalSecondaryIndexUpdates": [{
            "Update": {"IndexName": "ByG", "ProvisionedThroughput": units(1, 1)},
            "Delete": {"IndexName": "ByG"}}]}),
    );
    assert_eq!(
        message,
        shoal_tables::control::update_table::ONE_ACTION_MESSAGE
    );
}

#[test]
fn stream_changes_do_not_mix_with_throughput_changes() {
    let db = open();
    create(&db, true);
    let stream = json!({"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"});
    let iops = invalid("You cannot modify stream status while updating table IOPS");
    assert_eq!(
        update_error(
            &db,
            json!({"StreamSpecification": stream, "ProvisionedThroughput": units(6, 6)})
        ),
        iops
    );
    assert_eq!(
        update_error(
            &db,
            json!({"StreamSpecification": stream, "BillingMode": "PAY_PER_REQUEST"})
        ),
        iops
    );
    assert_eq!(
        update_error(
            &db,
            json!({"StreamSpecification": stream,
                   "GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"ProvisionedThroughput": units(1, 1)}))})
        ),
        iops
    );
    assert_eq!(
        update_error(
            &db,
            json!({"StreamSpecification": stream,
                   "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "ByG"}}]})
        ),
        invalid("You cannot create or delete index while changing stream status")
    );
    // The current mode re-sent is no change: the stream change goes through.
    let updated = update(
        &db,
        json!({"StreamSpecification": stream, "BillingMode": "PROVISIONED"}),
    );
    assert_eq!(updated["StreamSpecification"]["StreamEnabled"], true);
}

#[test]
fn on_demand_throughput_on_create_table() {
    let db = open();
    let mut request = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "g", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "GlobalSecondaryIndexes": [{
            "IndexName": "ByG",
            "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
            "OnDemandThroughput": {"MaxWriteRequestUnits": 7}
        }],
        "BillingMode": "PAY_PER_REQUEST",
        "OnDemandThroughput": {"MaxReadRequestUnits": 100, "MaxWriteRequestUnits": 50}
    });
    let created = call(&db, "CreateTable", request.clone())["TableDescription"].clone();
    for table in [created, describe(&db)] {
        assert_eq!(
            table["OnDemandThroughput"],
            json!({"MaxReadRequestUnits": 100, "MaxWriteRequestUnits": 50})
        );
        assert_eq!(
            table["GlobalSecondaryIndexes"][0]["OnDemandThroughput"],
            json!({"MaxWriteRequestUnits": 7})
        );
    }
    call(&db, "DeleteTable", json!({"TableName": "Tbl"}));

    request["OnDemandThroughput"] = json!({"MaxReadRequestUnits": 0});
    assert_eq!(
        error(&db, "CreateTable", request.clone()),
        invalid(
            "Requested MaxReadRequestUnits for OnDemandThroughput for table is outside of valid range"
        )
    );
    request["OnDemandThroughput"] = json!({"MaxReadRequestUnits": 5});
    request["GlobalSecondaryIndexes"][0]["OnDemandThroughput"] =
        json!({"MaxWriteRequestUnits": -5});
    assert_eq!(
        error(&db, "CreateTable", request.clone()),
        invalid(
            "Requested MaxWriteRequestUnits for OnDemandThroughput for index is outside of valid range"
        )
    );
    request["BillingMode"] = json!("PROVISIONED");
    request["ProvisionedThroughput"] = units(1, 1);
    request["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] = units(1, 1);
    assert_eq!(
        error(&db, "CreateTable", request.clone()),
        invalid("MaxReadRequestUnits for OnDemandThroughput cannot be specified when the table BillingMode is PROVISIONED")
    );
    request["OnDemandThroughput"] = json!({});
    assert_eq!(
        error(&db, "CreateTable", request.clone()),
        invalid("MaxWriteRequestUnits for OnDemandThroughput cannot be specified when the table BillingMode is PROVISIONED")
    );
    // Without caps, a table reports none.
    let described = create(&db, false);
    assert!(described.get("OnDemandThroughput").is_none());
    assert!(described["GlobalSecondaryIndexes"][0]
        .get("OnDemandThroughput")
        .is_none());
}

#[test]
fn on_demand_throughput_on_update_table() {
    let db = open();
    create(&db, false);
    let updated = update(
        &db,
        json!({"OnDemandThroughput": {"MaxReadRequestUnits": 10, "MaxWriteRequestUnits": 20}}),
    );
    assert_eq!(updated["TableStatus"], "UPDATING");
    assert_eq!(
        updated["OnDemandThroughput"],
        json!({"MaxReadRequestUnits": 10, "MaxWriteRequestUnits": 20})
    );
    // -1 removes one cap; a member not given keeps its cap; BillingMode may come along.
    update(
        &db,
        json!({"BillingMode": "PAY_PER_REQUEST", "OnDemandThroughput": {"MaxReadRequestUnits": -1}}),
    );
    assert_eq!(
        describe(&db)["OnDemandThroughput"],
        json!({"MaxWriteRequestUnits": 20})
    );
    update(
        &db,
        json!({"OnDemandThroughput": {"MaxWriteRequestUnits": -1}}),
    );
    assert!(describe(&db).get("OnDemandThroughput").is_none());
    assert_eq!(
        update_error(
            &db,
            json!({"OnDemandThroughput": {"MaxWriteRequestUnits": 0}})
        ),
        invalid(
            "Requested MaxWriteRequestUnits for OnDemandThroughput for table is outside of valid range"
        )
    );
    // A GSI's caps, through the Update action.
    let updated = update(
        &db,
        json!({"GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"OnDemandThroughput": {"MaxReadRequestUnits": 3}}))}),
    );
    assert_eq!(
        updated["GlobalSecondaryIndexes"][0]["OnDemandThroughput"],
        json!({"MaxReadRequestUnits": 3})
    );
    assert_eq!(
        update_error(
            &db,
            json!({"GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"OnDemandThroughput": {"MaxReadRequestUnits": -7}}))})
        ),
        invalid(
            "Requested MaxReadRequestUnits for OnDemandThroughput for index is outside of valid range"
        )
    );
    // Only BillingMode may accompany it.
    assert_eq!(
        update_error(
            &db,
            json!({"OnDemandThroughput": {"MaxReadRequestUnits": 5}, "DeletionProtectionEnabled": true})
        ),
        invalid("DeletionProtection modification must be the only operation in the request")
    );
    // Switching to PROVISIONED drops the caps; with PROVISIONED they are refused.
    let updated = update(
        &db,
        json!({"BillingMode": "PROVISIONED", "ProvisionedThroughput": units(1, 1),
               "GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"ProvisionedThroughput": units(1, 1)}))}),
    );
    assert!(updated.get("OnDemandThroughput").is_none());
    assert!(updated["GlobalSecondaryIndexes"][0]
        .get("OnDemandThroughput")
        .is_none());
    assert_eq!(
        update_error(
            &db,
            json!({"OnDemandThroughput": {"MaxWriteRequestUnits": 5}})
        ),
        invalid("MaxWriteRequestUnits for OnDemandThroughput cannot be specified when the table BillingMode is PROVISIONED")
    );
    // A switch back with a cap in the same request.
    let updated = update(
        &db,
        json!({"BillingMode": "PAY_PER_REQUEST", "OnDemandThroughput": {"MaxWriteRequestUnits": 5}}),
    );
    assert_eq!(
        updated["OnDemandThroughput"],
        json!({"MaxWriteRequestUnits": 5})
    );
}

#[test]
fn capacity_settings_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), options()).unwrap();
        create(&db, true);
        update(&db, json!({"ProvisionedThroughput": units(9, 2)}));
        update(
            &db,
            json!({"GlobalSecondaryIndexUpdates": gsi_update("ByG", json!({"ProvisionedThroughput": units(8, 8)}))}),
        );
    }
    let db = Database::open(dir.path(), options()).unwrap();
    let table = describe(&db);
    assert_eq!(units_of(&table["ProvisionedThroughput"]), (9, 2));
    assert_eq!(table["ProvisionedThroughput"]["NumberOfDecreasesToday"], 1);
    assert!(table["ProvisionedThroughput"]["LastIncreaseDateTime"].is_f64());
    let gsi = &table["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"];
    assert_eq!(units_of(gsi), (8, 8));
    assert!(gsi["LastIncreaseDateTime"].is_f64());
    update(
        &db,
        json!({"BillingMode": "PAY_PER_REQUEST", "OnDemandThroughput": {"MaxReadRequestUnits": 4}}),
    );
    let switched = describe(&db)["BillingModeSummary"]["LastUpdateToPayPerRequestDateTime"].clone();
    drop(db);
    let db = Database::open(dir.path(), options()).unwrap();
    let table = describe(&db);
    assert_eq!(
        table["BillingModeSummary"]["BillingMode"],
        "PAY_PER_REQUEST"
    );
    assert_eq!(
        table["BillingModeSummary"]["LastUpdateToPayPerRequestDateTime"],
        switched
    );
    assert_eq!(
        table["OnDemandThroughput"],
        json!({"MaxReadRequestUnits": 4})
    );
    assert_eq!(units_of(&table["ProvisionedThroughput"]), (0, 0));
}
