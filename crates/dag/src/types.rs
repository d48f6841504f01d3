//! Small value types shared by the cores: resources, worker / DAG / attempt
//! ids and the error every core returns when its driver breaks a contract.

use std::fmt;

/// Memory and cores, as a task asks for them or a worker offers them.
///
/// Unsigned on purpose: nothing in this crate is ever negative, and every
/// subtraction is checked (a failed check is a bug, reported by the
/// invariant checks rather than wrapped around).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Resource {
    pub memory_mb: u64,
    pub vcores: u32,
}

impl Resource {
    /// No memory, no cores.
    pub const ZERO: Resource = Resource {
        memory_mb: 0,
        vcores: 0,
    };

    pub const fn new(memory_mb: u64, vcores: u32) -> Resource {
        Resource { memory_mb, vcores }
    }

    /// True when `self` fits in `other` in every dimension.
    pub fn fits_in(&self, other: &Resource) -> bool {
        self.memory_mb <= other.memory_mb && self.vcores <= other.vcores
    }

    /// Component-wise sum, saturating at the type's maximum.
    pub fn saturating_add(self, other: Resource) -> Resource {
        Resource {
            memory_mb: self.memory_mb.saturating_add(other.memory_mb),
            vcores: self.vcores.saturating_add(other.vcores),
        }
    }

    /// Component-wise difference, or `None` if any component would go
    /// below zero.
    pub fn checked_sub(self, other: Resource) -> Option<Resource> {
        Some(Resource {
            memory_mb: self.memory_mb.checked_sub(other.memory_mb)?,
            vcores: self.vcores.checked_sub(other.vcores)?,
        })
    }

    /// Component-wise difference, clamped at zero.
    pub fn saturating_sub(self, other: Resource) -> Resource {
        Resource {
            memory_mb: self.memory_mb.saturating_sub(other.memory_mb),
            vcores: self.vcores.saturating_sub(other.vcores),
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<memory:{}MB, vcores:{}>", self.memory_mb, self.vcores)
    }
}

/// A ContainerWorker, named by its driver (the AM uses the YARN container
/// id; the simulator makes up names). Ordered by name, which is the
/// deterministic tie-break wherever workers are otherwise equal.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkerId(pub String);

impl WorkerId {
    pub fn new(name: impl Into<String>) -> WorkerId {
        WorkerId(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A submitted DAG, numbered by its driver (unique within one AM).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DagId(pub u64);

impl fmt::Display for DagId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dag_{}", self.0)
    }
}

/// One task of one vertex of one DAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    pub dag: DagId,
    /// Index of the vertex in its DAG's declaration order.
    pub vertex: u32,
    /// Index of the task within its vertex, from 0.
    pub task: u32,
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task_{}_{:02}_{:06}", self.dag.0, self.vertex, self.task)
    }
}

/// One execution of a task. Attempt numbers start at 1 and grow with every
/// retry of the same task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttemptId {
    pub task: TaskId,
    pub attempt: u32,
}

impl fmt::Display for AttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "attempt_{}_{:02}_{:06}_{}",
            self.task.dag.0, self.task.vertex, self.task.task, self.attempt
        )
    }
}

/// Why a DAG was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DagError {
    #[error("DAG '{dag}': {what} name '{name}' is invalid: {reason}")]
    InvalidName {
        dag: String,
        what: &'static str,
        name: String,
        reason: String,
    },
    #[error("DAG '{dag}' has no vertices")]
    NoVertices { dag: String },
    #[error("DAG '{dag}': vertex '{vertex}' is declared twice")]
    DuplicateVertex { dag: String, vertex: String },
    #[error("DAG '{dag}': vertex '{vertex}' has 0 tasks; every vertex needs at least one")]
    NoTasks { dag: String, vertex: String },
    #[error("DAG '{dag}': vertex '{vertex}' asks for 0 MB per task; memory must be positive")]
    NoMemory { dag: String, vertex: String },
    #[error("DAG '{dag}': edge {from} -> {to} names unknown vertex '{unknown}'")]
    UnknownVertex {
        dag: String,
        from: String,
        to: String,
        unknown: String,
    },
    #[error("DAG '{dag}': edge {from} -> {to} is declared twice")]
    DuplicateEdge {
        dag: String,
        from: String,
        to: String,
    },
    #[error("DAG '{dag}' has a cycle: {}", cycle.join(" -> "))]
    Cycle { dag: String, cycle: Vec<String> },
    #[error(
        "DAG '{dag}': one-to-one edge {from} -> {to} joins vertices with different task \
         counts ({from_tasks} and {to_tasks}); one-to-one edges need equal counts"
    )]
    OneToOneMismatch {
        dag: String,
        from: String,
        to: String,
        from_tasks: u32,
        to_tasks: u32,
    },
    #[error("DAG '{dag}': {what} = {value} is over the limit of {limit}")]
    TooLarge {
        dag: String,
        what: &'static str,
        value: u64,
        limit: u64,
    },
}

/// A driver broke a core's contract: an unknown id, a duplicate, time going
/// backwards, an input over a named limit. The core's state is unchanged
/// when one of these is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    #[error("time went backwards: {now_ms} ms after {last_ms} ms")]
    TimeWentBackwards { now_ms: u64, last_ms: u64 },
    #[error("unknown {what} '{id}'")]
    Unknown { what: &'static str, id: String },
    #[error("{what} '{id}' already exists")]
    Duplicate { what: &'static str, id: String },
    #[error("limit {limit} = {value} reached: {detail}")]
    LimitReached {
        limit: &'static str,
        value: u64,
        detail: String,
    },
    #[error("invalid input: {0}")]
    Invalid(String),
    #[error("DAG rejected: {0}")]
    InvalidDag(#[from] DagError),
}

/// An internal consistency check failed: a bug in this crate, never a
/// driver error. Returned by every core's `check_invariants()`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invariant violated: {0}")]
pub struct InvariantViolation(pub String);

/// Checks that `now_ms` does not go backwards. Callers record the new time
/// only once the whole input has been accepted.
pub(crate) fn check_clock(last_ms: u64, now_ms: u64) -> Result<(), CoreError> {
    if now_ms < last_ms {
        return Err(CoreError::TimeWentBackwards { now_ms, last_ms });
    }
    Ok(())
}
