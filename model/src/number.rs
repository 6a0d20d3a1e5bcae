//! DynamoDB numbers: up to 38 significant digits, exact decimal, no floating point.
//!
//! A number is kept as sign, an integer mantissa of at most 38 digits (fits a `u128`) and a
//! power-of-ten exponent. The representation is normalised (no trailing zeros in the
//! mantissa; zero is `0 × 10^0`, never negative), so the derived `PartialEq`/`Hash` are
//! numeric equality: `1000` and `1e3` are the same number.

use std::cmp::Ordering;
use std::fmt;

use crate::error::ApiError;

/// Most significant digits a DynamoDB number may carry.
pub const SIGNIFICANT_DIGITS_MAX: usize = 38;
/// Largest allowed scientific exponent (the `125` in `9.99…E+125`).
pub const SCIENTIFIC_EXPONENT_MAX: i64 = 125;
/// Smallest allowed scientific exponent (the `-130` in `1E-130`).
pub const SCIENTIFIC_EXPONENT_MIN: i64 = -130;

pub const UNPARSABLE_MESSAGE: &str = "The parameter cannot be converted to a numeric value";
pub const OVERFLOW_MESSAGE: &str =
    "Number overflow. Attempting to store a number with magnitude larger than supported range";
pub const UNDERFLOW_MESSAGE: &str =
    "Number underflow. Attempting to store a number with magnitude smaller than supported range";
pub const PRECISION_MESSAGE: &str =
    "Attempting to store more than 38 significant digits in a Number";

/// The error for text that is no number: DynamoDB quotes the text after the message, unless
/// it is empty (SPEC §1.2, SPEC-2 §3).
fn unparsable(text: &str) -> ApiError {
    if text.is_empty() {
        ApiError::validation(UNPARSABLE_MESSAGE)
    } else {
        ApiError::validation(format!("{UNPARSABLE_MESSAGE}: {text}"))
    }
}

/// Exponent text is clamped to this magnitude while parsing: anything past it is out of
/// range anyway, and clamping keeps the position arithmetic far from `i64` overflow.
const EXPONENT_TEXT_CLAMP: i64 = 1_000_000_000_000;

/// A DynamoDB number, exact: value = (-1)^negative × mantissa × 10^exponent, normalised so
/// the mantissa has no trailing zeros (zero is mantissa 0, exponent 0, not negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Number {
    negative: bool,
    mantissa: Mantissa,
    exponent: i32,
}

/// A `u128` aligned to 8 bytes instead of 16 (Rust's `u128` alignment on x86-64 since 1.77),
/// so that a `Number` is 24 bytes and an `AttributeValue` 32 instead of 32 and 48. Items are
/// maps of attribute values that every read builds and moves: in profiles of Query, moving
/// (name, value) pairs into the map was a tenth of the time. Read by copy only (`.0`), as a
/// packed field must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C, packed(8))]
struct Mantissa(u128);

impl Number {
    /// Parses DynamoDB number text (SPEC §1.2), with DynamoDB's errors for bad syntax,
    /// overflow, underflow and more than 38 significant digits.
    ///
    /// Checks run in DynamoDB's order: syntax, then magnitude (overflow/underflow), then
    /// precision. Every zero is accepted, including `0e126` and `0e-131`, which real
    /// DynamoDB rejects by a quirk (SPEC §1.2); `-0` becomes `0`.
    pub fn parse(text: &str) -> Result<Number, ApiError> {
        let parts = split_number_text(text).ok_or_else(|| unparsable(text))?;
        let digits: Vec<u8> = parts
            .integer_digits
            .iter()
            .chain(parts.fraction_digits.iter())
            .map(|digit| digit - b'0')
            .collect();
        let (first, last) = match (
            digits.iter().position(|&d| d != 0),
            digits.iter().rposition(|&d| d != 0),
        ) {
            (Some(first), Some(last)) => (first, last),
            _ => return Ok(Number::zero()),
        };
        // The digit at index i stands for 10^(integer_len - 1 - i + exponent).
        let integer_len = parts.integer_digits.len() as i64;
        let power_of = |index: usize| integer_len - 1 - index as i64 + parts.exponent;
        let scientific_exponent = power_of(first);
        if scientific_exponent > SCIENTIFIC_EXPONENT_MAX {
            return Err(ApiError::validation(OVERFLOW_MESSAGE));
        }
        if scientific_exponent < SCIENTIFIC_EXPONENT_MIN {
            return Err(ApiError::validation(UNDERFLOW_MESSAGE));
        }
        if last - first + 1 > SIGNIFICANT_DIGITS_MAX {
            return Err(ApiError::validation(PRECISION_MESSAGE));
        }
        let mantissa = digits[first..=last]
            .iter()
            .fold(0u128, |acc, &d| acc * 10 + u128::from(d));
        // In range by the checks above: between -130 - 37 and 125.
        let exponent = power_of(last) as i32;
        Ok(Number {
            negative: parts.negative,
            mantissa: Mantissa(mantissa),
            exponent,
        })
    }

    /// Zero.
    pub fn zero() -> Number {
        Number {
            negative: false,
            mantissa: Mantissa(0),
            exponent: 0,
        }
    }

    /// An integer.
    pub fn from_i64(value: i64) -> Number {
        Number::normalised(value < 0, u128::from(value.unsigned_abs()), 0)
    }

    /// Exact sum, or DynamoDB's overflow/underflow/precision error.
    ///
    /// A result that would need more than 38 significant digits (`1e50 + 1`) is reported
    /// with the overflow message, as DynamoDB does (SPEC §1.2).
    pub fn checked_add(&self, other: &Number) -> Result<Number, ApiError> {
        if self.is_zero() {
            return Ok(*other);
        }
        if other.is_zero() {
            return Ok(*self);
        }
        let exponent_low = self.exponent.min(other.exponent);
        let top_power = self.top_power().max(other.top_power());
        let span_digits = (top_power - i64::from(exponent_low) + 1) as usize;
        let sum = if span_digits <= SIGNIFICANT_DIGITS_MAX {
            add_aligned_small(self, other, exponent_low)
        } else {
            add_aligned_digits(self, other, exponent_low, span_digits)
        };
        let result = sum.ok_or_else(|| ApiError::validation(OVERFLOW_MESSAGE))?;
        result.check_range()?;
        Ok(result)
    }

    /// Exact difference, or DynamoDB's overflow/underflow/precision error.
    pub fn checked_sub(&self, other: &Number) -> Result<Number, ApiError> {
        self.checked_add(&other.negated())
    }

    /// The number with its sign flipped (zero stays zero).
    pub fn negated(&self) -> Number {
        Number::normalised(!self.negative, self.mantissa(), self.exponent)
    }

    /// Bytes this number counts for in item size (SPEC §1.3 number rule).
    ///
    /// `1 + ceil(integer_digits / 2) + ceil(fraction_digits / 2) + (1 if negative)`, zero
    /// costs 1. Integer digits are counted from the first significant digit to the decimal
    /// point, but only when a fraction follows (else trailing zeros are dropped); fraction
    /// digits are counted from the decimal point when there is an integer part, else from
    /// the first significant digit. This rule fits every byte count measured against AWS
    /// (SPEC §1.3). A base-100 encoding aligned to the decimal point also fits them all and
    /// differs on untested inputs such as `0.015` (3 vs 2) and `1.1E10` (3 vs 2); we follow
    /// the SPEC's rule.
    pub fn byte_size(&self) -> usize {
        if self.is_zero() {
            return 1;
        }
        let digits = decimal_digit_count(self.mantissa()) as i64;
        let exponent = i64::from(self.exponent);
        let (integer_digits, fraction_digits) = if exponent >= 0 {
            (digits, 0)
        } else {
            let integer_digits = (digits + exponent).max(0);
            let fraction_digits = if integer_digits > 0 {
                -exponent
            } else {
                digits
            };
            (integer_digits, fraction_digits)
        };
        let sign_byte = usize::from(self.negative);
        1 + (integer_digits as usize).div_ceil(2)
            + (fraction_digits as usize).div_ceil(2)
            + sign_byte
    }

    /// Whether the number is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa() == 0
    }

    /// Whether the number is below zero.
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// The mantissa (no trailing zeros, at most 38 digits).
    pub fn mantissa(&self) -> u128 {
        self.mantissa.0
    }

    /// The power of ten the mantissa is scaled by.
    pub fn exponent(&self) -> i32 {
        self.exponent
    }

    /// Builds a number from parts, normalising trailing zeros and the sign of zero.
    /// Returns `None` if the mantissa has more than 38 digits; the range is not checked
    /// (see `check_range`).
    pub fn from_parts(negative: bool, mantissa: u128, exponent: i32) -> Option<Number> {
        let number = Number::normalised(negative, mantissa, exponent);
        (decimal_digit_count(number.mantissa()) <= SIGNIFICANT_DIGITS_MAX).then_some(number)
    }

    /// DynamoDB's range check: overflow, underflow, or 38 significant digits.
    pub fn check_range(&self) -> Result<(), ApiError> {
        if self.is_zero() {
            return Ok(());
        }
        if decimal_digit_count(self.mantissa()) > SIGNIFICANT_DIGITS_MAX {
            return Err(ApiError::validation(PRECISION_MESSAGE));
        }
        let top_power = self.top_power();
        if top_power > SCIENTIFIC_EXPONENT_MAX {
            return Err(ApiError::validation(OVERFLOW_MESSAGE));
        }
        if top_power < SCIENTIFIC_EXPONENT_MIN {
            return Err(ApiError::validation(UNDERFLOW_MESSAGE));
        }
        Ok(())
    }

    /// The power of ten of the most significant digit (the scientific exponent).
    /// Meaningless for zero.
    pub fn top_power(&self) -> i64 {
        i64::from(self.exponent) + decimal_digit_count(self.mantissa()) as i64 - 1
    }

    fn normalised(negative: bool, mut mantissa: u128, mut exponent: i32) -> Number {
        if mantissa == 0 {
            return Number::zero();
        }
        while mantissa.is_multiple_of(10) {
            mantissa /= 10;
            exponent += 1;
        }
        Number {
            negative,
            mantissa: Mantissa(mantissa),
            exponent,
        }
    }

    /// Compares magnitudes, ignoring the sign.
    fn cmp_magnitude(&self, other: &Number) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        self.top_power().cmp(&other.top_power()).then_with(|| {
            // Same leading power: compare the digit strings left-aligned to 38 digits
            // (10^38 - 1 fits a u128).
            let left = self.mantissa()
                * pow10(SIGNIFICANT_DIGITS_MAX - decimal_digit_count(self.mantissa()));
            let right = other.mantissa()
                * pow10(SIGNIFICANT_DIGITS_MAX - decimal_digit_count(other.mantissa()));
            left.cmp(&right)
        })
    }
}

impl Ord for Number {
    fn cmp(&self, other: &Number) -> Ordering {
        match (self.negative, other.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_magnitude(other),
            (true, true) => other.cmp_magnitude(self),
        }
    }
}

impl PartialOrd for Number {
    fn partial_cmp(&self, other: &Number) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::str::FromStr for Number {
    type Err = ApiError;

    fn from_str(text: &str) -> Result<Number, ApiError> {
        Number::parse(text)
    }
}

/// Canonical text, as DynamoDB returns it (plain decimal, never exponent form).
impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        // itoa writes a u128 on the stack, several times faster than `to_string`'s
        // allocation and generic formatting: every number of every answer comes through here.
        let mut digits_buffer = itoa::Buffer::new();
        let digits = digits_buffer.format(self.mantissa());
        if self.exponent >= 0 {
            f.write_str(digits)?;
            for _ in 0..self.exponent {
                f.write_str("0")?;
            }
            return Ok(());
        }
        let fraction_len = self.exponent.unsigned_abs() as usize;
        if digits.len() > fraction_len {
            let (integer, fraction) = digits.split_at(digits.len() - fraction_len);
            write!(f, "{integer}.{fraction}")
        } else {
            f.write_str("0.")?;
            for _ in 0..fraction_len - digits.len() {
                f.write_str("0")?;
            }
            f.write_str(digits)
        }
    }
}

/// Number text split into its syntactic parts (digits as ASCII bytes).
struct NumberText<'a> {
    negative: bool,
    integer_digits: &'a [u8],
    fraction_digits: &'a [u8],
    exponent: i64,
}

/// Splits `[+-]digits[.digits][(e|E)[+-]digits]`; at least one mantissa digit is required.
/// Returns `None` for anything else (spaces, `NaN`, `Infinity`, empty, …).
fn split_number_text(text: &str) -> Option<NumberText<'_>> {
    let bytes = text.as_bytes();
    let mut position = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            position += 1;
            true
        }
        Some(b'+') => {
            position += 1;
            false
        }
        _ => false,
    };
    let take_digits = |start: usize| {
        let len = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        (&bytes[start..start + len], start + len)
    };
    let (integer_digits, after_integer) = take_digits(position);
    position = after_integer;
    let mut fraction_digits: &[u8] = &[];
    if bytes.get(position) == Some(&b'.') {
        let (digits, after_fraction) = take_digits(position + 1);
        fraction_digits = digits;
        position = after_fraction;
    }
    if integer_digits.is_empty() && fraction_digits.is_empty() {
        return None;
    }
    let mut exponent = 0i64;
    if matches!(bytes.get(position), Some(b'e' | b'E')) {
        position += 1;
        let exponent_negative = match bytes.get(position) {
            Some(b'-') => {
                position += 1;
                true
            }
            Some(b'+') => {
                position += 1;
                false
            }
            _ => false,
        };
        let (digits, after_exponent) = take_digits(position);
        if digits.is_empty() {
            return None;
        }
        position = after_exponent;
        for digit in digits {
            exponent = (exponent * 10 + i64::from(digit - b'0')).min(EXPONENT_TEXT_CLAMP);
        }
        if exponent_negative {
            exponent = -exponent;
        }
    }
    if position != bytes.len() {
        return None;
    }
    Some(NumberText {
        negative,
        integer_digits,
        fraction_digits,
        exponent,
    })
}

/// Number of decimal digits of `value` (0 has 1 digit).
fn decimal_digit_count(value: u128) -> usize {
    if value == 0 {
        1
    } else {
        value.ilog10() as usize + 1
    }
}

/// 10^power for power <= 38.
fn pow10(power: usize) -> u128 {
    debug_assert!(power <= SIGNIFICANT_DIGITS_MAX);
    10u128.pow(power as u32)
}

/// Signed sum when both operands, scaled to `exponent_low`, have at most 38 digits, so each
/// is below 10^38 and the sum below 2×10^38 < u128::MAX. `None` if the exact result needs
/// more than 38 digits.
fn add_aligned_small(left: &Number, right: &Number, exponent_low: i32) -> Option<Number> {
    let scaled = |n: &Number| n.mantissa() * pow10((n.exponent - exponent_low) as usize);
    let (left_magnitude, right_magnitude) = (scaled(left), scaled(right));
    let (negative, magnitude) = if left.negative == right.negative {
        (left.negative, left_magnitude + right_magnitude)
    } else if left_magnitude >= right_magnitude {
        (left.negative, left_magnitude - right_magnitude)
    } else {
        (right.negative, right_magnitude - left_magnitude)
    };
    Number::from_parts(negative, magnitude, exponent_low)
}

/// Signed sum for operands too far apart to align in a u128: schoolbook arithmetic on
/// decimal digit arrays (least significant first). Valid numbers span at most ~300 digit
/// positions, so this stays small. `None` if the exact result needs more than 38 digits.
fn add_aligned_digits(
    left: &Number,
    right: &Number,
    exponent_low: i32,
    span_digits: usize,
) -> Option<Number> {
    let to_digits = |n: &Number| {
        let mut digits = vec![0u8; span_digits + 1];
        let mut mantissa = n.mantissa();
        let mut index = (n.exponent - exponent_low) as usize;
        while mantissa > 0 {
            digits[index] = (mantissa % 10) as u8;
            mantissa /= 10;
            index += 1;
        }
        digits
    };
    let (left_digits, right_digits) = (to_digits(left), to_digits(right));
    let (negative, result_digits) = if left.negative == right.negative {
        (left.negative, add_digits(&left_digits, &right_digits))
    } else if left.cmp_magnitude(right) != Ordering::Less {
        (left.negative, sub_digits(&left_digits, &right_digits))
    } else {
        (right.negative, sub_digits(&right_digits, &left_digits))
    };
    let (Some(first), Some(last)) = (
        result_digits.iter().position(|&d| d != 0),
        result_digits.iter().rposition(|&d| d != 0),
    ) else {
        return Some(Number::zero());
    };
    if last - first + 1 > SIGNIFICANT_DIGITS_MAX {
        return None;
    }
    let mantissa = result_digits[first..=last]
        .iter()
        .rev()
        .fold(0u128, |acc, &d| acc * 10 + u128::from(d));
    Number::from_parts(negative, mantissa, exponent_low + first as i32)
}

/// `left + right`, equal-length little-endian digit arrays whose top digit is 0 (room for
/// the carry).
fn add_digits(left: &[u8], right: &[u8]) -> Vec<u8> {
    let mut carry = 0;
    left.iter()
        .zip(right)
        .map(|(&a, &b)| {
            let total = a + b + carry;
            carry = total / 10;
            total % 10
        })
        .collect()
}

/// `left - right` for `left >= right`, equal-length little-endian digit arrays.
fn sub_digits(left: &[u8], right: &[u8]) -> Vec<u8> {
    let mut borrow = 0;
    left.iter()
        .zip(right)
        .map(|(&a, &b)| {
            let subtrahend = b + borrow;
            if a >= subtrahend {
                borrow = 0;
                a - subtrahend
            } else {
                borrow = 1;
                a + 10 - subtrahend
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> Number {
        Number::parse(text).unwrap()
    }

    fn parse_error(text: &str) -> String {
        Number::parse(text).unwrap_err().message
    }

    #[test]
    fn normalisation_table() {
        let cases = [
            ("007", "7"),
            ("001.23", "1.23"),
            ("+3", "3"),
            ("0042.1200", "42.12"),
            ("1.0", "1"),
            ("1.10", "1.1"),
            ("100.000", "100"),
            ("0.0", "0"),
            ("-0.0", "0"),
            ("-0", "0"),
            ("1e3", "1000"),
            ("1.5e2", "150"),
            ("-3e2", "-300"),
            ("1.23e4", "12300"),
            ("1e-3", "0.001"),
            ("123e-2", "1.23"),
            (".5", "0.5"),
            ("-.5", "-0.5"),
            ("1e+5", "100000"),
            ("1E5", "100000"),
            ("5.", "5"),
        ];
        for (input, expected) in cases {
            assert_eq!(n(input).to_string(), expected, "input {input}");
        }
        assert_eq!(n("1E125").to_string(), format!("1{}", "0".repeat(125)));
        assert_eq!(n("1E-130").to_string(), format!("0.{}1", "0".repeat(129)));
    }

    #[test]
    fn rejects_bad_syntax() {
        for text in [
            "",
            " 1",
            "1 ",
            "NaN",
            "Infinity",
            "-Infinity",
            "abc",
            "1e",
            "1e+",
            ".",
            "-",
            "+",
            "1.2.3",
            "1e5.5",
            "--1",
            "0x10",
            "1_000",
            "e5",
            "١",
        ] {
            let quoted = if text.is_empty() {
                UNPARSABLE_MESSAGE.to_string()
            } else {
                format!("{UNPARSABLE_MESSAGE}: {text}")
            };
            assert_eq!(parse_error(text), quoted, "input {text:?}");
        }
    }

    #[test]
    fn range_limits() {
        let nines = "9".repeat(38);
        let largest = format!("9.{}E+125", &nines[1..]);
        assert!(Number::parse(&largest).is_ok());
        assert!(Number::parse(&format!("-{largest}")).is_ok());
        assert!(Number::parse("1E-130").is_ok());
        assert!(Number::parse("-1E-130").is_ok());
        assert_eq!(parse_error("1E126"), OVERFLOW_MESSAGE);
        assert_eq!(parse_error("-1E126"), OVERFLOW_MESSAGE);
        assert_eq!(parse_error("10E125"), OVERFLOW_MESSAGE);
        assert_eq!(parse_error("1E-131"), UNDERFLOW_MESSAGE);
        assert_eq!(parse_error("-0.1E-130"), UNDERFLOW_MESSAGE);
        assert_eq!(parse_error("1e99999999999999999999999"), OVERFLOW_MESSAGE);
        assert_eq!(parse_error("1e-99999999999999999999999"), UNDERFLOW_MESSAGE);
        // Zeros are accepted whatever their exponent (documented divergence from AWS).
        assert!(n("0e126").is_zero());
        assert!(n("0e-131").is_zero());
    }

    #[test]
    fn significant_digit_limit() {
        let digits_38 = "1".repeat(38);
        let digits_39 = "1".repeat(39);
        assert_eq!(n(&digits_38).to_string(), digits_38);
        assert_eq!(parse_error(&digits_39), PRECISION_MESSAGE);
        assert_eq!(parse_error(&format!("0.{digits_39}")), PRECISION_MESSAGE);
        // Leading and trailing zeros are not significant.
        let padded = format!("000{digits_38}000.000");
        assert_eq!(n(&padded).to_string(), format!("{digits_38}000"));
        // Overflow is reported before precision.
        assert_eq!(parse_error(&format!("{digits_39}e200")), OVERFLOW_MESSAGE);
    }

    #[test]
    fn numeric_equality_and_order() {
        assert_eq!(n("1000"), n("1e3"));
        assert_eq!(n("-0"), n("0"));
        assert_eq!(n("0.5"), n("5e-1"));
        let ascending = [
            "-1e125", "-10", "-9.5", "-1e-130", "0", "1e-130", "0.5", "1", "1.5", "9", "10",
            "1e125",
        ];
        for pair in ascending.windows(2) {
            assert!(n(pair[0]) < n(pair[1]), "{} < {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn from_str_is_parse() {
        assert_eq!("1.50".parse::<Number>().unwrap(), n("1.5"));
        assert_eq!(
            "x".parse::<Number>().unwrap_err().message,
            format!("{UNPARSABLE_MESSAGE}: x")
        );
    }

    #[test]
    fn from_i64() {
        assert_eq!(Number::from_i64(0), Number::zero());
        assert_eq!(Number::from_i64(-1200), n("-1.2e3"));
        assert_eq!(Number::from_i64(i64::MIN).to_string(), i64::MIN.to_string());
    }

    #[test]
    fn byte_sizes_match_spec_examples() {
        let cases = [
            ("0", 1),
            ("1", 2),
            ("12", 2),
            ("123", 3),
            ("1234", 3),
            ("12345678901234567890123456789012345678", 20),
            ("0042", 2),
            ("100", 2),
            ("1010", 3),
            ("0.0000001", 2),
            ("1E125", 2),
            ("1E-100", 2),
            ("1.5", 3),
            ("15", 2),
            ("1.200", 3),
            ("1.234", 4),
            ("3.14159", 5),
            ("123456", 4),
            ("100.5", 4),
            ("0.15", 2),
            ("-42", 3),
            ("-0", 1),
        ];
        for (input, expected) in cases {
            assert_eq!(n(input).byte_size(), expected, "input {input}");
        }
    }

    #[test]
    fn addition_and_subtraction() {
        assert_eq!(
            n("1.5").checked_add(&n("2.25")).unwrap().to_string(),
            "3.75"
        );
        assert_eq!(n("1").checked_sub(&n("3")).unwrap().to_string(), "-2");
        assert_eq!(n("5").checked_sub(&n("5")).unwrap(), Number::zero());
        // 1e38 - (38 nines) = 1: operands span 39 digit positions but the result is tiny.
        let nines = "9".repeat(38);
        assert_eq!(n("1e38").checked_sub(&n(&nines)).unwrap().to_string(), "1");
        assert_eq!(n(&nines).checked_sub(&n("1e38")).unwrap().to_string(), "-1");
        // The exact result needs more than 38 digits: DynamoDB calls it overflow.
        assert_eq!(
            n("1e50").checked_add(&n("1")).unwrap_err().message,
            OVERFLOW_MESSAGE
        );
        assert_eq!(
            n(&nines).checked_add(&n("1")).unwrap().to_string(),
            format!("1{}", "0".repeat(38))
        );
        assert_eq!(
            n(&nines).checked_add(&n("0.1")).unwrap_err().message,
            OVERFLOW_MESSAGE
        );
        // Out of range results.
        let largest = format!("{nines}e88");
        assert_eq!(
            n(&largest).checked_add(&n("1e88")).unwrap_err().message,
            OVERFLOW_MESSAGE
        );
        assert_eq!(
            n("1.5e-130").checked_sub(&n("1e-130")).unwrap_err().message,
            UNDERFLOW_MESSAGE
        );
        assert_eq!(
            n("1e125").checked_add(&n("1e-130")).unwrap_err().message,
            OVERFLOW_MESSAGE
        );
    }
}
