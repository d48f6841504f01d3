//! Autoscaling: each group's autoscaler ticks with a snapshot of its group
//! and the totals of all workers; its requests go to recycling first, and
//! the caps on all workers hold over every group.

use std::collections::BTreeMap;

use super::{DrainReason, Notice, Session};
use crate::autoscaler::{AutoscaleAction, ClusterSnapshot, NodeUsage, ScaleOutCause, WorkerTotals};
use crate::container_scheduler::Input as CsInput;
use crate::task_scheduler::Input as TsInput;
use crate::{Resource, WorkerId};

impl Session {
    /// Memory and cores of the workers this session runs or is starting,
    /// in every group and in the reserve (draining ones included: their
    /// containers are held until they exit).
    pub(super) fn running_totals(&self) -> WorkerTotals {
        let workers = self.workers.values().map(|w| w.resource);
        let launching = self.launching.values().map(|l| l.resource);
        workers
            .chain(launching)
            .fold(WorkerTotals::default(), |t, r| {
                t.plus(WorkerTotals::of(1, r))
            })
    }

    /// Memory and cores of the worker requests not yet granted, every
    /// group together.
    pub(super) fn requested_totals(&self) -> WorkerTotals {
        self.groups.values().fold(WorkerTotals::default(), |t, g| {
            t.plus(WorkerTotals::of(
                u64::from(g.requests()),
                g.spec.worker_resource,
            ))
        })
    }

    /// What counts against `mr3.k8s.worker.total.max.memory.gb` /
    /// `.cpu.cores`: every worker running, starting or requested.
    fn committed_totals(&self) -> WorkerTotals {
        self.running_totals().plus(self.requested_totals())
    }

    /// What counts against the caps when `group` asks for workers of size
    /// `each`: [`Session::committed_totals`] less the workers in the reserve
    /// of the group's kind, which it can be given without adding to them.
    fn committed_totals_for(&self, group: &str, each: Resource) -> WorkerTotals {
        let reserve = self.cs.reserved_for(group);
        self.committed_totals()
            .minus(WorkerTotals::of(u64::from(reserve), each))
    }

    /// An autoscaled group's starts in the ContainerScheduler stand for its
    /// autoscaler's outstanding requests (its demand, see `reconcile`):
    /// withdraw those that no longer do (granted or cancelled), so that the
    /// group is in need only while a recycled worker can take the place of
    /// a request.
    pub(super) fn sync_autoscaled_starts(&mut self, now: u64, group: &str) {
        let Some(g) = self.groups.get(group) else {
            return;
        };
        if g.autoscaler.is_none() {
            return;
        }
        let starting = self.cs.starting(group);
        for _ in g.outstanding_auto..starting {
            self.cs_input(
                now,
                CsInput::WorkerStartWithdrawn {
                    group: group.to_string(),
                },
            );
        }
    }

    /// The autoscaler's snapshot of its group.
    fn snapshot(&self, group: &str) -> Option<ClusterSnapshot> {
        let g = self.groups.get(group)?;
        let mut nodes: BTreeMap<String, NodeUsage> = BTreeMap::new();
        let mut workers = 0u32;
        for (id, w) in &self.workers {
            if w.group.as_deref() != Some(group) {
                continue;
            }
            workers += 1;
            let used =
                g.ts.worker_report(id)
                    .map(|r| r.used.memory_mb)
                    .unwrap_or(0);
            let n = nodes.entry(w.host.clone()).or_insert_with(|| NodeUsage {
                host: w.host.clone(),
                workers: 0,
                used_mb: 0,
            });
            n.workers += 1;
            n.used_mb += used;
        }
        let launching = self.launching.values().filter(|l| l.group == group).count() as u32;
        Some(ClusterSnapshot {
            workers,
            worker_resource: g.spec.worker_resource,
            task_capacity_mb: g.ts.capacity().memory_mb,
            task_used_mb: g.ts.used().memory_mb,
            pending_tasks: g.ts.pending_demand().0,
            requested_workers: g.outstanding_cs + g.outstanding_auto + launching,
            nodes: nodes.into_values().collect(),
        })
    }

    /// Ticks the group's autoscaler and carries out its decision.
    pub(super) fn autoscale(&mut self, now: u64, group: &str) {
        if self
            .groups
            .get(group)
            .is_none_or(|g| g.autoscaler.is_none())
        {
            return;
        }
        let Some(snapshot) = self.snapshot(group) else {
            return;
        };
        // The caps hold over the workers of every group; those in the
        // reserve of the group's kind are there for the taking.
        let totals = self.committed_totals_for(group, snapshot.worker_resource);
        let Some(a) = self
            .groups
            .get_mut(group)
            .and_then(|g| g.autoscaler.as_mut())
        else {
            return;
        };
        let result = a.tick_with_totals(now, &snapshot, totals);
        self.core_steps += 1;
        if self.check_every_step && self.violation.is_none() {
            if let Err(e) = a.check_invariants() {
                self.violation = Some(format!("group {group}: {e}"));
            }
        }
        let decision = match result {
            Ok(d) => d,
            Err(e) => {
                self.notice(Notice::InputRefused {
                    core: super::CoreName::Autoscaler,
                    group: Some(group.to_string()),
                    error: e.to_string(),
                });
                return;
            }
        };
        if decision.sampled {
            if let Some(g) = self.groups.get_mut(group) {
                g.usage_bp = decision.usage_bp;
            }
        }
        for action in decision.actions {
            match action {
                AutoscaleAction::RequestWorkers { count } => self.request_workers(
                    now,
                    group,
                    count,
                    snapshot.worker_resource,
                    decision.usage_bp,
                ),
                AutoscaleAction::CancelRequests { count } => {
                    let Some(g) = self.groups.get_mut(group) else {
                        return;
                    };
                    let n = count.min(g.outstanding_auto);
                    g.outstanding_auto -= n;
                    let cancel = g.cancel();
                    self.notice(Notice::ScaleOutOver {
                        group: group.to_string(),
                        count: n,
                    });
                    self.counters.requests_cancelled += u64::from(n);
                    for _ in 0..n {
                        self.effects.push(cancel.clone());
                    }
                    self.sync_autoscaled_starts(now, group);
                }
                AutoscaleAction::ReleaseNodes {
                    hosts,
                    wait_for_active_dags,
                } => self.release_nodes(now, group, hosts, wait_for_active_dags, decision.usage_bp),
            }
        }
    }

    /// `RequestWorkers`: cut to what fits under the caps now, shown to the
    /// ContainerScheduler as the group's demand so that recycled workers
    /// fill it first, and the rest asked of the resource manager.
    fn request_workers(
        &mut self,
        now: u64,
        group: &str,
        count: u32,
        each: Resource,
        usage_bp: Option<u64>,
    ) {
        let limit = self.config.max_start_failures;
        // The autoscaler counted every request it saw as withdrawn at the
        // end of a scale-out, but containers already granted cannot be:
        // hold the count to what fits now.
        let (fit, cap) = self
            .committed_totals_for(group, each)
            .headroom(&self.config.cores.autoscaler, each);
        let Some(g) = self.groups.get(group) else {
            return;
        };
        let cause = g
            .autoscaler
            .as_ref()
            .and_then(|a| a.last_scale_out_cause())
            .unwrap_or(ScaleOutCause::Usage);
        if g.starts_blocked(limit) {
            self.notice(Notice::ScaleOutSkipped {
                group: group.to_string(),
                count,
            });
            return;
        }
        let count = if count > fit {
            self.notice(Notice::RequestCut {
                group: group.to_string(),
                count,
                fit,
                cap,
            });
            fit
        } else {
            count
        };
        if count == 0 {
            return;
        }
        self.notice(Notice::WorkersRequested {
            group: group.to_string(),
            cause,
            count,
            usage_bp,
        });
        match cause {
            ScaleOutCause::Initial => self.counters.initial_requested += u64::from(count),
            ScaleOutCause::Usage => {
                self.counters.scale_outs += 1;
                self.counters.scale_out_requested += u64::from(count);
            }
        }
        // Recycled workers first: the requests are the group's demand, and
        // the ContainerScheduler hands it workers of its kind in the
        // reserve (or idle, under fifo), each taking the place of one (see
        // ReassignWorker in `apply_cs`). The resource manager is asked for
        // the rest.
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        g.outstanding_auto += count;
        g.auto_unsent = count;
        let wanted_workers = g.outstanding_auto;
        self.cs_input(
            now,
            CsInput::GroupDemand {
                group: group.to_string(),
                wanted_workers,
            },
        );
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let unsent = std::mem::take(&mut g.auto_unsent);
        let request = g.request();
        if unsent < count {
            self.notice(Notice::RecycledForRequests {
                group: group.to_string(),
                recycled: count - unsent,
                requested: unsent,
            });
        }
        self.counters.containers_requested += u64::from(unsent);
        for _ in 0..unsent {
            self.effects.push(request.clone());
        }
    }

    /// `ReleaseNodes`: the group's workers on those hosts drain (after the
    /// DAGs active now, if `wait`) and leave with their nodes.
    fn release_nodes(
        &mut self,
        now: u64,
        group: &str,
        hosts: Vec<String>,
        wait: bool,
        usage_bp: Option<u64>,
    ) {
        self.counters.scale_ins += 1;
        let victims: Vec<WorkerId> = self
            .workers
            .iter()
            .filter(|(_, w)| w.group.as_deref() == Some(group) && hosts.contains(&w.host))
            .map(|(id, _)| id.clone())
            .collect();
        self.notice(Notice::NodesReleased {
            group: group.to_string(),
            hosts,
            wait_for_active_dags: wait,
            usage_bp,
            workers: victims.clone(),
        });
        for w in victims {
            if wait {
                // Drained (and then stopped) once the DAGs active now are
                // over; see `drained`. It leaves with its node, so it is not
                // idle for recycling meanwhile (another group in need would
                // keep the node).
                let was_idle = self.workers.get_mut(&w).is_some_and(|e| {
                    e.drain = Some(DrainReason::ScaleIn);
                    e.last_idle.replace(false) == Some(true)
                });
                if was_idle {
                    self.cs_input(
                        now,
                        CsInput::WorkerActivity {
                            worker: w.clone(),
                            idle: false,
                        },
                    );
                }
                self.notice(Notice::WorkerDraining {
                    worker: w.clone(),
                    group: group.to_string(),
                    reason: DrainReason::ScaleIn,
                });
                self.ts_input(now, group, TsInput::DrainWorker { worker: w });
            } else {
                if let Some(e) = self.workers.get_mut(&w) {
                    e.group = None;
                }
                self.remove_from_group(now, group, &w);
                self.cs_input(now, CsInput::WorkerExited { worker: w.clone() });
                self.counters.scale_in_released += 1;
                self.retire(&w, "its node was released by scale-in");
            }
        }
    }
}
