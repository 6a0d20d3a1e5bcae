//! Global tables (SPEC-3 §2): UpdateTable `ReplicaUpdates` and its texts, DescribeTable's
//! members, replicas kept per Region, asynchronous replication with last writer wins,
//! backfill of a new replica, each Region's stream, cut and healed Regions.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use shoal_tables::{Database, Durability, Lag, Options, ReplicationOptions, StorageOptions};

const A: &str = "us-east-1";
const B: &str = "eu-west-1";
const C: &str = "ap-south-1";

pub(crate) fn options(lag: Lag) -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        replication: ReplicationOptions { lag },
        ..Options::default()
    }
}

pub(crate) fn open() -> Database {
    Database::open_in_memory(options(Lag::fixed(Duration::ZERO))).unwrap()
}

pub(crate) fn call(
    db: &Database,
    region: &str,
    operation: &str,
    request: &Value,
) -> Result<Value, (String, String)> {
    match db.execute_json_text_in_region(Some(region), operation, request.to_string().as_bytes()) {
        Ok(answer) => Ok(serde_json::from_slice(&answer).unwrap()),
        Err(error) => Err((format!("{:?}", error.code), error.message)),
    }
}

pub(crate) fn ok(db: &Database, region: &str, operation: &str, request: &Value) -> Value {
    call(db, region, operation, request)
        .unwrap_or_else(|e| panic!("{operation} in {region}: {e:?}"))
}

fn refused(db: &Database, region: &str, operation: &str, request: &Value) -> (String, String) {
    match call(db, region, operation, request) {
        Ok(answer) => panic!("{operation} in {region} answered {answer}"),
        Err(error) => error,
    }
}

pub(crate) fn create_table(db: &Database, region: &str, name: &str) {
    create_table_billed(db, region, name, None);
}

/// Table `name` (pk, GSI ByG on g) on demand, or PROVISIONED with `(table, GSI)`
/// ProvisionedThroughput values.
pub(crate) fn create_table_billed(
    db: &Database,
    region: &str,
    name: &str,
    provisioned: Option<(Value, Value)>,
) {
    let mut request = json!({
        "TableName": name,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"}
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "GlobalSecondaryIndexes": [{
            "IndexName": "ByG",
            "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"}
        }],
        "BillingMode": "PAY_PER_REQUEST"
    });
    if let Some((table, index)) = provisioned {
        request["BillingMode"] = json!("PROVISIONED");
        request["ProvisionedThroughput"] = table;
        request["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] = index;
    }
    ok(db, region, "CreateTable", &request);
}

pub(crate) fn add_replica(db: &Database, region: &str, name: &str, target: &str) -> Value {
    ok(
        db,
        region,
        "UpdateTable",
        &json!({"TableName": name, "ReplicaUpdates": [{"Create": {"RegionName": target}}]}),
    )
}

pub(crate) fn put(db: &Database, region: &str, name: &str, pk: &str, value: &str) {
    ok(
        db,
        region,
        "PutItem",
        &json!({"TableName": name, "Item": {"pk": {"S": pk}, "g": {"S": "x"}, "v": {"S": value}}}),
    );
}

pub(crate) fn get(db: &Database, region: &str, name: &str, pk: &str) -> Option<String> {
    let answer = ok(
        db,
        region,
        "GetItem",
        &json!({"TableName": name, "Key": {"pk": {"S": pk}}, "ConsistentRead": true}),
    );
    answer["Item"]["v"]["S"].as_str().map(str::to_string)
}

/// Polls until `condition` holds (generous bound: a loaded machine may be slow, the
/// assertion is on state, never on time).
pub(crate) fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub(crate) fn settle(db: &Database) {
    wait_until("replication to settle", || {
        db.replication_settled().unwrap()
    });
}

pub(crate) fn describe(db: &Database, region: &str, name: &str) -> Value {
    ok(db, region, "DescribeTable", &json!({"TableName": name}))["Table"].clone()
}

#[test]
fn a_replica_is_a_table_of_its_region_and_describe_shows_the_other_members() {
    let db = open();
    create_table(&db, A, "Orders");
    let regional = describe(&db, A, "Orders");
    for member in [
        "GlobalTableVersion",
        "Replicas",
        "GlobalTableSettingsReplicationMode",
    ] {
        assert!(
            regional.get(member).is_none(),
            "{member} on a regional table"
        );
    }
    let answer = add_replica(&db, A, "Orders", B);
    let table = &answer["TableDescription"];
    assert_eq!(table["TableStatus"], "UPDATING");
    assert_eq!(table["GlobalTableVersion"], "2019.11.21");
    assert_eq!(
        table["GlobalTableSettingsReplicationMode"],
        "ENABLED_WITH_OVERRIDES"
    );
    assert_eq!(table["Replicas"][0]["RegionName"], B);
    // The source had no stream: it has NEW_AND_OLD_IMAGES now.
    assert_eq!(
        table["StreamSpecification"]["StreamViewType"],
        "NEW_AND_OLD_IMAGES"
    );
    settle(&db);

    let in_a = describe(&db, A, "Orders");
    assert_eq!(
        in_a["Replicas"],
        json!([{"RegionName": B, "ReplicaStatus": "ACTIVE"}])
    );
    let in_b = describe(&db, B, "Orders");
    assert_eq!(
        in_b["Replicas"],
        json!([{"RegionName": A, "ReplicaStatus": "ACTIVE"}])
    );
    assert_ne!(in_a["TableId"], in_b["TableId"]);
    assert_eq!(
        in_b["TableArn"],
        format!("arn:aws:dynamodb:{B}:000000000000:table/Orders")
    );
    assert_eq!(in_b["GlobalSecondaryIndexes"][0]["IndexName"], "ByG");
    assert_eq!(
        in_b["StreamSpecification"]["StreamViewType"],
        "NEW_AND_OLD_IMAGES"
    );

    // A Region outside the group has no such table, and may create its own.
    let (code, _) = refused(&db, C, "DescribeTable", &json!({"TableName": "Orders"}));
    assert_eq!(code, "ResourceNotFoundException");
    let listed = |region| ok(&db, region, "ListTables", &json!({}))["TableNames"].clone();
    assert_eq!(listed(A), json!(["Orders"]));
    assert_eq!(listed(B), json!(["Orders"]));
    assert_eq!(listed(C), json!([]));
    create_table(&db, C, "Orders");
    assert_eq!(listed(C), json!(["Orders"]));
    assert!(describe(&db, C, "Orders").get("Replicas").is_none());

    // Disabling the stream of a member is refused.
    let (_, message) = refused(
        &db,
        B,
        "UpdateTable",
        &json!({"TableName": "Orders", "StreamSpecification": {"StreamEnabled": false}}),
    );
    assert_eq!(
        message,
        "One or more parameter values were invalid: Disabling Stream is not allowed for a Global Table replica."
    );
}

#[test]
fn replica_updates_are_checked_with_dynamodbs_texts() {
    let db = open();
    create_table(&db, A, "Tbl1");
    let update = |region: &str, updates: Value, extra: Value| {
        let mut request = json!({"TableName": "Tbl1", "ReplicaUpdates": updates});
        if let Value::Object(extra) = extra {
            request.as_object_mut().unwrap().extend(extra);
        }
        refused(&db, region, "UpdateTable", &request)
    };
    let validation = |message: &str| ("ValidationException".to_string(), message.to_string());
    assert_eq!(
        update(A, json!([{"Create": {"RegionName": B}}]), json!({"DeletionProtectionEnabled": true})),
        validation("One or more parameter values were invalid: Replica modification must be the only operation in the request")
    );
    assert_eq!(
        update(A, json!([{"Create": {"RegionName": B}}, {"Create": {"RegionName": C}}]), json!(null)),
        validation("Update table operation with more than one create or delete replica actions not allowed")
    );
    assert_eq!(
        update(
            A,
            json!([{"Create": {"RegionName": B}}, {"Delete": {"RegionName": C}}]),
            json!(null)
        ),
        validation(
            "Update table operation with more than one type of replica actions not allowed."
        )
    );
    assert_eq!(
        update(A, json!([{"Update": {"RegionName": B}}]), json!(null)),
        validation("There are no actions specified in the Replica Update Action of the request.")
    );
    assert_eq!(
        update(A, json!([{"Create": {"RegionName": A}}]), json!(null)),
        validation("Cannot add or delete the local region through ReplicaUpdates. Use CreateTable, DeleteTable, or UpdateTable as required.")
    );
    let (code, message) = update(
        A,
        json!([{"Create": {"RegionName": "mars-north-1"}}]),
        json!(null),
    );
    assert_eq!(code, "ValidationException");
    assert!(
        message.starts_with("Region mars-north-1 is not supported. The latest version of global tables are only supported in the following regions: [us-east-1, "),
        "{message}"
    );
    assert_eq!(
        update(A, json!([{"Delete": {"RegionName": B}}]), json!(null)),
        validation("Update global table operation failed because one or more replicas were not part of the global table. Please retry the request without these replicas: [eu-west-1].")
    );
    let (code, message) = update(A, json!([{"Create": {}}]), json!(null));
    assert_eq!(code, "ValidationException");
    assert!(
        message.contains("replicaUpdates.1.member.create.regionName"),
        "{message}"
    );
    let (_, message) = update(
        A,
        json!([{"Create": {"RegionName": B}}]),
        json!({"MultiRegionConsistency": "STRONG"}),
    );
    // STRONG forms a group of three Regions (`global_tables_strong`).
    assert!(
        message.starts_with("Unsupported replica count 2"),
        "{message}"
    );
    // Nothing changed.
    assert!(describe(&db, A, "Tbl1").get("Replicas").is_none());

    // Two identical Creates are one.
    ok(
        &db,
        A,
        "UpdateTable",
        &json!({"TableName": "Tbl1", "ReplicaUpdates": [
            {"Create": {"RegionName": B}}, {"Create": {"RegionName": B}}
        ]}),
    );
    settle(&db);
    assert_eq!(
        update(A, json!([{"Create": {"RegionName": B}}]), json!(null)),
        validation("Failed to create a the new replica of table with name: \u{2018}Tbl1\u{2019} because one or more replicas already existed as tables.")
    );
    // A Region holding a same-name table cannot get a replica.
    create_table(&db, C, "Tbl1");
    assert_eq!(
        update(B, json!([{"Create": {"RegionName": C}}]), json!(null)),
        validation("Failed to create a the new replica of table with name: \u{2018}Tbl1\u{2019} because one or more replicas already existed as tables.")
    );
    // Deletion protection is per Region.
    ok(
        &db,
        B,
        "UpdateTable",
        &json!({"TableName": "Tbl1", "DeletionProtectionEnabled": true}),
    );
    assert_eq!(describe(&db, A, "Tbl1")["DeletionProtectionEnabled"], false);
    assert_eq!(
        update(A, json!([{"Delete": {"RegionName": B}}]), json!(null)),
        validation("Cannot delete table Tbl1 in region eu-west-1 because it has deletion protection enabled. Disable deletion protection first.")
    );
    let (_, message) = refused(&db, B, "DeleteTable", &json!({"TableName": "Tbl1"}));
    assert_eq!(message, "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.");
}

#[test]
fn writes_replicate_both_ways_and_each_region_streams_its_own_images() {
    let db = open();
    create_table(&db, A, "Orders");
    put(&db, A, "Orders", "before", "old");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    // Backfilled.
    assert_eq!(get(&db, B, "Orders", "before").as_deref(), Some("old"));

    put(&db, A, "Orders", "a1", "from-a");
    put(&db, B, "Orders", "b1", "from-b");
    ok(
        &db,
        B,
        "DeleteItem",
        &json!({"TableName": "Orders", "Key": {"pk": {"S": "before"}}}),
    );
    settle(&db);
    for region in [A, B] {
        assert_eq!(get(&db, region, "Orders", "a1").as_deref(), Some("from-a"));
        assert_eq!(get(&db, region, "Orders", "b1").as_deref(), Some("from-b"));
        assert_eq!(get(&db, region, "Orders", "before"), None);
        // The replica's indexes hold the replicated items.
        let query = ok(
            &db,
            region,
            "Query",
            &json!({
                "TableName": "Orders", "IndexName": "ByG",
                "KeyConditionExpression": "g = :g",
                "ExpressionAttributeValues": {":g": {"S": "x"}}
            }),
        );
        assert_eq!(query["Count"], 2, "{region}");
        assert_eq!(describe(&db, region, "Orders")["ItemCount"], 2, "{region}");
    }

    // B's stream: the backfilled insert, A's write, its own write and delete, once each
    // (A's write reaches B whenever its lag ends, so only "before" has a fixed order).
    let events = stream_events(&db, B, "Orders");
    let before: Vec<&String> = events
        .iter()
        .filter(|(_, pk)| pk == "before")
        .map(|(name, _)| name)
        .collect();
    assert_eq!(before, ["INSERT", "REMOVE"]);
    let mut sorted = events.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            ("INSERT".to_string(), "a1".to_string()),
            ("INSERT".to_string(), "b1".to_string()),
            ("INSERT".to_string(), "before".to_string()),
            ("REMOVE".to_string(), "before".to_string()),
        ]
    );
    // A's stream began with the group: "before" was written before it.
    let mut sorted = stream_events(&db, A, "Orders");
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            ("INSERT".to_string(), "a1".to_string()),
            ("INSERT".to_string(), "b1".to_string()),
            ("REMOVE".to_string(), "before".to_string()),
        ]
    );
}

/// (eventName, pk) of every record of the table's stream in `region`, in order.
pub(crate) fn stream_events(db: &Database, region: &str, name: &str) -> Vec<(String, String)> {
    let arn = describe(db, region, name)["LatestStreamArn"]
        .as_str()
        .unwrap()
        .to_string();
    let stream = ok(db, region, "DescribeStream", &json!({"StreamArn": arn}));
    let mut events = Vec::new();
    for shard in stream["StreamDescription"]["Shards"].as_array().unwrap() {
        let iterator = ok(
            db,
            region,
            "GetShardIterator",
            &json!({
                "StreamArn": arn, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"
            }),
        )["ShardIterator"]
            .clone();
        let records = ok(
            db,
            region,
            "GetRecords",
            &json!({"ShardIterator": iterator}),
        );
        for record in records["Records"].as_array().unwrap() {
            assert!(record.get("userIdentity").is_none(), "{record}");
            events.push((
                record["eventName"].as_str().unwrap().to_string(),
                record["dynamodb"]["Keys"]["pk"]["S"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ));
        }
    }
    events
}

#[test]
fn a_cut_region_queues_and_last_writer_wins_after_the_heal() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    db.cut_region(B);
    put(&db, A, "Orders", "x", "a-first");
    put(&db, B, "Orders", "x", "b-later");
    put(&db, A, "Orders", "y", "only-a");
    // Writes go on; the queues grow and nothing crosses.
    let backlog = |from: &str| {
        db.replication_links()
            .unwrap()
            .into_iter()
            .find(|link| link.from == from)
            .unwrap()
            .backlog
    };
    assert_eq!(backlog(A), 2);
    assert_eq!(backlog(B), 1);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(get(&db, B, "Orders", "y"), None);
    assert_eq!(get(&db, A, "Orders", "x").as_deref(), Some("a-first"));
    db.heal_region(B);
    settle(&db);
    for region in [A, B] {
        assert_eq!(
            get(&db, region, "Orders", "x").as_deref(),
            Some("b-later"),
            "{region}"
        );
        assert_eq!(
            get(&db, region, "Orders", "y").as_deref(),
            Some("only-a"),
            "{region}"
        );
    }
}

#[test]
fn deleting_a_replica_leaves_a_regional_table_and_the_region_may_join_again() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    // Any member may add a replica.
    add_replica(&db, B, "Orders", C);
    settle(&db);
    assert_eq!(
        describe(&db, A, "Orders")["Replicas"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // DeleteTable in one Region deletes that replica only.
    ok(&db, C, "DeleteTable", &json!({"TableName": "Orders"}));
    assert_eq!(
        describe(&db, B, "Orders")["Replicas"],
        json!([{"RegionName": A, "ReplicaStatus": "ACTIVE"}])
    );
    db.cut_region(B);
    put(&db, A, "Orders", "queued", "for-b");
    ok(
        &db,
        A,
        "UpdateTable",
        &json!({"TableName": "Orders", "ReplicaUpdates": [{"Delete": {"RegionName": B}}]}),
    );
    db.heal_region(B);
    let a = describe(&db, A, "Orders");
    for member in [
        "GlobalTableVersion",
        "Replicas",
        "GlobalTableSettingsReplicationMode",
    ] {
        assert!(
            a.get(member).is_none(),
            "{member} after the last replica left"
        );
    }
    // The stream stays enabled.
    assert_eq!(a["StreamSpecification"]["StreamEnabled"], true);
    let (code, _) = refused(&db, B, "DescribeTable", &json!({"TableName": "Orders"}));
    assert_eq!(code, "ResourceNotFoundException");
    // B joins again: it gets the items, and nothing queued for the table it had before.
    add_replica(&db, A, "Orders", B);
    settle(&db);
    assert_eq!(get(&db, B, "Orders", "queued").as_deref(), Some("for-b"));
    assert_eq!(
        stream_events(&db, B, "Orders"),
        vec![("INSERT".to_string(), "queued".to_string())]
    );
}

#[test]
fn replication_waits_for_its_lag_and_the_lag_changes_at_run_time() {
    let db = Database::open_in_memory(options(Lag::fixed(Duration::from_secs(60)))).unwrap();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    put(&db, A, "Orders", "k", "v");
    std::thread::sleep(Duration::from_millis(100));
    // A minute's lag: still queued.
    assert_eq!(get(&db, B, "Orders", "k"), None);
    let link = db
        .replication_links()
        .unwrap()
        .into_iter()
        .find(|l| l.from == A)
        .unwrap();
    assert_eq!(link.backlog, 1);
    assert!(link.lag >= Duration::from_millis(100), "{link:?}");
    db.set_replication_lag(Lag::fixed(Duration::ZERO));
    settle(&db);
    assert_eq!(get(&db, B, "Orders", "k").as_deref(), Some("v"));
}

#[test]
fn settings_replication_mode_is_set_on_a_regional_table_and_refused_on_a_member() {
    let db = open();
    create_table(&db, A, "Solo");
    // Never set: DescribeTable of a regional table has no mode.
    assert!(describe(&db, A, "Solo")
        .get("GlobalTableSettingsReplicationMode")
        .is_none());
    let set = |table: &str, mode: &str| {
        call(
            &db,
            A,
            "UpdateTable",
            &json!({"TableName": table, "GlobalTableSettingsReplicationMode": mode}),
        )
    };
    for mode in ["ENABLED", "DISABLED"] {
        let answer = set("Solo", mode).unwrap();
        assert_eq!(
            answer["TableDescription"]["GlobalTableSettingsReplicationMode"],
            mode
        );
        assert_eq!(
            describe(&db, A, "Solo")["GlobalTableSettingsReplicationMode"],
            mode
        );
        // A regional table stays regional.
        assert!(describe(&db, A, "Solo").get("GlobalTableVersion").is_none());
    }
    // A bad value: the enum's member-constraint text; the model's third value is what
    // groups report, not something to set.
    assert_eq!(
        set("Solo", "ON").unwrap_err(),
        (
            "ValidationException".to_string(),
            "1 validation error detected: Value 'ON' at 'globalTableSettingsReplicationMode' failed to satisfy constraint: Member must satisfy enum value set: [ENABLED, DISABLED, ENABLED_WITH_OVERRIDES]".to_string()
        )
    );
    assert_eq!(
        set("Solo", "ENABLED_WITH_OVERRIDES").unwrap_err().1,
        "One or more parameter values were invalid: GlobalTableSettingsReplicationMode can only be set to ENABLED or DISABLED on a regional table"
    );
    // Beside another change.
    let (code, message) = call(
        &db,
        A,
        "UpdateTable",
        &json!({"TableName": "Solo", "GlobalTableSettingsReplicationMode": "ENABLED", "DeletionProtectionEnabled": true}),
    )
    .unwrap_err();
    assert_eq!(code, "ValidationException");
    assert_eq!(message, "One or more parameter values were invalid: GlobalTableSettingsReplicationMode modification must be the only operation in the request");
    assert_eq!(
        describe(&db, A, "Solo")["GlobalTableSettingsReplicationMode"],
        "DISABLED"
    );

    // A member of a group refuses it and keeps reporting the group's mode.
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    let (code, message) = set("Orders", "DISABLED").unwrap_err();
    assert_eq!(code, "ValidationException");
    assert_eq!(message, "One or more parameter values were invalid: GlobalTableSettingsReplicationMode can only be set on a regional table: a replica of a global table reports ENABLED_WITH_OVERRIDES");
    assert_eq!(
        describe(&db, A, "Orders")["GlobalTableSettingsReplicationMode"],
        "ENABLED_WITH_OVERRIDES"
    );
}
