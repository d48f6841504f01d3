//! What the RM checks about a queue: submit and administer ACLs (the rules
//! that use them are in [`crate::model::access`]), stopped queues,
//! `maximum-applications`, and the name an application report shows.
//! Placement itself is in [`crate::queue_files`].

use spindle_scheduler::{QueueConfig, QueueRunState, SchedulerKind};

use crate::acl::Acl;
use crate::queue_files::QueueFile;

impl QueueFile {
    /// The queues from the root down to `path` (empty if `path` is unknown).
    fn lineage(&self, path: &str) -> Vec<(String, &QueueConfig)> {
        let all = self.tree.root.walk();
        let mut out: Vec<(String, &QueueConfig)> = all
            .into_iter()
            .filter(|(p, _)| p == path || path.starts_with(&format!("{p}.")))
            .collect();
        out.sort_by_key(|(p, _)| p.len());
        out
    }

    /// Whether `user` may submit to the leaf at `path`: its own or any
    /// ancestor's submit or administer ACL lets the user in. Unset ACLs
    /// allow everyone at the root and nobody below it, as in Hadoop.
    /// Leaves created on demand inherit their parent's.
    pub fn may_submit(&self, path: &str, user: &str, groups: &[String]) -> bool {
        let (submit, administer) = self.user_acls(path, user, groups);
        submit || administer
    }

    /// Whether `user` administers the queue at `path`: its own or an
    /// ancestor's `acl_administer_queue` lets the user in (unset: everyone
    /// at the root, nobody below, as in Hadoop).
    pub fn may_administer(&self, path: &str, user: &str, groups: &[String]) -> bool {
        self.chain_allows(path, user, groups, |q| &q.acl_administer_queue)
    }

    /// Whether `user` administers the queue of an application whose report
    /// shows `shown` (`QueueACLsManager.checkAccess` with ADMINISTER_QUEUE).
    /// A queue that no longer exists: the capacity and FIFO schedulers let
    /// everyone through (Hadoop keeps applications of removed queues
    /// viewable), the fair scheduler nobody.
    pub fn may_administer_app(&self, shown: &str, user: &str, groups: &[String]) -> bool {
        match self.tree.resolve_leaf(shown) {
            Some(path) => self.may_administer(&path, user, groups),
            None => self.tree.kind != SchedulerKind::Fair,
        }
    }

    /// The rights `user` has on the queue at `path`, as
    /// `getQueueUserAcls` reports them: submitting (its own or an
    /// ancestor's submit ACL) and administering (likewise with the
    /// administer ACL), each chain on its own, as the schedulers'
    /// `hasAccess` walks them.
    pub fn user_acls(&self, path: &str, user: &str, groups: &[String]) -> (bool, bool) {
        (
            self.chain_allows(path, user, groups, |q| &q.acl_submit_applications),
            self.may_administer(path, user, groups),
        )
    }

    /// Whether the ACL `pick` chooses, on `path` or a queue above it, lets
    /// `user` in; unset ACLs are `*` at the root and nobody below.
    fn chain_allows(
        &self,
        path: &str,
        user: &str,
        groups: &[String],
        pick: impl Fn(&QueueConfig) -> &Option<String>,
    ) -> bool {
        self.lineage(path).iter().any(|(p, q)| {
            let default = if p == "root" { "*" } else { " " };
            Acl::parse(pick(q).as_deref().unwrap_or(default)).allows(user, groups)
        })
    }

    /// Whether the leaf at `path` or a queue above it is STOPPED.
    pub fn is_stopped(&self, path: &str) -> bool {
        self.lineage(path)
            .iter()
            .any(|(_, q)| q.state == QueueRunState::Stopped)
    }

    /// The leaf's `maximum-applications`, if it has one.
    pub fn max_applications(&self, path: &str) -> Option<usize> {
        self.lineage(path)
            .last()
            .filter(|(p, _)| p == path)
            .and_then(|(_, q)| q.max_applications)
    }

    /// The priority an application gets in the leaf at `path`, as Hadoop's
    /// schedulers decide it at submission and on `updateApplicationPriority`
    /// (`checkAndGetApplicationPriority`). Capacity scheduler: the
    /// requested priority, or the leaf's `default-application-priority`
    /// when none was requested, lowered to `cluster_max`
    /// (`yarn.cluster.max-application-priority`; nothing raises a priority
    /// from below). FIFO and fair schedulers: Hadoop's do not support
    /// application priorities and give every application 0.
    pub fn application_priority(
        &self,
        requested: Option<i32>,
        path: &str,
        cluster_max: i32,
    ) -> i32 {
        match self.tree.kind {
            SchedulerKind::Capacity => {
                let default = || {
                    self.lineage(path)
                        .last()
                        .filter(|(p, _)| p == path)
                        .map_or(0, |(_, q)| q.default_application_priority)
                };
                requested.unwrap_or_else(default).min(cluster_max)
            }
            SchedulerKind::Fifo | SchedulerKind::Fair => 0,
        }
    }

    /// The queue name application reports show for the leaf at `path`: the
    /// capacity scheduler's leaf name (its full path if the name is not
    /// unique), the fair scheduler's full path, FIFO's `default`.
    pub fn display_name(&self, path: &str) -> String {
        match self.tree.kind {
            SchedulerKind::Fifo => "default".to_string(),
            SchedulerKind::Fair => path.to_string(),
            SchedulerKind::Capacity => {
                let short = path.rsplit('.').next().unwrap_or(path);
                if self.tree.resolve_leaf(short).as_deref() == Some(path) {
                    short.to_string()
                } else {
                    path.to_string()
                }
            }
        }
    }

    /// Whether an application whose report shows `shown` is in the leaf at
    /// `path`.
    pub fn same_leaf(&self, shown: &str, path: &str) -> bool {
        shown == path || self.tree.resolve_leaf(shown).as_deref() == Some(path)
    }
}

#[cfg(test)]
mod tests {
    use spindle_common::conf::Configuration;

    use crate::queue_files::{capacity, QueueFile};

    fn queues(pairs: &[(&str, &str)]) -> QueueFile {
        let mut conf = Configuration::with_defaults();
        for (k, v) in pairs {
            conf.set(&format!("yarn.scheduler.capacity.{k}"), *v);
        }
        match capacity::from_conf(&conf, "capacity-scheduler.xml") {
            Ok(q) => q,
            Err(e) => panic!("{e}"),
        }
    }

    fn tree() -> QueueFile {
        queues(&[
            ("root.queues", "eng,ops"),
            ("root.acl_submit_applications", " "),
            ("root.acl_administer_queue", " "),
            ("root.eng.capacity", "60"),
            ("root.eng.queues", "etl"),
            ("root.eng.acl_submit_applications", "alice devs"),
            ("root.eng.etl.capacity", "100"),
            ("root.eng.etl.maximum-applications", "3"),
            ("root.ops.capacity", "40"),
            ("root.ops.state", "STOPPED"),
            ("root.ops.acl_administer_queue", "carol"),
        ])
    }

    #[test]
    fn submit_acls_are_inherited_and_administrators_may_submit() {
        let q = tree();
        // An ACL on a parent covers its leaves.
        assert!(q.may_submit("root.eng.etl", "alice", &[]));
        assert!(q.may_submit("root.eng.etl", "bob", &["devs".into()]));
        assert!(!q.may_submit("root.eng.etl", "bob", &["ops".into()]));
        // Administering a queue includes submitting to it.
        assert!(q.may_submit("root.ops", "carol", &[]));
        assert!(!q.may_submit("root.ops", "alice", &[]));
        // With the root's ACL unset, everyone may submit everywhere.
        let open = queues(&[("root.queues", "a"), ("root.a.capacity", "100")]);
        assert!(open.may_submit("root.a", "anyone", &[]));
    }

    #[test]
    fn administer_acls_are_inherited_and_reported_apart_from_submit() {
        let q = tree();
        assert!(q.may_administer("root.ops", "carol", &[]));
        assert!(!q.may_administer("root.eng.etl", "carol", &[]));
        assert!(q.may_administer_app("ops", "carol", &[]));
        assert_eq!(q.user_acls("root.eng.etl", "alice", &[]), (true, false));
        assert_eq!(q.user_acls("root.ops", "carol", &[]), (false, true));
        // A queue that is gone: the capacity scheduler lets everyone through.
        assert!(q.may_administer_app("gone", "mallory", &[]));
        let open = queues(&[("root.queues", "a"), ("root.a.capacity", "100")]);
        assert_eq!(open.user_acls("root.a", "anyone", &[]), (true, true));
    }

    #[test]
    fn stopped_state_limits_and_names() {
        let q = tree();
        assert!(q.is_stopped("root.ops"));
        assert!(!q.is_stopped("root.eng.etl"));
        assert_eq!(q.max_applications("root.eng.etl"), Some(3));
        assert_eq!(q.display_name("root.eng.etl"), "etl");
        assert!(q.same_leaf("etl", "root.eng.etl"));
        assert!(!q.same_leaf("ops", "root.eng.etl"));
    }
}
