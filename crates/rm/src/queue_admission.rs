//! What the RM checks about a queue when an application is submitted:
//! submit ACLs, stopped queues, `maximum-applications`, and the name an
//! application report shows. Placement itself is in [`crate::queue_files`].

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
        self.lineage(path).iter().any(|(p, q)| {
            let default = if p == "root" { "*" } else { " " };
            [&q.acl_submit_applications, &q.acl_administer_queue]
                .iter()
                .any(|acl| Acl::parse(acl.as_deref().unwrap_or(default)).allows(user, groups))
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

    /// Whether any configured queue has this full path or short name.
    pub fn knows(&self, name: &str) -> bool {
        self.tree
            .root
            .walk()
            .iter()
            .any(|(p, q)| p == name || q.name == name)
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
