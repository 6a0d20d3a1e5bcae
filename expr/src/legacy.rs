//! Legacy (pre-expression) parameters translated onto the expression evaluator:
//! `Expected` + `ConditionalOperator`, `QueryFilter` / `ScanFilter`, `KeyConditions`,
//! `AttributesToGet` and `AttributeUpdates` (SPEC §3.8).
//!
//! These are plain structs; the engine maps its request JSON onto them. Use
//! `check_no_mixing` (in the crate root) to reject requests that also carry expressions.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use shoal_model::{ApiError, AttributeValue};

use crate::ast::{
    attribute_name_problem, Comparator, Condition, Operand, Path, SetValue, UpdateAction,
    UpdateOperand, ValueRef,
};
use crate::condition_eval::compare_scalars;
use crate::key_condition::{KeyCondition, KeySchemaView, SortKeyCondition};
use crate::projection::Projection;
use crate::update::Update;

/// Legacy `ComparisonOperator` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComparisonOperator {
    Eq,
    Ne,
    In,
    Le,
    Lt,
    Ge,
    Gt,
    Between,
    NotNull,
    Null,
    Contains,
    NotContains,
    BeginsWith,
}

const ALL_OPERATORS: [ComparisonOperator; 13] = [
    ComparisonOperator::Eq,
    ComparisonOperator::Ne,
    ComparisonOperator::In,
    ComparisonOperator::Le,
    ComparisonOperator::Lt,
    ComparisonOperator::Ge,
    ComparisonOperator::Gt,
    ComparisonOperator::Between,
    ComparisonOperator::NotNull,
    ComparisonOperator::Null,
    ComparisonOperator::Contains,
    ComparisonOperator::NotContains,
    ComparisonOperator::BeginsWith,
];

impl ComparisonOperator {
    /// The wire name, e.g. `"NOT_NULL"`.
    pub fn name(self) -> &'static str {
        match self {
            ComparisonOperator::Eq => "EQ",
            ComparisonOperator::Ne => "NE",
            ComparisonOperator::In => "IN",
            ComparisonOperator::Le => "LE",
            ComparisonOperator::Lt => "LT",
            ComparisonOperator::Ge => "GE",
            ComparisonOperator::Gt => "GT",
            ComparisonOperator::Between => "BETWEEN",
            ComparisonOperator::NotNull => "NOT_NULL",
            ComparisonOperator::Null => "NULL",
            ComparisonOperator::Contains => "CONTAINS",
            ComparisonOperator::NotContains => "NOT_CONTAINS",
            ComparisonOperator::BeginsWith => "BEGINS_WITH",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn from_name(name: &str) -> Option<ComparisonOperator> {
        ALL_OPERATORS
            .into_iter()
            .find(|operator| operator.name() == name)
    }
}

/// One attribute's condition in `QueryFilter`, `ScanFilter` or `KeyConditions`.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyCondition {
    pub comparison_operator: ComparisonOperator,
    pub attribute_value_list: Vec<AttributeValue>,
}

/// One attribute's entry in `Expected`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExpectedAttribute {
    pub value: Option<AttributeValue>,
    pub exists: Option<bool>,
    pub comparison_operator: Option<ComparisonOperator>,
    pub attribute_value_list: Option<Vec<AttributeValue>>,
}

/// How several legacy conditions combine (default AND).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConditionalOperator {
    #[default]
    And,
    Or,
}

/// Rejects a `ConditionalOperator` with no conditions to combine: `parameter` (`Expected`,
/// `QueryFilter` or `ScanFilter`) is absent or empty.
pub fn check_conditional_operator_use(
    operator_given: bool,
    parameter: &str,
    condition_count: Option<usize>,
) -> Result<(), ApiError> {
    if operator_given && condition_count.unwrap_or(0) == 0 {
        return Err(ApiError::validation(format!(
            "ConditionalOperator can only be used when {parameter} is specified and not empty"
        )));
    }
    Ok(())
}

/// `AttributeUpdates` actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttributeAction {
    #[default]
    Put,
    Delete,
    Add,
}

/// One attribute's entry in `AttributeUpdates`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeValueUpdate {
    pub action: AttributeAction,
    pub value: Option<AttributeValue>,
}

fn invalid_parameter(message: &str) -> ApiError {
    ApiError::validation(format!(
        "One or more parameter values were invalid: {message}"
    ))
}

/// Rejects an empty or over-long attribute name given as a legacy parameter's key.
fn check_name(name: &str) -> Result<(), ApiError> {
    match attribute_name_problem(name) {
        Some(problem) => Err(invalid_parameter(problem)),
        None => Ok(()),
    }
}

/// Builds value operands with synthetic placeholders so the tree still prints.
#[derive(Default)]
struct ValueNamer {
    next: usize,
}

impl ValueNamer {
    fn value(&mut self, value: &AttributeValue) -> ValueRef {
        self.next += 1;
        ValueRef {
            placeholder: format!(":legacy{}", self.next),
            value: value.clone(),
        }
    }

    fn operand(&mut self, value: &AttributeValue) -> Operand {
        Operand::Value(self.value(value))
    }
}

fn is_key_scalar(value: &AttributeValue) -> bool {
    matches!(
        value,
        AttributeValue::S(_) | AttributeValue::N(_) | AttributeValue::B(_)
    )
}

/// The number of values each operator takes and the types they may have.
fn check_arguments(
    operator: ComparisonOperator,
    values: &[AttributeValue],
) -> Result<(), ApiError> {
    let count_ok = match operator {
        ComparisonOperator::Null | ComparisonOperator::NotNull => values.is_empty(),
        ComparisonOperator::Between => values.len() == 2,
        ComparisonOperator::In => !values.is_empty(),
        _ => values.len() == 1,
    };
    if !count_ok {
        return Err(invalid_parameter(&format!(
            "Invalid number of argument(s) for the {} ComparisonOperator",
            operator.name()
        )));
    }
    let type_ok = |value: &AttributeValue| match operator {
        ComparisonOperator::Eq | ComparisonOperator::Ne => true,
        ComparisonOperator::BeginsWith => {
            matches!(value, AttributeValue::S(_) | AttributeValue::B(_))
        }
        _ => is_key_scalar(value),
    };
    if let Some(bad) = values.iter().find(|value| !type_ok(value)) {
        return Err(invalid_parameter(&format!(
            "ComparisonOperator {} is not valid for {} AttributeValue type",
            operator.name(),
            bad.type_name()
        )));
    }
    let mixed_types = values
        .windows(2)
        .any(|pair| pair[0].type_name() != pair[1].type_name());
    if mixed_types
        && matches!(
            operator,
            ComparisonOperator::Between | ComparisonOperator::In
        )
    {
        return Err(invalid_parameter(
            "AttributeValues inside AttributeValueList must be of same type",
        ));
    }
    if let [low, high] = values {
        if operator == ComparisonOperator::Between {
            match compare_scalars(low, high) {
                None => {}
                Some(Ordering::Greater) => {
                    return Err(ApiError::validation(
                        "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound",
                    ))
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// One attribute's legacy condition as an expression condition.
fn legacy_condition(
    name: &str,
    operator: ComparisonOperator,
    values: &[AttributeValue],
    namer: &mut ValueNamer,
) -> Result<Condition, ApiError> {
    check_name(name)?;
    check_arguments(operator, values)?;
    let path = Path::top_level(name);
    let compare = |comparator: Comparator, namer: &mut ValueNamer| -> Result<Condition, ApiError> {
        let value = values
            .first()
            .ok_or_else(|| invalid_parameter("missing value"))?;
        Ok(Condition::Compare {
            left: Operand::Path(path.clone()),
            comparator,
            right: namer.operand(value),
        })
    };
    let first_value = || {
        values
            .first()
            .ok_or_else(|| invalid_parameter("missing value"))
    };
    Ok(match operator {
        ComparisonOperator::Eq => compare(Comparator::Eq, namer)?,
        ComparisonOperator::Ne => compare(Comparator::Ne, namer)?,
        ComparisonOperator::Lt => compare(Comparator::Lt, namer)?,
        ComparisonOperator::Le => compare(Comparator::Le, namer)?,
        ComparisonOperator::Gt => compare(Comparator::Gt, namer)?,
        ComparisonOperator::Ge => compare(Comparator::Ge, namer)?,
        ComparisonOperator::In => Condition::In {
            value: Operand::Path(path.clone()),
            candidates: values.iter().map(|value| namer.operand(value)).collect(),
        },
        ComparisonOperator::Between => {
            let [low, high] = values else {
                return Err(invalid_parameter("missing value"));
            };
            Condition::Between {
                value: Operand::Path(path.clone()),
                low: namer.operand(low),
                high: namer.operand(high),
            }
        }
        ComparisonOperator::NotNull => Condition::AttributeExists(path.clone()),
        ComparisonOperator::Null => Condition::AttributeNotExists(path.clone()),
        ComparisonOperator::Contains => Condition::Contains {
            container: Operand::Path(path.clone()),
            member: namer.operand(first_value()?),
        },
        // Legacy NOT_CONTAINS is false for a missing attribute.
        ComparisonOperator::NotContains => Condition::And(
            Box::new(Condition::AttributeExists(path.clone())),
            Box::new(Condition::Not(Box::new(Condition::Contains {
                container: Operand::Path(path.clone()),
                member: namer.operand(first_value()?),
            }))),
        ),
        ComparisonOperator::BeginsWith => Condition::BeginsWith {
            value: Operand::Path(path.clone()),
            prefix: namer.operand(first_value()?),
        },
    })
}

fn combine(conditions: Vec<Condition>, operator: ConditionalOperator) -> Option<Condition> {
    conditions.into_iter().reduce(|left, right| match operator {
        ConditionalOperator::And => Condition::And(Box::new(left), Box::new(right)),
        ConditionalOperator::Or => Condition::Or(Box::new(left), Box::new(right)),
    })
}

/// `Expected` (+ `ConditionalOperator`) as a condition; `None` when `expected` is empty.
pub fn expected_condition(
    expected: &BTreeMap<String, ExpectedAttribute>,
    operator: Option<ConditionalOperator>,
) -> Result<Option<Condition>, ApiError> {
    let mut namer = ValueNamer::default();
    let mut conditions = Vec::with_capacity(expected.len());
    for (name, entry) in expected {
        check_name(name)?;
        let path = Path::top_level(name.as_str());
        // DynamoDB's order of checks (dynalite's, and DynamoDB Local's answers): Value and
        // AttributeValueList exclude each other; with a ComparisonOperator, `Value` is its one
        // argument when there is no list.
        if entry.value.is_some() && entry.attribute_value_list.is_some() {
            return Err(invalid_parameter(&format!(
                "Value and AttributeValueList cannot be used together for Attribute: {name}"
            )));
        }
        let condition = match (entry.comparison_operator, &entry.value, entry.exists) {
            (Some(_), _, Some(_)) => {
                return Err(invalid_parameter(&format!(
                    "Exists and ComparisonOperator cannot be used together for Attribute: {name}"
                )))
            }
            (Some(comparison), value, None) => {
                let values = match (&entry.attribute_value_list, value) {
                    (Some(list), _) => list.as_slice(),
                    (None, Some(value)) => std::slice::from_ref(value),
                    (None, None)
                        if !matches!(
                            comparison,
                            ComparisonOperator::Null | ComparisonOperator::NotNull
                        ) =>
                    {
                        return Err(invalid_parameter(&format!(
                            "Value or AttributeValueList must be used with ComparisonOperator: {} for Attribute: {name}",
                            comparison.name()
                        )))
                    }
                    (None, None) => &[],
                };
                legacy_condition(name, comparison, values, &mut namer)?
            }
            (None, _, _) if entry.attribute_value_list.is_some() => {
                return Err(invalid_parameter(&format!(
                    "AttributeValueList can only be used with a ComparisonOperator for Attribute: {name}"
                )))
            }
            (None, Some(_), Some(false)) => {
                return Err(invalid_parameter(
                    "Cannot expect an attribute to have a specified value while expecting it to not exist",
                ))
            }
            (None, Some(value), _) => Condition::Compare {
                left: Operand::Path(path),
                comparator: Comparator::Eq,
                right: namer.operand(value),
            },
            (None, None, Some(false)) => Condition::AttributeNotExists(path),
            (None, None, Some(true)) => {
                return Err(invalid_parameter(&format!(
                    "Exists is set to TRUE for attribute ({name}), Value must also be set"
                )))
            }
            (None, None, None) => {
                return Err(invalid_parameter(&format!(
                    "Value must be provided when Exists is null for Attribute: {name}"
                )))
            }
        };
        conditions.push(condition);
    }
    Ok(combine(conditions, operator.unwrap_or_default()))
}

/// `QueryFilter` / `ScanFilter` (+ `ConditionalOperator`) as a condition; `None` when empty.
pub fn filter_condition(
    conditions: &BTreeMap<String, LegacyCondition>,
    operator: Option<ConditionalOperator>,
) -> Result<Option<Condition>, ApiError> {
    let mut namer = ValueNamer::default();
    let translated = conditions
        .iter()
        .map(|(name, condition)| {
            legacy_condition(
                name,
                condition.comparison_operator,
                &condition.attribute_value_list,
                &mut namer,
            )
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(combine(translated, operator.unwrap_or_default()))
}

/// `KeyConditions` checked against the key schema being queried.
pub fn key_conditions(
    conditions: &BTreeMap<String, LegacyCondition>,
    schema: &KeySchemaView,
) -> Result<KeyCondition, ApiError> {
    let mut predicates = Vec::with_capacity(conditions.len());
    for (name, condition) in conditions {
        let operator = condition.comparison_operator;
        check_arguments(operator, &condition.attribute_value_list)?;
        let values = &condition.attribute_value_list;
        let first = || {
            values
                .first()
                .cloned()
                .ok_or_else(|| invalid_parameter("missing value"))
        };
        let predicate = match operator {
            ComparisonOperator::Eq => SortKeyCondition::Eq(first()?),
            ComparisonOperator::Lt => SortKeyCondition::Lt(first()?),
            ComparisonOperator::Le => SortKeyCondition::Le(first()?),
            ComparisonOperator::Gt => SortKeyCondition::Gt(first()?),
            ComparisonOperator::Ge => SortKeyCondition::Ge(first()?),
            ComparisonOperator::BeginsWith => SortKeyCondition::BeginsWith(first()?),
            ComparisonOperator::Between => match values.as_slice() {
                [low, high] => SortKeyCondition::Between(low.clone(), high.clone()),
                _ => return Err(invalid_parameter("missing value")),
            },
            _ => {
                return Err(ApiError::validation(
                    "Attempted conditional constraint is not an indexable operation",
                ))
            }
        };
        predicates.push((name.clone(), predicate));
    }
    KeyCondition::from_predicates(predicates, schema)
}

/// `AttributesToGet` as a projection of top-level attributes.
pub fn attributes_to_get(names: &[String]) -> Result<Projection, ApiError> {
    let mut seen = BTreeSet::new();
    for name in names {
        check_name(name)?;
        if !seen.insert(name.as_str()) {
            return Err(invalid_parameter(&format!(
                "Duplicate value in attribute name: {name}"
            )));
        }
    }
    Ok(Projection::new(
        names
            .iter()
            .map(|name| Path::top_level(name.as_str()))
            .collect(),
    ))
}

/// `AttributeUpdates` as an update. Unlike UpdateExpression ADD, legacy ADD also appends to
/// lists.
pub fn attribute_updates(
    updates: &BTreeMap<String, AttributeValueUpdate>,
) -> Result<Update, ApiError> {
    let mut namer = ValueNamer::default();
    let mut actions = Vec::with_capacity(updates.len());
    for (name, update) in updates {
        check_name(name)?;
        let path = Path::top_level(name.as_str());
        let action = match (update.action, &update.value) {
            (AttributeAction::Put, Some(value)) => UpdateAction::Set {
                path,
                value: SetValue::Operand(UpdateOperand::Value(namer.value(value))),
            },
            (AttributeAction::Delete, None) => UpdateAction::Delete { path, value: None },
            (AttributeAction::Delete, Some(value)) => {
                if !matches!(
                    value,
                    AttributeValue::Ss(_) | AttributeValue::Ns(_) | AttributeValue::Bs(_)
                ) {
                    return Err(invalid_parameter(&format!(
                        "Action DELETE is not supported for the type {}",
                        value.type_name()
                    )));
                }
                UpdateAction::Delete {
                    path,
                    value: Some(namer.value(value)),
                }
            }
            (AttributeAction::Add, Some(value)) => {
                if !matches!(
                    value,
                    AttributeValue::N(_)
                        | AttributeValue::Ss(_)
                        | AttributeValue::Ns(_)
                        | AttributeValue::Bs(_)
                        | AttributeValue::L(_)
                ) {
                    return Err(invalid_parameter(&format!(
                        "Action ADD is not supported for the type {}",
                        value.type_name()
                    )));
                }
                UpdateAction::Add {
                    path,
                    value: namer.value(value),
                    lists_allowed: true,
                }
            }
            (AttributeAction::Put | AttributeAction::Add, None) => {
                return Err(invalid_parameter(
                    "Only DELETE action is allowed when no attribute value is specified",
                ))
            }
        };
        actions.push(action);
    }
    Ok(Update::from_actions(actions))
}

#[cfg(test)]
mod tests {
    use shoal_model::{Item, ScalarType};

    use super::*;
    use crate::context::check_no_mixing;
    use crate::key_condition::KeyAttribute;
    use crate::test_support::{item, message, value};

    fn expected(entries: Vec<(&str, ExpectedAttribute)>) -> BTreeMap<String, ExpectedAttribute> {
        entries
            .into_iter()
            .map(|(name, entry)| (name.to_string(), entry))
            .collect()
    }

    fn filter(
        entries: Vec<(&str, ComparisonOperator, Vec<&str>)>,
    ) -> BTreeMap<String, LegacyCondition> {
        entries
            .into_iter()
            .map(|(name, comparison_operator, values)| {
                let attribute_value_list = values.into_iter().map(value).collect();
                (
                    name.to_string(),
                    LegacyCondition {
                        comparison_operator,
                        attribute_value_list,
                    },
                )
            })
            .collect()
    }

    fn sample() -> Item {
        item(
            r#"{"a": {"N": "1"}, "s": {"S": "hello"}, "ss": {"SS": ["x"]}, "l": {"L": [{"N": "1"}]}}"#,
        )
    }

    #[test]
    fn operator_names_round_trip() {
        for operator in ALL_OPERATORS {
            assert_eq!(
                ComparisonOperator::from_name(operator.name()),
                Some(operator)
            );
        }
        assert_eq!(ComparisonOperator::from_name("eq"), None);
    }

    #[test]
    fn expected_value_exists_and_comparison_forms() {
        let one = || Some(value(r#"{"N": "1"}"#));
        let condition = expected_condition(
            &expected(vec![
                (
                    "a",
                    ExpectedAttribute {
                        value: one(),
                        ..Default::default()
                    },
                ),
                (
                    "gone",
                    ExpectedAttribute {
                        exists: Some(false),
                        ..Default::default()
                    },
                ),
                (
                    "s",
                    ExpectedAttribute {
                        comparison_operator: Some(ComparisonOperator::BeginsWith),
                        attribute_value_list: Some(vec![value(r#"{"S": "he"}"#)]),
                        ..Default::default()
                    },
                ),
            ]),
            None,
        )
        .unwrap()
        .unwrap();
        assert!(condition.evaluate(&sample()));
        assert!(!condition.evaluate(&Item::new()));
        assert!(expected_condition(&BTreeMap::new(), None)
            .unwrap()
            .is_none());
    }

    #[test]
    fn expected_shape_errors() {
        let with = |entry: ExpectedAttribute| {
            message(expected_condition(&expected(vec![("a", entry)]), None))
        };
        assert_eq!(
            with(ExpectedAttribute { exists: Some(true), ..Default::default() }),
            "One or more parameter values were invalid: Exists is set to TRUE for attribute (a), Value must also be set"
        );
        assert_eq!(
            with(ExpectedAttribute {
                exists: Some(false),
                value: Some(value(r#"{"N": "1"}"#)),
                ..Default::default()
            }),
            "One or more parameter values were invalid: Cannot expect an attribute to have a specified value while expecting it to not exist"
        );
        assert!(with(ExpectedAttribute::default()).contains("Value must be provided"));
        let one = || Some(value(r#"{"N": "1"}"#));
        // `Value` and `AttributeValueList` never go together, with or without an operator.
        for comparison_operator in [Some(ComparisonOperator::Eq), None] {
            assert_eq!(
                with(ExpectedAttribute {
                    value: one(),
                    attribute_value_list: Some(vec![value(r#"{"N": "1"}"#)]),
                    comparison_operator,
                    ..Default::default()
                }),
                "One or more parameter values were invalid: Value and AttributeValueList cannot be used together for Attribute: a"
            );
        }
        assert_eq!(
            with(ExpectedAttribute {
                value: one(),
                comparison_operator: Some(ComparisonOperator::Eq),
                exists: Some(true),
                ..Default::default()
            }),
            "One or more parameter values were invalid: Exists and ComparisonOperator cannot be used together for Attribute: a"
        );
        assert_eq!(
            with(ExpectedAttribute {
                comparison_operator: Some(ComparisonOperator::Gt),
                ..Default::default()
            }),
            "One or more parameter values were invalid: Value or AttributeValueList must be used with ComparisonOperator: GT for Attribute: a"
        );
        // `Value` counts as one argument: too few for BETWEEN, too many for NULL.
        for operator in [
            ComparisonOperator::Between,
            ComparisonOperator::Null,
            ComparisonOperator::NotNull,
        ] {
            assert_eq!(
                with(ExpectedAttribute {
                    value: one(),
                    comparison_operator: Some(operator),
                    ..Default::default()
                }),
                format!(
                    "One or more parameter values were invalid: Invalid number of argument(s) for the {} ComparisonOperator",
                    operator.name()
                )
            );
        }
    }

    #[test]
    fn expected_value_goes_with_a_comparison_operator_as_its_argument() {
        let with_value = |operator: ComparisonOperator, json: &str| {
            expected_condition(
                &expected(vec![(
                    "a",
                    ExpectedAttribute {
                        value: Some(value(json)),
                        comparison_operator: Some(operator),
                        ..Default::default()
                    },
                )]),
                None,
            )
            .unwrap()
            .unwrap()
        };
        // sample() holds a = 1.
        assert!(with_value(ComparisonOperator::Eq, r#"{"N": "1"}"#).evaluate(&sample()));
        assert!(!with_value(ComparisonOperator::Eq, r#"{"N": "2"}"#).evaluate(&sample()));
        assert!(with_value(ComparisonOperator::Gt, r#"{"N": "0"}"#).evaluate(&sample()));
        assert!(with_value(ComparisonOperator::In, r#"{"N": "1"}"#).evaluate(&sample()));
        assert!(!with_value(ComparisonOperator::Lt, r#"{"N": "1"}"#).evaluate(&sample()));
        // The operator's type rules still apply to it.
        assert_eq!(
            message(expected_condition(
                &expected(vec![(
                    "a",
                    ExpectedAttribute {
                        value: Some(value(r#"{"SS": ["x"]}"#)),
                        comparison_operator: Some(ComparisonOperator::Gt),
                        ..Default::default()
                    },
                )]),
                None,
            )),
            "One or more parameter values were invalid: ComparisonOperator GT is not valid for SS AttributeValue type"
        );
    }

    #[test]
    fn filters_combine_with_the_conditional_operator() {
        let conditions = filter(vec![
            ("a", ComparisonOperator::Eq, vec![r#"{"N": "2"}"#]),
            ("s", ComparisonOperator::Contains, vec![r#"{"S": "ell"}"#]),
        ]);
        let and = filter_condition(&conditions, None).unwrap().unwrap();
        assert!(!and.evaluate(&sample()));
        let or = filter_condition(&conditions, Some(ConditionalOperator::Or))
            .unwrap()
            .unwrap();
        assert!(or.evaluate(&sample()));
    }

    #[test]
    fn legacy_operator_semantics() {
        let holds = |name: &str, operator: ComparisonOperator, values: Vec<&str>| {
            filter_condition(&filter(vec![(name, operator, values)]), None)
                .unwrap()
                .unwrap()
                .evaluate(&sample())
        };
        assert!(holds("gone", ComparisonOperator::Ne, vec![r#"{"N": "1"}"#]));
        assert!(!holds(
            "gone",
            ComparisonOperator::NotContains,
            vec![r#"{"S": "x"}"#]
        ));
        assert!(holds(
            "s",
            ComparisonOperator::NotContains,
            vec![r#"{"S": "xyz"}"#]
        ));
        assert!(!holds(
            "ss",
            ComparisonOperator::NotContains,
            vec![r#"{"S": "x"}"#]
        ));
        assert!(holds("gone", ComparisonOperator::Null, vec![]));
        assert!(holds("a", ComparisonOperator::NotNull, vec![]));
        assert!(holds(
            "a",
            ComparisonOperator::In,
            vec![r#"{"N": "3"}"#, r#"{"N": "1"}"#]
        ));
        assert!(holds(
            "a",
            ComparisonOperator::Between,
            vec![r#"{"N": "0"}"#, r#"{"N": "1"}"#]
        ));
        assert!(holds("a", ComparisonOperator::Ge, vec![r#"{"N": "1"}"#]));
    }

    #[test]
    fn legacy_argument_errors() {
        let error = |operator: ComparisonOperator, values: Vec<&str>| {
            message(filter_condition(
                &filter(vec![("a", operator, values)]),
                None,
            ))
        };
        assert_eq!(
            error(ComparisonOperator::Eq, vec![]),
            "One or more parameter values were invalid: Invalid number of argument(s) for the EQ ComparisonOperator"
        );
        assert_eq!(
            error(ComparisonOperator::Null, vec![r#"{"N": "1"}"#]),
            "One or more parameter values were invalid: Invalid number of argument(s) for the NULL ComparisonOperator"
        );
        assert_eq!(
            error(ComparisonOperator::Lt, vec![r#"{"BOOL": true}"#]),
            "One or more parameter values were invalid: ComparisonOperator LT is not valid for BOOL AttributeValue type"
        );
        assert!(error(
            ComparisonOperator::Between,
            vec![r#"{"N": "2"}"#, r#"{"N": "1"}"#]
        )
        .contains("lower bound is greater than the upper bound"));
        for operator in [ComparisonOperator::Between, ComparisonOperator::In] {
            assert_eq!(
                error(operator, vec![r#"{"N": "2"}"#, r#"{"S": "1"}"#]),
                "One or more parameter values were invalid: AttributeValues inside AttributeValueList must be of same type",
                "{operator:?}"
            );
        }
        assert_eq!(
            error(
                ComparisonOperator::In,
                vec![r#"{"S": "2"}"#, r#"{"S": "1"}"#, r#"{"B": "AQ=="}"#]
            ),
            "One or more parameter values were invalid: AttributeValues inside AttributeValueList must be of same type"
        );
    }

    #[test]
    fn legacy_attribute_names_must_be_1_to_65535_bytes() {
        let long = "n".repeat(65_536);
        for (name, problem) in [
            ("", "Empty attribute name"),
            (
                long.as_str(),
                "Attribute name is too large, must be less than 65536 bytes",
            ),
        ] {
            let expected_text = format!("One or more parameter values were invalid: {problem}");
            let exists = ExpectedAttribute {
                exists: Some(false),
                ..Default::default()
            };
            assert_eq!(
                message(expected_condition(&expected(vec![(name, exists)]), None)),
                expected_text
            );
            assert_eq!(
                message(filter_condition(
                    &filter(vec![(name, ComparisonOperator::NotNull, vec![])]),
                    None
                )),
                expected_text
            );
            assert_eq!(
                message(attributes_to_get(&[name.to_string()])),
                expected_text
            );
            let update = AttributeValueUpdate {
                action: AttributeAction::Delete,
                value: None,
            };
            let updates = BTreeMap::from([(name.to_string(), update)]);
            assert_eq!(message(attribute_updates(&updates)), expected_text);
        }
    }

    #[test]
    fn key_conditions_use_the_key_rules() {
        let schema = KeySchemaView::new(
            KeyAttribute {
                name: "pk".to_string(),
                scalar_type: ScalarType::S,
            },
            Some(KeyAttribute {
                name: "sk".to_string(),
                scalar_type: ScalarType::N,
            }),
        );
        let parsed = key_conditions(
            &filter(vec![
                ("pk", ComparisonOperator::Eq, vec![r#"{"S": "p"}"#]),
                ("sk", ComparisonOperator::Le, vec![r#"{"N": "3"}"#]),
            ]),
            &schema,
        )
        .unwrap();
        assert_eq!(parsed.hash_value, value(r#"{"S": "p"}"#));
        assert_eq!(
            parsed.sort,
            Some(SortKeyCondition::Le(value(r#"{"N": "3"}"#)))
        );
        assert_eq!(
            message(key_conditions(
                &filter(vec![("pk", ComparisonOperator::Ne, vec![r#"{"S": "p"}"#])]),
                &schema
            )),
            "Attempted conditional constraint is not an indexable operation"
        );
        assert_eq!(
            message(key_conditions(
                &filter(vec![("sk", ComparisonOperator::Eq, vec![r#"{"N": "1"}"#])]),
                &schema
            )),
            "Query condition missed key schema element: pk"
        );
    }

    #[test]
    fn attributes_to_get_projects_top_level_names() {
        let names = vec!["a".to_string(), "status".to_string()];
        let projection = attributes_to_get(&names).unwrap();
        assert_eq!(projection.apply(sample()), item(r#"{"a": {"N": "1"}}"#));
        let duplicated = vec!["a".to_string(), "a".to_string()];
        assert!(message(attributes_to_get(&duplicated)).contains("Duplicate value"));
    }

    #[test]
    fn attribute_updates_put_add_and_delete() {
        let updates: BTreeMap<String, AttributeValueUpdate> = [
            ("p", AttributeAction::Put, Some(r#"{"S": "new"}"#)),
            ("a", AttributeAction::Add, Some(r#"{"N": "2"}"#)),
            ("l", AttributeAction::Add, Some(r#"{"L": [{"N": "2"}]}"#)),
            ("ss", AttributeAction::Delete, Some(r#"{"SS": ["x"]}"#)),
            ("s", AttributeAction::Delete, None),
        ]
        .into_iter()
        .map(|(name, action, json)| {
            (
                name.to_string(),
                AttributeValueUpdate {
                    action,
                    value: json.map(value),
                },
            )
        })
        .collect();
        let outcome = attribute_updates(&updates)
            .unwrap()
            .apply(&sample())
            .unwrap();
        assert_eq!(
            outcome.item,
            item(r#"{"p": {"S": "new"}, "a": {"N": "3"}, "l": {"L": [{"N": "1"}, {"N": "2"}]}}"#)
        );
        let bad: BTreeMap<String, AttributeValueUpdate> = [(
            "p".to_string(),
            AttributeValueUpdate {
                action: AttributeAction::Put,
                value: None,
            },
        )]
        .into_iter()
        .collect();
        assert_eq!(
            message(attribute_updates(&bad)),
            "One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified"
        );
    }

    #[test]
    fn mixing_legacy_and_expression_parameters_is_rejected() {
        assert_eq!(
            check_no_mixing(&["Expected"], &["ConditionExpression"]).unwrap_err().message,
            "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}"
        );
        assert!(check_no_mixing(&["KeyConditions"], &[]).is_ok());
        assert!(check_no_mixing(&[], &["FilterExpression"]).is_ok());
    }
}
