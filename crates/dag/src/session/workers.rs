//! Workers: containers granted, workers launched, registering, draining,
//! stopping and lost; failed starts; the end of the session.

use super::{DrainReason, Launching, Notice, Session, SessionEffect, WorkerEntry};
use crate::container_scheduler::Input as CsInput;
use crate::task_scheduler::Input as TsInput;
use crate::WorkerId;

impl Session {
    /// A granted container, matched to the request of `priority`; whether
    /// to settle.
    pub(super) fn container_granted(
        &mut self,
        now: u64,
        container: WorkerId,
        host: String,
        priority: i32,
    ) -> bool {
        let group = self.by_priority.get(&priority).cloned();
        let Some((group, g)) = group.and_then(|n| self.groups.get_mut(&n).map(|g| (n, g))) else {
            self.notice(Notice::ContainerForGoneGroup {
                container: container.clone(),
                priority,
            });
            self.retired.insert(container.clone());
            self.effects
                .push(SessionEffect::ReleaseContainer { container });
            return false;
        };
        if self.stopping {
            self.retired.insert(container.clone());
            self.effects
                .push(SessionEffect::ReleaseContainer { container });
            return false;
        }
        let via_cs = if g.outstanding_cs > 0 {
            g.outstanding_cs -= 1;
            true
        } else {
            g.outstanding_auto = g.outstanding_auto.saturating_sub(1);
            false
        };
        let resource = g.spec.worker_resource;
        self.notice(Notice::StartingWorker {
            container: container.clone(),
            host: host.clone(),
            group: group.clone(),
        });
        self.launching.insert(
            container.clone(),
            Launching {
                group: group.clone(),
                host: host.clone(),
                resource,
                via_cs,
            },
        );
        self.effects.push(SessionEffect::LaunchWorker {
            container,
            group: group.clone(),
            host,
            resource,
        });
        self.sync_autoscaled_starts(now, &group);
        true
    }

    /// The worker could not be started in its container.
    pub(super) fn launch_failed(&mut self, now: u64, container: &WorkerId, error: &str) {
        self.notice(Notice::LaunchFailed {
            container: container.clone(),
            error: error.to_string(),
        });
        if let Some(l) = self.launching.remove(container) {
            self.retired.insert(container.clone());
            self.effects.push(SessionEffect::ReleaseContainer {
                container: container.clone(),
            });
            self.start_failed(now, l, error);
        }
    }

    /// Counts a failed worker start; past the limit, the group's active
    /// DAGs are killed (they cannot run) and the group asks for no more
    /// workers until a new DAG arrives.
    fn start_failed(&mut self, now: u64, l: Launching, error: &str) {
        let limit = self.config.max_start_failures;
        let blocked_now = match self.groups.get_mut(&l.group) {
            Some(g) => {
                g.start_failures += 1;
                g.start_failures == limit
            }
            None => false,
        };
        if l.via_cs {
            // The container scheduler asks again at once (deferred while
            // the group is blocked).
            self.cs_input(
                now,
                CsInput::WorkerStartFailed {
                    group: l.group.clone(),
                },
            );
        }
        if !blocked_now {
            return;
        }
        let Some(g) = self.groups.get(&l.group) else {
            return;
        };
        let reason = format!(
            "workers of ContainerGroup '{}' failed to start {limit} times in a row ({} = {limit}); last: {error}",
            l.group,
            super::keys::MAX_START_FAILURES
        );
        let active = g.ts.active_dags();
        self.notice(Notice::StartsBlocked {
            group: l.group.clone(),
            reason: reason.clone(),
        });
        for id in active {
            self.ts_input(
                now,
                &l.group,
                TsInput::KillDag {
                    id,
                    reason: reason.clone(),
                },
            );
        }
    }

    /// A worker connected and registered: whether to settle, or why it is
    /// refused (the connection should be closed).
    pub(super) fn worker_registered(
        &mut self,
        now: u64,
        worker: &WorkerId,
        address: String,
    ) -> Result<bool, String> {
        if self.workers.contains_key(worker) {
            return Err(format!("worker {worker} is already registered"));
        }
        let Some(l) = self.launching.remove(worker) else {
            return Err(format!("no worker {worker} was started by this session"));
        };
        let Some(g) = self.groups.get(&l.group) else {
            self.retire(worker, "its ContainerGroup is gone");
            return Ok(false);
        };
        let capacity = g.spec.worker_resource;
        let on_released_node = !l.via_cs
            && g.autoscaler
                .as_ref()
                .is_some_and(|a| a.is_releasing(&l.host));
        if let Some(g) = self.groups.get_mut(&l.group) {
            g.start_failures = 0;
        }
        self.notice(Notice::WorkerRegistered {
            worker: worker.clone(),
            host: l.host.clone(),
            address: address.clone(),
            group: l.group.clone(),
        });
        self.counters.workers_started += 1;
        self.workers.insert(
            worker.clone(),
            WorkerEntry {
                host: l.host.clone(),
                resource: l.resource,
                address,
                group: (!on_released_node).then(|| l.group.clone()),
                drain: None,
                last_idle: None,
            },
        );
        if on_released_node {
            // Asked for before the scale-in and granted on a node it is
            // emptying: it holds no data yet, so it goes at once.
            self.notice(Notice::WorkerOnReleasedNode {
                worker: worker.clone(),
                host: l.host,
                group: l.group,
            });
            self.counters.scale_in_released += 1;
            self.retire(worker, "its node was released by scale-in");
            return Ok(true);
        }
        self.ts_input(
            now,
            &l.group,
            TsInput::WorkerAdded {
                worker: worker.clone(),
                capacity,
            },
        );
        self.cs_input(
            now,
            CsInput::WorkerStarted {
                worker: worker.clone(),
                group: l.group.clone(),
            },
        );
        let group = self.workers.get(worker).and_then(|w| w.group.clone());
        if let Some(group) = group {
            self.offer_worker(now, &group, worker);
        }
        Ok(true)
    }

    /// A worker's connection closed, or its container completed; whether
    /// to settle.
    pub(super) fn worker_gone(&mut self, now: u64, worker: &WorkerId, why: &str) -> bool {
        if let Some(l) = self.launching.remove(worker) {
            self.notice(Notice::WorkerEndedBeforeRegistering {
                worker: worker.clone(),
                why: why.to_string(),
            });
            self.start_failed(now, l, why);
            return true;
        }
        if self.retired.remove(worker) {
            // Expected: this session stopped or released it.
            self.workers.remove(worker);
            return false;
        }
        let Some(entry) = self.workers.remove(worker) else {
            return false;
        };
        self.notice(Notice::WorkerLost {
            worker: worker.clone(),
            why: why.to_string(),
        });
        self.counters.workers_lost += 1;
        if let Some(g) = entry.group {
            self.remove_from_group(now, &g, worker);
        }
        self.cs_input(
            now,
            CsInput::WorkerExited {
                worker: worker.clone(),
            },
        );
        // The process may still run (a broken connection): make sure the
        // container goes.
        self.retired.insert(worker.clone());
        self.effects.push(SessionEffect::ReleaseContainer {
            container: worker.clone(),
        });
        true
    }

    /// The session ends: every worker is told to stop and every container
    /// released.
    pub(super) fn stop(&mut self, reason: &str) {
        self.stopping = true;
        let workers: Vec<WorkerId> = self.workers.keys().cloned().collect();
        for w in workers {
            self.retire(&w, reason);
        }
        let launching: Vec<WorkerId> = self.launching.keys().cloned().collect();
        for c in launching {
            self.launching.remove(&c);
            self.retired.insert(c.clone());
            self.effects
                .push(SessionEffect::ReleaseContainer { container: c });
        }
        for g in self.groups.values_mut() {
            for _ in 0..g.outstanding_cs + g.outstanding_auto {
                self.effects.push(g.cancel());
            }
            g.outstanding_cs = 0;
            g.outstanding_auto = 0;
        }
    }

    /// Tells the worker to exit and releases its container. The caller has
    /// taken it out of the cores.
    pub(super) fn retire(&mut self, worker: &WorkerId, reason: &str) {
        self.counters.workers_stopped += 1;
        self.effects.push(SessionEffect::StopWorker {
            worker: worker.clone(),
            reason: reason.to_string(),
        });
        self.effects.push(SessionEffect::ReleaseContainer {
            container: worker.clone(),
        });
        self.retired.insert(worker.clone());
        self.workers.remove(worker);
    }

    /// A draining worker has finished what it waited for: it leaves its
    /// group, for recycling or with its node.
    pub(super) fn drained(&mut self, now: u64, group: &str, worker: &WorkerId) {
        let Some(reason) = self.workers.get(worker).and_then(|w| w.drain) else {
            return;
        };
        self.notice(Notice::WorkerDrained {
            worker: worker.clone(),
            group: group.to_string(),
            reason,
        });
        if let Some(e) = self.workers.get_mut(worker) {
            e.group = None;
            e.drain = None;
            e.last_idle = None;
        }
        self.remove_from_group(now, group, worker);
        match reason {
            DrainReason::Recycle => {
                self.cs_input(
                    now,
                    CsInput::WorkerStopped {
                        worker: worker.clone(),
                    },
                );
            }
            DrainReason::ScaleIn => {
                self.counters.scale_in_released += 1;
                self.cs_input(
                    now,
                    CsInput::WorkerExited {
                        worker: worker.clone(),
                    },
                );
                self.retire(worker, "its node was released by scale-in");
            }
        }
    }
}
