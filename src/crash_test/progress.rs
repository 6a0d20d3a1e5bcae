//! A crash test's progress: a bar on a terminal; elsewhere (a CI log) a line every few
//! seconds, so a long run shows it is alive without flooding the log.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::CrashTestReport;

/// How often a line is printed when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

pub struct Progress {
    bar: Option<ProgressBar>,
    cycles: u64,
    last_line: Instant,
}

impl Progress {
    pub fn new(cycles: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(cycles);
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} cycles {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Progress {
            bar,
            cycles,
            last_line: Instant::now(),
        }
    }

    /// After cycle `cycle` (from 1).
    pub fn update(&mut self, cycle: u64, report: &CrashTestReport) {
        let message = report.progress_message();
        match &self.bar {
            Some(bar) => {
                bar.set_position(cycle);
                bar.set_message(message);
            }
            None => {
                if self.last_line.elapsed() >= LINE_EVERY || cycle == self.cycles {
                    self.last_line = Instant::now();
                    eprintln!("crash-test: cycle {cycle}/{}: {message}", self.cycles);
                }
            }
        }
    }

    /// A line for the log (above the bar on a terminal).
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
