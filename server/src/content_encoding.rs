//! `Content-Encoding` both ways: compressed request bodies (`gzip`, `deflate`) are decoded
//! before the pipeline reads their JSON, and answers are gzip-compressed for clients that send
//! `Accept-Encoding: gzip`, as DynamoDB does.
//!
//! A decoded body is held to the same cap as a plain one, so a small compressed body cannot
//! expand into gigabytes. The signature covers the bytes as sent, so authentication sees the
//! compressed body; so does `x-amz-crc32` on a compressed answer, which is the CRC32 of the
//! bytes on the wire, the bytes the AWS SDKs check it against before they decompress.

use crate::response::set_crc32;
use bytes::Bytes;
use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use flate2::write::GzEncoder;
use flate2::Compression;
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, VARY};
use http::{HeaderMap, HeaderValue, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use std::io::{Read, Write};

/// Answers shorter than this are sent as they are: compressing them saves too little to be
/// worth the time on both sides.
pub const COMPRESSION_THRESHOLD_BYTES: u64 = 1024;

/// Why a request body could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Decoded, it is larger than the body cap.
    TooLarge,
    /// A coding other than `gzip`, `x-gzip`, `deflate` and `identity`.
    Unsupported(String),
    /// The bytes are not valid data in the coding the request names.
    Corrupt(&'static str),
}

/// The request body with its `Content-Encoding` undone (codings applied in the order listed,
/// so undone from the last); at most `limit` bytes.
pub fn decode_request_body(
    headers: &HeaderMap,
    body: Bytes,
    limit: usize,
) -> Result<Bytes, DecodeError> {
    let mut codings = Vec::new();
    for value in headers.get_all(CONTENT_ENCODING) {
        let text = value.to_str().map_err(|_| {
            DecodeError::Unsupported(String::from_utf8_lossy(value.as_bytes()).into())
        })?;
        codings.extend(
            text.split(',')
                .map(|coding| coding.trim().to_ascii_lowercase())
                .filter(|coding| !coding.is_empty() && coding != "identity"),
        );
    }
    let mut decoded = body;
    for coding in codings.iter().rev() {
        decoded = match coding.as_str() {
            "gzip" | "x-gzip" => inflate(MultiGzDecoder::new(&decoded[..]), limit, "gzip")?,
            "deflate" if is_zlib_header(&decoded) => {
                inflate(ZlibDecoder::new(&decoded[..]), limit, "deflate")?
            }
            // Some clients send a raw deflate stream without the zlib wrapper HTTP asks for.
            "deflate" => inflate(DeflateDecoder::new(&decoded[..]), limit, "deflate")?,
            other => return Err(DecodeError::Unsupported(other.to_owned())),
        };
    }
    Ok(decoded)
}

/// Reads `decoder` to its end, refusing to produce more than `limit` bytes.
fn inflate(decoder: impl Read, limit: usize, coding: &'static str) -> Result<Bytes, DecodeError> {
    let mut decoded = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    decoder
        .take(cap)
        .read_to_end(&mut decoded)
        .map_err(|_| DecodeError::Corrupt(coding))?;
    if decoded.len() > limit {
        return Err(DecodeError::TooLarge);
    }
    Ok(Bytes::from(decoded))
}

/// Whether `data` starts with a zlib header (RFC 1950): method 8 and a valid check value.
fn is_zlib_header(data: &[u8]) -> bool {
    match data {
        [method, flags, ..] => {
            method & 0x0f == 8 && (u16::from(*method) * 256 + u16::from(*flags)) % 31 == 0
        }
        _ => false,
    }
}

/// Whether the request's `Accept-Encoding` admits gzip (`gzip`, `x-gzip` or `*`, with a
/// non-zero quality).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|text| text.split(','))
        .any(|entry| {
            let mut parameters = entry.split(';');
            let coding = parameters.next().unwrap_or_default().trim();
            let named = ["gzip", "x-gzip", "*"]
                .iter()
                .any(|name| coding.eq_ignore_ascii_case(name));
            let refused = parameters.any(|parameter| {
                parameter
                    .trim()
                    .strip_prefix("q=")
                    .and_then(|quality| quality.trim().parse::<f32>().ok())
                    .is_some_and(|quality| quality <= 0.0)
            });
            named && !refused
        })
}

/// `response` gzip-compressed, with `Content-Encoding: gzip` and the CRC32 of the compressed
/// bytes, when its body is at least [`COMPRESSION_THRESHOLD_BYTES`] long; otherwise unchanged.
pub async fn compress(response: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    let long_enough = response
        .body()
        .size_hint()
        .exact()
        .is_some_and(|length| length >= COMPRESSION_THRESHOLD_BYTES);
    if !long_enough || response.headers().contains_key(CONTENT_ENCODING) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let plain = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    // Fast compression: the answer is on its way to a client that is waiting for it.
    let mut encoder = GzEncoder::new(Vec::with_capacity(plain.len() / 4), Compression::fast());
    let compressed = match encoder.write_all(&plain).and_then(|()| encoder.finish()) {
        Ok(compressed) => Bytes::from(compressed),
        // Writing to a Vec does not fail; were it to, the plain answer is still correct.
        Err(_) => return Response::from_parts(parts, Full::new(plain)),
    };
    parts
        .headers
        .insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts
        .headers
        .append(VARY, HeaderValue::from_static("Accept-Encoding"));
    set_crc32(&mut parts.headers, &compressed);
    Response::from_parts(parts, Full::new(compressed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, ZlibEncoder};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn decodes_gzip_zlib_and_raw_deflate() {
        let json = br#"{"TableName":"t"}"#;
        let gzipped = Bytes::from(gzip(json));
        let decoded =
            decode_request_body(&headers(&[("content-encoding", "gzip")]), gzipped, 100).unwrap();
        assert_eq!(&decoded[..], json);

        let mut zlib = ZlibEncoder::new(Vec::new(), Compression::default());
        zlib.write_all(json).unwrap();
        let mut raw = DeflateEncoder::new(Vec::new(), Compression::default());
        raw.write_all(json).unwrap();
        for body in [zlib.finish().unwrap(), raw.finish().unwrap()] {
            let decoded = decode_request_body(
                &headers(&[("content-encoding", "Deflate")]),
                Bytes::from(body),
                100,
            )
            .unwrap();
            assert_eq!(&decoded[..], json);
        }
        // Identity, or no header, leaves the body alone.
        let plain = Bytes::from_static(json);
        let same = decode_request_body(&headers(&[("content-encoding", "identity")]), plain, 100);
        assert_eq!(same.unwrap(), Bytes::from_static(json));
    }

    #[test]
    fn refuses_unknown_codings_broken_data_and_bombs() {
        let body = Bytes::from_static(b"{}");
        assert_eq!(
            decode_request_body(&headers(&[("content-encoding", "br")]), body.clone(), 100),
            Err(DecodeError::Unsupported("br".into()))
        );
        assert_eq!(
            decode_request_body(&headers(&[("content-encoding", "gzip")]), body, 100),
            Err(DecodeError::Corrupt("gzip"))
        );
        let bomb = Bytes::from(gzip(&vec![b' '; 10_000]));
        assert!(bomb.len() < 100);
        assert_eq!(
            decode_request_body(
                &headers(&[("content-encoding", "gzip")]),
                bomb.clone(),
                9_999
            ),
            Err(DecodeError::TooLarge)
        );
        assert_eq!(
            decode_request_body(&headers(&[("content-encoding", "gzip")]), bomb, 10_000)
                .unwrap()
                .len(),
            10_000
        );
    }

    #[test]
    fn gzip_is_accepted_unless_its_quality_is_zero() {
        assert!(accepts_gzip(&headers(&[("accept-encoding", "gzip")])));
        assert!(accepts_gzip(&headers(&[(
            "accept-encoding",
            "deflate, GZIP;q=0.5"
        )])));
        assert!(accepts_gzip(&headers(&[("accept-encoding", "*")])));
        assert!(!accepts_gzip(&headers(&[("accept-encoding", "gzip;q=0")])));
        assert!(!accepts_gzip(&headers(&[("accept-encoding", "identity")])));
        assert!(!accepts_gzip(&headers(&[])));
    }
}
