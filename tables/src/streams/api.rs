//! The DynamoDB Streams operations (SPEC-2 §1.3–1.6) and the embedded change feed
//! ([`StreamReader`]), both reading what `streams::record` stores.
//!
//! A shard iterator is the position of a reader: the stream (table name and label), the
//! shard, the next sequence number to read and when the iterator was issued, with a check
//! value keyed by a secret stored in the manifest, so that a damaged or invented iterator is
//! refused (ValidationException) rather than read, and one issued before a restart still
//! works. Iterators expire 15 minutes after they are issued, as DynamoDB's do.

use std::sync::Arc;
use std::time::{Duration, Instant};

use shoal_model::{ApiError, ErrorCode};

use crate::api::constraint::{
    enum_value_set, validation_errors, value_at_least, value_at_most, violation,
    violation_without_value, NOT_NULL,
};
use crate::api::streams::{
    DescribeStreamInput, DescribeStreamOutput, GetRecordsInput, GetRecordsOutput,
    GetShardIteratorInput, GetShardIteratorOutput, Identity, ListStreamsInput, ListStreamsOutput,
    Record, SequenceNumberRange, Shard, StreamDescription, StreamRecordBody, StreamSummary,
};
use crate::control::tables::key_schema_elements;
use crate::core::catalog::{resolve, ShardDef, StreamDef, TableDef};
use crate::core::clock::{epoch_seconds, now_millis};
use crate::core::region;
use crate::database::Database;
use crate::streams::lifecycle::{find_stream, is_shard_id, parse_stream_arn, stream_arn};
use crate::streams::record::{self, StreamRecord};

/// ListStreams' and DescribeStream's largest (and default) page.
pub const LIST_LIMIT_MAX: i64 = 100;
/// GetRecords' largest (and default) number of records.
pub const GET_RECORDS_LIMIT_MAX: i64 = 1000;
/// GetRecords stops before its records pass this size (DynamoDB: 1 MB).
pub const GET_RECORDS_SIZE_BYTES_MAX: u64 = 1 << 20;
/// A shard iterator's lifetime.
pub const ITERATOR_LIFETIME: Duration = Duration::from_secs(15 * 60);

const ITERATOR_TYPES: [&str; 4] = [
    "TRIM_HORIZON",
    "LATEST",
    "AT_SEQUENCE_NUMBER",
    "AFTER_SEQUENCE_NUMBER",
];

fn shard_not_found() -> ApiError {
    ApiError::new(
        ErrorCode::ResourceNotFoundException,
        "Requested resource not found: Shard does not exist",
    )
}

fn limit_problem(limit: Option<i64>, max: i64, problems: &mut Vec<String>) {
    if let Some(limit) = limit {
        if limit < 1 {
            problems.push(violation(
                Some(&limit.to_string()),
                "limit",
                &value_at_least(1),
            ));
        } else if limit > max {
            problems.push(violation(
                Some(&limit.to_string()),
                "limit",
                &value_at_most(max),
            ));
        }
    }
}

fn required(value: Option<&str>, member: &str, problems: &mut Vec<String>) {
    if value.is_none() {
        problems.push(violation(None, member, NOT_NULL));
    }
}

/// A decoded shard iterator.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Position {
    table: String,
    label: String,
    shard: String,
    from_seq: u64,
    issued_at_millis: u64,
}

impl Database {
    fn encode_iterator(&self, position: &Position) -> String {
        let payload = format!(
            "{}\n{}\n{}\n{}\n{}",
            position.table,
            position.label,
            position.shard,
            position.from_seq,
            position.issued_at_millis
        );
        let check = self.streams.iterator_check(payload.as_bytes());
        let mut text = format!("{check:016x}");
        for byte in payload.bytes() {
            text.push_str(&format!("{byte:02x}"));
        }
        text
    }

    fn decode_iterator(&self, text: &str) -> Option<Position> {
        if text.len() < 16 || !text.len().is_multiple_of(2) || !text.is_ascii() {
            return None;
        }
        let check = u64::from_str_radix(&text[..16], 16).ok()?;
        let payload: Vec<u8> = (16..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16))
            .collect::<Result<_, _>>()
            .ok()?;
        if self.streams.iterator_check(&payload) != check {
            return None;
        }
        let payload = String::from_utf8(payload).ok()?;
        let mut fields = payload.split('\n');
        let position = Position {
            table: fields.next()?.to_string(),
            label: fields.next()?.to_string(),
            shard: fields.next()?.to_string(),
            from_seq: fields.next()?.parse().ok()?,
            issued_at_millis: fields.next()?.parse().ok()?,
        };
        fields.next().is_none().then_some(position)
    }

    /// The stream and shard an iterator points into, as the catalog has them now.
    fn locate(&self, position: &Position) -> Result<(Arc<TableDef>, usize, usize), ApiError> {
        let arn = stream_arn(&position.table, &position.label);
        let (table, stream_index) = find_stream(&self.catalog.read(), Some(&arn))?;
        let shard_index = table.streams[stream_index]
            .shards
            .iter()
            .position(|s| s.id == position.shard)
            .ok_or_else(shard_not_found)?;
        Ok((table, stream_index, shard_index))
    }

    /// ListStreams.
    pub fn list_streams(&self, request: ListStreamsInput) -> Result<ListStreamsOutput, ApiError> {
        let mut problems = Vec::new();
        limit_problem(request.limit, LIST_LIMIT_MAX, &mut problems);
        if let Some(name) = request.table_name.as_deref() {
            crate::control::schema::name_problems(Some(name), "tableName", &mut problems);
        }
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let start = match request.exclusive_start_stream_arn.as_deref() {
            Some(arn) => Some(parse_stream_arn(arn).ok_or_else(|| {
                ApiError::validation(format!("Invalid ExclusiveStartStreamArn: {arn}"))
            })?),
            None => None,
        };
        let limit = request.limit.unwrap_or(LIST_LIMIT_MAX) as usize;
        let catalog = self.catalog.read();
        let here = region::current();
        if let Some(name) = request.table_name.as_deref() {
            if resolve(&catalog, name, &here).is_none() {
                return Err(crate::api::common::table_not_found(name));
            }
        }
        // Streams in (table name, label) order: a page resumes after its last ARN even when
        // that stream's table has been deleted since.
        let mut all = catalog
            .values()
            .filter(|table| {
                request
                    .table_name
                    .as_deref()
                    .is_none_or(|n| n == table.name)
                    // The tables this Region sees, not those another Region keeps.
                    && resolve(&catalog, &table.name, &here)
                        .is_some_and(|seen| Arc::ptr_eq(seen, table))
            })
            .flat_map(|table| {
                table
                    .streams
                    .iter()
                    .map(move |stream| (table.name.as_str(), stream.label.as_str()))
            })
            .filter(|entry| start.is_none_or(|start| *entry > start));
        let streams: Vec<StreamSummary> = all
            .by_ref()
            .take(limit)
            .map(|(table, label)| StreamSummary {
                stream_arn: stream_arn(table, label),
                table_name: table.to_string(),
                stream_label: label.to_string(),
            })
            .collect();
        let more = all.next().is_some();
        Ok(ListStreamsOutput {
            last_evaluated_stream_arn: if more {
                streams.last().map(|s| s.stream_arn.clone())
            } else {
                None
            },
            streams,
        })
    }

    /// DescribeStream.
    pub fn describe_stream(
        &self,
        request: DescribeStreamInput,
    ) -> Result<DescribeStreamOutput, ApiError> {
        let mut problems = Vec::new();
        required(request.stream_arn.as_deref(), "streamArn", &mut problems);
        limit_problem(request.limit, LIST_LIMIT_MAX, &mut problems);
        if let Some(filter) = &request.shard_filter {
            required(
                filter.filter_type.as_deref(),
                "shardFilter.type",
                &mut problems,
            );
            required(
                filter.shard_id.as_deref(),
                "shardFilter.shardId",
                &mut problems,
            );
            if let Some(kind) = filter.filter_type.as_deref() {
                if kind != "CHILD_SHARDS" {
                    problems.push(violation(
                        Some(kind),
                        "shardFilter.type",
                        &enum_value_set(&["CHILD_SHARDS"]),
                    ));
                }
            }
            if let Some(id) = filter.shard_id.as_deref() {
                if !is_shard_id(id) {
                    problems.push(violation(
                        Some(id),
                        "ShardFilter.ShardId",
                        "Member must be a valid shard id",
                    ));
                }
            }
        }
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let (table, stream_index) =
            find_stream(&self.catalog.read(), request.stream_arn.as_deref())?;
        let stream = &table.streams[stream_index];
        let limit = request.limit.unwrap_or(LIST_LIMIT_MAX) as usize;
        let mut shards: Vec<&ShardDef> = stream.shards.iter().collect();
        shards.sort_by(|a, b| a.id.cmp(&b.id));
        if let Some(filter) = &request.shard_filter {
            let parent = filter.shard_id.as_deref();
            shards.retain(|shard| shard.parent.as_deref() == parent);
        }
        if let Some(start) = request.exclusive_start_shard_id.as_deref() {
            // A shard id that does not exist (any more) starts nowhere: an empty page.
            shards = match shards.iter().position(|s| s.id == start) {
                Some(position) => shards.split_off(position + 1),
                None => Vec::new(),
            };
        }
        let more = shards.len() > limit;
        shards.truncate(limit);
        let described: Vec<Shard> = shards
            .iter()
            .map(|shard| Shard {
                shard_id: shard.id.clone(),
                sequence_number_range: SequenceNumberRange {
                    starting_sequence_number: record::sequence_number(shard.start_seq),
                    ending_sequence_number: shard.end_seq.map(record::sequence_number),
                },
                parent_shard_id: shard.parent.clone(),
            })
            .collect();
        Ok(DescribeStreamOutput {
            stream_description: StreamDescription {
                stream_arn: stream_arn(&table.name, &stream.label),
                stream_label: stream.label.clone(),
                stream_status: if stream.is_enabled() {
                    "ENABLED"
                } else {
                    "DISABLED"
                }
                .to_string(),
                stream_view_type: stream.view_type.as_str().to_string(),
                creation_request_date_time: epoch_seconds(stream.created_at_millis),
                table_name: table.name.clone(),
                key_schema: key_schema_elements(&table.key),
                last_evaluated_shard_id: if more {
                    described.last().map(|s| s.shard_id.clone())
                } else {
                    None
                },
                shards: described,
            },
        })
    }

    /// GetShardIterator.
    pub fn get_shard_iterator(
        &self,
        request: GetShardIteratorInput,
    ) -> Result<GetShardIteratorOutput, ApiError> {
        let mut problems = Vec::new();
        required(request.stream_arn.as_deref(), "streamArn", &mut problems);
        required(request.shard_id.as_deref(), "shardId", &mut problems);
        required(
            request.shard_iterator_type.as_deref(),
            "shardIteratorType",
            &mut problems,
        );
        if let Some(kind) = request.shard_iterator_type.as_deref() {
            if !ITERATOR_TYPES.contains(&kind) {
                problems.push(violation(
                    Some(kind),
                    "shardIteratorType",
                    &enum_value_set(&ITERATOR_TYPES),
                ));
            }
        }
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let kind = request.shard_iterator_type.as_deref().unwrap_or_default();
        let at_a_number = matches!(kind, "AT_SEQUENCE_NUMBER" | "AFTER_SEQUENCE_NUMBER");
        let sequence_number = match (at_a_number, request.sequence_number.as_deref()) {
            (true, None) => {
                return Err(ApiError::validation(format!(
                    "A SequenceNumber is required for ShardIteratorType {kind}"
                )))
            }
            (false, Some(_)) => {
                return Err(ApiError::validation(format!(
                    "A SequenceNumber must not be given for ShardIteratorType {kind}"
                )))
            }
            (true, Some(text)) => {
                Some(record::parse_sequence_number(text).ok_or_else(|| {
                    ApiError::validation(format!("Invalid SequenceNumber: {text}"))
                })?)
            }
            (false, None) => None,
        };
        let (table, stream_index) =
            find_stream(&self.catalog.read(), request.stream_arn.as_deref())?;
        let stream = &table.streams[stream_index];
        let shard_id = request.shard_id.as_deref().unwrap_or_default();
        let shard = stream.shard(shard_id).ok_or_else(shard_not_found)?;
        let snapshot = self.db.snapshot();
        let retained_from = self.streams.retention.retained_from_millis();
        let from_seq = match (kind, sequence_number) {
            ("TRIM_HORIZON", _) => {
                record::first_retained_seq(&self.db, stream, shard, retained_from, &snapshot)?
                    .unwrap_or(shard.start_seq)
            }
            ("LATEST", _) => match shard.end_seq {
                Some(end) => end + 1,
                None => (snapshot.seq() + 1).max(shard.start_seq),
            },
            (_, Some(number)) => {
                if number < shard.start_seq || shard.end_seq.is_some_and(|end| number > end) {
                    return Err(ApiError::validation(format!(
                        "Invalid SequenceNumber {number} for shard {shard_id}"
                    )));
                }
                let from = if kind == "AFTER_SEQUENCE_NUMBER" {
                    number + 1
                } else {
                    number
                };
                // Records this shard held before the trim horizon are gone.
                if shard.created_at_millis < retained_from {
                    let horizon = record::first_retained_seq(
                        &self.db,
                        stream,
                        shard,
                        retained_from,
                        &snapshot,
                    )?;
                    if horizon.is_none_or(|horizon| from < horizon) {
                        return Err(ApiError::new(
                            ErrorCode::TrimmedDataAccessException,
                            "The data you are trying to access has been trimmed.",
                        ));
                    }
                }
                from
            }
            _ => return Err(ApiError::validation("Invalid ShardIteratorType")),
        };
        Ok(GetShardIteratorOutput {
            shard_iterator: self.encode_iterator(&Position {
                table: table.name.clone(),
                label: stream.label.clone(),
                shard: shard.id.clone(),
                from_seq,
                issued_at_millis: now_millis(),
            }),
        })
    }

    /// GetRecords.
    pub fn get_records(&self, request: GetRecordsInput) -> Result<GetRecordsOutput, ApiError> {
        let mut problems = Vec::new();
        required(
            request.shard_iterator.as_deref(),
            "shardIterator",
            &mut problems,
        );
        limit_problem(request.limit, GET_RECORDS_LIMIT_MAX, &mut problems);
        if let Some(iterator) = request.shard_iterator.as_deref() {
            if iterator.is_empty() || iterator.len() > 2048 {
                problems.push(violation_without_value(
                    "shardIterator",
                    "Member must have length between 1 and 2048",
                ));
            }
        }
        if !problems.is_empty() {
            return Err(validation_errors(&problems));
        }
        let text = request.shard_iterator.as_deref().unwrap_or_default();
        let position = self
            .decode_iterator(text)
            .ok_or_else(|| ApiError::validation(format!("Invalid ShardIterator: {text}")))?;
        let now = now_millis();
        if now.saturating_sub(position.issued_at_millis) > ITERATOR_LIFETIME.as_millis() as u64 {
            return Err(ApiError::new(
                ErrorCode::ExpiredIteratorException,
                "The provided iterator exceeds the maximum age allowed.",
            ));
        }
        let (table, stream_index, shard_index) = self.locate(&position)?;
        let stream = &table.streams[stream_index];
        let shard = &stream.shards[shard_index];
        let limit = request.limit.unwrap_or(GET_RECORDS_LIMIT_MAX) as usize;
        let snapshot = self.db.snapshot();
        let read = record::read_shard(
            &self.db,
            stream,
            shard,
            position.from_seq,
            limit,
            GET_RECORDS_SIZE_BYTES_MAX,
            self.streams.retention.retained_from_millis(),
            &snapshot,
        )?;
        let arn = stream_arn(&table.name, &stream.label);
        Ok(GetRecordsOutput {
            records: read
                .records
                .iter()
                .map(|record| api_record(&arn, stream, record))
                .collect(),
            next_shard_iterator: read.next_from_seq.map(|from_seq| {
                self.encode_iterator(&Position {
                    from_seq,
                    issued_at_millis: now,
                    ..position
                })
            }),
        })
    }

    /// A change feed of `table_name`'s latest stream from `start`, for embedded use: no
    /// HTTP, no iterators to renew, shards followed parent to child.
    pub fn stream_reader(
        &self,
        table_name: &str,
        start: StreamStart,
    ) -> Result<StreamReader<'_>, ApiError> {
        let table = self.table(table_name)?;
        let Some(stream) = table.latest_stream() else {
            return Err(ApiError::validation(format!(
                "Table {table_name} has no stream"
            )));
        };
        let (shard, from_seq) = match start {
            StreamStart::TrimHorizon => {
                let shard = stream.shards.first().ok_or_else(shard_not_found)?;
                (shard.id.clone(), shard.start_seq)
            }
            StreamStart::Latest => {
                let shard = stream.shards.last().ok_or_else(shard_not_found)?;
                let from = match shard.end_seq {
                    Some(end) => end + 1,
                    None => (self.db.visible_seq() + 1).max(shard.start_seq),
                };
                (shard.id.clone(), from)
            }
        };
        Ok(StreamReader {
            database: self,
            table: table.name.clone(),
            label: stream.label.clone(),
            shard,
            from_seq,
            finished: false,
        })
    }
}

/// Where a [`StreamReader`] starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamStart {
    /// The oldest record still retained.
    TrimHorizon,
    /// Just after the newest record: only changes from now on.
    Latest,
}

/// An embedded reader of one stream: [`StreamReader::read`] returns the next records in
/// order, crossing from each drained closed shard to its child; [`StreamReader::wait`]
/// blocks until there are some.
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use shoal_tables::{Database, EventName, StreamStart};
///
/// let db = Database::in_memory()?;
/// db.execute("CreateTable", json!({
///     "TableName": "Music",
///     "AttributeDefinitions": [{"AttributeName": "Artist", "AttributeType": "S"}],
///     "KeySchema": [{"AttributeName": "Artist", "KeyType": "HASH"}],
///     "BillingMode": "PAY_PER_REQUEST",
///     "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"}
/// }))?;
/// let mut reader = db.stream_reader("Music", StreamStart::TrimHorizon)?;
/// db.execute("PutItem", json!({"TableName": "Music", "Item": {"Artist": {"S": "Ada"}}}))?;
///
/// // Up to 100 records, whatever is there now (possibly none).
/// let records = reader.read(100)?;
/// assert_eq!(records.len(), 1);
/// assert_eq!(records[0].event_name, EventName::Insert);
/// assert!(records[0].old_image.is_none() && records[0].new_image.is_some());
///
/// // Waits up to the timeout for the next change: none comes, so an empty batch.
/// assert!(reader.wait(100, Duration::from_millis(10))?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StreamReader<'db> {
    database: &'db Database,
    table: String,
    label: String,
    shard: String,
    from_seq: u64,
    /// The stream is disabled and read to its end.
    finished: bool,
}

impl StreamReader<'_> {
    /// The shard being read.
    pub fn shard_id(&self) -> &str {
        &self.shard
    }

    /// Whether the stream is disabled and every record has been read.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Up to `limit` further records (possibly none), in sequence order.
    pub fn read(&mut self, limit: usize) -> Result<Vec<StreamRecord>, ApiError> {
        let limit = limit.max(1);
        let mut records = Vec::new();
        while records.len() < limit && !self.finished {
            let arn = stream_arn(&self.table, &self.label);
            let (table, stream_index) = find_stream(&self.database.catalog.read(), Some(&arn))?;
            let stream: &StreamDef = &table.streams[stream_index];
            let Some(shard) = stream.shard(&self.shard).or_else(|| {
                // The shard aged out: continue at the oldest one still retained.
                stream.shards.first()
            }) else {
                self.finished = true;
                break;
            };
            if shard.id != self.shard {
                self.shard = shard.id.clone();
                self.from_seq = shard.start_seq;
            }
            let snapshot = self.database.db.snapshot();
            let read = record::read_shard(
                &self.database.db,
                stream,
                shard,
                self.from_seq,
                limit - records.len(),
                u64::MAX,
                self.database.streams.retention.retained_from_millis(),
                &snapshot,
            )?;
            records.extend(read.records);
            match read.next_from_seq {
                Some(next) => {
                    self.from_seq = next;
                    // An open shard with nothing more now, or a limit reached.
                    break;
                }
                None => match stream
                    .shards
                    .iter()
                    .find(|s| s.parent.as_ref() == Some(&shard.id))
                {
                    Some(child) => {
                        self.shard = child.id.clone();
                        self.from_seq = child.start_seq;
                    }
                    None => {
                        // A closed shard without a child ends a disabled stream.
                        self.finished = true;
                    }
                },
            }
        }
        Ok(records)
    }

    /// Like [`StreamReader::read`], but waits up to `timeout` for records when there are
    /// none yet. Returns an empty batch on timeout or once the stream is finished.
    pub fn wait(&mut self, limit: usize, timeout: Duration) -> Result<Vec<StreamRecord>, ApiError> {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = self.database.streams.commit_count();
            let records = self.read(limit)?;
            if !records.is_empty() || self.finished {
                return Ok(records);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(records);
            }
            // Woken by any commit with stream records (or, at most every 100 ms, to notice
            // a shard rolled over), then read again.
            self.database
                .streams
                .wait_for_commit(seen, left.min(Duration::from_millis(100)));
        }
    }
}

/// A record as GetRecords returns it.
pub fn api_record(stream_arn: &str, stream: &StreamDef, record: &StreamRecord) -> Record {
    Record {
        event_id: event_id(stream_arn, record.seq),
        event_name: record.event_name.as_str().to_string(),
        event_version: "1.1".to_string(),
        event_source: "aws:dynamodb".to_string(),
        aws_region: region::current(),
        dynamodb: StreamRecordBody {
            approximate_creation_date_time: record.created_at_millis / 1000,
            keys: record.keys.clone(),
            new_image: record.new_image.clone(),
            old_image: record.old_image.clone(),
            sequence_number: record.sequence_number(),
            size_bytes: record.size_bytes(),
            stream_view_type: stream.view_type.as_str().to_string(),
        },
        user_identity: record.by_service.then(|| Identity {
            principal_id: "dynamodb.amazonaws.com".to_string(),
            identity_type: "Service".to_string(),
        }),
    }
}

/// A globally unique, stable event id: 32 hex digits from the stream and the sequence
/// number.
fn event_id(stream_arn: &str, seq: u64) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in stream_arn.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}{seq:016x}")
}
