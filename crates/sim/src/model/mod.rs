//! The workload as the engine runs it: concrete nodes and concrete job
//! instances (arrival times, tasks, sizes and places drawn from the seed),
//! plus the scheduler configuration. Built from a [`WorkloadSpec`] or
//! from SLS inputs.
//!
//! This module holds the workload's types. Building one is split into
//! `build` (the entry point, [`WorkloadSource::load`], and the cluster:
//! pools, SLS nodes, the elastic pool), `scheduler_config` (the core's
//! configuration and queue tree from the workload's `scheduler` section)
//! and `jobs` (arrival times and task groups drawn from the seed, and the
//! checks that jobs fit the cluster and its queues).

use std::path::PathBuf;

use spindle_common::Resource;
use spindle_scheduler::SchedulerConfig;

use crate::spec::WorkloadSpec;

mod build;
mod jobs;
mod scheduler_config;

/// Port every simulated NodeManager registers with.
pub const NM_PORT: i32 = 8041;

/// How node heartbeats are simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeartbeatMode {
    /// Each node heartbeats on its own (jittered) clock; each heartbeat
    /// reports the node's finished containers and schedules on it.
    #[default]
    PerNode,
    /// One event per interval reports every finished container, then a
    /// continuous scheduling pass places containers. Much cheaper on
    /// large clusters; placement is then the policy's alone.
    Rounds,
}

impl HeartbeatMode {
    pub fn name(self) -> &'static str {
        match self {
            HeartbeatMode::PerNode => "per_node",
            HeartbeatMode::Rounds => "rounds",
        }
    }

    pub fn parse(s: &str) -> Result<HeartbeatMode, String> {
        match s.trim() {
            "per_node" | "per-node" => Ok(HeartbeatMode::PerNode),
            "rounds" => Ok(HeartbeatMode::Rounds),
            other => Err(format!(
                "unknown heartbeat mode '{other}'; known: per_node, rounds"
            )),
        }
    }
}

/// One node the cluster starts with (or that SLS inputs name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDef {
    pub host: String,
    pub rack: String,
    pub capability: Resource,
    pub pool: usize,
}

/// A family of identical nodes; the elastic pool grows by minting more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    pub name: String,
    pub capability: Resource,
    pub racks: usize,
}

impl Pool {
    /// The `index`-th node of the pool (0-based).
    pub fn node(&self, pool_idx: usize, index: usize) -> NodeDef {
        let rack = index % self.racks.max(1);
        NodeDef {
            host: format!("{}-{:05}", self.name, index + 1),
            rack: format!("/{}-rack-{:02}", self.name, rack + 1),
            capability: self.capability,
            pool: pool_idx,
        }
    }
}

/// The autoscaler's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticModel {
    pub pool: usize,
    pub min_nodes: usize,
    pub max_nodes: usize,
    pub provisioning_delay_ms: u64,
    pub scale_up_wait_ms: u64,
    pub scale_down_idle_ms: u64,
    pub check_interval_ms: u64,
    pub max_scale_up_step: Option<usize>,
    pub keep_nodes_with_app_state: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClusterModel {
    pub pools: Vec<Pool>,
    /// The nodes present at time 0.
    pub nodes: Vec<NodeDef>,
    pub heartbeat_interval_ms: u64,
    pub heartbeat_jitter_ms: u64,
    pub heartbeat_mode: HeartbeatMode,
    pub am_heartbeat_interval_ms: u64,
    pub launch_delay_ms: u64,
    pub continuous_scheduling_interval_ms: u64,
    pub max_am_attempts: u32,
    pub elastic: Option<ElasticModel>,
}

/// Where a task would like to run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum TaskLocality {
    Any,
    Rack(String),
    Host { host: String, rack: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskPlan {
    pub priority: i32,
    pub resource: Resource,
    /// `None`: runs until the application ends (service containers).
    pub duration_ms: Option<u64>,
    pub locality: TaskLocality,
    /// Asked for this long after the AM starts (SLS `dag` jobs).
    pub request_delay_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppKind {
    /// Ends when every task of every phase is done.
    Batch,
    /// Runs for `lifetime_ms` from its AM's start; a task that ends before
    /// that (lost, or finished) is asked for again.
    Service { lifetime_ms: u64 },
}

/// One application to submit.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPlan {
    pub name: String,
    pub arrival_ms: u64,
    pub queue: String,
    pub user: String,
    pub priority: i32,
    pub am_resource: Resource,
    pub unmanaged_am: bool,
    pub kind: AppKind,
    /// Phase `i + 1` is asked for once phase `i` is done.
    pub phases: Vec<Vec<TaskPlan>>,
}

impl JobPlan {
    pub fn tasks(&self) -> usize {
        self.phases.iter().map(Vec::len).sum()
    }
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    /// File (or description) the workload came from, for messages.
    pub origin: String,
    pub seed: Option<u64>,
    pub horizon_ms: u64,
    pub max_time_ms: Option<u64>,
    pub sample_interval_ms: u64,
    /// The packing seed is set per run.
    pub scheduler: SchedulerConfig,
    pub cluster: ClusterModel,
    /// By arrival time, then declaration order.
    pub jobs: Vec<JobPlan>,
}

/// Where the workload comes from.
#[derive(Debug, Clone)]
pub enum WorkloadSource {
    /// A workload file ([`WorkloadSpec`]).
    File(PathBuf),
    /// An SLS trace, with an optional SLS node file; everything else at
    /// its defaults (capacity scheduler, one queue per queue name).
    SlsTrace {
        trace: PathBuf,
        nodes: Option<PathBuf>,
    },
    /// An SLS synthetic-load file.
    SlsSynth(PathBuf),
    /// A workload already parsed; relative SLS paths resolve against
    /// `base_dir`.
    Spec {
        spec: Box<WorkloadSpec>,
        origin: String,
        base_dir: PathBuf,
    },
}

fn ms(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1000.0).round() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_name_nodes_and_deal_racks() {
        let p = Pool {
            name: "w".into(),
            capability: Resource::new(1024, 1),
            racks: 2,
        };
        assert_eq!(p.node(0, 0).host, "w-00001");
        assert_eq!(p.node(0, 0).rack, "/w-rack-01");
        assert_eq!(p.node(0, 1).rack, "/w-rack-02");
        assert_eq!(p.node(0, 2).rack, "/w-rack-01");
    }
}
