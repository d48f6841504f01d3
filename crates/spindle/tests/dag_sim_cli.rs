//! `spindle dag sim`, run as a user runs it: the built binary with
//! `--short`, for experiments 1 and 2 and the elastic scenario. Only
//! outcomes of the simulation are checked (they are deterministic); timings
//! never are.

use std::path::{Path, PathBuf};
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

fn ok(out: &Output) -> &Output {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(args: &[&str]) -> (serde_json::Value, Vec<u8>) {
    let out = spindle(args);
    let stdout = ok(&out).stdout.clone();
    match serde_json::from_slice(&stdout) {
        Ok(v) => (v, stdout),
        Err(e) => panic!(
            "stdout is not one JSON object ({e}):\n{}",
            String::from_utf8_lossy(&stdout)
        ),
    }
}

fn has_keys(v: &serde_json::Value, keys: &[&str], what: &str) {
    for key in keys {
        assert!(v.get(key).is_some(), "{what} lacks {key}: {v}");
    }
}

/// A fresh directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("spindle-dag-sim-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The keys docs/dag-sim.md documents for experiments 1 and 2.
fn check_experiment_json(v: &serde_json::Value, experiment: u64, schemes: usize, clients: usize) {
    has_keys(
        v,
        &[
            "experiment",
            "seed",
            "cluster",
            "queries",
            "results",
            "claims",
        ],
        "the report",
    );
    assert_eq!(v["experiment"], experiment);
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), schemes, "{v}");
    for r in results {
        has_keys(
            r,
            &[
                "scheme",
                "total_time_s",
                "throughput_dags_per_hour",
                "mean_turnaround_s",
                "utilization",
                "client_completion_s",
                "clients",
            ],
            "a scheme's result",
        );
        assert_eq!(
            r["client_completion_s"].as_array().map(Vec::len),
            Some(clients)
        );
        for c in r["clients"].as_array().expect("clients") {
            for run in c["runs"].as_array().expect("runs") {
                has_keys(run, &["query", "submitted_s", "finished_s"], "a run");
            }
        }
    }
    for c in v["claims"].as_array().expect("claims") {
        has_keys(c, &["claim", "held", "detail"], "a claim");
    }
}

#[test]
fn experiment_1_short_json_svg_and_determinism() {
    let args = ["dag", "sim", "--experiment", "1", "--short", "--json"];
    let (v, first) = json(&args);
    check_experiment_json(&v, 1, 6, 6);
    let (_, again) = json(&args);
    assert_eq!(first, again, "same seed, same bytes");
    let (_, other) = json(&[
        "dag",
        "sim",
        "--experiment",
        "1",
        "--short",
        "--json",
        "--seed",
        "2",
    ]);
    assert_ne!(first, other, "another seed builds other DAGs");

    // Human tables and the chart.
    let dir = TempDir::new("exp1");
    let dir_arg = dir.path().to_string_lossy().to_string();
    let out = spindle(&[
        "dag",
        "sim",
        "--experiment",
        "1",
        "--short",
        "--svg",
        &dir_arg,
    ]);
    let text = String::from_utf8_lossy(&ok(&out).stdout).to_string();
    assert!(text.starts_with("Experiment 1:"), "{text}");
    assert!(text.contains("The seed's observations:"), "{text}");
    let svg = std::fs::read_to_string(dir.path().join("dag-sim-experiment-1.svg"))
        .expect("the chart is written");
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dag-sim-experiment-1.svg"));
}

#[test]
fn experiment_2_short_json_svg_and_determinism() {
    let dir = TempDir::new("exp2");
    let dir_arg = dir.path().to_string_lossy().to_string();
    let args = [
        "dag",
        "sim",
        "--experiment",
        "2",
        "--short",
        "--json",
        "--svg",
        &dir_arg,
    ];
    let (v, first) = json(&args);
    check_experiment_json(&v, 2, 7, 8);
    assert_eq!(v["results"][1]["scheme"], "individual");
    assert!(dir.path().join("dag-sim-experiment-2.svg").is_file());
    let (_, again) = json(&args);
    assert_eq!(first, again, "same seed, same bytes");
    // The other task queue scheme gives another report.
    let (_, basic) = json(&[
        "dag",
        "sim",
        "--experiment",
        "2",
        "--short",
        "--json",
        "--taskattempt-queue-scheme",
        "basic",
    ]);
    assert_ne!(first, basic);
}

#[test]
fn elastic_short_json_svg_and_determinism() {
    let dir = TempDir::new("elastic");
    let dir_arg = dir.path().to_string_lossy().to_string();
    let args = [
        "dag",
        "sim",
        "--experiment",
        "elastic",
        "--short",
        "--json",
        "--svg",
        &dir_arg,
        "--check-invariants",
    ];
    let (v, first) = json(&args);
    has_keys(
        &v,
        &[
            "scenario",
            "seed",
            "cluster",
            "min_hosts",
            "queries",
            "runs",
            "claims",
        ],
        "the report",
    );
    assert_eq!(v["scenario"], "elastic");
    let runs = v["runs"].as_array().expect("runs");
    let labels: Vec<&str> = runs.iter().filter_map(|r| r["run"].as_str()).collect();
    assert_eq!(
        labels,
        [
            "autoscaling",
            "recycling none",
            "recycling fifo",
            "recycling fair",
            "recycling fifo + autoscaling"
        ]
    );
    for r in runs {
        has_keys(
            r,
            &[
                "container_scheduler_scheme",
                "autoscaling",
                "keys",
                "scale_outs",
                "scale_ins",
                "peak_workers",
                "final_workers",
                "peak_nodes",
                "final_nodes",
                "node_seconds",
                "migrations",
                "mean_turnaround_s",
                "groups",
                "clients",
                "scale_events",
                "state_changes",
                "moves",
            ],
            "a run",
        );
    }
    let auto = &runs[0];
    assert!(auto["scale_outs"].as_u64() > Some(0), "{auto}");
    assert!(auto["scale_ins"].as_u64() > Some(0), "{auto}");
    assert_eq!(auto["final_nodes"], v["min_hosts"]);
    assert_eq!(runs[1]["migrations"], 0);
    assert!(runs[2]["migrations"].as_u64() > Some(0));
    assert!(runs[3]["migrations"].as_u64() > Some(0));
    for c in v["claims"].as_array().expect("claims") {
        assert_eq!(c["held"], true, "{c}");
    }
    let svg = std::fs::read_to_string(dir.path().join("dag-sim-elastic.svg"))
        .expect("the chart is written");
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    assert!(svg.contains("SCALE_IN"));

    // Same seed, same bytes; invariant checks change nothing; "3" is
    // "elastic".
    let (_, plain) = json(&["dag", "sim", "--experiment", "elastic", "--short", "--json"]);
    assert_eq!(first, plain);
    let (_, three) = json(&["dag", "sim", "--experiment", "3", "--short", "--json"]);
    assert_eq!(first, three);

    // The human tables.
    let out = spindle(&["dag", "sim", "--experiment", "3", "--short"]);
    let text = String::from_utf8_lossy(&ok(&out).stdout).to_string();
    assert!(text.starts_with("Elastic scenario"), "{text}");
    for label in labels {
        assert!(text.contains(label), "{label}");
    }
    assert!(text.contains("Worker migrations per scheme:"), "{text}");
}

#[test]
fn an_unknown_experiment_is_refused() {
    for bad in ["4", "elastik", "0"] {
        let out = spindle(&["dag", "sim", "--experiment", bad, "--short"]);
        assert!(!out.status.success(), "{bad} accepted");
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("expected 1, 2, 3 or elastic"), "{bad}: {err}");
    }
}
