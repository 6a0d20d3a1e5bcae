//! Contributor Insights (SPEC-3 §3): the control plane (statuses, modes, rule names, errors,
//! ListContributorInsights) and the data behind it, checked against hand calculations from
//! DynamoDB's capacity rules: accessed keys rank by 3 × write units + read units, throttled
//! keys by refused requests.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::capacity::throttle::CapacityMode;
use shoal_tables::insights::contributors::RuleReport;
use shoal_tables::Database;

use crate::capacity_throttle::open;

/// Orders(pk S, sk S) with GSI ByStatus(status S), provisioned 1000/`write` units.
fn create(db: &Database, write: u64) {
    call(
        db,
        "CreateTable",
        json!({
            "TableName": "Orders",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "status", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "GlobalSecondaryIndexes": [{
                "IndexName": "ByStatus",
                "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 1000, "WriteCapacityUnits": 1000}
            }],
            "ProvisionedThroughput": {"ReadCapacityUnits": 1000, "WriteCapacityUnits": write}
        }),
    );
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

fn enable(db: &Database, index: Option<&str>, mode: Option<&str>) -> Value {
    let mut request = json!({"TableName": "Orders", "ContributorInsightsAction": "ENABLE"});
    if let Some(index) = index {
        request["IndexName"] = json!(index);
    }
    if let Some(mode) = mode {
        request["ContributorInsightsMode"] = json!(mode);
    }
    call(db, "UpdateContributorInsights", request)
}

fn put(db: &Database, pk: &str, sk: &str, status: &str) {
    call(
        db,
        "PutItem",
        json!({"TableName": "Orders", "Item": {"pk": {"S": pk}, "sk": {"S": sk}, "status": {"S": status}}}),
    );
}

/// A rule's contributors as (keys joined by '/', value).
fn ranking(reports: &[RuleReport], rule: &str) -> Vec<(String, f64)> {
    reports
        .iter()
        .find(|report| report.rule == rule)
        .unwrap_or_else(|| panic!("no {rule} in {reports:?}"))
        .contributors
        .iter()
        .map(|c| (c.keys.join("/"), c.value))
        .collect()
}

#[test]
fn statuses_modes_and_rule_names_follow_enable_and_disable() {
    let (db, _) = open(CapacityMode::Off);
    create(&db, 1000);
    // Never configured: only the table's name and DISABLED.
    assert_eq!(
        call(
            &db,
            "DescribeContributorInsights",
            json!({"TableName": "Orders"})
        ),
        json!({"TableName": "Orders", "ContributorInsightsStatus": "DISABLED"})
    );
    assert_eq!(
        enable(&db, None, None),
        json!({"TableName": "Orders", "ContributorInsightsStatus": "ENABLING",
               "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS"})
    );
    let described = call(
        &db,
        "DescribeContributorInsights",
        json!({"TableName": "Orders"}),
    );
    assert_eq!(described["ContributorInsightsStatus"], "ENABLED");
    let rules: Vec<String> =
        serde_json::from_value(described["ContributorInsightsRuleList"].clone()).unwrap();
    let codes: Vec<&str> = rules.iter().map(|r| r.split('-').nth(1).unwrap()).collect();
    assert_eq!(
        codes,
        ["PKC", "PKT", "SKC", "SKT"],
        "a table with a sort key has four"
    );
    assert!(
        rules[0].starts_with("DynamoDBContributorInsights-PKC-Orders-"),
        "{rules:?}"
    );
    assert!(described["LastUpdateDateTime"].as_f64().unwrap() > 1.7e9);
    // Enabling again in the same mode changes nothing.
    assert_eq!(
        enable(&db, None, None)["ContributorInsightsStatus"],
        "ENABLED"
    );
    // A GSI with no sort key has two rules, and THROTTLED_KEYS only the throttled one.
    enable(&db, Some("ByStatus"), None);
    let gsi = call(
        &db,
        "DescribeContributorInsights",
        json!({"TableName": "Orders", "IndexName": "ByStatus"}),
    );
    let gsi_rules: Vec<String> =
        serde_json::from_value(gsi["ContributorInsightsRuleList"].clone()).unwrap();
    assert_eq!(gsi_rules.len(), 2);
    assert!(gsi_rules[1].starts_with("DynamoDBContributorInsights-PKT-Orders-ByStatus-"));
    assert_eq!(
        enable(&db, Some("ByStatus"), Some("THROTTLED_KEYS"))["ContributorInsightsStatus"],
        "ENABLING"
    );
    let gsi = call(
        &db,
        "DescribeContributorInsights",
        json!({"TableName": "Orders", "IndexName": "ByStatus"}),
    );
    assert_eq!(
        gsi["ContributorInsightsRuleList"].as_array().unwrap().len(),
        1
    );
    // The list: the table before its GSI.
    assert_eq!(
        call(&db, "ListContributorInsights", json!({})),
        json!({"ContributorInsightsSummaries": [
            {"TableName": "Orders", "ContributorInsightsStatus": "ENABLED",
             "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS"},
            {"TableName": "Orders", "IndexName": "ByStatus", "ContributorInsightsStatus": "ENABLED",
             "ContributorInsightsMode": "THROTTLED_KEYS"}
        ]})
    );
    let page = call(&db, "ListContributorInsights", json!({"MaxResults": 1}));
    assert_eq!(page["NextToken"], "1");
    let rest = call(&db, "ListContributorInsights", json!({"NextToken": "1"}));
    assert_eq!(
        rest["ContributorInsightsSummaries"][0]["IndexName"],
        "ByStatus"
    );
    // DISABLE: DISABLING, then DISABLED without rules, and out of the list.
    let disabled = call(
        &db,
        "UpdateContributorInsights",
        json!({"TableName": "Orders", "ContributorInsightsAction": "DISABLE"}),
    );
    assert_eq!(disabled["ContributorInsightsStatus"], "DISABLING");
    let described = call(
        &db,
        "DescribeContributorInsights",
        json!({"TableName": "Orders"}),
    );
    assert_eq!(described["ContributorInsightsStatus"], "DISABLED");
    assert!(described.get("ContributorInsightsRuleList").is_none());
    assert_eq!(
        call(&db, "ListContributorInsights", json!({}))["ContributorInsightsSummaries"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn unknown_tables_and_indexes_and_bad_members_are_refused() {
    let (db, _) = open(CapacityMode::Off);
    create(&db, 1000);
    assert_eq!(
        error(
            &db,
            "DescribeContributorInsights",
            json!({"TableName": "Nope"})
        ),
        (
            ErrorCode::ResourceNotFoundException,
            "Requested resource not found: Table: Nope not found".to_string()
        )
    );
    assert_eq!(
        error(
            &db,
            "UpdateContributorInsights",
            json!({"TableName": "Orders", "IndexName": "Missing", "ContributorInsightsAction": "ENABLE"})
        ),
        (
            ErrorCode::ResourceNotFoundException,
            "Requested resource not found: Index: Missing not found for table: Orders".to_string()
        )
    );
    assert_eq!(
        error(
            &db,
            "UpdateContributorInsights",
            json!({"TableName": "Orders", "ContributorInsightsAction": "TOGGLE"})
        ),
        (
            ErrorCode::ValidationException,
            "1 validation error detected: Value 'TOGGLE' at 'contributorInsightsAction' failed to satisfy constraint: Member must satisfy enum value set: [ENABLE, DISABLE]".to_string()
        )
    );
    assert_eq!(
        error(&db, "ListContributorInsights", json!({"MaxResults": 101})).0,
        ErrorCode::ValidationException
    );
    // A table ARN names the table.
    let by_arn = call(
        &db,
        "DescribeContributorInsights",
        json!({"TableName": "arn:aws:dynamodb:us-east-1:000000000000:table/Orders"}),
    );
    assert_eq!(by_arn["TableName"], "Orders");
}

#[test]
fn accessed_keys_rank_by_three_write_units_plus_read_units() {
    let (db, _) = open(CapacityMode::Off);
    create(&db, 1000);
    // Before insights are on nothing is counted: the neighbouring case.
    put(&db, "before", "x", "NEW");
    enable(&db, None, None);
    enable(&db, Some("ByStatus"), None);
    for sk in 1..=10 {
        put(&db, "hot", &sk.to_string(), "NEW");
    }
    put(&db, "cold", "1", "DONE");
    for _ in 0..4 {
        // An eventually consistent read of an item under 4 KB: 0.5 read units.
        call(
            &db,
            "GetItem",
            json!({"TableName": "Orders", "Key": {"pk": {"S": "hot"}, "sk": {"S": "1"}}}),
        );
    }
    // A strongly consistent Query through the table reads 10 small items: 1 read unit
    // (their sizes sum to under 4 KB).
    call(
        &db,
        "Query",
        json!({"TableName": "Orders", "KeyConditionExpression": "pk = :p",
               "ExpressionAttributeValues": {":p": {"S": "hot"}}, "ConsistentRead": true}),
    );
    let table = db.contributors_report("Orders", None, 5, 20).unwrap();
    // hot: 10 puts of 1 write unit (× 3) + 4 × 0.5 + 1 = 33; cold: one put, 3.
    assert_eq!(
        ranking(&table, "PKC"),
        [("hot".to_string(), 33.0), ("cold".to_string(), 3.0)]
    );
    // Items: hot/1 has its put and the four reads (3 + 2); a Query counts on the partition
    // only.
    let items = ranking(&table, "SKC");
    assert_eq!(items[0], ("hot/1".to_string(), 5.0));
    assert_eq!(items.len(), 11);
    assert!(items[1..].iter().all(|(_, units)| *units == 3.0));
    assert!(ranking(&table, "PKT").is_empty(), "nothing was throttled");
    // The GSI counts its own write units on its partition keys: each put wrote one entry
    // of 1 unit.
    let gsi = db
        .contributors_report("Orders", Some("ByStatus"), 5, 10)
        .unwrap();
    assert_eq!(
        ranking(&gsi, "PKC"),
        [("NEW".to_string(), 30.0), ("DONE".to_string(), 3.0)]
    );
    assert_eq!(gsi.len(), 2, "no sort key, so no item rules: {gsi:?}");
}

#[test]
fn throttled_keys_count_refused_requests_and_old_minutes_fall_out_of_the_window() {
    let (db, now) = open(CapacityMode::Enforce);
    // 1 write unit a second: the burst bucket (300 s of capacity) runs out after 300 puts.
    create(&db, 1);
    enable(&db, None, Some("THROTTLED_KEYS"));
    let mut refused = 0;
    for i in 0..400 {
        let result = db.execute(
            "PutItem",
            json!({"TableName": "Orders", "Item": {"pk": {"S": "hot"}, "sk": {"S": i.to_string()}}}),
        );
        if let Err(e) = result {
            assert_eq!(e.code, ErrorCode::ProvisionedThroughputExceededException);
            refused += 1;
        }
    }
    assert!(refused > 0, "the table must have throttled");
    let report = db.contributors_report("Orders", None, 5, 10).unwrap();
    let codes: Vec<&str> = report.iter().map(|r| r.rule).collect();
    assert_eq!(codes, ["PKT", "SKT"], "THROTTLED_KEYS ranks throttles only");
    assert_eq!(
        ranking(&report, "PKT"),
        [("hot".to_string(), refused as f64)]
    );
    // Eleven minutes later the window no longer holds them.
    now.fetch_add(11 * 60_000, Ordering::SeqCst);
    let report = db.contributors_report("Orders", None, 10, 10).unwrap();
    assert!(ranking(&report, "PKT").is_empty());
}
