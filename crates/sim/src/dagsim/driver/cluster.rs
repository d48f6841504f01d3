//! The simulated cluster: container requests wait in a queue, ready nodes
//! with a free worker slot grant them in order, missing nodes are asked
//! for, and released containers free their slots.

use super::*;

impl Driver<'_> {
    pub(super) fn request(&mut self, group: &str, priority: i32) {
        let during_scale_in = self
            .session
            .group(group)
            .is_some_and(|g| g.autoscale_state == Some(ScaleState::ScaleIn));
        self.queue.push_back(priority);
        if let Ok(group) = self.group_index(group) {
            self.requests.push(RequestRecord {
                at_ms: self.now,
                group,
                during_scale_in,
            });
        }
    }

    /// Withdraws the group's newest ungranted request.
    pub(super) fn withdraw(&mut self, priority: i32) {
        if let Some(i) = self.queue.iter().rposition(|&p| p == priority) {
            self.queue.remove(i);
        }
    }

    /// The container goes back to the cluster: a worker exits, or a
    /// container not yet started is given up.
    pub(super) fn released(&mut self, container: &WorkerId) -> Result<(), DagSimError> {
        let node = if let Some(l) = self.launching.remove(container) {
            self.events.remove(&l.key);
            l.node
        } else if self.granting.as_ref().is_some_and(|(c, _)| c == container) {
            // Granted for a group that is gone.
            match self.granting.take() {
                Some((_, node)) => node,
                None => return Ok(()),
            }
        } else if self.workers.contains_key(container) {
            self.drop_attempts(container);
            let Some(w) = self.workers.remove(container) else {
                return Ok(());
            };
            self.counters.workers_exited += 1;
            self.worker_ms += self.now - w.up_ms;
            w.node
        } else {
            return Ok(());
        };
        self.free_slot(node);
        // The container completes; the session expects it.
        self.input(SessionInput::WorkerGone {
            worker: container.clone(),
            why: "container released".into(),
        })?;
        Ok(())
    }

    pub(super) fn free_slot(&mut self, n: usize) {
        let node = &mut self.nodes[n];
        node.workers = node.workers.saturating_sub(1);
        if node.workers == 0 && node.ready {
            self.node_emptied(n);
        }
    }

    /// Grants waiting requests on ready nodes with a free slot, first come
    /// first served, and asks for the nodes still missing.
    pub(super) fn cluster_step(&mut self) -> Result<(), DagSimError> {
        let per_node = self.spec.nodes.workers_per_node;
        let mut cursor = 0;
        while let Some(&priority) = self.queue.front() {
            while cursor < self.nodes.len() {
                let n = &self.nodes[cursor];
                if n.ready && n.gone_ms.is_none() && n.workers < per_node {
                    break;
                }
                cursor += 1;
            }
            if cursor == self.nodes.len() {
                break;
            }
            self.queue.pop_front();
            self.grant(priority, cursor)?;
        }
        let coming: u64 = self
            .nodes
            .iter()
            .filter(|n| !n.ready && n.gone_ms.is_none())
            .count() as u64
            * u64::from(per_node);
        let waiting = self.queue.len() as u64;
        if waiting > coming {
            let alive = self.nodes.iter().filter(|n| n.gone_ms.is_none()).count() as u64;
            let room = u64::from(self.spec.nodes.max_nodes).saturating_sub(alive);
            let more = (waiting - coming).div_ceil(u64::from(per_node)).min(room);
            for _ in 0..more {
                let n = self.add_node(self.now);
                let at = self.now + self.spec.nodes.provision_ms;
                self.push(at, Event::NodeReady(n));
            }
        }
        Ok(())
    }

    /// A container of the request of `priority` on node `n`.
    pub(super) fn grant(&mut self, priority: i32, n: usize) -> Result<(), DagSimError> {
        let node = &mut self.nodes[n];
        node.workers += 1;
        node.empty_since = None;
        let container = WorkerId::new(format!("worker-{:04}", self.next_worker));
        self.next_worker += 1;
        let input = SessionInput::ContainerGranted {
            container: container.clone(),
            host: node.name.clone(),
            priority,
        };
        self.granting = Some((container, n));
        self.input(input)?;
        match self.granting.take() {
            None => Ok(()),
            Some((c, _)) => Err(DagSimError::Driver(format!(
                "the session neither launched nor released container {c}"
            ))),
        }
    }
}
