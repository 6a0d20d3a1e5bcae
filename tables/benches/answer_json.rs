//! The JSON text of a BatchGetItem answer of 25 stored items (ten attributes, ~1 KB each,
//! most of it strings, as `shoal-model`'s `json_text` bench), made the two ways a read can:
//! each item decoded into an `Item` and the answer serialised, or each item's JSON written
//! straight from its stored bytes (`item_codec::item_json`, what `execute_json_text`'s
//! GetItem and BatchGetItem do) and copied into the answer.
//!
//! `cargo bench -p shoal-tables --bench answer_json`

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shoal_model::json_text::{self, RawJson};
use shoal_model::{AttributeValue, Item};
use shoal_tables::core::item_codec::{decode_item, encode_item, item_json};

fn stored_items() -> Vec<Vec<u8>> {
    (0..25)
        .map(|n| {
            let mut item = Item::new();
            item.insert("pk".into(), AttributeValue::S(format!("user#{n}")));
            item.insert(
                "sk".into(),
                AttributeValue::N(n.to_string().parse().expect("a number")),
            );
            for field in 0..8 {
                item.insert(format!("field{field}"), AttributeValue::S("x".repeat(120)));
            }
            encode_item(&item)
        })
        .collect()
}

/// `{"Responses":{"bench":[items]}}`.
fn answer<T>(items: Vec<T>) -> BTreeMap<&'static str, BTreeMap<&'static str, Vec<T>>> {
    [("Responses", [("bench", items)].into_iter().collect())]
        .into_iter()
        .collect()
}

fn decoded(stored: &[Vec<u8>]) -> Vec<u8> {
    let items: Vec<Item> = stored
        .iter()
        .map(|bytes| decode_item(bytes).expect("decodes"))
        .collect();
    json_text::to_vec(&answer(items)).expect("written")
}

fn transcoded(stored: &[Vec<u8>]) -> Vec<u8> {
    let items: Vec<(String, u64)> = stored
        .iter()
        .map(|bytes| item_json(bytes).expect("transcodes"))
        .collect();
    let raw: Vec<RawJson<'_>> = items.iter().map(|(json, _)| RawJson(json)).collect();
    json_text::to_vec(&answer(raw)).expect("written")
}

fn bench_answer(c: &mut Criterion) {
    let stored = stored_items();
    let bytes = decoded(&stored);
    assert_eq!(transcoded(&stored), bytes);
    let mut group = c.benchmark_group("batch_get_answer_from_stored_25x1KB");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("decode_then_serialise", |b| b.iter(|| decoded(&stored)));
    group.bench_function("item_json", |b| b.iter(|| transcoded(&stored)));
    group.finish();
}

criterion_group!(benches, bench_answer);
criterion_main!(benches);
