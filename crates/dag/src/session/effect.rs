//! What a session decides: its effects, and the notices a driver logs.

use std::fmt;

use crate::autoscaler::ScaleOutCause;
use crate::{AttemptId, DagId, Resource, WorkerId};

/// One thing the driver must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEffect {
    /// The answer to a request ([`SubmitDag`](super::SessionInput::SubmitDag),
    /// [`KillDag`](super::SessionInput::KillDag),
    /// [`WorkerRegistered`](super::SessionInput::WorkerRegistered)).
    Reply(Reply),
    /// Ask the resource manager for one container of `resource` for
    /// `group`, at the group's request `priority`.
    RequestContainer {
        group: String,
        priority: i32,
        resource: Resource,
    },
    /// Withdraw one outstanding container request of `group`.
    CancelContainerRequest {
        group: String,
        priority: i32,
        resource: Resource,
    },
    /// Start a worker in this granted container.
    LaunchWorker {
        container: WorkerId,
        group: String,
        host: String,
        resource: Resource,
    },
    /// Give the container back to the resource manager.
    ReleaseContainer { container: WorkerId },
    /// Run this attempt on the worker.
    Assign {
        worker: WorkerId,
        assignment: Box<Assignment>,
    },
    /// Stop this attempt on the worker; it reports it killed.
    KillAttempt {
        worker: WorkerId,
        attempt: AttemptId,
    },
    /// The DAG is over: the worker may delete its outputs.
    DagDone { worker: WorkerId, dag: DagId },
    /// The worker now serves group `to` (it was in `from`, or the
    /// reserve): it drops every output it holds.
    MoveWorker {
        worker: WorkerId,
        from: Option<String>,
        to: String,
    },
    /// Tell the worker to exit (its container is released too).
    StopWorker { worker: WorkerId, reason: String },
    /// A DAG ended.
    DagEnded {
        dag: DagId,
        name: String,
        end: DagEnd,
    },
    /// Something worth a log line (or, to a simulator, a record).
    Notice(Notice),
}

/// The answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Submitted(DagId),
    Killed(DagId),
    Registered,
    Refused(String),
}

/// A task attempt for a worker to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub attempt: AttemptId,
    pub dag_name: String,
    pub vertex: String,
    pub vertex_tasks: u32,
    /// Tasks of the first all-to-all consumer (0 for none): how many
    /// partitions a shuffle writer should produce.
    pub partitions: u32,
    pub command: String,
    pub inputs: Vec<TaskInput>,
    pub resource: Resource,
}

/// One upstream output a task reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInput {
    /// The producer vertex's name and index in its DAG.
    pub vertex: String,
    pub vertex_index: u32,
    /// The producer task's index.
    pub task: u32,
    /// The address of the worker holding the output, as it registered;
    /// `None` when that worker is gone (the fetch fails and the attempt is
    /// retried, or the output is made again).
    pub from: Option<String>,
}

/// How a DAG ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DagEnd {
    Succeeded,
    Failed { reason: String },
    Killed { reason: String },
}

impl DagEnd {
    /// `SUCCEEDED`, `FAILED` or `KILLED`.
    pub fn state(&self) -> &'static str {
        match self {
            DagEnd::Succeeded => "SUCCEEDED",
            DagEnd::Failed { .. } => "FAILED",
            DagEnd::Killed { .. } => "KILLED",
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match self {
            DagEnd::Succeeded => None,
            DagEnd::Failed { reason } | DagEnd::Killed { reason } => Some(reason),
        }
    }
}

/// Why a worker drains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrainReason {
    /// The ContainerScheduler stops it gracefully to recycle it.
    Recycle,
    /// Scale-in released its node.
    ScaleIn,
}

/// Which core refused an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreName {
    TaskScheduler,
    ContainerScheduler,
    Autoscaler,
}

impl fmt::Display for CoreName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CoreName::TaskScheduler => "task scheduler",
            CoreName::ContainerScheduler => "container scheduler",
            CoreName::Autoscaler => "autoscaler",
        })
    }
}

/// What the session noticed: no action for the driver, but the AM logs
/// each (docs/dag.md quotes several of these lines) and a simulator
/// counts some.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    DagSubmitted {
        dag: DagId,
        name: String,
        client: String,
        group: String,
        queue: String,
    },
    /// A granted container's group is gone; it is released.
    ContainerForGoneGroup {
        container: WorkerId,
        priority: i32,
    },
    StartingWorker {
        container: WorkerId,
        host: String,
        group: String,
    },
    LaunchFailed {
        container: WorkerId,
        error: String,
    },
    /// Workers of the group failed to start too often: its active DAGs are
    /// killed with `reason`.
    StartsBlocked {
        group: String,
        reason: String,
    },
    WorkerRegistered {
        worker: WorkerId,
        host: String,
        address: String,
        group: String,
    },
    /// A worker asked for before a scale-in registered on a node it
    /// released: it is stopped at once.
    WorkerOnReleasedNode {
        worker: WorkerId,
        host: String,
        group: String,
    },
    /// A worker reported the end of an attempt it does not run.
    IgnoredAttemptEnd {
        worker: WorkerId,
        attempt: AttemptId,
    },
    AttemptFailed {
        worker: WorkerId,
        attempt: AttemptId,
        reason: String,
    },
    InputLost {
        worker: WorkerId,
        attempt: AttemptId,
        reason: String,
    },
    WorkerEndedBeforeRegistering {
        worker: WorkerId,
        why: String,
    },
    WorkerLost {
        worker: WorkerId,
        why: String,
    },
    /// A group's TaskScheduler status line (`mr3`'s periodic queue log).
    StatusLine {
        group: String,
        line: String,
    },
    AssignmentOfUnknownDag {
        attempt: AttemptId,
    },
    /// A group's last owner let it go: it leaves the session.
    GroupReleased {
        group: String,
    },
    /// A worker starts draining in its group.
    WorkerDraining {
        worker: WorkerId,
        group: String,
        reason: DrainReason,
    },
    WorkerDrained {
        worker: WorkerId,
        group: String,
        reason: DrainReason,
    },
    /// A worker left its group's TaskScheduler: attempts it still ran there
    /// are retried elsewhere, and their ends are no longer expected.
    WorkerLeftGroup {
        worker: WorkerId,
        group: String,
    },
    /// A worker recycled into an autoscaled group took the place of one of
    /// its autoscaler's requests, which is withdrawn.
    RecycledInPlaceOfRequest {
        worker: WorkerId,
        group: String,
    },
    /// The ContainerScheduler terminates a worker.
    TerminatingWorker {
        worker: WorkerId,
        reason: String,
    },
    ScaleOutSkipped {
        group: String,
        count: u32,
    },
    /// A cap on all workers cut an autoscaler's request from `count` to
    /// `fit`.
    RequestCut {
        group: String,
        count: u32,
        fit: u32,
        cap: &'static str,
    },
    /// An autoscaler asks for `count` workers.
    WorkersRequested {
        group: String,
        cause: ScaleOutCause,
        count: u32,
        usage_bp: Option<u64>,
    },
    /// Of an autoscaler's request, `recycled` workers came from recycling
    /// at once; `requested` containers are asked for.
    RecycledForRequests {
        group: String,
        recycled: u32,
        requested: u32,
    },
    /// A scale-out is over: `count` requests still waiting are withdrawn.
    ScaleOutOver {
        group: String,
        count: u32,
    },
    /// Scale-in releases these hosts; `workers` are the group's workers on
    /// them.
    NodesReleased {
        group: String,
        hosts: Vec<String>,
        wait_for_active_dags: bool,
        usage_bp: Option<u64>,
        workers: Vec<WorkerId>,
    },
    /// A cap on all workers starts holding back a group's demand.
    CapHoldsBack {
        group: String,
        wanted: u64,
        allowed: u64,
        cap: &'static str,
    },
    /// The caps no longer hold the group back.
    CapReleased {
        group: String,
    },
    /// A core input for a group that is gone (dropped).
    InputForGoneGroup {
        group: String,
        input: String,
    },
    /// A core refused an input: a bug in the session, or a driver breaking
    /// its contract.
    InputRefused {
        core: CoreName,
        group: Option<String>,
        error: String,
    },
}
