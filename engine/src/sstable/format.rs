//! Low-level encodings shared by the writer and the reader: varints, block trailers and the
//! footer (the prose description of the format is in the module docs of `sstable`).

/// Bytes after every block's contents: kind (1) and CRC-32 (4).
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;
/// The footer's fixed size.
pub(crate) const FOOTER_LEN: usize = 64;
/// "SHOALSST" as a big-endian integer; stored little-endian as the file's last 8 bytes.
pub(crate) const MAGIC: u64 = 0x5348_4F41_4C53_5354;
/// The format version this code writes: 2, whose filter holds whole user keys as well as
/// prefixes (see the module docs of `sstable`).
pub(crate) const FORMAT_VERSION: u32 = 2;
/// The oldest format version this code reads. Version 1 differs only in its filter, which
/// holds prefixes alone, so a reader of a version-1 table probes prefixes only.
pub(crate) const FORMAT_VERSION_MIN: u32 = 1;
/// The first version whose filter also holds each distinct user key.
pub(crate) const FORMAT_VERSION_WHOLE_KEY_FILTER: u32 = 2;
/// A varint of a u64 takes at most this many bytes.
const VARINT_LEN_MAX: usize = 10;

/// What a block holds; stored in its trailer and covered by its CRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum BlockKind {
    Data = 1,
    Filter = 2,
    Properties = 3,
    Index = 4,
}

/// Where a block's contents are: `size` excludes the trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    /// The offset just past the block's trailer; `None` on overflow (corrupt handle).
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// A structural problem found while decoding, at an offset relative to what was decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DecodeError {
    pub offset: usize,
    pub detail: &'static str,
}

impl DecodeError {
    pub fn at(offset: usize, detail: &'static str) -> DecodeError {
        DecodeError { offset, detail }
    }
}

/// Appends `value` as an unsigned LEB128 varint.
pub(crate) fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// Decodes a varint at `*pos`, advancing `*pos`; `None` if truncated or over 64 bits.
#[inline]
pub(crate) fn get_varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut result = 0u64;
    for i in 0..VARINT_LEN_MAX {
        let byte = *data.get(*pos + i)?;
        let bits = u64::from(byte & 0x7f);
        if i == VARINT_LEN_MAX - 1 && byte > 1 {
            return None;
        }
        result |= bits << (7 * i);
        if byte & 0x80 == 0 {
            *pos += i + 1;
            return Some(result);
        }
    }
    None
}

/// Reads a little-endian u32 at `pos`; `None` if out of bounds.
#[inline]
pub(crate) fn read_u32(data: &[u8], pos: usize) -> Option<u32> {
    let bytes = data.get(pos..pos.checked_add(4)?)?;
    let mut fixed = [0u8; 4];
    fixed.copy_from_slice(bytes);
    Some(u32::from_le_bytes(fixed))
}

/// Reads a little-endian u64 at `pos`; `None` if out of bounds.
#[inline]
pub(crate) fn read_u64(data: &[u8], pos: usize) -> Option<u64> {
    let bytes = data.get(pos..pos.checked_add(8)?)?;
    let mut fixed = [0u8; 8];
    fixed.copy_from_slice(bytes);
    Some(u64::from_le_bytes(fixed))
}

/// Appends the trailer (kind, CRC of contents ‖ kind) for the contents in `buf[start..]`.
pub(crate) fn append_block_trailer(buf: &mut Vec<u8>, start: usize, kind: BlockKind) {
    buf.push(kind as u8);
    let crc = crc32fast::hash(&buf[start..]);
    buf.extend_from_slice(&crc.to_le_bytes());
}

/// Checks the block at `handle` inside `file` (bounds, CRC, kind) and returns its contents.
/// On failure the error offset is absolute in the file.
pub(crate) fn verified_block(
    file: &[u8],
    handle: BlockHandle,
    kind: BlockKind,
) -> Result<&[u8], DecodeError> {
    let range = block_range_with_trailer(handle, file.len())?;
    let start = range.start;
    checked_block(&file[range], kind).map_err(|e| DecodeError::at(start + e.offset, e.detail))
}

/// Where the block at `handle` lies in a file of `file_len` bytes, its trailer included;
/// an error (at the block's offset) if it reaches past the end of the file.
pub(crate) fn block_range_with_trailer(
    handle: BlockHandle,
    file_len: usize,
) -> Result<std::ops::Range<usize>, DecodeError> {
    let start = handle.offset as usize;
    let end = handle
        .end_with_trailer()
        .filter(|end| *end <= file_len as u64)
        .ok_or(DecodeError::at(
            start,
            "block handle points outside the file",
        ))?;
    Ok(start..end as usize)
}

/// Checks the CRC and kind of one block's bytes, its trailer included (however they were
/// read: in place in a mapped file or copied out of it), and returns its contents. On
/// failure the error offset is relative to the block's start.
pub(crate) fn checked_block(block: &[u8], kind: BlockKind) -> Result<&[u8], DecodeError> {
    let too_short = DecodeError::at(0, "block shorter than its trailer");
    let kind_pos = block
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or(too_short)?;
    // The CRC covers the kind byte *as stored*, so a flipped kind byte fails the CRC.
    let covered = &block[..kind_pos + 1];
    let stored_crc = read_u32(block, kind_pos + 1).ok_or(too_short)?;
    if crc32fast::hash(covered) != stored_crc {
        return Err(DecodeError::at(0, "block checksum mismatch"));
    }
    if block[kind_pos] != kind as u8 {
        return Err(DecodeError::at(kind_pos, "block is of an unexpected kind"));
    }
    Ok(&block[..kind_pos])
}

/// The fixed-size record at the end of every table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    pub filter: BlockHandle,
    pub properties: BlockHandle,
    pub index: BlockHandle,
    /// The format version, between [`FORMAT_VERSION_MIN`] and [`FORMAT_VERSION`].
    pub version: u32,
}

const FOOTER_VERSION_POS: usize = 48;
const FOOTER_CRC_POS: usize = 52;
const FOOTER_MAGIC_POS: usize = 56;

impl Footer {
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut out = [0u8; FOOTER_LEN];
        let handles = [self.filter, self.properties, self.index];
        for (i, handle) in handles.iter().enumerate() {
            out[i * 16..i * 16 + 8].copy_from_slice(&handle.offset.to_le_bytes());
            out[i * 16 + 8..i * 16 + 16].copy_from_slice(&handle.size.to_le_bytes());
        }
        out[FOOTER_VERSION_POS..FOOTER_CRC_POS].copy_from_slice(&self.version.to_le_bytes());
        let crc = crc32fast::hash(&out[..FOOTER_CRC_POS]);
        out[FOOTER_CRC_POS..FOOTER_MAGIC_POS].copy_from_slice(&crc.to_le_bytes());
        out[FOOTER_MAGIC_POS..].copy_from_slice(&MAGIC.to_le_bytes());
        out
    }

    /// Decodes and checks a footer (`bytes` must be exactly [`FOOTER_LEN`] long); error
    /// offsets are relative to the footer's start.
    pub fn decode(bytes: &[u8]) -> Result<Footer, DecodeError> {
        if bytes.len() != FOOTER_LEN {
            return Err(DecodeError::at(0, "file too short for a footer"));
        }
        let field = |pos| read_u64(bytes, pos).ok_or(DecodeError::at(pos, "footer truncated"));
        if field(FOOTER_MAGIC_POS)? != MAGIC {
            return Err(DecodeError::at(
                FOOTER_MAGIC_POS,
                "bad magic number: not a Shoal SSTable",
            ));
        }
        let stored_crc = read_u32(bytes, FOOTER_CRC_POS)
            .ok_or(DecodeError::at(FOOTER_CRC_POS, "footer truncated"))?;
        if crc32fast::hash(&bytes[..FOOTER_CRC_POS]) != stored_crc {
            return Err(DecodeError::at(0, "footer checksum mismatch"));
        }
        let version = read_u32(bytes, FOOTER_VERSION_POS)
            .ok_or(DecodeError::at(FOOTER_VERSION_POS, "footer truncated"))?;
        if !(FORMAT_VERSION_MIN..=FORMAT_VERSION).contains(&version) {
            return Err(DecodeError::at(
                FOOTER_VERSION_POS,
                "unsupported SSTable format version",
            ));
        }
        let handle = |i: usize| -> Result<BlockHandle, DecodeError> {
            Ok(BlockHandle {
                offset: field(i * 16)?,
                size: field(i * 16 + 8)?,
            })
        };
        Ok(Footer {
            filter: handle(0)?,
            properties: handle(1)?,
            index: handle(2)?,
            version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_garbage() {
        let values = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let mut buf = Vec::new();
        for v in values {
            put_varint(&mut buf, v);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(get_varint(&buf, &mut pos), Some(v));
        }
        assert_eq!(pos, buf.len());
        // Truncated: a continuation bit with nothing after it.
        assert_eq!(get_varint(&[0x80], &mut 0), None);
        // Eleven bytes, or a tenth byte that overflows 64 bits.
        assert_eq!(get_varint(&[0xff; 11], &mut 0), None);
        let mut overflow = vec![0xff; 9];
        overflow.push(0x02);
        assert_eq!(get_varint(&overflow, &mut 0), None);
    }

    #[test]
    fn footer_round_trips_and_detects_flips() {
        let footer = Footer {
            filter: BlockHandle {
                offset: 10,
                size: 20,
            },
            properties: BlockHandle {
                offset: 35,
                size: 40,
            },
            index: BlockHandle {
                offset: 80,
                size: 7,
            },
            version: FORMAT_VERSION,
        };
        let bytes = footer.encode();
        assert_eq!(Footer::decode(&bytes), Ok(footer));
        let older = Footer {
            version: FORMAT_VERSION_MIN,
            ..footer
        };
        assert_eq!(Footer::decode(&older.encode()), Ok(older));
        for unknown in [0, FORMAT_VERSION + 1] {
            let bytes = Footer {
                version: unknown,
                ..footer
            }
            .encode();
            assert!(
                Footer::decode(&bytes).is_err(),
                "version {unknown} accepted"
            );
        }
        for i in 0..FOOTER_LEN {
            let mut flipped = bytes;
            flipped[i] ^= 0x01;
            assert!(Footer::decode(&flipped).is_err(), "flip at {i} undetected");
        }
    }

    #[test]
    fn block_trailer_covers_contents_and_kind() {
        let mut file = b"hello".to_vec();
        append_block_trailer(&mut file, 0, BlockKind::Data);
        let handle = BlockHandle { offset: 0, size: 5 };
        assert_eq!(
            verified_block(&file, handle, BlockKind::Data),
            Ok(&b"hello"[..])
        );
        assert!(verified_block(&file, handle, BlockKind::Index).is_err());
        for i in 0..file.len() {
            let mut flipped = file.clone();
            flipped[i] ^= 0x80;
            assert!(verified_block(&flipped, handle, BlockKind::Data).is_err());
        }
        let too_long = BlockHandle { offset: 0, size: 6 };
        assert!(verified_block(&file, too_long, BlockKind::Data).is_err());
        let overflowing = BlockHandle {
            offset: u64::MAX,
            size: 1,
        };
        assert!(verified_block(&file, overflowing, BlockKind::Data).is_err());
        // The same check on the block's bytes alone (a block copied out of its file), with
        // offsets from the block's start; a piece shorter than a trailer is refused.
        let mut padded = b"xx".to_vec();
        padded.extend_from_slice(&file);
        let handle = BlockHandle { offset: 2, size: 5 };
        assert_eq!(checked_block(&file, BlockKind::Data), Ok(&b"hello"[..]));
        let mut flipped = padded.clone();
        flipped[3] ^= 0x01;
        assert_eq!(
            verified_block(&flipped, handle, BlockKind::Data).unwrap_err(),
            DecodeError::at(2, "block checksum mismatch")
        );
        assert_eq!(
            checked_block(&flipped[2..], BlockKind::Data).unwrap_err(),
            DecodeError::at(0, "block checksum mismatch")
        );
        assert_eq!(
            verified_block(&padded, handle, BlockKind::Index).unwrap_err(),
            DecodeError::at(7, "block is of an unexpected kind")
        );
        assert!(checked_block(&file[..4], BlockKind::Data).is_err());
    }
}
