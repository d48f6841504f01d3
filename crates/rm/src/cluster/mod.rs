//! The bridge to the scheduler core: the node table, the scheduler and the
//! scheduler's view of the nodes, changed in one place.
//!
//! The RM keeps two tables of nodes: its own ([`NodeTable`]: states,
//! heartbeats, health, decommissioning) and the scheduler core's (nodes it
//! may place containers on). They must agree, and here nothing else can
//! change either: the table's mutators are private to this module, the
//! scheduler is a private field, and every node mutation below ends by
//! bringing the scheduler's view of the nodes it touched in line with the
//! table ([`Cluster::sync_node`]). Inputs about applications go through
//! named methods; there is no way to hand the core a node input from
//! outside.
//!
//! Every change returns the scheduler's [`Decisions`]; the caller (the RM
//! state) applies them to its applications, attempts and nodes' work.
//! Time is the monotonic clock's milliseconds.

pub mod nodes;

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::ids::{ApplicationAttemptId, ContainerId, NodeId};
use spindle_common::resource::Resource;
use spindle_common::text::escaped;
use spindle_scheduler::{
    ContainerExit, Decisions, Input, NodeUpdate, ResourceAsk, Scheduler, SchedulerError,
};
use tracing::{info, warn};

use crate::hosts::HostLists;
use crate::queue_files::QueueFile;
use nodes::{
    Decommission, Expired, Heartbeat, HeartbeatReply, Node, NodeState, NodeTable, RegisterOutcome,
    Registration,
};

/// Containers one continuous-scheduling pass may hand out.
const CONTAINERS_PER_PASS: usize = 1000;

/// How long the cluster totals in allocate answers may be reused while no
/// node joined, left or changed its capability, health or schedulability.
/// Only the nodes' reported usage can move in that time, and it is already
/// up to a heartbeat interval old when it arrives.
const CLUSTER_SUMMARY_MAX_AGE_MS: u64 = 100;

/// What the scheduler core knows about a node (mirrors the node table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SchedNode {
    capability: Resource,
    healthy: bool,
    schedulable: bool,
}

/// What every allocate answer tells the AM about the cluster: the headroom
/// (capability of RUNNING nodes less what the nodes report in use) and the
/// number of RUNNING nodes. Computing them walks every node, which at
/// thousands of nodes and thousands of allocate calls per second was most of
/// the RM's work, so they are kept for a short while.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterSummary {
    pub headroom: Resource,
    pub running_nodes: i32,
    node_change_seq: u64,
    computed_ms: u64,
}

/// The nodes, the scheduler core, and what keeps them in step.
#[derive(Debug)]
pub struct Cluster {
    nodes: NodeTable,
    scheduler: Scheduler,
    /// Nodes as the scheduler knows them.
    view: BTreeMap<NodeId, SchedNode>,
    /// Node changes in order, for AMs' `updated_nodes` (one entry per node, latest).
    changes: BTreeMap<u64, NodeId>,
    change_of_node: BTreeMap<NodeId, u64>,
    change_seq: u64,
    summary: Option<ClusterSummary>,
}

impl Cluster {
    /// A cluster over `nodes`, a table fresh from `NodeTable::new` (so
    /// without nodes, like the scheduler), scheduled by `scheduler`.
    pub fn new(nodes: NodeTable, scheduler: Scheduler) -> Cluster {
        Cluster {
            nodes,
            scheduler,
            view: BTreeMap::new(),
            changes: BTreeMap::new(),
            change_of_node: BTreeMap::new(),
            change_seq: 0,
            summary: None,
        }
    }

    // ---- reading -----------------------------------------------------------

    pub fn nodes(&self) -> &NodeTable {
        &self.nodes
    }

    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// The number of the latest node change.
    pub fn change_seq(&self) -> u64 {
        self.change_seq
    }

    /// The nodes that changed after change number `since` (each once, in
    /// the order of their latest change), and the latest change number.
    pub fn changed_since(&self, since: u64) -> (Vec<&Node>, u64) {
        let nodes = self
            .changes
            .range(since + 1..)
            .filter_map(|(_, id)| self.nodes.get(id))
            .collect();
        (nodes, self.change_seq)
    }

    /// The cluster totals of allocate answers, recomputed when a node changed
    /// or the last ones are older than [`CLUSTER_SUMMARY_MAX_AGE_MS`].
    pub fn summary(&mut self, now_ms: u64) -> ClusterSummary {
        if let Some(s) = self.summary {
            if s.node_change_seq == self.change_seq
                && now_ms.saturating_sub(s.computed_ms) < CLUSTER_SUMMARY_MAX_AGE_MS
            {
                return s;
            }
        }
        let s = ClusterSummary {
            headroom: self
                .nodes
                .cluster_capability()
                .saturating_sub_non_negative(self.nodes.cluster_used()),
            running_nodes: self.nodes.running_count() as i32,
            node_change_seq: self.change_seq,
            computed_ms: now_ms,
        };
        self.summary = Some(s);
        s
    }

    // ---- nodes: every change ends with the scheduler's view in line --------

    /// A NodeManager registers. A node that was already known starts
    /// afresh: the scheduler forgets it (its containers are gone) and
    /// learns it again.
    #[must_use]
    pub fn register_node(
        &mut self,
        registration: Registration,
        running_apps: bool,
        now_ms: u64,
    ) -> (RegisterOutcome, Decisions) {
        let id = registration.id.clone();
        // A node still active here that reports running applications
        // reconnects: the scheduler keeps it and its containers (Hadoop's
        // ReconnectNodeTransition). Otherwise what it held is gone.
        let reconnect = running_apps && self.nodes.get(&id).is_some_and(|n| n.state.is_active());
        let outcome = self.nodes.register(registration, reconnect, now_ms);
        let mut decisions = Decisions::default();
        if outcome == RegisterOutcome::Accepted && !reconnect && self.view.remove(&id).is_some() {
            decisions.extend(self.feed_node(Input::NodeRemoved { node: id.clone() }, now_ms));
        }
        decisions.extend(self.sync_node(&id, now_ms));
        (outcome, decisions)
    }

    /// A NodeManager heartbeats: the table takes its health, usage and
    /// response id and may change its state (unhealthy, decommissioned).
    #[must_use]
    pub fn heartbeat(&mut self, heartbeat: Heartbeat, now_ms: u64) -> (HeartbeatReply, Decisions) {
        let id = heartbeat.id.clone();
        let reply = self.nodes.heartbeat(heartbeat, now_ms);
        let decisions = self.sync_node(&id, now_ms);
        (reply, decisions)
    }

    /// A repeated heartbeat (its answer was lost): it counts for the node's
    /// liveness, as Hadoop's liveness monitor is pinged before duplicates
    /// are answered, and changes nothing else.
    pub fn ping(&mut self, id: &NodeId, now_ms: u64) {
        self.nodes.ping(id, now_ms);
    }

    /// The heartbeat itself lets the scheduler place containers on the
    /// node (after the RM has taken its container statuses).
    #[must_use]
    pub fn offer_node(&mut self, id: &NodeId, now_ms: u64) -> Decisions {
        if !self.view.contains_key(id) {
            return Decisions::default();
        }
        let update = Input::NodeUpdated {
            node: id.clone(),
            update: NodeUpdate::heartbeat(),
        };
        self.feed_node(update, now_ms)
    }

    /// A NodeManager leaves (SHUTDOWN). False when it was not active.
    #[must_use]
    pub fn unregister_node(&mut self, id: &NodeId, now_ms: u64) -> (bool, Decisions) {
        let known = self.nodes.unregister(id);
        let decisions = self.sync_node(id, now_ms);
        (known, decisions)
    }

    /// Liveness: nodes silent for longer than the expiry interval are LOST,
    /// graceful decommissions past their deadline are DECOMMISSIONED; both
    /// leave the scheduler.
    #[must_use]
    pub fn expire(&mut self, now_ms: u64) -> (Expired, Decisions) {
        let expired = self.nodes.expire(now_ms);
        for id in &expired.lost {
            warn!(node = %escaped(&id.to_string()), "node expired: no heartbeat within the liveness interval; now LOST");
        }
        for id in &expired.decommissioned {
            info!(node = %escaped(&id.to_string()), "graceful decommission timed out; node DECOMMISSIONED");
        }
        let mut decisions = Decisions::default();
        for id in expired.lost.iter().chain(&expired.decommissioned) {
            decisions.extend(self.sync_node(id, now_ms));
        }
        (expired, decisions)
    }

    /// `refreshNodes`: new include/exclude lists; nodes no longer allowed are
    /// decommissioned (at once, or gracefully), allowed ones recommissioned.
    #[must_use]
    pub fn refresh(&mut self, hosts: HostLists, mode: Decommission, now_ms: u64) -> Decisions {
        self.nodes.refresh(hosts, mode, now_ms);
        self.sync_all(now_ms)
    }

    /// `updateNodeResource`: a new capability for an active node. False
    /// when the node is not active.
    #[must_use]
    pub fn set_capability(
        &mut self,
        id: &NodeId,
        capability: Resource,
        now_ms: u64,
    ) -> (bool, Decisions) {
        let known = self.nodes.set_capability(id, capability);
        let decisions = self.sync_node(id, now_ms);
        (known, decisions)
    }

    /// The containers an active node runs for applications the RM does
    /// not know, and what they hold; the scheduler's view of the node
    /// shrinks by that much until they are gone. False when the node is
    /// not active.
    #[must_use]
    pub fn set_orphans(
        &mut self,
        id: &NodeId,
        orphans: BTreeMap<ContainerId, Resource>,
        now_ms: u64,
    ) -> (bool, Decisions) {
        let known = self.nodes.set_orphans(id, orphans);
        let decisions = self.sync_node(id, now_ms);
        (known, decisions)
    }

    /// Brings the scheduler's view of `id` in line with the node table: a
    /// node is in the scheduler while it is active, healthy or not, and
    /// schedulable unless it is decommissioning; its capability less what
    /// its orphan containers hold.
    fn sync_node(&mut self, id: &NodeId, now_ms: u64) -> Decisions {
        let desired = self.nodes.get(id).filter(|n| n.state.is_active()).map(|n| {
            let orphaned = n
                .orphans
                .values()
                .fold(Resource::default(), |sum, r| sum + *r);
            SchedNode {
                capability: n.capability.saturating_sub_non_negative(orphaned),
                healthy: n.state != NodeState::Unhealthy,
                schedulable: n.state != NodeState::Decommissioning,
            }
        });
        let current = self.view.get(id).copied();
        if current != desired {
            self.record_change(id);
        }
        let mut decisions = Decisions::default();
        match (current, desired) {
            (None, None) => {}
            (Some(_), None) => {
                self.view.remove(id);
                decisions.extend(self.feed_node(Input::NodeRemoved { node: id.clone() }, now_ms));
            }
            (None, Some(d)) => {
                let rack = self
                    .nodes
                    .get(id)
                    .map(|n| n.rack.clone())
                    .unwrap_or_default();
                self.view.insert(id.clone(), d);
                let added = Input::NodeAdded {
                    node: id.clone(),
                    rack,
                    capability: d.capability,
                };
                decisions.extend(self.feed_node(added, now_ms));
                if !d.healthy || !d.schedulable {
                    let update = Input::NodeUpdated {
                        node: id.clone(),
                        update: NodeUpdate {
                            capability: None,
                            healthy: Some(d.healthy),
                            schedulable: Some(d.schedulable),
                        },
                    };
                    decisions.extend(self.feed_node(update, now_ms));
                }
            }
            (Some(c), Some(d)) if c != d => {
                self.view.insert(id.clone(), d);
                let update = Input::NodeUpdated {
                    node: id.clone(),
                    update: NodeUpdate {
                        capability: (c.capability != d.capability).then_some(d.capability),
                        healthy: Some(d.healthy),
                        schedulable: Some(d.schedulable),
                    },
                };
                decisions.extend(self.feed_node(update, now_ms));
            }
            (Some(_), Some(_)) => {}
        }
        decisions
    }

    /// Re-syncs every node the scheduler knows or the table has active.
    fn sync_all(&mut self, now_ms: u64) -> Decisions {
        let mut ids: BTreeSet<NodeId> = self.view.keys().cloned().collect();
        ids.extend(self.nodes.active().map(|n| n.id.clone()));
        let mut decisions = Decisions::default();
        for id in ids {
            decisions.extend(self.sync_node(&id, now_ms));
        }
        decisions
    }

    /// Notes that `id` changed, for the `updated_nodes` of AMs' next allocate answers.
    fn record_change(&mut self, id: &NodeId) {
        self.change_seq += 1;
        let seq = self.change_seq;
        if let Some(old) = self.change_of_node.insert(id.clone(), seq) {
            self.changes.remove(&old);
        }
        self.changes.insert(seq, id.clone());
    }

    /// A node input; the view decided it, so a refusal means the two
    /// disagree, which is logged.
    fn feed_node(&mut self, input: Input, now_ms: u64) -> Decisions {
        let kind = input.kind();
        match self.scheduler.handle(now_ms, input) {
            Ok(d) => d,
            Err(e) => {
                warn!(input = kind, error = %e, "scheduler refused an input");
                Decisions::default()
            }
        }
    }

    // ---- applications ---------------------------------------------------------

    /// A new application attempt in `queue` (see `Input::AppAdded`).
    pub fn add_app(
        &mut self,
        attempt: ApplicationAttemptId,
        queue: String,
        user: String,
        priority: i32,
        unmanaged_am: bool,
        now_ms: u64,
    ) -> Result<Decisions, SchedulerError> {
        let input = Input::AppAdded {
            attempt,
            queue,
            user,
            priority,
            unmanaged_am,
        };
        self.scheduler.handle(now_ms, input)
    }

    /// An attempt kept by a work-preserving restart rejoins its queue (see
    /// `Input::AppRecovered`).
    pub fn recover_app(
        &mut self,
        attempt: ApplicationAttemptId,
        queue: String,
        user: String,
        priority: i32,
        unmanaged_am: bool,
        now_ms: u64,
    ) -> Result<Decisions, SchedulerError> {
        let input = Input::AppRecovered {
            attempt,
            queue,
            user,
            priority,
            unmanaged_am,
        };
        self.scheduler.handle(now_ms, input)
    }

    /// A container of a recovered attempt that a re-registering node still
    /// runs is held again (see `Input::ContainerRecovered`).
    pub fn recover_container(
        &mut self,
        container: ContainerId,
        node: NodeId,
        resource: Resource,
        am: bool,
        now_ms: u64,
    ) -> Result<Decisions, SchedulerError> {
        let input = Input::ContainerRecovered {
            container,
            node,
            resource,
            priority: 0,
            am,
        };
        self.scheduler.handle(now_ms, input)
    }

    /// No allocation before `until_ms` (the scheduling wait after a
    /// work-preserving restart).
    pub fn hold_allocations(&mut self, until_ms: u64, now_ms: u64) {
        let input = Input::HoldAllocations { until_ms };
        if let Err(e) = self.scheduler.handle(now_ms, input) {
            warn!(error = %e, "scheduler refused to hold allocations");
        }
    }

    /// The attempt ended: its containers complete and are killed, its asks go.
    pub fn remove_app(
        &mut self,
        attempt: ApplicationAttemptId,
        now_ms: u64,
    ) -> Result<Decisions, SchedulerError> {
        self.scheduler.handle(now_ms, Input::AppRemoved { attempt })
    }

    /// An attempt's request table changes, releases and blacklist changes,
    /// applied all or nothing.
    pub fn update_asks(
        &mut self,
        attempt: ApplicationAttemptId,
        asks: Vec<ResourceAsk>,
        releases: Vec<ContainerId>,
        blacklist_add: Vec<String>,
        blacklist_remove: Vec<String>,
        now_ms: u64,
    ) -> Result<Decisions, SchedulerError> {
        let input = Input::AsksUpdated {
            attempt,
            asks,
            releases,
            blacklist_add,
            blacklist_remove,
        };
        self.scheduler.handle(now_ms, input)
    }

    /// A NodeManager reported the container finished.
    pub fn container_completed(
        &mut self,
        container: ContainerId,
        exit_status: i32,
        diagnostics: String,
        now_ms: u64,
    ) -> Result<Decisions, SchedulerError> {
        let input = Input::ContainerCompleted {
            container,
            exit: ContainerExit::Finished {
                exit_status,
                diagnostics,
            },
        };
        self.scheduler.handle(now_ms, input)
    }

    /// The application's priority changed: the attempt moves in its queue's order.
    pub fn update_priority(
        &mut self,
        attempt: ApplicationAttemptId,
        priority: i32,
        now_ms: u64,
    ) -> Result<Decisions, SchedulerError> {
        let input = Input::AppPriorityUpdated { attempt, priority };
        self.scheduler.handle(now_ms, input)
    }

    /// The application moved to the leaf at `queue`: the attempt, its
    /// usage and its asks go there.
    pub fn move_app(
        &mut self,
        attempt: ApplicationAttemptId,
        queue: String,
        now_ms: u64,
    ) -> Result<Decisions, SchedulerError> {
        self.scheduler
            .handle(now_ms, Input::AppMoved { attempt, queue })
    }

    /// A new queue configuration: the tree with the locality delays and
    /// per-heartbeat caps read from the same files, taken all or nothing,
    /// as Hadoop's `reinitialize` does.
    pub fn reconfigure(
        &mut self,
        queues: &QueueFile,
        now_ms: u64,
    ) -> Result<Decisions, SchedulerError> {
        let input = Input::QueuesReconfigured {
            queues: Box::new(queues.tree.clone()),
            locality: queues.locality,
            heartbeat: queues.heartbeat,
        };
        self.scheduler.handle(now_ms, input)
    }

    /// One continuous-scheduling pass with bounded work.
    #[must_use]
    pub fn schedule(&mut self, now_ms: u64) -> Decisions {
        match self.scheduler.schedule(now_ms, CONTAINERS_PER_PASS) {
            Ok(d) => d,
            Err(e) => {
                warn!(error = %e, "scheduling pass failed");
                Decisions::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use spindle_scheduler::SchedulerConfig;

    use super::nodes::{Health, NodeConfig};
    use super::*;
    use crate::hosts::parse_list;

    fn cluster() -> Cluster {
        let table = NodeTable::new(
            NodeConfig {
                liveness_expiry_ms: 1000,
                heartbeat_interval_ms: 100,
                min_allocation: Resource::new(1024, 1),
                default_graceful_timeout_ms: 5000,
                default_rack: "/default-rack".into(),
            },
            HostLists::default(),
        );
        let scheduler = Scheduler::new(SchedulerConfig::default()).expect("scheduler");
        Cluster::new(table, scheduler)
    }

    fn registration(host: &str) -> Registration {
        Registration {
            id: NodeId::new(host, 4000),
            http_port: 8042,
            capability: Resource::new(4096, 4),
            nm_version: "test".into(),
            rack: None,
            health: Health {
                healthy: true,
                report: String::new(),
                last_report_ms: 0,
            },
        }
    }

    fn heartbeat(host: &str, response_id: i32, num_containers: i32) -> Heartbeat {
        Heartbeat {
            id: NodeId::new(host, 4000),
            response_id,
            health: Health {
                healthy: true,
                report: String::new(),
                last_report_ms: 0,
            },
            num_containers,
            used: Resource::default(),
        }
    }

    /// The nodes the scheduler knows, with whether it may place on them.
    fn in_scheduler(c: &Cluster) -> Vec<(String, bool)> {
        c.scheduler()
            .nodes()
            .into_iter()
            .map(|n| (n.id.host.to_string(), n.schedulable))
            .collect()
    }

    fn excluding(host: &str) -> HostLists {
        HostLists {
            include: Default::default(),
            exclude: parse_list(host),
        }
    }

    #[test]
    fn registration_and_refresh_reach_the_scheduler() {
        let mut c = cluster();
        let _ = c.register_node(registration("a"), false, 0);
        let _ = c.register_node(registration("b"), false, 0);
        assert_eq!(
            in_scheduler(&c),
            [("a".to_string(), true), ("b".to_string(), true)]
        );
        let _ = c.refresh(excluding("a"), Decommission::Normal, 10);
        assert_eq!(in_scheduler(&c), [("b".to_string(), true)]);
        let _ = c.refresh(
            excluding("b"),
            Decommission::Graceful {
                timeout_ms: Some(100),
            },
            20,
        );
        assert_eq!(in_scheduler(&c), [("b".to_string(), false)]);
    }

    #[test]
    fn a_timed_out_graceful_decommission_leaves_the_scheduler() {
        let mut c = cluster();
        let _ = c.register_node(registration("a"), false, 0);
        let _ = c.heartbeat(heartbeat("a", 0, 1), 1);
        let _ = c.refresh(
            excluding("a"),
            Decommission::Graceful {
                timeout_ms: Some(100),
            },
            2,
        );
        let _ = c.heartbeat(heartbeat("a", 1, 1), 50);
        let (expired, _) = c.expire(150);
        assert_eq!(expired.decommissioned, [NodeId::new("a", 4000)]);
        assert!(in_scheduler(&c).is_empty(), "{:?}", in_scheduler(&c));
        assert_eq!(
            c.nodes().get(&NodeId::new("a", 4000)).map(|n| n.state),
            Some(NodeState::Decommissioned)
        );
    }
}
