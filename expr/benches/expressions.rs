//! Expression parsing and evaluation costs: a typical 5-clause update, a 3-clause filter, and
//! evaluating that filter over a ~1 KB item.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use shoal_expr::{ConditionKind, Context};
use shoal_model::{AttributeValue, Item, Number};

const UPDATE_TEXT: &str =
    "SET #count = #count + :one, title = :title, tags = list_append(tags, :more) REMOVE stale ADD visits :one DELETE labels :gone";
const FILTER_TEXT: &str =
    "#count > :one AND begins_with(title, :prefix) AND attribute_exists(tags)";

fn number(value: i64) -> AttributeValue {
    AttributeValue::N(Number::from_i64(value))
}

fn placeholder_maps() -> (BTreeMap<String, String>, BTreeMap<String, AttributeValue>) {
    let names = BTreeMap::from([("#count".to_string(), "count".to_string())]);
    let values = BTreeMap::from([
        (":one".to_string(), number(1)),
        (":title".to_string(), AttributeValue::S("hello".to_string())),
        (":more".to_string(), AttributeValue::L(vec![number(7)])),
        (
            ":gone".to_string(),
            AttributeValue::Ss(vec!["old".to_string()]),
        ),
        (":prefix".to_string(), AttributeValue::S("item".to_string())),
    ]);
    (names, values)
}

/// An item of roughly 1 KB: a few scalars, a list and a 900-byte payload.
fn one_kilobyte_item() -> Item {
    let mut item = Item::new();
    item.insert(
        "pk".to_string(),
        AttributeValue::S("partition-0001".to_string()),
    );
    item.insert("count".to_string(), number(42));
    item.insert(
        "title".to_string(),
        AttributeValue::S("item title".to_string()),
    );
    item.insert(
        "tags".to_string(),
        AttributeValue::L((0..10).map(number).collect()),
    );
    item.insert("payload".to_string(), AttributeValue::S("x".repeat(900)));
    item
}

fn bench_expressions(c: &mut Criterion) {
    let (names, values) = placeholder_maps();
    c.bench_function("parse_update_5_clauses", |b| {
        b.iter(|| {
            let mut context = Context::new(Some(&names), Some(&values)).ok()?;
            context.parse_update(black_box(UPDATE_TEXT)).ok()
        })
    });
    c.bench_function("parse_filter_3_clauses", |b| {
        b.iter(|| {
            let mut context = Context::new(Some(&names), Some(&values)).ok()?;
            context
                .parse_condition(black_box(FILTER_TEXT), ConditionKind::Filter)
                .ok()
        })
    });
    let item = one_kilobyte_item();
    let mut context = Context::new(Some(&names), Some(&values)).expect("placeholder maps");
    context
        .parse_update(UPDATE_TEXT)
        .expect("benchmark update parses");
    let filter = context
        .parse_condition(FILTER_TEXT, ConditionKind::Filter)
        .expect("benchmark filter parses");
    context.finish().expect("every placeholder is used");
    assert!(filter.evaluate(&item), "the filter matches the item");
    c.bench_function("evaluate_filter_1kb_item", |b| {
        b.iter(|| filter.evaluate(black_box(&item)))
    });
}

fn bench_partiql(c: &mut Criterion) {
    let statement = "SELECT * FROM Music WHERE Artist = 'artist04242' AND SongTitle = 'song7'";
    c.bench_function("partiql_parse_key_select", |b| {
        b.iter(|| shoal_expr::partiql::parse_statement(statement).expect("parses"))
    });
}

criterion_group!(benches, bench_expressions, bench_partiql);
criterion_main!(benches);
