//! Every shipped workload file loads; the small ones also run. Workload
//! files are JSON or YAML.

mod common;

use std::path::PathBuf;

use spindle_sim::{load, run, HeartbeatMode, SimError, WorkloadSource};

#[test]
fn shipped_workloads_load() -> Result<(), SimError> {
    let dir = common::workspace("conf/sim");
    let mut names = Vec::new();
    let entries = std::fs::read_dir(&dir).map_err(|source| SimError::Io {
        path: dir.clone(),
        source,
    })?;
    for entry in entries {
        let path = entry
            .map_err(|source| SimError::Io {
                path: dir.clone(),
                source,
            })?
            .path();
        if path
            .extension()
            .is_some_and(|e| e == "json" || e == "yaml" || e == "yml")
        {
            let mut o = common::file("");
            o.workload = spindle_sim::WorkloadSource::File(path.clone());
            let (w, _) = load(&o)?;
            assert!(!w.jobs.is_empty(), "{}", path.display());
            names.push(w.name);
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "bursty-day",
            "packing-example",
            "scale-10k",
            "sls-sample",
            "two-teams"
        ]
    );
    Ok(())
}

#[test]
fn bursty_day_is_a_day_with_bursts() -> Result<(), SimError> {
    let (w, seed) = load(&common::file("conf/sim/bursty-day.json"))?;
    assert_eq!(seed, 7, "the workload's own seed");
    assert_eq!(w.horizon_ms, 24 * 3600 * 1000);
    assert!(w.cluster.elastic.is_some());
    // Arrivals cluster: some 10-minute window holds far more than the
    // day's average.
    let times: Vec<u64> = w.jobs.iter().map(|j| j.arrival_ms).collect();
    let window = 600_000;
    let busiest = times
        .iter()
        .map(|&t| times.iter().filter(|&&u| u >= t && u < t + window).count())
        .max()
        .unwrap_or(0);
    let average = times.len() as f64 / (24.0 * 6.0);
    assert!(
        busiest as f64 > 5.0 * average,
        "busiest {busiest}, average {average}"
    );
    Ok(())
}

#[test]
fn bad_workloads_are_rejected_with_the_reason() {
    let cases = [
        (r#"{"jobs": []}"#, "give exactly one of"),
        (
            r#"{"cluster": {"pools": [{"count": 1, "memory_mb": 1024, "vcores": 1}]},
                "jobs": [{"name": "j", "kind": "spark", "queue": "nope", "arrivals": [{"at_s": [0]}],
                          "executors": {"count": 1, "duration_s": 1}}],
                "scheduler": {"kind": "capacity", "queues": [{"path": "a", "capacity": 100}]}}"#,
            "names queue 'nope', which is not a leaf queue (leaves: root.a)",
        ),
        (
            r#"{"cluster": {"pools": [{"count": 1, "memory_mb": 4096, "vcores": 4}]},
                "jobs": [{"name": "j", "kind": "spark", "arrivals": [{"at_s": [0]}],
                          "executors": {"count": 1, "duration_s": 1, "memory_mb": 6144}}]}"#,
            "fits on no node",
        ),
        (
            r#"{"cluster": {"pools": [{"count": 1, "memory_mb": 4096, "vcores": 4}]},
                "jobs": [{"name": "j", "kind": "mapreduce", "arrivals": [{"at_s": [0]}],
                          "executors": {"count": 1, "duration_s": 1}}]}"#,
            "mapreduce jobs take maps/reduces",
        ),
        (
            r#"{"scheduler": {"placement": "packed"}}"#,
            "unknown variant `packed`",
        ),
    ];
    for (json, want) in cases {
        let err = common::inline(json)
            .and_then(|o| run(o).map(|_| ()))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(want), "{json}\n=> {err}");
    }
}

/// `conf/sim/packing-example.json`, in YAML.
const PACKING_EXAMPLE_YAML: &str = "
# The seed's packing example, as YAML.
name: packing-example
seed: 1
sample_interval_s: 1
scheduler:
  kind: fair
  placement: packing
  packing_high_memory_threshold: 0.8
  packing_min_nodes: 5
cluster:
  pools:
    - {name: node, count: 10, memory_mb: 10240, vcores: 10}
  heartbeat_interval_ms: 1000
jobs:
  - name: twenty-containers
    kind: spark
    unmanaged_am: true
    arrivals:
      - at_s: [0]
    executors: {count: 20, duration_s: 300, memory_mb: 1024, vcores: 1}
";

fn scratch(name: &str, text: &str) -> Result<PathBuf, SimError> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sim-workloads");
    let path = dir.join(name);
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|source| SimError::Write {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

#[test]
fn a_yaml_workload_runs_exactly_as_its_json_twin() -> Result<(), SimError> {
    let json = run(common::file("conf/sim/packing-example.json"))?;
    // By extension, and by content for a file whose name says nothing.
    for name in [
        "packing-example.yaml",
        "packing-example.yml",
        "packing-example",
    ] {
        let path = scratch(name, PACKING_EXAMPLE_YAML)?;
        let mut o = common::file("");
        o.workload = WorkloadSource::File(path);
        let yaml = run(o)?;
        assert_eq!(yaml.summary_json(), json.summary_json(), "{name}");
        assert_eq!(yaml.timeseries_csv(), json.timeseries_csv(), "{name}");
        assert_eq!(yaml.summary.peak_node_containers, vec![8, 8, 4]);
    }
    // A JSON file without an extension is still JSON (its errors are
    // serde_json's).
    let text = std::fs::read_to_string(common::workspace("conf/sim/packing-example.json"))
        .map_err(|source| SimError::Io {
            path: "conf/sim/packing-example.json".into(),
            source,
        })?;
    let path = scratch("packing-example-json", &text)?;
    let mut o = common::file("");
    o.workload = WorkloadSource::File(path);
    assert_eq!(run(o)?.summary_json(), json.summary_json());
    Ok(())
}

#[test]
fn yaml_errors_name_the_file_key_and_line() -> Result<(), SimError> {
    let path = scratch(
        "typo.yaml",
        "cluster:\n  pools: [{count: 1, memory_mb: 1024, vcores: 1}]\n  heartbeat_ms: 5\n",
    )?;
    let mut o = common::file("");
    o.workload = WorkloadSource::File(path.clone());
    let err = run(o).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.starts_with(&path.display().to_string()), "{err}");
    assert!(err.contains("unknown field `heartbeat_ms`"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    Ok(())
}

#[test]
fn the_shipped_yaml_example_runs_in_both_heartbeat_modes() -> Result<(), SimError> {
    // It asks for delay scheduling, which counts node heartbeats; rounds
    // send none, so there the delay must not apply (else node-local maps
    // whose node stays busy would wait forever).
    for mode in [HeartbeatMode::PerNode, HeartbeatMode::Rounds] {
        let mut o = common::file("conf/sim/two-teams.yaml");
        o.heartbeat_mode = Some(mode);
        let r = run(o)?;
        let s = &r.summary;
        assert_eq!(s.workload, "two-teams");
        assert_eq!(s.scheduler, "capacity");
        assert!(s.apps_submitted > 10, "{}", r.summary_text());
        assert_eq!(s.apps_completed, s.apps_submitted, "{}", r.summary_text());
        assert!(s.sim_time_s < 3.0 * 3600.0, "{}", r.summary_text());
        assert_eq!(r.queues, ["root.analysts", "root.etl"]);
        assert!(s.locality.node_local > 0, "{}", r.summary_text());
    }
    Ok(())
}
