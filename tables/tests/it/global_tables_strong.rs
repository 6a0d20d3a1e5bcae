//! Multi-Region strong consistency (SPEC-3 §2.5): the shapes a strong group forms with and
//! every text of §2.5 and the related rows of §2.1–§2.3, DescribeTable's
//! MultiRegionConsistency and GlobalTableWitnesses, writes present in every member when
//! acknowledged (whatever the replication lag and cuts), ReplicatedWriteConflictException,
//! the restrictions (Time to Live, LSIs, transactions, a non-empty table) and teardown.

use std::time::Duration;

use serde_json::{json, Value};
use shoal_tables::{Database, EmulationOptions, Lag, Options};

use crate::global_tables::{call, create_table, get, ok, options, put, wait_until};

const A: &str = "us-east-1";
const B: &str = "us-east-2";
const C: &str = "us-west-2";

/// A replication lag no test waits out: what reaches another Region at once came through
/// the strong path.
fn open_with(emulation: EmulationOptions) -> Database {
    let options = Options {
        emulation,
        ..options(Lag::fixed(Duration::from_secs(3600)))
    };
    Database::open_in_memory(options).unwrap()
}

fn open() -> Database {
    open_with(EmulationOptions::default())
}

fn refused(db: &Database, region: &str, operation: &str, request: &Value) -> (String, String) {
    match call(db, region, operation, request) {
        Ok(answer) => panic!("{operation} in {region} answered {answer}"),
        Err(error) => error,
    }
}

fn validation(message: &str) -> (String, String) {
    ("ValidationException".to_string(), message.to_string())
}

fn describe(db: &Database, region: &str, name: &str) -> Value {
    ok(db, region, "DescribeTable", &json!({"TableName": name}))["Table"].clone()
}

/// The UpdateTable forming a strong group of `name` in A with `creates` and `witness`.
fn strong_request(name: &str, creates: &[&str], witness: Option<&str>) -> Value {
    let mut request = json!({
        "TableName": name,
        "MultiRegionConsistency": "STRONG",
        "ReplicaUpdates": creates
            .iter()
            .map(|region| json!({"Create": {"RegionName": region}}))
            .collect::<Vec<_>>(),
    });
    if let Some(witness) = witness {
        request["GlobalTableWitnessUpdates"] = json!([{"Create": {"RegionName": witness}}]);
    }
    request
}

/// Table `name` in A, made a strong group with `creates` and `witness`, every member ACTIVE.
fn strong_group(db: &Database, name: &str, creates: &[&str], witness: Option<&str>) -> Value {
    create_table(db, A, name);
    form(db, name, creates, witness)
}

/// Makes table `name` of A a strong group; waits for every member to be ACTIVE.
fn form(db: &Database, name: &str, creates: &[&str], witness: Option<&str>) -> Value {
    let answer = ok(
        db,
        A,
        "UpdateTable",
        &strong_request(name, creates, witness),
    );
    wait_until("the replicas to be ACTIVE", || {
        describe(db, A, name)["Replicas"]
            .as_array()
            .is_some_and(|replicas| replicas.iter().all(|r| r["ReplicaStatus"] == "ACTIVE"))
    });
    answer
}

#[test]
fn a_strong_group_forms_only_with_the_shapes_spec_gives() {
    let db = open();
    create_table(&db, A, "Tbl");
    let update = |request: Value| refused(&db, A, "UpdateTable", &request);

    // MultiRegionConsistency or a witness without replicas asks for nothing.
    assert_eq!(
        update(json!({"TableName": "Tbl", "MultiRegionConsistency": "STRONG"})),
        validation("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates, SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required")
    );
    assert_eq!(
        update(json!({"TableName": "Tbl", "GlobalTableWitnessUpdates": [{"Create": {"RegionName": C}}]})),
        validation("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates, SSESpecification, ReplicaUpdates, MultiAccountReplicaReady, ReplicaTransitRoleArn, MultiRegionConsistency, DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required")
    );
    // A witness beside another change.
    assert_eq!(
        update(json!({"TableName": "Tbl", "DeletionProtectionEnabled": true,
                      "GlobalTableWitnessUpdates": [{"Create": {"RegionName": C}}]})),
        validation("One or more parameter values were invalid: Replica modification must be the only operation in the request")
    );
    // A witness needs STRONG.
    let mut request = strong_request("Tbl", &[B], Some(C));
    request
        .as_object_mut()
        .unwrap()
        .remove("MultiRegionConsistency");
    assert_eq!(
        update(request.clone()),
        validation("MultiRegionConsistency must be set as STRONG when GlobalTableWitnessUpdates parameter is present.")
    );
    request["MultiRegionConsistency"] = json!("EVENTUAL");
    assert_eq!(
        update(request),
        validation("MultiRegionConsistency must be set as STRONG when GlobalTableWitnessUpdates parameter is present.")
    );
    // Only Creates go with MultiRegionConsistency.
    assert_eq!(
        update(json!({"TableName": "Tbl", "MultiRegionConsistency": "STRONG",
                      "ReplicaUpdates": [{"Delete": {"RegionName": B}}]})),
        validation("Only Replica Create actions are supported when MultiRegionConsistency parameter is provided.")
    );
    // The value is checked against the enum.
    assert_eq!(
        update(json!({"TableName": "Tbl", "MultiRegionConsistency": "SOMETIMES",
                      "ReplicaUpdates": [{"Create": {"RegionName": B}}]})),
        validation("1 validation error detected: Value 'SOMETIMES' at 'multiRegionConsistency' failed to satisfy constraint: Member must satisfy enum value set: [EVENTUAL, STRONG]")
    );
    // At most one witness.
    let (code, message) = update(
        json!({"TableName": "Tbl", "MultiRegionConsistency": "STRONG",
        "ReplicaUpdates": [{"Create": {"RegionName": B}}],
        "GlobalTableWitnessUpdates": [{"Create": {"RegionName": C}}, {"Create": {"RegionName": "us-west-1"}}]}),
    );
    assert_eq!(code, "ValidationException");
    assert!(
        message.contains("'globalTableWitnessUpdates' failed to satisfy constraint: Member must have length less than or equal to 1"),
        "{message}"
    );
    // Exactly three Regions.
    for (creates, witness, count) in [(&[B][..], None, 2), (&[B, C][..], Some("us-west-1"), 4)] {
        let (code, message) = update(strong_request("Tbl", creates, witness));
        assert_eq!(code, "ValidationException");
        assert!(
            message.starts_with(&format!("Unsupported replica count {count}")),
            "{message}"
        );
    }
    // Two Creates without STRONG stay refused.
    assert_eq!(
        update(json!({"TableName": "Tbl", "ReplicaUpdates": [
            {"Create": {"RegionName": B}}, {"Create": {"RegionName": C}}]})),
        validation(
            "Update table operation with more than one create or delete replica actions not allowed"
        )
    );
    // The witness apart from the replicas, and every Region in one set.
    let (_, message) = update(strong_request("Tbl", &[B], Some(B)));
    assert!(
        message.starts_with("Cannot add a witness in the same region as an existing replica"),
        "{message}"
    );
    let (_, message) = update(strong_request("Tbl", &[B], Some(A)));
    assert!(
        message.starts_with("Cannot add a witness in the same region as an existing replica"),
        "{message}"
    );
    let (code, message) = update(strong_request("Tbl", &[B], Some("eu-west-1")));
    assert_eq!(code, "ValidationException");
    assert!(message.contains("one Region set"), "{message}");
    let (_, message) = update(strong_request("Tbl", &[B], Some("mars-north-1")));
    assert!(
        message.starts_with("Region mars-north-1 is not supported."),
        "{message}"
    );
    // Nothing changed by any of them.
    assert!(describe(&db, A, "Tbl").get("Replicas").is_none());

    // The two shapes.
    let answer = form(&db, "Tbl", &[B], Some(C));
    assert_eq!(
        answer["TableDescription"]["MultiRegionConsistency"],
        "STRONG"
    );
    strong_group(&db, "Three", &[B, C], None);
}

#[test]
fn describe_table_shows_the_mode_and_the_witness_in_every_member() {
    let db = open();
    strong_group(&db, "Wit", &[B], Some(C));
    for (region, other) in [(A, B), (B, A)] {
        let table = describe(&db, region, "Wit");
        assert_eq!(table["MultiRegionConsistency"], "STRONG");
        assert_eq!(table["GlobalTableVersion"], "2019.11.21");
        assert_eq!(
            table["GlobalTableWitnesses"],
            json!([{"RegionName": C, "WitnessStatus": "ACTIVE"}])
        );
        assert_eq!(
            table["Replicas"],
            json!([{"RegionName": other, "ReplicaStatus": "ACTIVE"}])
        );
    }
    // A witness holds no table.
    assert_eq!(
        refused(&db, C, "DescribeTable", &json!({"TableName": "Wit"})).0,
        "ResourceNotFoundException"
    );
    strong_group(&db, "Three", &[B, C], None);
    let table = describe(&db, C, "Three");
    assert_eq!(table["MultiRegionConsistency"], "STRONG");
    assert!(table.get("GlobalTableWitnesses").is_none());
    assert_eq!(table["Replicas"].as_array().unwrap().len(), 2);
    // An MREC group shows neither.
    create_table(&db, A, "Eventual");
    crate::global_tables::add_replica(&db, A, "Eventual", B);
    let table = describe(&db, A, "Eventual");
    assert!(table.get("MultiRegionConsistency").is_none());
    assert!(table.get("GlobalTableWitnesses").is_none());
}

#[test]
fn an_acknowledged_write_is_in_every_member() {
    let db = open();
    strong_group(&db, "Three", &[B, C], None);
    // Cuts delay only asynchronous groups.
    db.cut_region(B);
    for (step, region) in [A, B, C, A].into_iter().enumerate() {
        let value = format!("v{step}");
        put(&db, region, "Three", "k", &value);
        for reader in [A, B, C] {
            assert_eq!(
                get(&db, reader, "Three", "k").as_deref(),
                Some(value.as_str())
            );
        }
    }
    ok(
        &db,
        C,
        "DeleteItem",
        &json!({"TableName": "Three", "Key": {"pk": {"S": "k"}}}),
    );
    ok(
        &db,
        B,
        "UpdateItem",
        &json!({"TableName": "Three", "Key": {"pk": {"S": "u"}},
                "UpdateExpression": "SET v = :v, g = :g",
                "ExpressionAttributeValues": {":v": {"S": "updated"}, ":g": {"S": "x"}}}),
    );
    ok(
        &db,
        A,
        "BatchWriteItem",
        &json!({"RequestItems": {"Three": [
            {"PutRequest": {"Item": {"pk": {"S": "b1"}, "g": {"S": "x"}, "v": {"S": "batch"}}}},
            {"PutRequest": {"Item": {"pk": {"S": "b2"}, "g": {"S": "x"}, "v": {"S": "batch"}}}}
        ]}}),
    );
    for reader in [A, B, C] {
        assert_eq!(get(&db, reader, "Three", "k"), None);
        assert_eq!(get(&db, reader, "Three", "u").as_deref(), Some("updated"));
        assert_eq!(get(&db, reader, "Three", "b2").as_deref(), Some("batch"));
        // Conditional writes evaluate against the latest version in any member.
        let (code, _) = refused(
            &db,
            reader,
            "PutItem",
            &json!({"TableName": "Three", "Item": {"pk": {"S": "b1"}, "g": {"S": "x"}},
                    "ConditionExpression": "attribute_not_exists(pk)"}),
        );
        assert_eq!(code, "ConditionalCheckFailedException");
    }
    // Nothing is left for the (hour-long) asynchronous path.
    db.heal_region(B);
    assert!(db.replication_settled().unwrap());
    assert!(db.check().unwrap().is_sound());
}

#[test]
fn a_write_meeting_another_regions_write_to_the_item_conflicts() {
    let db = std::sync::Arc::new(open_with(EmulationOptions {
        write_hold: Duration::from_millis(600),
        ..EmulationOptions::default()
    }));
    strong_group(&db, "Tbl", &[B], Some(C));
    let writer = {
        let db = std::sync::Arc::clone(&db);
        std::thread::spawn(move || put(&db, A, "Tbl", "k", "from-a"))
    };
    std::thread::sleep(Duration::from_millis(150));
    let (code, message) = refused(
        &db,
        B,
        "PutItem",
        &json!({"TableName": "Tbl", "Item": {"pk": {"S": "k"}, "g": {"S": "x"}, "v": {"S": "from-b"}}}),
    );
    assert_eq!(code, "ReplicatedWriteConflictException");
    assert!(
        message.contains("being modified by a request in another Region"),
        "{message}"
    );
    // Another item, and the same item from the same Region, are not conflicts.
    put(&db, B, "Tbl", "other", "from-b");
    put(&db, A, "Tbl", "k", "again-from-a");
    writer.join().unwrap();
    for region in [A, B] {
        assert_eq!(
            get(&db, region, "Tbl", "k").as_deref(),
            Some("again-from-a")
        );
        assert_eq!(get(&db, region, "Tbl", "other").as_deref(), Some("from-b"));
    }
    // Once the write is done, the other Region writes the item again.
    put(&db, B, "Tbl", "k", "from-b");
    assert_eq!(get(&db, A, "Tbl", "k").as_deref(), Some("from-b"));
}

#[test]
fn strong_groups_refuse_what_spec_restricts() {
    let db = open();
    strong_group(&db, "Tbl", &[B], Some(C));
    let refused_here =
        |region: &str, operation: &str, request: Value| refused(&db, region, operation, &request);
    // Time to Live.
    assert_eq!(
        refused_here(B, "UpdateTimeToLive", json!({"TableName": "Tbl",
            "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "exp"}})),
        validation("One or more parameter values were invalid: Time to Live is not supported for global tables with MultiRegionConsistency set to STRONG")
    );
    // Transactions.
    let transactions = validation("One or more parameter values were invalid: Transactions are not supported for global tables with MultiRegionConsistency set to STRONG");
    assert_eq!(
        refused_here(
            A,
            "TransactWriteItems",
            json!({"TransactItems": [{"Put": {"TableName": "Tbl",
            "Item": {"pk": {"S": "t"}, "g": {"S": "x"}}}}]})
        ),
        transactions
    );
    assert_eq!(
        refused_here(
            B,
            "TransactGetItems",
            json!({"TransactItems": [{"Get": {"TableName": "Tbl",
            "Key": {"pk": {"S": "t"}}}}]})
        ),
        transactions
    );
    assert_eq!(get(&db, A, "Tbl", "t"), None);
    // No replica joins later; the mode never changes.
    assert_eq!(
        refused_here(
            A,
            "UpdateTable",
            json!({"TableName": "Tbl",
            "ReplicaUpdates": [{"Create": {"RegionName": "us-west-1"}}]})
        ),
        validation("Cannot add replicas to a global table with strong MultiRegionConsistency")
    );
    for mode in ["STRONG", "EVENTUAL"] {
        assert_eq!(
            refused_here(
                B,
                "UpdateTable",
                json!({"TableName": "Tbl", "MultiRegionConsistency": mode,
                "ReplicaUpdates": [{"Create": {"RegionName": "us-west-1"}}]})
            ),
            validation("MultiRegionConsistency parameter is unsupported on existing global table")
        );
    }
    // An MREC group cannot become strong.
    create_table(&db, A, "Eventual");
    crate::global_tables::add_replica(&db, A, "Eventual", B);
    assert_eq!(
        refused_here(A, "UpdateTable", strong_request("Eventual", &[C], None)),
        validation("MultiRegionConsistency parameter is unsupported on existing global table")
    );
    // One member alone cannot be deleted.
    assert_eq!(
        refused_here(B, "DeleteTable", json!({"TableName": "Tbl"})),
        validation("Deletion of only one table replica is not supported for global tables with MultiRegionConsistency set to STRONG.")
    );
    // The table a group forms from: empty, without LSIs or Time to Live.
    create_table(&db, A, "Full");
    put(&db, A, "Full", "k", "v");
    let (_, message) = refused_here(A, "UpdateTable", strong_request("Full", &[B], Some(C)));
    assert!(message.contains("must be empty"), "{message}");
    // No member leaves alone by Disassociate either (Shoal's text, after DeleteTable's).
    assert_eq!(
        refused_here(
            B,
            "UpdateTable",
            json!({"TableName": "Tbl", "ReplicaUpdates": [{"Disassociate": {
                "RegionName": B, "DisassociationMode": "WAIT_FOR_REPLICATION"}}]})
        ),
        validation("Disassociation of a replica is not supported for global tables with MultiRegionConsistency set to STRONG.")
    );
    create_table(&db, A, "Expiring");
    ok(
        &db,
        A,
        "UpdateTimeToLive",
        &json!({"TableName": "Expiring", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "exp"}}),
    );
    assert_eq!(
        refused_here(A, "UpdateTable", strong_request("Expiring", &[B], Some(C))),
        validation("One or more parameter values were invalid: Time to Live is not supported for global tables with MultiRegionConsistency set to STRONG")
    );
    ok(
        &db,
        A,
        "CreateTable",
        &json!({
            "TableName": "Local",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "l", "AttributeType": "S"}
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "LocalSecondaryIndexes": [{
                "IndexName": "ByL",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "l", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"}
            }],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
    assert_eq!(
        refused_here(A, "UpdateTable", strong_request("Local", &[B], Some(C))),
        validation("One or more parameter values were invalid: Local secondary indexes are not supported for global tables with MultiRegionConsistency set to STRONG")
    );
    for name in ["Full", "Expiring", "Local"] {
        assert!(describe(&db, A, name).get("Replicas").is_none());
    }
}

#[test]
fn a_strong_group_is_taken_apart_by_one_update() {
    let db = open();
    strong_group(&db, "Wit", &[B], Some(C));
    let delete_b = json!({"TableName": "Wit", "ReplicaUpdates": [{"Delete": {"RegionName": B}}]});
    assert_eq!(
        refused(&db, A, "UpdateTable", &delete_b),
        validation("Update table delete operation does not include all witnesses.")
    );
    let mut wrong_witness = delete_b.clone();
    wrong_witness["GlobalTableWitnessUpdates"] = json!([{"Delete": {"RegionName": "us-west-1"}}]);
    assert_eq!(
        refused(&db, A, "UpdateTable", &wrong_witness),
        validation("Update global table operation failed because one or more replicas were not part of the global table. Please retry the request without these replicas: [us-west-1].")
    );
    let mut teardown = delete_b;
    teardown["GlobalTableWitnessUpdates"] = json!([{"Delete": {"RegionName": C}}]);
    ok(&db, A, "UpdateTable", &teardown);
    assert_regional(&describe(&db, A, "Wit"));
    assert_eq!(
        refused(&db, B, "DescribeTable", &json!({"TableName": "Wit"})).0,
        "ResourceNotFoundException"
    );
    // The table left is regional: TTL and transactions work again.
    ok(
        &db,
        A,
        "UpdateTimeToLive",
        &json!({"TableName": "Wit", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "exp"}}),
    );

    strong_group(&db, "Three", &[B, C], None);
    assert_eq!(
        refused(
            &db,
            C,
            "UpdateTable",
            &json!({"TableName": "Three", "ReplicaUpdates": [{"Delete": {"RegionName": A}}]})
        ),
        validation("Update table delete operation does not include all replicas.")
    );
    ok(
        &db,
        C,
        "UpdateTable",
        &json!({"TableName": "Three", "ReplicaUpdates": [
            {"Delete": {"RegionName": A}}, {"Delete": {"RegionName": B}}]}),
    );
    assert!(describe(&db, C, "Three").get("Replicas").is_none());
    // An MREC group still deletes one replica per call.
    create_table(&db, A, "Eventual");
    crate::global_tables::add_replica(&db, A, "Eventual", B);
    assert_eq!(
        refused(
            &db,
            A,
            "UpdateTable",
            &json!({"TableName": "Eventual", "ReplicaUpdates": [
                {"Delete": {"RegionName": B}}, {"Delete": {"RegionName": C}}]})
        ),
        validation("Update global table operation failed because one or more replicas were not part of the global table. Please retry the request without these replicas: [us-west-2].")
    );
}

/// Asserts `table` (a DescribeTable) shows none of a global table's members.
pub(crate) fn assert_regional(table: &Value) {
    for member in [
        "Replicas",
        "MultiRegionConsistency",
        "GlobalTableWitnesses",
        "GlobalTableVersion",
    ] {
        assert!(table.get(member).is_none(), "{member} in {table}");
    }
}
