//! Operations that block (writes waiting on the WAL's fsync) take turns on a bounded number
//! of threads, however many connections send them. Alone in its test binary, so the thread
//! count it reads is the server's and this test's own.

#[path = "it/support/mod.rs"]
mod support;

use shoal_server::ServerConfig;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{api_call, send_raw, TestServer};

const HANDLER_THREADS: usize = 4;
const CONNECTIONS: usize = 64;
/// Threads besides the handlers': the test harness's, the runtime's workers, and tokio's
/// spare blocking threads.
const OTHER_THREADS_MAX: usize = 12;

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_do_not_need_a_thread_each() {
    let server = TestServer::start(ServerConfig {
        handler_threads: HANDLER_THREADS,
        ..ServerConfig::default()
    })
    .await;
    let peak = Arc::new(AtomicUsize::new(thread_count()));
    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, running) = (Arc::clone(&peak), Arc::clone(&running));
        std::thread::spawn(move || {
            while running.load(Ordering::Relaxed) {
                peak.fetch_max(thread_count(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let mut writers = Vec::new();
    for _ in 0..CONNECTIONS {
        let address = server.address;
        // The fake handler's BatchWriteItem holds its thread for 100 ms, as a write waiting
        // on fsync does.
        writers.push(tokio::spawn(async move {
            send_raw(address, &api_call("BatchWriteItem", "{}")).await
        }));
    }
    for writer in writers {
        assert_eq!(writer.await.unwrap().status, 200);
    }
    running.store(false, Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(Ordering::Relaxed);
    assert!(
        peak <= HANDLER_THREADS + OTHER_THREADS_MAX,
        "{peak} threads for {CONNECTIONS} concurrent writes"
    );
    server.stop().await;
}
