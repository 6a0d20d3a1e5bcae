//! End-to-end: a GSI with a multi-attribute key (SPEC-3 §1) through the official AWS SDK
//! for Rust against `shoal serve` — created, described, written sparsely, queried with a
//! RANGE prefix in both directions page by page, refused with DynamoDB's texts, and
//! still there after a restart.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;

use crate::sdk_server;
use sdk_server::{key_element, Server};

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn typed(name: &str, ty: ScalarAttributeType) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ty)
        .build()
        .expect("an attribute definition")
}

/// Orders(id) with GSI ByCustomerDay: HASH customer (S), region (S); RANGE day (N), seq (N).
async fn create_orders(client: &Client) {
    client
        .create_table()
        .table_name("Orders")
        .attribute_definitions(typed("id", ScalarAttributeType::S))
        .attribute_definitions(typed("customer", ScalarAttributeType::S))
        .attribute_definitions(typed("region", ScalarAttributeType::S))
        .attribute_definitions(typed("day", ScalarAttributeType::N))
        .attribute_definitions(typed("seq", ScalarAttributeType::N))
        .key_schema(key_element("id", KeyType::Hash))
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name("ByCustomerDay")
                .key_schema(key_element("customer", KeyType::Hash))
                .key_schema(key_element("region", KeyType::Hash))
                .key_schema(key_element("day", KeyType::Range))
                .key_schema(key_element("seq", KeyType::Range))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .expect("CreateTable with a multi-attribute GSI key");
}

/// Every `id` a Query of ByCustomerDay returns for customer c1 in eu, day ≥ `from`, pages
/// of `limit`.
async fn ids(client: &Client, from: i64, limit: i32, forward: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .query()
            .table_name("Orders")
            .index_name("ByCustomerDay")
            .key_condition_expression("#d >= :from AND customer = :c AND #r = :r")
            .expression_attribute_names("#d", "day")
            .expression_attribute_names("#r", "region")
            .expression_attribute_values(":c", s("c1"))
            .expression_attribute_values(":r", s("eu"))
            .expression_attribute_values(":from", n(from))
            .limit(limit)
            .scan_index_forward(forward)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .expect("Query");
        for item in page.items() {
            out.push(item["id"].as_s().unwrap().clone());
        }
        match page.last_evaluated_key() {
            Some(key) => {
                let mut names: Vec<&String> = key.keys().collect();
                names.sort();
                assert_eq!(names, ["customer", "day", "id", "region", "seq"]);
                start = Some(key.clone());
            }
            None => return out,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_creates_writes_and_queries_a_multi_attribute_gsi() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();
    create_orders(&client).await;

    let described = client
        .describe_table()
        .table_name("Orders")
        .send()
        .await
        .unwrap();
    let index = &described.table().unwrap().global_secondary_indexes()[0];
    let schema: Vec<(String, KeyType)> = index
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name().to_string(), k.key_type().clone()))
        .collect();
    assert_eq!(
        schema,
        [
            ("customer".to_string(), KeyType::Hash),
            ("region".to_string(), KeyType::Hash),
            ("day".to_string(), KeyType::Range),
            ("seq".to_string(), KeyType::Range)
        ]
    );

    // (id, day, seq) in c1/eu, written out of order; one item lacks `seq`, one is in us.
    for (id, day, seq) in [("o3", 2, 1), ("o1", 1, 2), ("o4", 2, 10), ("o2", 1, 5)] {
        client
            .put_item()
            .table_name("Orders")
            .item("id", s(id))
            .item("customer", s("c1"))
            .item("region", s("eu"))
            .item("day", n(day))
            .item("seq", n(seq))
            .send()
            .await
            .unwrap();
    }
    client
        .put_item()
        .table_name("Orders")
        .item("id", s("sparse"))
        .item("customer", s("c1"))
        .item("region", s("eu"))
        .item("day", n(1))
        .send()
        .await
        .unwrap();
    client
        .put_item()
        .table_name("Orders")
        .item("id", s("us"))
        .item("customer", s("c1"))
        .item("region", s("us"))
        .item("day", n(1))
        .item("seq", n(1))
        .send()
        .await
        .unwrap();

    assert_eq!(ids(&client, 0, 1, true).await, ["o1", "o2", "o3", "o4"]);
    assert_eq!(ids(&client, 2, 3, true).await, ["o3", "o4"]);
    assert_eq!(ids(&client, 0, 2, false).await, ["o4", "o3", "o2", "o1"]);

    let refused = client
        .query()
        .table_name("Orders")
        .index_name("ByCustomerDay")
        .key_condition_expression("customer = :c AND seq = :s")
        .expression_attribute_values(":c", s("c1"))
        .expression_attribute_values(":s", n(1))
        .send()
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some("ValidationException"));
    assert_eq!(
        refused.message(),
        Some("HASH key attributes region must have equality conditions specified in the query")
    );
    let wrong_type = client
        .put_item()
        .table_name("Orders")
        .item("id", s("bad"))
        .item("customer", s("c1"))
        .item("region", s("eu"))
        .item("day", s("Monday"))
        .item("seq", n(1))
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        wrong_type.message(),
        Some("One or more parameter values were invalid: Type mismatch for Index Key day Expected: N Actual: S IndexName: ByCustomerDay")
    );
    let partiql = client
        .execute_statement()
        .statement(r#"SELECT * FROM "Orders"."ByCustomerDay" WHERE customer = 'c1'"#)
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        partiql.message(),
        Some("PartiQL statements cannot be executed on tables with multi-attribute HASH keys or multi-attribute RANGE keys.")
    );

    // The definition and the entries survive a restart.
    server.stop();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();
    assert_eq!(ids(&client, 0, 10, true).await, ["o1", "o2", "o3", "o4"]);
    server.stop();
}
