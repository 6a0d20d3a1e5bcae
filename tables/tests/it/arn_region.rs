//! The ARNs an answer holds name the region the request was sent to (DynamoDB's behaviour),
//! as `Database::execute_json_text_in_region` is told it; without one they name `ddblocal`.

use serde_json::{json, Value};
use shoal_tables::{Database, Durability, Options, StorageOptions};

fn open() -> Database {
    Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .unwrap()
}

fn call(db: &Database, region: Option<&str>, operation: &str, request: &Value) -> Value {
    let answer = db
        .execute_json_text_in_region(region, operation, request.to_string().as_bytes())
        .unwrap_or_else(|error| panic!("{operation}: {error}"));
    serde_json::from_slice(&answer).unwrap()
}

#[test]
fn arns_name_the_requests_region() {
    let db = open();
    let create = json!({
        "TableName": "Orders",
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"}
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "GlobalSecondaryIndexes": [{
            "IndexName": "ByG",
            "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"}
        }],
        "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "KEYS_ONLY"},
        "BillingMode": "PAY_PER_REQUEST"
    });
    let created = call(&db, Some("eu-west-1"), "CreateTable", &create);
    let table = &created["TableDescription"];
    let prefix = "arn:aws:dynamodb:eu-west-1:000000000000:table/Orders";
    assert_eq!(table["TableArn"], prefix);
    assert_eq!(
        table["GlobalSecondaryIndexes"][0]["IndexArn"],
        format!("{prefix}/index/ByG")
    );
    let stream_arn = table["LatestStreamArn"].as_str().unwrap();
    assert!(
        stream_arn.starts_with(&format!("{prefix}/stream/")),
        "{stream_arn}"
    );

    // The same table, asked from another region, answers with that region.
    let describe = json!({"TableName": "Orders"});
    let described = call(&db, Some("ap-south-1"), "DescribeTable", &describe);
    assert_eq!(
        described["Table"]["TableArn"],
        "arn:aws:dynamodb:ap-south-1:000000000000:table/Orders"
    );
    let streams = call(&db, Some("ap-south-1"), "ListStreams", &json!({}));
    assert!(streams["Streams"][0]["StreamArn"]
        .as_str()
        .unwrap()
        .starts_with("arn:aws:dynamodb:ap-south-1:"));
    // An ARN from one region is accepted in a request sent to another.
    let tag = json!({"ResourceArn": stream_arn, "Tags": [{"Key": "k", "Value": "v"}]});
    call(&db, Some("us-east-2"), "TagResource", &tag);
    let listed = call(
        &db,
        None,
        "ListTagsOfResource",
        &json!({"ResourceArn": prefix}),
    );
    assert_eq!(listed["Tags"], json!([{"Key": "k", "Value": "v"}]));

    // No region: DynamoDB Local's.
    let described = call(&db, None, "DescribeTable", &describe);
    assert_eq!(
        described["Table"]["TableArn"],
        "arn:aws:dynamodb:ddblocal:000000000000:table/Orders"
    );
}
