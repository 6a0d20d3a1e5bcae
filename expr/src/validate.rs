//! Checks on a parsed expression that DynamoDB makes before evaluating it: operand types of
//! literal values, BETWEEN bounds, `attribute_type` names, distinct operands, overlapping paths.
//! Errors are plain messages; the caller adds the `Invalid <Kind>Expression: ` prefix.

use std::cmp::Ordering;

use shoal_model::AttributeValue;

use crate::ast::{Condition, Operand, Path, PathElement, SetValue, UpdateAction, UpdateOperand};
use crate::condition_eval::compare_scalars;

/// The type names `attribute_type` accepts.
pub(crate) const ATTRIBUTE_TYPE_NAMES: [&str; 10] =
    ["S", "SS", "N", "NS", "B", "BS", "BOOL", "NULL", "L", "M"];

fn incorrect_operand_type(function: &str, value: &AttributeValue) -> String {
    format!(
        "Incorrect operand type for operator or function; operator or function: {function}, operand type: {}",
        value.type_name()
    )
}

/// A scalar as DynamoDB prints it in messages: `{N:1}`, `{S:a}`, `{B:AQ==}`.
fn message_form(value: &AttributeValue) -> String {
    match value {
        AttributeValue::S(text) => format!("{{S:{text}}}"),
        other => other.to_json().to_string().replace('"', ""),
    }
}

fn is_key_scalar(value: &AttributeValue) -> bool {
    matches!(
        value,
        AttributeValue::S(_) | AttributeValue::N(_) | AttributeValue::B(_)
    )
}

/// Literal operands of order comparisons, BETWEEN and begins_with must have a usable type.
fn check_literal_type(
    function: &str,
    operand: &Operand,
    accepted: fn(&AttributeValue) -> bool,
) -> Result<(), String> {
    match operand {
        Operand::Value(value) if !accepted(&value.value) => {
            Err(incorrect_operand_type(function, &value.value))
        }
        _ => Ok(()),
    }
}

/// `a = a`, `contains(a, a)`: DynamoDB rejects a path compared with itself.
fn check_distinct(function: &str, first: &Operand, others: &[&Operand]) -> Result<(), String> {
    let Operand::Path(first_path) = first else {
        return Ok(());
    };
    let repeated = others
        .iter()
        .any(|other| matches!(other, Operand::Path(path) if path.same_location(first_path)));
    if repeated {
        return Err(format!(
            "The first operand must be distinct from the remaining operands for this operator or function; operator: {function}, first operand: {}",
            first_path.to_message_form()
        ));
    }
    Ok(())
}

/// `size(:v)` of a value whose type has no size (N, BOOL, NULL) is known to be wrong before
/// any item is read, so DynamoDB refuses the expression; `size(path)` of such an attribute
/// only makes the comparison false.
fn check_size_operands(operands: &[&Operand]) -> Result<(), String> {
    for operand in operands {
        if let Operand::Size(inner) = operand {
            if let Operand::Value(value) = inner.as_ref() {
                if matches!(
                    value.value,
                    AttributeValue::N(_) | AttributeValue::Bool(_) | AttributeValue::Null
                ) {
                    return Err(incorrect_operand_type("size", &value.value));
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn check_condition(condition: &Condition) -> Result<(), String> {
    check_size_operands(&condition_operands(condition))?;
    match condition {
        Condition::Compare {
            left,
            comparator,
            right,
        } => {
            let symbol = comparator.symbol();
            check_distinct(symbol, left, &[right])?;
            if !matches!(comparator, crate::ast::Comparator::Eq | crate::ast::Comparator::Ne) {
                check_literal_type(symbol, left, is_key_scalar)?;
                check_literal_type(symbol, right, is_key_scalar)?;
            }
            Ok(())
        }
        Condition::Between { value, low, high } => {
            check_distinct("BETWEEN", value, &[low, high])?;
            for operand in [value, low, high] {
                check_literal_type("BETWEEN", operand, is_key_scalar)?;
            }
            if let (Operand::Value(low), Operand::Value(high)) = (low, high) {
                match compare_scalars(&low.value, &high.value) {
                    None => {
                        return Err(format!(
                            "The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {}, upper bound operand: AttributeValue: {}",
                            message_form(&low.value),
                            message_form(&high.value)
                        ))
                    }
                    Some(Ordering::Greater) => {
                        return Err(
                            "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"
                                .to_string(),
                        )
                    }
                    Some(_) => {}
                }
            }
            Ok(())
        }
        Condition::In { value, candidates } => {
            let others: Vec<&Operand> = candidates.iter().collect();
            check_distinct("IN", value, &others)?;
            // Unlike BETWEEN's bounds and the legacy IN's AttributeValueList, the listed
            // values may be of different types: each is compared in turn, and one of another
            // type simply does not match.
            Ok(())
        }
        Condition::AttributeExists(_) | Condition::AttributeNotExists(_) => Ok(()),
        Condition::AttributeType { type_name, .. } => match &type_name.value {
            AttributeValue::S(name) if ATTRIBUTE_TYPE_NAMES.contains(&name.as_str()) => Ok(()),
            AttributeValue::S(name) => Err(format!(
                "Invalid attribute type name found; type: {name}, valid types: {{B,NULL,SS,BOOL,L,BS,N,NS,S,M}}"
            )),
            other => Err(incorrect_operand_type("attribute_type", other)),
        },
        Condition::BeginsWith { value, prefix } => {
            check_distinct("begins_with", value, &[prefix])?;
            let string_or_binary =
                |value: &AttributeValue| matches!(value, AttributeValue::S(_) | AttributeValue::B(_));
            check_literal_type("begins_with", value, string_or_binary)?;
            check_literal_type("begins_with", prefix, string_or_binary)
        }
        Condition::Contains { container, member } => {
            check_distinct("contains", container, &[member])
        }
        Condition::And(left, right) | Condition::Or(left, right) => {
            check_condition(left)?;
            check_condition(right)
        }
        Condition::Not(inner) => check_condition(inner),
    }
}

fn check_update_operand(operand: &UpdateOperand) -> Result<(), String> {
    match operand {
        UpdateOperand::Path(_) | UpdateOperand::Value(_) => Ok(()),
        UpdateOperand::IfNotExists(_, fallback) => check_update_operand(fallback),
        UpdateOperand::ListAppend(first, second) => {
            for list in [first, second] {
                if let UpdateOperand::Value(value) = list.as_ref() {
                    if !matches!(value.value, AttributeValue::L(_)) {
                        return Err(incorrect_operand_type("list_append", &value.value));
                    }
                }
                check_update_operand(list)?;
            }
            Ok(())
        }
    }
}

fn check_arithmetic_operand(symbol: &str, operand: &UpdateOperand) -> Result<(), String> {
    if let UpdateOperand::Value(value) = operand {
        if !matches!(value.value, AttributeValue::N(_)) {
            return Err(incorrect_operand_type(symbol, &value.value));
        }
    }
    check_update_operand(operand)
}

fn is_set(value: &AttributeValue) -> bool {
    matches!(
        value,
        AttributeValue::Ss(_) | AttributeValue::Ns(_) | AttributeValue::Bs(_)
    )
}

pub(crate) fn check_update_actions(actions: &[UpdateAction]) -> Result<(), String> {
    for action in actions {
        match action {
            UpdateAction::Set { value, .. } => match value {
                SetValue::Operand(operand) => check_update_operand(operand)?,
                SetValue::Plus(left, right) => {
                    check_arithmetic_operand("+", left)?;
                    check_arithmetic_operand("+", right)?;
                }
                SetValue::Minus(left, right) => {
                    check_arithmetic_operand("-", left)?;
                    check_arithmetic_operand("-", right)?;
                }
            },
            UpdateAction::Remove { .. } => {}
            UpdateAction::Add { value, .. } => {
                let value = &value.value;
                if !(matches!(value, AttributeValue::N(_)) || is_set(value)) {
                    return Err(format!(
                        "Incorrect operand type for operator or function; operator: ADD, operand type: {}",
                        value.type_name()
                    ));
                }
            }
            UpdateAction::Delete { value, .. } => {
                if let Some(value) = value {
                    if !is_set(&value.value) {
                        return Err(format!(
                            "Incorrect operand type for operator or function; operator: DELETE, operand type: {}",
                            value.value.type_name()
                        ));
                    }
                }
            }
        }
    }
    check_no_overlap(actions, UpdateAction::path)
}

/// Rejects two paths where one contains the other (overlap) or where one indexes a list and
/// the other a map at the same place (conflict).
/// `path_of` picks the path of each item, so callers need not collect the paths first.
pub(crate) fn check_no_overlap<T>(items: &[T], path_of: fn(&T) -> &Path) -> Result<(), String> {
    for (position, first) in items.iter().enumerate() {
        let first = path_of(first);
        for second in &items[position + 1..] {
            let second = path_of(second);
            let mismatch = first
                .elements()
                .iter()
                .zip(second.elements())
                .find(|(a, b)| !a.same_location(b));
            let relation = match mismatch {
                None => "overlap",
                Some((PathElement::Index(_), PathElement::Attribute { .. }))
                | Some((PathElement::Attribute { .. }, PathElement::Index(_))) => "conflict",
                Some(_) => continue,
            };
            return Err(format!(
                "Two document paths {relation} with each other; must remove or rewrite one of these paths; path one: {}, path two: {}",
                first.to_message_form(),
                second.to_message_form()
            ));
        }
    }
    Ok(())
}

/// The operands a condition compares or passes to a function (not those of the conditions it
/// combines).
fn condition_operands(condition: &Condition) -> Vec<&Operand> {
    match condition {
        Condition::Compare { left, right, .. } => vec![left, right],
        Condition::Between { value, low, high } => vec![value, low, high],
        Condition::In { value, candidates } => std::iter::once(value).chain(candidates).collect(),
        Condition::AttributeType { value, .. } => vec![value],
        Condition::BeginsWith { value, prefix } => vec![value, prefix],
        Condition::Contains { container, member } => vec![container, member],
        Condition::AttributeExists(_)
        | Condition::AttributeNotExists(_)
        | Condition::And(..)
        | Condition::Or(..)
        | Condition::Not(_) => Vec::new(),
    }
}
