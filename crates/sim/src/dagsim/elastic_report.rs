//! The elastic scenario's results as data: its sizes, and the report of
//! each run (groups, clients, scale events, timelines) with the claims the
//! runs are checked against. The simulation (`elastic`) fills them in; the
//! tables and the chart (`elastic_output`) read them.

use std::collections::BTreeMap;

use serde::Serialize;
use spindle_dag::autoscaler::ScaleState;
use spindle_dag::Resource;

use super::{Claim, QueryReport, RunReport};

/// What one task needs (as in experiments 1 and 2).
pub const TASK: Resource = Resource::new(4096, 1);
/// `mr3.auto.scale.in.min.hosts` of the runs with autoscaling.
pub const MIN_HOSTS: u32 = 2;

/// How big the elastic scenario is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElasticSize {
    /// Tasks one worker runs at once (each worker has `slots x 4096 MB`).
    pub slots_per_worker: u32,
    /// Workers one node holds.
    pub workers_per_node: u32,
    /// The DAGs are built and calibrated for a fixed cluster of this many
    /// workers (their task counts follow its slots, as in experiments 1
    /// and 2).
    pub reference_workers: u32,
    /// How many of experiment 1's queries the clients draw from.
    pub queries: u32,
    /// The burst: clients submitting DAGs back to back from time 0, the
    /// first `burst_dags_per_client` DAGs, the second one fewer, the third
    /// two fewer, and so on round ([`burst_dags`]), so that the load tapers
    /// off.
    pub burst_clients: u32,
    pub burst_dags_per_client: u32,
    /// `mr3.k8s.worker.total.max.memory.gb` is this many workers' memory.
    pub max_workers: u32,
    /// `mr3.auto.scale.out.num.initial.containers`.
    pub initial_workers: u32,
    /// `mr3.auto.scale.out.num.increment.containers`.
    pub increment_workers: u32,
    /// Recycling: clients per group and DAGs per client.
    pub recycling_clients_per_group: u32,
    pub recycling_dags_per_client: u32,
    /// `spindle.dag.group.max.workers` in the recycling runs.
    pub group_max_workers: u32,
}

impl ElasticSize {
    /// Nodes of 4 workers x 4 slots; 12 clients x 6 DAGs of experiment
    /// 1's queries (sized for 16 workers) on at most 32 workers.
    pub fn full() -> ElasticSize {
        ElasticSize {
            slots_per_worker: 4,
            workers_per_node: 4,
            reference_workers: 16,
            queries: 17,
            burst_clients: 12,
            burst_dags_per_client: 6,
            max_workers: 32,
            initial_workers: 4,
            increment_workers: 8,
            recycling_clients_per_group: 3,
            recycling_dags_per_client: 4,
            group_max_workers: 8,
        }
    }

    /// The CI form: nodes of 2 workers, 4 clients x 3 DAGs (sized for 4
    /// workers) on at most 8 workers.
    pub fn short() -> ElasticSize {
        ElasticSize {
            slots_per_worker: 4,
            workers_per_node: 2,
            reference_workers: 4,
            queries: 8,
            burst_clients: 4,
            burst_dags_per_client: 3,
            max_workers: 8,
            initial_workers: 2,
            increment_workers: 2,
            recycling_clients_per_group: 2,
            recycling_dags_per_client: 2,
            group_max_workers: 4,
        }
    }

    pub(super) fn worker(&self) -> Resource {
        Resource::new(
            TASK.memory_mb * u64::from(self.slots_per_worker),
            TASK.vcores * self.slots_per_worker,
        )
    }
}

/// The simulated cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElasticClusterReport {
    pub workers_per_node: u32,
    pub slots_per_worker: u32,
    pub worker_memory_mb: u64,
    pub worker_vcores: u32,
    pub task_memory_mb: u64,
    pub task_vcores: u32,
    pub node_provisioning_s: u64,
    pub worker_start_s: u64,
    pub empty_node_reclaimed_after_s: u64,
    pub initial_nodes: u32,
    pub max_nodes: u32,
    /// The fixed cluster the DAGs are sized and calibrated for.
    pub reference_workers: u32,
    pub quiet_period_s: u64,
}

/// One group's DAGs in one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElasticGroupResult {
    pub name: String,
    pub dags: u32,
    pub mean_turnaround_s: f64,
    pub max_turnaround_s: f64,
    pub last_finished_s: f64,
}

/// One client's DAGs in one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElasticClientReport {
    pub name: String,
    pub group: String,
    pub completion_s: f64,
    pub runs: Vec<RunReport>,
}

/// An autoscaler decision as carried out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleEventReport {
    pub at_s: f64,
    pub group: String,
    /// `scale-out`, `initial` (workers for a group that has none),
    /// `cancel` (requests withdrawn when SCALE_OUT ends) or `scale-in`.
    pub action: String,
    /// Workers requested or withdrawn, or workers on the released hosts.
    pub workers: u32,
    /// Of the workers requested, those recycled workers (from the reserve,
    /// or idle under fifo) provided at once, with no container request.
    pub recycled: u32,
    pub hosts: Vec<String>,
    /// The window's memory usage the decision was made on, percent.
    pub usage_percent: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateChangeReport {
    pub at_s: f64,
    pub group: String,
    pub state: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoveReport {
    pub at_s: f64,
    pub worker: String,
    /// `None`: from the reserve.
    pub from: Option<String>,
    pub to: String,
}

/// The cluster at one tick (for the chart; not in the JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct TimelinePoint {
    pub at_s: f64,
    pub nodes: u32,
    pub workers: Vec<u32>,
    pub reserve: u32,
    /// Memory of running attempts over the workers' task memory.
    pub memory_usage: f64,
    pub states: Vec<Option<ScaleState>>,
    /// Per group, the autoscaler's window usage (fraction).
    pub window_usage: Vec<Option<f64>>,
}

/// One run of the scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElasticRunReport {
    pub run: String,
    pub description: String,
    pub container_scheduler_scheme: String,
    pub autoscaling: bool,
    /// The keys given to the cores' configuration parser (the AM's).
    pub keys: BTreeMap<String, String>,
    pub groups: Vec<ElasticGroupResult>,
    /// Scale-outs proper (usage reached ScaleOutThreshold).
    pub scale_outs: u32,
    /// Requests for a group that had no worker.
    pub initial_requests: u32,
    pub scale_ins: u32,
    /// Scale-outs that ended with requests still waiting.
    pub scale_out_cancels: u32,
    pub containers_requested: u32,
    pub requests_cancelled: u32,
    /// Autoscaler requests a recycled worker took the place of: never made,
    /// or withdrawn (those are also in `requests_cancelled`).
    pub requests_recycled: u32,
    /// Container requests made while the group's autoscaler was SCALE_IN.
    pub requests_during_scale_in: u32,
    pub workers_started: u32,
    pub workers_exited: u32,
    pub released_by_scale_in: u32,
    /// Of those, the ones that first served DAGs active at release time
    /// (`mr3.auto.scale.in.wait.dag.finished`), and the longest wait.
    pub released_after_waiting: u32,
    pub longest_release_wait_s: f64,
    pub peak_workers: u32,
    pub final_workers: u32,
    pub peak_nodes: u32,
    pub final_nodes: u32,
    pub nodes_provisioned: u32,
    pub nodes_reclaimed: u32,
    /// From asking for each node to its reclaim (or the end of the run).
    pub node_seconds: f64,
    pub worker_seconds: f64,
    /// Busy slot time over the slots of the workers' lifetimes.
    pub slot_utilization: f64,
    /// Workers recycled to another group (`ReassignWorker`).
    pub migrations: u32,
    /// `StopWorkerGracefully` (fair recycling).
    pub graceful_stops: u32,
    pub attempts_killed: u32,
    pub dags: u32,
    pub mean_turnaround_s: f64,
    pub max_turnaround_s: f64,
    pub last_dag_finished_s: f64,
    /// When every client but the background one was done: the end of the
    /// burst (the last DAG in the runs without a background client).
    pub burst_end_s: f64,
    pub end_s: f64,
    pub first_scale_out_s: Option<f64>,
    pub first_scale_in_s: Option<f64>,
    pub last_scale_in_s: Option<f64>,
    pub core_steps: u64,
    pub scale_events: Vec<ScaleEventReport>,
    pub state_changes: Vec<StateChangeReport>,
    pub moves: Vec<MoveReport>,
    pub clients: Vec<ElasticClientReport>,
    #[serde(skip)]
    pub timeline: Vec<TimelinePoint>,
}

/// Everything the elastic scenario produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElasticReport {
    pub scenario: String,
    pub description: String,
    pub seed: u64,
    pub cluster: ElasticClusterReport,
    /// `mr3.auto.scale.in.min.hosts` of the runs with autoscaling.
    pub min_hosts: u32,
    pub queries: Vec<QueryReport>,
    pub runs: Vec<ElasticRunReport>,
    pub claims: Vec<Claim>,
}

impl ElasticReport {
    /// Pretty JSON, deterministic (byte-identical for the same options).
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    pub fn run(&self, label: &str) -> Option<&ElasticRunReport> {
        self.runs.iter().find(|r| r.run == label)
    }
}

/// DAGs of burst client `c`: `burst_dags_per_client`, one fewer for every
/// second client and two fewer for every third, so the burst tapers off.
pub fn burst_dags(size: &ElasticSize, c: u32) -> u32 {
    size.burst_dags_per_client.saturating_sub(c % 3).max(1)
}
