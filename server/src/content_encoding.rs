//! `Content-Encoding` both ways: compressed request bodies (`gzip`, `deflate`) are decoded
//! before the pipeline reads their JSON, and answers of 4 KiB or more are compressed (gzip, or
//! deflate) for clients whose `Accept-Encoding` asks for it.
//!
//! A coding Shoal does not know (`br`, and `x-gzip`, which HTTP/1.1 only suggests treating as
//! gzip) is not undone: the bytes go to the JSON parser as they are, so anything but plain
//! JSON is answered as a body that is not JSON (a SerializationException without a message),
//! as is gzip or deflate data that does not decode. docs/COMPATIBILITY.md records the choice.
//!
//! A decoded body is held to the same cap as a plain one, so a small compressed body cannot
//! expand into gigabytes. The signature covers the bytes as sent, so authentication sees the
//! compressed body; so does `x-amz-crc32` on a compressed answer, which is the CRC32 of the
//! bytes on the wire, the bytes the AWS SDKs check it against before they decompress.

use crate::response::set_crc32;
use bytes::Bytes;
use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use flate2::write::{GzEncoder, ZlibEncoder};
use flate2::Compression;
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, VARY};
use http::{HeaderMap, HeaderValue, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use std::io::{Read, Write};

/// Answers shorter than this are sent as they are: compressing them saves too little to be
/// worth the time on both sides. 4 KiB, the figure reported for DynamoDB (SPEC gives none).
pub const COMPRESSION_THRESHOLD_BYTES: u64 = 4096;

/// Why a request body could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Decoded, it is larger than the body cap.
    TooLarge,
    /// The bytes are not valid data in the coding the request names.
    Corrupt(&'static str),
}

/// The request body with its `Content-Encoding` undone (codings applied in the order listed,
/// so undone from the last); at most `limit` bytes. A body naming a coding other than
/// `gzip`, `deflate` and `identity` is returned as sent (see the module docs).
pub fn decode_request_body(
    headers: &HeaderMap,
    body: Bytes,
    limit: usize,
) -> Result<Bytes, DecodeError> {
    let mut codings = Vec::new();
    for value in headers.get_all(CONTENT_ENCODING) {
        let Ok(text) = value.to_str() else {
            return Ok(body);
        };
        codings.extend(
            text.split(',')
                .map(|coding| coding.trim().to_ascii_lowercase())
                .filter(|coding| !coding.is_empty() && coding != "identity"),
        );
    }
    if codings
        .iter()
        .any(|coding| coding != "gzip" && coding != "deflate")
    {
        return Ok(body);
    }
    let mut decoded = body;
    for coding in codings.iter().rev() {
        decoded = if coding == "gzip" {
            inflate(MultiGzDecoder::new(&decoded[..]), limit, "gzip")?
        } else if is_zlib_header(&decoded) {
            inflate(ZlibDecoder::new(&decoded[..]), limit, "deflate")?
        } else {
            // Some clients send a raw deflate stream without the zlib wrapper HTTP asks for.
            inflate(DeflateDecoder::new(&decoded[..]), limit, "deflate")?
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

/// A coding answers may be sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseCoding {
    Gzip,
    /// zlib-wrapped deflate, as HTTP's `deflate` is.
    Deflate,
}

impl ResponseCoding {
    fn name(self) -> &'static str {
        match self {
            ResponseCoding::Gzip => "gzip",
            ResponseCoding::Deflate => "deflate",
        }
    }
}

/// The coding the request's `Accept-Encoding` asks answers in: gzip when it admits gzip
/// (`gzip`, `x-gzip` or `*`, with a non-zero quality), else deflate when it admits that, else
/// none.
pub fn response_coding(headers: &HeaderMap) -> Option<ResponseCoding> {
    let admits = |names: &[&str]| {
        headers
            .get_all(ACCEPT_ENCODING)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|text| text.split(','))
            .any(|entry| {
                let mut parameters = entry.split(';');
                let coding = parameters.next().unwrap_or_default().trim();
                let named = names.iter().any(|name| coding.eq_ignore_ascii_case(name));
                let refused = parameters.any(|parameter| {
                    parameter
                        .trim()
                        .strip_prefix("q=")
                        .and_then(|quality| quality.trim().parse::<f32>().ok())
                        .is_some_and(|quality| quality <= 0.0)
                });
                named && !refused
            })
    };
    if admits(&["gzip", "x-gzip", "*"]) {
        Some(ResponseCoding::Gzip)
    } else if admits(&["deflate"]) {
        Some(ResponseCoding::Deflate)
    } else {
        None
    }
}

/// `response` compressed in `coding`, with its `Content-Encoding` and the CRC32 of the
/// compressed bytes, when its body is at least [`COMPRESSION_THRESHOLD_BYTES`] long;
/// otherwise unchanged.
pub async fn compress(
    response: Response<Full<Bytes>>,
    coding: ResponseCoding,
) -> Response<Full<Bytes>> {
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
    let buffer = Vec::with_capacity(plain.len() / 4);
    let compressed = match coding {
        ResponseCoding::Gzip => {
            let mut encoder = GzEncoder::new(buffer, Compression::fast());
            encoder.write_all(&plain).and_then(|()| encoder.finish())
        }
        ResponseCoding::Deflate => {
            let mut encoder = ZlibEncoder::new(buffer, Compression::fast());
            encoder.write_all(&plain).and_then(|()| encoder.finish())
        }
    };
    let compressed = match compressed {
        Ok(compressed) => Bytes::from(compressed),
        // Writing to a Vec does not fail; were it to, the plain answer is still correct.
        Err(_) => return Response::from_parts(parts, Full::new(plain)),
    };
    parts
        .headers
        .insert(CONTENT_ENCODING, HeaderValue::from_static(coding.name()));
    parts
        .headers
        .append(VARY, HeaderValue::from_static("Accept-Encoding"));
    set_crc32(&mut parts.headers, &compressed);
    Response::from_parts(parts, Full::new(compressed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::DeflateEncoder;

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
    fn passes_unknown_codings_through_and_refuses_broken_data_and_bombs() {
        let body = Bytes::from_static(b"{}");
        // Unknown codings, x-gzip among them, are not undone: the JSON parser judges the bytes.
        for coding in ["br", "x-gzip", "gzip, br"] {
            assert_eq!(
                decode_request_body(&headers(&[("content-encoding", coding)]), body.clone(), 100),
                Ok(body.clone()),
                "{coding}"
            );
        }
        let gzipped = Bytes::from(gzip(b"{}"));
        assert_eq!(
            decode_request_body(
                &headers(&[("content-encoding", "x-gzip")]),
                gzipped.clone(),
                100
            ),
            Ok(gzipped)
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
    fn gzip_is_preferred_then_deflate_unless_its_quality_is_zero() {
        let coding =
            |accept: &'static str| response_coding(&headers(&[("accept-encoding", accept)]));
        assert_eq!(coding("gzip"), Some(ResponseCoding::Gzip));
        assert_eq!(coding("deflate, GZIP;q=0.5"), Some(ResponseCoding::Gzip));
        assert_eq!(coding("*"), Some(ResponseCoding::Gzip));
        assert_eq!(coding("deflate"), Some(ResponseCoding::Deflate));
        assert_eq!(coding("gzip;q=0, deflate"), Some(ResponseCoding::Deflate));
        assert_eq!(coding("gzip;q=0"), None);
        assert_eq!(coding("deflate;q=0"), None);
        assert_eq!(coding("identity"), None);
        assert_eq!(response_coding(&headers(&[])), None);
    }
}
