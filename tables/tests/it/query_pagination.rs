//! Pagination against a model: random items with many tied index keys, paged with a random
//! Limit in both directions on the table, an LSI and two GSIs (and scanned), must return
//! exactly the full result — each entry once, in the order the key layout defines.

use crate::query_support;
use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use query_support::*;
use serde_json::{json, Value};

const PARTITIONS: [&str; 3] = ["a", "b", "c"];
const GSI_HASHES: [&str; 2] = ["x", "y"];

/// One write: partition, sort key, and the optional index attributes (few values: ties).
#[derive(Debug, Clone)]
struct Row {
    partition: usize,
    sort: u8,
    l: Option<i64>,
    g: Option<usize>,
    r: Option<i64>,
}

fn row() -> impl Strategy<Value = Row> {
    (
        0..PARTITIONS.len(),
        0u8..12,
        proptest::option::of(-1i64..2),
        proptest::option::of(0..GSI_HASHES.len()),
        proptest::option::of(0i64..2),
    )
        .prop_map(|(partition, sort, l, g, r)| Row {
            partition,
            sort,
            l,
            g,
            r,
        })
}

/// A table key: (pk, sk).
type TableKey = (String, String);

/// Where an entry sorts: (index sort value, then the tiebreak strings).
type SortPosition = (i64, String, String);

/// The model: the last write of each table key.
type Model = BTreeMap<TableKey, Row>;

fn sk_of(row: &Row) -> String {
    format!("s{:02}", row.sort)
}

fn item_of(row: &Row) -> Value {
    let mut item = json!({"pk": s(PARTITIONS[row.partition]), "sk": s(&sk_of(row)), "inc": n(row.sort.into())});
    if let Some(l) = row.l {
        item["l"] = n(l);
    }
    if let Some(g) = row.g {
        item["g"] = s(GSI_HASHES[g]);
    }
    if let Some(r) = row.r {
        item["r"] = n(r);
    }
    item
}

/// (pk, sk) of every returned item, in order.
fn keys(items: &[Value]) -> Vec<TableKey> {
    items
        .iter()
        .map(|i| {
            (
                i["pk"]["S"].as_str().unwrap().to_string(),
                i["sk"]["S"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Pages through `request` and checks the concatenation against `expected` (in order).
fn check_pages(
    db: &shoal_tables::Database,
    op: &str,
    request: Value,
    expected: &[TableKey],
) -> Result<(), TestCaseError> {
    let (items, _) = all_pages(db, op, request.clone());
    let got = keys(&items);
    prop_assert_eq!(got.as_slice(), expected, "{}", request);
    Ok(())
}

fn ordered(mut entries: Vec<(SortPosition, TableKey)>, forward: bool) -> Vec<TableKey> {
    entries.sort();
    if !forward {
        entries.reverse();
    }
    entries.into_iter().map(|(_, key)| key).collect()
}

fn run(rows: Vec<Row>, limit: i64) -> Result<(), TestCaseError> {
    let db = database();
    create_indexed_table(&db);
    let mut model = Model::new();
    for row in rows {
        put(&db, "Tbl", item_of(&row));
        model.insert((PARTITIONS[row.partition].to_string(), sk_of(&row)), row);
    }
    for forward in [true, false] {
        for pk in PARTITIONS {
            let in_partition = || model.iter().filter(move |((p, _), _)| p == pk);
            let query = |index: Option<&str>| {
                let mut request = json!({"TableName": "Tbl", "KeyConditionExpression": "pk = :p",
                    "ExpressionAttributeValues": {":p": s(pk)}, "Limit": limit, "ScanIndexForward": forward});
                if let Some(index) = index {
                    request["IndexName"] = json!(index);
                }
                request
            };
            let table = ordered(
                in_partition()
                    .map(|(k, _)| ((0, k.1.clone(), String::new()), k.clone()))
                    .collect(),
                forward,
            );
            check_pages(&db, "Query", query(None), &table)?;
            let lsi = ordered(
                in_partition()
                    .filter_map(|(k, row)| {
                        row.l.map(|l| ((l, k.1.clone(), String::new()), k.clone()))
                    })
                    .collect(),
                forward,
            );
            check_pages(&db, "Query", query(Some("ByL")), &lsi)?;
        }
        for (g_index, g) in GSI_HASHES.iter().enumerate() {
            let query = |index: &str| {
                json!({"TableName": "Tbl", "IndexName": index, "KeyConditionExpression": "g = :g",
                       "ExpressionAttributeValues": {":g": s(g)}, "Limit": limit, "ScanIndexForward": forward})
            };
            let with_g = || model.iter().filter(move |(_, row)| row.g == Some(g_index));
            // Ties on the index key are ordered by table key (pk, sk).
            let by_g = ordered(
                with_g()
                    .filter_map(|(k, row)| {
                        row.r.map(|r| ((r, k.0.clone(), k.1.clone()), k.clone()))
                    })
                    .collect(),
                forward,
            );
            check_pages(&db, "Query", query("ByG"), &by_g)?;
            let by_g_all = ordered(
                with_g()
                    .map(|(k, _)| ((0, k.0.clone(), k.1.clone()), k.clone()))
                    .collect(),
                forward,
            );
            check_pages(&db, "Query", query("ByGAll"), &by_g_all)?;
        }
    }
    // Scans: hash order across partitions, so compare as sets, and demand no repeats.
    let scans: [(Option<&str>, BTreeSet<TableKey>); 3] = [
        (None, model.keys().cloned().collect()),
        (
            Some("ByL"),
            model
                .iter()
                .filter(|(_, r)| r.l.is_some())
                .map(|(k, _)| k.clone())
                .collect(),
        ),
        (
            Some("ByG"),
            model
                .iter()
                .filter(|(_, r)| r.g.is_some() && r.r.is_some())
                .map(|(k, _)| k.clone())
                .collect(),
        ),
    ];
    for (index, expected) in scans {
        let mut request = json!({"TableName": "Tbl", "Limit": limit});
        if let Some(index) = index {
            request["IndexName"] = json!(index);
        }
        let (items, _) = all_pages(&db, "Scan", request);
        let got = keys(&items);
        let unique: BTreeSet<_> = got.iter().cloned().collect();
        prop_assert_eq!(
            got.len(),
            unique.len(),
            "repeated entries in scan of {:?}",
            index
        );
        prop_assert_eq!(unique, expected, "scan of {:?}", index);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn pages_concatenate_to_the_full_result(rows in proptest::collection::vec(row(), 0..40), limit in 1i64..6) {
        run(rows, limit)?;
    }
}

#[test]
fn many_ties_on_one_index_key_page_exactly_once() {
    let rows: Vec<Row> = (0..12)
        .map(|i| Row {
            partition: i % 3,
            sort: i as u8,
            l: Some(0),
            g: Some(0),
            r: Some(1),
        })
        .collect();
    for limit in 1..5 {
        run(rows.clone(), limit).unwrap();
    }
}
