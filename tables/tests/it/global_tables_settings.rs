//! Settings a global table shares (SPEC-3 §2.1): Time to Live, GSI creation and deletion,
//! billing mode, throughput, on-demand caps and the table class, changed from any member,
//! reach every member (each building its own index or expiry index from its own items);
//! per-replica overrides stay; tags, point-in-time recovery, deletion protection,
//! Contributor Insights and resource policies stay with their member; a change waits while
//! a member is being added; every member keeps the change through a reopen.

use std::time::Duration;

use serde_json::{json, Value};
use shoal_tables::Database;

use crate::global_tables::{
    add_replica, call, create_table, create_table_billed, ok, open, put, settle, wait_until,
};
use crate::global_tables_overrides::disk_options;

const A: &str = "us-east-1";
const B: &str = "eu-west-1";
const C: &str = "ap-south-1";

fn describe(db: &Database, region: &str) -> Value {
    crate::global_tables::describe(db, region, "Orders")
}

/// UpdateTimeToLive of `table` on attribute `expires`.
fn time_to_live_request(table: &str, enabled: bool) -> Value {
    json!({"TableName": table, "TimeToLiveSpecification": {"Enabled": enabled, "AttributeName": "expires"}})
}

fn time_to_live(db: &Database, region: &str) -> Value {
    ok(
        db,
        region,
        "DescribeTimeToLive",
        &json!({"TableName": "Orders"}),
    )["TimeToLiveDescription"]
        .clone()
}

fn update_table(db: &Database, region: &str, request: Value) -> Value {
    let mut request = request;
    request["TableName"] = json!("Orders");
    ok(db, region, "UpdateTable", &request)
}

fn index_names(table: &Value) -> Vec<String> {
    table["GlobalSecondaryIndexes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|gsi| gsi["IndexName"].as_str().unwrap().to_string())
        .collect()
}

fn index_status(db: &Database, region: &str, index: &str) -> Option<String> {
    describe(db, region)["GlobalSecondaryIndexes"]
        .as_array()?
        .iter()
        .find(|gsi| gsi["IndexName"] == index)
        .map(|gsi| gsi["IndexStatus"].as_str().unwrap().to_string())
}

/// Every index of every member ACTIVE and the replication queues empty.
fn settle_indexes(db: &Database, regions: &[&str]) {
    settle(db);
    for region in regions {
        wait_until("the members' indexes to be built", || {
            describe(db, region)["GlobalSecondaryIndexes"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|gsi| gsi["IndexStatus"] == "ACTIVE")
        });
    }
}

/// Group `Orders` (on demand, GSI ByG) of A, B and C, with three items written in A.
fn group_of_three(db: &Database) {
    create_table(db, A, "Orders");
    for (pk, value) in [("p1", "red"), ("p2", "blue"), ("p3", "red")] {
        put(db, A, "Orders", pk, value);
    }
    add_replica(db, A, "Orders", B);
    settle(db);
    add_replica(db, A, "Orders", C);
    settle(db);
}

#[test]
fn time_to_live_set_in_any_member_applies_to_every_member() {
    let db = open();
    group_of_three(&db);
    let answer = ok(
        &db,
        B,
        "UpdateTimeToLive",
        &time_to_live_request("Orders", true),
    );
    assert_eq!(
        answer["TimeToLiveSpecification"],
        json!({"Enabled": true, "AttributeName": "expires"})
    );
    for region in [A, B, C] {
        assert_eq!(
            time_to_live(&db, region),
            json!({"TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}),
            "{region}"
        );
    }
    // The rules read the member the request was sent to, which every member now mirrors.
    let again = call(
        &db,
        C,
        "UpdateTimeToLive",
        &time_to_live_request("Orders", true),
    );
    assert_eq!(
        again.unwrap_err(),
        (
            "ValidationException".to_string(),
            "TimeToLive is already enabled".to_string()
        )
    );

    // An item written with a past expiry in C is expired by the group's first member (A)
    // and the delete reaches every member; one without an expiry stays everywhere.
    let past_seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 100;
    ok(
        &db,
        C,
        "PutItem",
        &json!({"TableName": "Orders", "Item": {"pk": {"S": "old"}, "g": {"S": "x"}, "expires": {"N": past_seconds.to_string()}}}),
    );
    settle(&db);
    wait_until("the expiry to reach every member", || {
        db.expire_now().unwrap();
        settle(&db);
        [A, B, C].iter().all(|region| {
            ok(
                &db,
                region,
                "GetItem",
                &json!({"TableName": "Orders", "Key": {"pk": {"S": "old"}}, "ConsistentRead": true}),
            )
            .get("Item")
            .is_none()
        })
    });
    for region in [A, B, C] {
        assert_eq!(describe(&db, region)["ItemCount"], 3, "{region}");
    }
    // Every member's expiry index (filled from its own items) is exact.
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);

    ok(
        &db,
        C,
        "UpdateTimeToLive",
        &time_to_live_request("Orders", false),
    );
    for region in [A, B, C] {
        assert_eq!(
            time_to_live(&db, region),
            json!({"TimeToLiveStatus": "DISABLED"}),
            "{region}"
        );
    }
}

#[test]
fn a_regional_tables_time_to_live_and_indexes_stay_its_own() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    // Another table, in no group, is left alone by the group's changes and changes alone.
    create_table(&db, A, "Solo");
    ok(
        &db,
        A,
        "UpdateTimeToLive",
        &time_to_live_request("Orders", true),
    );
    assert_eq!(
        ok(&db, A, "DescribeTimeToLive", &json!({"TableName": "Solo"}))["TimeToLiveDescription"],
        json!({"TimeToLiveStatus": "DISABLED"})
    );
    ok(
        &db,
        B,
        "UpdateTimeToLive",
        &json!({"TableName": "Solo", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "ttl2"}}),
    );
    for region in [A, B] {
        assert_eq!(
            time_to_live(&db, region)["AttributeName"],
            "expires",
            "{region}"
        );
    }
}

#[test]
fn a_gsi_created_from_a_replicas_endpoint_is_built_in_every_member_from_its_own_items() {
    let db = open();
    group_of_three(&db);
    db.pause_backfills(true);
    let answer = update_table(
        &db,
        B,
        json!({
            "AttributeDefinitions": [{"AttributeName": "v", "AttributeType": "S"}],
            "GlobalSecondaryIndexUpdates": [{"Create": {
                "IndexName": "ByV",
                "KeySchema": [{"AttributeName": "v", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }}]
        }),
    );
    assert_eq!(answer["TableDescription"]["TableStatus"], "UPDATING");
    // Each member shows the index CREATING while it builds it.
    for region in [A, B, C] {
        assert_eq!(
            index_status(&db, region, "ByV").as_deref(),
            Some("CREATING"),
            "{region}"
        );
    }
    db.pause_backfills(false);
    settle_indexes(&db, &[A, B, C]);
    for region in [A, B, C] {
        let table = describe(&db, region);
        assert_eq!(index_names(&table), ["ByG", "ByV"], "{region}");
        let by_v = &table["GlobalSecondaryIndexes"][1];
        assert_eq!(by_v["ItemCount"], 3, "{region}");
        let queried = ok(
            &db,
            region,
            "Query",
            &json!({
                "TableName": "Orders", "IndexName": "ByV",
                "KeyConditionExpression": "v = :v", "ExpressionAttributeValues": {":v": {"S": "red"}}
            }),
        );
        assert_eq!(queried["Count"], 2, "{region}");
    }
    // A write after the index exists is indexed in every member it reaches.
    put(&db, C, "Orders", "p4", "red");
    settle(&db);
    let in_a = ok(
        &db,
        A,
        "Query",
        &json!({
            "TableName": "Orders", "IndexName": "ByV",
            "KeyConditionExpression": "v = :v", "ExpressionAttributeValues": {":v": {"S": "red"}}
        }),
    );
    assert_eq!(in_a["Count"], 3);
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);

    // B reads ByV with its own cap; deleting the index from A drops it, and B's override of
    // it, everywhere. ByG's override, on an index that stays, stays.
    update_table(
        &db,
        A,
        json!({"ReplicaUpdates": [{"Update": {"RegionName": B, "GlobalSecondaryIndexes": [
            {"IndexName": "ByV", "OnDemandThroughputOverride": {"MaxReadRequestUnits": 50}},
            {"IndexName": "ByG", "OnDemandThroughputOverride": {"MaxReadRequestUnits": 60}}
        ]}}]}),
    );
    update_table(
        &db,
        A,
        json!({"GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "ByV"}}]}),
    );
    for region in [A, B, C] {
        let table = describe(&db, region);
        assert_eq!(index_names(&table), ["ByG"], "{region}");
        // The key attribute only ByV used is gone from the definitions too.
        assert!(
            !table["AttributeDefinitions"].to_string().contains("\"v\""),
            "{region}"
        );
    }
    assert_eq!(
        replica_entry(&db, A, B)["GlobalSecondaryIndexes"],
        json!([{"IndexName": "ByG", "OnDemandThroughputOverride": {"MaxReadRequestUnits": 60}}])
    );
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}

/// Group `Orders` of A and B, PROVISIONED (10 RCU, 5 WCU; ByG 4 RCU, 2 WCU); B reads the
/// table with 7 RCU and is STANDARD_INFREQUENT_ACCESS by override.
fn provisioned_group(db: &Database) {
    create_table_billed(
        db,
        A,
        "Orders",
        Some((
            json!({"ReadCapacityUnits": 10, "WriteCapacityUnits": 5}),
            json!({"ReadCapacityUnits": 4, "WriteCapacityUnits": 2}),
        )),
    );
    update_table(
        db,
        A,
        json!({"ReplicaUpdates": [{"Create": {
            "RegionName": B,
            "ProvisionedThroughputOverride": {"ReadCapacityUnits": 7},
            "TableClassOverride": "STANDARD_INFREQUENT_ACCESS"
        }}]}),
    );
    settle(db);
}

fn replica_entry(db: &Database, from: &str, of: &str) -> Value {
    describe(db, from)["Replicas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["RegionName"] == of)
        .cloned()
        .unwrap()
}

#[test]
fn throughput_billing_mode_and_table_class_change_in_every_member_and_overrides_stay() {
    let db = open();
    provisioned_group(&db);

    // Throughput from B, for the table and its GSI: both members, B's read override kept.
    update_table(
        &db,
        B,
        json!({
            "ProvisionedThroughput": {"ReadCapacityUnits": 20, "WriteCapacityUnits": 8},
            "GlobalSecondaryIndexUpdates": [{"Update": {"IndexName": "ByG",
                "ProvisionedThroughput": {"ReadCapacityUnits": 6, "WriteCapacityUnits": 3}}}]
        }),
    );
    for region in [A, B] {
        let table = describe(&db, region);
        assert_eq!(
            table["ProvisionedThroughput"]["ReadCapacityUnits"], 20,
            "{region}"
        );
        assert_eq!(
            table["ProvisionedThroughput"]["WriteCapacityUnits"], 8,
            "{region}"
        );
        assert_eq!(
            table["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"]["WriteCapacityUnits"], 3,
            "{region}"
        );
    }
    assert_eq!(
        replica_entry(&db, A, B)["ProvisionedThroughputOverride"],
        json!({"ReadCapacityUnits": 7})
    );

    // The table class from A: every member's class; B's override stays what A sees of it.
    update_table(&db, A, json!({"TableClass": "STANDARD_INFREQUENT_ACCESS"}));
    update_table(&db, A, json!({"TableClass": "STANDARD"}));
    for region in [A, B] {
        assert_eq!(
            describe(&db, region)["TableClassSummary"]["TableClass"],
            "STANDARD",
            "{region}"
        );
    }
    let summary = &replica_entry(&db, A, B)["ReplicaTableClassSummary"];
    assert_eq!(summary["TableClass"], "STANDARD_INFREQUENT_ACCESS");
    assert!(summary["LastUpdateDateTime"].is_number(), "{summary}");

    // On demand from B: both members; B's provisioned read override cannot hold any more.
    update_table(&db, B, json!({"BillingMode": "PAY_PER_REQUEST"}));
    for region in [A, B] {
        assert_eq!(
            describe(&db, region)["BillingModeSummary"]["BillingMode"],
            "PAY_PER_REQUEST",
            "{region}"
        );
    }
    let b_entry = replica_entry(&db, A, B);
    assert!(
        b_entry.get("ProvisionedThroughputOverride").is_none(),
        "{b_entry}"
    );
    assert_eq!(
        b_entry["ReplicaTableClassSummary"]["TableClass"],
        "STANDARD_INFREQUENT_ACCESS"
    );

    // An on-demand cap from A reaches B.
    update_table(
        &db,
        A,
        json!({"OnDemandThroughput": {"MaxReadRequestUnits": 100, "MaxWriteRequestUnits": 40}}),
    );
    assert_eq!(
        describe(&db, B)["OnDemandThroughput"],
        json!({"MaxReadRequestUnits": 100, "MaxWriteRequestUnits": 40})
    );
}

#[test]
fn a_refused_settings_change_changes_no_member() {
    let db = open();
    provisioned_group(&db);
    // The same throughput again: refused with the table's own text, in neither member.
    let refused = call(
        &db,
        B,
        "UpdateTable",
        &json!({"TableName": "Orders", "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 5},
                "GlobalSecondaryIndexUpdates": [{"Update": {"IndexName": "ByG",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 9, "WriteCapacityUnits": 9}}}]}),
    )
    .unwrap_err();
    assert_eq!(refused.0, "ValidationException");
    assert!(
        refused
            .1
            .starts_with("The provisioned throughput for the table will not change."),
        "{}",
        refused.1
    );
    for region in [A, B] {
        let table = describe(&db, region);
        assert_eq!(
            table["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"]["ReadCapacityUnits"], 4,
            "{region}"
        );
    }
    // An unknown index to delete: ResourceNotFoundException, nothing dropped anywhere.
    let refused = call(
        &db,
        B,
        "UpdateTable",
        &json!({"TableName": "Orders", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "Nope"}}]}),
    )
    .unwrap_err();
    assert_eq!(
        refused,
        (
            "ResourceNotFoundException".to_string(),
            "Requested resource not found: Index: Nope not found".to_string()
        )
    );
    for region in [A, B] {
        assert_eq!(index_names(&describe(&db, region)), ["ByG"], "{region}");
    }
}

#[test]
fn regional_settings_stay_with_their_member() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    let arn_a = describe(&db, A)["TableArn"].as_str().unwrap().to_string();
    ok(
        &db,
        A,
        "TagResource",
        &json!({"ResourceArn": arn_a, "Tags": [{"Key": "team", "Value": "a"}]}),
    );
    update_table(&db, A, json!({"DeletionProtectionEnabled": true}));
    ok(
        &db,
        A,
        "UpdateContinuousBackups",
        &json!({"TableName": "Orders", "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true}}),
    );
    ok(
        &db,
        A,
        "UpdateContributorInsights",
        &json!({"TableName": "Orders", "ContributorInsightsAction": "ENABLE"}),
    );
    let policy = json!({"Version": "2012-10-17", "Statement": [{
        "Sid": "reader", "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::111122223333:role/reader"},
        "Action": "dynamodb:GetItem", "Resource": "*"
    }]})
    .to_string();
    ok(
        &db,
        A,
        "PutResourcePolicy",
        &json!({"ResourceArn": arn_a, "Policy": policy}),
    );

    // A holds them all.
    assert_eq!(describe(&db, A)["DeletionProtectionEnabled"], true);
    // B holds none of them.
    let b = describe(&db, B);
    let arn_b = b["TableArn"].as_str().unwrap().to_string();
    assert_ne!(arn_a, arn_b);
    assert_eq!(b["DeletionProtectionEnabled"], false);
    assert_eq!(
        ok(&db, B, "ListTagsOfResource", &json!({"ResourceArn": arn_b}))["Tags"],
        json!([])
    );
    assert_eq!(
        ok(
            &db,
            B,
            "DescribeContinuousBackups",
            &json!({"TableName": "Orders"})
        )["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
            ["PointInTimeRecoveryStatus"],
        "DISABLED"
    );
    assert_eq!(
        ok(
            &db,
            B,
            "DescribeContributorInsights",
            &json!({"TableName": "Orders"})
        )["ContributorInsightsStatus"],
        "DISABLED"
    );
    let no_policy = call(&db, B, "GetResourcePolicy", &json!({"ResourceArn": arn_b})).unwrap_err();
    assert_eq!(no_policy.0, "PolicyNotFoundException");
    // And B's own deletion protection, set there, does not reach A's (unset again).
    update_table(&db, A, json!({"DeletionProtectionEnabled": false}));
    update_table(&db, B, json!({"DeletionProtectionEnabled": true}));
    assert_eq!(describe(&db, A)["DeletionProtectionEnabled"], false);
}

#[test]
fn group_wide_changes_wait_while_a_member_is_being_added() {
    let db = open();
    create_table(&db, A, "Orders");
    put(&db, A, "Orders", "p1", "red");
    // B stays CREATING while it is cut off.
    db.cut_region(B);
    add_replica(&db, A, "Orders", B);
    let in_use = (
        "ResourceInUseException".to_string(),
        "The resource which you are attempting to change is in use.".to_string(),
    );
    let requests = [
        ("UpdateTimeToLive", time_to_live_request("Orders", true)),
        (
            "UpdateTable",
            json!({"TableName": "Orders", "GlobalSecondaryIndexUpdates": [{"Create": {
                "IndexName": "ByV", "KeySchema": [{"AttributeName": "v", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"}}}],
                "AttributeDefinitions": [{"AttributeName": "v", "AttributeType": "S"}]}),
        ),
        (
            "UpdateTable",
            json!({"TableName": "Orders", "OnDemandThroughput": {"MaxReadRequestUnits": 100}}),
        ),
        (
            "UpdateTable",
            json!({"TableName": "Orders", "TableClass": "STANDARD_INFREQUENT_ACCESS"}),
        ),
        (
            "UpdateTable",
            json!({"TableName": "Orders", "DeletionProtectionEnabled": true}),
        ),
        // Auto scaling's write settings are the group's too.
        (
            "UpdateTableReplicaAutoScaling",
            json!({"TableName": "Orders",
                   "ProvisionedWriteCapacityAutoScalingUpdate": {"AutoScalingDisabled": true}}),
        ),
    ];
    for (operation, request) in &requests {
        for region in [A, B] {
            assert_eq!(
                call(&db, region, operation, request).unwrap_err(),
                in_use,
                "{operation} {request} in {region}"
            );
        }
    }
    // A replica action keeps its own text, naming the member being added.
    assert_eq!(
        call(
            &db,
            A,
            "UpdateTable",
            &json!({"TableName": "Orders", "ReplicaUpdates": [{"Create": {"RegionName": C}}]}),
        )
        .unwrap_err(),
        (
            "ValidationException".to_string(),
            "Create/Update/Delete of replica is not allowed while the replica is being added to table with name: \u{2018}Orders\u{2019} in region: \u{2018}eu-west-1\u{2019}.".to_string()
        )
    );
    // Regional settings that SPEC-3 does not hold up are still accepted: tags.
    let arn = describe(&db, A)["TableArn"].as_str().unwrap().to_string();
    ok(
        &db,
        A,
        "TagResource",
        &json!({"ResourceArn": arn, "Tags": [{"Key": "k", "Value": "v"}]}),
    );
    db.heal_region(B);
    settle(&db);
    // Once B is ACTIVE the same requests are accepted.
    for (operation, request) in &requests {
        ok(&db, A, operation, request);
    }
    settle_indexes(&db, &[A, B]);
    assert_eq!(time_to_live(&db, B)["TimeToLiveStatus"], "ENABLED");
    assert_eq!(index_names(&describe(&db, B)), ["ByG", "ByV"]);
}

#[test]
fn every_member_keeps_a_group_wide_change_through_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let options = || disk_options(Duration::ZERO);
    {
        let db = Database::open(dir.path(), options()).unwrap();
        create_table(&db, A, "Orders");
        put(&db, A, "Orders", "p1", "red");
        add_replica(&db, A, "Orders", B);
        settle(&db);
        ok(
            &db,
            B,
            "UpdateTimeToLive",
            &time_to_live_request("Orders", true),
        );
        update_table(
            &db,
            B,
            json!({
                "AttributeDefinitions": [{"AttributeName": "v", "AttributeType": "S"}],
                "GlobalSecondaryIndexUpdates": [{"Create": {
                    "IndexName": "ByV",
                    "KeySchema": [{"AttributeName": "v", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"}
                }}]
            }),
        );
        update_table(
            &db,
            A,
            json!({"OnDemandThroughput": {"MaxReadRequestUnits": 100}}),
        );
    }
    let db = Database::open(dir.path(), options()).unwrap();
    settle_indexes(&db, &[A, B]);
    for region in [A, B] {
        let table = describe(&db, region);
        assert_eq!(
            time_to_live(&db, region),
            json!({"TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}),
            "{region}"
        );
        assert_eq!(index_names(&table), ["ByG", "ByV"], "{region}");
        assert_eq!(
            table["GlobalSecondaryIndexes"][1]["ItemCount"], 1,
            "{region}"
        );
        assert_eq!(
            table["OnDemandThroughput"]["MaxReadRequestUnits"], 100,
            "{region}"
        );
    }
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}
