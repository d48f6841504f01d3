//! The session protocol's messages: what a client, the AM and a worker
//! send each other, one JSON value a line. Their JSON is the protocol
//! (`tests/wire_format.rs` pins it byte for byte). Those that carry the
//! session core's values are converted from and to the core's types in
//! `convert.rs` only.

use serde::{Deserialize, Serialize};
use spindle_dag::AttemptId;

use crate::dagfile::DagFile;

/// The first line of every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Hello {
    Client {
        secret: String,
        /// Who is asking (`user@host:pid`), for logs and DAG ownership.
        client: String,
    },
    Worker {
        secret: String,
        /// The worker's container id.
        worker: String,
        /// `host:port` of the worker's output server.
        http_addr: String,
    },
}

/// A client's request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ClientRequest {
    Submit {
        dag: DagFile,
        /// Overrides the DAG file's queue.
        #[serde(default)]
        queue: Option<String>,
    },
    Status {
        #[serde(default)]
        dag: Option<u64>,
    },
    Kill {
        dag: u64,
    },
    Stop,
}

/// The AM's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ClientResponse {
    Submitted { dag: u64 },
    Status(Box<StatusReport>),
    Killed { dag: u64 },
    Stopping,
    Error { message: String },
}

/// What `spindle dag status` shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusReport {
    pub application: String,
    pub groups: Vec<GroupStatus>,
    pub workers: Vec<WorkerStatus>,
    pub dags: Vec<DagStatusReport>,
    pub counters: Counters,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupStatus {
    pub name: String,
    pub worker_memory_mb: u64,
    pub worker_vcores: u32,
    /// The TaskScheduler's status line (`queue = pending/usage%`).
    pub status_line: String,
    pub workers: u32,
    pub requested_workers: u32,
    /// `STABLE`, `SCALE_OUT` or `SCALE_IN` when autoscaling is on.
    #[serde(default)]
    pub autoscale_state: Option<String>,
    /// The last measured memory usage, in basis points.
    #[serde(default)]
    pub usage_bp: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerStatus {
    pub worker: String,
    pub host: String,
    pub group: Option<String>,
    pub capacity_mb: u64,
    pub used_mb: u64,
    pub running_attempts: u64,
    pub draining: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DagStatusReport {
    pub id: u64,
    pub name: String,
    pub client: String,
    pub group: String,
    pub queue: String,
    /// `RUNNING`, `SUCCEEDED`, `FAILED` or `KILLED`.
    pub state: String,
    #[serde(default)]
    pub reason: Option<String>,
    pub total_tasks: u64,
    pub succeeded_tasks: u64,
    pub running_attempts: u64,
    pub pending_tasks: u64,
    pub elapsed_ms: u64,
}

impl DagStatusReport {
    pub fn is_final(&self) -> bool {
        self.state != "RUNNING"
    }
}

/// Running totals of the session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Containers asked of the ResourceManager for workers.
    pub containers_requested: u64,
    /// Of those, asked by autoscaling scale-outs (usage at or over
    /// ScaleOutThreshold).
    pub scale_out_requested: u64,
    /// Of those, asked by autoscaling for a group with no worker
    /// (`mr3.auto.scale.out.num.initial.containers`): not scale-outs.
    #[serde(default)]
    pub initial_requested: u64,
    /// Worker requests withdrawn.
    pub requests_cancelled: u64,
    pub workers_started: u64,
    /// Workers stopped because scale-in emptied their node.
    pub scale_in_released: u64,
    /// Workers stopped for any reason.
    pub workers_stopped: u64,
    pub workers_lost: u64,
    pub workers_recycled: u64,
    /// Scale-outs triggered by usage (initial requests not included).
    pub scale_outs: u64,
    pub scale_ins: u64,
    pub attempts_started: u64,
    pub attempts_failed: u64,
    /// Attempts that could not fetch an upstream output (retried, not
    /// counted as failures).
    pub inputs_lost: u64,
}

/// An attempt on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AttemptRef {
    pub dag: u64,
    pub vertex: u32,
    pub task: u32,
    pub attempt: u32,
}

impl std::fmt::Display for AttemptRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        AttemptId::from(*self).fmt(f)
    }
}

/// One upstream output a task reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInput {
    /// The producer vertex's name (the directory under the input dir).
    pub vertex: String,
    /// The producer task's index.
    pub task: u32,
    /// Where the producer's worker serves the output.
    pub url: String,
}

/// A task attempt for a worker to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskAssignment {
    pub attempt: AttemptRef,
    pub dag_name: String,
    pub vertex: String,
    pub vertex_tasks: u32,
    /// Tasks of the first all-to-all consumer (0 for none): how many
    /// partitions a shuffle writer should produce.
    pub partitions: u32,
    pub command: String,
    pub inputs: Vec<TaskInput>,
    pub memory_mb: u64,
    pub vcores: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AmToWorker {
    Assign(Box<TaskAssignment>),
    /// Stop the attempt (its DAG is over); report it as killed.
    Kill {
        attempt: AttemptRef,
    },
    /// The DAG is over: its outputs may be deleted.
    DagDone {
        dag: u64,
    },
    /// The worker now serves another ContainerGroup: drop every output.
    Reinit {
        group: String,
    },
    /// Exit.
    Stop {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WireOutcome {
    Succeeded,
    Failed {
        reason: String,
    },
    Killed {
        reason: String,
    },
    /// An upstream output could not be fetched: not the task's fault; the
    /// AM learns separately whether the worker holding it is gone.
    InputLost {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerToAm {
    Finished {
        attempt: AttemptRef,
        #[serde(flatten)]
        outcome: WireOutcome,
    },
}
