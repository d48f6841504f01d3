//! The session core: every decision the DAG AM makes around the three
//! cores, and the bookkeeping they leave to their driver.
//!
//! A DAG AM is a *session*: many clients' DAGs run on long-lived workers
//! it obtains from the resource manager and shares between them. The
//! [`TaskScheduler`] of each ContainerGroup, the [`ContainerScheduler`] and
//! the per-group [`Autoscaler`] decide which task runs where, when a
//! worker stops or moves and when to scale; the [`Session`] wires them
//! together and keeps what they leave to their driver:
//!
//! - which ContainerGroups exist, who owns them (a client owns a group
//!   while it has an active DAG there; the default group lives as long as
//!   the session) and the request priority that names each group to the
//!   resource manager;
//! - which container or worker belongs to which group, where it runs, why
//!   it drains (recycling or scale-in), which containers were let go on
//!   purpose, and how many workers of a group failed to start in a row;
//! - where each finished task's output lives, so that a consumer is told
//!   what to fetch, and the history of finished DAGs for status reports;
//! - the requests made for each group: for the ContainerScheduler's
//!   starts, for the autoscaler, or held back while workers cannot start.
//!
//! It also makes the decisions that sit between the cores: it caps a
//! group's demand at `spindle.dag.group.max.workers` and under the caps on
//! all workers (`mr3.k8s.worker.total.*`, counting the reserve of the
//! group's kind as available), shows an autoscaler's request to the
//! ContainerScheduler first so that recycled workers fill it before the
//! resource manager is asked, stops a worker that registers on a node
//! scale-in released, and kills a group's DAGs once its workers fail to
//! start `spindle.dag.worker.max.start.failures` times.
//!
//! # Inputs and effects
//!
//! [`Session::handle`] takes one [`SessionInput`] (a DAG submitted or
//! killed, a container granted, a worker registered, gone or reporting an
//! attempt, a timer tick, the end of the session) with the time, and
//! returns the [`SessionEffect`]s the driver carries out in order
//! (requests and releases of containers, worker launches, assignments,
//! kills and other messages to workers, replies to requests) and the
//! [`Notice`]s it logs. There is no I/O here and no clock, so the DAG AM
//! (crates/dag-am) and the simulator (crates/sim, `spindle dag sim`) are
//! two drivers of the same code; both only turn effects into I/O or into
//! simulated events.
//!
//! After every input, [`handle`](Session::handle) *settles* the session
//! as the AM does after every event: a worker that finished an attempt
//! (or just arrived) asks for work at once, then every group's
//! TaskScheduler offers all idle capacity (`OfferAll`), the
//! ContainerScheduler is told each group's demand (`GroupDemand`) and,
//! when recycling, which workers turned idle or busy (`WorkerActivity`).
//! A discrete-event simulator treats simultaneous events as one instant:
//! it calls [`apply`](Session::apply) for each event of the instant and
//! [`settle`](Session::settle) once at its end, so all workers are offered
//! work together, in worker order.
//!
//! # How the cores are wired
//!
//! - A submission registers (or joins) its group with the
//!   ContainerScheduler (`RegisterGroup`) and goes to the group's
//!   TaskScheduler (`SubmitDag`). When a client has no active DAG left in a
//!   group that is not the default, it releases the group
//!   (`ReleaseGroup`); a group whose last owner is gone leaves: its workers
//!   go to the reserve (or are terminated under `none`) and its requests
//!   are withdrawn.
//! - A worker registering is `WorkerAdded` in its group's TaskScheduler and
//!   `WorkerStarted` in the ContainerScheduler; every finished attempt is
//!   `AttemptFinished` there.
//! - The group's demand is the workers its pending tasks need, at most
//!   `spindle.dag.group.max.workers`, and within what still fits under the
//!   caps on all workers (the workers being started and the reserve of the
//!   group's kind count as available). For a group with an autoscaler, its
//!   demand is its autoscaler's outstanding requests, so that a recycled
//!   worker takes the place of one; the autoscaler alone sizes the group
//!   and holds requests back during a scale-in.
//! - `StartWorker` becomes a container request (none for an autoscaled
//!   group: its starts are its autoscaler's requests, and are withdrawn
//!   with `WorkerStartWithdrawn` once those are granted or cancelled);
//!   `CancelWorkerStart` withdraws one; `StopWorkerGracefully` drains the
//!   worker in its TaskScheduler and, drained, it is reported
//!   `WorkerStopped`; `ReassignWorker` moves it to another group's
//!   TaskScheduler; `TerminateWorker` stops it and releases its container.
//! - Every tick: each TaskScheduler (`Tick`: the status line), the
//!   ContainerScheduler (fair rebalancing, reserve timeouts), then each
//!   autoscaler with a snapshot of its group (workers, memory for and used
//!   by attempts, pending tasks, requests, workers and memory per node,
//!   draining workers included) and the totals of all workers for its
//!   caps. `RequestWorkers` is first shown to the ContainerScheduler as the
//!   group's demand, and only what recycling cannot give becomes container
//!   requests; `CancelRequests` withdraws requests; `ReleaseNodes` drains
//!   the group's workers on those hosts (after the DAGs active then, and
//!   meanwhile they are not idle for recycling) and stops them once
//!   drained.
//! - A lost worker leaves its TaskScheduler (its attempts are retried and
//!   its lost outputs made again) and the ContainerScheduler
//!   (`WorkerExited`), and its container is released.

mod autoscale;
mod config;
mod dags;
mod effect;
mod groups;
mod input;
mod reconcile;
mod report;
mod workers;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub use config::{keys, SessionConfig};
pub use effect::{
    Assignment, CoreName, DagEnd, DrainReason, Notice, Reply, SessionEffect, TaskInput,
};
pub use input::{SessionInput, WorkerOutcome};
pub use report::{DagState, DagStatus, GroupStatus, SessionCounters, SessionReport, WorkerStatus};

use crate::autoscaler::Autoscaler;
use crate::container_scheduler::ContainerScheduler;
use crate::container_scheduler::{GroupSpec, Input as CsInput};
use crate::dag::Dag;
use crate::task_scheduler::{Input as TsInput, TaskScheduler};
use crate::{AttemptId, DagId, Resource, WorkerId};

/// The owner of the default group: it lives as long as the session.
const SESSION_OWNER: &str = "session";

/// One ContainerGroup of the session.
struct Group {
    spec: GroupSpec,
    /// The request priority that names the group to the resource manager.
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
    /// Of those, the ones decided but not yet sent to the resource manager:
    /// while the autoscaler's request is being served from recycled
    /// workers first.
    auto_unsent: u32,
    /// Active DAGs per client (ownership of the group).
    owners: BTreeMap<String, u32>,
    usage_bp: Option<u64>,
    /// Workers that failed to start since one last registered.
    start_failures: u32,
    /// StartWorker decisions held back while workers of the group cannot
    /// start; carried out once a new DAG gives them another chance. (A
    /// group with an autoscaler makes no request for StartWorker: its
    /// demand is its autoscaler's outstanding requests, which alone holds
    /// requests back during a scale-in.)
    deferred_starts: u32,
    /// The cap on all workers that last cut the group's demand, to notice
    /// when it starts and stops binding.
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

    /// One container request for a worker of the group.
    fn request(&self) -> SessionEffect {
        SessionEffect::RequestContainer {
            group: self.spec.name.clone(),
            priority: self.priority,
            resource: self.spec.worker_resource,
        }
    }

    /// The withdrawal of one of the group's container requests.
    fn cancel(&self) -> SessionEffect {
        SessionEffect::CancelContainerRequest {
            group: self.spec.name.clone(),
            priority: self.priority,
            resource: self.spec.worker_resource,
        }
    }
}

/// A registered worker.
struct WorkerEntry {
    host: String,
    /// The worker's size: what its container holds.
    resource: Resource,
    /// Where it serves its outputs.
    address: String,
    /// `None` in the reserve, or on its way out.
    group: Option<String>,
    drain: Option<DrainReason>,
    /// Idleness as last reported to the ContainerScheduler.
    last_idle: Option<bool>,
}

/// A granted container whose worker has not registered yet.
struct Launching {
    group: String,
    host: String,
    resource: Resource,
    /// Granted for a ContainerScheduler start (else for the autoscaler).
    via_cs: bool,
}

/// A submitted DAG, kept until it falls out of the history.
struct DagRecord {
    name: String,
    client: String,
    group: String,
    queue: String,
    dag: Dag,
    end: Option<DagEnd>,
    submitted_ms: u64,
    finished_ms: Option<u64>,
    total_tasks: u64,
    succeeded_tasks: u64,
    /// Where each finished task's output is: (vertex, task) -> worker.
    outputs: BTreeMap<(u32, u32), WorkerId>,
}

/// The session core. See the [module docs](self).
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
    finished_order: VecDeque<DagId>,
    next_dag: u64,
    attempts: BTreeMap<AttemptId, WorkerId>,
    counters: SessionCounters,
    effects: Vec<SessionEffect>,
    stopping: bool,
    /// Inputs handled by the three cores.
    core_steps: u64,
    /// Inside [`Session::apply`]: a worker's own offer waits for the
    /// settle.
    deferring: bool,
    /// Work out where each input of an assignment is.
    locate_inputs: bool,
    /// Check the cores' invariants after each of their inputs.
    check_every_step: bool,
    violation: Option<String>,
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
            finished_order: VecDeque::new(),
            next_dag: 1,
            attempts: BTreeMap::new(),
            counters: SessionCounters::default(),
            effects: Vec::new(),
            stopping: false,
            core_steps: 0,
            deferring: false,
            locate_inputs: true,
            check_every_step: false,
            violation: None,
        };
        let spec = GroupSpec::new(s.config.default_group.clone(), s.config.worker_resource);
        s.ensure_group(0, SESSION_OWNER, spec)?;
        Ok(s)
    }

    /// Checks every core's invariants after each of its inputs (tests and
    /// simulations); the first violation is returned by
    /// [`check_invariants`](Session::check_invariants).
    pub fn check_every_step(&mut self, on: bool) {
        self.check_every_step = on;
    }

    /// Whether assignments say where each of their inputs is (on by
    /// default: the AM tells each worker what to fetch from where). A
    /// driver that moves no data, such as a simulator, turns it off: its
    /// assignments then list no inputs, and nothing else changes.
    pub fn locate_inputs(&mut self, on: bool) {
        self.locate_inputs = on;
    }

    /// Handles one input as the AM does: the input, the offer of the
    /// worker it concerns, and the settle. Returns the effects, in order.
    pub fn handle(&mut self, now_ms: u64, input: SessionInput) -> Vec<SessionEffect> {
        self.deferring = false;
        let now = self.now(now_ms);
        if self.apply_input(now, input) {
            self.reconcile(now);
        }
        std::mem::take(&mut self.effects)
    }

    /// Handles one input of an instant that has more to come: offers and
    /// the settle wait for [`settle`](Session::settle).
    pub fn apply(&mut self, now_ms: u64, input: SessionInput) -> Vec<SessionEffect> {
        self.deferring = true;
        let now = self.now(now_ms);
        self.apply_input(now, input);
        self.deferring = false;
        std::mem::take(&mut self.effects)
    }

    /// Settles the session at the end of an instant: every group offers
    /// its idle capacity, and the ContainerScheduler learns each group's
    /// demand and (when recycling) its idle workers.
    pub fn settle(&mut self, now_ms: u64) -> Vec<SessionEffect> {
        self.deferring = false;
        let now = self.now(now_ms);
        self.reconcile(now);
        std::mem::take(&mut self.effects)
    }

    /// The input, without the settle; whether the session should settle
    /// after it (it does not after an input it ignored or refused).
    fn apply_input(&mut self, now: u64, input: SessionInput) -> bool {
        match input {
            SessionInput::SubmitDag {
                client,
                spec,
                group,
                queue,
            } => match self.submit(now, &client, spec, group, queue) {
                Ok(id) => {
                    self.reply(Reply::Submitted(id));
                    true
                }
                Err(e) => {
                    self.reply(Reply::Refused(e));
                    false
                }
            },
            SessionInput::KillDag { dag, client } => match self.kill(now, dag, &client) {
                Ok(()) => {
                    self.reply(Reply::Killed(dag));
                    true
                }
                Err(e) => {
                    self.reply(Reply::Refused(e));
                    false
                }
            },
            SessionInput::ContainerGranted {
                container,
                host,
                priority,
            } => self.container_granted(now, container, host, priority),
            SessionInput::LaunchFailed { container, error } => {
                self.launch_failed(now, &container, &error);
                true
            }
            SessionInput::WorkerRegistered { worker, address } => {
                match self.worker_registered(now, &worker, address) {
                    Ok(settle) => {
                        self.reply(Reply::Registered);
                        settle
                    }
                    Err(e) => {
                        self.reply(Reply::Refused(e));
                        false
                    }
                }
            }
            SessionInput::AttemptFinished {
                worker,
                attempt,
                outcome,
            } => self.attempt_finished(now, &worker, attempt, outcome),
            SessionInput::WorkerGone { worker, why } => self.worker_gone(now, &worker, &why),
            SessionInput::Tick => {
                self.tick(now);
                true
            }
            SessionInput::Stop { reason } => {
                self.stop(&reason);
                false
            }
        }
    }

    fn now(&mut self, now_ms: u64) -> u64 {
        self.last_ms = self.last_ms.max(now_ms);
        self.last_ms
    }

    fn reply(&mut self, reply: Reply) {
        self.effects.push(SessionEffect::Reply(reply));
    }

    fn notice(&mut self, notice: Notice) {
        self.effects.push(SessionEffect::Notice(notice));
    }

    /// Time passes: status lines, fair rebalancing, reserve timeouts,
    /// autoscaling.
    fn tick(&mut self, now: u64) {
        let names: Vec<String> = self.groups.keys().cloned().collect();
        for g in &names {
            self.ts_input(now, g, TsInput::Tick);
        }
        self.cs_input(now, CsInput::Tick);
        for g in &names {
            self.autoscale(now, g);
        }
    }

    // ----- the cores -----

    /// One input to a group's TaskScheduler; its decisions are carried out.
    fn ts_input(&mut self, now: u64, group: &str, input: TsInput) {
        let Some(g) = self.groups.get_mut(group) else {
            let input = format!("{input:?}");
            self.notice(Notice::InputForGoneGroup {
                group: group.to_string(),
                input,
            });
            return;
        };
        let result = g.ts.handle(now, input);
        self.core_steps += 1;
        if self.check_every_step && self.violation.is_none() {
            if let Err(e) = g.ts.check_invariants() {
                self.violation = Some(format!("group {group}: {e}"));
            }
        }
        match result {
            Ok(d) => self.apply_task_decisions(now, group, d),
            Err(e) => self.notice(Notice::InputRefused {
                core: CoreName::TaskScheduler,
                group: Some(group.to_string()),
                error: e.to_string(),
            }),
        }
    }

    /// One input to the ContainerScheduler; its actions are carried out.
    fn cs_input(&mut self, now: u64, input: CsInput) {
        let result = self.cs.handle(now, input);
        self.core_steps += 1;
        if self.check_every_step && self.violation.is_none() {
            if let Err(e) = self.cs.check_invariants() {
                self.violation = Some(e.to_string());
            }
        }
        match result {
            Ok(d) => self.apply_cs(now, d.actions),
            Err(e) => self.notice(Notice::InputRefused {
                core: CoreName::ContainerScheduler,
                group: None,
                error: e.to_string(),
            }),
        }
    }

    /// `WorkerRemoved` in the group's TaskScheduler.
    fn remove_from_group(&mut self, now: u64, group: &str, worker: &WorkerId) {
        self.notice(Notice::WorkerLeftGroup {
            worker: worker.clone(),
            group: group.to_string(),
        });
        self.ts_input(
            now,
            group,
            TsInput::WorkerRemoved {
                worker: worker.clone(),
            },
        );
    }

    /// Offers the worker's free resources to its group, unless the offer
    /// waits for the settle (inside [`Session::apply`]).
    fn offer_worker(&mut self, now: u64, group: &str, worker: &WorkerId) {
        if self.deferring {
            return;
        }
        self.ts_input(
            now,
            group,
            TsInput::Offer {
                worker: worker.clone(),
            },
        );
    }

    // ----- queries -----

    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    pub fn counters(&self) -> &SessionCounters {
        &self.counters
    }

    /// Inputs the three cores have handled.
    pub fn core_steps(&self) -> u64 {
        self.core_steps
    }

    /// Checks the cores' invariants and the session's own bookkeeping
    /// against them (tests and simulations; a violation is a bug).
    pub fn check_invariants(&self) -> Result<(), String> {
        if let Some(v) = &self.violation {
            return Err(v.clone());
        }
        self.cs.check_invariants().map_err(|e| e.to_string())?;
        for (name, g) in &self.groups {
            g.ts.check_invariants().map_err(|e| e.to_string())?;
            if let Some(a) = &g.autoscaler {
                a.check_invariants().map_err(|e| e.to_string())?;
                // Its starts in the ContainerScheduler are its autoscaler's
                // outstanding requests, and nothing else asks for workers.
                let starting = self.cs.starting(name);
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
            if !self.stopping {
                let mine: Vec<WorkerId> = self
                    .workers
                    .iter()
                    .filter(|(_, w)| w.group.as_deref() == Some(name.as_str()))
                    .map(|(id, _)| id.clone())
                    .collect();
                if mine != g.ts.workers() {
                    return Err(format!(
                        "group {name}: the session has workers {mine:?}, its task scheduler {:?}",
                        g.ts.workers()
                    ));
                }
            }
        }
        if !self.stopping {
            for (id, w) in &self.workers {
                if self.cs.group_of(id) != w.group.as_deref() {
                    return Err(format!(
                        "worker {id}: the session has it in {:?}, the container scheduler in {:?}",
                        w.group,
                        self.cs.group_of(id)
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
