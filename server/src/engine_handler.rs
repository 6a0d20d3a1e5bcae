//! The engine behind the transport: every operation goes to `Database::execute_json_text`.

use std::fmt::Write as _;
use std::sync::Arc;

use shoal_model::ApiError;
use shoal_tables::capacity::metering::CallCharge;
use shoal_tables::{Database, Lag, ReplicationLink};

use crate::handler::{kill_this_process, CrashMode, DynamoHandler};

/// Item collections one `GET /shoal/collections` steps through at most (two reads each).
const COLLECTIONS_VISITED_MAX: usize = 10_000;
/// Collections one answer lists at most.
const COLLECTIONS_LISTED_MAX: usize = 100;

/// Serves a [`Database`] over DynamoDB's protocol.
pub struct EngineHandler {
    database: Arc<Database>,
}

/// Contributors per rule on the /metrics page: the top few over the last minutes, so the
/// page stays small whatever the key space.
const METRICS_CONTRIBUTORS_TOP: usize = 5;
const METRICS_CONTRIBUTORS_MINUTES: u64 = 5;

impl EngineHandler {
    pub fn new(database: Arc<Database>) -> EngineHandler {
        EngineHandler { database }
    }

    /// Contributor Insights' top keys of every table and GSI with insights enabled:
    /// `shoal_contributor_insights_value{table,index,rule,key}` (consumed throughput units
    /// for PKC/SKC, throttled requests for PKT/SKT; an item's key is `pk/sk`).
    fn render_contributors(&self, out: &mut String) {
        out.push_str(
            "# HELP shoal_contributor_insights_value Contributor Insights: top keys over the last 5 minutes (3 x write units + read units, or throttled requests).\n\
             # TYPE shoal_contributor_insights_value gauge\n",
        );
        for (table, index) in self.database.contributors_followed() {
            let Some(rules) = self.database.contributors_report(
                &table,
                index.as_deref(),
                METRICS_CONTRIBUTORS_MINUTES,
                METRICS_CONTRIBUTORS_TOP,
            ) else {
                continue;
            };
            for rule in rules {
                for contributor in rule.contributors {
                    let _ = writeln!(
                        out,
                        "shoal_contributor_insights_value{{table=\"{}\",index=\"{}\",rule=\"{}\",key=\"{}\"}} {}",
                        escape_label(&table),
                        escape_label(index.as_deref().unwrap_or("")),
                        rule.rule,
                        escape_label(&contributor.keys.join("/")),
                        contributor.value
                    );
                }
            }
        }
    }
}

impl DynamoHandler for EngineHandler {
    fn handle(
        &self,
        operation: &str,
        body: &[u8],
        region: Option<&str>,
    ) -> Result<Vec<u8>, ApiError> {
        self.database
            .execute_json_text_in_region(region, operation, body)
            .map(|answer| served_body(operation, answer))
    }

    fn handle_charged(
        &self,
        operation: &str,
        body: &[u8],
        region: Option<&str>,
    ) -> (Result<Vec<u8>, ApiError>, CallCharge) {
        let (answer, charge) = self
            .database
            .execute_json_text_charged(region, operation, body);
        (answer.map(|answer| served_body(operation, answer)), charge)
    }

    fn operations(&self) -> &[&'static str] {
        shoal_tables::SUPPORTED_OPERATIONS
    }

    fn runs_inline(&self, operation: &str) -> bool {
        shoal_tables::never_waits(operation)
    }

    fn crash(&self, mode: CrashMode) -> ! {
        if mode == CrashMode::PowerLoss {
            match self.database.lsm().lose_unsynced_writes() {
                Ok(bytes) => tracing::warn!(bytes, "crash: unsynced WAL bytes dropped"),
                // Dying anyway: the unsynced bytes are then kept, as after a plain kill.
                Err(error) => tracing::error!(%error, "crash: could not drop unsynced writes"),
            }
        }
        kill_this_process()
    }

    fn item_collections(
        &self,
        table: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<serde_json::Value, String> {
        let after = after
            .map(hex::decode)
            .transpose()
            .map_err(|_| "after must be the hex text of an earlier answer's next".to_owned())?;
        let walk = self
            .database
            .largest_item_collections(
                table,
                after.as_deref(),
                COLLECTIONS_VISITED_MAX,
                limit.min(COLLECTIONS_LISTED_MAX),
            )
            .map_err(|error| error.message)?;
        let collections: Vec<serde_json::Value> = walk
            .largest
            .iter()
            .map(|found| {
                serde_json::json!({
                    "key": found.partition_key.to_json(),
                    "size_bytes": found.record.size_bytes,
                    "item_count": found.record.item_count,
                })
            })
            .collect();
        Ok(serde_json::json!({
            "collections": collections,
            "scanned": walk.visited,
            "complete": walk.next.is_none(),
            "next": walk.next.map(hex::encode),
            "limit_bytes": self.database.options().limits.item_collection_size_limit_bytes,
        }))
    }

    fn settings(&self) -> serde_json::Value {
        settings_of(self.database.options())
    }

    fn health(&self) -> crate::handler::StorageHealth {
        use crate::handler::StorageHealth;
        use shoal_tables::core::health::Health;
        match self.database.health() {
            Health::Healthy => StorageHealth::Healthy,
            Health::Degraded { places, reads } => StorageHealth::Degraded(format!(
                "{reads} reads met {places} damaged SSTable places (shoal_corrupt_blocks in /metrics; docs/RECOVERY.md)"
            )),
            // Not a 503: a restart frees no space, and writes come back by themselves.
            Health::OutOfSpace { reason } => StorageHealth::Degraded(reason),
            Health::WritesRefused { reason } => StorageHealth::WritesRefused(reason),
        }
    }

    fn contributors(
        &self,
        table: Option<&str>,
        index: Option<&str>,
        minutes: u64,
        top: usize,
    ) -> Option<serde_json::Value> {
        let Some(table) = table else {
            let followed: Vec<serde_json::Value> = self
                .database
                .contributors_followed()
                .into_iter()
                .map(|(table, index)| serde_json::json!({"table": table, "index": index}))
                .collect();
            return Some(serde_json::json!({ "followed": followed }));
        };
        let rules = self
            .database
            .contributors_report(table, index, minutes, top)?;
        Some(serde_json::json!({
            "table": table,
            "index": index,
            "minutes": minutes,
            "rules": rules,
        }))
    }

    fn replication(&self, change: Option<&serde_json::Value>) -> Result<serde_json::Value, String> {
        if let Some(change) = change {
            let text = |member: &str| change.get(member).and_then(serde_json::Value::as_str);
            match (text("cut"), text("heal"), text("lagMs")) {
                (Some(region), None, None) => self.database.cut_region(region),
                (None, Some(region), None) => self.database.heal_region(region),
                (None, None, Some(lag)) => self.database.set_replication_lag(Lag::parse(lag)?),
                _ => {
                    return Err(
                        "send exactly one of {\"cut\": REGION}, {\"heal\": REGION} or {\"lagMs\": \"MS|MIN-MAX\"}"
                            .to_owned(),
                    )
                }
            }
        }
        let lag = self.database.replication_lag();
        let links = self
            .database
            .replication_links()
            .map_err(|error| error.message)?;
        Ok(serde_json::json!({
            "lagMs": {"min": lag.min.as_millis() as u64, "max": lag.max.as_millis() as u64},
            "cut": self.database.cut_regions(),
            "links": links.iter().map(|link| serde_json::json!({
                "table": link.table,
                "from": link.from,
                "to": link.to,
                "backlog": link.backlog,
                "lagMs": link.lag.as_millis() as u64,
            })).collect::<Vec<_>>(),
        }))
    }

    fn render_metrics(&self, out: &mut String) {
        let writes_accepted = u8::from(self.database.lsm().poisoned().is_none());
        let disk_full = u8::from(self.database.lsm().out_of_space().is_some());
        let _ = write!(
            out,
            "# HELP shoal_writes_accepted 1 while writes are accepted; 0 after a failed sync, flush or compaction (GET / answers 503).\n\
             # TYPE shoal_writes_accepted gauge\nshoal_writes_accepted {writes_accepted}\n\
             # HELP shoal_disk_full 1 while a write, flush or compaction waits for disk space (GET / answers degraded); writes resume by themselves once space is freed.\n\
             # TYPE shoal_disk_full gauge\nshoal_disk_full {disk_full}\n"
        );
        let wal = self.database.lsm().wal_stats();
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "# TYPE shoal_wal_commits_total counter\nshoal_wal_commits_total {}\n\
             # TYPE shoal_wal_groups_total counter\nshoal_wal_groups_total {}\n\
             # TYPE shoal_wal_syncs_total counter\nshoal_wal_syncs_total {}\n\
             # TYPE shoal_wal_bytes_written_total counter\nshoal_wal_bytes_written_total {}\n\
             # TYPE shoal_wal_live_bytes gauge\nshoal_wal_live_bytes {}\n",
            wal.commits,
            wal.groups,
            wal.syncs,
            wal.bytes_written,
            self.database.lsm().wal_live_bytes(),
        );
        // Global tables: each link's queued changes and the age of its oldest.
        if let Ok(links) = self.database.replication_links() {
            let families: [(&str, &str, LinkFigure); 2] = [
                (
                    "shoal_replication_backlog",
                    "Changes queued for a replica, per table and direction.",
                    |link| link.backlog.to_string(),
                ),
                (
                    "shoal_replication_lag_seconds",
                    "Age of the oldest change queued for a replica (0 when none is).",
                    |link| format!("{:.3}", link.lag.as_secs_f64()),
                ),
            ];
            for (name, help, value) in families {
                let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n");
                for link in &links {
                    let _ = writeln!(
                        out,
                        "{name}{{table=\"{}\",from=\"{}\",to=\"{}\"}} {}",
                        escape_label(&link.table),
                        escape_label(&link.from),
                        escape_label(&link.to),
                        value(link)
                    );
                }
            }
        }
        out.push_str("# TYPE shoal_consumed_read_capacity_units_total counter\n");
        let consumed = self.database.consumed_capacity();
        for (table, totals) in &consumed {
            let _ = writeln!(
                out,
                "shoal_consumed_read_capacity_units_total{{table=\"{}\"}} {}",
                escape_label(table),
                totals.read_units
            );
        }
        out.push_str("# TYPE shoal_consumed_write_capacity_units_total counter\n");
        for (table, totals) in &consumed {
            let _ = writeln!(
                out,
                "shoal_consumed_write_capacity_units_total{{table=\"{}\"}} {}",
                escape_label(table),
                totals.write_units
            );
        }
        // Each index's arm (its own reads; the writes that maintain it), also counted in its
        // table's total above.
        let per_index = self.database.consumed_capacity_per_index();
        for (name, writes) in [
            ("shoal_index_consumed_read_capacity_units_total", false),
            ("shoal_index_consumed_write_capacity_units_total", true),
        ] {
            let _ = writeln!(out, "# TYPE {name} counter");
            for (table, index, totals) in &per_index {
                let units = if writes {
                    totals.write_units
                } else {
                    totals.read_units
                };
                let _ = writeln!(
                    out,
                    "{name}{{table=\"{}\",index=\"{}\"}} {units}",
                    escape_label(table),
                    escape_label(index),
                );
            }
        }
        render_throttled(&self.database.throttled_requests(), out);
        self.render_contributors(out);
        let stats = self.database.lsm().stats();
        out.push_str("# TYPE shoal_sstable_files gauge\n");
        for (level, files) in stats.level_files.iter().enumerate() {
            let _ = writeln!(out, "shoal_sstable_files{{level=\"{level}\"}} {files}");
        }
        out.push_str("# TYPE shoal_sstable_bytes gauge\n");
        for (level, bytes) in stats.level_bytes.iter().enumerate() {
            let _ = writeln!(out, "shoal_sstable_bytes{{level=\"{level}\"}} {bytes}");
        }
        let _ = write!(
            out,
            "# TYPE shoal_write_amplification gauge\nshoal_write_amplification {}\n\
             # TYPE shoal_compactions_total counter\nshoal_compactions_total {}\n\
             # TYPE shoal_compaction_bytes_written_total counter\nshoal_compaction_bytes_written_total {}\n\
             # TYPE shoal_flush_bytes_written_total counter\nshoal_flush_bytes_written_total {}\n\
             # TYPE shoal_write_stalls_total counter\nshoal_write_stalls_total {}\n\
             # TYPE shoal_write_stall_seconds_total counter\nshoal_write_stall_seconds_total {}\n",
            stats.write_amplification,
            stats.compactions,
            stats.compaction_bytes_written,
            stats.flush_bytes_written,
            stats.write_stalls,
            stats.stall_time_total.as_secs_f64(),
        );
        render_compaction_levels(&stats.compaction_levels, out);
        render_corruption(&self.database.corruption_report(), out);
    }
}

/// Compaction work by the level it wrote into (`shoal_tables::LevelCompactionStats`): where
/// write amplification and compaction time go, level by level.
fn render_compaction_levels(levels: &[shoal_tables::LevelCompactionStats], out: &mut String) {
    type Field = fn(&shoal_tables::LevelCompactionStats) -> f64;
    let families: [(&str, Field); 5] = [
        ("shoal_compaction_level_compactions_total", |l| {
            l.compactions as f64
        }),
        ("shoal_compaction_level_trivial_moves_total", |l| {
            l.trivial_moves as f64
        }),
        ("shoal_compaction_level_bytes_read_total", |l| {
            l.bytes_read as f64
        }),
        ("shoal_compaction_level_bytes_written_total", |l| {
            l.bytes_written as f64
        }),
        ("shoal_compaction_level_seconds_total", |l| {
            l.busy.as_secs_f64()
        }),
    ];
    for (name, field) in families {
        let _ = writeln!(out, "# TYPE {name} counter");
        for (level, counted) in levels.iter().enumerate() {
            let _ = writeln!(out, "{name}{{level=\"{level}\"}} {}", field(counted));
        }
    }
}

/// The knobs of `options` a test may have set: `GET /shoal/settings`. Lags are
/// `{"min_ms", "max_ms"}` (equal when fixed), or null when off.
fn settings_of(options: &shoal_tables::Options) -> serde_json::Value {
    let lag = |lag: Option<shoal_tables::Lag>| {
        lag.map(|lag| {
            serde_json::json!({
                "min_ms": u64::try_from(lag.min.as_millis()).unwrap_or(u64::MAX),
                "max_ms": u64::try_from(lag.max.as_millis()).unwrap_or(u64::MAX),
            })
        })
    };
    let emulation = &options.emulation;
    serde_json::json!({
        "capacity": match emulation.capacity {
            shoal_tables::capacity::throttle::CapacityMode::Enforce => "enforce",
            shoal_tables::capacity::throttle::CapacityMode::Off => "off",
        },
        "gsi_lag": lag(emulation.gsi_lag),
        "eventual_reads": lag(emulation.eventual_read_lag),
        "lag_seed": emulation.lag_seed,
        "transaction_conflicts": emulation.transaction_conflicts,
        "write_hold_ms": u64::try_from(emulation.write_hold.as_millis()).unwrap_or(u64::MAX),
        "transient_status_seconds": emulation.transient_status_delay.as_secs_f64(),
        "stream_retention_seconds": options.streams.retention.as_secs(),
        "stream_shard_seconds": options.streams.shard_duration.as_secs(),
        "stream_shard_records": options.streams.shard_records_max,
        "ttl_sweep_seconds": options.time_to_live.sweep_interval.as_secs_f64(),
        "item_collection_limit_bytes": options.limits.item_collection_size_limit_bytes,
    })
}

/// Failed SSTable reads (checksum or structure) and the damaged places, by what they hold:
/// nonzero means data needs restoring (docs/RECOVERY.md).
fn render_corruption(
    (failures, places): &(u64, Vec<shoal_tables::core::corruption::CorruptionFound>),
    out: &mut String,
) {
    let _ = write!(
        out,
        "# HELP shoal_corrupt_reads_total SSTable reads that failed a checksum or structure check.
         # TYPE shoal_corrupt_reads_total counter
shoal_corrupt_reads_total {failures}
         # HELP shoal_corrupt_blocks Damaged places met in SSTables, by file and what it holds.
         # TYPE shoal_corrupt_blocks gauge
"
    );
    for place in places {
        let _ = writeln!(
            out,
            "shoal_corrupt_blocks{{file=\"{}\",offset=\"{}\",holds=\"{}\"}} 1",
            place.file,
            place.offset,
            escape_label(&place.holds)
        );
    }
}

/// The body served for `operation`'s answer: DynamoDB answers TagResource and UntagResource
/// with an empty body, not `{}` (their output shape has no members); the embedded API keeps
/// its `{}` (an empty output object).
fn served_body(operation: &str, answer: Vec<u8>) -> Vec<u8> {
    if empty_body_operation(operation) {
        Vec::new()
    } else {
        answer
    }
}

/// The operations whose success DynamoDB answers with an empty HTTP body.
fn empty_body_operation(operation: &str) -> bool {
    matches!(operation, "TagResource" | "UntagResource")
}

/// Table names are `[a-zA-Z0-9_.-]+`, but escape as Prometheus requires anyway.
/// One figure of a replication link, as /metrics prints it.
type LinkFigure = fn(&ReplicationLink) -> String;

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Requests refused by capacity emulation, per table and index (`index=""`: the table).
fn render_throttled(
    throttled: &[(
        String,
        Option<String>,
        shoal_tables::capacity::throttle::ThrottleCounts,
    )],
    out: &mut String,
) {
    let series = [
        ("shoal_throttled_read_requests_total", false),
        ("shoal_throttled_write_requests_total", true),
    ];
    for (name, writes) in series {
        let _ = writeln!(out, "# TYPE {name} counter");
        for (table, index, counts) in throttled {
            let count = if writes { counts.writes } else { counts.reads };
            let _ = writeln!(
                out,
                "{name}{{table=\"{}\",index=\"{}\"}} {count}",
                escape_label(table),
                escape_label(index.as_deref().unwrap_or("")),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_tables::capacity::throttle::ThrottleCounts;

    #[test]
    fn compaction_levels_are_rendered_per_level() {
        let levels = [
            shoal_tables::LevelCompactionStats::default(),
            shoal_tables::LevelCompactionStats {
                compactions: 3,
                trivial_moves: 2,
                bytes_read: 4096,
                bytes_written: 3000,
                busy: std::time::Duration::from_millis(1500),
            },
        ];
        let mut out = String::new();
        render_compaction_levels(&levels, &mut out);
        for line in [
            "# TYPE shoal_compaction_level_bytes_written_total counter",
            "shoal_compaction_level_compactions_total{level=\"0\"} 0",
            "shoal_compaction_level_compactions_total{level=\"1\"} 3",
            "shoal_compaction_level_trivial_moves_total{level=\"1\"} 2",
            "shoal_compaction_level_bytes_read_total{level=\"1\"} 4096",
            "shoal_compaction_level_bytes_written_total{level=\"1\"} 3000",
            "shoal_compaction_level_seconds_total{level=\"1\"} 1.5",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing:\n{out}");
        }
    }

    #[test]
    fn corrupt_reads_are_counted_and_each_damaged_place_named() {
        let mut out = String::new();
        render_corruption(&(0, Vec::new()), &mut out);
        assert!(out.contains("\nshoal_corrupt_reads_total 0\n"), "{out}");
        assert!(!out.contains("shoal_corrupt_blocks{"), "{out}");
        let place = shoal_tables::core::corruption::CorruptionFound {
            file: "000042.sst".into(),
            offset: 8192,
            detail: "block checksum mismatch".into(),
            failures: 3,
            holds: "GSI ByG of table T".into(),
            smallest_key: "a".into(),
            largest_key: "z".into(),
        };
        let mut out = String::new();
        render_corruption(&(3, vec![place]), &mut out);
        assert!(out.contains("\nshoal_corrupt_reads_total 3\n"), "{out}");
        assert!(
            out.contains(
                "shoal_corrupt_blocks{file=\"000042.sst\",offset=\"8192\",holds=\"GSI ByG of table T\"} 1"
            ),
            "{out}"
        );
    }

    #[test]
    fn tag_and_untag_answer_an_empty_body_and_listing_tags_does_not() {
        let database = Database::open_in_memory(shoal_tables::Options::default()).unwrap();
        let handler = EngineHandler::new(Arc::new(database));
        let call = |operation: &str, body: &str| handler.handle(operation, body.as_bytes(), None);
        call(
            "CreateTable",
            r#"{"TableName": "Tagged", "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST"}"#,
        )
        .unwrap();
        let arn = "arn:aws:dynamodb:ddblocal:000000000000:table/Tagged";
        let tagged = call(
            "TagResource",
            &format!(r#"{{"ResourceArn": "{arn}", "Tags": [{{"Key": "k", "Value": "v"}}]}}"#),
        );
        assert_eq!(tagged.unwrap(), b"");
        let listed = call(
            "ListTagsOfResource",
            &format!(r#"{{"ResourceArn": "{arn}"}}"#),
        );
        assert_eq!(
            String::from_utf8(listed.unwrap()).unwrap(),
            r#"{"Tags":[{"Key":"k","Value":"v"}]}"#
        );
        let untagged = call(
            "UntagResource",
            &format!(r#"{{"ResourceArn": "{arn}", "TagKeys": ["k"]}}"#),
        );
        assert_eq!(untagged.unwrap(), b"");
        // A refused request still answers with its error.
        let refused = call(
            "TagResource",
            &format!(r#"{{"ResourceArn": "{arn}", "Tags": []}}"#),
        );
        assert_eq!(
            refused.unwrap_err().message,
            "Atleast one Tag needs to be provided as Input."
        );
        // Other operations with nothing to say still answer `{}`.
        let put = call(
            "PutItem",
            r#"{"TableName": "Tagged", "Item": {"pk": {"S": "a"}}}"#,
        );
        assert_eq!(put.unwrap(), b"{}");
    }

    #[test]
    fn settings_name_the_lags_and_the_capacity_mode() {
        let mut options = shoal_tables::Options::default();
        options.emulation.gsi_lag = Some(shoal_tables::Lag {
            min: std::time::Duration::from_millis(10),
            max: std::time::Duration::from_millis(900),
        });
        options.emulation.capacity = shoal_tables::capacity::throttle::CapacityMode::Enforce;
        let settings = settings_of(&options);
        assert_eq!(
            settings["gsi_lag"],
            serde_json::json!({"min_ms": 10, "max_ms": 900})
        );
        assert_eq!(settings["eventual_reads"], serde_json::Value::Null);
        assert_eq!(settings["capacity"], "enforce");
        let defaults = settings_of(&shoal_tables::Options::default());
        assert_eq!(defaults["capacity"], "off");
        assert_eq!(defaults["gsi_lag"], serde_json::Value::Null);
        assert_eq!(defaults["item_collection_limit_bytes"], 10u64 << 30);
    }

    #[test]
    fn throttled_requests_are_counted_per_table_and_index() {
        let mut out = String::new();
        render_throttled(
            &[
                (
                    "T".into(),
                    None,
                    ThrottleCounts {
                        reads: 2,
                        writes: 0,
                    },
                ),
                (
                    "T".into(),
                    Some("G".into()),
                    ThrottleCounts {
                        reads: 0,
                        writes: 3,
                    },
                ),
            ],
            &mut out,
        );
        assert_eq!(
            out,
            "# TYPE shoal_throttled_read_requests_total counter\n\
             shoal_throttled_read_requests_total{table=\"T\",index=\"\"} 2\n\
             shoal_throttled_read_requests_total{table=\"T\",index=\"G\"} 0\n\
             # TYPE shoal_throttled_write_requests_total counter\n\
             shoal_throttled_write_requests_total{table=\"T\",index=\"\"} 0\n\
             shoal_throttled_write_requests_total{table=\"T\",index=\"G\"} 3\n"
        );
    }
}
