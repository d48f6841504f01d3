//! What every protocol handler shares.

use std::path::PathBuf;

use spindle_common::resource::Resource;
use spindle_scheduler::SchedulerKind;

use crate::core::CoreHandle;
use crate::topology::Topology;

/// The handlers' context: the way to the state, and what they need to
/// convert requests and answers without asking it.
pub struct RmContext {
    pub core: CoreHandle,
    /// Where refreshes re-read configuration from.
    pub conf_dir: Option<PathBuf>,
    /// The RM's start time: cluster timestamp in ids and NM `rm_identifier`.
    pub cluster_ts: i64,
    pub rm_version: String,
    pub min_allocation: Resource,
    pub max_allocation: Resource,
    /// Which of Hadoop's schedulers `yarn.resourcemanager.scheduler.class`
    /// chose; `refreshQueues` re-reads that scheduler's queue file.
    pub scheduler_kind: SchedulerKind,
    /// Rack resolution for registering NodeManagers.
    pub topology: Topology,
}
