//! The public API: DynamoDB's request and response shapes as Rust types (serde,
//! PascalCase), shared by embedded users, the HTTP server and the scenario tests.
//!
//! Conventions every operation follows:
//! - Requests derive `Deserialize`; [`decode`] turns a JSON body into one, mapping shape
//!   errors to `SerializationException` and value errors raised while decoding attribute
//!   values to their own exception (see `shoal_model::ApiError::from_serde_message`).
//! - Enum-valued members (`ReturnValues`, `Select`, …) are kept as `Option<String>` and
//!   checked with [`common::parse_enum`], which produces DynamoDB's
//!   `1 validation error detected: …` text; a serde enum would turn a bad value into a
//!   SerializationException instead.
//! - Responses derive `Serialize` and skip absent members, so `{}` is what an empty
//!   response serialises to.

pub mod autoscaling;
pub mod backups;
pub mod batch;
pub mod common;
pub mod constraint;
pub mod control;
pub mod export;
pub mod import;
pub mod insights;
pub mod items;
pub mod legacy_global_tables;
pub mod partiql;
pub mod policies;
pub mod query;
pub mod settings;
pub mod streams;
pub mod tags;
pub mod transact;
pub mod ttl;
pub mod update_table;

use serde::de::DeserializeOwned;
use serde::Serialize;
use shoal_model::ApiError;

/// Decodes a request body into its typed request.
pub fn decode<T: DeserializeOwned>(body: serde_json::Value) -> Result<T, ApiError> {
    if !body.is_object() {
        return Err(ApiError::serialization(
            "Start of structure or map found where not expected.",
        ));
    }
    serde_json::from_value(body).map_err(|e| ApiError::from_serde_message(&e.to_string()))
}

/// Encodes a response as its JSON body.
pub fn encode<T: Serialize>(response: &T) -> serde_json::Value {
    // Responses are plain data with string keys; serialisation cannot fail, and if it ever
    // did an empty object is still a well-formed answer.
    serde_json::to_value(response).unwrap_or_else(|_| serde_json::Value::Object(Default::default()))
}
