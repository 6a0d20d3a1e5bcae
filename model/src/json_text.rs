//! JSON text of a response, byte for byte what `serde_json::to_vec` writes, with strings
//! scanned for characters to escape eight bytes at a time.
//!
//! Why: serde_json looks every byte of a string up in its escape table, one at a time, and
//! nothing in its API lets a caller change that. Items are mostly strings, so a read that
//! returns items spent a tenth of the server's CPU there: 9–11% under `shoal bench
//! --workloads BatchGetItem` (25 items of ~1 KB an answer; perf, 2026-11-29). Here a word
//! with no quote, backslash or control character (the usual case) is copied whole.
//!
//! The output is serde_json's compact form: the same escapes (`\"`, `\\`, `\b`, `\t`, `\n`,
//! `\f`, `\r`, other control characters as `\u00xx` in lower case; nothing else escaped),
//! integers as `itoa` writes them, floats as `zmij` does (the formatter serde_json uses;
//! `null` if not finite), bytes as an array of numbers, `None` and `()` as `null`, enum variants as serde_json tags them, and
//! map keys that are strings, characters, booleans, integers or finite floats (all but the
//! first two quoted). A key of any other kind is an error, as in serde_json. JSON text already
//! written ([`RawJson`], serde_json's `RawValue`) is copied as it is, as serde_json (feature
//! `raw_value`) copies it: how a read's answer carries an item written to JSON straight from
//! its stored bytes. Tests compare the two on generated values.

use serde::ser::{self, Error as _, Serialize};

/// The JSON text of `value`, as `serde_json::to_vec` would write it.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut writer = Writer {
        out: Vec::with_capacity(128),
    };
    value.serialize(&mut writer)?;
    Ok(writer.out)
}

/// The name serde_json's `RawValue` serializes under (a struct of one field of that name,
/// whose string is JSON already).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// JSON text to be written as it is, inside a larger answer. It serializes as serde_json's
/// `RawValue` does, so this writer and serde_json (feature `raw_value`) both copy it; the
/// caller vouches that it is one well-formed JSON value.
pub struct RawJson<'a>(pub &'a str);

impl Serialize for RawJson<'_> {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use ser::SerializeStruct;
        let mut raw = serializer.serialize_struct(RAW_VALUE_TOKEN, 1)?;
        raw.serialize_field(RAW_VALUE_TOKEN, self.0)?;
        raw.end()
    }
}

struct Writer {
    out: Vec<u8>,
}

const WORD_ONES: u64 = 0x0101_0101_0101_0101;
const WORD_HIGHS: u64 = 0x8080_8080_8080_8080;

/// Non-zero if some byte of `word` needs an escape: below 0x20, a quote or a backslash.
/// (Only whether it is zero is exact, as the classic bit tricks give it.)
fn escape_bits(word: u64) -> u64 {
    // A byte below 0x20 borrows through its high bit when 0x20 is subtracted from it, and
    // a byte at or above 0x80 is excluded by `!word`; a byte equal to `c` is a zero byte
    // of `word ^ c`.
    let zero_bits = |w: u64| w.wrapping_sub(WORD_ONES) & !w;
    let below_space = word.wrapping_sub(WORD_ONES * 0x20) & !word;
    let quote = zero_bits(word ^ (WORD_ONES * u64::from(b'"')));
    let backslash = zero_bits(word ^ (WORD_ONES * u64::from(b'\\')));
    (below_space | quote | backslash) & WORD_HIGHS
}

/// Whether none of `bytes`' 32 bytes needs an escape: four words checked together, one
/// branch for the lot.
fn clean_32(bytes: &[u8; 32]) -> bool {
    let mut bits = 0;
    for word in bytes.chunks_exact(8) {
        let mut buffer = [0u8; 8];
        buffer.copy_from_slice(word);
        bits |= escape_bits(u64::from_le_bytes(buffer));
    }
    bits == 0
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Writes `text` as a JSON string (its escapes as serde_json writes them): the one string
/// writer of the answers, also used by the tables layer to write stored items as JSON.
pub fn write_string(out: &mut Vec<u8>, text: &str) {
    write_utf8_string(out, text.as_bytes());
}

/// [`write_string`] for bytes not yet checked as UTF-8: only ASCII bytes are ever escaped,
/// so every other byte is copied as it is and the output is UTF-8 exactly when `bytes` is.
/// For a writer that checks its whole output once (the tables layer's stored items, whose
/// strings would otherwise be checked one by one and then again as a whole).
pub fn write_utf8_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // `bytes[run_start..at]` needs no escape and is not yet written.
    let mut run_start = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(block) = bytes[at..].first_chunk::<32>() {
            if clean_32(block) {
                at += 32;
                continue;
            }
        }
        if let Some(word) = bytes[at..].first_chunk::<8>() {
            if escape_bits(u64::from_le_bytes(*word)) == 0 {
                at += 8;
                continue;
            }
        }
        // A word with something to escape, or the last bytes: one byte at a time.
        let end = (at + 8).min(bytes.len());
        for (offset, &byte) in bytes[at..end].iter().enumerate() {
            let escape: &[u8] = match byte {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                0x08 => b"\\b",
                b'\t' => b"\\t",
                b'\n' => b"\\n",
                0x0c => b"\\f",
                b'\r' => b"\\r",
                0x00..=0x1f => &[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX_DIGITS[usize::from(byte >> 4)],
                    HEX_DIGITS[usize::from(byte & 0xf)],
                ],
                _ => continue,
            };
            out.extend_from_slice(&bytes[run_start..at + offset]);
            out.extend_from_slice(escape);
            run_start = at + offset + 1;
        }
        at = end;
    }
    out.extend_from_slice(&bytes[run_start..]);
    out.push(b'"');
}

/// Writes `value`'s `Display` text as a JSON string with no `String` in between: the text is
/// formatted straight into `out` and only rewritten with escapes if it has something to
/// escape, which a number's canonical text (the usual caller) never has. Fails only if the
/// `Display` implementation does.
pub fn write_display_string(
    out: &mut Vec<u8>,
    value: &(impl std::fmt::Display + ?Sized),
) -> std::fmt::Result {
    out.push(b'"');
    let start = out.len();
    std::fmt::Write::write_fmt(&mut TextInto(out), format_args!("{value}"))?;
    if !escape_free(&out[start..]) {
        let text = out.split_off(start);
        out.pop();
        write_utf8_string(out, &text);
    } else {
        out.push(b'"');
    }
    Ok(())
}

/// Whether no byte of `bytes` is written escaped: [`escape_bits`] on each word, the last one
/// padded with a letter (which needs none), so that the rule is stated once.
fn escape_free(bytes: &[u8]) -> bool {
    bytes.chunks(8).all(|chunk| {
        let mut word = [b'a'; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        escape_bits(u64::from_le_bytes(word)) == 0
    })
}

/// `fmt::Write` into a byte buffer, for [`write_display_string`].
struct TextInto<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for TextInto<'_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0.extend_from_slice(text.as_bytes());
        Ok(())
    }
}

fn write_integer(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

fn write_float(out: &mut Vec<u8>, value: impl zmij::Float, finite: bool) {
    if finite {
        out.extend_from_slice(zmij::Buffer::new().format_finite(value).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

/// A sequence or map being written: whether an element was written yet (a comma goes
/// before every later one), and what closes it.
struct Compound<'a> {
    writer: &'a mut Writer,
    first: bool,
    /// The bytes written at the end: `]`, `}`, or `}}` / `]}` for an enum variant's.
    close: &'static [u8],
    /// A `RawValue`: its one field's string is copied as it is, with nothing around it.
    raw: bool,
}

impl Compound<'_> {
    fn separate(&mut self) {
        if !self.first {
            self.writer.out.push(b',');
        }
        self.first = false;
    }

    fn finish(self) {
        self.writer.out.extend_from_slice(self.close);
    }
}

/// The serializer methods of every integer type, each handing its value to `self.integer`.
macro_rules! integers_through_integer {
    () => {
        integers_through_integer!(
            serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
            serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
            serialize_u64: u64, serialize_u128: u128
        );
    };
    ($($method:ident: $type:ty),*) => {$(
        fn $method(self, value: $type) -> Result<(), Self::Error> {
            self.integer(value)
        }
    )*};
}

impl Writer {
    fn integer(&mut self, value: impl itoa::Integer) -> Result<(), serde_json::Error> {
        write_integer(&mut self.out, value);
        Ok(())
    }

    fn compound(&mut self, open: &[u8], close: &'static [u8]) -> Compound<'_> {
        self.out.extend_from_slice(open);
        Compound {
            writer: self,
            first: true,
            close,
            raw: false,
        }
    }

    /// Opens `{"variant":` and then `inner`, the wrapping serde_json gives a variant's data.
    fn variant(&mut self, variant: &str, inner: &[u8], close: &'static [u8]) -> Compound<'_> {
        self.out.push(b'{');
        write_string(&mut self.out, variant);
        self.out.push(b':');
        self.compound(inner, close)
    }
}

impl<'a> ser::Serializer for &'a mut Writer {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, value: bool) -> Result<(), Self::Error> {
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
        Ok(())
    }

    integers_through_integer!();

    fn serialize_f32(self, value: f32) -> Result<(), Self::Error> {
        write_float(&mut self.out, value, value.is_finite());
        Ok(())
    }

    fn serialize_f64(self, value: f64) -> Result<(), Self::Error> {
        write_float(&mut self.out, value, value.is_finite());
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result<(), Self::Error> {
        write_string(&mut self.out, value.encode_utf8(&mut [0u8; 4]));
        Ok(())
    }

    fn serialize_str(self, value: &str) -> Result<(), Self::Error> {
        write_string(&mut self.out, value);
        Ok(())
    }

    /// Without this, serde formats `value` into a `String` first (an item's numbers come
    /// this way, as `Display` text).
    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<(), Self::Error> {
        write_display_string(&mut self.out, value).map_err(serde_json::Error::custom)
    }

    fn serialize_bytes(self, value: &[u8]) -> Result<(), Self::Error> {
        let mut seq = self.compound(b"[", b"]");
        for byte in value {
            seq.separate();
            write_integer(&mut seq.writer.out, *byte);
        }
        seq.finish();
        Ok(())
    }

    fn serialize_none(self) -> Result<(), Self::Error> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Self::Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Self::Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Self::Error> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Self::Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        if name == RAW_VALUE_TOKEN {
            return Err(serde_json::Error::custom(
                "a RawValue is not written by shoal_model::json_text",
            ));
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        let wrapper = self.variant(variant, b"", b"}");
        value.serialize(&mut *wrapper.writer)?;
        wrapper.finish();
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Self::Error> {
        Ok(self.compound(b"[", b"]"))
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, Self::Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, Self::Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Self::Error> {
        Ok(self.variant(variant, b"[", b"]}"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Self::Error> {
        Ok(self.compound(b"{", b"}"))
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Compound<'a>, Self::Error> {
        if name == RAW_VALUE_TOKEN {
            let mut raw = self.compound(b"", b"");
            raw.raw = true;
            return Ok(raw);
        }
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Self::Error> {
        Ok(self.variant(variant, b"{", b"}}"))
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.separate();
        value.serialize(&mut *self.writer)
    }

    fn end(self) -> Result<(), Self::Error> {
        self.finish();
        Ok(())
    }
}

/// Tuples of every kind are written as sequences (a variant's wrapped by `variant`).
macro_rules! written_as_a_sequence {
    ($($kind:ident :: $method:ident),*) => {$(
        impl ser::$kind for Compound<'_> {
            type Ok = ();
            type Error = serde_json::Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
                ser::SerializeSeq::serialize_element(self, value)
            }

            fn end(self) -> Result<(), Self::Error> {
                ser::SerializeSeq::end(self)
            }
        }
    )*};
}

written_as_a_sequence!(
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.separate();
        key.serialize(KeyWriter(&mut self.writer.out))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.writer.out.push(b':');
        value.serialize(&mut *self.writer)
    }

    fn end(self) -> Result<(), Self::Error> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        if self.raw {
            return value.serialize(RawText(&mut self.writer.out));
        }
        self.separate();
        write_string(&mut self.writer.out, key);
        ser::SerializeMap::serialize_value(self, value)
    }

    fn end(self) -> Result<(), Self::Error> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }

    fn end(self) -> Result<(), Self::Error> {
        self.finish();
        Ok(())
    }
}

/// The serializer methods a writer of one scalar refuses: unit structs, newtype variants and
/// every compound, each answered `$refusal()`; with the compound types they never return.
macro_rules! refused_compounds {
    ($refusal:ident) => {
        type SerializeSeq = ser::Impossible<(), serde_json::Error>;
        type SerializeTuple = ser::Impossible<(), serde_json::Error>;
        type SerializeTupleStruct = ser::Impossible<(), serde_json::Error>;
        type SerializeTupleVariant = ser::Impossible<(), serde_json::Error>;
        type SerializeMap = ser::Impossible<(), serde_json::Error>;
        type SerializeStruct = ser::Impossible<(), serde_json::Error>;
        type SerializeStructVariant = ser::Impossible<(), serde_json::Error>;

        fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Self::Error> {
            Err($refusal())
        }

        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _name: &'static str,
            _index: u32,
            _variant: &'static str,
            _value: &T,
        ) -> Result<(), Self::Error> {
            Err($refusal())
        }

        fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
            Err($refusal())
        }

        fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Self::Error> {
            Err($refusal())
        }

        fn serialize_tuple_struct(
            self,
            _name: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeTupleStruct, Self::Error> {
            Err($refusal())
        }

        fn serialize_tuple_variant(
            self,
            _name: &'static str,
            _index: u32,
            _variant: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeTupleVariant, Self::Error> {
            Err($refusal())
        }

        fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
            Err($refusal())
        }

        fn serialize_struct(
            self,
            _name: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeStruct, Self::Error> {
            Err($refusal())
        }

        fn serialize_struct_variant(
            self,
            _name: &'static str,
            _index: u32,
            _variant: &'static str,
            _len: usize,
        ) -> Result<Self::SerializeStructVariant, Self::Error> {
            Err($refusal())
        }
    };
}

/// The room a raw value's copy leaves after it (see `RawText::serialize_str`).
const RAW_TEXT_FOLLOWING_BYTES: usize = 128;

/// Copies a `RawValue`'s string as it is; serde_json refuses anything else there, and so does
/// this.
struct RawText<'a>(&'a mut Vec<u8>);

fn not_a_raw_value() -> serde_json::Error {
    serde_json::Error::custom("expected RawValue")
}

/// The serializer methods of values a `RawValue` never holds, each refusing it.
macro_rules! refused_in_raw_text {
    ($($method:ident $(: $type:ty)?),*) => {$(
        fn $method(self $(, _value: $type)?) -> Result<(), Self::Error> {
            Err(not_a_raw_value())
        }
    )*};
}

impl ser::Serializer for RawText<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    refused_compounds!(not_a_raw_value);

    fn serialize_str(self, value: &str) -> Result<(), Self::Error> {
        // A raw value is most of a read's answer (a whole item), so room for what follows
        // it (closing brackets, a ConsumedCapacity) is made with it: growing by exactly its
        // length left the answer's last `}` to copy the whole answer again.
        self.0.reserve(value.len() + RAW_TEXT_FOLLOWING_BYTES);
        self.0.extend_from_slice(value.as_bytes());
        Ok(())
    }

    refused_in_raw_text!(
        serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128, serialize_f32: f32,
        serialize_f64: f64, serialize_char: char, serialize_bytes: &[u8], serialize_none,
        serialize_unit
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Self::Error> {
        Err(not_a_raw_value())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
    ) -> Result<(), Self::Error> {
        Err(not_a_raw_value())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _value: &T,
    ) -> Result<(), Self::Error> {
        Err(not_a_raw_value())
    }
}

/// Writes a map key: JSON keys are strings, so serde_json quotes the integers, booleans and
/// finite floats it accepts as keys and refuses the rest.
struct KeyWriter<'a>(&'a mut Vec<u8>);

impl KeyWriter<'_> {
    fn quoted(self, text: &str) -> Result<(), serde_json::Error> {
        self.0.push(b'"');
        self.0.extend_from_slice(text.as_bytes());
        self.0.push(b'"');
        Ok(())
    }

    fn integer(self, value: impl itoa::Integer) -> Result<(), serde_json::Error> {
        self.quoted(itoa::Buffer::new().format(value))
    }

    fn float(self, value: impl zmij::Float, finite: bool) -> Result<(), serde_json::Error> {
        if !finite {
            return Err(serde_json::Error::custom(
                "float key must be finite, got NaN or +/-inf",
            ));
        }
        self.quoted(zmij::Buffer::new().format_finite(value))
    }
}

fn key_must_be_a_string() -> serde_json::Error {
    serde_json::Error::custom("key must be a string")
}

impl ser::Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    refused_compounds!(key_must_be_a_string);

    fn serialize_str(self, value: &str) -> Result<(), Self::Error> {
        write_string(self.0, value);
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result<(), Self::Error> {
        write_string(self.0, value.encode_utf8(&mut [0u8; 4]));
        Ok(())
    }

    fn serialize_bool(self, value: bool) -> Result<(), Self::Error> {
        self.quoted(if value { "true" } else { "false" })
    }

    integers_through_integer!();

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Self::Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        value.serialize(self)
    }

    fn serialize_f32(self, value: f32) -> Result<(), Self::Error> {
        self.float(value, value.is_finite())
    }

    fn serialize_f64(self, value: f64) -> Result<(), Self::Error> {
        self.float(value, value.is_finite())
    }

    fn serialize_bytes(self, _value: &[u8]) -> Result<(), Self::Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_none(self) -> Result<(), Self::Error> {
        Err(key_must_be_a_string())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Self::Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Self::Error> {
        Err(key_must_be_a_string())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use serde::Serialize;
    use serde_json::Value;

    use super::*;
    use crate::value::AttributeValue;

    fn same_as_serde_json<T: Serialize + ?Sized>(value: &T) {
        let ours = to_vec(value).expect("ours writes it");
        let theirs = serde_json::to_vec(value).expect("serde_json writes it");
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs)
        );
    }

    /// Strings over the characters that matter: every control character, quote, backslash,
    /// slash, DEL, multi-byte characters, and plain letters in runs longer than a word.
    fn text() -> impl Strategy<Value = String> {
        let character = prop_oneof![
            4 => Just('x'),
            1 => (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('x')),
            1 => prop::sample::select(vec!['"', '\\', '/', '\u{7f}', 'é', '€', '😀', '\u{2028}']),
        ];
        prop::collection::vec(character, 0..40).prop_map(|chars| chars.into_iter().collect())
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(text(), inner, 0..6)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn writes_what_serde_json_writes(value in json_value()) {
            same_as_serde_json(&value);
        }

        #[test]
        fn strings_are_escaped_as_serde_json_escapes_them(text in text()) {
            same_as_serde_json(&text);
        }

        /// `collect_str` formats in place and escapes afterwards: text with something to
        /// escape (the rare case) and text without (numbers) both come out as serde_json's.
        #[test]
        fn display_text_is_written_as_serde_json_writes_it(text in text()) {
            same_as_serde_json(&Collected(&text));
        }
    }

    /// Every length around a word's, with the one byte to escape at every place: the padded
    /// last word finds it as a whole word does, and a clean text of any length passes.
    #[test]
    fn escape_free_finds_an_escape_anywhere_in_any_length() {
        for len in 0..=17 {
            assert!(escape_free(&vec![b'7'; len]), "clean, {len} bytes");
            for at in 0..len {
                for byte in [b'"', b'\\', b'\n', 0x00, 0x1f] {
                    let mut text = vec![b'7'; len];
                    text[at] = byte;
                    assert!(!escape_free(&text), "{byte:#x} at {at} of {len}");
                }
                // Bytes at and above a space, but for the two above, need none.
                let mut text = vec![b'7'; len];
                text[at] = 0xe9;
                assert!(escape_free(&text), "0xe9 at {at} of {len}");
            }
        }
    }

    /// Serialises its text through `collect_str`, as `Display` values are.
    struct Collected<'a>(&'a str);

    impl Serialize for Collected<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_str(self.0)
        }
    }

    #[test]
    fn every_byte_alone_and_inside_a_word_is_escaped_as_serde_json_escapes_it() {
        for code in 0u32..0x100 {
            let Some(character) = char::from_u32(code) else {
                continue;
            };
            same_as_serde_json(&character.to_string());
            // At each position of a 32-byte block, of a word after it, and of the tail.
            for position in 0..=42 {
                let mut text = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEF".to_string();
                text.insert(position, character);
                same_as_serde_json(&text);
            }
        }
    }

    #[derive(Serialize)]
    enum Shape {
        Unit,
        Newtype(u8),
        Tuple(u8, String),
        Struct { side: f32, name: Option<String> },
    }

    #[derive(Serialize)]
    struct Response {
        #[serde(rename = "Item", skip_serializing_if = "Option::is_none")]
        item: Option<BTreeMap<String, AttributeValue>>,
        shapes: Vec<Shape>,
        bytes: &'static [u8],
        unit: (),
        pair: (i8, u128),
        counts: BTreeMap<u32, bool>,
        flags: BTreeMap<bool, char>,
        not_finite: [f64; 3],
    }

    #[test]
    fn typed_responses_and_enum_variants_are_written_as_serde_json_writes_them() {
        let item: BTreeMap<String, AttributeValue> = [
            (
                "s".to_string(),
                AttributeValue::S("a \"quoted\"\n text".into()),
            ),
            (
                "n".to_string(),
                AttributeValue::N("-12.50".parse().expect("a number")),
            ),
            ("b".to_string(), AttributeValue::B(vec![0, 1, 255])),
            (
                "l".to_string(),
                AttributeValue::L(vec![AttributeValue::Null, AttributeValue::Bool(true)]),
            ),
        ]
        .into_iter()
        .collect();
        let response = Response {
            item: Some(item),
            shapes: vec![
                Shape::Unit,
                Shape::Newtype(7),
                Shape::Tuple(1, "t".into()),
                Shape::Struct {
                    side: 0.1,
                    name: None,
                },
            ],
            bytes: b"\x00\x7f",
            unit: (),
            pair: (-8, u128::MAX),
            counts: [(1, true), (20, false)].into_iter().collect(),
            flags: [(false, '"')].into_iter().collect(),
            not_finite: [f64::NAN, f64::INFINITY, 1.0],
        };
        same_as_serde_json(&response);
        let without_item = Response {
            item: None,
            ..response
        };
        same_as_serde_json(&without_item);
    }

    #[test]
    fn float_and_optional_keys_are_written_as_serde_json_writes_them() {
        let floats: std::collections::HashMap<_, _> = [(FloatKey(2.5), 1)].into_iter().collect();
        same_as_serde_json(&floats);
        let optional: BTreeMap<Option<u8>, u8> = [(Some(3), 4)].into_iter().collect();
        same_as_serde_json(&optional);
        let not_finite: std::collections::HashMap<_, _> =
            [(FloatKey(f64::NAN), 1)].into_iter().collect();
        assert!(serde_json::to_vec(&not_finite).is_err());
        assert!(to_vec(&not_finite).is_err());
    }

    /// A float usable as a map key in a test.
    #[derive(Serialize, PartialEq)]
    struct FloatKey(f64);
    impl Eq for FloatKey {}
    impl std::hash::Hash for FloatKey {
        fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
            self.0.to_bits().hash(state);
        }
    }

    #[test]
    fn keys_serde_json_refuses_are_refused() {
        let byte_keys: BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into_iter().collect();
        assert!(serde_json::to_vec(&byte_keys).is_err());
        assert!(to_vec(&byte_keys).is_err());
    }

    #[derive(Serialize)]
    struct WithRawItem<'a> {
        #[serde(rename = "Item")]
        item: RawJson<'a>,
        items: Vec<RawJson<'a>>,
        after: u8,
    }

    #[test]
    fn raw_json_is_copied_as_serde_json_copies_it() {
        let response = WithRawItem {
            item: RawJson(r#"{"a":{"S":"x\"y"}}"#),
            items: vec![RawJson("{}"), RawJson(r#"{"n":{"N":"-1.5"}}"#)],
            after: 7,
        };
        same_as_serde_json(&response);
        assert_eq!(
            String::from_utf8_lossy(&to_vec(&response).expect("written")),
            r#"{"Item":{"a":{"S":"x\"y"}},"items":[{},{"n":{"N":"-1.5"}}],"after":7}"#
        );
        // A struct merely named like a RawValue, holding something else, is refused as
        // serde_json refuses it.
        #[derive(Serialize)]
        #[serde(rename = "$serde_json::private::RawValue")]
        struct NotRaw {
            #[serde(rename = "$serde_json::private::RawValue")]
            number: u8,
        }
        assert!(serde_json::to_vec(&NotRaw { number: 1 }).is_err());
        assert!(to_vec(&NotRaw { number: 1 }).is_err());
    }

    #[test]
    fn a_raw_value_is_refused_rather_than_written_as_a_string() {
        #[derive(Serialize)]
        #[serde(rename = "$serde_json::private::RawValue")]
        struct Raw(&'static str);
        assert!(to_vec(&Raw("{}")).is_err());
    }
}
