//! UpdateTable validation (SPEC §2.3): every rule's error code and exact text, and the
//! AttributeDefinitions merging rules.

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::control::update_table::{
    INDEX_EXISTS_MESSAGE, NOTHING_TO_UPDATE_MESSAGE, ONE_ACTION_MESSAGE, ONE_INDEX_CHANGE_MESSAGE,
};
use shoal_tables::{Database, Durability, Options, StorageOptions};

fn open() -> Database {
    Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            wal_segment_size_bytes: 1 << 20,
            memtable_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .unwrap()
}

/// Table `Tbl`: key id (S), LSI-free; GSI `ByG` on g (S); on-demand.
fn create(db: &Database) {
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [
                {"AttributeName": "id", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "GlobalSecondaryIndexes": [{
                "IndexName": "ByG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
}

fn create_action(name: &str, hash: &str) -> Value {
    json!({"Create": {
        "IndexName": name,
        "KeySchema": [{"AttributeName": hash, "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"}
    }})
}

fn update(db: &Database, request: Value) -> Result<Value, (ErrorCode, String)> {
    db.execute("UpdateTable", request)
        .map_err(|e| (e.code, e.message))
}

fn error(db: &Database, request: Value) -> (ErrorCode, String) {
    update(db, request).expect_err("the request must fail")
}

fn validation(message: &str) -> (ErrorCode, String) {
    (ErrorCode::ValidationException, message.to_string())
}

fn describe(db: &Database) -> Value {
    db.execute("DescribeTable", json!({"TableName": "Tbl"}))
        .unwrap()
}

#[test]
fn an_empty_update_is_rejected() {
    let db = open();
    create(&db);
    assert_eq!(
        error(&db, json!({"TableName": "Tbl"})),
        validation(NOTHING_TO_UPDATE_MESSAGE)
    );
    // A member that is there but asks for nothing is dropped from the list (SPEC-2 §5.1).
    assert_eq!(
        error(
            &db,
            json!({"TableName": "Tbl", "GlobalSecondaryIndexUpdates": []})
        ),
        validation("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, MultiRegionConsistency, DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required")
    );
    assert_eq!(
        NOTHING_TO_UPDATE_MESSAGE,
        "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates, SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, MultiRegionConsistency, DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required"
    );
}

#[test]
fn only_one_index_change_per_call() {
    let db = open();
    create(&db);
    let defs = json!([{"AttributeName": "a", "AttributeType": "S"},
                      {"AttributeName": "b", "AttributeType": "S"}]);
    for updates in [
        json!([create_action("ByA", "a"), create_action("ByB", "b")]),
        json!([create_action("ByA", "a"), {"Delete": {"IndexName": "ByG"}}]),
        json!([{"Delete": {"IndexName": "ByG"}}, {"Delete": {"IndexName": "ByG"}}]),
    ] {
        let request = json!({"TableName": "Tbl", "AttributeDefinitions": defs,
                             "GlobalSecondaryIndexUpdates": updates});
        assert_eq!(
            error(&db, request),
            (
                ErrorCode::LimitExceededException,
                "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table".to_string()
            )
        );
    }
    assert_eq!(
        ONE_INDEX_CHANGE_MESSAGE,
        "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table"
    );
    // Nothing happened.
    assert_eq!(
        describe(&db)["Table"]["GlobalSecondaryIndexes"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn each_update_holds_exactly_one_action() {
    let db = open();
    create(&db);
    let both =
        json!({"Create": create_action("ByA", "a")["Create"], "Delete": {"IndexName": "ByG"}});
    for member in [json!({}), both] {
        let request = json!({"TableName": "Tbl", "GlobalSecondaryIndexUpdates": [member]});
        assert_eq!(error(&db, request), validation(ONE_ACTION_MESSAGE));
    }
}

#[test]
fn creating_an_existing_index_name_is_rejected() {
    let db = open();
    create(&db);
    let request = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "a", "AttributeType": "S"}],
        "GlobalSecondaryIndexUpdates": [create_action("ByG", "a")]
    });
    assert_eq!(error(&db, request), validation(INDEX_EXISTS_MESSAGE));
    assert_eq!(
        INDEX_EXISTS_MESSAGE,
        "Attempting to create an index which already exists"
    );
}

#[test]
fn deleting_a_missing_index_or_table_is_resource_not_found() {
    let db = open();
    create(&db);
    let delete = |table: &str, index: &str| json!({"TableName": table, "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": index}}]});
    assert_eq!(
        error(&db, delete("Tbl", "Nope")),
        (
            ErrorCode::ResourceNotFoundException,
            "Requested resource not found: Index: Nope not found".to_string()
        )
    );
    assert_eq!(
        error(&db, delete("Missing", "ByG")),
        (
            ErrorCode::ResourceNotFoundException,
            "Requested resource not found: Table: Missing not found".to_string()
        )
    );
}

#[test]
fn attribute_definitions_merge_and_may_not_redefine() {
    let db = open();
    create(&db);
    // Redefining the table key's type.
    let request = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "N"},
                                 {"AttributeName": "a", "AttributeType": "S"}],
        "GlobalSecondaryIndexUpdates": [create_action("ByA", "a")]
    });
    assert_eq!(
        error(&db, request),
        validation(
            "One or more parameter values were invalid: Attributes cannot be redefined. Please check that your attribute has the same type as previously defined. Existing schema: [AttributeDefinition(attributeName=id, attributeType=S)] New schema: [AttributeDefinition(attributeName=id, attributeType=N)]"
        )
    );
    // A key attribute without a definition.
    let request = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "other", "AttributeType": "S"}],
        "GlobalSecondaryIndexUpdates": [create_action("ByA", "a")]
    });
    assert_eq!(
        error(&db, request),
        validation(
            "One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [a], AttributeDefinitions: [id]"
        )
    );
    // Unused extra definitions are ignored; an existing attribute (g) may be reused
    // without redefining it; the stored definitions are exactly the keys'.
    let request = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "unused", "AttributeType": "B"},
                                 {"AttributeName": "r", "AttributeType": "N"}],
        "GlobalSecondaryIndexUpdates": [{"Create": {
            "IndexName": "ByGR",
            "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                          {"AttributeName": "r", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"}
        }}]
    });
    let response = update(&db, request).unwrap();
    let description = &response["TableDescription"];
    assert_eq!(description["TableStatus"], "UPDATING");
    assert_eq!(
        description["AttributeDefinitions"],
        json!([{"AttributeName": "id", "AttributeType": "S"},
               {"AttributeName": "g", "AttributeType": "S"},
               {"AttributeName": "r", "AttributeType": "N"}])
    );
    // Deleting the index frees r: it may come back with another type.
    let delete = json!({"TableName": "Tbl", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "ByGR"}}]});
    update(&db, delete).unwrap();
    assert_eq!(
        describe(&db)["Table"]["AttributeDefinitions"],
        json!([{"AttributeName": "id", "AttributeType": "S"},
               {"AttributeName": "g", "AttributeType": "S"}])
    );
    let request = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "r", "AttributeType": "S"}],
        "GlobalSecondaryIndexUpdates": [create_action("ByR", "r")]
    });
    update(&db, request).unwrap();
}

#[test]
fn index_rules_are_createtable_rules_with_update_paths() {
    let db = open();
    create(&db);
    let with = |action: Value| {
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [{"AttributeName": "a", "AttributeType": "S"}],
            "GlobalSecondaryIndexUpdates": [{"Create": action}]
        })
    };
    assert_eq!(
        error(
            &db,
            with(json!({"IndexName": "ab",
                        "KeySchema": [{"AttributeName": "a", "KeyType": "HASH"}],
                        "Projection": {"ProjectionType": "ALL"}}))
        ),
        validation(
            "1 validation error detected: Value 'ab' at 'globalSecondaryIndexUpdates.1.member.create.indexName' failed to satisfy constraint: Member must have length greater than or equal to 3"
        )
    );
    assert_eq!(
        error(
            &db,
            with(json!({"IndexName": "ByA",
                        "KeySchema": [{"AttributeName": "a", "KeyType": "BAD"}],
                        "Projection": {"ProjectionType": "ALL"}}))
        ),
        validation(
            "1 validation error detected: Value 'BAD' at 'globalSecondaryIndexUpdates.1.member.create.keySchema.1.member.keyType' failed to satisfy constraint: Member must satisfy enum value set: [HASH, RANGE]"
        )
    );
    assert_eq!(
        error(
            &db,
            with(json!({"IndexName": "ByA",
                        "KeySchema": [{"AttributeName": "a", "KeyType": "HASH"}],
                        "Projection": {}}))
        ),
        validation("One or more parameter values were invalid: Unknown ProjectionType: null")
    );
    assert_eq!(
        error(
            &db,
            with(json!({"IndexName": "ByA",
                        "KeySchema": [{"AttributeName": "a", "KeyType": "HASH"}],
                        "Projection": {"ProjectionType": "ALL"},
                        "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}}))
        ),
        validation(
            "One or more parameter values were invalid: ProvisionedThroughput should not be specified for index: ByA when BillingMode is PAY_PER_REQUEST"
        )
    );
    assert_eq!(
        error(
            &db,
            with(json!({"IndexName": "ByA",
                        "KeySchema": [{"AttributeName": "a", "KeyType": "RANGE"}],
                        "Projection": {"ProjectionType": "ALL"}}))
        ),
        validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    );
}

#[test]
fn unsupported_members_are_named() {
    let db = open();
    create(&db);
    let (code, message) = error(
        &db,
        json!({"TableName": "Tbl", "ReplicaTransitRoleArn": "arn:aws:iam::000000000000:role/r"}),
    );
    assert_eq!(code, ErrorCode::ValidationException);
    assert!(message.contains("ReplicaTransitRoleArn"), "{message}");
    let (code, message) = error(
        &db,
        json!({"TableName": "Tbl", "GlobalSecondaryIndexUpdates": [{"Update": {
            "IndexName": "ByG",
            "WarmThroughput": {"ReadUnitsPerSecond": 12000}}}]}),
    );
    assert_eq!(code, ErrorCode::ValidationException);
    assert!(message.contains("WarmThroughput"), "{message}");
}

#[test]
fn a_deleted_index_disappears_with_its_tree() {
    let db = open();
    create(&db);
    let table_id = describe(&db)["Table"]["TableId"]
        .as_str()
        .unwrap()
        .to_string();
    let tree_name = format!("{table_id}/gsi/ByG");
    assert!(db.lsm().tree_id(&tree_name).is_some());
    let response = update(
        &db,
        json!({"TableName": "Tbl", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "ByG"}}]}),
    )
    .unwrap();
    assert!(response["TableDescription"]
        .get("GlobalSecondaryIndexes")
        .is_none());
    assert!(describe(&db)["Table"]
        .get("GlobalSecondaryIndexes")
        .is_none());
    assert!(
        db.lsm().tree_id(&tree_name).is_none(),
        "the tree is dropped"
    );
    let query = db
        .execute(
            "Query",
            json!({"TableName": "Tbl", "IndexName": "ByG",
                   "KeyConditionExpression": "g = :g",
                   "ExpressionAttributeValues": {":g": {"S": "x"}}}),
        )
        .unwrap_err();
    assert_eq!(query.code, ErrorCode::ValidationException);
    // g is no longer a key attribute: any type is fine again.
    db.execute(
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"id": {"S": "1"}, "g": {"N": "1"}}}),
    )
    .unwrap();
}

#[test]
fn non_key_attributes_are_limited_across_the_table_not_per_index() {
    let db = open();
    create(&db);
    let include = |name: &str, count: usize| {
        let attributes: Vec<String> = (0..count).map(|i| format!("{name}{i}")).collect();
        json!({"TableName": "Tbl",
        "AttributeDefinitions": [{"AttributeName": "g", "AttributeType": "S"}],
        "GlobalSecondaryIndexUpdates": [{"Create": {
            "IndexName": name,
            "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": attributes}
        }}]})
    };
    // Five indexes of 20 (each index's own limit) reach the table's limit of 100 exactly; one
    // more attribute anywhere is over it.
    for index in ["Ix0", "Ix1", "Ix2", "Ix3", "Ix4"] {
        update(&db, include(index, 20)).unwrap();
    }
    assert_eq!(
        error(&db, include("Ix5", 1)),
        validation("One or more parameter values were invalid: The number of NonKeyAttributes across all secondary indexes of the table (101) exceeds the limit of 100")
    );
}
