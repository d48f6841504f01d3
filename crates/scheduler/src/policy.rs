//! The node selection seam: which node a container goes to
//! ([`NodeSelection`]: spread or packing). Who is served first is the
//! queue tree's business (FIFO, capacity or fair ordering of queues and
//! applications, see [`crate::QueueTreeConfig`]).
//!
//! Policies only compute sort keys; the core keeps the ordered indexes
//! (so every choice costs O(log n)), appends a unique id to every key (so
//! ties are broken the same way on every run) and commits the decisions.

use spindle_common::{NodeId, Resource};

use crate::config::{NodeSelectionKind, PackingConfig, SchedulerConfig};

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

    /// Called with the number of nodes taking containers whenever it
    /// changes (and once, with 0, when the scheduler starts). Answering
    /// `true` makes the core recompute the key of every indexed node, for
    /// a policy whose keys depend on the cluster's size; the default
    /// answers `false`.
    fn schedulable_nodes_changed(&mut self, count: usize) -> bool {
        let _ = count;
        false
    }

    /// Whether node heartbeats place containers on their own node. The
    /// default, `true`, is YARN's: a heartbeat offers its node to the
    /// applications in serving order. A policy whose order is the point of
    /// the placement answers `false`: then, as in Hadoop's fair scheduler
    /// with continuous scheduling, heartbeats place nothing (they still
    /// count delay-scheduling opportunities) and every container is placed
    /// by continuous passes ([`crate::Scheduler::schedule`]), in the
    /// policy's order. A driver using such a policy must run passes.
    fn places_on_heartbeats(&self) -> bool {
        true
    }

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

/// Container packing (after Qubole's scheduler for elastic clusters):
/// concentrate containers on few nodes so that the others become idle and
/// can be released.
///
/// Nodes fall in three classes by the fraction of their memory in use:
///
/// * **medium**, above 0 and below the high-memory threshold: offered
///   first, the highest usage first, so nearly empty nodes drain;
/// * **low**, nothing in use: offered next, in a random order drawn from
///   a seeded generator (a node gets a fresh draw each time it becomes
///   empty), so the same inputs and seed give the same placements;
/// * **high**, at or above the threshold: offered last, the lowest usage
///   first, so no node becomes a hot spot while others have room.
///
/// While packing is in force node heartbeats place nothing
/// ([`NodeSelection::places_on_heartbeats`]): every container is placed by
/// a continuous pass, which follows this order (node-local requests go to
/// the fullest of the hosts they name, and so on). This is how the
/// original runs too, on the fair scheduler with continuous scheduling,
/// where heartbeats do not schedule. Otherwise every heartbeat of an
/// empty node would take waiting containers there, whatever the order
/// says.
///
/// With fewer nodes taking containers than
/// [`PackingConfig::min_nodes`], the policy keys nodes exactly as
/// [`Spread`] does, and heartbeats place as under spread; crossing that
/// boundary re-keys every node.
#[derive(Debug, Clone)]
pub struct Packing {
    /// The threshold in millionths of node memory.
    threshold_ppm: i128,
    min_nodes: usize,
    /// Whether packing is in force (enough nodes).
    active: bool,
    rng: SplitMix64,
}

/// Class ranks of [`Packing`] keys (the `major` part).
const MEDIUM: i64 = 0;
const LOW: i64 = 1;
const HIGH: i64 = 2;

/// Usage is compared in billionths of node memory.
const USAGE_SCALE: i128 = 1_000_000_000;

impl Packing {
    pub fn new(config: &PackingConfig) -> Packing {
        // Validation keeps the threshold in (0, 1]; clamping keeps a
        // policy built from an unvalidated configuration sane.
        let ppm = (config.high_memory_threshold * 1_000_000.0).round();
        let threshold_ppm = if ppm.is_finite() {
            (ppm as i128).clamp(1, 1_000_000)
        } else {
            1_000_000
        };
        Packing {
            threshold_ppm,
            min_nodes: config.min_nodes,
            active: config.min_nodes == 0,
            rng: SplitMix64::new(config.seed),
        }
    }

    /// Whether packing is in force, rather than spread (too few nodes).
    pub fn is_active(&self) -> bool {
        self.active
    }
}

impl NodeSelection for Packing {
    fn name(&self) -> &'static str {
        "packing"
    }

    fn node_key(&mut self, node: &NodeView<'_>) -> SortKey {
        if !self.active {
            return Spread.node_key(node);
        }
        let capacity = i128::from(node.capability.memory_mb);
        let used = i128::from(node.used.memory_mb.max(0));
        if capacity <= 0 {
            // No memory to offer: after every node that has some.
            return SortKey::new(HIGH, i64::MAX);
        }
        if used == 0 {
            // Non-negative, so no draw collides with a sentinel.
            let draw = i64::try_from(self.rng.next_u64() >> 1).unwrap_or(i64::MAX);
            return SortKey::new(LOW, draw);
        }
        let usage = i64::try_from(used * USAGE_SCALE / capacity).unwrap_or(i64::MAX);
        if used * 1_000_000 >= self.threshold_ppm * capacity {
            SortKey::new(HIGH, usage)
        } else {
            SortKey::new(MEDIUM, -usage)
        }
    }

    fn schedulable_nodes_changed(&mut self, count: usize) -> bool {
        let active = count >= self.min_nodes;
        let changed = active != self.active;
        self.active = active;
        changed
    }

    fn places_on_heartbeats(&self) -> bool {
        // A heartbeat places on its own node whatever the order says, so
        // the heartbeats of empty nodes would scatter containers. Below
        // `min_nodes` the policy spreads, and heartbeats place as usual.
        !self.active
    }

    fn nothing_fits_after(&self, key: &SortKey, ask: &Resource) -> bool {
        // Packed keys say nothing about free room; spread keys do.
        !self.active && Spread.nothing_fits_after(key, ask)
    }
}

/// A small deterministic generator (Steele, Lea and Flood's SplitMix64):
/// enough to scatter empty nodes, and the same seed gives the same stream
/// on every platform.
#[derive(Debug, Clone)]
struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The node selection policy a configuration names, with its settings.
pub fn node_selection(config: &SchedulerConfig) -> Box<dyn NodeSelection> {
    match config.node_selection {
        NodeSelectionKind::Spread => Box::new(Spread),
        NodeSelectionKind::Packing => Box::new(Packing::new(&config.packing)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn packing(threshold: f64, min_nodes: usize, seed: u64) -> Packing {
        let mut p = Packing::new(&PackingConfig {
            high_memory_threshold: threshold,
            min_nodes,
            seed,
        });
        p.schedulable_nodes_changed(min_nodes);
        p
    }

    fn key_at(p: &mut Packing, used_mb: i64) -> SortKey {
        let id = NodeId::new("h", 1);
        p.node_key(&NodeView {
            id: &id,
            rack: "/r",
            capability: Resource::new(10240, 10),
            used: Resource::new(used_mb, 1),
        })
    }

    #[test]
    fn packing_classes_and_order() {
        let mut p = packing(0.8, 1, 7);
        assert!(p.is_active());
        let medium_low = key_at(&mut p, 1024);
        let medium_high = key_at(&mut p, 7168);
        let empty = key_at(&mut p, 0);
        let high_at_threshold = key_at(&mut p, 8192);
        let high_full = key_at(&mut p, 10240);
        assert_eq!(medium_high.major, MEDIUM);
        assert_eq!(empty.major, LOW);
        // The boundary belongs to high: 8 of 10 slots at 80% stops a node.
        assert_eq!(high_at_threshold.major, HIGH);
        assert!(medium_high < medium_low, "fuller medium nodes first");
        assert!(medium_low < empty, "medium before low");
        assert!(empty < high_at_threshold, "low before high");
        assert!(high_at_threshold < high_full, "emptier high nodes first");
        assert!(!p.nothing_fits_after(&medium_high, &Resource::new(1 << 40, 1)));
    }

    #[test]
    fn packing_threshold_is_exact() {
        // 60% of 10 000 MB is 6 000 MB: 5 999 is medium, 6 000 is high.
        let id = NodeId::new("h", 1);
        let mut p = packing(0.6, 0, 1);
        let mut class = |used_mb| {
            p.node_key(&NodeView {
                id: &id,
                rack: "/r",
                capability: Resource::new(10_000, 4),
                used: Resource::new(used_mb, 1),
            })
            .major
        };
        assert_eq!(class(5_999), MEDIUM);
        assert_eq!(class(6_000), HIGH);
        let mut full = packing(1.0, 0, 1);
        assert_eq!(key_at(&mut full, 10239).major, MEDIUM);
        assert_eq!(key_at(&mut full, 10240).major, HIGH);
    }

    #[test]
    fn packing_draws_are_seeded() {
        let draws = |seed| {
            let mut p = packing(0.6, 0, seed);
            (0..8).map(|_| key_at(&mut p, 0)).collect::<Vec<_>>()
        };
        assert_eq!(draws(42), draws(42));
        assert_ne!(draws(42), draws(43));
        assert!(draws(42).iter().all(|k| k.major == LOW && k.minor >= 0));
    }

    #[test]
    fn packing_below_min_nodes_is_spread() {
        let mut p = Packing::new(&PackingConfig {
            high_memory_threshold: 0.8,
            min_nodes: 3,
            seed: 0,
        });
        assert!(!p.is_active());
        assert_eq!(
            key_at(&mut p, 2048),
            Spread.node_key(&NodeView {
                id: &NodeId::new("h", 1),
                rack: "/r",
                capability: Resource::new(10240, 10),
                used: Resource::new(2048, 1),
            })
        );
        assert!(!p.schedulable_nodes_changed(2));
        assert!(p.schedulable_nodes_changed(3));
        assert!(p.is_active());
        assert!(!p.schedulable_nodes_changed(4));
        assert!(p.schedulable_nodes_changed(2));
        assert!(!p.is_active());
        let spread_key = key_at(&mut p, 2048);
        assert!(p.nothing_fits_after(&spread_key, &Resource::new(9216, 1)));
        assert!(!p.nothing_fits_after(&spread_key, &Resource::new(8192, 1)));
    }
}
