//! Scan: tables and indexes, filters, Select, pagination and parallel scan (SPEC §4.3).

use crate::query_support;
use std::collections::BTreeSet;

use query_support::*;
use serde_json::{json, Value};

/// 12 items in 4 partitions; l on even i, g on i % 3 == 0.
fn seeded() -> shoal_tables::Database {
    let db = database();
    create_indexed_table(&db);
    for i in 0..12i64 {
        let mut item =
            json!({"pk": s(&format!("p{}", i % 4)), "sk": s(&format!("s{i:02}")), "misc": n(i)});
        if i % 2 == 0 {
            item["l"] = n(i);
        }
        if i % 3 == 0 {
            item["g"] = s("x");
            item["r"] = n(i % 2);
        }
        put(&db, "Tbl", item);
    }
    db
}

fn scan(extra: Value) -> Value {
    let mut request = json!({"TableName": "Tbl"});
    for (k, v) in extra.as_object().unwrap() {
        request[k] = v.clone();
    }
    request
}

fn sks(items: &[Value]) -> BTreeSet<String> {
    strings(items, "sk").into_iter().collect()
}

#[test]
fn table_scan_reads_only_base_items() {
    let db = seeded();
    let response = call(&db, "Scan", scan(json!({})));
    // The tree also holds 6 LSI entries and 4 collection records: none of them is an item.
    assert_eq!(
        (
            response["Count"].as_u64(),
            response["ScannedCount"].as_u64()
        ),
        (Some(12), Some(12))
    );
    let items = response["Items"].as_array().unwrap();
    assert_eq!(sks(items).len(), 12);
    assert!(items.iter().all(|item| item.get("misc").is_some()));
}

#[test]
fn index_scans_hold_only_indexed_items() {
    let db = seeded();
    let lsi = call(&db, "Scan", scan(json!({"IndexName": "ByL"})));
    let lsi_items = lsi["Items"].as_array().unwrap();
    assert_eq!(
        sks(lsi_items),
        ["s00", "s02", "s04", "s06", "s08", "s10"]
            .map(String::from)
            .into()
    );
    // Projected entries: keys + index key (inc is absent on these items).
    assert_eq!(lsi_items[0].as_object().unwrap().len(), 3);
    let gsi = call(&db, "Scan", scan(json!({"IndexName": "ByG"})));
    assert_eq!(
        sks(gsi["Items"].as_array().unwrap()),
        ["s00", "s03", "s06", "s09"].map(String::from).into()
    );
    let count = call(
        &db,
        "Scan",
        scan(json!({"IndexName": "ByGAll", "Select": "COUNT"})),
    );
    assert_eq!(
        (count["Count"].as_u64(), count.get("Items")),
        (Some(4), None)
    );
    // An LSI scan fetches what the index does not project.
    let fetched = call(
        &db,
        "Scan",
        scan(json!({"IndexName": "ByL", "ProjectionExpression": "sk, misc"})),
    );
    assert!(fetched["Items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i.get("misc").is_some()));
}

#[test]
fn scan_filters_may_use_keys_and_limit_counts_before_them() {
    let db = seeded();
    let response = call(
        &db,
        "Scan",
        scan(json!({"FilterExpression": "pk = :p AND misc > :m",
                    "ExpressionAttributeValues": {":p": s("p1"), ":m": n(4)}})),
    );
    assert_eq!(
        sks(response["Items"].as_array().unwrap()),
        ["s05", "s09"].map(String::from).into()
    );
    let limited = call(
        &db,
        "Scan",
        scan(json!({"Limit": 3, "FilterExpression": "misc = :m",
                                                 "ExpressionAttributeValues": {":m": n(-1)}})),
    );
    assert_eq!(
        (limited["Count"].as_u64(), limited["ScannedCount"].as_u64()),
        (Some(0), Some(3))
    );
    assert!(limited.get("LastEvaluatedKey").is_some());
    let legacy = call(
        &db,
        "Scan",
        scan(
            json!({"ScanFilter": {"misc": {"ComparisonOperator": "LT", "AttributeValueList": [n(2)]}},
                    "AttributesToGet": ["sk"]}),
        ),
    );
    assert_eq!(legacy["Items"].as_array().unwrap().len(), 2);
    assert_eq!(legacy["Items"][0].as_object().unwrap().len(), 1);
}

#[test]
fn paginated_scans_return_every_item_once() {
    let db = seeded();
    for (index, expected) in [
        (None, 12),
        (Some("ByL"), 6),
        (Some("ByG"), 4),
        (Some("ByGAll"), 4),
    ] {
        for limit in [1, 2, 5] {
            let mut request = scan(json!({"Limit": limit}));
            if let Some(index) = index {
                request["IndexName"] = json!(index);
            }
            let (items, _) = all_pages(&db, "Scan", request);
            let keys: Vec<(String, String)> = items
                .iter()
                .map(|i| {
                    (
                        i["pk"]["S"].as_str().unwrap().into(),
                        i["sk"]["S"].as_str().unwrap().into(),
                    )
                })
                .collect();
            let unique: BTreeSet<_> = keys.iter().cloned().collect();
            assert_eq!(
                (keys.len(), unique.len()),
                (expected, expected),
                "{index:?} limit {limit}"
            );
        }
    }
}

#[test]
fn parallel_scan_segments_partition_the_table() {
    let db = seeded();
    for total in [1, 2, 3, 7] {
        let mut seen = Vec::new();
        for segment in 0..total {
            let (items, _) = all_pages(
                &db,
                "Scan",
                scan(json!({"Segment": segment, "TotalSegments": total, "Limit": 2})),
            );
            // One partition never spans two segments.
            for item in &items {
                assert!(!seen.iter().any(|(pk, seg): &(String, i64)| pk
                    == item["pk"]["S"].as_str().unwrap()
                    && *seg != segment));
            }
            seen.extend(
                items
                    .iter()
                    .map(|i| (i["pk"]["S"].as_str().unwrap().to_string(), segment)),
            );
        }
        assert_eq!(seen.len(), 12, "{total} segments");
    }
    let (gsi, _) = all_pages(
        &db,
        "Scan",
        scan(json!({"IndexName": "ByG", "Segment": 0, "TotalSegments": 1})),
    );
    assert_eq!(gsi.len(), 4);
}

#[test]
fn scan_checks_use_dynamodb_texts() {
    let db = seeded();
    assert_eq!(
        validation(&db, "Scan", scan(json!({"Segment": 1}))),
        "The TotalSegments parameter is required but was not present in the request when Segment parameter is present"
    );
    assert_eq!(
        validation(&db, "Scan", scan(json!({"TotalSegments": 2}))),
        "The Segment parameter is required but was not present in the request when parameter TotalSegments is present"
    );
    assert_eq!(
        validation(&db, "Scan", scan(json!({"Segment": 5, "TotalSegments": 5}))),
        "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 5 is not less than TotalSegments: 5"
    );
    assert_eq!(
        validation(&db, "Scan", scan(json!({"Segment": 0, "TotalSegments": 1_000_001}))),
        "1 validation error detected: Value '1000001' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to 1000000"
    );
    assert_eq!(
        validation(
            &db,
            "Scan",
            scan(json!({"IndexName": "ByG", "ConsistentRead": true}))
        ),
        "Consistent reads are not supported on global secondary indexes"
    );
    assert_eq!(
        validation(&db, "Scan", scan(json!({"IndexName": "Nope"}))),
        "The table does not have the specified index: Nope"
    );
    assert_eq!(
        validation(&db, "Scan", scan(json!({"IndexName": "ByG", "ProjectionExpression": "misc"}))),
        "One or more parameter values were invalid: Global secondary index ByG does not project [misc]"
    );
    assert_eq!(
        validation(
            &db,
            "Scan",
            scan(json!({"Select": "ALL_PROJECTED_ATTRIBUTES"}))
        ),
        "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"
    );
    assert_eq!(
        validation(&db, "Scan", scan(json!({"FilterExpression": "misc > :m", "ScanFilter": {}, "ExpressionAttributeValues": {":m": n(1)}}))),
        "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {ScanFilter} Expression parameters: {FilterExpression}"
    );
    assert_eq!(
        validation(&db, "Scan", scan(json!({"ExpressionAttributeValues": {":m": n(1)}}))),
        "ExpressionAttributeValues can only be specified when using expressions: FilterExpression is null"
    );
    let (code, message) = fail(&db, "Scan", json!({"TableName": "Missing"}));
    assert_eq!(code, "ResourceNotFoundException", "{message}");
    let invalid =
        "The provided starting key is invalid: The provided key element does not match the schema";
    assert_eq!(
        validation(
            &db,
            "Scan",
            scan(json!({"ExclusiveStartKey": {"pk": s("p1")}}))
        ),
        invalid
    );
    assert_eq!(
        validation(
            &db,
            "Scan",
            scan(json!({"IndexName": "ByG", "ExclusiveStartKey": {"pk": s("p1"), "sk": s("s01")}}))
        ),
        invalid
    );
}

#[test]
fn a_start_key_must_belong_to_its_segment() {
    let db = seeded();
    let first = call(
        &db,
        "Scan",
        scan(json!({"Segment": 0, "TotalSegments": 2, "Limit": 1})),
    );
    let other = call(
        &db,
        "Scan",
        scan(json!({"Segment": 1, "TotalSegments": 2, "Limit": 1})),
    );
    let (Some(key0), Some(key1)) = (first.get("LastEvaluatedKey"), other.get("LastEvaluatedKey"))
    else {
        panic!("both segments hold items: {first} {other}");
    };
    assert!(call(
        &db,
        "Scan",
        scan(json!({"Segment": 0, "TotalSegments": 2, "ExclusiveStartKey": key0}))
    )
    .is_object());
    assert_eq!(
        validation(
            &db,
            "Scan",
            scan(json!({"Segment": 0, "TotalSegments": 2, "ExclusiveStartKey": key1}))
        ),
        "The provided starting key is invalid: The provided key element does not match the schema"
    );
}

#[test]
fn scan_capacity_is_rounded_once() {
    let db = seeded();
    let response = call(
        &db,
        "Scan",
        scan(json!({"ReturnConsumedCapacity": "INDEXES", "ConsistentRead": true})),
    );
    assert_eq!(
        response["ConsumedCapacity"],
        json!({"TableName": "Tbl", "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}})
    );
    let gsi = call(
        &db,
        "Scan",
        scan(json!({"IndexName": "ByG", "ReturnConsumedCapacity": "TOTAL"})),
    );
    assert_eq!(
        gsi["ConsumedCapacity"],
        json!({"TableName": "Tbl", "CapacityUnits": 0.5})
    );
}
