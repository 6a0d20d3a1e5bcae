//! Property: for random items and random simple statements, a PartiQL SELECT answers exactly
//! as the Query or Scan written in the expression language that it stands for: the same
//! items, in the same order, for the same capacity.

use proptest::prelude::*;
use serde_json::{json, Value};
use shoal_tables::{Database, Options};

fn open(items: &[(u8, u8, u8, String)]) -> Database {
    let db = Database::open_in_memory(Options::default()).unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Tbl",
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
    )
    .unwrap();
    for (pk, sk, a, b) in items {
        db.execute(
            "PutItem",
            json!({"TableName": "Tbl", "Item": {
                "pk": {"S": format!("p{pk}")},
                "sk": {"N": sk.to_string()},
                "a": {"N": a.to_string()},
                "b": {"S": b},
                "pad": {"S": "x".repeat(usize::from(*a) * 700)}
            }}),
        )
        .unwrap();
    }
    db
}

/// A random simple statement: its PartiQL text, and the equivalent request in the
/// expression language (operation, body).
#[derive(Debug, Clone)]
struct Case {
    partiql: String,
    operation: &'static str,
    request: Value,
}

fn comparator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["=", "<", "<=", ">", ">="])
}

fn case() -> impl Strategy<Value = Case> {
    let pk = 0u8..3;
    let sort = prop::option::of((comparator(), 0u8..8));
    let filter = || prop::option::of((comparator(), 0u8..4));
    let prefix = || prop::option::of("[ab]{0,2}");
    let descending = any::<bool>();
    let query = (pk, sort, filter(), prefix(), descending).prop_map(
        |(pk, sort, filter, prefix, descending)| {
            let mut partiql = format!("SELECT * FROM Tbl WHERE pk = 'p{pk}'");
            let mut key = "pk = :pk".to_string();
            let mut values = json!({":pk": {"S": format!("p{pk}")}});
            if let Some((op, v)) = sort {
                partiql.push_str(&format!(" AND sk {op} {v}"));
                key.push_str(&format!(" AND sk {op} :sk"));
                values[":sk"] = json!({"N": v.to_string()});
            }
            let mut filters = Vec::new();
            if let Some((op, v)) = filter {
                partiql.push_str(&format!(" AND a {op} {v}"));
                filters.push(format!("a {op} :a"));
                values[":a"] = json!({"N": v.to_string()});
            }
            if let Some(prefix) = prefix {
                partiql.push_str(&format!(" AND begins_with(b, '{prefix}')"));
                filters.push("begins_with(b, :b)".to_string());
                values[":b"] = json!({"S": prefix});
            }
            if descending {
                partiql.push_str(" ORDER BY sk DESC");
            }
            let mut request = json!({
                "TableName": "Tbl",
                "KeyConditionExpression": key,
                "ExpressionAttributeValues": values,
                "ScanIndexForward": !descending,
            });
            if !filters.is_empty() {
                request["FilterExpression"] = json!(filters.join(" AND "));
            }
            Case {
                partiql,
                operation: "Query",
                request,
            }
        },
    );
    let scan = (filter(), prefix()).prop_map(|(filter, prefix)| {
        let mut parts = Vec::new();
        let mut filters = Vec::new();
        let mut values = json!({});
        if let Some((op, v)) = filter {
            parts.push(format!("a {op} {v}"));
            filters.push(format!("a {op} :a"));
            values[":a"] = json!({"N": v.to_string()});
        }
        if let Some(prefix) = prefix {
            parts.push(format!("begins_with(b, '{prefix}')"));
            filters.push("begins_with(b, :b)".to_string());
            values[":b"] = json!({"S": prefix});
        }
        let mut partiql = "SELECT * FROM Tbl".to_string();
        let mut request = json!({"TableName": "Tbl"});
        if !parts.is_empty() {
            partiql.push_str(&format!(" WHERE {}", parts.join(" AND ")));
            request["FilterExpression"] = json!(filters.join(" AND "));
            request["ExpressionAttributeValues"] = values;
        }
        Case {
            partiql,
            operation: "Scan",
            request,
        }
    });
    prop_oneof![query, scan]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn select_answers_as_the_query_or_scan_it_stands_for(
        items in prop::collection::vec((0u8..3, 0u8..8, 0u8..4, "[ab]{0,3}"), 0..24),
        cases in prop::collection::vec(case(), 1..6),
    ) {
        let db = open(&items);
        for case in cases {
            let mut request = case.request.clone();
            request["ReturnConsumedCapacity"] = json!("TOTAL");
            let expected = db.execute(case.operation, request).unwrap();
            let answered = db
                .execute(
                    "ExecuteStatement",
                    json!({"Statement": case.partiql, "ReturnConsumedCapacity": "TOTAL"}),
                )
                .unwrap();
            prop_assert_eq!(&answered["Items"], &expected["Items"], "{}", case.partiql);
            // A whole-key SELECT runs as a GetItem, whose answer also names the units as
            // read units: the same capacity, in a larger shape.
            for member in ["TableName", "CapacityUnits"] {
                prop_assert_eq!(
                    &answered["ConsumedCapacity"][member],
                    &expected["ConsumedCapacity"][member],
                    "{}",
                    case.partiql
                );
            }
        }
    }
}

/// Statement-shaped token soup: keywords, names, literals and punctuation of PartiQL.
fn token_soup() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "SELECT",
        "*",
        "FROM",
        "Tbl",
        "\"Tbl\"",
        ".",
        "WHERE",
        "pk",
        "sk",
        "a",
        "b",
        "=",
        "<>",
        "<",
        ">=",
        "AND",
        "OR",
        "NOT",
        "IN",
        "[",
        "]",
        "(",
        ")",
        "BETWEEN",
        "IS",
        "MISSING",
        "NULL",
        "'p1'",
        "1",
        "-2.5e3",
        "?",
        "INSERT",
        "INTO",
        "VALUE",
        "{",
        "}",
        "'pk'",
        ":",
        ",",
        "UPDATE",
        "SET",
        "REMOVE",
        "DELETE",
        "RETURNING",
        "ALL",
        "OLD",
        "NEW",
        "EXISTS",
        "begins_with",
        "size",
        "set_add",
        "list_append",
        "<<",
        ">>",
        "ORDER",
        "BY",
        "DESC",
        "attribute_exists",
        "+",
        "#",
        "/*",
        "--",
        "TRUE",
    ]);
    prop::collection::vec(token, 0..24).prop_map(|tokens| tokens.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the text, the answer is a DynamoDB error or a result: a statement the parser
    /// refuses is a ValidationException, and nothing is an internal error or a panic.
    #[test]
    fn arbitrary_statements_never_panic(
        text in prop_oneof![token_soup(), "\\PC{0,60}"],
        parameters in 0usize..3,
    ) {
        let db = open(&[(1, 1, 1, "ab".to_string())]);
        if let Err(error) = shoal_expr::partiql::parse_statement(&text) {
            prop_assert_eq!(error.code.name(), "ValidationException");
        }
        let mut body = json!({"Statement": text, "ReturnConsumedCapacity": "TOTAL"});
        if parameters > 0 {
            body["Parameters"] = json!(vec![json!({"S": "p1"}); parameters]);
        }
        if let Err(error) = db.execute("ExecuteStatement", body) {
            prop_assert_ne!(error.code.name(), "InternalServerError");
        }
    }
}
