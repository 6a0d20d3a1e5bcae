//! Resource-based policies (SPEC-3 §5): PutResourcePolicy, GetResourcePolicy,
//! DeleteResourcePolicy and CreateTable's `ResourcePolicy`: revisions and
//! `ExpectedRevisionId`, a slot per table and per stream, ARN checks, texts, durability across
//! a reopen, and policies going away with their table.

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::Database;

use crate::tags::options;

const ARN: &str = "arn:aws:dynamodb:us-east-1:000000000000:table/Guarded";

fn create_request() -> Value {
    json!({
        "TableName": "Guarded",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST",
        "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"}
    })
}

fn policy(action: &str) -> String {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "reader",
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::111122223333:role/reader"},
            "Action": action,
            "Resource": "*"
        }]
    })
    .to_string()
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

fn revision(answer: &Value) -> u64 {
    answer["RevisionId"].as_str().unwrap().parse().unwrap()
}

#[test]
fn a_policy_is_put_read_replaced_and_deleted_with_growing_revisions() {
    let db = Database::open_in_memory(options()).unwrap();
    call(&db, "CreateTable", create_request());
    assert_eq!(
        error(&db, "GetResourcePolicy", json!({"ResourceArn": ARN})),
        (
            ErrorCode::PolicyNotFoundException,
            format!("Resource-based policy not found for the provided ResourceArn: {ARN}")
        )
    );
    let first = call(
        &db,
        "PutResourcePolicy",
        json!({"ResourceArn": ARN, "Policy": policy("dynamodb:GetItem")}),
    );
    let got = call(&db, "GetResourcePolicy", json!({"ResourceArn": ARN}));
    assert_eq!(got["RevisionId"], first["RevisionId"]);
    assert_eq!(
        serde_json::from_str::<Value>(got["Policy"].as_str().unwrap()).unwrap(),
        serde_json::from_str::<Value>(&policy("dynamodb:GetItem")).unwrap()
    );
    // The same document again, spaced differently, changes nothing.
    let again = call(
        &db,
        "PutResourcePolicy",
        json!({"ResourceArn": ARN, "Policy": policy("dynamodb:GetItem").replace(',', ", ")}),
    );
    assert_eq!(again["RevisionId"], first["RevisionId"]);
    // A different one gets a larger revision, if the expected one is current.
    let stale = error(
        &db,
        "PutResourcePolicy",
        json!({"ResourceArn": ARN, "Policy": policy("dynamodb:Query"), "ExpectedRevisionId": "1"}),
    );
    assert_eq!(
        stale,
        (
            ErrorCode::PolicyNotFoundException,
            format!(
                "Resource-based policy not found for the provided ResourceArn: Requested update for policy with revision id 1, but the policy associated to target table Guarded has revision id {}.",
                revision(&first)
            )
        )
    );
    let none_expected = error(
        &db,
        "PutResourcePolicy",
        json!({"ResourceArn": ARN, "Policy": policy("dynamodb:Query"), "ExpectedRevisionId": "NO_POLICY"}),
    );
    assert_eq!(
        none_expected.1,
        format!(
            "Resource-based policy not found for the provided ResourceArn: Requested policy update expecting none to be present for table Guarded, but a policy exists with revision id {}.",
            revision(&first)
        )
    );
    let second = call(
        &db,
        "PutResourcePolicy",
        json!({"ResourceArn": ARN, "Policy": policy("dynamodb:Query"), "ExpectedRevisionId": first["RevisionId"]}),
    );
    assert!(revision(&second) > revision(&first));

    let deleted = call(&db, "DeleteResourcePolicy", json!({"ResourceArn": ARN}));
    assert_eq!(deleted["RevisionId"], second["RevisionId"]);
    // Deleting again is a success naming no revision.
    assert_eq!(
        call(&db, "DeleteResourcePolicy", json!({"ResourceArn": ARN})),
        json!({})
    );
    // NO_POLICY: only when there is none, which is now.
    call(
        &db,
        "PutResourcePolicy",
        json!({"ResourceArn": ARN, "Policy": policy("dynamodb:Scan"), "ExpectedRevisionId": "NO_POLICY"}),
    );
}

#[test]
fn a_stream_has_a_slot_of_its_own_and_an_index_arn_is_refused() {
    let db = Database::open_in_memory(options()).unwrap();
    let created = call(&db, "CreateTable", create_request());
    let stream_arn = created["TableDescription"]["LatestStreamArn"]
        .as_str()
        .unwrap()
        .to_string();
    call(
        &db,
        "PutResourcePolicy",
        json!({"ResourceArn": stream_arn, "Policy": policy("dynamodb:GetRecords")}),
    );
    // The table's slot is still empty.
    assert_eq!(
        error(&db, "GetResourcePolicy", json!({"ResourceArn": ARN})).0,
        ErrorCode::PolicyNotFoundException
    );
    assert!(
        call(&db, "GetResourcePolicy", json!({"ResourceArn": stream_arn}))["Policy"]
            .as_str()
            .unwrap()
            .contains("dynamodb:GetRecords")
    );
    let index_arn = format!("{ARN}/index/ByX");
    assert_eq!(
        error(&db, "GetResourcePolicy", json!({"ResourceArn": index_arn})),
        (
            ErrorCode::ValidationException,
            format!("One or more parameter values were invalid: Invalid resource arn provided, only table or stream is accepted. Provided resource arn: {index_arn}")
        )
    );
    let other_partition = "arn:aws-cn:dynamodb:cn-north-1:000000000000:table/Guarded";
    assert_eq!(
        error(
            &db,
            "GetResourcePolicy",
            json!({"ResourceArn": other_partition})
        )
        .1,
        format!(
            "One or more parameter values were invalid: Invalid resource Arn: {other_partition}"
        )
    );
    let missing = "arn:aws:dynamodb:us-east-1:000000000000:table/Missing";
    for operation in ["GetResourcePolicy", "DeleteResourcePolicy"] {
        assert_eq!(
            error(&db, operation, json!({"ResourceArn": missing})),
            (
                ErrorCode::ResourceNotFoundException,
                "Requested resource not found: Table: Missing not found".to_string()
            )
        );
    }
}

#[test]
fn bad_requests_are_refused_before_anything_is_stored() {
    let db = Database::open_in_memory(options()).unwrap();
    call(&db, "CreateTable", create_request());
    assert_eq!(
        error(&db, "PutResourcePolicy", json!({"ResourceArn": ARN})),
        (
            ErrorCode::ValidationException,
            "1 validation error detected: Value null at 'policy' failed to satisfy constraint: Member must not be null".to_string()
        )
    );
    assert_eq!(
        error(
            &db,
            "PutResourcePolicy",
            json!({"ResourceArn": ARN, "Policy": "{\"Statement\": 3"})
        )
        .1,
        "One or more parameter values were invalid: Invalid policy document: This policy contains invalid Json"
    );
    let big = format!("{}{}", policy("dynamodb:GetItem"), " ".repeat(20_480));
    assert_eq!(
        error(
            &db,
            "PutResourcePolicy",
            json!({"ResourceArn": ARN, "Policy": big})
        )
        .1,
        "One or more parameter values were invalid: Maximum policy size of 20480 bytes exceeded"
    );
    assert_eq!(
        error(&db, "GetResourcePolicy", json!({"ResourceArn": ARN})).0,
        ErrorCode::PolicyNotFoundException,
        "nothing was stored"
    );
}

#[test]
fn create_table_stores_its_policy_which_survives_a_reopen_and_goes_with_the_table() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), options()).unwrap();
        let mut request = create_request();
        request["ResourcePolicy"] = json!(policy("dynamodb:PutItem"));
        call(&db, "CreateTable", request);
    }
    let db = Database::open(dir.path(), options()).unwrap();
    let got = call(&db, "GetResourcePolicy", json!({"ResourceArn": ARN}));
    assert!(got["Policy"].as_str().unwrap().contains("dynamodb:PutItem"));
    call(&db, "DeleteTable", json!({"TableName": "Guarded"}));
    call(&db, "CreateTable", create_request());
    assert_eq!(
        error(&db, "GetResourcePolicy", json!({"ResourceArn": ARN})).0,
        ErrorCode::PolicyNotFoundException,
        "a new table of the same name starts without the old one's policy"
    );
    // A bad policy on CreateTable creates nothing.
    let mut request = create_request();
    request["TableName"] = json!("Refused");
    request["ResourcePolicy"] = json!("not json");
    assert_eq!(
        error(&db, "CreateTable", request).0,
        ErrorCode::ValidationException
    );
    assert_eq!(
        call(&db, "ListTables", json!({}))["TableNames"],
        json!(["Guarded"])
    );
}
