//! Reading a request body under the size cap and the body-read deadline, and discarding what
//! is left of one the server will not read.
//!
//! The deadline is what keeps a client that declares a body and then sends it a byte at a
//! time (or never) from holding a connection slot forever: the body is read before the
//! signature is checked, so authentication cannot turn such a client away first.

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::{timeout_at, Instant};

/// Why a body was not read.
#[derive(Debug)]
pub enum BodyError {
    /// More than the cap; the rest is still unread.
    TooLarge,
    /// The deadline passed first.
    TimedOut,
    /// The client went away or sent broken framing.
    Broken(hyper::Error),
}

/// Reads `body` to its end: at most `limit` bytes, before `deadline`.
pub async fn read_body(
    body: &mut Incoming,
    limit: usize,
    deadline: Instant,
) -> Result<Bytes, BodyError> {
    let read = async {
        // A body that arrives in one frame (most: hyper hands a small body over in one piece
        // of its read buffer) is kept as it came; only a second frame makes a copy.
        let mut first = Bytes::new();
        let mut collected: Option<BytesMut> = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(BodyError::Broken)?;
            if let Ok(data) = frame.into_data() {
                let length = collected.as_ref().map_or(first.len(), BytesMut::len);
                if length + data.len() > limit {
                    return Err(BodyError::TooLarge);
                }
                match &mut collected {
                    Some(collected) => collected.extend_from_slice(&data),
                    None if first.is_empty() => first = data,
                    None => {
                        let mut joined = BytesMut::with_capacity(first.len() + data.len());
                        joined.extend_from_slice(&first);
                        joined.extend_from_slice(&data);
                        collected = Some(joined);
                    }
                }
            }
        }
        Ok(collected.map_or(first, BytesMut::freeze))
    };
    timeout_at(deadline, read)
        .await
        .unwrap_or(Err(BodyError::TimedOut))
}

/// Reads and drops the rest of `body`, up to `bytes_max` more bytes, before `deadline`.
pub async fn discard_rest(body: &mut Incoming, bytes_max: u64, deadline: Instant) {
    let discard = async {
        let mut discarded: u64 = 0;
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                discarded = discarded.saturating_add(data.len() as u64);
                if discarded > bytes_max {
                    return;
                }
            }
        }
    };
    let _ = timeout_at(deadline, discard).await;
}
