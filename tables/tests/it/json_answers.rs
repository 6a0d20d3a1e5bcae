//! GetItem and BatchGetItem answered as JSON text (`Database::execute_json_text`), whose
//! items are written straight from their stored bytes, give byte for byte the text of the
//! typed answer (`Database::get_item`, `batch_get_item`: decoded items) written by
//! `shoal_model::json_text`, with the same capacity and the same metering of what they
//! returned; projected items keep the decoded path and are still projected.

use serde_json::json;
use shoal_model::json_text;
use shoal_tables::api::batch::BatchGetItemInput;
use shoal_tables::api::items::GetItemInput;
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
        let text = serde_json::to_vec(&body).unwrap();
        let (answer, charge) = db.execute_json_text_charged(None, "GetItem", &text);
        let answer = answer.unwrap();
        let input: GetItemInput = serde_json::from_value(body.clone()).unwrap();
        let typed = db.get_item(input).unwrap();
        let expected = json_text::to_vec(&typed).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&answer),
            String::from_utf8_lossy(&expected),
            "{body}"
        );
        let returned = charge.returned.unwrap();
        assert_eq!(returned.items, u64::from(typed.item.is_some()), "{body}");
        let size = typed.item.as_ref().map_or(0, shoal_model::item_size_bytes);
        assert_eq!(returned.bytes, size as u64, "{body}");
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
            let text = serde_json::to_vec(&body).unwrap();
            let (answer, charge) = db.execute_json_text_charged(None, "BatchGetItem", &text);
            let answer = answer.unwrap();
            let input: BatchGetItemInput = serde_json::from_value(body.clone()).unwrap();
            let typed = db.batch_get_item(input).unwrap();
            let expected = json_text::to_vec(&typed).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&answer),
                String::from_utf8_lossy(&expected),
                "{body}"
            );
            let items: Vec<_> = typed.responses.values().flatten().collect();
            let returned = charge.returned.unwrap();
            assert_eq!(returned.items, items.len() as u64);
            let size: usize = items
                .iter()
                .map(|item| shoal_model::item_size_bytes(item))
                .sum();
            assert_eq!(returned.bytes, size as u64, "{body}");
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
