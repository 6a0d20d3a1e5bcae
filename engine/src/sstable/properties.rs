//! The properties block: counts and key range of a table (layout in the module docs).

use super::format::{read_u32, read_u64, DecodeError};

/// What a table holds, recorded when it is written and read back when it is opened.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableProperties {
    /// Entries (puts and tombstones).
    pub entries: u64,
    /// Entries that are tombstones.
    pub tombstones: u64,
    /// The file's size (not stored in the block: the file's length when opened).
    pub size_bytes: u64,
    /// The first internal key (empty for an empty table).
    pub smallest_key: Vec<u8>,
    /// The last internal key (empty for an empty table).
    pub largest_key: Vec<u8>,
    /// The smallest and largest sequence numbers (0 for an empty table).
    pub seq_min: u64,
    pub seq_max: u64,
    /// Sum of internal key lengths and of value lengths, before compression.
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    /// Number of data blocks.
    pub data_blocks: u64,
}

const FIXED_FIELDS: usize = 7;

impl TableProperties {
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        let fixed = [
            self.entries,
            self.tombstones,
            self.seq_min,
            self.seq_max,
            self.raw_key_bytes,
            self.raw_value_bytes,
            self.data_blocks,
        ];
        for field in fixed {
            out.extend_from_slice(&field.to_le_bytes());
        }
        for key in [&self.smallest_key, &self.largest_key] {
            // Keys are bounded by KEY_LEN_MAX_BYTES, far below u32::MAX.
            out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            out.extend_from_slice(key);
        }
    }

    /// Decodes a properties block; `size_bytes` is left 0 for the caller to fill in.
    pub(crate) fn decode(contents: &[u8]) -> Result<TableProperties, DecodeError> {
        let mut fixed = [0u64; FIXED_FIELDS];
        for (i, field) in fixed.iter_mut().enumerate() {
            *field = read_u64(contents, i * 8)
                .ok_or(DecodeError::at(i * 8, "properties block truncated"))?;
        }
        let mut pos = FIXED_FIELDS * 8;
        let read_key = |pos: &mut usize| -> Result<Vec<u8>, DecodeError> {
            let truncated = DecodeError::at(*pos, "properties block truncated");
            let len = read_u32(contents, *pos).ok_or(truncated)? as usize;
            let start = *pos + 4;
            let key = contents.get(start..start + len).ok_or(truncated)?;
            *pos = start + len;
            Ok(key.to_vec())
        };
        let smallest_key = read_key(&mut pos)?;
        let largest_key = read_key(&mut pos)?;
        if pos != contents.len() {
            return Err(DecodeError::at(
                pos,
                "trailing bytes in the properties block",
            ));
        }
        let [entries, tombstones, seq_min, seq_max, raw_key_bytes, raw_value_bytes, data_blocks] =
            fixed;
        if tombstones > entries || seq_min > seq_max {
            return Err(DecodeError::at(0, "inconsistent table properties"));
        }
        Ok(TableProperties {
            entries,
            tombstones,
            size_bytes: 0,
            smallest_key,
            largest_key,
            seq_min,
            seq_max,
            raw_key_bytes,
            raw_value_bytes,
            data_blocks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_truncation() {
        let properties = TableProperties {
            entries: 10,
            tombstones: 3,
            size_bytes: 0,
            smallest_key: b"aaaaaaaaaa".to_vec(),
            largest_key: b"zzzzzzzzzzzz".to_vec(),
            seq_min: 4,
            seq_max: 99,
            raw_key_bytes: 120,
            raw_value_bytes: 4000,
            data_blocks: 2,
        };
        let mut bytes = Vec::new();
        properties.encode_into(&mut bytes);
        assert_eq!(TableProperties::decode(&bytes), Ok(properties));
        for len in 0..bytes.len() {
            assert!(TableProperties::decode(&bytes[..len]).is_err());
        }
        bytes.push(0);
        assert!(TableProperties::decode(&bytes).is_err());
    }
}
