//! The Bloom filter over user-key prefixes (layout in the `sstable` module docs).
//!
//! One 64-bit hash per prefix, probed `k` times by double hashing: cheap to build (the
//! builder keeps only the hashes) and, with 10 bits per prefix and k = 7, about 1% false
//! positives.

use super::format::DecodeError;

/// The seed of [`hash64`]; part of the file format, never change it.
pub const HASH_SEED: u64 = 0x5348_4f41_4c5f_424c;
/// The most probes a filter may declare.
const PROBES_MAX: u8 = 30;
/// The smallest bit array written, so tiny filters are not all ones.
const BITS_MIN: usize = 64;

/// MurmurHash64A: fast, well mixed, and simple enough to be pinned by the file format.
pub fn hash64(data: &[u8]) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = HASH_SEED ^ (data.len() as u64).wrapping_mul(M);
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let mut k = u64::from_le_bytes(word);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, byte) in tail.iter().enumerate() {
            h ^= u64::from(*byte) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// Iterates the bit positions probed for a hash in a filter of `bit_count` bits (also used
/// by the memtable's key filter).
#[inline]
pub(crate) fn probes(hash: u64, probe_count: u8, bit_count: u64) -> impl Iterator<Item = u64> {
    let delta = hash.rotate_right(21);
    (0..u64::from(probe_count)).map(move |i| hash.wrapping_add(i.wrapping_mul(delta)) % bit_count)
}

/// Appends the filter block contents for the hashes of every list in `hash_lists`
/// (duplicates allowed) to `out`: nothing (no filter) when `bits_per_key` is 0. Built in
/// place, so a table build needs no filter buffer of its own.
pub fn append_filter(hash_lists: &[&[u64]], bits_per_key: usize, out: &mut Vec<u8>) {
    if bits_per_key == 0 {
        return;
    }
    let hash_count: usize = hash_lists.iter().map(|hashes| hashes.len()).sum();
    // k = bits_per_key * ln 2 minimises false positives.
    let probe_count = ((bits_per_key as f64 * 0.69).round() as u8).clamp(1, PROBES_MAX);
    let bit_count = hash_count
        .saturating_mul(bits_per_key)
        .max(BITS_MIN)
        .div_ceil(8)
        * 8;
    let start = out.len();
    out.resize(start + bit_count / 8 + 1, 0);
    let filter = &mut out[start..];
    for &hash in hash_lists.iter().flat_map(|hashes| hashes.iter()) {
        for bit in probes(hash, probe_count, bit_count as u64) {
            filter[(bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
    filter[bit_count / 8] = probe_count;
}

/// A decoded view of a filter block: which bits, how many probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FilterShape {
    probe_count: u8,
    bit_count: u64,
}

impl FilterShape {
    /// Checks a filter block's contents; `None` inside means "no filter".
    pub fn parse(contents: &[u8]) -> Result<Option<FilterShape>, DecodeError> {
        let Some((&probe_count, bits)) = contents.split_last() else {
            return Ok(None);
        };
        if bits.len() < BITS_MIN / 8 {
            return Err(DecodeError::at(0, "bloom filter too small"));
        }
        if probe_count == 0 || probe_count > PROBES_MAX {
            return Err(DecodeError::at(
                bits.len(),
                "bloom filter probe count out of range",
            ));
        }
        Ok(Some(FilterShape {
            probe_count,
            bit_count: bits.len() as u64 * 8,
        }))
    }

    /// Whether the filter (whose contents are `contents`, as checked by `parse`) may contain
    /// the prefix with this hash. `false` means definitely absent.
    #[inline]
    pub fn may_contain(&self, contents: &[u8], hash: u64) -> bool {
        probes(hash, self.probe_count, self.bit_count).all(|bit| {
            contents
                .get((bit / 8) as usize)
                .is_some_and(|byte| byte & (1 << (bit % 8)) != 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build_filter(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
        let mut filter = Vec::new();
        append_filter(&[hashes], bits_per_key, &mut filter);
        filter
    }

    fn prefix(i: u32) -> Vec<u8> {
        format!("collection-{i:08}").into_bytes()
    }

    #[test]
    fn no_false_negatives_and_few_false_positives_at_10_bits() {
        let present: Vec<u64> = (0..10_000).map(|i| hash64(&prefix(i))).collect();
        let filter = build_filter(&present, 10);
        let shape = FilterShape::parse(&filter).unwrap().unwrap();
        for (i, hash) in present.iter().enumerate() {
            assert!(shape.may_contain(&filter, *hash), "false negative for {i}");
        }
        let false_positives = (10_000..20_000)
            .filter(|i| shape.may_contain(&filter, hash64(&prefix(*i))))
            .count();
        let rate = false_positives as f64 / 10_000.0;
        assert!(rate < 0.02, "false-positive rate {rate}");
    }

    #[test]
    fn tiny_and_absent_filters() {
        let filter = build_filter(&[hash64(b"only")], 10);
        let shape = FilterShape::parse(&filter).unwrap().unwrap();
        assert!(shape.may_contain(&filter, hash64(b"only")));
        assert!(!shape.may_contain(&filter, hash64(b"other")));
        assert!(build_filter(&[1, 2, 3], 0).is_empty());
        assert_eq!(FilterShape::parse(&[]), Ok(None));
        assert!(FilterShape::parse(&[0xff; 9][..]).is_err());
        assert!(FilterShape::parse(&[0x00; 3][..]).is_err());
    }

    #[test]
    fn a_filter_over_split_lists_is_the_filter_over_their_union_appended_in_place() {
        let hashes: Vec<u64> = (0..1_000).map(|i| hash64(&prefix(i))).collect();
        let mut out = b"before".to_vec();
        append_filter(&[&hashes[..300], &hashes[300..]], 10, &mut out);
        assert_eq!(&out[..6], b"before");
        assert_eq!(out[6..], build_filter(&hashes, 10)[..]);
    }

    #[test]
    fn hash_is_pinned() {
        // The hash is part of the file format: a change here breaks existing files.
        assert_ne!(hash64(b"a"), hash64(b"b"));
        assert_ne!(hash64(b"abcdefgh"), hash64(b"abcdefgh\0"));
        let pinned = [hash64(b""), hash64(b"shoal"), hash64(b"0123456789abcdef!")];
        assert_eq!(pinned, PINNED_HASHES);
    }

    const PINNED_HASHES: [u64; 3] = [
        7_059_936_110_557_311_999,
        5_601_236_856_743_924_555,
        194_543_380_619_300_801,
    ];
}
