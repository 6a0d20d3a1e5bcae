//! `shoal bench --model FILE`: runs a DynamoDB data model — its tables, items and access
//! patterns — against Shoal in this process or against any DynamoDB-compatible endpoint,
//! and reports what each access pattern costs, which partitions run hot, how item
//! collections grow and what the design would cost per month on DynamoDB.
//!
//! `model.rs` is the file format, `generate.rs` the values and request templates, `run.rs`
//! the load and run phases (requests go through `crate::client::target`), `report.rs` the
//! report, `throughput.rs` each table's and GSI's need against its limits, `plan.rs` the
//! capacity planner, `html.rs` the report's page, `compare.rs` two reports side by side and
//! the conditions on them.

pub mod compare;
pub mod generate;
pub mod html;
pub mod model;
pub mod plan;
pub mod report;
pub mod run;
pub mod throughput;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::client::target::Target;
use generate::Generators;
use model::Model;
use report::Report;
use run::Progress;

/// How to run a model.
#[derive(Clone, Default)]
pub struct BenchOptions {
    /// None: Shoal in this process, in memory.
    pub endpoint: Option<String>,
    /// Draw a progress bar on the terminal.
    pub progress: bool,
    /// The embedded database to run in (default: a new in-memory one); ignored with an
    /// endpoint.
    pub database: Option<Arc<shoal_tables::Database>>,
}

/// Runs `model` and builds its report.
pub fn run_model(model: &Model, options: &BenchOptions) -> Result<Report, String> {
    let target = Arc::new(match (&options.endpoint, &options.database) {
        (None, Some(database)) => Target::Embedded(Arc::clone(database)),
        (endpoint, _) => Target::new(endpoint.as_deref())?,
    });
    let generators = Arc::new(Generators::new(&model.generators));
    let patterns = Arc::new(run::compile(model, &generators)?);
    let loaded = run::prepare(model, &target, &generators)?;
    let progress = Arc::new(Progress::default());
    let display = options.progress.then(|| spawn_progress(model, &progress));
    let mut stats = run::run(model, &target, &generators, &patterns, &progress);
    if let Some((bar, done, thread)) = display {
        done.store(true, Ordering::Relaxed);
        let _ = thread.join();
        bar.finish_and_clear();
    }
    if let Ok(stats) = stats.as_mut() {
        stats.loaded_items = loaded.items;
        stats.load_retries = loaded.retries;
    }
    report_of(model, &target, &patterns, stats?)
}

/// The report of a run of `model`'s patterns on `target`, with its tables as DescribeTable
/// describes them after the run.
pub(crate) fn report_of(
    model: &Model,
    target: &Target,
    patterns: &[run::CompiledPattern],
    stats: run::RunStats,
) -> Result<Report, String> {
    let mut client = target.client()?;
    let mut descriptions = Vec::new();
    for create in &model.tables {
        let body = serde_json::json!({"TableName": create["TableName"]}).to_string();
        if let Ok(answer) = client.call("DescribeTable", body.as_bytes()) {
            descriptions.push(serde_json::from_slice(&answer).unwrap_or_default());
        }
    }
    Ok(report::build(
        model,
        &target.describe(),
        patterns,
        stats,
        &descriptions,
    ))
}

pub(crate) type ProgressDisplay = (
    indicatif::ProgressBar,
    Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<()>,
);

/// A progress bar with live operations per second and errors, redrawn five times a second.
pub(crate) fn spawn_progress(model: &Model, progress: &Arc<Progress>) -> ProgressDisplay {
    let length = match (model.run.seconds, model.run.operations) {
        (Some(seconds), _) => Some((seconds * 10.0) as u64),
        (None, operations) => operations,
    };
    let bar = crate::progress::bar(true, length);
    bar.set_style(crate::progress::style(
        "bench {bar:30} {elapsed_precise} {msg}",
    ));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let thread = {
        let bar = bar.clone();
        let done = Arc::clone(&done);
        let progress = Arc::clone(progress);
        let by_time = model.run.seconds.is_some();
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let mut last = (started, 0u64);
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let operations = progress.operations.load(Ordering::Relaxed);
                let errors = progress.errors.load(Ordering::Relaxed);
                let now = std::time::Instant::now();
                let rate = (operations - last.1) as f64 / (now - last.0).as_secs_f64().max(1e-3);
                last = (now, operations);
                bar.set_position(if by_time {
                    (started.elapsed().as_secs_f64() * 10.0) as u64
                } else {
                    operations
                });
                bar.set_message(format!(
                    "{operations} ops, {rate:.0} ops/s, {errors} errors"
                ));
            }
        })
    };
    (bar, done, thread)
}

/// Makes Ctrl-C stop a run (which then reports) instead of killing the process.
pub fn stop_on_interrupt() {
    extern "C" fn on_interrupt(_: libc::c_int) {
        // Only an atomic store: async-signal-safe.
        run::STOP.store(true, Ordering::Relaxed);
    }
    // SAFETY: installs a handler that only stores to an atomic, which is async-signal-safe;
    // the function pointer has the `extern "C" fn(c_int)` signature `signal` expects.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as *const () as libc::sighandler_t,
        );
    }
}
