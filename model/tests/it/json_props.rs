//! The direct `Serialize` of AttributeValue writes exactly the JSON `to_json` builds, and
//! what it writes decodes back to the same value.

use proptest::prelude::*;
use shoal_model::{AttributeValue, Number};
use std::collections::BTreeMap;

fn number() -> impl Strategy<Value = Number> {
    (any::<bool>(), 0u128..1_000_000_000_000, -20i32..20)
        .prop_filter_map("in range", |(negative, m, e)| {
            Number::from_parts(negative, m, e).filter(|n| n.check_range().is_ok())
        })
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z]{1,6}", "[\"\\\\\u{0}\u{1f}é✓ ]{1,4}"]
}

fn scalar() -> impl Strategy<Value = AttributeValue> {
    prop_oneof![
        any::<String>().prop_map(AttributeValue::S),
        "[\"\\\\\u{0}\u{7f}\u{2028}é]{0,6}".prop_map(AttributeValue::S),
        number().prop_map(AttributeValue::N),
        prop::collection::vec(any::<u8>(), 0..10).prop_map(AttributeValue::B),
        any::<bool>().prop_map(AttributeValue::Bool),
        Just(AttributeValue::Null),
        prop::collection::btree_set(name(), 1..4)
            .prop_map(|set| AttributeValue::Ss(set.into_iter().collect())),
        // Sets hold distinct members (DynamoDB rejects duplicates).
        prop::collection::btree_set(number(), 1..4)
            .prop_map(|set| AttributeValue::Ns(set.into_iter().collect())),
        prop::collection::btree_set(prop::collection::vec(any::<u8>(), 0..5), 1..4)
            .prop_map(|set| AttributeValue::Bs(set.into_iter().collect())),
    ]
}

fn value() -> impl Strategy<Value = AttributeValue> {
    scalar().prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(AttributeValue::L),
            prop::collection::btree_map(name(), inner, 0..4)
                .prop_map(|members: BTreeMap<String, AttributeValue>| AttributeValue::M(members)),
        ]
    })
}

proptest! {
    #[test]
    fn serialize_writes_what_to_json_builds(value in value()) {
        let direct = serde_json::to_string(&value).unwrap();
        let via_tree = value.to_json().to_string();
        prop_assert_eq!(&direct, &via_tree);
        let reparsed: serde_json::Value = serde_json::from_str(&direct).unwrap();
        prop_assert_eq!(AttributeValue::from_json(&reparsed).unwrap(), value);
    }
}
