//! `shoal bench replay FILE --endpoint URL`: the recorded requests sent again, in their
//! order, at their recorded pace (or as fast as the endpoint answers), reported as a model
//! run is: per access pattern (the patterns `model-from` finds), capacity, latency, hot
//! partitions, cost.
//!
//! A replay needs the request bodies: a recording made with `--record-hash-keys` holds none
//! and is refused. The calls of every operation `model-from` makes patterns of are sent
//! (single-item calls, Query, Scan, batches, transactions and PartiQL's three operations);
//! the others are counted and named. Each request is sent once, as recorded, with
//! `ReturnConsumedCapacity: INDEXES` added when it asked for less (which changes no item): an
//! application's retries are in the recording already, so a refused call is not sent again,
//! but a batch's unprocessed items are, as a model run sends them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shoal_server::record::format::Line;

use super::model_from::{group_key, model_from};
use super::read::each_line;
use crate::bench::data_model::report::Report;
use crate::bench::data_model::run::{self, Progress, Replayed};
use crate::client::target::Target;

/// Requests read ahead of the workers at most.
const READ_AHEAD_MAX: usize = 10_000;

/// How to replay.
pub struct ReplayOptions {
    pub files: Vec<PathBuf>,
    pub endpoint: String,
    /// At the recorded pace (true), or as fast as the endpoint answers.
    pub paced: bool,
    pub concurrency: usize,
    /// Delete and create the recorded tables first (their items are not loaded).
    pub create_tables: bool,
    pub progress: bool,
}

/// Replays the recording and reports.
pub fn replay(options: &ReplayOptions) -> Result<Report, String> {
    let fitted = model_from(&options.files, "replay")?;
    if fitted.hashed_keys {
        return Err(
            "the recording was made with --record-hash-keys and holds no request bodies: \
             record without it to replay (a hashed recording still makes a model)"
                .into(),
        );
    }
    let mut model = fitted.model;
    model.name = Some(format!(
        "replay of {}",
        options
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    ));
    let target = Arc::new(Target::new(Some(&options.endpoint))?);
    let generators = Arc::new(crate::bench::data_model::generate::Generators::new(
        &model.generators,
    ));
    let patterns = Arc::new(run::compile(&model, &generators)?);
    if options.create_tables {
        let mut empty = model.clone();
        empty.load.clear();
        run::prepare(&empty, &target, &generators)?;
    }
    let pattern_of: HashMap<String, usize> = fitted.group_keys.into_iter().collect();
    let (sender, receiver) = sync_channel::<Replayed>(READ_AHEAD_MAX);
    let files = options.files.clone();
    let reader = std::thread::spawn(move || {
        let mut first_us = None;
        let mut not_sent = 0u64;
        let read = each_line(&files, |line| {
            let Line::Request(line) = line else {
                return;
            };
            let Some(pattern) = pattern_of.get(&group_key(&line)).copied() else {
                not_sent += 1;
                return;
            };
            let Some(Value::Object(mut body)) = line.body else {
                not_sent += 1;
                return;
            };
            let first = *first_us.get_or_insert(line.at_us);
            body.entry("ReturnConsumedCapacity")
                .and_modify(|asked| {
                    if asked != "INDEXES" {
                        *asked = "INDEXES".into();
                    }
                })
                .or_insert_with(|| "INDEXES".into());
            let body = Value::Object(body).to_string().into_bytes();
            // A closed channel means the replay stopped: the rest is not needed.
            let _ = sender.send(Replayed {
                pattern,
                at: Duration::from_micros(line.at_us.saturating_sub(first)),
                body,
                key: line.pk,
            });
        });
        (read, not_sent)
    });
    let progress = Arc::new(Progress::default());
    let display = options
        .progress
        .then(|| crate::bench::data_model::spawn_progress(&model, &progress));
    let stats = run::replay(
        &target,
        &patterns,
        receiver,
        options.concurrency,
        options.paced,
        &progress,
    );
    if let Some((bar, done, thread)) = display {
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = thread.join();
        bar.finish_and_clear();
    }
    let (read, not_sent) = reader
        .join()
        .map_err(|_| "the recording's reader panicked".to_string())?;
    read?;
    if not_sent > 0 {
        eprintln!("shoal: {not_sent} recorded calls not replayed (not of a modelled operation, or without a body)");
    }
    for note in &fitted.skipped {
        eprintln!("shoal: not replayed: {note}");
    }
    crate::bench::data_model::report_of(&model, &target, &patterns, stats?)
}
