//! What the driver measures and checks: peaks, samples at every tick, its
//! bookkeeping against the session's, and the outcome at the end.

use super::*;

impl Driver<'_> {
    pub(super) fn alive_nodes(&self) -> u32 {
        self.nodes.iter().filter(|n| n.gone_ms.is_none()).count() as u32
    }

    pub(super) fn note_peaks(&mut self) {
        self.peak_workers = self.peak_workers.max(self.workers.len() as u32);
        self.peak_nodes = self.peak_nodes.max(self.alive_nodes());
    }

    pub(super) fn sample(&mut self) {
        let groups = self.spec.groups;
        let mut workers = vec![0u32; groups.len()];
        let mut reserve = 0;
        for w in self.session.workers() {
            match w
                .group
                .and_then(|g| groups.iter().position(|p| p.name == g))
            {
                Some(g) => workers[g] += 1,
                None => reserve += 1,
            }
        }
        let (used_mb, capacity_mb) = self.session.groups().iter().fold((0, 0), |(u, c), g| {
            (u + g.task_used_mb, c + g.task_capacity_mb)
        });
        let status: Vec<_> = groups.iter().map(|p| self.session.group(&p.name)).collect();
        self.samples.push(Sample {
            at_ms: self.now,
            nodes: self.alive_nodes(),
            workers,
            reserve,
            used_mb,
            capacity_mb,
            states: status
                .iter()
                .map(|g| g.as_ref().and_then(|g| g.autoscale_state))
                .collect(),
            usage_bp: status
                .iter()
                .map(|g| g.as_ref().and_then(|g| g.usage_bp))
                .collect(),
        });
    }

    /// The driver's bookkeeping agrees with the session's and the
    /// cluster's (between instants, when every effect has been carried
    /// out); the session checks its own against the cores.
    pub(super) fn check_own_invariants(&self) -> Result<(), DagSimError> {
        if !self.spec.check_invariants {
            return Ok(());
        }
        let fail = |m: String| Err(DagSimError::Driver(m));
        self.session
            .check_invariants()
            .map_err(|e| DagSimError::Invariant(spindle_dag::InvariantViolation(e)))?;
        let per_node = self.spec.nodes.workers_per_node;
        let mut on_node = vec![0u32; self.nodes.len()];
        for w in self.workers.values() {
            on_node[w.node] += 1;
        }
        for l in self.launching.values() {
            on_node[l.node] += 1;
        }
        for (n, node) in self.nodes.iter().enumerate() {
            if node.workers != on_node[n] || node.workers > per_node {
                return fail(format!(
                    "{}: {} workers counted, {} placed, {per_node} slots",
                    node.name, node.workers, on_node[n]
                ));
            }
            if node.gone_ms.is_some() && node.workers > 0 {
                return fail(format!("{} was reclaimed with workers on it", node.name));
            }
        }
        let groups = self.session.groups();
        for p in self.queue.iter().copied() {
            if !groups.iter().any(|g| g.priority == p) {
                return fail(format!("a request of priority {p} waits for no group"));
            }
        }
        for g in &groups {
            let queued = self.queue.iter().filter(|&&q| q == g.priority).count() as u32;
            if queued != g.requests_outstanding {
                return fail(format!(
                    "group {}: {queued} requests wait, the session counts {}",
                    g.name, g.requests_outstanding
                ));
            }
        }
        let registered: Vec<WorkerId> = self
            .session
            .workers()
            .into_iter()
            .map(|w| w.worker)
            .collect();
        let mine: Vec<WorkerId> = self.workers.keys().cloned().collect();
        if registered != mine {
            return fail(format!(
                "the cluster runs workers {mine:?}, the session has {registered:?}"
            ));
        }
        for (id, w) in &self.workers {
            let status = self.session.worker(id);
            if status.as_ref().map(|s| s.running_attempts) != Some(w.running) {
                return fail(format!(
                    "worker {id}: the driver runs {} attempts, the session {:?}",
                    w.running,
                    status.map(|s| s.running_attempts)
                ));
            }
        }
        Ok(())
    }

    /// The clients that are not done, for error messages.
    pub(super) fn stuck(&self) -> String {
        let stuck: Vec<String> = self
            .spec
            .clients
            .iter()
            .zip(&self.clients)
            .filter(|(_, s)| !s.done)
            .map(|(p, s)| format!("{} ({} DAGs done)", p.name, s.runs.len()))
            .collect();
        let groups: Vec<String> = self
            .session
            .groups()
            .into_iter()
            .map(|g| g.status_line)
            .collect();
        format!(
            "unfinished clients: {}; {}",
            stuck.join(", "),
            groups.join("; ")
        )
    }

    pub(super) fn finish(mut self) -> Result<SimOutcome, DagSimError> {
        if self.unfinished > 0 {
            return Err(DagSimError::Driver(format!(
                "no event left at {} ms: {}",
                self.now,
                self.stuck()
            )));
        }
        let end = self.end_ms.unwrap_or(self.now);
        self.now = end;
        let node_ms = self
            .nodes
            .iter()
            .map(|n| n.gone_ms.unwrap_or(end).saturating_sub(n.asked_ms))
            .sum();
        let worker_ms = self.worker_ms
            + self
                .workers
                .values()
                .map(|w| end.saturating_sub(w.up_ms))
                .sum::<u64>();
        let c = self.session.counters();
        let counters = Counters {
            scale_ins: c.scale_ins as u32,
            containers_requested: c.containers_requested as u32,
            requests_cancelled: c.requests_cancelled as u32,
            released_by_scale_in: c.scale_in_released as u32,
            migrations: c.workers_recycled as u32,
            ..self.counters
        };
        Ok(SimOutcome {
            runs: self.clients.into_iter().map(|c| c.runs).collect(),
            end_ms: end,
            last_dag_ms: self.last_dag_ms,
            foreground_done_ms: self.foreground_done_ms.unwrap_or(self.last_dag_ms),
            counters,
            peak_workers: self.peak_workers,
            peak_nodes: self.peak_nodes,
            final_workers: self.workers.len() as u32,
            final_nodes: self.nodes.iter().filter(|n| n.gone_ms.is_none()).count() as u32,
            node_ms,
            worker_ms,
            busy_ms: self.busy_ms,
            scale_events: self.scale_events,
            state_changes: self.state_changes,
            moves: self.moves,
            requests: self.requests,
            samples: self.samples,
            busiest_status_line: self.busiest.map(|(_, l)| l),
            steps: self.session.core_steps(),
        })
    }
}
