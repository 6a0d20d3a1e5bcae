//! Global tables' per-replica overrides (SPEC-3 §2.1, §2.2): ReplicaUpdates `Create` and
//! `Update` with ProvisionedThroughputOverride, OnDemandThroughputOverride, per-GSI overrides
//! and TableClassOverride; their rules and texts; DescribeTable's `Replicas[]` entries;
//! UPDATING while the transient-status delay lasts; the member's reads limited by its own
//! override under capacity enforcement; the overrides after a reopen.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use shoal_tables::capacity::throttle::{CapacityMode, PROVISIONED_EXCEEDED_MESSAGE};
use shoal_tables::{
    Clock, Database, Durability, EmulationOptions, Lag, Options, ReplicationOptions, StorageOptions,
};

use crate::global_tables::{
    add_replica, call, create_table, create_table_billed, ok, options, settle,
};

const A: &str = "us-east-1";
const B: &str = "eu-west-1";
const C: &str = "ap-south-1";

fn open() -> Database {
    Database::open_in_memory(options(Lag::fixed(Duration::ZERO))).unwrap()
}

fn refused(db: &Database, region: &str, request: &Value) -> (String, String) {
    match call(db, region, "UpdateTable", request) {
        Ok(answer) => panic!("UpdateTable in {region} answered {answer}"),
        Err(error) => error,
    }
}

fn describe(db: &Database, region: &str, name: &str) -> Value {
    ok(db, region, "DescribeTable", &json!({"TableName": name}))["Table"].clone()
}

/// Table `name` in `region`: PROVISIONED (10 RCU, 5 WCU) with GSI ByG (4 RCU, 2 WCU).
fn create_provisioned(db: &Database, region: &str, name: &str) {
    create_table_billed(
        db,
        region,
        name,
        Some((
            json!({"ReadCapacityUnits": 10, "WriteCapacityUnits": 5}),
            json!({"ReadCapacityUnits": 4, "WriteCapacityUnits": 2}),
        )),
    );
}

fn replica_updates(name: &str, updates: Value) -> Value {
    json!({"TableName": name, "ReplicaUpdates": updates})
}

/// `replicas` (a `Replicas[]`) without each `ReplicaTableClassSummary.LastUpdateDateTime`,
/// which must be there, a time in epoch seconds, wherever a summary is.
fn without_class_times(mut replicas: Value) -> Value {
    for entry in replicas.as_array_mut().unwrap() {
        if let Some(summary) = entry.get_mut("ReplicaTableClassSummary") {
            let time = summary
                .as_object_mut()
                .unwrap()
                .remove("LastUpdateDateTime")
                .unwrap_or_else(|| panic!("no LastUpdateDateTime in {summary}"));
            assert!(time.as_f64().unwrap() > 1.6e9, "{time}");
        }
    }
    replicas
}

fn validation(message: &str) -> (String, String) {
    ("ValidationException".to_string(), message.to_string())
}

#[test]
fn overrides_given_on_create_are_shown_by_the_other_regions_only_where_set() {
    let db = open();
    create_provisioned(&db, A, "Orders");
    let answer = ok(
        &db,
        A,
        "UpdateTable",
        &replica_updates(
            "Orders",
            json!([{"Create": {
                "RegionName": B,
                "ProvisionedThroughputOverride": {"ReadCapacityUnits": 7},
                "GlobalSecondaryIndexes": [{
                    "IndexName": "ByG",
                    "ProvisionedThroughputOverride": {"ReadCapacityUnits": 3}
                }],
                "TableClassOverride": "STANDARD_INFREQUENT_ACCESS"
            }}]),
        ),
    );
    let b_entry = json!({
        "RegionName": B,
        "ProvisionedThroughputOverride": {"ReadCapacityUnits": 7},
        "GlobalSecondaryIndexes": [{
            "IndexName": "ByG",
            "ProvisionedThroughputOverride": {"ReadCapacityUnits": 3}
        }],
        "ReplicaTableClassSummary": {"TableClass": "STANDARD_INFREQUENT_ACCESS"}
    });
    let mut creating = b_entry.clone();
    creating["ReplicaStatus"] = json!("CREATING");
    assert_eq!(
        without_class_times(answer["TableDescription"]["Replicas"].clone()),
        json!([creating])
    );
    settle(&db);
    let mut active = b_entry.clone();
    active["ReplicaStatus"] = json!("ACTIVE");
    assert_eq!(
        without_class_times(describe(&db, A, "Orders")["Replicas"].clone()),
        json!([active])
    );
    // A overrides nothing: B sees only its name and status.
    assert_eq!(
        describe(&db, B, "Orders")["Replicas"],
        json!([{"RegionName": A, "ReplicaStatus": "ACTIVE"}])
    );
    // The group's own throughput is unchanged in both Regions (the override is B's reads).
    assert_group_throughput(&db, "Orders", &[A, B], (10, 5));

    // A third member created without overrides shows none, from either Region.
    add_replica(&db, A, "Orders", C);
    settle(&db);
    let from_b = describe(&db, B, "Orders")["Replicas"].clone();
    assert_eq!(
        from_b,
        json!([
            {"RegionName": A, "ReplicaStatus": "ACTIVE"},
            {"RegionName": C, "ReplicaStatus": "ACTIVE"}
        ])
    );
}

#[test]
fn overrides_are_checked_with_update_tables_rules_and_texts() {
    let db = open();
    create_provisioned(&db, A, "Prov");
    create_table(&db, A, "Ondemand");
    let create = |table: &str, settings: Value| {
        let mut action = json!({"RegionName": B});
        action
            .as_object_mut()
            .unwrap()
            .extend(settings.as_object().unwrap().clone());
        refused(&db, A, &replica_updates(table, json!([{"Create": action}])))
    };
    assert_eq!(
        create("Ondemand", json!({"ProvisionedThroughputOverride": {"ReadCapacityUnits": 5}})),
        validation("One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
    );
    assert_eq!(
        create(
            "Ondemand",
            json!({"GlobalSecondaryIndexes": [{"IndexName": "ByG", "ProvisionedThroughputOverride": {"ReadCapacityUnits": 5}}]})
        ),
        validation("One or more parameter values were invalid: ProvisionedThroughput should not be specified for index: ByG when BillingMode is PAY_PER_REQUEST")
    );
    assert_eq!(
        create("Prov", json!({"OnDemandThroughputOverride": {"MaxReadRequestUnits": 5}})),
        validation("One or more parameter values were invalid: MaxReadRequestUnits for OnDemandThroughput cannot be specified when the table BillingMode is PROVISIONED")
    );
    assert_eq!(
        create("Ondemand", json!({"OnDemandThroughputOverride": {"MaxReadRequestUnits": 0}})),
        validation("One or more parameter values were invalid: Requested MaxReadRequestUnits for OnDemandThroughput for table is outside of valid range")
    );
    assert_eq!(
        create(
            "Prov",
            json!({"GlobalSecondaryIndexes": [{"IndexName": "Nope", "ProvisionedThroughputOverride": {"ReadCapacityUnits": 5}}]})
        ),
        (
            "ResourceNotFoundException".to_string(),
            "Requested resource not found: Index: Nope not found".to_string()
        )
    );
    assert_eq!(
        create(
            "Prov",
            json!({"GlobalSecondaryIndexes": [
                {"IndexName": "ByG", "ProvisionedThroughputOverride": {"ReadCapacityUnits": 5}},
                {"IndexName": "ByG", "ProvisionedThroughputOverride": {"ReadCapacityUnits": 6}}
            ]})
        ),
        validation("One or more parameter values were invalid: Duplicate index name: ByG")
    );
    assert_eq!(
        create("Prov", json!({"TableClassOverride": "GLACIER"})),
        validation("Invalid table-class parameter provided. Please try again with a valid table-class value: [STANDARD, STANDARD_INFREQUENT_ACCESS].")
    );
    assert_eq!(
        create(
            "Prov",
            json!({"ProvisionedThroughputOverride": {"ReadCapacityUnits": 0}, "GlobalSecondaryIndexes": [{}]})
        ),
        validation("2 validation errors detected: Value '0' at 'replicaUpdates.1.member.create.provisionedThroughputOverride.readCapacityUnits' failed to satisfy constraint: Member must have value greater than or equal to 1; Value null at 'replicaUpdates.1.member.create.globalSecondaryIndexes.1.member.indexName' failed to satisfy constraint: Member must not be null")
    );
    let (code, message) = create("Prov", json!({"KMSMasterKeyId": "alias/mine"}));
    assert_eq!(code, "ValidationException");
    assert!(
        message.starts_with("Shoal does not support KMSMasterKeyId"),
        "{message}"
    );
    let (code, _) = create("Prov", json!({"ProvisionedThroughputOverride": 5}));
    assert_eq!(code, "SerializationException");
    // Nothing was created by any of them.
    for table in ["Prov", "Ondemand"] {
        assert!(describe(&db, A, table).get("Replicas").is_none(), "{table}");
    }

    // Update: the texts that were already there stay.
    add_replica(&db, A, "Prov", B);
    settle(&db);
    assert_eq!(
        refused(
            &db,
            A,
            &replica_updates("Prov", json!([{"Update": {"RegionName": B}}]))
        ),
        validation("There are no actions specified in the Replica Update Action of the request.")
    );
    assert_eq!(
        refused(
            &db,
            A,
            &replica_updates(
                "Prov",
                json!([{"Update": {"RegionName": C, "TableClassOverride": "STANDARD"}}])
            )
        ),
        validation("Update global table operation failed because one or more replicas were not part of the global table. Please retry the request without these replicas: [ap-south-1].")
    );
    assert_eq!(
        refused(
            &db,
            A,
            &replica_updates(
                "Prov",
                json!([{"Update": {"RegionName": B, "OnDemandThroughputOverride": {"MaxReadRequestUnits": 9}}}])
            )
        ),
        validation("One or more parameter values were invalid: MaxReadRequestUnits for OnDemandThroughput cannot be specified when the table BillingMode is PROVISIONED")
    );
    assert_eq!(
        refused(
            &db,
            A,
            &replica_updates(
                "Prov",
                json!([
                    {"Update": {"RegionName": B, "TableClassOverride": "STANDARD"}},
                    {"Delete": {"RegionName": B}}
                ])
            )
        ),
        validation(
            "Update table operation with more than one type of replica actions not allowed."
        )
    );
    // A regional table has no members to update.
    assert_eq!(
        refused(
            &db,
            A,
            &replica_updates(
                "Ondemand",
                json!([{"Update": {"RegionName": B, "TableClassOverride": "STANDARD"}}])
            )
        ),
        validation("Update global table operation failed because one or more replicas were not part of the global table. Please retry the request without these replicas: [eu-west-1].")
    );
    assert_eq!(
        describe(&db, A, "Prov")["Replicas"],
        json!([{"RegionName": B, "ReplicaStatus": "ACTIVE"}])
    );
}

#[test]
fn an_update_changes_only_what_it_names_and_answers_updating() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    let update = |region: &str, action: Value| {
        ok(
            &db,
            region,
            "UpdateTable",
            &replica_updates("Orders", json!([{ "Update": action }])),
        )["TableDescription"]
            .clone()
    };
    let answer = update(
        A,
        json!({
            "RegionName": B,
            "OnDemandThroughputOverride": {"MaxReadRequestUnits": 50},
            "GlobalSecondaryIndexes": [{"IndexName": "ByG", "OnDemandThroughputOverride": {"MaxReadRequestUnits": 20}}]
        }),
    );
    assert_eq!(answer["TableStatus"], "UPDATING");
    assert_eq!(answer["Replicas"][0]["ReplicaStatus"], "UPDATING");
    // Without a transient-status delay the member is ACTIVE at once.
    assert_eq!(
        describe(&db, A, "Orders")["Replicas"],
        json!([{
            "RegionName": B,
            "ReplicaStatus": "ACTIVE",
            "OnDemandThroughputOverride": {"MaxReadRequestUnits": 50},
            "GlobalSecondaryIndexes": [{"IndexName": "ByG", "OnDemandThroughputOverride": {"MaxReadRequestUnits": 20}}]
        }])
    );
    // From B's own endpoint, a class only: the read caps stay; -1 removes the GSI's.
    update(
        B,
        json!({
            "RegionName": B,
            "TableClassOverride": "STANDARD",
            "GlobalSecondaryIndexes": [{"IndexName": "ByG", "OnDemandThroughputOverride": {"MaxReadRequestUnits": -1}}]
        }),
    );
    assert_eq!(
        without_class_times(describe(&db, A, "Orders")["Replicas"].clone()),
        json!([{
            "RegionName": B,
            "ReplicaStatus": "ACTIVE",
            "OnDemandThroughputOverride": {"MaxReadRequestUnits": 50},
            "ReplicaTableClassSummary": {"TableClass": "STANDARD"}
        }])
    );
    // Overrides set on A are what B shows for A.
    update(
        B,
        json!({"RegionName": A, "OnDemandThroughputOverride": {"MaxReadRequestUnits": 70}}),
    );
    assert_eq!(
        describe(&db, B, "Orders")["Replicas"],
        json!([{
            "RegionName": A,
            "ReplicaStatus": "ACTIVE",
            "OnDemandThroughputOverride": {"MaxReadRequestUnits": 70}
        }])
    );
    // The group's own settings never moved.
    for region in [A, B] {
        let table = describe(&db, region, "Orders");
        assert_eq!(
            table["BillingModeSummary"]["BillingMode"],
            "PAY_PER_REQUEST"
        );
        assert!(table.get("TableClassSummary").is_none(), "{region}");
    }
}

#[test]
fn an_updated_member_is_updating_while_the_transient_delay_lasts() {
    // The group is formed without a delay; reopened with one no test outlives (transitions
    // live in memory, so the reopen starts with none): what is checked is the recorded
    // state, never its end.
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), disk_options(Duration::ZERO)).unwrap();
        create_table(&db, A, "Orders");
        add_replica(&db, A, "Orders", B);
        settle(&db);
    }
    let db = Database::open(dir.path(), disk_options(Duration::from_secs(3600))).unwrap();
    settle(&db);
    assert_eq!(
        describe(&db, A, "Orders")["Replicas"][0]["ReplicaStatus"],
        "ACTIVE"
    );
    ok(
        &db,
        B,
        "UpdateTable",
        &replica_updates(
            "Orders",
            json!([{"Update": {"RegionName": B, "TableClassOverride": "STANDARD"}}]),
        ),
    );
    assert_eq!(
        describe(&db, A, "Orders")["Replicas"][0]["ReplicaStatus"],
        "UPDATING"
    );
    // The caller's table is UPDATING too, and refuses a second change meanwhile.
    assert_eq!(describe(&db, B, "Orders")["TableStatus"], "UPDATING");
    let (code, _) = refused(
        &db,
        B,
        &replica_updates(
            "Orders",
            json!([{"Update": {"RegionName": B, "TableClassOverride": "STANDARD"}}]),
        ),
    );
    assert_eq!(code, "ResourceInUseException");
}

/// Asserts table `name`'s own ProvisionedThroughput is `(read, write)` units in every Region
/// of `regions`.
pub(crate) fn assert_group_throughput(
    db: &Database,
    name: &str,
    regions: &[&str],
    (read, write): (u64, u64),
) {
    for region in regions {
        let throughput = describe(db, region, name)["ProvisionedThroughput"].clone();
        assert_eq!(throughput["ReadCapacityUnits"], read, "{region}");
        assert_eq!(throughput["WriteCapacityUnits"], write, "{region}");
    }
}

/// Options of a database on disk, with transient statuses lasting `delay`.
pub(crate) fn disk_options(delay: Duration) -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::Sync,
            ..StorageOptions::default()
        },
        replication: ReplicationOptions {
            lag: Lag::fixed(Duration::ZERO),
        },
        emulation: EmulationOptions {
            transient_status_delay: delay,
            ..EmulationOptions::default()
        },
        ..Options::default()
    }
}

#[test]
fn a_members_reads_are_limited_by_its_own_override() {
    let now = Arc::new(AtomicU64::new(1_800_000_000_000));
    let clock_now = Arc::clone(&now);
    let db = Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        emulation: EmulationOptions {
            capacity: CapacityMode::Enforce,
            ..EmulationOptions::default()
        },
        replication: ReplicationOptions {
            lag: Lag::fixed(Duration::ZERO),
        },
        clock: Clock::from_fn(move || clock_now.load(Ordering::SeqCst)),
        ..Options::default()
    })
    .unwrap();
    create_provisioned(&db, A, "Orders");
    ok(
        &db,
        A,
        "UpdateTable",
        &replica_updates(
            "Orders",
            json!([{"Create": {"RegionName": B, "ProvisionedThroughputOverride": {"ReadCapacityUnits": 1}}}]),
        ),
    );
    settle(&db);
    let read = |region: &str| {
        call(
            &db,
            region,
            "GetItem",
            &json!({"TableName": "Orders", "Key": {"pk": {"S": "k"}}, "ConsistentRead": true}),
        )
    };
    // B's bucket: 300 s of 1 RCU. A strongly consistent read of nothing costs one unit.
    for n in 0..300 {
        read(B).unwrap_or_else(|e| panic!("read {n} in B: {e:?}"));
    }
    let (code, message) = read(B).unwrap_err();
    assert_eq!(code, "ProvisionedThroughputExceededException");
    assert_eq!(message, PROVISIONED_EXCEEDED_MESSAGE);
    // A's reads have A's own bucket, at the table's 10 RCU (3,000 units of burst).
    for n in 0..400 {
        read(A).unwrap_or_else(|e| panic!("read {n} in A: {e:?}"));
    }
    // A second gives B one unit back.
    now.fetch_add(1_000, Ordering::SeqCst);
    read(B).unwrap();
}

#[test]
fn overrides_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let options = || disk_options(Duration::ZERO);
    let expected = json!([{
        "RegionName": B,
        "ReplicaStatus": "ACTIVE",
        "ProvisionedThroughputOverride": {"ReadCapacityUnits": 8},
        "GlobalSecondaryIndexes": [{"IndexName": "ByG", "ProvisionedThroughputOverride": {"ReadCapacityUnits": 2}}],
        "ReplicaTableClassSummary": {"TableClass": "STANDARD_INFREQUENT_ACCESS"}
    }]);
    let before = {
        let db = Database::open(dir.path(), options()).unwrap();
        create_provisioned(&db, A, "Orders");
        ok(
            &db,
            A,
            "UpdateTable",
            &replica_updates(
                "Orders",
                json!([{"Create": {"RegionName": B, "ProvisionedThroughputOverride": {"ReadCapacityUnits": 8}}}]),
            ),
        );
        settle(&db);
        ok(
            &db,
            A,
            "UpdateTable",
            &replica_updates(
                "Orders",
                json!([{"Update": {
                    "RegionName": B,
                    "GlobalSecondaryIndexes": [{"IndexName": "ByG", "ProvisionedThroughputOverride": {"ReadCapacityUnits": 2}}],
                    "TableClassOverride": "STANDARD_INFREQUENT_ACCESS"
                }}]),
            ),
        );
        let replicas = describe(&db, A, "Orders")["Replicas"].clone();
        assert_eq!(without_class_times(replicas.clone()), expected);
        replicas
    };
    let db = Database::open(dir.path(), options()).unwrap();
    assert_eq!(describe(&db, A, "Orders")["Replicas"], before);
}

#[test]
fn a_class_overrides_time_is_that_of_its_last_change() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    let set_class = |class: &str| {
        ok(
            &db,
            A,
            "UpdateTable",
            &replica_updates(
                "Orders",
                json!([{"Update": {"RegionName": B, "TableClassOverride": class}}]),
            ),
        );
        describe(&db, A, "Orders")["Replicas"][0]["ReplicaTableClassSummary"]["LastUpdateDateTime"]
            .as_f64()
            .unwrap()
    };
    let seconds_now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let before = seconds_now();
    let first = set_class("STANDARD_INFREQUENT_ACCESS");
    assert!(
        first >= before - 0.001 && first <= seconds_now() + 0.001,
        "{first}"
    );
    std::thread::sleep(Duration::from_millis(20));
    // The same class again is no change: the time stays.
    assert_eq!(set_class("STANDARD_INFREQUENT_ACCESS"), first);
    // Another class moves it.
    assert!(set_class("STANDARD") > first);
    // The neighbour: the member's own table never named a class, so it has no summary.
    assert!(describe(&db, B, "Orders")
        .get("TableClassSummary")
        .is_none());
}
