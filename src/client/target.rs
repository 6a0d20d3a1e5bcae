//! Where requests go: Shoal's tables in this process, or any DynamoDB-compatible endpoint
//! over HTTP or HTTPS (signed with the user's credentials when the environment has them).
//! Both take the same request text and give the same answer text, so `shoal bench --model`
//! and `shoal copy` do not know which one they talk to.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use shoal_tables::Database;

use super::{ConnectOptions, Connection, Connector, DYNAMODB_TARGET_PREFIX, STREAMS_TARGET_PREFIX};

/// A refused request: its exception name (`ValidationException`, …) and message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallError {
    pub code: String,
    pub message: String,
    /// The stored item a ConditionalCheckFailedException carries when the request asked
    /// for it (`ReturnValuesOnConditionCheckFailure: ALL_OLD`).
    pub item: Option<Value>,
}

/// Where requests go; each worker opens its own [`Client`].
pub enum Target {
    Embedded(Arc<Database>),
    /// An `http://` or `https://` endpoint.
    Endpoint(Connector),
}

impl Target {
    /// The target `endpoint` names (`http://host:port`, `https://host`), or an in-memory
    /// database for None. Requests to an endpoint are signed when the environment holds
    /// AWS credentials ([`ConnectOptions::from_env`]).
    pub fn new(endpoint: Option<&str>) -> Result<Target, String> {
        match endpoint {
            None => {
                let database = Database::open_in_memory(shoal_tables::Options::default())
                    .map_err(|e| format!("cannot open an in-memory database: {e}"))?;
                Ok(Target::Embedded(Arc::new(database)))
            }
            Some(url) => Target::endpoint(url, &ConnectOptions::from_env()?),
        }
    }

    /// The endpoint at `url`, reached as `options` say.
    pub fn endpoint(url: &str, options: &ConnectOptions) -> Result<Target, String> {
        Ok(Target::Endpoint(Connector::new(url, options)?))
    }

    /// What the report calls it.
    pub fn describe(&self) -> String {
        match self {
            Target::Embedded(_) => "embedded (in-process, in memory)".to_string(),
            Target::Endpoint(connector) => connector.url(),
        }
    }

    pub fn client(&self) -> Result<Client, String> {
        match self {
            Target::Embedded(database) => Ok(Client::Embedded(Arc::clone(database))),
            Target::Endpoint(connector) => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start a runtime: {e}"))?;
                let connection = runtime.block_on(connector.connect())?;
                Ok(Client::Endpoint {
                    runtime,
                    connection: Box::new(connection),
                })
            }
        }
    }
}

/// One worker's way to the target.
pub enum Client {
    Embedded(Arc<Database>),
    Endpoint {
        runtime: tokio::runtime::Runtime,
        connection: Box<Connection>,
    },
}

/// Whether a DescribeTable's `Table` is ACTIVE with every GSI ACTIVE (or without a status).
fn is_active(table: &Value) -> bool {
    table["TableStatus"] == "ACTIVE"
        && table["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|index| index["IndexStatus"].as_str().is_none_or(|s| s == "ACTIVE"))
}

impl Client {
    /// Waits until table `name` and its GSIs are ACTIVE (DynamoDB takes a while to create
    /// one; writes to a table or index still CREATING fail). A GSI described without an
    /// `IndexStatus` (some emulators leave it out) has nothing to wait for.
    pub fn wait_until_active(&mut self, name: &str) -> Result<(), String> {
        self.wait_for_table(name, |answer| answer.is_some_and(is_active))
    }

    /// Polls DescribeTable until `done` holds of the table's description (None once the table
    /// no longer exists); at once when it already holds, as on Shoal.
    pub fn wait_for_table(
        &mut self,
        name: &str,
        done: impl Fn(Option<&Value>) -> bool,
    ) -> Result<(), String> {
        let body = serde_json::json!({"TableName": name}).to_string();
        let started = Instant::now();
        loop {
            let table = match self.call("DescribeTable", body.as_bytes()) {
                Ok(answer) => Some(
                    serde_json::from_slice::<Value>(&answer).unwrap_or_default()["Table"].clone(),
                ),
                Err(error) if error.code == "ResourceNotFoundException" => None,
                Err(error) => {
                    return Err(format!(
                        "DescribeTable {name}: {}: {}",
                        error.code, error.message
                    ))
                }
            };
            if done(table.as_ref()) {
                return Ok(());
            }
            if started.elapsed() > TABLE_STATUS_WAIT {
                return Err(format!(
                    "table {name} did not settle within {} s",
                    TABLE_STATUS_WAIT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Runs `operation` with the JSON request `body`; the JSON answer, or the error.
    pub fn call(&mut self, operation: &str, body: &[u8]) -> Result<Vec<u8>, CallError> {
        match self {
            Client::Embedded(database) => {
                database
                    .execute_json_text(operation, body)
                    .map_err(|error| CallError {
                        code: error.code.name().to_string(),
                        item: error
                            .extra
                            .as_ref()
                            .and_then(|extra| extra.get("Item").cloned()),
                        message: error.message,
                    })
            }
            Client::Endpoint {
                runtime,
                connection,
            } => {
                // The Streams operations are answered under their own target prefix only.
                let prefix = if shoal_tables::STREAMS_OPERATIONS.contains(&operation) {
                    STREAMS_TARGET_PREFIX
                } else {
                    DYNAMODB_TARGET_PREFIX
                };
                let answer = runtime.block_on(connection.call_text(prefix, operation, body));
                match answer {
                    Ok((200, body)) => Ok(body),
                    Ok((status, body)) => Err(error_of(status, &body)),
                    Err(message) => Err(CallError {
                        code: "ConnectionError".to_string(),
                        message,
                        item: None,
                    }),
                }
            }
        }
    }
}

/// Longest wait for a table to be created or deleted (DynamoDB takes seconds to minutes).
const TABLE_STATUS_WAIT: Duration = Duration::from_secs(600);

/// The exception of an error answer: the part of `__type` after `#`.
fn error_of(status: u16, body: &[u8]) -> CallError {
    let parsed: Value = serde_json::from_slice(body).unwrap_or_default();
    let code = parsed["__type"]
        .as_str()
        .map(|t| t.rsplit('#').next().unwrap_or(t).to_string())
        .unwrap_or_else(|| format!("HTTP{status}"));
    let message = parsed["message"]
        .as_str()
        .or(parsed["Message"].as_str())
        .unwrap_or_default()
        .to_string();
    let item = parsed.get("Item").cloned();
    CallError {
        code,
        message,
        item,
    }
}

#[cfg(test)]
mod active_tests {
    use super::is_active;
    use serde_json::json;

    #[test]
    fn a_table_is_active_once_it_and_every_described_gsi_are() {
        let table = |status: &str, gsi: serde_json::Value| json!({"TableStatus": status, "GlobalSecondaryIndexes": [gsi]});
        assert!(is_active(&table(
            "ACTIVE",
            json!({"IndexStatus": "ACTIVE"})
        )));
        // A GSI described without a status (some emulators leave it out) holds nothing up.
        assert!(is_active(&table("ACTIVE", json!({"IndexName": "G"}))));
        // The neighbouring cases that must still wait: a GSI or the table being created.
        assert!(!is_active(&table(
            "ACTIVE",
            json!({"IndexStatus": "CREATING"})
        )));
        assert!(!is_active(&table(
            "CREATING",
            json!({"IndexStatus": "ACTIVE"})
        )));
        assert!(is_active(&json!({"TableStatus": "ACTIVE"})));
    }
}
