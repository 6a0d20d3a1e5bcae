//! The command lines of `shoal copy`, `shoal export` and `shoal import` (the work is in
//! `shoal::transfer`).

use std::path::PathBuf;

use clap::Args;

use crate::transfer::{self, embedded, scan::SEGMENTS_DEFAULT, CopyOptions, CopyReport};

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
        progress: !args.run.quiet,
    };
    let report = transfer::copy(&options)?;
    print_report(&options, &report);
    Ok(())
}

#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct Where {
    /// A DynamoDB-compatible endpoint (Shoal, DynamoDB, Alternator, DynamoDB Local):
    /// read or written through Scan and BatchWriteItem, resumably.
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// A Shoal data directory (no server running on it): exported from one snapshot, or
    /// imported into a new table built in large batches.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

#[derive(Args)]
pub struct ExportArgs {
    /// The table to export.
    #[arg(long)]
    table: String,
    /// The directory standing for the S3 bucket: the export is written to
    /// DIR/AWSDynamoDB/<export id>/ in DynamoDB's export layout.
    #[arg(long, value_name = "DIR")]
    to: PathBuf,
    #[command(flatten)]
    source: Where,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
pub struct ImportArgs {
    /// An export: its own directory, or a bucket directory holding one export.
    #[arg(long, value_name = "DIR")]
    from: PathBuf,
    /// The table to write: a new one with --data-dir; an existing one (or with --create, a
    /// new one) with --endpoint.
    #[arg(long)]
    table: String,
    /// With --endpoint: create the table from the export's shoal-table.json first.
    #[arg(long)]
    create: bool,
    #[command(flatten)]
    destination: Where,
    #[command(flatten)]
    run: RunArgs,
}

/// `shoal export`.
pub fn export(args: ExportArgs) -> Result<(), String> {
    let to = args.to.to_string_lossy().into_owned();
    if let Some(url) = args.source.endpoint {
        return copy(CopyArgs {
            from: url,
            to,
            table: args.table,
            to_table: None,
            create: false,
            run: args.run,
        });
    }
    let data_dir = args.source.data_dir.unwrap_or_default();
    crate::check::require_database(&data_dir)?;
    let bar = item_bar(!args.run.quiet, "exporting");
    let started = std::time::Instant::now();
    let (dir, items) = embedded::export(&data_dir, &args.table, &args.to, |progress| {
        bar.set_length(progress.total_items.max(progress.items));
        bar.set_position(progress.items);
    })?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "exported {items} items of {} to {} in {seconds:.1} s ({:.0} items/s)",
        args.table,
        dir.display(),
        items as f64 / seconds.max(1e-9)
    );
    Ok(())
}

/// `shoal import`.
pub fn import(args: ImportArgs) -> Result<(), String> {
    let from = args.from.to_string_lossy().into_owned();
    if let Some(url) = args.destination.endpoint {
        return copy(CopyArgs {
            from,
            to: url,
            table: args.table,
            to_table: None,
            create: args.create,
            run: args.run,
        });
    }
    if args.create {
        return Err(
            "--create is for --endpoint: an import into a data directory always creates its table"
                .into(),
        );
    }
    let data_dir = args.destination.data_dir.unwrap_or_default();
    let bar = item_bar(!args.run.quiet, "importing");
    bar.set_style(crate::progress::style(
        "importing [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta} left) {msg}",
    ));
    let started = std::time::Instant::now();
    let report = embedded::import(&data_dir, &args.from, &args.table, &mut |progress| {
        bar.set_length(progress.bytes_total.max(progress.bytes_processed));
        bar.set_position(progress.bytes_processed);
        bar.set_message(format!("{} items", progress.items_imported));
    })?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "imported {} items into {} in {seconds:.1} s ({:.0} items/s)",
        report.items_imported,
        args.table,
        report.items_imported as f64 / seconds.max(1e-9)
    );
    for bad in &report.bad_lines {
        eprintln!("bad line: {} line {}: {}", bad.file, bad.line, bad.reason);
    }
    if report.bad_line_count > 0 || report.failure.is_some() {
        return Err(report
            .failure
            .unwrap_or_else(|| format!("{} lines were not items", report.bad_line_count)));
    }
    Ok(())
}

/// A bar of items (or a hidden one): a bar on a terminal, lines in a log.
fn item_bar(shown: bool, verb: &str) -> indicatif::ProgressBar {
    let bar = crate::progress::bar(shown, Some(0));
    bar.set_style(crate::progress::style(&format!(
        "{verb} [{{elapsed_precise}}] {{wide_bar}} {{human_pos}}/{{human_len}} items ({{per_sec}}, {{eta}} left)"
    )));
    bar
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
