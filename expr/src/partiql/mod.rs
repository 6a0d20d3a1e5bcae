//! PartiQL, DynamoDB's SQL-compatible statements (SPEC-2 §3): the lexer, the parser and the
//! statement tree. Statements are not executed here: the tables layer compiles each onto the
//! operations it already has (a SELECT onto GetItem, Query or Scan, INSERT onto a conditional
//! PutItem, UPDATE and DELETE onto UpdateItem and DeleteItem), written in this crate's
//! expression language, so every rule of those operations holds for PartiQL too.
//!
//! ```
//! use shoal_expr::partiql::{parse_statement, Statement};
//!
//! let statement = parse_statement(r#"SELECT * FROM "Music" WHERE Artist = ?"#)?;
//! let Statement::Select(select) = statement else { panic!() };
//! assert_eq!(select.target.table, "Music");
//! # Ok::<(), shoal_model::ApiError>(())
//! ```

mod ast;
mod lexer;
mod parser;
mod shape;
#[cfg(test)]
mod tests;

pub use ast::{
    Action, Delete, Insert, Node, OrderBy, Position, Returning, Select, Statement, Target,
    TypeTest, UpdateStatement,
};
pub use parser::{parse_statement, parse_with_parameter_count, NESTING_DEPTH_MAX};
pub use shape::{statement_shape, Slot, StatementShape};

use shoal_model::ApiError;

/// DynamoDB's prefix for a statement it cannot parse.
pub const NOT_WELL_FORMED: &str = "Statement wasn't well formed, can't be processed: ";

/// A ValidationException "not well formed" with `detail` after the prefix.
pub fn not_well_formed(detail: &str) -> ApiError {
    ApiError::validation(format!("{NOT_WELL_FORMED}{detail}"))
}
