//! The same workload and seed give byte-identical outputs; another seed
//! gives other outputs.

mod common;

use spindle_sim::{run, SimError, SimReport};

fn outputs(r: &SimReport) -> Vec<String> {
    vec![
        r.summary_json(),
        r.timeseries_csv(),
        r.utilization_svg(),
        r.queues_svg(),
    ]
}

fn run_seed(seed: u64) -> Result<SimReport, SimError> {
    let mut o = common::inline(common::SMALL_ELASTIC)?;
    o.seed = Some(seed);
    run(o)
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() -> Result<(), SimError> {
    let a = run_seed(11)?;
    let b = run_seed(11)?;
    let c = run_seed(12)?;
    assert_eq!(outputs(&a), outputs(&b));
    assert_ne!(a.summary_json(), c.summary_json());
    assert_ne!(a.timeseries_csv(), c.timeseries_csv());
    // Sanity: the run did something and finished it.
    let s = &a.summary;
    assert!(s.apps_submitted > 5, "{}", a.summary_text());
    assert_eq!(s.apps_completed, s.apps_submitted);
    assert!(s.allocations > 50);
    Ok(())
}

#[test]
fn json_summary_has_the_promised_keys() -> Result<(), SimError> {
    let r = run_seed(3)?;
    let v: serde_json::Value =
        serde_json::from_str(&r.summary_json()).map_err(|e| spindle_sim::SimError::Workload {
            origin: "summary".into(),
            message: e.to_string(),
        })?;
    for key in [
        "node_hours",
        "utilization_mean",
        "apps_completed",
        "allocations",
        "turnaround_s_p50",
        "turnaround_s_p95",
        "queue_share_error_max",
    ] {
        assert!(
            v.get(key).is_some_and(|x| x.is_number()),
            "{key} missing in {v}"
        );
    }
    // One object on one line.
    assert_eq!(r.summary_json().lines().count(), 1);
    // The CSV has a column per leaf queue and a row per sample.
    let csv = r.timeseries_csv();
    let header = csv.lines().next().unwrap_or_default();
    assert!(
        header.contains("queue_used_mb:root.etl") && header.contains("queue_used_mb:root.adhoc"),
        "{header}"
    );
    assert_eq!(csv.lines().count(), r.series.len() + 1);
    Ok(())
}

#[test]
fn rounds_mode_is_deterministic_too() -> Result<(), SimError> {
    let go = || -> Result<String, SimError> {
        let mut o = common::inline(common::SMALL_ELASTIC)?;
        o.seed = Some(5);
        o.heartbeat_mode = Some(spindle_sim::HeartbeatMode::Rounds);
        let r = run(o)?;
        assert_eq!(r.summary.apps_completed, r.summary.apps_submitted);
        assert_eq!(r.summary.heartbeat_mode, "rounds");
        Ok(r.summary_json() + &r.timeseries_csv())
    };
    assert_eq!(go()?, go()?);
    Ok(())
}
