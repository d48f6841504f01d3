//! What the scheduler core decides: [`Decisions`].

use std::fmt;

use spindle_common::{ApplicationAttemptId, ContainerId, NodeId, Resource};

/// Hadoop's `ContainerExitStatus` values, as AMs see them in completed container
/// statuses.
pub use spindle_common::exit_status;

/// Where an allocation landed relative to what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Locality {
    /// On a host the application asked for.
    NodeLocal,
    /// On another node of a rack the application asked for.
    RackLocal,
    /// Anywhere else.
    OffSwitch,
}

impl Locality {
    pub fn name(self) -> &'static str {
        match self {
            Locality::NodeLocal => "node-local",
            Locality::RackLocal => "rack-local",
            Locality::OffSwitch => "off-switch",
        }
    }
}

impl fmt::Display for Locality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A new container for an application. The RM hands it to the AM on its
/// next allocate call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// Carries the attempt ([`Allocation::attempt`]) and the per-attempt
    /// sequence number (from 1) with the RM epoch in its high bits.
    pub container: ContainerId,
    pub node: NodeId,
    /// The normalized capability of the request row that was satisfied.
    pub resource: Resource,
    pub priority: i32,
    pub allocation_request_id: i64,
    pub locality: Locality,
    /// The `now_ms` of the call that made the allocation.
    pub allocated_at_ms: u64,
}

impl Allocation {
    /// The attempt the container belongs to.
    pub fn attempt(&self) -> ApplicationAttemptId {
        self.container.attempt
    }
}

/// Why a container completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CompletionCause {
    /// The NodeManager reported the process finished.
    Exited,
    /// The AM released it.
    ReleasedByApplication,
    /// Its node was removed.
    NodeLost,
    /// Its application attempt was removed.
    ApplicationFinished,
    /// Allocated but never launched in time.
    Expired,
    /// Killed by the RM.
    KilledByResourceManager,
}

impl CompletionCause {
    pub fn name(self) -> &'static str {
        match self {
            CompletionCause::Exited => "exited",
            CompletionCause::ReleasedByApplication => "released-by-application",
            CompletionCause::NodeLost => "node-lost",
            CompletionCause::ApplicationFinished => "application-finished",
            CompletionCause::Expired => "expired",
            CompletionCause::KilledByResourceManager => "killed-by-resourcemanager",
        }
    }
}

impl fmt::Display for CompletionCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A container that no longer holds resources, to report to its AM as a
/// completed container status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedContainer {
    pub container: ContainerId,
    pub node: NodeId,
    pub resource: Resource,
    /// A [`exit_status`] value, or the process's own exit code.
    pub exit_status: i32,
    pub cause: CompletionCause,
    pub diagnostics: String,
}

impl CompletedContainer {
    /// The attempt the container belonged to.
    pub fn attempt(&self) -> ApplicationAttemptId {
        self.container.attempt
    }
}

/// Something a NodeManager must be told on its next heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeAction {
    /// Stop the container if it runs (it was released, or its application
    /// ended); the scheduler has already taken its resources back.
    KillContainer {
        node: NodeId,
        container: ContainerId,
    },
}

/// The result of one input or scheduling pass, in the order things
/// happened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decisions {
    pub allocations: Vec<Allocation>,
    pub completed: Vec<CompletedContainer>,
    pub node_actions: Vec<NodeAction>,
}

impl Decisions {
    /// Nothing was decided.
    pub fn is_empty(&self) -> bool {
        self.allocations.is_empty() && self.completed.is_empty() && self.node_actions.is_empty()
    }

    /// Appends `other`'s decisions after these.
    pub fn extend(&mut self, other: Decisions) {
        self.allocations.extend(other.allocations);
        self.completed.extend(other.completed);
        self.node_actions.extend(other.node_actions);
    }
}
