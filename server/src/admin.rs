//! The admin API, served with `--admin` on the server's own port under `/shoal/`, a path
//! DynamoDB never uses:
//!
//! - `GET /shoal/faults`: the fault rules in force, with their counters, and the seed.
//! - `POST /shoal/faults`: adds a rule (a rule object) or rules (a rule set,
//!   `{"seed"?: N, "rules": [...]}`; a seed restarts the draws).
//! - `DELETE /shoal/faults`: removes every rule; `DELETE /shoal/faults/ID` removes one.
//! - `POST /shoal/crash` with `{"mode": "kill" | "power-loss"}`: ends the process at once,
//!   without an answer (see [`CrashMode`]).
//! - `GET /shoal/replication`: global tables' replication — the lag, the Regions cut off,
//!   each link's backlog and lag. `POST /shoal/replication` with `{"cut": "<region>"}`
//!   (replication to and from it pauses), `{"heal": "<region>"}` or `{"lagMs": "MS" |
//!   "MIN-MAX"}` changes it and answers the same.
//!
//! Answers are JSON; errors are `{"error": "<text>"}` with 400, 403, 404 or 405. A client
//! whose address is not loopback gets 403 unless the server allows remote admin clients:
//! these calls change what every client sees, and one of them ends the server.

use crate::body::read_body;
use crate::faults::{FaultInjector, FaultRule, RuleSet};
use crate::handler::{CrashMode, DynamoHandler};
use crate::response::response;
use bytes::Bytes;
use http::request::Parts;
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use serde_json::{json, Value};
use std::net::IpAddr;
use std::time::Duration;

/// Where the admin API lives.
pub const ADMIN_PATH_PREFIX: &str = "/shoal/";

const FAULTS_PATH: &str = "/shoal/faults";
const CRASH_PATH: &str = "/shoal/crash";
const REPLICATION_PATH: &str = "/shoal/replication";
const JSON_CONTENT_TYPE: &str = "application/json";

/// What an admin request may use.
pub struct AdminContext<'a> {
    pub faults: &'a FaultInjector,
    pub handler: &'a dyn DynamoHandler,
    pub allow_remote: bool,
    pub body_bytes_max: usize,
    pub body_read_timeout: Duration,
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
        Err((StatusCode::NOT_FOUND, format!("no admin call at {path}")))
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
