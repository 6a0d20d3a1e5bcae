//! ExecuteStatement, BatchExecuteStatement and ExecuteTransaction through `Database::execute`
//! (SPEC-2 §3): each statement kind, how it compiles (GetItem, Query, Scan, conditional
//! writes), paging, capacity, and the texts of §3.3.

use serde_json::{json, Value};
use shoal_tables::{Database, Options};

fn open() -> Database {
    let db = Database::open_in_memory(Options::default()).unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Music",
            "AttributeDefinitions": [
                {"AttributeName": "Artist", "AttributeType": "S"},
                {"AttributeName": "SongTitle", "AttributeType": "S"},
                {"AttributeName": "Year", "AttributeType": "N"}
            ],
            "KeySchema": [
                {"AttributeName": "Artist", "KeyType": "HASH"},
                {"AttributeName": "SongTitle", "KeyType": "RANGE"}
            ],
            "GlobalSecondaryIndexes": [{
                "IndexName": "ByYear",
                "KeySchema": [{"AttributeName": "Year", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["Plays"]}
            }],
            "LocalSecondaryIndexes": [{
                "IndexName": "ByYearLocal",
                "KeySchema": [
                    {"AttributeName": "Artist", "KeyType": "HASH"},
                    {"AttributeName": "Year", "KeyType": "RANGE"}
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Flat",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    for (artist, song, year, plays) in [
        ("Ada", "a1", 1990, 5),
        ("Ada", "a2", 1991, 7),
        ("Ada", "b1", 1992, 9),
        ("Bo", "x", 1990, 1),
        ("Cy", "y", 1995, 3),
    ] {
        statement(
            &db,
            json!({
                "Statement": "INSERT INTO Music VALUE {'Artist': ?, 'SongTitle': ?, 'Year': ?, 'Plays': ?, 'Info': {'nested': 'deep', 'l': [1, 2]}}",
                "Parameters": [{"S": artist}, {"S": song}, {"N": year.to_string()}, {"N": plays.to_string()}]
            }),
        )
        .unwrap();
    }
    db
}

fn statement(db: &Database, body: Value) -> Result<Value, (String, String)> {
    db.execute("ExecuteStatement", body)
        .map_err(|e| (e.code.name().to_string(), e.message))
}

fn run(db: &Database, text: &str) -> Result<Value, (String, String)> {
    statement(db, json!({"Statement": text}))
}

fn songs(response: &Value) -> Vec<String> {
    response["Items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["SongTitle"]["S"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn validation(db: &Database, text: &str) -> String {
    match run(db, text) {
        Err((code, message)) => {
            assert_eq!(code, "ValidationException", "{text}: {message}");
            message
        }
        Ok(response) => panic!("{text} answered {response}"),
    }
}

#[test]
fn select_by_key_query_and_scan() {
    let db = open();
    let one = run(
        &db,
        "SELECT * FROM Music WHERE Artist = 'Ada' AND SongTitle = 'a2'",
    )
    .unwrap();
    assert_eq!(songs(&one), ["a2"]);
    assert_eq!(one["Items"][0]["Info"]["M"]["nested"]["S"], "deep");
    let missing = run(
        &db,
        "SELECT * FROM Music WHERE Artist = 'Ada' AND SongTitle = 'zz'",
    )
    .unwrap();
    assert_eq!(missing, json!({"Items": []}));
    let query = run(&db, "SELECT * FROM \"Music\" WHERE Artist = 'Ada'").unwrap();
    assert_eq!(songs(&query), ["a1", "a2", "b1"]);
    let range = run(
        &db,
        "SELECT * FROM Music WHERE Artist = 'Ada' AND begins_with(SongTitle, 'a') AND Plays > 5",
    )
    .unwrap();
    assert_eq!(songs(&range), ["a2"]);
    let between = run(
        &db,
        "SELECT * FROM Music WHERE 'a2' <= SongTitle AND Artist = 'Ada' ORDER BY SongTitle DESC",
    )
    .unwrap();
    assert_eq!(songs(&between), ["b1", "a2"]);
    let many = run(&db, "SELECT * FROM Music WHERE Artist IN ['Cy', 'Bo']").unwrap();
    assert_eq!(songs(&many), ["y", "x"]);
    let or = run(
        &db,
        "SELECT * FROM Music WHERE Artist = 'Bo' OR Artist = 'Ada' AND SongTitle = 'b1'",
    )
    .unwrap();
    assert_eq!(songs(&or), ["x", "b1"]);
    // Conditions a Query filter cannot hold (the keys it queries by) still hold.
    let not_key = run(
        &db,
        "SELECT * FROM Music WHERE Artist = 'Ada' AND SongTitle <> 'a2'",
    )
    .unwrap();
    assert_eq!(songs(&not_key), ["a1", "b1"]);
    let same_partition = run(
        &db,
        "SELECT * FROM Music WHERE Artist = 'Ada' AND SongTitle = 'b1' OR Artist = 'Ada' AND SongTitle = 'a1'",
    )
    .unwrap();
    assert_eq!(songs(&same_partition), ["a1", "b1"]);
    let negated = run(
        &db,
        "SELECT * FROM Music WHERE Artist = 'Ada' AND NOT SongTitle = 'a1' OR Artist = 'Ada' AND SongTitle = 'a1'",
    )
    .unwrap();
    assert_eq!(songs(&negated), ["a1", "a2", "b1"]);
    let scan = run(&db, "SELECT * FROM Music WHERE Plays >= 7").unwrap();
    let mut scanned = songs(&scan);
    scanned.sort();
    assert_eq!(scanned, ["a2", "b1"]);
    let all = run(&db, "SELECT * FROM Music").unwrap();
    assert_eq!(all["Items"].as_array().unwrap().len(), 5);
}

#[test]
fn select_projection_returns_last_path_component() {
    let db = open();
    let response = run(
        &db,
        "SELECT SongTitle, Info.nested, Info.l[1], Nope FROM Music WHERE Artist = 'Bo'",
    )
    .unwrap();
    assert_eq!(
        response["Items"],
        json!([{"SongTitle": {"S": "x"}, "nested": {"S": "deep"}, "l": {"N": "2"}}])
    );
}

#[test]
fn select_on_indexes() {
    let db = open();
    let by_year = run(
        &db,
        "SELECT SongTitle, Plays FROM \"Music\".\"ByYear\" WHERE \"Year\" = 1990",
    )
    .unwrap();
    let mut found = songs(&by_year);
    found.sort();
    assert_eq!(found, ["a1", "x"]);
    assert_eq!(
        validation(&db, "SELECT Info, Other, Plays FROM Music.ByYear WHERE \"Year\" = 1990"),
        "One or more parameter values were invalid: Global secondary index ByYear does not project [Info, Other]"
    );
    // An LSI fetches what it does not hold from the base item.
    let local = statement(
        &db,
        json!({
            "Statement": "SELECT Info.nested FROM Music.ByYearLocal WHERE Artist = 'Ada' AND \"Year\" > 1990",
            "ConsistentRead": true
        }),
    )
    .unwrap();
    assert_eq!(
        local["Items"],
        json!([{"nested": {"S": "deep"}}, {"nested": {"S": "deep"}}])
    );
    assert_eq!(
        validation(&db, "SELECT * FROM Music.Nope WHERE Artist = 'Ada'"),
        "The table does not have the specified index: Nope"
    );
}

#[test]
fn paging_with_limit_and_next_token() {
    let db = open();
    let text = "SELECT * FROM Music WHERE Artist IN ['Ada', 'Bo', 'Cy']";
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut body = json!({"Statement": text, "Limit": 2});
        if let Some(token) = &token {
            body["NextToken"] = json!(token);
        }
        let page = statement(&db, body).unwrap();
        pages += 1;
        assert!(page["Items"].as_array().unwrap().len() <= 2);
        seen.extend(songs(&page));
        match page["NextToken"].as_str() {
            Some(next) => token = Some(next.to_string()),
            None => break,
        }
        assert!(pages < 10);
    }
    assert_eq!(seen, ["a1", "a2", "b1", "x", "y"]);
    // A token belongs to its statement.
    let first = statement(&db, json!({"Statement": text, "Limit": 1})).unwrap();
    let (code, _) = statement(
        &db,
        json!({"Statement": "SELECT * FROM Music", "NextToken": first["NextToken"]}),
    )
    .unwrap_err();
    assert_eq!(code, "ValidationException");
    // A Scan pages too.
    let scan = statement(&db, json!({"Statement": "SELECT * FROM Music", "Limit": 3})).unwrap();
    assert_eq!(scan["Items"].as_array().unwrap().len(), 3);
    let rest = statement(
        &db,
        json!({"Statement": "SELECT * FROM Music", "NextToken": scan["NextToken"]}),
    )
    .unwrap();
    assert_eq!(rest["Items"].as_array().unwrap().len(), 2);
}

#[test]
fn insert_update_delete() {
    let db = open();
    let insert = run(
        &db,
        "INSERT INTO Flat VALUE {'pk': 'k', 'n': 1, 'ss': <<'a', 'b'>>, 'l': [1]}",
    )
    .unwrap();
    assert_eq!(insert, json!({"Items": []}));
    let (code, message) = run(&db, "INSERT INTO Flat VALUE {'pk': 'k'}").unwrap_err();
    assert_eq!(
        (code.as_str(), message.as_str()),
        (
            "DuplicateItemException",
            "Duplicate primary key exists in table"
        )
    );
    let updated = run(
        &db,
        "UPDATE Flat SET n = n + 2 SET l = list_append(l, [2]) SET ss = set_add(ss, <<'c'>>) REMOVE gone WHERE pk = 'k' RETURNING ALL NEW *",
    )
    .unwrap();
    let item = &updated["Items"][0];
    assert_eq!(item["n"], json!({"N": "3"}));
    assert_eq!(item["l"], json!({"L": [{"N": "1"}, {"N": "2"}]}));
    assert_eq!(item["ss"], json!({"SS": ["a", "b", "c"]}));
    let modified = run(
        &db,
        "UPDATE Flat SET ss = set_delete(ss, <<'a'>>) WHERE pk = 'k' RETURNING MODIFIED OLD *",
    )
    .unwrap();
    assert_eq!(modified["Items"], json!([{"ss": {"SS": ["a", "b", "c"]}}]));
    // No upsert.
    let (code, _) = run(&db, "UPDATE Flat SET n = 1 WHERE pk = 'missing'").unwrap_err();
    assert_eq!(code, "ConditionalCheckFailedException");
    assert_eq!(
        run(&db, "SELECT * FROM Flat WHERE pk = 'missing'").unwrap(),
        json!({"Items": []})
    );
    // Extra conditions are the ConditionExpression.
    let (code, _) = run(&db, "UPDATE Flat SET n = 9 WHERE pk = 'k' AND n = 100").unwrap_err();
    assert_eq!(code, "ConditionalCheckFailedException");
    let failed = statement(
        &db,
        json!({"Statement": "DELETE FROM Flat WHERE pk = 'k' AND n = 100", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}),
    );
    assert_eq!(failed.unwrap_err().0, "ConditionalCheckFailedException");
    let deleted = run(&db, "DELETE FROM Flat WHERE pk = 'k' RETURNING ALL OLD *").unwrap();
    assert_eq!(deleted["Items"][0]["n"], json!({"N": "3"}));
    assert_eq!(
        run(&db, "DELETE FROM Flat WHERE pk = 'k'").unwrap(),
        json!({"Items": []})
    );
    run(&db, "INSERT INTO Flat VALUE {'pk': 'k'}").unwrap();
}

#[test]
fn writes_keep_indexes_and_refuse_what_the_operations_refuse() {
    let db = open();
    run(
        &db,
        "UPDATE Music SET \"Year\" = 2001 WHERE Artist = 'Bo' AND SongTitle = 'x'",
    )
    .unwrap();
    let by_year = run(
        &db,
        "SELECT SongTitle FROM Music.ByYear WHERE \"Year\" = 2001",
    )
    .unwrap();
    assert_eq!(songs(&by_year), ["x"]);
    let message = validation(&db, "INSERT INTO Music VALUE {'Artist': 'Z'}");
    assert!(message.contains("Missing the key SongTitle"), "{message}");
    let message = validation(
        &db,
        "INSERT INTO Music VALUE {'Artist': 'Z', 'SongTitle': 's', 'Year': 'x'}",
    );
    assert!(message.contains("Year"), "{message}");
}

#[test]
fn capacity_is_the_operations_own() {
    let db = open();
    let get = db
        .execute(
            "GetItem",
            json!({"TableName": "Music", "Key": {"Artist": {"S": "Ada"}, "SongTitle": {"S": "a1"}}, "ReturnConsumedCapacity": "TOTAL"}),
        )
        .unwrap();
    let select = statement(
        &db,
        json!({"Statement": "SELECT * FROM Music WHERE Artist = 'Ada' AND SongTitle = 'a1'", "ReturnConsumedCapacity": "TOTAL"}),
    )
    .unwrap();
    assert_eq!(select["ConsumedCapacity"], get["ConsumedCapacity"]);
    let query = statement(
        &db,
        json!({"Statement": "SELECT * FROM Music WHERE Artist IN ['Ada', 'Bo']", "ReturnConsumedCapacity": "INDEXES"}),
    )
    .unwrap();
    assert_eq!(query["ConsumedCapacity"]["TableName"], "Music");
    assert_eq!(query["ConsumedCapacity"]["CapacityUnits"], json!(1.0));
    let write = statement(
        &db,
        json!({"Statement": "UPDATE Music SET Plays = 1 WHERE Artist = 'Cy' AND SongTitle = 'y'", "ReturnConsumedCapacity": "INDEXES"}),
    )
    .unwrap();
    assert_eq!(
        write["ConsumedCapacity"]["GlobalSecondaryIndexes"]["ByYear"]["CapacityUnits"],
        json!(1.0)
    );
    let none = run(&db, "SELECT * FROM Music WHERE Artist = 'Ada'").unwrap();
    assert!(none.get("ConsumedCapacity").is_none());
    let totals = db.consumed_capacity();
    let music = &totals.iter().find(|(name, _)| name == "Music").unwrap().1;
    assert!(music.read_units > 0.0 && music.write_units > 0.0);
}

#[test]
fn spec_texts() {
    let db = open();
    assert_eq!(
        validation(&db, "UPDATE Music SET Plays = 1 WHERE Artist = 'Ada'"),
        "Where clause does not contain a mandatory equality on all key attributes"
    );
    assert_eq!(
        validation(
            &db,
            "DELETE FROM Music WHERE Artist = 'Ada' OR SongTitle = 'a1'"
        ),
        "Where clause does not contain a mandatory equality on all key attributes"
    );
    assert_eq!(
        validation(&db, "SELECT * FROM Music WHERE Artist = 'a' AND Plays = 1 OR Artist = 'a' AND SongTitle = '2'"),
        "Overlapping conditions with range keys are not supported in where clause"
    );
    assert_eq!(
        validation(&db, "SELECT * FROM Music WHERE Artist = 'a' AND SongTitle > 'a' OR Artist = 'a' AND SongTitle = 'b'"),
        "Overlapping conditions with range keys are not supported in where clause"
    );
    // Disjoint ranges, other partitions and negated sort conditions run.
    run(&db, "SELECT * FROM Music WHERE Artist = 'a' AND SongTitle < 'a' OR Artist = 'a' AND SongTitle = 'b'").unwrap();
    run(&db, "SELECT * FROM Music WHERE Artist = 'a' AND NOT SongTitle = 'a' OR Artist = 'a' AND SongTitle = 'b'").unwrap();
    let (code, message) = run(&db, "SELECT * FROM Nope WHERE pk = 1").unwrap_err();
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("ResourceNotFoundException", "Requested resource not found")
    );
    assert_eq!(
        validation(&db, "SELECT * FROM Music WHERE attribute_exists('ss')"),
        "Operator or function requires a document path; operator or function: attribute_exists"
    );
    assert_eq!(
        validation(&db, "SELECT * FROM Music WHERE attribute_exists()"),
        "Incorrect number of operands for operator or function; operator or function: attribute_exists, number of operands: 0"
    );
    assert_eq!(
        validation(&db, "SELECT * FROM Music WHERE EXISTS(ss)"),
        "Unrecognized function: exists at 1:27:6"
    );
    // Aggregates: refused as tokens in an expression, as path components in a projection
    // (once the table has been found: a missing one is not found, SPEC-3 §1.5's order).
    assert_eq!(
        validation(&db, "SELECT * FROM Music WHERE COUNT(ss) > 1"),
        "Unsupported token in expression: count at 1:27:5"
    );
    assert_eq!(
        validation(&db, "SELECT * FROM Music WHERE pk = 'a' AND max(ss) = 1"),
        "Unsupported token in expression: max at 1:40:3"
    );
    assert_eq!(
        validation(&db, "SELECT COUNT(*) FROM Music"),
        "Unexpected path component at 1:8:5"
    );
    let (code, message) = run(&db, "SELECT COUNT(*) FROM Nowhere").unwrap_err();
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("ResourceNotFoundException", "Requested resource not found")
    );
    // The neighbouring projections run unchanged.
    run(&db, "SELECT * FROM Music WHERE Artist = 'a'").unwrap();
    run(
        &db,
        "SELECT Artist, SongTitle FROM Music WHERE Artist = 'a'",
    )
    .unwrap();
    run(&db, r#"SELECT "COUNT" FROM Music WHERE Artist = 'a'"#).unwrap();
    assert_eq!(
        validation(
            &db,
            "UPDATE Flat SET ss = set_add(other, <<'x'>>) WHERE pk = 'k'"
        ),
        "The first argument to SET_ADD must equal the assignment value at 1:22:7"
    );
    assert_eq!(
        validation(&db, "UPDATE Flat SET ss = set_add(ss, 'x') WHERE pk = 'k'"),
        "The second argument to SET_ADD must be a value with type SET at 1:22:7"
    );
    assert_eq!(
        validation(&db, "UPDATE Flat SET ss = set_delete(ss) WHERE pk = 'k'"),
        "SET_DELETE must have exactly two arguments at 1:22:10"
    );
    assert_eq!(
        validation(&db, "INSERT INTO Flat VALUE {'pk': 'k', 's': <<'x', 'x'>>}"),
        "One or more parameter values were invalid: Input collection [x, x] contains duplicates."
    );
    assert_eq!(
        validation(&db, "INSERT INTO Flat VALUE {'pk': 'k', 's': <<>>}"),
        "Empty bags are not supported"
    );
    assert_eq!(
        validation(
            &db,
            "INSERT INTO Flat VALUE {'pk': 'k', 's': set_add(a, <<1>>)}"
        ),
        "Unsupported data type: set_add under key root at 1:41:7"
    );
    let (code, message) =
        statement(&db, json!({"Statement": "SELECT * FROM Flat WHERE pk = ?"})).unwrap_err();
    assert_eq!(
        (code.as_str(), message.as_str()),
        (
            "ValidationException",
            "Number of parameters in request and statement doesn't match."
        )
    );
    let (_, message) = statement(&db, json!({"Statement": "", "Parameters": []})).unwrap_err();
    assert_eq!(
        message,
        "2 validation errors detected: Value '' at 'statement' failed to satisfy constraint: Member must have length greater than or equal to 1; Value '[]' at 'parameters' failed to satisfy constraint: Member must have length greater than or equal to 1"
    );
    let (_, message) = statement(&db, json!({"Statement": "x".repeat(8193)})).unwrap_err();
    assert!(message.ends_with("Member must have length less than or equal to 8192"));
    let (_, message) =
        statement(&db, json!({"Statement": "SELECT * FROM Flat", "Limit": 0})).unwrap_err();
    assert!(message.contains("at 'limit'"), "{message}");
}

fn batch(db: &Database, statements: Value) -> Value {
    db.execute(
        "BatchExecuteStatement",
        json!({"Statements": statements, "ReturnConsumedCapacity": "TOTAL"}),
    )
    .unwrap()
}

#[test]
fn batch_execute_statement_answers_per_slot() {
    let db = open();
    let reads = batch(
        &db,
        json!([
            {"Statement": "SELECT SongTitle FROM Music WHERE Artist = 'Ada' AND SongTitle = 'a1'"},
            {"Statement": "SELECT * FROM Music WHERE Artist = 'Ada' AND SongTitle = 'nope'"},
            {"Statement": "SELECT * FROM Music WHERE Artist = 'Ada'"},
            {"Statement": "SELECT * FROM Nope WHERE pk = 'a'"},
            {"Statement": "SELECT * FROM"}
        ]),
    );
    let responses = reads["Responses"].as_array().unwrap();
    assert_eq!(
        responses[0],
        json!({"TableName": "Music", "Item": {"SongTitle": {"S": "a1"}}})
    );
    assert_eq!(responses[1], json!({"TableName": "Music"}));
    assert_eq!(responses[2]["Error"]["Code"], "ValidationError");
    assert_eq!(
        responses[2]["Error"]["Message"],
        "Select statements within BatchExecuteStatement must specify the primary key in the where clause."
    );
    assert_eq!(responses[3]["Error"]["Code"], "ResourceNotFound");
    assert_eq!(responses[4]["Error"]["Code"], "ValidationError");
    assert_eq!(reads["ConsumedCapacity"][0]["CapacityUnits"], json!(1.0));
    let writes = batch(
        &db,
        json!([
            {"Statement": "INSERT INTO Flat VALUE {'pk': 'a'}"},
            {"Statement": "INSERT INTO Flat VALUE {'pk': 'a'}"},
            {"Statement": "UPDATE Flat SET n = 1 WHERE pk = 'zz'", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"},
            {"Statement": "DELETE FROM Flat WHERE pk = ?", "Parameters": [{"S": "a"}]}
        ]),
    );
    let responses = writes["Responses"].as_array().unwrap();
    assert_eq!(responses[0], json!({"TableName": "Flat"}));
    assert_eq!(responses[1]["Error"]["Code"], "DuplicateItem");
    assert_eq!(responses[2]["Error"]["Code"], "ConditionalCheckFailed");
    assert_eq!(responses[3], json!({"TableName": "Flat"}));
    assert_eq!(
        run(&db, "SELECT * FROM Flat").unwrap(),
        json!({"Items": []})
    );
    let mixed = db.execute(
        "BatchExecuteStatement",
        json!({"Statements": [
            {"Statement": "SELECT * FROM Flat WHERE pk = 'a'"},
            {"Statement": "INSERT INTO Flat VALUE {'pk': 'b'}"}
        ]}),
    );
    assert_eq!(mixed.unwrap_err().code.name(), "ValidationException");
    let empty = db.execute("BatchExecuteStatement", json!({"Statements": []}));
    assert_eq!(empty.unwrap_err().code.name(), "ValidationException");
}

#[test]
fn execute_transaction_reads_and_writes_atomically() {
    let db = open();
    let written = db
        .execute(
            "ExecuteTransaction",
            json!({"TransactStatements": [
                {"Statement": "INSERT INTO Flat VALUE {'pk': 'a', 'n': 1}"},
                {"Statement": "UPDATE Music SET Plays = 100 WHERE Artist = 'Ada' AND SongTitle = 'a1'"},
                {"Statement": "EXISTS(SELECT * FROM Music WHERE Artist = 'Bo' AND SongTitle = 'x' AND Plays = 1)"}
            ], "ReturnConsumedCapacity": "TOTAL"}),
        )
        .unwrap();
    assert_eq!(written["Responses"], json!([]));
    assert_eq!(written["ConsumedCapacity"].as_array().unwrap().len(), 2);
    let read = db
        .execute(
            "ExecuteTransaction",
            json!({"TransactStatements": [
                {"Statement": "SELECT n FROM Flat WHERE pk = 'a'"},
                {"Statement": "SELECT Plays FROM Music WHERE Artist = 'Ada' AND SongTitle = 'a1'"},
                {"Statement": "SELECT * FROM Flat WHERE pk = 'none'"}
            ]}),
        )
        .unwrap();
    assert_eq!(
        read["Responses"],
        json!([{"Item": {"n": {"N": "1"}}}, {"Item": {"Plays": {"N": "100"}}}, {}])
    );
    // A duplicate INSERT cancels everything, with a DuplicateItem reason.
    let cancelled = db
        .execute(
            "ExecuteTransaction",
            json!({"TransactStatements": [
                {"Statement": "UPDATE Flat SET n = 2 WHERE pk = 'a'"},
                {"Statement": "INSERT INTO Music VALUE {'Artist': 'Bo', 'SongTitle': 'x'}"}
            ]}),
        )
        .unwrap_err();
    assert_eq!(cancelled.code.name(), "TransactionCanceledException");
    assert!(
        cancelled.message.ends_with("[None, DuplicateItem]"),
        "{}",
        cancelled.message
    );
    let reasons = &cancelled.extra.unwrap()["CancellationReasons"];
    assert_eq!(reasons[1]["Code"], "DuplicateItem");
    assert_eq!(
        run(&db, "SELECT n FROM Flat WHERE pk = 'a'").unwrap()["Items"][0]["n"],
        json!({"N": "1"})
    );
    let refused = db
        .execute(
            "ExecuteTransaction",
            json!({"TransactStatements": [
                {"Statement": "SELECT * FROM Music WHERE Artist = 'Ada'"}
            ]}),
        )
        .unwrap_err();
    assert_eq!(
        refused.message,
        "Validation failed in TransactStatements[0]: Select statements within ExecuteTransaction must specify the primary key in the where clause."
    );
    let refused = db
        .execute(
            "ExecuteTransaction",
            json!({"TransactStatements": [
                {"Statement": "INSERT INTO Flat VALUE {'pk': 'q'}"},
                {"Statement": "EXISTS(SELECT * FROM Flat WHERE pk = 'a')"}
            ]}),
        )
        .unwrap_err();
    assert_eq!(
        refused.message,
        "Validation failed in TransactStatements[1]: EXISTS() must contain a single item read with additional condition"
    );
    let refused = db
        .execute(
            "ExecuteTransaction",
            json!({"TransactStatements": [{"Statement": "SELECT * FROM Flat WHERE"}]}),
        )
        .unwrap_err();
    assert_eq!(
        refused.message,
        "Validation failed in TransactStatements[0]: Statement wasn't well formed, can't be processed: Unexpected term"
    );
    for statement in [
        "UPDATE Flat SET n = 3 WHERE pk = 'a' RETURNING ALL NEW *",
        "DELETE FROM Flat WHERE pk = 'a' RETURNING ALL OLD *",
    ] {
        let refused = db
            .execute(
                "ExecuteTransaction",
                json!({"TransactStatements": [{"Statement": statement}]}),
            )
            .unwrap_err();
        assert_eq!(
            refused.message,
            "Validation failed in TransactStatements[0]: Unsupported operation: RETURNING is not supported in a transaction"
        );
    }
    // Idempotency as TransactWriteItems.
    let body = json!({"TransactStatements": [{"Statement": "INSERT INTO Flat VALUE {'pk': 't'}"}], "ClientRequestToken": "tok"});
    db.execute("ExecuteTransaction", body.clone()).unwrap();
    db.execute("ExecuteTransaction", body).unwrap();
}
