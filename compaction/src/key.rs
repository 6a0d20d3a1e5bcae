//! The internal key: how one version of one user key is named inside a tree.
//!
//! Byte layout:
//!
//! ```text
//! internal key = user key bytes ‖ trailer (8 bytes, big-endian)
//! trailer      = seq << 8 | kind          (seq: 56 bits, kind: 0 = delete, 1 = put)
//! ```
//!
//! Order ([`compare_internal`]): user keys ascending (bytewise), then trailer *descending*,
//! so the newest version of a key comes first and a seek to `user_key ‖ trailer(s, Put)`
//! lands on the newest version visible at snapshot `s`.

use std::cmp::Ordering;

/// Length of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;

/// The largest sequence number (56 bits).
pub const SEQ_MAX: u64 = (1 << 56) - 1;

/// What an entry says about its user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum EntryKind {
    /// A tombstone: the key is deleted as of this sequence number.
    Delete = 0,
    /// A value.
    Put = 1,
}

impl EntryKind {
    /// Decodes a kind byte; `None` for anything that is not a kind (corruption).
    pub fn from_byte(b: u8) -> Option<EntryKind> {
        match b {
            0 => Some(EntryKind::Delete),
            1 => Some(EntryKind::Put),
            _ => None,
        }
    }
}

/// Packs a sequence number and kind into a trailer.
pub fn trailer(seq: u64, kind: EntryKind) -> u64 {
    debug_assert!(seq <= SEQ_MAX, "sequence number {seq} exceeds 56 bits");
    (seq << 8) | kind as u64
}

/// Appends the internal key for (`user_key`, `seq`, `kind`) to `buf`.
pub fn encode_into(buf: &mut Vec<u8>, user_key: &[u8], seq: u64, kind: EntryKind) {
    let start = buf.len();
    buf.resize(start + user_key.len() + TRAILER_LEN, 0);
    encode_to_slice(&mut buf[start..], user_key, seq, kind);
}

/// Writes the internal key for (`user_key`, `seq`, `kind`) into `out`, which must be exactly
/// its length (`user_key.len() + TRAILER_LEN`): for callers that own the memory (the
/// memtable arena).
pub fn encode_to_slice(out: &mut [u8], user_key: &[u8], seq: u64, kind: EntryKind) {
    let (user_key_part, trailer_part) = out.split_at_mut(user_key.len());
    user_key_part.copy_from_slice(user_key);
    trailer_part.copy_from_slice(&trailer(seq, kind).to_be_bytes());
}

/// Returns the internal key for (`user_key`, `seq`, `kind`).
pub fn encode(user_key: &[u8], seq: u64, kind: EntryKind) -> Vec<u8> {
    let mut buf = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    encode_into(&mut buf, user_key, seq, kind);
    buf
}

/// The key to seek to for the newest version of `user_key` visible at snapshot `seq`.
pub fn seek_key(user_key: &[u8], seq: u64) -> Vec<u8> {
    encode(user_key, seq, EntryKind::Put)
}

/// A borrowed, parsed internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InternalKey<'a> {
    pub user_key: &'a [u8],
    pub seq: u64,
    pub kind: EntryKind,
}

impl<'a> InternalKey<'a> {
    /// Parses an internal key; `None` if it is shorter than a trailer or its kind is unknown.
    pub fn parse(bytes: &'a [u8]) -> Option<InternalKey<'a>> {
        let split = bytes.len().checked_sub(TRAILER_LEN)?;
        let mut trailer_bytes = [0u8; TRAILER_LEN];
        trailer_bytes.copy_from_slice(&bytes[split..]);
        let t = u64::from_be_bytes(trailer_bytes);
        Some(InternalKey {
            user_key: &bytes[..split],
            seq: t >> 8,
            kind: EntryKind::from_byte((t & 0xff) as u8)?,
        })
    }
}

/// The user-key part of an internal key (everything but the trailer).
pub fn user_key(internal: &[u8]) -> &[u8] {
    debug_assert!(
        internal.len() >= TRAILER_LEN,
        "internal key shorter than its trailer"
    );
    &internal[..internal.len().saturating_sub(TRAILER_LEN)]
}

fn trailer_of(internal: &[u8]) -> u64 {
    let split = internal.len().saturating_sub(TRAILER_LEN);
    let mut t = [0u8; TRAILER_LEN];
    let tail = &internal[split..];
    t[TRAILER_LEN - tail.len()..].copy_from_slice(tail);
    u64::from_be_bytes(t)
}

/// Orders internal keys: user key ascending, then sequence number (and kind) descending.
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    user_key(a)
        .cmp(user_key(b))
        .then_with(|| trailer_of(b).cmp(&trailer_of(a)))
}

/// Bytes of a user key an [`InlinePrefix`] holds: a table tree's base-item key (hash ‖
/// partition key ‖ section ‖ sort key) usually fits.
pub const INLINE_PREFIX_BYTES: usize = 32;

/// A user key's first [`INLINE_PREFIX_BYTES`] bytes, zero-padded, as big-endian words, kept
/// beside a key that lives elsewhere (another allocation, another cache line) so most
/// comparisons of a search are decided without reading the key itself: searches (memtable
/// skiplists, SSTable indexes) compare at every step, and profiles showed the cache misses
/// of reading the keys dominating them. Eight bytes (the hash) are not enough: inside an
/// item collection every key shares its hash and partition key.
///
/// Where two prefixes differ, the first differing byte is inside both user keys and orders
/// them, or is padding in one (zero) against a non-zero byte of the other, whose key the
/// shorter one is then a proper prefix of: either way prefixes order as their user keys do.
/// Equal prefixes say nothing: compare the whole internal keys ([`compare_internal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct InlinePrefix([u64; INLINE_PREFIX_BYTES / 8]);

impl InlinePrefix {
    pub fn of_user_key(user_key: &[u8]) -> InlinePrefix {
        let mut padded = [0u8; INLINE_PREFIX_BYTES];
        let len_bytes = user_key.len().min(INLINE_PREFIX_BYTES);
        padded[..len_bytes].copy_from_slice(&user_key[..len_bytes]);
        let mut words = [0u64; INLINE_PREFIX_BYTES / 8];
        for (word, chunk) in words.iter_mut().zip(padded.chunks_exact(8)) {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(chunk);
            *word = u64::from_be_bytes(bytes);
        }
        InlinePrefix(words)
    }

    pub fn of_internal_key(internal_key: &[u8]) -> InlinePrefix {
        InlinePrefix::of_user_key(user_key(internal_key))
    }

    /// The first eight bytes, as a big-endian word: where two leading words differ they
    /// order the keys as the whole prefixes do (a table tree's key starts with its
    /// partition's hash, so across partitions this word alone decides).
    pub fn leading_word(&self) -> u64 {
        self.0[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_sort_first() {
        let old = encode(b"k", 5, EntryKind::Put);
        let new = encode(b"k", 9, EntryKind::Delete);
        assert_eq!(compare_internal(&new, &old), Ordering::Less);
        let other = encode(b"k\x00", 1, EntryKind::Put);
        assert_eq!(compare_internal(&old, &other), Ordering::Less);
    }

    #[test]
    fn parse_round_trips() {
        let k = encode(b"abc", 42, EntryKind::Delete);
        let p = InternalKey::parse(&k).unwrap();
        assert_eq!(
            (p.user_key, p.seq, p.kind),
            (&b"abc"[..], 42, EntryKind::Delete)
        );
        assert!(InternalKey::parse(b"short").is_none());
    }

    #[test]
    fn seek_key_lands_on_newest_visible() {
        let at5 = seek_key(b"k", 5);
        assert_eq!(
            compare_internal(&at5, &encode(b"k", 5, EntryKind::Put)),
            Ordering::Equal
        );
        assert_eq!(
            compare_internal(&at5, &encode(b"k", 5, EntryKind::Delete)),
            Ordering::Less
        );
        assert_eq!(
            compare_internal(&at5, &encode(b"k", 6, EntryKind::Put)),
            Ordering::Greater
        );
    }
}
