//! ImportTable's rate (issue 25: 1,000,000 items of 1 KB from DYNAMODB_JSON.gz at 100,000
//! items/s or more): generates `SHOAL_IMPORT_BENCH_ITEMS` items (default 100,000) of about
//! 1 KB once, as gzip objects in DynamoDB's export layout in a temporary directory, then
//! times `Database::import_table_and_wait` of all of them into a new table of a fresh
//! on-disk database, with the default (synchronous) durability and with one sync at the end
//! (as `shoal import --data-dir` runs); criterion reports items/s.
//! Run: `cargo bench -p shoal-tables --bench import` (`SHOAL_IMPORT_BENCH_ITEMS=1000000`).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use shoal_tables::api::import::ImportTableInput;
use shoal_tables::{Database, Durability, Options, StorageOptions, TransferOptions};

const ITEMS_DEFAULT: u64 = 100_000;
/// Items per object, as an export's data files hold many.
const ITEMS_PER_OBJECT: u64 = 50_000;

fn items() -> u64 {
    std::env::var("SHOAL_IMPORT_BENCH_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ITEMS_DEFAULT)
}

/// Writes the objects under `<root>/bench/AWSDynamoDB/data/`.
fn generate(root: &Path, items: u64) {
    let data = root.join("bench").join("AWSDynamoDB").join("data");
    std::fs::create_dir_all(&data).expect("object directory");
    let payload = "x".repeat(960);
    for (object, first) in (0..items).step_by(ITEMS_PER_OBJECT as usize).enumerate() {
        let file =
            std::fs::File::create(data.join(format!("{object:05}.json.gz"))).expect("object");
        let mut gzip = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(file),
            flate2::Compression::fast(),
        );
        for n in first..(first + ITEMS_PER_OBJECT).min(items) {
            let line = json!({"Item": {
                "id": {"S": format!("user{n:010}")},
                "n": {"N": n.to_string()},
                "payload": {"S": payload}}});
            serde_json::to_writer(&mut gzip, &line).expect("line");
            gzip.write_all(b"\n").expect("line end");
        }
        gzip.finish().expect("gzip end").flush().expect("flush");
    }
}

fn request(table: &str) -> ImportTableInput {
    serde_json::from_value(json!({
        "S3BucketSource": {"S3Bucket": "bench", "S3KeyPrefix": "AWSDynamoDB/"},
        "InputFormat": "DYNAMODB_JSON",
        "InputCompressionType": "GZIP",
        "TableCreationParameters": {
            "TableName": table,
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }
    }))
    .expect("request")
}

fn import(c: &mut Criterion) {
    let items = items();
    let exports = tempfile::tempdir().expect("temporary directory");
    let generated = Instant::now();
    generate(exports.path(), items);
    println!(
        "generated {items} items of 1 KB as DYNAMODB_JSON.gz in {:.1} s",
        generated.elapsed().as_secs_f64()
    );
    let mut group = c.benchmark_group("import");
    group.sample_size(10);
    group.throughput(Throughput::Elements(items));
    // As ImportTable runs in a server with the default durability (a sync per batch), and
    // as `shoal import --data-dir` runs it (one sync before the table is published).
    for (name, durability) in [
        ("dynamodb_json_gzip", Durability::Sync),
        ("dynamodb_json_gzip_one_sync", Durability::None),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let data = tempfile::tempdir().expect("data directory");
                    let options = Options {
                        transfer: TransferOptions {
                            export_dir: Some(exports.path().to_path_buf()),
                        },
                        storage: StorageOptions {
                            durability,
                            ..StorageOptions::default()
                        },
                        ..Options::default()
                    };
                    let db = Database::open(data.path(), options).expect("open");
                    let started = Instant::now();
                    let description = db
                        .import_table_and_wait(request("Imported"), &mut |_| {})
                        .expect("import");
                    let elapsed = started.elapsed();
                    assert_eq!(description.import_status, "COMPLETED", "{description:?}");
                    assert_eq!(description.imported_item_count, items);
                    total += elapsed;
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, import);
criterion_main!(benches);
