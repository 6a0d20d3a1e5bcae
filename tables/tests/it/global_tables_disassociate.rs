//! ReplicaUpdates `Disassociate` (SPEC-3 §2.1): the caller's member becomes a table of its
//! Region, after what it wrote before has reached the others (WAIT_FOR_REPLICATION); the
//! others drop it; its rules and texts; a member left disassociating finishes after a
//! reopen. Cut Regions (the admin knob) hold a disassociation half-way, so each state is
//! observed, never timed.

use std::time::Duration;

use serde_json::{json, Value};
use shoal_tables::{Database, Durability, Lag, Options, ReplicationOptions, StorageOptions};

use crate::global_tables::{add_replica, call, create_table, get, ok, options, put, settle};

const A: &str = "us-east-1";
const B: &str = "eu-west-1";
const C: &str = "ap-south-1";

fn open() -> Database {
    Database::open_in_memory(options(Lag::fixed(Duration::ZERO))).unwrap()
}

fn describe(db: &Database, region: &str) -> Value {
    ok(db, region, "DescribeTable", &json!({"TableName": "Orders"}))["Table"].clone()
}

fn disassociate(region: &str) -> Value {
    json!({"TableName": "Orders", "ReplicaUpdates": [{"Disassociate": {
        "RegionName": region, "DisassociationMode": "WAIT_FOR_REPLICATION"
    }}]})
}

fn refused(db: &Database, region: &str, request: &Value) -> (String, String) {
    match call(db, region, "UpdateTable", request) {
        Ok(answer) => panic!("UpdateTable in {region} answered {answer}"),
        Err(error) => error,
    }
}

fn replicas(db: &Database, region: &str) -> Vec<String> {
    describe(db, region)["Replicas"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| e["RegionName"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn assert_regional(db: &Database, region: &str) {
    let table = describe(db, region);
    for member in [
        "GlobalTableVersion",
        "Replicas",
        "GlobalTableSettingsReplicationMode",
    ] {
        assert!(table.get(member).is_none(), "{member} in {region}: {table}");
    }
    assert_eq!(table["TableStatus"], "ACTIVE", "{region}");
}

#[test]
fn a_disassociated_member_keeps_its_items_and_what_it_wrote_before_reaches_the_others() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    add_replica(&db, A, "Orders", C);
    settle(&db);
    put(&db, A, "Orders", "shared", "from-a");
    settle(&db);

    // B's queues wait while it is cut: what B writes now is still to reach A and C.
    db.cut_region(B);
    put(&db, B, "Orders", "before", "from-b");
    let answer = ok(&db, B, "UpdateTable", &disassociate(B));
    assert_eq!(answer["TableDescription"]["TableStatus"], "UPDATING");
    // Half-way: B still a member, shown UPDATING; its new writes are queued for nobody.
    put(&db, B, "Orders", "after", "from-b");
    assert_eq!(replicas(&db, B), [A, C]);
    let b_seen_from_a = describe(&db, A)["Replicas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["RegionName"] == B)
        .cloned()
        .unwrap();
    assert_eq!(b_seen_from_a["ReplicaStatus"], "UPDATING");
    assert!(!db.replication_settled().unwrap());
    // Another replica action meanwhile is refused, from any member.
    for region in [A, B] {
        assert_eq!(
            refused(&db, region, &disassociate(region)),
            (
                "ResourceInUseException".to_string(),
                "The resource which you are attempting to change is in use.".to_string()
            ),
            "{region}"
        );
    }

    db.heal_region(B);
    settle(&db);
    assert_regional(&db, B);
    assert_eq!(replicas(&db, A), [C]);
    assert_eq!(replicas(&db, C), [A]);
    for region in [A, C] {
        assert_eq!(
            get(&db, region, "Orders", "before").as_deref(),
            Some("from-b"),
            "{region}"
        );
        assert_eq!(get(&db, region, "Orders", "after"), None, "{region}");
    }
    // B keeps every item it held, and its own writes.
    assert_eq!(get(&db, B, "Orders", "shared").as_deref(), Some("from-a"));
    assert_eq!(get(&db, B, "Orders", "after").as_deref(), Some("from-b"));
    // The group goes on without B, both ways.
    put(&db, A, "Orders", "later", "from-a");
    put(&db, B, "Orders", "alone", "from-b");
    settle(&db);
    assert_eq!(get(&db, C, "Orders", "later").as_deref(), Some("from-a"));
    assert_eq!(get(&db, B, "Orders", "later"), None);
    assert_eq!(get(&db, A, "Orders", "alone"), None);
    assert!(db
        .replication_links()
        .unwrap()
        .iter()
        .all(|link| link.from != B && link.to != B));
}

#[test]
fn the_last_other_member_is_left_a_regional_table_too() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    ok(&db, A, "UpdateTable", &disassociate(A));
    settle(&db);
    assert_regional(&db, A);
    assert_regional(&db, B);
    // The stream stays enabled, as after the last replica's Delete.
    assert_eq!(
        describe(&db, A)["StreamSpecification"]["StreamEnabled"],
        true
    );
    // Each is its Region's own table now.
    put(&db, A, "Orders", "k", "a");
    settle(&db);
    assert_eq!(get(&db, B, "Orders", "k"), None);
}

#[test]
fn disassociate_is_checked_with_its_rules() {
    let db = open();
    create_table(&db, A, "Orders");
    let validation = |message: &str| ("ValidationException".to_string(), message.to_string());
    // A regional table has no member to disassociate.
    assert_eq!(
        refused(&db, A, &disassociate(A)),
        validation("Update global table operation failed because one or more replicas were not part of the global table. Please retry the request without these replicas: [us-east-1].")
    );
    add_replica(&db, A, "Orders", B);
    settle(&db);
    let with_action = |action: Value| json!({"TableName": "Orders", "ReplicaUpdates": [{"Disassociate": action}]});
    assert_eq!(
        refused(&db, A, &with_action(json!({"RegionName": A}))),
        validation("1 validation error detected: Value null at 'replicaUpdates.1.member.disassociate.disassociationMode' failed to satisfy constraint: Member must not be null")
    );
    assert_eq!(
        refused(&db, A, &with_action(json!({"RegionName": A, "DisassociationMode": "NOW"}))),
        validation("1 validation error detected: Value 'NOW' at 'replicaUpdates.1.member.disassociate.disassociationMode' failed to satisfy constraint: Member must satisfy enum value set: [WAIT_FOR_REPLICATION]")
    );
    assert_eq!(
        refused(&db, A, &disassociate(B)),
        validation("One or more parameter values were invalid: Disassociate can only name the region the request was sent to: us-east-1")
    );
    let alone = validation("One or more parameter values were invalid: Disassociate must be the only replica update in the request");
    assert_eq!(
        refused(
            &db,
            A,
            &json!({"TableName": "Orders", "ReplicaUpdates": [
                {"Disassociate": {"RegionName": A, "DisassociationMode": "WAIT_FOR_REPLICATION"}},
                {"Update": {"RegionName": B, "TableClassOverride": "STANDARD"}}
            ]})
        ),
        alone
    );
    let mut with_witness = disassociate(A);
    with_witness["GlobalTableWitnessUpdates"] = json!([{"Delete": {"RegionName": C}}]);
    assert_eq!(refused(&db, A, &with_witness), alone);
    let mut beside = disassociate(A);
    beside["DeletionProtectionEnabled"] = json!(true);
    assert_eq!(
        refused(&db, A, &beside),
        validation("One or more parameter values were invalid: Replica modification must be the only operation in the request")
    );
    // Nothing changed.
    assert_eq!(replicas(&db, A), [B]);
    assert_eq!(replicas(&db, B), [A]);
}

#[test]
fn a_member_left_disassociating_finishes_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let options = || Options {
        storage: StorageOptions {
            durability: Durability::Sync,
            ..StorageOptions::default()
        },
        replication: ReplicationOptions {
            lag: Lag::fixed(Duration::ZERO),
        },
        ..Options::default()
    };
    {
        let db = Database::open(dir.path(), options()).unwrap();
        create_table(&db, A, "Orders");
        add_replica(&db, A, "Orders", B);
        settle(&db);
        db.cut_region(B);
        put(&db, B, "Orders", "queued", "from-b");
        ok(&db, B, "UpdateTable", &disassociate(B));
        assert_eq!(replicas(&db, B), [A]);
    }
    // Cuts live in memory: the reopened database drains B's queue and finishes.
    let db = Database::open(dir.path(), options()).unwrap();
    settle(&db);
    assert_regional(&db, A);
    assert_regional(&db, B);
    assert_eq!(get(&db, A, "Orders", "queued").as_deref(), Some("from-b"));
}
