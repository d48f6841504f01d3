//! The discrete-event driver: a simulated clock, a fixed pool of
//! ContainerWorkers, clients that submit one DAG after another, and the
//! real [`TaskScheduler`] and [`ContainerScheduler`] making every decision.
//!
//! Wiring follows `spindle_dag`'s "How a driver wires them": one
//! ContainerGroup (`All-In-One`) registered by the clients with the
//! ContainerScheduler (scheme `none`: the experiments share one group, so
//! nothing is recycled), whose `StartWorker` requests the driver grants
//! from the fixed pool at time 0; every arriving worker is added to the
//! group's TaskScheduler. Every ten simulated seconds the driver ticks both
//! cores (the status line, the container scheduler's timers), reports the
//! group's demand (capped by the pool: the pool is the whole cluster, so
//! once it is up there is never room for more) and which workers are idle.
//! After every batch of simultaneous events, each worker with a free slot
//! asks for work (an `Offer`), and every assignment becomes an attempt
//! that ends after the task's duration. A DAG that succeeds lets its
//! client submit the next one at the same instant.
//!
//! Nothing here decides which task runs where: that is the cores' job.
//! The driver only keeps what a real AM would also know (which attempts
//! run on which worker, and each worker's free resources, from the
//! assignments it carried out).

use std::collections::BTreeMap;

use spindle_dag::config::{ContainerSchedulerConfig, TaskSchedulerConfig};
use spindle_dag::container_scheduler::{
    self as cs, ContainerAction, ContainerScheduler, GroupSpec,
};
use spindle_dag::task_scheduler::{self as ts, AttemptOutcome, DagEvent, TaskScheduler};
use spindle_dag::{AttemptId, DagId, Resource, WorkerId};

use super::workload::QueryModel;
use super::DagSimError;

/// The period of the cores' ticks (the status line's default period and
/// `mr3.check.memory.usage.event.interval.secs`'s default).
pub(crate) const TICK_MS: u64 = 10_000;
/// The ContainerGroup every client shares, named as in the seed's log.
pub(crate) const GROUP: &str = "All-In-One";

/// The fixed cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cluster {
    pub workers: u32,
    pub slots_per_worker: u32,
    /// What one task needs (every task of the experiments is this size).
    pub slot: Resource,
}

impl Cluster {
    pub fn slots(&self) -> u32 {
        self.workers * self.slots_per_worker
    }

    pub fn worker_resource(&self) -> Resource {
        Resource::new(
            self.slot.memory_mb * u64::from(self.slots_per_worker),
            self.slot.vcores * self.slots_per_worker,
        )
    }
}

/// One client: the queries it submits, in order, one at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientPlan {
    pub name: String,
    /// Indexes into the run's queries.
    pub queries: Vec<usize>,
}

/// Everything one simulation needs.
pub(crate) struct RunSpec<'a> {
    pub queries: &'a [QueryModel],
    pub clients: &'a [ClientPlan],
    pub cluster: Cluster,
    pub task: TaskSchedulerConfig,
    pub check_invariants: bool,
}

/// One DAG a client ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DagRun {
    pub query: usize,
    pub submitted_ms: u64,
    pub finished_ms: u64,
}

/// What one simulation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunOutcome {
    /// Per client, its DAGs in submission order.
    pub runs: Vec<Vec<DagRun>>,
    pub end_ms: u64,
    /// Sum of the durations of all attempts (slot-milliseconds).
    pub busy_slot_ms: u64,
    /// Inputs handled by the cores.
    pub steps: u64,
    /// The status line of the tick with the most pending tasks.
    pub busiest_status_line: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    WorkerUp(WorkerId),
    Submit(usize),
    AttemptEnd(AttemptId),
    Tick,
}

struct ClientState {
    next: usize,
    current: Option<(DagId, usize, u64)>,
    runs: Vec<DagRun>,
}

struct Driver<'a> {
    spec: &'a RunSpec<'a>,
    tasks: TaskScheduler,
    containers: ContainerScheduler,
    now: u64,
    seq: u64,
    events: BTreeMap<(u64, u64), Event>,
    free: BTreeMap<WorkerId, Resource>,
    attempts: BTreeMap<AttemptId, WorkerId>,
    clients: Vec<ClientState>,
    dag_client: BTreeMap<DagId, usize>,
    next_dag: u64,
    unfinished: usize,
    workers_requested: u32,
    idle_reported: BTreeMap<WorkerId, bool>,
    demand_reported: Option<u32>,
    busy_slot_ms: u64,
    steps: u64,
    busiest: Option<(u64, String)>,
}

/// Runs the clients' plans to completion and reports what happened.
pub(crate) fn simulate(spec: &RunSpec<'_>) -> Result<RunOutcome, DagSimError> {
    let mut d = Driver::new(spec)?;
    d.start()?;
    while let Some(((t, _), event)) = d.events.pop_first() {
        d.now = t;
        d.apply(event)?;
        d.check_own_invariants()?;
        while let Some(entry) = d.events.first_entry() {
            if entry.key().0 != t {
                break;
            }
            let event = entry.remove();
            d.apply(event)?;
            d.check_own_invariants()?;
        }
        d.dispatch()?;
        d.check_own_invariants()?;
    }
    d.finish()
}

impl<'a> Driver<'a> {
    fn new(spec: &'a RunSpec<'a>) -> Result<Driver<'a>, DagSimError> {
        let tasks = TaskScheduler::new(spec.task.clone())?;
        let containers = ContainerScheduler::new(ContainerSchedulerConfig::default())?;
        for c in spec.clients {
            if let Some(&bad) = c.queries.iter().find(|&&q| q >= spec.queries.len()) {
                return Err(DagSimError::Workload(format!(
                    "client {} names query #{bad}, but there are {} queries",
                    c.name,
                    spec.queries.len()
                )));
            }
        }
        Ok(Driver {
            spec,
            tasks,
            containers,
            now: 0,
            seq: 0,
            events: BTreeMap::new(),
            free: BTreeMap::new(),
            attempts: BTreeMap::new(),
            clients: spec
                .clients
                .iter()
                .map(|_| ClientState {
                    next: 0,
                    current: None,
                    runs: Vec::new(),
                })
                .collect(),
            dag_client: BTreeMap::new(),
            next_dag: 1,
            unfinished: spec
                .clients
                .iter()
                .filter(|c| !c.queries.is_empty())
                .count(),
            workers_requested: 0,
            idle_reported: BTreeMap::new(),
            demand_reported: None,
            busy_slot_ms: 0,
            steps: 0,
            busiest: None,
        })
    }

    fn push(&mut self, at_ms: u64, event: Event) {
        self.events.insert((at_ms, self.seq), event);
        self.seq += 1;
    }

    /// One input to the task scheduler, with the invariant check.
    fn ts(&mut self, input: ts::Input) -> Result<ts::TaskDecisions, DagSimError> {
        let out = self.tasks.handle(self.now, input)?;
        self.steps += 1;
        if self.spec.check_invariants {
            self.tasks.check_invariants()?;
        }
        Ok(out)
    }

    /// One input to the container scheduler, with the invariant check.
    fn cs(&mut self, input: cs::Input) -> Result<Vec<ContainerAction>, DagSimError> {
        let out = self.containers.handle(self.now, input)?;
        self.steps += 1;
        if self.spec.check_invariants {
            self.containers.check_invariants()?;
        }
        Ok(out.actions)
    }

    fn start(&mut self) -> Result<(), DagSimError> {
        let group = GroupSpec::new(GROUP, self.spec.cluster.worker_resource());
        for c in self.spec.clients {
            let actions = self.cs(cs::Input::RegisterGroup {
                client: c.name.clone(),
                spec: group.clone(),
            })?;
            self.carry_out(actions)?;
        }
        // The pool is provisioned before the first query, as in the seed's
        // warm clusters.
        let actions = self.cs(cs::Input::GroupDemand {
            group: GROUP.to_string(),
            wanted_workers: self.spec.cluster.workers,
        })?;
        self.carry_out(actions)?;
        for c in 0..self.clients.len() {
            if !self.spec.clients[c].queries.is_empty() {
                self.push(0, Event::Submit(c));
            }
        }
        self.push(0, Event::Tick);
        Ok(())
    }

    fn carry_out(&mut self, actions: Vec<ContainerAction>) -> Result<(), DagSimError> {
        for action in actions {
            match action {
                ContainerAction::StartWorker { group } if group == GROUP => {
                    if self.workers_requested >= self.spec.cluster.workers {
                        return Err(DagSimError::Driver(format!(
                            "the container scheduler asked for worker #{} but the cluster has {}",
                            self.workers_requested + 1,
                            self.spec.cluster.workers
                        )));
                    }
                    let name = WorkerId::new(format!("worker-{:03}", self.workers_requested));
                    self.workers_requested += 1;
                    self.push(self.now, Event::WorkerUp(name));
                }
                other => {
                    return Err(DagSimError::Driver(format!(
                        "unexpected container action with one group and scheme none: {other:?}"
                    )))
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Event) -> Result<(), DagSimError> {
        match event {
            Event::WorkerUp(worker) => {
                let actions = self.cs(cs::Input::WorkerStarted {
                    worker: worker.clone(),
                    group: GROUP.to_string(),
                })?;
                self.carry_out(actions)?;
                let capacity = self.spec.cluster.worker_resource();
                let out = self.ts(ts::Input::WorkerAdded {
                    worker: worker.clone(),
                    capacity,
                })?;
                self.free.insert(worker, capacity);
                self.take(out)
            }
            Event::Submit(c) => self.submit(c),
            Event::AttemptEnd(attempt) => {
                let worker = self.attempts.remove(&attempt).ok_or_else(|| {
                    DagSimError::Driver(format!("attempt {attempt} ended but never started"))
                })?;
                let slot = self.spec.cluster.slot;
                if let Some(f) = self.free.get_mut(&worker) {
                    *f = f.saturating_add(slot);
                }
                let out = self.ts(ts::Input::AttemptFinished {
                    attempt,
                    outcome: AttemptOutcome::Succeeded,
                })?;
                self.take(out)
            }
            Event::Tick => self.tick(),
        }
    }

    fn submit(&mut self, c: usize) -> Result<(), DagSimError> {
        let plan = &self.spec.clients[c];
        let state = &mut self.clients[c];
        let Some(&query) = plan.queries.get(state.next) else {
            return Ok(());
        };
        state.next += 1;
        let id = DagId(self.next_dag);
        self.next_dag += 1;
        state.current = Some((id, query, self.now));
        self.dag_client.insert(id, c);
        let out = self.ts(ts::Input::SubmitDag {
            id,
            client: plan.name.clone(),
            queue: None,
            spec: self.spec.queries[query].spec.clone(),
        })?;
        self.take(out)
    }

    fn tick(&mut self) -> Result<(), DagSimError> {
        let out = self.ts(ts::Input::Tick)?;
        if let Some(line) = out.status_line.clone() {
            let pending = self.tasks.pending_demand().0;
            if self.busiest.as_ref().is_none_or(|(p, _)| pending > *p) {
                self.busiest = Some((pending, line));
            }
        }
        self.take(out)?;
        let actions = self.cs(cs::Input::Tick)?;
        self.carry_out(actions)?;

        // The group's demand, as the wiring asks, capped by what the fixed
        // pool can still give.
        let (_, need) = self.tasks.pending_demand();
        let per_worker = self.spec.cluster.worker_resource().memory_mb.max(1);
        let wanted = need.memory_mb.div_ceil(per_worker);
        let room = self.spec.cluster.workers - self.workers_requested;
        let wanted = u32::try_from(wanted).unwrap_or(u32::MAX).min(room);
        if self.demand_reported != Some(wanted) {
            self.demand_reported = Some(wanted);
            let actions = self.cs(cs::Input::GroupDemand {
                group: GROUP.to_string(),
                wanted_workers: wanted,
            })?;
            self.carry_out(actions)?;
        }
        let idle: Vec<WorkerId> = self.tasks.idle_workers();
        let workers: Vec<WorkerId> = self.free.keys().cloned().collect();
        for w in workers {
            let now_idle = idle.binary_search(&w).is_ok();
            if self.idle_reported.get(&w) != Some(&now_idle) {
                self.idle_reported.insert(w.clone(), now_idle);
                let actions = self.cs(cs::Input::WorkerActivity {
                    worker: w,
                    idle: now_idle,
                })?;
                self.carry_out(actions)?;
            }
        }
        if self.unfinished > 0 {
            self.push(self.now + TICK_MS, Event::Tick);
        }
        Ok(())
    }

    /// Carries out the task scheduler's decisions.
    fn take(&mut self, out: ts::TaskDecisions) -> Result<(), DagSimError> {
        if let Some(k) = out.kills.first() {
            return Err(DagSimError::Driver(format!(
                "the task scheduler killed {} on {}; nothing in the experiments fails or is killed",
                k.attempt, k.worker
            )));
        }
        if let Some(w) = out.drained_workers.first() {
            return Err(DagSimError::Driver(format!(
                "worker {w} reported drained, but no worker was asked to drain"
            )));
        }
        for a in out.assignments {
            let query = self
                .dag_client
                .get(&a.attempt.task.dag)
                .and_then(|&c| self.clients[c].current)
                .map(|(_, q, _)| q)
                .ok_or_else(|| {
                    DagSimError::Driver(format!("assignment {} of an unknown DAG", a.attempt))
                })?;
            let duration = self.spec.queries[query]
                .duration_ms(a.attempt.task.vertex, a.attempt.task.task)
                .ok_or_else(|| {
                    DagSimError::Driver(format!("assignment {} of an unknown task", a.attempt))
                })?;
            let free = self.free.get_mut(&a.worker).ok_or_else(|| {
                DagSimError::Driver(format!("assignment to unknown worker {}", a.worker))
            })?;
            *free = free.checked_sub(a.resource).ok_or_else(|| {
                DagSimError::Driver(format!(
                    "{} was assigned to {} which has only {free} free",
                    a.attempt, a.worker
                ))
            })?;
            self.busy_slot_ms += duration;
            self.attempts.insert(a.attempt, a.worker);
            self.push(self.now + duration, Event::AttemptEnd(a.attempt));
        }
        for e in out.dag_events {
            match e {
                DagEvent::Succeeded { dag } => {
                    let c = self.dag_client.remove(&dag).ok_or_else(|| {
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
                    if state.next < self.spec.clients[c].queries.len() {
                        self.push(self.now, Event::Submit(c));
                    } else {
                        self.unfinished -= 1;
                    }
                }
                DagEvent::Failed { dag, reason } | DagEvent::Killed { dag, reason } => {
                    return Err(DagSimError::Driver(format!(
                        "{dag} ended unsuccessfully: {reason}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Lets every worker with a free slot ask for work.
    fn dispatch(&mut self) -> Result<(), DagSimError> {
        let slot = self.spec.cluster.slot;
        let hungry: Vec<WorkerId> = self
            .free
            .iter()
            .filter(|(_, f)| slot.fits_in(f))
            .map(|(w, _)| w.clone())
            .collect();
        for worker in hungry {
            let out = self.ts(ts::Input::Offer { worker })?;
            self.take(out)?;
            self.check_own_invariants()?;
        }
        Ok(())
    }

    /// The driver's own bookkeeping agrees with the task scheduler's
    /// (checked between events, when the driver has carried out every
    /// decision).
    fn check_own_invariants(&self) -> Result<(), DagSimError> {
        if !self.spec.check_invariants {
            return Ok(());
        }
        for (w, free) in &self.free {
            let report = self.tasks.worker_report(w).ok_or_else(|| {
                DagSimError::Driver(format!("worker {w} is unknown to the task scheduler"))
            })?;
            if report.capacity.checked_sub(report.used) != Some(*free) {
                return Err(DagSimError::Driver(format!(
                    "worker {w}: the driver counts {free} free, the task scheduler {} used of {}",
                    report.used, report.capacity
                )));
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<RunOutcome, DagSimError> {
        if self.unfinished > 0 || !self.attempts.is_empty() {
            let stuck: Vec<String> = self
                .spec
                .clients
                .iter()
                .zip(&self.clients)
                .filter(|(p, s)| s.runs.len() < p.queries.len())
                .map(|(p, s)| format!("{} ({} of {} done)", p.name, s.runs.len(), p.queries.len()))
                .collect();
            return Err(DagSimError::Driver(format!(
                "no event left at {} ms but clients are unfinished: {}; status: {}",
                self.now,
                stuck.join(", "),
                self.tasks.status_line()
            )));
        }
        let end_ms = self
            .clients
            .iter()
            .flat_map(|c| c.runs.iter().map(|r| r.finished_ms))
            .max()
            .unwrap_or(0);
        Ok(RunOutcome {
            runs: self.clients.into_iter().map(|c| c.runs).collect(),
            end_ms,
            busy_slot_ms: self.busy_slot_ms,
            steps: self.steps,
            busiest_status_line: self.busiest.map(|(_, l)| l),
        })
    }
}
