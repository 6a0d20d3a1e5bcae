//! The stamp of a write (SPEC-3 §2.4): which of two writes to one item is the later, so
//! every Region keeps the same one ("last writer wins").
//!
//! A stamp is a time in microseconds since the Unix epoch and the Region the write was
//! made in, compared in that order: the Region name breaks a tie, as SPEC-3 §2.4 says.
//! Every Region of a database lives in one process, so one hybrid clock gives every write
//! its time: the wall clock, or one microsecond past the last stamp given when the wall
//! clock has not moved on (or went back). A write thus always outranks every write whose
//! stamp existed before it, in any Region: a client that writes an item after reading a
//! replicated version of it overwrites that version everywhere. After a restart the clock
//! starts again from the wall clock, which only a wall clock set back across the restart
//! could put behind stamps already stored.
//!
//! Stored form (the value of an item's stamp and part of each queue entry, `queue`):
//! `micros: u64 big-endian, region length: u8, region: UTF-8 bytes`.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::time::{SystemTime, UNIX_EPOCH};

/// When a write was made, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub micros: u64,
    pub region: String,
}

impl Ord for Stamp {
    fn cmp(&self, other: &Stamp) -> Ordering {
        (self.micros, &self.region).cmp(&(other.micros, &other.region))
    }
}

impl PartialOrd for Stamp {
    fn partial_cmp(&self, other: &Stamp) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The last time given by [`Stamp::now`] in this process.
static LAST_MICROS: AtomicU64 = AtomicU64::new(0);

impl Stamp {
    /// A new write's stamp in `region`: later than every stamp given before it.
    pub fn now(region: &str) -> Stamp {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_micros() as u64);
        let mut last = LAST_MICROS.load(AtomicOrdering::Relaxed);
        let micros = loop {
            let next = wall.max(last.saturating_add(1));
            match LAST_MICROS.compare_exchange_weak(
                last,
                next,
                AtomicOrdering::AcqRel,
                AtomicOrdering::Relaxed,
            ) {
                Ok(_) => break next,
                Err(seen) => last = seen,
            }
        };
        Stamp {
            micros,
            region: region.to_string(),
        }
    }

    /// The stamp of an item stored before its table joined a global table: older than any
    /// write made since, in the Region that holds it.
    pub fn origin(region: &str) -> Stamp {
        Stamp {
            micros: 0,
            region: region.to_string(),
        }
    }

    /// Appends the stored form (module docs) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.micros.to_be_bytes());
        // Region names are short ASCII (`regions`); a longer one is cut, never stored wrong.
        let region = &self.region.as_bytes()[..self.region.len().min(u8::MAX as usize)];
        out.push(region.len() as u8);
        out.extend_from_slice(region);
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(9 + self.region.len());
        self.encode_into(&mut out);
        out
    }

    /// Reads a stored stamp from the front of `bytes`; returns it and the bytes after it.
    pub fn decode(bytes: &[u8]) -> Option<(Stamp, &[u8])> {
        let micros = u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
        let length = usize::from(*bytes.get(8)?);
        let region = std::str::from_utf8(bytes.get(9..9 + length)?).ok()?;
        Some((
            Stamp {
                micros,
                region: region.to_string(),
            },
            &bytes[9 + length..],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_grow_and_order_by_time_then_region() {
        let first = Stamp::now("us-east-1");
        let second = Stamp::now("eu-west-1");
        assert!(second.micros > first.micros);
        let tie = |region: &str| Stamp {
            micros: 5,
            region: region.to_string(),
        };
        assert!(tie("us-east-1") > tie("eu-west-1"));
        assert!(Stamp::origin("zz") < tie("aa"));
    }

    #[test]
    fn stamps_round_trip_and_garbage_is_refused() {
        let stamp = Stamp::now("ap-southeast-2");
        let mut bytes = stamp.encode();
        bytes.extend_from_slice(b"rest");
        let (decoded, rest) = Stamp::decode(&bytes).unwrap();
        assert_eq!(decoded, stamp);
        assert_eq!(rest, b"rest");
        assert!(Stamp::decode(&bytes[..10]).is_none());
        assert!(Stamp::decode(&[]).is_none());
    }
}
