//! `shoal check`: verifies a database directory — every index against the base items, every
//! item-collection record and statistic against a recount — showing progress on stderr, and
//! refuses a directory that holds no database.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{BinaryBytes, HumanCount, HumanDuration, ProgressBar, ProgressStyle};
use shoal_tables::core::checker::CheckProgress;
use shoal_tables::{Database, Options};

#[derive(Args)]
pub struct CheckArgs {
    /// Data directory (the server must not be running on it).
    #[arg(long, default_value = "./shoal-data")]
    data_dir: PathBuf,
}

/// `shoal check`.
pub fn run(args: CheckArgs) -> Result<(), String> {
    check(&args.data_dir)
}

fn check(data_dir: &Path) -> Result<(), String> {
    require_database(data_dir)?;
    // A check changes nothing: no Time to Live sweeps or shard rollovers while it reads.
    let options = Options {
        upkeep: false,
        ..Options::default()
    };
    let database = Database::open(data_dir, options)
        .map_err(|e| format!("cannot open {}: {e}", data_dir.display()))?;
    let mut display = CheckDisplay::new();
    let report = database.check_with_progress(|progress| display.show(progress));
    display.finish();
    // Damaged SSTables met on the way, named with what they hold and their key range: where
    // to start the recovery (docs/RECOVERY.md). A read that fails ends the check.
    let (_, damaged) = database.corruption_report();
    for place in &damaged {
        println!(
            "damaged: {} at offset {} ({}): {}, keys {} to {}",
            place.file,
            place.offset,
            place.detail,
            place.holds,
            place.smallest_key,
            place.largest_key
        );
    }
    let report = report.map_err(|e| {
        if damaged.is_empty() {
            e.to_string()
        } else {
            format!("{e} (see docs/RECOVERY.md)")
        }
    })?;
    println!(
        "{} tables, {} items, {} index entries, {} collection records, {} problems",
        report.tables,
        report.items,
        report.index_entries,
        report.collections,
        report.problems.len()
    );
    if report.is_sound() {
        println!("sound: every index, collection record and statistic matches the base items");
        Ok(())
    } else {
        for problem in &report.problems {
            println!("problem: {problem}");
        }
        Err(format!("{} problem(s) found", report.problems.len()))
    }
}

/// Refuses a path that holds no database. Opening it would create an empty database there,
/// which the check would then find sound: a mistyped path would pass, and leave a
/// directory behind.
pub fn require_database(data_dir: &Path) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "{} does not hold a Shoal database ({why})",
            data_dir.display()
        ))
    };
    match std::fs::metadata(data_dir) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return refuse("no such directory")
        }
        Err(error) => return Err(format!("cannot read {}: {error}", data_dir.display())),
        Ok(metadata) if !metadata.is_dir() => return refuse("not a directory"),
        Ok(_) => {}
    }
    let current = data_dir.join(shoal_engine::manifest::CURRENT_FILE_NAME);
    match std::fs::metadata(&current) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => refuse("no CURRENT file"),
        Err(error) => Err(format!("cannot read {}: {error}", current.display())),
    }
}

/// How often a check's progress is printed when stderr is not a terminal.
const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// A running check's progress on stderr: a bar on a terminal; elsewhere (a log, CI) a
/// plain line every few seconds, since a redrawn bar would fill the log with escapes.
enum CheckDisplay {
    Bar {
        bar: ProgressBar,
        locating: bool,
    },
    Lines {
        started: Instant,
        printed: Instant,
        locating: Option<String>,
    },
}

impl CheckDisplay {
    fn new() -> CheckDisplay {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template(
                    "checking [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta} left) {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            CheckDisplay::Bar {
                bar,
                locating: false,
            }
        } else {
            let now = Instant::now();
            CheckDisplay::Lines {
                started: now,
                printed: now,
                locating: None,
            }
        }
    }

    fn show(&mut self, progress: &CheckProgress) {
        match self {
            CheckDisplay::Bar { bar, locating } => {
                // The totals come from the statistics; a damaged database may hold more.
                bar.set_length(progress.bytes_total.max(progress.bytes));
                bar.set_position(progress.bytes);
                // A second pass reports only its start and end: tick meanwhile, so the
                // elapsed time shows it is still running.
                if progress.locating.is_some() != *locating {
                    *locating = progress.locating.is_some();
                    if *locating {
                        bar.enable_steady_tick(Duration::from_millis(500));
                    } else {
                        bar.disable_steady_tick();
                    }
                }
                bar.set_message(match &progress.locating {
                    Some(scope) => format!("locating the differences in {scope}"),
                    None => format!(
                        "{}/{} items, {}/{} index entries",
                        HumanCount(progress.items),
                        HumanCount(progress.items_total),
                        HumanCount(progress.index_entries),
                        HumanCount(progress.index_entries_total)
                    ),
                });
            }
            CheckDisplay::Lines {
                started,
                printed,
                locating,
            } => {
                if progress.locating != *locating {
                    locating.clone_from(&progress.locating);
                    if let Some(scope) = locating {
                        eprintln!("check: locating the differences in {scope}");
                    }
                }
                if printed.elapsed() >= PLAIN_PROGRESS_EVERY {
                    *printed = Instant::now();
                    eprintln!("check: {}", plain_progress(progress, started.elapsed()));
                }
            }
        }
    }

    fn finish(self) {
        if let CheckDisplay::Bar { bar, .. } = self {
            bar.finish_and_clear();
        }
    }
}

/// One line of progress: what was read of what there is, the rate and the time left.
fn plain_progress(progress: &CheckProgress, elapsed: Duration) -> String {
    let rate = progress.bytes as f64 / elapsed.as_secs_f64().max(0.001);
    let left = progress.bytes_total.saturating_sub(progress.bytes) as f64 / rate.max(1.0);
    let percent = progress.bytes as f64 * 100.0 / progress.bytes_total.max(1) as f64;
    format!(
        "{}/{} items, {}/{} index entries, {}/{} ({percent:.0}%), {}/s, about {} left",
        HumanCount(progress.items),
        HumanCount(progress.items_total),
        HumanCount(progress.index_entries),
        HumanCount(progress.index_entries_total),
        BinaryBytes(progress.bytes),
        BinaryBytes(progress.bytes_total),
        BinaryBytes(rate as u64),
        HumanDuration(Duration::from_secs_f64(left.min(1e9))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_refuses_a_path_without_a_database_and_creates_nothing() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("missing");
        let error = check(&missing).unwrap_err();
        assert!(
            error.ends_with("does not hold a Shoal database (no such directory)"),
            "{error}"
        );
        assert!(!missing.exists());

        let listing = |dir: &Path| {
            let mut names: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .collect();
            names.sort();
            names
        };
        let empty = root.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let error = check(&empty).unwrap_err();
        assert!(
            error.ends_with("does not hold a Shoal database (no CURRENT file)"),
            "{error}"
        );
        assert!(listing(&empty).is_empty());

        let unrelated = root.path().join("photos");
        std::fs::create_dir(&unrelated).unwrap();
        std::fs::write(unrelated.join("beach.jpg"), b"not a database").unwrap();
        std::fs::create_dir(unrelated.join("wal")).unwrap();
        let before = listing(&unrelated);
        let error = check(&unrelated).unwrap_err();
        assert!(error.contains("(no CURRENT file)"), "{error}");
        assert_eq!(listing(&unrelated), before);
        assert!(listing(&unrelated.join("wal")).is_empty());

        let file = unrelated.join("beach.jpg");
        assert!(check(&file).unwrap_err().contains("(not a directory)"));
    }

    #[test]
    fn check_accepts_a_database() {
        let dir = tempfile::tempdir().unwrap();
        drop(Database::open(dir.path(), Options::default()).unwrap());
        assert_eq!(check(dir.path()), Ok(()));
    }

    #[test]
    fn plain_progress_says_how_much_is_left() {
        let progress = CheckProgress {
            items: 250,
            index_entries: 500,
            bytes: 1 << 20,
            items_total: 1000,
            index_entries_total: 2000,
            bytes_total: 4 << 20,
            locating: None,
        };
        assert_eq!(
            plain_progress(&progress, Duration::from_secs(2)),
            "250/1,000 items, 500/2,000 index entries, 1.00 MiB/4.00 MiB (25%), 512.00 KiB/s, about 6 seconds left"
        );
    }
}
