//! The session's own settings, read with the cores' from one key -> value
//! map (the `--dag-conf` settings of `spindle dag session start`).

use std::collections::BTreeMap;

use crate::config::DagConfig;
use crate::Resource;

/// Spindle-only keys of the DAG session (MR3 documents none for these).
pub mod keys {
    /// Memory of each worker of the session's default ContainerGroup, MB.
    pub const WORKER_MEMORY_MB: &str = "spindle.dag.worker.memory.mb";
    /// Virtual cores of each worker of the default group.
    pub const WORKER_VCORES: &str = "spindle.dag.worker.vcores";
    /// Name of the default group.
    pub const DEFAULT_GROUP: &str = "spindle.dag.group.name";
    /// Most workers one group starts on demand (autoscaling off).
    pub const GROUP_MAX_WORKERS: &str = "spindle.dag.group.max.workers";
    /// Finished DAGs kept for `spindle dag status`.
    pub const HISTORY: &str = "spindle.dag.history.size";
    /// Workers of a group that may fail to start in a row before the
    /// group's active DAGs are killed and it stops asking for more.
    pub const MAX_START_FAILURES: &str = "spindle.dag.worker.max.start.failures";
}

/// The session's settings: the three cores' and its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    pub cores: DagConfig,
    /// The ContainerGroup of DAGs that name none; it lives as long as the
    /// session.
    pub default_group: String,
    /// The size of the default group's workers.
    pub worker_resource: Resource,
    /// `spindle.dag.group.max.workers`.
    pub group_max_workers: u32,
    /// `spindle.dag.history.size`.
    pub history: usize,
    /// `spindle.dag.worker.max.start.failures`.
    pub max_start_failures: u32,
}

impl SessionConfig {
    /// Reads the cores' keys (MR3 names) and the session's own from `map`;
    /// absent keys take their defaults, unknown keys are ignored.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<SessionConfig, String> {
        let cores = DagConfig::from_map(map).map_err(|e| e.to_string())?;
        let uint = |key: &str, default: u64, min: u64, max: u64| -> Result<u64, String> {
            match map.get(key).map(|v| v.trim()) {
                None => Ok(default),
                Some(v) => match v.parse::<u64>() {
                    Ok(n) if (min..=max).contains(&n) => Ok(n),
                    _ => Err(format!(
                        "{key} = '{v}': expected an integer from {min} to {max}"
                    )),
                },
            }
        };
        let memory = uint(keys::WORKER_MEMORY_MB, 1024, 1, 1 << 30)?;
        // The bounds keep these within their types.
        let vcores = uint(keys::WORKER_VCORES, 1, 1, 1 << 16)? as u32;
        let group_max_workers = uint(keys::GROUP_MAX_WORKERS, 16, 1, 100_000)? as u32;
        let history = uint(keys::HISTORY, 1000, 1, 1_000_000)? as usize;
        let max_start_failures = uint(keys::MAX_START_FAILURES, 5, 1, 1_000_000)? as u32;
        let default_group = map
            .get(keys::DEFAULT_GROUP)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| cores.task.group_name.clone());
        if default_group.is_empty() {
            return Err(format!("{} must not be empty", keys::DEFAULT_GROUP));
        }
        Ok(SessionConfig {
            cores,
            default_group,
            worker_resource: Resource::new(memory, vcores),
            group_max_workers,
            history,
            max_start_failures,
        })
    }
}

impl Default for SessionConfig {
    /// Every key at its default.
    fn default() -> SessionConfig {
        let cores = DagConfig::default();
        SessionConfig {
            default_group: cores.task.group_name.clone(),
            cores,
            worker_resource: Resource::new(1024, 1),
            group_max_workers: 16,
            history: 1000,
            max_start_failures: 5,
        }
    }
}
