//! Query: every rule of SPEC §4.2 with DynamoDB's exact texts, through the request layer.

use crate::query_support;
use query_support::*;
use serde_json::{json, Value};

/// Table Tbl with five items in partition "p" and one in "q":
/// sk s1..s5, l = 30,10,20,10,(none), g = "x" on s1..s3, r = 1 on s1,s2 and 2 on s3.
/// (sk, l, g, r) of one seeded item.
type SeedRow = (&'static str, Option<i64>, Option<&'static str>, Option<i64>);

fn seeded() -> shoal_tables::Database {
    let db = database();
    create_indexed_table(&db);
    let rows: [SeedRow; 5] = [
        ("s1", Some(30), Some("x"), Some(1)),
        ("s2", Some(10), Some("x"), Some(1)),
        ("s3", Some(20), Some("x"), Some(2)),
        ("s4", Some(10), None, None),
        ("s5", None, None, None),
    ];
    for (sk, l, g, r) in rows {
        let mut item = json!({"pk": s("p"), "sk": s(sk), "inc": s(&format!("inc-{sk}")), "misc": s(&format!("o-{sk}"))});
        if let Some(l) = l {
            item["l"] = n(l);
        }
        if let Some(g) = g {
            item["g"] = s(g);
        }
        if let Some(r) = r {
            item["r"] = n(r);
        }
        put(&db, "Tbl", item);
    }
    put(
        &db,
        "Tbl",
        json!({"pk": s("q"), "sk": s("s1"), "l": n(5), "g": s("x"), "r": n(1)}),
    );
    db
}

fn query(extra: Value) -> Value {
    let mut request = json!({
        "TableName": "Tbl",
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": s("p")}
    });
    for (k, v) in extra.as_object().unwrap() {
        request[k] = v.clone();
    }
    request
}

#[test]
fn table_query_reads_one_partition_in_sort_order_both_ways() {
    let db = seeded();
    let forward = call(&db, "Query", query(json!({})));
    assert_eq!(
        strings(forward["Items"].as_array().unwrap(), "sk"),
        ["s1", "s2", "s3", "s4", "s5"]
    );
    assert_eq!(
        (forward["Count"].as_u64(), forward["ScannedCount"].as_u64()),
        (Some(5), Some(5))
    );
    assert!(forward.get("LastEvaluatedKey").is_none());
    // Whole items, every attribute.
    assert_eq!(forward["Items"][0]["misc"], s("o-s1"));
    let backward = call(&db, "Query", query(json!({"ScanIndexForward": false})));
    assert_eq!(
        strings(backward["Items"].as_array().unwrap(), "sk"),
        ["s5", "s4", "s3", "s2", "s1"]
    );
}

#[test]
fn sort_key_conditions_select_one_range() {
    let db = seeded();
    let cases = [
        (
            "pk = :p AND sk BETWEEN :a AND :b",
            json!({":a": s("s2"), ":b": s("s4")}),
            vec!["s2", "s3", "s4"],
        ),
        ("pk = :p AND sk < :a", json!({":a": s("s2")}), vec!["s1"]),
        (
            "pk = :p AND sk <= :a",
            json!({":a": s("s2")}),
            vec!["s1", "s2"],
        ),
        ("pk = :p AND :a < sk", json!({":a": s("s4")}), vec!["s5"]),
        (
            "pk = :p AND sk >= :a",
            json!({":a": s("s4")}),
            vec!["s4", "s5"],
        ),
        ("pk = :p AND sk = :a", json!({":a": s("s3")}), vec!["s3"]),
        (
            "pk = :p AND begins_with(sk, :a)",
            json!({":a": s("s")}),
            vec!["s1", "s2", "s3", "s4", "s5"],
        ),
        (
            "pk = :p AND begins_with(sk, :a)",
            json!({":a": s("t")}),
            vec![],
        ),
        // An operand may stand in one pair of parentheses, as anywhere else.
        (
            "(pk) = :p AND (sk) BETWEEN (:a) AND :b",
            json!({":a": s("s2"), ":b": s("s3")}),
            vec!["s2", "s3"],
        ),
        (
            "(pk = :p) AND begins_with((sk), :a)",
            json!({":a": s("s5")}),
            vec!["s5"],
        ),
        ("pk = :p AND :a < (sk)", json!({":a": s("s4")}), vec!["s5"]),
    ];
    for (condition, values, expected) in cases {
        let mut values = values;
        values[":p"] = s("p");
        let response = call(
            &db,
            "Query",
            json!({"TableName": "Tbl", "KeyConditionExpression": condition, "ExpressionAttributeValues": values}),
        );
        assert_eq!(
            strings(response["Items"].as_array().unwrap(), "sk"),
            expected,
            "{condition}"
        );
    }
}

#[test]
fn key_conditions_refuse_a_second_pair_of_parentheses_around_an_operand() {
    let db = seeded();
    // Filters take parenthesized operands too.
    let filtered = call(
        &db,
        "Query",
        query(
            json!({"FilterExpression": "(l) BETWEEN :a AND (:b) AND (size(inc)) = :n",
            "ExpressionAttributeValues": {":p": s("p"), ":a": n(10), ":b": n(20), ":n": n(6)}}),
        ),
    );
    assert_eq!(
        strings(filtered["Items"].as_array().unwrap(), "sk"),
        ["s2", "s3", "s4"]
    );
    let error = validation(
        &db,
        "Query",
        query(json!({"KeyConditionExpression": "((pk)) = :p"})),
    );
    assert_eq!(
        error,
        "Invalid KeyConditionExpression: The expression has redundant parentheses;"
    );
}

#[test]
fn lsi_query_orders_by_index_sort_key_then_table_sort_key() {
    let db = seeded();
    let response = call(&db, "Query", query(json!({"IndexName": "ByL"})));
    let items = response["Items"].as_array().unwrap();
    // l: s2=10, s4=10 (tie ordered by sk), s3=20, s1=30; s5 has no l: not indexed.
    assert_eq!(strings(items, "sk"), ["s2", "s4", "s3", "s1"]);
    // Default Select on an index: the projected attributes only.
    assert_eq!(
        items[0],
        json!({"pk": s("p"), "sk": s("s2"), "l": n(10), "inc": s("inc-s2")})
    );
    // Numeric range on the N index key.
    let response = call(
        &db,
        "Query",
        json!({"TableName": "Tbl", "IndexName": "ByL", "KeyConditionExpression": "pk = :p AND l <= :v",
               "ExpressionAttributeValues": {":p": s("p"), ":v": n(20)}, "ScanIndexForward": false, "ConsistentRead": true}),
    );
    assert_eq!(
        strings(response["Items"].as_array().unwrap(), "sk"),
        ["s3", "s4", "s2"]
    );
}

#[test]
fn lsi_fetches_unprojected_attributes_from_the_table() {
    let db = seeded();
    let response = call(
        &db,
        "Query",
        query(json!({"IndexName": "ByL", "ProjectionExpression": "sk, misc"})),
    );
    assert_eq!(
        response["Items"][0],
        json!({"sk": s("s2"), "misc": s("o-s2")})
    );
    let all = call(
        &db,
        "Query",
        query(json!({"IndexName": "ByL", "Select": "ALL_ATTRIBUTES"})),
    );
    assert_eq!(all["Items"][0]["misc"], s("o-s2"));
    assert_eq!(all["Items"][0]["g"], s("x"));
    // A filter on an unprojected attribute fetches too, but the output stays projected.
    let filtered = call(
        &db,
        "Query",
        query(json!({"IndexName": "ByL", "FilterExpression": "misc = :o",
                           "ExpressionAttributeValues": {":p": s("p"), ":o": s("o-s3")}})),
    );
    assert_eq!(
        filtered["Items"],
        json!([{"pk": s("p"), "sk": s("s3"), "l": n(20), "inc": s("inc-s3")}])
    );
    assert_eq!(
        (
            filtered["Count"].as_u64(),
            filtered["ScannedCount"].as_u64()
        ),
        (Some(1), Some(4))
    );
}

#[test]
fn gsi_query_orders_ties_by_table_key_and_never_fetches() {
    let db = seeded();
    let response = call(
        &db,
        "Query",
        json!({"TableName": "Tbl", "IndexName": "ByG", "KeyConditionExpression": "g = :g",
               "ExpressionAttributeValues": {":g": s("x")}}),
    );
    let items = response["Items"].as_array().unwrap();
    // r=1: (p,s1), (p,s2), (q,s1) ordered by table key; then r=2: (p,s3).
    let keys: Vec<(String, String)> = items
        .iter()
        .map(|i| {
            (
                i["pk"]["S"].as_str().unwrap().into(),
                i["sk"]["S"].as_str().unwrap().into(),
            )
        })
        .collect();
    let mut tie = keys[..3].to_vec();
    tie.sort();
    assert_eq!(keys[..3], tie[..]);
    assert_eq!(keys[3], ("p".to_string(), "s3".to_string()));
    // KEYS_ONLY: table key + index key, nothing else.
    assert_eq!(
        items[3],
        json!({"pk": s("p"), "sk": s("s3"), "g": s("x"), "r": n(2)})
    );
}

#[test]
fn gsi_rules_use_dynamodb_texts() {
    let db = seeded();
    let gsi = |extra: Value| {
        let mut request = json!({"TableName": "Tbl", "IndexName": "ByG", "KeyConditionExpression": "g = :g",
                                 "ExpressionAttributeValues": {":g": s("x")}});
        for (k, v) in extra.as_object().unwrap() {
            request[k] = v.clone();
        }
        request
    };
    assert_eq!(
        validation(&db, "Query", gsi(json!({"ConsistentRead": true}))),
        "Consistent reads are not supported on global secondary indexes"
    );
    assert_eq!(
        validation(&db, "Query", gsi(json!({"Select": "ALL_ATTRIBUTES"}))),
        "One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index ByG because its projection type is not ALL"
    );
    assert_eq!(
        validation(&db, "Query", gsi(json!({"ProjectionExpression": "pk, misc"}))),
        "One or more parameter values were invalid: Global secondary index ByG does not project [misc]"
    );
    assert_eq!(
        validation(&db, "Query", gsi(json!({"AttributesToGet": ["inc"], "KeyConditionExpression": null,
            "ExpressionAttributeValues": null, "KeyConditions": {"g": {"ComparisonOperator": "EQ", "AttributeValueList": [s("x")]}}}))),
        "One or more parameter values were invalid: Global secondary index ByG does not project [inc]"
    );
    assert_eq!(
        validation(&db, "Query", gsi(json!({"FilterExpression": "misc = :o",
            "ExpressionAttributeValues": {":g": s("x"), ":o": s("o")}}))),
        "One or more parameter values were invalid: Secondary index ByG does not project one or more filter attributes: [misc]"
    );
    // An ALL GSI may return everything.
    let all = call(
        &db,
        "Query",
        json!({"TableName": "Tbl", "IndexName": "ByGAll", "KeyConditionExpression": "g = :g",
               "ExpressionAttributeValues": {":g": s("x")}, "Select": "ALL_ATTRIBUTES"}),
    );
    assert_eq!(all["Count"], 4);
    // A hash-only GSI has no usable range key, not even the table's.
    assert_eq!(
        validation(
            &db,
            "Query",
            json!({"TableName": "Tbl", "IndexName": "ByGAll",
            "KeyConditionExpression": "g = :g AND sk = :s", "ExpressionAttributeValues": {":g": s("x"), ":s": s("s1")}})
        ),
        "Query key condition not supported"
    );
}

#[test]
fn request_checks_use_dynamodb_texts() {
    let db = seeded();
    assert_eq!(
        validation(&db, "Query", query(json!({"IndexName": "NoSuch"}))),
        "The table does not have the specified index: NoSuch"
    );
    let (code, _) = fail(&db, "Query", query(json!({"TableName": "Missing"})));
    assert_eq!(code, "ResourceNotFoundException");
    assert_eq!(
        validation(&db, "Query", query(json!({"Limit": 0}))),
        "1 validation error detected: Value at 'Limit' failed to satisfy constraint: Member must have value greater than or equal to 1"
    );
    assert_eq!(
        validation(&db, "Query", query(json!({"Select": "SOME"}))),
        "1 validation error detected: Value 'SOME' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]"
    );
    assert_eq!(
        validation(
            &db,
            "Query",
            query(json!({"Select": "ALL_PROJECTED_ATTRIBUTES"}))
        ),
        "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"
    );
    assert!(validation(
        &db,
        "Query",
        query(json!({"Select": "COUNT", "ProjectionExpression": "sk"}))
    )
    .contains("ProjectionExpression"));
    assert_eq!(
        validation(&db, "Query", json!({"TableName": "Tbl"})),
        "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."
    );
    assert_eq!(
        validation(&db, "Query", query(json!({"FilterExpression": "sk = :p"}))),
        "Filter Expression can only contain non-primary key attributes: Primary key attribute: sk"
    );
    assert_eq!(
        validation(
            &db,
            "Query",
            query(json!({"IndexName": "ByL", "FilterExpression": "l > :p"}))
        ),
        "Filter Expression can only contain non-primary key attributes: Primary key attribute: l"
    );
    assert_eq!(
        validation(
            &db,
            "Query",
            json!({"TableName": "Tbl",
            "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [s("p")]}},
            "QueryFilter": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [s("p")]}}})
        ),
        "QueryFilter can only contain non-primary key attributes: Primary key attribute: pk"
    );
    assert_eq!(
        validation(&db, "Query", query(json!({"QueryFilter": {"misc": {"ComparisonOperator": "EQ", "AttributeValueList": [s("o")]}}}))),
        "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {QueryFilter} Expression parameters: {KeyConditionExpression}"
    );
    assert_eq!(
        validation(&db, "Query", query(json!({"KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [s("p")]}}}))),
        "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {KeyConditions} Expression parameters: {KeyConditionExpression}"
    );
    assert_eq!(
        validation(
            &db,
            "Query",
            query(json!({"ExpressionAttributeValues": {":p": s("p"), ":unused": s("u")}}))
        ),
        "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}"
    );
    assert_eq!(
        validation(
            &db,
            "Query",
            query(json!({"KeyConditionExpression": "sk = :p"}))
        ),
        "Query condition missed key schema element: pk"
    );
    assert_eq!(
        validation(&db, "Query", query(json!({"ExpressionAttributeValues": {":p": n(1)}}))),
        "One or more parameter values were invalid: Condition parameter type does not match schema type"
    );
    assert_eq!(
        validation(&db, "Query", json!({"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": s("p")}})),
        "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null"
    );
    let (code, _) = fail(&db, "Query", query(json!({"Limit": "3"})));
    assert_eq!(code, "SerializationException");
}

#[test]
fn legacy_parameters_work_and_keyconditions_may_go_with_a_filter_expression() {
    let db = seeded();
    let response = call(
        &db,
        "Query",
        json!({"TableName": "Tbl",
               "KeyConditions": {
                   "pk": {"ComparisonOperator": "EQ", "AttributeValueList": [s("p")]},
                   "sk": {"ComparisonOperator": "BETWEEN", "AttributeValueList": [s("s2"), s("s4")]}},
               "QueryFilter": {
                   "misc": {"ComparisonOperator": "NE", "AttributeValueList": [s("o-s3")]},
                   "inc": {"ComparisonOperator": "EQ", "AttributeValueList": [s("inc-s2")]}},
               "ConditionalOperator": "OR",
               "AttributesToGet": ["sk"]}),
    );
    assert_eq!(response["Items"], json!([{"sk": s("s2")}, {"sk": s("s4")}]));
    assert_eq!(response["ScannedCount"], 3);
    let mixed = call(
        &db,
        "Query",
        json!({"TableName": "Tbl",
               "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [s("p")]}},
               "FilterExpression": "misc = :o", "ExpressionAttributeValues": {":o": s("o-s5")}}),
    );
    assert_eq!(mixed["Count"], 1);
}

#[test]
fn limit_counts_evaluated_items_before_the_filter() {
    let db = seeded();
    let response = call(
        &db,
        "Query",
        query(json!({"Limit": 2, "FilterExpression": "misc = :o",
                           "ExpressionAttributeValues": {":p": s("p"), ":o": s("o-s5")}})),
    );
    // Nothing kept, yet the page stopped after two evaluated items and says where.
    assert_eq!(response["Items"], json!([]));
    assert_eq!(
        (
            response["Count"].as_u64(),
            response["ScannedCount"].as_u64()
        ),
        (Some(0), Some(2))
    );
    assert_eq!(
        response["LastEvaluatedKey"],
        json!({"pk": s("p"), "sk": s("s2")})
    );
    let count = call(&db, "Query", query(json!({"Select": "COUNT"})));
    assert!(count.get("Items").is_none());
    assert_eq!(count["Count"], 5);
}

#[test]
fn last_evaluated_keys_have_the_attributes_of_their_target() {
    let db = seeded();
    let keys = |response: &Value| {
        let mut names: Vec<String> = response["LastEvaluatedKey"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    };
    let table = call(&db, "Query", query(json!({"Limit": 1})));
    assert_eq!(keys(&table), ["pk", "sk"]);
    let lsi = call(&db, "Query", query(json!({"Limit": 1, "IndexName": "ByL"})));
    assert_eq!(keys(&lsi), ["l", "pk", "sk"]);
    let gsi = call(
        &db,
        "Query",
        json!({"TableName": "Tbl", "IndexName": "ByG", "KeyConditionExpression": "g = :g",
               "ExpressionAttributeValues": {":g": s("x")}, "Limit": 1}),
    );
    assert_eq!(keys(&gsi), ["g", "pk", "r", "sk"]);
}

#[test]
fn exclusive_start_keys_are_validated() {
    let db = seeded();
    let invalid = "The provided starting key is invalid";
    let with_start = |start: Value| query(json!({"ExclusiveStartKey": start}));
    assert_eq!(
        validation(&db, "Query", with_start(json!({"pk": s("p")}))),
        invalid
    );
    assert_eq!(
        validation(&db, "Query", with_start(json!({"pk": s("p"), "sk": n(1)}))),
        invalid
    );
    assert_eq!(
        validation(
            &db,
            "Query",
            with_start(json!({"pk": s("p"), "sk": s("s1"), "x": s("y")}))
        ),
        invalid
    );
    assert_eq!(
        validation(
            &db,
            "Query",
            with_start(json!({"pk": s("q"), "sk": s("s1")}))
        ),
        "The provided starting key is outside query boundaries based on provided conditions"
    );
    assert_eq!(
        validation(
            &db,
            "Query",
            json!({"TableName": "Tbl", "KeyConditionExpression": "pk = :p AND sk > :a",
            "ExpressionAttributeValues": {":p": s("p"), ":a": s("s3")},
            "ExclusiveStartKey": {"pk": s("p"), "sk": s("s1")}})
        ),
        "The provided starting key does not match the range key predicate"
    );
    // An LSI start key needs the index sort key too.
    assert_eq!(
        validation(
            &db,
            "Query",
            query(json!({"IndexName": "ByL", "ExclusiveStartKey": {"pk": s("p"), "sk": s("s1")}}))
        ),
        invalid
    );
    assert_eq!(
        validation(
            &db,
            "Query",
            json!({"TableName": "Tbl", "IndexName": "ByG", "KeyConditionExpression": "g = :g",
            "ExpressionAttributeValues": {":g": s("x")},
            "ExclusiveStartKey": {"g": s("y"), "r": n(1), "pk": s("p"), "sk": s("s1")}})
        ),
        "The query can return at most one row and cannot be restarted"
    );
    // A start key need not name an existing item: reading resumes after its position.
    let resumed = call(
        &db,
        "Query",
        with_start(json!({"pk": s("p"), "sk": s("s25")})),
    );
    assert_eq!(
        strings(resumed["Items"].as_array().unwrap(), "sk"),
        ["s3", "s4", "s5"]
    );
    let backward = call(
        &db,
        "Query",
        query(
            json!({"ExclusiveStartKey": {"pk": s("p"), "sk": s("s3")}, "ScanIndexForward": false}),
        ),
    );
    assert_eq!(
        strings(backward["Items"].as_array().unwrap(), "sk"),
        ["s2", "s1"]
    );
}

#[test]
fn hash_only_tables_return_at_most_one_item() {
    let db = database();
    create_hash_table(&db);
    for id in ["a", "b", "ab"] {
        put(&db, "Hsh", json!({"id": s(id), "v": s(id)}));
    }
    let response = call(
        &db,
        "Query",
        json!({"TableName": "Hsh", "KeyConditionExpression": "id = :i", "ExpressionAttributeValues": {":i": s("a")}}),
    );
    assert_eq!(response["Items"], json!([{"id": s("a"), "v": s("a")}]));
    assert_eq!(
        validation(
            &db,
            "Query",
            json!({"TableName": "Hsh", "KeyConditionExpression": "id = :i AND v = :i",
            "ExpressionAttributeValues": {":i": s("a")}})
        ),
        "Query key condition not supported"
    );
}

/// A Query of a hash-only table reads at most one item, so it has nothing to resume: any
/// well-formed start key, in its partition or not, is refused with the text DynamoDB gives
/// a query that "can return at most one row"; a malformed one is still invalid.
#[test]
fn hash_only_queries_cannot_be_restarted() {
    let db = database();
    create_hash_table(&db);
    put(&db, "Hsh", json!({"id": s("a")}));
    // Its one item ends the query: no LastEvaluatedKey even when Limit is reached.
    let page = call(
        &db,
        "Query",
        json!({"TableName": "Hsh", "KeyConditionExpression": "id = :i",
        "ExpressionAttributeValues": {":i": s("a")}, "Limit": 1}),
    );
    assert_eq!(
        (page["Count"].as_u64(), page.get("LastEvaluatedKey")),
        (Some(1), None)
    );
    let with_start = |start: Value| {
        json!({"TableName": "Hsh", "KeyConditionExpression": "id = :i",
        "ExpressionAttributeValues": {":i": s("a")}, "ExclusiveStartKey": start})
    };
    for start in [json!({"id": s("a")}), json!({"id": s("b")})] {
        assert_eq!(
            validation(&db, "Query", with_start(start)),
            "The query can return at most one row and cannot be restarted"
        );
    }
    for start in [json!({"id": n(1)}), json!({"id": s("a"), "x": s("y")})] {
        assert_eq!(
            validation(&db, "Query", with_start(start)),
            "The provided starting key is invalid"
        );
    }
}

/// On a GSI, a start key from another partition whose sort part the condition does not
/// select either is outside the query's boundaries.
#[test]
fn gsi_start_keys_outside_both_key_conditions_are_out_of_bounds() {
    let db = seeded();
    assert_eq!(
        validation(
            &db,
            "Query",
            json!({"TableName": "Tbl", "IndexName": "ByG",
            "KeyConditionExpression": "g = :g AND r > :r",
            "ExpressionAttributeValues": {":g": s("x"), ":r": n(5)},
            "ExclusiveStartKey": {"g": s("y"), "r": n(1), "pk": s("p"), "sk": s("s1")}})
        ),
        "The provided starting key is outside query boundaries based on provided conditions"
    );
}

#[test]
fn consumed_capacity_reports_the_right_arms() {
    let db = seeded();
    let capacity = |extra: Value| call(&db, "Query", query(extra))["ConsumedCapacity"].clone();
    assert_eq!(
        capacity(json!({"ReturnConsumedCapacity": "TOTAL"})),
        json!({"TableName": "Tbl", "CapacityUnits": 0.5})
    );
    assert_eq!(
        capacity(json!({"ReturnConsumedCapacity": "INDEXES", "ConsistentRead": true})),
        json!({"TableName": "Tbl", "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}})
    );
    // LSI with fetches: entries rounded once (1 block) + each of 4 fetched items (1 block).
    assert_eq!(
        capacity(
            json!({"ReturnConsumedCapacity": "INDEXES", "ConsistentRead": true, "IndexName": "ByL",
                        "ProjectionExpression": "misc"})
        ),
        json!({"TableName": "Tbl", "CapacityUnits": 5.0, "Table": {"CapacityUnits": 4.0},
               "LocalSecondaryIndexes": {"ByL": {"CapacityUnits": 1.0}}})
    );
    let gsi = call(
        &db,
        "Query",
        json!({"TableName": "Tbl", "IndexName": "ByG", "KeyConditionExpression": "g = :g",
               "ExpressionAttributeValues": {":g": s("nothing")}, "ReturnConsumedCapacity": "INDEXES"}),
    );
    assert_eq!(
        gsi["ConsumedCapacity"],
        json!({"TableName": "Tbl", "CapacityUnits": 0.5, "Table": {"CapacityUnits": 0.0},
               "GlobalSecondaryIndexes": {"ByG": {"CapacityUnits": 0.5}}})
    );
    assert!(call(&db, "Query", query(json!({})))
        .get("ConsumedCapacity")
        .is_none());
}

#[test]
fn pages_stop_at_one_megabyte_measured_before_the_filter() {
    let db = database();
    create_indexed_table(&db);
    let big = "x".repeat(300_000);
    for i in 0..5 {
        put(
            &db,
            "Tbl",
            json!({"pk": s("p"), "sk": s(&format!("s{i}")), "payload": s(&big), "l": n(i)}),
        );
    }
    let request = query(
        json!({"FilterExpression": "attribute_not_exists(payload)", "ReturnConsumedCapacity": "TOTAL"}),
    );
    let first = call(&db, "Query", request.clone());
    // A 4th ~300 KB item would take the page past 1 MB: the page ends before it even
    // though the filter kept nothing.
    assert_eq!(
        (first["Count"].as_u64(), first["ScannedCount"].as_u64()),
        (Some(0), Some(3))
    );
    assert_eq!(
        first["LastEvaluatedKey"],
        json!({"pk": s("p"), "sk": s("s2")})
    );
    let units = first["ConsumedCapacity"]["CapacityUnits"].as_f64().unwrap();
    assert_eq!(units, (3.0 * 300_012.0f64 / 4096.0).ceil() * 0.5);
    let (items, pages) = all_pages(&db, "Query", request);
    assert_eq!((items.len(), pages), (0, 2));
    // On the LSI the entries are small: one page.
    let lsi = call(&db, "Query", query(json!({"IndexName": "ByL"})));
    assert_eq!(lsi["Count"], 5);
    assert!(lsi.get("LastEvaluatedKey").is_none());
}

#[test]
fn lsi_pages_with_fetches_are_measured_as_charged() {
    let db = database();
    create_indexed_table(&db);
    // 300 items whose fetch costs one 4 KiB block each: a page holds about 1 MiB / 4 KiB.
    for i in 0..300 {
        put(
            &db,
            "Tbl",
            json!({"pk": s("p"), "sk": s(&format!("s{i:03}")), "l": n(i), "misc": s("o")}),
        );
    }
    let request = query(json!({"IndexName": "ByL", "ProjectionExpression": "misc"}));
    let first = call(&db, "Query", request.clone());
    let scanned = first["ScannedCount"].as_u64().unwrap();
    assert!(
        (250..=256).contains(&scanned),
        "{scanned} entries on the first page"
    );
    let (items, pages) = all_pages(&db, "Query", request);
    assert_eq!((items.len(), pages), (300, 2));
    // Without fetches the same query is one page.
    let plain = call(&db, "Query", query(json!({"IndexName": "ByL"})));
    assert_eq!(plain["Count"], 300);
}

#[test]
fn table_arns_name_tables() {
    let db = seeded();
    let response = call(
        &db,
        "Query",
        query(json!({"TableName": "arn:aws:dynamodb:ddblocal:000000000000:table/Tbl"})),
    );
    assert_eq!(response["Count"], 5);
}
