//! CreateTable validation: every rule of SPEC §2.1/§2.2 with its exact message, the allowed
//! cases, and that a rejected request creates nothing.

use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::{Database, Options, StorageOptions};

fn open() -> Database {
    Database::open_in_memory(Options {
        storage: StorageOptions {
            wal_segment_size_bytes: 1 << 20,
            memtable_size_bytes: 1 << 20,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .unwrap()
}

fn def(name: &str, ty: &str) -> Value {
    json!({"AttributeName": name, "AttributeType": ty})
}

fn key(name: &str, key_type: &str) -> Value {
    json!({"AttributeName": name, "KeyType": key_type})
}

/// A valid on-demand table `T` with key pk/sk and definitions pk, sk, a (S), b (N); tests
/// change members of it.
fn base_request() -> Value {
    json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [def("pk", "S"), def("sk", "S")],
        "KeySchema": [key("pk", "HASH"), key("sk", "RANGE")],
        "BillingMode": "PAY_PER_REQUEST",
    })
}

fn with(mut request: Value, member: &str, value: Value) -> Value {
    request[member] = value;
    request
}

fn all_defs() -> Value {
    json!([def("pk", "S"), def("sk", "S"), def("a", "S"), def("b", "N")])
}

fn lsi(name: &str, range: &str, projection: Value) -> Value {
    json!({"IndexName": name, "KeySchema": [key("pk", "HASH"), key(range, "RANGE")], "Projection": projection})
}

fn gsi(name: &str, keys: Value, projection: Value) -> Value {
    json!({"IndexName": name, "KeySchema": keys, "Projection": projection})
}

fn rejected(db: &Database, request: Value) -> (ErrorCode, String) {
    let error = db
        .execute("CreateTable", request)
        .expect_err("the request must be rejected");
    (error.code, error.message)
}

/// Rejected with a ValidationException whose message is exactly `message`.
fn assert_message(db: &Database, request: Value, message: &str) {
    let (code, text) = rejected(db, request);
    assert_eq!(code, ErrorCode::ValidationException, "{text}");
    assert_eq!(text, message);
}

/// Rejected with a ValidationException whose message contains every one of `parts`.
fn assert_mentions(db: &Database, request: Value, parts: &[&str]) {
    let (code, text) = rejected(db, request);
    assert_eq!(code, ErrorCode::ValidationException, "{text}");
    for part in parts {
        assert!(text.contains(part), "{text:?} should mention {part:?}");
    }
}

const INVALID: &str = "One or more parameter values were invalid:";

#[test]
fn table_name_and_required_members() {
    let db = open();
    let mut request = base_request();
    request.as_object_mut().unwrap().remove("TableName");
    assert_message(
        &db,
        request,
        "The parameter 'TableName' is required but was not present in the request",
    );
    assert_message(
        &db,
        with(base_request(), "TableName", json!("ab")),
        "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3",
    );
    let long = "x".repeat(256);
    assert_message(
        &db,
        with(base_request(), "TableName", json!(long)),
        &format!("1 validation error detected: Value '{long}' at 'tableName' failed to satisfy constraint: Member must have length less than or equal to 255"),
    );
    assert_message(
        &db,
        with(base_request(), "TableName", json!("a b")),
        "1 validation error detected: Value 'a b' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+",
    );
    let mut request = base_request();
    request
        .as_object_mut()
        .unwrap()
        .remove("AttributeDefinitions");
    assert_mentions(&db, request, &["AttributeDefinitions"]);
    // Two constraint violations are reported together.
    let both = with(
        with(base_request(), "TableName", json!("a!")),
        "BillingMode",
        json!("FREE"),
    );
    let (_, text) = rejected(&db, both);
    assert!(text.starts_with("3 validation errors detected: "), "{text}");
    assert!(text.contains("Value 'FREE' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PAY_PER_REQUEST, PROVISIONED]"), "{text}");
}

#[test]
fn table_key_schema_rules() {
    let db = open();
    assert_message(
        &db,
        with(base_request(), "KeySchema", json!([key("pk", "INVALID"), key("sk", "RANGE")])),
        "1 validation error detected: Value 'INVALID' at 'keySchema.1.member.keyType' failed to satisfy constraint: Member must satisfy enum value set: [HASH, RANGE]",
    );
    let (_, text) = rejected(
        &db,
        with(
            base_request(),
            "KeySchema",
            json!([key("pk", "HASH"), key("sk", "RANGE"), key("x", "RANGE")]),
        ),
    );
    assert!(
        text.starts_with("1 validation error detected: Value '["),
        "{text}"
    );
    assert!(text.ends_with("' at 'keySchema' failed to satisfy constraint: Member must have length less than or equal to 2"), "{text}");
    assert_message(
        &db,
        with(
            base_request(),
            "KeySchema",
            json!([key("pk", "HASH"), key("pk", "RANGE")]),
        ),
        "Invalid KeySchema: Some index key attribute have no definition",
    );
    assert_message(
        &db,
        with(with(base_request(), "AttributeDefinitions", json!([def("b", "S")])), "KeySchema", json!([key("a", "HASH")])),
        &format!("{INVALID} Some index key attributes are not defined in AttributeDefinitions. Keys: [a], AttributeDefinitions: [b]"),
    );
    assert_message(
        &db,
        with(
            base_request(),
            "KeySchema",
            json!([key("pk", "RANGE"), key("sk", "HASH")]),
        ),
        "Invalid KeySchema: The first KeySchemaElement is not a HASH key type",
    );
    assert_message(
        &db,
        with(
            base_request(),
            "KeySchema",
            json!([key("pk", "HASH"), key("sk", "HASH")]),
        ),
        "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type",
    );
}

#[test]
fn attribute_definition_rules() {
    let db = open();
    assert_message(
        &db,
        with(base_request(), "AttributeDefinitions", json!([def("pk", "S"), def("sk", "S"), def("a", "S")])),
        &format!("{INVALID} Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions"),
    );
    let unused = with(
        with(base_request(), "AttributeDefinitions", all_defs()),
        "LocalSecondaryIndexes",
        json!([lsi("byA", "a", json!({"ProjectionType": "KEYS_ONLY"}))]),
    );
    assert_message(
        &db,
        unused,
        &format!("{INVALID} Some AttributeDefinitions are not used. AttributeDefinitions: [pk, sk, a, b], keys used: [pk, sk, a]"),
    );
    assert_mentions(
        &db,
        with(
            base_request(),
            "AttributeDefinitions",
            json!([def("pk", "S"), def("sk", "S"), def("sk", "N")]),
        ),
        &["Duplicate", "sk"],
    );
    assert_message(
        &db,
        with(base_request(), "AttributeDefinitions", json!([def("pk", "S"), def("sk", "BOOL")])),
        "1 validation error detected: Value 'BOOL' at 'attributeDefinitions.2.member.attributeType' failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]",
    );
}

#[test]
fn local_index_rules() {
    let db = open();
    let keys_only = json!({"ProjectionType": "KEYS_ONLY"});
    let request = |indexes: Value| {
        with(
            with(base_request(), "AttributeDefinitions", all_defs()),
            "LocalSecondaryIndexes",
            indexes,
        )
    };
    let hash_only = json!({
        "TableName": "Tbl",
        "AttributeDefinitions": [def("pk", "S"), def("a", "S")],
        "KeySchema": [key("pk", "HASH")],
        "BillingMode": "PAY_PER_REQUEST",
        "LocalSecondaryIndexes": [lsi("byA", "a", keys_only.clone())],
    });
    assert_message(
        &db,
        hash_only,
        &format!("{INVALID} Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex"),
    );
    let no_range =
        json!([{"IndexName": "idx", "KeySchema": [key("pk", "HASH")], "Projection": keys_only}]);
    assert_message(
        &db,
        request(no_range),
        &format!("{INVALID} Index KeySchema does not have a range key for index: idx"),
    );
    let other_hash = json!([{"IndexName": "idx", "KeySchema": [key("b", "HASH"), key("a", "RANGE")], "Projection": keys_only}]);
    assert_message(
        &db,
        request(other_hash),
        &format!("{INVALID} Index KeySchema does not have the same leading hash key as table KeySchema for index: idx. index hash key: b, table hash key: pk"),
    );
    let three = json!([{"IndexName": "idx", "KeySchema": [key("pk", "HASH"), key("a", "RANGE"), key("b", "RANGE")], "Projection": keys_only}]);
    assert_mentions(
        &db,
        request(three),
        &["localSecondaryIndexes.1.member.keySchema", "2"],
    );
    assert_message(
        &db,
        request(json!([])),
        &format!("{INVALID} List of LocalSecondaryIndexes is empty"),
    );
    let six: Vec<Value> = (0..6)
        .map(|i| {
            lsi(
                &format!("lsi{i}"),
                if i % 2 == 0 { "a" } else { "b" },
                keys_only.clone(),
            )
        })
        .collect();
    assert_message(
        &db,
        request(json!(six)),
        &format!("{INVALID} Number of LocalSecondaryIndexes exceeds per-table limit of 5"),
    );
    let twice = json!([
        lsi("dup", "a", keys_only.clone()),
        lsi("dup", "b", keys_only.clone())
    ]);
    assert_message(
        &db,
        request(twice),
        &format!("{INVALID} Duplicate index name: dup"),
    );
}

#[test]
fn global_index_rules() {
    let db = open();
    let all = json!({"ProjectionType": "ALL"});
    let request = |indexes: Value| {
        with(
            with(
                base_request(),
                "AttributeDefinitions",
                json!([def("pk", "S"), def("sk", "S"), def("a", "S")]),
            ),
            "GlobalSecondaryIndexes",
            indexes,
        )
    };
    assert_mentions(
        &db,
        request(json!([gsi("gix", json!([key("a", "RANGE")]), all.clone())])),
        &["HASH"],
    );
    assert_message(
        &db,
        request(json!([])),
        &format!("{INVALID} List of GlobalSecondaryIndexes is empty"),
    );
    let many: Vec<Value> = (0..21)
        .map(|i| gsi(&format!("g{i:02}"), json!([key("a", "HASH")]), all.clone()))
        .collect();
    assert_message(
        &db,
        request(json!(many)),
        &format!("{INVALID} GlobalSecondaryIndex count exceeds the per-table limit of 20"),
    );
    let twice = json!([
        gsi("dup", json!([key("a", "HASH")]), all.clone()),
        gsi("dup", json!([key("sk", "HASH")]), all.clone())
    ]);
    assert_message(
        &db,
        request(twice),
        &format!("{INVALID} Duplicate index name: dup"),
    );
    // LSI and GSI share one namespace.
    let mixed = with(
        with(
            with(base_request(), "AttributeDefinitions", all_defs()),
            "LocalSecondaryIndexes",
            json!([lsi("dup", "a", all.clone())]),
        ),
        "GlobalSecondaryIndexes",
        json!([gsi("dup", json!([key("b", "HASH")]), all.clone())]),
    );
    assert_message(&db, mixed, &format!("{INVALID} Duplicate index name: dup"));
}

#[test]
fn projection_rules() {
    let db = open();
    let request = |projection: Value| {
        with(
            with(
                base_request(),
                "AttributeDefinitions",
                json!([def("pk", "S"), def("sk", "S"), def("a", "S")]),
            ),
            "GlobalSecondaryIndexes",
            json!([gsi("gix", json!([key("a", "HASH")]), projection)]),
        )
    };
    assert_message(
        &db,
        request(json!({})),
        &format!("{INVALID} Unknown ProjectionType: null"),
    );
    assert_mentions(
        &db,
        request(json!({"ProjectionType": "FOO"})),
        &["'FOO'", "projectionType"],
    );
    assert_message(
        &db,
        request(json!({"ProjectionType": "ALL", "NonKeyAttributes": ["x"]})),
        &format!("{INVALID} ProjectionType is ALL, but NonKeyAttributes is specified"),
    );
    assert_message(
        &db,
        request(json!({"ProjectionType": "KEYS_ONLY", "NonKeyAttributes": ["x"]})),
        &format!("{INVALID} ProjectionType is KEYS_ONLY, but NonKeyAttributes is specified"),
    );
    assert_mentions(
        &db,
        request(json!({"ProjectionType": "INCLUDE"})),
        &["NonKeyAttributes"],
    );
    assert_mentions(
        &db,
        request(json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": ["x", "x"]})),
        &["Duplicate", "NonKeyAttributes", "x"],
    );
    let (code, _) = rejected(
        &db,
        request(json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": [1]})),
    );
    assert_eq!(code, ErrorCode::SerializationException);
    let names: Vec<String> = (0..21).map(|i| format!("n{i}")).collect();
    assert_mentions(
        &db,
        request(json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": names})),
        &["nonKeyAttributes", "20"],
    );

    // 20 + 20 + 20 + 20 + 20 + 1 = 101 projected names across the table's indexes.
    let include = |count: usize, prefix: &str| json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": (0..count).map(|i| format!("{prefix}{i}")).collect::<Vec<_>>()});
    let indexes: Vec<Value> = (0..6)
        .map(|i| {
            gsi(
                &format!("gsi{i}"),
                json!([key("a", "HASH")]),
                include(if i == 5 { 1 } else { 20 }, &format!("p{i}_")),
            )
        })
        .collect();
    let over = with(
        with(
            base_request(),
            "AttributeDefinitions",
            json!([def("pk", "S"), def("sk", "S"), def("a", "S")]),
        ),
        "GlobalSecondaryIndexes",
        json!(indexes),
    );
    assert_mentions(&db, over, &["NonKeyAttributes", "100"]);
}

#[test]
fn billing_rules() {
    let db = open();
    let throughput = json!({"ReadCapacityUnits": 5, "WriteCapacityUnits": 5});
    assert_message(
        &db,
        with(base_request(), "ProvisionedThroughput", throughput.clone()),
        &format!("{INVALID} Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST"),
    );
    assert_message(
        &db,
        with(base_request(), "BillingMode", json!("PROVISIONED")),
        &format!("{INVALID} ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED"),
    );
    let mut no_mode = base_request();
    no_mode.as_object_mut().unwrap().remove("BillingMode");
    assert_mentions(
        &db,
        no_mode.clone(),
        &["must both be specified when BillingMode is PROVISIONED"],
    );
    assert_message(
        &db,
        with(no_mode.clone(), "ProvisionedThroughput", json!({"ReadCapacityUnits": 0, "WriteCapacityUnits": 1})),
        "1 validation error detected: Value '0' at 'provisionedThroughput.readCapacityUnits' failed to satisfy constraint: Member must have value greater than or equal to 1",
    );
    // A provisioned table's GSIs need their own throughput.
    let provisioned = with(
        with(
            with(no_mode, "ProvisionedThroughput", throughput.clone()),
            "AttributeDefinitions",
            all_defs(),
        ),
        "GlobalSecondaryIndexes",
        json!([gsi(
            "gix",
            json!([key("a", "HASH"), key("b", "RANGE")]),
            json!({"ProjectionType": "ALL"})
        )]),
    );
    assert_mentions(&db, provisioned.clone(), &["ProvisionedThroughput", "gix"]);
    let mut fixed = provisioned;
    fixed["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] =
        json!({"ReadCapacityUnits": 2, "WriteCapacityUnits": 3});
    let created = db.execute("CreateTable", fixed).unwrap();
    let description = &created["TableDescription"];
    assert_eq!(
        description["ProvisionedThroughput"]["ReadCapacityUnits"],
        json!(5)
    );
    assert_eq!(
        description["BillingModeSummary"]["BillingMode"],
        json!("PROVISIONED")
    );
    let index = &description["GlobalSecondaryIndexes"][0];
    assert_eq!(
        index["ProvisionedThroughput"],
        json!({"ReadCapacityUnits": 2, "WriteCapacityUnits": 3, "NumberOfDecreasesToday": 0})
    );
}

#[test]
fn rejected_requests_create_nothing_and_allowed_shapes_succeed() {
    let db = open();
    let trees_before = db.lsm().version().trees.len();
    let bad = with(base_request(), "KeySchema", json!([key("pk", "RANGE")]));
    assert!(db.execute("CreateTable", bad).is_err());
    assert_eq!(db.lsm().version().trees.len(), trees_before);
    assert_eq!(
        db.execute("ListTables", json!({})).unwrap(),
        json!({"TableNames": []})
    );

    // Allowed (SPEC §2.2): an LSI identical to the table key, two identical indexes under
    // different names, one attribute as LSI sort key and GSI hash key, key attributes listed
    // in NonKeyAttributes.
    let all = json!({"ProjectionType": "ALL"});
    let request = json!({
        "TableName": "Allowed",
        "AttributeDefinitions": [def("pk", "S"), def("sk", "S"), def("a", "N")],
        "KeySchema": [key("pk", "HASH"), key("sk", "RANGE")],
        "BillingMode": "PAY_PER_REQUEST",
        "LocalSecondaryIndexes": [
            lsi("same_as_table", "sk", all.clone()),
            lsi("by_a", "a", json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a", "pk", "x"]})),
            lsi("by_a_again", "a", json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a", "pk", "x"]})),
        ],
        "GlobalSecondaryIndexes": [gsi("g_a", json!([key("a", "HASH")]), all.clone())],
    });
    let created = db.execute("CreateTable", request.clone()).unwrap();
    assert_eq!(created["TableDescription"]["TableStatus"], json!("ACTIVE"));
    let table = db.table("Allowed").unwrap();
    let sections: Vec<u8> = table.local_indexes.iter().map(|l| l.section).collect();
    assert_eq!(
        sections,
        vec![1, 2, 3],
        "LSI sections follow definition order"
    );
    assert_eq!(
        db.lsm().version().trees.len(),
        trees_before + 3,
        "one tree for the table, one per GSI, and (with the first table) the statistics tree"
    );
    let names: Vec<String> = db
        .lsm()
        .version()
        .trees
        .values()
        .map(|t| t.name.clone())
        .collect();
    assert!(names.contains(&table.id));
    assert!(names.contains(&format!("{}/gsi/g_a", table.id)));

    let error = db.execute("CreateTable", request).unwrap_err();
    assert_eq!(error.code, ErrorCode::ResourceInUseException);
    assert_eq!(error.message, "Table already exists: Allowed");
}

#[test]
fn non_key_attributes_are_limited_across_the_table() {
    let db = open();
    let gsi = |n: usize| {
        let attributes: Vec<String> = (0..20).map(|i| format!("x{n}_{i}")).collect();
        json!({"IndexName": format!("Ix{n}"), "KeySchema": [key("g", "HASH")],
               "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": attributes}})
    };
    let request = |indexes: usize| {
        json!({"TableName": format!("Tbl{indexes}"),
               "AttributeDefinitions": [def("id", "S"), def("g", "S")],
               "KeySchema": [key("id", "HASH")],
               "GlobalSecondaryIndexes": (0..indexes).map(gsi).collect::<Vec<_>>(),
               "BillingMode": "PAY_PER_REQUEST"})
    };
    // 5 x 20 is the limit exactly; 6 x 20 is over it.
    db.execute("CreateTable", request(5)).unwrap();
    let error = db.execute("CreateTable", request(6)).unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationException);
    assert_eq!(
        error.message,
        "One or more parameter values were invalid: The number of NonKeyAttributes across all secondary indexes of the table (120) exceeds the limit of 100"
    );
}

#[test]
fn members_shoal_does_not_implement_yet_are_refused_by_name_and_defaults_are_accepted() {
    let db = open();
    let refused = [
        (
            "SSESpecification",
            json!({"Enabled": true, "SSEType": "KMS"}),
        ),
        ("WarmThroughput", json!({"ReadUnitsPerSecond": 12000})),
    ];
    for (member, value) in refused {
        assert_message(
            &db,
            with(base_request(), member, value),
            &format!("Shoal does not implement {member} on CreateTable yet"),
        );
    }
    assert_eq!(
        db.execute("ListTables", json!({})).unwrap(),
        json!({"TableNames": []}),
        "a refused request creates nothing"
    );

    // Values that ask for what Shoal does anyway are accepted.
    let mut request = base_request();
    request["StreamSpecification"] = json!({"StreamEnabled": false});
    request["Tags"] = json!([]);
    request["DeletionProtectionEnabled"] = json!(false);
    request["SSESpecification"] = json!({"Enabled": false});
    request["TableClass"] = json!("STANDARD");
    db.execute("CreateTable", request).unwrap();
}
