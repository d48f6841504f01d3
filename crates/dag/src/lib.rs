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
//! # The session core
//!
//! A driver does not wire the three cores itself: [`session::Session`]
//! does, as the DAG AM needs them wired (one `TaskScheduler` per
//! ContainerGroup, one `Autoscaler` per group when autoscaling is on, one
//! `ContainerScheduler`), and it keeps the bookkeeping the cores leave to
//! their driver. Its inputs are the AM's events ([`session::SessionInput`]:
//! DAGs submitted and killed, containers granted, workers registering and
//! gone, attempts ending, ticks) and its outputs the AM's actions
//! ([`session::SessionEffect`]: container requests, launches and releases,
//! assignments, kills and other messages to workers, replies, notices to
//! log). The DAG AM (crates/dag-am) and the simulator (`spindle dag sim`)
//! drive the session and only turn its effects into I/O or simulated
//! events. See the [`session`] module for how the cores are wired.
//!
//! # Modules
//!
//! - [`dag`]: the DAG model, validation, topological helpers, vertex
//!   priority schemes (`intact`, `roots`, `leaves`, `postorder`,
//!   `normalize` into `0..=12252240`).
//! - [`config`]: every key with its default, parsed from a key -> value
//!   map with errors naming the key.
//! - [`task_scheduler`], [`container_scheduler`], [`autoscaler`]: the cores.
//! - [`session`]: the session core, the cores wired together with the
//!   session's own settings (`spindle.dag.*`).
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
