//! The example configuration shipped in `conf/` loads with Spindle's own loaders,
//! and the scheduler core accepts the queue trees they describe.

use std::path::Path;

use spindle_common::conf::Configuration;
use spindle_rm::queue_files;
use spindle_scheduler::{Scheduler, SchedulerConfig, SchedulerKind};

fn conf_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf")
}

fn accepted_by_the_core(file: &queue_files::QueueFile) {
    let config = SchedulerConfig {
        queues: file.tree.clone(),
        locality: file.locality,
        heartbeat: file.heartbeat,
        ..SchedulerConfig::default()
    };
    if let Err(e) = Scheduler::new(config) {
        panic!("the scheduler refuses the tree: {e}");
    }
}

#[test]
fn shipped_examples_load() {
    let dir = conf_dir();
    let conf = Configuration::load(Some(&dir)).expect("conf/*.xml load");
    assert_eq!(
        conf.get("yarn.resourcemanager.hostname").as_deref(),
        Some("127.0.0.1")
    );
    let kind = SchedulerKind::from_class_name(
        &conf
            .get("yarn.resourcemanager.scheduler.class")
            .unwrap_or_default(),
    );
    assert_eq!(kind, Some(SchedulerKind::Capacity));
    let queues = queue_files::load(SchedulerKind::Capacity, &conf, Some(&dir))
        .expect("conf/capacity-scheduler.xml loads");
    assert_eq!(
        queues.tree.resolve_leaf("default").as_deref(),
        Some("root.default")
    );
    accepted_by_the_core(&queues);
}

#[test]
fn example_capacity_hierarchy_loads() {
    let examples = conf_dir().join("examples");
    let scratch = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        examples.join("capacity-scheduler-three-level.xml"),
        scratch.path().join("capacity-scheduler.xml"),
    )
    .expect("copy the example");
    let conf = Configuration::with_defaults();
    let queues = queue_files::load(SchedulerKind::Capacity, &conf, Some(scratch.path()))
        .unwrap_or_else(|e| panic!("{e}"));
    for leaf in ["etl", "reports", "dev"] {
        assert!(queues.tree.resolve_leaf(leaf).is_some(), "{leaf}");
    }
    assert_eq!(
        queues.tree.resolve_leaf("etl").as_deref(),
        Some("root.prod.etl")
    );
    accepted_by_the_core(&queues);
}

#[test]
fn example_fair_allocation_file_loads() {
    let examples = conf_dir().join("examples");
    let mut conf = Configuration::with_defaults();
    conf.set(
        "yarn.scheduler.fair.allocation.file",
        examples.join("fair-scheduler.xml").display().to_string(),
    );
    let queues = queue_files::load(SchedulerKind::Fair, &conf, Some(&examples))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        queues.tree.resolve_leaf("root.prod.etl").as_deref(),
        Some("root.prod.etl")
    );
    accepted_by_the_core(&queues);
}
