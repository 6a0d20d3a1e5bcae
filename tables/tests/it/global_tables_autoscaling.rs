//! DescribeTableReplicaAutoScaling and UpdateTableReplicaAutoScaling (SPEC-3 §2.7): a
//! global table's auto scaling settings stored and echoed (write settings group-wide, read
//! settings per Region), never changing capacity; §2.7's texts; member constraints; the
//! settings after a reopen.

use std::time::Duration;

use serde_json::{json, Value};
use shoal_tables::{Database, Lag};

use crate::global_tables::{
    add_replica, call, create_table, create_table_billed, ok, options, settle,
};
use crate::global_tables_overrides::{assert_group_throughput, disk_options};

const A: &str = "us-east-1";
const B: &str = "eu-west-1";

fn open() -> Database {
    Database::open_in_memory(options(Lag::fixed(Duration::ZERO))).unwrap()
}

fn refused(db: &Database, region: &str, operation: &str, request: &Value) -> (String, String) {
    match call(db, region, operation, request) {
        Ok(answer) => panic!("{operation} in {region} answered {answer}"),
        Err(error) => error,
    }
}

/// A PROVISIONED group of `name` in A and B (GSI ByG).
fn provisioned_group(db: &Database, name: &str) {
    create_table_billed(
        db,
        A,
        name,
        Some((
            json!({"ReadCapacityUnits": 10, "WriteCapacityUnits": 5}),
            json!({"ReadCapacityUnits": 4, "WriteCapacityUnits": 2}),
        )),
    );
    add_replica(db, A, name, B);
    settle(db);
}

fn describe_scaling(db: &Database, region: &str, name: &str) -> Value {
    ok(
        db,
        region,
        "DescribeTableReplicaAutoScaling",
        &json!({"TableName": name}),
    )["TableAutoScalingDescription"]
        .clone()
}

/// The member of `description` in `region`.
fn replica<'a>(description: &'a Value, region: &str) -> &'a Value {
    description["Replicas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|replica| replica["RegionName"] == region)
        .unwrap_or_else(|| panic!("no {region} in {description}"))
}

fn disabled() -> Value {
    json!({"AutoScalingDisabled": true, "ScalingPolicies": []})
}

#[test]
fn a_regional_table_is_not_a_global_table_and_a_missing_one_is_not_found() {
    let db = open();
    create_table(&db, A, "Solo");
    for operation in [
        "DescribeTableReplicaAutoScaling",
        "UpdateTableReplicaAutoScaling",
    ] {
        assert_eq!(
            refused(&db, A, operation, &json!({"TableName": "Solo"})),
            (
                "ResourceNotFoundException".to_string(),
                "Global table with name: Solo does not exist.".to_string()
            ),
            "{operation}"
        );
        // The neighbour: a table that does not exist at all keeps the usual text.
        assert_eq!(
            refused(&db, A, operation, &json!({"TableName": "Nothing"})),
            (
                "ResourceNotFoundException".to_string(),
                "Requested resource not found: Table: Nothing not found".to_string()
            ),
            "{operation}"
        );
    }
}

#[test]
fn unset_dimensions_read_disabled_for_every_member_and_index() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    let description = describe_scaling(&db, B, "Orders");
    assert_eq!(description["TableName"], "Orders");
    assert_eq!(description["TableStatus"], "ACTIVE");
    let regions: Vec<&str> = description["Replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["RegionName"].as_str().unwrap())
        .collect();
    assert_eq!(regions, [A, B]);
    for region in [A, B] {
        assert_eq!(
            replica(&description, region),
            &json!({
                "RegionName": region,
                "ReplicaStatus": "ACTIVE",
                "GlobalSecondaryIndexes": [{
                    "IndexName": "ByG",
                    "IndexStatus": "ACTIVE",
                    "ProvisionedReadCapacityAutoScalingSettings": disabled(),
                    "ProvisionedWriteCapacityAutoScalingSettings": disabled()
                }],
                "ReplicaProvisionedReadCapacityAutoScalingSettings": disabled(),
                "ReplicaProvisionedWriteCapacityAutoScalingSettings": disabled()
            })
        );
    }
}

#[test]
fn a_pay_per_request_group_takes_only_auto_scaling_disabled() {
    let db = open();
    create_table(&db, A, "Orders");
    add_replica(&db, A, "Orders", B);
    settle(&db);
    let (code, message) = refused(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({
            "TableName": "Orders",
            "ProvisionedWriteCapacityAutoScalingUpdate": {"MinimumUnits": 1, "MaximumUnits": 10}
        }),
    );
    assert_eq!(code, "ValidationException");
    assert_eq!(
        message,
        "Failed to update global table with name \u{2018}Orders\u{2018}. Replicas 'us-east-1', 'eu-west-1' BillingMode is PayPerRequest. You must convert table's BillingMode to PROVISIONED to set parameters: 'MinimumUnits', 'MaximumUnits'."
    );
    // The neighbour: disabling is accepted and changes nothing.
    let answer = ok(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({
            "TableName": "Orders",
            "ReplicaUpdates": [{"RegionName": B, "ReplicaProvisionedReadCapacityAutoScalingUpdate": {"AutoScalingDisabled": true}}]
        }),
    );
    assert_eq!(
        replica(&answer["TableAutoScalingDescription"], B)
            ["ReplicaProvisionedReadCapacityAutoScalingSettings"],
        disabled()
    );
}

#[test]
fn write_settings_are_the_groups_and_read_settings_each_regions() {
    let db = open();
    provisioned_group(&db, "Orders");
    let answer = ok(
        &db,
        B,
        "UpdateTableReplicaAutoScaling",
        &json!({
            "TableName": "Orders",
            "ProvisionedWriteCapacityAutoScalingUpdate": {
                "MinimumUnits": 5, "MaximumUnits": 50,
                "ScalingPolicyUpdate": {"TargetTrackingScalingPolicyConfiguration": {"TargetValue": 70.0}}
            },
            "GlobalSecondaryIndexUpdates": [{
                "IndexName": "ByG",
                "ProvisionedWriteCapacityAutoScalingUpdate": {"MinimumUnits": 2, "MaximumUnits": 20}
            }],
            "ReplicaUpdates": [{
                "RegionName": B,
                "ReplicaProvisionedReadCapacityAutoScalingUpdate": {
                    "MinimumUnits": 3, "MaximumUnits": 30,
                    "AutoScalingRoleArn": "arn:aws:iam::123456789012:role/scaling",
                    "ScalingPolicyUpdate": {
                        "PolicyName": "reads",
                        "TargetTrackingScalingPolicyConfiguration": {"TargetValue": 55.5, "ScaleInCooldown": 60, "DisableScaleIn": false}
                    }
                }
            }]
        }),
    );
    let write = json!({
        "MinimumUnits": 5, "MaximumUnits": 50, "AutoScalingDisabled": false,
        "ScalingPolicies": [{
            "PolicyName": "DynamoDBWriteCapacityUtilization:table/Orders",
            "TargetTrackingScalingPolicyConfiguration": {"TargetValue": 70.0}
        }]
    });
    let index_write = json!({"MinimumUnits": 2, "MaximumUnits": 20, "AutoScalingDisabled": false, "ScalingPolicies": []});
    let b_read = json!({
        "MinimumUnits": 3, "MaximumUnits": 30, "AutoScalingDisabled": false,
        "AutoScalingRoleArn": "arn:aws:iam::123456789012:role/scaling",
        "ScalingPolicies": [{
            "PolicyName": "reads",
            "TargetTrackingScalingPolicyConfiguration": {"DisableScaleIn": false, "ScaleInCooldown": 60, "TargetValue": 55.5}
        }]
    });
    // The answer, and both Regions' Describe, agree.
    for description in [
        answer["TableAutoScalingDescription"].clone(),
        describe_scaling(&db, A, "Orders"),
        describe_scaling(&db, B, "Orders"),
    ] {
        for region in [A, B] {
            let member = replica(&description, region);
            assert_eq!(
                member["ReplicaProvisionedWriteCapacityAutoScalingSettings"], write,
                "{region}"
            );
            assert_eq!(
                member["GlobalSecondaryIndexes"][0]["ProvisionedWriteCapacityAutoScalingSettings"],
                index_write,
                "{region}"
            );
        }
        assert_eq!(
            replica(&description, B)["ReplicaProvisionedReadCapacityAutoScalingSettings"],
            b_read
        );
        // The neighbour: A's read settings are A's own, still unset.
        assert_eq!(
            replica(&description, A)["ReplicaProvisionedReadCapacityAutoScalingSettings"],
            disabled()
        );
        assert_eq!(
            replica(&description, B)["GlobalSecondaryIndexes"][0]
                ["ProvisionedReadCapacityAutoScalingSettings"],
            disabled()
        );
    }
    // Capacity never changes.
    assert_group_throughput(&db, "Orders", &[A, B], (10, 5));

    // A later update changes only what it names: a second policy by name is added, the
    // stored bounds kept; disabling the index's settings clears them.
    ok(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({
            "TableName": "Orders",
            "ProvisionedWriteCapacityAutoScalingUpdate": {
                "MaximumUnits": 60,
                "ScalingPolicyUpdate": {"PolicyName": "second", "TargetTrackingScalingPolicyConfiguration": {"TargetValue": 40}}
            },
            "GlobalSecondaryIndexUpdates": [{"IndexName": "ByG", "ProvisionedWriteCapacityAutoScalingUpdate": {"AutoScalingDisabled": true}}]
        }),
    );
    let description = describe_scaling(&db, B, "Orders");
    let member = replica(&description, A);
    let settings = &member["ReplicaProvisionedWriteCapacityAutoScalingSettings"];
    assert_eq!(settings["MinimumUnits"], 5);
    assert_eq!(settings["MaximumUnits"], 60);
    let names: Vec<&str> = settings["ScalingPolicies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["PolicyName"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["DynamoDBWriteCapacityUtilization:table/Orders", "second"]
    );
    assert_eq!(
        member["GlobalSecondaryIndexes"][0]["ProvisionedWriteCapacityAutoScalingSettings"],
        disabled()
    );
    assert_eq!(
        replica(&description, B)["ReplicaProvisionedReadCapacityAutoScalingSettings"],
        b_read
    );
}

#[test]
fn enabling_needs_minimum_and_maximum_units_unless_stored() {
    let db = open();
    provisioned_group(&db, "Orders");
    let policy = json!({"TargetTrackingScalingPolicyConfiguration": {"TargetValue": 50}});
    let (code, message) = refused(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({"TableName": "Orders", "ProvisionedWriteCapacityAutoScalingUpdate": {"MinimumUnits": 1, "ScalingPolicyUpdate": policy}}),
    );
    assert_eq!(code, "ValidationException");
    assert_eq!(
        message,
        "Failed to update settings for global table with name: \u{2018}Orders\u{2019}: Parameters 'MaximumUnits' are required unless auto scaling is being disabled."
    );
    // Nothing was stored by the refused request.
    assert_eq!(
        replica(&describe_scaling(&db, A, "Orders"), A)
            ["ReplicaProvisionedWriteCapacityAutoScalingSettings"],
        disabled()
    );
    // The neighbour: once stored, a policy alone is accepted.
    ok(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({"TableName": "Orders", "ProvisionedWriteCapacityAutoScalingUpdate": {"MinimumUnits": 1, "MaximumUnits": 4}}),
    );
    ok(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({"TableName": "Orders", "ProvisionedWriteCapacityAutoScalingUpdate": {"ScalingPolicyUpdate": policy}}),
    );
    // Shoal's own texts [U]: bounds the wrong way round; disabling beside a setting.
    let (_, message) = refused(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({"TableName": "Orders", "ProvisionedWriteCapacityAutoScalingUpdate": {"MinimumUnits": 9, "MaximumUnits": 4}}),
    );
    assert!(
        message.ends_with("MinimumUnits (9) must not be greater than MaximumUnits (4)."),
        "{message}"
    );
    let (_, message) = refused(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({"TableName": "Orders", "ProvisionedWriteCapacityAutoScalingUpdate": {"AutoScalingDisabled": true, "MinimumUnits": 2}}),
    );
    assert!(
        message.ends_with(
            "Parameters 'MinimumUnits' cannot be set when auto scaling is being disabled."
        ),
        "{message}"
    );
}

#[test]
fn requests_are_checked_member_constraints_first_then_regions_and_indexes() {
    let db = open();
    provisioned_group(&db, "Orders");
    let (code, message) = refused(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({
            "TableName": "Orders",
            "ProvisionedWriteCapacityAutoScalingUpdate": {
                "MinimumUnits": 0,
                "ScalingPolicyUpdate": {"TargetTrackingScalingPolicyConfiguration": {}}
            },
            "GlobalSecondaryIndexUpdates": [],
            "ReplicaUpdates": [{"ReplicaGlobalSecondaryIndexUpdates": [{"IndexName": "x"}]}]
        }),
    );
    assert_eq!(code, "ValidationException");
    assert_eq!(
        message,
        "5 validation errors detected: \
Value '0' at 'provisionedWriteCapacityAutoScalingUpdate.minimumUnits' failed to satisfy constraint: Member must have value greater than or equal to 1; \
Value null at 'provisionedWriteCapacityAutoScalingUpdate.scalingPolicyUpdate.targetTrackingScalingPolicyConfiguration.targetValue' failed to satisfy constraint: Member must not be null; \
Value at 'globalSecondaryIndexUpdates' failed to satisfy constraint: Member must have length greater than or equal to 1; \
Value null at 'replicaUpdates.1.member.regionName' failed to satisfy constraint: Member must not be null; \
Value 'x' at 'replicaUpdates.1.member.replicaGlobalSecondaryIndexUpdates.1.member.indexName' failed to satisfy constraint: Member must have length greater than or equal to 3"
    );
    // A Region outside the group: ReplicaUpdates' text.
    let (_, message) = refused(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({"TableName": "Orders", "ReplicaUpdates": [{"RegionName": "ap-south-1", "ReplicaProvisionedReadCapacityAutoScalingUpdate": {"AutoScalingDisabled": true}}]}),
    );
    assert_eq!(
        message,
        "Update global table operation failed because one or more replicas were not part of the global table. Please retry the request without these replicas: [ap-south-1]."
    );
    // A member named twice.
    let disable = json!({"AutoScalingDisabled": true});
    let (_, message) = refused(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({"TableName": "Orders", "ReplicaUpdates": [
            {"RegionName": B, "ReplicaProvisionedReadCapacityAutoScalingUpdate": disable},
            {"RegionName": B, "ReplicaProvisionedReadCapacityAutoScalingUpdate": disable}]}),
    );
    assert_eq!(
        message,
        "Cannot target multiple regions with the same action"
    );
    // An index the table lacks: UpdateTable's text.
    let (code, message) = refused(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({"TableName": "Orders", "GlobalSecondaryIndexUpdates": [{"IndexName": "Nope", "ProvisionedWriteCapacityAutoScalingUpdate": {"AutoScalingDisabled": true}}]}),
    );
    assert_eq!(code, "ResourceNotFoundException");
    assert_eq!(
        message,
        "Requested resource not found: Index: Nope not found"
    );
    // A table ARN stands for the name, as in the other operations.
    let description = ok(
        &db,
        A,
        "DescribeTableReplicaAutoScaling",
        &json!({"TableName": "arn:aws:dynamodb:us-east-1:000000000000:table/Orders"}),
    );
    assert_eq!(
        description["TableAutoScalingDescription"]["TableName"],
        "Orders"
    );
}

#[test]
fn settings_survive_a_reopen_and_a_new_member_gets_the_groups_write_settings() {
    let dir = tempfile::tempdir().unwrap();
    let options = || disk_options(Duration::ZERO);
    let before = {
        let db = Database::open(dir.path(), options()).unwrap();
        provisioned_group(&db, "Orders");
        ok(
            &db,
            A,
            "UpdateTableReplicaAutoScaling",
            &json!({
                "TableName": "Orders",
                "ProvisionedWriteCapacityAutoScalingUpdate": {"MinimumUnits": 5, "MaximumUnits": 50},
                "ReplicaUpdates": [{"RegionName": A, "ReplicaProvisionedReadCapacityAutoScalingUpdate": {"MinimumUnits": 1, "MaximumUnits": 9}}]
            }),
        );
        describe_scaling(&db, B, "Orders")
    };
    let db = Database::open(dir.path(), options()).unwrap();
    assert_eq!(describe_scaling(&db, B, "Orders"), before);
    add_replica(&db, A, "Orders", "ap-south-1");
    settle(&db);
    let description = describe_scaling(&db, A, "Orders");
    let third = replica(&description, "ap-south-1");
    assert_eq!(
        third["ReplicaProvisionedWriteCapacityAutoScalingSettings"],
        replica(&before, A)["ReplicaProvisionedWriteCapacityAutoScalingSettings"]
    );
    // A's read settings are A's: the new member starts without them.
    assert_eq!(
        third["ReplicaProvisionedReadCapacityAutoScalingSettings"],
        disabled()
    );
    assert_eq!(
        replica(&description, A)["ReplicaProvisionedReadCapacityAutoScalingSettings"]
            ["MaximumUnits"],
        9
    );
}

#[test]
fn a_deleted_index_takes_its_settings_and_the_tables_stay() {
    let db = open();
    provisioned_group(&db, "Orders");
    let scaling = json!({"MinimumUnits": 2, "MaximumUnits": 20});
    ok(
        &db,
        A,
        "UpdateTableReplicaAutoScaling",
        &json!({
            "TableName": "Orders",
            "ProvisionedWriteCapacityAutoScalingUpdate": {"MinimumUnits": 5, "MaximumUnits": 50},
            "GlobalSecondaryIndexUpdates": [{"IndexName": "ByG", "ProvisionedWriteCapacityAutoScalingUpdate": scaling}]
        }),
    );
    // The index is deleted, then created again under its name.
    ok(
        &db,
        B,
        "UpdateTable",
        &json!({"TableName": "Orders", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "ByG"}}]}),
    );
    ok(
        &db,
        B,
        "UpdateTable",
        &json!({"TableName": "Orders",
                "AttributeDefinitions": [{"AttributeName": "g", "AttributeType": "S"}],
                "GlobalSecondaryIndexUpdates": [{"Create": {"IndexName": "ByG",
                    "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                    "ProvisionedThroughput": {"ReadCapacityUnits": 4, "WriteCapacityUnits": 2}}}]}),
    );
    let description = describe_scaling(&db, A, "Orders");
    for region in [A, B] {
        let member = replica(&description, region);
        assert_eq!(
            member["GlobalSecondaryIndexes"][0]["ProvisionedWriteCapacityAutoScalingSettings"],
            disabled(),
            "{region}: the new index starts without the deleted one's settings"
        );
        // The neighbour: the table's own settings stay.
        assert_eq!(
            member["ReplicaProvisionedWriteCapacityAutoScalingSettings"]["MaximumUnits"], 50,
            "{region}"
        );
    }
}
