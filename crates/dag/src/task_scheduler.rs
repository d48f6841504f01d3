//! The TaskScheduler core: which ready task runs on which ContainerWorker.
//!
//! One `TaskScheduler` serves one ContainerGroup: the DAGs submitted to it
//! and the workers that belong to it. It is driven through
//! [`TaskScheduler::handle`] with a closed [`Input`] enum and answers with
//! [`TaskDecisions`].
//!
//! # Readiness
//!
//! A task becomes *ready* (pending in a queue) when its whole input is
//! available: for every one-to-one edge into its vertex, the producer task
//! with the same index has succeeded; for every all-to-all edge, the whole
//! producer vertex has succeeded. Tasks of root vertices are ready at
//! submission. A DAG succeeds when all its tasks have.
//!
//! # Queues
//!
//! `mr3.dag.queue.scheme` maps DAGs to queues:
//! - `common`: one queue, named `common`, for all DAGs;
//! - `individual`: a queue per DAG; an offer is served from the DAG that
//!   currently uses the least memory (then the older DAG);
//! - `capacity`: the queues of `mr3.dag.queue.capacity.specs`, in priority
//!   order; a DAG goes to the queue it names, or to `default`.
//!
//! Capacity guarantees are applied at every assignment, in two passes over
//! the queues in priority order:
//! 1. the first queue whose running memory is *below* its guaranteed share
//!    of the group's memory (and that has a task fitting the worker) is
//!    served;
//! 2. otherwise the first queue with a fitting task is served.
//!
//! So a queue below its guarantee is served before any lower queue; spare
//! resources go to higher queues first; a 0% queue is served only when no
//! queue above it asks. Because a lower queue is only served out of what
//! higher queues leave, queue *k*'s guarantee holds "if the queues above it
//! use no more than 100 - *k*%", which is how the seed states both worked
//! examples (see the tests). A queue may exceed its share by less than one
//! task (the check is made before the assignment). Nothing is ever
//! preempted: a high queue waits for running tasks of lower queues to end.
//!
//! # Priorities
//!
//! Within a queue, tasks are ordered by DAG priority (`mr3.dag.priority.scheme`:
//! `fifo` numbers DAGs 0, 1, 2, ... in submission order; `concurrent`
//! gives all 0), then vertex priority (`mr3.vertex.priority.scheme`, see
//! [`crate::dag::VertexPriorityScheme`]), then DAG id, vertex and task
//! index. Lower numbers first.
//!
//! With `mr3.taskattempt.queue.scheme = indexed` (the default), a ready
//! task of a non-root vertex, whose whole input is intermediate data that
//! has just become available, goes before every ready task of a root
//! vertex, whatever their priorities: running consumers while their input
//! is fresh keeps intermediate data short-lived (the seed's "may schedule
//! it immediately even in the presence of many Tasks of higher
//! priorities"). With a common queue this applies across all DAGs; with
//! individual queues only within each DAG. `basic` keeps strict priority
//! order.
//!
//! # Workers
//!
//! A worker offers its free resources ([`Input::Offer`]); the scheduler
//! fills it with the best tasks that fit, one after another. A draining
//! worker ([`Input::DrainWorker`], used by graceful stops and scale-in)
//! only takes tasks of the DAGs that were active when draining began, and
//! is reported in [`TaskDecisions::drained_workers`] once none of those DAGs
//! is active and it runs nothing. A worker that is removed loses its
//! running attempts, which are retried (counted as kills, not failures).
//!
//! # Lost outputs
//!
//! The output of a finished task lives on the worker that made it. When a
//! worker is removed, every output it held that a task which has not
//! succeeded still needs is made again: the producer goes back to waiting
//! (or straight into its queue), and so, transitively, does every producer
//! whose output that re-run needs and which was lost earlier. Consumers
//! lose their readiness: queued ones leave their queue until the output is
//! back, and running ones are killed (their fetch would fail); an attempt
//! so doomed that still ends in failure is counted as a kill. Outputs that
//! nobody needs any more (every consumer has succeeded, or the task is a
//! leaf) are not made again. A worker removed after draining holds nothing.
//!
//! # Failures
//!
//! A failed attempt is retried until the task has failed
//! `mr3.am.task.max.failed.attempts` times; then its DAG fails with a
//! reason naming the task and the last error, its pending tasks are
//! dropped and its running attempts are killed. A killed attempt (not the
//! task's fault) is retried, up to a named limit.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::config::{
    ConfigError, DagPriorityScheme, DagQueueScheme, TaskQueueScheme, TaskSchedulerConfig,
};
use crate::dag::{vertex_priorities, Dag, DagSpec, EdgeKind};
use crate::types::{
    check_clock, AttemptId, CoreError, DagId, InvariantViolation, Resource, TaskId, WorkerId,
};

/// Everything that can change a [`TaskScheduler`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A client submits a DAG. `queue` is the DAG's `mr3.dag.queue.name`
    /// (capacity scheduling only; unknown or absent means `default`).
    SubmitDag {
        id: DagId,
        client: String,
        queue: Option<String>,
        spec: DagSpec,
    },
    /// A client (or the AM) kills a DAG.
    KillDag { id: DagId, reason: String },
    /// A worker joins the group, with the resources it has for tasks.
    WorkerAdded {
        worker: WorkerId,
        capacity: Resource,
    },
    /// A worker is gone (exited, lost, or removed after draining).
    WorkerRemoved { worker: WorkerId },
    /// The worker should finish the DAGs active now and take nothing else.
    DrainWorker { worker: WorkerId },
    /// The worker asks for work: fill its free resources.
    Offer { worker: WorkerId },
    /// Offer every worker, in worker id order.
    OfferAll,
    /// A worker reports the end of an attempt.
    AttemptFinished {
        attempt: AttemptId,
        outcome: AttemptOutcome,
    },
    /// Time passes; produces the status line when it is due.
    Tick,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    Succeeded,
    /// The task's own failure; counts against
    /// `mr3.am.task.max.failed.attempts`.
    Failed {
        reason: String,
    },
    /// Stopped from outside (a kill request, a lost worker); retried
    /// without counting as a failure.
    Killed {
        reason: String,
    },
}

/// A task attempt to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub attempt: AttemptId,
    pub worker: WorkerId,
    pub resource: Resource,
    pub vertex_name: String,
    /// The vertex's command template, rendered for this attempt.
    pub command: String,
}

/// An attempt the worker must stop (its DAG failed or was killed). The
/// worker still reports its end with [`Input::AttemptFinished`]; until
/// then its resources stay in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptKill {
    pub attempt: AttemptId,
    pub worker: WorkerId,
}

/// A DAG reached a final state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DagEvent {
    Succeeded { dag: DagId },
    Failed { dag: DagId, reason: String },
    Killed { dag: DagId, reason: String },
}

/// What one input decided.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskDecisions {
    pub assignments: Vec<Assignment>,
    pub kills: Vec<AttemptKill>,
    pub dag_events: Vec<DagEvent>,
    /// Draining workers that have finished: no attempt running and every
    /// DAG they waited for is over. Each is reported once.
    pub drained_workers: Vec<WorkerId>,
    /// The periodic queue status line, when due.
    pub status_line: Option<String>,
}

/// A DAG's state as seen from outside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DagStatus {
    Running,
    Succeeded,
    Failed { reason: String },
    Killed { reason: String },
}

impl DagStatus {
    pub fn is_terminal(&self) -> bool {
        !matches!(self, DagStatus::Running)
    }
}

/// Progress of one DAG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DagReport {
    pub id: DagId,
    pub name: String,
    pub client: String,
    pub queue: String,
    pub dag_priority: u64,
    pub status: DagStatus,
    pub total_tasks: u64,
    pub succeeded_tasks: u64,
    pub pending_tasks: u64,
    pub running_attempts: u64,
    pub running: Resource,
}

/// One queue's figures, as in the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueReport {
    pub name: String,
    pub pending_tasks: u64,
    pub running: Resource,
    /// Floor of running memory / group memory, in percent.
    pub usage_percent: u64,
}

/// One worker's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    pub worker: WorkerId,
    pub capacity: Resource,
    pub used: Resource,
    pub running_attempts: u64,
    /// DAGs still active whose finished tasks' output this worker holds.
    pub holds_output_of: Vec<DagId>,
    pub draining: bool,
}

/// Sort key of the pending tasks of one vertex in a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct PendingKey {
    /// 0 for tasks that jump ahead (input-complete consumers under
    /// `indexed`), 1 otherwise.
    class: u8,
    dag_priority: u64,
    vertex_priority: u32,
    dag: DagId,
    vertex: u32,
}

#[derive(Debug, Clone, Default)]
struct TaskQueue {
    name: String,
    min_percent: u32,
    pending: BTreeMap<PendingKey, BTreeSet<u32>>,
    pending_tasks: u64,
    running: Resource,
}

impl TaskQueue {
    fn new(name: impl Into<String>, min_percent: u32) -> TaskQueue {
        TaskQueue {
            name: name.into(),
            min_percent,
            ..TaskQueue::default()
        }
    }

    fn insert(&mut self, key: PendingKey, task: u32) {
        if self.pending.entry(key).or_default().insert(task) {
            self.pending_tasks += 1;
        }
    }

    fn remove(&mut self, key: &PendingKey, task: u32) -> bool {
        let Some(set) = self.pending.get_mut(key) else {
            return false;
        };
        let removed = set.remove(&task);
        if set.is_empty() {
            self.pending.remove(key);
        }
        if removed {
            self.pending_tasks -= 1;
        }
        removed
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueueRef {
    Shared(usize),
    Own,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Some input is not available yet.
    Waiting,
    /// Ready, in its queue.
    Pending,
    /// An attempt runs.
    Running {
        attempt: u32,
    },
    Succeeded,
}

#[derive(Debug, Clone)]
struct TaskState {
    /// One-to-one producers whose task with this index has not succeeded.
    waiting_one_to_one: u32,
    phase: Phase,
    /// Attempts created so far (the last attempt's number).
    attempts: u32,
    failures: u32,
    kills: u32,
    /// Where the successful attempt ran.
    output_on: Option<WorkerId>,
}

#[derive(Debug, Clone)]
struct VertexState {
    /// All-to-all producers that have not completed.
    waiting_all_to_all: u32,
    succeeded: u32,
    tasks: Vec<TaskState>,
}

#[derive(Debug, Clone)]
struct DagState {
    id: DagId,
    client: String,
    dag: Dag,
    queue: QueueRef,
    /// Used when the queue is [`QueueRef::Own`] (individual scheme).
    own: TaskQueue,
    dag_priority: u64,
    submit_seq: u64,
    vertex_priority: Vec<u32>,
    vertices: Vec<VertexState>,
    status: DagStatus,
    completed_vertices: u32,
    succeeded_tasks: u64,
    running: Resource,
    running_attempts: u64,
}

#[derive(Debug, Clone)]
struct AttemptRecord {
    worker: WorkerId,
    resource: Resource,
    /// Some of the attempt's input was lost after it started; it has been
    /// asked to stop.
    input_lost: bool,
}

#[derive(Debug, Clone)]
struct WorkerState {
    capacity: Resource,
    used: Resource,
    running: BTreeSet<AttemptId>,
    /// Number of task outputs held, per active DAG.
    holds: BTreeMap<DagId, u64>,
    /// `Some(dags)` once draining: the only DAGs it still serves.
    draining: Option<BTreeSet<DagId>>,
    drained_reported: bool,
}

impl WorkerState {
    fn free(&self) -> Resource {
        self.capacity.saturating_sub(self.used)
    }
}

/// The task scheduler core. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct TaskScheduler {
    config: TaskSchedulerConfig,
    shared: Vec<TaskQueue>,
    dags: BTreeMap<DagId, DagState>,
    workers: BTreeMap<WorkerId, WorkerState>,
    attempts: BTreeMap<AttemptId, AttemptRecord>,
    capacity: Resource,
    submitted: u64,
    last_ms: u64,
    next_status_ms: u64,
}

impl TaskScheduler {
    pub fn new(config: TaskSchedulerConfig) -> Result<TaskScheduler, ConfigError> {
        if config.max_task_attempts == 0 {
            return Err(ConfigError::invalid(
                crate::config::keys::TASK_MAX_FAILED_ATTEMPTS,
                "0",
                "must be at least 1",
            ));
        }
        let shared = match config.queue_scheme {
            DagQueueScheme::Common => vec![TaskQueue::new("common", 100)],
            DagQueueScheme::Individual => Vec::new(),
            DagQueueScheme::Capacity => config
                .capacity_specs
                .queues()
                .iter()
                .map(|q| TaskQueue::new(q.name.clone(), q.min_percent))
                .collect(),
        };
        Ok(TaskScheduler {
            config,
            shared,
            dags: BTreeMap::new(),
            workers: BTreeMap::new(),
            attempts: BTreeMap::new(),
            capacity: Resource::ZERO,
            submitted: 0,
            last_ms: 0,
            next_status_ms: 0,
        })
    }

    pub fn config(&self) -> &TaskSchedulerConfig {
        &self.config
    }

    /// Applies one input at `now_ms` (which must not go backwards). On
    /// error nothing has changed.
    pub fn handle(&mut self, now_ms: u64, input: Input) -> Result<TaskDecisions, CoreError> {
        check_clock(self.last_ms, now_ms)?;
        let mut out = TaskDecisions::default();
        match input {
            Input::SubmitDag {
                id,
                client,
                queue,
                spec,
            } => self.submit(id, client, queue.as_deref(), &spec)?,
            Input::KillDag { id, reason } => self.kill_dag(id, reason, &mut out)?,
            Input::WorkerAdded { worker, capacity } => self.add_worker(worker, capacity)?,
            Input::WorkerRemoved { worker } => self.remove_worker(&worker, &mut out)?,
            Input::DrainWorker { worker } => self.drain_worker(&worker, &mut out)?,
            Input::Offer { worker } => {
                if !self.workers.contains_key(&worker) {
                    return Err(unknown_worker(&worker));
                }
                self.offer(&worker, &mut out);
            }
            Input::OfferAll => {
                let ids: Vec<WorkerId> = self.workers.keys().cloned().collect();
                for w in ids {
                    self.offer(&w, &mut out);
                }
            }
            Input::AttemptFinished { attempt, outcome } => {
                self.attempt_finished(attempt, outcome, &mut out)?
            }
            Input::Tick => {
                if self.config.status_interval_ms > 0 && now_ms >= self.next_status_ms {
                    out.status_line = Some(self.status_line());
                    self.next_status_ms = now_ms.saturating_add(self.config.status_interval_ms);
                }
            }
        }
        self.last_ms = now_ms;
        Ok(out)
    }

    // ----- inputs -----

    fn submit(
        &mut self,
        id: DagId,
        client: String,
        queue: Option<&str>,
        spec: &DagSpec,
    ) -> Result<(), CoreError> {
        if self.dags.contains_key(&id) {
            return Err(CoreError::Duplicate {
                what: "DAG",
                id: id.to_string(),
            });
        }
        let active = self
            .dags
            .values()
            .filter(|d| !d.status.is_terminal())
            .count() as u64;
        let limit = u64::from(self.config.limits.max_active_dags);
        if active >= limit {
            return Err(CoreError::LimitReached {
                limit: crate::config::keys::MAX_CONCURRENT_DAGS,
                value: limit,
                detail: format!("{active} DAGs are active; {id} is refused"),
            });
        }
        let dag = spec.validate(&self.config.limits.dag)?;
        let queue_ref = match self.config.queue_scheme {
            DagQueueScheme::Common => QueueRef::Shared(0),
            DagQueueScheme::Individual => QueueRef::Own,
            DagQueueScheme::Capacity => QueueRef::Shared(self.config.capacity_specs.resolve(queue)),
        };
        let seq = self.submitted;
        self.submitted += 1;
        let dag_priority = match self.config.dag_priority_scheme {
            DagPriorityScheme::Fifo => seq,
            DagPriorityScheme::Concurrent => 0,
        };
        let vertex_priority = vertex_priorities(&dag, self.config.vertex_priority_scheme);
        let vertices = dag
            .vertices()
            .iter()
            .enumerate()
            .map(|(v, vertex)| {
                let (mut a2a, mut o2o) = (0u32, 0u32);
                for (_, kind) in dag.producers(v as u32) {
                    match kind {
                        EdgeKind::AllToAll => a2a += 1,
                        EdgeKind::OneToOne => o2o += 1,
                    }
                }
                VertexState {
                    waiting_all_to_all: a2a,
                    succeeded: 0,
                    tasks: (0..vertex.tasks)
                        .map(|_| TaskState {
                            waiting_one_to_one: o2o,
                            phase: Phase::Waiting,
                            attempts: 0,
                            failures: 0,
                            kills: 0,
                            output_on: None,
                        })
                        .collect(),
                }
            })
            .collect();
        let own = TaskQueue::new(id.to_string(), 0);
        let roots = dag.roots();
        self.dags.insert(
            id,
            DagState {
                id,
                client,
                dag,
                queue: queue_ref,
                own,
                dag_priority,
                submit_seq: seq,
                vertex_priority,
                vertices,
                status: DagStatus::Running,
                completed_vertices: 0,
                succeeded_tasks: 0,
                running: Resource::ZERO,
                running_attempts: 0,
            },
        );
        for v in roots {
            let tasks = self.dags[&id].vertices[v as usize].tasks.len() as u32;
            for t in 0..tasks {
                self.make_pending(id, v, t);
            }
        }
        Ok(())
    }

    fn kill_dag(
        &mut self,
        id: DagId,
        reason: String,
        out: &mut TaskDecisions,
    ) -> Result<(), CoreError> {
        let Some(dag) = self.dags.get(&id) else {
            return Err(CoreError::Unknown {
                what: "DAG",
                id: id.to_string(),
            });
        };
        if dag.status.is_terminal() {
            // Already over (its last attempts are still being stopped).
            return Ok(());
        }
        self.finish_dag(id, DagStatus::Killed { reason }, out);
        Ok(())
    }

    fn add_worker(&mut self, worker: WorkerId, capacity: Resource) -> Result<(), CoreError> {
        if self.workers.contains_key(&worker) {
            return Err(CoreError::Duplicate {
                what: "worker",
                id: worker.to_string(),
            });
        }
        let limit = self.config.limits.max_workers;
        if self.workers.len() as u64 >= u64::from(limit) {
            return Err(CoreError::LimitReached {
                limit: "max_workers",
                value: u64::from(limit),
                detail: format!("worker {worker} is refused"),
            });
        }
        self.capacity = self.capacity.saturating_add(capacity);
        self.workers.insert(
            worker,
            WorkerState {
                capacity,
                used: Resource::ZERO,
                running: BTreeSet::new(),
                holds: BTreeMap::new(),
                draining: None,
                drained_reported: false,
            },
        );
        Ok(())
    }

    fn remove_worker(
        &mut self,
        worker: &WorkerId,
        out: &mut TaskDecisions,
    ) -> Result<(), CoreError> {
        let Some(state) = self.workers.remove(worker) else {
            return Err(unknown_worker(worker));
        };
        self.capacity = self.capacity.saturating_sub(state.capacity);
        for &attempt in &state.running {
            let Some(record) = self.attempts.remove(&attempt) else {
                continue;
            };
            self.release_attempt_usage(attempt, &record, false);
            self.retry_or_drop(
                attempt,
                RetryCause::Killed(format!("worker {worker} was lost")),
                out,
            );
        }
        for dag_id in state.holds.keys() {
            self.recover_lost_outputs(*dag_id, worker, out);
        }
        Ok(())
    }

    /// The outputs of `dag_id` that lived on the lost `worker`: see "Lost
    /// outputs" in the module docs.
    fn recover_lost_outputs(&mut self, dag_id: DagId, worker: &WorkerId, out: &mut TaskDecisions) {
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        if dag.status.is_terminal() {
            return;
        }
        let mut lost = Vec::new();
        for (v, vs) in dag.vertices.iter_mut().enumerate() {
            for (i, t) in vs.tasks.iter_mut().enumerate() {
                if t.output_on.as_ref() == Some(worker) {
                    t.output_on = None;
                    lost.push((v as u32, i as u32));
                }
            }
        }
        // The lost outputs still needed, and the earlier-lost outputs their
        // re-runs need, transitively.
        let mut stack: Vec<(u32, u32)> = lost
            .into_iter()
            .filter(|&(v, t)| output_needed(dag, v, t))
            .collect();
        let mut rerun: BTreeSet<(u32, u32)> = BTreeSet::new();
        while let Some((v, t)) = stack.pop() {
            if !rerun.insert((v, t)) {
                continue;
            }
            for (p, kind) in dag.dag.producers(v) {
                let ps = &dag.vertices[p as usize];
                let range = match kind {
                    EdgeKind::OneToOne => t..t + 1,
                    EdgeKind::AllToAll => 0..ps.tasks.len() as u32,
                };
                for pt in range {
                    let pts = &ps.tasks[pt as usize];
                    if pts.phase == Phase::Succeeded && pts.output_on.is_none() {
                        stack.push((p, pt));
                    }
                }
            }
        }
        for &(v, t) in &rerun {
            self.unsucceed(dag_id, v, t, out);
        }
        for (v, t) in rerun {
            let Some(dag) = self.dags.get(&dag_id) else {
                return;
            };
            if dag.vertices[v as usize].tasks[t as usize].phase == Phase::Waiting
                && task_ready(dag, v, t)
            {
                self.make_pending(dag_id, v, t);
            }
        }
    }

    /// Turns a succeeded task whose output is lost back into a waiting one,
    /// and takes readiness away from the consumers that counted on it.
    fn unsucceed(&mut self, dag_id: DagId, vertex: u32, task: u32, out: &mut TaskDecisions) {
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        let vs = &mut dag.vertices[vertex as usize];
        if vs.tasks[task as usize].phase != Phase::Succeeded {
            return;
        }
        let was_complete = vs.succeeded as usize == vs.tasks.len();
        vs.tasks[task as usize].phase = Phase::Waiting;
        vs.tasks[task as usize].output_on = None;
        vs.succeeded -= 1;
        dag.succeeded_tasks -= 1;
        if was_complete {
            dag.completed_vertices -= 1;
        }
        let consumers: Vec<(u32, EdgeKind)> = dag.dag.consumers(vertex).collect();
        let mut affected: Vec<(u32, u32)> = Vec::new();
        for (c, kind) in consumers {
            let cs = &mut dag.vertices[c as usize];
            match kind {
                EdgeKind::OneToOne => {
                    cs.tasks[task as usize].waiting_one_to_one += 1;
                    affected.push((c, task));
                }
                EdgeKind::AllToAll if was_complete => {
                    cs.waiting_all_to_all += 1;
                    affected.extend((0..cs.tasks.len() as u32).map(|i| (c, i)));
                }
                EdgeKind::AllToAll => {}
            }
        }
        for (c, ct) in affected {
            let Some(dag) = self.dags.get(&dag_id) else {
                return;
            };
            match dag.vertices[c as usize].tasks[ct as usize].phase {
                Phase::Pending => {
                    let key = self.pending_key(dag, c);
                    let Some(dag) = self.dags.get_mut(&dag_id) else {
                        return;
                    };
                    let removed = match dag.queue {
                        QueueRef::Shared(i) => self.shared[i].remove(&key, ct),
                        QueueRef::Own => dag.own.remove(&key, ct),
                    };
                    if removed {
                        dag.vertices[c as usize].tasks[ct as usize].phase = Phase::Waiting;
                    }
                }
                Phase::Running { attempt } => {
                    let id = AttemptId {
                        task: TaskId {
                            dag: dag_id,
                            vertex: c,
                            task: ct,
                        },
                        attempt,
                    };
                    if let Some(record) = self.attempts.get_mut(&id) {
                        if !record.input_lost {
                            record.input_lost = true;
                            out.kills.push(AttemptKill {
                                attempt: id,
                                worker: record.worker.clone(),
                            });
                        }
                    }
                }
                Phase::Waiting | Phase::Succeeded => {}
            }
        }
    }

    fn drain_worker(
        &mut self,
        worker: &WorkerId,
        out: &mut TaskDecisions,
    ) -> Result<(), CoreError> {
        let active: BTreeSet<DagId> = self
            .dags
            .values()
            .filter(|d| !d.status.is_terminal())
            .map(|d| d.id)
            .collect();
        let Some(state) = self.workers.get_mut(worker) else {
            return Err(unknown_worker(worker));
        };
        if state.draining.is_none() {
            state.draining = Some(active);
        }
        self.check_drained(worker, out);
        Ok(())
    }

    fn attempt_finished(
        &mut self,
        attempt: AttemptId,
        outcome: AttemptOutcome,
        out: &mut TaskDecisions,
    ) -> Result<(), CoreError> {
        let Some(record) = self.attempts.remove(&attempt) else {
            return Err(CoreError::Unknown {
                what: "attempt",
                id: attempt.to_string(),
            });
        };
        self.release_attempt_usage(attempt, &record, true);
        match outcome {
            AttemptOutcome::Succeeded => self.attempt_succeeded(attempt, &record.worker, out),
            // Most likely it could not fetch the input that was lost: not
            // the task's fault.
            AttemptOutcome::Failed { reason } if record.input_lost => self.retry_or_drop(
                attempt,
                RetryCause::Killed(format!("its input was lost ({reason})")),
                out,
            ),
            AttemptOutcome::Failed { reason } => {
                self.retry_or_drop(attempt, RetryCause::Failed(reason), out)
            }
            AttemptOutcome::Killed { reason } => {
                self.retry_or_drop(attempt, RetryCause::Killed(reason), out)
            }
        }
        self.check_drained(&record.worker, out);
        Ok(())
    }

    // ----- bookkeeping -----

    /// Takes an ended attempt's resources off its worker, queue and DAG.
    fn release_attempt_usage(
        &mut self,
        attempt: AttemptId,
        record: &AttemptRecord,
        worker_alive: bool,
    ) {
        if worker_alive {
            if let Some(w) = self.workers.get_mut(&record.worker) {
                w.used = w.used.saturating_sub(record.resource);
                w.running.remove(&attempt);
            }
        }
        let dag_id = attempt.task.dag;
        if let Some(dag) = self.dags.get_mut(&dag_id) {
            dag.running = dag.running.saturating_sub(record.resource);
            dag.running_attempts -= 1;
            let q = match dag.queue {
                QueueRef::Shared(i) => &mut self.shared[i],
                QueueRef::Own => &mut dag.own,
            };
            q.running = q.running.saturating_sub(record.resource);
        }
    }

    fn attempt_succeeded(
        &mut self,
        attempt: AttemptId,
        worker: &WorkerId,
        out: &mut TaskDecisions,
    ) {
        let TaskId {
            dag: dag_id,
            vertex,
            task,
        } = attempt.task;
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        if dag.status.is_terminal() {
            self.forget_if_done(dag_id);
            return;
        }
        {
            let t = &mut dag.vertices[vertex as usize].tasks[task as usize];
            t.phase = Phase::Succeeded;
            t.output_on = Some(worker.clone());
        }
        dag.succeeded_tasks += 1;
        let vs = &mut dag.vertices[vertex as usize];
        vs.succeeded += 1;
        let vertex_done = vs.succeeded as usize == vs.tasks.len();
        if let Some(w) = self.workers.get_mut(worker) {
            *w.holds.entry(dag_id).or_insert(0) += 1;
        }
        // Wake consumers.
        let consumers: Vec<(u32, EdgeKind)> = dag.dag.consumers(vertex).collect();
        let mut ready: Vec<(u32, u32)> = Vec::new();
        for (c, kind) in consumers {
            let cs = &mut dag.vertices[c as usize];
            match kind {
                EdgeKind::OneToOne => {
                    let ct = &mut cs.tasks[task as usize];
                    ct.waiting_one_to_one -= 1;
                    if ct.waiting_one_to_one == 0
                        && cs.waiting_all_to_all == 0
                        && ct.phase == Phase::Waiting
                    {
                        ready.push((c, task));
                    }
                }
                EdgeKind::AllToAll if vertex_done => {
                    cs.waiting_all_to_all -= 1;
                    if cs.waiting_all_to_all == 0 {
                        for (i, ct) in cs.tasks.iter().enumerate() {
                            if ct.waiting_one_to_one == 0 && ct.phase == Phase::Waiting {
                                ready.push((c, i as u32));
                            }
                        }
                    }
                }
                EdgeKind::AllToAll => {}
            }
        }
        if vertex_done {
            dag.completed_vertices += 1;
        }
        let dag_done = dag.completed_vertices as usize == dag.vertices.len();
        for (c, t) in ready {
            self.make_pending(dag_id, c, t);
        }
        if dag_done {
            self.finish_dag(dag_id, DagStatus::Succeeded, out);
        }
    }

    fn retry_or_drop(&mut self, attempt: AttemptId, cause: RetryCause, out: &mut TaskDecisions) {
        let TaskId {
            dag: dag_id,
            vertex,
            task,
        } = attempt.task;
        let max_failures = self.config.max_task_attempts;
        let max_kills = self.config.limits.max_killed_attempts_per_task;
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        if dag.status.is_terminal() {
            self.forget_if_done(dag_id);
            return;
        }
        let vertex_name = dag.dag.vertices()[vertex as usize].name.clone();
        let t = &mut dag.vertices[vertex as usize].tasks[task as usize];
        let failure = match cause {
            RetryCause::Failed(reason) => {
                t.failures += 1;
                (t.failures >= max_failures).then(|| {
                    format!(
                        "task {} of vertex '{vertex_name}' failed {} attempts \
                         ({} = {max_failures}); last error: {reason}",
                        attempt.task,
                        t.failures,
                        crate::config::keys::TASK_MAX_FAILED_ATTEMPTS
                    )
                })
            }
            RetryCause::Killed(reason) => {
                t.kills += 1;
                (t.kills > max_kills).then(|| {
                    format!(
                        "task {} of vertex '{vertex_name}' was killed {} times, over the \
                         limit of {max_kills}; last cause: {reason}",
                        attempt.task, t.kills
                    )
                })
            }
        };
        match failure {
            Some(reason) => self.finish_dag(dag_id, DagStatus::Failed { reason }, out),
            None => {
                t.phase = Phase::Waiting;
                // Its input may have been lost meanwhile: then it waits.
                if task_ready(dag, vertex, task) {
                    self.make_pending(dag_id, vertex, task);
                }
            }
        }
    }

    fn pending_key(&self, dag: &DagState, vertex: u32) -> PendingKey {
        let jumps = self.config.task_queue_scheme == TaskQueueScheme::Indexed
            && !dag.dag.vertices()[vertex as usize].is_root();
        PendingKey {
            class: if jumps { 0 } else { 1 },
            dag_priority: dag.dag_priority,
            vertex_priority: dag.vertex_priority[vertex as usize],
            dag: dag.id,
            vertex,
        }
    }

    /// Puts a ready (waiting) task into its queue.
    fn make_pending(&mut self, dag_id: DagId, vertex: u32, task: u32) {
        let Some(dag) = self.dags.get(&dag_id) else {
            return;
        };
        let key = self.pending_key(dag, vertex);
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        dag.vertices[vertex as usize].tasks[task as usize].phase = Phase::Pending;
        match dag.queue {
            QueueRef::Shared(i) => self.shared[i].insert(key, task),
            QueueRef::Own => dag.own.insert(key, task),
        }
    }

    /// Moves a DAG to a final state: drops its pending tasks, asks for its
    /// running attempts to be killed, releases the outputs workers hold
    /// for it, and forgets it once nothing of it runs.
    fn finish_dag(&mut self, dag_id: DagId, status: DagStatus, out: &mut TaskDecisions) {
        let Some(dag) = self.dags.get_mut(&dag_id) else {
            return;
        };
        let event = match &status {
            DagStatus::Running => return,
            DagStatus::Succeeded => DagEvent::Succeeded { dag: dag_id },
            DagStatus::Failed { reason } => DagEvent::Failed {
                dag: dag_id,
                reason: reason.clone(),
            },
            DagStatus::Killed { reason } => DagEvent::Killed {
                dag: dag_id,
                reason: reason.clone(),
            },
        };
        dag.status = status;
        // Drop pending tasks.
        let q = match dag.queue {
            QueueRef::Shared(i) => &mut self.shared[i],
            QueueRef::Own => &mut dag.own,
        };
        let keys: Vec<PendingKey> = q
            .pending
            .range(..)
            .filter(|(k, _)| k.dag == dag_id)
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            if let Some(set) = q.pending.remove(&k) {
                q.pending_tasks -= set.len() as u64;
            }
        }
        // Kill running attempts (they stay accounted until they end).
        let running: Vec<(AttemptId, WorkerId)> = self
            .attempts
            .range(
                AttemptId {
                    task: TaskId {
                        dag: dag_id,
                        vertex: 0,
                        task: 0,
                    },
                    attempt: 0,
                }..,
            )
            .take_while(|(a, _)| a.task.dag == dag_id)
            .map(|(a, r)| (*a, r.worker.clone()))
            .collect();
        for (attempt, worker) in running {
            out.kills.push(AttemptKill { attempt, worker });
        }
        out.dag_events.push(event);
        // Outputs of a finished DAG are no longer needed.
        let mut touched = Vec::new();
        for (id, w) in self.workers.iter_mut() {
            if w.holds.remove(&dag_id).is_some() || w.draining.is_some() {
                touched.push(id.clone());
            }
        }
        self.forget_if_done(dag_id);
        for w in touched {
            self.check_drained(&w, out);
        }
    }

    /// Drops a terminal DAG once none of its attempts runs.
    fn forget_if_done(&mut self, dag_id: DagId) {
        if let Some(dag) = self.dags.get(&dag_id) {
            if dag.status.is_terminal() && dag.running_attempts == 0 {
                self.dags.remove(&dag_id);
            }
        }
    }

    fn dag_active(&self, id: &DagId) -> bool {
        self.dags.get(id).is_some_and(|d| !d.status.is_terminal())
    }

    fn check_drained(&mut self, worker: &WorkerId, out: &mut TaskDecisions) {
        let done = match self.workers.get(worker) {
            Some(w) if !w.drained_reported => match &w.draining {
                Some(waiting) => {
                    w.running.is_empty() && !waiting.iter().any(|d| self.dag_active(d))
                }
                None => false,
            },
            _ => false,
        };
        if done {
            if let Some(w) = self.workers.get_mut(worker) {
                w.drained_reported = true;
            }
            out.drained_workers.push(worker.clone());
        }
    }

    // ----- assignment -----

    fn offer(&mut self, worker: &WorkerId, out: &mut TaskDecisions) {
        let limit = self.config.limits.max_assignments_per_offer;
        for _ in 0..limit {
            let Some(w) = self.workers.get(worker) else {
                return;
            };
            if w.drained_reported {
                return;
            }
            let free = w.free();
            let Some((queue, key, task)) = self.pick(free, w.draining.as_ref()) else {
                return;
            };
            self.assign(queue, key, task, worker, out);
        }
    }

    /// The best pending task that fits `free` and belongs to an allowed
    /// DAG, and the queue it is in.
    fn pick(
        &self,
        free: Resource,
        allowed: Option<&BTreeSet<DagId>>,
    ) -> Option<(QueueRef, PendingKey, u32)> {
        match self.config.queue_scheme {
            DagQueueScheme::Common => self
                .find_in(&self.shared[0], free, allowed)
                .map(|(k, t)| (QueueRef::Shared(0), k, t)),
            DagQueueScheme::Capacity => {
                let total = self.capacity.memory_mb;
                let below = |q: &TaskQueue| {
                    u128::from(q.running.memory_mb) * 100
                        < u128::from(q.min_percent) * u128::from(total)
                };
                // Pass 1: guarantees, in priority order.
                for (i, q) in self.shared.iter().enumerate() {
                    if below(q) {
                        if let Some((k, t)) = self.find_in(q, free, allowed) {
                            return Some((QueueRef::Shared(i), k, t));
                        }
                    }
                }
                // Pass 2: what is left, higher priority first.
                for (i, q) in self.shared.iter().enumerate() {
                    if let Some((k, t)) = self.find_in(q, free, allowed) {
                        return Some((QueueRef::Shared(i), k, t));
                    }
                }
                None
            }
            DagQueueScheme::Individual => {
                // Active DAGs are bounded by mr3.am.max.num.concurrent.dags,
                // so ordering them here is cheap.
                let mut order: Vec<(u64, u64, DagId)> = self
                    .dags
                    .values()
                    .filter(|d| d.own.pending_tasks > 0)
                    .map(|d| (d.running.memory_mb, d.submit_seq, d.id))
                    .collect();
                order.sort_unstable();
                order.into_iter().find_map(|(_, _, id)| {
                    self.find_in(&self.dags[&id].own, free, allowed)
                        .map(|(k, t)| (QueueRef::Own, k, t))
                })
            }
        }
    }

    fn find_in(
        &self,
        q: &TaskQueue,
        free: Resource,
        allowed: Option<&BTreeSet<DagId>>,
    ) -> Option<(PendingKey, u32)> {
        q.pending.iter().find_map(|(key, tasks)| {
            if allowed.is_some_and(|a| !a.contains(&key.dag)) {
                return None;
            }
            let need = self.dags.get(&key.dag)?.dag.vertices()[key.vertex as usize].resource;
            if !need.fits_in(&free) {
                return None;
            }
            tasks.first().map(|&t| (*key, t))
        })
    }

    fn assign(
        &mut self,
        queue: QueueRef,
        key: PendingKey,
        task: u32,
        worker: &WorkerId,
        out: &mut TaskDecisions,
    ) {
        let Some(dag) = self.dags.get_mut(&key.dag) else {
            return;
        };
        let q = match queue {
            QueueRef::Shared(i) => &mut self.shared[i],
            QueueRef::Own => &mut dag.own,
        };
        if !q.remove(&key, task) {
            return;
        }
        let vertex = &dag.dag.vertices()[key.vertex as usize];
        let resource = vertex.resource;
        q.running = q.running.saturating_add(resource);
        let t = &mut dag.vertices[key.vertex as usize].tasks[task as usize];
        t.attempts += 1;
        t.phase = Phase::Running {
            attempt: t.attempts,
        };
        let attempt = AttemptId {
            task: TaskId {
                dag: key.dag,
                vertex: key.vertex,
                task,
            },
            attempt: t.attempts,
        };
        dag.running = dag.running.saturating_add(resource);
        dag.running_attempts += 1;
        let vertex_name = vertex.name.clone();
        let command = dag
            .dag
            .render_command(key.dag, key.vertex, task, attempt.attempt);
        if let Some(w) = self.workers.get_mut(worker) {
            w.used = w.used.saturating_add(resource);
            w.running.insert(attempt);
        }
        self.attempts.insert(
            attempt,
            AttemptRecord {
                worker: worker.clone(),
                resource,
                input_lost: false,
            },
        );
        out.assignments.push(Assignment {
            attempt,
            worker: worker.clone(),
            resource,
            vertex_name,
            command,
        });
    }

    // ----- queries -----

    /// Total resources of all workers.
    pub fn capacity(&self) -> Resource {
        self.capacity
    }

    /// Resources used by running attempts.
    pub fn used(&self) -> Resource {
        self.workers
            .values()
            .fold(Resource::ZERO, |acc, w| acc.saturating_add(w.used))
    }

    /// Ready tasks not yet running, and what they would need together.
    pub fn pending_demand(&self) -> (u64, Resource) {
        let mut count = 0;
        let mut need = Resource::ZERO;
        let queues = self.shared.iter().chain(self.dags.values().map(|d| &d.own));
        for q in queues {
            for (key, tasks) in &q.pending {
                if let Some(d) = self.dags.get(&key.dag) {
                    let r = d.dag.vertices()[key.vertex as usize].resource;
                    let n = tasks.len() as u64;
                    count += n;
                    need = need.saturating_add(Resource::new(
                        r.memory_mb.saturating_mul(n),
                        r.vcores
                            .saturating_mul(u32::try_from(n).unwrap_or(u32::MAX)),
                    ));
                }
            }
        }
        (count, need)
    }

    /// DAGs that are running (not yet in a final state), in id order.
    pub fn active_dags(&self) -> Vec<DagId> {
        self.dags
            .values()
            .filter(|d| !d.status.is_terminal())
            .map(|d| d.id)
            .collect()
    }

    pub fn dag_report(&self, id: DagId) -> Option<DagReport> {
        let d = self.dags.get(&id)?;
        let pending = d
            .vertices
            .iter()
            .flat_map(|v| v.tasks.iter())
            .filter(|t| t.phase == Phase::Pending)
            .count() as u64;
        Some(DagReport {
            id,
            name: d.dag.name().to_string(),
            client: d.client.clone(),
            queue: match d.queue {
                QueueRef::Shared(i) => self.shared[i].name.clone(),
                QueueRef::Own => d.own.name.clone(),
            },
            dag_priority: d.dag_priority,
            status: d.status.clone(),
            total_tasks: d.dag.total_tasks(),
            succeeded_tasks: d.succeeded_tasks,
            pending_tasks: pending,
            running_attempts: d.running_attempts,
            running: d.running,
        })
    }

    pub fn worker_report(&self, worker: &WorkerId) -> Option<WorkerReport> {
        let w = self.workers.get(worker)?;
        Some(WorkerReport {
            worker: worker.clone(),
            capacity: w.capacity,
            used: w.used,
            running_attempts: w.running.len() as u64,
            holds_output_of: w.holds.keys().copied().collect(),
            draining: w.draining.is_some(),
        })
    }

    pub fn workers(&self) -> Vec<WorkerId> {
        self.workers.keys().cloned().collect()
    }

    /// Workers with nothing left to serve: not draining, no attempt
    /// running, no output of an active DAG held, and no ready task that
    /// would fit them. Under FIFO container scheduling these are the
    /// workers that may stop and move to another group.
    pub fn idle_workers(&self) -> Vec<WorkerId> {
        self.workers
            .iter()
            .filter(|(_, w)| {
                w.draining.is_none()
                    && w.running.is_empty()
                    && w.holds.is_empty()
                    && self.pick(w.free(), None).is_none()
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Queues in priority order (capacity), the one common queue, or one
    /// per active DAG in id order (individual).
    pub fn queue_reports(&self) -> Vec<QueueReport> {
        let total = self.capacity.memory_mb;
        let report = |q: &TaskQueue| QueueReport {
            name: q.name.clone(),
            pending_tasks: q.pending_tasks,
            running: q.running,
            usage_percent: q
                .running
                .memory_mb
                .saturating_mul(100)
                .checked_div(total)
                .unwrap_or(0),
        };
        match self.config.queue_scheme {
            DagQueueScheme::Individual => self
                .dags
                .values()
                .filter(|d| !d.status.is_terminal())
                .map(|d| report(&d.own))
                .collect(),
            _ => self.shared.iter().map(report).collect(),
        }
    }

    /// The status line, as MR3 logs it for capacity scheduling:
    /// `DAGScheduler <group> <memory>MB: <queue> = <pending>/<usage>%, ...`
    /// where pending counts ready tasks not yet running and usage is the
    /// queue's share of the group's memory in use by its running attempts.
    pub fn status_line(&self) -> String {
        let mut line = format!(
            "DAGScheduler {} {}MB:",
            self.config.group_name, self.capacity.memory_mb
        );
        let queues = self.queue_reports();
        if queues.is_empty() {
            line.push_str(" no active DAGs");
        }
        for (i, q) in queues.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            let _ = write!(
                line,
                "{sep}{} = {}/{}%",
                q.name, q.pending_tasks, q.usage_percent
            );
        }
        line
    }

    // ----- invariants -----

    /// Checks every internal consistency rule; an error is a bug here.
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        let fail = |msg: String| Err(InvariantViolation(msg));

        // Workers: usage is the sum of their attempts, within capacity.
        let mut capacity = Resource::ZERO;
        for (id, w) in &self.workers {
            capacity = capacity.saturating_add(w.capacity);
            let mut used = Resource::ZERO;
            for a in &w.running {
                match self.attempts.get(a) {
                    Some(r) if &r.worker == id => used = used.saturating_add(r.resource),
                    _ => return fail(format!("worker {id} lists attempt {a} it does not run")),
                }
            }
            if used != w.used {
                return fail(format!(
                    "worker {id} uses {} but its attempts sum to {used}",
                    w.used
                ));
            }
            if !w.used.fits_in(&w.capacity) {
                return fail(format!(
                    "worker {id} uses {} over its capacity {}",
                    w.used, w.capacity
                ));
            }
            for (d, n) in &w.holds {
                if !self.dag_active(d) || *n == 0 {
                    return fail(format!("worker {id} holds output of finished DAG {d}"));
                }
            }
            if w.drained_reported {
                let waiting = w.draining.as_ref();
                if !w.running.is_empty()
                    || waiting.is_none_or(|set| set.iter().any(|d| self.dag_active(d)))
                {
                    return fail(format!("worker {id} reported drained while still busy"));
                }
            }
        }
        if capacity != self.capacity {
            return fail(format!(
                "group capacity {} is not the workers' sum {capacity}",
                self.capacity
            ));
        }

        // Attempts: each on a live worker that lists it, owned by a known DAG.
        let mut per_dag: BTreeMap<DagId, (u64, Resource)> = BTreeMap::new();
        let mut per_shared = vec![Resource::ZERO; self.shared.len()];
        for (a, r) in &self.attempts {
            match self.workers.get(&r.worker) {
                Some(w) if w.running.contains(a) => {}
                _ => {
                    return fail(format!(
                        "attempt {a} is on worker {} that does not list it",
                        r.worker
                    ))
                }
            }
            let Some(dag) = self.dags.get(&a.task.dag) else {
                return fail(format!("attempt {a} belongs to an unknown DAG"));
            };
            if !dag.status.is_terminal() {
                let t = &dag.vertices[a.task.vertex as usize].tasks[a.task.task as usize];
                if t.phase != (Phase::Running { attempt: a.attempt }) {
                    return fail(format!("attempt {a} runs but its task is {:?}", t.phase));
                }
            }
            let e = per_dag.entry(a.task.dag).or_insert((0, Resource::ZERO));
            e.0 += 1;
            e.1 = e.1.saturating_add(r.resource);
            if let QueueRef::Shared(i) = dag.queue {
                per_shared[i] = per_shared[i].saturating_add(r.resource);
            }
        }
        for (i, q) in self.shared.iter().enumerate() {
            if q.running != per_shared[i] {
                return fail(format!(
                    "queue {} runs {} but its attempts sum to {}",
                    q.name, q.running, per_shared[i]
                ));
            }
        }

        // Queues: counts match, every entry is a pending task of a running DAG.
        let mut pending_in_queues: BTreeMap<DagId, u64> = BTreeMap::new();
        let queues = self
            .shared
            .iter()
            .map(|q| (q, None))
            .chain(self.dags.values().map(|d| (&d.own, Some(d.id))));
        for (q, owner) in queues {
            let mut count = 0u64;
            for (key, tasks) in &q.pending {
                if tasks.is_empty() {
                    return fail(format!("queue {} keeps an empty entry", q.name));
                }
                count += tasks.len() as u64;
                let Some(dag) = self.dags.get(&key.dag) else {
                    return fail(format!(
                        "queue {} holds tasks of unknown DAG {}",
                        q.name, key.dag
                    ));
                };
                if owner.is_some_and(|o| o != key.dag) {
                    return fail(format!("queue {} holds tasks of DAG {}", q.name, key.dag));
                }
                if dag.status.is_terminal() {
                    return fail(format!(
                        "queue {} holds tasks of finished DAG {}",
                        q.name, key.dag
                    ));
                }
                if self.pending_key(dag, key.vertex) != *key {
                    return fail(format!("queue {} has a stale key {key:?}", q.name));
                }
                for &t in tasks {
                    let phase = dag.vertices[key.vertex as usize].tasks[t as usize].phase;
                    if phase != Phase::Pending {
                        return fail(format!("queued task {t} of {} is {phase:?}", key.dag));
                    }
                }
                *pending_in_queues.entry(key.dag).or_insert(0) += tasks.len() as u64;
            }
            if count != q.pending_tasks {
                return fail(format!(
                    "queue {} counts {} pending tasks but holds {count}",
                    q.name, q.pending_tasks
                ));
            }
        }

        // DAGs: per-task state agrees with counters and with readiness.
        for (id, d) in &self.dags {
            let (attempts, running) = per_dag.get(id).copied().unwrap_or((0, Resource::ZERO));
            if attempts != d.running_attempts || running != d.running {
                return fail(format!(
                    "DAG {id} counts {} attempts using {} but {attempts} run using {running}",
                    d.running_attempts, d.running
                ));
            }
            if d.status.is_terminal() {
                if d.running_attempts == 0 {
                    return fail(format!("finished DAG {id} is still kept"));
                }
                continue;
            }
            if d.queue == QueueRef::Own && self.config.queue_scheme != DagQueueScheme::Individual {
                return fail(format!(
                    "DAG {id} has its own queue outside the individual scheme"
                ));
            }
            let mut pending = 0u64;
            let mut succeeded_total = 0u64;
            let mut completed = 0u32;
            for (v, vs) in d.vertices.iter().enumerate() {
                let v = v as u32;
                let mut a2a_waiting = 0;
                for (p, kind) in d.dag.producers(v) {
                    let ps = &d.vertices[p as usize];
                    if kind == EdgeKind::AllToAll && ps.succeeded as usize != ps.tasks.len() {
                        a2a_waiting += 1;
                    }
                }
                if a2a_waiting != vs.waiting_all_to_all {
                    return fail(format!(
                        "DAG {id} vertex {v} waits for {} all-to-all producers, not {a2a_waiting}",
                        vs.waiting_all_to_all
                    ));
                }
                let mut succeeded = 0u32;
                for (i, t) in vs.tasks.iter().enumerate() {
                    let mut o2o_waiting = 0;
                    for (p, kind) in d.dag.producers(v) {
                        if kind == EdgeKind::OneToOne
                            && d.vertices[p as usize].tasks[i].phase != Phase::Succeeded
                        {
                            o2o_waiting += 1;
                        }
                    }
                    if o2o_waiting != t.waiting_one_to_one {
                        return fail(format!(
                            "task {i} of DAG {id} vertex {v} miscounts its one-to-one inputs"
                        ));
                    }
                    let ready = o2o_waiting == 0 && a2a_waiting == 0;
                    match t.phase {
                        Phase::Waiting if ready => {
                            return fail(format!(
                                "task {i} of DAG {id} vertex {v} is ready but not queued"
                            ))
                        }
                        Phase::Waiting => {}
                        Phase::Pending if !ready => {
                            return fail(format!(
                                "task {i} of DAG {id} vertex {v} is queued before its input is available"
                            ))
                        }
                        Phase::Pending => pending += 1,
                        Phase::Running { attempt } => {
                            let a = AttemptId {
                                task: TaskId {
                                    dag: *id,
                                    vertex: v,
                                    task: i as u32,
                                },
                                attempt,
                            };
                            match self.attempts.get(&a) {
                                None => return fail(format!("task {i} of DAG {id} vertex {v} runs attempt {attempt} that does not exist")),
                                // Input lost under a running attempt: it must have been asked to stop.
                                Some(r) if !ready && !r.input_lost => return fail(format!(
                                    "task {i} of DAG {id} vertex {v} runs without its input and was not stopped"
                                )),
                                Some(_) => {}
                            }
                        }
                        // A task that already read its input keeps its success when that
                        // input is lost later.
                        Phase::Succeeded => succeeded += 1,
                    }
                    // Nothing waits for an output that is lost and not being made again.
                    if t.phase != Phase::Succeeded {
                        for (p, kind) in d.dag.producers(v) {
                            let ps = &d.vertices[p as usize];
                            let range = match kind {
                                EdgeKind::OneToOne => i..i + 1,
                                EdgeKind::AllToAll => 0..ps.tasks.len(),
                            };
                            if ps.tasks[range]
                                .iter()
                                .any(|pt| pt.phase == Phase::Succeeded && pt.output_on.is_none())
                            {
                                return fail(format!(
                                    "task {i} of DAG {id} vertex {v} needs a lost output of vertex {p} that is not made again"
                                ));
                            }
                        }
                    }
                    if t.failures >= self.config.max_task_attempts {
                        return fail(format!(
                            "task {i} of DAG {id} vertex {v} failed too often for a running DAG"
                        ));
                    }
                }
                if succeeded != vs.succeeded {
                    return fail(format!(
                        "DAG {id} vertex {v} counts {} successes, not {succeeded}",
                        vs.succeeded
                    ));
                }
                if succeeded as usize == vs.tasks.len() {
                    completed += 1;
                }
                succeeded_total += u64::from(succeeded);
            }
            if completed != d.completed_vertices || completed as usize == d.vertices.len() {
                return fail(format!(
                    "DAG {id} completed-vertex count is wrong or it should have succeeded"
                ));
            }
            if succeeded_total != d.succeeded_tasks {
                return fail(format!("DAG {id} succeeded-task count is wrong"));
            }
            if pending != pending_in_queues.get(id).copied().unwrap_or(0) {
                return fail(format!(
                    "DAG {id} has {pending} pending tasks but its queue holds a different number"
                ));
            }
            // Outputs held by workers match the successful attempts.
            let mut made_on: BTreeMap<&WorkerId, u64> = BTreeMap::new();
            for t in d.vertices.iter().flat_map(|v| v.tasks.iter()) {
                if let (Phase::Succeeded, Some(w)) = (t.phase, t.output_on.as_ref()) {
                    *made_on.entry(w).or_insert(0) += 1;
                }
            }
            for (wid, w) in &self.workers {
                let held = w.holds.get(id).copied().unwrap_or(0);
                let made = made_on.get(wid).copied().unwrap_or(0);
                if held != made {
                    return fail(format!(
                        "worker {wid} holds {held} outputs of DAG {id}, not {made}"
                    ));
                }
            }
        }
        Ok(())
    }
}

enum RetryCause {
    Failed(String),
    Killed(String),
}

/// Whether the whole input of a task is available.
fn task_ready(dag: &DagState, vertex: u32, task: u32) -> bool {
    let vs = &dag.vertices[vertex as usize];
    vs.waiting_all_to_all == 0 && vs.tasks[task as usize].waiting_one_to_one == 0
}

/// Whether some task that has not succeeded reads this task's output.
fn output_needed(dag: &DagState, vertex: u32, task: u32) -> bool {
    dag.dag.consumers(vertex).any(|(c, kind)| {
        let cs = &dag.vertices[c as usize];
        match kind {
            EdgeKind::OneToOne => cs.tasks[task as usize].phase != Phase::Succeeded,
            EdgeKind::AllToAll => cs.tasks.iter().any(|t| t.phase != Phase::Succeeded),
        }
    })
}

fn unknown_worker(worker: &WorkerId) -> CoreError {
    CoreError::Unknown {
        what: "worker",
        id: worker.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CapacitySpecs, TaskSchedulerLimits};
    use crate::dag::{VertexPriorityScheme, VertexSpec};
    use expect_test::expect;

    const GB: u64 = 1024;

    fn slot() -> Resource {
        Resource::new(GB, 1)
    }

    fn scheduler(config: TaskSchedulerConfig) -> TaskScheduler {
        TaskScheduler::new(config).expect("valid config")
    }

    fn with_workers(s: &mut TaskScheduler, n: u32, slots_each: u64) {
        for i in 0..n {
            s.handle(
                0,
                Input::WorkerAdded {
                    worker: WorkerId::new(format!("w{i:03}")),
                    capacity: Resource::new(slots_each * GB, slots_each as u32),
                },
            )
            .expect("add worker");
        }
    }

    fn one_vertex(name: &str, tasks: u32) -> DagSpec {
        DagSpec::new(name)
            .vertex(VertexSpec::new("v", tasks, slot()).with_command("run {vertex} {task}"))
    }

    fn submit(s: &mut TaskScheduler, id: u64, queue: Option<&str>, spec: DagSpec) {
        s.handle(
            s.last_ms,
            Input::SubmitDag {
                id: DagId(id),
                client: "c".into(),
                queue: queue.map(str::to_string),
                spec,
            },
        )
        .expect("submit");
        s.check_invariants().expect("invariants");
    }

    fn step(s: &mut TaskScheduler, input: Input) -> TaskDecisions {
        let d = s.handle(s.last_ms, input).expect("input accepted");
        s.check_invariants().expect("invariants");
        d
    }

    fn finish(s: &mut TaskScheduler, attempt: AttemptId, outcome: AttemptOutcome) -> TaskDecisions {
        step(s, Input::AttemptFinished { attempt, outcome })
    }

    fn capacity(specs: &str) -> TaskSchedulerConfig {
        TaskSchedulerConfig {
            queue_scheme: DagQueueScheme::Capacity,
            capacity_specs: CapacitySpecs::parse(specs).expect("valid specs"),
            ..TaskSchedulerConfig::default()
        }
    }

    /// Percent of the group each queue uses, in queue order.
    fn usage(s: &TaskScheduler) -> Vec<(String, u64)> {
        s.queue_reports()
            .into_iter()
            .map(|q| (q.name, q.usage_percent))
            .collect()
    }

    fn pairs(v: &[(&str, u64)]) -> Vec<(String, u64)> {
        v.iter().map(|(n, p)| (n.to_string(), *p)).collect()
    }

    /// 10 workers x 10 slots of 1 GB: every task is exactly 1% of the group.
    fn hundred_slots(config: TaskSchedulerConfig, demand: &[(&str, u32)]) -> TaskScheduler {
        let mut s = scheduler(config);
        with_workers(&mut s, 10, 10);
        for (i, (queue, tasks)) in demand.iter().enumerate() {
            submit(&mut s, i as u64, Some(queue), one_vertex(queue, *tasks));
        }
        step(&mut s, Input::OfferAll);
        s
    }

    // ----- the seed's first worked example: high=80,medium=50,default=20,background=0 -----

    #[test]
    fn capacity_example_one_high_gets_its_eighty_percent() {
        // Every queue asks for more than the whole group.
        let s = hundred_slots(
            capacity("high=80,medium=50,default=20,background=0"),
            &[
                ("high", 200),
                ("medium", 200),
                ("default", 200),
                ("background", 200),
            ],
        );
        // high is guaranteed 80%; medium's 50% holds only if high uses no
        // more than 50%, so it gets the remaining 20%; default's 20% holds
        // only if high and medium use no more than 80%: nothing is left.
        assert_eq!(
            usage(&s),
            pairs(&[
                ("high", 80),
                ("medium", 20),
                ("default", 0),
                ("background", 0)
            ])
        );
        expect![[r#"DAGScheduler All-In-One 102400MB: high = 120/80%, medium = 180/20%, default = 200/0%, background = 200/0%"#]]
            .assert_eq(&s.status_line());
    }

    #[test]
    fn capacity_example_one_idle_share_of_high_goes_down() {
        // high claims only 30%: medium gets its 50% (high uses <= 50%),
        // default its 20% (high + medium use <= 80%), background nothing.
        let s = hundred_slots(
            capacity("high=80,medium=50,default=20,background=0"),
            &[
                ("high", 30),
                ("medium", 200),
                ("default", 200),
                ("background", 200),
            ],
        );
        assert_eq!(
            usage(&s),
            pairs(&[
                ("high", 30),
                ("medium", 50),
                ("default", 20),
                ("background", 0)
            ])
        );
    }

    #[test]
    fn capacity_example_one_spare_goes_to_the_highest_queue_that_asks() {
        // high takes 10%; medium 50% and default 20% are guaranteed; the
        // remaining 20% goes to medium, the highest queue still asking.
        let s = hundred_slots(
            capacity("high=80,medium=50,default=20,background=0"),
            &[
                ("high", 10),
                ("medium", 200),
                ("default", 200),
                ("background", 200),
            ],
        );
        assert_eq!(
            usage(&s),
            pairs(&[
                ("high", 10),
                ("medium", 70),
                ("default", 20),
                ("background", 0)
            ])
        );
    }

    #[test]
    fn capacity_example_one_high_over_fifty_lets_medium_take_the_rest_and_default_nothing() {
        // The seed's conditions read as a chain in priority order: a queue
        // below its share is served before every queue after it. high asks
        // for 60% (more than the 50% medium's condition allows), so medium
        // is still served first while below its 50% and takes all high
        // leaves: min(50, 100 - 60) = 40%. high + medium then use 100%,
        // more than the 80% default's 20% depends on, so default gets
        // nothing. (Capping medium at 80 - 60 = 20% to keep default's 20%
        // would rank a lower queue's conditional share above a higher
        // queue's; the seed lists queues in priority order.)
        let s = hundred_slots(
            capacity("high=80,medium=50,default=20,background=0"),
            &[
                ("high", 60),
                ("medium", 200),
                ("default", 200),
                ("background", 200),
            ],
        );
        assert_eq!(
            usage(&s),
            pairs(&[
                ("high", 60),
                ("medium", 40),
                ("default", 0),
                ("background", 0)
            ])
        );
        // ... and with high at 50%, medium gets exactly its 50%.
        let s = hundred_slots(
            capacity("high=80,medium=50,default=20,background=0"),
            &[
                ("high", 50),
                ("medium", 200),
                ("default", 200),
                ("background", 200),
            ],
        );
        assert_eq!(
            usage(&s),
            pairs(&[
                ("high", 50),
                ("medium", 50),
                ("default", 0),
                ("background", 0)
            ])
        );
    }

    #[test]
    fn capacity_background_runs_only_when_nobody_else_asks() {
        let s = hundred_slots(
            capacity("high=80,medium=50,default=20,background=0"),
            &[("default", 5), ("background", 200)],
        );
        assert_eq!(
            usage(&s),
            pairs(&[
                ("high", 0),
                ("medium", 0),
                ("default", 5),
                ("background", 95)
            ])
        );
    }

    // ----- the seed's second worked example: high=40,medium=20,default=10,background=0 -----

    #[test]
    fn capacity_example_two_remaining_thirty_percent_goes_to_higher_queues() {
        let s = hundred_slots(
            capacity("high=40,medium=20,default=10,background=0"),
            &[
                ("high", 200),
                ("medium", 200),
                ("default", 200),
                ("background", 200),
            ],
        );
        // 40 + 20 + 10 guaranteed; the remaining 30% goes to high first;
        // background gets nothing while the others ask.
        assert_eq!(
            usage(&s),
            pairs(&[
                ("high", 70),
                ("medium", 20),
                ("default", 10),
                ("background", 0)
            ])
        );
    }

    #[test]
    fn capacity_example_two_spare_passes_down_in_priority_order() {
        // high asks for only 45%: the remaining share goes to medium next.
        let s = hundred_slots(
            capacity("high=40,medium=20,default=10,background=0"),
            &[
                ("high", 45),
                ("medium", 200),
                ("default", 200),
                ("background", 200),
            ],
        );
        assert_eq!(
            usage(&s),
            pairs(&[
                ("high", 45),
                ("medium", 45),
                ("default", 10),
                ("background", 0)
            ])
        );
    }

    #[test]
    fn capacity_default_is_appended_and_unknown_queues_go_there() {
        let mut s = scheduler(capacity("foo=80,bar=20"));
        with_workers(&mut s, 1, 10);
        submit(&mut s, 1, Some("nonexistent"), one_vertex("a", 3));
        submit(&mut s, 2, None, one_vertex("b", 3));
        submit(&mut s, 3, Some("bar"), one_vertex("c", 3));
        assert_eq!(s.dag_report(DagId(1)).expect("known").queue, "default");
        assert_eq!(s.dag_report(DagId(2)).expect("known").queue, "default");
        assert_eq!(s.dag_report(DagId(3)).expect("known").queue, "bar");
        assert_eq!(
            s.status_line(),
            "DAGScheduler All-In-One 10240MB: foo = 0/0%, bar = 3/0%, default = 6/0%"
        );
    }

    #[test]
    fn capacity_never_preempts_lower_queues() {
        let mut s = scheduler(capacity("high=80,medium=50,default=20,background=0"));
        with_workers(&mut s, 10, 10);
        submit(&mut s, 1, Some("background"), one_vertex("bg", 300));
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 100);
        submit(&mut s, 2, Some("high"), one_vertex("hi", 300));
        let d = step(&mut s, Input::OfferAll);
        assert!(d.assignments.is_empty(), "nothing is preempted for high");
        assert!(d.kills.is_empty());
        // Ten background tasks end; the freed slots go to high.
        let bg: Vec<AttemptId> = s.attempts.keys().take(10).copied().collect();
        for a in bg {
            finish(&mut s, a, AttemptOutcome::Succeeded);
        }
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 10);
        assert!(d.assignments.iter().all(|a| a.attempt.task.dag == DagId(2)));
        assert_eq!(
            usage(&s),
            pairs(&[
                ("high", 10),
                ("medium", 0),
                ("default", 0),
                ("background", 90)
            ])
        );
    }

    // ----- readiness, priorities, queue schemes -----

    fn chain_dag() -> DagSpec {
        DagSpec::new("chain")
            .vertex(VertexSpec::new("map", 3, slot()))
            .vertex(VertexSpec::new("mid", 3, slot()))
            .vertex(VertexSpec::new("reduce", 2, slot()))
            .edge("map", "mid", EdgeKind::OneToOne)
            .edge("mid", "reduce", EdgeKind::AllToAll)
    }

    fn running_vertices(s: &TaskScheduler) -> Vec<(u64, u32, u32)> {
        s.attempts
            .keys()
            .map(|a| (a.task.dag.0, a.task.vertex, a.task.task))
            .collect()
    }

    #[test]
    fn one_to_one_tasks_wake_per_task_and_all_to_all_per_vertex() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 1, 100);
        submit(&mut s, 1, None, chain_dag());
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 3, "only the roots are ready");
        let a = |v, t| AttemptId {
            task: TaskId {
                dag: DagId(1),
                vertex: v,
                task: t,
            },
            attempt: 1,
        };
        finish(&mut s, a(0, 1), AttemptOutcome::Succeeded);
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(
            d.assignments.iter().map(|x| x.attempt).collect::<Vec<_>>(),
            vec![a(1, 1)],
            "mid task 1 wakes alone"
        );
        finish(&mut s, a(0, 0), AttemptOutcome::Succeeded);
        finish(&mut s, a(0, 2), AttemptOutcome::Succeeded);
        step(&mut s, Input::OfferAll);
        finish(&mut s, a(1, 0), AttemptOutcome::Succeeded);
        finish(&mut s, a(1, 1), AttemptOutcome::Succeeded);
        let d = step(&mut s, Input::OfferAll);
        assert!(
            d.assignments.is_empty(),
            "reduce waits for the whole of mid"
        );
        finish(&mut s, a(1, 2), AttemptOutcome::Succeeded);
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 2);
        assert_eq!(d.assignments[0].vertex_name, "reduce");
        finish(&mut s, a(2, 0), AttemptOutcome::Succeeded);
        let d = finish(&mut s, a(2, 1), AttemptOutcome::Succeeded);
        assert_eq!(d.dag_events, vec![DagEvent::Succeeded { dag: DagId(1) }]);
        assert!(
            s.dag_report(DagId(1)).is_none(),
            "finished DAGs are forgotten"
        );
        assert_eq!(s.used(), Resource::ZERO);
    }

    #[test]
    fn fifo_runs_older_dags_first_and_concurrent_interleaves_by_vertex_priority() {
        let two_level = |name: &str| {
            DagSpec::new(name)
                .vertex(VertexSpec::new("a", 2, slot()).with_priority(5))
                .vertex(VertexSpec::new("b", 2, slot()).with_priority(1))
        };
        for (scheme, expected) in [
            (
                DagPriorityScheme::Fifo,
                vec![(1, 0, 0), (1, 1, 0), (1, 1, 1)],
            ),
            (
                DagPriorityScheme::Concurrent,
                vec![(1, 1, 0), (1, 1, 1), (2, 1, 0)],
            ),
        ] {
            let mut s = scheduler(TaskSchedulerConfig {
                dag_priority_scheme: scheme,
                ..TaskSchedulerConfig::default()
            });
            with_workers(&mut s, 1, 3);
            submit(&mut s, 1, None, two_level("first"));
            submit(&mut s, 2, None, two_level("second"));
            step(&mut s, Input::OfferAll);
            assert_eq!(running_vertices(&s), expected, "{scheme}");
        }
    }

    #[test]
    fn consumer_of_a_younger_dag_jumps_over_roots_of_an_older_dag() {
        for (scheme, winner) in [
            (TaskQueueScheme::Indexed, 2u64),
            (TaskQueueScheme::Basic, 1),
        ] {
            let mut s = scheduler(TaskSchedulerConfig {
                task_queue_scheme: scheme,
                ..TaskSchedulerConfig::default()
            });
            // DAG 1 (older, fifo priority 0): five 2 GB roots.
            submit(
                &mut s,
                1,
                None,
                DagSpec::new("big").vertex(VertexSpec::new("scan", 5, Resource::new(2 * GB, 1))),
            );
            // DAG 2 (younger): a 1 GB root feeding a 1 GB consumer.
            submit(
                &mut s,
                2,
                None,
                DagSpec::new("small")
                    .vertex(VertexSpec::new("m", 1, slot()))
                    .vertex(VertexSpec::new("r", 1, slot()))
                    .edge("m", "r", EdgeKind::AllToAll),
            );
            // A 1 GB worker fits only DAG 2's root.
            step(
                &mut s,
                Input::WorkerAdded {
                    worker: WorkerId::new("small"),
                    capacity: slot(),
                },
            );
            let d = step(
                &mut s,
                Input::Offer {
                    worker: WorkerId::new("small"),
                },
            );
            assert_eq!(d.assignments.len(), 1);
            assert_eq!(d.assignments[0].attempt.task.dag, DagId(2));
            finish(&mut s, d.assignments[0].attempt, AttemptOutcome::Succeeded);
            // DAG 2's consumer now has its whole input; DAG 1 still has
            // five roots of higher (fifo) priority. A 2 GB worker fits both.
            step(
                &mut s,
                Input::WorkerAdded {
                    worker: WorkerId::new("large"),
                    capacity: Resource::new(2 * GB, 1),
                },
            );
            let d = step(
                &mut s,
                Input::Offer {
                    worker: WorkerId::new("large"),
                },
            );
            assert_eq!(d.assignments.len(), 1);
            assert_eq!(d.assignments[0].attempt.task.dag, DagId(winner), "{scheme}");
        }
    }

    #[test]
    fn individual_serves_the_dag_using_the_least_memory() {
        let mut s = scheduler(TaskSchedulerConfig {
            queue_scheme: DagQueueScheme::Individual,
            ..TaskSchedulerConfig::default()
        });
        with_workers(&mut s, 1, 4);
        // DAG 1 runs two 1 GB tasks before DAG 2 arrives.
        submit(&mut s, 1, None, one_vertex("old", 10));
        step(
            &mut s,
            Input::WorkerAdded {
                worker: WorkerId::new("tmp"),
                capacity: Resource::new(2 * GB, 2),
            },
        );
        step(
            &mut s,
            Input::Offer {
                worker: WorkerId::new("tmp"),
            },
        );
        submit(&mut s, 2, None, one_vertex("new", 10));
        // The 4-slot worker: DAG 2 (0 GB in use) gets slots until it
        // matches DAG 1 (2 GB); ties go to the older DAG.
        step(
            &mut s,
            Input::Offer {
                worker: WorkerId::new("w000"),
            },
        );
        let per_dag = |id| s.dag_report(DagId(id)).expect("known").running.memory_mb / GB;
        assert_eq!((per_dag(1), per_dag(2)), (3, 3));
        assert_eq!(
            s.status_line(),
            "DAGScheduler All-In-One 6144MB: dag_1 = 7/50%, dag_2 = 7/50%"
        );
    }

    #[test]
    fn failed_attempts_retry_until_the_limit_then_the_dag_fails() {
        let mut s = scheduler(TaskSchedulerConfig {
            max_task_attempts: 2,
            ..TaskSchedulerConfig::default()
        });
        with_workers(&mut s, 1, 4);
        submit(&mut s, 1, None, one_vertex("flaky", 2));
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 2);
        let first = d.assignments[0].attempt;
        let other = d.assignments[1].attempt;
        assert_eq!(d.assignments[0].command, "run v 0");
        finish(
            &mut s,
            first,
            AttemptOutcome::Failed {
                reason: "exit 1".into(),
            },
        );
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 1);
        let retry = d.assignments[0].attempt;
        assert_eq!((retry.task, retry.attempt), (first.task, 2));
        // Kills do not count as failures.
        finish(
            &mut s,
            other,
            AttemptOutcome::Killed {
                reason: "preempted".into(),
            },
        );
        step(&mut s, Input::OfferAll);
        let d = finish(
            &mut s,
            retry,
            AttemptOutcome::Failed {
                reason: "exit 3".into(),
            },
        );
        assert_eq!(
            d.dag_events,
            vec![DagEvent::Failed {
                dag: DagId(1),
                reason: "task task_1_00_000000 of vertex 'v' failed 2 attempts \
                         (mr3.am.task.max.failed.attempts = 2); last error: exit 3"
                    .into()
            }]
        );
        // The other task's second attempt is asked to stop, and keeps its
        // resources until it does.
        assert_eq!(d.kills.len(), 1);
        assert_eq!(d.kills[0].attempt.attempt, 2);
        assert_eq!(s.used(), slot());
        assert!(matches!(
            s.dag_report(DagId(1))
                .expect("kept while an attempt runs")
                .status,
            DagStatus::Failed { .. }
        ));
        let d = finish(
            &mut s,
            d.kills[0].attempt,
            AttemptOutcome::Killed {
                reason: "killed".into(),
            },
        );
        assert!(d.dag_events.is_empty());
        assert!(s.dag_report(DagId(1)).is_none());
        assert_eq!(s.used(), Resource::ZERO);
    }

    #[test]
    fn kill_dag_drops_pending_and_kills_running() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 1, 2);
        submit(&mut s, 1, None, one_vertex("a", 5));
        submit(&mut s, 2, None, one_vertex("b", 1));
        step(&mut s, Input::OfferAll);
        let d = step(
            &mut s,
            Input::KillDag {
                id: DagId(1),
                reason: "user asked".into(),
            },
        );
        assert_eq!(
            d.dag_events,
            vec![DagEvent::Killed {
                dag: DagId(1),
                reason: "user asked".into()
            }]
        );
        assert_eq!(d.kills.len(), 2);
        // Killing again is harmless while its attempts end.
        assert!(step(
            &mut s,
            Input::KillDag {
                id: DagId(1),
                reason: "again".into()
            }
        )
        .dag_events
        .is_empty());
        let d = step(&mut s, Input::OfferAll);
        assert!(
            d.assignments.is_empty(),
            "killed attempts still hold the worker"
        );
        for k in [d.kills.clone(), vec![]].concat() {
            finish(
                &mut s,
                k.attempt,
                AttemptOutcome::Killed { reason: "k".into() },
            );
        }
        let ids: Vec<AttemptId> = s.attempts.keys().copied().collect();
        for a in ids {
            finish(&mut s, a, AttemptOutcome::Succeeded);
        }
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 1);
        assert_eq!(d.assignments[0].attempt.task.dag, DagId(2));
        assert!(matches!(
            s.handle(
                0,
                Input::KillDag {
                    id: DagId(1),
                    reason: "gone".into()
                }
            ),
            Err(CoreError::Unknown { .. })
        ));
    }

    #[test]
    fn draining_worker_serves_only_dags_active_at_drain_time() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 1, 2);
        submit(&mut s, 1, None, chain_dag());
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 2);
        let d = step(
            &mut s,
            Input::DrainWorker {
                worker: WorkerId::new("w000"),
            },
        );
        assert!(d.drained_workers.is_empty());
        submit(&mut s, 2, None, one_vertex("later", 4));
        // Finish attempts one by one; the worker keeps serving DAG 1 only.
        let mut guard = 0;
        while s.dag_report(DagId(1)).is_some() {
            guard += 1;
            assert!(guard < 100);
            let a = *s.attempts.keys().next().expect("DAG 1 has work running");
            assert_eq!(a.task.dag, DagId(1));
            let d = finish(&mut s, a, AttemptOutcome::Succeeded);
            if s.dag_report(DagId(1)).is_none() {
                assert_eq!(d.drained_workers, vec![WorkerId::new("w000")]);
                break;
            }
            assert!(d.drained_workers.is_empty());
            step(&mut s, Input::OfferAll);
        }
        let d = step(&mut s, Input::OfferAll);
        assert!(d.assignments.is_empty(), "a drained worker takes nothing");
        step(
            &mut s,
            Input::WorkerRemoved {
                worker: WorkerId::new("w000"),
            },
        );
        assert_eq!(s.capacity(), Resource::ZERO);
        assert_eq!(s.pending_demand(), (4, Resource::new(4 * GB, 4)));
    }

    #[test]
    fn idle_worker_drains_at_once_when_no_dag_is_active() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 2, 2);
        let d = step(
            &mut s,
            Input::DrainWorker {
                worker: WorkerId::new("w001"),
            },
        );
        assert_eq!(d.drained_workers, vec![WorkerId::new("w001")]);
        assert_eq!(s.idle_workers(), vec![WorkerId::new("w000")]);
    }

    #[test]
    fn idle_workers_hold_no_output_and_see_no_fitting_work() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 2, 1);
        submit(&mut s, 1, None, chain_dag());
        assert!(s.idle_workers().is_empty(), "ready tasks fit both");
        let d = step(
            &mut s,
            Input::Offer {
                worker: WorkerId::new("w000"),
            },
        );
        finish(&mut s, d.assignments[0].attempt, AttemptOutcome::Succeeded);
        // w000 holds output of the active DAG, so it is not idle even
        // without a fitting task.
        let report = s.worker_report(&WorkerId::new("w000")).expect("known");
        assert_eq!(report.holds_output_of, vec![DagId(1)]);
        step(
            &mut s,
            Input::KillDag {
                id: DagId(1),
                reason: "done".into(),
            },
        );
        assert_eq!(
            s.idle_workers(),
            vec![WorkerId::new("w000"), WorkerId::new("w001")]
        );
    }

    #[test]
    fn a_worker_name_can_come_back_after_removal() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 1, 3);
        submit(&mut s, 1, None, chain_dag());
        let d = step(&mut s, Input::OfferAll);
        finish(&mut s, d.assignments[0].attempt, AttemptOutcome::Succeeded);
        assert_eq!(
            s.worker_report(&WorkerId::new("w000"))
                .expect("known")
                .holds_output_of,
            vec![DagId(1)]
        );
        step(
            &mut s,
            Input::WorkerRemoved {
                worker: WorkerId::new("w000"),
            },
        );
        step(
            &mut s,
            Input::WorkerAdded {
                worker: WorkerId::new("w000"),
                capacity: slot(),
            },
        );
        let report = s.worker_report(&WorkerId::new("w000")).expect("known");
        assert!(report.holds_output_of.is_empty());
        // The two lost attempts and the woken mid task are ready again.
        assert_eq!(s.dag_report(DagId(1)).expect("known").pending_tasks, 3);
    }

    #[test]
    fn lost_worker_attempts_are_retried_elsewhere() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 2, 1);
        submit(&mut s, 1, None, one_vertex("a", 2));
        step(&mut s, Input::OfferAll);
        step(
            &mut s,
            Input::WorkerRemoved {
                worker: WorkerId::new("w000"),
            },
        );
        let report = s.dag_report(DagId(1)).expect("known");
        assert_eq!((report.pending_tasks, report.running_attempts), (1, 1));
        step(
            &mut s,
            Input::WorkerAdded {
                worker: WorkerId::new("w002"),
                capacity: slot(),
            },
        );
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 1);
        assert_eq!(d.assignments[0].attempt.attempt, 2);
        assert_eq!(d.assignments[0].worker, WorkerId::new("w002"));
    }

    fn three_stage() -> DagSpec {
        DagSpec::new("three")
            .vertex(VertexSpec::new("a", 2, slot()))
            .vertex(VertexSpec::new("b", 1, slot()))
            .vertex(VertexSpec::new("c", 1, slot()))
            .edge("a", "b", EdgeKind::AllToAll)
            .edge("b", "c", EdgeKind::AllToAll)
    }

    /// Runs every assignment in `d` to success, returning where each ran.
    fn succeed_all(s: &mut TaskScheduler, d: &TaskDecisions) -> Vec<(u32, u32, WorkerId)> {
        let mut ran = Vec::new();
        for a in &d.assignments {
            finish(s, a.attempt, AttemptOutcome::Succeeded);
            ran.push((a.attempt.task.vertex, a.attempt.task.task, a.worker.clone()));
        }
        ran
    }

    #[test]
    fn lost_output_a_running_consumer_needs_is_made_again() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 2, 1);
        submit(&mut s, 1, None, chain_dag());
        // map 0 on w000, map 1 on w001; then mid 0 and mid 1 behind them.
        let d = step(&mut s, Input::OfferAll);
        let ran = succeed_all(&mut s, &d);
        assert_eq!(ran.len(), 2);
        let d = step(&mut s, Input::OfferAll);
        let mids: Vec<AttemptId> = d.assignments.iter().map(|a| a.attempt).collect();
        assert!(mids.iter().all(|a| a.task.vertex == 1), "{mids:?}");
        // w001 dies: the mid running there is retried; the map output it
        // held is needed by that mid, so map 1 runs again first.
        let lost = ran
            .iter()
            .find(|r| r.2 == WorkerId::new("w001"))
            .expect("ran");
        let d = step(
            &mut s,
            Input::WorkerRemoved {
                worker: WorkerId::new("w001"),
            },
        );
        assert!(d.kills.is_empty(), "the mid on w000 reads only map 0");
        let report = s.dag_report(DagId(1)).expect("known");
        assert_eq!(report.succeeded_tasks, 1, "map 0 only");
        let mid0 = *mids
            .iter()
            .find(|a| s.attempts.contains_key(a))
            .expect("the mid on w000 still runs");
        finish(&mut s, mid0, AttemptOutcome::Succeeded);
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 1);
        assert_eq!(
            (
                d.assignments[0].attempt.task.vertex,
                d.assignments[0].attempt.task.task
            ),
            (0, lost.1),
            "the lost map output is made again"
        );
        assert_eq!(d.assignments[0].attempt.attempt, 2);
        succeed_all(&mut s, &d);
        // Then everything else, to the end.
        for _ in 0..10 {
            let d = step(&mut s, Input::OfferAll);
            if d.assignments.is_empty() {
                break;
            }
            let mut ended = false;
            for a in &d.assignments {
                ended |= !finish(&mut s, a.attempt, AttemptOutcome::Succeeded)
                    .dag_events
                    .is_empty();
            }
            if ended {
                break;
            }
        }
        assert!(s.active_dags().is_empty(), "the DAG succeeded");
    }

    #[test]
    fn consumers_lose_readiness_and_running_ones_are_stopped() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 2, 1);
        submit(&mut s, 1, None, three_stage());
        let d = step(&mut s, Input::OfferAll);
        succeed_all(&mut s, &d); // a0 on w000, a1 on w001
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments.len(), 1, "b");
        let b = d.assignments[0].clone();
        let d = step(
            &mut s,
            Input::WorkerRemoved {
                worker: if b.worker == WorkerId::new("w000") {
                    WorkerId::new("w001")
                } else {
                    WorkerId::new("w000")
                },
            },
        );
        // b runs on the survivor, but one of its inputs is gone: it is asked
        // to stop, and its failure (a fetch error) is not held against it.
        assert_eq!(
            d.kills,
            vec![AttemptKill {
                attempt: b.attempt,
                worker: b.worker.clone()
            }]
        );
        let d = finish(
            &mut s,
            b.attempt,
            AttemptOutcome::Failed {
                reason: "fetching the output of task 1 of vertex 'a' failed".into(),
            },
        );
        assert!(d.dag_events.is_empty(), "not a failure of b");
        let report = s.dag_report(DagId(1)).expect("known");
        assert_eq!(report.pending_tasks, 1, "the lost a task, not b");
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments[0].attempt.task.vertex, 0);
        succeed_all(&mut s, &d);
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments[0].attempt.task.vertex, 1);
        assert_eq!(d.assignments[0].attempt.attempt, 2);
    }

    #[test]
    fn outputs_nobody_needs_are_not_made_again_until_a_rerun_needs_them() {
        let mut s = scheduler(TaskSchedulerConfig::default());
        with_workers(&mut s, 1, 2);
        submit(&mut s, 1, None, three_stage());
        let w = |n: &str| WorkerId::new(n);
        let d = step(&mut s, Input::Offer { worker: w("w000") });
        assert_eq!(succeed_all(&mut s, &d).len(), 2, "both a tasks on w000");
        let add = |s: &mut TaskScheduler, name: &str, slots: u64| {
            step(
                s,
                Input::WorkerAdded {
                    worker: WorkerId::new(name),
                    capacity: Resource::new(slots * GB, slots as u32),
                },
            );
        };
        add(&mut s, "w001", 1);
        let d = step(&mut s, Input::Offer { worker: w("w001") });
        assert_eq!(succeed_all(&mut s, &d), vec![(1, 0, w("w001"))]);
        // b has read the a outputs: losing them now costs nothing.
        let d = step(&mut s, Input::WorkerRemoved { worker: w("w000") });
        assert!(d.kills.is_empty());
        let report = s.dag_report(DagId(1)).expect("known");
        assert_eq!((report.pending_tasks, report.succeeded_tasks), (1, 3));
        // Lose b's output before c runs: b runs again, and before it the a
        // outputs it needs, lost earlier; c waits for all of them.
        add(&mut s, "w002", 2);
        let d = step(&mut s, Input::WorkerRemoved { worker: w("w001") });
        assert!(d.kills.is_empty());
        let report = s.dag_report(DagId(1)).expect("known");
        assert_eq!((report.pending_tasks, report.succeeded_tasks), (2, 0));
        let d = step(&mut s, Input::OfferAll);
        let again: Vec<(u32, u32, u32)> = d
            .assignments
            .iter()
            .map(|a| {
                (
                    a.attempt.task.vertex,
                    a.attempt.task.task,
                    a.attempt.attempt,
                )
            })
            .collect();
        assert_eq!(again, vec![(0, 0, 2), (0, 1, 2)]);
        succeed_all(&mut s, &d);
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(succeed_all(&mut s, &d), vec![(1, 0, w("w002"))]);
        let d = step(&mut s, Input::OfferAll);
        assert_eq!(d.assignments[0].attempt.task.vertex, 2, "c at last");
    }

    #[test]
    fn status_line_is_periodic_on_ticks() {
        let mut s = scheduler(capacity("high=80,medium=50,default=20,background=0"));
        with_workers(&mut s, 1, 1);
        let line = |s: &mut TaskScheduler, t| s.handle(t, Input::Tick).expect("tick").status_line;
        assert_eq!(
            line(&mut s, 1_000).as_deref(),
            Some("DAGScheduler All-In-One 1024MB: high = 0/0%, medium = 0/0%, default = 0/0%, background = 0/0%")
        );
        assert_eq!(line(&mut s, 10_999), None);
        assert!(line(&mut s, 11_000).is_some());
        assert_eq!(line(&mut s, 20_000), None);
        let mut quiet = scheduler(TaskSchedulerConfig {
            status_interval_ms: 0,
            ..TaskSchedulerConfig::default()
        });
        assert_eq!(line(&mut quiet, 5_000), None);
    }

    #[test]
    fn contract_errors_change_nothing() {
        let mut s = scheduler(TaskSchedulerConfig {
            limits: TaskSchedulerConfig::default().limits,
            ..TaskSchedulerConfig::default()
        });
        with_workers(&mut s, 1, 1);
        s.handle(100, Input::Tick).expect("tick");
        assert_eq!(
            s.handle(99, Input::Tick).expect_err("must be refused"),
            CoreError::TimeWentBackwards {
                now_ms: 99,
                last_ms: 100
            }
        );
        assert!(matches!(
            s.handle(
                100,
                Input::WorkerAdded {
                    worker: WorkerId::new("w000"),
                    capacity: slot()
                }
            ),
            Err(CoreError::Duplicate { .. })
        ));
        submit(&mut s, 1, None, one_vertex("a", 1));
        assert!(matches!(
            s.handle(
                100,
                Input::SubmitDag {
                    id: DagId(1),
                    client: "c".into(),
                    queue: None,
                    spec: one_vertex("a", 1)
                }
            ),
            Err(CoreError::Duplicate { .. })
        ));
        let bad = DagSpec::new("bad").vertex(VertexSpec::new("v", 0, slot()));
        assert_eq!(
            s.handle(
                100,
                Input::SubmitDag {
                    id: DagId(2),
                    client: "c".into(),
                    queue: None,
                    spec: bad
                }
            )
            .expect_err("must be refused")
            .to_string(),
            "DAG rejected: DAG 'bad': vertex 'v' has 0 tasks; every vertex needs at least one"
        );
        let ghost = AttemptId {
            task: TaskId {
                dag: DagId(1),
                vertex: 0,
                task: 0,
            },
            attempt: 7,
        };
        assert!(matches!(
            s.handle(
                100,
                Input::AttemptFinished {
                    attempt: ghost,
                    outcome: AttemptOutcome::Succeeded
                }
            ),
            Err(CoreError::Unknown {
                what: "attempt",
                ..
            })
        ));
        assert!(matches!(
            s.handle(
                100,
                Input::Offer {
                    worker: WorkerId::new("nobody")
                }
            ),
            Err(CoreError::Unknown { what: "worker", .. })
        ));
        s.check_invariants().expect("invariants");
        assert_eq!(s.active_dags(), vec![DagId(1)]);

        let mut small = scheduler(TaskSchedulerConfig {
            limits: TaskSchedulerLimits {
                max_active_dags: 1,
                ..TaskSchedulerLimits::default()
            },
            ..TaskSchedulerConfig::default()
        });
        submit(&mut small, 1, None, one_vertex("a", 1));
        assert_eq!(
            small
                .handle(
                    0,
                    Input::SubmitDag {
                        id: DagId(2),
                        client: "c".into(),
                        queue: None,
                        spec: one_vertex("b", 1)
                    }
                )
                .expect_err("must be refused")
                .to_string(),
            "limit mr3.am.max.num.concurrent.dags = 1 reached: 1 DAGs are active; dag_2 is refused"
        );
    }

    #[test]
    fn vertex_priority_scheme_orders_tasks_within_a_dag() {
        // Two independent branches; intact priorities prefer branch b.
        let spec = DagSpec::new("d")
            .vertex(VertexSpec::new("a", 1, slot()).with_priority(9))
            .vertex(VertexSpec::new("b", 1, slot()).with_priority(2));
        for (scheme, first) in [
            (VertexPriorityScheme::Intact, 1u32),
            (VertexPriorityScheme::Roots, 0),
            (VertexPriorityScheme::Normalize, 1),
        ] {
            let mut s = scheduler(TaskSchedulerConfig {
                vertex_priority_scheme: scheme,
                ..TaskSchedulerConfig::default()
            });
            with_workers(&mut s, 1, 1);
            submit(&mut s, 1, None, spec.clone());
            let d = step(&mut s, Input::OfferAll);
            assert_eq!(d.assignments[0].attempt.task.vertex, first, "{scheme}");
        }
    }
}
