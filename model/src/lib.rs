//! DynamoDB's data model: attribute values, numbers, item sizes, order-preserving key
//! encodings, and the API error type every layer returns.

pub mod error;
pub mod number;
pub mod value;

pub use error::{ApiError, ErrorCode};
pub use number::Number;
pub use value::{AttributeValue, Item};
