//! PutItem, GetItem, UpdateItem and DeleteItem through `Database::execute`: semantics,
//! ReturnValues, conditions, validation texts (SPEC §3, §4.1) and that a rejected write
//! changes nothing.

use crate::items_support;
use items_support::*;
use serde_json::json;
use shoal_model::ErrorCode;
use shoal_tables::Options;

fn key(pk: &str, sk: &str) -> serde_json::Value {
    json!({"pk": {"S": pk}, "sk": {"S": sk}})
}

#[test]
fn put_get_replace_and_delete() {
    let db = open(Options::default());
    create_indexed_table(&db);
    let item = json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "n": {"N": "007.50"}, "l": {"S": "x"}});
    assert_eq!(
        ok(&db, "PutItem", json!({"TableName": "Tbl", "Item": item})),
        json!({})
    );
    let stored = get(&db, "Tbl", key("a", "1")).unwrap();
    assert_eq!(
        stored["n"],
        json!({"N": "7.5"}),
        "numbers come back canonical"
    );

    // A replacing put returns the old item with ALL_OLD; the new item has no `l`.
    let replaced = ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "1"}}, "ReturnValues": "ALL_OLD"}),
    );
    assert_eq!(replaced["Attributes"], stored);
    assert_eq!(
        get(&db, "Tbl", key("a", "1")).unwrap(),
        json!({"pk": {"S": "a"}, "sk": {"S": "1"}})
    );

    // A put of a new item returns no Attributes.
    let fresh = ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "b"}, "sk": {"S": "1"}}, "ReturnValues": "ALL_OLD"}),
    );
    assert!(fresh.get("Attributes").is_none());

    let deleted = ok(
        &db,
        "DeleteItem",
        json!({"TableName": "Tbl", "Key": key("a", "1"), "ReturnValues": "ALL_OLD"}),
    );
    assert_eq!(
        deleted["Attributes"],
        json!({"pk": {"S": "a"}, "sk": {"S": "1"}})
    );
    assert!(get(&db, "Tbl", key("a", "1")).is_none());
    // Deleting a missing item succeeds and returns nothing.
    let again = ok(
        &db,
        "DeleteItem",
        json!({"TableName": "Tbl", "Key": key("a", "1"), "ReturnValues": "ALL_OLD"}),
    );
    assert_eq!(again, json!({}));
}

#[test]
fn get_item_projection() {
    let db = open(Options::default());
    create_indexed_table(&db);
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "1"},
            "m": {"M": {"x": {"N": "1"}, "y": {"N": "2"}}}, "lst": {"L": [{"S": "p"}, {"S": "q"}]}}}),
    );
    let projected = ok(
        &db,
        "GetItem",
        json!({"TableName": "Tbl", "Key": key("a", "1"), "ProjectionExpression": "#m.x, lst[1], nothing",
            "ExpressionAttributeNames": {"#m": "m"}}),
    );
    assert_eq!(
        projected["Item"],
        json!({"m": {"M": {"x": {"N": "1"}}}, "lst": {"L": [{"S": "q"}]}}),
        "only the requested paths; the key is not added"
    );
    let none = ok(
        &db,
        "GetItem",
        json!({"TableName": "Tbl", "Key": key("a", "1"), "ProjectionExpression": "zzz"}),
    );
    assert_eq!(
        none["Item"],
        json!({}),
        "an item with none of the paths is {{}}"
    );
    let legacy = ok(
        &db,
        "GetItem",
        json!({"TableName": "Tbl", "Key": key("a", "1"), "AttributesToGet": ["pk", "m"]}),
    );
    assert_eq!(legacy["Item"].as_object().unwrap().len(), 2);
    let missing = ok(
        &db,
        "GetItem",
        json!({"TableName": "Tbl", "Key": key("zz", "1"), "ProjectionExpression": "pk"}),
    );
    assert!(missing.get("Item").is_none());
    assert_eq!(
        invalid(
            &db,
            "GetItem",
            json!({"TableName": "Tbl", "Key": key("a", "1"), "ProjectionExpression": "pk", "AttributesToGet": ["pk"]})
        ),
        "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}"
    );
    assert_eq!(
        invalid(
            &db,
            "GetItem",
            json!({"TableName": "Tbl", "Key": key("a", "1"), "ExpressionAttributeNames": {"#a": "a"}})
        ),
        "ExpressionAttributeNames can only be specified when using expressions"
    );
    assert_eq!(
        invalid(
            &db,
            "GetItem",
            json!({"TableName": "Tbl", "Key": key("a", "1"), "ProjectionExpression": "pk",
                "ExpressionAttributeNames": {"#a": "a"}})
        ),
        "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a}"
    );
}

#[test]
fn update_item_upserts_and_returns_each_mode() {
    let db = open(Options::default());
    create_indexed_table(&db);
    // No update at all still creates the item.
    assert_eq!(
        ok(
            &db,
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": key("k", "0")})
        ),
        json!({})
    );
    assert_eq!(get(&db, "Tbl", key("k", "0")).unwrap(), key("k", "0"));

    let update = |return_values: &str| {
        ok(
            &db,
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": key("u", "1"),
                "UpdateExpression": "SET a.c[0] = :v, n = if_not_exists(n, :zero) + :one",
                "ExpressionAttributeValues": {":v": {"N": "2"}, ":one": {"N": "1"}, ":zero": {"N": "0"}},
                "ReturnValues": return_values}),
        )
    };
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "u"}, "sk": {"S": "1"},
            "a": {"M": {"b": {"S": "keep"}, "c": {"L": [{"N": "1"}, {"N": "9"}]}}}}}),
    );
    assert_eq!(
        update("UPDATED_OLD")["Attributes"],
        json!({"a": {"M": {"c": {"L": [{"N": "1"}]}}}}),
        "n did not exist before: only the nested old value"
    );
    assert_eq!(
        update("UPDATED_NEW")["Attributes"],
        json!({"a": {"M": {"c": {"L": [{"N": "2"}]}}}, "n": {"N": "2"}})
    );
    let all_new = update("ALL_NEW")["Attributes"].clone();
    assert_eq!(all_new["n"], json!({"N": "3"}));
    assert_eq!(all_new["a"]["M"]["b"], json!({"S": "keep"}));
    assert_eq!(update("ALL_OLD")["Attributes"]["n"], json!({"N": "3"}));
    assert!(update("NONE").get("Attributes").is_none());
    // UPDATED_OLD of a new item: nothing.
    let created = ok(
        &db,
        "UpdateItem",
        json!({"TableName": "Tbl", "Key": key("new", "1"), "UpdateExpression": "SET x = :x",
            "ExpressionAttributeValues": {":x": {"S": "y"}}, "ReturnValues": "UPDATED_OLD"}),
    );
    assert!(created.get("Attributes").is_none());

    // Legacy AttributeUpdates: ADD appends to lists and adds numbers; DELETE removes.
    let legacy = ok(
        &db,
        "UpdateItem",
        json!({"TableName": "Tbl", "Key": key("u", "1"), "ReturnValues": "ALL_NEW",
            "AttributeUpdates": {
                "list": {"Action": "ADD", "Value": {"L": [{"S": "z"}]}},
                "n": {"Action": "ADD", "Value": {"N": "10"}},
                "a": {"Action": "DELETE"}
            },
            "Expected": {"n": {"Value": {"N": "5"}}}}),
    );
    assert_eq!(legacy["Attributes"]["n"], json!({"N": "15"}));
    assert_eq!(legacy["Attributes"]["list"], json!({"L": [{"S": "z"}]}));
    assert!(legacy["Attributes"].get("a").is_none());
}

#[test]
fn conditions_guard_writes() {
    let db = open(Options::default());
    create_indexed_table(&db);
    let item = json!({"pk": {"S": "c"}, "sk": {"S": "1"}, "v": {"N": "5"}});
    let not_exists = json!({"TableName": "Tbl", "Item": item, "ConditionExpression": "attribute_not_exists(pk)"});
    ok(&db, "PutItem", not_exists.clone());
    let error = err(&db, "PutItem", not_exists);
    assert_eq!(error.code, ErrorCode::ConditionalCheckFailedException);
    assert_eq!(error.message, "The conditional request failed");
    assert!(error.extra.is_none());

    // ALL_OLD on failure puts the old item in the error body.
    let error = err(
        &db,
        "UpdateItem",
        json!({"TableName": "Tbl", "Key": key("c", "1"), "UpdateExpression": "SET v = :n",
            "ConditionExpression": "v > :n", "ExpressionAttributeValues": {":n": {"N": "9"}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}),
    );
    assert_eq!(error.code, ErrorCode::ConditionalCheckFailedException);
    assert_eq!(error.extra.unwrap()["Item"], item);
    assert_eq!(
        get(&db, "Tbl", key("c", "1")).unwrap(),
        item,
        "nothing written"
    );
    // No Item member when there was no item.
    let error = err(
        &db,
        "DeleteItem",
        json!({"TableName": "Tbl", "Key": key("none", "1"), "ConditionExpression": "attribute_exists(pk)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}),
    );
    assert!(error.extra.is_none());

    // Legacy Expected, with OR.
    ok(
        &db,
        "DeleteItem",
        json!({"TableName": "Tbl", "Key": key("c", "1"), "ConditionalOperator": "OR",
            "Expected": {"v": {"ComparisonOperator": "GT", "AttributeValueList": [{"N": "100"}]},
                         "pk": {"Exists": true, "Value": {"S": "c"}}}}),
    );
    assert!(get(&db, "Tbl", key("c", "1")).is_none());
}

#[test]
fn request_rules_and_texts() {
    let db = open(Options::default());
    create_indexed_table(&db);
    let item = json!({"pk": {"S": "a"}, "sk": {"S": "1"}});
    let cases = [
        (
            "PutItem",
            json!({"TableName": "Tbl", "Item": item, "ConditionExpression": "attribute_exists(pk)", "Expected": {"pk": {"Exists": false}}}),
            "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}",
        ),
        (
            "PutItem",
            json!({"TableName": "Tbl", "Item": item, "ExpressionAttributeValues": {":v": {"S": "x"}}}),
            "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null",
        ),
        (
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": item, "ExpressionAttributeValues": {":v": {"S": "x"}}}),
            "ExpressionAttributeValues can only be specified when using expressions: UpdateExpression and ConditionExpression are null",
        ),
        (
            "PutItem",
            json!({"TableName": "Tbl", "Item": item, "ConditionExpression": "attribute_exists(pk)", "ExpressionAttributeValues": {":unused": {"S": "x"}}}),
            "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}",
        ),
        (
            "PutItem",
            json!({"TableName": "Tbl", "Item": item, "ReturnValues": "ALL_NEW"}),
            "ReturnValues can only be ALL_OLD or NONE",
        ),
        (
            "DeleteItem",
            json!({"TableName": "Tbl", "Key": item, "ReturnValues": "UPDATED_OLD"}),
            "ReturnValues can only be ALL_OLD or NONE",
        ),
        (
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": item, "UpdateExpression": ""}),
            "Invalid UpdateExpression: The expression can not be empty;",
        ),
        (
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": item, "UpdateExpression": "SET a = :a", "AttributeUpdates": {"a": {"Action": "DELETE"}}}),
            "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {AttributeUpdates} Expression parameters: {UpdateExpression}",
        ),
        (
            "PutItem",
            json!({"TableName": "Tbl"}),
            "1 validation error detected: Value null at 'item' failed to satisfy constraint: Member must not be null",
        ),
        (
            "GetItem",
            json!({"TableName": "Tbl", "Key": item, "ReturnConsumedCapacity": "SOME"}),
            "1 validation error detected: Value 'SOME' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]",
        ),
        (
            "DeleteItem",
            json!({"TableName": "Tbl", "Key": item, "ReturnItemCollectionMetrics": "ALL"}),
            "1 validation error detected: Value 'ALL' at 'returnItemCollectionMetrics' failed to satisfy constraint: Member must satisfy enum value set: [SIZE, NONE]",
        ),
    ];
    for (op, request, message) in cases {
        assert_eq!(invalid(&db, op, request.clone()), message, "{op} {request}");
    }
    let error = err(&db, "PutItem", json!({"TableName": "Nope", "Item": item}));
    assert_eq!(error.code, ErrorCode::ResourceNotFoundException);
    // Expression errors come before the table lookup.
    assert!(invalid(
        &db,
        "PutItem",
        json!({"TableName": "Nope", "Item": item, "ConditionExpression": "a ="})
    )
    .starts_with("Invalid ConditionExpression: Syntax error"));
}

#[test]
fn key_rules_and_texts() {
    let db = open(Options::default());
    create_indexed_table(&db);
    let put = |item: serde_json::Value| {
        invalid(&db, "PutItem", json!({"TableName": "Tbl", "Item": item}))
    };
    assert_eq!(
        put(json!({"sk": {"S": "1"}})),
        "One or more parameter values were invalid: Missing the key pk in the item"
    );
    assert_eq!(
        put(json!({"pk": {"S": "a"}, "sk": {"N": "1"}})),
        "One or more parameter values were invalid: Type mismatch for key sk expected: S actual: N"
    );
    assert_eq!(
        put(json!({"pk": {"S": ""}, "sk": {"S": "1"}})),
        "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: pk"
    );
    assert_eq!(
        put(json!({"pk": {"S": "a".repeat(2049)}, "sk": {"S": "1"}})),
        "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"
    );
    assert_eq!(
        put(json!({"pk": {"S": "a"}, "sk": {"S": "s".repeat(1025)}})),
        "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes"
    );
    // A 1024-byte table sort key and a 1024-byte LSI sort key together are fine.
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "a".repeat(2048)}, "sk": {"S": "s".repeat(1024)}, "l": {"S": "l".repeat(1024)}}}),
    );
    for bad_key in [
        json!({"pk": {"S": "a"}}),
        json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "x": {"S": "1"}}),
        json!({"pk": {"N": "1"}, "sk": {"S": "1"}}),
        json!({"pk": {"S": "a"}, "other": {"S": "1"}}),
    ] {
        for op in ["GetItem", "DeleteItem", "UpdateItem"] {
            assert_eq!(
                invalid(&db, op, json!({"TableName": "Tbl", "Key": bad_key})),
                "The provided key element does not match the schema",
                "{op} {bad_key}"
            );
        }
    }
    assert_eq!(
        invalid(&db, "GetItem", json!({"TableName": "Tbl", "Key": {"pk": {"S": "a"}, "sk": {"S": ""}}})),
        "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: sk"
    );
    let update = |expression: &str| {
        invalid(
            &db,
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": key("a", "1"), "UpdateExpression": expression,
                "ExpressionAttributeValues": {":v": {"S": "x"}}}),
        )
    };
    assert_eq!(
        update("SET sk = :v"),
        "One or more parameter values were invalid: Cannot update attribute sk. This attribute is part of the key"
    );
    assert_eq!(
        update("SET pk.x = :v"),
        "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: pk"
    );
    assert_eq!(
        update("SET g.x = :v"),
        "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: IndexKey: g"
    );
    assert_eq!(
        invalid(
            &db,
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": key("a", "1"), "AttributeUpdates": {"pk": {"Action": "PUT", "Value": {"S": "b"}}}})
        ),
        "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key"
    );
}

#[test]
fn index_key_rules_reject_the_whole_write() {
    let db = open(Options::default());
    create_indexed_table(&db);
    let original = json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "g": {"S": "old"}, "gs": {"N": "1"}});
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": original}),
    );
    let put = |item: serde_json::Value| {
        invalid(&db, "PutItem", json!({"TableName": "Tbl", "Item": item}))
    };
    assert_eq!(
        put(json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "gs": {"S": "x"}, "l": {"N": "1"}})),
        "One or more parameter values were invalid: Type mismatch for Index Key gs Expected: N Actual: S IndexName: ByG",
        "ByG sorts before ByL: its violation is named"
    );
    assert_eq!(
        put(json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "h": {"NULL": true}})),
        "One or more parameter values were invalid: Type mismatch for Index Key h Expected: B Actual: NULL IndexName: ByH"
    );
    assert_eq!(
        put(json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "l": {"S": ""}})),
        "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty string value. IndexName: ByL, IndexKey: l"
    );
    assert_eq!(
        put(json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "h": {"B": ""}})),
        "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty binary value. IndexName: ByH, IndexKey: h"
    );
    assert_eq!(
        put(json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "g": {"S": "g".repeat(2049)}})),
        "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"
    );
    let update = |expression: &str, value: serde_json::Value| {
        invalid(
            &db,
            "UpdateItem",
            json!({"TableName": "Tbl", "Key": key("a", "1"), "UpdateExpression": expression,
                "ExpressionAttributeValues": {":v": value}}),
        )
    };
    assert_eq!(
        update("SET l = :v", json!({"S": ""})),
        "One or more parameter values are not valid. The update expression attempted to update a secondary index key to a value that is not supported. The AttributeValue for a key attribute cannot contain an empty string value."
    );
    assert_eq!(
        update("SET g = :v, oth = :v", json!({"N": "3"})),
        "One or more parameter values were invalid: Type mismatch for Index Key g Expected: S Actual: N IndexName: ByG"
    );
    assert_eq!(
        get(&db, "Tbl", key("a", "1")).unwrap(),
        original,
        "no rejected write changed the item"
    );
    // A missing index key attribute is no error: the item is simply not indexed.
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Tbl", "Item": {"pk": {"S": "a"}, "sk": {"S": "2"}, "g": {"S": "only-hash"}}}),
    );
}

#[test]
fn item_size_limits_use_put_and_update_texts() {
    let db = open(Options::default());
    create_plain_table(&db);
    // id (2 bytes name + 2 bytes N) + "p" name: 409,600 exactly is accepted.
    let fits = 409_600 - 2 - 2 - 1;
    ok(
        &db,
        "PutItem",
        json!({"TableName": "Plain", "Item": {"id": {"N": "1"}, "p": {"S": "x".repeat(fits)}}}),
    );
    assert_eq!(
        invalid(
            &db,
            "PutItem",
            json!({"TableName": "Plain", "Item": {"id": {"N": "1"}, "p": {"S": "x".repeat(fits + 1)}}})
        ),
        "Item size has exceeded the maximum allowed size"
    );
    assert_eq!(
        invalid(
            &db,
            "UpdateItem",
            json!({"TableName": "Plain", "Key": {"id": {"N": "1"}}, "UpdateExpression": "SET q = :q",
                "ExpressionAttributeValues": {":q": {"S": "y"}}})
        ),
        "Item size to update has exceeded the maximum allowed size"
    );
}

#[test]
fn lsi_entries_count_toward_the_item_size_limit() {
    let db = open(Options::default());
    create_indexed_table(&db);
    // The item fits alone, but its INCLUDE-projected LSI entry repeats `inc`.
    let inc = "i".repeat(250_000);
    let item = json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "inc": {"S": inc}});
    ok(&db, "PutItem", json!({"TableName": "Tbl", "Item": item}));
    let mut indexed = item.clone();
    indexed["l"] = json!({"S": "x"});
    assert_eq!(
        invalid(&db, "PutItem", json!({"TableName": "Tbl", "Item": indexed})),
        "Item size has exceeded the maximum allowed size"
    );
    assert_eq!(get(&db, "Tbl", key("a", "1")).unwrap(), item);
}
