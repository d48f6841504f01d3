//! `spindle bench scheduler`: the scheduler core's decision throughput (no I/O), as
//! measured by `spindle_sim::bench`.

use crate::sim_cmd::{parse_placement, parse_policy};
use spindle_sim::bench::{run_scheduler_bench, SchedulerBenchOptions};

/// Arguments of `spindle bench scheduler`.
///
/// Builds NODES nodes (64 GB, 64 vcores each) and APPS running applications in the
/// policy's queue tree (FIFO: one queue; capacity and fair: 4 × 5 × 5 leaves), asks
/// for CONTAINERS one-gigabyte containers and times the core's continuous passes until
/// all are placed (and left running), then times node heartbeats.
#[derive(clap::Args)]
pub struct SchedulerBenchArgs {
    /// Nodes in the cluster.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// Running applications.
    #[arg(long, default_value_t = 10_000)]
    apps: usize,
    /// Scheduler: fifo, capacity or fair.
    #[arg(long, default_value = "capacity", value_name = "fifo|capacity|fair")]
    policy: String,
    /// Node selection: spread or packing.
    #[arg(long, default_value = "spread", value_name = "spread|packing")]
    placement: String,
    /// Containers asked for and left running (default: 10 per application).
    #[arg(long)]
    containers: Option<usize>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: SchedulerBenchArgs) -> Result<u8, String> {
    let opts = SchedulerBenchOptions {
        nodes: args.nodes,
        apps: args.apps,
        policy: parse_policy(&args.policy)?,
        placement: parse_placement(&args.placement)?,
        containers: args.containers.unwrap_or(args.apps.saturating_mul(10)),
    };
    let report = tokio::task::spawn_blocking(move || run_scheduler_bench(&opts))
        .await
        .map_err(|e| format!("the bench thread failed: {e}"))?
        .map_err(|e| e.to_string())?;
    if args.json {
        print!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    Ok(0)
}
