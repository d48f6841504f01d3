//! Chaos: lost nodes, crashed AMs and late heartbeats, with the core's
//! invariants checked after every step and every application required to
//! finish afterwards.

mod common;

use spindle_sim::{chaos_sweep, run, ChaosOptions, SimError, SimOptions};

const SMALL: &str = r#"{
  "name": "chaos-small",
  "sample_interval_s": 60,
  "scheduler": {
    "kind": "capacity",
    "queues": [{"path": "a", "capacity": 60}, {"path": "b", "capacity": 40, "max": 80}]
  },
  "cluster": {
    "pools": [{"name": "c", "count": 5, "memory_mb": 8192, "vcores": 8, "racks": 2}],
    "max_am_attempts": 3
  },
  "jobs": [
    {"name": "mr", "kind": "mapreduce", "queue": "a",
     "arrivals": [{"poisson": {"rate_per_hour": 8, "until_s": 1800}}],
     "maps": {"count": {"min": 3, "max": 10}, "duration_s": {"mean": 60, "std": 20},
              "locality": {"node_fraction": 0.5}},
     "reduces": {"count": 2, "duration_s": 45}},
    {"name": "sp", "kind": "spark", "queue": "b",
     "arrivals": [{"poisson": {"rate_per_hour": 6, "until_s": 1800}}],
     "executors": {"count": {"min": 1, "max": 4}, "duration_s": 120, "memory_mb": 2048, "vcores": 2}},
    {"name": "svc", "kind": "service", "queue": "b", "unmanaged_am": true,
     "arrivals": [{"at_s": [30]}], "lifetime_s": 1500,
     "containers": {"count": 2}}
  ]
}"#;

fn chaos() -> ChaosOptions {
    ChaosOptions {
        node_loss_per_hour: 12.0,
        node_return_after_ms: 90_000,
        am_crash_per_hour: 10.0,
        heartbeat_delay_probability: 0.05,
        heartbeat_delay_max_ms: 8_000,
        until_ms: Some(1_800_000),
        liveness_timeout_ms: 4 * 3600 * 1000,
    }
}

fn options() -> Result<SimOptions, SimError> {
    let mut o = common::inline(SMALL)?;
    o.chaos = Some(chaos());
    Ok(o)
}

#[test]
fn twenty_seeds_keep_invariants_and_finish() -> Result<(), SimError> {
    let passed = chaos_sweep(&options()?, 1..=20)?;
    assert_eq!(passed.len(), 20);
    Ok(())
}

#[test]
fn chaos_actually_happens() -> Result<(), SimError> {
    let mut o = options()?;
    o.seed = Some(4);
    let r = run(o)?;
    let s = &r.summary;
    assert!(s.chaos);
    assert!(s.am_attempts_failed > 0, "{}", r.summary_text());
    assert!(s.tasks_lost > 0, "{}", r.summary_text());
    assert_eq!(s.apps_unfinished, 0);
    assert_eq!(s.apps_completed + s.apps_failed, s.apps_submitted);
    Ok(())
}

#[test]
fn a_stuck_run_fails_liveness_with_its_seed_and_replays() -> Result<(), SimError> {
    // One node, lost early and never back within the liveness phase.
    let json = r#"{
      "cluster": {"pools": [{"count": 1, "memory_mb": 4096, "vcores": 4}]},
      "jobs": [{"name": "j", "kind": "spark", "arrivals": [{"at_s": [0, 10, 20]}],
                "executors": {"count": 2, "duration_s": 600}}]
    }"#;
    let attempt = |seed: u64| -> String {
        let mut o = match common::inline(json) {
            Ok(o) => o,
            Err(e) => return e.to_string(),
        };
        o.seed = Some(seed);
        o.chaos = Some(ChaosOptions {
            node_loss_per_hour: 3600.0,
            node_return_after_ms: 100 * 3600 * 1000,
            am_crash_per_hour: 0.0,
            heartbeat_delay_probability: 0.0,
            heartbeat_delay_max_ms: 0,
            until_ms: Some(60_000),
            liveness_timeout_ms: 3600 * 1000,
        });
        match run(o) {
            Ok(r) => format!("unexpectedly passed: {}", r.summary_text()),
            Err(e) => {
                assert_eq!(e.seed(), Some(seed));
                e.to_string()
            }
        }
    };
    let first = attempt(77);
    assert!(first.starts_with("seed 77: liveness failed"), "{first}");
    assert!(first.contains("--seed 77"), "{first}");
    assert_eq!(first, attempt(77), "the same seed replays the same failure");
    Ok(())
}
