//! Applying an UpdateExpression (or legacy `AttributeUpdates`) to an item (SPEC §3.5).
//!
//! Semantics: every `SET` operand is evaluated against the item as it was before the update,
//! so list indexes and paths always mean positions and values *before* the update. SET, ADD
//! and DELETE are then applied in order, except that writes past the end of a list are
//! appended after the others, in the order of their indexes; REMOVEs come last, deepest list
//! positions first, and only for paths that existed before the update, so removing `a[0]`
//! and `a[1]` in one expression removes the two original elements.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;

use shoal_model::{ApiError, AttributeValue, Item};

use crate::ast::{fmt_update_actions, Path, PathElement, SetValue, UpdateAction, UpdateOperand};
use crate::document::{appends, check_removable, remove_at, resolve, set_at};

/// A parsed, validated update.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    actions: Vec<UpdateAction>,
}

/// The result of applying an update.
#[derive(Debug, Clone)]
pub struct UpdateOutcome {
    /// The item after the update.
    pub item: Item,
    /// The paths the update wrote or removed (an index appended past the end is reported at
    /// the position it landed on). Feed them to `extract_paths` with the old item for
    /// UPDATED_OLD and with `item` for UPDATED_NEW.
    pub touched_paths: Vec<Path>,
}

/// The text of an operand of the wrong type; public so that callers can tell this error
/// from the others (legacy AttributeUpdates word it their own way).
pub const INCORRECT_DATA_TYPE: &str =
    "An operand in the update expression has an incorrect data type";

fn incorrect_data_type() -> ApiError {
    ApiError::validation(INCORRECT_DATA_TYPE)
}

fn missing_attribute() -> ApiError {
    ApiError::validation(
        "The provided expression refers to an attribute that does not exist in the item",
    )
}

fn evaluate_operand(operand: &UpdateOperand, item: &Item) -> Result<AttributeValue, ApiError> {
    match operand {
        UpdateOperand::Path(path) => resolve(item, path).cloned().ok_or_else(missing_attribute),
        UpdateOperand::Value(value) => Ok(value.value.clone()),
        UpdateOperand::IfNotExists(path, fallback) => match resolve(item, path) {
            Some(value) => Ok(value.clone()),
            None => evaluate_operand(fallback, item),
        },
        UpdateOperand::ListAppend(first, second) => {
            match (
                evaluate_operand(first, item)?,
                evaluate_operand(second, item)?,
            ) {
                (AttributeValue::L(mut head), AttributeValue::L(tail)) => {
                    head.extend(tail);
                    Ok(AttributeValue::L(head))
                }
                _ => Err(incorrect_data_type()),
            }
        }
    }
}

fn evaluate_set_value(value: &SetValue, item: &Item) -> Result<AttributeValue, ApiError> {
    match value {
        SetValue::Operand(operand) => evaluate_operand(operand, item),
        SetValue::Plus(left, right) | SetValue::Minus(left, right) => {
            let (AttributeValue::N(left), AttributeValue::N(right)) = (
                evaluate_operand(left, item)?,
                evaluate_operand(right, item)?,
            ) else {
                return Err(incorrect_data_type());
            };
            let result = if matches!(value, SetValue::Plus(..)) {
                left.checked_add(&right)?
            } else {
                left.checked_sub(&right)?
            };
            Ok(AttributeValue::N(result))
        }
    }
}

/// Appends the members of `added` that `members` lacks.
fn union<T: PartialEq + Clone>(members: &mut Vec<T>, added: &[T]) {
    for member in added {
        if !members.contains(member) {
            members.push(member.clone());
        }
    }
}

/// `ADD`: numeric addition (a missing attribute counts as 0) or set union (a missing attribute
/// counts as the empty set); lists only for legacy `AttributeUpdates`.
fn added_value(
    current: Option<&AttributeValue>,
    added: &AttributeValue,
    lists_allowed: bool,
) -> Result<AttributeValue, ApiError> {
    let Some(current) = current else {
        return match added {
            AttributeValue::N(_)
            | AttributeValue::Ss(_)
            | AttributeValue::Ns(_)
            | AttributeValue::Bs(_) => Ok(added.clone()),
            AttributeValue::L(_) if lists_allowed => Ok(added.clone()),
            _ => Err(incorrect_data_type()),
        };
    };
    let mut result = current.clone();
    match (&mut result, added) {
        (AttributeValue::N(number), AttributeValue::N(delta)) => {
            *number = number.checked_add(delta)?;
        }
        (AttributeValue::Ss(members), AttributeValue::Ss(new)) => union(members, new),
        (AttributeValue::Ns(members), AttributeValue::Ns(new)) => union(members, new),
        (AttributeValue::Bs(members), AttributeValue::Bs(new)) => union(members, new),
        (AttributeValue::L(elements), AttributeValue::L(new)) if lists_allowed => {
            elements.extend(new.iter().cloned());
        }
        _ => return Err(incorrect_data_type()),
    }
    Ok(result)
}

/// `DELETE` of set members: `None` when nothing is left (the attribute is then removed).
fn value_after_delete(
    current: &AttributeValue,
    removed: &AttributeValue,
) -> Result<Option<AttributeValue>, ApiError> {
    let mut result = current.clone();
    let now_empty = match (&mut result, removed) {
        (AttributeValue::Ss(members), AttributeValue::Ss(gone)) => {
            members.retain(|member| !gone.contains(member));
            members.is_empty()
        }
        (AttributeValue::Ns(members), AttributeValue::Ns(gone)) => {
            members.retain(|member| !gone.contains(member));
            members.is_empty()
        }
        (AttributeValue::Bs(members), AttributeValue::Bs(gone)) => {
            members.retain(|member| !gone.contains(member));
            members.is_empty()
        }
        _ => return Err(incorrect_data_type()),
    };
    Ok((!now_empty).then_some(result))
}

/// A total order on paths: step by step, names alphabetically, list positions ascending,
/// a name before a position; a path before the paths below it.
fn document_order(first: &Path, second: &Path) -> Ordering {
    for (a, b) in first.elements().iter().zip(second.elements()) {
        let ordering = match (a, b) {
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            (PathElement::Attribute { name: a, .. }, PathElement::Attribute { name: b, .. }) => {
                a.cmp(b)
            }
            (PathElement::Attribute { .. }, PathElement::Index(_)) => Ordering::Less,
            (PathElement::Index(_), PathElement::Attribute { .. }) => Ordering::Greater,
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    first.elements().len().cmp(&second.elements().len())
}

impl Update {
    pub(crate) fn from_actions(actions: Vec<UpdateAction>) -> Update {
        Update { actions }
    }

    /// The actions, in the order they were written.
    pub fn actions(&self) -> &[UpdateAction] {
        &self.actions
    }

    /// Whether the update only takes things away (REMOVE, DELETE from a set, legacy DELETE):
    /// applied to an item that does not exist, it creates nothing (DynamoDB leaves the item
    /// absent). An update with no action at all (an empty `AttributeUpdates`) is not one:
    /// like an UpdateItem with no update, it creates the item with just its key.
    pub fn only_removes(&self) -> bool {
        !self.actions.is_empty()
            && self.actions.iter().all(|action| {
                matches!(
                    action,
                    UpdateAction::Remove { .. } | UpdateAction::Delete { .. }
                )
            })
    }

    /// Every path the update writes or removes.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.actions.iter().map(UpdateAction::path)
    }

    /// The top-level attributes the update touches (the engine rejects updates of key
    /// attributes and nested paths into index keys).
    pub fn touched_top_level_attributes(&self) -> BTreeSet<&str> {
        self.paths().map(Path::top_level_name).collect()
    }

    /// Applies the update to a copy of `item` (pass the key alone when no item exists). A
    /// REMOVE through a missing parent is an error here; DynamoDB ignores it only when the
    /// item does not exist, which callers handle with [`Update::only_removes`].
    pub fn apply(&self, item: &Item) -> Result<UpdateOutcome, ApiError> {
        // SET operands read the item as it was before the update.
        let mut set_values = Vec::new();
        for action in &self.actions {
            if let UpdateAction::Set { value, .. } = action {
                set_values.push(evaluate_set_value(value, item)?);
            }
        }
        let mut set_values = set_values.into_iter();
        let mut updated = item.clone();
        let mut touched_paths = Vec::with_capacity(self.actions.len());
        let mut removals = Vec::new();
        // Writes past the end of a list wait until the other writes are done: DynamoDB
        // appends them in the order of their indexes, not in the order written.
        let mut appended = Vec::new();
        for action in &self.actions {
            match action {
                UpdateAction::Set { path, .. } => {
                    let value = set_values.next().ok_or_else(incorrect_data_type)?;
                    if appends(&updated, path) {
                        appended.push((path, value));
                    } else {
                        touched_paths.push(set_at(&mut updated, path, value)?);
                    }
                }
                UpdateAction::Remove { path } => {
                    check_removable(item, path)?;
                    touched_paths.push(path.clone());
                    if resolve(item, path).is_some() {
                        removals.push(path);
                    }
                }
                UpdateAction::Add {
                    path,
                    value,
                    lists_allowed,
                } => {
                    let new_value =
                        added_value(resolve(&updated, path), &value.value, *lists_allowed)?;
                    if appends(&updated, path) {
                        appended.push((path, new_value));
                    } else {
                        touched_paths.push(set_at(&mut updated, path, new_value)?);
                    }
                }
                UpdateAction::Delete { path, value } => {
                    touched_paths.push(path.clone());
                    let Some(current) = resolve(&updated, path) else {
                        continue;
                    };
                    let remaining = match value {
                        Some(removed) => value_after_delete(current, &removed.value)?,
                        None => None,
                    };
                    match remaining {
                        Some(remaining) => {
                            set_at(&mut updated, path, remaining)?;
                        }
                        None => {
                            remove_at(&mut updated, path);
                        }
                    }
                }
            }
        }
        appended.sort_by(|(a, _), (b, _)| document_order(a, b));
        for (path, value) in appended {
            touched_paths.push(set_at(&mut updated, path, value)?);
        }
        // Later list positions go first: removing them does not shift the earlier ones.
        removals.sort_by(|a, b| document_order(b, a));
        for path in removals {
            remove_at(&mut updated, path);
        }
        Ok(UpdateOutcome {
            item: updated,
            touched_paths,
        })
    }
}

impl fmt::Display for Update {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_update_actions(&self.actions, f)
    }
}

#[cfg(test)]
mod tests {
    use shoal_model::Item;

    use crate::document::extract_paths;
    use crate::test_support::{item, message, value, Maps};

    fn maps() -> Maps {
        Maps::new(
            r##"{"#c": "count"}"##,
            r#"{":one": {"N": "1"}, ":two": {"N": "2"}, ":x": {"S": "x"}, ":y": {"S": "y"},
                ":list": {"L": [{"N": "9"}]}, ":ab": {"SS": ["a", "b"]}, ":bc": {"SS": ["b", "c"]},
                ":n12": {"NS": ["1", "2"]}, ":big": {"N": "1e50"}}"#,
        )
    }

    fn apply(
        text: &str,
        before: &Item,
    ) -> Result<crate::update::UpdateOutcome, shoal_model::ApiError> {
        maps()
            .update(text)
            .unwrap_or_else(|error| panic!("{text}: {error}"))
            .apply(before)
    }

    fn after(text: &str, before_json: &str) -> Item {
        apply(text, &item(before_json))
            .unwrap_or_else(|error| panic!("{text}: {error}"))
            .item
    }

    #[test]
    fn set_creates_replaces_and_writes_nested_paths() {
        assert_eq!(after("SET a = :x", "{}"), item(r#"{"a": {"S": "x"}}"#));
        assert_eq!(
            after(
                "SET a = :y, m.k = :x",
                r#"{"a": {"S": "x"}, "m": {"M": {}}}"#
            ),
            item(r#"{"a": {"S": "y"}, "m": {"M": {"k": {"S": "x"}}}}"#)
        );
        assert_eq!(
            after(
                "SET l[0] = :y, l[7] = :x",
                r#"{"l": {"L": [{"S": "a"}, {"S": "b"}]}}"#
            ),
            item(r#"{"l": {"L": [{"S": "y"}, {"S": "b"}, {"S": "x"}]}}"#)
        );
    }

    #[test]
    fn appends_past_the_end_land_in_index_order() {
        let before = r#"{"l": {"L": [{"N": "0"}, {"N": "1"}]}}"#;
        assert_eq!(
            after("SET l[9] = :x, l[5] = :y", before),
            item(r#"{"l": {"L": [{"N": "0"}, {"N": "1"}, {"S": "y"}, {"S": "x"}]}}"#)
        );
        let outcome = apply("SET l[9] = :x, l[5] = :y", &item(before)).unwrap();
        assert_eq!(
            extract_paths(&outcome.item, &outcome.touched_paths),
            item(r#"{"l": {"L": [{"S": "y"}, {"S": "x"}]}}"#)
        );
    }

    #[test]
    fn remove_through_a_wrong_or_missing_parent_is_invalid() {
        let invalid = "The document path provided in the update expression is invalid for update";
        let before =
            r#"{"s": {"S": "x"}, "l": {"L": [{"N": "0"}]}, "m": {"M": {"k": {"N": "1"}}}}"#;
        for text in [
            "REMOVE s.c",
            "REMOVE s[0]",
            "REMOVE l.c",
            "REMOVE m[0]",
            "REMOVE gone.c",
            "REMOVE gone[0]",
            "REMOVE m.gone.c",
        ] {
            assert_eq!(message(apply(text, &item(before))), invalid, "{text}");
        }
        // A missing last step under a parent of the right kind is no error.
        assert_eq!(
            after("REMOVE m.gone, l[5]", before),
            item(before),
            "nothing to remove"
        );
    }

    #[test]
    fn set_into_a_missing_or_wrong_parent_is_invalid() {
        let invalid = "The document path provided in the update expression is invalid for update";
        assert_eq!(message(apply("SET m.k = :x", &Item::new())), invalid);
        assert_eq!(
            message(apply("SET m.k = :x", &item(r#"{"m": {"S": "no"}}"#))),
            invalid
        );
        assert_eq!(
            message(apply("SET l[0] = :x", &item(r#"{"l": {"M": {}}}"#))),
            invalid
        );
    }

    #[test]
    fn set_arithmetic_and_functions() {
        assert_eq!(
            after("SET #c = #c + :one", r#"{"count": {"N": "41"}}"#),
            item(r#"{"count": {"N": "42"}}"#)
        );
        assert_eq!(
            after("SET a = :one - :two", "{}"),
            item(r#"{"a": {"N": "-1"}}"#)
        );
        assert_eq!(
            after(
                "SET a = if_not_exists(a, :one), b = if_not_exists(c, :two)",
                r#"{"a": {"N": "5"}}"#
            ),
            item(r#"{"a": {"N": "5"}, "b": {"N": "2"}}"#)
        );
        assert_eq!(
            after(
                "SET l = list_append(l, :list), k = list_append(:list, l)",
                r#"{"l": {"L": [{"N": "1"}]}}"#
            ),
            item(r#"{"l": {"L": [{"N": "1"}, {"N": "9"}]}, "k": {"L": [{"N": "9"}, {"N": "1"}]}}"#)
        );
    }

    #[test]
    fn set_operand_errors() {
        assert_eq!(
            message(apply("SET a = b + :one", &Item::new())),
            "The provided expression refers to an attribute that does not exist in the item"
        );
        assert_eq!(
            message(apply("SET a = b + :one", &item(r#"{"b": {"S": "text"}}"#))),
            "An operand in the update expression has an incorrect data type"
        );
        assert_eq!(
            message(apply(
                "SET a = list_append(b, :list)",
                &item(r#"{"b": {"N": "1"}}"#)
            )),
            "An operand in the update expression has an incorrect data type"
        );
        assert!(message(apply("SET a = :big + :one", &Item::new())).contains("overflow"));
    }

    #[test]
    fn operands_read_the_item_before_the_update() {
        assert_eq!(
            after("SET a = b, b = a", r#"{"a": {"S": "x"}, "b": {"S": "y"}}"#),
            item(r#"{"a": {"S": "y"}, "b": {"S": "x"}}"#)
        );
        // Indexes name positions before the update: l[1] is "b", l[0] is "a".
        assert_eq!(
            after(
                "SET l[1] = :x REMOVE l[0]",
                r#"{"l": {"L": [{"S": "a"}, {"S": "b"}, {"S": "c"}]}}"#
            ),
            item(r#"{"l": {"L": [{"S": "x"}, {"S": "c"}]}}"#)
        );
    }

    #[test]
    fn remove_uses_original_positions_and_ignores_missing_paths() {
        let before =
            r#"{"l": {"L": [{"S": "a"}, {"S": "b"}, {"S": "c"}, {"S": "d"}]}, "k": {"S": "k"}}"#;
        assert_eq!(
            after("REMOVE l[0], l[2], l[17], k, nope", before),
            item(r#"{"l": {"L": [{"S": "b"}, {"S": "d"}]}}"#)
        );
    }

    #[test]
    fn add_numbers_and_sets() {
        assert_eq!(after("ADD n :two", "{}"), item(r#"{"n": {"N": "2"}}"#));
        assert_eq!(
            after("ADD n :two", r#"{"n": {"N": "1"}}"#),
            item(r#"{"n": {"N": "3"}}"#)
        );
        let union = after("ADD s :bc", r#"{"s": {"SS": ["a", "b"]}}"#);
        assert_eq!(union, item(r#"{"s": {"SS": ["a", "b", "c"]}}"#));
        assert_eq!(
            after("ADD s :n12", "{}"),
            item(r#"{"s": {"NS": ["1", "2"]}}"#)
        );
        assert_eq!(
            message(apply("ADD s :n12", &item(r#"{"s": {"SS": ["a"]}}"#))),
            "An operand in the update expression has an incorrect data type"
        );
        assert_eq!(
            message(apply("ADD n :one", &item(r#"{"n": {"S": "1"}}"#))),
            "An operand in the update expression has an incorrect data type"
        );
    }

    #[test]
    fn delete_removes_members_and_empty_sets() {
        assert_eq!(
            after("DELETE s :bc", r#"{"s": {"SS": ["a", "b"]}}"#),
            item(r#"{"s": {"SS": ["a"]}}"#)
        );
        assert_eq!(
            after("DELETE s :ab", r#"{"s": {"SS": ["a", "b"]}}"#),
            Item::new()
        );
        assert_eq!(after("DELETE s :ab", "{}"), Item::new());
        assert_eq!(
            message(apply("DELETE s :ab", &item(r#"{"s": {"NS": ["1"]}}"#))),
            "An operand in the update expression has an incorrect data type"
        );
    }

    #[test]
    fn only_removes_needs_an_action_and_nothing_but_removals() {
        let maps = maps();
        assert!(maps.update("REMOVE a, b").unwrap().only_removes());
        assert!(maps.update("DELETE s :ab REMOVE a").unwrap().only_removes());
        assert!(!maps.update("REMOVE a SET b = :x").unwrap().only_removes());
        // An empty AttributeUpdates gives an update with no action: it writes the key.
        assert!(!crate::update::Update::from_actions(Vec::new()).only_removes());
    }

    #[test]
    fn touched_paths_give_updated_old_and_new() {
        let before = item(
            r#"{"a": {"M": {"c": {"L": [{"N": "1"}, {"N": "2"}, {"N": "3"}]}, "d": {"N": "1"}}}, "e": {"S": "x"}}"#,
        );
        let update = maps().update("SET a.c[1] = :x REMOVE e").unwrap();
        let outcome = update.apply(&before).unwrap();
        assert_eq!(
            extract_paths(&outcome.item, &outcome.touched_paths),
            item(r#"{"a": {"M": {"c": {"L": [{"S": "x"}]}}}}"#)
        );
        assert_eq!(
            extract_paths(&before, &outcome.touched_paths),
            item(r#"{"a": {"M": {"c": {"L": [{"N": "2"}]}}}, "e": {"S": "x"}}"#)
        );
        let names: Vec<&str> = update.touched_top_level_attributes().into_iter().collect();
        assert_eq!(names, vec!["a", "e"]);
    }

    #[test]
    fn the_original_item_is_untouched() {
        let before = item(r#"{"a": {"S": "x"}}"#);
        let outcome = apply("SET a = :y", &before).unwrap();
        assert_eq!(before.get("a"), Some(&value(r#"{"S": "x"}"#)));
        assert_eq!(outcome.item.get("a"), Some(&value(r#"{"S": "y"}"#)));
    }
}
