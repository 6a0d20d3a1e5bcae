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

use std::convert::Infallible;
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
        .and_then(|target| target.to_str().ok())
        .is_some_and(|target| target.ends_with(".GetItem"));
    // The body is read whole, as a real server must.
    let _ = request.into_body().collect().await;
    let body = if get_item {
        spin(work.spin);
        touch(work.touch_bytes);
        item
    } else {
        Bytes::from_static(b"{}")
    };
    let mut response = Response::new(Full::new(body));
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    Ok(response)
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
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(request, item.clone(), work));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
