//! Queries of a GSI with a multi-attribute key (2 HASH, 3 RANGE attributes of types S, N
//! and B) against a model of sorted tuples: random items (some lacking a component, so not
//! indexed), then random key conditions — equality on both HASH attributes, equalities on a
//! RANGE prefix and any comparison on the next — read page by page in both directions. The
//! model keeps the indexed items, filters them by the condition and sorts them by (R1, R2,
//! R3, table key), each by its own type; every page sequence must return exactly that list.

use base64::Engine as _;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use shoal_tables::Database;

use crate::query_support::{all_pages, call, database, put};

/// Component values: h1 S, h2 N; r1 N, r2 S, r3 B.
const H1: [&str; 2] = ["a", "b"];
const H2: [i64; 2] = [1, 2];
const R1: [i64; 4] = [-2, 0, 3, 10];
const R2: [&str; 4] = ["a", "ab", "b", "ba"];
const R3: [&[u8]; 4] = [b"\x00", b"\x00\x01", b"\x01", b"\xff"];

#[derive(Debug, Clone)]
struct Row {
    p: usize,
    /// Indexes into the value tables; None: the attribute is absent.
    h1: Option<usize>,
    h2: Option<usize>,
    r1: Option<usize>,
    r2: Option<usize>,
    r3: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
    Between,
    BeginsWith,
}

#[derive(Debug, Clone)]
struct Query {
    h1: usize,
    h2: usize,
    /// How many RANGE attributes the condition names (0..=3).
    named: usize,
    /// Values of the equalities on the first `named - 1` RANGE attributes, then the last one's
    /// operand(s).
    values: [usize; 3],
    high: usize,
    op: Op,
    forward: bool,
    limit: Option<u32>,
}

fn optional(n: usize) -> impl Strategy<Value = Option<usize>> {
    prop_oneof![9 => (0..n).prop_map(Some), 1 => Just(None)]
}

fn rows() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec(
        (
            0..40usize,
            optional(2),
            optional(2),
            optional(4),
            optional(4),
            optional(4),
        )
            .prop_map(|(p, h1, h2, r1, r2, r3)| Row {
                p,
                h1,
                h2,
                r1,
                r2,
                r3,
            }),
        1..60,
    )
}

fn queries() -> impl Strategy<Value = Vec<Query>> {
    let op = prop_oneof![
        Just(Op::Eq),
        Just(Op::Lt),
        Just(Op::Le),
        Just(Op::Gt),
        Just(Op::Ge),
        Just(Op::Between),
        Just(Op::BeginsWith),
    ];
    prop::collection::vec(
        (
            0..2usize,
            0..2usize,
            0..=3usize,
            [0..4usize, 0..4usize, 0..4usize],
            0..4usize,
            op,
            any::<bool>(),
            prop::option::of(1..6u32),
        )
            .prop_map(|(h1, h2, named, values, high, op, forward, limit)| Query {
                h1,
                h2,
                named,
                values,
                high,
                op,
                forward,
                limit,
            }),
        1..12,
    )
}

fn s(v: &str) -> Value {
    json!({ "S": v })
}

fn n(v: i64) -> Value {
    json!({ "N": v.to_string() })
}

fn b(v: &[u8]) -> Value {
    json!({ "B": base64::engine::general_purpose::STANDARD.encode(v) })
}

/// The JSON value of RANGE attribute `position` (0, 1, 2) at value index `i`.
fn range_value(position: usize, i: usize) -> Value {
    match position {
        0 => n(R1[i]),
        1 => s(R2[i]),
        _ => b(R3[i]),
    }
}

fn create(db: &Database) {
    let def = |name: &str, ty: &str| json!({"AttributeName": name, "AttributeType": ty});
    let key = |name: &str, kind: &str| json!({"AttributeName": name, "KeyType": kind});
    call(
        db,
        "CreateTable",
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [def("p", "S"), def("h1", "S"), def("h2", "N"),
                def("r1", "N"), def("r2", "S"), def("r3", "B")],
            "KeySchema": [key("p", "HASH")],
            "GlobalSecondaryIndexes": [{
                "IndexName": "gsi",
                "KeySchema": [key("h1", "HASH"), key("h2", "HASH"),
                    key("r1", "RANGE"), key("r2", "RANGE"), key("r3", "RANGE")],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
}

fn row_item(row: &Row) -> Value {
    let mut item = Map::new();
    item.insert("p".into(), s(&format!("i{:02}", row.p)));
    if let Some(i) = row.h1 {
        item.insert("h1".into(), s(H1[i]));
    }
    if let Some(i) = row.h2 {
        item.insert("h2".into(), n(H2[i]));
    }
    for (position, (name, value)) in [("r1", row.r1), ("r2", row.r2), ("r3", row.r3)]
        .into_iter()
        .enumerate()
    {
        if let Some(i) = value {
            item.insert(name.into(), range_value(position, i));
        }
    }
    Value::Object(item)
}

/// Whether the value of RANGE attribute `position` at index `i` satisfies `op` against
/// value index `v` (and `high` for BETWEEN). Value tables are in DynamoDB order, so
/// comparing indexes compares values; begins_with compares the values themselves.
fn satisfies(position: usize, i: usize, op: Op, v: usize, high: usize) -> bool {
    match op {
        Op::Eq => i == v,
        Op::Lt => i < v,
        Op::Le => i <= v,
        Op::Gt => i > v,
        Op::Ge => i >= v,
        Op::Between => v <= i && i <= high,
        Op::BeginsWith => match position {
            1 => R2[i].starts_with(R2[v]),
            _ => R3[i].starts_with(R3[v]),
        },
    }
}

/// The condition text and its values; None when DynamoDB would refuse the shape
/// (begins_with on the N attribute, BETWEEN with bounds out of order).
fn condition(query: &Query) -> Option<(String, Value)> {
    let mut text = vec!["h2 = :h2".to_string(), "h1 = :h1".to_string()];
    let mut values = json!({":h1": s(H1[query.h1]), ":h2": n(H2[query.h2])});
    for (position, name) in ["r1", "r2", "r3"].into_iter().enumerate().take(query.named) {
        let value = format!(":v{position}");
        values[&value] = range_value(position, query.values[position]);
        if position + 1 < query.named {
            text.push(format!("{name} = {value}"));
            continue;
        }
        let clause = match query.op {
            Op::Eq => format!("{name} = {value}"),
            Op::Lt => format!("{name} < {value}"),
            Op::Le => format!("{name} <= {value}"),
            Op::Gt => format!("{name} > {value}"),
            Op::Ge => format!("{name} >= {value}"),
            Op::Between => {
                if query.high < query.values[position] {
                    return None;
                }
                values[":high"] = range_value(position, query.high);
                format!("{name} BETWEEN {value} AND :high")
            }
            Op::BeginsWith => {
                if position == 0 {
                    return None;
                }
                format!("begins_with({name}, {value})")
            }
        };
        // Clause order does not matter: the RANGE conditions go first, reversed.
        text.insert(0, clause);
    }
    Some((text.join(" AND "), values))
}

/// The `p` of every item the model returns for `query`, in order.
fn expected(items: &[Row], query: &Query) -> Vec<String> {
    let mut matching: Vec<(usize, usize, usize, String)> = items
        .iter()
        .filter_map(|row| {
            let (h1, h2, r1, r2, r3) = (row.h1?, row.h2?, row.r1?, row.r2?, row.r3?);
            if (h1, h2) != (query.h1, query.h2) {
                return None;
            }
            let tuple = [r1, r2, r3];
            for (position, value) in tuple.into_iter().enumerate().take(query.named) {
                let last = position + 1 == query.named;
                let (op, v) = if last {
                    (query.op, query.values[position])
                } else {
                    (Op::Eq, query.values[position])
                };
                if !satisfies(position, value, op, v, query.high) {
                    return None;
                }
            }
            Some((r1, r2, r3, format!("i{:02}", row.p)))
        })
        .collect();
    matching.sort();
    let mut order: Vec<String> = matching.into_iter().map(|(_, _, _, p)| p).collect();
    if !query.forward {
        order.reverse();
    }
    order
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn composite_key_queries_match_a_model_of_sorted_tuples(rows in rows(), queries in queries()) {
        let db = database();
        create(&db);
        // Later rows overwrite earlier ones with the same p.
        let mut items: Vec<Row> = Vec::new();
        for row in rows {
            put(&db, "Tbl", row_item(&row));
            items.retain(|r| r.p != row.p);
            items.push(row);
        }
        for query in &queries {
            let Some((text, values)) = condition(query) else {
                continue;
            };
            let mut request = json!({
                "TableName": "Tbl", "IndexName": "gsi",
                "KeyConditionExpression": text,
                "ExpressionAttributeValues": values,
                "ScanIndexForward": query.forward
            });
            if let Some(limit) = query.limit {
                request["Limit"] = json!(limit);
            }
            let (found, _) = all_pages(&db, "Query", request);
            let found: Vec<String> = found
                .iter()
                .map(|item| item["p"]["S"].as_str().unwrap_or("?").to_string())
                .collect();
            prop_assert_eq!(found, expected(&items, query), "{:?}", query);
        }
        prop_assert!(db.check().unwrap().is_sound());
    }
}
