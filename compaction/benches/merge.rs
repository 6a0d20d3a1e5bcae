//! The cost per entry of the k-way merge a compaction runs, with the files of the level below
//! L0 given as one child each or as one [`ConcatenatingIterator`].
//!
//! The shape is an L0-to-base-level job of the sustained-ingest bench (docs/PERFORMANCE.md):
//! 8 L0 files whose random keys span the whole key range, into a base level of 24 files,
//! every one of which the L0 files overlap. The sources are in memory ([`VecIterator`]), so
//! what is timed is the merge alone, not reading or writing tables.
//!
//! Run: `cargo bench -p shoal-compaction --bench merge`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shoal_compaction::key::encode;
use shoal_compaction::{
    compare_internal, ConcatenatingIterator, EntryKind, InternalIterator, MergingIterator,
    VecIterator,
};

const L0_FILES: u64 = 8;
const LEVEL_FILES: u64 = 24;
const L0_FILE_ENTRIES: u64 = 2_000;
const LEVEL_FILE_ENTRIES: u64 = 4_000;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A 16-byte key spread uniformly (splitmix64), as the sustained bench's keys are.
fn key(n: u64) -> Vec<u8> {
    let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    let mut key = (z ^ (z >> 31)).to_be_bytes().to_vec();
    key.extend_from_slice(&n.to_be_bytes());
    key
}

fn sorted(mut entries: Entries) -> Entries {
    entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
    entries
}

/// The L0 files (each spanning the key range) and the base level's files (its sorted entries
/// cut into equal, disjoint parts).
fn inputs() -> (Vec<Entries>, Vec<Entries>) {
    let l0 = (0..L0_FILES)
        .map(|file| {
            let entries = (0..L0_FILE_ENTRIES)
                .map(|i| {
                    let n = 1_000_000 + file * L0_FILE_ENTRIES + i;
                    (encode(&key(n), 2 + file, EntryKind::Put), vec![0u8; 100])
                })
                .collect();
            sorted(entries)
        })
        .collect();
    let level = sorted(
        (0..LEVEL_FILES * LEVEL_FILE_ENTRIES)
            .map(|n| (encode(&key(n), 1, EntryKind::Put), vec![0u8; 100]))
            .collect(),
    );
    let files = level
        .chunks(LEVEL_FILE_ENTRIES as usize)
        .map(|chunk| chunk.to_vec())
        .collect();
    (l0, files)
}

fn drain(mut merge: MergingIterator<Box<dyn InternalIterator>>) -> u64 {
    merge.seek_to_first().unwrap();
    let mut entries = 0;
    while merge.valid() {
        std::hint::black_box(merge.key());
        entries += 1;
        merge.next().unwrap();
    }
    entries
}

fn bench_merge(c: &mut Criterion) {
    let (l0, level) = inputs();
    let l0_sources = || {
        l0.iter()
            .map(|entries| {
                Box::new(VecIterator::from_raw(entries.clone())) as Box<dyn InternalIterator>
            })
            .collect::<Vec<_>>()
    };
    let mut group = c.benchmark_group("merge_l0_into_24_files");
    group.throughput(Throughput::Elements(
        L0_FILES * L0_FILE_ENTRIES + LEVEL_FILES * LEVEL_FILE_ENTRIES,
    ));
    group.bench_function("a_child_per_file", |b| {
        b.iter_batched(
            || {
                let mut sources = l0_sources();
                sources.extend(level.iter().map(|entries| {
                    Box::new(VecIterator::from_raw(entries.clone())) as Box<dyn InternalIterator>
                }));
                MergingIterator::new(sources)
            },
            drain,
            criterion::BatchSize::LargeInput,
        )
    });
    group.bench_function("a_child_per_level", |b| {
        b.iter_batched(
            || {
                let mut sources = l0_sources();
                let files: Vec<VecIterator> = level
                    .iter()
                    .map(|entries| VecIterator::from_raw(entries.clone()))
                    .collect();
                let bounds = files.iter().filter_map(VecIterator::bounds).collect();
                sources.push(Box::new(ConcatenatingIterator::new(files, bounds)));
                MergingIterator::new(sources)
            },
            drain,
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_merge);
criterion_main!(benches);
