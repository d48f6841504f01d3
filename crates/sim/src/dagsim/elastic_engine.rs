//! The elastic driver: the three DAG cores — one [`TaskScheduler`] and
//! (with autoscaling) one [`Autoscaler`] per ContainerGroup, one
//! [`ContainerScheduler`] — on a simulated cluster whose nodes come and go.
//!
//! The wiring is the DAG AM's (`crates/dag-am/src/session.rs`), event for
//! event, so that what the simulation shows is what the AM would do:
//!
//! - a client's first DAG registers its group with the container
//!   scheduler; when a client of a non-default group has run its last DAG
//!   it releases the group, and a group whose last owner is gone leaves
//!   (its workers go to the reserve, or are terminated under `none`);
//! - after every batch of simultaneous events (the AM: after every event)
//!   each group's task scheduler gets an `OfferAll`, the container
//!   scheduler the group's demand (for a group with an autoscaler, which
//!   alone decides how many workers the group has, its autoscaler's
//!   outstanding requests, so that a recycled worker takes the place of
//!   one; otherwise the workers its pending tasks need, at most
//!   `spindle.dag.group.max.workers` and within the caps on all workers,
//!   counting the reserve of the group's kind as available) and, under
//!   `fifo` and `fair`, which workers became idle or busy;
//! - every tick (`mr3.check.memory.usage.event.interval.secs`) the task
//!   schedulers, the container scheduler and then each autoscaler tick, the
//!   autoscaler with a snapshot of its group (workers, task memory and its
//!   use, pending tasks, requests not yet running, workers and memory in
//!   use per node) and the totals of all workers for the caps;
//! - `RequestWorkers` is first the group's demand, so that the container
//!   scheduler hands it recycled workers of its kind, then container
//!   requests for the rest; `StartWorker` becomes a container request
//!   (none for an autoscaled group: its starts are its autoscaler's
//!   requests); `CancelRequests` and `CancelWorkerStart` withdraw requests
//!   not yet granted; `ReleaseNodes` drains the group's workers on those
//!   hosts (after the DAGs active then; not idle for recycling meanwhile)
//!   and, drained, they exit; a worker granted for the autoscaler on a
//!   host being released exits at once; `StopWorkerGracefully` drains a
//!   worker, which, drained, is reported stopped; `ReassignWorker` moves it
//!   to another group's task scheduler, and into an autoscaled group it
//!   takes the place of one of its autoscaler's requests;
//!   `TerminateWorker` releases it.
//!
//! The cluster stands for the resource manager and the cloud under it: it
//! grants requests first come first served on ready nodes with a free
//! worker slot (nodes in the order they joined), asks for new nodes when
//! the waiting requests exceed the free slots of the nodes already coming
//! (each ready after a provisioning delay), starts a granted worker after
//! a start delay, and reclaims a node that has had no worker for a while:
//! MR3 "assumes that the underlying system can detect idle nodes". It
//! knows nothing of the autoscaler's decisions.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use spindle_dag::autoscaler::{
    AutoscaleAction, Autoscaler, ClusterSnapshot, NodeUsage, ScaleOutCause, ScaleState,
    WorkerTotals,
};
use spindle_dag::config::{ContainerSchedulerScheme, DagConfig};
use spindle_dag::container_scheduler::{
    self as cs, ContainerAction, ContainerScheduler, GroupSpec,
};
use spindle_dag::task_scheduler::{self as ts, AttemptOutcome, DagEvent, TaskScheduler};
use spindle_dag::{AttemptId, DagId, Resource, WorkerId};

use super::workload::QueryModel;
use super::DagSimError;

/// How the simulated cluster provides nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeModel {
    /// Workers (containers of the groups' worker size) one node holds.
    pub workers_per_node: u32,
    /// From asking for a node to the node taking containers.
    pub provision_ms: u64,
    /// From a granted container to its worker registering with the AM.
    pub worker_start_ms: u64,
    /// A node without any worker for this long is reclaimed.
    pub reclaim_after_ms: u64,
    /// Nodes ready at time 0.
    pub initial_nodes: u32,
    /// Most nodes at once (the cloud's quota).
    pub max_nodes: u32,
}

/// One ContainerGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupPlan {
    pub name: String,
    pub worker: Resource,
    /// The session's default group, which the AM never releases.
    pub default: bool,
    /// `spindle.dag.group.max.workers`: most workers the group starts on
    /// demand (autoscaling off).
    pub max_workers: u32,
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
pub(crate) struct ElasticClient {
    pub name: String,
    pub group: usize,
    pub start: ClientStart,
    pub queries: Vec<usize>,
    /// A background client goes round its queries until this long after
    /// every other client is done, instead of running them once.
    pub background_until_ms: Option<u64>,
}

/// Everything one elastic simulation needs.
pub(crate) struct ElasticSpec<'a> {
    pub queries: &'a [QueryModel],
    /// In name order (the AM keeps its groups by name).
    pub groups: &'a [GroupPlan],
    pub clients: &'a [ElasticClient],
    pub nodes: NodeModel,
    pub config: DagConfig,
    /// How often the cores tick.
    pub tick_ms: u64,
    /// How long the run goes on after the last DAG finished.
    pub quiet_ms: u64,
    pub check_invariants: bool,
}

/// One DAG a client ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DagRecord {
    pub query: usize,
    pub submitted_ms: u64,
    pub finished_ms: u64,
}

/// An autoscaler decision as carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScaleAction {
    /// `RequestWorkers`, with the autoscaler's reason, and how many of the
    /// workers recycled ones provided at once (the rest were requested).
    Request {
        count: u32,
        cause: ScaleOutCause,
        recycled: u32,
    },
    /// `CancelRequests`: how many requests were still waiting.
    Cancel { count: u32 },
    /// `ReleaseNodes`: the hosts and how many workers were on them.
    Release { hosts: Vec<String>, workers: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScaleEvent {
    pub at_ms: u64,
    pub group: usize,
    pub action: ScaleAction,
    pub usage_bp: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StateChange {
    pub at_ms: u64,
    pub group: usize,
    pub state: ScaleState,
}

/// A worker recycled from one group (or the reserve) to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Move {
    pub at_ms: u64,
    pub worker: String,
    pub from: Option<usize>,
    pub to: usize,
}

/// Container requests made to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestRecord {
    pub at_ms: u64,
    pub group: usize,
    pub count: u32,
    pub by_autoscaler: bool,
    /// The group's autoscaler was in SCALE_IN when the request was made.
    pub during_scale_in: bool,
}

/// The cluster at one tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sample {
    pub at_ms: u64,
    /// Nodes asked for and not reclaimed (provisioning ones included).
    pub nodes: u32,
    /// Registered workers per group.
    pub workers: Vec<u32>,
    /// Workers in the container scheduler's reserve.
    pub reserve: u32,
    /// Memory of running attempts, all groups.
    pub used_mb: u64,
    /// Memory the groups' workers have for attempts.
    pub capacity_mb: u64,
    /// Per group: its autoscaler's state, if it has one and the group is
    /// registered and has not left.
    pub states: Vec<Option<ScaleState>>,
    /// Per group: the autoscaler's last measured window usage.
    pub usage_bp: Vec<Option<u64>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counters {
    /// `RequestWorkers` because the usage reached ScaleOutThreshold.
    pub scale_outs: u32,
    /// `RequestWorkers` for a group without workers (initial containers).
    pub initial_requests: u32,
    pub scale_ins: u32,
    pub scale_out_cancels: u32,
    pub containers_requested: u32,
    pub requests_cancelled: u32,
    /// Autoscaler requests a recycled worker took the place of (before or
    /// after they reached the cluster).
    pub requests_recycled: u32,
    pub workers_started: u32,
    pub workers_exited: u32,
    /// Workers that left because scale-in released their node.
    pub released_by_scale_in: u32,
    /// Of those, the ones that first served DAGs active at release time.
    pub released_after_waiting: u32,
    /// The longest such wait.
    pub longest_release_wait_ms: u64,
    pub migrations: u32,
    pub graceful_stops: u32,
    pub attempts_killed: u32,
    pub nodes_provisioned: u32,
    pub nodes_reclaimed: u32,
}

/// What one elastic simulation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ElasticOutcome {
    /// Per client, its DAGs in submission order.
    pub runs: Vec<Vec<DagRecord>>,
    pub end_ms: u64,
    pub last_dag_ms: u64,
    /// When every client but the background ones was done.
    pub foreground_done_ms: u64,
    pub counters: Counters,
    pub peak_workers: u32,
    pub peak_nodes: u32,
    pub final_workers: u32,
    pub final_nodes: u32,
    /// Node time, from asking for a node to its reclaim (or the end).
    pub node_ms: u64,
    /// Worker time, from registering to exiting (or the end).
    pub worker_ms: u64,
    /// Slot time of attempts that ran to their end.
    pub busy_ms: u64,
    pub scale_events: Vec<ScaleEvent>,
    pub state_changes: Vec<StateChange>,
    pub moves: Vec<Move>,
    pub requests: Vec<RequestRecord>,
    pub samples: Vec<Sample>,
    /// Inputs handled by the cores.
    pub steps: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Submit(usize),
    AttemptEnd(AttemptId),
    AttemptKilled(AttemptId),
    NodeReady(usize),
    WorkerUp(WorkerId),
    NodeCheck(usize),
    Tick,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DrainReason {
    /// The container scheduler stops it gracefully to recycle it.
    Recycle,
    /// Scale-in released its node.
    ScaleIn,
}

struct Group {
    name: String,
    spec: GroupSpec,
    max_workers: u32,
    default: bool,
    ts: TaskScheduler,
    autoscaler: Option<Autoscaler>,
    /// Requests made for `StartWorker` and not yet granted.
    outstanding_cs: u32,
    /// Requests made for `RequestWorkers` and not yet granted: the
    /// group's demand in the container scheduler.
    outstanding_auto: u32,
    /// Of those, the ones decided but not yet made: while a `RequestWorkers`
    /// is served from recycled workers first.
    auto_unsent: u32,
    /// Clients that registered the group and have not released it.
    owners: BTreeSet<usize>,
    /// A client has registered the group with the container scheduler.
    registered: bool,
    /// The group has left (its last owner released it).
    gone: bool,
    last_state: ScaleState,
    last_usage_bp: Option<u64>,
}

struct Worker {
    node: usize,
    resource: Resource,
    group: Option<usize>,
    drain: Option<DrainReason>,
    /// When scale-in released the worker's node.
    released_ms: Option<u64>,
    last_idle: Option<bool>,
    up_ms: u64,
    running: u64,
}

struct Launching {
    group: usize,
    node: usize,
    via_cs: bool,
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
    group: usize,
    started_ms: u64,
    key: (u64, u64),
}

struct ClientState {
    /// It has run its last DAG.
    done: bool,
    next: usize,
    current: Option<(DagId, usize, u64)>,
    runs: Vec<DagRecord>,
    registered: bool,
}

struct Driver<'a> {
    spec: &'a ElasticSpec<'a>,
    cs: ContainerScheduler,
    groups: Vec<Group>,
    now: u64,
    seq: u64,
    events: BTreeMap<(u64, u64), Event>,
    workers: BTreeMap<WorkerId, Worker>,
    launching: BTreeMap<WorkerId, Launching>,
    nodes: Vec<Node>,
    /// Ungranted requests, first come first served: the group of each.
    queue: VecDeque<usize>,
    running: BTreeMap<AttemptId, Running>,
    clients: Vec<ClientState>,
    dags: BTreeMap<DagId, usize>,
    next_dag: u64,
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
    moves: Vec<Move>,
    requests: Vec<RequestRecord>,
    samples: Vec<Sample>,
    steps: u64,
}

/// A run that goes on this long is stuck (a DAG that never gets a worker).
const MAX_SIMULATED_MS: u64 = 7 * 24 * 3_600_000;

/// Runs the clients' plans on the elastic cluster until the last DAG has
/// finished and the quiet period after it is over.
pub(crate) fn simulate_elastic(spec: &ElasticSpec<'_>) -> Result<ElasticOutcome, DagSimError> {
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
        d.reconcile()?;
        d.cluster_step()?;
        d.note_peaks();
        d.check_own_invariants()?;
    }
    d.finish()
}

fn group_spec(plan: &GroupPlan) -> GroupSpec {
    GroupSpec::new(plan.name.clone(), plan.worker)
}

impl<'a> Driver<'a> {
    fn new(spec: &'a ElasticSpec<'a>) -> Result<Driver<'a>, DagSimError> {
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
        let cs = ContainerScheduler::new(spec.config.container.clone())?;
        let mut groups = Vec::with_capacity(spec.groups.len());
        for plan in spec.groups {
            let mut task = spec.config.task.clone();
            task.group_name = plan.name.clone();
            let autoscaler = if spec.config.autoscaler.enabled {
                let mut a = spec.config.autoscaler.clone();
                // As the AM: with autoscaling on, workers come only from
                // the autoscaler, so an empty group must ask for one.
                a.scale_out_initial_workers = a.scale_out_initial_workers.max(1);
                Some(Autoscaler::new(a)?)
            } else {
                None
            };
            groups.push(Group {
                name: plan.name.clone(),
                spec: group_spec(plan),
                max_workers: plan.max_workers,
                default: plan.default,
                ts: TaskScheduler::new(task)?,
                autoscaler,
                outstanding_cs: 0,
                outstanding_auto: 0,
                auto_unsent: 0,
                owners: BTreeSet::new(),
                registered: false,
                gone: false,
                last_state: ScaleState::Stable,
                last_usage_bp: None,
            });
        }
        Ok(Driver {
            spec,
            cs,
            groups,
            now: 0,
            seq: 0,
            events: BTreeMap::new(),
            workers: BTreeMap::new(),
            launching: BTreeMap::new(),
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
                    registered: false,
                })
                .collect(),
            dags: BTreeMap::new(),
            next_dag: 1,
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
            moves: Vec::new(),
            requests: Vec::new(),
            samples: Vec::new(),
            steps: 0,
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
            self.nodes[n].empty_since = Some(0);
            self.push(self.spec.nodes.reclaim_after_ms, Event::NodeCheck(n));
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

    // ----- the cores, with the invariant checks -----

    fn ts(&mut self, g: usize, input: ts::Input) -> Result<(), DagSimError> {
        let out = self.groups[g].ts.handle(self.now, input)?;
        self.steps += 1;
        if self.spec.check_invariants {
            self.groups[g].ts.check_invariants()?;
        }
        self.take(g, out)
    }

    fn cs(&mut self, input: cs::Input) -> Result<(), DagSimError> {
        let out = self.cs.handle(self.now, input)?;
        self.steps += 1;
        if self.spec.check_invariants {
            self.cs.check_invariants()?;
        }
        self.apply_cs(out.actions)
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
                if let Some(w) = self.workers.get_mut(&r.worker) {
                    w.running = w.running.saturating_sub(1);
                }
                self.ts(
                    r.group,
                    ts::Input::AttemptFinished {
                        attempt,
                        outcome: AttemptOutcome::Succeeded,
                    },
                )
            }
            Event::AttemptKilled(attempt) => {
                let Some(r) = self.running.remove(&attempt) else {
                    return Ok(());
                };
                if let Some(w) = self.workers.get_mut(&r.worker) {
                    w.running = w.running.saturating_sub(1);
                }
                self.ts(
                    r.group,
                    ts::Input::AttemptFinished {
                        attempt,
                        outcome: AttemptOutcome::Killed {
                            reason: "killed by the AM".into(),
                        },
                    },
                )
            }
            Event::NodeReady(n) => {
                let node = &mut self.nodes[n];
                if node.gone_ms.is_none() {
                    node.ready = true;
                    if node.workers == 0 {
                        node.empty_since = Some(self.now);
                        let at = self.now + self.spec.nodes.reclaim_after_ms;
                        self.push(at, Event::NodeCheck(n));
                    }
                }
                Ok(())
            }
            Event::WorkerUp(worker) => self.worker_up(worker),
            Event::NodeCheck(n) => {
                let reclaim = self.spec.nodes.reclaim_after_ms;
                let node = &mut self.nodes[n];
                if node.gone_ms.is_none()
                    && node.ready
                    && node.workers == 0
                    && node.empty_since.is_some_and(|t| t + reclaim <= self.now)
                {
                    node.gone_ms = Some(self.now);
                    self.counters.nodes_reclaimed += 1;
                }
                Ok(())
            }
            Event::Tick => self.tick(),
        }
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
        let g = plan.group;
        if !self.clients[c].registered {
            self.clients[c].registered = true;
            if self.groups[g].gone {
                return Err(DagSimError::Workload(format!(
                    "client {} submits to group {} after it left",
                    plan.name, self.groups[g].name
                )));
            }
            self.groups[g].owners.insert(c);
            self.groups[g].registered = true;
            let spec = self.groups[g].spec.clone();
            self.cs(cs::Input::RegisterGroup {
                client: plan.name.clone(),
                spec,
            })?;
        }
        let state = &mut self.clients[c];
        state.next += 1;
        let id = DagId(self.next_dag);
        self.next_dag += 1;
        state.current = Some((id, query, self.now));
        self.dags.insert(id, c);
        self.ts(
            g,
            ts::Input::SubmitDag {
                id,
                client: plan.name.clone(),
                queue: None,
                spec: self.spec.queries[query].spec.clone(),
            },
        )
    }

    fn worker_up(&mut self, worker: WorkerId) -> Result<(), DagSimError> {
        let Some(l) = self.launching.remove(&worker) else {
            return Err(DagSimError::Driver(format!(
                "worker {worker} registered but was never started"
            )));
        };
        let resource = self.groups[l.group].spec.worker_resource;
        self.workers.insert(
            worker.clone(),
            Worker {
                node: l.node,
                resource,
                group: None,
                drain: None,
                released_ms: None,
                last_idle: None,
                up_ms: self.now,
                running: 0,
            },
        );
        self.counters.workers_started += 1;
        let g = &self.groups[l.group];
        if g.gone {
            // As the AM: the group left while the worker started.
            self.retire(&worker);
            return Ok(());
        }
        let host = &self.nodes[l.node].name;
        if !l.via_cs && g.autoscaler.as_ref().is_some_and(|a| a.is_releasing(host)) {
            // Asked for before the scale-in and granted on a node it is
            // emptying: it holds no data yet, so it goes at once.
            self.counters.released_by_scale_in += 1;
            self.retire(&worker);
            return Ok(());
        }
        if let Some(w) = self.workers.get_mut(&worker) {
            w.group = Some(l.group);
        }
        self.ts(
            l.group,
            ts::Input::WorkerAdded {
                worker: worker.clone(),
                capacity: resource,
            },
        )?;
        self.cs(cs::Input::WorkerStarted {
            worker: worker.clone(),
            group: self.groups[l.group].name.clone(),
        })?;
        if let Some(g) = self.workers.get(&worker).and_then(|w| w.group) {
            self.ts(g, ts::Input::Offer { worker })?;
        }
        Ok(())
    }

    fn tick(&mut self) -> Result<(), DagSimError> {
        for g in 0..self.groups.len() {
            if self.live(g) {
                self.ts(g, ts::Input::Tick)?;
            }
        }
        self.cs(cs::Input::Tick)?;
        for g in 0..self.groups.len() {
            if self.live(g) {
                self.autoscale(g)?;
            }
        }
        self.sample();
        let next = self.now + self.spec.tick_ms;
        if self.end_ms.is_none_or(|end| next <= end) {
            self.push(next, Event::Tick);
        }
        Ok(())
    }

    // ----- decisions -----

    /// Carries out a task scheduler's decisions.
    fn take(&mut self, g: usize, out: ts::TaskDecisions) -> Result<(), DagSimError> {
        for a in out.assignments {
            let c = self.dags.get(&a.attempt.task.dag).copied().ok_or_else(|| {
                DagSimError::Driver(format!("assignment {} of an unknown DAG", a.attempt))
            })?;
            let query = self.clients[c]
                .current
                .map(|(_, q, _)| q)
                .ok_or_else(|| DagSimError::Driver(format!("{} of an idle client", a.attempt)))?;
            let duration = self.spec.queries[query]
                .duration_ms(a.attempt.task.vertex, a.attempt.task.task)
                .ok_or_else(|| {
                    DagSimError::Driver(format!("assignment {} of an unknown task", a.attempt))
                })?;
            let w = self.workers.get_mut(&a.worker).ok_or_else(|| {
                DagSimError::Driver(format!("assignment to unknown worker {}", a.worker))
            })?;
            w.running += 1;
            let key = self.push(self.now + duration, Event::AttemptEnd(a.attempt));
            self.running.insert(
                a.attempt,
                Running {
                    worker: a.worker,
                    group: g,
                    started_ms: self.now,
                    key,
                },
            );
        }
        for k in out.kills {
            // The worker stops the attempt and reports it.
            if let Some(r) = self.running.get(&k.attempt) {
                let key = r.key;
                self.events.remove(&key);
                self.counters.attempts_killed += 1;
                self.push(self.now, Event::AttemptKilled(k.attempt));
            }
        }
        for e in out.dag_events {
            match e {
                DagEvent::Succeeded { dag } => self.dag_succeeded(dag)?,
                DagEvent::Failed { dag, reason } | DagEvent::Killed { dag, reason } => {
                    return Err(DagSimError::Driver(format!(
                        "{dag} ended unsuccessfully: {reason}"
                    )));
                }
            }
        }
        for w in out.drained_workers {
            self.drained(g, &w)?;
        }
        Ok(())
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
        state.runs.push(DagRecord {
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
        self.release_ownership(c)
    }

    /// A client done with a non-default group releases it; the group
    /// leaves when its last owner has (as the AM does it).
    fn release_ownership(&mut self, c: usize) -> Result<(), DagSimError> {
        let g = self.spec.clients[c].group;
        if self.groups[g].default || !self.groups[g].owners.remove(&c) {
            return Ok(());
        }
        let name = self.groups[g].name.clone();
        self.cs(cs::Input::ReleaseGroup {
            client: self.spec.clients[c].name.clone(),
            group: name.clone(),
        })?;
        if self.cs.group_report(&name).is_some() {
            return Ok(());
        }
        let members: Vec<WorkerId> = self
            .workers
            .iter()
            .filter(|(_, w)| w.group == Some(g))
            .map(|(id, _)| id.clone())
            .collect();
        for w in members {
            if let Some(e) = self.workers.get_mut(&w) {
                e.group = None;
                e.drain = None;
                e.last_idle = None;
            }
            self.remove_from_ts(g, &w)?;
        }
        let group = &mut self.groups[g];
        group.gone = true;
        group.outstanding_cs = 0;
        group.outstanding_auto = 0;
        self.queue.retain(|&q| q != g);
        Ok(())
    }

    /// `WorkerRemoved`, and the attempts the worker ran are gone with it.
    fn remove_from_ts(&mut self, g: usize, worker: &WorkerId) -> Result<(), DagSimError> {
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
        self.ts(
            g,
            ts::Input::WorkerRemoved {
                worker: worker.clone(),
            },
        )
    }

    /// A draining worker has finished what it waited for.
    fn drained(&mut self, g: usize, worker: &WorkerId) -> Result<(), DagSimError> {
        let Some(reason) = self.workers.get(worker).and_then(|w| w.drain) else {
            return Ok(());
        };
        if let Some(e) = self.workers.get_mut(worker) {
            e.group = None;
            e.drain = None;
            e.last_idle = None;
        }
        self.remove_from_ts(g, worker)?;
        match reason {
            DrainReason::Recycle => self.cs(cs::Input::WorkerStopped {
                worker: worker.clone(),
            }),
            DrainReason::ScaleIn => {
                self.counters.released_by_scale_in += 1;
                let released = self.workers.get(worker).and_then(|w| w.released_ms);
                if let Some(wait) = released.map(|t| self.now - t).filter(|w| *w > 0) {
                    self.counters.released_after_waiting += 1;
                    self.counters.longest_release_wait_ms =
                        self.counters.longest_release_wait_ms.max(wait);
                }
                self.cs(cs::Input::WorkerExited {
                    worker: worker.clone(),
                })?;
                self.retire(worker);
                Ok(())
            }
        }
    }

    /// The worker exits and its container is released.
    fn retire(&mut self, worker: &WorkerId) {
        let Some(w) = self.workers.remove(worker) else {
            return;
        };
        self.counters.workers_exited += 1;
        self.worker_ms += self.now - w.up_ms;
        self.free_slot(w.node);
    }

    fn free_slot(&mut self, n: usize) {
        let node = &mut self.nodes[n];
        node.workers = node.workers.saturating_sub(1);
        if node.workers == 0 && node.ready {
            node.empty_since = Some(self.now);
            let at = self.now + self.spec.nodes.reclaim_after_ms;
            self.push(at, Event::NodeCheck(n));
        }
    }

    /// Whether the AM would have the group: registered and not gone.
    fn live(&self, g: usize) -> bool {
        self.groups[g].registered && !self.groups[g].gone
    }

    fn group_index(&self, name: &str) -> Option<usize> {
        (0..self.groups.len()).find(|&g| self.groups[g].name == name && self.live(g))
    }

    fn request(&mut self, g: usize, count: u32, by_autoscaler: bool) {
        let during_scale_in = self.groups[g]
            .autoscaler
            .as_ref()
            .is_some_and(|a| !a.allows_new_workers());
        let group = &mut self.groups[g];
        if by_autoscaler {
            group.outstanding_auto += count;
        } else {
            group.outstanding_cs += count;
        }
        for _ in 0..count {
            self.queue.push_back(g);
        }
        self.counters.containers_requested += count;
        self.requests.push(RequestRecord {
            at_ms: self.now,
            group: g,
            count,
            by_autoscaler,
            during_scale_in,
        });
    }

    /// Withdraws up to `count` of the group's newest ungranted requests.
    fn withdraw(&mut self, g: usize, count: u32) -> u32 {
        let mut done = 0;
        let mut i = self.queue.len();
        while done < count && i > 0 {
            i -= 1;
            if self.queue[i] == g {
                self.queue.remove(i);
                done += 1;
            }
        }
        self.counters.requests_cancelled += done;
        done
    }

    fn apply_cs(&mut self, actions: Vec<ContainerAction>) -> Result<(), DagSimError> {
        for action in actions {
            match action {
                ContainerAction::StartWorker { group } => {
                    let Some(g) = self.group_index(&group) else {
                        continue;
                    };
                    // As the AM: an autoscaled group's starts are its
                    // autoscaler's requests, made already.
                    if self.groups[g].autoscaler.is_none() {
                        self.request(g, 1, false);
                    }
                }
                ContainerAction::CancelWorkerStart { group } => {
                    let Some(g) = self.group_index(&group) else {
                        continue;
                    };
                    // (Into an autoscaled group, the ReassignWorker before
                    // it has taken the place of a request.)
                    if self.groups[g].autoscaler.is_none()
                        && self.groups[g].outstanding_cs > 0
                        && self.withdraw(g, 1) == 1
                    {
                        self.groups[g].outstanding_cs -= 1;
                    }
                }
                ContainerAction::StopWorkerGracefully { worker, group } => {
                    let Some(g) = self.group_index(&group) else {
                        continue;
                    };
                    let Some(e) = self.workers.get_mut(&worker) else {
                        continue;
                    };
                    if e.drain.is_none() {
                        e.drain = Some(DrainReason::Recycle);
                    }
                    self.counters.graceful_stops += 1;
                    self.ts(g, ts::Input::DrainWorker { worker })?;
                }
                ContainerAction::ReassignWorker { worker, from, to } => {
                    let Some(to_g) = self.group_index(&to) else {
                        continue;
                    };
                    let capacity = self.groups[to_g].spec.worker_resource;
                    let current = self.workers.get(&worker).and_then(|w| w.group);
                    let old = current.or_else(|| from.as_deref().and_then(|f| self.group_index(f)));
                    if let Some(old) = old {
                        if self.groups[old].ts.worker_report(&worker).is_some() {
                            self.remove_from_ts(old, &worker)?;
                        }
                    }
                    let Some(e) = self.workers.get_mut(&worker) else {
                        continue;
                    };
                    e.group = Some(to_g);
                    e.drain = None;
                    e.last_idle = None;
                    self.counters.migrations += 1;
                    let to_group = &mut self.groups[to_g];
                    if to_group.autoscaler.is_some() && to_group.outstanding_auto > 0 {
                        // As the AM: it takes the place of one of the
                        // autoscaler's requests, not made yet or withdrawn.
                        self.counters.requests_recycled += 1;
                        if to_group.auto_unsent > 0 {
                            to_group.auto_unsent -= 1;
                            to_group.outstanding_auto -= 1;
                        } else if self.withdraw(to_g, 1) == 1 {
                            self.groups[to_g].outstanding_auto -= 1;
                        }
                    }
                    self.moves.push(Move {
                        at_ms: self.now,
                        worker: worker.to_string(),
                        from: old,
                        to: to_g,
                    });
                    self.ts(
                        to_g,
                        ts::Input::WorkerAdded {
                            worker: worker.clone(),
                            capacity,
                        },
                    )?;
                    self.ts(to_g, ts::Input::Offer { worker })?;
                }
                ContainerAction::TerminateWorker { worker, .. } => {
                    let group = self.workers.get(&worker).and_then(|w| w.group);
                    if let Some(g) = group {
                        if let Some(e) = self.workers.get_mut(&worker) {
                            e.group = None;
                        }
                        self.remove_from_ts(g, &worker)?;
                    }
                    self.retire(&worker);
                }
            }
        }
        Ok(())
    }

    /// Memory and cores of every worker running (in a group or the
    /// reserve, draining ones included), starting or asked for: what
    /// counts against the caps on all workers.
    fn totals(&self) -> WorkerTotals {
        let mut t = WorkerTotals::default();
        for w in self.workers.values() {
            t = t.plus(WorkerTotals::of(1, w.resource));
        }
        for l in self.launching.values() {
            t = t.plus(WorkerTotals::of(
                1,
                self.groups[l.group].spec.worker_resource,
            ));
        }
        for &g in &self.queue {
            t = t.plus(WorkerTotals::of(1, self.groups[g].spec.worker_resource));
        }
        t
    }

    /// [`Driver::totals`] less the workers in the reserve of group `g`'s
    /// kind: the group can be given those without adding to the totals.
    fn totals_for(&self, g: usize) -> WorkerTotals {
        let group = &self.groups[g];
        let reserve = self.cs.reserved_for(&group.name);
        self.totals().minus(WorkerTotals::of(
            u64::from(reserve),
            group.spec.worker_resource,
        ))
    }

    /// As the AM: an autoscaled group's starts in the container scheduler
    /// stand for its autoscaler's outstanding requests; those granted or
    /// cancelled are withdrawn there.
    fn sync_autoscaled_starts(&mut self, g: usize) -> Result<(), DagSimError> {
        let group = &self.groups[g];
        if group.autoscaler.is_none() || !self.live(g) {
            return Ok(());
        }
        let starting = self.cs.group_report(&group.name).map_or(0, |r| r.starting);
        let name = group.name.clone();
        for _ in group.outstanding_auto..starting {
            self.cs(cs::Input::WorkerStartWithdrawn {
                group: name.clone(),
            })?;
        }
        Ok(())
    }

    fn autoscale(&mut self, g: usize) -> Result<(), DagSimError> {
        if self.groups[g].autoscaler.is_none() {
            return Ok(());
        }
        let group = &self.groups[g];
        let mut nodes: BTreeMap<&str, NodeUsage> = BTreeMap::new();
        let mut workers = 0u32;
        for (id, w) in &self.workers {
            if w.group != Some(g) {
                continue;
            }
            workers += 1;
            let used = group.ts.worker_report(id).map_or(0, |r| r.used.memory_mb);
            let host = self.nodes[w.node].name.as_str();
            let n = nodes.entry(host).or_insert_with(|| NodeUsage {
                host: host.to_string(),
                workers: 0,
                used_mb: 0,
            });
            n.workers += 1;
            n.used_mb += used;
        }
        let launching = self.launching.values().filter(|l| l.group == g).count() as u32;
        let snapshot = ClusterSnapshot {
            workers,
            worker_resource: group.spec.worker_resource,
            task_capacity_mb: group.ts.capacity().memory_mb,
            task_used_mb: group.ts.used().memory_mb,
            pending_tasks: group.ts.pending_demand().0,
            requested_workers: group.outstanding_cs + group.outstanding_auto + launching,
            nodes: nodes.into_values().collect(),
        };
        let totals = self.totals_for(g);
        let now = self.now;
        let check = self.spec.check_invariants;
        let Some(a) = self.groups[g].autoscaler.as_mut() else {
            return Ok(());
        };
        let decision = a.tick_with_totals(now, &snapshot, totals)?;
        self.steps += 1;
        if check {
            a.check_invariants()?;
        }
        let cause = a.last_scale_out_cause();
        let group = &mut self.groups[g];
        if decision.sampled {
            group.last_usage_bp = decision.usage_bp;
        }
        let usage_bp = group.last_usage_bp;
        // A state entered and left within the tick (a grace period ending
        // and a new decision at once) shows as its end state.
        if decision.state != group.last_state {
            group.last_state = decision.state;
            self.state_changes.push(StateChange {
                at_ms: now,
                group: g,
                state: decision.state,
            });
        }
        for action in decision.actions {
            match action {
                AutoscaleAction::RequestWorkers { count } => {
                    // As the AM: the autoscaler counted every request it
                    // saw as withdrawn at the end of a scale-out, but
                    // containers already granted cannot be; hold the count
                    // to what fits under the caps now.
                    let each = self.groups[g].spec.worker_resource;
                    let (fit, _) = self
                        .totals_for(g)
                        .headroom(&self.spec.config.autoscaler, each);
                    let count = count.min(fit);
                    if count == 0 {
                        continue;
                    }
                    let cause = cause.unwrap_or(ScaleOutCause::Usage);
                    match cause {
                        ScaleOutCause::Initial => self.counters.initial_requests += 1,
                        ScaleOutCause::Usage => self.counters.scale_outs += 1,
                    }
                    // As the AM: recycled workers first (the requests are
                    // the group's demand), the cluster is asked for the rest.
                    let group = &mut self.groups[g];
                    group.outstanding_auto += count;
                    group.auto_unsent = count;
                    let wanted_workers = group.outstanding_auto;
                    let name = group.name.clone();
                    self.cs(cs::Input::GroupDemand {
                        group: name,
                        wanted_workers,
                    })?;
                    let group = &mut self.groups[g];
                    let unsent = std::mem::take(&mut group.auto_unsent);
                    group.outstanding_auto -= unsent;
                    if unsent > 0 {
                        self.request(g, unsent, true);
                    }
                    self.scale_events.push(ScaleEvent {
                        at_ms: now,
                        group: g,
                        action: ScaleAction::Request {
                            count,
                            cause,
                            recycled: count - unsent,
                        },
                        usage_bp,
                    });
                }
                AutoscaleAction::CancelRequests { count } => {
                    let n = count.min(self.groups[g].outstanding_auto);
                    let n = self.withdraw(g, n);
                    self.groups[g].outstanding_auto -= n;
                    self.sync_autoscaled_starts(g)?;
                    self.counters.scale_out_cancels += 1;
                    self.scale_events.push(ScaleEvent {
                        at_ms: now,
                        group: g,
                        action: ScaleAction::Cancel { count: n },
                        usage_bp,
                    });
                }
                AutoscaleAction::ReleaseNodes {
                    hosts,
                    wait_for_active_dags,
                } => {
                    self.counters.scale_ins += 1;
                    let victims: Vec<WorkerId> = self
                        .workers
                        .iter()
                        .filter(|(_, w)| {
                            w.group == Some(g) && hosts.contains(&self.nodes[w.node].name)
                        })
                        .map(|(id, _)| id.clone())
                        .collect();
                    self.scale_events.push(ScaleEvent {
                        at_ms: now,
                        group: g,
                        action: ScaleAction::Release {
                            hosts,
                            workers: victims.len() as u32,
                        },
                        usage_bp,
                    });
                    for w in victims {
                        if wait_for_active_dags {
                            // As the AM: not idle for recycling while it
                            // drains; it leaves with its node.
                            let was_idle = self.workers.get_mut(&w).is_some_and(|e| {
                                e.drain = Some(DrainReason::ScaleIn);
                                e.released_ms = Some(now);
                                e.last_idle.replace(false) == Some(true)
                            });
                            if was_idle {
                                self.cs(cs::Input::WorkerActivity {
                                    worker: w.clone(),
                                    idle: false,
                                })?;
                            }
                            self.ts(g, ts::Input::DrainWorker { worker: w })?;
                        } else {
                            if let Some(e) = self.workers.get_mut(&w) {
                                e.group = None;
                            }
                            self.remove_from_ts(g, &w)?;
                            self.cs(cs::Input::WorkerExited { worker: w.clone() })?;
                            self.counters.released_by_scale_in += 1;
                            self.retire(&w);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// After every batch of events: offers, each group's demand, and (when
    /// recycling) which workers are idle — as the AM's `reconcile`.
    fn reconcile(&mut self) -> Result<(), DagSimError> {
        let recycling = self.cs.config().scheme != ContainerSchedulerScheme::None;
        for g in 0..self.groups.len() {
            self.sync_autoscaled_starts(g)?;
        }
        for g in 0..self.groups.len() {
            if !self.live(g) {
                continue;
            }
            self.ts(g, ts::Input::OfferAll)?;
            let wanted = self.demand(g);
            self.cs(cs::Input::GroupDemand {
                group: self.groups[g].name.clone(),
                wanted_workers: wanted,
            })?;
            if !recycling || !self.live(g) {
                continue;
            }
            let group = &self.groups[g].ts;
            let idle: BTreeSet<WorkerId> = group.idle_workers().into_iter().collect();
            let members: Vec<(WorkerId, bool)> = group
                .workers()
                .into_iter()
                .map(|w| {
                    let i = idle.contains(&w);
                    (w, i)
                })
                .collect();
            for (w, is_idle) in members {
                let changed = self.workers.get_mut(&w).is_some_and(|e| {
                    let changed = e.last_idle != Some(is_idle);
                    e.last_idle = Some(is_idle);
                    changed
                });
                if changed {
                    self.cs(cs::Input::WorkerActivity {
                        worker: w,
                        idle: is_idle,
                    })?;
                }
            }
        }
        Ok(())
    }

    /// The group's demand: for a group with an autoscaler, its
    /// outstanding requests; otherwise the workers its pending tasks need,
    /// within `spindle.dag.group.max.workers` and the caps on all workers.
    fn demand(&self, g: usize) -> u32 {
        let group = &self.groups[g];
        if group.autoscaler.is_some() {
            return group.outstanding_auto;
        }
        let (count, need) = group.ts.pending_demand();
        if count == 0 {
            return 0;
        }
        let per = group.spec.worker_resource;
        let by_memory = need.memory_mb.div_ceil(per.memory_mb.max(1));
        let by_cores = u64::from(need.vcores).div_ceil(u64::from(per.vcores.max(1)));
        let wanted = by_memory.max(by_cores).max(1);
        let have = group.ts.workers().len() as u64;
        let room = u64::from(group.max_workers).saturating_sub(have);
        // As the AM: the caps on all workers hold with autoscaling off
        // too; the demand counts the group's workers being started and
        // those in the reserve of its kind (recycling one adds nothing to
        // the totals), so it may reach those plus what still fits.
        let starting = self.cs.group_report(&group.name).map_or(0, |r| r.starting);
        let reserve = self.cs.reserved_for(&group.name);
        let (fit, _) = self.totals().headroom(&self.spec.config.autoscaler, per);
        let allowed = u64::from(starting) + u64::from(reserve) + u64::from(fit);
        u32::try_from(wanted.min(room).min(allowed)).unwrap_or(u32::MAX)
    }

    // ----- the cluster -----

    /// Grants waiting requests on ready nodes with a free slot, first come
    /// first served, and asks for the nodes still missing.
    fn cluster_step(&mut self) -> Result<(), DagSimError> {
        let per_node = self.spec.nodes.workers_per_node;
        let mut cursor = 0;
        while let Some(&g) = self.queue.front() {
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
            self.grant(g, cursor)?;
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

    fn grant(&mut self, g: usize, n: usize) -> Result<(), DagSimError> {
        let group = &mut self.groups[g];
        let via_cs = if group.outstanding_cs > 0 {
            group.outstanding_cs -= 1;
            true
        } else {
            group.outstanding_auto = group.outstanding_auto.saturating_sub(1);
            false
        };
        let node = &mut self.nodes[n];
        node.workers += 1;
        node.empty_since = None;
        let worker = WorkerId::new(format!("worker-{:04}", self.next_worker));
        self.next_worker += 1;
        self.launching.insert(
            worker.clone(),
            Launching {
                group: g,
                node: n,
                via_cs,
            },
        );
        let at = self.now + self.spec.nodes.worker_start_ms;
        self.push(at, Event::WorkerUp(worker));
        self.sync_autoscaled_starts(g)
    }

    // ----- measurements -----

    fn alive_nodes(&self) -> u32 {
        self.nodes.iter().filter(|n| n.gone_ms.is_none()).count() as u32
    }

    fn note_peaks(&mut self) {
        self.peak_workers = self.peak_workers.max(self.workers.len() as u32);
        self.peak_nodes = self.peak_nodes.max(self.alive_nodes());
    }

    fn sample(&mut self) {
        let mut workers = vec![0u32; self.groups.len()];
        let mut reserve = 0;
        for w in self.workers.values() {
            match w.group {
                Some(g) => workers[g] += 1,
                None => reserve += 1,
            }
        }
        let live = self.groups.iter().filter(|g| g.registered && !g.gone);
        let (used_mb, capacity_mb) = live.fold((0, 0), |(u, c), g| {
            (u + g.ts.used().memory_mb, c + g.ts.capacity().memory_mb)
        });
        self.samples.push(Sample {
            at_ms: self.now,
            nodes: self.alive_nodes(),
            workers,
            reserve,
            used_mb,
            capacity_mb,
            states: self
                .groups
                .iter()
                .map(|g| {
                    let live = g.registered && !g.gone;
                    g.autoscaler
                        .as_ref()
                        .filter(|_| live)
                        .map(Autoscaler::state)
                })
                .collect(),
            usage_bp: self
                .groups
                .iter()
                .map(|g| g.last_usage_bp.filter(|_| g.registered && !g.gone))
                .collect(),
        });
    }

    /// The driver's bookkeeping agrees with the cores' and the cluster's
    /// (between batches, when every decision has been carried out).
    fn check_own_invariants(&self) -> Result<(), DagSimError> {
        if !self.spec.check_invariants {
            return Ok(());
        }
        let fail = |m: String| Err(DagSimError::Driver(m));
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
        for (g, group) in self.groups.iter().enumerate() {
            let queued = self.queue.iter().filter(|&&q| q == g).count() as u32;
            if queued != group.outstanding_cs + group.outstanding_auto {
                return fail(format!(
                    "group {}: {queued} requests wait, the driver counts {} + {}",
                    group.name, group.outstanding_cs, group.outstanding_auto
                ));
            }
            if !group.registered || group.gone {
                continue;
            }
            if group.autoscaler.is_some() {
                // As the AM: its starts in the container scheduler are its
                // autoscaler's outstanding requests, and nothing else asks.
                let starting = self.cs.group_report(&group.name).map_or(0, |r| r.starting);
                if starting != group.outstanding_auto
                    || group.outstanding_cs + group.auto_unsent > 0
                {
                    return fail(format!(
                        "group {}: the container scheduler starts {starting}, the autoscaler has \
                         {} requests outstanding, {} more requests and {} unsent",
                        group.name, group.outstanding_auto, group.outstanding_cs, group.auto_unsent
                    ));
                }
            }
            let mine: Vec<WorkerId> = self
                .workers
                .iter()
                .filter(|(_, w)| w.group == Some(g))
                .map(|(id, _)| id.clone())
                .collect();
            if mine != group.ts.workers() {
                return fail(format!(
                    "group {}: the driver has workers {mine:?}, the task scheduler {:?}",
                    group.name,
                    group.ts.workers()
                ));
            }
        }
        for (id, w) in &self.workers {
            let expected = w.group.map(|g| self.groups[g].name.as_str());
            if self.cs.group_of(id) != expected {
                return fail(format!(
                    "worker {id}: the driver has it in {expected:?}, the container scheduler in {:?}",
                    self.cs.group_of(id)
                ));
            }
            if let Some(g) = w.group {
                let report = self.groups[g].ts.worker_report(id);
                if report.as_ref().map(|r| r.running_attempts) != Some(w.running) {
                    return fail(format!(
                        "worker {id}: the driver runs {} attempts, the task scheduler {:?}",
                        w.running,
                        report.map(|r| r.running_attempts)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The clients that are not done, for error messages.
    fn stuck(&self) -> String {
        let stuck: Vec<String> = self
            .spec
            .clients
            .iter()
            .zip(&self.clients)
            .filter(|(_, s)| !s.done)
            .map(|(p, s)| format!("{} ({} DAGs done)", p.name, s.runs.len()))
            .collect();
        let groups: Vec<String> = self
            .groups
            .iter()
            .filter(|g| g.registered && !g.gone)
            .map(|g| g.ts.status_line())
            .collect();
        format!(
            "unfinished clients: {}; {}",
            stuck.join(", "),
            groups.join("; ")
        )
    }

    fn finish(mut self) -> Result<ElasticOutcome, DagSimError> {
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
        Ok(ElasticOutcome {
            runs: self.clients.into_iter().map(|c| c.runs).collect(),
            end_ms: end,
            last_dag_ms: self.last_dag_ms,
            foreground_done_ms: self.foreground_done_ms.unwrap_or(self.last_dag_ms),
            counters: self.counters,
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
            steps: self.steps,
        })
    }
}
