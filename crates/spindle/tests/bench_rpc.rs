//! `spindle bench rpc` end to end: the binary starts its own ResourceManager,
//! drives it with simulated NodeManagers and unmanaged ApplicationMasters
//! over IPC, and prints one JSON object. Only the shape and sanity of the
//! figures are checked, never timings against targets.

use std::process::Command;

fn spindle() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spindle"))
}

#[test]
fn a_short_run_reports_sane_figures_as_json() {
    let out = spindle()
        .args([
            "bench",
            "rpc",
            "--nms",
            "20",
            "--ams",
            "2",
            "--duration-s",
            "3",
            "--warmup-s",
            "1",
            "--allocate-rate",
            "40",
            "--hold-ms",
            "300",
            "--json",
        ])
        .env("SPINDLE_LOG", "warn")
        .output()
        .expect("spindle runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one JSON object on stdout: {stdout}");
    // Progress goes to stderr, phase by phase, in order.
    let phases = [
        "bench rpc: starting Spindle's ResourceManager",
        "bench rpc: registering 20 simulated NodeManagers",
        "bench rpc: submitting and registering 2 unmanaged ApplicationMasters",
        "; warming up for 1.0 s",
        "bench rpc: measuring for 3.0 s",
        "bench rpc: winding down",
    ];
    let mut from = 0;
    for phase in phases {
        match stderr[from..].find(phase) {
            Some(at) => from += at + phase.len(),
            None => panic!("progress line {phase:?} missing or out of order:\n{stderr}"),
        }
    }
    let v: serde_json::Value = serde_json::from_str(lines[0]).expect("valid JSON");
    let num = |key: &str| -> f64 {
        v.get(key)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
    };
    for key in [
        "heartbeats_per_sec",
        "allocate_ms_p50",
        "allocate_ms_p99",
        "heartbeat_ms_p50",
        "heartbeat_ms_p99",
        "allocates_per_sec",
        "rm_cpu_cores",
        "rm_rss_mb",
    ] {
        assert!(num(key) > 0.0, "{key} should be positive in {v}");
    }
    assert_eq!(num("nms_registered"), 20.0);
    assert_eq!(num("ams_registered"), 2.0);
    assert!(num("containers_allocated") > 0.0, "{v}");
    assert!(num("containers_released") > 0.0, "{v}");
    assert_eq!(num("heartbeat_errors"), 0.0, "{v}");
    assert_eq!(num("allocate_errors"), 0.0, "{v}");
    assert_eq!(num("task_failures"), 0.0, "{v}");
    // 20 nodes beat about once a second each; allow a loaded machine slack.
    let hb = num("heartbeats_per_sec");
    assert!(hb > 5.0 && hb < 40.0, "heartbeats_per_sec {hb}");
    assert!(num("allocate_ms_p99") >= num("allocate_ms_p50"));
    assert!(num("bench_cpu_cores") >= 0.0);
    assert!(num("duration_s") >= 3.0);
}

#[test]
fn bad_arguments_are_refused_with_the_reason() {
    let out = spindle()
        .args(["bench", "rpc", "--nms", "0", "--json"])
        .env("SPINDLE_LOG", "warn")
        .output()
        .expect("spindle runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--nms must be at least 1"), "{stderr}");

    let out = spindle()
        .args(["bench", "rpc", "--rm-conf", "novalue", "--json"])
        .env("SPINDLE_LOG", "warn")
        .output()
        .expect("spindle runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--rm-conf takes KEY=VALUE"), "{stderr}");
}
