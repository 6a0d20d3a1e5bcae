//! The binary encoding of items as stored in the LSM trees (base items, LSI and GSI
//! entries).
//!
//! An item is stored as the value of its key; the format is compact, fast to decode and
//! self-describing per value:
//!
//! ```text
//! item   = FORMAT_VERSION: u8 (=1), count: varint, (name, value)*      names in ascending order
//! name   = length: varint, UTF-8 bytes
//! value  = tag: u8, payload
//!   tag 1 S     length: varint, UTF-8 bytes
//!   tag 2 N     number
//!   tag 3 B     length: varint, bytes
//!   tag 4 BOOL  one byte, 0 or 1
//!   tag 5 NULL  nothing
//!   tag 6 M     count: varint, (name, value)*
//!   tag 7 L     count: varint, value*
//!   tag 8 SS    count: varint, (length: varint, UTF-8 bytes)*
//!   tag 9 NS    count: varint, number*
//!   tag 10 BS   count: varint, (length: varint, bytes)*
//! number = sign: u8 (0 positive, 1 negative), exponent: zigzag varint (i32),
//!          mantissa: varint (u128, no trailing decimal zeros; 0 for zero)
//! varint = LEB128, little-endian groups of 7 bits
//! ```
//!
//! Decoding checks every length against the bytes left, the nesting depth, UTF-8 and the
//! number invariants, and reports a [`CodecError`] instead of panicking: values come from
//! checksummed blocks, so a failure here means a bug or a format mismatch, never data to
//! trust.

use std::cell::RefCell;
use std::collections::BTreeMap;

use shoal_model::json::encode_base64;

use crate::api::items::JsonItem;
use shoal_model::size::{CONTAINER_OVERHEAD_BYTES, ELEMENT_OVERHEAD_BYTES};
use shoal_model::{json_text, AttributeValue, Item, Number};

/// Version byte leading every encoded item.
pub const FORMAT_VERSION: u8 = 1;

/// Nesting the decoder accepts (DynamoDB allows 32 levels; a little slack for safety).
const DEPTH_MAX: usize = 40;

/// Why stored bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("undecodable stored item at byte {offset}: {detail}")]
pub struct CodecError {
    pub offset: usize,
    pub detail: &'static str,
}

/// Encodes an item.
pub fn encode_item(item: &Item) -> Vec<u8> {
    encode_item_sized(item, 0)
}

/// [`encode_item`] for an item whose DynamoDB size (`shoal_model::item_size_bytes`) the caller
/// already knows: the output is allocated once at about its final length instead of
/// growing from 64 bytes (five reallocations and copies for a 1 KB item).
pub fn encode_item_sized(item: &Item, size_bytes: u64) -> Vec<u8> {
    encode_attributes(
        item.iter().map(|(name, value)| (name.as_str(), value)),
        size_bytes,
    )
}

/// Per attribute, what the encoding may add to its DynamoDB size: tag, length varints, a
/// number's sign and exponent. A capacity estimate only; the output grows past it if need be.
const ENCODED_BYTES_PER_ATTRIBUTE_EXTRA: usize = 8;

/// Encodes an item given as its attributes in name order (as an [`Item`] iterates), the
/// form index entries borrow their attributes in. `size_bytes` is the item's DynamoDB size
/// if known (0 if not), to allocate the output once.
pub fn encode_attributes<'a>(
    attributes: impl ExactSizeIterator<Item = (&'a str, &'a AttributeValue)>,
    size_bytes: u64,
) -> Vec<u8> {
    let estimate = usize::try_from(size_bytes)
        .unwrap_or(usize::MAX)
        .saturating_add(attributes.len() * ENCODED_BYTES_PER_ATTRIBUTE_EXTRA)
        .saturating_add(8);
    let mut out = Vec::with_capacity(estimate.clamp(64, shoal_model::ITEM_SIZE_BYTES_MAX * 2));
    out.push(FORMAT_VERSION);
    put_varint(&mut out, attributes.len() as u128);
    let mut previous: Option<&str> = None;
    for (name, value) in attributes {
        debug_assert!(
            previous.is_none_or(|p| p < name),
            "attributes must come in strictly increasing name order"
        );
        previous = Some(name);
        put_bytes(&mut out, name.as_bytes());
        encode_value(&mut out, value);
    }
    out
}

/// Maps with at most this many names are decoded by inserting each; larger ones are built
/// from their sorted list in one go. Measured on 1 KB items (tables_peers): the bulk build
/// made 10-attribute items 3-7% faster to read (GetItem, Query of 50) and 6-attribute index
/// entries ~7% slower (the list is one more allocation).
const SMALL_MAP_ENTRIES_MAX: usize = 8;

/// Decodes an item encoded by [`encode_item`].
pub fn decode_item(bytes: &[u8]) -> Result<Item, CodecError> {
    let mut reader = Reader { bytes, offset: 0 };
    if reader.byte()? != FORMAT_VERSION {
        return Err(reader.error("unknown item format version"));
    }
    let item = reader.map(0)?;
    if reader.offset != bytes.len() {
        return Err(reader.error("trailing bytes after the item"));
    }
    Ok(item)
}

fn encode_value(out: &mut Vec<u8>, value: &AttributeValue) {
    match value {
        AttributeValue::S(s) => {
            out.push(1);
            put_bytes(out, s.as_bytes());
        }
        AttributeValue::N(n) => {
            out.push(2);
            put_number(out, n);
        }
        AttributeValue::B(b) => {
            out.push(3);
            put_bytes(out, b);
        }
        AttributeValue::Bool(b) => {
            out.push(4);
            out.push(u8::from(*b));
        }
        AttributeValue::Null => out.push(5),
        AttributeValue::M(map) => {
            out.push(6);
            put_varint(out, map.len() as u128);
            for (name, v) in map {
                put_bytes(out, name.as_bytes());
                encode_value(out, v);
            }
        }
        AttributeValue::L(list) => {
            out.push(7);
            put_varint(out, list.len() as u128);
            for v in list {
                encode_value(out, v);
            }
        }
        AttributeValue::Ss(set) => {
            out.push(8);
            put_varint(out, set.len() as u128);
            for s in set {
                put_bytes(out, s.as_bytes());
            }
        }
        AttributeValue::Ns(set) => {
            out.push(9);
            put_varint(out, set.len() as u128);
            for n in set {
                put_number(out, n);
            }
        }
        AttributeValue::Bs(set) => {
            out.push(10);
            put_varint(out, set.len() as u128);
            for b in set {
                put_bytes(out, b);
            }
        }
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u128);
    out.extend_from_slice(bytes);
}

fn put_number(out: &mut Vec<u8>, n: &Number) {
    out.push(u8::from(n.is_negative()));
    let e = n.exponent();
    put_varint(out, ((e << 1) ^ (e >> 31)) as u32 as u128);
    put_varint(out, n.mantissa());
}

struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, detail: &'static str) -> CodecError {
        CodecError {
            offset: self.offset,
            detail,
        }
    }

    fn byte(&mut self) -> Result<u8, CodecError> {
        let b = *self
            .bytes
            .get(self.offset)
            .ok_or_else(|| self.error("truncated"))?;
        self.offset += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u128, CodecError> {
        let mut value = 0u128;
        for shift in (0..128).step_by(7) {
            let b = self.byte()?;
            value |= u128::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.error("varint too long"))
    }

    /// A count of following elements; each takes at least one byte, which bounds it.
    fn count(&mut self) -> Result<usize, CodecError> {
        let n = self.varint()?;
        if n > (self.bytes.len() - self.offset) as u128 {
            return Err(self.error("count exceeds the bytes left"));
        }
        Ok(n as usize)
    }

    fn slice(&mut self) -> Result<&'a [u8], CodecError> {
        let len = self.count()?;
        let slice = &self.bytes[self.offset..self.offset + len];
        self.offset += len;
        Ok(slice)
    }

    /// Inlined like [`Reader::value`], for the same reason: the string is built where its
    /// caller keeps it (Scan 39.6-40.1 us against 41.2-41.8 in alternating runs).
    #[inline(always)]
    fn string(&mut self) -> Result<String, CodecError> {
        Ok(self.str()?.to_owned())
    }

    /// A length-prefixed UTF-8 string, borrowed from the bytes.
    #[inline(always)]
    fn str(&mut self) -> Result<&'a str, CodecError> {
        let start = self.offset;
        let bytes = self.slice()?;
        // simdutf8 validates with SIMD: reading items is mostly copying their strings, and
        // std's validation was a sixth of that (Scan of 1 KB items, tables_peers).
        simdutf8::basic::from_utf8(bytes).map_err(|_| CodecError {
            offset: start,
            detail: "invalid UTF-8",
        })
    }

    fn number(&mut self) -> Result<Number, CodecError> {
        let negative = match self.byte()? {
            0 => false,
            1 => true,
            _ => return Err(self.error("bad number sign")),
        };
        let zigzag = self.varint()?;
        let zigzag =
            u32::try_from(zigzag).map_err(|_| self.error("number exponent out of range"))?;
        let exponent = ((zigzag >> 1) as i32) ^ -((zigzag & 1) as i32);
        let mantissa = self.varint()?;
        Number::from_parts(negative, mantissa, exponent).ok_or_else(|| self.error("invalid number"))
    }

    /// A count and that many (name, value) pairs, values at nesting `value_depth`.
    fn map(&mut self, value_depth: usize) -> Result<BTreeMap<String, AttributeValue>, CodecError> {
        let count = self.count()?;
        if count <= SMALL_MAP_ENTRIES_MAX {
            let mut map = BTreeMap::new();
            for _ in 0..count {
                let name = self.string()?;
                map.insert(name, self.value(value_depth)?);
            }
            return Ok(map);
        }
        // Collected, then built in one go: names are stored sorted, so `from_iter` finds
        // them in order and builds the tree bottom-up. Repeated names keep the last value,
        // as inserts would.
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let name = self.string()?;
            entries.push((name, self.value(value_depth)?));
        }
        Ok(BTreeMap::from_iter(entries))
    }

    /// Scalars are decoded here, inlined into the caller's loop, so the value is built where
    /// the map or list keeps it; the rest goes to [`Reader::composite_value`]. Returning
    /// every value through a call cost Scan more than its string copies (the profile's
    /// hottest instructions were reloads of just-returned values).
    #[inline(always)]
    fn value(&mut self, depth: usize) -> Result<AttributeValue, CodecError> {
        if depth > DEPTH_MAX {
            return Err(self.error("nesting too deep"));
        }
        Ok(match self.byte()? {
            1 => AttributeValue::S(self.string()?),
            2 => AttributeValue::N(self.number()?),
            3 => AttributeValue::B(self.slice()?.to_vec()),
            4 => match self.byte()? {
                0 => AttributeValue::Bool(false),
                1 => AttributeValue::Bool(true),
                _ => return Err(self.error("bad boolean")),
            },
            5 => AttributeValue::Null,
            tag => self.composite_value(tag, depth)?,
        })
    }

    /// Maps, lists and sets (tags 6 to 10), at nesting `depth`.
    #[inline(never)]
    fn composite_value(&mut self, tag: u8, depth: usize) -> Result<AttributeValue, CodecError> {
        Ok(match tag {
            6 => AttributeValue::M(self.map(depth + 1)?),
            7 => {
                let count = self.count()?;
                let mut list = Vec::with_capacity(count);
                for _ in 0..count {
                    list.push(self.value(depth + 1)?);
                }
                AttributeValue::L(list)
            }
            8 => {
                let count = self.count()?;
                let mut set = Vec::with_capacity(count);
                for _ in 0..count {
                    set.push(self.string()?);
                }
                AttributeValue::Ss(set)
            }
            9 => {
                let count = self.count()?;
                let mut set = Vec::with_capacity(count);
                for _ in 0..count {
                    set.push(self.number()?);
                }
                AttributeValue::Ns(set)
            }
            10 => {
                let count = self.count()?;
                let mut set = Vec::with_capacity(count);
                for _ in 0..count {
                    set.push(self.slice()?.to_vec());
                }
                AttributeValue::Bs(set)
            }
            _ => return Err(self.error("unknown value tag")),
        })
    }
}

/// What a read makes of a stored item: the decoded [`Item`] (the Rust API), or its JSON
/// ([`JsonItem`], what a server answers). Items made in memory (projections) convert from
/// an [`Item`].
pub(crate) trait ItemForm: From<Item> + serde::Serialize {
    fn from_stored(bytes: &[u8]) -> Result<Self, CodecError>;
    /// Its DynamoDB size (`shoal_model::item_size_bytes`).
    fn size_bytes(&self) -> u64;
    /// The item itself if it is held decoded (a page's last key is read from it without
    /// decoding the stored bytes again).
    fn decoded(&self) -> Option<&Item>;
}

impl ItemForm for Item {
    fn from_stored(bytes: &[u8]) -> Result<Item, CodecError> {
        decode_item(bytes)
    }

    fn size_bytes(&self) -> u64 {
        shoal_model::item_size_bytes(self) as u64
    }

    fn decoded(&self) -> Option<&Item> {
        Some(self)
    }
}

impl ItemForm for JsonItem {
    fn from_stored(bytes: &[u8]) -> Result<JsonItem, CodecError> {
        let (json, size_bytes) = item_json(bytes)?;
        Ok(JsonItem::Written { json, size_bytes })
    }

    fn size_bytes(&self) -> u64 {
        match self {
            JsonItem::Written { size_bytes, .. } => *size_bytes,
            JsonItem::Built(item) => item.size_bytes(),
        }
    }

    fn decoded(&self) -> Option<&Item> {
        match self {
            JsonItem::Written { .. } => None,
            JsonItem::Built(item) => Some(item),
        }
    }
}

/// The DynamoDB JSON of a stored item and its DynamoDB size
/// (`shoal_model::item_size_bytes`), written in one walk of the bytes with no [`Item`] built:
/// byte for byte `json_text::to_vec(&decode_item(bytes)?)`, so a read answering over JSON
/// skips building the item's maps and strings only to write them out again.
///
/// Bytes the walk does not take as they are — anything [`decode_item`] would refuse, and
/// names out of order or repeated, which only corruption leaves and which decoding sorts —
/// are handed to [`decode_item`] and the item it builds written out: every byte string
/// answers, or fails, exactly as it did through the decoder.
pub fn item_json(bytes: &[u8]) -> Result<(String, u64), CodecError> {
    // JSON adds a type tag and quotes per value to the stored bytes.
    let mut out = json_buffer(bytes.len() + bytes.len() / 2 + 16);
    let mut reader = Reader { bytes, offset: 0 };
    let transcoded = reader.item_json(&mut out);
    // The walk copies strings unchecked, so this is the one check of their UTF-8: one pass
    // over the answer rather than one call per string.
    if let (Ok(size_bytes), Ok(json)) = (transcoded, String::from_utf8(out)) {
        return Ok((json, size_bytes as u64));
    }
    let item = decode_item(bytes)?;
    let json = shoal_model::json_text::to_vec(&item)
        .ok()
        .and_then(|json| String::from_utf8(json).ok())
        .ok_or(CodecError {
            offset: 0,
            detail: "item not writable as JSON",
        })?;
    Ok((json, shoal_model::item_size_bytes(&item) as u64))
}

thread_local! {
    /// Buffers of items' JSON freed on this thread ([`recycle_json_buffer`]), for the next
    /// [`item_json`] to write into.
    static FREE_JSON_BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Freed buffers a thread keeps: a page of a Query or Scan answers up to its Limit's
/// items, 50 in `shoal bench`.
const FREE_JSON_BUFFERS_MAX: usize = 64;

/// The largest buffer kept for reuse, so a thread keeps at most 512 KiB.
const FREE_JSON_BUFFER_CAPACITY_BYTES_MAX: usize = 8 * 1024;

/// An empty buffer of at least `capacity_bytes`, reused if this thread freed one.
fn json_buffer(capacity_bytes: usize) -> Vec<u8> {
    let mut buffer = FREE_JSON_BUFFERS
        .with(|free| free.borrow_mut().pop())
        .unwrap_or_default();
    buffer.reserve(capacity_bytes);
    buffer
}

/// Gives back the buffer of an item's JSON once it has been answered. Why: a page's items
/// were each written into a buffer of their own, all freed together once the answer was
/// written; with freed memory returned to the OS at once (`shoal serve`'s allocator
/// setting), every page faulted its buffers' memory back in, which doubled a Scan's server
/// CPU. Kept buffers are bounded in number and size.
pub(crate) fn recycle_json_buffer(mut buffer: Vec<u8>) {
    if buffer.capacity() > FREE_JSON_BUFFER_CAPACITY_BYTES_MAX {
        return;
    }
    buffer.clear();
    FREE_JSON_BUFFERS.with(|free| {
        let mut free = free.borrow_mut();
        if free.len() < FREE_JSON_BUFFERS_MAX {
            free.push(buffer);
        }
    });
}

impl Reader<'_> {
    /// [`decode_item`]'s checks, writing JSON instead of building the item; returns its size.
    fn item_json(&mut self, out: &mut Vec<u8>) -> Result<usize, CodecError> {
        if self.byte()? != FORMAT_VERSION {
            return Err(self.error("unknown item format version"));
        }
        // An item counts its names and values only, with no overhead of a map.
        let (_, size) = self.map_json(out, 0)?;
        if self.offset != self.bytes.len() {
            return Err(self.error("trailing bytes after the item"));
        }
        Ok(size)
    }

    /// A map as a JSON object, values at nesting `value_depth`; returns its number of
    /// members and their size (names and values).
    fn map_json(
        &mut self,
        out: &mut Vec<u8>,
        value_depth: usize,
    ) -> Result<(usize, usize), CodecError> {
        let count = self.count()?;
        out.push(b'{');
        let mut size = 0;
        let mut previous: Option<&[u8]> = None;
        for index in 0..count {
            // Bytes compare as their strings do; `item_json` checks the output's UTF-8.
            let name = self.slice()?;
            // Stored names ascend; anything else is left to the decoder (see `item_json`).
            if previous.is_some_and(|previous| previous >= name) {
                return Err(self.error("names out of order"));
            }
            previous = Some(name);
            if index > 0 {
                out.push(b',');
            }
            json_text::write_utf8_string(out, name);
            out.push(b':');
            size += name.len() + self.value_json(out, value_depth)?;
        }
        out.push(b'}');
        Ok((count, size))
    }

    /// A value as DynamoDB JSON (`{"S":"…"}`, …), at nesting `depth`; returns its size.
    fn value_json(&mut self, out: &mut Vec<u8>, depth: usize) -> Result<usize, CodecError> {
        if depth > DEPTH_MAX {
            return Err(self.error("nesting too deep"));
        }
        let size = match self.byte()? {
            1 => {
                out.extend_from_slice(b"{\"S\":");
                self.string_json(out)?
            }
            2 => {
                out.extend_from_slice(b"{\"N\":");
                self.number_json(out)?
            }
            3 => {
                out.extend_from_slice(b"{\"B\":");
                self.binary_json(out)?
            }
            4 => {
                let flag = match self.byte()? {
                    0 => b"false".as_slice(),
                    1 => b"true",
                    _ => return Err(self.error("bad boolean")),
                };
                out.extend_from_slice(b"{\"BOOL\":");
                out.extend_from_slice(flag);
                1
            }
            5 => {
                out.extend_from_slice(b"{\"NULL\":true");
                1
            }
            6 => {
                out.extend_from_slice(b"{\"M\":");
                let (count, members_size) = self.map_json(out, depth + 1)?;
                CONTAINER_OVERHEAD_BYTES + count * ELEMENT_OVERHEAD_BYTES + members_size
            }
            7 => {
                out.extend_from_slice(b"{\"L\":");
                let (count, elements_size) =
                    self.elements_json(out, |reader, out| reader.value_json(out, depth + 1))?;
                CONTAINER_OVERHEAD_BYTES + count * ELEMENT_OVERHEAD_BYTES + elements_size
            }
            8 => {
                out.extend_from_slice(b"{\"SS\":");
                self.elements_json(out, Self::string_json)?.1
            }
            9 => {
                out.extend_from_slice(b"{\"NS\":");
                self.elements_json(out, Self::number_json)?.1
            }
            10 => {
                out.extend_from_slice(b"{\"BS\":");
                self.elements_json(out, Self::binary_json)?.1
            }
            _ => return Err(self.error("unknown value tag")),
        };
        out.push(b'}');
        Ok(size)
    }

    /// A count and that many elements as a JSON array, each written by `element`, which
    /// returns its size; returns the count and the sizes' sum.
    fn elements_json(
        &mut self,
        out: &mut Vec<u8>,
        mut element: impl FnMut(&mut Self, &mut Vec<u8>) -> Result<usize, CodecError>,
    ) -> Result<(usize, usize), CodecError> {
        let count = self.count()?;
        out.push(b'[');
        let mut size = 0;
        for index in 0..count {
            if index > 0 {
                out.push(b',');
            }
            size += element(self, out)?;
        }
        out.push(b']');
        Ok((count, size))
    }

    /// A string as a JSON string; returns its size.
    fn string_json(&mut self, out: &mut Vec<u8>) -> Result<usize, CodecError> {
        let text = self.slice()?;
        json_text::write_utf8_string(out, text);
        Ok(text.len())
    }

    /// Bytes as the JSON string of their base64; returns their size.
    fn binary_json(&mut self, out: &mut Vec<u8>) -> Result<usize, CodecError> {
        let bytes = self.slice()?;
        json_text::write_string(out, &encode_base64(bytes));
        Ok(bytes.len())
    }

    /// A number as the JSON string of its canonical text; returns its size.
    fn number_json(&mut self, out: &mut Vec<u8>) -> Result<usize, CodecError> {
        let number = self.number()?;
        json_text::write_display_string(out, &number)
            .map_err(|_| self.error("number not writable"))?;
        Ok(number.byte_size())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn number() -> impl Strategy<Value = Number> {
        (any::<bool>(), 0u128..10u128.pow(38), -130i32..=125).prop_filter_map(
            "in range",
            |(neg, m, e)| {
                let text = format!("{}{}e{}", if neg { "-" } else { "" }, m, e);
                Number::parse(&text).ok()
            },
        )
    }

    fn value() -> impl Strategy<Value = AttributeValue> {
        let leaf = prop_oneof![
            ".{0,8}".prop_map(AttributeValue::S),
            number().prop_map(AttributeValue::N),
            prop::collection::vec(any::<u8>(), 0..8).prop_map(AttributeValue::B),
            any::<bool>().prop_map(AttributeValue::Bool),
            Just(AttributeValue::Null),
            prop::collection::vec(".{0,4}", 1..4).prop_map(AttributeValue::Ss),
            prop::collection::vec(number(), 1..4).prop_map(AttributeValue::Ns),
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..4), 1..4)
                .prop_map(AttributeValue::Bs),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(AttributeValue::L),
                prop::collection::btree_map(".{0,4}", inner, 0..4).prop_map(AttributeValue::M),
            ]
        })
    }

    proptest! {
        #[test]
        fn round_trips(item in prop::collection::btree_map(".{1,6}", value(), 0..6)) {
            let bytes = encode_item(&item);
            let decoded = decode_item(&bytes).unwrap();
            prop_assert_eq!(&decoded, &item);
            // Same text for numbers, not just equal values.
            prop_assert_eq!(format!("{decoded:?}"), format!("{item:?}"));
        }

        #[test]
        fn never_panics_on_garbage(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_item(&bytes);
        }
    }

    /// Text that needs every escape JSON has, and text that needs none, in runs longer and
    /// shorter than the string writer's 8- and 32-byte blocks.
    fn json_text_string() -> impl Strategy<Value = String> {
        let character = prop_oneof![
            4 => Just('x'),
            1 => (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('x')),
            1 => prop::sample::select(vec!['"', '\\', '/', '\u{7f}', 'é', '€', '😀', '\u{2028}']),
        ];
        prop::collection::vec(character, 0..40).prop_map(|chars| chars.into_iter().collect())
    }

    fn json_number() -> impl Strategy<Value = Number> {
        prop_oneof![
            number(),
            Just(Number::zero()),
            (any::<i64>()).prop_map(Number::from_i64),
            prop::sample::select(vec![
                "-0.000001",
                "1e125",
                "-1e-130",
                "99999999999999999999999999999999999999",
                "0.5"
            ])
            .prop_filter_map("parses", |text| Number::parse(text).ok()),
        ]
    }

    /// Every kind of value, nested five deep, with names and strings needing escapes.
    fn json_value() -> impl Strategy<Value = AttributeValue> {
        let bytes = || prop::collection::vec(any::<u8>(), 0..40);
        let leaf = prop_oneof![
            json_text_string().prop_map(AttributeValue::S),
            json_number().prop_map(AttributeValue::N),
            bytes().prop_map(AttributeValue::B),
            any::<bool>().prop_map(AttributeValue::Bool),
            Just(AttributeValue::Null),
            prop::collection::vec(json_text_string(), 1..4).prop_map(AttributeValue::Ss),
            prop::collection::vec(json_number(), 1..4).prop_map(AttributeValue::Ns),
            prop::collection::vec(bytes(), 1..4).prop_map(AttributeValue::Bs),
        ];
        leaf.prop_recursive(5, 48, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(AttributeValue::L),
                prop::collection::btree_map(json_text_string(), inner, 0..5)
                    .prop_map(AttributeValue::M),
            ]
        })
    }

    fn json_item() -> impl Strategy<Value = Item> {
        prop::collection::btree_map(
            json_text_string().prop_filter("a name", |name| !name.is_empty()),
            json_value(),
            0..8,
        )
    }

    /// A freed item's buffer is the next one written into, on the same thread; a thread
    /// keeps at most `FREE_JSON_BUFFERS_MAX` of them, none larger than
    /// `FREE_JSON_BUFFER_CAPACITY_BYTES_MAX`.
    #[test]
    fn freed_json_buffers_are_reused_and_bounded() {
        let count_free = || FREE_JSON_BUFFERS.with(|free| free.borrow().len());
        let mut item = Item::new();
        item.insert("k".to_string(), AttributeValue::S("v".repeat(100)));
        let bytes = encode_item(&item);
        let (json, _) = item_json(&bytes).unwrap();
        let address = json.as_ptr();
        assert_eq!(count_free(), 0);
        drop(JsonItem::Written {
            json,
            size_bytes: 0,
        });
        assert_eq!(count_free(), 1);
        let (again, _) = item_json(&bytes).unwrap();
        assert_eq!(
            again.as_ptr(),
            address,
            "the freed buffer is written into again"
        );
        assert_eq!(count_free(), 0);
        // The neighbouring cases: an item built in memory gives nothing back, and neither
        // does a buffer over the size kept.
        drop(JsonItem::Built(item));
        assert_eq!(count_free(), 0);
        recycle_json_buffer(Vec::with_capacity(FREE_JSON_BUFFER_CAPACITY_BYTES_MAX + 1));
        assert_eq!(count_free(), 0);
        for _ in 0..FREE_JSON_BUFFERS_MAX + 10 {
            recycle_json_buffer(Vec::with_capacity(16));
        }
        assert_eq!(count_free(), FREE_JSON_BUFFERS_MAX);
        drop(again);
    }

    /// `item_json`'s answer, or its error, as decoding then writing gives it.
    fn decoded_json(bytes: &[u8]) -> Result<(String, u64), CodecError> {
        let item = decode_item(bytes)?;
        let json = json_text::to_vec(&item).expect("an item is written");
        Ok((
            String::from_utf8(json).expect("JSON text"),
            shoal_model::item_size_bytes(&item) as u64,
        ))
    }

    proptest! {
        #[test]
        fn item_json_is_the_decoded_items_json_text_and_size(item in json_item()) {
            let bytes = encode_item(&item);
            // The walk itself, not the decoder it leaves odd bytes to.
            let mut walked = Vec::new();
            let size = Reader { bytes: &bytes, offset: 0 }.item_json(&mut walked);
            let (json, size_bytes) = decoded_json(&bytes).expect("decodes");
            prop_assert_eq!(String::from_utf8_lossy(&walked), json.as_str());
            prop_assert_eq!(size, Ok(size_bytes as usize));
            prop_assert_eq!(size_bytes, shoal_model::item_size_bytes(&item) as u64);
            prop_assert_eq!(item_json(&bytes), Ok((json, size_bytes)));
        }

        /// Damaged bytes answer as the decoder answers them: the same error, or (when the
        /// damage still decodes) the same item.
        #[test]
        fn damaged_bytes_answer_as_decoding_answers(
            item in json_item(),
            damage in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..3),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = encode_item(&item);
            for (at, byte) in damage {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            prop_assert_eq!(item_json(&bytes), decoded_json(&bytes));
            let cut = cut.index(bytes.len());
            prop_assert_eq!(item_json(&bytes[..cut]), decoded_json(&bytes[..cut]));
        }
    }

    /// A 4.5 KB item's DynamoDB size, counted by hand: names, strings, a number's bytes
    /// (`Number::byte_size`: 1 + a byte per two significant digits), a list's overhead.
    #[test]
    fn item_json_counts_the_size_dynamodb_counts() {
        let item = Item::from([
            ("pk".to_string(), AttributeValue::S("k".into())),
            ("payload".to_string(), AttributeValue::S("x".repeat(4500))),
            (
                "n".to_string(),
                AttributeValue::N(Number::parse("1234").unwrap()),
            ),
            (
                "l".to_string(),
                AttributeValue::L(vec![AttributeValue::Bool(true), AttributeValue::Null]),
            ),
        ]);
        // pk: 2 + 1; payload: 7 + 4500; n: 1 + (1 + 2); l: 1 + 3 + (1 + 1) * 2.
        let by_hand = 3 + 4507 + 4 + 8;
        let (_, size_bytes) = item_json(&encode_item(&item)).unwrap();
        assert_eq!(size_bytes, by_hand);
    }

    /// Names out of order or repeated (never written, only corrupt) decode in name order, the
    /// last value of a repeated name kept: what a reader expects of a map, whatever order the
    /// decoder builds it in.
    #[test]
    fn unsorted_and_repeated_names_decode_like_inserts() {
        let few = vec![("b", "1"), ("a", "2"), ("b", "3"), ("c", "4"), ("a", "5")];
        // Past SMALL_MAP_ENTRIES_MAX, which decodes another way.
        let many: Vec<(&str, &str)> = (0..2 * SMALL_MAP_ENTRIES_MAX)
            .map(|i| {
                (
                    ["k", "d", "x", "a", "k", "q"][i % 6],
                    ["1", "2", "3"][i % 3],
                )
            })
            .collect();
        for pairs in [few, many] {
            let mut bytes = vec![FORMAT_VERSION];
            put_varint(&mut bytes, pairs.len() as u128);
            for (name, text) in &pairs {
                put_bytes(&mut bytes, name.as_bytes());
                encode_value(&mut bytes, &AttributeValue::S(text.to_string()));
            }
            let mut inserted = Item::new();
            for (name, text) in &pairs {
                inserted.insert(name.to_string(), AttributeValue::S(text.to_string()));
            }
            assert_eq!(decode_item(&bytes).unwrap(), inserted);
            // Written as JSON as the decoded item is, not in their stored order.
            assert_eq!(item_json(&bytes), decoded_json(&bytes));

            // The same pairs as a nested map (kind 6) under one attribute.
            let mut nested = vec![FORMAT_VERSION];
            put_varint(&mut nested, 1);
            put_bytes(&mut nested, b"m");
            nested.push(6);
            nested.extend_from_slice(&bytes[1..]);
            let expected = Item::from([("m".to_string(), AttributeValue::M(inserted))]);
            assert_eq!(decode_item(&nested).unwrap(), expected);
        }
    }

    #[test]
    fn sized_encoding_is_the_same_bytes_allocated_once() {
        let mut item = Item::new();
        item.insert("payload".into(), AttributeValue::S("x".repeat(1000)));
        item.insert(
            "n".into(),
            AttributeValue::N(Number::parse("-12345.678e90").unwrap()),
        );
        item.insert("z".into(), AttributeValue::Bool(true));
        let size = shoal_model::item_size_bytes(&item) as u64;
        let sized = encode_item_sized(&item, size);
        assert_eq!(sized, encode_item(&item));
        // Grown from 64 bytes by doubling, 1,040 bytes would sit in 2,048.
        assert!(
            sized.capacity() <= sized.len() + 64,
            "{} of {}",
            sized.len(),
            sized.capacity()
        );
        // A wrong size only costs allocations, never bytes.
        assert_eq!(encode_item_sized(&item, 0), sized);
        assert_eq!(encode_item_sized(&item, u64::MAX), sized);
    }

    #[test]
    fn invalid_utf8_in_a_name_or_a_string_is_an_error() {
        let long_value = format!("{}é", "x".repeat(100));
        let mut item = Item::new();
        item.insert("name".into(), AttributeValue::S(long_value.clone()));
        let bytes = encode_item(&item);
        let find = |needle: &[u8]| {
            bytes
                .windows(needle.len())
                .position(|w| w == needle)
                .unwrap()
        };
        // A lone continuation byte in the name; a truncated two-byte sequence at the end of
        // a value long enough for the vectorised path.
        let mut bad_name = bytes.clone();
        bad_name[find(b"name")] = 0x80;
        let mut bad_value = bytes.clone();
        let e_acute = find("é".as_bytes());
        bad_value[e_acute + 1] = b'x';
        for corrupt in [bad_name, bad_value] {
            let error = decode_item(&corrupt).unwrap_err();
            assert_eq!(error.detail, "invalid UTF-8");
            // The JSON walk copies strings unchecked and checks its output once: the same
            // refusal, not invalid JSON text.
            assert_eq!(item_json(&corrupt).unwrap_err().detail, "invalid UTF-8");
        }
        assert_eq!(decode_item(&bytes).unwrap(), item);
        // The neighbouring case: valid text beyond ASCII answers as it is.
        let (json, _) = item_json(&bytes).unwrap();
        assert_eq!(json, format!(r#"{{"name":{{"S":"{long_value}"}}}}"#));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let mut item = Item::new();
        item.insert(
            "a".into(),
            AttributeValue::N(Number::parse("-12.5e3").unwrap()),
        );
        item.insert(
            "b".into(),
            AttributeValue::L(vec![AttributeValue::S("x".into()), AttributeValue::Null]),
        );
        let bytes = encode_item(&item);
        for cut in 0..bytes.len() {
            assert!(decode_item(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(decode_item(&bytes).unwrap(), item);
    }
}
