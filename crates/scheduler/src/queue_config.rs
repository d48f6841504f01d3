//! The queue tree the core schedules over, as plain data.
//!
//! The RM builds a [`QueueTreeConfig`] from Hadoop's own files
//! (`capacity-scheduler.xml` for the capacity scheduler, the fair
//! scheduler's allocation file, or nothing for FIFO) and hands it to the
//! core at start-up ([`crate::SchedulerConfig::queues`]) and on every
//! `refreshQueues` ([`crate::Input::QueuesReconfigured`]). Parsing, ACLs,
//! queue placement and admission (STOPPED queues, `maximum-applications`)
//! stay in the RM; this module only says what the core needs to order
//! queues and applications and to enforce limits while allocating.

use std::collections::BTreeMap;
use std::fmt;

use spindle_common::Resource;

/// Whose semantics the queue tree follows: Hadoop's three schedulers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchedulerKind {
    /// One queue (`root.default`); applications in priority, then arrival
    /// order (Hadoop's `FifoScheduler`).
    #[default]
    Fifo,
    /// Guaranteed capacities with elasticity up to maximum capacities,
    /// user limits, AM limits (Hadoop's `CapacityScheduler`).
    Capacity,
    /// Weighted fair shares with minimum and maximum resources, running-app
    /// limits and DRF (Hadoop's `FairScheduler`).
    Fair,
}

impl SchedulerKind {
    /// Hadoop's class names for the three schedulers, as
    /// `yarn.resourcemanager.scheduler.class` takes them.
    pub const FIFO_CLASS: &'static str =
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler";
    pub const CAPACITY_CLASS: &'static str =
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler";
    pub const FAIR_CLASS: &'static str =
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler";

    /// The scheduler a Hadoop class name selects (surrounding whitespace
    /// ignored); `None` for any other name.
    pub fn from_class_name(class: &str) -> Option<SchedulerKind> {
        match class.trim() {
            Self::FIFO_CLASS => Some(SchedulerKind::Fifo),
            Self::CAPACITY_CLASS => Some(SchedulerKind::Capacity),
            Self::FAIR_CLASS => Some(SchedulerKind::Fair),
            _ => None,
        }
    }

    pub fn class_name(self) -> &'static str {
        match self {
            SchedulerKind::Fifo => Self::FIFO_CLASS,
            SchedulerKind::Capacity => Self::CAPACITY_CLASS,
            SchedulerKind::Fair => Self::FAIR_CLASS,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::Fifo => "fifo",
            SchedulerKind::Capacity => "capacity",
            SchedulerKind::Fair => "fair",
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How resources are compared when ordering queues and applications and
/// checking limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResourceCalculatorKind {
    /// Memory only (Hadoop's `DefaultResourceCalculator`); vcores are
    /// still checked against node capacity.
    #[default]
    Memory,
    /// The larger of the memory and vcore fractions of the cluster
    /// (Hadoop's `DominantResourceCalculator`).
    Dominant,
}

/// A queue's administrative state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueRunState {
    #[default]
    Running,
    /// Takes no new applications; those already in it run to completion.
    Stopped,
}

impl QueueRunState {
    /// Hadoop's spelling (`RUNNING`, `STOPPED`).
    pub fn name(self) -> &'static str {
        match self {
            QueueRunState::Running => "RUNNING",
            QueueRunState::Stopped => "STOPPED",
        }
    }
}

/// How a queue orders what it serves: its applications (leaf queues of
/// every kind) or, in the fair scheduler, its child queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AppOrdering {
    /// Higher application priority first, then arrival order.
    #[default]
    Fifo,
    /// Least memory in use first (capacity `ordering-policy` `fair`, fair
    /// scheduler `schedulingPolicy` `fair`); the fair scheduler's variant
    /// also serves queues below their minimum share first and divides
    /// usage by weight.
    Fair,
    /// Dominant resource fairness: smallest dominant share (over weight)
    /// first (fair scheduler `schedulingPolicy` `drf`).
    Drf,
}

impl AppOrdering {
    pub fn name(self) -> &'static str {
        match self {
            AppOrdering::Fifo => "fifo",
            AppOrdering::Fair => "fair",
            AppOrdering::Drf => "drf",
        }
    }
}

/// An amount of resources given either absolutely or as a share of the
/// cluster (the fair scheduler's `minResources` / `maxResources` forms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResourceBound {
    Absolute(Resource),
    /// Percentages of the cluster's memory and vcores, each in 0..=100.
    Percent {
        memory: f64,
        vcores: f64,
    },
}

impl ResourceBound {
    /// The bound on a cluster of `cluster` resources.
    pub fn resolve(&self, cluster: Resource) -> Resource {
        match *self {
            ResourceBound::Absolute(r) => r,
            ResourceBound::Percent { memory, vcores } => Resource::new(
                (cluster.memory_mb as f64 * memory / 100.0).floor() as i64,
                (f64::from(cluster.vcores) * vcores / 100.0).floor() as i32,
            ),
        }
    }
}

/// What a queue is entitled to relative to its siblings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueShare {
    /// Capacity scheduler: `capacity` and `maximum-capacity`, percent of
    /// the parent's resources (0..=100; `maximum` at least `capacity`).
    Capacity { capacity_pct: f64, maximum_pct: f64 },
    /// Fair scheduler: `weight` (> 0 to get a share; 0 serves the queue
    /// only when nothing else wants resources), `minResources`,
    /// `maxResources`.
    Fair {
        weight: f64,
        min: Option<ResourceBound>,
        max: Option<ResourceBound>,
    },
}

/// One queue and its subtree.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueConfig {
    /// Short name (`root` for the root; no dots).
    pub name: String,
    /// Child queues; empty for a leaf. Only leaves hold applications.
    pub children: Vec<QueueConfig>,
    pub state: QueueRunState,
    pub share: QueueShare,
    /// Capacity scheduler `maximum-applications`: pending plus running
    /// applications the queue accepts. Enforced by the RM at submission.
    pub max_applications: Option<usize>,
    /// Fair scheduler `maxRunningApps`: applications beyond it wait in the
    /// queue, unscheduled, until others finish. For a parent queue the
    /// limit covers its whole subtree.
    pub max_running_apps: Option<usize>,
    /// Fraction of the queue's resources its AM containers may hold
    /// (capacity `maximum-am-resource-percent`, fair `maxAMShare`); `None`
    /// for no limit. A queue always gets at least one AM.
    pub max_am_share: Option<f64>,
    /// Capacity scheduler `user-limit-factor`: one user may hold at most
    /// this multiple of the queue's guaranteed capacity (never beyond its
    /// maximum). `None` for no per-user cap (Hadoop's `-1`).
    pub user_limit_factor: Option<f64>,
    /// Capacity scheduler `minimum-user-limit-percent` (1..=100): with n
    /// users wanting resources each is limited to max(1/n, this percent)
    /// of the queue's current capacity.
    pub minimum_user_limit_percent: f64,
    /// Leaf: the order of its applications. Fair-scheduler parent: the
    /// order of its children.
    pub ordering: AppOrdering,
    /// `acl_submit_applications` (Hadoop ACL syntax: "users groups", `*`
    /// for all); `None` means unset, which inherits from the parent.
    /// Enforced by the RM.
    pub acl_submit_applications: Option<String>,
    /// `acl_administer_queue`, likewise.
    pub acl_administer_queue: Option<String>,
    /// A parent even without configured children (the fair scheduler's
    /// `type="parent"`): applications are never placed in it, and leaves
    /// may be created under it on demand.
    pub declared_parent: bool,
    /// Capacity scheduler `default-application-priority` (default 0): the
    /// priority of an application submitted to this leaf without one.
    /// Applied by the RM at submission (then capped at the cluster's
    /// `yarn.cluster.max-application-priority`); the core orders by the
    /// priority each attempt arrives with.
    pub default_application_priority: i32,
}

impl QueueConfig {
    /// A leaf with the given share and every other setting at its default.
    pub fn leaf(name: impl Into<String>, share: QueueShare) -> QueueConfig {
        QueueConfig {
            name: name.into(),
            children: Vec::new(),
            state: QueueRunState::Running,
            share,
            max_applications: None,
            max_running_apps: None,
            max_am_share: None,
            user_limit_factor: Some(1.0),
            minimum_user_limit_percent: 100.0,
            ordering: AppOrdering::Fifo,
            acl_submit_applications: None,
            acl_administer_queue: None,
            declared_parent: false,
            default_application_priority: 0,
        }
    }

    /// A parent with the given share and children.
    pub fn parent(
        name: impl Into<String>,
        share: QueueShare,
        children: Vec<QueueConfig>,
    ) -> QueueConfig {
        QueueConfig {
            children,
            ..QueueConfig::leaf(name, share)
        }
    }

    pub fn is_leaf(&self) -> bool {
        self.children.is_empty() && !self.declared_parent
    }

    /// Every queue of the subtree with its full path (`root.a.b`), parents
    /// before children, children in configuration order.
    pub fn walk(&self) -> Vec<(String, &QueueConfig)> {
        let mut out = Vec::new();
        let mut stack = vec![(self.name.clone(), self)];
        while let Some((path, q)) = stack.pop() {
            for child in q.children.iter().rev() {
                stack.push((format!("{path}.{}", child.name), child));
            }
            out.push((path, q));
        }
        out
    }
}

/// The whole queue configuration the core runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueTreeConfig {
    pub kind: SchedulerKind,
    /// The root queue (named `root`).
    pub root: QueueConfig,
    pub resource_calculator: ResourceCalculatorKind,
    /// Fair scheduler `<user name=".."><maxRunningApps>`: running
    /// applications per user, across all queues.
    pub user_max_running_apps: BTreeMap<String, usize>,
    /// Fair scheduler `userMaxAppsDefault`, for users without an entry.
    pub user_max_running_apps_default: Option<usize>,
    /// The settings of leaves created on demand by queue placement (fair
    /// scheduler: weight 1, `defaultQueueSchedulingPolicy`,
    /// `queueMaxAMShareDefault`, `queueMaxAppsDefault`); its name is
    /// replaced by the new leaf's. `None`: no leaf is ever created.
    pub dynamic_leaf: Option<QueueConfig>,
}

impl QueueTreeConfig {
    /// Hadoop's FIFO scheduler: `root` with one leaf, `default`.
    pub fn fifo() -> QueueTreeConfig {
        let full = QueueShare::Capacity {
            capacity_pct: 100.0,
            maximum_pct: 100.0,
        };
        let mut default = QueueConfig::leaf("default", full);
        default.user_limit_factor = None;
        QueueTreeConfig {
            kind: SchedulerKind::Fifo,
            root: QueueConfig::parent("root", full, vec![default]),
            resource_calculator: ResourceCalculatorKind::Memory,
            user_max_running_apps: BTreeMap::new(),
            user_max_running_apps_default: None,
            dynamic_leaf: None,
        }
    }

    /// The leaf a name refers to: a full path (`root.a.b`), or a short
    /// name when exactly one leaf has it. Returns the full path.
    pub fn resolve_leaf(&self, name: &str) -> Option<String> {
        let all = self.root.walk();
        if let Some((path, q)) = all.iter().find(|(p, _)| p == name) {
            return q.is_leaf().then(|| path.clone());
        }
        let mut matches = all
            .iter()
            .filter(|(_, q)| q.is_leaf() && q.name == name)
            .map(|(p, _)| p.clone());
        let first = matches.next()?;
        matches.next().is_none().then_some(first)
    }
}

impl Default for QueueTreeConfig {
    fn default() -> Self {
        QueueTreeConfig::fifo()
    }
}

/// Delay scheduling: how long a request with locality preferences waits
/// for a node on a host (then a rack) it asked for before it takes a
/// less local one. Waiting is counted in scheduling opportunities: node
/// heartbeats on which the request was offered the node (it fit there and
/// its rows allow it there at some locality), the heartbeat being decided
/// included, as in Hadoop. Continuous passes place at the level the count
/// allows but do not count. Requests that name only `*` never wait.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LocalityDelay {
    /// No waiting: node-local, else rack-local, else off-switch at once.
    #[default]
    Off,
    /// The capacity scheduler's rule. Rack-local once more than
    /// min(nodes, `node_locality_delay`) opportunities were counted (so a
    /// request for a busy host declines `node_locality_delay` heartbeats
    /// and takes a rack-local node on the next); off-switch once more
    /// than min(nodes, `node_locality_delay` +
    /// `rack_locality_additional_delay`) were counted, or, when the
    /// additional delay is negative (the default, -1), more than
    /// min(nodes, outstanding containers × min(locations asked / nodes,
    /// 1)). Allocations other than off-switch reset the count. A negative
    /// `node_locality_delay` makes rack-local immediate.
    Capacity {
        node_locality_delay: i64,
        rack_locality_additional_delay: i64,
    },
    /// The fair scheduler's rule (`locality.threshold.node` / `.rack`,
    /// fractions of the cluster's nodes; negative disables delay). The
    /// allowed level starts at node-local and relaxes one step (restarting
    /// the count) each time more than nodes × threshold opportunities are
    /// counted at it; an allocation more local than the level tightens the
    /// level to the allocation's locality, and every allocation restarts
    /// the count.
    Fair {
        node_threshold: f64,
        rack_threshold: f64,
    },
}

/// How many containers one node heartbeat may hand out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeartbeatAssignment {
    /// At most this many containers per heartbeat (fair scheduler:
    /// 1 unless `assignmultiple`, then `max.assign`); `None` for no cap
    /// beyond [`crate::Limits::max_containers_per_pass`].
    pub max_containers: Option<usize>,
    /// At most this many off-switch containers per heartbeat (capacity
    /// scheduler `per-node-heartbeat.maximum-offswitch-assignments`).
    pub max_off_switch: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(c: f64) -> QueueShare {
        QueueShare::Capacity {
            capacity_pct: c,
            maximum_pct: 100.0,
        }
    }

    #[test]
    fn class_names() {
        assert_eq!(
            SchedulerKind::from_class_name(
                " org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler"
            ),
            Some(SchedulerKind::Capacity)
        );
        assert_eq!(SchedulerKind::from_class_name("CapacityScheduler"), None);
        for k in [
            SchedulerKind::Fifo,
            SchedulerKind::Capacity,
            SchedulerKind::Fair,
        ] {
            assert_eq!(SchedulerKind::from_class_name(k.class_name()), Some(k));
        }
    }

    #[test]
    fn leaf_resolution() {
        let tree = QueueTreeConfig {
            kind: SchedulerKind::Capacity,
            root: QueueConfig::parent(
                "root",
                cap(100.0),
                vec![
                    QueueConfig::parent(
                        "eng",
                        cap(50.0),
                        vec![
                            QueueConfig::leaf("etl", cap(50.0)),
                            QueueConfig::leaf("adhoc", cap(50.0)),
                        ],
                    ),
                    QueueConfig::parent(
                        "sales",
                        cap(50.0),
                        vec![QueueConfig::leaf("adhoc", cap(100.0))],
                    ),
                ],
            ),
            ..QueueTreeConfig::fifo()
        };
        let paths: Vec<String> = tree.root.walk().into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            paths,
            [
                "root",
                "root.eng",
                "root.eng.etl",
                "root.eng.adhoc",
                "root.sales",
                "root.sales.adhoc"
            ]
        );
        assert_eq!(tree.resolve_leaf("etl").as_deref(), Some("root.eng.etl"));
        assert_eq!(
            tree.resolve_leaf("root.sales.adhoc").as_deref(),
            Some("root.sales.adhoc")
        );
        // Ambiguous short names and parents are not leaves to submit to.
        assert_eq!(tree.resolve_leaf("adhoc"), None);
        assert_eq!(tree.resolve_leaf("eng"), None);
        assert_eq!(tree.resolve_leaf("root.eng"), None);
        assert_eq!(tree.resolve_leaf("nope"), None);
    }

    #[test]
    fn percent_bounds() {
        let b = ResourceBound::Percent {
            memory: 50.0,
            vcores: 25.0,
        };
        assert_eq!(b.resolve(Resource::new(10_000, 8)), Resource::new(5_000, 2));
    }
}
