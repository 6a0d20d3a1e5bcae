//! `shoal bench`: loads a DynamoDB endpoint with the fixed workloads of [`loadgen`] (PutItem,
//! GetItem, Query on an LSI and on a GSI), or runs a data model with [`data_model`]
//! (`--model FILE`, and `bench compare` for two models or saved reports side by side, with
//! the conditions that make it a CI gate).

pub mod data_model;
pub mod loadgen;
pub mod recording;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::Value;

use data_model::compare::{self, Condition, Pair};
use data_model::model::Model;
use data_model::report::Report;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    /// A data-model file (docs/DATA-MODEL-BENCH.md): runs its tables, items and access
    /// patterns and reports capacity, cost, hot partitions and latency per pattern. Without
    /// --endpoint it runs against Shoal in this process.
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Print the model report as JSON.
    #[arg(long, requires = "model")]
    json: bool,
    /// Exit 0 even when a pattern's calls failed (other than by their condition) more than
    /// 1% of the time; by default that exits 1, after the report.
    #[arg(long, requires = "model")]
    allow_errors: bool,
    /// Also write the model report as a self-contained HTML page.
    #[arg(long, value_name = "FILE", requires = "model")]
    html: Option<PathBuf>,
    /// Endpoint to load, e.g. http://127.0.0.1:8000 (default for the fixed workloads; a
    /// model runs in-process unless given one). A model also runs against https://
    /// endpoints, signed with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when they are set.
    #[arg(long)]
    endpoint: Option<String>,
    /// Concurrent keep-alive connections (fixed workloads).
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds per workload (fixed workloads).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Items loaded before the timed runs (~1 KB each; fixed workloads).
    #[arg(long, default_value_t = 20_000)]
    items: u64,
    /// Partition keys the items spread over (fixed workloads).
    #[arg(long, default_value_t = 1_000)]
    partitions: u64,
    /// The server's pid, to report its CPU time per operation (fixed workloads).
    #[arg(long)]
    server_pid: Option<u32>,
    /// Offer a fixed rate of OPS requests per second across the connections instead of
    /// sending each next request as soon as the last is answered (fixed workloads); the
    /// report says when the server did not keep up.
    #[arg(long, value_name = "OPS")]
    rate: Option<u64>,
    /// Workloads to run, comma-separated (default: all of PutItem, GetItem, QueryLSI,
    /// QueryGSI, BatchGetItem and BatchWriteItem of 25 items, and Scan pages of 50).
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Sends a recording's requests (made without --record-hash-keys) again to an endpoint —
    /// a Shoal with a changed schema, `--capacity enforce`, DynamoDB — in their order and at
    /// their recorded pace (or --fast), and reports per access pattern as a model run does.
    Replay {
        /// The recording: FILE, or FILE.1 FILE (oldest first).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The endpoint to send them to.
        #[arg(long)]
        endpoint: String,
        /// As fast as the endpoint answers, instead of at the recorded pace.
        #[arg(long)]
        fast: bool,
        /// Requests in flight at once.
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Delete and create the recorded tables first (no items are loaded).
        #[arg(long)]
        create_tables: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fits a data model to a recording of `shoal serve --record FILE`: calls grouped into
    /// access patterns by operation, table, index and expression shape, each with its rate,
    /// partition-key distribution (uniform, Zipf, or named hot keys), sort-key behaviour
    /// and item sizes, and the tables as created. Prints the model file (JSON) to stdout;
    /// run it with `shoal bench --model`, `plan` or `compare`.
    ModelFrom {
        /// The recording: FILE, or FILE.1 FILE to take in a rotated part too (oldest first).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The model's name (default: the recording's file name).
        #[arg(long)]
        name: Option<String>,
    },
    /// Runs a model file and answers at what multiple of its rate, and where, the design
    /// first throttles or first fills a 10 GB item collection: every limit (each hot
    /// partition of a table or GSI, each provisioned table and GSI, on-demand limits, item
    /// collections) with the multiple that reaches it, and for provisioned tables the cost
    /// of the declared capacity next to what the model needs, with an auto-scaling setting.
    Plan {
        /// The data-model file to plan (docs/DATA-MODEL-BENCH.md).
        model: PathBuf,
        /// Endpoint to run against (default: Shoal in this process).
        #[arg(long)]
        endpoint: Option<String>,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Runs two model files on this machine, one after the other, and prints them side by
    /// side with each figure's change: how people choose between two designs, and, with
    /// --fail-if, a CI gate. Either side may be a report saved with `shoal bench --model
    /// FILE --json` (a baseline), which is read instead of run.
    Compare {
        /// The first design (the baseline): a model file, or a saved JSON report.
        first: PathBuf,
        /// The second design (the change): a model file, or a saved JSON report.
        second: PathBuf,
        /// Endpoint to run the models against (default: Shoal in this process).
        #[arg(long)]
        endpoint: Option<String>,
        /// Print both reports, the comparison and the --fail-if outcomes as one JSON
        /// document.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print the comparison as a GitHub-flavoured Markdown table, for a pull-request
        /// comment.
        #[arg(long)]
        markdown: bool,
        /// Pair pattern OLD of the first with pattern NEW of the second: a renamed pattern.
        /// Repeatable. Patterns otherwise pair by name; the rest show on one side only.
        #[arg(long = "pair", value_name = "OLD=NEW", value_parser = Pair::parse)]
        pairs: Vec<Pair>,
        /// Exit 1 after printing the comparison if COND holds. COND is METRIC>CHANGE:
        /// METRIC one of cost (total $/month on-demand), cost-provisioned, storage, p99 (of
        /// any paired pattern), wcu and rcu (total units per second at the modelled rate,
        /// with indexes), errors, verdicts (of the second); CHANGE +N% (rose by more than N
        /// percent), +N (rose by more than N) or N (the second's figure is over N). E.g.
        /// cost>+5%, p99>+20%, wcu>+0, verdicts>0 (quoted: a shell reads > as a
        /// redirection). Repeatable and comma-separated.
        #[arg(
            long = "fail-if",
            value_name = "COND",
            value_delimiter = ',',
            value_parser = Condition::parse
        )]
        fail_if: Vec<Condition>,
    },
}

/// `shoal bench`.
pub fn run(args: BenchArgs) -> Result<(), String> {
    match args.command {
        Some(BenchCommand::ModelFrom { files, name }) => return bench_model_from(&files, name),
        Some(BenchCommand::Replay {
            files,
            endpoint,
            fast,
            concurrency,
            create_tables,
            json,
        }) => {
            if !(1..=data_model::model::CONCURRENCY_MAX).contains(&concurrency) {
                return Err(format!(
                    "--concurrency must be 1..={}",
                    data_model::model::CONCURRENCY_MAX
                ));
            }
            data_model::stop_on_interrupt();
            let report = recording::replay::replay(&recording::replay::ReplayOptions {
                files,
                endpoint,
                paced: !fast,
                concurrency,
                create_tables,
                progress: true,
            })?;
            return print_report(&report, json);
        }
        Some(BenchCommand::Compare {
            first,
            second,
            endpoint,
            json,
            markdown,
            pairs,
            fail_if,
        }) => {
            let output = if json {
                Output::Json
            } else if markdown {
                Output::Markdown
            } else {
                Output::Text
            };
            return bench_compare([&first, &second], endpoint, output, &pairs, &fail_if);
        }
        Some(BenchCommand::Plan {
            model,
            endpoint,
            json,
        }) => return bench_plan(&model, endpoint, json),
        None => {}
    }
    if let Some(path) = &args.model {
        return bench_model(
            path,
            args.endpoint,
            args.json,
            args.html.as_deref(),
            args.allow_errors,
        );
    }
    let endpoint = args
        .endpoint
        .unwrap_or_else(|| "http://127.0.0.1:8000".to_string());
    let address = endpoint
        .strip_prefix("http://")
        .unwrap_or(&endpoint)
        .trim_end_matches('/')
        .to_string();
    let config = loadgen::LoadConfig {
        address,
        connections: args.connections,
        duration: Duration::from_secs(args.seconds),
        items: args.items,
        partitions: args.partitions.max(1),
        server_pid: args.server_pid,
        workloads: args.workloads,
        rate_per_second: args.rate,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let results = runtime.block_on(loadgen::run(&config))?;
    print!("{}", loadgen::report(&results));
    Ok(())
}

fn bench_model_from(files: &[PathBuf], name: Option<String>) -> Result<(), String> {
    let name = name.unwrap_or_else(|| {
        files.last().and_then(|f| f.file_stem()).map_or_else(
            || "recording".to_string(),
            |s| s.to_string_lossy().into_owned(),
        )
    });
    let fitted = recording::model_from::model_from(files, &name)?;
    for note in &fitted.skipped {
        eprintln!("shoal: not modelled: {note}");
    }
    if fitted.dropped > 0 {
        eprintln!(
            "shoal: the recording dropped {} calls (its writer fell behind): rates are low by as much",
            fitted.dropped
        );
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&fitted.model).map_err(|e| e.to_string())?
    );
    Ok(())
}

fn read_model(path: &Path) -> Result<Model, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Model::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs the model file at `path` (in this process, or against `endpoint`), Ctrl-C stopping
/// it with a report, a progress bar on a terminal.
fn run_model_file(
    path: &Path,
    endpoint: Option<String>,
) -> Result<data_model::report::Report, String> {
    let model = read_model(path)?;
    data_model::stop_on_interrupt();
    let options = data_model::BenchOptions {
        endpoint,
        // A bar on a terminal, a line every few seconds in a log (`crate::progress`).
        progress: true,
        database: None,
    };
    data_model::run_model(&model, &options)
}

fn bench_model(
    path: &Path,
    endpoint: Option<String>,
    json: bool,
    html: Option<&Path>,
    allow_errors: bool,
) -> Result<(), String> {
    let report = run_model_file(path, endpoint)?;
    if let Some(html) = html {
        std::fs::write(html, data_model::html::render(&report))
            .map_err(|e| format!("cannot write {}: {e}", html.display()))?;
    }
    print_report(&report, json)?;
    // A pattern that fails is no measure of the design: say so in the exit code, after the
    // report that shows why.
    if !allow_errors && !report.failing_patterns.is_empty() {
        return Err(format!(
            "patterns failed on more than {}% of their calls: {} (--allow-errors to exit 0)",
            data_model::report::ERROR_SHARE_MAX * 100.0,
            report.failing_patterns.join(", ")
        ));
    }
    Ok(())
}

/// Prints a report: as JSON, or as the terminal's text.
fn print_report(report: &Report, json: bool) -> Result<(), String> {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", data_model::report::render_text(report));
    }
    Ok(())
}

fn bench_plan(path: &Path, endpoint: Option<String>, json: bool) -> Result<(), String> {
    let report = run_model_file(path, endpoint)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report.plan).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", data_model::plan::render_text(&report));
    }
    Ok(())
}

/// How `compare` prints.
#[derive(Clone, Copy)]
enum Output {
    Text,
    Markdown,
    Json,
}

/// A side of `compare`: a model to run, or a report saved with `--json`.
enum Compared {
    Model(Model),
    Report(Report),
}

impl Compared {
    /// Reads `path`. A JSON object with a `verdicts` member is a saved report: every report
    /// has one, and no model can (the model format refuses members it does not know).
    fn read(path: &Path) -> Result<Compared, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(members)) if members.contains_key("verdicts") => {
                serde_json::from_value(Value::Object(members))
                    .map(Compared::Report)
                    .map_err(|e| {
                        format!(
                            "{}: not a report of `shoal bench --model FILE --json`: {e}",
                            path.display()
                        )
                    })
            }
            Ok(Value::Object(members)) if members.contains_key("comparison") => Err(format!(
                "{}: is the output of `shoal bench compare --json`; compare against one report, \
                 saved with `shoal bench --model FILE --json`",
                path.display()
            )),
            _ => Model::parse(&text)
                .map(Compared::Model)
                .map_err(|e| format!("{}: {e}", path.display())),
        }
    }

    fn pattern_names(&self) -> Vec<&str> {
        match self {
            Compared::Model(model) => model.patterns.iter().map(|p| p.name.as_str()).collect(),
            Compared::Report(report) => report.patterns.iter().map(|p| p.name.as_str()).collect(),
        }
    }
}

fn bench_compare(
    paths: [&Path; 2],
    endpoint: Option<String>,
    output: Output,
    pairs: &[Pair],
    conditions: &[Condition],
) -> Result<(), String> {
    let [first, second] = [Compared::read(paths[0])?, Compared::read(paths[1])?];
    // A pairing that cannot hold is refused before minutes of runs, not after.
    compare::check_pairs(&first.pattern_names(), &second.pattern_names(), pairs)?;
    let options = data_model::BenchOptions {
        endpoint,
        // A bar on a terminal, a line every few seconds in a log (`crate::progress`).
        progress: true,
        database: None,
    };
    if [&first, &second]
        .iter()
        .any(|side| matches!(side, Compared::Model(_)))
    {
        data_model::stop_on_interrupt();
    }
    let report = |side: Compared| match side {
        Compared::Model(model) => data_model::run_model(&model, &options),
        Compared::Report(report) => Ok(report),
    };
    let (first, second) = (report(first)?, report(second)?);
    let comparison = compare::compare(&first, &second, pairs)?;
    let outcomes = compare::check_all(conditions, &comparison);
    match output {
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "first": first,
                "second": second,
                "comparison": comparison,
                "fail_if": outcomes,
            }))
            .map_err(|e| e.to_string())?
        ),
        Output::Markdown => print!(
            "{}",
            compare::render_markdown(&first, &second, &comparison, &outcomes)
        ),
        Output::Text => print!(
            "{}",
            compare::render_text(&first, &second, &comparison, &outcomes)
        ),
    }
    match compare::tripped_message(&outcomes) {
        Some(message) => Err(message),
        None => Ok(()),
    }
}
