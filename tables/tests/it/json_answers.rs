//! GetItem, BatchGetItem, Query and Scan answered as JSON text
//! (`Database::execute_json_text`), whose items are written straight from their stored
//! bytes, give byte for byte the text of the typed answer (`Database::get_item`,
//! `batch_get_item`, `query`, `scan`: decoded items) written by `shoal_model::json_text`,
//! with the same capacity and the same metering of what they returned; projected, filtered
//! and fetched items keep the decoded path and are still shaped.

use serde_json::json;
use shoal_model::json_text;
use shoal_tables::api::batch::BatchGetItemInput;
use shoal_tables::api::items::GetItemInput;
use shoal_tables::api::query::{QueryRequest, ScanRequest};
use shoal_tables::{Database, Options};

fn open() -> Database {
    let db = Database::open_in_memory(Options::default()).unwrap();
    for table in ["Tbl", "Other"] {
        db.execute(
            "CreateTable",
            json!({
                "TableName": table,
                "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
                "BillingMode": "PAY_PER_REQUEST"
            }),
        )
        .unwrap();
    }
    // Every kind of value, nested, with names and strings that need escapes.
    let item = json!({
        "k": {"S": "a"},
        "n": {"N": "-12.50e3"},
        "z": {"N": "0"},
        "b": {"B": "AAEC/w=="},
        "t": {"BOOL": true},
        "nul": {"NULL": true},
        "say \"hi\"\n": {"S": "tab\there, é€😀 \u{1} \\"},
        "m": {"M": {"a": {"L": [{"S": ""}, {"N": "1e-5"}, {"M": {}}]}, "b": {"SS": ["x", "y\""]}}},
        "ns": {"NS": ["1", "-2.5", "3e10"]},
        "bs": {"BS": ["AQ==", "Ag=="]},
        "l": {"L": []}
    });
    for table in ["Tbl", "Other"] {
        db.execute("PutItem", json!({"TableName": table, "Item": item}))
            .unwrap();
        db.execute(
            "PutItem",
            json!({"TableName": table, "Item": {"k": {"S": "big"}, "p": {"S": "x".repeat(4600)}}}),
        )
        .unwrap();
    }
    db
}

const CAPACITY: [Option<&str>; 4] = [None, Some("NONE"), Some("TOTAL"), Some("INDEXES")];

/// GetItem bodies: item present or absent, each ReturnConsumedCapacity, consistent or not,
/// whole or projected.
fn get_item_bodies() -> Vec<serde_json::Value> {
    let mut bodies = Vec::new();
    for key in ["a", "big", "absent"] {
        for capacity in CAPACITY {
            for consistent in [None, Some(true)] {
                for projection in [None, Some("n, m.a[1], #q"), Some("absent")] {
                    let mut body = json!({"TableName": "Tbl", "Key": {"k": {"S": key}}});
                    if let Some(capacity) = capacity {
                        body["ReturnConsumedCapacity"] = json!(capacity);
                    }
                    if let Some(consistent) = consistent {
                        body["ConsistentRead"] = json!(consistent);
                    }
                    if let Some(projection) = projection {
                        body["ProjectionExpression"] = json!(projection);
                        if projection.contains("#q") {
                            body["ExpressionAttributeNames"] = json!({"#q": "say \"hi\"\n"});
                        }
                    }
                    bodies.push(body);
                }
            }
        }
    }
    bodies.push(
        json!({"TableName": "Tbl", "Key": {"k": {"S": "a"}}, "AttributesToGet": ["k", "bs"]}),
    );
    bodies
}

#[test]
fn get_item_answers_the_decoded_items_text_byte_for_byte() {
    let db = open();
    for body in get_item_bodies() {
        let typed = |body: serde_json::Value| {
            db.get_item(serde_json::from_value::<GetItemInput>(body).unwrap())
                .unwrap()
        };
        assert_text_matches_typed(&db, "GetItem", &body, typed, |answer| {
            answer.item.iter().cloned().collect()
        });
    }
}

/// A 4,605-byte item (name `k` and `big`, name `p` and 4,600 bytes) is two 4 KB read units
/// strongly consistent, one eventually consistent; an absent item costs the half or whole
/// unit of a read of nothing.
#[test]
fn get_item_answered_as_text_charges_the_units_counted_by_hand() {
    let db = open();
    for (key, consistent, units) in [
        ("big", true, 2.0),
        ("big", false, 1.0),
        ("absent", true, 1.0),
        ("absent", false, 0.5),
    ] {
        let body = json!({"TableName": "Tbl", "Key": {"k": {"S": key}},
            "ConsistentRead": consistent, "ReturnConsumedCapacity": "TOTAL"});
        let answer = db
            .execute_json_text("GetItem", &serde_json::to_vec(&body).unwrap())
            .unwrap();
        let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(
            answer["ConsumedCapacity"],
            json!({"TableName": "Tbl", "CapacityUnits": units}),
            "{body}"
        );
        let (_, charge) =
            db.execute_json_text_charged(None, "GetItem", &serde_json::to_vec(&body).unwrap());
        assert_eq!(charge.units, Some(units));
        let returned = charge.returned.unwrap();
        let expected_bytes = if key == "big" { 1 + 3 + 1 + 4600 } else { 0 };
        assert_eq!(returned.bytes, expected_bytes);
    }
}

#[test]
fn batch_get_item_answers_the_decoded_items_text_byte_for_byte() {
    let db = open();
    for capacity in CAPACITY {
        for projected in [false, true] {
            let keys = json!([{"k": {"S": "a"}}, {"k": {"S": "absent"}}, {"k": {"S": "big"}}]);
            let mut other = json!({"Keys": keys, "ConsistentRead": true});
            if projected {
                other["ProjectionExpression"] = json!("k, ns, m.b");
            }
            let mut body = json!({"RequestItems": {"Tbl": {"Keys": keys}, "Other": other}});
            if let Some(capacity) = capacity {
                body["ReturnConsumedCapacity"] = json!(capacity);
            }
            let typed = |body: serde_json::Value| {
                db.batch_get_item(serde_json::from_value::<BatchGetItemInput>(body).unwrap())
                    .unwrap()
            };
            assert_text_matches_typed(&db, "BatchGetItem", &body, typed, |answer| {
                answer.responses.values().flatten().cloned().collect()
            });
        }
    }
}

/// The parsed path (`Database::execute`, which builds items) is not the one that changed:
/// it still answers the same items the text path writes.
#[test]
fn parsed_and_text_answers_hold_the_same_items() {
    let db = open();
    for body in get_item_bodies() {
        let text = db
            .execute_json_text("GetItem", &serde_json::to_vec(&body).unwrap())
            .unwrap();
        let text: serde_json::Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(text, db.execute("GetItem", body.clone()).unwrap(), "{body}");
    }
}

/// A table keyed `pk`/`sk` with an LSI (`ByL`, KEYS_ONLY: ALL_ATTRIBUTES fetches) and two
/// GSIs (`ByAll` projecting ALL, `ByKeys` KEYS_ONLY), holding 300 items of about 4.6 KB in
/// two partitions, so a page without a Limit stops at 1 MB, and the item of `open` with
/// every kind of value.
fn open_paged() -> Database {
    let db = open();
    let s = |name: &str| json!({"AttributeName": name, "AttributeType": "S"});
    let key = |hash: &str, range: &str| json!([{"AttributeName": hash, "KeyType": "HASH"}, {"AttributeName": range, "KeyType": "RANGE"}]);
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Paged",
            "AttributeDefinitions": [s("pk"), s("sk"), s("l"), s("g")],
            "KeySchema": key("pk", "sk"),
            "LocalSecondaryIndexes": [{"IndexName": "ByL", "KeySchema": key("pk", "l"),
                "Projection": {"ProjectionType": "KEYS_ONLY"}}],
            "GlobalSecondaryIndexes": [
                {"IndexName": "ByAll", "KeySchema": key("g", "sk"),
                    "Projection": {"ProjectionType": "ALL"}},
                {"IndexName": "ByKeys", "KeySchema": key("g", "l"),
                    "Projection": {"ProjectionType": "KEYS_ONLY"}}
            ],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    for i in 0..300 {
        let item = json!({
            "pk": {"S": format!("p{}", i % 2)}, "sk": {"S": format!("s{i:04}")},
            "l": {"S": format!("l{:04}", 300 - i)}, "g": {"S": "g"},
            "n": {"N": format!("{}", i as f64 / 4.0)},
            "pad": {"S": "\"x\u{7}".repeat(1500)},
        });
        db.execute("PutItem", json!({"TableName": "Paged", "Item": item}))
            .unwrap();
    }
    let every_kind = db
        .execute(
            "GetItem",
            json!({"TableName": "Tbl", "Key": {"k": {"S": "a"}}}),
        )
        .unwrap()["Item"]
        .clone();
    let mut every_kind = every_kind.as_object().unwrap().clone();
    every_kind.remove("k");
    for (name, value) in [("pk", "p0"), ("sk", "s9999"), ("l", "l9999"), ("g", "g")] {
        every_kind.insert(name.to_string(), json!({"S": value}));
    }
    db.execute("PutItem", json!({"TableName": "Paged", "Item": every_kind}))
        .unwrap();
    db
}

/// Query bodies: the table, each index, forward and back, with and without a Limit, a
/// filter, a projection, each Select, each ReturnConsumedCapacity.
fn query_bodies() -> Vec<serde_json::Value> {
    let mut bodies = Vec::new();
    for index in [None, Some("ByL"), Some("ByAll"), Some("ByKeys")] {
        let on_gsi = index.is_some_and(|index| index.starts_with("By") && index != "ByL");
        let condition = if on_gsi { "g = :v" } else { "pk = :v" };
        let value = if on_gsi { "g" } else { "p0" };
        for shape in [
            "whole",
            "limit",
            "back",
            "filter",
            "projection",
            "count",
            "all",
        ] {
            let mut body = json!({"TableName": "Paged", "KeyConditionExpression": condition,
                "ExpressionAttributeValues": {":v": {"S": value}}});
            if let Some(index) = index {
                body["IndexName"] = json!(index);
            }
            match shape {
                "limit" => body["Limit"] = json!(7),
                "back" => {
                    body["ScanIndexForward"] = json!(false);
                    body["Limit"] = json!(3);
                }
                "filter" => {
                    body["FilterExpression"] = json!("n > :n");
                    body["ExpressionAttributeValues"][":n"] = json!({"N": "10"});
                    if index == Some("ByKeys") {
                        continue; // not projected: refused, as the typed path refuses it
                    }
                }
                "projection" => body["ProjectionExpression"] = json!("sk, pk, l, g"),
                "count" => body["Select"] = json!("COUNT"),
                "all" => match index {
                    None | Some("ByKeys") => continue,
                    Some("ByL") => body["Select"] = json!("ALL_ATTRIBUTES"),
                    Some(_) => body["Select"] = json!("ALL_PROJECTED_ATTRIBUTES"),
                },
                _ => {}
            }
            for capacity in CAPACITY {
                let mut body = body.clone();
                if let Some(capacity) = capacity {
                    body["ReturnConsumedCapacity"] = json!(capacity);
                }
                bodies.push(body);
            }
        }
    }
    bodies
}

/// Runs `operation` with `body` over JSON text and typed (`typed` decodes the body and
/// answers with decoded items): the texts must be equal, and so must the metering of what
/// was returned.
fn assert_text_matches_typed<T: serde::Serialize>(
    db: &Database,
    operation: &str,
    body: &serde_json::Value,
    typed: impl FnOnce(serde_json::Value) -> T,
    items: impl FnOnce(&T) -> Vec<shoal_model::Item>,
) {
    let text = serde_json::to_vec(body).unwrap();
    let (answer, charge) = db.execute_json_text_charged(None, operation, &text);
    let answer = answer.unwrap();
    let typed = typed(body.clone());
    let expected = json_text::to_vec(&typed).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&answer),
        String::from_utf8_lossy(&expected),
        "{body}"
    );
    let items = items(&typed);
    let returned = charge.returned.unwrap();
    assert_eq!(returned.items, items.len() as u64, "{body}");
    let size: usize = items.iter().map(shoal_model::item_size_bytes).sum();
    assert_eq!(returned.bytes, size as u64, "{body}");
}

#[test]
fn query_answers_the_decoded_items_text_byte_for_byte() {
    let db = open_paged();
    let mut paged_at_the_size_cap = 0;
    for body in query_bodies() {
        let typed = |body: serde_json::Value| {
            db.query(serde_json::from_value::<QueryRequest>(body).unwrap())
                .unwrap()
        };
        let first = typed(body.clone());
        if body.get("Limit").is_none() && first.last_evaluated_key.is_some() {
            paged_at_the_size_cap += 1;
        }
        assert_text_matches_typed(&db, "Query", &body, typed, |page| {
            page.items.clone().unwrap_or_default()
        });
        // The page after the first, from its LastEvaluatedKey.
        if let Some(start) = first.last_evaluated_key {
            let mut next = body.clone();
            next["ExclusiveStartKey"] = shoal_model::item_to_json(&start);
            assert_text_matches_typed(&db, "Query", &next, typed, |page| {
                page.items.clone().unwrap_or_default()
            });
        }
    }
    // Whole items of 4.6 KB stop a page at 1 MB: its last key comes from an entry that was
    // never decoded (the table, ByL and ByAll, whole, each ReturnConsumedCapacity).
    assert!(paged_at_the_size_cap >= 12, "{paged_at_the_size_cap}");
}

#[test]
fn scan_answers_the_decoded_items_text_byte_for_byte() {
    let db = open_paged();
    for index in [None, Some("ByL"), Some("ByAll"), Some("ByKeys")] {
        for (limit, segment) in [
            (None, None),
            (Some(5), None),
            (None, Some(1)),
            (Some(2), Some(0)),
        ] {
            for filter in [false, true] {
                let mut body = json!({"TableName": "Paged", "ReturnConsumedCapacity": "INDEXES"});
                if let Some(index) = index {
                    body["IndexName"] = json!(index);
                }
                if let Some(limit) = limit {
                    body["Limit"] = json!(limit);
                }
                if let Some(segment) = segment {
                    body["Segment"] = json!(segment);
                    body["TotalSegments"] = json!(2);
                }
                if filter {
                    body["FilterExpression"] = json!("begins_with(sk, :s)");
                    body["ExpressionAttributeValues"] = json!({":s": {"S": "s00"}});
                }
                let typed = |body: serde_json::Value| {
                    db.scan(serde_json::from_value::<ScanRequest>(body).unwrap())
                        .unwrap()
                };
                assert_text_matches_typed(&db, "Scan", &body, typed, |page| {
                    page.items.clone().unwrap_or_default()
                });
            }
        }
    }
}

/// Items of 4,012 bytes (`pk` and `p`: 3, `sk` and `s000`: 6, `pad` and 4,000 bytes: 4,003)
/// read by a Query or a Scan over JSON text: one page sums its items' sizes and rounds up
/// to 4 KB units (SPEC §5), halved when eventually consistent. A BatchGetItem rounds up
/// each item instead.
#[test]
fn query_scan_and_batch_answered_as_text_charge_the_units_counted_by_hand() {
    let db = open();
    let s = |name: &str| json!({"AttributeName": name, "AttributeType": "S"});
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Sized",
            "AttributeDefinitions": [s("pk"), s("sk")],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    for i in 0..5 {
        let item = json!({"pk": {"S": "p"}, "sk": {"S": format!("s{i:03}")},
            "pad": {"S": "x".repeat(4000)}});
        db.execute("PutItem", json!({"TableName": "Sized", "Item": item}))
            .unwrap();
    }
    let mut cases = Vec::new();
    for (limit, consistent, units, bytes) in [
        (1, true, 1.0, 4012),
        (2, true, 2.0, 8024),  // 8,024 bytes: 1.96 units, rounded up to 2
        (3, true, 3.0, 12036), // 12,036 bytes: 2.94 units, 3
        (3, false, 1.5, 12036),
        (5, false, 2.5, 20060), // 20,060 bytes: 4.9 units, 5, halved
    ] {
        let query = json!({"TableName": "Sized", "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": "p"}}, "Limit": limit,
            "ConsistentRead": consistent, "ReturnConsumedCapacity": "TOTAL"});
        cases.push(("Query", query, "Sized", limit, units, bytes));
        let scan = json!({"TableName": "Sized", "Limit": limit,
            "ConsistentRead": consistent, "ReturnConsumedCapacity": "TOTAL"});
        cases.push(("Scan", scan, "Sized", limit, units, bytes));
    }
    // `big` (4,605 bytes: 2 units) and `small` (name `k` and `small`: 6 bytes, 1 unit) are 3
    // units strongly consistent, 1.5 eventually; their 4,611 bytes rounded up as one would be 2.
    db.execute(
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"k": {"S": "small"}}}),
    )
    .unwrap();
    for (consistent, units) in [(true, 3.0), (false, 1.5)] {
        let batch = json!({"RequestItems": {"Tbl": {"ConsistentRead": consistent,
            "Keys": [{"k": {"S": "big"}}, {"k": {"S": "small"}}]}}, "ReturnConsumedCapacity": "TOTAL"});
        cases.push(("BatchGetItem", batch, "Tbl", 2, units, 4605 + 6));
    }
    for (operation, body, table, items, units, bytes) in cases {
        let (answer, charge) =
            db.execute_json_text_charged(None, operation, &serde_json::to_vec(&body).unwrap());
        let answer: serde_json::Value = serde_json::from_slice(&answer.unwrap()).unwrap();
        let consumed = match operation {
            "BatchGetItem" => answer["ConsumedCapacity"][0].clone(),
            _ => {
                assert_eq!(answer["Count"], json!(items), "{body}");
                answer["ConsumedCapacity"].clone()
            }
        };
        assert_eq!(
            consumed,
            json!({"TableName": table, "CapacityUnits": units}),
            "{body}"
        );
        assert_eq!(charge.units, Some(units), "{body}");
        let returned = charge.returned.unwrap();
        assert_eq!(returned.items, items, "{body}");
        assert_eq!(returned.bytes, bytes, "{body}");
    }
}
