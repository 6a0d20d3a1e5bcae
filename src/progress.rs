//! The progress of a long command (copy, export, import, bench --model): indicatif's bar on
//! a terminal; elsewhere (a CI log, a pipe) the same figures as a plain line every few
//! seconds, and once more when the bar is cleared at the end, so a long run shows it is alive
//! without flooding the log. Commands make their bars here and keep indicatif's API.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

/// How often a line is printed when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(5);

/// A bar of `length` (a spinner when None), drawn as [`ProgressBar`] on a terminal and as
/// lines otherwise; hidden when not `shown` (`--quiet`).
pub fn bar(shown: bool, length: Option<u64>) -> ProgressBar {
    if !shown {
        return ProgressBar::hidden();
    }
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::term_like_with_hz(Box::new(LogLines::new(LINE_EVERY)), 1)
    };
    ProgressBar::with_draw_target(length, target)
}

/// A style from `template`; off a terminal without its bar and spinner, which mean nothing
/// in a log.
pub fn style(template: &str) -> ProgressStyle {
    let template = if std::io::stderr().is_terminal() {
        template.to_string()
    } else {
        plain(template)
    };
    ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// `template` without its `{wide_bar}`, `{bar…}` and `{spinner…}` keys.
fn plain(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        let key = &rest[start + 1..start + end];
        out.push_str(&rest[..start]);
        if !(key == "wide_bar" || key.starts_with("bar") || key.starts_with("spinner")) {
            out.push_str(&rest[start..=start + end]);
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A terminal for indicatif that prints a draw as lines, at most once per `every`, and the
/// last draw when the bar is cleared (a draw with nothing in it).
#[derive(Debug)]
struct LogLines {
    every: Duration,
    state: Mutex<LogState>,
}

#[derive(Debug, Default)]
struct LogState {
    /// The lines of the draw under way.
    pending: Vec<String>,
    /// The last draw's lines, and whether they were printed.
    latest: Vec<String>,
    latest_printed: bool,
    printed_at: Option<Instant>,
}

impl LogLines {
    fn new(every: Duration) -> LogLines {
        LogLines {
            every,
            state: Mutex::new(LogState::default()),
        }
    }

    fn print(lines: &[String]) {
        for line in lines {
            eprintln!("{line}");
        }
    }
}

impl TermLike for LogLines {
    fn width(&self) -> u16 {
        120
    }

    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn write_line(&self, line: &str) -> std::io::Result<()> {
        self.write_str(line)
    }

    /// indicatif writes each line of a draw, then spaces to the end of the line: each piece
    /// with text is a line.
    fn write_str(&self, piece: &str) -> std::io::Result<()> {
        let piece = piece.trim();
        if !piece.is_empty() {
            if let Ok(mut state) = self.state.lock() {
                state.pending.push(piece.to_string());
            }
        }
        Ok(())
    }

    fn clear_line(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn flush(&self) -> std::io::Result<()> {
        let Ok(mut state) = self.state.lock() else {
            return Ok(());
        };
        let pending = std::mem::take(&mut state.pending);
        if pending.is_empty() {
            // Cleared at the end: the last figures, unless they were just printed.
            if !state.latest_printed {
                LogLines::print(&state.latest);
                state.latest_printed = true;
            }
            return Ok(());
        }
        let due = state.printed_at.is_none_or(|at| at.elapsed() >= self.every);
        if due {
            LogLines::print(&pending);
            state.printed_at = Some(Instant::now());
        }
        state.latest = pending;
        state.latest_printed = due;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_has_no_bar_or_spinner() {
        assert_eq!(
            plain(
                "copying [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} items ({per_sec})"
            ),
            "copying [{elapsed_precise}] {human_pos}/{human_len} items ({per_sec})"
        );
        assert_eq!(plain("{bar:30} {pos}/{len} {msg}"), "{pos}/{len} {msg}");
        assert_eq!(plain("{spinner:.green} {msg}"), "{msg}");
        // The neighbouring case: a template without them is kept as it is.
        assert_eq!(plain("{pos} items {msg}"), "{pos} items {msg}");
    }

    #[test]
    fn lines_are_printed_at_most_once_per_period_and_the_last_at_the_clear() {
        let log = LogLines::new(Duration::from_secs(3600));
        let draw = |text: &str| {
            log.clear_line().unwrap();
            log.write_str(text).unwrap();
            log.write_str("      ").unwrap();
            log.flush().unwrap();
        };
        draw("1/10 items");
        {
            let state = log.state.lock().unwrap();
            assert!(state.latest_printed, "the first draw prints");
        }
        draw("5/10 items");
        {
            let state = log.state.lock().unwrap();
            assert_eq!(state.latest, ["5/10 items"]);
            assert!(!state.latest_printed, "within the period nothing more");
        }
        // The clear at the end prints the last figures once.
        log.clear_line().unwrap();
        log.flush().unwrap();
        assert!(log.state.lock().unwrap().latest_printed);
    }
}
