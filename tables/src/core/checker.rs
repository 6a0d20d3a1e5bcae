//! The tools of `Database::check` (`core::check`), which features use too to check what they
//! derive (`Feature::check`): the report, the progress, and the order-independent digests of
//! index entries with the hash behind them.

use std::hash::{BuildHasher, Hash, Hasher, RandomState};

use shoal_engine::{Db, Snapshot};
use shoal_model::AttributeValue;

use crate::core::catalog::TableDef;
use crate::core::keys::{self, HASH_BYTES};

/// Problems reported before the check stops listing them.
pub(crate) const PROBLEMS_MAX: usize = 100;

/// Items and entries read between two progress reports: often enough for a progress bar
/// (a few milliseconds of work), rarely enough that reporting costs nothing.
pub(crate) const PROGRESS_EVERY: u64 = 4096;

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub tables: usize,
    pub items: u64,
    pub index_entries: u64,
    pub collections: u64,
    /// Every disagreement found (at most `PROBLEMS_MAX`); empty when the database is sound.
    pub problems: Vec<String>,
}

impl CheckReport {
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty()
    }

    /// Whether no more problems will be listed.
    pub(crate) fn is_full(&self) -> bool {
        self.problems.len() >= PROBLEMS_MAX
    }

    pub(crate) fn problem(&mut self, text: String) {
        if !self.is_full() {
            self.problems.push(text);
        }
    }
}

/// How far a running check has got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckProgress {
    /// Base items read so far.
    pub items: u64,
    /// Index entries (LSI and GSI) read so far.
    pub index_entries: u64,
    /// DynamoDB sizes (`shoal_model::item_size_bytes`) of those items and entries.
    pub bytes: u64,
    /// Items, entries and bytes there are to read, from the table statistics as of the last
    /// write: on a sound database the check is done when the counts reach them.
    pub items_total: u64,
    pub index_entries_total: u64,
    pub bytes_total: u64,
    /// While the check looks for the entries behind two differing digests (a second pass,
    /// not counted above): where it looks.
    pub locating: Option<String>,
}

/// One run of the check; features check what they derive through it
/// (`Feature::check`).
pub struct Checker<'a> {
    pub(crate) db: &'a Db,
    pub(crate) snapshot: &'a Snapshot,
    pub(crate) hasher: EntryHasher,
    pub(crate) report: CheckReport,
    pub(crate) progress: Progress<'a>,
}

/// The partition key of a collection, for a problem's text.
pub(crate) fn describe_partition(table: &TableDef, prefix: &[u8]) -> String {
    let encoded = prefix.get(HASH_BYTES..).unwrap_or_default();
    match keys::decode_values(encoded, &[table.key.hash.scalar_type()]) {
        Ok(values) => format!("{} = {}", table.key.hash.name, values[0].to_json()),
        Err(_) => format!("with key prefix {prefix:02x?}"),
    }
}

/// An order-independent digest of a multiset of index entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Digest {
    pub(crate) count: u64,
    /// Wrapping sum of the entries' hashes.
    sum: u128,
}

impl Digest {
    pub(crate) fn add(&mut self, hash: u128) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(hash);
    }
}

/// The 128-bit hash of an index entry, from two SipHash-1-3 keyed at random.
pub(crate) struct EntryHasher {
    high: RandomState,
    low: RandomState,
}

impl EntryHasher {
    pub(crate) fn new() -> EntryHasher {
        EntryHasher {
            high: RandomState::new(),
            low: RandomState::new(),
        }
    }

    /// The hash of the entry stored under `key` with `attributes` (in name order). Equal
    /// for two entries with equal keys whose attributes are equal as DynamoDB compares them.
    pub(crate) fn entry<'v>(
        &self,
        key: &[u8],
        attributes: impl Iterator<Item = (&'v str, &'v AttributeValue)>,
    ) -> u128 {
        let mut both = Both(self.high.build_hasher(), self.low.build_hasher());
        write_bytes(&mut both, key);
        for (name, value) in attributes {
            write_bytes(&mut both, name.as_bytes());
            hash_value(value, &mut both);
        }
        (u128::from(both.0.finish()) << 64) | u128::from(both.1.finish())
    }
}

/// Feeds two hashers at once.
struct Both<H>(H, H);

impl<H: Hasher> Hasher for Both<H> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
        self.1.write(bytes);
    }

    fn finish(&self) -> u64 {
        self.0.finish()
    }
}

/// Length-prefixed, so that consecutive strings cannot run into each other.
pub(crate) fn write_bytes(hasher: &mut impl Hasher, bytes: &[u8]) {
    hasher.write_usize(bytes.len());
    hasher.write(bytes);
}

/// Hashes a value so that values equal as DynamoDB compares them (`AttributeValue`'s
/// `PartialEq`: numbers by value, sets in any order) hash alike: a tag per type, lengths
/// before contents, and set members in sorted order.
pub(crate) fn hash_value(value: &AttributeValue, hasher: &mut impl Hasher) {
    use AttributeValue as V;
    match value {
        V::S(text) => {
            hasher.write_u8(1);
            write_bytes(hasher, text.as_bytes());
        }
        V::N(number) => {
            hasher.write_u8(2);
            // Numbers are normalised: the derived hash is numeric equality's.
            number.hash(hasher);
        }
        V::B(bytes) => {
            hasher.write_u8(3);
            write_bytes(hasher, bytes);
        }
        V::Bool(flag) => {
            hasher.write_u8(4);
            hasher.write_u8(u8::from(*flag));
        }
        V::Null => hasher.write_u8(5),
        V::M(map) => {
            hasher.write_u8(6);
            hasher.write_usize(map.len());
            for (name, member) in map {
                write_bytes(hasher, name.as_bytes());
                hash_value(member, hasher);
            }
        }
        V::L(list) => {
            hasher.write_u8(7);
            hasher.write_usize(list.len());
            for member in list {
                hash_value(member, hasher);
            }
        }
        V::Ss(members) => {
            hasher.write_u8(8);
            for member in sorted(members) {
                write_bytes(hasher, member.as_bytes());
            }
        }
        V::Ns(members) => {
            hasher.write_u8(9);
            for member in sorted(members) {
                member.hash(hasher);
            }
        }
        V::Bs(members) => {
            hasher.write_u8(10);
            for member in sorted(members) {
                write_bytes(hasher, member);
            }
        }
    }
    pub(crate) fn sorted<T: Ord>(members: &[T]) -> Vec<&T> {
        let mut sorted: Vec<&T> = members.iter().collect();
        sorted.sort_unstable();
        sorted
    }
}

/// Counts what the check has read and reports it every `PROGRESS_EVERY` items and entries.
pub(crate) struct Progress<'a> {
    pub(crate) state: CheckProgress,
    pub(crate) unreported: u64,
    pub(crate) report: &'a mut dyn FnMut(&CheckProgress),
}

impl Progress<'_> {
    pub(crate) fn item(&mut self, size_bytes: u64) {
        self.state.items += 1;
        self.read(size_bytes);
    }

    pub(crate) fn index_entry(&mut self, size_bytes: u64) {
        self.state.index_entries += 1;
        self.read(size_bytes);
    }

    pub(crate) fn read(&mut self, size_bytes: u64) {
        self.state.bytes += size_bytes;
        self.unreported += 1;
        if self.unreported >= PROGRESS_EVERY {
            self.now();
        }
    }

    pub(crate) fn locating(&mut self, scope: Option<String>) {
        self.state.locating = scope;
        self.now();
    }

    pub(crate) fn now(&mut self) {
        self.unreported = 0;
        (self.report)(&self.state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_model::Number;

    fn hash(hasher: &EntryHasher, attributes: &[(&str, AttributeValue)]) -> u128 {
        hasher.entry(b"key", attributes.iter().map(|(n, v)| (*n, v)))
    }

    #[test]
    fn entry_hashes_follow_dynamodb_equality() {
        let hasher = EntryHasher::new();
        let number = |text: &str| AttributeValue::N(Number::parse(text).unwrap());
        let set =
            |members: &[&str]| AttributeValue::Ss(members.iter().map(|m| m.to_string()).collect());
        // Sets in another order, numbers written otherwise: equal, so hashed alike.
        assert_eq!(
            hash(&hasher, &[("a", set(&["x", "y"])), ("n", number("1000"))]),
            hash(&hasher, &[("a", set(&["y", "x"])), ("n", number("1e3"))])
        );
        // Any change of key, name, type or value shows.
        let base = hash(&hasher, &[("a", AttributeValue::S("ab".into()))]);
        for other in [
            hash(&hasher, &[("a", AttributeValue::S("ba".into()))]),
            hash(&hasher, &[("b", AttributeValue::S("ab".into()))]),
            hash(&hasher, &[("a", AttributeValue::B(b"ab".to_vec()))]),
            hash(&hasher, &[("a", set(&["ab"]))]),
            hash(
                &hasher,
                &[
                    ("a", AttributeValue::S("a".into())),
                    ("b", AttributeValue::Null),
                ],
            ),
            hasher.entry(
                b"other",
                [("a", &AttributeValue::S("ab".into()))].into_iter(),
            ),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn digests_ignore_order_and_count_entries() {
        let (mut one, mut other) = (Digest::default(), Digest::default());
        for hash in [u128::MAX, 7, 1 << 100] {
            one.add(hash);
        }
        for hash in [1 << 100, u128::MAX, 7] {
            other.add(hash);
        }
        assert_eq!(one, other);
        other.add(0);
        assert_ne!(one, other, "an entry hashing to zero still counts");
    }
}
