//! ContainerGroups: registering, owning and releasing them, and carrying
//! out the ContainerScheduler's actions on their workers.

use std::collections::BTreeMap;

use super::{DrainReason, Group, Notice, Session, SessionEffect};
use crate::autoscaler::Autoscaler;
use crate::container_scheduler::{ContainerAction, GroupSpec, Input as CsInput};
use crate::task_scheduler::{Input as TsInput, TaskScheduler};
use crate::WorkerId;

impl Session {
    /// Registers `client` as an owner of the group, creating the group
    /// (its TaskScheduler, autoscaler and request priority) if it is new.
    pub(super) fn ensure_group(
        &mut self,
        now: u64,
        client: &str,
        spec: GroupSpec,
    ) -> Result<(), String> {
        let result = self.cs.handle(
            now,
            CsInput::RegisterGroup {
                client: client.to_string(),
                spec: spec.clone(),
            },
        );
        self.core_steps += 1;
        let actions = result.map_err(|e| e.to_string())?;
        if !self.groups.contains_key(&spec.name) {
            let mut ts_config = self.config.cores.task.clone();
            ts_config.group_name = spec.name.clone();
            let ts = TaskScheduler::new(ts_config).map_err(|e| e.to_string())?;
            let autoscaler = if self.config.cores.autoscaler.enabled {
                let mut a = self.config.cores.autoscaler.clone();
                // With autoscaling on, workers come only from the autoscaler
                // (see docs/dag.md), so an empty group must ask for at least one.
                a.scale_out_initial_workers = a.scale_out_initial_workers.max(1);
                Some(Autoscaler::new(a).map_err(|e| e.to_string())?)
            } else {
                None
            };
            let priority = self.next_priority;
            self.next_priority += 1;
            self.by_priority.insert(priority, spec.name.clone());
            self.groups.insert(
                spec.name.clone(),
                Group {
                    spec,
                    priority,
                    ts,
                    autoscaler,
                    outstanding_cs: 0,
                    outstanding_auto: 0,
                    auto_unsent: 0,
                    owners: BTreeMap::new(),
                    usage_bp: None,
                    start_failures: 0,
                    deferred_starts: 0,
                    capped_by: None,
                },
            );
        }
        self.apply_cs(now, actions.actions);
        Ok(())
    }

    /// Gives up `client`'s ownership of a (non-default) group once it has
    /// no active DAG there; the group leaves with its last owner.
    pub(super) fn maybe_release_group(&mut self, now: u64, client: &str, group: &str) {
        if group == self.config.default_group {
            return;
        }
        let Some(g) = self.groups.get(group) else {
            return;
        };
        if g.owners.contains_key(client) {
            return;
        }
        let is_owner = self
            .cs
            .group_report(group)
            .is_some_and(|r| r.owners.iter().any(|o| o == client));
        if !is_owner {
            return;
        }
        self.cs_input(
            now,
            CsInput::ReleaseGroup {
                client: client.to_string(),
                group: group.to_string(),
            },
        );
        if self.cs.group_report(group).is_some() {
            return;
        }
        // The group is gone: its remaining workers went to the reserve (or
        // were terminated) and leave its task scheduler.
        self.notice(Notice::GroupReleased {
            group: group.to_string(),
        });
        let members: Vec<WorkerId> = self
            .workers
            .iter()
            .filter(|(_, w)| w.group.as_deref() == Some(group))
            .map(|(id, _)| id.clone())
            .collect();
        for w in members {
            if let Some(e) = self.workers.get_mut(&w) {
                e.group = None;
            }
            self.remove_from_group(now, group, &w);
        }
        if let Some(g) = self.groups.remove(group) {
            self.by_priority.remove(&g.priority);
            for _ in 0..g.outstanding_cs + g.outstanding_auto {
                self.effects.push(g.cancel());
            }
        }
    }

    /// Carries out the ContainerScheduler's actions.
    pub(super) fn apply_cs(&mut self, now: u64, actions: Vec<ContainerAction>) {
        for action in actions {
            match action {
                ContainerAction::StartWorker { group } => self.start_worker(&group),
                ContainerAction::CancelWorkerStart { group } => self.cancel_start(&group),
                ContainerAction::StopWorkerGracefully { worker, group } => {
                    let Some(e) = self.workers.get_mut(&worker) else {
                        continue;
                    };
                    if e.drain.is_none() {
                        e.drain = Some(DrainReason::Recycle);
                    }
                    self.notice(Notice::WorkerDraining {
                        worker: worker.clone(),
                        group: group.clone(),
                        reason: DrainReason::Recycle,
                    });
                    self.ts_input(now, &group, TsInput::DrainWorker { worker });
                }
                ContainerAction::ReassignWorker { worker, from, to } => {
                    self.reassign(now, worker, from, to)
                }
                ContainerAction::TerminateWorker { worker, reason } => {
                    self.notice(Notice::TerminatingWorker {
                        worker: worker.clone(),
                        reason: reason.clone(),
                    });
                    let group = self.workers.get(&worker).and_then(|w| w.group.clone());
                    if let Some(g) = group {
                        if let Some(e) = self.workers.get_mut(&worker) {
                            e.group = None;
                        }
                        self.remove_from_group(now, &g, &worker);
                    }
                    if self.workers.contains_key(&worker) {
                        self.retire(&worker, &reason);
                    }
                }
            }
        }
    }

    /// `StartWorker`: a container request, unless the group's autoscaler
    /// made it already or its workers cannot start.
    fn start_worker(&mut self, group: &str) {
        if self.stopping {
            return;
        }
        let limit = self.config.max_start_failures;
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        if g.autoscaler.is_some() {
            // The start stands for one of the autoscaler's outstanding
            // requests (the group's demand): it is asked for already.
            return;
        }
        if !g.starts_blocked(limit) {
            g.outstanding_cs += 1;
            self.counters.containers_requested += 1;
            self.effects.push(g.request());
        } else {
            // Workers of this group cannot start. Reporting it as failed
            // would make the container scheduler ask again at once; hold it
            // instead.
            g.deferred_starts += 1;
        }
    }

    /// `CancelWorkerStart`: withdraws a held or outstanding request.
    fn cancel_start(&mut self, group: &str) {
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        if g.autoscaler.is_some() {
            // The recycled worker has taken the place of an autoscaler
            // request already (ReassignWorker).
        } else if g.deferred_starts > 0 {
            g.deferred_starts -= 1;
        } else if g.outstanding_cs > 0 {
            g.outstanding_cs -= 1;
            self.counters.requests_cancelled += 1;
            self.effects.push(g.cancel());
        }
    }

    /// `ReassignWorker`: the worker leaves its group (or the reserve) for
    /// `to`; into an autoscaled group it takes the place of a request.
    fn reassign(&mut self, now: u64, worker: WorkerId, from: Option<String>, to: String) {
        let Some(capacity) = self.groups.get(&to).map(|g| g.spec.worker_resource) else {
            return;
        };
        let current = self.workers.get(&worker).and_then(|w| w.group.clone());
        let old = current.or(from);
        if let Some(old) = &old {
            if self
                .groups
                .get(old)
                .is_some_and(|g| g.ts.worker_report(&worker).is_some())
            {
                self.remove_from_group(now, old, &worker);
            }
        }
        let Some(e) = self.workers.get_mut(&worker) else {
            return;
        };
        e.group = Some(to.clone());
        e.drain = None;
        e.last_idle = None;
        self.counters.workers_recycled += 1;
        self.effects.push(SessionEffect::MoveWorker {
            worker: worker.clone(),
            from: old,
            to: to.clone(),
        });
        if let Some(g) = self.groups.get_mut(&to) {
            if g.autoscaler.is_some() && g.outstanding_auto > 0 {
                // The autoscaler asked for a worker; this one takes the
                // place of its request.
                g.outstanding_auto -= 1;
                if g.auto_unsent > 0 {
                    g.auto_unsent -= 1;
                } else {
                    self.counters.requests_cancelled += 1;
                    let cancel = g.cancel();
                    self.notice(Notice::RecycledInPlaceOfRequest {
                        worker: worker.clone(),
                        group: to.clone(),
                    });
                    self.effects.push(cancel);
                }
            }
        }
        self.ts_input(
            now,
            &to,
            TsInput::WorkerAdded {
                worker: worker.clone(),
                capacity,
            },
        );
        self.offer_worker(now, &to, &worker);
    }
}
