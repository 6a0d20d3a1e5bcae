//! Fuzzes PartiQL end to end: arbitrary statement text (with a few parameters) through
//! ExecuteStatement on an in-memory database with an indexed table. Nothing may panic; a
//! statement the parser refuses is a ValidationException; nothing is an internal error.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use shoal_expr::partiql::parse_statement;
use shoal_model::ErrorCode;
use shoal_tables::{Database, Options};

fn database() -> &'static Database {
    static DATABASE: OnceLock<Database> = OnceLock::new();
    DATABASE.get_or_init(|| {
        let db = Database::open_in_memory(Options::default()).expect("in-memory database");
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
                    "Projection": {"ProjectionType": "ALL"}
                }],
                "BillingMode": "PAY_PER_REQUEST"
            }),
        )
        .expect("table");
        db
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&parameter_count, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    if let Err(error) = parse_statement(&text) {
        assert_eq!(error.code, ErrorCode::ValidationException, "{text}: {error:?}");
    }
    let parameters: Vec<_> = (0..parameter_count % 4)
        .map(|i| match i {
            0 => json!({"S": "Ada"}),
            1 => json!({"N": "1990"}),
            2 => json!({"SS": ["a", "b"]}),
            _ => json!({"M": {"k": {"BOOL": true}}}),
        })
        .collect();
    let mut body = json!({"Statement": text, "ReturnConsumedCapacity": "INDEXES"});
    if !parameters.is_empty() {
        body["Parameters"] = json!(parameters);
    }
    if let Err(error) = database().execute("ExecuteStatement", body) {
        assert_ne!(error.code, ErrorCode::InternalServerError, "{text}: {error:?}");
    }
});
