//! Configuration of the three cores: key names, defaults, and parsing from
//! a plain key -> value map (what an `mr3-site.xml` or a `key=value` list
//! becomes once read).
//!
//! Key names are MR3's wherever MR3 documents one (see [`keys`]); the few
//! Spindle-only settings live under `spindle.dag.*`. Unknown keys are
//! ignored (a site file carries many settings for other components), but a
//! known key with a bad value is an error naming the key, the value and
//! what would be accepted. An unknown scheme name is never replaced by a
//! default.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `mr3.dag.queue.scheme` | `common` | `common` \| `individual` \| `capacity` |
//! | `mr3.dag.queue.capacity.specs` | `default=0` | `name=percent,...` in priority order; `default=0` appended when absent |
//! | `mr3.dag.priority.scheme` | `fifo` | `fifo` \| `concurrent` |
//! | `mr3.vertex.priority.scheme` | `intact` | `intact` \| `roots` \| `leaves` \| `postorder` \| `normalize` |
//! | `mr3.taskattempt.queue.scheme` | `indexed` | `indexed` (input-complete tasks jump ahead) \| `basic` (strict priority) |
//! | `mr3.am.task.max.failed.attempts` | `3` | attempts per task before its DAG fails (at least 1) |
//! | `mr3.am.max.num.concurrent.dags` | `128` | active DAGs per task scheduler |
//! | `spindle.dag.queue.status.interval.secs` | `10` | how often the queue status line is produced (0 = never) |
//! | `mr3.container.scheduler.scheme` | `none` | `none` \| `fifo` \| `fair` |
//! | `mr3.check.memory.usage.event.interval.secs` | `10` | fair rebalancing and memory sampling interval |
//! | `mr3.container.idle.timeout.ms` | `300000` | how long a stopped, unclaimed worker is kept for recycling |
//! | `mr3.enable.auto.scaling` | `false` | turn the autoscaler on |
//! | `mr3.memory.usage.check.scheme` | `average` | `average` \| `maximum` over the window |
//! | `mr3.memory.usage.check.window.length.secs` | `600` | sampling window |
//! | `mr3.auto.scale.out.threshold.percent` | `80` | ScaleOutThreshold |
//! | `mr3.auto.scale.in.threshold.percent` | `50` | ScaleInThreshold |
//! | `mr3.auto.scale.out.grace.period.secs` | `300` | ScaleOutGracePeriod |
//! | `mr3.auto.scale.in.delay.after.scale.out.secs` | `60` | ScaleInDelayAfterScaleOut |
//! | `mr3.auto.scale.in.grace.period.secs` | `300` | ScaleInGracePeriod |
//! | `mr3.auto.scale.in.min.hosts` | `1` | AutoScaleInMinHosts |
//! | `mr3.auto.scale.in.wait.dag.finished` | `true` | workers on released nodes finish active DAGs first |
//! | `mr3.auto.scale.out.num.initial.containers` | `0` | workers to request when none run (0 = not used) |
//! | `mr3.auto.scale.out.num.increment.containers` | `1` | workers per scale-out (0 = computed) |
//! | `mr3.auto.scale.in.num.decrement.hosts` | `1` | nodes per scale-in (0 = computed) |
//! | `mr3.k8s.worker.total.max.memory.gb` | `1048576` | cap on the memory of all workers |
//! | `mr3.k8s.worker.total.max.cpu.cores` | `1048576` | cap on the cores of all workers |
//!
//! The seed gives 1 as the default of the increment and decrement keys;
//! later MR3 releases document 0 (computed). Spindle follows the seed.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Every configuration key this crate reads.
pub mod keys {
    pub const DAG_QUEUE_SCHEME: &str = "mr3.dag.queue.scheme";
    pub const DAG_QUEUE_CAPACITY_SPECS: &str = "mr3.dag.queue.capacity.specs";
    /// Per-DAG key naming the DAG's capacity queue (read by the AM from the
    /// DAG's own configuration, not from the site map).
    pub const DAG_QUEUE_NAME: &str = "mr3.dag.queue.name";
    pub const DAG_PRIORITY_SCHEME: &str = "mr3.dag.priority.scheme";
    pub const VERTEX_PRIORITY_SCHEME: &str = "mr3.vertex.priority.scheme";
    pub const TASKATTEMPT_QUEUE_SCHEME: &str = "mr3.taskattempt.queue.scheme";
    pub const TASK_MAX_FAILED_ATTEMPTS: &str = "mr3.am.task.max.failed.attempts";
    pub const MAX_CONCURRENT_DAGS: &str = "mr3.am.max.num.concurrent.dags";
    /// Spindle-only: MR3 logs its capacity status every 10 seconds but
    /// documents no key for the period.
    pub const QUEUE_STATUS_INTERVAL_SECS: &str = "spindle.dag.queue.status.interval.secs";

    pub const CONTAINER_SCHEDULER_SCHEME: &str = "mr3.container.scheduler.scheme";
    pub const CHECK_MEMORY_USAGE_INTERVAL_SECS: &str = "mr3.check.memory.usage.event.interval.secs";
    pub const CONTAINER_IDLE_TIMEOUT_MS: &str = "mr3.container.idle.timeout.ms";

    pub const ENABLE_AUTO_SCALING: &str = "mr3.enable.auto.scaling";
    pub const MEMORY_USAGE_CHECK_SCHEME: &str = "mr3.memory.usage.check.scheme";
    pub const MEMORY_USAGE_WINDOW_SECS: &str = "mr3.memory.usage.check.window.length.secs";
    pub const SCALE_OUT_THRESHOLD_PERCENT: &str = "mr3.auto.scale.out.threshold.percent";
    pub const SCALE_IN_THRESHOLD_PERCENT: &str = "mr3.auto.scale.in.threshold.percent";
    pub const SCALE_OUT_GRACE_PERIOD_SECS: &str = "mr3.auto.scale.out.grace.period.secs";
    pub const SCALE_IN_DELAY_AFTER_SCALE_OUT_SECS: &str =
        "mr3.auto.scale.in.delay.after.scale.out.secs";
    pub const SCALE_IN_GRACE_PERIOD_SECS: &str = "mr3.auto.scale.in.grace.period.secs";
    pub const SCALE_IN_MIN_HOSTS: &str = "mr3.auto.scale.in.min.hosts";
    pub const SCALE_IN_WAIT_DAG_FINISHED: &str = "mr3.auto.scale.in.wait.dag.finished";
    pub const SCALE_OUT_NUM_INITIAL_CONTAINERS: &str = "mr3.auto.scale.out.num.initial.containers";
    pub const SCALE_OUT_NUM_INCREMENT_CONTAINERS: &str =
        "mr3.auto.scale.out.num.increment.containers";
    pub const SCALE_IN_NUM_DECREMENT_HOSTS: &str = "mr3.auto.scale.in.num.decrement.hosts";
    pub const WORKER_TOTAL_MAX_MEMORY_GB: &str = "mr3.k8s.worker.total.max.memory.gb";
    pub const WORKER_TOTAL_MAX_CPU_CORES: &str = "mr3.k8s.worker.total.max.cpu.cores";
}

/// Why a configuration was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A scheme name no implementation answers to.
    #[error("{key} = '{value}' is not a known value; expected one of: {known}")]
    UnknownName {
        key: &'static str,
        value: String,
        known: &'static str,
    },
    /// A value that does not parse or is out of range.
    #[error("{key} = '{value}' is invalid: {reason}")]
    Invalid {
        key: &'static str,
        value: String,
        reason: String,
    },
}

impl ConfigError {
    pub(crate) fn unknown_name(key: &'static str, value: &str, known: &'static str) -> Self {
        ConfigError::UnknownName {
            key,
            value: value.to_string(),
            known,
        }
    }

    pub(crate) fn invalid(key: &'static str, value: &str, reason: impl Into<String>) -> Self {
        ConfigError::Invalid {
            key,
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

macro_rules! name_enum {
    (
        $(#[$meta:meta])*
        $name:ident, key = $key:expr, known = $known:literal, {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// The accepted names, for error messages.
            pub const KNOWN: &'static str = $known;

            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text ),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $name {
            type Err = ConfigError;

            /// Case-insensitive; surrounding whitespace is ignored.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let lower = s.trim().to_ascii_lowercase();
                $( if lower == $text { return Ok($name::$variant); } )+
                Err(ConfigError::unknown_name($key, s, Self::KNOWN))
            }
        }
    };
}

name_enum! {
    /// `mr3.dag.queue.scheme`: how DAGs map to task queues.
    DagQueueScheme, key = keys::DAG_QUEUE_SCHEME, known = "common, individual, capacity", {
        /// One queue for all DAGs (the default).
        Common => "common",
        /// One queue per DAG; the DAG using the least memory is served first.
        Individual => "individual",
        /// Capacity scheduling over the queues of `mr3.dag.queue.capacity.specs`.
        Capacity => "capacity",
    }
}

name_enum! {
    /// `mr3.dag.priority.scheme`: how DAG priorities are assigned.
    DagPriorityScheme, key = keys::DAG_PRIORITY_SCHEME, known = "fifo, concurrent", {
        /// The n-th submitted DAG gets priority n (the default).
        Fifo => "fifo",
        /// Every DAG gets the same priority.
        Concurrent => "concurrent",
    }
}

name_enum! {
    /// `mr3.taskattempt.queue.scheme`: whether ready tasks whose whole input
    /// is intermediate data that is now available may jump ahead.
    TaskQueueScheme, key = keys::TASKATTEMPT_QUEUE_SCHEME, known = "indexed, basic", {
        /// Input-complete consumer tasks go before tasks reading external
        /// input, whatever their priorities (the default).
        Indexed => "indexed",
        /// Strict priority order.
        Basic => "basic",
    }
}

name_enum! {
    /// `mr3.container.scheduler.scheme`: whether and how workers are
    /// recycled between compatible ContainerGroups.
    ContainerSchedulerScheme, key = keys::CONTAINER_SCHEDULER_SCHEME, known = "none, fifo, fair", {
        /// No recycling (the default).
        None => "none",
        /// Idle workers go to the oldest group in need.
        Fifo => "fifo",
        /// Every interval, groups above the average give workers to groups below.
        Fair => "fair",
    }
}

name_enum! {
    /// `mr3.memory.usage.check.scheme`: how the samples of the window are
    /// combined.
    MemoryUsageScheme, key = keys::MEMORY_USAGE_CHECK_SCHEME, known = "average, maximum", {
        Average => "average",
        Maximum => "maximum",
    }
}

/// One queue of capacity scheduling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityQueue {
    pub name: String,
    /// Guaranteed share of the group's memory, 0..=100.
    pub min_percent: u32,
}

/// The queues of `mr3.dag.queue.capacity.specs`, highest priority first,
/// always ending with (or containing) a queue named `default`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacitySpecs {
    queues: Vec<CapacityQueue>,
}

/// The queue every DAG without a (known) queue name goes to.
pub const DEFAULT_QUEUE: &str = "default";

impl CapacitySpecs {
    /// Parses `high=80,medium=50,default=20,background=0`. `name:percent`
    /// is accepted too (MR3 writes its default as `default:0`). Entries
    /// are trimmed; names must be unique, non-empty and free of `=`, `:`,
    /// `,` and whitespace; percentages are integers from 0 to 100 (they are
    /// conditional guarantees, so they need not sum to 100). When no queue
    /// is named `default`, `default=0` is appended. An empty value means
    /// just `default=0`.
    pub fn parse(value: &str) -> Result<CapacitySpecs, ConfigError> {
        let key = keys::DAG_QUEUE_CAPACITY_SPECS;
        let mut queues: Vec<CapacityQueue> = Vec::new();
        if !value.trim().is_empty() {
            for (i, entry) in value.split(',').enumerate() {
                let entry = entry.trim();
                let Some((name, percent)) = entry.split_once(['=', ':']) else {
                    return Err(ConfigError::invalid(
                        key,
                        value,
                        format!("entry {} ('{entry}') is not name=percent", i + 1),
                    ));
                };
                let (name, percent) = (name.trim(), percent.trim());
                if name.is_empty()
                    || name
                        .chars()
                        .any(|c| c.is_whitespace() || c.is_control() || "=:,".contains(c))
                {
                    return Err(ConfigError::invalid(
                        key,
                        value,
                        format!("entry {} has an invalid queue name '{name}'", i + 1),
                    ));
                }
                let min_percent: u32 = percent.parse().map_err(|_| {
                    ConfigError::invalid(
                        key,
                        value,
                        format!(
                            "queue '{name}' has capacity '{percent}', not an integer percentage"
                        ),
                    )
                })?;
                if min_percent > 100 {
                    return Err(ConfigError::invalid(
                        key,
                        value,
                        format!("queue '{name}' has capacity {min_percent}%, over 100%"),
                    ));
                }
                if queues.iter().any(|q| q.name == name) {
                    return Err(ConfigError::invalid(
                        key,
                        value,
                        format!("queue '{name}' is listed twice"),
                    ));
                }
                queues.push(CapacityQueue {
                    name: name.to_string(),
                    min_percent,
                });
            }
        }
        if !queues.iter().any(|q| q.name == DEFAULT_QUEUE) {
            queues.push(CapacityQueue {
                name: DEFAULT_QUEUE.to_string(),
                min_percent: 0,
            });
        }
        Ok(CapacitySpecs { queues })
    }

    /// Highest priority first.
    pub fn queues(&self) -> &[CapacityQueue] {
        &self.queues
    }

    /// Index of the queue a DAG asking for `name` goes to: the named queue
    /// if it exists, otherwise `default`.
    pub fn resolve(&self, name: Option<&str>) -> usize {
        let find = |n: &str| self.queues.iter().position(|q| q.name == n);
        name.and_then(find)
            .or_else(|| find(DEFAULT_QUEUE))
            .unwrap_or(self.queues.len().saturating_sub(1))
    }
}

impl Default for CapacitySpecs {
    fn default() -> Self {
        CapacitySpecs {
            queues: vec![CapacityQueue {
                name: DEFAULT_QUEUE.to_string(),
                min_percent: 0,
            }],
        }
    }
}

impl fmt::Display for CapacitySpecs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, q) in self.queues.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={}", q.name, q.min_percent)?;
        }
        Ok(())
    }
}

/// Named bounds of the task scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSchedulerLimits {
    /// DAGs accepted and not yet finished (`mr3.am.max.num.concurrent.dags`).
    pub max_active_dags: u32,
    /// Workers registered with one task scheduler.
    pub max_workers: u32,
    /// Assignments made for one offer, so a huge worker cannot make one
    /// step unbounded.
    pub max_assignments_per_offer: u32,
    /// Times a task may be killed (not failed) and retried before its DAG
    /// fails; kills do not count against `mr3.am.task.max.failed.attempts`
    /// but must not loop forever.
    pub max_killed_attempts_per_task: u32,
    /// Bounds on each submitted DAG.
    pub dag: DagLimits,
}

impl Default for TaskSchedulerLimits {
    fn default() -> Self {
        TaskSchedulerLimits {
            max_active_dags: 128,
            max_workers: 100_000,
            max_assignments_per_offer: 1_024,
            max_killed_attempts_per_task: 100,
            dag: DagLimits::default(),
        }
    }
}

/// Configuration of one [`crate::task_scheduler::TaskScheduler`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSchedulerConfig {
    /// The ContainerGroup this scheduler serves; shown in the status line.
    pub group_name: String,
    pub queue_scheme: DagQueueScheme,
    /// Used only by [`DagQueueScheme::Capacity`].
    pub capacity_specs: CapacitySpecs,
    pub dag_priority_scheme: DagPriorityScheme,
    pub vertex_priority_scheme: VertexPriorityScheme,
    pub task_queue_scheme: TaskQueueScheme,
    /// Attempts per task before the DAG fails; at least 1.
    pub max_task_attempts: u32,
    /// Period of the status line; 0 turns it off.
    pub status_interval_ms: u64,
    pub limits: TaskSchedulerLimits,
}

impl Default for TaskSchedulerConfig {
    fn default() -> Self {
        TaskSchedulerConfig {
            group_name: "All-In-One".to_string(),
            queue_scheme: DagQueueScheme::Common,
            capacity_specs: CapacitySpecs::default(),
            dag_priority_scheme: DagPriorityScheme::Fifo,
            vertex_priority_scheme: VertexPriorityScheme::Intact,
            task_queue_scheme: TaskQueueScheme::Indexed,
            max_task_attempts: 3,
            status_interval_ms: 10_000,
            limits: TaskSchedulerLimits::default(),
        }
    }
}

/// Configuration of the [`crate::container_scheduler::ContainerScheduler`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSchedulerConfig {
    pub scheme: ContainerSchedulerScheme,
    /// Fair rebalancing period (`mr3.check.memory.usage.event.interval.secs`).
    pub check_interval_ms: u64,
    /// How long a stopped worker nobody needs is kept for recycling before
    /// it is terminated (`mr3.container.idle.timeout.ms`).
    pub reserved_idle_timeout_ms: u64,
    /// Bound on groups, so registrations cannot grow state without bound.
    pub max_groups: u32,
}

impl Default for ContainerSchedulerConfig {
    fn default() -> Self {
        ContainerSchedulerConfig {
            scheme: ContainerSchedulerScheme::None,
            check_interval_ms: 10_000,
            reserved_idle_timeout_ms: 300_000,
            max_groups: 10_000,
        }
    }
}

/// Configuration of the [`crate::autoscaler::Autoscaler`]. Times in
/// milliseconds (the keys are in seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoscalerConfig {
    pub enabled: bool,
    /// Sampling period (`mr3.check.memory.usage.event.interval.secs`).
    pub sample_interval_ms: u64,
    pub window_ms: u64,
    pub usage_scheme: MemoryUsageScheme,
    /// ScaleOutThreshold, percent.
    pub scale_out_threshold_percent: u32,
    /// ScaleInThreshold, percent; below the scale-out threshold.
    pub scale_in_threshold_percent: u32,
    /// ScaleOutGracePeriod.
    pub scale_out_grace_ms: u64,
    /// ScaleInDelayAfterScaleOut.
    pub scale_in_delay_after_scale_out_ms: u64,
    /// ScaleInGracePeriod.
    pub scale_in_grace_ms: u64,
    /// AutoScaleInMinHosts.
    pub scale_in_min_hosts: u32,
    /// Workers on released nodes finish the DAGs active at release time
    /// before they exit.
    pub scale_in_wait_dag_finished: bool,
    /// Workers to request when none run and tasks wait; 0 = not used.
    pub scale_out_initial_workers: u32,
    /// Workers per scale-out; 0 = computed from the distance to
    /// ScaleOutThreshold.
    pub scale_out_increment_workers: u32,
    /// Nodes per scale-in; 0 = computed from the distance to
    /// ScaleInThreshold.
    pub scale_in_decrement_hosts: u32,
    /// Cap on the memory of all workers together, MB.
    pub max_total_memory_mb: u64,
    /// Cap on the cores of all workers together.
    pub max_total_vcores: u64,
}

impl Default for AutoscalerConfig {
    fn default() -> Self {
        AutoscalerConfig {
            enabled: false,
            sample_interval_ms: 10_000,
            window_ms: 600_000,
            usage_scheme: MemoryUsageScheme::Average,
            scale_out_threshold_percent: 80,
            scale_in_threshold_percent: 50,
            scale_out_grace_ms: 300_000,
            scale_in_delay_after_scale_out_ms: 60_000,
            scale_in_grace_ms: 300_000,
            scale_in_min_hosts: 1,
            scale_in_wait_dag_finished: true,
            scale_out_initial_workers: 0,
            scale_out_increment_workers: 1,
            scale_in_decrement_hosts: 1,
            max_total_memory_mb: 1_048_576 * 1024,
            max_total_vcores: 1_048_576,
        }
    }
}

impl AutoscalerConfig {
    /// Cross-key checks.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.scale_in_threshold_percent >= self.scale_out_threshold_percent {
            return Err(ConfigError::invalid(
                keys::SCALE_IN_THRESHOLD_PERCENT,
                &self.scale_in_threshold_percent.to_string(),
                format!(
                    "must be below {} ({}), or the cluster would scale in and out at once",
                    keys::SCALE_OUT_THRESHOLD_PERCENT,
                    self.scale_out_threshold_percent
                ),
            ));
        }
        if self.window_ms < self.sample_interval_ms {
            return Err(ConfigError::invalid(
                keys::MEMORY_USAGE_WINDOW_SECS,
                &(self.window_ms / 1000).to_string(),
                format!(
                    "the window must hold at least one sample of {} ({} s)",
                    keys::CHECK_MEMORY_USAGE_INTERVAL_SECS,
                    self.sample_interval_ms / 1000
                ),
            ));
        }
        Ok(())
    }
}

/// The configuration of all three cores.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DagConfig {
    pub task: TaskSchedulerConfig,
    pub container: ContainerSchedulerConfig,
    pub autoscaler: AutoscalerConfig,
}

/// Reads typed values from a key -> value map, with errors naming the key.
struct Reader<'a> {
    map: &'a BTreeMap<String, String>,
}

impl Reader<'_> {
    fn raw(&self, key: &'static str) -> Option<&str> {
        self.map.get(key).map(String::as_str)
    }

    fn parsed<T: FromStr<Err = ConfigError>>(
        &self,
        key: &'static str,
        default: T,
    ) -> Result<T, ConfigError> {
        match self.raw(key) {
            Some(v) => v.parse(),
            None => Ok(default),
        }
    }

    fn uint(
        &self,
        key: &'static str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, ConfigError> {
        let Some(v) = self.raw(key) else {
            return Ok(default);
        };
        let n: u64 = v
            .trim()
            .parse()
            .map_err(|_| ConfigError::invalid(key, v, "expected a non-negative integer"))?;
        if n < min || n > max {
            return Err(ConfigError::invalid(
                key,
                v,
                format!("must be between {min} and {max}"),
            ));
        }
        Ok(n)
    }

    fn uint32(
        &self,
        key: &'static str,
        default: u32,
        min: u32,
        max: u32,
    ) -> Result<u32, ConfigError> {
        // The bounds keep the value within u32.
        Ok(self.uint(key, u64::from(default), u64::from(min), u64::from(max))? as u32)
    }

    fn boolean(&self, key: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.raw(key).map(|v| (v, v.trim().to_ascii_lowercase())) {
            None => Ok(default),
            Some((_, l)) if l == "true" => Ok(true),
            Some((_, l)) if l == "false" => Ok(false),
            Some((v, _)) => Err(ConfigError::invalid(key, v, "expected true or false")),
        }
    }

    fn secs_as_ms(
        &self,
        key: &'static str,
        default_ms: u64,
        min_secs: u64,
    ) -> Result<u64, ConfigError> {
        // A year is far beyond any sensible period and keeps ms in range.
        Ok(self.uint(key, default_ms / 1000, min_secs, 365 * 24 * 3600)? * 1000)
    }
}

impl DagConfig {
    /// Reads every key this crate knows from `map`; absent keys take their
    /// defaults, unknown keys are ignored.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<DagConfig, ConfigError> {
        let r = Reader { map };
        let d = DagConfig::default();

        let capacity_specs = match r.raw(keys::DAG_QUEUE_CAPACITY_SPECS) {
            Some(v) => CapacitySpecs::parse(v)?,
            None => d.task.capacity_specs.clone(),
        };
        let limits = TaskSchedulerLimits {
            max_active_dags: r.uint32(
                keys::MAX_CONCURRENT_DAGS,
                d.task.limits.max_active_dags,
                1,
                1_000_000,
            )?,
            ..d.task.limits
        };
        let task = TaskSchedulerConfig {
            group_name: d.task.group_name.clone(),
            queue_scheme: r.parsed(keys::DAG_QUEUE_SCHEME, d.task.queue_scheme)?,
            capacity_specs,
            dag_priority_scheme: r.parsed(keys::DAG_PRIORITY_SCHEME, d.task.dag_priority_scheme)?,
            vertex_priority_scheme: r
                .parsed(keys::VERTEX_PRIORITY_SCHEME, d.task.vertex_priority_scheme)?,
            task_queue_scheme: r
                .parsed(keys::TASKATTEMPT_QUEUE_SCHEME, d.task.task_queue_scheme)?,
            max_task_attempts: r.uint32(
                keys::TASK_MAX_FAILED_ATTEMPTS,
                d.task.max_task_attempts,
                1,
                1_000,
            )?,
            status_interval_ms: r.secs_as_ms(
                keys::QUEUE_STATUS_INTERVAL_SECS,
                d.task.status_interval_ms,
                0,
            )?,
            limits,
        };

        let check_interval_ms = r.secs_as_ms(
            keys::CHECK_MEMORY_USAGE_INTERVAL_SECS,
            d.container.check_interval_ms,
            1,
        )?;
        let container = ContainerSchedulerConfig {
            scheme: r.parsed(keys::CONTAINER_SCHEDULER_SCHEME, d.container.scheme)?,
            check_interval_ms,
            reserved_idle_timeout_ms: r.uint(
                keys::CONTAINER_IDLE_TIMEOUT_MS,
                d.container.reserved_idle_timeout_ms,
                0,
                365 * 24 * 3600 * 1000,
            )?,
            max_groups: d.container.max_groups,
        };

        let a = &d.autoscaler;
        let autoscaler = AutoscalerConfig {
            enabled: r.boolean(keys::ENABLE_AUTO_SCALING, a.enabled)?,
            sample_interval_ms: check_interval_ms,
            window_ms: r.secs_as_ms(keys::MEMORY_USAGE_WINDOW_SECS, a.window_ms, 1)?,
            usage_scheme: r.parsed(keys::MEMORY_USAGE_CHECK_SCHEME, a.usage_scheme)?,
            scale_out_threshold_percent: r.uint32(
                keys::SCALE_OUT_THRESHOLD_PERCENT,
                a.scale_out_threshold_percent,
                1,
                100,
            )?,
            scale_in_threshold_percent: r.uint32(
                keys::SCALE_IN_THRESHOLD_PERCENT,
                a.scale_in_threshold_percent,
                0,
                99,
            )?,
            scale_out_grace_ms: r.secs_as_ms(
                keys::SCALE_OUT_GRACE_PERIOD_SECS,
                a.scale_out_grace_ms,
                0,
            )?,
            scale_in_delay_after_scale_out_ms: r.secs_as_ms(
                keys::SCALE_IN_DELAY_AFTER_SCALE_OUT_SECS,
                a.scale_in_delay_after_scale_out_ms,
                0,
            )?,
            scale_in_grace_ms: r.secs_as_ms(
                keys::SCALE_IN_GRACE_PERIOD_SECS,
                a.scale_in_grace_ms,
                0,
            )?,
            scale_in_min_hosts: r.uint32(
                keys::SCALE_IN_MIN_HOSTS,
                a.scale_in_min_hosts,
                0,
                1_000_000,
            )?,
            scale_in_wait_dag_finished: r.boolean(
                keys::SCALE_IN_WAIT_DAG_FINISHED,
                a.scale_in_wait_dag_finished,
            )?,
            scale_out_initial_workers: r.uint32(
                keys::SCALE_OUT_NUM_INITIAL_CONTAINERS,
                a.scale_out_initial_workers,
                0,
                1_000_000,
            )?,
            scale_out_increment_workers: r.uint32(
                keys::SCALE_OUT_NUM_INCREMENT_CONTAINERS,
                a.scale_out_increment_workers,
                0,
                1_000_000,
            )?,
            scale_in_decrement_hosts: r.uint32(
                keys::SCALE_IN_NUM_DECREMENT_HOSTS,
                a.scale_in_decrement_hosts,
                0,
                1_000_000,
            )?,
            max_total_memory_mb: r.uint(
                keys::WORKER_TOTAL_MAX_MEMORY_GB,
                a.max_total_memory_mb / 1024,
                1,
                1 << 40,
            )? * 1024,
            max_total_vcores: r.uint(
                keys::WORKER_TOTAL_MAX_CPU_CORES,
                a.max_total_vcores,
                1,
                1 << 40,
            )?,
        };
        autoscaler.validate()?;

        Ok(DagConfig {
            task,
            container,
            autoscaler,
        })
    }
}

/// Named bounds on what one DAG may contain, so that one submission cannot
/// make the AM allocate without bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DagLimits {
    /// Vertices per DAG.
    pub max_vertices: u32,
    /// Edges per DAG.
    pub max_edges: u32,
    /// Tasks per vertex.
    pub max_tasks_per_vertex: u32,
    /// Tasks per DAG, all vertices together (bounds per-task bookkeeping).
    pub max_tasks_per_dag: u64,
    /// Bytes in a DAG or vertex name.
    pub max_name_bytes: usize,
    /// Bytes in a command template.
    pub max_command_bytes: usize,
}

impl Default for DagLimits {
    fn default() -> Self {
        DagLimits {
            max_vertices: 10_000,
            max_edges: 100_000,
            max_tasks_per_vertex: 1_000_000,
            max_tasks_per_dag: 10_000_000,
            max_name_bytes: 256,
            max_command_bytes: 64 * 1024,
        }
    }
}

/// `mr3.vertex.priority.scheme`: how vertex priorities are (re)computed
/// when a DAG is submitted. Lower numbers run first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VertexPriorityScheme {
    /// Keep the priorities given in the DAG (the seed's default). A vertex
    /// without one gets its `roots` value (its depth), which is how Tez
    /// derives vertex priorities when the client gives none.
    #[default]
    Intact,
    /// Distance from the root vertices that read input data: the longest
    /// path from any root (roots 0, their consumers 1, ...). Longest, not
    /// shortest, so a consumer never ties with or beats a producer.
    Roots,
    /// Distance to the leaf vertices that produce output data:
    /// `H - height(v)` where `height(v)` is the longest path from `v` to a
    /// leaf and `H` the largest height in the DAG. The vertices on the
    /// longest chain start at 0, every leaf gets `H`, and a short side
    /// branch feeding a late vertex is deferred until shortly before its
    /// output is needed.
    Leaves,
    /// Postorder numbering: a depth-first walk from each leaf (in
    /// declaration order) into producers (in edge declaration order),
    /// numbering a vertex 0, 1, 2, ... after all its producers. Every vertex
    /// gets a different priority, and a vertex comes right after the
    /// producers it needs, which keeps intermediate data short-lived.
    Postorder,
    /// The `intact` priorities mapped onto `0..=12252240`
    /// ([`NORMALIZE_MAX`](crate::dag::NORMALIZE_MAX)) so that every DAG spans the same range. The
    /// seed gives only the range; Spindle maps by dense rank: with `k`
    /// distinct priority values, the `r`-th smallest (from 0) becomes
    /// `r * 12252240 / (k - 1)` (integer division; exact whenever `k - 1`
    /// divides 12252240, e.g. any `k` up to 19), and a DAG whose vertices
    /// all share one value maps to 0. For evenly spaced input priorities,
    /// as Tez and Hive produce, this is the same as a linear rescaling.
    Normalize,
}

impl VertexPriorityScheme {
    pub const KNOWN: &'static str = "intact, roots, leaves, postorder, normalize";

    pub fn name(self) -> &'static str {
        match self {
            VertexPriorityScheme::Intact => "intact",
            VertexPriorityScheme::Roots => "roots",
            VertexPriorityScheme::Leaves => "leaves",
            VertexPriorityScheme::Postorder => "postorder",
            VertexPriorityScheme::Normalize => "normalize",
        }
    }
}

impl fmt::Display for VertexPriorityScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for VertexPriorityScheme {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "intact" => Ok(VertexPriorityScheme::Intact),
            "roots" => Ok(VertexPriorityScheme::Roots),
            "leaves" => Ok(VertexPriorityScheme::Leaves),
            "postorder" => Ok(VertexPriorityScheme::Postorder),
            "normalize" => Ok(VertexPriorityScheme::Normalize),
            _ => Err(ConfigError::unknown_name(
                keys::VERTEX_PRIORITY_SCHEME,
                s,
                Self::KNOWN,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn names(s: &CapacitySpecs) -> Vec<(String, u32)> {
        s.queues()
            .iter()
            .map(|q| (q.name.clone(), q.min_percent))
            .collect()
    }

    #[test]
    fn defaults_match_the_documented_table() {
        let c = DagConfig::from_map(&BTreeMap::new()).expect("defaults are valid");
        assert_eq!(c, DagConfig::default());
        assert_eq!(c.task.queue_scheme, DagQueueScheme::Common);
        assert_eq!(c.task.dag_priority_scheme, DagPriorityScheme::Fifo);
        assert_eq!(c.task.vertex_priority_scheme, VertexPriorityScheme::Intact);
        assert_eq!(c.task.capacity_specs.to_string(), "default=0");
        assert_eq!(c.container.scheme, ContainerSchedulerScheme::None);
        assert!(!c.autoscaler.enabled);
        assert_eq!(c.autoscaler.scale_out_increment_workers, 1);
        assert_eq!(c.autoscaler.scale_in_decrement_hosts, 1);
        assert_eq!(c.autoscaler.max_total_memory_mb, 1_048_576 * 1024);
    }

    #[test]
    fn capacity_specs_parse_and_append_default() {
        let s = CapacitySpecs::parse("high=80,medium=50,default=20,background=0").expect("valid");
        assert_eq!(
            names(&s),
            vec![
                ("high".into(), 80),
                ("medium".into(), 50),
                ("default".into(), 20),
                ("background".into(), 0)
            ]
        );
        let s = CapacitySpecs::parse(" foo = 80 , bar:20 ").expect("valid");
        assert_eq!(s.to_string(), "foo=80,bar=20,default=0");
        assert_eq!(s.resolve(Some("bar")), 1);
        assert_eq!(s.resolve(Some("nope")), 2);
        assert_eq!(s.resolve(None), 2);
        assert_eq!(
            CapacitySpecs::parse("").expect("valid").to_string(),
            "default=0"
        );
        assert_eq!(
            CapacitySpecs::parse("default:0")
                .expect("valid")
                .to_string(),
            "default=0"
        );
    }

    #[test]
    fn bad_capacity_specs_are_errors_naming_the_key() {
        for (spec, needle) in [
            ("high", "not name=percent"),
            ("high=abc", "not an integer percentage"),
            ("high=101", "over 100%"),
            ("high=-5", "not an integer percentage"),
            ("high=10,high=20", "listed twice"),
            ("=10", "invalid queue name"),
            ("a b=10", "invalid queue name"),
            ("high=10,", "not name=percent"),
        ] {
            let err = CapacitySpecs::parse(spec).expect_err(spec).to_string();
            assert!(
                err.starts_with("mr3.dag.queue.capacity.specs = "),
                "{spec}: {err}"
            );
            assert!(err.contains(needle), "{spec}: {err}");
        }
    }

    #[test]
    fn parsing_every_key() {
        let c = DagConfig::from_map(&map(&[
            ("mr3.dag.queue.scheme", "Capacity"),
            ("mr3.dag.queue.capacity.specs", "a=60,b=0"),
            ("mr3.dag.priority.scheme", "concurrent"),
            ("mr3.vertex.priority.scheme", "normalize"),
            ("mr3.taskattempt.queue.scheme", "basic"),
            ("mr3.am.task.max.failed.attempts", "5"),
            ("mr3.am.max.num.concurrent.dags", "7"),
            ("spindle.dag.queue.status.interval.secs", "0"),
            ("mr3.container.scheduler.scheme", "fair"),
            ("mr3.check.memory.usage.event.interval.secs", "5"),
            ("mr3.container.idle.timeout.ms", "1000"),
            ("mr3.enable.auto.scaling", "TRUE"),
            ("mr3.memory.usage.check.scheme", "maximum"),
            ("mr3.memory.usage.check.window.length.secs", "60"),
            ("mr3.auto.scale.out.threshold.percent", "90"),
            ("mr3.auto.scale.in.threshold.percent", "20"),
            ("mr3.auto.scale.out.grace.period.secs", "360"),
            ("mr3.auto.scale.in.delay.after.scale.out.secs", "30"),
            ("mr3.auto.scale.in.grace.period.secs", "90"),
            ("mr3.auto.scale.in.min.hosts", "2"),
            ("mr3.auto.scale.in.wait.dag.finished", "false"),
            ("mr3.auto.scale.out.num.initial.containers", "4"),
            ("mr3.auto.scale.out.num.increment.containers", "0"),
            ("mr3.auto.scale.in.num.decrement.hosts", "0"),
            ("mr3.k8s.worker.total.max.memory.gb", "64"),
            ("mr3.k8s.worker.total.max.cpu.cores", "16"),
            ("some.other.key", "ignored"),
        ]))
        .expect("valid");
        assert_eq!(c.task.queue_scheme, DagQueueScheme::Capacity);
        assert_eq!(c.task.capacity_specs.to_string(), "a=60,b=0,default=0");
        assert_eq!(c.task.dag_priority_scheme, DagPriorityScheme::Concurrent);
        assert_eq!(
            c.task.vertex_priority_scheme,
            VertexPriorityScheme::Normalize
        );
        assert_eq!(c.task.task_queue_scheme, TaskQueueScheme::Basic);
        assert_eq!(c.task.max_task_attempts, 5);
        assert_eq!(c.task.limits.max_active_dags, 7);
        assert_eq!(c.task.status_interval_ms, 0);
        assert_eq!(c.container.scheme, ContainerSchedulerScheme::Fair);
        assert_eq!(c.container.check_interval_ms, 5_000);
        assert_eq!(c.container.reserved_idle_timeout_ms, 1_000);
        let a = &c.autoscaler;
        assert!(a.enabled);
        assert_eq!(a.sample_interval_ms, 5_000);
        assert_eq!(a.usage_scheme, MemoryUsageScheme::Maximum);
        assert_eq!(a.window_ms, 60_000);
        assert_eq!(
            (a.scale_out_threshold_percent, a.scale_in_threshold_percent),
            (90, 20)
        );
        assert_eq!(a.scale_out_grace_ms, 360_000);
        assert_eq!(a.scale_in_delay_after_scale_out_ms, 30_000);
        assert_eq!(a.scale_in_grace_ms, 90_000);
        assert_eq!(a.scale_in_min_hosts, 2);
        assert!(!a.scale_in_wait_dag_finished);
        assert_eq!(a.scale_out_initial_workers, 4);
        assert_eq!(a.scale_out_increment_workers, 0);
        assert_eq!(a.scale_in_decrement_hosts, 0);
        assert_eq!(a.max_total_memory_mb, 64 * 1024);
        assert_eq!(a.max_total_vcores, 16);
    }

    #[test]
    fn errors_name_key_value_and_choices() {
        let err = |pairs: &[(&str, &str)]| {
            DagConfig::from_map(&map(pairs))
                .expect_err("invalid")
                .to_string()
        };
        assert_eq!(
            err(&[("mr3.dag.queue.scheme", "fair-ish")]),
            "mr3.dag.queue.scheme = 'fair-ish' is not a known value; expected one of: \
             common, individual, capacity"
        );
        assert_eq!(
            err(&[("mr3.vertex.priority.scheme", "random")]),
            "mr3.vertex.priority.scheme = 'random' is not a known value; expected one of: \
             intact, roots, leaves, postorder, normalize"
        );
        assert_eq!(
            err(&[("mr3.am.task.max.failed.attempts", "0")]),
            "mr3.am.task.max.failed.attempts = '0' is invalid: must be between 1 and 1000"
        );
        assert_eq!(
            err(&[("mr3.enable.auto.scaling", "yes")]),
            "mr3.enable.auto.scaling = 'yes' is invalid: expected true or false"
        );
        assert_eq!(
            err(&[("mr3.auto.scale.out.grace.period.secs", "soon")]),
            "mr3.auto.scale.out.grace.period.secs = 'soon' is invalid: expected a non-negative integer"
        );
        assert!(err(&[
            ("mr3.auto.scale.out.threshold.percent", "40"),
            ("mr3.auto.scale.in.threshold.percent", "40"),
        ])
        .starts_with("mr3.auto.scale.in.threshold.percent = '40' is invalid: must be below"));
        assert!(err(&[
            ("mr3.check.memory.usage.event.interval.secs", "60"),
            ("mr3.memory.usage.check.window.length.secs", "30"),
        ])
        .starts_with("mr3.memory.usage.check.window.length.secs = '30' is invalid"));
        assert!(err(&[("mr3.container.scheduler.scheme", "lifo")])
            .contains("expected one of: none, fifo, fair"));
    }
}
