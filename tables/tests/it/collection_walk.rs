//! `Core::largest_item_collections`, what the console's item collection panel reads: the
//! largest collections by their size records, found by stepping from collection to
//! collection, bounded per call and resumable.

use serde_json::json;
use shoal_model::AttributeValue;
use shoal_tables::{Database, Options};

use crate::items_support::create_indexed_table;

#[test]
fn the_largest_collections_are_found_in_bounded_resumable_walks() {
    let db = Database::open_in_memory(Options::default()).unwrap();
    create_indexed_table(&db);
    // Partition c<i> has i + 1 items: c9 is the largest collection, c0 the smallest.
    for customer in 0..10 {
        for order in 0..=customer {
            db.execute(
                "PutItem",
                json!({"TableName": "Tbl", "Item": {
                    "pk": {"S": format!("c{customer}")},
                    "sk": {"S": format!("o{order}")},
                    "l": {"S": format!("l{order}")},
                    "pad": {"S": "x".repeat(100)}
                }}),
            )
            .unwrap();
        }
    }
    let whole = db.largest_item_collections("Tbl", None, 100, 3).unwrap();
    assert_eq!(whole.visited, 10);
    assert_eq!(whole.next, None);
    let names: Vec<AttributeValue> = whole
        .largest
        .iter()
        .map(|c| c.partition_key.clone())
        .collect();
    assert_eq!(
        names,
        ["c9", "c8", "c7"].map(|s| AttributeValue::S(s.into()))
    );
    assert_eq!(whole.largest[0].record.item_count, 10);
    assert!(whole.largest[0].record.size_bytes > whole.largest[1].record.size_bytes);

    // Four at a time: three walks meet every collection once, and find the same largest.
    let mut seen = 0;
    let mut after = None;
    let mut best = Vec::new();
    loop {
        let walk = db
            .largest_item_collections("Tbl", after.as_deref(), 4, 10)
            .unwrap();
        assert!(walk.visited <= 4);
        seen += walk.visited;
        best.extend(walk.largest);
        match walk.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, 10);
    assert_eq!(best.len(), 10);
    best.sort_by_key(|c| std::cmp::Reverse(c.record.size_bytes));
    assert_eq!(best[0].partition_key, AttributeValue::S("c9".into()));

    // A deleted collection has no record and is no longer listed.
    for order in 0..=9 {
        db.execute(
            "DeleteItem",
            json!({"TableName": "Tbl", "Key": {
                "pk": {"S": "c9"}, "sk": {"S": format!("o{order}")}
            }}),
        )
        .unwrap();
    }
    let after_delete = db.largest_item_collections("Tbl", None, 100, 1).unwrap();
    assert_eq!(
        after_delete.largest[0].partition_key,
        AttributeValue::S("c8".into())
    );
    assert_eq!(after_delete.visited, 9);
    assert!(db.largest_item_collections("Missing", None, 10, 1).is_err());
}
