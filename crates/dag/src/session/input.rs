//! What can happen to a session: its inputs.

use crate::container_scheduler::GroupSpec;
use crate::dag::DagSpec;
use crate::{AttemptId, DagId, WorkerId};

/// One event the driver reports to the [`Session`](super::Session).
///
/// The AM turns its I/O into these (client requests, worker messages,
/// the resource manager's answers, its timer); a simulator turns its
/// simulated events into the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionInput {
    /// A client submits a DAG to `group` (the session's default group when
    /// `None`), in capacity queue `queue`. Answered by a
    /// [`Reply::Submitted`](super::Reply::Submitted) or
    /// [`Reply::Refused`](super::Reply::Refused).
    SubmitDag {
        client: String,
        spec: DagSpec,
        group: Option<GroupSpec>,
        queue: Option<String>,
    },
    /// A client kills a DAG. Answered by a
    /// [`Reply::Killed`](super::Reply::Killed) or a refusal.
    KillDag { dag: DagId, client: String },
    /// The resource manager granted a container on `host` for the request
    /// of `priority` (each group asks at its own priority, so the priority
    /// names the group).
    ContainerGranted {
        container: WorkerId,
        host: String,
        priority: i32,
    },
    /// The worker could not be started in its container (the node refused
    /// the launch).
    LaunchFailed { container: WorkerId, error: String },
    /// A worker started by this session connected; `address` is where it
    /// serves its tasks' outputs (opaque to the session, handed to the
    /// workers that read them). Answered by a
    /// [`Reply::Registered`](super::Reply::Registered) or a refusal (then
    /// the connection should be closed).
    WorkerRegistered { worker: WorkerId, address: String },
    /// A worker reports the end of an attempt it ran.
    AttemptFinished {
        worker: WorkerId,
        attempt: AttemptId,
        outcome: WorkerOutcome,
    },
    /// A worker's connection closed, or its container completed.
    WorkerGone { worker: WorkerId, why: String },
    /// Time passes: status lines, fair rebalancing, reserve timeouts,
    /// autoscaling.
    Tick,
    /// The session ends: every worker is told to stop and every container
    /// released.
    Stop { reason: String },
}

/// How an attempt ended, as its worker reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerOutcome {
    Succeeded,
    Failed {
        reason: String,
    },
    Killed {
        reason: String,
    },
    /// An upstream output could not be fetched: not the task's fault. The
    /// attempt is retried without counting as a failure; if the worker
    /// holding the output is gone, the task scheduler makes it again first.
    InputLost {
        reason: String,
    },
}
