//! A member's replication tree (`<TableId>/replication`, one per member of a global
//! table): its outgoing queues and the stamp of each of its items. The on-disk format:
//!
//! ```text
//! queue entry   key   = 0x01, destination TableId length: u8, TableId bytes,
//!                       sequence number: u64 big-endian (the engine's, of the write)
//!               value = format: u8 (=1), stamp (`stamp`), kind: u8 (1 put, 0 delete),
//!                       item (`core::item_codec`): the new image of a put, the key
//!                       attributes of a delete
//! item stamp    key   = 0x02, the item's base key (`core::keys`)
//!               value = stamp: the stamp of the item's last write (a delete's too)
//! ```
//!
//! A queue entry is written in the same batch as the local write it ships, one per other
//! member (a sequenced put, so each queue is in commit order), and deleted in the same batch
//! as its application at the destination: an entry exists exactly while its write has not
//! reached that member. Queues are keyed by the destination's TableId, not its Region, so a
//! Region that leaves and joins again never receives what was queued for the table it had
//! before; entries for a TableId no member has any more are deleted by the replication
//! thread.
//!
//! An item's stamp is written with every write of the item (local or replicated) and kept
//! after a delete, so a replicated write older than a delete cannot bring the item back.

use shoal_model::Item;

use crate::core::item_codec::{decode_item, encode_item};
use crate::replication::stamp::Stamp;

const QUEUE_TAG: u8 = 0x01;
const STAMP_TAG: u8 = 0x02;
const ENTRY_FORMAT: u8 = 1;

/// The name of a member's replication tree.
pub fn tree_name(table_id: &str) -> String {
    format!("{table_id}/replication")
}

/// The prefix of every entry queued for the member whose TableId is `destination`.
pub fn queue_prefix(destination: &str) -> Vec<u8> {
    let id = &destination.as_bytes()[..destination.len().min(u8::MAX as usize)];
    let mut key = Vec::with_capacity(2 + id.len());
    key.push(QUEUE_TAG);
    key.push(id.len() as u8);
    key.extend_from_slice(id);
    key
}

/// The first key of every queue (and the end of them all).
pub fn queues_start() -> Vec<u8> {
    vec![QUEUE_TAG]
}

pub fn queues_end() -> Vec<u8> {
    vec![QUEUE_TAG + 1]
}

/// The destination TableId of a queue entry's key, if it is one.
pub fn queue_destination(key: &[u8]) -> Option<&str> {
    if key.first() != Some(&QUEUE_TAG) {
        return None;
    }
    let length = usize::from(*key.get(1)?);
    std::str::from_utf8(key.get(2..2 + length)?).ok()
}

/// The key of an item's stamp.
pub fn stamp_key(base_key: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + base_key.len());
    key.push(STAMP_TAG);
    key.extend_from_slice(base_key);
    key
}

/// What a queue entry carries to its destination.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The item as written.
    Put(Item),
    /// The key attributes of the deleted item.
    Delete(Item),
}

impl Change {
    /// The attributes that hold the item's key (the whole item for a put).
    pub fn item(&self) -> &Item {
        match self {
            Change::Put(item) | Change::Delete(item) => item,
        }
    }
}

/// A queue entry's value: `new_encoded` is the written item as stored (a put), or None
/// with `key_item` the deleted item's key attributes.
pub fn encode_entry(stamp: &Stamp, new_encoded: Option<&[u8]>, key_item: &Item) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + new_encoded.map_or(0, <[u8]>::len));
    out.push(ENTRY_FORMAT);
    stamp.encode_into(&mut out);
    match new_encoded {
        Some(item) => {
            out.push(1);
            out.extend_from_slice(item);
        }
        None => {
            out.push(0);
            out.extend_from_slice(&encode_item(key_item));
        }
    }
    out
}

/// Reads a queue entry's value.
pub fn decode_entry(bytes: &[u8]) -> Option<(Stamp, Change)> {
    let (&format, rest) = bytes.split_first()?;
    if format != ENTRY_FORMAT {
        return None;
    }
    let (stamp, rest) = Stamp::decode(rest)?;
    let (&kind, item) = rest.split_first()?;
    let item = decode_item(item).ok()?;
    let change = match kind {
        1 => Change::Put(item),
        0 => Change::Delete(item),
        _ => return None,
    };
    Some((stamp, change))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_model::AttributeValue;

    #[test]
    fn entries_and_keys_round_trip() {
        let mut item = Item::new();
        item.insert("pk".into(), AttributeValue::S("a".into()));
        let stamp = Stamp::now("us-west-2");
        let put = encode_entry(&stamp, Some(&encode_item(&item)), &item);
        assert_eq!(
            decode_entry(&put),
            Some((stamp.clone(), Change::Put(item.clone())))
        );
        let delete = encode_entry(&stamp, None, &item);
        assert_eq!(decode_entry(&delete), Some((stamp, Change::Delete(item))));
        assert_eq!(decode_entry(&put[..5]), None);
        assert_eq!(decode_entry(&[9]), None);

        let id = "0f1e2d3c-aaaa-bbbb-cccc-123456789abc";
        let mut key = queue_prefix(id);
        key.extend_from_slice(&7u64.to_be_bytes());
        assert_eq!(queue_destination(&key), Some(id));
        assert!(key.as_slice() > queues_start().as_slice() && key < queues_end());
        assert_eq!(queue_destination(&stamp_key(b"k")), None);
    }
}
