//! [`Scheduler`]: the state the core keeps and its two entry points,
//! [`Scheduler::handle`] for inputs and [`Scheduler::schedule`] for
//! continuous passes.
//!
//! The state is split by concern into child modules, each an `impl
//! Scheduler` block over the fields defined here:
//!
//! * `nodes`: registering, updating and removing nodes, and the
//!   selection indexes they are kept in;
//! * `apps`: attempts in their leaf queues, running limits, the serving
//!   order, priority changes and replacing the queue tree;
//! * `requests`: an AM's ask, release and blacklist updates;
//! * `containers`: committing an allocation and finishing a container;
//! * `pass`: the scheduling passes themselves (on a heartbeat or
//!   continuous), the limits checked per container and node choice.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::ids::CONTAINER_SEQUENCE_BITS;
use spindle_common::{ApplicationAttemptId, ContainerId, HostName, NodeId, Resource};

use crate::asks::{AskTable, RequestKey};
use crate::config::{ConfigError, SchedulerConfig};
use crate::delay::DelayState;
use crate::error::SchedulerError;
use crate::input::Input;
use crate::output::{Decisions, Locality};
use crate::policy::{node_selection, NodeSelection, SortKey};
use crate::queue_config::{AppOrdering, QueueTreeConfig};
use crate::tree::{QueueIdx, QueueTree};

mod apps;
mod containers;
mod nodes;
mod pass;
mod requests;

/// Longest host, rack or blacklist name accepted from an AM.
pub const MAX_RESOURCE_NAME_BYTES: usize = 4096;

/// Largest per-attempt container sequence number (40 bits).
pub(crate) const MAX_CONTAINER_SEQUENCE: i64 = (1 << CONTAINER_SEQUENCE_BITS) - 1;

#[derive(Debug)]
pub(crate) struct NodeState {
    pub rack: String,
    pub capability: Resource,
    pub used: Resource,
    pub healthy: bool,
    pub schedulable: bool,
    pub containers: BTreeSet<ContainerId>,
    /// The key the node is indexed under while it takes new containers.
    pub index_key: Option<SortKey>,
    /// A capability update left usage above capability; cleared once
    /// usage fits again.
    pub over_capacity: bool,
}

impl NodeState {
    pub fn takes_containers(&self) -> bool {
        self.healthy && self.schedulable
    }

    pub fn available(&self) -> Resource {
        self.capability.saturating_sub_non_negative(self.used)
    }
}

#[derive(Debug)]
pub(crate) struct AppState {
    /// Full path of the leaf queue.
    pub queue: String,
    pub leaf: QueueIdx,
    pub user: String,
    pub priority: i32,
    pub submission_seq: u64,
    pub asks: AskTable,
    pub blacklist: BTreeSet<String>,
    pub containers: BTreeSet<ContainerId>,
    pub used: Resource,
    /// Sequence number of the attempt's next container (from 1).
    pub next_sequence: i64,
    /// The AM runs outside the cluster: no container is the AM's.
    pub unmanaged_am: bool,
    /// The attempt's AM container while it is live.
    pub am_container: Option<ContainerId>,
    /// The attempt's next container is its AM's: a managed attempt's first
    /// (not one recovered after an RM restart).
    pub am_pending: bool,
    /// Counted against running-application limits; an attempt that is not
    /// runnable waits, unscheduled.
    pub runnable: bool,
    /// Taken out of the serving order for the rest of a pass.
    pub parked: bool,
    /// The key the attempt is filed under in its leaf's serving set.
    pub active_key: Option<SortKey>,
    /// Counted among its user's active applications: runnable with
    /// outstanding asks, parked or not (Hadoop counts a user active while
    /// one of its applications has pending requests; parking is this
    /// scheduler's own bookkeeping within a pass and must not change the
    /// user limits of others).
    pub counted_active: bool,
    /// Delay-scheduling state per request key.
    pub delay: BTreeMap<RequestKey, DelayState>,
}

impl AppState {
    fn blacklists(&self, host: &str, rack: &str) -> bool {
        !self.blacklist.is_empty()
            && (self.blacklist.contains(host) || self.blacklist.contains(rack))
    }
}

#[derive(Debug, Clone)]
pub(crate) struct ContainerState {
    pub node: NodeId,
    pub resource: Resource,
    pub priority: i32,
    pub allocation_request_id: i64,
    pub locality: Locality,
    pub allocated_at_ms: u64,
}

/// The scheduler core. See the crate documentation for the model.
#[derive(Debug)]
pub struct Scheduler {
    pub(crate) config: SchedulerConfig,
    pub(crate) selection: Box<dyn NodeSelection>,
    pub(crate) now_ms: u64,
    pub(crate) nodes: BTreeMap<NodeId, NodeState>,
    /// Nodes by host name (several NMs may share a host).
    pub(crate) hosts: BTreeMap<HostName, BTreeSet<NodeId>>,
    /// All nodes by rack.
    pub(crate) racks: BTreeMap<String, BTreeSet<NodeId>>,
    /// Nodes taking new containers, in selection order.
    pub(crate) index: BTreeSet<(SortKey, NodeId)>,
    /// The same, per rack.
    pub(crate) rack_index: BTreeMap<String, BTreeSet<(SortKey, NodeId)>>,
    pub(crate) apps: BTreeMap<ApplicationAttemptId, AppState>,
    pub(crate) tree: QueueTree,
    /// Attempts over a running-application limit, in arrival order.
    pub(crate) waiting: BTreeSet<(u64, ApplicationAttemptId)>,
    /// Runnable attempts per user (for per-user running limits).
    pub(crate) running_by_user: BTreeMap<String, usize>,
    /// Runnable attempts with outstanding asks whose tables name a host or
    /// a rack: the only ones with delay-scheduling opportunities to count
    /// on a heartbeat that places nothing (packing).
    pub(crate) located_apps: BTreeSet<ApplicationAttemptId>,
    pub(crate) containers: BTreeMap<ContainerId, ContainerState>,
    pub(crate) next_submission_seq: u64,
    pub(crate) capacity: Resource,
    pub(crate) used: Resource,
    /// The node count the selection policy was last told of.
    pub(crate) told_schedulable: usize,
    /// Nothing is allocated before this time ([`Input::HoldAllocations`]).
    pub(crate) hold_until_ms: u64,
}

impl Scheduler {
    /// A scheduler with the policies the configuration names.
    pub fn new(config: SchedulerConfig) -> Result<Scheduler, ConfigError> {
        let selection = node_selection(&config);
        Scheduler::with_selection(config, selection)
    }

    /// A scheduler with an explicit node selection policy object (the
    /// configuration's selection name is then informational).
    pub fn with_selection(
        config: SchedulerConfig,
        selection: Box<dyn NodeSelection>,
    ) -> Result<Scheduler, ConfigError> {
        config.validate()?;
        let tree = QueueTree::build(config.queues.clone(), Resource::ZERO).map_err(|reason| {
            ConfigError::Invalid {
                key: "queues",
                value: config.queues.kind.name().to_string(),
                reason,
            }
        })?;
        let mut selection = selection;
        // No node is indexed yet, so there is nothing to re-key.
        let _ = selection.schedulable_nodes_changed(0);
        Ok(Scheduler {
            config,
            selection,
            now_ms: 0,
            nodes: BTreeMap::new(),
            hosts: BTreeMap::new(),
            racks: BTreeMap::new(),
            index: BTreeSet::new(),
            rack_index: BTreeMap::new(),
            apps: BTreeMap::new(),
            tree,
            waiting: BTreeSet::new(),
            running_by_user: BTreeMap::new(),
            located_apps: BTreeSet::new(),
            containers: BTreeMap::new(),
            next_submission_seq: 0,
            capacity: Resource::ZERO,
            used: Resource::ZERO,
            told_schedulable: 0,
            hold_until_ms: 0,
        })
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// The queue configuration in force (the last one accepted).
    pub fn queue_config(&self) -> &QueueTreeConfig {
        &self.tree.config
    }

    /// The latest `now_ms` the scheduler was called with.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Rounds `capability` up to a multiple of the minimum allocation (and
    /// at least the minimum), as every ask is before it is stored. Fails
    /// for negative values and for values above the maximum allocation.
    pub fn normalize(&self, capability: Resource) -> Result<Resource, String> {
        normalize(
            capability,
            self.config.minimum_allocation,
            self.config.maximum_allocation,
        )
    }

    /// Applies one input at time `now_ms` (milliseconds on any clock that
    /// never goes backwards). On error nothing changed except the clock.
    pub fn handle(&mut self, now_ms: u64, input: Input) -> Result<Decisions, SchedulerError> {
        self.advance_clock(now_ms)?;
        match input {
            Input::NodeAdded {
                node,
                rack,
                capability,
            } => self.add_node(node, rack, capability),
            Input::NodeUpdated { node, update } => self.update_node(node, update),
            Input::NodeRemoved { node } => self.remove_node(&node),
            Input::AppAdded {
                attempt,
                queue,
                user,
                priority,
                unmanaged_am,
            } => self.add_app(attempt, queue, user, priority, unmanaged_am, !unmanaged_am),
            Input::AppRecovered {
                attempt,
                queue,
                user,
                priority,
                unmanaged_am,
            } => self.add_app(attempt, queue, user, priority, unmanaged_am, false),
            Input::ContainerRecovered {
                container,
                node,
                resource,
                priority,
                am,
            } => self.recover_container(container, node, resource, priority, am),
            Input::HoldAllocations { until_ms } => {
                self.hold_until_ms = until_ms;
                Ok(Decisions::default())
            }
            Input::AppRemoved { attempt } => self.remove_app(attempt),
            Input::AsksUpdated {
                attempt,
                asks,
                releases,
                blacklist_add,
                blacklist_remove,
            } => self.update_asks(attempt, asks, releases, blacklist_add, blacklist_remove),
            Input::ContainerCompleted { container, exit } => {
                Ok(self.container_completed(container, exit))
            }
            Input::QueuesReconfigured {
                queues,
                locality,
                heartbeat,
            } => self.reconfigure(*queues, locality, heartbeat),
            Input::AppPriorityUpdated { attempt, priority } => {
                self.update_priority(attempt, priority)
            }
            Input::AppMoved { attempt, queue } => self.move_app(attempt, queue),
            Input::Tick => Ok(Decisions::default()),
        }
    }

    /// A continuous-scheduling pass: offers resources to applications in
    /// serving order, one container at a time, placing each on the best
    /// node the policy and the request's locality (and delay) allow, until
    /// `max_containers` (capped by
    /// [`crate::Limits::max_containers_per_pass`]) are allocated or nothing
    /// more can be placed.
    pub fn schedule(
        &mut self,
        now_ms: u64,
        max_containers: usize,
    ) -> Result<Decisions, SchedulerError> {
        self.advance_clock(now_ms)?;
        let max = max_containers.min(self.config.limits.max_containers_per_pass);
        let mut decisions = Decisions::default();
        if self.index.is_empty() {
            return Ok(decisions);
        }
        decisions.allocations = self.run_pass(None, max)?;
        Ok(decisions)
    }

    fn advance_clock(&mut self, now_ms: u64) -> Result<(), SchedulerError> {
        if now_ms < self.now_ms {
            return Err(SchedulerError::ClockWentBackwards {
                now_ms,
                last_ms: self.now_ms,
            });
        }
        self.now_ms = now_ms;
        Ok(())
    }

    /// Brings queue entitlements up to date with the cluster's resources.
    fn sync_cluster(&mut self) {
        if self.tree.cluster == self.capacity {
            return;
        }
        self.tree.cluster = self.capacity;
        self.tree.recompute_entitlements();
        // Dominant shares are relative to the cluster: re-key those apps.
        let drf: Vec<ApplicationAttemptId> = self
            .apps
            .iter()
            .filter(|(_, a)| self.tree.queues[a.leaf].settings.ordering == AppOrdering::Drf)
            .map(|(id, _)| *id)
            .collect();
        for attempt in drf {
            self.refresh_app(attempt);
        }
        self.tree.refresh_all();
    }
}

/// See [`Scheduler::normalize`].
pub(crate) fn normalize(r: Resource, min: Resource, max: Resource) -> Result<Resource, String> {
    if r.any_negative() {
        return Err(format!("negative capability {r}"));
    }
    if !r.fits_in(&max) {
        return Err(format!(
            "capability {r} is larger than the maximum allocation {max}"
        ));
    }
    let round = |v: i64, step: i64, cap: i64| -> i64 {
        let v = v.max(step);
        let rounded = v
            .div_euclid(step)
            .saturating_add(i64::from(v % step != 0))
            .saturating_mul(step);
        rounded.min(cap)
    };
    Ok(Resource::new(
        round(r.memory_mb, min.memory_mb, max.memory_mb),
        i32::try_from(round(
            i64::from(r.vcores),
            i64::from(min.vcores),
            i64::from(max.vcores),
        ))
        .unwrap_or(max.vcores),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization() {
        let min = Resource::new(1024, 1);
        let max = Resource::new(8192, 4);
        let n = |m, v| normalize(Resource::new(m, v), min, max);
        assert_eq!(n(0, 0), Ok(Resource::new(1024, 1)));
        assert_eq!(n(1000, 1), Ok(Resource::new(1024, 1)));
        assert_eq!(n(1025, 2), Ok(Resource::new(2048, 2)));
        assert_eq!(n(8192, 4), Ok(Resource::new(8192, 4)));
        assert!(n(8193, 1).is_err());
        assert!(n(1024, 5).is_err());
        assert!(n(-1, 1).is_err());
        // A maximum that is not a multiple of the minimum caps rounding.
        let odd = normalize(Resource::new(2900, 1), min, Resource::new(3000, 4));
        assert_eq!(odd, Ok(Resource::new(3000, 1)));
    }
}
