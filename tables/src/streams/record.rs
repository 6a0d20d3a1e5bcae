//! DynamoDB Streams storage: each change to an item of a table with an enabled stream
//! becomes one stream record, written in the SAME batch as the change (docs/DESIGN.md §3,
//! invariant 8), so after any crash the stream holds exactly the committed changes, once
//! each, in commit order.
//!
//! Every stream has a tree of its own. A record's key is the engine's sequence number of
//! the record's own batch entry, 8 bytes big-endian, filled in by the engine when the batch
//! commits (`WriteBatch::put_sequenced`): keys therefore follow commit order, and a reader
//! that has read every record up to the database's visible sequence number can never later
//! find one behind it. A shard is a range of sequence numbers (`ShardDef`), so reading a
//! shard in order is one range scan, and a shard rolls over by recording where it ends.
//!
//! Record value format (version 1, all integers little-endian):
//!
//! ```text
//! record  = version: u8 (= 1)
//!           event: u8 (1 INSERT, 2 MODIFY, 3 REMOVE)
//!           flags: u8 (bit 0: a service delete, Time to Live expiry; other bits 0)
//!           created_at_millis: u64
//!           keys: image
//!           old:  image                            present if the view type has old images
//!           new:  image                            present if the view type has new images
//! image   = length: u32 (0xFFFF_FFFF = no image), item bytes (`item_codec`)
//! ```
//!
//! The view type decides which images a record stores (KEYS_ONLY stores none); an image
//! the event has no item for (a REMOVE's new image, an INSERT's old one) is stored as
//! absent. `created_at_millis` sits at a fixed offset so retention can read it without
//! decoding the rest ([`record_created_at_millis`]).

use std::ops::Bound;

use shoal_engine::{Db, DbError, Direction, Snapshot, TreeId};
use shoal_model::{ApiError, AttributeValue, Item};

use crate::core::catalog::{ShardDef, StreamDef, StreamViewType, TableDef};
use crate::core::error::internal;
use crate::core::item_codec::{decode_item, encode_attributes, encode_item, encode_item_sized};

/// Version byte leading every stored record.
pub const RECORD_FORMAT: u8 = 1;
/// Bytes before the keys image: version, event, flags, created_at_millis.
const RECORD_HEADER_BYTES: usize = 1 + 1 + 1 + 8;
const NO_IMAGE: u32 = u32::MAX;
const FLAG_SERVICE: u8 = 1;

/// What happened to the item (DynamoDB's `eventName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventName {
    Insert,
    Modify,
    Remove,
}

impl EventName {
    pub fn as_str(self) -> &'static str {
        match self {
            EventName::Insert => "INSERT",
            EventName::Modify => "MODIFY",
            EventName::Remove => "REMOVE",
        }
    }

    fn byte(self) -> u8 {
        match self {
            EventName::Insert => 1,
            EventName::Modify => 2,
            EventName::Remove => 3,
        }
    }

    fn from_byte(byte: u8) -> Option<EventName> {
        match byte {
            1 => Some(EventName::Insert),
            2 => Some(EventName::Modify),
            3 => Some(EventName::Remove),
            _ => None,
        }
    }
}

/// One stream record as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRecord {
    /// The engine sequence number: increases within a shard in commit order.
    pub seq: u64,
    pub event_name: EventName,
    pub created_at_millis: u64,
    /// Written by the service (Time to Live), not by a client request.
    pub by_service: bool,
    /// The table's key attributes of the item.
    pub keys: Item,
    pub old_image: Option<Item>,
    pub new_image: Option<Item>,
}

impl StreamRecord {
    /// DynamoDB's `SequenceNumber`: 21 decimal digits, zero-padded so that text order is
    /// number order.
    pub fn sequence_number(&self) -> String {
        sequence_number(self.seq)
    }

    /// `SizeBytes`: the item-size rules applied to the keys and the images present.
    pub fn size_bytes(&self) -> u64 {
        [
            Some(&self.keys),
            self.old_image.as_ref(),
            self.new_image.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(|item| shoal_model::item_size_bytes(item) as u64)
        .sum()
    }
}

/// The text form of a sequence number (21 digits, SPEC-2 §1.1 asks for 21..40).
pub fn sequence_number(seq: u64) -> String {
    format!("{seq:021}")
}

/// Parses a client's SequenceNumber: decimal digits only, at most 40 of them, within what
/// Shoal issues.
pub fn parse_sequence_number(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 40 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let significant = text.trim_start_matches('0');
    if significant.is_empty() {
        return Some(0);
    }
    significant.parse().ok()
}

/// The stream record value for a change of `old` into `new` in a table whose enabled
/// stream has `view_type`, or None when the write changes nothing (no record, SPEC-2
/// §1.6). `by_service` marks a Time to Live delete.
///
/// `new_encoded` is `new` already encoded (the base item's value), which the record reuses
/// rather than encoding the item a second time.
pub fn plan_record(
    table: &TableDef,
    view_type: StreamViewType,
    old: Option<&Item>,
    new: Option<&Item>,
    new_encoded: Option<&[u8]>,
    created_at_millis: u64,
    by_service: bool,
) -> Option<Vec<u8>> {
    let event = match (old, new) {
        (None, None) => return None,
        (Some(old), Some(new)) if old == new => return None,
        (None, Some(_)) => EventName::Insert,
        (Some(_), Some(_)) => EventName::Modify,
        (Some(_), None) => EventName::Remove,
    };
    let item = new.or(old)?;
    // The key attributes, borrowed, in name order (the item encoding's order).
    let mut keys: Vec<(&str, &AttributeValue)> = table
        .key
        .names()
        .filter_map(|name| item.get_key_value(name).map(|(n, v)| (n.as_str(), v)))
        .collect();
    keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let image_bytes = new_encoded.map_or(64, <[u8]>::len);
    let mut value = Vec::with_capacity(RECORD_HEADER_BYTES + 3 * image_bytes);
    value.push(RECORD_FORMAT);
    value.push(event.byte());
    value.push(if by_service { FLAG_SERVICE } else { 0 });
    value.extend_from_slice(&created_at_millis.to_le_bytes());
    push_encoded(&mut value, &encode_attributes(keys.into_iter(), 0));
    if view_type.has_old_image() {
        // Sized like the new image: an update rarely changes an item's size much.
        match old {
            Some(old) => push_encoded(&mut value, &encode_item_sized(old, image_bytes as u64)),
            None => push_image(&mut value, None),
        }
    }
    if view_type.has_new_image() {
        match (new, new_encoded) {
            (Some(_), Some(bytes)) => push_encoded(&mut value, bytes),
            _ => push_image(&mut value, new),
        }
    }
    Some(value)
}

fn push_encoded(value: &mut Vec<u8>, bytes: &[u8]) {
    // An item is at most 400 KB: its encoding fits a u32 length.
    value.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    value.extend_from_slice(bytes);
}

fn push_image(value: &mut Vec<u8>, image: Option<&Item>) {
    match image {
        None => value.extend_from_slice(&NO_IMAGE.to_le_bytes()),
        Some(item) => push_encoded(value, &encode_item(item)),
    }
}

/// The creation time of a stored record, read at its fixed offset; None if the bytes are
/// not a record of this format.
pub fn record_created_at_millis(value: &[u8]) -> Option<u64> {
    if value.len() < RECORD_HEADER_BYTES || value[0] != RECORD_FORMAT {
        return None;
    }
    let bytes: [u8; 8] = value[3..11].try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// Why a stored record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("undecodable stream record: {0}")]
pub struct RecordError(&'static str);

/// Decodes a stored record with sequence number `seq` of a stream of `view_type`.
pub fn decode_record(
    seq: u64,
    view_type: StreamViewType,
    value: &[u8],
) -> Result<StreamRecord, RecordError> {
    let created_at_millis =
        record_created_at_millis(value).ok_or(RecordError("bad header or version"))?;
    let event_name = EventName::from_byte(value[1]).ok_or(RecordError("bad event"))?;
    let by_service = value[2] & FLAG_SERVICE != 0;
    let mut rest = &value[RECORD_HEADER_BYTES..];
    let keys = take_image(&mut rest)?.ok_or(RecordError("missing keys"))?;
    let old_image = if view_type.has_old_image() {
        take_image(&mut rest)?
    } else {
        None
    };
    let new_image = if view_type.has_new_image() {
        take_image(&mut rest)?
    } else {
        None
    };
    if !rest.is_empty() {
        return Err(RecordError("trailing bytes"));
    }
    Ok(StreamRecord {
        seq,
        event_name,
        created_at_millis,
        by_service,
        keys,
        old_image,
        new_image,
    })
}

fn take_image(rest: &mut &[u8]) -> Result<Option<Item>, RecordError> {
    let length_bytes: [u8; 4] = rest
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or(RecordError("truncated image length"))?;
    *rest = &rest[4..];
    let length = u32::from_le_bytes(length_bytes);
    if length == NO_IMAGE {
        return Ok(None);
    }
    let length = length as usize;
    let bytes = rest.get(..length).ok_or(RecordError("truncated image"))?;
    *rest = &rest[length..];
    decode_item(bytes)
        .map(Some)
        .map_err(|_| RecordError("undecodable image"))
}

/// The key of the record with sequence number `seq`.
pub fn record_key(seq: u64) -> [u8; 8] {
    seq.to_be_bytes()
}

fn seq_of_key(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.try_into().ok()?))
}

/// What one read of a shard returned.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardRead {
    pub records: Vec<StreamRecord>,
    /// The sequence number the next read starts from, or None once a closed shard has been
    /// read to its end.
    pub next_from_seq: Option<u64>,
    /// Records were skipped because they are past retention (the reader is behind the
    /// trim horizon).
    pub trimmed: bool,
}

/// Reads the records of `shard` of `stream` from sequence number `from_seq` on, at most
/// `limit` of them and stopping before `size_bytes_max` is passed (one record is always
/// returned when one is there), as of `snapshot`. Records created before
/// `retained_from_millis` are past retention: never returned.
#[allow(clippy::too_many_arguments)]
pub fn read_shard(
    db: &Db,
    stream: &StreamDef,
    shard: &ShardDef,
    from_seq: u64,
    limit: usize,
    size_bytes_max: u64,
    retained_from_millis: u64,
    snapshot: &Snapshot,
) -> Result<ShardRead, ApiError> {
    debug_assert!(limit > 0, "a read asks for at least one record");
    // Everything up to the snapshot's sequence number is committed; later sequence numbers
    // may still be in flight, so a read never claims to have passed them.
    let visible = snapshot.seq();
    let upper_seq = shard.end_seq.map_or(visible, |end| end.min(visible));
    let from_seq = from_seq.max(shard.start_seq);
    let closed_and_passed = |next: u64| shard.end_seq.is_some_and(|end| next > end);
    let mut read = ShardRead {
        records: Vec::new(),
        next_from_seq: None,
        trimmed: false,
    };
    if from_seq > upper_seq {
        read.next_from_seq = (!closed_and_passed(from_seq)).then_some(from_seq);
        return Ok(read);
    }
    let (lower, upper) = (record_key(from_seq), record_key(upper_seq));
    let mut iter = db
        .iter(
            stream.tree,
            Bound::Included(&lower[..]),
            Bound::Included(&upper[..]),
            Direction::Forward,
            Some(snapshot),
        )
        .map_err(stream_read_error)?;
    let mut size_bytes = 0u64;
    // Where the next read starts: after everything up to `upper_seq` unless a limit stops
    // the walk earlier.
    let mut next = upper_seq + 1;
    while iter.advance().map_err(internal)? {
        let seq = seq_of_key(iter.key()).ok_or_else(|| internal("malformed stream key"))?;
        if read.records.len() >= limit {
            next = seq;
            break;
        }
        let record = decode_record(seq, stream.view_type, iter.value()).map_err(internal)?;
        if record.created_at_millis < retained_from_millis {
            read.trimmed = true;
            continue;
        }
        let record_bytes = record.size_bytes();
        if !read.records.is_empty() && size_bytes + record_bytes > size_bytes_max {
            next = seq;
            break;
        }
        size_bytes += record_bytes;
        read.records.push(record);
    }
    read.next_from_seq = (!closed_and_passed(next)).then_some(next);
    Ok(read)
}

/// The first record of `shard` still within retention, if any (the trim horizon).
pub fn first_retained_seq(
    db: &Db,
    stream: &StreamDef,
    shard: &ShardDef,
    retained_from_millis: u64,
    snapshot: &Snapshot,
) -> Result<Option<u64>, ApiError> {
    let lower = record_key(shard.start_seq);
    let upper = record_key(shard.end_seq.unwrap_or(u64::MAX));
    let mut iter = db
        .iter(
            stream.tree,
            Bound::Included(&lower[..]),
            Bound::Included(&upper[..]),
            Direction::Forward,
            Some(snapshot),
        )
        .map_err(stream_read_error)?;
    while iter.advance().map_err(internal)? {
        let created = record_created_at_millis(iter.value())
            .ok_or_else(|| internal("malformed stream record"))?;
        if created >= retained_from_millis {
            return Ok(seq_of_key(iter.key()));
        }
    }
    Ok(None)
}

fn stream_read_error(error: DbError) -> ApiError {
    match error {
        // The stream's tree went away (its table was deleted) since the catalog was read.
        DbError::UnknownTree(_) => ApiError::new(
            shoal_model::ErrorCode::ResourceNotFoundException,
            "Requested resource not found: Stream does not exist",
        ),
        other => internal(other),
    }
}

/// The compaction filter that drops stream records past retention: stream trees hold each
/// key once (its own sequence number) and never overwrite or delete it, which is what makes
/// dropping them in compaction safe.
#[derive(Debug)]
pub struct StreamRetention {
    pub retention_millis: u64,
    /// The trees of every stream, kept current by the catalog reload.
    pub trees: parking_lot::RwLock<std::collections::BTreeSet<TreeId>>,
}

impl StreamRetention {
    pub fn new(retention_millis: u64) -> StreamRetention {
        StreamRetention {
            retention_millis,
            trees: Default::default(),
        }
    }

    /// The creation time before which records are past retention, now.
    pub fn retained_from_millis(&self) -> u64 {
        crate::core::clock::now_millis().saturating_sub(self.retention_millis)
    }

    /// Whether a stored entry of `tree` is a record past retention.
    pub fn is_expired(&self, tree: TreeId, value: &[u8]) -> bool {
        if !self.trees.read().contains(&tree) {
            return false;
        }
        record_created_at_millis(value).is_some_and(|created| created < self.retained_from_millis())
    }
}

impl shoal_engine::CompactionFilter for StreamRetention {
    fn drop_entry(&self, tree: TreeId, _user_key: &[u8], value: &[u8]) -> bool {
        self.is_expired(tree, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_model::AttributeValue;

    fn item(pairs: &[(&str, &str)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), AttributeValue::S(v.to_string())))
            .collect()
    }

    fn table() -> TableDef {
        use crate::core::catalog::{BillingMode, KeyAttribute, KeySchema, CATALOG_FORMAT};
        use shoal_model::ScalarType;
        TableDef {
            format: CATALOG_FORMAT,
            name: "T".into(),
            id: "id".into(),
            created_at_millis: 0,
            key: KeySchema::new(KeyAttribute::new("pk", ScalarType::S), None),
            attribute_definitions: vec![],
            billing: BillingMode::PayPerRequest,
            tree: 1,
            local_indexes: vec![],
            global_indexes: vec![],
            streams: vec![],
            time_to_live: None,
            time_to_live_changed_at_millis: None,
            settings: Default::default(),
            region: None,
            replication: None,
        }
    }

    #[test]
    fn records_round_trip_with_the_images_the_view_type_asks_for() {
        let old = item(&[("pk", "a"), ("x", "1")]);
        let new = item(&[("pk", "a"), ("x", "2")]);
        for view in StreamViewType::ALL {
            let value =
                plan_record(&table(), view, Some(&old), Some(&new), None, 1234, false).unwrap();
            let record = decode_record(7, view, &value).unwrap();
            assert_eq!(record.event_name, EventName::Modify);
            assert_eq!(record.keys, item(&[("pk", "a")]));
            assert_eq!(record.created_at_millis, 1234);
            assert_eq!(record_created_at_millis(&value), Some(1234));
            assert_eq!(record.old_image.is_some(), view.has_old_image(), "{view:?}");
            assert_eq!(record.new_image.is_some(), view.has_new_image(), "{view:?}");
            if view == StreamViewType::NewAndOldImages {
                assert_eq!(record.old_image.as_ref(), Some(&old));
                assert_eq!(record.new_image.as_ref(), Some(&new));
            }
        }
        let removed = plan_record(
            &table(),
            StreamViewType::NewAndOldImages,
            Some(&old),
            None,
            None,
            5,
            true,
        )
        .unwrap();
        let record = decode_record(8, StreamViewType::NewAndOldImages, &removed).unwrap();
        assert_eq!(record.event_name, EventName::Remove);
        assert!(record.by_service);
        assert_eq!(record.new_image, None);
        assert_eq!(record.old_image, Some(old.clone()));
    }

    #[test]
    fn no_record_for_a_change_that_changes_nothing() {
        let same = item(&[("pk", "a"), ("x", "1")]);
        let view = StreamViewType::NewAndOldImages;
        assert!(plan_record(
            &table(),
            view,
            Some(&same),
            Some(&same.clone()),
            None,
            1,
            false
        )
        .is_none());
        assert!(plan_record(&table(), view, None, None, None, 1, false).is_none());
        let inserted = plan_record(&table(), view, None, Some(&same), None, 1, false).unwrap();
        assert_eq!(
            decode_record(1, view, &inserted).unwrap().event_name,
            EventName::Insert
        );
    }

    #[test]
    fn sequence_numbers_are_fixed_width_digits_that_parse_back() {
        assert_eq!(sequence_number(42), "000000000000000000042");
        assert_eq!(sequence_number(u64::MAX).len(), 21);
        assert_eq!(parse_sequence_number("000000000000000000042"), Some(42));
        assert_eq!(parse_sequence_number("42"), Some(42));
        assert_eq!(parse_sequence_number("0"), Some(0));
        assert_eq!(parse_sequence_number(""), None);
        assert_eq!(parse_sequence_number("12a"), None);
        assert_eq!(parse_sequence_number(&"9".repeat(41)), None);
        assert_eq!(parse_sequence_number(&"9".repeat(30)), None);
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let value = plan_record(
            &table(),
            StreamViewType::NewAndOldImages,
            None,
            Some(&item(&[("pk", "a")])),
            None,
            1,
            false,
        )
        .unwrap();
        for cut in 0..value.len() {
            assert!(decode_record(1, StreamViewType::NewAndOldImages, &value[..cut]).is_err());
        }
        let mut bad = value.clone();
        bad[1] = 9;
        assert!(decode_record(1, StreamViewType::NewAndOldImages, &bad).is_err());
    }
}
