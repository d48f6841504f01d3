//! The consistency checks tests and simulations run after every input.

use super::*;

impl TaskScheduler {
    /// Checks every internal consistency rule; an error is a bug here.
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        let fail = |msg: String| Err(InvariantViolation(msg));

        // Workers: usage is the sum of their attempts, within capacity.
        let mut capacity = Resource::ZERO;
        for (id, w) in &self.workers {
            capacity = capacity.saturating_add(w.capacity);
            let mut used = Resource::ZERO;
            for a in &w.running {
                match self.attempts.get(a) {
                    Some(r) if &r.worker == id => used = used.saturating_add(r.resource),
                    _ => return fail(format!("worker {id} lists attempt {a} it does not run")),
                }
            }
            if used != w.used {
                return fail(format!(
                    "worker {id} uses {} but its attempts sum to {used}",
                    w.used
                ));
            }
            if !w.used.fits_in(&w.capacity) {
                return fail(format!(
                    "worker {id} uses {} over its capacity {}",
                    w.used, w.capacity
                ));
            }
            for (d, n) in &w.holds {
                if !self.dag_active(d) || *n == 0 {
                    return fail(format!("worker {id} holds output of finished DAG {d}"));
                }
            }
            if w.drained_reported {
                let waiting = w.draining.as_ref();
                if !w.running.is_empty()
                    || waiting.is_none_or(|set| set.iter().any(|d| self.dag_active(d)))
                {
                    return fail(format!("worker {id} reported drained while still busy"));
                }
            }
        }
        if capacity != self.capacity {
            return fail(format!(
                "group capacity {} is not the workers' sum {capacity}",
                self.capacity
            ));
        }

        // Attempts: each on a live worker that lists it, owned by a known DAG.
        let mut per_dag: BTreeMap<DagId, (u64, Resource)> = BTreeMap::new();
        let mut per_shared = vec![Resource::ZERO; self.shared.len()];
        for (a, r) in &self.attempts {
            match self.workers.get(&r.worker) {
                Some(w) if w.running.contains(a) => {}
                _ => {
                    return fail(format!(
                        "attempt {a} is on worker {} that does not list it",
                        r.worker
                    ))
                }
            }
            let Some(dag) = self.dags.get(&a.task.dag) else {
                return fail(format!("attempt {a} belongs to an unknown DAG"));
            };
            if !dag.status.is_terminal() {
                let t = &dag.vertices[a.task.vertex as usize].tasks[a.task.task as usize];
                if t.phase != (Phase::Running { attempt: a.attempt }) {
                    return fail(format!("attempt {a} runs but its task is {:?}", t.phase));
                }
            }
            let e = per_dag.entry(a.task.dag).or_insert((0, Resource::ZERO));
            e.0 += 1;
            e.1 = e.1.saturating_add(r.resource);
            if let QueueRef::Shared(i) = dag.queue {
                per_shared[i] = per_shared[i].saturating_add(r.resource);
            }
        }
        for (i, q) in self.shared.iter().enumerate() {
            if q.running != per_shared[i] {
                return fail(format!(
                    "queue {} runs {} but its attempts sum to {}",
                    q.name, q.running, per_shared[i]
                ));
            }
        }

        // Queues: counts match, every entry is a pending task of a running DAG.
        let mut pending_in_queues: BTreeMap<DagId, u64> = BTreeMap::new();
        let queues = self
            .shared
            .iter()
            .map(|q| (q, None))
            .chain(self.dags.values().map(|d| (&d.own, Some(d.id))));
        for (q, owner) in queues {
            let mut count = 0u64;
            for (key, tasks) in &q.pending {
                if tasks.is_empty() {
                    return fail(format!("queue {} keeps an empty entry", q.name));
                }
                count += tasks.len() as u64;
                let Some(dag) = self.dags.get(&key.dag) else {
                    return fail(format!(
                        "queue {} holds tasks of unknown DAG {}",
                        q.name, key.dag
                    ));
                };
                if owner.is_some_and(|o| o != key.dag) {
                    return fail(format!("queue {} holds tasks of DAG {}", q.name, key.dag));
                }
                if dag.status.is_terminal() {
                    return fail(format!(
                        "queue {} holds tasks of finished DAG {}",
                        q.name, key.dag
                    ));
                }
                if self.pending_key(dag, key.vertex) != *key {
                    return fail(format!("queue {} has a stale key {key:?}", q.name));
                }
                for &t in tasks {
                    let phase = dag.vertices[key.vertex as usize].tasks[t as usize].phase;
                    if phase != Phase::Pending {
                        return fail(format!("queued task {t} of {} is {phase:?}", key.dag));
                    }
                }
                *pending_in_queues.entry(key.dag).or_insert(0) += tasks.len() as u64;
            }
            if count != q.pending_tasks {
                return fail(format!(
                    "queue {} counts {} pending tasks but holds {count}",
                    q.name, q.pending_tasks
                ));
            }
        }

        // DAGs: per-task state agrees with counters and with readiness.
        for (id, d) in &self.dags {
            let (attempts, running) = per_dag.get(id).copied().unwrap_or((0, Resource::ZERO));
            if attempts != d.running_attempts || running != d.running {
                return fail(format!(
                    "DAG {id} counts {} attempts using {} but {attempts} run using {running}",
                    d.running_attempts, d.running
                ));
            }
            if d.status.is_terminal() {
                if d.running_attempts == 0 {
                    return fail(format!("finished DAG {id} is still kept"));
                }
                continue;
            }
            if d.queue == QueueRef::Own && self.config.queue_scheme != DagQueueScheme::Individual {
                return fail(format!(
                    "DAG {id} has its own queue outside the individual scheme"
                ));
            }
            let mut pending = 0u64;
            let mut succeeded_total = 0u64;
            let mut completed = 0u32;
            for (v, vs) in d.vertices.iter().enumerate() {
                let v = v as u32;
                let mut a2a_waiting = 0;
                for (p, kind) in d.dag.producers(v) {
                    let ps = &d.vertices[p as usize];
                    if kind == EdgeKind::AllToAll && ps.succeeded as usize != ps.tasks.len() {
                        a2a_waiting += 1;
                    }
                }
                if a2a_waiting != vs.waiting_all_to_all {
                    return fail(format!(
                        "DAG {id} vertex {v} waits for {} all-to-all producers, not {a2a_waiting}",
                        vs.waiting_all_to_all
                    ));
                }
                let mut succeeded = 0u32;
                for (i, t) in vs.tasks.iter().enumerate() {
                    let mut o2o_waiting = 0;
                    for (p, kind) in d.dag.producers(v) {
                        if kind == EdgeKind::OneToOne
                            && d.vertices[p as usize].tasks[i].phase != Phase::Succeeded
                        {
                            o2o_waiting += 1;
                        }
                    }
                    if o2o_waiting != t.waiting_one_to_one {
                        return fail(format!(
                            "task {i} of DAG {id} vertex {v} miscounts its one-to-one inputs"
                        ));
                    }
                    let ready = o2o_waiting == 0 && a2a_waiting == 0;
                    match t.phase {
                        Phase::Waiting if ready => {
                            return fail(format!(
                                "task {i} of DAG {id} vertex {v} is ready but not queued"
                            ))
                        }
                        Phase::Waiting => {}
                        Phase::Pending if !ready => {
                            return fail(format!(
                                "task {i} of DAG {id} vertex {v} is queued before its input is available"
                            ))
                        }
                        Phase::Pending => pending += 1,
                        Phase::Running { attempt } => {
                            let a = AttemptId {
                                task: TaskId {
                                    dag: *id,
                                    vertex: v,
                                    task: i as u32,
                                },
                                attempt,
                            };
                            match self.attempts.get(&a) {
                                None => return fail(format!("task {i} of DAG {id} vertex {v} runs attempt {attempt} that does not exist")),
                                // Input lost under a running attempt: it must have been asked to stop.
                                Some(r) if !ready && !r.input_lost => return fail(format!(
                                    "task {i} of DAG {id} vertex {v} runs without its input and was not stopped"
                                )),
                                Some(_) => {}
                            }
                        }
                        // A task that already read its input keeps its success when that
                        // input is lost later.
                        Phase::Succeeded => succeeded += 1,
                    }
                    // Nothing waits for an output that is lost and not being made again.
                    if t.phase != Phase::Succeeded {
                        for (p, kind) in d.dag.producers(v) {
                            let ps = &d.vertices[p as usize];
                            let range = match kind {
                                EdgeKind::OneToOne => i..i + 1,
                                EdgeKind::AllToAll => 0..ps.tasks.len(),
                            };
                            if ps.tasks[range]
                                .iter()
                                .any(|pt| pt.phase == Phase::Succeeded && pt.output_on.is_none())
                            {
                                return fail(format!(
                                    "task {i} of DAG {id} vertex {v} needs a lost output of vertex {p} that is not made again"
                                ));
                            }
                        }
                    }
                    if t.failures >= self.config.max_task_attempts {
                        return fail(format!(
                            "task {i} of DAG {id} vertex {v} failed too often for a running DAG"
                        ));
                    }
                }
                if succeeded != vs.succeeded {
                    return fail(format!(
                        "DAG {id} vertex {v} counts {} successes, not {succeeded}",
                        vs.succeeded
                    ));
                }
                if succeeded as usize == vs.tasks.len() {
                    completed += 1;
                }
                succeeded_total += u64::from(succeeded);
            }
            if completed != d.completed_vertices || completed as usize == d.vertices.len() {
                return fail(format!(
                    "DAG {id} completed-vertex count is wrong or it should have succeeded"
                ));
            }
            if succeeded_total != d.succeeded_tasks {
                return fail(format!("DAG {id} succeeded-task count is wrong"));
            }
            if pending != pending_in_queues.get(id).copied().unwrap_or(0) {
                return fail(format!(
                    "DAG {id} has {pending} pending tasks but its queue holds a different number"
                ));
            }
            // Outputs held by workers match the successful attempts.
            let mut made_on: BTreeMap<&WorkerId, u64> = BTreeMap::new();
            for t in d.vertices.iter().flat_map(|v| v.tasks.iter()) {
                if let (Phase::Succeeded, Some(w)) = (t.phase, t.output_on.as_ref()) {
                    *made_on.entry(w).or_insert(0) += 1;
                }
            }
            for (wid, w) in &self.workers {
                let held = w.holds.get(id).copied().unwrap_or(0);
                let made = made_on.get(wid).copied().unwrap_or(0);
                if held != made {
                    return fail(format!(
                        "worker {wid} holds {held} outputs of DAG {id}, not {made}"
                    ));
                }
            }
        }
        Ok(())
    }
}
