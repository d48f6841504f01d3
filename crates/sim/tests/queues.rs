//! Per-queue figures: usage columns and the queue share error, measured
//! on a contended fixed-size cluster with two weighted queues.

mod common;

use spindle_sim::{run, SimError};

const CONTENDED: &str = r#"{
  "name": "contended",
  "sample_interval_s": 10,
  "scheduler": {
    "kind": "KIND",
    "queues": QUEUES
  },
  "cluster": {"pools": [{"count": 4, "memory_mb": 16384, "vcores": 16}]},
  "jobs": [
    {"name": "big", "kind": "spark", "queue": "a",
     "arrivals": [{"periodic_bursts": {"until_s": 1800, "every_s": 300, "jobs": 2}}],
     "executors": {"count": 40, "duration_s": {"mean": 120, "std": 30}}},
    {"name": "small", "kind": "spark", "queue": "b",
     "arrivals": [{"periodic_bursts": {"from_s": 60, "until_s": 1800, "every_s": 300, "jobs": 2}}],
     "executors": {"count": 40, "duration_s": {"mean": 120, "std": 30}}}
  ]
}"#;

fn contended(kind: &str, queues: &str) -> Result<spindle_sim::SimReport, SimError> {
    let json = CONTENDED.replace("KIND", kind).replace("QUEUES", queues);
    let mut o = common::inline(&json)?;
    o.seed = Some(2);
    o.check_invariants = true;
    run(o)
}

#[test]
fn fair_queues_are_measured_against_their_weights() -> Result<(), SimError> {
    let r = contended(
        "fair",
        r#"[{"path": "a", "weight": 3}, {"path": "b", "weight": 1}]"#,
    )?;
    let s = &r.summary;
    assert_eq!(s.apps_completed, s.apps_submitted);
    assert!(s.queue_share_samples > 10, "{}", r.summary_text());
    assert!((0.0..=1.0).contains(&s.queue_share_error_max));
    assert!(s.queue_share_error_mean <= s.queue_share_error_max);
    // Both queues ran, and the columns add up to the cluster's usage.
    assert_eq!(r.queues, ["root.a", "root.b"]);
    for p in &r.series {
        assert_eq!(p.queue_used_mb.iter().sum::<i64>(), p.used_mb);
    }
    assert!(r
        .series
        .iter()
        .any(|p| p.queue_used_mb[0] > 0 && p.queue_used_mb[1] > 0));
    eprintln!("{}", r.summary_text());
    Ok(())
}

#[test]
fn capacity_queues_too() -> Result<(), SimError> {
    let r = contended(
        "capacity",
        r#"[{"path": "a", "capacity": 75, "user_limit_factor": -1}, {"path": "b", "capacity": 25, "user_limit_factor": -1}]"#,
    )?;
    let s = &r.summary;
    assert_eq!(s.apps_completed, s.apps_submitted);
    assert!(s.queue_share_samples > 10, "{}", r.summary_text());
    eprintln!("{}", r.summary_text());
    Ok(())
}
