//! An export holds little memory whatever the table's size: its workers stream the table
//! and write through bounded buffers. Measured with an allocator counting the bytes the
//! whole process holds (the export's workers are threads of their own), while nothing else
//! runs: memtables large enough that nothing is flushed or compacted meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{json, Value};
use shoal_tables::{Database, Durability, Options, StorageOptions};

/// The system allocator, counting the bytes the process holds and the most held at once.
struct Counting;

static HELD: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

fn held_changes_by(delta: i64) {
    let now = HELD.fetch_add(delta, Ordering::Relaxed) + delta;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; the counters are
// atomics, which allocate nothing.
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

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ITEMS: u64 = 40_000;

#[test]
fn an_export_of_a_40_mb_table_holds_a_few_megabytes() {
    let db = Database::open_in_memory(Options {
        storage: StorageOptions {
            durability: Durability::None,
            memtable_size_bytes: 512 << 20,
            memtable_size_bytes_min: 512 << 20,
            write_buffer_bytes_max: usize::MAX,
            ..StorageOptions::default()
        },
        ..Options::default()
    })
    .unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Big",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    let payload = "x".repeat(1000);
    let mut n = 0;
    while n < ITEMS {
        let requests: Vec<Value> = (n..ITEMS.min(n + 25))
            .map(|i| {
                json!({"PutRequest": {"Item": {"pk": {"S": format!("k{i}")}, "v": {"S": payload}}}})
            })
            .collect();
        n += requests.len() as u64;
        db.execute("BatchWriteItem", json!({"RequestItems": {"Big": requests}}))
            .unwrap();
    }
    let out = tempfile::tempdir().unwrap();

    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let finished = db.export_table("Big", out.path(), |_| {}).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - before;

    assert_eq!(finished.summary.item_count, ITEMS);
    assert!(finished.summary.billed_size_bytes > 40_000_000);
    // Holding the items would take over 40 MB; each worker holds its cursor, one item and
    // its file's buffers (lines, compressor, file), about a megabyte.
    assert!(peak < 8 << 20, "the export held {peak} bytes at once");
}
