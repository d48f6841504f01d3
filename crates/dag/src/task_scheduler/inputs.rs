//! The inputs: DAGs submitted and killed, workers added, removed and
//! draining, attempts finished, and the outputs lost with a worker.

use super::*;

impl TaskScheduler {
    pub(super) fn submit(
        &mut self,
        id: DagId,
        client: String,
        queue: Option<&str>,
        spec: &DagSpec,
    ) -> Result<(), CoreError> {
        if self.dags.contains_key(&id) {
            return Err(CoreError::Duplicate {
                what: "DAG",
                id: id.to_string(),
            });
        }
        let active = self
            .dags
            .values()
            .filter(|d| !d.status.is_terminal())
            .count() as u64;
        let limit = u64::from(self.config.limits.max_active_dags);
        if active >= limit {
            return Err(CoreError::LimitReached {
                limit: crate::config::keys::MAX_CONCURRENT_DAGS,
                value: limit,
                detail: format!("{active} DAGs are active; {id} is refused"),
            });
        }
        let dag = spec.validate(&self.config.limits.dag)?;
        let queue_ref = match self.config.queue_scheme {
            DagQueueScheme::Common => QueueRef::Shared(0),
            DagQueueScheme::Individual => QueueRef::Own,
            DagQueueScheme::Capacity => QueueRef::Shared(self.config.capacity_specs.resolve(queue)),
        };
        let seq = self.submitted;
        self.submitted += 1;
        let dag_priority = match self.config.dag_priority_scheme {
            DagPriorityScheme::Fifo => seq,
            DagPriorityScheme::Concurrent => 0,
        };
        let vertex_priority = vertex_priorities(&dag, self.config.vertex_priority_scheme);
        let vertices = dag
            .vertices()
            .iter()
            .enumerate()
            .map(|(v, vertex)| {
                let (mut a2a, mut o2o) = (0u32, 0u32);
                for (_, kind) in dag.producers(v as u32) {
                    match kind {
                        EdgeKind::AllToAll => a2a += 1,
                        EdgeKind::OneToOne => o2o += 1,
                    }
                }
                VertexState {
                    waiting_all_to_all: a2a,
                    succeeded: 0,
                    tasks: (0..vertex.tasks)
                        .map(|_| TaskState {
                            waiting_one_to_one: o2o,
                            phase: Phase::Waiting,
                            attempts: 0,
                            failures: 0,
                            kills: 0,
                            output_on: None,
                        })
                        .collect(),
                }
            })
            .collect();
        let own = TaskQueue::new(id.to_string(), 0);
        let roots = dag.roots();
        self.dags.insert(
            id,
            DagState {
                id,
                client,
                dag,
                queue: queue_ref,
                own,
                dag_priority,
                submit_seq: seq,
                vertex_priority,
                vertices,
                status: DagStatus::Running,
                completed_vertices: 0,
                succeeded_tasks: 0,
                running: Resource::ZERO,
                running_attempts: 0,
            },
        );
        for v in roots {
            let tasks = self.dags[&id].vertices[v as usize].tasks.len() as u32;
            for t in 0..tasks {
                self.make_pending(id, v, t);
            }
        }
        Ok(())
    }

    pub(super) fn kill_dag(
        &mut self,
        id: DagId,
        reason: String,
        out: &mut TaskDecisions,
    ) -> Result<(), CoreError> {
        let Some(dag) = self.dags.get(&id) else {
            return Err(CoreError::Unknown {
                what: "DAG",
                id: id.to_string(),
            });
        };
        if dag.status.is_terminal() {
            // Already over (its last attempts are still being stopped).
            return Ok(());
        }
        self.finish_dag(id, DagStatus::Killed { reason }, out);
        Ok(())
    }

    pub(super) fn add_worker(
        &mut self,
        worker: WorkerId,
        capacity: Resource,
    ) -> Result<(), CoreError> {
        if self.workers.contains_key(&worker) {
            return Err(CoreError::Duplicate {
                what: "worker",
                id: worker.to_string(),
            });
        }
        let limit = self.config.limits.max_workers;
        if self.workers.len() as u64 >= u64::from(limit) {
            return Err(CoreError::LimitReached {
                limit: "max_workers",
                value: u64::from(limit),
                detail: format!("worker {worker} is refused"),
            });
        }
        self.capacity = self.capacity.saturating_add(capacity);
        self.workers.insert(
            worker,
            WorkerState {
                capacity,
                used: Resource::ZERO,
                running: BTreeSet::new(),
                holds: BTreeMap::new(),
                draining: None,
                drained_reported: false,
            },
        );
        Ok(())
    }

    pub(super) fn remove_worker(
        &mut self,
        worker: &WorkerId,
        out: &mut TaskDecisions,
    ) -> Result<(), CoreError> {
        let Some(state) = self.workers.remove(worker) else {
            return Err(unknown_worker(worker));
        };
        self.capacity = self.capacity.saturating_sub(state.capacity);
        for &attempt in &state.running {
            let Some(record) = self.attempts.remove(&attempt) else {
                continue;
            };
            self.release_attempt_usage(attempt, &record, false);
            self.retry_or_drop(
                attempt,
                RetryCause::Killed(format!("worker {worker} was lost")),
                out,
            );
        }
        for dag_id in state.holds.keys() {
            self.recover_lost_outputs(*dag_id, worker, out);
        }
        Ok(())
    }

    /// The outputs of `dag_id` that lived on the lost `worker`: see "Lost
    /// outputs" in the module docs.
    pub(super) fn recover_lost_outputs(
        &mut self,
        dag_id: DagId,
        worker: &WorkerId,
        out: &mut TaskDecisions,
    ) {
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        if dag.status.is_terminal() {
            return;
        }
        let mut lost = Vec::new();
        for (v, vs) in dag.vertices.iter_mut().enumerate() {
            for (i, t) in vs.tasks.iter_mut().enumerate() {
                if t.output_on.as_ref() == Some(worker) {
                    t.output_on = None;
                    lost.push((v as u32, i as u32));
                }
            }
        }
        // The lost outputs still needed, and the earlier-lost outputs their
        // re-runs need, transitively.
        let mut stack: Vec<(u32, u32)> = lost
            .into_iter()
            .filter(|&(v, t)| output_needed(dag, v, t))
            .collect();
        let mut rerun: BTreeSet<(u32, u32)> = BTreeSet::new();
        while let Some((v, t)) = stack.pop() {
            if !rerun.insert((v, t)) {
                continue;
            }
            for (p, kind) in dag.dag.producers(v) {
                let ps = &dag.vertices[p as usize];
                let range = match kind {
                    EdgeKind::OneToOne => t..t + 1,
                    EdgeKind::AllToAll => 0..ps.tasks.len() as u32,
                };
                for pt in range {
                    let pts = &ps.tasks[pt as usize];
                    if pts.phase == Phase::Succeeded && pts.output_on.is_none() {
                        stack.push((p, pt));
                    }
                }
            }
        }
        for &(v, t) in &rerun {
            self.unsucceed(dag_id, v, t, out);
        }
        for (v, t) in rerun {
            let Some(dag) = self.dags.get(&dag_id) else {
                return;
            };
            if dag.vertices[v as usize].tasks[t as usize].phase == Phase::Waiting
                && task_ready(dag, v, t)
            {
                self.make_pending(dag_id, v, t);
            }
        }
    }

    /// Turns a succeeded task whose output is lost back into a waiting one,
    /// and takes readiness away from the consumers that counted on it.
    pub(super) fn unsucceed(
        &mut self,
        dag_id: DagId,
        vertex: u32,
        task: u32,
        out: &mut TaskDecisions,
    ) {
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        let vs = &mut dag.vertices[vertex as usize];
        if vs.tasks[task as usize].phase != Phase::Succeeded {
            return;
        }
        let was_complete = vs.succeeded as usize == vs.tasks.len();
        vs.tasks[task as usize].phase = Phase::Waiting;
        vs.tasks[task as usize].output_on = None;
        vs.succeeded -= 1;
        dag.succeeded_tasks -= 1;
        if was_complete {
            dag.completed_vertices -= 1;
        }
        let consumers: Vec<(u32, EdgeKind)> = dag.dag.consumers(vertex).collect();
        let mut affected: Vec<(u32, u32)> = Vec::new();
        for (c, kind) in consumers {
            let cs = &mut dag.vertices[c as usize];
            match kind {
                EdgeKind::OneToOne => {
                    cs.tasks[task as usize].waiting_one_to_one += 1;
                    affected.push((c, task));
                }
                EdgeKind::AllToAll if was_complete => {
                    cs.waiting_all_to_all += 1;
                    affected.extend((0..cs.tasks.len() as u32).map(|i| (c, i)));
                }
                EdgeKind::AllToAll => {}
            }
        }
        for (c, ct) in affected {
            let Some(dag) = self.dags.get(&dag_id) else {
                return;
            };
            match dag.vertices[c as usize].tasks[ct as usize].phase {
                Phase::Pending => {
                    let key = self.pending_key(dag, c);
                    let Some(dag) = self.dags.get_mut(&dag_id) else {
                        return;
                    };
                    let removed = match dag.queue {
                        QueueRef::Shared(i) => self.shared[i].remove(&key, ct),
                        QueueRef::Own => dag.own.remove(&key, ct),
                    };
                    if removed {
                        dag.vertices[c as usize].tasks[ct as usize].phase = Phase::Waiting;
                    }
                }
                Phase::Running { attempt } => {
                    let id = AttemptId {
                        task: TaskId {
                            dag: dag_id,
                            vertex: c,
                            task: ct,
                        },
                        attempt,
                    };
                    if let Some(record) = self.attempts.get_mut(&id) {
                        if !record.input_lost {
                            record.input_lost = true;
                            out.kills.push(AttemptKill {
                                attempt: id,
                                worker: record.worker.clone(),
                            });
                        }
                    }
                }
                Phase::Waiting | Phase::Succeeded => {}
            }
        }
    }

    pub(super) fn drain_worker(
        &mut self,
        worker: &WorkerId,
        out: &mut TaskDecisions,
    ) -> Result<(), CoreError> {
        let active: BTreeSet<DagId> = self
            .dags
            .values()
            .filter(|d| !d.status.is_terminal())
            .map(|d| d.id)
            .collect();
        let Some(state) = self.workers.get_mut(worker) else {
            return Err(unknown_worker(worker));
        };
        if state.draining.is_none() {
            state.draining = Some(active);
        }
        self.check_drained(worker, out);
        Ok(())
    }

    pub(super) fn attempt_finished(
        &mut self,
        attempt: AttemptId,
        outcome: AttemptOutcome,
        out: &mut TaskDecisions,
    ) -> Result<(), CoreError> {
        let Some(record) = self.attempts.remove(&attempt) else {
            return Err(CoreError::Unknown {
                what: "attempt",
                id: attempt.to_string(),
            });
        };
        self.release_attempt_usage(attempt, &record, true);
        match outcome {
            AttemptOutcome::Succeeded => self.attempt_succeeded(attempt, &record.worker, out),
            // Most likely it could not fetch the input that was lost: not
            // the task's fault.
            AttemptOutcome::Failed { reason } if record.input_lost => self.retry_or_drop(
                attempt,
                RetryCause::Killed(format!("its input was lost ({reason})")),
                out,
            ),
            AttemptOutcome::Failed { reason } => {
                self.retry_or_drop(attempt, RetryCause::Failed(reason), out)
            }
            AttemptOutcome::Killed { reason } => {
                self.retry_or_drop(attempt, RetryCause::Killed(reason), out)
            }
        }
        self.check_drained(&record.worker, out);
        Ok(())
    }
}
