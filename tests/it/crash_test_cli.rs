//! `shoal crash-test` from the command line, in both modes: it crashes, recovers and checks
//! cycle after cycle, prints its report and exits 0 when nothing was violated.

use std::process::Command;

fn crash_test(args: &[&str]) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .arg("crash-test")
        .args(args)
        .arg("--json")
        .output()
        .expect("run shoal crash-test");
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("a JSON report")
}

#[test]
fn kill_cycles_keep_every_acknowledged_write() {
    let report = crash_test(&["--mode", "kill", "--durability", "none", "--cycles", "20"]);
    assert_eq!(report["cycles"], 20);
    assert!(report["acknowledged_checked"].as_u64().unwrap() > 0);
    assert_eq!(report["acknowledged_lost_allowed"], 0);
    assert_eq!(report["violations"], serde_json::json!({}));
    assert_eq!(report["recovery_ms"].as_array().unwrap().len(), 20);
}

#[test]
fn power_loss_cycles_leave_a_prefix_in_every_durability_mode() {
    for durability in ["sync", "none", "interval:5"] {
        let report = crash_test(&[
            "--mode",
            "power-loss",
            "--durability",
            durability,
            "--cycles",
            "20",
        ]);
        assert_eq!(report["cycles"], 20, "{durability}");
        assert_eq!(report["violations"], serde_json::json!({}), "{durability}");
        if durability == "sync" {
            assert_eq!(report["acknowledged_lost_allowed"], 0);
        }
    }
}
