//! Table settings (SPEC-2 §5, §6.2): DeletionProtectionEnabled, TableClass, UpdateTable's
//! general rules, DescribeLimits, DescribeEndpoints and the continuous backups operations:
//! every rule and text, and durability across a reopen.

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::{Database, Durability, Options, StorageOptions, SUPPORTED_OPERATIONS};

const PROTECTED_MESSAGE: &str = "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.";
const INVALID_CLASS_MESSAGE: &str = "Invalid table-class parameter provided. Please try again with a valid table-class value: [STANDARD, STANDARD_INFREQUENT_ACCESS].";

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

fn create_request(name: &str) -> Value {
    json!({
        "TableName": name,
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST"
    })
}

fn create_with(db: &Database, member: &str, value: Value) -> Value {
    let mut request = create_request("Tbl");
    request[member] = value;
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

#[test]
fn deletion_protection_refuses_delete_table_until_turned_off() {
    let db = open();
    let created = create_with(&db, "DeletionProtectionEnabled", json!(true));
    assert_eq!(created["DeletionProtectionEnabled"], json!(true));
    assert_eq!(describe(&db)["DeletionProtectionEnabled"], json!(true));
    assert_eq!(
        error(&db, "DeleteTable", json!({"TableName": "Tbl"})),
        validation(PROTECTED_MESSAGE)
    );
    assert_eq!(
        call(&db, "ListTables", json!({})),
        json!({"TableNames": ["Tbl"]})
    );

    let updated = update(&db, json!({"DeletionProtectionEnabled": false}));
    assert_eq!(updated["DeletionProtectionEnabled"], json!(false));
    assert_eq!(updated["TableStatus"], json!("ACTIVE"));
    assert_eq!(describe(&db)["DeletionProtectionEnabled"], json!(false));
    // Turning it on again, then off again with the same value twice: both accepted.
    update(&db, json!({"DeletionProtectionEnabled": true}));
    update(&db, json!({"DeletionProtectionEnabled": true}));
    assert_eq!(
        error(&db, "DeleteTable", json!({"TableName": "Tbl"})),
        validation(PROTECTED_MESSAGE)
    );
    update(&db, json!({"DeletionProtectionEnabled": false}));
    let deleted = call(&db, "DeleteTable", json!({"TableName": "Tbl"}));
    assert_eq!(
        deleted["TableDescription"]["TableStatus"],
        json!("DELETING")
    );
}

#[test]
fn every_description_reports_deletion_protection_false_by_default() {
    let db = open();
    let created = call(&db, "CreateTable", create_request("Tbl"))["TableDescription"].clone();
    assert_eq!(created["DeletionProtectionEnabled"], json!(false));
    assert_eq!(describe(&db)["DeletionProtectionEnabled"], json!(false));
    // No class named: no TableClassSummary (docs/COMPATIBILITY.md).
    assert!(created.get("TableClassSummary").is_none());
    assert!(describe(&db).get("TableClassSummary").is_none());
    let updated = update(
        &db,
        json!({"StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"}}),
    );
    assert_eq!(updated["DeletionProtectionEnabled"], json!(false));
}

#[test]
fn table_class_is_set_reported_and_checked() {
    let db = open();
    let created = create_with(&db, "TableClass", json!("STANDARD_INFREQUENT_ACCESS"));
    assert_eq!(
        created["TableClassSummary"],
        json!({"TableClass": "STANDARD_INFREQUENT_ACCESS"})
    );
    let mut bad = create_request("Other");
    bad["TableClass"] = json!("GLACIER");
    assert_eq!(
        error(&db, "CreateTable", bad),
        validation(INVALID_CLASS_MESSAGE)
    );
    assert_eq!(
        update_error(&db, json!({"TableClass": "GLACIER"})),
        validation(INVALID_CLASS_MESSAGE)
    );

    let updated = update(&db, json!({"TableClass": "STANDARD"}));
    assert_eq!(updated["TableStatus"], json!("UPDATING"));
    let summary = describe(&db)["TableClassSummary"].clone();
    assert_eq!(summary["TableClass"], json!("STANDARD"));
    let changed_at = summary["LastUpdateDateTime"].as_f64().unwrap();
    let created_at = describe(&db)["CreationDateTime"].as_f64().unwrap();
    assert!(changed_at >= created_at, "{changed_at} < {created_at}");

    // A table created without a class gets a summary once one is named.
    let db = open();
    call(&db, "CreateTable", create_request("Tbl"));
    update(&db, json!({"TableClass": "STANDARD"}));
    assert_eq!(
        describe(&db)["TableClassSummary"],
        json!({"TableClass": "STANDARD"})
    );
    update(&db, json!({"TableClass": "STANDARD_INFREQUENT_ACCESS"}));
    let summary = describe(&db)["TableClassSummary"].clone();
    assert_eq!(summary["TableClass"], json!("STANDARD_INFREQUENT_ACCESS"));
    assert!(summary["LastUpdateDateTime"].is_f64());
}

#[test]
fn some_changes_must_be_the_only_operation_in_the_request() {
    let db = open();
    call(&db, "CreateTable", create_request("Tbl"));
    let stream = json!({"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"});
    let invalid = |text: &str| {
        validation(&format!(
            "One or more parameter values were invalid: {text}"
        ))
    };
    assert_eq!(
        update_error(
            &db,
            json!({"DeletionProtectionEnabled": true, "StreamSpecification": stream})
        ),
        invalid("DeletionProtection modification must be the only operation in the request")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"DeletionProtectionEnabled": true, "TableClass": "STANDARD"})
        ),
        invalid("DeletionProtection modification must be the only operation in the request")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"TableClass": "STANDARD", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "Nope"}}]})
        ),
        invalid("TableClass modification must be the only operation in the request")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"SSESpecification": {"Enabled": true}, "StreamSpecification": stream})
        ),
        invalid("Server-Side Encryption modification must be the only operation in the request")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"OnDemandThroughput": {"MaxReadRequestUnits": 5}, "StreamSpecification": stream})
        ),
        invalid(
            "OnDemandThroughput can only be combined with BillingMode in an UpdateTable request"
        )
    );
    // Nothing changed.
    let table = describe(&db);
    assert_eq!(table["DeletionProtectionEnabled"], json!(false));
    assert!(table.get("StreamSpecification").is_none());
    assert!(table.get("TableClassSummary").is_none());

    // Re-sending the current BillingMode is not an operation; AttributeDefinitions is not.
    let updated = update(
        &db,
        json!({"DeletionProtectionEnabled": true, "BillingMode": "PAY_PER_REQUEST",
               "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}),
    );
    assert_eq!(updated["DeletionProtectionEnabled"], json!(true));
}

#[test]
fn the_request_is_checked_before_the_table_is_looked_up() {
    let db = open();
    // SPEC §7: member constraints and semantic validation come before the table lookup, so
    // a bad request on a missing table gets its ValidationException.
    for request in [
        json!({"TableName": "Missing"}),
        json!({"TableName": "Missing", "GlobalSecondaryIndexUpdates": []}),
        json!({"TableName": "Missing", "StreamSpecification": {"StreamViewType": "BAD"}}),
        json!({"TableName": "Missing", "DeletionProtectionEnabled": true, "TableClass": "X"}),
        json!({"TableName": "Missing", "AttributeDefinitions": [{"AttributeName": "a", "AttributeType": "Z"}]}),
    ] {
        let (code, message) = error(&db, "UpdateTable", request.clone());
        assert_eq!(code, ErrorCode::ValidationException, "{request}: {message}");
    }
    // A request that only the table can judge finds the table missing.
    let not_found = (
        ErrorCode::ResourceNotFoundException,
        "Requested resource not found: Table: Missing not found".to_string(),
    );
    for request in [
        json!({"TableName": "Missing", "BillingMode": "PROVISIONED"}),
        json!({"TableName": "Missing", "DeletionProtectionEnabled": true}),
    ] {
        assert_eq!(
            error(&db, "UpdateTable", request.clone()),
            not_found,
            "{request}"
        );
    }
    // The name itself is checked first: without one there is nothing to look up.
    assert_eq!(
        error(&db, "UpdateTable", json!({})).1,
        "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null"
    );
}

#[test]
fn nothing_to_change_names_the_members_the_request_lacks() {
    let db = open();
    call(&db, "CreateTable", create_request("Tbl"));
    assert_eq!(
        update_error(&db, json!({})),
        validation("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates, SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, MultiRegionConsistency, DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required")
    );
    assert_eq!(
        update_error(
            &db,
            json!({"GlobalSecondaryIndexUpdates": [], "SSESpecification": {}, "WarmThroughput": {},
                   "AttributeDefinitions": []})
        ),
        validation("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, MultiRegionConsistency, DeletionProtectionEnabled, OnDemandThroughput or TableClass is required")
    );
}

#[test]
fn the_current_billing_mode_alone_is_accepted() {
    let db = open();
    call(&db, "CreateTable", create_request("Tbl"));
    let updated = update(&db, json!({"BillingMode": "PAY_PER_REQUEST"}));
    assert_eq!(updated["TableName"], json!("Tbl"));
    assert_eq!(updated["TableStatus"], json!("ACTIVE"));
    assert_eq!(
        updated["BillingModeSummary"]["BillingMode"],
        json!("PAY_PER_REQUEST")
    );
    // Another mode is a switch (tests/control_billing.rs); a value outside the enum is a
    // constraint error.
    assert_eq!(
        update_error(&db, json!({"BillingMode": "FREE"})),
        validation("1 validation error detected: Value 'FREE' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PAY_PER_REQUEST, PROVISIONED]")
    );

    let db = open();
    let mut provisioned = create_request("Tbl");
    provisioned["BillingMode"] = json!("PROVISIONED");
    provisioned["ProvisionedThroughput"] = json!({"ReadCapacityUnits": 5, "WriteCapacityUnits": 5});
    call(&db, "CreateTable", provisioned);
    let updated = update(&db, json!({"BillingMode": "PROVISIONED"}));
    assert_eq!(
        updated["ProvisionedThroughput"]["ReadCapacityUnits"],
        json!(5)
    );
}

#[test]
fn settings_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), options()).unwrap();
        let mut request = create_request("Tbl");
        request["DeletionProtectionEnabled"] = json!(true);
        request["Tags"] = json!([{"Key": "k", "Value": "v"}]);
        call(&db, "CreateTable", request);
        update(&db, json!({"TableClass": "STANDARD_INFREQUENT_ACCESS"}));
    }
    let db = Database::open(dir.path(), options()).unwrap();
    let table = describe(&db);
    assert_eq!(table["DeletionProtectionEnabled"], json!(true));
    assert_eq!(
        table["TableClassSummary"]["TableClass"],
        json!("STANDARD_INFREQUENT_ACCESS")
    );
    assert_eq!(
        error(&db, "DeleteTable", json!({"TableName": "Tbl"})),
        validation(PROTECTED_MESSAGE)
    );
    update(&db, json!({"DeletionProtectionEnabled": false}));
    drop(db);
    let db = Database::open(dir.path(), options()).unwrap();
    assert_eq!(describe(&db)["DeletionProtectionEnabled"], json!(false));
    call(&db, "DeleteTable", json!({"TableName": "Tbl"}));
}

#[test]
fn describe_limits_and_endpoints() {
    let db = open();
    assert_eq!(
        call(&db, "DescribeLimits", json!({})),
        json!({
            "AccountMaxReadCapacityUnits": 80000,
            "AccountMaxWriteCapacityUnits": 80000,
            "TableMaxReadCapacityUnits": 40000,
            "TableMaxWriteCapacityUnits": 40000
        })
    );
    assert_eq!(
        call(&db, "DescribeEndpoints", json!({})),
        json!({"Endpoints": [{"Address": "localhost:8000", "CachePeriodInMinutes": 1440}]})
    );
    db.set_endpoint_address("127.0.0.1:4567");
    assert_eq!(
        call(&db, "DescribeEndpoints", json!({})),
        json!({"Endpoints": [{"Address": "127.0.0.1:4567", "CachePeriodInMinutes": 1440}]})
    );
}

#[test]
fn continuous_backups_report_and_switch_point_in_time_recovery() {
    let db = open();
    call(&db, "CreateTable", create_request("Tbl"));
    // On-demand backups work for every table; point-in-time recovery is off until enabled.
    let disabled = json!({"ContinuousBackupsDescription": {
        "ContinuousBackupsStatus": "ENABLED",
        "PointInTimeRecoveryDescription": {"PointInTimeRecoveryStatus": "DISABLED"}
    }});
    assert_eq!(
        call(
            &db,
            "DescribeContinuousBackups",
            json!({"TableName": "Tbl"})
        ),
        disabled
    );
    // A table ARN names the table too.
    assert_eq!(
        call(
            &db,
            "DescribeContinuousBackups",
            json!({"TableName": "arn:aws:dynamodb:ddblocal:000000000000:table/Tbl"})
        ),
        disabled
    );
    let not_found = (
        ErrorCode::TableNotFoundException,
        "Table not found: Missing".to_string(),
    );
    assert_eq!(
        error(
            &db,
            "DescribeContinuousBackups",
            json!({"TableName": "Missing"})
        ),
        not_found
    );
    assert_eq!(
        error(&db, "DescribeContinuousBackups", json!({})).0,
        ErrorCode::ValidationException
    );

    // Turning point-in-time recovery off is accepted; it is off.
    let off = json!({"TableName": "Tbl",
                     "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": false}});
    assert_eq!(call(&db, "UpdateContinuousBackups", off), disabled);
    let before = now_seconds();
    let on = call(
        &db,
        "UpdateContinuousBackups",
        json!({"TableName": "Tbl",
               "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true}}),
    );
    let pitr = &on["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"];
    assert_eq!(pitr["PointInTimeRecoveryStatus"], "ENABLED", "{on}");
    assert_eq!(pitr["RecoveryPeriodInDays"], 35, "{on}");
    let earliest = pitr["EarliestRestorableDateTime"].as_f64().unwrap();
    let latest = pitr["LatestRestorableDateTime"].as_f64().unwrap();
    assert!(earliest >= before - 1.0 && earliest <= latest, "{on}");
    let described = call(
        &db,
        "DescribeContinuousBackups",
        json!({"TableName": "Tbl"}),
    );
    assert_eq!(
        described["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
            ["PointInTimeRecoveryStatus"],
        "ENABLED"
    );
    // The period changes; the restorable start does not move back.
    let shorter = call(
        &db,
        "UpdateContinuousBackups",
        json!({"TableName": "Tbl", "PointInTimeRecoverySpecification":
               {"PointInTimeRecoveryEnabled": true, "RecoveryPeriodInDays": 7}}),
    );
    let pitr = &shorter["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"];
    assert_eq!(pitr["RecoveryPeriodInDays"], 7, "{shorter}");
    assert!(pitr["EarliestRestorableDateTime"].as_f64().unwrap() >= earliest);
    // And off again, for good: the description is the fresh table's.
    let off_again = json!({"TableName": "Tbl",
                     "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": false}});
    assert_eq!(call(&db, "UpdateContinuousBackups", off_again), disabled);
    assert_eq!(
        call(
            &db,
            "DescribeContinuousBackups",
            json!({"TableName": "Tbl"})
        ),
        disabled
    );
    assert_eq!(
        error(
            &db,
            "UpdateContinuousBackups",
            json!({"TableName": "Tbl", "PointInTimeRecoverySpecification":
                   {"PointInTimeRecoveryEnabled": false, "RecoveryPeriodInDays": 7}})
        ),
        validation("Invalid Request: Cannot specify RecoveryPeriodInDays when disabling point-in-time recovery.")
    );
    assert_eq!(
        error(&db, "UpdateContinuousBackups", json!({"TableName": "Tbl"})),
        validation("1 validation error detected: Value null at 'pointInTimeRecoverySpecification' failed to satisfy constraint: Member must not be null")
    );
    assert_eq!(
        error(
            &db,
            "UpdateContinuousBackups",
            json!({"TableName": "Tbl", "PointInTimeRecoverySpecification": {"RecoveryPeriodInDays": 36}})
        ),
        validation("2 validation errors detected: Value null at 'pointInTimeRecoverySpecification.pointInTimeRecoveryEnabled' failed to satisfy constraint: Member must not be null; Value '36' at 'pointInTimeRecoverySpecification.recoveryPeriodInDays' failed to satisfy constraint: Member must have value less than or equal to 35")
    );
    assert_eq!(
        error(
            &db,
            "UpdateContinuousBackups",
            json!({"TableName": "Missing",
                   "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": false}})
        ),
        not_found
    );
}

#[test]
fn the_new_operations_are_dispatched() {
    for operation in [
        "TagResource",
        "UntagResource",
        "ListTagsOfResource",
        "DescribeLimits",
        "DescribeEndpoints",
        "DescribeContinuousBackups",
        "UpdateContinuousBackups",
        "RestoreTableToPointInTime",
    ] {
        assert!(SUPPORTED_OPERATIONS.contains(&operation), "{operation}");
    }
}

fn now_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// DisassociationProtectionEnabled (SPEC-3 §2.1) is not modelled: refused by name, alone or
/// beside another change, never taken as a request that asks for nothing or silently
/// dropped. The neighbours keep their answers: a member Shoal does not know still leaves a
/// request that asks for nothing, and the change beside it is not made.
#[test]
fn disassociation_protection_is_refused_by_name() {
    let db = open();
    call(&db, "CreateTable", create_request("Tbl"));
    let refusal =
        validation(shoal_tables::control::update_table::DISASSOCIATION_PROTECTION_MESSAGE);
    assert!(refusal.1.contains("DisassociationProtectionEnabled"));
    assert_eq!(
        update_error(&db, json!({"DisassociationProtectionEnabled": false})),
        refusal
    );
    assert_eq!(
        update_error(
            &db,
            json!({"DisassociationProtectionEnabled": true, "DeletionProtectionEnabled": true})
        ),
        refusal
    );
    assert_eq!(describe(&db)["DeletionProtectionEnabled"], false);
    let (code, message) = update_error(&db, json!({"Bogus": true}));
    assert_eq!(code, ErrorCode::ValidationException);
    assert!(message.starts_with("At least one of "), "{message}");
    // Null is no value, as for every other member.
    let (_, message) = update_error(&db, json!({"DisassociationProtectionEnabled": null}));
    assert!(message.starts_with("At least one of "), "{message}");
    assert_eq!(
        update(&db, json!({"DeletionProtectionEnabled": true}))["DeletionProtectionEnabled"],
        true
    );
}
