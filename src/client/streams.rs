//! A DynamoDB Streams reader: the core of `shoal streams tail`, which prints a table's stream
//! records as JSON lines while they arrive, and of `shoal crash-test --server`, which reads a
//! recovered server's whole stream to check it.
//!
//! It is a DynamoDB Streams client over HTTP ([`crate::client`]), so it works against any
//! server that speaks the Streams API on its DynamoDB endpoint. It finds the table's latest
//! stream (DescribeTable's `LatestStreamArn`), its shards (DescribeStream), and reads each
//! shard with GetShardIterator and GetRecords, a parent to its end (GetRecords without a
//! `NextShardIterator`) before its children, as DynamoDB asks of every reader. A shard
//! rollover shows up as a new shard in DescribeStream, which is read again whenever there is
//! nothing new. An iterator the server no longer accepts (expired after 15 minutes, or issued
//! before the server restarted) is renewed after the last record printed
//! (`AFTER_SEQUENCE_NUMBER`); a server that goes away after answering once is waited for
//! (up to [`RECONNECT_FOR`]), so a tail outlives a restart of the server.
//!
//! Each record is printed as one line: the record object of the GetRecords answer, re-encoded
//! (its members in name order). Diagnostics go to stderr.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use super::{Connection, DYNAMODB_TARGET_PREFIX, STREAMS_TARGET_PREFIX};
use serde_json::{json, Value};

/// How long to wait before asking again when there is nothing new.
const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// How long a server that answered once and then went away (a restart) is tried again.
const RECONNECT_FOR: Duration = Duration::from_secs(30);
/// GetRecords' largest page.
const GET_RECORDS_LIMIT_MAX: u64 = 1000;

/// Where reading starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum From {
    /// Every record still retained, then the new ones.
    TrimHorizon,
    /// Only the records written from now on.
    Latest,
}

/// What `shoal streams tail` was asked.
#[derive(Debug, Clone)]
pub struct TailOptions {
    /// The server's endpoint (plain `http://`).
    pub endpoint: String,
    pub table: String,
    pub from: From,
    /// Stop after printing this many records.
    pub max_records: Option<u64>,
    /// Stop after this long without a new record.
    pub idle_exit: Option<Duration>,
}

/// Why a call failed.
#[derive(Debug)]
enum CallError {
    /// The server answered with an error: the code (what follows `#` in `__type`) and the
    /// message.
    Api { code: String, message: String },
    /// No answer, or one that is not DynamoDB's: the whole explanation.
    Transport(String),
}

impl CallError {
    fn code(&self) -> Option<&str> {
        match self {
            CallError::Api { code, .. } => Some(code),
            CallError::Transport(_) => None,
        }
    }

    /// The error as the command reports it, for the operation `operation`.
    fn describe(self, operation: &str) -> String {
        match self {
            CallError::Api { code, message } => format!("{operation}: {code}: {message}"),
            CallError::Transport(text) => text,
        }
    }
}

/// The connection to the server, opened again when a kept-alive one turns out closed.
struct Client {
    endpoint: String,
    address: String,
    connection: Option<Connection>,
    /// The server has answered once: losing it now is a restart to wait for, not a mistake
    /// in the command line.
    reached: bool,
}

impl Client {
    /// Sends one call and returns the server's answer. A kept-alive connection the server has
    /// closed fails the first call, which is then sent again on a new connection. Once the
    /// server has answered, a server that cannot be reached is tried again every
    /// [`POLL_INTERVAL`] for [`RECONNECT_FOR`] (every call of the tail is a read, safe to
    /// repeat); before that, it is an error at once.
    async fn call(
        &mut self,
        prefix: &str,
        operation: &str,
        body: &Value,
    ) -> Result<Value, CallError> {
        let mut unreachable_since: Option<Instant> = None;
        loop {
            let fresh = self.connection.is_none();
            let failure = if fresh {
                match Connection::open(&self.address).await {
                    Ok(connection) => {
                        self.connection = Some(connection);
                        None
                    }
                    Err(error) => Some(error),
                }
            } else {
                None
            };
            let failure = match (failure, self.connection.as_mut()) {
                (Some(error), _) => error,
                (None, Some(connection)) => {
                    match connection.call_target(prefix, operation, body).await {
                        Ok((status, bytes)) => {
                            self.reached = true;
                            return answer(status, &bytes);
                        }
                        Err(error) => {
                            self.connection = None;
                            if !fresh {
                                // The server closed a kept-alive connection: send again.
                                continue;
                            }
                            error
                        }
                    }
                }
                (None, None) => continue,
            };
            if !self.reached {
                return Err(CallError::Transport(format!(
                    "cannot reach a server at {}: {failure} (is `shoal serve` running?)",
                    self.endpoint
                )));
            }
            let since = *unreachable_since.get_or_insert_with(|| {
                eprintln!(
                    "shoal: lost the server at {} ({failure}); trying again for {} s",
                    self.endpoint,
                    RECONNECT_FOR.as_secs()
                );
                Instant::now()
            });
            if since.elapsed() >= RECONNECT_FOR {
                return Err(CallError::Transport(format!(
                    "cannot reach the server at {} any more: {failure}",
                    self.endpoint
                )));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    async fn dynamodb(&mut self, operation: &str, body: &Value) -> Result<Value, CallError> {
        self.call(DYNAMODB_TARGET_PREFIX, operation, body).await
    }

    async fn streams(&mut self, operation: &str, body: &Value) -> Result<Value, CallError> {
        self.call(STREAMS_TARGET_PREFIX, operation, body).await
    }
}

/// The JSON of a 200 answer, or the error another status carries.
fn answer(status: u16, body: &[u8]) -> Result<Value, CallError> {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    match (status, parsed) {
        (200, Some(value)) => Ok(value),
        (_, Some(value)) if value.get("__type").is_some() => {
            let kind = value["__type"].as_str().unwrap_or_default();
            let code = kind.rsplit('#').next().unwrap_or(kind).to_string();
            let message = ["message", "Message"]
                .iter()
                .find_map(|name| value.get(*name).and_then(Value::as_str))
                .unwrap_or_default()
                .to_string();
            Err(CallError::Api { code, message })
        }
        _ => Err(CallError::Transport(format!(
            "the server answered {status} with {:?}, not DynamoDB's JSON",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ))),
    }
}

/// What is known of one shard.
#[derive(Debug)]
struct ShardState {
    parent: Option<String>,
    /// Where a first iterator starts (`TRIM_HORIZON` or `LATEST`).
    start: &'static str,
    iterator: Option<String>,
    /// The sequence number of the last record printed from it.
    last_sequence_number: Option<String>,
    /// Read to its end: closed, and GetRecords gave no further iterator.
    drained: bool,
}

/// One shard as DescribeStream lists it.
struct Described {
    id: String,
    parent: Option<String>,
    closed: bool,
}

/// The stream's status and every shard, over all of DescribeStream's pages.
async fn describe_stream(
    client: &mut Client,
    arn: &str,
) -> Result<(String, Vec<Described>), String> {
    let mut shards = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let mut request = json!({"StreamArn": arn});
        if let Some(start) = &start {
            request["ExclusiveStartShardId"] = json!(start);
        }
        let answer = client
            .streams("DescribeStream", &request)
            .await
            .map_err(|e| e.describe("DescribeStream"))?;
        let description = &answer["StreamDescription"];
        for shard in description["Shards"].as_array().into_iter().flatten() {
            let Some(id) = shard["ShardId"].as_str() else {
                continue;
            };
            shards.push(Described {
                id: id.to_string(),
                parent: shard["ParentShardId"].as_str().map(str::to_string),
                closed: shard["SequenceNumberRange"]
                    .get("EndingSequenceNumber")
                    .is_some_and(|end| !end.is_null()),
            });
        }
        let status = description["StreamStatus"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match description["LastEvaluatedShardId"].as_str() {
            Some(last) if start.as_deref() != Some(last) => start = Some(last.to_string()),
            _ => return Ok((status, shards)),
        }
    }
}

/// The ARN of the table's latest stream.
async fn latest_stream_arn(
    client: &mut Client,
    table: &str,
    endpoint: &str,
) -> Result<String, String> {
    let answer = client
        .dynamodb("DescribeTable", &json!({"TableName": table}))
        .await
        .map_err(|error| match error.code() {
            Some("ResourceNotFoundException") => {
                format!("table {table} does not exist at {endpoint}")
            }
            _ => error.describe("DescribeTable"),
        })?;
    answer["Table"]["LatestStreamArn"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "table {table} has no stream: enable one with UpdateTable's StreamSpecification \
                 (StreamEnabled true and a StreamViewType)"
            )
        })
}

/// The tail's state: the shards of one stream and what was printed.
struct Tail<'a, W: Write> {
    client: Client,
    arn: String,
    options: &'a TailOptions,
    out: W,
    shards: BTreeMap<String, ShardState>,
    printed: u64,
    last_new: Instant,
}

/// What reading stopped for.
enum Stop {
    /// Go on.
    No,
    /// Done: enough records, the reader of the output went away, or nothing new for long
    /// enough.
    Done,
}

impl<W: Write> Tail<'_, W> {
    /// Adds the shards DescribeStream lists that are not known yet and forgets those it no
    /// longer lists (past retention). `first` is the first description: with `--from
    /// latest`, the shards closed by then are not read at all.
    fn merge(&mut self, described: Vec<Described>, first: bool) {
        let listed: std::collections::BTreeSet<String> =
            described.iter().map(|shard| shard.id.clone()).collect();
        self.shards.retain(|id, _| listed.contains(id));
        for shard in described {
            if self.shards.contains_key(&shard.id) {
                continue;
            }
            let latest = first && self.options.from == From::Latest;
            self.shards.insert(
                shard.id,
                ShardState {
                    parent: shard.parent,
                    // Shards that open later are read from their start.
                    start: if latest { "LATEST" } else { "TRIM_HORIZON" },
                    iterator: None,
                    last_sequence_number: None,
                    drained: latest && shard.closed,
                },
            );
        }
    }

    /// The shards that can be read now, in id (creation) order: not drained, and with a
    /// drained or forgotten parent.
    fn readable(&self) -> Vec<String> {
        self.shards
            .iter()
            .filter(|(_, state)| !state.drained)
            .filter(|(_, state)| {
                state
                    .parent
                    .as_ref()
                    .and_then(|parent| self.shards.get(parent))
                    .is_none_or(|parent| parent.drained)
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// A new iterator for `shard`: after the last record printed, else at its start.
    async fn iterator(&mut self, shard: &str) -> Result<Option<String>, String> {
        let Some(state) = self.shards.get(shard) else {
            return Ok(None);
        };
        let mut request = json!({"StreamArn": self.arn, "ShardId": shard});
        match &state.last_sequence_number {
            Some(number) => {
                request["ShardIteratorType"] = json!("AFTER_SEQUENCE_NUMBER");
                request["SequenceNumber"] = json!(number);
            }
            None => request["ShardIteratorType"] = json!(state.start),
        }
        let answer = match self.client.streams("GetShardIterator", &request).await {
            Ok(answer) => answer,
            Err(error) => match error.code() {
                // Past retention and forgotten meanwhile: nothing more to read in it.
                Some("ResourceNotFoundException") => {
                    self.shards.remove(shard);
                    return Ok(None);
                }
                Some("TrimmedDataAccessException") => {
                    eprintln!(
                        "shoal: the last record printed from shard {shard} is past retention; \
                         going on from the oldest record retained (any between aged out unread)"
                    );
                    request["ShardIteratorType"] = json!("TRIM_HORIZON");
                    if let Some(fields) = request.as_object_mut() {
                        fields.remove("SequenceNumber");
                    }
                    self.client
                        .streams("GetShardIterator", &request)
                        .await
                        .map_err(|e| e.describe("GetShardIterator"))?
                }
                _ => return Err(error.describe("GetShardIterator")),
            },
        };
        Ok(answer["ShardIterator"].as_str().map(str::to_string))
    }

    /// Reads `shard` until it has nothing more now. Returns whether it printed anything.
    async fn read_shard(&mut self, shard: &str) -> Result<(bool, Stop), String> {
        let mut printed_any = false;
        // An iterator renewed because the server refused the old one is tried once per call.
        let mut renewed = false;
        loop {
            let iterator = match self.shards.get(shard).map(|s| s.iterator.clone()) {
                None => return Ok((printed_any, Stop::No)),
                Some(Some(iterator)) => iterator,
                Some(None) => match self.iterator(shard).await? {
                    Some(iterator) => iterator,
                    None => return Ok((printed_any, Stop::No)),
                },
            };
            let limit = self
                .options
                .max_records
                .map_or(GET_RECORDS_LIMIT_MAX, |max| {
                    max.saturating_sub(self.printed)
                        .clamp(1, GET_RECORDS_LIMIT_MAX)
                });
            let request = json!({"ShardIterator": iterator, "Limit": limit});
            let page = match self.client.streams("GetRecords", &request).await {
                Ok(page) => page,
                Err(CallError::Api { code, message })
                    if !renewed
                        && (code == "ExpiredIteratorException"
                            || (code == "ValidationException"
                                && message.starts_with("Invalid ShardIterator"))) =>
                {
                    renewed = true;
                    if let Some(state) = self.shards.get_mut(shard) {
                        state.iterator = None;
                    }
                    continue;
                }
                Err(error) if error.code() == Some("ResourceNotFoundException") => {
                    self.shards.remove(shard);
                    return Ok((printed_any, Stop::No));
                }
                Err(error) => return Err(error.describe("GetRecords")),
            };
            let records = page["Records"].as_array().cloned().unwrap_or_default();
            let next = page["NextShardIterator"].as_str().map(str::to_string);
            for record in &records {
                if writeln!(self.out, "{record}").is_err() {
                    // Whoever read the output has gone (`| head`): nothing left to do.
                    return Ok((true, Stop::Done));
                }
                self.printed += 1;
                printed_any = true;
                self.last_new = Instant::now();
                if let Some(state) = self.shards.get_mut(shard) {
                    state.last_sequence_number = record["dynamodb"]["SequenceNumber"]
                        .as_str()
                        .map(str::to_string);
                }
            }
            if self.out.flush().is_err() {
                return Ok((true, Stop::Done));
            }
            if let Some(state) = self.shards.get_mut(shard) {
                state.drained = next.is_none();
                state.iterator = next;
            }
            if self
                .options
                .max_records
                .is_some_and(|max| self.printed >= max)
            {
                return Ok((printed_any, Stop::Done));
            }
            let drained = self.shards.get(shard).is_none_or(|s| s.drained);
            if records.is_empty() || drained {
                return Ok((printed_any, Stop::No));
            }
        }
    }

    async fn run(&mut self) -> Result<(), String> {
        let (_, described) = describe_stream(&mut self.client, &self.arn).await?;
        self.merge(described, true);
        loop {
            let mut progressed = false;
            let mut drained_one = false;
            for shard in self.readable() {
                let (printed, stop) = self.read_shard(&shard).await?;
                if let Stop::Done = stop {
                    return Ok(());
                }
                progressed |= printed;
                drained_one |= self.shards.get(&shard).is_none_or(|s| s.drained);
            }
            if progressed && !drained_one {
                continue;
            }
            // A drained shard's child, or a rollover, is in the stream's description.
            let (status, described) = describe_stream(&mut self.client, &self.arn).await?;
            self.merge(described, false);
            if status == "DISABLED" && self.readable().is_empty() {
                eprintln!(
                    "shoal: the stream of table {} is disabled and every record of it has been read",
                    self.options.table
                );
                return Ok(());
            }
            if progressed || drained_one {
                continue;
            }
            let mut pause = POLL_INTERVAL;
            if let Some(idle) = self.options.idle_exit {
                let left = idle.saturating_sub(self.last_new.elapsed());
                if left.is_zero() {
                    return Ok(());
                }
                pause = pause.min(left);
            }
            tokio::time::sleep(pause).await;
        }
    }
}

/// Runs `shoal streams tail`, printing to `out` until a limit in `options` is reached.
pub async fn tail<W: Write>(options: &TailOptions, out: W) -> Result<(), String> {
    let mut client = Client {
        endpoint: options.endpoint.clone(),
        address: options.endpoint.clone(),
        connection: None,
        reached: false,
    };
    let arn = latest_stream_arn(&mut client, &options.table, &options.endpoint).await?;
    let mut tail = Tail {
        client,
        arn,
        options,
        out,
        shards: BTreeMap::new(),
        printed: 0,
        last_new: Instant::now(),
    };
    if options.max_records == Some(0) {
        return Ok(());
    }
    tail.run().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_answers_carry_their_code_and_message() {
        let body = br#"{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}"#;
        match answer(400, body) {
            Err(CallError::Api { code, message }) => {
                assert_eq!(code, "ResourceNotFoundException");
                assert_eq!(message, "Requested resource not found");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            answer(200, b"{\"Records\":[]}").unwrap(),
            json!({"Records": []})
        );
        match answer(502, b"<html>bad gateway</html>") {
            Err(CallError::Transport(text)) => assert!(text.contains("502"), "{text}"),
            other => panic!("{other:?}"),
        }
    }

    /// Options of a tail of table `T` from `from`, reaching no endpoint.
    fn options(from: From) -> TailOptions {
        TailOptions {
            endpoint: String::new(),
            table: "T".into(),
            from,
            max_records: None,
            idle_exit: None,
        }
    }

    /// A tail with no shard known yet, which never calls its endpoint.
    fn tail(options: &TailOptions) -> Tail<'_, Vec<u8>> {
        Tail {
            client: Client {
                endpoint: String::new(),
                address: String::new(),
                connection: None,
                reached: false,
            },
            arn: String::new(),
            options,
            out: Vec::new(),
            shards: BTreeMap::new(),
            printed: 0,
            last_new: Instant::now(),
        }
    }

    fn state(parent: Option<&str>, drained: bool) -> ShardState {
        ShardState {
            parent: parent.map(str::to_string),
            start: "TRIM_HORIZON",
            iterator: None,
            last_sequence_number: None,
            drained,
        }
    }

    #[test]
    fn a_child_is_read_only_once_its_parent_is_drained() {
        let options = options(From::TrimHorizon);
        let mut tail = tail(&options);
        tail.shards.insert("a".into(), state(None, false));
        tail.shards.insert("b".into(), state(Some("a"), false));
        // A parent that aged out no longer holds its child back.
        tail.shards.insert("x".into(), state(Some("gone"), false));
        assert_eq!(tail.readable(), ["a", "x"]);
        tail.shards.get_mut("a").unwrap().drained = true;
        assert_eq!(tail.readable(), ["b", "x"]);

        // A later description that no longer lists "a" forgets it; "b" stays readable.
        tail.merge(
            vec![
                Described {
                    id: "b".into(),
                    parent: Some("a".into()),
                    closed: false,
                },
                Described {
                    id: "x".into(),
                    parent: Some("gone".into()),
                    closed: false,
                },
            ],
            false,
        );
        assert_eq!(tail.readable(), ["b", "x"]);
    }

    #[test]
    fn from_latest_skips_the_shards_closed_at_the_start() {
        let options = options(From::Latest);
        let mut tail = tail(&options);
        tail.merge(
            vec![
                Described {
                    id: "a".into(),
                    parent: None,
                    closed: true,
                },
                Described {
                    id: "b".into(),
                    parent: Some("a".into()),
                    closed: false,
                },
            ],
            true,
        );
        assert_eq!(tail.readable(), ["b"]);
        assert_eq!(tail.shards["b"].start, "LATEST");
        tail.merge(
            vec![Described {
                id: "c".into(),
                parent: Some("b".into()),
                closed: false,
            }],
            false,
        );
        assert_eq!(tail.shards["c"].start, "TRIM_HORIZON");
    }
}
