//! Bookkeeping after an input: usage released, successes propagated to
//! consumers, retries, DAGs finished and forgotten, drained workers.

use super::*;

impl TaskScheduler {
    /// Takes an ended attempt's resources off its worker, queue and DAG.
    pub(super) fn release_attempt_usage(
        &mut self,
        attempt: AttemptId,
        record: &AttemptRecord,
        worker_alive: bool,
    ) {
        if worker_alive {
            if let Some(w) = self.workers.get_mut(&record.worker) {
                w.used = w.used.saturating_sub(record.resource);
                w.running.remove(&attempt);
            }
        }
        let dag_id = attempt.task.dag;
        if let Some(dag) = self.dags.get_mut(&dag_id) {
            dag.running = dag.running.saturating_sub(record.resource);
            dag.running_attempts -= 1;
            let q = match dag.queue {
                QueueRef::Shared(i) => &mut self.shared[i],
                QueueRef::Own => &mut dag.own,
            };
            q.running = q.running.saturating_sub(record.resource);
        }
    }

    pub(super) fn attempt_succeeded(
        &mut self,
        attempt: AttemptId,
        worker: &WorkerId,
        out: &mut TaskDecisions,
    ) {
        let TaskId {
            dag: dag_id,
            vertex,
            task,
        } = attempt.task;
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        if dag.status.is_terminal() {
            self.forget_if_done(dag_id);
            return;
        }
        {
            let t = &mut dag.vertices[vertex as usize].tasks[task as usize];
            t.phase = Phase::Succeeded;
            t.output_on = Some(worker.clone());
        }
        dag.succeeded_tasks += 1;
        let vs = &mut dag.vertices[vertex as usize];
        vs.succeeded += 1;
        let vertex_done = vs.succeeded as usize == vs.tasks.len();
        if let Some(w) = self.workers.get_mut(worker) {
            *w.holds.entry(dag_id).or_insert(0) += 1;
        }
        // Wake consumers.
        let consumers: Vec<(u32, EdgeKind)> = dag.dag.consumers(vertex).collect();
        let mut ready: Vec<(u32, u32)> = Vec::new();
        for (c, kind) in consumers {
            let cs = &mut dag.vertices[c as usize];
            match kind {
                EdgeKind::OneToOne => {
                    let ct = &mut cs.tasks[task as usize];
                    ct.waiting_one_to_one -= 1;
                    if ct.waiting_one_to_one == 0
                        && cs.waiting_all_to_all == 0
                        && ct.phase == Phase::Waiting
                    {
                        ready.push((c, task));
                    }
                }
                EdgeKind::AllToAll if vertex_done => {
                    cs.waiting_all_to_all -= 1;
                    if cs.waiting_all_to_all == 0 {
                        for (i, ct) in cs.tasks.iter().enumerate() {
                            if ct.waiting_one_to_one == 0 && ct.phase == Phase::Waiting {
                                ready.push((c, i as u32));
                            }
                        }
                    }
                }
                EdgeKind::AllToAll => {}
            }
        }
        if vertex_done {
            dag.completed_vertices += 1;
        }
        let dag_done = dag.completed_vertices as usize == dag.vertices.len();
        for (c, t) in ready {
            self.make_pending(dag_id, c, t);
        }
        if dag_done {
            self.finish_dag(dag_id, DagStatus::Succeeded, out);
        }
    }

    pub(super) fn retry_or_drop(
        &mut self,
        attempt: AttemptId,
        cause: RetryCause,
        out: &mut TaskDecisions,
    ) {
        let TaskId {
            dag: dag_id,
            vertex,
            task,
        } = attempt.task;
        let max_failures = self.config.max_task_attempts;
        let max_kills = self.config.limits.max_killed_attempts_per_task;
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        if dag.status.is_terminal() {
            self.forget_if_done(dag_id);
            return;
        }
        let vertex_name = dag.dag.vertices()[vertex as usize].name.clone();
        let t = &mut dag.vertices[vertex as usize].tasks[task as usize];
        let failure = match cause {
            RetryCause::Failed(reason) => {
                t.failures += 1;
                (t.failures >= max_failures).then(|| {
                    format!(
                        "task {} of vertex '{vertex_name}' failed {} attempts \
                         ({} = {max_failures}); last error: {reason}",
                        attempt.task,
                        t.failures,
                        crate::config::keys::TASK_MAX_FAILED_ATTEMPTS
                    )
                })
            }
            RetryCause::Killed(reason) => {
                t.kills += 1;
                (t.kills > max_kills).then(|| {
                    format!(
                        "task {} of vertex '{vertex_name}' was killed {} times, over the \
                         limit of {max_kills}; last cause: {reason}",
                        attempt.task, t.kills
                    )
                })
            }
        };
        match failure {
            Some(reason) => self.finish_dag(dag_id, DagStatus::Failed { reason }, out),
            None => {
                t.phase = Phase::Waiting;
                // Its input may have been lost meanwhile: then it waits.
                if task_ready(dag, vertex, task) {
                    self.make_pending(dag_id, vertex, task);
                }
            }
        }
    }

    pub(super) fn pending_key(&self, dag: &DagState, vertex: u32) -> PendingKey {
        let jumps = self.config.task_queue_scheme == TaskQueueScheme::Indexed
            && !dag.dag.vertices()[vertex as usize].is_root();
        PendingKey {
            class: if jumps { 0 } else { 1 },
            dag_priority: dag.dag_priority,
            vertex_priority: dag.vertex_priority[vertex as usize],
            dag: dag.id,
            vertex,
        }
    }

    /// Puts a ready (waiting) task into its queue.
    pub(super) fn make_pending(&mut self, dag_id: DagId, vertex: u32, task: u32) {
        let Some(dag) = self.dags.get(&dag_id) else {
            return;
        };
        let key = self.pending_key(dag, vertex);
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        dag.vertices[vertex as usize].tasks[task as usize].phase = Phase::Pending;
        match dag.queue {
            QueueRef::Shared(i) => self.shared[i].insert(key, task),
            QueueRef::Own => dag.own.insert(key, task),
        }
    }

    /// Moves a DAG to a final state: drops its pending tasks, asks for its
    /// running attempts to be killed, releases the outputs workers hold
    /// for it, and forgets it once nothing of it runs.
    pub(super) fn finish_dag(&mut self, dag_id: DagId, status: DagStatus, out: &mut TaskDecisions) {
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        let event = match &status {
            DagStatus::Running => return,
            DagStatus::Succeeded => DagEvent::Succeeded { dag: dag_id },
            DagStatus::Failed { reason } => DagEvent::Failed {
                dag: dag_id,
                reason: reason.clone(),
            },
            DagStatus::Killed { reason } => DagEvent::Killed {
                dag: dag_id,
                reason: reason.clone(),
            },
        };
        dag.status = status;
        // Drop pending tasks.
        let q = match dag.queue {
            QueueRef::Shared(i) => &mut self.shared[i],
            QueueRef::Own => &mut dag.own,
        };
        let keys: Vec<PendingKey> = q
            .pending
            .range(..)
            .filter(|(k, _)| k.dag == dag_id)
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            if let Some(set) = q.pending.remove(&k) {
                q.pending_tasks -= set.len() as u64;
            }
        }
        // Kill running attempts (they stay accounted until they end).
        let running: Vec<(AttemptId, WorkerId)> = self
            .attempts
            .range(
                AttemptId {
                    task: TaskId {
                        dag: dag_id,
                        vertex: 0,
                        task: 0,
                    },
                    attempt: 0,
                }..,
            )
            .take_while(|(a, _)| a.task.dag == dag_id)
            .map(|(a, r)| (*a, r.worker.clone()))
            .collect();
        for (attempt, worker) in running {
            out.kills.push(AttemptKill { attempt, worker });
        }
        out.dag_events.push(event);
        // Outputs of a finished DAG are no longer needed.
        let mut touched = Vec::new();
        for (id, w) in self.workers.iter_mut() {
            if w.holds.remove(&dag_id).is_some() || w.draining.is_some() {
                touched.push(id.clone());
            }
        }
        self.forget_if_done(dag_id);
        for w in touched {
            self.check_drained(&w, out);
        }
    }

    /// Drops a terminal DAG once none of its attempts runs.
    pub(super) fn forget_if_done(&mut self, dag_id: DagId) {
        if let Some(dag) = self.dags.get(&dag_id) {
            if dag.status.is_terminal() && dag.running_attempts == 0 {
                self.dags.remove(&dag_id);
            }
        }
    }

    pub(super) fn dag_active(&self, id: &DagId) -> bool {
        self.dags.get(id).is_some_and(|d| !d.status.is_terminal())
    }

    pub(super) fn check_drained(&mut self, worker: &WorkerId, out: &mut TaskDecisions) {
        let done = match self.workers.get(worker) {
            Some(w) if !w.drained_reported => match &w.draining {
                Some(waiting) => {
                    w.running.is_empty() && !waiting.iter().any(|d| self.dag_active(d))
                }
                None => false,
            },
            _ => false,
        };
        if done {
            if let Some(w) = self.workers.get_mut(worker) {
                w.drained_reported = true;
            }
            out.drained_workers.push(worker.clone());
        }
    }
}
