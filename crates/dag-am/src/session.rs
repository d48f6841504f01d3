//! The AM's driver of the three cores: it turns real events (DAGs
//! submitted, workers registering, attempts finishing, containers granted
//! and completed, timers) into core inputs, and the cores' decisions into
//! [`Effect`]s that the AM's I/O layer ([`crate::am`]) carries out:
//! messages to workers, container requests, launches and releases.
//!
//! The session makes no decision of its own about which task runs where,
//! when a worker stops or moves, or when to scale: those come from the
//! [`TaskScheduler`] of each ContainerGroup, the [`ContainerScheduler`] and
//! the per-group [`Autoscaler`]. What the session adds is bookkeeping the
//! cores leave to their driver: where each task's output lives (so a
//! consumer knows what to fetch), which container belongs to which group,
//! why a worker is draining, and the history of finished DAGs.
//!
//! Like the cores, the session does no I/O and reads no clock: every
//! method takes `now_ms`, so its tests drive it step by step.

use std::collections::{BTreeMap, BTreeSet};

use spindle_dag::autoscaler::{
    AutoscaleAction, Autoscaler, ClusterSnapshot, NodeUsage, ScaleOutCause, WorkerTotals,
};
use spindle_dag::config::{ContainerSchedulerScheme, DagConfig};
use spindle_dag::container_scheduler::{
    ContainerAction, ContainerScheduler, GroupSpec, Input as CsInput,
};
use spindle_dag::dag::{Dag, EdgeKind};
use spindle_dag::task_scheduler::{
    AttemptOutcome, DagEvent, Input as TsInput, TaskDecisions, TaskScheduler,
};
use spindle_dag::{AttemptId, DagId, Resource, WorkerId};
use tracing::{error, info, warn};

use crate::dagfile::DagFile;
use crate::protocol::{
    AmToWorker, AttemptRef, Counters, DagStatusReport, GroupStatus, StatusReport, TaskAssignment,
    TaskInput, WireOutcome, WorkerStatus,
};

/// Spindle-only keys of the DAG AM (MR3 documents none for these).
pub mod keys {
    /// Memory of each worker of the session's default ContainerGroup, MB.
    pub const WORKER_MEMORY_MB: &str = "spindle.dag.worker.memory.mb";
    /// Virtual cores of each worker of the default group.
    pub const WORKER_VCORES: &str = "spindle.dag.worker.vcores";
    /// Name of the default group.
    pub const DEFAULT_GROUP: &str = "spindle.dag.group.name";
    /// Most workers one group starts on demand (autoscaling off).
    pub const GROUP_MAX_WORKERS: &str = "spindle.dag.group.max.workers";
    /// Finished DAGs kept for `spindle dag status`.
    pub const HISTORY: &str = "spindle.dag.history.size";
    /// Workers of a group that may fail to start in a row before the
    /// group's active DAGs are killed and it stops asking for more.
    pub const MAX_START_FAILURES: &str = "spindle.dag.worker.max.start.failures";
}

/// The owner of the default group: it lives as long as the session.
const SESSION_OWNER: &str = "session";

/// The session's own settings, besides the cores'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    pub cores: DagConfig,
    pub default_group: String,
    pub worker_resource: Resource,
    pub group_max_workers: u32,
    pub history: usize,
    pub max_start_failures: u32,
}

impl SessionConfig {
    /// Reads the cores' keys (MR3 names) and the session's own from `map`.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<SessionConfig, String> {
        let cores = DagConfig::from_map(map).map_err(|e| e.to_string())?;
        let uint = |key: &str, default: u64, min: u64, max: u64| -> Result<u64, String> {
            match map.get(key).map(|v| v.trim()) {
                None => Ok(default),
                Some(v) => match v.parse::<u64>() {
                    Ok(n) if (min..=max).contains(&n) => Ok(n),
                    _ => Err(format!(
                        "{key} = '{v}': expected an integer from {min} to {max}"
                    )),
                },
            }
        };
        let memory = uint(keys::WORKER_MEMORY_MB, 1024, 1, 1 << 30)?;
        let vcores = uint(keys::WORKER_VCORES, 1, 1, 1 << 16)? as u32;
        let group_max_workers = uint(keys::GROUP_MAX_WORKERS, 16, 1, 100_000)? as u32;
        let history = uint(keys::HISTORY, 1000, 1, 1_000_000)? as usize;
        let max_start_failures = uint(keys::MAX_START_FAILURES, 5, 1, 1_000_000)? as u32;
        let default_group = map
            .get(keys::DEFAULT_GROUP)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| cores.task.group_name.clone());
        if default_group.is_empty() {
            return Err(format!("{} must not be empty", keys::DEFAULT_GROUP));
        }
        Ok(SessionConfig {
            cores,
            default_group,
            worker_resource: Resource::new(memory, vcores),
            group_max_workers,
            history,
            max_start_failures,
        })
    }
}

/// What the I/O layer must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Send a message to a registered worker.
    Send {
        worker: WorkerId,
        message: AmToWorker,
    },
    /// Add one container request to the scheduler's table.
    RequestContainer { priority: i32, resource: Resource },
    /// Withdraw one outstanding container request.
    CancelContainerRequest { priority: i32, resource: Resource },
    /// Start a worker in this granted container.
    LaunchWorker {
        container: WorkerId,
        group: String,
        resource: Resource,
    },
    /// Give the container back to the ResourceManager.
    ReleaseContainer { container: WorkerId },
}

/// Why a worker drains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DrainReason {
    /// The ContainerScheduler stops it gracefully to recycle it.
    Recycle,
    /// Scale-in emptied its node.
    ScaleIn,
}

struct Group {
    spec: GroupSpec,
    priority: i32,
    ts: TaskScheduler,
    autoscaler: Option<Autoscaler>,
    /// Requests made for the ContainerScheduler's StartWorker and not yet
    /// granted.
    outstanding_cs: u32,
    /// Requests made by autoscaling and not yet granted. They are the
    /// group's demand in the ContainerScheduler: a worker it recycles to
    /// the group takes the place of one.
    outstanding_auto: u32,
    /// Of those, the ones decided but not yet sent to YARN: while the
    /// autoscaler's request is being served from recycled workers first.
    auto_unsent: u32,
    /// Active DAGs per client (ownership of the group).
    owners: BTreeMap<String, u32>,
    status_line: String,
    usage_bp: Option<u64>,
    /// Workers that failed to start since one last registered.
    start_failures: u32,
    /// StartWorker decisions held back while workers of the group cannot
    /// start; carried out once a new DAG gives them another chance. (A
    /// group with an autoscaler makes no request for StartWorker: its
    /// demand is its autoscaler's outstanding requests, which alone holds
    /// requests back during a scale-in.)
    deferred_starts: u32,
    /// The cap on all workers that last cut the group's demand, for
    /// logging when it starts and stops binding.
    capped_by: Option<&'static str>,
}

impl Group {
    fn starts_blocked(&self, limit: u32) -> bool {
        self.start_failures >= limit
    }

    /// Requests made or held for the group, not yet granted.
    fn requests(&self) -> u32 {
        self.outstanding_cs + self.outstanding_auto + self.deferred_starts
    }
}

struct WorkerEntry {
    host: String,
    /// The worker's size: what its container holds.
    resource: Resource,
    http_addr: String,
    group: Option<String>,
    drain: Option<DrainReason>,
    last_idle: Option<bool>,
}

struct Launching {
    group: String,
    host: String,
    resource: Resource,
    via_cs: bool,
}

struct DagRecord {
    name: String,
    client: String,
    group: String,
    queue: String,
    dag: Dag,
    final_state: Option<(String, Option<String>)>,
    submitted_ms: u64,
    finished_ms: Option<u64>,
    total_tasks: u64,
    succeeded_tasks: u64,
    /// Where each finished task's output is: (vertex, task) -> worker.
    outputs: BTreeMap<(u32, u32), WorkerId>,
}

/// The driver. See the [module docs](self).
pub struct Session {
    config: SessionConfig,
    last_ms: u64,
    cs: ContainerScheduler,
    groups: BTreeMap<String, Group>,
    by_priority: BTreeMap<i32, String>,
    next_priority: i32,
    workers: BTreeMap<WorkerId, WorkerEntry>,
    launching: BTreeMap<WorkerId, Launching>,
    /// Containers this session let go of (released or told to stop); their
    /// completion is expected and not a loss.
    retired: BTreeSet<WorkerId>,
    dags: BTreeMap<DagId, DagRecord>,
    finished_order: Vec<DagId>,
    next_dag: u64,
    attempts: BTreeMap<AttemptId, WorkerId>,
    counters: Counters,
    effects: Vec<Effect>,
    stopping: bool,
}

impl Session {
    /// A session with its default ContainerGroup registered.
    pub fn new(config: SessionConfig) -> Result<Session, String> {
        let cs =
            ContainerScheduler::new(config.cores.container.clone()).map_err(|e| e.to_string())?;
        let mut s = Session {
            config,
            last_ms: 0,
            cs,
            groups: BTreeMap::new(),
            by_priority: BTreeMap::new(),
            next_priority: 1,
            workers: BTreeMap::new(),
            launching: BTreeMap::new(),
            retired: BTreeSet::new(),
            dags: BTreeMap::new(),
            finished_order: Vec::new(),
            next_dag: 1,
            attempts: BTreeMap::new(),
            counters: Counters::default(),
            effects: Vec::new(),
            stopping: false,
        };
        let spec = GroupSpec::new(s.config.default_group.clone(), s.config.worker_resource);
        s.ensure_group(0, SESSION_OWNER, spec)?;
        Ok(s)
    }

    /// Effects decided since the last call, in order.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    fn now(&mut self, now_ms: u64) -> u64 {
        self.last_ms = self.last_ms.max(now_ms);
        self.last_ms
    }

    // ----- groups -----

    fn ensure_group(&mut self, now: u64, client: &str, spec: GroupSpec) -> Result<(), String> {
        let actions = self
            .cs
            .handle(
                now,
                CsInput::RegisterGroup {
                    client: client.to_string(),
                    spec: spec.clone(),
                },
            )
            .map_err(|e| e.to_string())?;
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
            let status_line = ts.status_line();
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
                    status_line,
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

    fn ts_input(&mut self, now: u64, group: &str, input: TsInput) {
        let Some(g) = self.groups.get_mut(group) else {
            warn!(group, ?input, "input for a group that no longer exists");
            return;
        };
        match g.ts.handle(now, input) {
            Ok(d) => self.apply_task_decisions(now, group, d),
            Err(e) => error!(group, error = %e, "the task scheduler refused an input"),
        }
    }

    fn cs_input(&mut self, now: u64, input: CsInput) {
        match self.cs.handle(now, input) {
            Ok(d) => self.apply_cs(now, d.actions),
            Err(e) => error!(error = %e, "the container scheduler refused an input"),
        }
    }

    // ----- events -----

    /// A client submits a DAG. Returns its id, or why it was refused.
    pub fn submit(
        &mut self,
        now_ms: u64,
        client: &str,
        file: &DagFile,
        queue: Option<String>,
    ) -> Result<DagId, String> {
        let now = self.now(now_ms);
        if self.stopping {
            return Err("the session is stopping".into());
        }
        let group_spec = match &file.group {
            None => GroupSpec::new(
                self.config.default_group.clone(),
                self.config.worker_resource,
            ),
            Some(g) => g.to_spec(),
        };
        let spec = file.to_spec();
        let dag = spec
            .validate(&self.config.cores.task.limits.dag)
            .map_err(|e| format!("DAG '{}' rejected: {e}", file.name))?;
        for v in dag.vertices() {
            if !v.resource.fits_in(&group_spec.worker_resource) {
                return Err(format!(
                    "vertex '{}' needs {} per task, more than a worker of ContainerGroup '{}' has ({})",
                    v.name, v.resource, group_spec.name, group_spec.worker_resource
                ));
            }
        }
        let group = group_spec.name.clone();
        self.ensure_group(now, client, group_spec)?;
        let queue = queue.or_else(|| file.queue.clone());
        let id = DagId(self.next_dag);
        let result = match self.groups.get_mut(&group) {
            Some(g) => g.ts.handle(
                now,
                TsInput::SubmitDag {
                    id,
                    client: client.to_string(),
                    queue: queue.clone(),
                    spec,
                },
            ),
            None => return Err(format!("ContainerGroup '{group}' is gone")),
        };
        let decisions = match result {
            Ok(d) => d,
            Err(e) => {
                self.maybe_release_group(now, client, &group);
                return Err(e.to_string());
            }
        };
        self.next_dag += 1;
        let queue_name = self
            .groups
            .get(&group)
            .and_then(|g| g.ts.dag_report(id))
            .map(|r| r.queue)
            .unwrap_or_default();
        if let Some(g) = self.groups.get_mut(&group) {
            *g.owners.entry(client.to_string()).or_default() += 1;
            // A new DAG gets fresh attempts at starting workers.
            g.start_failures = 0;
        }
        info!(dag = %id, name = %file.name, %client, %group, queue = %queue_name, "DAG submitted");
        self.dags.insert(
            id,
            DagRecord {
                name: file.name.clone(),
                client: client.to_string(),
                group: group.clone(),
                queue: queue_name,
                total_tasks: dag.total_tasks(),
                dag,
                final_state: None,
                submitted_ms: now,
                finished_ms: None,
                succeeded_tasks: 0,
                outputs: BTreeMap::new(),
            },
        );
        self.apply_task_decisions(now, &group, decisions);
        self.reconcile(now);
        Ok(id)
    }

    /// A client kills a DAG.
    pub fn kill(&mut self, now_ms: u64, dag: DagId, client: &str) -> Result<(), String> {
        let now = self.now(now_ms);
        let Some(record) = self.dags.get(&dag) else {
            return Err(format!("no DAG {dag} in this session"));
        };
        if record.final_state.is_some() {
            return Err(format!("DAG {dag} has already ended"));
        }
        let group = record.group.clone();
        self.ts_input(
            now,
            &group,
            TsInput::KillDag {
                id: dag,
                reason: format!("killed by {client}"),
            },
        );
        self.reconcile(now);
        Ok(())
    }

    /// A granted container, matched to the request of `priority`.
    pub fn container_allocated(
        &mut self,
        now_ms: u64,
        container: WorkerId,
        host: String,
        priority: i32,
    ) {
        let now = self.now(now_ms);
        let group = self.by_priority.get(&priority).cloned();
        let Some((group, g)) = group.and_then(|n| self.groups.get_mut(&n).map(|g| (n, g))) else {
            info!(%container, priority, "releasing a container for a group that is gone");
            self.retired.insert(container.clone());
            self.effects.push(Effect::ReleaseContainer { container });
            return;
        };
        if self.stopping {
            self.retired.insert(container.clone());
            self.effects.push(Effect::ReleaseContainer { container });
            return;
        }
        let via_cs = if g.outstanding_cs > 0 {
            g.outstanding_cs -= 1;
            true
        } else {
            g.outstanding_auto = g.outstanding_auto.saturating_sub(1);
            false
        };
        let resource = g.spec.worker_resource;
        info!(%container, %host, %group, "starting a worker");
        self.launching.insert(
            container.clone(),
            Launching {
                group: group.clone(),
                host,
                resource,
                via_cs,
            },
        );
        self.effects.push(Effect::LaunchWorker {
            container,
            group: group.clone(),
            resource,
        });
        self.sync_autoscaled_starts(now, &group);
        self.reconcile(now);
    }

    /// The NodeManager refused to start the worker.
    pub fn launch_failed(&mut self, now_ms: u64, container: &WorkerId, error: &str) {
        let now = self.now(now_ms);
        warn!(%container, error, "a worker could not be started");
        if let Some(l) = self.launching.remove(container) {
            self.retired.insert(container.clone());
            self.effects.push(Effect::ReleaseContainer {
                container: container.clone(),
            });
            self.start_failed(now, l, error);
        }
        self.reconcile(now);
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
            keys::MAX_START_FAILURES
        );
        error!("{reason}");
        let active = g.ts.active_dags();
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

    /// A worker connected and registered. Returns an error (and the
    /// connection should be closed) if no such worker was started.
    pub fn worker_registered(
        &mut self,
        now_ms: u64,
        worker: &WorkerId,
        http_addr: String,
    ) -> Result<(), String> {
        let now = self.now(now_ms);
        if self.workers.contains_key(worker) {
            return Err(format!("worker {worker} is already registered"));
        }
        let Some(l) = self.launching.remove(worker) else {
            return Err(format!("no worker {worker} was started by this session"));
        };
        let Some(g) = self.groups.get(&l.group) else {
            self.retire(worker, "its ContainerGroup is gone");
            return Ok(());
        };
        let capacity = g.spec.worker_resource;
        let on_released_node = !l.via_cs
            && g.autoscaler
                .as_ref()
                .is_some_and(|a| a.is_releasing(&l.host));
        if let Some(g) = self.groups.get_mut(&l.group) {
            g.start_failures = 0;
        }
        info!(%worker, host = %l.host, %http_addr, group = %l.group, "worker registered");
        self.counters.workers_started += 1;
        if on_released_node {
            // Asked for before the scale-in and granted on a node it is
            // emptying: it holds no data yet, so it goes at once.
            info!(%worker, host = %l.host, group = %l.group, "worker arrived on a node released by scale-in");
            self.counters.scale_in_released += 1;
            self.workers.insert(
                worker.clone(),
                WorkerEntry {
                    host: l.host,
                    resource: l.resource,
                    http_addr,
                    group: None,
                    drain: None,
                    last_idle: None,
                },
            );
            self.retire(worker, "its node was released by scale-in");
            self.reconcile(now);
            return Ok(());
        }
        self.workers.insert(
            worker.clone(),
            WorkerEntry {
                host: l.host,
                resource: l.resource,
                http_addr,
                group: Some(l.group.clone()),
                drain: None,
                last_idle: None,
            },
        );
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
            self.ts_input(
                now,
                &group,
                TsInput::Offer {
                    worker: worker.clone(),
                },
            );
        }
        self.reconcile(now);
        Ok(())
    }

    /// A worker reports the end of an attempt.
    pub fn attempt_finished(
        &mut self,
        now_ms: u64,
        worker: &WorkerId,
        attempt: AttemptRef,
        outcome: WireOutcome,
    ) {
        let now = self.now(now_ms);
        let id = attempt.to_id();
        match self.attempts.get(&id) {
            Some(w) if w == worker => {}
            _ => {
                warn!(%worker, %attempt, "ignoring the end of an attempt the worker does not run");
                return;
            }
        }
        self.attempts.remove(&id);
        let Some(record) = self.dags.get_mut(&id.task.dag) else {
            return;
        };
        let group = record.group.clone();
        let outcome = match outcome {
            WireOutcome::Succeeded => {
                if record.final_state.is_none() {
                    record
                        .outputs
                        .insert((id.task.vertex, id.task.task), worker.clone());
                }
                AttemptOutcome::Succeeded
            }
            WireOutcome::Failed { reason } => {
                self.counters.attempts_failed += 1;
                warn!(%worker, %attempt, %reason, "attempt failed");
                AttemptOutcome::Failed { reason }
            }
            WireOutcome::Killed { reason } => AttemptOutcome::Killed { reason },
            // Retried without counting as a failure; if the producer's worker
            // is gone, the task scheduler makes the output again first.
            WireOutcome::InputLost { reason } => {
                self.counters.inputs_lost += 1;
                warn!(%worker, %attempt, %reason, "attempt could not fetch its input");
                AttemptOutcome::Killed {
                    reason: format!("input lost: {reason}"),
                }
            }
        };
        self.ts_input(
            now,
            &group,
            TsInput::AttemptFinished {
                attempt: id,
                outcome,
            },
        );
        if let Some(g) = self.workers.get(worker).and_then(|w| w.group.clone()) {
            self.ts_input(
                now,
                &g,
                TsInput::Offer {
                    worker: worker.clone(),
                },
            );
        }
        self.reconcile(now);
    }

    /// A worker's connection closed, or its container completed.
    pub fn worker_gone(&mut self, now_ms: u64, worker: &WorkerId, why: &str) {
        let now = self.now(now_ms);
        if let Some(l) = self.launching.remove(worker) {
            warn!(%worker, why, "a worker ended before it registered");
            self.start_failed(now, l, why);
            self.reconcile(now);
            return;
        }
        if self.retired.remove(worker) {
            // Expected: this session stopped or released it.
            self.workers.remove(worker);
            return;
        }
        let Some(entry) = self.workers.remove(worker) else {
            return;
        };
        warn!(%worker, why, "worker lost");
        self.counters.workers_lost += 1;
        if let Some(g) = entry.group {
            self.ts_input(
                now,
                &g,
                TsInput::WorkerRemoved {
                    worker: worker.clone(),
                },
            );
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
        self.effects.push(Effect::ReleaseContainer {
            container: worker.clone(),
        });
        self.reconcile(now);
    }

    /// Time passes: status lines, fair rebalancing, reserve timeouts,
    /// autoscaling.
    pub fn tick(&mut self, now_ms: u64) {
        let now = self.now(now_ms);
        let names: Vec<String> = self.groups.keys().cloned().collect();
        for g in &names {
            self.ts_input(now, g, TsInput::Tick);
        }
        self.cs_input(now, CsInput::Tick);
        for g in &names {
            self.autoscale(now, g);
        }
        self.reconcile(now);
    }

    /// The session ends: every worker is told to stop and every container
    /// released.
    pub fn stop(&mut self, reason: &str) {
        self.stopping = true;
        let workers: Vec<WorkerId> = self.workers.keys().cloned().collect();
        for w in workers {
            self.retire(&w, reason);
        }
        let launching: Vec<WorkerId> = self.launching.keys().cloned().collect();
        for c in launching {
            self.launching.remove(&c);
            self.retired.insert(c.clone());
            self.effects.push(Effect::ReleaseContainer { container: c });
        }
        for g in self.groups.values_mut() {
            for _ in 0..g.outstanding_cs + g.outstanding_auto {
                self.effects.push(Effect::CancelContainerRequest {
                    priority: g.priority,
                    resource: g.spec.worker_resource,
                });
            }
            g.outstanding_cs = 0;
            g.outstanding_auto = 0;
        }
    }

    /// Tells the worker to exit and releases its container. The caller has
    /// taken it out of the cores.
    fn retire(&mut self, worker: &WorkerId, reason: &str) {
        self.counters.workers_stopped += 1;
        self.effects.push(Effect::Send {
            worker: worker.clone(),
            message: AmToWorker::Stop {
                reason: reason.to_string(),
            },
        });
        self.effects.push(Effect::ReleaseContainer {
            container: worker.clone(),
        });
        self.retired.insert(worker.clone());
        self.workers.remove(worker);
    }

    // ----- decisions -----

    fn apply_task_decisions(&mut self, now: u64, group: &str, d: TaskDecisions) {
        if let Some(line) = d.status_line {
            info!("{line}");
            if let Some(g) = self.groups.get_mut(group) {
                g.status_line = line;
            }
        }
        for a in d.assignments {
            let Some(record) = self.dags.get(&a.attempt.task.dag) else {
                error!(attempt = %a.attempt, "an assignment for an unknown DAG");
                continue;
            };
            let vertex = a.attempt.task.vertex;
            let mut inputs = Vec::new();
            for (producer, kind) in record.dag.producers(vertex) {
                let Some(pv) = record.dag.vertex(producer) else {
                    continue;
                };
                let tasks: Vec<u32> = match kind {
                    EdgeKind::OneToOne => vec![a.attempt.task.task],
                    EdgeKind::AllToAll => (0..pv.tasks).collect(),
                };
                for t in tasks {
                    let addr = record
                        .outputs
                        .get(&(producer, t))
                        .and_then(|w| self.workers.get(w))
                        .map(|w| w.http_addr.clone());
                    let url = match addr {
                        Some(addr) => format!(
                            "http://{addr}/outputs/{}/{producer}/{t}",
                            a.attempt.task.dag.0
                        ),
                        // The worker holding it is gone: the fetch fails and
                        // the attempt is retried (or the DAG fails).
                        None => format!("unavailable://{}/{producer}/{t}", a.attempt.task.dag.0),
                    };
                    inputs.push(TaskInput {
                        vertex: pv.name.clone(),
                        task: t,
                        url,
                    });
                }
            }
            let partitions = record
                .dag
                .consumers(vertex)
                .find(|(_, k)| *k == EdgeKind::AllToAll)
                .and_then(|(c, _)| record.dag.vertex(c))
                .map(|v| v.tasks)
                .unwrap_or(0);
            let vertex_tasks = record.dag.vertex(vertex).map(|v| v.tasks).unwrap_or(0);
            let assignment = TaskAssignment {
                attempt: AttemptRef::from_id(a.attempt),
                dag_name: record.name.clone(),
                vertex: a.vertex_name.clone(),
                vertex_tasks,
                partitions,
                command: a.command,
                inputs,
                memory_mb: a.resource.memory_mb,
                vcores: a.resource.vcores,
            };
            self.counters.attempts_started += 1;
            self.attempts.insert(a.attempt, a.worker.clone());
            self.effects.push(Effect::Send {
                worker: a.worker,
                message: AmToWorker::Assign(Box::new(assignment)),
            });
        }
        for k in d.kills {
            self.effects.push(Effect::Send {
                worker: k.worker,
                message: AmToWorker::Kill {
                    attempt: AttemptRef::from_id(k.attempt),
                },
            });
        }
        for e in d.dag_events {
            self.dag_ended(now, e);
        }
        for w in d.drained_workers {
            self.drained(now, group, &w);
        }
    }

    fn dag_ended(&mut self, now: u64, event: DagEvent) {
        let (id, state, reason) = match event {
            DagEvent::Succeeded { dag } => (dag, "SUCCEEDED", None),
            DagEvent::Failed { dag, reason } => (dag, "FAILED", Some(reason)),
            DagEvent::Killed { dag, reason } => (dag, "KILLED", Some(reason)),
        };
        let Some(record) = self.dags.get_mut(&id) else {
            return;
        };
        if record.final_state.is_some() {
            return;
        }
        match &reason {
            None => info!(dag = %id, name = %record.name, "DAG {state}"),
            Some(r) => warn!(dag = %id, name = %record.name, reason = %r, "DAG {state}"),
        }
        record.succeeded_tasks = if state == "SUCCEEDED" {
            record.total_tasks
        } else {
            self.groups
                .get(&record.group)
                .and_then(|g| g.ts.dag_report(id))
                .map(|r| r.succeeded_tasks)
                .unwrap_or(record.outputs.len() as u64)
        };
        record.final_state = Some((state.to_string(), reason));
        record.finished_ms = Some(now);
        record.outputs.clear();
        let (client, group) = (record.client.clone(), record.group.clone());
        let workers: Vec<WorkerId> = self.workers.keys().cloned().collect();
        for w in workers {
            self.effects.push(Effect::Send {
                worker: w,
                message: AmToWorker::DagDone { dag: id.0 },
            });
        }
        self.finished_order.push(id);
        while self.finished_order.len() > self.config.history {
            let old = self.finished_order.remove(0);
            self.dags.remove(&old);
        }
        if let Some(g) = self.groups.get_mut(&group) {
            if let Some(n) = g.owners.get_mut(&client) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    g.owners.remove(&client);
                }
            }
        }
        self.maybe_release_group(now, &client, &group);
    }

    /// Gives up `client`'s ownership of a (non-default) group once it has
    /// no active DAG there.
    fn maybe_release_group(&mut self, now: u64, client: &str, group: &str) {
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
        info!(group, "ContainerGroup released");
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
            self.ts_input(now, group, TsInput::WorkerRemoved { worker: w });
        }
        if let Some(g) = self.groups.remove(group) {
            self.by_priority.remove(&g.priority);
            for _ in 0..g.outstanding_cs + g.outstanding_auto {
                self.effects.push(Effect::CancelContainerRequest {
                    priority: g.priority,
                    resource: g.spec.worker_resource,
                });
            }
        }
    }

    fn drained(&mut self, now: u64, group: &str, worker: &WorkerId) {
        let Some(reason) = self.workers.get(worker).and_then(|w| w.drain) else {
            return;
        };
        info!(%worker, group, ?reason, "worker drained");
        if let Some(e) = self.workers.get_mut(worker) {
            e.group = None;
            e.drain = None;
            e.last_idle = None;
        }
        self.ts_input(
            now,
            group,
            TsInput::WorkerRemoved {
                worker: worker.clone(),
            },
        );
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

    fn apply_cs(&mut self, now: u64, actions: Vec<ContainerAction>) {
        for action in actions {
            match action {
                ContainerAction::StartWorker { group } => {
                    if self.stopping {
                        continue;
                    }
                    let limit = self.config.max_start_failures;
                    let Some(g) = self.groups.get_mut(&group) else {
                        continue;
                    };
                    if g.autoscaler.is_some() {
                        // The start stands for one of the autoscaler's
                        // outstanding requests (the group's demand): it is
                        // asked of YARN already.
                        continue;
                    }
                    if !g.starts_blocked(limit) {
                        g.outstanding_cs += 1;
                        self.counters.containers_requested += 1;
                        self.effects.push(Effect::RequestContainer {
                            priority: g.priority,
                            resource: g.spec.worker_resource,
                        });
                    } else {
                        // Workers of this group cannot start. Reporting it as
                        // failed would make the container scheduler ask again
                        // at once; hold it instead.
                        g.deferred_starts += 1;
                    }
                }
                ContainerAction::CancelWorkerStart { group } => {
                    if let Some(g) = self.groups.get_mut(&group) {
                        if g.autoscaler.is_some() {
                            // The recycled worker has taken the place of an
                            // autoscaler request already (ReassignWorker).
                        } else if g.deferred_starts > 0 {
                            g.deferred_starts -= 1;
                        } else if g.outstanding_cs > 0 {
                            g.outstanding_cs -= 1;
                            self.counters.requests_cancelled += 1;
                            self.effects.push(Effect::CancelContainerRequest {
                                priority: g.priority,
                                resource: g.spec.worker_resource,
                            });
                        }
                    }
                }
                ContainerAction::StopWorkerGracefully { worker, group } => {
                    let Some(e) = self.workers.get_mut(&worker) else {
                        continue;
                    };
                    if e.drain.is_none() {
                        e.drain = Some(DrainReason::Recycle);
                    }
                    self.ts_input(now, &group, TsInput::DrainWorker { worker });
                }
                ContainerAction::ReassignWorker { worker, from, to } => {
                    let Some(capacity) = self.groups.get(&to).map(|g| g.spec.worker_resource)
                    else {
                        continue;
                    };
                    let current = self.workers.get(&worker).and_then(|w| w.group.clone());
                    if let Some(old) = current.or(from) {
                        if self
                            .groups
                            .get(&old)
                            .is_some_and(|g| g.ts.worker_report(&worker).is_some())
                        {
                            self.ts_input(
                                now,
                                &old,
                                TsInput::WorkerRemoved {
                                    worker: worker.clone(),
                                },
                            );
                        }
                    }
                    let Some(e) = self.workers.get_mut(&worker) else {
                        continue;
                    };
                    info!(%worker, group = %to, "worker moves to another ContainerGroup");
                    e.group = Some(to.clone());
                    e.drain = None;
                    e.last_idle = None;
                    self.counters.workers_recycled += 1;
                    if let Some(g) = self.groups.get_mut(&to) {
                        if g.autoscaler.is_some() && g.outstanding_auto > 0 {
                            // The autoscaler asked for a worker; this one
                            // takes the place of its request.
                            g.outstanding_auto -= 1;
                            if g.auto_unsent > 0 {
                                g.auto_unsent -= 1;
                            } else {
                                info!(%worker, group = %to, "a recycled worker takes the place of a worker request");
                                self.counters.requests_cancelled += 1;
                                self.effects.push(Effect::CancelContainerRequest {
                                    priority: g.priority,
                                    resource: g.spec.worker_resource,
                                });
                            }
                        }
                    }
                    self.effects.push(Effect::Send {
                        worker: worker.clone(),
                        message: AmToWorker::Reinit { group: to.clone() },
                    });
                    self.ts_input(
                        now,
                        &to,
                        TsInput::WorkerAdded {
                            worker: worker.clone(),
                            capacity,
                        },
                    );
                    self.ts_input(now, &to, TsInput::Offer { worker });
                }
                ContainerAction::TerminateWorker { worker, reason } => {
                    info!(%worker, %reason, "stopping worker");
                    let group = self.workers.get(&worker).and_then(|w| w.group.clone());
                    if let Some(g) = group {
                        if let Some(e) = self.workers.get_mut(&worker) {
                            e.group = None;
                        }
                        self.ts_input(
                            now,
                            &g,
                            TsInput::WorkerRemoved {
                                worker: worker.clone(),
                            },
                        );
                    }
                    if self.workers.contains_key(&worker) {
                        self.retire(&worker, &reason);
                    }
                }
            }
        }
    }

    /// Memory and cores of the workers this session runs or is starting,
    /// in every group and in the reserve (draining ones included: their
    /// containers are held until they exit).
    fn running_totals(&self) -> WorkerTotals {
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
    fn requested_totals(&self) -> WorkerTotals {
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
    fn sync_autoscaled_starts(&mut self, now: u64, group: &str) {
        let Some(g) = self.groups.get(group) else {
            return;
        };
        if g.autoscaler.is_none() {
            return;
        }
        let starting = self.cs.group_report(group).map_or(0, |r| r.starting);
        for _ in g.outstanding_auto..starting {
            self.cs_input(
                now,
                CsInput::WorkerStartWithdrawn {
                    group: group.to_string(),
                },
            );
        }
    }

    fn autoscale(&mut self, now: u64, group: &str) {
        let Some(g) = self.groups.get(group) else {
            return;
        };
        if g.autoscaler.is_none() {
            return;
        }
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
        let snapshot = ClusterSnapshot {
            workers,
            worker_resource: g.spec.worker_resource,
            task_capacity_mb: g.ts.capacity().memory_mb,
            task_used_mb: g.ts.used().memory_mb,
            pending_tasks: g.ts.pending_demand().0,
            requested_workers: g.outstanding_cs + g.outstanding_auto + launching,
            nodes: nodes.into_values().collect(),
        };
        // The caps hold over the workers of every group; those in the
        // reserve of the group's kind are there for the taking.
        let totals = self.committed_totals_for(group, snapshot.worker_resource);
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let Some(a) = g.autoscaler.as_mut() else {
            return;
        };
        let decision = match a.tick_with_totals(now, &snapshot, totals) {
            Ok(d) => d,
            Err(e) => {
                error!(group, error = %e, "the autoscaler refused a tick");
                return;
            }
        };
        if decision.sampled {
            g.usage_bp = decision.usage_bp;
        }
        for action in decision.actions {
            match action {
                AutoscaleAction::RequestWorkers { count } => {
                    let limit = self.config.max_start_failures;
                    // The autoscaler counted every request it saw as
                    // withdrawn at the end of a scale-out, but containers
                    // already granted cannot be: hold the count to what
                    // fits now.
                    let (fit, cap) = self
                        .committed_totals_for(group, snapshot.worker_resource)
                        .headroom(&self.config.cores.autoscaler, snapshot.worker_resource);
                    let cause = self
                        .groups
                        .get(group)
                        .and_then(|g| g.autoscaler.as_ref())
                        .and_then(|a| a.last_scale_out_cause())
                        .unwrap_or(ScaleOutCause::Usage);
                    let Some(g) = self.groups.get_mut(group) else {
                        return;
                    };
                    if g.starts_blocked(limit) {
                        warn!(
                            group,
                            count, "scale-out skipped: workers of this group cannot start"
                        );
                        continue;
                    }
                    let count = if count > fit {
                        info!(group, count, fit, "{cap} cuts the autoscaler's request");
                        fit
                    } else {
                        count
                    };
                    if count == 0 {
                        continue;
                    }
                    match cause {
                        ScaleOutCause::Initial => {
                            info!(
                                group,
                                count, "initial workers: requesting workers for an empty group"
                            );
                            self.counters.initial_requested += u64::from(count);
                        }
                        ScaleOutCause::Usage => {
                            info!(group, count, usage_bp = ?decision.usage_bp, "scale-out: requesting workers");
                            self.counters.scale_outs += 1;
                            self.counters.scale_out_requested += u64::from(count);
                        }
                    }
                    // Recycled workers first: the requests are the group's
                    // demand, and the ContainerScheduler hands it workers
                    // of its kind in the reserve (or idle, under fifo),
                    // each taking the place of one (see ReassignWorker in
                    // apply_cs). YARN is asked for the rest.
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
                    if unsent < count {
                        info!(
                            group,
                            recycled = count - unsent,
                            requested = unsent,
                            "recycled workers take the place of the autoscaler's requests"
                        );
                    }
                    for _ in 0..unsent {
                        self.counters.containers_requested += 1;
                        self.effects.push(Effect::RequestContainer {
                            priority: g.priority,
                            resource: g.spec.worker_resource,
                        });
                    }
                }
                AutoscaleAction::CancelRequests { count } => {
                    let Some(g) = self.groups.get_mut(group) else {
                        return;
                    };
                    let n = count.min(g.outstanding_auto);
                    info!(
                        group,
                        count = n,
                        "scale-out over: withdrawing worker requests"
                    );
                    for _ in 0..n {
                        g.outstanding_auto -= 1;
                        self.counters.requests_cancelled += 1;
                        self.effects.push(Effect::CancelContainerRequest {
                            priority: g.priority,
                            resource: g.spec.worker_resource,
                        });
                    }
                    self.sync_autoscaled_starts(now, group);
                }
                AutoscaleAction::ReleaseNodes {
                    hosts,
                    wait_for_active_dags,
                } => {
                    info!(
                        group,
                        usage_bp = ?decision.usage_bp,
                        "scale-in: releasing nodes {} (workers finish the active DAGs first: {wait_for_active_dags})",
                        hosts.join(",")
                    );
                    self.counters.scale_ins += 1;
                    let victims: Vec<WorkerId> = self
                        .workers
                        .iter()
                        .filter(|(_, w)| {
                            w.group.as_deref() == Some(group) && hosts.contains(&w.host)
                        })
                        .map(|(id, _)| id.clone())
                        .collect();
                    for w in victims {
                        if wait_for_active_dags {
                            // Drained (and then stopped) once the DAGs
                            // active now are over; see `drained`. It leaves
                            // with its node, so it is not idle for
                            // recycling meanwhile (another group in need
                            // would keep the node).
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
                            self.ts_input(now, group, TsInput::DrainWorker { worker: w });
                        } else {
                            if let Some(e) = self.workers.get_mut(&w) {
                                e.group = None;
                            }
                            self.ts_input(now, group, TsInput::WorkerRemoved { worker: w.clone() });
                            self.cs_input(now, CsInput::WorkerExited { worker: w.clone() });
                            self.counters.scale_in_released += 1;
                            self.retire(&w, "its node was released by scale-in");
                        }
                    }
                }
            }
        }
    }

    /// After every event: offer idle capacity, tell the container scheduler
    /// each group's need and its idle workers.
    fn reconcile(&mut self, now: u64) {
        if self.stopping {
            return;
        }
        let names: Vec<String> = self.groups.keys().cloned().collect();
        let limit = self.config.max_start_failures;
        for g in self.groups.values_mut() {
            if g.deferred_starts > 0 && !g.starts_blocked(limit) {
                for _ in 0..g.deferred_starts {
                    g.outstanding_cs += 1;
                    self.counters.containers_requested += 1;
                    self.effects.push(Effect::RequestContainer {
                        priority: g.priority,
                        resource: g.spec.worker_resource,
                    });
                }
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
            let requested = self.requested_totals();
            let Some(g) = self.groups.get(name) else {
                continue;
            };
            let wanted = if g.autoscaler.is_some() {
                // The autoscaler decides how many workers the group has: its
                // outstanding requests are the group's need, so that a
                // recycled worker takes the place of one; the starts they
                // become make no request of their own (see apply_cs).
                g.outstanding_auto
            } else if g.starts_blocked(self.config.max_start_failures) {
                // Workers of this group cannot start.
                0
            } else {
                let (count, need) = g.ts.pending_demand();
                let per = g.spec.worker_resource;
                let by_memory = need.memory_mb.div_ceil(per.memory_mb.max(1));
                let by_cores = u64::from(need.vcores).div_ceil(u64::from(per.vcores.max(1)));
                let wanted = if count == 0 {
                    0
                } else {
                    by_memory.max(by_cores).max(1)
                };
                let have = g.ts.workers().len() as u64;
                let room = u64::from(self.config.group_max_workers).saturating_sub(have);
                // The caps on all workers (`mr3.k8s.worker.total.*`) hold
                // with autoscaling off too: the demand counts the
                // group's workers being started, and the workers in the
                // reserve of its kind (the ContainerScheduler hands those
                // out first, and recycling one adds nothing to the
                // totals), so it may reach those plus what still fits.
                let starting = self.cs.group_report(name).map_or(0, |r| r.starting);
                let reserve = self.cs.reserved_for(name);
                let (fit, cap) = running
                    .plus(requested)
                    .headroom(&self.config.cores.autoscaler, per);
                let allowed = u64::from(starting) + u64::from(reserve) + u64::from(fit);
                let capped_by = (wanted.min(room) > allowed).then_some(cap);
                if capped_by != g.capped_by {
                    match capped_by {
                        Some(cap) => info!(
                            group = %name,
                            wanted = wanted.min(room),
                            allowed,
                            "{cap} holds back the group's worker requests"
                        ),
                        None => {
                            info!(group = %name, "the caps on all workers no longer hold the group back")
                        }
                    }
                    if let Some(g) = self.groups.get_mut(name) {
                        g.capped_by = capped_by;
                    }
                }
                u32::try_from(wanted.min(room).min(allowed)).unwrap_or(u32::MAX)
            };
            self.cs_input(
                now,
                CsInput::GroupDemand {
                    group: name.clone(),
                    wanted_workers: wanted,
                },
            );
            if self.cs.config().scheme != ContainerSchedulerScheme::None {
                let Some(g) = self.groups.get(name) else {
                    continue;
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
    }

    // ----- reports -----

    /// What `spindle dag status` shows.
    pub fn status(&self, application: &str, dag: Option<DagId>) -> Result<StatusReport, String> {
        let groups = self
            .groups
            .values()
            .map(|g| {
                let launching = self
                    .launching
                    .values()
                    .filter(|l| l.group == g.spec.name)
                    .count() as u32;
                GroupStatus {
                    name: g.spec.name.clone(),
                    worker_memory_mb: g.spec.worker_resource.memory_mb,
                    worker_vcores: g.spec.worker_resource.vcores,
                    status_line: g.ts.status_line(),
                    workers: g.ts.workers().len() as u32,
                    requested_workers: g.outstanding_cs + g.outstanding_auto + launching,
                    autoscale_state: g.autoscaler.as_ref().map(|a| a.state().to_string()),
                    usage_bp: g.usage_bp,
                }
            })
            .collect();
        let workers = self
            .workers
            .iter()
            .map(|(id, w)| {
                let report = w
                    .group
                    .as_ref()
                    .and_then(|g| self.groups.get(g))
                    .and_then(|g| g.ts.worker_report(id));
                WorkerStatus {
                    worker: id.to_string(),
                    host: w.host.clone(),
                    group: w.group.clone(),
                    capacity_mb: report.as_ref().map(|r| r.capacity.memory_mb).unwrap_or(0),
                    used_mb: report.as_ref().map(|r| r.used.memory_mb).unwrap_or(0),
                    running_attempts: report.as_ref().map(|r| r.running_attempts).unwrap_or(0),
                    draining: report.as_ref().is_some_and(|r| r.draining),
                }
            })
            .collect();
        let ids: Vec<DagId> = match dag {
            Some(id) => {
                if !self.dags.contains_key(&id) {
                    return Err(format!("no DAG {id} in this session"));
                }
                vec![id]
            }
            None => self.dags.keys().copied().collect(),
        };
        let dags = ids
            .into_iter()
            .filter_map(|id| self.dag_status(id))
            .collect();
        Ok(StatusReport {
            application: application.to_string(),
            groups,
            workers,
            dags,
            counters: self.counters.clone(),
        })
    }

    fn dag_status(&self, id: DagId) -> Option<DagStatusReport> {
        let r = self.dags.get(&id)?;
        let live = self.groups.get(&r.group).and_then(|g| g.ts.dag_report(id));
        let (state, reason) = match &r.final_state {
            Some((s, reason)) => (s.clone(), reason.clone()),
            None => ("RUNNING".to_string(), None),
        };
        let end = r.finished_ms.unwrap_or(self.last_ms);
        Some(DagStatusReport {
            id: id.0,
            name: r.name.clone(),
            client: r.client.clone(),
            group: r.group.clone(),
            queue: r.queue.clone(),
            state,
            reason,
            total_tasks: r.total_tasks,
            succeeded_tasks: match (&r.final_state, &live) {
                (Some(_), _) => r.succeeded_tasks,
                (None, Some(l)) => l.succeeded_tasks,
                (None, None) => 0,
            },
            running_attempts: live.as_ref().map(|l| l.running_attempts).unwrap_or(0),
            pending_tasks: live.as_ref().map(|l| l.pending_tasks).unwrap_or(0),
            elapsed_ms: end.saturating_sub(r.submitted_ms),
        })
    }

    /// Checks the cores' invariants (tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.cs.check_invariants().map_err(|e| e.to_string())?;
        for (name, g) in &self.groups {
            g.ts.check_invariants().map_err(|e| e.to_string())?;
            if let Some(a) = &g.autoscaler {
                a.check_invariants().map_err(|e| e.to_string())?;
                // Its starts in the ContainerScheduler are its autoscaler's
                // outstanding requests, and nothing else asks for workers.
                let starting = self.cs.group_report(name).map_or(0, |r| r.starting);
                if !self.stopping && starting != g.outstanding_auto {
                    return Err(format!(
                        "group {name}: the container scheduler starts {starting} workers, \
                         its autoscaler has {} requests outstanding",
                        g.outstanding_auto
                    ));
                }
                if g.outstanding_cs + g.deferred_starts + g.auto_unsent > 0 {
                    return Err(format!(
                        "group {name} has an autoscaler and requests of its own"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dagfile::{EdgeFile, EdgeKindFile, GroupFile, VertexFile};

    fn config(pairs: &[(&str, &str)]) -> SessionConfig {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        SessionConfig::from_map(&map).expect("valid settings")
    }

    fn vertex(name: &str, tasks: u32, memory_mb: u64, command: &str) -> VertexFile {
        VertexFile {
            name: name.into(),
            tasks,
            memory_mb,
            vcores: 1,
            command: command.into(),
            priority: None,
        }
    }

    fn word_count() -> DagFile {
        DagFile {
            name: "wc".into(),
            queue: None,
            group: None,
            vertices: vec![
                vertex("map", 2, 512, "map {task}"),
                vertex("reduce", 1, 512, "reduce {task}"),
            ],
            edges: vec![EdgeFile {
                from: "map".into(),
                to: "reduce".into(),
                kind: EdgeKindFile::AllToAll,
            }],
        }
    }

    /// A group's workers and outstanding worker requests, as `status` reports them.
    fn workers_and_requests(s: &Session, group: &str) -> (u32, u32) {
        let report = s.status("app", None).expect("status");
        let g = report
            .groups
            .iter()
            .find(|g| g.name == group)
            .unwrap_or_else(|| panic!("no group {group}"));
        (g.workers, g.requested_workers)
    }

    fn requests(effects: &[Effect]) -> usize {
        effects
            .iter()
            .filter(|e| matches!(e, Effect::RequestContainer { .. }))
            .count()
    }

    fn assignments(effects: &[Effect]) -> Vec<TaskAssignment> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send {
                    message: AmToWorker::Assign(a),
                    ..
                } => Some((**a).clone()),
                _ => None,
            })
            .collect()
    }

    fn w(name: &str) -> WorkerId {
        WorkerId::new(name)
    }

    /// Submits, grants one container for the default group and registers
    /// its worker; returns the assignments the worker got.
    fn start_worker(s: &mut Session, now: u64, name: &str, host: &str) -> Vec<TaskAssignment> {
        s.container_allocated(now, w(name), host.into(), 1);
        let launched = s.take_effects();
        assert!(
            launched.iter().any(
                |e| matches!(e, Effect::LaunchWorker { container, .. } if container == &w(name))
            ),
            "{launched:?}"
        );
        s.worker_registered(now + 1, &w(name), format!("{host}:9000"))
            .expect("registers");
        assignments(&s.take_effects())
    }

    #[test]
    fn a_word_count_runs_through_the_cores() {
        let mut s = Session::new(config(&[
            (keys::WORKER_MEMORY_MB, "1024"),
            (keys::WORKER_VCORES, "2"),
        ]))
        .expect("session");
        let id = s
            .submit(10, "alice", &word_count(), None)
            .expect("accepted");
        assert_eq!(id, DagId(1));
        let e = s.take_effects();
        assert_eq!(
            requests(&e),
            1,
            "two 512 MB maps need one 1 GB worker: {e:?}"
        );

        let maps = start_worker(&mut s, 20, "container_1", "h1");
        assert_eq!(maps.len(), 2);
        assert_eq!(maps[0].command, "map 0");
        assert_eq!(maps[1].command, "map 1");
        assert_eq!(maps[0].partitions, 1, "one reduce task downstream");
        assert!(maps[0].inputs.is_empty());

        s.attempt_finished(
            30,
            &w("container_1"),
            maps[0].attempt,
            WireOutcome::Succeeded,
        );
        assert!(
            assignments(&s.take_effects()).is_empty(),
            "the reduce waits for both maps"
        );
        s.attempt_finished(
            31,
            &w("container_1"),
            maps[1].attempt,
            WireOutcome::Succeeded,
        );
        let reduce = assignments(&s.take_effects());
        assert_eq!(reduce.len(), 1);
        assert_eq!(reduce[0].vertex, "reduce");
        let urls: Vec<&str> = reduce[0].inputs.iter().map(|i| i.url.as_str()).collect();
        assert_eq!(
            urls,
            vec![
                "http://h1:9000/outputs/1/0/0",
                "http://h1:9000/outputs/1/0/1"
            ]
        );
        assert_eq!(reduce[0].inputs[1].vertex, "map");

        s.attempt_finished(
            40,
            &w("container_1"),
            reduce[0].attempt,
            WireOutcome::Succeeded,
        );
        let e = s.take_effects();
        assert!(
            e.iter().any(|e| matches!(
                e,
                Effect::Send {
                    message: AmToWorker::DagDone { dag: 1 },
                    ..
                }
            )),
            "{e:?}"
        );
        let report = s.status("app", Some(id)).expect("status");
        assert_eq!(report.dags[0].state, "SUCCEEDED");
        assert_eq!(report.dags[0].succeeded_tasks, 3);
        assert_eq!(report.dags[0].elapsed_ms, 30);
        assert_eq!(report.workers.len(), 1);
        assert!(report.groups[0]
            .status_line
            .starts_with("DAGScheduler All-In-One 1024MB"));
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn failed_attempts_are_retried_until_the_limit_then_the_dag_fails() {
        let mut s = Session::new(config(&[(
            spindle_dag::config::keys::TASK_MAX_FAILED_ATTEMPTS,
            "2",
        )]))
        .expect("session");
        let mut file = word_count();
        file.vertices = vec![vertex("only", 1, 256, "exit 1")];
        file.edges.clear();
        let id = s.submit(0, "bob", &file, None).expect("accepted");
        s.take_effects();
        let first = start_worker(&mut s, 5, "container_1", "h1");
        assert_eq!(first.len(), 1);
        s.attempt_finished(
            6,
            &w("container_1"),
            first[0].attempt,
            WireOutcome::Failed {
                reason: "the command exited with status 1".into(),
            },
        );
        let second = assignments(&s.take_effects());
        assert_eq!(second.len(), 1, "retried");
        assert_eq!(second[0].attempt.attempt, 2);
        s.attempt_finished(
            7,
            &w("container_1"),
            second[0].attempt,
            WireOutcome::Failed {
                reason: "the command exited with status 1".into(),
            },
        );
        let report = s.status("app", Some(id)).expect("status");
        let dag = &report.dags[0];
        assert_eq!(dag.state, "FAILED");
        let reason = dag.reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains("vertex 'only' failed 2 attempts")
                && reason.contains("exited with status 1"),
            "{reason}"
        );
        assert_eq!(s.counters().attempts_failed, 2);
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn contract_breaches_are_refused() {
        let mut s = Session::new(config(&[(keys::WORKER_MEMORY_MB, "512")])).expect("session");
        let mut big = word_count();
        big.vertices[1].memory_mb = 2048;
        let err = s.submit(0, "c", &big, None).expect_err("too big");
        assert!(err.contains("vertex 'reduce' needs"), "{err}");
        let err = s
            .worker_registered(1, &w("container_9"), "h:1".into())
            .expect_err("never started");
        assert!(err.contains("no worker container_9"), "{err}");

        s.submit(2, "c", &word_count().with_small_tasks(), None)
            .expect("accepted");
        s.take_effects();
        let maps = start_worker(&mut s, 3, "container_1", "h1");
        // A report for an attempt that runs elsewhere is ignored.
        s.attempt_finished(
            4,
            &w("container_2"),
            maps[0].attempt,
            WireOutcome::Succeeded,
        );
        assert_eq!(
            s.status("app", None).expect("status").dags[0].succeeded_tasks,
            0
        );
        s.check_invariants().expect("invariants");
    }

    impl DagFile {
        fn with_small_tasks(mut self) -> DagFile {
            for v in &mut self.vertices {
                v.memory_mb = 128;
            }
            self
        }
    }

    #[test]
    fn a_lost_worker_is_replaced_and_its_attempts_retried() {
        let mut s = Session::new(config(&[
            (keys::WORKER_MEMORY_MB, "1024"),
            (keys::WORKER_VCORES, "2"),
        ]))
        .expect("session");
        s.submit(0, "c", &word_count(), None).expect("accepted");
        s.take_effects();
        let maps = start_worker(&mut s, 1, "container_1", "h1");
        assert_eq!(maps.len(), 2);
        s.worker_gone(
            2,
            &w("container_1"),
            "container completed with exit status 137",
        );
        let e = s.take_effects();
        assert!(
            e.iter()
                .any(|e| matches!(e, Effect::ReleaseContainer { container } if container == &w("container_1"))),
            "{e:?}"
        );
        assert_eq!(requests(&e), 1, "a replacement is asked for: {e:?}");
        let again = start_worker(&mut s, 3, "container_2", "h2");
        assert_eq!(again.len(), 2, "both maps run again");
        assert_eq!(s.counters().workers_lost, 1);
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn workers_that_never_start_end_the_dag_with_a_reason() {
        let mut s = Session::new(config(&[
            (keys::MAX_START_FAILURES, "2"),
            (keys::WORKER_VCORES, "2"),
        ]))
        .expect("session");
        let id = s.submit(0, "c", &word_count(), None).expect("accepted");
        for (i, now) in [(1, 10), (2, 20)] {
            let e = s.take_effects();
            assert_eq!(requests(&e), 1, "{e:?}");
            let c = w(&format!("container_{i}"));
            s.container_allocated(now, c.clone(), "h1".into(), 1);
            s.launch_failed(now + 1, &c, "exec format error");
        }
        let e = s.take_effects();
        assert_eq!(requests(&e), 0, "no more requests: {e:?}");
        let report = s.status("app", Some(id)).expect("status");
        assert_eq!(report.dags[0].state, "KILLED");
        let reason = report.dags[0].reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains("failed to start 2 times") && reason.contains("exec format error"),
            "{reason}"
        );
    }

    #[test]
    fn with_autoscaling_the_autoscaler_asks_for_workers() {
        let key = spindle_dag::config::keys::ENABLE_AUTO_SCALING;
        let interval = spindle_dag::config::keys::CHECK_MEMORY_USAGE_INTERVAL_SECS;
        let mut s = Session::new(config(&[(key, "true"), (interval, "1")])).expect("session");
        s.submit(0, "c", &word_count(), None).expect("accepted");
        assert_eq!(
            requests(&s.take_effects()),
            0,
            "demand does not start workers"
        );
        s.tick(1000);
        let e = s.take_effects();
        assert_eq!(requests(&e), 1, "the initial worker: {e:?}");
        assert_eq!(s.counters().initial_requested, 1);
        assert_eq!(
            (s.counters().scale_outs, s.counters().scale_out_requested),
            (0, 0),
            "an initial request is not a scale-out"
        );
        let report = s.status("app", None).expect("status");
        assert_eq!(
            report.groups[0].autoscale_state.as_deref(),
            Some("SCALE_OUT")
        );
        assert_eq!(report.groups[0].requested_workers, 1);
    }

    #[test]
    fn named_groups_get_their_own_scheduler_and_request_priority() {
        let mut s = Session::new(config(&[])).expect("session");
        let mut file = word_count();
        file.group = Some(GroupFile {
            name: "big".into(),
            worker_memory_mb: 2048,
            worker_vcores: 2,
            properties: BTreeMap::new(),
        });
        s.submit(0, "c", &file, Some("ignored".into()))
            .expect("accepted");
        let e = s.take_effects();
        assert!(
            e.contains(&Effect::RequestContainer {
                priority: 2,
                resource: Resource::new(2048, 2)
            }),
            "{e:?}"
        );
        let report = s.status("app", None).expect("status");
        let names: Vec<&str> = report.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, vec!["All-In-One", "big"]);
        assert_eq!(report.dags[0].group, "big");
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn fair_scheduling_moves_a_worker_to_a_new_group_after_its_dags_finish() {
        let scheme = spindle_dag::config::keys::CONTAINER_SCHEDULER_SCHEME;
        let interval = spindle_dag::config::keys::CHECK_MEMORY_USAGE_INTERVAL_SECS;
        let mut s = Session::new(config(&[
            (scheme, "fair"),
            (interval, "1"),
            (keys::WORKER_MEMORY_MB, "1024"),
            (keys::WORKER_VCORES, "2"),
        ]))
        .expect("session");
        let mut a = word_count();
        a.vertices = vec![vertex("a", 4, 512, "a {task}")];
        a.edges.clear();
        s.submit(0, "alice", &a, None).expect("accepted");
        assert_eq!(requests(&s.take_effects()), 2);
        let mut running = start_worker(&mut s, 1, "container_1", "h1");
        s.container_allocated(2, w("container_2"), "h2".into(), 1);
        s.worker_registered(3, &w("container_2"), "h2:9000".into())
            .expect("registers");
        running.extend(assignments(&s.take_effects()));
        assert_eq!(running.len(), 4);

        // A second group of the same worker size: the same ContainerKind.
        let mut b = word_count();
        b.name = "b".into();
        b.vertices = vec![vertex("b", 2, 512, "b {task}")];
        b.edges.clear();
        b.group = Some(GroupFile {
            name: "other".into(),
            worker_memory_mb: 1024,
            worker_vcores: 2,
            properties: BTreeMap::new(),
        });
        s.submit(10, "bob", &b, None).expect("accepted");
        s.take_effects();
        // Fair rebalancing asks group All-In-One to give up one worker; it
        // drains (its DAG keeps running there) ...
        s.tick(1000);
        s.take_effects();
        let report = s.status("app", None).expect("status");
        let draining: Vec<&WorkerStatus> = report.workers.iter().filter(|w| w.draining).collect();
        assert_eq!(draining.len(), 1, "{report:?}");
        let moved = w(&draining[0].worker);
        // ... and once the DAG is over it moves to group `other`.
        let mut effects = Vec::new();
        for (i, r) in running.iter().enumerate() {
            let worker = if r.attempt.task < 2 {
                "container_1"
            } else {
                "container_2"
            };
            s.attempt_finished(
                1100 + i as u64,
                &w(worker),
                r.attempt,
                WireOutcome::Succeeded,
            );
            effects.extend(s.take_effects());
        }
        assert!(
            effects.contains(&Effect::Send {
                worker: moved.clone(),
                message: AmToWorker::Reinit {
                    group: "other".into()
                }
            }),
            "{effects:?}"
        );
        let given: Vec<&TaskAssignment> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send {
                    worker,
                    message: AmToWorker::Assign(a),
                } if worker == &moved => Some(&**a),
                _ => None,
            })
            .collect();
        assert!(
            given.iter().any(|a| a.dag_name == "b"),
            "the moved worker runs group other's DAG: {effects:?}"
        );
        assert_eq!(s.counters().workers_recycled, 1);
        let report = s.status("app", None).expect("status");
        let moved_status = report
            .workers
            .iter()
            .find(|w| w.worker == moved.as_str())
            .expect("still a worker");
        assert_eq!(moved_status.group.as_deref(), Some("other"));
        s.check_invariants().expect("invariants");
    }

    /// Autoscaling every second, one-second windows and cooldowns, two
    /// initial workers of 1 GB and one core (one 512 MB task each).
    fn autoscaled(extra: &[(&str, &str)]) -> SessionConfig {
        use spindle_dag::config::keys as k;
        let mut pairs = vec![
            (k::ENABLE_AUTO_SCALING, "true"),
            (k::CHECK_MEMORY_USAGE_INTERVAL_SECS, "1"),
            (k::MEMORY_USAGE_WINDOW_SECS, "1"),
            (k::SCALE_OUT_GRACE_PERIOD_SECS, "1"),
            (k::SCALE_IN_DELAY_AFTER_SCALE_OUT_SECS, "0"),
            (k::SCALE_IN_GRACE_PERIOD_SECS, "1"),
            (k::SCALE_IN_MIN_HOSTS, "1"),
            (k::SCALE_OUT_NUM_INITIAL_CONTAINERS, "2"),
            (keys::WORKER_MEMORY_MB, "1024"),
            (keys::WORKER_VCORES, "1"),
        ];
        pairs.extend_from_slice(extra);
        config(&pairs)
    }

    fn stopped(effects: &[Effect], worker: &WorkerId) -> bool {
        effects.iter().any(|e| {
            matches!(e, Effect::Send { worker: w, message: AmToWorker::Stop { .. } } if w == worker)
        })
    }

    fn released(effects: &[Effect], worker: &WorkerId) -> bool {
        effects
            .iter()
            .any(|e| matches!(e, Effect::ReleaseContainer { container } if container == worker))
    }

    fn autoscale_state(s: &Session) -> String {
        s.status("app", None).expect("status").groups[0]
            .autoscale_state
            .clone()
            .unwrap_or_default()
    }

    /// A word count on two workers (h1, h2) of an autoscaled session, both
    /// maps done and the reduce running on one of them: returns the
    /// reduce's assignment, the worker running it and the other one, which
    /// holds a map output the reduce needs and is idle.
    fn reduce_running(s: &mut Session) -> (TaskAssignment, WorkerId, WorkerId) {
        s.submit(0, "alice", &word_count(), None).expect("accepted");
        assert_eq!(requests(&s.take_effects()), 0);
        s.tick(1000);
        assert_eq!(requests(&s.take_effects()), 2, "the initial workers");
        let mut maps = start_worker(s, 1100, "container_1", "h1");
        maps.extend(start_worker(s, 1200, "container_2", "h2"));
        assert_eq!(maps.len(), 2, "one map per single-core worker");
        let worker_of = |a: &TaskAssignment| {
            if maps[0].attempt == a.attempt {
                w("container_1")
            } else {
                w("container_2")
            }
        };
        let mut reduce = Vec::new();
        for (i, m) in maps.iter().enumerate() {
            s.attempt_finished(
                1300 + i as u64,
                &worker_of(m),
                m.attempt,
                WireOutcome::Succeeded,
            );
            let e = s.take_effects();
            for worker in [w("container_1"), w("container_2")] {
                reduce.extend(e.iter().filter_map(|e| match e {
                    Effect::Send {
                        worker: to,
                        message: AmToWorker::Assign(a),
                    } if to == &worker => Some(((**a).clone(), worker.clone())),
                    _ => None,
                }));
            }
        }
        assert_eq!(reduce.len(), 1, "{reduce:?}");
        let (assignment, runner) = reduce.remove(0);
        assert_eq!(assignment.vertex, "reduce");
        let other = if runner == w("container_1") {
            w("container_2")
        } else {
            w("container_1")
        };
        (assignment, runner, other)
    }

    #[test]
    fn scale_in_lets_workers_of_released_nodes_finish_the_active_dag_before_they_stop() {
        let mut s = Session::new(autoscaled(&[])).expect("session");
        let (reduce, runner, idle) = reduce_running(&mut s);
        let idle_host = if idle == w("container_1") { "h1" } else { "h2" };
        // Usage 512 MB of 2 GB = 25%, under the 50% ScaleInThreshold: the
        // idle worker's node is released, but the reduce still needs the
        // map output it holds.
        s.tick(2000);
        let e = s.take_effects();
        assert!(
            !stopped(&e, &idle) && !released(&e, &idle),
            "stopped before the active DAG completed: {e:?}"
        );
        assert_eq!(s.counters().scale_ins, 1);
        assert_eq!(autoscale_state(&s), "SCALE_IN");
        let report = s.status("app", None).expect("status");
        let draining: Vec<&str> = report
            .workers
            .iter()
            .filter(|w| w.draining)
            .map(|w| w.host.as_str())
            .collect();
        assert_eq!(draining, vec![idle_host]);
        // Another client's DAG arrives, and the reduce runs on. The grace
        // period passes, but the released node still holds the worker: the
        // scale-in goes on, so nothing new is requested for the new DAG
        // and the draining worker does not take its tasks.
        let mut big = word_count();
        big.name = "big".into();
        big.vertices = vec![vertex("big", 2, 1024, "big {task}")];
        big.edges.clear();
        s.submit(2500, "bob", &big, None).expect("accepted");
        for now in [3000, 4000] {
            s.tick(now);
            let e = s.take_effects();
            assert!(
                !stopped(&e, &idle) && !released(&e, &idle),
                "stopped before the active DAG completed: {e:?}"
            );
            assert_eq!(requests(&e), 0, "a request during scale-in: {e:?}");
            assert!(assignments(&e).is_empty(), "{e:?}");
            assert_eq!(autoscale_state(&s), "SCALE_IN", "at {now} ms");
        }
        // The reduce ends the DAG: the drained worker is told to stop and
        // its container released; the other takes the new DAG's work.
        s.attempt_finished(4500, &runner, reduce.attempt, WireOutcome::Succeeded);
        let e = s.take_effects();
        assert!(stopped(&e, &idle) && released(&e, &idle), "{e:?}");
        assert!(!stopped(&e, &runner), "{e:?}");
        assert_eq!(assignments(&e).len(), 1, "{e:?}");
        assert_eq!(s.counters().scale_in_released, 1);
        let report = s.status("app", Some(DagId(1))).expect("status");
        assert_eq!(report.dags[0].state, "SUCCEEDED");
        // Its container completes (expected, not a loss); the released node
        // is empty, so the scale-in is over and usage (100%) scales out.
        s.worker_gone(4600, &idle, "container completed with exit status 0");
        assert_eq!(s.counters().workers_lost, 0);
        s.tick(5000);
        let e = s.take_effects();
        assert_eq!(requests(&e), 1, "{e:?}");
        assert_eq!(autoscale_state(&s), "SCALE_OUT");
        assert_eq!(s.counters().scale_outs, 1);
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn scale_in_without_waiting_for_dags_stops_the_workers_at_once() {
        let mut s = Session::new(autoscaled(&[(
            spindle_dag::config::keys::SCALE_IN_WAIT_DAG_FINISHED,
            "false",
        )]))
        .expect("session");
        let (reduce, runner, idle) = reduce_running(&mut s);
        s.tick(2000);
        let e = s.take_effects();
        assert!(stopped(&e, &idle) && released(&e, &idle), "{e:?}");
        assert_eq!(s.counters().scale_in_released, 1);
        // The reduce needed the map output the stopped worker held: it is
        // stopped and the map made again.
        assert!(
            e.iter().any(|e| matches!(
                e,
                Effect::Send { worker, message: AmToWorker::Kill { attempt } }
                    if worker == &runner && *attempt == reduce.attempt
            )),
            "{e:?}"
        );
        assert_eq!(autoscale_state(&s), "SCALE_IN");
        s.worker_gone(2100, &idle, "container completed with exit status 0");
        assert_eq!(s.counters().workers_lost, 0);
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn a_worker_granted_on_a_released_node_is_stopped_at_once() {
        let mut s = Session::new(autoscaled(&[(
            spindle_dag::config::keys::SCALE_OUT_NUM_INITIAL_CONTAINERS,
            "3",
        )]))
        .expect("session");
        let mut one = word_count();
        one.vertices = vec![vertex("one", 1, 512, "one")];
        one.edges.clear();
        s.submit(0, "alice", &one, None).expect("accepted");
        s.tick(1000);
        assert_eq!(requests(&s.take_effects()), 3);
        assert_eq!(start_worker(&mut s, 1100, "container_1", "h1").len(), 1);
        assert!(start_worker(&mut s, 1200, "container_2", "h2").is_empty());
        // The third is granted on h2 but has not registered yet.
        s.container_allocated(1300, w("container_3"), "h2".into(), 1);
        s.take_effects();
        // 25% usage: h2, the idle node, is released; its worker waits for
        // the active DAG.
        s.tick(2000);
        let e = s.take_effects();
        assert!(!stopped(&e, &w("container_2")), "{e:?}");
        assert_eq!(autoscale_state(&s), "SCALE_IN");
        // The late worker holds nothing: it goes at once.
        s.worker_registered(2100, &w("container_3"), "h2:9000".into())
            .expect("registers");
        let e = s.take_effects();
        assert!(
            stopped(&e, &w("container_3")) && released(&e, &w("container_3")),
            "{e:?}"
        );
        assert!(assignments(&e).is_empty(), "{e:?}");
        assert_eq!(s.counters().scale_in_released, 1);
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn caps_on_all_workers_hold_across_groups_without_autoscaling() {
        let caps = spindle_dag::config::keys::WORKER_TOTAL_MAX_MEMORY_GB;
        let mut s = Session::new(config(&[
            (caps, "3"),
            (keys::WORKER_MEMORY_MB, "1024"),
            (keys::WORKER_VCORES, "1"),
        ]))
        .expect("session");
        let mut five = word_count();
        five.vertices = vec![vertex("five", 5, 1024, "five {task}")];
        five.edges.clear();
        s.submit(0, "alice", &five, None).expect("accepted");
        assert_eq!(
            requests(&s.take_effects()),
            3,
            "five 1 GB tasks, but 3 GB for all workers"
        );
        // Another group of another size gets nothing while the cap is full.
        let mut other = five.clone();
        other.name = "other".into();
        other.group = Some(GroupFile {
            name: "other".into(),
            worker_memory_mb: 512,
            worker_vcores: 1,
            properties: BTreeMap::new(),
        });
        other.vertices = vec![vertex("o", 2, 512, "o {task}")];
        s.submit(10, "bob", &other, None).expect("accepted");
        assert_eq!(requests(&s.take_effects()), 0);
        // One of the three requests is granted and its worker lost: one
        // replacement, still within the cap.
        s.container_allocated(20, w("container_1"), "h1".into(), 1);
        s.worker_registered(21, &w("container_1"), "h1:9000".into())
            .expect("registers");
        s.take_effects();
        s.worker_gone(
            30,
            &w("container_1"),
            "container completed with exit status 137",
        );
        let e = s.take_effects();
        assert_eq!(requests(&e), 1, "{e:?}");
        let report = s.status("app", None).expect("status");
        let asked: u32 = report.groups.iter().map(|g| g.requested_workers).sum();
        assert_eq!(asked, 3, "{report:?}");
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn caps_on_all_workers_hold_across_autoscaled_groups() {
        let caps = spindle_dag::config::keys::WORKER_TOTAL_MAX_MEMORY_GB;
        let mut s = Session::new(autoscaled(&[(caps, "3")])).expect("session");
        s.submit(0, "alice", &word_count(), None).expect("accepted");
        let mut other = word_count();
        other.name = "other".into();
        other.group = Some(GroupFile {
            name: "other".into(),
            worker_memory_mb: 1024,
            worker_vcores: 1,
            properties: BTreeMap::new(),
        });
        s.submit(0, "bob", &other, None).expect("accepted");
        s.take_effects();
        // Each group would start two workers; 3 GB hold three in all.
        s.tick(1000);
        let e = s.take_effects();
        let by_priority = |p: i32| {
            e.iter()
                .filter(
                    |e| matches!(e, Effect::RequestContainer { priority, .. } if *priority == p),
                )
                .count()
        };
        assert_eq!((by_priority(1), by_priority(2)), (2, 1), "{e:?}");
        assert_eq!(s.counters().initial_requested, 3);
        s.check_invariants().expect("invariants");
    }

    fn reinits(effects: &[Effect], group: &str) -> usize {
        effects
            .iter()
            .filter(|e| {
                matches!(e, Effect::Send { message: AmToWorker::Reinit { group: g }, .. } if g == group)
            })
            .count()
    }

    fn cancels(effects: &[Effect], priority: i32) -> usize {
        effects
            .iter()
            .filter(|e| matches!(e, Effect::CancelContainerRequest { priority: p, .. } if *p == priority))
            .count()
    }

    /// A DAG of `tasks` independent tasks of `memory_mb` in ContainerGroup
    /// `group` (workers of 1 GB and one core).
    fn in_group(group: &str, tasks: u32, memory_mb: u64) -> DagFile {
        let mut f = word_count();
        f.name = group.into();
        f.group = Some(GroupFile {
            name: group.into(),
            worker_memory_mb: 1024,
            worker_vcores: 1,
            properties: BTreeMap::new(),
        });
        f.vertices = vec![vertex(group, tasks, memory_mb, "run {task}")];
        f.edges.clear();
        f
    }

    /// Registers a granted container of the group with request `priority`;
    /// returns the effects.
    fn grant(s: &mut Session, now: u64, name: &str, priority: i32) -> Vec<Effect> {
        s.container_allocated(now, w(name), format!("h-{name}"), priority);
        let mut e = s.take_effects();
        s.worker_registered(now + 1, &w(name), format!("h-{name}:9000"))
            .expect("registers");
        e.extend(s.take_effects());
        e
    }

    /// Finishes every attempt in `effects` with success; returns the
    /// effects of doing so.
    fn finish_all(s: &mut Session, now: u64, effects: &[Effect]) -> Vec<Effect> {
        let mut out = Vec::new();
        for (i, e) in effects.iter().enumerate() {
            if let Effect::Send {
                worker,
                message: AmToWorker::Assign(a),
            } = e
            {
                s.attempt_finished(now + i as u64, worker, a.attempt, WireOutcome::Succeeded);
                out.extend(s.take_effects());
            }
        }
        out
    }

    #[test]
    fn under_binding_caps_reserve_workers_still_go_to_a_group_in_need() {
        use spindle_dag::config::keys as k;
        let mut s = Session::new(config(&[
            (k::CONTAINER_SCHEDULER_SCHEME, "fifo"),
            (k::WORKER_TOTAL_MAX_MEMORY_GB, "3"),
            (keys::WORKER_MEMORY_MB, "1024"),
            (keys::WORKER_VCORES, "1"),
        ]))
        .expect("session");
        // Group etl (priority 2) runs two 1 GB tasks on two workers, then
        // is released: its workers wait in the reserve.
        s.submit(0, "alice", &in_group("etl", 2, 1024), None)
            .expect("accepted");
        assert_eq!(requests(&s.take_effects()), 2);
        let mut e = grant(&mut s, 10, "container_1", 2);
        e.extend(grant(&mut s, 20, "container_2", 2));
        assert_eq!(assignments(&e).len(), 2);
        finish_all(&mut s, 30, &e);
        assert_eq!(s.cs.reserved_workers().len(), 2);
        // Group reports needs three workers. The caps hold three in all,
        // and the two in the reserve are among them: recycling them adds
        // nothing, so reports gets both and one new worker.
        s.submit(100, "bob", &in_group("reports", 3, 1024), None)
            .expect("accepted");
        let e = s.take_effects();
        assert_eq!(reinits(&e, "reports"), 2, "{e:?}");
        assert_eq!(requests(&e), 1, "{e:?}");
        assert_eq!(assignments(&e).len(), 2, "{e:?}");
        assert!(s.cs.reserved_workers().is_empty());
        assert_eq!(s.counters().workers_recycled, 2);
        assert_eq!(workers_and_requests(&s, "reports"), (2, 1));
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn an_autoscalers_request_takes_reserve_workers_first() {
        use spindle_dag::config::keys as k;
        let mut s = Session::new(autoscaled(&[
            (k::CONTAINER_SCHEDULER_SCHEME, "fifo"),
            (k::WORKER_TOTAL_MAX_MEMORY_GB, "4"),
            (k::SCALE_OUT_NUM_INITIAL_CONTAINERS, "4"),
        ]))
        .expect("session");
        // Group etl (priority 2): its autoscaler asks for four workers;
        // three come, its DAG ends, and the group is released: the three
        // wait in the reserve, the fourth request is withdrawn.
        s.submit(0, "alice", &in_group("etl", 1, 512), None)
            .expect("accepted");
        s.tick(1000);
        assert_eq!(requests(&s.take_effects()), 4);
        let mut e = grant(&mut s, 1100, "container_1", 2);
        e.extend(grant(&mut s, 1200, "container_2", 2));
        e.extend(grant(&mut s, 1300, "container_3", 2));
        let e = finish_all(&mut s, 1400, &e);
        assert_eq!(cancels(&e, 2), 1, "{e:?}");
        assert_eq!(s.cs.reserved_workers().len(), 3);
        s.check_invariants().expect("invariants");
        // Group reports (priority 3) is empty: its autoscaler asks for four.
        // The reserve counts against the 4 GB cap, but its workers are
        // there for the taking: the three go to reports first, and only
        // the fourth is asked of YARN.
        s.submit(1600, "bob", &in_group("reports", 4, 1024), None)
            .expect("accepted");
        assert_eq!(requests(&s.take_effects()), 0);
        s.tick(2000);
        let e = s.take_effects();
        assert_eq!(reinits(&e, "reports"), 3, "{e:?}");
        assert_eq!(requests(&e), 1, "{e:?}");
        assert_eq!(assignments(&e).len(), 3, "{e:?}");
        assert_eq!(s.counters().initial_requested, 8);
        assert_eq!(s.counters().containers_requested, 5);
        assert_eq!(s.counters().workers_recycled, 3);
        assert_eq!(workers_and_requests(&s, "reports"), (3, 1));
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn workers_freed_while_an_autoscaled_group_waits_take_the_place_of_its_requests() {
        use spindle_dag::config::keys as k;
        let mut s =
            Session::new(autoscaled(&[(k::CONTAINER_SCHEDULER_SCHEME, "fifo")])).expect("session");
        // etl (priority 2) and reports (priority 3) each ask for two.
        s.submit(0, "alice", &in_group("etl", 1, 512), None)
            .expect("accepted");
        s.submit(0, "bob", &in_group("reports", 2, 1024), None)
            .expect("accepted");
        s.tick(1000);
        let e = s.take_effects();
        assert_eq!(requests(&e), 4, "{e:?}");
        s.check_invariants().expect("invariants");
        // etl's two come; one runs its task, the other has nothing to do
        // and, under fifo, goes to reports, which waits for workers.
        let mut e = grant(&mut s, 1100, "container_1", 2);
        e.extend(grant(&mut s, 1200, "container_2", 2));
        // etl's DAG ends: the group is released and its other worker goes
        // to reports too. Each takes the place of one of reports' requests.
        e.extend(finish_all(&mut s, 1300, &e));
        assert_eq!(reinits(&e, "reports"), 2, "{e:?}");
        assert_eq!(cancels(&e, 3), 2, "{e:?}");
        assert_eq!(s.counters().requests_cancelled, 2);
        assert_eq!(s.counters().workers_recycled, 2);
        assert_eq!(workers_and_requests(&s, "reports"), (2, 0));
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn a_worker_draining_for_scale_in_is_not_recycled_to_another_group() {
        use spindle_dag::config::keys as k;
        let mut s =
            Session::new(autoscaled(&[(k::CONTAINER_SCHEDULER_SCHEME, "fifo")])).expect("session");
        // The default group's two workers: one runs the DAG's only task,
        // the other is idle (and the container scheduler knows it).
        let mut one = word_count();
        one.vertices = vec![vertex("one", 1, 512, "one")];
        one.edges.clear();
        s.submit(0, "alice", &one, None).expect("accepted");
        s.tick(1000);
        assert_eq!(requests(&s.take_effects()), 2);
        let e = grant(&mut s, 1100, "container_1", 1);
        assert_eq!(assignments(&e).len(), 1);
        grant(&mut s, 1200, "container_2", 1);
        // Group reports gets a DAG but has asked for nothing yet.
        s.submit(1500, "bob", &in_group("reports", 1, 1024), None)
            .expect("accepted");
        s.take_effects();
        // At 25% usage the idle worker's node is released: the worker
        // drains, serving the active DAG first. In the same tick reports'
        // autoscaler asks for its first workers, which makes it a group in
        // need; the draining worker is not idle for recycling: it leaves
        // with its node, and reports' workers come from YARN.
        s.tick(2000);
        let e = s.take_effects();
        assert_eq!(s.counters().scale_ins, 1);
        assert_eq!(reinits(&e, "reports"), 0, "{e:?}");
        assert_eq!(requests(&e), 2, "{e:?}");
        let report = s.status("app", None).expect("status");
        let draining: Vec<&str> = report
            .workers
            .iter()
            .filter(|w| w.draining)
            .map(|w| w.worker.as_str())
            .collect();
        assert_eq!(draining, vec!["container_2"], "{report:?}");
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn dags_naming_a_group_share_it_only_with_the_same_properties() {
        let mut s = Session::new(config(&[])).expect("session");
        let with = |name: &str, props: &[(&str, &str)]| {
            let mut f = word_count().with_small_tasks();
            f.name = name.into();
            f.group = Some(GroupFile {
                name: "etl".into(),
                worker_memory_mb: 1024,
                worker_vcores: 1,
                properties: props
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            });
            f
        };
        let first = s
            .submit(0, "alice", &with("a", &[("team", "x")]), None)
            .expect("accepted");
        // Same name and properties: the same group, owned by both.
        s.submit(1, "bob", &with("b", &[("team", "x")]), None)
            .expect("merged");
        // Same name, other properties: refused while the group exists,
        // since groups are known by name and merged only when name and
        // properties match.
        let err = s
            .submit(2, "carol", &with("c", &[("team", "y")]), None)
            .expect_err("different properties");
        assert!(
            err.contains("'etl' already exists with different properties"),
            "{err}"
        );
        let err = s
            .submit(3, "carol", &with("c", &[]), None)
            .expect_err("no properties is different too");
        assert!(err.contains("different properties"), "{err}");
        let report = s.status("app", None).expect("status");
        let names: Vec<&str> = report.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, vec!["All-In-One", "etl"]);
        assert_eq!(report.dags.len(), 2);
        assert!(report.dags.iter().all(|d| d.group == "etl"));
        // Once its DAGs are over the group is gone, and the name is free
        // for other properties.
        for id in [first, DagId(2)] {
            let client = if id == first { "alice" } else { "bob" };
            s.kill(10, id, client).expect("killed");
        }
        let report = s.status("app", None).expect("status");
        assert_eq!(report.groups.len(), 1, "{report:?}");
        s.submit(20, "carol", &with("c", &[("team", "y")]), None)
            .expect("a new group of that name");
        s.check_invariants().expect("invariants");
    }

    #[test]
    fn settings_are_checked() {
        let bad: BTreeMap<String, String> =
            [(keys::WORKER_MEMORY_MB.to_string(), "lots".to_string())].into();
        let err = SessionConfig::from_map(&bad).expect_err("bad");
        assert!(err.contains(keys::WORKER_MEMORY_MB), "{err}");
        let bad: BTreeMap<String, String> = [(
            spindle_dag::config::keys::DAG_QUEUE_SCHEME.to_string(),
            "random".to_string(),
        )]
        .into();
        assert!(SessionConfig::from_map(&bad).is_err());
    }
}
