//! What the allocation file's tests share: reading a file's text, finding
//! queues, placing applications.

use std::path::{Path, PathBuf};

use spindle_common::conf::Configuration;
use spindle_common::Resource;
use spindle_scheduler::{QueueConfig, QueueTreeConfig, ResourceBound};

use super::from_str;
use crate::queue_files::queue_file::{QueueFile, QueueFileError};
use crate::queue_files::Placed;

pub(super) fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/queues")
}

pub(super) const FILE: &str = "/etc/hadoop/fair-scheduler.xml";

pub(super) fn parse(xml: &str) -> Result<QueueFile, QueueFileError> {
    from_str(xml, FILE, &Configuration::empty())
}

pub(super) fn ok(xml: &str) -> QueueFile {
    parse(xml).unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn err(xml: &str) -> QueueFileError {
    match parse(xml) {
        Ok(f) => panic!("accepted: {:#?}", f.tree),
        Err(e) => e,
    }
}

pub(super) fn find<'t>(tree: &'t QueueTreeConfig, path: &str) -> &'t QueueConfig {
    tree.root
        .walk()
        .into_iter()
        .find(|(p, _)| p == path)
        .map(|(_, q)| q)
        .unwrap_or_else(|| panic!("no queue {path}"))
}

pub(super) fn place(
    file: &QueueFile,
    requested: &str,
    user: &str,
    groups: &[&str],
) -> Result<Placed, String> {
    let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    file.placement.place(requested, user, &groups, &file.tree)
}

pub(super) fn placed(queue: &str, create: bool) -> Result<Placed, String> {
    Ok(Placed {
        queue: queue.to_string(),
        create,
    })
}

pub(super) fn absolute(memory_mb: i64, vcores: i32) -> Option<ResourceBound> {
    Some(ResourceBound::Absolute(Resource::new(memory_mb, vcores)))
}

pub(super) fn percent(memory: f64, vcores: f64) -> Option<ResourceBound> {
    Some(ResourceBound::Percent { memory, vcores })
}
