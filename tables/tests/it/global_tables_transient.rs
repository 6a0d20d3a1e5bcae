//! Global tables' transient statuses (SPEC-3 §2.2) under `--transient-status-seconds`: a
//! replica deleted through ReplicaUpdates is DELETING in the other members' `Replicas[]`
//! before it is gone, a strong group's witness CREATING when the group forms and DELETING
//! when it is taken apart; with no delay (the default) none of it shows.
//!
//! The delay is one no test outlives: what is checked is the recorded state, never its end.
//! Groups are formed without a delay and reopened with one where a later change is needed
//! (the caller's own UPDATING would refuse it; transitions live in memory, so a reopen
//! starts with none).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use shoal_tables::Database;

use crate::global_tables::{add_replica, create_table, ok, settle, wait_until};
use crate::global_tables_overrides::disk_options;
use crate::global_tables_strong::assert_regional;

const A: &str = "us-east-1";
const B: &str = "us-east-2";
const C: &str = "us-west-2";
const HELD: Duration = Duration::from_secs(3600);

fn describe(db: &Database, region: &str, name: &str) -> Value {
    ok(db, region, "DescribeTable", &json!({"TableName": name}))["Table"].clone()
}

fn regions_and_statuses(replicas: &Value) -> Vec<(String, String)> {
    replicas
        .as_array()
        .unwrap_or_else(|| panic!("no Replicas: {replicas}"))
        .iter()
        .map(|r| {
            (
                r["RegionName"].as_str().unwrap().to_string(),
                r["ReplicaStatus"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pair(region: &str, status: &str) -> (String, String) {
    (region.to_string(), status.to_string())
}

/// Table `Orders` of A with replicas in B and C, all ACTIVE, in a database at `dir`.
fn three_members(dir: &Path) {
    let db = Database::open(dir, disk_options(Duration::ZERO)).unwrap();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    add_replica(&db, A, "Orders", C);
    settle(&db);
}

fn delete_c() -> Value {
    json!({"TableName": "Orders", "ReplicaUpdates": [{"Delete": {"RegionName": C}}]})
}

#[test]
fn a_deleted_replica_is_deleting_to_the_others_while_the_delay_lasts() {
    let dir = tempfile::tempdir().unwrap();
    three_members(dir.path());
    let db = Database::open(dir.path(), disk_options(HELD)).unwrap();
    let answer = ok(&db, A, "UpdateTable", &delete_c());
    assert_eq!(answer["TableDescription"]["TableStatus"], "UPDATING");
    assert_eq!(
        regions_and_statuses(&answer["TableDescription"]["Replicas"]),
        [pair(B, "ACTIVE"), pair(C, "DELETING")]
    );
    assert_eq!(
        regions_and_statuses(&describe(&db, B, "Orders")["Replicas"]),
        [pair(A, "ACTIVE"), pair(C, "DELETING")]
    );
    // The replica itself is gone from its Region, and the group is A and B.
    let gone = crate::global_tables::call(&db, C, "DescribeTable", &json!({"TableName": "Orders"}));
    assert_eq!(gone.unwrap_err().0, "ResourceNotFoundException");
    let names = ok(&db, C, "ListTables", &json!({}))["TableNames"].clone();
    assert_eq!(names, json!([]));
}

#[test]
fn without_a_delay_a_deleted_replica_is_gone_at_once() {
    let dir = tempfile::tempdir().unwrap();
    three_members(dir.path());
    let db = Database::open(dir.path(), disk_options(Duration::ZERO)).unwrap();
    let answer = ok(&db, A, "UpdateTable", &delete_c());
    assert_eq!(
        regions_and_statuses(&answer["TableDescription"]["Replicas"]),
        [pair(B, "ACTIVE")]
    );
    assert_eq!(
        regions_and_statuses(&describe(&db, B, "Orders")["Replicas"]),
        [pair(A, "ACTIVE")]
    );
}

/// The UpdateTable forming a strong group of `name` in A with B and witness C.
fn strong_with_witness(name: &str) -> Value {
    json!({
        "TableName": name,
        "MultiRegionConsistency": "STRONG",
        "ReplicaUpdates": [{"Create": {"RegionName": B}}],
        "GlobalTableWitnessUpdates": [{"Create": {"RegionName": C}}]
    })
}

fn witnesses(table: &Value) -> Value {
    table["GlobalTableWitnesses"].clone()
}

#[test]
fn a_witness_is_creating_while_the_delay_lasts_and_active_without_one() {
    for (delay, status) in [(HELD, "CREATING"), (Duration::ZERO, "ACTIVE")] {
        let dir = tempfile::tempdir().unwrap();
        // Created without a delay: a CREATING table would refuse the UpdateTable.
        create_table(
            &Database::open(dir.path(), disk_options(Duration::ZERO)).unwrap(),
            A,
            "Wit",
        );
        let db = Database::open(dir.path(), disk_options(delay)).unwrap();
        let answer = ok(&db, A, "UpdateTable", &strong_with_witness("Wit"));
        let expected = json!([{"RegionName": C, "WitnessStatus": status}]);
        assert_eq!(
            witnesses(&answer["TableDescription"]),
            expected,
            "{delay:?}"
        );
        wait_until("the replica to be ACTIVE", || {
            describe(&db, A, "Wit")["Replicas"][0]["ReplicaStatus"] == "ACTIVE"
        });
        for region in [A, B] {
            assert_eq!(
                witnesses(&describe(&db, region, "Wit")),
                expected,
                "{region}, {delay:?}"
            );
        }
    }
}

#[test]
fn a_teardown_shows_the_replica_and_witness_deleting_then_nothing_without_a_delay() {
    for (delay, deleting) in [(HELD, true), (Duration::ZERO, false)] {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::open(dir.path(), disk_options(Duration::ZERO)).unwrap();
            create_table(&db, A, "Wit");
            ok(&db, A, "UpdateTable", &strong_with_witness("Wit"));
            wait_until("the replica to be ACTIVE", || {
                describe(&db, A, "Wit")["Replicas"][0]["ReplicaStatus"] == "ACTIVE"
            });
        }
        let db = Database::open(dir.path(), disk_options(delay)).unwrap();
        ok(
            &db,
            A,
            "UpdateTable",
            &json!({
                "TableName": "Wit",
                "ReplicaUpdates": [{"Delete": {"RegionName": B}}],
                "GlobalTableWitnessUpdates": [{"Delete": {"RegionName": C}}]
            }),
        );
        let table = describe(&db, A, "Wit");
        if deleting {
            assert_eq!(
                regions_and_statuses(&table["Replicas"]),
                [pair(B, "DELETING")]
            );
            assert_eq!(
                witnesses(&table),
                json!([{"RegionName": C, "WitnessStatus": "DELETING"}])
            );
            assert_eq!(table["MultiRegionConsistency"], "STRONG");
            assert_eq!(table["GlobalTableVersion"], "2019.11.21");
        } else {
            assert_regional(&table);
        }
    }
}

#[test]
fn a_table_deleted_from_a_group_is_deleting_to_the_others_while_the_delay_lasts() {
    for (delay, deleting) in [(HELD, true), (Duration::ZERO, false)] {
        let dir = tempfile::tempdir().unwrap();
        three_members(dir.path());
        let db = Database::open(dir.path(), disk_options(delay)).unwrap();
        ok(&db, C, "DeleteTable", &json!({"TableName": "Orders"}));
        let (seen_by_a, seen_by_b) = if deleting {
            (
                vec![pair(B, "ACTIVE"), pair(C, "DELETING")],
                vec![pair(A, "ACTIVE"), pair(C, "DELETING")],
            )
        } else {
            (vec![pair(B, "ACTIVE")], vec![pair(A, "ACTIVE")])
        };
        assert_eq!(
            regions_and_statuses(&describe(&db, A, "Orders")["Replicas"]),
            seen_by_a,
            "{delay:?}"
        );
        assert_eq!(
            regions_and_statuses(&describe(&db, B, "Orders")["Replicas"]),
            seen_by_b,
            "{delay:?}"
        );
    }
}

/// ReplicaUpdates deleting A's replica, sent to B.
fn delete_a() -> Value {
    json!({"TableName": "Orders", "ReplicaUpdates": [{"Delete": {"RegionName": A}}]})
}

#[test]
fn a_replica_action_is_refused_while_a_member_is_deleting_but_items_are_not() {
    for deleted_by in ["UpdateTable", "DeleteTable"] {
        let dir = tempfile::tempdir().unwrap();
        three_members(dir.path());
        let db = Database::open(dir.path(), disk_options(HELD)).unwrap();
        if deleted_by == "UpdateTable" {
            ok(&db, A, "UpdateTable", &delete_c());
        } else {
            ok(&db, C, "DeleteTable", &json!({"TableName": "Orders"}));
        }
        // B, not in a transition of its own, sees C DELETING.
        let refused = crate::global_tables::call(&db, B, "UpdateTable", &delete_a()).unwrap_err();
        assert_eq!(
            refused,
            (
                "ResourceInUseException".to_string(),
                "The resource which you are attempting to change is in use.".to_string()
            ),
            "{deleted_by}"
        );
        // Items are written and read as ever, and the group is still A and B.
        crate::global_tables::put(&db, B, "Orders", "k", "v");
        assert_eq!(
            crate::global_tables::get(&db, B, "Orders", "k").as_deref(),
            Some("v")
        );
        assert_eq!(
            regions_and_statuses(&describe(&db, B, "Orders")["Replicas"]),
            [pair(A, "ACTIVE"), pair(C, "DELETING")]
        );
    }
}

#[test]
fn without_a_delay_a_replica_action_follows_a_deletion_at_once() {
    let dir = tempfile::tempdir().unwrap();
    three_members(dir.path());
    let db = Database::open(dir.path(), disk_options(Duration::ZERO)).unwrap();
    ok(&db, C, "DeleteTable", &json!({"TableName": "Orders"}));
    ok(&db, B, "UpdateTable", &delete_a());
    assert_regional(&describe(&db, B, "Orders"));
}

#[test]
fn a_replica_action_is_refused_while_the_witness_is_creating() {
    for (delay, refused) in [(HELD, true), (Duration::ZERO, false)] {
        let dir = tempfile::tempdir().unwrap();
        create_table(
            &Database::open(dir.path(), disk_options(Duration::ZERO)).unwrap(),
            A,
            "Wit",
        );
        let db = Database::open(dir.path(), disk_options(delay)).unwrap();
        ok(&db, A, "UpdateTable", &strong_with_witness("Wit"));
        wait_until("the replica to be ACTIVE", || {
            describe(&db, A, "Wit")["Replicas"][0]["ReplicaStatus"] == "ACTIVE"
        });
        // B takes items while its witness is CREATING.
        crate::global_tables::put(&db, B, "Wit", "k", "v");
        assert_eq!(
            crate::global_tables::get(&db, A, "Wit", "k").as_deref(),
            Some("v")
        );
        // The teardown, sent to B (A is UPDATING from forming the group).
        let teardown = json!({
            "TableName": "Wit",
            "ReplicaUpdates": [{"Delete": {"RegionName": A}}],
            "GlobalTableWitnessUpdates": [{"Delete": {"RegionName": C}}]
        });
        let answer = crate::global_tables::call(&db, B, "UpdateTable", &teardown);
        if refused {
            assert_eq!(
                answer.unwrap_err(),
                (
                    "ResourceInUseException".to_string(),
                    "The resource which you are attempting to change is in use.".to_string()
                ),
                "{delay:?}"
            );
            assert_eq!(describe(&db, B, "Wit")["MultiRegionConsistency"], "STRONG");
        } else {
            answer.unwrap();
            assert_regional(&describe(&db, B, "Wit"));
        }
    }
}

/// A member's own transition is its own: UPDATING in A holds back a second change sent to A
/// but not one sent to B, and a member DeleteTable'd in C is DELETING in C only.
#[test]
fn a_members_own_transition_holds_back_changes_in_its_region_only() {
    let dir = tempfile::tempdir().unwrap();
    three_members(dir.path());
    let db = Database::open(dir.path(), disk_options(HELD)).unwrap();
    let class = json!({"TableName": "Orders", "TableClass": "STANDARD_INFREQUENT_ACCESS"});
    let answer = ok(&db, A, "UpdateTable", &class);
    assert_eq!(answer["TableDescription"]["TableStatus"], "UPDATING");
    assert_eq!(describe(&db, A, "Orders")["TableStatus"], "UPDATING");
    assert_eq!(describe(&db, B, "Orders")["TableStatus"], "ACTIVE");
    let protect = json!({"TableName": "Orders", "DeletionProtectionEnabled": true});
    // The neighbour that must not change: A's own second change waits, named by the table.
    let refused = crate::global_tables::call(&db, A, "UpdateTable", &protect).unwrap_err();
    assert_eq!(
        refused,
        (
            "ResourceInUseException".to_string(),
            "Attempt to change a resource which is still in use: Table is being updated: Orders"
                .to_string()
        )
    );
    // B is in no transition of its own.
    let answer = ok(&db, B, "UpdateTable", &protect);
    assert_eq!(
        answer["TableDescription"]["DeletionProtectionEnabled"],
        true
    );

    ok(&db, C, "DeleteTable", &json!({"TableName": "Orders"}));
    assert_eq!(describe(&db, C, "Orders")["TableStatus"], "DELETING");
    let listed = |region: &str| ok(&db, region, "ListTables", &json!({}))["TableNames"].clone();
    assert_eq!(listed(C), json!(["Orders"]));
    // A Region that never held a member lists nothing: C's DELETING is C's.
    assert_eq!(listed("eu-west-1"), json!([]));
    let gone = crate::global_tables::call(
        &db,
        "eu-west-1",
        "DescribeTable",
        &json!({"TableName": "Orders"}),
    );
    assert_eq!(gone.unwrap_err().0, "ResourceNotFoundException");
    // CreateTable of the name waits in C.
    let create = json!({
        "TableName": "Orders",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST"
    });
    let refused = crate::global_tables::call(&db, C, "CreateTable", &create).unwrap_err();
    assert_eq!(
        refused.1,
        "Attempt to change a resource which is still in use: Table is being deleted: Orders"
    );
}
