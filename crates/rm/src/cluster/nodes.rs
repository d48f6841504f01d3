//! The RM's view of NodeManagers: registration, heartbeats with response-id
//! sequencing, health, liveness expiry and (graceful) decommissioning.
//!
//! Pure state: every method takes the current (monotonic) time; nothing here
//! reads a clock or touches the network. The tracker service converts wire
//! messages to the types below.
//!
//! The table's mutating methods are visible to the parent module only: the
//! scheduler keeps its own view of the nodes, and the parent's `Cluster`
//! changes both together.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::ids::{ApplicationId, ContainerId, NodeId};
use spindle_common::resource::Resource;

use crate::hosts::HostLists;

/// Node states as YARN reports them (NodeStateProto without the `NS_` prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeState {
    New,
    Running,
    Unhealthy,
    Decommissioned,
    Lost,
    Rebooted,
    Decommissioning,
    Shutdown,
}

impl NodeState {
    /// Every state, in the order of Hadoop's `NodeState` enum: what a node
    /// listing without a state filter covers, and what a state name given
    /// by a client is looked up in.
    pub const ALL: [NodeState; 8] = [
        NodeState::New,
        NodeState::Running,
        NodeState::Unhealthy,
        NodeState::Decommissioned,
        NodeState::Lost,
        NodeState::Rebooted,
        NodeState::Decommissioning,
        NodeState::Shutdown,
    ];

    /// Hadoop's name of the state (`NodeState.name()`), as REST replies,
    /// JMX beans and the web UI show it and as clients spell it in filters.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::New => "NEW",
            NodeState::Running => "RUNNING",
            NodeState::Unhealthy => "UNHEALTHY",
            NodeState::Decommissioned => "DECOMMISSIONED",
            NodeState::Lost => "LOST",
            NodeState::Rebooted => "REBOOTED",
            NodeState::Decommissioning => "DECOMMISSIONING",
            NodeState::Shutdown => "SHUTDOWN",
        }
    }

    /// Active nodes heartbeat and may hold containers; the others are history.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            NodeState::New | NodeState::Running | NodeState::Unhealthy | NodeState::Decommissioning
        )
    }
}

/// What the NodeManager reports about its health.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Health {
    pub healthy: bool,
    pub report: String,
    pub last_report_ms: i64,
}

/// One NodeManager.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: NodeId,
    pub http_port: i32,
    pub rack: String,
    pub capability: Resource,
    pub used: Resource,
    pub num_containers: i32,
    pub state: NodeState,
    pub health: Health,
    pub nm_version: String,
    /// When the node last heartbeated (monotonic ms), for liveness.
    pub last_heartbeat_ms: u64,
    /// The response id of the last heartbeat answer (0 right after registration).
    pub last_response_id: i32,
    pub last_reply: Option<HeartbeatReply>,
    /// When a graceful decommission gives up waiting and forces the node out.
    pub decommission_deadline_ms: Option<u64>,
    /// Containers the node runs for applications this RM does not know
    /// (left from before an RM restart), with what they hold: the scheduler
    /// sees the node that much smaller until they are gone.
    pub orphans: BTreeMap<ContainerId, Resource>,
}

impl Node {
    pub fn http_address(&self) -> String {
        format!("{}:{}", self.id.host, self.http_port)
    }
}

/// A registration request, already converted from the wire.
#[derive(Debug, Clone)]
pub struct Registration {
    pub id: NodeId,
    pub http_port: i32,
    pub capability: Resource,
    pub nm_version: String,
    pub health: Health,
    /// The node's rack as topology resolution found it; `None` uses the
    /// configured default rack.
    pub rack: Option<String>,
}

/// The RM's answer to a registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterOutcome {
    Accepted,
    /// The NM must shut down, with the reason.
    Rejected(String),
}

/// A heartbeat, already converted from the wire.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    pub id: NodeId,
    pub response_id: i32,
    pub health: Health,
    pub num_containers: i32,
    pub used: Resource,
}

/// The node action a heartbeat answer carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeAction {
    Normal,
    Resync,
    Shutdown,
}

/// A heartbeat answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatReply {
    pub response_id: i32,
    pub action: NodeAction,
    pub diagnostics: String,
    pub next_interval_ms: i64,
}

/// A container status from a NodeManager heartbeat or registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerStatus {
    pub container: ContainerId,
    pub running: bool,
    pub complete: bool,
    pub exit_status: i32,
    pub diagnostics: String,
    /// What the container holds, as the node reports it.
    pub resource: Resource,
}

/// Things a NodeManager must hear on its next heartbeat.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NodeWork {
    pub cleanup_containers: BTreeSet<ContainerId>,
    pub cleanup_apps: BTreeSet<ApplicationId>,
    /// Completed containers the RM has taken note of (so the NM stops reporting them).
    pub acked: BTreeSet<ContainerId>,
    /// Resources an admin gave the node (`updateNodeResource`) that it has not
    /// been told of: the heartbeat answer's `resource`, which a NodeManager takes
    /// as its own (and registers with after a resync), as with Hadoop's RM.
    pub new_capability: Option<Resource>,
    /// Signals `signalToContainer` asked for, in the order asked: the answer's
    /// `containers_to_signal`, as Hadoop's `RMNodeImpl` keeps them.
    pub signals: Vec<(ContainerId, ContainerSignal)>,
}

/// What `yarn container -signal` asks a container's NodeManager to do (Hadoop's
/// `SignalContainerCommand`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerSignal {
    /// SIGQUIT: a JVM prints its threads.
    OutputThreadDump,
    /// SIGTERM.
    GracefulShutdown,
    /// SIGKILL.
    ForcefulShutdown,
}

/// The nodes a liveness check took out of the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expired {
    /// Silent for longer than the liveness interval: now LOST.
    pub lost: Vec<NodeId>,
    /// DECOMMISSIONING past their graceful timeout: now DECOMMISSIONED.
    pub decommissioned: Vec<NodeId>,
}

/// How `refreshNodes` decommissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decommission {
    /// Out at once.
    Normal,
    /// DECOMMISSIONING until the node holds no containers or the timeout passes.
    Graceful { timeout_ms: Option<u64> },
}

/// Settings of the node table.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub liveness_expiry_ms: u64,
    pub heartbeat_interval_ms: i64,
    pub min_allocation: Resource,
    pub default_graceful_timeout_ms: u64,
    pub default_rack: String,
}

/// Every node the RM knows, active or not.
#[derive(Debug)]
pub struct NodeTable {
    config: NodeConfig,
    hosts: HostLists,
    active: BTreeMap<NodeId, Node>,
    inactive: BTreeMap<NodeId, Node>,
}

fn next_response_id(id: i32) -> i32 {
    id.wrapping_add(1) & i32::MAX
}

impl NodeTable {
    pub fn new(config: NodeConfig, hosts: HostLists) -> Self {
        NodeTable {
            config,
            hosts,
            active: BTreeMap::new(),
            inactive: BTreeMap::new(),
        }
    }

    /// Registers a node. `reconnect`: the node is still active here and
    /// reports running applications, so it keeps its record (state,
    /// orphans, decommission deadline) and only takes the registration's
    /// ports, version, capability and health, as Hadoop's
    /// `RMNodeImpl.ReconnectNodeTransition` does; otherwise the node
    /// starts afresh.
    pub(super) fn register(
        &mut self,
        reg: Registration,
        reconnect: bool,
        now_ms: u64,
    ) -> RegisterOutcome {
        let host = reg.id.host.clone();
        let port = reg.id.port;
        // A node being gracefully decommissioned is excluded by the host
        // lists but still registers (Hadoop's `isNodeInDecommissioning`).
        let decommissioning = self
            .active
            .get(&reg.id)
            .is_some_and(|n| n.state == NodeState::Decommissioning);
        if !self.hosts.is_valid(&host, port) && !decommissioning {
            return RegisterOutcome::Rejected(format!(
                "Disallowed NodeManager from {host}, Sending SHUTDOWN signal to the NodeManager."
            ));
        }
        let min = self.config.min_allocation;
        if reg.capability.memory_mb < min.memory_mb || reg.capability.vcores < min.vcores {
            return RegisterOutcome::Rejected(format!(
                "NodeManager from {host} doesn't satisfy minimum allocations \
                 ({} < minimum {min}), Sending SHUTDOWN signal to the NodeManager.",
                reg.capability
            ));
        }
        if reconnect {
            if let Some(node) = self.active.get_mut(&reg.id) {
                node.http_port = reg.http_port;
                node.nm_version = reg.nm_version;
                node.capability = reg.capability;
                if node.state != NodeState::Decommissioning {
                    node.state = if reg.health.healthy {
                        NodeState::Running
                    } else {
                        NodeState::Unhealthy
                    };
                }
                node.health = reg.health;
                node.last_heartbeat_ms = now_ms;
                node.last_response_id = 0;
                node.last_reply = None;
                return RegisterOutcome::Accepted;
            }
        }
        if decommissioning {
            // Back with no running applications, a decommissioning node has
            // nothing left to wait for: it is decommissioned, as Hadoop's
            // ReconnectNodeTransition does (its next heartbeat is told to
            // shut down).
            self.deactivate(&reg.id, NodeState::Decommissioned);
            return RegisterOutcome::Accepted;
        }
        // A re-registering node (restart, RESYNC) replaces its old record.
        self.inactive.remove(&reg.id);
        let state = if reg.health.healthy {
            NodeState::Running
        } else {
            NodeState::Unhealthy
        };
        let node = Node {
            id: reg.id.clone(),
            http_port: reg.http_port,
            rack: reg
                .rack
                .clone()
                .unwrap_or_else(|| self.config.default_rack.clone()),
            capability: reg.capability,
            used: Resource::default(),
            num_containers: 0,
            state,
            health: reg.health,
            nm_version: reg.nm_version,
            last_heartbeat_ms: now_ms,
            last_response_id: 0,
            last_reply: None,
            decommission_deadline_ms: None,
            orphans: BTreeMap::new(),
        };
        self.active.insert(reg.id, node);
        RegisterOutcome::Accepted
    }

    pub(super) fn heartbeat(&mut self, hb: Heartbeat, now_ms: u64) -> HeartbeatReply {
        let interval = self.config.heartbeat_interval_ms;
        let reply = |action, diagnostics: String| HeartbeatReply {
            response_id: 0,
            action,
            diagnostics,
            next_interval_ms: interval,
        };
        let port = hb.id.port;
        if !self.hosts.is_valid(&hb.id.host, port) && !self.active.contains_key(&hb.id) {
            return reply(
                NodeAction::Shutdown,
                format!(
                    "Disallowed NodeManager nodeId: {} hostname:{}",
                    hb.id, hb.id.host
                ),
            );
        }
        let Some(node) = self.active.get_mut(&hb.id) else {
            let decommissioned = self
                .inactive
                .get(&hb.id)
                .is_some_and(|n| n.state == NodeState::Decommissioned);
            if decommissioned {
                return reply(
                    NodeAction::Shutdown,
                    format!(
                        "Disallowed NodeManager nodeId: {} hostname:{}",
                        hb.id, hb.id.host
                    ),
                );
            }
            return reply(
                NodeAction::Resync,
                format!("Node not found resyncing {}", hb.id),
            );
        };
        // Duplicate of the heartbeat we already answered: answer it the same way.
        if next_response_id(hb.response_id) == node.last_response_id {
            if let Some(last) = &node.last_reply {
                return last.clone();
            }
        } else if hb.response_id != node.last_response_id {
            let msg = format!(
                "Too far behind rm response id:{} nm response id:{}",
                node.last_response_id, hb.response_id
            );
            let mut gone = node.clone();
            self.active.remove(&hb.id);
            gone.state = NodeState::Rebooted;
            self.inactive.insert(hb.id.clone(), gone);
            return reply(NodeAction::Resync, msg);
        }
        node.last_heartbeat_ms = now_ms;
        node.health = hb.health;
        node.num_containers = hb.num_containers;
        node.used = hb.used;
        let mut action = NodeAction::Normal;
        let mut diagnostics = String::new();
        match node.state {
            NodeState::Running if !node.health.healthy => node.state = NodeState::Unhealthy,
            NodeState::Unhealthy if node.health.healthy => node.state = NodeState::Running,
            NodeState::Decommissioning => {
                let expired = node.decommission_deadline_ms.is_some_and(|d| now_ms >= d);
                if node.num_containers == 0 || expired {
                    action = NodeAction::Shutdown;
                    diagnostics = format!(
                        "Node {} is decommissioned{}",
                        node.id,
                        if expired {
                            " after its graceful timeout"
                        } else {
                            ""
                        }
                    );
                }
            }
            _ => {}
        }
        let response = HeartbeatReply {
            response_id: next_response_id(node.last_response_id),
            action,
            diagnostics,
            next_interval_ms: interval,
        };
        node.last_response_id = response.response_id;
        node.last_reply = Some(response.clone());
        if action == NodeAction::Shutdown {
            self.deactivate(&hb.id, NodeState::Decommissioned);
        }
        response
    }

    /// Whether `hb` repeats the heartbeat answered last (the NM did not get
    /// the answer and sent the same heartbeat again).
    pub fn is_repeat(&self, hb: &Heartbeat) -> bool {
        self.active.get(&hb.id).is_some_and(|node| {
            node.last_reply.is_some() && next_response_id(hb.response_id) == node.last_response_id
        })
    }

    /// The node was heard from at `now_ms` (a heartbeat, repeated or not):
    /// what its liveness counts from.
    pub(super) fn ping(&mut self, id: &NodeId, now_ms: u64) {
        if let Some(node) = self.active.get_mut(id) {
            node.last_heartbeat_ms = node.last_heartbeat_ms.max(now_ms);
        }
    }

    /// Replaces the node's orphan containers; false when it is not active.
    pub(super) fn set_orphans(
        &mut self,
        id: &NodeId,
        orphans: BTreeMap<ContainerId, Resource>,
    ) -> bool {
        match self.active.get_mut(id) {
            Some(node) => {
                node.orphans = orphans;
                true
            }
            None => false,
        }
    }

    pub(super) fn unregister(&mut self, id: &NodeId) -> bool {
        self.deactivate(id, NodeState::Shutdown)
    }

    fn deactivate(&mut self, id: &NodeId, state: NodeState) -> bool {
        match self.active.remove(id) {
            Some(mut node) => {
                node.state = state;
                node.used = Resource::default();
                node.num_containers = 0;
                node.orphans.clear();
                self.inactive.insert(id.clone(), node);
                true
            }
            None => false,
        }
    }

    /// Marks nodes that have not heartbeated within the expiry interval LOST, and
    /// finishes graceful decommissions whose deadline passed.
    pub(super) fn expire(&mut self, now_ms: u64) -> Expired {
        let expiry = self.config.liveness_expiry_ms;
        let lost: Vec<NodeId> = self
            .active
            .values()
            .filter(|n| now_ms.saturating_sub(n.last_heartbeat_ms) > expiry)
            .map(|n| n.id.clone())
            .collect();
        for id in &lost {
            self.deactivate(id, NodeState::Lost);
        }
        let overdue: Vec<NodeId> = self
            .active
            .values()
            .filter(|n| {
                n.state == NodeState::Decommissioning
                    && n.decommission_deadline_ms.is_some_and(|d| now_ms >= d)
            })
            .map(|n| n.id.clone())
            .collect();
        for id in &overdue {
            self.deactivate(id, NodeState::Decommissioned);
        }
        Expired {
            lost,
            decommissioned: overdue,
        }
    }

    /// Applies new host lists (`yarn rmadmin -refreshNodes`).
    pub(super) fn refresh(&mut self, hosts: HostLists, mode: Decommission, now_ms: u64) {
        self.hosts = hosts;
        let ids: Vec<NodeId> = self.active.keys().cloned().collect();
        for id in ids {
            let valid = self.hosts.is_valid(&id.host, id.port);
            let Some(node) = self.active.get_mut(&id) else {
                continue;
            };
            match (valid, mode) {
                (true, _) => {
                    if node.state == NodeState::Decommissioning {
                        // Recommissioned.
                        node.decommission_deadline_ms = None;
                        node.state = if node.health.healthy {
                            NodeState::Running
                        } else {
                            NodeState::Unhealthy
                        };
                    }
                }
                (false, Decommission::Normal) => {
                    self.deactivate(&id, NodeState::Decommissioned);
                }
                (false, Decommission::Graceful { timeout_ms }) => {
                    if node.state != NodeState::Decommissioning {
                        let timeout = timeout_ms.unwrap_or(self.config.default_graceful_timeout_ms);
                        node.state = NodeState::Decommissioning;
                        node.decommission_deadline_ms = Some(now_ms.saturating_add(timeout));
                    }
                }
            }
        }
        // Nodes decommissioned earlier that are allowed again may re-register; their
        // history entry stays until they do, as in Hadoop.
    }

    /// `updateNodeResource`: a new capability for an active node. False when the node
    /// is not active.
    pub(super) fn set_capability(&mut self, id: &NodeId, capability: Resource) -> bool {
        match self.active.get_mut(id) {
            Some(node) => {
                node.capability = capability;
                true
            }
            None => false,
        }
    }

    pub fn get(&self, id: &NodeId) -> Option<&Node> {
        self.active.get(id).or_else(|| self.inactive.get(id))
    }

    /// Active and inactive nodes, in NodeId order.
    pub fn all(&self) -> impl Iterator<Item = &Node> {
        self.active.values().chain(self.inactive.values())
    }

    pub fn active(&self) -> impl Iterator<Item = &Node> {
        self.active.values()
    }

    pub fn count(&self, state: NodeState) -> usize {
        self.all().filter(|n| n.state == state).count()
    }

    /// Nodes that can run containers (RUNNING).
    pub fn running_count(&self) -> usize {
        self.active
            .values()
            .filter(|n| n.state == NodeState::Running)
            .count()
    }

    /// Total capability of RUNNING nodes.
    pub fn cluster_capability(&self) -> Resource {
        self.active
            .values()
            .filter(|n| n.state == NodeState::Running)
            .fold(Resource::default(), |acc, n| acc + n.capability)
    }

    pub fn cluster_used(&self) -> Resource {
        self.active
            .values()
            .fold(Resource::default(), |acc, n| acc + n.used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::parse_list;

    /// `ALL` holds each state once, and the names are Hadoop's: exactly
    /// the wire enum's names (`NodeStateProto`) without their `NS_` prefix.
    #[test]
    fn every_state_once_with_hadoops_name() {
        use hadoop_protos::yarn::NodeStateProto;
        let distinct: BTreeSet<NodeState> = NodeState::ALL.into_iter().collect();
        assert_eq!(distinct.len(), NodeState::ALL.len());
        let names: BTreeSet<&str> = NodeState::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names.len(), NodeState::ALL.len());
        for s in NodeState::ALL {
            let wire = format!("NS_{}", s.as_str());
            assert!(
                NodeStateProto::from_str_name(&wire).is_some(),
                "{s:?}: {wire} is not a NodeStateProto name"
            );
        }
        let wire_names = (0..=20)
            .filter_map(|v| NodeStateProto::try_from(v).ok())
            .count();
        assert_eq!(
            wire_names,
            NodeState::ALL.len(),
            "a wire state has no NodeState"
        );
    }

    fn config() -> NodeConfig {
        NodeConfig {
            liveness_expiry_ms: 1000,
            heartbeat_interval_ms: 100,
            min_allocation: Resource::new(1024, 1),
            default_graceful_timeout_ms: 5000,
            default_rack: "/default-rack".into(),
        }
    }

    fn id(host: &str) -> NodeId {
        NodeId::new(host, 4000)
    }

    fn reg(host: &str) -> Registration {
        Registration {
            id: id(host),
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

    fn hb(host: &str, response_id: i32) -> Heartbeat {
        Heartbeat {
            id: id(host),
            response_id,
            health: Health {
                healthy: true,
                report: String::new(),
                last_report_ms: 0,
            },
            num_containers: 0,
            used: Resource::default(),
        }
    }

    #[test]
    fn response_ids_sequence_and_duplicates_replay() {
        let mut t = NodeTable::new(config(), HostLists::default());
        assert_eq!(t.register(reg("a"), false, 0), RegisterOutcome::Accepted);
        let r1 = t.heartbeat(hb("a", 0), 10);
        assert_eq!((r1.response_id, r1.action), (1, NodeAction::Normal));
        let r2 = t.heartbeat(hb("a", 1), 20);
        assert_eq!(r2.response_id, 2);
        // The NM did not see r2 and sends response id 1 again: same answer.
        assert_eq!(t.heartbeat(hb("a", 1), 30), r2);
        // Far behind: RESYNC, and the node must register again.
        let r = t.heartbeat(hb("a", 7), 40);
        assert_eq!(r.action, NodeAction::Resync);
        assert_eq!(t.heartbeat(hb("a", 2), 50).action, NodeAction::Resync);
    }

    #[test]
    fn unknown_node_is_told_to_resync() {
        let mut t = NodeTable::new(config(), HostLists::default());
        let r = t.heartbeat(hb("ghost", 3), 0);
        assert_eq!(r.action, NodeAction::Resync);
        assert!(r.diagnostics.contains("ghost:4000"));
    }

    #[test]
    fn health_toggles_unhealthy_and_back() {
        let mut t = NodeTable::new(config(), HostLists::default());
        t.register(reg("a"), false, 0);
        let mut beat = hb("a", 0);
        beat.health.healthy = false;
        beat.health.report = "1/1 local-dirs are bad".into();
        t.heartbeat(beat, 1);
        assert_eq!(t.get(&id("a")).map(|n| n.state), Some(NodeState::Unhealthy));
        t.heartbeat(hb("a", 1), 2);
        assert_eq!(t.get(&id("a")).map(|n| n.state), Some(NodeState::Running));
    }

    #[test]
    fn silent_node_becomes_lost_and_can_come_back() {
        let mut t = NodeTable::new(config(), HostLists::default());
        t.register(reg("a"), false, 0);
        t.register(reg("b"), false, 0);
        t.heartbeat(hb("b", 0), 900);
        assert!(
            t.expire(1000).lost.is_empty(),
            "exactly at expiry is still alive"
        );
        assert_eq!(t.expire(1500).lost, vec![id("a")]);
        assert_eq!(t.get(&id("a")).map(|n| n.state), Some(NodeState::Lost));
        assert_eq!(t.count(NodeState::Lost), 1);
        assert_eq!(t.heartbeat(hb("a", 1), 1600).action, NodeAction::Resync);
        t.register(reg("a"), false, 1700);
        assert_eq!(t.get(&id("a")).map(|n| n.state), Some(NodeState::Running));
        assert_eq!(t.count(NodeState::Lost), 0);
    }

    #[test]
    fn excluded_nodes_are_refused_and_decommissioned() {
        let mut t = NodeTable::new(config(), HostLists::default());
        t.register(reg("a"), false, 0);
        t.register(reg("b"), false, 0);
        let lists = HostLists {
            include: Default::default(),
            exclude: parse_list("a"),
        };
        t.refresh(lists, Decommission::Normal, 10);
        assert_eq!(
            t.get(&id("a")).map(|n| n.state),
            Some(NodeState::Decommissioned)
        );
        assert_eq!(t.get(&id("b")).map(|n| n.state), Some(NodeState::Running));
        assert_eq!(t.heartbeat(hb("a", 0), 20).action, NodeAction::Shutdown);
        assert!(matches!(
            t.register(reg("a"), false, 30),
            RegisterOutcome::Rejected(_)
        ));
    }

    #[test]
    fn graceful_decommission_waits_for_containers() {
        let mut t = NodeTable::new(config(), HostLists::default());
        t.register(reg("a"), false, 0);
        let mut busy = hb("a", 0);
        busy.num_containers = 2;
        t.heartbeat(busy, 1);
        let lists = HostLists {
            include: Default::default(),
            exclude: parse_list("a"),
        };
        t.refresh(
            lists,
            Decommission::Graceful {
                timeout_ms: Some(100),
            },
            2,
        );
        assert_eq!(
            t.get(&id("a")).map(|n| n.state),
            Some(NodeState::Decommissioning)
        );
        let mut still_busy = hb("a", 1);
        still_busy.num_containers = 1;
        assert_eq!(t.heartbeat(still_busy, 50).action, NodeAction::Normal);
        // Containers done: the next heartbeat shuts it down.
        let r = t.heartbeat(hb("a", 2), 60);
        assert_eq!(r.action, NodeAction::Shutdown);
        assert_eq!(
            t.get(&id("a")).map(|n| n.state),
            Some(NodeState::Decommissioned)
        );
    }

    /// As Hadoop's ReconnectNodeTransition: a decommissioning node that
    /// registers again (it restarted) keeps decommissioning while it
    /// reports running applications, and is decommissioned when it reports
    /// none; the host lists that exclude it do not refuse it meanwhile.
    #[test]
    fn a_decommissioning_node_registering_again_without_applications_is_decommissioned() {
        let mut t = NodeTable::new(config(), HostLists::default());
        t.register(reg("a"), false, 0);
        let mut busy = hb("a", 0);
        busy.num_containers = 1;
        t.heartbeat(busy, 1);
        let lists = HostLists {
            include: Default::default(),
            exclude: parse_list("a"),
        };
        t.refresh(lists, Decommission::Graceful { timeout_ms: None }, 2);
        let state = |t: &NodeTable| t.get(&id("a")).map(|n| n.state);
        assert_eq!(state(&t), Some(NodeState::Decommissioning));
        // With running applications: a reconnect, still decommissioning.
        assert_eq!(t.register(reg("a"), true, 3), RegisterOutcome::Accepted);
        assert_eq!(state(&t), Some(NodeState::Decommissioning));
        // Without: decommissioned, and its next heartbeat is told to stop.
        assert_eq!(t.register(reg("a"), false, 4), RegisterOutcome::Accepted);
        assert_eq!(state(&t), Some(NodeState::Decommissioned));
        assert_eq!(t.heartbeat(hb("a", 0), 5).action, NodeAction::Shutdown);
        // Once decommissioned, the exclude list refuses it.
        assert!(matches!(
            t.register(reg("a"), false, 6),
            RegisterOutcome::Rejected(_)
        ));
    }

    #[test]
    fn graceful_timeout_forces_decommission() {
        let mut t = NodeTable::new(config(), HostLists::default());
        t.register(reg("a"), false, 0);
        let mut busy = hb("a", 0);
        busy.num_containers = 2;
        t.heartbeat(busy, 1);
        let lists = HostLists {
            include: Default::default(),
            exclude: parse_list("a"),
        };
        t.refresh(
            lists.clone(),
            Decommission::Graceful {
                timeout_ms: Some(100),
            },
            2,
        );
        let mut busy = hb("a", 1);
        busy.num_containers = 2;
        t.heartbeat(busy, 90);
        let expired = t.expire(150);
        assert_eq!(expired.decommissioned, vec![id("a")]);
        assert_eq!(
            t.get(&id("a")).map(|n| n.state),
            Some(NodeState::Decommissioned)
        );
    }

    #[test]
    fn small_nodes_are_refused() {
        let mut t = NodeTable::new(config(), HostLists::default());
        let mut r = reg("tiny");
        r.capability = Resource::new(512, 1);
        match t.register(r, false, 0) {
            RegisterOutcome::Rejected(msg) => assert!(msg.contains("minimum"), "{msg}"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn recommission_returns_to_running() {
        let mut t = NodeTable::new(config(), HostLists::default());
        t.register(reg("a"), false, 0);
        let excl = HostLists {
            include: Default::default(),
            exclude: parse_list("a"),
        };
        let mut busy = hb("a", 0);
        busy.num_containers = 1;
        t.heartbeat(busy, 1);
        t.refresh(excl, Decommission::Graceful { timeout_ms: None }, 2);
        t.refresh(HostLists::default(), Decommission::Normal, 3);
        assert_eq!(t.get(&id("a")).map(|n| n.state), Some(NodeState::Running));
    }
}
