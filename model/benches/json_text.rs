//! The JSON text of a BatchGetItem-sized answer (25 items of ten attributes, ~1 KB each,
//! most of it strings) written by serde_json and by `shoal_model::json_text`.
//!
//! `cargo bench -p shoal-model --bench json_text`

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shoal_model::{AttributeValue, Item};

fn answer() -> BTreeMap<String, BTreeMap<String, Vec<Item>>> {
    let items = (0..25)
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
            item
        })
        .collect();
    let responses = [("bench".to_string(), items)].into_iter().collect();
    [("Responses".to_string(), responses)].into_iter().collect()
}

fn bench_answer(c: &mut Criterion) {
    let answer = answer();
    let bytes = serde_json::to_vec(&answer).expect("written");
    assert_eq!(
        shoal_model::json_text::to_vec(&answer).expect("written"),
        bytes
    );
    let mut group = c.benchmark_group("batch_get_answer_25x1KB");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("serde_json", |b| b.iter(|| serde_json::to_vec(&answer)));
    group.bench_function("json_text", |b| {
        b.iter(|| shoal_model::json_text::to_vec(&answer))
    });
    group.finish();
}

criterion_group!(benches, bench_answer);
criterion_main!(benches);
