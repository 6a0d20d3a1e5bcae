//! The crash test's checker: after each recovery it compares what the store holds with the
//! workload's writes. Every acknowledged write must be there with its value, what survived
//! must be a prefix of the writes (an unacknowledged write is there whole or not at all, a
//! transaction all or nothing), and the stream must hold exactly one record per change of
//! that prefix, in order; when the table matches several prefixes, the stream picks among
//! them ([`History::check`]). Items that had expired when they were put are checked apart,
//! since Time to Live deletes them when it likes: each is there as written or deleted with
//! a stream record that names the service, never twice and never a phantom, and gone within
//! the run's bound at the end ([`History::expired_left`]). How the store is read (a
//! database in this process, or a server over HTTP) is the caller's: it hands over an
//! [`Observed`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;
use shoal_tables::EventName;

use super::workload::{
    describe_item, expired_key_operation, expired_puts, is_expired_key, operation, planned, Effect,
    Item, Items, Model, Operation, TRANSACT_WRITE_ITEMS,
};

/// What a crash test found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CrashTestReport {
    /// What was crashed: `embedded (kill)`, or the server's command.
    pub target: String,
    /// The workload's seed: `--seed` with it replays the run.
    pub seed: u64,
    pub cycles: u64,
    /// Acknowledged writes whose survival was checked.
    pub acknowledged_checked: u64,
    /// Acknowledged writes lost where the durability mode allows it (unsynced at a power loss).
    pub acknowledged_lost_allowed: u64,
    /// Items put already expired that the target's Time to Live was seen to delete.
    pub expired_deleted: u64,
    /// What the target does not offer (transactions, a stream, Time to Live), with the answer
    /// that said so: not checked, and not a violation.
    pub not_offered: BTreeMap<String, String>,
    /// What the run was asked not to check, with the option that asked.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub not_checked: BTreeMap<String, String>,
    /// Violations by kind, each with its first few descriptions.
    pub violations: BTreeMap<String, Vec<String>>,
    /// Milliseconds each recovery took (a reopen, or a restart until the server answered).
    pub recovery_ms: Vec<f64>,
    /// Stopped by Ctrl-C or SIGTERM before its cycles were done.
    pub interrupted: bool,
    /// `--app`: what the app and its check did (the checks above are then the user's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<super::app::AppSummary>,
}

impl CrashTestReport {
    pub fn violation_count(&self) -> usize {
        self.violations.values().map(Vec::len).sum()
    }

    /// What the progress line says after a cycle.
    pub fn progress_message(&self) -> String {
        match &self.app {
            Some(app) => format!(
                "{} checks passed, {} violations",
                app.checks_passed,
                self.violation_count()
            ),
            None => format!(
                "{} acknowledged writes checked, {} violations",
                self.acknowledged_checked,
                self.violation_count()
            ),
        }
    }

    pub(crate) fn violate(&mut self, kind: &str, what: String) {
        let list = self.violations.entry(kind.to_string()).or_default();
        if list.len() < 10 {
            list.push(what);
        }
    }

    /// The report as text.
    pub fn render(&self) -> String {
        let mut sorted = self.recovery_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| {
            if sorted.is_empty() {
                0.0
            } else {
                sorted[((sorted.len() - 1) as f64 * q).round() as usize]
            }
        };
        let mut out = String::new();
        if !self.target.is_empty() {
            out.push_str(&format!("target: {}\n", self.target));
        }
        if self.interrupted {
            out.push_str("interrupted: a partial report\n");
        }
        match &self.app {
            Some(app) => {
                out.push_str(&format!("app: `{}`\n", app.app));
                if let Some(check) = &app.check {
                    out.push_str(&format!("check: `{check}`\n"));
                }
                out.push_str(&format!(
                    "{} cycles ({} crashes), {} checks passed, the app started {} times\n",
                    self.cycles, app.crash, app.checks_passed, app.app_starts
                ));
                for exit in &app.app_exits {
                    out.push_str(&format!("the app exited on its own: {exit}\n"));
                }
            }
            None => out.push_str(&format!(
                "{} cycles, {} acknowledged writes checked, {} lost where the durability mode allows it, {} expired items deleted by Time to Live\n",
                self.cycles, self.acknowledged_checked, self.acknowledged_lost_allowed, self.expired_deleted,
            )),
        }
        out.push_str(&format!(
            "recovery: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms\n",
            at(0.5),
            at(0.99),
            at(1.0)
        ));
        for (what, why) in &self.not_offered {
            out.push_str(&format!("not offered: {what} ({why})\n"));
        }
        for (what, why) in &self.not_checked {
            out.push_str(&format!("not checked: {what} ({why})\n"));
        }
        if self.violations.is_empty() {
            out.push_str("no violations\n");
        } else {
            for (kind, list) in &self.violations {
                out.push_str(&format!("violation: {kind} ({})\n", list.len()));
                for what in list {
                    // A description of several lines (a check's output) stays under its kind.
                    out.push_str(&format!("  {}\n", what.replace('\n', "\n    ")));
                }
            }
        }
        if let Some(dir) = self.app.as_ref().and_then(|app| app.run_dir.as_ref()) {
            out.push_str(&format!(
                "the run's directory is kept: {dir} (data, server.log, app.log, check.log)\n"
            ));
        }
        out.push_str(&format!(
            "seed {} (--seed {} replays the run)\n",
            self.seed, self.seed
        ));
        out
    }
}

/// How strictly the stream's order is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOrder {
    /// One sequence for the whole table (Shoal's single writer orders every record).
    Global,
    /// In order per key only, as DynamoDB promises across shards.
    PerKey,
}

/// A table's whole stream as read back.
pub struct Stream {
    /// Every record as (event, key).
    pub records: Vec<(EventName, String)>,
    /// The keys of the REMOVE records written by the service (Time to Live deletes: in
    /// DynamoDB's JSON, `userIdentity` of type `Service`, principal `dynamodb.amazonaws.com`).
    pub removed_by_service: BTreeSet<String>,
}

/// What a recovered store holds.
pub struct Observed {
    pub items: Items,
    /// Index problems found, as (kind, description).
    pub index_problems: Vec<(String, String)>,
    /// The whole stream as (event, key); None when the target offers no stream.
    pub stream: Option<Result<Vec<(EventName, String)>, String>>,
    /// The keys of the stream's REMOVE records that name the Time to Live service
    /// (`userIdentity`) as their writer.
    pub removed_by_service: BTreeSet<String>,
    pub stream_order: StreamOrder,
}

/// What the checker carries from cycle to cycle: the operations that survived so far.
pub struct History {
    seed: u64,
    /// Whether the target runs transactions (else they are skipped, here and by the writer).
    transactions: bool,
    /// Whether the target deletes expired items (Time to Live enabled on the table).
    time_to_live: bool,
    /// Operations 0..applied are in the store.
    pub applied: u64,
    model: Model,
    /// The stream records of operations 0..applied, per operation.
    records: Vec<Vec<(EventName, String)>>,
    /// The last operation of 0..applied that wrote each key.
    last_writer: BTreeMap<String, u64>,
    /// Puts of expired items lost where that was allowed (unsynced at a power loss).
    expired_lost: BTreeSet<u64>,
}

/// A prefix of the workload the table matches: operations `0..m`, the items they leave,
/// their stream records (`records[i]` are operation `i`'s) and each key's last writer.
struct Prefix {
    m: u64,
    model: Model,
    records: Vec<Vec<(EventName, String)>>,
    last_writer: BTreeMap<String, u64>,
}

impl History {
    pub fn new(seed: u64, transactions: bool, time_to_live: bool) -> History {
        History {
            seed,
            transactions,
            time_to_live,
            applied: 0,
            model: Model::default(),
            records: Vec::new(),
            last_writer: BTreeMap::new(),
            expired_lost: BTreeSet::new(),
        }
    }

    /// Operation `i` as the target runs it (None: skipped).
    fn planned(&self, i: u64) -> Option<Operation> {
        planned(self.seed, i, self.transactions)
    }

    /// Checks the store after a crash in which operations `applied..acknowledged` were
    /// acknowledged and one more may have been in flight. `lossy`: acknowledged writes may
    /// be lost (unsynced at a power loss). Moves `applied` to what survived.
    pub fn check(
        &mut self,
        observed: Observed,
        acknowledged: u64,
        lossy: bool,
        report: &mut CrashTestReport,
    ) {
        let (expired, stored): (Items, Items) = observed
            .items
            .into_iter()
            .partition(|(key, _)| is_expired_key(key));
        let stored = &stored;
        // Find the prefix the store holds: operations 0..m for m in applied..=acknowledged + 1.
        // Several may match: a write that changed nothing visible (a put and then a delete
        // of the same key) leaves the table as it was, survived or not.
        let mut model = self.model.clone();
        let mut records = self.records.clone();
        let mut last_writer = self.last_writer.clone();
        let mut candidates = Vec::new();
        let mut m = self.applied;
        loop {
            if &model.items == stored {
                candidates.push(Prefix {
                    m,
                    model: model.clone(),
                    records: records.clone(),
                    last_writer: last_writer.clone(),
                });
            }
            if m > acknowledged {
                break;
            }
            match self.planned(m) {
                Some(operation) => {
                    for (key, _) in &operation.effects {
                        last_writer.insert(key.clone(), m);
                    }
                    records.push(model.apply(&operation));
                }
                None => records.push(Vec::new()),
            }
            m += 1;
        }
        let Some(first_found) = candidates.first().map(|prefix| prefix.m) else {
            self.diagnose(stored, acknowledged, report);
            return;
        };
        // The expired items' records are checked apart; the rest against the prefix.
        let (stream, expired_stream) = match observed.stream {
            Some(Ok(stream)) => {
                let (expired, rest): (Vec<_>, Vec<_>) =
                    stream.into_iter().partition(|(_, key)| is_expired_key(key));
                (Some(Ok(rest)), Some(expired))
            }
            other => (other, None),
        };
        let (
            Prefix {
                m,
                model,
                records,
                last_writer,
            },
            stream_problems_found,
        ) = self.choose_prefix(
            candidates,
            stream.as_ref(),
            observed.stream_order,
            acknowledged,
            lossy,
        );
        // Operations before `certain` are in the store for sure; from there to `m` they
        // changed nothing visible and may be lost where that is allowed, or be the one in
        // flight.
        let certain = if lossy {
            first_found
        } else {
            m.min(acknowledged)
        };
        self.check_expired(
            &expired,
            expired_stream.as_deref(),
            &observed.removed_by_service,
            (certain, m),
            acknowledged,
            report,
        );
        report.acknowledged_checked += acknowledged.saturating_sub(self.applied);
        if m < acknowledged {
            if lossy {
                report.acknowledged_lost_allowed += acknowledged - m;
            } else {
                // The longest matching prefix ends before `m`'s visible effect.
                let what = match self.planned(m) {
                    Some(lost) => {
                        let mut after = model.clone();
                        after.apply(&lost);
                        // The keys that show the loss (a delete of an absent item shows none).
                        let keys: Vec<String> = lost
                            .effects
                            .iter()
                            .filter(|(key, _)| stored.get(key) != after.items.get(key))
                            .map(|(key, _)| read_back(key, stored, &after.items))
                            .collect();
                        format!(
                            "{}, acknowledged: {}; the table holds the first {m} of {acknowledged} acknowledged operations",
                            lost.describe(m),
                            keys.join(", ")
                        )
                    }
                    None => format!("{acknowledged} acknowledged operations, {m} survived"),
                };
                report.violate("acknowledged write lost", what);
            }
        }
        for (kind, problem) in observed.index_problems {
            report.violate(&kind, problem);
        }
        // Empty without a readable stream (`choose_prefix`).
        if let Some(Err(e)) = stream {
            report.violate("stream unreadable", e);
        }
        for (kind, what) in stream_problems_found {
            report.violate(kind, what);
        }
        self.applied = m;
        self.model = model;
        self.records = records;
        self.last_writer = last_writer;
    }

    /// Of the prefixes the table matches (`candidates`, shortest first, never empty), the
    /// one that survived, with its stream problems (none without a stream): the longest
    /// whose stream checks clean, since the stream tells apart what the table cannot (a put
    /// and a delete of one key, both lost at a power loss, leave the table as both surviving
    /// would). Without a stream, or when none checks clean, the longest. Where no
    /// acknowledged write may be lost, only prefixes holding every acknowledged write are
    /// chosen from (when the table matches one), so a stream missing an acknowledged
    /// write's record stays a violation.
    fn choose_prefix(
        &self,
        mut candidates: Vec<Prefix>,
        stream: Option<&Result<Vec<(EventName, String)>, String>>,
        order: StreamOrder,
        acknowledged: u64,
        lossy: bool,
    ) -> (Prefix, Vec<(&'static str, String)>) {
        debug_assert!(!candidates.is_empty(), "the table matched some prefix");
        let longest = candidates.len() - 1;
        let Some(Ok(stream)) = stream else {
            return (candidates.swap_remove(longest), Vec::new());
        };
        let floor = if lossy {
            0
        } else {
            candidates[longest].m.min(acknowledged)
        };
        // Longest first; the longest is never below the floor, so its problems are known
        // by the time the walk ends.
        let mut longest_problems = None;
        for at in (0..candidates.len()).rev() {
            if candidates[at].m < floor {
                break;
            }
            let problems = stream_problems(self.seed, stream, &candidates[at].records, order);
            if problems.is_empty() {
                return (candidates.swap_remove(at), problems);
            }
            longest_problems.get_or_insert(problems);
        }
        (
            candidates.swap_remove(longest),
            longest_problems.unwrap_or_default(),
        )
    }

    /// Checks the expired items after a recovery in which operations `0..certain` survived,
    /// `certain..applied` may have (they changed nothing visible: lost where the mode allows
    /// it, or in flight) and `..=acknowledged` may have: each item there is one the workload
    /// put, as written; with a stream, each key's records are its INSERT and then at most
    /// one REMOVE written by the Time to Live service, and a surviving put that is no longer
    /// there has both.
    fn check_expired(
        &mut self,
        stored: &Items,
        stream: Option<&[(EventName, String)]>,
        removed_by_service: &BTreeSet<String>,
        (certain, applied): (u64, u64),
        acknowledged: u64,
        report: &mut CrashTestReport,
    ) {
        for (key, item) in stored {
            let written = expired_key_operation(key)
                .filter(|&i| i <= acknowledged)
                .and_then(|i| self.planned(i))
                .and_then(|operation| operation.effects.into_iter().next())
                .and_then(|(_, effect)| match effect {
                    Effect::Put(item) => Some(item_of(&item)),
                    _ => None,
                });
            if written.as_ref() != Some(item) {
                report.violate(
                    "not a prefix of the writes",
                    format!(
                        "{key} reads back {}, but no acknowledged or in-flight operation wrote that",
                        describe_item(Some(item))
                    ),
                );
            }
        }
        let mut read: BTreeMap<&str, Vec<EventName>> = BTreeMap::new();
        for (event, key) in stream.unwrap_or_default() {
            read.entry(key).or_default().push(*event);
        }
        // A put that may not have survived, is not there and left no record did not: it is
        // not expected again (the next cycle writes on from `applied`).
        for (i, key) in expired_puts(certain..applied) {
            if !stored.contains_key(&key) && !read.contains_key(key.as_str()) {
                self.expired_lost.insert(i);
            }
        }
        let survived: Vec<String> = expired_puts(0..applied)
            .filter(|(i, _)| !self.expired_lost.contains(i))
            .map(|(_, key)| key)
            .collect();
        report.expired_deleted = survived
            .iter()
            .filter(|key| !stored.contains_key(*key))
            .count() as u64;
        if stream.is_none() {
            return;
        }
        // Every surviving put of an expired item, and every key the stream names.
        let keys: BTreeSet<String> = survived
            .into_iter()
            .chain(read.keys().map(|key| key.to_string()))
            .collect();
        for key in keys {
            let events = read
                .get(key.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default();
            let must = expired_key_operation(&key)
                .is_some_and(|i| i < applied && !self.expired_lost.contains(&i));
            let present = stored.contains_key(&key);
            let named: Vec<&str> = events.iter().map(|event| event.as_str()).collect();
            let problem = match events {
                [] if must || present => Some("stream record missing"),
                [] => None,
                [EventName::Insert] if must && !present => Some("stream record missing"),
                [EventName::Insert] => None,
                // Deleted between the read of the table and the read of its stream.
                [EventName::Insert, EventName::Remove] if present => None,
                [EventName::Insert, EventName::Remove] if !removed_by_service.contains(&key) => {
                    Some("expired item deleted without the service's name")
                }
                [EventName::Insert, EventName::Remove] => None,
                _ if events.len() > 2 => Some("stream record duplicated"),
                _ => Some("stream out of order"),
            };
            if let Some(kind) = problem {
                report.violate(
                    kind,
                    format!(
                        "{key} (put already expired by operation {}): the stream holds [{}], the table {}",
                        expired_key_operation(&key).map_or("?".to_string(), |i| i.to_string()),
                        named.join(", "),
                        if present { "holds it" } else { "does not" }
                    ),
                );
            }
        }
    }

    /// How many puts of expired items survived so far (not lost where that was allowed).
    pub fn expired_surviving(&self) -> u64 {
        expired_puts(0..self.applied)
            .filter(|(i, _)| !self.expired_lost.contains(i))
            .count() as u64
    }

    /// The expired items of surviving puts still readable in `items`: what a final check
    /// waits for Time to Live to delete (none expected when the target has no Time to Live).
    pub fn expired_left(&self, items: &Items) -> Vec<String> {
        if !self.time_to_live {
            return Vec::new();
        }
        items
            .iter()
            .filter(|(key, _)| expired_key_operation(key).is_some_and(|i| i < self.applied))
            .map(|(key, item)| format!("{key} ({})", describe_item(Some(item))))
            .collect()
    }

    /// After the last cycle: waits up to `bound` for Time to Live to delete every expired item
    /// of the surviving writes, reading the table with `read`; what is left then is a violation.
    /// A bound of zero asks for no wait: the deletes are then not checked, and the report says
    /// so.
    pub fn wait_for_expiry(
        &self,
        bound: Duration,
        mut read: impl FnMut() -> Result<Items, String>,
        report: &mut CrashTestReport,
    ) -> Result<(), String> {
        if bound.is_zero() {
            report.not_checked.insert(
                "expired items deleted".to_string(),
                "--expiry-bound-seconds 0".to_string(),
            );
            return Ok(());
        }
        let started = Instant::now();
        loop {
            let left = self.expired_left(&read()?);
            if left.is_empty() {
                report.expired_deleted = self.expired_surviving();
                return Ok(());
            }
            if super::signals::stopped() {
                return Ok(());
            }
            if started.elapsed() >= bound {
                report.violate(
                "expired item not deleted",
                format!(
                    "{} items put with an expiry an hour past are still there {} s after the last recovery: {}",
                    left.len(),
                    bound.as_secs(),
                    left.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
                ),
            );
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// No prefix of the writes matches the store: name each acknowledged operation whose
    /// effect is missing (a lost write, or half a transaction) with what was read back.
    fn diagnose(&self, stored: &Items, acknowledged: u64, report: &mut CrashTestReport) {
        let mut expected = self.model.clone();
        let mut last_writer = self.last_writer.clone();
        for i in self.applied..acknowledged {
            if let Some(operation) = self.planned(i) {
                for (key, _) in &operation.effects {
                    last_writer.insert(key.clone(), i);
                }
                expected.apply(&operation);
            }
        }
        let in_flight = self.planned(acknowledged);
        let mut after_flight = expected.clone();
        if let Some(operation) = &in_flight {
            after_flight.apply(operation);
        }
        let flight_keys: BTreeSet<&String> = in_flight
            .iter()
            .flat_map(|operation| operation.effects.iter().map(|(key, _)| key))
            .collect();
        let mut reported = 0;
        // The in-flight operation: a transaction is all or nothing even unacknowledged.
        if let Some(operation) = in_flight
            .as_ref()
            .filter(|operation| operation.name == TRANSACT_WRITE_ITEMS)
        {
            let applied = |key: &String| {
                stored.get(key) == after_flight.items.get(key)
                    && stored.get(key) != expected.items.get(key)
            };
            let not_applied = |key: &String| {
                stored.get(key) == expected.items.get(key)
                    && stored.get(key) != after_flight.items.get(key)
            };
            let keys: Vec<&String> = operation.effects.iter().map(|(key, _)| key).collect();
            if keys.iter().any(|key| applied(key)) && keys.iter().any(|key| not_applied(key)) {
                let parts: Vec<String> = keys
                    .iter()
                    .map(|key| {
                        format!(
                            "{key} {} (reads back {})",
                            if applied(key) {
                                "applied"
                            } else {
                                "not applied"
                            },
                            describe_item(stored.get(*key))
                        )
                    })
                    .collect();
                report.violate(
                    "transaction half-applied",
                    format!(
                        "{}, in flight at the crash: {}",
                        operation.describe(acknowledged),
                        parts.join(", ")
                    ),
                );
                reported += 1;
            }
        }
        // Keys that hold neither what the acknowledged writes left nor the in-flight write.
        let keys: BTreeSet<&String> = stored.keys().chain(expected.items.keys()).collect();
        let wrong: BTreeSet<&String> = keys
            .into_iter()
            .filter(|key| stored.get(*key) != expected.items.get(*key))
            .filter(|key| {
                !(flight_keys.contains(key) && stored.get(*key) == after_flight.items.get(*key))
            })
            .collect();
        let mut named = BTreeSet::new();
        for key in &wrong {
            let Some(&writer) = last_writer.get(*key) else {
                report.violate(
                    "not a prefix of the writes",
                    format!(
                        "{key} reads back {}, but no operation wrote it",
                        describe_item(stored.get(*key))
                    ),
                );
                reported += 1;
                continue;
            };
            if !named.insert(writer) {
                continue;
            }
            let operation = operation(self.seed, writer);
            // The operation's keys that still show its effect.
            let own: Vec<&String> = operation
                .effects
                .iter()
                .map(|(key, _)| key)
                .filter(|key| last_writer.get(*key) == Some(&writer))
                .collect();
            let lost: Vec<String> = own
                .iter()
                .filter(|key| wrong.contains(*key))
                .map(|key| read_back(key, stored, &expected.items))
                .collect();
            let kept: Vec<&&String> = own.iter().filter(|key| !wrong.contains(**key)).collect();
            if operation.name == TRANSACT_WRITE_ITEMS && !kept.is_empty() {
                let kept: Vec<String> = kept.iter().map(|key| key.to_string()).collect();
                report.violate(
                    "transaction half-applied",
                    format!(
                        "{}, acknowledged: {} as written, but {}",
                        operation.describe(writer),
                        kept.join(", "),
                        lost.join(", ")
                    ),
                );
            } else {
                report.violate(
                    "acknowledged write lost",
                    format!(
                        "{}, acknowledged: {}",
                        operation.describe(writer),
                        lost.join(", ")
                    ),
                );
            }
            reported += 1;
        }
        if reported == 0 {
            report.violate(
                "not a prefix of the writes",
                format!(
                    "the table matches no prefix of operations {}..={} (acknowledged up to {})",
                    self.applied,
                    acknowledged + 1,
                    acknowledged
                ),
            );
        }
    }
}

/// `key reads back X, expected Y`.
fn read_back(key: &str, stored: &Items, expected: &BTreeMap<String, Item>) -> String {
    format!(
        "{key} reads back {}, expected {}",
        describe_item(stored.get(key)),
        describe_item(expected.get(key))
    )
}

/// Compares the stream with the changes of the surviving operations (`records[i]` are
/// operation `i`'s): per key, exactly once and in order; with [`StreamOrder::Global`] also
/// in one order for the whole table. Returns the problems found, as (kind, description).
fn stream_problems(
    seed: u64,
    stream: &[(EventName, String)],
    records: &[Vec<(EventName, String)>],
    order: StreamOrder,
) -> Vec<(&'static str, String)> {
    let mut problems = Vec::new();
    let mut expected: BTreeMap<&str, Vec<(u64, EventName)>> = BTreeMap::new();
    for (i, changes) in records.iter().enumerate() {
        for (event, key) in changes {
            expected.entry(key).or_default().push((i as u64, *event));
        }
    }
    let mut read: BTreeMap<&str, Vec<EventName>> = BTreeMap::new();
    for (event, key) in stream {
        read.entry(key).or_default().push(*event);
    }
    let keys: BTreeSet<&str> = expected.keys().chain(read.keys()).copied().collect();
    let mut wrong = false;
    for key in keys {
        let want = expected.get(key).map(Vec::as_slice).unwrap_or_default();
        let got = read.get(key).map(Vec::as_slice).unwrap_or_default();
        let Some(at) = (0..want.len().max(got.len()))
            .find(|&i| want.get(i).map(|(_, event)| event) != got.get(i))
        else {
            continue;
        };
        wrong = true;
        let kind = if got.len() > want.len() {
            "stream record duplicated"
        } else if got.len() < want.len() {
            "stream record missing"
        } else {
            "stream out of order"
        };
        let read_at = got
            .get(at)
            .map_or("nothing".to_string(), |event| event.as_str().to_string());
        let expected_at = want.get(at).map_or("nothing".to_string(), |(i, event)| {
            format!("{} of {}", event.as_str(), operation(seed, *i).describe(*i))
        });
        problems.push((
            kind,
            format!(
                "{key}: {} records for {} changes; record {at} of the key is {read_at}, expected {expected_at}",
                got.len(),
                want.len()
            ),
        ));
    }
    if order == StreamOrder::Global && !wrong {
        let flat: Vec<&(EventName, String)> = records.iter().flatten().collect();
        if let Some(at) = (0..stream.len()).find(|&i| &stream[i] != flat[i]) {
            problems.push((
                "stream out of order",
                format!(
                    "record {at} is {} {}, the change was {} {}",
                    stream[at].0.as_str(),
                    stream[at].1,
                    flat[at].0.as_str(),
                    flat[at].1
                ),
            ));
        }
    }
    problems
}

/// Converts an item read back over HTTP into the model's form.
pub fn item_of(value: &Value) -> Item {
    value.as_object().cloned().unwrap_or_default()
}
