//! The Autoscaler core: memory-usage sampling and the STABLE / SCALE_OUT /
//! SCALE_IN state machine of one ContainerGroup.
//!
//! # Measuring
//!
//! Every `mr3.check.memory.usage.event.interval.secs` the driver's
//! [`Autoscaler::tick`] takes a sample: the memory used by running task
//! attempts over the memory the group's workers have for attempts (10
//! workers with 32 GB each running 40 attempts of 4 GB each is
//! 40 * 4 / (10 * 32) = 50%). The usage is the average or the maximum
//! (`mr3.memory.usage.check.scheme`) of the samples of the last
//! `mr3.memory.usage.check.window.length.secs`, leaving out samples taken
//! while no worker ran and the idle samples (no attempt running) at the
//! head of the window, so that a burst after a long idle period scales
//! out fast. The seed leaves open what happens when *every* sample in the
//! window is idle; Spindle reads "the head of the window" as the idle
//! samples *before* the first busy one, so an all-idle window measures 0%
//! (and can scale in), and a window with no sample at all measures
//! nothing (and decides nothing).
//!
//! # Deciding
//!
//! Decisions are made at sampling time:
//!
//! | state | condition | action | next state |
//! |---|---|---|---|
//! | STABLE | usage >= ScaleOutThreshold and the caps leave room | request N workers | SCALE_OUT |
//! | STABLE | usage <= ScaleInThreshold, ScaleInDelayAfterScaleOut passed since the last SCALE_OUT ended, more than AutoScaleInMinHosts nodes | release nodes | SCALE_IN |
//! | STABLE | no worker, tasks waiting, `num.initial.containers` > 0 | request that many workers | SCALE_OUT |
//! | SCALE_OUT | ScaleOutGracePeriod passed since it was triggered | cancel worker requests still outstanding | STABLE (and decide again at once) |
//! | SCALE_IN | ScaleInGracePeriod passed since it was triggered, and no released node holds a worker of the group any more | — | STABLE (and decide again at once) |
//!
//! N is `mr3.auto.scale.out.num.increment.containers`, or when that is 0,
//! the smallest number of extra workers that would bring the usage back
//! to the threshold: `ceil(W * usage / ScaleOutThreshold) - W` for `W`
//! running workers (at least 1). It is then cut so the memory and cores of
//! all workers, running and requested, stay within
//! `mr3.k8s.worker.total.max.memory.gb` / `.cpu.cores`. The seed puts these
//! caps on *all* workers: a driver with several groups passes the totals of
//! every group to [`Autoscaler::tick_with_totals`] (and can use
//! [`WorkerTotals::headroom`] to hold its other requests to the same caps);
//! [`Autoscaler::tick`] counts only the snapshot's group.
//!
//! Scale-in releases whole nodes: `mr3.auto.scale.in.num.decrement.hosts`
//! of them, or when that is 0, as many as hold the workers above
//! `ceil(W * usage / ScaleInThreshold)` (at least 1), never leaving fewer
//! than AutoScaleInMinHosts. The least used nodes go first (then those
//! with fewer workers, then by host name). With
//! `mr3.auto.scale.in.wait.dag.finished` the workers on released nodes
//! first finish the DAGs active at release time (the driver drains them in
//! their task scheduler), so a scale-in completes when its grace period
//! has passed *and* the released nodes have emptied: the snapshot's
//! `nodes` list no worker of the group on them. Until then the autoscaler
//! requests nothing ("do not try to allocate new ContainerWorkers until the
//! scale-in operation completes"), and [`Autoscaler::allows_new_workers`]
//! is false. This is the one place that holds requests back during a
//! scale-in: a group with an autoscaler gets its workers only from it.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;

use crate::config::{keys, AutoscalerConfig, ConfigError, MemoryUsageScheme};
use crate::types::{check_clock, CoreError, InvariantViolation, Resource};

/// The three states of the seed's diagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScaleState {
    /// Usage is within range.
    Stable,
    /// Workers were requested; waiting for ScaleOutGracePeriod.
    ScaleOut,
    /// Nodes were released; waiting for ScaleInGracePeriod.
    ScaleIn,
}

impl fmt::Display for ScaleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScaleState::Stable => "STABLE",
            ScaleState::ScaleOut => "SCALE_OUT",
            ScaleState::ScaleIn => "SCALE_IN",
        })
    }
}

/// One node with workers of the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeUsage {
    pub host: String,
    pub workers: u32,
    /// Memory of running attempts on the node's workers.
    pub used_mb: u64,
}

/// What the driver sees of the group when it ticks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterSnapshot {
    /// Workers running.
    pub workers: u32,
    /// The size of one worker (for the caps and for requests).
    pub worker_resource: Resource,
    /// Memory the running workers have for task attempts, all together.
    pub task_capacity_mb: u64,
    /// Memory of the running task attempts.
    pub task_used_mb: u64,
    /// Ready tasks waiting for a worker.
    pub pending_tasks: u64,
    /// Workers requested and not yet running.
    pub requested_workers: u32,
    /// Nodes that run workers of the group.
    pub nodes: Vec<NodeUsage>,
}

/// Memory and cores of workers, running and requested: what counts
/// against `mr3.k8s.worker.total.max.memory.gb` / `.cpu.cores`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct WorkerTotals {
    pub memory_mb: u64,
    pub vcores: u64,
}

impl WorkerTotals {
    /// `count` workers of size `each`.
    pub fn of(count: u64, each: Resource) -> WorkerTotals {
        WorkerTotals {
            memory_mb: count.saturating_mul(each.memory_mb),
            vcores: count.saturating_mul(u64::from(each.vcores)),
        }
    }

    /// Component-wise sum, saturating.
    pub fn plus(self, other: WorkerTotals) -> WorkerTotals {
        WorkerTotals {
            memory_mb: self.memory_mb.saturating_add(other.memory_mb),
            vcores: self.vcores.saturating_add(other.vcores),
        }
    }

    /// Component-wise difference, clamped at zero.
    pub fn minus(self, other: WorkerTotals) -> WorkerTotals {
        WorkerTotals {
            memory_mb: self.memory_mb.saturating_sub(other.memory_mb),
            vcores: self.vcores.saturating_sub(other.vcores),
        }
    }

    /// Component-wise maximum.
    pub fn max(self, other: WorkerTotals) -> WorkerTotals {
        WorkerTotals {
            memory_mb: self.memory_mb.max(other.memory_mb),
            vcores: self.vcores.max(other.vcores),
        }
    }

    /// How many more workers of size `each` fit under the caps of `config`
    /// (`max_total_memory_mb`, `max_total_vcores`) on top of these totals,
    /// and the key of the cap that binds. The caps hold whether autoscaling
    /// is on or not.
    pub fn headroom(self, config: &AutoscalerConfig, each: Resource) -> (u32, &'static str) {
        let fit = |max: u64, used: u64, per: u64| {
            max.saturating_sub(used)
                .checked_div(per)
                .unwrap_or(u64::MAX)
        };
        let by_memory = fit(config.max_total_memory_mb, self.memory_mb, each.memory_mb);
        let by_cores = fit(config.max_total_vcores, self.vcores, u64::from(each.vcores));
        let (n, key) = if by_memory <= by_cores {
            (by_memory, keys::WORKER_TOTAL_MAX_MEMORY_GB)
        } else {
            (by_cores, keys::WORKER_TOTAL_MAX_CPU_CORES)
        };
        (u32::try_from(n).unwrap_or(u32::MAX), key)
    }
}

/// Why the autoscaler last asked for workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScaleOutCause {
    /// The group had no worker and tasks waited
    /// (`mr3.auto.scale.out.num.initial.containers`).
    Initial,
    /// The memory usage reached ScaleOutThreshold: a scale-out proper.
    Usage,
}

impl fmt::Display for ScaleOutCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScaleOutCause::Initial => "initial",
            ScaleOutCause::Usage => "usage",
        })
    }
}

/// What the driver should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutoscaleAction {
    /// Ask for `count` more workers.
    RequestWorkers { count: u32 },
    /// Withdraw the `count` worker requests still outstanding at the end of
    /// a scale-out.
    CancelRequests { count: u32 },
    /// Empty these nodes: stop their workers (after the DAGs active now
    /// finish, if `wait_for_active_dags`) and place nothing new there.
    ReleaseNodes {
        hosts: Vec<String>,
        wait_for_active_dags: bool,
    },
}

/// What one tick decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoscaleDecision {
    pub actions: Vec<AutoscaleAction>,
    /// The state after this tick.
    pub state: ScaleState,
    /// Whether this tick took a sample (decisions are made only then).
    pub sampled: bool,
    /// The window's usage in basis points (1/100 of a percent), when
    /// sampled and measurable.
    pub usage_bp: Option<u64>,
    /// The cap that cut a scale-out to nothing, if one did.
    pub limited_by: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sample {
    at_ms: u64,
    usage_bp: u64,
}

/// The autoscaler core for one ContainerGroup. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Autoscaler {
    config: AutoscalerConfig,
    state: ScaleState,
    entered_ms: u64,
    last_scale_out_end_ms: Option<u64>,
    samples: VecDeque<Sample>,
    next_sample_ms: u64,
    released: BTreeSet<String>,
    last_sample_tick_ms: Option<u64>,
    last_ms: u64,
    last_scale_out: Option<ScaleOutCause>,
}

impl Autoscaler {
    pub fn new(config: AutoscalerConfig) -> Result<Autoscaler, ConfigError> {
        if config.sample_interval_ms == 0 {
            return Err(ConfigError::invalid(
                keys::CHECK_MEMORY_USAGE_INTERVAL_SECS,
                "0",
                "must be positive",
            ));
        }
        config.validate()?;
        Ok(Autoscaler {
            config,
            state: ScaleState::Stable,
            entered_ms: 0,
            last_scale_out_end_ms: None,
            samples: VecDeque::new(),
            next_sample_ms: 0,
            released: BTreeSet::new(),
            last_sample_tick_ms: None,
            last_ms: 0,
            last_scale_out: None,
        })
    }

    pub fn config(&self) -> &AutoscalerConfig {
        &self.config
    }

    pub fn state(&self) -> ScaleState {
        self.state
    }

    /// False while a scale-in is in progress: no new worker should be
    /// requested for the group until it completes (the autoscaler itself
    /// requests none meanwhile).
    pub fn allows_new_workers(&self) -> bool {
        self.state != ScaleState::ScaleIn
    }

    /// Hosts released by scale-in that still held workers of the group in
    /// the last snapshot. The scale-in completes only once this is empty.
    pub fn releasing_hosts(&self) -> Vec<String> {
        self.released.iter().cloned().collect()
    }

    /// Whether `host` was released by the scale-in in progress and still
    /// held workers of the group in the last snapshot: a worker that
    /// arrives there now should not be used.
    pub fn is_releasing(&self, host: &str) -> bool {
        self.released.contains(host)
    }

    /// Why the last `RequestWorkers` was decided, if one ever was.
    pub fn last_scale_out_cause(&self) -> Option<ScaleOutCause> {
        self.last_scale_out
    }

    /// How many more workers of `snapshot.worker_resource` fit under the
    /// caps on total worker memory and cores, counting the running and
    /// requested workers of this snapshot's group only, and the key of the
    /// cap that binds. See [`Autoscaler::worker_headroom_with_totals`] for
    /// the caps over every group.
    pub fn worker_headroom(&self, snapshot: &ClusterSnapshot) -> (u32, &'static str) {
        group_totals(snapshot).headroom(&self.config, snapshot.worker_resource)
    }

    /// Like [`Autoscaler::worker_headroom`], with `totals` the memory and
    /// cores of all workers running and requested, every group included
    /// (never less than the snapshot's own group).
    pub fn worker_headroom_with_totals(
        &self,
        snapshot: &ClusterSnapshot,
        totals: WorkerTotals,
    ) -> (u32, &'static str) {
        totals
            .max(group_totals(snapshot))
            .headroom(&self.config, snapshot.worker_resource)
    }

    /// The usage of the current window, in basis points, or `None` when
    /// there is no sample to judge by.
    pub fn window_usage_bp(&self) -> Option<u64> {
        let first_busy = self.samples.iter().position(|s| s.usage_bp > 0);
        let counted: Vec<u64> = match first_busy {
            Some(i) => self.samples.iter().skip(i).map(|s| s.usage_bp).collect(),
            // Every sample idle: nothing precedes a busy sample, so nothing
            // is a "head" to drop; the cluster is simply idle.
            None => self.samples.iter().map(|s| s.usage_bp).collect(),
        };
        if counted.is_empty() {
            return None;
        }
        Some(match self.config.usage_scheme {
            MemoryUsageScheme::Average => counted.iter().sum::<u64>() / counted.len() as u64,
            MemoryUsageScheme::Maximum => counted.iter().copied().max().unwrap_or(0),
        })
    }

    /// Called by the driver as often as it likes; samples and decides once
    /// per sampling interval. `now_ms` must not go backwards. The caps on
    /// total worker memory and cores count this snapshot's group only: a
    /// driver with several groups calls [`Autoscaler::tick_with_totals`].
    pub fn tick(
        &mut self,
        now_ms: u64,
        snapshot: &ClusterSnapshot,
    ) -> Result<AutoscaleDecision, CoreError> {
        self.step(now_ms, snapshot, None)
    }

    /// [`Autoscaler::tick`] for a driver that runs several groups:
    /// `totals` is the memory and cores of every worker running or
    /// requested, all groups together (this one's included), so the caps
    /// `mr3.k8s.worker.total.max.memory.gb` / `.cpu.cores` hold over all
    /// workers, as the seed has them.
    pub fn tick_with_totals(
        &mut self,
        now_ms: u64,
        snapshot: &ClusterSnapshot,
        totals: WorkerTotals,
    ) -> Result<AutoscaleDecision, CoreError> {
        self.step(now_ms, snapshot, Some(totals))
    }

    fn step(
        &mut self,
        now_ms: u64,
        snapshot: &ClusterSnapshot,
        totals: Option<WorkerTotals>,
    ) -> Result<AutoscaleDecision, CoreError> {
        check_clock(self.last_ms, now_ms)?;
        self.last_ms = now_ms;
        let mut decision = AutoscaleDecision {
            actions: Vec::new(),
            state: self.state,
            sampled: false,
            usage_bp: None,
            limited_by: None,
        };
        // Released hosts that no longer hold a worker of the group are
        // done.
        self.released
            .retain(|h| snapshot.nodes.iter().any(|n| &n.host == h && n.workers > 0));
        if !self.config.enabled || now_ms < self.next_sample_ms {
            return Ok(decision);
        }
        self.next_sample_ms = now_ms.saturating_add(self.config.sample_interval_ms);
        decision.sampled = true;

        if snapshot.workers > 0 && snapshot.task_capacity_mb > 0 {
            let bp =
                u128::from(snapshot.task_used_mb) * 10_000 / u128::from(snapshot.task_capacity_mb);
            self.samples.push_back(Sample {
                at_ms: now_ms,
                usage_bp: u64::try_from(bp).unwrap_or(u64::MAX),
            });
        }
        // Keep the samples of the last window: those taken less than
        // `window_ms` ago.
        let window = self.config.window_ms;
        while self
            .samples
            .front()
            .is_some_and(|s| s.at_ms.saturating_add(window) <= now_ms)
        {
            self.samples.pop_front();
        }
        self.last_sample_tick_ms = Some(now_ms);
        let usage = self.window_usage_bp();
        decision.usage_bp = usage;

        // Cooldowns end.
        let mut cancelled = 0;
        match self.state {
            ScaleState::ScaleOut if now_ms - self.entered_ms >= self.config.scale_out_grace_ms => {
                self.state = ScaleState::Stable;
                self.entered_ms = now_ms;
                self.last_scale_out_end_ms = Some(now_ms);
                if snapshot.requested_workers > 0 {
                    cancelled = snapshot.requested_workers;
                    decision.actions.push(AutoscaleAction::CancelRequests {
                        count: snapshot.requested_workers,
                    });
                }
            }
            // A scale-in completes once its grace period has passed and
            // the nodes it released have emptied.
            ScaleState::ScaleIn
                if now_ms - self.entered_ms >= self.config.scale_in_grace_ms
                    && self.released.is_empty() =>
            {
                self.state = ScaleState::Stable;
                self.entered_ms = now_ms;
            }
            _ => {}
        }

        if self.state == ScaleState::Stable {
            // Requests just cancelled no longer count against the caps.
            let effective = ClusterSnapshot {
                requested_workers: snapshot.requested_workers - cancelled,
                ..snapshot.clone()
            };
            let own = group_totals(&effective);
            let totals = match totals {
                Some(t) => t
                    .minus(WorkerTotals::of(
                        u64::from(cancelled),
                        snapshot.worker_resource,
                    ))
                    .max(own),
                None => own,
            };
            self.decide(now_ms, &effective, totals, usage, &mut decision);
        }
        decision.state = self.state;
        Ok(decision)
    }

    fn decide(
        &mut self,
        now_ms: u64,
        snapshot: &ClusterSnapshot,
        totals: WorkerTotals,
        usage: Option<u64>,
        decision: &mut AutoscaleDecision,
    ) {
        let c = &self.config;
        // Fast start from nothing.
        if snapshot.workers == 0 {
            if snapshot.pending_tasks > 0
                && snapshot.requested_workers == 0
                && c.scale_out_initial_workers > 0
            {
                self.scale_out(
                    now_ms,
                    snapshot,
                    totals,
                    c.scale_out_initial_workers,
                    ScaleOutCause::Initial,
                    decision,
                );
            }
            return;
        }
        let Some(usage) = usage else {
            return;
        };
        let out_bp = u64::from(c.scale_out_threshold_percent) * 100;
        let in_bp = u64::from(c.scale_in_threshold_percent) * 100;
        if usage >= out_bp {
            let wanted = if c.scale_out_increment_workers > 0 {
                c.scale_out_increment_workers
            } else {
                let w = u64::from(snapshot.workers);
                let target = (w * usage).div_ceil(out_bp.max(1));
                u32::try_from(target.saturating_sub(w).max(1)).unwrap_or(u32::MAX)
            };
            self.scale_out(
                now_ms,
                snapshot,
                totals,
                wanted,
                ScaleOutCause::Usage,
                decision,
            );
            return;
        }
        let delay_over = self
            .last_scale_out_end_ms
            .is_none_or(|end| now_ms - end >= c.scale_in_delay_after_scale_out_ms);
        if usage <= in_bp && delay_over {
            let hosts = self.pick_nodes(snapshot, usage);
            if !hosts.is_empty() {
                self.released.extend(hosts.iter().cloned());
                decision.actions.push(AutoscaleAction::ReleaseNodes {
                    hosts,
                    wait_for_active_dags: c.scale_in_wait_dag_finished,
                });
                self.state = ScaleState::ScaleIn;
                self.entered_ms = now_ms;
            }
        }
    }

    fn scale_out(
        &mut self,
        now_ms: u64,
        snapshot: &ClusterSnapshot,
        totals: WorkerTotals,
        wanted: u32,
        cause: ScaleOutCause,
        decision: &mut AutoscaleDecision,
    ) {
        let (room, cap) = totals.headroom(&self.config, snapshot.worker_resource);
        let count = wanted.min(room);
        if count == 0 {
            decision.limited_by = Some(cap);
            return;
        }
        decision
            .actions
            .push(AutoscaleAction::RequestWorkers { count });
        self.last_scale_out = Some(cause);
        self.state = ScaleState::ScaleOut;
        self.entered_ms = now_ms;
    }

    fn pick_nodes(&self, snapshot: &ClusterSnapshot, usage: u64) -> Vec<String> {
        let c = &self.config;
        let mut candidates: Vec<&NodeUsage> = snapshot
            .nodes
            .iter()
            .filter(|n| !self.released.contains(&n.host))
            .collect();
        candidates
            .sort_by(|a, b| (a.used_mb, a.workers, &a.host).cmp(&(b.used_mb, b.workers, &b.host)));
        let removable = candidates
            .len()
            .saturating_sub(c.scale_in_min_hosts as usize);
        if removable == 0 {
            return Vec::new();
        }
        let count = if c.scale_in_decrement_hosts > 0 {
            (c.scale_in_decrement_hosts as usize).min(removable)
        } else {
            let w = u64::from(snapshot.workers);
            let in_bp = u64::from(c.scale_in_threshold_percent) * 100;
            let keep = if in_bp == 0 {
                0
            } else {
                (w * usage).div_ceil(in_bp)
            };
            let surplus = w.saturating_sub(keep);
            let mut n = 0usize;
            let mut freed = 0u64;
            for node in &candidates[..removable] {
                if freed + u64::from(node.workers) > surplus {
                    break;
                }
                freed += u64::from(node.workers);
                n += 1;
            }
            n.max(1)
        };
        candidates
            .into_iter()
            .take(count)
            .map(|n| n.host.clone())
            .collect()
    }

    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        let fail = |m: String| Err(InvariantViolation(m));
        let mut prev = None;
        for s in &self.samples {
            if prev.is_some_and(|p| p >= s.at_ms) {
                return fail("samples out of order".into());
            }
            if s.at_ms > self.last_ms {
                return fail("a sample from the future".into());
            }
            if self
                .last_sample_tick_ms
                .is_some_and(|t| s.at_ms.saturating_add(self.config.window_ms) <= t)
            {
                return fail(format!("sample at {} ms is older than the window", s.at_ms));
            }
            prev = Some(s.at_ms);
        }
        if self.entered_ms > self.last_ms {
            return fail("state entered in the future".into());
        }
        if self.state != ScaleState::ScaleIn && !self.released.is_empty() {
            return fail(format!(
                "{} with released nodes still pending: {:?}",
                self.state, self.released
            ));
        }
        if !self.config.enabled && (self.state != ScaleState::Stable || !self.samples.is_empty()) {
            return fail("a disabled autoscaler acted".into());
        }
        Ok(())
    }
}

/// The running and requested workers of the snapshot's group.
fn group_totals(snapshot: &ClusterSnapshot) -> WorkerTotals {
    WorkerTotals::of(
        u64::from(snapshot.workers) + u64::from(snapshot.requested_workers),
        snapshot.worker_resource,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use AutoscaleAction::*;

    const GB: u64 = 1024;
    const S: u64 = 1_000;

    fn config() -> AutoscalerConfig {
        AutoscalerConfig {
            enabled: true,
            ..AutoscalerConfig::default()
        }
    }

    fn scaler(c: AutoscalerConfig) -> Autoscaler {
        Autoscaler::new(c).expect("valid")
    }

    /// `workers` workers of 32 GB spread two per node, running `tasks`
    /// attempts of 4 GB spread from the first node on.
    fn snapshot(workers: u32, tasks: u64) -> ClusterSnapshot {
        let nodes = (0..workers.div_ceil(2))
            .map(|i| {
                let on_node = u64::from(2.min(workers - i * 2));
                let used = (tasks.saturating_sub(u64::from(i) * 16)).min(on_node * 8) * 4 * GB;
                NodeUsage {
                    host: format!("node{i:02}"),
                    workers: on_node as u32,
                    used_mb: used,
                }
            })
            .collect();
        ClusterSnapshot {
            workers,
            worker_resource: Resource::new(32 * GB, 8),
            task_capacity_mb: u64::from(workers) * 32 * GB,
            task_used_mb: tasks * 4 * GB,
            pending_tasks: 0,
            requested_workers: 0,
            nodes,
        }
    }

    fn tick(a: &mut Autoscaler, now: u64, snap: &ClusterSnapshot) -> AutoscaleDecision {
        let d = a.tick(now, snap).expect("tick");
        a.check_invariants().expect("invariants");
        d
    }

    /// The checks notice a corrupted state: each corruption of a consistent one
    /// is named.
    #[test]
    fn corrupted_states_fail_the_invariants() {
        type Corruption = fn(&mut Autoscaler);
        let corruptions: [(&str, Corruption); 3] = [
            ("state entered in the future", |a| {
                a.entered_ms = a.last_ms + 1
            }),
            ("samples out of order", |a| {
                a.samples.make_contiguous().reverse()
            }),
            ("a sample from the future", |a| a.last_ms = 0),
        ];
        for (expected, corrupt) in corruptions {
            let mut a = scaler(config());
            for i in 0..3 {
                tick(&mut a, i * 10 * S, &snapshot(4, 8));
            }
            assert!(a.samples.len() >= 2, "two samples to reorder");
            corrupt(&mut a);
            let v = a.check_invariants().expect_err(expected).to_string();
            assert!(v.contains(expected), "{v}");
        }
    }

    #[test]
    fn seed_example_ten_workers_forty_tasks_is_fifty_percent() {
        // 10 ContainerWorkers with 32 GB each, 40 attempts of 4 GB each:
        // 40 * 4 / (10 * 32) = 50%.
        let mut a = scaler(AutoscalerConfig {
            scale_in_threshold_percent: 40,
            ..config()
        });
        let d = tick(&mut a, 0, &snapshot(10, 40));
        assert!(d.sampled);
        assert_eq!(d.usage_bp, Some(5_000));
        assert!(d.actions.is_empty());
        assert_eq!(d.state, ScaleState::Stable);
    }

    #[test]
    fn samples_without_workers_and_the_idle_head_are_left_out() {
        // Keep every node, so the idle stretch does not scale in.
        let mut a = scaler(AutoscalerConfig {
            scale_in_min_hosts: 5,
            ..config()
        });
        // No workers yet: nothing to measure.
        let d = tick(&mut a, 0, &ClusterSnapshot::default());
        assert_eq!(d.usage_bp, None);
        // A long idle stretch, then a burst at 90%.
        for i in 1..=5 {
            let d = tick(&mut a, i * 10 * S, &snapshot(10, 0));
            assert_eq!(d.usage_bp, Some(0), "an all-idle window measures 0%");
        }
        let d = tick(&mut a, 60 * S, &snapshot(10, 72));
        // The idle samples at the head do not dilute the burst: 90%.
        assert_eq!(d.usage_bp, Some(9_000));
        assert_eq!(d.actions, vec![RequestWorkers { count: 1 }]);
        assert_eq!(d.state, ScaleState::ScaleOut);
    }

    #[test]
    fn ticks_between_sampling_intervals_do_nothing() {
        let mut a = scaler(config());
        assert!(tick(&mut a, 0, &snapshot(10, 80)).sampled);
        let d = tick(&mut a, 9_999, &snapshot(10, 80));
        assert!(!d.sampled && d.actions.is_empty());
        assert!(tick(&mut a, 10_000, &snapshot(10, 80)).sampled);
    }

    #[test]
    fn average_and_maximum_over_the_window() {
        for (scheme, expected) in [
            (MemoryUsageScheme::Average, (7_500 + 5_000 + 5_000) / 3),
            (MemoryUsageScheme::Maximum, 7_500),
        ] {
            let mut a = scaler(AutoscalerConfig {
                usage_scheme: scheme,
                window_ms: 30 * S,
                scale_out_threshold_percent: 95,
                scale_in_threshold_percent: 10,
                ..config()
            });
            // 25%, 75%, 50%, then the first sample leaves the window.
            tick(&mut a, 0, &snapshot(10, 20));
            tick(&mut a, 10 * S, &snapshot(10, 60));
            tick(&mut a, 20 * S, &snapshot(10, 40));
            let d = tick(&mut a, 30 * S, &snapshot(10, 40));
            assert_eq!(d.usage_bp, Some(expected), "{scheme}");
            assert!(d.actions.is_empty());
        }
    }

    #[test]
    fn scale_out_waits_out_its_grace_period_then_cancels_leftover_requests() {
        let mut a = scaler(config());
        let high = snapshot(10, 72); // 90%
        let d = tick(&mut a, 0, &high);
        assert_eq!(d.actions, vec![RequestWorkers { count: 1 }]);
        // During the 300 s cooldown: no further request, however high.
        for t in (10..300).step_by(10) {
            let d = tick(
                &mut a,
                t * S,
                &ClusterSnapshot {
                    requested_workers: 1,
                    ..high.clone()
                },
            );
            assert!(d.actions.is_empty(), "at {t} s: {:?}", d.actions);
            assert_eq!(d.state, ScaleState::ScaleOut);
        }
        // Grace over, the worker never came: withdraw it and, usage being
        // still high, scale out again.
        let d = tick(
            &mut a,
            300 * S,
            &ClusterSnapshot {
                requested_workers: 1,
                ..high.clone()
            },
        );
        assert_eq!(
            d.actions,
            vec![CancelRequests { count: 1 }, RequestWorkers { count: 1 }]
        );
        assert_eq!(d.state, ScaleState::ScaleOut);
    }

    #[test]
    fn scale_in_waits_after_scale_out_and_releases_the_least_used_nodes() {
        let mut a = scaler(AutoscalerConfig {
            window_ms: 10 * S,
            ..config()
        });
        tick(&mut a, 0, &snapshot(10, 72));
        assert_eq!(a.state(), ScaleState::ScaleOut);
        // Usage drops to 20%. SCALE_OUT ends at 300 s; ScaleInDelayAfterScaleOut
        // (60 s) must pass before a scale-in.
        let low = snapshot(11, 16);
        for t in (300..360).step_by(10) {
            let d = tick(&mut a, t * S, &low);
            assert!(d.actions.is_empty(), "at {t} s");
            assert_eq!(d.state, ScaleState::Stable);
        }
        let d = tick(&mut a, 360 * S, &low);
        // One node (the default decrement), the least used: node05 (one
        // worker, no attempts) before node02..04 (empty, two workers).
        assert_eq!(
            d.actions,
            vec![ReleaseNodes {
                hosts: vec!["node05".into()],
                wait_for_active_dags: true
            }]
        );
        assert_eq!(d.state, ScaleState::ScaleIn);
        assert!(
            !a.allows_new_workers(),
            "nothing new until the scale-in completes"
        );
        // Cooldown of 300 s: no other decision, however low or high.
        let d = tick(&mut a, 400 * S, &snapshot(10, 80));
        assert!(d.actions.is_empty());
        assert_eq!(
            a.releasing_hosts(),
            Vec::<String>::new(),
            "node05 has left the snapshot"
        );
        let d = tick(&mut a, 660 * S, &snapshot(10, 80));
        assert_eq!(d.actions, vec![RequestWorkers { count: 1 }]);
        assert!(a.allows_new_workers());
    }

    #[test]
    fn scale_in_keeps_the_minimum_number_of_hosts() {
        let mut a = scaler(AutoscalerConfig {
            scale_in_min_hosts: 2,
            scale_in_decrement_hosts: 5,
            ..config()
        });
        let d = tick(&mut a, 0, &snapshot(6, 0));
        // Three nodes, keep two: release one.
        assert_eq!(
            d.actions,
            vec![ReleaseNodes {
                hosts: vec!["node00".into()],
                wait_for_active_dags: true
            }]
        );
        let mut b = scaler(AutoscalerConfig {
            scale_in_min_hosts: 3,
            ..config()
        });
        assert!(tick(&mut b, 0, &snapshot(6, 0)).actions.is_empty());
    }

    #[test]
    fn zero_step_keys_compute_counts_from_the_distance_to_the_threshold() {
        let mut a = scaler(AutoscalerConfig {
            scale_out_increment_workers: 0,
            scale_in_decrement_hosts: 0,
            scale_in_wait_dag_finished: false,
            ..config()
        });
        // 10 workers at 90% with an 80% threshold: ceil(10 * 90 / 80) - 10 = 2.
        let d = tick(&mut a, 0, &snapshot(10, 72));
        assert_eq!(d.actions, vec![RequestWorkers { count: 2 }]);
        // 20% with a 50% threshold: keep ceil(10 * 20 / 50) = 4 workers,
        // so 6 are surplus: the three least used nodes of two workers each
        // (node00 runs all the attempts).
        let mut b = scaler(AutoscalerConfig {
            scale_out_increment_workers: 0,
            scale_in_decrement_hosts: 0,
            scale_in_wait_dag_finished: false,
            ..config()
        });
        let d = tick(&mut b, 0, &snapshot(10, 16));
        assert_eq!(
            d.actions,
            vec![ReleaseNodes {
                hosts: vec!["node01".into(), "node02".into(), "node03".into()],
                wait_for_active_dags: false
            }]
        );
    }

    #[test]
    fn caps_on_total_memory_and_cores_limit_requests() {
        let mut a = scaler(AutoscalerConfig {
            scale_out_increment_workers: 5,
            max_total_memory_mb: 12 * 32 * GB,
            ..config()
        });
        let snap = ClusterSnapshot {
            requested_workers: 0,
            ..snapshot(10, 72)
        };
        assert_eq!(
            tick(&mut a, 0, &snap).actions,
            vec![RequestWorkers { count: 2 }]
        );
        let mut b = scaler(AutoscalerConfig {
            max_total_vcores: 80,
            ..config()
        });
        let d = tick(&mut b, 0, &snap);
        assert!(d.actions.is_empty());
        assert_eq!(d.limited_by, Some("mr3.k8s.worker.total.max.cpu.cores"));
        assert_eq!(d.state, ScaleState::Stable);
        assert_eq!(
            b.worker_headroom(&snap),
            (0, "mr3.k8s.worker.total.max.cpu.cores")
        );
    }

    #[test]
    fn caps_hold_over_the_workers_of_every_group() {
        // Caps of 12 workers of 32 GB / 8 cores. This group runs 10; other
        // groups run or have requested one more worker's worth.
        let caps = AutoscalerConfig {
            scale_out_increment_workers: 5,
            max_total_memory_mb: 12 * 32 * GB,
            ..config()
        };
        let snap = snapshot(10, 72);
        let others = WorkerTotals::of(1, Resource::new(32 * GB, 8));
        let all = WorkerTotals::of(10, snap.worker_resource).plus(others);
        let mut a = scaler(caps.clone());
        let d = a.tick_with_totals(0, &snap, all).expect("tick");
        assert_eq!(d.actions, vec![RequestWorkers { count: 1 }]);
        // The same group alone would have room for two.
        let mut b = scaler(caps.clone());
        assert_eq!(
            tick(&mut b, 0, &snap).actions,
            vec![RequestWorkers { count: 2 }]
        );
        // Other groups holding the rest of the memory leave nothing.
        let full = WorkerTotals::of(10, snap.worker_resource)
            .plus(WorkerTotals::of(8, Resource::new(16 * GB, 1)));
        let mut c = scaler(caps.clone());
        let d = c.tick_with_totals(0, &snap, full).expect("tick");
        assert!(d.actions.is_empty(), "{:?}", d.actions);
        assert_eq!(d.limited_by, Some("mr3.k8s.worker.total.max.memory.gb"));
        assert_eq!(d.state, ScaleState::Stable);
        assert_eq!(
            c.worker_headroom_with_totals(&snap, full),
            (0, "mr3.k8s.worker.total.max.memory.gb")
        );
        // Totals below the group's own figures are raised to them.
        assert_eq!(
            c.worker_headroom_with_totals(&snap, WorkerTotals::default()),
            c.worker_headroom(&snap)
        );
        // The initial request of an empty group is cut the same way.
        let mut e = scaler(AutoscalerConfig {
            scale_out_initial_workers: 4,
            ..caps
        });
        let empty = ClusterSnapshot {
            worker_resource: Resource::new(32 * GB, 8),
            pending_tasks: 10,
            ..ClusterSnapshot::default()
        };
        let d = e
            .tick_with_totals(0, &empty, WorkerTotals::of(9, Resource::new(32 * GB, 8)))
            .expect("tick");
        assert_eq!(d.actions, vec![RequestWorkers { count: 3 }]);
    }

    #[test]
    fn requests_cancelled_at_the_end_of_a_scale_out_leave_room_under_the_caps() {
        let mut a = scaler(AutoscalerConfig {
            scale_out_increment_workers: 2,
            max_total_memory_mb: 13 * 32 * GB,
            ..config()
        });
        let each = Resource::new(32 * GB, 8);
        let snap = snapshot(10, 72);
        let d = a
            .tick_with_totals(0, &snap, WorkerTotals::of(10, each))
            .expect("tick");
        assert_eq!(d.actions, vec![RequestWorkers { count: 2 }]);
        // Neither came; another group took one worker's worth meanwhile.
        let waiting = ClusterSnapshot {
            requested_workers: 2,
            ..snap
        };
        let d = a
            .tick_with_totals(300 * S, &waiting, WorkerTotals::of(13, each))
            .expect("tick");
        assert_eq!(
            d.actions,
            vec![CancelRequests { count: 2 }, RequestWorkers { count: 2 }]
        );
    }

    #[test]
    fn scale_in_completes_only_once_the_released_nodes_are_empty() {
        let mut a = scaler(AutoscalerConfig {
            scale_in_grace_ms: 30 * S,
            window_ms: 10 * S,
            ..config()
        });
        // Three nodes of two workers, nothing running: release node00.
        let idle = snapshot(6, 0);
        let d = tick(&mut a, 0, &idle);
        assert_eq!(
            d.actions,
            vec![ReleaseNodes {
                hosts: vec!["node00".into()],
                wait_for_active_dags: true
            }]
        );
        assert_eq!(a.releasing_hosts(), vec!["node00".to_string()]);
        assert!(a.is_releasing("node00") && !a.is_releasing("node01"));
        // The grace period passes, but node00's workers are still finishing
        // the active DAGs: the scale-in goes on, nothing is requested
        // however high the usage.
        let mut busy = snapshot(6, 48);
        for t in (10..=120).step_by(10) {
            let d = tick(&mut a, t * S, &busy);
            assert!(d.actions.is_empty(), "at {t} s: {:?}", d.actions);
            assert_eq!(d.state, ScaleState::ScaleIn, "at {t} s");
            assert!(!a.allows_new_workers());
        }
        // One of node00's two workers exits: still not empty.
        busy.nodes[0].workers = 1;
        busy.workers = 5;
        assert_eq!(tick(&mut a, 130 * S, &busy).state, ScaleState::ScaleIn);
        // A node listed with no worker counts as empty.
        busy.nodes[0].workers = 0;
        busy.workers = 4;
        busy.task_capacity_mb = 4 * 32 * GB;
        busy.task_used_mb = 30 * 4 * GB; // 93.75%
        let d = tick(&mut a, 140 * S, &busy);
        assert_eq!(d.state, ScaleState::ScaleOut, "STABLE, then a scale-out");
        assert_eq!(d.actions, vec![RequestWorkers { count: 1 }]);
        assert_eq!(a.releasing_hosts(), Vec::<String>::new());
        assert_eq!(a.last_scale_out_cause(), Some(ScaleOutCause::Usage));
    }

    #[test]
    fn a_scale_in_whose_nodes_empty_early_still_waits_out_its_grace_period() {
        let mut a = scaler(AutoscalerConfig {
            scale_in_grace_ms: 30 * S,
            window_ms: 10 * S,
            ..config()
        });
        tick(&mut a, 0, &snapshot(6, 0));
        assert_eq!(a.state(), ScaleState::ScaleIn);
        // node00 is gone at once; usage is high, yet the grace period holds.
        let mut busy = snapshot(6, 48);
        busy.nodes.remove(0);
        busy.workers = 4;
        busy.task_capacity_mb = 4 * 32 * GB;
        busy.task_used_mb = 30 * 4 * GB; // 93.75%
        for t in [10, 20] {
            let d = tick(&mut a, t * S, &busy);
            assert!(d.actions.is_empty());
            assert_eq!(d.state, ScaleState::ScaleIn);
        }
        let d = tick(&mut a, 30 * S, &busy);
        assert_eq!(d.actions, vec![RequestWorkers { count: 1 }]);
    }

    #[test]
    fn initial_workers_start_an_empty_group_with_waiting_tasks() {
        let mut a = scaler(AutoscalerConfig {
            scale_out_initial_workers: 4,
            ..config()
        });
        let empty = ClusterSnapshot {
            worker_resource: Resource::new(32 * GB, 8),
            pending_tasks: 10,
            ..ClusterSnapshot::default()
        };
        let d = tick(&mut a, 0, &empty);
        assert_eq!(d.actions, vec![RequestWorkers { count: 4 }]);
        assert_eq!(a.last_scale_out_cause(), Some(ScaleOutCause::Initial));
        // Not used when set to 0 (the default).
        let mut b = scaler(config());
        assert!(tick(&mut b, 0, &empty).actions.is_empty());
    }

    #[test]
    fn disabled_does_nothing_and_time_cannot_go_back() {
        let mut a = scaler(AutoscalerConfig::default());
        let d = tick(&mut a, 0, &snapshot(10, 80));
        assert!(!d.sampled && d.actions.is_empty());
        a.tick(5, &snapshot(1, 1)).expect("tick");
        assert_eq!(
            a.tick(4, &snapshot(1, 1)).expect_err("must be refused"),
            CoreError::TimeWentBackwards {
                now_ms: 4,
                last_ms: 5
            }
        );
    }
}
