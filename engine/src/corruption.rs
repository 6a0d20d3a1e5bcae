//! Where corruption was met. Every checksum or structure failure of an SSTable read (a
//! point read, a scan, a compaction) is counted, and each damaged place, a file and an
//! offset in it, is logged once, with the key range its file covers: an operator learns of
//! it from the log and the server's /metrics, not from a client's 500, and `shoal check` is
//! not the only way to find which data is affected. The reads themselves still fail, as they
//! must: a damaged block is never read as something else.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Damaged places remembered; past it, failures are still counted but not described.
pub const CORRUPT_PLACES_MAX: usize = 1024;

/// One damaged place of an SSTable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptPlace {
    pub file_number: u64,
    /// Byte offset of the failed check in the file.
    pub offset: u64,
    pub detail: String,
    /// The smallest and largest user keys of the file (trailers stripped).
    pub smallest_key: Vec<u8>,
    pub largest_key: Vec<u8>,
    /// Failed reads of this place so far.
    pub failures: u64,
    /// The tree the file belongs to in the current version (None once it is obsolete).
    pub tree: Option<crate::version::TreeId>,
}

/// What [`Db::corruption_report`](crate::db::Db::corruption_report) answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorruptionReport {
    /// Every failed read since open.
    pub failures: u64,
    /// The damaged places, by file and offset (at most [`CORRUPT_PLACES_MAX`]).
    pub places: Vec<CorruptPlace>,
}

/// The database's record of corruption met, shared by every open SSTable.
#[derive(Debug, Default)]
pub struct CorruptionLog {
    failures: AtomicU64,
    places: Mutex<BTreeMap<(u64, u64), CorruptPlace>>,
}

/// A user key from an internal key: the 8-byte trailer (sequence and kind) stripped.
fn user_key(internal: &[u8]) -> Vec<u8> {
    internal[..internal.len().saturating_sub(8)].to_vec()
}

impl CorruptionLog {
    /// Records a failed read of `file_number` at `offset`; logs the place the first time.
    /// `smallest` and `largest` are the file's internal keys.
    pub(crate) fn report(
        &self,
        file_number: u64,
        offset: u64,
        detail: &str,
        (smallest, largest): (&[u8], &[u8]),
    ) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut places = self.places.lock();
        if let Some(place) = places.get_mut(&(file_number, offset)) {
            place.failures += 1;
            return;
        }
        let place = CorruptPlace {
            file_number,
            offset,
            detail: detail.to_string(),
            smallest_key: user_key(smallest),
            largest_key: user_key(largest),
            failures: 1,
            tree: None,
        };
        tracing::error!(
            file = format!("{file_number:06}.sst"),
            offset,
            detail,
            smallest_key = %escape(&place.smallest_key),
            largest_key = %escape(&place.largest_key),
            "SSTable corruption: reads of this block fail until the data is restored (docs/RECOVERY.md)"
        );
        if places.len() < CORRUPT_PLACES_MAX {
            places.insert((file_number, offset), place);
        }
    }

    pub(crate) fn report_now(&self) -> CorruptionReport {
        CorruptionReport {
            failures: self.failures.load(Ordering::Relaxed),
            places: self.places.lock().values().cloned().collect(),
        }
    }
}

/// A key as text: printable ASCII as is, other bytes as `\xNN`.
pub fn escape(key: &[u8]) -> String {
    key.iter()
        .map(|&byte| {
            if byte.is_ascii_graphic() && byte != b'\\' {
                (byte as char).to_string()
            } else {
                format!("\\x{byte:02x}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_is_described_once_and_counted_every_time() {
        let log = CorruptionLog::default();
        let keys = (
            &b"apple\0\0\0\0\0\0\0\x01"[..],
            &b"pear\0\0\0\0\0\0\0\x01"[..],
        );
        log.report(7, 4096, "block checksum mismatch", keys);
        log.report(7, 4096, "block checksum mismatch", keys);
        log.report(7, 8192, "block checksum mismatch", keys);
        let report = log.report_now();
        assert_eq!(report.failures, 3);
        assert_eq!(report.places.len(), 2);
        assert_eq!(report.places[0].failures, 2);
        assert_eq!(report.places[0].smallest_key, b"apple");
        assert_eq!(report.places[0].largest_key, b"pear");
        assert_eq!(escape(b"k\x00\\"), "k\\x00\\x5c");
    }
}
