//! Compaction benchmark (issue "Compaction"): an overwrite workload (5-record batches of
//! uniformly random keys over a fixed key space) and an insert-only workload (5 new keys per
//! batch), each under the leveled and the size-tiered policy, on the real file system with
//! background flush and compaction. Reports throughput over time, write amplification
//! (SSTable bytes written / user bytes, `DbStats`), space amplification, the longest write as
//! the writer saw it and the longest back-pressure stall the engine applied.
//!
//! **Space amplification** is SSTable bytes / live logical bytes, where live logical bytes are
//! the distinct live keys times their (key + value) bytes; WAL segments are not counted. The
//! headline figure is taken once the writes stopped, everything was flushed and compaction is
//! idle: the tree's settled shape, which is what the "steady state" target is about.
//! It is split into its two factors: *stored versions* per live key (what the policy leaves
//! behind: stale versions in the levels above the last, and L0) and *format overhead*,
//! SSTable bytes per logical byte of the versions stored (the 8-byte sequence/kind trailer of
//! every internal key, block entry headers and restart points, the bloom filter, the index,
//! the properties). Also reported: the figure sampled from the current version's SSTables
//! every `SAMPLE_INTERVAL` during the second half of the writes (unpaced, this is the backlog
//! the back-pressure equilibrium leaves: L0 files and levels over their targets), and the
//! `.sst` files in the directory at the end of the writes (which includes outputs being
//! written).
//! The level targets of dynamic level sizing are printed with the level sizes.
//!
//! The format overhead is about 12 bytes per entry, so it weighs 10.5% at the default 100-byte
//! values and 4.5% at the record sizes (`SHOAL_BENCH_VALUE_BYTES=issue`); with levels
//! at ratio 10 adding up to 11% of stale versions, only the latter can meet a 1.2 target.
//!
//! Run: `cargo bench -p shoal-engine --bench compaction`. Sizes come from the environment:
//! - `SHOAL_BENCH_BATCHES` batches per run (default 200000; the real run is 10000000),
//! - `SHOAL_BENCH_KEYS` key space of the overwrite workload (default batches / 2),
//! - `SHOAL_BENCH_VALUE_BYTES` value size of every record (default 100), or `issue` for the
//!   storage issue's batch: one 1,000-byte value and four 150-byte ones (record `i` of a batch
//!   draws its key from the keys `≡ i mod 5`, so each key always has the same value size),
//! - `SHOAL_BENCH_BATCHES_PER_SEC` paces the writer (default 0: as fast as it can, so
//!   compaction runs behind and the writer is held back by the engine's back-pressure),
//! - `SHOAL_BENCH_MEMTABLE_MB` memtable size, also the output file target (default 8),
//! - `SHOAL_BENCH_ONLY` runs only the cases whose name contains it (e.g. `overwrite/leveled`),
//! - `SHOAL_BENCH_DIRECT_TABLE_WRITES=1|0` overrides `DbOptions::direct_table_writes`.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shoal_engine::Durability;
use shoal_engine::{Db, DbOptions, DbStats, PolicyKind, PolicyOptions, TreeId, WriteBatch};

const RECORDS_PER_BATCH: u64 = 5;
const KEY_BYTES: u64 = 16;
/// How often a throughput line is printed.
const REPORT_INTERVAL: Duration = Duration::from_secs(2);
/// How often space amplification is sampled during the writes.
const SAMPLE_INTERVAL: Duration = Duration::from_millis(250);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Workload {
    Overwrite,
    InsertOnly,
}

struct Config {
    batches: u64,
    keys: u64,
    /// Value size of record `i` of every batch.
    value_bytes: [usize; RECORDS_PER_BATCH as usize],
    /// 0: unpaced.
    batches_per_sec: u64,
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
            value_bytes: match std::env::var("SHOAL_BENCH_VALUE_BYTES").as_deref() {
                Ok("issue") => [1000, 150, 150, 150, 150],
                _ => [env_number("SHOAL_BENCH_VALUE_BYTES", 100) as usize; 5],
            },
            batches_per_sec: env_number("SHOAL_BENCH_BATCHES_PER_SEC", 0),
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

/// Bytes of the SSTables the current version names, summed over all levels.
fn live_sst_bytes(stats: &DbStats) -> u64 {
    stats.level_bytes.iter().sum()
}

/// Space amplification sampled during the second half of the writes.
#[derive(Default)]
struct SpaceAmpSamples {
    samples: u32,
    sum: f64,
    max: f64,
}

impl SpaceAmpSamples {
    fn add(&mut self, space_amp: f64) {
        self.samples += 1;
        self.sum += space_amp;
        self.max = self.max.max(space_amp);
    }

    fn mean(&self) -> f64 {
        self.sum / self.samples.max(1) as f64
    }
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
        // Fixed-size memtables of the configured size, whatever the write rate.
        memtable_size_bytes: config.memtable_bytes,
        memtable_size_bytes_min: config.memtable_bytes,
        write_buffer_bytes_max: usize::MAX,
        compaction: PolicyOptions {
            kind,
            target_file_bytes: target,
            base_level_bytes: target * 4,
            ..PolicyOptions::default()
        },
        direct_table_writes: std::env::var("SHOAL_BENCH_DIRECT_TABLE_WRITES")
            .map_or(DbOptions::default().direct_table_writes, |v| v != "0"),
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
    let values: Vec<Vec<u8>> = config
        .value_bytes
        .iter()
        .map(|&size| vec![0x5au8; size])
        .collect();
    // Key `i` always carries the value of record slot `i mod 5`.
    let entry_logical_bytes =
        |index: u64| KEY_BYTES + config.value_bytes[(index % RECORDS_PER_BATCH) as usize] as u64;
    let mut rng = StdRng::seed_from_u64(42);
    let mut live_keys: HashSet<u64> = HashSet::new();
    let mut live_records = 0u64;
    let mut live_bytes = 0u64;
    let mut next_insert = 0u64;
    let mut write_longest = Duration::ZERO;

    println!(
        "== {name}: {} batches of {RECORDS_PER_BATCH} records, values {:?} bytes, {} keys (overwrite), memtable {} MiB, {}",
        config.batches,
        config.value_bytes,
        config.keys,
        config.memtable_bytes >> 20,
        match config.batches_per_sec {
            0 => "unpaced".to_string(),
            rate => format!("paced at {rate} batches/s"),
        }
    );
    let start = Instant::now();
    let mut interval_start = start;
    let mut interval_batches = 0u64;
    let mut last_sample = start;
    let mut during_writes = SpaceAmpSamples::default();
    for batch_index in 0..config.batches {
        if config.batches_per_sec > 0 {
            let due =
                start + Duration::from_secs_f64(batch_index as f64 / config.batches_per_sec as f64);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        let mut batch = WriteBatch::new();
        for slot in 0..RECORDS_PER_BATCH {
            let index = match workload {
                Workload::Overwrite => {
                    rng.random_range(0..config.keys / RECORDS_PER_BATCH) * RECORDS_PER_BATCH + slot
                }
                Workload::InsertOnly => {
                    let index = next_insert;
                    next_insert += 1;
                    index
                }
            };
            if workload == Workload::InsertOnly || live_keys.insert(index) {
                live_records += 1;
                live_bytes += entry_logical_bytes(index);
            }
            batch
                .put(
                    tree,
                    &key(index),
                    &values[(index % RECORDS_PER_BATCH) as usize],
                )
                .expect("batch");
        }
        let write_start = Instant::now();
        db.write(batch).expect("write");
        write_longest = write_longest.max(write_start.elapsed());
        interval_batches += 1;
        let space_amp = |stats: &DbStats| live_sst_bytes(stats) as f64 / live_bytes as f64;
        if batch_index >= config.batches / 2 && last_sample.elapsed() >= SAMPLE_INTERVAL {
            during_writes.add(space_amp(&db.stats()));
            last_sample = Instant::now();
        }
        if interval_start.elapsed() >= REPORT_INTERVAL {
            let stats = db.stats();
            println!(
                "  t={:>6.1}s  {:>9.0} batches/s  L0 files {:>3}  write amp {:.2}  space amp {:.2}  levels (MiB) {:?}",
                start.elapsed().as_secs_f64(),
                interval_batches as f64 / interval_start.elapsed().as_secs_f64(),
                stats.level_files[0],
                stats.write_amplification,
                space_amp(&stats),
                stats.level_bytes.iter().map(|b| mib(*b)).collect::<Vec<_>>(),
            );
            interval_start = Instant::now();
            interval_batches = 0;
        }
    }
    let elapsed = start.elapsed();
    let end_of_writes_disk = sst_disk_bytes(dir.path());

    db.flush_all().expect("flush");
    db.compact_until_idle().expect("compact");
    let idle_disk = sst_disk_bytes(dir.path());
    // No deletes in this bench: after the flush, the estimate is exactly the stored versions.
    let stored_versions = db.tree_stats(tree).expect("tree stats").entries_estimate;
    let stats = db.stats();
    let amp = |disk: u64| disk as f64 / live_bytes.max(1) as f64;
    println!(
        "  throughput        {:.0} batches/s ({:.1} s)",
        config.batches as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    println!(
        "  space amp         {:.3} once compaction is idle; during the second half of the writes {:.3} mean, {:.3} max ({} samples); {:.3} at the end of the writes ({:.1} MiB live)",
        amp(idle_disk),
        during_writes.mean(),
        during_writes.max,
        during_writes.samples,
        amp(end_of_writes_disk),
        live_bytes as f64 / (1u64 << 20) as f64
    );
    // Stale versions have the live ones' size mix (keys are uniform), so the stored logical
    // bytes are the stored versions times the mean live entry size.
    let live_entry_bytes = live_bytes as f64 / live_records.max(1) as f64;
    println!(
        "                    idle = {:.3} stored versions per live key x {:.3} format overhead ({:.1} SSTable bytes per entry of {:.1} logical bytes)",
        stored_versions as f64 / live_records.max(1) as f64,
        idle_disk as f64 / (stored_versions as f64 * live_entry_bytes).max(1.0),
        idle_disk as f64 / stored_versions.max(1) as f64,
        live_entry_bytes,
    );
    // L0 keeps up to `l0_trigger_files - 1` flushes when compaction is idle; on a small tree
    // that alone moves the figure a lot, so it is shown apart.
    let l0_bytes = stats.level_bytes[0];
    println!(
        "                    without L0 ({:.1} MiB, {} files): {:.3}",
        mib(l0_bytes),
        stats.level_files[0],
        amp(idle_disk.saturating_sub(l0_bytes)),
    );
    if kind == PolicyKind::Leveled {
        if let Some(targets) = db.level_targets(tree) {
            println!(
                "  level targets (MiB) {:?}, base level {}",
                targets
                    .target_bytes
                    .iter()
                    .map(|b| mib(*b))
                    .collect::<Vec<_>>(),
                targets.base_level
            );
        }
    }
    report(&stats, write_longest);
}

/// Bytes in MiB, rounded to a tenth.
fn mib(bytes: u64) -> f64 {
    (bytes as f64 / (1u64 << 20) as f64 * 10.0).round() / 10.0
}

fn report(stats: &DbStats, write_longest: Duration) {
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
        "  longest write     {:?} as seen by the writer; longest stall {:?}, {} stalls, {:?} in all",
        write_longest, stats.stall_time_longest, stats.write_stalls, stats.stall_time_total
    );
    println!(
        "  levels (files)    {:?}\n  levels (MiB)      {:?}",
        stats.level_files,
        stats
            .level_bytes
            .iter()
            .map(|b| mib(*b))
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
