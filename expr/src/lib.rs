//! DynamoDB's expression language: one parser for ConditionExpression, FilterExpression,
//! KeyConditionExpression, ProjectionExpression and UpdateExpression, the validation DynamoDB
//! performs on them (with its exact messages), and their evaluation over items. Legacy
//! parameters (`Expected`, `QueryFilter`, `KeyConditions`, `AttributeUpdates`, …) translate
//! onto the same trees (see [`legacy`]).
//!
//! # Use
//!
//! One [`Context`] per request: it holds the request's `ExpressionAttributeNames` and
//! `ExpressionAttributeValues`, parses each expression of the request, and `finish` then
//! rejects map entries that no expression used.
//!
//! ```
//! use std::collections::BTreeMap;
//! use shoal_expr::{extract_paths, ConditionKind, Context};
//! use shoal_model::{AttributeValue, Item, Number};
//!
//! let names = BTreeMap::from([("#c".to_string(), "count".to_string())]);
//! let values = BTreeMap::from([(":one".to_string(), AttributeValue::N(Number::from_i64(1)))]);
//! let mut context = Context::new(Some(&names), Some(&values))?;
//! let update = context.parse_update("SET #c = if_not_exists(#c, :one) REMOVE stale_flag")?;
//! let condition = context.parse_condition("attribute_not_exists(pk)", ConditionKind::Condition)?;
//! context.finish()?; // every placeholder was used
//!
//! let old_item = Item::new();
//! assert!(condition.evaluate(&old_item));
//! let outcome = update.apply(&old_item)?;
//! let updated_new = extract_paths(&outcome.item, &outcome.touched_paths);
//! assert_eq!(updated_new.get("count"), Some(&AttributeValue::N(Number::from_i64(1))));
//! # Ok::<(), shoal_model::ApiError>(())
//! ```
//!
//! * [`Context::parse_condition`] → [`Condition`]: [`Condition::evaluate`],
//!   [`Condition::referenced_top_level_attributes`].
//! * [`Context::parse_update`] → [`Update`]: [`Update::apply`] → [`UpdateOutcome`],
//!   [`Update::touched_top_level_attributes`], [`Update::paths`].
//! * [`Context::parse_projection`] → [`Projection`]: [`Projection::apply`],
//!   [`Projection::top_level_attributes`].
//! * [`Context::parse_key_condition`] with a [`KeySchemaView`] → [`KeyCondition`]
//!   (partition-key value + optional [`SortKeyCondition`]).
//! * [`check_no_mixing`]: the error for legacy and expression parameters in one request.
//!
//! Every error is an [`shoal_model::ApiError`] (ValidationException) with DynamoDB's text, prefixed
//! `Invalid <Kind>Expression: ` where DynamoDB does so. Nothing here panics on any input.
//!
//! Every tree implements `Display`, printing an expression that parses back to the same tree
//! with the same placeholder maps.

mod ast;
mod condition_eval;
mod context;
mod document;
mod key_condition;
pub mod legacy;
mod lexer;
mod parse;
mod parser;
pub mod partiql;
mod projection;
mod reserved;
mod shape;
mod update;
mod validate;

#[cfg(test)]
mod test_support;

pub use ast::{
    Comparator, Condition, Operand, Path, PathElement, SetValue, UpdateAction, UpdateOperand,
    ValueRef, ATTRIBUTE_NAME_BYTES_MAX, PATH_DEPTH_MAX,
};
pub use condition_eval::compare_scalars;
pub use context::{check_no_mixing, ConditionKind, Context};
pub use document::{extract_paths, resolve};
pub use key_condition::{KeyAttribute, KeyCondition, KeySchemaView, SortKeyCondition};
pub use parser::{EXPRESSION_SIZE_BYTES_MAX, IN_OPERAND_COUNT_MAX, OPERATOR_COUNT_MAX};
pub use projection::Projection;
pub use shape::shape;
pub use shoal_model::ScalarType;
pub use update::{Update, UpdateOutcome, INCORRECT_DATA_TYPE};
