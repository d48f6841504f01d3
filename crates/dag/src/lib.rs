//! The pure cores of Spindle's MR3-style DAG ApplicationMaster.
//!
//! A DAG AM runs many clients' DAGs (vertices of tasks joined by
//! one-to-one or all-to-all edges) on long-lived ContainerWorkers that it
//! obtains from the ResourceManager and shares between DAGs. Its decisions
//! are made by three cores, all in this crate:
//!
//! - [`task_scheduler::TaskScheduler`]: which ready task runs on which
//!   worker (queue schemes `common` / `individual` / `capacity`, DAG and
//!   vertex priorities, retries, kills, draining workers);
//! - [`container_scheduler::ContainerScheduler`]: ContainerGroups and
//!   ContainerKinds, and the recycling of workers between compatible
//!   groups (`none` / `fifo` / `fair`);
//! - [`autoscaler::Autoscaler`]: memory-usage sampling and the STABLE /
//!   SCALE_OUT / SCALE_IN state machine that asks for workers or releases
//!   nodes.
//!
//! The cores are pure, synchronous and deterministic: no I/O, no clock,
//! no threads, no randomness, and no hash-map order anywhere near a
//! decision (every collection that is iterated is ordered, and every sort
//! key ends in a unique id). Time is an argument (`now_ms`, which must
//! never go backwards). The same inputs always give the same decisions, so
//! the real AM (crates/dag-am) and a discrete-event simulator can be two
//! drivers of the same code, and a failing simulation seed replays
//! exactly.
//!
//! # Inputs and outputs
//!
//! Each core changes only through one entry point, and every decision
//! comes back as a value:
//!
//! | core | entry point | inputs | outputs |
//! |---|---|---|---|
//! | [`TaskScheduler`](task_scheduler::TaskScheduler) | [`handle(now_ms, Input)`](task_scheduler::TaskScheduler::handle) | [`SubmitDag`](task_scheduler::Input::SubmitDag), [`KillDag`](task_scheduler::Input::KillDag), [`WorkerAdded`](task_scheduler::Input::WorkerAdded), [`WorkerRemoved`](task_scheduler::Input::WorkerRemoved), [`DrainWorker`](task_scheduler::Input::DrainWorker), [`Offer`](task_scheduler::Input::Offer), [`OfferAll`](task_scheduler::Input::OfferAll), [`AttemptFinished`](task_scheduler::Input::AttemptFinished), [`Tick`](task_scheduler::Input::Tick) | [`TaskDecisions`](task_scheduler::TaskDecisions): assignments (attempt, worker, rendered command), attempts to kill, DAG final states, drained workers, the periodic status line |
//! | [`ContainerScheduler`](container_scheduler::ContainerScheduler) | [`handle(now_ms, Input)`](container_scheduler::ContainerScheduler::handle) | [`RegisterGroup`](container_scheduler::Input::RegisterGroup), [`ReleaseGroup`](container_scheduler::Input::ReleaseGroup), [`GroupDemand`](container_scheduler::Input::GroupDemand), [`WorkerStarted`](container_scheduler::Input::WorkerStarted), [`WorkerStartFailed`](container_scheduler::Input::WorkerStartFailed), [`WorkerActivity`](container_scheduler::Input::WorkerActivity), [`WorkerStopped`](container_scheduler::Input::WorkerStopped), [`WorkerExited`](container_scheduler::Input::WorkerExited), [`WorkerStartWithdrawn`](container_scheduler::Input::WorkerStartWithdrawn), [`Tick`](container_scheduler::Input::Tick) | [`ContainerAction`](container_scheduler::ContainerAction)s: start a worker in group G, cancel a start, stop worker W gracefully, reassign worker W to group G, terminate worker W |
//! | [`Autoscaler`](autoscaler::Autoscaler) | [`tick(now_ms, &ClusterSnapshot)`](autoscaler::Autoscaler::tick), or [`tick_with_totals`](autoscaler::Autoscaler::tick_with_totals) with every group's workers for the caps | a snapshot of the group: workers, memory for and used by attempts, waiting tasks, outstanding requests, nodes | [`AutoscaleDecision`](autoscaler::AutoscaleDecision): request N workers / cancel outstanding requests / release nodes [..] / nothing, the state, the measured usage |
//!
//! An input that breaks the driver's contract (an unknown id, a duplicate,
//! time going backwards, a [named limit](config::TaskSchedulerLimits)
//! reached, an invalid DAG) returns a [`CoreError`] and changes nothing.
//! Every core has a `check_invariants()` that tests and the simulator call
//! after every step; a violation is a bug in this crate.
//!
//! # How a driver wires them
//!
//! One `TaskScheduler` per ContainerGroup, one `Autoscaler` per group when
//! autoscaling is on, one `ContainerScheduler` for the AM:
//!
//! 1. A client registers a group ([`container_scheduler::Input::RegisterGroup`])
//!    and submits DAGs to that group's task scheduler.
//! 2. The driver reports each group's need for workers (from
//!    [`pending_demand`](task_scheduler::TaskScheduler::pending_demand))
//!    as [`GroupDemand`](container_scheduler::Input::GroupDemand), and
//!    its idle workers (from
//!    [`idle_workers`](task_scheduler::TaskScheduler::idle_workers)) as
//!    [`WorkerActivity`](container_scheduler::Input::WorkerActivity).
//!    The autoscaler alone decides how many workers a group with an
//!    autoscaler has, and it requests nothing while it is in SCALE_IN
//!    (see
//!    [`allows_new_workers`](autoscaler::Autoscaler::allows_new_workers)):
//!    that group's demand is its outstanding autoscaler requests, so
//!    recycled workers of its kind fill them before the resource manager
//!    is asked; the container scheduler's own starts for it create no
//!    request, and a request the driver withdraws or sees granted is
//!    reported as
//!    [`WorkerStartWithdrawn`](container_scheduler::Input::WorkerStartWithdrawn).
//!    The caps on all workers' memory and cores hold either way: the
//!    driver passes the totals of every group to
//!    [`tick_with_totals`](autoscaler::Autoscaler::tick_with_totals) and
//!    cuts the other groups' demand to
//!    [`WorkerTotals::headroom`](autoscaler::WorkerTotals::headroom), the
//!    reserve of the group's kind counting as available (recycling a
//!    worker adds nothing to the totals).
//! 3. It carries out `StartWorker`, feeds arriving workers to the group's
//!    task scheduler ([`WorkerAdded`](task_scheduler::Input::WorkerAdded))
//!    and to the container scheduler
//!    ([`WorkerStarted`](container_scheduler::Input::WorkerStarted)).
//! 4. `StopWorkerGracefully` and scale-in `ReleaseNodes` become
//!    [`DrainWorker`](task_scheduler::Input::DrainWorker); when the task
//!    scheduler reports the worker drained, the driver removes it there and
//!    reports [`WorkerStopped`](container_scheduler::Input::WorkerStopped)
//!    (recycling) or terminates it (scale-in). A scale-in completes only
//!    once the released nodes hold no worker of the group, so the driver
//!    keeps listing draining workers under their node in the
//!    [`ClusterSnapshot`](autoscaler::ClusterSnapshot) until they exit.
//!    `ReassignWorker` moves a worker from one group's task scheduler to
//!    another's.
//! 5. Workers ask for work; each request is an
//!    [`Offer`](task_scheduler::Input::Offer), and the assignments are
//!    sent to the workers.
//!
//! # Modules
//!
//! - [`dag`]: the DAG model, validation, topological helpers, vertex
//!   priority schemes (`intact`, `roots`, `leaves`, `postorder`,
//!   `normalize` into `0..=12252240`).
//! - [`config`]: every key with its default, parsed from a key -> value
//!   map with errors naming the key.
//! - [`task_scheduler`], [`container_scheduler`], [`autoscaler`]: the cores.
//!
//! # Example
//!
//! ```
//! use spindle_dag::config::TaskSchedulerConfig;
//! use spindle_dag::dag::{DagSpec, EdgeKind, VertexSpec};
//! use spindle_dag::task_scheduler::{AttemptOutcome, DagEvent, Input, TaskScheduler};
//! use spindle_dag::{DagId, Resource, WorkerId};
//!
//! let mut ts = TaskScheduler::new(TaskSchedulerConfig::default())?;
//! let worker = WorkerId::new("container_1_0001_01_000002");
//! ts.handle(0, Input::WorkerAdded { worker: worker.clone(), capacity: Resource::new(4096, 4) })?;
//! let spec = DagSpec::new("wordcount")
//!     .vertex(VertexSpec::new("tokenize", 2, Resource::new(1024, 1)).with_command("tok {task}"))
//!     .vertex(VertexSpec::new("sum", 1, Resource::new(2048, 1)).with_command("sum"))
//!     .edge("tokenize", "sum", EdgeKind::AllToAll);
//! ts.handle(1, Input::SubmitDag { id: DagId(1), client: "alice".into(), queue: None, spec })?;
//!
//! // The worker asks for work: both tokenize tasks fit; sum is not ready.
//! let d = ts.handle(2, Input::Offer { worker: worker.clone() })?;
//! assert_eq!(d.assignments.len(), 2);
//! assert_eq!(d.assignments[1].command, "tok 1");
//! for a in &d.assignments {
//!     ts.handle(3, Input::AttemptFinished { attempt: a.attempt, outcome: AttemptOutcome::Succeeded })?;
//! }
//! let d = ts.handle(4, Input::Offer { worker })?;
//! assert_eq!(d.assignments[0].vertex_name, "sum");
//! let d = ts.handle(5, Input::AttemptFinished {
//!     attempt: d.assignments[0].attempt,
//!     outcome: AttemptOutcome::Succeeded,
//! })?;
//! assert_eq!(d.dag_events, vec![DagEvent::Succeeded { dag: DagId(1) }]);
//! ts.check_invariants()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod autoscaler;
pub mod config;
pub mod container_scheduler;
pub mod dag;
pub mod session;
pub mod task_scheduler;
mod types;

pub use config::{ConfigError, DagConfig};
pub use types::{AttemptId, CoreError, DagId, InvariantViolation, Resource, TaskId, WorkerId};
