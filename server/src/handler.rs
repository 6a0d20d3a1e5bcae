//! The seam between the transport and whatever executes operations (the engine adapter).

use model::ApiError;
use serde_json::{Map, Value};

/// What the transport calls for each operation; the engine adapter implements it.
///
/// The transport has already checked the HTTP method, content type, JSON syntax, target and
/// authentication when it calls the handler. The handler does everything after that, in
/// DynamoDB's order: shape and type errors (`SerializationException`), member constraints
/// (`ValidationException`), semantic checks, then execution.
///
/// Calls run on tokio's blocking pool (`spawn_blocking`), so a handler may block on fsync or
/// locks. A panic in a handler is caught and answered as `InternalServerError`.
pub trait DynamoHandler: Send + Sync + 'static {
    /// Runs `operation` (the `X-Amz-Target` suffix, e.g. `"PutItem"`, always one of
    /// [`DynamoHandler::operations`]) on `body`, the request's JSON object.
    ///
    /// The returned value should be a JSON object; `Value::Null` is answered as `{}`.
    fn handle(&self, operation: &str, body: Value) -> Result<Value, ApiError>;

    /// The operation names this handler knows; any other target is answered with
    /// `UnknownOperationException` without calling the handler.
    fn operations(&self) -> &[&'static str];

    /// Like [`DynamoHandler::handle`], but the error may carry extra top-level body fields.
    /// This is what the transport actually calls.
    ///
    /// Override this (and implement `handle` as
    /// `self.handle_detailed(operation, body).map_err(|error| error.error)`) for the two errors
    /// that carry more than a message: `TransactionCanceledException` with
    /// `CancellationReasons`, and `ConditionalCheckFailedException` with `Item` when the
    /// request asked for `ReturnValuesOnConditionCheckFailure`.
    fn handle_detailed(&self, operation: &str, body: Value) -> Result<Value, HandlerError> {
        self.handle(operation, body).map_err(HandlerError::from)
    }

    /// Appends engine statistics to the `/metrics` page, in Prometheus text format (one
    /// `# TYPE` line per metric family, names prefixed `shoal_`). The default adds nothing.
    fn render_metrics(&self, _out: &mut String) {}
}

/// An [`ApiError`] plus extra fields for the error body.
///
/// The body is `{"__type": ..., "message": ..., <extra_fields>...}`; an extra field named
/// `__type` or `message` is ignored so it cannot hide the error's identity.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerError {
    pub error: ApiError,
    pub extra_fields: Map<String, Value>,
}

impl HandlerError {
    /// `error` with one extra body field, e.g. `("CancellationReasons", json!([...]))`.
    pub fn with_field(error: ApiError, name: impl Into<String>, value: Value) -> HandlerError {
        let mut extra_fields = Map::new();
        extra_fields.insert(name.into(), value);
        HandlerError {
            error,
            extra_fields,
        }
    }
}

impl From<ApiError> for HandlerError {
    fn from(error: ApiError) -> HandlerError {
        HandlerError {
            error,
            extra_fields: Map::new(),
        }
    }
}
