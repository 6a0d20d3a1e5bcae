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

use std::convert::Infallible;
use std::net::SocketAddr;
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

async fn answer(
    request: Request<Incoming>,
    item: Bytes,
    work: Duration,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let get_item = request
        .headers()
        .get("x-amz-target")
        .and_then(|target| target.to_str().ok())
        .is_some_and(|target| target.ends_with(".GetItem"));
    // The body is read whole, as a real server must.
    let _ = request.into_body().collect().await;
    let body = if get_item {
        spin(work);
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::args()
        .nth(1)
        .map(|port| port.parse())
        .transpose()?
        .unwrap_or(8001);
    let work = Duration::from_micros(
        std::env::args()
            .nth(2)
            .map(|micros| micros.parse())
            .transpose()?
            .unwrap_or(0),
    );
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
