//! The physical key layout (docs/DESIGN.md §2): how items, LSI entries, collection records and
//! GSI entries are named in the LSM trees.
//!
//! ```text
//! table tree:  hash64(pk) | pk | section | rest
//!   section 0x00           base item          rest = sk                   (empty if no sort key)
//!   section 0x01..=0x05    LSI entry          rest = LSI sort value | sk  (ties ordered by sk)
//!   section 0xFF           collection record  rest = empty
//! GSI tree:    hash64(gsi pk) | gsi pk | gsi sk | table pk | table sk    (ties ordered by table key)
//! ```
//!
//! A GSI with a multi-attribute key (SPEC-3 §1: HASH attributes H1..Hm, m ≤ 4, and RANGE
//! attributes R1..Rn, n ≤ 4) stores its entries under
//!
//! ```text
//! GSI tree:    hash64(H1..Hm) | H1 | … | Hm | R1 | … | Rn | table pk | table sk
//! ```
//!
//! where `H1 | … | Hm` is the concatenation of each component's own encoding (each keeps
//! its type, S, N or B) and `hash64` runs over those concatenated bytes. Because every
//! component encoding is self-delimiting and order-preserving, byte order of the
//! concatenation is the tuple order DynamoDB sorts by: R1 first, then R2 among equal R1,
//! and so on, each by its own type. One HASH and at most one RANGE attribute is the
//! single-attribute layout above byte for byte, so GSIs stored before multi-attribute keys
//! existed read unchanged. A query's equality conditions on R1..Rk-1 extend the partition
//! prefix, and its condition on Rk becomes a [`sort_range`] after it.
//!
//! `hash64` is 8 bytes, big-endian; every other component is a key value in the
//! order-preserving, self-delimiting encoding of `shoal_model::keycodec`, so byte order is
//! DynamoDB order and a key can be decoded back into attribute values (LastEvaluatedKey).
//! The hash spreads collections over the key space, gives Scan its order and makes
//! parallel-scan segments contiguous hash ranges; the bloom filters are built on it.
//!
//! `hash64` is part of the on-disk format and must never change: FNV-1a over the encoded
//! partition key, then MurmurHash3's 64-bit finalizer to spread the bits.

use std::ops::Bound;

use shoal_expr::SortKeyCondition;
use shoal_model::keycodec::{
    decode_key_value, encode_key_value, encoded_key_value_len, KeyCodecError,
};
use shoal_model::{AttributeValue, ScalarType};

/// Section byte of base items.
pub const SECTION_BASE: u8 = 0x00;
/// Section byte of the collection record.
pub const SECTION_COLLECTION: u8 = 0xFF;
/// Length of the hash prefix.
pub const HASH_BYTES: usize = 8;

/// The bloom-filter prefix of any key in a table or GSI tree: its partition-key hash.
pub fn bloom_prefix(key: &[u8]) -> &[u8] {
    &key[..key.len().min(HASH_BYTES)]
}

/// The stable 64-bit hash of an encoded partition key.
pub fn hash64(encoded_pk: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in encoded_pk {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // MurmurHash3 fmix64.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Encodes one key value; the caller has type-checked it (S, N or B).
pub fn encode_value(value: &AttributeValue, out: &mut Vec<u8>) -> Result<(), KeyCodecError> {
    encode_key_value(value, out)
}

/// `hash64(pk) | pk`: the prefix every key of one item collection (or one GSI partition)
/// starts with.
pub fn partition_prefix(pk: &AttributeValue) -> Result<Vec<u8>, KeyCodecError> {
    partition_prefix_of(&[pk])
}

/// `hash64(H1..Hm) | H1 | … | Hm`: the prefix of one partition of a GSI whose HASH key has
/// the components `hash` (one for every table and single-attribute GSI).
pub fn partition_prefix_of(hash: &[&AttributeValue]) -> Result<Vec<u8>, KeyCodecError> {
    // The hash comes first but covers the components after it: its room is left and
    // filled last, so they are encoded once, in place, with no second buffer.
    let mut out = Vec::with_capacity(HASH_BYTES + 24 * hash.len() + 24);
    out.resize(HASH_BYTES, 0);
    for value in hash {
        encode_key_value(value, &mut out)?;
    }
    let hashed = hash64(&out[HASH_BYTES..]).to_be_bytes();
    out[..HASH_BYTES].copy_from_slice(&hashed);
    Ok(out)
}

/// The key of a base item.
pub fn base_key(
    pk: &AttributeValue,
    sk: Option<&AttributeValue>,
) -> Result<Vec<u8>, KeyCodecError> {
    let mut key = partition_prefix(pk)?;
    key.push(SECTION_BASE);
    if let Some(sk) = sk {
        encode_key_value(sk, &mut key)?;
    }
    Ok(key)
}

/// The key of an LSI entry.
pub fn lsi_key(
    pk: &AttributeValue,
    section: u8,
    lsi_sk: &AttributeValue,
    table_sk: Option<&AttributeValue>,
) -> Result<Vec<u8>, KeyCodecError> {
    debug_assert!(
        (1..=5).contains(&section),
        "LSI section {section} out of range"
    );
    let mut key = partition_prefix(pk)?;
    key.push(section);
    encode_key_value(lsi_sk, &mut key)?;
    if let Some(sk) = table_sk {
        encode_key_value(sk, &mut key)?;
    }
    Ok(key)
}

/// The key of a collection's size record.
pub fn collection_key(pk: &AttributeValue) -> Result<Vec<u8>, KeyCodecError> {
    let mut key = partition_prefix(pk)?;
    key.push(SECTION_COLLECTION);
    Ok(key)
}

/// The key of a GSI entry.
pub fn gsi_key(
    gsi_pk: &AttributeValue,
    gsi_sk: Option<&AttributeValue>,
    table_pk: &AttributeValue,
    table_sk: Option<&AttributeValue>,
) -> Result<Vec<u8>, KeyCodecError> {
    let range: Vec<&AttributeValue> = gsi_sk.into_iter().collect();
    gsi_key_of(&[gsi_pk], &range, table_pk, table_sk)
}

/// The key of a GSI entry whose key has the HASH components `hash` and the RANGE
/// components `range`, in schema order (see the module docs).
pub fn gsi_key_of(
    hash: &[&AttributeValue],
    range: &[&AttributeValue],
    table_pk: &AttributeValue,
    table_sk: Option<&AttributeValue>,
) -> Result<Vec<u8>, KeyCodecError> {
    let mut key = partition_prefix_of(hash)?;
    for value in range {
        encode_key_value(value, &mut key)?;
    }
    encode_key_value(table_pk, &mut key)?;
    if let Some(sk) = table_sk {
        encode_key_value(sk, &mut key)?;
    }
    Ok(key)
}

/// Splits a table-tree key at its section byte: returns the length of `hash64(pk) | pk` and
/// the section (base item, LSI n, or collection record).
pub fn split_table_key(key: &[u8], pk_type: ScalarType) -> Result<(usize, u8), KeyCodecError> {
    let encoded_pk = key.get(HASH_BYTES..).ok_or(KeyCodecError::Truncated)?;
    let prefix_len = HASH_BYTES + encoded_key_value_len(encoded_pk, pk_type)?;
    let section = *key.get(prefix_len).ok_or(KeyCodecError::Truncated)?;
    Ok((prefix_len, section))
}

/// The length of `hash64(gsi pk) | gsi pk` in a GSI-tree key: the partition prefix
/// ([`partition_prefix_of`]) of the GSI partition the entry lives on. `gsi_hash_types`
/// are the types of the HASH components in schema order.
pub fn gsi_partition_prefix_len(
    key: &[u8],
    gsi_hash_types: &[ScalarType],
) -> Result<usize, KeyCodecError> {
    let mut len = HASH_BYTES;
    for ty in gsi_hash_types {
        let rest = key.get(len..).ok_or(KeyCodecError::Truncated)?;
        len += encoded_key_value_len(rest, *ty)?;
    }
    Ok(len)
}

/// The key of the base item an LSI entry was derived from: the entry's key is
/// `prefix | section | LSI sort value | table sort key`, the item's `prefix | 0x00 | table
/// sort key`. `prefix_len` is the length of `hash64(pk) | pk` (from [`split_table_key`]).
/// Used to trace a stored entry back to its item without trusting the entry's value.
pub fn base_key_of_lsi_entry(
    key: &[u8],
    prefix_len: usize,
    lsi_sort_type: ScalarType,
) -> Result<Vec<u8>, KeyCodecError> {
    let after_section = key.get(prefix_len + 1..).ok_or(KeyCodecError::Truncated)?;
    let table_sk = &after_section[encoded_key_value_len(after_section, lsi_sort_type)?..];
    let mut base = Vec::with_capacity(prefix_len + 1 + table_sk.len());
    base.extend_from_slice(&key[..prefix_len]);
    base.push(SECTION_BASE);
    base.extend_from_slice(table_sk);
    Ok(base)
}

/// The key of the base item a GSI entry was derived from: the entry's key is
/// `hash64(gsi pk) | gsi pk | gsi sk | table pk | table sk`, the item's
/// `hash64(table pk) | table pk | 0x00 | table sk`. `gsi_types` are the types of every
/// GSI key component (HASH then RANGE, schema order).
pub fn base_key_of_gsi_entry(
    key: &[u8],
    gsi_types: &[ScalarType],
    table_hash_type: ScalarType,
) -> Result<Vec<u8>, KeyCodecError> {
    let mut rest = key.get(HASH_BYTES..).ok_or(KeyCodecError::Truncated)?;
    for ty in gsi_types {
        rest = &rest[encoded_key_value_len(rest, *ty)?..];
    }
    let (table_pk, table_sk) = rest.split_at(encoded_key_value_len(rest, table_hash_type)?);
    let mut base = Vec::with_capacity(HASH_BYTES + rest.len() + 1);
    base.extend_from_slice(&hash64(table_pk).to_be_bytes());
    base.extend_from_slice(table_pk);
    base.push(SECTION_BASE);
    base.extend_from_slice(table_sk);
    Ok(base)
}

/// Decodes a sequence of key values of the given types from `bytes` (after any hash and
/// section bytes), requiring that they use the bytes exactly.
pub fn decode_values(
    mut bytes: &[u8],
    types: &[ScalarType],
) -> Result<Vec<AttributeValue>, KeyCodecError> {
    let mut values = Vec::with_capacity(types.len());
    for ty in types {
        let (value, used) = decode_key_value(bytes, *ty)?;
        values.push(value);
        bytes = &bytes[used..];
    }
    if !bytes.is_empty() {
        return Err(KeyCodecError::Truncated);
    }
    Ok(values)
}

/// The smallest byte string greater than every string that starts with `prefix`, or None
/// when there is none (all 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last < 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

/// A range of keys in one tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub lower: Bound<Vec<u8>>,
    pub upper: Bound<Vec<u8>>,
}

impl KeyRange {
    /// Every key starting with `prefix`.
    pub fn with_prefix(prefix: Vec<u8>) -> KeyRange {
        let upper = match prefix_successor(&prefix) {
            Some(successor) => Bound::Excluded(successor),
            None => Bound::Unbounded,
        };
        KeyRange {
            lower: Bound::Included(prefix),
            upper,
        }
    }

    pub fn lower_ref(&self) -> Bound<&[u8]> {
        as_ref(&self.lower)
    }

    pub fn upper_ref(&self) -> Bound<&[u8]> {
        as_ref(&self.upper)
    }
}

fn as_ref(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The key range holding every key that starts with `prefix` followed by a sort component
/// satisfying `condition` (and possibly more components after it: the table sort key of an
/// LSI entry, the table key of a GSI entry). Works because every component is
/// self-delimiting and order-preserving: all keys whose sort component is `v` share the
/// prefix `prefix | enc(v)`.
pub fn sort_range(
    prefix: &[u8],
    condition: Option<&SortKeyCondition>,
) -> Result<KeyRange, KeyCodecError> {
    let with = |value: &AttributeValue| -> Result<Vec<u8>, KeyCodecError> {
        let mut key = prefix.to_vec();
        encode_key_value(value, &mut key)?;
        Ok(key)
    };
    // All keys whose component is exactly `v` lie in [with(v), successor(with(v))).
    let after = |value: &AttributeValue| -> Result<Bound<Vec<u8>>, KeyCodecError> {
        Ok(match prefix_successor(&with(value)?) {
            Some(s) => Bound::Excluded(s),
            None => Bound::Unbounded,
        })
    };
    let whole = KeyRange::with_prefix(prefix.to_vec());
    let range = match condition {
        None => whole,
        Some(SortKeyCondition::Eq(v)) => KeyRange::with_prefix(with(v)?),
        Some(SortKeyCondition::Lt(v)) => KeyRange {
            lower: whole.lower,
            upper: Bound::Excluded(with(v)?),
        },
        Some(SortKeyCondition::Le(v)) => KeyRange {
            lower: whole.lower,
            upper: after(v)?,
        },
        Some(SortKeyCondition::Gt(v)) => KeyRange {
            lower: match after(v)? {
                Bound::Excluded(s) => Bound::Included(s),
                // Nothing sorts after an all-0xFF key: an empty range.
                _ => Bound::Excluded(with(v)?),
            },
            upper: whole.upper,
        },
        Some(SortKeyCondition::Ge(v)) => KeyRange {
            lower: Bound::Included(with(v)?),
            upper: whole.upper,
        },
        Some(SortKeyCondition::Between(lo, hi)) => KeyRange {
            lower: Bound::Included(with(lo)?),
            upper: after(hi)?,
        },
        Some(SortKeyCondition::BeginsWith(p)) => {
            // The escaped bytes of the prefix value, without its terminator: every S/B
            // value starting with `p` encodes to something starting with them.
            let mut key = prefix.to_vec();
            match p {
                AttributeValue::S(s) => {
                    shoal_model::keycodec::encode_escaped_bytes(s.as_bytes(), &mut key)
                }
                AttributeValue::B(b) => shoal_model::keycodec::encode_escaped_bytes(b, &mut key),
                other => {
                    return Err(KeyCodecError::NotAKeyType {
                        type_name: other.type_name(),
                    })
                }
            }
            // Drop the value's terminator: only the escaped bytes are a common prefix.
            key.truncate(key.len() - 2);
            KeyRange::with_prefix(key)
        }
    };
    Ok(range)
}

/// The hash range `[start, end)` of parallel-scan segment `segment` of `total` (as key
/// bounds on the 8-byte hash prefix; `end` None means the end of the key space).
pub fn segment_bounds(segment: u32, total: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    debug_assert!(segment < total);
    let start = ((u128::from(segment) << 64) / u128::from(total)) as u64;
    let end = if segment + 1 == total {
        None
    } else {
        Some((((u128::from(segment) + 1) << 64) / u128::from(total)) as u64)
    };
    (
        start.to_be_bytes().to_vec(),
        end.map(|e| e.to_be_bytes().to_vec()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_model::Number;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_string())
    }

    fn n(v: &str) -> AttributeValue {
        AttributeValue::N(Number::parse(v).unwrap())
    }

    fn in_range(range: &KeyRange, key: &[u8]) -> bool {
        let above = match &range.lower {
            Bound::Included(l) => key >= l.as_slice(),
            Bound::Excluded(l) => key > l.as_slice(),
            Bound::Unbounded => true,
        };
        let below = match &range.upper {
            Bound::Included(u) => key <= u.as_slice(),
            Bound::Excluded(u) => key < u.as_slice(),
            Bound::Unbounded => true,
        };
        above && below
    }

    #[test]
    fn a_gsi_key_starts_with_its_partition_prefix() {
        for (gsi_pk, gsi_sk) in [(s("PENDING"), Some(n("7"))), (n("-1.5"), None)] {
            let key = gsi_key(&gsi_pk, gsi_sk.as_ref(), &s("item"), Some(&n("3"))).unwrap();
            let ty = gsi_pk.as_scalar_type().unwrap();
            let len = gsi_partition_prefix_len(&key, &[ty]).unwrap();
            assert_eq!(key[..len], partition_prefix(&gsi_pk).unwrap());
        }
        assert!(gsi_partition_prefix_len(&[0; 4], &[ScalarType::S]).is_err());
    }

    #[test]
    fn sort_ranges_select_exactly_the_matching_lsi_entries() {
        let pk = s("forum");
        let values = ["", "a", "ab", "abc", "b", "b\u{0}", "ba", "c"];
        let table_sks = [s("x"), s("y")];
        let conditions = vec![
            SortKeyCondition::Eq(s("ab")),
            SortKeyCondition::Lt(s("b")),
            SortKeyCondition::Le(s("b")),
            SortKeyCondition::Gt(s("b")),
            SortKeyCondition::Ge(s("ab")),
            SortKeyCondition::Between(s("ab"), s("b")),
            SortKeyCondition::BeginsWith(s("ab")),
            SortKeyCondition::BeginsWith(s("b")),
            SortKeyCondition::BeginsWith(s("")),
        ];
        let mut prefix = partition_prefix(&pk).unwrap();
        prefix.push(1);
        for condition in &conditions {
            let range = sort_range(&prefix, Some(condition)).unwrap();
            for v in values {
                for table_sk in &table_sks {
                    let key = lsi_key(&pk, 1, &s(v), Some(table_sk)).unwrap();
                    assert_eq!(
                        in_range(&range, &key),
                        condition.matches(&s(v)),
                        "{condition:?} on {v:?}"
                    );
                }
            }
            // Nothing of another section or partition leaks in.
            assert!(!in_range(&range, &base_key(&pk, Some(&s("ab"))).unwrap()));
            assert!(!in_range(&range, &collection_key(&pk).unwrap()));
        }
    }

    #[test]
    fn numeric_sort_keys_order_numerically() {
        let pk = s("p");
        let a = base_key(&pk, Some(&n("9"))).unwrap();
        let b = base_key(&pk, Some(&n("10"))).unwrap();
        let c = base_key(&pk, Some(&n("-1"))).unwrap();
        assert!(c < a && a < b);
        let mut prefix = partition_prefix(&pk).unwrap();
        prefix.push(SECTION_BASE);
        let range = sort_range(&prefix, Some(&SortKeyCondition::Le(n("9.0")))).unwrap();
        assert!(in_range(&range, &a) && in_range(&range, &c) && !in_range(&range, &b));
    }

    #[test]
    fn keys_decode_back() {
        let pk = n("42");
        let key = gsi_key(&s("g"), Some(&n("7")), &pk, Some(&s("z"))).unwrap();
        let prefix_len = partition_prefix(&s("g")).unwrap().len();
        let rest = decode_values(
            &key[prefix_len..],
            &[ScalarType::N, ScalarType::N, ScalarType::S],
        )
        .unwrap();
        assert_eq!(rest, vec![n("7"), pk, s("z")]);
        assert!(decode_values(&key[prefix_len..], &[ScalarType::N, ScalarType::N]).is_err());
    }

    #[test]
    fn index_entry_keys_lead_back_to_their_base_item() {
        let (pk, sk) = (s("forum"), n("12"));
        let base = base_key(&pk, Some(&sk)).unwrap();
        let lsi = lsi_key(&pk, 3, &s("when"), Some(&sk)).unwrap();
        let prefix_len = partition_prefix(&pk).unwrap().len();
        assert_eq!(
            base_key_of_lsi_entry(&lsi, prefix_len, ScalarType::S).unwrap(),
            base
        );
        let gsi = gsi_key(&n("7"), Some(&s("g")), &pk, Some(&sk)).unwrap();
        assert_eq!(
            base_key_of_gsi_entry(&gsi, &[ScalarType::N, ScalarType::S], ScalarType::S).unwrap(),
            base
        );
        // Without sort keys on either side.
        let hash_only = gsi_key(&s("g"), None, &pk, None).unwrap();
        assert_eq!(
            base_key_of_gsi_entry(&hash_only, &[ScalarType::S], ScalarType::S).unwrap(),
            base_key(&pk, None).unwrap()
        );
        // A key too short for its schema is an error, not a panic.
        assert!(
            base_key_of_gsi_entry(&gsi[..HASH_BYTES], &[ScalarType::N], ScalarType::S).is_err()
        );
        assert!(base_key_of_lsi_entry(&lsi[..prefix_len], prefix_len, ScalarType::S).is_err());
    }

    #[test]
    fn segments_partition_the_hash_space() {
        for total in [1u32, 2, 3, 7] {
            let mut previous_end = Some(vec![0u8; 8]);
            for segment in 0..total {
                let (start, end) = segment_bounds(segment, total);
                assert_eq!(Some(start), previous_end);
                previous_end = end;
            }
            assert_eq!(previous_end, None);
        }
    }

    /// A base key's bytes, written out: part of the on-disk format, so however the key is
    /// built it must stay exactly this (hash of the partition key, the key, the section,
    /// the sort key).
    #[test]
    fn a_base_key_is_exactly_its_documented_bytes() {
        let key = base_key(
            &AttributeValue::S("a".into()),
            Some(&AttributeValue::S("b".into())),
        )
        .unwrap();
        let mut expected = 0xbc08_481f_96e3_b568_u64.to_be_bytes().to_vec();
        expected.extend_from_slice(b"a\x00\x01");
        expected.push(SECTION_BASE);
        expected.extend_from_slice(b"b\x00\x01");
        assert_eq!(key, expected);
        // A GSI partition of two components hashes both, in order.
        let two = partition_prefix_of(&[
            &AttributeValue::S("a".into()),
            &AttributeValue::S("b".into()),
        ])
        .unwrap();
        assert_eq!(
            two[..HASH_BYTES],
            hash64(b"a\x00\x01b\x00\x01").to_be_bytes()
        );
        assert_eq!(two[HASH_BYTES..], *b"a\x00\x01b\x00\x01");
    }

    #[test]
    fn hash_is_stable() {
        // Part of the on-disk format: these values must never change.
        assert_eq!(hash64(b""), 0xefd0_1f60_ba99_2926);
        assert_eq!(hash64(b"\x01a\x00\x01"), 0xeaa4_b405_748f_c6fb);
    }
}
