//! [`Scheduler`]: the state, the input handlers and the two scheduling
//! paths (on a node's heartbeat, and continuous passes).

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::ids::CONTAINER_SEQUENCE_BITS;
use spindle_common::{ApplicationAttemptId, ContainerId, NodeId, Resource};

use crate::asks::{AskRow, AskTable, RequestKey, RowUpdate};
use crate::config::{validate_heartbeat, validate_locality, ConfigError, SchedulerConfig};
use crate::delay::{self, DelayContext, DelayState};
use crate::error::SchedulerError;
use crate::input::{ContainerExit, Input, NodeUpdate, ResourceAsk, ANY};
use crate::output::{
    exit_status, Allocation, CompletedContainer, CompletionCause, Decisions, Locality, NodeAction,
};
use crate::policy::{node_selection, NodeSelection, NodeView, SortKey};
use crate::queue_config::{
    AppOrdering, HeartbeatAssignment, LocalityDelay, QueueTreeConfig, SchedulerKind,
};
use crate::tree::{QueueIdx, QueueTree};

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
    /// Counted against running-application limits; an attempt that is not
    /// runnable waits, unscheduled.
    pub runnable: bool,
    /// Taken out of the serving order for the rest of a pass.
    pub parked: bool,
    /// The key the attempt is filed under in its leaf's serving set.
    pub active_key: Option<SortKey>,
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

/// What a scheduling pass took out of the serving order, to put back when
/// it ends.
#[derive(Debug, Default)]
struct Parked {
    apps: Vec<ApplicationAttemptId>,
    queues: Vec<QueueIdx>,
}

/// The scheduler core. See the crate documentation for the model.
#[derive(Debug)]
pub struct Scheduler {
    pub(crate) config: SchedulerConfig,
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
            } => self.add_app(attempt, queue, user, priority, unmanaged_am),
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
        self.sync_cluster();
        Ok(Decisions::default())
    }

    fn update_node(&mut self, id: NodeId, update: NodeUpdate) -> Result<Decisions, SchedulerError> {
        let Some(node) = self.nodes.get_mut(&id) else {
            return Err(SchedulerError::UnknownNode(id));
        };
        let before = (node.capability, node.takes_containers());
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
        // A plain heartbeat keeps the node's key (and so its place among
        // empty nodes under packing, drawn when it became empty).
        if (node.capability, takes) != before {
            self.reindex_node(&id);
            self.sync_cluster();
        }
        let mut decisions = Decisions::default();
        if takes {
            if self.selection.places_on_heartbeats() {
                decisions.allocations = self.schedule_on_node(&id)?;
            } else {
                self.count_opportunities(&id);
            }
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
        self.sync_cluster();
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

    /// The leaf a queue name refers to: a full path, or a leaf's short name
    /// when it is unique. In the fair scheduler, a missing leaf under an
    /// existing parent is created.
    fn resolve_leaf(&mut self, queue: &str) -> Result<QueueIdx, String> {
        match self.tree.find(queue, true) {
            Ok(idx) if self.tree.queues[idx].is_leaf() => Ok(idx),
            Ok(_) => Err(format!(
                "{queue} is a parent queue; applications go to leaf queues"
            )),
            Err(true) => Err(format!(
                "the short name {queue} is ambiguous; use the full path"
            )),
            Err(false) if self.tree.kind() == SchedulerKind::Fair && queue.starts_with("root.") => {
                self.tree.create_leaf(queue)
            }
            Err(false) => Err("no such leaf queue".to_string()),
        }
    }

    fn add_app(
        &mut self,
        attempt: ApplicationAttemptId,
        queue: String,
        user: String,
        priority: i32,
        unmanaged_am: bool,
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
        let leaf = self
            .resolve_leaf(&queue)
            .map_err(|reason| SchedulerError::UnknownQueue {
                attempt,
                queue: queue.clone(),
                reason,
            })?;
        let path = self.tree.queues[leaf].path.clone();
        let submission_seq = self.next_submission_seq;
        self.next_submission_seq += 1;
        let q = &mut self.tree.queues[leaf];
        q.apps.insert(attempt);
        q.users.entry(user.clone()).or_default().apps += 1;
        self.apps.insert(
            attempt,
            AppState {
                queue: path,
                leaf,
                user,
                priority,
                submission_seq,
                asks: AskTable::default(),
                blacklist: BTreeSet::new(),
                containers: BTreeSet::new(),
                used: Resource::ZERO,
                next_sequence: 1,
                unmanaged_am,
                am_container: None,
                runnable: false,
                parked: false,
                active_key: None,
                delay: BTreeMap::new(),
            },
        );
        if self.may_run(attempt) {
            self.set_runnable(attempt);
        } else {
            self.waiting.insert((submission_seq, attempt));
        }
        Ok(Decisions::default())
    }

    /// Whether the attempt fits its queues' and its user's running limits.
    fn may_run(&self, attempt: ApplicationAttemptId) -> bool {
        let Some(app) = self.apps.get(&attempt) else {
            return false;
        };
        if !self.tree.may_run(app.leaf) {
            return false;
        }
        match self.tree.user_max_running(&app.user) {
            None => true,
            Some(max) => self.running_by_user.get(&app.user).copied().unwrap_or(0) < max,
        }
    }

    fn set_runnable(&mut self, attempt: ApplicationAttemptId) {
        let Some(app) = self.apps.get_mut(&attempt) else {
            return;
        };
        if app.runnable {
            return;
        }
        app.runnable = true;
        let leaf = app.leaf;
        *self.running_by_user.entry(app.user.clone()).or_default() += 1;
        self.tree.count_running(leaf, true);
        self.refresh_app(attempt);
    }

    /// Makes waiting attempts runnable, oldest first, while limits allow.
    fn promote_waiting(&mut self) {
        if self.waiting.is_empty() {
            return;
        }
        let candidates: Vec<(u64, ApplicationAttemptId)> = self.waiting.iter().copied().collect();
        for entry in candidates {
            if self.may_run(entry.1) {
                self.waiting.remove(&entry);
                self.set_runnable(entry.1);
            }
        }
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
        // Leave the serving order, then the queue.
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.asks = AskTable::default();
            app.parked = false;
        }
        self.refresh_app(attempt);
        if let Some(app) = self.apps.remove(&attempt) {
            self.waiting.remove(&(app.submission_seq, attempt));
            if app.runnable {
                self.tree.count_running(app.leaf, false);
                if let Some(n) = self.running_by_user.get_mut(&app.user) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        self.running_by_user.remove(&app.user);
                    }
                }
            }
            let q = &mut self.tree.queues[app.leaf];
            q.apps.remove(&attempt);
            if let Some(u) = q.users.get_mut(&app.user) {
                u.apps = u.apps.saturating_sub(1);
                if u.apps == 0 {
                    q.users.remove(&app.user);
                }
            }
            self.tree.refresh_path(app.leaf);
            if app.runnable {
                self.promote_waiting();
            }
        }
        Ok(decisions)
    }

    /// Replaces the queue tree, the delay-scheduling rule and the
    /// per-heartbeat caps, all or nothing. Every attempt must find its leaf
    /// again (by full path; leaves created on demand are created again)
    /// and the settings must be valid; otherwise the new configuration is
    /// refused and the old one stays.
    fn reconfigure(
        &mut self,
        queues: QueueTreeConfig,
        locality: LocalityDelay,
        heartbeat: HeartbeatAssignment,
    ) -> Result<Decisions, SchedulerError> {
        validate_locality(&locality)
            .and_then(|()| validate_heartbeat(&heartbeat))
            .map_err(|e| SchedulerError::InvalidQueues(e.to_string()))?;
        let mut tree = QueueTree::build(queues.clone(), self.capacity)
            .map_err(SchedulerError::InvalidQueues)?;
        let mut leaves: BTreeMap<ApplicationAttemptId, QueueIdx> = BTreeMap::new();
        for (attempt, app) in &self.apps {
            let leaf = match tree.by_path.get(&app.queue) {
                Some(&idx) if tree.queues[idx].is_leaf() => idx,
                Some(_) => {
                    return Err(SchedulerError::InvalidQueues(format!(
                        "queue {} holds applications ({attempt}) and cannot become a parent queue",
                        app.queue
                    )))
                }
                None if self.tree.queues[app.leaf].dynamic => tree
                    .create_leaf(&app.queue)
                    .map_err(SchedulerError::InvalidQueues)?,
                None => {
                    return Err(SchedulerError::InvalidQueues(format!(
                        "queue {} holds applications ({attempt}) and is missing from the new configuration",
                        app.queue
                    )))
                }
            };
            leaves.insert(*attempt, leaf);
        }
        // Accepted: move every attempt over, then rebuild the orders.
        for (attempt, app) in self.apps.iter_mut() {
            let leaf = leaves[attempt];
            app.leaf = leaf;
            app.active_key = None;
            app.parked = false;
            let am = app
                .am_container
                .and_then(|c| self.containers.get(&c))
                .map_or(Resource::ZERO, |c| c.resource);
            let q = &mut tree.queues[leaf];
            q.apps.insert(*attempt);
            q.users.entry(app.user.clone()).or_default().apps += 1;
            tree.charge(leaf, &app.user, app.used, true, false);
            tree.queues[leaf].am_used += am;
            if app.runnable {
                tree.count_running(leaf, true);
            }
        }
        self.tree = tree;
        self.config.queues = queues;
        self.config.locality = locality;
        self.config.heartbeat = heartbeat;
        let attempts: Vec<ApplicationAttemptId> = self.apps.keys().copied().collect();
        for attempt in attempts {
            self.refresh_app(attempt);
        }
        self.tree.refresh_all();
        self.promote_waiting();
        Ok(Decisions::default())
    }

    /// Gives the attempt a new application priority and re-files it in its
    /// leaf's serving order.
    fn update_priority(
        &mut self,
        attempt: ApplicationAttemptId,
        priority: i32,
    ) -> Result<Decisions, SchedulerError> {
        let Some(app) = self.apps.get_mut(&attempt) else {
            return Err(SchedulerError::UnknownAttempt(attempt));
        };
        app.priority = priority;
        self.refresh_app(attempt);
        Ok(Decisions::default())
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
            let asks = &app.asks;
            app.delay.retain(|key, _| asks.any_count(key) > 0);
        }
        self.refresh_app(attempt);
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

    /// Files the attempt in its leaf's serving set under a fresh key while
    /// it is runnable, not parked and has outstanding asks, and takes it
    /// out otherwise; then re-files the queues above it.
    fn refresh_app(&mut self, attempt: ApplicationAttemptId) {
        let Some(app) = self.apps.get(&attempt) else {
            return;
        };
        let leaf = app.leaf;
        if app.runnable && app.asks.is_active() && app.asks.located_rows_count() > 0 {
            self.located_apps.insert(attempt);
        } else {
            self.located_apps.remove(&attempt);
        }
        let want = (app.runnable && !app.parked && app.asks.is_active()).then(|| {
            self.tree
                .app_key(leaf, app.priority, app.submission_seq, app.used)
        });
        let have = app.active_key;
        if want == have {
            if self.tree.queue_keys_follow_usage() {
                self.tree.refresh_path(leaf);
            }
            return;
        }
        let user = app.user.clone();
        let q = &mut self.tree.queues[leaf];
        if let Some(old) = have {
            q.active_apps.remove(&(old, attempt));
        }
        if let Some(new) = want {
            q.active_apps.insert((new, attempt));
        }
        if have.is_some() != want.is_some() {
            let u = q.users.entry(user).or_default();
            let before = u.active_apps > 0;
            if want.is_some() {
                u.active_apps += 1;
            } else {
                u.active_apps = u.active_apps.saturating_sub(1);
            }
            let after = u.active_apps > 0;
            match (before, after) {
                (false, true) => q.active_users += 1,
                (true, false) => q.active_users = q.active_users.saturating_sub(1),
                _ => {}
            }
        }
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.active_key = want;
        }
        self.tree.refresh_path(leaf);
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
        if let Some(app) = self.apps.get_mut(&attempt) {
            app.used -= c.resource;
            app.containers.remove(&id);
            let am = app.am_container == Some(id);
            if am {
                app.am_container = None;
            }
            let (leaf, user) = (app.leaf, app.user.clone());
            self.tree.charge(leaf, &user, c.resource, false, am);
            self.refresh_app(attempt);
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
        if app.asks.any_count(&key) == 0 {
            app.delay.remove(&key);
        } else if let Some(state) = app.delay.get_mut(&key) {
            delay::allocated(&self.config.locality, state, locality);
        }
        let container = ContainerId::with_epoch(attempt, epoch, app.next_sequence);
        let am = !app.unmanaged_am && app.next_sequence == 1;
        if am {
            app.am_container = Some(container);
        }
        app.next_sequence += 1;
        app.used += resource;
        app.containers.insert(container);
        let (leaf, user) = (app.leaf, app.user.clone());
        node.used += resource;
        node.containers.insert(container);
        self.tree.charge(leaf, &user, resource, true, am);
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
        self.refresh_app(attempt);
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

    /// Offers the node to applications in serving order (each container
    /// re-consulting the order) until it is full, nothing more is wanted
    /// there, or a per-heartbeat cap is reached.
    fn schedule_on_node(&mut self, node_id: &NodeId) -> Result<Vec<Allocation>, SchedulerError> {
        let max = self
            .config
            .heartbeat
            .max_containers
            .unwrap_or(usize::MAX)
            .min(self.config.limits.max_containers_per_pass);
        self.run_pass(Some(node_id), max)
    }

    /// One scheduling pass, on one node (a heartbeat) or anywhere
    /// (continuous). Each round asks the queue tree for the application to
    /// serve next and gives it at most one container; an application (or
    /// queue) that can take nothing more in this pass is parked, out of the
    /// order, and put back when the pass ends, so every round costs
    /// O(depth × log n).
    fn run_pass(
        &mut self,
        node: Option<&NodeId>,
        max: usize,
    ) -> Result<Vec<Allocation>, SchedulerError> {
        let mut parked = Parked::default();
        let result = self.run_rounds(node, max, &mut parked);
        for attempt in parked.apps {
            if let Some(app) = self.apps.get_mut(&attempt) {
                app.parked = false;
            }
            self.refresh_app(attempt);
        }
        for idx in parked.queues {
            if let Some(q) = self.tree.queues.get_mut(idx) {
                q.parked = false;
            }
            self.tree.refresh_path(idx);
        }
        result
    }

    fn run_rounds(
        &mut self,
        node: Option<&NodeId>,
        max: usize,
        parked: &mut Parked,
    ) -> Result<Vec<Allocation>, SchedulerError> {
        let minimum = self.config.minimum_allocation;
        let max_off_switch = match node {
            Some(_) => self.config.heartbeat.max_off_switch.unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        let mut out = Vec::new();
        let mut off_switch = 0;
        while out.len() < max {
            if let Some(id) = node {
                let Some(n) = self.nodes.get(id) else {
                    break;
                };
                if !n.takes_containers() || !minimum.fits_in(&n.available()) {
                    break;
                }
            }
            let Some((leaf, attempt)) = self.tree.first_candidate() else {
                break;
            };
            match self.serve_one(attempt, leaf, node)? {
                Some(allocation) => {
                    if allocation.locality == Locality::OffSwitch {
                        off_switch += 1;
                    }
                    out.push(allocation);
                    if off_switch >= max_off_switch {
                        break;
                    }
                }
                None => {
                    if let Some(blocked) = self.tree.over_maximum(leaf, minimum) {
                        // Nothing fits under this queue's maximum any more.
                        self.tree.queues[blocked].parked = true;
                        self.tree.refresh_path(blocked);
                        parked.queues.push(blocked);
                    }
                    if let Some(app) = self.apps.get_mut(&attempt) {
                        app.parked = true;
                    }
                    self.refresh_app(attempt);
                    parked.apps.push(attempt);
                }
            }
        }
        Ok(out)
    }

    /// Tries to give `attempt` one container: its request keys in priority
    /// order, each checked against queue, user and AM limits and delay
    /// scheduling, placed on `node` (a heartbeat) or the best node
    /// (continuous). On a heartbeat every key that fits the node and may go
    /// there at some locality counts a scheduling opportunity before the
    /// decision (see the `delay` module).
    fn serve_one(
        &mut self,
        attempt: ApplicationAttemptId,
        leaf: QueueIdx,
        node: Option<&NodeId>,
    ) -> Result<Option<Allocation>, SchedulerError> {
        let Some(app) = self.apps.get(&attempt) else {
            return Ok(None);
        };
        if app.next_sequence > MAX_CONTAINER_SEQUENCE {
            return Ok(None);
        }
        let here = match node {
            Some(id) => {
                let Some(n) = self.nodes.get(id) else {
                    return Ok(None);
                };
                if app.blacklists(&id.host, &n.rack) {
                    return Ok(None);
                }
                Some((id, n))
            }
            None => None,
        };
        let rule = self.config.locality;
        let nodes = self.nodes.len();
        let mut counted: Vec<(RequestKey, DelayState)> = Vec::new();
        let mut choice = None;
        for key in app.asks.active_keys() {
            let ask = key.capability();
            let am = !app.unmanaged_am && app.next_sequence == 1;
            if !limits_allow(
                &self.tree,
                self.config.minimum_allocation,
                &app.user,
                am,
                leaf,
                ask,
            ) {
                continue;
            }
            let ctx = DelayContext {
                nodes,
                outstanding: app.asks.any_count(&key),
                locations: app.asks.rows_for(&key),
            };
            let mut state = app.delay.get(&key).copied().unwrap_or_default();
            match here {
                Some((id, n)) => {
                    if !ask.fits_in(&n.available()) {
                        continue;
                    }
                    let Some(locality) = app.asks.locality_on(&key, &id.host, &n.rack) else {
                        continue;
                    };
                    if ctx.waits(&rule) {
                        delay::offered(&rule, &mut state, nodes);
                        counted.push((key, state));
                    }
                    if locality > delay::allowed(&rule, &state, ctx) {
                        continue;
                    }
                    choice = Some((key, id.clone(), locality));
                    break;
                }
                None => {
                    let allowed = delay::allowed(&rule, &state, ctx);
                    if let Some((id, locality)) = self.pick_node(attempt, &key, allowed) {
                        choice = Some((key, id, locality));
                        break;
                    }
                }
            }
        }
        if !counted.is_empty() {
            if let Some(app) = self.apps.get_mut(&attempt) {
                for (key, state) in counted {
                    app.delay.insert(key, state);
                }
            }
        }
        match choice {
            Some((key, id, locality)) => Ok(Some(self.allocate(attempt, key, id, locality)?)),
            None => Ok(None),
        }
    }

    /// A heartbeat under a policy that places nothing on heartbeats
    /// ([`NodeSelection::places_on_heartbeats`]): counts a scheduling
    /// opportunity for every waiting key the node is offered to (the key
    /// fits there, its limits allow one more container and its rows allow
    /// the node at some locality), as a placing heartbeat would, so delay
    /// scheduling relaxes at the same pace; the continuous passes place.
    /// Only attempts with located rows have such keys, so a cluster whose
    /// requests name only `*` pays nothing here.
    fn count_opportunities(&mut self, id: &NodeId) {
        let rule = self.config.locality;
        let minimum = self.config.minimum_allocation;
        let nodes = self.nodes.len();
        let Scheduler {
            nodes: all_nodes,
            located_apps,
            apps,
            tree,
            ..
        } = self;
        let Some(node) = all_nodes.get(id) else {
            return;
        };
        let available = node.available();
        if !minimum.fits_in(&available) {
            return;
        }
        for attempt in located_apps.iter() {
            let Some(app) = apps.get_mut(attempt) else {
                continue;
            };
            if app.blacklists(&id.host, &node.rack) {
                continue;
            }
            let am = !app.unmanaged_am && app.next_sequence == 1;
            let AppState {
                asks,
                delay: states,
                user,
                leaf,
                ..
            } = app;
            for key in asks.active_keys() {
                let ask = key.capability();
                let ctx = DelayContext {
                    nodes,
                    outstanding: asks.any_count(&key),
                    locations: asks.rows_for(&key),
                };
                if !ctx.waits(&rule)
                    || !ask.fits_in(&available)
                    || !asks.may_place_on(&key, &id.host, &node.rack)
                    || !limits_allow(tree, minimum, user, am, *leaf, ask)
                {
                    continue;
                }
                delay::offered(&rule, states.entry(key).or_default(), nodes);
            }
        }
    }

    /// Where the next container of `key` for `attempt` should go: the best
    /// node-local node, else (if `allowed` permits) the best rack-local
    /// node, else (likewise) the first off-switch node, in selection order.
    fn pick_node(
        &self,
        attempt: ApplicationAttemptId,
        key: &RequestKey,
        allowed: Locality,
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

        if allowed == Locality::NodeLocal {
            return None;
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
        if allowed != Locality::OffSwitch
            || !app.asks.get(key, ANY).is_some_and(|r| r.relax_locality)
        {
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

/// Whether queue, user and AM limits let an application of `user` in
/// `leaf` take one more container of `ask` (`am`: it would be the
/// application's AM container).
fn limits_allow(
    tree: &QueueTree,
    minimum: Resource,
    user: &str,
    am: bool,
    leaf: QueueIdx,
    ask: Resource,
) -> bool {
    if tree.over_maximum(leaf, ask).is_some() {
        return false;
    }
    if tree.kind() == SchedulerKind::Capacity {
        let user_used = tree.queues[leaf]
            .users
            .get(user)
            .map_or(Resource::ZERO, |u| u.used);
        // The even share is a soft limit, as in Hadoop: a user at or under
        // it may take one more container, so a queue with several users
        // can grow past its guarantee.
        if tree.greater(user_used, tree.user_limit(leaf, ask, minimum)) {
            return false;
        }
        // The user-limit-factor cap is hard, except that a user holding
        // nothing always gets a first container.
        if let Some(cap) = tree.user_cap(leaf, minimum) {
            if !user_used.is_zero() && tree.greater(user_used + ask, cap) {
                return false;
            }
        }
    }
    !am || tree.am_fits(leaf, ask)
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
