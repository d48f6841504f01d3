//! Assignment: a worker's offer is filled with the best pending tasks
//! that fit, queue by queue as the queue scheme says.

use super::*;

impl TaskScheduler {
    pub(super) fn offer(&mut self, worker: &WorkerId, out: &mut TaskDecisions) {
        let limit = self.config.limits.max_assignments_per_offer;
        for _ in 0..limit {
            let Some(w) = self.workers.get(worker) else {
                return;
            };
            if w.drained_reported {
                return;
            }
            let free = w.free();
            if free.memory_mb == 0 {
                // Every task needs memory: nothing fits (and the search
                // below would visit every pending vertex to find that out).
                return;
            }
            let Some((queue, key, task)) = self.pick(free, w.draining.as_ref()) else {
                return;
            };
            self.assign(queue, key, task, worker, out);
        }
    }

    /// The best pending task that fits `free` and belongs to an allowed
    /// DAG, and the queue it is in.
    pub(super) fn pick(
        &self,
        free: Resource,
        allowed: Option<&BTreeSet<DagId>>,
    ) -> Option<(QueueRef, PendingKey, u32)> {
        match self.config.queue_scheme {
            DagQueueScheme::Common => self
                .find_in(&self.shared[0], free, allowed)
                .map(|(k, t)| (QueueRef::Shared(0), k, t)),
            DagQueueScheme::Capacity => {
                let total = self.capacity.memory_mb;
                let below = |q: &TaskQueue| {
                    u128::from(q.running.memory_mb) * 100
                        < u128::from(q.min_percent) * u128::from(total)
                };
                // Pass 1: guarantees, in priority order.
                for (i, q) in self.shared.iter().enumerate() {
                    if below(q) {
                        if let Some((k, t)) = self.find_in(q, free, allowed) {
                            return Some((QueueRef::Shared(i), k, t));
                        }
                    }
                }
                // Pass 2: what is left, higher priority first.
                for (i, q) in self.shared.iter().enumerate() {
                    if let Some((k, t)) = self.find_in(q, free, allowed) {
                        return Some((QueueRef::Shared(i), k, t));
                    }
                }
                None
            }
            DagQueueScheme::Individual => {
                // Active DAGs are bounded by mr3.am.max.num.concurrent.dags,
                // so ordering them here is cheap.
                let mut order: Vec<(u64, u64, DagId)> = self
                    .dags
                    .values()
                    .filter(|d| d.own.pending_tasks > 0)
                    .map(|d| (d.running.memory_mb, d.submit_seq, d.id))
                    .collect();
                order.sort_unstable();
                order.into_iter().find_map(|(_, _, id)| {
                    self.find_in(&self.dags[&id].own, free, allowed)
                        .map(|(k, t)| (QueueRef::Own, k, t))
                })
            }
        }
    }

    pub(super) fn find_in(
        &self,
        q: &TaskQueue,
        free: Resource,
        allowed: Option<&BTreeSet<DagId>>,
    ) -> Option<(PendingKey, u32)> {
        q.pending.iter().find_map(|(key, tasks)| {
            if allowed.is_some_and(|a| !a.contains(&key.dag)) {
                return None;
            }
            let need = self.dags.get(&key.dag)?.dag.vertices()[key.vertex as usize].resource;
            if !need.fits_in(&free) {
                return None;
            }
            tasks.first().map(|&t| (*key, t))
        })
    }

    pub(super) fn assign(
        &mut self,
        queue: QueueRef,
        key: PendingKey,
        task: u32,
        worker: &WorkerId,
        out: &mut TaskDecisions,
    ) {
        let Some(dag) = self.dags.get_mut(&key.dag) else {
            return;
        };
        let q = match queue {
            QueueRef::Shared(i) => &mut self.shared[i],
            QueueRef::Own => &mut dag.own,
        };
        if !q.remove(&key, task) {
            return;
        }
        let vertex = &dag.dag.vertices()[key.vertex as usize];
        let resource = vertex.resource;
        q.running = q.running.saturating_add(resource);
        let t = &mut dag.vertices[key.vertex as usize].tasks[task as usize];
        t.attempts += 1;
        t.phase = Phase::Running {
            attempt: t.attempts,
        };
        let attempt = AttemptId {
            task: TaskId {
                dag: key.dag,
                vertex: key.vertex,
                task,
            },
            attempt: t.attempts,
        };
        dag.running = dag.running.saturating_add(resource);
        dag.running_attempts += 1;
        let vertex_name = vertex.name.clone();
        let command = dag
            .dag
            .render_command(key.dag, key.vertex, task, attempt.attempt);
        if let Some(w) = self.workers.get_mut(worker) {
            w.used = w.used.saturating_add(resource);
            w.running.insert(attempt);
        }
        self.attempts.insert(
            attempt,
            AttemptRecord {
                worker: worker.clone(),
                resource,
                input_lost: false,
            },
        );
        out.assignments.push(Assignment {
            attempt,
            worker: worker.clone(),
            resource,
            vertex_name,
            command,
        });
    }
}
