//! Expression edges seen through whole requests: what an update writes and returns at the
//! edges of documents, and the request-level checks of expression and legacy parameters.

use crate::items_support;
use items_support::*;
use serde_json::json;
use shoal_model::ErrorCode;
use shoal_tables::Options;

fn key(pk: &str) -> serde_json::Value {
    json!({"pk": {"S": pk}, "sk": {"S": "1"}})
}

#[test]
fn appends_past_the_end_are_stored_and_returned_where_they_landed() {
    let db = open(Options::default());
    create_indexed_table(&db);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "1"},
            "a": {"M": {"c": {"L": [{"N": "0"}]}}}, "lst": {"L": [{"N": "0"}, {"N": "1"}]}}}),
    );
    let update = |expression: &str, return_values: &str| {
        let mut values = json!({":x": {"S": "x"}, ":y": {"S": "y"}});
        for unused in [":x", ":y"] {
            if !expression.contains(unused) {
                values.as_object_mut().unwrap().remove(unused);
            }
        }
        ok(
            &db,
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": key("a"), "UpdateExpression": expression,
                "ExpressionAttributeValues": values, "ReturnValues": return_values}),
        )
    };
    assert_eq!(
        update("SET a.c[100] = :x", "UPDATED_NEW")["Attributes"],
        json!({"a": {"M": {"c": {"L": [{"S": "x"}]}}}})
    );
    assert!(
        update("SET a.c[100] = :y", "UPDATED_OLD")
            .get("Attributes")
            .is_none(),
        "an appended element had no old value"
    );
    assert_eq!(
        update("SET lst[9] = :x, lst[5] = :y", "UPDATED_NEW")["Attributes"],
        json!({"lst": {"L": [{"S": "y"}, {"S": "x"}]}})
    );
    let stored = get(&db, "Tbl", key("a")).unwrap();
    assert_eq!(
        stored["lst"],
        json!({"L": [{"N": "0"}, {"N": "1"}, {"S": "y"}, {"S": "x"}]}),
        "appended in index order"
    );
    assert_eq!(
        stored["a"],
        json!({"M": {"c": {"L": [{"N": "0"}, {"S": "x"}, {"S": "y"}]}}})
    );
    // The neighbour in one expression: a SET inside the list still returns the element it
    // replaced and the one it wrote; the append beside it only its new element.
    assert_eq!(
        update("SET lst[1] = :x, lst[9] = :y", "UPDATED_OLD")["Attributes"],
        json!({"lst": {"L": [{"N": "1"}]}})
    );
    assert_eq!(
        update("SET lst[1] = :x, lst[9] = :y", "UPDATED_NEW")["Attributes"],
        json!({"lst": {"L": [{"S": "x"}, {"S": "y"}]}})
    );
}

#[test]
fn remove_through_a_path_the_item_does_not_have_is_invalid() {
    let db = open(Options::default());
    create_indexed_table(&db);
    let item = json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "s": {"S": "x"},
        "m": {"M": {"k": {"N": "1"}}}, "lst": {"L": [{"N": "1"}]}});
    ok(&db, "PutItem", json!({"TableName": "Tbl", "Item": item}));
    for expression in ["REMOVE s.c", "REMOVE m[0]", "REMOVE lst.c", "REMOVE gone.c"] {
        assert_eq!(
            invalid(
                &db,
                "UpdateItem",
                json!({"TableName": "Tbl", "Key": key("a"), "UpdateExpression": expression})
            ),
            "The document path provided in the update expression is invalid for update",
            "{expression}"
        );
    }
    assert_eq!(get(&db, "Tbl", key("a")).unwrap(), item, "nothing written");
    // On an item that does not exist, the same REMOVE does nothing (SPEC §3.5).
    ok(
        &db,
        "UpdateItem",
        json!({"TableName": "Tbl", "Key": key("none"), "UpdateExpression": "REMOVE gone.c"}),
    );
    assert!(get(&db, "Tbl", key("none")).is_none());
}

#[test]
fn conditional_operator_needs_conditions_to_combine() {
    let db = open(Options::default());
    create_indexed_table(&db);
    let item = json!({"pk": {"S": "a"}, "sk": {"S": "1"}});
    let cases = [
        (
            "PutItem",
            json!({"TableName": "Tbl", "Item": item, "ConditionalOperator": "OR"}),
            "Expected",
        ),
        (
            "DeleteItem",
            json!({"TableName": "Tbl", "Key": item, "ConditionalOperator": "AND", "Expected": {}}),
            "Expected",
        ),
        (
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": item, "ConditionalOperator": "AND",
                "AttributeUpdates": {"x": {"Action": "PUT", "Value": {"S": "y"}}}}),
            "Expected",
        ),
        (
            "Query",
            json!({"TableName": "Tbl", "ConditionalOperator": "OR",
                "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "a"}]}}}),
            "QueryFilter",
        ),
        (
            "Scan",
            json!({"TableName": "Tbl", "ConditionalOperator": "OR", "ScanFilter": {}}),
            "ScanFilter",
        ),
    ];
    for (op, request, parameter) in cases {
        assert_eq!(
            invalid(&db, op, request.clone()),
            format!(
                "ConditionalOperator can only be used when {parameter} is specified and not empty"
            ),
            "{op} {request}"
        );
    }
    assert!(get(&db, "Tbl", key("a")).is_none(), "nothing written");
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": item, "ConditionalOperator": "OR",
            "Expected": {"pk": {"Exists": false}}}),
    );
}

#[test]
fn an_update_that_writes_nothing_creates_the_key_only_item_unless_it_only_removes() {
    let db = open(Options::default());
    create_plain_table(&db);
    let update = |id: &str, extra: serde_json::Value| {
        let mut request = json!({"TableName": "Plain", "Key": {"id": {"N": id}},
            "ReturnValues": "ALL_NEW"});
        for (name, value) in extra.as_object().unwrap() {
            request[name] = value.clone();
        }
        ok(&db, "UpdateItem", request)
    };
    let stored = |id: &str| get(&db, "Plain", json!({"id": {"N": id}}));
    // No update at all, or an empty AttributeUpdates: DynamoDB creates the item with just
    // its key (SPEC §3.2).
    for (id, extra) in [("1", json!({})), ("2", json!({"AttributeUpdates": {}}))] {
        assert_eq!(
            update(id, extra)["Attributes"],
            json!({"id": {"N": id}}),
            "ALL_NEW of {id}"
        );
        assert_eq!(stored(id), Some(json!({"id": {"N": id}})), "{id}");
    }
    // Only taking things away on a missing item creates nothing (SPEC-2 §1.6): REMOVE or
    // DELETE in an expression, DELETE in AttributeUpdates (with or without a value).
    for (id, extra) in [
        ("3", json!({"UpdateExpression": "REMOVE a"})),
        (
            "4",
            json!({"UpdateExpression": "DELETE s :s",
                "ExpressionAttributeValues": {":s": {"SS": ["x"]}}}),
        ),
        (
            "5",
            json!({"AttributeUpdates": {"a": {"Action": "DELETE"}}}),
        ),
        (
            "6",
            json!({"AttributeUpdates": {"s": {"Action": "DELETE", "Value": {"SS": ["x"]}}}}),
        ),
    ] {
        assert!(update(id, extra).get("Attributes").is_none(), "{id}");
        assert_eq!(stored(id), None, "{id}");
    }
    // A DELETE beside a PUT writes, so the item is created.
    update(
        "7",
        json!({"AttributeUpdates": {"a": {"Action": "DELETE"},
            "b": {"Action": "PUT", "Value": {"S": "x"}}}}),
    );
    assert_eq!(
        stored("7"),
        Some(json!({"id": {"N": "7"}, "b": {"S": "x"}}))
    );
}

#[test]
fn conditions_take_mixed_in_lists_parenthesized_operands_and_refuse_size_of_a_number_value() {
    let db = open(Options::default());
    create_plain_table(&db);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Plain", "Item": {"id": {"N": "1"}, "n": {"N": "5"}, "b": {"S": "xy"}}}),
    );
    let conditional = |condition: &str, values: serde_json::Value| {
        db.execute(
            "UpdateItem",
            json!({"TableName": "Plain", "Key": {"id": {"N": "1"}},
                "UpdateExpression": "SET c = :c", "ConditionExpression": condition,
                "ExpressionAttributeValues": values}),
        )
    };
    let with_c = |mut values: serde_json::Value| {
        values[":c"] = json!({"S": "c"});
        values
    };
    for (condition, values) in [
        ("n IN (:a, :b)", json!({":a": {"S": "x"}, ":b": {"N": "5"}})),
        ("(size(b)) = :v", json!({":v": {"N": "2"}})),
        (
            "(n) BETWEEN :x AND :y",
            json!({":x": {"N": "1"}, ":y": {"N": "9"}}),
        ),
    ] {
        assert!(
            conditional(condition, with_c(values)).is_ok(),
            "{condition}"
        );
    }
    // A mixed IN list that holds no match fails the condition; it is no error.
    let failed = conditional(
        "n IN (:a, :b)",
        with_c(json!({":a": {"S": "5"}, ":b": {"N": "6"}})),
    )
    .unwrap_err();
    assert_eq!(failed.code, ErrorCode::ConditionalCheckFailedException);
    // size() of a number value is refused before any item is read; of a number attribute
    // it only fails the comparison.
    let refused = conditional(
        "size(:v) > :w",
        with_c(json!({":v": {"N": "5"}, ":w": {"N": "0"}})),
    )
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ValidationException);
    assert_eq!(
        refused.message,
        "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: size, operand type: N"
    );
    let failed = conditional("size(n) > :w", with_c(json!({":w": {"N": "0"}}))).unwrap_err();
    assert_eq!(failed.code, ErrorCode::ConditionalCheckFailedException);
}

#[test]
fn expected_value_is_the_argument_of_its_comparison_operator() {
    let db = open(Options::default());
    create_plain_table(&db);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Plain", "Item": {"id": {"N": "1"}, "n": {"N": "5"}}}),
    );
    let put = |expected: serde_json::Value| {
        db.execute(
            "PutItem",
            json!({"TableName": "Plain", "Item": {"id": {"N": "1"}, "n": {"N": "5"}},
                "Expected": {"n": expected}}),
        )
    };
    assert!(put(json!({"Value": {"N": "4"}, "ComparisonOperator": "GT"})).is_ok());
    assert_eq!(
        put(json!({"Value": {"N": "6"}, "ComparisonOperator": "GE"}))
            .unwrap_err()
            .code,
        ErrorCode::ConditionalCheckFailedException
    );
    // Value beside AttributeValueList stays refused.
    let refused = put(
        json!({"Value": {"N": "5"}, "AttributeValueList": [{"N": "5"}],
        "ComparisonOperator": "EQ"}),
    )
    .unwrap_err();
    assert_eq!(
        refused.message,
        "One or more parameter values were invalid: Value and AttributeValueList cannot be used together for Attribute: n"
    );
}
