//! End-to-end: PartiQL through the official AWS SDK for Rust — ExecuteStatement (every
//! statement kind, parameters, paging with NextToken, ConsumedCapacity), BatchExecuteStatement
//! with a failing slot, and ExecuteTransaction of writes (a duplicate INSERT cancelling all)
//! and of reads.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::execute_statement::ExecuteStatementError;
use aws_sdk_dynamodb::operation::execute_transaction::ExecuteTransactionError;
use aws_sdk_dynamodb::types::{
    AttributeValue, BatchStatementErrorCodeEnum, BatchStatementRequest, BillingMode, KeyType,
    ParameterizedStatement, ReturnConsumedCapacity,
};

use crate::sdk_server;
use sdk_server::{definition, key_element, Server};

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partiql_through_the_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = server.client();
    client
        .create_table()
        .table_name("Music")
        .attribute_definitions(definition("Artist"))
        .attribute_definitions(definition("SongTitle"))
        .key_schema(key_element("Artist", KeyType::Hash))
        .key_schema(key_element("SongTitle", KeyType::Range))
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();

    for song in ["a", "b", "c"] {
        let inserted = client
            .execute_statement()
            .statement("INSERT INTO Music VALUE {'Artist': 'Ada', 'SongTitle': ?, 'Plays': 1}")
            .parameters(s(song))
            .send()
            .await
            .unwrap();
        assert!(inserted.items().is_empty());
    }
    let duplicate = client
        .execute_statement()
        .statement("INSERT INTO Music VALUE {'Artist': 'Ada', 'SongTitle': 'a'}")
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(
        matches!(duplicate, ExecuteStatementError::DuplicateItemException(_)),
        "{duplicate:?}"
    );
    assert_eq!(
        duplicate.message(),
        Some("Duplicate primary key exists in table")
    );

    // SELECT pages through NextToken; the SDK's paginator follows it.
    let first = client
        .execute_statement()
        .statement("SELECT * FROM \"Music\" WHERE Artist = 'Ada'")
        .limit(2)
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await
        .unwrap();
    assert_eq!(first.items().len(), 2);
    assert_eq!(
        first.consumed_capacity().unwrap().table_name(),
        Some("Music")
    );
    let rest = client
        .execute_statement()
        .statement("SELECT * FROM \"Music\" WHERE Artist = 'Ada'")
        .next_token(first.next_token().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(rest.items().len(), 1);
    assert_eq!(rest.items()[0]["SongTitle"], s("c"));

    let updated = client
        .execute_statement()
        .statement("UPDATE Music SET Plays = Plays + 1 WHERE Artist = ? AND SongTitle = ? RETURNING ALL NEW *")
        .parameters(s("Ada"))
        .parameters(s("b"))
        .send()
        .await
        .unwrap();
    assert_eq!(updated.items()[0]["Plays"], AttributeValue::N("2".into()));
    let missing = client
        .execute_statement()
        .statement("UPDATE Music SET Plays = 1 WHERE Artist = 'Zed' AND SongTitle = 'z'")
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert!(matches!(
        missing,
        ExecuteStatementError::ConditionalCheckFailedException(_)
    ));
    let malformed = client
        .execute_statement()
        .statement("SELECT * FROM Music WHERE")
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert_eq!(malformed.code(), Some("ValidationException"));
    assert_eq!(
        malformed.message(),
        Some("Statement wasn't well formed, can't be processed: Unexpected term")
    );

    let batch = client
        .batch_execute_statement()
        .statements(
            BatchStatementRequest::builder()
                .statement("SELECT Plays FROM Music WHERE Artist = 'Ada' AND SongTitle = 'b'")
                .build()
                .unwrap(),
        )
        .statements(
            BatchStatementRequest::builder()
                .statement("SELECT * FROM Music WHERE Artist = 'Ada'")
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let responses = batch.responses();
    assert_eq!(
        responses[0].item().unwrap()["Plays"],
        AttributeValue::N("2".into())
    );
    assert_eq!(
        responses[1].error().unwrap().code(),
        Some(&BatchStatementErrorCodeEnum::ValidationError)
    );

    let statement = |text: &str| {
        ParameterizedStatement::builder()
            .statement(text)
            .build()
            .unwrap()
    };
    let cancelled = client
        .execute_transaction()
        .transact_statements(statement(
            "DELETE FROM Music WHERE Artist = 'Ada' AND SongTitle = 'c'",
        ))
        .transact_statements(statement(
            "INSERT INTO Music VALUE {'Artist': 'Ada', 'SongTitle': 'a'}",
        ))
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    let ExecuteTransactionError::TransactionCanceledException(cancelled) = cancelled else {
        panic!("{cancelled:?}")
    };
    let codes: Vec<_> = cancelled
        .cancellation_reasons()
        .iter()
        .map(|r| r.code().unwrap_or_default().to_string())
        .collect();
    assert_eq!(codes, ["None", "DuplicateItem"]);
    let read = client
        .execute_transaction()
        .transact_statements(statement(
            "SELECT SongTitle FROM Music WHERE Artist = 'Ada' AND SongTitle = 'c'",
        ))
        .transact_statements(statement(
            "SELECT * FROM Music WHERE Artist = 'Ada' AND SongTitle = 'nope'",
        ))
        .send()
        .await
        .unwrap();
    let responses = read.responses();
    assert_eq!(responses[0].item().unwrap()["SongTitle"], s("c"));
    assert!(responses[1].item().is_none());
    server.stop();
}
