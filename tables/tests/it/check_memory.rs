//! `Database::check` holds no more memory for a larger table: it streams the table and its
//! indexes and keeps digests, not entries. Measured with an allocator that counts the bytes
//! the checking thread holds, so the figure is exact and other threads cannot disturb it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use serde_json::json;
use shoal_tables::{Database, Durability, Options, StorageOptions};

/// The system allocator, counting per thread the bytes held and the most held at once.
struct Counting;

thread_local! {
    static HELD: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn held_changes_by(delta: i64) {
    // `try_with`: a thread being torn down has no counters left; nothing to count then.
    let _ = HELD.try_with(|held| {
        let now = held.get() + delta;
        held.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is passed on to the system allocator unchanged; the counters are
// const-initialised thread locals without destructors, which allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            held_changes_by(layout.size() as i64);
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            held_changes_by(layout.size() as i64);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        held_changes_by(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            held_changes_by(new_size as i64 - layout.size() as i64);
        }
        moved
    }
}

// The allocator of the whole test binary: counting per thread, it neither disturbs nor is
// disturbed by the tests that run beside this one.
#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most bytes this thread held at once while running `run`, beyond what it held before.
fn peak_while<R>(run: impl FnOnce() -> R) -> (R, u64) {
    let before = HELD.with(Cell::get);
    PEAK.with(|peak| peak.set(before));
    let result = run();
    let peak = PEAK.with(Cell::get) - before;
    (result, peak.max(0) as u64)
}

/// Partition keys: more than the 1024 statistics stripes, so that both sizes below touch
/// the same stripes and only the number of items differs.
const PARTITIONS: u64 = 1500;

fn load(db: &Database, per_partition: std::ops::Range<u64>) {
    for i in per_partition {
        for p in 0..PARTITIONS {
            let item = json!({
                "pk": {"S": format!("p{p}")},
                "sk": {"N": i.to_string()},
                "l": {"S": format!("l{}", (i * 7 + p) % 13)},
                "g": {"S": format!("g{}", (p + i) % 50)},
                "payload": {"S": "x".repeat(400)}
            });
            db.execute("PutItem", json!({"TableName": "Big", "Item": item}))
                .unwrap();
        }
    }
}

#[test]
fn the_check_holds_no_more_memory_for_six_times_the_items() {
    // Memtables large enough that nothing is flushed: every read comes from memory, and
    // the engine's own read state is the same for both sizes.
    let db = Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Big",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "l", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                          {"AttributeName": "sk", "KeyType": "RANGE"}],
            "LocalSecondaryIndexes": [{"IndexName": "ByL",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                              {"AttributeName": "l", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"}}],
            "GlobalSecondaryIndexes": [{"IndexName": "ByG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                              {"AttributeName": "sk", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"}}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();

    load(&db, 0..2);
    let (small, small_peak) = peak_while(|| db.check().unwrap());
    assert!(small.is_sound(), "{:?}", small.problems);
    assert_eq!(small.items, 2 * PARTITIONS);

    load(&db, 2..12);
    let (large, large_peak) = peak_while(|| db.check().unwrap());
    assert!(large.is_sound(), "{:?}", large.problems);
    assert_eq!(large.items, 12 * PARTITIONS);
    assert_eq!(large.index_entries, 2 * 12 * PARTITIONS);

    // Holding the entries, as the check once did, would take over 20 MB here: 36,000
    // ALL-projected entries of ~450 bytes, expected and stored. What the check holds is the
    // statistics of at most 1024 stripes and one item at a time.
    assert!(
        large_peak < 2 << 20,
        "the check held {large_peak} bytes at once"
    );
    assert!(
        large_peak <= small_peak + (64 << 10),
        "six times the items took {large_peak} bytes at once instead of {small_peak}"
    );
}
