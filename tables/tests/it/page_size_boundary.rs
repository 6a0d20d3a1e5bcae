//! The 1 MB page of Query and Scan at its exact boundary (SPEC §4.2 step 2): an entry whose
//! size would take the page past 1 MiB is not read into it (it starts the next page), a page
//! that reaches exactly 1 MiB ends there with a LastEvaluatedKey, and one that stays below
//! it reads on. Sizes are the model's (`item_size_bytes`), measured before the filter.

use crate::query_support;
use query_support::*;
use serde_json::{json, Value};

const PAGE_BYTES: usize = 1 << 20;
const LARGE_ITEM_BYTES: usize = 400_000;

/// Item `r` of partition `p`, padded so that its size is exactly `size` bytes.
fn item_of_size(r: i64, tag: &str, size: usize) -> Value {
    let mut item = json!({"pk": s("p"), "sk": n(r), "tag": s(tag), "pad": s("")});
    let bare = shoal_model::item_size_bytes(&shoal_model::item_from_json(&item).unwrap());
    item["pad"] = s(&"x".repeat(size - bare));
    assert_eq!(
        shoal_model::item_size_bytes(&shoal_model::item_from_json(&item).unwrap()),
        size
    );
    item
}

/// Table `Pages` (pk S, sk N) holding, in one partition, two large items and a third that
/// brings the three to `total` bytes, then `trailing` small items.
fn table_totalling(total: usize, trailing: i64) -> shoal_tables::Database {
    let db = database();
    call(
        &db,
        "CreateTable",
        json!({
            "TableName": "Pages",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"}
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
    put(&db, "Pages", item_of_size(1, "keep", LARGE_ITEM_BYTES));
    put(&db, "Pages", item_of_size(2, "drop", LARGE_ITEM_BYTES));
    put(
        &db,
        "Pages",
        item_of_size(3, "keep", total - 2 * LARGE_ITEM_BYTES),
    );
    for r in 4..4 + trailing {
        put(&db, "Pages", item_of_size(r, "keep", 100));
    }
    db
}

/// The first page of a Query and of a Scan of `Pages`, each without and with a filter that
/// drops item 2: (operation, filtered, response).
fn first_pages(db: &shoal_tables::Database) -> Vec<(&'static str, bool, Value)> {
    let query = json!({
        "TableName": "Pages",
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": s("p")}
    });
    let scan = json!({"TableName": "Pages"});
    let mut pages = Vec::new();
    for (operation, request) in [("Query", query), ("Scan", scan)] {
        for filtered in [false, true] {
            let mut request = request.clone();
            if filtered {
                request["FilterExpression"] = json!("tag = :keep");
                request["ExpressionAttributeValues"][":keep"] = s("keep");
            }
            pages.push((operation, filtered, call(db, operation, request)));
        }
    }
    pages
}

fn sort_keys(page: &Value) -> Vec<i64> {
    page["Items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["sk"]["N"].as_str().unwrap().parse().unwrap())
        .collect()
}

fn last_evaluated_sort_key(page: &Value) -> Option<i64> {
    page.get("LastEvaluatedKey")
        .map(|key| key["sk"]["N"].as_str().unwrap().parse().unwrap())
}

/// (ScannedCount, sort keys returned, LastEvaluatedKey's sort key) of each first page.
fn outline(page: &Value) -> (u64, Vec<i64>, Option<i64>) {
    (
        page["ScannedCount"].as_u64().unwrap(),
        sort_keys(page),
        last_evaluated_sort_key(page),
    )
}

fn expect(
    scanned: u64,
    filtered: bool,
    all: &[i64],
    lek: Option<i64>,
) -> (u64, Vec<i64>, Option<i64>) {
    let items = all
        .iter()
        .copied()
        .filter(|r| !filtered || *r != 2)
        .collect();
    (scanned, items, lek)
}

#[test]
fn one_byte_under_the_page_reads_on() {
    // Nothing follows: one page, no LastEvaluatedKey.
    let db = table_totalling(PAGE_BYTES - 1, 0);
    for (operation, filtered, page) in first_pages(&db) {
        assert_eq!(
            outline(&page),
            expect(3, filtered, &[1, 2, 3], None),
            "{operation} filtered={filtered}"
        );
    }
    // A one-byte-or-more item after it would cross: it starts the next page.
    let db = table_totalling(PAGE_BYTES - 1, 1);
    for (operation, filtered, page) in first_pages(&db) {
        assert_eq!(
            outline(&page),
            expect(3, filtered, &[1, 2, 3], Some(3)),
            "{operation} filtered={filtered}"
        );
    }
}

#[test]
fn exactly_the_page_ends_it_with_a_last_evaluated_key() {
    for trailing in [0, 1] {
        let db = table_totalling(PAGE_BYTES, trailing);
        for (operation, filtered, page) in first_pages(&db) {
            assert_eq!(
                outline(&page),
                expect(3, filtered, &[1, 2, 3], Some(3)),
                "{operation} filtered={filtered} trailing={trailing}"
            );
        }
    }
}

#[test]
fn the_entry_that_crosses_the_page_starts_the_next_one() {
    let db = table_totalling(PAGE_BYTES + 1, 0);
    for (operation, filtered, page) in first_pages(&db) {
        assert_eq!(
            outline(&page),
            expect(2, filtered, &[1, 2], Some(2)),
            "{operation} filtered={filtered}"
        );
    }
    // Paging on returns every item once.
    let (items, pages) = all_pages(&db, "Scan", json!({"TableName": "Pages"}));
    assert_eq!(items.len(), 3);
    assert_eq!(pages, 2);
}
