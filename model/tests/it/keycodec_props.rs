//! Property tests for the key encodings: byte order equals DynamoDB order, also for
//! concatenations of two components, and decoding inverts encoding.

use std::cmp::Ordering;

use proptest::prelude::*;
use shoal_model::keycodec::{
    decode_key_value, encode_key_value, encoded_key_value_len, ScalarType,
};
use shoal_model::{AttributeValue, Number};

const TEN_POW_38: u128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;

fn number() -> impl Strategy<Value = Number> {
    let mantissa = prop_oneof![
        0u128..100,
        0u128..TEN_POW_38,
        (1u32..=38).prop_map(|k| 10u128.pow(k) - 1)
    ];
    let exponent = prop_oneof![-4i32..4, -167i32..=125];
    (any::<bool>(), mantissa, exponent).prop_filter_map("in range", |(negative, m, e)| {
        Number::from_parts(negative, m, e).filter(|n| n.check_range().is_ok())
    })
}

/// Bytes biased towards the escape-relevant values 0x00, 0x01 and 0xFF.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![Just(0u8), Just(1u8), Just(0xFF), any::<u8>()],
        0..8,
    )
}

fn value_of(kind: ScalarType) -> BoxedStrategy<AttributeValue> {
    match kind {
        ScalarType::S => prop_oneof![
            "[ab\u{0}\u{1}é]{0,6}".prop_map(AttributeValue::S),
            any::<String>().prop_map(AttributeValue::S),
        ]
        .boxed(),
        ScalarType::N => number().prop_map(AttributeValue::N).boxed(),
        ScalarType::B => bytes().prop_map(AttributeValue::B).boxed(),
    }
}

fn kind() -> impl Strategy<Value = ScalarType> {
    prop_oneof![
        Just(ScalarType::S),
        Just(ScalarType::N),
        Just(ScalarType::B)
    ]
}

/// DynamoDB's order for two values of the same key type.
fn dynamodb_order(left: &AttributeValue, right: &AttributeValue) -> Ordering {
    match (left, right) {
        (AttributeValue::S(a), AttributeValue::S(b)) => a.as_bytes().cmp(b.as_bytes()),
        (AttributeValue::N(a), AttributeValue::N(b)) => a.cmp(b),
        (AttributeValue::B(a), AttributeValue::B(b)) => a.cmp(b),
        _ => panic!("values of different types: {left:?} {right:?}"),
    }
}

fn encode_all(values: &[&AttributeValue]) -> Vec<u8> {
    let mut out = Vec::new();
    for value in values {
        encode_key_value(value, &mut out).unwrap();
    }
    out
}

/// Two pairs of values: (first kind, second kind) each.
fn two_keys() -> impl Strategy<Value = ([ScalarType; 2], [AttributeValue; 4])> {
    (kind(), kind()).prop_flat_map(|(first, second)| {
        (
            Just([first, second]),
            (
                value_of(first),
                value_of(second),
                value_of(first),
                value_of(second),
            )
                .prop_map(|(a, b, c, d)| [a, b, c, d]),
        )
    })
}

proptest! {
    #[test]
    fn single_value_order_and_round_trip(
        (kind, left, right) in kind().prop_flat_map(|k| (Just(k), value_of(k), value_of(k)))
    ) {
        let (left_bytes, right_bytes) = (encode_all(&[&left]), encode_all(&[&right]));
        prop_assert_eq!(left_bytes.cmp(&right_bytes), dynamodb_order(&left, &right));
        let (decoded, used) = decode_key_value(&left_bytes, kind).unwrap();
        prop_assert_eq!(used, left_bytes.len());
        prop_assert_eq!(decoded, left);
    }

    #[test]
    fn concatenated_order_and_round_trip(([first, second], [a1, a2, b1, b2]) in two_keys()) {
        let key_a = encode_all(&[&a1, &a2]);
        let key_b = encode_all(&[&b1, &b2]);
        let expected = dynamodb_order(&a1, &b1).then_with(|| dynamodb_order(&a2, &b2));
        prop_assert_eq!(key_a.cmp(&key_b), expected);

        let (decoded_first, used_first) = decode_key_value(&key_a, first).unwrap();
        let (decoded_second, used_second) = decode_key_value(&key_a[used_first..], second).unwrap();
        prop_assert_eq!(decoded_first, a1);
        prop_assert_eq!(decoded_second, a2);
        prop_assert_eq!(used_first + used_second, key_a.len());
        // The length alone, without decoding, agrees.
        prop_assert_eq!(encoded_key_value_len(&key_a, first), Ok(used_first));
    }

    #[test]
    fn decoding_garbage_never_panics(input in prop::collection::vec(any::<u8>(), 0..40), kind in kind()) {
        let decoded = decode_key_value(&input, kind);
        if let Ok((_, used)) = decoded {
            prop_assert!(used <= input.len());
        }
        // The length-only walk agrees with decoding, except that it does not check UTF-8.
        match (decoded, encoded_key_value_len(&input, kind)) {
            (Ok((_, used)), length) => prop_assert_eq!(length, Ok(used)),
            (Err(shoal_model::keycodec::KeyCodecError::InvalidUtf8), length) => prop_assert!(length.is_ok()),
            (Err(error), length) => prop_assert_eq!(length, Err(error)),
        }
    }
}
