//! Every operation of DynamoDB's 2026 API (SPEC-3 §6) is answered: implemented, or refused
//! with a ValidationException that names it (SPEC-3 §7); the legacy global tables operations
//! answer as AWS does in 2026 (SPEC-3 §2.6). A name DynamoDB does not have is still
//! UnknownOperationException.

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::{Database, Options, SUPPORTED_OPERATIONS};

/// botocore 1.44.8's DynamoDB operations (62) and DynamoDB Streams operations (4), SPEC-3 §6.
const API_2026: &[&str] = &[
    "CreateTable",
    "DescribeTable",
    "UpdateTable",
    "DeleteTable",
    "ListTables",
    "DescribeLimits",
    "DescribeEndpoints",
    "PutItem",
    "GetItem",
    "UpdateItem",
    "DeleteItem",
    "BatchGetItem",
    "BatchWriteItem",
    "Query",
    "Scan",
    "TransactGetItems",
    "TransactWriteItems",
    "ExecuteStatement",
    "BatchExecuteStatement",
    "ExecuteTransaction",
    "SearchVectors",
    "CreateBackup",
    "DescribeBackup",
    "DeleteBackup",
    "ListBackups",
    "RestoreTableFromBackup",
    "DescribeContinuousBackups",
    "UpdateContinuousBackups",
    "RestoreTableToPointInTime",
    "ExportTableToPointInTime",
    "DescribeExport",
    "ListExports",
    "ImportTable",
    "DescribeImport",
    "ListImports",
    "StartBulkPutItems",
    "DescribeBulkOperation",
    "ListBulkOperations",
    "CancelBulkOperation",
    "CreateGlobalTable",
    "DescribeGlobalTable",
    "UpdateGlobalTable",
    "ListGlobalTables",
    "DescribeGlobalTableSettings",
    "UpdateGlobalTableSettings",
    "DescribeTableReplicaAutoScaling",
    "UpdateTableReplicaAutoScaling",
    "DescribeContributorInsights",
    "UpdateContributorInsights",
    "ListContributorInsights",
    "EnableKinesisStreamingDestination",
    "DisableKinesisStreamingDestination",
    "DescribeKinesisStreamingDestination",
    "UpdateKinesisStreamingDestination",
    "PutResourcePolicy",
    "GetResourcePolicy",
    "DeleteResourcePolicy",
    "TagResource",
    "UntagResource",
    "ListTagsOfResource",
    "UpdateTimeToLive",
    "DescribeTimeToLive",
    "DescribeStream",
    "GetShardIterator",
    "GetRecords",
    "ListStreams",
];

fn open() -> Database {
    Database::open_in_memory(Options::default()).unwrap()
}

fn refused(db: &Database, operation: &str, body: Value) -> (ErrorCode, String) {
    let error = db
        .execute(operation, body)
        .expect_err("the operation must be refused");
    (error.code, error.message)
}

#[test]
fn every_operation_of_the_2026_api_is_known_and_a_misspelt_one_is_not() {
    assert_eq!(API_2026.len(), 66);
    let db = open();
    for operation in API_2026 {
        assert!(SUPPORTED_OPERATIONS.contains(operation), "{operation}");
        if let Err(error) = db.execute(operation, json!({})) {
            assert_ne!(
                error.code,
                ErrorCode::UnknownOperationException,
                "{operation}: {}",
                error.message
            );
        }
    }
    // The neighbouring case: names DynamoDB does not have.
    for misspelt in ["ListTable", "DescribeContributorInsight", "searchVectors"] {
        assert!(!SUPPORTED_OPERATIONS.contains(&misspelt));
        let (code, _) = refused(&db, misspelt, json!({}));
        assert_eq!(code, ErrorCode::UnknownOperationException, "{misspelt}");
    }
}

#[test]
fn an_operation_not_implemented_is_refused_naming_it_and_what_is_offered_instead() {
    let db = open();
    let (code, message) = refused(
        &db,
        "DescribeKinesisStreamingDestination",
        json!({"TableName": "Table"}),
    );
    assert_eq!(code, ErrorCode::ValidationException);
    assert!(
        message.starts_with("DescribeKinesisStreamingDestination is not offered by Shoal: "),
        "{message}"
    );
    let (_, message) = refused(&db, "EnableKinesisStreamingDestination", json!({}));
    assert!(message.contains("DynamoDB Streams"), "{message}");
    let (_, message) = refused(&db, "SearchVectors", json!({}));
    assert!(
        message.starts_with("SearchVectors is not offered by Shoal"),
        "{message}"
    );
    // A body that is not JSON is a SerializationException first, as for any operation.
    let error = db
        .execute_json_text("GetResourcePolicy", b"{not json")
        .unwrap_err();
    assert_eq!(
        error.code,
        ErrorCode::SerializationException,
        "{}",
        error.message
    );
}

#[test]
fn replica_auto_scaling_is_answered_not_refused_as_not_offered() {
    let db = open();
    for operation in [
        "DescribeTableReplicaAutoScaling",
        "UpdateTableReplicaAutoScaling",
    ] {
        let (code, message) = refused(&db, operation, json!({"TableName": "Missing"}));
        assert_eq!(code, ErrorCode::ResourceNotFoundException, "{operation}");
        assert_eq!(
            message,
            "Requested resource not found: Table: Missing not found"
        );
        let (code, message) = refused(&db, operation, json!({}));
        assert_eq!(code, ErrorCode::ValidationException, "{operation}");
        assert_eq!(
            message,
            "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null"
        );
    }
    // The neighbour: Kinesis destinations are still refused as not offered.
    let (_, message) = refused(
        &db,
        "DescribeKinesisStreamingDestination",
        json!({"TableName": "Missing"}),
    );
    assert!(message.contains("is not offered by Shoal"), "{message}");
}

#[test]
fn create_global_table_of_version_2017_is_refused_as_aws_refuses_it_after_its_member_checks() {
    let db = open();
    let (code, message) = refused(
        &db,
        "CreateGlobalTable",
        json!({"GlobalTableName": "Orders", "ReplicationGroup": [{"RegionName": "us-east-1"}]}),
    );
    assert_eq!(code, ErrorCode::ValidationException);
    assert_eq!(
        message,
        "One or more parameter values were invalid: DynamoDB global tables version 2017.11.29 is not supported. We recommend using DynamoDB global tables version 2019.11.21, instead of version 2017.11.29 (Legacy)."
    );
    let (code, message) = refused(&db, "CreateGlobalTable", json!({}));
    assert_eq!(code, ErrorCode::ValidationException);
    assert_eq!(
        message,
        "2 validation errors detected: Value null at 'globalTableName' failed to satisfy constraint: Member must not be null; Value null at 'replicationGroup' failed to satisfy constraint: Member must not be null"
    );
    let (_, message) = refused(
        &db,
        "CreateGlobalTable",
        json!({"GlobalTableName": "a b", "ReplicationGroup": []}),
    );
    assert_eq!(
        message,
        "1 validation error detected: Value 'a b' at 'globalTableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+"
    );
}

#[test]
fn no_name_is_a_legacy_global_table_not_even_a_regional_table_of_that_name() {
    let db = open();
    db.execute(
        "CreateTable",
        json!({"TableName": "Orders", "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}),
    )
    .unwrap();
    let not_found = "Global table with name: 'Orders' does not exist.";
    for operation in [
        "DescribeGlobalTable",
        "DescribeGlobalTableSettings",
        "UpdateGlobalTableSettings",
    ] {
        let (code, message) = refused(&db, operation, json!({"GlobalTableName": "Orders"}));
        assert_eq!(code, ErrorCode::GlobalTableNotFoundException, "{operation}");
        assert_eq!(message, not_found, "{operation}");
        let (code, message) = refused(&db, operation, json!({}));
        assert_eq!(code, ErrorCode::ValidationException, "{operation}");
        assert!(message.contains("at 'globalTableName'"), "{message}");
    }
    let replicas = json!([{"Create": {"RegionName": "eu-west-1"}}]);
    let (code, message) = refused(
        &db,
        "UpdateGlobalTable",
        json!({"GlobalTableName": "Orders", "ReplicaUpdates": replicas}),
    );
    assert_eq!(
        (code, message.as_str()),
        (ErrorCode::GlobalTableNotFoundException, not_found)
    );
    let (code, message) = refused(
        &db,
        "UpdateGlobalTable",
        json!({"GlobalTableName": "Orders", "ReplicaUpdates": []}),
    );
    assert_eq!(code, ErrorCode::ValidationException);
    assert_eq!(message, "One or more parameter values were invalid");
    // The table itself is untouched.
    assert!(db
        .execute("DescribeTable", json!({"TableName": "Orders"}))
        .is_ok());
}

#[test]
fn list_global_tables_lists_none_and_checks_its_limit() {
    let db = open();
    let listed = db.execute("ListGlobalTables", json!({})).unwrap();
    assert_eq!(listed, json!({"GlobalTables": []}));
    let listed = db
        .execute(
            "ListGlobalTables",
            json!({"RegionName": "nowhere-1", "Limit": 1}),
        )
        .unwrap();
    assert_eq!(listed, json!({"GlobalTables": []}));
    let (code, message) = refused(&db, "ListGlobalTables", json!({"Limit": 0}));
    assert_eq!(code, ErrorCode::ValidationException);
    assert_eq!(
        message,
        "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1"
    );
}
