//! The `shoal` command-line tool.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use engine::lsm::DbOptions;
use engine::Durability;

#[derive(Parser)]
#[command(
    name = "shoal",
    version,
    about = "A durable, embeddable DynamoDB-compatible datastore"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Crash-test child: writes the crash workload into DIR forever, printing `ack N` after
    /// each committed batch. Run it, kill -9 it, and verify with the crash tests.
    CrashWriter {
        /// Data directory.
        #[arg(long)]
        dir: PathBuf,
        /// sync, none, or interval:MS.
        #[arg(long, default_value = "sync")]
        durability: String,
        /// Memtable size in bytes (small values force frequent flushes).
        #[arg(long, default_value_t = 64 * 1024)]
        memtable_size_bytes: usize,
    },
}

/// Parses `sync`, `none` or `interval:MS`.
fn parse_durability(text: &str) -> Result<Durability, String> {
    match text {
        "sync" => Ok(Durability::Sync),
        "none" => Ok(Durability::None),
        other => match other.strip_prefix("interval:").map(str::parse::<u64>) {
            Some(Ok(ms)) if ms > 0 => Ok(Durability::Interval(Duration::from_millis(ms))),
            _ => Err(format!(
                "durability must be sync, none or interval:MS, not {other:?}"
            )),
        },
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::CrashWriter {
            dir,
            durability,
            memtable_size_bytes,
        } => parse_durability(&durability).and_then(|durability| {
            let options = DbOptions {
                durability,
                memtable_size_bytes,
                // Small segments: rotation, release and recycling all happen during a test.
                wal_segment_size_bytes: 1 << 20,
                ..DbOptions::default()
            };
            shoal::crash::run_writer(&dir, options, std::io::stdout().lock())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("shoal: {message}");
            ExitCode::FAILURE
        }
    }
}
