//! Document-path operations on items: read a path, write or remove at a path, and cut out the
//! sub-document a set of paths selects (projections and UPDATED_OLD / UPDATED_NEW).

use std::collections::BTreeMap;

use shoal_model::{ApiError, AttributeValue, Item};

use crate::ast::{Path, PathElement};

pub(crate) fn invalid_update_path() -> ApiError {
    ApiError::validation(
        "The document path provided in the update expression is invalid for update",
    )
}

fn step<'v>(value: &'v AttributeValue, element: &PathElement) -> Option<&'v AttributeValue> {
    match (value, element) {
        (AttributeValue::M(map), PathElement::Attribute { name, .. }) => map.get(name),
        (AttributeValue::L(list), PathElement::Index(index)) => {
            list.get(usize::try_from(*index).ok()?)
        }
        _ => None,
    }
}

fn step_mut<'v>(
    value: &'v mut AttributeValue,
    element: &PathElement,
) -> Option<&'v mut AttributeValue> {
    match (value, element) {
        (AttributeValue::M(map), PathElement::Attribute { name, .. }) => map.get_mut(name),
        (AttributeValue::L(list), PathElement::Index(index)) => {
            list.get_mut(usize::try_from(*index).ok()?)
        }
        _ => None,
    }
}

/// The value at `path`, or `None` if any step is missing or of the wrong type.
pub fn resolve<'i>(item: &'i Item, path: &Path) -> Option<&'i AttributeValue> {
    let mut current = item.get(path.top_level_name())?;
    for element in path.elements().get(1..).unwrap_or_default() {
        current = step(current, element)?;
    }
    Some(current)
}

/// The parent container of `path`'s last step; `None` for a top-level path or a missing
/// parent.
fn parent<'i>(item: &'i Item, path: &Path) -> Option<&'i AttributeValue> {
    let elements = path.elements();
    let (_, above) = elements.split_last()?;
    let mut current = item.get(path.top_level_name())?;
    for element in above.get(1..)? {
        current = step(current, element)?;
    }
    Some(current)
}

/// Whether `path`'s last step can exist in `item`: a top-level name always can; a nested
/// step needs a parent of its kind (a map for `.name`, a list for `[n]`).
fn fits_its_parent(item: &Item, path: &Path) -> bool {
    if !path.is_nested() {
        return true;
    }
    matches!(
        (parent(item, path), path.elements().last()),
        (
            Some(AttributeValue::M(_)),
            Some(PathElement::Attribute { .. })
        ) | (Some(AttributeValue::L(_)), Some(PathElement::Index(_)))
    )
}

/// REMOVE of a nested path whose parent is missing or of the other kind is an error in
/// DynamoDB, not a no-op (only a missing last step is ignored).
pub(crate) fn check_removable(item: &Item, path: &Path) -> Result<(), ApiError> {
    if fits_its_parent(item, path) {
        Ok(())
    } else {
        Err(invalid_update_path())
    }
}

/// Whether writing `path` would append to a list: its last step is an index at or past the
/// end of an existing list.
pub(crate) fn appends(item: &Item, path: &Path) -> bool {
    match (parent(item, path), path.elements().last()) {
        (Some(AttributeValue::L(list)), Some(PathElement::Index(index))) => {
            usize::try_from(*index).map_or(true, |index| index >= list.len())
        }
        _ => false,
    }
}

/// The parent container of `path`'s last step, for writing.
fn parent_mut<'i>(item: &'i mut Item, path: &Path) -> Option<&'i mut AttributeValue> {
    let elements = path.elements();
    let mut current = item.get_mut(path.top_level_name())?;
    for element in elements
        .get(1..elements.len().saturating_sub(1))
        .unwrap_or_default()
    {
        current = step_mut(current, element)?;
    }
    Some(current)
}

/// Writes `value` at `path`. Every step but the last must exist; a list index past the end
/// appends. Returns the path actually written (an appended index is the new position).
pub(crate) fn set_at(
    item: &mut Item,
    path: &Path,
    value: AttributeValue,
) -> Result<Path, ApiError> {
    let Some(last) = path.elements().last().filter(|_| path.is_nested()) else {
        item.insert(path.top_level_name().to_string(), value);
        return Ok(path.clone());
    };
    let parent = parent_mut(item, path).ok_or_else(invalid_update_path)?;
    match (parent, last) {
        (AttributeValue::M(map), PathElement::Attribute { name, .. }) => {
            map.insert(name.clone(), value);
            Ok(path.clone())
        }
        (AttributeValue::L(list), PathElement::Index(index)) => {
            match usize::try_from(*index)
                .ok()
                .and_then(|index| list.get_mut(index))
            {
                Some(slot) => {
                    *slot = value;
                    Ok(path.clone())
                }
                None => {
                    let appended_at =
                        u32::try_from(list.len()).map_err(|_| invalid_update_path())?;
                    list.push(value);
                    Ok(path.with_last_index(appended_at))
                }
            }
        }
        _ => Err(invalid_update_path()),
    }
}

/// Removes what `path` addresses; a missing path (or a list index past the end) is a no-op.
pub(crate) fn remove_at(item: &mut Item, path: &Path) -> Option<AttributeValue> {
    let Some(last) = path.elements().last().filter(|_| path.is_nested()) else {
        return item.remove(path.top_level_name());
    };
    match (parent_mut(item, path)?, last) {
        (AttributeValue::M(map), PathElement::Attribute { name, .. }) => map.remove(name),
        (AttributeValue::L(list), PathElement::Index(index)) => {
            let index = usize::try_from(*index).ok()?;
            (index < list.len()).then(|| list.remove(index))
        }
        _ => None,
    }
}

/// A partial copy of a document while paths are being extracted.
enum Selection {
    /// The whole value at this place.
    Whole(AttributeValue),
    Map(BTreeMap<String, Selection>),
    /// Selected list elements by original position; emitted in position order.
    List(BTreeMap<u32, Selection>),
}

impl Selection {
    fn into_value(self) -> AttributeValue {
        match self {
            Selection::Whole(value) => value,
            Selection::Map(entries) => AttributeValue::M(
                entries
                    .into_iter()
                    .map(|(name, selection)| (name, selection.into_value()))
                    .collect(),
            ),
            Selection::List(elements) => {
                AttributeValue::L(elements.into_values().map(Selection::into_value).collect())
            }
        }
    }

    /// Records that `rest` (below this place) holds `value`.
    fn insert(&mut self, rest: &[PathElement], value: &AttributeValue) {
        let Some((element, deeper)) = rest.split_first() else {
            *self = Selection::Whole(value.clone());
            return;
        };
        let child = match (&mut *self, element) {
            // Already selected whole: the deeper path adds nothing.
            (Selection::Whole(_), _) => return,
            (Selection::Map(entries), PathElement::Attribute { name, .. }) => entries
                .entry(name.clone())
                .or_insert_with(|| Selection::empty_for(deeper)),
            (Selection::List(elements), PathElement::Index(index)) => elements
                .entry(*index)
                .or_insert_with(|| Selection::empty_for(deeper)),
            // A map and a list step at the same place cannot both exist in one document.
            _ => return,
        };
        child.insert(deeper, value);
    }

    /// An empty container for the step that follows (or a placeholder leaf).
    fn empty_for(rest: &[PathElement]) -> Selection {
        match rest.first() {
            Some(PathElement::Index(_)) => Selection::List(BTreeMap::new()),
            Some(PathElement::Attribute { .. }) => Selection::Map(BTreeMap::new()),
            None => Selection::Whole(AttributeValue::Null),
        }
    }
}

/// The sub-document of `item` that `paths` select, keeping its shape: `a.b` yields
/// `{a: {b: …}}`, `l[1]` and `l[3]` yield `{l: [l1, l3]}`. Paths that do not exist are skipped.
pub fn extract_paths(item: &Item, paths: &[Path]) -> Item {
    let mut selected: BTreeMap<String, Selection> = BTreeMap::new();
    for path in paths {
        let Some(value) = resolve(item, path) else {
            continue;
        };
        let rest = path.elements().get(1..).unwrap_or_default();
        selected
            .entry(path.top_level_name().to_string())
            .or_insert_with(|| Selection::empty_for(rest))
            .insert(rest, value);
    }
    selected
        .into_iter()
        .map(|(name, selection)| (name, selection.into_value()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> AttributeValue {
        AttributeValue::S(text.to_string())
    }

    fn path(elements: Vec<PathElement>) -> Path {
        Path::new(elements).unwrap()
    }

    fn attr(name: &str) -> PathElement {
        PathElement::attribute(name)
    }

    fn sample_item() -> Item {
        let mut inner = BTreeMap::new();
        inner.insert(
            "b".to_string(),
            AttributeValue::L(vec![s("x"), s("y"), s("z")]),
        );
        inner.insert("c".to_string(), s("see"));
        let mut item = Item::new();
        item.insert("a".to_string(), AttributeValue::M(inner));
        item.insert("top".to_string(), s("t"));
        item
    }

    fn as_text(value: Option<&AttributeValue>) -> Option<&str> {
        match value {
            Some(AttributeValue::S(text)) => Some(text),
            _ => None,
        }
    }

    #[test]
    fn resolve_walks_maps_and_lists() {
        let item = sample_item();
        let p = path(vec![attr("a"), attr("b"), PathElement::Index(1)]);
        assert_eq!(as_text(resolve(&item, &p)), Some("y"));
        let past_end = path(vec![attr("a"), attr("b"), PathElement::Index(3)]);
        assert!(resolve(&item, &past_end).is_none());
        let wrong_type = path(vec![attr("top"), attr("x")]);
        assert!(resolve(&item, &wrong_type).is_none());
    }

    #[test]
    fn set_replaces_appends_and_rejects_missing_parents() {
        let mut item = sample_item();
        let replace = path(vec![attr("a"), attr("b"), PathElement::Index(0)]);
        assert_eq!(set_at(&mut item, &replace, s("new")).unwrap(), replace);
        assert_eq!(as_text(resolve(&item, &replace)), Some("new"));

        let far = path(vec![attr("a"), attr("b"), PathElement::Index(10)]);
        let written = set_at(&mut item, &far, s("end")).unwrap();
        assert_eq!(
            written,
            path(vec![attr("a"), attr("b"), PathElement::Index(3)])
        );
        assert_eq!(as_text(resolve(&item, &written)), Some("end"));

        let missing_parent = path(vec![attr("nope"), attr("x")]);
        let error = set_at(&mut item, &missing_parent, s("v")).unwrap_err();
        assert_eq!(
            error.message,
            "The document path provided in the update expression is invalid for update"
        );
        let not_a_map = path(vec![attr("top"), attr("x")]);
        assert!(set_at(&mut item, &not_a_map, s("v")).is_err());
    }

    #[test]
    fn remove_ignores_missing_paths() {
        let mut item = sample_item();
        let past_end = path(vec![attr("a"), attr("b"), PathElement::Index(7)]);
        assert!(remove_at(&mut item, &past_end).is_none());
        let middle = path(vec![attr("a"), attr("b"), PathElement::Index(1)]);
        assert_eq!(as_text(remove_at(&mut item, &middle).as_ref()), Some("y"));
        assert_eq!(as_text(resolve(&item, &middle)), Some("z"));
        assert!(remove_at(&mut item, &path(vec![attr("gone"), attr("x")])).is_none());
        assert!(remove_at(&mut item, &Path::top_level("top")).is_some());
        assert!(!item.contains_key("top"));
    }

    #[test]
    fn extract_keeps_shape_and_list_order() {
        let item = sample_item();
        let paths = vec![
            path(vec![attr("a"), attr("b"), PathElement::Index(2)]),
            path(vec![attr("a"), attr("b"), PathElement::Index(0)]),
            path(vec![attr("missing")]),
        ];
        let extracted = extract_paths(&item, &paths);
        assert_eq!(extracted.len(), 1);
        let Some(AttributeValue::M(a)) = extracted.get("a") else {
            panic!("expected a map, got {extracted:?}");
        };
        assert_eq!(a.len(), 1);
        let Some(AttributeValue::L(list)) = a.get("b") else {
            panic!("expected a list");
        };
        let texts: Vec<_> = list.iter().map(|v| as_text(Some(v))).collect();
        assert_eq!(texts, vec![Some("x"), Some("z")]);
    }

    #[test]
    fn extract_whole_attribute_wins_over_nested_paths() {
        let item = sample_item();
        let paths = vec![path(vec![attr("a"), attr("c")]), Path::top_level("a")];
        let extracted = extract_paths(&item, &paths);
        let Some(AttributeValue::M(a)) = extracted.get("a") else {
            panic!("expected a map");
        };
        assert_eq!(a.len(), 2);
    }
}
