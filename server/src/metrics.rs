//! Request counters and latency histograms, rendered in Prometheus text format at `/metrics`.
//!
//! Families:
//! - `shoal_http_requests_total`: every HTTP request, whatever its route.
//! - `shoal_requests_total{operation, outcome}`: operations that reached the handler, with
//!   outcome `success`, `client_error` (4xx) or `server_error` (5xx).
//! - `shoal_request_duration_seconds{operation}`: a histogram of handler latency (queueing on
//!   the blocking pool included).
//! - `shoal_rejected_requests_total{reason}`: requests refused before the handler, by error
//!   code (or `NotFound`, `RequestTooLarge`).
//!
//! The connection families (`shoal_open_connections`, `shoal_busy_connections`,
//! `shoal_idle_connections_closed_total{reason}`, `shoal_queued_connections{limit}`,
//! `shoal_queued_connections_total{limit}`, `shoal_throttled_connections_total{limit,
//! reason}`) are the `admission` module's.
//!
//! Label sets are bounded: operations are fixed when the server starts and reasons are error
//! code names.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds (a `+Inf` bucket follows).
const LATENCY_BUCKET_BOUNDS_SECONDS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    ClientError,
    ServerError,
}

#[derive(Default)]
struct OperationStats {
    successes: AtomicU64,
    client_errors: AtomicU64,
    server_errors: AtomicU64,
    /// Non-cumulative counts per bucket; the last is `+Inf`.
    latency_bucket_counts: [AtomicU64; LATENCY_BUCKET_BOUNDS_SECONDS.len() + 1],
    latency_sum_micros: AtomicU64,
}

/// The server's counters; cheap to update from many threads.
pub struct Metrics {
    operations: HashMap<&'static str, OperationStats>,
    http_requests: AtomicU64,
    rejections: Mutex<BTreeMap<&'static str, u64>>,
}

impl Metrics {
    /// Counters for these operations (others are ignored by [`Metrics::record_operation`]).
    pub fn new(operations: &[&'static str]) -> Metrics {
        Metrics {
            operations: operations
                .iter()
                .map(|name| (*name, OperationStats::default()))
                .collect(),
            http_requests: AtomicU64::new(0),
            rejections: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn record_http_request(&self) {
        self.http_requests.fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_operation(&self, operation: &str, outcome: Outcome, latency: Duration) {
        let Some(stats) = self.operations.get(operation) else {
            return;
        };
        let counter = match outcome {
            Outcome::Success => &stats.successes,
            Outcome::ClientError => &stats.client_errors,
            Outcome::ServerError => &stats.server_errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let seconds = latency.as_secs_f64();
        let bucket = LATENCY_BUCKET_BOUNDS_SECONDS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(LATENCY_BUCKET_BOUNDS_SECONDS.len());
        stats.latency_bucket_counts[bucket].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        stats
            .latency_sum_micros
            .fetch_add(micros, Ordering::Relaxed);
    }

    /// A request refused before the handler; `reason` is an error code name or a fixed word.
    pub fn record_rejection(&self, reason: &'static str) {
        let mut rejections = self
            .rejections
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *rejections.entry(reason).or_insert(0) += 1;
    }

    /// Appends every family in Prometheus text format.
    pub fn render(&self, out: &mut String) {
        // Writing to a String cannot fail; the fmt::Results are ignored for that reason.
        let _ = writeln!(
            out,
            "# HELP shoal_http_requests_total HTTP requests received."
        );
        let _ = writeln!(out, "# TYPE shoal_http_requests_total counter");
        let _ = writeln!(
            out,
            "shoal_http_requests_total {}",
            self.http_requests.load(Ordering::Relaxed)
        );

        let mut names: Vec<&&'static str> = self.operations.keys().collect();
        names.sort_unstable();
        let _ = writeln!(
            out,
            "# HELP shoal_requests_total Operations handled, by outcome."
        );
        let _ = writeln!(out, "# TYPE shoal_requests_total counter");
        for name in &names {
            let stats = &self.operations[**name];
            for (outcome, counter) in [
                ("success", &stats.successes),
                ("client_error", &stats.client_errors),
                ("server_error", &stats.server_errors),
            ] {
                let _ = writeln!(
                    out,
                    "shoal_requests_total{{operation=\"{name}\",outcome=\"{outcome}\"}} {}",
                    counter.load(Ordering::Relaxed)
                );
            }
        }

        let _ = writeln!(
            out,
            "# HELP shoal_request_duration_seconds Handler latency."
        );
        let _ = writeln!(out, "# TYPE shoal_request_duration_seconds histogram");
        for name in &names {
            let stats = &self.operations[**name];
            let mut cumulative = 0;
            for (index, count) in stats.latency_bucket_counts.iter().enumerate() {
                cumulative += count.load(Ordering::Relaxed);
                let bound = LATENCY_BUCKET_BOUNDS_SECONDS
                    .get(index)
                    .map_or_else(|| "+Inf".to_owned(), |bound| bound.to_string());
                let _ = writeln!(
                    out,
                    "shoal_request_duration_seconds_bucket{{operation=\"{name}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let sum_seconds = stats.latency_sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
            let _ = writeln!(
                out,
                "shoal_request_duration_seconds_sum{{operation=\"{name}\"}} {sum_seconds}"
            );
            let _ = writeln!(
                out,
                "shoal_request_duration_seconds_count{{operation=\"{name}\"}} {cumulative}"
            );
        }

        let _ = writeln!(
            out,
            "# HELP shoal_rejected_requests_total Requests refused before the handler."
        );
        let _ = writeln!(out, "# TYPE shoal_rejected_requests_total counter");
        let rejections = self
            .rejections
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        for (reason, count) in rejections {
            let _ = writeln!(
                out,
                "shoal_rejected_requests_total{{reason=\"{reason}\"}} {count}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_cumulative_buckets() {
        let metrics = Metrics::new(&["PutItem", "GetItem"]);
        metrics.record_operation("PutItem", Outcome::Success, Duration::from_micros(300));
        metrics.record_operation("PutItem", Outcome::ClientError, Duration::from_millis(3));
        metrics.record_operation("PutItem", Outcome::Success, Duration::from_secs(60));
        metrics.record_operation("Unknown", Outcome::Success, Duration::ZERO);
        metrics.record_rejection("SerializationException");
        metrics.record_rejection("SerializationException");
        let mut out = String::new();
        metrics.render(&mut out);
        for line in [
            "shoal_requests_total{operation=\"PutItem\",outcome=\"success\"} 2",
            "shoal_requests_total{operation=\"PutItem\",outcome=\"client_error\"} 1",
            "shoal_requests_total{operation=\"GetItem\",outcome=\"success\"} 0",
            "shoal_request_duration_seconds_bucket{operation=\"PutItem\",le=\"0.0005\"} 1",
            "shoal_request_duration_seconds_bucket{operation=\"PutItem\",le=\"0.005\"} 2",
            "shoal_request_duration_seconds_bucket{operation=\"PutItem\",le=\"10\"} 2",
            "shoal_request_duration_seconds_bucket{operation=\"PutItem\",le=\"+Inf\"} 3",
            "shoal_request_duration_seconds_count{operation=\"PutItem\"} 3",
            "shoal_rejected_requests_total{reason=\"SerializationException\"} 2",
        ] {
            assert!(
                out.lines().any(|candidate| candidate == line),
                "missing {line}\n{out}"
            );
        }
        assert!(!out.contains("Unknown"));
    }
}
