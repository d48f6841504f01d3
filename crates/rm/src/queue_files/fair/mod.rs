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
//!
//! The files: here, finding and reading the file; `site.rs` the
//! `yarn-site.xml` keys; `parse.rs` the allocation file's XML into what it
//! says ([`not_built_elements`] included); `resources.rs` Hadoop's resource
//! forms (`minResources`, `maxResources`); `tree.rs` the queue tree and
//! placement policy built from them with the file's defaults.

use std::io;
use std::path::{Path, PathBuf};

use spindle_common::conf::Configuration;

use super::queue_file::{QueueFile, QueueFileError};

mod parse;
mod resources;
mod site;
#[cfg(test)]
mod test_support;
mod tree;

pub use parse::not_built_elements;

use parse::{parse_allocations, Allocations};
use site::SiteSettings;
use tree::build;

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

#[cfg(test)]
mod tests {
    use spindle_common::Resource;
    use spindle_scheduler::{
        AppOrdering, HeartbeatAssignment, LocalityDelay, QueueShare, QueueTreeConfig,
        ResourceBound, ResourceCalculatorKind, SchedulerKind,
    };

    use super::test_support::{absolute, find, fixture_dir, percent, place, placed};
    use super::*;
    use crate::queue_files::placement::FairDefaults;

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
}
