//! Shoal vs fjall 3 vs RocksDB on the storage-core workloads of the issue, in one run: 5-record
//! atomic batches (one ~1 KB record + four ~150 B records in two trees/keyspaces/column
//! families) with durability none and sync at 1–16 writer threads, and warm point gets of
//! existing and missing keys. Prints process CPU per batch beside criterion's timings, and
//! after each write benchmark what Shoal and RocksDB report about their compaction.
//!
//! `SHOAL_PEER_SUSTAINED_BATCHES=N` runs only a sustained comparison instead: one writer puts N
//! batches (durability none) into each engine in turn, and the run reports throughput for
//! the whole run and per tenth of it, the slowest tenth's rate against the mean (how evenly
//! the engine paced its writer), process CPU per batch and the bytes on disk at the end.
//! Each tenth also shows the process CPU per batch it spent and how many cores that kept
//! busy on average: a tenth near the machine's core count was bound by CPU, one well below
//! by the writer alone or by the engine holding it back.
//! Criterion's runs write well under a million batches, a burst that an engine can absorb
//! by deferring compaction; N in the millions shows the rate each engine sustains once its
//! compaction has to keep up. `SHOAL_PEER_SUSTAINED_ENGINES=shoal,rocksdb` (a comma-separated
//! list of `shoal`, `shoal_blob`, `fjall`, `fjall_buffer`, `rocksdb`) runs only the engines
//! named; `shoal_blob` runs only when named: it is a probe, not an engine, Shoal with the
//! 1 KB values in a log beside the tree, an estimate of what key-value separation would
//! give these runs (see `ShoalBlob`).
//! `SHOAL_PEER_SUSTAINED_TRACE=1` prints the engine's report (writes slowed, write
//! amplification, files and bytes per level; for Shoal also the write amplification by level
//! with its compaction time, each tree's bytes per level and the rate its backlog holds
//! writers to) every two seconds of the run; the report ends every run.
//! `SHOAL_PEER_SUSTAINED_READERS=R` adds R threads that read while the writer writes (the
//! read-while-writing mix): each gets the ~1 KB record of a batch drawn uniformly from those
//! written so far, and the run reports their reads per second and any key not found.
//! `SHOAL_PEER_SUSTAINED_READ_RATE=N` holds the readers together to N reads a second (each
//! to its share, caught up every millisecond) instead of as fast as they go: a free reader
//! takes CPU from the writer in proportion to its engine's read speed, so with a fixed rate
//! every engine's writer runs beside the same read load.
//!
//! `SHOAL_PEER_POLICY=field=value,...` sets fields of Shoal's compaction policy
//! (`PolicyOptions`: the L0 thresholds, the pending-bytes percentages, the slowdown rates,
//! `level_ratio`, `base_level_bytes`, and `kind=leveled` or `kind=size_tiered` with the
//! tiered ratios), for trying a policy on the same workload.
//!
//! `SHOAL_PEER_DIRECT_TABLE_WRITES=1` has Shoal write its SSTables around the page cache
//! (`DbOptions::direct_table_writes`, off by default; `0` forces it off), for comparing the
//! two. `SHOAL_PEER_WAL_MAPPED=0` has Shoal write its WAL with `write(2)` instead of through a
//! mapping (`DbOptions::wal_map_segments`, on by default).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fjall::{KeyspaceCreateOptions, PersistMode};
use rand::{Rng, SeedableRng};
use rocksdb::{DBCompressionType, WriteOptions};
use shoal_engine::{Db, DbOptions, Durability, TreeId, WriteBatch};

/// The allocator the `shoal` binary uses; every engine in this process shares it (RocksDB's
/// C++ allocations excepted: they go to the system allocator).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Writer thread counts; `SHOAL_PEER_THREADS=1,8` runs a shorter comparison.
fn thread_counts() -> Vec<usize> {
    std::env::var("SHOAL_PEER_THREADS")
        .ok()
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![1, 2, 4, 8, 16])
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass; a zeroed rusage is valid.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn key16(a: u64, b: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&a.to_be_bytes());
    k[8..].copy_from_slice(&b.to_be_bytes());
    k
}

fn prefix8(key: &[u8]) -> &[u8] {
    &key[..key.len().min(8)]
}

/// One storage engine under test.
trait Engine: Send + Sync {
    fn write_batch(&self, base: u64, value_1k: &[u8], values_150: [&[u8]; 4]);
    fn get(&self, key: &[u8]) -> bool;
    /// What the engine says about the run so far (Shoal: writers slowed for compaction, and
    /// write amplification; RocksDB: its write stalls, write amplification and levels),
    /// printed after each write benchmark.
    fn report(&self) -> Option<String> {
        None
    }
}

struct Shoal {
    db: Db,
    items: TreeId,
    index: TreeId,
}

/// The compaction policy, with `SHOAL_PEER_POLICY=field=value,...` overriding fields.
fn policy_from_env() -> shoal_engine::PolicyOptions {
    let mut policy = shoal_engine::PolicyOptions::default();
    let Ok(spec) = std::env::var("SHOAL_PEER_POLICY") else {
        return policy;
    };
    for pair in spec.split(',').filter(|pair| !pair.is_empty()) {
        let (field, value) = pair
            .split_once('=')
            .unwrap_or_else(|| panic!("SHOAL_PEER_POLICY: {pair} is not field=value"));
        if field == "kind" {
            policy.kind = match value {
                "leveled" => shoal_engine::PolicyKind::Leveled,
                "size_tiered" => shoal_engine::PolicyKind::SizeTiered,
                other => panic!("SHOAL_PEER_POLICY: kind is leveled or size_tiered, not {other}"),
            };
            continue;
        }
        let value: u64 = value
            .parse()
            .unwrap_or_else(|_| panic!("SHOAL_PEER_POLICY: {field} takes a whole number"));
        match field {
            "l0_trigger_files" => policy.l0_trigger_files = value as usize,
            "l0_slowdown_files" => policy.l0_slowdown_files = value as usize,
            "l0_max_delay_files" => policy.l0_max_delay_files = value as usize,
            "pending_slowdown_percent" => policy.pending_slowdown_percent = value,
            "pending_max_delay_percent" => policy.pending_max_delay_percent = value,
            "slowdown_rate_start_bytes_per_sec" => policy.slowdown_rate_start_bytes_per_sec = value,
            "slowdown_rate_min_bytes_per_sec" => policy.slowdown_rate_min_bytes_per_sec = value,
            "slowdown_rate_knee_bytes_per_sec" => policy.slowdown_rate_knee_bytes_per_sec = value,
            "level_ratio" => policy.level_ratio = value,
            "base_level_bytes" => policy.base_level_bytes = value,
            "tiered_size_ratio_percent" => policy.tiered_size_ratio_percent = value,
            "tiered_max_space_amp_percent" => policy.tiered_max_space_amp_percent = value,
            other => panic!("unknown policy field {other}"),
        }
    }
    eprintln!("policy: {policy:?}");
    policy
}

impl Shoal {
    fn open(dir: &std::path::Path, durability: Durability) -> Shoal {
        let db = Db::open(
            dir,
            DbOptions {
                durability,
                bloom_prefix: prefix8,
                // `SHOAL_PEER_COMPACTION_THREADS=n` overrides the default (one on two cores).
                compaction_threads: std::env::var("SHOAL_PEER_COMPACTION_THREADS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(DbOptions::default().compaction_threads),
                // `SHOAL_PEER_COMPACTION_THREADS_BACKLOG=n`: threads while writers are slowed.
                compaction_threads_backlog: std::env::var("SHOAL_PEER_COMPACTION_THREADS_BACKLOG")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(DbOptions::default().compaction_threads_backlog),
                direct_table_writes: std::env::var("SHOAL_PEER_DIRECT_TABLE_WRITES")
                    .map_or(DbOptions::default().direct_table_writes, |v| v != "0"),
                wal_map_segments: std::env::var("SHOAL_PEER_WAL_MAPPED")
                    .map_or(DbOptions::default().wal_map_segments, |v| v != "0"),
                // The fixed 64 MiB memtables and unbounded write buffer these figures were
                // measured with, not the write-rate-following defaults.
                memtable_size_bytes: 64 << 20,
                memtable_size_bytes_min: 64 << 20,
                write_buffer_bytes_max: usize::MAX,
                compaction: policy_from_env(),
                ..DbOptions::default()
            },
        )
        .unwrap();
        let items = db.create_tree("items").unwrap();
        let index = db.create_tree("index").unwrap();
        Shoal { db, items, index }
    }
}

impl Engine for Shoal {
    fn write_batch(&self, base: u64, value_1k: &[u8], values_150: [&[u8]; 4]) {
        let mut batch = WriteBatch::new();
        batch.put(self.items, &key16(base, 0), value_1k).unwrap();
        for (i, value_150) in (1..5u64).zip(values_150) {
            batch.put(self.index, &key16(base, i), value_150).unwrap();
        }
        self.db.write(batch).unwrap();
    }

    fn get(&self, key: &[u8]) -> bool {
        self.db.get(self.items, key, None).unwrap().is_some()
    }

    fn report(&self) -> Option<String> {
        let stats = self.db.stats();
        let mib = |bytes: u64| bytes as f64 / (1u64 << 20) as f64;
        let mib_per_level = |level_bytes: &[u64]| {
            level_bytes
                .iter()
                .map(|bytes| format!("{:.0}", mib(*bytes)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // Each tree's own shape and brake: the totals above can hide that one tree, not
        // the other, holds every batch (a batch waits for the slower of its two trees).
        let trees: Vec<String> = [("items", self.items), ("index", self.index)]
            .into_iter()
            .map(|(name, tree)| {
                let shape = self.db.tree_stats(tree).unwrap();
                let rate = match self.db.write_rate_limit(tree) {
                    Some(rate) => format!("{:.1} MiB/s", mib(rate)),
                    None => "free".to_owned(),
                };
                format!("{name} [{}] {rate}", mib_per_level(&shape.level_bytes))
            })
            .collect();
        // Where the write amplification comes from: the flushes into L0, then each level's
        // compactions' bytes written per user byte, and the compaction threads' time there.
        let per_user_byte = |bytes: u64| bytes as f64 / stats.user_bytes_written.max(1) as f64;
        let by_level: Vec<String> = std::iter::once(format!(
            "L0 {:.2}",
            per_user_byte(stats.flush_bytes_written)
        ))
        .chain(
            stats
                .compaction_levels
                .iter()
                .enumerate()
                .filter(|(_, level)| level.compactions + level.trivial_moves > 0)
                .map(|(index, level)| {
                    format!(
                        "L{index} {:.2} in {:.1} s",
                        per_user_byte(level.bytes_written),
                        level.busy.as_secs_f64()
                    )
                }),
        )
        .collect();
        Some(format!(
            "{} writes slowed for compaction, {:.2} s in all; write amplification {:.2} ({}); files per level {:?}, MiB per level [{}]; {}",
            stats.write_stalls,
            stats.stall_time_total.as_secs_f64(),
            stats.write_amplification,
            by_level.join(", "),
            stats.level_files,
            mib_per_level(&stats.level_bytes),
            trees.join("; ")
        ))
    }
}

/// Shoal with its ~1 KB values kept out of the tree, a probe of what key-value separation
/// (values in an append-only log, the tree holding only where each one is) would give the
/// sustained runs: each batch's 1 KB value is written with one `write(2)` to a log beside
/// the database (in the kernel when the batch is acknowledged, as `none` promises) and the
/// `items` tree gets its 12-byte place (offset and length); a read looks the place up and
/// `pread`s the value. It is an estimate, not a design: nothing is ever deleted from the log
/// (the sustained runs write each key once, so there is no garbage a real design would have
/// to collect), and the value is written once, where a real design logs it in the WAL and
/// writes it again when the memtable is flushed, as RocksDB's integrated BlobDB does.
struct ShoalBlob {
    shoal: Shoal,
    log: std::sync::Mutex<(std::fs::File, u64)>,
    reader: std::fs::File,
}

impl ShoalBlob {
    fn open(dir: &std::path::Path) -> ShoalBlob {
        let shoal = Shoal::open(&dir.join("tree"), Durability::None);
        let path = dir.join("values.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        let reader = std::fs::File::open(&path).unwrap();
        ShoalBlob {
            shoal,
            log: std::sync::Mutex::new((log, 0)),
            reader,
        }
    }
}

impl Engine for ShoalBlob {
    fn write_batch(&self, base: u64, value_1k: &[u8], values_150: [&[u8]; 4]) {
        use std::io::Write as _;
        let offset = {
            let mut log = self.log.lock().unwrap();
            let offset = log.1;
            log.0.write_all(value_1k).unwrap();
            log.1 += value_1k.len() as u64;
            offset
        };
        let mut place = [0u8; 12];
        place[..8].copy_from_slice(&offset.to_le_bytes());
        place[8..].copy_from_slice(&(value_1k.len() as u32).to_le_bytes());
        // The same batch as Shoal's, with the place where the value was.
        self.shoal.write_batch(base, &place, values_150);
    }

    fn get(&self, key: &[u8]) -> bool {
        use std::os::unix::fs::FileExt as _;
        let Some(place) = self.shoal.db.get(self.shoal.items, key, None).unwrap() else {
            return false;
        };
        let offset = u64::from_le_bytes(place[..8].try_into().unwrap());
        let len = u32::from_le_bytes(place[8..12].try_into().unwrap()) as usize;
        let mut value = vec![0u8; len];
        self.reader.read_exact_at(&mut value, offset).unwrap();
        true
    }

    fn report(&self) -> Option<String> {
        self.shoal.report()
    }
}

struct Fjall {
    db: fjall::Database,
    items: fjall::Keyspace,
    index: fjall::Keyspace,
    persist: Option<PersistMode>,
}

impl Fjall {
    fn open(dir: &std::path::Path, persist: Option<PersistMode>) -> Fjall {
        let db = fjall::Database::builder(dir).open().unwrap();
        let items = db
            .keyspace("items", KeyspaceCreateOptions::default)
            .unwrap();
        let index = db
            .keyspace("index", KeyspaceCreateOptions::default)
            .unwrap();
        Fjall {
            db,
            items,
            index,
            persist,
        }
    }
}

impl Engine for Fjall {
    fn write_batch(&self, base: u64, value_1k: &[u8], values_150: [&[u8]; 4]) {
        let mut batch = self.db.batch().durability(self.persist);
        batch.insert(&self.items, key16(base, 0).to_vec(), value_1k.to_vec());
        for (i, value_150) in (1..5u64).zip(values_150) {
            batch.insert(&self.index, key16(base, i).to_vec(), value_150.to_vec());
        }
        batch.commit().unwrap();
    }

    fn get(&self, key: &[u8]) -> bool {
        self.items.get(key).unwrap().is_some()
    }
}

/// RocksDB as its users run it: `Options::default()` with `create_if_missing`,
/// `create_missing_column_families` and `set_compression_type(DBCompressionType::Lz4)` set,
/// nothing else; the two trees are the column families `items` and `index`, each opened with
/// those same options. The WAL is on. A batch is one `WriteBatch` across both column
/// families, written with the default `WriteOptions` (durability none: the WAL record is
/// written to the OS, not synced, so a batch survives kill -9 of the process but not a power
/// loss, Shoal's `none` contract) or with `set_sync(true)` (durability sync). Gets are
/// `get_pinned_cf` (default `ReadOptions`) on `items`.
struct RocksDb {
    db: rocksdb::DB,
    write_options: WriteOptions,
}

const ROCKSDB_ITEMS: &str = "items";
const ROCKSDB_INDEX: &str = "index";

impl RocksDb {
    fn open(dir: &std::path::Path, sync: bool) -> RocksDb {
        let mut options = rocksdb::Options::default();
        options.create_if_missing(true);
        options.create_missing_column_families(true);
        options.set_compression_type(DBCompressionType::Lz4);
        let column_families = [ROCKSDB_ITEMS, ROCKSDB_INDEX].map(|name| (name, options.clone()));
        let db = rocksdb::DB::open_cf_with_opts(&options, dir, column_families).unwrap();
        let mut write_options = WriteOptions::default();
        write_options.set_sync(sync);
        RocksDb { db, write_options }
    }

    fn column_family(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(name).unwrap()
    }

    /// One column family's line of the report: its W-Amp (the `Sum` row of RocksDB's
    /// compaction stats: bytes compactions and flushes wrote per byte flushed), files and MiB
    /// per level, and the compaction debt RocksDB estimates.
    fn column_family_report(&self, name: &str) -> String {
        let cf = self.column_family(name);
        let property = |key: &str| self.db.property_value_cf(cf, key).ok().flatten();
        // The cfstats table: a header row naming the columns, then one row per level and a
        // `Sum` row, whose Size column is two words ("12.34 MB").
        let write_amplification = property("rocksdb.cfstats-no-file-histogram").and_then(|stats| {
            let column = stats
                .lines()
                .find(|line| line.trim_start().starts_with("Level"))?
                .split_whitespace()
                .position(|header| header == "W-Amp")?;
            let sum = stats
                .lines()
                .find(|line| line.trim_start().starts_with("Sum "))?;
            sum.split_whitespace().nth(column + 1).map(str::to_owned)
        });
        // levelstats: "Level Files Size(MB)", a rule, then one `level files MiB` row a level.
        let (mut files, mut mib) = (Vec::new(), Vec::new());
        for row in property("rocksdb.levelstats")
            .unwrap_or_default()
            .lines()
            .skip(2)
        {
            if let [_, level_files, level_mib] = row.split_whitespace().collect::<Vec<_>>()[..] {
                files.push(level_files.to_owned());
                mib.push(level_mib.to_owned());
            }
        }
        let pending = self
            .db
            .property_int_value_cf(cf, "rocksdb.estimate-pending-compaction-bytes")
            .ok()
            .flatten()
            .unwrap_or(0);
        format!(
            "{name}: W-Amp {}, files per level [{}], MiB per level [{}], {:.0} MiB of compaction pending",
            write_amplification.as_deref().unwrap_or("?"),
            files.join(", "),
            mib.join(", "),
            pending as f64 / (1u64 << 20) as f64
        )
    }
}

impl Engine for RocksDb {
    fn write_batch(&self, base: u64, value_1k: &[u8], values_150: [&[u8]; 4]) {
        let mut batch = rocksdb::WriteBatch::default();
        batch.put_cf(self.column_family(ROCKSDB_ITEMS), key16(base, 0), value_1k);
        let index = self.column_family(ROCKSDB_INDEX);
        for (i, value_150) in (1..5u64).zip(values_150) {
            batch.put_cf(index, key16(base, i), value_150);
        }
        self.db.write_opt(batch, &self.write_options).unwrap();
    }

    fn get(&self, key: &[u8]) -> bool {
        self.db
            .get_pinned_cf(self.column_family(ROCKSDB_ITEMS), key)
            .unwrap()
            .is_some()
    }

    fn report(&self) -> Option<String> {
        // dbstats' "Cumulative stall: 00:00:0.000 H:M:S, 0.0 percent": the time writers
        // were slowed or stopped for flushes and compaction since the database opened.
        let stall = self
            .db
            .property_value("rocksdb.dbstats")
            .ok()
            .flatten()
            .and_then(|stats| {
                stats
                    .lines()
                    .find_map(|line| line.strip_prefix("Cumulative stall: ").map(str::to_owned))
            })
            .unwrap_or_else(|| "?".to_owned());
        Some(format!(
            "writes stalled {stall}; {}; {}",
            self.column_family_report(ROCKSDB_ITEMS),
            self.column_family_report(ROCKSDB_INDEX)
        ))
    }
}

fn open_engine(name: &str, dir: &std::path::Path, sync: bool) -> Arc<dyn Engine> {
    match name {
        "shoal" => Arc::new(Shoal::open(
            dir,
            if sync {
                Durability::Sync
            } else {
                Durability::None
            },
        )),
        // fjall's own "no durability": the batch stays in an 8 KiB user-space buffer, so a
        // kill -9 loses up to the last few batches.
        "fjall" if !sync => Arc::new(Fjall::open(dir, None)),
        // Shoal's `none` contract: every acknowledged batch is in the kernel, so it survives
        // kill -9 of the process (not a power loss). fjall's Buffer mode is that contract.
        "fjall_buffer" => Arc::new(Fjall::open(dir, Some(PersistMode::Buffer))),
        "rocksdb" => Arc::new(RocksDb::open(dir, sync)),
        "shoal_blob" if !sync => Arc::new(ShoalBlob::open(dir)),
        _ => Arc::new(Fjall::open(dir, Some(PersistMode::SyncData))),
    }
}

/// Random bytes the batches' values are cut from, at a random offset per record: values
/// that do not compress, as fjall's default LZ4 and RocksDB's LZ4 would shrink constant
/// values (or one value repeated in every block) to almost nothing and the engines would not
/// be storing the same bytes. Shoal does not compress.
const VALUE_POOL_BYTES: usize = 4 << 20;

fn value_pool() -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    (0..VALUE_POOL_BYTES).map(|_| rng.random()).collect()
}

/// A `len`-byte value from the pool, chosen by `choice`.
fn pooled_value(pool: &[u8], choice: u64, len: usize) -> &[u8] {
    let start = (choice % (pool.len() - len) as u64) as usize;
    &pool[start..start + len]
}

/// The values of the batch at `base`: one of ~1 KB and four of 150 bytes, each from its own
/// place in the pool.
fn batch_values(pool: &[u8], base: u64) -> (&[u8], [&[u8]; 4]) {
    let values_150 = [13, 26, 39, 52].map(|shift| pooled_value(pool, base >> shift, 150));
    (pooled_value(pool, base, 1000), values_150)
}

/// The sustained run's batch count, when one was asked for (module docs).
fn sustained_batches() -> Option<u64> {
    std::env::var("SHOAL_PEER_SUSTAINED_BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
}

/// How many reader threads run beside the sustained writer (module docs).
fn sustained_readers() -> u64 {
    std::env::var("SHOAL_PEER_SUSTAINED_READERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The reads a second the sustained readers are held to together, if any (module docs).
fn sustained_read_rate() -> Option<f64> {
    std::env::var("SHOAL_PEER_SUSTAINED_READ_RATE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|rate: &f64| *rate > 0.0)
}

/// The key base of the sustained run's `n`th batch: uniformly spread (splitmix64), and
/// computable from `n`, so readers can ask for any batch already written.
fn sustained_base(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Bytes of every file under `dir`.
fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| match entry.metadata() {
                    Ok(meta) if meta.is_dir() => dir_bytes(&entry.path()),
                    Ok(meta) => meta.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

fn sustained_writes(_: &mut Criterion) {
    let Some(batches) = sustained_batches() else {
        return;
    };
    let pool = value_pool();
    const TENTHS: u64 = 10;
    // `SHOAL_PEER_SUSTAINED_ENGINES=shoal` (a comma-separated list) runs only those.
    let only = std::env::var("SHOAL_PEER_SUSTAINED_ENGINES").ok();
    for engine_name in ["shoal", "shoal_blob", "fjall", "fjall_buffer", "rocksdb"] {
        let named = only
            .as_deref()
            .map(|only| only.split(',').any(|name| name == engine_name));
        // The probe runs only when asked for; the engines run unless a list leaves them out.
        if named == Some(false) || (named.is_none() && engine_name == "shoal_blob") {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let engine = open_engine(engine_name, dir.path(), false);
        let cpu_before = cpu_time();
        let start = Instant::now();
        // Batches in a tenth: at least one, so a run of fewer than ten batches still divides.
        let tenth_batches = (batches / TENTHS).max(1);
        // (wall seconds, process CPU seconds) of each tenth: its rate, CPU per batch and
        // cores kept busy follow from them.
        let mut tenths: Vec<(f64, f64)> = Vec::new();
        let mut tenth_start = start;
        let mut tenth_cpu_start = cpu_before;
        // Batches written so far: readers draw only keys that are already there.
        let written = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let reader_count = sustained_readers();
        let reader_rate = sustained_read_rate().map(|rate| rate / reader_count.max(1) as f64);
        let readers: Vec<_> = (0..reader_count)
            .map(|reader| {
                let (engine, written, done) = (engine.clone(), written.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(1000 + reader);
                    let (mut reads, mut missing) = (0u64, 0u64);
                    let reading_since = Instant::now();
                    while !done.load(AtomicOrdering::Relaxed) {
                        let upto = written.load(AtomicOrdering::Relaxed);
                        if upto == 0 {
                            std::thread::yield_now();
                            continue;
                        }
                        // Held to a rate: ahead of it, sleep a millisecond (shorter sleeps
                        // oversleep) and read what is owed then.
                        let owed = reader_rate
                            .map(|rate| (reading_since.elapsed().as_secs_f64() * rate) as u64);
                        if owed.is_some_and(|owed| reads >= owed) {
                            std::thread::sleep(Duration::from_millis(1));
                            continue;
                        }
                        let n = rng.random_range(1..=upto);
                        if !engine.get(&key16(sustained_base(n), 0)) {
                            missing += 1;
                        }
                        reads += 1;
                    }
                    (reads, missing)
                })
            })
            .collect();
        let tracer = std::env::var("SHOAL_PEER_SUSTAINED_TRACE")
            .is_ok()
            .then(|| {
                let (engine, written, done) = (engine.clone(), written.clone(), done.clone());
                std::thread::spawn(move || {
                    let t0 = Instant::now();
                    while !done.load(AtomicOrdering::Relaxed) {
                        std::thread::sleep(Duration::from_secs(2));
                        eprintln!(
                            "  {:.0}s {}: {}",
                            t0.elapsed().as_secs_f64(),
                            written.load(AtomicOrdering::Relaxed),
                            engine.report().unwrap_or_default()
                        );
                    }
                })
            });
        for n in 1..=batches {
            let base = sustained_base(n);
            let (value_1k, values_150) = batch_values(&pool, base);
            engine.write_batch(base, value_1k, values_150);
            written.store(n, AtomicOrdering::Relaxed);
            if n % tenth_batches == 0 {
                let cpu_now = cpu_time();
                tenths.push((
                    tenth_start.elapsed().as_secs_f64(),
                    (cpu_now - tenth_cpu_start).as_secs_f64(),
                ));
                tenth_start = Instant::now();
                tenth_cpu_start = cpu_now;
            }
        }
        let elapsed = start.elapsed();
        done.store(true, AtomicOrdering::Relaxed);
        if let Some(tracer) = tracer {
            tracer.join().unwrap();
        }
        let (reads, missing) = readers
            .into_iter()
            .map(|reader| reader.join().unwrap())
            .fold((0, 0), |(r, m), (reads, missing)| (r + reads, m + missing));
        let cpu = cpu_time() - cpu_before;
        if reads > 0 {
            eprintln!(
                "sustained/{engine_name}: {reads} reads alongside = {:.1}k reads/s, {missing} keys not found",
                reads as f64 / elapsed.as_secs_f64() / 1e3
            );
        }
        let mean_rate = batches as f64 / elapsed.as_secs_f64();
        // How evenly the run was paced (docs/PERFORMANCE.md records it): the slowest tenth
        // against the whole run's mean.
        let tenth_batches = tenth_batches as f64;
        let slowest_tenth = tenths
            .iter()
            .map(|(seconds, _)| tenth_batches / seconds)
            .fold(f64::INFINITY, f64::min);
        let tenth_rates: Vec<String> = tenths
            .iter()
            .map(|(seconds, _)| format!("{:.1}k", tenth_batches / seconds / 1e3))
            .collect();
        eprintln!(
            "sustained/{engine_name}: {batches} batches in {:.1} s = {:.1}k batches/s, CPU per batch {:.1} µs, {:.0} MiB on disk at the end; per tenth: {}; slowest tenth {:.2} of the mean",
            elapsed.as_secs_f64(),
            mean_rate / 1e3,
            cpu.as_secs_f64() * 1e6 / batches as f64,
            dir_bytes(dir.path()) as f64 / (1u64 << 20) as f64,
            tenth_rates.join(" "),
            slowest_tenth / mean_rate
        );
        let tenth_cpu: Vec<String> = tenths
            .iter()
            .map(|(seconds, cpu_seconds)| {
                format!(
                    "{:.1} µs ({:.2})",
                    cpu_seconds * 1e6 / tenth_batches,
                    cpu_seconds / seconds
                )
            })
            .collect();
        eprintln!(
            "sustained/{engine_name}: CPU per batch per tenth (cores busy): {}",
            tenth_cpu.join(" ")
        );
        if let Some(report) = engine.report() {
            eprintln!("sustained/{engine_name}: {report}");
        }
    }
}

fn bench_batches(c: &mut Criterion) {
    if sustained_batches().is_some() {
        return;
    }
    let pool = value_pool();
    for (mode, sync) in [("none", false), ("sync", true)] {
        let mut group = c.benchmark_group(format!("peer_batch_write_{mode}"));
        group.throughput(Throughput::Elements(1));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(4));
        let engines: &[&str] = if sync {
            &["shoal", "fjall", "rocksdb"]
        } else {
            &["shoal", "fjall", "fjall_buffer", "rocksdb"]
        };
        for &engine_name in engines {
            for threads in thread_counts() {
                let dir = tempfile::tempdir().unwrap();
                let engine = open_engine(engine_name, dir.path(), sync);
                let mut cpu_total = Duration::ZERO;
                let mut batches_total = 0u64;
                let id = BenchmarkId::new(engine_name, threads);
                group.bench_with_input(id, &threads, |b, &threads| {
                    b.iter_custom(|iters| {
                        let per_thread = iters.div_ceil(threads as u64);
                        let cpu_before = cpu_time();
                        let start = Instant::now();
                        std::thread::scope(|scope| {
                            for t in 0..threads {
                                let engine = Arc::clone(&engine);
                                let pool = &pool;
                                scope.spawn(move || {
                                    let mut rng =
                                        rand::rngs::StdRng::seed_from_u64(t as u64 ^ iters);
                                    for _ in 0..per_thread {
                                        let base: u64 = rng.random();
                                        let (value_1k, values_150) = batch_values(pool, base);
                                        engine.write_batch(base, value_1k, values_150);
                                    }
                                });
                            }
                        });
                        let elapsed = start.elapsed();
                        cpu_total += cpu_time() - cpu_before;
                        batches_total += per_thread * threads as u64;
                        elapsed.mul_f64(iters as f64 / (per_thread * threads as u64) as f64)
                    });
                });
                eprintln!(
                    "peer_batch_write_{mode}/{engine_name}/{threads}: CPU per batch {:.1} µs over {batches_total} batches",
                    cpu_total.as_secs_f64() * 1e6 / batches_total.max(1) as f64
                );
                if let Some(report) = engine.report().filter(|_| batches_total > 0) {
                    eprintln!("peer_batch_write_{mode}/{engine_name}/{threads}: {report}");
                }
            }
        }
        group.finish();
    }
}

fn bench_gets(c: &mut Criterion) {
    if sustained_batches().is_some() {
        return;
    }
    let mut group = c.benchmark_group("peer_point_get");
    group.throughput(Throughput::Elements(1));
    let pool = value_pool();
    for engine_name in ["shoal", "fjall", "rocksdb"] {
        let dir = tempfile::tempdir().unwrap();
        let engine = open_engine(engine_name, dir.path(), false);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let keys: Vec<u64> = (0..100_000).map(|_| rng.random()).collect();
        for k in &keys {
            let (value_1k, values_150) = batch_values(&pool, *k);
            engine.write_batch(*k, value_1k, values_150);
        }
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new(engine_name, "existing"), |b| {
            b.iter(|| {
                i = (i + 7919) % keys.len();
                assert!(engine.get(&key16(keys[i], 0)));
            })
        });
        group.bench_function(BenchmarkId::new(engine_name, "missing"), |b| {
            b.iter(|| {
                let k: u64 = rng.random();
                assert!(!engine.get(&key16(k, 9)));
            })
        });
    }
    group.finish();
}

criterion_group!(benches, sustained_writes, bench_batches, bench_gets);
criterion_main!(benches);
