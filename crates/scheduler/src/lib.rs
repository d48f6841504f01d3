//! The Spindle scheduler core: who gets which container on which node.
//!
//! This crate is pure, synchronous and deterministic. It knows nothing of
//! sockets, protobuf, threads or clocks: time is an argument, inputs come
//! in, decisions go out, and the same inputs always give the same
//! decisions. The ResourceManager drives it (and so will the simulator);
//! both are drivers of the same code.
//!
//! # Input / output model
//!
//! The state changes only through [`Scheduler::handle`] (one closed
//! [`Input`] enum) and [`Scheduler::schedule`] (a bounded continuous
//! scheduling pass). Both take `now_ms`, which must never go backwards,
//! and return [`Decisions`]:
//!
//! | input | effect | decisions |
//! |---|---|---|
//! | [`Input::NodeAdded`] | node joins, with its rack and capability | — |
//! | [`Input::NodeUpdated`] | heartbeat, maybe new capability / health / schedulable flag | allocations on that node (none while packing is in force) |
//! | [`Input::NodeRemoved`] | node leaves | its containers completed, ABORTED (`-100`) |
//! | [`Input::AppAdded`] | attempt joins its queue | — |
//! | [`Input::AppRemoved`] | attempt leaves | its containers completed (ABORTED) + kill actions |
//! | [`Input::AsksUpdated`] | AM allocate call: asks, releases, blacklist | released containers completed (ABORTED) + kill actions |
//! | [`Input::ContainerCompleted`] | NM (or RM) says a container ended | the completion, with its exit status |
//! | [`Input::QueuesReconfigured`] | new queue tree, delay rule and per-heartbeat caps, all or nothing | — |
//! | [`Input::AppPriorityUpdated`] | the attempt moves in its leaf's order | — |
//! | [`Input::AppMoved`] | the attempt, its usage and its asks move to another leaf | — |
//! | [`Input::AppRecovered`] | an attempt of an earlier RM rejoins (work-preserving restart); its next container is not an AM's | — |
//! | [`Input::ContainerRecovered`] | a re-registering node's live container of a recovered attempt is held again (node, queue, user, app) | — |
//! | [`Input::HoldAllocations`] | no allocation before a time (scheduling wait after a restart) | — |
//! | [`Input::Tick`] | time passes | — |
//! | [`Scheduler::schedule`] | continuous pass, at most `max_containers` | allocations anywhere |
//!
//! [`Decisions`] holds [`Allocation`]s (container id, node, size,
//! priority, allocation request id, [`Locality`]), [`CompletedContainer`]s
//! for the RM to report to AMs (with Hadoop's [`exit_status`] values) and
//! [`NodeAction`]s for NMs. An input that is invalid or over a [`Limits`]
//! bound returns a [`SchedulerError`] and changes nothing.
//!
//! # Requests
//!
//! An application's demand is a table of [`ResourceAsk`] rows, exactly as
//! YARN's protocol defines it: `<priority, host | rack | *, capability,
//! count>`, each count absolute (a new ask replaces the row, 0 cancels
//! it). A container granted on host `h` in rack `r` decrements the rows
//! at `h`, `r` and `*` it was granted through; nothing is granted through
//! a row at 0, and nothing at all once `*` is 0. Rack and `*` rows with
//! `relax_locality = false` stop the search from widening past them. See
//! the [`asks`] module for the precise rules and
//! `tests/scenarios.rs` for the protocol's worked example, step by step.
//!
//! Container ids are made here: per attempt, numbered from 1 (the RM asks
//! for the AM container first, at priority 0 on `*`, so it is container
//! 1), with the configured RM epoch in the high bits.
//!
//! # Scheduling
//!
//! Applications are offered resources in the order of the queue tree
//! ([`QueueTreeConfig`]: FIFO, capacity or fair semantics, with
//! guarantees, maxima, user, AM and running-application limits), one
//! container per round, each application's requests in priority order
//! (lower number first), and within a request node-local before
//! rack-local before off-switch, as far as delay scheduling
//! ([`LocalityDelay`]) allows. Which node of several is chosen is the
//! [`policy::NodeSelection`]'s call (spread: the node with the most free
//! resources; packing: partly used nodes first, fullest first, then empty
//! nodes in a seeded random order, then nodes above the high-memory
//! threshold, least used first, falling back to spread on clusters
//! smaller than its minimum). A node heartbeat places on its own node,
//! except while packing is in force: then heartbeats only count
//! delay-scheduling opportunities and continuous passes place every
//! container, in packing order. Nodes, racks,
//! queues and applications sit in ordered indexes, so a choice costs
//! O(log n) rather than a scan; every sort key ends in a unique id and no
//! hash order reaches a decision.
//!
//! Not yet here: reservations and preemption.
//!
//! # Example
//!
//! ```
//! use spindle_common::{ApplicationAttemptId, ApplicationId, NodeId, Resource};
//! use spindle_scheduler::{Input, NodeUpdate, ResourceAsk, Scheduler, SchedulerConfig, ANY};
//!
//! let mut s = Scheduler::new(SchedulerConfig::default())?;
//! let node = NodeId::new("worker-1", 8041);
//! s.handle(0, Input::NodeAdded {
//!     node: node.clone(),
//!     rack: "/default-rack".into(),
//!     capability: Resource::new(8192, 8),
//! })?;
//! let attempt = ApplicationAttemptId::new(ApplicationId::new(1_700_000_000_000, 1), 1);
//! s.handle(1, Input::AppAdded {
//!     attempt,
//!     queue: "default".into(),
//!     user: "alice".into(),
//!     priority: 0,
//!     unmanaged_am: false,
//! })?;
//! // The RM asks for the AM container.
//! s.handle(2, Input::AsksUpdated {
//!     attempt,
//!     asks: vec![ResourceAsk::new(0, ANY, Resource::new(1024, 1), 1)],
//!     releases: vec![],
//!     blacklist_add: vec![],
//!     blacklist_remove: vec![],
//! })?;
//! let d = s.handle(3, Input::NodeUpdated { node, update: NodeUpdate::heartbeat() })?;
//! assert_eq!(d.allocations.len(), 1);
//! assert_eq!(d.allocations[0].container.to_string(), "container_1700000000000_0001_01_000001");
//! s.check_invariants()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod asks;
pub mod config;
mod delay;
pub mod error;
mod input;
mod invariants;
pub mod output;
pub mod policy;
pub mod queue_config;
mod report;
pub mod scenario;
mod scheduler;
mod tree;

pub use asks::{AskRow, RequestKey};
pub use config::{
    ConfigError, Limits, NodeSelectionKind, PackingConfig, SchedulerConfig, MAX_EPOCH,
};
pub use error::{InvariantViolation, SchedulerError};
pub use input::{ContainerExit, Input, NodeUpdate, ResourceAsk, ANY};
pub use output::{
    exit_status, Allocation, CompletedContainer, CompletionCause, Decisions, Locality, NodeAction,
};
pub use queue_config::{
    AppOrdering, HeartbeatAssignment, LocalityDelay, QueueConfig, QueueRunState, QueueShare,
    QueueTreeConfig, ResourceBound, ResourceCalculatorKind, SchedulerKind,
};
pub use report::{AppReport, ClusterReport, ContainerReport, NodeReport, QueueReport};
pub use scheduler::{Scheduler, MAX_RESOURCE_NAME_BYTES};
