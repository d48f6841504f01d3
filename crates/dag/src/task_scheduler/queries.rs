//! Read-only queries: capacity and use, demand, reports, the status line.

use super::*;

impl TaskScheduler {
    /// Total resources of all workers.
    pub fn capacity(&self) -> Resource {
        self.capacity
    }

    /// Resources used by running attempts.
    pub fn used(&self) -> Resource {
        self.workers
            .values()
            .fold(Resource::ZERO, |acc, w| acc.saturating_add(w.used))
    }

    /// Ready tasks not yet running, and what they would need together.
    pub fn pending_demand(&self) -> (u64, Resource) {
        let mut count = 0;
        let mut need = Resource::ZERO;
        let queues = self.shared.iter().chain(self.dags.values().map(|d| &d.own));
        for q in queues {
            for (key, tasks) in &q.pending {
                if let Some(d) = self.dags.get(&key.dag) {
                    let r = d.dag.vertices()[key.vertex as usize].resource;
                    let n = tasks.len() as u64;
                    count += n;
                    need = need.saturating_add(Resource::new(
                        r.memory_mb.saturating_mul(n),
                        r.vcores
                            .saturating_mul(u32::try_from(n).unwrap_or(u32::MAX)),
                    ));
                }
            }
        }
        (count, need)
    }

    /// DAGs that are running (not yet in a final state), in id order.
    pub fn active_dags(&self) -> Vec<DagId> {
        self.dags
            .values()
            .filter(|d| !d.status.is_terminal())
            .map(|d| d.id)
            .collect()
    }

    pub fn dag_report(&self, id: DagId) -> Option<DagReport> {
        let d = self.dags.get(&id)?;
        let pending = d
            .vertices
            .iter()
            .flat_map(|v| v.tasks.iter())
            .filter(|t| t.phase == Phase::Pending)
            .count() as u64;
        Some(DagReport {
            id,
            name: d.dag.name().to_string(),
            client: d.client.clone(),
            queue: match d.queue {
                QueueRef::Shared(i) => self.shared[i].name.clone(),
                QueueRef::Own => d.own.name.clone(),
            },
            dag_priority: d.dag_priority,
            status: d.status.clone(),
            total_tasks: d.dag.total_tasks(),
            succeeded_tasks: d.succeeded_tasks,
            pending_tasks: pending,
            running_attempts: d.running_attempts,
            running: d.running,
        })
    }

    pub fn worker_report(&self, worker: &WorkerId) -> Option<WorkerReport> {
        let w = self.workers.get(worker)?;
        Some(WorkerReport {
            worker: worker.clone(),
            capacity: w.capacity,
            used: w.used,
            running_attempts: w.running.len() as u64,
            holds_output_of: w.holds.keys().copied().collect(),
            draining: w.draining.is_some(),
        })
    }

    pub fn workers(&self) -> Vec<WorkerId> {
        self.workers.keys().cloned().collect()
    }

    /// How many workers the group has (draining ones included).
    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// Workers with nothing left to serve: not draining, no attempt
    /// running, no output of an active DAG held, and no ready task that
    /// would fit them. Under FIFO container scheduling these are the
    /// workers that may stop and move to another group.
    pub fn idle_workers(&self) -> Vec<WorkerId> {
        self.workers
            .iter()
            .filter(|(_, w)| {
                w.draining.is_none()
                    && w.running.is_empty()
                    && w.holds.is_empty()
                    && self.pick(w.free(), None).is_none()
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Queues in priority order (capacity), the one common queue, or one
    /// per active DAG in id order (individual).
    pub fn queue_reports(&self) -> Vec<QueueReport> {
        let total = self.capacity.memory_mb;
        let report = |q: &TaskQueue| QueueReport {
            name: q.name.clone(),
            pending_tasks: q.pending_tasks,
            running: q.running,
            usage_percent: q
                .running
                .memory_mb
                .saturating_mul(100)
                .checked_div(total)
                .unwrap_or(0),
        };
        match self.config.queue_scheme {
            DagQueueScheme::Individual => self
                .dags
                .values()
                .filter(|d| !d.status.is_terminal())
                .map(|d| report(&d.own))
                .collect(),
            _ => self.shared.iter().map(report).collect(),
        }
    }

    /// The status line, as MR3 logs it for capacity scheduling:
    /// `DAGScheduler <group> <memory>MB: <queue> = <pending>/<usage>%, ...`
    /// where pending counts ready tasks not yet running and usage is the
    /// queue's share of the group's memory in use by its running attempts.
    pub fn status_line(&self) -> String {
        let mut line = format!(
            "DAGScheduler {} {}MB:",
            self.config.group_name, self.capacity.memory_mb
        );
        let queues = self.queue_reports();
        if queues.is_empty() {
            line.push_str(" no active DAGs");
        }
        for (i, q) in queues.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            let _ = write!(
                line,
                "{sep}{} = {}/{}%",
                q.name, q.pending_tasks, q.usage_percent
            );
        }
        line
    }
}
