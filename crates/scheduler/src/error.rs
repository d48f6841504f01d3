//! Why an input was refused.

use spindle_common::{ApplicationAttemptId, ContainerId, NodeId};

/// An input the scheduler refused. The state is unchanged (only the clock
/// may have moved forward).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    #[error("node {0} is already registered")]
    NodeExists(NodeId),
    #[error("node {0} is not registered")]
    UnknownNode(NodeId),
    #[error("invalid node {node}: {reason}")]
    InvalidNode { node: NodeId, reason: String },
    #[error("application attempt {0} is already known")]
    AttemptExists(ApplicationAttemptId),
    #[error("application attempt {0} is not known (never added, or already removed)")]
    UnknownAttempt(ApplicationAttemptId),
    #[error("invalid application attempt {attempt}: {reason}")]
    InvalidApp {
        attempt: ApplicationAttemptId,
        reason: String,
    },
    /// An application named a queue that is not a leaf of the tree (and
    /// could not be created).
    #[error("application attempt {attempt} cannot be added to queue {queue}: {reason}")]
    UnknownQueue {
        attempt: ApplicationAttemptId,
        queue: String,
        reason: String,
    },
    /// A new queue configuration was refused; the old one stays in force.
    #[error("queue configuration refused: {0}")]
    InvalidQueues(String),
    /// A resource request row was malformed or too large; `index` is its
    /// position in the update's ask list.
    #[error("invalid resource request #{index} from {attempt}: {reason}")]
    InvalidAsk {
        attempt: ApplicationAttemptId,
        index: usize,
        reason: String,
    },
    #[error("{attempt} cannot release {container}: it belongs to another application attempt")]
    InvalidRelease {
        attempt: ApplicationAttemptId,
        container: ContainerId,
    },
    #[error("invalid blacklist entry from {attempt}: {reason}")]
    InvalidBlacklist {
        attempt: ApplicationAttemptId,
        reason: String,
    },
    /// A named [`crate::Limits`] bound would be exceeded.
    #[error("limit {limit} exceeded: {requested} > {max} ({context})")]
    LimitExceeded {
        limit: &'static str,
        requested: usize,
        max: usize,
        context: String,
    },
    #[error("time went backwards: now_ms {now_ms} is before the previous call's {last_ms}")]
    ClockWentBackwards { now_ms: u64, last_ms: u64 },
    /// A bug in the core; the state may be inconsistent.
    #[error("internal scheduler error: {0}")]
    Internal(String),
}

/// A broken invariant found by [`crate::Scheduler::check_invariants`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scheduler invariant violated: {0}")]
pub struct InvariantViolation(pub String);
