//! Property tests: printed expressions parse back to the same tree, and parsing, evaluating and
//! applying random expressions over random items never panics.

use std::collections::BTreeMap;

use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;
use shoal_expr::{ConditionKind, Context};
use shoal_model::{AttributeValue, Item, Number};

fn number(value: i64) -> AttributeValue {
    AttributeValue::N(Number::from_i64(value))
}

fn text(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_string())
}

/// The placeholder maps every generated expression draws from. `#x` names an attribute with a
/// dot in it, `#r` a reserved word.
fn names() -> BTreeMap<String, String> {
    [("#r", "status"), ("#x", "a.b"), ("#a", "a")]
        .into_iter()
        .map(|(placeholder, name)| (placeholder.to_string(), name.to_string()))
        .collect()
}

fn values() -> BTreeMap<String, AttributeValue> {
    [
        (":n0", number(0)),
        (":n1", number(1)),
        (":n5", number(5)),
        (":s", text("ab")),
        (":s2", text("b")),
        (":b", AttributeValue::B(vec![1, 2])),
        (":bool", AttributeValue::Bool(true)),
        (":null", AttributeValue::Null),
        (":l", AttributeValue::L(vec![number(1)])),
        (
            ":m",
            AttributeValue::M(BTreeMap::from([("a".to_string(), number(1))])),
        ),
        (
            ":ss",
            AttributeValue::Ss(vec!["ab".to_string(), "b".to_string()]),
        ),
        (
            ":ns",
            AttributeValue::Ns(vec![Number::from_i64(1), Number::from_i64(5)]),
        ),
        (":tS", text("S")),
        (":tL", text("L")),
    ]
    .into_iter()
    .map(|(placeholder, value)| (placeholder.to_string(), value))
    .collect()
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a"),
        Just("b"),
        Just("c"),
        Just("d_1"),
        Just("#r"),
        Just("#x"),
        Just("#a")
    ]
    .prop_map(str::to_string)
}

fn path() -> impl Strategy<Value = String> {
    let step = prop_oneof![
        name().prop_map(|name| format!(".{name}")),
        (0u32..4).prop_map(|index| format!("[{index}]")),
    ];
    (name(), vec(step, 0..3)).prop_map(|(first, steps)| first + &steps.concat())
}

fn value_placeholder() -> impl Strategy<Value = String> {
    proptest::sample::select(values().into_keys().collect::<Vec<_>>())
}

fn operand() -> impl Strategy<Value = String> {
    prop_oneof![
        path(),
        value_placeholder(),
        path().prop_map(|path| format!("size({path})")),
    ]
}

fn comparator() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("="),
        Just("<>"),
        Just("<"),
        Just("<="),
        Just(">"),
        Just(">=")
    ]
}

fn condition_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (operand(), comparator(), operand()).prop_map(|(l, c, r)| format!("{l} {c} {r}")),
        (operand(), operand(), operand()).prop_map(|(v, l, h)| format!("{v} BETWEEN {l} AND {h}")),
        (operand(), vec(operand(), 1..4))
            .prop_map(|(v, list)| format!("{v} IN ({})", list.join(", "))),
        path().prop_map(|p| format!("attribute_exists({p})")),
        path().prop_map(|p| format!("attribute_not_exists({p})")),
        (path(), prop_oneof![Just(":tS"), Just(":tL")])
            .prop_map(|(p, t)| format!("attribute_type({p}, {t})")),
        (operand(), operand()).prop_map(|(a, b)| format!("begins_with({a}, {b})")),
        (operand(), operand()).prop_map(|(a, b)| format!("contains({a}, {b})")),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} AND {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} OR {b}")),
            inner.clone().prop_map(|a| format!("NOT {a}")),
            inner.prop_map(|a| format!("({a})")),
        ]
    })
}

fn update_operand() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        path(),
        value_placeholder(),
        (path(), value_placeholder()).prop_map(|(p, v)| format!("if_not_exists({p}, {v})")),
    ];
    leaf.prop_recursive(2, 6, 2, |inner| {
        (inner.clone(), inner).prop_map(|(a, b)| format!("list_append({a}, {b})"))
    })
}

fn update_text() -> impl Strategy<Value = String> {
    let set_action = (path(), update_operand(), 0..3usize, update_operand()).prop_map(
        |(target, first, shape, second)| match shape {
            0 => format!("{target} = {first}"),
            1 => format!("{target} = {first} + {second}"),
            _ => format!("{target} = {first} - {second}"),
        },
    );
    let set = vec(set_action, 1..3).prop_map(|actions| format!("SET {}", actions.join(", ")));
    let remove = vec(path(), 1..3).prop_map(|paths| format!("REMOVE {}", paths.join(", ")));
    let add_value = prop_oneof![Just(":n1"), Just(":n5"), Just(":ss"), Just(":ns")];
    let add = vec((path(), add_value), 1..3).prop_map(|pairs| {
        let actions: Vec<String> = pairs.into_iter().map(|(p, v)| format!("{p} {v}")).collect();
        format!("ADD {}", actions.join(", "))
    });
    let delete_value = prop_oneof![Just(":ss"), Just(":ns")];
    let delete = vec((path(), delete_value), 1..3).prop_map(|pairs| {
        let actions: Vec<String> = pairs.into_iter().map(|(p, v)| format!("{p} {v}")).collect();
        format!("DELETE {}", actions.join(", "))
    });
    (
        proptest::option::of(set),
        proptest::option::of(remove),
        proptest::option::of(add),
        proptest::option::of(delete),
    )
        .prop_map(|(set, remove, add, delete)| {
            [set, remove, add, delete]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ")
        })
}

fn attribute_value() -> impl Strategy<Value = AttributeValue> {
    let word =
        prop_oneof![Just("ab"), Just("b"), Just(""), Just("S"), Just("L")].prop_map(str::to_string);
    let leaf = prop_oneof![
        (-3i64..8).prop_map(number),
        word.clone().prop_map(AttributeValue::S),
        vec(any::<u8>(), 0..3).prop_map(AttributeValue::B),
        any::<bool>().prop_map(AttributeValue::Bool),
        Just(AttributeValue::Null),
        btree_set(word, 1..3).prop_map(|set| AttributeValue::Ss(set.into_iter().collect())),
        btree_set(-2i64..6, 1..3)
            .prop_map(|set| AttributeValue::Ns(set.into_iter().map(Number::from_i64).collect())),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        let key =
            prop_oneof![Just("a"), Just("b"), Just("c"), Just("d_1")].prop_map(str::to_string);
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(AttributeValue::L),
            btree_map(key, inner, 0..4).prop_map(AttributeValue::M),
        ]
    })
}

fn item() -> impl Strategy<Value = Item> {
    let key = prop_oneof![
        Just("a"),
        Just("b"),
        Just("c"),
        Just("d_1"),
        Just("status"),
        Just("a.b")
    ]
    .prop_map(str::to_string);
    btree_map(key, attribute_value(), 0..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, max_global_rejects: 1_000, ..ProptestConfig::default() })]

    #[test]
    fn conditions_round_trip_through_display(source in condition_text(), item in item()) {
        let (names, values) = (names(), values());
        let mut context = Context::new(Some(&names), Some(&values)).unwrap();
        let parsed = context.parse_condition(&source, ConditionKind::Condition);
        prop_assume!(parsed.is_ok());
        let parsed = parsed.unwrap();
        let printed = parsed.to_string();
        let reparsed = context.parse_condition(&printed, ConditionKind::Filter);
        prop_assert!(reparsed.is_ok(), "{} printed as {} fails: {:?}", source, printed, reparsed);
        let reparsed = reparsed.unwrap();
        prop_assert_eq!(&parsed, &reparsed);
        prop_assert_eq!(printed, reparsed.to_string());
        // Same tree, same answer.
        prop_assert_eq!(parsed.evaluate(&item), reparsed.evaluate(&item));
    }

    #[test]
    fn updates_round_trip_and_apply_without_panicking(source in update_text(), item in item()) {
        prop_assume!(!source.is_empty());
        let (names, values) = (names(), values());
        let mut context = Context::new(Some(&names), Some(&values)).unwrap();
        let parsed = context.parse_update(&source);
        prop_assume!(parsed.is_ok());
        let parsed = parsed.unwrap();
        let printed = parsed.to_string();
        let reparsed = context.parse_update(&printed);
        prop_assert!(reparsed.is_ok(), "{} printed as {} fails: {:?}", source, printed, reparsed);
        prop_assert_eq!(&parsed, &reparsed.unwrap());
        if let Ok(outcome) = parsed.apply(&item) {
            // Paths never overlap, so a top-level SET is present afterwards and a top-level
            // REMOVE is gone.
            for action in parsed.actions() {
                match action {
                    shoal_expr::UpdateAction::Set { path, .. } if !path.is_nested() => {
                        prop_assert!(outcome.item.contains_key(path.top_level_name()));
                    }
                    shoal_expr::UpdateAction::Remove { path } if !path.is_nested() => {
                        prop_assert!(!outcome.item.contains_key(path.top_level_name()));
                    }
                    _ => {}
                }
            }
            let _ = shoal_expr::extract_paths(&outcome.item, &outcome.touched_paths);
        }
    }

    #[test]
    fn projections_round_trip_and_apply(paths in vec(path(), 1..5), item in item()) {
        let names = names();
        let mut context = Context::new(Some(&names), None).unwrap();
        let parsed = context.parse_projection(&paths.join(", "));
        prop_assume!(parsed.is_ok());
        let parsed = parsed.unwrap();
        let reparsed = context.parse_projection(&parsed.to_string()).unwrap();
        prop_assert_eq!(&parsed, &reparsed);
        let projected = parsed.apply(item.clone());
        // A projection only keeps attributes the item has.
        prop_assert!(projected.keys().all(|name| item.contains_key(name)));
        // Projections of top-level attributes keep them in place; every projection must
        // still select exactly what the general path extraction selects.
        prop_assert_eq!(projected, shoal_expr::extract_paths(&item, parsed.paths()));
    }

    #[test]
    fn arbitrary_text_never_panics(
        source in prop_oneof!["[a-z#:()\\[\\]0-9 ,.<>=_+-]{0,60}", "\\PC{0,40}"],
        item in item(),
    ) {
        let (names, values) = (names(), values());
        let mut context = Context::new(Some(&names), Some(&values)).unwrap();
        if let Ok(condition) = context.parse_condition(&source, ConditionKind::Filter) {
            let _ = condition.evaluate(&item);
        }
        if let Ok(update) = context.parse_update(&source) {
            let _ = update.apply(&item);
        }
        if let Ok(projection) = context.parse_projection(&source) {
            let _ = projection.apply(item.clone());
        }
        let _ = context.finish();
    }
}
