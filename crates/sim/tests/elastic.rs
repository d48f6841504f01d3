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
