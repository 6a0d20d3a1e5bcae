//! DynamoDB's data model: attribute values, numbers, item sizes, order-preserving key
//! encodings, and the API error type every layer returns.

pub mod calendar;
pub mod error;
pub mod json;
pub mod json_text;
pub mod keycodec;
pub mod number;
pub mod size;
pub mod value;

pub use error::{ApiError, Charged, ErrorCode};
pub use json::{item_from_json, item_to_json};
pub use keycodec::{decode_key_value, encode_key_value, KeyCodecError};
pub use number::Number;
pub use size::{
    attributes_size_bytes, check_attribute_name, check_item_limits, item_size_bytes,
    ATTRIBUTE_NAME_BYTES_MAX, ITEM_SIZE_BYTES_MAX, NESTING_LEVELS_MAX,
};
pub use value::{check_key_value_not_empty, AttributeValue, Item, ScalarType};
