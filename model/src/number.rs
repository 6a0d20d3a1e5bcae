//! DynamoDB numbers: up to 38 significant digits, exact decimal, no floating point.

use std::cmp::Ordering;
use std::fmt;

use crate::error::ApiError;

/// A DynamoDB number, exact: value = (-1)^negative × mantissa × 10^exponent, normalised so
/// the mantissa has no trailing zeros (zero is mantissa 0, exponent 0, not negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Number {
    negative: bool,
    mantissa: u128,
    exponent: i32,
}

impl Number {
    /// Parses DynamoDB number text (SPEC §1.2), with DynamoDB's errors for bad syntax,
    /// overflow, underflow and more than 38 significant digits.
    pub fn parse(text: &str) -> Result<Number, ApiError> {
        todo!("model helper: {text}")
    }

    /// Zero.
    pub fn zero() -> Number {
        Number {
            negative: false,
            mantissa: 0,
            exponent: 0,
        }
    }

    /// An integer.
    pub fn from_i64(value: i64) -> Number {
        todo!("model helper: {value}")
    }

    /// Exact sum, or DynamoDB's overflow/underflow/precision error.
    pub fn checked_add(&self, other: &Number) -> Result<Number, ApiError> {
        todo!("model helper: {other:?}")
    }

    /// Exact difference, or DynamoDB's overflow/underflow/precision error.
    pub fn checked_sub(&self, other: &Number) -> Result<Number, ApiError> {
        todo!("model helper: {other:?}")
    }

    /// Bytes this number counts for in item size (SPEC §1.3 number rule).
    pub fn byte_size(&self) -> usize {
        todo!()
    }

    /// Whether the number is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }
}

impl Ord for Number {
    fn cmp(&self, other: &Number) -> Ordering {
        todo!("model helper: {other:?}")
    }
}

impl PartialOrd for Number {
    fn partial_cmp(&self, other: &Number) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Canonical text, as DynamoDB returns it (plain decimal, never exponent form).
impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _ = f;
        todo!("model helper")
    }
}
