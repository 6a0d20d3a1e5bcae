//! Evaluating a condition against an item (SPEC §3.4).
//!
//! Rules: values of different types never compare (the comparison is false); an order
//! comparison with a missing operand is false while `<>` with a missing operand is true;
//! `size()` of a number, boolean or null makes any comparison using it false. A condition on a
//! missing item is evaluated against an empty item.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeSet;

use shoal_model::{AttributeValue, Item, Number};

use crate::ast::{Comparator, Condition, Operand, Path};
use crate::document::resolve;

/// What an operand evaluates to.
enum Evaluated<'i> {
    Present(Cow<'i, AttributeValue>),
    /// The path does not exist in the item.
    Missing,
    /// `size()` of a type without a size: every comparison with it fails.
    Unsized,
}

/// Orders two values of the same scalar type (S by UTF-8 bytes, N numerically, B by unsigned
/// bytes); `None` for different types or non-scalars.
pub fn compare_scalars(left: &AttributeValue, right: &AttributeValue) -> Option<Ordering> {
    match (left, right) {
        (AttributeValue::S(a), AttributeValue::S(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (AttributeValue::N(a), AttributeValue::N(b)) => Some(a.cmp(b)),
        (AttributeValue::B(a), AttributeValue::B(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// `size()` as DynamoDB defines it: the length of an S (in UTF-16 code units, as Java's
/// `String.length()` counts and dynalite's captured answers show: `size` of "abÿ" is 3),
/// bytes of a B, entries of sets, lists and maps.
pub(crate) fn size_of(value: &AttributeValue) -> Option<usize> {
    match value {
        AttributeValue::S(text) => Some(text.encode_utf16().count()),
        AttributeValue::B(bytes) => Some(bytes.len()),
        AttributeValue::Ss(members) => Some(members.len()),
        AttributeValue::Ns(members) => Some(members.len()),
        AttributeValue::Bs(members) => Some(members.len()),
        AttributeValue::L(elements) => Some(elements.len()),
        AttributeValue::M(entries) => Some(entries.len()),
        AttributeValue::N(_) | AttributeValue::Bool(_) | AttributeValue::Null => None,
    }
}

fn evaluate_operand<'i>(operand: &'i Operand, item: &'i Item) -> Evaluated<'i> {
    match operand {
        Operand::Path(path) => match resolve(item, path) {
            Some(value) => Evaluated::Present(Cow::Borrowed(value)),
            None => Evaluated::Missing,
        },
        Operand::Value(value) => Evaluated::Present(Cow::Borrowed(&value.value)),
        Operand::Size(inner) => match evaluate_operand(inner, item) {
            Evaluated::Present(value) => {
                match size_of(&value).and_then(|size| i64::try_from(size).ok()) {
                    Some(size) => {
                        Evaluated::Present(Cow::Owned(AttributeValue::N(Number::from_i64(size))))
                    }
                    None => Evaluated::Unsized,
                }
            }
            other => other,
        },
    }
}

fn compare(left: &Evaluated<'_>, comparator: Comparator, right: &Evaluated<'_>) -> bool {
    match (left, right) {
        (Evaluated::Unsized, _) | (_, Evaluated::Unsized) => false,
        (Evaluated::Present(left), Evaluated::Present(right)) => match comparator {
            Comparator::Eq => left == right,
            Comparator::Ne => left != right,
            ordered => match compare_scalars(left, right) {
                None => false,
                Some(ordering) => match ordered {
                    Comparator::Lt => ordering == Ordering::Less,
                    Comparator::Le => ordering != Ordering::Greater,
                    Comparator::Gt => ordering == Ordering::Greater,
                    Comparator::Ge => ordering != Ordering::Less,
                    Comparator::Eq | Comparator::Ne => false,
                },
            },
        },
        // A missing operand equals nothing and orders with nothing.
        _ => comparator == Comparator::Ne,
    }
}

fn begins_with(value: &AttributeValue, prefix: &AttributeValue) -> bool {
    match (value, prefix) {
        (AttributeValue::S(text), AttributeValue::S(prefix)) => text.starts_with(prefix.as_str()),
        (AttributeValue::B(bytes), AttributeValue::B(prefix)) => bytes.starts_with(prefix),
        _ => false,
    }
}

fn contains(container: &AttributeValue, member: &AttributeValue) -> bool {
    match (container, member) {
        (AttributeValue::S(text), AttributeValue::S(part)) => text.contains(part.as_str()),
        // A byte substring, as for strings (an empty operand is contained in anything).
        (AttributeValue::B(bytes), AttributeValue::B(part)) => {
            part.is_empty()
                || bytes
                    .windows(part.len())
                    .any(|window| window == part.as_slice())
        }
        (AttributeValue::Ss(members), AttributeValue::S(wanted)) => members.contains(wanted),
        // Numbers are kept normalised, so structural equality is numeric equality.
        (AttributeValue::Ns(members), AttributeValue::N(wanted)) => members.contains(wanted),
        (AttributeValue::Bs(members), AttributeValue::B(wanted)) => members.contains(wanted),
        (AttributeValue::L(elements), wanted) => elements.iter().any(|element| element == wanted),
        _ => false,
    }
}

impl Condition {
    /// Whether `item` satisfies the condition (pass an empty item for a missing one).
    pub fn evaluate(&self, item: &Item) -> bool {
        match self {
            Condition::Compare {
                left,
                comparator,
                right,
            } => compare(
                &evaluate_operand(left, item),
                *comparator,
                &evaluate_operand(right, item),
            ),
            Condition::Between { value, low, high } => {
                let value = evaluate_operand(value, item);
                compare(&value, Comparator::Ge, &evaluate_operand(low, item))
                    && compare(&value, Comparator::Le, &evaluate_operand(high, item))
            }
            Condition::In { value, candidates } => {
                let value = evaluate_operand(value, item);
                candidates.iter().any(|candidate| {
                    compare(&value, Comparator::Eq, &evaluate_operand(candidate, item))
                })
            }
            Condition::AttributeExists(path) => resolve(item, path).is_some(),
            Condition::AttributeNotExists(path) => resolve(item, path).is_none(),
            Condition::AttributeType { value, type_name } => {
                match (evaluate_operand(value, item), &type_name.value) {
                    (Evaluated::Present(value), AttributeValue::S(wanted)) => {
                        value.type_name() == wanted
                    }
                    _ => false,
                }
            }
            Condition::BeginsWith { value, prefix } => {
                match (
                    evaluate_operand(value, item),
                    evaluate_operand(prefix, item),
                ) {
                    (Evaluated::Present(value), Evaluated::Present(prefix)) => {
                        begins_with(&value, &prefix)
                    }
                    _ => false,
                }
            }
            Condition::Contains { container, member } => {
                match (
                    evaluate_operand(container, item),
                    evaluate_operand(member, item),
                ) {
                    (Evaluated::Present(container), Evaluated::Present(member)) => {
                        contains(&container, &member)
                    }
                    _ => false,
                }
            }
            Condition::And(left, right) => left.evaluate(item) && right.evaluate(item),
            Condition::Or(left, right) => left.evaluate(item) || right.evaluate(item),
            Condition::Not(inner) => !inner.evaluate(item),
        }
    }

    /// Every document path the condition reads.
    pub fn paths(&self) -> Vec<&Path> {
        let mut paths = Vec::new();
        self.collect_paths(&mut paths);
        paths
    }

    /// The top-level attributes the condition reads (Query rejects filters on key
    /// attributes; index queries check the filter only uses projected attributes).
    pub fn referenced_top_level_attributes(&self) -> BTreeSet<&str> {
        self.paths().into_iter().map(Path::top_level_name).collect()
    }

    fn collect_paths<'c>(&'c self, paths: &mut Vec<&'c Path>) {
        fn operand<'c>(read: &'c Operand, paths: &mut Vec<&'c Path>) {
            match read {
                Operand::Path(path) => paths.push(path),
                Operand::Size(inner) => operand(inner, paths),
                Operand::Value(_) => {}
            }
        }
        match self {
            Condition::Compare { left, right, .. } => {
                operand(left, paths);
                operand(right, paths);
            }
            Condition::Between { value, low, high } => {
                operand(value, paths);
                operand(low, paths);
                operand(high, paths);
            }
            Condition::In { value, candidates } => {
                operand(value, paths);
                for candidate in candidates {
                    operand(candidate, paths);
                }
            }
            Condition::AttributeExists(path) | Condition::AttributeNotExists(path) => {
                paths.push(path)
            }
            Condition::AttributeType { value, .. } => operand(value, paths),
            Condition::BeginsWith { value, prefix } => {
                operand(value, paths);
                operand(prefix, paths);
            }
            Condition::Contains { container, member } => {
                operand(container, paths);
                operand(member, paths);
            }
            Condition::And(left, right) | Condition::Or(left, right) => {
                left.collect_paths(paths);
                right.collect_paths(paths);
            }
            Condition::Not(inner) => inner.collect_paths(paths),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{item, Maps};
    use shoal_model::Item;

    fn maps() -> Maps {
        Maps::new(
            r##"{"#s": "status"}"##,
            r#"{":n9": {"N": "9"}, ":n10": {"N": "10"}, ":n1e1": {"N": "1e1"}, ":zero": {"N": "0"},
                ":five": {"N": "5"}, ":three": {"N": "3"}, ":two": {"N": "2"},
                ":s1": {"S": "1"}, ":hel": {"S": "hel"}, ":ell": {"S": "ell"}, ":hello": {"S": "hello"},
                ":b01": {"B": "AQ=="}, ":bff": {"B": "/w=="}, ":x": {"S": "x"}, ":one": {"N": "1"},
                ":tS": {"S": "S"}, ":tN": {"S": "N"}, ":map": {"M": {"k": {"S": "v"}}},
                ":b0102": {"B": "AQI="}, ":b0201": {"B": "AgE="}}"#,
        )
    }

    fn sample() -> Item {
        item(
            r#"{"n": {"N": "10"}, "s": {"S": "hello"}, "b": {"B": "/wE="}, "bb": {"B": "AAECAw=="},
                "u": {"S": "abÿ"}, "e": {"S": "a😀"},
                "ss": {"SS": ["x", "y"]}, "ns": {"NS": ["1", "2"]}, "bs": {"BS": ["AQ=="]},
                "l": {"L": [{"S": "x"}, {"N": "1"}, {"M": {"k": {"S": "v"}}}]},
                "m": {"M": {"a": {"N": "1"}, "b": {"L": [{"N": "5"}]}, "c": {"NULL": true}}},
                "t": {"BOOL": true}, "z": {"NULL": true}, "status": {"S": "open"}}"#,
        )
    }

    /// Evaluates `text` over the sample item.
    fn holds(text: &str) -> bool {
        let condition = maps()
            .condition(text)
            .unwrap_or_else(|error| panic!("{text}: {error}"));
        condition.evaluate(&sample())
    }

    #[test]
    fn numbers_compare_by_value_strings_and_binary_by_bytes() {
        assert!(holds("n > :n9"), "10 > 9 numerically, not as text");
        assert!(holds("n = :n1e1"));
        assert!(holds("n >= :n10 AND n <= :n10 AND NOT n < :n10"));
        assert!(holds("s > :hel"));
        assert!(holds("b > :b01"), "0xFF01 > 0x01 as unsigned bytes");
        assert!(!holds("b < :bff"), "0xFF01 is longer than 0xFF, so greater");
    }

    #[test]
    fn different_types_never_compare() {
        assert!(!holds("n = :s1"));
        assert!(holds("n <> :s1"));
        assert!(!holds("n < :s1"));
        assert!(!holds("n > :s1"));
        assert!(!holds("t = :one"));
    }

    #[test]
    fn missing_operands() {
        assert!(!holds("absent_attr = :one"));
        assert!(!holds("absent_attr < :one"));
        assert!(!holds("absent_attr >= :one"));
        assert!(holds("absent_attr <> :one"));
        assert!(!holds("absent_attr BETWEEN :zero AND :one"));
        assert!(!holds("absent_attr IN (:one, :two)"));
        assert!(!holds("begins_with(absent_attr, :hel)"));
        assert!(!holds("contains(absent_attr, :x)"));
        assert!(!holds("m.nope.deeper = :one"));
    }

    #[test]
    fn contains_finds_a_byte_substring_of_a_binary() {
        assert!(holds("contains(bb, :b0102)"), "00 01 02 03 holds 01 02");
        assert!(!holds("contains(bb, :b0201)"));
        assert!(holds("contains(b, :b01)"), "ff 01 holds 01");
        assert!(!holds("contains(s, :b01)"), "a string never holds a binary");
    }

    #[test]
    fn size_of_a_string_counts_utf16_code_units() {
        assert!(holds("size(u) = :three"), "abÿ: 3 characters, 4 bytes");
        assert!(
            holds("size(e) = :three"),
            "a + an emoji: 3 UTF-16 code units"
        );
    }

    #[test]
    fn size_of_each_type() {
        assert!(holds("size(s) = :five"), "hello has 5 bytes");
        assert!(holds("size(b) = :two"));
        assert!(holds(
            "size(ss) = :two AND size(ns) = :two AND size(bs) = :one"
        ));
        assert!(holds("size(l) = :three AND size(m) = :three"));
        assert!(!holds("size(n) >= :zero"), "numbers have no size");
        assert!(
            !holds("size(n) <> :zero"),
            "a failed size fails the comparison"
        );
        assert!(!holds("size(t) = :one OR size(z) = :one"));
        assert!(!holds("size(absent_attr) = :zero"));
    }

    #[test]
    fn existence_and_type_functions_follow_document_paths() {
        assert!(holds("attribute_exists(m.b[0])"));
        assert!(!holds("attribute_exists(m.b[1])"));
        assert!(holds(
            "attribute_not_exists(m.b[1]) AND attribute_not_exists(n.x)"
        ));
        assert!(holds("attribute_exists(m.c)"), "NULL values exist");
        assert!(holds("attribute_type(s, :tS) AND attribute_type(n, :tN)"));
        assert!(!holds("attribute_type(s, :tN)"));
        assert!(!holds("attribute_type(absent_attr, :tS)"));
    }

    #[test]
    fn begins_with_and_contains() {
        assert!(holds("begins_with(s, :hel)"));
        assert!(!holds("begins_with(s, :ell)"));
        assert!(holds("begins_with(b, :bff)"));
        assert!(holds("contains(s, :ell)"));
        assert!(holds("contains(ss, :x)"));
        assert!(!holds("contains(ss, :hel)"));
        assert!(holds("contains(ns, :one)"));
        assert!(holds(
            "contains(l, :x) AND contains(l, :one) AND contains(l, :map)"
        ));
        assert!(!holds("contains(m, :x)"));
        assert!(!holds("contains(n, :one)"));
    }

    #[test]
    fn between_in_and_logic() {
        assert!(holds("n BETWEEN :n9 AND :n10"));
        assert!(holds("n BETWEEN :n10 AND :n10"), "bounds are inclusive");
        assert!(!holds("n BETWEEN :zero AND :n9"));
        assert!(holds("n IN (:one, :n1e1)"));
        assert!(!holds("n IN (:one, :two)"));
        assert!(holds("n = :one OR s = :hello"));
        assert!(!holds("n = :one AND s = :hello"));
        assert!(holds("NOT (n = :one AND s = :hello)"));
        assert!(holds("#s = :x OR attribute_exists(#s)"));
    }

    #[test]
    fn conditions_on_a_absent_attr_item_see_an_empty_item() {
        let condition = maps().condition("attribute_not_exists(pk)").unwrap();
        assert!(condition.evaluate(&Item::new()));
        let condition = maps().condition("n = :one").unwrap();
        assert!(!condition.evaluate(&Item::new()));
    }

    #[test]
    fn referenced_top_level_attributes_lists_every_path() {
        let condition = maps()
            .condition("m.a = :one AND (size(l) > :one OR contains(#s, :x)) AND NOT attribute_exists(q[0])")
            .unwrap();
        let names: Vec<&str> = condition
            .referenced_top_level_attributes()
            .into_iter()
            .collect();
        assert_eq!(names, vec!["l", "m", "q", "status"]);
    }
}
