//! The policy seams: who is served first ([`OrderingPolicy`]) and which
//! node a container goes to ([`NodeSelection`]).
//!
//! Policies only compute sort keys; the core keeps the ordered indexes
//! (so every choice costs O(log n)), appends a unique id to every key (so
//! ties are broken the same way on every run) and commits the decisions.

use spindle_common::{ApplicationAttemptId, NodeId, Resource};

use crate::config::{NodeSelectionKind, OrderingPolicyKind};

/// A policy's sort key; smaller sorts first. Compared as (`major`,
/// `minor`); the core appends a unique id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SortKey {
    pub major: i64,
    pub minor: i64,
}

impl SortKey {
    pub const fn new(major: i64, minor: i64) -> SortKey {
        SortKey { major, minor }
    }
}

/// What an ordering policy may look at for a queue.
#[derive(Debug, Clone, Copy)]
pub struct QueueView<'a> {
    pub name: &'a str,
    /// Resources held by the queue's containers.
    pub used: Resource,
    /// Applications in the queue.
    pub apps: usize,
}

/// What an ordering policy may look at for an application attempt.
#[derive(Debug, Clone, Copy)]
pub struct AppView<'a> {
    pub attempt: ApplicationAttemptId,
    pub queue: &'a str,
    pub user: &'a str,
    /// Application priority: higher is more important.
    pub priority: i32,
    /// Order of arrival at the scheduler, from 0.
    pub submission_seq: u64,
    /// Resources held by the attempt's containers.
    pub used: Resource,
    /// Resources still asked for (`*` counts times capabilities).
    pub pending: Resource,
}

/// Decides the order in which applications are offered resources.
///
/// Applications are served in ascending (queue key, application key,
/// attempt id) order. Queues with equal keys are therefore interleaved by
/// application key, which is how FIFO orders all applications of all
/// queues as one list.
pub trait OrderingPolicy: std::fmt::Debug + Send {
    fn name(&self) -> &'static str;

    /// Where the queue's applications sort relative to other queues'.
    fn queue_key(&self, queue: &QueueView<'_>) -> SortKey;

    /// Where the application sorts within its queue's key.
    fn app_key(&self, app: &AppView<'_>) -> SortKey;

    /// Whether the keys depend on usage, so the core must recompute them
    /// whenever an allocation or completion changes a queue's or an
    /// application's usage. Keys of a policy answering `false` are
    /// computed once when the application arrives.
    fn keys_depend_on_usage(&self) -> bool;
}

/// First in, first out, like YARN's FIFO ordering policy: higher
/// application priority first, then the order applications arrived in,
/// across all queues.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fifo;

impl OrderingPolicy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }

    fn queue_key(&self, _queue: &QueueView<'_>) -> SortKey {
        SortKey::default()
    }

    fn app_key(&self, app: &AppView<'_>) -> SortKey {
        SortKey::new(
            -i64::from(app.priority),
            i64::try_from(app.submission_seq).unwrap_or(i64::MAX),
        )
    }

    fn keys_depend_on_usage(&self) -> bool {
        false
    }
}

/// What a node selection policy may look at for a node.
#[derive(Debug, Clone, Copy)]
pub struct NodeView<'a> {
    pub id: &'a NodeId,
    pub rack: &'a str,
    pub capability: Resource,
    pub used: Resource,
}

impl NodeView<'_> {
    /// Capability minus usage, never below zero.
    pub fn available(&self) -> Resource {
        self.capability.saturating_sub_non_negative(self.used)
    }
}

/// Decides which of several suitable nodes gets a container.
///
/// The core keeps the schedulable nodes of the cluster and of each rack
/// in (key, node id) order and offers them in that order; the first one
/// that fits and that the request's locality rules allow wins. Keys are
/// recomputed whenever a node's usage or capability changes; the core
/// remembers the key a node was indexed under, so a key may come from a
/// seeded random source.
pub trait NodeSelection: std::fmt::Debug + Send {
    fn name(&self) -> &'static str;

    fn node_key(&mut self, node: &NodeView<'_>) -> SortKey;

    /// Whether no node at or after `key` in the order can fit `ask`, so
    /// the search can stop early. Answering `false` is always correct.
    fn nothing_fits_after(&self, key: &SortKey, ask: &Resource) -> bool {
        let _ = (key, ask);
        false
    }
}

/// Spread: the node with the most unallocated memory first, then the most
/// unallocated vcores, so containers spread evenly over the cluster (the
/// least-used node wins; on a homogeneous cluster that is also the node
/// with the lowest utilization).
///
/// Ordering by what is free rather than by a utilization ratio makes the
/// head of the order the node with the most free memory: if the ask's
/// memory does not fit there it fits nowhere, and the search stops after
/// one look.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spread;

impl NodeSelection for Spread {
    fn name(&self) -> &'static str {
        "spread"
    }

    fn node_key(&mut self, node: &NodeView<'_>) -> SortKey {
        let free = node.available();
        SortKey::new(-free.memory_mb, -i64::from(free.vcores))
    }

    fn nothing_fits_after(&self, key: &SortKey, ask: &Resource) -> bool {
        // Nodes are ordered by decreasing free memory.
        key.major.saturating_neg() < ask.memory_mb
    }
}

/// The ordering policy a configuration names.
pub fn ordering_policy(kind: OrderingPolicyKind) -> Box<dyn OrderingPolicy> {
    match kind {
        OrderingPolicyKind::Fifo => Box::new(Fifo),
    }
}

/// The node selection policy a configuration names.
pub fn node_selection(kind: NodeSelectionKind) -> Box<dyn NodeSelection> {
    match kind {
        NodeSelectionKind::Spread => Box::new(Spread),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_common::ApplicationId;

    #[test]
    fn fifo_orders_by_priority_then_arrival() {
        let view = |priority, submission_seq| AppView {
            attempt: ApplicationAttemptId::new(ApplicationId::new(1, 1), 1),
            queue: "default",
            user: "u",
            priority,
            submission_seq,
            used: Resource::ZERO,
            pending: Resource::ZERO,
        };
        let f = Fifo;
        assert!(f.app_key(&view(0, 1)) < f.app_key(&view(0, 2)));
        assert!(f.app_key(&view(5, 9)) < f.app_key(&view(0, 1)));
        let q = |name| QueueView {
            name,
            used: Resource::new(5, 5),
            apps: 3,
        };
        assert_eq!(f.queue_key(&q("a")), f.queue_key(&q("b")));
        assert!(!f.keys_depend_on_usage());
    }

    #[test]
    fn spread_prefers_the_most_free_node_and_stops_early() {
        let id = NodeId::new("h", 1);
        let node = |used_mb| NodeView {
            id: &id,
            rack: "/r",
            capability: Resource::new(8192, 8),
            used: Resource::new(used_mb, 1),
        };
        let mut s = Spread;
        let idle = s.node_key(&node(0));
        let busy = s.node_key(&node(6144));
        assert!(idle < busy);
        assert!(!s.nothing_fits_after(&busy, &Resource::new(2048, 1)));
        assert!(s.nothing_fits_after(&busy, &Resource::new(3072, 1)));
    }
}
