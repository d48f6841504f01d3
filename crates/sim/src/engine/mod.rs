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
//!
//! This module holds the engine's state, its start and its event loop;
//! the handlers of the events are split by concern into `nodes` (node
//! lifecycle and heartbeats), `apps` (the simulated AMs), `feed` (calls
//! into the core and what the engine does with its decisions),
//! `autoscaler`, `chaos`, `measure` (metrics, samples and the final
//! report) and `progress` (the terminal progress bar).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::io::Write;
use std::time::Instant;

use spindle_common::{ApplicationAttemptId, ApplicationId, ContainerId, NodeId, Resource};
use spindle_scheduler::{CompletedContainer, LocalityDelay, Scheduler};

use crate::askbook::{AskBook, ReqKey};
use crate::error::SimError;
use crate::model::{HeartbeatMode, TaskPlan, Workload};
use crate::report::{LocalityCounts, SamplePoint, SimReport};
use crate::rng::Rng;
use crate::ChaosOptions;

mod apps;
mod autoscaler;
mod chaos;
mod feed;
mod measure;
mod nodes;
mod progress;

pub(crate) use progress::stderr_is_terminal;
use progress::ProgressBar;

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
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::model::WorkloadSource;
    use crate::spec::WorkloadSpec;

    /// Two nodes, one Spark-like job of three executors (its AM outside
    /// the cluster, so the executors are its only containers).
    pub(super) const TINY: &str = r#"{
      "cluster": {"pools": [{"count": 2, "memory_mb": 4096, "vcores": 4}]},
      "jobs": [{"name": "j", "kind": "spark", "unmanaged_am": true, "arrivals": [{"at_s": [0]}],
                "executors": {"count": 3, "duration_s": 30}}]
    }"#;

    pub(super) fn workload(json: &str) -> Workload {
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
    pub(super) fn step_until(e: &mut Engine<'_>, enough: impl Fn(&Engine<'_>) -> bool) {
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

    pub(super) fn engine(w: &Workload, check_invariants: bool) -> Engine<'_> {
        match Engine::new(w, settings(check_invariants)) {
            Ok(e) => e,
            Err(err) => panic!("{err}"),
        }
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
