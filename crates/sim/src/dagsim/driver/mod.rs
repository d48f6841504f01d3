//! The discrete-event driver of `spindle dag sim`: the DAG AM's session
//! core ([`Session`]) on a simulated cluster, for every scenario (the
//! experiments' fixed cluster is a cluster of ready nodes that are never
//! reclaimed).
//!
//! The session makes every decision the DAG AM makes; this driver only
//! turns its effects into simulated events, as the AM turns them into I/O:
//! a container request waits in the cluster's queue until a node grants
//! it, a launched worker registers after a start delay, an assignment is an
//! attempt that ends after its task's duration (or is reported killed when
//! the session kills it), a released container frees its node's slot.
//! Clients submit DAGs one after another, each the instant the previous
//! one succeeded.
//!
//! Simultaneous events form one instant: each is applied to the session
//! ([`Session::apply`]) and the session settles once at the end of the
//! instant ([`Session::settle`]), so that all workers are offered work
//! together, in worker order (the AM settles after every event).
//!
//! The cluster stands for the resource manager and the cloud under it: it
//! grants requests first come first served on ready nodes with a free
//! worker slot (nodes in the order they joined), asks for new nodes when
//! the waiting requests exceed the free slots of the nodes already coming
//! (each ready after a provisioning delay), starts a granted worker after
//! a start delay, and reclaims a node that has had no worker for a while:
//! MR3 "assumes that the underlying system can detect idle nodes". It
//! knows nothing of the autoscaler's decisions.

use std::collections::{BTreeMap, VecDeque};

use spindle_dag::autoscaler::{ScaleOutCause, ScaleState};
use spindle_dag::container_scheduler::GroupSpec;
use spindle_dag::session::{
    DagEnd, DrainReason, Notice, Reply, Session, SessionConfig, SessionEffect, SessionInput,
    WorkerOutcome,
};
use spindle_dag::{AttemptId, DagId, Resource, WorkerId};

use super::workload::QueryModel;
use super::DagSimError;

mod cluster;
mod measure;
mod outcome;

pub(crate) use outcome::{
    Counters, DagRun, Move, RequestRecord, Sample, ScaleAction, ScaleEvent, SimOutcome, StateChange,
};

/// How the simulated cluster provides nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeModel {
    /// Workers (containers of the groups' worker size) one node holds.
    pub workers_per_node: u32,
    /// From asking for a node to the node taking containers.
    pub provision_ms: u64,
    /// From a granted container to its worker registering with the AM.
    pub worker_start_ms: u64,
    /// A node without any worker for this long is reclaimed (never when
    /// `None`).
    pub reclaim_after_ms: Option<u64>,
    /// Nodes ready at time 0.
    pub initial_nodes: u32,
    /// Most nodes at once (the cloud's quota).
    pub max_nodes: u32,
}

/// One ContainerGroup the clients use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupPlan {
    pub name: String,
    pub worker: Resource,
    /// The session's default group: its clients name no group (the
    /// session's settings give its name and worker size).
    pub default: bool,
}

/// When a client submits its first DAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientStart {
    At {
        ms: u64,
    },
    /// `delay_ms` after every client of `group` has run its last DAG.
    AfterGroup {
        group: usize,
        delay_ms: u64,
    },
}

/// One client: its group, when it starts, the queries it submits one
/// after another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimClient {
    pub name: String,
    pub group: usize,
    pub start: ClientStart,
    pub queries: Vec<usize>,
    /// A background client goes round its queries until this long after
    /// every other client is done, instead of running them once.
    pub background_until_ms: Option<u64>,
}

/// Everything one simulation needs.
pub(crate) struct SimSpec<'a> {
    pub queries: &'a [QueryModel],
    pub groups: &'a [GroupPlan],
    pub clients: &'a [SimClient],
    pub nodes: NodeModel,
    /// The session's settings (the AM's).
    pub config: SessionConfig,
    /// How often the session ticks.
    pub tick_ms: u64,
    /// How long the run goes on after the last DAG finished.
    pub quiet_ms: u64,
    pub check_invariants: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Submit(usize),
    AttemptEnd(AttemptId),
    AttemptKilled(AttemptId),
    NodeReady(usize),
    WorkerUp(WorkerId),
    NodeCheck(usize),
    Tick,
}

/// A registered worker, as the cluster sees it.
struct Worker {
    node: usize,
    up_ms: u64,
    /// Attempts it runs.
    running: u64,
    /// When scale-in released its node.
    released_ms: Option<u64>,
}

/// A granted container whose worker has not registered yet.
struct Launching {
    node: usize,
    /// Its `WorkerUp` event.
    key: (u64, u64),
}

struct Node {
    name: String,
    asked_ms: u64,
    ready: bool,
    /// Workers placed here, launching or running.
    workers: u32,
    empty_since: Option<u64>,
    gone_ms: Option<u64>,
}

struct Running {
    worker: WorkerId,
    started_ms: u64,
    key: (u64, u64),
}

struct ClientState {
    /// It has run its last DAG.
    done: bool,
    next: usize,
    current: Option<(DagId, usize, u64)>,
    runs: Vec<DagRun>,
}

struct Driver<'a> {
    spec: &'a SimSpec<'a>,
    session: Session,
    now: u64,
    seq: u64,
    events: BTreeMap<(u64, u64), Event>,
    workers: BTreeMap<WorkerId, Worker>,
    launching: BTreeMap<WorkerId, Launching>,
    /// The container being granted, and its node.
    granting: Option<(WorkerId, usize)>,
    nodes: Vec<Node>,
    /// Ungranted requests, first come first served: the request priority
    /// (which names the group) of each.
    queue: VecDeque<i32>,
    running: BTreeMap<AttemptId, Running>,
    clients: Vec<ClientState>,
    dags: BTreeMap<DagId, usize>,
    next_worker: u64,
    unfinished: usize,
    end_ms: Option<u64>,
    last_dag_ms: u64,
    /// When the last client that is not a background one was done.
    foreground_done_ms: Option<u64>,
    counters: Counters,
    peak_workers: u32,
    peak_nodes: u32,
    worker_ms: u64,
    busy_ms: u64,
    scale_events: Vec<ScaleEvent>,
    state_changes: Vec<StateChange>,
    /// Each group's autoscaler state at the last tick.
    last_states: BTreeMap<String, ScaleState>,
    moves: Vec<Move>,
    requests: Vec<RequestRecord>,
    samples: Vec<Sample>,
    busiest: Option<(u64, String)>,
}

/// A run that goes on this long is stuck (a DAG that never gets a worker).
const MAX_SIMULATED_MS: u64 = 7 * 24 * 3_600_000;

/// Runs the clients' plans until the last DAG has finished and the quiet
/// period after it is over.
pub(crate) fn simulate(spec: &SimSpec<'_>) -> Result<SimOutcome, DagSimError> {
    let mut d = Driver::new(spec)?;
    d.start();
    while let Some(&(t, _)) = d.events.keys().next() {
        if d.end_ms.is_some_and(|end| t > end) {
            break;
        }
        if t > MAX_SIMULATED_MS {
            return Err(DagSimError::Driver(format!(
                "still running after {} simulated hours: {}",
                MAX_SIMULATED_MS / 3_600_000,
                d.stuck()
            )));
        }
        d.now = t;
        while let Some(entry) = d.events.first_entry() {
            if entry.key().0 != t {
                break;
            }
            let event = entry.remove();
            d.apply(event)?;
        }
        let effects = d.session.settle(t);
        d.carry_out(effects)?;
        d.cluster_step()?;
        d.note_peaks();
        d.check_own_invariants()?;
    }
    d.finish()
}

impl<'a> Driver<'a> {
    fn new(spec: &'a SimSpec<'a>) -> Result<Driver<'a>, DagSimError> {
        if spec.nodes.workers_per_node == 0 || spec.tick_ms == 0 {
            return Err(DagSimError::Options(
                "a node holds at least one worker and the cores tick".into(),
            ));
        }
        for c in spec.clients {
            if c.group >= spec.groups.len() {
                return Err(DagSimError::Workload(format!(
                    "client {} names group #{}, but there are {} groups",
                    c.name,
                    c.group,
                    spec.groups.len()
                )));
            }
            if let ClientStart::AfterGroup { group, .. } = c.start {
                if group >= spec.groups.len() || group == c.group {
                    return Err(DagSimError::Workload(format!(
                        "client {} waits for group #{group}, which is its own or does not exist",
                        c.name
                    )));
                }
            }
            if let Some(&bad) = c.queries.iter().find(|&&q| q >= spec.queries.len()) {
                return Err(DagSimError::Workload(format!(
                    "client {} names query #{bad}, but there are {} queries",
                    c.name,
                    spec.queries.len()
                )));
            }
        }
        let mut session = Session::new(spec.config.clone()).map_err(DagSimError::Driver)?;
        session.check_every_step(spec.check_invariants);
        // Nothing is fetched in simulation.
        session.locate_inputs(false);
        Ok(Driver {
            spec,
            session,
            now: 0,
            seq: 0,
            events: BTreeMap::new(),
            workers: BTreeMap::new(),
            launching: BTreeMap::new(),
            granting: None,
            nodes: Vec::new(),
            queue: VecDeque::new(),
            running: BTreeMap::new(),
            clients: spec
                .clients
                .iter()
                .map(|c| ClientState {
                    done: c.queries.is_empty(),
                    next: 0,
                    current: None,
                    runs: Vec::new(),
                })
                .collect(),
            dags: BTreeMap::new(),
            next_worker: 1,
            unfinished: spec
                .clients
                .iter()
                .filter(|c| !c.queries.is_empty())
                .count(),
            end_ms: None,
            last_dag_ms: 0,
            foreground_done_ms: None,
            counters: Counters::default(),
            peak_workers: 0,
            peak_nodes: 0,
            worker_ms: 0,
            busy_ms: 0,
            scale_events: Vec::new(),
            state_changes: Vec::new(),
            last_states: BTreeMap::new(),
            moves: Vec::new(),
            requests: Vec::new(),
            samples: Vec::new(),
            busiest: None,
        })
    }

    fn push(&mut self, at_ms: u64, event: Event) -> (u64, u64) {
        let key = (at_ms, self.seq);
        self.events.insert(key, event);
        self.seq += 1;
        key
    }

    fn start(&mut self) {
        for _ in 0..self.spec.nodes.initial_nodes {
            let n = self.add_node(0);
            self.nodes[n].ready = true;
            self.node_emptied(n);
        }
        for (c, plan) in self.spec.clients.iter().enumerate() {
            if let (false, ClientStart::At { ms }) = (plan.queries.is_empty(), plan.start) {
                self.push(ms, Event::Submit(c));
            }
        }
        if self.unfinished == 0 {
            self.end_ms = Some(self.spec.quiet_ms);
        }
        self.push(0, Event::Tick);
    }

    fn add_node(&mut self, asked_ms: u64) -> usize {
        let n = self.nodes.len();
        self.nodes.push(Node {
            name: format!("node-{:03}", n + 1),
            asked_ms,
            ready: false,
            workers: 0,
            empty_since: None,
            gone_ms: None,
        });
        self.counters.nodes_provisioned += 1;
        n
    }

    /// The node has no worker any more: it is checked for reclaim later.
    fn node_emptied(&mut self, n: usize) {
        self.nodes[n].empty_since = Some(self.now);
        if let Some(after) = self.spec.nodes.reclaim_after_ms {
            self.push(self.now + after, Event::NodeCheck(n));
        }
    }

    // ----- the session -----

    /// One input to the session within the current instant; its effects
    /// are carried out. Returns its reply, if any.
    fn input(&mut self, input: SessionInput) -> Result<Option<Reply>, DagSimError> {
        let effects = self.session.apply(self.now, input);
        if self.spec.check_invariants {
            self.session
                .check_invariants()
                .map_err(|e| DagSimError::Invariant(spindle_dag::InvariantViolation(e)))?;
        }
        self.carry_out(effects)
    }

    // ----- events -----

    fn apply(&mut self, event: Event) -> Result<(), DagSimError> {
        match event {
            Event::Submit(c) => self.submit(c),
            Event::AttemptEnd(attempt) => {
                let Some(r) = self.running.remove(&attempt) else {
                    return Ok(());
                };
                self.busy_ms += self.now - r.started_ms;
                self.attempt_over(attempt, r, WorkerOutcome::Succeeded)
            }
            Event::AttemptKilled(attempt) => {
                let Some(r) = self.running.remove(&attempt) else {
                    return Ok(());
                };
                let outcome = WorkerOutcome::Killed {
                    reason: "killed by the AM".into(),
                };
                self.attempt_over(attempt, r, outcome)
            }
            Event::NodeReady(n) => {
                let node = &mut self.nodes[n];
                if node.gone_ms.is_none() {
                    node.ready = true;
                    if node.workers == 0 {
                        self.node_emptied(n);
                    }
                }
                Ok(())
            }
            Event::WorkerUp(worker) => self.worker_up(worker),
            Event::NodeCheck(n) => {
                let reclaim = self.spec.nodes.reclaim_after_ms.unwrap_or(u64::MAX);
                let node = &mut self.nodes[n];
                if node.gone_ms.is_none()
                    && node.ready
                    && node.workers == 0
                    && node
                        .empty_since
                        .is_some_and(|t| t.saturating_add(reclaim) <= self.now)
                {
                    node.gone_ms = Some(self.now);
                    self.counters.nodes_reclaimed += 1;
                }
                Ok(())
            }
            Event::Tick => self.tick(),
        }
    }

    fn attempt_over(
        &mut self,
        attempt: AttemptId,
        r: Running,
        outcome: WorkerOutcome,
    ) -> Result<(), DagSimError> {
        if let Some(w) = self.workers.get_mut(&r.worker) {
            w.running = w.running.saturating_sub(1);
        }
        self.input(SessionInput::AttemptFinished {
            worker: r.worker,
            attempt,
            outcome,
        })?;
        Ok(())
    }

    fn submit(&mut self, c: usize) -> Result<(), DagSimError> {
        let plan = &self.spec.clients[c];
        let next = self.clients[c].next;
        let query = match plan.background_until_ms {
            Some(_) if !plan.queries.is_empty() => plan.queries[next % plan.queries.len()],
            _ => match plan.queries.get(next) {
                Some(&q) => q,
                None => return Ok(()),
            },
        };
        let group = &self.spec.groups[plan.group];
        let input = SessionInput::SubmitDag {
            client: plan.name.clone(),
            spec: self.spec.queries[query].spec.clone(),
            group: (!group.default).then(|| GroupSpec::new(group.name.clone(), group.worker)),
            queue: None,
        };
        let id = match self.input(input)? {
            Some(Reply::Submitted(id)) => id,
            other => {
                return Err(DagSimError::Driver(format!(
                    "the session answered {other:?} to a DAG of {}",
                    plan.name
                )))
            }
        };
        let state = &mut self.clients[c];
        state.next += 1;
        state.current = Some((id, query, self.now));
        self.dags.insert(id, c);
        Ok(())
    }

    fn worker_up(&mut self, worker: WorkerId) -> Result<(), DagSimError> {
        let Some(l) = self.launching.remove(&worker) else {
            return Err(DagSimError::Driver(format!(
                "worker {worker} registered but was never started"
            )));
        };
        self.workers.insert(
            worker.clone(),
            Worker {
                node: l.node,
                up_ms: self.now,
                running: 0,
                released_ms: None,
            },
        );
        self.counters.workers_started += 1;
        let input = SessionInput::WorkerRegistered {
            worker: worker.clone(),
            address: worker.to_string(),
        };
        match self.input(input)? {
            Some(Reply::Registered) => Ok(()),
            other => Err(DagSimError::Driver(format!(
                "the session answered {other:?} to worker {worker}"
            ))),
        }
    }

    fn tick(&mut self) -> Result<(), DagSimError> {
        self.input(SessionInput::Tick)?;
        for (g, plan) in self.spec.groups.iter().enumerate() {
            let state = self
                .session
                .group(&plan.name)
                .and_then(|s| s.autoscale_state);
            match state {
                // A state entered and left within the tick (a grace period
                // ending and a new decision at once) shows as its end state.
                Some(state) => {
                    let last = self
                        .last_states
                        .insert(plan.name.clone(), state)
                        .unwrap_or(ScaleState::Stable);
                    if state != last {
                        self.state_changes.push(StateChange {
                            at_ms: self.now,
                            group: g,
                            state,
                        });
                    }
                }
                None => {
                    self.last_states.remove(&plan.name);
                }
            }
        }
        self.sample();
        let next = self.now + self.spec.tick_ms;
        if self.end_ms.is_none_or(|end| next <= end) {
            self.push(next, Event::Tick);
        }
        Ok(())
    }

    // ----- effects -----

    /// Turns the session's effects into simulated events; returns the
    /// reply among them, if any.
    fn carry_out(&mut self, effects: Vec<SessionEffect>) -> Result<Option<Reply>, DagSimError> {
        let mut reply = None;
        for effect in effects {
            match effect {
                SessionEffect::Reply(r) => reply = Some(r),
                SessionEffect::RequestContainer {
                    group, priority, ..
                } => self.request(&group, priority),
                SessionEffect::CancelContainerRequest { priority, .. } => self.withdraw(priority),
                SessionEffect::LaunchWorker { container, .. } => match self.granting.take() {
                    Some((c, node)) if c == container => {
                        let at = self.now + self.spec.nodes.worker_start_ms;
                        let key = self.push(at, Event::WorkerUp(c.clone()));
                        self.launching.insert(c, Launching { node, key });
                    }
                    _ => {
                        return Err(DagSimError::Driver(format!(
                            "the session launched {container}, which the cluster did not grant"
                        )))
                    }
                },
                SessionEffect::ReleaseContainer { container } => self.released(&container)?,
                SessionEffect::Assign { worker, assignment } => {
                    self.start_attempt(worker, assignment.attempt)?
                }
                SessionEffect::KillAttempt { attempt, .. } => {
                    // The worker stops the attempt and reports it.
                    if let Some(key) = self.running.get(&attempt).map(|r| r.key) {
                        self.events.remove(&key);
                        self.counters.attempts_killed += 1;
                        self.push(self.now, Event::AttemptKilled(attempt));
                    }
                }
                SessionEffect::MoveWorker { worker, from, to } => {
                    let to = self.group_index(&to)?;
                    let from = match from {
                        Some(f) => Some(self.group_index(&f)?),
                        None => None,
                    };
                    self.moves.push(Move {
                        at_ms: self.now,
                        worker: worker.to_string(),
                        from,
                        to,
                    });
                }
                // The worker exits with its container (released next).
                SessionEffect::StopWorker { .. } | SessionEffect::DagDone { .. } => {}
                SessionEffect::DagEnded { dag, end, .. } => match end {
                    DagEnd::Succeeded => self.dag_succeeded(dag)?,
                    DagEnd::Failed { reason } | DagEnd::Killed { reason } => {
                        return Err(DagSimError::Driver(format!(
                            "{dag} ended unsuccessfully: {reason}"
                        )));
                    }
                },
                SessionEffect::Notice(notice) => self.noticed(notice)?,
            }
        }
        Ok(reply)
    }

    fn noticed(&mut self, notice: Notice) -> Result<(), DagSimError> {
        match notice {
            Notice::StatusLine { group, line } => {
                let pending = self.session.group(&group).map_or(0, |g| g.pending_tasks);
                if self.busiest.as_ref().is_none_or(|(p, _)| pending > *p) {
                    self.busiest = Some((pending, line));
                }
            }
            Notice::WorkersRequested {
                group,
                cause,
                count,
                usage_bp,
            } => {
                match cause {
                    ScaleOutCause::Initial => self.counters.initial_requests += 1,
                    ScaleOutCause::Usage => self.counters.scale_outs += 1,
                }
                let group = self.group_index(&group)?;
                self.scale_events.push(ScaleEvent {
                    at_ms: self.now,
                    group,
                    action: ScaleAction::Request {
                        count,
                        cause,
                        recycled: 0,
                    },
                    usage_bp,
                });
            }
            Notice::RecycledForRequests { recycled: n, .. } => {
                self.counters.requests_recycled += n;
                if let Some(ScaleEvent {
                    action: ScaleAction::Request { recycled, .. },
                    ..
                }) = self.scale_events.last_mut()
                {
                    *recycled = n;
                }
            }
            Notice::RecycledInPlaceOfRequest { .. } => self.counters.requests_recycled += 1,
            Notice::ScaleOutOver { group, count } => {
                self.counters.scale_out_cancels += 1;
                let group = self.group_index(&group)?;
                self.scale_events.push(ScaleEvent {
                    at_ms: self.now,
                    group,
                    action: ScaleAction::Cancel { count },
                    usage_bp: self
                        .session
                        .group(&self.spec.groups[group].name)
                        .and_then(|g| g.usage_bp),
                });
            }
            Notice::NodesReleased {
                group,
                hosts,
                usage_bp,
                workers,
                ..
            } => {
                let group = self.group_index(&group)?;
                for w in &workers {
                    if let Some(w) = self.workers.get_mut(w) {
                        w.released_ms = Some(self.now);
                    }
                }
                self.scale_events.push(ScaleEvent {
                    at_ms: self.now,
                    group,
                    action: ScaleAction::Release {
                        hosts,
                        workers: workers.len() as u32,
                    },
                    usage_bp,
                });
            }
            Notice::WorkerDraining {
                reason: DrainReason::Recycle,
                ..
            } => self.counters.graceful_stops += 1,
            Notice::WorkerDrained {
                worker,
                reason: DrainReason::ScaleIn,
                ..
            } => {
                let released = self.workers.get(&worker).and_then(|w| w.released_ms);
                if let Some(wait) = released.map(|t| self.now - t).filter(|w| *w > 0) {
                    self.counters.released_after_waiting += 1;
                    self.counters.longest_release_wait_ms =
                        self.counters.longest_release_wait_ms.max(wait);
                }
            }
            // Its attempts there are retried elsewhere: they will not end.
            Notice::WorkerLeftGroup { worker, .. } => self.drop_attempts(&worker),
            Notice::InputRefused { .. }
            | Notice::InputForGoneGroup { .. }
            | Notice::IgnoredAttemptEnd { .. }
            | Notice::AssignmentOfUnknownDag { .. }
            | Notice::LaunchFailed { .. }
            | Notice::StartsBlocked { .. } => {
                return Err(DagSimError::Driver(format!(
                    "the session noticed a broken contract: {notice:?}"
                )))
            }
            _ => {}
        }
        Ok(())
    }

    fn group_index(&self, name: &str) -> Result<usize, DagSimError> {
        self.spec
            .groups
            .iter()
            .position(|g| g.name == name)
            .ok_or_else(|| DagSimError::Driver(format!("group {name} is in no plan")))
    }

    fn start_attempt(&mut self, worker: WorkerId, attempt: AttemptId) -> Result<(), DagSimError> {
        let c = self.dags.get(&attempt.task.dag).copied().ok_or_else(|| {
            DagSimError::Driver(format!("assignment {attempt} of an unknown DAG"))
        })?;
        let query = self.clients[c]
            .current
            .map(|(_, q, _)| q)
            .ok_or_else(|| DagSimError::Driver(format!("{attempt} of an idle client")))?;
        let duration = self.spec.queries[query]
            .duration_ms(attempt.task.vertex, attempt.task.task)
            .ok_or_else(|| {
                DagSimError::Driver(format!("assignment {attempt} of an unknown task"))
            })?;
        let w = self
            .workers
            .get_mut(&worker)
            .ok_or_else(|| DagSimError::Driver(format!("assignment to unknown worker {worker}")))?;
        w.running += 1;
        let key = self.push(self.now + duration, Event::AttemptEnd(attempt));
        self.running.insert(
            attempt,
            Running {
                worker,
                started_ms: self.now,
                key,
            },
        );
        Ok(())
    }

    /// The attempts the worker runs are gone (it left their group, or
    /// exits).
    fn drop_attempts(&mut self, worker: &WorkerId) {
        let lost: Vec<AttemptId> = self
            .running
            .iter()
            .filter(|(_, r)| &r.worker == worker)
            .map(|(a, _)| *a)
            .collect();
        for a in lost {
            if let Some(r) = self.running.remove(&a) {
                self.events.remove(&r.key);
            }
        }
        if let Some(w) = self.workers.get_mut(worker) {
            w.running = 0;
        }
    }

    fn dag_succeeded(&mut self, dag: DagId) -> Result<(), DagSimError> {
        let c = self.dags.remove(&dag).ok_or_else(|| {
            DagSimError::Driver(format!("{dag} succeeded but was never submitted"))
        })?;
        let state = &mut self.clients[c];
        let Some((id, query, submitted_ms)) = state.current.take() else {
            return Err(DagSimError::Driver(format!(
                "{dag} succeeded but its client runs nothing"
            )));
        };
        if id != dag {
            return Err(DagSimError::Driver(format!(
                "{dag} succeeded but its client runs {id}"
            )));
        }
        state.runs.push(DagRun {
            query,
            submitted_ms,
            finished_ms: self.now,
        });
        self.last_dag_ms = self.last_dag_ms.max(self.now);
        let plan = &self.spec.clients[c];
        let more = match plan.background_until_ms {
            None => state.next < plan.queries.len(),
            Some(extra) => self
                .foreground_done_ms
                .is_none_or(|done| self.now < done + extra),
        };
        if more {
            self.push(self.now, Event::Submit(c));
            return Ok(());
        }
        state.done = true;
        self.unfinished -= 1;
        if self.unfinished == 0 {
            self.end_ms = Some(self.now + self.spec.quiet_ms);
        }
        let foreground_done = self
            .spec
            .clients
            .iter()
            .zip(&self.clients)
            .all(|(p, s)| p.background_until_ms.is_some() || s.done);
        if foreground_done && self.foreground_done_ms.is_none() {
            self.foreground_done_ms = Some(self.now);
        }
        let g = self.spec.clients[c].group;
        let group_done = self
            .spec
            .clients
            .iter()
            .zip(&self.clients)
            .filter(|(p, _)| p.group == g)
            .all(|(_, s)| s.done);
        if group_done {
            for (next, plan) in self.spec.clients.iter().enumerate() {
                match plan.start {
                    ClientStart::AfterGroup { group, delay_ms }
                        if group == g && !plan.queries.is_empty() =>
                    {
                        self.push(self.now + delay_ms, Event::Submit(next));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}
