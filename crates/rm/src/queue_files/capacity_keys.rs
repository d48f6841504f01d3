//! Every `yarn.scheduler.capacity.*` key Hadoop's capacity scheduler reads
//! (3.3, and the 3.4 keys an operator may already have), and what Spindle's
//! reader ([`super::capacity`]) does with it: the classes of
//! `spindle check-config` for `capacity-scheduler.xml`.
//!
//! A key is either scheduler-wide (`yarn.scheduler.capacity.<key>`) or a
//! queue's (`yarn.scheduler.capacity.<queue path>.<suffix>`, the path
//! starting at `root`). The served lists below are the ones
//! [`super::capacity`] reads; its tests keep the two in step.

use spindle_common::conf::catalog::{edit_distance, matches, Class, CAPACITY_PREFIX as PREFIX};
use spindle_common::conf::refuse::Daemon;

/// Scheduler-wide keys Spindle reads.
pub const SERVED_GLOBAL: &[&str] = &[
    "maximum-applications",
    "maximum-am-resource-percent",
    "user-limit-factor",
    "minimum-user-limit-percent",
    "global-queue-max-application",
    "resource-calculator",
    "node-locality-delay",
    "rack-locality-additional-delay",
    "per-node-heartbeat.maximum-offswitch-assignments",
    "per-node-heartbeat.multiple-assignments-enabled",
    "per-node-heartbeat.maximum-container-assignments",
    "queue-mappings",
    "queue-mappings-override.enable",
    "mapping-rule-format",
];

/// Per-queue suffixes Spindle reads.
pub const SERVED_QUEUE: &[&str] = &[
    "queues",
    "capacity",
    "maximum-capacity",
    "state",
    "acl_submit_applications",
    "acl_administer_queue",
    "ordering-policy",
    "user-limit-factor",
    "minimum-user-limit-percent",
    "maximum-am-resource-percent",
    "maximum-applications",
    "default-application-priority",
    "allow-zero-capacity-sum",
];

const PREEMPTION: &str = "preemption is not built yet (S17)";
const RESERVATIONS: &str = "reservations are not built yet (S17)";
const LIMITS: &str = "this limit is not enforced yet (S17)";
const LABELS: &str = "node labels are not built yet (S18)";
const AUTO_CREATE: &str = "auto-created queues are not built yet (S18)";

/// Hadoop's other scheduler-wide keys: pattern, and why Spindle does not act on it.
const OTHER_GLOBAL: &[(&str, Note)] = &[
    ("lazy-preemption-enabled", Note::NotBuilt(PREEMPTION)),
    (
        "reservations-continue-look-all-nodes",
        Note::NotBuilt(RESERVATIONS),
    ),
    ("max-parallel-apps", Note::NotBuilt(LIMITS)),
    ("user.max-parallel-apps", Note::NotBuilt(LIMITS)),
    ("user.*.max-parallel-apps", Note::NotBuilt(LIMITS)),
    (
        "user-metrics.enable",
        Note::NotBuilt("per-user queue metrics are not built"),
    ),
    (
        "rack-locality-full-reset",
        Note::NotBuilt("locality counts always restart at a node-local allocation"),
    ),
    (
        "schedule-asynchronously.*",
        Note::NoEffect("Spindle schedules continuously, not only on node heartbeats"),
    ),
    ("application.fail-fast", Note::NotBuilt("")),
    (
        "workflow-priority-mappings*",
        Note::NotBuilt("workflow priority mappings are not built"),
    ),
    (
        "multi-node-*",
        Note::NotBuilt("multi-node placement is not built"),
    ),
    (
        "mapping-rule-json",
        Note::NotBuilt("JSON mapping rules are not built yet (S18)"),
    ),
    (
        "mapping-rule-json-file",
        Note::NotBuilt("JSON mapping rules are not built yet (S18)"),
    ),
    ("queue-management.*", Note::NotBuilt(AUTO_CREATE)),
    (
        "legacy-queue-mode.enabled",
        Note::NotBuilt("Hadoop 3.4's flexible queue mode is not built yet (S18)"),
    ),
];

/// Hadoop's other per-queue suffixes.
const OTHER_QUEUE: &[(&str, Note)] = &[
    ("disable_preemption", Note::NotBuilt(PREEMPTION)),
    (
        "intra-queue-preemption.disable_preemption",
        Note::NotBuilt(PREEMPTION),
    ),
    ("reservable", Note::NotBuilt(RESERVATIONS)),
    ("reservation-*", Note::NotBuilt(RESERVATIONS)),
    ("average-capacity", Note::NotBuilt(RESERVATIONS)),
    ("instantaneous-max-capacity", Note::NotBuilt(RESERVATIONS)),
    ("show-reservations-as-queues", Note::NotBuilt(RESERVATIONS)),
    ("acl_administer_reservations", Note::NotBuilt(RESERVATIONS)),
    ("acl_list_reservations", Note::NotBuilt(RESERVATIONS)),
    ("acl_submit_reservations", Note::NotBuilt(RESERVATIONS)),
    ("max-parallel-apps", Note::NotBuilt(LIMITS)),
    (
        "user-settings.*",
        Note::NotBuilt("user weights are not built yet (S17)"),
    ),
    ("maximum-allocation", Note::NotBuilt(LIMITS)),
    ("maximum-allocation-mb", Note::NotBuilt(LIMITS)),
    ("maximum-allocation-vcores", Note::NotBuilt(LIMITS)),
    ("accessible-node-labels", Note::NotBuilt(LABELS)),
    ("accessible-node-labels.*", Note::NotBuilt(LABELS)),
    ("default-node-label-expression", Note::NotBuilt(LABELS)),
    (
        "priority",
        Note::NotBuilt("queue priorities are not read yet (S18)"),
    ),
    (
        "weight",
        Note::NotBuilt("weight capacities are not built yet (S18)"),
    ),
    ("auto-create-child-queue.*", Note::NotBuilt(AUTO_CREATE)),
    ("leaf-queue-template.*", Note::NotBuilt(AUTO_CREATE)),
    ("auto-queue-creation-v2.*", Note::NotBuilt(AUTO_CREATE)),
    (
        "maximum-application-lifetime",
        Note::NotBuilt("queue lifetimes are not built"),
    ),
    (
        "default-application-lifetime",
        Note::NotBuilt("queue lifetimes are not built"),
    ),
    (
        "ordering-policy.*",
        Note::NotBuilt("ordering-policy options are not read"),
    ),
    ("user-limit", Note::NotBuilt(LIMITS)),
];

#[derive(Debug, Clone, Copy)]
enum Note {
    NotBuilt(&'static str),
    NoEffect(&'static str),
}

impl Note {
    fn class(self) -> Class {
        match self {
            Note::NotBuilt(note) => Class::NotBuilt {
                note: (!note.is_empty()).then_some(note),
                at_default: false,
            },
            Note::NoEffect(why) => Class::NoEffect(why),
        }
    }
}

fn find(table: &[(&str, Note)], rest: &str) -> Option<Class> {
    table
        .iter()
        .find(|(p, _)| matches(p, rest))
        .map(|(_, n)| n.class())
}

/// A capacity given as an absolute resource (`[memory=…]`) or a weight
/// (`2w`): Spindle reads percentages only, and refuses the file.
fn non_percentage(value: &str) -> bool {
    let v = value.trim();
    v.starts_with('[') || v.ends_with('w')
}

/// What Spindle does with the capacity-scheduler key `key` set to `value`;
/// `None` when `key` is not one (it lacks the prefix).
pub fn classify(key: &str, value: &str) -> Option<Class> {
    let rest = key.strip_prefix(PREFIX)?;
    if SERVED_GLOBAL.contains(&rest) {
        if rest == "mapping-rule-format" && value.trim() != "legacy" {
            return Some(Class::Refused {
                daemons: vec![Daemon::ResourceManager],
                why: "JSON mapping rules are not built yet (S18)",
                supported: "legacy",
            });
        }
        return Some(Class::Served);
    }
    if let Some(class) = find(OTHER_GLOBAL, rest) {
        return Some(class);
    }
    // A queue's key: try every split of "<path>.<suffix>", the longest path
    // first (queue names hold no dots).
    if rest == "root" || rest.starts_with("root.") {
        let splits = rest.match_indices('.').map(|(i, _)| i).collect::<Vec<_>>();
        // Suffixes of several parts first (`accessible-node-labels.<label>.capacity`
        // ends in a served suffix too), the shortest path first.
        let structured = |(p, _): &&(&str, Note)| p.contains(['.', '*']);
        for &i in &splits {
            let suffix = &rest[i + 1..];
            if let Some((_, note)) = OTHER_QUEUE
                .iter()
                .filter(structured)
                .find(|(p, _)| matches(p, suffix))
            {
                return Some(note.class());
            }
        }
        for &i in splits.iter().rev() {
            let suffix = &rest[i + 1..];
            if SERVED_QUEUE.contains(&suffix) {
                if matches!(suffix, "capacity" | "maximum-capacity") && non_percentage(value) {
                    return Some(Class::Refused {
                        daemons: vec![Daemon::ResourceManager],
                        why: "absolute-resource and weight capacities are not built yet (S18)",
                        supported: "percentages",
                    });
                }
                return Some(Class::Served);
            }
        }
        for &i in &splits {
            if let Some(class) = find(OTHER_QUEUE, &rest[i + 1..]) {
                return Some(class);
            }
        }
    }
    Some(Class::Unknown {
        nearest: nearest(rest).map(|n| format!("{PREFIX}{n}")),
    })
}

/// The served or known key closest to `rest` (after the prefix), keeping
/// a queue path in front of a queue suffix.
fn nearest(rest: &str) -> Option<String> {
    let (path, suffix) = match rest.rsplit_once('.') {
        Some((p, s)) if p == "root" || p.starts_with("root.") => (Some(p), s),
        _ => (None, rest),
    };
    let candidates: Vec<&str> = match path {
        Some(_) => SERVED_QUEUE
            .iter()
            .copied()
            .chain(OTHER_QUEUE.iter().map(|(p, _)| *p))
            .filter(|p| !p.contains('*'))
            .collect(),
        None => SERVED_GLOBAL
            .iter()
            .copied()
            .chain(OTHER_GLOBAL.iter().map(|(p, _)| *p))
            .filter(|p| !p.contains('*'))
            .collect(),
    };
    let limit = (suffix.len() / 4).clamp(1, 4);
    candidates
        .into_iter()
        .map(|c| (edit_distance(suffix, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| match path {
            Some(p) => format!("{p}.{c}"),
            None => c.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(key: &str, value: &str) -> Class {
        classify(&format!("{PREFIX}{key}"), value).expect("a capacity key")
    }

    #[test]
    fn served_keys_of_queues_at_any_depth() {
        assert_eq!(class("root.queues", "a,b"), Class::Served);
        assert_eq!(class("root.eng.science.capacity", "40"), Class::Served);
        assert_eq!(class("root.a.acl_submit_applications", "*"), Class::Served);
        assert_eq!(class("resource-calculator", "x"), Class::Served);
        assert_eq!(classify("yarn.resourcemanager.address", "x"), None);
    }

    #[test]
    fn capacities_other_than_percentages_are_refused() {
        for v in ["[memory=1024,vcores=1]", "2w"] {
            assert!(
                matches!(class("root.a.capacity", v), Class::Refused { .. }),
                "{v}"
            );
        }
        assert!(matches!(
            class("mapping-rule-format", "json"),
            Class::Refused { .. }
        ));
    }

    #[test]
    fn hadoop_keys_not_built_carry_their_issue() {
        assert_eq!(
            class("root.a.disable_preemption", "true"),
            Class::NotBuilt {
                note: Some(PREEMPTION),
                at_default: false
            }
        );
        assert_eq!(
            class("root.a.accessible-node-labels.gpu.capacity", "50"),
            Class::NotBuilt {
                note: Some(LABELS),
                at_default: false
            }
        );
        assert_eq!(
            class("root.a.user-settings.alice.weight", "2"),
            Class::NotBuilt {
                note: Some("user weights are not built yet (S17)"),
                at_default: false
            }
        );
        assert!(matches!(
            class("schedule-asynchronously.enable", "true"),
            Class::NoEffect(_)
        ));
    }

    #[test]
    fn typos_get_the_nearest_key_of_their_kind() {
        assert_eq!(
            class("root.eng.maximum-capcity", "80"),
            Class::Unknown {
                nearest: Some(format!("{PREFIX}root.eng.maximum-capacity"))
            }
        );
        assert_eq!(
            class("node-locality-dela", "40"),
            Class::Unknown {
                nearest: Some(format!("{PREFIX}node-locality-delay"))
            }
        );
    }

    /// The served lists name exactly the keys the reader asks for
    /// (`key(path, "…")`, `global("…")`, `self.acl(path, "…")` in its code).
    #[test]
    fn served_lists_match_what_the_reader_reads() {
        let source = include_str!("capacity.rs");
        let code = &source[..source.find("#[cfg(test)]").unwrap_or(source.len())];
        let mut read = std::collections::BTreeSet::new();
        for opener in [
            "key(path, \"",
            "key(\"root\", \"",
            "global(\"",
            "acl(path, \"",
            "acl(\"root\", \"",
        ] {
            for (i, _) in code.match_indices(opener) {
                let rest = &code[i + opener.len()..];
                if let Some(end) = rest.find('"') {
                    read.insert(rest[..end].to_string());
                }
            }
        }
        let listed: std::collections::BTreeSet<String> = SERVED_GLOBAL
            .iter()
            .chain(SERVED_QUEUE)
            .map(|s| s.to_string())
            .collect();
        assert_eq!(read, listed);
    }
}
