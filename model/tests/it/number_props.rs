//! Property tests for `Number` against the `bigdecimal` crate as an exact reference.

use std::str::FromStr;

use bigdecimal::{BigDecimal, Zero};
use proptest::prelude::*;
use shoal_model::number::{OVERFLOW_MESSAGE, PRECISION_MESSAGE, UNDERFLOW_MESSAGE};
use shoal_model::Number;

const TEN_POW_38: u128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;

fn reference(number: &Number) -> BigDecimal {
    BigDecimal::from_str(&number.to_string()).unwrap()
}

/// The error DynamoDB gives for storing `exact`, or `None` if it is storable.
fn expected_error(exact: &BigDecimal) -> Option<&'static str> {
    if exact.is_zero() {
        return None;
    }
    let normalized = exact.normalized();
    let digits = normalized.digits() as i64;
    let top_power = digits - 1 - normalized.fractional_digit_count();
    if digits > 38 || top_power > 125 {
        Some(OVERFLOW_MESSAGE)
    } else if top_power < -130 {
        Some(UNDERFLOW_MESSAGE)
    } else {
        None
    }
}

fn mantissa() -> impl Strategy<Value = u128> {
    prop_oneof![
        0u128..1_000,
        0u128..1_000_000_000_000,
        0u128..TEN_POW_38,
        (1u32..=38).prop_map(|k| 10u128.pow(k) - 1),
        (0u32..=37).prop_map(|k| 10u128.pow(k)),
    ]
}

fn exponent() -> impl Strategy<Value = i32> {
    prop_oneof![4 => -8i32..8, 1 => -167i32..=125, 1 => prop_oneof![-167i32..-120, 80i32..=125]]
}

fn number() -> impl Strategy<Value = Number> {
    (any::<bool>(), mantissa(), exponent()).prop_filter_map("in range", |(negative, m, e)| {
        Number::from_parts(negative, m, e).filter(|n| n.check_range().is_ok())
    })
}

/// SPEC §1.3's byte-cost rule applied directly to canonical text.
fn byte_size_from_text(text: &str) -> usize {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (integer, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let mut integer = integer.trim_start_matches('0');
    if fraction.is_empty() {
        integer = integer.trim_end_matches('0');
    }
    let mut fraction = fraction.trim_end_matches('0');
    if integer.is_empty() {
        fraction = fraction.trim_start_matches('0');
    }
    if integer.is_empty() && fraction.is_empty() {
        return 1;
    }
    1 + integer.len().div_ceil(2) + fraction.len().div_ceil(2) + usize::from(negative)
}

proptest! {
    #[test]
    fn text_round_trips(n in number()) {
        let text = n.to_string();
        prop_assert!(!text.contains('e') && !text.contains('E'));
        prop_assert_eq!(Number::parse(&text).unwrap(), n);
    }

    #[test]
    fn order_agrees_with_reference(a in number(), b in number()) {
        prop_assert_eq!(a.cmp(&b), reference(&a).cmp(&reference(&b)));
        prop_assert_eq!(a == b, reference(&a) == reference(&b));
    }

    #[test]
    fn add_and_sub_agree_with_reference(a in number(), b in number()) {
        let exact_sum = reference(&a) + reference(&b);
        match (a.checked_add(&b), expected_error(&exact_sum)) {
            (Ok(sum), None) => prop_assert_eq!(reference(&sum), exact_sum),
            (Err(error), Some(message)) => prop_assert_eq!(error.message, message),
            (got, expected) => prop_assert!(false, "{a} + {b}: got {got:?}, expected error {expected:?}"),
        }
        let exact_difference = reference(&a) - reference(&b);
        match (a.checked_sub(&b), expected_error(&exact_difference)) {
            (Ok(difference), None) => prop_assert_eq!(reference(&difference), exact_difference),
            (Err(error), Some(message)) => prop_assert_eq!(error.message, message),
            (got, expected) => prop_assert!(false, "{a} - {b}: got {got:?}, expected error {expected:?}"),
        }
    }

    #[test]
    fn parse_agrees_with_reference(
        negative in any::<bool>(),
        integer in "[0-9]{1,45}",
        fraction in "[0-9]{1,45}",
        exponent in prop_oneof![-20i64..20, -200i64..200],
    ) {
        let text = format!("{}{integer}.{fraction}E{exponent}", if negative { "-" } else { "" });
        let exact = BigDecimal::from_str(&text).unwrap();
        let expected = parse_error_for(&exact);
        match (Number::parse(&text), expected) {
            (Ok(n), None) => prop_assert_eq!(reference(&n), exact),
            (Err(error), Some(message)) => prop_assert_eq!(error.message, message),
            (got, expected) => prop_assert!(false, "{text}: got {got:?}, expected error {expected:?}"),
        }
    }

    #[test]
    fn byte_size_follows_the_text_rule(n in number()) {
        prop_assert_eq!(n.byte_size(), byte_size_from_text(&n.to_string()));
    }
}

/// The error `Number::parse` must give for text whose exact value is `exact`: magnitude is
/// checked before precision, and every zero is accepted.
fn parse_error_for(exact: &BigDecimal) -> Option<&'static str> {
    if exact.is_zero() {
        return None;
    }
    let normalized = exact.normalized();
    let top_power = normalized.digits() as i64 - 1 - normalized.fractional_digit_count();
    if top_power > 125 {
        Some(OVERFLOW_MESSAGE)
    } else if top_power < -130 {
        Some(UNDERFLOW_MESSAGE)
    } else if normalized.digits() > 38 {
        Some(PRECISION_MESSAGE)
    } else {
        None
    }
}
