//! Read-only views of the scheduler's state, for the RM's reports
//! (cluster metrics, node and queue listings, application reports).

use spindle_common::{ApplicationAttemptId, ContainerId, NodeId, Resource};

use crate::input::ResourceAsk;
use crate::output::Locality;
use crate::queue_config::{AppOrdering, QueueRunState, QueueShare, SchedulerKind};
use crate::scheduler::Scheduler;
use crate::tree::{QueueIdx, ROOT};

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

/// One queue of the tree, with its entitlements and usage.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueReport {
    /// Full path (`root.a.b`).
    pub path: String,
    /// Short name (`b`).
    pub name: String,
    pub leaf: bool,
    pub state: QueueRunState,
    /// Configured share of the parent: capacity percent / 100, or for the
    /// fair scheduler the weight's fraction of the siblings' weights.
    pub capacity: f64,
    /// Configured maximum share of the parent (capacity scheduler), or
    /// `maxResources` over the parent's maximum (fair).
    pub maximum_capacity: f64,
    /// `guaranteed` over the cluster.
    pub absolute_capacity: f64,
    /// `maximum` over the cluster.
    pub absolute_maximum_capacity: f64,
    /// Absolute guarantee (capacity share or steady fair share).
    pub guaranteed: Resource,
    pub maximum: Resource,
    /// Fair scheduler `minResources`.
    pub min_share: Resource,
    pub used: Resource,
    /// `used` over `guaranteed` (Hadoop's "current capacity"; above 1 when
    /// the queue has grown past its guarantee).
    pub current_capacity: f64,
    /// Held by the AM containers of the subtree's applications.
    pub am_used: Resource,
    /// Applications (attempts) in the subtree.
    pub apps: usize,
    /// Of those, counted as running (not held back by a running limit).
    pub running_apps: usize,
    /// Fair scheduler weight.
    pub weight: Option<f64>,
    pub max_running_apps: Option<usize>,
    pub ordering: AppOrdering,
    /// Full paths of the child queues.
    pub children: Vec<String>,
    /// Created on demand by placement.
    pub dynamic: bool,
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
            active_apps: self
                .apps
                .values()
                .filter(|a| a.active_key.is_some())
                .count(),
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

    /// What `attempt` may still be given now, as Hadoop tells an AM in each
    /// allocate answer (`CapacityHeadroomProvider`, `FSAppAttempt.getHeadroom`):
    /// the cluster's free resources, no more than the room below the
    /// maximum of every queue on the attempt's path, and under the capacity
    /// scheduler no more than what its user may still take below the user
    /// limit. Never negative; `None` for an unknown attempt.
    pub fn headroom(&self, attempt: &ApplicationAttemptId) -> Option<Resource> {
        let app = self.apps.get(attempt)?;
        let mut room = self.capacity.saturating_sub_non_negative(self.used);
        for idx in self.tree.path_up(app.leaf) {
            let q = &self.tree.queues[idx];
            room = room.component_min(q.maximum.saturating_sub_non_negative(q.used));
        }
        if self.tree.kind() == SchedulerKind::Capacity {
            let q = &self.tree.queues[app.leaf];
            let user_used = q.users.get(&app.user).map_or(Resource::ZERO, |u| u.used);
            let limit = self
                .tree
                .user_limit(app.leaf, self.config.minimum_allocation);
            room = room.component_min(limit.saturating_sub_non_negative(user_used));
        }
        Some(room)
    }

    /// Every attempt, by attempt id.
    pub fn apps(&self) -> Vec<AppReport> {
        self.apps.keys().filter_map(|a| self.app(a)).collect()
    }

    /// Attempts in the order they would be offered resources now (those
    /// runnable with outstanding asks only), walking the queue tree in its
    /// serving order.
    pub fn serving_order(&self) -> Vec<ApplicationAttemptId> {
        let mut out = Vec::new();
        let mut stack = vec![ROOT];
        while let Some(idx) = stack.pop() {
            let q = &self.tree.queues[idx];
            if q.is_leaf() {
                out.extend(q.active_apps.iter().map(|&(_, a)| a));
            } else {
                stack.extend(q.active_children.iter().rev().map(|&(_, c)| c));
            }
        }
        out
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

    /// A queue by full path, or by short name when no other queue has it.
    pub fn queue(&self, name: &str) -> Option<QueueReport> {
        let idx = self.tree.find(name, false).ok()?;
        Some(self.queue_report(idx))
    }

    /// Every queue, parents before their children.
    pub fn queues(&self) -> Vec<QueueReport> {
        (0..self.tree.queues.len())
            .map(|i| self.queue_report(i))
            .collect()
    }

    fn queue_report(&self, idx: QueueIdx) -> QueueReport {
        let tree = &self.tree;
        let q = &tree.queues[idx];
        let cluster = tree.cluster;
        let frac = |a: Resource, b: Resource| {
            if b.memory_mb > 0 {
                a.memory_mb as f64 / b.memory_mb as f64
            } else {
                0.0
            }
        };
        let (capacity, maximum_capacity, weight) = match q.settings.share {
            QueueShare::Capacity {
                capacity_pct,
                maximum_pct,
            } => (capacity_pct / 100.0, maximum_pct / 100.0, None),
            QueueShare::Fair { weight, .. } => {
                let parent = q.parent.map(|p| &tree.queues[p]);
                let share = parent.map_or(1.0, |p| frac(q.guaranteed, p.guaranteed));
                let max = parent.map_or(1.0, |p| frac(q.maximum, p.maximum));
                (share, max, Some(weight))
            }
        };
        let apps = self
            .apps
            .values()
            .filter(|a| tree.ancestry(a.leaf).contains(&idx))
            .count();
        QueueReport {
            path: q.path.clone(),
            name: q.path.rsplit('.').next().unwrap_or(&q.path).to_string(),
            leaf: q.is_leaf(),
            state: q.settings.state,
            capacity,
            maximum_capacity,
            absolute_capacity: frac(q.guaranteed, cluster),
            absolute_maximum_capacity: frac(q.maximum, cluster),
            guaranteed: q.guaranteed,
            maximum: q.maximum,
            min_share: q.min_share,
            used: q.used,
            current_capacity: frac(q.used, q.guaranteed),
            am_used: self.subtree_am_used(idx),
            apps,
            running_apps: q.running_apps,
            weight,
            max_running_apps: q.settings.max_running_apps,
            ordering: q.settings.ordering,
            children: q
                .children
                .iter()
                .map(|&c| tree.queues[c].path.clone())
                .collect(),
            dynamic: q.dynamic,
        }
    }

    /// AM usage of a queue: its own for a leaf, its leaves' for a parent.
    fn subtree_am_used(&self, idx: QueueIdx) -> Resource {
        let q = &self.tree.queues[idx];
        if q.is_leaf() {
            return q.am_used;
        }
        q.children.iter().map(|&c| self.subtree_am_used(c)).sum()
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
