//! `shoal bench`: loads a DynamoDB endpoint with the fixed workloads of [`loadgen`] (PutItem,
//! GetItem, Query on an LSI and on a GSI), or runs a data model with [`data_model`]
//! (`--model FILE`, and `bench compare` for two models side by side).

pub mod data_model;
pub mod loadgen;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};

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
    /// Workloads to run, comma-separated (default: PutItem,GetItem,QueryLSI,QueryGSI).
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Runs a model file and answers at what multiple of its rate, and where, the design
    /// first throttles or first fills a 10 GB item collection: every limit (each hot
    /// partition of a table or GSI, each provisioned table and GSI, on-demand limits, item
    /// collections) with the multiple that reaches it, and for provisioned tables the cost
    /// of the declared capacity next to what the model needs, with an auto-scaling setting.
    Plan {
        model: PathBuf,
        /// Endpoint to run against (default: Shoal in this process).
        #[arg(long)]
        endpoint: Option<String>,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Runs two model files on this machine, one after the other, and prints them side by
    /// side: how people choose between two designs.
    Compare {
        first: PathBuf,
        second: PathBuf,
        /// Endpoint to run both against (default: Shoal in this process).
        #[arg(long)]
        endpoint: Option<String>,
        /// Print both reports as one JSON document.
        #[arg(long)]
        json: bool,
    },
}

/// `shoal bench`.
pub fn run(args: BenchArgs) -> Result<(), String> {
    match args.command {
        Some(BenchCommand::Compare {
            first,
            second,
            endpoint,
            json,
        }) => return bench_compare(&first, &second, endpoint, json),
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
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let results = runtime.block_on(loadgen::run(&config))?;
    print!("{}", loadgen::report(&results));
    Ok(())
}

fn read_model(path: &Path) -> Result<data_model::model::Model, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    data_model::model::Model::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn bench_model(
    path: &Path,
    endpoint: Option<String>,
    json: bool,
    html: Option<&Path>,
    allow_errors: bool,
) -> Result<(), String> {
    let model = read_model(path)?;
    data_model::stop_on_interrupt();
    let options = data_model::BenchOptions {
        endpoint,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        database: None,
    };
    let report = data_model::run_model(&model, &options)?;
    if let Some(html) = html {
        std::fs::write(html, data_model::html::render(&report))
            .map_err(|e| format!("cannot write {}: {e}", html.display()))?;
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", data_model::report::render_text(&report));
    }
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

fn bench_plan(path: &Path, endpoint: Option<String>, json: bool) -> Result<(), String> {
    let model = read_model(path)?;
    data_model::stop_on_interrupt();
    let options = data_model::BenchOptions {
        endpoint,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        database: None,
    };
    let report = data_model::run_model(&model, &options)?;
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

fn bench_compare(
    first: &Path,
    second: &Path,
    endpoint: Option<String>,
    json: bool,
) -> Result<(), String> {
    let models = [read_model(first)?, read_model(second)?];
    data_model::stop_on_interrupt();
    let options = data_model::BenchOptions {
        endpoint,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        database: None,
    };
    let mut reports = Vec::with_capacity(2);
    for model in &models {
        reports.push(data_model::run_model(model, &options)?);
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "first": reports[0],
                "second": reports[1],
            }))
            .map_err(|e| e.to_string())?
        );
    } else {
        print!(
            "{}",
            data_model::report::render_comparison(&reports[0], &reports[1])
        );
    }
    Ok(())
}
