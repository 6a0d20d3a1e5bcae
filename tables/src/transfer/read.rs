//! One object streamed: its bytes counted as they are read from disk, decompressed (GZIP —
//! every member of a multi-member file —, ZSTD — every frame —, or NONE), and cut into
//! lines. File extensions are ignored, as AWS ignores them: the request's
//! `InputCompressionType` alone decides.
//!
//! Memory stays bounded whatever the file: the decompressors stream, and a line longer than
//! [`LINE_BYTES_MAX`] is skipped to its end rather than held (it is reported as a bad line).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The longest line kept: an item is at most 400 KB, and its DynamoDB JSON (base64 binary,
/// escapes, type tags) stays well within 4 MiB.
pub const LINE_BYTES_MAX: usize = 4 << 20;

/// `InputCompressionType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
    None,
}

impl Compression {
    /// The request's member (absent is NONE); None for a value outside the enum.
    pub fn parse(name: &str) -> Option<Compression> {
        match name {
            "GZIP" => Some(Compression::Gzip),
            "ZSTD" => Some(Compression::Zstd),
            "NONE" => Some(Compression::None),
            _ => None,
        }
    }
}

/// Counts the bytes read through it into a shared counter (ProcessedSizeBytes, progress).
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens `path` decompressed by `compression`, counting its raw bytes into `read`.
pub fn open(
    path: &Path,
    compression: Compression,
    read: Arc<AtomicU64>,
) -> io::Result<Box<dyn BufRead + Send>> {
    let raw = Counting {
        inner: File::open(path)?,
        read,
    };
    let raw = BufReader::with_capacity(256 << 10, raw);
    Ok(match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            256 << 10,
            flate2::bufread::MultiGzDecoder::new(raw),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            256 << 10,
            zstd::stream::read::Decoder::with_buffer(raw)?,
        )),
    })
}

/// One line of an object.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The line's bytes (without its end) are in the caller's buffer.
    Read,
    /// The line was longer than [`LINE_BYTES_MAX`]; the buffer holds its start only.
    TooLong,
}

/// Lines of a stream, numbered from 1, each at most [`LINE_BYTES_MAX`] bytes kept.
pub struct Lines<R> {
    inner: R,
    number: u64,
}

impl<R: BufRead> Lines<R> {
    pub fn new(inner: R) -> Lines<R> {
        Lines { inner, number: 0 }
    }

    /// The number of the line last read.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Reads the next line into `buf` (cleared first); None at the end of the stream. A
    /// `\r` before the `\n` is dropped.
    pub fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<Line>> {
        buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let available = self.inner.fill_buf()?;
            if available.is_empty() {
                break;
            }
            any = true;
            let (chunk, ends) = match memchr(available) {
                Some(at) => (&available[..at], true),
                None => (available, false),
            };
            let room = LINE_BYTES_MAX.saturating_sub(buf.len());
            if chunk.len() > room {
                too_long = true;
            }
            buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let consumed = chunk.len() + usize::from(ends);
            self.inner.consume(consumed);
            if ends {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some(if too_long { Line::TooLong } else { Line::Read }))
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn all_lines(bytes: &[u8]) -> Vec<(u64, Vec<u8>, Line)> {
        let mut lines = Lines::new(BufReader::with_capacity(3, bytes));
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(line) = lines.next_line(&mut buf).unwrap() {
            out.push((lines.number(), buf.clone(), line));
        }
        out
    }

    #[test]
    fn lines_are_numbered_and_crlf_and_a_missing_last_newline_are_handled() {
        let lines = all_lines(b"ab\r\n\ncdef");
        assert_eq!(
            lines,
            vec![
                (1, b"ab".to_vec(), Line::Read),
                (2, b"".to_vec(), Line::Read),
                (3, b"cdef".to_vec(), Line::Read),
            ]
        );
        assert!(all_lines(b"").is_empty());
    }

    #[test]
    fn multi_member_gzip_and_multi_frame_zstd_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("a.json.gz");
        let mut bytes = Vec::new();
        for part in [&b"one\n"[..], b"two\n"] {
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), Default::default());
            encoder.write_all(part).unwrap();
            bytes.extend(encoder.finish().unwrap());
        }
        std::fs::write(&gz, &bytes).unwrap();
        let zst = dir.path().join("b.txt");
        let mut bytes = zstd::encode_all(&b"one\n"[..], 1).unwrap();
        bytes.extend(zstd::encode_all(&b"two\n"[..], 1).unwrap());
        std::fs::write(&zst, &bytes).unwrap();
        for (path, compression) in [(gz, Compression::Gzip), (zst, Compression::Zstd)] {
            let counted = Arc::new(AtomicU64::new(0));
            let mut text = String::new();
            open(&path, compression, Arc::clone(&counted))
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, "one\ntwo\n");
            assert_eq!(
                counted.load(Ordering::Relaxed),
                std::fs::metadata(&path).unwrap().len()
            );
        }
    }
}
