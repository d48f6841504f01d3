//! Experiments 1 and 2 on the driver of the session core: a fixed pool of
//! ContainerWorkers, one ContainerGroup (`All-In-One`, the session's
//! default) and clients that submit one DAG after another.
//!
//! The fixed cluster is the [driver](super::driver)'s cluster with one
//! worker per node, every node ready at time 0 and none ever reclaimed,
//! and workers that register the instant their container is granted. The
//! session asks for workers as the AM does, for the group's pending tasks
//! up to `spindle.dag.group.max.workers`, here the pool's size: the pool
//! is the whole cluster, so once it is up there is never room for more.
//! The experiments share one group, so nothing is recycled (scheme
//! `none`) and autoscaling is off. The session ticks every ten simulated
//! seconds (the status line's default period).

use spindle_dag::config::{DagConfig, TaskSchedulerConfig};
use spindle_dag::session::SessionConfig;
use spindle_dag::Resource;

use super::driver::{self, ClientStart, GroupPlan, NodeModel, SimClient, SimSpec};
use super::workload::QueryModel;
use super::DagSimError;

pub(crate) use super::driver::DagRun;

/// The period of the session's ticks (the status line's default period
/// and `mr3.check.memory.usage.event.interval.secs`'s default).
pub(crate) const TICK_MS: u64 = 10_000;
/// The ContainerGroup every client shares, named as in the seed's log.
pub(crate) const GROUP: &str = "All-In-One";

/// The fixed cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cluster {
    pub workers: u32,
    pub slots_per_worker: u32,
    /// What one task needs (every task of the experiments is this size).
    pub slot: Resource,
}

impl Cluster {
    pub fn slots(&self) -> u32 {
        self.workers * self.slots_per_worker
    }

    pub fn worker_resource(&self) -> Resource {
        Resource::new(
            self.slot.memory_mb * u64::from(self.slots_per_worker),
            self.slot.vcores * self.slots_per_worker,
        )
    }
}

/// One client: the queries it submits, in order, one at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientPlan {
    pub name: String,
    /// Indexes into the run's queries.
    pub queries: Vec<usize>,
}

/// Everything one simulation needs.
pub(crate) struct RunSpec<'a> {
    pub queries: &'a [QueryModel],
    pub clients: &'a [ClientPlan],
    pub cluster: Cluster,
    pub task: TaskSchedulerConfig,
    pub check_invariants: bool,
}

/// What one simulation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunOutcome {
    /// Per client, its DAGs in submission order.
    pub runs: Vec<Vec<DagRun>>,
    pub end_ms: u64,
    /// Sum of the durations of all attempts (slot-milliseconds).
    pub busy_slot_ms: u64,
    /// Inputs handled by the cores.
    pub steps: u64,
    /// The status line of the tick with the most pending tasks.
    pub busiest_status_line: Option<String>,
}

/// Runs the clients' plans to completion and reports what happened.
pub(crate) fn simulate(spec: &RunSpec<'_>) -> Result<RunOutcome, DagSimError> {
    let worker = spec.cluster.worker_resource();
    let groups = [GroupPlan {
        name: GROUP.to_string(),
        worker,
        default: true,
    }];
    let clients: Vec<SimClient> = spec
        .clients
        .iter()
        .map(|c| SimClient {
            name: c.name.clone(),
            group: 0,
            start: ClientStart::At { ms: 0 },
            queries: c.queries.clone(),
            background_until_ms: None,
        })
        .collect();
    let config = SessionConfig {
        cores: DagConfig {
            task: spec.task.clone(),
            ..DagConfig::default()
        },
        default_group: GROUP.to_string(),
        worker_resource: worker,
        group_max_workers: spec.cluster.workers,
        ..SessionConfig::default()
    };
    let nodes = NodeModel {
        workers_per_node: 1,
        provision_ms: 0,
        worker_start_ms: 0,
        reclaim_after_ms: None,
        initial_nodes: spec.cluster.workers,
        max_nodes: spec.cluster.workers,
    };
    let o = driver::simulate(&SimSpec {
        queries: spec.queries,
        groups: &groups,
        clients: &clients,
        nodes,
        config,
        tick_ms: TICK_MS,
        quiet_ms: 0,
        check_invariants: spec.check_invariants,
    })?;
    let c = o.counters;
    if c.attempts_killed + c.workers_exited + c.migrations + c.graceful_stops > 0 {
        return Err(DagSimError::Driver(format!(
            "nothing in the experiments is killed, stops or moves, but: {c:?}"
        )));
    }
    Ok(RunOutcome {
        runs: o.runs,
        end_ms: o.last_dag_ms,
        busy_slot_ms: o.busy_ms,
        steps: o.steps,
        busiest_status_line: o.busiest_status_line,
    })
}
