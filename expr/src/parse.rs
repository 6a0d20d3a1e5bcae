//! Parsing each expression parameter of a request with its [`Context`]: the entry points
//! the crate offers, one per parameter, each running the one parser with the parameter's
//! kind (for its error prefix and rules) and the request's placeholder maps.

use shoal_model::ApiError;

use crate::ast::Condition;
use crate::context::{ConditionKind, Context, ExpressionKind};
use crate::key_condition::{KeyCondition, KeySchemaView};
use crate::parser::Parser;
use crate::projection::Projection;
use crate::update::Update;

impl Context<'_> {
    /// Parses and validates a ConditionExpression or FilterExpression.
    pub fn parse_condition(
        &mut self,
        text: &str,
        kind: ConditionKind,
    ) -> Result<Condition, ApiError> {
        let kind = ExpressionKind::from(kind);
        Parser::new(text, kind, self)?
            .parse_condition_expression()
            .map_err(|message| kind.error(&message))
    }

    /// Parses and validates an UpdateExpression.
    pub fn parse_update(&mut self, text: &str) -> Result<Update, ApiError> {
        let kind = ExpressionKind::Update;
        Parser::new(text, kind, self)?
            .parse_update_expression()
            .map_err(|message| kind.error(&message))
    }

    /// Parses and validates a ProjectionExpression.
    pub fn parse_projection(&mut self, text: &str) -> Result<Projection, ApiError> {
        let kind = ExpressionKind::Projection;
        Parser::new(text, kind, self)?
            .parse_projection_expression()
            .map_err(|message| kind.error(&message))
    }

    /// Parses a KeyConditionExpression and checks it against the key schema being queried.
    pub fn parse_key_condition(
        &mut self,
        text: &str,
        schema: &KeySchemaView,
    ) -> Result<KeyCondition, ApiError> {
        let kind = ExpressionKind::KeyCondition;
        let condition = Parser::new(text, kind, self)?
            .parse_condition_expression()
            .map_err(|message| kind.error(&message))?;
        KeyCondition::from_condition(&condition, schema)
    }
}
