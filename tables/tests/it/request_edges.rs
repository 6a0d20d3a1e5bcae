//! Requests at the edges of DynamoDB's rules, driven by operation name with JSON text as a
//! server receives them: which exception each gets and its exact text.

use serde_json::{json, Value};
use shoal_model::{ApiError, ErrorCode};
use shoal_tables::{Database, Options};

fn open() -> Database {
    let db = Database::open_in_memory(Options::default()).unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Tbl",
            "AttributeDefinitions": [{"AttributeName": "k", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    db
}

fn call(db: &Database, operation: &str, body: &str) -> Result<Value, ApiError> {
    db.execute_json_text(operation, body.as_bytes())
        .map(|answer| serde_json::from_slice(&answer).unwrap())
}

fn error(db: &Database, operation: &str, body: &str) -> ApiError {
    match call(db, operation, body) {
        Ok(answer) => panic!("{operation} {body} succeeded: {answer}"),
        Err(error) => error,
    }
}

/// Every operation that names a table, with `{T}` where the name goes.
const NAMING_REQUESTS: &[(&str, &str)] = &[
    ("GetItem", r#"{"TableName":"{T}","Key":{"k":{"S":"a"}}}"#),
    ("PutItem", r#"{"TableName":"{T}","Item":{"k":{"S":"a"}}}"#),
    ("UpdateItem", r#"{"TableName":"{T}","Key":{"k":{"S":"a"}}}"#),
    ("DeleteItem", r#"{"TableName":"{T}","Key":{"k":{"S":"a"}}}"#),
    (
        "Query",
        r#"{"TableName":"{T}","KeyConditionExpression":"k = :k","ExpressionAttributeValues":{":k":{"S":"a"}}}"#,
    ),
    ("Scan", r#"{"TableName":"{T}"}"#),
    (
        "BatchGetItem",
        r#"{"RequestItems":{"{T}":{"Keys":[{"k":{"S":"a"}}]}}}"#,
    ),
    (
        "BatchWriteItem",
        r#"{"RequestItems":{"{T}":[{"PutRequest":{"Item":{"k":{"S":"a"}}}}]}}"#,
    ),
    (
        "TransactWriteItems",
        r#"{"TransactItems":[{"Put":{"TableName":"{T}","Item":{"k":{"S":"a"}}}}]}"#,
    ),
    (
        "TransactGetItems",
        r#"{"TransactItems":[{"Get":{"TableName":"{T}","Key":{"k":{"S":"a"}}}}]}"#,
    ),
    ("DescribeTable", r#"{"TableName":"{T}"}"#),
    ("DeleteTable", r#"{"TableName":"{T}"}"#),
    (
        "UpdateTable",
        r#"{"TableName":"{T}","BillingMode":"PAY_PER_REQUEST"}"#,
    ),
    ("DescribeTimeToLive", r#"{"TableName":"{T}"}"#),
    (
        "UpdateTimeToLive",
        r#"{"TableName":"{T}","TimeToLiveSpecification":{"Enabled":true,"AttributeName":"t"}}"#,
    ),
    ("DescribeContinuousBackups", r#"{"TableName":"{T}"}"#),
    (
        "UpdateContinuousBackups",
        r#"{"TableName":"{T}","PointInTimeRecoverySpecification":{"PointInTimeRecoveryEnabled":false}}"#,
    ),
];

/// A table name outside DynamoDB's rules (3..255 characters of `[a-zA-Z0-9_.-]`) is a
/// ValidationException on every operation, before the table is looked up: a name that
/// cannot exist is not "not found".
#[test]
fn table_names_outside_the_rules_are_refused_before_any_lookup() {
    let db = open();
    let long = "t".repeat(256);
    let cases = [
        (
            "xx",
            "1 validation error detected: Value 'xx' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3".to_string(),
        ),
        (
            "x",
            "1 validation error detected: Value 'x' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3".to_string(),
        ),
        (
            "",
            "1 validation error detected: Value '' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 1".to_string(),
        ),
        (
            long.as_str(),
            format!("1 validation error detected: Value '{long}' at 'tableName' failed to satisfy constraint: Member must have length less than or equal to 255"),
        ),
        (
            "a b",
            "1 validation error detected: Value 'a b' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+".to_string(),
        ),
        (
            "x!",
            "2 validation errors detected: Value 'x!' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3; Value 'x!' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+".to_string(),
        ),
    ];
    for (operation, template) in NAMING_REQUESTS {
        for (name, message) in &cases {
            let body = template.replace("{T}", name);
            let answer = error(&db, operation, &body);
            // Batches name the table as a map key, whose constraint DynamoDB reports under
            // the map's own path; Shoal reports the name's.
            assert_eq!(
                (answer.code, answer.message.as_str()),
                (ErrorCode::ValidationException, message.as_str()),
                "{operation} {name:?}"
            );
        }
    }
}

/// A missing table: the data plane answers `Requested resource not found` (SPEC §3.7, §4.3),
/// the control plane names the table.
#[test]
fn missing_tables_get_the_plane_s_text() {
    let db = open();
    for (operation, template) in NAMING_REQUESTS {
        let answer = error(&db, operation, &template.replace("{T}", "Missing"));
        let expected = match *operation {
            "DescribeTable" | "DeleteTable" | "UpdateTable" | "DescribeTimeToLive"
            | "UpdateTimeToLive" => (
                ErrorCode::ResourceNotFoundException,
                "Requested resource not found: Table: Missing not found",
            ),
            "DescribeContinuousBackups" | "UpdateContinuousBackups" => (
                ErrorCode::TableNotFoundException,
                "Table not found: Missing",
            ),
            _ => (
                ErrorCode::ResourceNotFoundException,
                "Requested resource not found",
            ),
        };
        assert_eq!(
            (answer.code, answer.message.as_str()),
            expected,
            "{operation}"
        );
    }
}

/// Legacy AttributeUpdates ADD and DELETE on an attribute of another type answer dynalite's
/// text; UpdateExpression's ADD and DELETE keep theirs.
#[test]
fn legacy_add_and_delete_of_another_type_are_a_type_mismatch() {
    let db = open();
    call(
        &db,
        "PutItem",
        r#"{"TableName":"Tbl","Item":{"k":{"S":"a"},"s":{"S":"x"},"n":{"N":"1"},"ns":{"NS":["1"]}}}"#,
    )
    .unwrap();
    let legacy = |name: &str, action: &str, value: &str| {
        error(
            &db,
            "UpdateItem",
            &format!(
                r#"{{"TableName":"Tbl","Key":{{"k":{{"S":"a"}}}},"AttributeUpdates":{{"{name}":{{"Action":"{action}","Value":{value}}}}}}}"#
            ),
        )
        .message
    };
    for (name, action, value) in [
        ("s", "ADD", r#"{"N":"1"}"#),
        ("n", "ADD", r#"{"SS":["x"]}"#),
        ("ns", "ADD", r#"{"SS":["x"]}"#),
        ("s", "DELETE", r#"{"SS":["x"]}"#),
        ("ns", "DELETE", r#"{"SS":["x"]}"#),
    ] {
        assert_eq!(
            legacy(name, action, value),
            "Type mismatch for attribute to update",
            "{action} {value} on {name}"
        );
    }
    let expression = error(
        &db,
        "UpdateItem",
        r#"{"TableName":"Tbl","Key":{"k":{"S":"a"}},"UpdateExpression":"ADD s :one","ExpressionAttributeValues":{":one":{"N":"1"}}}"#,
    );
    assert_eq!(
        expression.message,
        "An operand in the update expression has an incorrect data type"
    );
}

/// A number that is not one: DynamoDB's text ends with the value (SPEC §1.2 notes the
/// variant, SPEC-2 gives it with `: <text>`, and without it for an empty string).
#[test]
fn an_unparsable_number_is_quoted_in_the_message() {
    let db = open();
    for (number, message) in [
        (
            "abc",
            "The parameter cannot be converted to a numeric value: abc",
        ),
        (
            "1x",
            "The parameter cannot be converted to a numeric value: 1x",
        ),
        ("", "The parameter cannot be converted to a numeric value"),
    ] {
        let answer = error(
            &db,
            "PutItem",
            &format!(r#"{{"TableName":"Tbl","Item":{{"k":{{"S":"a"}},"n":{{"N":"{number}"}}}}}}"#),
        );
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (ErrorCode::ValidationException, message)
        );
    }
}

/// Attribute names are 1..65535 bytes (SPEC §1.3) wherever an item is written; nothing is
/// written when one is not.
#[test]
fn attribute_names_empty_or_over_65535_bytes_are_refused() {
    let db = open();
    let longest = "a".repeat(65_535);
    let too_long = "a".repeat(65_536);
    let empty_text = "One or more parameter values were invalid: Empty attribute name";
    let long_text =
        "One or more parameter values were invalid: Attribute name is longer than 65535 bytes";
    let writes = |name: &str| {
        let item = format!(r#"{{"k":{{"S":"w"}},"{name}":{{"S":"x"}}}}"#);
        [
            ("PutItem", format!(r#"{{"TableName":"Tbl","Item":{item}}}"#)),
            (
                "BatchWriteItem",
                format!(r#"{{"RequestItems":{{"Tbl":[{{"PutRequest":{{"Item":{item}}}}}]}}}}"#),
            ),
            (
                "TransactWriteItems",
                format!(r#"{{"TransactItems":[{{"Put":{{"TableName":"Tbl","Item":{item}}}}}]}}"#),
            ),
            (
                "UpdateItem",
                format!(
                    r#"{{"TableName":"Tbl","Key":{{"k":{{"S":"w"}}}},"AttributeUpdates":{{"{name}":{{"Action":"PUT","Value":{{"S":"x"}}}}}}}}"#
                ),
            ),
        ]
    };
    for (name, text) in [("", empty_text), (too_long.as_str(), long_text)] {
        for (operation, body) in writes(name) {
            let answer = error(&db, operation, &body);
            assert_eq!(
                (answer.code, answer.message.as_str()),
                (ErrorCode::ValidationException, text),
                "{operation} name of {} bytes",
                name.len()
            );
        }
    }
    let stored = call(&db, "Scan", r#"{"TableName":"Tbl"}"#).unwrap();
    assert_eq!(stored["Count"], 0);
    for (operation, body) in writes(&longest) {
        call(&db, operation, &body).unwrap_or_else(|e| panic!("{operation}: {e}"));
    }
}

/// A body that is not JSON is a SerializationException without a message, as DynamoDB
/// sends it; a member of the wrong JSON type is worded as DynamoDB's (Java) protocol layer
/// words it, as attribute values already are.
#[test]
fn serialization_errors_in_dynamodb_s_words() {
    let db = open();
    for body in ["not json", r#"{"TableName":"Tbl","Key":"#, ""] {
        let answer = error(&db, "GetItem", body);
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (ErrorCode::SerializationException, ""),
            "{body:?}"
        );
    }
    for (operation, body, message) in [
        (
            "GetItem",
            r#"{"TableName":7,"Key":{"k":{"S":"a"}}}"#,
            "NUMBER_VALUE cannot be converted to String",
        ),
        (
            "GetItem",
            r#"{"TableName":true,"Key":{"k":{"S":"a"}}}"#,
            "TRUE_VALUE cannot be converted to String",
        ),
        (
            "GetItem",
            r#"{"TableName":["Tbl"],"Key":{"k":{"S":"a"}}}"#,
            "Start of list found where not expected",
        ),
        (
            "GetItem",
            r#"{"TableName":{"a":1},"Key":{"k":{"S":"a"}}}"#,
            "Start of structure or map found where not expected.",
        ),
        (
            "GetItem",
            r#"{"TableName":"Tbl","Key":"str"}"#,
            "Unexpected STRING_VALUE where a structure or map was expected",
        ),
        (
            "GetItem",
            r#"{"TableName":"Tbl","Key":{"k":{"S":"a"}},"ConsistentRead":"yes"}"#,
            "STRING_VALUE cannot be converted to Boolean",
        ),
        (
            "Scan",
            r#"{"TableName":"Tbl","Limit":"x"}"#,
            "STRING_VALUE cannot be converted to Long",
        ),
        (
            "Scan",
            r#"{"TableName":"Tbl","AttributesToGet":"k"}"#,
            "Unexpected STRING_VALUE where a list was expected",
        ),
        (
            "PutItem",
            r#"{"TableName":"Tbl","Item":[1]}"#,
            "Start of list found where not expected",
        ),
    ] {
        let answer = error(&db, operation, body);
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (ErrorCode::SerializationException, message),
            "{operation} {body}"
        );
    }
}

/// Member constraints answer in one envelope (SPEC §7): every violation of the request,
/// counted, each `Value '<v>' at '<lowerCamelCase path>' failed to satisfy constraint:
/// <rule>`, except where SPEC records DynamoDB printing no value (Query/Scan `Limit`).
#[test]
fn constraint_violations_share_one_envelope() {
    let db = open();
    for (operation, body, message) in [
        (
            "ListTables",
            r#"{"Limit":0}"#,
            "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1",
        ),
        (
            "ListTables",
            r#"{"Limit":101,"ExclusiveStartTableName":"a"}"#,
            "2 validation errors detected: Value 'a' at 'exclusiveStartTableName' failed to satisfy constraint: Member must have length greater than or equal to 3; Value '101' at 'limit' failed to satisfy constraint: Member must have value less than or equal to 100",
        ),
        (
            "Scan",
            r#"{"TableName":"Tbl","Limit":0}"#,
            "1 validation error detected: Value at 'Limit' failed to satisfy constraint: Member must have value greater than or equal to 1",
        ),
        (
            "Query",
            r#"{"TableName":"Tbl","KeyConditionExpression":"k = :k","ExpressionAttributeValues":{":k":{"S":"a"}},"Limit":0}"#,
            "1 validation error detected: Value at 'Limit' failed to satisfy constraint: Member must have value greater than or equal to 1",
        ),
        (
            "PutItem",
            r#"{"TableName":"a b","ReturnValues":"SOME","ReturnConsumedCapacity":"X"}"#,
            "4 validation errors detected: Value 'a b' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; Value null at 'item' failed to satisfy constraint: Member must not be null; Value 'SOME' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [NONE, ALL_OLD, UPDATED_OLD, ALL_NEW, UPDATED_NEW]; Value 'X' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]",
        ),
        (
            "TransactWriteItems",
            r#"{"TransactItems":[],"ReturnConsumedCapacity":"X"}"#,
            "2 validation errors detected: Value 'X' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]; Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1",
        ),
        (
            "UpdateTimeToLive",
            r#"{"TableName":"Tbl","TimeToLiveSpecification":{"AttributeName":""}}"#,
            "2 validation errors detected: Value null at 'timeToLiveSpecification.enabled' failed to satisfy constraint: Member must not be null; Value '' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length greater than or equal to 1",
        ),
    ] {
        let answer = error(&db, operation, body);
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (ErrorCode::ValidationException, message),
            "{operation} {body}"
        );
    }
}

/// DynamoDB checks a request's parameters before it looks its table up: a bad request on a
/// missing table gets the ValidationException, the same as on an existing one.
#[test]
fn parameter_checks_come_before_the_table_lookup() {
    let db = open();
    let cases: &[(&str, &str, &str)] = &[
        (
            "UpdateTable",
            r#"{"TableName":"{T}","BillingMode":"X"}"#,
            "",
        ),
        (
            "UpdateTable",
            r#"{"TableName":"{T}","GlobalSecondaryIndexUpdates":[{}]}"#,
            "One or more parameter values were invalid: One of GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Update or GlobalSecondaryIndexUpdate.Delete must be specified",
        ),
        (
            "UpdateTable",
            r#"{"TableName":"{T}","TableClass":"X"}"#,
            "",
        ),
        (
            "Query",
            r#"{"TableName":"{T}","KeyConditionExpression":"k = :k","ExpressionAttributeValues":{":k":{"S":"a"},":u":{"S":"a"}}}"#,
            "Value provided in ExpressionAttributeValues unused in expressions: keys: {:u}",
        ),
        (
            "Query",
            r#"{"TableName":"{T}","KeyConditionExpression":"k = :k OR k = :k","ExpressionAttributeValues":{":k":{"S":"a"}}}"#,
            "Invalid KeyConditionExpression: Invalid operator used in KeyConditionExpression: OR",
        ),
        (
            "Query",
            r#"{"TableName":"{T}","KeyConditionExpression":"k = :k AND k = :k","ExpressionAttributeValues":{":k":{"S":"a"}}}"#,
            "Invalid KeyConditionExpression: KeyConditionExpressions must only contain one condition per key",
        ),
        (
            "Query",
            r#"{"TableName":"{T}","KeyConditionExpression":"k = :nope"}"#,
            "",
        ),
        (
            "Query",
            r#"{"TableName":"{T}","KeyConditions":{"k":{"ComparisonOperator":"EQ","AttributeValueList":[]}}}"#,
            "One or more parameter values were invalid: Invalid number of argument(s) for the EQ ComparisonOperator",
        ),
        (
            "BatchGetItem",
            r#"{"RequestItems":{"{T}":{"Keys":[{"k":{"S":"a"}},{"k":{"S":"a"}}]}}}"#,
            "Provided list of item keys contains duplicates",
        ),
        (
            "BatchWriteItem",
            r#"{"RequestItems":{"{T}":[{"DeleteRequest":{"Key":{"k":{"S":"a"}}}},{"DeleteRequest":{"Key":{"k":{"S":"a"}}}}]}}"#,
            "Provided list of item keys contains duplicates",
        ),
        (
            "TransactWriteItems",
            r#"{"TransactItems":[{"Delete":{"TableName":"{T}","Key":{"k":{"S":"a"}}}},{"ConditionCheck":{"TableName":"{T}","Key":{"k":{"S":"a"}},"ConditionExpression":"attribute_exists(k)"}}]}"#,
            "Transaction request cannot include multiple operations on one item",
        ),
    ];
    for (operation, template, message) in cases {
        let on_existing = error(&db, operation, &template.replace("{T}", "Tbl"));
        let on_missing = error(&db, operation, &template.replace("{T}", "Missing"));
        assert_eq!(
            on_missing.code,
            ErrorCode::ValidationException,
            "{operation} {template}: {}",
            on_missing.message
        );
        assert_eq!(
            on_missing.message, on_existing.message,
            "{operation} {template}"
        );
        if !message.is_empty() {
            assert_eq!(on_missing.message, *message, "{operation} {template}");
        }
    }

    // What only the table can decide still waits for it: a missing table is not found.
    let after_lookup: &[(&str, &str)] = &[
        (
            "UpdateTable",
            r#"{"TableName":"Missing","BillingMode":"PROVISIONED"}"#,
        ),
        (
            "UpdateTable",
            r#"{"TableName":"Missing","GlobalSecondaryIndexUpdates":[{"Delete":{"IndexName":"ix1"}},{"Delete":{"IndexName":"ix2"}}]}"#,
        ),
        // The partition key is the table's to name.
        (
            "Query",
            r#"{"TableName":"Missing","KeyConditionExpression":"nokey = :k","ExpressionAttributeValues":{":k":{"S":"a"}}}"#,
        ),
        // A put's key is known only from the schema.
        (
            "BatchWriteItem",
            r#"{"RequestItems":{"Missing":[{"PutRequest":{"Item":{"k":{"S":"a"}}}},{"PutRequest":{"Item":{"k":{"S":"a"}}}}]}}"#,
        ),
        (
            "TransactWriteItems",
            r#"{"TransactItems":[{"Put":{"TableName":"Missing","Item":{"k":{"S":"a"}}}},{"Delete":{"TableName":"Missing","Key":{"k":{"S":"a"}}}}]}"#,
        ),
        (
            "BatchGetItem",
            r#"{"RequestItems":{"Missing":{"Keys":[{"k":{"S":"a"}},{"k":{"S":"b"}}]}}}"#,
        ),
    ];
    for (operation, body) in after_lookup {
        let missing = error(&db, operation, body);
        assert_eq!(
            missing.code,
            ErrorCode::ResourceNotFoundException,
            "{operation} {body}: {}",
            missing.message
        );
    }
}

/// Query's and Scan's member constraints are reported together, in the API model's member
/// order, like every other operation's; one violation keeps the singular envelope.
#[test]
fn query_and_scan_report_their_constraint_violations_together() {
    let db = open();
    for (operation, body, message) in [
        (
            "Query",
            r#"{"TableName":"ab","IndexName":"x","Select":"X","Limit":0,"ReturnConsumedCapacity":"Y","KeyConditionExpression":"k = :k","ExpressionAttributeValues":{":k":{"S":"a"}}}"#,
            "5 validation errors detected: Value 'ab' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3; Value 'x' at 'indexName' failed to satisfy constraint: Member must have length greater than or equal to 3; Value 'X' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]; Value at 'Limit' failed to satisfy constraint: Member must have value greater than or equal to 1; Value 'Y' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]",
        ),
        (
            "Scan",
            r#"{"TableName":"Tbl","Select":"X","Limit":0,"TotalSegments":0,"Segment":-1}"#,
            "4 validation errors detected: Value at 'Limit' failed to satisfy constraint: Member must have value greater than or equal to 1; Value 'X' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]; Value '0' at 'totalSegments' failed to satisfy constraint: Member must have value greater than or equal to 1; Value '-1' at 'segment' failed to satisfy constraint: Member must have value greater than or equal to 0",
        ),
        // One violation: the singular envelope, unchanged.
        (
            "Scan",
            r#"{"TableName":"Tbl","ConditionalOperator":"XOR","ScanFilter":{}}"#,
            "1 validation error detected: Value 'XOR' at 'conditionalOperator' failed to satisfy constraint: Member must satisfy enum value set: [AND, OR]",
        ),
    ] {
        let answer = error(&db, operation, body);
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (ErrorCode::ValidationException, message),
            "{operation} {body}"
        );
    }
}

/// DynamoDB refuses ExpressionAttributeNames given without an expression before it looks at
/// the attribute values, so that refusal wins over an empty or two-typed value; with an
/// expression present, the value's own refusal stands (the neighbouring case). The same
/// through the embedded API's parsed bodies.
#[test]
fn names_without_an_expression_are_refused_before_a_bad_attribute_value() {
    let db = open();
    const NAMES_ALONE: &str =
        "ExpressionAttributeNames can only be specified when using expressions";
    for (operation, body) in [
        (
            "PutItem",
            r##"{"TableName":"Tbl","Item":{"k":{"S":"a"},"x":{}},"ExpressionAttributeNames":{"#x":"x"}}"##,
        ),
        (
            "GetItem",
            r##"{"TableName":"Tbl","Key":{"k":{}},"ExpressionAttributeNames":{"#x":"x"}}"##,
        ),
        (
            "DeleteItem",
            r##"{"TableName":"Tbl","Key":{"k":{"S":"a","N":"1"}},"ExpressionAttributeNames":{"#x":"x"}}"##,
        ),
        (
            "UpdateItem",
            r##"{"TableName":"Tbl","Key":{"k":{}},"ExpressionAttributeNames":{"#x":"x"}}"##,
        ),
        (
            "Query",
            r##"{"TableName":"Tbl","ExclusiveStartKey":{"k":{}},"ExpressionAttributeNames":{"#x":"x"}}"##,
        ),
    ] {
        assert_eq!(
            error(&db, operation, body).message,
            NAMES_ALONE,
            "{operation}"
        );
        let parsed: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            db.execute(operation, parsed).unwrap_err().message,
            NAMES_ALONE,
            "{operation}, parsed"
        );
    }
    let with_condition = r##"{"TableName":"Tbl","Item":{"k":{"S":"a"},"x":{}},"ConditionExpression":"attribute_exists(#x)","ExpressionAttributeNames":{"#x":"x"}}"##;
    assert_eq!(
        error(&db, "PutItem", with_condition).message,
        shoal_model::json::EMPTY_VALUE_MESSAGE
    );
    let without_names = r#"{"TableName":"Tbl","Item":{"k":{"S":"a"},"x":{}}}"#;
    assert_eq!(
        error(&db, "PutItem", without_names).message,
        shoal_model::json::EMPTY_VALUE_MESSAGE
    );
}

/// An ExclusiveStartKey whose attribute value DynamoDB refuses (empty, two types, a bad
/// number, a false NULL) is refused as a starting key, the value's text after a colon
/// (SPEC §4.2's `The provided starting key is invalid` family), on Query and Scan alike.
/// The neighbours keep their texts: the same value elsewhere (ExpressionAttributeValues, a
/// GetItem key), a start key value of the wrong JSON type (the protocol's
/// SerializationException), and a well-formed start key that does not fit the schema.
#[test]
fn bad_start_key_values_are_refused_as_starting_keys() {
    let db = open();
    let query = |start: &str| {
        format!(
            r#"{{"TableName":"Tbl","KeyConditionExpression":"k = :k","ExpressionAttributeValues":{{":k":{{"S":"a"}}}},"ExclusiveStartKey":{start}}}"#
        )
    };
    let scan = |start: &str| format!(r#"{{"TableName":"Tbl","ExclusiveStartKey":{start}}}"#);
    for (start, message) in [
        (
            r#"{"k":{}}"#,
            shoal_model::json::EMPTY_VALUE_MESSAGE.to_string(),
        ),
        (
            r#"{"k":{"S":"a","N":"1"}}"#,
            shoal_model::json::SEVERAL_TYPES_MESSAGE.to_string(),
        ),
        (
            r#"{"k":{"N":"x"}}"#,
            "The parameter cannot be converted to a numeric value: x".to_string(),
        ),
        (
            r#"{"k":{"S":"a"},"x":{"NULL":false}}"#,
            shoal_model::json::NULL_FALSE_MESSAGE.to_string(),
        ),
    ] {
        let expected = format!("The provided starting key is invalid: {message}");
        for (operation, body) in [("Query", query(start)), ("Scan", scan(start))] {
            let answer = error(&db, operation, &body);
            assert_eq!(
                (answer.code, answer.message.as_str()),
                (ErrorCode::ValidationException, expected.as_str()),
                "{operation} {body}"
            );
            let parsed: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(
                db.execute(operation, parsed).unwrap_err().message,
                expected,
                "{operation} {body}, parsed"
            );
        }
    }

    // The same empty value elsewhere keeps its own text.
    let empty = shoal_model::json::EMPTY_VALUE_MESSAGE;
    let elsewhere = [
        (
            "Query",
            r#"{"TableName":"Tbl","KeyConditionExpression":"k = :k","ExpressionAttributeValues":{":k":{}}}"#,
        ),
        ("GetItem", r#"{"TableName":"Tbl","Key":{"k":{}}}"#),
    ];
    for (operation, body) in elsewhere {
        assert_eq!(error(&db, operation, body).message, empty, "{operation}");
    }
    // A value of the wrong JSON type is the protocol's SerializationException, unprefixed.
    let wrong_type = r#"{"k":{"N":5}}"#;
    for (operation, body) in [("Query", query(wrong_type)), ("Scan", scan(wrong_type))] {
        let answer = error(&db, operation, &body);
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (
                ErrorCode::SerializationException,
                "NUMBER_VALUE cannot be converted to String"
            ),
            "{operation} {body}"
        );
    }
    // A well-formed start key that does not fit the schema: the texts of the shape check.
    assert_eq!(
        error(&db, "Query", &query(r#"{"k":{"N":"1"}}"#)).message,
        "The provided starting key is invalid"
    );
    assert_eq!(
        error(&db, "Scan", &scan(r#"{"k":{"S":"a"},"x":{"S":"b"}}"#)).message,
        "The provided starting key is invalid: The provided key element does not match the schema"
    );
}

/// DynamoDB checks a request's member constraints before its attribute values (SPEC §7:
/// constraints, then semantic validation), so a request with both a bad enum member and an
/// empty value gets the constraint's envelope, whether the value is a start key, a key, an
/// item or an expression value. The neighbours keep their order: a value of the wrong JSON
/// type is still the protocol's SerializationException (refused before either), a bad value
/// with good members keeps its own text, and names given alone still come before the value.
#[test]
fn member_constraints_come_before_attribute_value_refusals() {
    let db = open();
    let capacity = "1 validation error detected: Value 'LOTS' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]";
    for (operation, body) in [
        (
            "Query",
            r#"{"TableName":"Tbl","KeyConditionExpression":"k = :k","ExpressionAttributeValues":{":k":{"S":"a"}},"ExclusiveStartKey":{"k":{}},"ReturnConsumedCapacity":"LOTS"}"#,
        ),
        (
            "Scan",
            r#"{"TableName":"Tbl","ExclusiveStartKey":{"k":{"S":"a","N":"1"}},"ReturnConsumedCapacity":"LOTS"}"#,
        ),
        (
            "GetItem",
            r#"{"TableName":"Tbl","Key":{"k":{}},"ReturnConsumedCapacity":"LOTS"}"#,
        ),
        (
            "PutItem",
            r#"{"TableName":"Tbl","Item":{"k":{"S":"a"},"n":{"N":"x"}},"ReturnConsumedCapacity":"LOTS"}"#,
        ),
        (
            "DeleteItem",
            r#"{"TableName":"Tbl","Key":{"k":{"NULL":false}},"ReturnConsumedCapacity":"LOTS"}"#,
        ),
        (
            "UpdateItem",
            r#"{"TableName":"Tbl","Key":{"k":{"S":"a"}},"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{":v":{}},"ReturnConsumedCapacity":"LOTS"}"#,
        ),
    ] {
        let answer = error(&db, operation, body);
        assert_eq!(
            (answer.code, answer.message.as_str()),
            (ErrorCode::ValidationException, capacity),
            "{operation} {body}"
        );
        let parsed: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            db.execute(operation, parsed).unwrap_err().message,
            capacity,
            "{operation} {body}, parsed"
        );
    }
    // Two constraints and a bad start key: both constraints, in one envelope.
    let two = r#"{"TableName":"Tbl","ExclusiveStartKey":{"k":{}},"Limit":0,"Select":"SOME"}"#;
    let answer = error(&db, "Scan", two);
    assert!(
        answer.message.starts_with("2 validation errors detected: "),
        "{}",
        answer.message
    );

    // Batches keep checking their values as the body is read (what DynamoDB checks of them
    // first is not known): the empty value's own text, not the constraint's.
    let batch = r#"{"RequestItems":{"Tbl":[{"PutRequest":{"Item":{"k":{}}}}]},"ReturnConsumedCapacity":"LOTS"}"#;
    assert_eq!(
        error(&db, "BatchWriteItem", batch).message,
        shoal_model::json::EMPTY_VALUE_MESSAGE
    );
    // The wrong JSON type is refused before the constraints, as before.
    let wrong_type =
        r#"{"TableName":"Tbl","ExclusiveStartKey":{"k":{"N":5}},"ReturnConsumedCapacity":"LOTS"}"#;
    assert_eq!(
        error(&db, "Scan", wrong_type).code,
        ErrorCode::SerializationException
    );
    // Good members: the value's own text stands.
    assert_eq!(
        error(
            &db,
            "GetItem",
            r#"{"TableName":"Tbl","Key":{"k":{}},"ReturnConsumedCapacity":"TOTAL"}"#
        )
        .message,
        shoal_model::json::EMPTY_VALUE_MESSAGE
    );
    // Names given alone with good members still come before the value.
    assert_eq!(
        error(
            &db,
            "GetItem",
            r##"{"TableName":"Tbl","Key":{"k":{}},"ExpressionAttributeNames":{"#x":"x"},"ReturnConsumedCapacity":"TOTAL"}"##
        )
        .message,
        "ExpressionAttributeNames can only be specified when using expressions"
    );
    // A good request decodes as before, and nothing was written by the refused ones.
    assert_eq!(
        call(&db, "Scan", r#"{"TableName":"Tbl"}"#).unwrap()["Count"],
        json!(0)
    );
}
