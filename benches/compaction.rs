//! Compaction benchmark (issue "Compaction"): an overwrite workload (5-record batches of
//! uniformly random keys over a fixed key space) and an insert-only workload (5 new keys per
//! batch), each under the leveled and the size-tiered policy, on the real file system with
//! background flush and compaction. Reports throughput over time, write amplification
//! (SSTable bytes written / user bytes, `DbStats`), space amplification (SSTable bytes on disk
//! / live logical bytes, at the end of the writes and again once compaction is idle), the
//! longest write as the writer saw it and the longest back-pressure stall the engine applied.
//!
//! Run: `cargo bench --bench compaction`. Sizes come from the environment:
//! - `SHOAL_BENCH_BATCHES` batches per run (default 200000; the real run is 10000000),
//! - `SHOAL_BENCH_KEYS` key space of the overwrite workload (default batches / 2),
//! - `SHOAL_BENCH_VALUE_BYTES` value size (default 100),
//! - `SHOAL_BENCH_MEMTABLE_MB` memtable size, also the output file target (default 8),
//! - `SHOAL_BENCH_ONLY` runs only the cases whose name contains it (e.g. `overwrite/leveled`).

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use engine::lsm::{Db, DbOptions, DbStats, PolicyKind, PolicyOptions, TreeId, WriteBatch};
use engine::Durability;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const RECORDS_PER_BATCH: u64 = 5;
const KEY_BYTES: u64 = 16;
/// How often a throughput line is printed.
const REPORT_INTERVAL: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Workload {
    Overwrite,
    InsertOnly,
}

struct Config {
    batches: u64,
    keys: u64,
    value_bytes: usize,
    memtable_bytes: usize,
    only: Option<String>,
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Config {
    fn from_env() -> Config {
        let batches = env_number("SHOAL_BENCH_BATCHES", 200_000).max(1);
        Config {
            batches,
            keys: env_number("SHOAL_BENCH_KEYS", batches / 2).max(RECORDS_PER_BATCH),
            value_bytes: env_number("SHOAL_BENCH_VALUE_BYTES", 100) as usize,
            memtable_bytes: (env_number("SHOAL_BENCH_MEMTABLE_MB", 8).max(1) << 20) as usize,
            only: std::env::var("SHOAL_BENCH_ONLY").ok(),
        }
    }
}

fn key(index: u64) -> [u8; KEY_BYTES as usize] {
    // A scrambled prefix spreads sequential inserts over the key space, like the table
    // tree's hash prefix does.
    let mut k = [0u8; KEY_BYTES as usize];
    k[..8].copy_from_slice(&index.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k[8..].copy_from_slice(&index.to_be_bytes());
    k
}

fn sst_disk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn open(dir: &Path, config: &Config, kind: PolicyKind) -> (Db, TreeId) {
    let target = config.memtable_bytes as u64;
    let options = DbOptions {
        durability: Durability::None,
        memtable_size_bytes: config.memtable_bytes,
        compaction: PolicyOptions {
            kind,
            target_file_bytes: target,
            base_level_bytes: target * 4,
            ..PolicyOptions::default()
        },
        ..DbOptions::default()
    };
    let db = Db::open(dir, options).expect("open");
    let tree = db.create_tree("bench").expect("create tree");
    (db, tree)
}

fn run(config: &Config, workload: Workload, kind: PolicyKind) {
    let name = format!(
        "{}/{}",
        match workload {
            Workload::Overwrite => "overwrite",
            Workload::InsertOnly => "insert",
        },
        match kind {
            PolicyKind::Leveled => "leveled",
            PolicyKind::SizeTiered => "size-tiered",
        }
    );
    if config
        .only
        .as_ref()
        .is_some_and(|only| !name.contains(only))
    {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, tree) = open(dir.path(), config, kind);
    let value = vec![0x5au8; config.value_bytes];
    let mut rng = StdRng::seed_from_u64(42);
    let mut live_keys: HashSet<u64> = HashSet::new();
    let mut next_insert = 0u64;
    let mut write_longest = Duration::ZERO;

    println!(
        "== {name}: {} batches of {RECORDS_PER_BATCH}",
        config.batches
    );
    let start = Instant::now();
    let mut interval_start = start;
    let mut interval_batches = 0u64;
    for _ in 0..config.batches {
        let mut batch = WriteBatch::new();
        for _ in 0..RECORDS_PER_BATCH {
            let index = match workload {
                Workload::Overwrite => rng.random_range(0..config.keys),
                Workload::InsertOnly => {
                    next_insert += 1;
                    next_insert
                }
            };
            if workload == Workload::Overwrite {
                live_keys.insert(index);
            }
            batch.put(tree, &key(index), &value).expect("batch");
        }
        let write_start = Instant::now();
        db.write(batch).expect("write");
        write_longest = write_longest.max(write_start.elapsed());
        interval_batches += 1;
        if interval_start.elapsed() >= REPORT_INTERVAL {
            let stats = db.stats();
            println!(
                "  t={:>6.1}s  {:>9.0} batches/s  L0 files {:>3}  write amp {:.2}",
                start.elapsed().as_secs_f64(),
                interval_batches as f64 / interval_start.elapsed().as_secs_f64(),
                stats.level_files[0],
                stats.write_amplification,
            );
            interval_start = Instant::now();
            interval_batches = 0;
        }
    }
    let elapsed = start.elapsed();
    let live_records = match workload {
        Workload::Overwrite => live_keys.len() as u64,
        Workload::InsertOnly => next_insert,
    };
    let live_bytes = live_records * (KEY_BYTES + config.value_bytes as u64);
    let end_of_writes_disk = sst_disk_bytes(dir.path());

    db.flush_all().expect("flush");
    db.compact_until_idle().expect("compact");
    let idle_disk = sst_disk_bytes(dir.path());
    let stats = db.stats();
    report(
        &stats,
        elapsed,
        config.batches,
        live_bytes,
        end_of_writes_disk,
        idle_disk,
        write_longest,
    );
}

fn report(
    stats: &DbStats,
    elapsed: Duration,
    batches: u64,
    live_bytes: u64,
    end_of_writes_disk: u64,
    idle_disk: u64,
    write_longest: Duration,
) {
    let amp = |disk: u64| disk as f64 / live_bytes.max(1) as f64;
    println!(
        "  throughput        {:.0} batches/s ({:.1} s)",
        batches as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    println!(
        "  write amp         {:.2}  (flush {} MB + compaction {} MB / user {} MB; {} compactions, {} trivial moves)",
        stats.write_amplification,
        stats.flush_bytes_written >> 20,
        stats.compaction_bytes_written >> 20,
        stats.user_bytes_written >> 20,
        stats.compactions,
        stats.trivial_moves,
    );
    println!(
        "  space amp         {:.2} at end of writes, {:.2} once compaction is idle ({} MB live)",
        amp(end_of_writes_disk),
        amp(idle_disk),
        live_bytes >> 20
    );
    println!(
        "  longest write     {:?} as seen by the writer; longest stall {:?}, {} stalls, {:?} in all",
        write_longest, stats.stall_time_longest, stats.write_stalls, stats.stall_time_total
    );
    println!(
        "  levels (files)    {:?}\n  levels (MB)       {:?}",
        stats.level_files,
        stats
            .level_bytes
            .iter()
            .map(|b| b >> 20)
            .collect::<Vec<_>>()
    );
}

fn main() {
    let config = Config::from_env();
    for workload in [Workload::Overwrite, Workload::InsertOnly] {
        for kind in [PolicyKind::Leveled, PolicyKind::SizeTiered] {
            run(&config, workload, kind);
        }
    }
}
