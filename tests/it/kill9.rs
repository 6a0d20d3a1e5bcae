//! Kill -9 test (docs/DESIGN.md §7): a child process writes the crash workload and logs each
//! acknowledged batch; the parent SIGKILLs it at random moments, reopens the database and
//! checks invariants 1–4 against the child's acknowledgements. Every durability mode must
//! survive a process crash.
//!
//! `SHOAL_KILL9_CYCLES` sets the number of kill cycles (default 50); `SHOAL_KILL9_SEED`
//! replays a failing run.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use shoal_engine::{Db, DbOptions};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn acknowledged_batches_survive_kill_9_in_every_durability_mode() {
    let cycles = env_u64("SHOAL_KILL9_CYCLES", 50);
    let seed = env_u64("SHOAL_KILL9_SEED", rand::random::<u64>() >> 1);
    println!("kill9 seed {seed} (rerun with SHOAL_KILL9_SEED={seed})");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let modes = ["sync", "none", "interval:5"];
    let mut recovered_batches = 0;

    for cycle in 0..cycles {
        let mode = modes[cycle as usize % modes.len()];
        let mut child = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["crash-writer", "--dir"])
            .arg(dir.path())
            .args(["--durability", mode])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let acks = Arc::new(Mutex::new(Vec::<u64>::new()));
        let reader = {
            let acks = Arc::clone(&acks);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if let Some(n) = line.strip_prefix("ack ").and_then(|n| n.parse().ok()) {
                        acks.lock().unwrap().push(n);
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_millis(rng.random_range(30..200)));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        reader.join().unwrap();
        let acks = acks.lock().unwrap().clone();

        let options = DbOptions {
            wal_segment_size_bytes: 1 << 20,
            ..DbOptions::default()
        };
        let db = Db::open(dir.path(), options).unwrap();
        let recovered = shoal::crash_test::writer::verify(&db)
            .unwrap_or_else(|e| panic!("cycle {cycle} ({mode}), seed {seed}: {e}"));
        if let Some(last) = acks.last() {
            assert!(
                recovered.batches > *last,
                "cycle {cycle} ({mode}), seed {seed}: batch {last} was acknowledged but only {} batches survived",
                recovered.batches
            );
            // One writer thread: at most one batch was in flight after the last ack.
            assert!(
                recovered.batches <= last + 2,
                "cycle {cycle}: {} batches recovered but the last ack was {last}",
                recovered.batches
            );
        }
        assert!(
            recovered.batches >= recovered_batches,
            "cycle {cycle}: batches went backwards"
        );
        recovered_batches = recovered.batches;
        drop(db);
    }
    assert!(recovered_batches > 0, "the writer never committed anything");
    println!("kill9: {cycles} cycles, {recovered_batches} batches in the end");
}
