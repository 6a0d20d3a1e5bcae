//! Item size as DynamoDB counts it (SPEC §1.3), and the per-item limits: 400 KB and 32
//! nesting levels.

use crate::error::ApiError;
use crate::value::{AttributeValue, Item};

/// Largest item DynamoDB stores: 400 KB.
pub const ITEM_SIZE_BYTES_MAX: usize = 409_600;
/// Deepest nesting allowed, counting the top-level attribute as level 1: a scalar inside
/// 31 maps is at level 32 (accepted), inside 32 maps at level 33 (rejected).
pub const NESTING_LEVELS_MAX: usize = 32;

pub const ITEM_TOO_LARGE_MESSAGE: &str = "Item size has exceeded the maximum allowed size";
pub const UPDATED_ITEM_TOO_LARGE_MESSAGE: &str =
    "Item size to update has exceeded the maximum allowed size";
pub const NESTING_MESSAGE: &str = "Nesting Levels have exceeded supported limits: \
     Attributes in the item have nested levels beyond supported limit";

/// Longest attribute name (SPEC §1.3: 65,536 bytes are refused).
pub const ATTRIBUTE_NAME_BYTES_MAX: usize = 65_535;
pub const EMPTY_ATTRIBUTE_NAME_MESSAGE: &str =
    "One or more parameter values were invalid: Empty attribute name";
pub const ATTRIBUTE_NAME_TOO_LONG_MESSAGE: &str =
    "One or more parameter values were invalid: Attribute name is longer than 65535 bytes";

/// Checks the name of an item's attribute: 1..65535 bytes (SPEC §1.3).
pub fn check_attribute_name(name: &str) -> Result<(), ApiError> {
    if name.is_empty() {
        Err(ApiError::validation(EMPTY_ATTRIBUTE_NAME_MESSAGE))
    } else if name.len() > ATTRIBUTE_NAME_BYTES_MAX {
        Err(ApiError::validation(ATTRIBUTE_NAME_TOO_LONG_MESSAGE))
    } else {
        Ok(())
    }
}

/// Fixed cost of a map or list, on top of its elements.
pub const CONTAINER_OVERHEAD_BYTES: usize = 3;
/// Extra cost of each element of a map or list.
pub const ELEMENT_OVERHEAD_BYTES: usize = 1;

impl AttributeValue {
    /// Bytes this value counts for in item size (SPEC §1.3): S by UTF-8 length, B by
    /// decoded length, N by the number rule, BOOL/NULL 1, M/L 3 + 1 per element + the
    /// elements (and map keys), sets the sum of their members.
    ///
    /// Recursion depth is the value's nesting depth, which decoding and
    /// `check_item_limits` keep to about 32.
    pub fn size_bytes(&self) -> usize {
        match self {
            AttributeValue::S(text) => text.len(),
            AttributeValue::N(number) => number.byte_size(),
            AttributeValue::B(bytes) => bytes.len(),
            AttributeValue::Bool(_) | AttributeValue::Null => 1,
            AttributeValue::M(members) => {
                CONTAINER_OVERHEAD_BYTES
                    + members
                        .iter()
                        .map(|(name, value)| {
                            ELEMENT_OVERHEAD_BYTES + name.len() + value.size_bytes()
                        })
                        .sum::<usize>()
            }
            AttributeValue::L(elements) => {
                CONTAINER_OVERHEAD_BYTES
                    + elements
                        .iter()
                        .map(|value| ELEMENT_OVERHEAD_BYTES + value.size_bytes())
                        .sum::<usize>()
            }
            AttributeValue::Ss(members) => members.iter().map(String::len).sum(),
            AttributeValue::Ns(members) => members.iter().map(|number| number.byte_size()).sum(),
            AttributeValue::Bs(members) => members.iter().map(Vec::len).sum(),
        }
    }

    /// Nesting levels of this value: 1 for a scalar or set (and an empty map or list), one
    /// more than the deepest element for a map or list.
    pub fn nesting_depth(&self) -> usize {
        let deepest_element = match self {
            AttributeValue::M(members) => members.values().map(AttributeValue::nesting_depth).max(),
            AttributeValue::L(elements) => elements.iter().map(AttributeValue::nesting_depth).max(),
            _ => return 1,
        };
        1 + deepest_element.unwrap_or(0)
    }
}

/// Item size: Σ over attributes of (UTF-8 length of the name + size of the value).
pub fn item_size_bytes(item: &Item) -> usize {
    attributes_size_bytes(item.iter().map(|(name, value)| (name.as_str(), value)))
}

/// [`item_size_bytes`] of an item given as its (name, value) pairs, e.g. borrowed ones.
pub fn attributes_size_bytes<'a>(
    attributes: impl IntoIterator<Item = (&'a str, &'a AttributeValue)>,
) -> usize {
    attributes
        .into_iter()
        .map(|(name, value)| name.len() + value.size_bytes())
        .sum()
}

/// Checks DynamoDB's per-item limits: attribute names (1..65535 bytes), nesting (32
/// levels), then size (409,600 bytes). `for_update` picks UpdateItem's size message; Put,
/// BatchWriteItem and transaction Puts use the other one.
pub fn check_item_limits(item: &Item, for_update: bool) -> Result<(), ApiError> {
    for name in item.keys() {
        check_attribute_name(name)?;
    }
    if item
        .values()
        .any(|value| value.nesting_depth() > NESTING_LEVELS_MAX)
    {
        return Err(ApiError::validation(NESTING_MESSAGE));
    }
    if item_size_bytes(item) > ITEM_SIZE_BYTES_MAX {
        let message = if for_update {
            UPDATED_ITEM_TOO_LARGE_MESSAGE
        } else {
            ITEM_TOO_LARGE_MESSAGE
        };
        return Err(ApiError::validation(message));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::number::Number;

    fn s(text: &str) -> AttributeValue {
        AttributeValue::S(text.to_string())
    }

    fn n(text: &str) -> AttributeValue {
        AttributeValue::N(Number::parse(text).unwrap())
    }

    #[test]
    fn scalar_sizes() {
        assert_eq!(s("héllo").size_bytes(), 6);
        assert_eq!(s("").size_bytes(), 0);
        assert_eq!(AttributeValue::B(vec![0; 5]).size_bytes(), 5);
        assert_eq!(AttributeValue::Bool(false).size_bytes(), 1);
        assert_eq!(AttributeValue::Null.size_bytes(), 1);
        assert_eq!(n("3.14159").size_bytes(), 5);
    }

    #[test]
    fn container_and_set_sizes() {
        assert_eq!(AttributeValue::M(BTreeMap::new()).size_bytes(), 3);
        assert_eq!(AttributeValue::L(vec![]).size_bytes(), 3);
        // 3 + (1 + "ab" + "xyz") + (1 + "c" + NULL)
        let map = AttributeValue::M(BTreeMap::from([
            ("ab".to_string(), s("xyz")),
            ("c".to_string(), AttributeValue::Null),
        ]));
        assert_eq!(map.size_bytes(), 3 + (1 + 2 + 3) + (1 + 1 + 1));
        // 3 + (1 + 2) + (1 + map)
        let list = AttributeValue::L(vec![n("12"), map.clone()]);
        assert_eq!(list.size_bytes(), 3 + 3 + 1 + map.size_bytes());
        assert_eq!(
            AttributeValue::Ss(vec!["ab".into(), "c".into()]).size_bytes(),
            3
        );
        assert_eq!(
            AttributeValue::Ns(vec![
                Number::parse("1").unwrap(),
                Number::parse("-42").unwrap()
            ])
            .size_bytes(),
            5
        );
        assert_eq!(AttributeValue::Bs(vec![vec![1, 2], vec![]]).size_bytes(), 2);
    }

    #[test]
    fn item_size_counts_names() {
        let item = Item::from([
            ("pk".to_string(), s("abc")),
            ("count".to_string(), n("100")),
        ]);
        assert_eq!(item_size_bytes(&item), 2 + 3 + 5 + 2);
    }

    #[test]
    fn size_limit_is_409600_bytes() {
        let item_of_size = |size: usize| Item::from([("a".to_string(), s(&"x".repeat(size - 1)))]);
        let largest = item_of_size(409_600);
        assert_eq!(item_size_bytes(&largest), 409_600);
        assert!(check_item_limits(&largest, false).is_ok());
        let too_large = item_of_size(409_601);
        assert_eq!(
            check_item_limits(&too_large, false).unwrap_err().message,
            ITEM_TOO_LARGE_MESSAGE
        );
        assert_eq!(
            check_item_limits(&too_large, true).unwrap_err().message,
            UPDATED_ITEM_TOO_LARGE_MESSAGE
        );
    }

    fn wrapped_in_maps(wraps: usize) -> AttributeValue {
        let mut value = s("leaf");
        for _ in 0..wraps {
            value = AttributeValue::M(BTreeMap::from([("n".to_string(), value)]));
        }
        value
    }

    #[test]
    fn nesting_limit_is_32_levels() {
        assert_eq!(s("x").nesting_depth(), 1);
        assert_eq!(AttributeValue::L(vec![]).nesting_depth(), 1);
        assert_eq!(wrapped_in_maps(31).nesting_depth(), 32);
        let ok = Item::from([("deep".to_string(), wrapped_in_maps(31))]);
        assert!(check_item_limits(&ok, false).is_ok());
        let too_deep = Item::from([("deep".to_string(), wrapped_in_maps(32))]);
        assert_eq!(
            check_item_limits(&too_deep, true).unwrap_err().message,
            NESTING_MESSAGE
        );
    }
}
