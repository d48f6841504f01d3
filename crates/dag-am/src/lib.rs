//! Spindle's MR3-style DAG ApplicationMaster on YARN: the session AM, its
//! ContainerWorkers and the `spindle dag` client.
//!
//! The decisions (which task runs where, when workers start, stop or move,
//! when to scale out or in) and the session's bookkeeping are made by the
//! pure session core of `spindle-dag` ([`spindle_dag::session`]); this
//! crate is its production driver:
//!
//! - [`am`]: the AM process (`spindle dag am`): its event loop hands
//!   every event to the session core and carries out the effects (AMRM
//!   heartbeats, worker launches through the NodeManagers, messages on the
//!   session server);
//! - [`session`]: the wire edge of the session core: DAG files and wire
//!   outcomes into inputs, effects into [`session::Effect`]s (AMRM requests,
//!   launches, releases, worker messages), the status report, log lines;
//! - [`worker`]: `spindle worker`, run in each worker container;
//! - [`client`]: `spindle dag session start|stop`, `submit`, `status`, `kill`;
//! - [`protocol`]: the newline-delimited JSON spoken on the session port;
//! - [`http`]: how workers serve and fetch task outputs;
//! - [`dagfile`]: the DAG file format.
//!
//! See `docs/dag.md` for the user-facing description.

pub mod am;
pub mod client;
pub mod dagfile;
pub mod http;
pub mod protocol;
pub mod session;
pub mod worker;

/// The YARN application type of a DAG session.
pub const APP_TYPE: &str = "SPINDLE-DAG";
/// `spindle dag <AM_SUBCOMMAND>` runs the AM.
pub const AM_SUBCOMMAND: &str = "am";
/// `spindle <WORKER_SUBCOMMAND>` runs a worker.
pub const WORKER_SUBCOMMAND: &str = "worker";
