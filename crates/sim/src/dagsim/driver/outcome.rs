//! What a simulation produced: every DAG run, the autoscalers' decisions,
//! worker moves, requests, samples and counters.

use spindle_dag::autoscaler::{ScaleOutCause, ScaleState};

/// One DAG a client ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DagRun {
    pub query: usize,
    pub submitted_ms: u64,
    pub finished_ms: u64,
}

/// An autoscaler decision as carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScaleAction {
    /// `RequestWorkers`, with the autoscaler's reason, and how many of the
    /// workers recycled ones provided at once (the rest were requested).
    Request {
        count: u32,
        cause: ScaleOutCause,
        recycled: u32,
    },
    /// `CancelRequests`: how many requests were still waiting.
    Cancel { count: u32 },
    /// `ReleaseNodes`: the hosts and how many workers were on them.
    Release { hosts: Vec<String>, workers: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScaleEvent {
    pub at_ms: u64,
    pub group: usize,
    pub action: ScaleAction,
    pub usage_bp: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StateChange {
    pub at_ms: u64,
    pub group: usize,
    pub state: ScaleState,
}

/// A worker recycled from one group (or the reserve) to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Move {
    pub at_ms: u64,
    pub worker: String,
    pub from: Option<usize>,
    pub to: usize,
}

/// A container request made to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestRecord {
    pub at_ms: u64,
    pub group: usize,
    /// The group's autoscaler was in SCALE_IN when the request was made.
    pub during_scale_in: bool,
}

/// The cluster at one tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sample {
    pub at_ms: u64,
    /// Nodes asked for and not reclaimed (provisioning ones included).
    pub nodes: u32,
    /// Registered workers per group.
    pub workers: Vec<u32>,
    /// Workers in no group (the container scheduler's reserve).
    pub reserve: u32,
    /// Memory of running attempts, all groups.
    pub used_mb: u64,
    /// Memory the groups' workers have for attempts.
    pub capacity_mb: u64,
    /// Per group: its autoscaler's state, if it has one and the group is
    /// in the session.
    pub states: Vec<Option<ScaleState>>,
    /// Per group: the autoscaler's last measured window usage.
    pub usage_bp: Vec<Option<u64>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counters {
    /// `RequestWorkers` because the usage reached ScaleOutThreshold.
    pub scale_outs: u32,
    /// `RequestWorkers` for a group without workers (initial containers).
    pub initial_requests: u32,
    pub scale_ins: u32,
    pub scale_out_cancels: u32,
    pub containers_requested: u32,
    pub requests_cancelled: u32,
    /// Autoscaler requests a recycled worker took the place of (before or
    /// after they reached the cluster).
    pub requests_recycled: u32,
    pub workers_started: u32,
    pub workers_exited: u32,
    /// Workers that left because scale-in released their node.
    pub released_by_scale_in: u32,
    /// Of those, the ones that first served DAGs active at release time.
    pub released_after_waiting: u32,
    /// The longest such wait.
    pub longest_release_wait_ms: u64,
    pub migrations: u32,
    pub graceful_stops: u32,
    pub attempts_killed: u32,
    pub nodes_provisioned: u32,
    pub nodes_reclaimed: u32,
}

/// What one simulation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimOutcome {
    /// Per client, its DAGs in submission order.
    pub runs: Vec<Vec<DagRun>>,
    pub end_ms: u64,
    pub last_dag_ms: u64,
    /// When every client but the background ones was done.
    pub foreground_done_ms: u64,
    pub counters: Counters,
    pub peak_workers: u32,
    pub peak_nodes: u32,
    pub final_workers: u32,
    pub final_nodes: u32,
    /// Node time, from asking for a node to its reclaim (or the end).
    pub node_ms: u64,
    /// Worker time, from registering to exiting (or the end).
    pub worker_ms: u64,
    /// Slot time of attempts that ran to their end.
    pub busy_ms: u64,
    pub scale_events: Vec<ScaleEvent>,
    pub state_changes: Vec<StateChange>,
    pub moves: Vec<Move>,
    pub requests: Vec<RequestRecord>,
    pub samples: Vec<Sample>,
    /// The status line of the tick with the most pending tasks.
    pub busiest_status_line: Option<String>,
    /// Inputs handled by the cores.
    pub steps: u64,
}
