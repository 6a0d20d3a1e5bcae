//! Order-preserving, self-delimiting byte encodings of key values (S, N, B).
//!
//! A storage key is a concatenation of several encoded values (docs/DESIGN.md §2), so every
//! encoding must (1) sort, as unsigned bytes, in DynamoDB's order for its type, (2) tell
//! the decoder where it ends, and (3) keep the concatenation ordered: two encodings of the
//! same type either are identical or differ at a byte before either one ends. The decoder
//! must be told which type to expect; the types of a table's key attributes are fixed by
//! its schema.
//!
//! # S and B: escaped bytes
//!
//! The UTF-8 bytes (S) or raw bytes (B), with every `0x00` written as `0x00 0xFF`, followed
//! by the terminator `0x00 0x01`. A value that is a prefix of another sorts first: where
//! the shorter one has its terminator `0x00 0x01`, the longer one has either a byte above
//! `0x00` or an escaped `0x00 0xFF`, both greater. (A one-byte terminator would not do: the
//! byte after it belongs to the next key component and could tie with `0xFF`.)
//!
//! # N: sign class, exponent, digit nibbles
//!
//! ```text
//! zero:      0x02
//! positive:  0x03 | exponent byte | digit nibbles
//! negative:  0x01 | NOT(exponent byte | digit nibbles)      (every bit inverted)
//! ```
//!
//! The exponent byte is the scientific exponent (the power of ten of the leading digit,
//! -130..=125) plus 130, so 0..=255. The digit nibbles are the mantissa's significant
//! digits, most significant first, each stored as digit + 1 (1..=10), then a `0` nibble
//! terminator, packed two per byte (high nibble first) and padded with a `0` nibble to a
//! whole byte. For equal exponents, a digit string that is a prefix of another belongs to
//! the smaller magnitude, and its terminator nibble `0` sorts below any digit. Negative
//! numbers invert every bit after the class byte, which reverses the magnitude order; the
//! decoder then looks for an `F` terminator nibble. At most 22 bytes.

use thiserror::Error;

use crate::number::{Number, SCIENTIFIC_EXPONENT_MIN, SIGNIFICANT_DIGITS_MAX};
use crate::value::AttributeValue;
pub use crate::value::ScalarType;

const ESCAPE_BYTE: u8 = 0x00;
const ESCAPED_ZERO: u8 = 0xFF;
const TERMINATOR_END: u8 = 0x01;

const NUMBER_NEGATIVE: u8 = 0x01;
const NUMBER_ZERO: u8 = 0x02;
const NUMBER_POSITIVE: u8 = 0x03;
/// Added to the scientific exponent so it fits an unsigned byte.
const EXPONENT_BIAS: i64 = -SCIENTIFIC_EXPONENT_MIN;
const DIGIT_TERMINATOR_NIBBLE: u8 = 0;

/// Why a key value could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyCodecError {
    #[error("a {type_name} value cannot be part of a key (only S, N and B can)")]
    NotAKeyType { type_name: &'static str },
    #[error("encoded key value ends before its terminator")]
    Truncated,
    #[error("invalid escape byte {byte:#04x} after 0x00 in an encoded key value")]
    InvalidEscape { byte: u8 },
    #[error("encoded S key value is not valid UTF-8")]
    InvalidUtf8,
    #[error("invalid encoded N key value: {reason}")]
    InvalidNumber { reason: &'static str },
}

/// Appends the encoding of an S, N or B value to `out`. Any other type is a caller bug
/// (key types are validated against the schema first) and returns
/// [`KeyCodecError::NotAKeyType`] without writing anything.
pub fn encode_key_value(value: &AttributeValue, out: &mut Vec<u8>) -> Result<(), KeyCodecError> {
    match value {
        AttributeValue::S(text) => encode_escaped_bytes(text.as_bytes(), out),
        AttributeValue::B(bytes) => encode_escaped_bytes(bytes, out),
        AttributeValue::N(number) => encode_number(number, out),
        other => {
            return Err(KeyCodecError::NotAKeyType {
                type_name: other.type_name(),
            })
        }
    }
    Ok(())
}

/// Decodes one value of type `kind` from the start of `input`; returns it and the number
/// of bytes it used (the next component starts there).
pub fn decode_key_value(
    input: &[u8],
    kind: ScalarType,
) -> Result<(AttributeValue, usize), KeyCodecError> {
    match kind {
        ScalarType::S => {
            let (bytes, used) = decode_escaped_bytes(input)?;
            let text = String::from_utf8(bytes).map_err(|_| KeyCodecError::InvalidUtf8)?;
            Ok((AttributeValue::S(text), used))
        }
        ScalarType::B => {
            let (bytes, used) = decode_escaped_bytes(input)?;
            Ok((AttributeValue::B(bytes), used))
        }
        ScalarType::N => {
            let (number, used) = decode_number(input)?;
            Ok((AttributeValue::N(number), used))
        }
    }
}

/// The length of the one key value of type `kind` encoded at the start of `input`: what
/// [`decode_key_value`] reports as used, with the same errors, except that S values are not
/// checked for UTF-8. For walking keys (a Scan passes several per item) without building
/// and dropping the value.
pub fn encoded_key_value_len(input: &[u8], kind: ScalarType) -> Result<usize, KeyCodecError> {
    match kind {
        ScalarType::S | ScalarType::B => escaped_bytes_len(input),
        ScalarType::N => decode_number(input).map(|(_, used)| used),
    }
}

/// The length of the escaped bytes at the start of `input`, terminator included.
fn escaped_bytes_len(input: &[u8]) -> Result<usize, KeyCodecError> {
    let mut position = 0;
    loop {
        let rest = input.get(position..).ok_or(KeyCodecError::Truncated)?;
        let escape_at = rest
            .iter()
            .position(|&byte| byte == ESCAPE_BYTE)
            .ok_or(KeyCodecError::Truncated)?;
        position += escape_at + 1;
        let escape = *input.get(position).ok_or(KeyCodecError::Truncated)?;
        position += 1;
        match escape {
            ESCAPED_ZERO => {}
            TERMINATOR_END => return Ok(position),
            byte => return Err(KeyCodecError::InvalidEscape { byte }),
        }
    }
}

/// Appends the escaped form of `bytes` (S and B encoding).
pub fn encode_escaped_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() + 2);
    for &byte in bytes {
        out.push(byte);
        if byte == ESCAPE_BYTE {
            out.push(ESCAPED_ZERO);
        }
    }
    out.push(ESCAPE_BYTE);
    out.push(TERMINATOR_END);
}

fn decode_escaped_bytes(input: &[u8]) -> Result<(Vec<u8>, usize), KeyCodecError> {
    // The walk checks the grammar: in what precedes the two-byte terminator, every
    // ESCAPE_BYTE is followed by ESCAPED_ZERO, so unescaping is dropping those.
    let used = escaped_bytes_len(input)?;
    let mut rest = input.get(..used.saturating_sub(2)).unwrap_or_default();
    let mut bytes = Vec::with_capacity(rest.len());
    while let Some(escape_at) = rest.iter().position(|&byte| byte == ESCAPE_BYTE) {
        bytes.extend_from_slice(&rest[..=escape_at]);
        rest = rest.get(escape_at + 2..).unwrap_or_default();
    }
    bytes.extend_from_slice(rest);
    Ok((bytes, used))
}

/// Appends the N encoding of `number` (see the module docs).
pub fn encode_number(number: &Number, out: &mut Vec<u8>) {
    if number.is_zero() {
        out.push(NUMBER_ZERO);
        return;
    }
    let body_start = out.len() + 1;
    out.push(if number.is_negative() {
        NUMBER_NEGATIVE
    } else {
        NUMBER_POSITIVE
    });
    let biased_exponent = number.top_power() + EXPONENT_BIAS;
    debug_assert!((0..=255).contains(&biased_exponent), "number out of range");
    out.push(biased_exponent.clamp(0, 255) as u8);
    let digits = number.mantissa().to_string();
    let mut nibbles: Vec<u8> = digits.bytes().map(|digit| digit - b'0' + 1).collect();
    nibbles.push(DIGIT_TERMINATOR_NIBBLE);
    for pair in nibbles.chunks(2) {
        let low = pair.get(1).copied().unwrap_or(DIGIT_TERMINATOR_NIBBLE);
        out.push((pair[0] << 4) | low);
    }
    if number.is_negative() {
        for byte in &mut out[body_start..] {
            *byte = !*byte;
        }
    }
}

fn decode_number(input: &[u8]) -> Result<(Number, usize), KeyCodecError> {
    let invalid = |reason| KeyCodecError::InvalidNumber { reason };
    let class = *input.first().ok_or(KeyCodecError::Truncated)?;
    let negative = match class {
        NUMBER_ZERO => return Ok((Number::zero(), 1)),
        NUMBER_NEGATIVE => true,
        NUMBER_POSITIVE => false,
        _ => return Err(invalid("unknown sign class byte")),
    };
    // Undo the inversion of negative numbers byte by byte as they are read.
    let body_byte = |index: usize| -> Result<u8, KeyCodecError> {
        let byte = *input.get(index).ok_or(KeyCodecError::Truncated)?;
        Ok(if negative { !byte } else { byte })
    };
    // Every byte value is a valid exponent: 0..=255 minus the bias is -130..=125.
    let scientific_exponent = i64::from(body_byte(1)?) - EXPONENT_BIAS;
    let mut mantissa: u128 = 0;
    let mut digit_count: usize = 0;
    let mut position = 2;
    'bytes: loop {
        let byte = body_byte(position)?;
        position += 1;
        for nibble in [byte >> 4, byte & 0x0F] {
            if nibble == DIGIT_TERMINATOR_NIBBLE {
                break 'bytes;
            }
            if nibble > 10 {
                return Err(invalid("digit nibble above 9"));
            }
            if digit_count == SIGNIFICANT_DIGITS_MAX {
                return Err(invalid("more than 38 digits"));
            }
            mantissa = mantissa * 10 + u128::from(nibble - 1);
            digit_count += 1;
        }
    }
    if digit_count == 0 || mantissa.is_multiple_of(10) {
        // Encodings are canonical: a leading digit of zero or a trailing zero never occurs.
        return Err(invalid("non-canonical digits"));
    }
    if digit_count != mantissa.ilog10() as usize + 1 {
        return Err(invalid("non-canonical digits"));
    }
    let exponent = scientific_exponent - (digit_count as i64 - 1);
    let number = Number::from_parts(negative, mantissa, exponent as i32)
        .ok_or(invalid("more than 38 digits"))?;
    Ok((number, position))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: &AttributeValue) -> Vec<u8> {
        let mut out = Vec::new();
        encode_key_value(value, &mut out).unwrap();
        out
    }

    fn n(text: &str) -> AttributeValue {
        AttributeValue::N(Number::parse(text).unwrap())
    }

    #[test]
    fn string_layout() {
        assert_eq!(encoded(&AttributeValue::S("a".into())), [b'a', 0x00, 0x01]);
        assert_eq!(
            encoded(&AttributeValue::B(vec![0, 1])),
            [0x00, 0xFF, 0x01, 0x00, 0x01]
        );
        assert_eq!(encoded(&AttributeValue::B(vec![])), [0x00, 0x01]);
    }

    #[test]
    fn number_layout() {
        assert_eq!(encoded(&n("0")), [NUMBER_ZERO]);
        // 12 = 1.2e1: exponent 1 + 130, nibbles 2,3 then terminator 0 and pad.
        assert_eq!(encoded(&n("12")), [NUMBER_POSITIVE, 131, 0x23, 0x00]);
        assert_eq!(encoded(&n("-12")), [NUMBER_NEGATIVE, !131, !0x23, !0x00]);
        assert_eq!(encoded(&n("5")), [NUMBER_POSITIVE, 130, 0x60]);
        let nines = "9".repeat(38);
        assert_eq!(encoded(&n(&format!("{nines}e88"))).len(), 22);
    }

    #[test]
    fn numbers_sort_numerically() {
        let ascending = [
            "-1e125", "-10", "-9.5", "-9", "-1e-130", "0", "1e-130", "0.5", "1", "1.05", "1.5",
            "9", "10", "100", "1e125",
        ];
        for pair in ascending.windows(2) {
            assert!(
                encoded(&n(pair[0])) < encoded(&n(pair[1])),
                "{} < {}",
                pair[0],
                pair[1]
            );
        }
        assert_eq!(encoded(&n("1000")), encoded(&n("1e3")));
    }

    #[test]
    fn rejects_non_key_types_and_bad_input() {
        let mut out = Vec::new();
        assert_eq!(
            encode_key_value(&AttributeValue::Null, &mut out),
            Err(KeyCodecError::NotAKeyType { type_name: "NULL" })
        );
        assert!(out.is_empty());
        assert_eq!(
            decode_key_value(b"abc", ScalarType::S),
            Err(KeyCodecError::Truncated)
        );
        assert_eq!(
            decode_key_value(&[b'a', 0x00], ScalarType::B),
            Err(KeyCodecError::Truncated)
        );
        assert_eq!(
            decode_key_value(&[0x00, 0x07], ScalarType::B),
            Err(KeyCodecError::InvalidEscape { byte: 0x07 })
        );
        assert_eq!(
            decode_key_value(&[0xC3, 0x00, 0x01], ScalarType::S),
            Err(KeyCodecError::InvalidUtf8)
        );
        assert_eq!(
            decode_key_value(&[], ScalarType::N),
            Err(KeyCodecError::Truncated)
        );
        assert!(decode_key_value(&[0x09], ScalarType::N).is_err());
        assert!(decode_key_value(&[NUMBER_POSITIVE, 130], ScalarType::N).is_err());
        assert!(decode_key_value(&[NUMBER_POSITIVE, 130, 0xF0], ScalarType::N).is_err());
        assert!(decode_key_value(&[NUMBER_POSITIVE, 130, 0x00], ScalarType::N).is_err());
        assert_eq!(
            decode_key_value(&[NUMBER_POSITIVE, 255, 0x20], ScalarType::N)
                .unwrap()
                .0,
            n("1e125")
        );
        // Forty digit nibbles without a terminator.
        let mut long = vec![NUMBER_POSITIVE, 130];
        long.extend([0x22; 20]);
        long.push(0x00);
        assert!(decode_key_value(&long, ScalarType::N).is_err());
    }

    #[test]
    fn decode_reports_bytes_used() {
        let mut key = encoded(&AttributeValue::S("pk\0".into()));
        let first_len = key.len();
        key.extend(encoded(&n("-3.25")));
        let (first, used) = decode_key_value(&key, ScalarType::S).unwrap();
        assert_eq!(first, AttributeValue::S("pk\0".into()));
        assert_eq!(used, first_len);
        let (second, used_second) = decode_key_value(&key[used..], ScalarType::N).unwrap();
        assert_eq!(second, n("-3.25"));
        assert_eq!(used + used_second, key.len());
    }
}
