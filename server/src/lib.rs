//! DynamoDB's JSON-over-HTTP protocol in front of anything that implements [`DynamoHandler`].
//!
//! The transport knows nothing about storage: it routes by `X-Amz-Target`, checks what DynamoDB
//! checks before an operation runs, calls the handler on tokio's blocking pool, and writes
//! DynamoDB's responses.
//!
//! # Pipeline (SPEC §7 order)
//!
//! 0. A request line or headers over `header_bytes_max` (16 KiB each, DynamoDB's caps) → `400`
//!    ValidationException `Request line exceeds <n> bytes` / `Request headers exceed <n> bytes`.
//!    `OPTIONS` with `Origin` or `Access-Control-Request-Method` → the CORS preflight answer.
//!    With `admin` set, paths under `/shoal/` are the admin API (fault rules, crash); see the
//!    `admin` module.
//! 1. `GET /` → `200 healthy: <host> `, the host of the request's `Host` header
//!    (`dynamodb.<region>.amazonaws.com` when it has none), as DynamoDB's endpoints answer;
//!    `GET /metrics` → Prometheus text; anything else that is not a `POST /` whose content
//!    type is `application/x-amz-json-1.0` / `application/json` (or that has neither a content
//!    type nor a body, read as JSON 1.0) → `404` with body `<UnknownOperationException/>`
//!    (what DynamoDB and dynalite send).
//! 2. Body over `body_bytes_max` (16 MiB by default, DynamoDB's cap) → `413` with
//!    `{"__type":"com.amazon.coral.validate#ValidationException","message":"Request size exceeds
//!    <n> bytes"}` and `Connection: close` (Alternator also answers 413; the exact AWS body is
//!    unverified). A too-large `Content-Length` is answered before any body byte is read; the
//!    rest of the body is then read and dropped, so the client sees the answer, not a reset.
//!    A body not received within `body_read_timeout` → SerializationException, and the
//!    connection is closed.
//! 3. `Content-Encoding` `gzip` or `deflate` is undone (the result held to the same cap);
//!    another coding is left as sent; data that does not decode → `SerializationException`
//!    without a message, as a body that is not JSON. Unparsable JSON, a non-object body, or
//!    nesting deeper than 128 → `SerializationException`.
//! 4. Missing or unknown `X-Amz-Target` → `UnknownOperationException` (no message, as AWS).
//! 5. Authentication ([`AuthMode`]; see the `auth` module docs for the checks and messages),
//!    over the body as sent.
//! 6. Fault rules (`faults`): a matching rule may delay the request, drop its connection or
//!    answer an error instead of (or, `after_apply`, after) the handler.
//! 7. The handler: shape → `SerializationException`, constraints → `ValidationException`,
//!    semantics, execution. A handler panic → `500 InternalServerError`. At most
//!    `handler_threads` calls run on the blocking pool at once; the others wait for a turn
//!    without a thread.
//!
//! # Responses
//!
//! Every response carries `x-amzn-RequestId` (52 random characters of `[0-9A-Z]`, DynamoDB's
//! form), `x-amz-crc32` (CRC32 of the exact body bytes sent, unsigned decimal) and a content
//! type (for the API `application/json` to a request sent in it, else
//! `application/x-amz-json-1.0`). A body of 4 KiB or more is compressed for a client whose
//! `Accept-Encoding` admits gzip (or else deflate), and its CRC32 is then that of the
//! compressed bytes. Success bodies are the handler's JSON (`{}` at least, never empty).
//! Errors are `{"__type":"<namespace>#<Code>","message":"<text>"}` with AWS's namespace per
//! code ([`error_namespace`]; `Message` for a `SerializationException`), status 400, or 500
//! for `InternalServerError`; an error's `extra` members add fields such as
//! `CancellationReasons`.
//!
//! # Limits
//!
//! Request body: `body_bytes_max`. Request line and headers: `header_bytes_max` each; hyper
//! itself refuses a head over four times that with a bare `431`, and malformed framing (a
//! `Content-Length` that is not a number) with a bare `400`, before the service sees the
//! request. Connections: `connections_max` open in all (idle ones are closed, oldest first,
//! to make room for new ones; a new one waits for a place only when every open one is busy)
//! and `busy_connections_per_client_max` requests in flight per client address (one more
//! waits); at most `queued_connections_max` clients wait, each for `queue_wait_max`, and past
//! either a client is answered DynamoDB's `ThrottlingException` and its connection closed
//! (the `admission` module). Slow clients: `header_read_timeout` (which
//! also closes idle keep-alive connections) and `body_read_timeout`. Shutdown: `shutdown_grace`. Only HTTP/1.1 is served, which is what the
//! AWS SDKs use for DynamoDB.

mod admin;
mod admission;
mod amz_date;
pub mod auth;
mod body;
pub mod config;
mod console;
mod content_encoding;
mod cors;
mod engine_handler;
pub mod error_body;
pub mod faults;
pub mod handler;
pub mod metrics;
mod open_files;
pub mod record;
pub mod request;
pub mod response;
mod serve;
pub mod sigv4;

pub use config::{
    load_key_file, parse_key_file, AuthMode, CorsOrigins, KeyFileError, ServerConfig,
};
pub use engine_handler::EngineHandler;
pub use error_body::{error_namespace, error_type};
pub use handler::{DynamoHandler, StorageHealth};
pub use open_files::raise_open_files_limit;
pub use serve::{bind, serve, ServerError};

/// Date helpers for signing requests (`X-Amz-Date` format).
pub mod dates {
    pub use crate::amz_date::{format_amz_date, parse_amz_date};
}
