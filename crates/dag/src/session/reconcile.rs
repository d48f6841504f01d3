//! The settle: after every event (the AM) or every instant (a simulator),
//! idle capacity is offered and the ContainerScheduler learns each group's
//! demand and idle workers.

use std::collections::BTreeSet;

use super::{Notice, Session};
use crate::config::ContainerSchedulerScheme;
use crate::container_scheduler::Input as CsInput;
use crate::task_scheduler::Input as TsInput;
use crate::WorkerId;

impl Session {
    /// Carries out held starts that may go now, offers idle capacity, and
    /// tells the container scheduler each group's need and its idle
    /// workers.
    pub(super) fn reconcile(&mut self, now: u64) {
        if self.stopping {
            return;
        }
        let names: Vec<String> = self.groups.keys().cloned().collect();
        let limit = self.config.max_start_failures;
        for g in self.groups.values_mut() {
            if g.deferred_starts > 0 && !g.starts_blocked(limit) {
                for _ in 0..g.deferred_starts {
                    self.effects.push(g.request());
                }
                g.outstanding_cs += g.deferred_starts;
                self.counters.containers_requested += u64::from(g.deferred_starts);
                g.deferred_starts = 0;
            }
        }
        for name in &names {
            self.sync_autoscaled_starts(now, name);
        }
        // Workers only leave during this loop, so the figure for running
        // and starting workers stays an upper bound; requests are counted
        // afresh for each group, as the demand of one starts workers.
        let running = self.running_totals();
        for name in &names {
            self.ts_input(now, name, TsInput::OfferAll);
            let Some(wanted) = self.demand(name, running) else {
                continue;
            };
            self.cs_input(
                now,
                CsInput::GroupDemand {
                    group: name.clone(),
                    wanted_workers: wanted,
                },
            );
            if self.cs.config().scheme != ContainerSchedulerScheme::None {
                self.report_activity(now, name);
            }
        }
    }

    /// The workers the group wants more of. With an autoscaler, its
    /// outstanding requests (the autoscaler alone sizes the group, and a
    /// recycled worker takes the place of a request); otherwise what its
    /// pending tasks need, within `spindle.dag.group.max.workers` and the
    /// caps on all workers.
    fn demand(&mut self, name: &str, running: crate::autoscaler::WorkerTotals) -> Option<u32> {
        let g = self.groups.get(name)?;
        if g.autoscaler.is_some() {
            // The starts these become make no request of their own (see
            // `apply_cs`).
            return Some(g.outstanding_auto);
        }
        if g.starts_blocked(self.config.max_start_failures) {
            // Workers of this group cannot start.
            return Some(0);
        }
        let have = g.ts.worker_count() as u64;
        let room = u64::from(self.config.group_max_workers).saturating_sub(have);
        let per = g.spec.worker_resource;
        // The workers the pending tasks need (worked out only when the
        // group may still grow).
        let wanted = match room {
            0 => 0,
            _ => {
                let (count, need) = g.ts.pending_demand();
                let by_memory = need.memory_mb.div_ceil(per.memory_mb.max(1));
                let by_cores = u64::from(need.vcores).div_ceil(u64::from(per.vcores.max(1)));
                if count == 0 {
                    0
                } else {
                    by_memory.max(by_cores).max(1)
                }
            }
        };
        if wanted.min(room) == 0 {
            // Nothing to ask for: no cap can hold the group back.
            if g.capped_by.is_some() {
                self.notice(Notice::CapReleased {
                    group: name.to_string(),
                });
                if let Some(g) = self.groups.get_mut(name) {
                    g.capped_by = None;
                }
            }
            return Some(0);
        }
        // The caps on all workers (`mr3.k8s.worker.total.*`) hold with
        // autoscaling off too: the demand counts the group's workers being
        // started, and the workers in the reserve of its kind (the
        // ContainerScheduler hands those out first, and recycling one adds
        // nothing to the totals), so it may reach those plus what still
        // fits.
        let requested = self.requested_totals();
        let starting = self.cs.starting(name);
        let reserve = self.cs.reserved_for(name);
        let (fit, cap) = running
            .plus(requested)
            .headroom(&self.config.cores.autoscaler, per);
        let allowed = u64::from(starting) + u64::from(reserve) + u64::from(fit);
        let capped_by = (wanted.min(room) > allowed).then_some(cap);
        if capped_by != g.capped_by {
            let notice = match capped_by {
                Some(cap) => Notice::CapHoldsBack {
                    group: name.to_string(),
                    wanted: wanted.min(room),
                    allowed,
                    cap,
                },
                None => Notice::CapReleased {
                    group: name.to_string(),
                },
            };
            self.notice(notice);
            if let Some(g) = self.groups.get_mut(name) {
                g.capped_by = capped_by;
            }
        }
        Some(u32::try_from(wanted.min(room).min(allowed)).unwrap_or(u32::MAX))
    }

    /// Tells the ContainerScheduler which of the group's workers turned
    /// idle or busy since it last heard.
    fn report_activity(&mut self, now: u64, name: &str) {
        let Some(g) = self.groups.get(name) else {
            return;
        };
        let idle: BTreeSet<WorkerId> = g.ts.idle_workers().into_iter().collect();
        let members: Vec<(WorkerId, bool)> =
            g.ts.workers()
                .into_iter()
                .map(|w| {
                    let i = idle.contains(&w);
                    (w, i)
                })
                .collect();
        for (w, is_idle) in members {
            let changed = self
                .workers
                .get_mut(&w)
                .map(|e| {
                    let changed = e.last_idle != Some(is_idle);
                    e.last_idle = Some(is_idle);
                    changed
                })
                .unwrap_or(false);
            if changed {
                self.cs_input(
                    now,
                    CsInput::WorkerActivity {
                        worker: w,
                        idle: is_idle,
                    },
                );
            }
        }
    }
}
