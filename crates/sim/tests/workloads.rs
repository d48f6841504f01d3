//! Every shipped workload file loads; the small ones also run.

mod common;

use spindle_sim::{load, run, SimError};

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
        if path.extension().is_some_and(|e| e == "json") {
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
        ["bursty-day", "packing-example", "scale-10k", "sls-sample"]
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
