//! Simulation test for the compaction policies: random flushes (puts and deletes) into a toy
//! tree whose files hold (key -> seq, deleted) versions; after each flush, jobs from `pick` are applied until it picks
//! nothing (sometimes two at once, the second picked while the first's files are busy).
//! After every job the tree must stay readable: levels below L0 sorted and non-overlapping,
//! for every key the versions met in read order (L0 newest first, then L1, L2, …) strictly
//! newer first, and the first one met is the key's latest write (a deleted key stays deleted
//! even after bottommost jobs drop its tombstone). Each job is also checked on its own: it names existing idle files, takes the
//! oldest L0 files, never writes above its inputs, and its `bottommost` flag is exact.

use std::collections::{BTreeMap, HashSet};

use proptest::prelude::*;
use shoal_compaction::{pick, FileView, Job, LevelsView, PolicyKind, PolicyOptions};

/// One version: its sequence number and whether it is a tombstone.
type Version = (u64, bool);

/// A file: the newest version of each key it holds.
#[derive(Debug, Clone)]
struct SimFile {
    number: u64,
    versions: BTreeMap<u8, Version>,
}

impl SimFile {
    fn smallest(&self) -> u8 {
        self.versions.keys().next().copied().unwrap_or(0)
    }
    fn largest(&self) -> u8 {
        self.versions.keys().next_back().copied().unwrap_or(0)
    }
}

/// Each version counts as one byte; files are cut at this many versions.
const TARGET_FILE_VERSIONS: usize = 4;
/// A tree must settle within this many jobs after a flush.
const JOBS_PER_FLUSH_MAX: usize = 200;

struct Tree {
    levels: Vec<Vec<SimFile>>,
    next_number: u64,
    next_seq: u64,
    /// The model: the latest write of every key ever written.
    latest: BTreeMap<u8, Version>,
}

impl Tree {
    fn new(levels: usize) -> Tree {
        Tree {
            levels: vec![Vec::new(); levels],
            next_number: 1,
            next_seq: 1,
            latest: BTreeMap::new(),
        }
    }

    fn flush(&mut self, writes: &[(u8, bool)]) {
        let mut versions = BTreeMap::new();
        for &(k, deleted) in writes {
            versions.insert(k, (self.next_seq, deleted));
            self.latest.insert(k, (self.next_seq, deleted));
            self.next_seq += 1;
        }
        let number = self.next_number;
        self.next_number += 1;
        self.levels[0].insert(0, SimFile { number, versions });
    }

    fn view(&self, busy: &HashSet<u64>) -> LevelsView {
        LevelsView {
            levels: self
                .levels
                .iter()
                .map(|files| {
                    files
                        .iter()
                        .map(|f| FileView {
                            number: f.number,
                            size_bytes: f.versions.len() as u64,
                            smallest_user_key: vec![f.smallest()],
                            largest_user_key: vec![f.largest()],
                            being_compacted: busy.contains(&f.number),
                        })
                        .collect()
                })
                .collect(),
        }
    }

    /// Checks a job against the tree it was picked from (before any other job ran).
    fn check_job(&self, job: &Job, busy: &HashSet<u64>) -> Result<(), TestCaseError> {
        prop_assert!(!job.inputs.is_empty());
        prop_assert!(job.output_level >= 1 && job.output_level < self.levels.len());
        let mut smallest = u8::MAX;
        let mut largest = u8::MIN;
        for (level, numbers) in &job.inputs {
            prop_assert!(
                *level <= job.output_level,
                "input level {} below output",
                level
            );
            prop_assert!(!numbers.is_empty());
            for number in numbers {
                let file = self.levels[*level].iter().find(|f| f.number == *number);
                prop_assert!(file.is_some(), "file {} not in level {}", number, level);
                prop_assert!(!busy.contains(number), "file {} is busy", number);
                let file = file.unwrap();
                smallest = smallest.min(file.smallest());
                largest = largest.max(file.largest());
            }
            if *level == 0 {
                // The oldest L0 files, in L0's order.
                let l0: Vec<u64> = self.levels[0].iter().map(|f| f.number).collect();
                prop_assert_eq!(&l0[l0.len() - numbers.len()..], &numbers[..]);
            }
        }
        let overlaps = |f: &SimFile| f.smallest() <= largest && f.largest() >= smallest;
        let bottommost = self.levels[job.output_level + 1..]
            .iter()
            .all(|files| !files.iter().any(overlaps));
        prop_assert_eq!(job.bottommost, bottommost);
        if job.trivial_move {
            prop_assert_eq!(job.inputs.len(), 1);
        }
        Ok(())
    }

    /// Applies a job: inputs leave their levels; their newest versions land in the output level.
    fn apply(&mut self, job: &Job) {
        let mut inputs = Vec::new();
        for (level, numbers) in &job.inputs {
            let (taken, kept) = std::mem::take(&mut self.levels[*level])
                .into_iter()
                .partition(|f| numbers.contains(&f.number));
            self.levels[*level] = kept;
            inputs.extend::<Vec<SimFile>>(taken);
        }
        let outputs = if job.trivial_move {
            inputs
        } else {
            let mut merged: BTreeMap<u8, Version> = BTreeMap::new();
            for file in &inputs {
                for (&k, &version) in &file.versions {
                    let newest = merged.entry(k).or_insert(version);
                    *newest = (*newest).max(version);
                }
            }
            // No snapshots here, so a bottommost job drops every tombstone.
            let merged: Vec<(u8, Version)> = merged
                .into_iter()
                .filter(|(_, (_, deleted))| !(job.bottommost && *deleted))
                .collect();
            merged
                .chunks(TARGET_FILE_VERSIONS)
                .map(|chunk| {
                    let number = self.next_number;
                    self.next_number += 1;
                    SimFile {
                        number,
                        versions: chunk.iter().copied().collect(),
                    }
                })
                .collect()
        };
        let level = &mut self.levels[job.output_level];
        level.extend(outputs);
        level.sort_by_key(|f| f.smallest());
    }

    /// The tree is readable: valid shape, and newer versions are always met first.
    fn check_readable(&self) -> Result<(), TestCaseError> {
        prop_assert_eq!(self.view(&HashSet::new()).validate(), Ok(()));
        for key in 0..=u8::MAX {
            let mut last_seq = u64::MAX;
            let mut first_found: Option<Version> = None;
            for files in &self.levels {
                for file in files {
                    if let Some(&version) = file.versions.get(&key) {
                        prop_assert!(version.0 < last_seq, "key {} read out of order", key);
                        last_seq = version.0;
                        first_found = first_found.or(Some(version));
                    }
                }
            }
            let reads_deleted = first_found.is_none_or(|(_, deleted)| deleted);
            match self.latest.get(&key) {
                None => prop_assert!(first_found.is_none()),
                Some(&(_, true)) => prop_assert!(reads_deleted, "deleted key {} is back", key),
                Some(&latest) => prop_assert_eq!(first_found, Some(latest), "key {}", key),
            }
        }
        Ok(())
    }
}

fn options(kind: PolicyKind) -> PolicyOptions {
    PolicyOptions {
        kind,
        l0_trigger_files: 3,
        level_ratio: 3,
        base_level_bytes: 6,
        target_file_bytes: TARGET_FILE_VERSIONS as u64,
        max_levels: 5,
        l0_job_files_max: 4,
        ..PolicyOptions::default()
    }
}

fn run(
    opts: PolicyOptions,
    flushes: &[Vec<(u8, bool)>],
    concurrency: &[bool],
) -> Result<(), TestCaseError> {
    let mut tree = Tree::new(opts.max_levels);
    let mut concurrency = concurrency.iter().cycle();
    for keys in flushes {
        tree.flush(keys);
        tree.check_readable()?;
        let mut jobs = 0;
        while let Some(first) = pick(&tree.view(&HashSet::new()), &opts) {
            tree.check_job(&first, &HashSet::new())?;
            // Sometimes pick a second job while the first one's files are busy, then land both.
            let busy: HashSet<u64> = first.inputs.iter().flat_map(|(_, n)| n.clone()).collect();
            let second = if *concurrency.next().unwrap_or(&false) {
                pick(&tree.view(&busy), &opts)
            } else {
                None
            };
            if let Some(second) = &second {
                tree.check_job(second, &busy)?;
            }
            tree.apply(&first);
            tree.check_readable()?;
            if let Some(second) = &second {
                tree.apply(second);
                tree.check_readable()?;
            }
            jobs += 1;
            prop_assert!(jobs < JOBS_PER_FLUSH_MAX, "compaction does not settle");
        }
    }
    Ok(())
}

/// Flushes of (key, is_delete) writes; deletes are common enough to shrink levels.
fn flushes() -> impl Strategy<Value = Vec<Vec<(u8, bool)>>> {
    let write = (0u8..40, prop::bool::weighted(0.3));
    prop::collection::vec(prop::collection::vec(write, 1..8), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn leveled_keeps_the_tree_readable(
        flushes in flushes(),
        concurrency in prop::collection::vec(any::<bool>(), 1..8),
    ) {
        run(options(PolicyKind::Leveled), &flushes, &concurrency)?;
    }

    /// A soft threshold of 0% keeps the pending-bytes brake on whenever any level above the
    /// last holds bytes over its target, so `pick` moves the deepest such level down first
    /// far more often than with the defaults.
    #[test]
    fn leveled_under_the_pending_bytes_brake_keeps_the_tree_readable(
        flushes in flushes(),
        concurrency in prop::collection::vec(any::<bool>(), 1..8),
    ) {
        let opts = PolicyOptions {
            pending_slowdown_percent: 0,
            ..options(PolicyKind::Leveled)
        };
        run(opts, &flushes, &concurrency)?;
    }

    #[test]
    fn size_tiered_keeps_the_tree_readable(
        flushes in flushes(),
        concurrency in prop::collection::vec(any::<bool>(), 1..8),
    ) {
        run(options(PolicyKind::SizeTiered), &flushes, &concurrency)?;
    }
}
