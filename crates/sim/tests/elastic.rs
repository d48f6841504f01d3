//! The autoscaler grows and shrinks the cluster on a bursty workload, and
//! packing leaves more nodes idle to remove than spread.

mod common;

use spindle_sim::{compare_placements, run, SimError};

#[test]
fn bursts_scale_the_cluster_up_and_back_down() -> Result<(), SimError> {
    let mut o = common::inline(common::SMALL_ELASTIC)?;
    o.seed = Some(21);
    let r = run(o)?;
    let s = &r.summary;
    assert!(s.nodes_added > 0, "{}", r.summary_text());
    assert!(s.nodes_removed > 0, "{}", r.summary_text());
    assert!(s.nodes_max > 2 && s.nodes_max <= 16);
    assert_eq!(s.nodes_min, 2);
    assert_eq!(s.apps_completed, s.apps_submitted);
    // Quiet at the end: back to the minimum.
    let last = r.series.last().map(|p| p.live_nodes + p.provisioning_nodes);
    assert_eq!(last, Some(2));
    Ok(())
}

#[test]
fn packing_needs_fewer_node_hours_than_spread() -> Result<(), SimError> {
    let mut o = common::inline(common::SMALL_ELASTIC)?;
    o.seed = Some(21);
    let c = compare_placements(&o)?;
    assert_eq!(c.spread.placement, "spread");
    assert_eq!(c.packing.placement, "packing");
    assert_eq!(c.spread.apps_completed, c.packing.apps_completed);
    // Only the direction is asserted; the figures are measured, not
    // promised.
    assert!(
        c.packing.node_hours < c.spread.node_hours,
        "{}",
        c.render_text()
    );
    Ok(())
}

/// One starting node of 4 GB and room for one more. Job `a` takes the
/// first node for the whole hour; job `b`'s one executor (a whole node,
/// 600 s), submitted at t=100, has to wait for the autoscaler. AMs run outside the cluster, so
/// executors are the only containers.
const HAND_ELASTIC: &str = r#"{
  "name": "hand-elastic",
  "horizon_s": 3600,
  "sample_interval_s": 5,
  "cluster": {
    "pools": [{"name": "e", "count": 1, "memory_mb": 4096, "vcores": 4}],
    "am_heartbeat_interval_ms": 1000,
    "launch_delay_ms": 500,
    "elastic": {"min_nodes": 1, "max_nodes": 2, "provisioning_delay_s": 120,
                "scale_up_wait_s": 60, "scale_down_idle_s": 300, "check_interval_s": 10}
  },
  "jobs": [
    {"name": "a", "kind": "spark", "unmanaged_am": true, "arrivals": [{"at_s": [0]}],
     "executors": {"count": 1, "duration_s": 3500, "memory_mb": 4096}},
    {"name": "b", "kind": "spark", "unmanaged_am": true, "arrivals": [{"at_s": [100]}],
     "executors": {"count": 1, "duration_s": 600, "memory_mb": 4096}}
  ]
}"#;

#[test]
fn elastic_timings_and_node_hours_by_hand() -> Result<(), SimError> {
    let mut o = common::inline(HAND_ELASTIC)?;
    o.check_invariants = true;
    let r = run(o)?;
    let s = &r.summary;
    // By hand (the autoscaler looks every 10 s):
    // * t=0: `a` gets the only node.
    // * t=100: `b` arrives; its executor waits.
    // * t=160: it has waited scale_up_wait_s (60 s): one node is ordered,
    //   and paid for from now.
    // * t=280: the node registers, provisioning_delay_s (120 s) later, and
    //   `b` is placed on it; its AM starts the executor 0.5-1.5 s later; it
    //   runs 600 s and its NM reports it by about t=882.6.
    // * t=1190: the first check at least scale_down_idle_s (300 s) after
    //   the node emptied removes it (t=1180 is too early).
    // * t=3600: the horizon. The first node (the minimum) is never removed.
    // Node-hours: 3600 s + (1190 - 160) s = 4630 s.
    assert_eq!(s.nodes_added, 1, "{}", r.summary_text());
    assert_eq!(s.nodes_removed, 1, "{}", r.summary_text());
    assert_eq!((s.nodes_min, s.nodes_max), (1, 2));
    assert_eq!(s.apps_completed, 2);
    assert_eq!(s.sim_time_s, 3600.0);
    assert!(
        (s.node_hours - 4630.0 / 3600.0).abs() < 1e-6,
        "node-hours {} (want {})\n{}",
        s.node_hours,
        4630.0 / 3600.0,
        r.summary_text()
    );
    // The same moments in the time series (a sample taken at the same
    // millisecond as an autoscaler check or a node registering sees it).
    let first = |what: &str, pred: &dyn Fn(&spindle_sim::SamplePoint) -> bool, after_s: f64| {
        r.series
            .iter()
            .find(|p| p.time_ms as f64 / 1000.0 >= after_s && pred(p))
            .map(|p| p.time_ms as f64 / 1000.0)
            .unwrap_or_else(|| panic!("never {what}"))
    };
    let ordered = first("provisioning", &|p| p.provisioning_nodes == 1, 0.0);
    let joined = first("two live nodes", &|p| p.live_nodes == 2, 0.0);
    let removed = first("back to one node", &|p| p.live_nodes == 1, joined);
    assert_eq!(
        (ordered, joined, removed),
        (160.0, 280.0, 1190.0),
        "scale-up after the wait threshold, registration after the provisioning delay, \
         removal after the idle period"
    );
    Ok(())
}
