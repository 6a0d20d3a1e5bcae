//! A server that does nothing: it speaks HTTP/1.1 with keep-alive on hyper, as `shoal serve`
//! does, reads each request whole, and answers every `GetItem` with the same 1 KB item and
//! every other operation with `{}`. It is the floor under Shoal's request path: the CPU per
//! request any hyper server spends before it does any work. `docs/PERFORMANCE.md` compares
//! `shoal serve`'s GetItem to it under the same `shoal bench` load, at one offered rate so
//! the client's wake-ups cost both servers alike:
//!
//! ```sh
//! cargo run --release --example noop_server -- 8001 &
//! shoal bench --endpoint http://127.0.0.1:8001 --workloads GetItem --rate 10000 --server-pid $!
//! ```
//!
//! A second argument, `WORK_MICROS`, has each GetItem spin on the CPU that long before it
//! answers: the floor of a server whose own work costs that much. Beside Shoal at the same
//! rate it tells how many microseconds of a GetItem are Shoal's own work, and whether the
//! kernel's share (waking the waiting client) grows with the time the client waited, as it
//! could on a virtual machine whose idle vCPUs halt (docs/PERFORMANCE.md, "Over HTTP").
//! A third, `TOUCH_KIB`, has each GetItem then read that many KiB of a 64 MiB buffer, a
//! different stretch each time: work that, like a real lookup, evicts what the kernel's
//! network path had in the caches, to tell whether that is what makes a busy server's
//! system time grow.
//!
//! With `NOOP_HTTP=httparse` in its environment it serves without hyper: each connection's
//! bytes are parsed with httparse (the parser hyper itself uses) and answered with a status
//! line, the content type and the length written by hand (no `Date`). The difference to the
//! hyper server is what hyper's own machinery (its connection state, header map, body
//! channel and encoder) costs a request: the most that any HTTP layer written for Shoal
//! could save.

use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An item of the bench's shape, about 1 KB as JSON.
fn item_body() -> Bytes {
    let payload = "x".repeat(900);
    Bytes::from(format!(
        r#"{{"Item":{{"pk":{{"S":"p000001"}},"sk":{{"S":"s000000001"}},"l1":{{"S":"l0001"}},"l2":{{"N":"1"}},"g1":{{"S":"g0001"}},"g2":{{"S":"h00001"}},"inc":{{"N":"1"}},"payload":{{"S":"{payload}"}}}}}}"#
    ))
}

/// What each GetItem does before it answers (module docs).
#[derive(Clone, Copy)]
struct Work {
    spin: Duration,
    touch_bytes: usize,
}

async fn answer(
    request: Request<Incoming>,
    item: Bytes,
    work: Work,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let get_item = request
        .headers()
        .get("x-amz-target")
        .is_some_and(|target| is_get_item(target.as_bytes()));
    // The body is read whole, as a real server must.
    let _ = request.into_body().collect().await;
    let body = answer_body(get_item, item, work);
    let mut response = Response::new(Full::new(body));
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    Ok(response)
}

/// Whether an `X-Amz-Target` names GetItem.
fn is_get_item(target: &[u8]) -> bool {
    target.ends_with(b".GetItem")
}

/// The answer to a request: after its work, the item to a GetItem, `{}` to anything else.
fn answer_body(get_item: bool, item: Bytes, work: Work) -> Bytes {
    if get_item {
        spin(work.spin);
        touch(work.touch_bytes);
        item
    } else {
        Bytes::from_static(b"{}")
    }
}

/// Keeps the CPU busy for `work` (a stand-in for a request's own work; a sleep would let
/// the CPU idle).
fn spin(work: Duration) {
    if work.is_zero() {
        return;
    }
    let started = Instant::now();
    while started.elapsed() < work {
        std::hint::spin_loop();
    }
}

/// The buffer `touch` reads: larger than the caches, so each read misses them.
const TOUCH_BUFFER_BYTES: usize = 64 << 20;

/// Reads `bytes` of a buffer larger than the caches, one byte per cache line, from a place
/// that moves on with every call (module docs).
fn touch(bytes: usize) {
    static BUFFER: OnceLock<Vec<u8>> = OnceLock::new();
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    if bytes == 0 {
        return;
    }
    let buffer = BUFFER.get_or_init(|| vec![1; TOUCH_BUFFER_BYTES]);
    let bytes = bytes.min(buffer.len());
    // Each call starts about 7 MiB past the last, so calls in a row share no lines.
    let start = NEXT.fetch_add(7_777_777, Ordering::Relaxed) % (buffer.len() - bytes + 1);
    let sum = buffer[start..start + bytes]
        .iter()
        .step_by(64)
        .fold(0u64, |sum, byte| sum.wrapping_add(u64::from(*byte)));
    std::hint::black_box(sum);
}

/// Largest request head and body the server without hyper reads; a larger one closes the
/// connection.
const RAW_REQUEST_BYTES_MAX: usize = 64 << 10;

/// Serves one connection without hyper (module docs): keep-alive, bodies sized by
/// `Content-Length` only, until the client closes or sends what it cannot parse.
async fn serve_without_hyper(mut stream: tokio::net::TcpStream, item: Bytes, work: Work) {
    let mut buffer = vec![0u8; RAW_REQUEST_BYTES_MAX];
    let mut filled = 0;
    let mut answer = Vec::with_capacity(4096);
    loop {
        // The head, then as much body as it announces.
        let (head_len, body_len, get_item) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut request = httparse::Request::new(&mut headers);
            match request.parse(&buffer[..filled]) {
                Ok(httparse::Status::Complete(head_len)) => {
                    let mut body_len = 0;
                    let mut get_item = false;
                    for header in request.headers.iter() {
                        if header.name.eq_ignore_ascii_case("content-length") {
                            let Some(len) = std::str::from_utf8(header.value)
                                .ok()
                                .and_then(|text| text.trim().parse().ok())
                            else {
                                return;
                            };
                            body_len = len;
                        } else if header.name.eq_ignore_ascii_case("x-amz-target") {
                            get_item = is_get_item(header.value);
                        }
                    }
                    break (head_len, body_len, get_item);
                }
                Ok(httparse::Status::Partial) => {}
                Err(_) => return,
            }
            if !read_more(&mut stream, &mut buffer, &mut filled).await {
                return;
            }
        };
        let request_len = head_len + body_len;
        if request_len > buffer.len() {
            return;
        }
        while filled < request_len {
            if !read_more(&mut stream, &mut buffer, &mut filled).await {
                return;
            }
        }
        let body = answer_body(get_item, item.clone(), work);
        answer.clear();
        // Writing into a Vec cannot fail.
        let _ = write!(
            answer,
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        answer.extend_from_slice(&body);
        if stream.write_all(&answer).await.is_err() {
            return;
        }
        // A pipelined request's bytes move to the front.
        buffer.copy_within(request_len..filled, 0);
        filled -= request_len;
    }
}

/// Reads what the connection has into `buffer` after its first `filled` bytes; false once the
/// client has closed, the read failed, or the buffer is full (a request too large to serve).
async fn read_more(
    stream: &mut tokio::net::TcpStream,
    buffer: &mut [u8],
    filled: &mut usize,
) -> bool {
    match stream.read(&mut buffer[*filled..]).await {
        Ok(0) | Err(_) => false,
        Ok(read) => {
            *filled += read;
            true
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // PORT [WORK_MICROS [TOUCH_KIB]] (module docs), each a whole number.
    let argument = |index: usize, default: u64| -> Result<u64, std::num::ParseIntError> {
        std::env::args()
            .nth(index)
            .map(|value| value.parse())
            .transpose()
            .map(|value| value.unwrap_or(default))
    };
    let port = u16::try_from(argument(1, 8001)?)?;
    let work = Work {
        spin: Duration::from_micros(argument(2, 0)?),
        touch_bytes: usize::try_from(argument(3, 0)?)?.saturating_mul(1024),
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    println!("noop server listening on http://127.0.0.1:{port}");
    let item = item_body();
    let without_hyper = std::env::var("NOOP_HTTP").is_ok_and(|http| http == "httparse");
    // Ctrl-C returns from main, so a build instrumented for profile-guided optimisation
    // (scripts/build-pgo.sh) writes its counts on the way out.
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            _ = &mut ctrl_c => return Ok(()),
        };
        let _ = stream.set_nodelay(true);
        let item = item.clone();
        if without_hyper {
            tokio::spawn(serve_without_hyper(stream, item, work));
            continue;
        }
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(request, item.clone(), work));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
