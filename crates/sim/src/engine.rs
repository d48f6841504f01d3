//! The discrete-event engine: a heap of timed events (ties broken by a
//! sequence number), simulated NodeManagers, ApplicationMasters and an
//! autoscaler around one real [`Scheduler`], fed exactly the [`Input`]s
//! the ResourceManager feeds it.
//!
//! What happens, in simulated milliseconds:
//!
//! * an application arrives: `AppAdded`, then (unless its AM is
//!   unmanaged) the AM's ask — priority 0, `*`, one container — and a
//!   scheduling pass, as the RM does on submission;
//! * the first container the attempt gets is its AM container; the AM
//!   starts a launch delay later and then calls allocate every AM
//!   heartbeat: it takes the containers and completions the RM has for
//!   it, gives containers to its tasks (or releases spare ones), and sends
//!   the rows of its request table that changed; a scheduling pass
//!   follows every allocate call that changed something;
//! * a task runs for its duration from a launch delay after its AM got the
//!   container; its NodeManager reports it (`ContainerCompleted`, exit 0)
//!   on its next heartbeat, and the heartbeat itself is a `NodeUpdated`
//!   (or, in rounds mode, one event reports every node and runs a pass);
//! * the RM also schedules periodically (continuous scheduling);
//! * when every task is done (or a service's lifetime is over) the AM
//!   unregisters: `AppRemoved`;
//! * the autoscaler adds nodes when requests have waited too long and
//!   removes nodes that held nothing for long enough;
//! * chaos removes nodes, crashes AMs and delays heartbeats; an AM whose
//!   container is lost or crashes fails its attempt (`AppRemoved`) and the
//!   application starts a new one, keeping the tasks already done.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::io::{IsTerminal, Write};
use std::time::Instant;

use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_scheduler::{
    CompletedContainer, CompletionCause, ContainerExit, Decisions, Input, Locality, LocalityDelay,
    NodeUpdate, ResourceAsk, Scheduler, SchedulerKind, ANY,
};

use crate::askbook::{AskBook, ReqKey};
use crate::error::SimError;
use crate::model::{AppKind, HeartbeatMode, TaskPlan, Workload, NM_PORT};
use crate::report::{percentile, queue_columns, LocalityCounts, SamplePoint, SimReport, Summary};
use crate::rng::Rng;
use crate::ChaosOptions;

/// The cluster timestamp of every simulated application id.
const CLUSTER_TIMESTAMP: i64 = 1_700_000_000_000;
/// Stands for the AM's own ask in the table of waiting requests.
const AM_SLOT: usize = usize::MAX;
/// Per-node container counts are recorded at the peak on clusters up to
/// this size.
const PEAK_SNAPSHOT_MAX_NODES: usize = 200;
const DAY_MS: u64 = 24 * 3600 * 1000;

/// How a run is driven (resolved from the public options).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub seed: u64,
    pub check_invariants: bool,
    pub chaos: Option<ChaosOptions>,
    pub progress: bool,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Arrival(usize),
    AmLaunched { app: usize, attempt: i32 },
    AmHeartbeat { app: usize, attempt: i32 },
    ContainerExit(ContainerId),
    NodeHeartbeat { node: usize, incarnation: u32 },
    Round,
    Pass,
    NodeJoin(usize),
    NodeReturn(usize),
    ElasticCheck,
    Sample,
    ChaosNodeLoss,
    ChaosAmCrash,
}

#[derive(Debug)]
struct Timed {
    time: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Timed {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timed {
    /// Reversed, so that the max-heap pops the earliest event, and among
    /// events at the same time the one scheduled first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeLife {
    Provisioning,
    Live,
    /// Removed by chaos; comes back.
    Lost,
    /// Removed by the autoscaler.
    Released,
}

#[derive(Debug)]
struct SimNode {
    id: NodeId,
    rack: String,
    capability: Resource,
    pool: usize,
    life: NodeLife,
    incarnation: u32,
    containers: BTreeSet<ContainerId>,
    idle_since: u64,
    /// Finished containers its next heartbeat reports.
    to_report: Vec<ContainerId>,
    /// Unfinished applications that ran a container here.
    app_state: BTreeSet<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Am,
    /// Allocated; its AM has not seen it yet.
    Unassigned,
    Task(usize),
    /// Spare: the AM gives it back.
    Released,
}

#[derive(Debug)]
struct SimContainer {
    app: usize,
    attempt: i32,
    node: usize,
    resource: Resource,
    role: Role,
    exited: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AppState {
    NotArrived,
    WaitingAm,
    Running,
    /// Between a failed attempt and the next.
    Restarting,
    Done {
        failed: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskState {
    Blocked,
    Delayed,
    Waiting,
    Running(ContainerId),
    Done,
}

#[derive(Debug)]
struct SimApp<'w> {
    id: ApplicationId,
    attempt: i32,
    state: AppState,
    /// The leaf queue's full path, as the core resolved it.
    queue_path: String,
    am_container: Option<ContainerId>,
    first_am_start: Option<u64>,
    am_start: u64,
    finish_ms: Option<u64>,
    counted_failures: u32,
    plans: Vec<&'w TaskPlan>,
    keys: Vec<ReqKey>,
    tasks: Vec<TaskState>,
    /// Task index ranges of the phases.
    phases: Vec<(usize, usize)>,
    phase: usize,
    phase_left: usize,
    left: usize,
    delayed: Vec<usize>,
    book: AskBook,
    running: BTreeMap<ContainerId, usize>,
    inbox_alloc: Vec<spindle_scheduler::Allocation>,
    inbox_done: Vec<CompletedContainer>,
    releases: Vec<ContainerId>,
    ran_on: BTreeSet<usize>,
    /// When each waiting task (or the AM ask, [`AM_SLOT`]) started waiting.
    waiting_since: BTreeMap<usize, u64>,
}

impl SimApp<'_> {
    fn attempt_id(&self) -> ApplicationAttemptId {
        ApplicationAttemptId::new(self.id, self.attempt)
    }

    fn is_done(&self) -> bool {
        matches!(self.state, AppState::Done { .. })
    }
}

#[derive(Debug, Default)]
struct Metrics {
    last_ms: u64,
    used_mb_ms: f64,
    cap_mb_ms: f64,
    used_vc_ms: f64,
    cap_vc_ms: f64,
    paid_mb_ms: f64,
    node_ms: f64,
    nodes_min: usize,
    nodes_max: usize,
    allocations: u64,
    locality: LocalityCounts,
    tasks_completed: u64,
    tasks_lost: u64,
    am_attempts_failed: u64,
    nodes_added: u64,
    nodes_removed: u64,
    peak_containers: usize,
    peak_time_ms: u64,
    empty_at_peak: usize,
    peak_nodes: Vec<usize>,
    share_err_max: f64,
    share_err_sum: f64,
    share_samples: u64,
}

/// A sample before queue columns are aligned.
struct RawSample {
    point: SamplePoint,
    queues: BTreeMap<String, i64>,
}

pub(crate) struct Engine<'w> {
    w: &'w Workload,
    s: Settings,
    sched: Scheduler,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Timed>,
    jitter: Rng,
    chaos_rng: Rng,
    nodes: Vec<SimNode>,
    node_index: BTreeMap<NodeId, usize>,
    pool_next: Vec<usize>,
    apps: Vec<SimApp<'w>>,
    active: BTreeSet<usize>,
    containers: BTreeMap<ContainerId, SimContainer>,
    to_report: Vec<ContainerId>,
    /// Requests waiting for a container: (since, app, task or AM_SLOT).
    waiting: BTreeSet<(u64, usize, usize)>,
    used: Resource,
    capacity: Resource,
    provisioning_capacity: Resource,
    live_nodes: usize,
    provisioning_nodes: usize,
    empty_nodes: usize,
    apps_done: usize,
    events: u64,
    steps: u64,
    metrics: Metrics,
    samples: Vec<RawSample>,
    chaos_until: u64,
    max_time: u64,
    horizon: u64,
    max_pass: usize,
}

impl<'w> Engine<'w> {
    pub fn new(w: &'w Workload, s: Settings) -> Result<Engine<'w>, SimError> {
        let mut config = w.scheduler.clone();
        config.packing.seed = s.seed;
        if w.cluster.heartbeat_mode == HeartbeatMode::Rounds {
            // Delay scheduling counts missed node heartbeats, and rounds
            // send none: a request held back for locality would wait
            // forever. In rounds mode the delay does not apply.
            config.locality = LocalityDelay::Off;
        }
        let max_pass = config.limits.max_containers_per_pass;
        let sched = Scheduler::new(config).map_err(|source| SimError::Config {
            origin: w.origin.clone(),
            source,
        })?;
        let last_arrival = w.jobs.last().map_or(0, |j| j.arrival_ms);
        let horizon = w.horizon_ms;
        let chaos_until = s.chaos.as_ref().map_or(0, |c| {
            c.until_ms
                .unwrap_or_else(|| last_arrival.max(horizon).max(30 * 60 * 1000))
        });
        let max_time = match (&s.chaos, w.max_time_ms) {
            (Some(c), _) => chaos_until + c.liveness_timeout_ms,
            (None, Some(m)) => m,
            (None, None) => last_arrival.max(horizon) + 7 * DAY_MS,
        };
        let mut apps = Vec::with_capacity(w.jobs.len());
        for (i, job) in w.jobs.iter().enumerate() {
            let id = ApplicationId::new(
                CLUSTER_TIMESTAMP,
                i32::try_from(i + 1)
                    .map_err(|_| SimError::workload(&w.origin, "more than 2^31 applications"))?,
            );
            let plans: Vec<&TaskPlan> = job.phases.iter().flatten().collect();
            let mut keys = Vec::with_capacity(plans.len());
            for p in &plans {
                let norm = sched
                    .normalize(p.resource)
                    .map_err(|e| SimError::workload(&w.origin, format!("job {}: {e}", job.name)))?;
                keys.push(ReqKey::new(p.priority, norm));
            }
            let mut phases = Vec::new();
            let mut start = 0;
            for ph in &job.phases {
                phases.push((start, start + ph.len()));
                start += ph.len();
            }
            apps.push(SimApp {
                id,
                attempt: 0,
                state: AppState::NotArrived,
                queue_path: job.queue.clone(),
                am_container: None,
                first_am_start: None,
                am_start: 0,
                finish_ms: None,
                counted_failures: 0,
                tasks: vec![TaskState::Blocked; plans.len()],
                left: plans.len(),
                plans,
                keys,
                phases,
                phase: 0,
                phase_left: 0,
                delayed: Vec::new(),
                book: AskBook::default(),
                running: BTreeMap::new(),
                inbox_alloc: Vec::new(),
                inbox_done: Vec::new(),
                releases: Vec::new(),
                ran_on: BTreeSet::new(),
                waiting_since: BTreeMap::new(),
            });
        }
        let mut e = Engine {
            w,
            sched,
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            jitter: Rng::stream(s.seed, &[8]),
            chaos_rng: Rng::stream(s.seed, &[9]),
            s,
            nodes: Vec::new(),
            node_index: BTreeMap::new(),
            pool_next: vec![0; w.cluster.pools.len()],
            apps,
            active: BTreeSet::new(),
            containers: BTreeMap::new(),
            to_report: Vec::new(),
            waiting: BTreeSet::new(),
            used: Resource::ZERO,
            capacity: Resource::ZERO,
            provisioning_capacity: Resource::ZERO,
            live_nodes: 0,
            provisioning_nodes: 0,
            empty_nodes: 0,
            apps_done: 0,
            events: 0,
            steps: 0,
            metrics: Metrics::default(),
            samples: Vec::new(),
            chaos_until,
            max_time,
            horizon,
            max_pass,
        };
        e.boot()?;
        Ok(e)
    }

    fn push(&mut self, time: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Timed {
            time,
            seq: self.seq,
            ev,
        });
    }

    fn boot(&mut self) -> Result<(), SimError> {
        let w = self.w;
        for def in &w.cluster.nodes {
            let idx =
                self.add_node_record(def.host.clone(), def.rack.clone(), def.capability, def.pool);
            if let Some(n) = self.pool_next.get_mut(def.pool) {
                *n += 1;
            }
            self.provisioning_nodes += 1;
            self.provisioning_capacity += def.capability;
            self.join(idx)?;
        }
        // Elastic floor: start at least at the minimum.
        if let Some(el) = &w.cluster.elastic {
            let have = self
                .nodes
                .iter()
                .filter(|n| n.pool == el.pool && n.life == NodeLife::Live)
                .count();
            for _ in have..el.min_nodes {
                let idx = self.mint(el.pool);
                self.join(idx)?;
            }
            self.push(el.check_interval_ms, Ev::ElasticCheck);
        }
        // The floor's nodes are part of the starting cluster, not
        // autoscaler additions.
        self.metrics.nodes_added = 0;
        self.metrics.nodes_min = self.live_nodes;
        self.metrics.nodes_max = self.live_nodes;
        for (i, job) in w.jobs.iter().enumerate() {
            self.push(job.arrival_ms, Ev::Arrival(i));
        }
        match w.cluster.heartbeat_mode {
            HeartbeatMode::PerNode => {}
            HeartbeatMode::Rounds => self.push(w.cluster.heartbeat_interval_ms, Ev::Round),
        }
        if w.cluster.continuous_scheduling_interval_ms > 0 {
            self.push(w.cluster.continuous_scheduling_interval_ms, Ev::Pass);
        }
        self.push(0, Ev::Sample);
        if let Some(c) = self.s.chaos.clone() {
            if c.node_loss_per_hour > 0.0 {
                let t = self.chaos_gap(c.node_loss_per_hour);
                self.push(t, Ev::ChaosNodeLoss);
            }
            if c.am_crash_per_hour > 0.0 {
                let t = self.chaos_gap(c.am_crash_per_hour);
                self.push(t, Ev::ChaosAmCrash);
            }
        }
        Ok(())
    }

    fn chaos_gap(&mut self, per_hour: f64) -> u64 {
        let mean_ms = 3_600_000.0 / per_hour;
        self.now + (self.chaos_rng.exponential(mean_ms).round() as u64).max(1)
    }

    fn add_node_record(
        &mut self,
        host: String,
        rack: String,
        capability: Resource,
        pool: usize,
    ) -> usize {
        let id = NodeId::new(host, NM_PORT);
        let idx = self.nodes.len();
        self.node_index.insert(id.clone(), idx);
        self.nodes.push(SimNode {
            id,
            rack,
            capability,
            pool,
            life: NodeLife::Provisioning,
            incarnation: 0,
            containers: BTreeSet::new(),
            idle_since: self.now,
            to_report: Vec::new(),
            app_state: BTreeSet::new(),
        });
        idx
    }

    /// A new node of `pool`, provisioning from now.
    fn mint(&mut self, pool: usize) -> usize {
        let k = self.pool_next[pool];
        self.pool_next[pool] += 1;
        let def = self.w.cluster.pools[pool].node(pool, k);
        let idx = self.add_node_record(def.host, def.rack, def.capability, pool);
        self.provisioning_nodes += 1;
        self.provisioning_capacity += def.capability;
        self.metrics.nodes_added += 1;
        idx
    }

    /// A provisioning (or returning) node registers.
    fn join(&mut self, idx: usize) -> Result<(), SimError> {
        let node = &mut self.nodes[idx];
        match node.life {
            NodeLife::Provisioning => {
                self.provisioning_nodes -= 1;
                self.provisioning_capacity -= node.capability;
            }
            NodeLife::Lost => {}
            NodeLife::Live | NodeLife::Released => return Ok(()),
        }
        node.life = NodeLife::Live;
        node.incarnation += 1;
        node.idle_since = self.now;
        node.to_report.clear();
        let incarnation = node.incarnation;
        let input = Input::NodeAdded {
            node: node.id.clone(),
            rack: node.rack.clone(),
            capability: node.capability,
        };
        self.live_nodes += 1;
        self.empty_nodes += 1;
        self.capacity += self.nodes[idx].capability;
        self.feed(input)?;
        if self.w.cluster.heartbeat_mode == HeartbeatMode::PerNode {
            let first = self.now + self.jitter.below(self.w.cluster.heartbeat_interval_ms);
            self.push(
                first,
                Ev::NodeHeartbeat {
                    node: idx,
                    incarnation,
                },
            );
        }
        Ok(())
    }

    /// Takes a live node out: lost (chaos, comes back) or released
    /// (autoscaler).
    fn drop_node(&mut self, idx: usize, lost: bool) -> Result<(), SimError> {
        if self.nodes[idx].life != NodeLife::Live {
            return Ok(());
        }
        // The simulator's counters change first, so that the checks after
        // the core's step compare like with like.
        let node = &mut self.nodes[idx];
        if node.containers.is_empty() {
            self.empty_nodes -= 1;
        }
        node.life = if lost {
            NodeLife::Lost
        } else {
            NodeLife::Released
        };
        node.to_report.clear();
        self.live_nodes -= 1;
        self.capacity -= node.capability;
        let input = Input::NodeRemoved {
            node: node.id.clone(),
        };
        // Every container is completed by the core, and so removed here.
        self.feed(input)
    }

    // ------------------------------------------------------------------
    // Feeding the core

    fn feed(&mut self, input: Input) -> Result<(), SimError> {
        self.steps += 1;
        let desc = self.s.check_invariants.then(|| describe(&input));
        let kind = input.kind();
        let d = match self.sched.handle(self.now, input) {
            Ok(d) => d,
            Err(source) => {
                return Err(SimError::Scheduler {
                    seed: self.s.seed,
                    step: self.steps,
                    time_ms: self.now,
                    input: desc.unwrap_or_else(|| kind.to_string()),
                    source,
                })
            }
        };
        self.apply(d)?;
        if let Some(desc) = desc {
            self.verify(&desc)?;
        }
        Ok(())
    }

    fn pass(&mut self) -> Result<(), SimError> {
        self.steps += 1;
        let d = self
            .sched
            .schedule(self.now, self.max_pass)
            .map_err(|source| SimError::Scheduler {
                seed: self.s.seed,
                step: self.steps,
                time_ms: self.now,
                input: "a continuous scheduling pass".into(),
                source,
            })?;
        self.apply(d)?;
        if self.s.check_invariants {
            self.verify("a continuous scheduling pass")?;
        }
        Ok(())
    }

    fn verify(&self, after: &str) -> Result<(), SimError> {
        let fail = |violation: String| SimError::Invariant {
            seed: self.s.seed,
            step: self.steps,
            time_ms: self.now,
            input: after.to_string(),
            violation,
        };
        self.sched
            .check_invariants()
            .map_err(|v| fail(v.to_string()))?;
        let c = self.sched.cluster();
        if c.containers != self.containers.len() || c.used != self.used {
            return Err(fail(format!(
                "the core holds {} containers using {}, the simulator {} using {}",
                c.containers,
                c.used,
                self.containers.len(),
                self.used
            )));
        }
        if c.nodes != self.live_nodes || c.capability != self.capacity {
            return Err(fail(format!(
                "the core has {} nodes with {}, the simulator {} with {}",
                c.nodes, c.capability, self.live_nodes, self.capacity
            )));
        }
        Ok(())
    }

    /// Takes in what the core decided.
    fn apply(&mut self, d: Decisions) -> Result<(), SimError> {
        let mut am_failures: Vec<(usize, bool)> = Vec::new();
        for al in d.allocations {
            let a = app_index(&al.container);
            let Some(&n) = self.node_index.get(&al.node) else {
                return Err(SimError::Invariant {
                    seed: self.s.seed,
                    step: self.steps,
                    time_ms: self.now,
                    input: "an allocation".into(),
                    violation: format!(
                        "container {} was placed on unknown node {}",
                        al.container, al.node
                    ),
                });
            };
            self.metrics.allocations += 1;
            match al.locality {
                Locality::NodeLocal => self.metrics.locality.node_local += 1,
                Locality::RackLocal => self.metrics.locality.rack_local += 1,
                Locality::OffSwitch => self.metrics.locality.off_switch += 1,
            }
            let node = &mut self.nodes[n];
            if node.containers.is_empty() && node.life == NodeLife::Live {
                self.empty_nodes -= 1;
            }
            node.containers.insert(al.container);
            self.used += al.resource;
            let Some(app) = self.apps.get(a) else {
                return Err(SimError::Invariant {
                    seed: self.s.seed,
                    step: self.steps,
                    time_ms: self.now,
                    input: "an allocation".into(),
                    violation: format!(
                        "container {} belongs to no simulated application",
                        al.container
                    ),
                });
            };
            let attempt = al.container.attempt.attempt_id;
            let is_am = app.state == AppState::WaitingAm
                && attempt == app.attempt
                && app.am_container.is_none();
            let role = if is_am {
                let app = &mut self.apps[a];
                app.am_container = Some(al.container);
                if let Some(since) = app.waiting_since.remove(&AM_SLOT) {
                    self.waiting.remove(&(since, a, AM_SLOT));
                }
                let at = self.now + self.w.cluster.launch_delay_ms;
                self.push(at, Ev::AmLaunched { app: a, attempt });
                Role::Am
            } else {
                self.apps[a].inbox_alloc.push(al.clone());
                Role::Unassigned
            };
            self.containers.insert(
                al.container,
                SimContainer {
                    app: a,
                    attempt,
                    node: n,
                    resource: al.resource,
                    role,
                    exited: false,
                },
            );
        }
        for c in d.completed {
            let Some(sc) = self.containers.remove(&c.container) else {
                continue;
            };
            self.used -= sc.resource;
            let node = &mut self.nodes[sc.node];
            node.containers.remove(&c.container);
            if node.containers.is_empty() && node.life == NodeLife::Live {
                node.idle_since = self.now;
                self.empty_nodes += 1;
            }
            let app = &mut self.apps[sc.app];
            let current = sc.attempt == app.attempt
                && matches!(app.state, AppState::WaitingAm | AppState::Running);
            match sc.role {
                Role::Am => {
                    if current {
                        am_failures.push((sc.app, c.cause != CompletionCause::NodeLost));
                    }
                }
                _ => {
                    if current {
                        app.inbox_done.push(c);
                    }
                }
            }
        }
        if self.containers.len() > self.metrics.peak_containers {
            self.record_peak();
        }
        for (a, counts) in am_failures {
            self.fail_attempt(a, counts)?;
        }
        Ok(())
    }

    fn record_peak(&mut self) {
        let m = &mut self.metrics;
        m.peak_containers = self.containers.len();
        m.peak_time_ms = self.now;
        m.empty_at_peak = self.empty_nodes;
        if self.nodes.len() <= PEAK_SNAPSHOT_MAX_NODES {
            let mut counts: Vec<usize> = self
                .nodes
                .iter()
                .filter(|n| n.life == NodeLife::Live && !n.containers.is_empty())
                .map(|n| n.containers.len())
                .collect();
            counts.sort_unstable_by(|a, b| b.cmp(a));
            m.peak_nodes = counts;
        }
    }

    // ------------------------------------------------------------------
    // Applications

    fn start_waiting(&mut self, a: usize, t: usize) {
        let app = &mut self.apps[a];
        let plan = app.plans[t];
        app.tasks[t] = TaskState::Waiting;
        app.book.add(t, app.keys[t], plan.locality.clone());
        app.waiting_since.insert(t, self.now);
        self.waiting.insert((self.now, a, t));
    }

    fn stop_waiting(&mut self, a: usize, slot: usize) {
        if let Some(since) = self.apps[a].waiting_since.remove(&slot) {
            self.waiting.remove(&(since, a, slot));
        }
    }

    fn arrive(&mut self, a: usize) -> Result<(), SimError> {
        self.active.insert(a);
        self.apps[a].attempt = 1;
        self.submit_attempt(a)
    }

    fn submit_attempt(&mut self, a: usize) -> Result<(), SimError> {
        let job = &self.w.jobs[a];
        let attempt = self.apps[a].attempt_id();
        self.feed(Input::AppAdded {
            attempt,
            queue: job.queue.clone(),
            user: job.user.clone(),
            priority: job.priority,
            unmanaged_am: job.unmanaged_am,
        })?;
        if let Some(r) = self.sched.app(&attempt) {
            self.apps[a].queue_path = r.queue;
        }
        let app = &mut self.apps[a];
        app.am_container = None;
        if job.unmanaged_am {
            app.state = AppState::WaitingAm;
            return self.am_launched(a, attempt.attempt_id);
        }
        app.state = AppState::WaitingAm;
        app.waiting_since.insert(AM_SLOT, self.now);
        self.waiting.insert((self.now, a, AM_SLOT));
        self.feed(Input::AsksUpdated {
            attempt,
            asks: vec![ResourceAsk::new(0, ANY, job.am_resource, 1)],
            releases: Vec::new(),
            blacklist_add: Vec::new(),
            blacklist_remove: Vec::new(),
        })?;
        self.pass()
    }

    fn am_launched(&mut self, a: usize, attempt: i32) -> Result<(), SimError> {
        let app = &mut self.apps[a];
        if app.attempt != attempt || app.state != AppState::WaitingAm {
            return Ok(());
        }
        app.state = AppState::Running;
        app.am_start = self.now;
        app.first_am_start.get_or_insert(self.now);
        self.activate_phase(a);
        self.am_heartbeat(a, attempt)
    }

    /// Makes the current phase's unfinished tasks ask (or wait for their
    /// request delay).
    fn activate_phase(&mut self, a: usize) {
        let (lo, hi) = self.apps[a]
            .phases
            .get(self.apps[a].phase)
            .copied()
            .unwrap_or((0, 0));
        let mut left = 0;
        for t in lo..hi {
            let app = &mut self.apps[a];
            if app.tasks[t] == TaskState::Done {
                continue;
            }
            left += 1;
            if app.tasks[t] != TaskState::Blocked {
                continue;
            }
            let delay = app.plans[t].request_delay_ms;
            if delay > 0 && self.now < app.am_start + delay {
                app.tasks[t] = TaskState::Delayed;
                app.delayed.push(t);
            } else {
                self.start_waiting(a, t);
            }
        }
        self.apps[a].phase_left = left;
    }

    fn am_heartbeat(&mut self, a: usize, attempt: i32) -> Result<(), SimError> {
        if self.apps[a].attempt != attempt || self.apps[a].state != AppState::Running {
            return Ok(());
        }
        let service_lifetime = match self.w.jobs[a].kind {
            AppKind::Batch => None,
            AppKind::Service { lifetime_ms } => Some(lifetime_ms),
        };
        // Completed containers.
        let done = std::mem::take(&mut self.apps[a].inbox_done);
        for c in done {
            let app = &mut self.apps[a];
            let Some(t) = app.running.remove(&c.container) else {
                continue;
            };
            if c.exit_status == 0 && service_lifetime.is_none() {
                app.tasks[t] = TaskState::Done;
                app.left -= 1;
                app.phase_left = app.phase_left.saturating_sub(1);
                self.metrics.tasks_completed += 1;
            } else {
                if c.exit_status == 0 {
                    self.metrics.tasks_completed += 1;
                } else {
                    self.metrics.tasks_lost += 1;
                }
                app.tasks[t] = TaskState::Blocked;
                self.start_waiting(a, t);
            }
        }
        // New containers.
        let allocs = std::mem::take(&mut self.apps[a].inbox_alloc);
        for al in allocs {
            let n = self.node_index.get(&al.node).copied();
            let (host, rack) = match n {
                Some(n) => (self.nodes[n].id.host.clone(), self.nodes[n].rack.clone()),
                None => continue,
            };
            let key = ReqKey::new(al.priority, al.resource);
            let task = self.apps[a].book.allocated(key, al.locality, &host, &rack);
            let alive = self.containers.contains_key(&al.container);
            match (task, alive) {
                (Some(t), false) => {
                    // Lost before the AM saw it: the task asks again.
                    self.stop_waiting(a, t);
                    self.start_waiting(a, t);
                }
                (Some(t), true) => {
                    self.stop_waiting(a, t);
                    let node = n.unwrap_or_default();
                    let app = &mut self.apps[a];
                    app.tasks[t] = TaskState::Running(al.container);
                    app.running.insert(al.container, t);
                    app.ran_on.insert(node);
                    let duration = app.plans[t].duration_ms;
                    if let Some(c) = self.containers.get_mut(&al.container) {
                        c.role = Role::Task(t);
                    }
                    self.nodes[node].app_state.insert(a);
                    if let Some(d) = duration {
                        let end = self.now + self.w.cluster.launch_delay_ms + d;
                        self.push(end, Ev::ContainerExit(al.container));
                    }
                }
                (None, true) => {
                    if let Some(c) = self.containers.get_mut(&al.container) {
                        c.role = Role::Released;
                    }
                    self.apps[a].releases.push(al.container);
                }
                (None, false) => {}
            }
        }
        // Tasks whose request delay is over.
        if !self.apps[a].delayed.is_empty() {
            let start = self.apps[a].am_start;
            let delayed = std::mem::take(&mut self.apps[a].delayed);
            for t in delayed {
                if self.apps[a].tasks[t] != TaskState::Delayed {
                    continue;
                }
                if self.now >= start + self.apps[a].plans[t].request_delay_ms {
                    self.start_waiting(a, t);
                } else {
                    self.apps[a].delayed.push(t);
                }
            }
        }
        // Next phase.
        while service_lifetime.is_none()
            && self.apps[a].phase_left == 0
            && self.apps[a].phase + 1 < self.apps[a].phases.len()
        {
            self.apps[a].phase += 1;
            self.activate_phase(a);
        }
        let finished = match service_lifetime {
            None => self.apps[a].left == 0,
            Some(life) => self.now >= self.apps[a].first_am_start.unwrap_or(self.now) + life,
        };
        if finished {
            return self.finish(a, false);
        }
        let app = &mut self.apps[a];
        let asks = app.book.updates();
        let releases = std::mem::take(&mut app.releases);
        if !asks.is_empty() || !releases.is_empty() {
            let attempt_id = app.attempt_id();
            self.feed(Input::AsksUpdated {
                attempt: attempt_id,
                asks,
                releases,
                blacklist_add: Vec::new(),
                blacklist_remove: Vec::new(),
            })?;
            self.pass()?;
        }
        let next = self.now + self.w.cluster.am_heartbeat_interval_ms;
        self.push(next, Ev::AmHeartbeat { app: a, attempt });
        Ok(())
    }

    /// Forgets every request of the application's current attempt.
    fn clear_requests(&mut self, a: usize) {
        let slots: Vec<usize> = self.apps[a].waiting_since.keys().copied().collect();
        for slot in slots {
            self.stop_waiting(a, slot);
        }
        let app = &mut self.apps[a];
        app.book = AskBook::default();
        app.delayed.clear();
        app.inbox_alloc.clear();
        app.inbox_done.clear();
        app.releases.clear();
        app.running.clear();
    }

    /// The application ends (its AM unregisters, or it ran out of
    /// attempts).
    fn finish(&mut self, a: usize, failed: bool) -> Result<(), SimError> {
        let registered = matches!(self.apps[a].state, AppState::WaitingAm | AppState::Running);
        self.apps[a].state = AppState::Done { failed };
        self.apps[a].finish_ms = Some(self.now);
        self.apps_done += 1;
        self.active.remove(&a);
        self.clear_requests(a);
        let ran_on = std::mem::take(&mut self.apps[a].ran_on);
        for n in ran_on {
            self.nodes[n].app_state.remove(&a);
        }
        if registered {
            let attempt = self.apps[a].attempt_id();
            self.feed(Input::AppRemoved { attempt })?;
        }
        Ok(())
    }

    /// The attempt's AM died (its container was lost, or it crashed).
    fn fail_attempt(&mut self, a: usize, counts: bool) -> Result<(), SimError> {
        if !matches!(self.apps[a].state, AppState::WaitingAm | AppState::Running) {
            return Ok(());
        }
        self.metrics.am_attempts_failed += 1;
        let attempt = self.apps[a].attempt_id();
        self.apps[a].state = AppState::Restarting;
        self.feed(Input::AppRemoved { attempt })?;
        self.clear_requests(a);
        let app = &mut self.apps[a];
        for t in app.tasks.iter_mut() {
            match *t {
                TaskState::Running(_) => {
                    *t = TaskState::Blocked;
                    self.metrics.tasks_lost += 1;
                }
                TaskState::Waiting | TaskState::Delayed => *t = TaskState::Blocked,
                TaskState::Blocked | TaskState::Done => {}
            }
        }
        app.am_container = None;
        if counts {
            app.counted_failures += 1;
        }
        if app.counted_failures >= self.w.cluster.max_am_attempts {
            // `finish` must not unregister an attempt the core dropped.
            return self.finish(a, true);
        }
        app.attempt += 1;
        self.submit_attempt(a)
    }

    // ------------------------------------------------------------------
    // Nodes

    fn report_exit(&mut self, cid: ContainerId) {
        let Some(c) = self.containers.get_mut(&cid) else {
            return;
        };
        if c.exited {
            return;
        }
        c.exited = true;
        match self.w.cluster.heartbeat_mode {
            HeartbeatMode::PerNode => self.nodes[c.node].to_report.push(cid),
            HeartbeatMode::Rounds => self.to_report.push(cid),
        }
    }

    fn report_completed(&mut self, list: Vec<ContainerId>) -> Result<(), SimError> {
        for cid in list {
            if self.containers.contains_key(&cid) {
                self.feed(Input::ContainerCompleted {
                    container: cid,
                    exit: ContainerExit::Finished {
                        exit_status: 0,
                        diagnostics: String::new(),
                    },
                })?;
            }
        }
        Ok(())
    }

    fn node_heartbeat(&mut self, idx: usize, incarnation: u32) -> Result<(), SimError> {
        let node = &mut self.nodes[idx];
        if node.life != NodeLife::Live || node.incarnation != incarnation {
            return Ok(());
        }
        let list = std::mem::take(&mut node.to_report);
        let id = node.id.clone();
        self.report_completed(list)?;
        if self.nodes[idx].life == NodeLife::Live {
            self.feed(Input::NodeUpdated {
                node: id,
                update: NodeUpdate::heartbeat(),
            })?;
        }
        let c = &self.w.cluster;
        let j = c.heartbeat_jitter_ms;
        let mut next = self.now + c.heartbeat_interval_ms - j + self.jitter.below(2 * j + 1);
        if let Some(ch) = &self.s.chaos {
            if self.now < self.chaos_until && self.chaos_rng.chance(ch.heartbeat_delay_probability)
            {
                next += self.chaos_rng.below(ch.heartbeat_delay_max_ms + 1);
            }
        }
        self.push(
            next.max(self.now + 1),
            Ev::NodeHeartbeat {
                node: idx,
                incarnation,
            },
        );
        Ok(())
    }

    fn round(&mut self) -> Result<(), SimError> {
        let list = std::mem::take(&mut self.to_report);
        self.report_completed(list)?;
        self.pass()?;
        let mut next = self.now + self.w.cluster.heartbeat_interval_ms;
        if let Some(ch) = &self.s.chaos {
            if self.now < self.chaos_until && self.chaos_rng.chance(ch.heartbeat_delay_probability)
            {
                next += self.chaos_rng.below(ch.heartbeat_delay_max_ms + 1);
            }
        }
        self.push(next, Ev::Round);
        Ok(())
    }

    // ------------------------------------------------------------------
    // The autoscaler

    fn elastic_check(&mut self) -> Result<(), SimError> {
        let Some(el) = self.w.cluster.elastic.clone() else {
            return Ok(());
        };
        let cap = self.w.cluster.pools[el.pool].capability;
        let (mut live, mut prov) = (0usize, 0usize);
        for n in &self.nodes {
            if n.pool == el.pool {
                match n.life {
                    NodeLife::Live => live += 1,
                    NodeLife::Provisioning => prov += 1,
                    _ => {}
                }
            }
        }
        // Scale up for requests that waited too long.
        let cutoff = self.now.saturating_sub(el.scale_up_wait_ms);
        let mut demand = Resource::ZERO;
        if self.now >= el.scale_up_wait_ms {
            for &(since, a, slot) in &self.waiting {
                if since > cutoff {
                    break;
                }
                demand += if slot == AM_SLOT {
                    self.w.jobs[a].am_resource
                } else {
                    self.apps[a].keys[slot].resource()
                };
            }
        }
        let mut add = 0usize;
        if demand.memory_mb > 0 || demand.vcores > 0 {
            let by_mem = div_ceil(demand.memory_mb, cap.memory_mb.max(1));
            let by_vc = div_ceil(i64::from(demand.vcores), i64::from(cap.vcores.max(1)));
            let needed = usize::try_from(by_mem.max(by_vc)).unwrap_or(usize::MAX);
            add = needed.saturating_sub(prov);
            if let Some(step) = el.max_scale_up_step {
                add = add.min(step);
            }
        }
        add = add.max(el.min_nodes.saturating_sub(live + prov));
        add = add.min(el.max_nodes.saturating_sub(live + prov));
        for _ in 0..add {
            let idx = self.mint(el.pool);
            self.push(self.now + el.provisioning_delay_ms, Ev::NodeJoin(idx));
        }
        prov += add;
        // Scale down nodes idle long enough.
        let mut removable = (live + prov).saturating_sub(el.min_nodes);
        if removable > 0 {
            let mut idle: Vec<(u64, usize)> = self
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| {
                    n.pool == el.pool
                        && n.life == NodeLife::Live
                        && n.containers.is_empty()
                        && n.idle_since + el.scale_down_idle_ms <= self.now
                        && (!el.keep_nodes_with_app_state || n.app_state.is_empty())
                })
                .map(|(i, n)| (n.idle_since, i))
                .collect();
            idle.sort_unstable();
            for (_, idx) in idle {
                if removable == 0 {
                    break;
                }
                self.drop_node(idx, false)?;
                self.metrics.nodes_removed += 1;
                removable -= 1;
            }
        }
        self.push(self.now + el.check_interval_ms, Ev::ElasticCheck);
        Ok(())
    }

    // ------------------------------------------------------------------
    // Chaos

    fn chaos_node_loss(&mut self) -> Result<(), SimError> {
        let Some(c) = self.s.chaos.clone() else {
            return Ok(());
        };
        if self.now >= self.chaos_until {
            return Ok(());
        }
        let live: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].life == NodeLife::Live)
            .collect();
        if !live.is_empty() {
            let idx = live[self.chaos_rng.index(live.len())];
            self.drop_node(idx, true)?;
            self.push(
                self.now + c.node_return_after_ms.max(1),
                Ev::NodeReturn(idx),
            );
        }
        let next = self.chaos_gap(c.node_loss_per_hour);
        if next < self.chaos_until {
            self.push(next, Ev::ChaosNodeLoss);
        }
        Ok(())
    }

    fn chaos_am_crash(&mut self) -> Result<(), SimError> {
        let Some(c) = self.s.chaos.clone() else {
            return Ok(());
        };
        if self.now >= self.chaos_until {
            return Ok(());
        }
        let running: Vec<usize> = self
            .active
            .iter()
            .copied()
            .filter(|&a| self.apps[a].state == AppState::Running)
            .collect();
        if !running.is_empty() {
            let a = running[self.chaos_rng.index(running.len())];
            match self.apps[a].am_container {
                Some(cid) => self.feed(Input::ContainerCompleted {
                    container: cid,
                    exit: ContainerExit::Finished {
                        exit_status: 1,
                        diagnostics: "simulated ApplicationMaster crash".into(),
                    },
                })?,
                None => self.fail_attempt(a, true)?,
            }
        }
        let next = self.chaos_gap(c.am_crash_per_hour);
        if next < self.chaos_until {
            self.push(next, Ev::ChaosAmCrash);
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // Measuring

    fn advance(&mut self, t: u64) {
        let m = &mut self.metrics;
        if t > m.last_ms {
            let dt = (t - m.last_ms) as f64;
            m.used_mb_ms += self.used.memory_mb as f64 * dt;
            m.cap_mb_ms += self.capacity.memory_mb as f64 * dt;
            m.used_vc_ms += f64::from(self.used.vcores) * dt;
            m.cap_vc_ms += f64::from(self.capacity.vcores) * dt;
            m.paid_mb_ms +=
                (self.capacity.memory_mb + self.provisioning_capacity.memory_mb) as f64 * dt;
            m.node_ms += (self.live_nodes + self.provisioning_nodes) as f64 * dt;
            m.last_ms = t;
        }
        self.now = t;
    }

    fn sample(&mut self) {
        let mut queues = BTreeMap::new();
        let mut guaranteed = BTreeMap::new();
        for q in self.sched.queues() {
            if q.leaf {
                queues.insert(q.path.clone(), q.used.memory_mb);
                guaranteed.insert(q.path, q.guaranteed.memory_mb);
            }
        }
        // Queue share error, when the cluster is contended.
        if self.capacity.memory_mb > 0
            && self.used.memory_mb * 10 >= self.capacity.memory_mb * 9
            && self.sched.queue_config().kind != SchedulerKind::Fifo
        {
            let mut wanting: BTreeSet<&str> = BTreeSet::new();
            for &a in &self.active {
                let app = &self.apps[a];
                if app.book.waiting() > 0 || app.state == AppState::WaitingAm {
                    wanting.insert(app.queue_path.as_str());
                }
            }
            if wanting.len() >= 2 {
                let members: Vec<&String> = queues
                    .iter()
                    .filter(|(p, used)| **used > 0 || wanting.contains(p.as_str()))
                    .map(|(p, _)| p)
                    .collect();
                let g_total: i64 = members
                    .iter()
                    .map(|p| guaranteed.get(*p).copied().unwrap_or(0))
                    .sum();
                let u_total: i64 = members
                    .iter()
                    .map(|p| queues.get(*p).copied().unwrap_or(0))
                    .sum();
                if g_total > 0 && u_total > 0 {
                    let mut worst = 0.0f64;
                    for p in &members {
                        if !wanting.contains(p.as_str()) {
                            continue;
                        }
                        let target =
                            guaranteed.get(*p).copied().unwrap_or(0) as f64 / g_total as f64;
                        let actual = queues.get(*p).copied().unwrap_or(0) as f64 / u_total as f64;
                        worst = worst.max(target - actual);
                    }
                    let m = &mut self.metrics;
                    m.share_err_max = m.share_err_max.max(worst);
                    m.share_err_sum += worst;
                    m.share_samples += 1;
                }
            }
        }
        self.samples.push(RawSample {
            point: SamplePoint {
                time_ms: self.now,
                live_nodes: self.live_nodes,
                provisioning_nodes: self.provisioning_nodes,
                empty_nodes: self.empty_nodes,
                capacity_mb: self.capacity.memory_mb,
                used_mb: self.used.memory_mb,
                capacity_vcores: i64::from(self.capacity.vcores),
                used_vcores: i64::from(self.used.vcores),
                running_containers: self.containers.len(),
                waiting_requests: self.waiting.len(),
                running_apps: self.active.len(),
                queue_used_mb: Vec::new(),
            },
            queues,
        });
    }

    // ------------------------------------------------------------------
    // The loop

    fn dispatch(&mut self, ev: Ev) -> Result<(), SimError> {
        match ev {
            Ev::Arrival(a) => self.arrive(a),
            Ev::AmLaunched { app, attempt } => self.am_launched(app, attempt),
            Ev::AmHeartbeat { app, attempt } => self.am_heartbeat(app, attempt),
            Ev::ContainerExit(cid) => {
                self.report_exit(cid);
                Ok(())
            }
            Ev::NodeHeartbeat { node, incarnation } => self.node_heartbeat(node, incarnation),
            Ev::Round => self.round(),
            Ev::Pass => {
                self.pass()?;
                let next = self.now + self.w.cluster.continuous_scheduling_interval_ms;
                self.push(next, Ev::Pass);
                Ok(())
            }
            Ev::NodeJoin(idx) => {
                self.join(idx)?;
                self.pass()
            }
            Ev::NodeReturn(idx) => {
                if self.nodes[idx].life == NodeLife::Lost {
                    self.join(idx)?;
                    self.pass()?;
                }
                Ok(())
            }
            Ev::ElasticCheck => self.elastic_check(),
            Ev::Sample => {
                self.sample();
                let next = self.now + self.w.sample_interval_ms;
                self.push(next, Ev::Sample);
                Ok(())
            }
            Ev::ChaosNodeLoss => self.chaos_node_loss(),
            Ev::ChaosAmCrash => self.chaos_am_crash(),
        }
    }

    fn finished(&self) -> bool {
        self.apps_done == self.apps.len() && self.now >= self.horizon
    }

    /// Runs to the end, drawing the progress bar on stderr when the
    /// settings ask for it.
    pub fn run(self) -> Result<SimReport, SimError> {
        if self.s.progress {
            let mut err = std::io::stderr();
            self.run_to(Some(&mut err))
        } else {
            self.run_to(None)
        }
    }

    /// Runs to the end, drawing the progress bar on `progress` if given
    /// (and nowhere otherwise).
    pub fn run_to(mut self, progress: Option<&mut dyn Write>) -> Result<SimReport, SimError> {
        let wall = Instant::now();
        let mut progress = ProgressBar::new(progress, self.target_ms());
        while let Some(next) = self.heap.pop() {
            if next.time > self.max_time {
                self.advance(self.max_time);
                break;
            }
            self.advance(next.time);
            self.events += 1;
            self.dispatch(next.ev)?;
            let nodes = self.live_nodes + self.provisioning_nodes;
            self.metrics.nodes_min = self.metrics.nodes_min.min(nodes);
            self.metrics.nodes_max = self.metrics.nodes_max.max(nodes);
            if self.finished() {
                break;
            }
            if self.events & 0xFFF == 0 {
                progress.show(self.now, self.apps_done, self.apps.len());
            }
        }
        progress.done(self.now, self.apps_done, self.apps.len());
        if self
            .samples
            .last()
            .is_none_or(|s| s.point.time_ms != self.now)
        {
            self.sample();
        }
        if self.s.chaos.is_some() && self.apps_done < self.apps.len() {
            return Err(self.liveness_failure());
        }
        Ok(self.report(wall.elapsed()))
    }

    fn target_ms(&self) -> u64 {
        self.w
            .jobs
            .last()
            .map_or(0, |j| j.arrival_ms)
            .max(self.horizon)
            .max(self.chaos_until)
            .max(1)
    }

    fn liveness_failure(&self) -> SimError {
        let unfinished: Vec<usize> = (0..self.apps.len())
            .filter(|&a| !self.apps[a].is_done())
            .collect();
        let detail = unfinished
            .iter()
            .take(5)
            .map(|&a| {
                let app = &self.apps[a];
                let waiting = app.book.waiting();
                let running = app.running.len();
                format!(
                    "{} ({}, attempt {}, {:?}, {} task(s) left, {waiting} waiting, {running} running)",
                    self.w.jobs[a].name,
                    app.attempt_id(),
                    app.attempt,
                    app.state,
                    app.left
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        SimError::Liveness {
            seed: self.s.seed,
            time_ms: self.now,
            unfinished: unfinished.len(),
            detail,
        }
    }

    fn report(mut self, wall: std::time::Duration) -> SimReport {
        let columns = queue_columns(
            self.samples
                .iter()
                .flat_map(|s| s.queues.keys().cloned())
                .collect::<Vec<_>>(),
        );
        let series: Vec<SamplePoint> = std::mem::take(&mut self.samples)
            .into_iter()
            .map(|mut s| {
                s.point.queue_used_mb = columns
                    .iter()
                    .map(|q| s.queues.get(q).copied().unwrap_or(0))
                    .collect();
                s.point
            })
            .collect();
        let mut turnarounds: Vec<f64> = Vec::new();
        let (mut completed, mut failed, mut batch_completed) = (0usize, 0usize, 0usize);
        let mut first_arrival = u64::MAX;
        let mut last_finish = 0u64;
        for (a, app) in self.apps.iter().enumerate() {
            if let AppState::Done { failed: f } = app.state {
                let arrival = self.w.jobs[a].arrival_ms;
                let finish = app.finish_ms.unwrap_or(self.now);
                if f {
                    failed += 1;
                } else {
                    completed += 1;
                }
                // Services run for as long as they are told to: their
                // "turnaround" says nothing about the scheduler.
                if matches!(self.w.jobs[a].kind, AppKind::Batch) {
                    if !f {
                        batch_completed += 1;
                        turnarounds.push((finish - arrival) as f64 / 1000.0);
                    }
                    first_arrival = first_arrival.min(arrival);
                    last_finish = last_finish.max(finish);
                }
            }
        }
        turnarounds.sort_by(f64::total_cmp);
        let mean = if turnarounds.is_empty() {
            0.0
        } else {
            turnarounds.iter().sum::<f64>() / turnarounds.len() as f64
        };
        let makespan_s = if last_finish > first_arrival && first_arrival != u64::MAX {
            (last_finish - first_arrival) as f64 / 1000.0
        } else {
            0.0
        };
        let m = &self.metrics;
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let cfg = self.sched.config();
        let summary = Summary {
            workload: self.w.name.clone(),
            seed: self.s.seed,
            scheduler: self.sched.queue_config().kind.name().to_string(),
            placement: cfg.node_selection.name().to_string(),
            heartbeat_mode: self.w.cluster.heartbeat_mode.name().to_string(),
            chaos: self.s.chaos.is_some(),
            sim_time_s: self.now as f64 / 1000.0,
            events: self.events,
            scheduler_steps: self.steps,
            allocations: m.allocations,
            apps_submitted: self
                .apps
                .iter()
                .filter(|a| a.state != AppState::NotArrived)
                .count(),
            apps_completed: completed,
            apps_failed: failed,
            apps_unfinished: self.apps.len() - completed - failed,
            am_attempts_failed: m.am_attempts_failed,
            tasks_completed: m.tasks_completed,
            tasks_lost: m.tasks_lost,
            node_hours: m.node_ms / 3_600_000.0,
            nodes_min: m.nodes_min,
            nodes_max: m.nodes_max,
            nodes_added: m.nodes_added,
            nodes_removed: m.nodes_removed,
            utilization_mean: ratio(m.used_mb_ms, m.cap_mb_ms),
            utilization_vcores_mean: ratio(m.used_vc_ms, m.cap_vc_ms),
            utilization_paid_mean: ratio(m.used_mb_ms, m.paid_mb_ms),
            turnaround_s_mean: mean,
            turnaround_s_p50: percentile(&turnarounds, 50.0),
            turnaround_s_p95: percentile(&turnarounds, 95.0),
            turnaround_s_max: turnarounds.last().copied().unwrap_or(0.0),
            makespan_s,
            throughput_apps_per_hour: if makespan_s > 0.0 {
                batch_completed as f64 / (makespan_s / 3600.0)
            } else {
                0.0
            },
            queue_share_error_max: m.share_err_max,
            queue_share_error_mean: ratio(m.share_err_sum, m.share_samples as f64),
            queue_share_samples: m.share_samples,
            locality: m.locality.clone(),
            peak_containers: m.peak_containers,
            empty_nodes_at_peak: m.empty_at_peak,
            peak_time_s: m.peak_time_ms as f64 / 1000.0,
            peak_node_containers: m.peak_nodes.clone(),
        }
        .rounded();
        SimReport {
            summary,
            queues: columns,
            series,
            wall_time: wall,
        }
    }
}

fn app_index(container: &ContainerId) -> usize {
    usize::try_from(container.attempt.app.id)
        .unwrap_or(0)
        .wrapping_sub(1)
}

fn div_ceil(a: i64, b: i64) -> i64 {
    if a <= 0 {
        0
    } else {
        (a + b - 1) / b
    }
}

/// A short description of an input, for invariant failures.
fn describe(input: &Input) -> String {
    match input {
        Input::NodeAdded { node, .. } => format!("NodeAdded({node})"),
        Input::NodeUpdated { node, .. } => format!("NodeUpdated({node})"),
        Input::NodeRemoved { node } => format!("NodeRemoved({node})"),
        Input::AppAdded { attempt, queue, .. } => format!("AppAdded({attempt} in {queue})"),
        Input::AppRemoved { attempt } => format!("AppRemoved({attempt})"),
        Input::AsksUpdated {
            attempt,
            asks,
            releases,
            ..
        } => format!(
            "AsksUpdated({attempt}: {} row(s), {} release(s))",
            asks.len(),
            releases.len()
        ),
        Input::ContainerCompleted { container, .. } => format!("ContainerCompleted({container})"),
        other => other.kind().to_string(),
    }
}

/// A one-line progress bar, redrawn in place (`\r`) and ended with a
/// newline by [`ProgressBar::done`]. Writes nothing without a writer.
struct ProgressBar<'a> {
    out: Option<&'a mut dyn Write>,
    target_ms: u64,
    last_pct: i64,
    last_draw: Instant,
}

impl<'a> ProgressBar<'a> {
    fn new(out: Option<&'a mut dyn Write>, target_ms: u64) -> ProgressBar<'a> {
        ProgressBar {
            out,
            target_ms: target_ms.max(1),
            last_pct: -1,
            last_draw: Instant::now(),
        }
    }

    fn line(&self, now_ms: u64, done: usize, total: usize) -> String {
        let frac = (now_ms as f64 / self.target_ms as f64).min(1.0);
        let width = 30;
        let filled = (frac * width as f64).round() as usize;
        let secs = now_ms / 1000;
        format!(
            "\rsim [{}{}] {:5.1}%  t={:02}:{:02}:{:02}  apps {done}/{total}",
            "#".repeat(filled),
            ".".repeat(width - filled),
            frac * 100.0,
            secs / 3600,
            (secs / 60) % 60,
            secs % 60
        )
    }

    /// Redraws the bar, at most once per 0.1% of progress or half a
    /// second.
    fn show(&mut self, now_ms: u64, done: usize, total: usize) {
        if self.out.is_none() {
            return;
        }
        let pct = (now_ms as f64 / self.target_ms as f64 * 1000.0) as i64;
        if pct == self.last_pct && self.last_draw.elapsed().as_millis() < 500 {
            return;
        }
        self.last_pct = pct;
        self.last_draw = Instant::now();
        let line = self.line(now_ms, done, total);
        if let Some(out) = self.out.as_mut() {
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
    }

    /// Draws the final state and ends the line.
    fn done(&mut self, now_ms: u64, done: usize, total: usize) {
        let line = self.line(now_ms, done, total);
        if let Some(out) = self.out.as_mut() {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

/// Whether a progress bar should be drawn when asked for "auto".
pub(crate) fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::model::WorkloadSource;
    use crate::spec::WorkloadSpec;

    /// Two nodes, one Spark-like job of three executors (its AM outside
    /// the cluster, so the executors are its only containers).
    const TINY: &str = r#"{
      "cluster": {"pools": [{"count": 2, "memory_mb": 4096, "vcores": 4}]},
      "jobs": [{"name": "j", "kind": "spark", "unmanaged_am": true, "arrivals": [{"at_s": [0]}],
                "executors": {"count": 3, "duration_s": 30}}]
    }"#;

    fn workload(json: &str) -> Workload {
        let loaded = WorkloadSpec::parse(json, "tiny").and_then(|spec| {
            WorkloadSource::Spec {
                spec: Box::new(spec),
                origin: "tiny".into(),
                base_dir: PathBuf::new(),
            }
            .load(5)
        });
        match loaded {
            Ok(w) => w,
            Err(e) => panic!("{e}"),
        }
    }

    fn settings(check_invariants: bool) -> Settings {
        Settings {
            seed: 5,
            check_invariants,
            chaos: None,
            progress: false,
        }
    }

    /// Runs events until `enough` holds, as [`Engine::run_to`] does.
    fn step_until(e: &mut Engine<'_>, enough: impl Fn(&Engine<'_>) -> bool) {
        while !enough(e) {
            let Some(next) = e.heap.pop() else {
                panic!("the run ended first");
            };
            e.advance(next.time);
            e.events += 1;
            if let Err(err) = e.dispatch(next.ev) {
                panic!("{err}");
            }
        }
    }

    fn engine(w: &Workload, check_invariants: bool) -> Engine<'_> {
        match Engine::new(w, settings(check_invariants)) {
            Ok(e) => e,
            Err(err) => panic!("{err}"),
        }
    }

    fn violation(r: Result<(), SimError>) -> String {
        match r {
            Err(e @ SimError::Invariant { .. }) => e.to_string(),
            Err(e) => panic!("not an invariant violation: {e}"),
            Ok(()) => panic!("the corrupted state passed the check"),
        }
    }

    #[test]
    fn verify_catches_a_simulator_that_disagrees_with_the_core() {
        let w = workload(TINY);
        let mut e = engine(&w, true);
        step_until(&mut e, |e| e.containers.len() == 3);
        assert!(e.verify("setup").is_ok());

        // The simulator believes a container uses more than the core says.
        let one = Resource::new(1024, 1);
        e.used += one;
        let msg = violation(e.verify("a test step"));
        assert!(
            msg.contains(
                "the core holds 3 containers using <memory:3072, vCores:3>, \
                 the simulator 3 using <memory:4096, vCores:4>"
            ),
            "{msg}"
        );
        assert!(msg.starts_with("seed 5, step "), "{msg}");
        assert!(msg.contains("after a test step"), "{msg}");
        assert!(msg.contains("--seed 5"), "{msg}");
        e.used -= one;

        // The simulator forgets a container the core holds.
        let first = e.containers.keys().next().copied();
        let Some(cid) = first else {
            panic!("no container");
        };
        let kept = e.containers.remove(&cid);
        let msg = violation(e.verify("a test step"));
        assert!(msg.contains("the core holds 3 containers"), "{msg}");
        assert!(msg.contains("the simulator 2 using"), "{msg}");
        if let Some(c) = kept {
            e.containers.insert(cid, c);
        }

        // The simulator counts a node the core does not have.
        e.live_nodes += 1;
        let msg = violation(e.verify("a test step"));
        assert!(
            msg.contains("the core has 2 nodes with <memory:8192, vCores:8>, the simulator 3 with"),
            "{msg}"
        );
        e.live_nodes -= 1;
        assert!(e.verify("repaired").is_ok());
    }

    #[test]
    fn a_corrupted_tally_fails_the_next_checked_step_of_a_run() {
        let w = workload(TINY);
        // With checks on, the step after the corruption fails the run.
        let mut e = engine(&w, true);
        step_until(&mut e, |e| !e.containers.is_empty());
        e.capacity += Resource::new(1024, 1);
        let err = match e.run_to(None) {
            Ok(r) => panic!("the run passed: {}", r.summary_text()),
            Err(err) => err,
        };
        assert!(matches!(err, SimError::Invariant { .. }), "{err}");
        assert_eq!(err.seed(), Some(5));
        assert!(
            err.to_string().contains("the core has 2 nodes with"),
            "{err}"
        );

        // Without checks nothing notices: the check is what catches it.
        let mut e = engine(&w, false);
        step_until(&mut e, |e| !e.containers.is_empty());
        e.capacity += Resource::new(1024, 1);
        assert!(e.run_to(None).is_ok());
    }

    #[test]
    fn progress_bar_draws_only_when_given_a_writer_and_ends_its_line() {
        let mut out: Vec<u8> = Vec::new();
        {
            let mut bar = ProgressBar::new(Some(&mut out), 3_600_000);
            bar.show(1_800_000, 1, 4);
            bar.done(3_600_000, 4, 4);
        }
        let text = String::from_utf8_lossy(&out).into_owned();
        let half = format!(
            "\rsim [{}{}]  50.0%  t=00:30:00  apps 1/4",
            "#".repeat(15),
            ".".repeat(15)
        );
        let full = format!("\rsim [{}] 100.0%  t=01:00:00  apps 4/4\n", "#".repeat(30));
        assert_eq!(text, format!("{half}{full}"));

        let mut bar = ProgressBar::new(None, 3_600_000);
        bar.show(1_800_000, 1, 4);
        bar.done(3_600_000, 4, 4);
        assert!(bar.out.is_none());
    }

    #[test]
    fn a_run_draws_its_progress_bar_on_the_writer_it_is_given() {
        let w = workload(TINY);
        let mut out: Vec<u8> = Vec::new();
        let report = match engine(&w, false).run_to(Some(&mut out)) {
            Ok(r) => r,
            Err(err) => panic!("{err}"),
        };
        let text = String::from_utf8_lossy(&out).into_owned();
        assert!(text.starts_with("\rsim ["), "{text:?}");
        assert!(text.ends_with("apps 1/1\n"), "{text:?}");
        assert_eq!(text.matches('\n').count(), 1, "{text:?}");
        assert!(text.contains("100.0%"), "{text:?}");
        assert_eq!(report.summary.apps_completed, 1);
    }
}
