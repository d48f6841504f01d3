//! The allocation file's XML, read as Hadoop 3.3's
//! `AllocationFileLoaderService` reads it, into [`Allocations`]: what the
//! file says, before defaults are applied. Errors name the file, line,
//! queue and element.

use std::collections::BTreeMap;

use roxmltree::{Document, Node, ParsingOptions};
use spindle_scheduler::{AppOrdering, ResourceBound};

use super::resources::{resource, Bound};
use super::{DRF_POLICY_CLASS, FAIR_POLICY_CLASS, FIFO_POLICY_CLASS};
use crate::queue_files::placement::{assure_root, is_valid_queue_name, FairRule};
use crate::queue_files::queue_file::QueueFileError;

/// What the file says, before defaults are applied.
#[derive(Debug, Default)]
pub(super) struct Allocations {
    /// The queues below root, or `None` when the file has no queues.
    pub(super) root: Option<RawQueue>,
    pub(super) users: BTreeMap<String, usize>,
    pub(super) user_max_apps_default: Option<usize>,
    pub(super) queue_max_apps_default: Option<usize>,
    /// `Some(None)`: `-1`, no limit.
    pub(super) queue_max_am_share_default: Option<Option<f64>>,
    pub(super) queue_max_resources_default: Option<ResourceBound>,
    pub(super) default_policy: Option<AppOrdering>,
    pub(super) placement: Option<Vec<FairRule>>,
}

#[derive(Debug, Default)]
pub(super) struct RawQueue {
    pub(super) name: String,
    pub(super) path: String,
    /// `file:line` of the `<queue>` element.
    pub(super) at: String,
    pub(super) declared_parent: bool,
    pub(super) children: Vec<RawQueue>,
    pub(super) weight: Option<f64>,
    pub(super) min: Option<ResourceBound>,
    pub(super) max: Option<ResourceBound>,
    pub(super) max_running_apps: Option<usize>,
    pub(super) max_am_share: Option<Option<f64>>,
    /// The policy and where it was set.
    pub(super) policy: Option<(AppOrdering, String)>,
    pub(super) acl_submit: Option<String>,
    pub(super) acl_administer: Option<String>,
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

pub(super) fn parse_allocations(xml: &str, file: &str) -> Result<Allocations, QueueFileError> {
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

#[cfg(test)]
mod tests {
    use super::super::test_support::{err, ok, place, placed, FILE};

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
