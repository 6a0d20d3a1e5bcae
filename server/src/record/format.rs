//! The recording file: what `shoal serve --record FILE` (or `POST /shoal/record`) writes, and
//! what `shoal bench model-from` and `shoal bench replay` read.
//!
//! # Format
//!
//! UTF-8 text, one JSON object per line (JSON lines), each with a `kind`:
//!
//! - `start`, the first line of every file: `version` (1), `time_ms` (when the file was
//!   begun, milliseconds since the Unix epoch), `part` (0 for the first file of a recording,
//!   one more for each file begun by rotation), `hashed_keys` (true when key and value texts
//!   are keyed hashes, below), `bodies` (true when each request line carries its `body`).
//! - `table`: a table as DescribeTable described it (`table`: DescribeTable's `Table`
//!   object, unchanged), written for every table when a file is begun and again after each
//!   successful CreateTable or UpdateTable; `at_us` as below.
//! - `request`: one call that reached the operation handler (requests refused earlier — bad
//!   JSON, unknown target, authentication, a fault rule that answers in its place — are not
//!   recorded):
//!   - `at_us`: microseconds from the recording's start to the call's start (a rotated
//!     file goes on counting from the same start);
//!   - `op`: the operation (`PutItem`, …); `table`: the table it names (a batch's or
//!     transaction's first); `index`: the index a Query or Scan names, if any;
//!   - `shape`: the expressions' shapes by parameter (`key_condition`, `filter`,
//!     `condition`, `update`, `projection`): the expression with every value placeholder
//!     written `?` and every name placeholder replaced by its attribute name
//!     (`status = ?`), so that neither values nor a client's placeholder names show;
//!   - `expressions`: the expression parameters as sent (`KeyConditionExpression`, …, by
//!     parameter name) and `names`, the request's ExpressionAttributeNames: an expression
//!     holds placeholders, never values, so both are kept even with hashed keys;
//!     `params`: the request's `ConsistentRead`, `Limit`, `ScanIndexForward`, `Select` and
//!     `ReturnValues`, as sent;
//!   - `pk` and `sk`: the partition and sort key values the request addresses (a Key, an
//!     Item's keys, a Query's partition-key equality; `sk` for single-item calls only),
//!     with `pk_type` and `sk_type` (`S`, `N` or `B`). A value is its text: a string as is,
//!     a number as written, binary in base64; with hashed keys, `h` and 16 hexadecimal
//!     digits of HMAC-SHA256 under a key drawn when the recording starts and never written
//!     anywhere, so equal values hash equal within one recording and nothing else can be
//!     learnt from them;
//!   - `sk_order`: for a write with a sort key, how its value compares with the previous
//!     write's sort key on the same table, compared before any hashing (numbers as numbers,
//!     strings and binary by bytes): `up`, `down` or `same` (absent for a table's first);
//!     `sk_time`: true when the sort key looks like a time (a number of seconds or
//!     milliseconds within ten years of now, or text beginning `YYYY-MM-DD`);
//!   - `values`: each scalar (`S`, `N`, `B`, `BOOL`) of ExpressionAttributeValues by
//!     placeholder name, as `{"type", "value"}` (value text, hashed with hashed keys; at most
//!     32 per request);
//!   - `index_keys`: for PutItem, the item's values of attributes that key a secondary index
//!     (not the table), by attribute name, as `{"type", "value"}` (hashed with hashed keys);
//!     `attributes`: the PutItem item's attribute names with their types (no values);
//!   - `item_bytes`: bytes of the item written (PutItem) or of the items returned (GetItem,
//!     Query, Scan, BatchGetItem, and TransactGetItems from a Shoal database, whose tables
//!     layer counts them), in DynamoDB's item size after any projection; `items`: items
//!     returned, or written by a BatchWriteItem;
//!   - `units`: the capacity units the call was charged, tables and indexes together (read
//!     units for reads, write units for writes; a failed condition's charge included),
//!     whether or not the client asked for ConsumedCapacity; absent for unmetered calls;
//!   - `latency_us`: microseconds from the handler's turn to its answer;
//!   - `error`: the exception name when the call failed (`ConditionalCheckFailedException`,
//!     …);
//!   - `parts`: for BatchWriteItem, BatchGetItem, TransactWriteItems and TransactGetItems,
//!     each item the call names, in the request's order (a batch's tables in name order), at
//!     most 100, each written as a request line of its own with `op` its kind (`Put`,
//!     `Delete`, `Update`, `ConditionCheck`, `Get`), `table`, and the members above as they
//!     apply to that item alone: `shape`, `expressions`, `names`, `params` (a BatchGetItem
//!     table's `ConsistentRead`), `pk`, `sk`, `sk_order`, `sk_time`, `values`, `index_keys`,
//!     `attributes`, and `item_bytes` for a `Put`; no `at_us`, `latency_us`, `units`,
//!     `error` or `body`, which are the call's; for BatchExecuteStatement and
//!     ExecuteTransaction, each statement as a part of `op` `Statement`, with the members
//!     of an ExecuteStatement line below (its `table` the call's `table` too);
//!   - for ExecuteStatement: `table` and `index` the statement names, `shape.statement` the
//!     statement with each string and number literal written `?` like its parameters (a
//!     map literal's attribute names kept), `values` each `?`'s value by its position
//!     (`?1`, `?2`, …: a literal's, or the parameter's), and `pk`, `sk` from a key
//!     attribute's `name = ?` (or `'name': ?` in an INSERT);
//!   - `body`: the request body, unless keys are hashed (a body holds every value).
//! - `end`, the last line of a file closed by stopping or rotation (a file whose server was
//!   killed has none): `records` (request lines in the file), `dropped` (requests not
//!   recorded while this file was open because the queue to the writer was full),
//!   `time_ms`.
//!
//! Members without a value are left out (`at_us` and `latency_us` when 0). Readers must skip kinds and members they do not
//! know: later versions may add some.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format version `start` lines carry.
pub const VERSION: u32 = 1;

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    Start(Start),
    Table(TableLine),
    Request(Box<RequestLine>),
    End(End),
}

/// The first line of a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Start {
    pub version: u32,
    pub time_ms: u64,
    pub part: u32,
    pub hashed_keys: bool,
    pub bodies: bool,
}

/// A table's description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableLine {
    pub at_us: u64,
    pub table: Value,
}

/// A scalar's type and text (or hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scalar {
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
}

/// The expression shapes of a request, by parameter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shapes {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<String>,
    /// An ExecuteStatement's statement with its literals written `?`
    /// (`shoal_expr::partiql::statement_shape`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
}

impl Shapes {
    pub fn is_empty(&self) -> bool {
        *self == Shapes::default()
    }
}

/// One recorded call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestLine {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub at_us: u64,
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    #[serde(default, skip_serializing_if = "Shapes::is_empty")]
    pub shape: Shapes,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expressions: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pk_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sk_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sk_order: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sk_time: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, Scalar>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub index_keys: BTreeMap<String, Scalar>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<f64>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub latency_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A batch's or transaction's items, each as a line of its own (`op`: the part's kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<RequestLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

fn is_zero(number: &u64) -> bool {
    *number == 0
}

/// The last line of a closed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct End {
    pub records: u64,
    pub dropped: u64,
    pub time_ms: u64,
}

/// Reads one line; None for a blank line, a kind this version does not know, or a line
/// that does not parse (the last line of a file whose server was killed may be cut short).
pub fn parse_line(text: &str) -> Option<Line> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// Appends `line` and its newline to `out`, with `body` (a request's JSON text as sent, or
/// None) as its `body` member: copied, not parsed and written again. `line.body` must be
/// None. A line break in the body becomes a space, which keeps the line one line and means
/// the same: outside strings it is whitespace, and inside strings JSON allows none.
pub fn write_request_line(
    line: Box<RequestLine>,
    body: Option<&[u8]>,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *out, &Line::Request(line))?;
    if let Some(body) = body {
        // The object's closing brace comes back after the body.
        out.pop();
        out.extend_from_slice(b",\"body\":");
        let start = out.len();
        // Copied whole, then its line breaks replaced.
        out.extend_from_slice(body);
        // A select rather than a branch, so the loop runs many bytes a step.
        for byte in &mut out[start..] {
            *byte = if matches!(*byte, b'\n' | b'\r') {
                b' '
            } else {
                *byte
            };
        }
        out.push(b'}');
    }
    out.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_line_carries_its_body_as_sent_on_one_line() {
        let body = b"{\r\n  \"TableName\": \"T\",\n  \"Key\": {\"k\": {\"S\": \"a\\nb\"}}\n}";
        let line = RequestLine {
            op: "GetItem".into(),
            table: Some("T".into()),
            ..RequestLine::default()
        };
        let mut out = Vec::new();
        write_request_line(Box::new(line.clone()), Some(body), &mut out).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        assert!(text.ends_with("}\n"), "{text}");
        let sent: Value = serde_json::from_slice(body).unwrap();
        let expected = RequestLine {
            body: Some(sent),
            ..line.clone()
        };
        assert_eq!(parse_line(text), Some(Line::Request(Box::new(expected))));
        // Without a body the line is the plain serialisation.
        out.clear();
        write_request_line(Box::new(line.clone()), None, &mut out).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        assert_eq!(parse_line(text), Some(Line::Request(Box::new(line))));
    }
}
