//! The fair scheduler's allocation file (`fair-scheduler.xml`), read as
//! Hadoop 3.3's `AllocationFileLoaderService` reads it, and the
//! `yarn.scheduler.fair.*` keys of `yarn-site.xml`.
//!
//! The file is found through `yarn.scheduler.fair.allocation.file`
//! (default `fair-scheduler.xml`; relative paths are looked up in the
//! configuration directory, `file:` URLs are accepted). Without the key
//! and without the default file there is no allocation file: `root` with
//! the one leaf `default`. A file named by the key that does not exist is
//! an error.
//!
//! Queues are `<queue name="..">` (or the older `<pool>`) elements, nested
//! for hierarchy, all below `root` (a top-level `<queue name="root">` is
//! the root itself and must then be the only top-level queue). A queue
//! with child queues or `type="parent"` is a parent. Per queue: `weight`,
//! `minResources`, `maxResources`, `maxRunningApps`, `maxAMShare`,
//! `schedulingPolicy` (or `schedulingMode`), `aclSubmitApps`,
//! `aclAdministerApps`. File-wide: `<user name=".."><maxRunningApps>`,
//! `userMaxAppsDefault`, `queueMaxAppsDefault`, `queueMaxAMShareDefault`,
//! `queueMaxResourcesDefault`, `defaultQueueSchedulingPolicy` and
//! `<queuePlacementPolicy>`. Preemption and reservation settings are
//! accepted and not used (Spindle does not preempt or reserve); unknown
//! elements are logged and skipped, as Hadoop does.
//!
//! As in Hadoop, `root.default` always exists, and the file-wide defaults
//! (`queueMaxAppsDefault`, `queueMaxResourcesDefault`) apply to every
//! queue without its own value, parents and root included.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use roxmltree::{Document, Node, ParsingOptions};
use spindle_common::conf::Configuration;
use spindle_common::Resource;
use spindle_scheduler::{
    AppOrdering, HeartbeatAssignment, LocalityDelay, QueueConfig, QueueShare, QueueTreeConfig,
    ResourceBound, ResourceCalculatorKind, SchedulerKind,
};

use super::placement::{
    assure_root, is_valid_queue_name, FairDefaults, FairRule, Placement, DEFAULT_MAX_AM_SHARE,
};
use super::queue_file::{QueueFile, QueueFileError};

/// The allocation file looked up when the key is not set.
pub const DEFAULT_FILE: &str = "fair-scheduler.xml";
/// The yarn-site key naming the allocation file.
pub const ALLOCATION_FILE_KEY: &str = "yarn.scheduler.fair.allocation.file";
pub const USER_AS_DEFAULT_QUEUE_KEY: &str = "yarn.scheduler.fair.user-as-default-queue";
pub const ALLOW_UNDECLARED_POOLS_KEY: &str = "yarn.scheduler.fair.allow-undeclared-pools";
pub const LOCALITY_THRESHOLD_NODE_KEY: &str = "yarn.scheduler.fair.locality.threshold.node";
pub const LOCALITY_THRESHOLD_RACK_KEY: &str = "yarn.scheduler.fair.locality.threshold.rack";
pub const ASSIGN_MULTIPLE_KEY: &str = "yarn.scheduler.fair.assignmultiple";
pub const MAX_ASSIGN_KEY: &str = "yarn.scheduler.fair.max.assign";
pub const DYNAMIC_MAX_ASSIGN_KEY: &str = "yarn.scheduler.fair.dynamic.max.assign";

/// Scheduling policy class names Hadoop accepts besides the short names.
pub const FAIR_POLICY_CLASS: &str =
    "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.policies.FairSharePolicy";
pub const DRF_POLICY_CLASS: &str =
    "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.policies.DominantResourceFairnessPolicy";
pub const FIFO_POLICY_CLASS: &str =
    "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.policies.FifoPolicy";

/// The name of [`QueueTreeConfig::dynamic_leaf`] (replaced by the new
/// leaf's).
const DYNAMIC_LEAF_NAME: &str = "dynamic";
const DEFAULT_LOCALITY_THRESHOLD: f64 = -1.0;

/// Reads the allocation file and the fair scheduler's yarn-site keys.
pub fn load(site: &Configuration, conf_dir: Option<&Path>) -> Result<QueueFile, QueueFileError> {
    let settings = SiteSettings::read(site)?;
    let Some(path) = allocation_file(site, conf_dir)? else {
        return build(Allocations::default(), &settings, DEFAULT_FILE);
    };
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        QueueFileError::new(&shown, format!("cannot read the allocation file: {e}"))
    })?;
    let allocations = parse_allocations(&text, &shown)?;
    let mut file = build(allocations, &settings, &shown)?;
    file.source = Some(path);
    Ok(file)
}

/// Builds the queue configuration from the allocation file `xml` (named
/// `file` in messages) and the yarn-site keys of `site`.
pub fn from_str(xml: &str, file: &str, site: &Configuration) -> Result<QueueFile, QueueFileError> {
    let settings = SiteSettings::read(site)?;
    let allocations = parse_allocations(xml, file)?;
    build(allocations, &settings, file)
}

/// The allocation file to read: `None` when the default file is absent.
pub fn allocation_file(
    site: &Configuration,
    conf_dir: Option<&Path>,
) -> Result<Option<PathBuf>, QueueFileError> {
    let configured = site
        .get_trimmed(ALLOCATION_FILE_KEY)
        .filter(|v| !v.is_empty());
    let explicit = configured.is_some();
    let name = configured.unwrap_or_else(|| DEFAULT_FILE.to_string());
    let key_error = |reason: String| {
        QueueFileError::new(
            site.source_of(ALLOCATION_FILE_KEY)
                .unwrap_or_else(|| "yarn-site.xml".to_string()),
            reason,
        )
        .at_key(ALLOCATION_FILE_KEY)
    };
    let local = if let Some(rest) = name.strip_prefix("file://") {
        rest
    } else if let Some(rest) = name.strip_prefix("file:") {
        rest
    } else if let Some((scheme, _)) = name.split_once("://") {
        return Err(key_error(format!(
            "value '{name}': the {scheme} file system is not supported; \
             give a local path or a file: URL"
        )));
    } else {
        name.as_str()
    };
    let path = Path::new(local);
    let path = match conf_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    };
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => Ok(Some(path)),
        Ok(_) => Err(key_error(format!(
            "allocation file {} is not a regular file",
            path.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound && !explicit => {
            tracing::info!(
                "{}: not found; the fair scheduler runs with root.default only",
                path.display()
            );
            Ok(None)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(key_error(format!(
            "allocation file {} does not exist",
            path.display()
        ))),
        Err(e) => Err(key_error(format!(
            "cannot read allocation file {}: {e}",
            path.display()
        ))),
    }
}

// ----------------------------------------------------------------------
// yarn-site keys

struct SiteSettings {
    user_as_default_queue: bool,
    allow_undeclared_pools: bool,
    locality: LocalityDelay,
    heartbeat: HeartbeatAssignment,
}

impl SiteSettings {
    fn read(site: &Configuration) -> Result<SiteSettings, QueueFileError> {
        let set = |key: &str| site.get_trimmed(key).is_some_and(|v| !v.is_empty());
        let conf_err = |e| QueueFileError::from_conf("yarn-site.xml", e);
        let boolean = |key: &str, default: bool| -> Result<bool, QueueFileError> {
            if set(key) {
                site.get_bool(key).map_err(conf_err)
            } else {
                Ok(default)
            }
        };
        let threshold = |key: &str| -> Result<f64, QueueFileError> {
            if !set(key) {
                return Ok(DEFAULT_LOCALITY_THRESHOLD);
            }
            let v = site.get_f64(key).map_err(conf_err)?;
            if v > 1.0 || v.is_nan() {
                return Err(QueueFileError::from_conf(
                    "yarn-site.xml",
                    site.invalid_value(
                        key,
                        "must be a fraction of the cluster's nodes between 0 and 1, \
                         or negative to disable delay scheduling",
                    ),
                ));
            }
            Ok(v)
        };
        let assign_multiple = boolean(ASSIGN_MULTIPLE_KEY, false)?;
        let dynamic_max_assign = boolean(DYNAMIC_MAX_ASSIGN_KEY, true)?;
        let max_assign = if set(MAX_ASSIGN_KEY) {
            site.get_i64(MAX_ASSIGN_KEY).map_err(conf_err)?
        } else {
            -1
        };
        let max_containers = if !assign_multiple {
            Some(1)
        } else if dynamic_max_assign {
            tracing::info!(
                "{DYNAMIC_MAX_ASSIGN_KEY} is on: Hadoop assigns up to half of a node's free \
                 resources per heartbeat; Spindle assigns without a per-heartbeat count limit"
            );
            None
        } else if max_assign <= 0 {
            None
        } else {
            Some(usize::try_from(max_assign).unwrap_or(usize::MAX))
        };
        Ok(SiteSettings {
            user_as_default_queue: boolean(USER_AS_DEFAULT_QUEUE_KEY, true)?,
            allow_undeclared_pools: boolean(ALLOW_UNDECLARED_POOLS_KEY, true)?,
            locality: LocalityDelay::Fair {
                node_threshold: threshold(LOCALITY_THRESHOLD_NODE_KEY)?,
                rack_threshold: threshold(LOCALITY_THRESHOLD_RACK_KEY)?,
            },
            heartbeat: HeartbeatAssignment {
                max_containers,
                max_off_switch: None,
            },
        })
    }

    /// Hadoop's placement policy when the file gives none: `specified`,
    /// then `user` if user-as-default-queue, then `default` unless the
    /// user rule always places; queues may be created when
    /// allow-undeclared-pools.
    fn default_rules(&self) -> Vec<FairRule> {
        let create = self.allow_undeclared_pools;
        let mut rules = vec![FairRule::Specified { create }];
        if self.user_as_default_queue {
            rules.push(FairRule::User { create });
        }
        if !self.user_as_default_queue || !create {
            rules.push(FairRule::Default {
                queue: "root.default".to_string(),
                create: true,
            });
        }
        rules
    }
}

// ----------------------------------------------------------------------
// The allocation file

/// What the file says, before defaults are applied.
#[derive(Debug, Default)]
struct Allocations {
    /// The queues below root, or `None` when the file has no queues.
    root: Option<RawQueue>,
    users: BTreeMap<String, usize>,
    user_max_apps_default: Option<usize>,
    queue_max_apps_default: Option<usize>,
    /// `Some(None)`: `-1`, no limit.
    queue_max_am_share_default: Option<Option<f64>>,
    queue_max_resources_default: Option<ResourceBound>,
    default_policy: Option<AppOrdering>,
    placement: Option<Vec<FairRule>>,
}

#[derive(Debug, Default)]
struct RawQueue {
    name: String,
    path: String,
    /// `file:line` of the `<queue>` element.
    at: String,
    declared_parent: bool,
    children: Vec<RawQueue>,
    weight: Option<f64>,
    min: Option<ResourceBound>,
    max: Option<ResourceBound>,
    max_running_apps: Option<usize>,
    max_am_share: Option<Option<f64>>,
    /// The policy and where it was set.
    policy: Option<(AppOrdering, String)>,
    acl_submit: Option<String>,
    acl_administer: Option<String>,
}

/// Top-level elements Hadoop reads that Spindle has no use for.
const IGNORED_TOP_LEVEL: &[&str] = &[
    "defaultFairSharePreemptionTimeout",
    "fairSharePreemptionTimeout",
    "defaultMinSharePreemptionTimeout",
    "defaultFairSharePreemptionThreshold",
    "reservation-planner",
    "reservation-agent",
    "reservation-policy",
];

/// Queue elements Hadoop reads that Spindle has no use for.
const IGNORED_QUEUE_FIELDS: &[&str] = &[
    "minSharePreemptionTimeout",
    "fairSharePreemptionTimeout",
    "fairSharePreemptionThreshold",
    "allowPreemptionFrom",
    "maxChildResources",
    "maxContainerAllocation",
    "aclAdministerReservations",
    "aclListReservations",
    "aclSubmitReservations",
    "reservation",
];

/// The elements of the allocation file `xml` that Hadoop reads and Spindle
/// accepts without acting on them (preemption and reservations), with their
/// lines: what `spindle check-config` reports as not built. Empty when the
/// file does not parse (the reader's own error says why).
pub fn not_built_elements(xml: &str) -> Vec<(u32, String)> {
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let Ok(doc) = Document::parse_with_options(xml, options) else {
        return Vec::new();
    };
    doc.descendants()
        .filter(|n| n.is_element())
        .filter(|n| {
            let tag = n.tag_name().name();
            IGNORED_TOP_LEVEL.contains(&tag) || IGNORED_QUEUE_FIELDS.contains(&tag)
        })
        .map(|n| {
            (
                doc.text_pos_at(n.range().start).row,
                n.tag_name().name().to_string(),
            )
        })
        .collect()
}

fn parse_allocations(xml: &str, file: &str) -> Result<Allocations, QueueFileError> {
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(xml, options).map_err(|e| {
        let pos = e.pos();
        QueueFileError::new(
            format!("{file}:{}:{}", pos.row, pos.col),
            format!("malformed XML: {e}"),
        )
    })?;
    let parser = Parser { doc: &doc, file };
    parser.allocations()
}

struct Parser<'d, 'i> {
    doc: &'d Document<'i>,
    file: &'d str,
}

fn elements<'a, 'i>(node: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    node.children().filter(Node::is_element)
}

/// A whole number of applications: not negative.
fn count(text: &str) -> Result<usize, String> {
    let n: i64 = text
        .parse()
        .map_err(|_| format!("value '{text}' is not an integer"))?;
    usize::try_from(n).map_err(|_| format!("value '{text}' must not be negative"))
}

/// A number as Java's `Double.parseDouble` reads configuration values
/// (an `f`/`d` suffix allowed).
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().or_else(|| {
        text.strip_suffix(['f', 'F', 'd', 'D'])
            .filter(|rest| rest.ends_with(|c: char| c.is_ascii_digit() || c == '.'))
            .and_then(|rest| rest.parse::<f64>().ok())
    })
}

/// `maxAMShare` / `queueMaxAMShareDefault`: a fraction, capped at 1;
/// `-1` for no limit (`None`).
fn am_share(text: &str) -> Result<Option<f64>, String> {
    let v = number(text)
        .filter(|v| !v.is_nan())
        .ok_or_else(|| format!("value '{text}' is not a number"))?;
    if (v + 1.0).abs() < 1e-4 {
        return Ok(None);
    }
    if v < 0.0 {
        return Err(format!(
            "value '{text}' must be a fraction between 0 and 1, or -1 for no limit"
        ));
    }
    Ok(Some(v.min(1.0)))
}

/// A scheduling policy name: `fair`, `drf`, `fifo` (any letter case) or
/// Hadoop's class names for them.
fn policy(text: &str) -> Result<AppOrdering, String> {
    match text {
        FAIR_POLICY_CLASS => return Ok(AppOrdering::Fair),
        DRF_POLICY_CLASS => return Ok(AppOrdering::Drf),
        FIFO_POLICY_CLASS => return Ok(AppOrdering::Fifo),
        _ => {}
    }
    match text.to_ascii_lowercase().as_str() {
        "fair" => Ok(AppOrdering::Fair),
        "drf" => Ok(AppOrdering::Drf),
        "fifo" => Ok(AppOrdering::Fifo),
        _ => Err(format!(
            "unknown scheduling policy '{text}'; use fair, drf or fifo"
        )),
    }
}

impl<'d, 'i> Parser<'d, 'i> {
    /// `file:line` of `node`.
    fn at(&self, node: Node<'_, '_>) -> String {
        let pos = self.doc.text_pos_at(node.range().start);
        format!("{}:{}", self.file, pos.row)
    }

    fn error(
        &self,
        node: Node<'_, '_>,
        queue: Option<&str>,
        element: &str,
        reason: impl Into<String>,
    ) -> QueueFileError {
        let err = QueueFileError::new(self.at(node), reason).at_key(element);
        match queue {
            Some(q) => err.in_queue(q),
            None => err,
        }
    }

    /// All text of `node`, as written.
    fn raw_text(node: Node<'_, '_>) -> String {
        node.descendants()
            .filter(Node::is_text)
            .filter_map(|n| n.text())
            .collect()
    }

    /// The trimmed text of `node`, which must not be empty.
    fn text(&self, node: Node<'_, '_>, queue: Option<&str>) -> Result<String, QueueFileError> {
        let text = Self::raw_text(node).trim().to_string();
        if text.is_empty() {
            return Err(self.error(node, queue, node.tag_name().name(), "the element is empty"));
        }
        Ok(text)
    }

    /// Parses the text of `node` with `f`, locating its errors.
    fn value<T>(
        &self,
        node: Node<'_, '_>,
        queue: Option<&str>,
        f: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, QueueFileError> {
        let text = self.text(node, queue)?;
        f(&text).map_err(|reason| self.error(node, queue, node.tag_name().name(), reason))
    }

    fn allocations(&self) -> Result<Allocations, QueueFileError> {
        let root = self.doc.root_element();
        if root.tag_name().name() != "allocations" {
            return Err(self.error(
                root,
                None,
                root.tag_name().name(),
                "the top-level element must be <allocations>",
            ));
        }
        let mut alloc = Allocations::default();
        let mut top_queues = Vec::new();
        let mut explicit_root = None;
        for el in elements(root) {
            let tag = el.tag_name().name();
            match tag {
                "queue" | "pool" => {
                    let name = el.attribute("name").unwrap_or("").trim();
                    if name.eq_ignore_ascii_case("root") {
                        explicit_root = Some(el);
                    }
                    top_queues.push(el);
                }
                "user" => self.user(el, &mut alloc.users)?,
                "userMaxAppsDefault" => {
                    alloc.user_max_apps_default = Some(self.value(el, None, count)?)
                }
                "queueMaxAppsDefault" => {
                    alloc.queue_max_apps_default = Some(self.value(el, None, count)?)
                }
                "queueMaxAMShareDefault" => {
                    alloc.queue_max_am_share_default = Some(self.value(el, None, am_share)?)
                }
                "queueMaxResourcesDefault" => {
                    alloc.queue_max_resources_default =
                        Some(self.value(el, None, |t| resource(t, Bound::Max))?)
                }
                "defaultQueueSchedulingPolicy" | "defaultQueueSchedulingMode" => {
                    let p = self.value(el, None, policy)?;
                    if p == AppOrdering::Fifo {
                        return Err(self.error(
                            el,
                            None,
                            tag,
                            "the default scheduling policy cannot be fifo (fifo is for leaf \
                             queues only; set it on those queues)",
                        ));
                    }
                    alloc.default_policy = Some(p);
                }
                "queuePlacementPolicy" => alloc.placement = Some(self.placement_policy(el)?),
                ignored if IGNORED_TOP_LEVEL.contains(&ignored) => {
                    tracing::debug!("{}: <{ignored}> is not used by Spindle", self.at(el));
                }
                other => {
                    tracing::warn!(
                        "{}: bad element in allocations file: <{other}>; ignored",
                        self.at(el)
                    );
                }
            }
        }
        if let Some(root_el) = explicit_root {
            if top_queues.len() > 1 {
                return Err(self.error(
                    root_el,
                    Some("root"),
                    root_el.tag_name().name(),
                    "when the root queue is configured, no other queue may be placed alongside \
                     it; put them inside it",
                ));
            }
            alloc.root = Some(self.queue(root_el, None)?);
        } else if !top_queues.is_empty() {
            let mut root = RawQueue {
                name: "root".to_string(),
                path: "root".to_string(),
                at: self.file.to_string(),
                ..RawQueue::default()
            };
            for el in top_queues {
                let child = self.queue(el, Some("root"))?;
                self.check_unique(&root, &child, el)?;
                root.children.push(child);
            }
            alloc.root = Some(root);
        }
        Ok(alloc)
    }

    fn check_unique(
        &self,
        parent: &RawQueue,
        child: &RawQueue,
        el: Node<'_, '_>,
    ) -> Result<(), QueueFileError> {
        if parent.children.iter().any(|c| c.name == child.name) {
            return Err(self.error(
                el,
                Some(&child.path),
                el.tag_name().name(),
                format!("queue {} is declared twice", child.path),
            ));
        }
        Ok(())
    }

    fn user(
        &self,
        el: Node<'_, '_>,
        users: &mut BTreeMap<String, usize>,
    ) -> Result<(), QueueFileError> {
        let name = el.attribute("name").unwrap_or("").trim();
        if name.is_empty() {
            return Err(self.error(el, None, "user", "a <user> element needs a name attribute"));
        }
        for field in elements(el) {
            match field.tag_name().name() {
                "maxRunningApps" => {
                    users.insert(name.to_string(), self.value(field, None, count)?);
                }
                other => tracing::warn!(
                    "{}: <{other}> in <user name=\"{name}\"> is not a user setting; ignored",
                    self.at(field)
                ),
            }
        }
        Ok(())
    }

    /// A `<queue>` element and its subtree; `parent` is the parent's path
    /// (`None` for a top-level `<queue name="root">`).
    fn queue(&self, el: Node<'_, '_>, parent: Option<&str>) -> Result<RawQueue, QueueFileError> {
        let tag = el.tag_name().name();
        let name = el.attribute("name").unwrap_or("").trim().to_string();
        let shown_parent = parent.unwrap_or("root");
        if name.is_empty() {
            return Err(self.error(
                el,
                Some(shown_parent),
                tag,
                "a queue name must not be empty or consist only of whitespace",
            ));
        }
        if name.contains('.') {
            return Err(self.error(
                el,
                Some(shown_parent),
                tag,
                format!("queue name ({name}) must not contain a period"),
            ));
        }
        let (name, path) = match parent {
            None => ("root".to_string(), "root".to_string()),
            Some(p) => (name.clone(), format!("{p}.{name}")),
        };
        let mut queue = RawQueue {
            name,
            path,
            at: self.at(el),
            declared_parent: el.attribute("type") == Some("parent"),
            ..RawQueue::default()
        };
        let path = queue.path.clone();
        let q = Some(path.as_str());
        for field in elements(el) {
            let field_name = field.tag_name().name();
            match field_name {
                "weight" => {
                    queue.weight = Some(self.value(field, q, |t| {
                        number(t)
                            .filter(|w| *w >= 0.0 && w.is_finite())
                            .ok_or_else(|| format!("value '{t}' must be a number, 0 or more"))
                    })?)
                }
                "minResources" => {
                    queue.min = Some(self.value(field, q, |t| resource(t, Bound::Min))?)
                }
                "maxResources" => {
                    queue.max = Some(self.value(field, q, |t| resource(t, Bound::Max))?)
                }
                "maxRunningApps" => queue.max_running_apps = Some(self.value(field, q, count)?),
                "maxAMShare" => queue.max_am_share = Some(self.value(field, q, am_share)?),
                "schedulingPolicy" | "schedulingMode" => {
                    queue.policy = Some((self.value(field, q, policy)?, self.at(field)))
                }
                "aclSubmitApps" => queue.acl_submit = Some(Self::raw_text(field)),
                "aclAdministerApps" => queue.acl_administer = Some(Self::raw_text(field)),
                "queue" | "pool" => {
                    let child = self.queue(field, Some(&queue.path))?;
                    self.check_unique(&queue, &child, field)?;
                    queue.children.push(child);
                }
                ignored if IGNORED_QUEUE_FIELDS.contains(&ignored) => {
                    tracing::debug!("{}: <{ignored}> is not used by Spindle", self.at(field));
                }
                other => tracing::warn!(
                    "{}: queue {}: unknown element <{other}>; ignored",
                    self.at(field),
                    queue.path
                ),
            }
        }
        if let (Some(ResourceBound::Absolute(min)), Some(ResourceBound::Absolute(max))) =
            (queue.min, queue.max)
        {
            if !min.fits_in(&max) {
                tracing::warn!(
                    "{}: queue {} has maxResources {max} below its minResources {min}",
                    queue.at,
                    queue.path
                );
            }
        }
        Ok(queue)
    }

    fn placement_policy(&self, el: Node<'_, '_>) -> Result<Vec<FairRule>, QueueFileError> {
        let mut rules = Vec::new();
        for rule_el in elements(el) {
            rules.push(self.rule(rule_el)?);
        }
        if rules.is_empty() {
            return Err(self.error(
                el,
                None,
                "queuePlacementPolicy",
                "the placement policy has no rules",
            ));
        }
        if let Some(i) = rules[..rules.len() - 1]
            .iter()
            .position(FairRule::is_terminal)
        {
            tracing::warn!(
                "{}: queuePlacementPolicy: rules after rule {} ({}) can never be reached",
                self.at(el),
                i + 1,
                rules[i]
            );
        }
        Ok(rules)
    }

    fn rule(&self, el: Node<'_, '_>) -> Result<FairRule, QueueFileError> {
        let tag = el.tag_name().name();
        if tag != "rule" {
            return Err(self.error(
                el,
                None,
                tag,
                format!("unexpected element <{tag}> in <queuePlacementPolicy>; rules are written <rule name=\"...\"/>"),
            ));
        }
        let name = el.attribute("name").unwrap_or("").trim();
        // Hadoop: an absent or empty create means true; otherwise only
        // "true" (any case) does.
        let create = el
            .attribute("create")
            .is_none_or(|c| c.is_empty() || c.trim().eq_ignore_ascii_case("true"));
        Ok(match name {
            "" => return Err(self.error(el, None, "rule", "no name provided for a rule element")),
            "specified" => FairRule::Specified { create },
            "user" => FairRule::User { create },
            "primaryGroup" => FairRule::PrimaryGroup { create },
            "secondaryGroupExistingQueue" => FairRule::SecondaryGroupExistingQueue,
            "nestedUserQueue" => {
                let Some(inner_el) = elements(el).find(|c| c.tag_name().name() == "rule") else {
                    return Err(self.error(
                        el,
                        None,
                        "rule",
                        "no nested rule specified in the nestedUserQueue rule",
                    ));
                };
                FairRule::NestedUserQueue {
                    create,
                    inner: Box::new(self.rule(inner_el)?),
                }
            }
            "default" => {
                let queue = el.attribute("queue").unwrap_or("");
                let queue = if queue.is_empty() {
                    "root.default".to_string()
                } else if is_valid_queue_name(queue) {
                    assure_root(queue)
                } else {
                    return Err(self.error(
                        el,
                        None,
                        "rule",
                        format!("the default rule names an illegal queue '{queue}'"),
                    ));
                };
                FairRule::Default { queue, create }
            }
            "reject" => FairRule::Reject,
            other => {
                return Err(self.error(
                    el,
                    None,
                    "rule",
                    format!(
                        "no rule class found for {other}; the rules are specified, user, \
                         primaryGroup, secondaryGroupExistingQueue, nestedUserQueue, default \
                         and reject"
                    ),
                ))
            }
        })
    }
}

// ----------------------------------------------------------------------
// Resources

/// Whether a resource string is a minimum or a maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// `minResources`: absolute amounts only; unnamed resources are 0.
    Min,
    /// `maxResources` and `queueMaxResourcesDefault`: unnamed resources
    /// are unbounded (100% in the percentage forms).
    Max,
}

const UNBOUNDED: Resource = Resource {
    memory_mb: i64::MAX,
    vcores: i32::MAX,
};

/// Parses Hadoop's resource forms: `1024 mb, 2 vcores`,
/// `X% memory, Y% cpu`, `50%`, `memory-mb=1024, vcores=2` and
/// `memory-mb=50%, vcores=25%`.
fn resource(text: &str, bound: Bound) -> Result<ResourceBound, String> {
    let parsed = if text.contains('=') {
        new_style(text, bound)?
    } else if text.contains('%') {
        let lower = text.to_ascii_lowercase();
        let parts: Vec<&str> = lower.split(',').collect();
        let (memory, vcores) = if parts.len() == 1 {
            let p = percentage(&lower, "")?;
            (p, p)
        } else {
            (percentage(&lower, "memory")?, percentage(&lower, "cpu")?)
        };
        ResourceBound::Percent {
            memory: memory.min(100.0),
            vcores: vcores.min(100.0),
        }
    } else {
        let lower = text.to_ascii_lowercase();
        let memory = amount(&lower, "mb")?;
        let vcores = amount(&lower, "vcores")?;
        ResourceBound::Absolute(Resource::new(memory, vcores_i32(vcores, text)?))
    };
    if bound == Bound::Min && matches!(parsed, ResourceBound::Percent { .. }) {
        return Err(format!(
            "value '{text}': a minimum must be an absolute amount such as \
             '1024 mb, 2 vcores' or 'memory-mb=1024, vcores=2'"
        ));
    }
    Ok(parsed)
}

fn vcores_i32(v: i64, text: &str) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("value '{text}': {v} vcores is out of range"))
}

/// `name=value` pairs, all absolute or all percentages.
fn new_style(text: &str, bound: Bound) -> Result<ResourceBound, String> {
    let invalid = |why: String| format!("invalid resource definition '{text}': {why}");
    let as_percent = text.contains('%');
    let mut memory: Option<f64> = None;
    let mut vcores: Option<f64> = None;
    for item in text.split(',') {
        let parts: Vec<&str> = item.split('=').collect();
        let [name, value] = parts.as_slice() else {
            return Err(invalid(
                "every resource must be of the form name=value".into(),
            ));
        };
        let (name, value) = (name.trim(), value.trim());
        let v = if as_percent {
            percentage(value, "").map_err(|_| {
                invalid(format!(
                    "the values must all be percentages; '{value}' is not a non-negative \
                     number followed by %"
                ))
            })?
        } else {
            let n: i64 = value.parse().map_err(|_| {
                invalid(format!(
                    "the values must all be integers; '{value}' is not one"
                ))
            })?;
            if n < 0 {
                return Err(invalid(format!("{name} must not be negative")));
            }
            n as f64
        };
        let slot = match name {
            "memory-mb" => &mut memory,
            "vcores" => &mut vcores,
            other => {
                return Err(invalid(format!(
                    "the resource name '{other}' is not recognized; Spindle schedules \
                     memory-mb and vcores"
                )))
            }
        };
        *slot = Some(v);
    }
    if as_percent {
        return Ok(ResourceBound::Percent {
            memory: memory.unwrap_or(100.0).min(100.0),
            vcores: vcores.unwrap_or(100.0).min(100.0),
        });
    }
    let missing = match bound {
        Bound::Min => Resource::ZERO,
        Bound::Max => UNBOUNDED,
    };
    let memory_mb = memory.map_or(missing.memory_mb, |m| m as i64);
    let vcores = match vcores {
        Some(v) => vcores_i32(v as i64, text)?,
        None => missing.vcores,
    };
    Ok(ResourceBound::Absolute(Resource::new(memory_mb, vcores)))
}

/// The number written right before `%` (then optional whitespace and
/// `unit`), as a percentage; Hadoop's `(-?\d+(\.\d*)?)\s*%\s*<unit>`.
fn percentage(text: &str, unit: &str) -> Result<f64, String> {
    for (at, _) in text.match_indices('%') {
        let after = text[at + 1..].trim_start();
        if !after.starts_with(unit) {
            continue;
        }
        let Some(number) = number_before(&text[..at], true) else {
            continue;
        };
        let value: f64 = number
            .parse()
            .map_err(|_| format!("invalid percentage '{number}'"))?;
        if value < 0.0 {
            return Err(format!(
                "invalid percentage in '{text}': a percentage must not be negative"
            ));
        }
        return Ok(value);
    }
    if unit.is_empty() {
        Err(format!("invalid percentage: '{text}'"))
    } else {
        Err(format!("value '{text}': missing resource: {unit}"))
    }
}

/// The integer written right before `unit`; Hadoop's
/// `(-?\d+)(\.\d*)?\s*<unit>` (a fraction is ignored).
fn amount(text: &str, unit: &str) -> Result<i64, String> {
    for (at, _) in text.match_indices(unit) {
        let Some(number) = number_before(&text[..at], true) else {
            continue;
        };
        let whole = number.split('.').next().unwrap_or(number);
        let value: i64 = whole
            .parse()
            .map_err(|_| format!("value '{text}': {whole} {unit} is out of range"))?;
        if value < 0 {
            return Err(format!(
                "value '{text}': invalid value of {unit}: {value}, it must not be negative"
            ));
        }
        return Ok(value);
    }
    Err(format!(
        "value '{text}': missing resource: {unit} (expected e.g. '1024 mb, 2 vcores')"
    ))
}

/// The number (`-?digits(.digits*)?`) that `before` ends with, after
/// trailing whitespace.
fn number_before(before: &str, allow_fraction: bool) -> Option<&str> {
    let trimmed = before.trim_end();
    let bytes = trimmed.as_bytes();
    let mut start = bytes.len();
    while start > 0
        && (bytes[start - 1].is_ascii_digit() || (allow_fraction && bytes[start - 1] == b'.'))
    {
        start -= 1;
    }
    let mut candidate = &trimmed[start..];
    // The number must start with a digit: `.5` is not one.
    while candidate.starts_with('.') {
        candidate = &candidate[1..];
        start += 1;
    }
    if candidate.is_empty() || candidate.matches('.').count() > 1 {
        return None;
    }
    if start > 0 && bytes[start - 1] == b'-' {
        return Some(&trimmed[start - 1..]);
    }
    Some(candidate)
}

// ----------------------------------------------------------------------
// The tree

fn build(alloc: Allocations, site: &SiteSettings, file: &str) -> Result<QueueFile, QueueFileError> {
    let defaults = FairDefaults {
        max_resources: alloc.queue_max_resources_default,
        max_running_apps: alloc.queue_max_apps_default,
        max_am_share: alloc
            .queue_max_am_share_default
            .unwrap_or(Some(DEFAULT_MAX_AM_SHARE)),
        ordering: alloc.default_policy.unwrap_or(AppOrdering::Fair),
    };
    let raw_root = alloc.root.unwrap_or_else(|| RawQueue {
        name: "root".to_string(),
        path: "root".to_string(),
        at: file.to_string(),
        ..RawQueue::default()
    });
    let mut root = convert(raw_root, None, &defaults)?;
    // Hadoop's QueueManager always has root.default.
    if !root.children.iter().any(|c| c.name == "default") {
        root.children.push(defaults.queue("default", true));
    }
    root.acl_submit_applications
        .get_or_insert_with(|| "*".to_string());
    root.acl_administer_queue
        .get_or_insert_with(|| "*".to_string());
    let resource_calculator = if root.ordering == AppOrdering::Drf {
        ResourceCalculatorKind::Dominant
    } else {
        ResourceCalculatorKind::Memory
    };
    let tree = QueueTreeConfig {
        kind: SchedulerKind::Fair,
        root,
        resource_calculator,
        user_max_running_apps: alloc.users,
        user_max_running_apps_default: alloc.user_max_apps_default,
        dynamic_leaf: Some(defaults.queue(DYNAMIC_LEAF_NAME, true)),
    };
    let rules = alloc.placement.unwrap_or_else(|| site.default_rules());
    Ok(QueueFile {
        tree,
        placement: Placement::fair(rules, defaults),
        locality: site.locality,
        heartbeat: site.heartbeat,
        source: None,
    })
}

/// The queue `raw` with the file's defaults applied, checking Hadoop's
/// policy rules: fifo only on leaves, no drf below a fair parent.
fn convert(
    raw: RawQueue,
    parent: Option<(&str, AppOrdering)>,
    defaults: &FairDefaults,
) -> Result<QueueConfig, QueueFileError> {
    let is_parent = !raw.children.is_empty() || raw.declared_parent || raw.path == "root";
    let (ordering, policy_at) = match &raw.policy {
        Some((o, at)) => (*o, at.clone()),
        None => (defaults.ordering, raw.at.clone()),
    };
    let policy_error = |reason: String| {
        QueueFileError::new(policy_at.clone(), reason)
            .in_queue(&raw.path)
            .at_key("schedulingPolicy")
    };
    if is_parent && ordering == AppOrdering::Fifo {
        return Err(policy_error(format!(
            "scheduling policy fifo does not apply to queue {}: fifo is for leaf queues only; \
             use fair or drf for a parent",
            raw.path
        )));
    }
    if let Some((parent_path, AppOrdering::Fair)) = parent {
        if ordering == AppOrdering::Drf {
            return Err(policy_error(format!(
                "queue {} cannot use drf because its parent {parent_path} uses fair; \
                 use fair or fifo below a fair queue, or make {parent_path} drf",
                raw.path
            )));
        }
    }
    let mut queue = defaults.queue(&raw.name, !is_parent);
    queue.share = QueueShare::Fair {
        weight: raw.weight.unwrap_or(1.0),
        min: raw.min,
        max: raw.max.or(defaults.max_resources),
    };
    if let Some(n) = raw.max_running_apps {
        queue.max_running_apps = Some(n);
    }
    if !is_parent {
        if let Some(share) = raw.max_am_share {
            queue.max_am_share = share;
        }
    }
    queue.ordering = ordering;
    queue.acl_submit_applications = raw.acl_submit;
    queue.acl_administer_queue = raw.acl_administer;
    queue.declared_parent = raw.declared_parent;
    let path = raw.path;
    for child in raw.children {
        queue
            .children
            .push(convert(child, Some((&path, ordering)), defaults)?);
    }
    tracing::trace!(queue = %path, policy = ordering.name(), "fair queue configured");
    Ok(queue)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue_files::Placed;

    fn fixture_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/queues")
    }

    const FILE: &str = "/etc/hadoop/fair-scheduler.xml";

    fn parse(xml: &str) -> Result<QueueFile, QueueFileError> {
        from_str(xml, FILE, &Configuration::empty())
    }

    fn ok(xml: &str) -> QueueFile {
        parse(xml).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(xml: &str) -> QueueFileError {
        match parse(xml) {
            Ok(f) => panic!("accepted: {:#?}", f.tree),
            Err(e) => e,
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

    fn place(
        file: &QueueFile,
        requested: &str,
        user: &str,
        groups: &[&str],
    ) -> Result<Placed, String> {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        file.placement.place(requested, user, &groups, &file.tree)
    }

    fn placed(queue: &str, create: bool) -> Result<Placed, String> {
        Ok(Placed {
            queue: queue.to_string(),
            create,
        })
    }

    fn absolute(memory_mb: i64, vcores: i32) -> Option<ResourceBound> {
        Some(ResourceBound::Absolute(Resource::new(memory_mb, vcores)))
    }

    fn percent(memory: f64, vcores: f64) -> Option<ResourceBound> {
        Some(ResourceBound::Percent { memory, vcores })
    }

    #[test]
    fn nested_allocation_file() {
        let file = load(
            &Configuration::empty(),
            Some(&fixture_dir().join("fair-nested")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            file.source,
            Some(fixture_dir().join("fair-nested").join(DEFAULT_FILE))
        );
        let defaults = FairDefaults {
            max_resources: absolute(262_144, 64),
            max_running_apps: Some(20),
            max_am_share: Some(0.4),
            ordering: AppOrdering::Drf,
        };

        let mut etl = defaults.queue("etl", true);
        etl.share = QueueShare::Fair {
            weight: 1.0,
            min: absolute(4096, 2),
            max: absolute(32_768, 8),
        };
        etl.max_running_apps = Some(10);
        etl.max_am_share = None;
        etl.ordering = AppOrdering::Fifo;

        let mut adhoc = defaults.queue("adhoc", true);
        adhoc.share = QueueShare::Fair {
            weight: 1.0,
            min: None,
            max: percent(25.0, 50.0),
        };
        adhoc.max_am_share = Some(1.0);

        let mut eng = defaults.queue("eng", false);
        eng.declared_parent = false;
        eng.share = QueueShare::Fair {
            weight: 3.0,
            min: absolute(10_240, 10),
            max: percent(50.0, 40.0),
        };
        eng.acl_submit_applications = Some("alice,bob eng".into());
        eng.children = vec![etl, adhoc];

        let mut users = defaults.queue("users", false);
        users.share = QueueShare::Fair {
            weight: 1.0,
            min: None,
            max: percent(50.0, 50.0),
        };

        let mut legacy = defaults.queue("legacy", true);
        legacy.share = QueueShare::Fair {
            weight: 0.5,
            min: None,
            max: Some(ResourceBound::Absolute(Resource::new(i64::MAX, 16))),
        };
        legacy.ordering = AppOrdering::Fair;
        legacy.acl_administer_queue = Some("ops".into());

        let mut root = defaults.queue("root", false);
        root.declared_parent = false;
        root.acl_submit_applications = Some("*".into());
        root.acl_administer_queue = Some("*".into());
        root.children = vec![eng, users, legacy, defaults.queue("default", true)];

        let expected = QueueTreeConfig {
            kind: SchedulerKind::Fair,
            root,
            resource_calculator: ResourceCalculatorKind::Dominant,
            user_max_running_apps: [("alice".to_string(), 3), ("bob".to_string(), 0)]
                .into_iter()
                .collect(),
            user_max_running_apps_default: Some(5),
            dynamic_leaf: Some(defaults.queue("dynamic", true)),
        };
        assert_eq!(file.tree, expected);
        assert_eq!(
            file.locality,
            LocalityDelay::Fair {
                node_threshold: -1.0,
                rack_threshold: -1.0
            }
        );
        assert_eq!(
            file.heartbeat,
            HeartbeatAssignment {
                max_containers: Some(1),
                max_off_switch: None
            }
        );

        // Rules: specified(create=false), nestedUserQueue(primaryGroup
        // create=false), secondaryGroupExistingQueue, user(create=false),
        // default(legacy).
        assert_eq!(
            place(&file, "eng.etl", "x", &["g"]),
            placed("root.eng.etl", false)
        );
        assert_eq!(
            place(&file, "root.eng", "x", &["g"]),
            Err("root.eng is not a leaf queue".to_string())
        );
        assert_eq!(
            place(&file, "default", "alice", &["eng"]),
            placed("root.eng.alice", true)
        );
        assert_eq!(
            place(&file, "default", "first.last", &["eng"]),
            placed("root.eng.first_dot_last", true)
        );
        // root.users is a parent without children (type="parent").
        assert_eq!(
            place(&file, "default", "dave", &["users"]),
            placed("root.users.dave", true)
        );
        assert!(!find(&file.tree, "root.users").is_leaf());
        // Not creatable by specified; secondary group with a queue.
        assert_eq!(
            place(&file, "nope", "carol", &["nogroup", "legacy"]),
            placed("root.legacy", false)
        );
        // Nothing else: the default rule's queue.
        assert_eq!(
            place(&file, "default", "erin", &["x"]),
            placed("root.legacy", false)
        );
        // A queue created for a user gets the file's defaults.
        assert_eq!(
            file.placement.new_queue("dave", true),
            Some(defaults.queue("dave", true))
        );
        assert_eq!(
            file.placement.describe(),
            "fair: placement rules specified(create=false), nestedUserQueue(create=true, \
             parent from primaryGroup(create=false)), secondaryGroupExistingQueue, \
             user(create=false), default(queue=root.legacy, create=true)"
        );
    }

    #[test]
    fn no_file_means_root_default() {
        let dir = fixture_dir().join("no-such-directory-here");
        let file = load(&Configuration::empty(), Some(&dir)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.source, None);
        let defaults = FairDefaults::default();
        let mut root = defaults.queue("root", false);
        root.declared_parent = false;
        root.acl_submit_applications = Some("*".into());
        root.acl_administer_queue = Some("*".into());
        root.children = vec![defaults.queue("default", true)];
        assert_eq!(file.tree.root, root);
        assert_eq!(file.tree.kind, SchedulerKind::Fair);
        assert_eq!(
            file.tree.resource_calculator,
            ResourceCalculatorKind::Memory
        );
        assert_eq!(find(&file.tree, "root.default").max_am_share, Some(0.5));
        // Hadoop's default policy: specified, then user, creating queues.
        assert_eq!(
            place(&file, "default", "alice", &[]),
            placed("root.alice", true)
        );
        assert_eq!(place(&file, "x.y", "alice", &[]), placed("root.x.y", true));
        assert_eq!(
            place(&file, "root.default", "alice", &[]),
            placed("root.default", false)
        );
    }

    #[test]
    fn allocation_file_location() {
        let mut site = Configuration::empty();
        site.set(ALLOCATION_FILE_KEY, "fair-nested/fair-scheduler.xml");
        let file = load(&site, Some(&fixture_dir())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            file.source,
            Some(fixture_dir().join("fair-nested/fair-scheduler.xml"))
        );
        let absolute_url = format!(
            "file://{}",
            fixture_dir()
                .join("fair-nested/fair-scheduler.xml")
                .display()
        );
        site.set(ALLOCATION_FILE_KEY, absolute_url.as_str());
        let file = load(&site, None).unwrap_or_else(|e| panic!("{e}"));
        assert!(file.source.is_some());

        site.set(ALLOCATION_FILE_KEY, "missing-allocations.xml");
        let e = load(&site, Some(&fixture_dir())).expect_err("explicit file missing");
        assert_eq!(e.key.as_deref(), Some(ALLOCATION_FILE_KEY));
        assert!(e.reason.contains("does not exist"), "{e}");
        assert!(e.reason.contains("missing-allocations.xml"), "{e}");

        site.set(ALLOCATION_FILE_KEY, "hdfs://nn:8020/conf/fair.xml");
        let e = load(&site, Some(&fixture_dir())).expect_err("remote file");
        assert!(
            e.reason.contains("hdfs file system is not supported"),
            "{e}"
        );
    }

    #[test]
    fn default_policy_from_yarn_site() {
        let mut site = Configuration::empty();
        site.set(ALLOW_UNDECLARED_POOLS_KEY, "false");
        let xml = "<allocations><queue name=\"eng\"/></allocations>";
        let file = from_str(xml, FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        // specified(create=false), user(create=false), default(create=true).
        assert_eq!(place(&file, "eng", "alice", &[]), placed("root.eng", false));
        assert_eq!(
            place(&file, "nope", "alice", &[]),
            placed("root.default", false)
        );
        assert_eq!(
            place(&file, "default", "alice", &[]),
            placed("root.default", false)
        );

        let mut site = Configuration::empty();
        site.set(USER_AS_DEFAULT_QUEUE_KEY, "false");
        let file = from_str(xml, FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            place(&file, "default", "alice", &[]),
            placed("root.default", false)
        );
        assert_eq!(place(&file, "new", "alice", &[]), placed("root.new", true));
        assert_eq!(
            file.placement.describe(),
            "fair: placement rules specified(create=true), default(queue=root.default, create=true)"
        );
    }

    #[test]
    fn yarn_site_scheduling_keys() {
        let mut site = Configuration::empty();
        site.set(LOCALITY_THRESHOLD_NODE_KEY, "0.5");
        site.set(LOCALITY_THRESHOLD_RACK_KEY, "0.25");
        site.set(ASSIGN_MULTIPLE_KEY, "true");
        site.set(DYNAMIC_MAX_ASSIGN_KEY, "false");
        site.set(MAX_ASSIGN_KEY, "4");
        let file = from_str("<allocations/>", FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            file.locality,
            LocalityDelay::Fair {
                node_threshold: 0.5,
                rack_threshold: 0.25
            }
        );
        assert_eq!(file.heartbeat.max_containers, Some(4));
        site.set(MAX_ASSIGN_KEY, "-1");
        let file = from_str("<allocations/>", FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.heartbeat.max_containers, None);
        site.set(DYNAMIC_MAX_ASSIGN_KEY, "true");
        site.set(MAX_ASSIGN_KEY, "4");
        let file = from_str("<allocations/>", FILE, &site).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.heartbeat.max_containers, None);

        site.set(LOCALITY_THRESHOLD_NODE_KEY, "2");
        let e = from_str("<allocations/>", FILE, &site).expect_err("threshold above 1");
        assert_eq!(e.key.as_deref(), Some(LOCALITY_THRESHOLD_NODE_KEY));
        site.set(LOCALITY_THRESHOLD_NODE_KEY, "0.5");
        site.set(ASSIGN_MULTIPLE_KEY, "often");
        let e = from_str("<allocations/>", FILE, &site).expect_err("not a boolean");
        assert_eq!(e.key.as_deref(), Some(ASSIGN_MULTIPLE_KEY));
    }

    #[test]
    fn explicit_root_queue() {
        let file = ok(r#"<allocations>
  <queue name="root">
    <schedulingPolicy>drf</schedulingPolicy>
    <aclSubmitApps> </aclSubmitApps>
    <queue name="a"><weight>2</weight></queue>
    <queue name="default"><weight>0</weight></queue>
  </queue>
</allocations>"#);
        assert_eq!(
            file.tree.resource_calculator,
            ResourceCalculatorKind::Dominant
        );
        assert_eq!(file.tree.root.acl_submit_applications.as_deref(), Some(" "));
        assert_eq!(file.tree.root.acl_administer_queue.as_deref(), Some("*"));
        let names: Vec<&str> = file
            .tree
            .root
            .children
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["a", "default"]);
        assert_eq!(
            find(&file.tree, "root.default").share,
            QueueShare::Fair {
                weight: 0.0,
                min: None,
                max: None
            }
        );
        // A queue without its own policy takes the file's default (fair),
        // not its parent's.
        assert_eq!(find(&file.tree, "root.a").ordering, AppOrdering::Fair);
    }

    #[test]
    fn resource_forms() {
        let max = |t: &str| resource(t, Bound::Max).unwrap_or_else(|e| panic!("{t}: {e}"));
        let min = |t: &str| resource(t, Bound::Min).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(Some(max("1024 mb, 2 vcores")), absolute(1024, 2));
        assert_eq!(Some(max("2vcores,1024MB")), absolute(1024, 2));
        assert_eq!(Some(max("1024.7 mb, 3 vcores")), absolute(1024, 3));
        assert_eq!(Some(max("50%")), percent(50.0, 50.0));
        assert_eq!(Some(max("12.5 %")), percent(12.5, 12.5));
        assert_eq!(Some(max("20% cpu, 30% memory")), percent(30.0, 20.0));
        assert_eq!(Some(max("30.5% memory, 20% cpu")), percent(30.5, 20.0));
        assert_eq!(Some(max("150%")), percent(100.0, 100.0));
        // One percentage without a unit applies to every resource.
        assert_eq!(Some(max("20% cpu")), percent(20.0, 20.0));
        assert_eq!(Some(max("vcores=2, memory-mb=1024")), absolute(1024, 2));
        assert_eq!(Some(max("memory-mb=1024")), absolute(1024, i32::MAX));
        assert_eq!(Some(min("memory-mb=1024")), absolute(1024, 0));
        assert_eq!(Some(max("vcores=50%, memory-mb=25%")), percent(25.0, 50.0));
        assert_eq!(Some(max("vcores=50%")), percent(100.0, 50.0));
        for bad in [
            "",
            "lots",
            "1024 mb",
            "2 vcores",
            "-1024 mb, 2 vcores",
            "-5%",
            "vcores=2, memory-mb",
            "vcores=two",
            "vcores=-2",
            "gpus=1, vcores=2",
            "vcores=50%, memory-mb=1024",
            "1024 mb, 99999999999 vcores",
        ] {
            assert!(resource(bad, Bound::Max).is_err(), "accepted {bad:?}");
        }
        let e = resource("50%", Bound::Min).expect_err("percent minimum");
        assert!(e.contains("absolute amount"), "{e}");
    }

    #[test]
    fn errors_name_file_queue_and_element() {
        let cases: &[(&str, Option<&str>, &str, &str, u32)] = &[
            (
                "<allocations>\n<queue name=\"a\">\n<weight>heavy</weight>\n</queue>\n</allocations>",
                Some("root.a"),
                "weight",
                "value 'heavy' must be a number",
                3,
            ),
            (
                "<allocations>\n<queue name=\"a\">\n<queue name=\"b\">\n\
                 <maxResources>lots</maxResources>\n</queue>\n</queue>\n</allocations>",
                Some("root.a.b"),
                "maxResources",
                "missing resource: mb",
                4,
            ),
            (
                "<allocations>\n<queue name=\"a\">\n<minResources>10%</minResources>\n</queue>\n</allocations>",
                Some("root.a"),
                "minResources",
                "absolute amount",
                3,
            ),
            (
                "<allocations>\n<queue name=\"a\">\n<maxRunningApps>-3</maxRunningApps>\n</queue>\n</allocations>",
                Some("root.a"),
                "maxRunningApps",
                "must not be negative",
                3,
            ),
            (
                "<allocations>\n<queue name=\"a\">\n<maxAMShare>-0.5</maxAMShare>\n</queue>\n</allocations>",
                Some("root.a"),
                "maxAMShare",
                "or -1 for no limit",
                3,
            ),
            (
                "<allocations>\n<queue name=\"a\">\n<schedulingPolicy>lottery</schedulingPolicy>\n\
                 </queue>\n</allocations>",
                Some("root.a"),
                "schedulingPolicy",
                "unknown scheduling policy 'lottery'",
                3,
            ),
            (
                "<allocations>\n<queue name=\"a\">\n<schedulingPolicy>fifo</schedulingPolicy>\n\
                 <queue name=\"b\"/>\n</queue>\n</allocations>",
                Some("root.a"),
                "schedulingPolicy",
                "fifo is for leaf queues only",
                3,
            ),
            (
                "<allocations>\n<queue name=\"a\" type=\"parent\">\n\
                 <schedulingPolicy>FIFO</schedulingPolicy>\n</queue>\n</allocations>",
                Some("root.a"),
                "schedulingPolicy",
                "fifo is for leaf queues only",
                3,
            ),
            (
                "<allocations>\n<queue name=\"a\">\n<queue name=\"b\">\n\
                 <schedulingPolicy>drf</schedulingPolicy>\n</queue>\n</queue>\n</allocations>",
                Some("root.a.b"),
                "schedulingPolicy",
                "cannot use drf because its parent root.a uses fair",
                4,
            ),
            (
                "<allocations>\n<queue name=\"a.b\"/>\n</allocations>",
                Some("root"),
                "queue",
                "must not contain a period",
                2,
            ),
            (
                "<allocations>\n<queue name=\" \"/>\n</allocations>",
                Some("root"),
                "queue",
                "must not be empty",
                2,
            ),
            (
                "<allocations>\n<queue name=\"a\"/>\n<pool name=\"a\"/>\n</allocations>",
                Some("root.a"),
                "pool",
                "declared twice",
                3,
            ),
            (
                "<allocations>\n<queue name=\"root\"/>\n<queue name=\"a\"/>\n</allocations>",
                Some("root"),
                "queue",
                "no other queue may be placed alongside it",
                2,
            ),
        ];
        for (xml, queue, element, needle, line) in cases {
            let e = err(xml);
            assert_eq!(e.queue.as_deref(), *queue, "{e}");
            assert_eq!(e.key.as_deref(), Some(*element), "{e}");
            assert!(e.reason.contains(needle), "{e}");
            assert_eq!(e.file, format!("{FILE}:{line}"), "{e}");
        }
    }

    #[test]
    fn file_wide_errors() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "<allocations>\n<defaultQueueSchedulingPolicy>fifo</defaultQueueSchedulingPolicy>\n</allocations>",
                "defaultQueueSchedulingPolicy",
                "cannot be fifo",
            ),
            (
                "<allocations>\n<queueMaxAppsDefault>many</queueMaxAppsDefault>\n</allocations>",
                "queueMaxAppsDefault",
                "is not an integer",
            ),
            (
                "<allocations>\n<user name=\"alice\"><maxRunningApps>x</maxRunningApps></user>\n</allocations>",
                "maxRunningApps",
                "is not an integer",
            ),
            (
                "<allocations>\n<user><maxRunningApps>1</maxRunningApps></user>\n</allocations>",
                "user",
                "needs a name",
            ),
            (
                "<allocations>\n<queuePlacementPolicy>\n<rule name=\"primaryGroupp\"/>\n\
                 </queuePlacementPolicy>\n</allocations>",
                "rule",
                "no rule class found for primaryGroupp",
            ),
            (
                "<allocations>\n<queuePlacementPolicy>\n<rule name=\"nestedUserQueue\"/>\n\
                 </queuePlacementPolicy>\n</allocations>",
                "rule",
                "no nested rule",
            ),
            (
                "<allocations>\n<queuePlacementPolicy>\n<rule/>\n</queuePlacementPolicy>\n</allocations>",
                "rule",
                "no name provided",
            ),
            (
                "<allocations>\n<queuePlacementPolicy>\n<specified/>\n</queuePlacementPolicy>\n</allocations>",
                "specified",
                "rules are written <rule name=",
            ),
            (
                "<allocations>\n<queuePlacementPolicy>\n</queuePlacementPolicy>\n</allocations>",
                "queuePlacementPolicy",
                "has no rules",
            ),
            (
                "<allocations>\n<queuePlacementPolicy>\n<rule name=\"default\" queue=\"a.\"/>\n\
                 </queuePlacementPolicy>\n</allocations>",
                "rule",
                "illegal queue 'a.'",
            ),
            ("<configuration/>", "configuration", "must be <allocations>"),
        ];
        for (xml, element, needle) in cases {
            let e = err(xml);
            assert_eq!(e.key.as_deref(), Some(*element), "{e}");
            assert!(e.reason.contains(needle), "{e}");
            assert!(e.file.starts_with(&format!("{FILE}:")), "{e}");
        }
        let e = err("<allocations><queue name=\"a\"></allocations>");
        assert!(e.reason.starts_with("malformed XML"), "{e}");
        assert!(e.file.starts_with(&format!("{FILE}:1:")), "{e}");
    }

    #[test]
    fn placement_rules_from_the_file() {
        let file = ok(r#"<allocations>
  <queue name="eng"><queue name="etl"/></queue>
  <queue name="ops" type="parent"/>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="nestedUserQueue" create="false">
      <rule name="secondaryGroupExistingQueue"/>
    </rule>
    <rule name="primaryGroup" create="FALSE"/>
    <rule name="reject"/>
  </queuePlacementPolicy>
</allocations>"#);
        // specified, existing leaf.
        assert_eq!(
            place(&file, "eng.etl", "u", &["x"]),
            placed("root.eng.etl", false)
        );
        // nestedUserQueue over secondaryGroupExistingQueue, create=false:
        // the user queue must exist.
        assert_eq!(
            place(&file, "default", "etl", &["x", "eng"]),
            placed("root.eng.etl", false)
        );
        // ...and does not exist here: primaryGroup (create=false) neither:
        // reject.
        assert_eq!(
            place(&file, "default", "zed", &["x", "ops"]),
            Err(
                "Reject application submitted by user zed application rejected by placement rules."
                    .to_string()
            )
        );
        // primaryGroup: an existing parent is not a leaf.
        assert_eq!(
            place(&file, "default", "zed", &["eng"]),
            Err("root.eng is not a leaf queue".to_string())
        );
        // specified with create=false and an unknown queue falls through.
        assert_eq!(
            place(&file, "nope", "zed", &["x"]),
            Err(
                "Reject application submitted by user zed application rejected by placement rules."
                    .to_string()
            )
        );
        // The default rule with create=false and a missing queue passes on.
        let file = ok(r#"<allocations>
  <queuePlacementPolicy>
    <rule name="default" queue="missing" create="false"/>
    <rule name="user"/>
  </queuePlacementPolicy>
</allocations>"#);
        assert_eq!(
            place(&file, "default", "zed", &[]),
            placed("root.zed", true)
        );
    }
}
