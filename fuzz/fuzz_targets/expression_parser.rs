//! Fuzzes the expression parser: every expression kind over arbitrary text, then evaluation
//! and update application of whatever parses. Nothing may panic.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use shoal_expr::{ConditionKind, Context, KeyAttribute, KeySchemaView, ScalarType};
use shoal_model::{AttributeValue, Item, Number};

fn placeholder_maps() -> (BTreeMap<String, String>, BTreeMap<String, AttributeValue>) {
    let names = BTreeMap::from([
        ("#a".to_string(), "a".to_string()),
        ("#r".to_string(), "status".to_string()),
    ]);
    let values = BTreeMap::from([
        (":n".to_string(), AttributeValue::N(Number::from_i64(3))),
        (":s".to_string(), AttributeValue::S("ab".to_string())),
        (
            ":l".to_string(),
            AttributeValue::L(vec![AttributeValue::Null]),
        ),
        (
            ":ss".to_string(),
            AttributeValue::Ss(vec!["ab".to_string()]),
        ),
        (":t".to_string(), AttributeValue::S("N".to_string())),
    ]);
    (names, values)
}

fn sample_item() -> Item {
    let nested = BTreeMap::from([(
        "b".to_string(),
        AttributeValue::L(vec![AttributeValue::Bool(true)]),
    )]);
    BTreeMap::from([
        ("a".to_string(), AttributeValue::M(nested)),
        ("status".to_string(), AttributeValue::S("open".to_string())),
        ("n".to_string(), AttributeValue::N(Number::from_i64(7))),
        (
            "tags".to_string(),
            AttributeValue::Ss(vec!["ab".to_string(), "cd".to_string()]),
        ),
    ])
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (names, values) = placeholder_maps();
    let Ok(mut context) = Context::new(Some(&names), Some(&values)) else {
        return;
    };
    let item = sample_item();
    match selector % 4 {
        0 => {
            if let Ok(condition) = context.parse_condition(&text, ConditionKind::Condition) {
                let _ = condition.evaluate(&item);
                let _ = condition.to_string();
            }
        }
        1 => {
            if let Ok(update) = context.parse_update(&text) {
                let _ = update.apply(&item);
                let _ = update.to_string();
            }
        }
        2 => {
            if let Ok(projection) = context.parse_projection(&text) {
                let _ = projection.apply(item.clone());
            }
        }
        _ => {
            let schema = KeySchemaView {
                hash_key: KeyAttribute {
                    name: "status".to_string(),
                    scalar_type: ScalarType::S,
                },
                range_key: Some(KeyAttribute {
                    name: "n".to_string(),
                    scalar_type: ScalarType::N,
                }),
            };
            let _ = context.parse_key_condition(&text, &schema);
        }
    }
    let _ = context.finish();
});
