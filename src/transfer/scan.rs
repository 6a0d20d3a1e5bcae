//! Reading a table through a parallel Scan: segment `i` of `n` pages through its share of the
//! table from its own connection, and each page's LastEvaluatedKey is where that segment
//! resumes.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::client::target::{Client, Target};

/// Scan segments when the user names none: enough to keep a remote endpoint busy; on this
/// machine more only share the same cores.
pub const SEGMENTS_DEFAULT: u32 = 8;
/// Largest number of segments (DynamoDB allows 1,000,000; a copy needs far fewer).
pub const SEGMENTS_MAX: u32 = 1024;

/// One segment of a parallel scan.
pub struct SegmentReader {
    target: Arc<Target>,
    client: Client,
    table: String,
    segment: u32,
    segments: u32,
    /// Where the next page starts; None before the first page.
    cursor: Option<Value>,
    finished: bool,
}

/// One page of a segment: its items and where the segment goes on (None: it is done).
pub struct ScanPage {
    pub items: Vec<Value>,
    pub next: Option<Value>,
}

impl SegmentReader {
    /// Segment `segment` of `segments`, starting after `cursor` (a resumed copy) or at the
    /// beginning.
    pub fn new(
        target: Arc<Target>,
        table: &str,
        segment: u32,
        segments: u32,
        cursor: Option<Value>,
    ) -> Result<SegmentReader, String> {
        debug_assert!(segment < segments && segments <= SEGMENTS_MAX);
        let client = target.client()?;
        Ok(SegmentReader {
            target,
            client,
            table: table.to_string(),
            segment,
            segments,
            cursor,
            finished: false,
        })
    }

    /// The next page, or None when the segment is done. A lost connection is opened again
    /// once; other errors end the copy (which resumes from the last recorded page).
    pub fn next_page(&mut self) -> Result<Option<ScanPage>, String> {
        if self.finished {
            return Ok(None);
        }
        let mut request = json!({
            "TableName": self.table,
            "Segment": self.segment,
            "TotalSegments": self.segments,
        });
        if let Some(cursor) = &self.cursor {
            request["ExclusiveStartKey"] = cursor.clone();
        }
        let body = request.to_string();
        let answer = match self.client.call("Scan", body.as_bytes()) {
            Err(error) if error.code == "ConnectionError" => {
                self.client = self.target.client()?;
                self.client.call("Scan", body.as_bytes())
            }
            answer => answer,
        }
        .map_err(|e| format!("Scan of {}: {}: {}", self.table, e.code, e.message))?;
        let mut answer: Value = serde_json::from_slice(&answer)
            .map_err(|e| format!("Scan of {}: unreadable answer: {e}", self.table))?;
        let items = match answer["Items"].take() {
            Value::Array(items) => items,
            _ => Vec::new(),
        };
        let next = match answer["LastEvaluatedKey"].take() {
            Value::Null => None,
            key => Some(key),
        };
        self.finished = next.is_none();
        self.cursor = next.clone();
        Ok(Some(ScanPage { items, next }))
    }
}
