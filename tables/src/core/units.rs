//! Capacity units, computed exactly as DynamoDB charges them (SPEC §5).
//!
//! Write units: 1 per started KiB of the item (or index entry) written. Read units: 1 per
//! started 4 KiB read strongly consistently, half that eventually consistently, twice that
//! transactionally. How sizes are grouped before rounding (per item, per page, per entry)
//! is each operation's business; these functions only round.

/// Bytes per write capacity unit.
pub const WRITE_UNIT_BYTES: u64 = 1024;
/// Bytes per read capacity unit.
pub const READ_UNIT_BYTES: u64 = 4096;

/// How a read is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadConsistency {
    Eventual,
    Strong,
    Transactional,
}

impl ReadConsistency {
    /// `ConsistentRead: true` → strong, otherwise eventual.
    pub fn from_consistent_read(consistent: Option<bool>) -> ReadConsistency {
        if consistent == Some(true) {
            ReadConsistency::Strong
        } else {
            ReadConsistency::Eventual
        }
    }

    fn multiplier(self) -> f64 {
        match self {
            ReadConsistency::Eventual => 0.5,
            ReadConsistency::Strong => 1.0,
            ReadConsistency::Transactional => 2.0,
        }
    }
}

/// Write units for writing `size_bytes` (at least 1: an empty or missing item costs 1).
pub fn write_units(size_bytes: u64) -> f64 {
    size_bytes.div_ceil(WRITE_UNIT_BYTES).max(1) as f64
}

/// Read units for reading `size_bytes` in one rounding (at least one unit's worth).
pub fn read_units(size_bytes: u64, consistency: ReadConsistency) -> f64 {
    size_bytes.div_ceil(READ_UNIT_BYTES).max(1) as f64 * consistency.multiplier()
}

/// Read units of `size_bytes` rounded up to whole 4 KiB blocks without the 1-unit minimum
/// (the per-item fetch part of an LSI query, SPEC §5).
pub fn read_blocks(size_bytes: u64) -> u64 {
    size_bytes.div_ceil(READ_UNIT_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_follows_the_spec() {
        assert_eq!(write_units(0), 1.0);
        assert_eq!(write_units(1024), 1.0);
        assert_eq!(write_units(1025), 2.0);
        assert_eq!(write_units(2510), 3.0);
        assert_eq!(read_units(0, ReadConsistency::Eventual), 0.5);
        assert_eq!(read_units(4096, ReadConsistency::Strong), 1.0);
        assert_eq!(read_units(4097, ReadConsistency::Strong), 2.0);
        assert_eq!(read_units(12 * 1024, ReadConsistency::Transactional), 6.0);
        assert_eq!(read_blocks(300), 1);
        assert_eq!(read_blocks(0), 0);
    }
}
