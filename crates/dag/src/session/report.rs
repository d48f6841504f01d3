//! What the session reports: its groups, workers and DAGs (what
//! `spindle dag status` shows) and its running totals.

use std::fmt;

use super::{DagEnd, Session};
use crate::autoscaler::ScaleState;
use crate::{DagId, Resource, WorkerId};

/// Running totals of the session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionCounters {
    /// Containers asked of the resource manager for workers.
    pub containers_requested: u64,
    /// Workers asked for by autoscaling scale-outs (usage at or over
    /// ScaleOutThreshold).
    pub scale_out_requested: u64,
    /// Workers asked for by autoscaling for a group with no worker
    /// (`mr3.auto.scale.out.num.initial.containers`): not scale-outs.
    pub initial_requested: u64,
    /// Worker requests withdrawn.
    pub requests_cancelled: u64,
    pub workers_started: u64,
    /// Workers stopped because scale-in emptied their node.
    pub scale_in_released: u64,
    /// Workers stopped for any reason.
    pub workers_stopped: u64,
    pub workers_lost: u64,
    pub workers_recycled: u64,
    /// Scale-outs triggered by usage (initial requests not included).
    pub scale_outs: u64,
    pub scale_ins: u64,
    pub attempts_started: u64,
    pub attempts_failed: u64,
    /// Attempts that could not fetch an upstream output (retried, not
    /// counted as failures).
    pub inputs_lost: u64,
}

/// The whole session at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionReport {
    pub groups: Vec<GroupStatus>,
    pub workers: Vec<WorkerStatus>,
    pub dags: Vec<DagStatus>,
    pub counters: SessionCounters,
}

/// One ContainerGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupStatus {
    pub name: String,
    pub worker_resource: Resource,
    /// The request priority that names the group to the resource manager.
    pub priority: i32,
    /// The TaskScheduler's status line (`queue = pending/usage%`).
    pub status_line: String,
    pub workers: u32,
    /// Requests sent to the resource manager and not yet granted.
    pub requests_outstanding: u32,
    /// Those, and containers granted whose worker has not registered.
    pub requested_workers: u32,
    /// When autoscaling is on.
    pub autoscale_state: Option<ScaleState>,
    /// The autoscaler's last measured memory usage, in basis points.
    pub usage_bp: Option<u64>,
    pub pending_tasks: u64,
    /// Memory the group's workers have for attempts, and what running
    /// attempts use.
    pub task_capacity_mb: u64,
    pub task_used_mb: u64,
}

/// One registered worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerStatus {
    pub worker: WorkerId,
    pub host: String,
    /// `None` in the reserve.
    pub group: Option<String>,
    /// Zero outside a group.
    pub capacity: Resource,
    pub used: Resource,
    pub running_attempts: u64,
    pub draining: bool,
}

/// Where a DAG is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DagState {
    Running,
    Succeeded,
    Failed,
    Killed,
}

impl fmt::Display for DagState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DagState::Running => "RUNNING",
            DagState::Succeeded => "SUCCEEDED",
            DagState::Failed => "FAILED",
            DagState::Killed => "KILLED",
        })
    }
}

/// One DAG, running or in the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DagStatus {
    pub id: DagId,
    pub name: String,
    pub client: String,
    pub group: String,
    pub queue: String,
    pub state: DagState,
    pub reason: Option<String>,
    pub total_tasks: u64,
    pub succeeded_tasks: u64,
    pub running_attempts: u64,
    pub pending_tasks: u64,
    pub elapsed_ms: u64,
}

impl Session {
    /// What `spindle dag status` shows: every group and worker, and one DAG
    /// or all those still in the history.
    pub fn report(&self, dag: Option<DagId>) -> Result<SessionReport, String> {
        let ids: Vec<DagId> = match dag {
            Some(id) => {
                if !self.dags.contains_key(&id) {
                    return Err(format!("no DAG {id} in this session"));
                }
                vec![id]
            }
            None => self.dags.keys().copied().collect(),
        };
        Ok(SessionReport {
            groups: self.groups(),
            workers: self.workers(),
            dags: ids
                .into_iter()
                .filter_map(|id| self.dag_status(id))
                .collect(),
            counters: self.counters.clone(),
        })
    }

    /// Every group, by name.
    pub fn groups(&self) -> Vec<GroupStatus> {
        self.groups
            .keys()
            .filter_map(|name| self.group(name))
            .collect()
    }

    pub fn group(&self, name: &str) -> Option<GroupStatus> {
        let g = self.groups.get(name)?;
        let launching = self
            .launching
            .values()
            .filter(|l| l.group == g.spec.name)
            .count() as u32;
        let outstanding = g.outstanding_cs + g.outstanding_auto;
        Some(GroupStatus {
            name: g.spec.name.clone(),
            worker_resource: g.spec.worker_resource,
            priority: g.priority,
            status_line: g.ts.status_line(),
            workers: g.ts.workers().len() as u32,
            requests_outstanding: outstanding,
            requested_workers: outstanding + launching,
            autoscale_state: g.autoscaler.as_ref().map(|a| a.state()),
            usage_bp: g.usage_bp,
            pending_tasks: g.ts.pending_demand().0,
            task_capacity_mb: g.ts.capacity().memory_mb,
            task_used_mb: g.ts.used().memory_mb,
        })
    }

    /// Every registered worker, by id.
    pub fn workers(&self) -> Vec<WorkerStatus> {
        self.workers
            .keys()
            .filter_map(|id| self.worker(id))
            .collect()
    }

    pub fn worker(&self, id: &WorkerId) -> Option<WorkerStatus> {
        let w = self.workers.get(id)?;
        let report = w
            .group
            .as_ref()
            .and_then(|g| self.groups.get(g))
            .and_then(|g| g.ts.worker_report(id));
        Some(WorkerStatus {
            worker: id.clone(),
            host: w.host.clone(),
            group: w.group.clone(),
            capacity: report.as_ref().map_or(Resource::ZERO, |r| r.capacity),
            used: report.as_ref().map_or(Resource::ZERO, |r| r.used),
            running_attempts: report.as_ref().map_or(0, |r| r.running_attempts),
            draining: report.as_ref().is_some_and(|r| r.draining),
        })
    }

    pub fn dag_status(&self, id: DagId) -> Option<DagStatus> {
        let r = self.dags.get(&id)?;
        let live = self.groups.get(&r.group).and_then(|g| g.ts.dag_report(id));
        let (state, reason) = match &r.end {
            Some(DagEnd::Succeeded) => (DagState::Succeeded, None),
            Some(DagEnd::Failed { reason }) => (DagState::Failed, Some(reason.clone())),
            Some(DagEnd::Killed { reason }) => (DagState::Killed, Some(reason.clone())),
            None => (DagState::Running, None),
        };
        let end = r.finished_ms.unwrap_or(self.last_ms);
        Some(DagStatus {
            id,
            name: r.name.clone(),
            client: r.client.clone(),
            group: r.group.clone(),
            queue: r.queue.clone(),
            state,
            reason,
            total_tasks: r.total_tasks,
            succeeded_tasks: match (&r.end, &live) {
                (Some(_), _) => r.succeeded_tasks,
                (None, Some(l)) => l.succeeded_tasks,
                (None, None) => 0,
            },
            running_attempts: live.as_ref().map_or(0, |l| l.running_attempts),
            pending_tasks: live.as_ref().map_or(0, |l| l.pending_tasks),
            elapsed_ms: end.saturating_sub(r.submitted_ms),
        })
    }
}
