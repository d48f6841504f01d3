//! `capacity-scheduler.xml`, read as Hadoop's capacity scheduler reads it.
//!
//! Like Hadoop's `CapacitySchedulerConfiguration`, the file is a Hadoop
//! configuration resource layered over `yarn-site.xml`, so
//! `yarn.scheduler.capacity.*` keys may come from either (the file wins)
//! and `${...}` references expand. Without the file (and without
//! `yarn.scheduler.capacity.root.queues` anywhere) the tree is Hadoop's
//! shipped default: `root` with one leaf, `default`, at 100%.
//!
//! Keys (all below `yarn.scheduler.capacity.`), with Hadoop 3.3's defaults:
//!
//! | key | default |
//! |---|---|
//! | `<path>.queues` | none: a leaf |
//! | `<path>.capacity` | 0 (root: always 100) |
//! | `<path>.maximum-capacity` | 100 (-1 means 100) |
//! | `<path>.user-limit-factor` | global `user-limit-factor`, else 1; -1 for no limit |
//! | `<path>.minimum-user-limit-percent` | global, else 100 |
//! | `<path>.maximum-applications` | `global-queue-max-application` if positive, else `maximum-applications` (10000) × absolute capacity |
//! | `<path>.maximum-am-resource-percent` | global, else 0.1 |
//! | `<path>.state` | the parent's state (root: RUNNING) |
//! | `<path>.acl_submit_applications`, `<path>.acl_administer_queue` | unset (root: `*`) |
//! | `<path>.ordering-policy` | `fifo` (leaves), `utilization` (parents) |
//! | `<path>.default-application-priority` | 0 (leaves: the priority of an application submitted without one) |
//! | `resource-calculator` | `DefaultResourceCalculator` |
//! | `node-locality-delay`, `rack-locality-additional-delay` | 40, -1 |
//! | `per-node-heartbeat.maximum-offswitch-assignments` | 1 |
//! | `per-node-heartbeat.multiple-assignments-enabled` | true |
//! | `per-node-heartbeat.maximum-container-assignments` | 100 (-1: no limit) |
//! | `queue-mappings`, `queue-mappings-override.enable` | none, false |
//!
//! Capacities given as absolute resources (`[memory=...,vcores=...]`) or
//! weights (`2w`) are rejected: Spindle implements percentages only.

use std::io;
use std::path::Path;

use spindle_common::conf::catalog::Class;
use spindle_common::conf::Configuration;
use spindle_scheduler::{
    AppOrdering, HeartbeatAssignment, LocalityDelay, QueueConfig, QueueRunState, QueueShare,
    QueueTreeConfig, ResourceCalculatorKind, SchedulerKind,
};

use super::placement::{self, Placement};
use super::queue_file::{java_float, QueueFile, QueueFileError};

/// The file read from the configuration directory.
pub const FILE_NAME: &str = "capacity-scheduler.xml";
/// The prefix of every capacity-scheduler key.
pub const PREFIX: &str = spindle_common::conf::catalog::CAPACITY_PREFIX;

/// `resource-calculator` values.
pub const DEFAULT_RESOURCE_CALCULATOR: &str =
    "org.apache.hadoop.yarn.util.resource.DefaultResourceCalculator";
pub const DOMINANT_RESOURCE_CALCULATOR: &str =
    "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator";

const DEFAULT_MAXIMUM_APPLICATIONS: i64 = 10_000;
const DEFAULT_MAXIMUM_AM_RESOURCE_PERCENT: f64 = 0.1;
const DEFAULT_USER_LIMIT_FACTOR: f64 = 1.0;
const DEFAULT_MINIMUM_USER_LIMIT_PERCENT: f64 = 100.0;
const DEFAULT_NODE_LOCALITY_DELAY: i64 = 40;
const DEFAULT_RACK_LOCALITY_ADDITIONAL_DELAY: i64 = -1;
const DEFAULT_OFFSWITCH_PER_HEARTBEAT: i64 = 1;
const DEFAULT_MAX_ASSIGN_PER_HEARTBEAT: i64 = 100;
const DEFAULT_APPLICATION_PRIORITY: i64 = 0;
/// Hadoop's `ParentQueue` accepts children's capacities summing to 100
/// within 0.05 (0.0005 as a fraction).
const CAPACITY_SUM_TOLERANCE_PCT: f64 = 0.05;
/// Comparisons of configured percentages.
const EPSILON: f64 = 1e-6;

const LEAF_ORDERING_POLICIES: &[(&str, AppOrdering)] = &[
    ("fifo", AppOrdering::Fifo),
    ("fair", AppOrdering::Fair),
    // Spindle has no node partitions and keeps pending apps in arrival
    // order anyway: both are FIFO here.
    ("fifo-with-partitions", AppOrdering::Fifo),
    ("fifo-for-pending-apps", AppOrdering::Fifo),
    (
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.policy.FifoOrderingPolicy",
        AppOrdering::Fifo,
    ),
    (
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.policy.FairOrderingPolicy",
        AppOrdering::Fair,
    ),
    (
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.policy.FifoOrderingPolicyWithExclusivePartitions",
        AppOrdering::Fifo,
    ),
    (
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.policy.FifoOrderingPolicyForPendingApps",
        AppOrdering::Fifo,
    ),
];

const PARENT_ORDERING_POLICIES: &[&str] = &["utilization", "priority-utilization"];

/// Reads `capacity-scheduler.xml` from `conf_dir` over `site` (absent file:
/// Hadoop's defaults).
pub fn load(site: &Configuration, conf_dir: Option<&Path>) -> Result<QueueFile, QueueFileError> {
    let mut conf = site.clone();
    let mut source = None;
    if let Some(dir) = conf_dir {
        let path = dir.join(FILE_NAME);
        let shown = path.display().to_string();
        match std::fs::metadata(&path) {
            Ok(_) => {
                conf.add_resource(&path)
                    .map_err(|e| QueueFileError::from_conf(&shown, e))?;
                source = Some(path);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                tracing::info!("{shown}: not found; using the capacity scheduler's defaults");
            }
            Err(e) => {
                return Err(QueueFileError::new(
                    shown,
                    format!("cannot read the file: {e}"),
                ))
            }
        }
    }
    let label = match &source {
        Some(path) => path.display().to_string(),
        None => FILE_NAME.to_string(),
    };
    let mut file = from_conf(&conf, &label)?;
    file.source = source;
    warn_not_acted_on(&conf);
    Ok(file)
}

/// A warning per capacity key set in a file that Spindle does not act on
/// as asked (not built, or unknown): nothing is dropped without a word.
fn warn_not_acted_on(conf: &Configuration) {
    for key in conf.keys().filter(|k| k.starts_with(PREFIX)) {
        let (Some(origin), Some(value)) = (conf.origin_of(key), conf.get(key)) else {
            continue;
        };
        let class = super::capacity_keys::classify(key, &value);
        if let Some(class @ (Class::Unknown { .. } | Class::NotBuilt { .. } | Class::NoEffect(_))) =
            class
        {
            tracing::warn!("{origin}: {key} = {value:?}: {class}; Spindle does not act on it");
        }
    }
}

/// Builds the queue configuration from capacity-scheduler keys in `conf`.
/// `file` names the configuration in messages about values that have no
/// recorded origin.
pub fn from_conf(conf: &Configuration, file: &str) -> Result<QueueFile, QueueFileError> {
    let implicit_root = text(conf, &key("root", "queues")).is_none();
    if implicit_root {
        tracing::info!(
            "{file}: {PREFIX}root.queues is not set; using Hadoop's default queue root.default"
        );
    }
    let reader = Reader {
        conf,
        file,
        implicit_root,
    };
    let globals = reader.globals()?;
    let root = reader.root(&globals)?;
    let tree = QueueTreeConfig {
        kind: SchedulerKind::Capacity,
        root,
        resource_calculator: reader.resource_calculator()?,
        user_max_running_apps: Default::default(),
        user_max_running_apps_default: None,
        dynamic_leaf: None,
    };
    let placement = reader.placement(&tree)?;
    let locality = reader.locality()?;
    let heartbeat = reader.heartbeat()?;
    Ok(QueueFile {
        tree,
        placement,
        locality,
        heartbeat,
        source: None,
    })
}

fn key(path: &str, suffix: &str) -> String {
    format!("{PREFIX}{path}.{suffix}")
}

fn global(suffix: &str) -> String {
    format!("{PREFIX}{suffix}")
}

/// The trimmed value of `key`, `None` when unset or blank.
fn text(conf: &Configuration, key: &str) -> Option<String> {
    conf.get_trimmed(key).filter(|v| !v.is_empty())
}

/// Scheduler-wide values queues fall back to.
struct Globals {
    maximum_applications: i64,
    global_queue_max_applications: i64,
    maximum_am_resource_percent: f64,
    user_limit_factor: f64,
    minimum_user_limit_percent: f64,
}

/// What a queue passes down to its children.
struct ParentInfo<'p> {
    path: &'p str,
    /// Hadoop's absolute capacity (fraction of the cluster), computed in
    /// single precision as Hadoop does.
    absolute_capacity: f32,
    state: QueueRunState,
}

struct Reader<'a> {
    conf: &'a Configuration,
    file: &'a str,
    /// `root.queues` is unset: root has the one leaf `default`.
    implicit_root: bool,
}

impl Reader<'_> {
    /// An error about `key`, located where its value came from.
    fn error(&self, key: &str, queue: Option<&str>, reason: impl Into<String>) -> QueueFileError {
        let file = self
            .conf
            .source_of(key)
            .unwrap_or_else(|| self.file.to_string());
        let err = QueueFileError::new(file, reason).at_key(key);
        match queue {
            Some(q) => err.in_queue(q),
            None => err,
        }
    }

    fn text(&self, key: &str) -> Option<String> {
        text(self.conf, key)
    }

    fn conf_error(&self, queue: Option<&str>, e: spindle_common::ConfError) -> QueueFileError {
        let err = QueueFileError::from_conf(self.file, e);
        match queue {
            Some(q) => err.in_queue(q),
            None => err,
        }
    }

    fn f64_opt(&self, key: &str, queue: Option<&str>) -> Result<Option<f64>, QueueFileError> {
        if self.text(key).is_none() {
            return Ok(None);
        }
        self.conf
            .get_f64(key)
            .map(Some)
            .map_err(|e| self.conf_error(queue, e))
    }

    fn i64_opt(&self, key: &str, queue: Option<&str>) -> Result<Option<i64>, QueueFileError> {
        if self.text(key).is_none() {
            return Ok(None);
        }
        self.conf
            .get_i64(key)
            .map(Some)
            .map_err(|e| self.conf_error(queue, e))
    }

    fn bool_or(&self, key: &str, default: bool) -> Result<bool, QueueFileError> {
        if self.text(key).is_none() {
            return Ok(default);
        }
        self.conf
            .get_bool(key)
            .map_err(|e| self.conf_error(None, e))
    }

    fn globals(&self) -> Result<Globals, QueueFileError> {
        let max_apps_key = global("maximum-applications");
        let maximum_applications = self
            .i64_opt(&max_apps_key, None)?
            .unwrap_or(DEFAULT_MAXIMUM_APPLICATIONS);
        if maximum_applications < 0 {
            return Err(self.error(
                &max_apps_key,
                None,
                format!("value '{maximum_applications}' must not be negative"),
            ));
        }
        let global_queue_max_applications = self
            .i64_opt(&global("global-queue-max-application"), None)?
            .unwrap_or(-1);
        let am_key = global("maximum-am-resource-percent");
        let maximum_am_resource_percent = self
            .f64_opt(&am_key, None)?
            .unwrap_or(DEFAULT_MAXIMUM_AM_RESOURCE_PERCENT);
        self.check_am_percent(&am_key, None, maximum_am_resource_percent)?;
        let ulf_key = global("user-limit-factor");
        let user_limit_factor = self
            .f64_opt(&ulf_key, None)?
            .unwrap_or(DEFAULT_USER_LIMIT_FACTOR);
        self.check_user_limit_factor(&ulf_key, None, user_limit_factor)?;
        let mulp_key = global("minimum-user-limit-percent");
        let minimum_user_limit_percent = self
            .f64_opt(&mulp_key, None)?
            .unwrap_or(DEFAULT_MINIMUM_USER_LIMIT_PERCENT);
        self.check_user_limit_percent(&mulp_key, None, minimum_user_limit_percent)?;
        Ok(Globals {
            maximum_applications,
            global_queue_max_applications,
            maximum_am_resource_percent,
            user_limit_factor,
            minimum_user_limit_percent,
        })
    }

    fn check_am_percent(
        &self,
        key: &str,
        queue: Option<&str>,
        v: f64,
    ) -> Result<(), QueueFileError> {
        if !(0.0..=1.0).contains(&v) {
            return Err(self.error(
                key,
                queue,
                format!(
                    "value '{v}' must be a fraction between 0 and 1 \
                     (0.1 lets AMs use 10% of the queue)"
                ),
            ));
        }
        Ok(())
    }

    fn check_user_limit_factor(
        &self,
        key: &str,
        queue: Option<&str>,
        v: f64,
    ) -> Result<(), QueueFileError> {
        if v <= 0.0 && (v + 1.0).abs() > EPSILON {
            return Err(self.error(
                key,
                queue,
                format!("value '{v}' must be positive, or -1 for no per-user limit"),
            ));
        }
        Ok(())
    }

    fn check_user_limit_percent(
        &self,
        key: &str,
        queue: Option<&str>,
        v: f64,
    ) -> Result<(), QueueFileError> {
        if !(v > 0.0 && v <= 100.0) {
            return Err(self.error(
                key,
                queue,
                format!("value '{v}' must be a percentage above 0 and at most 100"),
            ));
        }
        Ok(())
    }

    fn resource_calculator(&self) -> Result<ResourceCalculatorKind, QueueFileError> {
        let key = global("resource-calculator");
        match self.text(&key).as_deref() {
            None | Some(DEFAULT_RESOURCE_CALCULATOR) => Ok(ResourceCalculatorKind::Memory),
            Some(DOMINANT_RESOURCE_CALCULATOR) => Ok(ResourceCalculatorKind::Dominant),
            Some(other) => Err(self.error(
                &key,
                None,
                format!(
                    "unknown resource calculator '{other}'; use \
                     {DEFAULT_RESOURCE_CALCULATOR} or {DOMINANT_RESOURCE_CALCULATOR}"
                ),
            )),
        }
    }

    /// The child queue names of `path`, checked: no dots, no whitespace,
    /// no duplicates. Empty list items are skipped, as Hadoop does.
    fn child_names(&self, path: &str) -> Result<Vec<String>, QueueFileError> {
        let queues_key = key(path, "queues");
        if path == "root" && self.implicit_root {
            return Ok(vec!["default".to_string()]);
        }
        let Some(list) = self.text(&queues_key) else {
            return Ok(Vec::new());
        };
        let mut names: Vec<String> = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name.contains('.') {
                return Err(self.error(
                    &queues_key,
                    Some(path),
                    format!("queue name '{name}' must not contain a dot"),
                ));
            }
            if name.chars().any(char::is_whitespace) {
                return Err(self.error(
                    &queues_key,
                    Some(path),
                    format!("queue name '{name}' must not contain whitespace"),
                ));
            }
            if names.iter().any(|n| n == name) {
                return Err(self.error(
                    &queues_key,
                    Some(path),
                    format!("queue '{name}' is listed twice"),
                ));
            }
            names.push(name.to_string());
        }
        if names.is_empty() && path == "root" {
            return Err(self.error(
                &queues_key,
                Some(path),
                format!("value '{list}' names no queue; root needs at least one child queue"),
            ));
        }
        Ok(names)
    }

    /// A percentage of `capacity` or `maximum-capacity`: `(value, value
    /// as Java reads it in single precision)`.
    fn percentage(&self, key: &str, path: &str) -> Result<Option<(f64, f32)>, QueueFileError> {
        let Some(raw) = self.text(key) else {
            return Ok(None);
        };
        if raw.starts_with('[') {
            return Err(self.error(
                key,
                Some(path),
                format!(
                    "value '{raw}' is an absolute resource; Spindle supports capacities \
                     in percent only"
                ),
            ));
        }
        if raw.ends_with('w') {
            return Err(self.error(
                key,
                Some(path),
                format!("value '{raw}' is a weight; Spindle supports capacities in percent only"),
            ));
        }
        let value = self.f64_opt(key, Some(path))?.unwrap_or_default();
        let single = java_float(&raw).unwrap_or(value as f32);
        Ok(Some((value, single)))
    }

    fn state(
        &self,
        path: &str,
        parent: Option<&ParentInfo<'_>>,
    ) -> Result<QueueRunState, QueueFileError> {
        let state_key = key(path, "state");
        let configured = match self.text(&state_key) {
            None => None,
            Some(s) => match s.to_ascii_uppercase().as_str() {
                "RUNNING" => Some(QueueRunState::Running),
                "STOPPED" => Some(QueueRunState::Stopped),
                _ => {
                    return Err(self.error(
                        &state_key,
                        Some(path),
                        format!("value '{s}' is not a queue state; use RUNNING or STOPPED"),
                    ))
                }
            },
        };
        match (parent, configured) {
            (None, state) => Ok(state.unwrap_or_default()),
            (Some(p), None) => Ok(p.state),
            (Some(p), Some(QueueRunState::Running)) if p.state == QueueRunState::Stopped => {
                Err(self.error(
                    &state_key,
                    Some(path),
                    format!(
                        "the parent queue {} is STOPPED, so {path} cannot be RUNNING \
                         (leave the state unset to inherit STOPPED)",
                        p.path
                    ),
                ))
            }
            (Some(_), Some(state)) => Ok(state),
        }
    }

    fn acl(&self, path: &str, which: &str) -> Option<String> {
        let value = self.conf.get(&key(path, which));
        if path == "root" {
            value.or_else(|| Some("*".to_string()))
        } else {
            value
        }
    }

    fn root(&self, globals: &Globals) -> Result<QueueConfig, QueueFileError> {
        let state = self.state("root", None)?;
        let info = ParentInfo {
            path: "root",
            absolute_capacity: 1.0,
            state,
        };
        let children = self.children("root", 100.0, &info, globals)?;
        let full = QueueShare::Capacity {
            capacity_pct: 100.0,
            maximum_pct: 100.0,
        };
        let mut root = QueueConfig::parent("root", full, children);
        root.state = state;
        root.acl_submit_applications = self.acl("root", "acl_submit_applications");
        root.acl_administer_queue = self.acl("root", "acl_administer_queue");
        Ok(root)
    }

    /// The children of the parent at `path` (whose own capacity is
    /// `capacity_pct`), with Hadoop's check of their capacities' sum.
    fn children(
        &self,
        path: &str,
        capacity_pct: f64,
        info: &ParentInfo<'_>,
        globals: &Globals,
    ) -> Result<Vec<QueueConfig>, QueueFileError> {
        let names = self.child_names(path)?;
        let mut children = Vec::with_capacity(names.len());
        for name in &names {
            children.push(self.queue(&format!("{path}.{name}"), name, info, globals)?);
        }
        let sum: f64 = children
            .iter()
            .map(|c| match c.share {
                QueueShare::Capacity { capacity_pct, .. } => capacity_pct,
                QueueShare::Fair { .. } => 0.0,
            })
            .sum();
        let queues_key = key(path, "queues");
        let allow_zero = self.bool_or(&key(path, "allow-zero-capacity-sum"), false)?;
        if capacity_pct > 0.0 {
            let zero_allowed = allow_zero && sum.abs() < EPSILON;
            if (sum - 100.0).abs() > CAPACITY_SUM_TOLERANCE_PCT && !zero_allowed {
                return Err(self.error(
                    &queues_key,
                    Some(path),
                    format!(
                        "the capacities of the children of {path} ({}) add up to {sum}, \
                         not 100",
                        names.join(", ")
                    ),
                ));
            }
        } else if sum > 0.0 {
            return Err(self.error(
                &queues_key,
                Some(path),
                format!(
                    "{path} has capacity 0, so the capacities of its children ({}) must \
                     all be 0, not add up to {sum}",
                    names.join(", ")
                ),
            ));
        }
        Ok(children)
    }

    fn queue(
        &self,
        path: &str,
        name: &str,
        parent: &ParentInfo<'_>,
        globals: &Globals,
    ) -> Result<QueueConfig, QueueFileError> {
        let capacity_key = key(path, "capacity");
        let (capacity, capacity_single) = match self.percentage(&capacity_key, path)? {
            Some(c) => c,
            None if self.implicit_root && path == "root.default" => (100.0, 100.0),
            None => (0.0, 0.0),
        };
        if !(0.0..=100.0).contains(&capacity) {
            return Err(self.error(
                &capacity_key,
                Some(path),
                format!("value '{capacity}' must be a percentage between 0 and 100"),
            ));
        }
        let max_key = key(path, "maximum-capacity");
        let maximum = match self.percentage(&max_key, path)? {
            None => 100.0,
            Some((m, _)) if (m + 1.0).abs() < EPSILON => 100.0,
            Some((m, _)) => m,
        };
        if !(0.0..=100.0).contains(&maximum) {
            return Err(self.error(
                &max_key,
                Some(path),
                format!("value '{maximum}' must be a percentage between 0 and 100, or -1 for 100"),
            ));
        }
        if capacity > maximum + EPSILON {
            return Err(self.error(
                &max_key,
                Some(path),
                format!("maximum-capacity {maximum} is below the queue's capacity {capacity}"),
            ));
        }
        let share = QueueShare::Capacity {
            capacity_pct: capacity,
            maximum_pct: maximum,
        };
        let state = self.state(path, Some(parent))?;
        let absolute_capacity = (capacity_single / 100.0) * parent.absolute_capacity;
        let info = ParentInfo {
            path,
            absolute_capacity,
            state,
        };
        let policy_key = key(path, "ordering-policy");
        let policy = self.text(&policy_key);
        let is_parent = !self.child_names(path)?.is_empty();

        let mut queue = if is_parent {
            if let Some(p) = &policy {
                if !PARENT_ORDERING_POLICIES.contains(&p.as_str()) {
                    return Err(self.error(
                        &policy_key,
                        Some(path),
                        format!(
                            "unknown queue ordering policy '{p}' for a parent queue; use {}",
                            PARENT_ORDERING_POLICIES.join(" or ")
                        ),
                    ));
                }
            }
            let children = self.children(path, capacity, &info, globals)?;
            QueueConfig::parent(name, share, children)
        } else {
            let mut leaf = QueueConfig::leaf(name, share);
            if let Some(p) = &policy {
                leaf.ordering = LEAF_ORDERING_POLICIES
                    .iter()
                    .find(|(n, _)| n == p)
                    .map(|(_, o)| *o)
                    .ok_or_else(|| {
                        self.error(
                            &policy_key,
                            Some(path),
                            format!("unknown application ordering policy '{p}'; use fifo or fair"),
                        )
                    })?;
            }
            self.leaf_limits(path, &mut leaf, absolute_capacity, globals)?;
            leaf
        };
        queue.state = state;
        queue.acl_submit_applications = self.acl(path, "acl_submit_applications");
        queue.acl_administer_queue = self.acl(path, "acl_administer_queue");
        Ok(queue)
    }

    fn leaf_limits(
        &self,
        path: &str,
        leaf: &mut QueueConfig,
        absolute_capacity: f32,
        globals: &Globals,
    ) -> Result<(), QueueFileError> {
        let ulf_key = key(path, "user-limit-factor");
        let ulf = self
            .f64_opt(&ulf_key, Some(path))?
            .unwrap_or(globals.user_limit_factor);
        self.check_user_limit_factor(&ulf_key, Some(path), ulf)?;
        leaf.user_limit_factor = ((ulf + 1.0).abs() > EPSILON).then_some(ulf);

        let mulp_key = key(path, "minimum-user-limit-percent");
        let mulp = self
            .f64_opt(&mulp_key, Some(path))?
            .unwrap_or(globals.minimum_user_limit_percent);
        self.check_user_limit_percent(&mulp_key, Some(path), mulp)?;
        leaf.minimum_user_limit_percent = mulp;

        let am_key = key(path, "maximum-am-resource-percent");
        let am = self
            .f64_opt(&am_key, Some(path))?
            .unwrap_or(globals.maximum_am_resource_percent);
        self.check_am_percent(&am_key, Some(path), am)?;
        leaf.max_am_share = Some(am);

        let apps_key = key(path, "maximum-applications");
        let apps = match self.i64_opt(&apps_key, Some(path))? {
            Some(n) if n >= 0 => n,
            // Hadoop's LeafQueue: the global per-queue value when set,
            // else the system-wide maximum scaled by the absolute
            // capacity, in single precision and truncated.
            _ if globals.global_queue_max_applications > 0 => globals.global_queue_max_applications,
            _ => ((globals.maximum_applications as f32) * absolute_capacity) as i64,
        };
        leaf.max_applications = Some(usize::try_from(apps).map_err(|_| {
            self.error(
                &apps_key,
                Some(path),
                format!("value '{apps}' is out of range"),
            )
        })?);

        let priority_key = key(path, "default-application-priority");
        let priority = self
            .i64_opt(&priority_key, Some(path))?
            .unwrap_or(DEFAULT_APPLICATION_PRIORITY);
        leaf.default_application_priority = i32::try_from(priority).map_err(|_| {
            self.error(
                &priority_key,
                Some(path),
                format!("value '{priority}' is not a 32-bit integer"),
            )
        })?;
        Ok(())
    }

    fn placement(&self, tree: &QueueTreeConfig) -> Result<Placement, QueueFileError> {
        let format_key = global("mapping-rule-format");
        if let Some(format) = self.text(&format_key) {
            if format != "legacy" {
                return Err(self.error(
                    &format_key,
                    None,
                    format!(
                        "value '{format}' is not supported; Spindle reads the legacy \
                         {PREFIX}queue-mappings only"
                    ),
                ));
            }
        }
        let app_name_key = "yarn.scheduler.queue-placement-rules.app-name";
        if self.text(app_name_key).is_some() {
            tracing::warn!(
                "{}: {app_name_key} (application-name queue mappings) is not supported and is ignored",
                self.conf
                    .source_of(app_name_key)
                    .unwrap_or_else(|| self.file.to_string())
            );
        }
        let mappings_key = global("queue-mappings");
        let entries = self.conf.get_strings(&mappings_key);
        let mappings = placement::parse_mappings(&entries)
            .map_err(|reason| self.error(&mappings_key, None, reason))?;
        placement::validate_mappings(&mappings, tree)
            .map_err(|reason| self.error(&mappings_key, None, reason))?;
        let override_requested = self.bool_or(&global("queue-mappings-override.enable"), false)?;
        Ok(Placement::capacity(mappings, override_requested))
    }

    fn locality(&self) -> Result<LocalityDelay, QueueFileError> {
        let node_locality_delay = self
            .i64_opt(&global("node-locality-delay"), None)?
            .unwrap_or(DEFAULT_NODE_LOCALITY_DELAY);
        let rack_locality_additional_delay = self
            .i64_opt(&global("rack-locality-additional-delay"), None)?
            .unwrap_or(DEFAULT_RACK_LOCALITY_ADDITIONAL_DELAY);
        Ok(LocalityDelay::Capacity {
            node_locality_delay,
            rack_locality_additional_delay,
        })
    }

    fn heartbeat(&self) -> Result<HeartbeatAssignment, QueueFileError> {
        let off_switch_key = global("per-node-heartbeat.maximum-offswitch-assignments");
        let mut off_switch = self
            .i64_opt(&off_switch_key, None)?
            .unwrap_or(DEFAULT_OFFSWITCH_PER_HEARTBEAT);
        if off_switch < 1 {
            tracing::warn!("{off_switch_key} ({off_switch}) < 1; using 1, as Hadoop does");
            off_switch = 1;
        }
        let multiple = self.bool_or(
            &global("per-node-heartbeat.multiple-assignments-enabled"),
            true,
        )?;
        let max_assign_key = global("per-node-heartbeat.maximum-container-assignments");
        let max_assign = self
            .i64_opt(&max_assign_key, None)?
            .unwrap_or(DEFAULT_MAX_ASSIGN_PER_HEARTBEAT);
        let max_containers = if !multiple {
            Some(1)
        } else if max_assign == -1 {
            None
        } else if max_assign < 1 {
            // Hadoop makes the first assignment of a heartbeat before it
            // looks at the limit.
            tracing::warn!("{max_assign_key} ({max_assign}) < 1; one container per heartbeat");
            Some(1)
        } else {
            Some(to_usize(max_assign))
        };
        Ok(HeartbeatAssignment {
            max_containers,
            max_off_switch: Some(to_usize(off_switch)),
        })
    }
}

/// A positive `i64` as `usize` (saturating on 32-bit targets).
fn to_usize(v: i64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const FILE: &str = "/etc/hadoop/capacity-scheduler.xml";

    fn fixture_dir(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/queues")
            .join(name)
    }

    /// A capacity-scheduler.xml with one property per four lines: the
    /// value of property `i` (0-based) is on line `4 + 4 * i`.
    fn xml(props: &[(&str, &str)]) -> String {
        let mut out = String::from("<configuration>\n");
        for (k, v) in props {
            let name = if k.starts_with("yarn.") {
                k.to_string()
            } else {
                format!("{PREFIX}{k}")
            };
            out.push_str(&format!(
                "<property>\n<name>{name}</name>\n<value>{v}</value>\n</property>\n"
            ));
        }
        out.push_str("</configuration>\n");
        out
    }

    fn parse(props: &[(&str, &str)]) -> Result<QueueFile, QueueFileError> {
        let mut conf = Configuration::empty();
        conf.add_resource_str(FILE, &xml(props))
            .unwrap_or_else(|e| panic!("{e}"));
        from_conf(&conf, FILE)
    }

    fn ok(props: &[(&str, &str)]) -> QueueFile {
        parse(props).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(props: &[(&str, &str)]) -> QueueFileError {
        match parse(props) {
            Ok(f) => panic!("accepted: {:#?}", f.tree),
            Err(e) => e,
        }
    }

    fn share(capacity_pct: f64, maximum_pct: f64) -> QueueShare {
        QueueShare::Capacity {
            capacity_pct,
            maximum_pct,
        }
    }

    fn find<'t>(tree: &'t QueueTreeConfig, path: &str) -> &'t QueueConfig {
        tree.root
            .walk()
            .into_iter()
            .find(|(p, _)| p == path)
            .map(|(_, q)| q)
            .unwrap_or_else(|| panic!("no queue {path}"))
    }

    fn leaf(name: &str, capacity: f64, maximum: f64, max_apps: usize, am: f64) -> QueueConfig {
        let mut q = QueueConfig::leaf(name, share(capacity, maximum));
        q.max_applications = Some(max_apps);
        q.max_am_share = Some(am);
        q
    }

    #[test]
    fn three_level_tree() {
        let site = Configuration::empty();
        let file = load(&site, Some(&fixture_dir("capacity-three-level")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            file.source,
            Some(fixture_dir("capacity-three-level").join(FILE_NAME))
        );

        let mut etl = leaf("etl", 40.0, 100.0, 240, 0.5);
        etl.user_limit_factor = Some(2.0);
        etl.minimum_user_limit_percent = 50.0;
        etl.ordering = AppOrdering::Fair;
        let mut batch = leaf("batch", 75.0, 100.0, 50, 0.2);
        batch.state = QueueRunState::Stopped;
        let mut interactive = leaf("interactive", 25.0, 100.0, 90, 0.2);
        interactive.state = QueueRunState::Stopped;
        interactive.user_limit_factor = None;
        let mut science =
            QueueConfig::parent("science", share(60.0, 100.0), vec![batch, interactive]);
        science.state = QueueRunState::Stopped;
        let mut eng = QueueConfig::parent("eng", share(60.0, 80.0), vec![etl, science]);
        eng.acl_submit_applications = Some("alice,bob eng".into());
        let mut sales = leaf("sales", 30.0, 100.0, 300, 0.2);
        sales.acl_administer_queue = Some("carol".into());
        let default = leaf("default", 10.0, 20.0, 100, 0.2);
        let mut root = QueueConfig::parent("root", share(100.0, 100.0), vec![eng, sales, default]);
        root.acl_submit_applications = Some("hadoop hadoop-admins".into());
        root.acl_administer_queue = Some("*".into());
        let expected = QueueTreeConfig {
            kind: SchedulerKind::Capacity,
            root,
            resource_calculator: ResourceCalculatorKind::Dominant,
            user_max_running_apps: Default::default(),
            user_max_running_apps_default: None,
            dynamic_leaf: None,
        };
        assert_eq!(file.tree, expected);
        assert_eq!(
            file.locality,
            LocalityDelay::Capacity {
                node_locality_delay: 20,
                rack_locality_additional_delay: 5
            }
        );
        assert_eq!(
            file.heartbeat,
            HeartbeatAssignment {
                max_containers: Some(8),
                max_off_switch: Some(4)
            }
        );

        // queue-mappings u:alice:etl, g:sales:sales,
        // u:%user:%primary_group.%user, with override on.
        let place = |requested: &str, user: &str, groups: &[&str]| {
            let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
            file.placement
                .place(requested, user, &groups, &file.tree)
                .map(|p| p.queue)
        };
        assert_eq!(
            place("default", "alice", &["eng"]).as_deref(),
            Ok("root.eng.etl")
        );
        assert_eq!(
            place("sales", "alice", &["eng"]).as_deref(),
            Ok("root.eng.etl")
        );
        assert_eq!(
            place("default", "bob", &["staff", "sales"]).as_deref(),
            Ok("root.sales")
        );
        // carol's group queue exists but has no queue named carol below it.
        assert_eq!(
            place("default", "carol", &["eng"]).as_deref(),
            Ok("root.default")
        );
        assert!(file
            .placement
            .describe()
            .contains("override the requested queue: yes"));
    }

    #[test]
    fn stock_hadoop_keys() {
        let file = load(
            &Configuration::empty(),
            Some(&fixture_dir("capacity-stock")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut default = leaf("default", 100.0, 100.0, 10_000, 0.1);
        default.acl_submit_applications = Some("*".into());
        default.acl_administer_queue = Some("*".into());
        let mut root = QueueConfig::parent("root", share(100.0, 100.0), vec![default]);
        root.acl_submit_applications = Some("*".into());
        root.acl_administer_queue = Some("*".into());
        assert_eq!(
            file.tree,
            QueueTreeConfig {
                kind: SchedulerKind::Capacity,
                root,
                resource_calculator: ResourceCalculatorKind::Memory,
                user_max_running_apps: Default::default(),
                user_max_running_apps_default: None,
                dynamic_leaf: None,
            }
        );
        assert_eq!(
            file.locality,
            LocalityDelay::Capacity {
                node_locality_delay: 40,
                rack_locality_additional_delay: -1
            }
        );
        assert_eq!(
            file.heartbeat,
            HeartbeatAssignment {
                max_containers: Some(100),
                max_off_switch: Some(1)
            }
        );
        assert_eq!(
            file.placement.describe(),
            "capacity: the requested queue (no queue-mappings)"
        );
        let placed = file
            .placement
            .place("default", "alice", &[], &file.tree)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(placed.queue, "root.default");
    }

    #[test]
    fn absent_file_is_hadoops_default_tree() {
        let dir = fixture_dir("no-such-directory-here");
        let file = load(&Configuration::empty(), Some(&dir)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.source, None);
        let without_dir = load(&Configuration::empty(), None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file, without_dir);
        let default = leaf("default", 100.0, 100.0, 10_000, 0.1);
        let mut root = QueueConfig::parent("root", share(100.0, 100.0), vec![default]);
        root.acl_submit_applications = Some("*".into());
        root.acl_administer_queue = Some("*".into());
        assert_eq!(file.tree.root, root);
        assert_eq!(file.tree.kind, SchedulerKind::Capacity);
    }

    #[test]
    fn yarn_site_keys_count_and_the_file_wins() {
        let mut site = Configuration::empty();
        site.add_resource_str(
            "/etc/hadoop/yarn-site.xml",
            &xml(&[
                ("node-locality-delay", "7"),
                ("rack-locality-additional-delay", "3"),
            ]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let file =
            load(&site, Some(&fixture_dir("capacity-stock"))).unwrap_or_else(|e| panic!("{e}"));
        // The stock file sets node-locality-delay (40) but not the rack delay.
        assert_eq!(
            file.locality,
            LocalityDelay::Capacity {
                node_locality_delay: 40,
                rack_locality_additional_delay: 3
            }
        );
    }

    #[test]
    fn capacities_must_add_up() {
        let e = err(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "70"),
            ("root.b.capacity", "20"),
        ]);
        assert_eq!(e.file, format!("{FILE}:4"));
        assert_eq!(e.queue.as_deref(), Some("root"));
        assert_eq!(
            e.key.as_deref(),
            Some("yarn.scheduler.capacity.root.queues")
        );
        assert!(e.reason.contains("add up to 90"), "{e}");
        // Within Hadoop's tolerance.
        ok(&[
            ("root.queues", "a,b,c"),
            ("root.a.capacity", "33.33"),
            ("root.b.capacity", "33.33"),
            ("root.c.capacity", "33.33"),
        ]);
        // A missing capacity is 0.
        let e = err(&[("root.queues", "a")]);
        assert!(e.reason.contains("add up to 0"), "{e}");
        // Nested: checked per parent.
        let e = err(&[
            ("root.queues", "a"),
            ("root.a.capacity", "100"),
            ("root.a.queues", "x,y"),
            ("root.a.x.capacity", "60"),
            ("root.a.y.capacity", "60"),
        ]);
        assert_eq!(e.queue.as_deref(), Some("root.a"));
        assert_eq!(
            e.key.as_deref(),
            Some("yarn.scheduler.capacity.root.a.queues")
        );
        // A parent at 0 has children at 0 (Hadoop 3.3's rule)...
        ok(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "100"),
            ("root.b.capacity", "0"),
            ("root.b.queues", "x"),
            ("root.b.x.capacity", "0"),
        ]);
        let e = err(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "100"),
            ("root.b.capacity", "0"),
            ("root.b.queues", "x"),
            ("root.b.x.capacity", "100"),
        ]);
        assert_eq!(e.queue.as_deref(), Some("root.b"));
        assert!(e.reason.contains("must all be 0"), "{e}");
        // ...and children summing to 0 need allow-zero-capacity-sum.
        let zero = [
            ("root.queues", "a"),
            ("root.a.capacity", "100"),
            ("root.a.queues", "x"),
            ("root.a.x.capacity", "0"),
        ];
        err(&zero);
        let mut allowed = zero.to_vec();
        allowed.push(("root.a.allow-zero-capacity-sum", "true"));
        ok(&allowed);
    }

    /// Properties, then the queue, key suffix and reason text expected.
    type ErrorCase<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str, &'a str);

    #[test]
    fn value_errors_name_file_queue_and_key() {
        let cases: &[ErrorCase<'_>] = &[
            (
                &[
                    ("root.queues", "a"),
                    ("root.a.capacity", "100"),
                    ("root.a.maximum-capacity", "50"),
                ],
                "root.a",
                "root.a.maximum-capacity",
                "below the queue's capacity 100",
            ),
            (
                &[("root.queues", "a"), ("root.a.capacity", "120")],
                "root.a",
                "root.a.capacity",
                "between 0 and 100",
            ),
            (
                &[("root.queues", "a"), ("root.a.capacity", "lots")],
                "root.a",
                "root.a.capacity",
                "value 'lots' is not a number",
            ),
            (
                &[
                    ("root.queues", "a"),
                    ("root.a.capacity", "100"),
                    ("root.a.state", "PAUSED"),
                ],
                "root.a",
                "root.a.state",
                "use RUNNING or STOPPED",
            ),
            (
                &[
                    ("root.queues", "a"),
                    ("root.a.capacity", "100"),
                    ("root.a.ordering-policy", "lifo"),
                ],
                "root.a",
                "root.a.ordering-policy",
                "unknown application ordering policy 'lifo'",
            ),
            (
                &[
                    ("root.queues", "a"),
                    ("root.a.capacity", "100"),
                    ("root.a.queues", "x"),
                    ("root.a.x.capacity", "100"),
                    ("root.a.ordering-policy", "fair"),
                ],
                "root.a",
                "root.a.ordering-policy",
                "unknown queue ordering policy 'fair' for a parent queue",
            ),
            (
                &[("root.queues", "a,b,a")],
                "root",
                "root.queues",
                "queue 'a' is listed twice",
            ),
            (
                &[("root.queues", "a.b")],
                "root",
                "root.queues",
                "must not contain a dot",
            ),
            (
                &[("root.queues", "a b")],
                "root",
                "root.queues",
                "must not contain whitespace",
            ),
            (
                &[("root.queues", " , ")],
                "root",
                "root.queues",
                "root needs at least one child queue",
            ),
            (
                &[
                    ("root.queues", "a"),
                    ("root.a.capacity", "[memory=1024,vcores=1]"),
                ],
                "root.a",
                "root.a.capacity",
                "absolute resource",
            ),
            (
                &[("root.queues", "a"), ("root.a.capacity", "2w")],
                "root.a",
                "root.a.capacity",
                "is a weight",
            ),
            (
                &[
                    ("root.queues", "a"),
                    ("root.a.capacity", "100"),
                    ("root.a.user-limit-factor", "0"),
                ],
                "root.a",
                "root.a.user-limit-factor",
                "must be positive, or -1",
            ),
            (
                &[
                    ("root.queues", "a"),
                    ("root.a.capacity", "100"),
                    ("root.a.minimum-user-limit-percent", "150"),
                ],
                "root.a",
                "root.a.minimum-user-limit-percent",
                "at most 100",
            ),
            (
                &[
                    ("root.queues", "a"),
                    ("root.a.capacity", "100"),
                    ("root.a.maximum-am-resource-percent", "10"),
                ],
                "root.a",
                "root.a.maximum-am-resource-percent",
                "fraction between 0 and 1",
            ),
            (
                &[
                    ("root.queues", "a"),
                    ("root.a.capacity", "100"),
                    ("root.a.maximum-applications", "many"),
                ],
                "root.a",
                "root.a.maximum-applications",
                "is not an integer",
            ),
        ];
        for (props, queue, key_suffix, needle) in cases {
            let e = err(props);
            assert_eq!(e.queue.as_deref(), Some(*queue), "{e}");
            assert_eq!(e.key, Some(format!("{PREFIX}{key_suffix}")), "{e}");
            assert!(e.reason.contains(needle), "{e}");
            assert!(e.file.starts_with(&format!("{FILE}:")), "{e}");
            let shown = e.to_string();
            assert!(
                shown.starts_with(&format!("{FILE}:"))
                    && shown.contains(&format!("queue {queue}: ")),
                "{shown}"
            );
        }
        // The line of the offending value.
        let e = err(&[("root.queues", "a"), ("root.a.capacity", "lots")]);
        assert_eq!(e.file, format!("{FILE}:8"));
    }

    #[test]
    fn global_errors_name_the_key() {
        for (props, key_suffix, needle) in [
            (
                [("resource-calculator", "org.example.MyCalculator")],
                "resource-calculator",
                "unknown resource calculator 'org.example.MyCalculator'",
            ),
            (
                [("maximum-applications", "-5")],
                "maximum-applications",
                "must not be negative",
            ),
            (
                [("queue-mappings-override.enable", "maybe")],
                "queue-mappings-override.enable",
                "is not a boolean",
            ),
            (
                [("node-locality-delay", "soon")],
                "node-locality-delay",
                "is not an integer",
            ),
            (
                [("mapping-rule-format", "json")],
                "mapping-rule-format",
                "is not supported",
            ),
        ] {
            let e = err(&props);
            assert_eq!(e.key, Some(format!("{PREFIX}{key_suffix}")), "{e}");
            assert!(e.reason.contains(needle), "{e}");
            assert_eq!(e.file, format!("{FILE}:4"), "{e}");
        }
    }

    #[test]
    fn mapping_errors() {
        let base = [
            ("root.queues", "a,b"),
            ("root.a.capacity", "50"),
            ("root.b.capacity", "50"),
            ("root.b.queues", "x"),
            ("root.b.x.capacity", "100"),
        ];
        for (mappings, needle) in [
            ("u:alice:nope", "invalid or non-leaf queue nope"),
            ("u:alice:b", "root.b: it is a parent queue"),
            ("g:eng:b.y", "root.b.y: no such queue"),
            ("u:alice", "illegal queue mapping 'u:alice'"),
            ("q:alice:a", "unknown mapping prefix 'q'"),
        ] {
            let mut props = base.to_vec();
            props.push(("queue-mappings", mappings));
            let e = err(&props);
            assert_eq!(
                e.key.as_deref(),
                Some("yarn.scheduler.capacity.queue-mappings"),
                "{e}"
            );
            assert!(e.reason.contains(needle), "{mappings}: {e}");
            assert_eq!(e.file, format!("{FILE}:24"), "{e}");
        }
        let mut props = base.to_vec();
        props.push(("queue-mappings", "u:alice:x, g:ops:root.a, u:%user:%user"));
        let file = ok(&props);
        let placed = file
            .placement
            .place("default", "alice", &[], &file.tree)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(placed.queue, "root.b.x");
    }

    #[test]
    fn maximum_applications_derivation() {
        let file = ok(&[
            ("maximum-applications", "1000"),
            ("root.queues", "a,b,c"),
            ("root.a.capacity", "70"),
            ("root.a.queues", "x,y"),
            // 1000 × (0.7 × 0.7) in single precision is 489.99997: 489,
            // as Hadoop computes it.
            ("root.a.x.capacity", "70"),
            ("root.a.y.capacity", "30"),
            ("root.a.y.maximum-applications", "5"),
            ("root.b.capacity", "20"),
            ("root.c.capacity", "10"),
            ("root.c.maximum-applications", "-1"),
        ]);
        let apps = |path: &str| find(&file.tree, path).max_applications;
        assert_eq!(apps("root.a.x"), Some(489));
        assert_eq!(apps("root.a.y"), Some(5));
        assert_eq!(apps("root.b"), Some(200));
        assert_eq!(apps("root.c"), Some(100));
        // Parents carry no application limit of their own.
        assert_eq!(apps("root.a"), None);

        // global-queue-max-application replaces the scaling when positive.
        let file = ok(&[
            ("global-queue-max-application", "42"),
            ("root.queues", "a,b"),
            ("root.a.capacity", "50"),
            ("root.b.capacity", "50"),
            ("root.b.maximum-applications", "7"),
        ]);
        assert_eq!(find(&file.tree, "root.a").max_applications, Some(42));
        assert_eq!(find(&file.tree, "root.b").max_applications, Some(7));
    }

    #[test]
    fn stopped_state_is_inherited() {
        let file = ok(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "50"),
            ("root.a.state", "stopped"),
            ("root.a.queues", "x,y"),
            ("root.a.x.capacity", "50"),
            ("root.a.y.capacity", "50"),
            ("root.a.y.state", "STOPPED"),
            ("root.b.capacity", "50"),
            ("root.b.state", "RUNNING"),
        ]);
        let state = |path: &str| find(&file.tree, path).state;
        assert_eq!(state("root"), QueueRunState::Running);
        assert_eq!(state("root.a"), QueueRunState::Stopped);
        assert_eq!(state("root.a.x"), QueueRunState::Stopped);
        assert_eq!(state("root.a.y"), QueueRunState::Stopped);
        assert_eq!(state("root.b"), QueueRunState::Running);

        // A stopped root stops everything.
        let file = ok(&[
            ("root.state", "STOPPED"),
            ("root.queues", "a"),
            ("root.a.capacity", "100"),
        ]);
        assert_eq!(find(&file.tree, "root.a").state, QueueRunState::Stopped);

        // Hadoop refuses a RUNNING child of a STOPPED parent.
        let e = err(&[
            ("root.queues", "a"),
            ("root.a.capacity", "100"),
            ("root.a.state", "STOPPED"),
            ("root.a.queues", "x"),
            ("root.a.x.capacity", "100"),
            ("root.a.x.state", "RUNNING"),
        ]);
        assert_eq!(e.queue.as_deref(), Some("root.a.x"));
        assert_eq!(
            e.key.as_deref(),
            Some("yarn.scheduler.capacity.root.a.x.state")
        );
        assert!(e.reason.contains("parent queue root.a is STOPPED"), "{e}");
    }

    #[test]
    fn resource_calculators() {
        let base = [("root.queues", "a"), ("root.a.capacity", "100")];
        assert_eq!(
            ok(&base).tree.resource_calculator,
            ResourceCalculatorKind::Memory
        );
        for (name, kind) in [
            (DEFAULT_RESOURCE_CALCULATOR, ResourceCalculatorKind::Memory),
            (
                DOMINANT_RESOURCE_CALCULATOR,
                ResourceCalculatorKind::Dominant,
            ),
        ] {
            let mut props = base.to_vec();
            props.push(("resource-calculator", name));
            assert_eq!(ok(&props).tree.resource_calculator, kind, "{name}");
        }
    }

    #[test]
    fn user_limits_and_globals() {
        let file = ok(&[
            ("user-limit-factor", "3"),
            ("minimum-user-limit-percent", "25"),
            ("maximum-am-resource-percent", "0.3"),
            ("root.queues", "a,b"),
            ("root.a.capacity", "50"),
            ("root.b.capacity", "50"),
            ("root.b.user-limit-factor", "-1"),
            ("root.b.minimum-user-limit-percent", "100"),
            ("root.b.maximum-am-resource-percent", "1"),
        ]);
        let a = find(&file.tree, "root.a");
        assert_eq!(a.user_limit_factor, Some(3.0));
        assert_eq!(a.minimum_user_limit_percent, 25.0);
        assert_eq!(a.max_am_share, Some(0.3));
        let b = find(&file.tree, "root.b");
        assert_eq!(b.user_limit_factor, None);
        assert_eq!(b.minimum_user_limit_percent, 100.0);
        assert_eq!(b.max_am_share, Some(1.0));
    }

    #[test]
    fn heartbeat_settings() {
        let base = [("root.queues", "a"), ("root.a.capacity", "100")];
        let with = |extra: &[(&str, &str)]| {
            let mut props = base.to_vec();
            props.extend_from_slice(extra);
            ok(&props).heartbeat
        };
        assert_eq!(
            with(&[("per-node-heartbeat.multiple-assignments-enabled", "false")]),
            HeartbeatAssignment {
                max_containers: Some(1),
                max_off_switch: Some(1)
            }
        );
        assert_eq!(
            with(&[
                ("per-node-heartbeat.maximum-container-assignments", "-1"),
                ("per-node-heartbeat.maximum-offswitch-assignments", "0"),
            ]),
            HeartbeatAssignment {
                max_containers: None,
                max_off_switch: Some(1)
            }
        );
        assert_eq!(
            with(&[("per-node-heartbeat.maximum-container-assignments", "0")]).max_containers,
            Some(1)
        );
    }
}
