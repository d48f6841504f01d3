//! What the scheduler core is told: the closed set of [`Input`]s.

use spindle_common::{ApplicationAttemptId, ContainerId, NodeId, Resource};

use crate::queue_config::{HeartbeatAssignment, LocalityDelay, QueueTreeConfig};

/// The resource name that matches every node (Hadoop's `ResourceRequest.ANY`).
pub const ANY: &str = "*";

/// One row of an application's resource request table, as an AM sends it
/// in an allocate call: "`num_containers` containers of `capability` at
/// `priority`, located at `resource_name`".
///
/// A row is identified by (priority, allocation request id, capability,
/// resource name) and its count is absolute: a new ask replaces the count
/// of its row, and 0 removes the row. Including the allocation request id
/// in the identity follows Hadoop 3, where it is part of the scheduler key;
/// with the default id (-1) the key is the seed protocol's
/// (priority, capability, resource name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceAsk {
    /// Lower numbers are served first (YARN request priorities).
    pub priority: i32,
    /// A host name, a rack name (e.g. `/default-rack`) or [`ANY`].
    pub resource_name: String,
    /// The size of each container; rounded up to the configured minimum
    /// allocation before it is stored.
    pub capability: Resource,
    /// Absolute count; 0 cancels the row. Negative counts are rejected.
    pub num_containers: i32,
    /// On a rack row: whether containers may go to other nodes of that
    /// rack than the hosts asked for. On the [`ANY`] row: whether
    /// containers may go off the racks asked for. Ignored on host rows,
    /// as in Hadoop.
    pub relax_locality: bool,
    /// Echoed in the allocations that satisfy this row; -1 when unused.
    pub allocation_request_id: i64,
}

impl ResourceAsk {
    /// An ask with locality relaxation on and no allocation request id.
    pub fn new(
        priority: i32,
        resource_name: impl Into<String>,
        capability: Resource,
        num_containers: i32,
    ) -> ResourceAsk {
        ResourceAsk {
            priority,
            resource_name: resource_name.into(),
            capability,
            num_containers,
            relax_locality: true,
            allocation_request_id: -1,
        }
    }

    /// The same ask with `relax_locality` set.
    pub fn relax(mut self, relax_locality: bool) -> ResourceAsk {
        self.relax_locality = relax_locality;
        self
    }

    /// The same ask with an allocation request id.
    pub fn with_allocation_request_id(mut self, id: i64) -> ResourceAsk {
        self.allocation_request_id = id;
        self
    }
}

/// Changes reported for a node. Every field is optional; an update with
/// none set is a plain heartbeat. Any update of a healthy, schedulable
/// node triggers a scheduling pass on that node (unless the node selection
/// policy places only in continuous passes, as packing does; see
/// [`crate::policy::NodeSelection::places_on_heartbeats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeUpdate {
    /// New total capability (e.g. after the NM was reconfigured). It may
    /// drop below what is in use; running containers keep running and
    /// nothing new is placed until usage is under the new capability.
    pub capability: Option<Resource>,
    /// An unhealthy node gets no new containers; its containers keep
    /// running. (Hadoop drops unhealthy nodes from the scheduler; an RM
    /// that wants that behaviour sends [`Input::NodeRemoved`] instead.)
    pub healthy: Option<bool>,
    /// `false` while a node is being decommissioned: no new containers.
    pub schedulable: Option<bool>,
}

impl NodeUpdate {
    /// A heartbeat that changes nothing.
    pub fn heartbeat() -> NodeUpdate {
        NodeUpdate::default()
    }
}

/// How a container ended, as reported to the core by the RM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerExit {
    /// The NodeManager reported that the container's process finished.
    Finished {
        exit_status: i32,
        diagnostics: String,
    },
    /// The RM gave up on an allocated container that was never launched
    /// (allocation expiry). Reported as ABORTED.
    Expired,
    /// The RM killed the container (e.g. on an administrator's request).
    /// Reported as KILLED_BY_RESOURCEMANAGER.
    KilledByResourceManager { diagnostics: String },
}

/// Everything that can change the scheduler's state. Every input comes
/// with the caller's clock (`now_ms`, see [`crate::Scheduler::handle`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A NodeManager registered. `rack` is the node's topology path
    /// (`/default-rack` when no topology is configured).
    NodeAdded {
        node: NodeId,
        rack: String,
        capability: Resource,
    },
    /// A heartbeat, possibly with changes; schedules on the node (see
    /// [`NodeUpdate`]).
    NodeUpdated { node: NodeId, update: NodeUpdate },
    /// The node is gone (lost, decommissioned, shut down). Its containers
    /// complete as ABORTED and are reported to their applications.
    NodeRemoved { node: NodeId },
    /// A new application attempt. `queue` names a leaf queue by full path
    /// (`root.a.b`) or by a unique short name; with the fair scheduler a
    /// missing leaf under an existing parent is created (the RM's
    /// placement rules decide whether that is allowed). `priority` is the
    /// application priority (higher is more important, as in YARN).
    /// Containers of the attempt are numbered from 1; the RM asks for the
    /// AM container first (priority 0, [`ANY`], one container) so it gets
    /// number 1, which counts against AM limits unless `unmanaged_am`.
    AppAdded {
        attempt: ApplicationAttemptId,
        queue: String,
        user: String,
        priority: i32,
        unmanaged_am: bool,
    },
    /// The attempt finished or failed. Its live containers complete as
    /// ABORTED and the NMs are told to kill them; its asks are dropped.
    AppRemoved { attempt: ApplicationAttemptId },
    /// An AM allocate call: request table updates, containers the AM gives
    /// back and blacklist changes (host or rack names). Validated as a
    /// whole: if any part is invalid nothing is applied.
    AsksUpdated {
        attempt: ApplicationAttemptId,
        asks: Vec<ResourceAsk>,
        releases: Vec<ContainerId>,
        blacklist_add: Vec<String>,
        blacklist_remove: Vec<String>,
    },
    /// A container ended. Reports for containers the core no longer knows
    /// (already released, node already removed) are ignored.
    ContainerCompleted {
        container: ContainerId,
        exit: ContainerExit,
    },
    /// A new queue configuration (`refreshQueues`), with the scheduler-wide
    /// settings that come from the same files and that Hadoop's
    /// `reinitialize` re-reads with it: the delay-scheduling rule (capacity
    /// `node-locality-delay` / `rack-locality-additional-delay`, fair
    /// `locality.threshold.*`) and the per-heartbeat caps (capacity
    /// `per-node-heartbeat.*`, fair `assignmultiple` / `max.assign`).
    /// Applied atomically: refused with
    /// [`crate::SchedulerError::InvalidQueues`] (the old tree and settings
    /// all stay) when the tree is malformed or drops a queue that holds
    /// applications, or a setting is out of range. Delay-scheduling counts
    /// already made are kept and judged by the new rule.
    QueuesReconfigured {
        queues: Box<QueueTreeConfig>,
        locality: LocalityDelay,
        heartbeat: HeartbeatAssignment,
    },
    /// The application's priority changed (`updateApplicationPriority`;
    /// the RM has already clamped it to the cluster maximum). The attempt
    /// moves to its new place in its leaf's order (fifo ordering: higher
    /// priority first, then submission order); its containers and asks
    /// are unchanged.
    AppPriorityUpdated {
        attempt: ApplicationAttemptId,
        priority: i32,
    },
    /// The application moved to another leaf queue
    /// (`moveApplicationAcrossQueues`; the RM has already checked that the
    /// move is allowed). `queue` names the leaf as in [`Input::AppAdded`].
    /// The attempt's usage (its AM container's as AM usage), its live
    /// containers and its pending asks go with it: the old leaf and its
    /// ancestors are discharged and the new ones charged, as Hadoop's
    /// `detachContainer`/`attachContainer`; running-application counts
    /// follow. Nothing is allocated or killed by the move itself.
    AppMoved {
        attempt: ApplicationAttemptId,
        queue: String,
    },
    /// An attempt that already ran under an earlier RM, taken back by a
    /// restarted RM (work-preserving recovery): as [`Input::AppAdded`],
    /// except that none of its new containers is its AM's (its AM container,
    /// if it has one, comes back with [`Input::ContainerRecovered`]).
    AppRecovered {
        attempt: ApplicationAttemptId,
        queue: String,
        user: String,
        priority: i32,
        unmanaged_am: bool,
    },
    /// A container of a recovered attempt that a re-registering node still
    /// runs: the node, the attempt, its queue and user hold `resource` again
    /// (even past the node's capability: nothing new is placed there until
    /// usage fits). `am` marks the attempt's AM container. Refused for an
    /// unknown node or attempt, a container already live, a container id
    /// from a later epoch than the core's, or an empty size. Its id keeps
    /// its epoch; ids the core hands out carry its own epoch, so they never
    /// collide.
    ContainerRecovered {
        container: ContainerId,
        node: NodeId,
        resource: Resource,
        priority: i32,
        am: bool,
    },
    /// No allocation before `until_ms` (Hadoop's
    /// `yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms`
    /// after a restart, so nodes can report what still runs before new
    /// containers are placed). Asks are still taken; heartbeats and passes
    /// place nothing until then. A later input may move it again.
    HoldAllocations { until_ms: u64 },
    /// Time passed. Only moves the core's clock: delay scheduling counts
    /// missed heartbeats, not milliseconds.
    Tick,
}

impl Input {
    /// A short name of the input kind, for logs and errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Input::NodeAdded { .. } => "NodeAdded",
            Input::NodeUpdated { .. } => "NodeUpdated",
            Input::NodeRemoved { .. } => "NodeRemoved",
            Input::AppAdded { .. } => "AppAdded",
            Input::AppRemoved { .. } => "AppRemoved",
            Input::AsksUpdated { .. } => "AsksUpdated",
            Input::ContainerCompleted { .. } => "ContainerCompleted",
            Input::QueuesReconfigured { .. } => "QueuesReconfigured",
            Input::AppPriorityUpdated { .. } => "AppPriorityUpdated",
            Input::AppMoved { .. } => "AppMoved",
            Input::AppRecovered { .. } => "AppRecovered",
            Input::ContainerRecovered { .. } => "ContainerRecovered",
            Input::HoldAllocations { .. } => "HoldAllocations",
            Input::Tick => "Tick",
        }
    }
}
