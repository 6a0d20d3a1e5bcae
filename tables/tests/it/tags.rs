//! Tags (SPEC-2 §4): TagResource, UntagResource, ListTagsOfResource and CreateTable's
//! `Tags`: every limit, ARN check and text, durability across a reopen, and tags going
//! away with their table.

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::{Database, Durability, Options, StorageOptions};

const ARN: &str = "arn:aws:dynamodb:ddblocal:000000000000:table/Tagged";

/// Small in-memory storage without durability; also the resource-policy tests'.
pub(crate) fn options() -> Options {
    Options {
        storage: StorageOptions {
            durability: Durability::None,
            wal_segment_size_bytes: 1 << 20,
            memtable_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    }
}

fn open() -> Database {
    Database::open_in_memory(options()).unwrap()
}

fn create_request(name: &str) -> Value {
    json!({
        "TableName": name,
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST"
    })
}

fn create(db: &Database) {
    db.execute("CreateTable", create_request("Tagged")).unwrap();
}

fn call(db: &Database, operation: &str, request: Value) -> Value {
    db.execute(operation, request)
        .unwrap_or_else(|e| panic!("{operation}: {e}"))
}

fn error(db: &Database, operation: &str, request: Value) -> (ErrorCode, String) {
    let e = db
        .execute(operation, request)
        .expect_err("the request must fail");
    (e.code, e.message)
}

fn validation(message: &str) -> (ErrorCode, String) {
    (ErrorCode::ValidationException, message.to_string())
}

fn tag(key: &str, value: &str) -> Value {
    json!({"Key": key, "Value": value})
}

fn tag_resource(db: &Database, tags: Value) -> Result<Value, (ErrorCode, String)> {
    db.execute("TagResource", json!({"ResourceArn": ARN, "Tags": tags}))
        .map_err(|e| (e.code, e.message))
}

/// The table's tags as (key, value) pairs, in the order listed.
fn tags_of(db: &Database, arn: &str) -> Vec<(String, String)> {
    let listed = call(db, "ListTagsOfResource", json!({"ResourceArn": arn}));
    assert!(listed.get("NextToken").is_none());
    listed["Tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["Key"].as_str().unwrap().to_string(),
                t["Value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn tag_list_and_untag_a_table() {
    let db = open();
    create(&db);
    assert_eq!(tags_of(&db, ARN), vec![]);
    assert_eq!(
        call(&db, "ListTagsOfResource", json!({"ResourceArn": ARN})),
        json!({"Tags": []})
    );

    let answer = tag_resource(&db, json!([tag("team", "data"), tag("env", "")])).unwrap();
    assert_eq!(answer, json!({}));
    // Key order; an empty value is a value.
    assert_eq!(tags_of(&db, ARN), pairs(&[("env", ""), ("team", "data")]));

    // Re-tagging a key overwrites its value; keys are case-sensitive.
    tag_resource(&db, json!([tag("team", "ops"), tag("Team", "x")])).unwrap();
    assert_eq!(
        tags_of(&db, ARN),
        pairs(&[("Team", "x"), ("env", ""), ("team", "ops")])
    );

    // Untagging an absent key is fine.
    let answer = call(
        &db,
        "UntagResource",
        json!({"ResourceArn": ARN, "TagKeys": ["team", "absent"]}),
    );
    assert_eq!(answer, json!({}));
    assert_eq!(tags_of(&db, ARN), pairs(&[("Team", "x"), ("env", "")]));
}

#[test]
fn a_stream_arn_tags_its_table_and_index_arns_are_refused() {
    let db = open();
    let mut request = create_request("Tagged");
    request["StreamSpecification"] = json!({"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"});
    let created = call(&db, "CreateTable", request);
    let stream_arn = created["TableDescription"]["LatestStreamArn"]
        .as_str()
        .unwrap()
        .to_string();
    call(
        &db,
        "TagResource",
        json!({"ResourceArn": stream_arn, "Tags": [tag("k", "v")]}),
    );
    assert_eq!(tags_of(&db, ARN), pairs(&[("k", "v")]));
    assert_eq!(tags_of(&db, &stream_arn), pairs(&[("k", "v")]));

    // A stream label the table never had.
    let other_stream = format!("{ARN}/stream/2000-01-01T00:00:00.000");
    assert_eq!(
        error(
            &db,
            "ListTagsOfResource",
            json!({"ResourceArn": other_stream})
        ),
        (
            ErrorCode::ResourceNotFoundException,
            format!("Requested resource not found: ResourcArn: {other_stream} not found")
        )
    );

    let index_arn = format!("{ARN}/index/ByX");
    for (operation, request) in [
        (
            "TagResource",
            json!({"ResourceArn": index_arn, "Tags": [tag("k", "v")]}),
        ),
        (
            "UntagResource",
            json!({"ResourceArn": index_arn, "TagKeys": ["k"]}),
        ),
        ("ListTagsOfResource", json!({"ResourceArn": index_arn})),
    ] {
        assert_eq!(
            error(&db, operation, request),
            validation(&format!(
                "One or more parameter values were invalid: Invalid resource arn provided, only table or stream is accepted. Provided resource arn: {index_arn}"
            )),
            "{operation}"
        );
    }
}

#[test]
fn arns_are_checked_with_dynamodbs_texts() {
    let db = open();
    create(&db);
    let list = |arn: &str| error(&db, "ListTagsOfResource", json!({"ResourceArn": arn}));
    assert_eq!(
        list("table/Tagged"),
        validation(
            "One or more parameter values were invalid: ARNs must start with 'arn:': table/Tagged"
        )
    );
    for arn in ["arn:aws:s3:::bucket", "arn:aws:dynamodb:ddblocal"] {
        assert_eq!(
            list(arn),
            validation(&format!(
                "One or more parameter values were invalid: Provided Arn is not a DynamoDB resource arn: {arn}"
            ))
        );
    }
    for arn in [
        "arn:aws:dynamodb:ddblocal:000000000000:backup/x",
        "arn:aws:dynamodb:ddblocal:000000000000:table/",
        "arn:aws:dynamodb:ddblocal:000000000000:table/Tagged/other/x",
    ] {
        assert_eq!(
            list(arn),
            validation(&format!(
                "One or more parameter values were invalid: Invalid resource arn provided, only table or stream is accepted. Provided resource arn: {arn}"
            ))
        );
    }
    // Shoal serves every region from one database, in account 000000000000
    // (docs/COMPATIBILITY.md): an ARN of any region names the table; another partition does
    // not.
    let other_region = "arn:aws:dynamodb:us-east-1:000000000000:table/Tagged";
    call(
        &db,
        "ListTagsOfResource",
        json!({"ResourceArn": other_region}),
    );
    let other_partition = "arn:aws-cn:dynamodb:cn-north-1:000000000000:table/Tagged";
    assert_eq!(
        list(other_partition),
        validation(&format!(
            "Invalid TableArn: Invalid ResourceArn provided as input {other_partition}"
        ))
    );
    let other_account = "arn:aws:dynamodb:ddblocal:123456789012:table/Tagged";
    let (code, message) = list(other_account);
    assert_eq!(code, ErrorCode::AccessDeniedException);
    assert!(
        message.contains("dynamodb:ListTagsOfResource") && message.contains(other_account),
        "{message}"
    );
    let missing = "arn:aws:dynamodb:ddblocal:000000000000:table/Missing";
    assert_eq!(
        list(missing),
        (
            ErrorCode::ResourceNotFoundException,
            format!("Requested resource not found: ResourcArn: {missing} not found")
        )
    );
    assert_eq!(
        error(
            &db,
            "TagResource",
            json!({"ResourceArn": missing, "Tags": [tag("k", "v")]})
        )
        .0,
        ErrorCode::ResourceNotFoundException
    );

    // Member constraints, aggregated.
    assert_eq!(
        error(&db, "ListTagsOfResource", json!({})),
        validation("1 validation error detected: Value null at 'resourceArn' failed to satisfy constraint: Member must not be null")
    );
    assert_eq!(
        error(&db, "TagResource", json!({})),
        validation("2 validation errors detected: Value null at 'resourceArn' failed to satisfy constraint: Member must not be null; Value null at 'tags' failed to satisfy constraint: Member must not be null")
    );
    assert_eq!(
        error(&db, "UntagResource", json!({"ResourceArn": ARN})),
        validation("1 validation error detected: Value null at 'tagKeys' failed to satisfy constraint: Member must not be null")
    );
    assert_eq!(
        list(""),
        validation("1 validation error detected: Value '' at 'resourceArn' failed to satisfy constraint: Member must have length greater than or equal to 1")
    );
    let long = format!("{ARN}{}", "x".repeat(1283));
    assert_eq!(
        list(&long),
        validation(&format!("1 validation error detected: Value '{long}' at 'resourceArn' failed to satisfy constraint: Member must have length less than or equal to 1283"))
    );
}

#[test]
fn tag_keys_and_values_follow_the_tagging_rules() {
    let db = open();
    create(&db);
    assert_eq!(
        tag_resource(&db, json!([])),
        Err(validation("Atleast one Tag needs to be provided as Input."))
    );
    assert_eq!(
        error(
            &db,
            "UntagResource",
            json!({"ResourceArn": ARN, "TagKeys": []})
        ),
        validation("Atleast one Tag Key needs to be provided as Input.")
    );
    let key_error = |key: &str| validation(&format!("The Tag Key provided is invalid, Key: {key}"));
    let value_error = |value: &str| {
        validation(&format!(
            "The Tag Value provided is invalid, Value: {value}"
        ))
    };
    assert_eq!(tag_resource(&db, json!([tag("", "v")])), Err(key_error("")));
    assert_eq!(
        tag_resource(&db, json!([{"Value": "v"}])),
        Err(key_error("null"))
    );
    assert_eq!(
        tag_resource(&db, json!([{"Key": "k"}])),
        Err(value_error("null"))
    );
    assert_eq!(
        tag_resource(&db, json!([tag("a*b", "v")])),
        Err(key_error("a*b"))
    );
    assert_eq!(
        tag_resource(&db, json!([tag("k", "v#")])),
        Err(value_error("v#"))
    );
    // Lengths are Unicode characters, not bytes.
    let key = "é".repeat(128);
    let value = "日".repeat(256);
    tag_resource(&db, json!([tag(&key, &value)])).unwrap();
    let long_key = format!("{key}x");
    assert_eq!(
        tag_resource(&db, json!([tag(&long_key, "v")])),
        Err(key_error(&long_key))
    );
    let long_value = format!("{value}x");
    assert_eq!(
        tag_resource(&db, json!([tag("k", &long_value)])),
        Err(value_error(&long_value))
    );
    // Letters and digits of any script, whitespace and + - = . _ : /
    tag_resource(&db, json!([tag("Ünï 9 +-=._:/", "ça va 2 +-=._:/")])).unwrap();
    for key in ["aws:owner", "AWS:owner"] {
        assert_eq!(
            tag_resource(&db, json!([tag(key, "v")])),
            Err(validation(&format!(
                "Tag Key cannot be prefixed with aws:, Key: {key}"
            )))
        );
    }
    assert_eq!(
        error(
            &db,
            "UntagResource",
            json!({"ResourceArn": ARN, "TagKeys": ["a*b"]})
        ),
        key_error("a*b")
    );
    assert_eq!(
        tag_resource(
            &db,
            json!([tag("dup", "1"), tag("ok", "2"), tag("dup", "3")])
        ),
        Err(validation(
            "Duplicate Tag Keys provided as input: Duplicate Tag Key found dup"
        ))
    );
    // Refused requests changed nothing. (Key order is code point order: Ü before é.)
    assert_eq!(
        tags_of(&db, ARN),
        pairs(&[("Ünï 9 +-=._:/", "ça va 2 +-=._:/"), (&key, &value)])
    );
}

#[test]
fn at_most_fifty_tags_per_table() {
    let db = open();
    create(&db);
    let tags = |range: std::ops::Range<usize>| -> Value {
        range.map(|i| tag(&format!("k{i:02}"), "v")).collect()
    };
    tag_resource(&db, tags(0..30)).unwrap();
    tag_resource(&db, tags(30..50)).unwrap();
    assert_eq!(tags_of(&db, ARN).len(), 50);
    assert_eq!(
        tag_resource(&db, tags(50..51)),
        Err(validation(
            "Number of Tags exceed the current limit for the provided ResourceArn"
        ))
    );
    // Overwriting a key at the limit does not add one.
    tag_resource(&db, json!([tag("k07", "new")])).unwrap();
    let listed = tags_of(&db, ARN);
    assert_eq!(listed.len(), 50);
    assert!(listed.contains(&("k07".to_string(), "new".to_string())));

    // A NextToken is the key after which the listing continues.
    let rest = call(
        &db,
        "ListTagsOfResource",
        json!({"ResourceArn": ARN, "NextToken": "k47"}),
    );
    assert_eq!(rest, json!({"Tags": [tag("k48", "v"), tag("k49", "v")]}));
}

#[test]
fn create_table_takes_tags_with_the_same_rules() {
    let db = open();
    let mut request = create_request("Tagged");
    request["Tags"] = json!([tag("b", "2"), tag("a", "1")]);
    call(&db, "CreateTable", request);
    assert_eq!(tags_of(&db, ARN), pairs(&[("a", "1"), ("b", "2")]));

    let with_tags = |tags: Value| {
        let mut request = create_request("Other");
        request["Tags"] = tags;
        db.execute("CreateTable", request)
            .map_err(|e| (e.code, e.message))
    };
    let too_many: Value = (0..51).map(|i| tag(&format!("k{i}"), "v")).collect();
    assert_eq!(
        with_tags(too_many),
        Err(validation(
            "Number of Tags exceed the current limit for the provided ResourceArn"
        ))
    );
    assert_eq!(
        with_tags(json!([tag("aws:x", "v")])),
        Err(validation(
            "Tag Key cannot be prefixed with aws:, Key: aws:x"
        ))
    );
    assert_eq!(
        with_tags(json!([tag("x", "1"), tag("x", "2")])),
        Err(validation(
            "Duplicate Tag Keys provided as input: Duplicate Tag Key found x"
        ))
    );
    assert_eq!(
        with_tags(json!([{"Key": "x"}])),
        Err(validation("The Tag Value provided is invalid, Value: null"))
    );
    // Refused CreateTables created nothing.
    assert_eq!(
        call(&db, "ListTables", json!({})),
        json!({"TableNames": ["Tagged"]})
    );
    // An empty list is no tags.
    with_tags(json!([])).unwrap();
    assert_eq!(
        tags_of(&db, "arn:aws:dynamodb:ddblocal:000000000000:table/Other"),
        vec![]
    );
}

#[test]
fn tags_survive_a_reopen_and_go_away_with_the_table() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), options()).unwrap();
        create(&db);
        tag_resource(&db, json!([tag("a", "1"), tag("b", "2"), tag("c", "3")])).unwrap();
        call(
            &db,
            "UntagResource",
            json!({"ResourceArn": ARN, "TagKeys": ["b"]}),
        );
    }
    let db = Database::open(dir.path(), options()).unwrap();
    assert_eq!(tags_of(&db, ARN), pairs(&[("a", "1"), ("c", "3")]));

    call(&db, "DeleteTable", json!({"TableName": "Tagged"}));
    assert_eq!(
        error(&db, "ListTagsOfResource", json!({"ResourceArn": ARN})).0,
        ErrorCode::ResourceNotFoundException
    );
    create(&db);
    assert_eq!(tags_of(&db, ARN), vec![]);
}
