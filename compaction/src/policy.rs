//! Which files to compact next: a pure function of the tree's current shape.
//!
//! The engine describes its current version as a [`LevelsView`] and asks [`pick`] for at most
//! one [`Job`]; it marks the job's files `being_compacted` in later views until the job lands.
//! Two policies:
//!
//! **Leveled** (default). L0 holds flushed files, newest first, possibly overlapping; L1 and
//! below are sorted runs of non-overlapping files. L0 is compacted when it holds
//! `l0_trigger_files` files. Level sizes follow *dynamic level sizing* (RocksDB's
//! `level_compaction_dynamic_level_bytes`): the last level's target is the size of the largest
//! level, each level above it is `level_ratio` times smaller, and L0 flushes go straight to the
//! *base level*, the deepest level whose share fits in `base_level_bytes` (so its target lies
//! between `base_level_bytes / level_ratio` and `base_level_bytes`). Unlike RocksDB, which
//! raises every target to at least `base_level_bytes`, the targets follow the largest level
//! exactly. That floor lets the levels above the last hold up to `base_level_bytes` more (as
//! much as the last level itself when it is just over `base_level_bytes`), and under
//! overwrites every byte there is a stale copy of a key the last level also holds. Without it
//! the levels above the last hold at most `1/(level_ratio - 1)` of it (11% at ratio 10): the
//! last level holds about 90% of the data.
//!
//! Among levels over their target (and L0 over its trigger), the most over wins; from that level
//! the file that overlaps the fewest bytes of the next level (relative to its own size) is
//! chosen, and a file that overlaps nothing is moved down without rewriting (trivial move).
//! L0's score is its file count over the trigger, or, once it reaches the trigger, its bytes
//! over the base level's target if that is higher: a small base level is over its target after
//! every L0 job, and scoring L0 by file count alone would let it drain the base level while L0
//! piles up (RocksDB scores L0 the same way for the same reason). While writers are braked
//! for the bytes waiting to move down ([`write_rate_limit`]), the deepest level above the
//! last that is over its target scores above every other, since moving its files down is the
//! move that lowers what the brake measures.
//!
//! **Size-tiered**. Every L0 file is a sorted run, and each non-empty lower level is one run.
//! Once there are `l0_trigger_files` runs, it merges a window of adjacent runs (never skipping
//! one: that would reorder versions): everything when the newer runs together exceed
//! `tiered_max_space_amp_percent` of the oldest; else the first window of runs of similar size
//! (each next run at most `tiered_size_ratio_percent` larger than the window so far); else the
//! newest runs. The output goes to the lowest level above the next older run. Only one tiered
//! job runs at a time (nothing is picked while any file is being compacted), which keeps the
//! output levels of concurrent jobs from colliding.

use std::cmp::Ordering;

/// One SSTable as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileView {
    /// The file number (the engine's name for the file).
    pub number: u64,
    /// Size on disk.
    pub size_bytes: u64,
    /// Smallest user key in the file.
    pub smallest_user_key: Vec<u8>,
    /// Largest user key in the file.
    pub largest_user_key: Vec<u8>,
    /// Whether a running job already has this file as an input.
    pub being_compacted: bool,
}

/// The tree's current files by level.
///
/// `levels[0]` is L0, newest file first, files may overlap. Every other level is sorted by key
/// and its files do not overlap. Missing trailing levels are empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelsView {
    pub levels: Vec<Vec<FileView>>,
}

/// A view that breaks the shape [`pick`] relies on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// A file's smallest key is above its largest key.
    #[error("file {number} in level {level} has smallest key above largest key")]
    InvertedRange { level: usize, number: u64 },
    /// Two adjacent files of a level below L0 are out of order or overlap.
    #[error("files {first} and {second} in level {level} are out of order or overlap")]
    Overlap {
        level: usize,
        first: u64,
        second: u64,
    },
}

impl LevelsView {
    /// Checks the shape [`pick`] relies on: every file's range is ordered, and every level
    /// below L0 is sorted with files that do not overlap (adjacent files may share a boundary
    /// key). The engine should call this on any view built from data read from disk; `pick`
    /// only debug-asserts it.
    pub fn validate(&self) -> Result<(), ViewError> {
        for (level, files) in self.levels.iter().enumerate() {
            if let Some(f) = files
                .iter()
                .find(|f| f.smallest_user_key > f.largest_user_key)
            {
                return Err(ViewError::InvertedRange {
                    level,
                    number: f.number,
                });
            }
            if level == 0 {
                continue;
            }
            if let Some(pair) = files
                .windows(2)
                .find(|pair| pair[0].largest_user_key > pair[1].smallest_user_key)
            {
                return Err(ViewError::Overlap {
                    level,
                    first: pair[0].number,
                    second: pair[1].number,
                });
            }
        }
        Ok(())
    }
}

/// Which compaction policy a database uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PolicyKind {
    #[default]
    Leveled,
    SizeTiered,
}

/// Tuning for [`pick`] and [`write_rate_limit`]. Out-of-range values are clamped to the nearest
/// sensible one (noted per field) rather than rejected, so a bad option cannot stop compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOptions {
    pub kind: PolicyKind,
    /// L0 file count (size-tiered: sorted-run count) that triggers a compaction (at least 1).
    pub l0_trigger_files: usize,
    /// L0 file count (runs, for size-tiered) from which writers are slowed down.
    pub l0_slowdown_files: usize,
    /// L0 file count (runs) at which writers are held to `slowdown_rate_min_bytes_per_sec`.
    pub l0_max_delay_files: usize,
    /// Leveled: writers are also slowed once the bytes waiting to move down (what L1 to the
    /// level above the last hold over their targets) pass this percentage of the last level
    /// (at least `base_level_bytes`)...
    pub pending_slowdown_percent: u64,
    /// ...and held to `slowdown_rate_min_bytes_per_sec` at this percentage.
    pub pending_max_delay_percent: u64,
    /// Leveled: the pending-bytes slowdown never starts below this many bytes (the hard
    /// threshold moves up with it). One L0 compaction moves `l0_trigger_files` flushed
    /// memtables into the base level at once, often many times its target, and later jobs
    /// move them on: that is the normal flow, not a backlog. With one compaction thread the
    /// next L0 compactions often land before the first one's bytes have moved on, so the
    /// engine sets the floor to four such intakes, 4 x `l0_trigger_files` x its memtable size
    /// (the policy alone cannot know how large flushes are). Without a floor, 64 MiB
    /// memtables tripped the brake after every L0 compaction into a young tree's base level;
    /// with one intake, bursts of four writers still met it (a base level 382 MiB over its
    /// target, more than one 244 MiB intake); with two, once writes got faster, one 9 s burst
    /// of four writers in four met it (606 MiB pending over a 512 MiB floor, then 967 MiB
    /// while one base-to-last job ran, which held writers near a stop for 25 s). RocksDB's
    /// soft limit for the same measure is 64 GiB. Where 30% of the last level is already
    /// larger (small memtables, or an older tree) it changes nothing.
    pub pending_slowdown_floor_bytes: u64,
    /// The write rate allowed at a slowdown threshold (at least 1 KiB/s, and at least the
    /// minimum below)... Near what one writer sends unslowed, so crossing the threshold
    /// slows it a little, not at once to a fraction: at 64 MiB/s, a third of a free storage
    /// writer's rate, writers went between free and a third of their speed for seconds at a
    /// time, and a 10 GB sustained run's slowest tenth fell to half its mean
    /// (docs/PERFORMANCE.md, sustained ingest).
    pub slowdown_rate_start_bytes_per_sec: u64,
    /// ...falling geometrically to this rate three quarters of the way to the hard threshold
    /// (clamped between the minimum and the start)...
    pub slowdown_rate_knee_bytes_per_sec: u64,
    /// ...and on to this rate at the hard threshold (at least 1 KiB/s).
    pub slowdown_rate_min_bytes_per_sec: u64,
    /// Size ratio between adjacent levels (at least 2).
    pub level_ratio: u64,
    /// Size target of the base level (the level L0 compacts into); at least 1.
    pub base_level_bytes: u64,
    /// Size at which compaction output files are cut.
    pub target_file_bytes: u64,
    /// Number of levels including L0 (at least 2).
    pub max_levels: usize,
    /// Most L0 files one job takes (the oldest ones); at least 1.
    pub l0_job_files_max: usize,
    /// Size-tiered: a run joins a window if it is at most this much larger than the window.
    pub tiered_size_ratio_percent: u64,
    /// Size-tiered: merge everything once all newer runs exceed this share of the oldest run.
    pub tiered_max_space_amp_percent: u64,
}

impl Default for PolicyOptions {
    fn default() -> PolicyOptions {
        PolicyOptions {
            kind: PolicyKind::Leveled,
            l0_trigger_files: 4,
            l0_slowdown_files: 12,
            l0_max_delay_files: 24,
            pending_slowdown_percent: 30,
            pending_max_delay_percent: 100,
            pending_slowdown_floor_bytes: 0,
            slowdown_rate_start_bytes_per_sec: 256 << 20,
            slowdown_rate_knee_bytes_per_sec: 48 << 20,
            slowdown_rate_min_bytes_per_sec: 256 << 10,
            level_ratio: 10,
            base_level_bytes: 64 << 20,
            target_file_bytes: 64 << 20,
            max_levels: 7,
            l0_job_files_max: 32,
            tiered_size_ratio_percent: 20,
            tiered_max_space_amp_percent: 200,
        }
    }
}

/// One compaction to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Input files by level, upper level first; the output level's overlapping files, if any,
    /// are the last entry. L0 files are listed newest first.
    pub inputs: Vec<(usize, Vec<u64>)>,
    /// Level the output files go to.
    pub output_level: usize,
    /// The inputs can be relinked into the output level without rewriting them.
    pub trivial_move: bool,
    /// No level below the output level holds any key in the inputs' range, so tombstones may
    /// be dropped (see [`crate::gc`]).
    pub bottommost: bool,
}

/// Dynamic per-level size targets (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelTargets {
    /// The level L0 compacts into.
    pub base_level: usize,
    /// Target bytes per level; 0 for L0 (which uses a file count) and for levels above the
    /// base level (which should be empty and are drained downwards when not).
    pub target_bytes: Vec<u64>,
}

/// The deepest level index.
fn last_level(view: &LevelsView, opts: &PolicyOptions) -> usize {
    opts.max_levels.max(view.levels.len()).max(2) - 1
}

fn level_files(view: &LevelsView, level: usize) -> &[FileView] {
    view.levels.get(level).map_or(&[], |files| files.as_slice())
}

fn total_bytes<'a>(files: impl IntoIterator<Item = &'a FileView>) -> u64 {
    files
        .into_iter()
        .fold(0u64, |sum, f| sum.saturating_add(f.size_bytes))
}

/// Computes the dynamic level targets for `view` (see the module docs).
pub fn level_targets(view: &LevelsView, opts: &PolicyOptions) -> LevelTargets {
    let last = last_level(view, opts);
    let ratio = opts.level_ratio.max(2);
    let base_bytes = opts.base_level_bytes.max(1);
    let largest_level_bytes = (1..=last)
        .map(|level| total_bytes(level_files(view, level)))
        .max()
        .unwrap_or(0);

    // Walk up from the last level until a level's share fits the base target.
    let mut base_level = last;
    let mut share = largest_level_bytes;
    while base_level > 1 && share > base_bytes {
        share /= ratio;
        base_level -= 1;
    }

    let mut target_bytes = vec![0u64; last + 1];
    // A tree whose largest level fits the base target is one level (plus L0); its target
    // only matters for reporting, since the last level never compacts by size.
    target_bytes[last] = largest_level_bytes.max(base_bytes);
    let mut level_target = largest_level_bytes;
    for level in (base_level..last).rev() {
        level_target /= ratio;
        // At least one byte: a target of 0 means "above the base level".
        target_bytes[level] = level_target.max(1);
    }
    debug_assert!(
        (base_level..last).all(|level| target_bytes[level] <= target_bytes[level + 1]),
        "level targets must grow downwards: {target_bytes:?}"
    );
    LevelTargets {
        base_level,
        target_bytes,
    }
}

/// Picks the next compaction, if any is due.
///
/// A view that fails [`LevelsView::validate`] gets no job: any job computed from it could
/// merge files into a level they overlap. The engine should validate views it builds from
/// disk itself, so the cause is reported rather than compaction silently stopping.
pub fn pick(view: &LevelsView, opts: &PolicyOptions) -> Option<Job> {
    if view.validate().is_err() {
        return None;
    }
    match opts.kind {
        PolicyKind::Leveled => pick_leveled(view, opts),
        PolicyKind::SizeTiered => pick_size_tiered(view, opts),
    }
}

/// How far between the soft and the hard threshold the write rate reaches
/// `slowdown_rate_knee_bytes_per_sec` (see [`write_rate_limit`]).
const SLOWDOWN_KNEE_FRACTION: f64 = 0.75;

/// The lowest write rate any option can ask for: a slowed writer always makes progress.
pub const SLOWDOWN_RATE_FLOOR_BYTES_PER_SEC: u64 = 1 << 10;

/// The rate (bytes per second) writers are held to given the current backlog, or `None` when
/// they run free. Two backlogs count, the one further past its soft threshold wins:
/// - L0 files (sorted runs for size-tiered): from `l0_slowdown_files` to `l0_max_delay_files`;
/// - leveled only, the bytes waiting to move down ([`pending_bytes`]): from
///   `pending_slowdown_percent` to `pending_max_delay_percent` of the last level (raised to
///   `pending_slowdown_floor_bytes` if that is more). Without it a writer faster than
///   compaction keeps L0 short (L0 jobs score high) while stale versions pile up in the
///   levels below it, and space amplification during writes grows unbounded.
///
/// At the soft threshold the rate is `slowdown_rate_start_bytes_per_sec`; it falls
/// geometrically with the backlog (a constant factor per step, as RocksDB's delayed write rate
/// does) to `slowdown_rate_knee_bytes_per_sec` three quarters of the way to the hard
/// threshold, then geometrically to `slowdown_rate_min_bytes_per_sec` at the hard threshold,
/// and stays there beyond it. The knee keeps the fall gentle where a writer faster than
/// compaction settles: falling straight from 256 MiB/s to 256 KiB/s (a factor of 1.8 per L0
/// file), a 10 GB sustained run's writer swung between free and a tenth of its speed, and its
/// slowest tenth ran at 0.56–0.63 of its mean; with the knee at 48 MiB/s, 0.71–0.78, and
/// with a reader beside the writer (which settles near 70 MiB/s, past a knee at 64 MiB/s
/// where the fall turns steep) 0.64–0.77 (docs/PERFORMANCE.md, sustained ingest). The last
/// quarter still brings a writer that outruns compaction down to the minimum, as before.
///
/// A rate, not a delay per write: a writer slightly over the threshold is slowed slightly
/// whatever its batch size (a fixed 1 ms per write stopped a writer of 10 µs batches almost
/// dead at the threshold), and a writer faster than compaction settles where the rate meets
/// what compaction drains. The engine paces writes to it, never holding one more than a second.
pub fn write_rate_limit(view: &LevelsView, opts: &PolicyOptions) -> Option<u64> {
    let (runs, pending) = match opts.kind {
        PolicyKind::Leveled => (
            level_files(view, 0).len(),
            pending_fraction(view, opts, &level_targets(view, opts)),
        ),
        PolicyKind::SizeTiered => (sorted_runs(view, opts).len(), None),
    };
    let fraction = runs_fraction(runs, opts)
        .into_iter()
        .chain(pending)
        .reduce(f64::max)?;
    let min = opts
        .slowdown_rate_min_bytes_per_sec
        .max(SLOWDOWN_RATE_FLOOR_BYTES_PER_SEC);
    let start = opts.slowdown_rate_start_bytes_per_sec.max(min);
    let knee = opts.slowdown_rate_knee_bytes_per_sec.clamp(min, start);
    let geometric =
        |from: u64, to: u64, part: f64| from as f64 * (to as f64 / from as f64).powf(part);
    let rate = if fraction <= SLOWDOWN_KNEE_FRACTION {
        geometric(start, knee, fraction / SLOWDOWN_KNEE_FRACTION)
    } else {
        let past_knee = (fraction - SLOWDOWN_KNEE_FRACTION) / (1.0 - SLOWDOWN_KNEE_FRACTION);
        geometric(knee, min, past_knee)
    };
    // Rounding can land a hair outside [min, start]; the ends are exact.
    Some((rate as u64).clamp(min, start))
}

/// Where L0's file count (sorted runs, for size-tiered) lies between `l0_slowdown_files` and
/// `l0_max_delay_files`, as [`backlog_fraction`].
fn runs_fraction(runs: usize, opts: &PolicyOptions) -> Option<f64> {
    backlog_fraction(
        runs as u64,
        opts.l0_slowdown_files as u64,
        opts.l0_max_delay_files as u64,
    )
}

/// Where `backlog` lies between `soft` (0.0) and `hard` (1.0, and beyond); `None` below soft.
fn backlog_fraction(backlog: u64, soft: u64, hard: u64) -> Option<f64> {
    if backlog < soft {
        return None;
    }
    let steps = hard.saturating_sub(soft).max(1) as f64;
    Some(((backlog - soft) as f64 / steps).min(1.0))
}

/// Leveled: the bytes waiting to move down, i.e. what L1 to the level above the last hold
/// over their dynamic targets (a level above the base level has target 0: all of it waits).
pub fn pending_bytes(view: &LevelsView, opts: &PolicyOptions) -> u64 {
    pending_bytes_over(view, &level_targets(view, opts))
}

/// [`pending_bytes`] over targets already computed.
fn pending_bytes_over(view: &LevelsView, targets: &LevelTargets) -> u64 {
    let last = targets.target_bytes.len() - 1;
    (1..last)
        .map(|level| {
            total_bytes(level_files(view, level)).saturating_sub(targets.target_bytes[level])
        })
        .fold(0u64, u64::saturating_add)
}

/// The scale pending bytes are measured against: the last level, at least the base target
/// (so a young tree whose data has not reached the last level yet is not slowed).
fn pending_scale_bytes(last_level_bytes: u64, opts: &PolicyOptions) -> u64 {
    last_level_bytes.max(opts.base_level_bytes).max(1)
}

fn pending_fraction(
    view: &LevelsView,
    opts: &PolicyOptions,
    targets: &LevelTargets,
) -> Option<f64> {
    let last = targets.target_bytes.len() - 1;
    let scale = pending_scale_bytes(total_bytes(level_files(view, last)), opts);
    let percent_of_scale = |percent: u64| (scale as u128 * u128::from(percent) / 100) as u64;
    let soft = percent_of_scale(opts.pending_slowdown_percent);
    // Raising the soft threshold to the floor moves the hard one by as much, so the rate
    // still falls over the same span of bytes.
    let floor_raise = opts.pending_slowdown_floor_bytes.saturating_sub(soft);
    backlog_fraction(
        pending_bytes_over(view, targets),
        soft.saturating_add(floor_raise),
        percent_of_scale(opts.pending_max_delay_percent).saturating_add(floor_raise),
    )
}

// ---------------------------------------------------------------------------------------------
// Key ranges

/// An inclusive user-key range.
#[derive(Debug, Clone, Copy)]
struct KeyRange<'a> {
    smallest: &'a [u8],
    largest: &'a [u8],
}

impl<'a> KeyRange<'a> {
    /// The smallest range covering all `files`; `None` when there are none.
    fn covering(files: impl IntoIterator<Item = &'a FileView>) -> Option<KeyRange<'a>> {
        files.into_iter().fold(None, |range, f| {
            let file = KeyRange {
                smallest: &f.smallest_user_key,
                largest: &f.largest_user_key,
            };
            Some(match range {
                None => file,
                Some(r) => r.union(file),
            })
        })
    }

    fn union(self, other: KeyRange<'a>) -> KeyRange<'a> {
        KeyRange {
            smallest: self.smallest.min(other.smallest),
            largest: self.largest.max(other.largest),
        }
    }

    fn overlaps(&self, file: &FileView) -> bool {
        file.smallest_user_key.as_slice() <= self.largest
            && file.largest_user_key.as_slice() >= self.smallest
    }
}

/// The files of a sorted, non-overlapping level that overlap `range`.
fn overlapping<'a>(files: &'a [FileView], range: KeyRange<'_>) -> &'a [FileView] {
    let start = files.partition_point(|f| f.largest_user_key.as_slice() < range.smallest);
    let len = files[start..].partition_point(|f| f.smallest_user_key.as_slice() <= range.largest);
    &files[start..start + len]
}

/// Whether no level below `output_level` holds a key in `range`.
fn is_bottommost(view: &LevelsView, output_level: usize, range: KeyRange<'_>) -> bool {
    view.levels
        .iter()
        .skip(output_level + 1)
        .all(|files| files.iter().all(|f| !range.overlaps(f)))
}

fn numbers(files: &[FileView]) -> Vec<u64> {
    files.iter().map(|f| f.number).collect()
}

// ---------------------------------------------------------------------------------------------
// Leveled

fn pick_leveled(view: &LevelsView, opts: &PolicyOptions) -> Option<Job> {
    let targets = level_targets(view, opts);
    let last = last_level(view, opts);
    let drains_pending = level_draining_pending_bytes(view, opts, &targets, last);

    // Score every level that can start a compaction: L0 by file count, the others by bytes
    // not already being compacted over their target. The last level never compacts by size.
    let mut scored: Vec<(f64, usize)> = Vec::with_capacity(last);
    scored.push((l0_score(view, opts, &targets), 0));
    for level in 1..last {
        let files = level_files(view, level);
        let idle_bytes = total_bytes(files.iter().filter(|f| !f.being_compacted));
        let score = match targets.target_bytes[level] {
            // The one move that lowers pending bytes while they brake writers: first of all.
            _ if drains_pending == Some(level) => f64::INFINITY,
            // Above the base level: any data there is in the way and drains down first.
            0 if idle_bytes > 0 => f64::MAX,
            0 => 0.0,
            target => idle_bytes as f64 / target as f64,
        };
        scored.push((score, level));
    }
    // Highest score first; on ties the upper level (stable sort keeps level order).
    scored.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(Ordering::Equal));

    scored
        .into_iter()
        .filter(|&(score, _)| score >= 1.0)
        .find_map(|(_, level)| {
            if level == 0 {
                pick_l0(view, opts, targets.base_level)
            } else {
                pick_level_file(view, level)
            }
        })
}

/// The level whose jobs go first (they score above every other): while writers are braked
/// for pending bytes more than for L0's file count, the deepest level above the last that
/// is over its target. Moving one of its files into the level below it (the last level, or
/// a level under its target) lowers pending bytes. An L0 job adds its files to the base
/// level, and a move between two levels that are both over their targets only shifts the
/// excess; yet scored by size, L0 and the base level win every turn (the base target is a
/// few MiB while one L0 job brings hundreds), and the level above the last waits until it
/// outgrows the last level itself: at a0b95ea, 10 GB of sustained writes with a reader
/// beside them had the items tree's L5 at 1,399 MiB over a last level of 869, and the brake
/// held the writer to 0.4 MiB/s until L5-to-L6 jobs caught up (docs/PERFORMANCE.md,
/// sustained ingest). With this rule, against 46a8cac, the run's mean rose 15% (52–54 k to
/// 56–64 k batches/s), its slowest tenth was 0.71–0.76 of the mean in nine runs of ten
/// (0.63 in one), and write amplification fell (5.65 against 6.72). The price: L0 waits
/// while pending bytes drain, so it held 10–21 files, and the reader beside the writer read
/// 17% fewer keys a second on average. `None` when the brake is not on for pending bytes;
/// when none of the level's files is free, the other scores decide.
fn level_draining_pending_bytes(
    view: &LevelsView,
    opts: &PolicyOptions,
    targets: &LevelTargets,
    last: usize,
) -> Option<usize> {
    let pending = pending_fraction(view, opts, targets)?;
    if runs_fraction(level_files(view, 0).len(), opts).is_some_and(|runs| runs > pending) {
        return None;
    }
    // Levels from the base level down have targets of at least one byte.
    (targets.base_level..last)
        .rev()
        .find(|&level| total_bytes(level_files(view, level)) > targets.target_bytes[level])
}

/// L0's score (module docs): its file count over the trigger, raised to its bytes over the
/// base level's target once the trigger is reached.
fn l0_score(view: &LevelsView, opts: &PolicyOptions, targets: &LevelTargets) -> f64 {
    let l0 = level_files(view, 0);
    let trigger = opts.l0_trigger_files.max(1);
    let by_count = l0.len() as f64 / trigger as f64;
    if l0.len() < trigger {
        return by_count;
    }
    let base_target = targets.target_bytes[targets.base_level].max(1);
    let by_bytes =
        total_bytes(l0.iter().filter(|f| !f.being_compacted)) as f64 / base_target as f64;
    by_count.max(by_bytes)
}

/// L0 into the base level (or into a higher level that still holds data in the range, since
/// newer data must never end up below older data).
fn pick_l0(view: &LevelsView, opts: &PolicyOptions, base_level: usize) -> Option<Job> {
    let l0 = level_files(view, 0);
    if l0.is_empty() || l0.iter().any(|f| f.being_compacted) {
        return None;
    }
    // The oldest files: leaving newer L0 files behind is fine (L0 is read first), leaving
    // older ones behind is not.
    let take = l0.len().min(opts.l0_job_files_max.max(1));
    let chosen = &l0[l0.len() - take..];
    let range = KeyRange::covering(chosen)?;
    let output_level = (1..base_level)
        .find(|&level| !overlapping(level_files(view, level), range).is_empty())
        .unwrap_or(base_level);
    let overlapped = overlapping(level_files(view, output_level), range);
    if overlapped.iter().any(|f| f.being_compacted) {
        return None;
    }
    let full_range = KeyRange::covering(chosen.iter().chain(overlapped))?;
    let mut inputs = vec![(0, numbers(chosen))];
    if !overlapped.is_empty() {
        inputs.push((output_level, numbers(overlapped)));
    }
    Some(Job {
        inputs,
        output_level,
        trivial_move: chosen.len() == 1 && overlapped.is_empty(),
        bottommost: is_bottommost(view, output_level, full_range),
    })
}

/// One file (plus neighbours sharing a boundary key) of `level` into `level + 1`: the one
/// overlapping the fewest next-level bytes per byte of its own.
fn pick_level_file(view: &LevelsView, level: usize) -> Option<Job> {
    let files = level_files(view, level);
    let next_files = level_files(view, level + 1);
    struct Candidate<'a> {
        overlap_bytes: u64,
        input_bytes: u64,
        /// Inclusive index range of the chosen files in `level`.
        first: usize,
        last: usize,
        overlapped: &'a [FileView],
    }
    let mut best: Option<Candidate<'_>> = None;
    for index in 0..files.len() {
        let (lo, hi) = clean_cut(files, index);
        let chosen = &files[lo..=hi];
        if chosen.iter().any(|f| f.being_compacted) {
            continue;
        }
        let Some(range) = KeyRange::covering(chosen) else {
            continue;
        };
        let overlapped = overlapping(next_files, range);
        if overlapped.iter().any(|f| f.being_compacted) {
            continue;
        }
        let overlap_bytes = total_bytes(overlapped);
        let input_bytes = total_bytes(chosen).max(1);
        let better = match &best {
            None => true,
            // overlap/input < best.overlap/best.input, cross-multiplied to stay exact.
            Some(b) => {
                (overlap_bytes as u128) * (b.input_bytes as u128)
                    < (b.overlap_bytes as u128) * (input_bytes as u128)
            }
        };
        if better {
            best = Some(Candidate {
                overlap_bytes,
                input_bytes,
                first: lo,
                last: hi,
                overlapped,
            });
        }
    }
    let Candidate {
        first,
        last,
        overlapped,
        ..
    } = best?;
    let chosen = &files[first..=last];
    let full_range = KeyRange::covering(chosen.iter().chain(overlapped))?;
    let mut inputs = vec![(level, numbers(chosen))];
    if !overlapped.is_empty() {
        inputs.push((level + 1, numbers(overlapped)));
    }
    Some(Job {
        inputs,
        output_level: level + 1,
        trivial_move: overlapped.is_empty(),
        bottommost: is_bottommost(view, level + 1, full_range),
    })
}

/// The run of adjacent files around `index` that share boundary user keys: they must move
/// together, or versions of one user key would be split between two levels.
fn clean_cut(files: &[FileView], index: usize) -> (usize, usize) {
    let (mut lo, mut hi) = (index, index);
    while lo > 0 && files[lo - 1].largest_user_key == files[lo].smallest_user_key {
        lo -= 1;
    }
    while hi + 1 < files.len() && files[hi + 1].smallest_user_key == files[hi].largest_user_key {
        hi += 1;
    }
    (lo, hi)
}

// ---------------------------------------------------------------------------------------------
// Size-tiered

/// One sorted run: a single L0 file or a whole lower level.
#[derive(Debug)]
struct SortedRun<'a> {
    level: usize,
    files: &'a [FileView],
    size_bytes: u64,
}

/// The sorted runs, newest first.
fn sorted_runs<'a>(view: &'a LevelsView, opts: &PolicyOptions) -> Vec<SortedRun<'a>> {
    let l0 = level_files(view, 0);
    let l0_runs = l0.iter().enumerate().map(|(i, f)| SortedRun {
        level: 0,
        files: &l0[i..=i],
        size_bytes: f.size_bytes,
    });
    let level_runs = (1..=last_level(view, opts)).filter_map(|level| {
        let files = level_files(view, level);
        (!files.is_empty()).then(|| SortedRun {
            level,
            files,
            size_bytes: total_bytes(files),
        })
    });
    l0_runs.chain(level_runs).collect()
}

/// The level the merge of `runs[start..end]` writes to, if one exists: the last level when the
/// window includes the oldest run, else the lowest level above the next older run, which must
/// not be above the window's oldest run nor be L0.
fn tiered_output_level(runs: &[SortedRun<'_>], end: usize, last: usize) -> Option<usize> {
    let oldest_in_window = runs.get(end.checked_sub(1)?)?.level;
    let output_level = match runs.get(end) {
        None => last,
        Some(next_older) => next_older.level.checked_sub(1)?,
    };
    (output_level >= 1 && output_level >= oldest_in_window).then_some(output_level)
}

fn pick_size_tiered(view: &LevelsView, opts: &PolicyOptions) -> Option<Job> {
    let runs = sorted_runs(view, opts);
    let last = last_level(view, opts);
    if runs.len() < opts.l0_trigger_files.max(2) {
        return None;
    }
    if runs
        .iter()
        .any(|run| run.files.iter().any(|f| f.being_compacted))
    {
        return None;
    }

    let window = space_amp_window(&runs, opts)
        .or_else(|| size_ratio_window(&runs, opts, last))
        .or_else(|| newest_runs_window(&runs, last))?;
    let (start, end) = window;
    let output_level = tiered_output_level(&runs, end, last)?;

    let mut inputs: Vec<(usize, Vec<u64>)> = Vec::new();
    for run in &runs[start..end] {
        match inputs.last_mut() {
            Some((level, numbers)) if *level == run.level => {
                numbers.extend(run.files.iter().map(|f| f.number))
            }
            _ => inputs.push((run.level, numbers(run.files))),
        }
    }
    let range = KeyRange::covering(runs[start..end].iter().flat_map(|run| run.files))?;
    Some(Job {
        inputs,
        output_level,
        trivial_move: false,
        bottommost: is_bottommost(view, output_level, range),
    })
}

/// All runs, when the newer runs add up to more than the allowed share of the oldest one.
fn space_amp_window(runs: &[SortedRun<'_>], opts: &PolicyOptions) -> Option<(usize, usize)> {
    let (oldest, newer) = runs.split_last()?;
    let newer_bytes = newer
        .iter()
        .fold(0u64, |sum, run| sum.saturating_add(run.size_bytes));
    let allowed = (oldest.size_bytes as u128) * (opts.tiered_max_space_amp_percent as u128) / 100;
    (!newer.is_empty() && newer_bytes as u128 > allowed).then_some((0, runs.len()))
}

/// The first window of at least two adjacent runs of similar size that has an output level.
fn size_ratio_window(
    runs: &[SortedRun<'_>],
    opts: &PolicyOptions,
    last: usize,
) -> Option<(usize, usize)> {
    let growth_percent = 100u128 + opts.tiered_size_ratio_percent as u128;
    (0..runs.len()).find_map(|start| {
        let mut window_bytes = runs[start].size_bytes as u128;
        let mut end = start + 1;
        while end < runs.len()
            && (runs[end].size_bytes as u128) * 100 <= window_bytes * growth_percent
        {
            window_bytes += runs[end].size_bytes as u128;
            end += 1;
        }
        (end - start >= 2 && tiered_output_level(runs, end, last).is_some()).then_some((start, end))
    })
}

/// The newest runs, as few as give a valid output level (at least two).
fn newest_runs_window(runs: &[SortedRun<'_>], last: usize) -> Option<(usize, usize)> {
    (2..=runs.len())
        .find(|&end| tiered_output_level(runs, end, last).is_some())
        .map(|end| (0, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn file(number: u64, size_bytes: u64, smallest: &str, largest: &str) -> FileView {
        FileView {
            number,
            size_bytes,
            smallest_user_key: smallest.as_bytes().to_vec(),
            largest_user_key: largest.as_bytes().to_vec(),
            being_compacted: false,
        }
    }

    fn view(levels: Vec<Vec<FileView>>) -> LevelsView {
        LevelsView { levels }
    }

    fn l0_files(count: u64) -> Vec<FileView> {
        // Newest first: higher numbers are newer.
        (0..count)
            .rev()
            .map(|n| file(100 + n, MIB, "a", "z"))
            .collect()
    }

    #[test]
    fn validate_rejects_overlapping_levels_and_inverted_files() {
        let ok = view(vec![
            vec![file(1, 1, "a", "z"), file(2, 1, "b", "c")],
            vec![file(3, 1, "a", "c"), file(4, 1, "c", "d")],
        ]);
        assert_eq!(ok.validate(), Ok(()));
        let overlap = view(vec![
            vec![],
            vec![file(3, 1, "a", "d"), file(4, 1, "c", "e")],
        ]);
        assert_eq!(
            overlap.validate(),
            Err(ViewError::Overlap {
                level: 1,
                first: 3,
                second: 4
            })
        );
        let inverted = view(vec![vec![file(7, 1, "z", "a")]]);
        assert_eq!(
            inverted.validate(),
            Err(ViewError::InvertedRange {
                level: 0,
                number: 7
            })
        );
    }

    #[test]
    fn malformed_views_get_no_job() {
        let mut levels = vec![l0_files(8)];
        levels.push(vec![file(3, 1, "a", "d"), file(4, 1, "c", "e")]);
        assert_eq!(pick(&view(levels), &PolicyOptions::default()), None);
    }

    #[test]
    fn l0_below_trigger_picks_nothing() {
        let opts = PolicyOptions::default();
        assert_eq!(pick(&view(vec![l0_files(3)]), &opts), None);
        assert_eq!(pick(&LevelsView::default(), &opts), None);
    }

    #[test]
    fn l0_at_trigger_goes_to_the_base_level_with_overlaps() {
        let opts = PolicyOptions::default();
        // Small tree: base level is the last level (L6).
        let mut levels = vec![l0_files(4)];
        levels.resize(6, Vec::new());
        levels.push(vec![
            file(1, 10 * MIB, "a", "f"),
            file(2, 10 * MIB, "x", "y"),
        ]);
        let job = pick(&view(levels), &opts).unwrap();
        assert_eq!(
            job,
            Job {
                inputs: vec![(0, vec![103, 102, 101, 100]), (6, vec![1, 2])],
                output_level: 6,
                trivial_move: false,
                bottommost: true,
            }
        );
    }

    #[test]
    fn l0_waits_while_l0_is_being_compacted() {
        let mut l0 = l0_files(5);
        l0[4].being_compacted = true;
        assert_eq!(pick(&view(vec![l0]), &PolicyOptions::default()), None);
    }

    #[test]
    fn single_l0_file_over_empty_range_is_a_trivial_move() {
        let opts = PolicyOptions {
            l0_trigger_files: 1,
            ..PolicyOptions::default()
        };
        let mut levels = vec![vec![file(9, MIB, "m", "n")]];
        levels.resize(6, Vec::new());
        levels.push(vec![file(1, MIB, "a", "b"), file(2, MIB, "x", "y")]);
        let job = pick(&view(levels), &opts).unwrap();
        assert_eq!(job.inputs, vec![(0, vec![9])]);
        assert_eq!(job.output_level, 6);
        assert!(job.trivial_move);
    }

    /// The shape of the a0b95ea trace: the level above the last has outgrown the last level,
    /// and the base level holds one L0 job's worth, far over its few-MiB target.
    fn level_above_the_last_outgrown(l0: Vec<FileView>) -> LevelsView {
        let mut levels = vec![l0, Vec::new(), Vec::new(), Vec::new()];
        levels.push(vec![file(9, 256 * MIB, "k00", "k99")]);
        levels.push(
            (0..10)
                .map(|i| file(10 + i, 100 * MIB, &format!("k{i}0"), &format!("k{i}9")))
                .collect(),
        );
        levels.push(
            (0..10)
                .map(|i| file(30 + i, 87 * MIB, &format!("k{i}0"), &format!("k{i}9")))
                .collect(),
        );
        view(levels)
    }

    #[test]
    fn a_pending_bytes_brake_moves_the_level_above_the_last_down_first() {
        let opts = PolicyOptions::default();
        let tree = level_above_the_last_outgrown(l0_files(4));
        // Targets follow the largest level, L5's 1,000 MiB: L5 100 MiB, L4 10 MiB (the base).
        // Pending: (256 - 10) + (1000 - 100) = 1,146 MiB, past 100% of the 870 MiB last level.
        assert_eq!(pending_bytes(&tree, &opts), 1_146 * MIB);
        assert_eq!(write_rate_limit(&tree, &opts), Some(256 << 10));
        // By score the base level (25.6 times its target) beats L5 (10 times); that move
        // only shifts L4's excess into L5. Moving an L5 file into L6 lowers pending bytes.
        let job = pick(&tree, &opts).unwrap();
        assert_eq!(job.inputs, vec![(5, vec![10]), (6, vec![30])]);
        assert_eq!(job.output_level, 6);

        // With that file already moving, the next free one goes.
        let mut busy = tree.clone();
        busy.levels[5][0].being_compacted = true;
        busy.levels[6][0].being_compacted = true;
        let job = pick(&busy, &opts).unwrap();
        assert_eq!(job.inputs, vec![(5, vec![11]), (6, vec![31])]);
    }

    #[test]
    fn without_a_pending_bytes_brake_the_scores_choose() {
        // The same tree with the brake's floor above its pending bytes: L4 wins on score.
        let opts = PolicyOptions {
            pending_slowdown_floor_bytes: 2_000 * MIB,
            ..PolicyOptions::default()
        };
        let tree = level_above_the_last_outgrown(l0_files(4));
        assert_eq!(write_rate_limit(&tree, &opts), None);
        let job = pick(&tree, &opts).unwrap();
        assert_eq!(job.inputs[0], (4, vec![9]));
        assert_eq!(job.output_level, 5);

        // The brake on, but harder for L0's file count than for pending bytes: the scores
        // choose too, and L0 (24 files over a trigger of 4) goes first.
        let opts = PolicyOptions {
            pending_max_delay_percent: 1_000,
            ..PolicyOptions::default()
        };
        let flushes = (0..24)
            .rev()
            .map(|n| file(100 + n, 64 * MIB, "k00", "k99"))
            .collect();
        let tree = level_above_the_last_outgrown(flushes);
        let targets = level_targets(&tree, &opts);
        assert!(pending_fraction(&tree, &opts, &targets).is_some_and(|f| f < 1.0));
        let job = pick(&tree, &opts).unwrap();
        assert_eq!(job.inputs[0].0, 0);
        assert_eq!(job.output_level, 4);
    }

    #[test]
    fn dynamic_targets_put_most_data_in_the_last_level() {
        let opts = PolicyOptions::default();
        let mut levels = vec![Vec::new(); 6];
        levels.push(vec![file(1, 10_000 * MIB, "a", "z")]);
        let targets = level_targets(&view(levels), &opts);
        // 10000 MiB -> L5 1000, L4 100, L3 10 (fits 64 MiB: the base level).
        assert_eq!(targets.base_level, 3);
        assert_eq!(
            targets.target_bytes,
            vec![0, 0, 0, 10 * MIB, 100 * MIB, 1000 * MIB, 10_000 * MIB]
        );
        let small = level_targets(&view(vec![vec![], vec![file(1, MIB, "a", "b")]]), &opts);
        assert_eq!(small.base_level, 6);
        assert_eq!(small.target_bytes[6], 64 * MIB);
    }

    #[test]
    fn levels_above_the_last_hold_at_most_a_ninth_of_it_at_every_size() {
        // Whatever the tree's size relative to the base target (this includes a last level
        // just over the base target, where the levels above used to be raised to the base
        // target and could hold half as much as the last one), full levels above the last add
        // at most 1/(ratio - 1) of it: the last level holds at least 90% of the bytes.
        let opts = PolicyOptions {
            base_level_bytes: 32 * MIB,
            ..PolicyOptions::default()
        };
        for last_level_bytes in [
            33 * MIB,
            61 * MIB,
            320 * MIB,
            330 * MIB,
            640 * MIB,
            5_000 * MIB,
            100_000 * MIB,
        ] {
            let mut levels = vec![Vec::new(); 6];
            levels.push(vec![file(1, last_level_bytes, "a", "z")]);
            let targets = level_targets(&view(levels), &opts);
            let above: u64 = targets.target_bytes[..6].iter().sum();
            let last_share = last_level_bytes as f64 / (last_level_bytes + above) as f64;
            assert!(
                last_share >= 0.9,
                "{last_level_bytes} bytes: {targets:?}, last level share {last_share:.3}"
            );
            let base_target = targets.target_bytes[targets.base_level];
            assert!(
                base_target <= opts.base_level_bytes && base_target > opts.base_level_bytes / 10,
                "{last_level_bytes} bytes: base target {base_target}"
            );
        }
    }

    #[test]
    fn l0_at_trigger_outscores_a_small_base_level_by_its_bytes() {
        // L6 holds 400 MiB, so the base level is L5 with a 40 MiB target. L5 is twice over it,
        // but L0's four 64 MiB files are over six times the base target: L0 goes first, where
        // a score by file count alone (1.0) would leave it waiting behind L5.
        let opts = PolicyOptions::default();
        let mut levels = vec![(0..4)
            .rev()
            .map(|n| file(100 + n, 64 * MIB, "a", "z"))
            .collect::<Vec<_>>()];
        levels.resize(5, Vec::new());
        levels.push(vec![file(10, 80 * MIB, "a", "z")]);
        levels.push(vec![file(20, 400 * MIB, "a", "z")]);
        let targets = level_targets(&view(levels.clone()), &opts);
        assert_eq!((targets.base_level, targets.target_bytes[5]), (5, 40 * MIB));
        let job = pick(&view(levels.clone()), &opts).unwrap();
        assert_eq!(job.inputs[0], (0, vec![103, 102, 101, 100]));
        assert_eq!(job.output_level, 5);

        // Below the trigger, L0's bytes do not count: L5 goes.
        levels[0].truncate(3);
        let job = pick(&view(levels), &opts).unwrap();
        assert_eq!(job.inputs[0], (5, vec![10]));
    }

    #[test]
    fn over_target_level_picks_least_overlapping_file() {
        let opts = PolicyOptions::default();
        let mut levels = vec![Vec::new(); 5];
        // L5 target is 1000 MiB (L6 holds 10000); L5 holds 1200 MiB in three files.
        levels.push(vec![
            file(10, 400 * MIB, "a", "c"),
            file(11, 400 * MIB, "d", "f"),
            file(12, 400 * MIB, "g", "i"),
        ]);
        levels.push(vec![
            file(20, 5000 * MIB, "a", "c"),
            file(21, 100 * MIB, "d", "e"),
            file(22, 4900 * MIB, "f", "z"),
        ]);
        let job = pick(&view(levels.clone()), &opts).unwrap();
        // File 11 overlaps 21 and 22 (5000 MiB); file 10 overlaps 20 (5000); file 12 overlaps
        // 22 (4900): least.
        assert_eq!(job.inputs, vec![(5, vec![12]), (6, vec![22])]);
        assert_eq!(job.output_level, 6);
        assert!(!job.trivial_move);
        assert!(job.bottommost);

        // A file overlapping nothing below moves down without a rewrite.
        levels[5].push(file(13, 400 * MIB, "zz", "zzz"));
        let job = pick(&view(levels), &opts).unwrap();
        assert_eq!(job.inputs, vec![(5, vec![13])]);
        assert!(job.trivial_move);
    }

    #[test]
    fn busy_next_level_files_are_avoided() {
        let opts = PolicyOptions::default();
        let mut levels = vec![Vec::new(); 5];
        levels.push(vec![
            file(10, 1200 * MIB, "a", "c"),
            file(11, 10 * MIB, "d", "e"),
        ]);
        let mut bottom = file(20, 10_000 * MIB, "a", "c");
        bottom.being_compacted = true;
        levels.push(vec![bottom, file(21, 100 * MIB, "d", "e")]);
        let job = pick(&view(levels), &opts).unwrap();
        assert_eq!(job.inputs, vec![(5, vec![11]), (6, vec![21])]);
    }

    #[test]
    fn files_sharing_a_boundary_key_move_together() {
        let opts = PolicyOptions::default();
        let mut levels = vec![Vec::new(); 5];
        levels.push(vec![
            file(10, 1000 * MIB, "a", "c"),
            file(11, 1000 * MIB, "c", "e"),
        ]);
        levels.push(vec![file(20, 10_000 * MIB, "m", "z")]);
        let job = pick(&view(levels), &opts).unwrap();
        assert_eq!(job.inputs, vec![(5, vec![10, 11])]);
        assert!(job.trivial_move);
    }

    #[test]
    fn not_bottommost_when_a_lower_level_overlaps() {
        let opts = PolicyOptions::default();
        let mut levels = vec![Vec::new(); 4];
        // Base level 4 (L6 holds 2000 MiB -> L5 200, L4 20, which fits 64). L4 over target.
        levels.push(vec![file(10, 100 * MIB, "a", "b")]);
        levels.push(vec![]);
        levels.push(vec![file(30, 2000 * MIB, "a", "z")]);
        let job = pick(&view(levels), &opts).unwrap();
        assert_eq!(job.inputs, vec![(4, vec![10])]);
        assert_eq!(job.output_level, 5);
        assert!(job.trivial_move);
        assert!(!job.bottommost);
    }

    #[test]
    fn l0_never_lands_below_data_above_the_base_level() {
        // L1 holds stale data above the base level: L0 must merge into L1, not skip past it.
        let opts = PolicyOptions::default();
        let mut levels = vec![l0_files(4), vec![file(5, MIB, "b", "c")]];
        levels.resize(7, Vec::new());
        let job = pick_l0(&view(levels.clone()), &opts, 6).unwrap();
        assert_eq!(job.output_level, 1);
        assert_eq!(job.inputs[1], (1, vec![5]));
        // And pick drains that level first since its target is 0.
        let job = pick(&view(levels), &opts).unwrap();
        assert!(job.inputs[0].0 == 1 || job.output_level == 1);
    }

    const START: u64 = 256 << 20;
    const MIN: u64 = 256 << 10;

    const KNEE: u64 = 48 << 20;

    #[test]
    fn write_rate_falls_geometrically_with_l0_to_the_knee_then_bottoms_out() {
        let opts = PolicyOptions::default();
        let rate = |files| write_rate_limit(&view(vec![l0_files(files)]), &opts);
        assert_eq!(rate(11), None);
        assert_eq!(rate(12), Some(START));
        // Three quarters of the way from 12 files to 24: the knee, 48 MiB/s.
        assert_eq!(rate(21), Some(KNEE));
        // Halfway, two thirds of the way to the knee: 256 MiB/s x (48/256)^(2/3) = 83.9 MiB/s
        // (87,937,488 B/s); a quarter of the way, one third: x (48/256)^(1/3), 146.5 MiB/s
        // (153,640,944 B/s).
        assert!(
            rate(18).unwrap().abs_diff(87_937_488) <= 1,
            "{:?}",
            rate(18)
        );
        assert!(
            rate(15).unwrap().abs_diff(153_640_944) <= 1,
            "{:?}",
            rate(15)
        );
        // Past the knee the rest of the way down: at 23 files, two thirds of the last
        // quarter, 48 MiB/s x (1/192)^(2/3) = 1.44 MiB/s (1,512,308 B/s).
        assert!(rate(23).unwrap().abs_diff(1_512_308) <= 1, "{:?}", rate(23));
        let rates: Vec<u64> = (12..=24).map(|files| rate(files).unwrap()).collect();
        assert!(rates.windows(2).all(|pair| pair[0] > pair[1]), "{rates:?}");
        assert_eq!(rate(24), Some(MIN));
        assert_eq!(rate(100), Some(MIN));
    }

    #[test]
    fn a_knee_outside_the_rates_is_clamped_to_them() {
        // A knee above the start: the rate stays at the start to three quarters, then falls
        // the whole way in the last quarter; below the minimum: it is reached at the knee.
        let with_knee = |knee| PolicyOptions {
            slowdown_rate_knee_bytes_per_sec: knee,
            ..PolicyOptions::default()
        };
        let high = with_knee(u64::MAX);
        let rate =
            |opts: &PolicyOptions, files| write_rate_limit(&view(vec![l0_files(files)]), opts);
        assert_eq!(rate(&high, 18), Some(START));
        assert_eq!(rate(&high, 21), Some(START));
        assert!(rate(&high, 23).unwrap() < START);
        assert_eq!(rate(&high, 24), Some(MIN));
        let low = with_knee(0);
        assert!(rate(&low, 18).unwrap() < START);
        assert_eq!(rate(&low, 21), Some(MIN));
        assert_eq!(rate(&low, 24), Some(MIN));
    }

    #[test]
    fn write_rate_follows_bytes_waiting_above_the_last_level() {
        // L6 holds 1000 MiB, so L5's target is 100 MiB; default thresholds 30% and 100% of
        // L6 waiting to move down.
        let opts = PolicyOptions::default();
        let limit = |l5_mib: u64| {
            let mut levels = vec![Vec::new(); 6];
            levels[5] = vec![file(5, l5_mib * MIB, "a", "z")];
            levels.push(vec![file(6, 1000 * MIB, "a", "z")]);
            let view = view(levels);
            (
                pending_bytes(&view, &opts) / MIB,
                write_rate_limit(&view, &opts),
            )
        };
        // Within its target, or over it by less than 300 MiB: free.
        assert_eq!(limit(100), (0, None));
        assert_eq!(limit(399), (299, None));
        // Over by 300 MiB: the starting rate, falling towards the minimum at 1000 MiB over.
        assert_eq!(limit(400), (300, Some(START)));
        let middle = limit(700).1.unwrap();
        assert!(MIN < middle && middle < START, "{middle}");
        // Three quarters of the way from 300 MiB waiting to 1000: the knee.
        assert_eq!(limit(925), (825, Some(KNEE)));
        // (At 1200 MiB L5 is the largest level: its target is 120 MiB, 1080 MiB wait.)
        assert_eq!(limit(1200), (1080, Some(MIN)));
        // L5 outgrowing L6 (a backlog the writer built faster than compaction drains it):
        // held to the minimum, never stopped.
        assert_eq!(limit(3000).1, Some(MIN));
        // Size-tiered ignores pending bytes (it has no level targets).
        let mut levels = vec![Vec::new(); 6];
        levels[5] = vec![file(5, 3000 * MIB, "a", "z")];
        levels.push(vec![file(6, 1000 * MIB, "a", "z")]);
        assert_eq!(write_rate_limit(&view(levels), &tiered()), None);
    }

    #[test]
    fn write_rate_options_are_clamped_to_a_floor_that_still_moves() {
        let opts = PolicyOptions {
            slowdown_rate_start_bytes_per_sec: 0,
            slowdown_rate_min_bytes_per_sec: 0,
            ..PolicyOptions::default()
        };
        let rate = |files| write_rate_limit(&view(vec![l0_files(files)]), &opts);
        assert_eq!(rate(12), Some(SLOWDOWN_RATE_FLOOR_BYTES_PER_SEC));
        assert_eq!(rate(100), Some(SLOWDOWN_RATE_FLOOR_BYTES_PER_SEC));
        // A start below the minimum is raised to it: a constant rate.
        let opts = PolicyOptions {
            slowdown_rate_start_bytes_per_sec: 1,
            ..PolicyOptions::default()
        };
        let rate = |files| write_rate_limit(&view(vec![l0_files(files)]), &opts);
        assert_eq!(rate(12), Some(MIN));
        assert_eq!(rate(18), Some(MIN));
    }

    #[test]
    fn the_pending_slowdown_starts_no_lower_than_its_floor() {
        let limit = |l5_mib: u64, l6_mib: u64, floor_mib: u64| {
            let opts = PolicyOptions {
                pending_slowdown_floor_bytes: floor_mib * MIB,
                ..PolicyOptions::default()
            };
            let mut levels = vec![Vec::new(); 5];
            levels.push(vec![file(5, l5_mib * MIB, "a", "z")]);
            levels.push(vec![file(6, l6_mib * MIB, "a", "z")]);
            write_rate_limit(&view(levels), &opts)
        };
        // L6 holds 300 MiB (L5's target 30 MiB); one L0 compaction of four 64 MiB memtables
        // has just put 256 MiB into L5: 226 MiB wait, far past 30% of L6 (90 MiB), but under
        // a 256 MiB floor.
        assert!(limit(256, 300, 0).is_some());
        assert_eq!(limit(256, 300, 256), None);
        assert_eq!(limit(30 + 255, 300, 256), None);
        assert_eq!(limit(30 + 256, 300, 256), Some(START));
        // The hard threshold moved up by as much (100% of L6 + 166 MiB = 466 MiB): between
        // the two the rate falls, beyond it it is the minimum. (Here L5 outgrows L6, so L5's
        // target is a tenth of L5: 386 MiB hold 347 waiting, 1000 hold 900.)
        let between = limit(386, 300, 256).unwrap();
        assert!(MIN < between && between < START, "{between}");
        assert_eq!(limit(1000, 300, 256), Some(MIN));
        // Where 30% of the last level is above the floor, the floor changes nothing: L6
        // 1000 MiB (L5's target 100 MiB), slowed from 300 MiB waiting either way.
        for floor_mib in [0, 256] {
            assert_eq!(limit(100 + 299, 1000, floor_mib), None);
            assert_eq!(limit(100 + 300, 1000, floor_mib), Some(START));
        }
    }

    #[test]
    fn a_young_tree_is_measured_against_the_base_target() {
        // Nothing in the last level yet, so all of L5 waits to move down; 15 MiB is under 30%
        // of the 64 MiB base target (against the empty last level it would be infinitely
        // over), 25 MiB is over.
        let opts = PolicyOptions::default();
        let limit = |l5_mib: u64| {
            let mut levels = vec![Vec::new(); 5];
            levels.push(vec![file(5, l5_mib * MIB, "a", "z")]);
            levels.push(Vec::new());
            write_rate_limit(&view(levels), &opts)
        };
        assert_eq!(limit(15), None);
        assert!(limit(25).is_some());
    }

    fn tiered() -> PolicyOptions {
        PolicyOptions {
            kind: PolicyKind::SizeTiered,
            ..PolicyOptions::default()
        }
    }

    #[test]
    fn size_tiered_merges_similar_runs_above_a_big_one() {
        let mut levels = vec![l0_files(4)];
        levels.resize(6, Vec::new());
        levels.push(vec![file(1, 100 * MIB, "a", "z")]);
        let job = pick(&view(levels), &tiered()).unwrap();
        assert_eq!(
            job,
            Job {
                inputs: vec![(0, vec![103, 102, 101, 100])],
                output_level: 5,
                trivial_move: false,
                bottommost: false,
            }
        );
    }

    #[test]
    fn size_tiered_space_amplification_merges_everything() {
        let mut levels = vec![l0_files(2)];
        levels.resize(5, Vec::new());
        levels.push(vec![file(50, 5 * MIB, "a", "z")]);
        levels.push(vec![file(1, 3 * MIB, "a", "z")]);
        // Newer runs: 1 + 1 + 5 = 7 MiB > 200% of 3 MiB.
        let job = pick(&view(levels), &tiered()).unwrap();
        assert_eq!(
            job.inputs,
            vec![(0, vec![101, 100]), (5, vec![50]), (6, vec![1])]
        );
        assert_eq!(job.output_level, 6);
        assert!(job.bottommost);
    }

    #[test]
    fn size_tiered_falls_back_to_newest_runs() {
        // Sizes grow 10x per run: no similar-size window, no space amp problem.
        let mut levels = vec![vec![file(100, MIB, "a", "z")]];
        levels.resize(3, Vec::new());
        levels.push(vec![file(3, 10 * MIB, "a", "z")]);
        levels.push(vec![file(4, 100 * MIB, "a", "z")]);
        levels.push(vec![file(5, 1000 * MIB, "a", "z")]);
        levels.push(vec![file(6, 10_000 * MIB, "a", "z")]);
        let job = pick(&view(levels), &tiered()).unwrap();
        assert_eq!(job.inputs, vec![(0, vec![100]), (3, vec![3])]);
        assert_eq!(job.output_level, 3);
    }

    #[test]
    fn size_tiered_runs_one_job_at_a_time_and_waits_for_trigger() {
        assert_eq!(pick(&view(vec![l0_files(3)]), &tiered()), None);
        let mut l0 = l0_files(6);
        l0[0].being_compacted = true;
        assert_eq!(pick(&view(vec![l0]), &tiered()), None);
        // Only L0 files: the window must reach the oldest run and lands on the last level.
        let job = pick(&view(vec![l0_files(4)]), &tiered()).unwrap();
        assert_eq!(job.output_level, 6);
        assert!(job.bottommost);
    }
}
