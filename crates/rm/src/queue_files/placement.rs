//! Which leaf queue a submitted application goes to.
//!
//! * FIFO: always `root.default`.
//! * Capacity: the `queue-mappings` of `capacity-scheduler.xml`
//!   (`u:<user>:<queue>`, `g:<group>:<queue>` with `%user`,
//!   `%primary_group` and `%secondary_group`, as Hadoop 3.3's
//!   `UserGroupMappingPlacementRule` reads them), then the requested queue
//!   by full path or short name.
//! * Fair: the rules of `<queuePlacementPolicy>` (or Hadoop's default
//!   policy built from `yarn-site.xml`), tried in order, as Hadoop 3.3's
//!   fair-scheduler placement rules evaluate them.
//!
//! Rejections are complete sentences in Hadoop's wording where Hadoop has
//! one, without the application id (which this module does not know):
//! `Application submitted by user alice to unknown queue: etl`,
//! `Reject application submitted by user bob application rejected by placement rules.`,
//! `root.eng is not a leaf queue`.

use std::collections::BTreeMap;
use std::fmt;

use spindle_scheduler::{
    AppOrdering, QueueConfig, QueueRunState, QueueShare, QueueTreeConfig, ResourceBound,
};

/// The queue Hadoop uses when a submission names none.
pub const DEFAULT_QUEUE: &str = "default";

const USER_VAR: &str = "%user";
const PRIMARY_GROUP_VAR: &str = "%primary_group";
const SECONDARY_GROUP_VAR: &str = "%secondary_group";

/// Hadoop's `queueMaxAMShareDefault` when the allocation file sets none.
pub(crate) const DEFAULT_MAX_AM_SHARE: f64 = 0.5;

/// The settings of queues that are not configured, or not fully: those
/// created at submission and every queue's fallback.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FairDefaults {
    /// `queueMaxResourcesDefault`.
    pub(crate) max_resources: Option<ResourceBound>,
    /// `queueMaxAppsDefault`.
    pub(crate) max_running_apps: Option<usize>,
    /// `queueMaxAMShareDefault` (leaves only; `None` for no limit).
    pub(crate) max_am_share: Option<f64>,
    /// `defaultQueueSchedulingPolicy`.
    pub(crate) ordering: AppOrdering,
}

impl Default for FairDefaults {
    fn default() -> Self {
        FairDefaults {
            max_resources: None,
            max_running_apps: None,
            max_am_share: Some(DEFAULT_MAX_AM_SHARE),
            ordering: AppOrdering::Fair,
        }
    }
}

impl FairDefaults {
    /// A queue with nothing configured. A parent made here is marked
    /// `declared_parent`, so that it stays a parent before it has
    /// children.
    pub(crate) fn queue(&self, name: &str, leaf: bool) -> QueueConfig {
        QueueConfig {
            name: name.to_string(),
            children: Vec::new(),
            state: QueueRunState::Running,
            share: QueueShare::Fair {
                weight: 1.0,
                min: None,
                max: self.max_resources,
            },
            max_applications: None,
            max_running_apps: self.max_running_apps,
            max_am_share: if leaf { self.max_am_share } else { None },
            // The fair scheduler has no per-user share of a queue.
            user_limit_factor: None,
            minimum_user_limit_percent: 100.0,
            ordering: self.ordering,
            acl_submit_applications: None,
            acl_administer_queue: None,
            declared_parent: !leaf,
            // The fair scheduler has no application priorities.
            default_application_priority: 0,
        }
    }
}

/// Where an application was placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// Full path of the leaf (`root.eng.etl`).
    pub queue: String,
    /// True if the leaf does not exist yet and may be created (fair
    /// scheduler only). Missing parents on its path are created as well;
    /// [`Placement::new_queue`] gives their settings (and
    /// `QueueTreeConfig::dynamic_leaf` the leaf's).
    pub create: bool,
}

/// A scheduler's placement policy. See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    policy: Policy,
    /// Fair scheduler: the settings of queues created at submission.
    new_queues: Option<FairDefaults>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Policy {
    Fifo,
    Capacity {
        mappings: Vec<QueueMapping>,
        override_requested: bool,
    },
    Fair {
        rules: Vec<FairRule>,
    },
}

impl Placement {
    /// Hadoop's FIFO scheduler: every application goes to `root.default`.
    pub fn fifo() -> Placement {
        Placement {
            policy: Policy::Fifo,
            new_queues: None,
        }
    }

    /// The capacity scheduler's policy: `mappings` (already validated
    /// against the tree) and `queue-mappings-override.enable`.
    pub(crate) fn capacity(mappings: Vec<QueueMapping>, override_requested: bool) -> Placement {
        Placement {
            policy: Policy::Capacity {
                mappings,
                override_requested,
            },
            new_queues: None,
        }
    }

    /// The fair scheduler's policy.
    pub(crate) fn fair(rules: Vec<FairRule>, defaults: FairDefaults) -> Placement {
        Placement {
            policy: Policy::Fair { rules },
            new_queues: Some(defaults),
        }
    }

    /// The leaf for an application. `requested` is the
    /// ApplicationSubmissionContext queue (`"default"` when the client set
    /// none); `groups` the user's groups, primary group first. Returns the
    /// leaf or the reason the application is rejected.
    pub fn place(
        &self,
        requested: &str,
        user: &str,
        groups: &[String],
        tree: &QueueTreeConfig,
    ) -> Result<Placed, String> {
        match &self.policy {
            Policy::Fifo => Ok(Placed {
                queue: format!("root.{DEFAULT_QUEUE}"),
                create: false,
            }),
            Policy::Capacity {
                mappings,
                override_requested,
            } => {
                let index = QueueIndex::new(tree);
                place_capacity(
                    mappings,
                    *override_requested,
                    requested,
                    user,
                    groups,
                    &index,
                )
            }
            Policy::Fair { rules } => {
                let index = QueueIndex::new(tree);
                place_fair(rules, requested, user, groups, &index)
            }
        }
    }

    /// The settings of a queue the fair scheduler creates at submission
    /// (a [`Placed`] with `create`, or a missing parent on its path):
    /// weight 1 and the allocation file's `queueMaxResourcesDefault`,
    /// `queueMaxAppsDefault`, `queueMaxAMShareDefault` (leaves) and
    /// `defaultQueueSchedulingPolicy`. `None` for the other schedulers,
    /// which never create queues.
    pub fn new_queue(&self, short_name: &str, leaf: bool) -> Option<QueueConfig> {
        self.new_queues
            .as_ref()
            .map(|defaults| defaults.queue(short_name, leaf))
    }

    /// A one-line description for logs.
    pub fn describe(&self) -> String {
        match &self.policy {
            Policy::Fifo => "fifo: every application goes to root.default".to_string(),
            Policy::Capacity {
                mappings,
                override_requested,
            } => {
                if mappings.is_empty() {
                    "capacity: the requested queue (no queue-mappings)".to_string()
                } else {
                    let list: Vec<String> = mappings.iter().map(ToString::to_string).collect();
                    format!(
                        "capacity: queue-mappings {} (override the requested queue: {}), \
                         else the requested queue",
                        list.join(", "),
                        if *override_requested { "yes" } else { "no" }
                    )
                }
            }
            Policy::Fair { rules } => {
                let list: Vec<String> = rules.iter().map(ToString::to_string).collect();
                format!("fair: placement rules {}", list.join(", "))
            }
        }
    }
}

// ----------------------------------------------------------------------
// Queue lookups

/// The queues of a tree by full path, with whether each is a parent.
struct QueueIndex {
    queues: BTreeMap<String, bool>,
}

/// What a queue name refers to.
#[derive(Debug, PartialEq, Eq)]
enum Lookup {
    Found {
        path: String,
        parent: bool,
    },
    /// A short name several queues have (their full paths).
    Ambiguous(Vec<String>),
    Missing,
}

impl QueueIndex {
    fn new(tree: &QueueTreeConfig) -> QueueIndex {
        let queues = tree
            .root
            .walk()
            .into_iter()
            .map(|(path, q)| (path, !q.is_leaf()))
            .collect();
        QueueIndex { queues }
    }

    /// `Some(is_parent)` if `path` (a full path) exists.
    fn get(&self, path: &str) -> Option<bool> {
        self.queues.get(path).copied()
    }

    /// A queue by full path, or by short name when exactly one queue has
    /// it (the capacity scheduler's lookup).
    fn lookup(&self, name: &str) -> Lookup {
        if let Some(&parent) = self.queues.get(name) {
            return Lookup::Found {
                path: name.to_string(),
                parent,
            };
        }
        let matches: Vec<(&String, bool)> = self
            .queues
            .iter()
            .filter(|(path, _)| short_name(path) == name)
            .map(|(path, &parent)| (path, parent))
            .collect();
        match matches.as_slice() {
            [] => Lookup::Missing,
            [(path, parent)] => Lookup::Found {
                path: (*path).clone(),
                parent: *parent,
            },
            many => Lookup::Ambiguous(many.iter().map(|(p, _)| (*p).clone()).collect()),
        }
    }
}

fn short_name(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

// ----------------------------------------------------------------------
// Capacity scheduler: queue-mappings

/// Whom a queue mapping applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MappingKind {
    /// `u:`: a user name, or `%user` for everyone.
    User,
    /// `g:`: members of a group.
    Group,
}

/// One entry of `yarn.scheduler.capacity.queue-mappings`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueMapping {
    kind: MappingKind,
    source: String,
    /// The part of the target before its last dot, if any (a queue name,
    /// `%primary_group` or `%secondary_group`).
    parent: Option<String>,
    /// The last part of the target (a queue name, `%user`,
    /// `%primary_group` or `%secondary_group`).
    leaf: String,
}

impl fmt::Display for QueueMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            MappingKind::User => "u",
            MappingKind::Group => "g",
        };
        write!(f, "{kind}:{}:", self.source)?;
        if let Some(parent) = &self.parent {
            write!(f, "{parent}.")?;
        }
        f.write_str(&self.leaf)
    }
}

fn is_variable(part: &str) -> bool {
    matches!(part, USER_VAR | PRIMARY_GROUP_VAR | SECONDARY_GROUP_VAR)
}

/// Parses the entries of `queue-mappings` (already split at commas).
pub(crate) fn parse_mappings(entries: &[String]) -> Result<Vec<QueueMapping>, String> {
    entries.iter().map(|e| parse_mapping(e)).collect()
}

fn parse_mapping(entry: &str) -> Result<QueueMapping, String> {
    let illegal = |why: &str| {
        format!(
            "illegal queue mapping '{entry}': {why} (expected u:<user>:<queue> or g:<group>:<queue>)"
        )
    };
    let parts: Vec<&str> = entry.split(':').map(str::trim).collect();
    let [kind, source, target] = parts.as_slice() else {
        return Err(illegal("it does not have three ':'-separated parts"));
    };
    if source.is_empty() || target.is_empty() {
        return Err(illegal("the source and the queue must not be empty"));
    }
    if target.split('.').any(|e| e.trim().is_empty()) {
        return Err(illegal("the queue has an empty path element"));
    }
    let kind = match *kind {
        "u" => MappingKind::User,
        "g" => MappingKind::Group,
        other => return Err(illegal(&format!("unknown mapping prefix '{other}'"))),
    };
    if kind == MappingKind::Group && is_variable(source) {
        return Err(illegal(&format!(
            "a g: mapping takes a group name, not {source}"
        )));
    }
    let (parent, leaf) = match target.rfind('.') {
        Some(dot) => (
            Some(target[..dot].trim().to_string()),
            target[dot + 1..].trim().to_string(),
        ),
        None => (None, target.to_string()),
    };
    if let Some(parent) = &parent {
        if parent.contains('%') && !is_variable(parent) {
            return Err(illegal(&format!(
                "'{parent}' mixes a variable with a queue path"
            )));
        }
        if parent == USER_VAR {
            return Err(illegal("%user can only be the last part of the queue"));
        }
        if is_variable(parent) && leaf != USER_VAR {
            return Err(illegal(&format!(
                "a {parent} parent is only supported with %user as the leaf \
                 (u:%user:{parent}.%user)"
            )));
        }
        if is_variable(parent) && (kind != MappingKind::User || *source != USER_VAR) {
            return Err(illegal(&format!(
                "{parent}.%user is only supported in u:%user:{parent}.%user"
            )));
        }
    }
    if leaf.contains('%') && !is_variable(&leaf) {
        return Err(illegal(&format!("unknown variable in '{leaf}'")));
    }
    Ok(QueueMapping {
        kind,
        source: source.to_string(),
        parent,
        leaf,
    })
}

/// Checks at load time what Hadoop checks when it initialises the
/// mappings: a mapping without variables must name an existing leaf
/// (unambiguously); a fixed parent of a `%user`-style leaf must exist and
/// be a parent.
pub(crate) fn validate_mappings(
    mappings: &[QueueMapping],
    tree: &QueueTreeConfig,
) -> Result<(), String> {
    let index = QueueIndex::new(tree);
    for m in mappings {
        let static_leaf = !is_variable(&m.leaf);
        match (&m.parent, static_leaf) {
            (None, true) => match index.lookup(&m.leaf) {
                Lookup::Found { parent: false, .. } => {}
                Lookup::Found { path, parent: true } => {
                    return Err(format!(
                        "mapping {m} contains invalid or non-leaf queue {path}: it is a parent queue"
                    ))
                }
                Lookup::Ambiguous(paths) => {
                    return Err(format!(
                        "mapping {m} contains ambiguous leaf queue reference {} ({}); use the full path",
                        m.leaf,
                        paths.join(", ")
                    ))
                }
                Lookup::Missing => {
                    return Err(format!(
                        "mapping {m} contains invalid or non-leaf queue {}: no such queue",
                        m.leaf
                    ))
                }
            },
            (Some(parent), _) if !is_variable(parent) => {
                let parent_path = match index.lookup(parent) {
                    Lookup::Found { path, parent: true } => path,
                    Lookup::Found { path, parent: false } => {
                        return Err(format!(
                            "mapping {m} contains invalid parent queue {path}: it is a leaf queue"
                        ))
                    }
                    Lookup::Ambiguous(paths) => {
                        return Err(format!(
                            "mapping {m} contains ambiguous parent queue reference {parent} ({}); \
                             use the full path",
                            paths.join(", ")
                        ))
                    }
                    Lookup::Missing => {
                        return Err(format!(
                            "mapping {m} contains invalid parent queue {parent}: no such queue"
                        ))
                    }
                };
                if static_leaf {
                    let path = format!("{parent_path}.{}", m.leaf);
                    match index.get(&path) {
                        Some(false) => {}
                        Some(true) => {
                            return Err(format!(
                                "mapping {m} contains invalid or non-leaf queue {path}: \
                                 it is a parent queue"
                            ))
                        }
                        None => {
                            return Err(format!(
                                "mapping {m} contains invalid or non-leaf queue {path}: no such queue"
                            ))
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn place_capacity(
    mappings: &[QueueMapping],
    override_requested: bool,
    requested: &str,
    user: &str,
    groups: &[String],
    index: &QueueIndex,
) -> Result<Placed, String> {
    if let Some((mapping, path)) = map_user(mappings, user, groups, index)? {
        // Hadoop applies a mapping when the client asked for nothing in
        // particular, when it asked for the mapped queue itself (as on
        // recovery), or when mappings override the request.
        if requested == DEFAULT_QUEUE
            || requested == short_name(&path)
            || requested == path
            || override_requested
        {
            return match index.get(&path) {
                Some(false) => Ok(Placed {
                    queue: path,
                    create: false,
                }),
                _ => Err(format!(
                    "Application submitted by user {user} to non-leaf queue: {path} \
                     (from queue mapping {mapping})"
                )),
            };
        }
    }
    match index.lookup(requested) {
        Lookup::Found {
            path,
            parent: false,
        } => Ok(Placed {
            queue: path,
            create: false,
        }),
        Lookup::Found { path, parent: true } => Err(format!(
            "Application submitted by user {user} to non-leaf queue: {path}"
        )),
        Lookup::Ambiguous(paths) => Err(format!(
            "Application submitted by user {user} to ambiguous queue: {requested} \
             (it could be {}); use the full queue path",
            paths.join(" or ")
        )),
        Lookup::Missing => Err(format!(
            "Application submitted by user {user} to unknown queue: {requested}"
        )),
    }
}

/// The queue the first mapping that matches the user maps to. As in
/// Hadoop 3.3, the first matching mapping decides: when the queue it
/// names does not exist for this user, no mapping applies.
fn map_user<'m>(
    mappings: &'m [QueueMapping],
    user: &str,
    groups: &[String],
    index: &QueueIndex,
) -> Result<Option<(&'m QueueMapping, String)>, String> {
    for m in mappings {
        let matches = match m.kind {
            MappingKind::User => m.source == USER_VAR || m.source == user,
            MappingKind::Group => groups.contains(&m.source),
        };
        if matches {
            return Ok(resolve_mapping(m, user, groups, index)?.map(|path| (m, path)));
        }
    }
    Ok(None)
}

fn resolve_mapping(
    m: &QueueMapping,
    user: &str,
    groups: &[String],
    index: &QueueIndex,
) -> Result<Option<String>, String> {
    let value = |part: &str| -> Option<String> {
        match part {
            USER_VAR => Some(user.to_string()),
            PRIMARY_GROUP_VAR => groups.first().cloned(),
            // The first secondary group that names a queue.
            SECONDARY_GROUP_VAR => groups
                .iter()
                .skip(1)
                .find(|g| matches!(index.lookup(g), Lookup::Found { .. }))
                .cloned(),
            fixed => Some(fixed.to_string()),
        }
    };
    let Some(leaf) = value(&m.leaf) else {
        return Ok(None);
    };
    match &m.parent {
        None => match index.lookup(&leaf) {
            Lookup::Found { path, .. } => Ok(Some(path)),
            Lookup::Ambiguous(paths) => Err(format!(
                "Application submitted by user {user} cannot be placed: queue mapping {m} \
                 refers to the ambiguous queue name {leaf} ({})",
                paths.join(", ")
            )),
            Lookup::Missing => Ok(None),
        },
        Some(parent) => {
            let Some(parent_name) = value(parent) else {
                return Ok(None);
            };
            let Lookup::Found {
                path: parent_path, ..
            } = index.lookup(&parent_name)
            else {
                return Ok(None);
            };
            let path = format!("{parent_path}.{leaf}");
            Ok(index.get(&path).map(|_| path))
        }
    }
}

// ----------------------------------------------------------------------
// Fair scheduler: placement rules

/// One rule of a fair-scheduler placement policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FairRule {
    /// The queue the application asked for (not `default`).
    Specified {
        create: bool,
    },
    /// `root.<user>`.
    User {
        create: bool,
    },
    /// `root.<primary group>`.
    PrimaryGroup {
        create: bool,
    },
    /// `root.<group>` for the first secondary group with such a queue.
    SecondaryGroupExistingQueue,
    /// `<parent>.<user>`, the parent given by the inner rule.
    NestedUserQueue {
        create: bool,
        inner: Box<FairRule>,
    },
    /// A fixed queue (full path).
    Default {
        queue: String,
        create: bool,
    },
    Reject,
}

impl fmt::Display for FairRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FairRule::Specified { create } => write!(f, "specified(create={create})"),
            FairRule::User { create } => write!(f, "user(create={create})"),
            FairRule::PrimaryGroup { create } => write!(f, "primaryGroup(create={create})"),
            FairRule::SecondaryGroupExistingQueue => f.write_str("secondaryGroupExistingQueue"),
            FairRule::NestedUserQueue { create, inner } => {
                write!(f, "nestedUserQueue(create={create}, parent from {inner})")
            }
            FairRule::Default { queue, create } => {
                write!(f, "default(queue={queue}, create={create})")
            }
            FairRule::Reject => f.write_str("reject"),
        }
    }
}

impl FairRule {
    /// True when the rule never passes an application on to the next rule.
    pub(crate) fn is_terminal(&self) -> bool {
        match self {
            FairRule::Reject => true,
            FairRule::User { create }
            | FairRule::PrimaryGroup { create }
            | FairRule::Default { create, .. } => *create,
            FairRule::Specified { .. }
            | FairRule::SecondaryGroupExistingQueue
            | FairRule::NestedUserQueue { .. } => false,
        }
    }
}

/// What one rule decided.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Place(String),
    Next,
    Reject,
}

/// A user or group name as a queue name: trimmed, dots replaced by
/// `_dot_`.
pub(crate) fn clean_name(name: &str) -> String {
    name.trim().replace('.', "_dot_")
}

/// Prefixes `root.` unless the name already starts at the root.
pub(crate) fn assure_root(name: &str) -> String {
    if name == "root" || name.starts_with("root.") {
        name.to_string()
    } else {
        format!("root.{name}")
    }
}

/// Hadoop's check of a queue name given by a user or in a rule: no
/// surrounding whitespace, no leading or trailing dot.
pub(crate) fn is_valid_queue_name(name: &str) -> bool {
    !name.is_empty() && name.trim() == name && !name.starts_with('.') && !name.ends_with('.')
}

/// Hadoop 3.3's fair-scheduler refusal when no rule places an application
/// (the RM inserts the application id after "Reject application").
fn rejected_by_rules(user: &str) -> String {
    format!("Reject application submitted by user {user} application rejected by placement rules.")
}

fn place_fair(
    rules: &[FairRule],
    requested: &str,
    user: &str,
    groups: &[String],
    index: &QueueIndex,
) -> Result<Placed, String> {
    for rule in rules {
        match evaluate(rule, requested, user, groups, index)? {
            Outcome::Place(queue) => return finish_fair(queue, index),
            Outcome::Next => {}
            Outcome::Reject => return Err(rejected_by_rules(user)),
        }
    }
    Err(format!(
        "{} No rule of the placement policy placed it (end the policy with a default \
         or reject rule).",
        rejected_by_rules(user)
    ))
}

fn evaluate(
    rule: &FairRule,
    requested: &str,
    user: &str,
    groups: &[String],
    index: &QueueIndex,
) -> Result<Outcome, String> {
    // A rule places into its queue when the queue exists or the rule may
    // create it.
    let place_if = |queue: String, create: bool| {
        if create || index.get(&queue).is_some() {
            Outcome::Place(queue)
        } else {
            Outcome::Next
        }
    };
    Ok(match rule {
        FairRule::Specified { create } => {
            if !is_valid_queue_name(requested) {
                return Err(format!(
                    "Application submitted by user {user} with illegal queue name '{requested}'."
                ));
            }
            // Submissions without a queue arrive as "default": left to
            // the next rule.
            if requested == DEFAULT_QUEUE {
                Outcome::Next
            } else {
                place_if(assure_root(requested), *create)
            }
        }
        FairRule::User { create } => place_if(assure_root(&clean_name(user)), *create),
        FairRule::PrimaryGroup { create } => {
            let Some(primary) = groups.first() else {
                return Err(format!("No groups returned for user {user}"));
            };
            place_if(assure_root(&clean_name(primary)), *create)
        }
        FairRule::SecondaryGroupExistingQueue => groups
            .iter()
            .skip(1)
            .map(|g| assure_root(&clean_name(g)))
            .find(|queue| index.get(queue).is_some())
            .map_or(Outcome::Next, Outcome::Place),
        FairRule::NestedUserQueue { create, inner } => {
            match evaluate(inner, requested, user, groups, index)? {
                // A leaf cannot take a user queue below it: next rule.
                Outcome::Place(parent) if index.get(&parent) != Some(false) => {
                    place_if(format!("{parent}.{}", clean_name(user)), *create)
                }
                _ => Outcome::Next,
            }
        }
        FairRule::Default { queue, create } => place_if(queue.clone(), *create),
        FairRule::Reject => Outcome::Reject,
    })
}

/// Checks the queue a rule chose: an existing leaf, or a new queue that
/// can be created (every element a valid name, no existing leaf on its
/// path).
fn finish_fair(queue: String, index: &QueueIndex) -> Result<Placed, String> {
    match index.get(&queue) {
        Some(false) => {
            return Ok(Placed {
                queue,
                create: false,
            })
        }
        Some(true) => return Err(format!("{queue} is not a leaf queue")),
        None => {}
    }
    let elements: Vec<&str> = queue.split('.').collect();
    if elements.first() != Some(&"root")
        || elements
            .iter()
            .any(|e| e.is_empty() || e.trim() != *e || e.chars().any(char::is_whitespace))
    {
        return Err(format!(
            "{queue} is not a valid queue name: every element must be non-empty and without whitespace"
        ));
    }
    for end in 1..elements.len() {
        let prefix = elements[..end].join(".");
        if index.get(&prefix) == Some(false) {
            return Err(format!(
                "{queue} is not a leaf queue that can be created: {prefix} is a leaf queue"
            ));
        }
    }
    Ok(Placed {
        queue,
        create: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_scheduler::{QueueShare, SchedulerKind};

    fn cap(c: f64) -> QueueShare {
        QueueShare::Capacity {
            capacity_pct: c,
            maximum_pct: 100.0,
        }
    }

    /// root: eng(etl, adhoc, alice), sales(adhoc), default, bob, users
    fn tree() -> QueueTreeConfig {
        QueueTreeConfig {
            kind: SchedulerKind::Capacity,
            root: QueueConfig::parent(
                "root",
                cap(100.0),
                vec![
                    QueueConfig::parent(
                        "eng",
                        cap(40.0),
                        vec![
                            QueueConfig::leaf("etl", cap(50.0)),
                            QueueConfig::leaf("adhoc", cap(25.0)),
                            QueueConfig::leaf("alice", cap(25.0)),
                        ],
                    ),
                    QueueConfig::parent(
                        "sales",
                        cap(40.0),
                        vec![QueueConfig::leaf("adhoc", cap(100.0))],
                    ),
                    QueueConfig::leaf("default", cap(10.0)),
                    QueueConfig::leaf("bob", cap(5.0)),
                    QueueConfig::leaf("users", cap(5.0)),
                    QueueConfig::leaf("ops", cap(0.0)),
                ],
            ),
            ..QueueTreeConfig::fifo()
        }
    }

    fn groups(list: &[&str]) -> Vec<String> {
        list.iter().map(|g| g.to_string()).collect()
    }

    fn capacity(mappings: &str, override_requested: bool) -> Placement {
        let entries: Vec<String> = mappings
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let parsed = parse_mappings(&entries).unwrap_or_else(|e| panic!("{e}"));
        validate_mappings(&parsed, &tree()).unwrap_or_else(|e| panic!("{e}"));
        Placement::capacity(parsed, override_requested)
    }

    fn place(p: &Placement, requested: &str, user: &str, g: &[&str]) -> Result<Placed, String> {
        p.place(requested, user, &groups(g), &tree())
    }

    fn placed(p: &Placement, requested: &str, user: &str, g: &[&str]) -> String {
        match place(p, requested, user, g) {
            Ok(placed) => {
                assert!(!placed.create, "capacity never creates");
                placed.queue
            }
            Err(e) => panic!("{requested} by {user}: {e}"),
        }
    }

    #[test]
    fn capacity_without_mappings_resolves_the_request() {
        let p = capacity("", false);
        assert_eq!(placed(&p, "etl", "x", &[]), "root.eng.etl");
        assert_eq!(placed(&p, "root.sales.adhoc", "x", &[]), "root.sales.adhoc");
        assert_eq!(placed(&p, "default", "x", &[]), "root.default");
        let unknown = place(&p, "nope", "carol", &[]).expect_err("unknown");
        assert_eq!(
            unknown,
            "Application submitted by user carol to unknown queue: nope"
        );
        let parent = place(&p, "eng", "carol", &[]).expect_err("parent");
        assert_eq!(
            parent,
            "Application submitted by user carol to non-leaf queue: root.eng"
        );
        let ambiguous = place(&p, "adhoc", "carol", &[]).expect_err("ambiguous");
        assert!(ambiguous.contains("ambiguous queue: adhoc"), "{ambiguous}");
        assert!(ambiguous.contains("root.eng.adhoc"), "{ambiguous}");
    }

    #[test]
    fn capacity_user_and_group_mappings() {
        let p = capacity(
            "u:carol:etl, g:sales:root.sales.adhoc, u:%user:%user",
            false,
        );
        // A fixed user mapping.
        assert_eq!(placed(&p, "default", "carol", &["eng"]), "root.eng.etl");
        // A group mapping: any of the user's groups.
        assert_eq!(
            placed(&p, "default", "dave", &["staff", "sales"]),
            "root.sales.adhoc"
        );
        // %user: a queue named after the user, wherever it is.
        assert_eq!(placed(&p, "default", "alice", &["x"]), "root.eng.alice");
        assert_eq!(placed(&p, "default", "bob", &["x"]), "root.bob");
        // %user without such a queue: no mapping, the requested queue.
        assert_eq!(placed(&p, "default", "erin", &["x"]), "root.default");
        // First match wins: carol is in sales too, but u:carol comes first.
        assert_eq!(placed(&p, "default", "carol", &["sales"]), "root.eng.etl");
    }

    #[test]
    fn capacity_mappings_apply_to_default_unless_overridden() {
        let no_override = capacity("u:carol:etl", false);
        // The client asked for a queue: mappings stay out of the way.
        assert_eq!(placed(&no_override, "bob", "carol", &[]), "root.bob");
        // Asking for the mapped queue itself is the mapping.
        assert_eq!(placed(&no_override, "etl", "carol", &[]), "root.eng.etl");
        let with_override = capacity("u:carol:etl", true);
        assert_eq!(placed(&with_override, "bob", "carol", &[]), "root.eng.etl");
        // Others are not mapped and keep their request.
        assert_eq!(placed(&with_override, "bob", "dave", &[]), "root.bob");
    }

    #[test]
    fn capacity_group_variables() {
        // %primary_group as the queue.
        let p = capacity("u:%user:%primary_group", false);
        assert_eq!(placed(&p, "default", "x", &["etl", "bob"]), "root.eng.etl");
        // A primary group without a queue: no mapping.
        assert_eq!(placed(&p, "default", "x", &["nogroup"]), "root.default");
        // A primary group naming a parent: Hadoop places there and the
        // submission fails as a non-leaf queue.
        let err = place(&p, "default", "x", &["eng"]).expect_err("parent");
        assert!(err.contains("non-leaf queue: root.eng"), "{err}");

        // %secondary_group: the first secondary group with a queue.
        let p = capacity("u:%user:%secondary_group", false);
        assert_eq!(
            placed(&p, "default", "x", &["etl", "nothing", "bob"]),
            "root.bob"
        );
        assert_eq!(placed(&p, "default", "x", &["etl"]), "root.default");

        // %primary_group.%user: the user's queue below the group's queue.
        let p = capacity("u:%user:%primary_group.%user", false);
        assert_eq!(placed(&p, "default", "alice", &["eng"]), "root.eng.alice");
        assert_eq!(placed(&p, "default", "zed", &["eng"]), "root.default");
        // %secondary_group.%user.
        let p = capacity("u:%user:%secondary_group.%user", false);
        assert_eq!(
            placed(&p, "default", "alice", &["users", "nothing", "eng"]),
            "root.eng.alice"
        );
        // A fixed parent with %user.
        let p = capacity("u:%user:root.eng.%user, g:sales:%user", false);
        assert_eq!(placed(&p, "default", "alice", &[]), "root.eng.alice");
        // The first (u:%user) mapping matched everyone; bob has no queue
        // below root.eng, so no mapping applies.
        assert_eq!(placed(&p, "default", "bob", &["sales"]), "root.default");
        // g: with %user.
        let p = capacity("g:sales:%user", false);
        assert_eq!(placed(&p, "default", "bob", &["x", "sales"]), "root.bob");
    }

    #[test]
    fn mapping_syntax_and_validation() {
        for bad in [
            "u:alice",
            "x:alice:etl",
            "u::etl",
            "u:alice:",
            "g:%user:etl",
            "u:%user:%user.etl",
            "u:%user:%primary_group.etl",
            "u:alice:%primary_group.%user",
            "u:alice:%users",
            "u:alice:eng..etl",
        ] {
            let err = parse_mappings(&[bad.to_string()]).expect_err(bad);
            assert!(err.contains(bad), "{bad}: {err}");
        }
        let t = tree();
        for (mapping, needle) in [
            ("u:alice:nope", "invalid or non-leaf queue nope"),
            ("u:alice:eng", "root.eng: it is a parent queue"),
            ("u:alice:adhoc", "ambiguous leaf queue reference adhoc"),
            ("u:alice:eng.nope", "root.eng.nope: no such queue"),
            ("u:%user:nope.%user", "invalid parent queue nope"),
            ("u:%user:bob.%user", "root.bob: it is a leaf queue"),
        ] {
            let parsed = parse_mappings(&[mapping.to_string()]).unwrap_or_else(|e| panic!("{e}"));
            let err = validate_mappings(&parsed, &t).expect_err(mapping);
            assert!(err.contains(needle), "{mapping}: {err}");
            assert!(err.contains(mapping), "{mapping}: {err}");
        }
        // Full paths and parent.leaf forms of existing leaves are fine.
        for good in [
            "u:alice:root.sales.adhoc",
            "u:alice:eng.adhoc",
            "u:%user:%user",
            "g:eng:root.eng.%user",
        ] {
            let parsed = parse_mappings(&[good.to_string()]).unwrap_or_else(|e| panic!("{e}"));
            validate_mappings(&parsed, &t).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
    }

    fn fair(rules: Vec<FairRule>) -> Placement {
        Placement::fair(rules, FairDefaults::default())
    }

    /// The test tree with `root.users` declared a parent (the fair
    /// scheduler's type="parent").
    fn fair_tree() -> QueueTreeConfig {
        let mut t = tree();
        for q in &mut t.root.children {
            if q.name == "users" {
                q.declared_parent = true;
            }
        }
        t
    }

    fn place_fair(
        p: &Placement,
        requested: &str,
        user: &str,
        g: &[&str],
    ) -> Result<Placed, String> {
        p.place(requested, user, &groups(g), &fair_tree())
    }

    #[test]
    fn fair_specified_and_create() {
        let create = fair(vec![
            FairRule::Specified { create: true },
            FairRule::Default {
                queue: "root.default".into(),
                create: true,
            },
        ]);
        let p = place_fair(&create, "eng.etl", "x", &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            p,
            Placed {
                queue: "root.eng.etl".into(),
                create: false
            }
        );
        // Fair names are paths: the short name of a nested leaf is a new
        // queue below root.
        let p = place_fair(&create, "etl", "x", &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            p,
            Placed {
                queue: "root.etl".into(),
                create: true
            }
        );
        // "default" goes to the next rule.
        let p = place_fair(&create, "default", "x", &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.queue, "root.default");
        // A parent is never a target, nor can a queue be created below a leaf.
        assert_eq!(
            place_fair(&create, "root.eng", "x", &[]),
            Err("root.eng is not a leaf queue".to_string())
        );
        let below_leaf = place_fair(&create, "bob.sub", "x", &[]).expect_err("below a leaf");
        assert!(
            below_leaf.contains("root.bob is a leaf queue"),
            "{below_leaf}"
        );
        let illegal = place_fair(&create, ".eng", "x", &[]).expect_err("illegal");
        assert_eq!(
            illegal,
            "Application submitted by user x with illegal queue name '.eng'."
        );

        let no_create = fair(vec![
            FairRule::Specified { create: false },
            FairRule::Default {
                queue: "root.bob".into(),
                create: false,
            },
        ]);
        // root.nope does not exist and may not be created: next rule.
        let p = place_fair(&no_create, "nope", "x", &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.queue, "root.bob");
        let none_left = fair(vec![FairRule::Specified { create: false }]);
        let err = place_fair(&none_left, "nope", "x", &[]).expect_err("nothing placed");
        assert!(
            err.starts_with(
                "Reject application submitted by user x application rejected by placement rules."
            ),
            "{err}"
        );
    }

    #[test]
    fn fair_user_group_and_nested_rules() {
        let p = fair(vec![
            FairRule::NestedUserQueue {
                create: true,
                inner: Box::new(FairRule::PrimaryGroup { create: false }),
            },
            FairRule::SecondaryGroupExistingQueue,
            FairRule::User { create: false },
            FairRule::Reject,
        ]);
        // Primary group names a parent: the user's queue below it, created.
        assert_eq!(
            place_fair(&p, "default", "first.last", &["eng"]),
            Ok(Placed {
                queue: "root.eng.first_dot_last".into(),
                create: true
            })
        );
        // An existing user queue below it is not created again.
        assert_eq!(
            place_fair(&p, "default", "alice", &["eng"]),
            Ok(Placed {
                queue: "root.eng.alice".into(),
                create: false
            })
        );
        // A parent declared type="parent" without children.
        assert_eq!(
            place_fair(&p, "default", "carol", &["users"]),
            Ok(Placed {
                queue: "root.users.carol".into(),
                create: true
            })
        );
        // Primary group names a leaf: nested rule passes; the first
        // secondary group with a queue is used.
        assert_eq!(
            place_fair(&p, "default", "carol", &["bob", "nothing", "default"]),
            Ok(Placed {
                queue: "root.default".into(),
                create: false
            })
        );
        // Secondary groups are only the groups after the first.
        // Then the user rule: root.bob exists.
        assert_eq!(
            place_fair(&p, "default", "bob", &["default"]),
            Ok(Placed {
                queue: "root.bob".into(),
                create: false
            })
        );
        // Nothing matches: reject.
        assert_eq!(
            place_fair(&p, "default", "zed", &["nothing"]),
            Err(
                "Reject application submitted by user zed application rejected by placement rules."
                    .to_string()
            )
        );
        // The primary group rule needs a group.
        let err = place_fair(&p, "default", "zed", &[]).expect_err("no groups");
        assert_eq!(err, "No groups returned for user zed");
    }

    #[test]
    fn fair_nested_rule_with_creating_inner_rule() {
        let p = fair(vec![FairRule::NestedUserQueue {
            create: true,
            inner: Box::new(FairRule::PrimaryGroup { create: true }),
        }]);
        // Both the group queue and the user queue are new.
        assert_eq!(
            place_fair(&p, "default", "zed", &["newgroup"]),
            Ok(Placed {
                queue: "root.newgroup.zed".into(),
                create: true
            })
        );
        let no_create = fair(vec![
            FairRule::NestedUserQueue {
                create: false,
                inner: Box::new(FairRule::PrimaryGroup { create: true }),
            },
            FairRule::Default {
                queue: "root.default".into(),
                create: true,
            },
        ]);
        assert_eq!(
            place_fair(&no_create, "default", "zed", &["eng"]),
            Ok(Placed {
                queue: "root.default".into(),
                create: false
            })
        );
    }

    #[test]
    fn describe_and_terminal_rules() {
        let p = capacity("u:carol:etl", true);
        assert_eq!(
            p.describe(),
            "capacity: queue-mappings u:carol:etl (override the requested queue: yes), \
             else the requested queue"
        );
        let f = fair(vec![
            FairRule::Specified { create: false },
            FairRule::NestedUserQueue {
                create: true,
                inner: Box::new(FairRule::PrimaryGroup { create: false }),
            },
            FairRule::Default {
                queue: "root.default".into(),
                create: true,
            },
        ]);
        assert_eq!(
            f.describe(),
            "fair: placement rules specified(create=false), nestedUserQueue(create=true, \
             parent from primaryGroup(create=false)), default(queue=root.default, create=true)"
        );
        assert!(FairRule::Reject.is_terminal());
        assert!(FairRule::User { create: true }.is_terminal());
        assert!(!FairRule::User { create: false }.is_terminal());
        assert!(!FairRule::SecondaryGroupExistingQueue.is_terminal());
        assert_eq!(
            Placement::fifo().describe(),
            "fifo: every application goes to root.default"
        );
    }

    #[test]
    fn names() {
        assert_eq!(clean_name(" a.b.c "), "a_dot_b_dot_c");
        assert_eq!(assure_root("a.b"), "root.a.b");
        assert_eq!(assure_root("root.a"), "root.a");
        assert_eq!(assure_root("root"), "root");
        assert_eq!(assure_root("rooted"), "root.rooted");
        assert!(is_valid_queue_name("a.b"));
        assert!(!is_valid_queue_name("a."));
        assert!(!is_valid_queue_name(" a"));
        assert!(!is_valid_queue_name(""));
    }
}
