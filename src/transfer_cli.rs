//! The command lines of `shoal copy`, `shoal export` and `shoal import` (the work is in
//! `shoal::transfer`).

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use shoal::transfer::{self, scan::SEGMENTS_DEFAULT, CopyOptions, CopyReport};

/// How a copy runs, whatever its ends.
#[derive(Args)]
pub struct RunArgs {
    /// Scan segments read in parallel from an endpoint (each on its own connection).
    #[arg(long, default_value_t = SEGMENTS_DEFAULT, value_parser = clap::value_parser!(u32).range(1..=1024))]
    segments: u32,
    /// Write at most this many items a second (to spare a provisioned table's capacity).
    #[arg(long, value_name = "ITEMS")]
    rate: Option<f64>,
    /// The resume file (default: .shoal-copy-<table>.json in the working directory).
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Discard a resume file left by an interrupted run and start from the beginning.
    #[arg(long)]
    restart: bool,
    /// No progress bar (also off when stderr is not a terminal).
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
pub struct CopyArgs {
    /// Where the table is: an endpoint URL (http://…, https://…) or an export directory.
    #[arg(long, value_name = "URL|DIR")]
    from: String,
    /// Where it goes: an endpoint URL or a directory (written in DynamoDB's export layout).
    #[arg(long, value_name = "URL|DIR")]
    to: String,
    /// The table to copy.
    #[arg(long)]
    table: String,
    /// The destination table's name (default: the same).
    #[arg(long, value_name = "NAME")]
    to_table: Option<String>,
    /// Create the destination table with the source's keys, indexes and billing mode.
    #[arg(long)]
    create: bool,
    #[command(flatten)]
    run: RunArgs,
}

/// `shoal copy`.
pub fn copy(args: CopyArgs) -> Result<(), String> {
    let options = CopyOptions {
        from: args.from,
        to: args.to,
        table: args.table,
        to_table: args.to_table,
        create: args.create,
        segments: args.run.segments,
        items_per_second: args.run.rate,
        state_file: args.run.state,
        restart: args.run.restart,
        progress: !args.run.quiet && std::io::stderr().is_terminal(),
    };
    let report = transfer::copy(&options)?;
    print_report(&options, &report);
    Ok(())
}

fn print_report(options: &CopyOptions, report: &CopyReport) {
    let rate = report.items as f64 / report.seconds.max(1e-9);
    let resumed = if report.items_resumed > 0 {
        format!(
            " (and {} by the interrupted run it resumed)",
            report.items_resumed
        )
    } else {
        String::new()
    };
    println!(
        "copied {} items{resumed} of {} from {} to {} in {:.1} s ({rate:.0} items/s, {} requests sent again)",
        report.items, options.table, options.from, options.to, report.seconds, report.retries
    );
}
