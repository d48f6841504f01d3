//! `spindle sim` and `spindle bench scheduler`, run as a user runs them: the built
//! binary, the shipped example workloads, the JSON on stdout. Only outcomes of the
//! simulation are checked (they are deterministic); timings never are.

use std::path::PathBuf;
use std::process::{Command, Output};

fn spindle(args: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    match Command::new(env!("CARGO_BIN_EXE_spindle"))
        .args(args)
        .current_dir(root)
        .env("SPINDLE_LOG", "warn")
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("cannot run spindle {args:?}: {e}"),
    }
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(e) => panic!(
            "stdout is not one JSON object ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        ),
    }
}

#[test]
fn sim_json_summary_has_the_documented_keys_and_the_seed_example_result() {
    let v = json(&spindle(&[
        "sim",
        "conf/sim/packing-example.json",
        "--json",
        "--progress",
        "never",
    ]));
    for key in [
        "node_hours",
        "utilization_mean",
        "apps_completed",
        "allocations",
        "turnaround_s_p50",
        "turnaround_s_p95",
        "queue_share_error_max",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["allocations"], 20, "{v}");
    assert_eq!(v["placement"], "packing", "{v}");
    // The seed's example: 8, 8 and 4 containers on three nodes, the rest empty.
    assert_eq!(
        v["peak_node_containers"],
        serde_json::json!([8, 8, 4]),
        "{v}"
    );
    assert_eq!(v["empty_nodes_at_peak"], 7, "{v}");

    let spread = json(&spindle(&[
        "sim",
        "conf/sim/packing-example.json",
        "--json",
        "--placement",
        "spread",
        "--progress",
        "never",
    ]));
    assert_eq!(spread["empty_nodes_at_peak"], 0, "{spread}");
}

#[test]
fn same_seed_same_bytes_and_outputs_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("out");
    let out_arg = out_dir.to_string_lossy().to_string();
    let args = [
        "sim",
        "conf/sim/bursty-day.json",
        "--json",
        "--seed",
        "11",
        "--heartbeat-mode",
        "rounds",
        "--progress",
        "never",
    ];
    let first = spindle(&args);
    let mut with_out = args.to_vec();
    with_out.extend(["--out", out_arg.as_str()]);
    let second = spindle(&with_out);
    json(&first);
    assert_eq!(
        first.stdout, second.stdout,
        "the same workload and seed must print the same bytes"
    );
    for file in [
        "summary.json",
        "timeseries.csv",
        "utilization.svg",
        "queues.svg",
    ] {
        let path = out_dir.join(file);
        let meta = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
        assert!(meta.len() > 0, "{} is empty", path.display());
    }
}

#[test]
fn compare_reports_both_placements_and_the_saving() {
    let v = json(&spindle(&[
        "sim",
        "conf/sim/packing-example.json",
        "--compare",
        "--json",
        "--progress",
        "never",
    ]));
    assert_eq!(v["spread"]["placement"], "spread", "{v}");
    assert_eq!(v["packing"]["placement"], "packing", "{v}");
    assert!(v.get("node_hours_saving_pct").is_some(), "{v}");
    // The seed's example, in each nested summary: spread puts 2 containers
    // on each of the 10 nodes, packing 8/8/4 and leaves 7 empty.
    assert_eq!(v["spread"]["empty_nodes_at_peak"], 0, "{v}");
    assert_eq!(
        v["spread"]["peak_node_containers"],
        serde_json::json!([2, 2, 2, 2, 2, 2, 2, 2, 2, 2]),
        "{v}"
    );
    assert_eq!(v["packing"]["empty_nodes_at_peak"], 7, "{v}");
    assert_eq!(
        v["packing"]["peak_node_containers"],
        serde_json::json!([8, 8, 4]),
        "{v}"
    );
}

#[test]
fn compare_out_writes_the_runs_it_compared_without_running_them_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_arg = dir.path().to_string_lossy().to_string();
    let out = spindle(&[
        "sim",
        "conf/sim/packing-example.json",
        "--compare",
        "--json",
        "--out",
        out_arg.as_str(),
        "--progress",
        "always",
    ]);
    let v = json(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Each simulation draws one progress bar and ends its line: two
    // simulations, two bars (four if --out ran them again).
    let bars: Vec<&str> = stderr.lines().filter(|l| l.contains("sim [")).collect();
    assert_eq!(bars.len(), 2, "{stderr}");
    for bar in bars {
        assert!(
            bar.contains("100.0%") && bar.contains("apps 1/1"),
            "{bar:?}"
        );
    }
    for name in ["spread", "packing"] {
        let sub = dir.path().join(name);
        for file in [
            "summary.json",
            "timeseries.csv",
            "utilization.svg",
            "queues.svg",
        ] {
            let path = sub.join(file);
            assert!(
                stderr.contains(&format!("wrote {}", path.display())),
                "{stderr}"
            );
        }
        let text = std::fs::read_to_string(sub.join("summary.json")).expect("summary.json");
        let written: serde_json::Value = serde_json::from_str(&text).expect("summary JSON");
        assert_eq!(
            written, v[name],
            "{name}: the summary written is the one compared"
        );
        let svg = std::fs::read_to_string(sub.join("utilization.svg")).expect("utilization.svg");
        assert!(svg.contains(&format!("({name} placement)")), "{svg}");
    }
}

/// A workload no run can finish: a service asked to run for a day, longer
/// than chaos (30 simulated minutes) plus the liveness phase (12 hours).
/// Its AM may crash as often as chaos likes without the application
/// failing, so it is still running when the liveness phase ends.
const NEVER_FINISHES: &str = r#"{
  "name": "never-finishes",
  "cluster": {"pools": [{"count": 2, "memory_mb": 4096, "vcores": 4}], "max_am_attempts": 1000},
  "jobs": [{"name": "forever", "kind": "service", "arrivals": [{"at_s": [0]}],
            "lifetime_s": 86400, "containers": {"count": 1}}]
}"#;

#[test]
fn a_failing_chaos_run_prints_the_command_that_replays_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("never-finishes.json");
    std::fs::write(&path, NEVER_FINISHES).expect("write workload");
    let workload = path.to_string_lossy().to_string();
    let failing = |args: &[&str]| -> (String, String) {
        let out = spindle(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
        (stdout, stderr)
    };

    // One run: the failure, then the replay line.
    let (_, stderr) = failing(&[
        "sim",
        &workload,
        "--chaos",
        "--seed",
        "3",
        "--heartbeat-mode",
        "rounds",
        "--progress",
        "never",
    ]);
    assert!(
        stderr.contains("chaos run failed: seed 3: liveness failed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 application(s) did not finish"),
        "{stderr}"
    );
    let replay = stderr
        .lines()
        .find_map(|l| l.strip_prefix("replay it with: "))
        .unwrap_or_else(|| panic!("no replay line: {stderr}"));
    assert_eq!(
        replay,
        format!("spindle sim {workload} --heartbeat-mode rounds --chaos --seed 3")
    );
    // The printed command replays the same failure.
    let words: Vec<&str> = replay.split_whitespace().collect();
    assert_eq!(words[0], "spindle");
    let mut again: Vec<&str> = words[1..].to_vec();
    again.extend(["--progress", "never"]);
    let (_, stderr_again) = failing(&again);
    let failure = |s: &str| s.lines().next().unwrap_or_default().to_string();
    assert_eq!(failure(&stderr_again), failure(&stderr));

    // A sweep stops at the first failing seed and names it.
    let (stdout, stderr) = failing(&[
        "sim",
        &workload,
        "--chaos",
        "--chaos-seeds",
        "4..6",
        "--heartbeat-mode",
        "rounds",
        "--json",
        "--progress",
        "never",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(v, serde_json::json!({"seeds_passed": 0, "failed_seed": 4}));
    assert!(
        stderr.contains("chaos seed 4 failed: seed 4: liveness failed"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "replay it with: spindle sim {workload} --heartbeat-mode rounds --chaos --seed 4"
        )),
        "{stderr}"
    );

    // A workload that cannot be read is an error, not a seed to replay.
    for extra in [&[][..], &["--chaos-seeds", "1..2"][..]] {
        let mut args = vec!["sim", "no/such/workload.json", "--chaos"];
        args.extend_from_slice(extra);
        let out = spindle(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains("no/such/workload.json"), "{stderr}");
        assert!(!stderr.contains("replay"), "{stderr}");
    }
}

#[test]
fn yaml_workloads_run_from_the_command_line() {
    let v = json(&spindle(&[
        "sim",
        "conf/sim/two-teams.yaml",
        "--json",
        "--heartbeat-mode",
        "rounds",
        "--progress",
        "never",
    ]));
    assert_eq!(v["workload"], "two-teams", "{v}");
    assert_eq!(v["scheduler"], "capacity", "{v}");
    assert_eq!(v["apps_completed"], v["apps_submitted"], "{v}");
}

#[test]
fn short_chaos_sweep_passes() {
    let out = spindle(&[
        "sim",
        "conf/sim/packing-example.json",
        "--chaos",
        "--chaos-seeds",
        "1..3",
        "--progress",
        "never",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("3 seed(s) passed"), "{stdout}");

    let v = json(&spindle(&[
        "sim",
        "conf/sim/packing-example.json",
        "--chaos",
        "--chaos-seeds",
        "4..5",
        "--json",
        "--progress",
        "never",
    ]));
    assert_eq!(v["seeds_passed"], 2, "{v}");
    assert!(v["failed_seed"].is_null(), "{v}");
}

#[test]
fn bad_input_is_a_clear_error() {
    let out = spindle(&["sim", "no/such/workload.json"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no/such/workload.json"), "{stderr}");

    let out = spindle(&[
        "sim",
        "conf/sim/packing-example.json",
        "--placement",
        "sideways",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("spread or packing"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bench_scheduler_prints_the_documented_keys() {
    for policy in ["fifo", "capacity", "fair"] {
        let v = json(&spindle(&[
            "bench",
            "scheduler",
            "--nodes",
            "200",
            "--apps",
            "40",
            "--policy",
            policy,
            "--placement",
            "packing",
            "--json",
        ]));
        for key in [
            "allocations_per_sec",
            "decision_latency_us_p50",
            "decision_latency_us_p99",
            "rss_mb",
        ] {
            assert!(v.get(key).is_some(), "missing {key}: {v}");
        }
        assert_eq!(v["policy"], policy, "{v}");
        assert_eq!(v["containers_allocated"], 400, "{v}");
        assert!(
            v["allocations_per_sec"].as_f64().unwrap_or(0.0) > 0.0,
            "{v}"
        );
    }
}
