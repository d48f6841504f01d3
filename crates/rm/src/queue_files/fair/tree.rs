//! The queue tree and placement policy built from what the allocation file
//! says and the site settings, with the file's defaults applied and
//! Hadoop's policy rules checked.

use spindle_scheduler::{
    AppOrdering, QueueConfig, QueueShare, QueueTreeConfig, ResourceCalculatorKind, SchedulerKind,
};

use super::parse::{Allocations, RawQueue};
use super::site::SiteSettings;
use crate::queue_files::placement::{FairDefaults, Placement, DEFAULT_MAX_AM_SHARE};
use crate::queue_files::queue_file::{QueueFile, QueueFileError};

/// The name of [`QueueTreeConfig::dynamic_leaf`] (replaced by the new
/// leaf's).
const DYNAMIC_LEAF_NAME: &str = "dynamic";

pub(super) fn build(
    alloc: Allocations,
    site: &SiteSettings,
    file: &str,
) -> Result<QueueFile, QueueFileError> {
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
    use spindle_scheduler::{AppOrdering, QueueShare, ResourceCalculatorKind};

    use super::super::test_support::{find, ok};

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
}
