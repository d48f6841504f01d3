//! Read-only views of the scheduler's state, for the RM's reports
//! (cluster metrics, node and queue listings, application reports).

use spindle_common::{ApplicationAttemptId, ContainerId, NodeId, Resource};

use crate::input::ResourceAsk;
use crate::output::Locality;
use crate::scheduler::Scheduler;

/// Cluster-wide totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterReport {
    pub nodes: usize,
    /// Nodes that are healthy and schedulable.
    pub schedulable_nodes: usize,
    pub capability: Resource,
    pub used: Resource,
    pub apps: usize,
    /// Attempts with outstanding asks.
    pub active_apps: usize,
    pub containers: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    pub id: NodeId,
    pub rack: String,
    pub capability: Resource,
    pub used: Resource,
    pub healthy: bool,
    pub schedulable: bool,
    pub containers: Vec<ContainerId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppReport {
    pub attempt: ApplicationAttemptId,
    pub queue: String,
    pub user: String,
    pub priority: i32,
    pub used: Resource,
    /// Still asked for: `*` counts times capabilities.
    pub pending: Resource,
    pub containers: Vec<ContainerId>,
    pub blacklist: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueReport {
    pub name: String,
    pub used: Resource,
    pub apps: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerReport {
    pub id: ContainerId,
    pub node: NodeId,
    pub resource: Resource,
    pub priority: i32,
    pub allocation_request_id: i64,
    pub locality: Locality,
    pub allocated_at_ms: u64,
}

impl Scheduler {
    pub fn cluster(&self) -> ClusterReport {
        ClusterReport {
            nodes: self.nodes.len(),
            schedulable_nodes: self.index.len(),
            capability: self.capacity,
            used: self.used,
            apps: self.apps.len(),
            active_apps: self.order.len(),
            containers: self.containers.len(),
        }
    }

    pub fn node(&self, id: &NodeId) -> Option<NodeReport> {
        let n = self.nodes.get(id)?;
        Some(NodeReport {
            id: id.clone(),
            rack: n.rack.clone(),
            capability: n.capability,
            used: n.used,
            healthy: n.healthy,
            schedulable: n.schedulable,
            containers: n.containers.iter().copied().collect(),
        })
    }

    /// Every node, by node id.
    pub fn nodes(&self) -> Vec<NodeReport> {
        self.nodes.keys().filter_map(|id| self.node(id)).collect()
    }

    pub fn app(&self, attempt: &ApplicationAttemptId) -> Option<AppReport> {
        let a = self.apps.get(attempt)?;
        Some(AppReport {
            attempt: *attempt,
            queue: a.queue.clone(),
            user: a.user.clone(),
            priority: a.priority,
            used: a.used,
            pending: a.asks.pending(),
            containers: a.containers.iter().copied().collect(),
            blacklist: a.blacklist.iter().cloned().collect(),
        })
    }

    /// Every attempt, by attempt id.
    pub fn apps(&self) -> Vec<AppReport> {
        self.apps.keys().filter_map(|a| self.app(a)).collect()
    }

    /// Attempts in the order they are offered resources (those with
    /// outstanding asks only).
    pub fn serving_order(&self) -> Vec<ApplicationAttemptId> {
        self.order.iter().map(|e| e.2).collect()
    }

    /// The attempt's outstanding request rows (positive counts only), by
    /// priority, allocation request id, capability, then resource name;
    /// capabilities are normalized.
    pub fn asks(&self, attempt: &ApplicationAttemptId) -> Option<Vec<ResourceAsk>> {
        let a = self.apps.get(attempt)?;
        Some(
            a.asks
                .iter()
                .map(|(key, name, row)| ResourceAsk {
                    priority: key.priority,
                    resource_name: name.to_string(),
                    capability: key.capability(),
                    num_containers: i32::try_from(row.count).unwrap_or(i32::MAX),
                    relax_locality: row.relax_locality,
                    allocation_request_id: key.allocation_request_id,
                })
                .collect(),
        )
    }

    pub fn queue(&self, name: &str) -> Option<QueueReport> {
        let q = self.queues.get(name)?;
        Some(QueueReport {
            name: name.to_string(),
            used: q.used,
            apps: q.apps.len(),
        })
    }

    /// Queues that hold attempts, by name.
    pub fn queues(&self) -> Vec<QueueReport> {
        self.queues.keys().filter_map(|q| self.queue(q)).collect()
    }

    pub fn container(&self, id: &ContainerId) -> Option<ContainerReport> {
        let c = self.containers.get(id)?;
        Some(ContainerReport {
            id: *id,
            node: c.node.clone(),
            resource: c.resource,
            priority: c.priority,
            allocation_request_id: c.allocation_request_id,
            locality: c.locality,
            allocated_at_ms: c.allocated_at_ms,
        })
    }
}
