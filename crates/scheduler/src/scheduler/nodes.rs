//! Nodes: registration, heartbeats (capability, health and
//! schedulability changes, then placing or counting delay opportunities
//! on the node), removal with its containers lost, and the selection
//! indexes (all nodes, and per rack) a node sits in while it takes new
//! containers.

use std::collections::{BTreeMap, BTreeSet};

use spindle_common::{ContainerId, NodeId, Resource};

use super::{NodeState, Scheduler, MAX_RESOURCE_NAME_BYTES};
use crate::error::SchedulerError;
use crate::input::{NodeUpdate, ANY};
use crate::output::{exit_status, CompletionCause, Decisions};
use crate::policy::NodeView;

impl Scheduler {
    pub(super) fn add_node(
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

    pub(super) fn update_node(
        &mut self,
        id: NodeId,
        update: NodeUpdate,
    ) -> Result<Decisions, SchedulerError> {
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

    pub(super) fn remove_node(&mut self, id: &NodeId) -> Result<Decisions, SchedulerError> {
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
    pub(super) fn reindex_node(&mut self, id: &NodeId) {
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
}

fn remove_from_group<K: Ord + std::borrow::Borrow<str>>(
    groups: &mut BTreeMap<K, BTreeSet<NodeId>>,
    name: &str,
    id: &NodeId,
) {
    if let Some(set) = groups.get_mut(name) {
        set.remove(id);
        if set.is_empty() {
            groups.remove(name);
        }
    }
}
