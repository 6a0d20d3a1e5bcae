//! GSIs with multi-attribute keys (SPEC-3 §1, rules A1–A30): declaring them, their
//! descriptions, sparse indexing and type checks, every Query rule with its text, order,
//! pages, projections, UpdateTable's backfill and delete, PartiQL's refusal and the check.

use std::time::{Duration, Instant};

use crate::query_support;
use query_support::*;
use serde_json::{json, Value};
use shoal_tables::Database;

fn key(name: &str, kind: &str) -> Value {
    json!({"AttributeName": name, "KeyType": kind})
}

fn def(name: &str, ty: &str) -> Value {
    json!({"AttributeName": name, "AttributeType": ty})
}

fn b(bytes: &[u8]) -> Value {
    use base64::Engine as _;
    json!({ "B": base64::engine::general_purpose::STANDARD.encode(bytes) })
}

/// CreateTable of table `Tbl` (HASH `p`) with one GSI `gsi` of `key_schema` over the
/// attribute definitions `definitions` (besides `p`).
fn create_request(key_schema: Value, definitions: &[(&str, &str)]) -> Value {
    let mut defs = vec![def("p", "S")];
    defs.extend(definitions.iter().map(|(n, t)| def(n, t)));
    json!({
        "TableName": "Tbl",
        "AttributeDefinitions": defs,
        "KeySchema": [key("p", "HASH")],
        "GlobalSecondaryIndexes": [{
            "IndexName": "gsi",
            "KeySchema": key_schema,
            "Projection": {"ProjectionType": "ALL"}
        }],
        "BillingMode": "PAY_PER_REQUEST"
    })
}

/// Table `Tbl` with GSI `gsi`: HASH h1 (S), h2 (N); RANGE r1 (S), r2 (N).
fn two_by_two() -> Database {
    let db = database();
    call(
        &db,
        "CreateTable",
        create_request(
            json!([
                key("h1", "HASH"),
                key("h2", "HASH"),
                key("r1", "RANGE"),
                key("r2", "RANGE")
            ]),
            &[("h1", "S"), ("h2", "N"), ("r1", "S"), ("r2", "N")],
        ),
    );
    db
}

fn item(p: &str, h1: &str, h2: i64, r1: &str, r2: i64) -> Value {
    json!({"p": s(p), "h1": s(h1), "h2": n(h2), "r1": s(r1), "r2": n(r2), "x": s("data")})
}

/// A Query of `gsi` with `condition` and those of the values :h1 = "a", :h2 = 1 and
/// `values` it names.
fn query(condition: &str, values: Value) -> Value {
    let mut all = json!({":h1": s("a"), ":h2": n(1)});
    for (k, v) in values.as_object().unwrap() {
        all[k] = v.clone();
    }
    all.as_object_mut()
        .unwrap()
        .retain(|k, _| condition.contains(k.as_str()));
    json!({
        "TableName": "Tbl",
        "IndexName": "gsi",
        "KeyConditionExpression": condition,
        "ExpressionAttributeValues": all
    })
}

/// The `p` of each item a Query of `gsi` returns, every page.
fn ps(db: &Database, request: Value) -> Vec<String> {
    strings(&all_pages(db, "Query", request).0, "p")
}

/// Items of partition (a, 1): r1 in {x, y}, r2 in {2, 10}, plus one of another partition.
fn seeded() -> Database {
    let db = two_by_two();
    for (p, r1, r2) in [
        ("i4", "y", 10),
        ("i1", "x", 2),
        ("i3", "y", 2),
        ("i2", "x", 10),
    ] {
        put(&db, "Tbl", item(p, "a", 1, r1, r2));
    }
    put(&db, "Tbl", item("other", "a", 2, "x", 2));
    db
}

fn describe(db: &Database) -> Value {
    call(db, "DescribeTable", json!({"TableName": "Tbl"}))["Table"].clone()
}

#[test]
fn composite_shapes_are_created_and_described_in_declared_order() {
    let shapes = [
        (
            json!([key("a", "HASH"), key("b", "HASH")]),
            vec![("a", "S"), ("b", "S")],
        ),
        (
            json!([key("a", "HASH"), key("b", "RANGE"), key("c", "RANGE")]),
            vec![("a", "S"), ("b", "N"), ("c", "S")],
        ),
        (
            json!([
                key("h1", "HASH"),
                key("h2", "HASH"),
                key("h3", "HASH"),
                key("h4", "HASH"),
                key("r1", "RANGE"),
                key("r2", "RANGE"),
                key("r3", "RANGE"),
                key("r4", "RANGE")
            ]),
            vec![
                ("h1", "N"),
                ("h2", "S"),
                ("h3", "B"),
                ("h4", "S"),
                ("r1", "N"),
                ("r2", "S"),
                ("r3", "B"),
                ("r4", "S"),
            ],
        ),
        (
            json!([
                key("a", "HASH"),
                key("b", "RANGE"),
                key("c", "RANGE"),
                key("d", "RANGE"),
                key("e", "RANGE")
            ]),
            vec![("a", "S"), ("b", "S"), ("c", "S"), ("d", "S"), ("e", "S")],
        ),
    ];
    for (schema, definitions) in shapes {
        let db = database();
        let created = call(
            &db,
            "CreateTable",
            create_request(schema.clone(), &definitions),
        );
        assert_eq!(
            created["TableDescription"]["GlobalSecondaryIndexes"][0]["KeySchema"],
            schema
        );
        let table = describe(&db);
        assert_eq!(table["GlobalSecondaryIndexes"][0]["KeySchema"], schema);
        assert_eq!(
            table["AttributeDefinitions"].as_array().unwrap().len(),
            definitions.len() + 1,
            "each attribute defined once"
        );
    }
}

#[test]
fn two_composite_gsis_share_an_attribute_and_swap_roles() {
    let db = database();
    let request = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [def("p", "S"), def("a", "S"), def("b", "S")],
        "KeySchema": [key("p", "HASH")],
        "GlobalSecondaryIndexes": [
            {"IndexName": "by_ab", "KeySchema": [key("a", "HASH"), key("b", "RANGE")],
             "Projection": {"ProjectionType": "ALL"}},
            {"IndexName": "by_ba", "KeySchema": [key("b", "HASH"), key("a", "RANGE")],
             "Projection": {"ProjectionType": "ALL"}},
            {"IndexName": "by_a_b", "KeySchema": [key("a", "HASH"), key("b", "HASH")],
             "Projection": {"ProjectionType": "KEYS_ONLY"}},
            {"IndexName": "by_a", "KeySchema": [key("a", "HASH")],
             "Projection": {"ProjectionType": "ALL"}}
        ],
        "BillingMode": "PAY_PER_REQUEST"
    });
    call(&db, "CreateTable", request);
    put(
        &db,
        "Tbl",
        json!({"p": s("1"), "a": s("A"), "b": s("B"), "x": s("X")}),
    );
    let q = |index: &str, condition: &str| {
        let mut values = json!({":a": s("A"), ":b": s("B")});
        values
            .as_object_mut()
            .unwrap()
            .retain(|k, _| condition.contains(k.as_str()));
        json!({"TableName": "Tbl", "IndexName": index, "KeyConditionExpression": condition,
               "ExpressionAttributeValues": values})
    };
    for (index, condition) in [
        ("by_ab", "a = :a AND b = :b"),
        ("by_ba", "b = :b AND a = :a"),
        ("by_a_b", "a = :a AND b = :b"),
        ("by_a", "a = :a"),
    ] {
        assert_eq!(ps(&db, q(index, condition)), ["1"], "{index}");
    }
    // KEYS_ONLY: the table key and every component, nothing else.
    let keys_only = call(&db, "Query", q("by_a_b", "a = :a AND b = :b"));
    assert_eq!(
        keys_only["Items"][0],
        json!({"p": s("1"), "a": s("A"), "b": s("B")})
    );
    // The two-HASH index needs both.
    assert_eq!(
        validation(&db, "Query", q("by_a_b", "a = :a")),
        "HASH key attributes b must have equality conditions specified in the query"
    );
    assert!(db.check().unwrap().is_sound());
}

#[test]
fn invalid_composite_key_schemas_get_dynamodb_texts() {
    let cases: Vec<(Value, &str)> = vec![
        (
            json!([key("a", "HASH"), key("b", "HASH"), key("c", "HASH"), key("d", "HASH"), key("e", "HASH")]),
            "One or more parameter values were invalid: The KeySchema exceeds the maximum allowed number of HASH key attributes",
        ),
        (
            json!([key("a", "HASH"), key("b", "RANGE"), key("c", "RANGE"), key("d", "RANGE"), key("e", "RANGE"), key("f", "RANGE")]),
            "One or more parameter values were invalid: The KeySchema exceeds the maximum allowed number of RANGE key attributes",
        ),
        (
            json!([key("a", "HASH"), key("b", "RANGE"), key("c", "HASH")]),
            "One or more parameter values were invalid: All HASH key attributes must precede RANGE key attributes in the KeySchema",
        ),
        (
            json!([key("a", "RANGE"), key("b", "HASH"), key("c", "HASH")]),
            "Invalid KeySchema: The first KeySchemaElement is not a HASH key type",
        ),
        (
            json!([key("a", "RANGE"), key("b", "RANGE"), key("c", "RANGE")]),
            "Invalid KeySchema: The first KeySchemaElement is not a HASH key type",
        ),
        (
            json!([key("a", "HASH"), key("a", "HASH")]),
            "The KeySchema contains multiple key attributes with the same name",
        ),
        (
            json!([key("a", "HASH"), key("b", "RANGE"), key("a", "RANGE")]),
            "The KeySchema contains multiple key attributes with the same name",
        ),
        (
            json!([key("a", "HASH"), key("g", "HASH")]),
            "One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [g], AttributeDefinitions: [p, a, b, c, d, e, f]",
        ),
    ];
    let definitions = [
        ("a", "S"),
        ("b", "S"),
        ("c", "S"),
        ("d", "S"),
        ("e", "S"),
        ("f", "S"),
    ];
    for (schema, expected) in cases {
        let db = database();
        assert_eq!(
            validation(
                &db,
                "CreateTable",
                create_request(schema.clone(), &definitions)
            ),
            expected,
            "{schema}"
        );
    }
    // The neighbours that keep their texts: a classic two-element GSI with one name twice,
    // a table key of three elements, an LSI of three.
    let db = database();
    assert_eq!(
        validation(
            &db,
            "CreateTable",
            create_request(json!([key("a", "HASH"), key("a", "RANGE")]), &[("a", "S")])
        ),
        "Invalid KeySchema: Some index key attribute have no definition"
    );
    let mut table_key = create_request(json!([key("a", "HASH")]), &[("a", "S"), ("b", "S")]);
    table_key["KeySchema"] = json!([key("p", "HASH"), key("a", "RANGE"), key("b", "RANGE")]);
    assert!(validation(&db, "CreateTable", table_key)
        .ends_with("at 'keySchema' failed to satisfy constraint: Member must have length less than or equal to 2"));
    let lsi = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [def("p", "S"), def("c", "S"), def("l", "S")],
        "KeySchema": [key("p", "HASH"), key("c", "RANGE")],
        "LocalSecondaryIndexes": [{"IndexName": "lsi",
            "KeySchema": [key("p", "HASH"), key("c", "RANGE"), key("l", "RANGE")],
            "Projection": {"ProjectionType": "ALL"}}],
        "BillingMode": "PAY_PER_REQUEST"
    });
    assert_eq!(
        validation(&db, "CreateTable", lsi),
        "1 validation error detected: Value '[KeySchemaElement(attributeName=p, keyType=HASH), KeySchemaElement(attributeName=c, keyType=RANGE), KeySchemaElement(attributeName=l, keyType=RANGE)]' at 'localSecondaryIndexes.1.member.keySchema' failed to satisfy constraint: Member must have length less than or equal to 2"
    );
    // A classic [HASH, HASH] of a table key is still the second-element rule.
    let mut two_hash = create_request(json!([key("a", "HASH")]), &[("a", "S"), ("b", "S")]);
    two_hash["KeySchema"] = json!([key("p", "HASH"), key("a", "HASH")]);
    assert_eq!(
        validation(&db, "CreateTable", two_hash),
        "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type"
    );
}

#[test]
fn update_table_applies_the_same_rules_and_backfills() {
    let db = database();
    call(
        &db,
        "CreateTable",
        json!({"TableName": "Tbl", "AttributeDefinitions": [def("p", "S")],
               "KeySchema": [key("p", "HASH")], "BillingMode": "PAY_PER_REQUEST"}),
    );
    for i in 0..5 {
        put(
            &db,
            "Tbl",
            json!({"p": s(&format!("i{i}")), "a": s("A"), "b": n(i), "c": s("C"), "d": n(10 - i)}),
        );
    }
    put(
        &db,
        "Tbl",
        json!({"p": s("sparse"), "a": s("A"), "b": n(1), "c": s("C")}),
    );
    let create = |schema: Value| {
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [def("a", "S"), def("b", "N"), def("c", "S"), def("d", "N"), def("e", "S")],
            "GlobalSecondaryIndexUpdates": [{"Create": {
                "IndexName": "gsi", "KeySchema": schema,
                "Projection": {"ProjectionType": "ALL"}}}]
        })
    };
    let five_hash = json!([
        key("a", "HASH"),
        key("b", "HASH"),
        key("c", "HASH"),
        key("d", "HASH"),
        key("e", "HASH")
    ]);
    assert_eq!(
        validation(&db, "UpdateTable", create(five_hash)),
        "One or more parameter values were invalid: The KeySchema exceeds the maximum allowed number of HASH key attributes"
    );
    assert_eq!(
        validation(
            &db,
            "UpdateTable",
            create(json!([key("a", "HASH"), key("b", "RANGE"), key("c", "HASH")]))
        ),
        "One or more parameter values were invalid: All HASH key attributes must precede RANGE key attributes in the KeySchema"
    );
    let mut request = create(json!([
        key("a", "HASH"),
        key("c", "HASH"),
        key("d", "RANGE"),
        key("b", "RANGE")
    ]));
    request["AttributeDefinitions"] =
        json!([def("a", "S"), def("b", "N"), def("c", "S"), def("d", "N")]);
    let updated = call(&db, "UpdateTable", request);
    let index = &updated["TableDescription"]["GlobalSecondaryIndexes"][0];
    assert_eq!(index["IndexStatus"], "CREATING");
    assert_eq!(index["KeySchema"][3], key("b", "RANGE"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while describe(&db)["GlobalSecondaryIndexes"][0]["IndexStatus"] != "ACTIVE" {
        assert!(Instant::now() < deadline, "backfill did not finish");
        std::thread::sleep(Duration::from_millis(5));
    }
    let request = json!({"TableName": "Tbl", "IndexName": "gsi",
        "KeyConditionExpression": "a = :a AND c = :c",
        "ExpressionAttributeValues": {":a": s("A"), ":c": s("C")}});
    // Ordered by d (10 - i): i4 first; the item without d is not indexed.
    assert_eq!(ps(&db, request.clone()), ["i4", "i3", "i2", "i1", "i0"]);
    assert!(db.check().unwrap().is_sound());

    // Delete: the index is gone, its type constraints with it.
    call(
        &db,
        "UpdateTable",
        json!({"TableName": "Tbl", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "gsi"}}]}),
    );
    assert_eq!(
        validation(&db, "Query", request),
        "The table does not have the specified index: gsi"
    );
    put(&db, "Tbl", json!({"p": s("n"), "a": n(7), "b": n(8)}));
}

#[test]
fn items_missing_any_component_are_not_indexed() {
    let db = two_by_two();
    put(&db, "Tbl", item("full", "a", 1, "x", 2));
    for missing in ["h1", "h2", "r1", "r2"] {
        let mut partial = item(&format!("no-{missing}"), "a", 1, "x", 2);
        partial.as_object_mut().unwrap().remove(missing);
        put(&db, "Tbl", partial);
    }
    let all = query("h1 = :h1 AND h2 = :h2", json!({}));
    assert_eq!(ps(&db, all.clone()), ["full"]);
    let scan = call(&db, "Scan", json!({"TableName": "Tbl", "IndexName": "gsi"}));
    assert_eq!(strings(scan["Items"].as_array().unwrap(), "p"), ["full"]);
    // BatchWriteItem: the same rule.
    let put_request = |item: Value| json!({"PutRequest": {"Item": item}});
    let mut sparse = item("batch-sparse", "a", 1, "x", 3);
    sparse.as_object_mut().unwrap().remove("r1");
    call(
        &db,
        "BatchWriteItem",
        json!({"RequestItems": {"Tbl": [put_request(item("batch", "a", 1, "x", 3)), put_request(sparse)]}}),
    );
    assert_eq!(ps(&db, all.clone()), ["full", "batch"]);

    // REMOVE of any component subset drops the entry; SET back restores it.
    for removed in [
        "h1", "h2", "r1", "r2", "h1, h2", "r1, r2", "h1, r2", "h2, r1",
    ] {
        call(
            &db,
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": {"p": s("full")}, "UpdateExpression": format!("REMOVE {removed}")}),
        );
        assert_eq!(ps(&db, all.clone()), ["batch"], "after REMOVE {removed}");
        call(
            &db,
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": {"p": s("full")},
                   "UpdateExpression": "SET h1 = :h1, h2 = :h2, r1 = :r1, r2 = :r2",
                   "ExpressionAttributeValues": {":h1": s("a"), ":h2": n(1), ":r1": s("x"), ":r2": n(2)}}),
        );
        assert_eq!(ps(&db, all.clone()), ["full", "batch"], "after SET back");
    }
    // Moving the whole tuple: the old one no longer finds it.
    put(&db, "Tbl", item("full", "b", 9, "z", 1));
    assert_eq!(ps(&db, all.clone()), ["batch"]);
    let moved = json!({"TableName": "Tbl", "IndexName": "gsi",
        "KeyConditionExpression": "h1 = :h1 AND h2 = :h2",
        "ExpressionAttributeValues": {":h1": s("b"), ":h2": n(9)}});
    assert_eq!(ps(&db, moved.clone()), ["full"]);
    call(
        &db,
        "DeleteItem",
        json!({"TableName": "Tbl", "Key": {"p": s("full")}}),
    );
    assert!(ps(&db, moved).is_empty());
    call(
        &db,
        "BatchWriteItem",
        json!({"RequestItems": {"Tbl": [{"DeleteRequest": {"Key": {"p": s("batch")}}}]}}),
    );
    assert!(ps(&db, all).is_empty());
    assert!(db.check().unwrap().is_sound());
}

#[test]
fn a_wrong_type_or_empty_component_rejects_the_whole_write() {
    let db = two_by_two();
    for (attribute, value, expected, actual) in [
        ("h1", n(1), "S", "N"),
        ("h2", s("1"), "N", "S"),
        ("r1", n(1), "S", "N"),
        ("r2", s("1"), "N", "S"),
    ] {
        let mut bad = item("bad", "a", 1, "x", 2);
        bad[attribute] = value;
        assert_eq!(
            validation(&db, "PutItem", json!({"TableName": "Tbl", "Item": bad.clone()})),
            format!("One or more parameter values were invalid: Type mismatch for Index Key {attribute} Expected: {expected} Actual: {actual} IndexName: gsi")
        );
        let batch = json!({"RequestItems": {"Tbl": [
            {"PutRequest": {"Item": item("good", "a", 1, "x", 2)}},
            {"PutRequest": {"Item": bad}}
        ]}});
        assert!(validation(&db, "BatchWriteItem", batch).contains("Type mismatch"));
    }
    let mut empty = item("empty", "", 1, "x", 2);
    assert_eq!(
        validation(&db, "PutItem", json!({"TableName": "Tbl", "Item": empty.clone()})),
        "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty string value. IndexName: gsi, IndexKey: h1"
    );
    empty["h1"] = s("a");
    // The RANGE components of one index measure 1024 bytes together.
    empty["r1"] = s(&"r".repeat(1023));
    assert_eq!(
        validation(&db, "PutItem", json!({"TableName": "Tbl", "Item": empty.clone()})),
        format!(
            "Aggregate size for RANGE key attributes r1,r2 of index gsi has exceeded limit 1024 bytes, with actual size {} bytes",
            1023 + shoal_model::AttributeValue::N(shoal_model::Number::from_i64(2)).size_bytes()
        )
    );
    empty["r1"] = s(&"r".repeat(1000 - 24));
    put(&db, "Tbl", empty);
    let scan = call(&db, "Scan", json!({"TableName": "Tbl"}));
    assert_eq!(strings(scan["Items"].as_array().unwrap(), "p"), ["empty"]);
}

#[test]
fn mixed_type_components_index_and_query() {
    let db = database();
    let schema = json!([
        key("h1", "HASH"),
        key("h2", "HASH"),
        key("h3", "HASH"),
        key("h4", "HASH"),
        key("r1", "RANGE"),
        key("r2", "RANGE"),
        key("r3", "RANGE"),
        key("r4", "RANGE")
    ]);
    let types = [
        ("h1", "N"),
        ("h2", "S"),
        ("h3", "B"),
        ("h4", "S"),
        ("r1", "N"),
        ("r2", "S"),
        ("r3", "B"),
        ("r4", "S"),
    ];
    call(&db, "CreateTable", create_request(schema, &types));
    let row = |p: &str, r1: i64, r3: &[u8]| {
        json!({"p": s(p), "h1": n(1), "h2": s("two"), "h3": b(b"\x03"), "h4": s("four"),
               "r1": n(r1), "r2": s("m"), "r3": b(r3), "r4": s("z")})
    };
    put(&db, "Tbl", row("c", 10, b"\x00"));
    put(&db, "Tbl", row("a", -5, b"\xff"));
    put(&db, "Tbl", row("b", 10, b"\x00\x01"));
    put(&db, "Tbl", row("d", 9, b"\x01"));
    let q = |condition: &str| {
        let request = json!({"TableName": "Tbl", "IndexName": "gsi",
               "KeyConditionExpression": format!("h1 = :h1 AND h2 = :h2 AND {condition} AND h3 = :h3 AND h4 = :h4"),
               "ExpressionAttributeValues": {":h1": n(1), ":h2": s("two"), ":h3": b(b"\x03"), ":h4": s("four"),
                   ":r1": n(10), ":r2": s("m"), ":r3": b(b"\x00"), ":lo": n(0)}});
        let mut request = request;
        request["ExpressionAttributeValues"]
            .as_object_mut()
            .unwrap()
            .retain(|k, _| condition.contains(k.as_str()) || k.starts_with(":h"));
        request
    };
    // N orders numerically, B by bytes, the prefix bytes first.
    assert_eq!(ps(&db, q("r1 >= :lo")), ["d", "c", "b"]);
    assert_eq!(ps(&db, q("r1 = :r1 AND r2 = :r2 AND r3 > :r3")), ["b"]);
    assert_eq!(
        ps(&db, q("r1 = :r1 AND r2 = :r2 AND begins_with(r3, :r3)")),
        ["c", "b"]
    );
    let mut descending = json!({"TableName": "Tbl", "IndexName": "gsi",
        "KeyConditionExpression": "h1 = :h1 AND h2 = :h2 AND h3 = :h3 AND h4 = :h4",
        "ExpressionAttributeValues": {":h1": n(1), ":h2": s("two"), ":h3": b(b"\x03"), ":h4": s("four")},
        "ScanIndexForward": false});
    assert_eq!(ps(&db, descending.clone()), ["b", "c", "d", "a"]);
    descending["ScanIndexForward"] = json!(true);
    assert_eq!(ps(&db, descending), ["a", "d", "c", "b"]);
    assert!(db.check().unwrap().is_sound());
}

#[test]
fn key_condition_rules_and_texts() {
    let db = seeded();
    let values = json!({":x": s("x"), ":two": n(2), ":ten": n(10), ":y": s("y")});
    let ok = |condition: &str| ps(&db, query(condition, values.clone()));
    assert_eq!(ok("h1 = :h1 AND h2 = :h2"), ["i1", "i2", "i3", "i4"]);
    assert_eq!(ok("h1 = :h1 AND h2 = :h2 AND r1 = :x"), ["i1", "i2"]);
    assert_eq!(
        ok("h1 = :h1 AND h2 = :h2 AND r1 = :x AND r2 = :ten"),
        ["i2"]
    );
    assert_eq!(ok("h1 = :h1 AND h2 = :h2 AND r1 > :x"), ["i3", "i4"]);
    assert_eq!(
        ok("h1 = :h1 AND h2 = :h2 AND r1 >= :x"),
        ["i1", "i2", "i3", "i4"]
    );
    assert_eq!(ok("h1 = :h1 AND h2 = :h2 AND r1 < :y"), ["i1", "i2"]);
    assert_eq!(ok("h1 = :h1 AND h2 = :h2 AND r1 <= :x"), ["i1", "i2"]);
    assert_eq!(
        ok("h1 = :h1 AND h2 = :h2 AND r1 BETWEEN :x AND :y"),
        ["i1", "i2", "i3", "i4"]
    );
    assert_eq!(
        ok("h1 = :h1 AND h2 = :h2 AND begins_with(r1, :y)"),
        ["i3", "i4"]
    );
    assert_eq!(
        ok("h1 = :h1 AND h2 = :h2 AND r1 = :y AND r2 < :ten"),
        ["i3"]
    );
    // Clause order is irrelevant.
    assert_eq!(
        ok("r2 > :two AND h2 = :h2 AND r1 = :x AND h1 = :h1"),
        ["i2"]
    );
    assert_eq!(ok("(h2 = :h2) AND (h1 = :h1 AND r1 = :y)"), ["i3", "i4"]);

    let error = |condition: &str| validation(&db, "Query", query(condition, values.clone()));
    let hash = |names: &str| {
        format!("HASH key attributes {names} must have equality conditions specified in the query")
    };
    assert_eq!(error("h1 = :h1"), hash("h2"));
    assert_eq!(error("h2 = :h2"), hash("h1"));
    assert_eq!(error("h1 = :h1 AND h2 > :h2"), hash("h2"));
    assert_eq!(error("h1 = :h1 AND h2 BETWEEN :h2 AND :two"), hash("h2"));
    assert_eq!(error("r1 = :x AND r2 = :two"), hash("h1,h2"));
    assert_eq!(error("begins_with(h1, :h1) AND h2 = :h2"), hash("h1"));
    let range = |names: &str, on: &str| {
        format!("RANGE key attributes {names} must have equality conditions specified in the query because a condition is present on key attribute {on}")
    };
    assert_eq!(
        error("h1 = :h1 AND h2 = :h2 AND r2 = :two"),
        range("r1", "r2")
    );
    assert_eq!(
        error("h1 = :h1 AND h2 = :h2 AND r1 > :x AND r2 = :two"),
        range("r1", "r2")
    );
    assert_eq!(
        error("h1 = :h1 AND h2 = :h2 AND r1 > :x AND r2 > :two"),
        range("r1", "r2")
    );
    assert_eq!(
        error("h1 = :h1 AND h2 = :h2 AND begins_with(r1, :x) AND r2 = :two"),
        range("r1", "r2")
    );
    let mismatch = "One or more parameter values were invalid: Condition parameter type does not match schema type";
    assert_eq!(error("h1 = :two AND h2 = :h2"), mismatch);
    assert_eq!(error("h1 = :h1 AND h2 = :h2 AND r1 = :two"), mismatch);
    assert_eq!(
        error("h1 = :h1 AND h2 = :h2 AND r1 = :x AND r2 = :x"),
        mismatch
    );
    assert!(
        error("h1 = :h1 AND h2 = :h2 AND r1 = :x AND begins_with(r2, :two)")
            .contains("begins_with")
    );
    // SPEC §4.2's texts for everything else.
    assert_eq!(
        error("h1 = :h1 AND h2 = :h2 AND x = :x"),
        "Query key condition not supported"
    );
    assert_eq!(
        error("h1 = :h1 AND h2 = :h2 AND r1 > :x AND r1 < :y"),
        "Invalid KeyConditionExpression: KeyConditionExpressions must only contain one condition per key"
    );
    assert!(error("h1 = :h1 OR h2 = :h2").ends_with("KeyConditionExpression: OR"));
    // Aliases.
    let mut aliased = query("#a = :h1 AND #b = :h2 AND #c = :y", values.clone());
    aliased["ExpressionAttributeNames"] = json!({"#a": "h1", "#b": "h2", "#c": "r1"});
    assert_eq!(ps(&db, aliased), ["i3", "i4"]);
    // A GSI read is never consistent.
    let mut consistent = query("h1 = :h1 AND h2 = :h2", json!({}));
    consistent["ConsistentRead"] = json!(true);
    assert_eq!(
        validation(&db, "Query", consistent),
        "Consistent reads are not supported on global secondary indexes"
    );
}

#[test]
fn legacy_key_conditions_follow_the_same_rules() {
    let db = seeded();
    let condition =
        |op: &str, values: Value| json!({"ComparisonOperator": op, "AttributeValueList": values});
    let request = |conditions: Value| json!({"TableName": "Tbl", "IndexName": "gsi", "KeyConditions": conditions});
    let found = ps(
        &db,
        request(json!({
            "h1": condition("EQ", json!([s("a")])),
            "h2": condition("EQ", json!([n(1)])),
            "r1": condition("EQ", json!([s("y")])),
            "r2": condition("GT", json!([n(2)]))
        })),
    );
    assert_eq!(found, ["i4"]);
    assert_eq!(
        validation(
            &db,
            "Query",
            request(json!({
                "h1": condition("EQ", json!([s("a")])),
                "h2": condition("EQ", json!([n(1)])),
                "r2": condition("GT", json!([n(2)]))
            }))
        ),
        "RANGE key attributes r1 must have equality conditions specified in the query because a condition is present on key attribute r2"
    );
}

#[test]
fn filters_may_not_name_index_components_but_may_name_the_table_key() {
    let db = seeded();
    for (filter, names) in [
        ("h2 = :h2", json!(null)),
        ("r1 = :y", json!(null)),
        ("#r = :y", json!({"#r": "r2"})),
    ] {
        let mut request = query("h1 = :h1 AND h2 = :h2", json!({}));
        request["FilterExpression"] = json!(filter);
        if filter.contains(":y") {
            request["ExpressionAttributeValues"][":y"] = s("y");
        }
        if !names.is_null() {
            request["ExpressionAttributeNames"] = names;
        }
        let message = validation(&db, "Query", request);
        assert!(
            message.starts_with("Filter Expression can only contain non-primary key attributes: Primary key attribute: "),
            "{message}"
        );
    }
    let mut base_key = query("h1 = :h1 AND h2 = :h2", json!({}));
    base_key["FilterExpression"] = json!("p = :p");
    base_key["ExpressionAttributeValues"][":p"] = s("i3");
    assert_eq!(ps(&db, base_key), ["i3"]);
    let mut non_key = query("h1 = :h1 AND h2 = :h2", json!({}));
    non_key["FilterExpression"] = json!("x = :d");
    non_key["ExpressionAttributeValues"][":d"] = s("data");
    assert_eq!(ps(&db, non_key).len(), 4);
}

#[test]
fn pages_carry_every_component_and_resume_without_loss() {
    let db = two_by_two();
    let mut expected = Vec::new();
    for i in 0..15 {
        let r1 = ["m", "k", "z"][i % 3];
        let r2 = (i as i64 * 7) % 5;
        put(&db, "Tbl", item(&format!("i{i:02}"), "a", 1, r1, r2));
        expected.push((r1.to_string(), r2, format!("i{i:02}")));
    }
    expected.sort();
    let expected: Vec<String> = expected.into_iter().map(|(_, _, p)| p).collect();
    for limit in [1, 2, 3, 8, 10, 15] {
        let mut request = query("h1 = :h1 AND h2 = :h2", json!({}));
        request["Limit"] = json!(limit);
        let first = call(&db, "Query", request.clone());
        let lek = &first["LastEvaluatedKey"];
        let mut names: Vec<&String> = lek.as_object().unwrap().keys().collect();
        names.sort();
        assert_eq!(names, ["h1", "h2", "p", "r1", "r2"], "limit {limit}");
        assert_eq!(ps(&db, request.clone()), expected, "limit {limit}");
        let mut backwards = request;
        backwards["ScanIndexForward"] = json!(false);
        let mut reversed = expected.clone();
        reversed.reverse();
        assert_eq!(ps(&db, backwards), reversed, "limit {limit} backwards");
    }
    // Scan pages too; no key when the Limit covers the index.
    let scan = call(
        &db,
        "Scan",
        json!({"TableName": "Tbl", "IndexName": "gsi", "Limit": 16}),
    );
    assert!(scan.get("LastEvaluatedKey").is_none());
    let (items, pages) = all_pages(
        &db,
        "Scan",
        json!({"TableName": "Tbl", "IndexName": "gsi", "Limit": 4}),
    );
    assert_eq!((items.len(), pages), (15, 4));

    // ExclusiveStartKey: exactly the table key and every component.
    let start = json!({"p": s("nowhere"), "h1": s("a"), "h2": n(1), "r1": s("l"), "r2": n(0)});
    let mut request = query("h1 = :h1 AND h2 = :h2", json!({}));
    request["ExclusiveStartKey"] = start.clone();
    let after: Vec<String> = expected
        .iter()
        .filter(|p| {
            let i: usize = p[1..].parse().unwrap();
            ["m", "k", "z"][i % 3] > "l"
        })
        .cloned()
        .collect();
    assert_eq!(ps(&db, request.clone()), after);
    let mut missing = start.clone();
    missing.as_object_mut().unwrap().remove("r2");
    request["ExclusiveStartKey"] = missing;
    assert_eq!(
        validation(&db, "Query", request.clone()),
        "The provided starting key is invalid"
    );
    let mut extra = start;
    extra["x"] = s("y");
    request["ExclusiveStartKey"] = extra;
    assert_eq!(
        validation(&db, "Query", request),
        "The provided starting key is invalid"
    );
}

#[test]
fn partiql_refuses_multi_attribute_indexes_only() {
    let db = seeded();
    let statement = |text: &str| json!({"Statement": text});
    let refusal = "PartiQL statements cannot be executed on tables with multi-attribute HASH keys or multi-attribute RANGE keys.";
    for text in [
        r#"SELECT * FROM "Tbl"."gsi" WHERE h1 = 'a' AND h2 = 1"#,
        r#"SELECT * FROM "Tbl"."gsi""#,
        r#"SELECT * FROM "Tbl"."gsi" WHERE h1 = 1 ORDER BY r1"#,
    ] {
        assert_eq!(
            validation(&db, "ExecuteStatement", statement(text)),
            refusal,
            "{text}"
        );
    }
    assert!(validation(
        &db,
        "ExecuteStatement",
        statement(r#"SELECT * FROM "Tbl"."gsi" WHERE"#)
    )
    .starts_with("Statement wasn't well formed"));
    // SPEC-3 §1.5: the refusal comes before that of COUNT(*) in the projection; on the
    // table itself COUNT(*) keeps SPEC-2 §3.3's path-component text.
    assert_eq!(
        validation(
            &db,
            "ExecuteStatement",
            statement(r#"SELECT COUNT(*) FROM "Tbl"."gsi" WHERE h1 = 'a' AND h2 = 1"#)
        ),
        refusal
    );
    assert_eq!(
        validation(
            &db,
            "ExecuteStatement",
            statement(r#"SELECT COUNT(*) FROM "Tbl" WHERE p = 'i1'"#)
        ),
        "Unexpected path component at 1:8:5"
    );
    let batch = call(
        &db,
        "BatchExecuteStatement",
        json!({"Statements": [
            {"Statement": r#"SELECT * FROM "Tbl"."gsi" WHERE h1 = 'a' AND h2 = 1"#},
            {"Statement": r#"SELECT * FROM "Tbl" WHERE p = 'i1'"#},
            {"Statement": r#"SELECT COUNT(*) FROM "Tbl"."gsi" WHERE h1 = 'a' AND h2 = 1"#}
        ]}),
    );
    assert_eq!(batch["Responses"][0]["Error"]["Message"], refusal);
    assert_eq!(batch["Responses"][1]["Item"]["p"], s("i1"));
    assert_eq!(batch["Responses"][2]["Error"]["Message"], refusal);
    // The base table still reads and writes.
    call(
        &db,
        "ExecuteStatement",
        statement(r#"UPDATE "Tbl" SET x = 'y' WHERE p = 'i1'"#),
    );
    let read = call(
        &db,
        "ExecuteStatement",
        statement(r#"SELECT x FROM "Tbl" WHERE p = 'i1'"#),
    );
    assert_eq!(read["Items"][0]["x"], s("y"));
}

#[test]
fn index_writes_are_charged_and_checked() {
    let db = two_by_two();
    let response = call(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": item("i", "a", 1, "x", 2), "ReturnConsumedCapacity": "INDEXES"}),
    );
    let capacity = &response["ConsumedCapacity"];
    assert_eq!(
        capacity["GlobalSecondaryIndexes"]["gsi"]["CapacityUnits"],
        1.0
    );
    assert_eq!(capacity["CapacityUnits"], 2.0);
    let mut sparse = item("j", "a", 1, "x", 2);
    sparse.as_object_mut().unwrap().remove("h2");
    let response = call(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": sparse, "ReturnConsumedCapacity": "TOTAL"}),
    );
    assert_eq!(response["ConsumedCapacity"]["CapacityUnits"], 1.0);
    let report = db.check().unwrap();
    assert!(report.is_sound(), "{report:?}");
}

/// Waits until every GSI of `table` is ACTIVE (restores rebuild or link them).
fn wait_for_indexes(db: &Database, table: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let description = call(db, "DescribeTable", json!({"TableName": table}));
        let indexes = description["Table"]["GlobalSecondaryIndexes"].as_array();
        if indexes.is_some_and(|all| all.iter().all(|gsi| gsi["IndexStatus"] == "ACTIVE")) {
            return;
        }
        assert!(Instant::now() < deadline, "{description}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn backups_and_point_in_time_restores_carry_the_key_and_its_entries() {
    let db = seeded();
    call(
        &db,
        "UpdateContinuousBackups",
        json!({"TableName": "Tbl",
               "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true}}),
    );
    let arn = call(
        &db,
        "CreateBackup",
        json!({"TableName": "Tbl", "BackupName": "composite"}),
    )["BackupDetails"]["BackupArn"]
        .clone();
    call(
        &db,
        "RestoreTableFromBackup",
        json!({"TargetTableName": "FromBackup", "BackupArn": arn}),
    );
    call(
        &db,
        "RestoreTableToPointInTime",
        json!({"SourceTableName": "Tbl", "TargetTableName": "FromPitr",
               "UseLatestRestorableTime": true}),
    );
    let schema = describe(&db)["GlobalSecondaryIndexes"][0]["KeySchema"].clone();
    for target in ["FromBackup", "FromPitr"] {
        wait_for_indexes(&db, target);
        let restored = call(&db, "DescribeTable", json!({"TableName": target}));
        assert_eq!(
            restored["Table"]["GlobalSecondaryIndexes"][0]["KeySchema"], schema,
            "{target}"
        );
        let mut request = query("h1 = :h1 AND h2 = :h2 AND r1 = :y", json!({":y": s("y")}));
        request["TableName"] = json!(target);
        assert_eq!(ps(&db, request), ["i3", "i4"], "{target}");
    }
    assert!(db.check().unwrap().is_sound());
}

#[test]
fn the_check_finds_a_missing_or_moved_composite_entry() {
    use std::ops::Bound;
    let db = seeded();
    let tree = db.table("Tbl").unwrap().global_indexes[0].tree;
    let entries = || {
        db.lsm()
            .scan(
                tree,
                Bound::Unbounded,
                Bound::Unbounded,
                shoal_engine::Direction::Forward,
                None,
                usize::MAX,
            )
            .unwrap()
    };
    assert_eq!(entries().len(), 5);
    assert!(db.check().unwrap().is_sound());
    // One entry moved under a key its item does not derive (a byte of its table key
    // changed): the item's own entry is reported missing from the index.
    let (key, value) = entries().swap_remove(0);
    let mut moved = key.clone();
    let last = moved.len() - 2;
    moved[last] ^= 1;
    let mut batch = shoal_engine::WriteBatch::new();
    batch.delete(tree, &key).unwrap();
    batch.put(tree, &moved, &value).unwrap();
    db.lsm().write(batch).unwrap();
    let report = db.check().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("global index gsi") && p.contains("entry missing for")),
        "{:#?}",
        report.problems
    );
}

#[test]
fn transactions_index_sparsely_and_cancel_on_a_wrong_component() {
    let db = two_by_two();
    let all = query("h1 = :h1 AND h2 = :h2", json!({}));
    let mut sparse = item("sparse", "a", 1, "x", 2);
    sparse.as_object_mut().unwrap().remove("h2");
    put(&db, "Tbl", json!({"p": s("later"), "x": s("data")}));
    call(
        &db,
        "TransactWriteItems",
        json!({"TransactItems": [
            {"Put": {"TableName": "Tbl", "Item": item("full", "a", 1, "x", 2)}},
            {"Put": {"TableName": "Tbl", "Item": sparse}},
            {"Update": {"TableName": "Tbl", "Key": {"p": s("later")},
                        "UpdateExpression": "SET h1 = :h1, h2 = :h2, r1 = :r1, r2 = :r2",
                        "ExpressionAttributeValues": {":h1": s("a"), ":h2": n(1), ":r1": s("y"), ":r2": n(0)}}}
        ]}),
    );
    // The item missing h2 is in the table, not in the index; the update completed a tuple.
    assert_eq!(ps(&db, all.clone()), ["full", "later"]);
    let scan = call(&db, "Scan", json!({"TableName": "Tbl"}));
    assert_eq!(scan["Count"], json!(3));

    // REMOVE of one RANGE component drops the entry; a Delete drops the other.
    call(
        &db,
        "TransactWriteItems",
        json!({"TransactItems": [
            {"Update": {"TableName": "Tbl", "Key": {"p": s("full")}, "UpdateExpression": "REMOVE r2"}},
            {"Delete": {"TableName": "Tbl", "Key": {"p": s("later")}}}
        ]}),
    );
    assert!(ps(&db, all.clone()).is_empty());

    // A wrong-typed component cancels the transaction with a ValidationError reason for
    // that action and None for the others; nothing of it is written.
    let mut bad = item("bad", "a", 1, "x", 2);
    bad["h2"] = s("1");
    let error = db
        .execute(
            "TransactWriteItems",
            json!({"TransactItems": [
                {"Put": {"TableName": "Tbl", "Item": item("good", "a", 1, "x", 3)}},
                {"Put": {"TableName": "Tbl", "Item": bad}}
            ]}),
        )
        .unwrap_err();
    assert_eq!(error.code.name(), "TransactionCanceledException");
    let reasons = error.extra.as_ref().unwrap()["CancellationReasons"].clone();
    assert_eq!(
        reasons,
        json!([
            {"Code": "None"},
            {"Code": "ValidationError", "Message": "One or more parameter values were invalid: Type mismatch for Index Key h2 Expected: N Actual: S IndexName: gsi"}
        ])
    );
    assert!(ps(&db, all).is_empty());
    let scan = call(&db, "Scan", json!({"TableName": "Tbl"}));
    assert_eq!(strings(scan["Items"].as_array().unwrap(), "p").len(), 2);
    assert!(db.check().unwrap().is_sound());
}

#[test]
fn stream_records_carry_the_table_key_only() {
    let db = database();
    let mut request = create_request(
        json!([key("h1", "HASH"), key("h2", "HASH"), key("r1", "RANGE")]),
        &[("h1", "S"), ("h2", "N"), ("r1", "S")],
    );
    request["StreamSpecification"] =
        json!({"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"});
    let arn = call(&db, "CreateTable", request)["TableDescription"]["LatestStreamArn"]
        .as_str()
        .unwrap()
        .to_string();
    put(&db, "Tbl", item("i1", "a", 1, "x", 2));
    // A sparse item (no r1) still has its record: streams follow the table, not the index.
    put(&db, "Tbl", json!({"p": s("i2"), "h1": s("a"), "h2": n(1)}));
    call(
        &db,
        "UpdateItem",
        json!({"TableName": "Tbl", "Key": {"p": s("i1")}, "UpdateExpression": "SET h2 = :h2",
               "ExpressionAttributeValues": {":h2": n(5)}}),
    );
    call(
        &db,
        "DeleteItem",
        json!({"TableName": "Tbl", "Key": {"p": s("i2")}}),
    );
    let records = crate::streams::all_records(&db, &arn);
    let events: Vec<&str> = records
        .iter()
        .map(|r| r["eventName"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["INSERT", "INSERT", "MODIFY", "REMOVE"]);
    for record in &records {
        let change = &record["dynamodb"];
        let key_names: Vec<&String> = change["Keys"].as_object().unwrap().keys().collect();
        assert_eq!(key_names, ["p"], "{record}");
    }
    let modify = &records[2]["dynamodb"];
    assert_eq!(modify["OldImage"]["h2"], n(1));
    assert_eq!(modify["NewImage"]["h2"], n(5));
    assert_eq!(modify["NewImage"]["r1"], s("x"));
    assert_eq!(records[3]["dynamodb"]["OldImage"]["p"], s("i2"));
    assert!(db.check().unwrap().is_sound());
}
