//! Server settings and the access-key file.
//!
//! # Key file format
//!
//! UTF-8 text, one key per line: the access key id, whitespace, the secret access key.
//! Blank lines and lines whose first non-blank character is `#` are ignored. Example:
//!
//! ```text
//! # shoal keys
//! AKIDEXAMPLE wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
//! ```
//!
//! Limits: the file is at most [`KEY_FILE_BYTES_MAX`] bytes and holds at most
//! [`KEY_FILE_KEYS_MAX`] keys; an access key id appearing twice is an error (which secret is
//! meant would be a guess).

use crate::faults::RuleSet;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// DynamoDB's request body cap: 16 MiB.
pub const BODY_BYTES_MAX_DEFAULT: usize = 16 * 1024 * 1024;

/// DynamoDB's cap on the request line, and on the request headers: 16 KiB each.
pub const HEADER_BYTES_MAX_DEFAULT: usize = 16 * 1024;

/// Connections open at once by default, idle ones included: far more than a test suite's
/// clients leave in their pools (a client per test, each keeping its connections alive),
/// which all come from 127.0.0.1. At the limit, idle connections are closed to make room;
/// only busy ones can make a client wait.
pub const CONNECTIONS_MAX_DEFAULT: usize = 8192;

/// Requests one client address may have in flight at once by default: half the default
/// total, so that one client sending bodies slowly cannot hold every connection, and still
/// thousands for the clients of one machine, which all share 127.0.0.1.
pub const BUSY_CONNECTIONS_PER_CLIENT_MAX_DEFAULT: usize = CONNECTIONS_MAX_DEFAULT / 2;

/// Clients waiting for a place at once by default, at both connection limits together:
/// requests at their address's busy limit, and connections accepted while every open one has
/// a whole request in flight. One more is throttled at once.
pub const QUEUED_CONNECTIONS_MAX_DEFAULT: usize = 1024;

/// How long a client waits for a place by default before it is throttled: a few times what
/// a request takes under load, well within the SDKs' own timeouts.
pub const QUEUE_WAIT_MAX_DEFAULT: Duration = Duration::from_secs(5);

/// Operations on the blocking pool at once by default: enough for group commit to gather
/// many writers into each fsync, few enough that the threads' memory stays small. Each
/// thread keeps its own allocator pages: a 256-connection PutItem load held 12 MiB less with
/// 32 than with 64, but wrote 10–20% fewer items in four of four alternated pairs; 48 held
/// about 5 MiB less and wrote fewer in seven pairs of ten (median 3%; docs/PERFORMANCE.md,
/// Memory), so 64 stays.
pub const HANDLER_THREADS_DEFAULT: usize = 64;

/// Largest key file accepted.
pub const KEY_FILE_BYTES_MAX: u64 = 1024 * 1024;

/// Most keys a key file may hold.
pub const KEY_FILE_KEYS_MAX: usize = 10_000;

/// How requests are authenticated.
#[derive(Clone, Default)]
pub enum AuthMode {
    /// DynamoDB Local's behaviour: any well-formed SigV4 `Authorization` header is accepted,
    /// whatever its key and signature.
    #[default]
    AcceptAnyWellFormed,
    /// Signatures are verified against these secrets, keyed by access key id.
    Verify { keys: HashMap<String, String> },
}

impl fmt::Debug for AuthMode {
    // Secrets must never reach a log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthMode::AcceptAnyWellFormed => f.write_str("AcceptAnyWellFormed"),
            AuthMode::Verify { keys } => write!(f, "Verify {{ {} keys }}", keys.len()),
        }
    }
}

/// DynamoDB Local's `-cors` allow-list: the origins a browser page may call the server from.
/// Without one, any origin may (DynamoDB Local's default), which is what lets a browser app
/// or a web admin tool talk to the server (`cors.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigins {
    /// `*`: any origin.
    Any,
    /// These origins exactly, e.g. `https://example.com`.
    List(Vec<String>),
}

impl CorsOrigins {
    /// Whether a page from `origin` may call the server.
    pub fn allows(&self, origin: &str) -> bool {
        match self {
            CorsOrigins::Any => true,
            CorsOrigins::List(origins) => origins.iter().any(|allowed| allowed == origin),
        }
    }

    /// Parses DynamoDB Local's spelling: `*`, or origins separated by commas (blanks around
    /// them are trimmed). An empty list is an error, not "no origin", so a typo is not silent.
    pub fn parse(text: &str) -> Result<CorsOrigins, String> {
        if text.trim() == "*" {
            return Ok(CorsOrigins::Any);
        }
        let origins: Vec<String> = text
            .split(',')
            .map(str::trim)
            .filter(|origin| !origin.is_empty())
            .map(str::to_owned)
            .collect();
        if origins.is_empty() {
            return Err(format!(
                "the CORS allow-list must be * or comma-separated origins, not {text:?}"
            ));
        }
        if origins.iter().any(|origin| origin == "*") {
            return Err(format!(
                "the CORS allow-list is either * alone or a list of origins, not {text:?}"
            ));
        }
        Ok(CorsOrigins::List(origins))
    }
}

/// Everything `serve` needs besides the listener and the handler.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to bind; loopback by default so a dev server is not reachable from the network.
    pub host: String,
    pub port: u16,
    pub auth: AuthMode,
    /// Larger request bodies get 413 (see the crate docs).
    pub body_bytes_max: usize,
    /// When set, signed requests must be scoped to this region (verify mode), and the health
    /// answer names it.
    pub region: Option<String>,
    /// Cap on the request line, and on the request headers; a larger one gets `400` with a
    /// DynamoDB error body. hyper refuses a head over four times this itself (`431`, no body).
    pub header_bytes_max: usize,
    /// Connections open at once, idle ones included. A new connection at the limit closes
    /// the connection idle the longest; it waits for a place only if every one is busy.
    /// Lowered at start if the open-files limit cannot hold it.
    pub connections_max: usize,
    /// Requests one client address may have in flight (busy connections); one more waits
    /// for a place (after closing that address's connection waiting the longest for a body,
    /// if any). Idle connections do not count.
    pub busy_connections_per_client_max: usize,
    /// Clients waiting for a place at once, at both limits together; one more is answered a
    /// `ThrottlingException` and its connection closed.
    pub queued_connections_max: usize,
    /// How long a client waits for a place before it is answered a `ThrottlingException`.
    pub queue_wait_max: Duration,
    /// A client that has not sent its request headers within this time is disconnected; an
    /// idle keep-alive connection waiting for its next request is closed after it too.
    pub header_read_timeout: Duration,
    /// A client that has not sent its whole request body within this time (counted from the
    /// end of its headers) is answered with an error and disconnected.
    pub body_read_timeout: Duration,
    /// Operations that may block (writes waiting on the WAL's fsync) running at once; the
    /// others wait for a turn without holding a thread.
    pub handler_threads: usize,
    /// How far `X-Amz-Date` may be from the server's clock (AWS: 15 minutes).
    pub signature_clock_skew_max: Duration,
    /// After shutdown is signalled, how long in-flight requests get to finish.
    pub shutdown_grace: Duration,
    /// The CORS allow-list given with `-cors`; `None` allows any origin (see [`CorsOrigins`]).
    pub cors: Option<CorsOrigins>,
    /// Serve the admin API under `/shoal/` (fault rules, crash; see the `admin` module).
    pub admin: bool,
    /// Let clients whose address is not loopback use the admin API.
    pub admin_allow_remote: bool,
    /// Fault rules in force from the start (`--faults FILE`), admin API or not.
    pub faults: RuleSet,
    /// Record every call from the start (`--record FILE`); the admin API can also start
    /// and stop a recording.
    pub record: Option<crate::record::RecordOptions>,
    /// Serve the web console at `/shoal/console` (`console/`), and with it the admin API it
    /// calls, under the admin API's loopback rule.
    pub console: bool,
    /// Turns a saved `shoal bench --json` report into the page `--html` writes, for the
    /// console's `POST /shoal/bench-report`; the bench lives in the `shoal` binary, which
    /// hands it over. `None`: that call answers 404.
    pub bench_report: Option<BenchReportRenderer>,
}

/// The bench's report renderer: JSON report text in, HTML page (or why not) out.
pub type BenchReportRenderer = fn(&[u8]) -> Result<String, String>;

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            host: "127.0.0.1".to_owned(),
            port: 8000,
            auth: AuthMode::default(),
            body_bytes_max: BODY_BYTES_MAX_DEFAULT,
            region: None,
            header_bytes_max: HEADER_BYTES_MAX_DEFAULT,
            connections_max: CONNECTIONS_MAX_DEFAULT,
            busy_connections_per_client_max: BUSY_CONNECTIONS_PER_CLIENT_MAX_DEFAULT,
            queued_connections_max: QUEUED_CONNECTIONS_MAX_DEFAULT,
            queue_wait_max: QUEUE_WAIT_MAX_DEFAULT,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            handler_threads: HANDLER_THREADS_DEFAULT,
            signature_clock_skew_max: Duration::from_secs(15 * 60),
            shutdown_grace: Duration::from_secs(10),
            cors: None,
            admin: false,
            admin_allow_remote: false,
            faults: RuleSet::default(),
            record: None,
            console: false,
            bench_report: None,
        }
    }
}

impl ServerConfig {
    /// `host:port`, for binding and for messages.
    pub fn listen_address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Why a key file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("cannot read key file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("key file {path} is larger than {KEY_FILE_BYTES_MAX} bytes")]
    TooLarge { path: String },
    #[error("key file {path} holds more than {KEY_FILE_KEYS_MAX} keys")]
    TooManyKeys { path: String },
    #[error("key file {path}, line {line_number}: expected `ACCESS_KEY SECRET`")]
    MalformedLine { path: String, line_number: usize },
    #[error("key file {path}, line {line_number}: access key {access_key} appears twice")]
    DuplicateKey {
        path: String,
        line_number: usize,
        access_key: String,
    },
}

/// Reads a key file (format in the module docs) into access key id → secret.
pub fn load_key_file(path: &Path) -> Result<HashMap<String, String>, KeyFileError> {
    let display_path = path.display().to_string();
    let io_error = |source| KeyFileError::Io {
        path: display_path.clone(),
        source,
    };
    let size_bytes = std::fs::metadata(path).map_err(io_error)?.len();
    if size_bytes > KEY_FILE_BYTES_MAX {
        return Err(KeyFileError::TooLarge { path: display_path });
    }
    let text = std::fs::read_to_string(path).map_err(io_error)?;
    parse_key_file(&text, &display_path)
}

/// Parses key file text; `path` only names the file in errors.
pub fn parse_key_file(text: &str, path: &str) -> Result<HashMap<String, String>, KeyFileError> {
    let mut keys = HashMap::new();
    for (line_index, line) in text.lines().enumerate() {
        let line_number = line_index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let [access_key, secret] = words.as_slice() else {
            return Err(KeyFileError::MalformedLine {
                path: path.to_owned(),
                line_number,
            });
        };
        if keys.len() == KEY_FILE_KEYS_MAX {
            return Err(KeyFileError::TooManyKeys {
                path: path.to_owned(),
            });
        }
        if keys
            .insert((*access_key).to_owned(), (*secret).to_owned())
            .is_some()
        {
            return Err(KeyFileError::DuplicateKey {
                path: path.to_owned(),
                line_number,
                access_key: (*access_key).to_owned(),
            });
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keys_skipping_comments_and_blank_lines() {
        let keys = parse_key_file("# comment\n\n  AK1 secret1 \nAK2\tsecret/2+x\n", "k").unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys["AK1"], "secret1");
        assert_eq!(keys["AK2"], "secret/2+x");
    }

    #[test]
    fn rejects_malformed_and_duplicate_lines() {
        assert!(matches!(
            parse_key_file("AK1 s1\nAK2\n", "k"),
            Err(KeyFileError::MalformedLine { line_number: 2, .. })
        ));
        assert!(matches!(
            parse_key_file("AK1 s1 extra\n", "k"),
            Err(KeyFileError::MalformedLine { line_number: 1, .. })
        ));
        assert!(matches!(
            parse_key_file("AK1 s1\nAK1 s2\n", "k"),
            Err(KeyFileError::DuplicateKey { line_number: 2, .. })
        ));
    }

    #[test]
    fn debug_output_hides_secrets() {
        let mut keys = HashMap::new();
        keys.insert("AK".to_owned(), "very-secret".to_owned());
        let text = format!(
            "{:?}",
            ServerConfig {
                auth: AuthMode::Verify { keys },
                ..ServerConfig::default()
            }
        );
        assert!(!text.contains("very-secret"), "{text}");
    }

    #[test]
    fn cors_origins_parse_like_dynamodb_local() {
        assert_eq!(CorsOrigins::parse("*"), Ok(CorsOrigins::Any));
        assert_eq!(
            CorsOrigins::parse("https://a.example, http://localhost:3000"),
            Ok(CorsOrigins::List(vec![
                "https://a.example".to_owned(),
                "http://localhost:3000".to_owned()
            ]))
        );
        assert!(CorsOrigins::parse("").is_err());
        assert!(CorsOrigins::parse(" , ").is_err());
        assert!(CorsOrigins::parse("*,https://a.example").is_err());
    }

    #[test]
    fn listen_address_brackets_ipv6() {
        let config = ServerConfig {
            host: "::1".to_owned(),
            ..ServerConfig::default()
        };
        assert_eq!(config.listen_address(), "[::1]:8000");
        assert_eq!(ServerConfig::default().listen_address(), "127.0.0.1:8000");
    }
}
