//! DynamoDB's JSON-over-HTTP protocol in front of anything that implements [`DynamoHandler`].
//!
//! The transport knows nothing about storage: it routes by `X-Amz-Target`, checks what DynamoDB
//! checks before an operation runs, calls the handler on tokio's blocking pool, and writes
//! DynamoDB's responses.
//!
//! # Pipeline (SPEC §7 order)
//!
//! 1. `GET /` → `200 healthy: dynamodb.<region>.amazonaws.com ` (dynalite's health answer);
//!    `GET /metrics` → Prometheus text; any other non-`POST`, or a `POST` whose content type is
//!    not `application/x-amz-json-1.0` / `application/json` → `404` with body
//!    `<UnknownOperationException/>` (what DynamoDB and dynalite send).
//! 2. Body over `body_bytes_max` (16 MiB by default, DynamoDB's cap) → `413` with
//!    `{"__type":"com.amazon.coral.validate#ValidationException","message":"Request size exceeds
//!    <n> bytes"}` and `Connection: close` (Alternator also answers 413; the exact AWS body is
//!    unverified). A too-large `Content-Length` is refused before any body byte is read.
//! 3. Unparsable JSON, a non-object body, or nesting deeper than 128 → `SerializationException`.
//! 4. Missing or unknown `X-Amz-Target` → `UnknownOperationException` (no message, as AWS).
//! 5. Authentication ([`AuthMode`]; see the `auth` module docs for the checks and messages).
//! 6. The handler: shape → `SerializationException`, constraints → `ValidationException`,
//!    semantics, execution. A handler panic → `500 InternalServerError`.
//!
//! # Responses
//!
//! Every response carries `x-amzn-RequestId` (a random UUID), `x-amz-crc32` (CRC32 of the exact
//! body bytes, unsigned decimal) and a content type (`application/x-amz-json-1.0` for the API).
//! Success bodies are the handler's JSON (`{}` at least, never empty). Errors are
//! `{"__type":"<namespace>#<Code>","message":"<text>"}` with AWS's namespace per code
//! ([`error_namespace`]), status 400, or 500 for `InternalServerError`; an error's `extra`
//! members add fields such as `CancellationReasons`.
//!
//! # Limits
//!
//! Request body: `body_bytes_max`. Request line and headers: `header_bytes_max` (64 KiB by
//! default; AWS's is 16 KiB), larger ones get hyper's `431`. Connections: `connections_max`, further ones are closed on accept. Slow clients:
//! `header_read_timeout`. Shutdown: `shutdown_grace`. Only HTTP/1.1 is served, which is what
//! the AWS SDKs use for DynamoDB.

mod amz_date;
pub mod auth;
pub mod config;
mod cors;
mod engine_handler;
pub mod error_body;
pub mod handler;
pub mod metrics;
pub mod request;
pub mod response;
mod serve;
pub mod sigv4;

pub use config::{
    load_key_file, parse_key_file, AuthMode, CorsOrigins, KeyFileError, ServerConfig,
};
pub use engine_handler::EngineHandler;
pub use error_body::{error_namespace, error_type};
pub use handler::DynamoHandler;
pub use serve::{bind, serve, ServerError};

/// Date helpers for signing requests (`X-Amz-Date` format).
pub mod dates {
    pub use crate::amz_date::{format_amz_date, parse_amz_date};
}
