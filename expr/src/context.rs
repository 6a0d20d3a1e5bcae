//! The per-request parsing context: the `ExpressionAttributeNames` / `ExpressionAttributeValues`
//! maps every expression of one request shares, and which of their entries were used.
//!
//! DynamoDB rejects a request whose maps hold an entry that none of its expressions uses, so
//! one `Context` parses all of a request's expressions (`parse.rs`) and `finish` checks what
//! was left over.

use std::collections::{BTreeMap, BTreeSet};

use shoal_model::{ApiError, AttributeValue};

use crate::ast::attribute_name_problem;

/// Which parameter a condition came from (only the error prefix differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionKind {
    /// `ConditionExpression`.
    Condition,
    /// `FilterExpression`.
    Filter,
}

/// Every expression parameter, for error prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExpressionKind {
    Condition,
    Filter,
    KeyCondition,
    Projection,
    Update,
}

impl ExpressionKind {
    pub(crate) fn parameter_name(self) -> &'static str {
        match self {
            ExpressionKind::Condition => "ConditionExpression",
            ExpressionKind::Filter => "FilterExpression",
            ExpressionKind::KeyCondition => "KeyConditionExpression",
            ExpressionKind::Projection => "ProjectionExpression",
            ExpressionKind::Update => "UpdateExpression",
        }
    }

    /// `Invalid <Kind>Expression: <message>`, as DynamoDB words expression errors.
    pub(crate) fn error(self, message: &str) -> ApiError {
        ApiError::validation(format!("Invalid {}: {message}", self.parameter_name()))
    }
}

impl From<ConditionKind> for ExpressionKind {
    fn from(kind: ConditionKind) -> ExpressionKind {
        match kind {
            ConditionKind::Condition => ExpressionKind::Condition,
            ConditionKind::Filter => ExpressionKind::Filter,
        }
    }
}

/// The placeholder maps of one request and which entries its expressions used.
#[derive(Debug)]
pub struct Context<'a> {
    names: Option<&'a BTreeMap<String, String>>,
    values: Option<&'a BTreeMap<String, AttributeValue>>,
    /// Keys of the maps above that an expression used; they borrow the maps, so marking an
    /// entry used never allocates a string.
    used_names: BTreeSet<&'a str>,
    used_values: BTreeSet<&'a str>,
}

impl<'a> Context<'a> {
    /// A context over the request's maps (`None` when the parameter is absent). A present but
    /// empty map is an error, as in DynamoDB.
    pub fn new(
        names: Option<&'a BTreeMap<String, String>>,
        values: Option<&'a BTreeMap<String, AttributeValue>>,
    ) -> Result<Context<'a>, ApiError> {
        if names.is_some_and(BTreeMap::is_empty) {
            return Err(ApiError::validation(
                "ExpressionAttributeNames must not be empty",
            ));
        }
        if values.is_some_and(BTreeMap::is_empty) {
            return Err(ApiError::validation(
                "ExpressionAttributeValues must not be empty",
            ));
        }
        for (key, name) in names.into_iter().flatten() {
            if let Some(problem) = attribute_name_problem(name) {
                return Err(ApiError::validation(format!(
                    "ExpressionAttributeNames contains invalid value: {problem} for key {key}"
                )));
            }
        }
        Ok(Context {
            names,
            values,
            used_names: BTreeSet::new(),
            used_values: BTreeSet::new(),
        })
    }

    /// Call after parsing every expression of the request: rejects map entries no expression
    /// used.
    pub fn finish(&self) -> Result<(), ApiError> {
        if let Some(names) = self.names {
            let unused = unused_keys(names.keys(), &self.used_names);
            if !unused.is_empty() {
                return Err(ApiError::validation(format!(
                    "Value provided in ExpressionAttributeNames unused in expressions: keys: {{{unused}}}"
                )));
            }
        }
        if let Some(values) = self.values {
            let unused = unused_keys(values.keys(), &self.used_values);
            if !unused.is_empty() {
                return Err(ApiError::validation(format!(
                    "Value provided in ExpressionAttributeValues unused in expressions: keys: {{{unused}}}"
                )));
            }
        }
        Ok(())
    }

    /// The attribute name behind `#placeholder`, marking it used.
    pub(crate) fn resolve_name(&mut self, placeholder: &str) -> Option<&'a str> {
        let (key, name) = self.names?.get_key_value(placeholder)?;
        self.used_names.insert(key);
        Some(name)
    }

    /// The value behind `:placeholder`, marking it used.
    pub(crate) fn resolve_value(&mut self, placeholder: &str) -> Option<&'a AttributeValue> {
        let (key, value) = self.values?.get_key_value(placeholder)?;
        self.used_values.insert(key);
        Some(value)
    }
}

fn unused_keys<'k>(keys: impl Iterator<Item = &'k String>, used: &BTreeSet<&str>) -> String {
    keys.filter(|key| !used.contains(key.as_str()))
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rejects a request that mixes legacy and expression parameters. Pass the names of the
/// parameters present of each family, e.g. `(&["Expected"], &["ConditionExpression"])`.
pub fn check_no_mixing(
    legacy_parameters: &[&str],
    expression_parameters: &[&str],
) -> Result<(), ApiError> {
    if legacy_parameters.is_empty() || expression_parameters.is_empty() {
        return Ok(());
    }
    Err(ApiError::validation(format!(
        "Can not use both expression and non-expression parameters in the same request: \
         Non-expression parameters: {{{}}} Expression parameters: {{{}}}",
        legacy_parameters.join(", "),
        expression_parameters.join(", ")
    )))
}
