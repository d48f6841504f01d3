//! [`Scheduler`]: the state, the input handlers and the two scheduling
//! paths (on a node's heartbeat, and continuous passes).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use spindle_common::ids::CONTAINER_SEQUENCE_BITS;
use spindle_common::{ApplicationAttemptId, ContainerId, NodeId, Resource};

use crate::asks::{AskRow, AskTable, RequestKey, RowUpdate};
use crate::config::{ConfigError, SchedulerConfig};
use crate::error::SchedulerError;
use crate::input::{ContainerExit, Input, NodeUpdate, ResourceAsk, ANY};
use crate::output::{
    exit_status, Allocation, CompletedContainer, CompletionCause, Decisions, Locality, NodeAction,
};
use crate::policy::{
    node_selection, ordering_policy, AppView, NodeSelection, NodeView, OrderingPolicy, QueueView,
    SortKey,
};

/// Longest host, rack or blacklist name accepted from an AM.
pub const MAX_RESOURCE_NAME_BYTES: usize = 4096;

/// Largest per-attempt container sequence number (40 bits).
pub(crate) const MAX_CONTAINER_SEQUENCE: i64 = (1 << CONTAINER_SEQUENCE_BITS) - 1;

/// Position of an active application in the serving order.
pub(crate) type OrderEntry = (SortKey, SortKey, ApplicationAttemptId);

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
    pub queue: String,
    pub user: String,
    pub priority: i32,
    pub submission_seq: u64,
    pub asks: AskTable,
    pub blacklist: BTreeSet<String>,
    pub containers: BTreeSet<ContainerId>,
    pub used: Resource,
    /// Sequence number of the attempt's next container (from 1).
    pub next_sequence: i64,
    pub order_entry: Option<OrderEntry>,
}

impl AppState {
    fn blacklists(&self, host: &str, rack: &str) -> bool {
        !self.blacklist.is_empty()
            && (self.blacklist.contains(host) || self.blacklist.contains(rack))
    }
}

#[derive(Debug, Default)]
pub(crate) struct QueueState {
    pub used: Resource,
    pub apps: BTreeSet<ApplicationAttemptId>,
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
    pub(crate) ordering: Box<dyn OrderingPolicy>,
    pub(crate) selection: Box<dyn NodeSelection>,
    pub(crate) now_ms: u64,
    pub(crate) nodes: BTreeMap<NodeId, NodeState>,
    /// Nodes by host name (several NMs may share a host).
    pub(crate) hosts: BTreeMap<String, BTreeSet<NodeId>>,
    /// All nodes by rack.
    pub(crate) racks: BTreeMap<String, BTreeSet<NodeId>>,
    /// Nodes taking new containers, in selection order.
    pub(crate) index: BTreeSet<(SortKey, NodeId)>,
    /// The same, per rack.
    pub(crate) rack_index: BTreeMap<String, BTreeSet<(SortKey, NodeId)>>,
    pub(crate) apps: BTreeMap<ApplicationAttemptId, AppState>,
    pub(crate) queues: BTreeMap<String, QueueState>,
    /// Applications with outstanding asks, in serving order.
    pub(crate) order: BTreeSet<OrderEntry>,
    pub(crate) containers: BTreeMap<ContainerId, ContainerState>,
    pub(crate) next_submission_seq: u64,
    pub(crate) capacity: Resource,
    pub(crate) used: Resource,
    /// The node count the selection policy was last told of.
    pub(crate) told_schedulable: usize,
}

impl Scheduler {
    /// A scheduler with the policies the configuration names.
    pub fn new(config: SchedulerConfig) -> Result<Scheduler, ConfigError> {
        let ordering = ordering_policy(config.ordering_policy);
        let selection = node_selection(&config);
        Scheduler::with_policies(config, ordering, selection)
    }

    /// A scheduler with explicit policy objects (the configuration's policy
    /// names are then informational).
    pub fn with_policies(
        config: SchedulerConfig,
        ordering: Box<dyn OrderingPolicy>,
        selection: Box<dyn NodeSelection>,
    ) -> Result<Scheduler, ConfigError> {
        config.validate()?;
        let mut selection = selection;
        // No node is indexed yet, so there is nothing to re-key.
        let _ = selection.schedulable_nodes_changed(0);
        Ok(Scheduler {
            config,
            ordering,
            selection,
            now_ms: 0,
            nodes: BTreeMap::new(),
            hosts: BTreeMap::new(),
            racks: BTreeMap::new(),
            index: BTreeSet::new(),
            rack_index: BTreeMap::new(),
            apps: BTreeMap::new(),
            queues: BTreeMap::new(),
            order: BTreeSet::new(),
            containers: BTreeMap::new(),
            next_submission_seq: 0,
            capacity: Resource::ZERO,
            used: Resource::ZERO,
            told_schedulable: 0,
        })
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.config
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
            } => self.add_app(attempt, queue, user, priority),
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
            Input::Tick => Ok(Decisions::default()),
        }
    }

    /// A continuous-scheduling pass: offers resources to applications in
    /// serving order, placing each container on the best node the policy
    /// and the request's locality allow, until `max_containers` (capped by
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
        let mut cursor = None;
        'apps: while decisions.allocations.len() < max {
            let Some(entry) = self.next_in_order(cursor) else {
                break;
            };
            cursor = Some(entry);
            let attempt = entry.2;
            let keys = match self.apps.get(&attempt) {
                Some(app) => app.asks.active_keys(),
                None => continue,
            };
            for key in keys {
                while decisions.allocations.len() < max {
                    let Some((node, locality)) = self.pick_node(attempt, &key) else {
                        break;
                    };
                    let allocation = self.allocate(attempt, key, node, locality)?;
                    decisions.allocations.push(allocation);
                }
                if decisions.allocations.len() >= max {
                    break 'apps;
                }
            }
        }
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

    // ------------------------------------------------------------------
    // Nodes

    fn add_node(
        &mut self,
        node: NodeId,
        rack: String,
        capability: Resource,
    ) -> Result<Decisions, SchedulerError> {
        if self.nodes.contains_key(&node) {
            return Err(SchedulerError::NodeExists(node));
        }
        if rack.is_empty() || rack.len() > MAX_RESOURCE_NAME_BYTES {
            return Err(SchedulerError::InvalidNode {
                node,
                reason: format!("rack name must have 1 to {MAX_RESOURCE_NAME_BYTES} bytes"),
            });
        }
        if node.host.is_empty() || node.host == ANY {
            return Err(SchedulerError::InvalidNode {
                reason: format!("host name '{}' cannot be scheduled on", node.host),
                node,
            });
        }
        if capability.any_negative() {
            return Err(SchedulerError::InvalidNode {
                node,
                reason: format!("negative capability {capability}"),
            });
        }
        let max = self.config.limits.max_nodes;
        if self.nodes.len() >= max {
            return Err(SchedulerError::LimitExceeded {
                limit: "max_nodes",
                requested: self.nodes.len() + 1,
                max,
                context: format!("registering node {node}"),
            });
        }
        self.hosts
            .entry(node.host.clone())
            .or_default()
            .insert(node.clone());
        self.racks
            .entry(rack.clone())
            .or_default()
            .insert(node.clone());
        self.capacity += capability;
        self.nodes.insert(
            node.clone(),
            NodeState {
                rack,
                capability,
                used: Resource::ZERO,
                healthy: true,
                schedulable: true,
                containers: BTreeSet::new(),
                index_key: None,
                over_capacity: false,
            },
        );
        self.reindex_node(&node);
        Ok(Decisions::default())
    }

    fn update_node(&mut self, id: NodeId, update: NodeUpdate) -> Result<Decisions, SchedulerError> {
        let Some(node) = self.nodes.get_mut(&id) else {
            return Err(SchedulerError::UnknownNode(id));
        };
        if let Some(capability) = update.capability {
            if capability.any_negative() {
                return Err(SchedulerError::InvalidNode {
                    node: id,
                    reason: format!("negative capability {capability}"),
                });
            }
            self.capacity = self.capacity - node.capability + capability;
            node.capability = capability;
            node.over_capacity = !node.used.fits_in(&capability);
        }
        if let Some(healthy) = update.healthy {
            node.healthy = healthy;
        }
        if let Some(schedulable) = update.schedulable {
            node.schedulable = schedulable;
        }
        let takes = node.takes_containers();
        self.reindex_node(&id);
        let mut decisions = Decisions::default();
        if takes {
            decisions.allocations = self.schedule_on_node(&id)?;
        }
        Ok(decisions)
    }

    fn remove_node(&mut self, id: &NodeId) -> Result<Decisions, SchedulerError> {
        let Some(node) = self.nodes.get(id) else {
            return Err(SchedulerError::UnknownNode(id.clone()));
        };
        let lost: Vec<ContainerId> = node.containers.iter().copied().collect();
        let mut decisions = Decisions::default();
        for container in lost {
            if let Some(done) = self.finish_container(
                container,
                CompletionCause::NodeLost,
                exit_status::ABORTED,
                format!("node {id} was removed from the cluster; the container is lost"),
            ) {
                decisions.completed.push(done);
            }
        }
        self.unindex_node(id);
        self.sync_schedulable_count();
        if let Some(node) = self.nodes.remove(id) {
            self.capacity -= node.capability;
            remove_from_group(&mut self.hosts, &id.host, id);
            remove_from_group(&mut self.racks, &node.rack, id);
        }
        Ok(decisions)
    }

    /// Removes the node from the selection indexes. Callers that may
    /// change the number of indexed nodes follow up with
    /// [`Self::sync_schedulable_count`].
    fn unindex_node(&mut self, id: &NodeId) {
        let Some(node) = self.nodes.get_mut(id) else {
            return;
        };
        if let Some(old) = node.index_key.take() {
            self.index.remove(&(old, id.clone()));
            if let Some(set) = self.rack_index.get_mut(&node.rack) {
                set.remove(&(old, id.clone()));
                if set.is_empty() {
                    self.rack_index.remove(&node.rack);
                }
            }
        }
    }

    /// Puts the node back into the selection indexes under a fresh key, if
    /// it takes containers.
    fn reindex_node(&mut self, id: &NodeId) {
        self.unindex_node(id);
        self.index_node(id);
        self.sync_schedulable_count();
    }

    /// Tells the selection policy the number of nodes taking containers if
    /// it changed, and re-keys every indexed node when the policy asks.
    /// Costs nothing unless a node joined or left the index.
    fn sync_schedulable_count(&mut self) {
        let count = self.index.len();
        if count == self.told_schedulable {
            return;
        }
        self.told_schedulable = count;
        if !self.selection.schedulable_nodes_changed(count) {
            return;
        }
        let indexed: Vec<NodeId> = self.index.iter().map(|(_, id)| id.clone()).collect();
        for id in &indexed {
            self.unindex_node(id);
            self.index_node(id);
        }
    }

    /// Indexes a node that is not indexed, under a fresh key, if it takes
    /// containers.
    fn index_node(&mut self, id: &NodeId) {
        let Some(node) = self.nodes.get_mut(id) else {
            return;
        };
        if !node.takes_containers() {
            return;
        }
        let key = self.selection.node_key(&NodeView {
            id,
            rack: &node.rack,
            capability: node.capability,
            used: node.used,
        });
        node.index_key = Some(key);
        self.index.insert((key, id.clone()));
        self.rack_index
            .entry(node.rack.clone())
            .or_default()
            .insert((key, id.clone()));
    }

    // ------------------------------------------------------------------
    // Applications

    fn add_app(
        &mut self,
        attempt: ApplicationAttemptId,
        queue: String,
        user: String,
        priority: i32,
    ) -> Result<Decisions, SchedulerError> {
        if self.apps.contains_key(&attempt) {
            return Err(SchedulerError::AttemptExists(attempt));
        }
        if queue.is_empty() || user.is_empty() {
            return Err(SchedulerError::InvalidApp {
                attempt,
                reason: "queue and user must not be empty".into(),
            });
        }
        let max = self.config.limits.max_apps;
        if self.apps.len() >= max {
            return Err(SchedulerError::LimitExceeded {
                limit: "max_apps",
                requested: self.apps.len() + 1,
                max,
                context: format!("adding {attempt} to queue {queue}"),
            });
        }
        self.queues
            .entry(queue.clone())
            .or_default()
            .apps
            .insert(attempt);
        let submission_seq = self.next_submission_seq;
        self.next_submission_seq += 1;
        self.apps.insert(
            attempt,
            AppState {
                queue,
                user,
                priority,
                submission_seq,
                asks: AskTable::default(),
                blacklist: BTreeSet::new(),
                containers: BTreeSet::new(),
                used: Resource::ZERO,
                next_sequence: 1,
                order_entry: None,
            },
        );
        Ok(Decisions::default())
    }

    fn remove_app(&mut self, attempt: ApplicationAttemptId) -> Result<Decisions, SchedulerError> {
        let Some(app) = self.apps.get(&attempt) else {
            return Err(SchedulerError::UnknownAttempt(attempt));
        };
        let live: Vec<ContainerId> = app.containers.iter().copied().collect();
        let mut decisions = Decisions::default();
        for container in live {
            if let Some(done) = self.finish_container(
                container,
                CompletionCause::ApplicationFinished,
                exit_status::ABORTED,
                format!("application attempt {attempt} finished; the container is stopped"),
            ) {
                decisions.node_actions.push(NodeAction::KillContainer {
                    node: done.node.clone(),
                    container,
                });
                decisions.completed.push(done);
            }
        }
        if let Some(app) = self.apps.remove(&attempt) {
            if let Some(entry) = app.order_entry {
                self.order.remove(&entry);
            }
            if let Some(queue) = self.queues.get_mut(&app.queue) {
                queue.apps.remove(&attempt);
                if queue.apps.is_empty() {
                    self.queues.remove(&app.queue);
                } else if self.ordering.keys_depend_on_usage() {
                    self.refresh_queue_order(&app.queue);
                }
            }
        }
        Ok(decisions)
    }

    fn update_asks(
        &mut self,
        attempt: ApplicationAttemptId,
        asks: Vec<ResourceAsk>,
        releases: Vec<ContainerId>,
        blacklist_add: Vec<String>,
        blacklist_remove: Vec<String>,
    ) -> Result<Decisions, SchedulerError> {
        let Some(app) = self.apps.get(&attempt) else {
            return Err(SchedulerError::UnknownAttempt(attempt));
        };

        // Validate everything before changing anything.
        let mut updates = Vec::with_capacity(asks.len());
        for (index, ask) in asks.into_iter().enumerate() {
            let invalid = |reason: String| SchedulerError::InvalidAsk {
                attempt,
                index,
                reason,
            };
            if ask.resource_name.is_empty() || ask.resource_name.len() > MAX_RESOURCE_NAME_BYTES {
                return Err(invalid(format!(
                    "resource name must have 1 to {MAX_RESOURCE_NAME_BYTES} bytes"
                )));
            }
            let Ok(count) = u32::try_from(ask.num_containers) else {
                return Err(invalid(format!(
                    "negative number of containers {} at {}",
                    ask.num_containers, ask.resource_name
                )));
            };
            let capability = self.normalize(ask.capability).map_err(invalid)?;
            updates.push(RowUpdate {
                key: RequestKey::new(ask.priority, ask.allocation_request_id, capability),
                resource_name: ask.resource_name,
                row: AskRow {
                    count,
                    relax_locality: ask.relax_locality,
                },
            });
        }
        let rows = app.asks.rows_after(&updates);
        let max = self.config.limits.max_asks_per_app;
        if rows > max {
            return Err(SchedulerError::LimitExceeded {
                limit: "max_asks_per_app",
                requested: rows,
                max,
                context: format!("outstanding request rows of {attempt}"),
            });
        }
        for container in &releases {
            if container.attempt != attempt {
                return Err(SchedulerError::InvalidRelease {
                    attempt,
                    container: *container,
                });
            }
        }
        for name in blacklist_add.iter().chain(&blacklist_remove) {
            if name.is_empty() || name.len() > MAX_RESOURCE_NAME_BYTES || name == ANY {
                return Err(SchedulerError::InvalidBlacklist {
                    attempt,
                    reason: format!(
                        "'{name}' is not a host or rack name (1 to {MAX_RESOURCE_NAME_BYTES} bytes, not '*')"
                    ),
                });
            }
        }
        let mut blacklist = app.blacklist.clone();
        blacklist.extend(blacklist_add);
        for name in &blacklist_remove {
            blacklist.remove(name);
        }
        let max = self.config.limits.max_blacklist_per_app;
        if blacklist.len() > max {
            return Err(SchedulerError::LimitExceeded {
                limit: "max_blacklist_per_app",
                requested: blacklist.len(),
                max,
                context: format!("blacklist of {attempt}"),
            });
        }

        // Apply.
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.asks.apply(updates);
            app.blacklist = blacklist;
        }
        self.refresh_app_order(attempt);
        let mut decisions = Decisions::default();
        for container in releases {
            // Unknown ids (already completed, released twice) are ignored.
            if let Some(done) = self.finish_container(
                container,
                CompletionCause::ReleasedByApplication,
                exit_status::ABORTED,
                "released by the application master".to_string(),
            ) {
                decisions.node_actions.push(NodeAction::KillContainer {
                    node: done.node.clone(),
                    container,
                });
                decisions.completed.push(done);
            }
        }
        Ok(decisions)
    }

    fn container_completed(&mut self, container: ContainerId, exit: ContainerExit) -> Decisions {
        let (cause, status, diagnostics) = match exit {
            ContainerExit::Finished {
                exit_status,
                diagnostics,
            } => (CompletionCause::Exited, exit_status, diagnostics),
            ContainerExit::Expired => (
                CompletionCause::Expired,
                exit_status::ABORTED,
                "the container was allocated but not launched in time".to_string(),
            ),
            ContainerExit::KilledByResourceManager { diagnostics } => (
                CompletionCause::KilledByResourceManager,
                exit_status::KILLED_BY_RESOURCEMANAGER,
                diagnostics,
            ),
        };
        let mut decisions = Decisions::default();
        if let Some(done) = self.finish_container(container, cause, status, diagnostics) {
            decisions.completed.push(done);
        }
        decisions
    }

    /// Recomputes the application's place in the serving order: present
    /// with a fresh key while it has outstanding asks, absent otherwise.
    fn refresh_app_order(&mut self, attempt: ApplicationAttemptId) {
        let Some(app) = self.apps.get(&attempt) else {
            return;
        };
        let entry = if app.asks.is_active() {
            let queue_used = self.queues.get(&app.queue).map(|q| (q.used, q.apps.len()));
            let (used, apps) = queue_used.unwrap_or((Resource::ZERO, 0));
            let queue_key = self.ordering.queue_key(&QueueView {
                name: &app.queue,
                used,
                apps,
            });
            let app_key = self.ordering.app_key(&AppView {
                attempt,
                queue: &app.queue,
                user: &app.user,
                priority: app.priority,
                submission_seq: app.submission_seq,
                used: app.used,
                pending: app.asks.pending(),
            });
            Some((queue_key, app_key, attempt))
        } else {
            None
        };
        if app.order_entry == entry {
            return;
        }
        if let Some(old) = app.order_entry {
            self.order.remove(&old);
        }
        if let Some(new) = entry {
            self.order.insert(new);
        }
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.order_entry = entry;
        }
    }

    /// Re-keys every application of a queue (for usage-dependent policies).
    fn refresh_queue_order(&mut self, queue: &str) {
        let members: Vec<ApplicationAttemptId> = match self.queues.get(queue) {
            Some(q) => q.apps.iter().copied().collect(),
            None => return,
        };
        for attempt in members {
            self.refresh_app_order(attempt);
        }
    }

    fn usage_changed(&mut self, attempt: ApplicationAttemptId, queue: &str) {
        if self.ordering.keys_depend_on_usage() {
            self.refresh_queue_order(queue);
        } else {
            self.refresh_app_order(attempt);
        }
    }

    fn next_in_order(&self, after: Option<OrderEntry>) -> Option<OrderEntry> {
        match after {
            None => self.order.iter().next().copied(),
            Some(c) => self
                .order
                .range((Bound::Excluded(c), Bound::Unbounded))
                .next()
                .copied(),
        }
    }

    // ------------------------------------------------------------------
    // Containers

    /// Releases a live container's resources and reports it; `None` if the
    /// container is not live.
    fn finish_container(
        &mut self,
        id: ContainerId,
        cause: CompletionCause,
        exit_status: i32,
        diagnostics: String,
    ) -> Option<CompletedContainer> {
        let c = self.containers.remove(&id)?;
        if let Some(node) = self.nodes.get_mut(&c.node) {
            node.used -= c.resource;
            node.containers.remove(&id);
            if node.over_capacity && node.used.fits_in(&node.capability) {
                node.over_capacity = false;
            }
        }
        self.reindex_node(&c.node);
        self.used -= c.resource;
        let attempt = id.attempt;
        let mut queue_name = None;
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.used -= c.resource;
            app.containers.remove(&id);
            if let Some(queue) = self.queues.get_mut(&app.queue) {
                queue.used -= c.resource;
            }
            queue_name = Some(app.queue.clone());
        }
        if let Some(queue) = queue_name {
            self.usage_changed(attempt, &queue);
        }
        Some(CompletedContainer {
            container: id,
            node: c.node,
            resource: c.resource,
            exit_status,
            cause,
            diagnostics,
        })
    }

    /// Commits one container of `key` for `attempt` on `node`.
    fn allocate(
        &mut self,
        attempt: ApplicationAttemptId,
        key: RequestKey,
        node_id: NodeId,
        locality: Locality,
    ) -> Result<Allocation, SchedulerError> {
        let now_ms = self.now_ms;
        let epoch = self.config.epoch;
        let resource = key.capability();
        let Some(node) = self.nodes.get_mut(&node_id) else {
            return Err(SchedulerError::Internal(format!(
                "allocation on unknown node {node_id}"
            )));
        };
        let Some(app) = self.apps.get_mut(&attempt) else {
            return Err(SchedulerError::Internal(format!(
                "allocation for unknown attempt {attempt}"
            )));
        };
        if !resource.fits_in(&node.available()) {
            return Err(SchedulerError::Internal(format!(
                "{resource} does not fit on {node_id} ({} free)",
                node.available()
            )));
        }
        if app.next_sequence > MAX_CONTAINER_SEQUENCE {
            return Err(SchedulerError::Internal(format!(
                "{attempt} ran out of container sequence numbers"
            )));
        }
        app.asks
            .consume(&key, locality, &node_id.host, &node.rack)
            .map_err(SchedulerError::Internal)?;
        let container = ContainerId::with_epoch(attempt, epoch, app.next_sequence);
        app.next_sequence += 1;
        app.used += resource;
        app.containers.insert(container);
        let queue_name = app.queue.clone();
        node.used += resource;
        node.containers.insert(container);
        if let Some(queue) = self.queues.get_mut(&queue_name) {
            queue.used += resource;
        }
        self.used += resource;
        self.containers.insert(
            container,
            ContainerState {
                node: node_id.clone(),
                resource,
                priority: key.priority,
                allocation_request_id: key.allocation_request_id,
                locality,
                allocated_at_ms: now_ms,
            },
        );
        self.reindex_node(&node_id);
        self.usage_changed(attempt, &queue_name);
        Ok(Allocation {
            container,
            node: node_id,
            resource,
            priority: key.priority,
            allocation_request_id: key.allocation_request_id,
            locality,
            allocated_at_ms: now_ms,
        })
    }

    // ------------------------------------------------------------------
    // Scheduling

    /// Offers the node to applications in serving order (and each
    /// application's keys in priority order) until it is full, nothing
    /// more is wanted there, or the per-pass cap is reached.
    fn schedule_on_node(&mut self, node_id: &NodeId) -> Result<Vec<Allocation>, SchedulerError> {
        let max = self.config.limits.max_containers_per_pass;
        let minimum = self.config.minimum_allocation;
        let mut out = Vec::new();
        let mut cursor = None;
        'apps: while out.len() < max {
            let Some(entry) = self.next_in_order(cursor) else {
                break;
            };
            cursor = Some(entry);
            let attempt = entry.2;
            let keys = match self.apps.get(&attempt) {
                Some(app) => app.asks.active_keys(),
                None => continue,
            };
            for key in keys {
                loop {
                    if out.len() >= max {
                        break 'apps;
                    }
                    let (Some(node), Some(app)) =
                        (self.nodes.get(node_id), self.apps.get(&attempt))
                    else {
                        break 'apps;
                    };
                    let available = node.available();
                    if !minimum.fits_in(&available) {
                        // Nothing (every ask is at least the minimum) fits.
                        break 'apps;
                    }
                    if app.blacklists(&node_id.host, &node.rack)
                        || app.next_sequence > MAX_CONTAINER_SEQUENCE
                    {
                        continue 'apps;
                    }
                    let Some(locality) = app.asks.locality_on(&key, &node_id.host, &node.rack)
                    else {
                        break;
                    };
                    if !key.capability().fits_in(&available) {
                        break;
                    }
                    let allocation = self.allocate(attempt, key, node_id.clone(), locality)?;
                    out.push(allocation);
                }
            }
        }
        Ok(out)
    }

    /// Where the next container of `key` for `attempt` should go: the best
    /// node-local node, else the best rack-local node, else the first
    /// off-switch node, in selection order.
    fn pick_node(
        &self,
        attempt: ApplicationAttemptId,
        key: &RequestKey,
    ) -> Option<(NodeId, Locality)> {
        let app = self.apps.get(&attempt)?;
        if app.next_sequence > MAX_CONTAINER_SEQUENCE {
            return None;
        }
        let capability = key.capability();
        let usable = |id: &NodeId| -> Option<(SortKey, Locality)> {
            let node = self.nodes.get(id)?;
            let index_key = node.index_key?;
            if app.blacklists(&id.host, &node.rack) || !capability.fits_in(&node.available()) {
                return None;
            }
            let locality = app.asks.locality_on(key, &id.host, &node.rack)?;
            Some((index_key, locality))
        };

        // Each phase examines at most `max_candidates_per_pick` rows or
        // nodes; what it does not reach waits for a later pass or for a
        // heartbeat of the node (which checks its own locality directly).
        let per_phase = self.config.limits.max_candidates_per_pick;

        // Node-local: the hosts the application named.
        let mut budget = per_phase;
        let mut best: Option<(SortKey, &NodeId, Locality)> = None;
        'rows: for (name, _) in app.asks.located_rows(key) {
            if budget == 0 {
                break;
            }
            budget -= 1;
            let Some(ids) = self.hosts.get(name) else {
                continue;
            };
            for id in ids {
                if budget == 0 {
                    break 'rows;
                }
                budget -= 1;
                if let Some((k, locality)) = usable(id) {
                    if best.is_none_or(|(bk, bid, _)| (k, id) < (bk, bid)) {
                        best = Some((k, id, locality));
                    }
                }
            }
        }
        if let Some((_, id, locality)) = best {
            return Some((id.clone(), locality));
        }

        // Rack-local: the first suitable node of each rack that allows it.
        let mut budget = per_phase;
        for (name, row) in app.asks.located_rows(key) {
            if !row.relax_locality {
                continue;
            }
            let Some(set) = self.rack_index.get(name) else {
                continue;
            };
            for (k, id) in set {
                if budget == 0 || self.selection.nothing_fits_after(k, &capability) {
                    break;
                }
                budget -= 1;
                if let Some((k, locality)) = usable(id) {
                    if best.is_none_or(|(bk, bid, _)| (k, id) < (bk, bid)) {
                        best = Some((k, id, locality));
                    }
                    break;
                }
            }
        }
        if let Some((_, id, locality)) = best {
            return Some((id.clone(), locality));
        }

        // Off-switch.
        if !app.asks.get(key, ANY).is_some_and(|r| r.relax_locality) {
            return None;
        }
        let mut budget = per_phase;
        for (k, id) in &self.index {
            if budget == 0 || self.selection.nothing_fits_after(k, &capability) {
                break;
            }
            budget -= 1;
            if let Some((_, locality)) = usable(id) {
                return Some((id.clone(), locality));
            }
        }
        None
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

fn remove_from_group(groups: &mut BTreeMap<String, BTreeSet<NodeId>>, name: &str, id: &NodeId) {
    if let Some(set) = groups.get_mut(name) {
        set.remove(id);
        if set.is_empty() {
            groups.remove(name);
        }
    }
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
