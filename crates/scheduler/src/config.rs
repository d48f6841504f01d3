//! Scheduler configuration: policy names, allocation bounds and [`Limits`].

use std::fmt;
use std::str::FromStr;

use spindle_common::Resource;

use crate::queue_config::{HeartbeatAssignment, LocalityDelay, QueueTreeConfig};

/// Largest RM epoch that fits in a container id: the id is a signed 64-bit
/// number whose low 40 bits hold the sequence, leaving 23 bits for the epoch.
pub const MAX_EPOCH: i64 = (1 << 23) - 1;

/// Why a configuration was rejected at start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A policy name that no implementation answers to. Unknown names are
    /// never replaced by a default.
    #[error("unknown {what} '{name}'; known: {known}")]
    UnknownPolicy {
        what: &'static str,
        name: String,
        known: &'static str,
    },
    /// A value out of its allowed range.
    #[error("invalid scheduler setting {key} = {value}: {reason}")]
    Invalid {
        key: &'static str,
        value: String,
        reason: String,
    },
}

/// Which node a container goes to when several would do. See
/// [`crate::policy::NodeSelection`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeSelectionKind {
    /// The node with the most unallocated memory (then vcores) first, so
    /// load spreads evenly as YARN does by default.
    #[default]
    Spread,
    /// Container packing: partly used nodes first (fullest first), then
    /// empty nodes in a seeded random order, then nodes at or above the
    /// high-memory threshold (least used first), so that idle nodes stay
    /// idle and can be released. See [`PackingConfig`].
    Packing,
}

impl NodeSelectionKind {
    /// Names accepted by [`FromStr`].
    pub const KNOWN: &'static str = "spread, packing";

    pub fn name(self) -> &'static str {
        match self {
            NodeSelectionKind::Spread => "spread",
            NodeSelectionKind::Packing => "packing",
        }
    }
}

impl fmt::Display for NodeSelectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NodeSelectionKind {
    type Err = ConfigError;

    /// Case-insensitive, surrounding whitespace ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "spread" => Ok(NodeSelectionKind::Spread),
            "packing" => Ok(NodeSelectionKind::Packing),
            _ => Err(ConfigError::UnknownPolicy {
                what: "node selection policy",
                name: s.to_string(),
                known: Self::KNOWN,
            }),
        }
    }
}

/// Settings of the packing node selection policy
/// ([`NodeSelectionKind::Packing`]); ignored by the other policies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PackingConfig {
    /// Fraction of a node's memory in use at or above which the node is a
    /// high-usage node and is only chosen when no partly used or empty
    /// node fits. In (0, 1]; default 0.6.
    pub high_memory_threshold: f64,
    /// Packing applies only while at least this many nodes take
    /// containers; with fewer, nodes are chosen as by spread. Default 5;
    /// 0 packs always.
    pub min_nodes: usize,
    /// Seed of the random order among empty nodes; the same seed and the
    /// same inputs give the same placements. Default 0.
    pub seed: u64,
}

impl PackingConfig {
    pub const DEFAULT_HIGH_MEMORY_THRESHOLD: f64 = 0.6;
    pub const DEFAULT_MIN_NODES: usize = 5;
}

impl Default for PackingConfig {
    fn default() -> Self {
        PackingConfig {
            high_memory_threshold: Self::DEFAULT_HIGH_MEMORY_THRESHOLD,
            min_nodes: Self::DEFAULT_MIN_NODES,
            seed: 0,
        }
    }
}

/// Named bounds on the scheduler's state and work. Going over a state
/// bound (nodes, applications, asks, blacklist) makes the offending input
/// fail with [`crate::SchedulerError::LimitExceeded`] and leaves the state
/// untouched; the work bounds cap how much one call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Registered nodes. Default 100 000: well above the largest YARN
    /// clusters, low enough that a runaway registration loop is stopped.
    pub max_nodes: usize,
    /// Applications (attempts) known to the scheduler at once. Default
    /// 100 000, ten times Hadoop's default cap on pending + running
    /// applications.
    pub max_apps: usize,
    /// Outstanding rows (distinct priority / request id / capability /
    /// location with a non-zero count) in one attempt's request table.
    /// Default 100 000: a job reading from every host of a 10 000-node
    /// cluster at a few priorities fits; an AM sending garbage does not.
    pub max_asks_per_app: usize,
    /// Host or rack names on one attempt's blacklist. Default 10 000.
    pub max_blacklist_per_app: usize,
    /// Containers handed out by one [`crate::Scheduler::schedule`] call or
    /// one node heartbeat. Default 1 000, so one pass stays short and
    /// other inputs are not held up behind it.
    pub max_containers_per_pass: usize,
    /// Request rows and nodes examined in each locality phase (node-local,
    /// rack-local, off-switch) when a continuous pass looks for a home for
    /// one container; past it the phase gives up and the request waits
    /// for a later pass or a heartbeat of a suitable node. Default 1 000.
    /// With the spread policy the first node examined nearly always
    /// decides the rack-local and off-switch phases.
    pub max_candidates_per_pick: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_nodes: 100_000,
            max_apps: 100_000,
            max_asks_per_app: 100_000,
            max_blacklist_per_app: 10_000,
            max_containers_per_pass: 1_000,
            max_candidates_per_pick: 1_000,
        }
    }
}

/// Everything the scheduler core is configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfig {
    /// The queue tree and whose semantics it follows (FIFO, capacity,
    /// fair); replaced at run time by [`crate::Input::QueuesReconfigured`].
    pub queues: QueueTreeConfig,
    /// Delay scheduling rule; replaced by
    /// [`crate::Input::QueuesReconfigured`] too.
    pub locality: LocalityDelay,
    /// Caps on containers per node heartbeat; replaced by
    /// [`crate::Input::QueuesReconfigured`] too.
    pub heartbeat: HeartbeatAssignment,
    pub node_selection: NodeSelectionKind,
    /// Used when `node_selection` is [`NodeSelectionKind::Packing`]
    /// (validated whatever the policy).
    pub packing: PackingConfig,
    /// Smallest container; every ask is rounded up to a multiple of it
    /// (Hadoop: `yarn.scheduler.minimum-allocation-mb` / `-vcores`,
    /// defaults 1024 MB and 1 vcore).
    pub minimum_allocation: Resource,
    /// Largest container; an ask above it is rejected (Hadoop:
    /// `yarn.scheduler.maximum-allocation-mb` / `-vcores`, defaults 8192 MB
    /// and 4 vcores).
    pub maximum_allocation: Resource,
    /// The RM epoch (restart count) stamped into the high bits of every
    /// container id; 0 for an RM without recovery.
    pub epoch: i64,
    pub limits: Limits,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            queues: QueueTreeConfig::default(),
            locality: LocalityDelay::default(),
            heartbeat: HeartbeatAssignment::default(),
            node_selection: NodeSelectionKind::default(),
            packing: PackingConfig::default(),
            minimum_allocation: Resource::new(1024, 1),
            maximum_allocation: Resource::new(8192, 4),
            epoch: 0,
            limits: Limits::default(),
        }
    }
}

impl SchedulerConfig {
    /// Checks every value; the scheduler refuses to start with a bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let min = self.minimum_allocation;
        let max = self.maximum_allocation;
        if min.memory_mb <= 0 || min.vcores <= 0 {
            return Err(ConfigError::Invalid {
                key: "minimum_allocation",
                value: min.to_string(),
                reason: "memory and vcores must both be positive".into(),
            });
        }
        if !min.fits_in(&max) {
            return Err(ConfigError::Invalid {
                key: "maximum_allocation",
                value: max.to_string(),
                reason: format!("must be at least the minimum allocation {min}"),
            });
        }
        if !(0..=MAX_EPOCH).contains(&self.epoch) {
            return Err(ConfigError::Invalid {
                key: "epoch",
                value: self.epoch.to_string(),
                reason: format!("must be between 0 and {MAX_EPOCH}"),
            });
        }
        let threshold = self.packing.high_memory_threshold;
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(ConfigError::Invalid {
                key: "packing.high_memory_threshold",
                value: threshold.to_string(),
                reason: "must be a fraction of node memory above 0 and at most 1".into(),
            });
        }
        validate_locality(&self.locality)?;
        validate_heartbeat(&self.heartbeat)?;
        let l = &self.limits;
        for (key, value) in [
            ("limits.max_nodes", l.max_nodes),
            ("limits.max_apps", l.max_apps),
            ("limits.max_asks_per_app", l.max_asks_per_app),
            ("limits.max_blacklist_per_app", l.max_blacklist_per_app),
            ("limits.max_containers_per_pass", l.max_containers_per_pass),
            ("limits.max_candidates_per_pick", l.max_candidates_per_pick),
        ] {
            if value == 0 {
                return Err(ConfigError::Invalid {
                    key,
                    value: "0".into(),
                    reason: "must be at least 1".into(),
                });
            }
        }
        Ok(())
    }
}

/// Checks a delay-scheduling rule (at start-up and on reconfiguration).
pub(crate) fn validate_locality(locality: &LocalityDelay) -> Result<(), ConfigError> {
    match *locality {
        LocalityDelay::Fair {
            node_threshold,
            rack_threshold,
        } if node_threshold.is_nan() || rack_threshold.is_nan() => Err(ConfigError::Invalid {
            key: "locality",
            value: format!("{node_threshold}/{rack_threshold}"),
            reason: "locality thresholds must be numbers".into(),
        }),
        _ => Ok(()),
    }
}

/// Checks per-heartbeat caps (at start-up and on reconfiguration).
pub(crate) fn validate_heartbeat(heartbeat: &HeartbeatAssignment) -> Result<(), ConfigError> {
    if heartbeat.max_containers == Some(0) || heartbeat.max_off_switch == Some(0) {
        return Err(ConfigError::Invalid {
            key: "heartbeat",
            value: "0".into(),
            reason: "per-heartbeat caps must be at least 1 (or unset)".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names() {
        assert_eq!(
            "spread".parse::<NodeSelectionKind>(),
            Ok(NodeSelectionKind::Spread)
        );
        assert_eq!(
            " Packing".parse::<NodeSelectionKind>(),
            Ok(NodeSelectionKind::Packing)
        );
        let err = "packed"
            .parse::<NodeSelectionKind>()
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("unknown node selection policy 'packed'; known: spread, packing")
        );
    }

    #[test]
    fn validation() {
        assert_eq!(SchedulerConfig::default().validate(), Ok(()));
        let mut c = SchedulerConfig {
            minimum_allocation: Resource::new(0, 1),
            ..SchedulerConfig::default()
        };
        assert!(c.validate().is_err());
        c.minimum_allocation = Resource::new(2048, 1);
        c.maximum_allocation = Resource::new(1024, 4);
        assert!(c.validate().is_err());
        c.maximum_allocation = Resource::new(4096, 4);
        assert_eq!(c.validate(), Ok(()));
        c.epoch = MAX_EPOCH + 1;
        assert!(c.validate().is_err());
        c.epoch = 3;
        c.limits.max_containers_per_pass = 0;
        let msg = c.validate().err().map(|e| e.to_string());
        assert_eq!(
            msg.as_deref(),
            Some(
                "invalid scheduler setting limits.max_containers_per_pass = 0: must be at least 1"
            )
        );
    }

    #[test]
    fn packing_threshold_must_be_a_fraction() {
        let with = |t: f64| SchedulerConfig {
            packing: PackingConfig {
                high_memory_threshold: t,
                ..PackingConfig::default()
            },
            ..SchedulerConfig::default()
        };
        for good in [1.0, 0.8, 0.6, 1e-6] {
            assert_eq!(with(good).validate(), Ok(()), "{good}");
        }
        for bad in [0.0, -0.5, 1.01, 80.0, f64::NAN, f64::INFINITY] {
            assert!(with(bad).validate().is_err(), "{bad}");
        }
        let msg = with(0.0).validate().err().map(|e| e.to_string());
        assert_eq!(
            msg.as_deref(),
            Some(
                "invalid scheduler setting packing.high_memory_threshold = 0: must be a fraction of node memory above 0 and at most 1"
            )
        );
    }
}
