//! The admin API, served with `--admin` on the server's own port under `/shoal/`, a path
//! DynamoDB never uses:
//!
//! - `GET /shoal/faults`: the fault rules in force, with their counters, and the seed.
//! - `POST /shoal/faults`: adds a rule (a rule object) or rules (a rule set,
//!   `{"seed"?: N, "rules": [...]}`; a seed restarts the draws).
//! - `DELETE /shoal/faults`: removes every rule; `DELETE /shoal/faults/ID` removes one.
//! - `GET /shoal/contributors`: the tables and GSIs with Contributor Insights enabled;
//!   `GET /shoal/contributors?table=T[&index=I][&minutes=M][&top=N]`: their most accessed
//!   and most throttled keys over the last M minutes (default 5, at most 10), N per rule
//!   (default 10, at most 100).
//! - `GET /shoal/record`: whether a recording runs, its file, records and dropped calls.
//! - `POST /shoal/record` with `{"file": PATH, "max_bytes"?: N, "hash_keys"?: BOOL}`: starts
//!   recording every call into PATH (a file the server writes; see the `record` module); 400
//!   while one runs.
//! - `DELETE /shoal/record`: stops it, once the queued calls are written; answers the
//!   recording's `records`, `dropped`, `bytes` and `files`.
//! - `POST /shoal/crash` with `{"mode": "kill" | "power-loss"}`: ends the process at once,
//!   without an answer (see [`CrashMode`]).
//! - `GET /shoal/settings`: the testing knobs the server was started with (capacity
//!   emulation, GSI lag, stale reads, conflicts, streams, Time to Live), from the handler,
//!   and whether remote admin clients are allowed.
//! - `POST /shoal/bench-report` with a saved `shoal bench --json` report: the page
//!   `--html` writes for it (`text/html`), when the server was given the renderer.
//! - `GET /shoal/console…`: the web console's files (`console` module), with `--console`.
//! - `GET /shoal/replication`: global tables' replication — the lag, the Regions cut off,
//!   each link's backlog and lag. `POST /shoal/replication` with `{"cut": "<region>"}`
//!   (replication to and from it pauses), `{"heal": "<region>"}` or `{"lagMs": "MS" |
//!   "MIN-MAX"}` changes it and answers the same.
//!
//! Answers are JSON; errors are `{"error": "<text>"}` with 400, 403, 404 or 405. A client
//! whose address is not loopback gets 403 unless the server allows remote admin clients:
//! these calls change what every client sees, and one of them ends the server.

use crate::body::read_body;
use crate::config::BenchReportRenderer;
use crate::console;
use crate::faults::{FaultInjector, FaultRule, RuleSet};
use crate::handler::{CrashMode, DynamoHandler};
use crate::record::{RecordOptions, Recorder, MAX_BYTES_DEFAULT};
use crate::response::response;
use bytes::Bytes;
use http::request::Parts;
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use serde_json::{json, Value};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where the admin API lives.
pub const ADMIN_PATH_PREFIX: &str = "/shoal/";

const FAULTS_PATH: &str = "/shoal/faults";
const CRASH_PATH: &str = "/shoal/crash";
const SETTINGS_PATH: &str = "/shoal/settings";
const COLLECTIONS_PATH: &str = "/shoal/collections";
/// Collections `GET /shoal/collections` lists when the request names no `limit`.
const COLLECTIONS_LIMIT_DEFAULT: usize = 20;
const BENCH_REPORT_PATH: &str = "/shoal/bench-report";
const CONTRIBUTORS_PATH: &str = "/shoal/contributors";
const RECORD_PATH: &str = "/shoal/record";
const REPLICATION_PATH: &str = "/shoal/replication";
/// Every admin call's path, named by the answer to a path that is none of them.
const ADMIN_CALLS: &[&str] = &[
    FAULTS_PATH,
    CONTRIBUTORS_PATH,
    RECORD_PATH,
    REPLICATION_PATH,
    SETTINGS_PATH,
    COLLECTIONS_PATH,
    BENCH_REPORT_PATH,
    CRASH_PATH,
];
const JSON_CONTENT_TYPE: &str = "application/json";

/// What an admin request may use.
pub struct AdminContext<'a> {
    pub faults: &'a FaultInjector,
    pub recorder: &'a Arc<Recorder>,
    pub handler: &'a dyn DynamoHandler,
    pub allow_remote: bool,
    pub body_bytes_max: usize,
    pub body_read_timeout: Duration,
    /// Whether the console's files are served.
    pub console: bool,
    pub bench_report: Option<BenchReportRenderer>,
}

/// Whether `peer` may use the admin API: any client with `allow_remote`, else loopback
/// clients only (an IPv4-mapped IPv6 address counts as the IPv4 address it carries).
pub fn admits(allow_remote: bool, peer: IpAddr) -> bool {
    allow_remote || peer.to_canonical().is_loopback()
}

/// Answers a request whose path starts with [`ADMIN_PATH_PREFIX`].
pub async fn answer(
    context: &AdminContext<'_>,
    parts: &Parts,
    mut body: Incoming,
    peer: IpAddr,
    request_id: &str,
) -> Response<Full<Bytes>> {
    if !admits(context.allow_remote, peer) {
        return refusal(
            StatusCode::FORBIDDEN,
            "the admin API answers loopback clients only (start the server with \
             --admin-allow-remote to allow others)",
            request_id,
        );
    }
    let path = parts.uri.path();
    if context.console && console::is_console_path(path) {
        if let Some(file) = console::answer(parts, request_id) {
            return file;
        }
    }
    let deadline = tokio::time::Instant::now() + context.body_read_timeout;
    let text = match read_body(&mut body, context.body_bytes_max, deadline).await {
        Ok(text) => text,
        Err(_) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "the body could not be read",
                request_id,
            )
        }
    };
    let method = &parts.method;
    let result = if path == FAULTS_PATH {
        match *method {
            Method::GET => Ok(context.faults.list()),
            Method::POST => add_rules(context.faults, &text),
            Method::DELETE => {
                context.faults.clear();
                Ok(json!({}))
            }
            _ => Err((
                StatusCode::METHOD_NOT_ALLOWED,
                "use GET, POST or DELETE".to_owned(),
            )),
        }
    } else if let Some(id) = path.strip_prefix("/shoal/faults/") {
        if *method != Method::DELETE {
            Err((StatusCode::METHOD_NOT_ALLOWED, "use DELETE".to_owned()))
        } else if context.faults.remove(id) {
            Ok(json!({}))
        } else {
            Err((StatusCode::NOT_FOUND, format!("no rule has id {id:?}")))
        }
    } else if path == CONTRIBUTORS_PATH {
        if *method != Method::GET {
            Err((StatusCode::METHOD_NOT_ALLOWED, "use GET".to_owned()))
        } else {
            contributors(context.handler, parts.uri.query().unwrap_or(""))
        }
    } else if path == RECORD_PATH {
        match *method {
            Method::GET => Ok(context.recorder.status()),
            Method::POST => match record_options(&text) {
                Ok(options) => context
                    .recorder
                    .start(options)
                    .map_err(|error| (StatusCode::BAD_REQUEST, error)),
                Err(error) => Err((StatusCode::BAD_REQUEST, error)),
            },
            Method::DELETE => {
                // Stopping waits for the writer to drain the queue: off the runtime's threads.
                let recorder = Arc::clone(context.recorder);
                match tokio::task::spawn_blocking(move || recorder.stop()).await {
                    Ok(Some(summary)) => Ok(summary),
                    Ok(None) => Err((StatusCode::NOT_FOUND, "no recording runs".to_owned())),
                    Err(error) => Err((StatusCode::INTERNAL_SERVER_ERROR, error.to_string())),
                }
            }
            _ => Err((
                StatusCode::METHOD_NOT_ALLOWED,
                "use GET, POST or DELETE".to_owned(),
            )),
        }
    } else if path == CRASH_PATH {
        if *method != Method::POST {
            Err((StatusCode::METHOD_NOT_ALLOWED, "use POST".to_owned()))
        } else {
            match crash_mode(&text) {
                Ok(mode) => {
                    tracing::warn!(?mode, "crashing on request of the admin API");
                    context.handler.crash(mode)
                }
                Err(error) => Err((StatusCode::BAD_REQUEST, error)),
            }
        }
    } else if path == SETTINGS_PATH {
        if *method != Method::GET {
            Err((StatusCode::METHOD_NOT_ALLOWED, "use GET".to_owned()))
        } else {
            let mut settings = context.handler.settings();
            if let Some(object) = settings.as_object_mut() {
                object.insert("admin_allow_remote".into(), context.allow_remote.into());
            }
            Ok(settings)
        }
    } else if path == COLLECTIONS_PATH {
        if *method != Method::GET {
            Err((StatusCode::METHOD_NOT_ALLOWED, "use GET".to_owned()))
        } else {
            item_collections(context.handler, parts.uri.query().unwrap_or(""))
        }
    } else if path == BENCH_REPORT_PATH {
        match (method, context.bench_report) {
            (&Method::POST, Some(render)) => {
                return match render(&text) {
                    Ok(page) => {
                        response(StatusCode::OK, "text/html; charset=utf-8", page, request_id)
                    }
                    Err(error) => refusal(StatusCode::BAD_REQUEST, &error, request_id),
                };
            }
            (&Method::POST, None) => Err((
                StatusCode::NOT_FOUND,
                "this server renders no bench reports".to_owned(),
            )),
            _ => Err((StatusCode::METHOD_NOT_ALLOWED, "use POST".to_owned())),
        }
    } else if path == REPLICATION_PATH {
        match *method {
            Method::GET => context
                .handler
                .replication(None)
                .map_err(|error| (StatusCode::NOT_FOUND, error)),
            Method::POST => match serde_json::from_slice::<Value>(&text) {
                Ok(change) => context
                    .handler
                    .replication(Some(&change))
                    .map_err(|error| (StatusCode::BAD_REQUEST, error)),
                Err(error) => Err((StatusCode::BAD_REQUEST, format!("not JSON: {error}"))),
            },
            _ => Err((StatusCode::METHOD_NOT_ALLOWED, "use GET or POST".to_owned())),
        }
    } else {
        Err((
            StatusCode::NOT_FOUND,
            format!(
                "no admin call at {path}: the admin API has {} (docs/TESTING-TOOLS.md)",
                ADMIN_CALLS.join(", ")
            ),
        ))
    };
    match result {
        Ok(body) => response(
            StatusCode::OK,
            JSON_CONTENT_TYPE,
            body.to_string(),
            request_id,
        ),
        Err((status, message)) => refusal(status, &message, request_id),
    }
}

/// `GET /shoal/collections?table=NAME[&limit=N][&after=NEXT]`.
fn item_collections(
    handler: &dyn DynamoHandler,
    query: &str,
) -> Result<Value, (StatusCode, String)> {
    let bad = |error: String| (StatusCode::BAD_REQUEST, error);
    let table = query_parameter(query, "table").ok_or_else(|| bad("name a table".to_owned()))?;
    let limit = match query_parameter(query, "limit") {
        None => COLLECTIONS_LIMIT_DEFAULT,
        Some(text) => text
            .parse::<usize>()
            .map_err(|_| bad(format!("limit must be a count, not {text:?}")))?,
    };
    let after = query_parameter(query, "after");
    handler
        .item_collections(&table, after.as_deref(), limit)
        .map_err(bad)
}

/// The value of `name` in a query string, percent-decoded (`+` is a blank); `None` when it
/// is absent or does not decode to UTF-8.
fn query_parameter(query: &str, name: &str) -> Option<String> {
    let raw = query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(key, _)| *key == name)?
        .1;
    let mut bytes = Vec::with_capacity(raw.len());
    let mut rest = raw.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        match byte {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = tail.get(..2)?;
                let text = std::str::from_utf8(hex).ok()?;
                bytes.push(u8::from_str_radix(text, 16).ok()?);
                rest = &tail[2..];
                continue;
            }
            other => bytes.push(other),
        }
        rest = tail;
    }
    String::from_utf8(bytes).ok()
}

/// Contributor Insights' rankings (`table`, `index`, `minutes`, `top` in the query).
fn contributors(handler: &dyn DynamoHandler, query: &str) -> Result<Value, (StatusCode, String)> {
    let mut table = None;
    let mut index = None;
    let mut minutes = 5u64;
    let mut top = 10usize;
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let number = || {
            value.parse::<u64>().map_err(|_| {
                (
                    StatusCode::BAD_REQUEST,
                    format!("{name} must be a whole number, not {value:?}"),
                )
            })
        };
        match name {
            "table" => table = Some(value),
            "index" => index = Some(value),
            "minutes" => minutes = number()?,
            "top" => top = number()? as usize,
            _ => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("unknown parameter {name:?}: use table, index, minutes and top"),
                ))
            }
        }
    }
    handler
        .contributors(table, index, minutes, top)
        .ok_or_else(|| {
            let named = match index {
                Some(index) => format!("table {:?} has no GSI {index:?}", table.unwrap_or("")),
                None => format!("no table {:?}", table.unwrap_or("")),
            };
            (StatusCode::NOT_FOUND, named)
        })
}

/// A rule object adds one rule; an object with `rules` is a rule set.
fn add_rules(faults: &FaultInjector, text: &[u8]) -> Result<Value, (StatusCode, String)> {
    let bad = |error: String| (StatusCode::BAD_REQUEST, error);
    let value: Value = serde_json::from_slice(text).map_err(|error| bad(error.to_string()))?;
    let set = if value.get("rules").is_some() {
        serde_json::from_value::<RuleSet>(value)
    } else {
        serde_json::from_value::<FaultRule>(value).map(|rule| RuleSet {
            seed: None,
            rules: vec![rule],
        })
    }
    .map_err(|error| bad(error.to_string()))?;
    let added = faults.add(set).map_err(bad)?;
    Ok(json!({"rules": added}))
}

/// `{"file": PATH, "max_bytes"?: N, "hash_keys"?: BOOL}`.
fn record_options(text: &[u8]) -> Result<RecordOptions, String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RecordRequest {
        file: PathBuf,
        #[serde(default)]
        max_bytes: Option<u64>,
        #[serde(default)]
        hash_keys: bool,
    }
    serde_json::from_slice::<RecordRequest>(text)
        .map(|request| RecordOptions {
            path: request.file,
            max_bytes: request.max_bytes.unwrap_or(MAX_BYTES_DEFAULT),
            hash_keys: request.hash_keys,
        })
        .map_err(|error| {
            format!("expected {{\"file\": PATH, \"max_bytes\"?: N, \"hash_keys\"?: BOOL}}: {error}")
        })
}

fn crash_mode(text: &[u8]) -> Result<CrashMode, String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct CrashRequest {
        mode: CrashMode,
    }
    serde_json::from_slice::<CrashRequest>(text)
        .map(|request| request.mode)
        .map_err(|error| format!("expected {{\"mode\": \"kill\" | \"power-loss\"}}: {error}"))
}

fn refusal(status: StatusCode, message: &str, request_id: &str) -> Response<Full<Bytes>> {
    let body = json!({ "error": message }).to_string();
    response(status, JSON_CONTENT_TYPE, body, request_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_peers_are_admitted_unless_remote_ones_are_allowed() {
        for local in ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"] {
            assert!(admits(false, local.parse().unwrap()), "{local}");
        }
        for remote in [
            "10.0.0.1",
            "192.168.1.2",
            "0.0.0.0",
            "::ffff:10.0.0.1",
            "fe80::1",
        ] {
            assert!(!admits(false, remote.parse().unwrap()), "{remote}");
            assert!(admits(true, remote.parse().unwrap()), "{remote}");
        }
    }

    #[test]
    fn query_parameters_are_percent_decoded() {
        let query = "table=My%20Table.v2&limit=5&flag&bad=%zz&plus=a+b";
        assert_eq!(
            query_parameter(query, "table").as_deref(),
            Some("My Table.v2")
        );
        assert_eq!(query_parameter(query, "limit").as_deref(), Some("5"));
        assert_eq!(query_parameter(query, "flag").as_deref(), Some(""));
        assert_eq!(query_parameter(query, "plus").as_deref(), Some("a b"));
        assert_eq!(query_parameter(query, "bad"), None);
        assert_eq!(query_parameter(query, "missing"), None);
        assert_eq!(query_parameter("t=%e2%82", "t"), None);
        assert_eq!(query_parameter("t=%4", "t"), None);
    }

    #[test]
    fn crash_modes_parse() {
        assert_eq!(crash_mode(br#"{"mode": "kill"}"#), Ok(CrashMode::Kill));
        assert_eq!(
            crash_mode(br#"{"mode": "power-loss"}"#),
            Ok(CrashMode::PowerLoss)
        );
        assert!(crash_mode(br#"{"mode": "nap"}"#).is_err());
        assert!(crash_mode(br#"{"mode": "kill", "x": 1}"#).is_err());
    }
}
